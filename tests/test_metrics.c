// SPDX-License-Identifier: GPL-2.0
/*
 * `tcpbufctl metrics` is Prometheus' text exposition format (0.0.4) as
 * node_exporter's textfile collector reads it, with the numbers status has.
 *
 * Cgroups: a (limit, thresholds, a stalled loopback load), and siblings
 * whose names need escaping or are not UTF-8: q"uo\te sp, utfé, bad\xff.
 * The output must pass a strict parser (below): HELP and TYPE once per
 * family and before its samples, families not interleaved, valid metric
 * and label names, label values escaped (\\ \" \n) and valid UTF-8, numeric
 * values, no timestamps (the textfile collector refuses them), no duplicate
 * series, counters named *_total. Where promtool exists (in $PATH or
 * .cache/tools/promtool, which scripts/install-deps unpacks from Debian's
 * prometheus package) `promtool check metrics` must accept it too, lint
 * included.
 *
 * Content: tcpbufd_build_info{version,mode} 1 with status's mode; for a,
 * usage/peak/limit/min/pressure/max in bytes equal to status's pages x 4096
 * (usage within the drift of a running load), one state series at 1;
 * unset thresholds have no sample; every cgroup of status has its samples,
 * labelled with the path status gives (escaped).
 */
#define _GNU_SOURCE
#include "harness.h"
#include "load.h"
#include "sdunit.h"

#include <ctype.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- a strict exposition-format parser ----------------------------------- */

#define MAX_FAMILIES 64
#define MAX_SERIES 4096

struct family {
	char name[128];
	char type[16];
	bool help, typed, closed;
	int samples;
};

struct parsed {
	struct family fam[MAX_FAMILIES];
	int nfam;
	char *series[MAX_SERIES];
	int nseries;
	int errors;
};

static bool parser_quiet;	/* checking that bad input is caught */

static void perr(struct parsed *p, int line, const char *fmt, const char *arg)
{
	char msg[512];

	snprintf(msg, sizeof(msg), fmt, arg);
	if (!parser_quiet)
		test_log("metrics line %d: %s", line, msg);
	p->errors++;
}

static bool metric_name_ok(const char *s, size_t n)
{
	if (!n || !(isalpha((unsigned char)s[0]) || s[0] == '_' || s[0] == ':'))
		return false;
	for (size_t i = 1; i < n; i++)
		if (!(isalnum((unsigned char)s[i]) || s[i] == '_' || s[i] == ':'))
			return false;
	return true;
}

static bool label_name_ok(const char *s, size_t n)
{
	if (!n || !(isalpha((unsigned char)s[0]) || s[0] == '_') || (n >= 2 && !strncmp(s, "__", 2)))
		return false;
	for (size_t i = 1; i < n; i++)
		if (!(isalnum((unsigned char)s[i]) || s[i] == '_'))
			return false;
	return true;
}

static bool utf8_ok(const unsigned char *s, size_t n)
{
	size_t i = 0;

	while (i < n) {
		size_t len;
		uint32_t cp;

		if (s[i] < 0x80) {
			i++;
			continue;
		}
		if ((s[i] & 0xe0) == 0xc0)
			len = 2, cp = s[i] & 0x1f;
		else if ((s[i] & 0xf0) == 0xe0)
			len = 3, cp = s[i] & 0x0f;
		else if ((s[i] & 0xf8) == 0xf0)
			len = 4, cp = s[i] & 0x07;
		else
			return false;
		if (i + len > n)
			return false;
		for (size_t k = 1; k < len; k++) {
			if ((s[i + k] & 0xc0) != 0x80)
				return false;
			cp = cp << 6 | (s[i + k] & 0x3f);
		}
		if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
		    cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
			return false;
		i += len;
	}
	return true;
}

static struct family *family(struct parsed *p, const char *name, size_t n)
{
	for (int i = 0; i < p->nfam; i++)
		if (strlen(p->fam[i].name) == n && !strncmp(p->fam[i].name, name, n))
			return &p->fam[i];
	if (p->nfam == MAX_FAMILIES || n >= sizeof(p->fam[0].name))
		return NULL;
	snprintf(p->fam[p->nfam].name, sizeof(p->fam[0].name), "%.*s", (int)n, name);
	return &p->fam[p->nfam++];
}

