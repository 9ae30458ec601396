/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Listeners of crowded limited subtrees get a small SYN-ACK window
 * (tcpbuf_window.h): set when the listener is made (sock_ops), and by the
 * sweep the daemon runs when the subtree's count crosses where it flips.
 */
#ifndef TCPBUF_ENFORCE_LISTEN_BPF_H
#define TCPBUF_ENFORCE_LISTEN_BPF_H

#include "enforce_policy.bpf.h"

#define TCP_WINDOW_CLAMP	10
#define TCPBUF_LISTEN_CHILD_WINDOW	65535	/* the most a window scale of 0 allows */

struct listen_walk {
	struct ancestry_list a;
	__u32 was;		/* the listener is clamped now */
	__u32 crowded;		/* some limited level is crowded */
};

static long listen_walk_level(__u64 i, void *ctx)
{
	struct listen_walk *w = ctx;
	struct cgroup_usage *u;
	__u64 id;

	if (i >= w->a.n || i >= TCPBUF_MAX_DEPTH)
		return 1;
	id = w->a.ids[i & (TCPBUF_MAX_DEPTH - 1)];
	u = bpf_map_lookup_elem(&cgroup_usage, &id);
	if (usage_limited(u))
		w->crowded |= tcpbuf_crowded_next(w->was, u->established.sockets,
						  u->limits.max_pages);
	return 0;
}

/* The TCP_WINDOW_CLAMP the listener @tp should have now; 0: leave it (an
 * application's own clamp stays its own). */
static __always_inline int listen_window_want(struct tcp_sock *tp)
{
	struct listen_walk w = {};
	__u32 cur = tp->window_clamp;
	int want;

	if (cur && cur != TCPBUF_LISTEN_WINDOW && cur != TCPBUF_LISTEN_OPEN)
		return 0;
	ancestry_list_limited(&w.a, sk_cgroup((struct sock *)tp));
	w.was = cur == TCPBUF_LISTEN_WINDOW;
	if (w.a.n)
		bpf_loop(TCPBUF_MAX_DEPTH, listen_walk_level, &w, 0);
	want = w.crowded ? TCPBUF_LISTEN_WINDOW : TCPBUF_LISTEN_OPEN;
	if (want == (int)cur || (!cur && want == TCPBUF_LISTEN_OPEN))
		return 0;
	return want;
}

/* A connection accepted under the small clamp: its window scale is 0 for
 * good, but its window may open to what that allows; the caps govern. */
static __always_inline void listen_child_open(struct bpf_sock_ops *skops, struct tcp_sock *tp)
{
	int w = TCPBUF_LISTEN_CHILD_WINDOW;

	if (tp->window_clamp == TCPBUF_LISTEN_WINDOW)
		bpf_setsockopt(skops, SOL_TCP, TCP_WINDOW_CLAMP, &w, sizeof(w));
}

#endif /* TCPBUF_ENFORCE_LISTEN_BPF_H */
