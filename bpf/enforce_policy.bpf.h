/* SPDX-License-Identifier: GPL-2.0 */
/*
 * How big one socket's buffers may be, from the state of every ancestor of
 * its cgroup that has limits: the values are looked up here, the caps come
 * from the policy (tcpbuf_caps_level(), tcpbuf_policy.h) and are applied
 * by the callers. Used by the sock_ops callbacks (new sockets and
 * every incoming segment of a socket in a limited subtree) and by the
 * iter/tcp sweep (existing sockets, right after a state change), so both
 * apply the same caps.
 *
 * Why sk_sndbuf is the lever on the send side: a writer blocked on a peer's
 * zero window queues up to sk_sndbuf inside sendmsg (plus the rest of the
 * skb it is filling), with no hook that could refuse it — tracing programs
 * cannot call bpf_setsockopt, and no segment goes out. So sk_sndbuf is kept
 * low enough *beforehand*: at every callback, sk_sndbuf is at most what the
 * socket has not sent yet plus its share of the headroom (the "guard"), so
 * that once its bytes in flight are acknowledged it can refill no more than
 * that share. The kernel's own
 * autotuning would raise sk_sndbuf between our callbacks, so a socket in a
 * limited subtree has its sk_sndbuf set (locked) from its first callback, and
 * grown here instead, doubling while the writer keeps it full.
 *
 * The receive side has a guard too, on sk_rcvbuf: the free receive space is
 * what the window promises a peer, and it is kept within a reader's share
 * of the headroom to max (tcpbuf_receive_sockets()), so a stall closes
 * windows (TCP resumes at once on the window update when the reader reads)
 * rather than running into cgroup_skb ingress, which refuses what would
 * pass max as the backstop (TCP recovers from that only on its
 * retransmission timer). Far from max the receive guard is above what
 * autotuning reaches and changes nothing.
 */
#ifndef TCPBUF_ENFORCE_POLICY_BPF_H
#define TCPBUF_ENFORCE_POLICY_BPF_H

#include "charge.bpf.h"
#include <bpf/bpf_core_read.h>

#define SOL_SOCKET	1
#define SO_SNDBUF	7
#define SO_RCVBUF	8
#define SOL_TCP		6

/* Set by the daemon before load (src/enforce.c). */
const volatile __u32 accounting_mode = TCPBUF_MODE_SAMPLED;
const volatile __s32 sndbuf_ceiling = 8 << 20;	/* 2 x net.core.wmem_max: most SO_SNDBUF gives */
const volatile __s32 rcvbuf_ceiling = 8 << 20;	/* 2 x net.core.rmem_max */
const volatile __s32 sndbuf_initial = 16 << 10;	/* where a new limited socket starts */
/* The most one socket can hold (tcpbuf_near_next()), in pages. */
const volatile __u64 sock_bound_pages = 2624;

/*
 * The part of the send queue not yet sent, in truesize: what stays queued
 * once every ACK is in. Bytes in flight leave the queue on their ACK and
 * are held, if anywhere here, by a receiver that ingress accounts for; so
 * the room a writer may refill silently is sk_sndbuf minus this, not minus
 * sk_wmem_queued.
 */
static __always_inline __s64 unsent_bytes(const struct sock *sk, const struct tcp_sock *tp)
{
	__u64 wmem = sk->sk_wmem_queued;
	__u32 unsent, queued;

	/* An empty queue (most sockets a sweep sees): the sequence numbers
	 * are two cache lines of the socket it need not read. */
	if (!wmem)
		return 0;
	unsent = tp->write_seq - tp->snd_nxt;
	queued = tp->write_seq - tp->snd_una;
	if (!queued || unsent >= queued)
		return wmem;
	return wmem * unsent / queued;
}

/* The caps one limited ancestor, whose usage entry is @u, imposes. */
static __always_inline void caps_level(struct tcpbuf_caps *c, const struct cgroup_usage *u,
				       __s64 unsent, __s64 rmem, __s64 chunk)
{
	struct tcpbuf_sock_view s = { .unsent = unsent, .rmem = rmem, .chunk = chunk };

	tcpbuf_caps_level(c, u, &s);
}

