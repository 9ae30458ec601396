// SPDX-License-Identifier: GPL-2.0
/* Helpers of the enforcement tests and bench: see enforce_util.h. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "enforce_util.h"
#include "tcpbuf_enforce.h"
#include "load.h"
#include "harness.h"
#include "skmem.h"
#include "tcpbuf_maps.h"
#include "tcpbuf_policy.h"

/* --------------------------------------------------------------- xload */

struct xconn {
	int snd, rcv;
	uint64_t sent;
	struct pattern_rx rx;
	int quota;
};

struct xload {
	pid_t pid;
	int cmd, rep;
};

static int xread_line(int fd, char *buf, size_t len, int timeout_ms)
{
	size_t n = 0;
	double deadline = now_sec() + timeout_ms / 1000.0;

	while (n + 1 < len) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		int left = (int)((deadline - now_sec()) * 1000);
		ssize_t r;

		if (left <= 0 || poll(&p, 1, left) <= 0)
			return -1;
		r = read(fd, buf + n, 1);
		if (r <= 0) {
			if (r < 0 && errno == EINTR)
				continue;
			return -1;
		}
		if (buf[n] == '\n') {
			buf[n] = 0;
			return 0;
		}
		n++;
	}
	buf[n] = 0;
	return 0;
}

static uint64_t xpush(struct xconn *c, int i)
{
	uint64_t wrote = 0;

	for (;;) {
		ssize_t r = send(c->snd, pattern_at(i, c->sent), PATTERN_PERIOD,
				 MSG_DONTWAIT | MSG_NOSIGNAL);

		if (r <= 0) {
			if (r < 0 && errno == EINTR)
				continue;
			if (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
				_exit(4);
			return wrote;
		}
		c->sent += r;
		wrote += r;
	}
}

static uint64_t xpull(struct xconn *c, int i, int64_t limit)
{
	return pattern_pull(c->rcv, i, &c->rx, limit, 256 * 1024);
}

/* Move this process into a cgroup v1 directory (the memory controller). */
static int v1_join(const char *dir)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/cgroup.procs", dir);
	f = fopen(path, "we");
	if (!f)
		return -1;
	fprintf(f, "%d\n", (int)getpid());
	return fclose(f) ? -1 : 0;
}

static uint16_t sock_port(int fd, int peer)
{
	struct sockaddr_storage a;
	socklen_t len = sizeof(a);

	if ((peer ? getpeername : getsockname)(fd, (struct sockaddr *)&a, &len))
		return 0;
	return a.ss_family == AF_INET6 ? ntohs(((struct sockaddr_in6 *)&a)->sin6_port)
				       : ntohs(((struct sockaddr_in *)&a)->sin_port);
}

/* The connection whose sending end is the peer of accepted socket fd. */
static int conn_of(struct xconn *c, int n, int fd)
{
	uint16_t port = sock_port(fd, 1);

	for (int i = 0; i < n; i++)
		if (sock_port(c[i].snd, 0) == port)
			return i;
	return -1;
}

/* net.core.optmem_max of this process's network namespace (its own since 6.9). */
static int optmem_max_set(int bytes)
{
	FILE *f = fopen("/proc/sys/net/core/optmem_max", "w");
	int ok;

	if (!f)
		return -1;
	ok = fprintf(f, "%d\n", bytes) > 0;
	return fclose(f) == 0 && ok ? 0 : -1;
}

