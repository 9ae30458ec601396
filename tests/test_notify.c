// SPDX-License-Identifier: GPL-2.0
/*
 * systemd's notify protocol, heard on a datagram socket the test listens on
 * ($NOTIFY_SOCKET), with $WATCHDOG_USEC and $WATCHDOG_PID set the way
 * systemd sets them for WatchdogSec=:
 *  - READY=1 comes once, after every pinned link and the control socket
 *    exist (their inode times are older than the datagram's arrival), with
 *    STATUS= naming the mode that `status` reports and the limited cgroups;
 *  - SIGHUP gives RELOADING=1 (with a current MONOTONIC_USEC=), then READY=1
 *    whose STATUS= counts the cgroups the new configuration limits; a
 *    refused reload ends in READY=1 too, its STATUS= saying so;
 *  - WATCHDOG=1 arrives every WATCHDOG_USEC/2 (within 40%);
 *  - SIGTERM gives STOPPING=1, and the daemon exits 0;
 *  - with $WATCHDOG_PID naming another process there is no WATCHDOG=1.
 */
#define _GNU_SOURCE
#include "harness.h"
#include "sdunit.h"

#include <dirent.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define WATCHDOG_USEC	300000

static int notify_fd = -1;

struct note {
	char text[1024];
	struct timespec arrived;	/* CLOCK_REALTIME, from SO_TIMESTAMPNS */
	double at;			/* now_sec() when read */
};

static void notify_listen(void)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int one = 1;

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/notify.sock", test_tmpdir());
	notify_fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	ASSERT_TRUE(notify_fd >= 0);
	ASSERT_OK(bind(notify_fd, (struct sockaddr *)&sa, sizeof(sa)));
	ASSERT_OK(setsockopt(notify_fd, SOL_SOCKET, SO_TIMESTAMPNS, &one, sizeof(one)));
	setenv("NOTIFY_SOCKET", sa.sun_path, 1);
}

/* The next datagram within timeout_ms; 0 if one came. */
static int next_note(struct note *n, int timeout_ms)
{
	struct pollfd p = { .fd = notify_fd, .events = POLLIN };
	char cbuf[CMSG_SPACE(sizeof(struct timespec))];
	struct iovec iov = { .iov_base = n->text, .iov_len = sizeof(n->text) - 1 };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1,
			     .msg_control = cbuf, .msg_controllen = sizeof(cbuf) };
	struct cmsghdr *c;
	ssize_t len;

	if (poll(&p, 1, timeout_ms) <= 0)
		return -1;
	len = recvmsg(notify_fd, &mh, MSG_DONTWAIT);
	if (len < 0)
		return -1;
	n->text[len] = '\0';
	n->at = now_sec();
	memset(&n->arrived, 0, sizeof(n->arrived));
	for (c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c))
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_TIMESTAMPNS)
			memcpy(&n->arrived, CMSG_DATA(c), sizeof(n->arrived));
	if (getenv("TEST_VERBOSE"))
		test_log("notify: %s", n->text);
	return 0;
}

/* Line KEY=... of a datagram: its value, or NULL. */
static const char *note_value(const struct note *n, const char *key, char *buf, size_t len)
{
	size_t klen = strlen(key);

	for (const char *p = n->text; *p; p += strcspn(p, "\n"), p += *p == '\n') {
		if (!strncmp(p, key, klen) && p[klen] == '=') {
			snprintf(buf, len, "%.*s", (int)strcspn(p + klen + 1, "\n"), p + klen + 1);
			return buf;
		}
	}
	return NULL;
}

static bool note_has(const struct note *n, const char *line)
{
	char buf[256], key[64];
	const char *eq = strchr(line, '=');

	snprintf(key, sizeof(key), "%.*s", (int)(eq - line), line);
	return note_value(n, key, buf, sizeof(buf)) && !strcmp(buf, eq + 1);
}

/* Wait for a datagram holding line (e.g. "READY=1"), skipping watchdog pings
 * unless that is what is awaited. */
