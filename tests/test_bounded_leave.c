// SPDX-License-Identifier: GPL-2.0
/*
 * A bounded cgroup (sampled mode, tcpbuf_bounded_share() in include/tcpbuf_policy.h:
 * dormant, and its sockets' buffers cannot reach its guard, so nothing
 * follows them but ingress's early exit) leaves bounded at the first segment
 * its sockets' grown buffers could use, and still holds max. 16 MiB (or
 * bounded_limit(): four writers' ceilings), one connection (both ends in the
 * cgroup) each time, made while bounded (cgroup_sockets.dormant == 3 once it
 * carried a transaction):
 *   1. the reader's rcvbuf grows by autotuning past the bounded size (a bulk
 *      transfer read as it comes, up to 10 s), under the smallest limit that
 *      leaves the pair bounded (its least share): no longer bounded;
 *   2. SO_RCVBUF of the bounded size on the reader, then one byte: no longer
 *      bounded if the kernel gave it more than that (its share of the guard,
 *      tcpbuf_bounded_share()), still bounded where rmem_max keeps it within
 *      (defaults);
 *   3. SO_SNDBUF of wmem_max on the writer, then one transaction: still
 *      bounded (the writers' ceiling covers what SO_SNDBUF gives, twice
 *      wmem_max, as well as autotuning's tcp_wmem[2]); SO_SNDBUFFORCE past
 *      that ceiling, then one transaction: no longer bounded;
 *   4. SO_RCVBUFFORCE of twice max on the reader (whose window scale allows
 *      a window that large: a guest's tcp_rmem[2] would not), which then
 *      stalls while the writer writes for 3 s (up to 10 s, until it wrote
 *      1.5 x max): the cgroup's peak by sock_diag every 10 ms stays within
 *      1.05 x max (what the sockets held while bounded is charged as they
 *      leave it, not when the samplers come), and every byte arrives once
 *      it reads again.
 *   6. four connections in a cgroup whose guard gives each of their eight
 *      sockets a share of at least the bounded size: bounded as each is
 *      counted; SO_RCVBUFFORCE on one reader, which stalls: as in 4.
 *   7. where ingress may rest (src/enforce_rest.c), 1, 2, SO_RCVLOWAT and 5
 *      with each pair left until its ingress link went: out of bounded as
 *      before, ingress linked again within 1 s of the leave, the peak as in
 *      4 (2: still bounded and at rest where rmem_max keeps it within;
 *      SO_RCVLOWAT: likewise where the rest's lock holds the buffer);
 *   8. there, SO_RCVBUFFORCE while the daemon is stopped: out of bounded by
 *      BPF alone, ingress still unlinked; after SIGCONT linked within 1 s and
 *      one warning that the limit was not enforced meanwhile; a clean stop
 *      of the daemon at rest leaves ingress linked.
 * On kernels from 6.11 (dormancy); skipped in exact mode (nothing is
 * followed there).
 */
#include "enforce_util.h"
#include "harness.h"
#include "skmem.h"

#include <arpa/inet.h>
#include <bpf/bpf.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "tcpbuf_maps.h"
#include "tcpbuf_policy.h"

static const char *cg;
static int client_sndbuf;	/* SO_SNDBUF set on a new client before it connects */
static bool at_rest;		/* case 7: each pair waits for ingress to rest */

/* Debugging aid: the verdict bits of the cgroup's sockets (sock_diag). */
static int verdict_cb(const struct skmem_sock *k, void *arg)
{
	(void)arg;
	if (k->cgid == cg_id(cg) && k->has_storage)
		test_log("  socket %u->%u: rcvbuf %u sndbuf %u, verdict bits %#x", k->sport, k->dport,
			 k->rcvbuf, k->sndbuf, k->storage_u32 >> 24);
	return 0;
}

static void verdicts(void)
{
	if (getenv("BOUNDED_DEBUG"))
		skmem_foreach(verdict_cb, NULL);
}

static struct cgroup_usage usage_entry(void)
{
	struct cgroup_usage u = {};
	uint64_t id = cg_id(cg);
	int fd = daemon_pinned_fd("cgroup_usage");

