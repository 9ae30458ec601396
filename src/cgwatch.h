/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Watch the cgroup v2 tree for directories coming and going, so a container
 * created a moment ago gets its limits without waiting for the next poll.
 */
#ifndef TCPBUF_CGWATCH_H
#define TCPBUF_CGWATCH_H

#include "cgroups.h"

/* An inotify fd for the epoll loop, or negative errno. */
int cgwatch_open(void);
/* Watch every directory of the (freshly scanned) tree; watches of removed
 * directories vanish by themselves. Returns how many directories are newly
 * watched, or negative errno. */
int cgwatch_sync(int fd, const struct cgroup_tree *tree);
/* Drain pending events; 1 if the tree changed, 0 if not, negative errno. */
int cgwatch_drain(int fd);

#endif
