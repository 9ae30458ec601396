// SPDX-License-Identifier: GPL-2.0
/*
 * bench/enforce.c: how well a limit holds, tcpbufd against the kernel's own
 * cgroup v1 memory.kmem.tcp limit, under the same loads measured the same
 * way. Built and run by bench/enforce (see there for options).
 *
 * Loads (N connections over loopback, default 64, limit default 16 MiB;
 * -n 64,256,1024 runs each load at each count, all systems interleaved):
 *   stalled  both ends in the cgroup, receivers never read
 *   warm     both ends in the cgroup, receivers read for a second (buffers
 *            autotune to megabytes), then stop
 *   rxonly   only the receiving ends in the cgroup (writers elsewhere),
 *            receivers read for a second, then stop
 *   streams  iperf3 -P STREAMS (default 32) for STREAM_S seconds (default
 *            8), client and server in the cgroup: throughput against the
 *            same run with no limit (paired by round), and the peaks
 * For each, both systems:
 *   tcpbufd   a v2 cgroup with Limit=<limit> (max = limit, pressure 3/4,
 *             min 1/2) through a drop-in, in the daemon's configured mode
 *   kmem.tcp  a v1 memory cgroup with memory.kmem.tcp.limit_in_bytes =
 *             <limit> (and an unlimited v2 cgroup, for sock_diag)
 * Measured per run:
 *   peak/max  sock_diag every 10 ms (streams: 100 ms) over the cgroup's
 *             sockets (the same oracle for both), and the system's own peak
 *             counter (the daemon's peak_pages; kmem.tcp.max_usage_in_bytes)
 *   refused   failcnt (tcpbufd: segments refused at ingress; kmem.tcp:
 *             its failcnt)
 *   reaction  tcpbufd only: from the charge that crossed a threshold (BPF
 *             clock) to caps applied on every existing socket (end of the
 *             sweep), as the daemon logs it for each state change
 *   drain     from "receivers read again" to every byte received, checked
 *             against the pattern
 *   floor     at the end of the stall, from sock_diag: bytes per connection,
 *             and the median / largest sk_wmem_queued of the sockets that
 *             queue data and rmem_alloc of those that hold received data
 * Each load starts a second after one idle connection in its cgroup
 * (--cold: into the brand-new cgroup at once).
 * Rounds alternate the order of the two systems.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "enforce_util.h"
#include "harness.h"
#include "skmem.h"

#define V1_ROOT "/sys/fs/cgroup/memory"

#define MAX_COUNTS 8
static int counts[MAX_COUNTS] = { 64 }, ncounts = 1;
static int nconn = 64, rounds = 3, warm_ms = 1000, stall_ms = 3000;
static int64_t limit_pages = 4096;
static int do_v1 = 1, do_tcpbufd = 1, cold;
static unsigned loads_wanted = ~0u;	/* bit per enum load (-L) */

enum load { STALLED, WARM, RXONLY, NLOADS, STREAMS = NLOADS };
static const char *const load_names[] = { "stalled", "warm", "rxonly", "streams" };
static int nstreams = 32, stream_s = 8;
enum sys { TCPBUFD, KMEM, NSYS };

struct result {
	double peak_oracle, peak_own;	/* / max */
	double refused;
	double drain_s;
	int intact;
	double *reaction;		/* ms, tcpbufd */
	size_t n_reaction;
	double per_conn, wq_med, wq_max, rm_med, rm_max;	/* bytes, end of the stall */
	double conn_min, conn_med, conn_max;	/* bytes per connection, end of the stall */
	size_t samples;			/* sock_diag samples taken (0: no oracle) */
	double gap_ms;			/* the largest gap between them */
};

static struct result results[MAX_COUNTS][NLOADS][NSYS][16];

/* The streams load: per system and round, and with no limit (NSYS). */
struct stream_result {
	double bps, peak_oracle, peak_own;
};
static struct stream_result stream_results[NSYS + 1][16];

/* ------------------------------------------------------------ v1 memcg */

static FILE *v1_open(const char *dir, const char *file, const char *mode)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	return fopen(path, mode);
}

static int64_t v1_read(const char *dir, const char *file)
{
	FILE *f = v1_open(dir, file, "re");
	long long v = -1;

	if (!f)
		return -1;
	if (fscanf(f, "%lld", &v) != 1)
		v = -1;
	fclose(f);
	return v;
}