/*
 * Walks up a socket's cgroup ancestry run under bpf_loop(), whose body the
 * verifier checks once (unrolled, TCPBUF_MAX_DEPTH levels would not fit its
 * budget). The ancestry is
 * the one cached in the socket's sock_charge entry (charge.bpf.h): the
 * programs that size a socket make it for a socket with a limited ancestor,
 * since a socket walked at establishment is walked again at every count,
 * sweep and segment; a socket that carries data gets the entry at its first
 * charge anyway. Without one, only whether it has a limited ancestor is
 * asked (sock_limited_ancestor()).
 */
struct ancestry {
	const struct sock_charge *sc;
};

static __always_inline bool walk_level(struct ancestry *a, __u64 i, __u64 *id)
{
	const struct sock_charge *sc = a->sc;

	if (!sc || i >= TCPBUF_MAX_DEPTH || i >= sc->levels)
		return false;
	*id = sc->ancestors[i];
	return true;
}

/*
 * The levels a walk for limits looks up: those the socket's verdict says are
 * limited, if it holds at @epoch; else all, and *@stale says to note what
 * the walk finds (verdict_note(), TCPBUF_V_MASK): most levels have no
 * limits, and each lookup costs a per-segment pass.
 */
static __always_inline __u32 limited_levels_of(union sock_verdict v, __u32 epoch, bool *stale)
{
	*stale = !tcpbuf_verdict_valid(&v, epoch, TCPBUF_VERDICT_NO_CLOCK, TCPBUF_V_MASK);
	return *stale ? 0xff : v.mask;
}

struct caps_walk {
	struct ancestry a;
	__s64 unsent, rmem, chunk;
	struct tcpbuf_caps c;
	__u32 near;	/* cgroup_sockets.near of the limited levels, or-ed, and
			 * TCPBUF_NEAR_DORMANT for a dormant one */
	__u32 levels;	/* limited_levels_of() */
	__u32 found;	/* the levels that are limited */
};

/* The level @bit of the walk, the cgroup @id: its caps, if it is limited. */
static __always_inline void caps_walk_one(struct caps_walk *w, __u64 id, __u32 bit)
{
	/* Usage, state, limits (its copy) and socket counts in one lookup. */
	struct cgroup_usage *u = bpf_map_lookup_elem(&cgroup_usage, &id);

	if (!usage_limited(u))
		return;
	w->found |= bit;
	caps_level(&w->c, u, w->unsent, w->rmem, w->chunk);
	/* Or-ed in, never branched on: the verifier checks the callback
	 * once, whatever the flag holds. */
	w->near |= u->established.near | u->established.dormant << 2;
}

static long caps_walk_level(__u64 i, void *ctx)
{
	struct caps_walk *w = ctx;
	__u32 bit = 1U << (i & (TCPBUF_MAX_DEPTH - 1));
	__u64 id;

	if (!walk_level(&w->a, i, &id))
		return 1;
	if (w->levels & bit)
		caps_walk_one(w, id, bit);
	return !(w->levels >> (i & (TCPBUF_MAX_DEPTH - 1)) >> 1);	/* none above */
}

struct find_walk {
	struct ancestry a;
	bool found;
};

/* Stops at the first limited level: set only on the way out, the flag never
 * makes the verifier walk the callback again with another state. */
static long find_walk_level(__u64 i, void *ctx)
{
	struct find_walk *w = ctx;
	__u64 id;

	if (!walk_level(&w->a, i, &id))
		return 1;
	if (!usage_limited(bpf_map_lookup_elem(&cgroup_usage, &id)))
		return 0;
	w->found = true;
	return 1;
}

/*
 * Whether some ancestor of a socket without an entry has limits (at its
 * establishment; the sweep's look at a socket it never sized), at any depth:
 * the walk that makes an entry's list (charge.bpf.h), from its own cgroup.
 */
static __always_inline bool sock_limited_ancestor(const struct sock *sk)
{
	struct ancestry_list a = {};

	ancestry_list_limited(&a, sk_cgroup(sk));
	return a.n > 0;
}

/* Whether some ancestor of the socket has limits, near or far; cheaper to
 * verify than caps_compute(). */
