// SPDX-License-Identifier: GPL-2.0
/* Loopback TCP load: see load.h. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "load.h"
#include "harness.h"

#include <errno.h>
#include <linux/capability.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <fcntl.h>
#include <inttypes.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <arpa/inet.h>
#include <unistd.h>

#define CHUNK	65536

static uint8_t pat[PATTERN_PERIOD + PATTERN_RUN];

void pattern_init(void)
{
	uint32_t x = 2463534242u;

	for (int k = 0; k < PATTERN_PERIOD; k++) {
		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		pat[k] = (uint8_t)(x >> 24);
	}
	for (int j = 0; j < PATTERN_RUN; j++)
		pat[PATTERN_PERIOD + j] = pat[j];
}

const uint8_t *pattern_at(int conn, uint64_t off)
{
	return pat + (off + (uint64_t)conn * 7919u) % PATTERN_PERIOD;
}

/* Mark the first byte of @buf that is not connection @conn's from rx->received. */
static void pattern_check(int conn, struct pattern_rx *rx, const uint8_t *buf, size_t n)
{
	for (size_t k = 0; k < n && !rx->bad; k += PATTERN_RUN) {
		size_t m = n - k < PATTERN_RUN ? n - k : PATTERN_RUN;
		const uint8_t *want = pattern_at(conn, rx->received + k);

		if (memcmp(buf + k, want, m)) {
			size_t j = 0;

			while (buf[k + j] == want[j])
				j++;
			rx->bad = PATTERN_WRONG_BYTE;
			rx->bad_off = rx->received + k + j;
		}
	}
}

uint64_t pattern_pull(int fd, int conn, struct pattern_rx *rx, int64_t limit, size_t chunk)
{
	static uint8_t buf[256 * 1024];
	uint64_t got = 0;

	if (chunk > sizeof(buf))
		chunk = sizeof(buf);
	while (!rx->eof && limit != 0) {
		size_t want = chunk;
		ssize_t r;

		if (limit > 0 && (uint64_t)limit < want)
			want = limit;
		r = recv(fd, buf, want, MSG_DONTWAIT);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN && errno != EWOULDBLOCK) {
				rx->eof = 1;
				if (!rx->bad) {
					rx->bad = PATTERN_RECV_ERROR;
					rx->bad_off = rx->received;
				}
			}
			break;
		}
		if (r == 0) {
			rx->eof = 1;
			break;
		}
		pattern_check(conn, rx, buf, r);
		rx->received += r;
		got += r;
		if (limit > 0)
			limit -= r;
	}
	return got;
}

const char *pattern_error(const struct pattern_rx *rx)
{
	return rx->bad == PATTERN_WRONG_BYTE ? "wrong byte" :
	       rx->bad == PATTERN_RECV_ERROR ? "receive error" : NULL;
}

/* --------------------------------------------------------------- helpers */

int lo_up(void)
{
	struct ifreq ifr;
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	int ret = 0;

	if (fd < 0)
		return -1;
	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "lo");
	if (ioctl(fd, SIOCGIFFLAGS, &ifr)) {
		ret = -1;
	} else if (!(ifr.ifr_flags & IFF_UP)) {
		ifr.ifr_flags |= IFF_UP;
		ret = ioctl(fd, SIOCSIFFLAGS, &ifr);
	}
	close(fd);
	return ret;
}

int netns_enter_new(int drop_caps)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[2] = {};

	if (unshare(CLONE_NEWNET) || lo_up())
		return -1;
	if (!drop_caps)
		return 0;
	for (int c = 0; c <= 63; c++)
		if (prctl(PR_CAPBSET_DROP, c, 0, 0, 0) && errno != EINVAL)
			return -1;
	return (int)syscall(SYS_capset, &h, d);
}

