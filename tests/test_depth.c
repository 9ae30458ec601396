// SPDX-License-Identifier: GPL-2.0
/*
 * A limit holds for its whole subtree, however deep: a socket charges its
 * own cgroup and every limited ancestor, however far up.
 *
 *   1. d has Limit=16M; stalled receivers 10, then 30 levels below it
 *      (writers in an unlimited cgroup outside): d's subtree, by sock_diag
 *      every 10 ms, and its peak_pages stay within 1.05 x max, and status
 *      counts the load at d, at the receivers' cgroup and at an unlimited
 *      level in between (summed by the daemon).
 *   2. Two nested limits 30 levels deep, e (16M) and e/m1/.../m15 (4M):
 *      loads below m30 and below m5 (under e only); each limit holds.
 *   3. A limit set on f while its connections, 10 levels down, already
 *      carry data: the sweep moves their charge under it (status agrees
 *      with sock_diag), and once the readers have read what they queued
 *      before it, it holds.
 *   4. Eight nested limits on one path: set-limit refuses with one line,
 *      and nothing changes.
 * The oracle for what the sockets hold is sock_diag (tests/lib/skmem.c).
 */
#include "enforce_util.h"
#include "harness.h"
#include "skmem.h"
#include "tcpbuf_maps.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LIMIT_PAGES	4096	/* 16 MiB */
#define INNER_PAGES	1024	/* 4 MiB */
#define NCONN		32
#define MAX_RATIO	1.05
#define CHAIN		30

/* @top and CHAIN levels below it: chain[0] = top, chain[i] = top/<p>1/.../<p>i;
 * rels[i] the same relative to the test's cgroup. */
static void chain_make(const char *top, char prefix, const char **chain, char rels[][512])
{
	snprintf(rels[0], sizeof(rels[0]), "%s", top);
	chain[0] = cg_create(rels[0]);
	for (int i = 1; i <= CHAIN; i++) {
		snprintf(rels[i], sizeof(rels[i]), "%s/%c%d", rels[i - 1], prefix, i);
		chain[i] = cg_create(rels[i]);
	}
}

/* A leaf @k levels below chain[0], beside chain[k] (with the memory
 * controller, as in the guests, only leaves hold processes). */
static const char *leaf_at(char rels[][512], int k)
{
	char rel[600];

	snprintf(rel, sizeof(rel), "%s/rx%d", rels[k - 1], k);
	return cg_create(rel);
}

/* @nconn receivers in @rx (reading until told to stall), writers in @src. */
static struct xload *stalled_n(const char *rx, const char *src, int nconn)
{
	struct xload *l = xload_start(&(struct xload_opts){ .rx_cgroup = rx, .tx_cgroup = src,
							     .nconn = nconn, .mode = XL_READ });

	ASSERT_TRUE(l != NULL);
	return l;
}

static struct xload *stalled(const char *rx, const char *src)
{
	return stalled_n(rx, src, NCONN);
}

static void finish(struct xload *l, const char *what)
{
	char msg[256];

	if (xload_finish(l, 60000, msg, sizeof(msg)))
		test_log("%s: %s", what, msg);
	EXPECT_OK(0);
	xload_close(l);
}

/* Stalled receivers @levels below d: d holds, and status counts them. */
static void deep_under_one(const char **d, char rels[][512], int levels, const char *src)
{
	const char *rx = leaf_at(rels, levels);
	struct peak_sampler *p = peak_start(d[0], 10);
	struct skmem_total held = { 0 };
	struct xload *l = stalled(rx, src);
	int64_t usage_d, usage_rx, usage_mid, peak_d;

	msleep(1000);
	ASSERT_OK(xload_set_mode(l, XL_STALL, 0));
	msleep(3000);
	peak_stop(p);
	ASSERT_OK(skmem_cgroup(cg_id(rx), &held));
	usage_d = status_field(d[0], "usage_pages");
	usage_rx = status_field(rx, "usage_pages");
	usage_mid = status_field(d[levels / 2], "usage_pages");
	peak_d = status_field(d[0], "peak_pages");
	test_log("%d levels down: d peak %" PRIu64 " pages by sock_diag (%.3f x max), daemon %"
		 PRId64 "; now sock_diag %" PRIu64 ", status d %" PRId64 ", level %d %" PRId64
		 ", receivers %" PRId64 "; state %s", levels, peak_pages(p),
		 (double)peak_pages(p) / LIMIT_PAGES, peak_d, held.pages, usage_d, levels / 2,
		 usage_mid, usage_rx, status_state(d[0]));
	EXPECT_LE(peak_pages(p), (int64_t)(MAX_RATIO * LIMIT_PAGES));
	EXPECT_LE(peak_d, (int64_t)(MAX_RATIO * LIMIT_PAGES));
	/* Counted at d, which held them: under its caps (in a slow guest
	 * short of pressure) they hold a good part of max. */
	EXPECT_GT(usage_d, LIMIT_PAGES / 4);
	EXPECT_NEAR(usage_d, (int64_t)held.pages, 64);
	EXPECT_NEAR(usage_rx, (int64_t)held.pages, 64);
	EXPECT_NEAR(usage_mid, (int64_t)held.pages, 64);	/* unlimited: summed */
	finish(l, "deep");
	peak_free(p);
}