static int v1_write(const char *dir, const char *file, const char *val)
{
	FILE *f = v1_open(dir, file, "we");

	if (!f)
		return -1;
	fputs(val, f);
	return fclose(f) ? -1 : 0;
}

struct v1_sampler {
	pthread_t thread;
	const char *dir;
	volatile int stop;
	int64_t peak;
};

static void *v1_sample(void *arg)
{
	struct v1_sampler *s = arg;
	struct sched_param sp = { .sched_priority = 10 };

	pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp);
	while (!s->stop) {
		int64_t v = v1_read(s->dir, "memory.kmem.tcp.usage_in_bytes");

		if (v > s->peak)
			s->peak = v;
		msleep(10);
	}
	return NULL;
}

static void v1_remove(void *arg)
{
	const char *dir = arg;

	for (int i = 0; i < 50 && rmdir(dir) && errno == EBUSY; i++)
		msleep(100);
}

/* A v1 memory cgroup for run @name, limited to limit_pages of kmem.tcp,
 * removed at cleanup, its usage sampled by @s from now on; its path in @dir. */
static void v1_start(struct v1_sampler *s, char *dir, size_t len, const char *name)
{
	char val[32];

	snprintf(dir, len, V1_ROOT "/tcpbuf-bench-%d-%s", (int)getpid(), name);
	if (mkdir(dir, 0755) && errno != EEXIST) {
		fprintf(stderr, "bench: %s: %s\n", dir, strerror(errno));
		test_abort();
	}
	test_defer(v1_remove, strdup(dir));
	snprintf(val, sizeof(val), "%" PRId64, limit_pages * 4096);
	/* Accounting starts only once a limit is written. */
	if (v1_write(dir, "memory.kmem.tcp.limit_in_bytes", val)) {
		fprintf(stderr, "bench: cannot set the kmem.tcp limit: %s\n", strerror(errno));
		test_abort();
	}
	s->dir = dir;
	pthread_create(&s->thread, NULL, v1_sample, s);
}

/* Stop @s: kmem.tcp's own peak (or the sampled one, if higher) / max. */
static double v1_stop(struct v1_sampler *s)
{
	int64_t max_usage;

	s->stop = 1;
	pthread_join(s->thread, NULL);
	max_usage = v1_read(s->dir, "memory.kmem.tcp.max_usage_in_bytes");
	if (s->peak > max_usage)
		max_usage = s->peak;
	return (double)max_usage / 4096 / limit_pages;
}

static bool sys_skipped(int sys)
{
	return (sys == TCPBUFD && !do_tcpbufd) || (sys == KMEM && !do_v1);
}

/* ----------------------------------------------------------- one run */

static double daemon_log_mark(void)
{
	struct stat st;

	return stat(daemon_log_path(), &st) ? 0 : (double)st.st_size;
}

/* "caps applied X ms after the crossing" lines of cgroup rel after offset. */
static void reactions(const char *rel, double offset, struct result *r)
{
	FILE *f = fopen(daemon_log_path(), "re");
	char line[1024], needle[256];
	double ms;

	if (!f)
		return;
	snprintf(needle, sizeof(needle), "%s: ", rel);
	fseek(f, (long)offset, SEEK_SET);
	while (fgets(line, sizeof(line), f)) {
		char *p = strstr(line, "caps applied ");

		if (!strstr(line, needle) || !p || sscanf(p, "caps applied %lf ms", &ms) != 1)
			continue;
		r->reaction = realloc(r->reaction, (r->n_reaction + 1) * sizeof(*r->reaction));
		r->reaction[r->n_reaction++] = ms;
	}
	fclose(f);
}

struct floor_acc {
	uint64_t *ids;
	int nids;
	double *wq, *rm;
	size_t nwq, nrm;
	uint64_t bytes;
	struct conn_bytes { uint32_t key; int64_t bytes; } *conns;
	size_t nconns;
};

static int cmp_conn(const void *a, const void *b)
{
	const struct conn_bytes *x = a, *y = b;

	return x->key < y->key ? -1 : x->key > y->key;
}

