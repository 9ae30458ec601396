// SPDX-License-Identifier: GPL-2.0
/*
 * IngressRest= (src/enforce_rest.c). By default (auto) ingress rests at a
 * bounded cgroup only where its rest locks cost nothing: no socket's share
 * reaches past what SO_RCVBUF gives (tcpbuf_rest_free()). Two cgroups with
 * Limit=bounded_limit(), each serving one idle connection: "two" holds both
 * of its ends, "one" only the accepted end, whose share is then twice as
 * large. With this host's sysctls (checked: skipped where both or neither
 * would rest):
 *   1. default: "two" rests steadily within 10 s, its sockets are locked (SO_BUF_LOCK)
 *      and its listener has the crowded MSS; "one" stays linked, its socket
 *      unlocked, its listener's MSS its own; status says which is which;
 *   2. reload to IngressRest=yes: "one" rests too, its socket locked, its
 *      listener's MSS the crowded one;
 *   3. reload to IngressRest=no: ingress linked at both, every rest lock
 *      raised to twice rmem_max;
 *   4. a new connection in "two", reload to the default: it rests again,
 *      its sockets locked at their size; a clean stop links ingress and
 *      raises those locks as 3 does;
 *   5. a new connection in "two" rests under a new daemon, which is then
 *      killed (SIGKILL): its locks stay at their size. A daemon started
 *      with IngressRest=no lifts them as 3 does, and nothing rests.
 * Sampled mode, kernels with the tcp_rcvbuf_grow tracepoint.
 */
#include "enforce_util.h"
#include "harness.h"
#include "tcpbuf_policy.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#ifndef SO_BUF_LOCK
#define SO_BUF_LOCK	72
#endif
#define RCVBUF_LOCK	2

static int sockopt(int fd, int name)
{
	int v = -1;
	socklen_t l = sizeof(v);

	return getsockopt(fd, SOL_SOCKET, name, &v, &l) ? -1 : v;
}

static int mss_of(int fd)
{
	int v = -1;
	socklen_t l = sizeof(v);

	return getsockopt(fd, IPPROTO_TCP, TCP_MAXSEG, &v, &l) ? -1 : v;
}

static bool locked(int fd)
{
	return sockopt(fd, SO_BUF_LOCK) & RCVBUF_LOCK;
}

/* A connection to a listener in @cg, its client made in @client_cg (NULL:
 * where the test runs): the accepted end in *@s, the client's returned. */
static int connect_into(const char *cg, const char *client_cg, int *s)
{
	struct sockaddr_in a;
	int lis = listener_in(cg, &a, 1), c;

	if (client_cg)
		ASSERT_OK(cg_enter(client_cg));
	c = socket(AF_INET, SOCK_STREAM, 0);
	if (client_cg)
		ASSERT_OK(cg_leave());
	ASSERT_TRUE(c >= 0);
	ASSERT_OK(connect(c, (void *)&a, sizeof(a)));
	*s = accept(lis, NULL, NULL);
	ASSERT_TRUE(*s >= 0);
	close(lis);
	return c;
}

/* After a release (reload to no, clean stop, a start after SIGKILL): each
 * of @fds' rest locks raised to twice rmem_max, and @cg's ingress linked. */
static void expect_released(const char *what, const int *fds, int n, const char *cg, long rmem_max)
{
	for (int i = 0; i < n; i++) {
		test_log("%s: rcvbuf %d", what, sockopt(fds[i], SO_RCVBUF));
		EXPECT_EQ(sockopt(fds[i], SO_RCVBUF), 2 * rmem_max);
	}
	test_log("%s: ingress %s", what, ingress_resting(cg) ? "at rest" : "linked");
	EXPECT_FALSE(ingress_resting(cg));
}

static void start_with(const char *choice)
{
	enforce_ingress_rest = choice;
	enforce_config(1000);
	ASSERT_OK(daemon_start(""));
}

