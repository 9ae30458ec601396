/* SPDX-License-Identifier: GPL-2.0 */
/*
 * tcpbufd test harness: assertions, guaranteed cleanup, test cgroups, the
 * daemon under test, the tcpbufctl client and a small JSON reader.
 *
 * A test is a plain C program:
 *
 *	int main(void)
 *	{
 *		test_init();
 *		const char *a = cg_create("a");
 *		...
 *		ASSERT_EQ(x, 42);
 *		return test_done();
 *	}
 *
 * Exit status: 0 pass, 1 fail, 77 skip (after printing "SKIP: reason").
 *
 * ASSERT_* stop the test on failure: they print the check and the values,
 * then exit(1), and the cleanup runs.  EXPECT_* print the same, mark the test
 * failed and continue; test_done() then returns 1.
 *
 * Cleanup is guaranteed: at exit, on SIGTERM/SIGINT/SIGHUP/SIGQUIT, on the
 * harness watchdog (SIGALRM, $TEST_TIMEOUT seconds) and on crashes the
 * harness kills its tracked children, stops the daemon, kills every process
 * in the test cgroups, removes them deepest first, removes the pin directory,
 * the control socket and the per-test temporary directory.  If the test is
 * killed with SIGKILL, a reaper process forked by test_init() (in its own
 * session, ignoring signals) sees its pipe close and does the same.
 *
 * Every name a test owns carries the test's pid:
 *	cgroup   <v2 mount>/tcpbuf-test-<pid>
 *	pins     /sys/fs/bpf/tcpbuf-test-<pid>
 *	socket   /run/tcpbuf-test-<pid>.sock
 *	files    ${TMPDIR:-/tmp}/tcpbuf-test-<pid>/ (daemon.log, tcpbufd.conf, tcpbufd.d/)
 */
#ifndef TCPBUF_TEST_HARNESS_H
#define TCPBUF_TEST_HARNESS_H

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stddef.h>
#include <sys/types.h>

/* ---------------------------------------------------------------- core */

