// SPDX-License-Identifier: GPL-2.0
/*
 * The control socket. Connections are served side by side from one epoll
 * set and never block the daemon: a client that is slow, silent or hostile
 * is cut off at its deadline, and meanwhile every other client, signal and
 * timer is served. The fd control_listen() returns is that epoll set.
 *
 * A connection reads its request until EOF (at most REQUEST_MAX_BYTES + 1
 * bytes, READ_TIMEOUT_MS in all), runs it, then writes the reply. A reply
 * is "CODE LENGTH\n" and LENGTH bytes of body: the length is how a client
 * tells a whole answer from one cut short (a status of 10,000 cgroups is
 * megabytes). A client that reads is given the time it needs, but one that
 * stops reading for WRITE_IDLE_MS, or takes more than WRITE_TIMEOUT_MS in
 * all, is cut off. If the client is still sending when the reply is out (a
 * request too large), the rest is read and dropped until it stops, so that
 * the client reads the reply rather than a reset.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <grp.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>
#include "control.h"
#include "log.h"
#include "peer_facts.h"

#define MAX_CONNS		64	/* more wait in the listen backlog */
#define TENANT_CONNS		32	/* the rest is the administrator's */
#define TENANT_RATE		20	/* requests per second per tenant, */
#define TENANT_BURST		40	/* after a burst of this many */
#define TENANT_BUCKETS		64
#define READ_TIMEOUT_MS		1000	/* connect to EOF of the request */
#define WRITE_IDLE_MS		5000	/* without reading any of the reply */
#define WRITE_TIMEOUT_MS	60000	/* to deliver the whole reply */
#define DRAIN_TIMEOUT_MS	1000	/* to stop sending after a refusal */

#define TAG_LISTEN	UINT32_MAX
#define TAG_TIMER	(UINT32_MAX - 1)

enum conn_state { CONN_FREE, CONN_READING, CONN_WRITING, CONN_DRAINING };

struct conn {
	enum conn_state state;
	int fd;
	struct peer peer;
	uint64_t deadline_ms;	/* CLOCK_MONOTONIC */
	uint64_t write_end_ms;	/* the latest deadline_ms while writing */
	char *buf;		/* the request, then the reply */
	size_t len, cap, sent;
	bool eof;		/* the client finished sending */
};

/* Requests a tenant (one cgroup namespace, or one host cgroup) may still make. */
struct bucket {
	uint64_t tenant;	/* 0: free */
	uint64_t last_ms;
	double tokens;
};

static struct {
	int ep, listen_fd, timer_fd;
	bool accepting;
	size_t n_conns, n_tenant_conns;
	struct conn conns[MAX_CONNS];
	struct bucket buckets[TENANT_BUCKETS];
	uint64_t refused, refused_said_ms;
} ctl = { .ep = -1, .listen_fd = -1, .timer_fd = -1 };

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int mkdir_parent(const char *path)
{
	char dir[PATH_MAX];
	char *slash;

	if (snprintf(dir, sizeof(dir), "%s", path) >= (int)sizeof(dir))
		return -ENAMETOOLONG;
	slash = strrchr(dir, '/');
	if (!slash || slash == dir)
		return 0;
	*slash = '\0';
	if (mkdir(dir, 0755) && errno != EEXIST)
		return -errno;
	return 0;
}

static int listen_socket(const char *path, unsigned mode, const char *group)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd, err;

	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	strcpy(sa.sun_path, path);
	err = mkdir_parent(path);
	if (err)
		return err;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	unlink(path); /* a stale socket of a previous run */
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)))
		goto fail;
	/* listen() last: until then a connect() is refused, so nobody (a test
	 * waiting for the socket, say) sees it before its mode and group. */
	if (chmod(path, mode))
		goto fail;
	if (group && *group) {
		struct group *g = getgrnam(group);

		if (!g) {
			errno = ENOENT;
			log_err("%s: unknown SocketGroup '%s'", path, group);
			goto fail;
		}
		if (chown(path, 0, g->gr_gid)) {
			/* The systemd unit has no CAP_CHOWN: a supplementary group will do. */
			if (errno == EPERM) {
				log_err("%s: cannot hand the socket to group %s without CAP_CHOWN; "
					"under systemd add SupplementaryGroups=%s to the unit",
					path, group, group);
				errno = EPERM;
			}
			goto fail;
		}
	}
	if (listen(fd, 64))
		goto fail;
	return fd;
fail:
	err = -errno;
	close(fd);
	return err;
}

