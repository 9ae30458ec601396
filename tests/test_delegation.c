// SPDX-License-Identifier: GPL-2.0
/*
 * Delegation: the administrator sets ceilings, a container picks its own
 * thresholds under its ceiling and touches nothing else.
 *
 * An unprivileged client (uid/gid 65534, moved into cgroup c1 before it drops
 * root; the socket is reachable through SocketMode=0666) may `set` c1's three
 * thresholds under c1's ceiling (exit 0, visible in status) and `unset` them
 * again. Everything else is refused with exit 1 and one line on stderr, and
 * changes nothing (status limits, drop-ins, state file): thresholds above
 * the ceiling, any change to the sibling c2 or the parent, set-limit (raise,
 * lower, new), an unset that would remove the ceiling, reload. Its status
 * shows its own subtree only.
 *
 * It also must not borrow a setuid program's rights: a client that sends a
 * request, then executes a setuid-root program (whose zombie shows full
 * capabilities in /proc) must still be treated as uid 65534: its set-limit
 * of c3, unset of c2 (whose thresholds the administrator set) and reload
 * are refused.
 *
 * The administrator's set-limit of a cgroup whose ceiling is written in a
 * hand-made drop-in is refused with the file and line to change instead.
 *
 * c1 and c2 are leaves, so this also holds where the memory controller is
 * enabled (cgroup v2 "no internal processes").
 */
#define _GNU_SOURCE
#include "harness.h"

#include <fcntl.h>
#include <grp.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#define NOBODY 65534
#define SETUID_PROGRAM "/usr/bin/umount"

static const char *c1, *c2, *c3, *parent;

/* In a child: join @cg as root, then become uid/gid 65534 for good. */
static void become_nobody(const void *cg)
{
	if (cg_enter(cg) || setgroups(0, NULL) || setresgid(NOBODY, NOBODY, NOBODY) ||
	    setresuid(NOBODY, NOBODY, NOBODY)) {
		perror("become nobody");
		_exit(126);
	}
}

/* tcpbufctl ARGS as uid 65534 in cgroup @cg. */
static void ctl_as_nobody(struct run *r, const char *cg, const char *fmt, ...)
{
	char *cmd;
	va_list ap;

	va_start(ap, fmt);
	if (vasprintf(&cmd, fmt, ap) < 0)
		test_abort();
	va_end(ap);
	run_ctl_child(r, become_nobody, cg, cmd);
	free(cmd);
}

static char *status_json(void)
{
	return status_json_of(parent);
}

/* The administrator's view of everything a refusal must leave alone. */
static char *state(void)
{
	const char *cgs[] = { parent, c1, c2, c3 };
	char dir[1024];

	snprintf(dir, sizeof(dir), "%s/state", test_tmpdir());
	return limits_snapshot(parent, cgs, 4, dir);
}

static void refused(const char *why, const char *fmt, const char *arg)
{
	char *before = state(), *after, what[512];
	struct run r;

	snprintf(what, sizeof(what), fmt, arg);
	ctl_as_nobody(&r, c1, fmt, arg);
	after = state();
	expect_refused(what, &r, 1, why, before, after);
	EXPECT_TRUE(!strncmp(r.err, "tcpbufctl: ", 11));
	run_free(&r);
	free(before);
	free(after);
}

/*
 * As uid 65534: connect, send @req without shutting down, then execute a
 * setuid-root program with the socket still open. The program exits (EOF for
 * the daemon) and stays a zombie with root's capabilities until reaped; by
 * then the daemon has answered.
 */
