/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Runtime limits: ceilings (and optional thresholds) that live as long as
 * their cgroup, as `systemctl --runtime` settings do. `tcpbufctl set-limit
 * --runtime` (the OCI hook's request) sets one; the daemon keeps them in
 * <RuntimeDir>/runtime-limits (under /run: kept across restarts of tcpbufd,
 * gone at reboot) and drops one when its cgroup is removed. Each carries
 * the cgroup's id (the directory's inode) from when it was set, so a cgroup
 * removed and made again under the same path while the daemon was down does
 * not inherit the old container's limit.
 */
#ifndef TCPBUFD_RUNTIME_LIMITS_H
#define TCPBUFD_RUNTIME_LIMITS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define RUNTIME_LIMITS_FILE	"runtime-limits"

struct runtime_limit {
	uint64_t id;			/* the cgroup's id when the limit was set */
	uint64_t limit_pages;		/* the ceiling, >= 1 */
	uint64_t min_pages, pressure_pages, max_pages;	/* 0: the defaults under the ceiling */
	char *path;			/* relative to the v2 mount; owned */
};

/* Sorted by id: a cgroup's look-up is a binary search, not a scan. */
struct runtime_limits {
	struct runtime_limit *v;
	size_t n, cap;
};

/* A missing file is an empty set. Errors say "FILE:LINE: reason" and leave @rl empty. */
int runtime_limits_load(const char *dir, struct runtime_limits *rl, char *err, size_t errlen);
/* Replace the file with @rl, atomically (@dir created if missing). */
int runtime_limits_save(const char *dir, const struct runtime_limits *rl, char *err,
			size_t errlen);
const struct runtime_limit *runtime_limits_find(const struct runtime_limits *rl, uint64_t id);
/* Add @l or replace the one of its id (the path is copied). 0 or -ENOMEM. */
int runtime_limits_put(struct runtime_limits *rl, const struct runtime_limit *l);
/* Remove the limit of @id; false when there was none. */
bool runtime_limits_drop(struct runtime_limits *rl, uint64_t id);
/* The id of the limit set for @path, or 0 (for a cgroup that is gone already). */
uint64_t runtime_limits_id_of(const struct runtime_limits *rl, const char *path);
void runtime_limits_free(struct runtime_limits *rl);

#endif /* TCPBUFD_RUNTIME_LIMITS_H */
