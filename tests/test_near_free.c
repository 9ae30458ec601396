// SPDX-License-Identifier: GPL-2.0
/*
 * A near limit costs nothing until it binds (issue 22): a 16 MiB cgroup,
 * near from its first socket by what its sockets could hold, whose one bulk
 * connection stays far under its threshold, is dormant (tcpbuf_near_guard()
 * in include/tcpbuf_policy.h): its sockets are left to the kernel.
 *   1. the same bulk connection in an unlimited sibling cgroup "u": the
 *      largest sk_sndbuf and sk_rcvbuf its sockets reach (sock_diag);
 *   2. in "n" (Limit=16M, or twice tcp_rmem[2] where one receiver may hold
 *      more than 16 MiB's threshold): its sockets reach at least as much, their
 *      sock_charge entries are not armed (sock_diag's socket storage), and
 *      enforce_sockops runs no per-segment callback for them: its run_cnt
 *      (BPF_ENABLE_STATS while we look) grows by a handful over a second of
 *      traffic, not by a run per segment;
 *   3. the cgroup's peak stayed under its pressure threshold (else the
 *      case is not the one measured), and every byte arrived intact;
 *   5. (sampled mode) one TCP_RR connection in "r" (Limit=16M, or four
 *      writers' ceilings where SO_SNDBUF reaches past 4 MiB): bounded
 *      (tcpbuf_bounded_share(): its two sockets' buffers cannot reach the guard),
 *      so nothing follows it but ingress's early exit: over a second, the
 *      run_cnt of every program using the daemon's sock_charge map other
 *      than enforce_ingress and the passes over every socket of the host
 *      (reconcile, sweep) grows by less than one run per 50 transactions
 *      (followed, three samplers run 6), enforce_ingress's by at most 2.05;
 *      where ingress may rest (src/enforce_rest.c, 6.17+), its link goes
 *      within 3 s of the samplers' and it runs once per 100 at most;
 *   6. (sampled mode) four streams in "m", whose limit's guard leaves each
 *      of their eight sockets a share of sk_rcvbuf no autotuning passes
 *      (bounded_limit_streams()): bounded too, no socket armed or sized,
 *      the samplers unlinked, and over a second the same programs but
 *      ingress run at most 200 times;
 *   4. then four connections in "s" (Limit=16M) whose receivers stall
 *      (their writers could queue 16 MiB): usage climbs to the guard, the charge that reaches
 *      it turns the cgroup near, and the sweep arms the eight sockets
 *      (sock_diag), whose peak (sock_diag every 10 ms) stays within
 *      1.05 x max as test_enforce_max's do.
 * Both modes (sampled mode's samplers follow a dormant cgroup's sockets),
 * on kernels from 6.11 (tcpbufd's only dormant cases); skipped before.
 */
#include "enforce_util.h"
#include "harness.h"
#include "progstats.h"
#include "skmem.h"

#include <bpf/bpf.h>
#include <dirent.h>
#include <linux/bpf.h>
#include <netinet/tcp.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include "tcpbuf_maps.h"

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* One bulk connection in @cg for about 2 s: the largest buffers its sockets
 * reach (sampled every 100 ms from 0.5 s on), and over the last second the
 * runs of enforce_sockops and the armed entries at the end. */
struct bulk {
	uint32_t snd_max, rcv_max;
	int64_t runs;
	struct armed a;
	char msg[256];
	int intact;
};

static void bulk_run(const char *cg, struct bulk *r)
{
	struct xload *l = xload_start(&(struct xload_opts){ .rx_cgroup = cg, .nconn = 1,
							    .mode = XL_READ });
	int64_t c0 = -1, c1 = -1;
	int stats;

	memset(r, 0, sizeof(*r));
	ASSERT_TRUE(l != NULL);
	stats = bpf_enable_stats(BPF_STATS_RUN_TIME);
	ASSERT_TRUE(stats >= 0);
	msleep(500);
	for (int i = 0; i < 15; i++) {
		struct bufs_summary s = {};

		if (i == 5)
			c0 = daemon_prog_run_cnt("enforce_sockops");
		if (!bufs_summary(cg, 0, &s)) {
			if (s.snd_max > r->snd_max)
				r->snd_max = s.snd_max;
			if (s.rcv_max > r->rcv_max)
				r->rcv_max = s.rcv_max;
		}
		msleep(100);
	}
	c1 = daemon_prog_run_cnt("enforce_sockops");
	close(stats);
	r->runs = c0 >= 0 && c1 >= 0 ? c1 - c0 : -1;
	r->a = armed_count(cg);
	ASSERT_OK(xload_quiesce(l));
	r->intact = xload_finish(l, 60000, r->msg, sizeof(r->msg)) == 0;
	xload_close(l);
}

