/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Map value structs of the enforcement side, shared by the BPF programs
 * (bpf/enforce*.bpf.*) and the daemon (src/enforce.c). Like tcpbuf_maps.h:
 * nothing but the on-bpffs layout.
 */
#ifndef TCPBUF_ENFORCE_H
#define TCPBUF_ENFORCE_H

#include "tcpbuf_policy.h"

/*
 * Map "enforce_ctl" (array, one entry, mmapped by the daemon). Lets every
 * charge skip the limits lookup while no cgroup has limits.
 */
struct tcpbuf_enforce_ctl {
	__u32 limited_cgroups;	/* cgroups with an entry in cgroup_limits */
	__u32 near_linked;	/* the daemon has what near cgroups need linked */
	/* Bumped (atomically, by BPF and the daemon alike) by everything that
	 * can make a socket's verdict wrong: a state change, usage coming
	 * within ingress's reach of max, new limits, a change of the two
	 * fields above. A verdict holds only at the epoch it was made at. */
	__u32 epoch;
	/* Bumped by limits_refresh only: a socket's ancestry list (which of
	 * its ancestors it charges) can change only with the limits, and
	 * renewing it costs a cgroup walk per socket. */
	__u32 limits_epoch;
	/* Usage entries with the crowded bit (cgroup_sockets.near), kept by
	 * the compare-and-swap that moves the bit (near_swap()): the
	 * crowded first window's walk is skipped while it is 0. */
	__u32 crowded_cgroups;
	/* Exact mode: set by a charge that makes a socket keep pages
	 * (tcpbuf_exact_step()), cleared by the daemon before it walks the
	 * sockets to give them back (tcpbuf_settle_due()). */
	__u32 kept_since_settle;
	/* Usage entries with the near bit, kept as crowded_cgroups is
	 * (tcpbuf_near_delta()): the daemon's "is any limited cgroup near". */
	__u32 near_cgroups;
	/* Entries dormant, and dormant but not bounded, kept by the
	 * compare-and-swap that moves cgroup_sockets.dormant (dormant_swap(),
	 * tcpbuf_dormant_delta()): sampled mode's samplers follow them. */
	__u32 dormant_cgroups;
	__u32 followed_cgroups;
	/* Set by the daemon while some topmost limited cgroup rests (its
	 * ingress unlinked, docs/ENFORCEMENT.md): a socket counted or a
	 * level leaving bounded then wakes it (TCPBUF_EVENT_REST). */
	__u32 ingress_rests;
};

/* Map "sweep_targets" (hash, key: cgroup id; the daemon's, not pinned): the
 * cgroups a targeted sweep serves (those that changed state or became near,
 * and their descendants), at most this many; more, and it sweeps them all.
 * The sweep looks up every socket of the host here, mostly to miss: a small
 * table keeps its buckets in cache (64 KiB of them, against 1 MiB for
 * 65,536). */
#define TCPBUF_SWEEP_TARGETS	4096

/*
 * Map "enforce_events" (ring buffer): one record each time a cgroup changes
 * state, written where its usage changed. The daemon logs it and sweeps the
 * sockets of the cgroup's subtree.
 */
struct tcpbuf_state_event {
	__u64 cgroup_id;
	__u64 time_ns;		/* bpf_ktime_get_ns() (CLOCK_MONOTONIC) at the crossing */
	__s64 usage_pages;	/* usage that caused the change (TCPBUF_EVENT_NEAR: sockets) */
	__u64 threshold_pages;	/* the threshold crossed */
	__u32 old_state;	/* enum tcpbuf_state (TCPBUF_EVENT_NEAR: the near flag) */
	__u32 new_state;
	__u32 kind;		/* TCPBUF_EVENT_* */
	__u32 pad;
};

#define TCPBUF_EVENT_STATE	0	/* normal / pressure / max */
#define TCPBUF_EVENT_NEAR	1	/* the cgroup became near or far (tcpbuf_near_next()) */
#define TCPBUF_EVENT_UNACCOUNTED 2	/* a socket without socket storage (sock_fallback.bpf.h);
					 * usage_pages: its cgroup's unaccounted_sockets */
#define TCPBUF_EVENT_LOST	3	/* such a socket found sock_fallback full;
					 * usage_pages: fallback_ctl.lost */
#define TCPBUF_EVENT_REST	4	/* while ingress rests: a bounded level
					 * counted a socket or left bounded */
#define TCPBUF_EVENT_REST_RAISE	5	/* autotuning asked a rest-locked socket
					 * to grow (enforce_rest.bpf.h); cgroup_id:
					 * its network namespace's inode */

#endif /* TCPBUF_ENFORCE_H */
