// SPDX-License-Identifier: GPL-2.0
/*
 * tcpbufd: per-cgroup TCP buffer memory accounting and limits.
 * main(): options, configuration, then one epoll loop over signals, a poll
 * timer and the control socket.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>
#include "array.h"
#include "cgwatch.h"
#include "control.h"
#include "bypass.h"
#include "daemon.h"
#include "log.h"
#include "tables.h"
#include "netns.h"
#include "notify.h"
#include "peer_facts.h"
#include "status.h"

#define DEFAULT_CONFIG "/etc/tcpbufd.conf"

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: tcpbufd [-c FILE] [-f] [--pin-path DIR] [--socket PATH]\n"
		"               [--mode auto|exact|sampled] [-v] [--version] [--help]\n"
		"\n"
		"Per-cgroup TCP buffer memory accounting and limits (cgroup v2, eBPF).\n"
		"\n"
		"  -c, --config FILE   main configuration (default " DEFAULT_CONFIG ";\n"
		"                      when it is missing, the built-in default is used)\n"
		"  -f, --foreground    stay in the foreground (tcpbufd never forks; accepted\n"
		"                      for compatibility)\n"
		"      --pin-path DIR  bpffs directory for maps and links (default /sys/fs/bpf/tcpbufd)\n"
		"      --socket PATH   control socket (default /run/tcpbufd/control.sock)\n"
		"      --mode MODE     accounting: exact (fentry/fexit), sampled (fallback),\n"
		"                      auto (exact when the kernel allows it; default)\n"
		"      --scope CGROUP  attach cgroup programs only to this subtree (default: Scope=\n"
		"                      of the config, the whole cgroup v2 tree)\n"
		"  -v, --verbose       log debug messages\n"
		"      --version       print the version\n"
		"  -h, --help          this text\n"
		"\n"
		"Signals: SIGHUP reloads the configuration, SIGTERM/SIGINT stop.\n"
		"Stopping leaves programs and maps pinned, so accounting continues and a\n"
		"restart adopts them; remove the pin directory to detach everything.\n");
}

const char *daemon_pin_path(const struct daemon *d)
{
	return d->pin_path_arg ? d->pin_path_arg : d->cfg.pin_path;
}

const char *daemon_scope(const struct daemon *d)
{
	return d->scope_arg ? d->scope_arg : d->cfg.scope;
}

const char *daemon_socket_path(const struct daemon *d)
{
	return d->socket_arg ? d->socket_arg : d->cfg.socket_path;
}

static int load_config(struct daemon *d, struct config *out, char *err, size_t errlen)
{
	return config_load(d->config_path, d->config_is_default, out, err, errlen);
}

int daemon_reload(struct daemon *d, char *err, size_t errlen)
{
	char buf[512];
	struct config next;
	int r;

	if (!err) {
		err = buf;
		errlen = sizeof(buf);
	}
	notify_reloading();
	r = load_config(d, &next, err, errlen);
	if (!r && (r = limits_check(d, &next, err, errlen)))
		config_free(&next);
	if (r) {
		log_err("reload refused, running configuration kept: %s", err);
		notify_reloaded(tcpbuf_mode_name(loader_mode(d->bpf)), d->limited_cgroups, err);
		return r;
	}
	config_free(&d->cfg);
	d->cfg = next;
	tables_reconfigured(d->cfg.max_cgroups);
	peer_facts_admin_group(d->cfg.admin_gid);
	if (d->enforce)
		enforce_set_rest(d->enforce, d->cfg.ingress_rest);
	r = daemon_resync(d);
	if (!r)
		r = bypass_apply(daemon_pin_path(d), d->tree.mount, daemon_scope(d), d->cfg.bypass_prot_mem);
	if (!r)
		log_info("configuration reloaded: %zu rules, %u cgroups limited", d->cfg.n_rules,
			 d->limited_cgroups);
	notify_reloaded(tcpbuf_mode_name(loader_mode(d->bpf)), d->limited_cgroups,
			r ? "cannot apply limits" : NULL);
	return r;
}

static int arm_timer(int fd, unsigned ms)
{
	struct itimerspec its = {
		.it_interval = { .tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L },
	};

	its.it_value = its.it_interval;
	return timerfd_settime(fd, 0, &its, NULL) ? -errno : 0;
}

static uint64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/*
 * The full pass is the safety net behind the watch, and costs O(cgroups):
 * after one that took T ms the next comes no sooner than RESYNC_SHARE * T
 * later, so at any size it takes at most 1/RESYNC_SHARE of a core (one of
 * 170 ms at 10,000 cgroups: every 3 minutes). The watch itself reports lost
 * events, which start a pass at once.
 */
