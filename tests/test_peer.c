// SPDX-License-Identifier: GPL-2.0
/*
 * Unit tests of the peer rules (src/peer.c): who administers, the one
 * spelling of a cgroup path, and the names a container gives cgroups.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "../src/peer.h"

static int failures;

#define FAIL(...) do { printf("FAIL " __VA_ARGS__); failures++; } while (0)

static void test_canonical(void)
{
	static const struct { const char *in, *out; int ret; } cases[] = {
		{ "/", "/", 0 },
		{ "//", "/", 0 },
		{ "/.", "/", 0 },
		{ "/./", "/", 0 },
		{ "/a/b", "/a/b", 0 },
		{ "/a//b", "/a/b", 0 },
		{ "/a/./b", "/a/b", 0 },
		{ "/a/b/", "/a/b", 0 },
		{ "//a///b//", "/a/b", 0 },
		{ "/a/b/..", "/a", 0 },
		{ "/a/../b", "/b", 0 },
		{ "/a/..", "/", 0 },
		{ "/a..b/.c/...", "/a..b/.c/...", 0 },
		{ "/..", NULL, -EINVAL },
		{ "/a/../..", NULL, -EINVAL },
		{ "a/b", NULL, -EINVAL },
		{ "", NULL, -EINVAL },
	};
	char out[64];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int r = cgroup_path_canonical(cases[i].in, out, sizeof(out));

		if (r != cases[i].ret)
			FAIL("canonical '%s': %d, expected %d\n", cases[i].in, r, cases[i].ret);
		else if (!r && strcmp(out, cases[i].out))
			FAIL("canonical '%s': '%s', expected '%s'\n", cases[i].in, out, cases[i].out);
	}
	if (cgroup_path_canonical("/abcdef", out, 4) != -ENAMETOOLONG)
		FAIL("canonical into a short buffer: not -ENAMETOOLONG\n");
}

static void test_names(void)
{
	static const struct { const char *root, *host, *seen; } cases[] = {
		{ "/", "/a/b", "/a/b" },
		{ "/k/pod", "/k/pod", "/" },
		{ "/k/pod", "/k/pod/c", "/c" },
		{ "/k/pod", "/k/podder", NULL },
		{ "/k/pod", "/k", NULL },
		{ "/k/pod", "/", NULL },
	};
	char host[64];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *s = peer_seen_path(cases[i].root, cases[i].host);

		if (!s != !cases[i].seen || (s && strcmp(s, cases[i].seen)))
			FAIL("seen '%s' under '%s': '%s', expected '%s'\n", cases[i].host,
			     cases[i].root, s ? s : "(null)",
			     cases[i].seen ? cases[i].seen : "(null)");
		if (!cases[i].seen)
			continue;
		/* And back: the host path of what it sees. */
		if (peer_host_path(cases[i].root, cases[i].seen, host, sizeof(host)) ||
		    strcmp(host, cases[i].host))
			FAIL("host of '%s' under '%s': '%s'\n", cases[i].seen, cases[i].root, host);
	}
}

#define NET_ADMIN (1ULL << CAP_NET_ADMIN_BIT)

static void test_admin(void)
{
	const struct peer_facts self = { .cgroup_ns = 100, .user_ns = 200, .cgns_root_id = 1 };
	static const gid_t groups[] = { 10, 20 };
	static const struct {
		const char *name;
		struct peer_facts f;
		uid_t uid;
		gid_t admin_gid;
		bool admin;
	} cases[] = {
		{ "host root with CAP_NET_ADMIN", { .cgroup_ns = 100, .user_ns = 200,
		  .cap_effective = NET_ADMIN }, 0, (gid_t)-1, true },
		{ "host root without it", { .cgroup_ns = 100, .user_ns = 200,
		  .cap_effective = ~NET_ADMIN }, 0, (gid_t)-1, false },
		{ "rootful container: uid 0, own cgroup ns", { .cgroup_ns = 101, .user_ns = 200,
		  .cap_effective = ~0ULL }, 0, (gid_t)-1, false },
		{ "user-namespace root", { .cgroup_ns = 100, .user_ns = 201,
		  .cap_effective = ~0ULL }, 0, (gid_t)-1, false },
		{ "a setuid-root program run after connect", { .cgroup_ns = 100, .user_ns = 200,
		  .uid = 1000, .euid = 0, .suid = 0, .fsuid = 0, .cap_effective = ~0ULL },
		  1000, (gid_t)-1, false },
		{ "host user with CAP_NET_ADMIN", { .cgroup_ns = 100, .user_ns = 200, .uid = 1000,
		  .euid = 1000, .suid = 1000, .fsuid = 1000, .cap_effective = NET_ADMIN },
		  1000, (gid_t)-1, true },
		{ "exiting", { .cgroup_ns = 100, .user_ns = 200, .cap_effective = NET_ADMIN,
		  .exiting = 1 }, 0, (gid_t)-1, false },
		{ "AdminGroup member on the host", { .cgroup_ns = 100, .user_ns = 200, .uid = 1000,
		  .euid = 1000, .suid = 1000, .fsuid = 1000 }, 1000, 20, true },
		{ "AdminGroup member in a container", { .cgroup_ns = 101, .user_ns = 200,
		  .uid = 1000, .euid = 1000, .suid = 1000, .fsuid = 1000 }, 1000, 20, false },
		{ "not in AdminGroup", { .cgroup_ns = 100, .user_ns = 200, .uid = 1000,
		  .euid = 1000, .suid = 1000, .fsuid = 1000 }, 1000, 30, false },
	};
	/* The daemon in a pod: its own cgroup namespace, rooted at its pod's cgroup 500. */
	const struct peer_facts pod = { .cgroup_ns = 100, .user_ns = 200, .cgns_root_id = 500 };
	static const struct {
		const char *name;
		struct peer_facts f;
		bool admin;
	} pod_cases[] = {
		{ "the runtime's hook on the node", { .cgroup_ns = 99, .user_ns = 200,
		  .cgns_root_id = 1, .cap_effective = NET_ADMIN }, true },
		{ "kubectl exec into the daemon's container", { .cgroup_ns = 100, .user_ns = 200,
		  .cgns_root_id = 500, .cap_effective = NET_ADMIN }, true },
		{ "another pod, with CAP_NET_ADMIN", { .cgroup_ns = 101, .user_ns = 200,
		  .cgns_root_id = 600, .cap_effective = NET_ADMIN }, false },
		{ "a user namespace rooted at the hierarchy's root", { .cgroup_ns = 99,
		  .user_ns = 201, .cgns_root_id = 1, .cap_effective = ~0ULL }, false },
	};

	for (size_t i = 0; i < sizeof(pod_cases) / sizeof(pod_cases[0]); i++) {
		bool a = peer_admin_rule(&pod_cases[i].f, &pod, 1, 0, 5, groups, 2, (gid_t)-1);

		if (a != pod_cases[i].admin)
			FAIL("daemon in a pod, %s: admin %d, expected %d\n", pod_cases[i].name, a,
			     pod_cases[i].admin);
	}

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		bool a = peer_admin_rule(&cases[i].f, &self, 1, cases[i].uid, 5, groups, 2,
					 cases[i].admin_gid);

		if (a != cases[i].admin)
			FAIL("%s: admin %d, expected %d\n", cases[i].name, a, cases[i].admin);
	}
}

int main(void)
{
	test_canonical();
	test_names();
	test_admin();
	if (failures) {
		printf("test_peer: %d failure(s)\n", failures);
		return 1;
	}
	return 0;
}
