/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Enforcement for a socket of a limited subtree whose socket storage could
 * not be made (sock_fallback.bpf.h): counted from its fallback entry like
 * any other, but capped once, at the floors enforcement never goes below
 * in pressure, instead of segment by segment: the per-segment passes read
 * the entry through the storage alone, and routing them through the
 * fallback too would double what the verifier walks in them. Its charge
 * holds the rest: usage includes it, so ingress (which looks in the
 * fallback for an unarmed socket) refuses it at max like its neighbours.
 */
#ifndef TCPBUF_FALLBACK_HOLD_BPF_H
#define TCPBUF_FALLBACK_HOLD_BPF_H

#include "enforce_policy.bpf.h"

/*
 * A socket of a limited subtree held without any entry (sock_fallback was
 * full), counted once, when it is first held (fallback_hold()): in
 * fallback_ctl.lost, and told to the daemon as unaccounted_count() tells,
 * which logs it and keeps ingress refusal linked for it.
 */
static __always_inline void fallback_lost_note(const struct sock *sk)
{
	struct tcpbuf_fallback_ctl *fc = fallback_ctl_get();
	struct cgroup *cg = sk_cgroup(sk);
	__u64 now;

	if (!fc)
		return;
	now = __sync_fetch_and_add(&fc->lost, 1) + 1;
	if (tcpbuf_unaccounted_tell(now > 0xffffffffULL ? 0 : (__u32)now))
		fallback_event(cg ? cg->kn->id : 0, now, TCPBUF_EVENT_LOST);
}

/* What fallback_hold() did. */
#define FALLBACK_HELD	1	/* held through its fallback entry */
#define FALLBACK_LOST	2	/* sock_fallback full: held at the floors without an entry */

/*
 * The mark of a socket of a limited subtree held without any entry
 * (FALLBACK_LOST), which ingress refuses as if its subtree were at max:
 * nothing charges it, so nothing else could hold it. A callback flag is
 * the one bit of a socket that is BPF's own; this one costs a callback at
 * a retransmission timeout only, which sockops_run() ignores at once.
 */
#define TCPBUF_LOST_CB_FLAG	BPF_SOCK_OPS_RTO_CB_FLAG

/*
 * Hold the socket @sk (@tp) of a limited subtree (the caller has seen a
 * limited ancestor) that has no storage entry: its fallback entry found or
 * made (@cookie, from the helper the program type allows), counted, and
 * capped at most at the floors (TCPBUF_SNDBUF_FLOOR, TCPBUF_RCVBUF_FLOOR),
 * and locked there. Where sock_fallback is full it is capped the same, and
 * counted as lost the first time (fallback_lost_note()); the caller marks it
 * (TCPBUF_LOST_CB_FLAG). @ctx is what bpf_setsockopt wants (caps_apply()).
 * Evaluates to FALLBACK_HELD or FALLBACK_LOST.
 */
#define fallback_hold(ctx, sk, tp, cookie) ({					\
	struct sock_charge *fb_ = sock_fallback_lookup(sk);			\
	bool capped_ = false;							\
	__u8 locks_;								\
	int v_;									\
										\
	if (!fb_)								\
		fb_ = sock_fallback_make(sk, cookie);				\
	if (fb_)								\
		socket_count_update(fb_, tp, true);				\
	/* Locked too, or autotuning grows them past any cap. */		\
	locks_ = BPF_CORE_READ_BITFIELD(sk, sk_userlocks);			\
	if (!(locks_ & TCPBUF_SNDBUF_LOCK) || (sk)->sk_sndbuf > TCPBUF_SNDBUF_FLOOR) { \
		v_ = TCPBUF_SNDBUF_FLOOR >> 1;					\
		bpf_setsockopt(ctx, SOL_SOCKET, SO_SNDBUF, &v_, sizeof(v_));	\
		capped_ = true;							\
	}									\
	if (!(locks_ & TCPBUF_RCVBUF_LOCK) || (sk)->sk_rcvbuf > TCPBUF_RCVBUF_FLOOR) { \
		v_ = TCPBUF_RCVBUF_FLOOR >> 1;					\
		bpf_setsockopt(ctx, SOL_SOCKET, SO_RCVBUF, &v_, sizeof(v_));	\
		capped_ = true;							\
	}									\
	/* Counted once: a lost socket is found again at every sweep. */	\
	if (!fb_ && capped_)							\
		fallback_lost_note(sk);						\
	fb_ ? FALLBACK_HELD : FALLBACK_LOST;					\
})

#endif /* TCPBUF_FALLBACK_HOLD_BPF_H */
