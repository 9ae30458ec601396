// SPDX-License-Identifier: GPL-2.0
/*
 * Delegation to real containers: a process inside a container is never the
 * administrator, and names cgroups as it sees them.
 *
 * The container is what rootful runtimes make: run from inside cgroup ct,
 * `unshare -C -p -f -n -m --mount-proc setpriv --bounding-set=-all
 * --inh-caps=-all tcpbufctl ...` is host uid 0 with no capabilities in its
 * own cgroup, pid, net and mount namespaces; its /proc/self/cgroup reads
 * "0::/". A second kind has a user namespace with a uid map (root there,
 * every capability there): `unshare -U --map-root-user -C ...`.
 *
 * Shown: neither can set-limit, reload, or touch the sibling cgroup sib
 * (by its host path or by "/.."): exit 1, one line saying why, nothing
 * changed (status, drop-in directory, state file). The first sets and
 * unsets its own thresholds under its ceiling as "/", sees its own row as
 * "/" and no host path; "//", "/." and "/./" are one cgroup (one line in
 * the state file), as "//ct/" is for the host. Its thresholds die with its
 * cgroup: ct2 removed and made again starts from the ceiling's defaults.
 * A client that connects, hands its connection to a child and exits before
 * the daemon accepts (the daemon is stopped meanwhile) is refused: the
 * process that connected is gone, so nothing proves who holds the
 * connection (the daemon used to read /proc later and take uid 0 for the
 * administrator). The table escapes control characters in cgroup names.
 */
#define _GNU_SOURCE
#include "harness.h"

#include <fcntl.h>
#include <grp.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <linux/sched.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *ct, *ct2, *sib, *parent;
static char self_exe[4096];

enum kind { ROOTFUL, USERNS };

static char *read_all(const char *path)
{
	char *s = file_read(path);

	return s ? s : strdup("");
}

static void enter_cgroup(const void *cg)
{
	if (cg_enter(cg)) {
		perror("enter cgroup");
		_exit(126);
	}
}

/* @argv[64]: the container of kind @k around @cmd (NULL-terminated). */
static void container_argv(enum kind k, char **cmd, char **argv)
{
	static char *rootful[] = { "unshare", "-C", "-p", "-f", "-n", "-m", "--mount-proc",
				   "setpriv", "--bounding-set=-all", "--inh-caps=-all", NULL };
	static char *userns[] = { "unshare", "-U", "--map-root-user", "-C", "-p", "-f", "-n",
				  "-m", "--mount-proc", NULL };
	char **pre = k == ROOTFUL ? rootful : userns;
	int n = 0;

	for (; *pre; pre++)
		argv[n++] = *pre;
	for (; *cmd && n < 63; cmd++)
		argv[n++] = *cmd;
	argv[n] = NULL;
}

/* In a child: exec the container around @cmd, from inside @cg. */
static void container_exec(enum kind k, const char *cg, char **cmd)
{
	char *argv[64];

	container_argv(k, cmd, argv);
	enter_cgroup(cg);
	execvp(argv[0], argv);
	_exit(127);
}

static void run_in(struct run *r, enum kind k, const char *cg, char **cmd)
{
	char *argv[64];

	container_argv(k, cmd, argv);
	run_child(r, enter_cgroup, cg, argv);
}

/* tcpbufctl ARGS inside a container of kind @k in cgroup @cg. */
static void ctl_in(struct run *r, enum kind k, const char *cg, const char *fmt, ...)
{
	char *line, **args, *cmd[40];
	int nargs;
	va_list ap;

	va_start(ap, fmt);
	if (vasprintf(&line, fmt, ap) < 0)
		test_abort();
	va_end(ap);
	args = split_args(line, &nargs);
	cmd[0] = (char *)tcpbufctl_path();
	cmd[1] = "--socket";
	cmd[2] = (char *)daemon_socket_path();
	for (int i = 0; i < nargs && i < 36; i++)
		cmd[3 + i] = args[i];
	cmd[3 + (nargs < 36 ? nargs : 36)] = NULL;
	run_in(r, k, cg, cmd);
	test_log("[%s] tcpbufctl %s: exit %d %s", k == ROOTFUL ? "rootful" : "userns", line,
		 r->code, r->err);
	for (int i = 0; i < nargs; i++)
		free(args[i]);
	free(args);
	free(line);
}

static char *status_json(void)
{
	return status_json_of(parent);
}

static char *thresholds_file(void)
{
	char path[1024];

	snprintf(path, sizeof(path), "%s/state/thresholds", test_tmpdir());
	return read_all(path);
}

/* What a refusal must leave alone: limits of every test cgroup, drop-ins, state. */
static char *state(void)
{
	const char *cgs[] = { parent, ct, sib };
	char dir[1024];

	snprintf(dir, sizeof(dir), "%s/state", test_tmpdir());
	return limits_snapshot(parent, cgs, 3, dir);
}

