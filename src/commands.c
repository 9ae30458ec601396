// SPDX-License-Identifier: GPL-2.0
/*
 * What each control-socket command does, and who may do it. The model of the
 * 2011 design: the administrator sets only the ceiling; inside it, a container
 * picks its own three thresholds.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "daemon.h"
#include "log.h"
#include "metrics.h"
#include "peer_facts.h"
#include "status.h"

#define TENANT_STATUS_FILTERS 16	/* cgroups one tenant's status may name */

/*
 * How a request names cgroups: the caller's namespace root and own cgroup
 * (host paths), and whether it administers. Tenants see only what lies
 * under both.
 */
struct scope {
	bool admin;
	char root[PATH_MAX];	/* "/" for the host */
	char own[PATH_MAX];
};

static int scope_of(struct daemon *d, const struct peer *p, struct scope *s, char *err,
		    size_t errlen)
{
	const char *root, *own;

	s->admin = p->admin;
	if (p->admin) {
		strcpy(s->root, "/");
		strcpy(s->own, "/");
		return 0;
	}
	if (p->facts_err) {
		snprintf(err, errlen, "permission denied: %s", peer_facts_why(p->facts_err));
		return 1;
	}
	daemon_tree_current(d);
	root = cgroup_tree_path(&d->tree, p->facts.cgns_root_id);
	own = cgroup_tree_path(&d->tree, p->facts.cgroup_id);
	if (!root || !own || !peer_seen_path(root, own)) {
		snprintf(err, errlen, "permission denied: cannot tell the caller's cgroup");
		return 1;
	}
	snprintf(s->root, sizeof(s->root), "%s", root);
	snprintf(s->own, sizeof(s->own), "%s", own);
	return 0;
}

/* A path as the caller sees it: "/" when it is its namespace's root. */
static const char *seen(const struct scope *s, const char *host)
{
	const char *v = peer_seen_path(s->root, host);

	return v ? v : "(outside)";
}

/* A tenant may act on its own cgroup and its descendants only. */
static int check_scope(const struct scope *s, const char *rel, char *err, size_t errlen)
{
	if (s->admin || peer_seen_path(s->own, rel))
		return 0;
	snprintf(err, errlen, "permission denied: %s is outside the caller's cgroup %s",
		 seen(s, rel), seen(s, s->own));
	return 1;
}

/*
 * @arg as the caller names it -> its one host path @rel (canonical) and id.
 * The host may also give an absolute path below the mount.
 */
static int resolve(struct daemon *d, const struct scope *s, const char *arg, char *rel,
		   size_t len, char *err, size_t errlen)
{
	size_t mlen = strlen(d->tree.mount);
	char canon[PATH_MAX], host[PATH_MAX];
	const char *a = arg;
	uint64_t id;
	int r;

	if (s->admin && !strncmp(arg, d->tree.mount, mlen) && (arg[mlen] == '/' || !arg[mlen]))
		a = arg[mlen] ? arg + mlen : "/";
	r = cgroup_path_canonical(a, canon, sizeof(canon));
	if (!r)
		r = peer_host_path(s->root, canon, host, sizeof(host));
	if (!r)
		r = cgroup_resolve(&d->tree, host, rel, len, &id);
	if (r && s->admin)
		snprintf(err, errlen, "%s: no such cgroup below %s: %s", arg, d->tree.mount,
			 strerror(-r));
	else if (r)
		snprintf(err, errlen, "%s: no such cgroup: %s", arg, strerror(-r));
	return r ? 1 : 0;
}

/* Show the rows with the caller's names; those outside its namespace go. */
static void rows_as_seen(struct status_rows *rows, const struct scope *s)
{
	size_t i, kept = 0;

	for (i = 0; i < rows->n; i++) {
		const char *v = rows->rows[i].path ? peer_seen_path(s->root, rows->rows[i].path) : NULL;

		if (!v && !s->admin)
			continue;
		if (v)
			rows->rows[i].path = v;
		rows->rows[kept++] = rows->rows[i];
	}
	rows->n = kept;
}