static int wait_for(const char *line, struct note *n, int timeout_ms)
{
	double end = now_sec() + timeout_ms / 1000.0;

	while (now_sec() < end) {
		if (next_note(n, (int)((end - now_sec()) * 1000) + 1))
			break;
		if (note_has(n, line))
			return 0;
		if (!note_has(n, "WATCHDOG=1"))
			test_log("note before %s: %s", line, n->text);
	}
	test_log("no %s within %d ms", line, timeout_ms);
	return -1;
}

static void drain(void)
{
	struct note n;

	while (!next_note(&n, 0))
		;
}

static bool older_than(const struct timespec *a, const struct timespec *b)
{
	return a->tv_sec < b->tv_sec || (a->tv_sec == b->tv_sec && a->tv_nsec <= b->tv_nsec);
}

/* Every pinned link and the control socket existed before READY=1 arrived. */
static void check_ready_after_setup(const struct note *ready)
{
	char path[4096];
	struct dirent *de;
	struct stat st;
	int links = 0;
	DIR *d;

	snprintf(path, sizeof(path), "%s/links", daemon_pin_path());
	d = opendir(path);
	ASSERT_TRUE(d != NULL);
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/links/%s", daemon_pin_path(), de->d_name);
		ASSERT_OK(stat(path, &st));
		if (!older_than(&st.st_ctim, &ready->arrived)) {
			test_log("link %s pinned after READY=1", de->d_name);
			test_fail();
		}
		links++;
	}
	closedir(d);
	EXPECT_GT(links, 0);
	ASSERT_OK(stat(daemon_socket_path(), &st));
	if (!older_than(&st.st_ctim, &ready->arrived)) {
		test_log("control socket made after READY=1");
		test_fail();
	}
}

static void write_dropin(const char *name, const char *text)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", daemon_confdir(), name);
	f = fopen(path, "we");
	ASSERT_TRUE(f != NULL);
	fputs(text, f);
	ASSERT_OK(fclose(f));
}

static void remove_dropin(const char *name)
{
	char path[4096];

	snprintf(path, sizeof(path), "%s/%s", daemon_confdir(), name);
	ASSERT_OK(unlink(path));
}

