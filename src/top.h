/* SPDX-License-Identifier: GPL-2.0 */
/* `tcpbufctl top`: the cgroups nearest their limits, refreshed in the terminal. */
#ifndef TCPBUF_TOP_H
#define TCPBUF_TOP_H

#include <stdio.h>

#define TOP_USAGE "top [OPTIONS] [CGROUP...]"
#define TOP_HELP \
	"One row per tracked cgroup (or the given cgroups and their descendants),\n" \
	"refreshed every second: usage as a share of max, usage, the pressure and\n" \
	"max thresholds, a bar (usage '#' against pressure '|' up to max), state,\n" \
	"refusals per second (failcnt), times it entered pressure, the container id\n" \
	"and pod UID its path names; above them the host's TCP memory against\n" \
	"net.ipv4.tcp_mem. Keys: s share, u usage, f refusals/s, p pressure\n" \
	"entries (sort order), q quit.\n" \
	"  -b       batch: plain lines, one snapshot per interval (also when stdout\n" \
	"           is not a terminal); sizes in pages\n" \
	"  -n N     stop after N snapshots\n" \
	"  -d SEC   seconds between snapshots (default 1, at least 0.1)\n" \
	"  -o KEY   sort by share (default), usage, refusals or pressure\n"

int top_main(const char *socket, int argc, char **argv);

/* In tcpbufctl.c: one request to the daemon (words as on the command line),
 * the answer's body to @out, errors on stderr; returns the exit status. */
int tcpbufctl_call(const char *socket, int argc, char **argv, FILE *out);

#endif