static __always_inline bool ancestry_has_limits(struct sock *sk, const struct sock_charge *sc)
{
	struct find_walk w = { .a.sc = sc };

	if (!sc)
		return sock_limited_ancestor(sk);
	if (!limits_present())
		return false;
	bpf_loop(TCPBUF_MAX_DEPTH, find_walk_level, &w, 0);
	return w.found;
}

/* A walk's answer from its levels' or-ed near marks: 1 some level is near
 * (the socket is armed), else TCPBUF_NEAR_DORMANT if one is dormant, else 0. */
static __always_inline int walk_reach(__u32 near)
{
	return near & 1 ? 1 : near & TCPBUF_NEAR_DORMANT;
}

/*
 * Tighten the caps *@c by those of every limited ancestor of the socket
 * whose entry is @sc; whether one of them is near (walk_reach()): the
 * socket is then armed, capped and followed segment by segment. Global, with the starting
 * caps passed through memory, so that the verifier checks it once with *@c
 * unknown instead of once per combination of constants its callers give.
 * @unsent, @rmem, @chunk: the socket's unsent bytes, receive memory and
 * send chunk.
 */
__noinline int caps_walk(struct sock_charge *sc, __s64 unsent, __s64 rmem, __s64 chunk,
			 struct tcpbuf_caps *c)
{
	struct tcpbuf_enforce_ctl *ctl = enforce_ctl_get();
	struct caps_walk w = { .unsent = unsent, .rmem = rmem, .chunk = chunk };
	bool stale;

	if (!c)
		return 0;
	w.c = *c;
	if (ctl && ctl->limited_cgroups) {
		/* Read before any usage: a change after it leaves the
		 * verdict made from this walk stale. */
		w.c.epoch = *(volatile __u32 *)&ctl->epoch;
		w.a.sc = sc;
		w.levels = limited_levels_of(sc ? verdict_of(sc) : (union sock_verdict){},
					     w.c.epoch, &stale);
		/* One limited level, the socket's own cgroup (the common
		 * case): without the loop's calls and spills. */
		if (sc && w.levels == 1 && sc->levels)
			caps_walk_one(&w, sc->ancestors[0], 1);
		else
			bpf_loop(TCPBUF_MAX_DEPTH, caps_walk_level, &w, 0);
		if (stale)
			verdict_note(sc, w.c.epoch, TCPBUF_V_MASK, 0, w.found, 0);
		tcpbuf_rcv_segment_floor(&w.c, w.near);
	}
	*c = w.c;
	return walk_reach(w.near);
}

/* tcp_sock.scaling_ratio (>= 6.7): what share of its free receive buffer,
 * in 256ths, the socket advertises as its window. */
struct tcp_sock___ratio {
	__u8 scaling_ratio;
} __attribute__((preserve_access_index));

static __always_inline __u32 rcv_scaling_ratio(const struct tcp_sock *tp)
{
	const struct tcp_sock___ratio *t = (const void *)tp;

	if (bpf_core_field_exists(t->scaling_ratio))
		return t->scaling_ratio;
	return 128;	/* tcp_adv_win_scale's default: half */
}

/* caps_walk() for the socket @sk (@tp), whose entry is @sc. */
static __always_inline int caps_compute(struct sock *sk, const struct tcp_sock *tp,
					 struct sock_charge *sc, struct tcpbuf_caps *c)
{
	*c = TCPBUF_CAPS_NONE;
	c->rcv_floor_kib = tcpbuf_rcv_floor_kib(tp->advmss, rcv_scaling_ratio(tp));
	return caps_walk(sc, unsent_bytes(sk, tp), sk->sk_backlog.rmem_alloc.counter,
			 tcpbuf_send_chunk(tp->max_window), c);
}

struct count_walk {
	struct ancestry a;
	__s64 sockets, senders;
	__u32 near;	/* as caps_walk's, after the count */
	__u32 wide;	/* the socket's writer may pass tcp_wmem[2] (tcpbuf_sndbuf_wide()) */
};

/*
 * Near or far by its sockets' reach (tcpbuf_near_next()), near by it but
 * dormant while usage is under the guard (tcpbuf_near_guard()): whether it
 * is near, with its dormant mark updated. The entry's copy of its limits.
 */
