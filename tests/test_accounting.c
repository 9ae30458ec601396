// SPDX-License-Identifier: GPL-2.0
/*
 * Accounting against the kernel's own numbers: two sibling cgroups and a
 * parent with two nested children, each leaf holding stalled IPv4 and IPv6
 * bulk connections. Every cgroup's usage_pages must equal the sum of its
 * sockets' footprint read through sock_diag (and memcg's `sock` where the
 * memory controller exists), parents the sum of their children; after close
 * every counter reads 0; 10,000 short connections leave nothing behind; a
 * removed cgroup leaves the maps.
 *
 * Tolerance: 2% or 8 pages, whichever is larger, in both modes. Exact mode
 * counts the pages the kernel charges; sampled mode reaches the same because
 * `status` runs the iter/tcp reconcile before it answers, and a stalled load
 * does not move between that pass and the sock_diag read.
 */
#include "harness.h"
#include "load.h"
#include "skmem.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define CONNS_PER_FAMILY 4

static const char *const leaves[] = { "a", "b", "p/c", "p/d" };
#define NLEAVES (sizeof(leaves) / sizeof(leaves[0]))

static char *status_json(void)
{
	char *out = NULL;

	ASSERT_EQ(ctl(&out, "status --json"), 0);
	ASSERT_TRUE(json_valid(out));
	return out;
}

static int64_t field(const char *json, const char *cg, const char *key)
{
	int64_t v = -1;

	if (json_cgroup_field(json, cg, key, &v) != JSON_FOUND) {
		test_log("%s: no %s in status", cg, key);
		return -1;
	}
	return v;
}

static void check_against_oracle(const char *json, const char *path)
{
	struct skmem_total k;
	int64_t usage = field(json, path, "usage_pages");
	int64_t memcg;

	ASSERT_OK(skmem_subtree(path, &k));
	test_log("%s: usage_pages %" PRId64 ", sock_diag %" PRIu64 " pages in %" PRIu64
		 " sockets", cg_rel(path), usage, k.pages, k.charged);
	ASSERT_GT(k.pages, 0);
	EXPECT_NEAR(usage, (int64_t)k.pages, skmem_tolerance(k.pages));
	memcg = memcg_sock_bytes_settled(path, usage, skmem_tolerance(usage));
	if (memcg >= 0) {
		test_log("%s: memcg sock %" PRId64 " pages", cg_rel(path), memcg / 4096);
		EXPECT_NEAR(usage, memcg / 4096, skmem_tolerance(memcg / 4096));
	}
}

static int all_zero(const char *json, const char **paths, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (field(json, paths[i], "usage_pages") != 0 || field(json, paths[i], "sockets") != 0)
			return 0;
	return 1;
}

/* Counters reach 0 shortly after close: the last pages go back when the
 * kernel frees the sockets, which happens after close() returns. */
static char *wait_all_zero(const char **paths, size_t n)
{
	char *json = NULL;
	int i;

	for (i = 0; i < 50; i++) {
		free(json);
		json = status_json();
		if (all_zero(json, paths, n))
			break;
		msleep(100);
	}
	return json;
}

int main(void)
{
	const char *paths[NLEAVES + 2];
	struct load *loads[NLEAVES * 2];
	int families[2] = { AF_INET, AF_INET6 };
	int nfam = ipv6_available() ? 2 : 1;
	char mode[16] = "", needle[64];
	size_t i, nl = 0;
	int64_t entries_before = -1, entries = -1;
	char *json;
	int f;

	test_init();
	lo_up();
	for (i = 0; i < NLEAVES; i++)
		paths[i] = cg_create(leaves[i]);
	paths[NLEAVES] = cg_test_parent();
	paths[NLEAVES + 1] = cg_create("p");
	daemon_write_config("[Daemon]\nPollIntervalMs=200\nSampleIntervalMs=200\n"
			    "DropInDir=%s\nStateDir=%s\n", daemon_confdir(), test_tmpdir());
	ASSERT_EQ(daemon_start(""), 0);
	json = status_json();
	ASSERT_EQ(json_int_field(json, "socket_entries", &entries_before), JSON_FOUND);
	free(json);

	for (i = 0; i < NLEAVES; i++) {
		for (f = 0; f < nfam; f++) {
			struct load_opts o = { .cgroup = paths[i], .nconn = CONNS_PER_FAMILY,
					       .family = families[f] };

			loads[nl] = load_start(&o);
			ASSERT_TRUE(loads[nl] != NULL);
			ASSERT_EQ(load_wait_filled(loads[nl], 0), 0);
			nl++;
		}
	}

	json = status_json();
	ASSERT_EQ(json_string_field(json, "mode", mode, sizeof(mode)), JSON_FOUND);
	test_log("mode %s, %d families", mode, nfam);
	for (i = 0; i < NLEAVES + 2; i++)
		check_against_oracle(json, paths[i]);
	/* Parents are the sum of their children, read from one status. */
	EXPECT_EQ(field(json, paths[NLEAVES + 1], "usage_pages"),
		  field(json, paths[2], "usage_pages") + field(json, paths[3], "usage_pages"));
	EXPECT_EQ(field(json, paths[NLEAVES + 1], "sockets"),
		  field(json, paths[2], "sockets") + field(json, paths[3], "sockets"));
	EXPECT_GE(field(json, paths[0], "sockets"), CONNS_PER_FAMILY * nfam);
	EXPECT_GE(field(json, paths[0], "peak_pages"), field(json, paths[0], "usage_pages"));
	/* Loaded sockets do show up in the socket storage: the leak check below means something. */
	ASSERT_EQ(json_int_field(json, "socket_entries", &entries), JSON_FOUND);
	EXPECT_GE(entries, entries_before + (int64_t)NLEAVES * CONNS_PER_FAMILY * nfam);
	free(json);

	for (i = 0; i < nl; i++)
		ASSERT_EQ(load_close(loads[i]), 0);
	json = wait_all_zero(paths, NLEAVES + 2);
	for (i = 0; i < NLEAVES + 2; i++) {
		EXPECT_EQ(field(json, paths[i], "usage_pages"), 0);
		EXPECT_EQ(field(json, paths[i], "sockets"), 0);
	}
	free(json);

	/* 10,000 short connections: back to exactly 0, nothing left behind. */
	ASSERT_EQ(short_connections(paths[0], 10000), 0);
	json = wait_all_zero(paths, 1);
	EXPECT_EQ(field(json, paths[0], "usage_pages"), 0);
	EXPECT_EQ(field(json, paths[0], "sockets"), 0);
	/* Socket storage dies with its socket: nothing of the 10,000 is left.
	 * The slack covers the host's own sockets starting to hold memory meanwhile. */
	ASSERT_EQ(json_int_field(json, "socket_entries", &entries), JSON_FOUND);
	test_log("socket storage entries: %" PRId64 " before, %" PRId64 " after", entries_before,
		 entries);
	EXPECT_LE(entries, entries_before + 8);
	free(json);

	/* A removed cgroup leaves the maps at the next poll. */
	snprintf(needle, sizeof(needle), "\"id\": %" PRIu64 ",", cg_id(paths[1]));
	ASSERT_OK(rmdir(paths[1]));
	msleep(600);
	json = status_json();
	EXPECT_TRUE(strstr(json, needle) == NULL);
	free(json);
	return test_done();
}
