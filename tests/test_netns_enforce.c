// SPDX-License-Identifier: GPL-2.0
/*
 * Two containers, each in a network namespace of its own, under one limited
 * parent, the limit set after their loads are established: the sweep that
 * answers the change of limits must reach their existing sockets (count,
 * caps, arming) in their own namespaces.
 *
 * "lim/c1" and "lim/c2" each hold NCONN established connections (both
 * ends inside, nothing sent yet); then "lim" gets Limit=16M (max 4096
 * pages, pressure 3072, min 2048), and the senders start writing to
 * receivers that never read. Read from sock_diag in both namespaces every 10 ms, the
 * subtree must stay within 1.05 x max (what test_enforce_max holds in the
 * daemon's namespace); the parent must count every socket of both
 * children and pass through pressure; and every byte arrives intact after.
 */
#include "enforce_util.h"
#include "harness.h"
#include "skmem.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LIMIT_PAGES	4096		/* 16 MiB */
#define NCONN		32		/* per container */
#define MAX_RATIO	1.05

int main(void)
{
	const char *lim, *c[2];
	struct xload *l[2];
	struct peak_sampler *ps;
	int64_t usage, sockets, events, peak_after;
	char msg[256];
	double ratio;

	test_init();
	enforce_config_poll(1000, 600000);
	lim = cg_create("lim");
	c[0] = cg_create("lim/c1");
	c[1] = cg_create("lim/c2");
	ASSERT_OK(daemon_start(""));

	for (int i = 0; i < 2; i++) {
		l[i] = xload_start(&(struct xload_opts){ .rx_cgroup = c[i], .nconn = NCONN,
							  .mode = XL_STALL, .idle = 1, .netns = 1 });
		ASSERT_TRUE(l[i] != NULL);
		ASSERT_OK(skmem_netns_add(xload_pid(l[i])));
	}

	/* The limit comes to running containers. */
	limits_write(lim, LIMIT_PAGES, LIMIT_PAGES, LIMIT_PAGES * 3 / 4, LIMIT_PAGES / 2);
	ASSERT_OK(daemon_reload_until(lim, LIMIT_PAGES, 5000));
	ps = peak_start(lim, 10);
	ASSERT_TRUE(ps != NULL);
	for (int i = 0; i < 2; i++)
		ASSERT_OK(xload_send(l[i]));
	msleep(3000);
	peak_stop(ps);

	usage = status_field(lim, "usage_pages");
	sockets = status_field(lim, "sockets");
	events = status_field(lim, "pressure_events");
	peak_after = (int64_t)peak_pages(ps);
	ratio = (double)peak_after / LIMIT_PAGES;
	test_log("lim: peak %" PRId64 " pages by sock_diag in both namespaces (%.3f x max, "
		 "largest gap %.1f ms), usage %" PRId64 ", %" PRId64 " sockets, %" PRId64
		 " pressure events, state %s", peak_after, ratio, peak_max_gap_ms(ps), usage,
		 sockets, events, status_state(lim));
	EXPECT_LE(peak_after, (int64_t)(MAX_RATIO * LIMIT_PAGES));
	EXPECT_LE(usage, (int64_t)(MAX_RATIO * LIMIT_PAGES));
	/* It must have pushed, or the bound proves nothing. */
	EXPECT_GT(peak_after, LIMIT_PAGES / 2);
	EXPECT_GE(sockets, 2 * 2 * NCONN);
	EXPECT_GE(events, 1);

	for (int i = 0; i < 2; i++) {
		int r = xload_finish(l[i], 60000, msg, sizeof(msg));

		test_log("c%d: %s", i + 1, msg);
		EXPECT_EQ(r, 0);
		xload_close(l[i]);
	}
	peak_free(ps);
	skmem_netns_clear();
	limits_remove(lim);
	ASSERT_EQ(daemon_stop(), 0);
	return test_done();
}
