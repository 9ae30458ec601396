// SPDX-License-Identifier: GPL-2.0
#include <stdbool.h>
#include <stdio.h>
#include <time.h>
#include "cgroups.h"
#include "log.h"
#include "unaccounted.h"

/* A few cgroups at a time is all a host shows: a small table, the oldest
 * slot taken over when full (its cgroup may then be said again early). */
#define SLOTS 64

static struct slot {
	uint64_t id;
	long long sockets;
	uint64_t logged_ms;
	bool pending;
} slots[SLOTS];

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static struct slot *slot_of(uint64_t id)
{
	struct slot *s, *oldest = slots;

	for (s = slots; s < slots + SLOTS; s++) {
		if (s->id == id || !s->id)
			return s;
		if (s->logged_ms < oldest->logged_ms)
			oldest = s;
	}
	*oldest = (struct slot){ 0 };
	return oldest;
}

void unaccounted_note(uint64_t cgroup_id, long long sockets)
{
	struct slot *s = slot_of(cgroup_id);

	s->id = cgroup_id;
	s->sockets = sockets;
	s->pending = true;
}

void unaccounted_report(const struct cgroup_tree *tree)
{
	uint64_t now = now_ms();
	struct slot *s;

	for (s = slots; s < slots + SLOTS; s++) {
		const char *path;
		char buf[32];

		if (!s->pending || !unaccounted_log_due(s->logged_ms, now))
			continue;
		path = tree ? cgroup_tree_path(tree, s->id) : NULL;
		if (!path) {
			snprintf(buf, sizeof(buf), "cgroup %llu", (unsigned long long)s->id);
			path = buf;
		}
		log_warn("%s: %lld sockets without socket storage (net.core.optmem_max of their "
			 "network namespace exhausted): held to the limit through the fallback "
			 "table, at the floor buffer sizes", path, s->sockets);
		s->logged_ms = now;
		s->pending = false;
	}
}
