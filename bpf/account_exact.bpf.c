// SPDX-License-Identifier: GPL-2.0
/*
 * Exact accounting: hook the three functions through which the kernel moves
 * socket memory between a socket and the protocol's memory_allocated (and
 * memcg). Counting what they move, per socket, gives the same pages the
 * kernel charges — no sampling, no drift.
 */
#include "charge.bpf.h"
#include <bpf/bpf_tracing.h>

char LICENSE[] SEC("license") = "GPL";

/* int __sk_mem_raise_allocated(struct sock *sk, int size, int amt, int kind):
 * amt pages were added to memory_allocated; on failure the function itself
 * takes them back and returns 0, so only a non-zero return is a charge. */
SEC("fexit/__sk_mem_raise_allocated")
int BPF_PROG(raise_allocated, struct sock *sk, int size, int amt, int kind, int ret)
{
	if (ret)
		charge_socket(sk, amt);
	return 0;
}

/* void __sk_mem_reduce_allocated(struct sock *sk, int amount): amount pages
 * go back; this is also the last call of a socket's life (sk_mem_reclaim_final). */
SEC("fentry/__sk_mem_reduce_allocated")
int BPF_PROG(reduce_allocated, struct sock *sk, int amount)
{
	charge_socket(sk, -(__s64)amount);
	return 0;
}

/*
 * A socket's charge cannot outlive it. An uncharge the hooks above miss
 * stays charged to the socket's cgroups for good, and they can miss one: a
 * trampoline skips a run of its program nested in a run already on the same
 * CPU (a softirq's TCP work interrupting it in process context). 9 or 18
 * pages stayed after every socket had closed in about one 6.1 guest run in
 * ten (test_exact; emulated, so programs run long). At the start of the
 * socket's destruction its charge goes to 0; the reduces of the memory TCP
 * frees after it then find nothing charged (charge_socket() clamps).
 */
SEC("tp_btf/tcp_destroy_sock")
int BPF_PROG(destroy_sock, struct sock *sk)
{
	sock_uncount_destroyed(sk);
	sample_socket_to(sk, 0, SAMPLE_EXACT);
	sock_fallback_release(sk);
	return 0;
}

#ifndef TCPBUF_BREAK_FORCED_HOOK
/* void sk_forced_mem_schedule(struct sock *sk, int size): TCP charges here
 * directly (FIN, RST, retransmits under pressure), bypassing
 * __sk_mem_raise_allocated. Read sk_forward_alloc at entry: the function
 * charges ceil((size - sk_forward_alloc) / PAGE_SIZE) pages when positive. */
SEC("fentry/sk_forced_mem_schedule")
int BPF_PROG(forced_mem_schedule, struct sock *sk, int size)
{
	int delta = size - sk->sk_forward_alloc;

	if (delta > 0)
		charge_socket(sk, (delta + TCPBUF_PAGE_SIZE - 1) >> TCPBUF_PAGE_SHIFT);
	return 0;
}
#endif
