// SPDX-License-Identifier: GPL-2.0
/*
 * Enforcement: hold each limited cgroup under its thresholds.
 *   sockops          caps for a socket of a limited subtree when it is
 *                    established, then at each segment it receives
 *   ingress          refuses data that would take a cgroup past max
 *                    (attached only to cgroups with limits)
 *   sweep            iter/tcp: caps for every existing socket, run by the
 *                    daemon right after a state change
 *   limits_refresh   run on demand (raw_tp, test run): each usage entry's
 *                    copy of its cgroup's limits, its state and near or far
 *                    after a change of limits
 *   sendmsg_sample   sampled mode only: keeps a limited socket's usage fresh
 *                    while tcp_sendmsg queues
 * The state machine itself runs where usage changes (charge.bpf.h); the
 * caps come from enforce_policy.bpf.h. Only sockets with a limited ancestor
 * that is near (tcpbuf_near_next()) are armed: capped, followed segment by
 * segment, checked at ingress. The others are counted and left alone.
 */
#include "enforce_policy.bpf.h"
#include "ancestry_renew.bpf.h"
#include "timehist.bpf.h"
#include "netns.bpf.h"
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_endian.h>

char LICENSE[] SEC("license") = "GPL";

#define ETH_P_IP_NUM		0x0800
#define ETH_P_IPV6_NUM		0x86DD

/* ------------------------------------------------------------- sock_ops */

/*
 * Per-segment callbacks both ways, and the state callback that sees the
 * socket close. The outgoing one (HDR_OPT_LEN, run before TCP computes the
 * window it advertises) is what keeps the receive guard fresh where a
 * window is promised: a reader's window update goes out from recvmsg, with
 * no incoming segment before it.
 */
#define ENFORCE_CB_FLAGS (BPF_SOCK_OPS_PARSE_ALL_HDR_OPT_CB_FLAG |		\
			  BPF_SOCK_OPS_WRITE_HDR_OPT_CB_FLAG | BPF_SOCK_OPS_STATE_CB_FLAG)

/* Sockets of a connection: not a listener, not a time-wait or request
 * minisock. (A passive socket is still SYN_RECV at its established
 * callback: TCP moves it to ESTABLISHED just after.) */
static __always_inline bool sock_ops_connected(__u32 state)
{
	return state != BPF_TCP_LISTEN && state != BPF_TCP_TIME_WAIT &&
	       state != BPF_TCP_NEW_SYN_RECV && state != BPF_TCP_CLOSE;
}

/* The callbacks a socket needs: every segment while armed (a limited
 * ancestor is near); only the close, to be counted out, while its limited
 * ancestors are all far; none without limits. */
static __always_inline int cb_flags_wanted(int flags, bool armed, bool limited)
{
	flags &= ~ENFORCE_CB_FLAGS;
	if (armed)
		return flags | ENFORCE_CB_FLAGS;
	return limited ? flags | BPF_SOCK_OPS_STATE_CB_FLAG : flags;
}

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

/*
 * Far again: sizes tcpbufd set while the socket was armed go back to what
 * autotuning stops at (or to the application's own), since no callback
 * would grow them any more; from then on the kernel sizes it. A path apart
 * from caps_apply(), so the verifier walks each alone.
 */
#define caps_release(ctx, sk, se) ({						\
	int v_;									\
										\
	notice_user_change(sk, se);						\
	if ((se)->flags & TCPBUF_SE_SNDBUF_SET) {				\
		v_ = ((se)->user_locks & TCPBUF_SNDBUF_LOCK ? (se)->user_sndbuf	\
							     : sndbuf_ceiling) >> 1; \
		if (!bpf_setsockopt(ctx, SOL_SOCKET, SO_SNDBUF, &v_, sizeof(v_))) \
			(se)->set_sndbuf = (sk)->sk_sndbuf;			\
	}									\
	if ((se)->flags & TCPBUF_SE_RCVBUF_SET) {				\
		v_ = ((se)->user_locks & TCPBUF_RCVBUF_LOCK ? (se)->user_rcvbuf	\
							     : rcvbuf_ceiling) >> 1; \
		if (!bpf_setsockopt(ctx, SOL_SOCKET, SO_RCVBUF, &v_, sizeof(v_))) \
			(se)->set_rcvbuf = (sk)->sk_rcvbuf;			\
	}									\
	(se)->state = TCPBUF_STATE_NORMAL;					\
	(se)->flags &= ~(TCPBUF_SE_LIMITED | TCPBUF_SE_SETTLED | TCPBUF_SE_SND_AT_CAP);			\
})

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
	struct caps c;
	bool established, near_before;
	int near;

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
		    (sc = sock_charge_get((struct sock *)tp, false)))
			socket_count(sc, false, false);
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
		if (sure && (!peek || caps_still_settled(sk, tp, &peek->enforce)))
			return 1;
	}
	sc = sock_charge_get(sk, false);
	if (!sc) {
		/* Made at establishment for a socket with a limited ancestor
		 * (the walks below read its ancestry from it), not for its
		 * neighbours: making one is most of a connection's cost here,
		 * and accounting makes it when the socket holds memory. A
		 * limit set later reaches the socket by the sweep. */
		if (!established || !sock_limited_ancestor(sk))
			return 1;
		sc = sock_charge_get(sk, true);
		if (!sc)
			return 1;
	}
	se = &sc->enforce;
	if (!established && caps_still_settled(sk, tp, se))
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
	/* Its limited ancestors all far: counted, left to the kernel but for
	 * the close. */
	if (!c.limited || !near) {
		if (se->flags & TCPBUF_SE_LIMITED)
			caps_release(skops, sk, se);
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
	caps_settled_note(sk, tp, se, &c);
	cb_flags_set(skops, true, true);
	return 1;
}

