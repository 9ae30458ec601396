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

static struct {
	uint64_t id, logged_ms;
	unsigned long long lost;
	bool pending;
} lost_seen;

void unaccounted_lost_note(uint64_t cgroup_id, unsigned long long lost)
{
	lost_seen.id = cgroup_id;
	lost_seen.lost = lost;
	lost_seen.pending = true;
}

static void lost_report(const struct cgroup_tree *tree, uint64_t now)
{
	const char *path;
	char buf[32];

	if (!lost_seen.pending || !unaccounted_log_due(lost_seen.logged_ms, now))
		return;
	path = tree ? cgroup_tree_path(tree, lost_seen.id) : NULL;
	if (!path) {
		snprintf(buf, sizeof(buf), "cgroup %llu", (unsigned long long)lost_seen.id);
		path = buf;
	}
	log_warn("%s: a socket without socket storage found the fallback table (sock_fallback) "
		 "full: %llu such sockets on this host so far, held at the floor buffer sizes and "
		 "refused at ingress", path, lost_seen.lost);
	lost_seen.logged_ms = now;
	lost_seen.pending = false;
}

void unaccounted_report(const struct cgroup_tree *tree)
{
	uint64_t now = now_ms();
	struct slot *s;

	lost_report(tree, now);

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
