// SPDX-License-Identifier: GPL-2.0
/*
 * `tcpbufctl top` in a real pseudo-terminal (a tmux server of the test's
 * own, in a cgroup of the test's, so the harness's cleanup ends it) and over
 * a pipe, against a daemon with two loaded cgroups whose three sort keys
 * disagree:
 *   a: 8 stalled connections of 256 KiB under a 256M max (most pages, a
 *      small share, no pressure entry);
 *   b: 2 of 256 KiB under pressure 384K, max 4M (fewer pages, a larger
 *      share, in pressure at least once);
 *   docker-ID.scope: a limit and no load (a container id to show).
 * Shown: rows of a and b appear; share puts b first, u(sage) a, p(ressure
 * entries) b; the container column; a 50-column terminal keeps share, state
 * and path and drops what does not fit; q, SIGINT (^C), SIGTERM and a daemon
 * that goes away each leave the alternate screen and the stty settings as
 * they were, and the shell gets top's exit status (0, killed by SIGTERM:
 * 143, 1 with the reason on the terminal; killed by SIGINT, the shell drops
 * the rest of the command line and prompts). Batch mode (-b, and any pipe): one snapshot per
 * interval, no escape codes, columns that parse, shares that are status's
 * usage/max, sorted; a client confined to b (uid 65534 in b) sees b alone.
 */
#define _GNU_SOURCE
#include "harness.h"
#include "load.h"
#include "sdunit.h"

#include <ctype.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define ID "9ab4c1e27f0d3b5a6c8e9f10213243546576879809a0b1c2d3e4f5061728394a"

static char tmux_name[64];
static const char *tmux_cg;