static void xchild(const struct xload_opts *o, int cmd, int rep)
{
	struct sockaddr_storage ss;
	socklen_t alen;
	struct xconn *c;
	int lfd, mode = o->mode, trickle = o->trickle, sending = 1, one = 1;
	double next_tick = now_sec();
	char line[128];

	pattern_init();
	if ((o->v1_memcg && v1_join(o->v1_memcg)) || cg_enter(o->rx_cgroup))
		_exit(2);
	if (o->netns && netns_enter_new(0))
		_exit(2);
	if (o->netns && o->optmem_max && optmem_max_set(o->optmem_max))
		_exit(2);
	lfd = socket(o->family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	alen = loopback_addr(o->family, &ss, 0);
	if (lfd < 0 || bind(lfd, (struct sockaddr *)&ss, alen) || listen(lfd, o->nconn + 16) ||
	    getsockname(lfd, (struct sockaddr *)&ss, &alen))
		_exit(2);
	/* Connect everything from the sending side first, then accept from the
	 * receiving side: cgroup v2 gives accepted sockets the listener's
	 * cgroup, but memcg (v1 kmem.tcp) charges them to the accepting task. */
	if (o->v1_memcg && o->tx_cgroup && v1_join("/sys/fs/cgroup/memory"))
		_exit(2);
	if (cg_enter(o->tx_cgroup ? o->tx_cgroup : o->rx_cgroup))
		_exit(2);
	c = calloc(o->nconn, sizeof(*c));
	for (int i = 0; i < o->nconn; i++) {
		c[i].snd = socket(o->family, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (c[i].snd < 0 || connect(c[i].snd, (struct sockaddr *)&ss, alen))
			_exit(2);
		fcntl(c[i].snd, F_SETFL, O_NONBLOCK);
	}
	if ((o->v1_memcg && v1_join(o->v1_memcg)) || cg_enter(o->rx_cgroup))
		_exit(2);
	/* accept() returns connections in the order their handshakes
	 * completed, not the order of connect(): pair them by port. */
	for (int n = 0; n < o->nconn; n++) {
		int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC), i;

		if (fd < 0)
			_exit(2);
		i = conn_of(c, o->nconn, fd);
		if (i < 0 || c[i].rcv)
			_exit(2);
		c[i].rcv = fd;
		fcntl(fd, F_SETFL, O_NONBLOCK);
	}
	if (o->tx_cgroup && cg_enter(o->tx_cgroup))
		_exit(2);
	if (o->idle)
		sending = 0;
	child_report(rep, "ready");

	for (;;) {
		struct pollfd p = { .fd = cmd, .events = POLLIN };
		uint64_t moved = 0;

		if (poll(&p, 1, 0) > 0) {
			if (xread_line(cmd, line, sizeof(line), 1000))
				_exit(0);
			if (!strncmp(line, "mode ", 5)) {
				sscanf(line + 5, "%d %d", &mode, &trickle);
				child_report(rep, "ok");
			} else if (!strcmp(line, "send")) {
				sending = 1;
				child_report(rep, "ok");
			} else if (!strcmp(line, "quiesce")) {
				sending = 0;
				mode = XL_READ;
				child_report(rep, "ok");
			} else if (!strcmp(line, "stats")) {
				uint64_t s = 0, r = 0;

				for (int i = 0; i < o->nconn; i++) {
					s += c[i].sent;
					r += c[i].rx.received;
				}
				child_report(rep, "stats %" PRIu64 " %" PRIu64, s, r);
			} else if (!strncmp(line, "finish ", 7)) {
				double deadline = now_sec() + atoi(line + 7) / 1000.0;
				int open = 1, bad = -1;

				for (int i = 0; i < o->nconn; i++)
					shutdown(c[i].snd, SHUT_WR);
				struct pollfd *pf = calloc(o->nconn, sizeof(*pf));

				/* Readers as an event loop has them: waiting in
				 * poll() on every socket not at its end. */
				while (pf && open && now_sec() < deadline) {
					open = 0;
					for (int i = 0; i < o->nconn; i++) {
						xpull(&c[i], i, -1);
						if (!c[i].rx.eof)
							pf[open++] = (struct pollfd){ .fd = c[i].rcv,
										      .events = POLLIN };
					}
					if (open)
						poll(pf, open, 10);
				}
				free(pf);
				for (int i = 0; i < o->nconn && bad < 0; i++)
					if (c[i].rx.bad || c[i].rx.received != c[i].sent || !c[i].rx.eof)
						bad = i;
				if (bad < 0) {
					uint64_t s = 0;

					for (int i = 0; i < o->nconn; i++)
						s += c[i].rx.received;
					child_report(rep, "result OK %" PRIu64 " bytes intact", s);
				} else {
					child_report(rep, "result BAD connection %d: %s at offset %" PRIu64
					       ", received %" PRIu64 " of %" PRIu64, bad,
					       c[bad].rx.bad ? pattern_error(&c[bad].rx) :
					       !c[bad].rx.eof ? "no EOF (timeout)" : "short",
					       c[bad].rx.bad_off, c[bad].rx.received, c[bad].sent);
				}
				sending = 0;
				mode = XL_STALL;
			}
		}
		if (sending)
			for (int i = 0; i < o->nconn; i++)
				moved += xpush(&c[i], i);
		if (mode == XL_READ) {
			for (int i = 0; i < o->nconn; i++)
				moved += xpull(&c[i], i, -1);
		} else if (mode == XL_TRICKLE) {
			if (now_sec() >= next_tick) {
				next_tick += 0.1;
				if (next_tick < now_sec())
					next_tick = now_sec() + 0.1;
				for (int i = 0; i < o->nconn; i++)
					c[i].quota = trickle;
			}
			for (int i = 0; i < o->nconn; i++)
				if (c[i].quota > 0)
					c[i].quota -= xpull(&c[i], i, c[i].quota);
		}
		if (!moved)
			msleep(mode == XL_READ ? 1 : mode == XL_STALL ? 20 : 5);
	}
}

struct xload *xload_start(const struct xload_opts *o)
{
	struct xload_opts opts = *o;
	int cmdp[2], repp[2];
	struct xload *l;
	char line[64];

	if (!opts.family)
		opts.family = AF_INET;
	if (!opts.rx_cgroup || opts.nconn <= 0 || pipe2(cmdp, O_CLOEXEC) || pipe2(repp, O_CLOEXEC))
		return NULL;
	l = calloc(1, sizeof(*l));
	l->pid = test_fork(1);
	if (l->pid < 0)
		return NULL;
	if (l->pid == 0) {
		close(cmdp[1]);
		close(repp[0]);
		xchild(&opts, cmdp[0], repp[1]);
		_exit(0);
	}
	close(cmdp[0]);
	close(repp[1]);
	l->cmd = cmdp[1];
	l->rep = repp[0];
	if (xread_line(l->rep, line, sizeof(line), 30000) || strcmp(line, "ready")) {
		test_log("xload: generator did not come up");
		xload_close(l);
		return NULL;
	}
	return l;
}

/* The generator answers between two rounds over its connections; under CPU
 * emulation a round can take seconds. */
#define XCMD_TIMEOUT_MS 30000

static int xcmd(struct xload *l, char *reply, size_t len, int timeout_ms, const char *fmt, ...)
{
	char line[128];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line) - 1, fmt, ap);
	va_end(ap);
	line[n++] = '\n';
	if (write(l->cmd, line, n) != n)
		return -1;
	return xread_line(l->rep, reply, len, timeout_ms);
}