SEC("sockops")
int enforce_sockops(struct bpf_sock_ops *skops)
{
	int ret;

	TIMEHIST_START();
	ret = sockops_run(skops);
	if (skops->op == BPF_SOCK_OPS_ACTIVE_ESTABLISHED_CB ||
	    skops->op == BPF_SOCK_OPS_PASSIVE_ESTABLISHED_CB)
		TIMEHIST_END(TH_SOCKOPS_ESTABLISHED);
	else if (skops->op == BPF_SOCK_OPS_STATE_CB)
		TIMEHIST_END(TH_SOCKOPS_STATE);
	else if (skops->op == BPF_SOCK_OPS_PARSE_HDR_OPT_CB ||
		 skops->op == BPF_SOCK_OPS_HDR_OPT_LEN_CB)
		TIMEHIST_END(TH_SOCKOPS_SEGMENT);
	return ret;
}

/* -------------------------------------------------------------- ingress */

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

extern void *bpf_cast_to_kern_ctx(void *obj) __ksym __weak;

/*
 * Ingress refusal at max. Only segments with payload are refused: ACKs, SYNs
 * and bare FINs pass, so the connection itself never stalls. A refused
 * segment never reaches TCP; the peer keeps it and sends it again, so
 * nothing is lost. A socket with nothing queued is not refused (up to a
 * slack of max/32), so a full cgroup cannot starve a reader.
 */
struct ingress_walk {
	struct ancestry a;
	__s64 pages;		/* what the segment adds to usage: it and the socket's
				 * backlog (sampled mode: less what is charged) */
	__s64 rmem;		/* the socket's receive memory, bytes */
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
	const struct cgroup_limits *l;
	struct cgroup_usage *u;
	__s64 want, max;
	__u64 id;

