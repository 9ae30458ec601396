// SPDX-License-Identifier: GPL-2.0
/*
 * From configuration to the cgroup_limits map: every cgroup that a drop-in
 * rule (or the [Default] ceiling) matches gets its ceiling and thresholds;
 * thresholds a container chose with `tcpbufctl set` override the rule's.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>
#include "daemon.h"
#include "log.h"

static const struct thresholds_entry *thresholds_find(const struct daemon *d, const char *path)
{
	size_t i;

	for (i = 0; i < d->n_thresholds; i++)
		if (!strcmp(d->thresholds[i].path, path))
			return &d->thresholds[i];
	return NULL;
}

/* The limits a cgroup should have now; false when it has none. */
static bool limits_for(const struct daemon *d, const char *path, struct cgroup_limits *l)
{
	const struct cgroup_rule *rule = config_match(&d->cfg, path);
	const struct thresholds_entry *t;
	struct cgroup_rule fallback = {};
	uint64_t min, pressure, max;

	if (!rule) {
		if (!d->cfg.default_limit_pages || !strcmp(path, "/"))
			return false;
		fallback.limit_pages = d->cfg.default_limit_pages;
		rule = &fallback;
	}
	memset(l, 0, sizeof(*l));
	l->limit_pages = rule->limit_pages;
	rule_thresholds(rule, &min, &pressure, &max);
	l->min_pages = min;
	l->pressure_pages = pressure;
	l->max_pages = max;
	t = thresholds_find(d, path);
	if (t && t->max_pages <= l->limit_pages) {
		l->min_pages = t->min_pages;
		l->pressure_pages = t->pressure_pages;
		l->max_pages = t->max_pages;
	}
	return true;
}

/* Enforcement follows the limits: ingress refusal where limits are, caps swept. */
static void limits_enforce(struct daemon *d, const struct enforce_cgroup *cgs, size_t n)
{
	int r;

	if (!d->enforce)
		return;
	r = enforce_set_limited(d->enforce, cgs, n);
	if (r)
		log_warn("enforcement not fully updated: %s", strerror(-r));
}

int limits_apply(struct daemon *d)
{
	int fd = loader_limits_fd(d->bpf);
	struct cgroup_limits want, have;
	struct enforce_cgroup *limited_cgs;
	unsigned limited = 0;
	__u64 key, next, *prev = NULL;
	size_t i;

	limited_cgs = calloc(d->tree.n ? d->tree.n : 1, sizeof(*limited_cgs));
	if (!limited_cgs)
		return -ENOMEM;
	for (i = 0; i < d->tree.n; i++) {
		const struct cgroup_entry *e = &d->tree.entries[i];

		if (!limits_for(d, e->path, &want))
			continue;
		limited_cgs[limited] = (struct enforce_cgroup){ .id = e->id, .path = e->path };
		limited++;
		if (!bpf_map_lookup_elem(fd, &e->id, &have) && !memcmp(&have, &want, sizeof(want)))
			continue;
		if (bpf_map_update_elem(fd, &e->id, &want, BPF_ANY)) {
			int err = -errno;

			log_err("%s: cannot set limits: %s", e->path, strerror(-err));
			free(limited_cgs);
			return err;
		}
		log_info("%s: limit %llu pages (min %llu, pressure %llu, max %llu)", e->path,
			 (unsigned long long)want.limit_pages, (unsigned long long)want.min_pages,
			 (unsigned long long)want.pressure_pages, (unsigned long long)want.max_pages);
	}
	/* Drop limits of cgroups that are gone or no longer match any rule. */
	for (; !bpf_map_get_next_key(fd, prev, &next);) {
		const char *path = cgroup_tree_path(&d->tree, next);

		if (!path || !limits_for(d, path, &want)) {
			bpf_map_delete_elem(fd, &next);
			if (path)
				log_info("%s: limits removed", path);
			continue; /* restart from the same predecessor */
		}
		key = next;
		prev = &key;
	}
	d->limited_cgroups = limited;
	limits_enforce(d, limited_cgs, limited);
	free(limited_cgs);
	return 0;
}
