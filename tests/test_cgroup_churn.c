// SPDX-License-Identifier: GPL-2.0
/*
 * A tenant that creates and removes cgroups in a loop under a [Cgroup] glob
 * costs the daemon a bounded share of a core and a bounded number of log
 * lines. For CHURN_SEC seconds a child makes and removes churn/cN as fast as
 * it can (every one matches Path=<parent>/churn/<any>, so each gets limits); the
 * daemon's CPU time over that stays under half a core, its log gains at most
 * a few lines a second (each cgroup used to log its limits), and afterwards
 * the daemon still answers and a cgroup made then gets its limits.
 */
#define _GNU_SOURCE
#include "harness.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define CHURN_SEC 4
#define CHURNERS 2

static int log_lines(void)
{
	char *s = file_read(daemon_log_path());
	int n = 0;

	for (char *p = s; p && *p; p++)
		n += *p == '\n';
	free(s);
	return n;
}

int main(void)
{
	char conf[1024], dir[1024], *json = NULL;
	const char *churn, *parent;
	double cpu0, cpu1, t0, t1;
	int lines0, lines1, made = 0;
	int64_t limit = 0;
	FILE *f;
	pid_t pid, pids[CHURNERS];

	test_init();
	churn = cg_create("churn");
	parent = cg_rel(cg_test_parent());
	snprintf(conf, sizeof(conf), "%s/10-churn.conf", daemon_confdir());
	f = fopen(conf, "w");
	ASSERT_TRUE(f != NULL);
	fprintf(f, "[Cgroup]\nPath=%s/churn/*\nLimit=4M\n", parent);
	ASSERT_OK(fclose(f));
	daemon_write_config("[Daemon]\nDropInDir=%s\nStateDir=%s/state\n", daemon_confdir(),
			    test_tmpdir());
	ASSERT_EQ(daemon_start(""), 0);
	msleep(300);
	lines0 = log_lines();
	cpu0 = daemon_cpu_sec();
	t0 = now_sec();
	for (int c = 0; c < CHURNERS; c++) {
	pid = test_fork(1);
	if (pid == 0) {
		double end = now_sec() + CHURN_SEC;
		int i = 0;

		while (now_sec() < end) {
			snprintf(dir, sizeof(dir), "%s/c%d-%d", churn, c, i++ % 16);
			if (!mkdir(dir, 0755))
				rmdir(dir);
		}
		_exit(0);
	}
	pids[c] = pid;
	}
	for (int c = 0; c < CHURNERS; c++)
		test_reap(pids[c]);
	{
		char *tail = file_read(daemon_log_path());

		if (tail && strlen(tail) > 600)
			test_log("log ends:\n%s", tail + strlen(tail) - 600);
		free(tail);
	}
	msleep(500);
	t1 = now_sec();
	cpu1 = daemon_cpu_sec();
	lines1 = log_lines();
	test_log("daemon CPU %.2f s in %.2f s (%.0f%% of a core); %d log lines",
		 cpu1 - cpu0, t1 - t0, 100 * (cpu1 - cpu0) / (t1 - t0), lines1 - lines0);
	EXPECT_LT((int)(100 * (cpu1 - cpu0) / (t1 - t0)), 50);
	EXPECT_LE(lines1 - lines0, 7 * (CHURN_SEC + 2)); /* 5 a second and a sum */

	/* Still answering, and a new cgroup gets its limits. */
	snprintf(dir, sizeof(dir), "%s/after", churn);
	ASSERT_OK(mkdir(dir, 0755));
	for (int i = 0; i < 50 && limit != 1024; i++) {
		char *rel = cg_rel(dir);

		msleep(100);
		free(json);
		json = NULL;
		if (ctl(&json, "status --json %s", rel) == 0)
			json_cgroup_field(json, rel, "limit_pages", &limit);
		free(rel);
		made++;
	}
	EXPECT_EQ(limit, 1024);
	free(json);
	rmdir(dir);
	EXPECT_TRUE(daemon_alive());
	return test_done();
}
