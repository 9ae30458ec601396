/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The control protocol between tcpbufctl and tcpbufd.
 *
 * The client connects to the SOCK_STREAM unix socket, sends its command
 * line as words each terminated by '\n' ("status\n--json\n/demo/a\n"),
 * then shutdown(SHUT_WR). The daemon answers with one line holding the exit
 * status digit (0 done, 1 refused or failed, 2 usage error), then the body
 * (the command's output, or for errors one line saying why), then closes.
 *
 * request_parse() is pure (no I/O, no globals, no aborts) so the daemon can
 * trust it with anything a socket peer sends, and so it can be fuzzed.
 */
#ifndef TCPBUFD_REQUEST_H
#define TCPBUFD_REQUEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Largest request the daemon reads; a status of 1000 cgroups fits easily. */
#define REQUEST_MAX_BYTES	65536

enum request_cmd {
	REQ_STATUS,
	REQ_SET_LIMIT,
	REQ_SET,
	REQ_UNSET,
	REQ_RELOAD,
	REQ_METRICS,
};

/* Exit status digits of the reply's first line. */
enum request_status {
	REQUEST_OK	= 0,	/* done */
	REQUEST_FAILED	= 1,	/* refused or failed */
	REQUEST_USAGE	= 2,	/* usage error: request_parse() said no */
};

struct request {
	enum request_cmd cmd;
	bool json;		/* status --json */
	bool runtime;		/* set-limit/unset --runtime: a limit that lives with its cgroup */
	size_t n_cgroups;	/* status: 0 = all tracked; others: exactly 1 */
	char **cgroups;		/* as sent: start with '/', no "..", < PATH_MAX */
	uint64_t limit_pages;	/* set-limit SIZE, >= 1 */
	uint64_t min_pages, pressure_pages, max_pages;	/* set, 1 <= MIN <= PRESSURE <= MAX;
							 * set-limit --runtime: optional (0), <= SIZE */
};

/*
 * Parse and validate one request of @len bytes (not NUL-terminated). The
 * last word must end in '\n' too: a request cut short by a dying client is
 * refused, never run. Returns 0, -EINVAL with a one-line
 * reason in @err naming the field ("set: PRESSURE: bad size 'x'"), or
 * -ENOMEM. On error *req holds nothing that needs request_free().
 * The ceiling check of "set" needs the configuration: that is the daemon's.
 */
int request_parse(const char *buf, size_t len, struct request *req,
		  char *err, size_t errlen);

/* Free what request_parse() allocated; safe on a zeroed or freed request. */
void request_free(struct request *req);

/*
 * Encode a command line for the wire: @argv[0] is the command ("status"),
 * the rest its arguments. Returns the number of bytes written to @buf
 * (not NUL-terminated), -EINVAL if a word holds '\n' (it could not be told
 * from a word separator), or -EMSGSIZE if it does not fit @len or REQUEST_MAX_BYTES.
 */
int request_encode(int argc, char **argv, char *buf, size_t len);

/* "status", "set-limit" ... */
const char *request_cmd_name(enum request_cmd cmd);

/* Synopsis of a command ("set CGROUP MIN PRESSURE MAX"), NULL if no such command. */
const char *request_cmd_usage(const char *name);

#endif /* TCPBUFD_REQUEST_H */
