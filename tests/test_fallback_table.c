// SPDX-License-Identifier: GPL-2.0
#define _GNU_SOURCE
/*
 * Sockets without socket storage (test_unaccounted's way: optmem_max=1 in
 * the loads' network namespace) when the fallback table is no help, with
 * sock_fallback made small for the test (TCPBUF_TEST_FALLBACK_SOCKETS=48):
 *
 *   1. "late": its fallback entries are made while only its child
 *      "late/inner" is limited (far); then late gets Limit=2M (512 pages).
 *      The sweep renews the entries' cgroups: late counts the 40
 *      receivers in unaccounted_sockets, and stalled receivers stay
 *      within 1.05 x late's max (sock_diag) with late's usage pushed past
 *      half of it. Before, late was never charged: ~1.6 x max.
 *   2. "full": 64 receivers, 48 get the entries, 16 find the table full.
 *      Those are held at the floors and refused at ingress (fail closed):
 *      the cgroup stays within 1.05 x max; and they are shown: status
 *      (text and JSON) and the metric tcpbufd_fallback_lost_sockets_total
 *      say 16, sock_fallback's size and fill are shown beside the cgroup
 *      tables', and the log says so.
 * Senders are in an unlimited sibling, as a server's clients are.
 */
#include "enforce_util.h"
#include "harness.h"
#include "skmem.h"
#include "tcpbuf_maps.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define TABLE		48
#define MAX_RATIO	1.05
#define LIMIT_PAGES	512

/* "sock_fallback": {... "@what": N ...} in status --json, or -1. */
static int64_t fallback_value(const char *what)
{
	char *json = NULL, key[64];
	const char *p;
	int64_t v = -1;

	if (ctl(&json, "status --json"))
		return -1;
	p = strstr(json, "\"sock_fallback\": {");
	snprintf(key, sizeof(key), "\"%s\": ", what);
	if (p && (p = strstr(p, key)))
		sscanf(p + strlen(key), "%" SCNd64, &v);
	free(json);
	return v;
}

