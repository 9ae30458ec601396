// SPDX-License-Identifier: GPL-2.0
/*
 * `tcpbufctl top`: status --json fetched every interval over the control
 * socket, drawn with ncurses (or printed as plain lines in batch mode). The
 * terminal is given back on every way out: q, SIGINT/SIGTERM/SIGHUP, and a
 * daemon that stops answering (whose error is printed after the screen is
 * restored, not lost in it).
 */
#define _GNU_SOURCE
#include <curses.h>
#include <errno.h>
#include <getopt.h>
#include <locale.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "host_tcp_mem.h"
#include "size.h"
#include "top.h"
#include "top_model.h"

#define PROG "tcpbufctl"

struct top_opts {
	bool batch;
	long count;		/* snapshots to show; 0 = until stopped */
	double interval;	/* seconds */
	enum top_key key;
	int ncgroups;
	char **cgroups;
};

static volatile sig_atomic_t stop_signal;

static void on_stop_signal(int sig)
{
	stop_signal = sig;
}

static int usage_error(const char *what, const char *arg)
{
	fprintf(stderr, "%s: top: %s '%s' (see %s top --help)\n", PROG, what, arg, PROG);
	return 2;
}

static int parse_opts(int argc, char **argv, struct top_opts *o)
{
	char *end;
	int c;

	*o = (struct top_opts){ .interval = 1, .key = TOP_BY_SHARE };
	opterr = 0;
	optind = 1;
	while ((c = getopt(argc, argv, "+bn:d:o:")) != -1) {
		switch (c) {
		case 'b':
			o->batch = true;
			break;
		case 'n':
			errno = 0;
			o->count = strtol(optarg, &end, 10);
			if (errno || *end || o->count < 1)
				return usage_error("-n needs a count of snapshots, not", optarg);
			break;
		case 'd':
			errno = 0;
			o->interval = strtod(optarg, &end);
			if (errno || *end || !(o->interval >= 0.1 && o->interval <= 3600))
				return usage_error("-d needs seconds from 0.1 to 3600, not", optarg);
			break;
		case 'o':
			if (!top_key_parse(optarg, &o->key))
				return usage_error("-o takes share, usage, refusals or pressure, not",
						   optarg);
			break;
		default: {
			char opt[3] = { '-', (char)optopt, 0 };

			return usage_error(strchr("ndo", optopt) ? "missing the value of" :
					   "unknown option", opt);
		}
		}
	}
	o->ncgroups = argc - optind;
	o->cgroups = argv + optind;
	return 0;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* status [CGROUP...] --json, read into @snap. An exit status; errors on stderr. */
static int fetch(const char *socket, const struct top_opts *o, struct top_snapshot *snap)
{
	char **words = calloc((size_t)o->ncgroups + 2, sizeof(*words)), *body = NULL, err[256];
	size_t len = 0;
	FILE *f = open_memstream(&body, &len);
	int code = 1;

	if (!words || !f) {
		fprintf(stderr, "%s: top: out of memory\n", PROG);
		goto out;
	}
	words[0] = "status";
	memcpy(words + 1, o->cgroups, (size_t)o->ncgroups * sizeof(*words));
	words[o->ncgroups + 1] = "--json";
	code = tcpbufctl_call(socket, o->ncgroups + 2, words, f);
	fclose(f);
	f = NULL;
	if (!code && top_snapshot_parse(body, snap, err, sizeof(err))) {
		fprintf(stderr, "%s: top: %s\n", PROG, err);
		code = 1;
	}
out:
	if (f)
		fclose(f);
	free(body);
	free(words);
	return code;
}

static const char *pages_human(uint64_t pages, char *buf)
{
	if (pages == TOP_NONE)
		return "-";
	size_format_human(pages, buf, SIZE_HUMAN_LEN);
	return buf;
}

static const char *share_text(const struct top_row *r, char *buf, size_t len)
{
	double share = top_share(r);

	if (share < 0)
		return "-";
	snprintf(buf, len, "%.1f%%", share * 100);
	return buf;
}

static const char *rate_text(double rate, char *buf, size_t len)
{
	if (rate < 0)
		return "-";
	snprintf(buf, len, "%.1f", rate);
	return buf;
}

/* The host's line: sockstat's TCP memory against tcp_mem, or why it is not shown. */
static void host_line(const struct host_tcp_mem *h, char *buf, size_t len)
{
	char u[SIZE_HUMAN_LEN], mn[SIZE_HUMAN_LEN], pr[SIZE_HUMAN_LEN], mx[SIZE_HUMAN_LEN];

	if (!h->has_usage) {
		snprintf(buf, len, "host TCP: /proc/net/sockstat unreadable");
		return;
	}
	pages_human(h->usage_pages, u);
	if (!h->has_limits || !h->max_pages) {
		snprintf(buf, len, "host TCP: %s (net.ipv4.tcp_mem not visible here)", u);
		return;
	}
	snprintf(buf, len, "host TCP: %s of tcp_mem max %s (%.1f%%; pressure %s, min %s)", u,
		 pages_human(h->max_pages, mx), 100.0 * (double)h->usage_pages / (double)h->max_pages,
		 pages_human(h->pressure_pages, pr), pages_human(h->min_pages, mn));
}

/* ---- batch: plain lines ------------------------------------------------- */

static void print_batch(FILE *f, const struct top_snapshot *s, const struct host_tcp_mem *h,
			enum top_key key)
{
	char when[32], share[32], rate[32];
	time_t t = time(NULL);
	struct tm tm;

	strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&t, &tm));
	fprintf(f, "time=%s mode=%s cgroups=%zu sort=%s", when, s->mode[0] ? s->mode : "-", s->n,
		top_key_name(key));
	if (h->has_usage)
		fprintf(f, " host_usage_pages=%llu", (unsigned long long)h->usage_pages);
	else
		fputs(" host_usage_pages=-", f);
	if (h->has_limits)
		fprintf(f, " host_tcp_mem_pages=%llu,%llu,%llu\n", (unsigned long long)h->min_pages,
			(unsigned long long)h->pressure_pages, (unsigned long long)h->max_pages);
	else
		fputs(" host_tcp_mem_pages=-\n", f);
	fputs("SHARE USAGE_PAGES PRESSURE_PAGES MAX_PAGES STATE REFUSALS_PER_S PRESSURE_EVENTS "
	      "CONTAINER_ID POD_UID CGROUP\n", f);
	for (size_t i = 0; i < s->n; i++) {
		const struct top_row *r = &s->rows[i];
		double sh = top_share(r);

		if (sh >= 0)
			snprintf(share, sizeof(share), "%.1f", sh * 100);
		else
			strcpy(share, "-");
		fprintf(f, "%s %llu ", share, (unsigned long long)r->usage_pages);
		if (r->pressure_pages == TOP_NONE)
			fputs("- ", f);
		else
			fprintf(f, "%llu ", (unsigned long long)r->pressure_pages);
		if (r->max_pages == TOP_NONE)
			fputs("- ", f);
		else
			fprintf(f, "%llu ", (unsigned long long)r->max_pages);
		fprintf(f, "%s %s %llu %s %s %s\n", r->state[0] ? r->state : "-",
			rate_text(r->refusals_per_s, rate, sizeof(rate)),
			(unsigned long long)r->pressure_events,
			r->container_id[0] ? r->container_id : "-", r->pod_uid[0] ? r->pod_uid : "-",
			r->cgroup);
	}
	fputc('\n', f);
	fflush(f);
}

