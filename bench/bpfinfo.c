// SPDX-License-Identifier: GPL-2.0
/*
 * bpfinfo: what the benchmark needs to know about the programs tcpbufd
 * attached, read from its pinned links.
 *
 *   bpfinfo progs PINDIR          one line per pinned link under PINDIR/links:
 *                                 "LINK PROG_ID PROG_NAME KIND RUN_CNT RUN_TIME_NS TAG",
 *                                 KIND iter, tp_btf, fentry, fexit or the program
 *                                 type (sock_ops, cgroup_skb, ...)
 *                                 (counters move only while kernel.bpf_stats_enabled=1)
 *   bpfinfo ids ID...             the same line (LINK is "-") for programs by id
 *   bpfinfo hold OBJ              load and attach every program of OBJ (nop.bpf.o),
 *                                 print "ready ID...", keep them until SIGTERM/SIGINT
 *   bpfinfo alive ID...           prints the program ids that still exist;
 *                                 exit 0 when none does, 1 otherwise
 *   ... --netns SCOPE             (last, with sweep or sweep-prog) each run also
 *                                 in every netns where processes of the cgroup
 *                                 SCOPE (mount-relative) run, as the daemon does
 *   bpfinfo sweep LINK [-n N]     times N runs of a pinned iterator link (create
 *                                 the iterator, read it to the end, as the daemon
 *                                 does): "sweep runs_ms=A,B,... n=N median_ms=...
 *                                 min_ms=... max_ms=...", runs in the order they ran
 *   bpfinfo sweep-prog OBJ PROG PINDIR [-n N] [--target CGROUP_DIR]
 *                                 the same for iterator program PROG of OBJ, for
 *                                 iterators the daemon keeps unpinned (enforce_sweep):
 *                                 loads PROG alone, on the maps pinned in PINDIR,
 *                                 with the settings (.rodata) of the daemon's own
 *                                 PROG on those maps; --target
 *                                 sweeps as after a state change of that one cgroup
 *   bpfinfo verify OBJ [PROG] [NAME=VALUE...]
 *                                 loads each program of OBJ (or PROG) alone, on maps
 *                                 of its own, as the object's defaults set them but
 *                                 for the .rodata integers NAME (accounting_mode=1:
 *                                 exact mode, as the daemon loads it), and prints the
 *                                 verifier's statistics ("processed N insns
 *                                 (limit 1000000) ...") and the load's time per program,
 *                                 or "refused: ERROR"; exit 1 if any was refused
 */
#include "common.h"
#include <dirent.h>
#include <linux/bpf.h>
#include <signal.h>
#include <sys/stat.h>
#include <bpf/btf.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <stdbool.h>
#include "netns.h"
#include "privilege.h"
#include "rodata.h"

static const char *prog_type_name(__u32 t)
{
	switch (t) {
	case BPF_PROG_TYPE_TRACING: return "tracing";
	case BPF_PROG_TYPE_SOCK_OPS: return "sock_ops";
	case BPF_PROG_TYPE_CGROUP_SKB: return "cgroup_skb";
	case BPF_PROG_TYPE_CGROUP_SOCK: return "cgroup_sock";
	case BPF_PROG_TYPE_CGROUP_SOCKOPT: return "cgroup_sockopt";
	case BPF_PROG_TYPE_RAW_TRACEPOINT: return "raw_tp";
	case BPF_PROG_TYPE_TRACEPOINT: return "tracepoint";
	case BPF_PROG_TYPE_KPROBE: return "kprobe";
	case BPF_PROG_TYPE_LSM: return "lsm";
	case BPF_PROG_TYPE_STRUCT_OPS: return "struct_ops";
	default: return "other";
	}
}

static const char *kind(const struct bpf_link_info *li, const struct bpf_prog_info *pi)
{
	if (li->type == BPF_LINK_TYPE_ITER)
		return "iter";
	if (li->type == BPF_LINK_TYPE_TRACING) {
		switch (li->tracing.attach_type) {
		case BPF_TRACE_RAW_TP: return "tp_btf";
		case BPF_TRACE_FENTRY: return "fentry";
		case BPF_TRACE_FEXIT: return "fexit";
		default: break;
		}
	}
	return prog_type_name(pi->type);
}

static int print_prog(const char *link, __u32 id, const struct bpf_link_info *li);

