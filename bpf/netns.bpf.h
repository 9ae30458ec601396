/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Which network namespaces hold sockets of tracked cgroups: iter/tcp walks
 * only the namespace of the task that makes the iterator, so the daemon
 * makes one in each of these (src/netns.c). Noted once per socket, where a
 * connection or a listener starts (sock_ops TCP_CONNECT_CB, TCP_LISTEN_CB):
 * accepted sockets are in their listener's namespace. The daemon takes the
 * entries in and deletes them; a namespace is noted again at its next
 * socket, which costs one lookup while its entry is there.
 */
#ifndef TCPBUF_NETNS_BPF_H
#define TCPBUF_NETNS_BPF_H

#include "tcpbuf_maps.bpf.h"
#include "tcpbuf_netns.h"

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, TCPBUF_NETNS_MAX);
	__type(key, __u32);
	__type(value, struct netns_seen);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} netns_seen SEC(".maps");

static __always_inline void netns_note(struct sock *sk)
{
	struct netns_seen v = {};
	__u32 inum = sk->__sk_common.skc_net.net->ns.inum;

	if (bpf_map_lookup_elem(&netns_seen, &inum))
		return;
	v.cgroup_id = sk->sk_cgrp_data.cgroup->kn->id;
	bpf_map_update_elem(&netns_seen, &inum, &v, BPF_NOEXIST);
}

#endif /* TCPBUF_NETNS_BPF_H */
