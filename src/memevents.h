/* SPDX-License-Identifier: GPL-2.0 */
/* A cgroup's memory.events counters (the kernel's own, beside tcpbufd's). */
#ifndef TCPBUF_MEMEVENTS_H
#define TCPBUF_MEMEVENTS_H

#include <stddef.h>
#include <stdint.h>

/* The value of the line "@key N" in memory.events text: 0, or -ENOENT. */
int memory_events_parse(const char *text, const char *key, uint64_t *v);
/* The same from <@mount><@path>/memory.events: -ENOENT also when the file is
 * missing (no memory controller there) or the kernel has no such counter. */
int memory_events_read(const char *mount, const char *path, const char *key, uint64_t *v);

#endif
