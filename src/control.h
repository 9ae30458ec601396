/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The control socket: one request per connection (see request.h for the
 * wire format), answered with an exit-status line and a body.
 */
#ifndef TCPBUF_CONTROL_H
#define TCPBUF_CONTROL_H

#include <stdio.h>
#include <sys/types.h>
#include "peer.h"
#include "request.h"

/* Runs one parsed request; writes output to @out or one line to @err.
 * Returns the exit status for the client: 0 done, 1 refused/failed, 2 usage. */
typedef int (*control_handler)(void *ctx, const struct request *req, const struct peer *peer,
			       FILE *out, char *err, size_t errlen);

/*
 * Listen on @path. Returns the fd to poll for input (an epoll set of the
 * socket, its connections and their deadlines; one per process) or -errno.
 */
int control_listen(const char *path, unsigned mode, const char *group);
void control_close(int fd, const char *path);
/* Serve what is ready on @fd without blocking: accept, read, answer, cut off. */
int control_serve(int fd, control_handler handler, void *ctx);

#endif
