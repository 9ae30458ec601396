// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>
#include "bypass.h"
#include "container_name.h"
#include "memevents.h"
#include "size.h"
#include "status.h"
#include "tables.h"
#include "subtree.h"

#define PAGE_BYTES 4096ULL

const char *tcpbuf_state_name(__u32 state)
{
	switch (state) {
	case TCPBUF_STATE_PRESSURE: return "pressure";
	case TCPBUF_STATE_MAX: return "max";
	default: return "normal";
	}
}

const char *limit_source_name(unsigned char source)
{
	switch (source) {
	case LIMIT_SOURCE_CONFIG: return "config";
	case LIMIT_SOURCE_DEFAULT: return "default";
	case LIMIT_SOURCE_RUNTIME: return "runtime";
	default: return NULL;
	}
}

static struct status_row *row_append(struct status_rows *r, uint64_t id, size_t *cap)
{
	if (r->n == *cap) {
		size_t c = *cap ? *cap * 2 : 64;
		void *p = realloc(r->rows, c * sizeof(*r->rows));

		if (!p)
			return NULL;
		r->rows = p;
		*cap = c;
	}
	memset(&r->rows[r->n], 0, sizeof(r->rows[0]));
	r->rows[r->n].id = id;
	return &r->rows[r->n++];
}

static int row_id_cmp(const void *a, const void *b)
{
	const struct status_row *x = a, *y = b;

	return x->id < y->id ? -1 : x->id > y->id;
}

int status_collect(int usage_fd, int limits_fd, const struct cgroup_tree *tree,
		   struct status_rows *out)
{
	struct status_rows r = {};
	size_t cap = 0, n_usage, i;
	__u64 key, next, *prev;
	struct status_row *row, probe;

	for (prev = NULL; !bpf_map_get_next_key(usage_fd, prev, &next); prev = &key) {
		key = next;
		row = row_append(&r, key, &cap);
		if (!row)
			goto nomem;
		if (!bpf_map_lookup_elem(usage_fd, &key, &row->usage))
			row->has_usage = true;
	}
	/* Join limits by id: sort the usage rows once, bsearch each limit. */
	qsort(r.rows, r.n, sizeof(*r.rows), row_id_cmp);
	n_usage = r.n;
	for (prev = NULL; !bpf_map_get_next_key(limits_fd, prev, &next); prev = &key) {
		key = next;
		probe.id = key;
		row = bsearch(&probe, r.rows, n_usage, sizeof(*r.rows), row_id_cmp);
		if (!row)
			row = row_append(&r, key, &cap);
		if (!row)
			goto nomem;
		if (!bpf_map_lookup_elem(limits_fd, &key, &row->limits))
			row->has_limits = true;
	}
	for (i = 0; i < r.n; i++) {
		const struct cgroup_entry *e = cgroup_tree_find(tree, r.rows[i].id);
		uint64_t v;

		r.rows[i].path = r.rows[i].host_path = e ? e->path : NULL;
		r.rows[i].source = e && r.rows[i].has_limits ? e->limit_source : LIMIT_SOURCE_NONE;
		/* Limited cgroups only: a file read per row of 10,000s otherwise. */
		r.rows[i].sock_throttled = r.rows[i].path && r.rows[i].has_limits &&
			!memory_events_read(tree->mount, r.rows[i].path, "sock_throttled", &v) ? (int64_t)v : -1;
	}
	/* A cgroup's usage is its subtree's (subtree.h). */
	if (subtree_rows_add(&r, tree) || subtree_usage_sum(&r))
		goto nomem;
	*out = r;
	return 0;
nomem:
	free(r.rows);
	return -ENOMEM;
}

void status_rows_free(struct status_rows *rows)
{
	free(rows->rows);
	rows->rows = NULL;
	rows->n = 0;
}

static bool in_subtree(const char *path, const char *top)
{
	size_t n = strlen(top);

	if (!strcmp(top, "/"))
		return true;
	return !strncmp(path, top, n) && (path[n] == '\0' || path[n] == '/');
}

