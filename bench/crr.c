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
	double secs = 10, warm = 1, t0, t1, c0, c1;
	int c, v6 = 0, ccpu = -1, scpu = -1, lfd, status;
	const char *cg = NULL;
	struct sockaddr_storage addr;
	socklen_t alen;
	unsigned long long n = 0;
	pid_t pid;

	while ((c = getopt(argc, argv, "c:t:w:6C:S:h")) != -1) {
		switch (c) {
		case 'c': cg = optarg; break;
		case 't': secs = parse_double("-t", optarg); break;
		case 'w': warm = parse_double("-w", optarg); break;
		case '6': v6 = 1; break;
		case 'C': ccpu = atoi(optarg); break;
		case 'S': scpu = atoi(optarg); break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind < argc || secs <= 0) {
		usage(stderr);
		return 2;
	}
	signal(SIGPIPE, SIG_IGN);
	if (cg)
		cg_join(cg);
	lfd = listen_loopback(v6, 1024, &addr, &alen);
	pid = fork();
	if (pid < 0)
		die("fork");
	if (!pid) {
		pin_cpu(scpu);
		serve(lfd);
	}
	close(lfd);
	pin_cpu(ccpu);

	double end_warm = mono_sec() + warm;

	while (mono_sec() < end_warm)
		transaction(&addr, alen);
	t0 = mono_sec();
	c0 = cpu_sec(0) + cpu_sec(pid);
	do {
		transaction(&addr, alen);
		n++;
		t1 = mono_sec();
	} while (t1 < t0 + secs);
	c1 = cpu_sec(0) + cpu_sec(pid);
	kill(pid, SIGTERM);
	waitpid(pid, &status, 0);
	printf("crr tps=%.1f transactions=%llu seconds=%.3f cpu=%.3f tpc=%.1f\n", n / (t1 - t0), n,
	       t1 - t0, c1 - c0, c1 > c0 ? n / (c1 - c0) : 0);
	return 0;
}
