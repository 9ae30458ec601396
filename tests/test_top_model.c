// SPDX-License-Identifier: GPL-2.0
/*
 * top's pure parts, table-driven: bars, columns for a width, the orders of
 * the sort keys, refusals per second, host procfs text, and status --json
 * that is not what top expects (one line naming the field, no rows).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../src/host_tcp_mem.h"
#include "../src/top_model.h"

static int failures;

#define CHECK(cond, ...) do { if (!(cond)) { printf("FAIL " __VA_ARGS__); printf("\n"); \
				     failures++; } } while (0)

static const struct bar_case {
	uint64_t usage, pressure, max, limit;
	size_t width;
	const char *bar;
} bars[] = {
	{ 0, 75, 100, TOP_NONE, 10, ".......|.." },
	{ 50, 75, 100, TOP_NONE, 10, "#####..|.." },
	{ 80, 75, 100, TOP_NONE, 10, "########.." },	/* past pressure: no mark */
	{ 100, 75, 100, TOP_NONE, 10, "##########" },
	{ 150, 75, 100, TOP_NONE, 10, "##########" },	/* over max: full */
	{ 1, TOP_NONE, 1000, TOP_NONE, 10, "#........." },	/* something held shows */
	{ 5, TOP_NONE, TOP_NONE, 10, 4, "##.." },	/* no max: the ceiling is the scale */
	{ 5, TOP_NONE, TOP_NONE, TOP_NONE, 4, "    " },	/* no scale */
	{ 5, 2, 10, TOP_NONE, 0, "" },
};

static void test_bars(void)
{
	for (size_t i = 0; i < sizeof(bars) / sizeof(bars[0]); i++) {
		const struct bar_case *c = &bars[i];
		struct top_row r = { .usage_pages = c->usage, .pressure_pages = c->pressure,
				     .max_pages = c->max, .limit_pages = c->limit };
		char buf[64];

		top_bar(&r, buf, c->width);
		CHECK(!strcmp(buf, c->bar), "bar %zu: '%s', want '%s'", i, buf, c->bar);
	}
}

static const struct layout_case {
	unsigned cols;
	const char *shown;	/* one letter per column shown, in order */
} layouts[] = {
	/* S share U usage P pressure M max B bar T state R refusals E entries C container D pod G cgroup */
	{ 200, "SUPMBTRECDG" },
	{ 109, "SUPMBTRECDG" },
	{ 108, "SUPMBTRECG" },	/* pod first */
	{ 99, "SUPMBTREG" },	/* then the container */
	{ 86, "SUMBTREG" },	/* then pressure: 80 columns keep the bar */
	{ 77, "SUMBTRG" },
	{ 69, "SUMTRG" },
	{ 56, "SUTRG" },
	{ 49, "SUTRG" },
	{ 20, "SUTRG" },	/* the path gets what is left */
};

static void test_layouts(void)
{
	static const char letters[TOP_N_COLS] = "SUPMBTRECDG";

	for (size_t i = 0; i < sizeof(layouts) / sizeof(layouts[0]); i++) {
		struct top_layout l;
		char got[TOP_N_COLS + 1] = "";
		unsigned total = 0;
		size_t n = 0;

		top_layout_for(layouts[i].cols, &l);
		for (int c = 0; c < TOP_N_COLS; c++)
			if (l.shown[c]) {
				got[n++] = letters[c];
				total += l.width[c] + (c != COL_CGROUP);
			}
		CHECK(!strcmp(got, layouts[i].shown), "layout %u: %s, want %s", layouts[i].cols, got,
		      layouts[i].shown);
		CHECK(total <= layouts[i].cols || layouts[i].cols < 49, "layout %u: %u cells",
		      layouts[i].cols, total);
		CHECK(l.width[COL_CGROUP] >= 1, "layout %u: no room for the path", layouts[i].cols);
	}
}