pid_t xload_pid(const struct xload *l)
{
	return l->pid;
}

int xload_set_mode(struct xload *l, enum xload_mode mode, int trickle)
{
	char r[64];

	return xcmd(l, r, sizeof(r), XCMD_TIMEOUT_MS, "mode %d %d", mode, trickle) || strcmp(r, "ok") ? -1 : 0;
}

int xload_send(struct xload *l)
{
	char r[64];

	return xcmd(l, r, sizeof(r), XCMD_TIMEOUT_MS, "send") || strcmp(r, "ok") ? -1 : 0;
}

int xload_quiesce(struct xload *l)
{
	char r[64];

	return xcmd(l, r, sizeof(r), XCMD_TIMEOUT_MS, "quiesce") || strcmp(r, "ok") ? -1 : 0;
}

int xload_stats(struct xload *l, uint64_t *sent, uint64_t *received)
{
	char r[128];

	if (xcmd(l, r, sizeof(r), XCMD_TIMEOUT_MS, "stats") ||
	    sscanf(r, "stats %" SCNu64 " %" SCNu64, sent, received) != 2)
		return -1;
	return 0;
}

int xload_finish(struct xload *l, int timeout_ms, char *msg, size_t msglen)
{
	char r[256];

	if (xcmd(l, r, sizeof(r), timeout_ms + 10000, "finish %d", timeout_ms)) {
		snprintf(msg, msglen, "generator did not answer");
		return -1;
	}
	snprintf(msg, msglen, "%s", r + (strncmp(r, "result ", 7) ? 0 : 7));
	return strncmp(r, "result OK", 9) ? -1 : 0;
}

void xload_close(struct xload *l)
{
	if (!l)
		return;
	kill(l->pid, SIGKILL);
	test_reap(l->pid);
	close(l->cmd);
	close(l->rep);
	free(l);
}

