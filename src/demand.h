/* SPDX-License-Identifier: GPL-2.0 */
#ifndef TCPBUF_DEMAND_H
#define TCPBUF_DEMAND_H

#include <stdbool.h>

struct bpf_program;

/* Pin a loaded tracing program as progs/@name, to be attached only while
 * some cgroup has limits; an attachment of the program it replaces moves
 * to it. */
int demand_pin(const char *pin_path, struct bpf_program *prog, const char *name);

/* Attach (@on) or detach every program pinned under progs/. */
int demand_links_set(const char *pin_path, bool on);

#endif
