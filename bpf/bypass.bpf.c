// SPDX-License-Identifier: GPL-2.0
/*
 * BypassProtMem=yes (kernel >= 6.19): a TCP socket created in a limited
 * cgroup, or below one, leaves the protocol's global accounting (tcp_mem,
 * /proc/net/sockstat "TCP: mem"): tcpbufd holds that cgroup to its own
 * limit, so the global pool only polices the unlimited ones. The kernel
 * takes the flag only at socket creation (cgroup/sock_create) and copies it
 * to accepted children, so a socket keeps what it got when it was created.
 */
#include "tcpbuf_maps.bpf.h"

char LICENSE[] SEC("license") = "GPL";

/* uapi bpf.h; absent from the committed vmlinux.h, which predates it. */
#define TCPBUF_SK_BPF_BYPASS_PROT_MEM	1010
#define TCPBUF_SOL_SOCKET		1
#define TCPBUF_SOCK_STREAM		1
#define TCPBUF_IPPROTO_TCP		6
/* Levels below the root looked at for a limit: deeper than any limit the
 * charges see (TCPBUF_MAX_DEPTH), as a socket there is still held by it. */
#define TCPBUF_BYPASS_LEVELS		32

__u64 bypass_sockets;	/* taken out of the global accounting */
__u64 bypass_refused;	/* bpf_setsockopt() said no: counted, not retried */

static __always_inline bool current_limited(void)
{
	for (int level = 1; level <= TCPBUF_BYPASS_LEVELS; level++) {
		__u64 id = bpf_get_current_ancestor_cgroup_id(level);

		if (!id)
			return false;
		if (bpf_map_lookup_elem(&cgroup_limits, &id))
			return true;
	}
	return false;
}

SEC("cgroup/sock_create")
int bypass_prot_mem(struct bpf_sock *ctx)
{
	int one = 1;

	if (ctx->type != TCPBUF_SOCK_STREAM || ctx->protocol != TCPBUF_IPPROTO_TCP)
		return 1;
	if (!current_limited())
		return 1;
	if (bpf_setsockopt(ctx, TCPBUF_SOL_SOCKET, TCPBUF_SK_BPF_BYPASS_PROT_MEM, &one, sizeof(one)))
		__sync_fetch_and_add(&bypass_refused, 1);
	else
		__sync_fetch_and_add(&bypass_sockets, 1);
	return 1;	/* never refuses the socket */
}
