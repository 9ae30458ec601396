/* SPDX-License-Identifier: GPL-2.0 */
/*
 * enforce_rest: where a bounded cgroup's buffers grow while its ingress
 * rests (sampled mode, kernel >= 6.17; the daemon unlinks ingress at a
 * topmost limited cgroup whose sockets are all bounded, so a request/response
 * load pays no cgroup_skb dispatch: docs/ENFORCEMENT.md). Ingress is what
 * notices a bounded socket growing past its share; without it, growth is
 * seen where it is decided: autotuning at tcp_rcvbuf_grow, SO_RCVBUF and
 * SO_RCVLOWAT at setsockopt (SO_SNDBUF widens the guard as before,
 * enforce_setsockopt). Either takes the socket's levels out of bounded,
 * charges what the socket holds, and wakes the daemon (bounded_epoch_bump()),
 * which links ingress and the samplers again. Out-of-order data grows
 * sk_rcvbuf past any tracepoint (tcp_data_queue_ofo()), so before ingress
 * goes each bounded socket's sk_rcvbuf is locked at its size (rest_locks);
 * autotuning still asks through the tracepoint, and the daemon then doubles
 * it, as autotuning would have (rest_raise_size()).
 */
#ifndef TCPBUF_ENFORCE_REST_BPF_H
#define TCPBUF_ENFORCE_REST_BPF_H

#include "enforce_ingress.bpf.h"
#include <bpf/bpf_tracing.h>

#define SO_RCVBUFFORCE	33
#define SO_RCVLOWAT	18
#define SO_BUF_LOCK	72
#define SOCK_RCVBUF_LOCK_BIT	2
#define TCP_RMEM_TO_WIN_SCALE	8

/* Whether the socket of @sc is in a resting top: its farthest limited
 * ancestor (ancestors[], nearest first) is one. */
static __always_inline bool sock_top_rests(struct sock_charge *sc)
{
	__u32 n = sc->levels;

	if (!n || n > TCPBUF_MAX_DEPTH)
		return false;
	return bpf_map_lookup_elem(&rest_tops, &sc->ancestors[(n - 1) & (TCPBUF_MAX_DEPTH - 1)]);
}

/* Set by the daemon: twice net.core.rmem_max, the most SO_RCVBUF gives
 * where that is the host's. */
const volatile __s64 rest_rcvbuf_max = 0;

struct bpf_sockopt_kern___rest {
	struct sock *sk;
} __attribute__((preserve_access_index));

/* Kernels where net.core.rmem_max is per network namespace. */
struct netns_core___rmem {
	int sysctl_rmem_max;
} __attribute__((preserve_access_index));

/* The most SO_RCVBUF gives a socket of @sk's network namespace. */
static __always_inline __s64 rcvbuf_max_of(struct sock *sk)
{
	struct netns_core___rmem *core = NULL;

	if (!bpf_core_field_exists(core->sysctl_rmem_max))
		return rest_rcvbuf_max;
	core = (void *)&sk->__sk_common.skc_net.net->core;
	return 2 * (__s64)BPF_CORE_READ(core, sysctl_rmem_max);
}

/* The sk_rcvbuf SO_RCVLOWAT of @val gives an unlocked socket @sk: what
 * holds that much window, @val at most half tcp_rmem[2] of its namespace
 * (tcp_set_rcvlowat(), tcp_space_from_win()). */
static __always_inline __s64 rcvlowat_rcvbuf(struct sock *sk, int val)
{
	__s64 half = BPF_CORE_READ(sk, __sk_common.skc_net.net, ipv4.sysctl_tcp_rmem[2]) >> 1;
	struct tcp_sock___ratio *t = (void *)sk;
	__u32 ratio = bpf_core_field_exists(t->scaling_ratio) ? BPF_CORE_READ(t, scaling_ratio) : 128;
	__u64 win = val < half ? val : half;

	return (__s64)((win << TCP_RMEM_TO_WIN_SCALE) / (ratio ? ratio : 1));
}

static __always_inline bool ingress_resting(void)
{
	struct tcpbuf_enforce_ctl *ctl = enforce_ctl_get();

	return ctl && *(volatile __u32 *)&ctl->ingress_rests;
}