int netns_has_optmem(void)
{
	int status;
	pid_t pid = fork();

	if (pid == 0)
		_exit(unshare(CLONE_NEWNET) || access("/proc/sys/net/core/optmem_max", W_OK) ? 1 : 0);
	if (pid < 0 || waitpid(pid, &status, 0) != pid)
		return 0;
	return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

/* ----------------------------------------------------------- throughput */

/* Both ends on one CPU: left to the scheduler, the two ends share a CPU in
 * some runs and not in others, and paired runs differ by up to 40%. */
static void pin_to(int cpu)
{
	cpu_set_t set;

	if (cpu < 0)
		return;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	sched_setaffinity(0, sizeof(set), &set);
}

double bulk_throughput_on(const char *tx_cgroup, const char *rx_cgroup, double secs, int cpu)
{
	int portp[2], resp[2];
	pid_t rx, tx;
	uint16_t port = 0;
	double rate = -1;

	if (pipe2(portp, O_CLOEXEC) || pipe2(resp, O_CLOEXEC))
		return -1;
	rx = test_fork(1);
	if (rx == 0) {
		struct sockaddr_in a = { .sin_family = AF_INET,
					 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
		socklen_t alen = sizeof(a);
		static char buf[256 * 1024];
		uint64_t total = 0;
		double t0 = 0;
		int lfd, fd;
		ssize_t r;

		if (cg_enter(rx_cgroup))
			_exit(2);
		pin_to(cpu);
		setpriority(PRIO_PROCESS, 0, -15);	/* less noise from other work */
		lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (lfd < 0 || bind(lfd, (struct sockaddr *)&a, alen) || listen(lfd, 4) ||
		    getsockname(lfd, (struct sockaddr *)&a, &alen))
			_exit(2);
		port = ntohs(a.sin_port);
		if (write(portp[1], &port, sizeof(port)) != sizeof(port))
			_exit(2);
		fd = accept(lfd, NULL, NULL);
		while (fd >= 0 && (r = read(fd, buf, sizeof(buf))) > 0) {
			if (!total)
				t0 = now_sec();
			total += r;
		}
		rate = total / (now_sec() - t0);
		if (write(resp[1], &rate, sizeof(rate)) != sizeof(rate))
			_exit(2);
		_exit(0);
	}
	if (rx < 0 || read(portp[0], &port, sizeof(port)) != sizeof(port))
		goto out;
	tx = test_fork(1);
	if (tx == 0) {
		struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port),
					 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
		static char buf[128 * 1024];
		double end;
		int fd;

		if (cg_enter(tx_cgroup))
			_exit(2);
		pin_to(cpu);
		setpriority(PRIO_PROCESS, 0, -15);
		fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)))
			_exit(2);
		memset(buf, 0x5a, sizeof(buf));
		end = now_sec() + secs;
		while (now_sec() < end)
			if (write(fd, buf, sizeof(buf)) < 0)
				_exit(2);
		close(fd);
		_exit(0);
	}
	if (tx > 0)
		test_reap(tx);
	if (read(resp[0], &rate, sizeof(rate)) != sizeof(rate))
		rate = -1;
out:
	if (rx > 0)
		test_reap(rx);
	close(portp[0]);
	close(portp[1]);
	close(resp[0]);
	close(resp[1]);
	return rate;
}

