// SPDX-License-Identifier: GPL-2.0
/*
 * Pin layout under the pin path:
 *   cgroup_usage cgroup_limits sock_charge meta   maps (BTF, named fields)
 *   links/<program>                                 one link per attached program
 *   progs/<program>                                 sampled mode's per-syscall
 *                                                   programs, attached only while
 *                                                   some cgroup has limits (demand.c)
 * The links keep the programs attached while no daemon runs, so counters
 * keep counting across restarts; a restart of the same build adopts them.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "tables.h"
#include "account_exact.skel.h"
#include "account_sampled.skel.h"
#include "reconcile.skel.h"
#include "bpffs.h"
#include "demand.h"
#include "hookfit.h"
#include "loader.h"
#include "tcpbuf_policy.h"
#include "tcpbuf_enforce.h"
#include "netns.h"
#include "log.h"

struct tcpbuf_bpf {
	enum tcpbuf_mode mode;
	bool adopted;
	int usage_fd, limits_fd, meta_fd;
	int reconcile_link_fd;
	int settle_link_fd;
	int sock_count_link_fd;
	/* Exact mode: enforce_ctl, for kept_since_settle; the last settle. */
	struct tcpbuf_enforce_ctl *ctl;
	bool settled;
	__u64 settled_ms;
	/* The last count of socket-storage entries, whether there is one,
	 * and when. */
	long counted;
	bool count_made;
	__u64 counted_ms;
	char pin_path[PATH_MAX];
};

static const char *const exact_links[] = {
	"raise_allocated", "reduce_allocated", "forced_mem_schedule", "destroy_sock",
};
/* send_length/recv_length exist from kernel 6.3 on; without them sampling
 * relies on destroy and the periodic reconcile alone. */
static const char *const sampled_links[] = { "destroy_sock" };
/* Per-syscall samplers: only limits need usage fresher than the periodic
 * reconcile (and status reconciles first), so they run only while some
 * cgroup has limits. */
static const char *const sampled_on_demand[] = { "send_length", "recv_length" };

static bool on_demand(const char *name)
{
	for (size_t i = 0; i < sizeof(sampled_on_demand) / sizeof(*sampled_on_demand); i++)
		if (!strcmp(name, sampled_on_demand[i]))
			return true;
	return false;
}

const char *tcpbuf_mode_name(enum tcpbuf_mode mode)
{
	return mode == TCPBUF_MODE_EXACT ? "exact" : mode == TCPBUF_MODE_SAMPLED ? "sampled" : "none";
}

static bool probing; /* a refused exact load is an answer, not an error to print */

static int libbpf_print_fn(enum libbpf_print_level level, const char *fmt, va_list args)
{
	if (probing && log_max_level < LOG_DEBUG)
		return 0;
	if (level == LIBBPF_DEBUG && log_max_level < LOG_DEBUG)
		return 0;
	if (level != LIBBPF_WARN && log_max_level < LOG_DEBUG)
		return 0;
	return vfprintf(stderr, fmt, args);
}

/* FNV-1a over the embedded objects: a restart adopts pinned programs only
 * when they are byte-for-byte the ones this binary would load. */
static __u64 build_id(void)
{
	const void *(*objs[])(size_t *) = {
		account_exact__elf_bytes, account_sampled__elf_bytes, reconcile__elf_bytes,
	};
	__u64 h = 0xcbf29ce484222325ULL;
	size_t i, j, sz;

	for (i = 0; i < sizeof(objs) / sizeof(objs[0]); i++) {
		const unsigned char *p = objs[i](&sz);

		for (j = 0; j < sz; j++)
			h = (h ^ p[j]) * 0x100000001b3ULL;
	}
	return h;
}

static int obj_get(const char *pin_path, const char *sub, const char *name)
{
	char path[PATH_MAX];
	int fd;

	if (bpffs_path(path, sizeof(path), pin_path, sub, name))
		return -ENAMETOOLONG;
	fd = bpf_obj_get(path);
	return fd < 0 ? -errno : fd;
}

