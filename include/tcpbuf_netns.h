/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What BPF tells the daemon of a network namespace that holds sockets of
 * tracked cgroups (map netns_seen, key: the namespace's inode number).
 */
#ifndef TCPBUF_NETNS_H
#define TCPBUF_NETNS_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

struct netns_seen {
	__u64 cgroup_id;	/* a cgroup with a socket there: where to look for a process in it */
};

#define TCPBUF_NETNS_MAX 16384	/* namespaces seen and not yet taken in by the daemon */

#endif /* TCPBUF_NETNS_H */
