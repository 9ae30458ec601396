// SPDX-License-Identifier: GPL-2.0
/* bpffs: make sure the pin path lives on a mounted bpffs, and remove pins. */
#include <errno.h>
#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>
#include <linux/magic.h>
#include "bpffs.h"
#include "log.h"
#include "privilege.h"

static int mkdir_p(const char *path, mode_t mode)
{
	char buf[PATH_MAX];
	char *p;

	if (snprintf(buf, sizeof(buf), "%s", path) >= (int)sizeof(buf))
		return -ENAMETOOLONG;
	for (p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, mode) && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(buf, mode) && errno != EEXIST)
		return -errno;
	return 0;
}

static int is_bpffs(const char *path)
{
	struct statfs st;

	if (statfs(path, &st))
		return -errno;
	return st.f_type == BPF_FS_MAGIC;
}

/* The pin path's parent must be bpffs; if /sys/fs/bpf is a bare directory
 * (bpffs not mounted on this host), mount it there. */
int bpffs_ensure(const char *pin_path)
{
	char parent[PATH_MAX];
	char *slash;
	int err;

	if (snprintf(parent, sizeof(parent), "%s", pin_path) >= (int)sizeof(parent))
		return -ENAMETOOLONG;
	slash = strrchr(parent, '/');
	if (!slash || slash == parent)
		return -EINVAL;
	*slash = '\0';

	err = is_bpffs(parent);
	if (err < 0 && err != -ENOENT)
		return err;
	if (err <= 0 && is_bpffs("/sys/fs/bpf") <= 0) {
		sys_admin_effective(true);
		err = mount("bpffs", "/sys/fs/bpf", "bpf", 0, "mode=0700") ? -errno : 0;
		sys_admin_effective(false);
		if (err) {
			log_err("cannot mount bpffs at /sys/fs/bpf: %s", strerror(-err));
			return err;
		}
		log_info("mounted bpffs at /sys/fs/bpf");
	}
	err = mkdir_p(pin_path, 0700);
	if (err)
		return err;
	if (is_bpffs(pin_path) <= 0) {
		log_err("%s is not on a bpffs", pin_path);
		return -ENOTSUP;
	}
	return 0;
}

/* Unpinning a link detaches it once no process holds it: this is how the
 * programs are removed for good. */
int bpffs_remove_tree(const char *dir)
{
	char path[PATH_MAX];
	struct dirent *de;
	DIR *d;
	int err = 0;

	d = opendir(dir);
	if (!d)
		return errno == ENOENT ? 0 : -errno;
	while ((de = readdir(d))) {
		struct stat st;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		if (lstat(path, &st))
			continue;
		if (S_ISDIR(st.st_mode))
			err = bpffs_remove_tree(path) ?: err;
		else if (unlink(path))
			err = -errno;
	}
	closedir(d);
	if (rmdir(dir) && errno != ENOENT)
		err = -errno;
	return err;
}

int bpffs_path(char *buf, size_t len, const char *pin_path, const char *sub, const char *name)
{
	int n = snprintf(buf, len, "%s/%s%s", pin_path, sub, name);

	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}
