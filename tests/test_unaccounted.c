// SPDX-License-Identifier: GPL-2.0
#define _GNU_SOURCE
/*
 * Fail closed and visible: sockets of a limited cgroup whose socket storage
 * cannot be made are still held to max and show in unaccounted_sockets.
 *
 * The kernel charges socket storage to the socket's option memory, bounded
 * by net.core.optmem_max, which is per network namespace since 6.9: in a
 * namespace of the test's own with optmem_max at 1 byte, every
 * bpf_sk_storage_get(..., F_CREATE) fails (bpf_sk_storage_charge()), which
 * sock_diag shows (no socket there carries a sock_charge entry). NCONN
 * connections in "unacct" (Limit=4M, max 1024 pages; both ends inside)
 * whose receivers stop reading: read from sock_diag in that
 * namespace every 10 ms, the cgroup must stay within 1.05 x max, and status
 * (text and JSON) and metrics must count every socket as unaccounted;
 * the daemon must say so in its log; when they close, the count and the
 * fallback table are empty again. Before, the same load with normal
 * optmem in "acct": accounted through socket storage, unaccounted 0.
 * Every byte must arrive intact after each.
 */
#include "enforce_util.h"
#include "harness.h"
#include "skmem.h"
#include "tcpbuf_maps.h"

#include <linux/bpf.h>
#include <sys/syscall.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_RATIO	1.05

struct phase {
	const char *name;
	int optmem_max;		/* in the load's network namespace; 0: as made */
	int64_t limit_pages;
	int nconn;
	const char *tx;		/* senders' cgroup; NULL: the limited one */
	int unaccounted;	/* sockets expected in unaccounted_sockets */
};

struct storage_count {
	uint64_t cgid;
	int sockets, with_storage;
};

static int count_storage(const struct skmem_sock *s, void *arg)
{
	struct storage_count *c = arg;

	if (s->cgid != c->cgid || s->state == 10 /* TCP_LISTEN */)
		return 0;
	c->sockets++;
	c->with_storage += !!s->has_storage;
	return 0;
}

/* The value of the metric @name for the cgroup @rel, or -1. */
static int64_t metric_value(const char *name, const char *rel)
{
	char *out = NULL, needle[512];
	const char *p;
	int64_t v = -1;

	if (ctl(&out, "metrics") != 0)
		goto out;
	snprintf(needle, sizeof(needle), "%s{cgroup=\"%s\"", name, rel);
	p = strstr(out, needle);
	if (p && (p = strchr(p, '}')))
		v = strtoll(p + 1, NULL, 10);
out:
	free(out);
	return v;
}

