// SPDX-License-Identifier: GPL-2.0
/*
 * Pass-all programs that init attaches to a cgroup of its own for the whole
 * boot. They hold the kernel's cgroup-BPF static keys for ingress and
 * sock_ops enabled, so tcpbufd attaching and detaching its own never patches
 * those branches: under TCG with a thread per vCPU, a vCPU can run the int3
 * of a branch the other is patching (tests/vm/README.md). Nothing of the
 * project's tests runs in that cgroup.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

char LICENSE[] SEC("license") = "GPL";

SEC("cgroup_skb/ingress")
int keep_ingress(struct __sk_buff *skb)
{
	return 1;
}

SEC("sockops")
int keep_sockops(struct bpf_sock_ops *skops)
{
	return 1;
}
