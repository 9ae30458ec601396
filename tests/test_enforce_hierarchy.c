// SPDX-License-Identifier: GPL-2.0
/*
 * Hierarchy: a socket obeys the strictest state among its cgroup and every
 * ancestor with limits.
 *
 *   1. "h" has Limit=16M, its children "h/c1" and "h/c2" have none. 32
 *      connections are received in each child (writers in an unlimited
 *      cgroup outside h); the readers read for a second, then stop. Usage
 *      of h (its whole subtree), read every 10 ms and as the daemon's
 *      peak_pages, stays within 1.05 x h's max, though neither child is
 *      limited by itself.
 *   2. Then "h/c1" also gets Limit=4M: with the same load, c1 stays within
 *      1.05 x its own max and h within 1.05 x its max.
 * Every byte arrives intact once the readers of both children resume.
 */
#include "enforce_util.h"
#include "harness.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#define H_PAGES		4096		/* 16 MiB */
#define C1_PAGES	1024		/* 4 MiB */
#define NCONN		32
#define MAX_RATIO	1.05

static void run(const char *what, const char *h, const char *c1, const char *c2,
		const char *src, int64_t c1_max)
{
	struct peak_sampler *ph, *pc1;
	struct xload *l1, *l2;
	char msg[256];
	int64_t dh, dc1;
	double t0, t1;

	ph = peak_start(h, 10);
	pc1 = peak_start(c1, 10);
	l1 = xload_start(&(struct xload_opts){ .rx_cgroup = c1, .tx_cgroup = src, .nconn = NCONN,
						.mode = XL_READ });
	l2 = xload_start(&(struct xload_opts){ .rx_cgroup = c2, .tx_cgroup = src, .nconn = NCONN,
						.mode = XL_READ });
	ASSERT_TRUE(l1 && l2);
	msleep(1000);
	ASSERT_OK(xload_set_mode(l1, XL_STALL, 0));
	ASSERT_OK(xload_set_mode(l2, XL_STALL, 0));
	msleep(3000);
	peak_stop(ph);
	peak_stop(pc1);
	dh = status_field(h, "peak_pages");
	dc1 = status_field(c1, "peak_pages");
	test_log("%s: h peak %" PRIu64 " pages by sock_diag (%.3f x max, gap %.1f ms), daemon %"
		 PRId64 " (%.3f x max), state %s, failcnt %" PRId64, what, peak_pages(ph),
		 (double)peak_pages(ph) / H_PAGES, peak_max_gap_ms(ph), dh, (double)dh / H_PAGES,
		 status_state(h), status_field(h, "failcnt"));
	test_log("%s: c1 peak %" PRIu64 " pages by sock_diag, daemon %" PRId64 ", state %s; c2 "
		 "usage %" PRId64 " pages", what, peak_pages(pc1), dc1, status_state(c1),
		 status_field(c2, "usage_pages"));
	EXPECT_LE(peak_pages(ph), (int64_t)(MAX_RATIO * H_PAGES));
	EXPECT_LE(dh, (int64_t)(MAX_RATIO * H_PAGES));
	EXPECT_GT(dh, H_PAGES / 2);	/* the load did push against the limit */
	if (c1_max) {
		EXPECT_LE(peak_pages(pc1), (int64_t)(MAX_RATIO * c1_max));
		EXPECT_LE(dc1, (int64_t)(MAX_RATIO * c1_max));
		EXPECT_GT(dc1, c1_max / 2);	/* c1's own limit was what held it */
		EXPECT_NE(strcmp(status_state(c1), "normal"), 0);
	}
	/* Both readers resume at once: one left stalled while the other
	 * drains would have its senders' timers back off meanwhile (zero
	 * windows, refused segments), and its drain wait on them. */
	ASSERT_OK(xload_quiesce(l1));
	ASSERT_OK(xload_quiesce(l2));
	t0 = now_sec();
	ASSERT_OK(xload_finish(l1, 60000, msg, sizeof(msg)) == 0 ? 0 : (test_log("%s", msg), -1));
	t1 = now_sec();
	ASSERT_OK(xload_finish(l2, 60000, msg, sizeof(msg)) == 0 ? 0 : (test_log("%s", msg), -1));
	test_log("%s: every byte intact (drained in %.1f s, then %.1f s)", what, t1 - t0,
		 now_sec() - t1);
	xload_close(l1);
	xload_close(l2);
	peak_free(ph);
	peak_free(pc1);
}

int main(void)
{
	const char *h, *c1, *c2, *src, *h2, *c21, *c22;

	test_init();
	enforce_config(1000);
	ASSERT_OK(daemon_start(""));
	h = cg_create("h");
	c1 = cg_create("h/c1");
	c2 = cg_create("h/c2");
	src = cg_create("src");
	limits_write(h, H_PAGES, 0, 0, 0);
	ASSERT_OK(daemon_reload_until(h, H_PAGES, 5000));
	ASSERT_EQ(status_field(c1, "limit_pages"), -1);
	run("parent only", h, c1, c2, src, 0);

	/* Fresh cgroups, so peaks start from zero. */
	h2 = cg_create("h2");
	c21 = cg_create("h2/c1");
	c22 = cg_create("h2/c2");
	limits_write(h2, H_PAGES, 0, 0, 0);
	limits_write(c21, C1_PAGES, 0, 0, 0);
	ASSERT_OK(daemon_reload_until(c21, C1_PAGES, 5000));
	ASSERT_EQ(status_field(h2, "limit_pages"), H_PAGES);
	run("parent and child", h2, c21, c22, src, C1_PAGES);

	ASSERT_EQ(daemon_stop(), 0);
	return test_done();
}
