// SPDX-License-Identifier: GPL-2.0
/*
 * iter/tcp passes in every network namespace that holds tracked sockets
 * (netns.h). A namespace is known from BPF (netns_seen: its inode and the
 * cgroup of a socket there) or, at start, from a walk of /proc; each pass
 * opens it anew through a process in it (/proc/PID/ns/net, checked by its
 * inode), or a bind mount under /run/netns or /run/docker/netns (what ip
 * netns, CNI plugins, Podman and Docker make), and forgets it when none is
 * left.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include "array.h"
#include "cgroups.h"
#include "log.h"
#include "netns.h"
#include "privilege.h"
#include "tcpbuf_netns.h"

struct netns_known {
	uint64_t inum;
	uint64_t cgroup_id;	/* a cgroup with a socket there, 0: found in /proc */
	pid_t pid;		/* the process it was last opened through, 0: none */
	bool refused_said;	/* could not be entered, logged */
};

static struct {
	const struct cgroup_tree *tree;
	char scope[4096];
	int self_fd;		/* the daemon's own namespace, to come back to */
	uint64_t self_inum;
	int map_fd;
	bool can_enter;		/* setns() is allowed to us (CAP_SYS_ADMIN) */
	struct netns_known *ns;
	size_t n, cap;
} nss = { .self_fd = -1, .map_fd = -1 };

static const char *const bind_dirs[] = { "/run/netns", "/run/docker/netns" };

/* ------------------------------------------------------------- pure parts */

uint64_t netns_link_inode(const char *link)
{
	char *end;
	unsigned long long v;

	if (strncmp(link, "net:[", 5) || link[5] < '0' || link[5] > '9')
		return 0;
	errno = 0;
	v = strtoull(link + 5, &end, 10);
	if (errno || strcmp(end, "]"))
		return 0;
	return v;
}

bool netns_cgroup_in_scope(const char *proc_cgroup, const char *scope)
{
	size_t n = strlen(scope);
	const char *p;

	while (n > 1 && scope[n - 1] == '/')
		n--;
	for (p = proc_cgroup; p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
		if (strncmp(p, "0::", 3))
			continue;
		p += 3;
		if (n <= 1)
			return *p == '/';
		return !strncmp(p, scope, n) && (p[n] == '/' || p[n] == '\n' || !p[n]);
	}
	return false;
}

/* ----------------------------------------------------------- the known set */

static struct netns_known *known_find(uint64_t inum)
{
	for (size_t i = 0; i < nss.n; i++)
		if (nss.ns[i].inum == inum)
			return &nss.ns[i];
	return NULL;
}

static void known_add(uint64_t inum, uint64_t cgroup_id, pid_t pid)
{
	struct netns_known *k;

	if (inum == nss.self_inum)
		return;
	k = known_find(inum);
	if (k) {
		if (cgroup_id)
			k->cgroup_id = cgroup_id;
		return;
	}
	if (array_reserve(nss.ns, nss.cap, nss.n, 16)) {
		log_warn("network namespace net:[%llu]: no memory to follow it; its sockets are not walked",
			 (unsigned long long)inum);
		return;
	}
	nss.ns[nss.n++] = (struct netns_known){ .inum = inum, .cgroup_id = cgroup_id, .pid = pid };
	log_debug("network namespace net:[%llu] holds tracked sockets", (unsigned long long)inum);
}

/* Namespaces BPF saw since the last pass; their entries go, so the map only
 * ever holds what is new. */
static void take_in_map(void)
{
	uint32_t key, next, *prev = NULL, keys[256];
	struct netns_seen v;
	size_t n = 0;

	if (nss.map_fd < 0)
		return;
	while (n < sizeof(keys) / sizeof(keys[0]) && !bpf_map_get_next_key(nss.map_fd, prev, &next)) {
		key = next;
		prev = &key;
		keys[n++] = key;
	}
	for (size_t i = 0; i < n; i++) {
		if (!bpf_map_lookup_elem(nss.map_fd, &keys[i], &v))
			known_add(keys[i], v.cgroup_id, 0);
		bpf_map_delete_elem(nss.map_fd, &keys[i]);
	}
}

/* ------------------------------------------------------ opening a namespace */

static int open_checked(const char *path, uint64_t inum)
{
	struct stat st;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) || st.st_ino != inum) {
		close(fd);
		return -ESRCH;
	}
	return fd;
}

