/* SPDX-License-Identifier: GPL-2.0 */
/*
 * enforce_rest: where a bounded cgroup's buffers grow while its ingress
 * rests (sampled mode, kernel >= 6.17; the daemon unlinks ingress at a
 * topmost limited cgroup whose sockets are all bounded, so a request/response
 * load pays no cgroup_skb dispatch: docs/ENFORCEMENT.md). Ingress is what
 * notices a bounded socket growing past its share; without it, growth is
 * seen where it is decided: autotuning at tcp_rcvbuf_grow, SO_RCVBUF and
 * SO_RCVLOWAT at setsockopt (SO_SNDBUF widens the guard as before,
 * enforce_setsockopt).
 * Either takes the socket's levels out of bounded, charges what the socket
 * holds, and wakes the daemon (bounded_epoch_bump()), which links ingress
 * and the samplers again.
 */
#ifndef TCPBUF_ENFORCE_REST_BPF_H
#define TCPBUF_ENFORCE_REST_BPF_H

#include "enforce_ingress.bpf.h"
#include <bpf/bpf_tracing.h>

#define SO_RCVBUFFORCE	33
#define SO_RCVLOWAT	18
#define SOCK_RCVBUF_LOCK_BIT	2
#define TCP_RMEM_TO_WIN_SCALE	8

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

/*
 * Autotuning: tcp_rcv_space_adjust() fires this before tcp_rcvbuf_grow()
 * raises sk_rcvbuf, by a factor that kernels keep changing, up to
 * tcp_rmem[2] of the socket's namespace: taken as that. A bounded socket
 * whose reader keeps up so well that autotuning grows it leaves bounded.
 */
SEC("tp_btf/tcp_rcvbuf_grow")
int BPF_PROG(rest_rcvbuf_grow, struct sock *sk, int time)
{
	__s64 cap;

	if (!ingress_resting() || (BPF_CORE_READ_BITFIELD(sk, sk_userlocks) & SOCK_RCVBUF_LOCK_BIT))
		return 0;
	cap = BPF_CORE_READ(sk, __sk_common.skc_net.net, ipv4.sysctl_tcp_rmem[2]);
	rest_rcvbuf_check(bpf_sk_storage_get(&sock_charge, sk, 0, 0), sk,
			  cap > 0 ? cap : TCPBUF_BOUNDED_SHARE_MAX);
	return 0;
}

/* SO_RCVBUF(FORCE) and SO_RCVLOWAT, before the kernel applies them
 * (enforce_setsockopt). */
static __always_inline void rest_setsockopt(struct bpf_sockopt *ctx, int val)
{
	struct bpf_sockopt_kern___rest *k;
	__s64 rcvbuf = 2 * (__s64)val, max;

	if (!crowd_kern_ctx || !ingress_resting() || val <= 0)
		return;
	k = bpf_cast_to_kern_ctx(ctx);
	if (!k->sk || !ctx->sk)
		return;
	max = rcvbuf_max_of(k->sk);
	if (ctx->optname == SO_RCVLOWAT) {
		if (BPF_CORE_READ_BITFIELD(k->sk, sk_userlocks) & SOCK_RCVBUF_LOCK_BIT)
			return;
		rcvbuf = rcvlowat_rcvbuf(k->sk, val);
	} else if (ctx->optname == SO_RCVBUF && max > 0 && rcvbuf > max) {
		rcvbuf = max;
	}
	rest_rcvbuf_check(bpf_sk_storage_get(&sock_charge, ctx->sk, 0, 0), k->sk, rcvbuf);
}

#endif /* TCPBUF_ENFORCE_REST_BPF_H */
