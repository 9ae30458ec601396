/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The writers' reserve: room kept below max for the skb each writer of a
 * subtree may start when its send queue empties. TCP forces memory for the
 * first skb of an empty send queue whatever sk_sndbuf says
 * (sk_forced_mem_schedule), so with both ends in the subtree max is in
 * effect reached that much earlier: ingress refuses at max less the
 * reserve, and what the writers then force fills the rest.
 * Pure arithmetic on pages, shared by the BPF programs and the tests
 * (which include the __s64 type themselves, as for tcpbuf_enforce.h).
 */
#ifndef TCPBUF_RESERVE_H
#define TCPBUF_RESERVE_H

#define TCPBUF_SENDER_RESERVE_PAGES	17	/* a 64 KiB skb and its overhead */

/*
 * One skb per writer, up to three quarters of max: receivers keep a quarter,
 * and a receiver with nothing queued is never refused its next segment, so
 * every connection still drains. Examples with max 4096 pages (16 MiB):
 * 16 writers 272 pages, 64 writers 1088, 256 writers 3072 (4352 wanted).
 */
static inline __s64 tcpbuf_sender_reserve(__s64 senders, __s64 max_pages)
{
	__s64 want = senders > 0 ? senders * TCPBUF_SENDER_RESERVE_PAGES : 0;
	__s64 cap = max_pages - (max_pages >> 2);

	return want < cap ? want : cap;
}

/* Usage below which the reserve cannot matter, with a margin of a segment
 * and 1/64 of max: max 4096, reserve 1088 -> 2928 pages. */
static inline __s64 tcpbuf_reserve_point(__s64 max_pages, __s64 reserve)
{
	return max_pages - reserve - (max_pages >> 6) - 16;
}

#endif /* TCPBUF_RESERVE_H */