/* The passes over every socket of the host (reconcile, settle, counts,
 * sweeps): once per interval per socket, whatever the RR connection does. */
static bool per_pass(const char *name)
{
	static const char *const passes[] = { "reconcile_tcp", "settle_tcp", "count_sock_char",
					      "enforce_sweep" };

	for (size_t i = 0; i < sizeof(passes) / sizeof(passes[0]); i++)
		if (!strncmp(name, passes[i], strlen(passes[i])))
			return true;
	return false;
}

/* The run_cnt of every program using the daemon's sock_charge map
 * (BPF_ENABLE_STATS while we look) but the passes, summed; -1 if not found. */
static int64_t tcpbufd_ns, ingress_runs;

static int64_t tcpbufd_runs(void)
{
	struct bpf_map_info mi = {};
	__u32 len = sizeof(mi), id = 0;
	int64_t sum = 0;
	int mfd = daemon_pinned_fd("sock_charge");

	if (mfd < 0 || bpf_obj_get_info_by_fd(mfd, &mi, &len)) {
		if (mfd >= 0)
			close(mfd);
		return -1;
	}
	close(mfd);
	while (!bpf_prog_get_next_id(id, &id)) {
		__u32 maps[64];
		struct bpf_prog_info pi = { .nr_map_ids = 64, .map_ids = (uintptr_t)maps };
		int fd = bpf_prog_get_fd_by_id(id);

		if (fd < 0)
			continue;
		len = sizeof(pi);
		if (!bpf_obj_get_info_by_fd(fd, &pi, &len))
			for (__u32 i = 0; i < pi.nr_map_ids && i < 64; i++)
				if (maps[i] == mi.id && !per_pass(pi.name)) {
					sum += pi.run_cnt;
					tcpbufd_ns += pi.run_time_ns;
					if (!strcmp(pi.name, "enforce_ingress"))
						ingress_runs += pi.run_cnt;
					if (getenv("NEAR_FREE_DEBUG"))
						test_log("%s: %llu runs", pi.name,
							 (unsigned long long)pi.run_cnt);
					break;
				}
		close(fd);
	}
	return sum;
}

/* rr_run() waits for ingress to rest at its cgroup (-1: it did not). */
static bool rr_rest;
static int rr_rest_waited = -1;

/* What the usage entry of @cg says in the middle of an RR run. */
static void rr_probe(const char *cg)
{
	struct cgroup_usage cu = {};
	uint64_t id = cg_id(cg);
	int ufd = daemon_pinned_fd("cgroup_usage");

	if (ufd >= 0 && !bpf_map_lookup_elem(ufd, &id, &cu))
		test_log("during TCP_RR: near %u, dormant %u (bit 1: bounded), %lld sockets, "
			 "usage %lld pages", cu.established.near, cu.established.dormant,
			 (long long)cu.established.sockets, (long long)cu.usage_pages);
	if (ufd >= 0)
		close(ufd);
	if (getenv("NEAR_FREE_DEBUG")) {
		char cmd[512];

		snprintf(cmd, sizeof(cmd), "ss -tmni cgroup %s >&2", cg_rel(cg));
		if (system(cmd))
			test_log("ss failed");
	}
}

/* One TCP_RR connection (1-byte request, 1-byte answer) with both ends in
 * @cg for @ms: transactions done, -1 on error. */
