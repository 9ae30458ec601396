/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Wide writers (sampled mode). A dormant cgroup's guard leaves each socket
 * room for the largest send queue its writer can reach before the sweep
 * arms it: tcp_wmem[2], where autotuning stops, unless one of the cgroup's
 * writers asked SO_SNDBUF for more (cgroup_sockets.wide_writers, then twice
 * wmem_max). A socket is looked at as it is counted (sock_writer_wide()),
 * and here as SO_SNDBUF is set on it later: before the kernel applies it,
 * so no write can use the larger buffer while its cgroups still keep the
 * narrow guard. SO_RCVBUF, SO_RCVLOWAT and SO_BUF_LOCK: enforce_rest.bpf.h. Runs for
 * setsockopt(2) calls, never for segments.
 */
#ifndef TCPBUF_ENFORCE_SETSOCKOPT_BPF_H
#define TCPBUF_ENFORCE_SETSOCKOPT_BPF_H

#include "enforce_rest.bpf.h"

#define SO_SNDBUFFORCE	32
#define TCPBUF_SOCKOPT_PAGE	4096

SEC("cgroup/setsockopt")
int enforce_setsockopt(struct bpf_sockopt *ctx)
{
	struct bpf_sock *sk = ctx->sk;
	struct sock_charge *sc;
	int *val = ctx->optval;

	if (ctx->level == SOL_SOCKET &&
	    (ctx->optname == SO_RCVBUF || ctx->optname == SO_RCVBUFFORCE ||
	     ctx->optname == SO_RCVLOWAT || ctx->optname == SO_BUF_LOCK) && sk &&
	    sk->protocol == IPPROTO_TCP_PROTO && (void *)(val + 1) <= ctx->optval_end) {
		rest_setsockopt(ctx, *val);
		goto out;
	}
	if (ctx->level != SOL_SOCKET ||
	    (ctx->optname != SO_SNDBUF && ctx->optname != SO_SNDBUFFORCE) ||
	    near_guard_wide_writer_pages <= near_guard_writer_pages || !sk ||
	    sk->protocol != IPPROTO_TCP_PROTO || (void *)(val + 1) > ctx->optval_end)
		goto out;
	if (!tcpbuf_sndbuf_wide(*val, ctx->optname == SO_SNDBUFFORCE, near_guard_wmem_max,
				(__s64)near_guard_writer_pages << TCPBUF_PAGE_SHIFT))
		goto out;
	/* Not yet seen (not connected): counting it will see its sk_sndbuf. */
	sc = bpf_sk_storage_get(&sock_charge, sk, 0, 0);
	if (sc)
		count_walk(sc, 0, 0, 1);
out:
	/* The kernel's copy holds only a page: past that, the caller's own. */
	if (ctx->optlen > TCPBUF_SOCKOPT_PAGE)
		ctx->optlen = 0;
	return 1;
}

#endif /* TCPBUF_ENFORCE_SETSOCKOPT_BPF_H */
