// SPDX-License-Identifier: GPL-2.0
#define _GNU_SOURCE
#include <errno.h>
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "array.h"
#include "cgroups.h"

/* Never hard-coded: /sys/fs/cgroup on pure v2 hosts, /sys/fs/cgroup/unified
 * on hybrid ones. The first cgroup2 entry of mountinfo wins. */
int cgroup_v2_mount(char *buf, size_t len)
{
	char line[4096], mnt[4096], fstype[64];
	FILE *f = fopen("/proc/self/mountinfo", "re");
	int err = -ENOENT;

	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		char *sep = strstr(line, " - ");

		if (!sep || sscanf(sep, " - %63s", fstype) != 1 || strcmp(fstype, "cgroup2"))
			continue;
		if (sscanf(line, "%*s %*s %*s %*s %4095s", mnt) != 1)
			continue;
		if (strlen(mnt) >= len) {
			err = -ENAMETOOLONG;
			break;
		}
		strcpy(buf, mnt);
		err = 0;
		break;
	}
	fclose(f);
	return err;
}

int cgroup_tree_init(struct cgroup_tree *t)
{
	memset(t, 0, sizeof(*t));
	return cgroup_v2_mount(t->mount, sizeof(t->mount));
}

/* ------------------------------------------------------------------ walk */

struct walk {
	int (*fn)(void *ctx, uint64_t id, const char *rel);
	void *ctx;
	char path[PATH_MAX];	/* relative to the mount */
	size_t len;
};

static bool dot_or_dotdot(const char *name)
{
	return name[0] == '.' && (!name[1] || (name[1] == '.' && !name[2]));
}

/*
 * The subdirectories of w->path, open at @fd (taken). readdir's d_type and
 * d_ino say which entries are directories and their ids (kernfs gives the
 * inode number there), so the dozens of control files of every cgroup cost
 * no stat each, as nftw() made them cost.
 */
static int walk_below(struct walk *w, int fd)
{
	size_t base = w->len;
	struct dirent *de;
	struct stat st;
	int err = 0, sub;
	DIR *d;

	d = fdopendir(fd);
	if (!d) {
		err = -errno;
		close(fd);
		return err;
	}
	for (;;) {
		errno = 0;
		de = readdir(d);
		if (!de) {
			err = errno ? -errno : 0;
			break;
		}
		uint64_t id = de->d_ino;

		if (dot_or_dotdot(de->d_name))
			continue;
		if (de->d_type == DT_UNKNOWN) {
			if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) ||
			    !S_ISDIR(st.st_mode))
				continue;
			id = st.st_ino;
		} else if (de->d_type != DT_DIR) {
			continue;
		}
		if (snprintf(w->path + base, sizeof(w->path) - base, "%s%s", base > 1 ? "/" : "",
			     de->d_name) >= (int)(sizeof(w->path) - base)) {
			err = -ENAMETOOLONG;
			break;
		}
		w->len = strlen(w->path);
		err = w->fn(w->ctx, id, w->path);
		if (!err) {
			sub = openat(dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
			if (sub >= 0)
				err = walk_below(w, sub);
			else if (errno != ENOENT)	/* removed meanwhile: nothing below */
				err = -errno;
		}
		w->len = base;
		w->path[base] = '\0';
		if (err)
			break;
	}
	closedir(d);
	return err;
}

int cgroup_walk(const char *mount, const char *rel,
		int (*fn)(void *ctx, uint64_t id, const char *rel), void *ctx)
{
	struct walk *w = malloc(sizeof(*w));
	char abs[PATH_MAX];
	struct stat st;
	int fd, err;

	if (!w)
		return -ENOMEM;
	*w = (struct walk){ .fn = fn, .ctx = ctx };
	if (snprintf(abs, sizeof(abs), "%s%s", mount, strcmp(rel, "/") ? rel : "") >= (int)sizeof(abs) ||
	    snprintf(w->path, sizeof(w->path), "%s", rel) >= (int)sizeof(w->path)) {
		free(w);
		return -ENAMETOOLONG;
	}
	w->len = strlen(w->path);
	fd = open(abs, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0 || fstat(fd, &st)) {
		err = -errno;
		if (fd >= 0)
			close(fd);
		free(w);
		return err;
	}
	err = fn(ctx, st.st_ino, w->path);
	if (!err)
		err = walk_below(w, fd);
	else
		close(fd);
	free(w);
	return err;
}

