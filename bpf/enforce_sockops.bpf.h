/* SPDX-License-Identifier: GPL-2.0 */
/*
 * enforce_sockops: caps for a socket of a limited subtree when it is
 * established, then at each segment while it is armed.
 */
#ifndef TCPBUF_ENFORCE_SOCKOPS_BPF_H
#define TCPBUF_ENFORCE_SOCKOPS_BPF_H

#include "enforce_socket.bpf.h"
#include "ancestry_renew.bpf.h"
#include "fallback_hold.bpf.h"
#include "timehist.bpf.h"
#include "netns.bpf.h"
#include "enforce_crowd.bpf.h"

static __always_inline void cb_flags_set(struct bpf_sock_ops *skops, bool armed, bool limited)
{
	/* Read once: the verifier refuses a context field read through a
	 * pointer the compiler computed for two reads. */
	int cur = skops->bpf_sock_ops_cb_flags, flags;

	barrier_var(cur);
	flags = cb_flags_wanted(cur, armed, limited);
	if (flags != cur)
		bpf_sock_ops_cb_flags_set(skops, flags);
}

/* A SYN's first window, a listener's MSS (enforce_crowd.bpf.h):
 * apart, so that the walk's frame is not sockops_run()'s (the stack of three
 * frames deep would not fit). */
static __noinline int sockops_crowd(struct bpf_sock_ops *skops)
{
	struct bpf_sock *bsk;
	struct tcp_sock *tp;

	if (skops->op == BPF_SOCK_OPS_RWND_INIT) {
		crowd_rwnd_init(skops);
		return 1;
	}
	bsk = skops->sk;
	if (bsk && (tp = bpf_skc_to_tcp_sock(bsk)))
		crowd_mss_set(skops, tp, cgroup_crowded(sk_cgroup((struct sock *)tp)));
	return 1;
}

/*
 * Attached once at the scope cgroup. A socket without a limited ancestor
 * costs one array lookup when it is established and nothing afterwards; one
 * whose limited ancestors are all far is counted and gets only the close
 * callback: only armed sockets (a limited ancestor is near) get the
 * per-segment ones.
 */