/* TCPBUF_NEAR_CROWDED or 0 (tcpbuf_crowded_next()). Global: its registers
 * and frame are not the count walk's, which has no stack to spare. */
__noinline int crowded_bit(__u32 near, __s64 sockets, __u64 pressure_pages, __u64 max_pages)
{
	return tcpbuf_crowded_next(near & TCPBUF_NEAR_CROWDED, sockets, pressure_pages,
				   max_pages) ? TCPBUF_NEAR_CROWDED : 0;
}

/* Whether the cgroup of @u is dormant and bounded (near_bounded_share(),
 * and under its bounded guard), bounded before or not (@dormant); global
 * for the same reason. */
__noinline int bounded_next(struct cgroup_usage *u, __u32 dormant)
{
	__s64 sockets, writer;

	if (!u)
		return 0;
	sockets = u->established.sockets;
	writer = guard_writer_pages(u);
	return near_bounded_share(sockets, u->limits.pressure_pages, u->limits.max_pages,
				  writer) > 0 &&
	       near_dormant_next(dormant, true, u->usage_pages, u->limits.pressure_pages,
				 u->limits.max_pages, sockets, writer);
}

/* near_dormant_next() of the cgroup of @u, dormant before or not
 * (@dormant), followed (not bounded), global for the same reason. */
__noinline int dormant_next(struct cgroup_usage *u, __u32 dormant)
{
	if (!u)
		return 0;
	return near_dormant_next(dormant, false, u->usage_pages, u->limits.pressure_pages,
				 u->limits.max_pages, u->established.sockets,
				 guard_writer_pages(u));
}

/* Near now: not dormant any more, cleared after near was set. */
static __always_inline void near_dormant_clear(struct cgroup_sockets *cs)
{
	__u32 was = cs->dormant;

	if (!was)
		return;
	dormant_swap(cs, was, 0);
	if (was & TCPBUF_DORMANT_BOUNDED)
		bounded_epoch_bump();
}

static __always_inline __u32 near_decide(struct cgroup_usage *u, bool grew)
{
	struct cgroup_sockets *cs = &u->established;
	__u32 counted, want;

	counted = tcpbuf_near_next(cs->near | cs->dormant, cs->sockets, sock_bound_pages,
				   u->limits.pressure_pages, u->limits.max_pages);
	/* Bounded is entered only as a socket is counted (its buffers are
	 * the ones it starts with; the epoch's bump below makes every other
	 * socket's ingress look again, and one whose buffers grew takes the
	 * level out at once), and kept while the count fits: a level that
	 * left it stays followed until its count changes. Followed
	 * otherwise, where its guard allows. */
	if (counted && (grew || (cs->dormant & TCPBUF_DORMANT_BOUNDED)) &&
	    bounded_next(u, cs->dormant))
		want = 1 | TCPBUF_DORMANT_BOUNDED;
	else
		want = counted && dormant_next(u, cs->dormant);
	/* A concurrent count decides the same from the same. Stored
	 * before the epoch moves, so an ingress look begun at the old
	 * epoch notes nothing that holds at the new one. Going near,
	 * dormant is cleared only once near is set (near_dormant_clear()):
	 * an entry with both clear reads as far, and a daemon looking then
	 * would unlink what follows its sockets (near_any()). */
	if (want != cs->dormant && (want || !counted)) {
		__u32 was = cs->dormant;

		dormant_swap(cs, was, want);
		if ((want ^ was) & TCPBUF_DORMANT_BOUNDED)
			bounded_epoch_bump();
	} else if (grew && (want & TCPBUF_DORMANT_BOUNDED)) {
		/* One socket more: every socket's share is smaller, so each
		 * looks again at its next segment. */
		bounded_epoch_bump();
	}
	if (!counted || want)
		return 0;
	/* Near, and crowded too (bit 1) where its sockets' floors say so. */
	return 1 | crowded_bit(cs->near, cs->sockets, u->limits.pressure_pages,
			       u->limits.max_pages);
}

/* After a change of its socket count: near or far now (0 also without
 * limits)? A change is told to the daemon, which links what near cgroups
 * need and sweeps the subtree: that arms (or releases) its other sockets;
 * the one that made the change arms itself (sockops_run()). */