/* UNACCOUNTED of the cgroup @rel in the status table (its last column), or -1. */
static int64_t table_value(const char *rel)
{
	char *out = NULL, *line, *save = NULL;
	int64_t v = -1;
	bool header = false;

	if (ctl(&out, "status %s", rel) != 0)
		goto out;
	for (line = strtok_r(out, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		const char *last = strrchr(line, ' ');

		if (strstr(line, "UNACCOUNTED") && last && !strcmp(last + 1, "UNACCOUNTED"))
			header = true;
		else if (header && !strncmp(line, rel, strlen(rel)) && line[strlen(rel)] == ' ' && last)
			v = strtoll(last + 1, NULL, 10);
	}
out:
	free(out);
	return v;
}

static int64_t fallback_entries(void)
{
	int fd = daemon_pinned_fd("sock_fallback");
	__u64 key, next, *prev = NULL;
	int64_t n = 0;

	if (fd < 0)
		return -1;
	for (;; prev = &key, n++) {
		union bpf_attr a = { .map_fd = fd, .key = (uintptr_t)prev,
				     .next_key = (uintptr_t)&next };

		if (syscall(__NR_bpf, BPF_MAP_GET_NEXT_KEY, &a, sizeof(a)))
			break;
		key = next;
	}
	close(fd);
	return n;
}

static void run(const struct phase *p)
{
	const char *cg = cg_create(p->name), *name = p->name;
	const char *tx = p->tx ? cg_create(p->tx) : NULL;
	int64_t limit_pages = p->limit_pages;
	int optmem_max = p->optmem_max, nsock = p->tx ? p->nconn : 2 * p->nconn;
	char *rel = cg_rel(cg), msg[256];
	struct storage_count sc = { .cgid = cg_id(cg) };
	struct peak_sampler *ps;
	struct xload *l;
	int64_t peak_daemon, unacct, in_table, in_metrics, entries;
	double ratio, t0;

	limits_write(cg, limit_pages, 0, 0, 0);
	ASSERT_OK(daemon_reload_until(cg, limit_pages, 5000));
	l = xload_start(&(struct xload_opts){ .rx_cgroup = cg, .tx_cgroup = tx, .nconn = p->nconn,
					       .mode = XL_STALL, .idle = 1, .netns = 1,
					       .optmem_max = optmem_max });
	ASSERT_TRUE(l != NULL);
	ASSERT_OK(skmem_netns_add(xload_pid(l)));
	ps = peak_start(cg, 10);
	ASSERT_TRUE(ps != NULL);
	ASSERT_OK(xload_send(l));
	msleep(3000);
	peak_stop(ps);

	ASSERT_OK(skmem_foreach(count_storage, &sc));
	unacct = status_field(cg, "unaccounted_sockets");
	in_table = table_value(rel);
	in_metrics = metric_value("tcpbufd_cgroup_unaccounted_sockets", rel);
	entries = fallback_entries();
	peak_daemon = status_field(cg, "peak_pages");
	ratio = (double)peak_pages(ps) / limit_pages;
	test_log("%s (optmem_max %d): peak %" PRIu64 " pages by sock_diag (%.3f x max, largest "
		 "gap %.1f ms), daemon peak %" PRId64 ", failcnt %" PRId64 "; %d sockets, %d with "
		 "storage; unaccounted %" PRId64 " (table %" PRId64 ", metrics %" PRId64
		 "), %" PRId64 " fallback entries", name, optmem_max, peak_pages(ps), ratio,
		 peak_max_gap_ms(ps), peak_daemon, status_field(cg, "failcnt"), sc.sockets,
		 sc.with_storage, unacct, in_table, in_metrics, entries);
	EXPECT_LE(peak_pages(ps), (int64_t)(MAX_RATIO * limit_pages));
	/* It must have pushed, or the bound proves nothing. */
	EXPECT_GT(peak_pages(ps), limit_pages / 2);
	EXPECT_GE(sc.sockets, nsock);
	if (optmem_max) {
		/* The way in really fails: no receiver has storage... */
		EXPECT_EQ(sc.with_storage, 0);
		/* ...and every one is counted, everywhere, and held. */
		EXPECT_EQ(unacct, p->unaccounted);
		EXPECT_EQ(in_table, p->unaccounted);
		EXPECT_EQ(in_metrics, p->unaccounted);
		EXPECT_EQ(entries, p->unaccounted);
		EXPECT_GT(peak_daemon, limit_pages / 2);
		EXPECT_GE(daemon_log_count("sockets without socket storage"), 1);
	} else {
		EXPECT_GE(sc.with_storage, nsock);
		EXPECT_EQ(unacct, 0);
		EXPECT_EQ(in_table, 0);
		EXPECT_EQ(in_metrics, 0);
	}

	t0 = now_sec();
	ASSERT_OK(xload_finish(l, 60000, msg, sizeof(msg)) == 0 ? 0 : (test_log("%s", msg), -1));
	test_log("%s: %s (drained in %.1f s)", name, msg, now_sec() - t0);
	xload_close(l);
	skmem_netns_clear();
	/* Closed: nothing left counted or in the fallback table. */
	EXPECT_EQ(wait_field(cg, "unaccounted_sockets", 0, 5000), 0);
	EXPECT_EQ(fallback_entries(), 0);
	peak_free(ps);
	limits_remove(cg);
	free(rel);
}

int main(void)
{
	/*
	 * The control as test_enforce_max's stalled load holds it. Without
	 * storage, the receivers alone (senders in an unlimited sibling, as
	 * a server's clients are) at the floor caps hold about twice this
	 * max, so only refusal at max keeps them under it.
	 */
	static const struct phase phases[] = {
		{ .name = "acct", .limit_pages = 4096, .nconn = 64 },
		{ .name = "unacct", .optmem_max = 1, .limit_pages = 512, .nconn = 48,
		  .tx = "senders", .unaccounted = 48 },
	};

	test_init();
	if (!netns_has_optmem())
		SKIP("net.core.optmem_max is not per network namespace here (kernel < 6.9)");
	enforce_config_poll(1000, 600000);
	ASSERT_OK(daemon_start(""));
	skmem_watch_sock_charge(offsetof(struct sock_charge, charged_pages));
	for (size_t i = 0; i < sizeof(phases) / sizeof(phases[0]); i++)
		run(&phases[i]);
	ASSERT_EQ(daemon_stop(), 0);
	return test_done();
}
