// SPDX-License-Identifier: GPL-2.0
/*
 * skmem CGROUP_PATH...: TCP socket memory per cgroup, from NETLINK_SOCK_DIAG.
 * Prints "path pages bytes sockets" per argument, descendants included.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "harness.h"
#include "skmem.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>

static void usage(FILE *f)
{
	fprintf(f,
		"usage: skmem [-n] [-m] [-v] CGROUP_PATH...\n"
		"       skmem -a\n"
		"Print \"path pages bytes sockets\" for each cgroup, descendants included.\n"
		"CGROUP_PATH is absolute or relative to the cgroup v2 mount.\n"
		"  -n  the cgroup itself only, not its descendants\n"
		"  -m  append memcg's `sock` bytes from memory.stat (- if none)\n"
		"  -v  also list each matching socket\n"
		"  -a  list every TCP socket with its cgroup id and memory\n"
		"pages = sum over sockets of ceil((r + f + w) / 4096), as ss -tm shows r/f/w.\n");
}

struct list_arg {
	const uint64_t *ids;
	int n;		/* < 0: all */
};

static const char *state_name(int s)
{
	static const char *names[] = { "?", "ESTAB", "SYN-SENT", "SYN-RECV", "FIN-WAIT-1",
		"FIN-WAIT-2", "TIME-WAIT", "CLOSE", "CLOSE-WAIT", "LAST-ACK", "LISTEN",
		"CLOSING", "NEW-SYN-RECV" };

	return s >= 0 && s < (int)(sizeof(names) / sizeof(names[0])) ? names[s] : "?";
}

static int list_cb(const struct skmem_sock *s, void *arg)
{
	struct list_arg *a = arg;
	int hit = a->n < 0;

	for (int i = 0; i < a->n && !hit; i++)
		hit = s->cgid == a->ids[i];
	if (hit)
		printf("  %s %-10s %5u -> %5u cgid %" PRIu64 " r %u f %d w %u bytes %" PRId64
		       " pages %" PRIu64 " rb %u tb %u\n",
		       s->family == AF_INET6 ? "tcp6" : "tcp4", state_name(s->state),
		       s->sport, s->dport, s->cgid, s->rmem_alloc, s->fwd_alloc,
		       s->wmem_queued, s->bytes, skmem_pages(s->bytes), s->rcvbuf, s->sndbuf);
	return 0;
}

int main(int argc, char **argv)
{
	int self_only = 0, memcg = 0, verbose = 0, all = 0, opt, ret = 0;

	while ((opt = getopt(argc, argv, "nmvah")) != -1) {
		switch (opt) {
		case 'n': self_only = 1; break;
		case 'm': memcg = 1; break;
		case 'v': verbose = 1; break;
		case 'a': all = 1; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (all) {
		struct list_arg a = { NULL, -1 };
		int r = skmem_foreach(list_cb, &a);

		if (r) {
			fprintf(stderr, "skmem: sock_diag: %s\n", strerror(-r));
			return 1;
		}
		return 0;
	}
	if (optind >= argc) {
		usage(stderr);
		return 2;
	}
	for (int i = optind; i < argc; i++) {
		struct skmem_total t;
		uint64_t *ids = NULL;
		int n, r;

		if (self_only) {
			ids = malloc(sizeof(*ids));
			ids[0] = cg_id(argv[i]);
			n = ids[0] ? 1 : -1;
		} else {
			n = cg_subtree_ids(argv[i], &ids);
		}
		if (n < 0) {
			fprintf(stderr, "skmem: %s: no such cgroup\n", argv[i]);
			free(ids);
			ret = 1;
			continue;
		}
		r = skmem_cgroups(ids, (size_t)n, &t);
		if (r) {
			fprintf(stderr, "skmem: sock_diag: %s\n", strerror(-r));
			free(ids);
			return 1;
		}
		printf("%s %" PRIu64 " %" PRIu64 " %" PRIu64, argv[i], t.pages, t.bytes, t.sockets);
		if (memcg) {
			int64_t m = memcg_sock_bytes(argv[i]);

			if (m < 0)
				printf(" -");
			else
				printf(" %" PRId64, m);
		}
		printf("\n");
		if (verbose) {
			struct list_arg a = { ids, n };

			skmem_foreach(list_cb, &a);
		}
		free(ids);
	}
	return ret;
}
