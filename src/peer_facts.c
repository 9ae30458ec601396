// SPDX-License-Identifier: GPL-2.0
/* A control-socket peer's facts, from the kernel (see peer_facts.h). */
#define _GNU_SOURCE
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "log.h"
#include "peer_facts.h"
#include "peer_iter.skel.h"

#ifndef SO_PEERPIDFD
#define SO_PEERPIDFD 77
#endif

static struct {
	struct peer_iter *skel;
	const char *mount;
	struct peer_facts self;
	__u64 mount_root_id;	/* the cgroup the v2 mount shows as its root */
	gid_t admin_gid;
} pf = { .admin_gid = (gid_t)-1 };

/* Signal 0 tells a living process (or its zombie) from a reaped one; EPERM
 * (no CAP_KILL for another uid's process) comes only after the process is found. */
static int pidfd_alive(int pidfd)
{
	if (!syscall(SYS_pidfd_send_signal, pidfd, 0, NULL, 0) || errno == EPERM)
		return 0;
	return -errno;
}

static int facts_from_iter(int pidfd, struct peer_facts *f)
{
	union bpf_iter_link_info linfo = { .task.pid_fd = pidfd };
	LIBBPF_OPTS(bpf_iter_attach_opts, o, .link_info = &linfo,
		    .link_info_len = sizeof(linfo));
	struct peer_facts buf[2];
	struct bpf_link *link;
	ssize_t n, got = 0;
	int fd, err = 0;

	link = bpf_program__attach_iter(pf.skel->progs.peer_facts, &o);
	if (!link)
		return -errno;
	fd = bpf_iter_create(bpf_link__fd(link));
	if (fd < 0) {
		err = -errno;
		goto out;
	}
	while ((n = read(fd, (char *)buf + got, sizeof(buf) - got)) > 0 &&
	       (got += n) < (ssize_t)sizeof(buf))
		;
	if (n < 0)
		err = -errno;
	/* Exactly one process: a kernel that ignored the filter shows more. */
	else if (got != sizeof(*f))
		err = -ESRCH;
	else
		*f = buf[0];
	close(fd);
out:
	bpf_link__destroy(link);
	return err;
}

static int ns_inode(pid_t pid, const char *ns, __u32 *ino)
{
	char path[64];
	struct stat st;

	snprintf(path, sizeof(path), "/proc/%d/ns/%s", pid, ns);
	if (stat(path, &st))
		return -errno;
	*ino = st.st_ino;
	return 0;
}

/* The /proc way, for a peer of the daemon's own cgroup namespace only:
 * another namespace's root shows in no file. */
static int facts_from_proc(pid_t pid, struct peer_facts *f)
{
	char path[64], line[PATH_MAX + 8], dir[PATH_MAX * 2];
	unsigned long long caps = 0;
	char state = 'Z';
	struct stat st;
	int err;
	FILE *fp;

	*f = (struct peer_facts){ .tgid = pid };
	if ((err = ns_inode(pid, "cgroup", &f->cgroup_ns)) || (err = ns_inode(pid, "user", &f->user_ns)))
		return err;
	if (f->cgroup_ns != pf.self.cgroup_ns)
		return -EOPNOTSUPP;
	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	if (!(fp = fopen(path, "re")))
		return -errno;
	while (fgets(line, sizeof(line), fp)) {
		if (sscanf(line, "State: %c", &state) == 1)
			continue;
		if (sscanf(line, "Uid: %u %u %u %u", &f->uid, &f->euid, &f->suid, &f->fsuid) == 4)
			continue;
		if (sscanf(line, "CapEff: %llx", &caps) == 1)
			break;
	}
	fclose(fp);
	f->cap_effective = caps;
	f->exiting = state == 'Z' || state == 'X';
	snprintf(path, sizeof(path), "/proc/%d/cgroup", pid);
	if (!(fp = fopen(path, "re")))
		return -errno;
	err = -ENOENT;
	while (fgets(line, sizeof(line), fp)) {
		if (strncmp(line, "0::", 3))
			continue;
		line[strcspn(line, "\n")] = '\0';
		snprintf(dir, sizeof(dir), "%s%s", pf.mount, line + 3);
		err = stat(dir, &st) ? -errno : 0;
		f->cgroup_id = st.st_ino;
		break;
	}
	fclose(fp);
	if (!err && stat(pf.mount, &st))
		err = -errno;
	f->cgns_root_id = st.st_ino;
	return err;
}

