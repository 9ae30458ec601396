// SPDX-License-Identifier: GPL-2.0
/* Unit tests for capacity_check(): does a change of limits fit the cgroup tables? */
#include <stdio.h>

#include "../src/capacity.h"

static const struct rule_case {
	const char *what;
	struct capacity now;	/* usage {used, max}, limits {used, max} */
	unsigned long limited, new_usage;
	enum capacity_verdict want;
} cases[] = {
	{ "empty tables, one limit", { { 0, 8 }, { 0, 8 } }, 1, 1, CAPACITY_FITS },
	{ "exactly full", { { 7, 8 }, { 7, 8 } }, 8, 1, CAPACITY_FITS },
	{ "one limit past cgroup_limits", { { 0, 8 }, { 8, 8 } }, 9, 0, CAPACITY_LIMITS_FULL },
	/* stale limits go before new ones are written: only what remains counts */
	{ "a swap at a full cgroup_limits", { { 8, 8 }, { 8, 8 } }, 8, 0, CAPACITY_FITS },
	{ "cgroup_usage full, entry needed", { { 8, 8 }, { 3, 8 } }, 4, 1, CAPACITY_USAGE_FULL },
	{ "cgroup_usage full, entries there", { { 8, 8 }, { 3, 8 } }, 4, 0, CAPACITY_FITS },
	{ "two entries, room for one", { { 7, 8 }, { 0, 8 } }, 2, 2, CAPACITY_USAGE_FULL },
	/* cgroup_limits is named first when both are short */
	{ "both short", { { 8, 8 }, { 8, 8 } }, 9, 1, CAPACITY_LIMITS_FULL },
	/* a pinned map fuller than its size (never, but no wrap-around) */
	{ "used above max", { { 9, 8 }, { 0, 8 } }, 1, 1, CAPACITY_USAGE_FULL },
	{ "removing every limit", { { 8, 8 }, { 8, 8 } }, 0, 0, CAPACITY_FITS },
	{ "65,536 of 65,536", { { 65535, 65536 }, { 65535, 65536 } }, 65536, 1, CAPACITY_FITS },
};

int main(void)
{
	int failures = 0;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct rule_case *c = &cases[i];
		enum capacity_verdict got = capacity_check(&c->now, c->limited, c->new_usage);

		if (got != c->want) {
			printf("%s: got %s, want %s\n", c->what,
			       capacity_table_name(got) ? capacity_table_name(got) : "fits",
			       capacity_table_name(c->want) ? capacity_table_name(c->want) : "fits");
			failures++;
		}
	}
	if (capacity_table_name(CAPACITY_FITS)) {
		printf("a verdict that fits names a table\n");
		failures++;
	}
	return failures ? 1 : 0;
}
