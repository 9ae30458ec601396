/* SPDX-License-Identifier: GPL-2.0 */
/*
 * enforce_ingress: refuses data that would take a cgroup past max (attached
 * only to cgroups with limits); sampled mode charges the segment here.
 */
#ifndef TCPBUF_ENFORCE_INGRESS_BPF_H
#define TCPBUF_ENFORCE_INGRESS_BPF_H

#include "enforce_policy.bpf.h"
#include "timehist.bpf.h"
#include "fallback_hold.bpf.h"
#include "enforce_crowd.bpf.h"
#include <bpf/bpf_endian.h>

#define ETH_P_IP_NUM		0x0800
#define ETH_P_IPV6_NUM		0x86DD

/* Bytes of TCP payload in the segment (skb->data is the network header);
 * *seq gets its sequence number. */
static __always_inline int tcp_payload_len(struct __sk_buff *skb, __u32 *seq)
{
	__u32 nh = 0, doff_byte = 0;
	__u8 b0 = 0;

	if (skb->protocol == bpf_htons(ETH_P_IP_NUM)) {
		if (bpf_skb_load_bytes(skb, 0, &b0, 1))
			return 1;
		nh = (b0 & 0xf) * 4;
	} else if (skb->protocol == bpf_htons(ETH_P_IPV6_NUM)) {
		nh = 40;	/* extension headers: counted as payload below, harmless */
	} else {
		return 1;
	}
	if (bpf_skb_load_bytes(skb, nh + 12, &doff_byte, 1) ||
	    bpf_skb_load_bytes(skb, nh + 4, seq, 4))
		return 1;
	*seq = bpf_ntohl(*seq);
	return (int)skb->len - (int)nh - (int)((doff_byte & 0xf0) >> 2);
}

/* A SYN without ACK (a connection asked for). */
static __always_inline bool tcp_pure_syn(struct __sk_buff *skb)
{
	__u32 nh = 40;
	__u8 b0 = 0, flags = 0;

	if (skb->protocol == bpf_htons(ETH_P_IP_NUM)) {
		if (bpf_skb_load_bytes(skb, 0, &b0, 1))
			return false;
		nh = (b0 & 0xf) * 4;
	} else if (skb->protocol != bpf_htons(ETH_P_IPV6_NUM)) {
		return false;
	}
	if (bpf_skb_load_bytes(skb, nh + 13, &flags, 1))
		return false;
	return (flags & 0x12) == 0x02;
}


/*
 * Ingress refusal at max. Only segments with payload are refused: ACKs, SYNs
 * and bare FINs pass, so the connection itself never stalls. A refused
 * segment never reaches TCP; the peer keeps it and sends it again, so
 * nothing is lost. A socket with nothing queued is not refused (up to
 * slack_end, tcpbuf_ingress_refuses()), so a full cgroup cannot starve a
 * reader.
 */
struct ingress_walk {
	struct ancestry a;
	__s64 pages;		/* what the segment adds to usage: it and the socket's
				 * backlog (sampled mode: less what is charged) */
	__s64 rmem;		/* the socket's receive memory, bytes */
	bool ready;		/* its reader took everything it was given */
	bool refused;
};

/*
 * One limited level: refuse what would take usage past max, less the room
 * kept for the subtree's writers (failcnt counts it). Windows are kept
 * within the headroom (enforce_policy.bpf.h), so this is the backstop for
 * what was promised before a cap, not the usual brake.
 */
static long ingress_walk_level(__u64 i, void *ctx)
{
	struct ingress_walk *w = ctx;
	struct cgroup_usage *u;
	__s64 want;
	__u64 id;

	if (!walk_level(&w->a, i, &id))
		return 1;
	/* The entry's copy of the limits, as ingress_near_max(). */
	u = bpf_map_lookup_elem(&cgroup_usage, &id);
	if (!u || !u->limits.max_pages)
		return 0;
	want = u->usage_pages + w->pages;
	if (!tcpbuf_ingress_refuses(want, max_effective(u, want), u->limits.max_pages, w->rmem,
				    w->ready))
		return 0;
	__sync_fetch_and_add(&u->failcnt, 1);
	/* Refusing is being at max, though usage stays just under it. */
	cgroup_state_update(id, u, want);
	w->refused = true;
	return 1;
}

