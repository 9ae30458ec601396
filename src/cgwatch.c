// SPDX-License-Identifier: GPL-2.0
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <unistd.h>
#include "array.h"
#include "cgwatch.h"

#define WATCH_MASK (IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_ONLYDIR | IN_DONT_FOLLOW)

/* An event names its directory by watch descriptor only: keep their paths. */
struct watch {
	int wd;
	char *path;
};

struct cgwatch {
	int fd;
	char mount[PATH_MAX];
	struct watch *watches;	/* sorted by wd */
	size_t n, cap;
};

int cgwatch_open(const char *mount, struct cgwatch **out)
{
	struct cgwatch *w = calloc(1, sizeof(*w));

	if (!w)
		return -ENOMEM;
	snprintf(w->mount, sizeof(w->mount), "%s", mount);
	w->fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	if (w->fd < 0) {
		int err = -errno;

		free(w);
		return err;
	}
	*out = w;
	return 0;
}

void cgwatch_close(struct cgwatch *w)
{
	if (!w)
		return;
	close(w->fd);
	for (size_t i = 0; i < w->n; i++)
		free(w->watches[i].path);
	free(w->watches);
	free(w);
}

int cgwatch_fd(const struct cgwatch *w)
{
	return w->fd;
}

/* Index of the first watch with a wd >= @wd. */
static size_t wd_index(const struct cgwatch *w, int wd)
{
	size_t lo = 0, hi = w->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (w->watches[mid].wd < wd)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static const char *wd_path(const struct cgwatch *w, int wd)
{
	size_t i = wd_index(w, wd);

	return i < w->n && w->watches[i].wd == wd ? w->watches[i].path : NULL;
}

int cgwatch_add(struct cgwatch *w, const char *rel)
{
	char abs[PATH_MAX], *path;
	size_t i;
	int wd;

	if (snprintf(abs, sizeof(abs), "%s%s", w->mount, strcmp(rel, "/") ? rel : "") >=
	    (int)sizeof(abs))
		return -ENAMETOOLONG;
	/* Watching a directory again returns the descriptor it has. */
	wd = inotify_add_watch(w->fd, abs, WATCH_MASK);
	if (wd < 0)
		return -errno;
	i = wd_index(w, wd);
	if (i < w->n && w->watches[i].wd == wd) {
		if (!strcmp(w->watches[i].path, rel))
			return 0;
		path = strdup(rel);
		if (!path)
			return -ENOMEM;
		free(w->watches[i].path);
		w->watches[i].path = path;
		return 0;
	}
	if (array_reserve(w->watches, w->cap, w->n, 256))
		return -ENOMEM;
	path = strdup(rel);
	if (!path)
		return -ENOMEM;
	/* Descriptors grow with each new watch: nearly always an append. */
	memmove(&w->watches[i + 1], &w->watches[i], (w->n - i) * sizeof(*w->watches));
	w->watches[i] = (struct watch){ .wd = wd, .path = path };
	w->n++;
	return 0;
}

/* The kernel dropped the watch (its directory is gone). */
static void watch_forget(struct cgwatch *w, int wd)
{
	size_t i = wd_index(w, wd);

	if (i == w->n || w->watches[i].wd != wd)
		return;
	free(w->watches[i].path);
	memmove(&w->watches[i], &w->watches[i + 1], (w->n - i - 1) * sizeof(*w->watches));
	w->n--;
}

static int report(struct cgwatch *w, const struct inotify_event *ev,
		  void (*fn)(void *ctx, enum cgwatch_change change, const char *rel), void *ctx)
{
	enum cgwatch_change change;
	char rel[PATH_MAX];
	const char *dir;

	if (ev->mask & IN_Q_OVERFLOW) {
		fn(ctx, CGWATCH_LOST, "/");
		return 1;
	}
	if (ev->mask & IN_IGNORED) {
		watch_forget(w, ev->wd);
		return 0;
	}
	if (!(ev->mask & IN_ISDIR) || !ev->len)
		return 0;
	if (ev->mask & (IN_MOVED_FROM | IN_MOVED_TO))
		change = CGWATCH_LOST;	/* a renamed cgroup takes its subtree along */
	else if (ev->mask & IN_CREATE)
		change = CGWATCH_CREATED;
	else if (ev->mask & IN_DELETE)
		change = CGWATCH_REMOVED;
	else
		return 0;
	dir = wd_path(w, ev->wd);
	if (!dir)
		return 0;	/* a directory whose removal is being reported */
	if (snprintf(rel, sizeof(rel), "%s/%s", strcmp(dir, "/") ? dir : "", ev->name) >=
	    (int)sizeof(rel))
		change = CGWATCH_LOST;
	fn(ctx, change, rel);
	return 1;
}

int cgwatch_read(struct cgwatch *w,
		 void (*fn)(void *ctx, enum cgwatch_change change, const char *rel), void *ctx)
{
	char buf[8192] __attribute__((aligned(__alignof__(struct inotify_event))));
	int reported = 0;
	ssize_t n;

	while ((n = read(w->fd, buf, sizeof(buf))) > 0) {
		const char *p;

		for (p = buf; p < buf + n;) {
			const struct inotify_event *ev = (const void *)p;

			reported += report(w, ev, fn, ctx);
			p += sizeof(*ev) + ev->len;
		}
	}
	if (n < 0 && errno != EAGAIN)
		return -errno;
	return reported;
}
