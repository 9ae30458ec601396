// SPDX-License-Identifier: GPL-2.0
/*
 * Container names from the real daemon: cgroups shaped as runtimes make
 * them, limited, and what status --json, metrics and `top -b` say of each.
 *   a containerd container in a burstable pod (limited by a drop-in pattern:
 *   its path is longer than set-limit's config line allows): container_id
 *   and pod_uid, the UID with its dashes back;
 *   the pod's slice: pod_uid only;  docker-ID.scope: container_id only;
 *   web.service: both null in JSON, no such labels in metrics.
 * Metrics also give the host's TCP memory: tcp_mem as the test reads it, and
 * sockstat's TCP pages within what the test reads before and after.
 */
#define _GNU_SOURCE
#include "harness.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ID "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define ID2 "9ab4c1e27f0d3b5a6c8e9f10213243546576879809a0b1c2d3e4f5061728394a"
#define UID "1f3c2d4e-5a6b-4c7d-8e9f-0a1b2c3d4e5f"
#define POD "kubepods.slice/kubepods-burstable.slice/" \
	    "kubepods-burstable-pod1f3c2d4e_5a6b_4c7d_8e9f_0a1b2c3d4e5f.slice"

static void expect_fields(const char *json, const char *cg, const char *id, const char *uid)
{
	char buf[128];
	int r;

	r = json_cgroup_string(json, cg, "container_id", buf, sizeof(buf));
	if (id) {
		EXPECT_EQ(r, JSON_FOUND);
		EXPECT_EQ(strcmp(buf, id), 0);
	} else {
		EXPECT_EQ(r, JSON_NULL);
	}
	r = json_cgroup_string(json, cg, "pod_uid", buf, sizeof(buf));
	if (uid) {
		EXPECT_EQ(r, JSON_FOUND);
		EXPECT_EQ(strcmp(buf, uid), 0);
	} else {
		EXPECT_EQ(r, JSON_NULL);
	}
}

/* The line of @metrics that starts with @prefix, or NULL. */
static const char *line_starting(const char *metrics, const char *prefix)
{
	size_t n = strlen(prefix);

	for (const char *l = metrics; l && *l; l = strchr(l, '\n'), l = l ? l + 1 : NULL)
		if (!strncmp(l, prefix, n))
			return l;
	return NULL;
}

static void expect_labels(const char *metrics, const char *cg, const char *extra)
{
	char *want;

	if (asprintf(&want, "tcpbufd_cgroup_limit_bytes{cgroup=\"%s\"%s} 8388608\n", cg, extra) < 0)
		abort();
	if (!line_starting(metrics, want)) {
		test_log("metrics have no line %s", want);
		test_fail();
	}
	free(want);
}

static uint64_t sockstat_tcp_pages(void)
{
	char *s = file_read("/proc/net/sockstat"), *m = s ? strstr(s, "TCP: ") : NULL;
	uint64_t v = 0;

	if (m && (m = strstr(m, " mem ")))
		v = strtoull(m + 5, NULL, 10);
	free(s);
	return v;
}

static void check_host_metrics(const char *metrics, uint64_t before, uint64_t after)
{
	unsigned long long lim[3], got = 0;
	char *tcp_mem = file_read("/proc/sys/net/ipv4/tcp_mem"), want[128];
	static const char *const names[] = { "min", "pressure", "max" };
	const char *l;

	ASSERT_TRUE(tcp_mem && sscanf(tcp_mem, "%llu %llu %llu", &lim[0], &lim[1], &lim[2]) == 3);
	for (int i = 0; i < 3; i++) {
		snprintf(want, sizeof(want), "tcpbufd_host_tcp_mem_bytes{threshold=\"%s\"} %llu\n",
			 names[i], lim[i] * 4096);
		if (!line_starting(metrics, want)) {
			test_log("metrics have no line %s", want);
			test_fail();
		}
	}
	l = line_starting(metrics, "tcpbufd_host_tcp_usage_bytes ");
	ASSERT_TRUE(l != NULL);
	got = strtoull(l + strlen("tcpbufd_host_tcp_usage_bytes "), NULL, 10);
	test_log("host TCP pages: sockstat %" PRIu64 " before, %llu in metrics, %" PRIu64 " after",
		 before, got / 4096, after);
	EXPECT_EQ(got % 4096, 0);
	/* Others' traffic moves it between the reads: a loose bracket. */
	EXPECT_GE(got / 4096 + 1, (before < after ? before : after) / 2);
	EXPECT_LE(got / 4096, (before > after ? before : after) * 2 + 1024);
	free(tcp_mem);
}

int main(void)
{
	char *k8s, *pod, *docker, *web, *json = NULL, *metrics = NULL, *top = NULL, path[4096];
	char extra[256];
	uint64_t before, after;
	FILE *f;

	test_init();
	k8s = cg_rel(cg_create(POD "/cri-containerd-" ID ".scope"));
	pod = cg_rel(cg_create(POD));
	docker = cg_rel(cg_create("system.slice/docker-" ID2 ".scope"));
	web = cg_rel(cg_create("system.slice/web.service"));
	daemon_write_config("[Daemon]\nDropInDir=%s\nStateDir=%s\n", daemon_confdir(),
			    test_tmpdir());
	snprintf(path, sizeof(path), "%s/k8s.conf", daemon_confdir());
	f = fopen(path, "we");
	ASSERT_TRUE(f != NULL);
	fprintf(f, "[Cgroup]\nPath=%s/kubepods.slice/*/*/cri-containerd-*.scope\nLimit=8M\n",
		cg_rel(cg_test_parent()));
	ASSERT_OK(fclose(f));
	ASSERT_EQ(daemon_start(NULL), 0);
	ASSERT_EQ(ctl(NULL, "set-limit %s 8M", pod), 0);
	ASSERT_EQ(ctl(NULL, "set-limit %s 8M", docker), 0);
	ASSERT_EQ(ctl(NULL, "set-limit %s 8M", web), 0);

	ASSERT_EQ(ctl(&json, "status --json"), 0);
	ASSERT_TRUE(json_valid(json));
	expect_fields(json, k8s, ID, UID);
	expect_fields(json, pod, NULL, UID);
	expect_fields(json, docker, ID2, NULL);
	expect_fields(json, web, NULL, NULL);

	before = sockstat_tcp_pages();
	ASSERT_EQ(ctl(&metrics, "metrics"), 0);
	after = sockstat_tcp_pages();
	snprintf(extra, sizeof(extra), ",container_id=\"%s\",pod_uid=\"%s\"", ID, UID);
	expect_labels(metrics, k8s, extra);
	snprintf(extra, sizeof(extra), ",pod_uid=\"%s\"", UID);
	expect_labels(metrics, pod, extra);
	snprintf(extra, sizeof(extra), ",container_id=\"%s\"", ID2);
	expect_labels(metrics, docker, extra);
	expect_labels(metrics, web, "");
	check_host_metrics(metrics, before, after);

	/* top's batch lines carry both, the path last */
	ASSERT_EQ(ctl(&top, "top -b -n 1"), 0);
	{
		char *want;

		if (asprintf(&want, " %s %s %s\n", ID, UID, k8s) < 0)
			abort();
		EXPECT_TRUE(strstr(top, want) != NULL);
		free(want);
		if (asprintf(&want, " - %s %s\n", UID, pod) < 0)
			abort();
		EXPECT_TRUE(strstr(top, want) != NULL);
		free(want);
	}
	free(json);
	free(metrics);
	free(top);
	return test_done();
}
