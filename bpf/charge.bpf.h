/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Charging pages to a socket and to its cgroup hierarchy. Both accounting
 * modes end here: exact mode with the page counts the kernel charges,
 * sampled mode with the difference between the socket's footprint now and
 * what it had charged before.
 *
 * The socket's own fields and its cgroup ancestry are read with plain CO-RE
 * accesses on the BTF pointer every program type here hands us (a parent
 * through its css's own cgroup pointer: the verifier will not let a css
 * pointer be treated as the struct cgroup that contains it).
 */
#ifndef TCPBUF_CHARGE_BPF_H
#define TCPBUF_CHARGE_BPF_H

#include "tcpbuf_maps.bpf.h"
#include "enforce_maps.bpf.h"
#include <bpf/bpf_core_read.h>

#ifndef AF_INET
#define AF_INET		2
#define AF_INET6	10
#endif
#define SOCK_STREAM_TYPE	1
#define IPPROTO_TCP_PROTO	6

static __always_inline bool sk_is_tcp(const struct sock *sk)
{
	__u16 family = sk->__sk_common.skc_family;

	return sk->sk_protocol == IPPROTO_TCP_PROTO && sk->sk_type == SOCK_STREAM_TYPE &&
	       (family == AF_INET || family == AF_INET6);
}

static __always_inline struct cgroup *sk_cgroup(const struct sock *sk)
{
	return sk->sk_cgrp_data.cgroup;
}

/* The bytes the kernel holds for this socket: what sock_diag reports as
 * forward_alloc + wmem_queued + rmem_alloc, and what memcg charges it for. */
static __always_inline __s64 sk_footprint_pages(const struct sock *sk)
{
	__s64 bytes = (__s64)sk->sk_forward_alloc + sk->sk_wmem_queued +
		      sk->sk_backlog.rmem_alloc.counter;

	if (bytes <= 0)
		return 0;
	return (bytes + TCPBUF_PAGE_SIZE - 1) >> TCPBUF_PAGE_SHIFT;
}

/* The key of enforce_ctl's one entry, read from memory: no stack slot in
 * the many frames that ask, some of which have none to spare. */
static const volatile __u32 enforce_ctl_key = 0;

static __always_inline struct tcpbuf_enforce_ctl *enforce_ctl_get(void)
{
	return bpf_map_lookup_elem(&enforce_ctl, (const void *)&enforce_ctl_key);
}

/* Whether any cgroup has limits: while none has, charging skips the limits
 * lookup (one array lookup per charge instead of a hash lookup per level). */
static __always_inline bool limits_present(void)
{
	struct tcpbuf_enforce_ctl *ctl = enforce_ctl_get();

	return ctl && ctl->limited_cgroups;
}

/* Whether the daemon has linked what near cgroups need (src/enforce.c). */
static __always_inline bool near_linked(void)
{
	struct tcpbuf_enforce_ctl *ctl = enforce_ctl_get();

	return ctl && ctl->near_linked;
}

/* Whether some cgroup is crowded (tcpbuf_crowd_delta()), or counts as
 * crowded for its new connections (bounded while ingress rests:
 * enforce_crowd.bpf.h). */
static __always_inline bool crowd_present(void)
{
	struct tcpbuf_enforce_ctl *ctl = enforce_ctl_get();

	return ctl && (ctl->crowded_cgroups || *(volatile __u32 *)&ctl->ingress_rests);
}

/*
 * Move @cs->near from @old to @new, if nobody moved it meanwhile; the counts
 * of crowded and of near entries follow (tcpbuf_crowd_delta(),
 * tcpbuf_near_delta()). Every write of the field comes here.
 */
static __always_inline bool near_swap(struct cgroup_sockets *cs, __u32 old, __u32 new)
{
	struct tcpbuf_enforce_ctl *ctl;
	int crowded, near;

	if (!__sync_bool_compare_and_swap(&cs->near, old, new))
		return false;
	crowded = tcpbuf_crowd_delta(old, new);
	near = tcpbuf_near_delta(old, new);
	if ((crowded || near) && (ctl = enforce_ctl_get())) {
		if (crowded)
			__sync_fetch_and_add(&ctl->crowded_cgroups, crowded);
		if (near)
			__sync_fetch_and_add(&ctl->near_cgroups, near);
	}
	return true;
}

/*
 * Move @cs->dormant from @old to @new, if nobody moved it meanwhile; the
 * counts of dormant and of followed entries follow (tcpbuf_dormant_delta()).
 * Every write of the field comes here; a writer that loses decided from a
 * value already gone. Global: a frame of its own, as near_guard_turn().
 */
__noinline int dormant_swap(struct cgroup_sockets *cs, __u32 old, __u32 new)
{
	struct tcpbuf_enforce_ctl *ctl;
	int dormant, followed;

	if (!cs || !__sync_bool_compare_and_swap(&cs->dormant, old, new))
		return 0;
	dormant = tcpbuf_dormant_delta(old, new);
	followed = tcpbuf_followed_delta(old, new);
	if ((dormant || followed) && (ctl = enforce_ctl_get())) {
		if (dormant)
			__sync_fetch_and_add(&ctl->dormant_cgroups, dormant);
		if (followed)
			__sync_fetch_and_add(&ctl->followed_cgroups, followed);
	}
	return 1;
}

/* The zones, states and their hysteresis are the policy's (tcpbuf_policy.h):
 * here they are read from the usage entry and applied. */

/* Keep max_watch (struct cgroup_usage) as usage @now has it: set with a bump
 * of the epoch that ends every socket's trust in ingress's last look. */
