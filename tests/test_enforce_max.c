// SPDX-License-Identifier: GPL-2.0
/*
 * max holds: 64 connections whose receivers stop reading, in a cgroup with
 * Limit=16M (max 4096 pages). Usage, read from sock_diag every 10 ms and as
 * the daemon's own peak_pages, must stay within 1.05 x max (the kernel's
 * cgroup v1 kmem.tcp limit peaks at 1.27x under the same load). Three loads:
 *
 *   stalled    both ends in the cgroup, receivers never read
 *   warm       both ends in the cgroup, receivers read for a second (buffers
 *              autotuned to megabytes) and then stop
 *   rx-only    only the receiving ends in the cgroup, senders in an
 *              unlimited sibling: everything comes through ingress refusal
 *
 * After each, the receivers read again and every byte must arrive intact.
 */
#include "enforce_util.h"
#include "harness.h"
#include "tcpbuf_maps.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LIMIT_PAGES	4096		/* 16 MiB */
#define NCONN		64
#define MAX_RATIO	1.05

struct scenario {
	const char *name;
	const char *tx;			/* NULL: the limited cgroup itself */
	int warm_ms;			/* receivers read this long first */
};

/*
 * Where ingress stops trusting its last look at usage (watch_point,
 * tcpbuf_zones_of() in include/tcpbuf_policy.h), and where the flag that says
 * so clears again: written out here, so a change there has to be a change
 * here too.
 */
#define WATCH_POINT	(LIMIT_PAGES - LIMIT_PAGES / 4 - LIMIT_PAGES / 64 - 16 - LIMIT_PAGES / 16 - 64)
#define WATCH_CLEAR	(WATCH_POINT - LIMIT_PAGES / 32 - 16)

/* The cgroup's usage entry, read from the pinned map as bpftool would. */
static int usage_entry(const char *cg, struct cgroup_usage *u)
{
	__u64 id = cg_id(cg);

	return daemon_pinned_lookup("cgroup_usage", &id, u);
}

static void run(const struct scenario *s)
{
	char rel[64], msg[256];
	const char *cg, *tx = NULL;
	struct peak_sampler *ps;
	struct xload *l;
	uint64_t sent, rcvd;
	int64_t peak_daemon, failcnt;
	struct cgroup_usage u;
	double ratio_oracle, ratio_daemon;

	snprintf(rel, sizeof(rel), "%s", s->name);
	cg = cg_create(rel);
	if (s->tx)
		tx = cg_create(s->tx);
	limits_write(cg, LIMIT_PAGES, 0, 0, 0);
	ASSERT_OK(daemon_reload_until(cg, LIMIT_PAGES, 5000));
	ASSERT_EQ(status_field(cg, "max_pages"), LIMIT_PAGES);

	ps = peak_start(cg, 10);
	ASSERT_TRUE(ps != NULL);
	l = xload_start(&(struct xload_opts){ .rx_cgroup = cg, .tx_cgroup = tx, .nconn = NCONN,
					       .mode = s->warm_ms ? XL_READ : XL_STALL });
	ASSERT_TRUE(l != NULL);
	if (s->warm_ms) {
		msleep(s->warm_ms);
		ASSERT_OK(xload_set_mode(l, XL_STALL, 0));
	}
	msleep(3000);
	peak_stop(ps);
	ASSERT_OK(xload_stats(l, &sent, &rcvd));
	/* Held near max: every socket's ingress must look at usage again. */
	ASSERT_OK(usage_entry(cg, &u));
	test_log("%s: usage %lld pages, max_watch %u (watch point %d)", s->name,
		 (long long)u.usage_pages, u.max_watch, WATCH_POINT);
	if (u.usage_pages >= WATCH_POINT)
		EXPECT_EQ(u.max_watch, 1);
	if (!s->warm_ms)	/* the stalled load is held at max less the writers' reserve */
		EXPECT_GE(u.usage_pages, WATCH_POINT);

	peak_daemon = status_field(cg, "peak_pages");
	failcnt = status_field(cg, "failcnt");
	ratio_oracle = (double)peak_pages(ps) / LIMIT_PAGES;
	ratio_daemon = (double)peak_daemon / LIMIT_PAGES;
	test_log("%s: peak %" PRIu64 " pages by sock_diag every 10 ms (%.3f x max, largest gap "
		 "%.1f ms), daemon peak_pages %" PRId64 " (%.3f x max), failcnt %" PRId64
		 ", %" PRIu64 " bytes sent, %" PRIu64 " read before the stall",
		 s->name, peak_pages(ps), ratio_oracle, peak_max_gap_ms(ps), peak_daemon,
		 ratio_daemon, failcnt, sent, rcvd);
	EXPECT_LE(peak_pages(ps), (int64_t)(MAX_RATIO * LIMIT_PAGES));
	EXPECT_LE(peak_daemon, (int64_t)(MAX_RATIO * LIMIT_PAGES));
	/* The sampler runs every 10 ms on a real-time thread, but one
	 * sock_diag dump lists every TCP socket of the host: with 100,000s of
	 * them, or under CPU emulation, it cannot keep that pace. The daemon's
	 * own peak_pages, kept at every charge, is the measure then. */
	if (peak_max_gap_ms(ps) > 25)
		test_log("note: sock_diag samples up to %.0f ms apart", peak_max_gap_ms(ps));
	/* The load must have pushed, or the bound proves nothing: past a
	 * quarter of max, 8 times what the 128 sockets hold idle. Not half:
	 * the warm load's peak depends on the buffers its sockets had when
	 * the readers stopped, 0.54-0.65 of max in 8 runs here and 0.47 once
	 * in CI (2.7 GB moved in its warm second, against 1.5-1.8 usually). */
	EXPECT_GT(peak_daemon, LIMIT_PAGES / 4);

	ASSERT_OK(xload_finish(l, 60000, msg, sizeof(msg)) == 0 ? 0 : (test_log("%s", msg), -1));
	test_log("%s: %s", s->name, msg);
	/* Drained: trust comes back (the flag clears with the uncharges). */
	ASSERT_OK(usage_entry(cg, &u));
	if (u.usage_pages < WATCH_CLEAR)
		EXPECT_EQ(u.max_watch, 0);
	xload_close(l);
	peak_free(ps);
	limits_remove(cg);
}

int main(void)
{
	static const struct scenario scenarios[] = {
		{ .name = "stalled" },
		{ .name = "warm", .warm_ms = 1000 },
		{ .name = "rxonly", .tx = "senders", .warm_ms = 1000 },
	};

	test_init();
	/* No periodic full pass (every 200 ms in enforce_config()): it takes
	 * every limit anew and would set and clear max_watch too, and here
	 * only the charges may. Reloads are explicit. */
	enforce_config_poll(1000, 600000);
	ASSERT_OK(daemon_start(""));
	for (size_t i = 0; i < sizeof(scenarios) / sizeof(scenarios[0]); i++)
		run(&scenarios[i]);
	ASSERT_EQ(daemon_stop(), 0);
	return test_done();
}