/* ---- the terminal view --------------------------------------------------- */

enum { PAIR_NORMAL = 1, PAIR_PRESSURE, PAIR_MAX };

static const char *const col_titles[TOP_N_COLS] = {
	[COL_SHARE] = "SHARE", [COL_USAGE] = "USAGE", [COL_PRESSURE] = "PRESSURE",
	[COL_MAX] = "MAX", [COL_BAR] = "USAGE/MAX", [COL_STATE] = "STATE",
	[COL_REFUSALS] = "REFUSE/S", [COL_PRESS_ENTRIES] = "PRESS#",
	[COL_CONTAINER] = "CONTAINER", [COL_POD] = "POD", [COL_CGROUP] = "CGROUP",
};

static attr_t state_attr(const char *state)
{
	if (!has_colors())
		return strcmp(state, "normal") ? A_BOLD : A_NORMAL;
	if (!strcmp(state, "max"))
		return COLOR_PAIR(PAIR_MAX) | A_BOLD;
	if (!strcmp(state, "pressure"))
		return COLOR_PAIR(PAIR_PRESSURE) | A_BOLD;
	return COLOR_PAIR(PAIR_NORMAL);
}

/* A path too long for its column keeps its end, where the container is. */
static void put_path(int y, int x, const char *path, unsigned width)
{
	size_t n = strlen(path);

	if (n <= width || width < 4) {
		mvaddnstr(y, x, path, (int)width);
		return;
	}
	mvaddstr(y, x, "...");
	addnstr(path + n - (width - 3), (int)width - 3);
}