/* Close every family but f: a family's lines must be contiguous. */
static void switch_to(struct parsed *p, struct family *f)
{
	for (int i = 0; i < p->nfam; i++)
		if (&p->fam[i] != f && (p->fam[i].samples || p->fam[i].help || p->fam[i].typed))
			p->fam[i].closed = true;
}

static void parse_comment(struct parsed *p, int ln, const char *l)
{
	const char *name, *rest;
	struct family *f;
	size_t n;
	bool help = !strncmp(l, "# HELP ", 7), type = !strncmp(l, "# TYPE ", 7);

	if (!help && !type)
		return;	/* any other comment is allowed */
	name = l + 7;
	n = strcspn(name, " ");
	rest = name[n] ? name + n + 1 : NULL;
	if (!metric_name_ok(name, n) || !rest) {
		perr(p, ln, "bad %s line", help ? "HELP" : "TYPE");
		return;
	}
	f = family(p, name, n);
	if (!f) {
		perr(p, ln, "%s", "too many families");
		return;
	}
	if (f->closed)
		perr(p, ln, "%s: family continues after another one", f->name);
	switch_to(p, f);
	if (help) {
		if (f->help)
			perr(p, ln, "%s: second HELP", f->name);
		f->help = true;
		for (const char *c = rest; *c; c++)
			if (*c == '\\' && c[1] != '\\' && c[1] != 'n')
				perr(p, ln, "%s: bad escape in HELP", f->name);
		if (!utf8_ok((const unsigned char *)rest, strlen(rest)))
			perr(p, ln, "%s: HELP is not UTF-8", f->name);
	} else {
		if (f->typed)
			perr(p, ln, "%s: second TYPE", f->name);
		if (f->samples)
			perr(p, ln, "%s: TYPE after samples", f->name);
		if (strcmp(rest, "counter") && strcmp(rest, "gauge") && strcmp(rest, "histogram") &&
		    strcmp(rest, "summary") && strcmp(rest, "untyped"))
			perr(p, ln, "unknown type '%s'", rest);
		snprintf(f->type, sizeof(f->type), "%s", rest);
		f->typed = true;
	}
}

/* name{l="v",...} value: returns the canonical series "name{l=v,...}" or NULL. */
static char *parse_sample(struct parsed *p, int ln, const char *l, struct family **fout,
			  char **labels_out)
{
	size_t n = strcspn(l, "{ ");
	const char *c = l + n;
	char *series, *labels = calloc(1, strlen(l) * 2 + 2), *end;
	char names[16][64];
	int nlabels = 0;
	double v;

	*labels_out = labels;
	if (!metric_name_ok(l, n)) {
		perr(p, ln, "bad metric name in '%s'", l);
		return NULL;
	}
	*fout = family(p, l, n);
	if (*c == '{') {
		c++;
		while (*c != '}') {
			size_t ln_ = strcspn(c, "=");

			if (!label_name_ok(c, ln_) || c[ln_] != '=' || c[ln_ + 1] != '"') {
				perr(p, ln, "bad label in '%s'", l);
				return NULL;
			}
			for (int i = 0; i < nlabels; i++)
				if (strlen(names[i]) == ln_ && !strncmp(names[i], c, ln_))
					perr(p, ln, "duplicate label in '%s'", l);
			if (nlabels < 16)
				snprintf(names[nlabels++], sizeof(names[0]), "%.*s", (int)ln_, c);
			strncat(labels, c, ln_ + 1);
			c += ln_ + 2;
			{
				const char *start = c;
				char *val = calloc(1, strlen(c) + 1), *o = val;

				while (*c && *c != '"') {
					if (*c == '\\') {
						if (c[1] == '\\' || c[1] == '"')
							*o++ = c[1];
						else if (c[1] == 'n')
							*o++ = '\n';
						else
							perr(p, ln, "bad escape in '%s'", l);
						c += 2;
					} else {
						*o++ = *c++;
					}
				}
				if (*c != '"') {
					perr(p, ln, "unterminated label value in '%s'", l);
					free(val);
					return NULL;
				}
				if (!utf8_ok((const unsigned char *)start, c - start))
					perr(p, ln, "label value is not UTF-8 in '%s'", l);
				strcat(labels, val);
				free(val);
				c++;
			}
			if (*c == ',') {
				strcat(labels, ",");
				c++;
				if (*c == '}')
					perr(p, ln, "trailing comma in '%s'", l);
			} else if (*c != '}') {
				perr(p, ln, "expected , or } in '%s'", l);
				return NULL;
			}
		}
		c++;
	}
	if (*c != ' ') {
		perr(p, ln, "no value in '%s'", l);
		return NULL;
	}
	c++;
	if (strcmp(c, "+Inf") && strcmp(c, "-Inf") && strcmp(c, "NaN")) {
		v = strtod(c, &end);
		if (end == c || (*end && *end != ' '))
			perr(p, ln, "bad value in '%s'", l);
		if (*end == ' ')
			perr(p, ln, "timestamp in '%s' (the textfile collector refuses them)", l);
		(void)v;
	}
	if (asprintf(&series, "%.*s{%s}", (int)n, l, labels) < 0)
		abort();
	return series;
}