socklen_t loopback_addr(int family, struct sockaddr_storage *ss, uint16_t port)
{
	memset(ss, 0, sizeof(*ss));
	if (family == AF_INET6) {
		struct sockaddr_in6 *a = (struct sockaddr_in6 *)ss;

		a->sin6_family = AF_INET6;
		a->sin6_addr = in6addr_loopback;
		a->sin6_port = htons(port);
		return sizeof(*a);
	} else {
		struct sockaddr_in *a = (struct sockaddr_in *)ss;

		a->sin_family = AF_INET;
		a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		a->sin_port = htons(port);
		return sizeof(*a);
	}
}

int ipv6_available(void)
{
	struct sockaddr_storage ss;
	socklen_t len = loopback_addr(AF_INET6, &ss, 0);
	int fd = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int ok;

	lo_up();
	if (fd < 0)
		return 0;
	ok = bind(fd, (struct sockaddr *)&ss, len) == 0;
	close(fd);
	return ok;
}

/* Listener on the loopback address, ephemeral port; -1 on error. */
static int make_listener(int family, int backlog, int rcvbuf, uint16_t *port)
{
	struct sockaddr_storage ss;
	socklen_t len = loopback_addr(family, &ss, 0);
	int fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -1;
	if (rcvbuf > 0)
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
	if (bind(fd, (struct sockaddr *)&ss, len) || listen(fd, backlog) ||
	    getsockname(fd, (struct sockaddr *)&ss, &len)) {
		int e = errno;

		close(fd);
		errno = e;
		return -1;
	}
	*port = ntohs(family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
					 : ((struct sockaddr_in *)&ss)->sin_port);
	return fd;
}

static int join_cgroup(const char *cg)
{
	if (!cg)
		return 0;
	return cg_enter(cg);
}

static void raise_nofile(void)
{
	struct rlimit r;

	if (getrlimit(RLIMIT_NOFILE, &r) == 0 && r.rlim_cur < r.rlim_max) {
		r.rlim_cur = r.rlim_max;
		setrlimit(RLIMIT_NOFILE, &r);
	}
}

/* ------------------------------------------------------------------ child */

struct conn {
	int snd, rcv;
	uint64_t sent;
	int snd_done;		/* cap reached or shut down */
	struct pattern_rx rx;
};

static struct conn *conns;
static int nconns;
static int rep;			/* report pipe */
static int cmd;			/* command pipe */
static struct load_opts opt;

static void child_vreport(int fd, const char *fmt, va_list ap)
{
	char line[512];
	int n = vsnprintf(line, sizeof(line) - 1, fmt, ap);

	if (n < 0)
		return;
	if (n > (int)sizeof(line) - 2)
		n = sizeof(line) - 2;
	line[n++] = '\n';
	if (write(fd, line, n) != n)
		_exit(3);
}

void child_report(int fd, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	child_vreport(fd, fmt, ap);
	va_end(ap);
}

__attribute__((format(printf, 1, 2)))
static void report(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	child_vreport(rep, fmt, ap);
	va_end(ap);
}

static uint64_t total_sent(void)
{
	uint64_t s = 0;

	for (int i = 0; i < nconns; i++)
		s += conns[i].sent;
	return s;
}

static uint64_t total_received(void)
{
	uint64_t s = 0;

	for (int i = 0; i < nconns; i++)
		s += conns[i].rx.received;
	return s;
}

/* Write to connection i until EAGAIN or the cap.  Bytes written. */
static uint64_t push(int i)
{
	struct conn *c = &conns[i];
	uint64_t wrote = 0;

	while (!c->snd_done) {
		size_t n = CHUNK;
		ssize_t r;

		if (opt.bytes && opt.bytes - c->sent < n)
			n = opt.bytes - c->sent;
		if (n == 0) {
			c->snd_done = 1;
			break;
		}
		r = send(c->snd, pattern_at(i, c->sent), n, MSG_DONTWAIT | MSG_NOSIGNAL);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN && errno != EWOULDBLOCK) {
				report("error send on connection %d: %s", i, strerror(errno));
				_exit(2);
			}
			break;
		}
		c->sent += r;
		wrote += r;
		if (opt.bytes && c->sent >= opt.bytes)
			c->snd_done = 1;
	}
	return wrote;
}

