// SPDX-License-Identifier: GPL-2.0
/*
 * State events from the programs: read from the ring buffer, answered by
 * linking or unlinking and a sweep, paced so a flapping cgroup cannot take
 * the daemon's core; far again, unlinked after a hold.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/libbpf.h>
#include <time.h>
#include <sys/timerfd.h>
#include "log.h"
#include "netns.h"
#include "unaccounted.h"
#include "loader.h"
#include "status.h"
#include "enforcer.h"

void oneshot_arm(struct oneshot *t, double ms)
{
	long ns = (long)(ms * 1e6) + 1;
	struct itimerspec its = {
		.it_value.tv_sec = ns / 1000000000L,
		.it_value.tv_nsec = ns % 1000000000L,
	};

	if (!t->armed && !timerfd_settime(t->fd, 0, &its, NULL))
		t->armed = true;
}

bool oneshot_fired(struct oneshot *t)
{
	uint64_t n;

	if (read(t->fd, &n, sizeof(n)) != sizeof(n))
		return false;
	t->armed = false;
	return true;
}

double enforce_mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}
/* The listeners' MSS as their cgroups' crowding says (crowd_listeners). */
void crowd_pass(struct enforcer *e)
{
	int n = netns_iter_each(bpf_link__fd(e->crowd_link), netns_iter_drain, NULL);

	if (n)
		log_warn("enforcement: listeners' pass failed: %s", strerror(-n));
}

/* -------------------------------------------------------------- events */

/*
 * Near and far events are told apart here, so that however many come in a
 * batch none is lost: far is a flag, and near needs a sweep (a place in the
 * batch) only with sockets besides the one whose count made the cgroup
 * near, which arms itself as it is counted. (A socket counted at the same
 * moment on another CPU reads near after its own count too: sockops_run().)
 */
int on_event(void *ctx, void *data, size_t len)
{
	const struct tcpbuf_state_event *ev = data;
	struct enforcer *e = ctx;

	if (len < sizeof(*ev))
		return 0;
	if (ev->kind == TCPBUF_EVENT_UNACCOUNTED) {
		unaccounted_note(ev->cgroup_id, ev->usage_pages);
		return 0;
	}
	if (ev->kind == TCPBUF_EVENT_REST_RAISE) {
		rest_raise_note(e, ev->cgroup_id);
		return 0;
	}
	if (ev->kind == TCPBUF_EVENT_REST) {
		if (!e->rest_woken || ev->time_ns < e->rest_woken_ns)
			e->rest_woken_ns = ev->time_ns;
		e->rest_woken = true;
		return 0;
	}
	if (ev->kind == TCPBUF_EVENT_LOST) {
		unaccounted_lost_note(ev->cgroup_id, ev->usage_pages);
		e->lost_seen = true;
		return 0;
	}
	if (ev->kind == TCPBUF_EVENT_NEAR) {
		if ((ev->old_state ^ ev->new_state) & TCPBUF_NEAR_CROWDED)
			e->crowd_seen = true;
		/* Dormant (sampled mode): the samplers follow its sockets,
		 * which are not armed: links, and a sweep that marks the
		 * others followed, as near. */
		if (!ev->new_state) {
			e->far_seen = true;
			return 0;
		}
		e->near_up = true;
		if (ev->usage_pages <= 1)
			return 0;	/* its only socket arms itself */
	}
	if (e->n_batch < MAX_EVENTS_PER_BATCH)
		memcpy(&e->batch[e->n_batch++], data, sizeof(e->batch[0]));
	else
		e->dropped++;
	return 0;
}

/* One state change: the structured, rate-limited log entry (log.c), then
 * how long after the crossing the caps were on every existing socket. */
static void report_state_change(const struct enforcer *e, const struct tcpbuf_state_event *ev,
				const char *path, double reaction_ms)
{
	char buf[64];

	if (!path) {
		snprintf(buf, sizeof(buf), "cgroup %llu", (unsigned long long)ev->cgroup_id);
		path = buf;
	}
	log_state_change(path, tcpbuf_state_name(ev->new_state), ev->usage_pages,
			 ev->threshold_pages, tcpbuf_mode_name(e->mode));
	log_debug("%s: %s -> %s at usage %lld pages (threshold %llu); caps applied %.2f ms after the crossing",
		  path, tcpbuf_state_name(ev->old_state), tcpbuf_state_name(ev->new_state),
		  (long long)ev->usage_pages, (unsigned long long)ev->threshold_pages, reaction_ms);
}

