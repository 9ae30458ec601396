/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Who is on the other end of the control socket, and how it names cgroups.
 *
 * The administrator is a process of the host with CAP_NET_ADMIN, or a host
 * process of AdminGroup=. A host process is in the daemon's user namespace
 * and in its cgroup namespace or one rooted where the daemon's cgroup mount
 * is (a DaemonSet's daemon has a private cgroup namespace, the runtime's hook
 * on the node the host's). A process in another cgroup or user namespace is
 * a container, whatever its uid or capabilities: a tenant. Mount and pid
 * namespaces do not count (systemd's PrivateTmp= gives host services their
 * own).
 *
 * A tenant names cgroups relative to the root of its cgroup namespace, as its
 * own /proc/self/cgroup shows them ("seen" paths); the daemon's paths are
 * relative to the v2 mount ("host" paths). A host peer's root is "/".
 *
 * peer.c holds the pure rules (unit-tested); peer_facts.c reads the facts
 * from the kernel.
 */
#ifndef TCPBUF_PEER_H_SRC
#define TCPBUF_PEER_H_SRC

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include "tcpbuf_peer.h"

#define PEER_MAX_GROUPS 32
#define CAP_NET_ADMIN_BIT 12

struct peer {
	pid_t pid;		/* SO_PEERCRED, recorded at connect() */
	uid_t uid;
	gid_t gid;
	gid_t groups[PEER_MAX_GROUPS];	/* SO_PEERGROUPS, at connect() too */
	size_t n_groups;
	int facts_err;		/* 0: facts proven to be the connecting process's */
	struct peer_facts facts;
	bool admin;
};

/* The rule above for the daemon @self, whose cgroup mount is rooted at the
 * cgroup @mount_root_id. */
bool peer_is_host(const struct peer_facts *peer, const struct peer_facts *self,
		  __u64 mount_root_id);

/*
 * The rule above. @cred_uid is SO_PEERCRED's: CAP_NET_ADMIN counts only while
 * every uid is still that one (a client that executes a setuid-root program
 * after connecting is not that program). @admin_gid is AdminGroup= (or
 * (gid_t)-1 for none), matched against the groups the peer had at connect().
 */
bool peer_admin_rule(const struct peer_facts *peer, const struct peer_facts *self,
		     __u64 mount_root_id, uid_t cred_uid, gid_t cred_gid, const gid_t *groups,
		     size_t n_groups, gid_t admin_gid);

/*
 * One spelling per cgroup: "//" -> "/", "." dropped, ".." taken lexically,
 * a trailing "/" dropped. "/a//b/./c/" -> "/a/b/c", "/a/b/.." -> "/a".
 * Returns 0, -EINVAL (not absolute, or ".." above the root) or -ENAMETOOLONG.
 */
int cgroup_path_canonical(const char *in, char *out, size_t len);

/* @seen (canonical) under the namespace root @root (a host path): the host path. */
int peer_host_path(const char *root, const char *seen, char *out, size_t len);

/*
 * @host as a peer rooted at @root sees it: a pointer into @host, "/" for the
 * root itself, or NULL when @host is outside the peer's namespace.
 */
const char *peer_seen_path(const char *root, const char *host);

#endif