static uint64_t monotonic_usec(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* Pings for about secs: their count and median interval must match
 * WATCHDOG_USEC/2. */
static void check_watchdog(double secs)
{
	double times[256], gaps[256], end = now_sec() + secs, median;
	int n = 0, i;
	struct note note;

	while (now_sec() < end && n < 256) {
		if (next_note(&note, 50))
			continue;
		if (note_has(&note, "WATCHDOG=1"))
			times[n++] = note.arrived.tv_sec + note.arrived.tv_nsec / 1e9;
	}
	test_log("%d watchdog pings in %.1f s (expected every %d ms)", n, secs,
		 WATCHDOG_USEC / 2000);
	ASSERT_GE(n, 3);
	for (i = 1; i < n; i++)
		gaps[i - 1] = times[i] - times[i - 1];
	qsort(gaps, n - 1, sizeof(*gaps), cmp_double);
	median = gaps[(n - 1) / 2];
	EXPECT_NEAR((int64_t)(median * 1e6), WATCHDOG_USEC / 2, WATCHDOG_USEC / 2 * 4 / 10);
	EXPECT_NEAR(n, (int64_t)(secs * 1e6 / (WATCHDOG_USEC / 2)),
		    (int64_t)(secs * 1e6 / (WATCHDOG_USEC / 2)) * 4 / 10 + 1);
}

int main(void)
{
	char *bin, *wrapper, *json = NULL, mode[32], buf[256], *rel_a, *rel_b, text[1024];
	const char *status;
	struct note n;
	uint64_t mono;
	int st;

	test_init();
	bin = tcpbufd_abs_path();
	rel_a = cg_rel(cg_create("a"));
	rel_b = cg_rel(cg_create("b"));
	daemon_write_config("[Daemon]\nDropInDir=%s\nStateDir=%s\nPollIntervalMs=200\n",
			    daemon_confdir(), test_tmpdir());
	snprintf(text, sizeof(text), "[Cgroup]\nPath=%s\nLimit=16M\n", rel_a);
	write_dropin("a.conf", text);

	notify_listen();
	setenv("WATCHDOG_USEC", "300000", 1);
	/* systemd names the main process; exec keeps the script's pid. */
	wrapper = write_script("tcpbufd-watchdog", "WATCHDOG_PID=$$ exec %s \"$@\"", sh_quote(bin));
	setenv("TCPBUFD", wrapper, 1);
	ASSERT_EQ(daemon_start(NULL), 0);

	/* READY=1 once set up, STATUS= with the mode and one limited cgroup. */
	ASSERT_EQ(wait_for("READY=1", &n, 5000), 0);
	check_ready_after_setup(&n);
	ASSERT_EQ(ctl(&json, "status --json"), 0);
	ASSERT_EQ(json_string_field(json, "mode", mode, sizeof(mode)), JSON_FOUND);
	status = note_value(&n, "STATUS", buf, sizeof(buf));
	ASSERT_TRUE(status != NULL);
	test_log("STATUS=%s (status --json mode: %s)", status, mode);
	EXPECT_TRUE(strstr(status, mode) != NULL);
	EXPECT_TRUE(strstr(status, "1 cgroup limited") != NULL);

	check_watchdog(2.0);

	/* A reload: RELOADING=1 with the time it began, then READY=1. */
	snprintf(text, sizeof(text), "[Cgroup]\nPath=%s\nLimit=8M\n", rel_b);
	write_dropin("b.conf", text);
	drain();
	mono = monotonic_usec();
	ASSERT_EQ(daemon_signal(SIGHUP), 0);
	ASSERT_EQ(wait_for("RELOADING=1", &n, 5000), 0);
	ASSERT_TRUE(note_value(&n, "MONOTONIC_USEC", buf, sizeof(buf)) != NULL);
	EXPECT_NEAR((int64_t)strtoull(buf, NULL, 10), (int64_t)mono, 2000000);
	ASSERT_EQ(wait_for("READY=1", &n, 5000), 0);
	status = note_value(&n, "STATUS", buf, sizeof(buf));
	ASSERT_TRUE(status != NULL);
	test_log("after reload: STATUS=%s", status);
	EXPECT_TRUE(strstr(status, "2 cgroups limited") != NULL);

	/* A refused reload still ends the reload, and says why. */
	write_dropin("c.conf", "[Cgroup]\nBogus=1\n");
	drain();
	ASSERT_EQ(daemon_signal(SIGHUP), 0);
	ASSERT_EQ(wait_for("RELOADING=1", &n, 5000), 0);
	ASSERT_EQ(wait_for("READY=1", &n, 5000), 0);
	status = note_value(&n, "STATUS", buf, sizeof(buf));
	ASSERT_TRUE(status != NULL);
	test_log("after a refused reload: STATUS=%s", status);
	EXPECT_TRUE(strstr(status, "refused") != NULL);
	EXPECT_TRUE(strstr(status, "c.conf") != NULL);
	EXPECT_TRUE(strstr(status, "2 cgroups limited") != NULL);
	remove_dropin("c.conf");

	/* tcpbufctl reload goes through the same path. */
	drain();
	ASSERT_EQ(ctl(NULL, "reload"), 0);
	ASSERT_EQ(wait_for("RELOADING=1", &n, 5000), 0);
	ASSERT_EQ(wait_for("READY=1", &n, 5000), 0);

	drain();
	st = daemon_stop();
	ASSERT_TRUE(WIFEXITED(st));
	EXPECT_EQ(WEXITSTATUS(st), 0);
	EXPECT_EQ(wait_for("STOPPING=1", &n, 1000), 0);

	/* WATCHDOG_PID names someone else: the watchdog is not ours. */
	wrapper = write_script("tcpbufd-other", "WATCHDOG_PID=1 exec %s \"$@\"", sh_quote(bin));
	setenv("TCPBUFD", wrapper, 1);
	drain();
	ASSERT_EQ(daemon_start(NULL), 0);
	ASSERT_EQ(wait_for("READY=1", &n, 5000), 0);
	{
		double end = now_sec() + 1.5;
		int pings = 0;

		while (now_sec() < end)
			if (!next_note(&n, 100) && note_has(&n, "WATCHDOG=1"))
				pings++;
		EXPECT_EQ(pings, 0);
	}
	st = daemon_stop();
	EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	free(json);
	return test_done();
}
