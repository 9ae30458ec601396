// SPDX-License-Identifier: GPL-2.0
/*
 * subtree_usage_sum(), table-driven: BPF charges a socket to its own cgroup
 * and its limited ancestors only, so a limited row already holds its
 * subtree and an unlimited one only its own sockets; status adds the rest.
 * unaccounted_sockets is charged the same way (bpf/sock_fallback.bpf.h): here
 * each row holds as many as it holds pages, and must add up alike.
 */
#include "harness.h"
#include "../src/subtree.h"

#include <string.h>

struct row_case {
	const char *path;
	bool limited;		/* its BPF entry carries limits */
	__s64 bpf_pages;	/* what BPF holds in the entry */
	__s64 want_pages;	/* what status shows */
};

/* In strcmp order, as status_collect() sorts ("/a-z" between "/a" and "/a/b"). */
static const struct row_case cases[] = {
	{ "/a",       false,  0, 15 },	/* b's whole subtree (10) + d (3) + e (2) */
	{ "/a-z",     false,  7,  7 },	/* a sibling whose name starts like /a */
	{ "/a/b",     true,  10, 10 },	/* limited: its own 6 and c's 4, from BPF */
	{ "/a/b/c",   false,  4,  6 },	/* and l's 2, which BPF put in l and b only */
	{ "/a/b/c/l", true,   2,  2 },	/* limited below limited: in b's 10 already */
	{ "/a/d",     false,  3,  5 },
	{ "/a/d/e",   false,  2,  2 },
	{ "/x",       false,  5,  5 },
};
#define N_CASES (sizeof(cases) / sizeof(cases[0]))

int main(void)
{
	struct status_row rows[N_CASES];
	struct status_rows r = { .rows = rows, .n = N_CASES };

	test_init();
	memset(rows, 0, sizeof(rows));
	for (size_t i = 0; i < N_CASES; i++) {
		rows[i].path = cases[i].path;
		rows[i].has_usage = true;
		rows[i].usage.usage_pages = cases[i].bpf_pages;
		rows[i].usage.peak_pages = cases[i].bpf_pages;
		rows[i].usage.sockets = cases[i].bpf_pages ? 1 : 0;
		rows[i].usage.unaccounted_sockets = (__u32)cases[i].bpf_pages;
		rows[i].usage.limits.limit_pages = cases[i].limited ? 100 : 0;
	}
	ASSERT_OK(subtree_usage_sum(&r));
	for (size_t i = 0; i < N_CASES; i++) {
		test_log("%s: %lld pages (want %lld), peak %lld", cases[i].path,
			 (long long)rows[i].usage.usage_pages, (long long)cases[i].want_pages,
			 (long long)rows[i].usage.peak_pages);
		EXPECT_EQ(rows[i].usage.usage_pages, cases[i].want_pages);
		EXPECT_GE(rows[i].usage.peak_pages, rows[i].usage.usage_pages);
		EXPECT_EQ((__s64)rows[i].usage.unaccounted_sockets, cases[i].want_pages);
	}
	EXPECT_EQ(rows[0].usage.sockets, 3);	/* b, d, e */
	return test_done();
}
