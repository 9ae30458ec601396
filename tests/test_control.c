// SPDX-License-Identifier: GPL-2.0
/*
 * Garbage on the control socket. Whatever a peer sends, tcpbufd must not
 * crash, must answer a finished request with a status line "CODE LENGTH"
 * and exactly LENGTH bytes of body (CODE 2 for anything request_parse()
 * refuses, one line saying why), must cut off a client that never finishes
 * after about a second without holding up the others, must not leak a descriptor per connection, and must end with the
 * same state (status --json, drop-ins, state file) it started with.
 *
 * Cases: random bytes; a request of exactly REQUEST_MAX_BYTES (accepted)
 * and one byte more, and 1 MiB (refused); embedded NULs; partial messages
 * closed without EOF; clients that send nothing or trickle bytes without
 * ever shutting down their side, while other clients are served; 2000
 * connections in a row.
 */
#define _GNU_SOURCE
#include "harness.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "../src/request.h"

#define SILENT_CLIENTS 10

struct reply {
	int code;		/* the status digit, -1 if none came */
	char *body;		/* after the status line, NUL-terminated */
	size_t len;		/* bytes received in all */
	double secs;		/* from connect to EOF from the daemon */
	int err;		/* errno of a failed recv, 0 */
};

static int sock_connect(void)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	ASSERT_TRUE(fd >= 0);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", daemon_socket_path());
	ASSERT_OK(connect(fd, (struct sockaddr *)&sa, sizeof(sa)));
	return fd;
}

/* "CODE LENGTH\n" and exactly LENGTH bytes of body, else code -1 (and the whole
 * reply as the body, to show). */
static void reply_parse(struct reply *r, char *buf, size_t len)
{
	char *nl, *end;
	unsigned long long body_len;

	buf[len] = '\0';
	r->len = len;
	r->code = -1;
	nl = memchr(buf, '\n', len);
	if (nl && nl - buf >= 3 && buf[0] >= '0' && buf[0] <= '9' && buf[1] == ' ' &&
	    buf[2] >= '0' && buf[2] <= '9') {
		body_len = strtoull(buf + 2, &end, 10);
		if (end == nl && len - (size_t)(nl + 1 - buf) == body_len)
			r->code = buf[0] - '0';
	}
	r->body = strdup(r->code >= 0 ? nl + 1 : buf);
}

/*
 * On a connected socket: send @len bytes while reading whatever comes back
 * (the daemon may answer before it has read everything), shut down the
 * writing side if @eof, then read to EOF. 10 s at most.
 */
static void exchange_fd(int fd, double start, const void *req, size_t len, bool eof,
			struct reply *r)
{
	size_t cap = 1 << 16, got = 0, sent = 0;
	char *buf = malloc(cap + 1);
	bool shut = false;

	memset(r, 0, sizeof(*r));
	ASSERT_TRUE(buf != NULL);
	fcntl(fd, F_SETFL, O_NONBLOCK);
	while (now_sec() - start < 10) {
		struct pollfd p = { fd, POLLIN, 0 };
		ssize_t n;

		if (sent < len)
			p.events |= POLLOUT;
		if (sent == len && eof && !shut) {
			shutdown(fd, SHUT_WR);
			shut = true;
		}
		if (poll(&p, 1, 100) < 0)
			continue;
		if (p.revents & POLLOUT) {
			n = send(fd, (const char *)req + sent, len - sent, MSG_NOSIGNAL);
			if (n > 0)
				sent += n;
			else if (n < 0 && errno != EAGAIN)
				sent = len; /* the daemon stopped reading: fine */
		}
		if (p.revents & (POLLIN | POLLHUP | POLLERR)) {
			n = recv(fd, buf + got, cap - got, 0);
			if (n == 0)
				break;
			if (n < 0 && errno != EAGAIN) {
				r->err = errno;
				break;
			}
			if (n > 0 && (got += n) == cap)
				break;
		}
	}
	r->secs = now_sec() - start;
	reply_parse(r, buf, got);
	free(buf);
}

