// SPDX-License-Identifier: GPL-2.0
/*
 * stream: netperf TCP_STREAM over loopback. One connection; the client sends
 * -m byte messages (16 KiB, netperf's loopback default) as fast as it can,
 * the server receives into a -M byte buffer (128 KiB). Throughput is what the
 * receiver got between the end of the warm-up and the end, in 10^6 bit/s.
 * Both ends (and the listener) live in the cgroup given with -c. With -P N,
 * N such connections at once, each end its own process (netperf's way of
 * running parallel streams); the figures are their sum.
 *
 *   stream [-c CGROUP] [-t SECONDS] [-w WARMUP] [-m SEND] [-M RECV] [-P N] [-6]
 *          [-C CLIENT_CPU] [-S SERVER_CPU]
 *
 * Output, one line: "stream mbps=41234.5 bytes=51543125000 seconds=10.000
 * cpu=19.870 mbpc=20750.1": cpu is the CPU time both ends used in the
 * measured interval (softirq work in their context included), mbpc 10^6 bits
 * per CPU-second.
 */
#include "common.h"
#include <signal.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <sys/wait.h>

static void receive(int fd, size_t size, _Atomic unsigned long long *received)
{
	char *buf = malloc(size);
	ssize_t r;

	for (;;) {
		r = recv(fd, buf, size, 0);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			_exit(r < 0);
		atomic_fetch_add_explicit(received, r, memory_order_relaxed);
	}
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: stream [-c CGROUP] [-t SECONDS] [-w WARMUP] [-m SEND] [-M RECV] [-P N] [-6]\n"
		"              [-C CLIENT_CPU] [-S SERVER_CPU]\n"
		"netperf TCP_STREAM over loopback: bulk throughput of one connection in\n"
		"10^6 bit/s, measured at the receiver; both ends in CGROUP.\n"
		"  -t SECONDS  measured time (default 10)    -w WARMUP  unmeasured start (default 1)\n"
		"  -m BYTES    send size (16384)             -M BYTES   receive size (131072)\n"
		"  -P N        N connections at once (1)\n"
		"  -6          IPv6                          -C/-S CPU  pin sender/receiver\n");
}

static void sender(int fd, const char *buf, size_t size)
{
	for (;;)
		if (send(fd, buf, size, 0) < 0 && errno != EINTR)
			_exit(errno != EPIPE && errno != ECONNRESET);
}

