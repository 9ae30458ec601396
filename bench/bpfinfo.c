// SPDX-License-Identifier: GPL-2.0
/*
 * bpfinfo: what the benchmark needs to know about the programs tcpbufd
 * attached, read from its pinned links.
 *
 *   bpfinfo progs PINDIR          one line per pinned link under PINDIR/links:
 *                                 "LINK PROG_ID PROG_NAME KIND RUN_CNT RUN_TIME_NS",
 *                                 KIND iter, tp_btf, fentry, fexit or the program
 *                                 type (sock_ops, cgroup_skb, ...)
 *                                 (counters move only while kernel.bpf_stats_enabled=1)
 *   bpfinfo alive ID...           prints the program ids that still exist;
 *                                 exit 0 when none does, 1 otherwise
 *   bpfinfo sweep LINK [-n N]     times N runs of a pinned iterator link (create
 *                                 the iterator, read it to the end, as the daemon
 *                                 does): "sweep n=N median_ms=... min_ms=... max_ms=..."
 */
#include "common.h"
#include <dirent.h>
#include <linux/bpf.h>
#include <bpf/bpf.h>

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
		struct bpf_prog_info pi = {};
		__u32 len;
		int fd, pfd;

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		fd = bpf_obj_get(path);
		len = sizeof(li);
		if (fd < 0 || bpf_obj_get_info_by_fd(fd, &li, &len))
			die("%s", path);
		close(fd);
		pfd = bpf_prog_get_fd_by_id(li.prog_id);
		len = sizeof(pi);
		if (pfd < 0 || bpf_obj_get_info_by_fd(pfd, &pi, &len))
			die("program %u of %s", li.prog_id, path);
		close(pfd);
		printf("%s %u %s %s %llu %llu\n", de->d_name, li.prog_id, pi.name,
		       kind(&li, &pi), (unsigned long long)pi.run_cnt,
		       (unsigned long long)pi.run_time_ns);
	}
	closedir(d);
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

static int sweep(const char *link, int n)
{
	double *ms = calloc(n, sizeof(*ms));
	char buf[4096];
	int i, lfd = bpf_obj_get(link);

	if (lfd < 0)
		die("%s", link);
	for (i = 0; i < n; i++) {
		double t0 = mono_sec();
		int fd = bpf_iter_create(lfd);
		ssize_t r;

		if (fd < 0)
			die("iterator of %s", link);
		while ((r = read(fd, buf, sizeof(buf))) > 0)
			;
		if (r < 0)
			die("read iterator of %s", link);
		close(fd);
		ms[i] = (mono_sec() - t0) * 1e3;
	}
	qsort(ms, n, sizeof(*ms), cmp_double);
	printf("sweep n=%d median_ms=%.3f min_ms=%.3f max_ms=%.3f\n", n,
	       n % 2 ? ms[n / 2] : (ms[n / 2 - 1] + ms[n / 2]) / 2, ms[0], ms[n - 1]);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc >= 3 && !strcmp(argv[1], "progs"))
		return progs(argv[2]);
	if (argc >= 2 && !strcmp(argv[1], "alive"))
		return alive(argc - 2, argv + 2);
	if ((argc == 3 || argc == 5) && !strcmp(argv[1], "sweep"))
		return sweep(argv[2], argc == 5 && !strcmp(argv[3], "-n") ? atoi(argv[4]) : 10);
	fprintf(stderr, "usage: bpfinfo progs PINDIR | alive ID... | sweep LINK [-n N]\n");
	return 2;
}