/* A followed socket (@sk, its entry @sc) whose receive buffer is about to
 * be @rcvbuf bytes: past the share its last bounded look found, its levels
 * leave bounded now. */
static __always_inline void rest_rcvbuf_check(struct sock_charge *sc, struct sock *sk,
					      __s64 rcvbuf)
{
	if (!sc || !(sc->enforce.flags & TCPBUF_SE_FOLLOWED) || rcvbuf <= sc->bounded_rcvbuf)
		return;
	if (!bounded_look(sc, rcvbuf, sock_bounded_ok(sk, TCPBUF_BOUNDED_SHARE_MAX)))
		bounded_left_charge(sc, sk_footprint_pages(sk));
}

/* What a rest-locked socket @sk is raised to when autotuning asks: twice
 * its size, as autotuning's slow start would, up to where autotuning stops
 * (tcp_rmem[2] of its namespace) within what SO_RCVBUF gives. */
static __always_inline __s64 rest_raise_size(struct sock *sk)
{
	__s64 cap = BPF_CORE_READ(sk, __sk_common.skc_net.net, ipv4.sysctl_tcp_rmem[2]);
	__s64 max = rcvbuf_max_of(sk), want = 2 * (__s64)sk->sk_rcvbuf;

	if (max > 0 && max < cap)
		cap = max;
	return want < cap ? want : cap;
}

/*
 * Autotuning: tcp_rcv_space_adjust() fires this before tcp_rcvbuf_grow()
 * raises sk_rcvbuf, by a factor that kernels keep changing, up to
 * tcp_rmem[2] of the socket's namespace: taken as that. A bounded socket
 * whose reader keeps up so well that autotuning grows it leaves bounded.
 * A rest-locked one asks the daemon to raise it, rested or not: the lock
 * outlives the rest.
 */
SEC("tp_btf/tcp_rcvbuf_grow")
int BPF_PROG(rest_rcvbuf_grow, struct sock *sk, int time)
{
	struct sock_charge *sc = bpf_sk_storage_get(&sock_charge, sk, 0, 0);
	__s64 cap;

	if (sc && (sc->enforce.flags & TCPBUF_SE_REST_LOCK)) {
		if (!(sc->enforce.flags & TCPBUF_SE_REST_RAISE)) {
			sc->enforce.flags |= TCPBUF_SE_REST_RAISE;
			rest_rcvbuf_check(sc, sk, rest_raise_size(sk));
			rest_wake(TCPBUF_EVENT_REST_RAISE,
				  BPF_CORE_READ(sk, __sk_common.skc_net.net, ns.inum));
		}
		return 0;
	}
	if (!ingress_resting() || (BPF_CORE_READ_BITFIELD(sk, sk_userlocks) & SOCK_RCVBUF_LOCK_BIT))
		return 0;
	cap = BPF_CORE_READ(sk, __sk_common.skc_net.net, ipv4.sysctl_tcp_rmem[2]);
	rest_rcvbuf_check(sc, sk, cap > 0 ? cap : TCPBUF_BOUNDED_SHARE_MAX);
	return 0;
}

/* Set by the daemon before its last pass: every rest lock goes. */
bool rest_release_all = false;

/*
 * Run by the daemon (src/enforce_rest.c): before ingress goes, each followed
 * socket of a resting top (rest_tops) that is bounded, not locked and not
 * armed gets SO_RCVBUF of its own size, which locks it (past what SO_RCVBUF
 * gives, at that);
 * a rest-locked socket autotuning asked to grow is raised (rest_raise_size();
 * an armed one's caps clamp it again at its next callback); at the daemon's
 * stop every rest lock is raised as far as it goes.
 */
