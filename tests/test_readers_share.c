// SPDX-License-Identifier: GPL-2.0
/*
 * A stream's reader gets the readers' share of the receive headroom
 * (tcpbuf_receive_sockets() in include/tcpbuf_policy.h), not a share among
 * all the subtree's sockets: a writer's receive queue holds only ACKs, and
 * dividing among all gave each reader half the window its writer's queue
 * is capped for.
 *
 * NCONN one-way bulk streams, both ends in one cgroup with Limit=16M (max
 * 4096 pages, pressure 3072), in a network namespace of their own as a
 * container's are (sock_diag is read there too); the readers read all the
 * time. Its 16 sockets make it near, not dormant (their guard growth,
 * 16 x 1 MiB, passes pressure) and not crowded. After a second, 100 looks
 * 20 ms apart, each the cgroup's usage entry (pinned cgroup_usage), every
 * socket of the cgroup by sock_diag with its sock_charge flags, and the
 * entry again. From the entry, by the daemon's own functions: the readers' share
 * of the headroom to max less the writers' reserve (tcpbuf_receive_sockets():
 * here 8 of 16 sockets) and the all-sockets share the cap had before
 * (16 sockets), 9/17 of it.
 *
 * A reader whose sk_rcvbuf tcpbufd set (TCPBUF_SE_RCVBUF_SET: autotuning
 * passed its cap) keeps the cap of its last segment: what it held then plus
 * the share. The least of them in a look was capped nearly drained, so it
 * shows the share; usage moves between that segment and the look, and a
 * cap grows only by more than an eighth (tcpbuf_buf_differs()): over the
 * looks taken in normal state, the median of the least capped reader's
 * sk_rcvbuf over the readers' share must be
 *   - at least 0.75, 1.4 x the all-sockets share (which gives about 0.53);
 *   - at most 1.3: the share holds them, not some larger cap.
 * And the load is the one meant: 8 writers and 16 sockets counted, most
 * looks in normal state with a capped reader (the start's burst may touch
 * pressure), usage never past max (the daemon's peak, sock_diag's), every
 * byte intact.
 *
 * Where the kernel's own ceilings (2 x rmem_max for SO_RCVBUF, tcp_rmem[2]
 * for autotuning) are below the largest readers' share, they, not the
 * share, bound the readers: skipped. Both modes; skipped where exact mode
 * cannot load.
 */
#include "enforce_util.h"
#include "harness.h"
#include "skmem.h"
#include "tcpbuf_maps.h"
#include "tcpbuf_policy.h"

#include <inttypes.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NCONN		8
#define LIMIT_PAGES	4096		/* 16 MiB */
#define WARM_MS		1000
#define LOOKS		100
#define LOOK_MS		20
#define LEAST		0.75		/* of the readers' share */
#define MOST		1.3

/* Every socket of one cgroup, as sock_diag gives them. */
struct diag {
	uint64_t cgid;
	int n;
	struct skmem_sock s[2 * NCONN + 8];
};

static int diag_cb(const struct skmem_sock *s, void *arg)
{
	struct diag *d = arg;

	if (s->cgid == d->cgid && s->has_mem && d->n < (int)(sizeof(d->s) / sizeof(d->s[0])))
		d->s[d->n++] = *s;
	return 0;
}

/* What one look found, in bytes; least < 0: no capped reader in it. */
struct look {
	int normal;
	__s64 n, senders, share, share_all;
	double least;		/* least capped reader's sk_rcvbuf / share */
	int capped;
	uint64_t pages;		/* sock_diag's count of the cgroup */
};

static int take_look(uint64_t id, struct look *k)
{
	struct cgroup_usage u0, u1;
	struct diag d = { .cgid = id };
	uint16_t port = 0;
	__s64 to_max, used;

	memset(k, 0, sizeof(*k));
	k->least = -1;
	if (daemon_pinned_lookup("cgroup_usage", &id, &u0) || skmem_foreach(diag_cb, &d) ||
	    daemon_pinned_lookup("cgroup_usage", &id, &u1))
		return -1;
	k->normal = u0.state == TCPBUF_STATE_NORMAL && u1.state == TCPBUF_STATE_NORMAL;
	k->n = tcpbuf_subtree_sockets(u0.sockets, u0.established.sockets);
	k->senders = u0.established.senders;
	used = (u0.usage_pages + u1.usage_pages) / 2;
	to_max = u0.limits.max_pages - tcpbuf_sender_reserve(k->senders, u0.limits.max_pages);
	k->share = tcpbuf_headroom_share(to_max, used, tcpbuf_receive_sockets(k->n, k->senders));
	k->share_all = tcpbuf_headroom_share(to_max, used, k->n);
	for (int i = 0; i < d.n; i++) {
		k->pages += skmem_pages(d.s[i].bytes);
		if (d.s[i].state == TCP_LISTEN)
			port = d.s[i].sport;
	}
	/* The readers: the accepted ends, on the listener's port. */
	for (int i = 0; i < d.n && k->share > 0; i++) {
		const struct skmem_sock *s = &d.s[i];
		double r = (double)s->rcvbuf / k->share;

		if (s->state != TCP_ESTABLISHED || s->sport != port || !s->has_storage ||
		    !(s->storage_u32 & TCPBUF_SE_RCVBUF_SET))
			continue;
		k->capped++;
		if (k->least < 0 || r < k->least)
			k->least = r;
	}
	return 0;
}