static __always_inline void max_watch_update(struct cgroup_usage *u, __s64 now)
{
	__s64 max = u->limits.max_pages;
	__u32 watch = u->max_watch;
	struct tcpbuf_enforce_ctl *ctl;
	struct tcpbuf_zones z;

	if (!max)
		return;
	z = tcpbuf_zones_of(max);
	if (!watch && now >= z.watch_point) {
		if (__sync_bool_compare_and_swap(&u->max_watch, 0, 1) &&
		    (ctl = enforce_ctl_get()))
			__sync_fetch_and_add(&ctl->epoch, 1);
	} else if (watch && now < z.watch_clear) {
		__sync_bool_compare_and_swap(&u->max_watch, 1, 0);
	}
}

/* Max as ingress and the state machine apply it at usage @now. */
static __always_inline __s64 max_effective(const struct cgroup_usage *u, __s64 now)
{
	return tcpbuf_max_effective(u->limits.max_pages, u->established.senders, now);
}

/* Whether the cgroup of this usage entry has limits, by its copy of them
 * (every limited cgroup has its ceiling, limit_pages, set). */
static __always_inline bool usage_limited(const struct cgroup_usage *u)
{
	return u && u->limits.limit_pages;
}

/* Set by the daemon before load: tcpbuf_near_guard()'s per-socket growth.
 * 0, never dormant, on kernels whose iterators cannot give a socket its
 * per-segment callback back (TCP_BPF_SOCK_OPS_CB_FLAGS, < 6.11). */
const volatile __u32 near_guard_growth = 0;
/* Sampled mode: only the samplers see a dormant cgroup's charges, so its
 * sockets are followed by them (TCPBUF_SE_FOLLOWED), linked by the daemon
 * while some cgroup is dormant or near (near_update() tells it). */
const volatile __u32 near_guard_followed = 0;
/* Sampled mode: a followed socket's largest sk_sndbuf, in pages
 * (tcpbuf_near_guard_writers()): tcp_wmem[2], where autotuning stops, and the
 * wide ceiling (tcpbuf_writer_ceiling()) for a cgroup one of whose writers
 * may reach past it (cgroup_sockets.wide_writers); net.core.wmem_max, which
 * tells them (tcpbuf_sndbuf_wide()). */
const volatile __u32 near_guard_writer_pages = 0;
const volatile __u32 near_guard_wide_writer_pages = 0;
const volatile __u32 near_guard_wmem_max = 0;

static __always_inline __u64 guard_writer_pages(const struct cgroup_usage *u)
{
	return u->established.wide_writers ? near_guard_wide_writer_pages : near_guard_writer_pages;
}

/* The count of @u's sockets is @now: with none left, none of its writers is
 * wide any more (one counted meanwhile sets it again as it is counted). */
static __always_inline void wide_writers_count(struct cgroup_usage *u, __s64 now)
{
	if (now <= 0 && u->established.wide_writers)
		u->established.wide_writers = 0;
}

/* Sampled mode: the least share of sk_rcvbuf a bounded cgroup's sockets get
 * (bytes, loader_bounded_rcvbuf(); tcpbuf_bounded_share()); 0, never
 * bounded. */
const volatile __u32 near_guard_bounded_rcvbuf = 0;

/* The guard of a cgroup with @sockets and these thresholds, as followed or
 * (@bounded) as bounded (tcpbuf_near_guard_writers()). */
static __always_inline __s64 near_guard_of(__u64 pressure_pages, __u64 max_pages, __s64 sockets,
					   __u64 writer_pages, bool bounded)
{
	return tcpbuf_near_guard_writers(tcpbuf_near_guard(pressure_pages, max_pages, sockets,
							   near_guard_growth),
					 pressure_pages, max_pages, sockets, writer_pages, bounded);
}

/* The sk_rcvbuf each socket of a dormant cgroup with @sockets may have while
 * it is bounded, 0 if it cannot be (tcpbuf_bounded_share()). */
static __always_inline __s64 near_bounded_share(__s64 sockets, __u64 pressure_pages,
						__u64 max_pages, __u64 writer_pages)
{
	if (!near_guard_bounded_rcvbuf || !near_guard_growth)
		return 0;
	return tcpbuf_bounded_share(sockets, near_guard_of(pressure_pages, max_pages, sockets,
							   writer_pages, true),
				    near_guard_bounded_rcvbuf);
}

/* Whether a socket's buffers are still within what bounded assumed: its
 * sk_rcvbuf within @share, its sk_sndbuf past tcp_wmem[2] only by
 * SO_SNDBUF, which made its cgroup's guard the wide one. */
static __always_inline bool sock_bounded_ok(const struct sock *sk, __s64 share)
{
	__u8 locks = BPF_CORE_READ_BITFIELD(sk, sk_userlocks);
	__u32 writer = locks & TCPBUF_SNDBUF_LOCK ? near_guard_wide_writer_pages
						  : near_guard_writer_pages;

	return tcpbuf_bounded_sock_ok(sk->sk_rcvbuf, sk->sk_sndbuf, share,
				      (__s64)writer << TCPBUF_PAGE_SHIFT);
}

/* Wake the daemon for the rest (enforce_rest.c): @kind TCPBUF_EVENT_REST, a
 * bounded level changed while ingress rests, or TCPBUF_EVENT_REST_RAISE in
 * network namespace @netns (its inode). Global: called from the count walk,
 * which has no stack to spare. */
__noinline int rest_wake(__u32 kind, __u64 netns)
{
	struct tcpbuf_state_event *ev;

	ev = bpf_ringbuf_reserve(&enforce_events, sizeof(*ev), 0);
	if (!ev)
		return 0;
	__builtin_memset(ev, 0, sizeof(*ev));
	ev->time_ns = bpf_ktime_get_ns();
	ev->kind = kind;
	ev->cgroup_id = netns;
	bpf_ringbuf_submit(ev, BPF_RB_FORCE_WAKEUP);
	return 0;
}

