// SPDX-License-Identifier: GPL-2.0
/*
 * memory.events of a cgroup: newer kernels count there how often its
 * sockets were throttled (sock_throttled, MEMCG_SOCK_THROTTLED), the
 * kernel's own signal next to tcpbufd's failcnt.
 */
#include "memevents.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int memory_events_parse(const char *text, const char *key, uint64_t *v)
{
	size_t n = strlen(key);

	for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		char *end;
		unsigned long long x;

		if (strncmp(l, key, n) || l[n] != ' ')
			continue;
		errno = 0;
		x = strtoull(l + n + 1, &end, 10);
		if (errno || end == l + n + 1 || (*end && *end != '\n'))
			return -EINVAL;
		*v = x;
		return 0;
	}
	return -ENOENT;
}

int memory_events_read(const char *mount, const char *path, const char *key, uint64_t *v)
{
	char file[PATH_MAX], buf[1024];
	ssize_t len;
	int fd;

	if (snprintf(file, sizeof(file), "%s%s/memory.events", mount, strcmp(path, "/") ? path : "") >=
	    (int)sizeof(file))
		return -ENAMETOOLONG;
	fd = open(file, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -ENOENT;
	len = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (len < 0)
		return -ENOENT;
	buf[len] = '\0';
	return memory_events_parse(buf, key, v);
}
