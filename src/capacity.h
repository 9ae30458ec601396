/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Whether a change of limits fits the cgroup tables (cgroup_usage,
 * cgroup_limits: MaxCgroups entries each), decided before anything is
 * written, so a change that does not fit changes nothing. Pure.
 */
#ifndef TCPBUF_CAPACITY_H
#define TCPBUF_CAPACITY_H

#include <stdbool.h>

/* One table: entries in it now and the most it holds. */
struct table_fill {
	unsigned long used, max;
};

struct capacity {
	struct table_fill usage;	/* cgroup_usage: limited cgroups and any that charged */
	struct table_fill limits;	/* cgroup_limits: exactly the limited cgroups */
};

enum capacity_verdict {
	CAPACITY_FITS,
	CAPACITY_LIMITS_FULL,	/* more limited cgroups than cgroup_limits holds */
	CAPACITY_USAGE_FULL,	/* no room for the usage entries limited cgroups need */
};

/*
 * A change that leaves @limited cgroups limited, @new_usage of which have no
 * usage entry yet, against the tables as they are in @now. Limits of
 * cgroups that lose them are removed before new ones are written, so
 * cgroup_limits needs room for @limited only; cgroup_usage keeps what it
 * holds (charges make entries too) and needs @new_usage more.
 *   max 8, 8 limited            -> fits
 *   max 8, 9 limited            -> cgroup_limits full
 *   usage 7 of 8, 2 new entries -> cgroup_usage full
 */
enum capacity_verdict capacity_check(const struct capacity *now, unsigned long limited,
				     unsigned long new_usage);

/* The map a verdict names: "cgroup_limits", "cgroup_usage", NULL when it fits. */
const char *capacity_table_name(enum capacity_verdict v);

#endif