/* A level left bounded (or became it, or counted one socket more): no
 * socket's bounded verdict (TCPBUF_V_BOUNDED) holds any more, and a resting
 * ingress is wanted back. */
static __always_inline void bounded_epoch_bump(void)
{
	struct tcpbuf_enforce_ctl *ctl = enforce_ctl_get();

	if (!ctl)
		return;
	__sync_fetch_and_add(&ctl->epoch, 1);
	if (*(volatile __u32 *)&ctl->ingress_rests)
		rest_wake(TCPBUF_EVENT_REST, 0);
}

/* Whether a cgroup near by its sockets' reach is dormant (@dormant before)
 * at @usage with @sockets and its thresholds, @bounded or followed (never
 * with no growth). */
static __always_inline bool near_dormant_next(__u32 dormant, bool bounded, __s64 usage,
					      __u64 pressure_pages, __u64 max_pages, __s64 sockets,
					      __u64 writer_pages)
{
	if (!near_guard_growth)
		return false;
	return tcpbuf_dormant_next(dormant, usage,
				   near_guard_of(pressure_pages, max_pages, sockets, writer_pages,
						 bounded));
}

/*
 * Dormant or near again, for a cgroup near by its sockets (near_update()),
 * as usage @now has it. Only this charge sees usage reach the guard: it
 * turns the cgroup near and wakes the daemon, which links ingress and
 * sweeps the subtree (the sockets are armed there, none by a callback of
 * its own). Back under half the guard, each socket releases itself at its
 * next segment, as under a far cgroup (followed, in sampled mode).
 */
__noinline int near_guard_turn(__u64 id, struct cgroup_usage *u, int want)
{
	struct tcpbuf_state_event *ev;

	if (!u)
		return 0;
	/* Concurrent chargers that cross together decide the same, and a
	 * second event only sweeps again. Ordered so that near and dormant
	 * are never both clear: the daemon would take the cgroup for far and
	 * unlink what follows it (near_any()). */
	if (u->established.dormant & TCPBUF_DORMANT_BOUNDED)
		bounded_epoch_bump();
	if (want)
		dormant_swap(&u->established, u->established.dormant, want);
	near_swap(&u->established, u->established.near, !want);
	if (!want)
		dormant_swap(&u->established, u->established.dormant, 0);
	ev = bpf_ringbuf_reserve(&enforce_events, sizeof(*ev), 0);
	if (!ev)
		return 0;
	ev->cgroup_id = id;
	ev->time_ns = bpf_ktime_get_ns();
	/* More than one, so the daemon sweeps: no socket arms itself here. */
	ev->usage_pages = u->established.sockets > 1 ? u->established.sockets : 2;
	ev->threshold_pages = 0;
	ev->old_state = want;
	ev->new_state = !want;
	ev->kind = TCPBUF_EVENT_NEAR;
	ev->pad = 0;
	/* Dormant, the daemon unlinks at leisure (as for far). */
	bpf_ringbuf_submit(ev, want ? BPF_RB_NO_WAKEUP : BPF_RB_FORCE_WAKEUP);
	return 0;
}

static __always_inline void near_guard_update(__u64 id, struct cgroup_usage *u, __s64 now)
{
	__u32 dormant = u->established.dormant;
	bool want;

	if (!near_guard_growth || !(u->established.near | dormant))
		return;
	want = near_dormant_next(dormant, dormant & TCPBUF_DORMANT_BOUNDED, now,
				 u->limits.pressure_pages, u->limits.max_pages,
				 u->established.sockets, guard_writer_pages(u));
	/* The turn in a frame of its own: the chargers' stacks have no room
	 * for it. */
	if (want != !!dormant)
		near_guard_turn(id, u, want);
}

/* Move the cgroup to the state its usage @now calls for. Runs where usage
 * changes, so a crossing is seen by the charge that makes it; the compare-
 * and-swap lets only one of concurrent chargers report it. The thresholds
 * are the entry's own copy of its limits (struct cgroup_usage). */
static __always_inline void cgroup_state_update(__u64 id, struct cgroup_usage *usage, __s64 now)
{
	const struct cgroup_limits *l = &usage->limits;
	struct tcpbuf_enforce_ctl *ctl;
	struct tcpbuf_state_event *ev;
	__u32 old = usage->state, new;
	__u64 crossed = 0;

	if (!usage_limited(usage)) {
		/* No limits (or removed: the daemon lifts the caps itself). */
		if (old != TCPBUF_STATE_NORMAL)
			__sync_bool_compare_and_swap(&usage->state, old, TCPBUF_STATE_NORMAL);
		return;
	}
	max_watch_update(usage, now);
#ifndef TCPBUF_CHARGE_NO_GUARD
	near_guard_update(id, usage, now);
#endif
	new = tcpbuf_next_state(old, now, l->max_pages ? max_effective(usage, now) : 0,
				l->pressure_pages, l->min_pages, &crossed);
	if (new == old || !__sync_bool_compare_and_swap(&usage->state, old, new))
		return;
	ctl = enforce_ctl_get();
	if (ctl)
		__sync_fetch_and_add(&ctl->epoch, 1);
	if (old == TCPBUF_STATE_NORMAL)
		__sync_fetch_and_add(&usage->pressure_events, 1);
	ev = bpf_ringbuf_reserve(&enforce_events, sizeof(*ev), 0);
	if (!ev)
		return; /* the daemon's periodic sweep catches up */
	ev->cgroup_id = id;
	ev->time_ns = bpf_ktime_get_ns();
	ev->usage_pages = now;
	ev->threshold_pages = crossed;
	ev->old_state = old;
	ev->new_state = new;
	ev->kind = TCPBUF_EVENT_STATE;
	ev->pad = 0;
	/* By force: the adaptive wake-up stays silent while an earlier event
	 * not woken for (a cgroup turning far) is still unread. */
	bpf_ringbuf_submit(ev, BPF_RB_FORCE_WAKEUP);
}

