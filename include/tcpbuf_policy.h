/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The policy of enforcement: every arithmetic decision, as plain functions
 * over plain values (no maps, no helpers, no socket), shared by the BPF
 * programs (bpf/), the daemon (src/) and tests/test_policy.c. The programs
 * look the values up, call these and apply the answer.
 *
 * Worked examples (pages of 4 KiB; tests/test_policy.c holds them all):
 *   limit 16 MiB, nothing else set:    min 2048, pressure 3072, max 4096
 *   max 4096 (16 MiB):                 zones watch_clear 2528, watch_point 2672,
 *                                      reserve_point 2992, max 4096, slack_end 4224
 *   max 4096, 100 writers counted:     effective max 3072 from usage 2992 on
 *                                      (reserve 1024: a quarter of max at most)
 *   min 2048, pressure 3072, max 4096: normal -> pressure at 3072, back to normal
 *                                      below 2048; max at 4096, left below 4032
 *   pressure 3072, 10 sockets, normal: a socket's send share of the headroom
 *                                      to pressure at usage 2072 is 1000*4096/11
 *   pressure band 2560 pages, 10 sockets: fair share 1 MiB each
 */
#ifndef TCPBUF_POLICY_H
#define TCPBUF_POLICY_H

#include "tcpbuf_maps.h"
#ifndef __VMLINUX_H__
#include <stdbool.h>
#endif

/* Inlined into every BPF caller, as the programs' own helpers are: a call
 * would be a BPF-to-BPF call the verifier checks apart. */
#define TCPBUF_POLICY	static inline __attribute__((always_inline))

#define TCPBUF_PAGE_SHIFT	12
#define TCPBUF_PAGE_SIZE	(1 << TCPBUF_PAGE_SHIFT)

TCPBUF_POLICY __s64 tcpbuf_min_s64(__s64 a, __s64 b) { return a < b ? a : b; }
TCPBUF_POLICY __s64 tcpbuf_max_s64(__s64 a, __s64 b) { return a > b ? a : b; }

/* ------------------------------------------------------------ the zones */

/*
 * The lines around max, in pages, from one max. For every max they are in
 * this order (tests/test_policy.c checks it for every max up to 2^20):
 *
 *   watch_clear < watch_point < reserve_point <= exit(effective)
 *               < effective <= max < slack_end
 *
 * - watch_point: usage from here is within ingress's reach of refusal, so
 *   ingress stops trusting its last look (max_watch set): a margin under
 *   reserve_point for what sockets accept before they look again, 1/16 of
 *   max and 256 KiB;
 * - watch_clear: max_watch is cleared only this far below (1/32 of max and
 *   a segment), so a cgroup hovering at watch_point does not end every
 *   socket's trust at every charge;
 * - reserve_point: below it the writers' reserve (at most max/4) cannot
 *   matter, with a margin of a segment and 1/64 of max;
 * - effective (tcpbuf_max_effective()): max less the writers' reserve, from
 *   reserve_point on; exit (tcpbuf_max_exit()) is where a cgroup at max
 *   leaves it;
 * - slack_end: a socket with nothing queued still gets a segment up to here
 *   (tcpbuf_ingress_refuses()).
 * A max under 120 pages has watch_point below 0: always watched.
 */
struct tcpbuf_zones {
	__s64 watch_clear;
	__s64 watch_point;
	__s64 reserve_point;
	__s64 max;
	__s64 slack_end;
};

TCPBUF_POLICY __s64 tcpbuf_reserve_point(__s64 max)
{
	return max - (max >> 2) - (max >> 6) - 16;
}

TCPBUF_POLICY __s64 tcpbuf_watch_point(__s64 max)
{
	return tcpbuf_reserve_point(max) - (max >> 4) - 64;
}

TCPBUF_POLICY struct tcpbuf_zones tcpbuf_zones_of(__s64 max)
{
	struct tcpbuf_zones z = {
		.watch_point = tcpbuf_watch_point(max),
		.reserve_point = tcpbuf_reserve_point(max),
		.max = max,
		.slack_end = max + (max >> 5),
	};

	z.watch_clear = z.watch_point - (max >> 5) - 16;
	return z;
}

/* ---------------------------------------------------- max and its reserve */

#define TCPBUF_SENDER_RESERVE_PAGES	17	/* a 64 KiB skb and its overhead */

/*
 * Room kept back below max for the skb each writer of the subtree may start
 * when its queue empties, whatever its sk_sndbuf (TCP forces memory for the
 * first skb of an empty send queue): one per writer, at most a quarter of
 * max so a subtree of many writers still receives.
 */
TCPBUF_POLICY __s64 tcpbuf_sender_reserve(__s64 senders, __u64 max)
{
	__s64 r = senders > 0 ? senders * TCPBUF_SENDER_RESERVE_PAGES : 0;
	__s64 quarter = max >> 2;

	return r < quarter ? r : quarter;
}

/* Max as ingress and the state machine apply it at usage @now: less the
 * reserve of the subtree's @senders, where that can matter. */
TCPBUF_POLICY __s64 tcpbuf_max_effective(__s64 max, __s64 senders, __s64 now)
{
	if (now < tcpbuf_reserve_point(max))
		return max;
	return max - tcpbuf_sender_reserve(senders, max);
}

/*
 * Where a cgroup at (effective) max @max leaves it. Refusal at ingress keeps
 * usage within one segment under max, so "back under max" needs a margin, or
 * a cgroup held at max would flap between max and pressure with every
 * segment: the larger of a 64 KiB segment and 1/64 of max.
 */
TCPBUF_POLICY __s64 tcpbuf_max_exit(__s64 max)
{
	__s64 margin = max >> 6 > 16 ? max >> 6 : 16;

	return margin < max ? max - margin : 0;
}

/* ------------------------------------------------------- the thresholds */

/*
 * The thresholds of a limit whose ceiling is @max pages (0 taken as 1), with
 * @pressure and @min where given (0: not). Why these ratios: the
 * kernel sizes net.ipv4.tcp_mem the same way relative to its hard limit
 * (tcp_init_mem(): min = 1/2 max, pressure = 2/3 max), so a cgroup behaves
 * like a small machine. Pressure sits a little higher, at 3/4, because the
 * ceiling is already a deliberate per-cgroup budget; the wider band (1/4 of
 * max instead of 1/6) also means fewer flips in and out of pressure under a
 * steady load. Defaults are clamped so they never cross an explicit value.
 */