double bulk_throughput(const char *tx_cgroup, const char *rx_cgroup, double secs)
{
	return bulk_throughput_on(tx_cgroup, rx_cgroup, secs, -1);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

double median_of(const double *v, int n)
{
	double *c = malloc(n * sizeof(*c)), m;

	memcpy(c, v, n * sizeof(*c));
	qsort(c, n, sizeof(*c), cmp_double);
	m = n % 2 ? c[n / 2] : (c[n / 2 - 1] + c[n / 2]) / 2;
	free(c);
	return m;
}

double median_ratio(const double *num, const double *den, int n)
{
	double *r = malloc(n * sizeof(*r)), m;

	for (int i = 0; i < n; i++)
		r[i] = den[i] > 0 ? num[i] / den[i] : 0;
	m = median_of(r, n);
	free(r);
	return m;
}

double median_ratio_interval(const double *num, const double *den, int n, double *lo,
			     double *hi)
{
	double *r = malloc(n * sizeof(*r)), m, tail = 0, c = 1, all = 1;
	int k = 0;

	for (int i = 0; i < n; i++)
		all *= 2;
	for (int i = 0; i < n; i++)
		r[i] = den[i] > 0 ? num[i] / den[i] : 0;
	qsort(r, n, sizeof(*r), cmp_double);
	m = n % 2 ? r[n / 2] : (r[n / 2 - 1] + r[n / 2]) / 2;
	/* k: the most order statistics cut from each end with P(Bin(n, 1/2)
	 * < k) <= 2.5%; c runs through C(n, i). */
	for (int i = 0; i < n / 2; i++) {
		tail += c / all;
		if (tail > 0.025)
			break;
		k = i + 1;
		c = c * (n - i) / (i + 1);
	}
	*lo = r[k > 0 ? k - 1 : 0];
	*hi = r[k > 0 ? n - k : n - 1];
	free(r);
	return m;
}

/* -------------------------------------------------------------- sampler */

struct peak_sampler {
	pthread_t thread;
	char *path;
	unsigned interval_ms;
	volatile int stop;
	uint64_t peak;
	double max_gap_ms;
	struct peak_sample *series;
	size_t n, cap;
};

static void *sampler_main(void *arg)
{
	struct peak_sampler *p = arg;
	struct sched_param sp = { .sched_priority = 10 };
	struct timespec next;
	double t0 = now_sec(), last = -1;

	/* Real-time, so a busy load does not stretch the sampling interval. */
	pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp);
	clock_gettime(CLOCK_MONOTONIC, &next);
	while (!p->stop) {
		struct skmem_total t = {};
		double now;

		if (!skmem_subtree(p->path, &t)) {
			now = now_sec() - t0;
			if (last >= 0 && (now - last) * 1000 > p->max_gap_ms)
				p->max_gap_ms = (now - last) * 1000;
			last = now;
			if (t.pages > p->peak)
				p->peak = t.pages;
			if (p->n == p->cap) {
				size_t c = p->cap ? p->cap * 2 : 4096;
				void *q = realloc(p->series, c * sizeof(*p->series));

				if (q) {
					p->series = q;
					p->cap = c;
				}
			}
			if (p->n < p->cap)
				p->series[p->n++] = (struct peak_sample){ .t = now, .pages = t.pages };
		}
		next.tv_nsec += p->interval_ms * 1000000L;
		while (next.tv_nsec >= 1000000000L) {
			next.tv_nsec -= 1000000000L;
			next.tv_sec++;
		}
		clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL);
	}
	return NULL;
}

struct peak_sampler *peak_start(const char *path, unsigned interval_ms)
{
	struct peak_sampler *p = calloc(1, sizeof(*p));

	p->path = strdup(path);
	p->interval_ms = interval_ms;
	if (pthread_create(&p->thread, NULL, sampler_main, p)) {
		free(p->path);
		free(p);
		return NULL;
	}
	return p;
}

void peak_stop(struct peak_sampler *p)
{
	if (!p || p->stop)
		return;
	p->stop = 1;
	pthread_join(p->thread, NULL);
}

uint64_t peak_pages(const struct peak_sampler *p) { return p->peak; }
double peak_max_gap_ms(const struct peak_sampler *p) { return p->max_gap_ms; }

size_t peak_series(const struct peak_sampler *p, const struct peak_sample **out)
{
	*out = p->series;
	return p->n;
}

void peak_free(struct peak_sampler *p)
{
	if (!p)
		return;
	peak_stop(p);
	free(p->series);
	free(p->path);
	free(p);
}

int under_emulation(void)
{
	const char *vm = getenv("TCPBUF_VM");

	return vm && strcmp(vm, "kvm");
}

/* --------------------------------------------------------------- daemon */

static char *dropin_path(const char *path)
{
	char *rel = cg_rel(path), *file;

	for (char *c = rel; *c; c++)
		if (*c == '/')
			*c = '_';
	if (asprintf(&file, "%s/%s.conf", daemon_confdir(), rel) < 0)
		test_abort();
	free(rel);
	return file;
}

void limits_write(const char *path, int64_t limit, int64_t max, int64_t pressure, int64_t min)
{
	char *file = dropin_path(path), *rel = cg_rel(path);
	FILE *f = fopen(file, "we");

	if (!f)
		test_abort();
	fprintf(f, "[Cgroup]\nPath=%s\nLimit=%" PRId64 "\n", rel, limit);
	if (max)
		fprintf(f, "Max=%" PRId64 "\n", max);
	if (pressure)
		fprintf(f, "Pressure=%" PRId64 "\n", pressure);
	if (min)
		fprintf(f, "Min=%" PRId64 "\n", min);
	if (fclose(f))
		test_abort();
	free(file);
	free(rel);
}

