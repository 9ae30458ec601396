/* SPDX-License-Identifier: GPL-2.0 */
/*
 * enforce_sweep (iter/tcp) and target_collect (iter/cgroup): caps for every
 * existing socket concerned, run by the daemon right after a state change or
 * a change of limits.
 */
#ifndef TCPBUF_ENFORCE_SWEEP_BPF_H
#define TCPBUF_ENFORCE_SWEEP_BPF_H

#include "enforce_socket.bpf.h"
#include "ancestry_renew.bpf.h"
#include "fallback_hold.bpf.h"
#include "enforce_crowd.bpf.h"

/* Set by the daemon before each sweep: 1 after a change of limits (any
 * socket swept may have gained a limited ancestor), 0 after state changes
 * (only sockets tcpbufd already sizes are concerned; new ones get their caps
 * when they are established). */
__u32 sweep_all;

/* After state changes, when the daemon has read every change (nothing was
 * dropped from the ring buffer), or after a change of limits to a few
 * cgroups: those cgroups and their descendants. Only their sockets' caps
 * move, and on a host of many sockets sizing every socket of every limited
 * cgroup costs more than the walk itself. */
__u32 sweep_targeted;

/*
 * A target's key: the address of its struct cgroup where the kernel has
 * iter/cgroup (>= 6.1; sweep_by_pointer), else its cgroup id. By address,
 * target_collect() below fills the table with each changed cgroup's subtree
 * and a socket is looked up by the pointer it carries, without reading its
 * cgroup and the cgroup's kernfs node, two cold lines per socket. By id,
 * the daemon fills it from its view of the tree.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, TCPBUF_SWEEP_TARGETS);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, __u64);
	__type(value, __u8);
} sweep_targets SEC(".maps");

__u32 sweep_by_pointer;
__u32 sweep_targets_full;	/* target_collect() ran out of room: sweep them all */

/* Run by the daemon over the subtree of each cgroup that changed. */
SEC("iter/cgroup")
int target_collect(struct bpf_iter__cgroup *ctx)
{
	__u64 key = (__u64)ctx->cgroup;
	__u8 one = 1;

	if (key && bpf_map_update_elem(&sweep_targets, &key, &one, BPF_ANY))
		sweep_targets_full = 1;
	return 0;
}

/*
 * Whether the socket's own cgroup is among the targets (the daemon puts each
 * changed cgroup's descendants there too): one lookup, no walk, which the
 * sweep's verifier budget has no room for, in a table small enough to stay
 * in cache, although nearly every lookup misses. Without iter/cgroup, by
 * the cgroup's id, read from the socket rather than from its storage (one
 * line of the socket and the cgroup's, shared by its sockets, where the
 * storage lookup is three).
 */
static __always_inline bool sweep_concerns(struct sock *sk)
{
	struct cgroup *cg;
	__u64 key;

	if (!sweep_targeted)
		return true;
	cg = sk_cgroup(sk);
	if (!cg)
		return true;
	/* Plain loads, not probe reads: the iterator's socket is a
	 * trusted pointer, and this runs for every socket. */
	key = sweep_by_pointer ? (__u64)cg : cg->kn->id;
	return bpf_map_lookup_elem(&sweep_targets, &key) != NULL;
}

/*
 * Load now the lines of the socket the pass reads after the storage lookup
 * (sk_rcvbuf and sk_userlocks, sk_sndbuf, max_window, bytes_sent: four
 * lines, cold in a walk of 100,000 sockets), so that their misses overlap
 * the lookup's three dependent ones instead of following them. Nothing uses
 * the values: the empty asm keeps the loads.
 */
static __always_inline void sweep_touch(struct sock *sk, struct tcp_sock *tp)
{
	__u64 a = sk->sk_rcvbuf, b = sk->sk_sndbuf, c = tp->max_window, d = tp->bytes_sent;

	asm volatile("" :: "r"(a), "r"(b), "r"(c), "r"(d));
}

/* cb_flags_set() from an iterator, with @mark too: through setsockopt
 * (kernel >= 6.11). */
static __always_inline void sweep_cb_flags_set(struct tcp_sock *tp, bool armed, bool limited,
					       int mark)
{
	int want = cb_flags_wanted(tp->bpf_sock_ops_cb_flags, armed, limited) | mark;

	if (want != tp->bpf_sock_ops_cb_flags)
		bpf_setsockopt(tp, SOL_TCP, TCP_BPF_SOCK_OPS_CB_FLAGS, &want, sizeof(want));
}

/* Apart, so that its walk's frame is not the sweep's (the stack of three
 * frames deep would not fit). */