struct tcpbuf_thresholds {
	__u64 min, pressure, max;
};

TCPBUF_POLICY struct tcpbuf_thresholds tcpbuf_thresholds_of(__u64 max, __u64 pressure, __u64 min)
{
	struct tcpbuf_thresholds t = { .min = min, .pressure = pressure, .max = max ? max : 1 };

	if (!t.pressure) {
		t.pressure = t.max / 4 * 3 + t.max % 4 * 3 / 4;
		if (t.min && t.pressure < t.min)
			t.pressure = t.min;
		if (t.pressure > t.max)
			t.pressure = t.max;
		if (t.pressure == 0)
			t.pressure = 1;
	}
	if (!t.min) {
		t.min = t.max / 2;
		if (t.min > t.pressure)
			t.min = t.pressure;
		if (t.min == 0)
			t.min = 1;
	}
	return t;
}

/* ------------------------------------------------------------ the states */

/*
 * The state a cgroup moves to from @old at usage @now, as net.ipv4.tcp_mem
 * behaves: pressure is entered at @pressure and left only below @min (the
 * hysteresis; 0: at pressure); max is entered at @max, the effective max
 * (or when ingress refuses a segment that would pass it) and left for
 * pressure below tcpbuf_max_exit(). A threshold of 0 is not set. *@crossed
 * gets the threshold that decided a change.
 */
TCPBUF_POLICY __u32 tcpbuf_next_state(__u32 old, __s64 now, __s64 max, __u64 pressure,
				      __u64 min_pages, __u64 *crossed)
{
	__u64 min = min_pages ? min_pages : pressure;

	if (max > 0 && (now >= max || (old == TCPBUF_STATE_MAX && now >= tcpbuf_max_exit(max)))) {
		*crossed = max;
		return TCPBUF_STATE_MAX;
	}
	if (old == TCPBUF_STATE_NORMAL) {
		*crossed = pressure;
		return pressure && now >= (__s64)pressure ? TCPBUF_STATE_PRESSURE : old;
	}
	if (!pressure || now < (__s64)min) {
		*crossed = pressure ? min : (__u64)max;
		return TCPBUF_STATE_NORMAL;
	}
	*crossed = max;
	return TCPBUF_STATE_PRESSURE;
}

/* max_watch is set where usage @now reaches watch_point, and cleared only
 * below watch_clear. */
TCPBUF_POLICY bool tcpbuf_watch_reached(__s64 now, __s64 max)
{
	return now >= tcpbuf_watch_point(max);
}

TCPBUF_POLICY bool tcpbuf_watch_left(__s64 now, __s64 max)
{
	return now < tcpbuf_zones_of(max).watch_clear;
}

/* max_watch at usage @now (@watch before; max 0: unchanged). */
TCPBUF_POLICY __u32 tcpbuf_max_watch_next(__u32 watch, __s64 now, __s64 max)
{
	if (!max)
		return watch;
	if (!watch && tcpbuf_watch_reached(now, max))
		return 1;
	if (watch && tcpbuf_watch_left(now, max))
		return 0;
	return watch;
}

/* ---------------------------------------------------------------- ingress */

#define TCPBUF_INGRESS_TRUST_PAGES	32	/* a segment and the backlog before it */

/*
 * Whether ingress refuses a segment that takes usage to @want at a level
 * whose max is @max and effective max @effective. A socket with nothing
 * queued (@rmem 0) still gets it up to slack_end (the kernel forces memory
 * for an empty queue too; refused, its peer backs off and might not get a
 * turn for minutes), measured from max itself. Past slack_end it still gets
 * it while its reader is ready (@ready: has taken all it was given, and
 * some, or waits for more): what holds usage there is then the writers'
 * queues, which only such sockets can drain, and refusing them would stall
 * the subtree for good.
 */
TCPBUF_POLICY bool tcpbuf_ingress_refuses(__s64 want, __s64 effective, __s64 max, __s64 rmem,
					  bool ready)
{
	if (want <= effective)
		return false;
	if (rmem != 0)
		return true;
	return !ready && want > tcpbuf_zones_of(max).slack_end;
}

/* ----------------------------------------------------------- near and far */

/* The threshold near and far are judged against: pressure, or max without
 * one (0: neither). */
TCPBUF_POLICY __u64 tcpbuf_threshold(__u64 pressure_pages, __u64 max_pages)
{
	return pressure_pages && (!max_pages || pressure_pages < max_pages) ? pressure_pages
									    : max_pages;
}

/*
 * Near and far. The kernel bounds what one socket can hold whatever anyone
 * does: its autotuned (or SO_*BUF) buffers, plus an skb each way. While a
 * limited cgroup's sockets times that bound stay well under its threshold
 * (pressure, or max without one), no traffic can bring it there: its
 * sockets are left to the kernel, nothing runs for their segments or
 * syscalls, and no caps are set. Near: half the threshold is within that
 * reach; far again below a quarter, so one socket more or less does not
 * flap it. @bound_pages is that per-socket bound (tcpbuf_sock_bound_pages());
 * a cgroup without a threshold is always near.
 */
TCPBUF_POLICY __u32 tcpbuf_near_next(__u32 near, __s64 sockets, __u64 bound_pages,
				     __u64 pressure_pages, __u64 max_pages)
{
	__u64 t = tcpbuf_threshold(pressure_pages, max_pages);
	__u64 reach = sockets > 0 ? (__u64)sockets * bound_pages : 0;

	if (!t)
		return 1;
	return near ? reach >= t / 4 : reach >= t / 2;
}

/*
 * Dormant: near by its sockets' reach, yet its usage so far below the
 * threshold that no socket's caps or ingress could matter before the next
 * charge sees it coming. Its sockets are then left to the kernel as far
 * ones are (only the close callback, no caps, no ingress), and the charge
 * that brings usage to the guard turns it near, which arms them all
 * (sweep). The guard leaves each of the cgroup's @sockets @growth_pages,
 * what one socket can add between that charge and the sweep; dormant again
 * only under half the guard, so a load hovering there does not flap.
 * @growth_pages 0 (a kernel that cannot give an existing socket its
 * per-segment callback again) means never dormant.
 */
TCPBUF_POLICY __s64 tcpbuf_near_guard(__u64 pressure_pages, __u64 max_pages, __s64 sockets,
				      __u64 growth_pages)
{
	__u64 t = tcpbuf_threshold(pressure_pages, max_pages);
	__u64 reach = sockets > 0 ? (__u64)sockets * growth_pages : 0;

	if (!growth_pages || reach >= t)
		return 0;
	return (__s64)(t - reach);
}