static int ep_ctl(int op, int fd, uint32_t events, uint32_t tag)
{
	struct epoll_event ev = { .events = events, .data.u32 = tag };

	return epoll_ctl(ctl.ep, op, fd, &ev) ? -errno : 0;
}

int control_listen(const char *path, unsigned mode, const char *group)
{
	int err;

	ctl.listen_fd = listen_socket(path, mode, group);
	if (ctl.listen_fd < 0)
		return ctl.listen_fd;
	ctl.ep = epoll_create1(EPOLL_CLOEXEC);
	ctl.timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	if (ctl.ep < 0 || ctl.timer_fd < 0) {
		err = -errno;
		goto fail;
	}
	err = ep_ctl(EPOLL_CTL_ADD, ctl.listen_fd, EPOLLIN, TAG_LISTEN);
	if (!err)
		err = ep_ctl(EPOLL_CTL_ADD, ctl.timer_fd, EPOLLIN, TAG_TIMER);
	if (err)
		goto fail;
	ctl.accepting = true;
	return ctl.ep;
fail:
	control_close(-1, NULL);
	unlink(path);
	return err;
}

static void conn_close(struct conn *c)
{
	close(c->fd); /* also leaves the epoll set */
	free(c->buf);
	if (!c->peer.admin)
		ctl.n_tenant_conns--;
	*c = (struct conn){ .state = CONN_FREE, .fd = -1 };
	ctl.n_conns--;
}

static uint64_t tenant_key(const struct peer *p)
{
	if (p->facts_err)
		return 1; /* the unknown share one bucket */
	/* A container is its cgroup namespace; on the host, a user. */
	return (uint64_t)p->facts.cgroup_ns << 32 | p->uid;
}

/* Take one request from the tenant's bucket: false when it has none left. */
static bool tenant_may_ask(const struct peer *p, uint64_t now)
{
	struct bucket *b = NULL, *oldest = &ctl.buckets[0];
	uint64_t key = tenant_key(p);

	for (size_t i = 0; i < TENANT_BUCKETS && !b; i++) {
		if (ctl.buckets[i].tenant == key)
			b = &ctl.buckets[i];
		else if (ctl.buckets[i].last_ms < oldest->last_ms)
			oldest = &ctl.buckets[i];
	}
	if (!b) {
		b = oldest;
		*b = (struct bucket){ .tenant = key, .last_ms = now, .tokens = TENANT_BURST };
	}
	b->tokens += (now - b->last_ms) * TENANT_RATE / 1000.0;
	if (b->tokens > TENANT_BURST)
		b->tokens = TENANT_BURST;
	b->last_ms = now;
	if (b->tokens < 1)
		return false;
	b->tokens--;
	return true;
}

/* A tenant over its share: one line, no slot, and a log line at most every 10 s. */
static void refuse_busy(int fd, const struct peer *p, uint64_t now)
{
	static const char why[] = "busy: too many requests from this container; try again later\n";
	char msg[128];
	int n = snprintf(msg, sizeof(msg), "1 %zu\n%s", sizeof(why) - 1, why);

	if (send(fd, msg, n, MSG_NOSIGNAL | MSG_DONTWAIT) < 0) {
		/* the client will see the connection closed */
	}
	shutdown(fd, SHUT_WR);
	close(fd);
	ctl.refused++;
	if (now >= ctl.refused_said_ms + 10000) {
		log_warn("control socket: refused %llu requests of tenants over their share "
			 "(last: pid %d, uid %u)", (unsigned long long)ctl.refused, p->pid, p->uid);
		ctl.refused = 0;
		ctl.refused_said_ms = now;
	}
}

void control_close(int fd, const char *path)
{
	size_t i;

	(void)fd; /* ctl.ep */
	for (i = 0; i < MAX_CONNS; i++)
		if (ctl.conns[i].state != CONN_FREE)
			conn_close(&ctl.conns[i]);
	if (ctl.listen_fd >= 0)
		close(ctl.listen_fd);
	if (ctl.timer_fd >= 0)
		close(ctl.timer_fd);
	if (ctl.ep >= 0)
		close(ctl.ep);
	ctl.listen_fd = ctl.timer_fd = ctl.ep = -1;
	if (path)
		unlink(path);
}

