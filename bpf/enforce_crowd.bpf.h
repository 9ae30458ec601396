/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A crowded limited cgroup's new connections start with a small receive
 * window (tcpbuf_crowded_next(), tcpbuf_policy.h). What a connection holds
 * whatever its caps is its writer's forced skb, bounded by half the largest
 * window its peer advertised, and what its receiver promised before any cap
 * could apply: the SYN-ACK's window, which over loopback is one 64 KiB
 * segment. That window is BPF_SOCK_OPS_RWND_INIT's reply in segments of
 * the listener's MSS, so the listener (or a connecting socket, before its
 * SYN) gets TCP_MAXSEG while its cgroup is crowded. Neither a window clamp
 * nor a small SO_RCVBUF: both fix the connection's window scale at 0 for its
 * life, where a small first window leaves the scale to grow into once the
 * readers read and the caps allow.
 */
#ifndef TCPBUF_ENFORCE_CROWD_BPF_H
#define TCPBUF_ENFORCE_CROWD_BPF_H

#include "charge.bpf.h"
#include <bpf/bpf_core_read.h>

#define TCP_MAXSEG	2

extern void *bpf_cast_to_kern_ctx(void *obj) __ksym __weak;
/* Set by the daemon before load: the kernel has bpf_cast_to_kern_ctx (>= 6.2). */
const volatile bool crowd_kern_ctx = false;

/* The topmost limited cgroups whose ingress rests (or is about to), as the
 * daemon decided before its last pass (IngressRest=auto rests only some):
 * only their sockets are locked (enforce_rest.bpf.h), and only their bounded
 * levels count as crowded. Sized by the daemon to cgroup_limits. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, TCPBUF_MAX_CGROUPS);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, __u64);
	__type(value, __u8);
} rest_tops SEC(".maps");

struct crowd_walk {
	struct cgroup *cg;
	__u64 id;	/* the crowded level found */
	bool crowded;
	bool resting;	/* ingress rests: a bounded level counts as crowded */
	bool bounded;	/* a bounded level seen (the first: id, since) */
	bool in_rest;	/* a level of rest_tops seen */
	__u32 since;	/* its crowd_ms */
};

/* Probe reads, not plain loads: a request socket's listener comes from a
 * union the verifier gives no type (once a connection, not a segment). */
static long crowd_walk_level(__u64 i, void *ctx)
{
	struct crowd_walk *w = ctx;
	struct cgroup *cg = w->cg;
	struct cgroup_usage *u;
	__u64 id;

	if (!cg || BPF_CORE_READ(cg, level) <= 0)
		return 1;
	id = BPF_CORE_READ(cg, kn, id);
	u = bpf_map_lookup_elem(&cgroup_usage, &id);
	if (usage_limited(u) && (u->established.near & TCPBUF_NEAR_CROWDED)) {
		w->crowded = true;
		w->id = id;
		w->since = u->established.crowd_ms;
		return 1;
	}
	if (w->resting && usage_limited(u) && (u->established.dormant & TCPBUF_DORMANT_BOUNDED) &&
	    !w->bounded) {
		w->bounded = true;
		w->id = id;
		w->since = u->established.crowd_ms;
	}
	if (w->resting && bpf_map_lookup_elem(&rest_tops, &id))
		w->in_rest = true;
	w->cg = BPF_CORE_READ(cg, self.parent, cgroup);
	return 0;
}

/* Whether @cg or one of its ancestors is a crowded limited cgroup; since
 * when, in *@since, and which, in *@id (if not NULL). With @resting, a
 * bounded level counts while ingress rests at its top (rest_tops): no SYN
 * drop holds a burst of connections into it until the daemon links ingress
 * again, so they start as a crowded cgroup's do. */