static int floor_cb(const struct skmem_sock *s, void *arg)
{
	struct floor_acc *a = arg;
	int i;

	for (i = 0; i < a->nids && a->ids[i] != s->cgid; i++)
		;
	if (i == a->nids || !s->has_mem)
		return 0;
	a->bytes += s->bytes > 0 ? s->bytes : 0;
	/* Both ends of a loopback connection: the same pair of ports. */
	if (s->state == 10 /* TCP_LISTEN */)
		return 0;
	a->conns = realloc(a->conns, (a->nconns + 1) * sizeof(*a->conns));
	a->conns[a->nconns++] = (struct conn_bytes){
		.key = s->sport < s->dport ? (uint32_t)s->sport << 16 | s->dport
					   : (uint32_t)s->dport << 16 | s->sport,
		.bytes = s->bytes > 0 ? s->bytes : 0 };
	if (s->wmem_queued) {
		a->wq = realloc(a->wq, (a->nwq + 1) * sizeof(*a->wq));
		a->wq[a->nwq++] = s->wmem_queued;
	}
	if (s->rmem_alloc) {
		a->rm = realloc(a->rm, (a->nrm + 1) * sizeof(*a->rm));
		a->rm[a->nrm++] = s->rmem_alloc;
	}
	return 0;
}

static double pct(double *v, size_t n, double p);
static int cmp_double(const void *a, const void *b);

/* Fairness: what the connections (both ends' sockets) hold, smallest,
 * median and largest, over the load's connections (the idle one aside). */
static void conn_fairness(struct floor_acc *a, struct result *r)
{
	double *v = calloc(a->nconns + 1, sizeof(*v));
	size_t n = 0;

	qsort(a->conns, a->nconns, sizeof(*a->conns), cmp_conn);
	for (size_t i = 0; i < a->nconns; n++) {
		size_t j = i;

		for (v[n] = 0; j < a->nconns && a->conns[j].key == a->conns[i].key; j++)
			v[n] += a->conns[j].bytes;
		i = j;
	}
	/* The idle connection holds nothing: one smallest left out if it is there. */
	qsort(v, n, sizeof(*v), cmp_double);
	r->conn_min = pct(v + (n > (size_t)nconn), n - (n > (size_t)nconn), 0.0);
	r->conn_med = pct(v + (n > (size_t)nconn), n - (n > (size_t)nconn), 0.5);
	r->conn_max = pct(v, n, 1.0);
	free(v);
}

/* What each connection holds once the stall has settled (sock_diag). */
static void floor_measure(const char *cg, struct result *r)
{
	struct floor_acc a = {};

	a.nids = cg_subtree_ids(cg, &a.ids);
	if (a.nids > 0 && !skmem_foreach(floor_cb, &a)) {
		r->per_conn = (double)a.bytes / nconn;
		r->wq_med = pct(a.wq, a.nwq, 0.5);
		r->wq_max = pct(a.wq, a.nwq, 1.0);
		r->rm_med = pct(a.rm, a.nrm, 0.5);
		r->rm_max = pct(a.rm, a.nrm, 1.0);
		conn_fairness(&a, r);
	}
	free(a.ids);
	free(a.wq);
	free(a.rm);
	free(a.conns);
}