#define RESYNC_SHARE 1000

/* Called for every directory before its subdirectories are read, so one
 * made meanwhile sends an event. */
static int watch_dir(void *ctx, const char *rel)
{
	struct daemon *d = ctx;
	int r;

	if (!d->watch || !d->watch_complete)
		return 0;
	r = cgwatch_add(d->watch, rel);
	if (r && r != -ENOENT) {
		/* Once, not at every pass of the polling that follows. */
		if (!d->watch_warned)
			log_warn("%s%s: cannot watch the cgroup tree: %s; new cgroups are seen "
				 "every %u ms", d->tree.mount, strcmp(rel, "/") ? rel : "",
				 strerror(-r), d->cfg.poll_interval_ms);
		d->watch_warned = true;
		d->watch_complete = false;
	}
	return 0;
}

int daemon_resync(struct daemon *d)
{
	uint64_t start = mono_ms(), took, wait;
	size_t pruned = 0;
	int r;

	d->watch_complete = d->watch != NULL;
	d->resync_needed = false;
	r = cgroup_tree_scan(&d->tree, watch_dir, d);
	if (r) {
		log_err("cannot read the cgroup tree at %s: %s", d->tree.mount, strerror(-r));
		return r;
	}
	if (d->watch_complete && d->watch_warned) {
		log_info("every cgroup of %s is watched again", d->tree.mount);
		d->watch_warned = false;
	}
	runtime_limits_prune(d);
	r = limits_apply(d);
	status_prune(loader_usage_fd(d->bpf), &d->tree, &pruned);
	took = mono_ms() - start;
	wait = took * RESYNC_SHARE > d->cfg.poll_interval_ms ? took * RESYNC_SHARE
							     : d->cfg.poll_interval_ms;
	d->next_resync_ms = mono_ms() + wait;
	log_debug("cgroup tree read in %llu ms: %zu cgroups, %u limited, %zu removed ones "
		  "forgotten; the next full pass in %llu ms", (unsigned long long)took, d->tree.n,
		  d->limited_cgroups, pruned, (unsigned long long)wait);
	notify_status(tcpbuf_mode_name(loader_mode(d->bpf)), d->limited_cgroups);
	log_state_flush();
	return r;
}

/* The cgroups the watch reported, made or removed since the last read. */
struct follow {
	struct daemon *d;
	uint64_t *ids;		/* made, parents first */
	size_t n, cap;
};

/* Its sockets may outlive a cgroup: its usage row goes once they are freed,
 * checked every poll tick rather than left to the next full pass. */
static void departed_add(struct daemon *d, uint64_t id)
{
	if (array_reserve(d->departed, d->departed_cap, d->n_departed, 16))
		return;	/* the full pass prunes it */
	d->departed[d->n_departed++] = id;
}

static void departed_check(struct daemon *d)
{
	for (size_t i = 0; i < d->n_departed;) {
		if (status_forget(loader_usage_fd(d->bpf), d->departed[i]))
			d->departed[i] = d->departed[--d->n_departed];
		else
			i++;
	}
}

static void forget_cgroup(struct daemon *d, const char *rel)
{
	struct cgroup_entry *e = cgroup_tree_remove(&d->tree, rel);

	if (!e)
		return;
	limits_forget(d, e);
	if (!status_forget(loader_usage_fd(d->bpf), e->id))
		departed_add(d, e->id);
	free(e);
}

static int follow_new_dir(void *ctx, uint64_t id, const char *rel)
{
	struct follow *f = ctx;
	struct cgroup_entry *old;
	int r;

	watch_dir(f->d, rel);
	old = cgroup_tree_find_path(&f->d->tree, rel);
	if (old && old->id != id)
		forget_cgroup(f->d, rel);	/* removed and made again */
	r = cgroup_tree_add(&f->d->tree, id, rel);
	if (r == -EEXIST) {
		f->d->resync_needed = true;	/* known under another path: moved */
		return 0;
	}
	if (r <= 0)
		return r;
	if (array_reserve(f->ids, f->cap, f->n, 16))
		return -ENOMEM;
	f->ids[f->n++] = id;
	return 0;
}

