// SPDX-License-Identifier: GPL-2.0
/*
 * A status of many cgroups comes whole, or tcpbufctl says it did not.
 *
 * With N limited cgroups (a glob rule over s/g*) a `status --json` is about
 * 300 bytes a row, far more than a socket buffer. Checks:
 *   1. tcpbufctl exits 0 with valid JSON holding every one of the N rows,
 *      each with its limit, in well under the time a reply may take.
 *   2. A client that reads slowly but steadily (a pipe read in chunks with
 *      pauses, 8-9 s in all) still gets the whole answer: the daemon once cut
 *      off every reply after 5 s, and tcpbufctl exited 0 with what it had.
 *   3. A client that stops reading (its stdout a pipe nobody reads for
 *      longer than the daemon waits) is cut off, and tcpbufctl then exits
 *      1 saying the answer was cut short, never 0.
 */
#define _GNU_SOURCE
#include "harness.h"

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define N_CGROUPS	3000
#define LIMIT_PAGES	16384	/* 64M */
#define STALL_MS	6500	/* the daemon cuts off a reader idle for 5 s */

/* Rows of s/gNNNNN with their limit, each counted once. */
static int rows_limited(const char *json, const char *parent)
{
	char *seen = calloc(N_CGROUPS, 1), prefix[256];
	const char *p = json;
	size_t plen;
	int n = 0;

	ASSERT_TRUE(seen != NULL);
	plen = (size_t)snprintf(prefix, sizeof(prefix), "{\"cgroup\": \"%s/s/g", parent);
	while ((p = strstr(p, prefix))) {
		const char *eol = strchr(p, '\n'), *lim;
		int k = atoi(p + plen);

		lim = strstr(p, "\"limit_pages\": ");
		if (k >= 0 && k < N_CGROUPS && !seen[k] && lim && (!eol || lim < eol) &&
		    atoll(lim + 15) == LIMIT_PAGES) {
			seen[k] = 1;
			n++;
		}
		p += plen;
	}
	free(seen);
	return n;
}

struct reader {
	pid_t pid;
	int out;		/* tcpbufctl's stdout */
	char err_path[1024];	/* its stderr */
};

static void reader_start(struct reader *r)
{
	int fds[2];

	snprintf(r->err_path, sizeof(r->err_path), "%s/ctl.err", test_tmpdir());
	ASSERT_OK(pipe(fds));
	r->pid = test_fork(1);
	ASSERT_TRUE(r->pid >= 0);
	if (r->pid == 0) {
		int err = open(r->err_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

		if (err < 0 || dup2(fds[1], 1) < 0 || dup2(err, 2) < 0)
			_exit(127);
		close(fds[0]);
		execl(tcpbufctl_path(), "tcpbufctl", "--socket", daemon_socket_path(), "status",
		      "--json", (char *)NULL);
		_exit(127);
	}
	close(fds[1]);
	r->out = fds[0];
}

/* Read @chunk bytes, pause @pause_ms, and so on to EOF; the bytes read. */
static size_t reader_drain(struct reader *r, size_t chunk, unsigned pause_ms, char **text)
{
	size_t len = 0, cap = 1 << 20, in_chunk = 0;
	char *buf = malloc(cap + 1);
	ssize_t n;

	ASSERT_TRUE(buf != NULL);
	for (;;) {
		if (len == cap) {
			buf = realloc(buf, (cap *= 2) + 1);
			ASSERT_TRUE(buf != NULL);
		}
		n = read(r->out, buf + len, cap - len < chunk - in_chunk ? cap - len : chunk - in_chunk);
		if (n <= 0)
			break;
		len += n;
		in_chunk += n;
		if (in_chunk == chunk && pause_ms) {
			msleep(pause_ms);
			in_chunk = 0;
		}
	}
	buf[len] = '\0';
	close(r->out);
	*text = buf;
	return len;
}

static int reader_exit(struct reader *r)
{
	int st = test_reap(r->pid);

	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

int main(void)
{
	char path[4096], *parent, *out = NULL, *err;
	struct reader r;
	double t;
	FILE *f;
	int i, code;
	size_t len;

	test_init();
	parent = cg_rel(cg_test_parent());
	snprintf(path, sizeof(path), "%s/s", cg_test_parent());
	ASSERT_OK(mkdir(path, 0755));
	t = now_sec();
	for (i = 0; i < N_CGROUPS; i++) {
		snprintf(path, sizeof(path), "%s/s/g%05d", cg_test_parent(), i);
		ASSERT_OK(mkdir(path, 0755));
	}
	test_log("%d cgroups made in %.2f s", N_CGROUPS, now_sec() - t);
	snprintf(path, sizeof(path), "%s/many.conf", daemon_confdir());
	f = fopen(path, "w");
	ASSERT_TRUE(f != NULL);
	fprintf(f, "[Cgroup]\nPath=%s/s/*\nLimit=64M\n", parent);
	ASSERT_OK(fclose(f));
	daemon_write_config("[Daemon]\nDropInDir=%s\nStateDir=%s/state\n", daemon_confdir(),
			    test_tmpdir());
	t = now_sec();
	ASSERT_EQ(daemon_start(""), 0);
	test_log("daemon ready in %.2f s", now_sec() - t);

	/* 1. Whole, valid, every row. */
	t = now_sec();
	code = ctl(&out, "status --json");
	t = now_sec() - t;
	len = out ? strlen(out) : 0;
	test_log("status --json: exit %d, %zu bytes, %d of %d rows limited, %.3f s", code, len,
		 out ? rows_limited(out, parent) : 0, N_CGROUPS, t);
	EXPECT_EQ(code, 0);
	EXPECT_TRUE(out && json_valid(out));
	EXPECT_EQ(out ? rows_limited(out, parent) : 0, N_CGROUPS);
	EXPECT_LT_F(t * 1000, 5000);
	free(out);

	/* 2. A slow but steady reader: 64 KiB every 700 ms, so that after 5 s more than
	 * the socket and pipe hold is still to come. */
	reader_start(&r);
	t = now_sec();
	len = reader_drain(&r, 64 << 10, 700, &out);
	code = reader_exit(&r);
	t = now_sec() - t;
	test_log("slow reader: exit %d, %zu bytes in %.2f s", code, len, t);
	EXPECT_EQ(code, 0);
	EXPECT_GT_F(t * 1000, 5000);
	EXPECT_TRUE(json_valid(out));
	EXPECT_EQ(rows_limited(out, parent), N_CGROUPS);
	free(out);

	/* 3. A reader that stops: cut off, and tcpbufctl must not pass it off as the answer. */
	reader_start(&r);
	msleep(STALL_MS);
	len = reader_drain(&r, 1 << 20, 0, &out);
	code = reader_exit(&r);
	err = file_read(r.err_path);
	test_log("stalled reader: exit %d after %zu bytes; stderr: %s", code, len, err ? err : "");
	EXPECT_EQ(code, 1);
	EXPECT_TRUE(err && strstr(err, "cut short"));
	EXPECT_FALSE(json_valid(out));
	EXPECT_GE(daemon_log_count("cut off"), 1);
	free(out);
	free(err);

	/* The daemon keeps serving. */
	EXPECT_EQ(ctl(NULL, "status"), 0);
	EXPECT_EQ(daemon_stop(), 0);
	free(parent);
	return test_done();
}
