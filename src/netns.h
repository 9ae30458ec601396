/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The network namespaces that hold sockets of tracked cgroups, and running
 * an iter/tcp pass in each: an iterator walks the namespace of the task that
 * makes it, so the daemon enters each namespace just long enough to make
 * one. No namespace fd is kept between passes: a dead namespace is never
 * held alive, and its entry goes at the next pass that cannot open it.
 */
#ifndef TCPBUF_NETNS_H_DAEMON
#define TCPBUF_NETNS_H_DAEMON

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct cgroup_tree;

/* The daemon's own namespace, and the others where processes of @scope's
 * subtree (mount-relative, "/" for all) run now: a walk of /proc, once.
 * CAP_SYS_ADMIN leaves the effective set here (privilege.h). */
int netns_init(const struct cgroup_tree *tree, const char *scope);
/* BPF's netns_seen map (bpf/netns.bpf.h): namespaces seen since, taken in
 * at every pass. -1: none (yet). */
void netns_set_map(int map_fd);
void netns_close(void);

/* Make an iterator of @link_fd in every namespace (the daemon's own first)
 * and give it to @consume, which reads it; the fd is closed after. Returns
 * 0 or the first error of the daemon's own namespace or of @consume; a
 * namespace that cannot be entered is logged once. */
int netns_iter_each(int link_fd, int (*consume)(int iter_fd, void *arg), void *arg);
/* The same in those of the @n namespaces @inums it knows (NULL: all). */
int netns_iter_some(int link_fd, const uint64_t *inums, size_t n,
		    int (*consume)(int iter_fd, void *arg), void *arg);

/* A @consume for passes that write nothing: read the iterator to its end. */
int netns_iter_drain(int iter_fd, void *arg);

/* Namespaces other than the daemon's known now. */
size_t netns_count(void);

/* Pure: the inode of a namespace link's text ("net:[4026531840]"), 0 if
 * it is not one. */
uint64_t netns_link_inode(const char *link);
/* Pure: whether /proc/PID/cgroup's text puts the process in @scope's
 * subtree (its "0::" line; @scope mount-relative, "/" for all). */
bool netns_cgroup_in_scope(const char *proc_cgroup, const char *scope);

#endif
