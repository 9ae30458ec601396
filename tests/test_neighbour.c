// SPDX-License-Identifier: GPL-2.0
/*
 * A limit costs the connections of its cgroup's neighbours nothing they do
 * not need: while "lim" has limits, the accepted ends of idle connections in
 * its unlimited sibling "nb" get no sock_charge entry at establishment
 * (making one is most of what enforce_sockops costs a connection), while
 * those in "lim" get theirs there and are counted (TCPBUF_SE_COUNTED: in
 * their subtree's established sockets). Once "nb" has a limit of its own,
 * the sweep that follows gives its sockets their entries and counts them.
 * Oracle: sock_diag, which reports each socket's entry.
 *
 * Only accepted ends are asked about for "nb": in exact mode the connecting
 * end's SYN is charged (sk_forced_mem_schedule), which makes its entry.
 */
#include "enforce_util.h"
#include "harness.h"
#include "skmem.h"
#include "tcpbuf_maps.h"

#include <netinet/tcp.h>
#include <stddef.h>
#include <stdio.h>

#define NCONN		4
#define FAR_PAGES	262144		/* 1 GiB: never near */

struct entries {
	uint64_t cgid;
	uint16_t port;		/* the listener's: accepted ends have it as sport */
	int accepted, accepted_with, established, established_with, counted;
};

static int listener_cb(const struct skmem_sock *s, void *arg)
{
	struct entries *e = arg;

	if (s->cgid == e->cgid && s->state == TCP_LISTEN)
		e->port = s->sport;
	return 0;
}

static int entries_cb(const struct skmem_sock *s, void *arg)
{
	struct entries *e = arg;

	if (s->cgid != e->cgid || s->state != TCP_ESTABLISHED)
		return 0;
	e->established++;
	e->established_with += s->has_storage;
	e->counted += s->has_storage && (s->storage_u32 & TCPBUF_SE_COUNTED);
	if (s->sport == e->port) {
		e->accepted++;
		e->accepted_with += s->has_storage;
	}
	return 0;
}

static struct entries entries_of(const char *cg)
{
	struct entries e = { .cgid = cg_id(cg) };

	EXPECT_OK(skmem_foreach(listener_cb, &e));
	EXPECT_NE(e.port, 0);
	EXPECT_OK(skmem_foreach(entries_cb, &e));
	return e;
}

int main(void)
{
	struct xload *in_lim, *in_nb;
	struct entries lim_e, nb_e;
	const char *lim, *nb;

	test_init();
	enforce_config(1000);
	ASSERT_OK(daemon_start(""));
	skmem_watch_sock_charge(offsetof(struct sock_charge, enforce.flags));
	lim = cg_create("lim");
	nb = cg_create("nb");
	limits_write(lim, FAR_PAGES, 0, 0, 0);
	ASSERT_OK(daemon_reload_until(lim, FAR_PAGES, 5000));

	in_lim = xload_start(&(struct xload_opts){ .rx_cgroup = lim, .nconn = NCONN, .idle = 1,
						    .mode = XL_READ });
	in_nb = xload_start(&(struct xload_opts){ .rx_cgroup = nb, .nconn = NCONN, .idle = 1,
						   .mode = XL_READ });
	ASSERT_TRUE(in_lim != NULL && in_nb != NULL);
	msleep(300);
	lim_e = entries_of(lim);
	nb_e = entries_of(nb);
	test_log("lim: %d of %d established sockets with an entry, %d counted; "
		 "nb: %d of %d (accepted ends %d of %d)", lim_e.established_with,
		 lim_e.established, lim_e.counted, nb_e.established_with, nb_e.established,
		 nb_e.accepted_with, nb_e.accepted);
	EXPECT_EQ(lim_e.established, 2 * NCONN);
	EXPECT_EQ(lim_e.established_with, 2 * NCONN);
	EXPECT_EQ(lim_e.counted, 2 * NCONN);
	EXPECT_EQ(nb_e.accepted, NCONN);
	EXPECT_EQ(nb_e.accepted_with, 0);

	/* A limit of its own: the sweep reaches the sockets that have none. */
	limits_write(nb, FAR_PAGES, 0, 0, 0);
	ASSERT_OK(daemon_reload_until(nb, FAR_PAGES, 5000));
	for (double end = now_sec() + 5; now_sec() < end; msleep(50))
		if (entries_of(nb).counted == 2 * NCONN)
			break;
	nb_e = entries_of(nb);
	test_log("nb limited: %d of %d established sockets with an entry, %d counted",
		 nb_e.established_with, nb_e.established, nb_e.counted);
	EXPECT_EQ(nb_e.established_with, 2 * NCONN);
	EXPECT_EQ(nb_e.counted, 2 * NCONN);

	xload_close(in_nb);
	xload_close(in_lim);
	return test_done();
}