static void nested(const char **e, char rels[][512], const char *src)
{
	const char *rx_deep = leaf_at(rels, CHAIN), *rx_shallow = leaf_at(rels, 5);
	struct peak_sampler *pe = peak_start(e[0], 10), *pi = peak_start(e[15], 10);
	/* Two loads, half as many connections each: an emulated guest's
	 * generators answered too late with 32 each. */
	struct xload *deep = stalled_n(rx_deep, src, NCONN / 2);
	struct xload *shallow = stalled_n(rx_shallow, src, NCONN / 2);
	int64_t de, di;

	msleep(1000);
	ASSERT_OK(xload_set_mode(deep, XL_STALL, 0));
	ASSERT_OK(xload_set_mode(shallow, XL_STALL, 0));
	msleep(3000);
	peak_stop(pe);
	peak_stop(pi);
	de = status_field(e[0], "peak_pages");
	di = status_field(e[15], "peak_pages");
	test_log("nested: e peak %" PRIu64 " by sock_diag, daemon %" PRId64 " (max %d); m15 peak %"
		 PRIu64 " by sock_diag, daemon %" PRId64 " (max %d); states %s, %s", peak_pages(pe),
		 de, LIMIT_PAGES, peak_pages(pi), di, INNER_PAGES, status_state(e[0]),
		 status_state(e[15]));
	EXPECT_LE(peak_pages(pe), (int64_t)(MAX_RATIO * LIMIT_PAGES));
	EXPECT_LE(de, (int64_t)(MAX_RATIO * LIMIT_PAGES));
	EXPECT_LE(peak_pages(pi), (int64_t)(MAX_RATIO * INNER_PAGES));
	EXPECT_LE(di, (int64_t)(MAX_RATIO * INNER_PAGES));
	EXPECT_GT(di, INNER_PAGES / 2);	/* m15's own limit held its subtree */
	EXPECT_GT(de, LIMIT_PAGES / 4);
	finish(deep, "nested, deep");
	finish(shallow, "nested, shallow");
	peak_free(pe);
	peak_free(pi);
}

/* Connections 10 levels below f carry data before f has limits. */
static void limit_later(const char **f, char rels[][512], const char *src)
{
	const char *rx = leaf_at(rels, 10);
	struct xload *l = stalled(rx, src);
	struct skmem_total held = { 0 };
	struct peak_sampler *p;
	int64_t usage_f, peak_f;

	msleep(1000);
	limits_write(f[0], LIMIT_PAGES, 0, 0, 0);
	ASSERT_OK(daemon_reload_until(f[0], LIMIT_PAGES, 5000));
	/* What readers that fell behind queued before the limit is theirs:
	 * they read it under the caps the sweep gave them, then stall. */
	msleep(1000);
	p = peak_start(f[0], 10);
	ASSERT_OK(xload_set_mode(l, XL_STALL, 0));
	msleep(3000);
	peak_stop(p);
	ASSERT_OK(skmem_cgroup(cg_id(rx), &held));
	usage_f = status_field(f[0], "usage_pages");
	peak_f = status_field(f[0], "peak_pages");
	test_log("limit later: f peak %" PRIu64 " by sock_diag (%.3f x max), daemon peak %" PRId64
		 " (the load before the limit in it); now sock_diag %" PRIu64 ", usage %" PRId64
		 ", state %s", peak_pages(p), (double)peak_pages(p) / LIMIT_PAGES, peak_f, held.pages,
		 usage_f, status_state(f[0]));
	EXPECT_LE(peak_pages(p), (int64_t)(MAX_RATIO * LIMIT_PAGES));
	EXPECT_GT(usage_f, LIMIT_PAGES / 4);
	EXPECT_NEAR(usage_f, (int64_t)held.pages, 64);	/* moved under f whole */
	finish(l, "limit later");
	peak_free(p);
}

/* An eighth nested limit: refused with one line, nothing changed. */
static void too_many_nested(const char **g)
{
	char *out = NULL, cmd[1200];
	const char *err;
	int i, lines = 0;

	for (i = 0; i < TCPBUF_MAX_NESTED_LIMITS; i++) {
		snprintf(cmd, sizeof(cmd), "set-limit %s 4M", cg_rel(g[i * 2]));
		EXPECT_EQ(ctl(&out, "%s", cmd), 0);
		free(out);
		out = NULL;
	}
	snprintf(cmd, sizeof(cmd), "set-limit %s 4M", cg_rel(g[i * 2]));
	EXPECT_EQ(ctl(NULL, "%s", cmd), 1);
	err = ctl_stderr();
	for (const char *c = err; c && *c; c++)
		lines += *c == '\n';
	test_log("eighth nested limit: %s", err ? err : "(nothing)");
	EXPECT_EQ(lines, 1);
	EXPECT_TRUE(err && strstr(err, "nested limits"));
	EXPECT_EQ(status_field(g[i * 2], "limit_pages"), -1);
	EXPECT_EQ(status_field(g[(i - 1) * 2], "limit_pages"), 1024);
}

int main(void)
{
	const char *d[CHAIN + 1], *e[CHAIN + 1], *f[CHAIN + 1], *g[CHAIN + 1], *src;
	static char rels[CHAIN + 1][512];

	test_init();
	enforce_config(1000);
	ASSERT_OK(daemon_start(""));
	src = cg_create("src");
	chain_make("d", 'l', d, rels);
	limits_write(d[0], LIMIT_PAGES, 0, 0, 0);
	ASSERT_OK(daemon_reload_until(d[0], LIMIT_PAGES, 5000));
	deep_under_one(d, rels, 10, src);
	deep_under_one(d, rels, 30, src);

	chain_make("e", 'm', e, rels);
	limits_write(e[0], LIMIT_PAGES, 0, 0, 0);
	limits_write(e[15], INNER_PAGES, 0, 0, 0);
	ASSERT_OK(daemon_reload_until(e[15], INNER_PAGES, 5000));
	nested(e, rels, src);

	chain_make("f", 'n', f, rels);
	limit_later(f, rels, src);

	chain_make("g", 'o', g, rels);
	too_many_nested(g);

	ASSERT_EQ(daemon_stop(), 0);
	return test_done();
}