TCPBUF_POLICY bool tcpbuf_dormant_next(bool dormant, __s64 usage_pages, __s64 guard_pages)
{
	return dormant ? usage_pages < guard_pages : usage_pages < guard_pages >> 1;
}

/*
 * Sampled mode's guard is lower still: a followed socket is not capped, so
 * between the charge that reaches the guard (or the socket whose count
 * turns the cgroup near) and the sweep that arms them each of @sockets may
 * queue up to @writer_pages (its largest sk_sndbuf) at once. Those queues
 * must fit between the guard and max (the threshold without one), where
 * ingress refuses the receive side; and only one connection's pair is
 * followed (TCPBUF_FOLLOW_SOCKETS), since sockets counted later are capped
 * from shares that cannot see the followed ones' queues coming. A @bounded
 * cgroup follows none of its sockets (tcpbuf_bounded_share()), so it may
 * count more, while their queues fit beside the guard as it is: a socket
 * more can turn it near, and those counted while it was bounded are armed
 * only by the daemon's sweep.
 * @writer_pages 0: @guard as it is (exact mode sees charges as they come).
 */
#define TCPBUF_FOLLOW_SOCKETS	2

TCPBUF_POLICY __s64 tcpbuf_near_guard_writers(__s64 guard, __u64 pressure_pages, __u64 max_pages,
					      __s64 sockets, __u64 writer_pages, bool bounded)
{
	__s64 top = (__s64)(max_pages ? max_pages : pressure_pages);
	__s64 room = top - (sockets > 0 ? sockets : 0) * (__s64)writer_pages;

	if (!writer_pages)
		return guard;
	if (sockets > TCPBUF_FOLLOW_SOCKETS && (!bounded || guard > room))
		return 0;
	if (guard <= room)
		return guard;
	return room > 0 ? room : 0;
}

/*
 * Bounded (sampled mode): a dormant cgroup whose sockets' kernel buffers
 * cannot add up to its guard (tcpbuf_near_guard_writers()), so nothing needs
 * to follow them: no sampler, no charge at ingress. The guard already keeps
 * each socket's largest sk_sndbuf below max; what is left is the receive
 * side: a receiver queues at most its sk_rcvbuf and one skb more, a writer
 * one skb past its sk_sndbuf, and each keeps a page of forward allocation
 * (TCPBUF_BOUNDED_SLACK_PAGES). So each of @sockets may have an equal share
 * of the guard less that slack as its sk_rcvbuf: the bytes returned, or 0
 * (not bounded) where that share is under @least, the host's bounded size
 * (tcpbuf_bounded_rcvbuf(); 0: never bounded). A share follows the count:
 * a connection more narrows every socket's. Ingress checks every segment's
 * socket is still within its share (tcpbuf_bounded_sock_ok()), since only a
 * segment that passes ingress can queue beyond it, and leaves bounded
 * otherwise.
 */
#define TCPBUF_BOUNDED_SLACK_PAGES	35	/* two 64 KiB skbs with overhead, one page */
#define TCPBUF_BOUNDED_SHARE_MAX	(1LL << 30)	/* sk_rcvbuf is an int */

TCPBUF_POLICY __s64 tcpbuf_bounded_share(__s64 sockets, __s64 guard_pages, __s64 least)
{
	__s64 pages, bytes;

	if (sockets <= 0 || guard_pages <= 0 || least <= 0)
		return 0;
	/* Strictly under the guard: sockets x (share + slack) < guard. */
	pages = (guard_pages - 1) / sockets - TCPBUF_BOUNDED_SLACK_PAGES;
	if (pages <= 0)
		return 0;
	bytes = pages > TCPBUF_BOUNDED_SHARE_MAX >> TCPBUF_PAGE_SHIFT
			? TCPBUF_BOUNDED_SHARE_MAX
			: pages << TCPBUF_PAGE_SHIFT;
	return bytes >= least ? bytes : 0;
}

/* Whether a socket's buffers are still those bounded assumed: sk_rcvbuf at
 * most @rcvbuf_bound, its share (autotuning, SO_RCVBUF and tcpbufd's own
 * caps raise it),
 * sk_sndbuf at most the writers' ceiling the guard keeps below max
 * (tcpbuf_writer_ceiling(); SO_SNDBUFFORCE reaches past it). */
TCPBUF_POLICY bool tcpbuf_bounded_sock_ok(__s64 rcvbuf, __s64 sndbuf, __s64 rcvbuf_bound,
					  __s64 sndbuf_bound)
{
	return rcvbuf_bound > 0 && rcvbuf <= rcvbuf_bound && sndbuf <= sndbuf_bound;
}

/*
 * The wide writers' ceiling in bytes: the largest sk_sndbuf a socket reaches
 * without SO_SNDBUFFORCE. Autotuning (tcp_sndbuf_expand()) raises it up to
 * tcp_wmem[2] whatever wmem_max says (the narrow ceiling), SO_SNDBUF up to
 * twice wmem_max: the larger of the two. Examples: 4 MiB, 212992
 * (defaults): 4 MiB; 4 MiB, 4 MiB: 8 MiB.
 */
TCPBUF_POLICY __s64 tcpbuf_writer_ceiling(__s64 tcp_wmem_max, __s64 wmem_max)
{
	return tcp_wmem_max > 2 * wmem_max ? tcp_wmem_max : 2 * wmem_max;
}

/*
 * Whether setting SO_SNDBUF (or SO_SNDBUFFORCE: @force) to @val gives a
 * socket a buffer past @narrow, the writers' ceiling a cgroup's guard keeps
 * while none of its writers asked for more: tcp_wmem[2], where autotuning
 * stops. The kernel gives twice min(@val, @wmem_max) (a negative @val as a
 * huge one), or twice @val forced (a negative one as 0), at most INT_MAX.
 * Such a cgroup's guard keeps tcpbuf_writer_ceiling() instead
 * (cgroup_sockets.wide_writers).
 */
TCPBUF_POLICY bool tcpbuf_sndbuf_wide(__s64 val, bool force, __s64 wmem_max, __s64 narrow)
{
	if (val < 0)
		val = force ? 0 : wmem_max;
	if (!force && val > wmem_max)
		val = wmem_max;
	if (val > 0x3fffffff)
		val = 0x3fffffff;
	return 2 * val > narrow;
}