/*
 * The usage entry of the cgroup at ancestors[@i] of the socket whose entry
 * is @sc, made now, from a zeroed entry in read-only memory: one on the
 * stack would take the frames of every charge and count.
 */
static const volatile struct cgroup_usage usage_fresh = {};

static __always_inline struct cgroup_usage *usage_entry_make(const struct sock_charge *sc,
							     __u64 id)
{
	struct cgroup_usage *u;

	bpf_map_update_elem(&cgroup_usage, &id, (const void *)&usage_fresh, BPF_NOEXIST);
	u = bpf_map_lookup_elem(&cgroup_usage, &id);
	/* Read only here: level is past the entry's first line. Only the
	 * socket's own level is known (the daemon makes limited ones); two
	 * makers write the same. By its id, not its index: a test of the loop
	 * index copied across the helper calls trips a host verifier's
	 * precision backtracking ("backtracking call unexpected regs"). */
	if (u && id == sc->ancestors[0] && !u->level)
		u->level = sc->level;
	return u;
}

/*
 * Late entries. A level whose usage entry could not be made when the socket
 * charged it (cgroup_usage full) is marked missed in the socket's entry and
 * then skipped by its charges and uncharges alike: an entry another socket
 * makes there later never takes uncharges of pages it was never given, so it
 * neither goes negative nor gains headroom. The mark goes when the socket's
 * charge is back to 0 (the level then rightly holds nothing of it), or when
 * the sweep after a change of limits finds the entry and moves the socket's
 * whole charge into it (ancestry_renew.bpf.h). Only a level without limits
 * can be missed: the daemon makes limited cgroups' entries before their
 * limits, or refuses the limits.
 */
static __always_inline bool level_skipped(struct sock_charge *sc, __u32 i, __s64 sockets)
{
	__u32 bit = TCPBUF_MISSED_BIT(i);

	if (!(sc->levels_word & bit))
		return false;
	if (sockets < 0)	/* the socket's charge is back to 0 */
		__sync_fetch_and_and(&sc->levels_word, ~bit);
	return true;
}

/* Level @i of a walk up @sc's ancestry: its cgroup id in *@id, or false
 * past the last. */
static __always_inline bool ancestry_level(const struct sock_charge *sc, __u64 i, __u64 *id)
{
	if (i >= TCPBUF_MAX_DEPTH || i >= sc->levels)
		return false;
	*id = sc->ancestors[i & (TCPBUF_MAX_DEPTH - 1)];
	return true;
}

/* The cgroup at ancestors[@i] of the socket whose entry is @sc. */
static __always_inline void charge_one_cgroup(struct sock_charge *sc, __u32 i, __s64 pages,
					      __s64 sockets)
{
	__u64 id = sc->ancestors[i & (TCPBUF_MAX_DEPTH - 1)];
	struct cgroup_usage *usage;
	__s64 now;

	if (level_skipped(sc, i, sockets))
		return;
	usage = bpf_map_lookup_elem(&cgroup_usage, &id);
	if (!usage) {
		if (pages <= 0)
			return; /* never create an entry to uncharge from */
		usage = usage_entry_make(sc, id);
		if (!usage) {
			__sync_fetch_and_or(&sc->levels_word, TCPBUF_MISSED_BIT(i));
			return;
		}
	}
	now = __sync_fetch_and_add(&usage->usage_pages, pages) + pages;
	if (sockets)
		__sync_fetch_and_add(&usage->sockets, sockets);
	/* A lost race only under-reports the peak by one concurrent charge. */
	if (now > usage->peak_pages)
		usage->peak_pages = now;
	/* The entry's copy of its limits, on the line read with usage, tells
	 * an unlimited cgroup: no need to ask enforce_ctl first. */
	cgroup_state_update(id, usage, now);
}

/*
 * The cgroups a socket charges: its own, then every limited ancestor below
 * the root, however far up, nearest first (at most TCPBUF_MAX_DEPTH in all:
 * the daemon refuses more nested limits, src/limits.c). Unlimited levels in
 * between are not charged: their usage is their descendants', summed by
 * the daemon (src/status.c). Read up `cgroup->self.parent` with plain loads,
 * one level per bpf_loop() call (the verifier checks the body once, and a
 * delegated subtree may nest without bound); whether a level is limited is
 * its usage entry's copy of its limits, which the daemon makes before any
 * socket can meet it (enforce.c).
 */
struct ancestry_list {
	struct cgroup *cg;	/* the level looked at next */
	__u64 ids[TCPBUF_MAX_DEPTH];
	__u32 n;
	__u32 overflow;		/* more limited levels than ids[] holds */
};

static long ancestry_list_level(__u64 i, void *ctx)
{
	struct ancestry_list *a = ctx;
	struct cgroup *cg = a->cg;
	struct cgroup_subsys_state *parent;
	__u64 id;

	if (!cg || cg->level <= 0)
		return 1;
	id = cg->kn->id;
	if (usage_limited(bpf_map_lookup_elem(&cgroup_usage, &id))) {
		if (a->n >= TCPBUF_MAX_DEPTH) {
			a->overflow = 1;
			return 1;
		}
		a->ids[a->n & (TCPBUF_MAX_DEPTH - 1)] = id;
		a->n++;
	}
	parent = cg->self.parent;
	a->cg = parent ? parent->cgroup : NULL;
	return 0;
}

