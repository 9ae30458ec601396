/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Map value structs shared by the BPF programs (bpf/) and the daemon (src/).
 * Nothing else belongs here: this is the on-bpffs layout, versioned by
 * TCPBUF_LAYOUT_VERSION so a restarted daemon can tell whether pinned maps
 * are its own.
 */
#ifndef TCPBUF_MAPS_H
#define TCPBUF_MAPS_H

#ifndef __VMLINUX_H__	/* BPF side: vmlinux.h has the types already */
#include <linux/types.h>
#endif

#define TCPBUF_LAYOUT_VERSION	21

/*
 * A socket charges its own cgroup and its limited ancestors, however far
 * up, this many cgroups in all (so at most TCPBUF_MAX_NESTED_LIMITS limits
 * nested on one path: set-limit and reload refuse more, src/limits.c).
 * Eight, so that struct sock_charge is at most 120 bytes: its storage
 * element (64 bytes of header, 8 of map pointer and the value) and the
 * socket's storage struct are then both 192-byte objects, from one slab
 * page most of the time, and a lookup first touching them in its kernel
 * entry pays for one page, not two.
 */
#define TCPBUF_MAX_DEPTH	8
#define TCPBUF_MAX_NESTED_LIMITS	(TCPBUF_MAX_DEPTH - 1)
/* How far up a walk for limited ancestors looks (bpf_loop() bound). */
#define TCPBUF_WALK_LEVELS	4096
#define TCPBUF_MAX_CGROUPS	65536
/* Sockets of limited subtrees whose socket storage could not be made, held in
 * map "sock_fallback" instead (bpf/sock_fallback.bpf.h). */
#define TCPBUF_FALLBACK_SOCKETS	16384

enum tcpbuf_mode {
	TCPBUF_MODE_EXACT	= 1,	/* fentry/fexit on the kernel's sk_mem functions */
	TCPBUF_MODE_SAMPLED	= 2,	/* per-socket footprint sampled at events + iter/tcp */
};

enum tcpbuf_state {
	TCPBUF_STATE_NORMAL	= 0,
	TCPBUF_STATE_PRESSURE	= 1,
	TCPBUF_STATE_MAX	= 2,
};

/*
 * Map "cgroup_limits", key: cgroup id. Written by the daemon only; absent = no limits.
 * All values in pages; 0 means "not set". Copied into the cgroup's usage entry.
 */
struct cgroup_limits {
	__u64 limit_pages;	/* the administrator's ceiling */
	__u64 min_pages;	/* leave pressure when usage falls below this */
	__u64 pressure_pages;	/* enter pressure when usage reaches this */
	__u64 max_pages;	/* usage must not pass this */
};

/*
 * The established sockets of limited subtrees, counted at every ancestor
 * level, maintained from sock_ops (established, closed) and the sweep
 * (enforcement's part of struct cgroup_usage).
 *  - sockets: fair shares and headroom shares are divided among them (all
 *    of them, idle ones too: an idle socket may start writing any time);
 *  - senders: those that have sent data. Each may start one skb past any
 *    sk_sndbuf once its queue empties (TCP forces memory for the first skb
 *    of an empty send queue), so that much room is kept below max.
 */
struct cgroup_sockets {
	__s64 sockets;
	__s64 senders;
	__u32 near;	/* bit 0 near (tcpbuf_near_next()), bit 1 crowded (tcpbuf_crowded_next()) */
	__u32 dormant;	/* near by its sockets, but under its guard (tcpbuf_near_guard());
			 * TCPBUF_DORMANT_BOUNDED set: bounded too (tcpbuf_bounded_share()) */
	__u32 crowd_ms;	/* when it last turned crowded (CLOCK_MONOTONIC, ms, wraps) */
	__u32 syn_drops;	/* SYNs its listeners' ingress dropped while it was newly
				 * crowded (enforce_crowd.bpf.h) */
	__u32 wide_writers;	/* sampled mode, 1 once a writer here could pass tcp_wmem[2]
				 * (tcpbuf_sndbuf_wide()): the guard keeps the wide
				 * writers' ceiling from then on */
	__u32 pad;
};

/* cgroup_sockets.dormant: bit 0 dormant, this bit bounded too. */
#define TCPBUF_DORMANT_BOUNDED	2

/*
 * Map "cgroup_usage", key: cgroup id (__u64, the inode of the cgroup v2 directory).
 * A socket's pages are charged to its own cgroup and to every limited
 * ancestor: a limited cgroup's usage is its whole subtree's, an unlimited
 * one's only its own sockets' (the daemon adds its descendants', status.c).
 */
