/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the loopback benchmarks (rr.c, stream.c, idle.c) share: joining a
 * cgroup v2 directory before any socket exists, a loopback listener, CPU
 * pinning and a monotonic clock. Header-only so each tool is one file.
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

#endif /* TCPBUF_BENCH_COMMON_H */