/* The walk above, from @cg (included) up: *@a gets the limited levels
 * after the @n ids already in it. */
static __always_inline void ancestry_list_limited(struct ancestry_list *a, struct cgroup *cg)
{
	int levels;

	if (!cg || !limits_present())
		return;
	levels = cg->level;
	a->cg = cg;
	/* A bound the verifier wants; deeper than any tree a kernel lets
	 * one make in practice (cgroup.max.depth). */
	bpf_loop(levels < TCPBUF_WALK_LEVELS ? levels : TCPBUF_WALK_LEVELS,
		 ancestry_list_level, a, 0);
}

/* The socket's own cgroup, then its limited ancestors (above). */
static __always_inline void ancestry_list_of(struct ancestry_list *a, const struct sock *sk)
{
	struct cgroup *cg = sk_cgroup(sk);
	struct cgroup_subsys_state *parent;

	if (!cg || cg->level <= 0)
		return;
	a->ids[0] = cg->kn->id;
	a->n = 1;
	parent = cg->self.parent;
	if (parent)
		ancestry_list_limited(a, parent->cgroup);
}

/* The host's epoch now (tcpbuf_enforce_ctl.epoch). */
static __always_inline __u32 epoch_now(void)
{
	struct tcpbuf_enforce_ctl *ctl = enforce_ctl_get();

	return ctl ? *(volatile __u32 *)&ctl->epoch : 0;
}

/* The socket's verdict (struct sock_charge), read once: ingress may change
 * it meanwhile. */
static __always_inline __u32 limits_epoch_now(void)
{
	struct tcpbuf_enforce_ctl *ctl = enforce_ctl_get();

	return ctl ? *(volatile __u32 *)&ctl->limits_epoch : 0;
}

static __always_inline union sock_verdict verdict_of(const struct sock_charge *sc)
{
	union sock_verdict v = { .word = *(volatile const __u64 *)&sc->verdict.word };

	return v;
}

/*
 * Note what a look begun at @epoch found in @sc's verdict
 * (tcpbuf_verdict_with()). By its lock holders only (sock_ops, the sweep),
 * which exclude each other: a plain store, which at worst loses the bit
 * ingress added meanwhile.
 */
static __always_inline void verdict_note(struct sock_charge *sc, __u32 epoch, __u32 set,
					 __u32 clear, __u8 mask, __u16 stamp)
{
	union sock_verdict v;

	if (!sc)
		return;
	v = tcpbuf_verdict_with(verdict_of(sc), epoch, set, clear, mask, stamp);
	*(volatile __u64 *)&sc->verdict.word = v.word;
}

/*
 * Read the socket's ancestry into its entry, once (and again by the sweep
 * after a change of limits, ancestry_renew.bpf.h). levels, set with an
 * atomic (a full barrier) after the ids, says they are there: it shares the
 * line a charge reads anyway. A socket of the root cgroup has no level to
 * charge (levels stays 0): cgroup_id, set last the same way, says its entry
 * was read too, so it is not read again at every charge. Two CPUs filling
 * the same entry write the same values. ancestry_epoch, read before the
 * walk, says which limits the list was made under.
 */
static __always_inline void sock_ancestry_fill(struct sock_charge *sc, const struct sock *sk)
{
	struct ancestry_list a = {};
	struct cgroup *cg = sk_cgroup(sk);
	__u32 epoch = limits_epoch_now();
	__u64 own;
	int i;

	if (!cg)
		return;
	own = cg->kn->id;
	sc->level = cg->level;
	ancestry_list_of(&a, sk);
	sc->ancestry_epoch = epoch;
	for (i = 0; i < TCPBUF_MAX_DEPTH; i++)
		sc->ancestors[i] = a.ids[i];
	if (a.n)
		__sync_val_compare_and_swap(&sc->levels_word, 0, TCPBUF_LEVELS_WORD(a.n));
	__sync_val_compare_and_swap(&sc->cgroup_id, 0, own);
}

static __always_inline struct sock_charge *sock_charge_get(struct sock *sk, bool create)
{
	struct sock_charge *sc;

	sc = bpf_sk_storage_get(&sock_charge, sk, NULL,
				create ? BPF_SK_STORAGE_GET_F_CREATE : 0);
	/* cgroup_id is on a line of its own: read only while levels is 0. */
	if (sc && !sc->levels && !sc->cgroup_id)
		sock_ancestry_fill(sc, sk);
	return sc;
}

#include "sock_fallback.bpf.h"

/*
 * The socket's entry: its storage's, or where that cannot be made its
 * fallback entry (sock_fallback.bpf.h). Tracing programs only (the cookie
 * helper takes the socket there); a socket with storage never looks
 * further.
 */
static __always_inline struct sock_charge *sock_charge_find(struct sock *sk, bool create)
{
	struct sock_charge *sc = sock_charge_get(sk, create);

	if (sc)
		return sc;
	sc = sock_fallback_lookup(sk);
	/* Full: held by enforcement at establishment (fallback_hold()). */
	if (!sc && create)
		sc = sock_fallback_make(sk, bpf_get_socket_cookie(sk));
	return sc;
}

struct charge_walk {
	struct sock_charge *sc;
	__s64 pages, sockets;
	__u32 first;	/* the levels below were charged inline */
};

