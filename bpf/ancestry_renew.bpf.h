/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A socket's list of cgroups to charge (its own and its limited ancestors,
 * charge.bpf.h) made anew after a change of limits, by the sweep that
 * follows every change: a cgroup that gained limits takes what the socket
 * holds and its counts from now on, one that lost them gives them back.
 * The sweep holds the socket's lock (iter/tcp), as do exact mode's charges,
 * so the move and the list agree with what the socket has charged. A level
 * the socket missed (charge.bpf.h, late entries) takes its charge here once
 * it has an entry.
 */
#ifndef TCPBUF_ANCESTRY_RENEW_BPF_H
#define TCPBUF_ANCESTRY_RENEW_BPF_H

#include "enforce_policy.bpf.h"

struct ancestry_move {
	struct sock_charge *sc;
	const struct ancestry_list *to;
	__u32 missed_to;	/* TCPBUF_MISSED_BIT()s of the new list */
};

/* Where @id is in @ids (of @n), or -1. */
static __always_inline int ancestry_index(const __u64 *ids, __u32 n, __u64 id)
{
	int k;

	for (k = 0; k < TCPBUF_MAX_DEPTH; k++)
		if (k < n && ids[k] == id)
			return k;
	return -1;
}

/* Move the socket's charge (unless @pages_too is false) and counts into
 * (or out of) the cgroup @id, a fallback entry's place in unaccounted_sockets
 * too. False when an entry to move into could not be made (cgroup_usage
 * full): then nothing moved. */
static __always_inline bool ancestry_move_one(struct sock_charge *sc, __u32 i, __u64 id,
					      __s64 sign, bool pages_too)
{
	__s64 pages = pages_too && sc->charged_pages > 0 ? sc->charged_pages : 0;
	__s64 counted = !!(sc->enforce.flags & TCPBUF_SE_COUNTED);
	__s64 sender = !!(sc->enforce.flags & TCPBUF_SE_SENDER);
	bool fallback = sc->enforce.flags & TCPBUF_SE_FALLBACK;
	struct cgroup_usage *u;
	__s64 now;

	if (!pages && !counted && !sender && !fallback)
		return true;
	u = bpf_map_lookup_elem(&cgroup_usage, &id);
	if (!u) {
		if (sign < 0)
			return true;
		u = usage_entry_make(sc, id);
		if (!u)
			return false;
	}
	if (pages) {
		now = __sync_fetch_and_add(&u->usage_pages, sign * pages) + sign * pages;
		__sync_fetch_and_add(&u->sockets, sign);
		if (now > u->peak_pages)
			u->peak_pages = now;
		cgroup_state_update(id, u, now);
	}
	if (counted)
		__sync_fetch_and_add(&u->established.sockets, sign);
	if (sender)
		__sync_fetch_and_add(&u->established.senders, sign);
	if (fallback)
		__sync_fetch_and_add(&u->unaccounted_sockets, (__s32)sign);
	if (counted)
		near_update(id, u, false);
	return true;
}

/* A level kept in the new list that the socket missed (charge.bpf.h, late
 * entries): given the socket's whole charge now if it has an entry, else
 * still missed. Counts are not moved: they stayed where they were. */
static __always_inline void ancestry_catch_up(struct ancestry_move *m, __u32 j, __u64 id)
{
	struct sock_charge *sc = m->sc;
	__s64 pages = sc->charged_pages;
	struct cgroup_usage *u;
	__s64 now;

	if (pages <= 0)
		return;
	u = bpf_map_lookup_elem(&cgroup_usage, &id);
	if (!u)
		u = usage_entry_make(sc, id);
	if (!u) {
		m->missed_to |= TCPBUF_MISSED_BIT(j);
		return;
	}
	now = __sync_fetch_and_add(&u->usage_pages, pages) + pages;
	__sync_fetch_and_add(&u->sockets, 1);
	if (now > u->peak_pages)
		u->peak_pages = now;
	cgroup_state_update(id, u, now);
}

/* Steps 0-7: out of the old list's cgroups not in the new one (a missed one
 * gives back no pages), the missed ones kept caught up; 8-15: into the new
 * list's not in the old one. One loop, so the verifier checks the body
 * once. */
static long ancestry_move_level(__u64 step, void *ctx)
{
	struct ancestry_move *m = ctx;
	struct sock_charge *sc = m->sc;
	const struct ancestry_list *to = m->to;
	__u32 i = step & (TCPBUF_MAX_DEPTH - 1);
	bool missed;
	__u64 id;
	int j;

	if (step >= TCPBUF_MAX_DEPTH) {
		if (i >= to->n)
			return 1;
		id = to->ids[i];
		if (ancestry_index(sc->ancestors, sc->levels, id) < 0 &&
		    !ancestry_move_one(sc, i, id, 1, true) && sc->charged_pages > 0)
			m->missed_to |= TCPBUF_MISSED_BIT(i);
	} else if (i < sc->levels) {
		id = sc->ancestors[i];
		missed = sc->levels_word & TCPBUF_MISSED_BIT(i);
		j = ancestry_index(to->ids, to->n, id);
		if (j < 0)
			ancestry_move_one(sc, i, id, -1, !missed);
		else if (missed)
			ancestry_catch_up(m, j, id);
	}
	return 0;
}

/* The moves above for the entry @sc and its new list @to; the new list's
 * missed levels (TCPBUF_MISSED_BIT()). Global, as caps_walk(): checked
 * once, alone, where inlined in the sweep its loop's states multiplied with
 * the sweep's own (7.x walked the sweep 3.5 times as far as 6.12). */
__noinline int ancestry_move(struct sock_charge *sc, struct ancestry_list *to)
{
	struct ancestry_move m = { .sc = sc, .to = to };

	if (!sc || !to)
		return 0;
	bpf_loop(2 * TCPBUF_MAX_DEPTH, ancestry_move_level, &m, 0);
	return m.missed_to;
}

/* Make the list of @sk's entry @sc anew if it predates the limits now. */
static __always_inline void ancestry_renew(struct sock *sk, struct sock_charge *sc)
{
	struct ancestry_list to = {};
	__u32 epoch = limits_epoch_now(), missed_to;
	int k;

	if (sc->ancestry_epoch == epoch || !sc->cgroup_id)
		return;
	ancestry_list_of(&to, sk);
	to.cg = NULL;	/* ancestry_move() takes plain memory, no kernel pointer */
	missed_to = ancestry_move(sc, &to);
	for (k = 0; k < TCPBUF_MAX_DEPTH; k++)
		sc->ancestors[k] = to.ids[k];
	sc->levels_word = TCPBUF_LEVELS_WORD(to.n) | missed_to;
	sc->verdict.word = 0;	/* found on the old list: nothing of it holds */
	sc->ancestry_epoch = epoch;
}

#endif /* TCPBUF_ANCESTRY_RENEW_BPF_H */
