// SPDX-License-Identifier: GPL-2.0
/*
 * A cgroup that turns near while the daemon does not answer (sampled mode).
 *
 * A 16 MiB limit (max 4,096 pages; bounded_limit() where writers reach
 * further) is near from its first socket and, in
 * sampled mode, dormant and bounded at its first connection: the daemon
 * links ingress then but not the samplers, which a bounded cgroup does not
 * need. A burst of stalled connections then turns it near. Until the daemon
 * links the samplers, nothing but the armed sockets' own samples at each
 * segment moves usage, and caps from stale usage hand every new socket a
 * share of the whole headroom. BPF must not take the ingress link for "what
 * near cgroups need is linked" (enforce_ctl.near_linked) meanwhile.
 *
 * 1. One idle connection: dormant and bounded; the daemon has answered
 *    (per-segment enforcement on, ingress linked), the samplers are not
 *    linked, and enforce_ctl.near_linked is clear.
 * 2. The daemon stopped (SIGSTOP), 15 stalled-receiver connections per 16 MiB: the
 *    peak by sock_diag stays within 1.05 x max, the programs alone.
 * 3. The daemon goes on: the samplers are linked.
 */
#include "enforce_util.h"
#include "harness.h"
#include "load.h"
#include "skmem.h"

#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tcpbuf_maps.h"
#include "tcpbuf_enforce.h"

/* 15 stalled connections per 16 MiB of max: enough to pass it unchecked. */
#define NCONN_PER_16M	15

static int pinned(const char *name)
{
	char path[4096];

	snprintf(path, sizeof(path), "%s/links/%s", daemon_pin_path(), name);
	return access(path, F_OK) == 0;
}

static void daemon_resume(void *arg)
{
	(void)arg;
	daemon_signal(SIGCONT);
}

int main(void)
{
	struct cgroup_usage u = { 0 };
	struct tcpbuf_enforce_ctl c = { 0 };
	struct peak_sampler *p;
	struct xload *first;
	struct load *burst;
	char ingress[64];
	uint32_t zero = 0;
	uint64_t id, peak;
	const char *cg;
	bool ready = false;
	int max_pages, nconn;

	test_init();
	enforce_config(200);
	ASSERT_OK(daemon_start(""));
	if (strcmp(daemon_mode(), "sampled"))
		SKIP("exact mode: no samplers to link");
	max_pages = (int)(bounded_limit() >> 12);
	nconn = NCONN_PER_16M * max_pages / 4096;
	cg = cg_create("c");
	id = cg_id(cg);
	snprintf(ingress, sizeof(ingress), "ingress-%" PRIu64, id);
	limits_write(cg, max_pages, max_pages, max_pages * 3 / 4, max_pages / 2);
	ASSERT_OK(daemon_reload_until(cg, max_pages, 5000));

	/* 1. Dormant and bounded, answered. */
	first = xload_start(&(struct xload_opts){ .rx_cgroup = cg, .nconn = 1, .idle = 1,
						   .mode = XL_STALL });
	ASSERT_TRUE(first != NULL);
	ready = daemon_log_wait("per-segment enforcement on", 1, 10000) >= 1;
	ready = ready && !daemon_pinned_lookup("cgroup_usage", &id, &u) &&
		!daemon_pinned_lookup("enforce_ctl", &zero, &c) && u.established.sockets == 2 &&
		pinned(ingress);
	test_log("first connection: %lld sockets, near %u, dormant %u, near_linked %u, ingress %d, "
		 "send_length %d", (long long)u.established.sockets, u.established.near,
		 u.established.dormant, c.near_linked, pinned(ingress), pinned("send_length"));
	if (!ready || u.established.near || !(u.established.dormant & TCPBUF_DORMANT_BOUNDED))
		SKIP("the first connection does not leave the cgroup dormant and bounded here");
	EXPECT_EQ(pinned("send_length"), 0);
	EXPECT_EQ(c.near_linked, 0);

	/* 2. The burst, the daemon stopped. */
	ASSERT_OK(daemon_signal(SIGSTOP));
	test_defer(daemon_resume, NULL);
	p = peak_start(cg, 10);
	ASSERT_TRUE(p != NULL);
	burst = load_start(&(struct load_opts){ .cgroup = cg, .nconn = nconn });
	ASSERT_TRUE(burst != NULL);
	load_wait_filled(burst, 20000);
	msleep(300);
	peak_stop(p);
	peak = peak_pages(p);
	ASSERT_OK(daemon_pinned_lookup("cgroup_usage", &id, &u));
	test_log("burst of %d stalled connections, the daemon stopped: sock_diag peak %" PRIu64
		 " pages (max %d, gap %.0f ms), usage %lld, near %u", nconn, peak, max_pages,
		 peak_max_gap_ms(p), (long long)u.usage_pages, u.established.near);
	EXPECT_LE(peak, max_pages * 105 / 100);
	EXPECT_GE(peak, max_pages / 2);	/* the load is real */
	peak_free(p);

	/* 3. Answered: the samplers follow the near cgroup. */
	ASSERT_OK(daemon_signal(SIGCONT));
	for (double end = now_sec() + 10; now_sec() < end && !pinned("send_length"); msleep(20))
		;
	EXPECT_EQ(pinned("send_length"), 1);
	xload_close(first);
	return test_done();
}
