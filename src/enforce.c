// SPDX-License-Identifier: GPL-2.0
/*
 * User side of enforcement (bpf/enforce.bpf.c). Pins, next to the loader's:
 *   links/enforce_sockops          sock_ops at the scope cgroup
 *   links/enforce_setsockopt       cgroup/setsockopt there (wide writers)
 *   progs/enforce_sendmsg_sample   sampled mode: tp_btf/tcp_sendmsg_locked,
 *                                  linked (links/) only while some limited
 *                                  cgroup is near, like the loader's samplers
 *                                  (demand.c)
 *   links/ingress-<cgroup id>      cgroup_skb/ingress on each topmost limited
 *                                  cgroup, while some limited cgroup is near
 *                                  and that one does not rest (enforce_rest.c)
 *   links/rest_rcvbuf_grow         tp_btf/tcp_rcvbuf_grow while one rests
 * so caps and refusal keep holding while no daemon runs. Near and far
 * (tcpbuf_near_next()): events from the programs, answered here by linking,
 * unlinking and sweeping. A restart loads the
 * programs afresh and moves the pinned cgroup links onto them in place
 * (BPF_LINK_UPDATE), without a moment unattached.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/mman.h>
#include <sys/timerfd.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include "enforce.skel.h"
#include "netns.h"
#include "privilege.h"
#include "demand.h"
#include "enforce.h"
#include "log.h"
#include "tables.h"
#include "tcpbuf_enforce.h"
#include "enforcer.h"
#include "loader.h"

/* ------------------------------------------------------------ helpers */

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