	if (!walk_level(&w->a, i, &id))
		return 1;
	/* The entry's copy of the limits, as ingress_near_max(). */
	u = bpf_map_lookup_elem(&cgroup_usage, &id);
	if (!u || !u->limits.max_pages)
		return 0;
	l = &u->limits;
	want = u->usage_pages + w->pages;
	max = max_effective(u, want);
	if (want > max) {
		/* A socket with nothing queued still gets the segment, up to
		 * a small slack past max (the kernel forces memory for an
		 * empty queue too): refused, its peer backs off its
		 * retransmission timer, and while other sockets keep the
		 * cgroup full it might not get a turn for minutes. */
		/* Measured from max itself, not from max less the
		 * writers' reserve: with both ends inside, what the writers
		 * already queued counts in usage and can only drain through
		 * such sockets; a bound under it refused it for good. */
		if (w->rmem == 0 && want <= (__s64)l->max_pages + (__s64)(l->max_pages >> 5))
			return 0;
		__sync_fetch_and_add(&u->failcnt, 1);
		/* Refusing is being at max, though usage stays just under it. */
		cgroup_state_update(id, u, want);
		w->refused = true;
		return 1;
	}
	return 0;
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
 * level is also below its watch point (max_watch_point()), so the next
 * segments may trust this look until enforce_ctl.state_gen moves.
 */
static __always_inline bool ingress_near_max(const struct sock_charge *sc, __u32 levels,
					     __s64 extra, bool *clear)
{
	__u32 n = sc->levels;
	int i;

	*clear = true;
	for (i = 0; i < TCPBUF_MAX_DEPTH; i++) {
		struct cgroup_usage *u;
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
		if (u->state == TCPBUF_STATE_MAX ||
		    u->usage_pages + extra >= reserve_point(u->limits.max_pages))
			return true;
		if (u->max_watch ||
		    u->usage_pages + extra >= max_watch_point(u->limits.max_pages))
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

static __always_inline int ingress_check(struct __sk_buff *skb, __s64 truesize)
{
	struct tcpbuf_enforce_ctl *ctl = enforce_ctl_get();
	struct bpf_sock *bsk = skb->sk;
	struct ingress_walk w = {};
	struct sock_charge *sc;
	struct tcp_sock *tp;
	struct sock *sk;
	__s64 uncharged = 0, with = 0;
	__u32 seq = 0, gen;
	bool near_max, stale, clear;
	int len;

	if (!bsk || !ctl || !ctl->limited_cgroups)
		return 1;
	tp = bpf_skc_to_tcp_sock(bsk);	/* full TCP sockets only */
	if (!tp)
		return 1;
	sk = (struct sock *)tp;
	/* Not armed: every limited ancestor is far, nothing it receives can
	 * matter (tcpbuf_near_next()). */
	sc = sock_armed_charge(sk);
	if (!sc)
		return 1;
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
	/* Every limited level was clear of max at its last look and no
	 * cgroup's usage has come near max since (nor any state or limit
	 * changed): nothing to look up. The lookups were ~110 of a segment's
	 * ~145 ns here. Read before the look that may renew the trust, so a
	 * charge crossing meanwhile leaves it stale. */
	gen = *(volatile __u32 *)&ctl->state_gen;
	if (gen && sc->max_clear_gen == gen && w.pages <= TCPBUF_INGRESS_TRUST_PAGES) {
		near_max = false;
	} else {
		/* The levels its last caps walk found limited (armed sockets
		 * have one at every segment). */
		near_max = ingress_near_max(sc, limited_levels_of(sc, ctl, &stale),
					    uncharged > 0 ? uncharged : 0, &clear);
		if (clear && !near_max && sc->max_clear_gen != gen)
			sc->max_clear_gen = gen;
	}
	/* Nothing to refuse and nothing to charge: the common case of
	 * request/response traffic, a few lookups. */
	if (!near_max && uncharged <= 0)
		return 1;
	len = tcp_payload_len(skb, &seq);
	if (len <= 0)
		return 1;
	if (!tcp_new_data(tp, seq, len))
		return 1;	/* a duplicate: TCP ignores it, nothing to refuse */
	if (near_max) {
		w.rmem = sk->sk_backlog.rmem_alloc.counter;
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
		sample_charge_to(sc, with, SAMPLE_LAZY);
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

/* ---------------------------------------------------------------- sweep */

/* Set by the daemon before each sweep: 1 after a change of limits (any
 * socket swept may have gained a limited ancestor), 0 after state changes
 * (only sockets tcpbufd already sizes are concerned; new ones get their caps
 * when they are established). */
__u32 sweep_all;

/* After state changes, when the daemon has read every change (nothing was
 * dropped from the ring buffer), or after a change of limits to a few
 * cgroups: those cgroups and their descendants. Only their sockets' caps
 * move, and on a host of 100,000 sockets a sweep that sizes every socket of
 * every limited cgroup costs more than the walk itself. */
__u32 sweep_targeted;

/*
 * A target's key: the address of its struct cgroup where the kernel has
 * iter/cgroup (>= 6.1; sweep_by_pointer), else its cgroup id. By address,
 * target_collect() below fills the table with each changed cgroup's subtree
 * and a socket is looked up by the pointer it carries, without reading its
 * cgroup and the cgroup's kernfs node: with 100,000 sockets in 10,000
 * cgroups those two cold lines per socket were most of the sweep's own time.
 * By id, the daemon fills it from its view of the tree.
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
 * the values: the empty asm keeps the loads. Full sweep, 100,000 sockets in
 * 10,000 near cgroups: 81-92 ms before, 71-80 after (docs/PERFORMANCE.md).
 */
static __always_inline void sweep_touch(struct sock *sk, struct tcp_sock *tp)
{
	__u64 a = sk->sk_rcvbuf, b = sk->sk_sndbuf, c = tp->max_window, d = tp->bytes_sent;

	asm volatile("" :: "r"(a), "r"(b), "r"(c), "r"(d));
}

/* cb_flags_set() from an iterator: through setsockopt (kernel >= 6.11). */
static __always_inline void sweep_cb_flags_set(struct tcp_sock *tp, bool armed, bool limited)
{
	int want = cb_flags_wanted(tp->bpf_sock_ops_cb_flags, armed, limited);

	if (want != tp->bpf_sock_ops_cb_flags)
		bpf_setsockopt(tp, SOL_TCP, TCP_BPF_SOCK_OPS_CB_FLAGS, &want, sizeof(want));
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
	struct caps c;
	bool armed, near;
	int counted;

	if (!skc || !sock_ops_connected(skc->skc_state))
		return 0;
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
	if (!sc)
		return 0;
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
	if (c.limited && !near) {
		if (armed)
			caps_release(sk, sk, se);
		sweep_cb_flags_set(tp, false, true);
		return 0;
	}
	enforce_init(sk, se);
	notice_user_change(sk, se);
	caps_apply(sk, sk, &c, se);
	caps_settled_note(sk, tp, se, &c);
	/* Armed before and still limited: its callbacks were set when it was
	 * armed (a cache line of the socket fewer to read). */
	if (armed && c.limited)
		return 0;
	/* Sockets that predate the limits get the per-segment callback too
	 * (TCP_BPF_SOCK_OPS_CB_FLAGS, kernel >= 6.11; older ones: sweeps only). */
	sweep_cb_flags_set(tp, c.limited, c.limited);
	return 0;
}

/*
 * One usage entry, by limits_refresh() below: its copy of its cgroup's
 * limits (what charges move the state against), then the cgroup's state and
 * near or far under them, once per cgroup (a change of limits moves no usage
 * and no socket count, so nothing else would).
 */
static long limits_refresh_one(struct bpf_map *map, __u64 *key, struct cgroup_usage *u, void *ctx)
{
	struct cgroup_limits *l, none = {};
	struct cgroup_sockets *cs;
	__u64 id = *key;	/* lookups want the key on the stack */
	__u32 old, new;

	l = bpf_map_lookup_elem(&cgroup_limits, &id);
	u->limits = l ? *l : none;
	/* Against the new max; the bump after the walk ends old trust. */
	u->max_watch = l && l->max_pages &&
		       u->usage_pages >= max_watch_point(l->max_pages);
	cgroup_state_update(id, u, u->usage_pages);
	/* Near or far under them (far without limits); changes of the socket
	 * count decide where they happen (near_update()). */
	cs = &u->established;
	old = cs->near;
	new = l ? tcpbuf_near_next(old, cs->sockets, sock_bound_pages, l->pressure_pages,
				   l->max_pages) : 0;
	if (new != old)
		__sync_bool_compare_and_swap(&cs->near, old, new);
	return 0;
}

/*
 * Run by the daemon (BPF_PROG_TEST_RUN) after a change of limits, before the
 * sweep. After state changes the states are fresh: the charges that moved
 * usage evaluated them. A raw_tp program walking the map with
 * bpf_for_each_map_elem, not an iter/bpf_map_elem: some 6.18 hosts refuse
 * map iterators at load (EPERM) while they run this.
 */
SEC("raw_tp")
int limits_refresh(void *ctx)
{
	struct tcpbuf_enforce_ctl *ctl;
	__u32 gen;

	bpf_for_each_map_elem(&cgroup_usage, limits_refresh_one, NULL, 0);
	/* Every socket's sock_charge.limited is read anew, and what was
	 * found under the old limits trusted no longer (settled caps,
	 * ingress). */
	ctl = enforce_ctl_get();
	if (ctl) {
		gen = ctl->limits_gen + 1;
		ctl->limits_gen = (__u16)gen ? gen : gen + 1;
		__sync_fetch_and_add(&ctl->state_gen, 1);
	}
	return 0;
}

/* ------------------------------------------------------- sampled mode */

/*
 * Sampled mode sees a writer's queue only when sendmsg returns, and a writer
 * blocked on a full peer may not return for a long time. For sockets of
 * limited subtrees, sample at each round of tcp_sendmsg's copy loop, so the
 * state machine and the ingress check see what is queued (kernel >= 6.2).
 */
SEC("tp_btf/tcp_sendmsg_locked")
int BPF_PROG(sendmsg_sample, const struct sock *csk, const struct msghdr *msg,
	     const struct sk_buff *skb, int size_goal)
{
	struct sock *sk = (struct sock *)csk;

	TIMEHIST_EMPTY(TH_CLOCK);
	TIMEHIST_START();
	/* Every TCP socket on the host passes here: while no cgroup has
	 * limits nothing is ours to do. */
	if (limits_present())
		sample_if_armed(sk);
	TIMEHIST_END(TH_SENDMSG_SAMPLE);
	return 0;
}
