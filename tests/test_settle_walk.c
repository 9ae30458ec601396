// SPDX-License-Identifier: GPL-2.0
/*
 * Exact mode: a status walks every TCP socket of the host (settle_tcp) only
 * to give back the pages sockets keep (tcpbuf_exact_step()), so it walks
 * only when some socket kept pages since the last walk
 * (tcpbuf_settle_due()). With a hundred thousand sockets a walk takes tens
 * to hundreds of milliseconds, and a tenant may ask for 20 statuses a
 * second.
 *   1. NPAIRS idle loopback connections in an unlimited cgroup, each having
 *      carried a message; a first status walks them (BPF_ENABLE_STATS held:
 *      settle_tcp's run_cnt grows by at least a run per socket);
 *   2. a second status, nothing charged meanwhile: no walk (run_cnt
 *      unchanged);
 *   3. one request/response exchange (its sender keeps the page TCP gives
 *      back at the ACK): the next status walks again, and the cgroup's
 *      usage then agrees with sock_diag.
 * Exact mode only (sampled mode's status reconciles instead); skipped
 * elsewhere.
 */
#include "enforce_util.h"
#include "harness.h"
#include "progstats.h"
#include "skmem.h"

#include <arpa/inet.h>
#include <bpf/bpf.h>
#include <dirent.h>
#include <linux/bpf.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define NPAIRS 16

static int pair_open(int *a, int *b)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(sin);
	int l = socket(AF_INET, SOCK_STREAM, 0);

	if (l < 0 || bind(l, (struct sockaddr *)&sin, sizeof(sin)) || listen(l, 1) ||
	    getsockname(l, (struct sockaddr *)&sin, &len))
		return -1;
	*a = socket(AF_INET, SOCK_STREAM, 0);
	if (*a < 0 || connect(*a, (struct sockaddr *)&sin, sizeof(sin)))
		return -1;
	*b = accept(l, NULL, NULL);
	close(l);
	return *b < 0 ? -1 : 0;
}

/* A message from @a to @b and its reply. */
static int exchange(int a, int b)
{
	char buf[512] = { 1 };

	if (write(a, buf, sizeof(buf)) != sizeof(buf) || read(b, buf, sizeof(buf)) <= 0 ||
	    write(b, buf, 100) != 100 || read(a, buf, sizeof(buf)) <= 0)
		return -1;
	return 0;
}

/* settle_tcp's runs over one status. */
static int64_t status_runs(void)
{
	int64_t c0 = daemon_prog_run_cnt("settle_tcp"), c1;
	char *out = NULL;

	ASSERT_EQ(ctl(&out, "status"), 0);
	free(out);
	c1 = daemon_prog_run_cnt("settle_tcp");
	ASSERT_TRUE(c0 >= 0 && c1 >= 0);
	return c1 - c0;
}

int main(void)
{
	int a[NPAIRS], b[NPAIRS], stats, i;
	int64_t first, idle, after, usage;
	struct skmem_total k = {};
	const char *u;

	test_init();
	ASSERT_OK(daemon_start(""));
	if (strcmp(daemon_mode(), "exact"))
		SKIP("%s mode: a status reconciles every socket, nothing is kept", daemon_mode());
	u = cg_create("u");
	ASSERT_OK(cg_enter(u));
	for (i = 0; i < NPAIRS; i++)
		ASSERT_OK(pair_open(&a[i], &b[i]));
	ASSERT_OK(cg_leave());
	for (i = 0; i < NPAIRS; i++)
		ASSERT_OK(exchange(a[i], b[i]));
	msleep(200);	/* the last ACKs, and the pages they give back */
	stats = bpf_enable_stats(BPF_STATS_RUN_TIME);
	ASSERT_TRUE(stats >= 0);

	first = status_runs();
	idle = status_runs();
	ASSERT_OK(exchange(a[0], b[0]));
	msleep(200);
	after = status_runs();
	close(stats);
	test_log("settle_tcp runs: first status %" PRId64 ", the next with nothing kept since %"
		 PRId64 ", after one exchange %" PRId64 " (%d sockets of ours)", first, idle, after,
		 2 * NPAIRS);
	EXPECT_GE(first, 2 * NPAIRS);
	EXPECT_EQ(idle, 0);
	EXPECT_GE(after, 2 * NPAIRS);

	/* What the walk gave back: usage as the kernel holds it. */
	usage = usage_against_sock_diag(u, "", &k, 20);
	test_log("u: usage %" PRId64 " pages, sock_diag %" PRIu64, usage, (uint64_t)k.pages);
	EXPECT_NEAR(usage, (int64_t)k.pages, skmem_tolerance((int64_t)k.pages));

	for (i = 0; i < NPAIRS; i++) {
		close(a[i]);
		close(b[i]);
	}
	ASSERT_EQ(daemon_stop(), 0);
	return test_done();
}