static void refused_code(int code, enum kind k, const char *why, const char *fmt,
			 const char *arg)
{
	char *before = state(), *after, what[512];
	struct run r;

	snprintf(what, sizeof(what), fmt, arg);
	ctl_in(&r, k, ct, fmt, arg);
	after = state();
	expect_refused(what, &r, code, why, before, after);
	EXPECT_TRUE(strstr(r.err, ct) == NULL);	/* not its own host path */
	run_free(&r);
	free(before);
	free(after);
}

static void refused(enum kind k, const char *why, const char *fmt, const char *arg)
{
	refused_code(1, k, why, fmt, arg);
}

static int count_lines_with(const char *text, const char *needle)
{
	int n = 0;

	for (const char *p = text; (p = strstr(p, needle)); p++)
		n++;
	return n;
}

/*
 * Helper, run inside the container: connect, hand the connection to a child,
 * exit. The child waits for a line on stdin (the daemon runs again), sends
 * @req and prints the reply's code.
 */
static int outlive_client(const char *sock, const char *req)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char reply[256] = "";
	int fd, st;
	pid_t client, holder;

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", sock);
	client = fork();
	if (client == 0) {
		fd = socket(AF_UNIX, SOCK_STREAM, 0);
		if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)))
			_exit(125);
		holder = fork();
		if (holder == 0) {
			char go[8];
			ssize_t n, got = 0;

			if (read(0, go, sizeof(go)) <= 0)
				_exit(124);
			if (write(fd, req, strlen(req)) != (ssize_t)strlen(req))
				_exit(123);
			shutdown(fd, SHUT_WR);
			while ((n = read(fd, reply + got, sizeof(reply) - 1 - got)) > 0)
				got += n;
			dprintf(1, "reply %.*s\n", (int)strcspn(reply, "\n"), reply);
			_exit(0);
		}
		_exit(0); /* the process that connected is gone */
	}
	waitpid(client, &st, 0);
	printf("client gone\n");
	fflush(stdout);
	while (wait(&st) > 0)
		;
	return 0;
}

static void outlive_case(void)
{
	char *cmd[] = { self_exe, "--outlive-client", (char *)daemon_socket_path(),
			"set-limit\n/\n8192\n", NULL };
	char *before = state(), *after, outf[1024];
	int in[2], o, st;
	pid_t pid;

	ASSERT_OK(pipe(in));
	snprintf(outf, sizeof(outf), "%s/outlive.out", test_tmpdir());
	ASSERT_OK(daemon_signal(SIGSTOP));
	pid = test_fork(1);
	if (pid == 0) {
		o = open(outf, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		dup2(in[0], 0);
		dup2(o, 1);
		close(in[1]);
		container_exec(ROOTFUL, ct, cmd);
	}
	close(in[0]);
	for (int i = 0; i < 100; i++) {
		char *out = read_all(outf);
		int gone = strstr(out, "client gone") != NULL;

		free(out);
		if (gone)
			break;
		msleep(50);
	}
	ASSERT_OK(daemon_signal(SIGCONT));
	msleep(200);
	ASSERT_EQ(write(in[1], "go\n", 3), 3);
	close(in[1]);
	st = test_reap(pid);
	{
		char *out = read_all(outf);

		test_log("outliving connection: exit %d: %s", WIFEXITED(st) ? WEXITSTATUS(st) : -1,
			 out);
		EXPECT_TRUE(strstr(out, "client gone") != NULL);
		EXPECT_TRUE(strstr(out, "reply 1 ") != NULL);
		free(out);
	}
	after = state();
	EXPECT_TRUE(strcmp(before, after) == 0);
	if (strcmp(before, after))
		test_log("changed:\n%s---\n%s", before, after);
	free(before);
	free(after);
}

/*
 * The pid itself reused: a tenant (uid 65534 in ct) connects while the
 * daemon is stopped, hands its connection to a child and exits; a process of
 * cgroup sib then gets its very pid (clone3 set_tid). Reading /proc by that
 * pid would give the tenant sib's scope; the pidfd of the process that
 * connected says it is gone.
 */
static void pid_reuse_case(void)
{
	char *before = state(), *after, req[512], reply[64] = "";
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int ready[2], go[2], res[2], cgfd;
	pid_t client, reused = 0, holder;

	snprintf(req, sizeof(req), "set\n%s\n1M\n2M\n4M\n", sib);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", daemon_socket_path());
	ASSERT_OK(pipe(ready));
	ASSERT_OK(pipe(go));
	ASSERT_OK(pipe(res));
	ASSERT_OK(daemon_signal(SIGSTOP));
	client = test_fork(1);
	if (client == 0) {
		int fd;

		if (cg_enter(ct) || setgroups(0, NULL) || setresgid(65534, 65534, 65534) ||
		    setresuid(65534, 65534, 65534))
			_exit(126);
		fd = socket(AF_UNIX, SOCK_STREAM, 0);
		if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)))
			_exit(125);
		if (fork() == 0) {
			ssize_t n, got = 0;
			char c;

			if (read(go[0], &c, 1) != 1 || write(fd, req, strlen(req)) < 0)
				_exit(124);
			shutdown(fd, SHUT_WR);
			while ((n = read(fd, reply + got, sizeof(reply) - 1 - got)) > 0)
				got += n;
			if (write(res[1], reply, got) < 0)
				_exit(123);
			_exit(0);
		}
		_exit(0);
	}
	test_reap(client); /* the pid is free again */
	{
		char *abs = cg_abs(sib);
		struct clone_args ca = { .flags = CLONE_INTO_CGROUP, .exit_signal = SIGCHLD,
					 .set_tid = (uintptr_t)&client, .set_tid_size = 1 };

		cgfd = open(abs, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		ca.cgroup = cgfd;
		reused = syscall(SYS_clone3, &ca, sizeof(ca));
		if (reused == 0) {
			pause();
			_exit(0);
		}
		close(cgfd);
		free(abs);
	}
	test_log("pid %d reused in %s: %s", client, sib, reused == client ? "yes" : strerror(errno));
	ASSERT_OK(daemon_signal(SIGCONT));
	msleep(200);
	ASSERT_EQ(write(go[1], "g", 1), 1);
	holder = read(res[0], reply, sizeof(reply) - 1);
	reply[holder > 0 ? holder : 0] = '\0';
	test_log("reply to the recycled pid's connection: %.*s", (int)strcspn(reply, "\n"), reply);
	EXPECT_TRUE(!strncmp(reply, "1 ", 2));
	if (reused > 0) {
		kill(reused, SIGKILL);
		test_reap(reused);
	}
	after = state();
	EXPECT_TRUE(strcmp(before, after) == 0);
	if (strcmp(before, after))
		test_log("changed:\n%s---\n%s", before, after);
	free(before);
	free(after);
	close(ready[0]);
	close(ready[1]);
}