/* Call first.  Sets up cleanup, signal handlers, watchdog and the reaper. */
void test_init(void);
/* Exit status for main(): 0 if no check failed, else 1. */
int test_done(void);
/* Mark the test failed (used by the macros; usable directly). */
void test_fail(void);
int test_failed(void);
/* Print "SKIP: reason" and exit 77 (cleanup runs). */
void test_skip(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
/* Stop the test now with status 1 (cleanup runs). */
void test_abort(void) __attribute__((noreturn));
/* Informational line, prefixed "# ". */
void test_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Monotonic clock in seconds. */
double now_sec(void);
/* Sleep for ms milliseconds. */
void msleep(unsigned int ms);

/* Run fn(arg) at cleanup, before the built-in cleanups, last registered first. */
void test_defer(void (*fn)(void *), void *arg);

/*
 * fork() for tests and helpers: the child gets default signal handlers,
 * PR_SET_PDEATHSIG(SIGKILL), no reaper pipe, and is not the harness owner
 * (its exit() does not run the test's cleanup).  Children should still
 * leave with _exit().  With track != 0 the harness kills and reaps the child
 * at cleanup unless it was reaped with test_reap() before.
 */
pid_t test_fork(int track);
/* waitpid() a tracked child and forget it.  Returns the wait status or -1. */
int test_reap(pid_t pid);
/* Forget a tracked child that was reaped elsewhere. */
void test_untrack(pid_t pid);

#define SKIP(...) test_skip(__VA_ARGS__)

/* --------------------------------------------------------------- checks */

int h_check_cmp(const char *file, int line, const char *op, const char *sa,
		const char *se, int64_t a, int64_t e);
int h_check_near(const char *file, int line, const char *sa, const char *se,
		 const char *st, int64_t a, int64_t e, int64_t tol);
int h_check_cmpf(const char *file, int line, const char *op, const char *sa,
		 const char *se, double a, double e);
int h_check_ok(const char *file, int line, const char *sa, int64_t a, int err);
int h_check_true(const char *file, int line, const char *sa, int ok);

/* The checks below compare as int64_t, which would truncate a ratio
 * (1.9 <= 1.05 would pass): a floating operand is refused at compile time,
 * and the _F checks compare as double. */
#define H_FLOATING_(x) _Generic((x), float: 1, double: 1, long double: 1, default: 0)
#define H_INTEGRAL_(x)							\
	_Static_assert(!H_FLOATING_(x), "floating operand: use the _F check")

/* Both sides as type T, compared by check(). */
#define H_CMP_AS_(T, check, op, a, e, stop) do {			\
	T h_a_ = (T)(a), h_e_ = (T)(e);					\
	if (!check(__FILE__, __LINE__, op, #a, #e, h_a_, h_e_) && (stop)) \
		test_abort();						\
} while (0)
#define H_CMP_(op, a, e, stop) do {					\
	H_INTEGRAL_(a);							\
	H_INTEGRAL_(e);							\
	H_CMP_AS_(int64_t, h_check_cmp, op, a, e, stop);		\
} while (0)
#define H_CMPF_(op, a, e, stop) H_CMP_AS_(double, h_check_cmpf, op, a, e, stop)

#define ASSERT_EQ(actual, expected) H_CMP_("==", actual, expected, 1)
#define ASSERT_NE(actual, expected) H_CMP_("!=", actual, expected, 1)
#define ASSERT_GE(actual, expected) H_CMP_(">=", actual, expected, 1)
#define ASSERT_LE(actual, expected) H_CMP_("<=", actual, expected, 1)
#define ASSERT_GT(actual, expected) H_CMP_(">", actual, expected, 1)
#define ASSERT_LT(actual, expected) H_CMP_("<", actual, expected, 1)
#define EXPECT_EQ(actual, expected) H_CMP_("==", actual, expected, 0)
#define EXPECT_NE(actual, expected) H_CMP_("!=", actual, expected, 0)
#define EXPECT_GE(actual, expected) H_CMP_(">=", actual, expected, 0)
#define EXPECT_LE(actual, expected) H_CMP_("<=", actual, expected, 0)
#define EXPECT_GT(actual, expected) H_CMP_(">", actual, expected, 0)
#define EXPECT_LT(actual, expected) H_CMP_("<", actual, expected, 0)

#define ASSERT_GE_F(actual, expected) H_CMPF_(">=", actual, expected, 1)
#define ASSERT_LE_F(actual, expected) H_CMPF_("<=", actual, expected, 1)
#define ASSERT_GT_F(actual, expected) H_CMPF_(">", actual, expected, 1)
#define ASSERT_LT_F(actual, expected) H_CMPF_("<", actual, expected, 1)
#define EXPECT_GE_F(actual, expected) H_CMPF_(">=", actual, expected, 0)
#define EXPECT_LE_F(actual, expected) H_CMPF_("<=", actual, expected, 0)
#define EXPECT_GT_F(actual, expected) H_CMPF_(">", actual, expected, 0)
#define EXPECT_LT_F(actual, expected) H_CMPF_("<", actual, expected, 0)

/* |actual - expected| <= tol */
#define H_NEAR_(a, e, t, stop) do {					\
	H_INTEGRAL_(a);							\
	H_INTEGRAL_(e);							\
	H_INTEGRAL_(t);							\
	int64_t h_a_ = (int64_t)(a), h_e_ = (int64_t)(e), h_t_ = (int64_t)(t); \
	if (!h_check_near(__FILE__, __LINE__, #a, #e, #t, h_a_, h_e_, h_t_) && (stop)) \
		test_abort();						\
} while (0)
#define ASSERT_NEAR(actual, expected, tol) H_NEAR_(actual, expected, tol, 1)
#define EXPECT_NEAR(actual, expected, tol) H_NEAR_(actual, expected, tol, 0)
/* |actual - expected| <= tol, as double */
#define EXPECT_NEAR_F(actual, expected, tol)				\
	EXPECT_LE_F(fabs((double)(actual) - (double)(expected)), tol)

/* expr must be 0 (prints errno on failure, as for a failed syscall) */
#define H_OK_(x, stop) do {						\
	errno = 0;							\
	int64_t h_a_ = (int64_t)(x);					\
	int h_err_ = errno;						\
	if (!h_check_ok(__FILE__, __LINE__, #x, h_a_, h_err_) && (stop)) \
		test_abort();						\
} while (0)
#define ASSERT_OK(x) H_OK_(x, 1)
#define EXPECT_OK(x) H_OK_(x, 0)

#define H_TRUE_(x, stop) do {						\
	if (!h_check_true(__FILE__, __LINE__, #x, !!(x)) && (stop))	\
		test_abort();						\
} while (0)
#define ASSERT_TRUE(x) H_TRUE_(x, 1)
#define EXPECT_TRUE(x) H_TRUE_(x, 0)
#define ASSERT_FALSE(x) H_TRUE_(!(x), 1)
#define EXPECT_FALSE(x) H_TRUE_(!(x), 0)

/* -------------------------------------------------------------- cgroups */

/* cgroup v2 mount point from /proc/self/mountinfo; NULL if none. */
const char *cg_root(void);
/* <mount>/tcpbuf-test-<pid>, created on first call (SKIP if no cgroup v2). */
const char *cg_test_parent(void);
/*
 * Create <test parent>/<rel> and missing parents ("a", "p/c"); returns the
 * absolute path (malloc'd, lives until exit).  Aborts the test on error.
 * Where the memory controller is available it is enabled in the
 * subtree_control of the test parent and of every directory cg_create()
 * makes a parent, so memory.stat exists everywhere; such a directory then
 * cannot hold processes (cgroup v2 "no internal processes" rule): put
 * processes in leaves.
 */
const char *cg_create(const char *rel);
/* cgroup id == inode number of the directory; 0 on error. */
uint64_t cg_id(const char *path);
/* Path relative to the v2 mount as the daemon prints it ("/tcpbuf-test-1/a");
 * accepts absolute or already relative paths.  Returns a malloc'd string. */
char *cg_rel(const char *path);
/* Absolute path for an absolute or mount-relative path (malloc'd). */
char *cg_abs(const char *path);
/* Move the calling process into path / back to where test_init() found it. */
int cg_enter(const char *path);
int cg_leave(void);
/* Kill every process in path and its descendants, wait until empty. */
int cg_kill(const char *path);
/* Process count in path (not descendants), -1 on error. */
int cg_nprocs(const char *path);

/* --------------------------------------------------------------- daemon */

/* $TCPBUFD / $TCPBUFCTL / $TCPBUFD_MODE with the documented defaults. */
const char *tcpbufd_path(void);
const char *tcpbufctl_path(void);
const char *tcpbufd_mode(void);
/* Per-test names. */
const char *test_tmpdir(void);
const char *daemon_pin_path(void);
const char *daemon_socket_path(void);
const char *daemon_log_path(void);
/* An empty per-test directory for per-container *.conf files. */
const char *daemon_confdir(void);
/* The daemon's pinned object @name (e.g. "cgroup_usage"): an fd, or -1. */
int daemon_pinned_fd(const char *name);
/* Entry @key of its pinned map @name into @value, with bpf(2) itself (the
 * tests need no libbpf): 0, or -1 with errno. */
int daemon_pinned_lookup(const char *name, const void *key, void *value);
/* Write the main config (printf format); daemon_start() then passes -c. */
const char *daemon_write_config(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* From now on daemon_start() runs the daemon in a network namespace of its
 * own (unshare -n): its passes then walk only the namespaces of the test's
 * sockets, and no socket of the host takes a table entry. */
void daemon_own_netns(void);
/* Write drop-in @name (printf format) into daemon_confdir(); stops the test if it cannot. */
void daemon_write_dropin(const char *name, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/*
 * Start $TCPBUFD -f --mode $TCPBUFD_MODE --pin-path P --socket S
 * --scope <test parent, mount-relative> [-c CONF] EXTRA (EXTRA split on
 * blanks, '...' and "..." quote).  stdout+stderr go to daemon_log_path().
 * Waits up to 10 s until the control socket accepts a connection.
 * SKIPs the test if $TCPBUFD is not executable.  Returns 0, or -1 after
 * printing the log if the daemon exited or did not come up.
 */
int daemon_start(const char *extra_args);
/* Daemons started from now on run in cgroup @cg (absolute, one of the
 * test's) in a cgroup namespace of their own rooted there, as a DaemonSet's
 * container does; NULL: where the test runner was, in the host's. */
void daemon_set_cgroupns(const char *cg);
/* SIGTERM and wait (10 s, then SIGKILL).  Returns the wait status
 * (use WIFEXITED/WEXITSTATUS), -1 if no daemon was running. */
int daemon_stop(void);
/* Send a signal (e.g. SIGHUP to reload); -1 if not running. */
int daemon_signal(int sig);
pid_t daemon_pid(void);
/* 1 if the daemon process is still alive (reaps it if it exited). */
int daemon_alive(void);
/* CPU time the daemon has used (user + system), in seconds; 0 if unknown. */
double daemon_cpu_sec(void);
/* Print the daemon log to stderr. */
void daemon_dump_log(void);

/* --------------------------------------------------------------- client */

/*
 * Run $TCPBUFCTL --socket <sock> ARGS (printf format, split on blanks,
 * quotes as above).  *out gets stdout (malloc'd, NUL-terminated; pass NULL
 * to discard).  Returns the exit status, 128+N if killed by signal N, 127
 * if it could not be run.  ctl_stderr() is the last call's stderr.
 */
int ctl(char **out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* What run_child() saw: the exit code (128 + N for signal N), stdout, stderr. */
struct run {
	int code;
	char *out, *err;
};
/*
 * Fork; in the child call @setup(@arg) (which _exits 126 when it cannot do
 * its part: join a cgroup, drop privileges, unshare), then execvp(@argv)
 * with stdout and stderr captured into @r. run_free() frees them.
 */
void run_child(struct run *r, void (*setup)(const void *arg), const void *arg,
	       char *const argv[]);
/* run_child() of "tcpbufctl --socket S ARGS" (ARGS split as split_args() does). */
void run_ctl_child(struct run *r, void (*setup)(const void *arg), const void *arg,
		   const char *args);
void run_free(struct run *r);

const char *ctl_stderr(void);

/*
 * What a refused request must leave alone, as text: limit, min, pressure and
 * max pages of each of the @n cgroups @cgs in `status --json @scope`, then
 * dir_snapshot() of the drop-in directory and of @state_dir (malloc'd).
 */
char *limits_snapshot(const char *scope, const char *const *cgs, size_t n,
		      const char *state_dir);
/* 1 if @s is exactly one line, ending in '\n'. */
int one_line(const char *s);
/*
 * EXPECT a refusal: exit @code, one line on stderr holding @why, and the
 * snapshots @before and @after equal (both logged where they differ).
 */
void expect_refused(const char *what, const struct run *r, int code, const char *why,
		    const char *before, const char *after);

/* Split a command line into a NULL-terminated argv (malloc'd). */
char **split_args(const char *s, int *argc);

/* 1 if the kernel names a socket's peer by pidfd (SO_PEERPIDFD, Linux 6.5):
 * before that tcpbufd serves only the administrator. */
int kernel_has_peerpidfd(void);

/* ---------------------------------------------------------------- files */

/* No shell needed (VM guests have little userland). */
/* Whole file, malloc'd and NUL-terminated; NULL if it cannot be read. */
char *file_read(const char *path);
/* Remove a file or directory tree (bpffs pins too); 0, or -1 with errno. */
int file_rm_rf(const char *path);
/*
 * Every entry directly in dir, in name order, as "name\n" plus the contents
 * of regular files (malloc'd; "" if there is no dir): two equal snapshots
 * mean nothing was written there.
 */
char *dir_snapshot(const char *dir);
/* Lines of the daemon log (daemon_log_path()) that hold needle. */
int daemon_log_count(const char *needle);
/* Wait up to timeout_ms for at least n such lines: the daemon logs a change
 * just after making it, so a test that saw the change may be early. Returns
 * the count. */
int daemon_log_wait(const char *needle, int n, int timeout_ms);
/* The next daemon_start() sends @sig to its daemon every 20 ms from its
 * "accounting ..." log line (the loader done) until its socket is up. */
void daemon_start_signal(int sig);

/* ----------------------------------------------------------------- JSON */

enum json_result {
	JSON_BAD	= -2,	/* not valid JSON, or the value has the wrong type */
	JSON_MISSING	= -1,	/* no such cgroup / key */
	JSON_NULL	= 0,	/* the key is present with value null */
	JSON_FOUND	= 1,
};

/* 1 if the whole text is one valid JSON value (strict RFC 8259). */
int json_valid(const char *json);
/* Top-level "key": string / integer. */
int json_string_field(const char *json, const char *key, char *buf, size_t len);
int json_int_field(const char *json, const char *key, int64_t *out);
/*
 * In the top-level "cgroups" array, the object whose "cgroup" equals
 * cgroup (mount-relative; absolute paths below the mount are converted):
 * an integer field / a string field.
 */
int json_cgroup_field(const char *json, const char *cgroup, const char *key, int64_t *out);
int json_cgroup_string(const char *json, const char *cgroup, const char *key,
		       char *buf, size_t len);
/* EXPECT @cgroup's limit, min, pressure and max pages in @json (status --json). */
#define EXPECT_THRESHOLDS(json, cgroup, limit, min, pressure, max)			\
	do {									\
		EXPECT_EQ(json_cgroup_value(json, cgroup, "limit_pages"), limit);	\
		EXPECT_EQ(json_cgroup_value(json, cgroup, "min_pages"), min);		\
		EXPECT_EQ(json_cgroup_value(json, cgroup, "pressure_pages"), pressure);\
		EXPECT_EQ(json_cgroup_value(json, cgroup, "max_pages"), max);		\
	} while (0)
/* `status --json CGROUP` from the daemon, checked to be valid JSON (asserts). */
char *status_json_of(const char *cgroup);
/* json_cgroup_field()'s value, or -2 where it is null and -3 where it is missing or bad. */
int64_t json_cgroup_value(const char *json, const char *cgroup, const char *key);
/* Number of entries in "cgroups" (JSON_BAD / JSON_MISSING if not there). */
int json_cgroup_count(const char *json);
/* "cgroup" name of entry idx; JSON_FOUND or an error. */
int json_cgroup_name(const char *json, int idx, char *buf, size_t len);

#endif /* TCPBUF_TEST_HARNESS_H */