/*
 * The least share of sk_rcvbuf a bounded cgroup's sockets get (bytes; 0:
 * never bounded, tcpbuf_bounded_share()): TCPBUF_BOUNDED_RCVBUF, or
 * tcp_rmem[1] where that is larger, but no more than any socket reaches
 * without SO_RCVBUFFORCE (autotuning stops at tcp_rmem[2], SO_RCVBUF at
 * twice rmem_max): a cgroup whose guard gives less is followed instead,
 * since its sockets would leave bounded as they start.
 * Examples: 131072, 6 MiB, 212992: 1 MiB; 131072, 256 KiB, 64 KiB: 256 KiB.
 */
#define TCPBUF_BOUNDED_RCVBUF	(1 << 20)	/* 8 x a 128 KiB tcp_rmem[1]: a request/
						 * response connection's autotuning stays under it */

TCPBUF_POLICY __s64 tcpbuf_bounded_rcvbuf(__s64 tcp_rmem_def, __s64 tcp_rmem_max, __s64 rmem_max)
{
	__s64 want = tcp_rmem_def > TCPBUF_BOUNDED_RCVBUF ? tcp_rmem_def : TCPBUF_BOUNDED_RCVBUF;
	__s64 reach = tcp_rmem_max > 2 * rmem_max ? tcp_rmem_max : 2 * rmem_max;

	if (reach < want)
		want = reach;
	return want > 0 && want < (1LL << 30) ? want : 0;
}

/*
 * Whether ingress at rest costs a topmost limited cgroup's sockets nothing
 * (IngressRest=auto). The rest locks each bounded socket's sk_rcvbuf, and
 * a locked buffer grows only as far as SO_RCVBUF gives: twice rmem_max.
 * That is free where autotuning stops there anyway (tcp_rmem[2]), or where
 * no socket's bounded share, under @threshold_pages over @sockets, reaches
 * it: a socket past its share leaves bounded either way. No socket yet: its
 * first one wakes the daemon, which decides again.
 * Examples, 4 MiB rmem_max and 32 MiB tcp_rmem[2]: 4 sockets, 12 MiB: free;
 * 1 socket: not. Debian's 212992 and 6 MiB: never for a bounded cgroup
 * (its shares are 1 MiB at least).
 */
TCPBUF_POLICY bool tcpbuf_rest_free(__s64 sockets, __u64 threshold_pages, __s64 tcp_rmem_max,
				    __s64 rmem_max)
{
	__s64 reach = 2 * rmem_max;
	__u64 each, reach_pages = (__u64)reach >> TCPBUF_PAGE_SHIFT;

	if (rmem_max <= 0)
		return false;
	if (sockets <= 0 || tcp_rmem_max <= reach)
		return true;
	each = threshold_pages / (__u64)sockets;
	return each < reach_pages || (each == reach_pages && !(threshold_pages % (__u64)sockets));
}

/* tcpbuf_near_guard()'s per-socket growth: 1 MiB, what a loopback stream
 * (the fastest) adds in the milliseconds an event takes to become a sweep. */
#define TCPBUF_GUARD_GROWTH_PAGES	256

/*
 * Crowded: so many sockets that the floor every connection holds whatever
 * its caps (its writer's forced skb, its receiver's first window, each up to
 * half or all of a 64 KiB SYN-ACK window over loopback) comes within reach
 * of the threshold. A crowded cgroup's new connections start with a small
 * receive window (TCPBUF_CROWD_MSS x TCPBUF_CROWD_RWND), which bounds both.
 * Crowded once the sockets' floors reach a quarter of the threshold: the
 * connections made before the sweep gives their listener its MSS keep the
 * old floor, and there are that many more of them. Uncrowded below an
 * eighth, so one socket more or less does not flap it; never without near.
 */
#define TCPBUF_SOCK_FLOOR_PAGES	8	/* half a connection's 66 KiB floor */
#define TCPBUF_CROWD_MSS	4096	/* TCP_MAXSEG of a crowded cgroup's new sockets */
#define TCPBUF_CROWD_RWND	1	/* their first window, in those segments */

TCPBUF_POLICY bool tcpbuf_crowded_next(bool crowded, __s64 sockets, __u64 pressure_pages,
				       __u64 max_pages)
{
	__u64 t = tcpbuf_threshold(pressure_pages, max_pages);
	__u64 floor = sockets > 0 ? (__u64)sockets * TCPBUF_SOCK_FLOOR_PAGES : 0;

	if (!t)
		return false;
	return crowded ? floor >= t / 8 : floor >= t / 4;
}

/* cgroup_sockets.near: bit 0 near (tcpbuf_near_next()), bit 1 crowded. */
#define TCPBUF_NEAR_CROWDED	2
/* In a walk's answer only, never in cgroup_sockets.near: a limited level
 * is dormant (tcpbuf_near_guard()). */
#define TCPBUF_NEAR_DORMANT	4
/* Beside it, in a walk's answer and a near event: the dormant level is
 * bounded too (tcpbuf_bounded_share(); cgroup_sockets.dormant bit 1). */
#define TCPBUF_NEAR_BOUNDED	8

/*
 * What a move of one entry's cgroup_sockets.near from @old to @new does to
 * the host's count of crowded entries (tcpbuf_enforce_ctl.crowded_cgroups):
 * +1, -1 or 0. Applied only by the writer whose compare-and-swap made the
 * move, every writer of the field going through it, so the count is the
 * number of entries with the bit: each entry's moves alternate set and
 * clear, from 0 when the entry is made. An entry of a removed cgroup
 * deleted while crowded leaves the count one over, which only keeps a walk
 * that finds nothing.
 */
TCPBUF_POLICY int tcpbuf_crowd_delta(__u32 old, __u32 new)
{
	return (int)!!(new & TCPBUF_NEAR_CROWDED) - (int)!!(old & TCPBUF_NEAR_CROWDED);
}

/* The same for the host's count of near entries (bit 0;
 * tcpbuf_enforce_ctl.near_cgroups), which the daemon reads instead of
 * looking up every limited cgroup's entry at each near or far event. */
TCPBUF_POLICY int tcpbuf_near_delta(__u32 old, __u32 new)
{
	return (int)(new & 1) - (int)(old & 1);
}

/* Sampled mode's too, for a move of cgroup_sockets.dormant: dormant entries
 * (tcpbuf_enforce_ctl.dormant_cgroups) and followed ones, dormant without
 * being bounded (followed_cgroups: the samplers follow their sockets). */
