// SPDX-License-Identifier: GPL-2.0
/*
 * Isolation: a cgroup held at its max does not slow down a sibling without
 * limits. "lim" (Limit=16M) receives 64 connections from writers in an
 * unlimited cgroup "src"; its readers stop after a second, and the cgroup
 * sits at its max (held by closed windows within 20% of it, or refusing at
 * ingress). Meanwhile a bulk transfer inside
 * the sibling "sib" must keep at least 90% of the throughput it has with
 * no load next door (runs interleaved round by round, 9 rounds' ratios:
 * the upper end of their median's 95% interval, as the qemu guests that
 * share the machine in make check move single rounds by 20%). The
 * sibling's sockets are never touched: their buffers keep the kernel's own
 * sizes while the neighbour is swept.
 */
#include "enforce_util.h"
#include "harness.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LIMIT_PAGES	4096
#define NCONN		64
#define ROUNDS		9
#define SECS		1.5

/* Start the load that holds lim at max; returns it once the state is max. */
static struct xload *hold_at_max(const char *lim, const char *src)
{
	struct xload *l = xload_start(&(struct xload_opts){ .rx_cgroup = lim, .tx_cgroup = src,
							     .nconn = NCONN, .mode = XL_READ });

	ASSERT_TRUE(l != NULL);
	msleep(1000);
	ASSERT_OK(xload_set_mode(l, XL_STALL, 0));
	/* At max: refusing (state max), or held by closed windows close to
	 * it (the receive guard closes them as usage nears max). */
	for (double end = now_sec() + 10; now_sec() < end; msleep(20))
		if (!strcmp(status_state(lim), "max") ||
		    status_field(lim, "usage_pages") >= LIMIT_PAGES * 95 / 100)
			break;
	ASSERT_GE(status_field(lim, "usage_pages"), LIMIT_PAGES * 80 / 100);
	msleep(300);	/* what was in flight has landed or been refused */
	return l;
}

int main(void)
{
	const char *lim, *src, *sib;
	double alone[ROUNDS], loaded[ROUNDS];
	struct bufs_summary before, during;
	struct xload *idle, *l;
	char msg[256];
	double ratio, lo, hi;

	test_init();
	enforce_config(1000);
	ASSERT_OK(daemon_start(""));
	lim = cg_create("lim");
	src = cg_create("src");
	sib = cg_create("sib");
	limits_write(lim, LIMIT_PAGES, 0, 0, 0);
	ASSERT_OK(daemon_reload_until(lim, LIMIT_PAGES, 5000));
	ASSERT_EQ(status_field(sib, "limit_pages"), -1);

	idle = xload_start(&(struct xload_opts){ .rx_cgroup = sib, .nconn = 4, .idle = 1,
						  .mode = XL_READ });
	ASSERT_TRUE(idle != NULL);
	msleep(100);
	ASSERT_OK(bufs_summary(sib, 0, &before));

	for (int r = 0; r < ROUNDS; r++) {
		/* Alternate the order, so a drift of the machine cancels out. */
		if (r % 2 == 0)
			alone[r] = bulk_throughput(sib, sib, SECS);
		l = hold_at_max(lim, src);
		loaded[r] = bulk_throughput(sib, sib, SECS);
		if (r == 0) {
			ASSERT_OK(bufs_summary(sib, 0, &during));
			test_log("lim at max: usage %" PRId64 " pages, failcnt %" PRId64,
				 status_field(lim, "usage_pages"), status_field(lim, "failcnt"));
		}
		EXPECT_GE(status_field(lim, "usage_pages"), LIMIT_PAGES * 80 / 100);
		if (r == ROUNDS - 1) {
			ASSERT_OK(xload_finish(l, 60000, msg, sizeof(msg)) == 0 ? 0 :
				  (test_log("%s", msg), -1));
			test_log("lim's load: %s", msg);
		}
		xload_close(l);
		if (r % 2 == 1)
			alone[r] = bulk_throughput(sib, sib, SECS);
		test_log("round %d: sibling alone %.0f MB/s, next to a cgroup at max %.0f MB/s", r,
			 alone[r] / 1e6, loaded[r] / 1e6);
		ASSERT_GT_F(alone[r], 0);
		ASSERT_GT_F(loaded[r], 0);
	}
	ratio = median_ratio_interval(loaded, alone, ROUNDS, &lo, &hi);
	test_log("sibling throughput: median %.0f MB/s alone, %.0f MB/s next to max; median of "
		 "the rounds' ratios %.3f [%.3f, %.3f]", median_of(alone, ROUNDS) / 1e6,
		 median_of(loaded, ROUNDS) / 1e6, ratio, lo, hi);
	/* Under CPU emulation the sibling is CPU-bound: every cycle the
	 * neighbour's TCP spends is taken from it, whatever tcpbufd does. */
	if (under_emulation())
		test_log("CPU emulation: the ratio is not checked");
	else
		EXPECT_GE((int64_t)(hi * 1000), 900);

	/* The sibling's own sockets kept the kernel's sizes. */
	test_log("sibling's idle sockets: sndbuf %u..%u, rcvbuf %u..%u before; %u..%u, %u..%u "
		 "while lim was at max", before.snd_min, before.snd_max, before.rcv_min,
		 before.rcv_max, during.snd_min, during.snd_max, during.rcv_min, during.rcv_max);
	EXPECT_EQ(during.snd_min, before.snd_min);
	EXPECT_EQ(during.snd_max, before.snd_max);
	EXPECT_EQ(during.rcv_min, before.rcv_min);
	EXPECT_EQ(during.rcv_max, before.rcv_max);
	xload_close(idle);
	ASSERT_EQ(daemon_stop(), 0);
	return test_done();
}