static int open_pid(pid_t pid, uint64_t inum)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/ns/net", (int)pid);
	return open_checked(path, inum);
}

/* Through a process of the cgroup that had a socket there. */
static int open_by_cgroup(struct netns_known *k)
{
	const char *rel = nss.tree ? cgroup_tree_path(nss.tree, k->cgroup_id) : NULL;
	char path[8192];
	FILE *f;
	int pid, fd = -ESRCH, tries = 64;

	if (!k->cgroup_id || !rel)
		return -ESRCH;
	snprintf(path, sizeof(path), "%s%s/cgroup.procs", nss.tree->mount, strcmp(rel, "/") ? rel : "");
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (fd < 0 && tries-- > 0 && fscanf(f, "%d", &pid) == 1) {
		fd = open_pid(pid, k->inum);
		if (fd >= 0)
			k->pid = pid;
	}
	fclose(f);
	return fd;
}

static int open_in_dir(const char *dir, uint64_t inum)
{
	char path[4096];
	struct dirent *de;
	DIR *d = opendir(dir);
	int fd = -ESRCH;

	if (!d)
		return -ESRCH;
	while (fd < 0 && (de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		fd = open_checked(path, inum);
	}
	closedir(d);
	return fd;
}

/* Call @fn with each process's pid and namespace inode, until it returns non-zero. */
static int proc_walk(int (*fn)(pid_t pid, uint64_t inum, void *arg), void *arg)
{
	char path[300], link[64];
	struct dirent *de;
	DIR *d = opendir("/proc");
	int r = 0;
	ssize_t n;

	if (!d)
		return -errno;
	while (!r && (de = readdir(d))) {
		if (de->d_name[0] < '1' || de->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/ns/net", de->d_name);
		n = readlink(path, link, sizeof(link) - 1);
		if (n <= 0)
			continue;
		link[n] = 0;
		r = fn(atoi(de->d_name), netns_link_inode(link), arg);
	}
	closedir(d);
	return r;
}

struct pid_search {
	struct netns_known *k;
	int fd;
};

static int pid_search_fn(pid_t pid, uint64_t inum, void *arg)
{
	struct pid_search *s = arg;

	if (inum != s->k->inum)
		return 0;
	s->fd = open_pid(pid, inum);
	if (s->fd < 0)
		return 0;
	s->k->pid = pid;
	return 1;
}

/* An fd of @k's namespace, by the cheapest way that still works; -errno
 * when none does (the namespace is gone, or nothing we can open is in it). */
static int ns_open(struct netns_known *k)
{
	struct pid_search s = { .k = k, .fd = -ESRCH };
	int fd = k->pid ? open_pid(k->pid, k->inum) : -ESRCH;

	if (fd >= 0)
		return fd;
	k->pid = 0;
	fd = open_by_cgroup(k);
	for (size_t i = 0; fd < 0 && i < sizeof(bind_dirs) / sizeof(bind_dirs[0]); i++)
		fd = open_in_dir(bind_dirs[i], k->inum);
	if (fd >= 0)
		return fd;
	log_debug("network namespace net:[%llu]: no process of cgroup id %llu in it (%s), nor a bind mount; looking in /proc",
		  (unsigned long long)k->inum, (unsigned long long)k->cgroup_id, strerror(-fd));
	proc_walk(pid_search_fn, &s);
	return s.fd;
}

/* ------------------------------------------------------------------ passes */

int netns_iter_drain(int iter_fd, void *arg)
{
	char buf[256];
	ssize_t n;

	(void)arg;
	while ((n = read(iter_fd, buf, sizeof(buf))) > 0)
		;
	return n < 0 ? -errno : 0;
}

static int iter_here(int link_fd, int (*consume)(int iter_fd, void *arg), void *arg)
{
	int fd = bpf_iter_create(link_fd), r;

	if (fd < 0)
		return -errno;
	r = consume(fd, arg);
	close(fd);
	return r;
}

/* Make the iterator in @k's namespace (*@fd) and come straight back: 1
 * made, 0 not (logged), -errno when the namespace cannot be found. */
static int iter_in(struct netns_known *k, int link_fd, int *fd)
{
	int nsfd = ns_open(k), err;

	if (nsfd < 0)
		return nsfd;
	sys_admin_effective(true);
	if (setns(nsfd, CLONE_NEWNET)) {
		err = -errno;
		sys_admin_effective(false);
		close(nsfd);
		if (!k->refused_said)
			log_warn("cannot enter network namespace net:[%llu] (cgroup id %llu): %s; its sockets are not counted, adopted or swept (tcpbufd needs CAP_SYS_ADMIN for it)",
				 (unsigned long long)k->inum, (unsigned long long)k->cgroup_id,
				 strerror(-err));
		k->refused_said = true;
		return 0;
	}
	*fd = bpf_iter_create(link_fd);
	err = *fd < 0 ? -errno : 0;
	close(nsfd);
	if (setns(nss.self_fd, CLONE_NEWNET)) {
		/* Every later socket and pass would be in the wrong place. */
		log_err("cannot return to the daemon's network namespace: %s", strerror(errno));
		abort();
	}
	sys_admin_effective(false);
	if (err) {
		log_warn("network namespace net:[%llu]: cannot make an iterator: %s",
			 (unsigned long long)k->inum, strerror(-err));
		return 0;
	}
	return 1;
}

static bool listed(uint64_t inum, const uint64_t *inums, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (inums[i] == inum)
			return true;
	return false;
}

int netns_iter_each(int link_fd, int (*consume)(int iter_fd, void *arg), void *arg)
{
	return netns_iter_some(link_fd, NULL, 0, consume, arg);
}

int netns_iter_some(int link_fd, const uint64_t *inums, size_t n_inums,
		    int (*consume)(int iter_fd, void *arg), void *arg)
{
	int err = 0, fd, r;
	size_t i = 0;

	if (!inums || listed(nss.self_inum, inums, n_inums) || nss.self_fd < 0)
		err = iter_here(link_fd, consume, arg);

	if (nss.self_fd < 0)
		return err;
	take_in_map();
	if (!nss.can_enter)
		return err;
	while (i < nss.n) {
		if (inums && !listed(nss.ns[i].inum, inums, n_inums)) {
			i++;
			continue;
		}
		r = iter_in(&nss.ns[i], link_fd, &fd);
		if (r < 0) {
			log_debug("network namespace net:[%llu] is gone", (unsigned long long)nss.ns[i].inum);
			nss.ns[i] = nss.ns[--nss.n];
			continue;
		}
		i++;
		if (!r)
			continue;
		r = consume(fd, arg);
		close(fd);
		if (r && !err)
			err = r;
	}
	return err;
}

size_t netns_count(void)
{
	return nss.n;
}

/* ------------------------------------------------------------ start, stop */

static int scope_fn(pid_t pid, uint64_t inum, void *arg)
{
	char path[64], buf[4096];
	ssize_t n;
	int fd;

	(void)arg;
	if (!inum || inum == nss.self_inum || known_find(inum))
		return 0;
	snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = 0;
	if (netns_cgroup_in_scope(buf, nss.scope))
		known_add(inum, 0, pid);
	return 0;
}

int netns_init(const struct cgroup_tree *tree, const char *scope)
{
	struct stat st;

	nss.tree = tree;
	snprintf(nss.scope, sizeof(nss.scope), "%s", scope && *scope ? scope : "/");
	nss.self_fd = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
	if (nss.self_fd < 0 || fstat(nss.self_fd, &st)) {
		int err = -errno;

		log_warn("cannot open the daemon's network namespace: %s; only its own sockets are walked",
			 strerror(-err));
		if (nss.self_fd >= 0)
			close(nss.self_fd);
		nss.self_fd = -1;
		return err;
	}
	nss.self_inum = st.st_ino;
	/* Entering even our own namespace takes what entering another does. */
	sys_admin_effective(true);
	nss.can_enter = !setns(nss.self_fd, CLONE_NEWNET);
	sys_admin_effective(false);
	if (!nss.can_enter)
		log_warn("cannot enter network namespaces: %s; sockets in other network namespaces than tcpbufd's (containers') are not counted, adopted or swept: grant CAP_SYS_ADMIN",
			 strerror(errno));
	proc_walk(scope_fn, NULL);
	if (nss.n)
		log_info("%zu other network namespaces hold processes of %s", nss.n, nss.scope);
	return 0;
}

void netns_set_map(int map_fd)
{
	nss.map_fd = map_fd;
}

void netns_close(void)
{
	if (nss.self_fd >= 0)
		close(nss.self_fd);
	nss.self_fd = -1;
	nss.map_fd = -1;
	free(nss.ns);
	nss.ns = NULL;
	nss.n = nss.cap = 0;
}
