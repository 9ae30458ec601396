/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Loads, attaches and pins tcpbufd's BPF programs, or adopts the ones a
 * previous daemon left pinned. The only file that sees libbpf types.
 */
#ifndef TCPBUF_LOADER_H
#define TCPBUF_LOADER_H

#include <stdbool.h>
#include "tcpbuf_maps.h"

struct tcpbuf_bpf;

struct loader_opts {
	const char *pin_path;	/* bpffs directory for maps and links */
	const char *mode;	/* "auto", "exact" or "sampled" */
};

int loader_start(const struct loader_opts *opts, struct tcpbuf_bpf **out);
void loader_close(struct tcpbuf_bpf *bpf);

enum tcpbuf_mode loader_mode(const struct tcpbuf_bpf *bpf);
const char *tcpbuf_mode_name(enum tcpbuf_mode mode);
bool loader_adopted(const struct tcpbuf_bpf *bpf);
int loader_usage_fd(const struct tcpbuf_bpf *bpf);
int loader_limits_fd(const struct tcpbuf_bpf *bpf);

/* Bring every TCP socket's charge up to its footprint now (iter/tcp). */
int loader_reconcile(struct tcpbuf_bpf *bpf);
/* What a status reads made exact: sampled mode reconciles, exact mode gives
 * back the pages sockets keep (bpf/charge.bpf.h) when some socket kept
 * pages since, for a tenant (!@admin) at most once a second
 * (tcpbuf_settle_due()). */
int loader_settle(struct tcpbuf_bpf *bpf, bool admin);

/* The per-socket growth of tcpbuf_near_guard() for the running kernel and
 * @mode (the programs' near_guard_growth): 0, never dormant, before 6.11
 * or with TCPBUF_NO_DORMANT set. */
unsigned loader_guard_growth(enum tcpbuf_mode mode);
/* tcpbuf_near_guard_writers()'s per-socket queue (the programs'
 * near_guard_writer_pages, near_guard_wide_writer_pages): 0 but in sampled
 * mode. */
unsigned loader_guard_writer_pages(enum tcpbuf_mode mode, bool wide);
unsigned loader_bounded_rcvbuf(enum tcpbuf_mode mode);
/* Field @field (from 0) of the /proc/sys file @path, or @fallback. */
long loader_sysctl_long(const char *path, int field, long fallback);

/* Sockets carrying tcpbufd state in socket storage, or negative errno; for
 * a tenant (!@admin), up to a second old. */
long loader_count_sock_charges(struct tcpbuf_bpf *bpf, bool admin);


#endif