static void put_bar(int y, int x, const struct top_row *r, unsigned width)
{
	char bar[64];
	attr_t attr = state_attr(r->state);

	top_bar(r, bar, width < sizeof(bar) ? width : sizeof(bar) - 1);
	move(y, x);
	for (const char *c = bar; *c; c++) {
		attrset(*c == '#' ? attr : *c == '|' ? A_BOLD : A_DIM);
		addch((chtype)*c);
	}
	attrset(A_NORMAL);
}

static void draw_row(int y, const struct top_row *r, const struct top_layout *l)
{
	char buf[TOP_N_COLS][72];
	const char *text[TOP_N_COLS] = { 0 };
	int x = 0;

	text[COL_SHARE] = share_text(r, buf[COL_SHARE], sizeof(buf[0]));
	text[COL_USAGE] = pages_human(r->usage_pages, buf[COL_USAGE]);
	text[COL_PRESSURE] = pages_human(r->pressure_pages, buf[COL_PRESSURE]);
	text[COL_MAX] = pages_human(r->max_pages, buf[COL_MAX]);
	text[COL_STATE] = r->state[0] ? r->state : "-";
	text[COL_REFUSALS] = rate_text(r->refusals_per_s, buf[COL_REFUSALS], sizeof(buf[0]));
	snprintf(buf[COL_PRESS_ENTRIES], sizeof(buf[0]), "%llu",
		 (unsigned long long)r->pressure_events);
	text[COL_PRESS_ENTRIES] = buf[COL_PRESS_ENTRIES];
	text[COL_CONTAINER] = r->container_id[0] ? r->container_id : "-";
	text[COL_POD] = r->pod_uid[0] ? r->pod_uid : "-";
	for (int c = 0; c < TOP_N_COLS; c++) {
		if (!l->shown[c])
			continue;
		if (c == COL_BAR)
			put_bar(y, x, r, l->width[c]);
		else if (c == COL_CGROUP)
			put_path(y, x, r->cgroup, l->width[c]);
		else if (c == COL_STATE) {
			attrset(state_attr(r->state));
			mvaddnstr(y, x, text[c], (int)l->width[c]);
			attrset(A_NORMAL);
		} else if (c == COL_CONTAINER || c == COL_POD)
			mvaddnstr(y, x, text[c], (int)l->width[c]);
		else	/* numbers to the right */
			mvprintw(y, x, "%*.*s", (int)l->width[c], (int)l->width[c], text[c]);
		x += (int)l->width[c] + 1;
	}
}

static void draw(const struct top_snapshot *s, const struct host_tcp_mem *h, enum top_key key)
{
	struct top_layout l;
	char line[512];
	int rows, cols, x = 0;

	getmaxyx(stdscr, rows, cols);
	erase();
	top_layout_for((unsigned)cols, &l);
	snprintf(line, sizeof(line),
		 "tcpbufd %s: %zu cgroups, by %s   [s]hare [u]sage re[f]usals [p]ressure [q]uit",
		 s->mode, s->n, top_key_name(key));
	mvaddnstr(0, 0, line, cols);
	host_line(h, line, sizeof(line));
	mvaddnstr(1, 0, line, cols);
	attrset(A_REVERSE);
	mvhline(3, 0, ' ', cols);
	for (int c = 0; c < TOP_N_COLS; c++) {
		if (!l.shown[c])
			continue;
		mvaddnstr(3, x, col_titles[c], (int)l.width[c]);
		x += (int)l.width[c] + 1;
	}
	attrset(A_NORMAL);
	for (size_t i = 0; i < s->n && (int)i + 4 < rows; i++)
		draw_row((int)i + 4, &s->rows[i], &l);
	refresh();
}

/* Until the interval is over: keys re-sort and redraw at once. False on q. */
static bool wait_keys(double until, struct top_snapshot *s, const struct host_tcp_mem *h,
		      enum top_key *key)
{
	struct pollfd pfd = { .fd = STDIN_FILENO, .events = POLLIN };
	double left;
	int c, k;

	while (!stop_signal && (left = until - now_s()) > 0) {
		poll(&pfd, 1, (int)ceil(left * 1000));
		while (!stop_signal && (c = getch()) != ERR) {
			if (c == 'q' || c == 'Q')
				return false;
			if ((k = top_key_for_char(c)) >= 0) {
				*key = (enum top_key)k;
				top_sort(s, *key);
			}
			draw(s, h, *key);	/* also KEY_RESIZE and ^L */
		}
	}
	return !stop_signal;
}

/* Errors while the screen is ours go to a file, printed once it is given back. */
struct saved_stderr {
	FILE *tmp;
	int fd;
};

