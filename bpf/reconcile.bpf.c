// SPDX-License-Identifier: GPL-2.0
/*
 * Walk every TCP socket and set its charge to its footprint. In sampled mode
 * the daemon runs this periodically and before it answers status; in exact
 * mode it runs once at a fresh start, to adopt the sockets that existed
 * before the fentry/fexit hooks were attached, and settle_tcp before status.
 */
#include "charge.bpf.h"

char LICENSE[] SEC("license") = "GPL";

#define TCP_TIME_WAIT	6
#define TCP_NEW_SYN_RECV 12

/* The iterator's socket if it is a full one: time-wait and request sockets
 * hold no buffers and never carry an entry. */
static __always_inline struct sock *iter_full_sock(struct sock_common *skc)
{
	if (!skc || skc->skc_state == TCP_TIME_WAIT || skc->skc_state == TCP_NEW_SYN_RECV)
		return NULL;
	return (struct sock *)bpf_skc_to_tcp_sock(skc);
}

SEC("iter/tcp")
int reconcile_tcp(struct bpf_iter__tcp *ctx)
{
	struct sock *sk = iter_full_sock(ctx->sk_common);

	if (!sk)
		return 0;
	/* Holding nothing and no socket storage at all, so nothing charged:
	 * most sockets of a busy host, skipped without the storage lookup. */
	if (!sk->sk_bpf_storage && !sk_footprint_pages(sk))
		return 0;
	sample_socket(sk, SAMPLE_EXACT);
	return 0;
}

/* Exact mode, before a status: every socket's kept pages given back
 * (charge.bpf.h), so that its cgroups hold what the kernel charged. */
SEC("iter/tcp")
int settle_tcp(struct bpf_iter__tcp *ctx)
{
	struct sock *sk = iter_full_sock(ctx->sk_common);
	struct sock_charge *sc;

	if (!sk || !sk->sk_bpf_storage)
		return 0;
	sc = bpf_sk_storage_get(&sock_charge, sk, NULL, 0);
	if (sc)
		exact_settle(sc);
	return 0;
}

/*
 * The number of TCP sockets that carry a socket-storage entry: lets the
 * daemon show how many sockets hold tcpbufd state, and tests prove none are
 * left behind (bpftool cannot dump socket storage). Written once, at the
 * walk's end (no socket): an output per socket would make each read resume
 * the walk. A walk of the sockets, not an iter/bpf_sk_storage_map: some 6.18
 * hosts refuse map iterators at load (EPERM). An entry dies with its socket.
 */
__u64 sock_charges_counted;

SEC("iter/tcp")
int count_sock_charges(struct bpf_iter__tcp *ctx)
{
	struct sock *sk;
	__u64 n;

	if (ctx->meta->seq_num == 0)
		sock_charges_counted = 0;
	if (!ctx->sk_common) {
		n = sock_charges_counted;
		bpf_seq_write(ctx->meta->seq, &n, sizeof(n));
		return 0;
	}
	sk = iter_full_sock(ctx->sk_common);
	if (sk && sk->sk_bpf_storage && bpf_sk_storage_get(&sock_charge, sk, NULL, 0))
		sock_charges_counted++;
	return 0;
}
