// SPDX-License-Identifier: GPL-2.0
/*
 * Room for limits in the cgroup tables, checked before anything is written:
 * a change of limits that does not fit is refused whole, so what status
 * shows, the daemon's tables and the pinned maps keep agreeing.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>
#include "daemon.h"
#include "tables.h"

static int room_refused(char *err, size_t errlen, const char *path, enum capacity_verdict v,
			const struct capacity *c, unsigned long limited)
{
	if (v == CAPACITY_LIMITS_FULL)
		snprintf(err, errlen, "%s: cannot be limited: %lu cgroups would have limits, "
			 "cgroup_limits holds %lu (MaxCgroups=%lu)", path, limited, c->limits.max,
			 c->limits.max);
	else
		snprintf(err, errlen, "%s: cannot be limited: cgroup_usage is full (%lu of %lu "
			 "entries, MaxCgroups=%lu)", path, c->usage.used, c->usage.max,
			 c->usage.max);
	return -ENOSPC;
}

int limits_room_check(const struct daemon *d, const bool *want, char *err, size_t errlen)
{
	int usage_fd = loader_usage_fd(d->bpf), limits_fd = loader_limits_fd(d->bpf), r;
	const char *new_limit = NULL, *new_usage = NULL, *last = NULL;
	unsigned long limited = 0, usage_needed = 0;
	enum capacity_verdict v;
	struct cgroup_limits l;
	struct cgroup_usage u;
	struct capacity c;

	for (size_t i = 0; i < d->tree.n; i++) {
		const struct cgroup_entry *e = d->tree.entries[i];

		if (!want[i])
			continue;
		limited++;
		last = e->path;
		if (!new_limit && bpf_map_lookup_elem(limits_fd, &e->id, &l))
			new_limit = e->path;
		if (bpf_map_lookup_elem(usage_fd, &e->id, &u)) {
			usage_needed++;
			new_usage = new_usage ? new_usage : e->path;
		}
	}
	r = tables_read(&c);
	v = r ? CAPACITY_FITS : capacity_check(&c, limited, usage_needed);
	if (v == CAPACITY_LIMITS_FULL)
		r = room_refused(err, errlen, new_limit ? new_limit : last, v, &c, limited);
	else if (v == CAPACITY_USAGE_FULL)
		r = room_refused(err, errlen, new_usage, v, &c, limited);
	else if (r)
		snprintf(err, errlen, "cannot read the cgroup tables: %s", strerror(-r));
	return r;
}

/* An entry as limits_usage_prepare() made it: nothing charged or counted since. */
static bool usage_untouched(int fd, uint64_t id)
{
	struct cgroup_usage u;

	return !bpf_map_lookup_elem(fd, &id, &u) && !u.usage_pages && !u.sockets &&
	       !u.established.sockets && !u.established.senders;
}

int limits_usage_prepare(const struct daemon *d, const uint64_t *ids, const char *const *paths,
			 size_t n, char *err, size_t errlen)
{
	int fd = loader_usage_fd(d->bpf), r = 0;
	uint64_t *made = calloc(n ? n : 1, sizeof(*made));
	size_t n_made = 0, i;
	struct capacity c = {};

	if (!made)
		return -ENOMEM;
	for (i = 0; i < n && !r; i++) {
		struct cgroup_usage u = { .level = cgroup_path_level(paths[i]) };

		if (!bpf_map_update_elem(fd, &ids[i], &u, BPF_NOEXIST))
			made[n_made++] = ids[i];
		else if (errno != EEXIST)
			r = -errno;
	}
	if (r) {
		/* Charges filled the table since the check: undo, but keep an
		 * entry a socket has charged meanwhile (it counts on it). */
		for (size_t k = 0; k < n_made; k++)
			if (usage_untouched(fd, made[k]))
				bpf_map_delete_elem(fd, &made[k]);
		tables_read(&c);
		if (r == -E2BIG || r == -ENOSPC || r == -ENOMEM)
			r = room_refused(err, errlen, paths[i - 1], CAPACITY_USAGE_FULL, &c, n);
		else
			snprintf(err, errlen, "%s: cannot make its usage entry: %s", paths[i - 1],
				 strerror(-r));
	}
	free(made);
	return r;
}

int limits_room_for_one(const struct daemon *d, const struct cgroup_entry *e, char *err,
			size_t errlen)
{
	const char *path = e->path;
	struct capacity c = { .limits.max = tables_limits_max() };

	/* Not tables_read(): a count of the maps per new cgroup would make
	 * following the tree cost in proportion to its size. */
	if (capacity_check(&c, d->limited_cgroups + 1, 0) != CAPACITY_FITS)
		return room_refused(err, errlen, path, CAPACITY_LIMITS_FULL, &c,
				    d->limited_cgroups + 1);
	return limits_usage_prepare(d, &e->id, &path, 1, err, errlen);
}