void limits_remove(const char *path)
{
	char *file = dropin_path(path);

	unlink(file);
	free(file);
}

const char *enforce_ingress_rest;

void enforce_config_poll(unsigned sample_ms, unsigned poll_ms)
{
	daemon_write_config("[Daemon]\nDropInDir=%s\nStateDir=%s/state\nSampleIntervalMs=%u\n"
			    "PollIntervalMs=%u\nLogLevel=debug\n%s%s\n",
			    daemon_confdir(), test_tmpdir(), sample_ms, poll_ms,
			    enforce_ingress_rest ? "IngressRest=" : "",
			    enforce_ingress_rest ? enforce_ingress_rest : "");
}

void enforce_config(unsigned sample_ms)
{
	enforce_config_poll(sample_ms, 200);
}

int64_t status_field_in(const char *filter, const char *path, const char *key)
{
	char *out = NULL;
	int64_t v = -1;

	if (ctl(&out, "status --json %s", filter) ||
	    json_cgroup_field(out, path, key, &v) != JSON_FOUND)
		v = -1;
	free(out);
	return v;
}

int64_t status_field(const char *path, const char *key)
{
	return status_field_in("", path, key);
}

const char *status_string(const char *path, const char *key)
{
	static char v[32];
	char *out = NULL;

	v[0] = 0;
	if (!ctl(&out, "status --json"))
		json_cgroup_string(out, path, key, v, sizeof(v));
	free(out);
	return v;
}

const char *status_state(const char *path)
{
	return status_string(path, "state");
}

int wait_state(const char *path, const char *want, int timeout_ms)
{
	double deadline = now_sec() + timeout_ms / 1000.0;

	while (now_sec() < deadline) {
		if (!strcmp(status_state(path), want))
			return 0;
		msleep(10);
	}
	return -1;
}

int64_t wait_field(const char *path, const char *key, int64_t want, int timeout_ms)
{
	int64_t v = -1;

	for (int t = 0; t < timeout_ms; t += 50) {
		v = status_field(path, key);
		if (v == want)
			break;
		msleep(50);
	}
	return v;
}

const char *cg_limited(const char *rel, int64_t limit)
{
	const char *cg = cg_create(rel);

	limits_write(cg, limit, 0, 0, 0);
	ASSERT_OK(daemon_reload_until(cg, limit, 5000));
	return cg;
}

int daemon_reload_until(const char *path, int64_t limit_pages, int timeout_ms)
{
	double deadline = now_sec() + timeout_ms / 1000.0;

	if (daemon_signal(SIGHUP))
		return -1;
	while (now_sec() < deadline) {
		if (status_field(path, "limit_pages") == limit_pages)
			return 0;
		msleep(20);
	}
	return -1;
}

/* ------------------------------------------------------------ sock_diag */

struct bufs_ctx {
	uint64_t *ids;
	int n;
	uint32_t cap;
	struct bufs_summary *s;
};

static int bufs_one(const struct skmem_sock *k, void *arg)
{
	struct bufs_ctx *c = arg;
	int i;

	if (!k->has_mem || k->state != 1 /* TCP_ESTABLISHED */)
		return 0;
	for (i = 0; i < c->n && c->ids[i] != k->cgid; i++)
		;
	if (i == c->n)
		return 0;
	c->s->sockets++;
	c->s->snd_at_most += k->sndbuf <= c->cap;
	c->s->rcv_at_most += k->rcvbuf <= c->cap;
	if (k->sndbuf > c->s->snd_max)
		c->s->snd_max = k->sndbuf;
	if (k->rcvbuf > c->s->rcv_max)
		c->s->rcv_max = k->rcvbuf;
	if (!c->s->snd_min || k->sndbuf < c->s->snd_min)
		c->s->snd_min = k->sndbuf;
	if (!c->s->rcv_min || k->rcvbuf < c->s->rcv_min)
		c->s->rcv_min = k->rcvbuf;
	return 0;
}

struct count_ctx {
	uint64_t *ids;
	int n, rcv, count;
	uint32_t min;
};

