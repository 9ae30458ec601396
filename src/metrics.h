/* SPDX-License-Identifier: GPL-2.0 */
/* `tcpbufctl metrics`: the status rows in Prometheus' text exposition format. */
#ifndef TCPBUF_METRICS_H
#define TCPBUF_METRICS_H

#include <stdio.h>
#include "status.h"

/*
 * Print every row that still has a cgroup path, plus tcpbufd_build_info and
 * tcpbufd_limited_cgroups: format 0.0.4, as node_exporter's textfile
 * collector reads it. Sizes are bytes (Prometheus' base unit), always whole
 * 4 KiB pages; thresholds that are not set are left out.
 */
void metrics_print(FILE *f, const struct status_rows *rows, const char *mode,
		   unsigned limited_cgroups);

#endif