static void accept_new(void)
{
	struct peer peer;
	uint64_t now;
	size_t i;
	int fd;

	while (ctl.n_conns < MAX_CONNS) {
		fd = accept4(ctl.listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
		if (fd < 0) {
			if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED)
				log_warn("control socket: accept: %s", strerror(errno));
			return;
		}
		/* Who connected, as the kernel recorded it at connect(). */
		if (peer_identify(fd, &peer)) {
			close(fd);
			continue;
		}
		now = now_ms();
		if (!peer.admin &&
		    (ctl.n_tenant_conns >= TENANT_CONNS || !tenant_may_ask(&peer, now))) {
			refuse_busy(fd, &peer, now);
			continue;
		}
		for (i = 0; ctl.conns[i].state != CONN_FREE; i++)
			;
		if (ep_ctl(EPOLL_CTL_ADD, fd, EPOLLIN, i)) {
			close(fd);
			continue;
		}
		ctl.conns[i] = (struct conn){
			.state = CONN_READING, .fd = fd,
			.peer = peer,
			.deadline_ms = now + READ_TIMEOUT_MS,
		};
		ctl.n_conns++;
		ctl.n_tenant_conns += !peer.admin;
	}
	/* Full: leave the rest in the backlog until a connection ends. */
	if (ctl.accepting && !ep_ctl(EPOLL_CTL_MOD, ctl.listen_fd, 0, TAG_LISTEN))
		ctl.accepting = false;
}

/* Replace the request with the reply: "CODE LENGTH\n", then the body. */
static void set_reply(struct conn *c, int code, const char *body, size_t len)
{
	char head[32];
	int n = snprintf(head, sizeof(head), "%d %zu\n", code, len);
	char *buf = malloc(n + len);

	free(c->buf);
	c->buf = buf;
	c->len = c->sent = 0;
	c->cap = buf ? n + len : 0;
	if (!buf)
		return; /* nothing to say: the connection closes */
	memcpy(buf, head, n);
	memcpy(buf + n, body, len);
	c->len = n + len;
}

/* A one-line refusal or failure: "why\n", control characters of names in
 * it (a tenant's choice) escaped for the terminal it goes to. */
static void set_error(struct conn *c, int code, const char *why)
{
	char line[600];
	int n = 0;

	for (; *why && n < (int)sizeof(line) - 6; why++) {
		unsigned char ch = *why;

		if (ch < 0x20 || ch == 0x7f)
			n += snprintf(line + n, sizeof(line) - n, "\\x%02x", ch);
		else
			line[n++] = ch;
	}
	line[n++] = '\n';
	set_reply(c, code, line, n);
}

static void run_request(struct conn *c, control_handler handler, void *ctx)
{
	struct request req;
	char err[512] = "";
	char *out = NULL;
	size_t out_len = 0;
	FILE *f;
	int code;

	if (c->len > REQUEST_MAX_BYTES) {
		snprintf(err, sizeof(err), "request: message larger than %d bytes", REQUEST_MAX_BYTES);
		set_error(c, 2, err);
		return;
	}
	if (!c->eof) {
		snprintf(err, sizeof(err), "request: not finished within %d ms (send the words, "
			 "then shut down the sending side)", READ_TIMEOUT_MS);
		set_error(c, 2, err);
		return;
	}
	if (request_parse(c->buf, c->len, &req, err, sizeof(err))) {
		set_error(c, 2, err);
		return;
	}
	f = open_memstream(&out, &out_len);
	if (!f) {
		request_free(&req);
		set_error(c, 1, "out of memory");
		return;
	}
	code = handler(ctx, &req, &c->peer, f, err, sizeof(err));
	request_free(&req);
	if (fclose(f)) {
		free(out);
		set_error(c, 1, "out of memory");
		return;
	}
	if (code)
		set_error(c, code, err[0] ? err : "failed");
	else
		set_reply(c, 0, out, out_len);
	free(out);
}

static void start_reply(struct conn *c, control_handler handler, void *ctx)
{
	uint64_t now;

	run_request(c, handler, ctx);
	now = now_ms();
	c->state = CONN_WRITING;
	c->write_end_ms = now + WRITE_TIMEOUT_MS;
	c->deadline_ms = now + WRITE_IDLE_MS;
	if (ep_ctl(EPOLL_CTL_MOD, c->fd, EPOLLOUT, c - ctl.conns))
		conn_close(c);
}

