// SPDX-License-Identifier: GPL-2.0
/*
 * tcpload: loopback TCP load in a cgroup, for humans and VM scripts.
 *
 *   tcpload [-c CGROUP] [-n NCONN] [-6] [-b BYTES] [-r] [-S SNDBUF] [-R RCVBUF]
 *           [-t SECONDS] [-V]
 *   tcpload -s N [-c CGROUP] [-6]
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "harness.h"
#include "load.h"
#include "skmem.h"

#include <ctype.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static volatile sig_atomic_t stop;

static void on_sig(int sig)
{
	(void)sig;
	stop = 1;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: tcpload [-c CGROUP] [-n NCONN] [-6] [-b BYTES] [-r] [-S SNDBUF] [-R RCVBUF]\n"
		"               [-t SECONDS] [-V]\n"
		"       tcpload -s N [-c CGROUP] [-6]\n"
		"Open NCONN (default 8) loopback TCP connections inside CGROUP (absolute or\n"
		"relative to the cgroup v2 mount; both ends and the listener are in it) and\n"
		"fill them: receivers do not read, so send and receive queues fill up.\n"
		"  -6        IPv6 (::1) instead of 127.0.0.1\n"
		"  -b BYTES  at most BYTES per connection (suffix K, M, G)\n"
		"  -r        receivers read: steady flow instead of stalled queues\n"
		"  -S/-R N   set SO_SNDBUF / SO_RCVBUF (turns autotuning off)\n"
		"  -t SEC    hold for SEC seconds (default: until SIGINT/SIGTERM)\n"
		"  -V        at the end, drain and verify every byte (exit 1 if not intact)\n"
		"  -s N      instead: open and close N short connections, print the time\n"
		"Prints \"filled sent=B received=B\" and the cgroup's socket memory as the\n"
		"kernel reports it (sock_diag).\n");
}

static uint64_t parse_size(const char *s)
{
	char *end;
	uint64_t v = strtoull(s, &end, 10);

	switch (toupper((unsigned char)*end)) {
	case 'K': v <<= 10; break;
	case 'M': v <<= 20; break;
	case 'G': v <<= 30; break;
	case 0: break;
	default:
		fprintf(stderr, "tcpload: bad size %s\n", s);
		exit(2);
	}
	return v;
}

static void show(const char *cg)
{
	struct skmem_total t;

	if (!cg || skmem_subtree(cg, &t))
		return;
	printf("skmem %s pages=%" PRIu64 " bytes=%" PRIu64 " sockets=%" PRIu64 "\n",
	       cg, t.pages, t.bytes, t.sockets);
}

int main(int argc, char **argv)
{
	struct load_opts o = { .nconn = 8, .family = AF_INET };
	int opt, seconds = -1, verify = 0, nshort = 0, ret = 0;
	struct load *l;

	while ((opt = getopt(argc, argv, "c:n:6b:rS:R:t:Vs:h")) != -1) {
		switch (opt) {
		case 'c': o.cgroup = optarg; break;
		case 'n': o.nconn = atoi(optarg); break;
		case '6': o.family = AF_INET6; break;
		case 'b': o.bytes = parse_size(optarg); break;
		case 'r': o.readers = 1; break;
		case 'S': o.sndbuf = (int)parse_size(optarg); break;
		case 'R': o.rcvbuf = (int)parse_size(optarg); break;
		case 't': seconds = atoi(optarg); break;
		case 'V': verify = 1; break;
		case 's': nshort = atoi(optarg); break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind != argc) {
		usage(stderr);
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (o.cgroup && !cg_id(o.cgroup)) {
		fprintf(stderr, "tcpload: no such cgroup: %s\n", o.cgroup);
		return 1;
	}
	if (nshort > 0) {
		double secs;

		if (short_connections_ex(o.cgroup, o.family, nshort, &secs)) {
			fprintf(stderr, "tcpload: short connections failed\n");
			return 1;
		}
		printf("short %d connections in %.2f s\n", nshort, secs);
		show(o.cgroup);
		return 0;
	}

	signal(SIGINT, on_sig);
	signal(SIGTERM, on_sig);
	l = load_start(&o);
	if (!l)
		return 1;
	if (load_wait_filled(l, 0)) {
		load_kill(l);
		return 1;
	}
	printf("filled sent=%" PRIu64 " received=%" PRIu64 "%s\n", l->sent, l->received,
	       l->timed_out ? " (fill timeout)" : "");
	show(o.cgroup);
	if (seconds >= 0) {
		for (int i = 0; i < seconds * 10 && !stop; i++)
			msleep(100);
	} else {
		while (!stop)
			pause();
	}
	show(o.cgroup);
	if (verify) {
		if (load_resume_and_verify(l, 0)) {
			printf("verify BAD received=%" PRIu64 " sent=%" PRIu64 " %s\n",
			       l->received, l->sent, l->msg);
			ret = 1;
		} else {
			printf("verify OK received=%" PRIu64 " sent=%" PRIu64 "\n",
			       l->received, l->sent);
		}
	}
	if (load_close(l))
		ret = 1;
	return ret;
}
