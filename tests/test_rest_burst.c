// SPDX-License-Identifier: GPL-2.0
/*
 * A burst of connections into a cgroup whose ingress rests (src/enforce_rest.c)
 * is held as one into a crowded cgroup: no SYN drop holds it while the
 * daemon links ingress again, so the cgroup's listeners get the crowded MSS
 * before ingress goes (enforce_crowd.bpf.h). A cgroup with Limit=16M (or
 * bounded_limit()) serving one idle connection is bounded, and its ingress
 * rests within 3 s. Then:
 *   1. a listener made in it before the rest has TCP_MAXSEG TCPBUF_CROWD_MSS,
 *      and a connection made to it has an MSS no larger;
 *   2. 256 connections whose receivers stall, made at once: the cgroup's
 *      peak by sock_diag every 10 ms stays within 1.05 x max (with the
 *      loopback MSS they reach max and more: bench/enforce, as a cgroup
 *      that already serves), every byte arrives once they read;
 *   3. every connection closed, ingress is linked again (the limit is near
 *      at a first socket) and the listener has its own MSS back.
 * Sampled mode, kernels with the tcp_rcvbuf_grow tracepoint; skipped
 * elsewhere.
 */
#include "enforce_util.h"
#include "harness.h"
#include "tcpbuf_maps.h"
#include "tcpbuf_policy.h"

#include <arpa/inet.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define NCONN		256
#define MAX_RATIO	1.05

static int mss_of(int fd)
{
	int v = -1;
	socklen_t l = sizeof(v);

	return getsockopt(fd, IPPROTO_TCP, TCP_MAXSEG, &v, &l) ? -1 : v;
}

int main(void)
{
	struct sockaddr_in a;
	struct xload *warm, *l;
	struct peak_sampler *ps;
	char msg[256];
	const char *cg;
	int64_t limit;
	int lis, c, s, waited;

	test_init();
	rest_daemon_start(1000);
	cg = cg_create("b");
	limit = PAGES(bounded_limit());
	limits_write(cg, limit, 0, 0, 0);
	ASSERT_OK(daemon_reload_until(cg, limit, 5000));

	lis = listener_in(cg, &a, 4);
	test_log("listener's MSS before the rest: %d", mss_of(lis));
	EXPECT_NE(mss_of(lis), TCPBUF_CROWD_MSS);

	warm = xload_start(&(struct xload_opts){ .rx_cgroup = cg, .nconn = 1, .idle = 1 });
	ASSERT_TRUE(warm != NULL);
	waited = ingress_rest_wait(cg, 1, 3000);
	test_log("one idle connection: ingress at rest after %d ms", waited);
	ASSERT_TRUE(waited >= 0);

	/* 1. */
	test_log("listener's MSS at rest: %d", mss_of(lis));
	EXPECT_EQ(mss_of(lis), TCPBUF_CROWD_MSS);
	c = socket(AF_INET, SOCK_STREAM, 0);
	ASSERT_TRUE(c >= 0);
	ASSERT_OK(connect(c, (void *)&a, sizeof(a)));
	s = accept(lis, NULL, NULL);
	ASSERT_TRUE(s >= 0);
	test_log("a connection made at rest: MSS %d", mss_of(c));
	EXPECT_LE(mss_of(c), TCPBUF_CROWD_MSS);
	close(c);
	close(s);

	/* 2. */
	ps = peak_start(cg, 10);
	ASSERT_TRUE(ps != NULL);
	l = xload_start(&(struct xload_opts){ .rx_cgroup = cg, .nconn = NCONN, .mode = XL_STALL });
	ASSERT_TRUE(l != NULL);
	msleep(3000);
	peak_stop(ps);
	test_log("%d stalled connections into the resting cgroup: peak %" PRIu64 " pages by "
		 "sock_diag (%.3f x max, largest gap %.1f ms)", NCONN, peak_pages(ps),
		 (double)peak_pages(ps) / limit, peak_max_gap_ms(ps));
	EXPECT_LE_F((double)peak_pages(ps) / limit, MAX_RATIO);
	ASSERT_OK(xload_finish(l, 60000, msg, sizeof(msg)) == 0 ? 0 : (test_log("%s", msg), -1));
	test_log("%s", msg);
	xload_close(l);
	peak_free(ps);

	/* 3. Every connection gone: nothing rests (the limit is near at a
	 * first socket), and the listener has its own MSS back. */
	xload_close(warm);
	for (waited = 0; waited < 5000 && (ingress_resting(cg) || mss_of(lis) == TCPBUF_CROWD_MSS);
	     waited += 10)
		msleep(10);
	test_log("no connection left: after %d ms ingress %s, listener's MSS %d", waited,
		 ingress_resting(cg) ? "at rest" : "linked", mss_of(lis));
	EXPECT_FALSE(ingress_resting(cg));
	EXPECT_NE(mss_of(lis), TCPBUF_CROWD_MSS);
	close(lis);
	limits_remove(cg);
	ASSERT_EQ(daemon_stop(), 0);
	return test_done();
}