static void exchange(const void *req, size_t len, bool eof, struct reply *r)
{
	double start = now_sec();
	int fd = sock_connect();

	exchange_fd(fd, start, req, len, eof, r);
	close(fd);
}

/* A refusal: digit 2 and one line saying why. */
static void expect_usage_error(const char *what, const struct reply *r)
{
	size_t n = strlen(r->body);

	if (r->code != 2 || n == 0 || r->body[n - 1] != '\n' || strchr(r->body, '\n') != r->body + n - 1) {
		test_log("%s: expected \"2\" and one line, got code %d, %zu bytes, errno %d: %.200s",
			 what, r->code, r->len, r->err, r->body);
		test_fail();
	}
}

/* The test's own cgroups only: the host may have other traffic. */
static char *status_json(void)
{
	char *out = NULL;

	ASSERT_EQ(ctl(&out, "status --json %s", cg_rel(cg_test_parent())), 0);
	ASSERT_TRUE(json_valid(out));
	return out;
}

static int daemon_fds_now(void)
{
	char path[64];
	struct dirent *de;
	int n = 0;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/fd", (int)daemon_pid());
	d = opendir(path);
	if (!d)
		return -1;
	while ((de = readdir(d)))
		n += de->d_name[0] != '.';
	closedir(d);
	return n;
}

/* The daemon holds an iterator fd while it samples and a connection fd
 * while it answers: the fewest seen over half a second is its resting count. */
static int daemon_fds(void)
{
	int i, n, least = -1;

	for (i = 0; i < 10; i++) {
		n = daemon_fds_now();
		if (least < 0 || (n >= 0 && n < least))
			least = n;
		msleep(50);
	}
	return least;
}

/* Everything tcpbufd persists, as one string: drop-ins and the state file. */
static char *persisted(void)
{
	char dir[1024], *a, *b, *out;

	snprintf(dir, sizeof(dir), "%s/state", test_tmpdir());
	a = dir_snapshot(daemon_confdir());
	b = dir_snapshot(dir);
	if (asprintf(&out, "%s---\n%s", a, b) < 0)
		test_abort();
	free(a);
	free(b);
	return out;
}

static void random_bytes(void)
{
	unsigned seed = 12345;
	char buf[4096];
	struct reply r;
	int i;

	for (i = 0; i < 200; i++) {
		size_t len = 1 + rand_r(&seed) % sizeof(buf), j;

		for (j = 0; j < len; j++)
			buf[j] = (char)rand_r(&seed);
		exchange(buf, len, true, &r);
		expect_usage_error("random bytes", &r);
		free(r.body);
	}
	/* Printable garbage that looks like words. */
	exchange("status\n--jsn\n", 13, true, &r);
	expect_usage_error("unknown option", &r);
	free(r.body);
	exchange("set\n/\n1\n2\n", 10, true, &r);
	expect_usage_error("set: wrong number of arguments", &r);
	free(r.body);
	exchange("\n\n\n", 3, true, &r);
	expect_usage_error("empty words", &r);
	free(r.body);
	exchange("", 0, true, &r);
	expect_usage_error("empty request", &r);
	free(r.body);
}

static void sizes(void)
{
	size_t big = 1 << 20, n = 0;
	char *buf = malloc(big);
	struct reply r;

	ASSERT_TRUE(buf != NULL);
	/* Exactly REQUEST_MAX_BYTES: "status\n--json\n" and 32761 times "/\n". */
	n += sprintf(buf, "status\n--json\n");
	while (n < REQUEST_MAX_BYTES)
		n += sprintf(buf + n, "/\n");
	ASSERT_EQ(n, REQUEST_MAX_BYTES);
	exchange(buf, n, true, &r);
	EXPECT_EQ(r.code, 0);
	EXPECT_TRUE(json_valid(r.body));
	free(r.body);

	/* One byte more, and far more: refused, with the reason. */
	buf[n++] = '/';
	exchange(buf, n, true, &r);
	expect_usage_error("REQUEST_MAX_BYTES + 1", &r);
	EXPECT_TRUE(strstr(r.body, "larger than") != NULL);
	free(r.body);
	memset(buf, 'x', big);
	exchange(buf, big, true, &r);
	expect_usage_error("1 MiB", &r);
	free(r.body);
	/* 1 MiB without EOF: refused as soon as it is too large, not after a timeout. */
	exchange(buf, big, false, &r);
	expect_usage_error("1 MiB, no EOF", &r);
	EXPECT_LT_F(r.secs * 1000, 900);
	free(r.body);
	free(buf);
}