/* The sample of metric @line_start ("name " or "name{labels} "), or -1. */
static int64_t metric(const char *line_start)
{
	char *out = NULL;
	const char *p;
	int64_t v = -1;

	if (ctl(&out, "metrics"))
		return -1;
	for (p = out; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
		if (!strncmp(p, line_start, strlen(line_start))) {
			v = strtoll(p + strlen(line_start), NULL, 10);
			break;
		}
	free(out);
	return v;
}

/* Whether the text status has a line holding both @a and @b. */
static bool table_says(const char *a, const char *b)
{
	char *out = NULL, *line, *save = NULL;
	bool found = false;

	if (ctl(&out, "status"))
		return false;
	for (line = strtok_r(out, "\n", &save); line && !found; line = strtok_r(NULL, "\n", &save))
		found = strstr(line, a) && strstr(line, b);
	free(out);
	return found;
}

static struct xload *load_start(const char *rx, const char *tx, int nconn)
{
	struct xload *l = xload_start(&(struct xload_opts){ .rx_cgroup = rx, .tx_cgroup = tx,
							    .nconn = nconn, .mode = XL_STALL,
							    .idle = 1, .netns = 1,
							    .optmem_max = 1 });

	ASSERT_TRUE(l != NULL);
	ASSERT_OK(skmem_netns_add(xload_pid(l)));
	return l;
}

/* Stalled receivers pushed for 3 s: the peak by sock_diag, checked. */
static void push_and_check(struct xload *l, const char *cg, const char *name)
{
	struct peak_sampler *ps = peak_start(cg, 10);
	double ratio;

	ASSERT_TRUE(ps != NULL);
	ASSERT_OK(xload_send(l));
	msleep(3000);
	peak_stop(ps);
	ratio = (double)peak_pages(ps) / LIMIT_PAGES;
	test_log("%s: peak %" PRIu64 " pages by sock_diag (%.3f x max, largest gap %.1f ms), "
		 "daemon usage %" PRId64 " peak %" PRId64 ", failcnt %" PRId64 ", unaccounted %"
		 PRId64, name, peak_pages(ps), ratio, peak_max_gap_ms(ps),
		 status_field(cg, "usage_pages"), status_field(cg, "peak_pages"),
		 status_field(cg, "failcnt"), status_field(cg, "unaccounted_sockets"));
	EXPECT_LE(peak_pages(ps), (int64_t)(MAX_RATIO * LIMIT_PAGES));
	/* It must have pushed, or the bound proves nothing. */
	EXPECT_GT(peak_pages(ps), LIMIT_PAGES / 2);
	peak_free(ps);
}

/* 1. A limit set above fallback entries that already exist holds them. */
static void late_limit(const char *senders)
{
	const char *late = cg_create("late"), *inner = cg_create("late/inner");
	struct xload *l;

	limits_write(inner, 1 << 18, 0, 0, 0);	/* 1G: far */
	ASSERT_OK(daemon_reload_until(inner, 1 << 18, 5000));
	l = load_start(inner, senders, 40);
	EXPECT_EQ(wait_field(inner, "unaccounted_sockets", 40, 5000), 40);
	EXPECT_EQ(fallback_value("entries"), 40);
	limits_write(late, LIMIT_PAGES, 0, 0, 0);
	ASSERT_OK(daemon_reload_until(late, LIMIT_PAGES, 5000));
	EXPECT_EQ(wait_field(late, "unaccounted_sockets", 40, 5000), 40);
	push_and_check(l, late, "late");
	EXPECT_GT(status_field(late, "usage_pages"), LIMIT_PAGES / 2);
	xload_close(l);
	skmem_netns_clear();
	EXPECT_EQ(wait_field(late, "unaccounted_sockets", 0, 5000), 0);
	EXPECT_EQ(wait_field(inner, "unaccounted_sockets", 0, 5000), 0);
	limits_remove(late);
	limits_remove(inner);
	ASSERT_EQ(ctl(NULL, "reload"), 0);
}

/* 2. The table full: the rest held all the same, and shown. */
static void table_full(const char *senders)
{
	const char *full = cg_create("full");
	char *rel = cg_rel(full);
	struct xload *l;
	int64_t lost = -1;

	limits_write(full, LIMIT_PAGES, 0, 0, 0);
	ASSERT_OK(daemon_reload_until(full, LIMIT_PAGES, 5000));
	l = load_start(full, senders, 64);
	EXPECT_EQ(wait_field(full, "unaccounted_sockets", TABLE, 5000), TABLE);
	for (int t = 0; t < 5000 && lost != 16; t += 50, msleep(50))
		lost = fallback_value("lost_sockets");
	EXPECT_EQ(lost, 16);
	EXPECT_EQ(fallback_value("entries"), TABLE);
	EXPECT_EQ(fallback_value("max_entries"), TABLE);
	EXPECT_EQ(metric("tcpbufd_fallback_lost_sockets_total "), 16);
	EXPECT_EQ(metric("tcpbufd_table_entries{table=\"sock_fallback\"} "), TABLE);
	EXPECT_EQ(metric("tcpbufd_table_max_entries{table=\"sock_fallback\"} "), TABLE);
	EXPECT_TRUE(table_says("sock_fallback: 48 of 48 entries", "16 sockets lost"));
	EXPECT_GE(daemon_log_count("found the fallback table (sock_fallback) full"), 1);
	/* Ingress is linked for them (near or not) before they get data. */
	msleep(500);
	push_and_check(l, full, "full");
	xload_close(l);
	skmem_netns_clear();
	EXPECT_EQ(wait_field(full, "unaccounted_sockets", 0, 5000), 0);
	EXPECT_EQ(fallback_value("entries"), 0);
	/* A count of what happened, not a gauge. */
	EXPECT_EQ(fallback_value("lost_sockets"), 16);
	free(rel);
}

int main(void)
{
	const char *senders;

	test_init();
	if (!netns_has_optmem())
		SKIP("net.core.optmem_max is not per network namespace here (kernel < 6.9)");
	setenv("TCPBUF_TEST_FALLBACK_SOCKETS", "48", 1);
	senders = cg_create("senders");
	enforce_config_poll(1000, 600000);
	ASSERT_OK(daemon_start(""));
	skmem_watch_sock_charge(offsetof(struct sock_charge, charged_pages));
	late_limit(senders);
	table_full(senders);
	ASSERT_EQ(daemon_stop(), 0);
	return test_done();
}