static void on_readable(struct conn *c, control_handler handler, void *ctx)
{
	char sink[4096];
	ssize_t n;

	for (;;) {
		if (c->state == CONN_DRAINING) {
			n = recv(c->fd, sink, sizeof(sink), MSG_DONTWAIT);
		} else {
			if (c->len == c->cap) {
				size_t cap = c->cap ? c->cap * 2 : 1024;
				char *p;

				if (cap > REQUEST_MAX_BYTES + 1)
					cap = REQUEST_MAX_BYTES + 1;
				p = realloc(c->buf, cap);
				if (!p) {
					conn_close(c);
					return;
				}
				c->buf = p;
				c->cap = cap;
			}
			n = recv(c->fd, c->buf + c->len, c->cap - c->len, MSG_DONTWAIT);
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return;
		if (n <= 0) {
			if (n < 0 || c->state == CONN_DRAINING) {
				conn_close(c);
				return;
			}
			c->eof = true;
			start_reply(c, handler, ctx);
			return;
		}
		if (c->state == CONN_DRAINING)
			continue;
		c->len += n;
		if (c->len > REQUEST_MAX_BYTES) {
			start_reply(c, handler, ctx); /* too large: no need to wait for the rest */
			return;
		}
	}
}

static void on_writable(struct conn *c)
{
	ssize_t n;

	while (c->sent < c->len) {
		n = send(c->fd, c->buf + c->sent, c->len - c->sent, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return;
		if (n <= 0) {
			conn_close(c);
			return;
		}
		c->sent += n;
		/* The client reads: it has WRITE_IDLE_MS more, within its total. */
		c->deadline_ms = now_ms() + WRITE_IDLE_MS;
		if (c->deadline_ms > c->write_end_ms)
			c->deadline_ms = c->write_end_ms;
	}
	if (c->eof) {
		conn_close(c);
		return;
	}
	/* The client is still sending: read and drop it until it stops. */
	shutdown(c->fd, SHUT_WR);
	c->state = CONN_DRAINING;
	c->deadline_ms = now_ms() + DRAIN_TIMEOUT_MS;
	if (ep_ctl(EPOLL_CTL_MOD, c->fd, EPOLLIN, c - ctl.conns))
		conn_close(c);
}

static void expire(control_handler handler, void *ctx)
{
	uint64_t now = now_ms(), next = 0;
	struct itimerspec its = {};
	size_t i;

	for (i = 0; i < MAX_CONNS; i++) {
		struct conn *c = &ctl.conns[i];

		if (c->state == CONN_FREE || c->deadline_ms > now)
			continue;
		if (c->state == CONN_READING) {
			log_debug("control socket: pid %d sent no complete request within %d ms",
				  c->peer.pid, READ_TIMEOUT_MS);
			start_reply(c, handler, ctx);
			if (c->state == CONN_WRITING)
				on_writable(c);
		} else {
			if (c->state == CONN_WRITING)
				log_warn("control socket: pid %d read %zu of the %zu bytes of its reply "
					 "in time; cut off", c->peer.pid, c->sent, c->len);
			conn_close(c);
		}
	}
	/* One timer for the earliest deadline. */
	for (i = 0; i < MAX_CONNS; i++)
		if (ctl.conns[i].state != CONN_FREE &&
		    (!next || ctl.conns[i].deadline_ms < next))
			next = ctl.conns[i].deadline_ms;
	if (next) {
		its.it_value.tv_sec = next / 1000;
		its.it_value.tv_nsec = next % 1000 * 1000000;
	}
	timerfd_settime(ctl.timer_fd, TFD_TIMER_ABSTIME, &its, NULL);
}

int control_serve(int fd, control_handler handler, void *ctx)
{
	struct epoll_event events[16];
	uint64_t ticks;
	int n, i;

	n = epoll_wait(fd, events, 16, 0);
	if (n < 0)
		return errno == EINTR ? 0 : -errno;
	for (i = 0; i < n; i++) {
		uint32_t tag = events[i].data.u32;
		struct conn *c;

		if (tag == TAG_LISTEN) {
			accept_new();
			continue;
		}
		if (tag == TAG_TIMER) {
			if (read(ctl.timer_fd, &ticks, sizeof(ticks)) < 0) {
				/* nothing due yet */
			}
			continue;
		}
		c = &ctl.conns[tag];
		if (c->state == CONN_READING || c->state == CONN_DRAINING)
			on_readable(c, handler, ctx);
		else if (c->state == CONN_WRITING)
			on_writable(c);
	}
	expire(handler, ctx);
	if (!ctl.accepting && ctl.n_conns < MAX_CONNS &&
	    !ep_ctl(EPOLL_CTL_MOD, ctl.listen_fd, EPOLLIN, TAG_LISTEN))
		ctl.accepting = true;
	return 0;
}