static int64_t rr_run(const char *cg, int ms, int64_t *before)
{
	char b0 = 0;
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t alen = sizeof(a);
	int p[2], g[2], lfd, cfd, sfd;
	int64_t n = -1;
	pid_t pid;

	if (pipe(p) || pipe(g))
		return -1;
	pid = fork();
	if (pid == 0) {
		int64_t done = 0;
		uint64_t end;
		char b = 'x';

		close(p[0]);
		close(g[1]);
		if (cg_enter(cg))
			_exit(1);
		lfd = socket(AF_INET, SOCK_STREAM, 0);
		if (lfd < 0 || bind(lfd, (void *)&a, sizeof(a)) || listen(lfd, 1) ||
		    getsockname(lfd, (void *)&a, &alen))
			_exit(1);
		cfd = socket(AF_INET, SOCK_STREAM, 0);
		if (cfd < 0 || connect(cfd, (void *)&a, sizeof(a)) ||
		    (sfd = accept(lfd, NULL, NULL)) < 0)
			_exit(1);
		if (fork() == 0) {	/* the server: answers until the client closes */
			close(cfd);
			while (read(sfd, &b, 1) == 1 && write(sfd, &b, 1) == 1)
				;
			_exit(0);
		}
		close(sfd);
		/* Warm-up on the same connection: the parent reads the
		 * counters once this byte arrives, and again after the count. */
		end = now_ms() + 300;
		while (now_ms() < end)
			if (write(cfd, &b, 1) != 1 || read(cfd, &b, 1) != 1)
				_exit(1);
		if (write(p[1], &b, 1) != 1 || read(g[0], &b, 1) != 1)
			_exit(1);
		end = now_ms() + ms;
		while (now_ms() < end) {
			for (int i = 0; i < 256; i++)
				if (write(cfd, &b, 1) != 1 || read(cfd, &b, 1) != 1)
					_exit(1);
			done += 256;
		}
		if (write(p[1], &done, sizeof(done)) != sizeof(done))
			_exit(1);
		close(cfd);
		while (wait(NULL) > 0)
			;
		_exit(0);
	}
	close(p[1]);
	if (pid > 0 && read(p[0], &b0, 1) == 1 && before) {
		int waited = 0;

		/* The daemon unlinks the samplers once it has read that the
		 * cgroup is bounded: the steady state is what is measured,
		 * the wait is told. */
		while (daemon_prog_run_cnt("send_length") >= 0 && waited < 3000) {
			msleep(10);
			waited += 10;
		}
		test_log("samplers unlinked %d ms after the warm-up", waited);
		if (rr_rest) {
			rr_rest_waited = ingress_rest_wait(cg, 1, 3000);
			test_log("ingress at rest %d ms after that", rr_rest_waited);
		}
		tcpbufd_ns = ingress_runs = 0;
		*before = tcpbufd_runs();
		tcpbufd_ns = -tcpbufd_ns;
		ingress_runs = -ingress_runs;
	}
	if (pid > 0 && write(g[1], &b0, 1) != 1)
		n = -1;
	if (pid > 0 && ms >= 1000) {
		msleep(ms / 2);
		rr_probe(cg);
	}
	if (pid < 0 || read(p[0], &n, sizeof(n)) != sizeof(n))
		n = -1;
	close(p[0]);
	close(g[0]);
	close(g[1]);
	if (pid > 0)
		waitpid(pid, NULL, 0);
	return n;
}

