/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the kernel says of a control-socket peer's process, read in one pass
 * by bpf/peer_iter.bpf.c (iter/task, filtered to the peer's pidfd): who it is,
 * which namespaces it is in and where its cgroup namespace is rooted, which
 * no file of /proc shows to another namespace.
 */
#ifndef TCPBUF_PEER_H
#define TCPBUF_PEER_H

#ifdef __bpf__
#include "vmlinux.h"
#else
#include <linux/types.h>
#endif

struct peer_facts {
	__u64 cgroup_id;	/* its cgroup v2 (directory inode) */
	__u64 cgns_root_id;	/* the cgroup its cgroup namespace is rooted at */
	__u64 cap_effective;	/* capability bits, in its own user namespace */
	__u32 cgroup_ns;	/* namespace inode numbers (/proc/PID/ns/...) */
	__u32 user_ns;
	__u32 tgid;
	__u32 uid, euid, suid, fsuid;	/* as the initial user namespace sees them */
	__u32 exiting;		/* exit_state or PF_EXITING: not a peer to trust */
};

_Static_assert(sizeof(struct peer_facts) == 56, "peer_facts layout");

#endif
