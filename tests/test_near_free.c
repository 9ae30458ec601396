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
#include "tcpbuf_maps.h"

/* run_cnt of the pinned program named @name (a link under links/), or -1. */
static int64_t run_cnt(const char *name)
{
	char dir[4096], path[8192];
	struct dirent *d;
	int64_t cnt = -1;
	DIR *dp;

	snprintf(dir, sizeof(dir), "%s/links", daemon_pin_path());
	dp = opendir(dir);
	if (!dp)
		return -1;
	while (cnt < 0 && (d = readdir(dp))) {
		struct bpf_link_info li = {};
		struct bpf_prog_info pi = {};
		__u32 len = sizeof(li);
		int fd, pfd;

		if (d->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, d->d_name);
		fd = bpf_obj_get(path);
		if (fd < 0)
			continue;
		if (!bpf_obj_get_info_by_fd(fd, &li, &len) &&
		    (pfd = bpf_prog_get_fd_by_id(li.prog_id)) >= 0) {
			len = sizeof(pi);
			if (!bpf_obj_get_info_by_fd(pfd, &pi, &len) && !strcmp(pi.name, name))
				cnt = pi.run_cnt;
			close(pfd);
		}
		close(fd);
	}
	closedir(dp);
	return cnt;
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
			c0 = run_cnt("enforce_sockops");
		if (!bufs_summary(cg, 0, &s)) {
			if (s.snd_max > r->snd_max)
				r->snd_max = s.snd_max;
			if (s.rcv_max > r->rcv_max)
				r->rcv_max = s.rcv_max;
		}
		msleep(100);
	}
	c1 = run_cnt("enforce_sockops");
	close(stats);
	r->runs = c0 >= 0 && c1 >= 0 ? c1 - c0 : -1;
	r->a = armed_count(cg);
	ASSERT_OK(xload_quiesce(l));
	r->intact = xload_finish(l, 60000, r->msg, sizeof(r->msg)) == 0;
	xload_close(l);
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
		EXPECT_LE(ratio, 1.05);
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