int ctl_update(struct enforcer *e, unsigned limited, bool near_linked)
{
	struct tcpbuf_enforce_ctl *ctl = e->ctl;

	e->limited = limited;
	if (!ctl)
		return -ENODEV;
	/* A cgroup bounded at its first connection has ingress linked but no
	 * samplers; when a burst turns it near, its armed sockets must sample
	 * themselves until the samplers are there, or nothing moves usage. */
	near_linked = near_linked && (e->mode != TCPBUF_MODE_SAMPLED || e->samplers_on);
	/* In place, never the whole entry: a write of a copy would take back
	 * the epoch bumps programs made meanwhile. Bumped after, so whatever
	 * is found at the new epoch was found with these. */
	__atomic_store_n(&ctl->limited_cgroups, limited, __ATOMIC_RELAXED);
	__atomic_store_n(&ctl->near_linked, near_linked, __ATOMIC_RELAXED);
	__atomic_fetch_add(&ctl->epoch, 1, __ATOMIC_SEQ_CST);
	return 0;
}

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
	return ingress_sync(e) ?: err;
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
	long wmem_max = loader_sysctl_long("/proc/sys/net/core/wmem_max", 0, 212992);
	long rmem_max = loader_sysctl_long("/proc/sys/net/core/rmem_max", 0, 212992);
	long tcp_wmem2 = loader_sysctl_long("/proc/sys/net/ipv4/tcp_wmem", 2, 4 << 20);
	long tcp_rmem2 = loader_sysctl_long("/proc/sys/net/ipv4/tcp_rmem", 2, 6 << 20);
	long snd = 2 * wmem_max, rcv = 2 * rmem_max;

	/* What autotuning would reach, as far as SO_*BUF can give it. */
	if (tcp_wmem2 > 0 && tcp_wmem2 < snd)
		snd = tcp_wmem2;
	if (tcp_rmem2 > 0 && tcp_rmem2 < rcv)
		rcv = tcp_rmem2;
	skel->rodata->accounting_mode = mode;
	skel->rodata->near_guard_growth = loader_guard_growth(mode);
	skel->rodata->near_guard_followed = mode == TCPBUF_MODE_SAMPLED;
	skel->rodata->near_guard_writer_pages = loader_guard_writer_pages(mode, false);
	skel->rodata->near_guard_wide_writer_pages = loader_guard_writer_pages(mode, true);
	skel->rodata->near_guard_wmem_max = wmem_max;
	skel->rodata->near_guard_bounded_rcvbuf = loader_bounded_rcvbuf(mode);
	skel->rodata->sock_bound_pages =
		tcpbuf_sock_bound_pages(tcp_rmem2, rmem_max, tcp_wmem2, wmem_max);
	skel->rodata->sndbuf_ceiling = snd > INT_MAX ? INT_MAX : snd;
	skel->rodata->rcvbuf_ceiling = rcv > INT_MAX ? INT_MAX : rcv;
	skel->rodata->rest_rcvbuf_max = 2 * rmem_max;
	/* A new socket starts where the kernel would start it (tcp_wmem[1]);
	 * the callbacks grow it while its writer keeps it full. */
	skel->rodata->sndbuf_initial = loader_sysctl_long("/proc/sys/net/ipv4/tcp_wmem", 1, 16384);
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
	/* Ingress at rest watches autotuning at its tracepoint (6.17). */
	bool rest = o->mode == TCPBUF_MODE_SAMPLED && kctx &&
		    kernel_has("btf_trace_tcp_rcvbuf_grow", BTF_KIND_TYPEDEF);
	struct enforcer *e;
	int fd, err;

	e = calloc(1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	e->mode = o->mode;
	e->near = -1;
	e->hold.fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	e->pace.fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	e->rest.fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	if (e->hold.fd < 0 || e->pace.fd < 0 || e->rest.fd < 0) {
		err = -errno;
		if (e->hold.fd >= 0)
			close(e->hold.fd);
		if (e->pace.fd >= 0)
			close(e->pace.fd);
		if (e->rest.fd >= 0)
			close(e->rest.fd);
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
	e->skel->rodata->crowd_kern_ctx = kctx;
	bpf_program__set_autoload(e->skel->progs.enforce_ingress, kctx);
	bpf_program__set_autoload(e->skel->progs.enforce_ingress_compat, !kctx);
	bpf_program__set_autoload(e->skel->progs.sendmsg_sample, sample);
	bpf_program__set_autoload(e->skel->progs.target_collect, by_pointer);
	bpf_program__set_autoload(e->skel->progs.rest_rcvbuf_grow, rest);
	e->ingress_prog = kctx ? e->skel->progs.enforce_ingress : e->skel->progs.enforce_ingress_compat;
	/* Without the kfunc in vmlinux, libbpf looks for it in the modules'
	 * BTF too, and listing BTF objects takes CAP_SYS_ADMIN (6.1). */
	if (!kctx)
		sys_admin_effective(true);
	err = tables_fit(e->skel->obj, o->pin_path);
	if (!err)
		err = bpf_map__set_max_entries(e->skel->maps.rest_tops,
					       bpf_map__max_entries(e->skel->maps.cgroup_limits));
	if (!err)
		err = enforce__load(e->skel);
	if (!kctx)
		sys_admin_effective(false);
	if (err) {
		log_err("enforcement: cannot load programs: %s", strerror(-err));
		goto fail;
	}
	e->ctl = mmap(NULL, sizeof(*e->ctl), PROT_READ | PROT_WRITE, MAP_SHARED,
		      bpf_map__fd(e->skel->maps.enforce_ctl), 0);
	if (e->ctl == MAP_FAILED) {
		err = -errno;
		e->ctl = NULL;
		log_err("enforcement: cannot map enforce_ctl: %s", strerror(-err));
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
	err = cgroup_link_ensure(e, e->skel->progs.enforce_setsockopt, e->scope,
				 "enforce_setsockopt", &fd);
	if (err) {
		log_err("enforcement: cannot attach cgroup/setsockopt at %s: %s", e->scope,
			strerror(-err));
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
	e->crowd_link = bpf_program__attach_iter(e->skel->progs.crowd_listeners, NULL);
	if (!e->crowd_link) {
		err = -errno;
		log_err("enforcement: cannot create the listeners' iterator: %s", strerror(-err));
		goto fail;
	}
	e->events = ring_buffer__new(bpf_map__fd(e->skel->maps.enforce_events), on_event, e, NULL);
	if (!e->events) {
		err = -errno;
		goto fail;
	}
	ingress_adopt(e);
	{
		/* Pins of an earlier run: its lost sockets are still refused. */
		struct tcpbuf_fallback_ctl fc;
		__u32 zero = 0;

		e->lost_seen = !bpf_map_lookup_elem(bpf_map__fd(e->skel->maps.fallback_ctl), &zero,
						    &fc) && fc.lost;
	}
	netns_set_map(bpf_map__fd(e->skel->maps.netns_seen));
	/* After the namespaces' map: locks an earlier run left in containers'
	 * namespaces are lifted there. */
	rest_init(e, rest && e->skel->rodata->near_guard_bounded_rcvbuf, o->rest);
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
	if (e->ctl)
		rest_stop(e);	/* its last pass enters every namespace */
	netns_set_map(-1);
	if (e->ctl)
		munmap(e->ctl, sizeof(*e->ctl));
	ring_buffer__free(e->events);
	close(e->hold.fd);
	close(e->pace.fd);
	close(e->rest.fd);
	bpf_link__destroy(e->sweep_link);
	bpf_link__destroy(e->crowd_link);
	bpf_link__destroy(e->rest_iter);
	tops_clear(e);
	free(e->tops);
	for (size_t i = 0; i < e->n_ingress; i++)
		close(e->ingress[i].fd);
	free(e->ingress);
	free(e->limits);
	enforce__destroy(e->skel);
	free(e);
}