/* The event of a change of near (near_update()): global, so that its
 * registers are not the count walk's, which has no stack to spare. */
__noinline int near_event(__u64 id, __s64 sockets, __u32 old, __u32 new)
{
	__u64 wakeup = BPF_RB_NO_WAKEUP;
	struct tcpbuf_state_event *ev;

	ev = bpf_ringbuf_reserve(&enforce_events, sizeof(*ev), 0);
	if (!ev)
		return 0;
	/* The daemon is woken only where it has to act at once: to link what
	 * near cgroups need, or to sweep sockets other than this one (which
	 * arms itself). Far, it waits a second before unlinking anyway. The
	 * rest it reads at its next wake-up or poll: a connection per request
	 * would otherwise wake it twice a connection.
	 * Woken by force: the ring buffer's adaptive wake-up stays silent
	 * while an event not woken for is still unread. */
	if (new && (!near_linked() || sockets > 1))
		wakeup = BPF_RB_FORCE_WAKEUP;
	ev->cgroup_id = id;
	ev->time_ns = bpf_ktime_get_ns();
	ev->usage_pages = sockets;
	ev->threshold_pages = 0;
	ev->old_state = old;
	ev->new_state = new;
	ev->kind = TCPBUF_EVENT_NEAR;
	ev->pad = 0;
	bpf_ringbuf_submit(ev, wakeup);
	return 0;
}

static __always_inline __u32 near_update(__u64 id, struct cgroup_usage *u, bool grew)
{
	struct cgroup_sockets *cs = &u->established;
	__u32 old = cs->near, new, dormant;

	/* The entry's copy of the limits (limits_refresh decides anew after
	 * a change of them). */
	if (!usage_limited(u))
		return 0;
	dormant = cs->dormant;
	new = near_decide(u, grew);
	if (new != old && !near_swap(cs, old, new))
		return cs->near;	/* a concurrent count decided */
	if (new & 1)
		near_dormant_clear(cs);
	/* Sampled mode: dormant now or no longer is told too (as
	 * TCPBUF_NEAR_DORMANT, or far), so the daemon links the samplers that
	 * follow a dormant cgroup's sockets, and unlinks them once none needs
	 * them. */
	dormant = near_guard_followed && dormant != cs->dormant ? cs->dormant : 4;
	if (new == old && dormant == 4)
		return new;
	/* When it turned crowded: the SYN drop waits for the listeners'
	 * pass that long at most (crowd_syn_refused()). */
	cs->crowd_ms = new & ~old & TCPBUF_NEAR_CROWDED ? bpf_ktime_get_ns() / 1000000 : cs->crowd_ms;
	/* Dormant as TCPBUF_NEAR_DORMANT, bounded too as TCPBUF_NEAR_BOUNDED. */
	near_event(id, cs->sockets, old, new | (dormant < 4 ? dormant << 2 : 0));
	return new;
}

static long count_walk_level(__u64 i, void *ctx)
{
	struct count_walk *w = ctx;
	struct cgroup_usage *u;
	__u64 id;

	if (!walk_level(&w->a, i, &id))
		return 1;
	u = bpf_map_lookup_elem(&cgroup_usage, &id);
	if (!u && (w->sockets > 0 || w->senders > 0))
		u = usage_entry_make(w->a.sc, id);
	if (!u)
		return 0;
	if (w->sockets < 0)
		wide_writers_count(u, __sync_fetch_and_add(&u->established.sockets, -1) - 1);
	else if (w->sockets)
		__sync_fetch_and_add(&u->established.sockets, w->sockets);
	if (w->senders)
		__sync_fetch_and_add(&u->established.senders, w->senders);
	if (w->wide && !u->established.wide_writers)
		u->established.wide_writers = 1;
	/* An unknown value, not a constant: the verifier then checks this
	 * callback once, not once per value the caller's flag could hold. */
	w->near |= near_update(id, u, w->sockets > 0) | u->established.dormant << 2;
	return 0;
}

