// SPDX-License-Identifier: GPL-2.0
/*
 * The cgroup tables hold MaxCgroups= entries each (here 8), and a change of
 * limits that does not fit is refused whole.
 *
 *   1. c1..c8 limited: both tables full (status says 8 of 8). set-limit c9
 *      fails with one line naming c9 and cgroup_limits; status, the pinned
 *      cgroup_limits map (read with bpf(2)) and the drop-in directory are
 *      as before.
 *   2. A reload whose new drop-in limits three more cgroups fails with one
 *      line; the old limits stay, in status and in the map.
 *   3. Removing c1 frees its room: the next set-limit c9 succeeds.
 *   4. Late entries: with cgroup_usage full, set-limit u is refused (one
 *      line naming u and cgroup_usage, nothing changes) and stalled
 *      receivers in the unlimited cgroup u charge no entry for u. Once c2 is removed, a
 *      second, smaller load in u makes u's entry: status and the map hold
 *      only what that load holds (sock_diag), never less. A limit on u then
 *      moves the first load's pages in (status = sock_diag of all of u);
 *      once the first load closes, u holds the second load's pages, and the
 *      raw counter never went negative.
 *   5. A restart with MaxCgroups=16 keeps the pinned tables of 8 (and their
 *      counters), and says so once.
 * The daemon runs in a network namespace of its own and the loads in theirs,
 * so no other socket of the host can take a table entry.
 */
#define _GNU_SOURCE
#include "harness.h"
#include "load.h"
#include "skmem.h"
#include "tcpbuf_maps.h"

#include <errno.h>
#include <inttypes.h>
#include <linux/bpf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#define MAX_CGROUPS	8
#define LIMIT		"64M"
#define TOL_PAGES	8

/* "entries" or "max_entries" of @table in status --json's "tables". */
static int64_t table_value(const char *table, const char *what)
{
	char *json = NULL, key[64];
	const char *p;
	int64_t v = -1;

	ASSERT_EQ(ctl(&json, "status --json"), 0);
	snprintf(key, sizeof(key), "\"%s\": {", table);
	p = strstr(json, key);
	if (p) {
		snprintf(key, sizeof(key), "\"%s\": ", what);
		p = strstr(p, key);
	}
	if (p)
		sscanf(p + strlen(key), "%" SCNd64, &v);
	free(json);
	return v;
}

/* Every entry of the pinned cgroup_limits as text, in key order of the map. */
static char *limits_dump(void)
{
	int fd = daemon_pinned_fd("cgroup_limits");
	__u64 key, next, *prev = NULL;
	struct cgroup_limits l;
	char *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);
	union bpf_attr a;

	ASSERT_TRUE(fd >= 0 && f);
	for (;;) {
		memset(&a, 0, sizeof(a));
		a.map_fd = fd;
		a.key = (uintptr_t)prev;
		a.next_key = (uintptr_t)&next;
		if (syscall(SYS_bpf, BPF_MAP_GET_NEXT_KEY, &a, sizeof(a)))
			break;
		key = next;
		prev = &key;
		memset(&a, 0, sizeof(a));
		a.map_fd = fd;
		a.key = (uintptr_t)&key;
		a.value = (uintptr_t)&l;
		if (!syscall(SYS_bpf, BPF_MAP_LOOKUP_ELEM, &a, sizeof(a)))
			fprintf(f, "%llu %llu %llu %llu %llu\n", (unsigned long long)key,
				(unsigned long long)l.limit_pages, (unsigned long long)l.min_pages,
				(unsigned long long)l.pressure_pages, (unsigned long long)l.max_pages);
	}
	close(fd);
	fclose(f);
	return out;
}

/* What must not change when a change of limits is refused. */
struct snapshot {
	char *map, *dropins;
	int64_t limit[MAX_CGROUPS + 2], usage_entries, limits_entries;
};

