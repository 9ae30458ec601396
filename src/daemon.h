/* SPDX-License-Identifier: GPL-2.0 */
/* The running daemon's state, shared by the event loop and the commands. */
#ifndef TCPBUF_DAEMON_H
#define TCPBUF_DAEMON_H

#include <stdbool.h>
#include "cgroups.h"
#include "cgwatch.h"
#include "config.h"
#include "control.h"
#include "dropin.h"
#include "enforce.h"
#include "loader.h"
#include "runtime_limits.h"

struct daemon {
	const char *config_path;	/* -c, or the default path */
	bool config_is_default;		/* no -c: a missing file means the embedded default */
	const char *pin_path_arg;	/* command-line overrides of the config */
	const char *socket_arg;
	const char *mode_arg;
	const char *scope_arg;
	struct config cfg;
	struct tcpbuf_bpf *bpf;
	struct enforcer *enforce;	/* NULL until started */
	struct cgroup_tree tree;
	struct cgwatch *watch;		/* NULL when the tree cannot be watched */
	bool watch_complete;		/* every cgroup has a watch: the tree follows it */
	bool watch_warned;		/* said that one has none */
	bool resync_needed;		/* the watch lost events */
	uint64_t next_resync_ms;	/* CLOCK_MONOTONIC: the safety net's next full pass */
	uint64_t *departed;		/* removed cgroups whose usage entry still holds pages */
	size_t n_departed, departed_cap;
	struct thresholds_entry *thresholds;	/* chosen by containers with `set` */
	size_t n_thresholds;
	struct runtime_limits runtime;	/* set-limit --runtime: live as long as their cgroup */
	int ctl_fd;
	unsigned limited_cgroups;
};

const char *daemon_pin_path(const struct daemon *d);
const char *daemon_socket_path(const struct daemon *d);
const char *daemon_scope(const struct daemon *d);	/* cgroup subtree for cgroup programs */

/* Write the limits of every existing cgroup into the limits map. */
int limits_apply(struct daemon *d);
/* Whether @cfg's limits can be applied: at most TCPBUF_MAX_NESTED_LIMITS on
 * a path (what a socket charges) and room in the cgroup tables. 0, or -errno
 * with one line in @err naming the cgroup (and the table). */
int limits_check(const struct daemon *d, const struct config *cfg, char *err, size_t errlen);
/* Which cgroups of the tree @cfg limits (by the tree's order), or NULL (ENOMEM). Free it. */
bool *limits_wanted(const struct daemon *d, const struct config *cfg);
/* Whether the cgroups @want limits (limits_wanted()) fit in the cgroup tables
 * (limits_room.c): 0, or -ENOSPC with one line in @err. */
int limits_room_check(const struct daemon *d, const bool *want, char *err, size_t errlen);
/* Make the usage entries the limited cgroups @ids (paths @paths) lack, all or
 * none: 0, or -ENOSPC with one line in @err and none of them made. */
int limits_usage_prepare(const struct daemon *d, const uint64_t *ids, const char *const *paths,
			 size_t n, char *err, size_t errlen);
/* Room for one more limited cgroup @e (a new cgroup a rule matches): its usage
 * entry made; 0, or -ENOSPC with one line in @err. */
int limits_room_for_one(const struct daemon *d, const struct cgroup_entry *e, char *err,
			size_t errlen);
/* Give the new cgroups @ids (parents first) their limits. */
int limits_add(struct daemon *d, const uint64_t *ids, size_t n);
/* @e is gone: its limits and ingress refusal go too. */
void limits_forget(struct daemon *d, const struct cgroup_entry *e);
/* Runtime limits whose cgroup is gone (or made again) are dropped; saved if any was. */
void runtime_limits_prune(struct daemon *d);
/* Re-read the config files; all or nothing. */
int daemon_reload(struct daemon *d, char *err, size_t errlen);
/* Read the whole cgroup tree anew and bring limits and usage entries in line. */
int daemon_resync(struct daemon *d);
/* Take in the cgroups made or removed since last time (before answering). */
void daemon_tree_current(struct daemon *d);

int commands_handle(void *ctx, const struct request *req, const struct peer *peer, FILE *out,
		    char *err, size_t errlen);

#endif