static int cmd_status(struct daemon *d, const struct request *req, const struct peer *p,
		      FILE *out, char *err, size_t errlen)
{
	struct status_rows rows;
	struct scope s;
	char rel[PATH_MAX];
	char **filters;
	size_t n = 0, i;
	int r = 1;

	if (scope_of(d, p, &s, err, errlen))
		return 1;
	if (!s.admin && req->n_cgroups > TENANT_STATUS_FILTERS) {
		snprintf(err, errlen, "status: at most %d cgroups per request", TENANT_STATUS_FILTERS);
		return 1;
	}
	filters = calloc(req->n_cgroups + 1, sizeof(*filters));
	if (!filters) {
		snprintf(err, errlen, "out of memory");
		return 1;
	}
	loader_settle(d->bpf, s.admin); /* a status is a sample too */
	daemon_tree_current(d);
	for (i = 0; i < req->n_cgroups; i++) {
		if (resolve(d, &s, req->cgroups[i], rel, sizeof(rel), err, errlen) ||
		    check_scope(&s, rel, err, errlen))
			goto out;
		if (!(filters[n++] = strdup(rel)))
			goto nomem;
	}
	/* Tenants see their own subtree only. */
	if (!n && !s.admin && !(filters[n++] = strdup(s.own)))
		goto nomem;
	r = status_collect(loader_usage_fd(d->bpf), loader_limits_fd(d->bpf), &d->tree, &rows);
	if (r) {
		snprintf(err, errlen, "status: %s", strerror(-r));
		r = 1;
		goto out;
	}
	status_filter(&rows, filters, n);
	rows_as_seen(&rows, &s);
	for (i = 0; d->enforce && i < rows.n; i++)
		rows.rows[i].ingress = enforce_ingress_of(d->enforce, rows.rows[i].id);
	if (req->json)
		status_print_json(out, &rows, tcpbuf_mode_name(loader_mode(d->bpf)),
				  loader_count_sock_charges(d->bpf, s.admin));
	else
		status_print_table(out, &rows, tcpbuf_mode_name(loader_mode(d->bpf)));
	status_rows_free(&rows);
	goto out;
nomem:
	snprintf(err, errlen, "out of memory");
	r = 1;
out:
	for (i = 0; i < n; i++)
		free(filters[i]);
	free(filters);
	return r;
}

/* Everything status shows, for monitoring; others see their own subtree. */
static int cmd_metrics(struct daemon *d, const struct peer *p, FILE *out, char *err,
		       size_t errlen)
{
	struct status_rows rows;
	struct scope s;
	char *filter = s.own;
	int r;

	if (scope_of(d, p, &s, err, errlen))
		return 1;
	loader_settle(d->bpf, s.admin); /* a scrape is a sample too */
	daemon_tree_current(d);
	r = status_collect(loader_usage_fd(d->bpf), loader_limits_fd(d->bpf), &d->tree, &rows);
	if (r) {
		snprintf(err, errlen, "metrics: %s", strerror(-r));
		return 1;
	}
	if (!s.admin)
		status_filter(&rows, &filter, 1);
	rows_as_seen(&rows, &s);
	metrics_print(out, &rows, tcpbuf_mode_name(loader_mode(d->bpf)), d->limited_cgroups);
	status_rows_free(&rows);
	return 0;
}

/* The rule set-limit wrote for @rel, if the running config has it from there. */
static const struct cgroup_rule *own_rule(const struct daemon *d, const char *rel,
					  const struct cgroup_rule **exact)
{
	const struct cgroup_rule *r = config_match(&d->cfg, rel);
	char name[NAME_MAX + 1], path[PATH_MAX];

	*exact = r && !r->is_glob ? r : NULL;
	if (!*exact || dropin_name(rel, name, sizeof(name)) ||
	    snprintf(path, sizeof(path), "%s/%s", d->cfg.dropin_dir, name) >= (int)sizeof(path))
		return NULL;
	return strcmp(r->file, path) ? NULL : r;
}

/* Keep @rt (or, with @rt NULL, the removal of @id's) in RuntimeDir, then apply it. */
static int runtime_store(struct daemon *d, const struct runtime_limit *rt, uint64_t id,
			 char *err, size_t errlen)
{
	const struct runtime_limit *had = runtime_limits_find(&d->runtime, rt ? rt->id : id);
	struct runtime_limit old = {};
	int r;

	if (had) {
		old = *had;
		if (!(old.path = strdup(had->path))) {
			snprintf(err, errlen, "out of memory");
			return 1;
		}
	}
	r = rt ? runtime_limits_put(&d->runtime, rt) : (runtime_limits_drop(&d->runtime, id), 0);
	if (r)
		snprintf(err, errlen, "out of memory");
	else if (rt && limits_check(d, &d->cfg, err, errlen))
		r = 1;	/* too deep, or no room in the cgroup tables: refused before it is kept */
	else
		r = runtime_limits_save(d->cfg.runtime_dir, &d->runtime, err, errlen);
	if (r) {
		/* What runs stays what the file says. */
		if (had)
			runtime_limits_put(&d->runtime, &old);
		else if (rt)
			runtime_limits_drop(&d->runtime, rt->id);
	}
	free(old.path);
	return r ? 1 : (limits_apply(d) ? 1 : 0);
}

