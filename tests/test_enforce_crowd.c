// SPDX-License-Identifier: GPL-2.0
/*
 * max holds at many connections (issue 22): 256 and 1024 connections whose
 * receivers never read, both ends in a cgroup with Limit=16M (max 4096
 * pages). Each connection holds a floor whatever its caps: its writer's
 * forced skb and its receiver's first window, 66 KiB over loopback by
 * default, 16.5 MiB for 256 connections and 66 MiB for 1024. A crowded
 * cgroup's connections start from a small window (tcpbuf_crowded_next()),
 * so usage by sock_diag every 10 ms must stay within 1.05 x max at 256 and
 * 1.25 x at 1024, and every byte must arrive intact once the receivers read.
 * Each burst goes into a cgroup with no socket yet, the daemon stopped for
 * its first half second (a busy host): the daemon then answers the first
 * socket only after most connections were asked for, so what holds them
 * must not wait for it (ingress is linked from the limit on).
 * Then, its connections closed, the cgroup is no longer crowded: a new
 * connection there gets the first window and MSS it got before the limit.
 */
#include "enforce_util.h"
#include "harness.h"
#include "skmem.h"
#include "tcpbuf_policy.h"

#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define LIMIT_PAGES	4096		/* 16 MiB */

struct scenario {
	int nconn;
	double max_ratio;
};

#define DAEMON_PAUSE_MS	500

static void *daemon_resume(void *arg)
{
	(void)arg;
	msleep(DAEMON_PAUSE_MS);
	daemon_signal(SIGCONT);
	return NULL;
}

static void run(const char *cg, const struct scenario *s)
{
	struct peak_sampler *ps;
	struct xload *l;
	char msg[256];
	uint64_t sent, rcvd;
	double ratio;
	pthread_t t;

	ps = peak_start(cg, 10);
	ASSERT_TRUE(ps != NULL);
	ASSERT_OK(daemon_signal(SIGSTOP));
	ASSERT_OK(pthread_create(&t, NULL, daemon_resume, NULL));
	l = xload_start(&(struct xload_opts){ .rx_cgroup = cg, .nconn = s->nconn,
					       .mode = XL_STALL });
	pthread_join(t, NULL);
	ASSERT_TRUE(l != NULL);
	msleep(under_emulation() ? 8000 : 3000);
	peak_stop(ps);
	ASSERT_OK(xload_stats(l, &sent, &rcvd));
	ratio = (double)peak_pages(ps) / LIMIT_PAGES;
	test_log("%d connections: peak %" PRIu64 " pages by sock_diag every 10 ms (%.3f x max, "
		 "at most %.2f; largest gap %.1f ms), daemon peak_pages %" PRId64 ", failcnt %"
		 PRId64 ", %" PRIu64 " bytes sent (%.1f KiB a connection)", s->nconn,
		 peak_pages(ps), ratio, s->max_ratio, peak_max_gap_ms(ps),
		 status_field(cg, "peak_pages"), status_field(cg, "failcnt"), sent,
		 (double)sent / s->nconn / 1024);
	EXPECT_LE(peak_pages(ps), (int64_t)(s->max_ratio * LIMIT_PAGES));
	/* The load must have pushed: stalled, it is held near max. */
	EXPECT_GT(peak_pages(ps), LIMIT_PAGES / 2);
	if (peak_max_gap_ms(ps) > 25)
		test_log("note: sock_diag samples up to %.0f ms apart", peak_max_gap_ms(ps));
	ASSERT_OK(xload_finish(l, 60000, msg, sizeof(msg)) == 0 ? 0 : (test_log("%s", msg), -1));
	test_log("%d connections: %s", s->nconn, msg);
	xload_close(l);
	peak_free(ps);
}

/* One connection into a listener made in @cg: the accepted end's first
 * receive threshold (its SYN-ACK's window, bounded by its clamp) and the MSS
 * it advertised, by TCP_INFO. */
static void first_window(const char *cg, unsigned *wnd, unsigned *mss)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t alen = sizeof(a), ilen = sizeof(struct tcp_info);
	struct tcp_info ti;
	unsigned got[2];
	int p[2], q[2], lfd, cfd, afd;

	ASSERT_OK(pipe(p));
	ASSERT_OK(pipe(q));
	if (test_fork(1) == 0) {
		/* The listener in the cgroup, as a server there. */
		if (cg_enter(cg))
			_exit(1);
		lfd = socket(AF_INET, SOCK_STREAM, 0);
		if (lfd < 0 || bind(lfd, (struct sockaddr *)&a, sizeof(a)) || listen(lfd, 4) ||
		    getsockname(lfd, (struct sockaddr *)&a, &alen) ||
		    write(p[1], &a, sizeof(a)) != sizeof(a))
			_exit(1);
		afd = accept(lfd, NULL, NULL);
		if (afd < 0 || getsockopt(afd, IPPROTO_TCP, TCP_INFO, &ti, &ilen))
			_exit(1);
		got[0] = ti.tcpi_rcv_ssthresh;
		got[1] = ti.tcpi_advmss;
		_exit(write(q[1], got, sizeof(got)) != sizeof(got));
	}
	ASSERT_EQ(read(p[0], &a, sizeof(a)), (ssize_t)sizeof(a));
	cfd = socket(AF_INET, SOCK_STREAM, 0);
	ASSERT_OK(connect(cfd, (struct sockaddr *)&a, sizeof(a)));
	ASSERT_EQ(read(q[0], got, sizeof(got)), (ssize_t)sizeof(got));
	*wnd = got[0];
	*mss = got[1];
	close(cfd);
	close(p[0]);
	close(p[1]);
	close(q[0]);
	close(q[1]);
}

int main(void)
{
	static const struct scenario scenarios[] = {
		{ .nconn = 256, .max_ratio = 1.05 },
		{ .nconn = 1024, .max_ratio = 1.25 },
	};
	unsigned wnd0 = 0, mss0 = 0, wnd = 0, mss = 0;
	const char *cg;

	test_init();
	enforce_config(1000);
	ASSERT_OK(daemon_start(""));
	cg = cg_create("crowd");
	first_window(cg, &wnd0, &mss0);
	limits_write(cg, LIMIT_PAGES, 0, 0, 0);
	ASSERT_OK(daemon_reload_until(cg, LIMIT_PAGES, 5000));
	for (size_t i = 0; i < sizeof(scenarios) / sizeof(scenarios[0]); i++) {
		run(cg, &scenarios[i]);
		/* The connections closed: far, and what near cgroups need
		 * unlinked (NEAR_HOLD_MS), before the next burst. */
		msleep(1500);
	}
	/* No longer crowded: a new connection is as without limits. */
	first_window(cg, &wnd, &mss);
	test_log("first window without limits %u (MSS %u), after the crowded loads %u (MSS %u)",
		 wnd0, mss0, wnd, mss);
	EXPECT_EQ(mss, mss0);
	EXPECT_GT(wnd, TCPBUF_CROWD_MSS * TCPBUF_CROWD_RWND);
	limits_remove(cg);
	ASSERT_EQ(daemon_stop(), 0);
	return test_done();
}
