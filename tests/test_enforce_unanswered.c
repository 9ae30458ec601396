// SPDX-License-Identifier: GPL-2.0
/*
 * max holds from a cgroup's first connections, before the daemon answers
 * them. A limited cgroup without sockets is far: nothing runs per segment
 * or syscall for it. Its first socket makes it near and arms itself, and
 * the daemon links the samplers and ingress in answer to that event; on a
 * busy host that answer can come after a loopback load has filled (a runc
 * container starts its load just after its hook set the limit: test_oci).
 * Here the daemon is stopped (SIGSTOP) from before the load until after it
 * filled: 16 stalled connections, both ends in a cgroup with Limit=16M,
 * must peak within 1.05 x max by sock_diag. Then the daemon goes on, and
 * every byte arrives once the receivers read.
 */
#include "enforce_util.h"
#include "harness.h"

#include <inttypes.h>
#include <signal.h>
#include <stdio.h>

#define LIMIT_PAGES	4096		/* 16 MiB */
#define NCONN		16
#define MAX_RATIO	1.05

/* A stopped daemon cannot be stopped: on the way out after a failed check too. */
static void daemon_continue(void *arg)
{
	(void)arg;
	daemon_signal(SIGCONT);
}

int main(void)
{
	struct peak_sampler *ps;
	struct xload *l;
	const char *cg;
	char msg[256];
	int64_t peak_daemon;

	test_init();
	enforce_config_poll(1000, 600000);
	ASSERT_OK(daemon_start(""));
	cg = cg_create("first");
	limits_write(cg, LIMIT_PAGES, 0, 0, 0);
	ASSERT_OK(daemon_reload_until(cg, LIMIT_PAGES, 5000));

	test_defer(daemon_continue, NULL);
	ASSERT_OK(daemon_signal(SIGSTOP));
	ps = peak_start(cg, 10);
	ASSERT_TRUE(ps != NULL);
	l = xload_start(&(struct xload_opts){ .rx_cgroup = cg, .nconn = NCONN, .mode = XL_STALL });
	ASSERT_TRUE(l != NULL);
	msleep(2000);
	peak_stop(ps);
	ASSERT_OK(daemon_signal(SIGCONT));

	test_log("daemon stopped: peak %" PRIu64 " pages by sock_diag every 10 ms (%.3f x max, "
		 "largest gap %.1f ms)", peak_pages(ps), (double)peak_pages(ps) / LIMIT_PAGES,
		 peak_max_gap_ms(ps));
	EXPECT_LE(peak_pages(ps), (uint64_t)(MAX_RATIO * LIMIT_PAGES));
	EXPECT_GE(peak_pages(ps), LIMIT_PAGES / 2);	/* the load is real: it reached the limit */
	peak_daemon = status_field(cg, "peak_pages");
	test_log("daemon's peak_pages %" PRId64, peak_daemon);
	EXPECT_LE(peak_daemon, (int64_t)(MAX_RATIO * LIMIT_PAGES));

	ASSERT_OK(xload_finish(l, 60000, msg, sizeof(msg)) == 0 ? 0 : (test_log("%s", msg), -1));
	test_log("%s", msg);
	xload_close(l);
	peak_free(ps);
	limits_remove(cg);
	ASSERT_EQ(daemon_stop(), 0);
	return test_done();
}