/* set-limit --runtime: the hook's request, a ceiling that dies with the cgroup. */
static int cmd_set_runtime_limit(struct daemon *d, const struct request *req,
				 const struct peer *p, char *err, size_t errlen)
{
	struct runtime_limit rt = { .limit_pages = req->limit_pages, .min_pages = req->min_pages,
				    .pressure_pages = req->pressure_pages,
				    .max_pages = req->max_pages };
	char rel[PATH_MAX];

	/* A container's cgroup is new: take in the watch's news first, or the limit
	 * would reach the maps only after the container's first sockets. */
	daemon_tree_current(d);
	if (cgroup_resolve(&d->tree, req->cgroups[0], rel, sizeof(rel), &rt.id)) {
		snprintf(err, errlen, "%s: no such cgroup below %s", req->cgroups[0], d->tree.mount);
		return 1;
	}
	if (!cgroup_tree_find(&d->tree, rt.id)) {
		snprintf(err, errlen, "%s: not among the cgroups tcpbufd follows yet; try again", rel);
		return 1;
	}
	rt.path = rel;
	if (runtime_store(d, &rt, 0, err, errlen))
		return 1;
	log_info("%s: runtime ceiling set to %llu pages by uid %u", rel,
		 (unsigned long long)req->limit_pages, p->uid);
	return 0;
}

/* unset --runtime: also for a cgroup already gone (the hook's poststop comes after). */
static int cmd_unset_runtime_limit(struct daemon *d, const struct request *req,
				   const struct peer *p, char *err, size_t errlen)
{
	char rel[PATH_MAX];
	uint64_t id;

	if (cgroup_resolve(&d->tree, req->cgroups[0], rel, sizeof(rel), &id) ||
	    !runtime_limits_find(&d->runtime, id)) {
		if (cgroup_path_normalize(req->cgroups[0], rel, sizeof(rel)))
			snprintf(rel, sizeof(rel), "%s", req->cgroups[0]);
		id = runtime_limits_id_of(&d->runtime, rel);
	}
	if (!id || !runtime_limits_find(&d->runtime, id))
		return 0;	/* removed with its cgroup already, or never set */
	if (runtime_store(d, NULL, id, err, errlen))
		return 1;
	log_info("%s: runtime limit removed by uid %u", rel, p->uid);
	return 0;
}

static int cmd_set_limit(struct daemon *d, const struct request *req, const struct peer *p,
			 char *err, size_t errlen)
{
	const struct cgroup_rule *own, *exact;
	struct scope s;
	char rel[PATH_MAX];
	uint64_t old;

	if (!p->admin) {
		snprintf(err, errlen, "permission denied: only the administrator sets ceilings%s",
			 p->facts_err ? "" : " (a host process with CAP_NET_ADMIN)");
		return 1;
	}
	if (req->runtime)
		return cmd_set_runtime_limit(d, req, p, err, errlen);
	if (scope_of(d, p, &s, err, errlen) ||
	    resolve(d, &s, req->cgroups[0], rel, sizeof(rel), err, errlen))
		return 1;
	own = own_rule(d, rel, &exact);
	if (exact && !own) {
		snprintf(err, errlen, "%s: its ceiling is configured at %s:%d; change it there", rel,
			 exact->file, exact->line);
		return 1;
	}
	old = own ? own->limit_pages : 0;
	if (dropin_write_limit(d->cfg.dropin_dir, rel, req->limit_pages, err, errlen))
		return 1;
	if (daemon_reload(d, err, errlen)) {
		/* The running config stays: make the files say so again. */
		if (old)
			dropin_write_limit(d->cfg.dropin_dir, rel, old, NULL, 0);
		else
			dropin_remove(d->cfg.dropin_dir, rel, NULL, 0);
		return 1;
	}
	log_info("%s: ceiling set to %llu pages by uid %u", rel,
		 (unsigned long long)req->limit_pages, p->uid);
	return 0;
}

static int thresholds_store(struct daemon *d, const char *rel, uint64_t id,
			    const struct request *req, bool remove, char *err, size_t errlen)
{
	struct thresholds_entry *t = malloc((d->n_thresholds + 1) * sizeof(*t));
	size_t n = 0, i;
	int r;

	if (!t) {
		snprintf(err, errlen, "out of memory");
		return 1;
	}
	for (i = 0; i < d->n_thresholds; i++)
		if (strcmp(d->thresholds[i].path, rel))
			t[n++] = d->thresholds[i];
	if (!remove) {
		t[n] = (struct thresholds_entry){ .min_pages = req->min_pages,
						  .pressure_pages = req->pressure_pages,
						  .max_pages = req->max_pages, .id = id };
		snprintf(t[n].path, sizeof(t[n].path), "%s", rel);
		n++;
	}
	r = thresholds_save(d->cfg.state_dir, t, n, err, errlen);
	if (r) {
		free(t);
		return 1;
	}
	free(d->thresholds);
	d->thresholds = t;
	d->n_thresholds = n;
	return 0;
}