#define NEAR_HOLD_MS	1000

/*
 * Sweeps for events are paced, so that a cgroup flapping at a threshold
 * (thousands of state changes a second), each sweep walking every socket of
 * the host, cannot take the daemon's core. Armed sockets take the new state
 * at their next segment anyway; the sweep is for the others. The next sweep
 * waits until SWEEP_GAP_RATIO times what the last one took (and
 * SWEEP_GAP_MIN_MS) has passed since it ended, which bounds sweeps to a
 * fraction of a core; the events of the wait go in one sweep. After a quiet
 * spell a sweep is immediate.
 */
#define SWEEP_GAP_MIN_MS	1.0
#define SWEEP_GAP_RATIO		4.0

double sweep_wait_ms(const struct enforcer *e)
{
	double gap = e->sweep_took_ms * SWEEP_GAP_RATIO;

	if (gap < SWEEP_GAP_MIN_MS)
		gap = SWEEP_GAP_MIN_MS;
	return e->sweep_done_ms + gap - enforce_mono_ms();
}

int enforce_hold_fd(const struct enforcer *e)
{
	return e->hold.fd;
}

int enforce_hold_expired(struct enforcer *e, const struct cgroup_tree *tree)
{
	int err;

	if (!oneshot_fired(&e->hold))
		return 0;
	/* First the events BPF did not wake us for. A far event among them
	 * armed the next hold (a cgroup turned near and far again while we
	 * did not run): that one decides, a whole NEAR_HOLD_MS from now. */
	err = enforce_handle_events(e, tree);
	if (e->hold.armed)
		return err;
	if (e->near != 1 || near_any(e))
		return err;	/* near now: a far event arms the next hold */
	if (e->near_since_hold) {
		/* Far now, but near again meanwhile: one more period. */
		e->near_since_hold = false;
		oneshot_arm(&e->hold, NEAR_HOLD_MS);
		return err;
	}
	return near_links(e, false) ?: err;
}

/*
 * A batch of events (read when BPF wakes us, and at every poll for those it
 * did not wake us for). A sweep answers state changes and a cgroup turning
 * near; turning far needs none, since an armed socket
 * whose ancestors are all far is released at its next segment. A far event
 * arms the hold: what runs per segment goes once a whole NEAR_HOLD_MS has
 * passed with no cgroup turning near and none is near at its end.
 */