static int links_present(const char *pin_path, const char *const *names, size_t n)
{
	char path[PATH_MAX];
	size_t i;

	for (i = 0; i < n; i++) {
		if (bpffs_path(path, sizeof(path), pin_path, "links/", names[i]) || access(path, F_OK))
			return 0;
	}
	return 1;
}

/* Adopt what a previous run of this very build left pinned. Returns 1 when
 * adopted, 0 when there is nothing (usable) to adopt, negative on error. */
static int try_adopt(struct tcpbuf_bpf *bpf, enum tcpbuf_mode wanted)
{
	struct tcpbuf_meta m = {};
	__u32 zero = 0;
	int fd;

	fd = obj_get(bpf->pin_path, "", "meta");
	if (fd < 0)
		return 0;
	if (bpf_map_lookup_elem(fd, &zero, &m) || m.layout_version != TCPBUF_LAYOUT_VERSION ||
	    m.build_id != build_id()) {
		log_info("%s: pinned objects are from another build (layout %u); replacing them",
			 bpf->pin_path, m.layout_version);
		close(fd);
		return 0;
	}
	if ((wanted && m.mode != wanted) ||
	    (m.mode == TCPBUF_MODE_EXACT &&
	     !links_present(bpf->pin_path, exact_links, sizeof(exact_links) / sizeof(*exact_links))) ||
	    (m.mode == TCPBUF_MODE_SAMPLED &&
	     !links_present(bpf->pin_path, sampled_links, sizeof(sampled_links) / sizeof(*sampled_links)))) {
		log_info("%s: pinned programs run %s mode or are incomplete; replacing them",
			 bpf->pin_path, tcpbuf_mode_name(m.mode));
		close(fd);
		return 0;
	}
	bpf->meta_fd = fd;
	bpf->usage_fd = obj_get(bpf->pin_path, "", "cgroup_usage");
	bpf->limits_fd = obj_get(bpf->pin_path, "", "cgroup_limits");
	bpf->reconcile_link_fd = obj_get(bpf->pin_path, "links/", "reconcile_tcp");
	bpf->settle_link_fd = obj_get(bpf->pin_path, "links/", "settle_tcp");
	bpf->sock_count_link_fd = obj_get(bpf->pin_path, "links/", "count_sock_charges");
	if (bpf->usage_fd < 0 || bpf->limits_fd < 0 || bpf->reconcile_link_fd < 0 ||
	    bpf->settle_link_fd < 0 || bpf->sock_count_link_fd < 0) {
		log_info("%s: pinned maps incomplete; replacing them", bpf->pin_path);
		return 0;
	}
	bpf->mode = m.mode;
	bpf->adopted = true;
	return 1;
}

static int pin_link(struct tcpbuf_bpf *bpf, struct bpf_link *link, const char *name)
{
	char path[PATH_MAX];
	int err;

	err = bpffs_path(path, sizeof(path), bpf->pin_path, "links/", name);
	if (!err)
		err = bpf_link__pin(link, path);
	if (err)
		log_err("cannot pin link %s: %s", path, strerror(-err));
	return err;
}

/* Attach every program of @obj and pin its link under links/<program name>;
 * pin those that run on demand unattached. */
static int attach_and_pin(struct tcpbuf_bpf *bpf, struct bpf_object *obj)
{
	struct bpf_program *prog;
	int err;

	bpf_object__for_each_program(prog, obj) {
		struct bpf_link *link;

		if (!bpf_program__autoload(prog))
			continue;
		if (on_demand(bpf_program__name(prog))) {
			err = demand_pin(bpf->pin_path, prog, bpf_program__name(prog));
			if (err)
				return err;
			continue;
		}
		link = bpf_program__attach(prog);
		if (!link) {
			err = -errno;
			log_err("cannot attach %s: %s", bpf_program__name(prog), strerror(-err));
			return err;
		}
		err = pin_link(bpf, link, bpf_program__name(prog));
		if (!err && !strcmp(bpf_program__name(prog), "reconcile_tcp"))
			bpf->reconcile_link_fd = dup(bpf_link__fd(link));
		if (!err && !strcmp(bpf_program__name(prog), "settle_tcp"))
			bpf->settle_link_fd = dup(bpf_link__fd(link));
		if (!err && !strcmp(bpf_program__name(prog), "count_sock_charges"))
			bpf->sock_count_link_fd = dup(bpf_link__fd(link));
		/* The pin holds the attachment; our reference is not needed. */
		bpf_link__destroy(link);
		if (err)
			return err;
	}
	return 0;
}