static const char status_json[] =
	"{\"version\": \"0.1.0\", \"mode\": \"sampled\", \"socket_entries\": 3,\n \"cgroups\": ["
	"{\"cgroup\": \"/a\", \"container_id\": null, \"pod_uid\": null, \"id\": 1, "
	"\"usage_pages\": 900, \"usage_bytes\": 0, \"peak_pages\": 0, \"sockets\": 8, "
	"\"limit_pages\": 65536, \"min_pages\": 1, \"pressure_pages\": 32768, \"max_pages\": 65536, "
	"\"state\": \"normal\", \"failcnt\": 10, \"pressure_events\": 0},"
	"{\"cgroup\": \"/b\", \"id\": 2, \"usage_pages\": 100, \"sockets\": 2, \"limit_pages\": 1024,"
	" \"pressure_pages\": 96, \"max_pages\": 1024, \"state\": \"pressure\", \"failcnt\": 4,"
	" \"pressure_events\": 3, \"container_id\": \"" "abc" "\", \"pod_uid\": null},"
	"{\"cgroup\": null, \"id\": 3, \"usage_pages\": 5, \"sockets\": 1, \"limit_pages\": null,"
	" \"pressure_pages\": null, \"max_pages\": null, \"state\": \"normal\", \"failcnt\": 0,"
	" \"pressure_events\": 0}]}";

static void order(struct top_snapshot *s, enum top_key key, const char *want)
{
	char got[64] = "";

	top_sort(s, key);
	for (size_t i = 0; i < s->n; i++)
		strcat(got, s->rows[i].cgroup[1] == 'r' ? "r" : s->rows[i].cgroup + 1);
	CHECK(!strcmp(got, want), "order by %s: %s, want %s", top_key_name(key), got, want);
}

static void test_snapshot(void)
{
	struct top_snapshot now, prev;
	char err[256];

	CHECK(!top_snapshot_parse(status_json, &prev, err, sizeof(err)), "parse: %s", err);
	CHECK(!top_snapshot_parse(status_json, &now, err, sizeof(err)), "parse: %s", err);
	if (failures)
		return;
	CHECK(now.n == 3 && !strcmp(now.mode, "sampled"), "3 rows, mode");
	CHECK(!strcmp(now.rows[2].cgroup, "(removed)"), "null path: %s", now.rows[2].cgroup);
	CHECK(now.rows[2].max_pages == TOP_NONE && top_share(&now.rows[2]) < 0, "no scale");
	CHECK(!strcmp(now.rows[1].container_id, "abc"), "container_id");
	/* b's failcnt 4 -> 24 in 2 s, a's 10 -> 10 */
	now.rows[1].failcnt = 24;
	top_rates(&now, &prev, 2.0);
	CHECK(now.rows[1].refusals_per_s == 10.0 && now.rows[0].refusals_per_s == 0.0,
	      "rates %.1f %.1f", now.rows[1].refusals_per_s, now.rows[0].refusals_per_s);
	CHECK(now.rows[2].refusals_per_s == 0.0, "rate of a row with no refusals");
	order(&now, TOP_BY_SHARE, "bar");	/* b 9.8%, a 1.4%, removed none */
	order(&now, TOP_BY_USAGE, "abr");
	order(&now, TOP_BY_REFUSALS, "bra");	/* ties by path */
	order(&now, TOP_BY_PRESSURE, "bra");
	/* a counter that went back (a new cgroup, same id): unknown, not negative */
	prev.rows[0].failcnt = 50;
	top_sort(&prev, TOP_BY_USAGE);
	top_rates(&now, &prev, 1.0);
	for (size_t i = 0; i < now.n; i++)
		if (!strcmp(now.rows[i].cgroup, "/a"))
			CHECK(now.rows[i].refusals_per_s < 0, "counter reset: %.1f",
			      now.rows[i].refusals_per_s);
	top_rates(&now, NULL, 0);
	CHECK(now.rows[0].refusals_per_s < 0, "first snapshot: no rate");
	top_snapshot_free(&now);
	top_snapshot_free(&prev);
}

