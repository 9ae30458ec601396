// SPDX-License-Identifier: GPL-2.0
/*
 * A real OCI runtime sets a container's limit through tcpbufd-oci-hook.
 *
 * runc (Debian's) runs busybox-static containers from a bundle in this
 * test's directory, each in its own cgroup (linux.cgroupsPath under the
 * test's cgroup), network, pid, mount and cgroup namespaces, with the hook
 * in config.json's "hooks" as Podman and CRI-O put a hooks.d hook there
 * (createRuntime and poststop, the same arguments). Run on the host: runc
 * works with its hybrid cgroup layout (crun does not).
 *
 * 1. tcpbufd.io/limit: 16M. A stalled-receiver load inside the container
 *    (tests/bin/tcpload, the host's /usr bind-mounted for its libc) peaks
 *    at most 1.05 x max by sock_diag in the container's netns; status says
 *    the limit's source is "runtime".
 * 2. A restart of the daemon keeps that limit; a start with another
 *    RuntimeDir (a reboot's fresh /run) does not have it.
 * 3. After the container is deleted the limit is gone from status, from
 *    the pinned cgroup_limits map and from RuntimeDir.
 * 4. tcpbufd.io/limit: 16X fails the start (fail-closed) with one line
 *    naming the annotation, and sets nothing.
 * 5. linux.resources.memory.kernelTCP alone sets the same limit; with only
 *    the createRuntime hook configured, the daemon drops it when runc
 *    removes the cgroup.
 * 6. tcpbufd not running: the container starts anyway (fail-open), and a
 *    daemon started afterwards has no limit for it.
 * 7. A container deleted while tcpbufd is stopped: the daemon's next start
 *    drops its runtime limit from RuntimeDir.
 */
#define _GNU_SOURCE
#include "harness.h"
#include "skmem.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <net/if.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <stdarg.h>
#include <stdbool.h>
#include <unistd.h>

#include "tcpbuf_maps.h"

#define LIMIT_PAGES	4096		/* 16M */
#define NCONN		16

static char runc_root[512], hook[512], lo_hook[512], tcpload[512];
static char rundir1[512], rundir2[512], hookstate[512];
static int nctr;

/* ---- the test binary as a second createRuntime hook: bring lo up ---------- */

/* What a CNI plugin would do: the container's netns has only lo, down. */
static int lo_up_hook(void)
{
	char state[8192], path[64];
	ssize_t n = read(0, state, sizeof(state) - 1);
	struct ifreq ifr = { 0 };
	const char *p;
	int fd, s;

	if (n <= 0)
		return 1;
	state[n] = '\0';
	p = strstr(state, "\"pid\":");
	if (!p)
		return 1;
	snprintf(path, sizeof(path), "/proc/%ld/ns/net", strtol(p + 6, NULL, 10));
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || setns(fd, CLONE_NEWNET))
		return 1;
	s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "lo");
	if (s < 0 || ioctl(s, SIOCGIFFLAGS, &ifr))
		return 1;
	ifr.ifr_flags |= IFF_UP;
	return ioctl(s, SIOCSIFFLAGS, &ifr) ? 1 : 0;
}

/* ---- running runc --------------------------------------------------------- */

/* runc ARGS with output to @log; the exit status, or -1. */
static int runc(const char *log, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int runc(const char *log, const char *fmt, ...)
{
	char cmd[4096], line[4700];
	va_list ap;
	char **argv;
	int argc, st;
	pid_t pid;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	snprintf(line, sizeof(line), "runc --root %s %s", runc_root, cmd);
	argv = split_args(line, &argc);
	pid = test_fork(1);
	if (pid == 0) {
		int fd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);

		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
		}
		execvp("runc", argv);
		_exit(127);
	}
	st = test_reap(pid);
	free(argv);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

struct ctr {
	char id[64], bundle[512], cgroup[256], log[512];	/* cgroup: mount-relative */
};

