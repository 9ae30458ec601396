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
 * Hold the socket @sk (@tp) of a limited subtree that has no storage
 * entry: its fallback entry found or made (@cookie, from the helper the
 * program type allows), counted, and capped at most at buf_floor and
 * rcvbuf_floor, and locked there. @ctx is what bpf_setsockopt wants (caps_apply()). Whether
 * it has a fallback entry (false: sock_fallback was full).
 */
#define fallback_hold(ctx, sk, tp, cookie) ({					\
	struct sock_charge *fb_ = sock_fallback_lookup(sk);			\
	__u8 locks_;								\
	int v_;									\
										\
	if (!fb_)								\
		fb_ = sock_fallback_make(sk, cookie);				\
	if (fb_) {								\
		socket_count_update(fb_, tp, true);				\
		/* Locked too, or autotuning grows them past any cap. */	\
		locks_ = BPF_CORE_READ_BITFIELD(sk, sk_userlocks);		\
		if (!(locks_ & TCPBUF_SNDBUF_LOCK) || (sk)->sk_sndbuf > buf_floor) { \
			v_ = buf_floor >> 1;					\
			bpf_setsockopt(ctx, SOL_SOCKET, SO_SNDBUF, &v_, sizeof(v_)); \
		}								\
		if (!(locks_ & TCPBUF_RCVBUF_LOCK) || (sk)->sk_rcvbuf > rcvbuf_floor) { \
			v_ = rcvbuf_floor >> 1;					\
			bpf_setsockopt(ctx, SOL_SOCKET, SO_RCVBUF, &v_, sizeof(v_)); \
		}								\
	}									\
	fb_ != NULL;								\
})

#endif /* TCPBUF_FALLBACK_HOLD_BPF_H */
