// SPDX-License-Identifier: GPL-2.0
/* tcpbufd test harness: see harness.h. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "harness.h"

#include <dirent.h>
#include <linux/bpf.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_DEFERS	64
#define MAX_CHILDREN	256

static int h_inited;
static pid_t h_owner;		/* the test process */
static int h_is_reaper;
static volatile sig_atomic_t h_cleaning;
static int h_failed;
static int h_nchecks_failed;

static int h_reaper_fd = -1;	/* write end, owner only */
static pid_t h_reaper_pid;

static struct { void (*fn)(void *); void *arg; } h_defers[MAX_DEFERS];
static int h_ndefers;
static pid_t h_children[MAX_CHILDREN];
static int h_nchildren;

static char h_cgroot[PATH_MAX];
static int h_cgroot_done;
static char h_parent[PATH_MAX / 2];	/* <mount>/tcpbuf-test-<pid> */
static int h_parent_made;
static char h_orig_cg[2 * PATH_MAX + 32];	/* absolute, where test_init found us */
static int h_entered;

static char h_tmpdir[PATH_MAX / 2];
static int h_tmpdir_made;
static char h_pin[PATH_MAX];
static char h_sock[PATH_MAX];
static char h_log[PATH_MAX];
static char h_conf[PATH_MAX];
static int h_have_conf;
static char h_confdir[PATH_MAX];

static pid_t h_dpid;		/* daemon */
static char *h_ctl_err;

/* ---------------------------------------------------------------- util */

