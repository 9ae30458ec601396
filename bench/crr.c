// SPDX-License-Identifier: GPL-2.0
/*
 * crr: netperf TCP_CRR over loopback. A new connection per transaction: the
 * client connects, sends a 1-byte request, the server accepts, answers with
 * 1 byte and closes, the client reads and closes. Prints transactions
 * (connections) per second after a warm-up; per-socket costs (set-up,
 * destruction) show here as TCP_RR shows per-segment ones. Both ends (and
 * the listener) live in the cgroup given with -c. The client closes with
 * SO_LINGER 0 (a reset, no TIME_WAIT), so a long run does not run out of
 * ephemeral ports; both sockets are destroyed either way.
 *
 *   crr [-c CGROUP] [-t SECONDS] [-w WARMUP] [-6] [-C CLIENT_CPU] [-S SERVER_CPU]
 *
 * Output, one line: "crr tps=9876.5 transactions=49382 seconds=5.000 cpu=4.998
 * tpc=9880.2" (as rr's: cpu is both ends' CPU time, tpc per CPU-second).
 */
#include "common.h"
#include <getopt.h>
#include <signal.h>
#include <sys/wait.h>

static void serve(int lfd)
{
	char b;

	for (;;) {
		int fd = accept(lfd, NULL, NULL);

		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			die("accept");
		}
		if (recv(fd, &b, 1, 0) == 1)
			(void)!send(fd, &b, 1, 0);
		close(fd);
	}
}

static void transaction(const struct sockaddr_storage *addr, socklen_t alen)
{
	struct linger lg = { .l_onoff = 1, .l_linger = 0 };
	char b = 'x';
	int fd = socket(addr->ss_family, SOCK_STREAM, 0);

	if (fd < 0)
		die("socket");
	if (connect(fd, (const struct sockaddr *)addr, alen))
		die("connect");
	if (send(fd, &b, 1, 0) != 1 || recv(fd, &b, 1, 0) != 1)
		die("request/response");
	setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	close(fd);
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: crr [-c CGROUP] [-t SECONDS] [-w WARMUP] [-6] [-C CLIENT_CPU] [-S SERVER_CPU]\n"
		"netperf TCP_CRR over loopback: connect, 1-byte request and response, close;\n"
		"connections per second, both ends in CGROUP (absolute or relative to the v2 mount).\n"
		"  -t SECONDS  measured time (default 10)    -w WARMUP  unmeasured start (default 1)\n"
		"  -6          IPv6                          -C/-S CPU  pin client/server\n");
}

int main(int argc, char **argv)
{
	struct loop_opts o = LOOP_OPTS_DEFAULT;
	double t0, t1, c0, c1;
	int c, lfd, status;
	struct sockaddr_storage addr;
	socklen_t alen;
	unsigned long long n = 0;
	pid_t pid;

	while ((c = getopt(argc, argv, LOOP_OPTSTRING "h")) != -1) {
		if (loop_opt(&o, c, optarg))
			continue;
		switch (c) {
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind < argc || o.secs <= 0) {
		usage(stderr);
		return 2;
	}
	signal(SIGPIPE, SIG_IGN);
	if (o.cg)
		cg_join(o.cg);
	lfd = listen_loopback(o.v6, 1024, &addr, &alen);
	pid = fork();
	if (pid < 0)
		die("fork");
	if (!pid) {
		pin_cpu(o.server_cpu);
		serve(lfd);
	}
	close(lfd);
	pin_cpu(o.client_cpu);

	double end_warm = mono_sec() + o.warm;

	while (mono_sec() < end_warm)
		transaction(&addr, alen);
	t0 = mono_sec();
	c0 = cpu_sec(0) + cpu_sec(pid);
	do {
		transaction(&addr, alen);
		n++;
		t1 = mono_sec();
	} while (t1 < t0 + o.secs);
	c1 = cpu_sec(0) + cpu_sec(pid);
	kill(pid, SIGTERM);
	waitpid(pid, &status, 0);
	printf("crr tps=%.1f transactions=%llu seconds=%.3f cpu=%.3f tpc=%.1f\n", n / (t1 - t0), n,
	       t1 - t0, c1 - c0, c1 > c0 ? n / (c1 - c0) : 0);
	return 0;
}