TCPBUF_POLICY bool tcpbuf_dormant_followed(__u32 dormant)
{
	return dormant && !(dormant & TCPBUF_DORMANT_BOUNDED);
}

TCPBUF_POLICY int tcpbuf_dormant_delta(__u32 old, __u32 new)
{
	return (int)!!new - (int)!!old;
}

TCPBUF_POLICY int tcpbuf_followed_delta(__u32 old, __u32 new)
{
	return (int)tcpbuf_dormant_followed(new) - (int)tcpbuf_dormant_followed(old);
}

TCPBUF_POLICY __u32 tcpbuf_near_crowded_next(__u32 flags, __s64 sockets, __u64 bound_pages,
					     __u64 pressure_pages, __u64 max_pages)
{
	__u32 near = tcpbuf_near_next(flags & 1, sockets, bound_pages, pressure_pages, max_pages);

	if (near && tcpbuf_crowded_next(flags & TCPBUF_NEAR_CROWDED, sockets, pressure_pages,
					max_pages))
		near |= TCPBUF_NEAR_CROWDED;
	return near;
}

/* The most one socket can hold, in pages: the larger of what autotuning
 * (tcp_rmem[2], tcp_wmem[2]) and SO_*BUF (twice rmem_max, wmem_max) reach
 * each way, and an skb each way with its overhead. */
TCPBUF_POLICY __u64 tcpbuf_sock_bound_pages(long tcp_rmem2, long rmem_max, long tcp_wmem2,
					    long wmem_max)
{
	return ((tcp_rmem2 > 2 * rmem_max ? tcp_rmem2 : 2 * rmem_max) +
		(tcp_wmem2 > 2 * wmem_max ? tcp_wmem2 : 2 * wmem_max) + (256 << 10)) / 4096;
}

/* ------------------------------------------------------- shares and caps */

#define TCPBUF_CAP_NONE		((__s64)1 << 40)
#define TCPBUF_SEND_CHUNK_MAX	(65536 + 2048)	/* tcpbuf_send_chunk() at most */
/* In pressure no sndbuf cap goes below this, nor an rcvbuf cap below the
 * other: windows below a segment make peers split them. */
#define TCPBUF_SNDBUF_FLOOR	(16 << 10)
#define TCPBUF_RCVBUF_FLOOR	(64 << 10)

/* The largest skb tcp_sendmsg may still fill past sk_sndbuf: the size goal,
 * half the peer's largest window @max_window, at most 64 KiB, plus the skb's
 * own overhead. */
TCPBUF_POLICY __s64 tcpbuf_send_chunk(__s64 max_window)
{
	__s64 goal = max_window / 2;

	if (goal <= 0 || goal > 65536)
		goal = 65536;
	return goal + 2048;
}

/* The sockets shares are divided among: the subtree's established sockets
 * @counted, or while those are not counted yet (limits just set, no sweep
 * yet) the sockets holding memory @held. */
TCPBUF_POLICY __s64 tcpbuf_subtree_sockets(__s64 held, __s64 counted)
{
	return counted > held ? counted : held;
}

/*
 * The sockets the receive headroom is divided among, of the subtree's @n
 * with @senders writers among them: those that are not writers (a writer's
 * receive queue holds its peer's acknowledgements, which take no memory),
 * but never fewer than half of all, since a writer may be read to as well
 * (a request-response pair). Dividing by all @n would give each stream's
 * reader half the window its writer's queue is capped for.
 * Examples: 66 sockets, 33 writers: 33; 10, 10: 5; 10, 0: 10; 7, 3: 4.
 */
TCPBUF_POLICY __s64 tcpbuf_receive_sockets(__s64 n, __s64 senders)
{
	__s64 half = (n + 1) >> 1;

	return n - senders > half ? n - senders : half;
}

/* A socket's share of the headroom between @used and @target pages, among
 * the @n sockets of the subtree and itself, in bytes. */
TCPBUF_POLICY __s64 tcpbuf_headroom_share(__s64 target, __s64 used, __s64 n)
{
	__s64 room = (target - used) * TCPBUF_PAGE_SIZE;

	return room > 0 ? (__s64)((__u64)room / (__u64)(n > 0 ? n + 1 : 1)) : 0;
}

/*
 * In pressure each of @n sockets may hold a fair share of the middle of the
 * hysteresis band, (min + pressure) / 2, never less than the sndbuf floor. The
 * shares add up to less than pressure, so usage converges back under it as
 * queues drain; and to more than min, so a load that keeps going settles
 * inside the band instead of flapping between pressure and normal.
 */
TCPBUF_POLICY __s64 tcpbuf_fair_share(__u64 min, __u64 pressure, __s64 n)
{
	__u64 band = min && min < pressure ? (min + pressure) / 2 : pressure;

	return tcpbuf_max_s64(band * TCPBUF_PAGE_SIZE / (__u64)(n > 0 ? n : 1),
			      TCPBUF_SNDBUF_FLOOR);
}

/* A socket's caps, from the strictest of its limited ancestors. */
struct tcpbuf_caps {
	__s64 snd;	/* ceiling for sk_sndbuf, bytes (0: minimal) */
	__s64 rcv;	/* ceiling for sk_rcvbuf, bytes; TCPBUF_CAP_NONE: leave to autotuning */
	__s64 room;	/* the least share of a headroom any level's guards gave it */
	__u8 state;	/* strictest state among the limited ancestors (8 bits, so
			 * that epoch fits in the walk's frame as it was) */
	bool limited;	/* some ancestor has limits */
	__u16 rcv_floor_kib;	/* tcpbuf_rcv_floor_kib() of the socket */
	__u32 epoch;	/* the host's epoch when the walk began: its verdict's */
};

/* Where a walk over the ancestors starts: no cap. */
#define TCPBUF_CAPS_NONE ((struct tcpbuf_caps){ .snd = TCPBUF_CAP_NONE, .rcv = TCPBUF_CAP_NONE, \
						.room = TCPBUF_CAP_NONE,			\
						.state = TCPBUF_STATE_NORMAL })

/* The socket as the guards see it, bytes. */
struct tcpbuf_sock_view {
	__s64 unsent;		/* its send queue not sent yet */
	__s64 rmem;		/* its receive memory */
	__s64 chunk;		/* tcpbuf_send_chunk() */
};