double now_sec(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

void msleep(unsigned int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

static int write_file(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	ssize_t n;
	int err;

	if (fd < 0)
		return -1;
	n = write(fd, s, strlen(s));
	err = errno;
	close(fd);
	if (n != (ssize_t)strlen(s)) {
		errno = n < 0 ? err : EIO;
		return -1;
	}
	return 0;
}

/* Whole file into a malloc'd NUL-terminated buffer, NULL on error. */
static char *read_file_all(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	size_t cap = 4096, len = 0;
	char *buf;

	if (fd < 0)
		return NULL;
	buf = malloc(cap);
	for (;;) {
		ssize_t n;

		if (len + 1 >= cap) {
			cap *= 2;
			buf = realloc(buf, cap);
		}
		n = read(fd, buf + len, cap - len - 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		len += n;
	}
	close(fd);
	buf[len] = 0;
	return buf;
}

static int is_dir(const char *p)
{
	struct stat st;

	return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

/* Remove a directory tree (works on bpffs too: unlink files, rmdir dirs). */
static int rm_rf(const char *path)
{
	struct stat st;
	DIR *d;
	struct dirent *e;
	int ret = 0;

	if (lstat(path, &st))
		return errno == ENOENT ? 0 : -1;
	if (!S_ISDIR(st.st_mode))
		return unlink(path);
	d = opendir(path);
	if (d) {
		while ((e = readdir(d))) {
			char sub[PATH_MAX];

			if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
				continue;
			snprintf(sub, sizeof(sub), "%s/%s", path, e->d_name);
			if (rm_rf(sub))
				ret = -1;
		}
		closedir(d);
	}
	if (rmdir(path) && errno != ENOENT)
		ret = -1;
	return ret;
}

static int xvasprintf(char **out, const char *fmt, va_list ap)
{
	int n = vasprintf(out, fmt, ap);

	if (n < 0) {
		fprintf(stderr, "harness: out of memory\n");
		abort();
	}
	return n;
}

/* ---------------------------------------------------------------- core */

void test_log(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fputs("# ", stdout);
	vfprintf(stdout, fmt, ap);
	fputc('\n', stdout);
	fflush(stdout);
	va_end(ap);
}

void test_fail(void)
{
	h_failed = 1;
}

int test_failed(void)
{
	return h_failed;
}

static void reaper_tell(void)
{
	char msg[32];
	int n;

	if (h_reaper_fd < 0)
		return;
	n = snprintf(msg, sizeof(msg), "D %d\n", (int)h_dpid);
	if (write(h_reaper_fd, msg, n) != n) {
		/* the reaper is a backstop only */
	}
}

void test_defer(void (*fn)(void *), void *arg)
{
	if (h_ndefers >= MAX_DEFERS) {
		fprintf(stderr, "harness: too many deferred cleanups\n");
		test_abort();
	}
	h_defers[h_ndefers].fn = fn;
	h_defers[h_ndefers].arg = arg;
	h_ndefers++;
}

static void track_child(pid_t pid)
{
	if (h_nchildren < MAX_CHILDREN)
		h_children[h_nchildren++] = pid;
}

void test_untrack(pid_t pid)
{
	for (int i = 0; i < h_nchildren; i++) {
		if (h_children[i] == pid) {
			h_children[i] = h_children[--h_nchildren];
			return;
		}
	}
}

int test_reap(pid_t pid)
{
	int st;
	pid_t r;

	do
		r = waitpid(pid, &st, 0);
	while (r < 0 && errno == EINTR);
	test_untrack(pid);
	return r == pid ? st : -1;
}

static void child_reset_signals(void)
{
	static const int sigs[] = { SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGALRM,
				    SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT,
				    SIGPIPE, SIGCHLD };
	sigset_t all;

	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		signal(sigs[i], SIG_DFL);
	sigemptyset(&all);
	sigprocmask(SIG_SETMASK, &all, NULL);
	alarm(0);
}

pid_t test_fork(int track)
{
	pid_t parent = getpid();
	pid_t pid;

	fflush(NULL);
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		child_reset_signals();
		if (h_reaper_fd >= 0) {
			close(h_reaper_fd);
			h_reaper_fd = -1;
		}
		h_reaper_pid = 0;
		h_ndefers = 0;
		h_nchildren = 0;
		h_dpid = 0;
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(1);
		return 0;
	}
	if (track)
		track_child(pid);
	return pid;
}

/* ---------------------------------------------------------------- checks */

static int h_report(const char *file, int line)
{
	(void)file;
	(void)line;
	h_failed = 1;
	h_nchecks_failed++;
	return 0;
}

static int h_compare(const char *op, int c)
{
	if (!strcmp(op, "=="))
		return c == 0;
	if (!strcmp(op, "!="))
		return c != 0;
	if (!strcmp(op, ">="))
		return c >= 0;
	if (!strcmp(op, "<="))
		return c <= 0;
	if (!strcmp(op, ">"))
		return c > 0;
	return c < 0;
}

/* A failed comparison, its two values already formatted. */
static int h_fail_cmp(const char *file, int line, const char *op, const char *sa,
		      const char *se, const char *a, const char *e)
{
	fflush(stdout);
	fprintf(stderr, "%s:%d: check failed: %s %s %s\n\tactual:   %s\n\texpected: %s %s\n",
		file, line, sa, op, se, a, op, e);
	return h_report(file, line);
}

int h_check_cmp(const char *file, int line, const char *op, const char *sa,
		const char *se, int64_t a, int64_t e)
{
	char va[32], ve[32];

	if (h_compare(op, (a > e) - (a < e)))
		return 1;
	snprintf(va, sizeof(va), "%" PRId64, a);
	snprintf(ve, sizeof(ve), "%" PRId64, e);
	return h_fail_cmp(file, line, op, sa, se, va, ve);
}

int h_check_cmpf(const char *file, int line, const char *op, const char *sa,
		 const char *se, double a, double e)
{
	char va[32], ve[32];

	if (h_compare(op, (a > e) - (a < e)))
		return 1;
	snprintf(va, sizeof(va), "%.6g", a);
	snprintf(ve, sizeof(ve), "%.6g", e);
	return h_fail_cmp(file, line, op, sa, se, va, ve);
}

/* A failed |actual - expected| <= tol, its values already formatted. */
static int h_fail_near(const char *file, int line, const char *sa, const char *se,
		       const char *st, const char *a, const char *e, const char *t,
		       const char *d)
{
	fflush(stdout);
	fprintf(stderr, "%s:%d: check failed: %s near %s (tolerance %s)\n"
		"\tactual:   %s\n\texpected: %s +- %s (off by %s)\n", file, line, sa, se, st, a,
		e, t, d);
	return h_report(file, line);
}

int h_check_near(const char *file, int line, const char *sa, const char *se,
		 const char *st, int64_t a, int64_t e, int64_t tol)
{
	int64_t d = a > e ? a - e : e - a, x[4] = { a, e, tol, d };
	char v[4][32];

	if (d <= tol)
		return 1;
	for (int i = 0; i < 4; i++)
		snprintf(v[i], sizeof(v[i]), "%" PRId64, x[i]);
	return h_fail_near(file, line, sa, se, st, v[0], v[1], v[2], v[3]);
}

int h_check_ok(const char *file, int line, const char *sa, int64_t a, int err)
{
	if (a == 0)
		return 1;
	fflush(stdout);
	fprintf(stderr, "%s:%d: check failed: %s == 0\n\tactual:   %" PRId64
		"%s%s\n\texpected: 0\n", file, line, sa, a,
		err ? ", errno " : "", err ? strerror(err) : "");
	return h_report(file, line);
}

int h_check_true(const char *file, int line, const char *sa, int ok)
{
	if (ok)
		return 1;
	fflush(stdout);
	fprintf(stderr, "%s:%d: check failed: %s\n\tactual:   false\n\texpected: true\n",
		file, line, sa);
	return h_report(file, line);
}

/* -------------------------------------------------------------- cgroups */

static void unescape_mount(char *s)
{
	char *r = s, *w = s;

	while (*r) {
		if (r[0] == '\\' && r[1] >= '0' && r[1] <= '7' && r[2] >= '0' &&
		    r[2] <= '7' && r[3] >= '0' && r[3] <= '7') {
			*w++ = (char)((r[1] - '0') * 64 + (r[2] - '0') * 8 + (r[3] - '0'));
			r += 4;
		} else {
			*w++ = *r++;
		}
	}
	*w = 0;
}

const char *cg_root(void)
{
	FILE *f;
	char *line = NULL;
	size_t cap = 0;

	if (h_cgroot_done)
		return h_cgroot[0] ? h_cgroot : NULL;
	h_cgroot_done = 1;
	f = fopen("/proc/self/mountinfo", "re");
	if (!f)
		return NULL;
	while (getline(&line, &cap, f) > 0) {
		char *sep = strstr(line, " - ");
		char *fields[5], *p = line;
		int i;

		if (!sep)
			continue;
		if (strncmp(sep + 3, "cgroup2 ", 8))
			continue;
		*sep = 0;
		for (i = 0; i < 5; i++) {
			fields[i] = strsep(&p, " ");
			if (!fields[i])
				break;
		}
		if (i < 5)
			continue;
		unescape_mount(fields[4]);
		snprintf(h_cgroot, sizeof(h_cgroot), "%s", fields[4]);
		break;
	}
	free(line);
	fclose(f);
	return h_cgroot[0] ? h_cgroot : NULL;
}

/* "0::/x" of /proc/self/cgroup, as an absolute path. */
static void find_orig_cgroup(void)
{
	FILE *f = fopen("/proc/self/cgroup", "re");
	char line[PATH_MAX + 16];
	const char *root = cg_root();

	h_orig_cg[0] = 0;
	if (!f || !root) {
		if (f)
			fclose(f);
		return;
	}
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, "0::", 3)) {
			line[strcspn(line, "\n")] = 0;
			if (!strcmp(line + 3, "/"))
				snprintf(h_orig_cg, sizeof(h_orig_cg), "%s", root);
			else
				snprintf(h_orig_cg, sizeof(h_orig_cg), "%s%s", root, line + 3);
			break;
		}
	}
	fclose(f);
}

static int has_word(const char *text, const char *word)
{
	size_t n = strlen(word);
	const char *p = text;

	while (p && (p = strstr(p, word))) {
		if ((p == text || p[-1] == ' ' || p[-1] == '\n') &&
		    (p[n] == 0 || p[n] == ' ' || p[n] == '\n'))
			return 1;
		p += n;
	}
	return 0;
}

/* Best effort: delegate the memory controller to path's children. */
static void cg_delegate_memory(const char *path)
{
	char f[PATH_MAX];
	char *ctl;

	snprintf(f, sizeof(f), "%s/cgroup.controllers", path);
	ctl = read_file_all(f);
	if (ctl && has_word(ctl, "memory")) {
		snprintf(f, sizeof(f), "%s/cgroup.subtree_control", path);
		write_file(f, "+memory");
	}
	free(ctl);
}

