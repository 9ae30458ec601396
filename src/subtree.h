/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A cgroup's usage as status shows it: its whole subtree's. BPF charges a
 * socket to its own cgroup and its limited ancestors only (charge.bpf.h),
 * so a limited cgroup's entry has its subtree's usage already and an
 * unlimited one's only its own sockets'; the rest is added here.
 */
#ifndef TCPBUF_SUBTREE_H
#define TCPBUF_SUBTREE_H

#include "status.h"

/*
 * Add to each unlimited row the rows below it that no limited cgroup in
 * between has counted already. @rows sorted by path (status_collect()),
 * each of their ancestors below the root present (subtree_rows_add());
 * rows without a path are left as they are. -ENOMEM or 0.
 */
int subtree_usage_sum(struct status_rows *rows);

/* Add a zero row for every ancestor below the root of a row that has
 * none, so that subtree_usage_sum() has a place to add to; sorts by path. */
int subtree_rows_add(struct status_rows *rows, const struct cgroup_tree *tree);

#endif
