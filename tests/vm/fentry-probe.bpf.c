// SPDX-License-Identifier: GPL-2.0
/* fentry/fexit probes on the kernel's socket memory accounting, for the VM
 * self-test: proves that fentry/fexit load, attach and fire on a guest kernel,
 * and sums the pages they see charged so the test can compare the sum with
 * memcg's own "sock" counter.
 *
 * No vmlinux.h: the only field read is sk_forward_alloc, resolved by CO-RE
 * against the running kernel's BTF through the minimal struct below.
 */
#include <linux/bpf.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#define PAGE_SIZE 4096

struct sock {
	int sk_forward_alloc;
} __attribute__((preserve_access_index));

/* Read by the loader from the .bss map. Pages are signed: reduce subtracts. */
__u64 raise_entry_calls;
__u64 raise_exit_calls;
__u64 raise_failed;
__u64 reduce_calls;
__u64 forced_calls;
__s64 net_pages;

SEC("fentry/__sk_mem_raise_allocated")
int BPF_PROG(raise_entry, struct sock *sk, int size, int amt, int kind)
{
	__sync_fetch_and_add(&raise_entry_calls, 1);
	return 0;
}

/* Returns 1 on success with amt pages charged; on failure it undoes its own
 * charge before returning, so only successes count. */
SEC("fexit/__sk_mem_raise_allocated")
int BPF_PROG(raise_exit, struct sock *sk, int size, int amt, int kind, int ret)
{
	__sync_fetch_and_add(&raise_exit_calls, 1);
	if (ret)
		__sync_fetch_and_add(&net_pages, amt);
	else
		__sync_fetch_and_add(&raise_failed, 1);
	return 0;
}

SEC("fentry/__sk_mem_reduce_allocated")
int BPF_PROG(reduce_entry, struct sock *sk, int amount)
{
	__sync_fetch_and_add(&reduce_calls, 1);
	__sync_fetch_and_add(&net_pages, -(__s64)amount);
	return 0;
}

/* Charges ceil((size - sk_forward_alloc) / PAGE_SIZE) pages when positive,
 * without going through __sk_mem_raise_allocated. */
SEC("fentry/sk_forced_mem_schedule")
int BPF_PROG(forced_entry, struct sock *sk, int size)
{
	int delta = size - BPF_CORE_READ(sk, sk_forward_alloc);

	__sync_fetch_and_add(&forced_calls, 1);
	if (delta > 0)
		__sync_fetch_and_add(&net_pages, (delta + PAGE_SIZE - 1) / PAGE_SIZE);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
