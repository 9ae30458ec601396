/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The host's TCP buffer memory against net.ipv4.tcp_mem: "TCP: ... mem N"
 * of /proc/net/sockstat (pages, the whole host's: the kernel's counter is
 * not per network namespace) and the three pages counts of
 * /proc/sys/net/ipv4/tcp_mem (visible in the initial network namespace only).
 */
#ifndef TCPBUF_HOST_TCP_MEM_H
#define TCPBUF_HOST_TCP_MEM_H

#include <stdbool.h>
#include <stdint.h>

struct host_tcp_mem {
	bool has_usage, has_limits;
	uint64_t usage_pages;				/* sockstat's TCP mem */
	uint64_t min_pages, pressure_pages, max_pages;	/* tcp_mem */
};

/* The "mem" of sockstat's "TCP:" line; false if @text has none. */
bool host_tcp_mem_parse_sockstat(const char *text, uint64_t *pages);
/* "min pressure max" as tcp_mem reads; false unless exactly three numbers. */
bool host_tcp_mem_parse_limits(const char *text, struct host_tcp_mem *m);
/* Both files; what cannot be read is left out (has_usage/has_limits false). */
void host_tcp_mem_read(struct host_tcp_mem *m);

#endif