static __always_inline int sockops_run(struct bpf_sock_ops *skops)
{
	struct sock_enforce *se;
	struct sock_charge *sc;
	struct bpf_sock *bsk;
	struct tcp_sock *tp;
	struct sock *sk;
	struct tcpbuf_caps c;
	bool established;
	int near, near_before;

	bsk = skops->sk;
	if (!bsk)
		return 1;
	if (skops->op == BPF_SOCK_OPS_TCP_CONNECT_CB || skops->op == BPF_SOCK_OPS_TCP_LISTEN_CB) {
		if ((tp = bpf_skc_to_tcp_sock(bsk)))
			netns_note((struct sock *)tp);
		return 1;
	}
	if (skops->op == BPF_SOCK_OPS_STATE_CB) {
		/* Closed: no longer one of its subtree's writers. */
		if (skops->args[1] == BPF_TCP_CLOSE && (tp = bpf_skc_to_tcp_sock(bsk)) &&
		    ((sc = sock_charge_get((struct sock *)tp, false)) ||
		     (sc = sock_fallback_lookup((struct sock *)tp))))
			socket_count(sc, false, false, false);
		return 1;
	}
	if (skops->op != BPF_SOCK_OPS_ACTIVE_ESTABLISHED_CB &&
	    skops->op != BPF_SOCK_OPS_PASSIVE_ESTABLISHED_CB &&
	    skops->op != BPF_SOCK_OPS_PARSE_HDR_OPT_CB &&
	    skops->op != BPF_SOCK_OPS_HDR_OPT_LEN_CB)
		return 1;
	/* Only connections: a listener's sizes would be inherited by every
	 * socket it accepts, as if their application had chosen them. */
	if (!sock_ops_connected(skops->state))
		return 1;
	established = skops->op == BPF_SOCK_OPS_ACTIVE_ESTABLISHED_CB ||
		      skops->op == BPF_SOCK_OPS_PASSIVE_ESTABLISHED_CB;
	tp = bpf_skc_to_tcp_sock(bsk);
	if (!tp)
		return 1;
	sk = (struct sock *)tp;
	/* Most segments of an armed socket find its caps settled: a peek at
	 * its entry tells, without the helper's lookup. */
	if (!established) {
		const struct sock_charge *peek;
		bool sure;

		peek = sock_charge_peek(sk, &sure);
		if (sure && (!peek || caps_still_settled(sk, tp, peek)))
			return 1;
	}
	sc = sock_charge_get(sk, false);
	if (!sc) {
		/* Made at establishment for a socket with a limited ancestor
		 * (the walks below read its ancestry from it), not for its
		 * neighbours: making one is much of a connection's cost,
		 * and accounting makes it when the socket holds memory. A
		 * limit set later reaches the socket by the sweep. */
		if (!established || !sock_limited_ancestor(sk))
			return 1;
		sc = sock_charge_get(sk, true);
		if (!sc) {
			/* No storage to be had (optmem): held from its
			 * fallback entry, with the close callback, or
			 * marked for refusal where there is none. */
			switch (fallback_hold(skops, sk, tp, bpf_get_socket_cookie(skops))) {
			case FALLBACK_HELD:
				cb_flags_set(skops, false, true);
				break;
			case FALLBACK_LOST:
				bpf_sock_ops_cb_flags_set(skops, skops->bpf_sock_ops_cb_flags |
							  TCPBUF_LOST_CB_FLAG);
				break;
			}
			return 1;
		}
	}
	se = &sc->enforce;
	if (!established && caps_still_settled(sk, tp, sc))
		return 1;
	/* Sampled mode, a cgroup just near and the daemon not yet through
	 * linking the samplers and ingress: nothing else moves usage, and
	 * caps from stale usage grant a writer its unsent bytes plus a fresh
	 * share at every segment. An armed socket samples itself until then. */
	if (accounting_mode == TCPBUF_MODE_SAMPLED && (se->flags & TCPBUF_SE_LIMITED) &&
	    !near_linked())
		sample_charge_to(sc, sk_footprint_pages(sk), SAMPLE_LAZY);
	near_before = caps_compute(sk, tp, sc, &c);
	/* Nothing to do for it, nor to undo. */
	if (!c.limited && !se->flags)
		return 1;
	/* Counted first (one walk, which also tells near or far after it):
	 * a socket whose count makes an ancestor near is armed here, not at
	 * its next segment nor by the sweep answering the event; under a
	 * small limit, what one socket queues meanwhile as autotuning lets
	 * it is most of max. Its caps were computed as for one socket more
	 * (headroom_share()), so they hold for it counted. */
	near = socket_count_update(sc, tp, c.limited);
	if (near < 0)
		near = near_before;
	/* Its limited ancestors all far (or dormant): counted, left to the
	 * kernel but for the close. */
	if (!c.limited || !(near & 1)) {
		if (se->flags & TCPBUF_SE_LIMITED)
			caps_release(skops, sk, sc);
		follow_set(se, c.limited, near);
		cb_flags_set(skops, false, c.limited);
		return 1;
	}
	/* First armed here or at a segment: remember what its application
	 * chose; later, notice what it changes. */
	if (established || !(se->flags & TCPBUF_SE_LIMITED))
		enforce_init(sk, se);
	else
		notice_user_change(sk, se);
	caps_apply(skops, sk, &c, se);
	caps_settled_note(sk, tp, sc, &c);
	cb_flags_set(skops, true, true);
	return 1;
}

SEC("sockops")
int enforce_sockops(struct bpf_sock_ops *skops)
{
	int ret;

	if (skops->op == BPF_SOCK_OPS_RWND_INIT || skops->op == BPF_SOCK_OPS_TCP_LISTEN_CB) {
		TIMEHIST_START_SLOT();
		sockops_crowd(skops);
		TIMEHIST_END_SLOT(TH_SOCKOPS_CROWD);
	}
	TIMEHIST_START_SLOT();
	ret = sockops_run(skops);
	if (skops->op == BPF_SOCK_OPS_ACTIVE_ESTABLISHED_CB ||
	    skops->op == BPF_SOCK_OPS_PASSIVE_ESTABLISHED_CB)
		TIMEHIST_END_SLOT(TH_SOCKOPS_ESTABLISHED);
	else if (skops->op == BPF_SOCK_OPS_STATE_CB)
		TIMEHIST_END_SLOT(TH_SOCKOPS_STATE);
	else if (skops->op == BPF_SOCK_OPS_PARSE_HDR_OPT_CB ||
		 skops->op == BPF_SOCK_OPS_HDR_OPT_LEN_CB)
		TIMEHIST_END_SLOT(TH_SOCKOPS_SEGMENT);
	return ret;
}

#endif /* TCPBUF_ENFORCE_SOCKOPS_BPF_H */
