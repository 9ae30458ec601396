/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The cgroup tables, cgroup_usage and cgroup_limits: their size (MaxCgroups=,
 * fixed when the maps are made) and how full they are, for status, metrics
 * and the room check before a change of limits (capacity.h); likewise the
 * fallback table of sockets without socket storage, and the new cgroups
 * refused for want of room.
 */
#ifndef TCPBUF_TABLES_H
#define TCPBUF_TABLES_H

#include <stdio.h>
#include "capacity.h"

struct bpf_object;

/* The size MaxCgroups= asks for; maps made from now on get it. */
void tables_want(unsigned max_cgroups);
/*
 * Size @obj's cgroup tables before its load: as pinned under @pin_path where
 * a pin exists (an object reusing a pin must match it), else as wanted.
 */
int tables_fit(struct bpf_object *obj, const char *pin_path);
/* Follow the maps behind @usage_fd and @limits_fd; says once if their size
 * is not the one wanted (pins made by an earlier run). */
int tables_init(int usage_fd, int limits_fd, const char *pin_path);
/* The most entries cgroup_limits holds. */
unsigned long tables_limits_max(void);
/* How full the tables are now (a walk of both maps). */
int tables_read(struct capacity *c);
/* MaxCgroups= as reloaded: a change waits for a clean start (logged). */
void tables_reconfigured(unsigned max_cgroups);

/* Sockets without socket storage (bpf/sock_fallback.bpf.h): entries in
 * sock_fallback now, its size, and sockets that found it full so far. */
struct fallback_fill {
	unsigned long entries, max;
	unsigned long long lost;
};
int tables_fallback_read(struct fallback_fill *f);

/* A new cgroup a rule matched was left unlimited for want of room. */
void tables_refused_note(void);
unsigned long tables_refused(void);

void tables_print_json(FILE *f);	/* "tables": {...}, */
void tables_print_table(FILE *f);	/* one line */
void tables_print_metrics(FILE *f);

#endif
