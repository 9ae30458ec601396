// SPDX-License-Identifier: GPL-2.0
/*
 * Many stalled connections under one max: 256 and 1024 connections whose
 * receivers never read, both ends in a cgroup with Limit=16M (max 4096
 * pages). With that many writers, the skb TCP forces for each empty send
 * queue alone passes max; the receivers must still drain every byte once
 * they read again, and refusing must not have starved any of them.
 * Usage is read from sock_diag every 10 ms and logged against max.
 */
#include "enforce_util.h"
#include "harness.h"

#include <inttypes.h>
#include <stdio.h>

#define LIMIT_PAGES	4096		/* 16 MiB */

static void run(int nconn)
{
	char rel[32], msg[256];
	struct peak_sampler *ps;
	struct xload *l;
	uint64_t sent, rcvd;
	const char *cg;

	snprintf(rel, sizeof(rel), "many%d", nconn);
	cg = cg_create(rel);
	limits_write(cg, LIMIT_PAGES, 0, 0, 0);
	ASSERT_OK(daemon_reload_until(cg, LIMIT_PAGES, 5000));

	ps = peak_start(cg, 10);
	ASSERT_TRUE(ps != NULL);
	l = xload_start(&(struct xload_opts){ .rx_cgroup = cg, .nconn = nconn,
					       .mode = XL_STALL });
	ASSERT_TRUE(l != NULL);
	msleep(3000);
	peak_stop(ps);
	ASSERT_OK(xload_stats(l, &sent, &rcvd));
	test_log("%d connections: peak %" PRIu64 " pages by sock_diag (%.3f x max, largest gap "
		 "%.1f ms), daemon peak_pages %" PRId64 ", failcnt %" PRId64 ", %" PRIu64
		 " bytes sent", nconn, peak_pages(ps), (double)peak_pages(ps) / LIMIT_PAGES,
		 peak_max_gap_ms(ps), status_field(cg, "peak_pages"), status_field(cg, "failcnt"),
		 sent);
	/* The load pushed: every writer has something queued. */
	EXPECT_GT(sent, (uint64_t)nconn);
	/* Readers back: every byte arrives, however far past max the
	 * writers' forced skbs took usage. */
	EXPECT_OK(xload_finish(l, 60000, msg, sizeof(msg)));
	test_log("%d connections: %s", nconn, msg);
	xload_close(l);
	peak_free(ps);
	limits_remove(cg);
}

int main(void)
{
	test_init();
	enforce_config_poll(1000, 600000);
	ASSERT_OK(daemon_start(""));
	run(256);
	run(1024);
	ASSERT_EQ(daemon_stop(), 0);
	return test_done();
}