/* One level per call of bpf_loop(): the verifier checks the body once. */
static long charge_level(__u64 i, void *ctx)
{
	struct charge_walk *w = ctx;
	struct sock_charge *sc = w->sc;

	i += w->first;
	if (i >= TCPBUF_MAX_DEPTH || i >= sc->levels)
		return 1;
	charge_one_cgroup(sc, i, w->pages, w->sockets);
	return 0;
}

/* Charge the socket's cgroup and every ancestor below the root, as memcg does:
 * parents' usage includes their children's. The first two levels (a
 * container's own cgroup and its slice, often all there is) are charged
 * without the loop, whose call and spills cost more than the charge. */
#define CHARGE_INLINE_LEVELS	2

static __always_inline void charge_hierarchy(struct sock_charge *sc, __s64 pages,
					     __s64 sockets)
{
	struct charge_walk w = {
		.sc = sc, .pages = pages, .sockets = sockets, .first = CHARGE_INLINE_LEVELS,
	};
	__u32 levels = sc->levels;

	/* Spelled out: a loop here would be the bpf_loop() call saved. */
	if (levels > 0)
		charge_one_cgroup(sc, 0, pages, sockets);
	if (levels > 1)
		charge_one_cgroup(sc, 1, pages, sockets);
	if (levels > CHARGE_INLINE_LEVELS)
		bpf_loop(TCPBUF_MAX_DEPTH - CHARGE_INLINE_LEVELS, charge_level, &w, 0);
}

/* Apply a charge of @pages (negative: uncharge) that moved the socket from
 * @before to @before + @pages charged pages. */
static __always_inline void charge_apply(struct sock_charge *sc, __s64 before, __s64 pages)
{
	__s64 after = before + pages;
	__s64 sockets = 0;

	if (before <= 0 && after > 0)
		sockets = 1;
	else if (before > 0 && after <= 0)
		sockets = -1;
	charge_hierarchy(sc, pages, sockets);
}

#define TCP_ESTABLISHED_STATE	1

/*
 * Kept pages (tcpbuf_exact_step()): an established socket keeps a few pages
 * the kernel gave back charged, so that the page a TCP_RR socket takes and
 * gives back every transaction charges its cgroups once, not twice a
 * transaction. Under a limited level only while each is far or dormant
 * (tcpbuf_exact_keeps_under()): near, its charges are prompt, and a kept
 * page only ever makes usage look higher. A status gives kept pages back
 * first (exact_settle(), through reconcile.bpf.c's settle_tcp), as does
 * destruction (sample_charge_to()). Like charged_pages, kept_pages changes
 * under the socket's lock only.
 */
static __always_inline bool exact_level_keeps(const struct sock_charge *sc, __u32 i)
{
	__u64 id = sc->ancestors[i & (TCPBUF_MAX_DEPTH - 1)];
	struct cgroup_usage *u = bpf_map_lookup_elem(&cgroup_usage, &id);

	return !u || tcpbuf_exact_keeps_under(usage_limited(u), u->established.near, u->state);
}

static __always_inline bool exact_may_keep(const struct sock *sk, struct sock_charge *sc)
{
	__u32 word = sc->levels_word, n = sc->levels;

	if (sk->__sk_common.skc_state != TCP_ESTABLISHED_STATE)
		return false;
	/* Asked once per list (a renewed list has neither bit): the
	 * socket's own cgroup, the only level of a list without limited
	 * ancestors, by its entry's copy of its limits. */
	if (!(word & TCPBUF_CHECKED_BIT)) {
		__u64 id = sc->ancestors[0];

		word = TCPBUF_CHECKED_BIT;
		if (n == 1 && !usage_limited(bpf_map_lookup_elem(&cgroup_usage, &id)))
			word |= TCPBUF_UNLIMITED_BIT;
		__sync_fetch_and_or(&sc->levels_word, word);
	}
	if (word & TCPBUF_UNLIMITED_BIT)
		return true;
	/* Limited: asked at each uncharge, of the levels charged inline
	 * (deeper lists stay prompt). */
	if (n > CHARGE_INLINE_LEVELS)
		return false;
	if (n > 0 && !exact_level_keeps(sc, 0))
		return false;
	return n < 2 || exact_level_keeps(sc, 1);
}

/* A socket keeps pages now: the next status walks the sockets to give them
 * back (a plain store, made once per walk). */
static __always_inline void exact_kept_mark(void)
{
	struct tcpbuf_enforce_ctl *ctl = enforce_ctl_get();

	if (ctl && !ctl->kept_since_settle)
		ctl->kept_since_settle = 1;
}

/* Exact mode: the kernel charged (@pages > 0) or uncharged (@pages < 0) pages. */
static __always_inline void charge_socket(struct sock *sk, __s64 pages)
{
	struct tcpbuf_exact_step step;
	struct sock_charge *sc;
	__s64 before, kept, held;

	if (!pages || !sk_is_tcp(sk))
		return;
	sc = sock_charge_find(sk, pages > 0);
	if (!sc)
		return; /* uncharge of pages charged before tcpbufd started: not ours */
	held = sc->charged_pages;
	kept = sc->kept_pages;
	if (kept > held)
		kept = held > 0 ? held : 0;
	if (pages < 0 && -pages > held - kept)
		pages = kept - held; /* never uncharge what was not charged here */
	if (!pages)
		return;
	/* Asked only of an uncharge that could be kept (a bulk one, never). */
	step = tcpbuf_exact_step(kept, pages,
				 tcpbuf_exact_fits(kept, pages) && exact_may_keep(sk, sc));
	sc->kept_pages = step.kept;
	if (step.kept && !kept)
		exact_kept_mark();
	if (!step.charge)
		return;
	before = __sync_fetch_and_add(&sc->charged_pages, (__s32)step.charge);
	charge_apply(sc, before, step.charge);
}