static void ctr_remove(void *arg)
{
	struct ctr *c = arg;
	char path[512];
	static const char *const v1[] = { "name=systemd", "systemd", "pids", "blkio", "freezer",
					   "devices", "memory", "cpuset", "cpuacct", "cpu",
					   "cpu,cpuacct", "net_cls", "net_prio", "net_cls,net_prio",
					   "perf_event", "hugetlb", "rdma", "misc" };

	runc(c->log, "kill %s KILL", c->id);
	runc(c->log, "delete -f %s", c->id);
	/* runc makes the parents in the v1 hierarchies too: ours, named after our pid. */
	for (size_t i = 0; i < sizeof(v1) / sizeof(v1[0]); i++) {
		snprintf(path, sizeof(path), "/sys/fs/cgroup/%s%s", v1[i], c->cgroup);
		rmdir(path);
		*strrchr(path, '/') = '\0';
		rmdir(path);
	}
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	ASSERT_TRUE(f != NULL);
	fputs(text, f);
	ASSERT_EQ(fclose(f), 0);
}

static void copy_file(const char *from, const char *to)
{
	char buf[65536];
	int in = open(from, O_RDONLY | O_CLOEXEC);
	int out = open(to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0755);
	ssize_t n;

	ASSERT_TRUE(in >= 0 && out >= 0);
	while ((n = read(in, buf, sizeof(buf))) > 0)
		ASSERT_EQ(write(out, buf, (size_t)n), n);
	close(in);
	ASSERT_EQ(close(out), 0);
}

/*
 * A bundle whose config.json has @annotations (JSON members) and
 * @resources (the linux.resources object), with the hooks a runtime would
 * add from /usr/share/containers/oci/hooks.d/tcpbufd.json.
 */
static struct ctr *ctr_make(const char *annotations, const char *resources, bool poststop)
{
	struct ctr *c = calloc(1, sizeof(*c));
	char path[1024], *json, hook_args[2048];
	int n = ++nctr;

	ASSERT_TRUE(c != NULL);
	snprintf(c->id, sizeof(c->id), "tcpbuf-test-%d-%d", (int)getpid(), n);
	snprintf(c->bundle, sizeof(c->bundle), "%s/bundle%d", test_tmpdir(), n);
	snprintf(c->log, sizeof(c->log), "%s/runc%d.log", test_tmpdir(), n);
	snprintf(c->cgroup, sizeof(c->cgroup), "%s/ctr%d", cg_rel(cg_test_parent()), n);
	test_defer(ctr_remove, c);
	for (const char *d = "rootfs\0rootfs/bin\0rootfs/usr\0rootfs/proc\0rootfs/dev\0"; *d;
	     d += strlen(d) + 1) {
		snprintf(path, sizeof(path), "%s/%s", c->bundle, d);
		mkdir(c->bundle, 0755);
		ASSERT_TRUE(!mkdir(path, 0755) || errno == EEXIST);
	}
	snprintf(path, sizeof(path), "%s/rootfs/bin/busybox", c->bundle);
	copy_file("/bin/busybox", path);
	snprintf(path, sizeof(path), "%s/rootfs/bin/sh", c->bundle);
	ASSERT_OK(symlink("busybox", path));
	snprintf(path, sizeof(path), "%s/rootfs/lib", c->bundle);
	ASSERT_OK(symlink("usr/lib", path));
	snprintf(path, sizeof(path), "%s/rootfs/lib64", c->bundle);
	ASSERT_OK(symlink("usr/lib64", path));
	snprintf(path, sizeof(path), "%s/rootfs/tcpload", c->bundle);
	write_file(path, "");

