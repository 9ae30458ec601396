// SPDX-License-Identifier: GPL-2.0
/*
 * deploy/grafana/tcpbufd.json against what the real daemon exports: the
 * file is a dashboard (title, uid, panels with targets), every PromQL
 * expression names at least one tcpbufd_ metric, every tcpbufd_ name in an
 * expression or a variable's query is a family of `tcpbufctl metrics`, and
 * every label it selects, groups by or prints ({{label}}) is one the scrape
 * carries (or Prometheus' own instance/job). The four views must be
 * there: usage against max, refusals, pressure entries, the host's tcp_mem.
 * The scrape has a limited cgroup named like a Kubernetes container, so
 * container_id and pod_uid labels are in it.
 */
#define _GNU_SOURCE
#include "harness.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <json-c/json.h>

#define DASHBOARD "deploy/grafana/tcpbufd.json"
#define ID "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define POD "kubepods.slice/kubepods-burstable.slice/" \
	    "kubepods-burstable-pod1f3c2d4e_5a6b_4c7d_8e9f_0a1b2c3d4e5f.slice"

#define MAX_NAMES 256

struct names {
	char *v[MAX_NAMES];
	int n;
};

static void names_add(struct names *s, const char *name, size_t len)
{
	for (int i = 0; i < s->n; i++)
		if (strlen(s->v[i]) == len && !strncmp(s->v[i], name, len))
			return;
	if (s->n < MAX_NAMES)
		s->v[s->n++] = strndup(name, len);
}

static bool names_has(const struct names *s, const char *name, size_t len)
{
	for (int i = 0; i < s->n; i++)
		if (strlen(s->v[i]) == len && !strncmp(s->v[i], name, len))
			return true;
	return false;
}

/* Families ("# TYPE name") and label names of an exposition. */
static void scrape_names(const char *text, struct names *fams, struct names *labels)
{
	for (const char *l = text; *l; ) {
		size_t len = strcspn(l, "\n");

		if (!strncmp(l, "# TYPE ", 7))
			names_add(fams, l + 7, strcspn(l + 7, " "));
		else if (l[0] != '#') {
			const char *b = memchr(l, '{', len), *e = b ? memchr(b, '}', len - (b - l)) : NULL;

			/* label="value",...: names are what precedes each '=' outside quotes */
			for (const char *c = b ? b + 1 : NULL; c && c < e; ) {
				size_t n = strcspn(c, "=");

				names_add(labels, c, n);
				c += n + 2;	/* past =" */
				while (c < e && !(*c == '"' && c[-1] != '\\'))
					c++;
				c += 2;		/* past ", */
			}
		}
		l += len + (l[len] == '\n');
	}
}

static bool ident_char(char c)
{
	return isalnum((unsigned char)c) || c == '_' || c == ':';
}

static bool checker_quiet;	/* checking that the checker catches a bad name */

/* Every tcpbufd_ identifier of @q, outside quotes, into @used; the count.
 * Those tcpbufd does not export are counted in *unknown. */
static int check_query(const char *q, const struct names *fams, struct names *used, int *unknown)
{
	int found = 0;
	bool quoted = false;

	for (const char *c = q; *c; c++) {
		if (*c == '"' && (c == q || c[-1] != '\\'))
			quoted = !quoted;
		if (quoted || (c > q && ident_char(c[-1])) || strncmp(c, "tcpbufd_", 8))
			continue;
		size_t n = 0;

		while (ident_char(c[n]))
			n++;
		found++;
		names_add(used, c, n);
		if (!names_has(fams, c, n)) {
			if (!checker_quiet)
				test_log("query '%s' names %.*s, which tcpbufd does not export", q,
					 (int)n, c);
			(*unknown)++;
		}
		c += n - 1;
	}
	return found;
}

/* Labels in by (...)/without (...), {label op ...} and {{label}} must exist. */
static void check_labels(const char *q, const struct names *labels)
{
	static const char *const ours[] = { "instance", "job" };
	struct names seen = { 0 };
	const char *c;

	for (c = q; (c = strstr(c, "{{")); c += 2) {
		const char *e = strstr(c, "}}");

		if (e)
			names_add(&seen, c + 2, (size_t)(e - c - 2));
	}
	for (c = q; *c; c++) {
		bool group = (!strncmp(c, "by (", 4) || !strncmp(c, "by(", 3) ||
			      !strncmp(c, "without (", 9));
		const char *s;

		if (group || (*c == '{' && c[1] != '{' && (c == q || c[-1] != '{'))) {
			s = strchr(c, group ? '(' : '{') + 1;
			while (*s && *s != ')' && *s != '}') {
				size_t n;

				while (*s == ' ' || *s == ',')
					s++;
				n = 0;
				while (ident_char(s[n]))
					n++;
				if (n)
					names_add(&seen, s, n);
				if (group) {
					s += n;
					continue;
				}
				/* skip op and "value" */
				s += n;
				while (*s && *s != '"')
					s++;
				if (*s)
					s++;
				while (*s && !(*s == '"' && s[-1] != '\\'))
					s++;
				if (*s)
					s++;
			}
		}
	}
	for (int i = 0; i < seen.n; i++) {
		bool ok = names_has(labels, seen.v[i], strlen(seen.v[i]));

		for (size_t k = 0; k < sizeof(ours) / sizeof(ours[0]); k++)
			ok |= !strcmp(seen.v[i], ours[k]);
		if (!ok) {
			test_log("'%s' uses label %s, which no tcpbufd series has", q, seen.v[i]);
			test_fail();
		}
		free(seen.v[i]);
	}
}

