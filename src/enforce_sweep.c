// SPDX-License-Identifier: GPL-2.0
/*
 * Sweeps: limits_refresh, then enforce_sweep over the host's sockets or only
 * those of the cgroups whose state or limits changed (sweep_targets), and
 * which cgroups' limits changed since the last look.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "enforce.skel.h"
#include "netns.h"
#include "log.h"
#include "enforcer.h"

static int iter_run(struct bpf_link *link);

/* Run target_collect over the subtree of the cgroup at @rel. */
static int subtree_collect(struct enforcer *e, const char *rel)
{
	DECLARE_LIBBPF_OPTS(bpf_iter_attach_opts, io);
	union bpf_iter_link_info info = {};
	struct bpf_link *link;
	int fd, err;

	fd = cgroup_open(e, rel);
	if (fd < 0)
		return fd;
	info.cgroup.cgroup_fd = fd;
	info.cgroup.order = BPF_CGROUP_ITER_DESCENDANTS_PRE;
	io.link_info = &info;
	io.link_info_len = sizeof(info);
	link = bpf_program__attach_iter(e->skel->progs.target_collect, &io);
	err = link ? iter_run(link) : -errno;
	bpf_link__destroy(link);
	close(fd);
	return err;
}

/* Put the cgroups @ids and their descendants in sweep_targets: by address,
 * their subtrees as the kernel has them now; by id, as the tree has them
 * (each cgroup's own entry included). Returns whether they are all in. */
bool targets_set(struct enforcer *e, const struct cgroup_tree *tree, const uint64_t *ids,
		 size_t n)
{
	int fd = bpf_map__fd(e->skel->maps.sweep_targets);
	bool all = true;
	__u8 one = 1;

	for (size_t i = 0; i < n; i++) {
		const char *path = tree ? cgroup_tree_path(tree, ids[i]) : NULL;

		if (!path) {
			all = false;	/* its subtree is unknown: sweep them all */
			continue;
		}
		if (e->by_pointer) {
			if (subtree_collect(e, path))
				all = false;
			continue;
		}
		for (size_t j = 0; j < tree->n; j++)
			if (path_within(tree->entries[j]->path, path) &&
			    bpf_map_update_elem(fd, &tree->entries[j]->id, &one, BPF_ANY))
				all = false;
	}
	return all && !e->skel->bss->sweep_targets_full;
}

/* Empty sweep_targets again. */
void targets_clear(struct enforcer *e)
{
	int fd = bpf_map__fd(e->skel->maps.sweep_targets);
	__u64 key;

	while (!bpf_map_get_next_key(fd, NULL, &key))
		if (bpf_map_delete_elem(fd, &key))
			break;
	e->skel->bss->sweep_targets_full = 0;
}

/* Far again: what runs per segment goes only after this long without a
 * cgroup near. A connection per request in a cgroup that one connection
 * makes near flips it near and far with every connection: unlinking and
 * linking each time would cost the daemon much of a core and log two lines
 * per connection. */
/* --------------------------------------------------------------- sweep */

/* Run an iterator program to its end (they write nothing). */
static int iter_run(struct bpf_link *link)
{
	int fd = bpf_iter_create(bpf_link__fd(link)), n;

	if (fd < 0)
		return -errno;
	n = netns_iter_drain(fd, NULL);
	close(fd);
	return n;
}

/* Every usage entry takes its cgroup's limits anew (bpf/enforce.bpf.c). */
int limits_refresh(struct enforcer *e)
{
	LIBBPF_OPTS(bpf_test_run_opts, o);
	int err;

	err = bpf_prog_test_run_opts(bpf_program__fd(e->skel->progs.limits_refresh), &o);
	if (err)
		log_warn("enforcement: cannot refresh the cgroups' limits: %s", strerror(-err));
	return err;
}

/* @all: every socket (limits changed: limits_refresh ran before); else the
 * sockets tcpbufd sizes, only those under sweep_targets when @targeted. */
