// SPDX-License-Identifier: GPL-2.0
/*
 * A socket counted among its subtree's established sockets is counted out
 * when it goes, also one the sweep counted because it predates the limits:
 * before 6.11 such a socket cannot be given the close callback, and it
 * stayed counted (fair shares shrank, the cgroup stayed near). Connections
 * in c carry data, c gets a limit (the sweep counts them), they close: c's
 * established count (the pinned cgroup_usage entry) is back to 0. Run on
 * the 6.1 guest too (tests/check).
 */
#include "enforce_util.h"
#include "harness.h"
#include "skmem.h"
#include "tcpbuf_maps.h"

#include <inttypes.h>
#include <stdio.h>

static int64_t established(const char *cg)
{
	struct cgroup_usage u;
	uint64_t id = cg_id(cg);

	if (daemon_pinned_lookup("cgroup_usage", &id, &u))
		return -1;
	return u.established.sockets;
}

int main(void)
{
	struct skmem_total t = { 0 };
	int64_t before, after = -1;
	struct xload *l;
	const char *c;
	char msg[256];

	test_init();
	enforce_config(1000);
	ASSERT_OK(daemon_start(""));
	c = cg_create("c");
	l = xload_start(&(struct xload_opts){ .rx_cgroup = c, .nconn = 8, .mode = XL_READ });
	ASSERT_TRUE(l != NULL);
	msleep(500);
	limits_write(c, 262144, 0, 0, 0);	/* 1 GiB: far, counted only */
	ASSERT_OK(daemon_reload_until(c, 262144, 5000));
	before = established(c);
	ASSERT_OK(xload_finish(l, 60000, msg, sizeof(msg)));
	xload_close(l);
	for (int i = 0; i < 100; i++) {
		ASSERT_OK(skmem_cgroup(cg_id(c), &t));
		if (!t.sockets)
			break;
		msleep(100);
	}
	msleep(500);
	after = established(c);
	test_log("established sockets counted in c: %" PRId64 " with the connections, %" PRId64
		 " after they closed (sock_diag: %" PRIu64 " sockets left)", before, after, t.sockets);
	EXPECT_GT(before, 0);
	EXPECT_EQ(t.sockets, 0);
	EXPECT_EQ(after, 0);
	ASSERT_EQ(daemon_stop(), 0);
	return test_done();
}