struct cgroup_usage {
	/* What every charge reads or writes comes first, in 56 bytes, so it
	 * shares as few cache lines as it can with the hash element's own 56
	 * (link, hash, key). */
	__s64 usage_pages;	/* pages charged by TCP sockets in this subtree now */
	__s64 peak_pages;	/* highest usage_pages seen since the entry was created */
	__u32 state;		/* enum tcpbuf_state, written by the enforcement side */
	/* Usage came within ingress's reach of max (watch_point, tcpbuf_policy.h;
	 * charge.bpf.h): set by the charge that came there, which bumps
	 * enforce_ctl.epoch so no socket's ingress keeps trusting an older
	 * look (sock_charge.max_clear_epoch); cleared well below it. */
	__u32 max_watch;
	/*
	 * The cgroup's entry in cgroup_limits, copied here (all 0: none) so a
	 * charge finds the thresholds it moves the state against in the entry
	 * it charges, instead of a second hash lookup per level. Written only
	 * by the daemon's limits_refresh pass, after each change of limits;
	 * the daemon makes the entries of limited cgroups itself, before the
	 * pass, so an entry a charge makes later is never a limited one.
	 */
	struct cgroup_limits limits;
	__s64 sockets;		/* sockets in this subtree holding at least one page */
	__u64 failcnt;		/* segments refused because usage was at max */
	__u64 pressure_events;	/* times the cgroup entered pressure */
	__u32 level;		/* depth of the cgroup below the v2 root (root = 0) */
	__u32 unaccounted_sockets;	/* sockets in this subtree without socket storage
					 * (optmem), held through sock_fallback */
	/* In the same entry, not a map of its own: the caps of a segment
	 * read both, and a second hash lookup would cost each pass. */
	struct cgroup_sockets established;
};

/* sock_enforce.flags */
#define TCPBUF_SE_LIMITED	1	/* armed: capped and followed (a limited ancestor is near) */
#define TCPBUF_SE_SNDBUF_SET	2	/* sk_sndbuf is ours (set by tcpbufd) */
#define TCPBUF_SE_RCVBUF_SET	4	/* sk_rcvbuf is ours */
#define TCPBUF_SE_COUNTED	8	/* counted in cgroup_usage.established.sockets */
#define TCPBUF_SE_SENDER	16	/* counted in cgroup_usage.established.senders */
#define TCPBUF_SE_FOLLOWED	32	/* sampled at syscalls and ingress, not capped (sampled
					 * mode: a limited ancestor is dormant, none near) */
#define TCPBUF_SE_REST_LOCK	64	/* sk_rcvbuf locked at its size while ingress rests
					 * (enforce_rest.bpf.h) */
#define TCPBUF_SE_FALLBACK	128	/* an entry of sock_fallback: counted in its cgroups'
					 * unaccounted_sockets */
#define TCPBUF_SE_REST_RAISE	256	/* rest-locked, and autotuning asked for more */

/* The kernel's sk_userlocks bits (include/net/sock.h). */
#define TCPBUF_SNDBUF_LOCK	1
#define TCPBUF_RCVBUF_LOCK	2

/*
 * What enforcement did to one socket's buffer sizes, so caps can be lifted
 * to what the application had: part of the socket's sock_charge entry.
 */
struct sock_enforce {
	__u16 flags;		/* TCPBUF_SE_* */
	__u8 user_locks;	/* TCPBUF_*BUF_LOCK the application set itself */
	__u8 state;		/* strictest state of its limited ancestors when last capped */
	__s32 user_sndbuf;	/* sk_sndbuf the application chose (if locked) */
	__s32 user_rcvbuf;	/* sk_rcvbuf the application chose (if locked) */
	__s32 set_sndbuf;	/* sk_sndbuf as tcpbufd last set it */
	__s32 set_rcvbuf;	/* sk_rcvbuf as tcpbufd last set it */
};

/* sock_verdict.bits: what the socket's last looks found. */
#define TCPBUF_V_MASK		1	/* mask: which levels are limited */
#define TCPBUF_V_SETTLED	2	/* caps need no new pass (tcpbuf_caps_settled()) */
#define TCPBUF_V_SND_AT_CAP	4	/* settled with sk_sndbuf at its cap: growth is no
					 * reason for a new pass */
#define TCPBUF_V_CLEAR		8	/* ingress: every limited level below its watch point */
#define TCPBUF_V_BOUNDED	16	/* ingress: every limited level bounded or far (sampled mode,
					 * tcpbuf_bounded_share()) */
#define TCPBUF_V_BOUND_LOOKED	32	/* ingress: asked whether it is bounded at this epoch */

/*
 * A socket's verdict: what its last looks found, good only while the host's
 * epoch (tcpbuf_enforce_ctl.epoch) is the one they were made at, settled
 * caps also only until their stamp expires (tcpbuf_verdict_valid()). One
 * word, so that ingress, which runs without the socket's lock, adds its bit
 * with a compare-and-swap: a plain store could write back settled caps that
 * sock_ops cleared meanwhile.
 */
union sock_verdict {
	struct {
		__u32 epoch;	/* tcpbuf_enforce_ctl.epoch its looks began at */
		__u16 stamp;	/* tcpbuf_settled_clock() when found settled */
		__u8 mask;	/* bit i: ancestors[i] is limited */
		__u8 bits;	/* TCPBUF_V_* */
	};
	__u64 word;
};
_Static_assert(TCPBUF_MAX_DEPTH <= 8, "sock_verdict.mask: a bit per level");

