// SPDX-License-Identifier: GPL-2.0
/*
 * Ingress at rest (sampled mode, kernel >= 6.17; IngressRest=). A cgroup_skb
 * program costs its dispatch on every segment even when it returns at once:
 * about 2% of a request/response transaction over loopback. A topmost limited cgroup
 * whose sockets are all bounded (tcpbuf_bounded_share(): their buffers
 * cannot take it to its guard) needs no ingress while they stay so, so its
 * ingress link goes once every limited cgroup has been far or bounded for
 * REST_QUIET_MS. Meanwhile enforce_rest.bpf.h watches where buffers grow,
 * and BPF wakes the daemon (TCPBUF_EVENT_REST) at a socket counted or a
 * level leaving bounded: ingress is linked again at once. Out-of-order data
 * grows a receive buffer past every tracepoint, so each bounded socket's is
 * locked at its size as ingress goes (rest_locks), and raised once
 * autotuning asks (TCPBUF_EVENT_REST_RAISE), up to what SO_RCVBUF gives:
 * by default (IngressRest=auto) only where no share would want more
 * (tcpbuf_rest_free()). A daemon that stops cleanly
 * links ingress and lifts every rest lock first; docs/ENFORCEMENT.md says
 * what holds while a resting daemon is stopped.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "enforce.skel.h"
#include "loader.h"
#include "log.h"
#include "enforcer.h"
#include "netns.h"
#include "tcpbuf_policy.h"

/* Connections counted closer together than this keep ingress linked:
 * each rest and return costs three link operations and a pass over every
 * socket. A rest cut short (REST_SHORT_MS) doubles it, up to
 * REST_QUIET_MAX_MS, so connections that come just too far apart for it
 * do not make those passes all the time; a rest that lasted resets it. */
#define REST_QUIET_MS		250
#define REST_QUIET_MAX_MS	2000
#define REST_SHORT_MS		2000
#define REST_LATE_MS		1000

/* The autotuning watch linked (@on) or not. Unlinking says 1 if there was
 * one. */
static int rest_link_set(struct enforcer *e, bool on)
{
	char path[PATH_MAX];
	struct bpf_link *link;
	int err;

	if (enforce_link_path(e, path, sizeof(path), "rest_rcvbuf_grow"))
		return -ENAMETOOLONG;
	if (!on)
		return !unlink(path) ? 1 : errno != ENOENT ? -errno : 0;
	if (!access(path, F_OK))
		return 0;
	link = bpf_program__attach(e->skel->progs.rest_rcvbuf_grow);
	if (!link)
		return -errno;
	err = bpf_link__pin(link, path);
	bpf_link__destroy(link);	/* the pin keeps it attached */
	return err;
}

/* One rest_locks pass over every namespace's sockets: locks while
 * enforce_ctl.ingress_rests is set, raises where autotuning asked, or lifts
 * every lock (rest_release_all). 0, or the error said. */
static int rest_locks_pass(struct enforcer *e)
{
	int n;

	if (!e->rest_iter)
		return -ENOENT;
	n = netns_iter_each(bpf_link__fd(e->rest_iter), netns_iter_drain, NULL);
	if (n)
		log_warn("enforcement: rest locks' pass failed: %s", strerror(-n));
	return n;
}

/* A rest-locked socket in network namespace @netns asked to grow. */
void rest_raise_note(struct enforcer *e, uint64_t netns)
{
	size_t i, n = e->n_raise_ns;

	e->rest_raise = true;
	if (n > REST_RAISE_NS)
		return;		/* every namespace already */
	for (i = 0; i < n && e->raise_ns[i] != netns; i++)
		;
	if (i < n)
		return;
	if (n < REST_RAISE_NS)
		e->raise_ns[n] = netns;
	e->n_raise_ns = n + 1;	/* past REST_RAISE_NS: every namespace */
}

/* The raises asked for since the last: a pass in the namespaces they were
 * asked in (in all of them, past REST_RAISE_NS), not in every one. */
void rest_raise_pass(struct enforcer *e)
{
	int n;

	e->rest_raise = false;
	if (!e->rest_iter)
		return;
	if (e->n_raise_ns > REST_RAISE_NS)
		n = netns_iter_each(bpf_link__fd(e->rest_iter), netns_iter_drain, NULL);
	else
		n = netns_iter_some(bpf_link__fd(e->rest_iter), e->raise_ns, e->n_raise_ns,
				    netns_iter_drain, NULL);
	e->n_raise_ns = 0;
	if (n)
		log_warn("enforcement: rest locks' raise pass failed: %s", strerror(-n));
}