/*
 * Tighten *@c by the caps the limited ancestor whose usage entry (its state,
 * usage, socket counts and its copy of the limits) is @u imposes on the
 * socket @s. Each value is read where it is used, so a program's walk keeps
 * no more of them live than it needs.
 * - Send guard (max set): what it has not sent plus its share of the
 *   headroom, less the skb it may fill past sk_sndbuf; nothing left means
 *   minimal. In normal state the headroom is to pressure: crossing it must
 *   stop growth at once, as the kernel's synchronous tcp_mem check does.
 *   Below pressure never less than two skbs: with one in flight the
 *   receiver acknowledges it only on its delayed-ACK timer.
 * - Receive guard: the free receive space is what the window promises a
 *   peer; kept within a reader's share of the headroom to max
 *   (tcpbuf_receive_sockets()), a stall closes windows before ingress has
 *   to refuse many segments, which TCP recovers from only on its
 *   retransmission timer.
 * - At max: writers to the minimum, receive buffers to what they hold plus
 *   two pages (SO_RCVBUF halves and doubles, and a buffer under
 *   sk_rmem_alloc makes TCP prune the queue at every segment), a zero window
 *   without the kernel's minimum, which would make peers split segments.
 * - In pressure: no socket past its fair share.
 */
TCPBUF_POLICY void tcpbuf_caps_level(struct tcpbuf_caps *c, const struct cgroup_usage *u,
				     const struct tcpbuf_sock_view *s)
{
	const struct cgroup_limits *l = &u->limits;
	__s64 used = u->usage_pages;
	__s64 n = tcpbuf_subtree_sockets(u->sockets, u->established.sockets);
	__s64 reserve = tcpbuf_sender_reserve(u->established.senders, l->max_pages);
	__s64 snd = TCPBUF_CAP_NONE, rcv = TCPBUF_CAP_NONE;
	__u32 state = u->state;

	c->limited = true;
	if (state > c->state)
		c->state = state;
	if (l->max_pages) {
		bool to_pressure = state == TCPBUF_STATE_NORMAL && l->pressure_pages;
		__s64 target = to_pressure ? l->pressure_pages : l->max_pages - reserve;
		__s64 to_max = l->max_pages - reserve;
		__s64 share = tcpbuf_headroom_share(target, used, n);
		__s64 rcv_share = tcpbuf_headroom_share(to_max, used,
							tcpbuf_receive_sockets(n, u->established.senders));

		c->room = tcpbuf_min_s64(c->room, tcpbuf_min_s64(share, rcv_share));
		share -= s->chunk;
		snd = share > 0 ? s->unsent + share : 0;
		if (to_pressure)
			snd = tcpbuf_max_s64(snd, 2 * s->chunk);
		rcv = s->rmem + rcv_share;
	}
	if (state == TCPBUF_STATE_MAX) {
		snd = 0;
		rcv = s->rmem + 2 * TCPBUF_PAGE_SIZE;
	} else if (state == TCPBUF_STATE_PRESSURE) {
		__s64 fair = tcpbuf_fair_share(l->min_pages, l->pressure_pages, n);

		rcv = tcpbuf_min_s64(rcv, tcpbuf_max_s64(fair, TCPBUF_RCVBUF_FLOOR));
		snd = tcpbuf_min_s64(snd, tcpbuf_max_s64(fair - s->chunk, TCPBUF_SNDBUF_FLOOR));
	}
	c->snd = tcpbuf_min_s64(c->snd, snd);
	c->rcv = tcpbuf_min_s64(c->rcv, rcv);
}

/*
 * The least receive cap short of max, once every level has had its say
 * (tcpbuf_rcv_segment_floor()): a window of one full segment of the peer,
 * whose MSS ours (@advmss) bounds. Linux sends no segment that does not fit
 * the window whole: under a smaller window a sender moves data only by
 * zero-window probes, one per retransmission timeout and backed off while
 * the window stayed shut, so a drained reader waits seconds a segment.
 * The window is @ratio/256 of the free buffer (the kernel's scaling_ratio;
 * 128 where it has none), rounded up to the window scale while the buffer
 * is at least half free. In KiB, rounded up; at most 2 x @advmss.
 */
TCPBUF_POLICY __u16 tcpbuf_rcv_floor_kib(__u32 advmss, __u32 ratio)
{
	__u64 r = ratio < 128 ? 128 : ratio > 256 ? 256 : ratio;

	return (__u16)(((__u64)advmss * 256 / r + 1023) / 1024);
}

/*
 * No cap short of max below the floor, unless a level is crowded (@near,
 * the levels' cgroup_sockets.near or-ed). Why the floors cannot take a
 * subtree past its threshold: while it is not crowded its sockets x 128 KiB
 * (2 x the largest MSS) stay under it (tcpbuf_crowded_next()). A crowded
 * one's sockets made before its small MSS could hold floors past max
 * together, so there the caps stand as they are and the new connections'
 * 4 KiB segments bound windows. At max the zero window stands.
 */
TCPBUF_POLICY void tcpbuf_rcv_segment_floor(struct tcpbuf_caps *c, __u32 near)
{
	__s64 floor = (__s64)c->rcv_floor_kib * 1024;

	if (c->limited && c->state != TCPBUF_STATE_MAX && !(near & TCPBUF_NEAR_CROWDED) &&
	    c->rcv < floor)
		c->rcv = floor;
}

/* ------------------------------------------------------- buffer targets */

/*
 * The sk_sndbuf a socket whose enforcement record is @se and whose sk_sndbuf
 * is @cur should have under caps @c: limits gone, give it back (@ceiling, or
 * the application's); first sight, lock it at least at @initial; back to
 * normal, lift it; a writer keeping it half full (@wmem_queued), grow it;
 * never past the cap. Each field is read where it decides.
 */
TCPBUF_POLICY __s64 tcpbuf_sndbuf_target(const struct tcpbuf_caps *c, const struct sock_enforce *se,
					 __s64 cur, __s64 wmem_queued, __s64 ceiling, __s64 initial)
{
	__s64 want;

	if (!c->limited)
		return (se->user_locks & TCPBUF_SNDBUF_LOCK) ? se->user_sndbuf : ceiling;
	if (se->user_locks & TCPBUF_SNDBUF_LOCK)
		want = se->user_sndbuf;
	else if (!(se->flags & TCPBUF_SE_SNDBUF_SET))
		want = tcpbuf_max_s64(cur, initial);
	else if (c->state == TCPBUF_STATE_NORMAL && se->state != TCPBUF_STATE_NORMAL)
		want = ceiling;
	else if (wmem_queued >= cur >> 1)
		want = tcpbuf_min_s64(cur * 2, ceiling);
	else
		want = cur;
	return tcpbuf_min_s64(want, c->snd);
}

