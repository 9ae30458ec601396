/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the loopback benchmarks (rr.c, stream.c, crr.c, idle.c) share: joining a
 * cgroup v2 directory before any socket exists, a loopback listener, one
 * connection split over two pinned processes, CPU pinning, a monotonic clock
 * and a measured interval after a warm-up. Header-only so each tool is one file.
 */
#ifndef TCPBUF_BENCH_COMMON_H
#define TCPBUF_BENCH_COMMON_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static inline void die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	if (errno)
		fprintf(stderr, ": %s", strerror(errno));
	fputc('\n', stderr);
	exit(1);
}

static inline double mono_sec(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* CPU time, in seconds, that process @pid has used so far (its
 * sum_exec_runtime: on kernels without IRQ_TIME_ACCOUNTING this includes the
 * softirq work, such as loopback receive processing, done in its context). */
static inline double cpu_sec(pid_t pid)
{
	struct timespec ts;
	clockid_t clk;

	if (clock_getcpuclockid(pid, &clk) || clock_gettime(clk, &ts))
		return 0;
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* The first cgroup2 mount in mountinfo: /sys/fs/cgroup/unified on hybrid hosts. */
static inline int cg_v2_mount(char *buf, size_t len)
{
	char line[4096], mnt[4096], fstype[64];
	FILE *f = fopen("/proc/self/mountinfo", "re");
	int found = -1;

	if (!f)
		return -1;
	while (found && fgets(line, sizeof(line), f)) {
		char *sep = strstr(line, " - ");

		if (!sep || sscanf(sep, " - %63s", fstype) != 1 || strcmp(fstype, "cgroup2"))
			continue;
		if (sscanf(line, "%*s %*s %*s %*s %4095s", mnt) == 1 && strlen(mnt) < len) {
			strcpy(buf, mnt);
			found = 0;
		}
	}
	fclose(f);
	return found;
}

/* Absolute path of a cgroup given absolute or relative to the v2 mount. */
static inline void cg_abs_path(const char *cg, char *out, size_t len)
{
	char mnt[4096];

	if (cg_v2_mount(mnt, sizeof(mnt)))
		die("no cgroup v2 mount");
	if (!strncmp(cg, mnt, strlen(mnt)) && (cg[strlen(mnt)] == '/' || !cg[strlen(mnt)]))
		snprintf(out, len, "%s", cg);
	else
		snprintf(out, len, "%s%s%s", mnt, cg[0] == '/' ? "" : "/", cg);
}

/* Move the calling process into @cg. A socket's cgroup is fixed when it is
 * created, so call this before creating any. */
static inline void cg_join(const char *cg)
{
	char path[4200];
	int fd;

	cg_abs_path(cg, path, sizeof(path) - 20);
	strcat(path, "/cgroup.procs");
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0 || write(fd, "0", 1) != 1)
		die("join %s", path);
	close(fd);
}

static inline void pin_cpu(int cpu)
{
	cpu_set_t set;

	if (cpu < 0)
		return;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set))
		die("pin to cpu %d", cpu);
}

/* A listener on 127.0.0.1 (or ::1) with a kernel-chosen port. */
static inline int listen_loopback(int v6, int backlog, struct sockaddr_storage *addr,
				  socklen_t *alen)
{
	int one = 1, fd = socket(v6 ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	memset(addr, 0, sizeof(*addr));
	if (v6) {
		struct sockaddr_in6 *a = (void *)addr;

		a->sin6_family = AF_INET6;
		a->sin6_addr = in6addr_loopback;
		*alen = sizeof(*a);
	} else {
		struct sockaddr_in *a = (void *)addr;

		a->sin_family = AF_INET;
		a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		*alen = sizeof(*a);
	}
	if (fd < 0)
		die("socket");
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (void *)addr, *alen) || listen(fd, backlog) ||
	    getsockname(fd, (void *)addr, alen))
		die("listen on loopback");
	return fd;
}