const char *cg_test_parent(void)
{
	const char *root;

	if (!h_inited)
		test_init();
	if (h_parent_made)
		return h_parent;
	root = cg_root();
	if (!root)
		test_skip("no cgroup v2 mount in /proc/self/mountinfo");
	if (mkdir(h_parent, 0755) && errno != EEXIST) {
		fprintf(stderr, "harness: mkdir %s: %s\n", h_parent, strerror(errno));
		test_abort();
	}
	h_parent_made = 1;
	cg_delegate_memory(h_parent);
	return h_parent;
}

const char *cg_create(const char *rel)
{
	char path[PATH_MAX];
	size_t base;
	char *p;

	while (*rel == '/')
		rel++;
	snprintf(path, sizeof(path), "%s/%s", cg_test_parent(), rel);
	base = strlen(h_parent) + 1;
	/* strip trailing slashes */
	for (p = path + strlen(path) - 1; p > path + base && *p == '/'; p--)
		*p = 0;
	for (p = path + base; ; p++) {
		if (*p == '/' || *p == 0) {
			char c = *p;

			*p = 0;
			if (mkdir(path, 0755) && errno != EEXIST) {
				fprintf(stderr, "harness: mkdir %s: %s\n", path, strerror(errno));
				test_abort();
			}
			if (c == '/')
				cg_delegate_memory(path);
			*p = c;
			if (!c)
				break;
		}
	}
	return strdup(path);
}