/* Every rest lock raised as far as SO_RCVBUF gives, and no longer one. */
static void rest_release(struct enforcer *e)
{
	e->skel->bss->rest_release_all = true;
	rest_locks_pass(e);
	e->skel->bss->rest_release_all = false;	/* a reload may rest again */
}

/* The autotuning watch linked, and rest allowed from now (REST_QUIET_MS). */
static void rest_on(struct enforcer *e)
{
	if (!e->rest_iter || rest_link_set(e, true)) {
		log_warn("enforcement: cannot attach the rest's watches; ingress stays linked");
		return;
	}
	e->rest_possible = true;
	rest_note(e);
}

void rest_init(struct enforcer *e, bool kernel, enum ingress_rest choice)
{
	bool left;

	e->rest_kernel = kernel;
	e->rest_choice = choice;
	e->rest_quiet_ms = REST_QUIET_MS;
	e->tcp_rmem_max = loader_sysctl_long("/proc/sys/net/ipv4/tcp_rmem", 2, 6 << 20);
	e->rmem_max = loader_sysctl_long("/proc/sys/net/core/rmem_max", 0, 212992);
	if (choice == INGRESS_REST_YES && !kernel)
		log_info("IngressRest=yes: ingress rests in sampled mode on Linux 6.17 and later only");
	e->rest_iter = bpf_program__attach_iter(e->skel->progs.rest_locks, NULL);
	/* An earlier run's link runs its own program, and its ingress_rests
	 * may be left set: decided anew by the first ingress_sync(). A link
	 * still there means that run rested and did not stop cleanly: the
	 * locks it left are lifted unless this run watches them. */
	left = rest_link_set(e, false) > 0;
	__atomic_store_n(&e->ctl->ingress_rests, 0, __ATOMIC_RELEASE);
	if (kernel && choice != INGRESS_REST_NO)
		rest_on(e);
	if (left && !e->rest_possible)
		rest_release(e);
}

void enforce_set_rest(struct enforcer *e, enum ingress_rest choice)
{
	bool on = e->rest_kernel && choice != INGRESS_REST_NO;

	if (choice == e->rest_choice)
		return;
	e->rest_choice = choice;
	if (!on)
		rest_stop(e);
	else if (!e->rest_possible)
		rest_on(e);
	else
		rest_note(e);	/* auto and yes differ in which tops rest */
}

/* Asked for ingress back at @asked_ns: said loudly if the daemon did not
 * run for a second since, a cgroup that grew meanwhile was not held. */
void rest_late(uint64_t asked_ns)
{
	double late = enforce_mono_ms() - asked_ns / 1e6;

	if (late > REST_LATE_MS)
		log_warn("enforcement: a bounded cgroup grew while ingress was at rest and tcpbufd "
			 "did not run for %.1f s: its limit was not enforced meanwhile", late / 1e3);
}

/* Something changed: ingress may rest rest_quiet_ms from now at the
 * earliest, and is looked at again then. */
void rest_note(struct enforcer *e)
{
	if (!e->rest_possible)
		return;
	e->rest_after_ms = enforce_mono_ms() + e->rest_quiet_ms;
	oneshot_arm(&e->rest, e->rest_quiet_ms);
}

/*
 * Whether ingress may rest anywhere now: no cgroup near or followed, no
 * socket held without an entry, quiet for rest_quiet_ms. Told to BPF before
 * any top's usage is read (rest_top()), so a socket counted after that read
 * wakes the daemon. Otherwise the timer is armed for when it may be.
 */
bool rest_begin(struct enforcer *e)
{
	double wait;

	if (!e->rest_possible || e->lost_seen || ctl_count(&e->ctl->near_cgroups) ||
	    ctl_count(&e->ctl->followed_cgroups))
		return false;
	wait = e->rest_after_ms - enforce_mono_ms();
	if (wait > 0) {
		oneshot_arm(&e->rest, wait);
		return false;
	}
	__atomic_store_n(&e->ctl->ingress_rests, 1, __ATOMIC_SEQ_CST);
	return true;
}

/* Whether the topmost limited cgroup @id may rest: its sockets all bounded,
 * or none yet and its limit not near at the first (near_at_first_socket()). */
static bool rest_top(struct enforcer *e, uint64_t id)
{
	struct cgroup_usage u;

	if (bpf_map_lookup_elem(bpf_map__fd(e->skel->maps.cgroup_usage), &id, &u))
		return false;
	if (!u.limits.max_pages || (u.established.near & 1))
		return false;
	if (e->rest_choice == INGRESS_REST_AUTO &&
	    !tcpbuf_rest_free(u.established.sockets, tcpbuf_threshold(u.limits.pressure_pages, u.limits.max_pages),
			      e->tcp_rmem_max, e->rmem_max))
		return false;
	if (u.established.sockets > 0)
		return u.established.dormant & TCPBUF_DORMANT_BOUNDED;
	return !tcpbuf_near_next(0, 1, e->skel->rodata->sock_bound_pages,
				 u.limits.pressure_pages, u.limits.max_pages);
}

