// SPDX-License-Identifier: GPL-2.0
/* The independent oracle: see skmem.h. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "skmem.h"
#include "enforce_util.h"
#include "harness.h"

#include <dirent.h>
#include <inttypes.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <limits.h>
#include <stddef.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/sock_diag.h>

#define RECV_BUF (64 * 1024)

int skmem_storage_fd = -1;
size_t skmem_storage_off;

static void parse_attrs(struct skmem_sock *s, struct nlmsghdr *h, struct inet_diag_msg *m)
{
	int len = (int)h->nlmsg_len - (int)NLMSG_LENGTH(sizeof(*m));
	struct rtattr *a = (struct rtattr *)(m + 1);

	for (; RTA_OK(a, len); a = RTA_NEXT(a, len)) {
		switch (a->rta_type & ~NLA_F_NESTED) {
		case INET_DIAG_SKMEMINFO: {
			uint32_t v[SK_MEMINFO_VARS] = { 0 };
			size_t n = RTA_PAYLOAD(a);

			if (n > sizeof(v))
				n = sizeof(v);
			memcpy(v, RTA_DATA(a), n);
			s->has_mem = 1;
			s->rmem_alloc = v[SK_MEMINFO_RMEM_ALLOC];
			s->rcvbuf = v[SK_MEMINFO_RCVBUF];
			s->wmem_alloc = v[SK_MEMINFO_WMEM_ALLOC];
			s->sndbuf = v[SK_MEMINFO_SNDBUF];
			s->fwd_alloc = (int32_t)v[SK_MEMINFO_FWD_ALLOC];
			s->wmem_queued = v[SK_MEMINFO_WMEM_QUEUED];
			s->backlog = v[SK_MEMINFO_BACKLOG];
			s->drops = v[SK_MEMINFO_DROPS];
			break;
		}
		case INET_DIAG_SK_BPF_STORAGES: {
			int l1 = RTA_PAYLOAD(a);
			struct rtattr *st = RTA_DATA(a);

			for (; RTA_OK(st, l1); st = RTA_NEXT(st, l1)) {
				int l2 = RTA_PAYLOAD(st);
				struct rtattr *f = RTA_DATA(st);

				for (; RTA_OK(f, l2); f = RTA_NEXT(f, l2)) {
					if ((f->rta_type & ~NLA_F_NESTED) != SK_DIAG_BPF_STORAGE_MAP_VALUE ||
					    (size_t)RTA_PAYLOAD(f) < skmem_storage_off + sizeof(uint32_t))
						continue;
					memcpy(&s->storage_u32, (char *)RTA_DATA(f) + skmem_storage_off,
					       sizeof(uint32_t));
					s->has_storage = 1;
				}
			}
			break;
		}
		case INET_DIAG_CGROUP_ID:
			if (RTA_PAYLOAD(a) >= (int)sizeof(uint64_t))
				memcpy(&s->cgid, RTA_DATA(a), sizeof(uint64_t));
			break;
		}
	}
	s->bytes = (int64_t)s->rmem_alloc + s->fwd_alloc + (int64_t)s->wmem_queued;
}

static int dump_family(int fd, int family, uint32_t seq,
		       int (*cb)(const struct skmem_sock *, void *), void *arg, int *stop)
{
	struct {
		struct nlmsghdr nlh;
		struct inet_diag_req_v2 r;
		struct rtattr storages;		/* INET_DIAG_REQ_SK_BPF_STORAGES */
		struct rtattr map_fd;		/* SK_DIAG_BPF_STORAGE_REQ_MAP_FD */
		uint32_t fd;
	} req;
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK };
	char *buf;
	int ret = 0, done = 0;

	memset(&req, 0, sizeof(req));
	req.nlh.nlmsg_len = offsetof(typeof(req), storages);
	if (skmem_storage_fd >= 0) {
		req.nlh.nlmsg_len = sizeof(req);
		req.storages.rta_type = INET_DIAG_REQ_SK_BPF_STORAGES | NLA_F_NESTED;
		req.storages.rta_len = sizeof(req.storages) + sizeof(req.map_fd) + sizeof(req.fd);
		req.map_fd.rta_type = SK_DIAG_BPF_STORAGE_REQ_MAP_FD;
		req.map_fd.rta_len = sizeof(req.map_fd) + sizeof(req.fd);
		req.fd = skmem_storage_fd;
	}
	req.nlh.nlmsg_type = SOCK_DIAG_BY_FAMILY;
	req.nlh.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
	req.nlh.nlmsg_seq = seq;
	req.r.sdiag_family = (uint8_t)family;
	req.r.sdiag_protocol = IPPROTO_TCP;
	req.r.idiag_states = ~0U;
	req.r.idiag_ext = 1 << (INET_DIAG_SKMEMINFO - 1);
	if (sendto(fd, &req, req.nlh.nlmsg_len, 0, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		return -errno;
	buf = malloc(RECV_BUF);
	if (!buf)
		return -ENOMEM;
	while (!done) {
		ssize_t n = recv(fd, buf, RECV_BUF, 0);
		struct nlmsghdr *h;

		if (n < 0) {
			if (errno == EINTR)
				continue;
			ret = -errno;
			break;
		}
		if (n == 0) {
			ret = -EPIPE;
			break;
		}
		for (h = (struct nlmsghdr *)buf; NLMSG_OK(h, (size_t)n); h = NLMSG_NEXT(h, n)) {
			struct inet_diag_msg *m;
			struct skmem_sock s;

			if (h->nlmsg_seq != seq)
				continue;
			if (h->nlmsg_type == NLMSG_DONE) {
				done = 1;
				break;
			}
			if (h->nlmsg_type == NLMSG_ERROR) {
				struct nlmsgerr *e = NLMSG_DATA(h);

				ret = e->error ? e->error : -EPROTO;
				done = 1;
				break;
			}
			if (h->nlmsg_type != SOCK_DIAG_BY_FAMILY ||
			    h->nlmsg_len < NLMSG_LENGTH(sizeof(*m)))
				continue;
			if (*stop)
				continue;	/* drain the dump */
			m = NLMSG_DATA(h);
			memset(&s, 0, sizeof(s));
			s.family = m->idiag_family;
			s.state = m->idiag_state;
			s.sport = ntohs(m->id.idiag_sport);
			s.dport = ntohs(m->id.idiag_dport);
			s.inode = m->idiag_inode;
			parse_attrs(&s, h, m);
			if (cb(&s, arg))
				*stop = 1;
		}
	}
	free(buf);
	return ret;
}

int skmem_netns_fds[SKMEM_NETNS_MAX];
int skmem_netns_n;

int skmem_netns_add(pid_t pid)
{
	char path[64];
	int fd;

	if (skmem_netns_n == SKMEM_NETNS_MAX)
		return -ENOSPC;
	snprintf(path, sizeof(path), "/proc/%d/ns/net", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	skmem_netns_fds[skmem_netns_n++] = fd;
	return 0;
}

void skmem_netns_clear(void)
{
	while (skmem_netns_n > 0)
		close(skmem_netns_fds[--skmem_netns_n]);
}

/* A sock_diag socket of the namespace @nsfd (-1: this thread's own). */
static int diag_socket(int nsfd)
{
	int self, fd, err = 0;

	if (nsfd < 0)
		return socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
	self = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
	if (self < 0)
		return -1;
	if (setns(nsfd, CLONE_NEWNET)) {
		close(self);
		return -1;
	}
	fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
	if (fd < 0)
		err = errno;
	if (setns(self, CLONE_NEWNET))
		abort();	/* every later socket would be in the wrong place */
	close(self);
	errno = err;
	return fd;
}

static int foreach_in(int nsfd, int (*cb)(const struct skmem_sock *s, void *arg), void *arg,
		      int *stop)
{
	static uint32_t seq = 1;
	int fd, ret;
	int rcvbuf = 1 << 20;

	fd = diag_socket(nsfd);
	if (fd < 0)
		return -errno;
	setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
	ret = dump_family(fd, AF_INET, seq++, cb, arg, stop);
	if (!ret && !*stop) {
		ret = dump_family(fd, AF_INET6, seq++, cb, arg, stop);
		/* a kernel without IPv6 has no AF_INET6 handler */
		if (ret == -ENOENT || ret == -EAFNOSUPPORT)
			ret = 0;
	}
	close(fd);
	return ret;
}

int skmem_foreach(int (*cb)(const struct skmem_sock *s, void *arg), void *arg)
{
	int stop = 0, ret = foreach_in(-1, cb, arg, &stop);

	for (int i = 0; !ret && !stop && i < skmem_netns_n; i++)
		ret = foreach_in(skmem_netns_fds[i], cb, arg, &stop);
	return ret;
}

struct match {
	const uint64_t *ids;
	size_t n;
	struct skmem_total *t;
};

static int match_cb(const struct skmem_sock *s, void *arg)
{
	struct match *m = arg;

	for (size_t i = 0; i < m->n; i++) {
		if (s->cgid == m->ids[i]) {
			m->t->sockets++;
			if (s->bytes > 0) {
				m->t->bytes += (uint64_t)s->bytes;
				m->t->pages += skmem_pages(s->bytes);
				m->t->charged++;
			}
			break;
		}
	}
	return 0;
}

int skmem_cgroups(const uint64_t *ids, size_t n, struct skmem_total *out)
{
	struct match m = { ids, n, out };

	memset(out, 0, sizeof(*out));
	return skmem_foreach(match_cb, &m);
}

int skmem_cgroup(uint64_t cgid, struct skmem_total *out)
{
	return skmem_cgroups(&cgid, 1, out);
}

static int collect(const char *path, uint64_t **ids, int *n, int *cap)
{
	struct stat st;
	DIR *d;
	struct dirent *e;

	if (stat(path, &st))
		return -1;
	if (*n == *cap) {
		*cap = *cap ? *cap * 2 : 16;
		*ids = realloc(*ids, *cap * sizeof(**ids));
	}
	(*ids)[(*n)++] = (uint64_t)st.st_ino;
	d = opendir(path);
	if (!d)
		return 0;
	while ((e = readdir(d))) {
		char sub[PATH_MAX];

		if (e->d_type != DT_DIR || e->d_name[0] == '.')
			continue;
		snprintf(sub, sizeof(sub), "%s/%s", path, e->d_name);
		collect(sub, ids, n, cap);	/* may vanish meanwhile */
	}
	closedir(d);
	return 0;
}

int cg_subtree_ids(const char *path, uint64_t **ids)
{
	char *abs = cg_abs(path);
	int n = 0, cap = 0;

	*ids = NULL;
	if (collect(abs, ids, &n, &cap)) {
		free(abs);
		free(*ids);
		*ids = NULL;
		return -1;
	}
	free(abs);
	return n;
}

int skmem_subtree(const char *path, struct skmem_total *out)
{
	uint64_t *ids;
	int n = cg_subtree_ids(path, &ids), ret;

	if (n < 0) {
		memset(out, 0, sizeof(*out));
		return -errno;
	}
	ret = skmem_cgroups(ids, (size_t)n, out);
	free(ids);
	return ret;
}

int64_t memcg_sock_bytes(const char *path)
{
	char f[PATH_MAX], line[256];
	char *abs = cg_abs(path);
	int64_t v = -1;
	FILE *fp;

	snprintf(f, sizeof(f), "%s/memory.stat", abs);
	free(abs);
	fp = fopen(f, "re");
	if (!fp)
		return -1;
	while (fgets(line, sizeof(line), fp)) {
		long long x;

		if (sscanf(line, "sock %lld", &x) == 1) {
			v = x;
			break;
		}
	}
	fclose(fp);
	return v;
}

int64_t memcg_sock_bytes_settled(const char *path, int64_t want_pages, int64_t tol_pages)
{
	int64_t v = memcg_sock_bytes(path);

	for (int i = 0; i < 3 && v >= 0 && llabs(v / SKMEM_PAGE - want_pages) > tol_pages; i++) {
		usleep(2200 * 1000);
		v = memcg_sock_bytes(path);
	}
	return v;
}

int64_t usage_against_sock_diag(const char *path, const char *filter, struct skmem_total *k,
				int tries)
{
	char *rel = cg_rel(path);
	int64_t before, after = -1;

	for (int i = 0; i < tries; i++) {
		if (i)
			msleep(250);
		before = status_field_in(filter, path, "usage_pages");
		if (skmem_subtree(path, k)) {
			after = -1;
			break;
		}
		after = status_field_in(filter, path, "usage_pages");
		test_log("%s: usage_pages %" PRId64 " then %" PRId64 ", sock_diag %" PRIu64
			 " pages", rel ? rel : path, before, after, k->pages);
		if (before == after &&
		    llabs(after - (int64_t)k->pages) <= skmem_tolerance((int64_t)k->pages))
			break;
	}
	free(rel);
	return after;
}
