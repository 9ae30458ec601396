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
#include "status.h"

#define CAP_NET_ADMIN_BIT 12

static bool same_user_ns(pid_t pid)
{
	char path[64];
	struct stat a, b;

	snprintf(path, sizeof(path), "/proc/%d/ns/user", pid);
	return !stat(path, &a) && !stat("/proc/self/ns/user", &b) && a.st_ino == b.st_ino;
}

/*
 * CAP_NET_ADMIN in the peer's effective set, from /proc/PID/status. That is
 * the process as it is now, not as it was at connect(): a client may send
 * its request, then execute a setuid-root program, whose capabilities /proc
 * shows (even after it exits: a zombie keeps them until reaped). So the
 * capability counts only while all four uids are still the one SO_PEERCRED
 * recorded at connect(), and never for a zombie. (A program with file
 * capabilities keeps the uids; executing one after connect() is the race
 * that remains.)
 */
static bool has_net_admin(const struct peer *p)
{
	char path[64], line[256], state = 'Z';
	unsigned long long caps = 0;
	unsigned uid[4];
	bool same_uids = false;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", p->pid);
	f = fopen(path, "re");
	if (!f)
		return false;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "State: %c", &state) == 1)
			continue;
		if (sscanf(line, "Uid: %u %u %u %u", &uid[0], &uid[1], &uid[2], &uid[3]) == 4)
			same_uids = uid[0] == p->uid && uid[1] == p->uid && uid[2] == p->uid &&
				    uid[3] == p->uid;
		else if (sscanf(line, "CapEff: %llx", &caps) == 1)
			break;
	}
	fclose(f);
	return state != 'Z' && state != 'X' && same_uids && (caps & (1ULL << CAP_NET_ADMIN_BIT));
}

/*
 * Root, or CAP_NET_ADMIN in the initial user namespace. SO_PEERCRED gives
 * the uid as our namespace sees it, so uid 0 is the host's root whatever
 * namespace the peer is in (only host root can map it). The namespace check
 * stats /proc/PID/ns/user, which needs ptrace access to the peer: without
 * CAP_SYS_PTRACE (the systemd unit drops it) that fails for peers with
 * another uid or more capabilities than tcpbufd, so it must not stand
 * between root and the daemon; for CAP_NET_ADMIN peers it fails closed.
 */
static bool peer_is_admin(const struct peer *p)
{
	return p->uid == 0 || (same_user_ns(p->pid) && has_net_admin(p));
}

/* The peer's cgroup v2 path, from the "0::" line of /proc/PID/cgroup. */
static int peer_cgroup(const struct peer *p, char *buf, size_t len)
{
	char path[64], line[PATH_MAX + 8];
	int err = -ENOENT;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/cgroup", p->pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, "0::", 3))
			continue;
		line[strcspn(line, "\n")] = '\0';
		if (snprintf(buf, len, "%s", line + 3) < (int)len)
			err = 0;
		break;
	}
	fclose(f);
	return err;
}

static bool path_within(const char *path, const char *top)
{
	size_t n = strlen(top);

	if (!strcmp(top, "/"))
		return true;
	return !strncmp(path, top, n) && (path[n] == '\0' || path[n] == '/');
}

/* A non-admin peer may act on its own cgroup and its descendants only. */
static int check_scope(const struct peer *p, const char *rel, char *err, size_t errlen)
{
	char own[PATH_MAX];

	if (peer_is_admin(p))
		return 0;
	if (peer_cgroup(p, own, sizeof(own))) {
		snprintf(err, errlen, "permission denied: cannot tell the caller's cgroup");
		return 1;
	}
	if (!path_within(rel, own)) {
		snprintf(err, errlen, "permission denied: %s is outside the caller's cgroup %s",
			 rel, own);
		return 1;
	}
	return 0;
}

static int resolve(struct daemon *d, const char *arg, char *rel, size_t len, char *err,
		   size_t errlen)
{
	uint64_t id;
	int r = cgroup_resolve(&d->tree, arg, rel, len, &id);

	if (r)
		snprintf(err, errlen, "%s: no such cgroup below %s: %s", arg, d->tree.mount,
			 strerror(-r));
	return r ? 1 : 0;
}