	if (fd >= 0 && bpf_map_lookup_elem(fd, &id, &u))
		memset(&u, 0xff, sizeof(u));
	if (fd >= 0)
		close(fd);
	return u;
}

static uint32_t dormant_of(void)
{
	return usage_entry().established.dormant;
}

/* A connection with both ends created in the cgroup: *@c the client, *@s
 * the accepted server end. @wide: the server end's window scale as for a
 * receive buffer of @wide bytes (its listener's, forced), its buffer then
 * back to the kernel's default size (locked), so that it can later
 * advertise more than tcp_rmem[2]'s scale allows. */
static void pair_make(int *c, int *s, int wide)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t alen = sizeof(a);
	int l, v = (int)sysctl_field("/proc/sys/net/ipv4/tcp_rmem", 1) / 2;

	ASSERT_OK(cg_enter(cg));
	l = socket(AF_INET, SOCK_STREAM, 0);
	ASSERT_TRUE(l >= 0);
	if (wide)
		ASSERT_OK(setsockopt(l, SOL_SOCKET, SO_RCVBUFFORCE, &wide, sizeof(wide)));
	ASSERT_OK(bind(l, (void *)&a, sizeof(a)));
	ASSERT_OK(listen(l, 1));
	ASSERT_OK(getsockname(l, (void *)&a, &alen));
	*c = socket(AF_INET, SOCK_STREAM, 0);
	ASSERT_TRUE(*c >= 0);
	if (client_sndbuf)
		ASSERT_OK(setsockopt(*c, SOL_SOCKET, SO_SNDBUF, &client_sndbuf,
				     sizeof(client_sndbuf)));
	ASSERT_OK(connect(*c, (void *)&a, sizeof(a)));
	*s = accept(l, NULL, NULL);
	ASSERT_TRUE(*s >= 0);
	if (wide)
		ASSERT_OK(setsockopt(*s, SOL_SOCKET, SO_RCVBUF, &v, sizeof(v)));
	close(l);
	ASSERT_OK(cg_leave());
}

static void rr(int c, int s, int n)
{
	char b = 'x';

	for (int i = 0; i < n; i++) {
		ASSERT_EQ(write(c, &b, 1), 1);
		ASSERT_EQ(read(s, &b, 1), 1);
		ASSERT_EQ(write(s, &b, 1), 1);
		ASSERT_EQ(read(c, &b, 1), 1);
	}
}

/* A fresh pair after a few transactions: bounded or not (@bounded), as
 * the cgroup says. */
static void pair_counted(int *c, int *s, const char *what, int wide, bool bounded)
{
	uint32_t d;

	pair_make(c, s, wide);
	rr(*c, *s, 100);
	msleep(100);
	d = dormant_of();
	test_log("%s: a new connection, dormant %u (3: bounded), expected %s", what, d,
		 bounded ? "bounded" : "not bounded");
	verdicts();
	if (bounded)
		EXPECT_EQ(d, 3);
	else
		EXPECT_TRUE(!(d & TCPBUF_DORMANT_BOUNDED));
	if (at_rest && bounded) {
		int waited = ingress_rest_wait(cg, 1, 5000);

		test_log("%s: ingress at rest after %d ms", what, waited);
		EXPECT_GE(waited, 0);
	}
}

static void pair_bounded(int *c, int *s, const char *what, int wide)
{
	pair_counted(c, s, what, wide, true);
}

/* Whether a connection's two sockets whose writers reach @writer bytes
 * leave a cgroup of Limit=@limit bounded (tcpbuf_bounded_share()). */
static bool bounded_for(long limit, long writer)
{
	return bounded_share_for(limit, 2, writer) > 0;
}

/* The sk_rcvbuf each socket of one connection may have while bounded. */
static long pair_share(long limit)
{
	return bounded_share_for(limit, 2, narrow_writer_ceiling());
}

static void pair_close(int c, int s)
{
	close(c);
	close(s);
	msleep(300);	/* counted out: the next pair starts from none */
}

