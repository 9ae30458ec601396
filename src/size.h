/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Sizes as users write them (INTERFACE.md "Sizes"): a plain integer counts
 * 4 KiB pages, as net.ipv4.tcp_mem does; with a B/K/M/G (or KiB/MiB/GiB)
 * suffix it is bytes, rounded up to whole pages.
 */
#ifndef TCPBUFD_SIZE_H
#define TCPBUFD_SIZE_H

#include <stddef.h>
#include <stdint.h>

#define SIZE_PAGE_BYTES		4096ULL

/*
 * Largest accepted size, in pages: the byte count must still fit in a
 * uint64_t, so "usage_bytes" and friends can be computed without overflow.
 */
#define SIZE_MAX_PAGES		(UINT64_MAX / SIZE_PAGE_BYTES)

/* Buffer size that always holds size_format_human()'s output. */
#define SIZE_HUMAN_LEN		24

/*
 * Parse @s into pages. Accepts "4096" (pages), "64M", "1.5G", "512KiB",
 * "100b" ... Suffix letters are case-insensitive; a fraction is accepted
 * only with a K/M/G suffix (so "16.0M" printed by size_format_human() can be
 * pasted back). Returns 0, -EINVAL for malformed text (empty, sign, junk,
 * trailing garbage) or -ERANGE when the value exceeds SIZE_MAX_PAGES.
 * *pages is written only on success.
 */
int size_parse_pages(const char *s, uint64_t *pages);

/* Format @pages for humans: "512K", "16.0M", "4.0G". Truncates to @len. */
void size_format_human(uint64_t pages, char *buf, size_t len);

#endif /* TCPBUFD_SIZE_H */
