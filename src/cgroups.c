// SPDX-License-Identifier: GPL-2.0
#define _GNU_SOURCE
#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
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

static struct cgroup_tree *scan_tree;	/* nftw has no user pointer */
static size_t scan_cap;

static int scan_one(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	struct cgroup_tree *t = scan_tree;
	const char *rel = path + strlen(t->mount);

	(void)ftw;
	if (type != FTW_D)
		return 0;
	if (t->n == scan_cap) {
		size_t cap = scan_cap ? scan_cap * 2 : 256;
		void *p = realloc(t->entries, cap * sizeof(*t->entries));

		if (!p)
			return -1;
		t->entries = p;
		scan_cap = cap;
	}
	t->entries[t->n].id = st->st_ino;
	t->entries[t->n].path = strdup(*rel ? rel : "/");
	if (!t->entries[t->n].path)
		return -1;
	t->n++;
	return 0;
}

static int entry_cmp(const void *a, const void *b)
{
	const struct cgroup_entry *x = a, *y = b;

	return x->id < y->id ? -1 : x->id > y->id;
}

static void entries_free(struct cgroup_entry *e, size_t n)
{
	while (n--)
		free(e[n].path);
	free(e);
}

int cgroup_tree_scan(struct cgroup_tree *t)
{
	struct cgroup_entry *old = t->entries;
	size_t old_n = t->n;
	int err;

	t->entries = NULL;
	t->n = 0;
	scan_tree = t;
	scan_cap = 0;
	/* FTW_PHYS: cgroupfs has no symlinks, but never follow one if it did. */
	err = nftw(t->mount, scan_one, 64, FTW_PHYS | FTW_MOUNT);
	if (err) {
		err = -(errno ?: ENOMEM);
		entries_free(t->entries, t->n);
		t->entries = old;
		t->n = old_n;
		return err;
	}
	entries_free(old, old_n);
	qsort(t->entries, t->n, sizeof(*t->entries), entry_cmp);
	return 0;
}

void cgroup_tree_free(struct cgroup_tree *t)
{
	entries_free(t->entries, t->n);
	t->entries = NULL;
	t->n = 0;
}

const char *cgroup_tree_path(const struct cgroup_tree *t, uint64_t id)
{
	struct cgroup_entry key = { .id = id }, *e;

	e = bsearch(&key, t->entries, t->n, sizeof(*t->entries), entry_cmp);
	return e ? e->path : NULL;
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
