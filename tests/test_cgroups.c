// SPDX-License-Identifier: GPL-2.0
/*
 * The daemon's cgroup tree (src/cgroups.c), which now follows changes one
 * cgroup at a time instead of being read anew every second:
 *   - ids and paths stay found both ways through thousands of adds and
 *     removals in random order (the path table is open addressing with
 *     backward-shift deletion: a wrong shift loses entries silently);
 *   - cgroup_walk() on a real subtree reports every directory once, parents
 *     first, with the id the kernel gives it (readdir's d_ino, no stat);
 *   - a scan keeps what limits.c marked on cgroups that are still there.
 */
#define _GNU_SOURCE
#include "harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../src/cgroups.h"

#define N 5000

static void check_all(const struct cgroup_tree *t, const char *present)
{
	char path[64];
	int bad = 0;

	for (int i = 0; i < N; i++) {
		const struct cgroup_entry *e;

		snprintf(path, sizeof(path), "/p%d/c%d", i % 37, i);
		e = cgroup_tree_find_path(t, path);
		if (present[i] != (e != NULL) || (e && e->id != (uint64_t)i + 100) ||
		    present[i] != (cgroup_tree_find(t, i + 100) != NULL))
			bad++;
	}
	EXPECT_EQ(bad, 0);
}

static void churn(void)
{
	struct cgroup_tree t = {};
	char *present = calloc(N, 1), path[64];
	unsigned seed = 7;
	size_t n = 0;

	ASSERT_TRUE(present != NULL);
	for (int round = 0; round < 4; round++) {
		for (int k = 0; k < N; k++) {
			int i = rand_r(&seed) % N;

			snprintf(path, sizeof(path), "/p%d/c%d", i % 37, i);
			if (present[i]) {
				free(cgroup_tree_remove(&t, path));
				present[i] = 0;
				n--;
			} else {
				ASSERT_EQ(cgroup_tree_add(&t, i + 100, path), 1);
				present[i] = 1;
				n++;
			}
		}
		EXPECT_EQ(t.n, n);
		check_all(&t, present);
	}
	for (size_t i = 1; i < t.n; i++)
		EXPECT_LT(t.entries[i - 1]->id, t.entries[i]->id);
	EXPECT_EQ(cgroup_tree_add(&t, 100 + N, "/p0/c0"), present[0] ? 0 : 1);
	cgroup_tree_free(&t);
	free(present);
}

struct seen {
	char *rel[16];
	uint64_t id[16];
	int n;
};

static int record(void *ctx, uint64_t id, const char *rel)
{
	struct seen *s = ctx;

	if (s->n == 16)
		return -E2BIG;
	s->rel[s->n] = strdup(rel);
	s->id[s->n++] = id;
	return 0;
}

static int index_of(const struct seen *s, const char *rel)
{
	for (int i = 0; i < s->n; i++)
		if (!strcmp(s->rel[i], rel))
			return i;
	return -1;
}

static void walk(void)
{
	const char *dirs[] = { "w", "w/a", "w/a/x", "w/a/y", "w/b" };
	struct seen s = {};
	struct cgroup_tree t;
	char *top;

	for (size_t i = 0; i < 5; i++)
		cg_create(dirs[i]);
	top = cg_rel(cg_create("w"));
	ASSERT_EQ(cgroup_tree_init(&t), 0);
	ASSERT_EQ(cgroup_walk(t.mount, top, record, &s), 0);
	EXPECT_EQ(s.n, 5);
	for (size_t i = 0; i < 5; i++) {
		char *rel = cg_rel(cg_create(dirs[i]));
		int k = index_of(&s, rel);

		EXPECT_GE(k, 0);
		if (k >= 0)
			EXPECT_EQ(s.id[k], cg_id(cg_create(dirs[i])));
		free(rel);
	}
	/* Parents first. */
	EXPECT_EQ(index_of(&s, top), 0);
	{
		char a[256], x[256];

		snprintf(a, sizeof(a), "%s/a", top);
		snprintf(x, sizeof(x), "%s/a/x", top);
		EXPECT_LT(index_of(&s, a), index_of(&s, x));
	}

	/* A scan finds them too, and keeps the marks of those still there. */
	ASSERT_EQ(cgroup_tree_scan(&t, NULL, NULL), 0);
	ASSERT_TRUE(cgroup_tree_find_path(&t, top) != NULL);
	EXPECT_EQ(cgroup_tree_find_path(&t, top)->id, cg_id(cg_create("w")));
	EXPECT_TRUE(cgroup_tree_find_path(&t, "/") != NULL);
	cgroup_tree_find_path(&t, top)->limited = true;
	ASSERT_EQ(cgroup_tree_scan(&t, NULL, NULL), 0);
	EXPECT_TRUE(cgroup_tree_find_path(&t, top)->limited);
	cgroup_tree_free(&t);
	for (int i = 0; i < s.n; i++)
		free(s.rel[i]);
	free(top);
}

int main(void)
{
	test_init();
	churn();
	walk();
	return test_done();
}