static int progs(const char *pindir)
{
	char dir[4096], path[8192];
	struct dirent *de;
	DIR *d;

	snprintf(dir, sizeof(dir), "%s/links", pindir);
	d = opendir(dir);
	if (!d)
		die("%s", dir);
	while ((de = readdir(d))) {
		struct bpf_link_info li = {};
		__u32 len;
		int fd;

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		fd = bpf_obj_get(path);
		len = sizeof(li);
		if (fd < 0 || bpf_obj_get_info_by_fd(fd, &li, &len))
			die("%s", path);
		close(fd);
		print_prog(de->d_name, li.prog_id, &li);
	}
	closedir(d);
	return 0;
}

static int print_prog(const char *link, __u32 id, const struct bpf_link_info *li)
{
	struct bpf_prog_info pi = {};
	__u32 len = sizeof(pi);
	int pfd = bpf_prog_get_fd_by_id(id);

	if (pfd < 0 || bpf_obj_get_info_by_fd(pfd, &pi, &len))
		die("program %u", id);
	close(pfd);
	printf("%s %u %s %s %llu %llu ", link, id, pi.name,
	       li ? kind(li, &pi) : prog_type_name(pi.type), (unsigned long long)pi.run_cnt,
	       (unsigned long long)pi.run_time_ns);
	/* the tag names the program in perf's symbols: bpf_prog_<tag>_<name> */
	for (size_t i = 0; i < sizeof(pi.tag); i++)
		printf("%02x", pi.tag[i]);
	printf("\n");
	return 0;
}

static int ids(int n, char **argv)
{
	int i;

	for (i = 0; i < n; i++)
		print_prog("-", strtoul(argv[i], NULL, 10), NULL);
	return 0;
}

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static int hold(const char *path)
{
	struct bpf_object *obj = bpf_object__open_file(path, NULL);
	struct bpf_program *prog;

	if (!obj || bpf_object__load(obj))
		die("load %s", path);
	signal(SIGTERM, on_signal);
	signal(SIGINT, on_signal);
	printf("ready");
	bpf_object__for_each_program(prog, obj) {
		struct bpf_prog_info pi = {};
		__u32 len = sizeof(pi);

		if (!bpf_program__attach(prog))
			die("attach %s", bpf_program__name(prog));
		bpf_obj_get_info_by_fd(bpf_program__fd(prog), &pi, &len);
		printf(" %u", pi.id);
	}
	printf("\n");
	fflush(stdout);
	while (!stop)
		pause();
	bpf_object__close(obj);	/* detaches: the links die with their last fd */
	return 0;
}

