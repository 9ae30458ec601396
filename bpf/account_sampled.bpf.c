// SPDX-License-Identifier: GPL-2.0
/*
 * Sampled accounting, for kernels that refuse trampolines (fentry/fexit):
 * at a few per-syscall and per-socket tracepoints, set the socket's charge to
 * its footprint (forward_alloc + wmem_queued + rmem_alloc, the pages the
 * kernel holds for it), keeping the last page of a shrinking footprint.
 * Between samples, and for every socket not armed by a near limit,
 * iter/tcp (reconcile.bpf.c) brings every socket exactly up to date. No
 * per-packet hook runs here: growth of a stalled receiver's queue is seen
 * at the next reconcile.
 */
#include "charge.bpf.h"
#include "timehist.bpf.h"
#include <bpf/bpf_tracing.h>

char LICENSE[] SEC("license") = "GPL";

/* Kernel >= 6.3: fires at the end of every sendmsg/recvmsg, so the sample
 * already includes what that call queued or freed. Linked only while some
 * limited cgroup is near (src/demand.c), and then it fires for every socket
 * of the host: only the armed and followed ones are sampled, so a container
 * near its limit does not make its neighbours' syscalls pay for it. Lazy: a
 * shrinking footprint keeps its last page until the next reconcile
 * (charge.bpf.h). */
SEC("tp_btf/sock_send_length")
int BPF_PROG(send_length, struct sock *sk, int ret, int flags)
{
	TIMEHIST_START();
	sample_if_armed(sk);
	TIMEHIST_END(TH_SEND_LENGTH);
	return 0;
}

SEC("tp_btf/sock_recv_length")
int BPF_PROG(recv_length, struct sock *sk, int ret, int flags)
{
	TIMEHIST_EMPTY(TH_CLOCK_RECV);
	TIMEHIST_START();
	sample_if_armed(sk);
	TIMEHIST_END(TH_RECV_LENGTH);
	return 0;
}

/* Every TCP socket passes tcp_v4_destroy_sock (v6 calls it too). What it
 * still holds is freed right after, so give it all back now: nothing else
 * would ever see this socket again. */
SEC("tp_btf/tcp_destroy_sock")
int BPF_PROG(destroy_sock, struct sock *sk)
{
	TIMEHIST_START();
	sock_uncount_destroyed(sk);
	sample_socket_to(sk, 0, SAMPLE_EXACT);
	sock_fallback_release(sk);
	TIMEHIST_END(TH_DESTROY_SOCK);
	return 0;
}
