// SPDX-License-Identifier: GPL-2.0
/*
 * From configuration to the cgroup_limits map: every cgroup that a drop-in
 * rule (or the [Default] ceiling) matches gets its ceiling and thresholds;
 * thresholds a container chose with `tcpbufctl set` override the rule's.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <bpf/bpf.h>
#include "daemon.h"
#include "log.h"
#include "tables.h"

/*
 * Lines about one cgroup's limits: at most CGROUP_LINES_PER_SEC a second, the
 * rest counted and summed up by the next line after the second is over, so a
 * tenant that makes and removes cgroups under a glob in a loop cannot flood
 * the log.
 */
#define CGROUP_LINES_PER_SEC 5

static bool cgroup_line_ok(void)
{
	static uint64_t window_ms;
	static unsigned said, held;
	struct timespec ts;
	uint64_t now;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	now = (uint64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
	if (now >= window_ms + 1000) {
		if (held)
			log_info("%u more lines about single cgroups' limits not logged in the "
				 "last %llu ms", held, (unsigned long long)(now - window_ms));
		window_ms = now;
		said = held = 0;
	}
	if (said < CGROUP_LINES_PER_SEC) {
		said++;
		return true;
	}
	held++;
	return false;
}

/* Thresholds belong to the cgroup they were set for, not to its path. */
static const struct thresholds_entry *thresholds_find(const struct daemon *d,
						      const struct cgroup_entry *e)
{
	size_t i;

	for (i = 0; i < d->n_thresholds; i++)
		if (d->thresholds[i].id == e->id && !strcmp(d->thresholds[i].path, e->path))
			return &d->thresholds[i];
	return NULL;
}

/*
 * Keep only the thresholds whose cgroup still exists (@gone: that one is
 * removed), adopting the id of an older file's entry, and save if that
 * changed anything.
 */
static void thresholds_prune(struct daemon *d, const struct cgroup_entry *gone)
{
	char err[256];
	size_t i, kept = 0;
	bool changed = false;

	for (i = 0; i < d->n_thresholds; i++) {
		struct thresholds_entry *t = &d->thresholds[i];
		const struct cgroup_entry *e = gone ? NULL : cgroup_tree_find_path(&d->tree, t->path);

		if (gone ? t->id == gone->id : !e || (t->id && t->id != e->id)) {
			if (cgroup_line_ok())
				log_info("%s: thresholds forgotten with the cgroup they were set for", t->path);
			changed = true;
			continue;
		}
		if (!gone && !t->id) {
			t->id = e->id;
			changed = true;
		}
		d->thresholds[kept++] = *t;
	}
	d->n_thresholds = kept;
	if (changed && thresholds_save(d->cfg.state_dir, d->thresholds, kept, err, sizeof(err)))
		log_warn("%s", err);
}

/* A runtime limit as a rule: the container's spec is more specific than the config. */
static bool runtime_rule(const struct daemon *d, const struct cgroup_entry *e,
			 struct cgroup_rule *rule)
{
	const struct runtime_limit *rt = runtime_limits_find(&d->runtime, e->id);

	if (!rt || strcmp(rt->path, e->path))
		return false;
	*rule = (struct cgroup_rule){ .limit_pages = rt->limit_pages, .min_pages = rt->min_pages,
				      .pressure_pages = rt->pressure_pages,
				      .max_pages = rt->max_pages };
	return true;
}

/* The limits a cgroup should have under @cfg, and where they come from; false when it has
 * none. */
static bool limits_for_cfg(const struct daemon *d, const struct config *cfg,
			   struct cgroup_entry *e, struct cgroup_limits *l)
{
	const char *path = e->path;
	const struct cgroup_rule *rule = NULL;
	const struct thresholds_entry *t;
	struct cgroup_rule fallback = {};
	uint64_t min, pressure, max;

	e->limit_source = LIMIT_SOURCE_NONE;
	if (runtime_rule(d, e, &fallback)) {
		rule = &fallback;
		e->limit_source = LIMIT_SOURCE_RUNTIME;
	} else if ((rule = config_match(cfg, path))) {
		e->limit_source = LIMIT_SOURCE_CONFIG;
	} else {
		if (!cfg->default_limit_pages || !strcmp(path, "/"))
			return false;
		fallback.limit_pages = cfg->default_limit_pages;
		rule = &fallback;
		e->limit_source = LIMIT_SOURCE_DEFAULT;
	}
	memset(l, 0, sizeof(*l));
	l->limit_pages = rule->limit_pages;
	rule_thresholds(rule, &min, &pressure, &max);
	l->min_pages = min;
	l->pressure_pages = pressure;
	l->max_pages = max;
	t = thresholds_find(d, e);
	if (t && t->max_pages <= l->limit_pages) {
		l->min_pages = t->min_pages;
		l->pressure_pages = t->pressure_pages;
		l->max_pages = t->max_pages;
	}
	return true;
}

static bool limits_for(const struct daemon *d, struct cgroup_entry *e, struct cgroup_limits *l)
{
	return limits_for_cfg(d, &d->cfg, e, l);
}

/* Whether a cgroup above @path has limits: a look-up per level, not a scan. */
static bool has_limited_ancestor(const struct cgroup_tree *t, const char *path)
{
	char parent[PATH_MAX];
	const struct cgroup_entry *e;
	char *slash;

	if (snprintf(parent, sizeof(parent), "%s", path) >= (int)sizeof(parent))
		return false;
	while (strcmp(parent, "/") && (slash = strrchr(parent, '/'))) {
		slash[slash == parent] = '\0';	/* "/a" -> "/", "/a/b" -> "/a" */
		e = cgroup_tree_find_path(t, parent);
		if (e && e->limited)
			return true;
	}
	return false;
}

static int entry_index_cmp(const void *key, const void *elem)
{
	uint64_t id = *(const uint64_t *)key;
	const struct cgroup_entry *e = *(const struct cgroup_entry *const *)elem;

	return id < e->id ? -1 : id > e->id;
}

/* Whether the cgroup at @path has limits under @want (by the tree's order). */
static bool want_at(const struct cgroup_tree *t, const bool *want, const char *path)
{
	const struct cgroup_entry *e = cgroup_tree_find_path(t, path);
	struct cgroup_entry *const *at;

	if (!e)
		return false;
	at = bsearch(&e->id, t->entries, t->n, sizeof(*t->entries), entry_index_cmp);
	return at && want[at - t->entries];
}

bool *limits_wanted(const struct daemon *d, const struct config *cfg)
{
	const struct cgroup_tree *t = &d->tree;
	struct cgroup_limits l;
	bool *want;

	want = calloc(t->n ? t->n : 1, sizeof(*want));
	if (!want)
		return NULL;
	for (size_t i = 0; i < t->n; i++) {
		struct cgroup_entry *e = t->entries[i];
		unsigned char source = e->limit_source;	/* a check changes nothing */

		want[i] = limits_for_cfg(d, cfg, e, &l);
		e->limit_source = source;
	}
	return want;
}

/*
 * A socket charges its own cgroup and its limited ancestors, at most
 * TCPBUF_MAX_DEPTH (include/tcpbuf_maps.h): refuse @cfg if it nests more
 * than TCPBUF_MAX_NESTED_LIMITS limits on one path, naming the deepest
 * cgroup first found, rather than leave a limit that some sockets escape.
 */
static int nesting_check(const struct daemon *d, const bool *want, char *err, size_t errlen)
{
	const struct cgroup_tree *t = &d->tree;
	char up[PATH_MAX];
	int r = 0;

	for (size_t i = 0; i < t->n && !r; i++) {
		const char *path = t->entries[i]->path;
		unsigned nested = 1;
		char *slash;

		if (!want[i] || snprintf(up, sizeof(up), "%s", path) >= (int)sizeof(up))
			continue;
		while (strcmp(up, "/") && (slash = strrchr(up, '/'))) {
			slash[slash == up] = '\0';
			nested += want_at(t, want, up);
		}
		if (nested > TCPBUF_MAX_NESTED_LIMITS) {
			snprintf(err, errlen, "%s: %u nested limits on its path, at most %d "
				 "(a socket charges its own cgroup and %d limited ancestors)", path,
				 nested, TCPBUF_MAX_NESTED_LIMITS, TCPBUF_MAX_DEPTH - 1);
			r = -EMLINK;
		}
	}
	return r;
}

/* Nesting, then room in the cgroup tables (limits_room.c), from one reading
 * of which cgroups @cfg limits. */
int limits_check(const struct daemon *d, const struct config *cfg, char *err, size_t errlen)
{
	bool *want = limits_wanted(d, cfg);
	int r;

	if (!want)
		return -ENOMEM;
	r = nesting_check(d, want, err, errlen);
	if (!r)
		r = limits_room_check(d, want, err, errlen);
	free(want);
	return r;
}

/* The limited cgroups above @path, by the tree's flags. */
static unsigned limited_ancestors(const struct cgroup_tree *t, const char *path)
{
	char up[PATH_MAX];
	unsigned n = 0;
	char *slash;

	if (snprintf(up, sizeof(up), "%s", path) >= (int)sizeof(up))
		return 0;
	while (strcmp(up, "/") && (slash = strrchr(up, '/'))) {
		const struct cgroup_entry *e;

		slash[slash == up] = '\0';
		e = cgroup_tree_find_path(t, up);
		n += e && e->limited;
	}
	return n;
}

/* Write @want for @e unless the map holds it already. */
static int limits_write(int fd, const struct cgroup_entry *e, const struct cgroup_limits *want)
{
	struct cgroup_limits have;

	if (!bpf_map_lookup_elem(fd, &e->id, &have) && !memcmp(&have, want, sizeof(*want)))
		return 0;
	if (bpf_map_update_elem(fd, &e->id, want, BPF_ANY)) {
		int err = -errno;

		log_err("%s: cannot set limits: %s", e->path, strerror(-err));
		return err;
	}
	if (cgroup_line_ok())
		log_info("%s: limit %llu pages (min %llu, pressure %llu, max %llu)", e->path,
		 (unsigned long long)want->limit_pages, (unsigned long long)want->min_pages,
		 (unsigned long long)want->pressure_pages, (unsigned long long)want->max_pages);
	return 0;
}

/* A refusal of the whole pass, logged once while it stays the same (the
 * full pass is retried on the poll timer); NULL: a pass was applied. */
static void apply_refused(const char *why)
{
	static char last[512];

	if (!why) {
		last[0] = '\0';
		return;
	}
	if (!strcmp(last, why))
		return;
	snprintf(last, sizeof(last), "%s", why);
	log_err("limits not applied, the running ones kept: %s", why);
}

/* What a cgroup had before a pass that may be undone. */
struct limits_had {
	bool limited;
	unsigned char source;
};

int limits_apply(struct daemon *d)
{
	int fd = loader_limits_fd(d->bpf), r;
	struct cgroup_limits *want = NULL;
	struct enforce_cgroup *limited_cgs = NULL;
	struct limits_had *had = NULL;
	const char **paths = NULL;
	uint64_t *ids = NULL;
	unsigned limited = 0;
	__u64 key, next, *prev = NULL;
	char why[512];
	size_t i, n = d->tree.n ? d->tree.n : 1;

	/* Refused before anything is written (daemon_reload() checks first). */
	r = limits_check(d, &d->cfg, why, sizeof(why));
	if (r) {
		apply_refused(why);
		return r;
	}
	thresholds_prune(d, NULL);
	limited_cgs = calloc(n, sizeof(*limited_cgs));
	want = calloc(n, sizeof(*want));
	had = calloc(n, sizeof(*had));
	ids = calloc(n, sizeof(*ids));
	paths = calloc(n, sizeof(*paths));
	r = -ENOMEM;
	if (!limited_cgs || !want || !had || !ids || !paths)
		goto out;
	for (i = 0; i < d->tree.n; i++) {
		struct cgroup_entry *e = d->tree.entries[i];

		had[i] = (struct limits_had){ .limited = e->limited, .source = e->limit_source };
		e->limited = limits_for(d, e, &want[i]);
		if (!e->limited)
			continue;
		ids[limited] = e->id;
		paths[limited] = e->path;
		limited_cgs[limited++] = (struct enforce_cgroup){ .id = e->id, .path = e->path };
	}
	/* Every limited cgroup's usage entry first: the one write that can
	 * still meet a full table (charges make entries too). */
	r = limits_usage_prepare(d, ids, paths, limited, why, sizeof(why));
	if (r) {
		for (i = 0; i < d->tree.n; i++) {
			d->tree.entries[i]->limited = had[i].limited;
			d->tree.entries[i]->limit_source = had[i].source;
		}
		apply_refused(why);
		goto out;
	}
	/* Every cgroup's flag is set: now which are below another limited one. */
	for (i = 0; i < limited; i++)
		limited_cgs[i].covered = has_limited_ancestor(&d->tree, limited_cgs[i].path);
	/* Drop limits of cgroups that are gone or no longer match any rule,
	 * before writing new ones: room was checked for what remains. */
	for (; !bpf_map_get_next_key(fd, prev, &next);) {
		const struct cgroup_entry *e = cgroup_tree_find(&d->tree, next);

		if (!e || !e->limited) {
			bpf_map_delete_elem(fd, &next);
			if (e && cgroup_line_ok())
				log_info("%s: limits removed", e->path);
			continue; /* restart from the same predecessor */
		}
		key = next;
		prev = &key;
	}
	for (i = 0; i < d->tree.n && !r; i++)
		if (d->tree.entries[i]->limited)
			r = limits_write(fd, d->tree.entries[i], &want[i]);
	if (r)
		goto out;
	apply_refused(NULL);
	d->limited_cgroups = limited;
	if (d->enforce) {
		r = enforce_set_limited(d->enforce, limited_cgs, limited, &d->tree);
		if (r)
			log_warn("enforcement not fully updated for %u limited cgroups: %s", limited,
				 strerror(-r));
		r = 0;
	}
out:
	free(limited_cgs);
	free(want);
	free(had);
	free(ids);
	free(paths);
	return r;
}

int limits_add(struct daemon *d, const uint64_t *ids, size_t n)
{
	int fd = loader_limits_fd(d->bpf), r = 0;
	struct enforce_cgroup *added;
	struct cgroup_limits want;
	size_t n_added = 0;
	char why[512];

	added = calloc(n ? n : 1, sizeof(*added));
	if (!added)
		return -ENOMEM;
	/* Parents come before their children, so each sees its ancestors' flags. */
	for (size_t i = 0; i < n && !r; i++) {
		struct cgroup_entry *e = cgroup_tree_find(&d->tree, ids[i]);

		if (!e || e->limited || !limits_for(d, e, &want))
			continue;
		if (limited_ancestors(&d->tree, e->path) + 1 > TCPBUF_MAX_NESTED_LIMITS) {
			log_err("%s: not limited: %u nested limits on its path, at most %d", e->path,
				limited_ancestors(&d->tree, e->path) + 1, TCPBUF_MAX_NESTED_LIMITS);
			continue;
		}
		if (limits_room_for_one(d, e, why, sizeof(why))) {
			tables_refused_note();
			if (cgroup_line_ok())
				log_err("%s", why);
			continue;
		}
		r = limits_write(fd, e, &want);
		if (r)
			break;
		e->limited = true;
		d->limited_cgroups++;
		added[n_added++] = (struct enforce_cgroup){
			.id = e->id, .path = e->path, .covered = has_limited_ancestor(&d->tree, e->path),
		};
	}
	if (d->enforce && n_added) {
		int er = enforce_add_limited(d->enforce, added, n_added, d->limited_cgroups,
					     &d->tree);

		if (er)
			log_warn("enforcement not fully updated for %zu new limited cgroups: %s",
				 n_added, strerror(-er));
	}
	free(added);
	return r;
}

void runtime_limits_prune(struct daemon *d)
{
	char err[512];
	size_t dropped = 0;

	for (size_t i = 0; i < d->runtime.n;) {
		const struct runtime_limit *rt = &d->runtime.v[i];
		const struct cgroup_entry *e = cgroup_tree_find(&d->tree, rt->id);

		if (e && !strcmp(e->path, rt->path)) {
			i++;
			continue;
		}
		log_info("%s: runtime limit dropped: the cgroup is gone", rt->path);
		runtime_limits_drop(&d->runtime, rt->id);
		dropped++;
	}
	if (dropped && runtime_limits_save(d->cfg.runtime_dir, &d->runtime, err, sizeof(err)))
		log_warn("cannot save runtime limits: %s", err);
}

/* A cgroup's runtime limit dies with it, in memory and in RuntimeDir. */
static void runtime_limit_forget(struct daemon *d, const struct cgroup_entry *e)
{
	char err[512];

	if (!runtime_limits_drop(&d->runtime, e->id))
		return;
	log_info("%s: runtime limit removed with the cgroup", e->path);
	if (runtime_limits_save(d->cfg.runtime_dir, &d->runtime, err, sizeof(err)))
		log_warn("cannot save runtime limits: %s", err);
}

void limits_forget(struct daemon *d, const struct cgroup_entry *e)
{
	int fd = loader_limits_fd(d->bpf), r;

	runtime_limit_forget(d, e);
	thresholds_prune(d, e);
	if (!e->limited)
		return;
	if (bpf_map_delete_elem(fd, &e->id) && errno != ENOENT)
		log_warn("%s: cannot remove its limits (id %llu): %s", e->path,
			 (unsigned long long)e->id, strerror(errno));
	d->limited_cgroups--;
	if (!d->enforce)
		return;
	r = enforce_forget(d->enforce, e->id, d->limited_cgroups);
	if (r)
		log_warn("%s: enforcement not fully updated after its removal: %s", e->path,
			 strerror(-r));
}
