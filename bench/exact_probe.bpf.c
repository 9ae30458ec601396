// SPDX-License-Identifier: GPL-2.0
/*
 * Stand-ins for exact mode's accounting programs, on the same three hooks,
 * for profiling only (tests/vm/profile-exact; loaded by `bpfinfo hold`, never
 * by tcpbufd). Built in stages, each adding one part of a charge, so that
 * the difference between two stages is what that part costs:
 *   STAGE 0  empty programs: the trampolines alone
 *   STAGE 1  + the socket's type check and its socket-storage entry
 *   STAGE 2  + one hash lookup of the socket's cgroup and its atomics
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#ifndef STAGE
#define STAGE 0
#endif

char LICENSE[] SEC("license") = "GPL";

struct probe_sock {
	__s32 pages;
	__u32 pad;
};

struct probe_cg {
	__s64 pages, sockets;
};

struct {
	__uint(type, BPF_MAP_TYPE_SK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct probe_sock);
} probe_sock SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u64);
	__type(value, struct probe_cg);
} probe_cg SEC(".maps");

static __always_inline void probe_charge(struct sock *sk, int pages)
{
#if STAGE >= 1
	struct probe_sock *ps;
	__s32 before;

	if (!pages || sk->sk_protocol != 6 || sk->sk_type != 1)
		return;
	ps = bpf_sk_storage_get(&probe_sock, sk, NULL, BPF_SK_STORAGE_GET_F_CREATE);
	if (!ps)
		return;
	before = __sync_fetch_and_add(&ps->pages, pages);
#if STAGE >= 2
	{
		struct cgroup *cg = sk->sk_cgrp_data.cgroup;
		struct probe_cg *c, fresh = {};
		__u64 id;

		if (!cg)
			return;
		id = cg->kn->id;
		c = bpf_map_lookup_elem(&probe_cg, &id);
		if (!c) {
			bpf_map_update_elem(&probe_cg, &id, &fresh, BPF_NOEXIST);
			c = bpf_map_lookup_elem(&probe_cg, &id);
			if (!c)
				return;
		}
		__sync_fetch_and_add(&c->pages, pages);
		if ((before <= 0) != (before + pages <= 0))
			__sync_fetch_and_add(&c->sockets, before <= 0 ? 1 : -1);
	}
#else
	(void)before;
#endif
#endif
}

SEC("fexit/__sk_mem_raise_allocated")
int BPF_PROG(probe_raise, struct sock *sk, int size, int amt, int kind, int ret)
{
	if (ret)
		probe_charge(sk, amt);
	return 0;
}

SEC("fentry/__sk_mem_reduce_allocated")
int BPF_PROG(probe_reduce, struct sock *sk, int amount)
{
	probe_charge(sk, -amount);
	return 0;
}

SEC("fentry/sk_forced_mem_schedule")
int BPF_PROG(probe_forced, struct sock *sk, int size)
{
	int delta = size - sk->sk_forward_alloc;

	if (delta > 0)
		probe_charge(sk, (delta + 4095) >> 12);
	return 0;
}