static void nuls(void)
{
#define REQ(s) { s, sizeof(s) - 1 }
	static const struct { const char *s; size_t len; } reqs[] = {
		REQ("status\0\n"), REQ("\0"), REQ("status\n--json\0\n"), REQ("set\n/a\0b\n1\n2\n3\n"),
	};
	struct reply r;

	for (size_t i = 0; i < sizeof(reqs) / sizeof(reqs[0]); i++) {
		exchange(reqs[i].s, reqs[i].len, true, &r);
		expect_usage_error("embedded NUL", &r);
		EXPECT_TRUE(strstr(r.body, "NUL") != NULL);
		free(r.body);
	}
}

/*
 * Partial messages, the client gone before it finished: a cut-off "unset"
 * must not run (it would drop a's thresholds), nor any other half request.
 */
static void partial_then_close(const char *a)
{
	char unset_a[512], set_a[512];
	const char *reqs[] = { unset_a, set_a, "set\n/", "status", "set-limit\n/x\n1", "reload",
			       "unset\n/" };
	size_t n = sizeof(reqs) / sizeof(reqs[0]);
	struct reply r;
	size_t i;

	snprintf(unset_a, sizeof(unset_a), "unset\n%s", a);
	snprintf(set_a, sizeof(set_a), "set\n%s\n1\n1\n1", a);
	for (i = 0; i < 20 * n; i++) {
		int fd = sock_connect();
		const char *req = reqs[i % n];

		ASSERT_EQ(send(fd, req, strlen(req), MSG_NOSIGNAL), (ssize_t)strlen(req));
		close(fd);
	}
	/* The same with the sending side shut: refused, and said why. */
	for (i = 0; i < n; i++) {
		exchange(reqs[i], strlen(reqs[i]), true, &r);
		expect_usage_error("partial request", &r);
		EXPECT_TRUE(strstr(r.body, "incomplete") != NULL);
		free(r.body);
	}
}

/* Clients that never finish: cut off at about a second, and nobody waits for them. */
static void never_eof(void)
{
	int fds[SILENT_CLIENTS];
	double start = now_sec(), t;
	struct reply r;
	char *out = NULL;
	int i;

	for (i = 0; i < SILENT_CLIENTS; i++) {
		fds[i] = sock_connect();
		if (i % 2)
			ASSERT_EQ(send(fds[i], "status\n", 7, MSG_NOSIGNAL), 7);
	}
	/* Others are served while those wait. */
	t = now_sec();
	EXPECT_EQ(ctl(&out, "status --json"), 0);
	t = now_sec() - t;
	test_log("status answered in %.3f s while %d clients hold connections open", t,
		 SILENT_CLIENTS);
	EXPECT_LT_F(t * 1000, 900);
	EXPECT_TRUE(json_valid(out));
	free(out);
	for (i = 0; i < SILENT_CLIENTS; i++) {
		exchange_fd(fds[i], start, NULL, 0, false, &r);
		close(fds[i]);
		test_log("silent client %d cut off after %.2f s: code %d: %s", i, r.secs, r.code,
			 r.body);
		EXPECT_GE_F(r.secs * 1000, 800);
		EXPECT_LE_F(r.secs * 1000, 2500);
		expect_usage_error("no EOF", &r);
		free(r.body);
	}

	/* A byte every 200 ms, for 5 s: the second is for the whole request. */
	{
		int fd = sock_connect();
		double s = now_sec();

		fcntl(fd, F_SETFL, O_NONBLOCK);
		for (i = 0; i < 25; i++) {
			if (send(fd, "s", 1, MSG_NOSIGNAL) != 1)
				break;
			msleep(200);
			if (recv(fd, &(char){ 0 }, 1, MSG_PEEK) >= 0)
				break;
		}
		exchange_fd(fd, s, NULL, 0, false, &r);
		close(fd);
		test_log("trickling client cut off after %.2f s: code %d: %s", r.secs, r.code,
			 r.body);
		EXPECT_LE_F(r.secs * 1000, 2500);
		expect_usage_error("trickle", &r);
		free(r.body);
	}
}

