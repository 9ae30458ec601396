/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A socket's list of cgroups to charge (its own and its limited ancestors,
 * charge.bpf.h) made anew after a change of limits, by the sweep that
 * follows every change: a cgroup that gained limits takes what the socket
 * holds and its counts from now on, one that lost them gives them back.
 * The sweep holds the socket's lock (iter/tcp), as do exact mode's charges,
 * so the move and the list agree with what the socket has charged.
 */
#ifndef TCPBUF_ANCESTRY_RENEW_BPF_H
#define TCPBUF_ANCESTRY_RENEW_BPF_H

#include "enforce_policy.bpf.h"

struct ancestry_move {
	struct sock_charge *sc;
	const struct ancestry_list *to;
};

static __always_inline bool ancestry_has(const __u64 *ids, __u32 n, __u64 id)
{
	int k;

	for (k = 0; k < TCPBUF_MAX_DEPTH; k++)
		if (k < n && ids[k] == id)
			return true;
	return false;
}

/* Move the socket's charge and counts into (or out of) the cgroup @id. */
static __always_inline void ancestry_move_one(struct sock_charge *sc, __u32 i, __u64 id,
					      __s64 sign)
{
	__s64 pages = sc->charged_pages > 0 ? sc->charged_pages : 0;
	__s64 counted = !!(sc->enforce.flags & TCPBUF_SE_COUNTED);
	__s64 sender = !!(sc->enforce.flags & TCPBUF_SE_SENDER);
	struct cgroup_usage *u;
	__s64 now;

	if (!pages && !counted && !sender)
		return;
	u = bpf_map_lookup_elem(&cgroup_usage, &id);
	if (!u) {
		if (sign < 0)
			return;
		u = usage_entry_make(sc, i, id);
		if (!u)
			return;
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
	if (counted)
		near_update(id, u);
}

/* Steps 0-7: out of the old list's cgroups not in the new one; 8-15: into
 * the new list's not in the old one. One loop, so the verifier checks the
 * body once. */
static long ancestry_move_level(__u64 step, void *ctx)
{
	struct ancestry_move *m = ctx;
	struct sock_charge *sc = m->sc;
	const struct ancestry_list *to = m->to;
	__u32 i = step & (TCPBUF_MAX_DEPTH - 1);
	__u64 id;

	if (step >= TCPBUF_MAX_DEPTH) {
		if (i >= to->n)
			return 1;
		id = to->ids[i];
		if (!ancestry_has(sc->ancestors, sc->levels, id))
			ancestry_move_one(sc, i, id, 1);
	} else if (i < sc->levels) {
		id = sc->ancestors[i];
		if (!ancestry_has(to->ids, to->n, id))
			ancestry_move_one(sc, i, id, -1);
	}
	return 0;
}

/* Make the list of @sk's entry @sc anew if it predates the limits now. */
static __always_inline void ancestry_renew(struct sock *sk, struct sock_charge *sc)
{
	struct ancestry_list to = {};
	struct ancestry_move m = { .sc = sc, .to = &to };
	__u32 gen = limits_gen_now();
	int k;

	if (sc->ancestry_gen == gen || !sc->cgroup_id)
		return;
	ancestry_list_of(&to, sk);
	bpf_loop(2 * TCPBUF_MAX_DEPTH, ancestry_move_level, &m, 0);
	for (k = 0; k < TCPBUF_MAX_DEPTH; k++)
		sc->ancestors[k] = to.ids[k];
	sc->levels = to.n;
	sc->limited.word = 0;	/* which of them are limited: read anew */
	sc->ancestry_gen = gen;
}

#endif /* TCPBUF_ANCESTRY_RENEW_BPF_H */
