// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <sys/inotify.h>
#include <unistd.h>
#include "cgwatch.h"

int cgwatch_open(void)
{
	int fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);

	return fd < 0 ? -errno : fd;
}

int cgwatch_sync(int fd, const struct cgroup_tree *tree)
{
	static int highest_wd;
	char path[PATH_MAX];
	int added = 0, wd;
	size_t i;

	/* Adding a watch that exists is a cheap no-op returning its old
	 * descriptor; new watches get ever higher ones, which is how we tell. */
	for (i = 0; i < tree->n; i++) {
		snprintf(path, sizeof(path), "%s%s", tree->mount,
			 tree->entries[i].path[1] ? tree->entries[i].path : "");
		wd = inotify_add_watch(fd, path, IN_CREATE | IN_DELETE | IN_ONLYDIR);
		if (wd < 0 && errno != ENOENT)
			return -errno;
		if (wd > highest_wd) {
			highest_wd = wd;
			added++;
		}
	}
	return added;
}

int cgwatch_drain(int fd)
{
	char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
	int changed = 0;
	ssize_t n;

	while ((n = read(fd, buf, sizeof(buf))) > 0) {
		const char *p;

		for (p = buf; p < buf + n;) {
			const struct inotify_event *ev = (const void *)p;

			if (ev->mask & IN_ISDIR && ev->mask & (IN_CREATE | IN_DELETE))
				changed = 1;
			p += sizeof(*ev) + ev->len;
		}
	}
	if (n < 0 && errno != EAGAIN)
		return -errno;
	return changed;
}