static int cmd_set(struct daemon *d, const struct request *req, const struct peer *p, char *err,
		   size_t errlen)
{
	const struct cgroup_rule *rule;
	const struct cgroup_entry *e;
	struct scope s;
	char rel[PATH_MAX];
	const char *name;
	uint64_t ceiling;

	if (scope_of(d, p, &s, err, errlen) ||
	    resolve(d, &s, req->cgroups[0], rel, sizeof(rel), err, errlen) ||
	    check_scope(&s, rel, err, errlen))
		return 1;
	name = seen(&s, rel);
	daemon_tree_current(d);
	e = cgroup_tree_find_path(&d->tree, rel);
	if (!e) {
		snprintf(err, errlen, "%s: not known to the daemon yet; try again", name);
		return 1;
	}
	rule = config_match(&d->cfg, rel);
	ceiling = rule ? rule->limit_pages : d->cfg.default_limit_pages;
	if (!ceiling) {
		snprintf(err, errlen, "%s: no ceiling set; the administrator sets one with set-limit",
			 name);
		return 1;
	}
	if (req->max_pages > ceiling) {
		snprintf(err, errlen, "%s: MAX %llu pages is above the ceiling of %llu pages", name,
			 (unsigned long long)req->max_pages, (unsigned long long)ceiling);
		return 1;
	}
	if (thresholds_store(d, rel, e->id, req, false, err, errlen))
		return 1;
	log_info("%s: thresholds min %llu pressure %llu max %llu pages set by uid %u", rel,
		 (unsigned long long)req->min_pages, (unsigned long long)req->pressure_pages,
		 (unsigned long long)req->max_pages, p->uid);
	return limits_apply(d) ? 1 : 0;
}

static int cmd_unset(struct daemon *d, const struct request *req, const struct peer *p, char *err,
		     size_t errlen)
{
	char rel[PATH_MAX], gone[PATH_MAX];
	struct scope s;
	bool admin = p->admin, own = false;
	uint64_t id;
	size_t i;

	if (req->runtime) {
		if (!admin) {
			snprintf(err, errlen, "permission denied: only the administrator removes "
				 "runtime limits");
			return 1;
		}
		return cmd_unset_runtime_limit(d, req, p, err, errlen);
	}
	if (scope_of(d, p, &s, err, errlen) ||
	    resolve(d, &s, req->cgroups[0], rel, sizeof(rel), err, errlen) ||
	    check_scope(&s, rel, err, errlen))
		return 1;
	for (i = 0; i < d->n_thresholds; i++)
		own |= !strcmp(d->thresholds[i].path, rel);
	if (!admin && !own) {
		snprintf(err, errlen, "permission denied: %s has no thresholds set with \"set\"; "
			 "only the administrator removes its ceiling", seen(&s, rel));
		return 1;
	}
	if (thresholds_store(d, rel, 0, req, true, err, errlen))
		return 1;
	/* Only the administrator removes a ceiling; a container's unset only
	 * drops its own thresholds and falls back to the ceiling's defaults. */
	if (admin) {
		if (dropin_remove(d->cfg.dropin_dir, rel, err, errlen))
			return 1;
		if (!cgroup_resolve(&d->tree, rel, gone, sizeof(gone), &id) &&
		    runtime_limits_find(&d->runtime, id) && runtime_store(d, NULL, id, err, errlen))
			return 1;
		if (daemon_reload(d, err, errlen))
			return 1;
	}
	log_info("%s: %s removed by uid %u", rel, admin ? "limits" : "thresholds", p->uid);
	return limits_apply(d) ? 1 : 0;
}

int commands_handle(void *ctx, const struct request *req, const struct peer *peer, FILE *out,
		    char *err, size_t errlen)
{
	struct daemon *d = ctx;

	switch (req->cmd) {
	case REQ_STATUS:
		return cmd_status(d, req, peer, out, err, errlen);
	case REQ_SET_LIMIT:
		return cmd_set_limit(d, req, peer, err, errlen);
	case REQ_SET:
		return cmd_set(d, req, peer, err, errlen);
	case REQ_UNSET:
		return cmd_unset(d, req, peer, err, errlen);
	case REQ_RELOAD:
		if (!peer->admin) {
			snprintf(err, errlen, "permission denied: only the administrator reloads");
			return 1;
		}
		return daemon_reload(d, err, errlen) ? 1 : 0;
	case REQ_METRICS:
		return cmd_metrics(d, peer, out, err, errlen);
	}
	snprintf(err, errlen, "unknown command");
	return 2;
}
