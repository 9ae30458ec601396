// SPDX-License-Identifier: GPL-2.0
/*
 * New containers get their limits at once, without a reload: with a glob
 * rule Path=/tcpbuf-test-PID/ctr-* (and a nested one, ctr-* / job-*), each
 * cgroup made with mkdir must show its limit_pages in status within 1 s.
 * PollIntervalMs is 60 s here, so only the daemon's watch of the cgroup tree
 * can meet that. Nested cgroups made right after their parent (as
 * `mkdir -p` or a container runtime does) must be seen too, and cgroups the
 * glob does not match ('*' does not cross '/') must stay unlimited.
 * A removed cgroup is forgotten: no row with its id in status (neither its
 * limits nor its usage) within 1 s of rmdir, after it held sockets, and its
 * ingress link is unpinned.
 */
#define _GNU_SOURCE
#include "harness.h"
#include "load.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define ROUNDS 20
#define CTR_LIMIT_PAGES 16384	/* 64M */
#define JOB_LIMIT_PAGES 2048	/* 8M */

static char *status_all(void)
{
	char *out = NULL;

	ASSERT_EQ(ctl(&out, "status --json"), 0);
	ASSERT_TRUE(json_valid(out));
	return out;
}

static int64_t limit_of(const char *cg)
{
	char *out = NULL;
	int64_t v = -1;

	if (ctl(&out, "status --json %s", cg) == 0 &&
	    json_cgroup_field(out, cg, "limit_pages", &v) != JSON_FOUND)
		v = -1;
	free(out);
	return v;
}

/* Seconds until status shows @want as @cg's limit (or 5 s, then -1). */
static double wait_limit(const char *cg, double since, int64_t want)
{
	while (now_sec() - since < 5) {
		if (limit_of(cg) == want)
			return now_sec() - since;
		msleep(10);
	}
	return -1;
}

static int has_id(const char *json, uint64_t id)
{
	char needle[64];

	snprintf(needle, sizeof(needle), "\"id\": %" PRIu64 ",", id);
	return strstr(json, needle) != NULL;
}

int main(void)
{
	char name[64], conf[1024], pin[1024], *parent, *json;
	double t, worst = 0;
	const char *ctr, *job, *other;
	struct load_opts o = { .nconn = 2, .bytes = 256 << 10 };
	struct load *l;
	uint64_t id;
	FILE *f;
	int i;

	test_init();
	lo_up();
	parent = cg_rel(cg_test_parent());
	snprintf(conf, sizeof(conf), "%s/10-ctr.conf", daemon_confdir());
	f = fopen(conf, "w");
	ASSERT_TRUE(f != NULL);
	fprintf(f, "[Cgroup]\nPath=%s/ctr-*\nLimit=64M\n\n[Cgroup]\nPath=%s/ctr-*/job-*\nLimit=8M\n",
		parent, parent);
	ASSERT_OK(fclose(f));
	daemon_write_config("[Daemon]\nPollIntervalMs=60000\nSampleIntervalMs=200\n"
			    "DropInDir=%s\nStateDir=%s/state\n", daemon_confdir(), test_tmpdir());
	ASSERT_EQ(daemon_start(""), 0);

	for (i = 0; i < ROUNDS; i++) {
		snprintf(name, sizeof(name), "ctr-%d", i);
		t = now_sec();
		ctr = cg_create(name);
		/* The nested one at once, as mkdir -p does, or a little later: while
		 * the daemon may be between reading the tree and watching ctr-N. */
		usleep(i % 5 * 2000 * (i / 5));
		snprintf(name, sizeof(name), "ctr-%d/job-1", i);
		job = cg_create(name);
		snprintf(name, sizeof(name), "other-%d", i);
		other = cg_create(name);

		double dc = wait_limit(ctr, t, CTR_LIMIT_PAGES);
		double dj = wait_limit(job, t, JOB_LIMIT_PAGES);

		if (dc > worst)
			worst = dc;
		if (dj > worst)
			worst = dj;
		if (dc < 0 || dc > 1 || dj < 0 || dj > 1)
			test_log("round %d: %s limited after %.3f s, %s after %.3f s", i,
				 cg_rel(ctr), dc, cg_rel(job), dj);
		EXPECT_TRUE(dc >= 0 && dc <= 1.0);
		EXPECT_TRUE(dj >= 0 && dj <= 1.0);
		EXPECT_EQ(limit_of(other), -1);
	}
	test_log("%d new cgroups and %d nested ones limited, the slowest after %.3f s", ROUNDS,
		 ROUNDS, worst);
	/* '*' does not cross '/': a grandchild that is not job-* has no limit. */
	t = now_sec();
	job = cg_create("ctr-0/x/job-1");
	msleep(500);
	EXPECT_EQ(limit_of(cg_create("ctr-0/x")), -1);
	EXPECT_EQ(limit_of(job), -1);

	/* Removed: forgotten, limits and usage alike, within 1 s. */
	ctr = cg_create("ctr-gone");
	EXPECT_TRUE(wait_limit(ctr, now_sec(), CTR_LIMIT_PAGES) >= 0);
	o.cgroup = ctr;
	l = load_start(&o);
	ASSERT_TRUE(l != NULL);
	ASSERT_EQ(load_wait_filled(l, 0), 0);
	id = cg_id(ctr);
	/* Its 4 sockets make it near its limits (each may hold far more than
	 * a quarter of 48M): its ingress refusal is linked. */
	snprintf(pin, sizeof(pin), "%s/links/ingress-%" PRIu64, daemon_pin_path(), id);
	for (i = 0; i < 100 && access(pin, F_OK); i++)
		msleep(10);
	EXPECT_EQ(access(pin, F_OK), 0);
	json = status_all();
	EXPECT_TRUE(has_id(json, id));
	free(json);
	ASSERT_EQ(load_close(l), 0);
	/* The kernel frees the sockets' pages shortly after close. */
	for (i = 0; i < 50; i++) {
		char *out = NULL;
		int64_t usage = -1;

		ctl(&out, "status --json %s", ctr);
		json_cgroup_field(out, ctr, "usage_pages", &usage);
		free(out);
		if (usage == 0)
			break;
		msleep(100);
	}
	ASSERT_OK(rmdir(ctr));
	t = now_sec();
	while (now_sec() - t < 5) {
		json = status_all();
		i = has_id(json, id);
		free(json);
		if (!i)
			break;
		msleep(20);
	}
	t = now_sec() - t;
	test_log("%s forgotten %.3f s after rmdir", cg_rel(ctr), t);
	EXPECT_FALSE(i);
	EXPECT_LE_F(t * 1000, 1000);
	/* Its ingress refusal (it was a topmost limited cgroup) is unpinned too. */
	EXPECT_NE(access(pin, F_OK), 0);
	ctr = cg_create("ctr-0");
	EXPECT_EQ(limit_of(ctr), CTR_LIMIT_PAGES);

	/* None of this took a reload. */
	EXPECT_EQ(daemon_log_count("configuration reloaded"), 0);
	free(parent);
	return test_done();
}