/* Read what is there on connection i and verify it.  Returns bytes. */
static uint64_t pull(int i)
{
	return pattern_pull(conns[i].rcv, i, &conns[i].rx, -1, CHUNK);
}

/*
 * Stalled fill: push until nothing more was written for settle_ms.  (Not
 * "no POLLOUT for settle_ms": under memory pressure poll() can report
 * writable while send() still fails with EAGAIN.)
 */
static void fill(void)
{
	double start = now_sec(), last = start;
	double settle = opt.settle_ms / 1000.0;
	struct pollfd *pf = calloc(nconns, sizeof(*pf));
	int timed_out = 0;

	for (;;) {
		uint64_t wrote = 0;
		int n = 0, r;

		for (int i = 0; i < nconns; i++)
			wrote += push(i);
		if (wrote)
			last = now_sec();
		for (int i = 0; i < nconns; i++) {
			if (conns[i].snd_done)
				continue;
			pf[n].fd = conns[i].snd;
			pf[n].events = POLLOUT;
			pf[n].revents = 0;
			n++;
		}
		if (n == 0 || now_sec() - last >= settle)
			break;
		if (now_sec() - start > opt.fill_timeout_ms / 1000.0) {
			timed_out = 1;
			break;
		}
		r = poll(pf, n, 50);
		if (r > 0 && !wrote)
			msleep(5);	/* writable but nothing fits: do not spin */
	}
	free(pf);
	report("filled %" PRIu64 " %" PRIu64 " %d", total_sent(), total_received(), timed_out);
}

/* Steady flow: pump senders and receivers until a command arrives.
 * Reports "filled" once every connection has delivered something. */
static void flow(int *reported)
{
	struct pollfd *pf = calloc(2 * nconns + 1, sizeof(*pf));
	double start = now_sec();

	for (;;) {
		int n = 0;

		pf[n].fd = cmd;
		pf[n].events = POLLIN;
		n++;
		for (int i = 0; i < nconns; i++) {
			if (!conns[i].snd_done) {
				pf[n].fd = conns[i].snd;
				pf[n].events = POLLOUT;
				n++;
			}
			if (!conns[i].rx.eof) {
				pf[n].fd = conns[i].rcv;
				pf[n].events = POLLIN;
				n++;
			}
		}
		for (int i = 0; i < n; i++)
			pf[i].revents = 0;
		if (poll(pf, n, 100) < 0 && errno != EINTR)
			break;
		for (int i = 0; i < nconns; i++) {
			push(i);
			pull(i);
		}
		if (!*reported) {
			int all = 1;

			for (int i = 0; i < nconns; i++)
				if (conns[i].rx.received == 0 &&
				    !(opt.bytes && conns[i].snd_done &&
				      conns[i].rx.received == conns[i].sent))
					all = 0;
			if ((all && now_sec() - start >= opt.settle_ms / 1000.0) ||
			    now_sec() - start > opt.fill_timeout_ms / 1000.0) {
				report("filled %" PRIu64 " %" PRIu64 " %d", total_sent(),
				       total_received(), !all);
				*reported = 1;
			}
		}
		if (pf[0].revents)
			break;
	}
	free(pf);
}

static void resume(int timeout_ms)
{
	double deadline = now_sec() + timeout_ms / 1000.0;
	struct pollfd *pf = calloc(nconns, sizeof(*pf));
	char msg[200] = "";
	int ok = 1;

	for (int i = 0; i < nconns; i++) {
		conns[i].snd_done = 1;
		shutdown(conns[i].snd, SHUT_WR);
	}
	for (;;) {
		int n = 0;

		for (int i = 0; i < nconns; i++)
			pull(i);
		for (int i = 0; i < nconns; i++) {
			if (conns[i].rx.eof)
				continue;
			pf[n].fd = conns[i].rcv;
			pf[n].events = POLLIN;
			pf[n].revents = 0;
			n++;
		}
		if (n == 0)
			break;
		if (now_sec() > deadline) {
			snprintf(msg, sizeof(msg), "timeout: %d connection(s) not drained after %d ms",
				 n, timeout_ms);
			ok = 0;
			break;
		}
		poll(pf, n, 100);
	}
	free(pf);
	for (int i = 0; i < nconns && ok; i++) {
		struct conn *c = &conns[i];

		if (c->rx.bad) {
			snprintf(msg, sizeof(msg), "connection %d: %s at offset %" PRIu64,
				 i, pattern_error(&c->rx), c->rx.bad_off);
			ok = 0;
		} else if (c->rx.received != c->sent) {
			snprintf(msg, sizeof(msg), "connection %d: received %" PRIu64 " of %" PRIu64
				 " bytes", i, c->rx.received, c->sent);
			ok = 0;
		}
	}
	report("result %s %" PRIu64 " %" PRIu64 " %s", ok ? "OK" : "BAD", total_received(),
	       total_sent(), msg);
}