static void setuid_borrow(const char *req)
{
	char *before = state(), *after;
	int reloads = daemon_log_count("configuration reloaded");
	int by_nobody = daemon_log_count("by uid 65534");
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int st;
	pid_t pid;

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", daemon_socket_path());
	pid = test_fork(1);
	if (pid == 0) {
		int fd, nul = open("/dev/null", O_RDWR);

		become_nobody(c1);
		fd = socket(AF_UNIX, SOCK_STREAM, 0);
		if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) ||
		    write(fd, req, strlen(req)) != (ssize_t)strlen(req))
			_exit(125);
		dup2(nul, 0);
		dup2(nul, 1);
		dup2(nul, 2);
		execl(SETUID_PROGRAM, SETUID_PROGRAM, (char *)NULL);
		_exit(127);
	}
	msleep(1500); /* the zombie stays until this reap */
	st = test_reap(pid);
	test_log("setuid %s after sending \"%.*s\": exit %d", SETUID_PROGRAM,
		 (int)strcspn(req, "\n"), req, WIFEXITED(st) ? WEXITSTATUS(st) : -1);
	after = state();
	EXPECT_TRUE(strcmp(before, after) == 0);
	if (strcmp(before, after))
		test_log("a setuid zombie's capabilities were taken for the client's:\n%s---\n%s",
			 before, after);
	EXPECT_EQ(daemon_log_count("configuration reloaded"), reloads);
	EXPECT_EQ(daemon_log_count("by uid 65534"), by_nobody);
	free(before);
	free(after);
}

