/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Reading a control-socket peer's facts from the kernel, in a way the peer
 * cannot swap: SO_PEERPIDFD names the process that connected, the iterator
 * (bpf/peer_iter.bpf.c) reads it, and the pidfd then shows it had not been
 * reaped meanwhile, so its pid was not another process's. Where that cannot
 * be proven (no SO_PEERPIDFD before 6.5), the peer gets no facts.
 */
#ifndef TCPBUF_PEER_FACTS_H
#define TCPBUF_PEER_FACTS_H

#include "peer.h"

/* Load the iterator and read the daemon's own facts; @mount is the v2 mount.
 * Without the iterator, host peers are read from /proc (same proof). */
int peer_facts_init(const char *mount);
void peer_facts_close(void);
/* AdminGroup= as a gid, (gid_t)-1 for none. */
void peer_facts_admin_group(gid_t gid);
/* Fill @p for the peer of the connected socket @fd; p->facts_err says why not. */
int peer_identify(int fd, struct peer *p);
/* One line for a peer whose facts could not be proven. */
const char *peer_facts_why(int err);

#endif