/* Bounded afterwards (@bounded) or not. */
static void expect_bounded(const char *what, bool bounded)
{
	uint32_t d;

	msleep(50);
	d = dormant_of();
	test_log("%s: dormant %u afterwards (3: bounded, 1: followed, 0: near or far), "
		 "expected %s", what, d, bounded ? "bounded" : "not bounded");
	verdicts();
	if (bounded)
		EXPECT_EQ(d, 3);
	else
		EXPECT_TRUE(!(d & TCPBUF_DORMANT_BOUNDED));
	if (at_rest && !bounded) {
		int waited = ingress_rest_wait(cg, 0, 1000);

		test_log("%s: ingress linked again %d ms after the check", what, waited);
		EXPECT_GE(waited, 0);
	} else if (at_rest) {
		EXPECT_TRUE(ingress_resting(cg));
	}
}

/* The kernel's sk_rcvbuf (or sk_sndbuf) of @fd. */
static int buf_of(int fd, int opt)
{
	int v = 0;
	socklen_t l = sizeof(v);

	getsockopt(fd, SOL_SOCKET, opt, &v, &l);
	return v;
}

/* The reader of @c -> @s stalls while the writer writes for 3 s (up to 10 s,
 * until it wrote 1.5 x @limit): the cgroup's peak by sock_diag every 10 ms
 * stays within 1.05 x max, it is no longer bounded, and every byte arrives
 * once it reads again. */
static void stall_peak(int c, int s, long limit, const char *what)
{
	static char buf[1 << 16];
	struct peak_sampler *ps;
	uint64_t sent = 0, got = 0;
	double t0 = now_sec(), ratio;
	ssize_t n;

	fcntl(c, F_SETFL, O_NONBLOCK);
	ps = peak_start(cg, 10);
	ASSERT_TRUE(ps != NULL);
	while (now_sec() - t0 < 3 || (sent < (uint64_t)limit * 3 / 2 && now_sec() - t0 < 10)) {
		n = write(c, buf, sizeof(buf));
		if (n > 0)
			sent += n;
		else
			msleep(1);
	}
	peak_stop(ps);
	ratio = (double)peak_pages(ps) / PAGES(limit);
	test_log("%s, stalled: %llu bytes written, peak %llu pages by sock_diag (%.3f x max), "
		 "state %s, dormant %u", what, (unsigned long long)sent,
		 (unsigned long long)peak_pages(ps), ratio, status_state(cg), dormant_of());
	EXPECT_LE_F(ratio, 1.05);
	EXPECT_TRUE(!(dormant_of() & TCPBUF_DORMANT_BOUNDED));
	if (at_rest)
		EXPECT_FALSE(ingress_resting(cg));
	peak_free(ps);
	shutdown(c, SHUT_WR);
	fcntl(c, F_SETFL, 0);
	while ((n = read(s, buf, sizeof(buf))) > 0)
		got += n;
	test_log("%s: drained %llu of %llu bytes", what, (unsigned long long)got,
		 (unsigned long long)sent);
	EXPECT_EQ(got, sent);
}

/* 1. Autotuning: a writer process streams while the reader reads as data
 * comes, until its sk_rcvbuf passes the bounded size (a loaded machine
 * autotunes later than a quiet one) and for 200 ms more: bounded is left at
 * a segment the grown buffer could hold (at rest: where autotuning grows
 * it). */
static void autotuning(long limit)
{
	static char buf[1 << 16];
	const char *g = cg;
	int c, s;
	long la = PAGES(8 * MIB), bound;

	/* The smallest limit that leaves the pair bounded, so that its
	 * share is the least one, which autotuning passes soonest. */
	while (la < PAGES(limit) && pair_share(la * 4096) <= 0)
		la++;
	cg = cg_create(at_rest ? "ar" : "a");
	limits_write(cg, la, 0, 0, 0);
	ASSERT_OK(daemon_reload_until(cg, la, 5000));
	bound = pair_share(la * 4096);
	test_log("autotuning: limit %ld pages, a socket's share %ld bytes", la, bound);
	pair_bounded(&c, &s, "autotuning", 0);
	double t0 = now_sec(), grown = 0;
	pid_t w = fork();

	ASSERT_TRUE(w >= 0);
	if (!w) {
		while (now_sec() - t0 < 15 && write(c, buf, sizeof(buf)) > 0)
			;
		_exit(0);
	}
	fcntl(s, F_SETFL, O_NONBLOCK);
	while (now_sec() - t0 < 10 && (!grown || now_sec() - grown < 0.2)) {
		/* Reads in bursts, each a full window within one round
		 * trip: autotuning then doubles the buffer each time,
		 * however the two processes share the CPUs. */
		usleep(2000);
		while (read(s, buf, sizeof(buf)) > 0)
			;
		if (!grown && buf_of(s, SO_RCVBUF) > bound)
			grown = now_sec();
	}
	test_log("autotuning: the reader's sk_rcvbuf %d after %.1f s of bulk (bounded size %ld)",
		 buf_of(s, SO_RCVBUF), now_sec() - t0, bound);
	EXPECT_GT(buf_of(s, SO_RCVBUF), bound);
	expect_bounded("autotuning", false);
	kill(w, SIGKILL);
	waitpid(w, NULL, 0);
	pair_close(c, s);
	cg = g;
}