static void run_load(enum load load, enum sys sys, int round, struct result *r)
{
	char name[64], v1dir[256], msg[256];
	const char *cg, *tx = NULL;
	struct v1_sampler v1s = {};
	struct peak_sampler *ps;
	struct xload *l, *warm;
	double mark = 0, t;
	char *rel;

	snprintf(name, sizeof(name), "%s-%s-%d-%d", load_names[load], sys == TCPBUFD ? "t" : "k",
		 nconn, round);
	cg = cg_create(name);
	rel = cg_rel(cg);
	if (load == RXONLY)
		tx = cg_create("writers");
	if (sys == TCPBUFD) {
		limits_write(cg, limit_pages, 0, 0, 0);
		if (daemon_reload_until(cg, limit_pages, 10000))
			test_abort();
		mark = daemon_log_mark();
	} else {
		v1_start(&v1s, v1dir, sizeof(v1dir), name);
	}

	/* One idle connection a second ahead, as a cgroup that already
	 * serves: the load's burst of connections then meets tcpbufd with
	 * the cgroup near (its ingress linked), not a daemon still answering
	 * the first socket. --cold: the burst into the brand-new cgroup. */
	warm = NULL;
	if (!cold) {
		warm = xload_start(&(struct xload_opts){ .rx_cgroup = cg, .tx_cgroup = tx,
							  .nconn = 1, .idle = 1,
							  .v1_memcg = sys == KMEM ? v1dir : NULL });
		if (!warm)
			test_abort();
		msleep(1000);
	}
	ps = peak_start(cg, 10);
	l = xload_start(&(struct xload_opts){ .rx_cgroup = cg, .tx_cgroup = tx, .nconn = nconn,
					       .mode = load == STALLED ? XL_STALL : XL_READ,
					       .v1_memcg = sys == KMEM ? v1dir : NULL });
	if (!l)
		test_abort();
	if (load != STALLED) {
		msleep(warm_ms);
		xload_set_mode(l, XL_STALL, 0);
	}
	msleep(stall_ms);
	peak_stop(ps);
	floor_measure(cg, r);
	if (getenv("ENFORCE_SS")) {	/* a look at the sockets themselves */
		char cmd[512];

		snprintf(cmd, sizeof(cmd), "ss -tmnie cgroup /%s | grep -A1 \"^ESTAB *0 *[1-9]\" | tail -%s", rel, getenv("ENFORCE_SS"));
		if (system(cmd))
			fprintf(stderr, "bench: ss failed\n");
	}
	r->peak_oracle = (double)peak_pages(ps) / limit_pages;
	r->samples = peak_series(ps, &(const struct peak_sample *){ NULL });
	r->gap_ms = peak_max_gap_ms(ps);
	if (sys == TCPBUFD) {
		r->peak_own = (double)status_field(cg, "peak_pages") / limit_pages;
		r->refused = status_field(cg, "failcnt");
	} else {
		r->peak_own = v1_stop(&v1s);
		r->refused = v1_read(v1dir, "memory.kmem.tcp.failcnt");
	}
	t = now_sec();
	r->intact = !xload_finish(l, 120000, msg, sizeof(msg));
	r->drain_s = now_sec() - t;
	if (!r->intact)
		fprintf(stderr, "bench: %s: %s\n", name, msg);
	xload_close(l);
	if (warm)
		xload_close(warm);
	peak_free(ps);
	if (sys == TCPBUFD) {
		reactions(rel, mark, r);
		limits_remove(cg);
		daemon_signal(SIGHUP);
	}
	printf("  %-8s %5d %-9s round %d: peak %.3f x max (sock_diag), %.3f (own); refused %.0f; "
	       "drain %.2f s%s; per connection %.1f KiB, wmem_queued med %.1f max %.1f KiB, "
	       "rmem med %.1f max %.1f KiB; a connection holds min/med/max %.1f/%.1f/%.1f KiB; "
	       "%zu samples, gap %.0f ms%s\n",
	       load_names[load], nconn, sys == TCPBUFD ? "tcpbufd" : "kmem.tcp", round,
	       r->peak_oracle, r->peak_own, r->refused, r->drain_s, r->intact ? "" : " (NOT INTACT)",
	       r->per_conn / 1024, r->wq_med / 1024, r->wq_max / 1024, r->rm_med / 1024,
	       r->rm_max / 1024, r->conn_min / 1024, r->conn_med / 1024, r->conn_max / 1024,
	       r->samples, r->gap_ms,
	       !r->samples || r->gap_ms > 250 ? " (ORACLE MISSED: left out of the peaks)" : "");
	fflush(stdout);
	free(rel);
}

/* ------------------------------------------------------------ streams */

/* Start iperf3 ARGS in cgroup cg (and the v1 memory cgroup v1dir); its
 * stdout on *out when out is not NULL. */
static pid_t iperf3_start(const char *cg, const char *v1dir, int *out, char *const argv[])
{
	int p[2] = { -1, -1 };
	pid_t pid;

	if (out && pipe2(p, O_CLOEXEC))
		return -1;
	pid = test_fork(1);
	if (pid == 0) {
		if (v1dir && v1_write(v1dir, "cgroup.procs", "0"))
			_exit(126);
		if (cg_enter(cg))
			_exit(126);
		if (out)
			dup2(p[1], 1);
		else if (!freopen("/dev/null", "w", stdout))
			_exit(126);
		execvp("iperf3", argv);
		_exit(127);
	}
	if (out) {
		close(p[1]);
		*out = p[0];
	}
	return pid;
}

/* iperf3's JSON: the receiver's total bits per second, or -1 (its error, if
 * it gave one, in err). Gives up at deadline (now_sec()), returning -2. */