int daemon_pinned_fd(const char *name)
{
	char path[4096];
	union bpf_attr attr = {};

	if (snprintf(path, sizeof(path), "%s/%s", daemon_pin_path(), name) >= (int)sizeof(path)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	attr.pathname = (uint64_t)(uintptr_t)path;
	return syscall(SYS_bpf, BPF_OBJ_GET, &attr, sizeof(attr));
}

int daemon_pinned_lookup(const char *name, const void *key, void *value)
{
	union bpf_attr attr = {};
	int fd = daemon_pinned_fd(name), r;

	if (fd < 0)
		return -1;
	attr.map_fd = fd;
	attr.key = (uint64_t)(uintptr_t)key;
	attr.value = (uint64_t)(uintptr_t)value;
	r = syscall(SYS_bpf, BPF_MAP_LOOKUP_ELEM, &attr, sizeof(attr));
	close(fd);
	return r ? -1 : 0;
}

uint64_t cg_id(const char *path)
{
	struct stat st;
	char *abs = cg_abs(path);
	int r = stat(abs, &st);

	free(abs);
	return r ? 0 : (uint64_t)st.st_ino;
}

char *cg_abs(const char *path)
{
	const char *root = cg_root();
	char *out;
	size_t n;

	if (!root)
		return strdup(path);
	n = strlen(root);
	if (!strncmp(path, root, n) && (path[n] == '/' || path[n] == 0))
		return strdup(path);
	if (asprintf(&out, "%s%s%s", root, path[0] == '/' ? "" : "/", path) < 0)
		abort();
	return out;
}

char *cg_rel(const char *path)
{
	const char *root = cg_root();
	size_t n;

	if (root) {
		n = strlen(root);
		if (!strncmp(path, root, n) && (path[n] == '/' || path[n] == 0))
			return strdup(path[n] ? path + n : "/");
	}
	if (path[0] == '/')
		return strdup(path);
	{
		char *out;

		if (asprintf(&out, "/%s", path) < 0)
			abort();
		return out;
	}
}

static int cg_write_pid(const char *cgpath, pid_t pid)
{
	char f[PATH_MAX], buf[32];

	snprintf(f, sizeof(f), "%s/cgroup.procs", cgpath);
	snprintf(buf, sizeof(buf), "%d", (int)pid);
	return write_file(f, buf);
}

int cg_enter(const char *path)
{
	char *abs = cg_abs(path);
	int r = cg_write_pid(abs, getpid());
	int err = errno;

	if (r)
		fprintf(stderr, "harness: cannot enter %s: %s%s\n", abs, strerror(err),
			err == EBUSY ? " (cgroup with controllers enabled for its "
			"children cannot hold processes: use a leaf)" : "");
	else if (getpid() == h_owner)
		h_entered = 1;
	free(abs);
	errno = err;
	return r;
}

int cg_leave(void)
{
	if (!h_orig_cg[0]) {
		errno = ENOENT;
		return -1;
	}
	if (cg_write_pid(h_orig_cg, getpid()))
		return -1;
	if (getpid() == h_owner)
		h_entered = 0;
	return 0;
}

int cg_nprocs(const char *path)
{
	char f[PATH_MAX];
	char *s, *p;
	int n = 0;

	snprintf(f, sizeof(f), "%s/cgroup.procs", path);
	s = read_file_all(f);
	if (!s)
		return -1;
	for (p = s; *p; p++)
		if (*p == '\n')
			n++;
	free(s);
	return n;
}

/* procs in path and descendants; kills them if sig != 0 */
static int cg_tree_procs(const char *path, int sig)
{
	char f[PATH_MAX];
	char *s, *p;
	int n = 0;
	DIR *d;
	struct dirent *e;

	snprintf(f, sizeof(f), "%s/cgroup.procs", path);
	s = read_file_all(f);
	for (p = s; p && *p; ) {
		char *end;
		long pid = strtol(p, &end, 10);

		if (end == p)
			break;
		if (pid > 0 && pid != getpid()) {
			n++;
			if (sig)
				kill((pid_t)pid, sig);
		}
		p = end;
		while (*p == '\n')
			p++;
	}
	free(s);
	d = opendir(path);
	if (!d)
		return n;
	while ((e = readdir(d))) {
		if (e->d_type != DT_DIR || e->d_name[0] == '.')
			continue;
		snprintf(f, sizeof(f), "%s/%s", path, e->d_name);
		n += cg_tree_procs(f, sig);
	}
	closedir(d);
	return n;
}

int cg_kill(const char *path)
{
	char f[PATH_MAX];
	char *abs = cg_abs(path);
	double end = now_sec() + 10;
	int use_kill_file;

	snprintf(f, sizeof(f), "%s/cgroup.kill", abs);
	use_kill_file = access(f, W_OK) == 0;
	for (;;) {
		/* reap tracked children that died, so nothing lingers */
		for (int i = 0; i < h_nchildren; i++) {
			if (waitpid(h_children[i], NULL, WNOHANG) == h_children[i]) {
				h_children[i--] = h_children[--h_nchildren];
			}
		}
		if (cg_tree_procs(abs, 0) == 0)
			break;
		if (now_sec() > end) {
			fprintf(stderr, "harness: processes remain in %s after 10 s\n", abs);
			free(abs);
			return -1;
		}
		if (use_kill_file)
			write_file(f, "1");
		else
			cg_tree_procs(abs, SIGKILL);
		msleep(10);
	}
	free(abs);
	return 0;
}

/* rmdir a cgroup tree, deepest first */
static int cg_rm_tree(const char *path)
{
	DIR *d = opendir(path);
	struct dirent *e;
	int ret = 0;
	double end;

	if (!d)
		return errno == ENOENT ? 0 : -1;
	while ((e = readdir(d))) {
		char sub[PATH_MAX];

		if (e->d_type != DT_DIR || e->d_name[0] == '.')
			continue;
		snprintf(sub, sizeof(sub), "%s/%s", path, e->d_name);
		if (cg_rm_tree(sub))
			ret = -1;
	}
	closedir(d);
	end = now_sec() + 5;
	while (rmdir(path)) {
		if (errno == ENOENT)
			break;
		if (errno != EBUSY || now_sec() > end) {
			fprintf(stderr, "harness: rmdir %s: %s\n", path, strerror(errno));
			return -1;
		}
		msleep(10);
	}
	return ret;
}

/* --------------------------------------------------------------- names */

const char *tcpbufd_path(void)
{
	const char *s = getenv("TCPBUFD");

	return s && *s ? s : "build/tcpbufd";
}

const char *tcpbufctl_path(void)
{
	const char *s = getenv("TCPBUFCTL");

	return s && *s ? s : "build/tcpbufctl";
}

const char *tcpbufd_mode(void)
{
	const char *s = getenv("TCPBUFD_MODE");

	return s && *s ? s : "auto";
}

const char *test_tmpdir(void)
{
	if (!h_inited)
		test_init();
	if (!h_tmpdir_made) {
		if (mkdir(h_tmpdir, 0700) && errno != EEXIST) {
			fprintf(stderr, "harness: mkdir %s: %s\n", h_tmpdir, strerror(errno));
			test_abort();
		}
		h_tmpdir_made = 1;
	}
	return h_tmpdir;
}

const char *daemon_pin_path(void)
{
	if (!h_inited)
		test_init();
	return h_pin;
}

const char *daemon_socket_path(void)
{
	if (!h_inited)
		test_init();
	return h_sock;
}

const char *daemon_log_path(void)
{
	test_tmpdir();
	return h_log;
}

const char *daemon_confdir(void)
{
	test_tmpdir();
	if (mkdir(h_confdir, 0755) && errno != EEXIST) {
		fprintf(stderr, "harness: mkdir %s: %s\n", h_confdir, strerror(errno));
		test_abort();
	}
	return h_confdir;
}

/* Write @path (printf format), or stop the test saying why. */
static void write_file_or_abort(const char *path, const char *fmt, va_list ap)
{
	char *text;
	FILE *f;

	xvasprintf(&text, fmt, ap);
	f = fopen(path, "we");
	if (!f || fputs(text, f) < 0 || fclose(f)) {
		fprintf(stderr, "harness: write %s: %s\n", path, strerror(errno));
		test_abort();
	}
	free(text);
}

const char *daemon_write_config(const char *fmt, ...)
{
	va_list ap;

	test_tmpdir();
	va_start(ap, fmt);
	write_file_or_abort(h_conf, fmt, ap);
	va_end(ap);
	h_have_conf = 1;
	return h_conf;
}

void daemon_write_dropin(const char *name, const char *fmt, ...)
{
	char *path;
	va_list ap;

	if (asprintf(&path, "%s/%s", daemon_confdir(), name) < 0)
		test_abort();
	va_start(ap, fmt);
	write_file_or_abort(path, fmt, ap);
	va_end(ap);
	free(path);
}

void daemon_own_netns(void)
{
	char *wrapper, *bin = realpath(tcpbufd_path(), NULL);
	FILE *f;

	ASSERT_TRUE(bin != NULL);
	ASSERT_TRUE(asprintf(&wrapper, "%s/tcpbufd-netns", test_tmpdir()) > 0);
	f = fopen(wrapper, "w");
	ASSERT_TRUE(f != NULL);
	fprintf(f, "#!/bin/sh\nexec unshare -n %s \"$@\"\n", bin);
	fclose(f);
	ASSERT_OK(chmod(wrapper, 0755));
	setenv("TCPBUFD", wrapper, 1);
	free(wrapper);
	free(bin);
}

/* --------------------------------------------------------------- daemon */

char **split_args(const char *s, int *argc)
{
	size_t cap = 8;
	int n = 0;
	char **v = calloc(cap, sizeof(*v));
	char *buf = malloc(strlen(s) + 1);

	while (s && *s) {
		char *w = buf;
		int have = 0;

		while (*s == ' ' || *s == '\t' || *s == '\n')
			s++;
		if (!*s)
			break;
		while (*s && *s != ' ' && *s != '\t' && *s != '\n') {
			if (*s == '\'' || *s == '"') {
				char q = *s++;

				while (*s && *s != q)
					*w++ = *s++;
				if (*s)
					s++;
				have = 1;
			} else {
				*w++ = *s++;
				have = 1;
			}
		}
		if (!have)
			continue;
		*w = 0;
		if ((size_t)n + 2 > cap) {
			cap *= 2;
			v = realloc(v, cap * sizeof(*v));
		}
		v[n++] = strdup(buf);
	}
	v[n] = NULL;
	free(buf);
	if (argc)
		*argc = n;
	return v;
}

/* The last max_lines lines of the daemon log (0: all of it) to stderr. */
static void dump_log_tail(int max_lines)
{
	char *s = read_file_all(h_log);
	const char *from = s;

	if (s && max_lines > 0) {
		int n = 0;

		for (const char *p = s + strlen(s); p > s; p--)
			if (p[-1] == '\n' && p[0] && ++n > max_lines) {
				from = p;
				break;
			}
	}
	fflush(stdout);
	fprintf(stderr, "---- daemon log %s%s ----\n%s%s---- end of daemon log ----\n",
		h_log, from != s ? " (its end)" : "", from ? from : "(none)\n",
		from && *from && from[strlen(from) - 1] != '\n' ? "\n" : "");
	free(s);
}

void daemon_dump_log(void)
{
	dump_log_tail(0);
}

pid_t daemon_pid(void)
{
	return h_dpid;
}

int daemon_alive(void)
{
	int st;

	if (h_dpid <= 0)
		return 0;
	if (waitpid(h_dpid, &st, WNOHANG) == h_dpid) {
		fprintf(stderr, "harness: daemon %d exited (%s %d)\n", (int)h_dpid,
			WIFEXITED(st) ? "status" : "signal",
			WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
		h_dpid = 0;
		reaper_tell();
		return 0;
	}
	return 1;
}

int daemon_signal(int sig)
{
	if (h_dpid <= 0)
		return -1;
	return kill(h_dpid, sig);
}

static int sock_connectable(const char *path)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	int fd, r;

	if (strlen(path) >= sizeof(a.sun_path))
		return 0;
	memcpy(a.sun_path, path, strlen(path) + 1);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return 0;
	r = connect(fd, (struct sockaddr *)&a, sizeof(a));
	close(fd);
	return r == 0;
}

static char *h_daemon_cgns;

void daemon_set_cgroupns(const char *cg)
{
	free(h_daemon_cgns);
	h_daemon_cgns = cg ? strdup(cg) : NULL;
}

static int h_start_sig;

void daemon_start_signal(int sig)
{
	h_start_sig = sig;
}

int daemon_start(const char *extra_args)
{
	const char *bin = tcpbufd_path();
	char **extra;
	char *argv[64];
	char *scope;
	int argc = 0, nextra, logfd, st;
	double end;
	int wait_s;
	pid_t pid;

	if (access(bin, X_OK))
		test_skip("tcpbufd not built or not executable: %s (set TCPBUFD)", bin);
	if (access(tcpbufctl_path(), X_OK))
		test_skip("tcpbufctl not built or not executable: %s (set TCPBUFCTL)",
			  tcpbufctl_path());
	if (h_dpid > 0) {
		fprintf(stderr, "harness: daemon_start: daemon %d already running\n", (int)h_dpid);
		return -1;
	}
	scope = cg_rel(cg_test_parent());
	extra = split_args(extra_args ? extra_args : "", &nextra);
	argv[argc++] = (char *)bin;
	argv[argc++] = "-f";
	argv[argc++] = "--mode";
	argv[argc++] = (char *)tcpbufd_mode();
	argv[argc++] = "--pin-path";
	argv[argc++] = h_pin;
	argv[argc++] = "--socket";
	argv[argc++] = h_sock;
	argv[argc++] = "--scope";
	argv[argc++] = scope;
	if (h_have_conf) {
		argv[argc++] = "-c";
		argv[argc++] = h_conf;
	}
	for (int i = 0; i < nextra && argc < 63; i++)
		argv[argc++] = extra[i];
	argv[argc] = NULL;

	test_tmpdir();
	mkdir("/run", 0755);
	logfd = open(h_log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (logfd < 0) {
		fprintf(stderr, "harness: open %s: %s\n", h_log, strerror(errno));
		return -1;
	}
	{
		char line[4096];
		int n = 0;

		n += snprintf(line + n, sizeof(line) - n, "=== harness: starting");
		for (int i = 0; argv[i] && n < (int)sizeof(line) - 2; i++)
			n += snprintf(line + n, sizeof(line) - n, " %s", argv[i]);
		if (n > (int)sizeof(line) - 2)
			n = sizeof(line) - 2;
		line[n++] = '\n';
		if (write(logfd, line, n) != n) {
			/* the log is for humans */
		}
	}
	if (getenv("TEST_VERBOSE"))
		test_log("daemon: %s %s ...", bin, argv[1]);

	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		fprintf(stderr, "harness: fork: %s\n", strerror(errno));
		close(logfd);
		return -1;
	}
	if (pid == 0) {
		int nul = open("/dev/null", O_RDONLY);

		child_reset_signals();
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		if (h_daemon_cgns) {
			if (cg_write_pid(h_daemon_cgns, getpid()) || unshare(CLONE_NEWCGROUP)) {
				dprintf(logfd, "harness: cgroup namespace at %s: %s\n",
					h_daemon_cgns, strerror(errno));
				_exit(127);
			}
		} else if (h_entered && h_orig_cg[0]) {
			cg_write_pid(h_orig_cg, getpid());
		}
		if (nul >= 0)
			dup2(nul, 0);
		dup2(logfd, 1);
		dup2(logfd, 2);
		execv(bin, argv);
		dprintf(2, "harness: exec %s: %s\n", bin, strerror(errno));
		_exit(127);
	}
	close(logfd);
	h_dpid = pid;
	reaper_tell();
	for (int i = 0; i < nextra; i++)
		free(extra[i]);
	free(extra);
	free(scope);

	/* Under software emulation (the VM matrix) loading the BPF objects alone
	 * takes seconds, and on a busy host (make check's guests beside the
	 * suite) more than 10 s on the host too. A daemon that fails exits, so
	 * only a hang waits this long. */
	wait_s = getenv("TCPBUF_VM") ? 240 : 60;
	end = now_sec() + wait_s;
	while (now_sec() < end) {
		if (waitpid(pid, &st, WNOHANG) == pid) {
			fprintf(stderr, "harness: daemon exited before its socket came up (%s %d)\n",
				WIFEXITED(st) ? "status" : "signal",
				WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
			h_dpid = 0;
			reaper_tell();
			dump_log_tail(12);
			return -1;
		}
		if (sock_connectable(h_sock))
			return 0;
		if (h_start_sig && daemon_log_count("accounting") > 0)
			kill(pid, h_start_sig);
		msleep(20);
	}
	fprintf(stderr, "harness: daemon socket %s not accepting after %d s\n", h_sock, wait_s);
	daemon_dump_log();
	return -1;
}

int daemon_stop(void)
{
	pid_t pid = h_dpid;
	double end;
	int st = -1;

	if (pid <= 0)
		return -1;
	kill(pid, SIGTERM);
	end = now_sec() + 10;
	for (;;) {
		pid_t r = waitpid(pid, &st, WNOHANG);

		if (r == pid || (r < 0 && errno == ECHILD))
			break;
		if (now_sec() > end) {
			fprintf(stderr, "harness: daemon %d ignored SIGTERM for 10 s, killing\n",
				(int)pid);
			kill(pid, SIGKILL);
			waitpid(pid, &st, 0);
			break;
		}
		msleep(10);
	}
	h_dpid = 0;
	reaper_tell();
	return st;
}

/* ---------------------------------------------------------------- files */

char *file_read(const char *path)
{
	return read_file_all(path);
}

int file_rm_rf(const char *path)
{
	return rm_rf(path);
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

char *dir_snapshot(const char *dir)
{
	char *out = NULL, **names = NULL;
	size_t len = 0, n = 0;
	struct dirent *e;
	FILE *f = open_memstream(&out, &len);
	DIR *d = opendir(dir);

	while (d && (e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		names = realloc(names, (n + 1) * sizeof(*names));
		names[n++] = strdup(e->d_name);
	}
	if (d)
		closedir(d);
	qsort(names, n, sizeof(*names), name_cmp);
	for (size_t i = 0; i < n; i++) {
		char path[PATH_MAX], *text;
		struct stat st;

		snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
		fprintf(f, "%s\n", names[i]);
		if (!lstat(path, &st) && S_ISREG(st.st_mode) && (text = read_file_all(path))) {
			fputs(text, f);
			free(text);
		}
		free(names[i]);
	}
	free(names);
	fclose(f);
	return out;
}

int daemon_log_count(const char *needle)
{
	char *text = read_file_all(h_log), *p, *nl;
	int n = 0;

	for (p = text; p && *p; p = nl + 1) {
		nl = strchr(p, '\n');
		if (!nl)
			nl = p + strlen(p) - 1;
		if (memmem(p, nl - p + 1, needle, strlen(needle)))
			n++;
	}
	free(text);
	return n;
}

int daemon_log_wait(const char *needle, int n, int timeout_ms)
{
	double end = now_sec() + timeout_ms / 1000.0;
	int got;

	while ((got = daemon_log_count(needle)) < n && now_sec() < end)
		msleep(10);
	return got;
}

/* --------------------------------------------------------------- client */

const char *ctl_stderr(void)
{
	return h_ctl_err ? h_ctl_err : "";
}

struct sbuf {
	char *p;
	size_t len, cap;
};

static void sbuf_add(struct sbuf *b, const char *s, size_t n)
{
	if (b->len + n + 1 > b->cap) {
		b->cap = (b->len + n + 1) * 2;
		b->p = realloc(b->p, b->cap);
	}
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = 0;
}

char *status_json_of(const char *cgroup)
{
	char *out = NULL;

	ASSERT_EQ(ctl(&out, "status --json %s", cgroup), 0);
	ASSERT_TRUE(json_valid(out));
	return out;
}

char *limits_snapshot(const char *scope, const char *const *cgs, size_t n,
		      const char *state_dir)
{
	static const char *const keys[] = { "limit_pages", "min_pages", "pressure_pages",
					    "max_pages" };
	char *json = status_json_of(scope), *out = NULL, *files;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);

	for (size_t i = 0; i < n; i++) {
		fprintf(f, "%s", cgs[i]);
		for (size_t k = 0; k < 4; k++)
			fprintf(f, " %" PRId64, json_cgroup_value(json, cgs[i], keys[k]));
		fputc('\n', f);
	}
	files = dir_snapshot(daemon_confdir());
	fputs(files, f);
	free(files);
	files = dir_snapshot(state_dir);
	fputs(files, f);
	free(files);
	fclose(f);
	free(json);
	return out;
}

int one_line(const char *s)
{
	size_t n = strlen(s);

	return n && s[n - 1] == '\n' && strchr(s, '\n') == s + n - 1;
}

void expect_refused(const char *what, const struct run *r, int code, const char *why,
		    const char *before, const char *after)
{
	test_log("%s: exit %d: %s", what, r->code, *r->err ? r->err : "(no stderr)\n");
	EXPECT_EQ(r->code, code);
	EXPECT_TRUE(one_line(r->err));
	EXPECT_TRUE(strstr(r->err, why) != NULL);
	EXPECT_TRUE(strcmp(before, after) == 0);
	if (strcmp(before, after))
		test_log("%s changed the state:\n%s---\n%s", what, before, after);
}

int ctl(char **out, const char *fmt, ...)
{
	const char *bin = tcpbufctl_path();
	struct sbuf o = { 0 }, e = { 0 };
	int po[2], pe[2], nargs, st, ret;
	char **args, **argv;
	char *cmd;
	va_list ap;
	pid_t pid;
	double end;

	if (!h_inited)
		test_init();
	va_start(ap, fmt);
	xvasprintf(&cmd, fmt, ap);
	va_end(ap);
	if (access(bin, X_OK)) {
		fprintf(stderr, "harness: cannot run tcpbufctl %s: %s (set TCPBUFCTL)\n",
			bin, strerror(errno));
		free(h_ctl_err);
		h_ctl_err = strdup("tcpbufctl not executable");
		if (out)
			*out = strdup("");
		free(cmd);
		return 127;
	}
	args = split_args(cmd, &nargs);
	argv = calloc(nargs + 4, sizeof(*argv));
	argv[0] = (char *)bin;
	argv[1] = "--socket";
	argv[2] = h_sock;
	for (int i = 0; i < nargs; i++)
		argv[3 + i] = args[i];
	sbuf_add(&o, "", 0);
	sbuf_add(&e, "", 0);
	if (pipe2(po, O_CLOEXEC) || pipe2(pe, O_CLOEXEC)) {
		fprintf(stderr, "harness: pipe: %s\n", strerror(errno));
		test_abort();
	}
	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		child_reset_signals();
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		dup2(po[1], 1);
		dup2(pe[1], 2);
		execv(bin, argv);
		dprintf(2, "harness: exec %s: %s\n", bin, strerror(errno));
		_exit(127);
	}
	close(po[1]);
	close(pe[1]);
	end = now_sec() + 30;
	{
		struct pollfd pf[2] = { { po[0], POLLIN, 0 }, { pe[0], POLLIN, 0 } };
		int open_fds = 2;

		while (open_fds > 0) {
			int r = poll(pf, 2, 100);

			if (r < 0 && errno != EINTR)
				break;
			if (now_sec() > end) {
				fprintf(stderr, "harness: tcpbufctl %s: no answer in 30 s, killing\n", cmd);
				kill(pid, SIGKILL);
				break;
			}
			for (int i = 0; i < 2; i++) {
				char buf[4096];
				ssize_t n;

				if (pf[i].fd < 0 || !(pf[i].revents & (POLLIN | POLLHUP | POLLERR)))
					continue;
				n = read(pf[i].fd, buf, sizeof(buf));
				if (n > 0) {
					sbuf_add(i ? &e : &o, buf, n);
				} else if (n == 0 || errno != EINTR) {
					close(pf[i].fd);
					pf[i].fd = -1;
					open_fds--;
				}
			}
		}
		for (int i = 0; i < 2; i++)
			if (pf[i].fd >= 0)
				close(pf[i].fd);
	}
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	ret = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	if (getenv("TEST_VERBOSE"))
		test_log("$ tcpbufctl %s -> %d\n%s%s", cmd, ret, o.p, e.p);
	free(h_ctl_err);
	h_ctl_err = e.p;
	if (out)
		*out = o.p;
	else
		free(o.p);
	for (int i = 0; i < nargs; i++)
		free(args[i]);
	free(args);
	free(argv);
	free(cmd);
	return ret;
}

/* -------------------------------------------------------------- cleanup */

/* Not running any more: no such pid, or a zombie nobody reaped yet. */
static int pid_gone(pid_t pid)
{
	char f[64], buf[512], *p;
	int fd;
	ssize_t n;

	if (kill(pid, 0) && errno == ESRCH)
		return 1;
	snprintf(f, sizeof(f), "/proc/%d/stat", (int)pid);
	fd = open(f, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 1;
	buf[n] = 0;
	p = strrchr(buf, ')');
	return p && p[1] == ' ' && (p[2] == 'Z' || p[2] == 'X');
}

/* Returns 1 if anything was left to clean. */
static int h_cleanup_all(void)
{
	int found = 0;

	alarm(0);
	if (!h_is_reaper) {
		while (h_ndefers > 0) {
			h_ndefers--;
			h_defers[h_ndefers].fn(h_defers[h_ndefers].arg);
		}
		for (int i = 0; i < h_nchildren; i++) {
			kill(h_children[i], SIGKILL);
			waitpid(h_children[i], NULL, 0);
		}
		h_nchildren = 0;
	}
	if (h_dpid > 0) {
		found = 1;
		if (h_is_reaper) {
			double end = now_sec() + 10;

			kill(h_dpid, SIGTERM);
			while (!pid_gone(h_dpid) && now_sec() < end)
				msleep(20);
			if (!pid_gone(h_dpid))
				kill(h_dpid, SIGKILL);
			h_dpid = 0;
		} else {
			daemon_stop();
		}
	}
	if (!h_is_reaper && h_entered)
		cg_leave();
	if (is_dir(h_parent)) {
		found = 1;
		cg_kill(h_parent);
		cg_rm_tree(h_parent);
	}
	if (h_pin[0] && access(h_pin, F_OK) == 0) {
		found = 1;
		if (rm_rf(h_pin))
			fprintf(stderr, "harness: could not remove %s: %s\n", h_pin, strerror(errno));
	}
	if (h_sock[0] && unlink(h_sock) == 0)
		found = 1;
	if (h_tmpdir[0] && is_dir(h_tmpdir)) {
		if (h_failed && !h_is_reaper && access(h_log, F_OK) == 0)
			daemon_dump_log();
		if (getenv("TEST_KEEP_TMP"))
			fprintf(stderr, "harness: keeping %s\n", h_tmpdir);
		else
			rm_rf(h_tmpdir);
	}
	return found;
}

static void h_owner_cleanup(void)
{
	sigset_t all, old;

	if (h_is_reaper || getpid() != h_owner || h_cleaning)
		return;
	sigfillset(&all);
	sigdelset(&all, SIGSEGV);
	sigdelset(&all, SIGBUS);
	sigdelset(&all, SIGFPE);
	sigdelset(&all, SIGILL);
	sigdelset(&all, SIGABRT);
	sigprocmask(SIG_BLOCK, &all, &old);
	h_cleaning = 1;
	h_cleanup_all();
	fflush(NULL);
	if (h_reaper_fd >= 0) {
		close(h_reaper_fd);
		h_reaper_fd = -1;
		if (h_reaper_pid > 0)
			waitpid(h_reaper_pid, NULL, 0);
	}
}

static void h_atexit(void)
{
	h_owner_cleanup();
}

static void h_on_signal(int sig)
{
	if (getpid() != h_owner || h_is_reaper) {
		signal(sig, SIG_DFL);
		raise(sig);
		_exit(128 + sig);
	}
	if (h_cleaning)
		_exit(128 + sig);
	h_failed = 1;
	if (sig == SIGALRM) {
		dprintf(1, "\n");
		dprintf(2, "harness: TIMEOUT: test still running after %s s (TEST_TIMEOUT), "
			"cleaning up\n", getenv("TEST_TIMEOUT") ? getenv("TEST_TIMEOUT") : "300");
	} else {
		dprintf(2, "harness: caught signal %d (%s), cleaning up\n", sig, strsignal(sig));
	}
	h_owner_cleanup();
	if (sig == SIGALRM)
		_exit(1);
	signal(sig, SIG_DFL);
	{
		sigset_t s;

		sigemptyset(&s);
		sigaddset(&s, sig);
		sigprocmask(SIG_UNBLOCK, &s, NULL);
	}
	raise(sig);
	_exit(128 + sig);
}

static void reaper_main(int rfd)
{
	char buf[256];
	size_t len = 0;
	static const int sigs[] = { SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGALRM, SIGPIPE };

	h_is_reaper = 1;
	setsid();
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		signal(sigs[i], SIG_IGN);
	alarm(0);
	for (;;) {
		ssize_t n = read(rfd, buf + len, sizeof(buf) - 1 - len);
		char *nl;

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		len += n;
		buf[len] = 0;
		while ((nl = strchr(buf, '\n'))) {
			*nl = 0;
			if (buf[0] == 'D')
				h_dpid = (pid_t)atoi(buf + 2);
			len -= nl + 1 - buf;
			memmove(buf, nl + 1, len + 1);
		}
		if (len >= sizeof(buf) - 1)
			len = 0;
	}
	/* the test process is gone */
	if (h_cleanup_all())
		fprintf(stderr, "harness reaper: test %d died without cleaning up; "
			"removed what it left (%s)\n", (int)h_owner, h_parent);
	_exit(0);
}

void test_init(void)
{
	static const int sigs[] = { SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGALRM,
				    SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT };
	struct sigaction sa;
	const char *t, *root;
	int p[2];
	long timeout;

	if (h_inited)
		return;
	h_inited = 1;
	h_owner = getpid();
	setvbuf(stdout, NULL, _IOLBF, 0);
	signal(SIGPIPE, SIG_IGN);

	root = cg_root();
	snprintf(h_parent, sizeof(h_parent), "%s/tcpbuf-test-%d", root ? root : "/nonexistent",
		 (int)h_owner);
	find_orig_cgroup();
	snprintf(h_pin, sizeof(h_pin), "/sys/fs/bpf/tcpbuf-test-%d", (int)h_owner);
	snprintf(h_sock, sizeof(h_sock), "/run/tcpbuf-test-%d.sock", (int)h_owner);
	t = getenv("TMPDIR");
	if (!t || !*t || !is_dir(t))
		t = is_dir("/tmp") ? "/tmp" : is_dir("/run") ? "/run" : "/dev/shm";
	snprintf(h_tmpdir, sizeof(h_tmpdir), "%s/tcpbuf-test-%d", t, (int)h_owner);
	snprintf(h_log, sizeof(h_log), "%s/daemon.log", h_tmpdir);
	snprintf(h_conf, sizeof(h_conf), "%s/tcpbufd.conf", h_tmpdir);
	snprintf(h_confdir, sizeof(h_confdir), "%s/tcpbufd.d", h_tmpdir);

	/* reaper: cleans up if we are SIGKILLed */
	if (pipe2(p, O_CLOEXEC) == 0) {
		fflush(NULL);
		h_reaper_pid = fork();
		if (h_reaper_pid == 0) {
			close(p[1]);
			reaper_main(p[0]);
		}
		close(p[0]);
		if (h_reaper_pid > 0)
			h_reaper_fd = p[1];
		else
			close(p[1]);
	}

	atexit(h_atexit);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = h_on_signal;
	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		sigaction(sigs[i], &sa, NULL);

	t = getenv("TEST_TIMEOUT");
	timeout = t ? strtol(t, NULL, 10) : 300;
	if (timeout > 0)
		alarm((unsigned int)timeout);
}

int test_done(void)
{
	if (h_failed) {
		fflush(stdout);
		fprintf(stderr, "FAIL: %d check(s) failed\n", h_nchecks_failed);
	}
	return h_failed ? 1 : 0;
}

void test_abort(void)
{
	h_failed = 1;
	exit(1);
}

void test_skip(const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	fputs("SKIP: ", stdout);
	va_start(ap, fmt);
	vfprintf(stdout, fmt, ap);
	va_end(ap);
	fputc('\n', stdout);
	fflush(stdout);
	exit(77);
}

int kernel_has_peerpidfd(void)
{
	int sv[2], pidfd = -1, ok;
	socklen_t len = sizeof(pidfd);

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv))
		return 0;
	ok = !getsockopt(sv[0], SOL_SOCKET, 77 /* SO_PEERPIDFD */, &pidfd, &len);
	if (ok)
		close(pidfd);
	close(sv[0]);
	close(sv[1]);
	return ok;
}

double daemon_cpu_sec(void)
{
	char path[64], *s, *p;
	unsigned long utime = 0, stime = 0;

	snprintf(path, sizeof(path), "/proc/%d/stat", daemon_pid());
	s = file_read(path);
	if (!s)
		return 0;
	p = strrchr(s, ')');
	if (p)
		sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &utime, &stime);
	free(s);
	return (double)(utime + stime) / sysconf(_SC_CLK_TCK);
}

