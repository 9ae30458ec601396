// SPDX-License-Identifier: GPL-2.0
/* Who administers, and the names a peer gives cgroups: pure rules (see peer.h). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "peer.h"

bool peer_is_host(const struct peer_facts *peer, const struct peer_facts *self,
		  __u64 mount_root_id)
{
	return peer->user_ns == self->user_ns &&
	       (peer->cgroup_ns == self->cgroup_ns || peer->cgns_root_id == mount_root_id);
}

static bool in_group(gid_t gid, gid_t cred_gid, const gid_t *groups, size_t n)
{
	if (gid == cred_gid)
		return true;
	for (size_t i = 0; i < n; i++)
		if (groups[i] == gid)
			return true;
	return false;
}

bool peer_admin_rule(const struct peer_facts *peer, const struct peer_facts *self,
		     __u64 mount_root_id, uid_t cred_uid, gid_t cred_gid, const gid_t *groups,
		     size_t n_groups, gid_t admin_gid)
{
	bool same_uids = peer->uid == cred_uid && peer->euid == cred_uid &&
			 peer->suid == cred_uid && peer->fsuid == cred_uid;

	if (peer->exiting || !peer_is_host(peer, self, mount_root_id))
		return false;
	if (same_uids && (peer->cap_effective & (1ULL << CAP_NET_ADMIN_BIT)))
		return true;
	return admin_gid != (gid_t)-1 && in_group(admin_gid, cred_gid, groups, n_groups);
}

int cgroup_path_canonical(const char *in, char *out, size_t len)
{
	size_t n = 0;
	const char *p = in;

	if (!len)
		return -ENAMETOOLONG;
	if (*in != '/')
		return -EINVAL;
	while (*p) {
		const char *word;
		size_t wlen;

		while (*p == '/')
			p++;
		word = p;
		while (*p && *p != '/')
			p++;
		wlen = p - word;
		if (!wlen || (wlen == 1 && word[0] == '.'))
			continue;
		if (wlen == 2 && word[0] == '.' && word[1] == '.') {
			if (!n)
				return -EINVAL;
			while (out[--n] != '/')
				;
			continue;
		}
		if (n + 1 + wlen >= len)
			return -ENAMETOOLONG;
		out[n++] = '/';
		memcpy(out + n, word, wlen);
		n += wlen;
	}
	if (!n) {
		if (len < 2)
			return -ENAMETOOLONG;
		out[n++] = '/';
	}
	out[n] = '\0';
	return 0;
}

int peer_host_path(const char *root, const char *seen, char *out, size_t len)
{
	int n;

	if (!strcmp(root, "/"))
		n = snprintf(out, len, "%s", seen);
	else if (!strcmp(seen, "/"))
		n = snprintf(out, len, "%s", root);
	else
		n = snprintf(out, len, "%s%s", root, seen);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

const char *peer_seen_path(const char *root, const char *host)
{
	size_t n = strlen(root);

	if (!strcmp(root, "/"))
		return host;
	if (strncmp(host, root, n))
		return NULL;
	if (!host[n])
		return "/";
	return host[n] == '/' ? host + n : NULL;
}