static double iperf3_received_bps(int fd, double deadline, char *err, size_t errlen)
{
	static char buf[1 << 20];
	size_t n = 0;
	ssize_t r;
	char *p;

	err[0] = 0;
	for (;;) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		int left = (int)((deadline - now_sec()) * 1000);

		if (left <= 0)
			return -2;
		if (poll(&pfd, 1, left) <= 0)
			continue;
		r = read(fd, buf + n, sizeof(buf) - 1 - n);
		if (r <= 0 || (n += r) == sizeof(buf) - 1)
			break;
	}
	buf[n] = 0;
	if ((p = strstr(buf, "\"error\":\t\"")) || (p = strstr(buf, "\"error\": \"")))
		snprintf(err, errlen, "%.*s", (int)strcspn(p + 10, "\""), p + 10);
	p = strstr(buf, "\"sum_received\"");
	if (!p || !(p = strstr(p, "\"bits_per_second\":")))
		return -1;
	return strtod(p + strlen("\"bits_per_second\":"), NULL);
}

struct port_use {
	int port, listening;
	uint64_t cgid;
};

static int port_cb(const struct skmem_sock *s, void *arg)
{
	struct port_use *u = arg;

	if (s->sport == u->port && s->state == 10 /* TCP_LISTEN */ && s->cgid == u->cgid)
		u->listening = 1;
	else if (s->sport == u->port || s->dport == u->port)
		u->listening = -1;
	return 0;
}

/* A loopback port below the ephemeral range that no socket uses now, so the
 * client meets its own server and nobody else's. */
static int streams_port(int salt)
{
	for (int k = 0; k < 1000; k++) {
		struct port_use u = { .port = 10000 + (getpid() * 7 + salt * 13 + k) % 20000 };

		if (!skmem_foreach(port_cb, &u) && !u.listening)
			return u.port;
	}
	return -1;
}

/* Until the server listens on port in its cgroup (cgid): 0; -1 if it exited
 * or took 20 s. The client starts only then: a client refused by a server
 * not yet listening would leave iperf3 -s -1 waiting for good. */
static int wait_listening(pid_t srv, int port, uint64_t cgid)
{
	for (double end = now_sec() + 20; now_sec() < end; msleep(10)) {
		struct port_use u = { .port = port, .cgid = cgid };
		int st;

		if (waitpid(srv, &st, WNOHANG) == srv) {
			test_untrack(srv);
			return -1;
		}
		if (!skmem_foreach(port_cb, &u) && u.listening == 1)
			return 0;
	}
	return -1;
}

/* Reap pid, killing it after timeout_ms: 0 if it ended by itself. */
static int reap_within(pid_t pid, int timeout_ms)
{
	double end = now_sec() + timeout_ms / 1000.0;
	int st;

	while (waitpid(pid, &st, WNOHANG) == 0) {
		if (now_sec() > end) {
			kill(pid, SIGKILL);
			test_reap(pid);
			return -1;
		}
		msleep(20);
	}
	test_untrack(pid);
	return 0;
}

/* What a streams round that did not finish left behind, for the report. */
static void streams_dump(const char *cg)
{
	char cmd[512], *rel = cg_rel(cg), *out = NULL;

	snprintf(cmd, sizeof(cmd), "ss -tmnie cgroup /%s | head -24 >&2", rel);
	if (system(cmd))
		fprintf(stderr, "bench: ss failed\n");
	if (do_tcpbufd && !ctl(&out, "status %s", cg))
		fprintf(stderr, "%s", out);
	free(out);
	free(rel);
}

/* The streams' oracle samples sock_diag this often, not every 10 ms: with
 * both cores busy, a dump every 10 ms takes enough CPU from the streams to
 * cost capped buffers a quarter of their throughput (unlimited ones, with
 * more slack, much less), and their usage is steady enough for 100 ms. */
#define STREAMS_SAMPLE_MS	100

/* iperf3 -P nstreams for stream_s seconds, both ends in one cgroup, under
 * sys's 16 MiB (or no limit: sys == NSYS). r->bps < 0: the round failed. */