/* Someone waits on the socket: a reader blocked in recv(), or one that
 * polls it (poll, select, epoll). */
static __always_inline bool sk_has_waiter(const struct sock *sk)
{
	struct socket_wq *wq = sk->sk_wq;

	if (!wq)
		return false;
	return (unsigned long)wq->wait.head.next != (unsigned long)&wq->wait.head;
}

/* The reader has taken everything the socket was given, and has taken
 * some or waits for more: data for it is read, not held. */
static __always_inline bool reader_ready(const struct sock *sk, const struct tcp_sock *tp)
{
	return tp->copied_seq == tp->rcv_nxt && (tp->bytes_received || sk_has_waiter(sk));
}

/* Whether the segment carries anything TCP has not received yet. */
static __always_inline bool tcp_new_data(const struct tcp_sock *tp, __u32 seq, int len)
{
	return (__s32)(seq + len - tp->rcv_nxt) > 0;
}

/*
 * Whether TCP will most likely queue this new data: in the window, and the
 * socket not over sk_rcvbuf (past it tcp_data_queue drops, unless the queue
 * is empty or collapsing it makes room). Sampled mode charges a segment at
 * ingress only then: a charge for a segment TCP drops would stay until the
 * socket's next sample.
 */
static __always_inline bool tcp_would_queue(struct sock *sk, const struct tcp_sock *tp,
					    __u32 seq)
{
	__u32 wnd_end = tp->rcv_wup + tp->rcv_wnd;
	int rmem = sk->sk_backlog.rmem_alloc.counter;

	if ((__s32)(seq - wnd_end) >= 0)
		return false;
	return rmem == 0 || rmem <= sk->sk_rcvbuf;
}

/*
 * Whether @extra pages more could be refused: some limited ancestor of the
 * socket is at max, or would pass the point where the writers' reserve
 * starts to count against max (max_effective()). Short of that, ingress has
 * nothing to decide: in sampled mode it charges what the socket would hold
 * (a crossing of pressure is seen by that charge, as by any other), in exact
 * mode the kernel's charge does. This keeps ingress at a few lookups per
 * segment everywhere but right under max, in pressure too. *@clear: every
 * level is also below its watch point (struct tcpbuf_zones), so the next
 * segments may trust this look until the epoch moves (TCPBUF_V_CLEAR).
 */
static __always_inline bool ingress_near_max(const struct sock_charge *sc, __u32 levels,
					     __s64 extra, bool *clear)
{
	__u32 n = sc->levels;
	int i;

	*clear = true;
	for (i = 0; i < TCPBUF_MAX_DEPTH; i++) {
		struct cgroup_usage *u;
		struct tcpbuf_zones z;
		__u64 id;

		if (i >= n)
			break;
		if (!(levels & (1U << i)))
			continue;
		id = sc->ancestors[i];
		/* The entry's copy of the limits: one lookup per level. */
		u = bpf_map_lookup_elem(&cgroup_usage, &id);
		if (!u) {
			*clear = false;	/* limited, but no usage yet: look again */
			continue;
		}
		if (!u->limits.max_pages)
			continue;
		z = tcpbuf_zones_of(u->limits.max_pages);
		if (u->state == TCPBUF_STATE_MAX || u->usage_pages + extra >= z.reserve_point)
			return true;
		if (u->max_watch || u->usage_pages + extra >= z.watch_point)
			*clear = false;
	}
	return false;
}

/*
 * The socket's footprint in pages once TCP has queued @bytes more. TCP takes
 * them out of sk_forward_alloc first and raises that by whole pages only for
 * the rest, so a segment that fits in the forward allocation adds nothing
 * (a request/response reader's next message, always).
 */