/* Connect to @addr and accept the other end: one loopback connection. */
static inline void connect_pair(int lfd, const struct sockaddr_storage *addr, socklen_t alen,
				int *client, int *server)
{
	*client = socket(addr->ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (*client < 0 || connect(*client, (const void *)addr, alen))
		die("connect");
	*server = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	if (*server < 0)
		die("accept");
}

/* One loopback connection, made from inside @cg (NULL: where we are), so both
 * ends and the listener are charged there. */
static inline void loopback_pair(const char *cg, int v6, int *client, int *server)
{
	struct sockaddr_storage addr;
	socklen_t alen;
	int lfd;

	if (cg)
		cg_join(cg);
	lfd = listen_loopback(v6, 1, &addr, &alen);
	connect_pair(lfd, &addr, alen, client, server);
	close(lfd);
}

/*
 * fork() into the two ends of a connection: the child keeps @server, pinned to
 * @server_cpu, and gets 0; the parent keeps @client, pinned to @client_cpu,
 * and gets the child's pid. -1 for no pinning.
 */
static inline pid_t fork_ends(int client, int server, int client_cpu, int server_cpu)
{
	pid_t pid = fork();

	if (pid < 0)
		die("fork");
	if (!pid) {
		close(client);
		pin_cpu(server_cpu);
		return 0;
	}
	close(server);
	pin_cpu(client_cpu);
	return pid;
}

/*
 * The measured interval: @secs after @warm seconds of warm-up, checked from a
 * benchmark's loop (window_warm_over(), then window_begin(); window_over()).
 * CPU time is this process's plus @peer's.
 */
struct window {
	double secs, end_warm, end;	/* mono_sec() */
	double t0, c0;			/* the interval's start: time, CPU seconds */
	pid_t peer;
	int measuring;
};

static inline double window_cpu(const struct window *w)
{
	return cpu_sec(0) + cpu_sec(w->peer);
}

static inline void window_begin(struct window *w, double now)
{
	w->measuring = 1;
	w->t0 = now;
	w->c0 = window_cpu(w);
	w->end = now + w->secs;
}

static inline void window_init(struct window *w, double warm, double secs, pid_t peer)
{
	double start = mono_sec();

	*w = (struct window){ .secs = secs, .end_warm = start + warm, .end = start + warm + secs,
			      .peer = peer };
	if (warm <= 0)
		window_begin(w, start);
}

static inline int window_warm_over(const struct window *w, double now)
{
	return !w->measuring && now >= w->end_warm;
}

static inline int window_over(const struct window *w, double now)
{
	return w->measuring && now >= w->end;
}

static inline double parse_double(const char *opt, const char *s)
{
	char *end;
	double v = strtod(s, &end);

	if (end == s || *end || v < 0) {
		fprintf(stderr, "%s: bad number '%s'\n", opt, s);
		exit(2);
	}
	return v;
}

/* What every loopback benchmark (rr, stream, crr) is told. */
struct loop_opts {
	const char *cg;			/* -c: the cgroup of both ends; NULL: ours */
	double secs, warm;		/* -t: measured, -w: warm-up, seconds */
	int v6;				/* -6 */
	int client_cpu, server_cpu;	/* -C, -S; -1: not pinned */
};

#define LOOP_OPTS_DEFAULT { .secs = 10, .warm = 1, .client_cpu = -1, .server_cpu = -1 }
#define LOOP_OPTSTRING "c:t:w:6C:S:"

/* getopt()'s @c with @arg into @o: 1, or 0 where it is not one of LOOP_OPTSTRING's. */
static inline int loop_opt(struct loop_opts *o, int c, const char *arg)
{
	switch (c) {
	case 'c': o->cg = arg; return 1;
	case 't': o->secs = parse_double("-t", arg); return 1;
	case 'w': o->warm = parse_double("-w", arg); return 1;
	case '6': o->v6 = 1; return 1;
	case 'C': o->client_cpu = atoi(arg); return 1;
	case 'S': o->server_cpu = atoi(arg); return 1;
	}
	return 0;
}

#endif /* TCPBUF_BENCH_COMMON_H */
