/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The cgroup v2 tree: where it is mounted, and the mapping between cgroup ids
 * (directory inode numbers, what BPF sees) and paths relative to the mount
 * (what users see).
 */
#ifndef TCPBUF_CGROUPS_H
#define TCPBUF_CGROUPS_H

#include <stddef.h>
#include <stdint.h>

struct cgroup_entry {
	uint64_t id;
	char *path;		/* relative to the mount, "/" for the root */
};

struct cgroup_tree {
	char mount[4096];
	struct cgroup_entry *entries;	/* sorted by id */
	size_t n;
};

int cgroup_v2_mount(char *buf, size_t len);
int cgroup_tree_init(struct cgroup_tree *t);
int cgroup_tree_scan(struct cgroup_tree *t);
void cgroup_tree_free(struct cgroup_tree *t);
const char *cgroup_tree_path(const struct cgroup_tree *t, uint64_t id);

/* Resolve a user-given cgroup (relative to the mount, or absolute below it)
 * to its relative path and id. */
int cgroup_resolve(const struct cgroup_tree *t, const char *arg, char *rel, size_t rel_len,
		   uint64_t *id);

#endif