int main(void)
{
	char *json, *before, *after, name[512];
	struct stat st;
	struct run r;
	int n, i;

	test_init();
	if (geteuid() != 0)
		SKIP("needs root to switch to uid %d", NOBODY);
	if (access(tcpbufctl_path(), X_OK))
		SKIP("tcpbufctl not built: %s", tcpbufctl_path());
	if (!kernel_has_peerpidfd())
		SKIP("no SO_PEERPIDFD (Linux 6.5): tcpbufd serves only the administrator");
	c1 = cg_rel(cg_create("c1"));
	c2 = cg_rel(cg_create("c2"));
	c3 = cg_rel(cg_create("c3"));
	parent = cg_rel(cg_test_parent());
	daemon_write_dropin("10-containers.conf",
			    "[Cgroup]\nPath=%s\nLimit=64M\n\n[Cgroup]\nPath=%s\nLimit=64M\n", c1, c2);
	daemon_write_config("[Daemon]\nSocketMode=0666\nPollIntervalMs=200\nSampleIntervalMs=200\n"
			    "DropInDir=%s\nStateDir=%s/state\n", daemon_confdir(), test_tmpdir());
	ASSERT_EQ(daemon_start(""), 0);
	/* uid 65534 must be able to run tcpbufctl where it was built. */
	ctl_as_nobody(&r, c1, "--version");
	if (r.code != 0)
		SKIP("uid %d cannot run %s (exit %d): %s", NOBODY, tcpbufctl_path(), r.code, r.err);
	run_free(&r);

	ASSERT_EQ(ctl(NULL, "set %s 1M 2M 4M", c2), 0);	/* the administrator may */
	json = status_json();
	EXPECT_EQ(json_cgroup_value(json, c1, "limit_pages"), 16384);
	EXPECT_EQ(json_cgroup_value(json, c1, "max_pages"), 16384);
	EXPECT_EQ(json_cgroup_value(json, c2, "max_pages"), 1024);
	EXPECT_EQ(json_cgroup_value(json, c3, "limit_pages"), -3);
	free(json);

	/* Its own status: its own subtree only. */
	ctl_as_nobody(&r, c1, "status --json");
	EXPECT_EQ(r.code, 0);
	EXPECT_TRUE(json_valid(r.out));
	n = json_cgroup_count(r.out);
	EXPECT_GE(n, 1);
	for (i = 0; i < n; i++) {
		EXPECT_EQ(json_cgroup_name(r.out, i, name, sizeof(name)), JSON_FOUND);
		EXPECT_TRUE(!strncmp(name, c1, strlen(c1)) &&
			    (name[strlen(c1)] == '\0' || name[strlen(c1)] == '/'));
	}
	EXPECT_EQ(json_cgroup_value(r.out, c1, "limit_pages"), 16384);
	EXPECT_EQ(json_cgroup_value(r.out, c2, "limit_pages"), -3);
	run_free(&r);
	refused("permission denied", "status %s", c2);
	refused("permission denied", "status --json %s", parent);
	refused("permission denied", "status /", NULL);

	/* An unset that would remove the ceiling: there are no thresholds of its own. */
	refused("ceiling", "unset %s", c1);

	/* Its thresholds, under the ceiling: done, and visible. */
	ctl_as_nobody(&r, c1, "set %s 8M 16M 32M", c1);
	test_log("set %s 8M 16M 32M: exit %d %s", c1, r.code, r.err);
	EXPECT_EQ(r.code, 0);
	run_free(&r);
	json = status_json();
	EXPECT_THRESHOLDS(json, c1, 16384, 2048, 4096, 8192);
	free(json);
	ctl_as_nobody(&r, c1, "set %s 1 1 16384", c1);	/* MAX = the ceiling: allowed */
	EXPECT_EQ(r.code, 0);
	run_free(&r);
	ctl_as_nobody(&r, c1, "set %s 8M 16M 32M", c1);
	EXPECT_EQ(r.code, 0);
	run_free(&r);

	/* Above the ceiling, another cgroup, ceilings, reload: refused, nothing changed. */
	refused("ceiling", "set %s 8M 16M 65M", c1);
	refused("ceiling", "set %s 1 1 16385", c1);
	refused("permission denied", "set %s 1M 2M 3M", c2);
	refused("permission denied", "set %s 1M 2M 3M", parent);
	refused("permission denied", "set-limit %s 128M", c1);	/* raise */
	refused("permission denied", "set-limit %s 32M", c1);	/* lower */
	refused("permission denied", "set-limit %s 1G", c2);
	refused("permission denied", "unset %s", c2);
	refused("permission denied", "unset %s", parent);
	refused("permission denied", "reload", NULL);

	/* Dropping its own thresholds keeps the administrator's ceiling. */
	before = state();
	ctl_as_nobody(&r, c1, "unset %s", c1);
	test_log("unset %s: exit %d %s%s", c1, r.code, r.out, r.err);
	EXPECT_EQ(r.code, 0);
	run_free(&r);
	json = status_json();
	EXPECT_EQ(json_cgroup_value(json, c1, "limit_pages"), 16384);
	EXPECT_EQ(json_cgroup_value(json, c1, "max_pages"), 16384);
	EXPECT_EQ(json_cgroup_value(json, c1, "min_pages"), 8192);
	free(json);
	free(before);
	refused("ceiling", "unset %s", c1);

	/* No borrowing a setuid program's rights. */
	if (stat(SETUID_PROGRAM, &st) == 0 && (st.st_mode & S_ISUID) && st.st_uid == 0) {
		char req[1024];

		snprintf(req, sizeof(req), "set-limit\n%s\n1\n", c3);
		setuid_borrow(req);
		snprintf(req, sizeof(req), "unset\n%s\n", c2);
		setuid_borrow(req);
		setuid_borrow("reload\n");
	} else {
		test_log("no setuid-root %s here: the setuid case is not run", SETUID_PROGRAM);
	}

	/* The administrator still can; a hand-written ceiling is changed in its file. */
	before = state();
	EXPECT_EQ(ctl(NULL, "set-limit %s 128M", c1), 1);
	test_log("administrator's set-limit %s: %s", c1, ctl_stderr());
	EXPECT_TRUE(strstr(ctl_stderr(), "10-containers.conf:2") != NULL);
	after = state();
	EXPECT_TRUE(strcmp(before, after) == 0);
	free(before);
	free(after);
	EXPECT_EQ(ctl(NULL, "set-limit %s 128M", c3), 0);
	EXPECT_EQ(ctl(NULL, "unset %s", c2), 0);
	json = status_json();
	EXPECT_EQ(json_cgroup_value(json, c3, "limit_pages"), 32768);
	EXPECT_EQ(json_cgroup_value(json, c2, "max_pages"), 16384);
	free(json);
	EXPECT_TRUE(daemon_alive());
	return test_done();
}
