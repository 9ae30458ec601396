/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Watch the cgroup v2 tree for directories coming and going, so a container
 * created a moment ago gets its limits without waiting for the next poll,
 * and the daemon's work follows the changes instead of the tree's size.
 */
#ifndef TCPBUF_CGWATCH_H
#define TCPBUF_CGWATCH_H

#include "cgroups.h"

struct cgwatch;

enum cgwatch_change {
	CGWATCH_CREATED,	/* a directory appeared (its own subdirectories are not reported) */
	CGWATCH_REMOVED,	/* a directory went away */
	CGWATCH_LOST,		/* events were lost (queue overflow, a rename): read the tree anew */
};

/* An inotify instance for the tree mounted at @mount, or negative errno. */
int cgwatch_open(const char *mount, struct cgwatch **out);
void cgwatch_close(struct cgwatch *w);
/* Readable (EPOLLIN) when changes are pending. */
int cgwatch_fd(const struct cgwatch *w);
/* Watch the directory @rel (relative to the mount); watching it again is
 * harmless. 0 or negative errno (ENOENT: it is gone already). */
int cgwatch_add(struct cgwatch *w, const char *rel);
/* Read the pending changes, calling @fn for each in order (@rel relative to
 * the mount). Returns how many were reported, or negative errno. */
int cgwatch_read(struct cgwatch *w,
		 void (*fn)(void *ctx, enum cgwatch_change change, const char *rel), void *ctx);

#endif
