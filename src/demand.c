// SPDX-License-Identifier: GPL-2.0
/*
 * Programs that run only while some cgroup has limits. Each is pinned as
 * progs/<name> (loaded, not attached); links/<name> is made when the first
 * limit appears and removed with the last. A tracepoint costs its dispatch
 * on every call even when the program returns at once, and these fire per
 * syscall on every TCP socket of the host: with no limit anywhere, the
 * periodic reconcile is all the accounting needs, so nothing runs there.
 * Pins, not daemon memory, hold both, so a restarted daemon and one that is
 * killed leave them as the limits want them.
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "bpffs.h"
#include "demand.h"
#include "log.h"

int demand_pin(const char *pin_path, struct bpf_program *prog, const char *name)
{
	char dir[PATH_MAX], path[PATH_MAX], link[PATH_MAX];
	bool attached;
	int err;

	if (bpffs_path(dir, sizeof(dir), pin_path, "progs/", "") ||
	    bpffs_path(path, sizeof(path), pin_path, "progs/", name) ||
	    bpffs_path(link, sizeof(link), pin_path, "links/", name))
		return -ENAMETOOLONG;
	if (mkdir(dir, 0700) && errno != EEXIST)
		return -errno;
	/* A link left by an older program goes with it (tracing links cannot
	 * be moved to another program); demand_links_set() makes the new one. */
	attached = !access(link, F_OK);
	unlink(link);
	unlink(path);
	err = bpf_program__pin(prog, path);
	if (err) {
		log_err("cannot pin program %s: %s", path, strerror(-err));
		return err;
	}
	return attached ? demand_links_set(pin_path, true) : 0;
}

static int link_make(const char *prog_path, const char *link_path)
{
	int prog_fd, link_fd, err = 0;

	prog_fd = bpf_obj_get(prog_path);
	if (prog_fd < 0)
		return -errno;
	/* tp_btf: the program carries its tracepoint, so no name is given. */
	link_fd = bpf_raw_tracepoint_open(NULL, prog_fd);
	if (link_fd < 0 || bpf_obj_pin(link_fd, link_path))
		err = -errno;
	if (link_fd >= 0)
		close(link_fd);
	close(prog_fd);
	return err;
}

int demand_links_set(const char *pin_path, bool on)
{
	char dir[PATH_MAX], prog[PATH_MAX], link[PATH_MAX];
	struct dirent *de;
	int err = 0;
	DIR *d;

	if (bpffs_path(dir, sizeof(dir), pin_path, "progs/", ""))
		return -ENAMETOOLONG;
	d = opendir(dir);
	if (!d)
		return errno == ENOENT ? 0 : -errno;
	while ((de = readdir(d))) {
		int r = 0;

		if (de->d_name[0] == '.')
			continue;
		if (bpffs_path(prog, sizeof(prog), pin_path, "progs/", de->d_name) ||
		    bpffs_path(link, sizeof(link), pin_path, "links/", de->d_name)) {
			err = err ?: -ENAMETOOLONG;
			continue;
		}
		if (on == !access(link, F_OK))
			continue;
		r = on ? link_make(prog, link) : unlink(link) ? -errno : 0;
		if (r)
			log_err("cannot %s %s: %s", on ? "attach" : "detach", prog, strerror(-r));
		else
			log_debug("%s %s", on ? "attached" : "detached", de->d_name);
		err = err ?: r;
	}
	closedir(d);
	return err;
}
