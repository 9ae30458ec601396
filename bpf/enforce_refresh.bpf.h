/* SPDX-License-Identifier: GPL-2.0 */
/*
 * limits_refresh: each usage entry's copy of its cgroup's limits, its state
 * and near or far, after a change of limits.
 */
#ifndef TCPBUF_ENFORCE_REFRESH_BPF_H
#define TCPBUF_ENFORCE_REFRESH_BPF_H

#include "enforce_policy.bpf.h"

/*
 * One usage entry, by limits_refresh() below: its copy of its cgroup's
 * limits (what charges move the state against), then the cgroup's state and
 * near or far under them, once per cgroup (a change of limits moves no usage
 * and no socket count, so nothing else would).
 */
static long limits_refresh_one(struct bpf_map *map, __u64 *key, struct cgroup_usage *u, void *ctx)
{
	struct cgroup_limits *l, none = {};
	struct cgroup_sockets *cs;
	__u64 id = *key;	/* lookups want the key on the stack */
	__u32 old, new;

	l = bpf_map_lookup_elem(&cgroup_limits, &id);
	u->limits = l ? *l : none;
	/* Against the new max; the bump after the walk ends old trust. */
	u->max_watch = l && l->max_pages && tcpbuf_watch_reached(u->usage_pages, l->max_pages);
	cgroup_state_update(id, u, u->usage_pages);
	/* Near or far under them (far without limits); changes of the socket
	 * count decide where they happen (near_update()). */
	cs = &u->established;
	old = cs->near;
	new = l ? near_decide(u, false) : 0;
	if (!l && cs->dormant)
		dormant_swap(cs, cs->dormant, 0);
	if (new != old)
		near_swap(cs, old, new);
	if (new & 1)
		near_dormant_clear(cs);
	return 0;
}

/*
 * Run by the daemon (BPF_PROG_TEST_RUN) after a change of limits, before the
 * sweep. After state changes the states are fresh: the charges that moved
 * usage evaluated them. A raw_tp program walking the map with
 * bpf_for_each_map_elem, not an iter/bpf_map_elem: some 6.18 hosts refuse
 * map iterators at load (EPERM) while they run this.
 */
SEC("raw_tp")
int limits_refresh(void *ctx)
{
	struct tcpbuf_enforce_ctl *ctl;

	bpf_for_each_map_elem(&cgroup_usage, limits_refresh_one, NULL, 0);
	/* Nothing found under the old limits holds any longer. */
	ctl = enforce_ctl_get();
	if (ctl) {
		__sync_fetch_and_add(&ctl->limits_epoch, 1);
		__sync_fetch_and_add(&ctl->epoch, 1);
	}
	return 0;
}

#endif /* TCPBUF_ENFORCE_REFRESH_BPF_H */