static int count_one(const struct skmem_sock *k, void *arg)
{
	struct count_ctx *c = arg;

	if (!k->has_mem || k->state != 1)
		return 0;
	for (int i = 0; i < c->n; i++)
		if (c->ids[i] == k->cgid) {
			c->count += (c->rcv ? k->rcvbuf : k->sndbuf) >= c->min;
			break;
		}
	return 0;
}

int bufs_count_at_least(const char *path, int rcv, uint32_t min)
{
	struct count_ctx c = { .rcv = rcv, .min = min };
	int r;

	c.n = cg_subtree_ids(path, &c.ids);
	if (c.n < 0)
		return -1;
	r = skmem_foreach(count_one, &c);
	free(c.ids);
	return r ? -1 : c.count;
}

int bufs_summary(const char *path, uint32_t cap, struct bufs_summary *out)
{
	struct bufs_ctx c = { .cap = cap, .s = out };
	int r;

	memset(out, 0, sizeof(*out));
	c.n = cg_subtree_ids(path, &c.ids);
	if (c.n < 0)
		return -1;
	r = skmem_foreach(bufs_one, &c);
	free(c.ids);
	return r;
}

long sysctl_field(const char *path, int field)
{
	char *s = file_read(path), *p;
	long v = -1;

	if (!s)
		return -1;
	p = s;
	for (int i = 0; i <= field && *p; i++)
		v = strtol(p, &p, 10);
	free(s);
	return v;
}

long writer_ceiling(void)
{
	long tcp_wmem2 = sysctl_field("/proc/sys/net/ipv4/tcp_wmem", 2);
	long wmem_max = sysctl_field("/proc/sys/net/core/wmem_max", 0);

	return tcp_wmem2 > 2 * wmem_max ? tcp_wmem2 : 2 * wmem_max;
}

long narrow_writer_ceiling(void)
{
	return sysctl_field("/proc/sys/net/ipv4/tcp_wmem", 2);
}

long bounded_limit(void)
{
	long c = 4 * narrow_writer_ceiling();

	return c > 16 * MIB ? c : 16 * MIB;
}

long bounded_share_for(long limit, int sockets, long writer)
{
	struct tcpbuf_thresholds t = tcpbuf_thresholds_of(PAGES(limit), 0, 0);
	long least = tcpbuf_bounded_rcvbuf(sysctl_field("/proc/sys/net/ipv4/tcp_rmem", 1),
					   sysctl_field("/proc/sys/net/ipv4/tcp_rmem", 2),
					   sysctl_field("/proc/sys/net/core/rmem_max", 0));
	__s64 guard = tcpbuf_near_guard(t.pressure, t.max, sockets, TCPBUF_GUARD_GROWTH_PAGES);

	guard = tcpbuf_near_guard_writers(guard, t.pressure, t.max, sockets,
					  writer >> TCPBUF_PAGE_SHIFT, true);
	return tcpbuf_bounded_share(sockets, guard, least);
}

long bounded_limit_streams(int conns)
{
	long rmem2 = sysctl_field("/proc/sys/net/ipv4/tcp_rmem", 2);
	long rmax = 2 * sysctl_field("/proc/sys/net/core/rmem_max", 0);
	long reach = rmem2 > rmax ? rmem2 : rmax;
	long limit = 16 * MIB;

	while (limit < (1L << 40) && bounded_share_for(limit, 2 * conns,
						       narrow_writer_ceiling()) < reach)
		limit *= 2;
	return limit;
}

void skmem_watch_sock_charge(size_t off)
{
	skmem_storage_fd = daemon_pinned_fd("sock_charge");
	skmem_storage_off = off;
	ASSERT_GE(skmem_storage_fd, 0);
}

struct armed_walk {
	uint64_t cgid;
	struct armed a;
};

static int armed_cb(const struct skmem_sock *s, void *arg)
{
	struct armed_walk *w = arg;

	if (s->cgid != w->cgid || s->state != TCP_ESTABLISHED || !s->has_storage)
		return 0;
	w->a.entries++;
	w->a.armed += !!(s->storage_u32 & TCPBUF_SE_LIMITED);
	w->a.sized += !!(s->storage_u32 & (TCPBUF_SE_SNDBUF_SET | TCPBUF_SE_RCVBUF_SET));
	w->a.followed += !!(s->storage_u32 & TCPBUF_SE_FOLLOWED);
	return 0;
}