static int alive(int n, char **ids)
{
	int i, found = 0;

	for (i = 0; i < n; i++) {
		int fd = bpf_prog_get_fd_by_id(strtoul(ids[i], NULL, 10));

		if (fd >= 0) {
			printf("%s\n", ids[i]);
			close(fd);
			found = 1;
		}
	}
	return found;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* --netns SCOPE: every pass also in each netns where processes of SCOPE
 * run, as the daemon makes it (src/netns.c). */
static bool netns_walk;

/* Run an iterator once to its end. */
static void iter_drain(int lfd, const char *link)
{
	int fd, err;

	if (netns_walk) {
		err = netns_iter_each(lfd, netns_iter_drain, NULL);
		if (err)
			die("iterators of %s: %s", link, strerror(-err));
		return;
	}
	fd = bpf_iter_create(lfd);
	if (fd < 0)
		die("iterator of %s", link);
	if (netns_iter_drain(fd, NULL))
		die("read iterator of %s", link);
	close(fd);
}

static int sweep_fd(int lfd, const char *link, int n)
{
	double *ms = calloc(n, sizeof(*ms));
	int i;

	for (i = 0; i < n; i++) {
		double t0 = mono_sec();

		iter_drain(lfd, link);
		ms[i] = (mono_sec() - t0) * 1e3;
	}
	/* In the order they ran: a first sweep that does the work the
	 * others find done stands out. */
	printf("sweep runs_ms=");
	for (i = 0; i < n; i++)
		printf("%s%.3f", i ? "," : "", ms[i]);
	qsort(ms, n, sizeof(*ms), cmp_double);
	printf(" n=%d median_ms=%.3f min_ms=%.3f max_ms=%.3f\n", n,
	       n % 2 ? ms[n / 2] : (ms[n / 2 - 1] + ms[n / 2]) / 2, ms[0], ms[n - 1]);
	return 0;
}

static int sweep(const char *link, int n)
{
	int lfd = bpf_obj_get(link);

	if (lfd < 0)
		die("%s", link);
	return sweep_fd(lfd, link, n);
}

/* Every map of the object must already be pinned in @pindir: we reuse the
 * daemon's maps and never create a pin of our own there. */
/* Set the .bss variable @var of @obj (not loaded yet) to @val. */
static void bss_set_u32(struct bpf_object *obj, const char *var, __u32 val)
{
	struct btf *btf = bpf_object__btf(obj);
	const struct btf_var_secinfo *vs;
	const struct btf_type *sec;
	struct bpf_map *bss;
	const void *cur;
	size_t sz;
	char *data;
	int id;

	bss = bpf_object__find_map_by_name(obj, ".bss");
	id = btf ? btf__find_by_name_kind(btf, ".bss", BTF_KIND_DATASEC) : -1;
	if (!bss || id < 0 || !(cur = bpf_map__initial_value(bss, &sz)) || !(data = malloc(sz)))
		die("no .bss to set %s in", var);
	memcpy(data, cur, sz);
	sec = btf__type_by_id(btf, id);
	vs = btf_var_secinfos(sec);
	for (int i = 0; i < btf_vlen(sec); i++, vs++) {
		if (strcmp(btf__name_by_offset(btf, btf__type_by_id(btf, vs->type)->name_off), var))
			continue;
		memcpy(data + vs->offset, &val, sizeof(val));
		if (bpf_map__set_initial_value(bss, data, sz))
			die("cannot set %s", var);
		free(data);
		return;
	}
	die("no variable %s in .bss", var);
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t a = strlen(s), b = strlen(suffix);

	return a >= b && !strcmp(s + a - b, suffix);
}

/* The .rodata of the loaded program @name that uses map @map_id; 0 or -1. */
static int daemon_rodata(const char *name, __u32 map_id, void *val, __u32 size)
{
	__u32 id = 0;

	while (!bpf_prog_get_next_id(id, &id)) {
		__u32 maps[64], n, i, len;
		struct bpf_prog_info pi = {};
		int fd = bpf_prog_get_fd_by_id(id);
		bool ours = false;

		if (fd < 0)
			continue;
		len = sizeof(pi);
		pi.nr_map_ids = 64;
		pi.map_ids = (__u64)(unsigned long)maps;
		if (bpf_obj_get_info_by_fd(fd, &pi, &len) || strcmp(pi.name, name)) {
			close(fd);
			continue;
		}
		close(fd);
		n = pi.nr_map_ids < 64 ? pi.nr_map_ids : 64;
		for (i = 0; i < n; i++)
			ours |= maps[i] == map_id;
		for (i = 0; ours && i < n; i++) {
			struct bpf_map_info mi = {};
			int mfd = bpf_map_get_fd_by_id(maps[i]), r;
			__u32 zero = 0;

			if (mfd < 0)
				continue;
			len = sizeof(mi);
			r = bpf_obj_get_info_by_fd(mfd, &mi, &len);
			if (!r && ends_with(mi.name, ".rodata") && mi.value_size == size)
				r = bpf_map_lookup_elem(mfd, &zero, val);
			else
				r = 1;
			close(mfd);
			if (!r)
				return 0;
		}
	}
	return -1;
}

/*
 * The daemon's settings for @obj (its .rodata: the buffer ceilings and the
 * most one socket holds, from the host's sysctls), taken from its own
 * program @name on the same pinned maps: with the object's defaults the
 * sweep would size sockets to caps the daemon never sets (here
 * sndbuf_ceiling 8 MiB against 4, sock_bound_pages 2,624 against 10,304).
 */
static void rodata_from_daemon(struct bpf_object *obj, const char *name, const char *pindir)
{
	struct bpf_map_info mi = {};
	struct bpf_map *map;
	char pin[4096];
	__u32 len = sizeof(mi);
	size_t size;
	void *val;
	int fd;

	snprintf(pin, sizeof(pin), "%s/sock_charge", pindir);
	fd = bpf_obj_get(pin);
	if (fd < 0 || bpf_obj_get_info_by_fd(fd, &mi, &len))
		die("%s", pin);
	close(fd);
	bpf_object__for_each_map(map, obj) {
		if (!ends_with(bpf_map__name(map), ".rodata"))
			continue;
		bpf_map__initial_value(map, &size);
		val = calloc(1, size);
		if (!val || daemon_rodata(name, mi.id, val, size))
			die("no loaded %s on %s with a .rodata of %zu bytes: is the daemon running?",
			    name, pindir, size);
		if (bpf_map__set_initial_value(map, val, size))
			die("cannot set %s", bpf_map__name(map));
		fprintf(stderr, "bpfinfo: %s runs with the daemon's %s (%zu bytes)\n", name,
			bpf_map__name(map), size);
		free(val);
		return;
	}
}

static int sweep_prog(const char *path, const char *name, const char *pindir, int n,
		      const char *target)
{
	LIBBPF_OPTS(bpf_object_open_opts, opts, .pin_root_path = pindir);
	struct bpf_object *obj = bpf_object__open_file(path, &opts);
	struct bpf_program *prog, *want = NULL, *collect = NULL;
	struct bpf_link *link;
	struct bpf_map *map;
	char pin[4096];

	if (!obj)
		die("open %s", path);
	bpf_object__for_each_map(map, obj) {
		if (!bpf_map__pin_path(map))
			continue;
		snprintf(pin, sizeof(pin), "%s/%s", pindir, bpf_map__name(map));
		if (access(pin, F_OK))
			die("%s is not pinned: refusing to create it", pin);
	}
	bpf_object__for_each_program(prog, obj) {
		if (!strcmp(bpf_program__name(prog), name))
			want = prog;
		else if (target && !strcmp(bpf_program__name(prog), "target_collect"))
			collect = prog;	/* targets by cgroup address, as the daemon */
		else
			bpf_program__set_autoload(prog, false);
	}
	if (!want)
		die("no program %s in %s", name, path);
	rodata_from_daemon(obj, name, pindir);
	if (target) {
		bss_set_u32(obj, "sweep_targeted", 1);
		if (collect)
			bss_set_u32(obj, "sweep_by_pointer", 1);
	}
	if (bpf_object__load(obj))
		die("load %s from %s", name, path);
	if (target && collect) {
		DECLARE_LIBBPF_OPTS(bpf_iter_attach_opts, io);
		union bpf_iter_link_info info = {};
		int fd = open(target, O_RDONLY | O_DIRECTORY);

		if (fd < 0)
			die("%s", target);
		info.cgroup.cgroup_fd = fd;
		info.cgroup.order = BPF_CGROUP_ITER_DESCENDANTS_PRE;
		io.link_info = &info;
		io.link_info_len = sizeof(info);
		link = bpf_program__attach_iter(collect, &io);
		if (!link)
			die("attach target_collect");
		iter_drain(bpf_link__fd(link), "target_collect");
		bpf_link__destroy(link);
		close(fd);
	} else if (target) {
		struct stat st;
		__u64 id;
		__u8 one = 1;

		if (stat(target, &st))
			die("%s", target);
		id = st.st_ino;	/* a cgroup's id is its directory's inode number */
		if (bpf_map_update_elem(bpf_object__find_map_fd_by_name(obj, "sweep_targets"),
					&id, &one, BPF_ANY))
			die("cannot add %s to sweep_targets", target);
	}
	link = bpf_program__attach_iter(want, NULL);
	if (!link)
		die("attach %s", name);
	sweep_fd(bpf_link__fd(link), name, n);
	bpf_link__destroy(link);
	bpf_object__close(obj);
	return 0;
}

/* The verifier's statistics line of the program @name of the object at
 * @path, loaded alone on maps of its own, and how long the load took. */
static int verify_one(const char *path, const char *name, int nset, char **settings)
{
	static char log[1 << 16];
	struct bpf_object *obj = bpf_object__open_file(path, NULL);
	struct bpf_program *prog;
	struct bpf_map *map;
	const char *s, *stack;
	double start;
	int err;

	if (!obj)
		die("open %s", path);
	for (int i = 0; i < nset; i++)
		rodata_set(obj, settings[i]);
	bpf_object__for_each_map(map, obj)
		bpf_map__set_pin_path(map, NULL);	/* never touch pinned maps */
	bpf_object__for_each_program(prog, obj)
		bpf_program__set_autoload(prog, !strcmp(bpf_program__name(prog), name));
	prog = bpf_object__find_program_by_name(obj, name);
	if (!prog)
		die("%s: no program %s", path, name);
	log[0] = 0;
	bpf_program__set_log_level(prog, 4);	/* statistics only */
	bpf_program__set_log_buf(prog, log, sizeof(log));
	start = mono_sec();
	err = bpf_object__load(obj);
	s = strstr(log, "processed");
	stack = strstr(log, "stack depth ");
	if (stack)
		stack += strlen("stack depth ");
	if (err) {
		size_t len = strlen(log);
		const char *tail = len > 600 ? log + len - 600 : log;

		/* The verifier's last words: its reason (a statistics-only log
		 * still holds it). */
		fprintf(stderr, "%s: verifier: %s\n", name, tail);
		printf("%s: refused: %s\n", name, strerror(-err));
	}
	else
		printf("%s: %.*s load_ms %.0f stack_depth %.*s\n", name,
		       s ? (int)strcspn(s, "\n") : 15, s ? s : "(no statistics)",
		       (mono_sec() - start) * 1e3, stack ? (int)strcspn(stack, "\n") : 1,
		       stack ? stack : "?");
	bpf_object__close(obj);
	return err ? 1 : 0;
}

/* verify_one() for @only, or for every program of the object. */
static int verify(const char *path, const char *only, int nset, char **settings)
{
	struct bpf_object *obj;
	struct bpf_program *prog;
	char *names[64];
	int n = 0, failed = 0;

	if (only)
		return verify_one(path, only, nset, settings);
	obj = bpf_object__open_file(path, NULL);
	if (!obj)
		die("open %s", path);
	bpf_object__for_each_program(prog, obj)
		if (n < 64)
			names[n++] = strdup(bpf_program__name(prog));
	bpf_object__close(obj);
	for (int i = 0; i < n; i++) {
		failed |= verify_one(path, names[i], nset, settings);
		free(names[i]);
	}
	return failed;
}

int main(int argc, char **argv)
{
	if (argc >= 3 && !strcmp(argv[argc - 2], "--netns")) {
		if (netns_init(NULL, argv[argc - 1]))
			die("netns");
		fprintf(stderr, "bpfinfo: %zu other network namespaces\n", netns_count());
		netns_walk = true;
		argc -= 2;
		/* netns_init() left it permitted only; finding the daemon's programs lists ids. */
		sys_admin_effective(true);
	}
	if (argc >= 3 && !strcmp(argv[1], "progs"))
		return progs(argv[2]);
	if (argc >= 2 && !strcmp(argv[1], "ids"))
		return ids(argc - 2, argv + 2);
	if (argc == 3 && !strcmp(argv[1], "hold"))
		return hold(argv[2]);
	if (argc >= 2 && !strcmp(argv[1], "alive"))
		return alive(argc - 2, argv + 2);
	if (argc >= 5 && !strcmp(argv[1], "sweep-prog")) {
		const char *target = NULL;
		int n = 10;

		for (int i = 5; i + 1 < argc; i += 2) {
			if (!strcmp(argv[i], "-n"))
				n = atoi(argv[i + 1]);
			else if (!strcmp(argv[i], "--target"))
				target = argv[i + 1];
		}
		return sweep_prog(argv[2], argv[3], argv[4], n, target);
	}
	if (argc >= 3 && !strcmp(argv[1], "verify")) {
		const char *only = argc >= 4 && !strchr(argv[3], '=') ? argv[3] : NULL;
		int first = only ? 4 : 3;

		return verify(argv[2], only, argc - first, argv + first);
	}
	if ((argc == 3 || argc == 5) && !strcmp(argv[1], "sweep"))
		return sweep(argv[2], argc == 5 && !strcmp(argv[3], "-n") ? atoi(argv[4]) : 10);
	fprintf(stderr, "usage: bpfinfo progs PINDIR | ids ID... | hold OBJ | alive ID... |\n"
			"               sweep LINK [-n N] [--netns SCOPE] |\n"
			"               sweep-prog OBJ PROG PINDIR [-n N] [--target CGROUP_DIR] |\n"
			"               verify OBJ [PROG] [NAME=VALUE...]\n");
	return 2;
}