static struct bpf_object_open_opts open_opts(struct tcpbuf_bpf *bpf)
{
	LIBBPF_OPTS(bpf_object_open_opts, o, .pin_root_path = bpf->pin_path);
	return o;
}

/* An iterator gives a socket its per-segment callbacks back through
 * bpf_setsockopt(TCP_BPF_SOCK_OPS_CB_FLAGS) from 6.11 on; before, a cgroup
 * leaving dormancy could not arm the sockets it has. Both modes: sampled
 * mode's samplers follow a dormant cgroup's sockets (TCPBUF_SE_FOLLOWED). */
unsigned loader_guard_growth(enum tcpbuf_mode mode)
{
	struct utsname u;
	int major = 0, minor = 0;

	(void)mode;
	if (uname(&u) || sscanf(u.release, "%d.%d", &major, &minor) != 2)
		return 0;
	if (getenv("TCPBUF_NO_DORMANT"))
		return 0;
	return major > 6 || (major == 6 && minor >= 11) ? TCPBUF_GUARD_GROWTH_PAGES : 0;
}

long loader_sysctl_long(const char *path, int field, long fallback)
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

/* A followed socket's largest sk_sndbuf in pages (sampled mode; 0 in exact
 * mode): tcp_wmem[2], or tcpbuf_writer_ceiling() for a writer that set
 * SO_SNDBUF (@wide). */
unsigned loader_guard_writer_pages(enum tcpbuf_mode mode, bool wide)
{
	long tcp_wmem2 = loader_sysctl_long("/proc/sys/net/ipv4/tcp_wmem", 2, 4 << 20);
	long wmem_max = loader_sysctl_long("/proc/sys/net/core/wmem_max", 0, 212992);

	if (mode != TCPBUF_MODE_SAMPLED)
		return 0;
	return (unsigned)((wide ? tcpbuf_writer_ceiling(tcp_wmem2, wmem_max) : tcp_wmem2) >>
			  TCPBUF_PAGE_SHIFT);
}

/* The sk_rcvbuf a bounded cgroup's sockets may have (sampled mode; 0 in
 * exact mode, and with TCPBUF_NO_BOUNDED): tcpbuf_bounded_rcvbuf(). */
unsigned loader_bounded_rcvbuf(enum tcpbuf_mode mode)
{
	long tcp_rmem1 = loader_sysctl_long("/proc/sys/net/ipv4/tcp_rmem", 1, 131072);
	long tcp_rmem2 = loader_sysctl_long("/proc/sys/net/ipv4/tcp_rmem", 2, 6 << 20);
	long rmem_max = loader_sysctl_long("/proc/sys/net/core/rmem_max", 0, 212992);

	if (mode != TCPBUF_MODE_SAMPLED || getenv("TCPBUF_NO_BOUNDED"))
		return 0;
	return (unsigned)tcpbuf_bounded_rcvbuf(tcp_rmem1, tcp_rmem2, rmem_max);
}