static void on_change(void *ctx, enum cgwatch_change change, const char *rel)
{
	struct follow *f = ctx;
	int r;

	switch (change) {
	case CGWATCH_CREATED:
		/* Its subdirectories may be there already (mkdir -p): the walk sees them. */
		r = cgroup_walk(f->d->tree.mount, rel, follow_new_dir, f);
		if (r && r != -ENOENT) {
			log_warn("%s%s: cannot read the new cgroup: %s; reading the whole tree",
				 f->d->tree.mount, rel, strerror(-r));
			f->d->resync_needed = true;
		}
		break;
	case CGWATCH_REMOVED:
		forget_cgroup(f->d, rel);
		break;
	case CGWATCH_LOST:
		f->d->resync_needed = true;
		break;
	}
}

/* Work in proportion to what changed: only new cgroups get limits looked up. */
static void tree_follow(struct daemon *d)
{
	struct follow f = { .d = d };
	int n, r;

	n = cgwatch_read(d->watch, on_change, &f);
	if (n < 0) {
		log_warn("cannot read the cgroup tree's changes: %s; reading the whole tree",
			 strerror(-n));
		d->resync_needed = true;
	}
	if (f.n) {
		r = limits_add(d, f.ids, f.n);
		if (r)
			log_warn("limits of %zu new cgroups not all set: %s", f.n, strerror(-r));
	}
	free(f.ids);
	if (d->resync_needed) {
		daemon_resync(d);
	} else if (n > 0) {
		notify_status(tcpbuf_mode_name(loader_mode(d->bpf)), d->limited_cgroups);
		log_state_flush();
	}
}

void daemon_tree_current(struct daemon *d)
{
	if (d->watch_complete)
		tree_follow(d);
	else
		cgroup_tree_scan(&d->tree, watch_dir, d);
}

static int epoll_add(int ep, int fd)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.fd = fd };

	return epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) ? -errno : 0;
}

static bool timer_expired(int fd)
{
	uint64_t ticks;

	return read(fd, &ticks, sizeof(ticks)) == sizeof(ticks);
}