static const struct bad_case {
	const char *json, *err;
} bads[] = {
	{ "", "status --json: " },
	{ "{\"cgroups\": 3}", "no \"cgroups\" array" },
	{ "{\"cgroups\": [1]}", "cgroups[0] is not an object" },
	{ "{\"cgroups\": [{\"cgroup\": 5}]}", "cgroups[0].cgroup is not a path" },
	{ "{\"cgroups\": [{\"cgroup\": \"/a\", \"id\": 1}]}", "cgroups[0] has no \"usage_pages\"" },
	{ "{\"cgroups\": [{\"cgroup\": \"/a\", \"id\": -1}]}", "cgroups[0].id is not a count" },
	{ "{\"cgroups\": [{\"cgroup\": \"/a\", \"id\": 1, \"usage_pages\": \"9\"}]}",
	  "cgroups[0].usage_pages is not a count" },
};

static void test_bad_json(void)
{
	for (size_t i = 0; i < sizeof(bads) / sizeof(bads[0]); i++) {
		struct top_snapshot s;
		char err[256] = "";

		CHECK(top_snapshot_parse(bads[i].json, &s, err, sizeof(err)) == -1 && s.n == 0 &&
		      strstr(err, bads[i].err), "bad json %zu: '%s', want '%s'", i, err, bads[i].err);
	}
}

static void test_display(void)
{
	static const struct { const char *in, *out; } cases[] = {
		{ "/system.slice/web.service", "/system.slice/web.service" },
		{ "/a\nb", "/a\\x0ab" },
		{ "/\033[2J", "/\\x1b[2J" },
		{ "/back\\slash", "/back\\\\slash" },
		{ "/del\x7f", "/del\\x7f" },
		{ "/utf\xc3\xa9 sp", "/utf\xc3\xa9 sp" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *got = top_path_display(cases[i].in);

		CHECK(got && !strcmp(got, cases[i].out), "display %zu: '%s', want '%s'", i, got,
		      cases[i].out);
		free(got);
	}
}

static void test_keys(void)
{
	enum top_key k;

	CHECK(top_key_for_char('s') == TOP_BY_SHARE && top_key_for_char('u') == TOP_BY_USAGE &&
	      top_key_for_char('f') == TOP_BY_REFUSALS && top_key_for_char('p') == TOP_BY_PRESSURE &&
	      top_key_for_char('x') == -1, "keys");
	CHECK(top_key_parse("refusals", &k) && k == TOP_BY_REFUSALS && !top_key_parse("Share", &k),
	      "key names");
}

static void test_host(void)
{
	struct host_tcp_mem m = { 0 };
	uint64_t p = 0;

	CHECK(host_tcp_mem_parse_sockstat("sockets: used 15\nTCP: inuse 1 orphan 0 tw 2 alloc 1 "
					  "mem 141\nUDP: inuse 0 mem 7\n", &p) && p == 141,
	      "sockstat: %llu", (unsigned long long)p);
	CHECK(!host_tcp_mem_parse_sockstat("sockets: used 15\nUDP: inuse 0 mem 7\n", &p),
	      "sockstat without TCP");
	CHECK(!host_tcp_mem_parse_sockstat("TCP: inuse 1\nUDP: inuse 0 mem 7\n", &p),
	      "TCP line without mem takes UDP's");
	CHECK(host_tcp_mem_parse_limits("287892\t383858\t575784\n", &m) && m.min_pages == 287892 &&
	      m.pressure_pages == 383858 && m.max_pages == 575784, "tcp_mem");
	CHECK(!host_tcp_mem_parse_limits("1 2\n", &m) && !host_tcp_mem_parse_limits("1 2 3 4\n", &m),
	      "tcp_mem with 2 or 4 numbers");
}

int main(void)
{
	test_bars();
	test_layouts();
	test_snapshot();
	test_bad_json();
	test_keys();
	test_display();
	test_host();
	printf("%d failures\n", failures);
	return failures ? 1 : 0;
}
