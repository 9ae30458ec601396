// SPDX-License-Identifier: GPL-2.0
/*
 * User side of enforcement (bpf/enforce.bpf.c). Pins, next to the loader's:
 *   links/enforce_sockops          sock_ops at the scope cgroup
 *   progs/enforce_sendmsg_sample   sampled mode: tp_btf/tcp_sendmsg_locked,
 *                                  linked (links/) only while some limited
 *                                  cgroup is near, like the loader's samplers
 *                                  (demand.c)
 *   links/ingress-<cgroup id>      cgroup_skb/ingress on each topmost limited
 *                                  cgroup, while some limited cgroup is near
 * so caps and refusal keep holding while no daemon runs. Near and far
 * (tcpbuf_near_next()): events from the programs, answered here by linking,
 * unlinking and sweeping. A restart loads the
 * programs afresh and moves the pinned cgroup links onto them in place
 * (BPF_LINK_UPDATE), without a moment unattached.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include "enforce.skel.h"
#include "array.h"
#include "netns.h"
#include "privilege.h"
#include "bpffs.h"
#include "demand.h"
#include "enforce.h"
#include "loader.h"
#include "log.h"
#include "status.h"
#include "tcpbuf_enforce.h"

#define MAX_EVENTS_PER_BATCH 256

struct ingress_link {
	uint64_t id;
	int fd;
};

struct limit_entry {
	uint64_t id;
	struct cgroup_limits l;
};

/* A one-shot timerfd the event loop polls, armed at most once at a time. */
struct oneshot {
	int fd;
	bool armed;
};

static void oneshot_arm(struct oneshot *t, double ms)
{
	long ns = (long)(ms * 1e6) + 1;
	struct itimerspec its = {
		.it_value.tv_sec = ns / 1000000000L,
		.it_value.tv_nsec = ns % 1000000000L,
	};

	if (!t->armed && !timerfd_settime(t->fd, 0, &its, NULL))
		t->armed = true;
}

/* Whether it fired (its fd was readable: read it), disarmed then. */
static bool oneshot_fired(struct oneshot *t)
{
	uint64_t n;

	if (read(t->fd, &n, sizeof(n)) != sizeof(n))
		return false;
	t->armed = false;
	return true;
}

struct enforcer {
	struct enforce *skel;
	struct ring_buffer *events;
	struct bpf_link *sweep_link;
	struct ingress_link *ingress;	/* attached (pinned) ingress links, sorted by id */
	size_t n_ingress, ingress_cap;
	struct enforce_cgroup *tops;	/* topmost limited cgroups in the scope (own paths) */
	size_t n_tops, tops_cap;
	int near;		/* some limited cgroup is near: 1, none: 0, unknown: -1 */
	unsigned limited;	/* cgroups with limits, as enforce_ctl has it */
	struct oneshot hold;	/* far for NEAR_HOLD_MS, then unlink */
	struct oneshot pace;	/* the next sweep for events is due */
	bool pacing;		/* sweeps have waited since the last immediate one */
	double sweep_done_ms, sweep_took_ms;	/* the last sweep for events */
	bool near_since_hold;	/* a cgroup turned near since the hold was armed */
	bool by_pointer;	/* targets by struct cgroup address (iter/cgroup) */
	struct bpf_program *ingress_prog;
	enum tcpbuf_mode mode;
	char pin_path[PATH_MAX];
	char mount[PATH_MAX];
	char scope[PATH_MAX];
	/* limits as last seen (sorted by id), to sweep where they change */
	struct limit_entry *limits;
	size_t n_limits;
	/* state changes read from the ring buffer, logged after the sweep; kept
	 * across reads while that sweep waits for its turn (sweep_wait_ms()) */
	struct tcpbuf_state_event batch[MAX_EVENTS_PER_BATCH];
	size_t n_batch, dropped;
	bool near_up, far_seen;	/* in this batch, some cgroup turned near; far */
};

/* ------------------------------------------------------------ helpers */

static long sysctl_long(const char *path, int field, long fallback)
{
	long v[3] = { fallback, fallback, fallback };
	FILE *f = fopen(path, "re");
	int n;

	if (!f)
		return fallback;
	n = fscanf(f, "%ld %ld %ld", &v[0], &v[1], &v[2]);
	fclose(f);
	return n > field ? v[field] : fallback;
}

static bool kernel_has(const char *name, int kind)
{
	struct btf *btf = btf__load_vmlinux_btf();
	bool found;

	if (!btf)
		return false;
	found = btf__find_by_name_kind(btf, name, kind) > 0;
	btf__free(btf);
	return found;
}

static int link_path(const struct enforcer *e, char *buf, size_t len, const char *name)
{
	return bpffs_path(buf, len, e->pin_path, "links/", name);
}