/*
 * Add @sockets and @senders to the counts of every level the socket whose
 * entry is @sc charges, and its writer to their wide ones (@wide); whether
 * a limited one is near after that. Global, as caps_walk(): checked once,
 * and a change of near it tells is an event, not a branch its callers fork
 * on.
 */
__noinline int count_walk(struct sock_charge *sc, __s64 sockets, __s64 senders, int wide)
{
	struct count_walk w = { .a.sc = sc, .sockets = sockets, .senders = senders,
				.wide = !!wide };

	bpf_loop(TCPBUF_MAX_DEPTH, count_walk_level, &w, 0);
	return walk_reach(w.near);
}

/*
 * Count the socket in its subtree (@counted) and as one of its writers
 * (@sender), or stop counting it; the flags remember what was counted, so
 * each is added and removed once. Whether a limited ancestor is near after
 * that, or -1 if nothing changed (and nothing was walked).
 */
static __always_inline int socket_count(struct sock_charge *sc, bool counted, bool sender,
					bool wide)
{
	struct sock_enforce *se = &sc->enforce;
	struct count_walk w = {};

	if (counted != !!(se->flags & TCPBUF_SE_COUNTED))
		w.sockets = counted ? 1 : -1;
	if (sender != !!(se->flags & TCPBUF_SE_SENDER))
		w.senders = sender ? 1 : -1;
	if (!w.sockets && !w.senders)
		return -1;
	if (w.sockets)
		se->flags ^= TCPBUF_SE_COUNTED;
	if (w.senders)
		se->flags ^= TCPBUF_SE_SENDER;
	return count_walk(sc, w.sockets, w.senders, w.sockets > 0 && wide);
}

/* Whether the writer of @tp may pass tcp_wmem[2], the narrow writers'
 * ceiling, as it is counted: by an SO_SNDBUF set before (on it or on its
 * listener), or by its network namespace's own tcp_wmem[2]. Later
 * SO_SNDBUFs are seen as they are set (enforce_setsockopt.bpf.h). */
static __always_inline bool sock_writer_wide(const struct tcp_sock *tp)
{
	const struct sock *sk = (const struct sock *)tp;
	__s64 narrow = (__s64)near_guard_writer_pages << TCPBUF_PAGE_SHIFT;

	if (!near_guard_writer_pages || near_guard_wide_writer_pages <= near_guard_writer_pages)
		return false;
	return sk->sk_sndbuf > narrow ||
	       sk->__sk_common.skc_net.net->ipv4.sysctl_tcp_wmem[2] > narrow;
}

/* A socket of a limited subtree (near or far) counts; a writer once it sent. */
static __always_inline int socket_count_update(struct sock_charge *sc, const struct tcp_sock *tp,
					       bool limited)
{
	/* Once a writer, always one: bytes_sent is read only until then. */
	return socket_count(sc, limited, limited && ((sc->enforce.flags & TCPBUF_SE_SENDER) ||
						     tp->bytes_sent > 0),
			    !(sc->enforce.flags & TCPBUF_SE_COUNTED) && sock_writer_wide(tp));
}

/* First sight of a socket: remember what its application chose itself. */
static __always_inline void enforce_init(struct sock *sk, struct sock_enforce *se)
{
	__u8 locks = BPF_CORE_READ_BITFIELD(sk, sk_userlocks);

	if (se->flags & TCPBUF_SE_LIMITED)
		return;
	if (!(se->flags & TCPBUF_SE_SNDBUF_SET) && (locks & TCPBUF_SNDBUF_LOCK)) {
		se->user_locks |= TCPBUF_SNDBUF_LOCK;
		se->user_sndbuf = sk->sk_sndbuf;
	}
	if (!(se->flags & TCPBUF_SE_RCVBUF_SET) && (locks & TCPBUF_RCVBUF_LOCK)) {
		se->user_locks |= TCPBUF_RCVBUF_LOCK;
		se->user_rcvbuf = sk->sk_rcvbuf;
	}
}