static __always_inline bool cgroup_crowded_since(struct cgroup *cg, __u32 *since, __u64 *id,
						 bool resting)
{
	struct tcpbuf_enforce_ctl *ctl = enforce_ctl_get();
	struct crowd_walk w = { .cg = cg };
	int levels;

	/* While no cgroup is crowded (the host's count) no connection walks
	 * its ancestry here. */
	if (!cg || !crowd_present())
		return false;
	w.resting = resting && ctl && *(volatile __u32 *)&ctl->ingress_rests;
	levels = BPF_CORE_READ(cg, level);
	bpf_loop(levels < TCPBUF_WALK_LEVELS ? levels : TCPBUF_WALK_LEVELS, crowd_walk_level, &w, 0);
	if (!w.crowded && w.bounded && w.in_rest)
		w.crowded = true;
	else if (!w.crowded)
		w.id = w.since = 0;
	if (since)
		*since = w.since;
	if (id)
		*id = w.id;
	return w.crowded;
}

static __always_inline bool cgroup_crowded(struct cgroup *cg)
{
	return cgroup_crowded_since(cg, NULL, NULL, true);
}

/*
 * A SYN at a listener of a cgroup crowded for less than TCPBUF_CROWD_SYN_MS
 * whose MSS the daemon has not set yet (its pass runs as soon as it reads
 * the change): dropped, so that the connection is made from its
 * retransmitted SYN (a second later) with the small first window, not
 * with the 64 KiB one a burst of connections would otherwise all get.
 * Past that time, or with the application's own MSS, SYNs pass. Each drop
 * counts in the crowded cgroup's syn_drops: a connection that waited a
 * second is seen there, as a refused segment is in failcnt.
 */
#define TCPBUF_CROWD_SYN_MS	1000

static __always_inline bool crowd_syn_refused(struct tcp_sock *tp)
{
	struct cgroup_usage *u;
	__u32 since = 0, now;
	__u64 id = 0;

	if (!crowd_kern_ctx || tp->rx_opt.user_mss ||
	    !cgroup_crowded_since(sk_cgroup((struct sock *)tp), &since, &id, false))
		return false;
	now = bpf_ktime_get_ns() / 1000000;
	if (now - since >= TCPBUF_CROWD_SYN_MS)
		return false;
	u = bpf_map_lookup_elem(&cgroup_usage, &id);
	if (u)
		__sync_fetch_and_add(&u->established.syn_drops, 1);
	return true;
}

/*
 * The MSS a listener or a connecting socket offers: ours while crowded,
 * given back after. An application's own TCP_MAXSEG is left alone (one of
 * exactly TCPBUF_CROWD_MSS is taken for ours).
 */
static __always_inline void crowd_mss_set(void *ctx, struct tcp_sock *tp, bool crowded)
{
	int mss = tp->rx_opt.user_mss, val;

	/* Without the request socket's window (crowd_rwnd_init()), the
	 * MSS would only cost. */
	if (!crowd_kern_ctx)
		return;
	if (crowded && !mss)
		val = TCPBUF_CROWD_MSS;
	else if (!crowded && mss == TCPBUF_CROWD_MSS)
		val = 0;
	else
		return;
	bpf_setsockopt(ctx, SOL_TCP, TCP_MAXSEG, &val, sizeof(val));
}

/*
 * BPF_SOCK_OPS_RWND_INIT: for a request socket (a SYN at a listener), the
 * listener's cgroup; for a connecting socket, its own. The context gives no
 * socket that is not a full one: a request socket is reached through the
 * kernel's own context (>= 6.2; older kernels keep the default window).
 */
static __always_inline void crowd_rwnd_init(struct bpf_sock_ops *skops)
{
	struct bpf_sock_ops_kern *k;
	struct bpf_sock *bsk = skops->sk;
	struct cgroup *cg = NULL;
	struct tcp_sock *tp;
	struct sock *req;

	if (!crowd_present())
		return;
	if (bsk && (tp = bpf_skc_to_tcp_sock(bsk))) {
		cg = sk_cgroup((struct sock *)tp);
	} else if (crowd_kern_ctx) {
		k = bpf_cast_to_kern_ctx(skops);
		req = BPF_CORE_READ(k, sk);
		if (req)
			cg = BPF_CORE_READ((struct request_sock *)req, __req_common.skc_listener,
					   sk_cgrp_data.cgroup);
	}
	if (cgroup_crowded(cg))
		skops->reply = TCPBUF_CROWD_RWND;
}

#endif /* TCPBUF_ENFORCE_CROWD_BPF_H */