static double mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static bool path_within(const char *path, const char *top)
{
	size_t n = strlen(top);

	if (!strcmp(top, "/"))
		return true;
	return !strncmp(path, top, n) && (path[n] == '\0' || path[n] == '/');
}

static int cgroup_open(const struct enforcer *e, const char *rel)
{
	char path[PATH_MAX];
	int fd;

	if (snprintf(path, sizeof(path), "%s%s", e->mount, strcmp(rel, "/") ? rel : "") >=
	    (int)sizeof(path))
		return -ENAMETOOLONG;
	fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

/* ----------------------------------------------------- pinned cgroup links */

/* Attach @prog to the cgroup at @rel and pin the link as links/@name. A link
 * already pinned there moves to @prog in place when it is on that cgroup;
 * otherwise it is replaced. */
static int cgroup_link_ensure(struct enforcer *e, struct bpf_program *prog, const char *rel,
			      const char *name, int *link_fd)
{
	struct bpf_link_info info = {};
	__u32 info_len = sizeof(info);
	char path[PATH_MAX];
	struct bpf_link *link;
	int cg_fd, fd, err;
	struct stat st;

	err = link_path(e, path, sizeof(path), name);
	if (err)
		return err;
	cg_fd = cgroup_open(e, rel);
	if (cg_fd < 0)
		return cg_fd;
	if (fstat(cg_fd, &st)) {
		err = -errno;
		close(cg_fd);
		return err;
	}
	fd = bpf_obj_get(path);
	if (fd >= 0) {
		if (!bpf_obj_get_info_by_fd(fd, &info, &info_len) &&
		    info.type == BPF_LINK_TYPE_CGROUP && info.cgroup.cgroup_id == st.st_ino &&
		    !bpf_link_update(fd, bpf_program__fd(prog), NULL)) {
			close(cg_fd);
			*link_fd = fd;
			return 0;
		}
		close(fd);
		unlink(path);
	}
	link = bpf_program__attach_cgroup(prog, cg_fd);
	close(cg_fd);
	if (!link)
		return -errno;
	err = bpf_link__pin(link, path);
	if (!err)
		*link_fd = dup(bpf_link__fd(link));
	bpf_link__destroy(link);	/* the pin keeps it attached */
	return err;
}

/* Index of the first ingress link with an id >= @id (they are sorted by id). */
static size_t ingress_index(const struct enforcer *e, uint64_t id)
{
	size_t lo = 0, hi = e->n_ingress;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (e->ingress[mid].id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static struct ingress_link *ingress_find(struct enforcer *e, uint64_t id)
{
	size_t i = ingress_index(e, id);

	return i < e->n_ingress && e->ingress[i].id == id ? &e->ingress[i] : NULL;
}

static int ingress_reserve(struct enforcer *e, size_t n)
{
	size_t cap = e->ingress_cap ? e->ingress_cap : 64;
	void *p;

	if (n <= e->ingress_cap)
		return 0;
	while (cap < n)
		cap *= 2;
	p = realloc(e->ingress, cap * sizeof(*e->ingress));
	if (!p)
		return -ENOMEM;
	e->ingress = p;
	e->ingress_cap = cap;
	return 0;
}

static int ingress_insert(struct enforcer *e, struct ingress_link l)
{
	size_t i = ingress_index(e, l.id);

	if (ingress_reserve(e, e->n_ingress + 1))
		return -ENOMEM;
	memmove(&e->ingress[i + 1], &e->ingress[i], (e->n_ingress - i) * sizeof(*e->ingress));
	e->ingress[i] = l;
	e->n_ingress++;
	return 0;
}

static void ingress_detach(struct enforcer *e, size_t i)
{
	char name[64], path[PATH_MAX];

	snprintf(name, sizeof(name), "ingress-%llu", (unsigned long long)e->ingress[i].id);
	if (!link_path(e, path, sizeof(path), name))
		unlink(path);
	/* Detach now even if someone else holds the link open. */
	bpf_link_detach(e->ingress[i].fd);
	close(e->ingress[i].fd);
	memmove(&e->ingress[i], &e->ingress[i + 1], (e->n_ingress - i - 1) * sizeof(*e->ingress));
	e->n_ingress--;
}

static int ingress_cmp(const void *a, const void *b)
{
	const struct ingress_link *x = a, *y = b;

	return x->id < y->id ? -1 : x->id > y->id;
}

/* Ingress links a previous daemon left pinned: move them onto our program. */
static void ingress_adopt(struct enforcer *e)
{
	char dir[PATH_MAX], path[PATH_MAX];
	struct dirent *de;
	DIR *d;

	if (link_path(e, dir, sizeof(dir), ""))
		return;
	d = opendir(dir);
	if (!d)
		return;
	while ((de = readdir(d))) {
		unsigned long long id;
		int fd;

		if (sscanf(de->d_name, "ingress-%llu", &id) != 1)
			continue;
		if (snprintf(path, sizeof(path), "%s%s", dir, de->d_name) >= (int)sizeof(path))
			continue;
		fd = bpf_obj_get(path);
		if (fd < 0 || bpf_link_update(fd, bpf_program__fd(e->ingress_prog), NULL)) {
			if (fd >= 0)
				close(fd);
			unlink(path);
			continue;
		}
		if (ingress_reserve(e, e->n_ingress + 1)) {
			close(fd);
			break;
		}
		e->ingress[e->n_ingress++] = (struct ingress_link){ .id = id, .fd = fd };
	}
	closedir(d);
	qsort(e->ingress, e->n_ingress, sizeof(*e->ingress), ingress_cmp);
}

static int sweep(struct enforcer *e, bool all, bool targeted);
static bool near_any(struct enforcer *e);
static int near_links(struct enforcer *e, bool on);

/* -------------------------------------------------------------- events */

/*
 * Near and far events are told apart here, so that however many come in a
 * batch none is lost: far is a flag, and near needs a sweep (a place in the
 * batch) only with sockets besides the one whose count made the cgroup
 * near, which arms itself as it is counted. (A socket counted at the same
 * moment on another CPU reads near after its own count too: sockops_run().)
 */
static int on_event(void *ctx, void *data, size_t len)
{
	const struct tcpbuf_state_event *ev = data;
	struct enforcer *e = ctx;

	if (len < sizeof(*ev))
		return 0;
	if (ev->kind == TCPBUF_EVENT_NEAR) {
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

static int iter_run(struct bpf_link *link);

/* Run target_collect over the subtree of the cgroup at @rel. */
static int subtree_collect(struct enforcer *e, const char *rel)
{
	DECLARE_LIBBPF_OPTS(bpf_iter_attach_opts, io);
	union bpf_iter_link_info info = {};
	struct bpf_link *link;
	int fd, err;

	fd = cgroup_open(e, rel);
	if (fd < 0)
		return fd;
	info.cgroup.cgroup_fd = fd;
	info.cgroup.order = BPF_CGROUP_ITER_DESCENDANTS_PRE;
	io.link_info = &info;
	io.link_info_len = sizeof(info);
	link = bpf_program__attach_iter(e->skel->progs.target_collect, &io);
	err = link ? iter_run(link) : -errno;
	bpf_link__destroy(link);
	close(fd);
	return err;
}

/* Put the cgroups @ids and their descendants in sweep_targets: by address,
 * their subtrees as the kernel has them now; by id, as the tree has them
 * (each cgroup's own entry included). Returns whether they are all in. */
static bool targets_set(struct enforcer *e, const struct cgroup_tree *tree, const uint64_t *ids,
			size_t n)
{
	int fd = bpf_map__fd(e->skel->maps.sweep_targets);
	bool all = true;
	__u8 one = 1;

	for (size_t i = 0; i < n; i++) {
		const char *path = tree ? cgroup_tree_path(tree, ids[i]) : NULL;

		if (!path) {
			all = false;	/* its subtree is unknown: sweep them all */
			continue;
		}
		if (e->by_pointer) {
			if (subtree_collect(e, path))
				all = false;
			continue;
		}
		for (size_t j = 0; j < tree->n; j++)
			if (path_within(tree->entries[j]->path, path) &&
			    bpf_map_update_elem(fd, &tree->entries[j]->id, &one, BPF_ANY))
				all = false;
	}
	return all && !e->skel->bss->sweep_targets_full;
}

/* Empty sweep_targets again. */
static void targets_clear(struct enforcer *e)
{
	int fd = bpf_map__fd(e->skel->maps.sweep_targets);
	__u64 key;

	while (!bpf_map_get_next_key(fd, NULL, &key))
		if (bpf_map_delete_elem(fd, &key))
			break;
	e->skel->bss->sweep_targets_full = 0;
}

/* Far again: what runs per segment goes only after this long without a
 * cgroup near. A connection per request in a cgroup that one connection
 * makes near flips it near and far with every connection: unlinking and
 * linking each time cost the daemon ~40% of a core (bench/crr, 25,000
 * connections a second) and logged two lines per connection. */
#define NEAR_HOLD_MS	1000

/*
 * Sweeps for events are paced, so that a cgroup flapping at a threshold
 * cannot take the daemon's core: a TCP_STREAM under a 256 KiB pressure
 * threshold changed state 136-1,770 times a second, and every sweep walks
 * every socket of the host (0.4 ms with none, 38-74 ms with 100,000); the
 * daemon took up to 93% of a core. Armed sockets take the new state at their
 * next segment anyway; the sweep is for the others. The next sweep waits
 * until SWEEP_GAP_RATIO times what the last one took (and SWEEP_GAP_MIN_MS)
 * has passed since it ended: sweeps then take at most a fifth of a core, and
 * the events of the wait go in one sweep. After a quiet spell a sweep is
 * immediate, as before.
 */
#define SWEEP_GAP_MIN_MS	1.0
#define SWEEP_GAP_RATIO		4.0

static double sweep_wait_ms(const struct enforcer *e)
{
	double gap = e->sweep_took_ms * SWEEP_GAP_RATIO;

	if (gap < SWEEP_GAP_MIN_MS)
		gap = SWEEP_GAP_MIN_MS;
	return e->sweep_done_ms + gap - mono_ms();
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
	bool near_up, lost;
	int err = 0;

	e->near_up = e->far_seen = false;
	err = ring_buffer__consume(e->events);
	if (err < 0)
		return err;
	if (!e->n_batch && !e->dropped && !e->near_up && !e->far_seen)
		return 0;
	err = 0;
	lost = e->dropped > dropped;	/* in this read */
	near_up = e->near_up || (lost && near_any(e));
	if (near_up) {
		e->near_since_hold = true;
		err = near_links(e, true);
	}
	if ((e->far_seen || lost) && e->near == 1 && !e->hold.armed) {
		e->near_since_hold = false;
		oneshot_arm(&e->hold, NEAR_HOLD_MS);
	}
	if (!e->n_batch && !e->dropped)
		return err;
	wait_ms = sweep_wait_ms(e);
	if (wait_ms > 0) {
		/* Said once per busy spell, naming the latest cgroup to
		 * change: the reaction times logged then include the wait. */
		if (!e->pacing) {
			const struct tcpbuf_state_event *ev = &e->batch[e->n_batch ? e->n_batch - 1 : 0];
			const char *path = e->n_batch && tree ?
					   cgroup_tree_path(tree, ev->cgroup_id) : NULL;

			log_info("%s: state changes come faster than sweeps should run: sweeps paced, "
				 "the next in %.1f ms (the last took %.2f ms; at most 1/%.0f of a core)",
				 path ? path : "?", wait_ms, e->sweep_took_ms, SWEEP_GAP_RATIO + 1);
		}
		e->pacing = true;
		oneshot_arm(&e->pace, wait_ms);
		return err;
	}
	if (!e->pace.armed && e->pacing && mono_ms() - e->sweep_done_ms > 1000)
		e->pacing = false;	/* quiet for a second: a new spell is said again */
	for (size_t i = 0; i < e->n_batch; i++)
		ids[i] = e->batch[i].cgroup_id;
	done_ms = mono_ms();
	err = sweep(e, false, !e->dropped && targets_set(e, tree, ids, e->n_batch)) ?: err;
	targets_clear(e);
	e->sweep_done_ms = mono_ms();
	e->sweep_took_ms = e->sweep_done_ms - done_ms;
	done_ms = e->sweep_done_ms;
	for (size_t i = 0; i < e->n_batch; i++) {
		const struct tcpbuf_state_event *ev = &e->batch[i];
		const char *path = tree ? cgroup_tree_path(tree, ev->cgroup_id) : NULL;

		if (ev->kind == TCPBUF_EVENT_NEAR)
			log_debug("%s: near its thresholds at %lld sockets", path ? path : "?",
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

/* --------------------------------------------------------------- sweep */

/* Run an iterator program to its end (they write nothing). */
static int iter_run(struct bpf_link *link)
{
	int fd = bpf_iter_create(bpf_link__fd(link)), n;

	if (fd < 0)
		return -errno;
	n = netns_iter_drain(fd, NULL);
	close(fd);
	return n;
}

/* Every usage entry takes its cgroup's limits anew (bpf/enforce.bpf.c). */
static int limits_refresh(struct enforcer *e)
{
	LIBBPF_OPTS(bpf_test_run_opts, o);
	int err;

	err = bpf_prog_test_run_opts(bpf_program__fd(e->skel->progs.limits_refresh), &o);
	if (err)
		log_warn("enforcement: cannot refresh the cgroups' limits: %s", strerror(-err));
	return err;
}

/* @all: every socket (limits changed: limits_refresh ran before); else the
 * sockets tcpbufd sizes, only those under sweep_targets when @targeted. */
static int sweep(struct enforcer *e, bool all, bool targeted)
{
	int n;

	e->skel->bss->sweep_all = all;
	e->skel->bss->sweep_targeted = targeted;
	/* In every network namespace with tracked sockets. */
	n = netns_iter_each(bpf_link__fd(e->sweep_link), netns_iter_drain, NULL);
	if (n)
		log_warn("enforcement sweep failed: %s", strerror(-n));
	return n;
}

/* --------------------------------------------------------- limited set */

static int limit_entry_cmp(const void *a, const void *b)
{
	const struct limit_entry *x = a, *y = b;

	return x->id < y->id ? -1 : x->id > y->id;
}

/*
 * The cgroups whose limits differ from what we saw last (set, changed or
 * removed), into *@out (malloc'd, sorted; *@n_out of them). When they cannot
 * be told (no memory), *@out is NULL and *@n_out SIZE_MAX: all changed.
 */
static void limits_diff(struct enforcer *e, uint64_t **out, size_t *n_out)
{
	int fd = bpf_map__fd(e->skel->maps.cgroup_limits);
	struct limit_entry *now = NULL, *was = e->limits;
	size_t n = 0, cap = 0, i = 0, j = 0, k = 0;
	uint64_t key, next, *prev = NULL, *changed;

	*out = NULL;
	*n_out = SIZE_MAX;
	while (!bpf_map_get_next_key(fd, prev, &next)) {
		key = next;
		prev = &key;
		if (n == cap) {
			void *p = realloc(now, (cap = cap ? cap * 2 : 16) * sizeof(*now));

			if (!p) {
				free(now);
				return;
			}
			now = p;
		}
		now[n].id = key;
		if (!bpf_map_lookup_elem(fd, &key, &now[n].l))
			n++;
	}
	if (n)
		qsort(now, n, sizeof(*now), limit_entry_cmp);
	changed = malloc((n + e->n_limits + 1) * sizeof(*changed));
	if (!changed) {
		free(now);
		return;
	}
	while (i < n || j < e->n_limits) {
		if (j == e->n_limits || (i < n && now[i].id < was[j].id)) {
			changed[k++] = now[i++].id;
		} else if (i == n || was[j].id < now[i].id) {
			changed[k++] = was[j++].id;
		} else {
			if (memcmp(&now[i].l, &was[j].l, sizeof(now[i].l)))
				changed[k++] = now[i].id;
			i++;
			j++;
		}
	}
	free(e->limits);
	e->limits = now;
	e->n_limits = n;
	*out = changed;
	*n_out = k;
}

static int id_cmp(const void *a, const void *b)
{
	const uint64_t *x = a, *y = b;

	return *x < *y ? -1 : *x > *y;
}

/*
 * Make the usage entries of limited cgroups that no charge has made yet,
 * among those whose limits changed (@changed, from limits_diff(); NULL: all
 * of @cgs).
 * limits_refresh copies each cgroup's limits into its own entry, and a
 * charge that makes an entry later leaves the copy empty: so every limited
 * cgroup needs its entry before the refresh. A charge racing to make one
 * first is fine (EEXIST): the refresh that follows fills it. Entries of
 * limited cgroups are never deleted (status_prune() takes cgroups that are
 * gone), so those whose limits did not change have theirs.
 */
static int usage_entries_make(struct enforcer *e, const struct enforce_cgroup *cgs, size_t n,
			      const uint64_t *changed, size_t n_changed)
{
	int fd = bpf_map__fd(e->skel->maps.cgroup_usage), err = 0;

	for (size_t i = 0; i < n; i++) {
		struct cgroup_usage u = { .level = cgroup_path_level(cgs[i].path) };

		if (changed && !bsearch(&cgs[i].id, changed, n_changed, sizeof(*changed), id_cmp))
			continue;
		if (bpf_map_update_elem(fd, &cgs[i].id, &u, BPF_NOEXIST) && errno != EEXIST) {
			err = -errno;
			log_warn("%s: cannot make its usage entry (id %llu): %s", cgs[i].path,
				 (unsigned long long)cgs[i].id, strerror(errno));
		}
	}
	return err;
}

/* ---------------------------------------------------- topmost cgroups */

/*
 * A limited cgroup below another one is covered by its ancestor's ingress
 * program (cgroup programs run for the whole subtree): only the topmost
 * limited cgroups of the scope get one.
 */
static int top_cmp(const void *a, const void *b)
{
	const struct enforce_cgroup *x = a, *y = b;

	return x->id < y->id ? -1 : x->id > y->id;
}

/* Whether @id is a topmost limited cgroup (tops is sorted by id). */
static bool tops_have(const struct enforcer *e, uint64_t id)
{
	struct enforce_cgroup key = { .id = id };

	return e->n_tops && bsearch(&key, e->tops, e->n_tops, sizeof(*e->tops), top_cmp);
}

/* Append; tops_sort() once done. */
static int tops_add(struct enforcer *e, const struct enforce_cgroup *cg)
{
	char *path;

	if (cg->covered || tops_have(e, cg->id))
		return 0;
	if (!path_within(cg->path, e->scope)) {
		log_warn("%s: outside the scope %s; limits are not enforced there", cg->path,
			 e->scope);
		return 0;
	}
	if (array_reserve(e->tops, e->tops_cap, e->n_tops, 16))
		return -ENOMEM;
	path = strdup(cg->path);
	if (!path)
		return -ENOMEM;
	e->tops[e->n_tops++] = (struct enforce_cgroup){ .id = cg->id, .path = path };
	return 0;
}

static void tops_remove(struct enforcer *e, uint64_t id)
{
	for (size_t i = 0; i < e->n_tops; i++) {
		if (e->tops[i].id != id)
			continue;
		free((char *)e->tops[i].path);
		memmove(&e->tops[i], &e->tops[i + 1], (--e->n_tops - i) * sizeof(*e->tops));
		return;
	}
}

static void tops_clear(struct enforcer *e)
{
	for (size_t i = 0; i < e->n_tops; i++)
		free((char *)e->tops[i].path);
	e->n_tops = 0;
}

static void tops_sort(struct enforcer *e)
{
	qsort(e->tops, e->n_tops, sizeof(*e->tops), top_cmp);
}

static int ingress_attach(struct enforcer *e, const struct enforce_cgroup *cg)
{
	struct ingress_link l = { .id = cg->id };
	char name[64];
	int r;

	if (ingress_find(e, cg->id))
		return 0;
	snprintf(name, sizeof(name), "ingress-%llu", (unsigned long long)cg->id);
	r = cgroup_link_ensure(e, e->ingress_prog, cg->path, name, &l.fd);
	if (r) {
		log_err("%s: cannot attach ingress refusal: %s", cg->path, strerror(-r));
		return r;
	}
	r = ingress_insert(e, l);
	if (r) {
		close(l.fd);
		return r;
	}
	log_debug("%s: ingress refusal attached", cg->path);
	return 0;
}

/* Ingress links at every topmost limited cgroup while some cgroup is near
 * (near_links()), at none otherwise. */
static int ingress_sync(struct enforcer *e)
{
	bool on = e->near == 1;
	int err = 0;

	for (size_t i = 0; i < e->n_ingress;) {
		if (on && tops_have(e, e->ingress[i].id))
			i++;
		else
			ingress_detach(e, i);
	}
	for (size_t i = 0; on && i < e->n_tops; i++) {
		int r = ingress_attach(e, &e->tops[i]);

		if (r == -ENOMEM)
			return r;
		err = err ?: r;
	}
	return err;
}

static int ctl_update(struct enforcer *e, unsigned limited, bool near_linked)
{
	int fd = bpf_map__fd(e->skel->maps.enforce_ctl);
	struct tcpbuf_enforce_ctl ctl = {};
	__u32 zero = 0;

	e->limited = limited;
	/* limits_gen is limits_refresh's, which only we run: kept as it is. */
	if (bpf_map_lookup_elem(fd, &zero, &ctl))
		return -errno;
	ctl.limited_cgroups = limited;
	ctl.near_linked = near_linked;
	/* Programs bump state_gen while we hold this copy: write back a
	 * generation none of them has seen lately, so nothing trusted at one
	 * of those is trusted again (sock_charge.max_clear_gen). */
	ctl.state_gen += 0x10001;
	if (bpf_map_update_elem(fd, &zero, &ctl, BPF_ANY))
		return -errno;
	return 0;
}

/* ---------------------------------------------------------- near, far */

/* Only a limited cgroup is ever near (near_update(), limits_refresh): one
 * lookup per limited cgroup, not a walk of every cgroup that holds TCP
 * memory. */
static bool near_any(struct enforcer *e)
{
	int fd = bpf_map__fd(e->skel->maps.cgroup_usage);
	struct cgroup_usage u;

	for (size_t i = 0; i < e->n_limits; i++)
		if (!bpf_map_lookup_elem(fd, &e->limits[i].id, &u) && u.established.near)
			return true;
	return false;
}

/*
 * What runs for every segment or syscall runs only while some limited cgroup
 * is near (tcpbuf_near_next()): the per-syscall samplers (demand.c) and
 * ingress refusal at every topmost limited cgroup. Far cgroups' sockets
 * are not armed, so ingress lets theirs pass at the first lookup.
 */
static int near_links(struct enforcer *e, bool on)
{
	bool quiet = e->near == -1 && !on;	/* at start, nothing was on */
	int err = 0;

	if (e->near == on)
		return 0;
	/* BPF wakes us for a cgroup turning near by its only socket only while
	 * this is clear: cleared before unlinking, set once linked. */
	if (!on)
		err = ctl_update(e, e->limited, false);
	err = demand_links_set(e->pin_path, on) ?: err;
	e->near = on;
	err = ingress_sync(e) ?: err;
	if (on)
		err = ctl_update(e, e->limited, true) ?: err;
	if (!quiet)
		log_info("%s: per-segment enforcement %s", on ? "a limited cgroup is near its thresholds" :
		 "every limited cgroup is far from its thresholds", on ? "on" : "off");
	return err;
}

/* A change of limits to more cgroups than this sweeps every socket: each
 * changed subtree costs an iterator run to collect. */
#define LIMITS_TARGETS_MAX	256

/*
 * After a change of limits or of the limited set: every usage entry takes its
 * cgroup's limits, state and near or far anew (limits_refresh), then the
 * sockets under the @n cgroups @ids whose limits changed to their caps (armed
 * or released); every socket when @tree cannot name those cgroups or they are
 * many.
 * What runs per segment goes on before the sweep arms sockets, and off after
 * it released them.
 */
static int near_and_sweep(struct enforcer *e, const struct cgroup_tree *tree, const uint64_t *ids,
			  size_t n)
{
	int err = limits_refresh(e);
	bool on = near_any(e);

	if (on)
		err = near_links(e, true) ?: err;
	if (n) {	/* SIZE_MAX, @ids NULL: not known which */
		bool targeted = n <= LIMITS_TARGETS_MAX && targets_set(e, tree, ids, n);

		err = sweep(e, true, targeted) ?: err;
		targets_clear(e);
	}
	if (!on)
		err = near_links(e, false) ?: err;
	return err;
}

int enforce_set_limited(struct enforcer *e, const struct enforce_cgroup *cgs, size_t n,
			const struct cgroup_tree *tree)
{
	uint64_t *changed;
	size_t n_changed;
	int err = 0;

	tops_clear(e);	/* so tops_add() finds no duplicate: the ids are distinct */
	for (size_t i = 0; i < n; i++)
		if (tops_add(e, &cgs[i]) == -ENOMEM)
			return -ENOMEM;
	tops_sort(e);
	limits_diff(e, &changed, &n_changed);
	err = usage_entries_make(e, cgs, n, changed, n_changed);
	err = ctl_update(e, n, e->near == 1) ?: err;
	err = near_and_sweep(e, tree, changed, n_changed) ?: err;
	free(changed);
	return ingress_sync(e) ?: err;	/* the set of topmost cgroups changed */
}

int enforce_add_limited(struct enforcer *e, const struct enforce_cgroup *cgs, size_t n,
			unsigned limited, const struct cgroup_tree *tree)
{
	uint64_t *changed;
	size_t n_changed;
	int err = 0;

	for (size_t i = 0; i < n; i++) {
		if (tops_add(e, &cgs[i]) == -ENOMEM)
			return -ENOMEM;
		tops_sort(e);
	}
	err = usage_entries_make(e, cgs, n, NULL, 0);
	err = ctl_update(e, limited, e->near == 1) ?: err;
	/* @cgs among them: a socket made in the moment before its cgroup had
	 * limits has no caps. */
	limits_diff(e, &changed, &n_changed);
	err = near_and_sweep(e, tree, changed, n_changed) ?: err;
	free(changed);
	return ingress_sync(e) ?: err;
}

int enforce_forget(struct enforcer *e, uint64_t id, unsigned limited)
{
	uint64_t *changed;
	size_t n_changed;
	int err;

	tops_remove(e, id);
	err = ctl_update(e, limited, e->near == 1);
	limits_diff(e, &changed, &n_changed);	/* remembered as removed */
	free(changed);
	err = near_and_sweep(e, NULL, NULL, 0) ?: err;	/* its entry's copy of the limits goes */
	return ingress_sync(e) ?: err;
}

/* --------------------------------------------------------- start, close */

static int print_fn(enum libbpf_print_level level, const char *fmt, va_list args)
{
	if (level == LIBBPF_DEBUG && log_max_level < LOG_DEBUG)
		return 0;
	return vfprintf(stderr, fmt, args);
}

static void set_rodata(struct enforce *skel, enum tcpbuf_mode mode)
{
	long wmem_max = sysctl_long("/proc/sys/net/core/wmem_max", 0, 212992);
	long rmem_max = sysctl_long("/proc/sys/net/core/rmem_max", 0, 212992);
	long tcp_wmem2 = sysctl_long("/proc/sys/net/ipv4/tcp_wmem", 2, 4 << 20);
	long tcp_rmem2 = sysctl_long("/proc/sys/net/ipv4/tcp_rmem", 2, 6 << 20);
	long snd = 2 * wmem_max, rcv = 2 * rmem_max;

	/* What autotuning would reach, as far as SO_*BUF can give it. */
	if (tcp_wmem2 > 0 && tcp_wmem2 < snd)
		snd = tcp_wmem2;
	if (tcp_rmem2 > 0 && tcp_rmem2 < rcv)
		rcv = tcp_rmem2;
	skel->rodata->accounting_mode = mode;
	/* The most one socket can hold (tcpbuf_near_next()): the larger of
	 * what autotuning and SO_*BUF reach each way, and an skb each way
	 * with its overhead. */
	skel->rodata->sock_bound_pages =
		((tcp_rmem2 > 2 * rmem_max ? tcp_rmem2 : 2 * rmem_max) +
		 (tcp_wmem2 > 2 * wmem_max ? tcp_wmem2 : 2 * wmem_max) + (256 << 10)) / 4096;
	skel->rodata->sndbuf_ceiling = snd > INT_MAX ? INT_MAX : snd;
	skel->rodata->rcvbuf_ceiling = rcv > INT_MAX ? INT_MAX : rcv;
	/* A new socket starts where the kernel would start it (tcp_wmem[1]);
	 * the callbacks grow it while its writer keeps it full. */
	skel->rodata->sndbuf_initial = sysctl_long("/proc/sys/net/ipv4/tcp_wmem", 1, 16384);
	if (skel->rodata->sndbuf_initial > skel->rodata->sndbuf_ceiling)
		skel->rodata->sndbuf_initial = skel->rodata->sndbuf_ceiling;
}

int enforce_start(const struct enforce_opts *o, struct enforcer **out)
{
	LIBBPF_OPTS(bpf_object_open_opts, open_opts, .pin_root_path = o->pin_path);
	bool kctx = kernel_has("bpf_cast_to_kern_ctx", BTF_KIND_FUNC);
	bool sample = o->mode == TCPBUF_MODE_SAMPLED &&
		      kernel_has("btf_trace_tcp_sendmsg_locked", BTF_KIND_TYPEDEF);
	bool by_pointer = kernel_has("bpf_iter_cgroup", BTF_KIND_FUNC);
	struct enforcer *e;
	int fd, err;

	e = calloc(1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	e->mode = o->mode;
	e->near = -1;
	e->hold.fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	e->pace.fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	if (e->hold.fd < 0 || e->pace.fd < 0) {
		err = -errno;
		if (e->hold.fd >= 0)
			close(e->hold.fd);
		if (e->pace.fd >= 0)
			close(e->pace.fd);
		free(e);
		return err;
	}
	snprintf(e->pin_path, sizeof(e->pin_path), "%s", o->pin_path);
	snprintf(e->mount, sizeof(e->mount), "%s", o->cgroup_mount);
	snprintf(e->scope, sizeof(e->scope), "%s", o->scope && *o->scope ? o->scope : "/");
	libbpf_set_print(print_fn);

	e->skel = enforce__open_opts(&open_opts);
	if (!e->skel) {
		err = -errno;
		goto fail;
	}
	set_rodata(e->skel, o->mode);
	bpf_program__set_autoload(e->skel->progs.enforce_ingress, kctx);
	bpf_program__set_autoload(e->skel->progs.enforce_ingress_compat, !kctx);
	bpf_program__set_autoload(e->skel->progs.sendmsg_sample, sample);
	bpf_program__set_autoload(e->skel->progs.target_collect, by_pointer);
	e->ingress_prog = kctx ? e->skel->progs.enforce_ingress : e->skel->progs.enforce_ingress_compat;
	/* Without the kfunc in vmlinux, libbpf looks for it in the modules'
	 * BTF too, and listing BTF objects takes CAP_SYS_ADMIN (6.1). */
	if (!kctx)
		sys_admin_effective(true);
	err = enforce__load(e->skel);
	if (!kctx)
		sys_admin_effective(false);
	if (err) {
		log_err("enforcement: cannot load programs: %s", strerror(-err));
		goto fail;
	}
	e->by_pointer = by_pointer;
	e->skel->bss->sweep_by_pointer = by_pointer;
	err = cgroup_link_ensure(e, e->skel->progs.enforce_sockops, e->scope, "enforce_sockops", &fd);
	if (err) {
		log_err("enforcement: cannot attach sock_ops at %s: %s", e->scope, strerror(-err));
		goto fail;
	}
	close(fd);
	if (sample) {
		err = demand_pin(e->pin_path, e->skel->progs.sendmsg_sample, "enforce_sendmsg_sample");
		if (err) {
			log_err("enforcement: cannot pin the sendmsg sampler: %s", strerror(-err));
			goto fail;
		}
	}
	e->sweep_link = bpf_program__attach_iter(e->skel->progs.enforce_sweep, NULL);
	if (!e->sweep_link) {
		err = -errno;
		log_err("enforcement: cannot create the sweep iterator: %s", strerror(-err));
		goto fail;
	}
	e->events = ring_buffer__new(bpf_map__fd(e->skel->maps.enforce_events), on_event, e, NULL);
	if (!e->events) {
		err = -errno;
		goto fail;
	}
	ingress_adopt(e);
	netns_set_map(bpf_map__fd(e->skel->maps.netns_seen));
	*out = e;
	return 0;
fail:
	enforce_close(e);
	return err;
}

void enforce_close(struct enforcer *e)
{
	if (!e)
		return;
	netns_set_map(-1);
	ring_buffer__free(e->events);
	close(e->hold.fd);
	close(e->pace.fd);
	bpf_link__destroy(e->sweep_link);
	tops_clear(e);
	free(e->tops);
	for (size_t i = 0; i < e->n_ingress; i++)
		close(e->ingress[i].fd);
	free(e->ingress);
	free(e->limits);
	enforce__destroy(e->skel);
	free(e);
}