/* Every "expr" (and variable "query"/"definition" strings) below @o. */
static void walk(json_object *o, const struct names *fams, const struct names *labels,
		 struct names *used, int *exprs, int *unknown)
{
	if (json_object_is_type(o, json_type_array)) {
		for (size_t i = 0; i < json_object_array_length(o); i++)
			walk(json_object_array_get_idx(o, i), fams, labels, used, exprs, unknown);
		return;
	}
	if (!json_object_is_type(o, json_type_object))
		return;
	json_object_object_foreach(o, key, val) {
		if (json_object_is_type(val, json_type_string)) {
			const char *s = json_object_get_string(val);

			if (!strcmp(key, "expr")) {
				(*exprs)++;
				if (!check_query(s, fams, used, unknown)) {
					test_log("expression '%s' names no tcpbufd metric", s);
					test_fail();
				}
				check_labels(s, labels);
			} else if (!strcmp(key, "query") || !strcmp(key, "definition") ||
				   !strcmp(key, "legendFormat")) {
				check_query(s, fams, used, unknown);
				check_labels(s, labels);
			}
		} else {
			walk(val, fams, labels, used, exprs, unknown);
		}
	}
}

static int write_dropin(const char *name, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* A drop-in file in the daemon's DropInDir. */
static int write_dropin(const char *name, const char *fmt, ...)
{
	char path[4096];
	va_list ap;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", daemon_confdir(), name);
	f = fopen(path, "we");
	if (!f)
		return -1;
	va_start(ap, fmt);
	vfprintf(f, fmt, ap);
	va_end(ap);
	return fclose(f);
}

int main(void)
{
	static const char *const views[] = {
		"tcpbufd_cgroup_usage_bytes", "tcpbufd_cgroup_max_bytes",	/* usage/max */
		"tcpbufd_cgroup_failcnt_total",					/* refusals */
		"tcpbufd_cgroup_pressure_events_total",				/* pressure */
		"tcpbufd_host_tcp_usage_bytes", "tcpbufd_host_tcp_mem_bytes",	/* tcp_mem */
	};
	struct names fams = { 0 }, labels = { 0 }, used = { 0 };
	json_object *dash, *panels, *title;
	char *metrics = NULL, *k8s;
	int exprs = 0, unknown = 0;

	test_init();
	/* The guests' initramfs carries build/ and tests/, not deploy/. */
	if (getenv("TCPBUF_VM") && access(DASHBOARD, F_OK))
		SKIP("%s is not in the VM guest", DASHBOARD);
	dash = json_object_from_file(DASHBOARD);
	if (!dash) {
		test_log("%s: %s", DASHBOARD, json_util_get_last_err());
		ASSERT_TRUE(dash != NULL);
	}
	k8s = cg_rel(cg_create(POD "/cri-containerd-" ID ".scope"));
	/* A pattern, as an operator limits every container of a node: a real
	 * container's path is longer than set-limit's config line allows. */
	daemon_write_config("[Daemon]\nDropInDir=%s\nStateDir=%s\n", daemon_confdir(),
			    test_tmpdir());
	ASSERT_EQ(write_dropin("k8s.conf", "[Cgroup]\nPath=%s/kubepods.slice/*/*/cri-containerd-*.scope"
			       "\nLimit=8M\n", cg_rel(cg_test_parent())), 0);
	ASSERT_EQ(daemon_start(NULL), 0);
	ASSERT_EQ(ctl(&metrics, "metrics"), 0);
	ASSERT_TRUE(strstr(metrics, k8s) != NULL);	/* the pattern took */
	scrape_names(metrics, &fams, &labels);
	test_log("scrape: %d families, %d label names", fams.n, labels.n);
	ASSERT_TRUE(names_has(&labels, "container_id", 12) && names_has(&labels, "pod_uid", 7));

	ASSERT_TRUE(json_object_object_get_ex(dash, "title", &title) &&
		    json_object_is_type(title, json_type_string));
	ASSERT_TRUE(json_object_object_get_ex(dash, "panels", &panels) &&
		    json_object_array_length(panels) >= 4);
	walk(dash, &fams, &labels, &used, &exprs, &unknown);
	EXPECT_EQ(unknown, 0);
	test_log("%d expressions, %d tcpbufd metrics used", exprs, used.n);
	EXPECT_GE(exprs, 4);
	for (size_t i = 0; i < sizeof(views) / sizeof(views[0]); i++)
		if (!names_has(&used, views[i], strlen(views[i]))) {
			test_log("no panel queries %s", views[i]);
			test_fail();
		}
	/* the checker itself: a name tcpbufd does not export is caught, others' are not ours */
	{
		struct names u = { 0 };
		int bad = 0;

		checker_quiet = true;
		EXPECT_EQ(check_query("rate(tcpbufd_cgroup_refusals_total[5m])", &fams, &u, &bad), 1);
		EXPECT_EQ(bad, 1);
		EXPECT_EQ(check_query("x{cgroup=\"tcpbufd_a\"} + node_sockstat_TCP_mem", &fams, &u,
				      &bad), 0);
		checker_quiet = false;
	}
	json_object_put(dash);
	free(metrics);
	return test_done();
}
