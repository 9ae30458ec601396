// SPDX-License-Identifier: GPL-2.0
/* The host's TCP memory and net.ipv4.tcp_mem, from procfs (host_tcp_mem.h). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "host_tcp_mem.h"

static bool parse_u64(const char **s, uint64_t *v)
{
	char *end;

	while (**s == ' ' || **s == '\t')
		(*s)++;
	if (**s < '0' || **s > '9')
		return false;
	errno = 0;
	*v = strtoull(*s, &end, 10);
	if (errno)
		return false;
	*s = end;
	return true;
}

bool host_tcp_mem_parse_sockstat(const char *text, uint64_t *pages)
{
	const char *line = text;

	for (; line && *line; line = strchr(line, '\n'), line = line ? line + 1 : NULL) {
		const char *mem;
		size_t len = strcspn(line, "\n");

		if (strncmp(line, "TCP: ", 5))
			continue;
		/* "TCP: inuse 5 orphan 0 tw 2 alloc 7 mem 1": word "mem", then a number. */
		for (mem = line; (mem = strstr(mem, " mem ")) && mem < line + len; mem++) {
			const char *s = mem + 5;

			if (parse_u64(&s, pages) && (*s == '\0' || *s == '\n' || *s == ' '))
				return true;
		}
		return false;
	}
	return false;
}

bool host_tcp_mem_parse_limits(const char *text, struct host_tcp_mem *m)
{
	const char *s = text;
	uint64_t v[3];

	for (int i = 0; i < 3; i++)
		if (!parse_u64(&s, &v[i]))
			return false;
	while (*s == ' ' || *s == '\t' || *s == '\n')
		s++;
	if (*s)
		return false;
	m->min_pages = v[0];
	m->pressure_pages = v[1];
	m->max_pages = v[2];
	return true;
}

/* A small procfs file, NUL-terminated; false if it cannot be read whole. */
static bool read_small(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	size_t got = 0;
	ssize_t n = 1;

	if (fd < 0)
		return false;
	while (got < len - 1 && (n = read(fd, buf + got, len - 1 - got)) > 0)
		got += (size_t)n;
	close(fd);
	buf[got] = '\0';
	return n >= 0;
}

void host_tcp_mem_read(struct host_tcp_mem *m)
{
	char buf[4096];

	memset(m, 0, sizeof(*m));
	m->has_usage = read_small("/proc/net/sockstat", buf, sizeof(buf)) &&
		       host_tcp_mem_parse_sockstat(buf, &m->usage_pages);
	m->has_limits = read_small("/proc/sys/net/ipv4/tcp_mem", buf, sizeof(buf)) &&
			host_tcp_mem_parse_limits(buf, m);
}
