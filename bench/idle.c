// SPDX-License-Identifier: GPL-2.0
/*
 * idle: hold many idle loopback TCP connections, spread over cgroups, for
 * the scale measurements (daemon CPU and RSS, sweep time).
 *
 *   idle -n SOCKETS [-c CGROUP]... [-g N] [-N NETNS] [-q | -f]
 *
 * -N NETNS: the pairs are held by NETNS worker processes, each in a network
 * namespace of its own (lo up), as that many containers would.
 * Opens SOCKETS/2 connected pairs (both ends count). With several -c the
 * pairs are spread evenly (with -g N: over the N cgroups CGROUP/g00001 ..
 * CGROUP/gN below the single -c, which must exist), each pair entirely inside one cgroup (the process
 * joins the cgroup, then creates the listener and both ends). -q leaves one
 * unread byte in every connection, so each receiving socket holds a page;
 * -f fills every connection instead (a stalled load: the receiver never
 * reads, the sender writes until its buffer is full).
 * Prints "ready sockets=N" once all are open, then waits for SIGTERM/SIGINT
 * and closes everything with RST (SO_LINGER 0: no TIME_WAIT left behind).
 * Raises RLIMIT_NOFILE itself; where the hard limit stays (no
 * CAP_SYS_RESOURCE), worker processes hold the sockets in shares.
 */
#include "common.h"
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <sched.h>
#include <net/if.h>
#include <sys/ioctl.h>

#define PAIRS_PER_LISTENER 10000	/* well below the ephemeral port range */

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

/* Write into a non-blocking socket whose peer never reads until it is full. */
static size_t fill(int fd)
{
	static char buf[65536];
	size_t total = 0;
	ssize_t r;

	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
	while ((r = send(fd, buf, sizeof(buf), 0)) > 0)
		total += r;
	if (r < 0 && errno != EAGAIN)
		die("fill");
	return total;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: idle -n SOCKETS [-c CGROUP]... [-g N] [-N NETNS] [-q | -f]\n"
		   "Hold SOCKETS/2 idle loopback connections spread over the cgroups (with -g:\n"
		   "CGROUP/g00001..gN) until SIGTERM; -q leaves a byte queued in each, -f fills\n"
		   "each (stalled receivers).\n");
}

/* The pairs [first, last) of the global numbering, pair i in the cgroup whose
 * even share of the npairs contains i. Returns how many were made. */
static size_t open_pairs(int *fds, size_t first, size_t last, size_t npairs,
			 const char **cgs, size_t ncg, int queue)
{
	struct sockaddr_storage addr;
	socklen_t alen;
	size_t i, made = 0, k = 0, cur = (size_t)-1;
	int lfd = -1, since_listen = 0;

	for (i = first; i < last && !stop; i++, made++) {
		/* cgroup k holds pairs [k * npairs / ncg, (k + 1) * npairs / ncg) */
		while (ncg && (k + 1) * npairs / ncg <= i)
			k++;
		if (ncg && k != cur) {
			cg_join(cgs[k]);
			cur = k;
			if (lfd >= 0)
				close(lfd);	/* a listener of the cgroup's own */
			lfd = -1;
		}
		if (lfd < 0 || since_listen == PAIRS_PER_LISTENER) {
			if (lfd >= 0)
				close(lfd);
			lfd = listen_loopback(0, 4096, &addr, &alen);
			since_listen = 0;
		}
		connect_pair(lfd, &addr, alen, &fds[2 * made], &fds[2 * made + 1]);
		if (queue && send(fds[2 * made], "x", 1, 0) != 1)
			die("send");
		since_listen++;
	}
	if (lfd >= 0)
		close(lfd);
	return made;
}

/* A network namespace of this process's own, lo up. */
static void netns_new(void)
{
	struct ifreq ifr = { .ifr_name = "lo" };
	int fd;

	if (unshare(CLONE_NEWNET))
		die("unshare(CLONE_NEWNET)");
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || ioctl(fd, SIOCGIFFLAGS, &ifr))
		die("lo");
	ifr.ifr_flags |= IFF_UP;
	if (ioctl(fd, SIOCSIFFLAGS, &ifr))
		die("lo up");
	close(fd);
}