/* Read one command line; returns 0 on EOF. */
static int read_cmd(char *buf, size_t len)
{
	size_t n = 0;

	while (n + 1 < len) {
		ssize_t r = read(cmd, buf + n, 1);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return 0;
		if (buf[n] == '\n')
			break;
		n++;
	}
	buf[n] = 0;
	return 1;
}

static void child_main(void)
{
	struct sockaddr_storage ss;
	socklen_t alen;
	uint16_t port;
	int lfd, one = 1, reported = 0;
	char c[64];

	pattern_init();
	if (join_cgroup(opt.cgroup)) {
		report("error cannot join cgroup %s: %s", opt.cgroup, strerror(errno));
		_exit(2);
	}
	raise_nofile();
	if (opt.netns && netns_enter_new(opt.drop_caps)) {
		report("error cannot make a network namespace: %s", strerror(errno));
		_exit(2);
	}
	conns = calloc(opt.nconn, sizeof(*conns));
	lfd = make_listener(opt.family, opt.nconn + 16, opt.rcvbuf, &port);
	if (lfd < 0) {
		report("error listen: %s", strerror(errno));
		_exit(2);
	}
	alen = loopback_addr(opt.family, &ss, port);
	for (int i = 0; i < opt.nconn; i++) {
		struct conn *k = &conns[i];

		k->snd = socket(opt.family, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (k->snd < 0) {
			report("error socket: %s", strerror(errno));
			_exit(2);
		}
		if (opt.sndbuf > 0)
			setsockopt(k->snd, SOL_SOCKET, SO_SNDBUF, &opt.sndbuf, sizeof(opt.sndbuf));
		if (connect(k->snd, (struct sockaddr *)&ss, alen)) {
			report("error connect %d: %s", i, strerror(errno));
			_exit(2);
		}
		k->rcv = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
		if (k->rcv < 0) {
			report("error accept %d: %s", i, strerror(errno));
			_exit(2);
		}
		setsockopt(k->snd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		fcntl(k->snd, F_SETFL, O_NONBLOCK);
		fcntl(k->rcv, F_SETFL, O_NONBLOCK);
		nconns++;
	}
	report("ready %d %d", nconns, (int)port);

	if (opt.readers)
		flow(&reported);
	else
		fill();

	while (read_cmd(c, sizeof(c))) {
		if (!strncmp(c, "fill", 4)) {
			if (opt.readers) {
				report("filled %" PRIu64 " %" PRIu64 " 0", total_sent(),
				       total_received());
				flow(&reported);
			} else {
				fill();
			}
		} else if (!strncmp(c, "resume", 6)) {
			resume(atoi(c + 6) > 0 ? atoi(c + 6) : 60000);
		} else if (!strncmp(c, "close", 5)) {
			for (int i = 0; i < nconns; i++) {
				close(conns[i].rcv);
				close(conns[i].snd);
			}
			close(lfd);
			report("closed");
			_exit(0);
		} else if (opt.readers && !reported) {
			flow(&reported);
		}
	}
	_exit(0);
}

/* ----------------------------------------------------------------- parent */

/* Next report line within timeout_ms; 0 or -1 (EOF/timeout). */
static int read_report(struct load *l, char *line, size_t len, int timeout_ms)
{
	double deadline = now_sec() + timeout_ms / 1000.0;

	for (;;) {
		char *nl = memchr(l->buf, '\n', l->blen);
		struct pollfd pf = { l->rep_fd, POLLIN, 0 };
		ssize_t r;
		int left;

		if (nl) {
			size_t n = (size_t)(nl - l->buf);

			if (n >= len)
				n = len - 1;
			memcpy(line, l->buf, n);
			line[n] = 0;
			l->blen -= (size_t)(nl + 1 - l->buf);
			memmove(l->buf, nl + 1, l->blen);
			return 0;
		}
		if (l->blen >= sizeof(l->buf) - 1)
			l->blen = 0;
		left = (int)((deadline - now_sec()) * 1000);
		if (left <= 0) {
			fprintf(stderr, "load: child %d did not answer within %d ms\n",
				(int)l->pid, timeout_ms);
			return -1;
		}
		if (poll(&pf, 1, left) <= 0)
			continue;
		r = read(l->rep_fd, l->buf + l->blen, sizeof(l->buf) - 1 - l->blen);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			fprintf(stderr, "load: child %d exited unexpectedly\n", (int)l->pid);
			return -1;
		}
		l->blen += (size_t)r;
	}
}

static int send_cmd(struct load *l, const char *c)
{
	size_t n = strlen(c);

	return write(l->cmd_fd, c, n) == (ssize_t)n ? 0 : -1;
}

static void load_free(struct load *l)
{
	close(l->cmd_fd);
	close(l->rep_fd);
	free(l);
}

struct load *load_start(const struct load_opts *o)
{
	struct load *l = calloc(1, sizeof(*l));
	int pc[2], pr[2];
	char line[512];

	l->o = *o;
	if (l->o.nconn <= 0)
		l->o.nconn = 1;
	if (!l->o.family)
		l->o.family = AF_INET;
	if (l->o.settle_ms <= 0)
		l->o.settle_ms = 300;
	if (l->o.fill_timeout_ms <= 0)
		l->o.fill_timeout_ms = 20000;
	lo_up();
	if (pipe2(pc, O_CLOEXEC) || pipe2(pr, O_CLOEXEC)) {
		fprintf(stderr, "load: pipe: %s\n", strerror(errno));
		free(l);
		return NULL;
	}
	l->pid = test_fork(1);
	if (l->pid < 0) {
		fprintf(stderr, "load: fork: %s\n", strerror(errno));
		free(l);
		return NULL;
	}
	if (l->pid == 0) {
		close(pc[1]);
		close(pr[0]);
		cmd = pc[0];
		rep = pr[1];
		opt = l->o;
		child_main();
		_exit(0);
	}
	close(pc[0]);
	close(pr[1]);
	l->cmd_fd = pc[1];
	l->rep_fd = pr[0];
	if (read_report(l, line, sizeof(line), 30000) || strncmp(line, "ready ", 6)) {
		fprintf(stderr, "load: child failed to start: %s\n",
			strncmp(line, "error ", 6) ? line : line + 6);
		load_kill(l);
		return NULL;
	}
	return l;
}

static int wait_filled(struct load *l, int timeout_ms)
{
	char line[512];
	uint64_t s, r;
	int t;

	if (timeout_ms <= 0)
		timeout_ms = l->o.fill_timeout_ms + 10000;
	if (read_report(l, line, sizeof(line), timeout_ms))
		return -1;
	if (sscanf(line, "filled %" SCNu64 " %" SCNu64 " %d", &s, &r, &t) != 3) {
		fprintf(stderr, "load: unexpected report: %s\n", line);
		return -1;
	}
	l->sent = s;
	l->received = r;
	l->timed_out = t;
	return 0;
}

int load_wait_filled(struct load *l, int timeout_ms)
{
	return wait_filled(l, timeout_ms);
}

int load_fill_more(struct load *l, int timeout_ms)
{
	if (send_cmd(l, "fill\n"))
		return -1;
	return wait_filled(l, timeout_ms);
}

int load_resume_and_verify(struct load *l, int timeout_ms)
{
	char line[512], c[32], res[8];
	uint64_t r, s;
	int off = 0;

	if (timeout_ms <= 0)
		timeout_ms = 60000;
	snprintf(c, sizeof(c), "resume %d\n", timeout_ms);
	l->ok = 0;
	if (send_cmd(l, c) || read_report(l, line, sizeof(line), timeout_ms + 10000)) {
		snprintf(l->msg, sizeof(l->msg), "no result from the load child");
		return -1;
	}
	if (sscanf(line, "result %7s %" SCNu64 " %" SCNu64 " %n", res, &r, &s, &off) < 3) {
		snprintf(l->msg, sizeof(l->msg), "unexpected report: %.200s", line);
		return -1;
	}
	l->received = r;
	l->sent = s;
	l->ok = !strcmp(res, "OK");
	snprintf(l->msg, sizeof(l->msg), "%s", off ? line + off : "");
	return l->ok ? 0 : -1;
}

int load_close(struct load *l)
{
	char line[64];
	int st, ret = 0;

	if (!l)
		return -1;
	if (send_cmd(l, "close\n") || read_report(l, line, sizeof(line), 30000) ||
	    strcmp(line, "closed")) {
		kill(l->pid, SIGKILL);
		ret = -1;
	}
	st = test_reap(l->pid);
	if (st < 0 || !WIFEXITED(st) || WEXITSTATUS(st))
		ret = -1;
	load_free(l);
	return ret;
}

void load_kill(struct load *l)
{
	if (!l)
		return;
	kill(l->pid, SIGKILL);
	test_reap(l->pid);
	load_free(l);
}

/* ------------------------------------------------------ short connections */

static int short_child(const char *cgroup, int family, int n)
{
	struct sockaddr_storage ss;
	struct linger lg = { 1, 0 };
	char out[16], in[16];
	socklen_t alen;
	uint16_t port;
	int lfd;

	if (join_cgroup(cgroup))
		return 1;
	lfd = make_listener(family, 128, 0, &port);
	if (lfd < 0) {
		perror("short_connections: listen");
		return 1;
	}
	alen = loopback_addr(family, &ss, port);
	for (int i = 0; i < n; i++) {
		int c = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0), s;

		snprintf(out, sizeof(out), "conn%011d", i);
		if (c < 0 || connect(c, (struct sockaddr *)&ss, alen)) {
			fprintf(stderr, "short_connections: connect %d: %s\n", i, strerror(errno));
			return 1;
		}
		s = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
		if (s < 0 ||
		    write(c, out, 16) != 16 || recv(s, in, 16, MSG_WAITALL) != 16 ||
		    memcmp(in, out, 16) ||
		    write(s, in, 16) != 16 || recv(c, in, 16, MSG_WAITALL) != 16 ||
		    memcmp(in, out, 16)) {
			fprintf(stderr, "short_connections: exchange %d failed: %s\n", i,
				strerror(errno));
			return 1;
		}
		if (i % 4 == 3) {
			/* abort: RST, no TIME_WAIT anywhere */
			setsockopt(c, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
			close(c);
			close(s);
		} else {
			/* the accepted end closes first and keeps the TIME_WAIT */
			close(s);
			if (recv(c, in, 1, 0) != 0) {
				fprintf(stderr, "short_connections: no EOF on %d\n", i);
				return 1;
			}
			close(c);
		}
	}
	close(lfd);
	return 0;
}

int short_connections_ex(const char *cgroup, int family, int n, double *secs)
{
	double t0 = now_sec();
	pid_t pid;
	int st;

	lo_up();
	pid = test_fork(1);
	if (pid < 0)
		return -1;
	if (pid == 0)
		_exit(short_child(cgroup, family ? family : AF_INET, n));
	st = test_reap(pid);
	if (secs)
		*secs = now_sec() - t0;
	return st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -1;
}

int short_connections(const char *cgroup, int n)
{
	return short_connections_ex(cgroup, AF_INET, n, NULL);
}
