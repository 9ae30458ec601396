// SPDX-License-Identifier: GPL-2.0
/*
 * A socket charges its own cgroup and its nearest ancestors, 8 levels in
 * all (TCPBUF_MAX_DEPTH): under a limited cgroup d with a chain d/l1/.../l8,
 * stalled connections in l7 are charged to d (l7 .. l1 and d are 8 levels)
 * and those in l8 are not, and the daemon says so once, naming l8 and d.
 * The oracle for what the sockets hold is sock_diag, per cgroup.
 */
#include "enforce_util.h"
#include "harness.h"
#include "skmem.h"
#include "tcpbuf_maps.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#define CHAIN	8

static int64_t usage_of(const char *cg)
{
	return status_field(cg, "usage_pages");
}

/* Stalled connections in @cg; the pages sock_diag finds its sockets hold. */
static struct xload *load_in(const char *cg, uint64_t *pages)
{
	struct skmem_total t = { 0 };
	struct xload *l = xload_start(&(struct xload_opts){ .rx_cgroup = cg, .nconn = 2,
							     .mode = XL_STALL });

	ASSERT_TRUE(l != NULL);
	msleep(1000);
	ASSERT_OK(skmem_cgroup(cg_id(cg), &t));
	*pages = t.pages;
	return l;
}

int main(void)
{
	const char *chain[CHAIN + 1];
	char rel[256] = "d", said[512];
	uint64_t held7, held8;
	struct xload *l;
	int64_t d_idle, d7, l7, d8, l8;

	test_init();
	enforce_config(1000);
	ASSERT_OK(daemon_start(""));
	chain[0] = cg_create(rel);
	for (int i = 1; i <= CHAIN; i++) {
		snprintf(rel + strlen(rel), sizeof(rel) - strlen(rel), "/l%d", i);
		chain[i] = cg_create(rel);
	}
	limits_write(chain[0], 262144, 0, 0, 0);
	ASSERT_OK(daemon_reload_until(chain[0], 262144, 5000));
	/* Said once for l8 only: d is its ninth level up. */
	snprintf(said, sizeof(said), "%s: ", cg_rel(chain[CHAIN]));
	EXPECT_EQ(daemon_log_wait(said, 1, 5000), 1);
	EXPECT_EQ(daemon_log_count("levels below the root; limits of"), 1);
	d_idle = usage_of(chain[0]);

	l = load_in(chain[CHAIN - 1], &held7);
	d7 = usage_of(chain[0]);
	l7 = usage_of(chain[CHAIN - 1]);
	xload_close(l);
	test_log("l7: sock_diag %" PRIu64 " pages, l7 %" PRId64 ", d %" PRId64 " (idle %" PRId64 ")",
		 held7, l7, d7, d_idle);
	EXPECT_GT(held7, 16);
	EXPECT_NEAR(l7, (int64_t)held7, 4);
	EXPECT_NEAR(d7 - d_idle, (int64_t)held7, 4);

	l = load_in(chain[CHAIN], &held8);
	d8 = usage_of(chain[0]);
	l8 = usage_of(chain[CHAIN]);
	xload_close(l);
	test_log("l8: sock_diag %" PRIu64 " pages, l8 %" PRId64 ", d %" PRId64, held8, l8, d8);
	EXPECT_GT(held8, 16);
	EXPECT_NEAR(l8, (int64_t)held8, 4);
	EXPECT_LE(d8, 4);	/* out of reach: nothing of l8's */
	EXPECT_EQ(daemon_log_count("levels below the root; limits of"), 1);
	return test_done();
}
