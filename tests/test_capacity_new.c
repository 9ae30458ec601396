// SPDX-License-Identifier: GPL-2.0
/*
 * New cgroups a glob rule matches when the cgroup tables are full
 * (MaxCgroups=8): n1..n10 made one by one under Path=.../n*, the first 8
 * limited, the last 2 left unlimited, and that shown, not only logged:
 * "refused_cgroups": 2 in status --json's tables, the text status's tables
 * line, and the counter tcpbufd_cgroups_refused_total 2. Removing a
 * limited one frees its room (the daemon's next full pass limits a
 * refused one); the count stays, a count of what happened. The daemon
 * runs in a network namespace of its own, so no socket of the host takes
 * a table entry.
 */
#define _GNU_SOURCE
#include "harness.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_CGROUPS	8
#define NEW		10

static int64_t refused_json(void)
{
	char *json = NULL;
	const char *p;
	int64_t v = -1;

	if (ctl(&json, "status --json"))
		return -1;
	p = strstr(json, "\"refused_cgroups\": ");
	if (p)
		sscanf(p + strlen("\"refused_cgroups\": "), "%" SCNd64, &v);
	free(json);
	return v;
}

static int64_t refused_metric(void)
{
	char *out = NULL;
	const char *p;
	int64_t v = -1;

	if (ctl(&out, "metrics"))
		return -1;
	p = strstr(out, "\ntcpbufd_cgroups_refused_total ");
	if (p)
		v = strtoll(p + strlen("\ntcpbufd_cgroups_refused_total "), NULL, 10);
	free(out);
	return v;
}

static bool text_says(const char *needle)
{
	char *out = NULL;
	bool found;

	if (ctl(&out, "status"))
		return false;
	found = strstr(out, needle) != NULL;
	free(out);
	return found;
}

static int64_t limit_of(const char *cg)
{
	char *json = status_json_of(cg_rel(cg));

	return json_cgroup_value(json, cg_rel(cg), "limit_pages");
}

int main(void)
{
	const char *n[NEW];
	char name[32], conf[4096];
	int limited = 0;
	FILE *f;

	test_init();
	daemon_own_netns();
	snprintf(conf, sizeof(conf), "%s/10-glob.conf", daemon_confdir());
	f = fopen(conf, "w");
	ASSERT_TRUE(f != NULL);
	fprintf(f, "[Cgroup]\nPath=%s/n*\nLimit=16M\n", cg_rel(cg_test_parent()));
	ASSERT_OK(fclose(f));
	daemon_write_config("[Daemon]\nMaxCgroups=%d\nPollIntervalMs=60000\nDropInDir=%s\n"
			    "StateDir=%s/state\nRuntimeDir=%s/run\n", MAX_CGROUPS,
			    daemon_confdir(), test_tmpdir(), test_tmpdir());
	ASSERT_EQ(daemon_start(""), 0);
	EXPECT_EQ(refused_json(), 0);

	for (int i = 0; i < NEW; i++) {
		snprintf(name, sizeof(name), "n%d", i + 1);
		n[i] = cg_create(name);
		for (int t = 0; t < 2000 && limit_of(n[i]) <= 0 && refused_json() < i + 1 - MAX_CGROUPS;
		     t += 20)
			msleep(20);
	}
	msleep(300);
	for (int i = 0; i < NEW; i++)
		limited += limit_of(n[i]) > 0;
	test_log("%d of %d new cgroups limited, refused_cgroups %" PRId64 ", metric %" PRId64,
		 limited, NEW, refused_json(), refused_metric());
	EXPECT_EQ(limited, MAX_CGROUPS);
	EXPECT_EQ(refused_json(), NEW - MAX_CGROUPS);
	EXPECT_EQ(refused_metric(), NEW - MAX_CGROUPS);
	EXPECT_TRUE(text_says("2 new cgroups refused for want of room"));
	ASSERT_EQ(daemon_stop(), 0);
	return test_done();
}
