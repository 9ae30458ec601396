/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The enforcer's state and what its files share: enforce.c (entry points,
 * start and close), enforce_links.c (pinned cgroup links, the topmost limited
 * cgroups, near and far), enforce_events.c (state events, pacing, hold),
 * enforce_sweep.c (sweeps, their targets, the limits diff). Private to them.
 */
#ifndef TCPBUF_ENFORCER_H
#define TCPBUF_ENFORCER_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "enforce.h"
#include "tcpbuf_enforce.h"

struct enforce;
struct ring_buffer;
struct bpf_link;
struct bpf_program;

#define MAX_EVENTS_PER_BATCH 256

struct ingress_link {
	uint64_t id;
	int fd;
};

struct limit_entry {
	uint64_t id;
	struct cgroup_limits l;
};

/* A one-shot timerfd the event loop polls, armed at most once at a time. */
struct oneshot {
	int fd;
	bool armed;
};

/* Namespaces a raise pass is targeted at, at most (enforce_rest.c). */
#define REST_RAISE_NS	16

struct enforcer {
	struct enforce *skel;
	struct tcpbuf_enforce_ctl *ctl;	/* map enforce_ctl's entry, mmapped */
	struct ring_buffer *events;
	struct bpf_link *sweep_link;
	struct bpf_link *crowd_link;	/* listeners' MSS (crowd_listeners) */
	struct ingress_link *ingress;	/* attached (pinned) ingress links, sorted by id */
	size_t n_ingress, ingress_cap;
	struct enforce_cgroup *tops;	/* topmost limited cgroups in the scope (own paths) */
	size_t n_tops, tops_cap;
	int near;		/* some limited cgroup is near: 1, none: 0, unknown: -1 */
	bool samplers_on;	/* sampled mode: the per-syscall samplers are linked */
	unsigned limited;	/* cgroups with limits, as enforce_ctl has it */
	struct oneshot hold;	/* far for NEAR_HOLD_MS, then unlink */
	struct oneshot pace;	/* the next sweep for events is due */
	bool pacing;		/* sweeps have waited since the last immediate one */
	double paced_ms;	/* a sweep last waited then (CLOCK_MONOTONIC) */
	double sweep_done_ms, sweep_took_ms;	/* the last sweep for events */
	bool near_since_hold;	/* a cgroup turned near since the hold was armed */
	bool by_pointer;	/* targets by struct cgroup address (iter/cgroup) */
	struct bpf_program *ingress_prog;
	enum tcpbuf_mode mode;
	char pin_path[PATH_MAX];
	char mount[PATH_MAX];
	char scope[PATH_MAX];
	/* limits as last seen (sorted by id), to sweep where they change */
	struct limit_entry *limits;
	size_t n_limits;
	/* state changes read from the ring buffer, logged after the sweep; kept
	 * across reads while that sweep waits for its turn (sweep_wait_ms()) */
	struct tcpbuf_state_event batch[MAX_EVENTS_PER_BATCH];
	size_t n_batch, dropped;
	bool near_up, far_seen;	/* in this batch, some cgroup turned near; far */
	bool lost_seen;		/* a socket found sock_fallback full: ingress stays linked */
	bool crowd_seen;	/* in this batch, some cgroup turned crowded or uncrowded */
	/* ingress at rest (enforce_rest.c) */
	bool rest_kernel;	/* sampled mode, kernel >= 6.17 */
	enum ingress_rest rest_choice;	/* IngressRest= */
	long tcp_rmem_max, rmem_max;	/* the host's, at start: what a rest lock costs */
	bool rest_possible;	/* both allow it, and its watch is linked */
	bool resting;		/* some topmost limited cgroup has no ingress link for it */
	bool rest_woken;	/* in this batch, BPF asked for ingress back */
	bool rest_raise;	/* in this batch, a rest-locked socket asked to grow */
	/* the network namespaces it asked in; every one past REST_RAISE_NS */
	uint64_t raise_ns[REST_RAISE_NS];
	size_t n_raise_ns;
	struct bpf_link *rest_iter;	/* rest_locks: the rest's locks and raises */
	uint64_t rest_woken_ns;	/* first asked at (CLOCK_MONOTONIC) */
	double rest_after_ms;	/* not before (quiet since the last socket counted) */
	double rest_quiet_ms;	/* how quiet, now (enforce_rest.c) */
	double rest_since_ms;	/* the rest began at */
	struct oneshot rest;	/* then ingress_sync() */
};

/* enforce_ctl's counts, as the programs keep them. */
static inline unsigned ctl_count(const __u32 *count)
{
	return __atomic_load_n(count, __ATOMIC_ACQUIRE);
}

/* enforce.c */
/* enforce_ctl's count of limited cgroups, and near_linked: @near_linked (the
 * per-segment links are on) and, in sampled mode, the samplers linked. */
int ctl_update(struct enforcer *e, unsigned limited, bool near_linked);

/* enforce_links.c */
int enforce_link_path(const struct enforcer *e, char *buf, size_t len, const char *name);
bool path_within(const char *path, const char *top);
int cgroup_open(const struct enforcer *e, const char *rel);
int cgroup_link_ensure(struct enforcer *e, struct bpf_program *prog, const char *rel,
		       const char *name, int *link_fd);
void ingress_adopt(struct enforcer *e);
long top_index(const struct enforcer *e, uint64_t id);
int tops_add(struct enforcer *e, const struct enforce_cgroup *cg);
void tops_remove(struct enforcer *e, uint64_t id);
void tops_clear(struct enforcer *e);
void tops_sort(struct enforcer *e);
int ingress_sync(struct enforcer *e);
bool near_any(struct enforcer *e);
bool samplers_wanted(struct enforcer *e);
int samplers_sync(struct enforcer *e);
int near_links(struct enforcer *e, bool on);

/* enforce_events.c */
double enforce_mono_ms(void);
void crowd_pass(struct enforcer *e);
/* Arm @t to fire in @ms, unless it is armed already. */
void oneshot_arm(struct oneshot *t, double ms);
/* Whether it fired (its fd was readable: read it), disarmed then. */
bool oneshot_fired(struct oneshot *t);
int on_event(void *ctx, void *data, size_t len);
double sweep_wait_ms(const struct enforcer *e);

/* enforce_rest.c */
void rest_init(struct enforcer *e, bool kernel, enum ingress_rest choice);
void rest_note(struct enforcer *e);
void rest_late(uint64_t asked_ns);
bool rest_begin(struct enforcer *e);
bool rest_prepare(struct enforcer *e, bool *rests);
void rest_raise_note(struct enforcer *e, uint64_t netns);
void rest_raise_pass(struct enforcer *e);
void rest_end(struct enforcer *e, size_t resting);
void rest_stop(struct enforcer *e);

/* enforce_sweep.c */
bool targets_set(struct enforcer *e, const struct cgroup_tree *tree, const uint64_t *ids,
		 size_t n);
void targets_clear(struct enforcer *e);
int limits_refresh(struct enforcer *e);
int sweep(struct enforcer *e, bool all, bool targeted);
void limits_diff(struct enforcer *e, uint64_t **out, size_t *n_out);
int usage_entries_make(struct enforcer *e, const struct enforce_cgroup *cgs, size_t n,
		       const uint64_t *changed, size_t n_changed);

#endif