static __always_inline __s64 footprint_with_pages(const struct sock *sk, __s64 bytes)
{
	__s64 fwd = sk->sk_forward_alloc;
	__s64 held = fwd + sk->sk_wmem_queued + sk->sk_backlog.rmem_alloc.counter;

	if (fwd < 0)
		fwd = 0;
	if (bytes > fwd)
		held += bytes - fwd;
	if (held <= 0)
		return 0;
	return (held + TCPBUF_PAGE_SIZE - 1) >> TCPBUF_PAGE_SHIFT;
}

/*
 * Bounded (sampled mode, tcpbuf_bounded_share()): the socket's verdict says
 * every limited level of its was bounded or far at this epoch, and its
 * buffers are still within the share its look found, so nothing this
 * segment brings can matter: told with plain loads, no helper call.
 */
static __always_inline bool ingress_bounded(const struct sock *sk, struct tcpbuf_enforce_ctl *ctl)
{
	const struct sock_charge *p;
	union sock_verdict v;
	bool sure;

	p = sock_charge_peek(sk, &sure);
	if (!p || !(p->enforce.flags & TCPBUF_SE_FOLLOWED))
		return false;
	v.word = p->verdict.word;
	return (v.bits & TCPBUF_V_BOUNDED) && v.epoch == *(volatile __u32 *)&ctl->epoch &&
	       sock_bounded_ok(sk, p->bounded_rcvbuf);
}

struct bounded_walk {
	struct ancestry a;
	__s64 rcvbuf;	/* the socket's sk_rcvbuf */
	__u32 snd_ok;	/* its sk_sndbuf is within the writers' ceiling */
	__u32 bounded;	/* every limited level bounded or far */
	__u32 left;	/* levels this look took out of bounded */
	__u32 share;	/* the smallest share of its bounded levels */
};

static long bounded_walk_level(__u64 i, void *ctx)
{
	struct bounded_walk *w = ctx;
	struct cgroup_usage *u;
	__s64 share;
	__u32 d;
	__u64 id;

	if (!walk_level(&w->a, i, &id))
		return 1;
	u = bpf_map_lookup_elem(&cgroup_usage, &id);
	if (!usage_limited(u))
		return 0;
	d = u->established.dormant;
	if (u->established.near & 1 || !(d & TCPBUF_DORMANT_BOUNDED)) {
		if (u->established.near & 1 || d)
			w->bounded = 0;
		return 0;
	}
	share = near_bounded_share(u->established.sockets, u->limits.pressure_pages,
				   u->limits.max_pages, guard_writer_pages(u));
	if (w->snd_ok && share > 0 && w->rcvbuf <= share) {
		if (share < w->share)
			w->share = share;
		return 0;
	}
	/* Its buffers grew past the level's share: the level is followed
	 * from now on (the daemon links the samplers; this and the next
	 * segments are charged here meanwhile). More than one socket for
	 * the event, so the daemon is woken and sweeps. */
	w->bounded = 0;
	if (dormant_swap(&u->established, d, d & ~TCPBUF_DORMANT_BOUNDED)) {
		w->left++;
		near_event(id, u->established.sockets > 1 ? u->established.sockets : 2,
			   u->established.near, TCPBUF_NEAR_DORMANT);
	}
	return 0;
}

/* Whether the followed socket of @sc, whose sk_rcvbuf is @rcvbuf and whose
 * sk_sndbuf is within the writers' ceiling or not (@snd_ok), is bounded,
 * with the share its levels give it noted in @sc; takes the levels whose
 * share its buffers passed out of bounded. Global: checked once, apart from
 * ingress's own walk. */
__noinline int bounded_look(struct sock_charge *sc, __s64 rcvbuf, int snd_ok)
{
	struct bounded_walk w = { .a.sc = sc, .rcvbuf = rcvbuf, .snd_ok = !!snd_ok, .bounded = 1,
				  .share = TCPBUF_BOUNDED_SHARE_MAX };

	if (!sc)
		return 0;
	bpf_loop(TCPBUF_MAX_DEPTH, bounded_walk_level, &w, 0);
	if (w.left)
		bounded_epoch_bump();
	/* Before the verdict that says bounded is stored, so ingress never
	 * pairs that verdict with an older, wider share. */
	sc->bounded_rcvbuf = w.bounded ? w.share : 0;
	return w.bounded;
}