/* ------------------------------------------------------------------ tree */

static uint64_t path_hash(const char *s)
{
	uint64_t h = 14695981039346656037ULL;	/* FNV-1a */

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ULL;
	return h;
}

static size_t slot_of(const struct cgroup_tree *t, const char *rel)
{
	size_t mask = t->n_slots - 1, i = path_hash(rel) & mask;

	while (t->by_path[i] && strcmp(t->by_path[i]->path, rel))
		i = (i + 1) & mask;
	return i;
}

/* Keep the table at most half full, so probes stay short. */
static int by_path_reserve(struct cgroup_tree *t, size_t n)
{
	struct cgroup_entry **old = t->by_path;
	size_t old_slots = t->n_slots, slots = t->n_slots ? t->n_slots : 64;

	if (2 * n < old_slots)
		return 0;
	while (2 * n >= slots)
		slots *= 2;
	t->by_path = calloc(slots, sizeof(*t->by_path));
	if (!t->by_path) {
		t->by_path = old;
		return -ENOMEM;
	}
	t->n_slots = slots;
	for (size_t i = 0; i < old_slots; i++)
		if (old[i])
			t->by_path[slot_of(t, old[i]->path)] = old[i];
	free(old);
	return 0;
}

/* Linear probing: close the gap so later entries stay reachable. */
static void by_path_delete(struct cgroup_tree *t, size_t hole)
{
	size_t mask = t->n_slots - 1, i = hole, home;

	t->by_path[hole] = NULL;
	for (;;) {
		i = (i + 1) & mask;
		if (!t->by_path[i])
			return;
		home = path_hash(t->by_path[i]->path) & mask;
		/* Move it into the hole unless its home lies in (hole, i]. */
		if ((i > hole && (home <= hole || home > i)) || (i < hole && home <= hole && home > i)) {
			t->by_path[hole] = t->by_path[i];
			t->by_path[i] = NULL;
			hole = i;
		}
	}
}