static void run_streams(enum sys sys, int round, struct stream_result *r)
{
	char name[64], v1dir[256] = "", port[16], par[16], secs[16], err[256] = "";
	struct v1_sampler v1s = {};
	struct peak_sampler *ps;
	const char *cg;
	pid_t srv, cli = -1;
	int out = -1, p;

	snprintf(name, sizeof(name), "streams-%s-%d", sys == TCPBUFD ? "t" : sys == KMEM ? "k" : "u",
		 round);
	cg = cg_create(name);
	if (sys == TCPBUFD) {
		limits_write(cg, limit_pages, 0, 0, 0);
		if (daemon_reload_until(cg, limit_pages, 10000))
			test_abort();
	} else if (sys == KMEM) {
		v1_start(&v1s, v1dir, sizeof(v1dir), name);
	}
	p = streams_port(round * 3 + sys);
	snprintf(port, sizeof(port), "%d", p);
	snprintf(par, sizeof(par), "%d", nstreams);
	snprintf(secs, sizeof(secs), "%d", stream_s);
	srv = iperf3_start(cg, v1dir[0] ? v1dir : NULL, NULL,
			   (char *[]){ "iperf3", "-s", "-1", "-B", "127.0.0.1", "-p", port, NULL });
	ps = peak_start(cg, STREAMS_SAMPLE_MS);
	r->bps = -1;
	if (p < 0 || srv < 0 || wait_listening(srv, p, cg_id(cg)))
		snprintf(err, sizeof(err), "the server did not listen on port %d", p);
	else
		cli = iperf3_start(cg, v1dir[0] ? v1dir : NULL, &out,
				   (char *[]){ "iperf3", "-c", "127.0.0.1", "-p", port, "-P", par,
					       "-t", secs, "-J", NULL });
	if (cli > 0) {
		r->bps = iperf3_received_bps(out, now_sec() + stream_s + 60, err, sizeof(err));
		close(out);
		if (r->bps == -2) {
			snprintf(err, sizeof(err), "no result %d s after the start", stream_s + 60);
			streams_dump(cg);
		}
		reap_within(cli, 1000);
	}
	if (srv > 0 && reap_within(srv, 10000) && !err[0])
		snprintf(err, sizeof(err), "the server did not end");
	peak_stop(ps);
	r->peak_oracle = (double)peak_pages(ps) / limit_pages;
	r->peak_own = -1;
	if (sys == TCPBUFD) {
		r->peak_own = (double)status_field(cg, "peak_pages") / limit_pages;
		limits_remove(cg);
		daemon_signal(SIGHUP);
	} else if (sys == KMEM) {
		r->peak_own = v1_stop(&v1s);
	}
	peak_free(ps);
	if (r->bps < 0)
		r->bps = -1;
	printf("  streams  %-9s round %d: %.2f Gbit/s, peak %.3f x max (sock_diag), %.3f (own)%s%s\n",
	       sys == TCPBUFD ? "tcpbufd" : sys == KMEM ? "kmem.tcp" : "no limit", round,
	       r->bps / 1e9, r->peak_oracle, r->peak_own, err[0] ? "; FAILED: " : "", err);
	fflush(stdout);
}

/* ------------------------------------------------------------- report */

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double pct(double *v, size_t n, double p)
{
	if (!n)
		return -1;
	qsort(v, n, sizeof(*v), cmp_double);
	return v[(size_t)(p * (n - 1) + 0.5)];
}

/* "median (max max)" of the @n values @v, for a report column. */
static const char *median_max(char buf[32], double *v, int n)
{
	snprintf(buf, 32, "%.3f (max %.3f)", pct(v, n, 0.5), pct(v, n, 1.0));
	return buf;
}