static int facts_of(int pidfd, pid_t pid, struct peer_facts *f)
{
	int err = pf.skel ? facts_from_iter(pidfd, f) : facts_from_proc(pid, f);

	if (err)
		return err;
	/* Not reaped since the read: the pid still named that process. */
	return pidfd_alive(pidfd);
}

int peer_facts_init(const char *mount)
{
	struct stat st;
	int pidfd, err;

	pf.mount = mount;
	if (stat(mount, &st)) {
		err = -errno;
		log_err("peer identity: %s: %s", mount, strerror(errno));
		return err;
	}
	pf.mount_root_id = st.st_ino;
	pf.skel = peer_iter__open_and_load();
	if (!pf.skel)
		log_warn("peer identity: the task iterator does not load (%s); containers are "
			 "refused, host peers are read from /proc", strerror(errno));
	pidfd = syscall(SYS_pidfd_open, getpid(), 0);
	if (pidfd < 0) {
		err = -errno;
		log_err("peer identity: pidfd_open: %s", strerror(errno));
		return err;
	}
	err = facts_of(pidfd, getpid(), &pf.self);
	if (err && pf.skel) {
		/* An iterator that loads but cannot filter by pidfd (< 6.1). */
		log_warn("peer identity: the task iterator cannot read one process (%s); "
			 "containers are refused", strerror(-err));
		peer_iter__destroy(pf.skel);
		pf.skel = NULL;
		err = facts_of(pidfd, getpid(), &pf.self);
	}
	close(pidfd);
	if (err)
		log_err("peer identity: cannot read the daemon's own namespaces: %s", strerror(-err));
	return err;
}

void peer_facts_close(void)
{
	peer_iter__destroy(pf.skel);
	pf.skel = NULL;
}

void peer_facts_admin_group(gid_t gid)
{
	pf.admin_gid = gid;
}

const char *peer_facts_why(int err)
{
	switch (err) {
	case -ENOPROTOOPT:
		return "cannot prove who connected: this kernel has no SO_PEERPIDFD (Linux 6.5)";
	case -EOPNOTSUPP:
		return "cannot tell the caller's cgroup namespace on this kernel";
	case -ESRCH:
		return "the process that connected is gone";
	default:
		return "cannot tell who connected";
	}
}

/*
 * Before 6.5 nothing names the process that connected: the pid, read at
 * accept, may already be another's. Only the administrator is served then
 * (a host process with CAP_NET_ADMIN at that pid), so the race can make no
 * tenant more than it was; tenants are refused.
 */
static int identify_by_pid(struct peer *p)
{
	static bool said;
	int pidfd = syscall(SYS_pidfd_open, p->pid, 0);

	if (!said) {
		log_warn("peer identity: this kernel has no SO_PEERPIDFD (Linux 6.5): only the "
			 "administrator is served, identified by its pid at accept");
		said = true;
	}
	if (pidfd < 0) {
		p->facts_err = -errno;
		return 0;
	}
	p->facts_err = facts_of(pidfd, p->pid, &p->facts);
	close(pidfd);
	if (!p->facts_err)
		p->admin = peer_admin_rule(&p->facts, &pf.self, pf.mount_root_id, p->uid, p->gid,
					   p->groups, p->n_groups, pf.admin_gid);
	if (!p->admin)
		p->facts_err = -ENOPROTOOPT;
	return 0;
}

int peer_identify(int fd, struct peer *p)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);
	gid_t groups[PEER_MAX_GROUPS];
	int pidfd = -1;

	*p = (struct peer){ .facts_err = -ESRCH };
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len))
		return -errno;
	p->pid = cred.pid;
	p->uid = cred.uid;
	p->gid = cred.gid;
	len = sizeof(groups);
	if (!getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &len)) {
		p->n_groups = len / sizeof(gid_t);
		memcpy(p->groups, groups, len);
	}
	len = sizeof(pidfd);
	if (getsockopt(fd, SOL_SOCKET, SO_PEERPIDFD, &pidfd, &len)) {
		if (errno != ENOPROTOOPT && errno != EINVAL) {
			p->facts_err = -errno;
			return 0;
		}
		return identify_by_pid(p);
	}
	p->facts_err = facts_of(pidfd, p->pid, &p->facts);
	close(pidfd);
	if (p->facts_err)
		log_debug("control socket: pid %d: no facts: %s", p->pid, strerror(-p->facts_err));
	if (!p->facts_err)
		p->admin = peer_admin_rule(&p->facts, &pf.self, pf.mount_root_id, p->uid, p->gid,
					   p->groups, p->n_groups, pf.admin_gid);
	return 0;
}