/* Give the socket's cgroups back the pages it keeps (a status is about to
 * read them). */
static __always_inline void exact_settle(struct sock_charge *sc)
{
	__s64 kept = sc->kept_pages, before;

	if (!kept)
		return;
	sc->kept_pages = 0;
	if (kept > sc->charged_pages)
		kept = sc->charged_pages;
	if (kept <= 0)
		return;
	before = __sync_fetch_and_add(&sc->charged_pages, (__s32)-kept);
	charge_apply(sc, before, -kept);
}

/*
 * A socket still counted among its subtree's established sockets when it is
 * destroyed is counted out here. The close callback does it where the
 * socket has one; before 6.11 a socket the sweep counted (one that predates
 * the limits) cannot be given that callback, and stayed counted for good.
 * Only the counts: near or far is decided anew by the next count.
 */
struct uncount_walk {
	const struct sock_charge *sc;
	__s64 sockets, senders;
};

static long uncount_level(__u64 i, void *ctx)
{
	struct uncount_walk *w = ctx;
	struct cgroup_usage *u;
	__u64 id;

	if (!ancestry_level(w->sc, i, &id))
		return 1;
	u = bpf_map_lookup_elem(&cgroup_usage, &id);
	if (!u)
		return 0;
	if (w->sockets)
		wide_writers_count(u, __sync_fetch_and_add(&u->established.sockets, -1) - 1);
	if (w->senders)
		__sync_fetch_and_add(&u->established.senders, -1);
	return 0;
}

static __always_inline void sock_uncount_destroyed(struct sock *sk)
{
	struct uncount_walk w = {};
	struct sock_charge *sc;
	__u16 flags;

	sc = sk->sk_bpf_storage ? bpf_sk_storage_get(&sock_charge, sk, NULL, 0) : NULL;
	if (!sc)
		sc = sock_fallback_lookup(sk);
	if (!sc)
		return;
	flags = sc->enforce.flags;
	if (!(flags & (TCPBUF_SE_COUNTED | TCPBUF_SE_SENDER)))
		return;
	sc->enforce.flags = flags & ~(TCPBUF_SE_COUNTED | TCPBUF_SE_SENDER);
	w.sc = sc;
	w.sockets = !!(flags & TCPBUF_SE_COUNTED);
	w.senders = !!(flags & TCPBUF_SE_SENDER);
	bpf_loop(TCPBUF_MAX_DEPTH, uncount_level, &w, 0);
}

/*
 * What a sample at a syscall or a segment leaves charged: the policy's
 * tcpbuf_sample_target(). A small shrink waits only while the socket's caps
 * are settled, every limited ancestor far from the thresholds that would
 * change them and no state change since (enforce_policy.bpf.h); a cgroup
 * flapping at a threshold gives its sockets no slack, so none holds it in
 * pressure. Destruction and the reconcile pass (every SampleIntervalMs and
 * before every status) set the exact footprint; in between a socket's charge
 * is at most the slack above what it holds, never below.
 */
enum sample_kind {
	SAMPLE_EXACT,	/* reconcile, sweep, destruction: the footprint as it is */
	SAMPLE_LAZY,	/* syscalls and segments: small shrinks wait, none below the kept page */
};

/*
 * Whether the caps of the socket of @sc are settled at the host's current
 * state: its verdict without the clock, the one second rule. A tracepoint's
 * struct sock has no tcp_mstamp without a helper call per syscall, and what
 * an expired verdict lets wait is under TCPBUF_SAMPLE_SLACK_PAGES until the
 * socket's next segment renews it.
 */
static __always_inline bool sample_settled(const struct sock_charge *sc)
{
	union sock_verdict v = verdict_of(sc);

	return tcpbuf_verdict_has(&v, TCPBUF_V_SETTLED) &&
	       tcpbuf_verdict_valid(&v, epoch_now(), TCPBUF_VERDICT_NO_CLOCK, TCPBUF_V_SETTLED);
}

/* The charge a sample of @kind leaves where @before is charged in the entry
 * @sc and the footprint is @target. */
static __always_inline __s64 sample_target(const struct sock_charge *sc, __s64 before,
					   __s64 target, enum sample_kind kind)
{
	bool exact = kind == SAMPLE_EXACT;

	if (!exact && (sc->enforce.flags & TCPBUF_SE_FOLLOWED) &&
	    tcpbuf_follow_waits(before, target))
		return before;
	return tcpbuf_sample_target(before, target, exact,
				    tcpbuf_sample_may_wait(before, target, exact) &&
				    sample_settled(sc));
}

/* Sampled mode: make the charge of the socket whose entry is @sc its
 * footprint now (above). The exchange makes concurrent samplers of one
 * socket apply consistent deltas; a sample that changes nothing costs no
 * atomic. Whether the charge grew. */
static __always_inline bool sample_charge_to(struct sock_charge *sc, __s64 target,
					     enum sample_kind kind)
{
	__s64 before = sc->charged_pages;

	/* The footprint as it is: nothing kept beyond it (exact mode). */
	if (kind == SAMPLE_EXACT && sc->kept_pages)
		sc->kept_pages = 0;
	target = sample_target(sc, before, target, kind);
	if (target == before)
		return false;
	before = __sync_lock_test_and_set(&sc->charged_pages, (__s32)target);
	if (before != target)
		charge_apply(sc, before, target - before);
	return target > before;
}

#ifdef TCPBUF_CHARGE_NO_GUARD
/*
 * Where the charges leave the guard out (enforce.bpf.c's samplers), a
 * followed socket whose charge grew looks at its limited levels' guards
 * after it, in frames of their own.
 */