static int load_exact(struct tcpbuf_bpf *bpf)
{
	struct bpf_object_open_opts o = open_opts(bpf);
	struct account_exact *skel;
	int err;

	skel = account_exact__open_opts(&o);
	if (!skel)
		return -errno;
	skel->rodata->near_guard_growth = loader_guard_growth(TCPBUF_MODE_EXACT);
	err = tables_fit(skel->obj, bpf->pin_path);
	if (!err)
		err = account_exact__load(skel);
	if (!err)
		err = attach_and_pin(bpf, skel->obj);
	if (err) {
		/* Half attached would count twice beside the sampled fallback. */
		struct bpf_program *prog;
		char path[PATH_MAX];

		bpf_object__for_each_program(prog, skel->obj)
			if (!bpffs_path(path, sizeof(path), bpf->pin_path, "links/",
					bpf_program__name(prog)))
				unlink(path);
	}
	account_exact__destroy(skel);
	return err;
}

static void disable_missing_tracepoints(struct bpf_object *obj)
{
	struct bpf_program *prog;

	bpf_object__for_each_program(prog, obj) {
		const char *tp = strchr(bpf_program__section_name(prog), '/');

		if (bpf_program__type(prog) != BPF_PROG_TYPE_TRACING || !tp)
			continue;
		if (libbpf_find_vmlinux_btf_id(tp + 1, BPF_TRACE_RAW_TP) < 0) {
			log_info("tracepoint %s not in this kernel; sampling without it", tp + 1);
			bpf_program__set_autoload(prog, false);
		}
	}
}

static int load_sampled(struct tcpbuf_bpf *bpf)
{
	struct bpf_object_open_opts o = open_opts(bpf);
	struct account_sampled *skel;
	int err;

	skel = account_sampled__open_opts(&o);
	if (!skel)
		return -errno;
	skel->rodata->near_guard_growth = loader_guard_growth(TCPBUF_MODE_SAMPLED);
	skel->rodata->near_guard_followed = 1;
	skel->rodata->near_guard_writer_pages = loader_guard_writer_pages(TCPBUF_MODE_SAMPLED, false);
	skel->rodata->near_guard_wide_writer_pages =
		loader_guard_writer_pages(TCPBUF_MODE_SAMPLED, true);
	skel->rodata->near_guard_wmem_max =
		loader_sysctl_long("/proc/sys/net/core/wmem_max", 0, 212992);
	disable_missing_tracepoints(skel->obj);
	err = tables_fit(skel->obj, bpf->pin_path);
	if (!err)
		err = account_sampled__load(skel);
	if (!err)
		err = attach_and_pin(bpf, skel->obj);
	account_sampled__destroy(skel);
	if (err)
		log_err("cannot load sampled accounting: %s", strerror(-err));
	return err;
}

/* The reconcile object is loaded first, so it creates the pinned maps the
 * accounting objects then reuse; it also hands us the map fds. */
static int load_reconcile(struct tcpbuf_bpf *bpf)
{
	struct bpf_object_open_opts o = open_opts(bpf);
	struct reconcile *skel;
	int err;

	skel = reconcile__open_opts(&o);
	if (!skel)
		return -errno;
	err = tables_fit(skel->obj, bpf->pin_path);
	if (!err)
		err = reconcile__load(skel);
	if (err) {
		log_err("cannot load reconcile program: %s", strerror(-err));
		goto out;
	}
	bpf->usage_fd = dup(bpf_map__fd(skel->maps.cgroup_usage));
	bpf->limits_fd = dup(bpf_map__fd(skel->maps.cgroup_limits));
	bpf->meta_fd = dup(bpf_map__fd(skel->maps.meta));
	err = attach_and_pin(bpf, skel->obj);
out:
	reconcile__destroy(skel);
	return err;
}

static enum tcpbuf_mode mode_parse(const char *s)
{
	if (!s || !strcmp(s, "auto"))
		return 0;
	if (!strcmp(s, "exact"))
		return TCPBUF_MODE_EXACT;
	if (!strcmp(s, "sampled"))
		return TCPBUF_MODE_SAMPLED;
	return -1;
}

