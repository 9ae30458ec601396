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

/* The number of socket-storage entries: lets the daemon show how many
 * sockets carry tcpbufd state, and tests prove none are left behind (bpftool
 * cannot dump socket storage). Written once, at the end of the walk (no
 * value), where seq_num is how many entries it went through: an output per
 * entry fills the read buffer every few thousand, and each read resumes the
 * walk from the head of its bucket (a socket-storage map has as many buckets
 * as CPUs), which made counting 100,000 entries take 228 ms. */
SEC("iter/bpf_sk_storage_map")
int count_sock_charges(struct bpf_iter__bpf_sk_storage_map *ctx)
{
	__u64 n = ctx->meta->seq_num;

	if (!ctx->value)
		bpf_seq_write(ctx->meta->seq, &n, sizeof(n));
	return 0;
}
