// SPDX-License-Identifier: GPL-2.0
/*
 * The daemon in a cgroup namespace of its own, as a Kubernetes DaemonSet's
 * container on cgroup v2 is: the administrator on the node (this test, in
 * the host's cgroup namespace, as the runtime's hook is) is still the
 * administrator, and a container is still a tenant.
 *
 * The daemon runs in cgroup "daemon", unshared there (its /proc/self/cgroup
 * reads "0::/"). The host's set-limit of ct succeeds and status shows it by
 * its host path. A root process with every capability in ct's own cgroup
 * namespace may not set-limit (exit 1, "permission denied"), and its status
 * shows its own row as "/", with the container id its host path names.
 */
#define _GNU_SOURCE
#include "harness.h"

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define ID "7c1e5d9b3a2f4e6d8c0b1a3f5e7d9c2b4a6e8f0d2c4b6a8e0f2d4c6b8a0e2f4d"

/* In the child: join cgroup @arg and a cgroup namespace rooted there. */
static void enter_container(const void *arg)
{
	if (cg_enter(arg) || unshare(CLONE_NEWCGROUP)) {
		perror("container");
		_exit(126);
	}
}

static char *ns_link(pid_t pid)
{
	char path[64], buf[64];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/ns/cgroup", (int)pid);
	n = readlink(path, buf, sizeof(buf) - 1);
	buf[n > 0 ? n : 0] = '\0';
	return strdup(buf);
}

int main(void)
{
	const char *dcg, *ct;
	char *json, *mine, *theirs;
	struct run r;

	test_init();
	if (geteuid() != 0)
		SKIP("needs root for cgroup namespaces");
	dcg = cg_create("daemon");
	ct = cg_create("cri-containerd-" ID ".scope");
	daemon_write_config("[Daemon]\nDropInDir=%s\nStateDir=%s/state\n", daemon_confdir(),
			    test_tmpdir());
	daemon_set_cgroupns(dcg);
	ASSERT_EQ(daemon_start(""), 0);
	mine = ns_link(getpid());
	theirs = ns_link(daemon_pid());
	test_log("cgroup namespaces: this test %s, the daemon %s", mine, theirs);
	ASSERT_TRUE(strcmp(mine, theirs) != 0);

	/* The administrator on the node. */
	EXPECT_EQ(ctl(NULL, "set-limit %s 16M", cg_rel(ct)), 0);
	test_log("host set-limit: %s", ctl_stderr());
	ASSERT_EQ(ctl(&json, "status --json"), 0);
	EXPECT_EQ(json_cgroup_value(json, ct, "limit_pages"), 4096);
	free(json);

	/* A container, root with every capability in its own cgroup namespace. */
	run_ctl_child(&r, enter_container, ct, "set-limit / 32M");
	test_log("container set-limit: exit %d, %s", r.code, r.err);
	EXPECT_EQ(r.code, 1);
	EXPECT_TRUE(strstr(r.err, "permission denied") != NULL);
	run_free(&r);
	run_ctl_child(&r, enter_container, ct, "status --json");
	EXPECT_EQ(r.code, 0);
	EXPECT_EQ(json_cgroup_value(r.out, "/", "limit_pages"), 4096);
	EXPECT_TRUE(strstr(r.out, cg_rel(ct)) == NULL);
	test_log("the container's status: %s", r.out);
	EXPECT_TRUE(strstr(r.out, "\"container_id\": \"" ID "\"") != NULL);
	run_free(&r);

	ASSERT_EQ(ctl(&json, "status --json"), 0);
	EXPECT_EQ(json_cgroup_value(json, ct, "limit_pages"), 4096);
	free(json);
	free(mine);
	free(theirs);
	return test_done();
}