	snprintf(hook_args, sizeof(hook_args),
		 "{\"path\": \"%s\", \"args\": [\"tcpbufd-oci-hook\", \"--socket\", \"%s\", "
		 "\"--state-dir\", \"%s\"], \"timeout\": 30}", hook, daemon_socket_path(), hookstate);
	if (asprintf(&json,
		"{\"ociVersion\": \"1.0.2\",\n"
		" \"process\": {\"terminal\": false, \"user\": {\"uid\": 0, \"gid\": 0},\n"
		"   \"args\": [\"/tcpload\", \"-n\", \"%d\", \"-t\", \"120\"],\n"
		"   \"env\": [\"PATH=/bin\"], \"cwd\": \"/\", \"noNewPrivileges\": true,\n"
		"   \"capabilities\": {\"bounding\": [], \"effective\": [], \"permitted\": []}},\n"
		" \"root\": {\"path\": \"rootfs\", \"readonly\": true},\n"
		" \"hostname\": \"tcpbuf\",\n"
		" \"mounts\": [{\"destination\": \"/proc\", \"type\": \"proc\", \"source\": \"proc\"},\n"
		"   {\"destination\": \"/dev\", \"type\": \"tmpfs\", \"source\": \"tmpfs\", \"options\": [\"nosuid\", \"mode=755\"]},\n"
		"   {\"destination\": \"/usr\", \"type\": \"bind\", \"source\": \"/usr\", \"options\": [\"rbind\", \"ro\"]},\n"
		"   {\"destination\": \"/tcpload\", \"type\": \"bind\", \"source\": \"%s\", \"options\": [\"bind\", \"ro\"]}],\n"
		" \"annotations\": {%s},\n"
		" \"hooks\": {\"createRuntime\": [{\"path\": \"%s\", \"args\": [\"test_oci\", \"--lo-up\"]}, %s]%s%s%s},\n"
		" \"linux\": {\"cgroupsPath\": \"%s\", \"resources\": {%s},\n"
		"   \"namespaces\": [{\"type\": \"pid\"}, {\"type\": \"network\"}, {\"type\": \"ipc\"},\n"
		"     {\"type\": \"uts\"}, {\"type\": \"mount\"}, {\"type\": \"cgroup\"}]}}\n",
		NCONN, tcpload, annotations, lo_hook, hook_args, poststop ? ", \"poststop\": [" : "",
		poststop ? hook_args : "", poststop ? "]" : "", c->cgroup, resources) < 0)
		ASSERT_TRUE(0);
	snprintf(path, sizeof(path), "%s/config.json", c->bundle);
	write_file(path, json);
	free(json);
	return c;
}

static int ctr_start(const struct ctr *c)
{
	return runc(c->log, "run -d --bundle %s %s", c->bundle, c->id);
}

/* The container's init, from its cgroup (what the hook reads too). */
static pid_t ctr_pid(const struct ctr *c)
{
	char path[512], *procs;
	pid_t pid;

	snprintf(path, sizeof(path), "%s%s/cgroup.procs", cg_root(), c->cgroup);
	procs = file_read(path);
	pid = procs ? (pid_t)strtol(procs, NULL, 10) : 0;
	free(procs);
	return pid;
}

/* ---- reading what tcpbufd says --------------------------------------------- */

static char *status_json(void)
{
	char *out = NULL;

	ASSERT_EQ(ctl(&out, "status --json %s", cg_rel(cg_test_parent())), 0);
	ASSERT_TRUE(json_valid(out));
	return out;
}

/* The limit status shows for @cg: pages, -2 null, -1 no row. */
static int64_t status_limit(const char *cg, char *source, size_t len)
{
	char *json = status_json();
	int64_t v = -1;
	int r = json_cgroup_field(json, cg, "limit_pages", &v);

	snprintf(source, len, "(none)");
	json_cgroup_string(json, cg, "source", source, len);
	free(json);
	return r == JSON_FOUND ? v : r == JSON_NULL ? -2 : -1;
}

static bool runtime_file_has(const char *dir, const char *cg)
{
	char path[600], *text;
	bool has;

	snprintf(path, sizeof(path), "%s/runtime-limits", dir);
	text = file_read(path);
	has = text && strstr(text, cg);
	free(text);
	return has;
}

