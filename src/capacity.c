// SPDX-License-Identifier: GPL-2.0
/* Whether a change of limits fits the cgroup tables (capacity.h). */
#include <stddef.h>
#include "capacity.h"

enum capacity_verdict capacity_check(const struct capacity *now, unsigned long limited,
				     unsigned long new_usage)
{
	if (limited > now->limits.max)
		return CAPACITY_LIMITS_FULL;
	if (new_usage > 0 &&
	    (now->usage.used >= now->usage.max || new_usage > now->usage.max - now->usage.used))
		return CAPACITY_USAGE_FULL;
	return CAPACITY_FITS;
}

const char *capacity_table_name(enum capacity_verdict v)
{
	switch (v) {
	case CAPACITY_LIMITS_FULL:
		return "cgroup_limits";
	case CAPACITY_USAGE_FULL:
		return "cgroup_usage";
	default:
		return NULL;
	}
}