struct armed armed_count(const char *cg)
{
	struct armed_walk w = { .cgid = cg_id(cg) };

	EXPECT_OK(skmem_foreach(armed_cb, &w));
	return w.a;
}

int64_t sock_bound_pages(void)
{
	long rmem_max = sysctl_field("/proc/sys/net/core/rmem_max", 0);
	long wmem_max = sysctl_field("/proc/sys/net/core/wmem_max", 0);
	long rmem2 = sysctl_field("/proc/sys/net/ipv4/tcp_rmem", 2);
	long wmem2 = sysctl_field("/proc/sys/net/ipv4/tcp_wmem", 2);

	return ((rmem2 > 2 * rmem_max ? rmem2 : 2 * rmem_max) +
		(wmem2 > 2 * wmem_max ? wmem2 : 2 * wmem_max) + (256 << 10)) / 4096;
}

const char *daemon_mode(void)
{
	static char mode[16];
	char *out = NULL;

	mode[0] = '\0';
	if (!ctl(&out, "status --json"))
		json_string_field(out, "mode", mode, sizeof(mode));
	free(out);
	return mode;
}

/* ------------------------------------------------------- ingress at rest */

/* The kernel's BTF names the tracepoint (its string table is searched:
 * not every test links libbpf's BTF parser). */
int ingress_rest_possible(void)
{
	static const char want[] = "btf_trace_tcp_rcvbuf_grow";
	FILE *f;
	char *buf;
	size_t n;
	int found = 0;

	if (enforce_ingress_rest && !strcmp(enforce_ingress_rest, "no"))
		return 0;
	f = fopen("/sys/kernel/btf/vmlinux", "re");
	buf = malloc(64 << 20);
	if (f && buf) {
		n = fread(buf, 1, 64 << 20, f);
		found = memmem(buf, n, want, sizeof(want)) != NULL;	/* with its NUL */
	}
	free(buf);
	if (f)
		fclose(f);
	return found;
}

static int link_pinned(const char *name)
{
	char path[4096];

	snprintf(path, sizeof(path), "%s/links/%s", daemon_pin_path(), name);
	return !access(path, F_OK);
}

void rest_daemon_start(unsigned sample_ms)
{
	enforce_ingress_rest = "yes";
	if (!ingress_rest_possible())
		SKIP("no tcp_rcvbuf_grow tracepoint: ingress never rests");
	enforce_config(sample_ms);
	ASSERT_OK(daemon_start(""));
	if (strcmp(daemon_mode(), "sampled"))
		SKIP("%s mode: ingress rests in sampled mode only", daemon_mode());
}

int listener_in(const char *cg, struct sockaddr_in *a, int backlog)
{
	socklen_t alen = sizeof(*a);
	int lis;

	*a = (struct sockaddr_in){ .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	ASSERT_OK(cg_enter(cg));
	lis = socket(AF_INET, SOCK_STREAM, 0);
	ASSERT_TRUE(lis >= 0);
	ASSERT_OK(bind(lis, (void *)a, sizeof(*a)));
	ASSERT_OK(listen(lis, backlog));
	ASSERT_OK(getsockname(lis, (void *)a, &alen));
	ASSERT_OK(cg_leave());
	return lis;
}

int ingress_resting(const char *cg)
{
	struct tcpbuf_enforce_ctl ctl = {};
	uint32_t key = 0;
	char name[64];

	if (daemon_pinned_lookup("enforce_ctl", &key, &ctl))
		memset(&ctl, 0, sizeof(ctl));
	snprintf(name, sizeof(name), "ingress-%llu", (unsigned long long)cg_id(cg));
	return !link_pinned(name) && ctl.ingress_rests;
}

int ingress_rest_steady(const char *cg, int ms, int timeout_ms)
{
	int waited = 0, still = 0;

	while (still < ms) {
		if (waited >= timeout_ms)
			return -1;
		still = ingress_resting(cg) ? still + 10 : 0;
		msleep(10);
		waited += 10;
	}
	return waited;
}

int ingress_rest_wait(const char *cg, int want, int timeout_ms)
{
	int waited = 0;

	while (!ingress_resting(cg) != !want) {
		if (waited >= timeout_ms)
			return -1;
		msleep(5);
		waited += 5;
	}
	return waited;
}
