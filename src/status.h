/* SPDX-License-Identifier: GPL-2.0 */
/* Rows of `tcpbufctl status`: one per cgroup that holds memory or has limits. */
#ifndef TCPBUF_STATUS_H
#define TCPBUF_STATUS_H

#include <stdbool.h>
#include <stdio.h>
#include <stdint.h>
#include "cgroups.h"
#include "enforce.h"
#include "tcpbuf_maps.h"

struct status_row {
	uint64_t id;
	const char *path;		/* NULL when the cgroup is gone; as the caller names it */
	const char *host_path;		/* the same, relative to the daemon's mount */
	bool has_usage, has_limits;
	unsigned char source;		/* enum limit_source */
	struct cgroup_usage usage;
	struct cgroup_limits limits;
	int64_t sock_throttled;		/* memory.events sock_throttled of a limited cgroup; -1: none */
	enum enforce_ingress ingress;	/* set by the caller (enforce_ingress_of()) */
};

struct status_rows {
	struct status_row *rows;
	size_t n;
};

int status_collect(int usage_fd, int limits_fd, const struct cgroup_tree *tree,
		   struct status_rows *out);
void status_rows_free(struct status_rows *rows);
/* Keep only the rows in the subtrees of @filters (relative paths); n == 0 keeps all. */
void status_filter(struct status_rows *rows, char **filters, size_t n);

/* @sock_entries: sockets holding tcpbufd state; negative = unknown (printed as null). */
void status_print_json(FILE *f, const struct status_rows *rows, const char *mode,
		       long sock_entries);
void status_print_table(FILE *f, const struct status_rows *rows, const char *mode);

/* Remove usage entries of cgroups that no longer exist and hold nothing. */
int status_prune(int usage_fd, const struct cgroup_tree *tree, size_t *pruned);
/* The same for one removed cgroup: 1 if it has no entry (now), 0 if it still
 * holds pages, or -errno. */
int status_forget(int usage_fd, uint64_t id);

const char *tcpbuf_state_name(__u32 state);
/* "config", "default", "runtime"; NULL for none. */
const char *limit_source_name(unsigned char source);

#endif