static int cmd_status(struct daemon *d, const struct request *req, const struct peer *p,
		      FILE *out, char *err, size_t errlen)
{
	struct status_rows rows;
	char rel[PATH_MAX];
	char **filters = calloc(req->n_cgroups + 1, sizeof(*filters));
	size_t n = 0, i;
	int r = 1;

	if (!filters) {
		snprintf(err, errlen, "out of memory");
		return 1;
	}
	if (loader_mode(d->bpf) == TCPBUF_MODE_SAMPLED)
		loader_reconcile(d->bpf); /* a status is a sample too */
	daemon_tree_current(d);
	for (i = 0; i < req->n_cgroups; i++) {
		if (resolve(d, req->cgroups[i], rel, sizeof(rel), err, errlen) ||
		    check_scope(p, rel, err, errlen))
			goto out;
		if (!(filters[n++] = strdup(rel)))
			goto nomem;
	}
	if (!n && !peer_is_admin(p)) {
		/* Others see their own subtree only. */
		if (peer_cgroup(p, rel, sizeof(rel))) {
			snprintf(err, errlen, "permission denied: cannot tell the caller's cgroup");
			goto out;
		}
		if (!(filters[n++] = strdup(rel)))
			goto nomem;
	}
	r = status_collect(loader_usage_fd(d->bpf), loader_limits_fd(d->bpf), &d->tree, &rows);
	if (r) {
		snprintf(err, errlen, "status: %s", strerror(-r));
		r = 1;
		goto out;
	}
	status_filter(&rows, filters, n);
	if (req->json)
		status_print_json(out, &rows, tcpbuf_mode_name(loader_mode(d->bpf)),
				  loader_count_sock_charges(d->bpf));
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
	char own[PATH_MAX];
	char *filter = own;
	bool admin = peer_is_admin(p);
	int r;

	if (!admin && peer_cgroup(p, own, sizeof(own))) {
		snprintf(err, errlen, "permission denied: cannot tell the caller's cgroup");
		return 1;
	}
	if (loader_mode(d->bpf) == TCPBUF_MODE_SAMPLED)
		loader_reconcile(d->bpf); /* a scrape is a sample too */
	daemon_tree_current(d);
	r = status_collect(loader_usage_fd(d->bpf), loader_limits_fd(d->bpf), &d->tree, &rows);
	if (r) {
		snprintf(err, errlen, "metrics: %s", strerror(-r));
		return 1;
	}
	if (!admin)
		status_filter(&rows, &filter, 1);
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
	if (!r)
		r = runtime_limits_save(d->cfg.runtime_dir, &d->runtime, err, errlen);
	else
		snprintf(err, errlen, "out of memory");
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
	char rel[PATH_MAX];
	uint64_t old;

	if (!peer_is_admin(p)) {
		snprintf(err, errlen, "permission denied: only the administrator sets ceilings");
		return 1;
	}
	if (req->runtime)
		return cmd_set_runtime_limit(d, req, p, err, errlen);
	if (resolve(d, req->cgroups[0], rel, sizeof(rel), err, errlen))
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

static int thresholds_store(struct daemon *d, const char *rel, const struct request *req,
			    bool remove, char *err, size_t errlen)
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
						  .max_pages = req->max_pages };
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
	char rel[PATH_MAX];
	uint64_t ceiling;

	if (resolve(d, req->cgroups[0], rel, sizeof(rel), err, errlen) ||
	    check_scope(p, rel, err, errlen))
		return 1;
	rule = config_match(&d->cfg, rel);
	ceiling = rule ? rule->limit_pages : d->cfg.default_limit_pages;
	if (!ceiling) {
		snprintf(err, errlen, "%s: no ceiling set; the administrator sets one with set-limit",
			 rel);
		return 1;
	}
	if (req->max_pages > ceiling) {
		snprintf(err, errlen, "%s: MAX %llu pages is above the ceiling of %llu pages", rel,
			 (unsigned long long)req->max_pages, (unsigned long long)ceiling);
		return 1;
	}
	if (thresholds_store(d, rel, req, false, err, errlen))
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
	bool admin = peer_is_admin(p), own = false;
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
	if (resolve(d, req->cgroups[0], rel, sizeof(rel), err, errlen) ||
	    check_scope(p, rel, err, errlen))
		return 1;
	for (i = 0; i < d->n_thresholds; i++)
		own |= !strcmp(d->thresholds[i].path, rel);
	if (!admin && !own) {
		snprintf(err, errlen, "permission denied: %s has no thresholds set with \"set\"; "
			 "only the administrator removes its ceiling", rel);
		return 1;
	}
	if (thresholds_store(d, rel, req, true, err, errlen))
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
		if (!peer_is_admin(peer)) {
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
