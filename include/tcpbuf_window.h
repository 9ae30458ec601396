/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The initial window of a crowded limited cgroup's listeners. A sender packs
 * at most half the largest window its peer ever advertised into one skb
 * (tcp_bound_to_half_wnd() in tcp_xmit_size_goal()), and the first window
 * is the SYN-ACK's, which the listener's TCP_WINDOW_CLAMP bounds: over
 * loopback it is 64 KiB otherwise, so each writer of an empty queue forces
 * a 32 KiB skb and each receiver takes one, whatever the caps say. A small
 * clamp also fixes the connection's window scale at 0 (windows of 64 KiB at
 * most, for good), so it is set only where the subtree holds so many
 * sockets that two such skbs each would fill a quarter of max.
 * Pure arithmetic, shared by the BPF programs and the tests.
 */
#ifndef TCPBUF_WINDOW_H
#define TCPBUF_WINDOW_H

#define TCPBUF_CONN_SKB_PAGES	9		/* a 32 KiB skb, its overhead and rounding */
#define TCPBUF_LISTEN_WINDOW	8192		/* SYN-ACK window while crowded, bytes */
#define TCPBUF_LISTEN_OPEN	(65535 << 14)	/* the kernel's largest: no clamp */

/* Sockets from which a subtree is crowded: with max 4096 pages, 113. */
static inline __s64 tcpbuf_crowded_sockets(__s64 max_pages)
{
	return max_pages > 0 ? (__s64)((__u64)(max_pages >> 2) / TCPBUF_CONN_SKB_PAGES) + 1 : 1;
}

/* Crowded again while it still holds half that many (a listener clamped at
 * 113 sockets is opened again below 57), so one connection more or less
 * does not flip its listeners. */
static inline int tcpbuf_crowded_next(int crowded, __s64 sockets, __s64 max_pages)
{
	__s64 at = tcpbuf_crowded_sockets(max_pages);

	return max_pages > 0 && sockets >= (crowded ? at / 2 : at);
}

/* Whether a change of the subtree's count from @old to @new sockets may
 * flip its listeners (the daemon then sweeps them): crossing the point
 * upward, or half of it downward. */
static inline int tcpbuf_crowding_crossed(__s64 old, __s64 new, __s64 max_pages)
{
	__s64 at = tcpbuf_crowded_sockets(max_pages);

	if (max_pages <= 0)
		return 0;
	return (old < at && new >= at) || (old >= at / 2 && new < at / 2);
}

#endif /* TCPBUF_WINDOW_H */