int main(void)
{
	static double least[LOOKS], least_all[LOOKS];
	long ceiling, rmem2;
	__s64 largest;
	int looks = 0, normal = 0, counted = 0, capped = 0;
	uint64_t diag_peak = 0;
	struct look last = {};
	struct xload *l;
	const char *cg;
	double med, med_all;
	int64_t peak, events;
	char msg[256], mode[16] = "", *out = NULL;
	uint64_t id;

	test_init();
	/* The share at usage 0, the most a reader is given. */
	largest = tcpbuf_headroom_share(LIMIT_PAGES - tcpbuf_sender_reserve(NCONN, LIMIT_PAGES), 0,
					tcpbuf_receive_sockets(2 * NCONN, NCONN));
	ceiling = 2 * sysctl_field("/proc/sys/net/core/rmem_max", 0);
	rmem2 = sysctl_field("/proc/sys/net/ipv4/tcp_rmem", 2);
	if (ceiling < largest || rmem2 < largest)
		SKIP("the kernel's ceilings (2 x rmem_max %ld, tcp_rmem[2] %ld bytes) are below "
		     "the largest readers' share (%lld bytes): they would bound the readers",
		     ceiling, rmem2, (long long)largest);
	enforce_config(1000);
	if (daemon_start("")) {
		if (daemon_log_count("refuses fentry/fexit"))
			SKIP("this kernel refuses fentry/fexit programs (exact mode)");
		ASSERT_TRUE(!"daemon started");
	}
	ASSERT_OK(ctl(&out, "status --json"));
	json_string_field(out, "mode", mode, sizeof(mode));
	free(out);
	skmem_watch_sock_charge(offsetof(struct sock_charge, enforce.flags));
	cg = cg_create("c");
	id = cg_id(cg);
	limits_write(cg, LIMIT_PAGES, 0, 0, 0);
	ASSERT_OK(daemon_reload_until(cg, LIMIT_PAGES, 5000));

	l = xload_start(&(struct xload_opts){ .rx_cgroup = cg, .nconn = NCONN, .mode = XL_READ,
					      .netns = 1 });
	ASSERT_TRUE(l != NULL);
	ASSERT_OK(skmem_netns_add(xload_pid(l)));
	msleep(WARM_MS);
	for (int i = 0; i < LOOKS; i++) {
		struct look k;

		msleep(LOOK_MS);
		if (take_look(id, &k))
			continue;
		looks++;
		if (k.pages > diag_peak)
			diag_peak = k.pages;
		if (!k.normal)
			continue;
		normal++;
		last = k;
		capped += k.capped;
		if (k.least < 0)
			continue;
		least[counted] = k.least;
		least_all[counted++] = k.least * k.share / k.share_all;
	}
	peak = status_field(cg, "peak_pages");
	events = status_field(cg, "pressure_events");
	ASSERT_OK(xload_quiesce(l));
	EXPECT_OK(xload_finish(l, 60000, msg, sizeof(msg)));
	xload_close(l);
	skmem_netns_clear();

	test_log("%s mode: %d looks, %d in normal state, %d with a capped reader (%.1f capped "
		 "readers a look); %lld sockets, %lld writers", mode, looks, normal,
		 counted, normal ? (double)capped / normal : 0.0, (long long)last.n,
		 (long long)last.senders);
	ASSERT_GE(counted * 2, looks);
	med = median_of(least, counted);
	med_all = median_of(least_all, counted);
	test_log("least capped reader's sk_rcvbuf, median: %.3f x the readers' share, %.3f x the "
		 "all-sockets share (last look: %lld and %lld bytes)", med, med_all,
		 (long long)last.share, (long long)last.share_all);
	test_log("peak %" PRId64 " pages (daemon), %" PRIu64 " (sock_diag), max %d; %" PRId64
		 " pressure events; %s", peak, diag_peak, LIMIT_PAGES, events, msg);
	EXPECT_EQ(last.senders, NCONN);
	EXPECT_EQ(last.n, 2 * NCONN);
	EXPECT_GE_F(med, LEAST);
	EXPECT_LE_F(med, MOST);
	EXPECT_TRUE(peak > 0 && peak <= LIMIT_PAGES);
	EXPECT_LE(diag_peak, LIMIT_PAGES);
	ASSERT_EQ(daemon_stop(), 0);
	return test_done();
}