static void snapshot_take(struct snapshot *s, const char **cgs, int n)
{
	char *json = NULL;

	s->map = limits_dump();
	s->dropins = dir_snapshot(daemon_confdir());
	ASSERT_EQ(ctl(&json, "status --json"), 0);
	for (int i = 0; i < n; i++)
		s->limit[i] = json_cgroup_value(json, cg_rel(cgs[i]), "limit_pages");
	free(json);
	s->usage_entries = table_value("cgroup_usage", "entries");
	s->limits_entries = table_value("cgroup_limits", "entries");
}

static void snapshot_same(const struct snapshot *a, const struct snapshot *b, int n,
			  const char *what)
{
	test_log("%s: cgroup_limits %" PRId64 " -> %" PRId64 " entries, cgroup_usage %" PRId64
		 " -> %" PRId64, what, a->limits_entries, b->limits_entries, a->usage_entries,
		 b->usage_entries);
	EXPECT_TRUE(!strcmp(a->map, b->map));
	EXPECT_TRUE(!strcmp(a->dropins, b->dropins));
	EXPECT_EQ(a->usage_entries, b->usage_entries);
	EXPECT_EQ(a->limits_entries, b->limits_entries);
	for (int i = 0; i < n; i++)
		EXPECT_EQ(a->limit[i], b->limit[i]);
}

static void snapshot_free(struct snapshot *s)
{
	free(s->map);
	free(s->dropins);
}

/* One line on stderr, naming @cgroup and @table. */
static void one_line_naming(const char *cgroup, const char *table)
{
	const char *e = ctl_stderr();
	const char *nl = strchr(e, '\n');

	test_log("refused: %s", e);
	EXPECT_TRUE(nl && !nl[1]);
	EXPECT_TRUE(strstr(e, cgroup) != NULL);
	EXPECT_TRUE(strstr(e, table) != NULL);
}

static void wait_entries(const char *table, int64_t want)
{
	for (int i = 0; i < 100 && table_value(table, "entries") != want; i++)
		msleep(100);
	EXPECT_EQ(table_value(table, "entries"), want);
}

/* Stalled receivers and their writers in @cg, in a netns of their own. */
static struct load *stalled(const char *cg, int nconn, uint64_t bytes)
{
	struct load *l = load_start(&(struct load_opts){ .cgroup = cg, .nconn = nconn,
							 .bytes = bytes, .netns = 1 });

	ASSERT_TRUE(l != NULL);
	ASSERT_OK(load_wait_filled(l, 0));
	return l;
}

/* Pages the sockets of @cg hold, by sock_diag in the namespaces of @a and
 * @b (NULL: none). */
static int64_t held(const char *cg, struct load *a, struct load *b)
{
	struct skmem_total t = {};

	skmem_netns_clear();
	if (a)
		ASSERT_OK(skmem_netns_add(a->pid));
	if (b)
		ASSERT_OK(skmem_netns_add(b->pid));
	ASSERT_OK(skmem_cgroup(cg_id(cg), &t));
	skmem_netns_clear();
	return t.pages;
}

/* u's usage: status (after its reconcile) and the raw pinned counter. */
static void usage_of(const char *u, int64_t *status, int64_t *raw)
{
	char *json = status_json_of(cg_rel(u));
	struct cgroup_usage cu = {};
	__u64 id = cg_id(u);

	*status = json_cgroup_value(json, cg_rel(u), "usage_pages");
	free(json);
	*raw = daemon_pinned_lookup("cgroup_usage", &id, &cu) ? -999999 : cu.usage_pages;
}

/* u's usage (status, raw) and what sock_diag finds in the namespaces of @a
 * and @b, as a pair: a load held still moves now and then (a queue
 * collapsed, a sender's memory freed), so read again, up to 8 times 250 ms
 * apart, until status reads the same before and after sock_diag. */
static int64_t usage_pair(const char *u, struct load *a, struct load *b, int64_t *status,
			  int64_t *raw)
{
	int64_t h = 0, again, raw2;

	for (int i = 0; i < 8; i++) {
		usage_of(u, status, raw);
		h = held(u, a, b);
		usage_of(u, &again, &raw2);
		if (again == *status && llabs(h - *status) <= TOL_PAGES)
			break;
		msleep(250);
	}
	return h;
}

