// SPDX-License-Identifier: GPL-2.0
/*
 * A limit holds at hundreds of connections: 256 and then 1024 loopback
 * connections whose receivers never read, both ends in a cgroup with
 * Limit=16M (max 4096 pages). Over loopback every writer of an empty queue
 * forces an skb of half its peer's first window (64 KiB unless the
 * listener is clamped: tcpbuf_window.h), and every receiver takes one, so
 * without the crowded listeners' small window 1024 connections hold 2.8 x
 * max and their empty receivers are refused for good. Usage, read from
 * sock_diag every 10 ms and as the daemon's own peak_pages, must stay
 * within the case's bound, and once the receivers read every byte must
 * arrive intact within DRAIN_MS. The bounds are what holds on a loaded host
 * (the listeners are clamped by the daemon, some connections after the
 * crossing: docs/ENFORCEMENT.md), not the 1.05 and 1.25 targets of issue
 * 22. The 1024 case runs on the host only: under CPU emulation its
 * connections take longer than the rest of the list.
 */
#include "enforce_util.h"
#include "harness.h"

#include <inttypes.h>
#include <stdio.h>

#define LIMIT_PAGES	4096		/* 16 MiB */
#define DRAIN_MS	30000

static void run(int nconn, double max_ratio)
{
	char rel[32], msg[256];
	struct peak_sampler *ps;
	const char *cg;
	struct xload *l;
	int64_t peak_daemon;
	double ratio_oracle, ratio_daemon;

	snprintf(rel, sizeof(rel), "many-%d", nconn);
	cg = cg_create(rel);
	limits_write(cg, LIMIT_PAGES, 0, 0, 0);
	ASSERT_OK(daemon_reload_until(cg, LIMIT_PAGES, 5000));
	ps = peak_start(cg, 10);
	ASSERT_TRUE(ps != NULL);
	l = xload_start(&(struct xload_opts){ .rx_cgroup = cg, .nconn = nconn, .mode = XL_STALL });
	ASSERT_TRUE(l != NULL);
	msleep(3000);
	peak_stop(ps);
	peak_daemon = status_field(cg, "peak_pages");
	ratio_oracle = (double)peak_pages(ps) / LIMIT_PAGES;
	ratio_daemon = (double)peak_daemon / LIMIT_PAGES;
	test_log("%d connections: peak %" PRIu64 " pages by sock_diag (%.3f x max, largest gap "
		 "%.1f ms), daemon peak_pages %" PRId64 " (%.3f x max), failcnt %" PRId64, nconn,
		 peak_pages(ps), ratio_oracle, peak_max_gap_ms(ps), peak_daemon, ratio_daemon,
		 status_field(cg, "failcnt"));
	EXPECT_LE(peak_pages(ps), (int64_t)(max_ratio * LIMIT_PAGES));
	EXPECT_LE(peak_daemon, (int64_t)(max_ratio * LIMIT_PAGES));
	/* The load pushed: past half of max. */
	EXPECT_GT(peak_daemon, LIMIT_PAGES / 2);
	if (xload_finish(l, DRAIN_MS, msg, sizeof(msg))) {
		test_log("%d connections: %s", nconn, msg);
		test_fail();
	} else {
		test_log("%d connections: %s", nconn, msg);
	}
	xload_close(l);
	peak_free(ps);
	limits_remove(cg);
}

int main(void)
{
	test_init();
	enforce_config_poll(1000, 600000);
	ASSERT_OK(daemon_start(""));
	run(256, 1.30);
	if (under_emulation())
		test_log("1024 connections: skipped under CPU emulation (host only)");
	else
		run(1024, 1.80);
	ASSERT_EQ(daemon_stop(), 0);
	return test_done();
}