void status_filter(struct status_rows *rows, char **filters, size_t n)
{
	size_t i, j, kept = 0;

	if (!n)
		return;
	for (i = 0; i < rows->n; i++) {
		for (j = 0; j < n; j++)
			if (rows->rows[i].path && in_subtree(rows->rows[i].path, filters[j]))
				break;
		if (j < n)
			rows->rows[kept++] = rows->rows[i];
	}
	rows->n = kept;
}

static void json_string(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char c = *s;

		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20)
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}

static void json_pages(FILE *f, const char *name, bool set, __u64 v)
{
	if (set)
		fprintf(f, ", \"%s\": %llu", name, (unsigned long long)v);
	else
		fprintf(f, ", \"%s\": null", name);
}

static __s64 nonneg(__s64 v)
{
	return v < 0 ? 0 : v;
}

/* A field that is a plain word (no escaping needed), or null when empty. */
static void json_word_or_null(FILE *f, const char *name, const char *word)
{
	if (word[0])
		fprintf(f, ", \"%s\": \"%s\"", name, word);
	else
		fprintf(f, ", \"%s\": null", name);
}

/* "container_id" and "pod_uid" as the host path names them (container_name.h):
 * a container sees its own cgroup as "/". */
static void json_container_fields(FILE *f, const char *path)
{
	struct container_name cn;

	container_name_from_path(path, &cn);
	json_word_or_null(f, "container_id", cn.container_id);
	json_word_or_null(f, "pod_uid", cn.pod_uid);
}

void status_print_json(FILE *f, const struct status_rows *rows, const char *mode,
		       long sock_entries)
{
	size_t i;

	fprintf(f, "{\"version\": \"%s\", \"mode\": \"%s\", \"bypass_prot_mem\": \"%s\", ",
		TCPBUFD_VERSION, mode, bypass_state_name(bypass_current()));
	tables_print_json(f);
	if (sock_entries >= 0)
		fprintf(f, "\"socket_entries\": %ld,\n \"cgroups\": [", sock_entries);
	else
		fputs("\"socket_entries\": null,\n \"cgroups\": [", f);
	for (i = 0; i < rows->n; i++) {
		const struct status_row *r = &rows->rows[i];
		const struct cgroup_limits *l = &r->limits;
		__s64 usage = nonneg(r->usage.usage_pages);

		fprintf(f, "%s\n  {\"cgroup\": ", i ? "," : "");
		if (r->path)
			json_string(f, r->path);
		else
			fputs("null", f);
		json_container_fields(f, r->host_path ? r->host_path : r->path);
		fprintf(f, ", \"id\": %llu, \"usage_pages\": %lld, \"usage_bytes\": %llu"
			   ", \"peak_pages\": %lld, \"sockets\": %lld, \"unaccounted_sockets\": %u",
			(unsigned long long)r->id, (long long)usage,
			(unsigned long long)usage * PAGE_BYTES,
			(long long)nonneg(r->usage.peak_pages), (long long)nonneg(r->usage.sockets),
			r->usage.unaccounted_sockets);
		json_pages(f, "limit_pages", r->has_limits && l->limit_pages, l->limit_pages);
		json_pages(f, "min_pages", r->has_limits && l->min_pages, l->min_pages);
		json_pages(f, "pressure_pages", r->has_limits && l->pressure_pages, l->pressure_pages);
		json_pages(f, "max_pages", r->has_limits && l->max_pages, l->max_pages);
		if (limit_source_name(r->source))
			fprintf(f, ", \"source\": \"%s\"", limit_source_name(r->source));
		else
			fputs(", \"source\": null", f);
		fprintf(f, ", \"state\": \"%s\", \"failcnt\": %llu, \"syn_drops\": %u"
			   ", \"pressure_events\": %llu",
			tcpbuf_state_name(r->usage.state), (unsigned long long)r->usage.failcnt,
			r->usage.established.syn_drops, (unsigned long long)r->usage.pressure_events);
		if (r->ingress != ENFORCE_INGRESS_NONE)
			fprintf(f, ", \"ingress\": \"%s\"", r->ingress == ENFORCE_INGRESS_LINKED ? "linked"
				: r->ingress == ENFORCE_INGRESS_RESTING ? "at rest" : "off");
		/* The kernel's own count of its throttling, beside failcnt. */
		if (r->sock_throttled >= 0)
			fprintf(f, ", \"sock_throttled\": %lld}", (long long)r->sock_throttled);
		else
			fputs(", \"sock_throttled\": null}", f);
	}
	fputs(rows->n ? "\n ]}\n" : "]}\n", f);
}

