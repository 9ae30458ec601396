/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What `tcpbufctl top` shows, as plain values: rows read from the daemon's
 * status --json, refusals per second from two snapshots, the order of a sort
 * key, each row's bar and which columns fit a terminal's width. No terminal
 * here (top.c draws).
 */
#ifndef TCPBUF_TOP_MODEL_H
#define TCPBUF_TOP_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "container_name.h"

#define TOP_NONE UINT64_MAX		/* a threshold that is not set */

struct top_row {
	char *cgroup;			/* as status names it (top_path_display); "(removed)" for null */
	char container_id[CONTAINER_ID_LEN + 1], pod_uid[POD_UID_MAX + 1];	/* "" = none */
	uint64_t id, usage_pages, sockets;
	uint64_t pressure_pages, max_pages, limit_pages;	/* TOP_NONE when not set */
	char state[16];
	uint64_t failcnt, pressure_events;
	double refusals_per_s;		/* < 0 until two snapshots were seen */
};

struct top_snapshot {
	char mode[16];
	struct top_row *rows;
	size_t n;
};

enum top_key { TOP_BY_SHARE, TOP_BY_USAGE, TOP_BY_REFUSALS, TOP_BY_PRESSURE, TOP_N_KEYS };

/* Read status --json into @out. 0, or -1 with a line in @err naming the field. */
int top_snapshot_parse(const char *json, struct top_snapshot *out, char *err, size_t errlen);
void top_snapshot_free(struct top_snapshot *s);
/* @path with control bytes as \xNN and '\' doubled (malloc'd; NULL: no memory). */
char *top_path_display(const char *path);

/* Refusals per second of each row of @now against the same cgroup id in @prev. */
void top_rates(struct top_snapshot *now, const struct top_snapshot *prev, double seconds);

/* Usage as a share of max (else of the ceiling), 0..; < 0 when it has neither. */
double top_share(const struct top_row *r);

void top_sort(struct top_snapshot *s, enum top_key key);
const char *top_key_name(enum top_key key);
/* "share", "usage", "refusals", "pressure"; false for anything else. */
bool top_key_parse(const char *name, enum top_key *key);
/* The key a keystroke selects (s u f p), or -1. */
int top_key_for_char(int c);

/*
 * The bar of a row, @width cells, NUL-terminated in @buf (width + 1 bytes):
 * the scale is max (else the ceiling); '#' up to usage, '|' at pressure, '.'
 * for the rest. Empty cells when the row has no scale.
 */
void top_bar(const struct top_row *r, char *buf, size_t width);

/* Columns of the terminal view, in the order shown. */
enum top_col { COL_SHARE, COL_USAGE, COL_PRESSURE, COL_MAX, COL_BAR, COL_STATE, COL_REFUSALS,
	       COL_PRESS_ENTRIES, COL_CONTAINER, COL_POD, COL_CGROUP, TOP_N_COLS };

struct top_layout {
	bool shown[TOP_N_COLS];
	unsigned width[TOP_N_COLS];	/* cells; the cgroup column takes what is left */
};

/* Which columns fit @cols cells: the least useful go first as it narrows. */
void top_layout_for(unsigned cols, struct top_layout *l);

#endif
