// SPDX-License-Identifier: GPL-2.0
/*
 * Empty programs on the hooks sampled mode's followers use, for bench/dispatch
 * only (-DINGRESS: the cgroup_skb one, attached with bpftool): what the kernel's dispatch of one program costs per run, measured as
 * the TCP_RR rate with them attached against without, never by tcpbufd.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

char LICENSE[] SEC("license") = "GPL";

#ifndef INGRESS
SEC("tp_btf/sock_send_length")
int nop_send_length(void *ctx)
{
	return 0;
}

SEC("tp_btf/sock_recv_length")
int nop_recv_length(void *ctx)
{
	return 0;
}

SEC("tp_btf/tcp_sendmsg_locked")
int nop_sendmsg(void *ctx)
{
	return 0;
}

#else
SEC("cgroup_skb/ingress")
int nop_ingress(struct __sk_buff *skb)
{
	return 1;
}
#endif