static void report(void)
{
	printf("\n%-8s %5s %-9s %-22s %-22s %-9s %-26s %-8s %s\n", "load", "conns", "system",
	       "peak/max sock_diag", "peak/max own counter", "refused", "reaction ms med/p90/max",
	       "drain s", "KiB/conn wq/rmem (median socket); a connection min/med/max KiB");
	for (int n = 0; n < ncounts; n++)
		for (int ld = 0; ld < NLOADS; ld++) {
			for (int s = 0; s < NSYS && (loads_wanted >> ld & 1); s++) {
				double a[16], b[16], c[16], d[16], e[16], f[16], g[16], *rx = NULL;
				double cmin[16], cmed[16], cmax[16];
				int na;
				size_t nrx = 0;
				char react[64] = "-", col1[32], col2[32];
				int intact = 1;

				if (sys_skipped(s))
					continue;
				for (int r = 0; r < rounds; r++) {
					struct result *x = &results[n][ld][s][r];

					/* A round the sampler missed (starved, on
					 * a loaded host) has no oracle peak. */
					a[r] = !x->samples || x->gap_ms > 250 ? NAN : x->peak_oracle;
					b[r] = x->peak_own;
					c[r] = x->refused;
					d[r] = x->drain_s;
					e[r] = x->per_conn / 1024;
					f[r] = x->wq_med / 1024;
					g[r] = x->rm_med / 1024;
					cmin[r] = x->conn_min / 1024;
					cmed[r] = x->conn_med / 1024;
					cmax[r] = x->conn_max / 1024;
					intact &= x->intact;
					for (size_t i = 0; i < x->n_reaction; i++) {
						rx = realloc(rx, (nrx + 1) * sizeof(*rx));
						rx[nrx++] = x->reaction[i];
					}
				}
				if (nrx)
					snprintf(react, sizeof(react), "%.2f/%.2f/%.2f (n=%zu)",
						 pct(rx, nrx, 0.5), pct(rx, nrx, 0.9), pct(rx, nrx, 1.0),
						 nrx);
				na = 0;
				for (int r = 0; r < rounds; r++)
					if (!isnan(a[r]))
						a[na++] = a[r];
				snprintf(col1, sizeof(col1), "%.3f [%.3f-%.3f]%s", pct(a, na, 0.5),
					 pct(a, na, 0.0), pct(a, na, 1.0), na < rounds ? "*" : "");
				snprintf(col2, sizeof(col2), "%.3f [%.3f-%.3f]", pct(b, rounds, 0.5),
					 pct(b, rounds, 0.0), pct(b, rounds, 1.0));
				printf("%-8s %5d %-9s %-22s %-22s %-9.0f %-26s %-8.2f %.1f %.1f/%.1f; "
				       "%.1f/%.1f/%.1f%s\n",
				       load_names[ld], counts[n], s == TCPBUFD ? "tcpbufd" : "kmem.tcp",
				       col1, col2, pct(c, rounds, 0.5), react, pct(d, rounds, 0.5),
				       pct(e, rounds, 0.5), pct(f, rounds, 0.5), pct(g, rounds, 0.5),
				       pct(cmin, rounds, 0.5), pct(cmed, rounds, 0.5),
				       pct(cmax, rounds, 0.5), intact ? "" : " NOT INTACT");
				free(rx);
			}
		}
	printf("\n*: rounds the sock_diag sampler missed (no sample, or 250 ms without one) left out\n");
	printf("median [min-max] over %d rounds (drain, KiB: medians); limit %" PRId64 " pages (%" PRId64
	       " MiB), tcpbufd in %s mode; peaks relative to max = the limit\n", rounds,
	       limit_pages, limit_pages / 256, tcpbufd_mode());
}

