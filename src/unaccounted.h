/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The log lines for sockets of limited cgroups whose socket storage could
 * not be made (bpf/sock_fallback.bpf.h): told by BPF events, said at most
 * once per cgroup per UNACCOUNTED_LOG_MS, with the latest count; those that
 * found the fallback table full as well, at most once per UNACCOUNTED_LOG_MS
 * for the host.
 */
#ifndef TCPBUF_UNACCOUNTED_H
#define TCPBUF_UNACCOUNTED_H

#include <stdint.h>

struct cgroup_tree;

#define UNACCOUNTED_LOG_MS	10000

/* An event: the cgroup @cgroup_id now has @sockets unaccounted sockets. */
void unaccounted_note(uint64_t cgroup_id, long long sockets);
/* An event: a socket of @cgroup_id found the fallback table full too; @lost
 * such sockets so far on the host. */
void unaccounted_lost_note(uint64_t cgroup_id, unsigned long long lost);
/* Log what was noted and is due, by path where @tree knows it. */
void unaccounted_report(const struct cgroup_tree *tree);

/* Pure: whether a cgroup last logged at @last_ms (0: never) may be logged at @now_ms. */
static inline int unaccounted_log_due(uint64_t last_ms, uint64_t now_ms)
{
	return !last_ms || now_ms - last_ms >= UNACCOUNTED_LOG_MS;
}

#endif