/* Index of the first entry with an id >= @id. */
static size_t id_index(const struct cgroup_tree *t, uint64_t id)
{
	size_t lo = 0, hi = t->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (t->entries[mid]->id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

struct cgroup_entry *cgroup_tree_find(const struct cgroup_tree *t, uint64_t id)
{
	size_t i = id_index(t, id);

	return i < t->n && t->entries[i]->id == id ? t->entries[i] : NULL;
}

const char *cgroup_tree_path(const struct cgroup_tree *t, uint64_t id)
{
	struct cgroup_entry *e = cgroup_tree_find(t, id);

	return e ? e->path : NULL;
}

struct cgroup_entry *cgroup_tree_find_path(const struct cgroup_tree *t, const char *rel)
{
	return t->n_slots ? t->by_path[slot_of(t, rel)] : NULL;
}

int cgroup_tree_add(struct cgroup_tree *t, uint64_t id, const char *rel)
{
	size_t len = strlen(rel), i;
	struct cgroup_entry *e;

	if (cgroup_tree_find_path(t, rel))
		return 0;
	if (cgroup_tree_find(t, id))
		return -EEXIST;
	if (by_path_reserve(t, t->n + 1))
		return -ENOMEM;
	if (array_reserve(t->entries, t->cap, t->n, 256))
		return -ENOMEM;
	e = malloc(sizeof(*e) + len + 1);
	if (!e)
		return -ENOMEM;
	e->id = id;
	e->limited = false;
	memcpy(e->path, rel, len + 1);
	/* New cgroups get ever higher ids: this is nearly always an append. */
	i = id_index(t, id);
	memmove(&t->entries[i + 1], &t->entries[i], (t->n - i) * sizeof(*t->entries));
	t->entries[i] = e;
	t->n++;
	t->by_path[slot_of(t, rel)] = e;
	return 1;
}

struct cgroup_entry *cgroup_tree_remove(struct cgroup_tree *t, const char *rel)
{
	struct cgroup_entry *e;
	size_t slot, i;

	if (!t->n_slots)
		return NULL;
	slot = slot_of(t, rel);
	e = t->by_path[slot];
	if (!e)
		return NULL;
	by_path_delete(t, slot);
	i = id_index(t, e->id);
	memmove(&t->entries[i], &t->entries[i + 1], (t->n - i - 1) * sizeof(*t->entries));
	t->n--;
	return e;
}

void cgroup_tree_free(struct cgroup_tree *t)
{
	for (size_t i = 0; i < t->n; i++)
		free(t->entries[i]);
	free(t->entries);
	free(t->by_path);
	t->entries = NULL;
	t->by_path = NULL;
	t->n = t->cap = t->n_slots = 0;
}

struct scan {
	struct cgroup_tree *tree;
	int (*on_dir)(void *ctx, const char *rel);
	void *ctx;
};

static int scan_one(void *ctx, uint64_t id, const char *rel)
{
	struct scan *s = ctx;
	int r = s->on_dir ? s->on_dir(s->ctx, rel) : 0;

	if (r)
		return r;
	r = cgroup_tree_add(s->tree, id, rel);
	return r < 0 ? r : 0;
}

int cgroup_tree_scan(struct cgroup_tree *t, int (*on_dir)(void *ctx, const char *rel), void *ctx)
{
	struct cgroup_tree fresh = {};
	struct scan s = { .tree = &fresh, .on_dir = on_dir, .ctx = ctx };
	int err;

	memcpy(fresh.mount, t->mount, sizeof(fresh.mount));
	err = cgroup_walk(t->mount, "/", scan_one, &s);
	if (err) {
		cgroup_tree_free(&fresh);
		return err;
	}
	/* What limits.c knows of a cgroup survives a rescan. */
	for (size_t i = 0; i < fresh.n; i++) {
		struct cgroup_entry *old = cgroup_tree_find(t, fresh.entries[i]->id);

		if (old && !strcmp(old->path, fresh.entries[i]->path)) {
			fresh.entries[i]->limited = old->limited;
		}
	}
	cgroup_tree_free(t);
	*t = fresh;
	return 0;
}

unsigned cgroup_path_level(const char *path)
{
	unsigned level = 0;

	for (const char *p = path; *p; p++)
		if (*p == '/' && p[1] && p[1] != '/')
			level++;
	return level;
}

int cgroup_resolve(const struct cgroup_tree *t, const char *arg, char *rel, size_t rel_len,
		   uint64_t *id)
{
	size_t mlen = strlen(t->mount);
	char abs[4096];
	struct stat st;
	const char *r = arg;

	if (arg[0] != '/')
		return -EINVAL;
	if (!strncmp(arg, t->mount, mlen) && (arg[mlen] == '/' || !arg[mlen]))
		r = arg + mlen;
	if (snprintf(abs, sizeof(abs), "%s%s", t->mount, r) >= (int)sizeof(abs))
		return -ENAMETOOLONG;
	if (stat(abs, &st))
		return -errno;
	if (!S_ISDIR(st.st_mode))
		return -ENOTDIR;
	if (snprintf(rel, rel_len, "%s", *r ? r : "/") >= (int)rel_len)
		return -ENAMETOOLONG;
	/* "/a/b/" and "/a/b" name the same cgroup. */
	for (size_t n = strlen(rel); n > 1 && rel[n - 1] == '/'; n--)
		rel[n - 1] = '\0';
	*id = st.st_ino;
	return 0;
}