static const char *human(__u64 pages, bool set, char *buf, size_t len)
{
	if (!set)
		return "-";
	size_format_human(pages, buf, len);
	return buf;
}

/* A name for a terminal: control characters and '\\' as C escapes ("\\x1b"). */
static const char *table_name(const char *s, char *buf, size_t len)
{
	size_t n = 0;

	for (; *s && n + 5 < len; s++) {
		unsigned char c = *s;

		if (c < 0x20 || c == 0x7f)
			n += snprintf(buf + n, len - n, "\\x%02x", c);
		else if (c == '\\')
			n += snprintf(buf + n, len - n, "\\\\");
		else
			buf[n++] = c;
	}
	buf[n] = '\0';
	return buf;
}

void status_print_table(FILE *f, const struct status_rows *rows, const char *mode)
{
	char u[32], p[32], lim[32], mn[32], pr[32], mx[32], name[4 * 4096 + 8];
	size_t i;

	fprintf(f, "mode: %s\n", mode);
	tables_print_table(f);
	fprintf(f, "%-36s %8s %8s %7s %8s %8s %8s %8s %-8s %7s %11s\n", "CGROUP", "USAGE", "PEAK",
		"SOCKETS", "LIMIT", "MIN", "PRESSURE", "MAX", "STATE", "FAILCNT", "UNACCOUNTED");
	for (i = 0; i < rows->n; i++) {
		const struct status_row *r = &rows->rows[i];
		const struct cgroup_limits *l = &r->limits;
		bool hl = r->has_limits;

		fprintf(f, "%-36s %8s %8s %7lld %8s %8s %8s %8s %-8s %7llu %11u\n",
			r->path ? table_name(r->path, name, sizeof(name)) : "(removed)",
			human(nonneg(r->usage.usage_pages), true, u, sizeof(u)),
			human(nonneg(r->usage.peak_pages), true, p, sizeof(p)),
			(long long)nonneg(r->usage.sockets),
			human(l->limit_pages, hl && l->limit_pages, lim, sizeof(lim)),
			human(l->min_pages, hl && l->min_pages, mn, sizeof(mn)),
			human(l->pressure_pages, hl && l->pressure_pages, pr, sizeof(pr)),
			human(l->max_pages, hl && l->max_pages, mx, sizeof(mx)),
			tcpbuf_state_name(r->usage.state), (unsigned long long)r->usage.failcnt,
			r->usage.unaccounted_sockets);
	}
}

int status_prune(int usage_fd, const struct cgroup_tree *tree, size_t *pruned)
{
	__u64 key, next, *prev = NULL;
	struct cgroup_usage u;
	__u64 *gone = NULL;
	size_t n = 0, cap = 0, i;

	/* Collect first: deleting while walking get_next_key restarts the walk. */
	for (; !bpf_map_get_next_key(usage_fd, prev, &next); prev = &key) {
		key = next;
		if (cgroup_tree_path(tree, key) || bpf_map_lookup_elem(usage_fd, &key, &u) ||
		    u.usage_pages > 0)
			continue;
		if (n == cap) {
			void *p = realloc(gone, (cap = cap ? cap * 2 : 64) * sizeof(*gone));

			if (!p) {
				free(gone);
				return -ENOMEM;
			}
			gone = p;
		}
		gone[n++] = key;
	}
	for (i = 0; i < n; i++)
		bpf_map_delete_elem(usage_fd, &gone[i]);
	free(gone);
	*pruned = n;
	return 0;
}

int status_forget(int usage_fd, uint64_t id)
{
	struct cgroup_usage u;

	if (bpf_map_lookup_elem(usage_fd, &id, &u))
		return errno == ENOENT ? 1 : -errno;
	/* Pages still charged are returned as its sockets close. */
	if (u.usage_pages > 0)
		return 0;
	if (bpf_map_delete_elem(usage_fd, &id) && errno != ENOENT)
		return -errno;
	return 1;
}