static void close_all(int *fds, size_t n)
{
	struct linger lg = { .l_onoff = 1, .l_linger = 0 };
	size_t i;

	for (i = 0; i < n; i++) {
		setsockopt(fds[i], SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
		close(fds[i]);
	}
}

int main(int argc, char **argv)
{
	size_t nsock = 0, npairs, ncg = 0, ngen = 0, nnetns = 0, i, made = 0, per_proc, nworkers, w;
	const char **cgs = calloc(argc, sizeof(*cgs));
	int c, queue = 0, filling = 0, *fds, report[2];
	pid_t *workers;
	struct rlimit rl;

	while ((c = getopt(argc, argv, "n:c:g:N:qfh")) != -1) {
		switch (c) {
		case 'n': nsock = (size_t)parse_double("-n", optarg); break;
		case 'c': cgs[ncg++] = optarg; break;
		case 'g': ngen = (size_t)parse_double("-g", optarg); break;
		case 'N': nnetns = (size_t)parse_double("-N", optarg); break;
		case 'q': queue = 1; break;
		case 'f': filling = 1; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind < argc || nsock < 2 || (ngen && ncg != 1)) {
		usage(stderr);
		return 2;
	}
	if (ngen) {
		const char *parent = cgs[0];

		cgs = calloc(ngen, sizeof(*cgs));
		for (i = 0; i < ngen; i++) {
			char *p;

			if (asprintf(&p, "%s/g%05zu", parent, i + 1) < 0)
				die("asprintf");
			cgs[i] = p;
		}
		ncg = ngen;
	}
	npairs = nsock / 2;
	signal(SIGTERM, on_signal);
	signal(SIGINT, on_signal);
	signal(SIGPIPE, SIG_IGN);

	/* As many descriptors as allowed; where the hard limit cannot be raised
	 * (no CAP_SYS_RESOURCE), worker processes hold a share each. */
	rl.rlim_cur = rl.rlim_max = nsock + 1024;
	if (setrlimit(RLIMIT_NOFILE, &rl)) {
		if (getrlimit(RLIMIT_NOFILE, &rl))
			die("getrlimit");
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	per_proc = rl.rlim_cur > 2048 ? (rl.rlim_cur - 1024) / 2 : 512;
	if (nnetns && (npairs + nnetns - 1) / nnetns < per_proc)
		per_proc = (npairs + nnetns - 1) / nnetns;
	if (npairs <= per_proc && !nnetns) {
		fds = calloc(2 * npairs, sizeof(*fds));
		if (!fds)
			die("calloc");
		made = open_pairs(fds, 0, npairs, npairs, cgs, ncg, queue);
		if (filling) {
			size_t bytes = 0;
			int pass;

			/* Twice: the first writes may let the send buffer grow. */
			for (pass = 0; pass < 2; pass++) {
				for (i = 0; i < made; i++)
					bytes += fill(fds[2 * i]);
				usleep(100000);
			}
			printf("filled bytes=%zu\n", bytes);
		}
		printf("ready sockets=%zu\n", 2 * made);
		fflush(stdout);
		while (!stop)
			pause();
		close_all(fds, 2 * made);
		return 0;
	}

	if (filling || pipe(report))
		die(filling ? "-f with more sockets than one process may hold" : "pipe");
	nworkers = (npairs + per_proc - 1) / per_proc;
	workers = calloc(nworkers, sizeof(*workers));
	for (w = 0; w < nworkers; w++) {
		size_t first = w * per_proc, last = first + per_proc < npairs ? first + per_proc : npairs;

		workers[w] = fork();
		if (workers[w] < 0)
			die("fork");
		if (!workers[w]) {
			prctl(PR_SET_PDEATHSIG, SIGTERM);
			if (nnetns)
				netns_new();
			fds = calloc(2 * (last - first), sizeof(*fds));
			if (!fds)
				die("calloc");
			made = open_pairs(fds, first, last, npairs, cgs, ncg, queue);
			if (write(report[1], &made, sizeof(made)) != sizeof(made))
				die("report");
			while (!stop)
				pause();
			close_all(fds, 2 * made);
			_exit(0);
		}
	}
	close(report[1]);
	for (w = 0; w < nworkers; w++) {
		size_t n;

		if (read(report[0], &n, sizeof(n)) != sizeof(n))
			break;	/* a worker died; its error is on stderr */
		made += n;
	}
	if (w == nworkers) {
		printf("ready sockets=%zu processes=%zu\n", 2 * made, nworkers);
		fflush(stdout);
		while (!stop)
			pause();
	}
	for (w = 0; w < nworkers; w++)
		kill(workers[w], SIGTERM);
	for (w = 0; w < nworkers; w++)
		waitpid(workers[w], NULL, 0);
	return w == nworkers && made == npairs ? 0 : 1;
}
