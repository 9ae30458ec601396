// SPDX-License-Identifier: GPL-2.0
/*
 * Walk every TCP socket and set its charge to its footprint. In sampled mode
 * the daemon runs this periodically and before it answers status; in exact
 * mode it runs once at a fresh start, to adopt the sockets that existed
 * before the fentry/fexit hooks were attached.
 */
#include "charge.bpf.h"

char LICENSE[] SEC("license") = "GPL";

#define TCP_TIME_WAIT	6
#define TCP_NEW_SYN_RECV 12

SEC("iter/tcp")
int reconcile_tcp(struct bpf_iter__tcp *ctx)
{
	struct sock_common *skc = ctx->sk_common;
	struct tcp_sock *tp;
	struct sock *sk;

	if (!skc)
		return 0;
	/* Time-wait and request sockets hold no buffers and are not full sockets. */
	if (skc->skc_state == TCP_TIME_WAIT || skc->skc_state == TCP_NEW_SYN_RECV)
		return 0;
	tp = bpf_skc_to_tcp_sock(skc);
	if (!tp)
		return 0;
	sk = (struct sock *)tp;
	/* Holding nothing and no socket storage at all, so nothing charged:
	 * most sockets of a busy host, skipped without the storage lookup. */
	if (!sk->sk_bpf_storage && !sk_footprint_pages(sk))
		return 0;
	sample_socket(sk, SAMPLE_EXACT);
	return 0;
}

/*
 * The number of TCP sockets that carry a socket-storage entry: lets the
 * daemon show how many sockets hold tcpbufd state, and tests prove none are
 * left behind (bpftool cannot dump socket storage). Written once, at the
 * walk's end (no socket): an output per socket would make each read resume
 * the walk. A walk of the sockets, not an iter/bpf_sk_storage_map: some 6.18
 * hosts refuse map iterators at load (EPERM). Time-wait and request sockets
 * never carry one; an entry dies with its socket.
 */
__u64 sock_charges_counted;

SEC("iter/tcp")
int count_sock_charges(struct bpf_iter__tcp *ctx)
{
	struct sock_common *skc = ctx->sk_common;
	struct tcp_sock *tp;
	struct sock *sk;
	__u64 n;

	if (ctx->meta->seq_num == 0)
		sock_charges_counted = 0;
	if (!skc) {
		n = sock_charges_counted;
		bpf_seq_write(ctx->meta->seq, &n, sizeof(n));
		return 0;
	}
	if (skc->skc_state == TCP_TIME_WAIT || skc->skc_state == TCP_NEW_SYN_RECV)
		return 0;
	tp = bpf_skc_to_tcp_sock(skc);
	if (!tp)
		return 0;
	sk = (struct sock *)tp;
	if (sk->sk_bpf_storage && bpf_sk_storage_get(&sock_charge, sk, NULL, 0))
		sock_charges_counted++;
	return 0;
}