static __noinline int sweep_listener(struct sock_common *skc)
{
	struct tcp_sock *tp = bpf_skc_to_tcp_sock(skc);

	if (tp && sweep_concerns((struct sock *)tp))
		crowd_mss_set(tp, tp, cgroup_crowded(sk_cgroup((struct sock *)tp)));
	return 0;
}

/*
 * Run by the daemon after a state change or a change of limits: brings every
 * socket to the caps of its ancestors' current states (capping in pressure
 * and max, lifting in normal).
 */
SEC("iter/tcp")
int enforce_sweep(struct bpf_iter__tcp *ctx)
{
	struct sock_common *skc = ctx->sk_common;
	struct sock_enforce *se;
	struct sock_charge *sc;
	struct tcp_sock *tp;
	struct sock *sk;
	struct tcpbuf_caps c;
	bool armed;
	int counted, near;

	/* A listener: the MSS its next connections start from, as its
	 * cgroup is crowded or not (enforce_crowd.bpf.h). */
	if (!skc || !sock_ops_connected(skc->skc_state))
		return skc && skc->skc_state == BPF_TCP_LISTEN ? sweep_listener(skc) : 0;
	tp = bpf_skc_to_tcp_sock(skc);
	if (!tp)
		return 0;
	sk = (struct sock *)tp;
	if (!sweep_concerns(sk))
		return 0;
	sweep_touch(sk, tp);
	/* A socket tcpbufd never sized has no limited ancestor, unless limits
	 * just changed: skip it cheaply (hosts hold 100,000s of sockets). */
	sc = sock_charge_get(sk, false);
	/* After a change of limits: the cgroups it charges, first. */
	if (sc && sweep_all)
		ancestry_renew(sk, sc);
	if ((!sc || !sc->enforce.flags) && (!sweep_all || !ancestry_has_limits(sk, sc)))
		return 0;
	if (!sc)
		sc = sock_charge_get(sk, true);
	if (!sc) {
		struct sock_charge *fb;
		int held;

		/* A fallback entry's too: read once when it was made, a
		 * limit set above it later would not hold it. */
		if (sweep_all && (fb = sock_fallback_lookup(sk)))
			ancestry_renew(sk, fb);
		held = fallback_hold(sk, sk, tp, bpf_get_socket_cookie(sk));

		/* The close callback, or the lost one's mark. */
		sweep_cb_flags_set(tp, false, held == FALLBACK_HELD,
				   held == FALLBACK_LOST ? TCPBUF_LOST_CB_FLAG : 0);
		return 0;
	}
	if (accounting_mode == TCPBUF_MODE_SAMPLED)
		sample_charge_to(sc, sk_footprint_pages(sk), SAMPLE_EXACT);
	near = caps_compute(sk, tp, sc, &c);
	se = &sc->enforce;
	armed = se->flags & TCPBUF_SE_LIMITED;
	counted = socket_count_update(sc, tp, c.limited);
	if (counted >= 0)
		near = counted;
	/* Its limited ancestors all far: counted, left to the kernel but for
	 * the close, as sockops_run() leaves it. Released here, not only at
	 * its next segment: before 6.11 a socket that predates the limits
	 * gets no per-segment callback and stayed armed. */
	if (c.limited && !(near & 1)) {
		if (armed)
			caps_release(sk, sk, sc);
		follow_set(se, true, near);
		sweep_cb_flags_set(tp, false, true, 0);
		return 0;
	}
	enforce_init(sk, se);
	notice_user_change(sk, se);
	caps_apply(sk, sk, &c, se);
	caps_settled_note(sk, tp, sc, &c);
	/* Armed before and still limited: its callbacks were set when it was
	 * armed (a cache line of the socket fewer to read). */
	if (armed && c.limited)
		return 0;
	/* Sockets that predate the limits get the per-segment callback too
	 * (TCP_BPF_SOCK_OPS_CB_FLAGS, kernel >= 6.11; older ones: sweeps only). */
	sweep_cb_flags_set(tp, c.limited, c.limited, 0);
	return 0;
}

/* Run by the daemon as soon as a cgroup turns crowded or uncrowded: each
 * listener's MSS (enforce_crowd.bpf.h), ahead of the paced sweep. */
SEC("iter/tcp")
int crowd_listeners(struct bpf_iter__tcp *ctx)
{
	struct sock_common *skc = ctx->sk_common;
	struct tcp_sock *tp;

	if (!skc || skc->skc_state != BPF_TCP_LISTEN || !(tp = bpf_skc_to_tcp_sock(skc)))
		return 0;
	crowd_mss_set(tp, tp, cgroup_crowded(sk_cgroup((struct sock *)tp)));
	return 0;
}

#endif /* TCPBUF_ENFORCE_SWEEP_BPF_H */