static struct parsed *parse_exposition(const char *text)
{
	struct parsed *p = calloc(1, sizeof(*p));
	char *copy = strdup(text), *save = NULL, *l;
	size_t len = strlen(text);
	int ln = 0;

	if (!len || text[len - 1] != '\n')
		perr(p, 0, "%s", "output does not end with a newline");
	if (strchr(text, '\r'))
		perr(p, 0, "%s", "carriage return in output");
	for (const char *c = text; *c; c++)
		if (c[0] == '\n' && c[1] == '\n')
			perr(p, 0, "%s", "empty line");
	for (l = strtok_r(copy, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		struct family *f = NULL;
		char *series, *labels;

		ln++;
		if (l[0] == '#') {
			parse_comment(p, ln, l);
			continue;
		}
		series = parse_sample(p, ln, l, &f, &labels);
		free(labels);
		if (!series)
			continue;
		if (!f) {
			perr(p, ln, "%s", "too many families");
			free(series);
			continue;
		}
		if (f->closed)
			perr(p, ln, "%s: family continues after another one", f->name);
		if (!f->typed)
			perr(p, ln, "%s: sample before its TYPE", f->name);
		switch_to(p, f);
		f->samples++;
		for (int i = 0; i < p->nseries; i++)
			if (!strcmp(p->series[i], series))
				perr(p, ln, "duplicate series %s", series);
		if (p->nseries < MAX_SERIES)
			p->series[p->nseries++] = series;
		else
			free(series);
	}
	for (int i = 0; i < p->nfam; i++) {
		struct family *f = &p->fam[i];
		size_t n = strlen(f->name);

		if (!f->help)
			perr(p, ln, "%s: no HELP", f->name);
		if (!f->typed)
			perr(p, ln, "%s: no TYPE", f->name);
		if (!strcmp(f->type, "counter") && (n < 6 || strcmp(f->name + n - 6, "_total")))
			perr(p, ln, "%s: counter not named *_total", f->name);
	}
	free(copy);
	return p;
}

/* The value of one series, e.g. sample_value(out, "tcpbufd_cgroup_usage_bytes", "/x"). */
static int sample_value(const char *text, const char *name, const char *labels, double *v)
{
	char *want;
	const char *s = text;

	if (asprintf(&want, "%s{%s} ", name, labels) < 0)
		abort();
	while ((s = strstr(s, want))) {
		if (s == text || s[-1] == '\n') {
			*v = strtod(s + strlen(want), NULL);
			free(want);
			return 0;
		}
		s++;
	}
	free(want);
	return -1;
}

/* cgroup="..." with the exposition format's escaping. */
static char *cgroup_label(const char *path)
{
	char *out = calloc(1, strlen(path) * 2 + 16), *o;

	o = out + sprintf(out, "cgroup=\"");
	for (const char *c = path; *c; c++) {
		if (*c == '\\' || *c == '"')
			*o++ = '\\';
		*o++ = *c;
	}
	strcpy(o, "\"");
	return out;
}

static void check_parser_catches_errors(void)
{
	static const char *const bad[] = {
		"x 1\n",						/* no HELP/TYPE */
		"# HELP x a\n# TYPE x gauge\nx{a=\"b\\q\"} 1\n",	/* bad escape */
		"# HELP x a\n# TYPE x gauge\nx 1 1700000000\n",	/* timestamp */
		"# HELP x a\n# TYPE x counter\nx 1\n",			/* counter name */
		"# HELP x a\n# TYPE x gauge\nx 1\nx 2\n",		/* duplicate */
		"# HELP x a\n# TYPE x gauge\n# HELP y b\n# TYPE y gauge\ny 1\nx 1\n",
		"# HELP x a\n# TYPE x gauge\nx{a=\"\xff\"} 1\n",	/* not UTF-8 */
		"# HELP x a\n# TYPE x gauge\nx one\n",
		"# HELP x a\n# TYPE x gauge\nx 1",			/* no final newline */
	};

	parser_quiet = true;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct parsed *p = parse_exposition(bad[i]);

		if (!p->errors) {
			test_log("parser accepted bad input %zu", i);
			test_fail();
		}
		free(p);
	}
	parser_quiet = false;
}