/* The sk_rcvbuf it should have (@cur now); -1 leaves it alone: below its cap,
 * a socket tcpbufd never set keeps the kernel's autotuning, and without
 * limits only what tcpbufd set goes back (to @ceiling or the application's). */
TCPBUF_POLICY __s64 tcpbuf_rcvbuf_target(const struct tcpbuf_caps *c, const struct sock_enforce *se,
					 __s64 cur, __s64 ceiling)
{
	__s64 cap = ceiling;

	if (!c->limited && !(se->flags & TCPBUF_SE_RCVBUF_SET))
		return -1;
	if (se->user_locks & TCPBUF_RCVBUF_LOCK)
		cap = se->user_rcvbuf;
	if (c->limited)
		cap = tcpbuf_min_s64(cap, c->rcv);
	if (cur > cap || (se->flags & TCPBUF_SE_RCVBUF_SET))
		return cap;
	return -1;
}

/* Sizes within a page (the kernel doubles and rounds) count as equal; growth
 * smaller than an eighth is not worth a setsockopt. */
TCPBUF_POLICY bool tcpbuf_buf_differs(__s64 cur, __s64 target, bool owned)
{
	if (!owned)
		return true;
	if (target < cur - TCPBUF_PAGE_SIZE)
		return true;
	return target > cur + (cur >> 3) && target > cur + TCPBUF_PAGE_SIZE;
}

/* ---------------------------------------------------------------- settled */

/*
 * A socket whose caps cannot change soon has them recomputed only about once
 * a millisecond (TCPBUF_SETTLED_RECHECK_T), or at once on a state change.
 * Settled:
 * - far: normal state, and its shares of the headroom at least twice the
 *   most SO_SNDBUF/SO_RCVBUF give (@snd_ceiling, @rcv_ceiling);
 * - in pressure, held to its fair share with the headroom to max at least
 *   twice that share (and an skb): usage would have to climb by half the
 *   headroom, with every socket held to its share, before the guards took
 *   over.
 */
#define TCPBUF_SETTLED_RECHECK_T	16	/* 1.024 ms in 64 us units (tcpbuf_settled_clock()) */

TCPBUF_POLICY bool tcpbuf_caps_settled(const struct tcpbuf_caps *c, __s64 snd_ceiling,
				       __s64 rcv_ceiling)
{
	bool far = c->state == TCPBUF_STATE_NORMAL && c->snd >= 2 * snd_ceiling &&
		   c->rcv >= 2 * rcv_ceiling;
	bool fair = c->state == TCPBUF_STATE_PRESSURE &&
		    c->room >= 2 * tcpbuf_max_s64(c->snd + TCPBUF_SEND_CHUNK_MAX, c->rcv);

	return c->limited && (far || fair);
}

/* Settled at its cap: no growth the full pass would grant (tcpbuf_buf_differs()). */
TCPBUF_POLICY bool tcpbuf_snd_at_cap(__s64 cap, __s64 cur)
{
	return cap <= cur + tcpbuf_max_s64(cur >> 3, TCPBUF_PAGE_SIZE);
}

/* tcp_mstamp (us) in the 64 us units of sock_verdict.stamp: wraps after
 * 4.2 s, when a socket silent that long may skip one more millisecond. */
TCPBUF_POLICY __u16 tcpbuf_settled_clock(__u64 mstamp_us)
{
	return (__u16)((__u32)mstamp_us >> 6);
}

TCPBUF_POLICY bool tcpbuf_settled_expired(__u16 now, __u16 stamp)
{
	return (__u16)(now - stamp) >= TCPBUF_SETTLED_RECHECK_T;
}

/* ------------------------------------------------------------ the verdict */

/*
 * The one validity rule: what a socket's last looks found (@v) answers a
 * fast path's question (@need, TCPBUF_V_*) while the host's epoch is still
 * the one they began at, and, for settled caps, until the stamp expires at
 * the socket's clock @now (tcpbuf_settled_clock()). Everything that could
 * make a verdict wrong bumps the epoch (struct tcpbuf_enforce_ctl).
 *   {epoch 7, bits MASK|SETTLED, stamp 100}: at epoch 7, now 110: SETTLED and
 *   MASK hold; now 116: MASK only; at epoch 8: nothing.
 * TCPBUF_VERDICT_NO_CLOCK for @now: the epoch alone, for the one caller that
 * has no clock at hand and whose slack the epoch already bounds (the
 * sampler's, tcpbuf_sample_target()).
 */
#define TCPBUF_VERDICT_NO_CLOCK	0x10000u

/* Whether @v found @need at all: asked first where reading the epoch costs
 * the caller a lookup (tcpbuf_verdict_valid() asks it too). */
TCPBUF_POLICY bool tcpbuf_verdict_has(const union sock_verdict *v, __u32 need)
{
	return need && (v->bits & need) == need;
}

TCPBUF_POLICY bool tcpbuf_verdict_valid(const union sock_verdict *v, __u32 epoch_now, __u32 now,
					__u32 need)
{
	if (!tcpbuf_verdict_has(v, need) || v->epoch != epoch_now)
		return false;
	return !(need & TCPBUF_V_SETTLED) || now == TCPBUF_VERDICT_NO_CLOCK ||
	       !tcpbuf_settled_expired((__u16)now, v->stamp);
}

/*
 * @v with what a look begun at @epoch found: the bits @clear cleared and
 * @set set (with @mask for TCPBUF_V_MASK, @stamp for TCPBUF_V_SETTLED). A
 * look at another epoch than @v's starts afresh: nothing of @v holds at it.
 */
TCPBUF_POLICY union sock_verdict tcpbuf_verdict_with(union sock_verdict v, __u32 epoch,
						     __u32 set, __u32 clear, __u8 mask,
						     __u16 stamp)
{
	if (v.epoch != epoch) {
		v.word = 0;
		v.epoch = epoch;
	}
	v.bits = (v.bits & ~clear) | set;
	if (set & TCPBUF_V_MASK)
		v.mask = mask;
	if (set & TCPBUF_V_SETTLED)
		v.stamp = stamp;
	return v;
}

/* --------------------------------------------------------- sample targets */