int main(void)
{
	struct bulk u, n;
	struct utsname un;
	int major = 0, minor = 0;
	int64_t peak, pressure;
	char *out = NULL, mode[16] = "";
	const char *cu, *cn, *cs;
	int64_t limit;

	test_init();
	enforce_ingress_rest = "yes";	/* its cases at rest run */
	if (uname(&un) || sscanf(un.release, "%d.%d", &major, &minor) != 2 ||
	    major < 6 || (major == 6 && minor < 11))
		SKIP("kernel %s: before 6.11 an iterator cannot give a socket its per-segment "
		     "callbacks back, so near cgroups are never dormant", un.release);
	enforce_config(1000);
	ASSERT_OK(daemon_start(""));
	ASSERT_OK(ctl(&out, "status --json"));
	json_string_field(out, "mode", mode, sizeof(mode));
	free(out);
	skmem_watch_sock_charge(offsetof(struct sock_charge, enforce.flags));
	/* 16 MiB, or where autotuning lets one stream's receiver come close
	 * to that threshold (tcp_rmem[2] above 4 MiB), four times tcp_rmem[2]:
	 * near from its first socket all the same (two sockets' reach is
	 * over twice tcp_rmem[2]), and the stream never near its guard. */
	limit = 4 * sysctl_field("/proc/sys/net/ipv4/tcp_rmem", 2);
	if (limit < 16 * MIB)
		limit = 16 * MIB;
	test_log("%s mode; the bulk cgroup's limit %lld MiB", mode, (long long)(limit / MIB));
	cu = cg_create("u");
	cn = cg_create("n");
	cs = cg_create("s");
	limits_write(cn, PAGES(limit), 0, 0, 0);
	limits_write(cs, PAGES(16 * MIB), 0, 0, 0);
	ASSERT_OK(daemon_reload_until(cn, PAGES(limit), 5000));
	ASSERT_OK(daemon_reload_until(cs, PAGES(16 * MIB), 5000));

	/* 1. Unlimited. */
	bulk_run(cu, &u);
	test_log("unlimited: sndbuf up to %u, rcvbuf up to %u; enforce_sockops ran %" PRId64
		 " times in 1 s; %d of %d entries armed; %s", u.snd_max, u.rcv_max, u.runs,
		 u.a.armed, u.a.entries, u.msg);
	EXPECT_TRUE(u.intact);

	/* 2. Under a limit it never reaches. */
	bulk_run(cn, &n);
	test_log("limited: sndbuf up to %u, rcvbuf up to %u; enforce_sockops ran %" PRId64
		 " times in 1 s; %d of %d entries armed, %d sized, %d followed; %s", n.snd_max,
		 n.rcv_max, n.runs, n.a.armed, n.a.entries, n.a.sized, n.a.followed, n.msg);
	EXPECT_TRUE(n.intact);
	EXPECT_GE(n.snd_max, u.snd_max);
	/* Receive autotuning follows how fast the reader keeps up, which
	 * varies from run to run (a factor of 3 here, unlimited): what shows
	 * it untouched is that tcpbufd never set a size (which locks it). */
	EXPECT_EQ(n.a.sized, 0);
	EXPECT_EQ(n.a.armed, 0);
	/* Sampled mode: the samplers follow them instead. */
	EXPECT_EQ(n.a.followed, strcmp(mode, "sampled") ? 0 : n.a.entries);
	EXPECT_GE(n.runs, 0);
	/* State callbacks, and the segments of a passing visit to the guard
	 * (the stream's peak can touch it); one per segment is thousands. */
	EXPECT_LE(n.runs, 200);

	/* 3. The case measured: under the threshold throughout. */
	peak = status_field(cn, "peak_pages");
	pressure = status_field(cn, "pressure_pages");
	test_log("limited cgroup: peak %" PRId64 " pages, pressure threshold %" PRId64, peak,
		 pressure);
	EXPECT_TRUE(peak >= 0 && pressure > 0 && peak < pressure);

	/* 5. One RR connection under 16 MiB (bounded_limit()): bounded, nothing
	 * runs for it. */
	if (!strcmp(mode, "sampled")) {
		const char *cr = cg_create("r");
		int stats;
		int64_t r0, r1, t;

		limits_write(cr, PAGES(bounded_limit()), 0, 0, 0);
		ASSERT_OK(daemon_reload_until(cr, PAGES(bounded_limit()), 5000));
		stats = bpf_enable_stats(BPF_STATS_RUN_TIME);
		ASSERT_TRUE(stats >= 0);
		r0 = -1;
		rr_rest = ingress_rest_possible();
		t = rr_run(cr, 1000, &r0);
		r1 = tcpbufd_runs();
		close(stats);
		test_log("TCP_RR under %ld MiB: %" PRId64 " transactions in 1 s, %" PRId64
			 " runs of tcpbufd's programs (%.3f per transaction, %.1f ns each)",
			 bounded_limit() / MIB, t, r1 - r0, t > 0 ? (double)(r1 - r0) / t : -1.0,
			 r1 > r0 ? (double)tcpbufd_ns / (r1 - r0) : 0.0);
		ASSERT_TRUE(t > 1000 && r0 >= 0 && r1 >= r0);
		test_log("of them enforce_ingress %" PRId64 " (%.3f per transaction)", ingress_runs,
			 t > 0 ? (double)ingress_runs / t : -1.0);
		EXPECT_LE((r1 - r0 - ingress_runs) * 50, t);
		EXPECT_LE(ingress_runs * 100, t * 205);
		/* At rest: no cgroup_skb dispatch at all. */
		if (rr_rest) {
			EXPECT_GE(rr_rest_waited, 0);
			EXPECT_LE(ingress_runs * 100, t);
		}
	}

	/* 6. Four streams under a limit whose guard leaves each of their
	 * sockets a share no receiver passes without SO_RCVBUFFORCE
	 * (bounded_limit_streams()): bounded, so no size set and nothing
	 * follows them but ingress's early exit. */
	if (!strcmp(mode, "sampled")) {
		const char *cm = cg_create("m");
		long lm = bounded_limit_streams(4);
		struct xload *l;
		struct armed a;
		int64_t r0, r1;
		int stats, waited = 0;

		limits_write(cm, PAGES(lm), 0, 0, 0);
		ASSERT_OK(daemon_reload_until(cm, PAGES(lm), 5000));
		l = xload_start(&(struct xload_opts){ .rx_cgroup = cm, .nconn = 4,
						      .mode = XL_READ });
		ASSERT_TRUE(l != NULL);
		stats = bpf_enable_stats(BPF_STATS_RUN_TIME);
		ASSERT_TRUE(stats >= 0);
		msleep(500);
		while (daemon_prog_run_cnt("send_length") >= 0 && waited < 3000) {
			msleep(10);
			waited += 10;
		}
		tcpbufd_ns = ingress_runs = 0;
		r0 = tcpbufd_runs();
		ingress_runs = -ingress_runs;
		msleep(1000);
		r1 = tcpbufd_runs();
		close(stats);
		a = armed_count(cm);
		test_log("4 streams under %ld MiB: samplers unlinked after %d ms; %d of %d entries "
			 "armed, %d sized, %d followed; in 1 s %" PRId64 " runs of tcpbufd's programs, "
			 "%" PRId64 " of them enforce_ingress", lm / MIB, waited, a.armed, a.entries,
			 a.sized, a.followed, r1 - r0, ingress_runs);
		EXPECT_EQ(a.entries, 8);
		EXPECT_EQ(a.armed, 0);
		EXPECT_EQ(a.sized, 0);
		EXPECT_LT(waited, 3000);
		ASSERT_TRUE(r0 >= 0 && r1 >= r0);
		EXPECT_LE(r1 - r0 - ingress_runs, 200);
		ASSERT_OK(xload_quiesce(l));
		EXPECT_OK(xload_finish(l, 60000, n.msg, sizeof(n.msg)));
		xload_close(l);
	}

	/* 4. Out of dormancy when usage climbs (16 MiB). */
	{
		struct xload *l = xload_start(&(struct xload_opts){
			.rx_cgroup = cs, .nconn = 4, .mode = XL_STALL });
		struct peak_sampler *ps;
		struct armed a;
		double ratio;

		ASSERT_TRUE(l != NULL);
		ps = peak_start(cs, 10);
		ASSERT_TRUE(ps != NULL);
		msleep(3000);
		peak_stop(ps);
		a = armed_count(cs);
		ratio = (double)peak_pages(ps) / PAGES(16 * MIB);
		test_log("4 stalled connections: %d of %d entries armed, state %s, peak %" PRIu64
			 " pages by sock_diag (%.3f x max), largest gap %.1f ms", a.armed,
			 a.entries, status_state(cs), peak_pages(ps), ratio, peak_max_gap_ms(ps));
		EXPECT_EQ(a.entries, 8);
		EXPECT_EQ(a.armed, 8);
		EXPECT_LE_F(ratio, 1.05);
		peak_free(ps);
		ASSERT_OK(xload_set_mode(l, XL_READ, 0));
		ASSERT_OK(xload_quiesce(l));
		EXPECT_OK(xload_finish(l, 60000, n.msg, sizeof(n.msg)));
		test_log("stalled connections drained: %s", n.msg);
		xload_close(l);
	}

	close(skmem_storage_fd);
	ASSERT_EQ(daemon_stop(), 0);
	return test_done();
}
