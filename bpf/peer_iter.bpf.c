// SPDX-License-Identifier: GPL-2.0
/*
 * Facts about one control-socket peer: the daemon attaches this iterator to
 * the peer's pidfd (bpf_iter_link_info.task.pid_fd, kernel >= 6.1) and reads
 * one struct peer_facts. A BPF read, because the root of another process's
 * cgroup namespace shows in no file, and the ns files of /proc need ptrace access
 * the daemon's unit does not grant.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include "tcpbuf_peer.h"

char LICENSE[] SEC("license") = "GPL";

#define PF_EXITING 0x00000004

SEC("iter/task")
int peer_facts(struct bpf_iter__task *ctx)
{
	struct task_struct *t = ctx->task;
	struct peer_facts f = {};
	const struct cred *cred;

	/* The thread group's leader is the process SO_PEERCRED names. */
	if (!t || t->pid != t->tgid)
		return 0;
	cred = t->real_cred;
	f.tgid = t->tgid;
	f.cgroup_id = BPF_CORE_READ(t, cgroups, dfl_cgrp, kn, id);
	f.cgns_root_id = BPF_CORE_READ(t, nsproxy, cgroup_ns, root_cset, dfl_cgrp, kn, id);
	f.cgroup_ns = BPF_CORE_READ(t, nsproxy, cgroup_ns, ns.inum);
	f.user_ns = BPF_CORE_READ(cred, user_ns, ns.inum);
	f.uid = BPF_CORE_READ(cred, uid.val);
	f.euid = BPF_CORE_READ(cred, euid.val);
	f.suid = BPF_CORE_READ(cred, suid.val);
	f.fsuid = BPF_CORE_READ(cred, fsuid.val);
	/* kernel_cap_t is a u64 since 6.3 and two u32s before: 8 bytes either way. */
	bpf_probe_read_kernel(&f.cap_effective, sizeof(f.cap_effective),
			      __builtin_preserve_access_index(&cred->cap_effective));
	f.exiting = t->exit_state || (t->flags & PF_EXITING);
	bpf_seq_write(ctx->meta->seq, &f, sizeof(f));
	return 0;
}