/* Peak of the container's socket memory, by sock_diag in its own netns. */
static uint64_t peak_in_netns(const struct ctr *c, pid_t pid, double seconds)
{
	char path[64];
	int self = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC), theirs;
	uint64_t peak = 0;
	struct skmem_total k;

	snprintf(path, sizeof(path), "/proc/%d/ns/net", (int)pid);
	theirs = open(path, O_RDONLY | O_CLOEXEC);
	ASSERT_TRUE(self >= 0 && theirs >= 0);
	ASSERT_OK(setns(theirs, CLONE_NEWNET));
	for (double end = now_sec() + seconds; now_sec() < end; msleep(50)) {
		if (skmem_subtree(c->cgroup, &k))
			break;
		if (k.pages > peak)
			peak = k.pages;
	}
	ASSERT_OK(setns(self, CLONE_NEWNET));
	close(self);
	close(theirs);
	return peak;
}

static void start_with(const char *rundir)
{
	daemon_write_config("[Daemon]\nRuntimeDir=%s\nDropInDir=%s\nStateDir=%s/state\n"
			    "PollIntervalMs=200\nSampleIntervalMs=200\n", rundir, daemon_confdir(),
			    test_tmpdir());
	ASSERT_EQ(daemon_start(""), 0);
}

static void restart_with(const char *rundir)
{
	ASSERT_GE(daemon_stop(), 0);
	start_with(rundir);
}

/* ---- the cases -------------------------------------------------------------- */

static void limit_annotation(void)
{
	struct ctr *c = ctr_make("\"tcpbufd.io/limit\": \"16M\"", "", true);
	char source[32], *log;
	uint64_t peak, id;
	struct cgroup_limits l;
	pid_t pid;

	ASSERT_EQ(ctr_start(c), 0);
	pid = ctr_pid(c);
	ASSERT_GT(pid, 0);
	EXPECT_EQ(status_limit(c->cgroup, source, sizeof(source)), LIMIT_PAGES);
	EXPECT_EQ(strcmp(source, "runtime"), 0);
	EXPECT_TRUE(runtime_file_has(rundir1, c->cgroup));

	/* 1. The load inside the container stays under max. */
	peak = peak_in_netns(c, pid, 6.0);
	test_log("container %s: sock_diag peak %" PRIu64 " pages, max %d", c->id, peak,
		 LIMIT_PAGES);
	EXPECT_LE(peak, LIMIT_PAGES * 105 / 100);
	EXPECT_GE(peak, LIMIT_PAGES / 2);	/* the load is real: it reached the limit */

	/* 2. Kept across a restart, not across a fresh /run. */
	restart_with(rundir1);
	EXPECT_EQ(status_limit(c->cgroup, source, sizeof(source)), LIMIT_PAGES);
	EXPECT_EQ(strcmp(source, "runtime"), 0);
	restart_with(rundir2);
	EXPECT_LT(status_limit(c->cgroup, source, sizeof(source)), 0);
	restart_with(rundir1);
	EXPECT_EQ(status_limit(c->cgroup, source, sizeof(source)), LIMIT_PAGES);

	/* 3. Gone with the container. */
	id = cg_id(c->cgroup);
	ASSERT_GT(id, 0);
	ASSERT_EQ(runc(c->log, "kill %s KILL", c->id), 0);
	for (int i = 0; i < 100 && ctr_pid(c) > 0; i++)
		msleep(50);
	ASSERT_EQ(runc(c->log, "delete %s", c->id), 0);
	EXPECT_EQ(cg_id(c->cgroup), 0);
	daemon_log_wait("runtime limit removed", 1, 5000);
	EXPECT_EQ(status_limit(c->cgroup, source, sizeof(source)), -1);
	EXPECT_NE(daemon_pinned_lookup("cgroup_limits", &id, &l), 0);
	EXPECT_FALSE(runtime_file_has(rundir1, c->cgroup));
	log = file_read(c->log);
	if (test_failed() && log)
		test_log("runc output:\n%s", log);
	free(log);
}