static void late_entries(const char *u, const char *c2, const char **cgs, int n)
{
	struct snapshot before, after;
	int64_t status, raw, first, second, all;
	struct load *l1, *l2;

	wait_entries("cgroup_usage", MAX_CGROUPS);
	l1 = stalled(u, 4, 0);
	first = held(u, l1, NULL);
	usage_of(u, &status, &raw);
	test_log("table full: first load holds %" PRId64 " pages; u in status %" PRId64
		 " (-3: no row)", first, status);
	EXPECT_GT(first, 4 * TOL_PAGES);
	EXPECT_EQ(status, -3);
	/* Room for its limits, none for its usage entry: refused too. */
	snapshot_take(&before, cgs, n);
	EXPECT_EQ(ctl(NULL, "set-limit %s %s", cg_rel(u), LIMIT), 1);
	one_line_naming(cg_rel(u), "cgroup_usage");
	snapshot_take(&after, cgs, n);
	snapshot_same(&before, &after, n, "set-limit past cgroup_usage");
	snapshot_free(&before);
	snapshot_free(&after);

	ASSERT_OK(rmdir(c2) ? -errno : 0);
	wait_entries("cgroup_usage", MAX_CGROUPS - 1);
	l2 = stalled(u, 1, 16 * 4096);
	second = usage_pair(u, l2, NULL, &status, &raw);
	test_log("entry made late: second load holds %" PRId64 " pages, the first %" PRId64
		 "; u in status %" PRId64 ", raw %" PRId64, second, held(u, l1, NULL), status,
		 raw);
	EXPECT_GT(second, 0);
	EXPECT_NEAR(status, second, TOL_PAGES);
	EXPECT_NEAR(raw, second, TOL_PAGES);

	/* Limited now: the sweep gives u what the first load holds too. */
	EXPECT_EQ(ctl(NULL, "set-limit %s %s", cg_rel(u), LIMIT), 0);
	msleep(500);
	all = usage_pair(u, l1, l2, &status, &raw);
	test_log("limited: sock_diag u %" PRId64 " pages; status %" PRId64 ", raw %" PRId64, all,
		 status, raw);
	EXPECT_NEAR(status, all, TOL_PAGES);
	EXPECT_NEAR(raw, all, TOL_PAGES);

	EXPECT_OK(load_close(l1));
	msleep(500);
	all = usage_pair(u, l2, NULL, &status, &raw);
	test_log("first load closed: sock_diag u %" PRId64 " pages; status %" PRId64
		 ", raw %" PRId64, all, status, raw);
	EXPECT_GE(raw, 0);
	EXPECT_NEAR(status, all, TOL_PAGES);
	EXPECT_NEAR(raw, all, TOL_PAGES);
	EXPECT_OK(load_close(l2));
}