SEC("iter/tcp")
int rest_locks(struct bpf_iter__tcp *ctx)
{
	struct sock_common *skc = ctx->sk_common;
	struct sock_charge *sc;
	struct tcp_sock *tp;
	struct sock *sk;
	__s64 want;
	int val;

	if (!skc || skc->skc_state == BPF_TCP_LISTEN || !(tp = bpf_skc_to_tcp_sock(skc)))
		return 0;
	sk = (struct sock *)tp;
	sc = bpf_sk_storage_get(&sock_charge, sk, 0, 0);
	if (!sc)
		return 0;
	if (sc->enforce.flags & TCPBUF_SE_REST_LOCK &&
	    (rest_release_all || sc->enforce.flags & TCPBUF_SE_REST_RAISE)) {
		sc->enforce.flags &= ~TCPBUF_SE_REST_RAISE;
		want = rest_raise_size(sk);
		if (rest_release_all) {
			sc->enforce.flags &= ~TCPBUF_SE_REST_LOCK;
			want = rcvbuf_max_of(sk);
		}
		val = want >> 1;
		if (want > sk->sk_rcvbuf)
			bpf_setsockopt(sk, SOL_SOCKET, SO_RCVBUF, &val, sizeof(val));
		return 0;
	}
	if (rest_release_all || !ingress_resting() ||
	    (sc->enforce.flags & (TCPBUF_SE_REST_LOCK | TCPBUF_SE_LIMITED)) ||
	    !(sc->enforce.flags & TCPBUF_SE_FOLLOWED) ||
	    (BPF_CORE_READ_BITFIELD(sk, sk_userlocks) & SOCK_RCVBUF_LOCK_BIT) ||
	    !sock_top_rests(sc))
		return 0;
	if (!bounded_look(sc, sk->sk_rcvbuf, sock_bounded_ok(sk, TCPBUF_BOUNDED_SHARE_MAX)))
		return 0;
	/* At most what SO_RCVBUF gives: a buffer autotuning grew past that
	 * shrinks to it. */
	want = rcvbuf_max_of(sk);
	val = (want > 0 && want < sk->sk_rcvbuf ? want : sk->sk_rcvbuf) >> 1;
	if (bpf_setsockopt(sk, SOL_SOCKET, SO_RCVBUF, &val, sizeof(val))) {
		rest_rcvbuf_check(sc, sk, TCPBUF_BOUNDED_SHARE_MAX);
		return 0;
	}
	sc->enforce.flags |= TCPBUF_SE_REST_LOCK;
	return 0;
}

/* SO_RCVBUF(FORCE), SO_RCVLOWAT and SO_BUF_LOCK, before the kernel applies
 * them (enforce_setsockopt). The application's own size or lock replaces a
 * rest lock. */
static __always_inline void rest_setsockopt(struct bpf_sockopt *ctx, int val)
{
	struct bpf_sockopt_kern___rest *k;
	struct sock_charge *sc;
	__s64 rcvbuf = 2 * (__s64)val, max;

	if (!ctx->sk)
		return;
	sc = bpf_sk_storage_get(&sock_charge, ctx->sk, 0, 0);
	if (sc && ctx->optname != SO_RCVLOWAT &&
	    (ctx->optname != SO_BUF_LOCK || !(val & SOCK_RCVBUF_LOCK_BIT)))
		sc->enforce.flags &= ~(TCPBUF_SE_REST_LOCK | TCPBUF_SE_REST_RAISE);
	if (!crowd_kern_ctx || !ingress_resting() || (val <= 0 && ctx->optname != SO_BUF_LOCK))
		return;
	k = bpf_cast_to_kern_ctx(ctx);
	if (!k->sk)
		return;
	max = rcvbuf_max_of(k->sk);
	if (ctx->optname == SO_BUF_LOCK) {
		/* Unlocked: autotuning may take it to tcp_rmem[2]. */
		if (val & SOCK_RCVBUF_LOCK_BIT)
			return;
		rcvbuf = BPF_CORE_READ(k->sk, __sk_common.skc_net.net, ipv4.sysctl_tcp_rmem[2]);
	} else if (ctx->optname == SO_RCVLOWAT) {
		if (BPF_CORE_READ_BITFIELD(k->sk, sk_userlocks) & SOCK_RCVBUF_LOCK_BIT)
			return;
		rcvbuf = rcvlowat_rcvbuf(k->sk, val);
	} else if (ctx->optname == SO_RCVBUF && max > 0 && rcvbuf > max) {
		rcvbuf = max;
	}
	rest_rcvbuf_check(sc, k->sk, rcvbuf);
}

#endif /* TCPBUF_ENFORCE_REST_BPF_H */