int main(int argc, char **argv)
{
	char *json, *t, *out = NULL;
	struct run r;
	ssize_t n;

	if (argc == 4 && !strcmp(argv[1], "--outlive-client"))
		return outlive_client(argv[2], argv[3]);
	test_init();
	if (geteuid() != 0)
		SKIP("needs root for namespaces");
	if (!kernel_has_peerpidfd())
		SKIP("no SO_PEERPIDFD (Linux 6.5): tcpbufd serves only the administrator");
	if (system("unshare --version >/dev/null 2>&1 && setpriv --version >/dev/null 2>&1"))
		SKIP("no unshare or setpriv (util-linux)");
	n = readlink("/proc/self/exe", self_exe, sizeof(self_exe) - 1);
	ASSERT_GT(n, 0);
	self_exe[n] = '\0';
	ct = cg_rel(cg_create("ct"));
	ct2 = cg_rel(cg_create("ct2"));
	sib = cg_rel(cg_create("sib"));
	parent = cg_rel(cg_test_parent());
	daemon_write_dropin("10-containers.conf",
			    "[Cgroup]\nPath=%s\nLimit=16M\n\n[Cgroup]\nPath=%s\nLimit=16M\n\n"
			    "[Cgroup]\nPath=%s\nLimit=16M\n\n[Cgroup]\nPath=%s/esc*\nLimit=4M\n",
			    ct, ct2, sib, parent);
	daemon_write_config("[Daemon]\nSocketMode=0666\nPollIntervalMs=200\nSampleIntervalMs=200\n"
			    "DropInDir=%s\nStateDir=%s/state\n", daemon_confdir(), test_tmpdir());
	ASSERT_EQ(daemon_start(""), 0);
	ctl_in(&r, ROOTFUL, ct, "--version");
	if (r.code != 0)
		SKIP("cannot run a container here (exit %d): %s", r.code, r.err);
	run_free(&r);

	/* Not the administrator, whatever its uid. */
	refused(ROOTFUL, "permission denied", "set-limit / 32M", NULL);
	refused(ROOTFUL, "permission denied", "reload", NULL);
	refused(ROOTFUL, "ceiling", "unset /", NULL);
	refused(USERNS, "permission denied", "set-limit / 32M", NULL);
	refused(USERNS, "permission denied", "reload", NULL);
	/* The sibling: by its host path it does not exist here; above the root is nothing. */
	refused(ROOTFUL, "no such cgroup", "set %s 1M 2M 4M", sib);
	refused(ROOTFUL, "no such cgroup", "unset %s", sib);
	refused_code(2, ROOTFUL, "'..' is not allowed", "set /../sib 1M 2M 4M", NULL);
	refused_code(2, ROOTFUL, "'..' is not allowed", "unset /../sib", NULL);
	refused_code(2, ROOTFUL, "'..' is not allowed", "status /../sib", NULL);
	refused(ROOTFUL, "ceiling", "set / 1M 2M 17M", NULL);

	/* Its own thresholds, by the name it sees. */
	ctl_in(&r, ROOTFUL, ct, "set / 8M 12M 16M");
	EXPECT_EQ(r.code, 0);
	run_free(&r);
	json = status_json();
	EXPECT_THRESHOLDS(json, ct, 4096, 2048, 3072, 4096);
	free(json);
	ctl_in(&r, ROOTFUL, ct, "status --json");
	EXPECT_EQ(r.code, 0);
	EXPECT_TRUE(json_valid(r.out));
	EXPECT_EQ(json_cgroup_count(r.out), 1);
	EXPECT_EQ(json_cgroup_value(r.out, "/", "pressure_pages"), 3072);
	EXPECT_TRUE(strstr(r.out, "tcpbuf-test") == NULL);
	run_free(&r);
	ctl_in(&r, ROOTFUL, ct, "status");
	EXPECT_EQ(r.code, 0);
	test_log("its table:\n%s", r.out);
	EXPECT_TRUE(strstr(r.out, "\n/ ") != NULL);
	EXPECT_TRUE(strstr(r.out, "tcpbuf-test") == NULL);
	run_free(&r);

	/* One spelling per cgroup. */
	ctl_in(&r, ROOTFUL, ct, "set // 4M 8M 12M");
	EXPECT_EQ(r.code, 0);
	run_free(&r);
	ctl_in(&r, ROOTFUL, ct, "set /. 4M 8M 12M");
	EXPECT_EQ(r.code, 0);
	run_free(&r);
	ctl_in(&r, ROOTFUL, ct, "set /./ 4M 8M 12M");
	EXPECT_EQ(r.code, 0);
	run_free(&r);
	EXPECT_EQ(ctl(NULL, "set /%s//ct/ 4M 8M 12M", parent), 0);
	EXPECT_EQ(ctl(NULL, "set %s/./ct 4M 8M 12M", parent), 0);
	t = thresholds_file();
	test_log("thresholds file:\n%s", t);
	EXPECT_EQ(count_lines_with(t, "\n/"), 1);
	EXPECT_TRUE(strstr(t, ct) != NULL);
	free(t);

	/* Unset by the name it sees: back to the ceiling's defaults. */
	ctl_in(&r, ROOTFUL, ct, "unset /");
	EXPECT_EQ(r.code, 0);
	run_free(&r);
	json = status_json();
	EXPECT_EQ(json_cgroup_value(json, ct, "limit_pages"), 4096);
	EXPECT_EQ(json_cgroup_value(json, ct, "max_pages"), 4096);
	EXPECT_EQ(json_cgroup_value(json, ct, "min_pages"), 2048);
	free(json);
	t = thresholds_file();
	EXPECT_EQ(count_lines_with(t, "\n/"), 0);
	free(t);

	/* Thresholds die with their cgroup. */
	ctl_in(&r, ROOTFUL, ct2, "set / 1M 2M 3M");
	EXPECT_EQ(r.code, 0);
	run_free(&r);
	{
		char *abs = cg_abs(ct2);

		ASSERT_OK(rmdir(abs));
		msleep(500);
		ASSERT_OK(mkdir(abs, 0755));
		free(abs);
	}
	msleep(500);
	json = status_json();
	EXPECT_EQ(json_cgroup_value(json, ct2, "limit_pages"), 4096);
	EXPECT_EQ(json_cgroup_value(json, ct2, "max_pages"), 4096);
	free(json);
	t = thresholds_file();
	EXPECT_TRUE(strstr(t, ct2) == NULL);
	free(t);

	/* A connection that outlives the process that made it proves nothing. */
	outlive_case();
	pid_reuse_case();

	/* Cgroup names are the tenants' choice: the table escapes them. */
	{
		char name[512], *abs;

		snprintf(name, sizeof(name), "%s/esc\033[2Jx", cg_test_parent());
		ASSERT_OK(mkdir(name, 0755));
		abs = strdup(name);
		msleep(300);
		EXPECT_EQ(ctl(&out, "status %s", parent), 0);
		test_log("table:\n%s", out);
		EXPECT_TRUE(strchr(out, '\033') == NULL);
		EXPECT_TRUE(strstr(out, "esc\\x1b[2Jx") != NULL);
		free(out);
		rmdir(abs);
		free(abs);
	}
	EXPECT_TRUE(daemon_alive());
	return test_done();
}