static void malformed_annotation(void)
{
	struct ctr *c = ctr_make("\"tcpbufd.io/limit\": \"16X\"", "", true);
	char source[32], *log;

	EXPECT_NE(ctr_start(c), 0);
	log = file_read(c->log);
	ASSERT_TRUE(log != NULL);
	EXPECT_TRUE(strstr(log, "annotation tcpbufd.io/limit: bad size '16X'") != NULL);
	if (test_failed())
		test_log("runc output:\n%s", log);
	free(log);
	EXPECT_EQ(ctr_pid(c), 0);
	EXPECT_EQ(status_limit(c->cgroup, source, sizeof(source)), -1);
	EXPECT_FALSE(runtime_file_has(rundir1, c->cgroup));
}

static void kernel_tcp_only(void)
{
	struct ctr *c = ctr_make("", "\"memory\": {\"kernelTCP\": 16777216}", false);
	char source[32];

	ASSERT_EQ(ctr_start(c), 0);
	EXPECT_EQ(status_limit(c->cgroup, source, sizeof(source)), LIMIT_PAGES);
	EXPECT_EQ(strcmp(source, "runtime"), 0);
	/* No poststop hook: the daemon sees the cgroup go. */
	ASSERT_EQ(runc(c->log, "delete -f %s", c->id), 0);
	EXPECT_GE(daemon_log_wait("runtime limit removed with the cgroup", 1, 5000), 1);
	EXPECT_EQ(status_limit(c->cgroup, source, sizeof(source)), -1);
	EXPECT_FALSE(runtime_file_has(rundir1, c->cgroup));
}

static void daemon_absent(void)
{
	struct ctr *c = ctr_make("\"tcpbufd.io/limit\": \"16M\"", "", true);
	char source[32];

	ASSERT_GE(daemon_stop(), 0);
	EXPECT_EQ(ctr_start(c), 0);
	EXPECT_GT(ctr_pid(c), 0);
	start_with(rundir1);
	EXPECT_LT(status_limit(c->cgroup, source, sizeof(source)), 0);
	ASSERT_EQ(runc(c->log, "delete -f %s", c->id), 0);
}

static void removed_while_stopped(void)
{
	struct ctr *c = ctr_make("\"tcpbufd.io/limit\": \"16M\"", "", false);

	ASSERT_EQ(ctr_start(c), 0);
	EXPECT_TRUE(runtime_file_has(rundir1, c->cgroup));
	ASSERT_GE(daemon_stop(), 0);
	ASSERT_EQ(runc(c->log, "delete -f %s", c->id), 0);
	start_with(rundir1);
	EXPECT_EQ(daemon_log_count("runtime limit dropped: the cgroup is gone"), 1);
	EXPECT_FALSE(runtime_file_has(rundir1, c->cgroup));
}

int main(int argc, char **argv)
{
	char self[512];
	ssize_t n;

	if (argc == 2 && !strcmp(argv[1], "--lo-up"))
		return lo_up_hook();
	test_init();
	if (access("/usr/sbin/runc", X_OK) && access("/usr/bin/runc", X_OK))
		SKIP("no runc (Debian package runc)");
	if (access("/bin/busybox", X_OK))
		SKIP("no /bin/busybox (Debian package busybox-static)");
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	ASSERT_GT(n, 0);
	self[n] = '\0';
	snprintf(lo_hook, sizeof(lo_hook), "%s", self);
	ASSERT_TRUE(realpath("build/tcpbufd-oci-hook", hook) != NULL);
	ASSERT_TRUE(realpath("tests/bin/tcpload", tcpload) != NULL);
	snprintf(runc_root, sizeof(runc_root), "%s/runc", test_tmpdir());
	snprintf(rundir1, sizeof(rundir1), "%s/run1", test_tmpdir());
	snprintf(rundir2, sizeof(rundir2), "%s/run2", test_tmpdir());
	snprintf(hookstate, sizeof(hookstate), "%s/hookstate", test_tmpdir());
	cg_test_parent();
	start_with(rundir1);

	limit_annotation();
	malformed_annotation();
	kernel_tcp_only();
	daemon_absent();
	removed_while_stopped();
	return test_done();
}
