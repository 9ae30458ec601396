// SPDX-License-Identifier: GPL-2.0
/*
 * An iter/tcp program that does nothing: timed by the scale pass beside
 * tcpbufd's own sweeps, it is what the kernel's walk of every TCP socket
 * (bucket locks, lock_sock_fast per socket) costs before any program work.
 * Never loaded by tcpbufd.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

char LICENSE[] SEC("license") = "GPL";

SEC("iter/tcp")
int walk_only(struct bpf_iter__tcp *ctx)
{
	return 0;
}