/*
 * What a sample leaves charged where @before is charged and the footprint is
 * @target. Exact samples (reconcile, sweep, destruction) and growth: the
 * footprint. A lazy one (syscalls, segments) keeps the last page of a
 * footprint that shrank (a reader holds one page after each send and none
 * after each receive; the kernel keeps it in sk_forward_alloc for the same
 * reason), and, if the socket's caps are @settled (its verdict still good),
 * lets a shrink under TCPBUF_SAMPLE_SLACK_PAGES wait: the next segment brings
 * the pages back. Never less than the socket holds.
 */
#define TCPBUF_SAMPLE_KEEP_PAGES	1
#define TCPBUF_SAMPLE_SLACK_PAGES	8

/* Whether the sample is a small shrink that waits if the caps are settled
 * (asked first: finding out whether they are costs the programs a lookup). */
TCPBUF_POLICY bool tcpbuf_sample_may_wait(__s64 before, __s64 target, bool exact)
{
	return !exact && target < before && before - target < TCPBUF_SAMPLE_SLACK_PAGES;
}

TCPBUF_POLICY __s64 tcpbuf_sample_target(__s64 before, __s64 target, bool exact, bool settled)
{
	__s64 keep;

	if (exact || target >= before)
		return target;
	if (settled && tcpbuf_sample_may_wait(before, target, exact))
		return before;
	keep = before < TCPBUF_SAMPLE_KEEP_PAGES ? before : TCPBUF_SAMPLE_KEEP_PAGES;
	return target < keep ? keep : target;
}

/*
 * A followed socket (a dormant cgroup's, sampled mode: TCPBUF_SE_FOLLOWED)
 * has its charge moved by a syscall's or a segment's sample only by a step
 * of TCPBUF_FOLLOW_STEP_PAGES or more, either way, so that most samples of
 * a stream write nothing. Its cgroup's usage is then off by less than a
 * step per such socket, inside the guard's TCPBUF_GUARD_GROWTH_PAGES each;
 * the reconcile and the sweep set it exactly. A socket charged nothing, or
 * holding nothing, is charged at once (it is counted in `sockets`).
 */
#define TCPBUF_FOLLOW_STEP_PAGES	32

TCPBUF_POLICY bool tcpbuf_follow_waits(__s64 before, __s64 target)
{
	__s64 d = target - before;

	return before > 0 && target > 0 && d > -TCPBUF_FOLLOW_STEP_PAGES &&
	       d < TCPBUF_FOLLOW_STEP_PAGES;
}

/* ------------------------------------------------- exact mode's kept pages */

/*
 * Exact mode: a charge of @pages (negative: an uncharge, no more than the
 * kernel holds for the socket) where the socket's cgroups hold @kept pages
 * beyond that. An uncharge is kept while the socket may keep pages (@lazy:
 * established, tcpbuf_exact_keeps_under() each level) and TCPBUF_EXACT_SLACK_PAGES are not
 * passed, and a charge takes kept pages back first: a TCP_RR socket's
 * charge goes 0, 1, 0 pages every transaction (the forced page of its
 * request, reclaimed at the ACK), and each step charged every level. A
 * status gives the kept pages back before it reads (the settle pass).
 *   kept 0, -1, lazy: kept 1, charge 0;  then +1: kept 0, charge 0;
 *   kept 8, -1, lazy: kept 0, charge -9;  kept 3, -2, not lazy: charge -5.
 */
#define TCPBUF_EXACT_SLACK_PAGES	8

/* Whether a socket may keep pages under a level (@limited, its
 * cgroup_sockets.near and state): unlimited, or far or dormant (near bit
 * clear: what it keeps cannot matter before usage reaches the guard, and
 * makes usage look higher only) and in no pressure. */
TCPBUF_POLICY bool tcpbuf_exact_keeps_under(bool limited, __u32 near, __u32 state)
{
	return !limited || (!(near & 1) && state == TCPBUF_STATE_NORMAL);
}

struct tcpbuf_exact_step {
	__s64 kept;	/* kept after it */
	__s64 charge;	/* what the socket's cgroups are charged (negative: given back) */
};

/* Whether an uncharge of @pages (< 0) where @kept are kept could be kept:
 * only then is it worth asking whether the socket may keep pages. */
TCPBUF_POLICY bool tcpbuf_exact_fits(__s64 kept, __s64 pages)
{
	return pages < 0 && (kept > 0 ? kept : 0) - pages <= TCPBUF_EXACT_SLACK_PAGES;
}

TCPBUF_POLICY struct tcpbuf_exact_step tcpbuf_exact_step(__s64 kept, __s64 pages, bool lazy)
{
	struct tcpbuf_exact_step s = { 0, 0 };

	if (kept < 0)
		kept = 0;
	if (pages >= 0) {
		s.kept = kept > pages ? kept - pages : 0;
		s.charge = pages - (kept - s.kept);
	} else if (lazy && tcpbuf_exact_fits(kept, pages)) {
		s.kept = kept - pages;
	} else {
		s.charge = pages - kept;
	}
	return s;
}

/*
 * Whether a status (or a scrape) walks every TCP socket to give kept pages
 * back first (settle_tcp): only if some socket kept pages since the last
 * walk (@kept_since; @walked 0: none yet, or a daemon killed mid-walk), and
 * for a tenant (!@admin) at most once per TCPBUF_SETTLE_TENANT_MS: the walk
 * visits the host's every socket, which a tenant could ask for at its full
 * request rate. A tenant may then read up to
 * TCPBUF_EXACT_SLACK_PAGES per socket kept since that walk. The count of
 * socket-storage entries (status --json) walks too: due as if always kept.
 */
#define TCPBUF_SETTLE_TENANT_MS	1000

TCPBUF_POLICY bool tcpbuf_settle_due(bool kept_since, bool walked, bool admin, __u64 now_ms,
				     __u64 last_ms)
{
	if (!walked)
		return true;
	if (!kept_since)
		return false;
	return admin || now_ms - last_ms >= TCPBUF_SETTLE_TENANT_MS;
}

/* ------------------------------------------------------------ the rest */

/* Whether a cgroup whose unaccounted_sockets just rose to @now tells the
 * daemon (TCPBUF_EVENT_UNACCOUNTED): at the first and at each doubling, so
 * a flood of such sockets costs the ring buffer a few events, not one each. */
TCPBUF_POLICY int tcpbuf_unaccounted_tell(__u32 now)
{
	return now && !(now & (now - 1));
}

#endif /* TCPBUF_POLICY_H */