static int fresh_start(struct tcpbuf_bpf *bpf, enum tcpbuf_mode wanted)
{
	struct tcpbuf_meta m = { .layout_version = TCPBUF_LAYOUT_VERSION, .build_id = build_id() };
	char links[PATH_MAX], why[256];
	__u32 zero = 0;
	int err;

	bpffs_remove_tree(bpf->pin_path);
	err = bpffs_ensure(bpf->pin_path);
	if (!err && bpffs_path(links, sizeof(links), bpf->pin_path, "", "links") == 0 &&
	    mkdir(links, 0700) && errno != EEXIST)
		err = -errno;
	if (err) {
		log_err("%s: cannot prepare pin path: %s", bpf->pin_path, strerror(-err));
		return err;
	}
	err = load_reconcile(bpf);
	if (err)
		return err;

	/* The probe is the real load: a second load just to ask would double
	 * the start-up time, which is seconds on slow machines. A refusal
	 * leaves nothing behind (the maps are the reconcile object's). */
	if (wanted != TCPBUF_MODE_SAMPLED && !hookfit_kernel(why, sizeof(why))) {
		/* Would load, and count wrong: never try it. */
		if (wanted == TCPBUF_MODE_EXACT) {
			log_err("exact mode requested, but its hooks do not fit this kernel: %s", why);
			return -EOPNOTSUPP;
		}
		log_warn("auto: sampled accounting, since exact mode's hooks do not fit this kernel: %s",
			 why);
	} else if (wanted != TCPBUF_MODE_SAMPLED) {
		probing = true;
		err = load_exact(bpf);
		probing = false;
		if (!err) {
			bpf->mode = TCPBUF_MODE_EXACT;
		} else if (wanted == TCPBUF_MODE_EXACT) {
			if (err == -EPERM || err == -EACCES || err == -EOPNOTSUPP)
				log_err("exact mode requested, but this kernel refuses fentry/fexit programs (%s)",
					strerror(-err));
			else
				log_err("cannot attach exact accounting: %s", strerror(-err));
			return -EOPNOTSUPP;
		} else if (err == -EPERM || err == -EACCES || err == -EOPNOTSUPP) {
			log_info("this kernel refuses fentry/fexit programs (%s); falling back to sampled accounting",
				 strerror(-err));
		} else {
			/* A verifier or attach change on a new kernel: the best mode that works. */
			log_warn("auto: sampled accounting, since exact accounting does not load on this kernel: %s",
				 strerror(-err));
		}
	}
	if (!bpf->mode) {
		err = load_sampled(bpf);
		if (err)
			return err;
		bpf->mode = TCPBUF_MODE_SAMPLED;
	}
	m.mode = bpf->mode;
	if (bpf_map_update_elem(bpf->meta_fd, &zero, &m, BPF_ANY))
		return -errno;
	/* Sockets that existed before the hooks were attached: adopt their footprint. */
	return loader_reconcile(bpf);
}

/* A handle with nothing open yet. */
static struct tcpbuf_bpf *loader_new(const char *pin_path)
{
	struct tcpbuf_bpf *bpf = calloc(1, sizeof(*bpf));

	if (!bpf)
		return NULL;
	bpf->usage_fd = bpf->limits_fd = bpf->meta_fd = -1;
	bpf->reconcile_link_fd = bpf->settle_link_fd = bpf->sock_count_link_fd = -1;
	snprintf(bpf->pin_path, sizeof(bpf->pin_path), "%s", pin_path);
	return bpf;
}

/* enforce_ctl, pinned by the programs that share it; without it every
 * settle walks. */
