// SPDX-License-Identifier: GPL-2.0
/* Container and pod names from cgroup paths: the patterns are in container_name.h. */
#include <string.h>
#include "container_name.h"

/* One component of a path: not NUL-terminated. */
struct part {
	const char *s;
	size_t n;
};

static bool part_is(struct part p, const char *word)
{
	return p.n == strlen(word) && !memcmp(p.s, word, p.n);
}

/* p without @prefix and @suffix, or n == 0 (s NULL) when it has not both. */
static struct part part_between(struct part p, const char *prefix, const char *suffix)
{
	size_t a = strlen(prefix), b = strlen(suffix);
	struct part none = { NULL, 0 };

	if (p.n <= a + b || memcmp(p.s, prefix, a) || memcmp(p.s + p.n - b, suffix, b))
		return none;
	return (struct part){ p.s + a, p.n - a - b };
}

/* A runtime's container id: 64 lowercase hex digits. */
static bool is_container_id(struct part p)
{
	if (p.n != CONTAINER_ID_LEN)
		return false;
	for (size_t i = 0; i < p.n; i++)
		if (!((p.s[i] >= '0' && p.s[i] <= '9') || (p.s[i] >= 'a' && p.s[i] <= 'f')))
			return false;
	return true;
}

/* A pod UID as kubelet names it: hex and '-' ('_' from the systemd driver). */
static bool take_pod_uid(struct part p, char *out)
{
	if (!p.n || p.n > POD_UID_MAX)
		return false;
	for (size_t i = 0; i < p.n; i++) {
		char c = p.s[i];

		if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F') ||
		      c == '-' || c == '_'))
			return false;
	}
	for (size_t i = 0; i < p.n; i++)
		out[i] = p.s[i] == '_' ? '-' : p.s[i];
	out[p.n] = '\0';
	return true;
}

static bool take_container_id(struct part p, char *out)
{
	if (!is_container_id(p))
		return false;
	memcpy(out, p.s, p.n);
	out[p.n] = '\0';
	return true;
}

/* docker-ID.scope and its like: the systemd cgroup driver's unit per container. */
static bool systemd_scope(struct part p, char *id)
{
	static const char *const prefixes[] = { "docker-", "cri-containerd-", "crio-", "libpod-" };

	for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++)
		if (take_container_id(part_between(p, prefixes[i], ".scope"), id))
			return true;
	return false;
}

static bool pod_slice(struct part p, char *uid)
{
	static const char *const prefixes[] = { "kubepods-pod", "kubepods-burstable-pod",
						"kubepods-besteffort-pod" };

	for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++)
		if (take_pod_uid(part_between(p, prefixes[i], ".slice"), uid))
			return true;
	return false;
}

/* kubelet's cgroupfs driver: pod<UID> right under kubepods or its QoS class. */
static bool cgroupfs_pod(const struct part *parts, size_t i, char *uid)
{
	bool qos = i >= 2 && part_is(parts[i - 2], "kubepods") &&
		   (part_is(parts[i - 1], "burstable") || part_is(parts[i - 1], "besteffort"));

	if (!(qos || (i >= 1 && part_is(parts[i - 1], "kubepods"))))
		return false;
	return take_pod_uid(part_between(parts[i], "pod", ""), uid);
}

#define MAX_PARTS 64

bool container_name_from_path(const char *path, struct container_name *out)
{
	struct part parts[MAX_PARTS];
	char uid[POD_UID_MAX + 1];
	size_t n = 0, i;
	bool in_pod = false;

	memset(out, 0, sizeof(*out));
	while (path && *path && n < MAX_PARTS) {
		size_t len = strcspn(path, "/");

		if (len)
			parts[n++] = (struct part){ path, len };
		path += len + (path[len] == '/');
	}
	for (i = 0; i < n; i++) {
		struct part p = parts[i];
		bool parent_pod = in_pod;

		in_pod = false;
		if (systemd_scope(p, out->container_id) || pod_slice(p, out->pod_uid))
			continue;
		if (cgroupfs_pod(parts, i, uid)) {
			memcpy(out->pod_uid, uid, sizeof(uid));
			in_pod = true;
		} else if (parent_pod) {
			if (!take_container_id(p, out->container_id))
				take_container_id(part_between(p, "crio-", ""), out->container_id);
		} else if (i >= 1 && part_is(parts[i - 1], "docker")) {
			take_container_id(p, out->container_id);
		} else if (i >= 1 && part_is(parts[i - 1], "libpod_parent")) {
			take_container_id(part_between(p, "libpod-", ""), out->container_id);
		}
	}
	return out->container_id[0] || out->pod_uid[0];
}