static int event_loop(struct daemon *d)
{
	struct epoll_event events[8];
	struct signalfd_siginfo si;
	sigset_t mask;
	int ep, sfd, poll_fd, sample_fd, watch_fd = -1, enforce_fd, hold_fd, pace_fd;
	int rest_fd, n, i;
	int watchdog_fd = notify_watchdog_timer();
	bool running = true;

	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGHUP);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	poll_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	sample_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	ep = epoll_create1(EPOLL_CLOEXEC);
	if (sfd < 0 || poll_fd < 0 || sample_fd < 0 || ep < 0)
		return -errno;
	/* The watch follows the tree; the poll timer is the safety net. */
	if (d->watch) {
		watch_fd = cgwatch_fd(d->watch);
		if (epoll_add(ep, watch_fd)) {
			log_warn("cannot poll the cgroup tree's watch: %s; new cgroups are seen every %u ms",
				 strerror(errno), d->cfg.poll_interval_ms);
			cgwatch_close(d->watch);
			d->watch = NULL;
			d->watch_complete = false;
			watch_fd = -1;
		}
	}
	arm_timer(poll_fd, d->cfg.poll_interval_ms);
	if (loader_mode(d->bpf) == TCPBUF_MODE_SAMPLED)
		arm_timer(sample_fd, d->cfg.sample_interval_ms);
	epoll_add(ep, sfd);
	epoll_add(ep, poll_fd);
	epoll_add(ep, sample_fd);
	epoll_add(ep, d->ctl_fd);
	if (watchdog_fd >= 0)
		epoll_add(ep, watchdog_fd);
	enforce_fd = enforce_events_fd(d->enforce);
	epoll_add(ep, enforce_fd);
	hold_fd = enforce_hold_fd(d->enforce);
	epoll_add(ep, hold_fd);
	pace_fd = enforce_pace_fd(d->enforce);
	epoll_add(ep, pace_fd);
	rest_fd = enforce_rest_fd(d->enforce);
	epoll_add(ep, rest_fd);

	while (running) {
		n = epoll_wait(ep, events, 8, -1);
		if (n < 0 && errno == EINTR)
			continue;
		for (i = 0; i < n; i++) {
			int fd = events[i].data.fd;

			if (fd == sfd) {
				while (read(sfd, &si, sizeof(si)) == sizeof(si)) {
					if (si.ssi_signo == SIGHUP)
						daemon_reload(d, NULL, 0);
					else
						running = false;
				}
			} else if (fd == poll_fd) {
				if (!timer_expired(poll_fd))
					continue;
				departed_check(d);
				/* Far events do not wake us (enforce.c). */
				enforce_handle_events(d->enforce, &d->tree);
				if (!d->watch_complete || mono_ms() >= d->next_resync_ms)
					daemon_resync(d);
			} else if (fd == sample_fd) {
				if (timer_expired(sample_fd))
					loader_reconcile(d->bpf);
			} else if (fd == watch_fd) {
				tree_follow(d);
			} else if (fd == enforce_fd) {
				enforce_handle_events(d->enforce, &d->tree);
			} else if (fd == hold_fd) {
				enforce_hold_expired(d->enforce, &d->tree);
			} else if (fd == pace_fd) {
				enforce_pace_expired(d->enforce, &d->tree);
			} else if (fd == rest_fd) {
				enforce_rest_expired(d->enforce);
			} else if (fd == watchdog_fd) {
				if (timer_expired(watchdog_fd))
					notify_watchdog();
			} else if (fd == d->ctl_fd) {
				int r = control_serve(d->ctl_fd, commands_handle, d);

				if (r < 0)
					log_warn("control socket: %s", strerror(-r));
			}
		}
	}
	if (watchdog_fd >= 0)
		close(watchdog_fd);
	close(ep);
	close(sample_fd);
	close(poll_fd);
	close(sfd);
	return 0;
}

/* Enforcement shares the loader's pins; it needs the accounting mode. */
static int start_enforcement(struct daemon *d)
{
	struct enforce_opts eo = { .pin_path = daemon_pin_path(d), .cgroup_mount = d->tree.mount,
				   .scope = daemon_scope(d), .mode = loader_mode(d->bpf),
				   .rest = d->cfg.ingress_rest };
	int r = enforce_start(&eo, &d->enforce);

	if (r)
		log_err("cannot start enforcement: %s", strerror(-r));
	return r;
}

static int parse_args(int argc, char **argv, struct daemon *d)
{
	enum { OPT_PIN = 256, OPT_SOCKET, OPT_MODE, OPT_SCOPE, OPT_VERSION };
	static const struct option opts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "foreground", no_argument, NULL, 'f' },
		{ "pin-path", required_argument, NULL, OPT_PIN },
		{ "socket", required_argument, NULL, OPT_SOCKET },
		{ "mode", required_argument, NULL, OPT_MODE },
		{ "scope", required_argument, NULL, OPT_SCOPE },
		{ "verbose", no_argument, NULL, 'v' },
		{ "version", no_argument, NULL, OPT_VERSION },
		{ "help", no_argument, NULL, 'h' },
		{}
	};
	int c;

	while ((c = getopt_long(argc, argv, "c:fvh", opts, NULL)) != -1) {
		switch (c) {
		case 'c':
			d->config_path = optarg;
			d->config_is_default = false;
			break;
		case 'f':
			break;
		case OPT_PIN:
			d->pin_path_arg = optarg;
			break;
		case OPT_SOCKET:
			d->socket_arg = optarg;
			break;
		case OPT_SCOPE:
			d->scope_arg = optarg;
			break;
		case OPT_MODE:
			if (strcmp(optarg, "auto") && strcmp(optarg, "exact") && strcmp(optarg, "sampled")) {
				fprintf(stderr, "tcpbufd: --mode: '%s' is not auto, exact or sampled\n", optarg);
				return 2;
			}
			d->mode_arg = optarg;
			break;
		case 'v':
			log_max_level = LOG_DEBUG;
			break;
		case OPT_VERSION:
			printf("tcpbufd %s\n", TCPBUFD_VERSION);
			return 0;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "tcpbufd: unexpected argument '%s'\n", argv[optind]);
		return 2;
	}
	return -1;
}