/* rest_tops' entries of cgroups that are no longer topmost limited ones. */
static void rest_tops_prune(struct enforcer *e)
{
	int fd = bpf_map__fd(e->skel->maps.rest_tops);
	uint64_t key, next, *prev = NULL, gone[64];
	size_t n = 0;

	while (n < sizeof(gone) / sizeof(gone[0]) && !bpf_map_get_next_key(fd, prev, &next)) {
		key = next;
		prev = &key;
		if (top_index(e, key) < 0)
			gone[n++] = key;
	}
	for (size_t i = 0; i < n; i++)
		bpf_map_delete_elem(fd, &gone[i]);
}

/*
 * Which tops may rest (@rests, one flag per e->tops entry, read once per
 * sync; told to BPF in rest_tops), and before any ingress link goes: each
 * of their bounded sockets locked (rest_locks), and their listeners' MSS as
 * a crowded cgroup's (cgroup_crowded() counts a bounded level of a resting
 * top: no SYN drop holds a burst into it). Whether some top may rest, with
 * both done.
 */
bool rest_prepare(struct enforcer *e, bool *rests)
{
	int fd = bpf_map__fd(e->skel->maps.rest_tops);
	bool some = false, changed = false, was;
	__u8 one = 1, v;

	for (size_t i = 0; i < e->n_tops; i++) {
		const uint64_t *id = &e->tops[i].id;

		rests[i] = rest_top(e, *id);
		was = !bpf_map_lookup_elem(fd, id, &v);
		/* rest_locks locks the sockets of these tops only. */
		if (rests[i] && bpf_map_update_elem(fd, id, &one, BPF_ANY))
			rests[i] = false;
		if (!rests[i])
			bpf_map_delete_elem(fd, id);
		changed |= was != rests[i];
		some |= rests[i];
	}
	rest_tops_prune(e);
	if (!some)
		return false;
	/* The tops' sockets get their locks as a rest begins or a top joins
	 * it: while one lasts, a socket counted wakes the daemon, which ends
	 * it. Without them, nothing rests. */
	if ((!e->resting || changed) && rest_locks_pass(e)) {
		for (size_t i = 0; i < e->n_tops; i++)
			rests[i] = false;
		return false;
	}
	if (!e->resting || changed)
		crowd_pass(e);
	return true;
}

/* After a sync that rested @resting tops: with none, BPF no longer wakes the
 * daemon for counted sockets (the autotuning watch stays for the locks). */
void rest_end(struct enforcer *e, size_t resting)
{
	double now = enforce_mono_ms();

	if (resting && !e->resting) {
		log_debug("ingress at rest at %zu topmost limited cgroups", resting);
		e->rest_since_ms = now;
	} else if (!resting && e->resting) {
		bool lasted = now - e->rest_since_ms >= REST_SHORT_MS;

		e->rest_quiet_ms = lasted ? REST_QUIET_MS : 2 * e->rest_quiet_ms;
		if (e->rest_quiet_ms > REST_QUIET_MAX_MS)
			e->rest_quiet_ms = REST_QUIET_MAX_MS;
		log_debug("ingress linked again at every topmost limited cgroup (%.0f ms at rest; "
			  "the next after %.0f ms quiet)", now - e->rest_since_ms, e->rest_quiet_ms);
	}
	if (resting) {
		e->resting = true;
		return;
	}
	__atomic_store_n(&e->ctl->ingress_rests, 0, __ATOMIC_RELEASE);
	/* Listeners the rest gave the crowded MSS get theirs back. */
	if (e->resting)
		crowd_pass(e);
	e->resting = false;
}

int enforce_rest_fd(const struct enforcer *e)
{
	return e->rest.fd;
}

int enforce_rest_expired(struct enforcer *e)
{
	return oneshot_fired(&e->rest) ? ingress_sync(e) : 0;
}

/* Before the daemon goes: ingress linked wherever it would be without rest,
 * and no socket left locked for a rest. */
void rest_stop(struct enforcer *e)
{
	bool was = e->rest_possible;

	e->rest_possible = false;
	if (e->resting)
		ingress_sync(e);
	/* Without rest this run never linked the watch (rest_init() took an
	 * earlier run's away). */
	if (was) {
		rest_release(e);
		rest_link_set(e, false);
	}
}
