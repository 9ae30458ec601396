/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The cgroup v2 tree: where it is mounted, and the mapping between cgroup ids
 * (directory inode numbers, what BPF sees) and paths relative to the mount
 * (what users see), both ways. It is read whole once (cgroup_tree_scan) and
 * then kept current one directory at a time (cgroup_tree_add/_remove), as
 * the watch of the tree (cgwatch.c) reports changes.
 */
#ifndef TCPBUF_CGROUPS_H
#define TCPBUF_CGROUPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct cgroup_entry {
	uint64_t id;
	bool limited;		/* limits.c: the cgroup has limits in the map */
	unsigned char limit_source;	/* limits.c: enum limit_source of its limits */
	char path[];		/* relative to the mount, "/" for the root */
};

/* Where a cgroup's limits come from (status --json "source"). */
enum limit_source {
	LIMIT_SOURCE_NONE,
	LIMIT_SOURCE_CONFIG,	/* a [Cgroup] rule of the config or a drop-in */
	LIMIT_SOURCE_DEFAULT,	/* the [Default] ceiling */
	LIMIT_SOURCE_RUNTIME,	/* set-limit --runtime: dies with the cgroup */
};

struct cgroup_tree {
	char mount[4096];
	struct cgroup_entry **entries;	/* sorted by id */
	size_t n, cap;
	struct cgroup_entry **by_path;	/* open addressing on the path's hash */
	size_t n_slots;			/* a power of two, more than 2n */
};

int cgroup_v2_mount(char *buf, size_t len);
int cgroup_tree_init(struct cgroup_tree *t);
/* Read the whole tree anew. @on_dir (may be NULL) is called for each
 * directory before its subdirectories are read, so a watch it adds there
 * cannot miss one made meanwhile. */
int cgroup_tree_scan(struct cgroup_tree *t, int (*on_dir)(void *ctx, const char *rel), void *ctx);
void cgroup_tree_free(struct cgroup_tree *t);
const char *cgroup_tree_path(const struct cgroup_tree *t, uint64_t id);
/* Levels of a relative path below the root: "/" 0, "/a" 1, "/a/b" 2 (what
 * the kernel's cgroup->level says of it). */
unsigned cgroup_path_level(const char *path);
/* NULL when unknown; an entry stays where it is until it is removed. */
struct cgroup_entry *cgroup_tree_find(const struct cgroup_tree *t, uint64_t id);
struct cgroup_entry *cgroup_tree_find_path(const struct cgroup_tree *t, const char *rel);
/* Add one cgroup: 1 when new, 0 when already known, or -errno. A path that
 * held another id (removed and made again) must be removed first. */
int cgroup_tree_add(struct cgroup_tree *t, uint64_t id, const char *rel);
/* Take @rel out of the tree; the caller frees what is returned (NULL: unknown). */
struct cgroup_entry *cgroup_tree_remove(struct cgroup_tree *t, const char *rel);

/*
 * Visit @rel and every directory below it, parents first, calling @fn with
 * each one's id and relative path; subdirectories are read after @fn has
 * returned for their parent. Directories that vanish during the walk are
 * skipped. Returns 0, the first non-zero @fn result, or -errno.
 */
int cgroup_walk(const char *mount, const char *rel,
		int (*fn)(void *ctx, uint64_t id, const char *rel), void *ctx);

/* Resolve a user-given cgroup (relative to the mount, or absolute below it)
 * to its relative path and id. */
int cgroup_resolve(const struct cgroup_tree *t, const char *arg, char *rel, size_t rel_len,
		   uint64_t *id);

#endif