static void many_in_a_row(void)
{
	struct reply r;
	int i, ok = 0;

	for (i = 0; i < 2000; i++) {
		if (i % 2) {
			close(sock_connect());
			continue;
		}
		exchange("status\n--json\n", 14, true, &r);
		ok += r.code == 0 && json_valid(r.body);
		free(r.body);
	}
	EXPECT_EQ(ok, 1000);
}

int main(void)
{
	char *before, *after, *files_before, *files_after;
	const char *a;
	FILE *f;
	char path[1024];
	int fds_before, fds_after;

	test_init();
	a = cg_create("a");
	cg_create("b");
	snprintf(path, sizeof(path), "%s/a.conf", daemon_confdir());
	f = fopen(path, "w");
	ASSERT_TRUE(f != NULL);
	fprintf(f, "[Cgroup]\nPath=%s\nLimit=64M\n", cg_rel(a));
	fclose(f);
	daemon_write_config("[Daemon]\nPollIntervalMs=200\nSampleIntervalMs=200\n"
			    "DropInDir=%s\nStateDir=%s/state\n", daemon_confdir(), test_tmpdir());
	ASSERT_EQ(daemon_start(""), 0);
	ASSERT_EQ(ctl(NULL, "set %s 4M 8M 16M", cg_rel(a)), 0);
	ASSERT_EQ(ctl(NULL, "set-limit %s/b 32M", cg_rel(cg_test_parent())), 0);
	/* Every CGROUP given counts, not only the first few. */
	{
		char *out = NULL, *ra = cg_rel(a), *rb = cg_rel(cg_create("b"));
		int64_t v = 0;

		ASSERT_EQ(ctl(&out, "status --json %s %s %s %s %s %s %s %s %s", ra, ra, ra, ra, ra,
			      ra, ra, ra, rb), 0);
		EXPECT_EQ(json_cgroup_field(out, rb, "limit_pages", &v), JSON_FOUND);
		EXPECT_EQ(v, 8192);
		free(out);
	}
	before = status_json();
	files_before = persisted();
	fds_before = daemon_fds();

	test_log("random bytes");
	random_bytes();
	test_log("sizes");
	sizes();
	test_log("embedded NULs");
	nuls();
	test_log("partial messages, then close");
	partial_then_close(cg_rel(a));
	test_log("clients that never send EOF");
	never_eof();
	test_log("2000 connections in a row");
	many_in_a_row();

	ASSERT_TRUE(daemon_alive());
	msleep(300);
	fds_after = daemon_fds();
	test_log("daemon fds: %d before, %d after", fds_before, fds_after);
	EXPECT_EQ(fds_after, fds_before);
	after = status_json();
	/* The rows; "socket_entries" counts every TCP socket of the host. */
	EXPECT_TRUE(strstr(before, "\"cgroups\"") && strstr(after, "\"cgroups\"") &&
		    strcmp(strstr(before, "\"cgroups\""), strstr(after, "\"cgroups\"")) == 0);
	if (strcmp(before, after))
		test_log("status changed:\n%s\n---\n%s", before, after);
	files_after = persisted();
	EXPECT_TRUE(strcmp(files_before, files_after) == 0);
	/* Still fully working. */
	EXPECT_EQ(ctl(NULL, "unset %s", cg_rel(a)), 0);
	EXPECT_EQ(daemon_signal(SIGHUP), 0);
	msleep(200);
	EXPECT_EQ(ctl(NULL, "status"), 0);
	EXPECT_TRUE(daemon_alive());
	free(before);
	free(after);
	free(files_before);
	free(files_after);
	return test_done();
}
