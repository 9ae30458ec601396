/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the kernel counts of the daemon's own programs (bpf_prog_info), for
 * tests that show a program did or did not run. Link with -lbpf.
 */
#ifndef TCPBUF_TEST_PROGSTATS_H
#define TCPBUF_TEST_PROGSTATS_H

#include <stdint.h>

/* run_cnt of the daemon's linked program named @name (a link pinned under
 * its pin path's links/), or -1 when none is linked. */
int64_t daemon_prog_run_cnt(const char *name);
/* run_cnt of the daemon's iterator (an iter link it holds open, not
 * pinned) of program @name, or -1 when it holds none: one run per object
 * the iterator visits. */
int64_t daemon_iter_run_cnt(const char *name);

#endif
