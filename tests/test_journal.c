// SPDX-License-Identifier: GPL-2.0
/*
 * log.c's cgroup state changes, linked in on their own.
 *  - stderr not the journal: plain lines, "tcpbufd: /a: entered pressure
 *    (usage 3120 pages, threshold 3072 pages)", worded by the transition;
 *  - rate limit per cgroup: `burst` messages per interval; the rest is
 *    summed up by log_state_flush() once the interval is over, with the
 *    last state; another cgroup is not held back meanwhile;
 *  - $JOURNAL_STREAM naming stderr (as systemd sets it): one native
 *    journal entry per change with MESSAGE=, PRIORITY=, CGROUP=,
 *    USAGE_PAGES=, THRESHOLD_PAGES=, STATE=, PREVIOUS_STATE=, MODE= and
 *    MESSAGE_ID=, and ordinary lines get a <N> prefix instead of the name.
 *    The journal socket is one the test binds in a private mount namespace
 *    (a tmpfs over /run), so the host's journal is never touched;
 *  - $JOURNAL_STREAM naming another stream: plain lines.
 */
#define _GNU_SOURCE
#include "harness.h"
#include "../src/log.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "re");
	char *buf = NULL;
	size_t cap = 0;
	ssize_t n;

	if (!f)
		return strdup("");
	n = getdelim(&buf, &cap, '\0', f);
	fclose(f);
	if (n < 0) {
		free(buf);
		return strdup("");
	}
	return buf;
}

/* Point stderr at a fresh file; returns its path. */
static char *stderr_to_file(const char *name)
{
	char *path;
	int fd;

	if (asprintf(&path, "%s/%s", test_tmpdir(), name) < 0)
		abort();
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0 || dup2(fd, 2) < 0)
		_exit(3);
	close(fd);
	setvbuf(stderr, NULL, _IONBF, 0);
	return path;
}

static void set_journal_stream(int fd)
{
	struct stat st;
	char buf[64];

	if (fstat(fd, &st))
		_exit(3);
	snprintf(buf, sizeof(buf), "%llu:%llu", (unsigned long long)st.st_dev,
		 (unsigned long long)st.st_ino);
	setenv("JOURNAL_STREAM", buf, 1);
}