int main(void)
{
	const char *two, *one;
	long rmem_max = sysctl_field("/proc/sys/net/core/rmem_max", 0);
	long tcp_rmem2 = sysctl_field("/proc/sys/net/ipv4/tcp_rmem", 2);
	int64_t limit;
	__u64 t;
	struct sockaddr_in a;
	int c2, s2, c1, s1, l2, l1, waited;

	test_init();
	if (!ingress_rest_possible())
		SKIP("no tcp_rcvbuf_grow tracepoint: ingress never rests");
	limit = PAGES(bounded_limit());
	t = tcpbuf_threshold(tcpbuf_thresholds_of(limit, 0, 0).pressure, limit);
	if (!tcpbuf_rest_free(2, t, tcp_rmem2, rmem_max) || tcpbuf_rest_free(1, t, tcp_rmem2, rmem_max))
		SKIP("rmem_max %ld, tcp_rmem[2] %ld: a lone socket's share and two's are alike "
		     "to IngressRest=auto", rmem_max, tcp_rmem2);
	start_with(NULL);
	if (strcmp(daemon_mode(), "sampled"))
		SKIP("%s mode: ingress rests in sampled mode only", daemon_mode());
	two = cg_limited("two", limit);
	one = cg_limited("one", limit);
	c2 = connect_into(two, two, &s2);
	c1 = connect_into(one, NULL, &s1);
	l2 = listener_in(two, &a, 1);
	l1 = listener_in(one, &a, 1);

	/* 1. */
	waited = ingress_rest_steady(two, 1000, 10000);
	test_log("default: \"two\" at rest for 1 s after %d ms; sockets locked %d %d", waited,
		 locked(c2), locked(s2));
	ASSERT_TRUE(waited >= 0);
	EXPECT_TRUE(locked(c2) && locked(s2));
	test_log("default: \"one\" %s, its socket locked %d; listeners' MSS %d (two), %d (one)",
		 ingress_resting(one) ? "at rest" : "linked", locked(s1), mss_of(l2), mss_of(l1));
	EXPECT_FALSE(ingress_resting(one));
	EXPECT_FALSE(locked(s1));
	EXPECT_EQ(mss_of(l2), TCPBUF_CROWD_MSS);
	EXPECT_NE(mss_of(l1), TCPBUF_CROWD_MSS);
	test_log("status: \"two\" ingress \"%s\"", status_string(two, "ingress"));
	EXPECT_TRUE(!strcmp(status_string(two, "ingress"), "at rest"));
	test_log("status: \"one\" ingress \"%s\"", status_string(one, "ingress"));
	EXPECT_TRUE(!strcmp(status_string(one, "ingress"), "linked"));

	/* 2. */
	enforce_ingress_rest = "yes";
	enforce_config(1000);
	ASSERT_EQ(daemon_signal(SIGHUP), 0);
	waited = ingress_rest_wait(one, 1, 3000);
	test_log("IngressRest=yes: \"one\" at rest after %d ms, its socket locked %d (rcvbuf %d), "
		 "its listener's MSS %d", waited, locked(s1), sockopt(s1, SO_RCVBUF), mss_of(l1));
	EXPECT_TRUE(waited >= 0);
	EXPECT_TRUE(locked(s1));
	EXPECT_EQ(mss_of(l1), TCPBUF_CROWD_MSS);
	EXPECT_TRUE(ingress_resting(two));

	/* 3. */
	enforce_ingress_rest = "no";
	enforce_config(1000);
	ASSERT_EQ(daemon_signal(SIGHUP), 0);
	for (waited = 0; waited < 3000 && (ingress_resting(two) || ingress_resting(one) ||
					   sockopt(s1, SO_RCVBUF) != 2 * rmem_max ||
					   sockopt(c2, SO_RCVBUF) != 2 * rmem_max); waited += 10)
		msleep(10);
	test_log("IngressRest=no: %d ms", waited);
	expect_released("IngressRest=no, \"two\"", (int[]){ c2, s2 }, 2, two, rmem_max);
	expect_released("IngressRest=no, \"one\"", (int[]){ s1 }, 1, one, rmem_max);
	close(c2);
	close(s2);
	close(c1);
	close(s1);
	close(l1);
	close(l2);

	/* 4. */
	c2 = connect_into(two, two, &s2);
	enforce_ingress_rest = NULL;
	enforce_config(1000);
	ASSERT_EQ(daemon_signal(SIGHUP), 0);
	waited = ingress_rest_wait(two, 1, 5000);
	test_log("back to auto: a new connection in \"two\" at rest after %d ms, rcvbuf %d %d, "
		 "locked %d %d", waited, sockopt(c2, SO_RCVBUF), sockopt(s2, SO_RCVBUF), locked(c2),
		 locked(s2));
	ASSERT_TRUE(waited >= 0);
	EXPECT_TRUE(locked(c2) && locked(s2));
	EXPECT_LT(sockopt(s2, SO_RCVBUF), 2 * rmem_max);
	ASSERT_EQ(daemon_stop(), 0);
	expect_released("clean stop", (int[]){ c2, s2 }, 2, two, rmem_max);
	close(c2);
	close(s2);

	/* 5. */
	c2 = connect_into(two, two, &s2);
	start_with(NULL);
	waited = ingress_rest_wait(two, 1, 5000);
	ASSERT_TRUE(waited >= 0);
	ASSERT_EQ(daemon_signal(SIGKILL), 0);
	for (waited = 0; daemon_alive() && waited < 5000; waited += 10)
		msleep(10);
	test_log("killed at rest: rcvbuf %d %d, locked %d %d", sockopt(c2, SO_RCVBUF),
		 sockopt(s2, SO_RCVBUF), locked(c2), locked(s2));
	EXPECT_TRUE(locked(c2) && locked(s2));
	EXPECT_LT(sockopt(s2, SO_RCVBUF), 2 * rmem_max);
	start_with("no");
	msleep(1500);
	expect_released("IngressRest=no after it", (int[]){ c2, s2 }, 2, two, rmem_max);
	close(c2);
	close(s2);
	limits_remove(two);
	limits_remove(one);
	ASSERT_EQ(daemon_stop(), 0);
	return test_done();
}