static void ctl_map(struct tcpbuf_bpf *bpf)
{
	int fd = obj_get(bpf->pin_path, "", "enforce_ctl");
	void *p;

	if (fd < 0)
		return;
	p = mmap(NULL, sizeof(*bpf->ctl), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (p != MAP_FAILED)
		bpf->ctl = p;
}

int loader_start(const struct loader_opts *opts, struct tcpbuf_bpf **out)
{
	struct tcpbuf_bpf *bpf;
	int wanted = mode_parse(opts->mode);
	int err;

	if (wanted < 0)
		return -EINVAL;
	bpf = loader_new(opts->pin_path);
	if (!bpf)
		return -ENOMEM;
	libbpf_set_print(libbpf_print_fn);

	err = try_adopt(bpf, wanted);
	if (err == 0) {
		loader_close(bpf);
		bpf = loader_new(opts->pin_path);
		if (!bpf)
			return -ENOMEM;
		err = fresh_start(bpf, wanted);
	} else if (err > 0) {
		err = 0;
	}
	if (err) {
		loader_close(bpf);
		return err;
	}
	if (bpf->mode == TCPBUF_MODE_EXACT)
		ctl_map(bpf);
	*out = bpf;
	return 0;
}

int loader_reconcile(struct tcpbuf_bpf *bpf)
{
	return netns_iter_each(bpf->reconcile_link_fd, netns_iter_drain, NULL);
}

static __u64 mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__u64)ts.tv_sec * 1000 + (__u64)ts.tv_nsec / 1000000;
}

int loader_settle(struct tcpbuf_bpf *bpf, bool admin)
{
	__u64 now = mono_ms();
	bool kept;
	int err;

	if (bpf->mode == TCPBUF_MODE_SAMPLED)
		return loader_reconcile(bpf);
	kept = !bpf->ctl || __atomic_load_n(&bpf->ctl->kept_since_settle, __ATOMIC_RELAXED);
	if (!tcpbuf_settle_due(kept, bpf->settled, admin, now, bpf->settled_ms))
		return 0;
	/* Cleared before the walk: a socket that keeps pages behind it
	 * marks it again. */
	if (bpf->ctl)
		__atomic_store_n(&bpf->ctl->kept_since_settle, 0, __ATOMIC_SEQ_CST);
	err = netns_iter_each(bpf->settle_link_fd, netns_iter_drain, NULL);
	if (err && bpf->ctl)
		__atomic_store_n(&bpf->ctl->kept_since_settle, 1, __ATOMIC_RELAXED);
	if (!err) {
		bpf->settled = true;
		bpf->settled_ms = now;
	}
	return err;
}

/* One namespace's count, added to *@arg. */
static int count_add(int fd, void *arg)
{
	__u64 count;
	ssize_t n = read(fd, &count, sizeof(count));

	if (n < 0)
		return -errno;
	if (n != sizeof(count))
		return -EIO;
	*(__u64 *)arg += count;
	return 0;
}

long loader_count_sock_charges(struct tcpbuf_bpf *bpf, bool admin)
{
	__u64 total = 0, now = mono_ms();
	int err;

	/* A walk of every socket too: a tenant's at most once a second. */
	if (!tcpbuf_settle_due(true, bpf->count_made, admin, now, bpf->counted_ms))
		return bpf->counted;
	err = netns_iter_each(bpf->sock_count_link_fd, count_add, &total);
	if (err)
		return err;
	bpf->counted = (long)total;
	bpf->count_made = true;
	bpf->counted_ms = now;
	return bpf->counted;
}

void loader_close(struct tcpbuf_bpf *bpf)
{
	if (!bpf)
		return;
	if (bpf->usage_fd >= 0)
		close(bpf->usage_fd);
	if (bpf->limits_fd >= 0)
		close(bpf->limits_fd);
	if (bpf->meta_fd >= 0)
		close(bpf->meta_fd);
	if (bpf->reconcile_link_fd >= 0)
		close(bpf->reconcile_link_fd);
	if (bpf->settle_link_fd >= 0)
		close(bpf->settle_link_fd);
	if (bpf->sock_count_link_fd >= 0)
		close(bpf->sock_count_link_fd);
	if (bpf->ctl)
		munmap(bpf->ctl, sizeof(*bpf->ctl));
	free(bpf);
}

enum tcpbuf_mode loader_mode(const struct tcpbuf_bpf *bpf) { return bpf->mode; }
bool loader_adopted(const struct tcpbuf_bpf *bpf) { return bpf->adopted; }
int loader_usage_fd(const struct tcpbuf_bpf *bpf) { return bpf->usage_fd; }
int loader_limits_fd(const struct tcpbuf_bpf *bpf) { return bpf->limits_fd; }