int main(void)
{
	struct utsname un;
	int major = 0, minor = 0, c, s, v;
	long limit;
	bool wide_bounded;

	test_init();
	enforce_ingress_rest = "yes";	/* its cases at rest run */
	if (uname(&un) || sscanf(un.release, "%d.%d", &major, &minor) != 2 ||
	    major < 6 || (major == 6 && minor < 11))
		SKIP("kernel %s: no dormancy before 6.11", un.release);
	enforce_config(1000);
	ASSERT_OK(daemon_start(""));
	if (strcmp(daemon_mode(), "sampled"))
		SKIP("%s mode: bounded is sampled mode's", daemon_mode());
	skmem_watch_sock_charge(offsetof(struct sock_charge, verdict) + 4);
	cg = cg_create("g");
	limit = bounded_limit();
	test_log("limit %ld MiB (writers' ceiling %ld KiB)", limit / MIB, writer_ceiling() / 1024);
	limits_write(cg, PAGES(limit), 0, 0, 0);
	ASSERT_OK(daemon_reload_until(cg, PAGES(limit), 5000));

	/* 1. Autotuning. */
	autotuning(limit);

	/* 2. SO_RCVBUF: past the bounded size only if rmem_max lets it. */
	pair_bounded(&c, &s, "SO_RCVBUF", 0);
	v = (int)pair_share(limit);	/* doubled by the kernel, if rmem_max lets it */
	ASSERT_OK(setsockopt(s, SOL_SOCKET, SO_RCVBUF, &v, sizeof(v)));
	rr(c, s, 1);
	{
		long bound = pair_share(limit);

		test_log("SO_RCVBUF: sk_rcvbuf %d, bounded size %ld", buf_of(s, SO_RCVBUF), bound);
		expect_bounded("SO_RCVBUF", buf_of(s, SO_RCVBUF) <= bound);
	}
	pair_close(c, s);

	/* 3. SO_SNDBUF of wmem_max on the writer: where that passes tcp_wmem[2],
	 * its cgroup's guard keeps the wide writers' ceiling from the call on,
	 * before any segment, and it stays bounded only if that still fits;
	 * SO_SNDBUFFORCE past the wide ceiling: out; held at max, stalled. */
	wide_bounded = bounded_for(limit, writer_ceiling());
	pair_bounded(&c, &s, "SO_SNDBUF", 0);
	v = (int)sysctl_field("/proc/sys/net/core/wmem_max", 0);
	ASSERT_OK(setsockopt(c, SOL_SOCKET, SO_SNDBUF, &v, sizeof(v)));
	test_log("SO_SNDBUF: sk_sndbuf %d; writers' ceiling %ld, %ld wide (bounded with it: %s)",
		 buf_of(c, SO_SNDBUF), narrow_writer_ceiling(), writer_ceiling(),
		 wide_bounded ? "yes" : "no");
	expect_bounded("SO_SNDBUF, before a segment", wide_bounded);
	rr(c, s, 1);
	expect_bounded("SO_SNDBUF", wide_bounded);
	v = (int)(writer_ceiling() / 2 + 4096);	/* doubled by the kernel: past the ceiling */
	ASSERT_OK(setsockopt(c, SOL_SOCKET, SO_SNDBUFFORCE, &v, sizeof(v)));
	rr(c, s, 1);
	expect_bounded("SO_SNDBUFFORCE", false);
	stall_peak(c, s, limit, "SO_SNDBUFFORCE");
	pair_close(c, s);

	/* 3b. SO_SNDBUF set before connecting: counted as wide. */
	client_sndbuf = (int)sysctl_field("/proc/sys/net/core/wmem_max", 0);
	pair_counted(&c, &s, "SO_SNDBUF before connect", 0, wide_bounded);
	client_sndbuf = 0;
	pair_close(c, s);

	/* 4. Leaving with full queues, the daemon stopped: usage has them at once. */
	pair_bounded(&c, &s, "stopped daemon", 0);
	{
		static char buf[1 << 16];
		struct skmem_total k = {};
		int64_t usage;

		fcntl(c, F_SETFL, O_NONBLOCK);
		while (write(c, buf, sizeof(buf)) > 0)
			;
		msleep(100);
		while (write(c, buf, sizeof(buf)) > 0)
			;
		ASSERT_OK(skmem_cgroup(cg_id(cg), &k));
		test_log("stopped daemon: queues full while bounded (dormant %u): %llu pages by "
			 "sock_diag, usage %lld", dormant_of(), (unsigned long long)k.pages,
			 (long long)usage_entry().usage_pages);
		ASSERT_OK(daemon_signal(SIGSTOP));
		v = (int)pair_share(limit);	/* doubled: past the share */
		ASSERT_OK(setsockopt(s, SOL_SOCKET, SO_RCVBUFFORCE, &v, sizeof(v)));
		/* A read opens the window: the writer's next segment finds the
		 * reader past the bound, its ACK the writer out of bounded. */
		ASSERT_TRUE(read(s, buf, sizeof(buf)) > 0);
		msleep(200);
		ASSERT_OK(skmem_cgroup(cg_id(cg), &k));
		usage = usage_entry().usage_pages;
		test_log("stopped daemon: after the leave (dormant %u): %llu pages by sock_diag, "
			 "usage %lld", dormant_of(), (unsigned long long)k.pages, (long long)usage);
		EXPECT_TRUE(!(dormant_of() & TCPBUF_DORMANT_BOUNDED));
		/* Within a follow step (TCPBUF_FOLLOW_STEP_PAGES) per socket. */
		EXPECT_GE(usage + 2 * TCPBUF_FOLLOW_STEP_PAGES, (int64_t)k.pages);
		ASSERT_OK(daemon_signal(SIGCONT));
		fcntl(c, F_SETFL, 0);
	}
	pair_close(c, s);

	/* 5. A forced 32 MiB receive buffer, then the reader stalls. */
	pair_bounded(&c, &s, "SO_RCVBUFFORCE", (int)limit);
	v = (int)limit;	/* doubled by the kernel: twice max */
	ASSERT_OK(setsockopt(s, SOL_SOCKET, SO_RCVBUFFORCE, &v, sizeof(v)));
	stall_peak(c, s, limit, "SO_RCVBUFFORCE");
	pair_close(c, s);

	/* 6. Four connections bounded together, each socket within its share
	 * of the guard; one forced past it stalls. */
	{
		long lm = 16 * MIB;
		int c4[4], s4[4];

		while (bounded_share_for(lm, 8, narrow_writer_ceiling()) <= 0 && lm < (1L << 36))
			lm *= 2;
		cg = cg_create("m");
		limits_write(cg, PAGES(lm), 0, 0, 0);
		ASSERT_OK(daemon_reload_until(cg, PAGES(lm), 5000));
		test_log("four connections: limit %ld MiB, each socket's share %ld bytes", lm / MIB,
			 bounded_share_for(lm, 8, narrow_writer_ceiling()));
		for (int i = 0; i < 4; i++)
			pair_bounded(&c4[i], &s4[i], "four connections", i == 3 ? (int)lm : 0);
		v = (int)lm;	/* doubled by the kernel: twice max */
		ASSERT_OK(setsockopt(s4[3], SOL_SOCKET, SO_RCVBUFFORCE, &v, sizeof(v)));
		stall_peak(c4[3], s4[3], lm, "four connections, SO_RCVBUFFORCE");
		for (int i = 0; i < 4; i++) {
			close(c4[i]);
			close(s4[i]);
		}
	}

	/* 7. Where ingress rests (src/enforce_rest.c): 1 and 5 again, each pair
	 * made and left until its ingress link went; the leave is seen where the
	 * buffer grows and ingress is linked again before max is reached. */
	if (ingress_rest_possible()) {
		cg = cg_create("r");
		limits_write(cg, PAGES(limit), 0, 0, 0);
		ASSERT_OK(daemon_reload_until(cg, PAGES(limit), 5000));
		at_rest = true;
		autotuning(limit);
		pair_bounded(&c, &s, "at rest, SO_RCVBUF", 0);
		v = (int)pair_share(limit);	/* doubled by the kernel, if rmem_max lets it */
		ASSERT_OK(setsockopt(s, SOL_SOCKET, SO_RCVBUF, &v, sizeof(v)));
		rr(c, s, 1);
		expect_bounded("at rest, SO_RCVBUF", buf_of(s, SO_RCVBUF) <= pair_share(limit));
		pair_close(c, s);
		/* SO_RCVLOWAT: tcp_set_rcvlowat() raises an unlocked
		 * socket's sk_rcvbuf to hold that much, up to about
		 * tcp_rmem[2]. */
		pair_bounded(&c, &s, "at rest, SO_RCVLOWAT", 0);
		v = (int)limit;
		ASSERT_OK(setsockopt(s, SOL_SOCKET, SO_RCVLOWAT, &v, sizeof(v)));
		test_log("at rest, SO_RCVLOWAT: sk_rcvbuf %d, bounded size %ld", buf_of(s, SO_RCVBUF),
			 pair_share(limit));
		expect_bounded("at rest, SO_RCVLOWAT", buf_of(s, SO_RCVBUF) <= pair_share(limit));
		if (buf_of(s, SO_RCVBUF) > pair_share(limit))
			stall_peak(c, s, limit, "at rest, SO_RCVLOWAT");
		pair_close(c, s);
		pair_bounded(&c, &s, "at rest, SO_RCVBUFFORCE", (int)limit);
		v = (int)limit;
		ASSERT_OK(setsockopt(s, SOL_SOCKET, SO_RCVBUFFORCE, &v, sizeof(v)));
		expect_bounded("at rest, SO_RCVBUFFORCE", false);
		stall_peak(c, s, limit, "at rest, SO_RCVBUFFORCE");
		pair_close(c, s);

		/* 8. At rest, the daemon stopped: the leave is BPF's alone
		 * (bounded left, the socket charged), nothing links ingress
		 * until the daemon runs again, and then it says the limit was
		 * not enforced meanwhile. A clean stop links ingress first. */
		pair_bounded(&c, &s, "at rest, stopped daemon", 0);
		ASSERT_OK(daemon_signal(SIGSTOP));
		v = (int)pair_share(limit);	/* doubled: past the share */
		ASSERT_OK(setsockopt(s, SOL_SOCKET, SO_RCVBUFFORCE, &v, sizeof(v)));
		EXPECT_TRUE(!(dormant_of() & TCPBUF_DORMANT_BOUNDED));
		EXPECT_TRUE(ingress_resting(cg));
		msleep(1200);
		{
			int said = daemon_log_count("was not enforced meanwhile"), waited;

			ASSERT_OK(daemon_signal(SIGCONT));
			waited = ingress_rest_wait(cg, 0, 1000);
			test_log("at rest, stopped daemon: ingress linked %d ms after SIGCONT", waited);
			EXPECT_GE(waited, 0);
			EXPECT_EQ(daemon_log_count("was not enforced meanwhile"), said + 1);
		}
		pair_close(c, s);
		pair_bounded(&c, &s, "at rest, clean stop", 0);
		ASSERT_EQ(daemon_stop(), 0);
		EXPECT_FALSE(ingress_resting(cg));
		pair_close(c, s);
		at_rest = false;
		return test_done();
	}
	test_log("7, 8: ingress never rests here (no tcp_rcvbuf_grow tracepoint)");
	ASSERT_EQ(daemon_stop(), 0);
	return test_done();
}