static void stderr_capture(struct saved_stderr *s)
{
	fflush(stderr);
	s->tmp = tmpfile();
	s->fd = s->tmp ? dup(STDERR_FILENO) : -1;
	if (s->fd >= 0)
		dup2(fileno(s->tmp), STDERR_FILENO);
}

static void stderr_restore(struct saved_stderr *s)
{
	char buf[4096];
	size_t n;

	fflush(stderr);
	if (s->fd >= 0) {
		dup2(s->fd, STDERR_FILENO);
		close(s->fd);
	}
	if (!s->tmp)
		return;
	rewind(s->tmp);
	while ((n = fread(buf, 1, sizeof(buf), s->tmp)) > 0)
		fwrite(buf, 1, n, stderr);
	fclose(s->tmp);
}

static void catch_stop_signals(void)
{
	struct sigaction sa = { .sa_handler = on_stop_signal };	/* no SA_RESTART: wake poll */

	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
}

static int start_screen(SCREEN **scr)
{
	const char *term = getenv("TERM");

	*scr = newterm(NULL, stdout, stdin);
	if (!*scr) {
		fprintf(stderr, "%s: top: cannot drive the terminal (TERM=%s); try -b\n", PROG,
			term ? term : "");
		return 1;
	}
	cbreak();
	noecho();
	nodelay(stdscr, TRUE);
	keypad(stdscr, TRUE);
	curs_set(0);
	if (has_colors()) {
		start_color();
		use_default_colors();
		init_pair(PAIR_NORMAL, COLOR_GREEN, -1);
		init_pair(PAIR_PRESSURE, COLOR_YELLOW, -1);
		init_pair(PAIR_MAX, COLOR_RED, -1);
	}
	return 0;
}

/* One snapshot: fetched, with rates against the last one, sorted. */
static int take_snapshot(const char *socket, const struct top_opts *o, enum top_key key,
			 struct top_snapshot *cur, struct top_snapshot *prev, double *prev_t,
			 struct host_tcp_mem *host)
{
	double t = now_s();
	int code = fetch(socket, o, cur);

	if (code)
		return code;
	host_tcp_mem_read(host);
	top_rates(cur, prev->rows ? prev : NULL, prev->rows ? t - *prev_t : 0);
	top_sort(cur, key);
	top_snapshot_free(prev);
	*prev = *cur;		/* the rows are shared: cur is only a view of prev now */
	*prev_t = t;
	return 0;
}

static int run_batch(const char *socket, const struct top_opts *o)
{
	struct top_snapshot cur, prev = { 0 };
	struct host_tcp_mem host;
	double t = 0, next = now_s();
	int code = 0;

	for (long i = 0; !o->count || i < o->count; i++) {
		if (i) {
			next += o->interval;
			while (now_s() < next)
				usleep((useconds_t)((next - now_s()) * 1e6) + 1);
		}
		code = take_snapshot(socket, o, o->key, &cur, &prev, &t, &host);
		if (code)
			break;
		print_batch(stdout, &prev, &host, o->key);
		if (ferror(stdout))
			break;
	}
	top_snapshot_free(&prev);
	return code;
}

static int run_screen(const char *socket, const struct top_opts *o)
{
	struct top_snapshot cur, prev = { 0 };
	struct saved_stderr saved;
	struct host_tcp_mem host;
	enum top_key key = o->key;
	double t = 0, next;
	SCREEN *scr;
	int code = 0, sig;

	catch_stop_signals();
	setlocale(LC_CTYPE, "");	/* UTF-8 in paths drawn as characters */
	if (start_screen(&scr))
		return 1;
	stderr_capture(&saved);
	next = now_s();
	for (long i = 0; !stop_signal && (!o->count || i < o->count); i++) {
		code = take_snapshot(socket, o, key, &cur, &prev, &t, &host);
		if (code)
			break;
		draw(&prev, &host, key);
		next += o->interval;
		if (!wait_keys(next, &prev, &host, &key))
			break;
	}
	endwin();
	delscreen(scr);
	stderr_restore(&saved);
	top_snapshot_free(&prev);
	if ((sig = stop_signal)) {
		/* Die of the signal, as the caller expects, now that the terminal is back. */
		signal(sig, SIG_DFL);
		raise(sig);
	}
	return code;
}

int top_main(const char *socket, int argc, char **argv)
{
	struct top_opts o;
	int code = parse_opts(argc, argv, &o);

	if (code)
		return code;
	if (o.batch || !isatty(STDOUT_FILENO) || !isatty(STDIN_FILENO))
		return run_batch(socket, &o);
	return run_screen(socket, &o);
}
