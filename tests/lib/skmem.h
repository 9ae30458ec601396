/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The independent oracle: socket memory per cgroup as the kernel reports
 * it through NETLINK_SOCK_DIAG (what `ss -tm` shows), and memcg's own
 * `sock` counter where the memory controller is available.
 *
 * A socket's charged memory is rmem_alloc + fwd_alloc + wmem_queued bytes
 * (ss: r + f + w); the kernel charges whole pages per socket, so pages are
 * summed per socket as ceil(bytes / 4096).
 */
#ifndef TCPBUF_TEST_SKMEM_H
#define TCPBUF_TEST_SKMEM_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define SKMEM_PAGE 4096

struct skmem_sock {
	int family;		/* AF_INET / AF_INET6 */
	int state;		/* TCP_ESTABLISHED, TCP_LISTEN, ... */
	uint16_t sport, dport;	/* host byte order */
	uint32_t inode;
	uint64_t cgid;		/* 0 if the kernel gave none (time-wait, syn-recv) */
	int has_mem;		/* INET_DIAG_SKMEMINFO was present */
	uint32_t rmem_alloc, rcvbuf, wmem_alloc, sndbuf, wmem_queued, backlog, drops;
	int32_t fwd_alloc;
	int64_t bytes;		/* rmem_alloc + fwd_alloc + wmem_queued */
	int has_storage;	/* the socket has an entry in skmem_storage_fd's map */
	uint32_t storage_u32;	/* 4 bytes of that entry, at skmem_storage_off */
};

/* A socket-storage map (BPF_MAP_TYPE_SK_STORAGE) whose entries dumps also
 * return (sock_diag's INET_DIAG_REQ_SK_BPF_STORAGES); -1: none. */
extern int skmem_storage_fd;
extern size_t skmem_storage_off;

struct skmem_total {
	uint64_t bytes;
	uint64_t pages;		/* sum over sockets of ceil(bytes / 4096) */
	uint64_t sockets;	/* every matching socket (listeners, empty ones too) */
	uint64_t charged;	/* matching sockets holding at least one byte */
};

static inline uint64_t skmem_pages(int64_t bytes)
{
	return bytes > 0 ? ((uint64_t)bytes + SKMEM_PAGE - 1) / SKMEM_PAGE : 0;
}

/* Call cb for every TCP socket (AF_INET and AF_INET6, all states) in this
 * network namespace and in each one added with skmem_netns_add(); cb
 * returning non-zero stops.  0 or -errno. */
int skmem_foreach(int (*cb)(const struct skmem_sock *s, void *arg), void *arg);

/* Read the network namespace of process @pid too, from now on (its fd is
 * kept until skmem_netns_clear()).  0 or -errno. */
#define SKMEM_NETNS_MAX 128
int skmem_netns_add(pid_t pid);
void skmem_netns_clear(void);

/* Sockets whose cgroup id is cgid.  0 or -errno. */
int skmem_cgroup(uint64_t cgid, struct skmem_total *out);
/* Sockets whose cgroup id is one of ids[0..n). */
int skmem_cgroups(const uint64_t *ids, size_t n, struct skmem_total *out);
/* The cgroup at path (absolute, or relative to the v2 mount) and all its
 * descendants. */
int skmem_subtree(const char *path, struct skmem_total *out);

/* Ids of path and every cgroup below it; *ids malloc'd.  Count or -1. */
int cg_subtree_ids(const char *path, uint64_t **ids);

/* The `sock` line of path/memory.stat in bytes; -1 if there is none
 * (no memory controller, as on the hybrid host). */
int64_t memcg_sock_bytes(const char *path);

/* The same, read again (up to 3 times, 2.2 s apart) while it is more than
 * tol_pages away from want_pages: memory.stat is flushed only once enough
 * updates are pending (a charge batch per CPU), else by the kernel's periodic
 * flush every 2 s, so a quiet cgroup's `sock` can lag for that long. */
int64_t memcg_sock_bytes_settled(const char *path, int64_t want_pages, int64_t tol_pages);

/* How far tcpbufd's count may be from the kernel's: 2%, at least 8 pages. */
static inline int64_t skmem_tolerance(int64_t pages)
{
	return pages / 50 > 8 ? pages / 50 : 8;
}

/*
 * tcpbufd's usage_pages of @path (`status --json @filter`) and sock_diag's
 * count of its subtree (*@k), read as a pair that can be compared. A load
 * held still moves now and then (a receiver collapses its queue when a
 * zero-window probe comes in: tcpbufd read 1,303 pages and sock_diag 1,216
 * just after, in the 6.1 guest), so a pair counts only if tcpbufd read the
 * same before and after sock_diag; read again, up to @tries pairs 250 ms
 * apart, until such a pair is within skmem_tolerance(). A count that misses
 * charges is off in every quiet pair. The last usage, -1 if status failed.
 */
int64_t usage_against_sock_diag(const char *path, const char *filter, struct skmem_total *k,
				int tries);

#endif /* TCPBUF_TEST_SKMEM_H */
