// SPDX-License-Identifier: GPL-2.0
/*
 * rr: netperf TCP_RR over loopback. One connection; the client sends a
 * request of -r bytes (1), the server answers with -R bytes (1), the client
 * waits for the answer, repeat. Prints transactions per second after a
 * warm-up. Both ends (and the listener) live in the cgroup given with -c.
 *
 *   rr [-c CGROUP] [-t SECONDS] [-w WARMUP] [-r REQ] [-R RESP] [-6] [-D]
 *      [-C CLIENT_CPU] [-S SERVER_CPU] [-i INTERVAL]
 *
 * Output, one line: "rr tps=27291.4 transactions=272914 seconds=10.000 cpu=9.981
 * tpc=27343.5": cpu is the CPU time both ends used in the measured interval
 * (seconds, softirq work done in their context included), tpc transactions
 * per CPU-second, the inverse of netperf's service demand. With both ends on
 * one CPU the benchmark is CPU-bound, so on an otherwise idle machine tps and
 * tpc agree; on a shared one tpc leaves out the time others took the CPU.
 */
#include "common.h"
#include <getopt.h>
#include <signal.h>
#include <sys/wait.h>

static void full_read(int fd, char *buf, size_t n)
{
	while (n) {
		ssize_t r = recv(fd, buf, n, 0);

		if (r <= 0) {
			if (r < 0 && errno == EINTR)
				continue;
			if (r == 0)
				_exit(0); /* the peer is done */
			die("recv");
		}
		buf += r;
		n -= r;
	}
}

static void full_write(int fd, const char *buf, size_t n)
{
	while (n) {
		ssize_t r = send(fd, buf, n, 0);

		if (r < 0) {
			if (errno == EINTR)
				continue;
			die("send");
		}
		buf += r;
		n -= r;
	}
}

static void serve(int fd, size_t req, size_t resp)
{
	char *in = calloc(1, req), *out = calloc(1, resp);

	for (;;) {
		full_read(fd, in, req);
		full_write(fd, out, resp);
	}
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: rr [-c CGROUP] [-t SECONDS] [-w WARMUP] [-r REQ] [-R RESP] [-6] [-D]\n"
		"          [-C CLIENT_CPU] [-S SERVER_CPU]\n"
		"netperf TCP_RR over loopback: request/response transactions per second on\n"
		"one connection, both ends in CGROUP (absolute or relative to the v2 mount).\n"
		"  -t SECONDS  measured time (default 10)    -w WARMUP  unmeasured start (default 1)\n"
		"  -r/-R BYTES request/response size (1/1)  -6  IPv6    -D  TCP_NODELAY\n"
		"  -C/-S CPU   pin client/server to a CPU (default: no pinning, as netperf)\n"
		"  -i SECONDS  also print \"interval T TPS\" lines every SECONDS (noise studies)\n");
}

int main(int argc, char **argv)
{
	struct loop_opts o = LOOP_OPTS_DEFAULT;
	double t1, interval = 0, ti = 0, c1;
	int c, nodelay = 0, cfd, sfd, status;
	size_t req = 1, resp = 1;
	unsigned long long n = 0, n0 = 0, ni = 0;
	struct window w;
	char *qbuf, *abuf;
	pid_t pid;

	while ((c = getopt(argc, argv, LOOP_OPTSTRING "r:R:Di:h")) != -1) {
		if (loop_opt(&o, c, optarg))
			continue;
		switch (c) {
		case 'r': req = (size_t)parse_double("-r", optarg); break;
		case 'R': resp = (size_t)parse_double("-R", optarg); break;
		case 'D': nodelay = 1; break;
		case 'i': interval = parse_double("-i", optarg); break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind < argc || !req || !resp || o.secs <= 0) {
		usage(stderr);
		return 2;
	}
	signal(SIGPIPE, SIG_IGN);
	loopback_pair(o.cg, o.v6, &cfd, &sfd);
	if (nodelay) {
		int one = 1;

		setsockopt(cfd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		setsockopt(sfd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	}
	pid = fork_ends(cfd, sfd, o.client_cpu, o.server_cpu);
	if (!pid)
		serve(sfd, req, resp);
	qbuf = calloc(1, req);
	abuf = calloc(1, resp);

	/* Look at the clock every 16 transactions: ~30 ns each, invisible at
	 * tens of microseconds per transaction. */
	window_init(&w, o.warm, o.secs, pid);
	for (;;) {
		full_write(cfd, qbuf, req);
		full_read(cfd, abuf, resp);
		n++;
		if (n & 15)
			continue;
		t1 = mono_sec();
		if (window_warm_over(&w, t1)) {
			ti = t1;
			n0 = ni = n;
			window_begin(&w, t1);
		} else if (window_over(&w, t1)) {
			c1 = window_cpu(&w);
			break;
		} else if (w.measuring && interval > 0 && t1 - ti >= interval) {
			printf("interval %.3f %.1f\n", t1 - w.t0, (n - ni) / (t1 - ti));
			ti = t1;
			ni = n;
		}
	}
	close(cfd);
	waitpid(pid, &status, 0);
	printf("rr tps=%.1f transactions=%llu seconds=%.3f cpu=%.3f tpc=%.1f\n",
	       (n - n0) / (t1 - w.t0), n - n0, t1 - w.t0, c1 - w.c0,
	       c1 > w.c0 ? (n - n0) / (c1 - w.c0) : 0);
	return 0;
}