static const char *promtool(void)
{
	if (have_program("promtool"))
		return "promtool";
	if (!access(".cache/tools/promtool", X_OK))
		return ".cache/tools/promtool";
	return NULL;
}

int main(void)
{
	const char *odd[] = { "q\"uo\\te sp", "utf\xc3\xa9", "bad\xff" };
	char *out = NULL, *json = NULL, mode[32], *rel_a, *lab, labels[512], path[4096];
	struct load_opts lo = { .nconn = 4 };
	struct parsed *p;
	struct load *l;
	const char *tool;
	double v;
	int64_t pages;
	FILE *f;

	test_init();
	rel_a = cg_rel(cg_create("a"));
	for (size_t i = 0; i < sizeof(odd) / sizeof(odd[0]); i++)
		cg_create(odd[i]);
	daemon_write_config("[Daemon]\nDropInDir=%s\nStateDir=%s\n", daemon_confdir(),
			    test_tmpdir());
	ASSERT_EQ(daemon_start(NULL), 0);
	ASSERT_EQ(ctl(NULL, "set-limit %s 16M", rel_a), 0);
	ASSERT_EQ(ctl(NULL, "set %s 4M 6M 12M", rel_a), 0);
	/* Limits on the odd ones too, through a drop-in. Path= is an fnmatch(3)
	 * pattern even when exact: a '\\' is written twice. */
	snprintf(path, sizeof(path), "%s/odd.conf", daemon_confdir());
	f = fopen(path, "we");
	ASSERT_TRUE(f != NULL);
	for (size_t i = 0; i < sizeof(odd) / sizeof(odd[0]); i++) {
		char *q = cg_rel(cg_create(odd[i]));

		fputs("[Cgroup]\nPath=", f);
		for (const char *c = q; *c; c++)
			fprintf(f, *c == '\\' ? "\\\\" : "%c", *c);
		fputs("\nLimit=8M\n\n", f);
		free(q);
	}
	ASSERT_OK(fclose(f));
	ASSERT_EQ(ctl(NULL, "reload"), 0);
	lo.cgroup = rel_a;
	l = load_start(&lo);
	ASSERT_TRUE(l != NULL);
	ASSERT_EQ(load_wait_filled(l, 0), 0);

	ASSERT_EQ(ctl(&out, "metrics"), 0);
	ASSERT_EQ(ctl(&json, "status --json %s", rel_a), 0);
	if (getenv("TEST_VERBOSE"))
		fputs(out, stdout);

	check_parser_catches_errors();
	p = parse_exposition(out);
	test_log("%d families, %d series, %d format errors", p->nfam, p->nseries, p->errors);
	EXPECT_EQ(p->errors, 0);
	EXPECT_GE(p->nfam, 11);

	tool = promtool();
	if (tool) {
		char *res = NULL, *q;
		int rc;

		snprintf(path, sizeof(path), "%s/metrics.prom", test_tmpdir());
		f = fopen(path, "we");
		ASSERT_TRUE(f != NULL);
		fputs(out, f);
		ASSERT_OK(fclose(f));
		q = sh_quote(path);
		rc = run_sh(&res, "%s check metrics < %s", tool, q);
		test_log("%s check metrics: exit %d %s", tool, rc, res);
		EXPECT_EQ(rc, 0);
		EXPECT_EQ(strlen(res), 0);
		free(res);
		free(q);
	} else {
		test_log("promtool not found (scripts/install-deps unpacks it to .cache/tools): "
			 "only the built-in parser checked the format");
	}

	/* build_info carries status's mode. */
	ASSERT_EQ(json_string_field(json, "mode", mode, sizeof(mode)), JSON_FOUND);
	snprintf(labels, sizeof(labels), "version=\"%s\",mode=\"%s\"", TCPBUFD_VERSION, mode);
	EXPECT_EQ(sample_value(out, "tcpbufd_build_info", labels, &v), 0);
	EXPECT_EQ((int64_t)v, 1);

	/* a's numbers are status's, in bytes. */
	lab = cgroup_label(rel_a);
	{
		static const struct { const char *metric, *field; } same[] = {
			{ "tcpbufd_cgroup_limit_bytes", "limit_pages" },
			{ "tcpbufd_cgroup_min_bytes", "min_pages" },
			{ "tcpbufd_cgroup_pressure_bytes", "pressure_pages" },
			{ "tcpbufd_cgroup_max_bytes", "max_pages" },
		};

		for (size_t i = 0; i < sizeof(same) / sizeof(same[0]); i++) {
			ASSERT_EQ(json_cgroup_field(json, rel_a, same[i].field, &pages), JSON_FOUND);
			v = -1;
			EXPECT_EQ(sample_value(out, same[i].metric, lab, &v), 0);
			EXPECT_EQ((int64_t)v, pages * 4096);
		}
	}
	ASSERT_EQ(json_cgroup_field(json, rel_a, "usage_pages", &pages), JSON_FOUND);
	EXPECT_GT(pages, 0);
	EXPECT_EQ(sample_value(out, "tcpbufd_cgroup_usage_bytes", lab, &v), 0);
	EXPECT_NEAR((int64_t)v / 4096, pages, pages / 10 + 8);
	EXPECT_EQ((int64_t)v % 4096, 0);
	EXPECT_EQ(sample_value(out, "tcpbufd_cgroup_peak_bytes", lab, &v), 0);
	EXPECT_GE((int64_t)v / 4096, pages - pages / 10 - 8);
	EXPECT_EQ(sample_value(out, "tcpbufd_cgroup_sockets", lab, &v), 0);
	EXPECT_GT((int64_t)v, 0);
	EXPECT_EQ(sample_value(out, "tcpbufd_cgroup_failcnt_total", lab, &v), 0);
	EXPECT_EQ(sample_value(out, "tcpbufd_cgroup_pressure_events_total", lab, &v), 0);
	{
		double sum = 0;
		const char *st[] = { "normal", "pressure", "max" };

		for (int i = 0; i < 3; i++) {
			snprintf(labels, sizeof(labels), "%s,state=\"%s\"", lab, st[i]);
			v = -1;
			EXPECT_EQ(sample_value(out, "tcpbufd_cgroup_state", labels, &v), 0);
			EXPECT_TRUE(v == 0 || v == 1);
			sum += v;
		}
		EXPECT_EQ((int64_t)sum, 1);
	}
	free(lab);

	/* The odd names: escaped, made UTF-8, with their limits. */
	{
		const char *shown[] = { odd[0], odd[1], "bad\xef\xbf\xbd" };

		for (size_t i = 0; i < sizeof(odd) / sizeof(odd[0]); i++) {
			char *rel, *want;

			if (asprintf(&want, "%s/%s", cg_rel(cg_test_parent()), shown[i]) < 0)
				abort();
			lab = cgroup_label(want);
			v = -1;
			EXPECT_EQ(sample_value(out, "tcpbufd_cgroup_limit_bytes", lab, &v), 0);
			EXPECT_EQ((int64_t)v, 8 << 20);
			EXPECT_EQ(sample_value(out, "tcpbufd_cgroup_max_bytes", lab, &v), 0);
			free(lab);
			free(want);
			rel = cg_rel(cg_create(odd[i]));
			free(rel);
		}
	}
	/* The parent holds a's usage but has no limits: usage, no thresholds. */
	lab = cgroup_label(cg_rel(cg_test_parent()));
	EXPECT_EQ(sample_value(out, "tcpbufd_cgroup_usage_bytes", lab, &v), 0);
	EXPECT_GT((int64_t)v, 0);
	EXPECT_LT(sample_value(out, "tcpbufd_cgroup_limit_bytes", lab, &v), 0);
	EXPECT_LT(sample_value(out, "tcpbufd_cgroup_pressure_bytes", lab, &v), 0);
	free(lab);

	load_kill(l);
	free(p);
	free(out);
	free(json);
	return test_done();
}
