// SPDX-License-Identifier: GPL-2.0
/*
 * The unit's seccomp and filesystem sandbox fit what the daemon does.
 *
 * The daemon runs under `strace -f` (detached: the daemon keeps its pid)
 * through start (probe, load, attach, pin), a loopback load, every control
 * command, a refused request, SIGHUP, sd_notify with a watchdog, journal
 * logging ($JOURNAL_STREAM naming its stderr) and SIGTERM. Then:
 *  - every system call it made is allowed by the unit's SystemCallFilter=
 *    (groups expanded with `systemd-analyze syscall-filter`, ~ lines
 *    removing), so SystemCallErrorNumber= never answers it instead;
 *  - every socket() family is in RestrictAddressFamilies=;
 *  - every successful write to the filesystem (create, mkdir, unlink,
 *    rename, chmod, pin) lands in the pin path, the control socket,
 *    DropInDir= or StateDir=, the four places the unit makes writable.
 * The syscalls seen are printed, for the record.
 */
#define _GNU_SOURCE
#include "harness.h"
#include "load.h"
#include "sdunit.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

/* ---- a set of names ------------------------------------------------------ */

struct names {
	char **v;
	size_t n;
};

static bool names_has(const struct names *s, const char *name)
{
	for (size_t i = 0; i < s->n; i++)
		if (!strcmp(s->v[i], name))
			return true;
	return false;
}

static void names_add(struct names *s, const char *name)
{
	if (names_has(s, name))
		return;
	s->v = realloc(s->v, (s->n + 1) * sizeof(*s->v));
	s->v[s->n++] = strdup(name);
}

static void names_del(struct names *s, const char *name)
{
	for (size_t i = 0; i < s->n; i++)
		if (!strcmp(s->v[i], name)) {
			free(s->v[i]);
			s->v[i] = s->v[--s->n];
			return;
		}
}