int sweep(struct enforcer *e, bool all, bool targeted)
{
	int n;

	e->skel->bss->sweep_all = all;
	e->skel->bss->sweep_targeted = targeted;
	/* In every network namespace with tracked sockets. */
	n = netns_iter_each(bpf_link__fd(e->sweep_link), netns_iter_drain, NULL);
	if (n)
		log_warn("enforcement sweep failed: %s", strerror(-n));
	return n;
}

/* --------------------------------------------------------- limited set */

static int limit_entry_cmp(const void *a, const void *b)
{
	const struct limit_entry *x = a, *y = b;

	return x->id < y->id ? -1 : x->id > y->id;
}

/*
 * The cgroups whose limits differ from what we saw last (set, changed or
 * removed), into *@out (malloc'd, sorted; *@n_out of them). When they cannot
 * be told (no memory), *@out is NULL and *@n_out SIZE_MAX: all changed.
 */
void limits_diff(struct enforcer *e, uint64_t **out, size_t *n_out)
{
	int fd = bpf_map__fd(e->skel->maps.cgroup_limits);
	struct limit_entry *now = NULL, *was = e->limits;
	size_t n = 0, cap = 0, i = 0, j = 0, k = 0;
	uint64_t key, next, *prev = NULL, *changed;

	*out = NULL;
	*n_out = SIZE_MAX;
	while (!bpf_map_get_next_key(fd, prev, &next)) {
		key = next;
		prev = &key;
		if (n == cap) {
			void *p = realloc(now, (cap = cap ? cap * 2 : 16) * sizeof(*now));

			if (!p) {
				free(now);
				return;
			}
			now = p;
		}
		now[n].id = key;
		if (!bpf_map_lookup_elem(fd, &key, &now[n].l))
			n++;
	}
	if (n)
		qsort(now, n, sizeof(*now), limit_entry_cmp);
	changed = malloc((n + e->n_limits + 1) * sizeof(*changed));
	if (!changed) {
		free(now);
		return;
	}
	while (i < n || j < e->n_limits) {
		if (j == e->n_limits || (i < n && now[i].id < was[j].id)) {
			changed[k++] = now[i++].id;
		} else if (i == n || was[j].id < now[i].id) {
			changed[k++] = was[j++].id;
		} else {
			if (memcmp(&now[i].l, &was[j].l, sizeof(now[i].l)))
				changed[k++] = now[i].id;
			i++;
			j++;
		}
	}
	free(e->limits);
	e->limits = now;
	e->n_limits = n;
	*out = changed;
	*n_out = k;
}

static int id_cmp(const void *a, const void *b)
{
	const uint64_t *x = a, *y = b;

	return *x < *y ? -1 : *x > *y;
}

/*
 * Make the usage entries of limited cgroups that no charge has made yet,
 * among those whose limits changed (@changed, from limits_diff(); NULL: all
 * of @cgs).
 * limits_refresh copies each cgroup's limits into its own entry, and a
 * charge that makes an entry later leaves the copy empty: so every limited
 * cgroup needs its entry before the refresh. A charge racing to make one
 * first is fine (EEXIST): the refresh that follows fills it. Entries of
 * limited cgroups are never deleted (status_prune() takes cgroups that are
 * gone), so those whose limits did not change have theirs.
 */
int usage_entries_make(struct enforcer *e, const struct enforce_cgroup *cgs, size_t n,
		       const uint64_t *changed, size_t n_changed)
{
	int fd = bpf_map__fd(e->skel->maps.cgroup_usage), err = 0;

	for (size_t i = 0; i < n; i++) {
		struct cgroup_usage u = { .level = cgroup_path_level(cgs[i].path) };

		if (changed && !bsearch(&cgs[i].id, changed, n_changed, sizeof(*changed), id_cmp))
			continue;
		if (bpf_map_update_elem(fd, &cgs[i].id, &u, BPF_NOEXIST) && errno != EEXIST) {
			err = -errno;
			log_warn("%s: cannot make its usage entry (id %llu): %s", cgs[i].path,
				 (unsigned long long)cgs[i].id, strerror(errno));
		}
	}
	return err;
}