int main(void)
{
	const char *c[MAX_CGROUPS + 2], *u, *g[3];
	struct snapshot before, after;
	char name[32];

	test_init();
	for (int i = 0; i < MAX_CGROUPS + 1; i++) {
		snprintf(name, sizeof(name), "c%d", i + 1);
		c[i] = cg_create(name);
	}
	u = cg_create("u");
	daemon_own_netns();
	daemon_write_config("[Daemon]\nMaxCgroups=%d\nDropInDir=%s\nStateDir=%s/state\n"
			    "RuntimeDir=%s/run\n", MAX_CGROUPS, daemon_confdir(), test_tmpdir(),
			    test_tmpdir());
	ASSERT_EQ(daemon_start(""), 0);
	EXPECT_EQ(table_value("cgroup_usage", "max_entries"), MAX_CGROUPS);
	EXPECT_EQ(table_value("cgroup_limits", "max_entries"), MAX_CGROUPS);

	/* 1. Full: the ninth limit is refused and changes nothing. */
	for (int i = 0; i < MAX_CGROUPS; i++)
		ASSERT_EQ(ctl(NULL, "set-limit %s %s", cg_rel(c[i]), LIMIT), 0);
	EXPECT_EQ(table_value("cgroup_limits", "entries"), MAX_CGROUPS);
	EXPECT_EQ(table_value("cgroup_usage", "entries"), MAX_CGROUPS);
	snapshot_take(&before, c, MAX_CGROUPS + 1);
	EXPECT_EQ(ctl(NULL, "set-limit %s %s", cg_rel(c[MAX_CGROUPS]), LIMIT), 1);
	one_line_naming(cg_rel(c[MAX_CGROUPS]), "cgroup_limits");
	snapshot_take(&after, c, MAX_CGROUPS + 1);
	snapshot_same(&before, &after, MAX_CGROUPS + 1, "set-limit past the table");
	EXPECT_EQ(after.limit[MAX_CGROUPS], -3);	/* no row: no limits, no entry */
	snapshot_free(&after);

	/* 2. A reload that needs more room keeps the old limits. */
	for (int i = 0; i < 3; i++) {
		snprintf(name, sizeof(name), "g%d", i + 1);
		g[i] = cg_create(name);
	}
	{
		char path[4096];
		FILE *f;

		snprintf(path, sizeof(path), "%s/10-glob.conf", daemon_confdir());
		f = fopen(path, "w");
		ASSERT_TRUE(f != NULL);
		fprintf(f, "[Cgroup]\nPath=%s/g*\nLimit=%s\n", cg_rel(cg_test_parent()), LIMIT);
		fclose(f);
		EXPECT_EQ(ctl(NULL, "reload"), 1);
		one_line_naming(cg_rel(g[0]), "cgroup_limits");
		unlink(path);
	}
	snapshot_take(&after, c, MAX_CGROUPS + 1);
	snapshot_same(&before, &after, MAX_CGROUPS + 1, "reload past the table");
	EXPECT_EQ(json_cgroup_value(status_json_of(cg_rel(g[0])), cg_rel(g[0]), "limit_pages"),
		  -3);
	snapshot_free(&after);
	snapshot_free(&before);

	/* 3. A removed cgroup's room is free again. */
	ASSERT_OK(rmdir(c[0]) ? -errno : 0);
	wait_entries("cgroup_limits", MAX_CGROUPS - 1);
	EXPECT_EQ(ctl(NULL, "set-limit %s %s", cg_rel(c[MAX_CGROUPS]), LIMIT), 0);
	EXPECT_GT(json_cgroup_value(status_json_of(cg_rel(c[MAX_CGROUPS])),
				    cg_rel(c[MAX_CGROUPS]), "limit_pages"), 0);
	EXPECT_EQ(ctl(NULL, "unset %s", cg_rel(c[MAX_CGROUPS])), 0);

	/* 4. Late entries. */
	c[MAX_CGROUPS + 1] = u;
	late_entries(u, c[1], c + 2, MAX_CGROUPS);

	/* 5. A restart asking for another size keeps the pinned tables and
	 * their counters, and says so. */
	ASSERT_EQ(daemon_stop(), 0);
	daemon_write_config("[Daemon]\nMaxCgroups=%d\nDropInDir=%s\nStateDir=%s/state\n"
			    "RuntimeDir=%s/run\n", 2 * MAX_CGROUPS, daemon_confdir(), test_tmpdir(),
			    test_tmpdir());
	ASSERT_EQ(daemon_start(""), 0);
	EXPECT_EQ(table_value("cgroup_usage", "max_entries"), MAX_CGROUPS);
	EXPECT_EQ(table_value("cgroup_limits", "max_entries"), MAX_CGROUPS);
	EXPECT_EQ(daemon_log_count("MaxCgroups=16 takes effect at a clean start"), 1);
	EXPECT_GT(json_cgroup_value(status_json_of(cg_rel(u)), cg_rel(u), "limit_pages"), 0);
	return test_done();
}