/*
 * Socket local storage "sock_charge": what this socket has charged and to whom,
 * so every uncharge goes back to the cgroup that was charged. Ordered so
 * that what a charge or an ingress check reads (the charge, the verdict,
 * the flags, the first ancestors) shares the entry's first cache line.
 */
struct sock_charge {
	__s32 charged_pages;	/* pages currently charged by this socket */
	union {
		struct {
			__u16 levels;		/* entries in ancestors[] */
			/* Bit i: ancestors[i] had no usage entry and none
			 * could be made (cgroup_usage full) when this socket
			 * charged it, so it holds none of the socket's pages
			 * (charge.bpf.h, "late entries"). Beside levels, on
			 * the line every charge reads. */
			__u16 missed_levels;
		};
		__u32 levels_word;	/* both, for atomics (TCPBUF_MISSED_BIT()) */
	};
	/* The one thing each fast path asks first (tcpbuf_verdict_valid()). */
	union sock_verdict verdict;
	/*
	 * Enforcement's part (all 0 for a socket it never sized). In the
	 * same entry as the charge, not an entry of its own: creating and
	 * finding a socket-storage entry is much of what a socket of a
	 * limited cgroup costs at establishment, and every sampler and
	 * ingress run asks whether the socket is armed before it charges.
	 */
	struct sock_enforce enforce;
	__u32 ancestry_epoch;	/* tcpbuf_enforce_ctl.limits_epoch when ancestors[] was read */
	/*
	 * The cgroups every charge of this socket goes to: its own first,
	 * then its limited ancestors, nearest first (charge.bpf.h), read when
	 * the entry is created and again by the sweep after limits change: a
	 * socket's cgroup is fixed at its creation, and walking the ancestry
	 * at every charge cost more than the rest of the charge.
	 */
	__u64 ancestors[TCPBUF_MAX_DEPTH];
	__u32 level;		/* level of the socket's own cgroup (ancestors[0]) */
	union {
		/* Exact mode: of charged_pages, those the kernel gave back
		 * that the cgroups still hold (charge.bpf.h, "kept pages"). */
		__u32 kept_pages;
		/* Sampled mode: the sk_rcvbuf its bounded levels leave it,
		 * as its last look found (tcpbuf_bounded_share(); 0: look
		 * again). */
		__u32 bounded_rcvbuf;
	};
	/* The cgroup charged (the socket's own), written last: once it is
	 * set, so is the rest (levels 0: a socket of the root cgroup). */
	__u64 cgroup_id;
};
_Static_assert(sizeof(struct sock_charge) <= 120, "see TCPBUF_MAX_DEPTH");
/* What a charge reads (the charge, the levels, the verdict, the flags, the
 * first ancestors) in the first 56 bytes: the element's first cache line. */
_Static_assert(__builtin_offsetof(struct sock_charge, ancestors[1]) + 8 <= 56,
	       "sock_charge: the first cache line");
/* sock_charge.levels_word: @n levels, and missed_levels' bit for ancestors[@i]. */
/* Beside them, exact mode's (bpf/charge.bpf.h, kept pages): TCPBUF_CHECKED_BIT,
 * the list was asked whether it has a limited level; TCPBUF_UNLIMITED_BIT, none. */
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#define TCPBUF_LEVELS_WORD(n)	((__u32)(n) << 16)
#define TCPBUF_MISSED_BIT(i)	(1u << ((i) & (TCPBUF_MAX_DEPTH - 1)))
#define TCPBUF_UNLIMITED_BIT	(1u << 15)
#define TCPBUF_CHECKED_BIT	(1u << 14)
#else
#define TCPBUF_LEVELS_WORD(n)	((__u32)(n))
#define TCPBUF_MISSED_BIT(i)	(1u << (16 + ((i) & (TCPBUF_MAX_DEPTH - 1))))
#define TCPBUF_UNLIMITED_BIT	(1u << 31)
#define TCPBUF_CHECKED_BIT	(1u << 30)
#endif

/* Map "fallback_ctl" (array, one entry), written by BPF only. */
struct tcpbuf_fallback_ctl {
	__s64 sockets;		/* entries in sock_fallback now: while 0, nothing looks there */
	__u64 lost;		/* sockets left with no entry at all (sock_fallback was full),
				 * held at the floors and refused at ingress */
};

/* Map "meta" (array, one entry): who owns the pinned maps. */
struct tcpbuf_meta {
	__u32 layout_version;	/* TCPBUF_LAYOUT_VERSION of the daemon that created the maps */
	__u32 mode;		/* enum tcpbuf_mode of the running accounting */
	__u64 build_id;		/* hash of the BPF objects that are attached */
};

#endif /* TCPBUF_MAPS_H */