/* Out of bounded: nothing charged the socket of @sc while it was (no
 * sampler runs for a bounded cgroup), so its whole footprint, @pages, is
 * charged now, before the segment passes: usage must hold what the socket
 * already has without waiting for the samplers and the sweep. Global: its
 * charge is checked once, apart from ingress. */
__noinline int bounded_left_charge(struct sock_charge *sc, __s64 pages)
{
	if (sc)
		sample_charge_guarded(sc, pages, SAMPLE_EXACT);
	return 0;
}

static __always_inline int ingress_check(struct __sk_buff *skb, __s64 truesize)
{
	struct tcpbuf_enforce_ctl *ctl = enforce_ctl_get();
	struct bpf_sock *bsk = skb->sk;
	struct ingress_walk w = {};
	struct sock_charge *sc;
	struct tcp_sock *tp;
	struct sock *sk;
	__s64 uncharged = 0, with = 0;
	union sock_verdict v, nv;
	__u32 seq = 0, epoch;
	bool near_max, stale, clear;
	int len;

	if (!bsk || !ctl || !ctl->limited_cgroups)
		return 1;
	tp = bpf_skc_to_tcp_sock(bsk);	/* full TCP sockets only */
	if (!tp)
		return 1;
	sk = (struct sock *)tp;
	if (bsk->state == BPF_TCP_LISTEN)
		return !(tcp_pure_syn(skb) && crowd_syn_refused(tp));
	if (near_guard_bounded_rcvbuf && ingress_bounded(sk, ctl))
		return 1;
	/* Not armed: every limited ancestor is far, nothing it receives can
	 * matter (tcpbuf_near_next()). */
	sc = sock_armed_charge(sk);
	if (!sc && !(sc = sock_fallback_lookup(sk))) {
		/* Held without any entry (fallback_hold()): its new data
		 * refused as at max, since nothing charges it. */
		if ((tp->bpf_sock_ops_cb_flags & TCPBUF_LOST_CB_FLAG) &&
		    (len = tcp_payload_len(skb, &seq)) > 0 && tcp_new_data(tp, seq, len))
			return 0;
		return 1;
	}
	/* What this segment adds, and what already waits in the socket's
	 * backlog (its reader holds the lock): neither is charged yet, in
	 * either mode, and a slow reader can let the backlog grow large. */
	w.pages = (truesize + sk->sk_backlog.len + TCPBUF_PAGE_SIZE - 1) >> TCPBUF_PAGE_SHIFT;
	/* Sampled mode: what the socket would hold with the segment beyond
	 * what it has charged (a reader's kept page often covers it). */
	if (accounting_mode == TCPBUF_MODE_SAMPLED) {
		with = footprint_with_pages(sk, truesize + sk->sk_backlog.len);
		uncharged = with - sc->charged_pages;
	}
	/* Every limited level was clear of max at its last look and the
	 * epoch has not moved since: nothing to look up. Read before the
	 * look that may renew the verdict, so a charge crossing meanwhile
	 * leaves it stale. */
	epoch = *(volatile __u32 *)&ctl->epoch;
	v = verdict_of(sc);
	/* Followed: bounded now (looked at once per epoch, which moves as a
	 * level enters bounded), or no longer (its buffers grew past the
	 * bound since a look found it bounded). */
	if (near_guard_bounded_rcvbuf && (sc->enforce.flags & TCPBUF_SE_FOLLOWED)) {
		bool ok = sock_bounded_ok(sk, sc->bounded_rcvbuf), was = v.bits & TCPBUF_V_BOUNDED;

		if (!tcpbuf_verdict_valid(&v, epoch, TCPBUF_VERDICT_NO_CLOCK,
					  TCPBUF_V_BOUND_LOOKED) ||
		    (!ok && was)) {
			bool bounded = bounded_look(sc, sk->sk_rcvbuf,
						    sock_bounded_ok(sk, TCPBUF_BOUNDED_SHARE_MAX));

			nv = tcpbuf_verdict_with(v, epoch, TCPBUF_V_BOUND_LOOKED |
						 (bounded ? TCPBUF_V_BOUNDED : 0),
						 bounded ? 0 : TCPBUF_V_BOUNDED, 0, 0);
			if (__sync_val_compare_and_swap(&sc->verdict.word, v.word, nv.word) ==
			    v.word)
				v = nv;
			if (bounded)
				return 1;
			if (was) {
				bounded_left_charge(sc, sk_footprint_pages(sk));
				uncharged = with - sc->charged_pages;
			}
		}
	}
	if (tcpbuf_verdict_valid(&v, epoch, TCPBUF_VERDICT_NO_CLOCK, TCPBUF_V_CLEAR) &&
	    w.pages <= TCPBUF_INGRESS_TRUST_PAGES) {
		near_max = false;
	} else {
		/* The levels its last caps walk found limited (armed sockets
		 * have one at every segment). */
		near_max = ingress_near_max(sc, limited_levels_of(v, epoch, &stale),
					    uncharged > 0 ? uncharged : 0, &clear);
		/* Without the socket's lock: a compare-and-swap, so that a
		 * verdict sock_ops changed meanwhile is never written back. */
		nv = tcpbuf_verdict_with(v, epoch, TCPBUF_V_CLEAR, 0, 0, 0);
		if (clear && !near_max && nv.word != v.word)
			__sync_val_compare_and_swap(&sc->verdict.word, v.word, nv.word);
	}
	/* Nothing to refuse and nothing to charge: the common case of
	 * request/response traffic, a few lookups; and a followed socket's
	 * segment within its step (tcpbuf_follow_waits()). */
	if (!near_max && (uncharged <= 0 || ((sc->enforce.flags & TCPBUF_SE_FOLLOWED) &&
					     tcpbuf_follow_waits(sc->charged_pages, with))))
		return 1;
	len = tcp_payload_len(skb, &seq);
	if (len <= 0)
		return 1;
	if (!tcp_new_data(tp, seq, len))
		return 1;	/* a duplicate: TCP ignores it, nothing to refuse */
	if (near_max) {
		w.rmem = sk->sk_backlog.rmem_alloc.counter;
		w.ready = w.rmem == 0 && reader_ready(sk, tp);
		/* Sampled mode: usage has this socket at what it charged; what
		 * it would hold with the segment (counted as when it was
		 * charged before) is what the walk adds, and what is charged
		 * below if the segment passes: one charge, not a fresh sample
		 * and then the segment's. */
		with = sk_footprint_pages(sk) + w.pages;
		if (accounting_mode == TCPBUF_MODE_SAMPLED)
			w.pages = with - sc->charged_pages;
		w.a.sc = sc;
		bpf_loop(TCPBUF_MAX_DEPTH, ingress_walk_level, &w, 0);
		if (w.refused)
			return 0;
	}
	/* Sampled mode: charge the segment now, so every socket's charge
	 * covers what it holds and usage is never behind by a segment per
	 * socket of the subtree (which is what makes skipping the walk above
	 * sound). The next sample of the socket corrects this to what TCP
	 * really queued. */
	if (accounting_mode == TCPBUF_MODE_SAMPLED && tcp_would_queue(sk, tp, seq))
		sample_charge_guarded(sc, with, SAMPLE_LAZY);
	return 1;
}

/* Kernel >= 6.2: the skb's real truesize. */
SEC("cgroup_skb/ingress")
int enforce_ingress(struct __sk_buff *skb)
{
	struct sk_buff *kskb = bpf_cast_to_kern_ctx(skb);
	int verdict;

	TIMEHIST_START();
	verdict = ingress_check(skb, kskb->truesize);
	TIMEHIST_END(TH_INGRESS);
	return verdict;
}

/* Older kernels: payload plus a typical skb overhead. The loader picks one. */
SEC("cgroup_skb/ingress")
int enforce_ingress_compat(struct __sk_buff *skb)
{
	return ingress_check(skb, (__s64)skb->len + 1024);
}

#endif /* TCPBUF_ENFORCE_INGRESS_BPF_H */