static char *read_or_empty(const char *path)
{
	char *s = file_read(path);

	return s ? s : strdup("");
}

void run_child(struct run *r, void (*setup)(const void *arg), const void *arg,
	       char *const argv[])
{
	char outf[PATH_MAX], errf[PATH_MAX];
	pid_t pid;
	int st;

	snprintf(outf, sizeof(outf), "%s/child.out", test_tmpdir());
	snprintf(errf, sizeof(errf), "%s/child.err", test_tmpdir());
	pid = test_fork(1);
	if (pid == 0) {
		int o = open(outf, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		int e = open(errf, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

		if (setup)
			setup(arg);
		dup2(o, 1);
		dup2(e, 2);
		execvp(argv[0], argv);
		dprintf(e, "exec %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	st = test_reap(pid);
	r->code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	r->out = read_or_empty(outf);
	r->err = read_or_empty(errf);
}

void run_ctl_child(struct run *r, void (*setup)(const void *arg), const void *arg,
		   const char *args)
{
	int nargs;
	char **words = split_args(args, &nargs);
	char *argv[nargs + 4];

	argv[0] = (char *)tcpbufctl_path();
	argv[1] = "--socket";
	argv[2] = (char *)daemon_socket_path();
	for (int i = 0; i < nargs; i++)
		argv[3 + i] = words[i];
	argv[nargs + 3] = NULL;
	run_child(r, setup, arg, argv);
	for (int i = 0; i < nargs; i++)
		free(words[i]);
	free(words);
}

void run_free(struct run *r)
{
	free(r->out);
	free(r->err);
	r->out = r->err = NULL;
}