/* A syscall or @group, expanded by systemd-analyze, into out. */
static void expand(const char *word, struct names *out, int depth)
{
	char *text = NULL, *save = NULL, *l;

	if (word[0] != '@') {
		names_add(out, word);
		return;
	}
	ASSERT_LT(depth, 8);
	ASSERT_EQ(run_sh(&text, "systemd-analyze syscall-filter --no-pager %s 2>/dev/null", word), 0);
	for (l = strtok_r(text, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		l += strspn(l, " \t");
		if (!*l || *l == '#' || !strcmp(l, word))
			continue;
		expand(l, out, depth + 1);
	}
	free(text);
}

/* SystemCallFilter= as systemd applies it: the first allow list, further
 * allow lists added, ~ lists removed. */
static struct names allowed_syscalls(void)
{
	char **vals = unit_values("SystemCallFilter");
	struct names allow = {};

	ASSERT_TRUE(vals && vals[0]);
	ASSERT_TRUE(vals[0][0] != '~');	/* an allow list, not a deny list */
	for (char **v = vals; *v; v++) {
		bool deny = **v == '~';
		char *copy = strdup(*v + deny), *save = NULL, *w;
		struct names set = {};

		for (w = strtok_r(copy, " \t", &save); w; w = strtok_r(NULL, " \t", &save))
			expand(w, &set, 0);
		for (size_t i = 0; i < set.n; i++)
			deny ? names_del(&allow, set.v[i]) : names_add(&allow, set.v[i]);
		free(copy);
	}
	words_free(vals);
	return allow;
}

/* ---- the trace ----------------------------------------------------------- */

static const char *writable[4];

static bool path_writable(const char *path)
{
	for (size_t i = 0; i < 4; i++) {
		size_t n = strlen(writable[i]);

		if (!strncmp(path, writable[i], n) && (path[n] == '/' || path[n] == '\0'))
			return true;
	}
	return false;
}

/* The quoted strings of a trace line, in order (at most 2). */
static int quoted(const char *l, char out[2][4096])
{
	int n = 0;

	while (n < 2 && (l = strchr(l, '"'))) {
		const char *end = l + 1;

		while (*end && *end != '"')
			end += *end == '\\' ? 2 : 1;
		snprintf(out[n++], 4096, "%.*s", (int)(end - l - 1), l + 1);
		l = *end ? end + 1 : end;
	}
	return n;
}

static bool is_write(const char *name, const char *line)
{
	static const char *const writers[] = {
		"mkdir", "mkdirat", "unlink", "unlinkat", "rmdir", "rename", "renameat",
		"renameat2", "chmod", "fchmodat", "chown", "fchownat", "lchown", "link",
		"linkat", "symlink", "symlinkat", "truncate", "mknod", "mknodat", "utimensat",
	};

	for (size_t i = 0; i < sizeof(writers) / sizeof(writers[0]); i++)
		if (!strcmp(name, writers[i]))
			return true;
	if (!strcmp(name, "open") || !strcmp(name, "openat") || !strcmp(name, "creat"))
		return strstr(line, "O_WRONLY") || strstr(line, "O_RDWR") || strstr(line, "O_CREAT");
	if (!strcmp(name, "bpf"))
		return strstr(line, "BPF_OBJ_PIN") != NULL;
	if (!strcmp(name, "bind"))
		return strstr(line, "AF_UNIX") != NULL;
	return false;
}

static void check_trace(const char *trace_path)
{
	struct names allow = allowed_syscalls(), seen = {}, bad = {};
	char **families = unit_words("RestrictAddressFamilies");
	FILE *f = fopen(trace_path, "re");
	char *line = NULL, list[8192] = "";
	size_t cap = 0;
	int lines = 0, writes = 0;

	ASSERT_TRUE(f != NULL);
	test_log("SystemCallFilter= allows %zu system calls", allow.n);
	while (getline(&line, &cap, f) >= 0) {
		char name[64], paths[2][4096];
		const char *p = line + strspn(line, "0123456789 ");
		size_t n = strspn(p, "abcdefghijklmnopqrstuvwxyz0123456789_");

		lines++;
		if (!n || p[n] != '(' || n >= sizeof(name))
			continue;	/* "<... resumed>", "+++ exited", "--- SIG" */
		snprintf(name, sizeof(name), "%.*s", (int)n, p);
		names_add(&seen, name);
		if (!names_has(&allow, name) && !names_has(&bad, name)) {
			names_add(&bad, name);
			test_log("not allowed by SystemCallFilter=: %s", line);
			test_fail();
		}
		if (!strcmp(name, "socket")) {
			char fam[32];

			if (sscanf(p, "socket(%31[A-Z0-9_]", fam) == 1 && !words_have(families, fam)) {
				test_log("family not in RestrictAddressFamilies=: %s", line);
				test_fail();
			}
		}
		if (is_write(name, p) && !strstr(p, "= -1 ")) {
			int k = quoted(p, paths);

			writes++;
			for (int i = 0; i < k; i++)
				if (paths[i][0] == '/' && !path_writable(paths[i])) {
					test_log("writes outside the unit's writable paths: %s", line);
					test_fail();
				}
		}
	}
	free(line);
	fclose(f);
	for (size_t i = 0; i < seen.n; i++) {
		strncat(list, seen.v[i], sizeof(list) - strlen(list) - 2);
		strncat(list, " ", sizeof(list) - strlen(list) - 1);
	}
	test_log("%d trace lines, %d successful writes; %zu system calls used: %s", lines, writes,
		 seen.n, list);
	EXPECT_GT(lines, 100);
	EXPECT_TRUE(names_has(&seen, "bpf"));
	words_free(families);
}

int main(void)
{
	char *bin, *trace, *wrapper, *rel, *state, *q, stream[64];
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct load_opts lo = { .nconn = 4 };
	struct load *l;
	struct stat st;
	int nfd, st_;

	test_init();
	if (!have_program("strace"))
		SKIP("strace not installed");
	if (!have_program("systemd-analyze"))
		SKIP("systemd-analyze not installed (it expands the unit's syscall groups)");
	if (access(UNIT_FILE, R_OK))
		SKIP("%s not found (tests run from the repository root)", UNIT_FILE);
	bin = tcpbufd_abs_path();
	rel = cg_rel(cg_create("a"));
	if (asprintf(&state, "%s/state", test_tmpdir()) < 0 ||
	    asprintf(&trace, "%s/strace.out", test_tmpdir()) < 0)
		abort();
	daemon_write_config("[Daemon]\nDropInDir=%s\nStateDir=%s\nPollIntervalMs=200\n",
			    daemon_confdir(), state);
	writable[0] = daemon_pin_path();
	writable[1] = daemon_socket_path();
	writable[2] = daemon_confdir();
	writable[3] = state;

	/* What systemd would hand it: a notify socket, a watchdog, the journal. */
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/notify.sock", test_tmpdir());
	nfd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	ASSERT_OK(bind(nfd, (struct sockaddr *)&sa, sizeof(sa)));
	setenv("NOTIFY_SOCKET", sa.sun_path, 1);
	/* Read it as systemd does: a full queue would block the daemon. */
	if (test_fork(1) == 0) {
		char buf[4096];

		while (recv(nfd, buf, sizeof(buf), 0) >= 0 || errno == EINTR)
			;
		_exit(0);
	}
	setenv("WATCHDOG_USEC", "200000", 1);
	test_tmpdir();
	{
		FILE *lf = fopen(daemon_log_path(), "ae");

		ASSERT_TRUE(lf != NULL);
		fclose(lf);
	}
	ASSERT_OK(stat(daemon_log_path(), &st));
	snprintf(stream, sizeof(stream), "%llu:%llu", (unsigned long long)st.st_dev,
		 (unsigned long long)st.st_ino);
	setenv("JOURNAL_STREAM", stream, 1);

	q = sh_quote(trace);
	wrapper = write_script("tcpbufd-strace", "exec strace -D -f -qq -o %s -- %s \"$@\"", q,
			       sh_quote(bin));
	free(q);
	setenv("TCPBUFD", wrapper, 1);
	ASSERT_EQ(daemon_start(NULL), 0);

	lo.cgroup = rel;
	l = load_start(&lo);
	ASSERT_TRUE(l != NULL);
	ASSERT_EQ(load_wait_filled(l, 0), 0);
	EXPECT_EQ(ctl(NULL, "set-limit %s 1M", rel), 0);
	EXPECT_EQ(ctl(NULL, "set %s 64K 128K 256K", rel), 0);
	EXPECT_EQ(ctl(NULL, "status"), 0);
	EXPECT_EQ(ctl(NULL, "status --json %s", rel), 0);
	EXPECT_EQ(ctl(NULL, "metrics"), 0);
	EXPECT_EQ(ctl(NULL, "reload"), 0);
	EXPECT_EQ(ctl(NULL, "status %s/nonexistent", rel), 1);
	EXPECT_EQ(daemon_signal(SIGHUP), 0);
	msleep(1000);	/* poll ticks, watchdog pings, state changes */
	EXPECT_EQ(ctl(NULL, "unset %s", rel), 0);
	load_kill(l);
	msleep(300);
	st_ = daemon_stop();
	EXPECT_TRUE(WIFEXITED(st_) && WEXITSTATUS(st_) == 0);
	/* strace writes its last lines as the daemon exits. */
	msleep(200);
	check_trace(trace);
	close(nfd);
	return test_done();
}