int main(int argc, char **argv)
{
	struct daemon d = { .config_path = DEFAULT_CONFIG, .config_is_default = true, .ctl_fd = -1 };
	struct loader_opts lo;
	char err[512];
	sigset_t hup;
	int r;

	/* A reload asked for while the programs load (seconds, on a busy
	 * host) waits for the event loop's signalfd: SIGHUP's default action
	 * would end the daemon. */
	sigemptyset(&hup);
	sigaddset(&hup, SIGHUP);
	sigprocmask(SIG_BLOCK, &hup, NULL);
	r = parse_args(argc, argv, &d);
	if (r >= 0)
		return r;
	if (load_config(&d, &d.cfg, err, sizeof(err))) {
		fprintf(stderr, "tcpbufd: %s\n", err);
		return 1;
	}
	if (log_max_level < LOG_DEBUG)
		log_max_level = d.cfg.log_level;
	if (thresholds_load(d.cfg.state_dir, &d.thresholds, &d.n_thresholds, err, sizeof(err)) ||
	    runtime_limits_load(d.cfg.runtime_dir, &d.runtime, err, sizeof(err))) {
		fprintf(stderr, "tcpbufd: %s\n", err);
		return 1;
	}
	r = cgroup_tree_init(&d.tree);
	if (r) {
		log_err("no cgroup v2 mount found: %s", strerror(-r));
		return 1;
	}
	netns_init(&d.tree, daemon_scope(&d));
	lo = (struct loader_opts){ .pin_path = daemon_pin_path(&d),
				   .mode = d.mode_arg ? d.mode_arg : d.cfg.mode };
	tables_want(d.cfg.max_cgroups);
	r = loader_start(&lo, &d.bpf);
	if (!r)
		r = tables_init(loader_usage_fd(d.bpf), loader_limits_fd(d.bpf), lo.pin_path);
	if (r) {
		log_err("cannot start BPF accounting at %s: %s", lo.pin_path, strerror(-r));
		return 1;
	}
	log_info("%s accounting %s at %s (cgroup v2 at %s)", tcpbuf_mode_name(loader_mode(d.bpf)),
		 loader_adopted(d.bpf) ? "adopted from pins" : "attached", lo.pin_path,
		 d.tree.mount);
	r = cgwatch_open(d.tree.mount, &d.watch);
	if (r)
		log_warn("cannot watch the cgroup tree at %s: %s; new cgroups are seen every %u ms",
			 d.tree.mount, strerror(-r), d.cfg.poll_interval_ms);
	r = start_enforcement(&d);
	if (!r)
		r = daemon_resync(&d);
	if (!r)
		r = bypass_apply(daemon_pin_path(&d), d.tree.mount, daemon_scope(&d), d.cfg.bypass_prot_mem);
	if (!r) {
		r = peer_facts_init(d.tree.mount);
		peer_facts_admin_group(d.cfg.admin_gid);
	}
	if (!r) {
		d.ctl_fd = control_listen(daemon_socket_path(&d), d.cfg.socket_mode, d.cfg.socket_group);
		if (d.ctl_fd < 0) {
			r = d.ctl_fd;
			log_err("%s: cannot listen: %s", daemon_socket_path(&d), strerror(-r));
		}
	}
	if (!r) {
		log_info("ready: %u cgroups limited, control socket %s", d.limited_cgroups,
			 daemon_socket_path(&d));
		notify_ready(tcpbuf_mode_name(loader_mode(d.bpf)), d.limited_cgroups);
		r = event_loop(&d);
		notify_stopping();
	}
	control_close(d.ctl_fd, d.ctl_fd >= 0 ? daemon_socket_path(&d) : NULL);
	/* Before config_free(): the pin path may live in the configuration. */
	if (d.bpf)
		log_info("stopped; programs and maps stay pinned at %s", daemon_pin_path(&d));
	peer_facts_close();
	enforce_close(d.enforce);
	bypass_close();
	loader_close(d.bpf);
	cgwatch_close(d.watch);
	netns_close();
	free(d.departed);
	cgroup_tree_free(&d.tree);
	free(d.thresholds);
	runtime_limits_free(&d.runtime);
	config_free(&d.cfg);
	return r ? 1 : 0;
}