struct guard_walk {
	const struct sock_charge *sc;
};

static long guard_walk_level(__u64 i, void *ctx)
{
	struct guard_walk *w = ctx;
	struct cgroup_usage *u;
	__u64 id;

	if (!ancestry_level(w->sc, i, &id))
		return 1;
	u = bpf_map_lookup_elem(&cgroup_usage, &id);
	if (usage_limited(u))
		near_guard_update(id, u, u->usage_pages);
	return 0;
}

__noinline int followed_guard_check(struct sock_charge *sc)
{
	struct guard_walk w = { .sc = sc };

	if (sc && (sc->enforce.flags & TCPBUF_SE_FOLLOWED))
		bpf_loop(TCPBUF_MAX_DEPTH, guard_walk_level, &w, 0);
	return 0;
}

/* sample_charge_to(), and the guard of a followed socket whose charge grew. */
static __always_inline void sample_charge_guarded(struct sock_charge *sc, __s64 target,
						  enum sample_kind kind)
{
	if (sample_charge_to(sc, target, kind) && (sc->enforce.flags & TCPBUF_SE_FOLLOWED))
		followed_guard_check(sc);
}
#else
#define sample_charge_guarded(sc, target, kind) sample_charge_to(sc, target, kind)
#endif

static __always_inline void sample_socket_to(struct sock *sk, __s64 target,
					     enum sample_kind kind)
{
	struct sock_charge *sc;

	if (!sk_is_tcp(sk))
		return;
	sc = sock_charge_find(sk, target > 0);
	if (sc)
		sample_charge_to(sc, target, kind);
}

/*
 * The socket's entry as bpf_sk_storage_get() finds it, with plain loads: the
 * socket's storage, then the slot of its lookup cache this map owns, without
 * the helper's call and its own lookup code. Read-only (the verifier types it as kernel
 * memory): it tells whether anything needs writing, and a write takes the
 * entry from the helper. *@sure is false when the slot holds another map's
 * entry (the 16 slots are shared by every socket-storage map of the host):
 * ask the helper then.
 */
static __always_inline const struct sock_charge *sock_charge_peek(const struct sock *sk,
								   bool *sure)
{
	struct bpf_local_storage_map *smap = (void *)&sock_charge;
	struct bpf_local_storage *ls = sk->sk_bpf_storage;
	struct bpf_local_storage_data *sd;

	*sure = true;
	if (!ls)
		return NULL;
	/* A constant offset in each case: the verifier takes no variable
	 * offset into kernel memory (clang makes this a binary search). */
	switch (smap->cache_idx) {
	case 0: sd = ls->cache[0]; break;
	case 1: sd = ls->cache[1]; break;
	case 2: sd = ls->cache[2]; break;
	case 3: sd = ls->cache[3]; break;
	case 4: sd = ls->cache[4]; break;
	case 5: sd = ls->cache[5]; break;
	case 6: sd = ls->cache[6]; break;
	case 7: sd = ls->cache[7]; break;
	case 8: sd = ls->cache[8]; break;
	case 9: sd = ls->cache[9]; break;
	case 10: sd = ls->cache[10]; break;
	case 11: sd = ls->cache[11]; break;
	case 12: sd = ls->cache[12]; break;
	case 13: sd = ls->cache[13]; break;
	case 14: sd = ls->cache[14]; break;
	case 15: sd = ls->cache[15]; break;
	default: sd = NULL;
	}
	if (sd && sd->smap == smap)
		return (const struct sock_charge *)sd->data;
	*sure = false;
	return NULL;
}

/* Sampled at every syscall: armed, or followed under a dormant cgroup. */
#define TCPBUF_SE_SAMPLED	(TCPBUF_SE_LIMITED | TCPBUF_SE_FOLLOWED)

/*
 * The entry of a socket that is armed (a limited ancestor is near) or
 * followed (TCPBUF_SE_FOLLOWED), else NULL. Only those need their charge
 * fresh at every syscall; the others, and every socket of an unlimited
 * cgroup, are brought up to date by the reconcile pass, so a per-syscall
 * sampler leaves them after this.
 */
static __always_inline struct sock_charge *sock_armed_charge(struct sock *sk)
{
	struct sock_charge *sc;

	if (!sk->sk_bpf_storage)
		return NULL;	/* told without the storage lookup */
	sc = bpf_sk_storage_get(&sock_charge, sk, NULL, 0);
	return sc && (sc->enforce.flags & TCPBUF_SE_SAMPLED) ? sc : NULL;
}

/* A per-syscall sample: armed sockets only, lazily. Most find nothing to
 * change (a reader's kept page, a settled socket's small shrink): a peek
 * tells them. */
static __always_inline void sample_if_armed(struct sock *sk)
{
	const struct sock_charge *peek;
	struct sock_charge *sc;
	bool sure;

	peek = sock_charge_peek(sk, &sure);
	if (sure) {
		__s64 before;

		if (!peek || !(peek->enforce.flags & TCPBUF_SE_SAMPLED))
			return;
		before = peek->charged_pages;
		if (sample_target(peek, before, sk_footprint_pages(sk), SAMPLE_LAZY) == before)
			return;
	}
	sc = sock_armed_charge(sk);
	if (sc)
		sample_charge_guarded(sc, sk_footprint_pages(sk), SAMPLE_LAZY);
}

static __always_inline void sample_socket(struct sock *sk, enum sample_kind kind)
{
	sample_socket_to(sk, sk_footprint_pages(sk), kind);
}

#endif /* TCPBUF_CHARGE_BPF_H */