/* "64,256": the connection counts; exits on a bad list. */
static void counts_parse(const char *arg)
{
	char *copy = strdup(arg), *save = NULL;

	ncounts = 0;
	for (char *w = strtok_r(copy, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
		if (ncounts == MAX_COUNTS || atoi(w) < 1) {
			fprintf(stderr, "enforce: bad connection counts '%s'\n", arg);
			exit(2);
		}
		counts[ncounts++] = atoi(w);
	}
	free(copy);
	if (!ncounts)
		exit(2);
}

/* "stalled,warm": the loads named, as a bit per enum load; exits on a bad name. */
static unsigned loads_parse(const char *arg)
{
	char *copy = strdup(arg), *save = NULL;
	unsigned bits = 0;

	for (char *w = strtok_r(copy, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
		int ld;

		for (ld = 0; ld <= STREAMS && strcmp(w, load_names[ld]); ld++)
			;
		if (ld > STREAMS) {
			fprintf(stderr, "enforce: unknown load '%s'\n", w);
			exit(2);
		}
		bits |= 1u << ld;
	}
	free(copy);
	return bits;
}

/*
 * A distribution-free interval for the median of v[0..n) (sorted here): the
 * order statistics v(k), v(n+1-k), k the largest with coverage >= 95%, or
 * min-max with less (n < 6); its coverage in *cover.
 */
static void median_interval(double *v, int n, double *lo, double *hi, double *cover)
{
	int k = 1;

	qsort(v, n, sizeof(*v), cmp_double);
	*cover = 1 - 2 * pow(0.5, n);
	for (int j = 2; 2 * j <= n; j++) {
		double tail = 0, p = pow(0.5, n);

		for (int i = 0; i <= j - 1; i++, p = p * (n - i + 1) / i)
			tail += p;
		if (1 - 2 * tail < 0.95)
			break;
		k = j;
		*cover = 1 - 2 * tail;
	}
	*lo = v[k - 1];
	*hi = v[n - k];
}

/* Throughput of each system over no limit, paired by round (median and its
 * interval), over the rounds where both finished. */
static void report_streams(void)
{
	printf("\n%-8s %-9s %-22s %-22s %s\n", "load", "system", "peak/max sock_diag",
	       "peak/max own counter", "throughput / no limit: median [interval] (coverage, n)");
	for (int s = 0; s < NSYS; s++) {
		double a[16], b[16], ratio[16], lo, hi, cover;
		char col1[32], col2[32];
		int n = 0;

		if (sys_skipped(s))
			continue;
		for (int r = 0; r < rounds; r++) {
			if (stream_results[s][r].bps <= 0 || stream_results[NSYS][r].bps <= 0)
				continue;
			a[n] = stream_results[s][r].peak_oracle;
			b[n] = stream_results[s][r].peak_own;
			ratio[n++] = stream_results[s][r].bps / stream_results[NSYS][r].bps;
		}
		if (!n) {
			printf("%-8s %-9s no round finished\n", "streams",
			       s == TCPBUFD ? "tcpbufd" : "kmem.tcp");
			continue;
		}
		median_interval(ratio, n, &lo, &hi, &cover);
		printf("%-8s %-9s %-22s %-22s %.3f [%.3f, %.3f] (%.0f%%, n=%d)\n", "streams",
		       s == TCPBUFD ? "tcpbufd" : "kmem.tcp", median_max(col1, a, n),
		       median_max(col2, b, n), pct(ratio, n, 0.5), lo, hi, cover * 100, n);
	}
	printf("iperf3 -P %d, %d s, client and server in the cgroup\n", nstreams, stream_s);
}

static void usage(void)
{
	fprintf(stderr, "usage: enforce [-n CONNS,...] [-l LIMIT_MIB] [-r ROUNDS] [-w WARM_MS] "
			"[-s STALL_MS] [-L LOAD,...] [-P STREAMS] [-t STREAM_S] [--cold] [--no-v1] "
			"[--no-tcpbufd]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "no-v1", no_argument, NULL, 1 },
		{ "no-tcpbufd", no_argument, NULL, 2 },
		{ "loads", required_argument, NULL, 'L' },
		{ "cold", no_argument, NULL, 3 },
		{}
	};
	int c;

	while ((c = getopt_long(argc, argv, "n:l:r:w:s:L:P:t:h", opts, NULL)) != -1) {
		switch (c) {
		case 'n': counts_parse(optarg); break;
		case 'l': limit_pages = atoll(optarg) * 256; break;
		case 'r': rounds = atoi(optarg); break;
		case 'w': warm_ms = atoi(optarg); break;
		case 's': stall_ms = atoi(optarg); break;
		case 1: do_v1 = 0; break;
		case 2: do_tcpbufd = 0; break;
		case 3: cold = 1; break;
		case 'L': loads_wanted = loads_parse(optarg); break;
		case 'P': nstreams = atoi(optarg); break;
		case 't': stream_s = atoi(optarg); break;
		default: usage();
		}
	}
	if (rounds < 1 || rounds > 16 || limit_pages < 256)
		usage();
	test_init();
	if (do_v1 && access(V1_ROOT "/memory.kmem.tcp.limit_in_bytes", F_OK)) {
		printf("no cgroup v1 memory controller with kmem.tcp at " V1_ROOT ": kmem.tcp skipped\n");
		do_v1 = 0;
	}
	enforce_config(1000);
	if (do_tcpbufd && daemon_start(""))
		return 1;
	for (int r = 0; r < rounds; r++) {
		/* No limit, tcpbufd, kmem.tcp: the order turns each round. */
		for (int k = 0; k <= NSYS && (loads_wanted >> STREAMS & 1); k++) {
			int s = (k + r) % (NSYS + 1);

			if (sys_skipped(s))
				continue;
			run_streams(s, r, &stream_results[s][r]);
		}
		for (int n = 0; n < ncounts; n++)
			for (int ld = 0; ld < NLOADS; ld++)
				for (int k = 0; k < NSYS && (loads_wanted >> ld & 1); k++) {
					/* Alternate which system goes first. */
					enum sys s = (r + ld + n) % 2 ? (enum sys)(NSYS - 1 - k) : (enum sys)k;
					if (sys_skipped(s))
						continue;
					nconn = counts[n];
					run_load(ld, s, r, &results[n][ld][s][r]);
				}
	}
	if (loads_wanted & ((1u << NLOADS) - 1))
		report();
	if (loads_wanted >> STREAMS & 1)
		report_streams();
	if (do_tcpbufd)
		daemon_stop();
	return test_done();
}