int enforce_handle_events(struct enforcer *e, const struct cgroup_tree *tree)
{
	uint64_t ids[MAX_EVENTS_PER_BATCH];
	size_t dropped = e->dropped;
	double done_ms, wait_ms;
	bool near_up, lost, held_lost = e->lost_seen;
	int err = 0;

	e->near_up = e->far_seen = false;
	err = ring_buffer__consume(e->events);
	if (err < 0)
		return err;
	unaccounted_report(tree);
	/* Crowded or not any more: the listeners' MSS first and unpaced, or
	 * a burst of connections is made before the sweep's turn comes
	 * (a pass over listeners, whose program skips every other socket). */
	if (e->crowd_seen) {
		e->crowd_seen = false;
		crowd_pass(e);
	}
	/* A socket held without any entry is refused at ingress: linked for
	 * it from now on, near or far. */
	if (e->lost_seen && !held_lost && (err = ingress_sync(e)))
		return err;
	/* Rest-locked sockets whose autotuning asked are raised. */
	if (e->rest_raise)
		rest_raise_pass(e);
	/* Ingress back first, unpaced, where it rests: a bounded cgroup
	 * counted a socket or left bounded, or some cgroup turned near. */
	if (e->rest_woken || e->near_up || e->far_seen) {
		bool back = e->rest_woken || e->near_up;

		if (e->rest_woken && e->resting)
			rest_late(e->rest_woken_ns);
		e->rest_woken = false;
		rest_note(e);
		if (back && e->resting && (err = ingress_sync(e)))
			return err;
	}
	if (!e->n_batch && !e->dropped && !e->near_up && !e->far_seen)
		return 0;
	err = 0;
	lost = e->dropped > dropped;	/* in this read */
	near_up = e->near_up || (lost && near_any(e));
	if (near_up) {
		e->near_since_hold = true;
		err = near_links(e, true);
	}
	/* A cgroup bounded now, or no longer: the samplers follow only those
	 * that are not (tcpbuf_bounded_share()). */
	if (e->near == 1 && (near_up || e->far_seen))
		err = samplers_sync(e) ?: err;
	if ((e->far_seen || lost) && e->near == 1 && !e->hold.armed) {
		e->near_since_hold = false;
		oneshot_arm(&e->hold, NEAR_HOLD_MS);
	}
	if (!e->n_batch && !e->dropped)
		return err;
	wait_ms = sweep_wait_ms(e);
	if (wait_ms > 0) {
		double now = enforce_mono_ms();

		/* Said once per busy spell (a second without a wait ends
		 * one), naming the latest cgroup to change: the reaction
		 * times logged then include the wait. */
		if (!e->pacing || now - e->paced_ms > 1000) {
			const struct tcpbuf_state_event *ev = &e->batch[e->n_batch ? e->n_batch - 1 : 0];
			const char *path = e->n_batch && tree ?
					   cgroup_tree_path(tree, ev->cgroup_id) : NULL;

			log_info("%s: state changes come faster than sweeps should run: sweeps paced, "
				 "the next in %.1f ms (the last took %.2f ms; at most 1/%.0f of a core)",
				 path ? path : "?", wait_ms, e->sweep_took_ms, SWEEP_GAP_RATIO + 1);
		}
		e->pacing = true;
		e->paced_ms = now;
		oneshot_arm(&e->pace, wait_ms);
		return err;
	}
	if (!e->pace.armed && e->pacing && enforce_mono_ms() - e->sweep_done_ms > 1000)
		e->pacing = false;	/* quiet for a second: a new spell is said again */
	for (size_t i = 0; i < e->n_batch; i++)
		ids[i] = e->batch[i].cgroup_id;
	done_ms = enforce_mono_ms();
	err = sweep(e, false, !e->dropped && targets_set(e, tree, ids, e->n_batch)) ?: err;
	targets_clear(e);
	e->sweep_done_ms = enforce_mono_ms();
	e->sweep_took_ms = e->sweep_done_ms - done_ms;
	done_ms = e->sweep_done_ms;
	for (size_t i = 0; i < e->n_batch; i++) {
		const struct tcpbuf_state_event *ev = &e->batch[i];
		const char *path = tree ? cgroup_tree_path(tree, ev->cgroup_id) : NULL;

		if (ev->kind == TCPBUF_EVENT_NEAR)
			log_debug("%s: %s its thresholds%s at %lld sockets", path ? path : "?",
				  ev->new_state & TCPBUF_NEAR_BOUNDED ? "dormant, bounded, near" :
				  ev->new_state & TCPBUF_NEAR_DORMANT ? "dormant, followed, near" : "near",
				  ev->new_state & TCPBUF_NEAR_CROWDED ? ", crowded," : "",
				  (long long)ev->usage_pages);
		else
			report_state_change(e, ev, path, done_ms - ev->time_ns / 1e6);
	}
	if (e->dropped)
		log_info("%zu more state changes in this batch", e->dropped);
	e->n_batch = 0;
	e->dropped = 0;
	return err;
}

int enforce_pace_fd(const struct enforcer *e)
{
	return e->pace.fd;
}

int enforce_pace_expired(struct enforcer *e, const struct cgroup_tree *tree)
{
	return oneshot_fired(&e->pace) ? enforce_handle_events(e, tree) : 0;
}

int enforce_events_fd(const struct enforcer *e)
{
	return ring_buffer__epoll_fd(e->events);
}
