// SPDX-License-Identifier: GPL-2.0
/*
 * The rest's passes over sockets (src/enforce_rest.c) stay few. A container
 * ("c", Limit=bounded_limit(), in a network namespace of its own) holds one
 * connection whose ingress rests; 256 idle connections of an unlimited
 * cgroup sit in the daemon's namespace, so a pass there visits 512 sockets
 * or more (counted as runs of the rest_locks iterator).
 *   1. A connection into another limited cgroup every 400 ms, 25 times,
 *      each closed before the next: each wakes ingress, and a rest that
 *      follows locks with a pass over every namespace. Fewer than 8 x 512
 *      visits: rests cut short wait longer for quiet (before: one a cycle).
 *   2. The container's connection streams for 3 s: its receiver grows past
 *      the 131,072 bytes it was locked at (sock_diag in its namespace), and
 *      rest_locks visits fewer than 512 sockets meanwhile, beyond 512 for
 *      each rest that begins again: a locked socket that asks to grow is
 *      raised by a pass in its own namespace only.
 * Sampled mode, kernels with the tcp_rcvbuf_grow tracepoint, sysctls where
 * IngressRest=auto rests a two-socket cgroup.
 */
#include "enforce_util.h"
#include "harness.h"
#include "progstats.h"
#include "skmem.h"
#include "tcpbuf_policy.h"

#include <arpa/inet.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <bpf/bpf.h>

#define DECOYS		256
#define CYCLES		25	/* connections 400 ms apart */
#define LOCKED_AT	131072
#define REST_BEGUN	"ingress at rest at"	/* the daemon's debug line */

struct largest {
	uint64_t cgid;
	uint32_t rcvbuf;
};

static int largest_rcvbuf(const struct skmem_sock *s, void *arg)
{
	struct largest *l = arg;

	if (s->cgid == l->cgid && s->has_mem && s->rcvbuf > l->rcvbuf)
		l->rcvbuf = s->rcvbuf;
	return 0;
}

int main(void)
{
	long rmem_max = sysctl_field("/proc/sys/net/core/rmem_max", 0);
	long tcp_rmem2 = sysctl_field("/proc/sys/net/ipv4/tcp_rmem", 2);
	struct xload *decoy, *l;
	struct largest big = { 0 };
	const char *c, *d, *p;
	struct sockaddr_in a;
	int64_t limit, runs0, runs;
	char msg[256];
	__u64 t;
	int stats, waited, lis, starts;

	test_init();
	if (!ingress_rest_possible())
		SKIP("no tcp_rcvbuf_grow tracepoint: ingress never rests");
	limit = PAGES(bounded_limit());
	t = tcpbuf_threshold(tcpbuf_thresholds_of(limit, 0, 0).pressure, limit);
	if (!tcpbuf_rest_free(2, t, tcp_rmem2, rmem_max))
		SKIP("rmem_max %ld, tcp_rmem[2] %ld: IngressRest=auto rests no connection here",
		     rmem_max, tcp_rmem2);
	enforce_config(1000);
	ASSERT_OK(daemon_start(""));
	if (strcmp(daemon_mode(), "sampled"))
		SKIP("%s mode: ingress rests in sampled mode only", daemon_mode());
	c = cg_limited("c", limit);
	p = cg_limited("p", limit);
	d = cg_create("decoy");
	decoy = xload_start(&(struct xload_opts){ .rx_cgroup = d, .nconn = DECOYS, .idle = 1 });
	ASSERT_TRUE(decoy != NULL);
	l = xload_start(&(struct xload_opts){ .rx_cgroup = c, .nconn = 1, .idle = 1, .netns = 1 });
	ASSERT_TRUE(l != NULL);
	ASSERT_OK(skmem_netns_add(xload_pid(l)));
	waited = ingress_rest_wait(c, 1, 5000);
	test_log("the container's connection: ingress at rest after %d ms", waited);
	ASSERT_TRUE(waited >= 0);

	stats = bpf_enable_stats(BPF_STATS_RUN_TIME);
	ASSERT_TRUE(stats >= 0);

	/* 1. */
	lis = listener_in(p, &a, 4);
	runs0 = daemon_iter_run_cnt("rest_locks");
	for (int i = 0; i < CYCLES; i++) {
		int cl, sv;

		ASSERT_OK(cg_enter(p));
		cl = socket(AF_INET, SOCK_STREAM, 0);
		ASSERT_OK(cg_leave());
		ASSERT_TRUE(cl >= 0);
		ASSERT_OK(connect(cl, (void *)&a, sizeof(a)));
		sv = accept(lis, NULL, NULL);
		ASSERT_TRUE(sv >= 0);
		msleep(400);
		close(cl);
		close(sv);
	}
	close(lis);
	runs = daemon_iter_run_cnt("rest_locks") - runs0;
	test_log("a connection every 400 ms, %d times: rest_locks visited %" PRId64 " sockets",
		 CYCLES, runs);
	EXPECT_LT(runs, 8 * 2 * DECOYS);
	/* The closes' own wakes come and go first. */
	waited = ingress_rest_steady(c, 1500, 20000);
	test_log("then at rest for 1.5 s after %d ms", waited);
	ASSERT_TRUE(waited >= 0);

	/* 2. A rest that begins again meanwhile makes its one pass everywhere. */
	runs0 = daemon_iter_run_cnt("rest_locks");
	starts = daemon_log_count(REST_BEGUN);
	ASSERT_TRUE(runs0 >= 0);
	ASSERT_OK(xload_send(l));
	msleep(3000);
	runs = daemon_iter_run_cnt("rest_locks") - runs0;
	starts = daemon_log_count(REST_BEGUN) - starts;
	close(stats);
	big.cgid = cg_id(c);
	ASSERT_OK(skmem_foreach(largest_rcvbuf, &big));
	test_log("streaming 3 s: its largest receive buffer %u bytes; rest_locks visited %" PRId64
		 " sockets (%d in the daemon's namespace), %d rests begun", big.rcvbuf, runs,
		 2 * DECOYS, starts);
	EXPECT_GT(big.rcvbuf, LOCKED_AT);
	EXPECT_LT(runs, (starts + 1) * 2 * DECOYS);

	ASSERT_OK(xload_finish(l, 30000, msg, sizeof(msg)) == 0 ? 0 : (test_log("%s", msg), -1));
	xload_close(l);
	xload_close(decoy);
	skmem_netns_clear();
	limits_remove(c);
	ASSERT_EQ(daemon_stop(), 0);
	return test_done();
}