/* An application that sets SO_*BUF after we did: its value wins from now on. */
static __always_inline void notice_user_change(struct sock *sk, struct sock_enforce *se)
{
	if ((se->flags & TCPBUF_SE_SNDBUF_SET) && sk->sk_sndbuf != se->set_sndbuf) {
		se->user_locks |= TCPBUF_SNDBUF_LOCK;
		se->user_sndbuf = sk->sk_sndbuf;
		se->flags &= ~TCPBUF_SE_SNDBUF_SET;
	}
	if ((se->flags & TCPBUF_SE_RCVBUF_SET) && sk->sk_rcvbuf != se->set_rcvbuf) {
		se->user_locks |= TCPBUF_RCVBUF_LOCK;
		se->user_rcvbuf = sk->sk_rcvbuf;
		se->flags &= ~TCPBUF_SE_RCVBUF_SET;
	}
}

/* The sk_sndbuf this socket should have now (tcpbuf_sndbuf_target()). */
static __always_inline __s64 sndbuf_target(struct sock *sk, const struct tcpbuf_caps *c,
					   const struct sock_enforce *se)
{
	return tcpbuf_sndbuf_target(c, se, sk->sk_sndbuf, sk->sk_wmem_queued, sndbuf_ceiling,
				    sndbuf_initial);
}

/* The sk_rcvbuf this socket should have now; -1 leaves it alone. */
static __always_inline __s64 rcvbuf_target(struct sock *sk, const struct tcpbuf_caps *c,
					   const struct sock_enforce *se)
{
	return tcpbuf_rcvbuf_target(c, se, sk->sk_rcvbuf, rcvbuf_ceiling);
}

/*
 * A socket whose caps cannot change soon (tcpbuf_caps_settled()) has them
 * recomputed only about once a millisecond, or at once when something only
 * a full pass handles happens (caps_still_settled()).
 */
static __always_inline __u16 settled_now(const struct tcp_sock *tp)
{
	return tcpbuf_settled_clock(tp->tcp_mstamp);
}

/* The verdict of the pass that found the caps @c of @sk (entry @sc). */
static __always_inline void caps_settled_note(struct sock *sk, const struct tcp_sock *tp,
					      struct sock_charge *sc, const struct tcpbuf_caps *c)
{
	__u32 set = 0;

	if (tcpbuf_caps_settled(c, sndbuf_ceiling, rcvbuf_ceiling))
		set = TCPBUF_V_SETTLED |
		      (tcpbuf_snd_at_cap(c->snd, sk->sk_sndbuf) ? TCPBUF_V_SND_AT_CAP : 0);
	verdict_note(sc, c->epoch, set, TCPBUF_V_SETTLED | TCPBUF_V_SND_AT_CAP, 0,
		     settled_now(tp));
}

/* Whether a per-segment callback may skip the full pass (see above). */
static __always_inline bool caps_still_settled(struct sock *sk, const struct tcp_sock *tp,
					       const struct sock_charge *sc)
{
	const struct sock_enforce *se = &sc->enforce;
	union sock_verdict v = verdict_of(sc);
	__u32 f = se->flags;

	/* Some limited cgroup changed state since (or limits, or usage came
	 * near max): caps lift (or tighten) at this segment, not a
	 * millisecond later; a cgroup flapping at a threshold needs its
	 * writers' caps lifted the moment it eases. */
	if (!tcpbuf_verdict_has(&v, TCPBUF_V_SETTLED) ||
	    !tcpbuf_verdict_valid(&v, epoch_now(), settled_now(tp), TCPBUF_V_SETTLED))
		return false;
	/* The application set a size: remembered by the full pass. */
	if (((f & TCPBUF_SE_SNDBUF_SET) && sk->sk_sndbuf != se->set_sndbuf) ||
	    ((f & TCPBUF_SE_RCVBUF_SET) && sk->sk_rcvbuf != se->set_rcvbuf))
		return false;
	/* Its writer keeps sk_sndbuf half full: the full pass grows it, unless
	 * it is at its cap. */
	if (!(v.bits & TCPBUF_V_SND_AT_CAP) && sk->sk_wmem_queued >= sk->sk_sndbuf >> 1 &&
	    sk->sk_sndbuf < sndbuf_ceiling)
		return false;
	/* It just became one of the subtree's writers: counted there. */
	return (f & TCPBUF_SE_SENDER) || !tp->bytes_sent;
}

#endif /* TCPBUF_ENFORCE_POLICY_BPF_H */