static int run_fn_child(void (*fn)(void))
{
	pid_t pid = test_fork(1);
	int st;

	if (pid == 0) {
		fn();
		_exit(0);
	}
	st = test_reap(pid);
	if (WIFEXITED(st) && WEXITSTATUS(st) == 77)
		return 77;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* ---- plain lines and the rate limit -------------------------------------- */

static const char *const plain_expected =
	"tcpbufd: /a: entered pressure (usage 3120 pages, threshold 3072 pages)\n"
	"tcpbufd: /a: hit max (usage 4100 pages, threshold 4096 pages)\n"
	"tcpbufd: /a: fell below max, still under pressure (usage 4000 pages, threshold 4096 pages)\n"
	"tcpbufd: /b: hit max (usage 10 pages, threshold 8 pages)\n"
	"tcpbufd: /a: now pressure (usage 3500 pages, threshold 3072 pages); 6 changes were not logged\n"
	"tcpbufd: /a: left pressure (usage 100 pages, threshold 2048 pages)\n"
	"tcpbufd: ordinary line\n";

static void plain_child(void)
{
	char *path = stderr_to_file("plain.log"), *got;

	unsetenv("JOURNAL_STREAM");
	log_state_ratelimit(500, 3);
	log_state_change("/a", "pressure", 3120, 3072, "sampled");
	log_state_change("/a", "max", 4100, 4096, "sampled");
	log_state_change("/a", "pressure", 4000, 4096, "sampled");
	/* Over the burst: held back, counted. */
	log_state_change("/a", "normal", 1000, 2048, "sampled");
	for (int i = 0; i < 4; i++)
		log_state_change("/a", i % 2 ? "pressure" : "normal", 3000 + i, 3072, "sampled");
	log_state_change("/a", "pressure", 3500, 3072, "sampled");
	/* Another cgroup is not held back by /a. */
	log_state_change("/b", "max", 10, 8, "sampled");
	log_state_flush();	/* the interval is not over: nothing yet */
	msleep(600);
	log_state_flush();	/* now the summary, with the last state */
	log_state_flush();	/* and only once */
	log_state_change("/a", "normal", 100, 2048, "sampled");
	log_info("ordinary line");
	got = slurp(path);
	if (strcmp(got, plain_expected)) {
		printf("plain lines:\n--- expected\n%s--- got\n%s---\n", plain_expected, got);
		_exit(1);
	}
	_exit(0);
}

/* ---- journal entries ------------------------------------------------------ */

/* Parse one native-protocol datagram into "KEY=value\n" lines (values with a
 * newline come as KEY\n<le64 length><data>\n). */
static char *journal_fields(const char *buf, size_t len)
{
	char *out = calloc(1, len * 2 + 1);
	const char *p = buf, *end = buf + len;

	while (p < end) {
		const char *nl = memchr(p, '\n', end - p), *eq;

		if (!nl)
			break;
		eq = memchr(p, '=', nl - p);
		if (eq) {
			strncat(out, p, nl - p + 1);
			p = nl + 1;
		} else {
			uint64_t vlen = 0;

			if (nl + 1 + 8 > end)
				break;
			memcpy(&vlen, nl + 1, 8);	/* little-endian on x86 */
			strncat(out, p, nl - p);
			strcat(out, "=");
			strncat(out, nl + 9, vlen);
			strcat(out, "\n");
			p = nl + 9 + vlen + 1;
		}
	}
	return out;
}

static bool has_field(const char *fields, const char *line)
{
	char want[512];

	snprintf(want, sizeof(want), "%s\n", line);
	return !strncmp(fields, want, strlen(want)) ||
	       (strstr(fields, want) && strstr(fields, want)[-1] == '\n');
}

static void journal_child(void)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char buf[8192], *path, *fields, *got;
	int fd, bad = 0;
	ssize_t n;

	if (unshare(CLONE_NEWNS)) {
		printf("SKIP: unshare(CLONE_NEWNS): %s\n", strerror(errno));
		_exit(77);
	}
	/* Everything below stays in this namespace and goes with it. */
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) ||
	    mount("tmpfs", "/run", "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755") ||
	    mkdir("/run/systemd", 0755) || mkdir("/run/systemd/journal", 0755)) {
		printf("journal namespace: %s\n", strerror(errno));
		_exit(1);
	}
	strcpy(sa.sun_path, "/run/systemd/journal/socket");
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		printf("journal socket: %s\n", strerror(errno));
		_exit(1);
	}
	path = stderr_to_file("journal.log");
	set_journal_stream(2);
	log_state_change("/a", "pressure", 3120, 3072, "exact");
	log_state_change("/a", "max", 4100, 4096, "exact");
	log_info("ordinary line");

	n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
	if (n <= 0) {
		printf("no journal entry: %s\n", n < 0 ? strerror(errno) : "empty");
		_exit(1);
	}
	fields = journal_fields(buf, n);
	printf("entry 1:\n%s", fields);
	{
		static const char *const want[] = {
			"MESSAGE=/a: entered pressure (usage 3120 pages, threshold 3072 pages)",
			"PRIORITY=5", "SYSLOG_IDENTIFIER=tcpbufd", "MESSAGE_ID=" LOG_STATE_MESSAGE_ID,
			"CGROUP=/a", "USAGE_PAGES=3120", "THRESHOLD_PAGES=3072", "STATE=pressure",
			"MODE=exact",
		};

		for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
			if (!has_field(fields, want[i])) {
				printf("missing: %s\n", want[i]);
				bad = 1;
			}
		if (strstr(fields, "PREVIOUS_STATE=")) {
			printf("PREVIOUS_STATE= with no previous state\n");
			bad = 1;
		}
	}
	free(fields);
	n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
	if (n <= 0) {
		printf("no second journal entry\n");
		_exit(1);
	}
	fields = journal_fields(buf, n);
	printf("entry 2:\n%s", fields);
	if (!has_field(fields, "STATE=max") || !has_field(fields, "PREVIOUS_STATE=pressure") ||
	    !has_field(fields, "PRIORITY=4") || !has_field(fields, "USAGE_PAGES=4100")) {
		printf("entry 2 lacks STATE=max, PREVIOUS_STATE=pressure, PRIORITY=4 or USAGE_PAGES\n");
		bad = 1;
	}
	free(fields);
	if (recv(fd, buf, sizeof(buf), MSG_DONTWAIT) > 0) {
		printf("an ordinary line became a journal entry\n");
		bad = 1;
	}
	/* The state changes went to the journal only; ordinary lines keep
	 * the stream, with their priority for journald. */
	got = slurp(path);
	if (strcmp(got, "<6>ordinary line\n")) {
		printf("stderr under the journal: '%s'\n", got);
		bad = 1;
	}
	_exit(bad);
}

static void other_stream_child(void)
{
	char *path = stderr_to_file("other.log"), *got;

	set_journal_stream(1);	/* stdout's stream, not stderr's */
	log_state_change("/a", "max", 5, 4, "sampled");
	got = slurp(path);
	if (strcmp(got, "tcpbufd: /a: hit max (usage 5 pages, threshold 4 pages)\n")) {
		printf("JOURNAL_STREAM of another fd: '%s'\n", got);
		_exit(1);
	}
	_exit(0);
}

int main(void)
{
	int r;

	test_init();
	EXPECT_EQ(run_fn_child(plain_child), 0);
	EXPECT_EQ(run_fn_child(other_stream_child), 0);
	r = run_fn_child(journal_child);
	if (r == 77)
		test_log("journal entries not tested: no mount namespace");
	else
		EXPECT_EQ(r, 0);
	return test_done();
}