static int tmux(char **out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* A tmux command on the test's own server; started in the test's cgroup. */
static int tmux(char **out, const char *fmt, ...)
{
	char *cmd;
	va_list ap;
	int rc;

	va_start(ap, fmt);
	if (vasprintf(&cmd, fmt, ap) < 0)
		abort();
	va_end(ap);
	rc = run_sh(out, "echo $$ > %s/cgroup.procs && exec tmux -L %s -f /dev/null %s", tmux_cg,
		    tmux_name, cmd);
	free(cmd);
	return rc;
}

static void tmux_kill(void *arg)
{
	(void)arg;
	tmux(NULL, "kill-server");
}

static char *pane(void)
{
	char *out = NULL;

	tmux(&out, "capture-pane -p -t top");
	return out;
}

/* The pane once it shows @needle (NULL after @timeout_ms). */
static char *pane_with(const char *needle, int timeout_ms)
{
	double end = now_sec() + timeout_ms / 1000.0;
	char *p;

	for (;;) {
		p = pane();
		if (p && strstr(p, needle))
			return p;
		if (now_sec() > end) {
			test_log("pane never showed '%s'; it shows:\n%s", needle, p ? p : "");
			free(p);
			return NULL;
		}
		free(p);
		msleep(100);
	}
}

static int alternate_on(void)
{
	char *out = NULL;
	int on;

	tmux(&out, "display -p -t top '#{alternate_on}'");
	on = out && out[0] == '1';
	free(out);
	return on;
}

static int wait_alternate(int want, int timeout_ms)
{
	double end = now_sec() + timeout_ms / 1000.0;

	while (alternate_on() != want)
		if (now_sec() > end)
			return -1;
		else
			msleep(50);
	return 0;
}

static char *pane_tty_settings(void)
{
	char *tty = NULL, *out = NULL;

	tmux(&tty, "display -p -t top '#{pane_tty}'");
	tty[strcspn(tty, "\n")] = '\0';
	run_sh(&out, "stty -g < %s", tty);
	free(tty);
	return out;
}

/* Line number (0-based) of the first line that ends with @path; -1 if none.
 * A path too long for its column keeps its end: pass an end that is unique. */
static int line_ending_with(const char *text, const char *path)
{
	size_t n = strlen(path);
	int ln = 0;

	for (const char *l = text; *l; ln++) {
		size_t len = strcspn(l, "\n");

		while (len && l[len - 1] == ' ')
			len--;
		if (len >= n && !memcmp(l + len - n, path, n))
			return ln;
		l += strcspn(l, "\n");
		if (*l)
			l++;
	}
	return -1;
}

/* top's pid: the pane shell's one child. */
static pid_t top_pid(void)
{
	char *out = NULL, path[64], *kids;
	pid_t sh, kid = 0;

	tmux(&out, "display -p -t top '#{pane_pid}'");
	sh = atoi(out);
	free(out);
	snprintf(path, sizeof(path), "/proc/%d/task/%d/children", sh, sh);
	kids = file_read(path);
	if (kids)
		kid = atoi(kids);
	free(kids);
	return kid;
}

/* Start top in the pane's shell; the shell prints its exit status after it. */
static char *start_top(const char *args, const char *marker)
{
	char *line, *q;

	if (asprintf(&line, "clear; %s --socket %s top %s; echo %s=$?", tcpbufctl_path(),
		     daemon_socket_path(), args, marker) < 0)
		abort();
	q = sh_quote(line);
	tmux(NULL, "send-keys -t top %s Enter", q);
	free(q);
	free(line);
	return pane_with("SHARE", 20000);
}

/* The pane's last line that is not blank is the shell's prompt "#". */
static int prompt_last(const char *p)
{
	const char *end = p + strlen(p), *l;

	while (end > p && (end[-1] == '\n' || end[-1] == ' '))
		end--;
	for (l = end; l > p && l[-1] != '\n'; l--)
		;
	return end - l == 1 && *l == '#';
}

/* The pane once the prompt is back. */
static char *pane_prompt(int timeout_ms)
{
	double end = now_sec() + timeout_ms / 1000.0;
	char *p;

	while ((p = pane()) && !prompt_last(p) && now_sec() < end) {
		free(p);
		msleep(100);
	}
	if (p && !prompt_last(p)) {
		test_log("no prompt on the last line:\n%s", p);
		free(p);
		p = NULL;
	}
	return p;
}

/* The pane after top ended: alternate screen off, tty as before, the status. */
static void check_restored(const char *before, const char *marker, int want_status)
{
	char want[64], *after, *p;

	EXPECT_EQ(wait_alternate(0, 10000), 0);
	snprintf(want, sizeof(want), "%s=%d", marker, want_status);
	/* A command list whose job died of SIGINT is cut short: the prompt is back. */
	p = want_status < 0 ? pane_prompt(10000) : pane_with(want, 10000);
	EXPECT_TRUE(p != NULL);
	after = pane_tty_settings();
	test_log("%s: stty before %s after %s", marker, before, after);
	EXPECT_TRUE(!strcmp(before, after));
	free(after);
	free(p);
}

/* Rows of a and b in the pane: a's line before b's? */
static int a_before_b(const char *p, const char *a, const char *b)
{
	int la = line_ending_with(p, a), lb = line_ending_with(p, b);

	if (la < 0 || lb < 0) {
		test_log("rows missing (a at %d, b at %d):\n%s", la, lb, p);
		return -1;
	}
	return la < lb;
}

/* Send a key, then the pane once its header names the order. */
static char *sort_by(const char *key, const char *name)
{
	char want[32];

	tmux(NULL, "send-keys -t top %s", key);
	snprintf(want, sizeof(want), "by %s ", name);
	return pane_with(want, 5000);
}

static void check_terminal_view(const char *a, const char *b, const char *d)
{
	char *before = pane_tty_settings(), *p;
	pid_t pid;

	/* q */
	p = start_top("", "top-q");
	ASSERT_TRUE(p != NULL);
	EXPECT_EQ(alternate_on(), 1);
	free(p);
	p = pane_with("normal", 10000);	/* rows drawn */
	ASSERT_TRUE(p != NULL);
	test_log("top at 160 columns:\n%s", p);
	EXPECT_EQ(a_before_b(p, a, b), 0);	/* share: b first */
	EXPECT_TRUE(strstr(p, "9ab4c1e27f0d") != NULL);	/* the container column */
	EXPECT_TRUE(line_ending_with(p, d + strlen(d) - 30) >= 0);
	EXPECT_TRUE(strstr(p, "host TCP: ") != NULL);
	free(p);
	p = sort_by("u", "usage");
	ASSERT_TRUE(p != NULL);
	EXPECT_EQ(a_before_b(p, a, b), 1);
	free(p);
	p = sort_by("p", "pressure");
	ASSERT_TRUE(p != NULL);
	EXPECT_EQ(a_before_b(p, a, b), 0);
	free(p);
	p = sort_by("s", "share");
	ASSERT_TRUE(p != NULL);
	EXPECT_EQ(a_before_b(p, a, b), 0);
	free(p);
	tmux(NULL, "send-keys -t top q");
	check_restored(before, "top-q", 0);

	/* a narrow terminal: share, state and the path's end stay */
	tmux(NULL, "resize-window -t top -x 50 -y 20");
	p = start_top("", "top-int");
	ASSERT_TRUE(p != NULL);
	free(p);
	p = pane_with("normal", 10000);
	ASSERT_TRUE(p != NULL);
	test_log("top at 50 columns:\n%s", p);
	EXPECT_TRUE(strstr(p, "SHARE") && strstr(p, "STATE") && strstr(p, "CGROUP"));
	EXPECT_TRUE(!strstr(p, "POD") && !strstr(p, "CONTAINER"));
	EXPECT_EQ(a_before_b(p, "/a", "/b"), 0);	/* ends of long paths */
	free(p);
	/* SIGINT from the terminal's ^C */
	tmux(NULL, "send-keys -t top C-c");
	check_restored(before, "top-int", -1);
	tmux(NULL, "resize-window -t top -x 160 -y 40");

	/* SIGTERM from elsewhere */
	p = start_top("", "top-term");
	ASSERT_TRUE(p != NULL);
	free(p);
	pid = top_pid();
	ASSERT_GT(pid, 0);
	EXPECT_OK(kill(pid, SIGTERM));
	check_restored(before, "top-term", 143);

	/* the daemon goes away: the reason is on the restored terminal */
	p = start_top("", "top-gone");
	ASSERT_TRUE(p != NULL);
	free(p);
	ASSERT_EQ(daemon_stop(), 0);
	check_restored(before, "top-gone", 1);
	p = pane();
	EXPECT_TRUE(p && strstr(p, "cannot reach tcpbufd"));
	free(p);
	free(before);
}

/* One snapshot's rows of `top -b`: share, usage, state, cgroup per line. */
struct batch_row {
	double share;
	uint64_t usage;
	char state[16], container[80], cgroup[256];
};

/* Parse @text's snapshots; returns how many, rows of the last in @rows. */
static int parse_batch(const char *text, struct batch_row *rows, int *nrows, int max)
{
	int snapshots = 0, n = 0, expect_header = 0;
	char *copy = strdup(text), *save = NULL;

	for (char *l = strtok_r(copy, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		char share[32], pr[32], mx[32], rate[32], pod[80];
		unsigned long long usage, pev;
		int off = 0;

		if (!strncmp(l, "time=", 5)) {
			snapshots++;
			n = 0;
			EXPECT_TRUE(strstr(l, " mode=") && strstr(l, " host_usage_pages=") &&
				    strstr(l, " host_tcp_mem_pages="));
			expect_header = 1;
			continue;
		}
		if (expect_header) {
			EXPECT_EQ(strcmp(l, "SHARE USAGE_PAGES PRESSURE_PAGES MAX_PAGES STATE "
					    "REFUSALS_PER_S PRESSURE_EVENTS CONTAINER_ID POD_UID CGROUP"), 0);
			expect_header = 0;
			continue;
		}
		if (n == max)
			continue;
		if (sscanf(l, "%31s %llu %31s %31s %15s %31s %llu %79s %79s %n", share, &usage, pr, mx,
			   rows[n].state, rate, &pev, rows[n].container, pod, &off) != 9 || !off) {
			test_log("batch line does not parse: '%s'", l);
			test_fail();
			continue;
		}
		rows[n].share = strcmp(share, "-") ? strtod(share, NULL) : -1;
		rows[n].usage = usage;
		snprintf(rows[n].cgroup, sizeof(rows[n].cgroup), "%s", l + off);
		n++;
	}
	free(copy);
	*nrows = n;
	return snapshots;
}

static void check_batch(const char *a, const char *b, const char *d)
{
	struct batch_row rows[64];
	char *out = NULL, *json = NULL;
	int n, i, snaps;
	double t0 = now_sec();

	ASSERT_EQ(ctl(&out, "top -b -n 3 -d 0.5"), 0);
	test_log("top -b -n 3 -d 0.5 took %.1f s:\n%s", now_sec() - t0, out);
	EXPECT_GE_F(now_sec() - t0, 0.9);
	EXPECT_TRUE(strchr(out, '\033') == NULL);
	ASSERT_EQ(ctl(&json, "status --json"), 0);
	snaps = parse_batch(out, rows, &n, 64);
	EXPECT_EQ(snaps, 3);
	EXPECT_EQ(n, json_cgroup_count(json));
	for (i = 0; i < n; i++) {
		int64_t usage, max;

		if (i && rows[i - 1].share < rows[i].share) {
			test_log("batch rows not sorted by share at %s", rows[i].cgroup);
			test_fail();
		}
		if (json_cgroup_field(json, rows[i].cgroup, "usage_pages", &usage) != JSON_FOUND) {
			test_log("batch row %s is not in status", rows[i].cgroup);
			test_fail();
			continue;
		}
		if (json_cgroup_field(json, rows[i].cgroup, "max_pages", &max) == JSON_FOUND && max)
			/* usage drifts a little between the two reads */
			EXPECT_NEAR_F(rows[i].share, 100.0 * (double)usage / (double)max, 2.0);
		if (!strcmp(rows[i].cgroup, d))
			EXPECT_EQ(strcmp(rows[i].container, ID), 0);
		else
			EXPECT_EQ(strcmp(rows[i].container, "-"), 0);
	}
	EXPECT_TRUE(line_ending_with(out, a) >= 0 && line_ending_with(out, b) >= 0);
	free(out);
	free(json);
	/* any pipe is batch mode; bad options are usage errors */
	ASSERT_EQ(ctl(&out, "top -n 1"), 0);
	EXPECT_EQ(parse_batch(out, rows, &n, 64), 1);
	free(out);
	EXPECT_EQ(ctl(NULL, "top -o speed"), 2);
	EXPECT_TRUE(strstr(ctl_stderr(), "-o takes share, usage, refusals or pressure") != NULL);
	EXPECT_EQ(ctl(NULL, "top -n 0"), 2);
}

/* A container's client (uid 65534, in b): top shows b's subtree only. */
static void check_confined_client(const char *b)
{
	struct batch_row rows[16];
	char *out = NULL, *ctlq = sh_quote(tcpbufctl_path()), *sockq = sh_quote(daemon_socket_path());
	char *abs = cg_abs(b);
	int n = 0;

	EXPECT_EQ(run_sh(&out, "echo $$ > %s/cgroup.procs && exec setpriv --reuid=65534 "
			 "--regid=65534 --clear-groups %s --socket %s top -b -n 1", abs, ctlq, sockq),
		  0);
	test_log("top -b as uid 65534 in b:\n%s", out);
	EXPECT_EQ(parse_batch(out, rows, &n, 16), 1);
	EXPECT_EQ(n, 1);
	for (int i = 0; i < n; i++)
		EXPECT_EQ(strcmp(rows[i].cgroup, b), 0);
	free(out);
	free(ctlq);
	free(sockq);
	free(abs);
}

int main(void)
{
	struct load_opts la = { .nconn = 8, .bytes = 256 << 10 };
	struct load_opts lb = { .nconn = 2, .bytes = 256 << 10 };
	char *a, *b, *d, *json = NULL;
	struct load *l1, *l2;
	int64_t events = 0;

	test_init();
	if (!have_program("tmux"))
		SKIP("no tmux (scripts/install-deps installs it)");
	a = cg_rel(cg_create("a"));
	b = cg_rel(cg_create("b"));
	d = cg_rel(cg_create("c/docker-" ID ".scope"));
	tmux_cg = cg_create("tmux");
	snprintf(tmux_name, sizeof(tmux_name), "tcpbuf-test-%d", (int)getpid());
	daemon_write_config("[Daemon]\nDropInDir=%s\nStateDir=%s\nSocketMode=0666\n",
			    daemon_confdir(), test_tmpdir());
	ASSERT_EQ(daemon_start(NULL), 0);
	ASSERT_EQ(ctl(NULL, "set-limit %s 256M", a), 0);
	ASSERT_EQ(ctl(NULL, "set %s 64M 128M 256M", a), 0);
	ASSERT_EQ(ctl(NULL, "set-limit %s 4M", b), 0);
	ASSERT_EQ(ctl(NULL, "set %s 256K 384K 4M", b), 0);
	ASSERT_EQ(ctl(NULL, "set-limit %s 8M", d), 0);
	la.cgroup = a;
	lb.cgroup = b;
	l1 = load_start(&la);
	l2 = load_start(&lb);
	ASSERT_TRUE(l1 && l2);
	ASSERT_EQ(load_wait_filled(l1, 0), 0);
	ASSERT_EQ(load_wait_filled(l2, 0), 0);
	ASSERT_EQ(ctl(&json, "status --json"), 0);
	test_log("status: %s", json);
	ASSERT_EQ(json_cgroup_field(json, b, "pressure_events", &events), JSON_FOUND);
	ASSERT_GE(events, 1);
	free(json);

	check_batch(a, b, d);
	if (have_program("setpriv"))
		check_confined_client(b);

	test_defer(tmux_kill, NULL);
	ASSERT_EQ(tmux(NULL, "new-session -d -s top -x 160 -y 40 sh"), 0);
	check_terminal_view(a, b, d);
	load_kill(l1);
	load_kill(l2);
	return test_done();
}