static void sleep_sec(double s)
{
	struct timespec ts = { (time_t)s, (long)((s - (time_t)s) * 1e9) };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/* CPU time of this process and of the @n others in @pids. */
static double cpu_all(const pid_t *pids, int n)
{
	double c = cpu_sec(0);

	for (int i = 0; i < n; i++)
		c += cpu_sec(pids[i]);
	return c;
}

/* -P N: a receiver and a sender process for each of N connections; this one
 * only keeps time, so a starved sender cannot stretch the interval. */
static int parallel(const struct loop_opts *o, int npar, size_t send_size, size_t recv_size,
		    _Atomic unsigned long long *received)
{
	int *cfd = calloc(npar, sizeof(*cfd)), *sfd = calloc(npar, sizeof(*sfd)), status;
	pid_t *kids = calloc(2 * npar, sizeof(*kids));
	char *buf = calloc(1, send_size);
	unsigned long long b0, b1;
	double t0, t1, c0, c1;

	if (!cfd || !sfd || !kids || !buf)
		die("calloc");
	for (int i = 0; i < npar; i++)
		loopback_pair(o->cg, o->v6, &cfd[i], &sfd[i]);
	for (int i = 0; i < 2 * npar; i++) {
		int rx = i < npar, k = rx ? i : i - npar;

		kids[i] = fork();
		if (kids[i] < 0)
			die("fork");
		if (kids[i])
			continue;
		for (int j = 0; j < npar; j++) {
			if (!rx || j != k)
				close(sfd[j]);
			if (rx || j != k)
				close(cfd[j]);
		}
		pin_cpu(rx ? o->server_cpu : o->client_cpu);
		if (rx)
			receive(sfd[k], recv_size, received);
		sender(cfd[k], buf, send_size);
	}
	for (int j = 0; j < npar; j++) {
		close(sfd[j]);
		close(cfd[j]);
	}
	pin_cpu(o->client_cpu);
	sleep_sec(o->warm);
	b0 = atomic_load(received);
	t0 = mono_sec();
	c0 = cpu_all(kids, 2 * npar);
	sleep_sec(o->secs);
	b1 = atomic_load(received);
	t1 = mono_sec();
	c1 = cpu_all(kids, 2 * npar);
	/* Senders first: their receivers then read EOF and exit. */
	for (int i = npar; i < 2 * npar; i++)
		kill(kids[i], SIGKILL);
	for (int i = 0; i < 2 * npar; i++)
		waitpid(kids[i], &status, 0);
	printf("stream mbps=%.1f bytes=%llu seconds=%.3f cpu=%.3f mbpc=%.1f\n",
	       (b1 - b0) * 8 / (t1 - t0) / 1e6, b1 - b0, t1 - t0, c1 - c0,
	       c1 > c0 ? (b1 - b0) * 8 / (c1 - c0) / 1e6 : 0);
	return 0;
}

int main(int argc, char **argv)
{
	struct loop_opts o = LOOP_OPTS_DEFAULT;
	int c, cfd, sfd, status, npar = 1;
	size_t send_size = 16384, recv_size = 131072;
	_Atomic unsigned long long *received;
	unsigned long long b0 = 0, b1;
	double t1, c1 = 0;
	struct window w;
	char *buf;
	pid_t pid;

	while ((c = getopt(argc, argv, LOOP_OPTSTRING "m:M:P:h")) != -1) {
		if (loop_opt(&o, c, optarg))
			continue;
		switch (c) {
		case 'm': send_size = (size_t)parse_double("-m", optarg); break;
		case 'M': recv_size = (size_t)parse_double("-M", optarg); break;
		case 'P': npar = atoi(optarg); break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind < argc || !send_size || !recv_size || o.secs <= 0 || npar < 1 || npar > 1024) {
		usage(stderr);
		return 2;
	}
	signal(SIGPIPE, SIG_IGN);
	received = mmap(NULL, sizeof(*received), PROT_READ | PROT_WRITE,
			MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (received == MAP_FAILED)
		die("mmap");
	if (npar > 1)
		return parallel(&o, npar, send_size, recv_size, received);
	loopback_pair(o.cg, o.v6, &cfd, &sfd);
	pid = fork_ends(cfd, sfd, o.client_cpu, o.server_cpu);
	if (!pid)
		receive(sfd, recv_size, received);
	buf = calloc(1, send_size);

	window_init(&w, o.warm, o.secs, pid);
	for (;;) {
		ssize_t r = send(cfd, buf, send_size, 0);

		if (r < 0 && errno != EINTR)
			die("send");
		t1 = mono_sec();
		if (window_warm_over(&w, t1)) {
			b0 = atomic_load(received);
			window_begin(&w, mono_sec());
		} else if (window_over(&w, t1)) {
			b1 = atomic_load(received);
			t1 = mono_sec();
			c1 = window_cpu(&w);
			break;
		}
	}
	close(cfd);
	waitpid(pid, &status, 0);
	printf("stream mbps=%.1f bytes=%llu seconds=%.3f cpu=%.3f mbpc=%.1f\n",
	       (b1 - b0) * 8 / (t1 - w.t0) / 1e6, b1 - b0, t1 - w.t0, c1 - w.c0,
	       c1 > w.c0 ? (b1 - b0) * 8 / (c1 - w.c0) / 1e6 : 0);
	return 0;
}
