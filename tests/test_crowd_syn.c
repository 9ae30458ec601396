// SPDX-License-Identifier: GPL-2.0
/*
 * SYNs dropped while a cgroup has just become crowded are counted
 * (syn_drops, enforce_crowd.bpf.h): a listener in a cgroup with Limit=1M
 * (crowded from 6 connections, tcpbuf_crowded_next()) takes one connection,
 * which turns the cgroup near and gets ingress linked there. Then the daemon
 * is stopped, so its pass cannot give the listener its small MSS, and 5
 * more connections make the cgroup crowded. The SYNs of 4 more are dropped
 * at ingress; each connection is made from its retransmitted SYN a second
 * later. Once the daemon runs again, `status --json` shows syn_drops of at
 * least 4 for the cgroup and `metrics` the same count, and every
 * connection was accepted.
 */
#define _GNU_SOURCE
#include "enforce_util.h"
#include "harness.h"
#include "tcpbuf_maps.h"
#include "tcpbuf_policy.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#define LIMIT_PAGES	256	/* 1 MiB: pressure 192 pages, crowded at 6 sockets */
#define NCROWD		6	/* connections that make it crowded */
#define NLATE		4	/* connections asked for once it is */

/* The listener, in @cg: accepts and keeps every connection, telling each
 * accept on @rep, until @cmd closes. */
static void server(const char *cg, int portw, int rep, int cmd)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t alen = sizeof(a);
	int lfd;

	if (cg_enter(cg))
		_exit(1);
	lfd = socket(AF_INET, SOCK_STREAM, 0);
	if (lfd < 0 || bind(lfd, (struct sockaddr *)&a, sizeof(a)) || listen(lfd, 64) ||
	    getsockname(lfd, (struct sockaddr *)&a, &alen) ||
	    write(portw, &a, sizeof(a)) != sizeof(a))
		_exit(1);
	for (;;) {
		struct pollfd p[2] = { { .fd = lfd, .events = POLLIN }, { .fd = cmd, .events = POLLIN } };
		char c = 'a';

		if (poll(p, 2, -1) < 0 && errno != EINTR)
			_exit(1);
		if (p[1].revents)
			_exit(0);
		if ((p[0].revents & POLLIN) && accept(lfd, NULL, NULL) >= 0 &&
		    write(rep, &c, 1) != 1)
			_exit(1);
	}
}

static int connect_to(const struct sockaddr_in *a, int flags)
{
	int fd = socket(AF_INET, SOCK_STREAM | flags, 0);

	if (fd < 0)
		return -1;
	if (connect(fd, (const struct sockaddr *)a, sizeof(*a)) && errno != EINPROGRESS) {
		close(fd);
		return -1;
	}
	return fd;
}

/* Wait for @n accepts told on @rep, within @ms. */
static int accepted(int rep, int n, int ms)
{
	double end = now_sec() + ms / 1000.0;
	char c;

	while (n > 0) {
		struct pollfd p = { .fd = rep, .events = POLLIN };
		int left = (int)((end - now_sec()) * 1000);

		if (left <= 0 || poll(&p, 1, left) <= 0 || read(rep, &c, 1) != 1)
			return -1;
		n--;
	}
	return 0;
}

/* The cgroup's usage entry has @bit in established.near, within @ms. */
static int near_bit_set(uint64_t id, __u32 bit, int ms)
{
	double end = now_sec() + ms / 1000.0;
	struct cgroup_usage u;

	do {
		if (!daemon_pinned_lookup("cgroup_usage", &id, &u) && (u.established.near & bit))
			return 0;
		msleep(10);
	} while (now_sec() < end);
	return -1;
}

/* The pin of the ingress link at the cgroup @id exists, within @ms. */
static int ingress_linked(uint64_t id, int ms)
{
	double end = now_sec() + ms / 1000.0;
	char path[4096];
	struct stat st;

	snprintf(path, sizeof(path), "%s/links/ingress-%" PRIu64, daemon_pin_path(), id);
	do {
		if (!stat(path, &st))
			return 0;
		msleep(10);
	} while (now_sec() < end);
	return -1;
}

int main(void)
{
	struct sockaddr_in a;
	int portp[2], repp[2], cmdp[2], fds[1 + NCROWD + NLATE], n = 0, i;
	int64_t drops, metric = -1;
	const char *cg;
	char *out = NULL, *line, needle[4200];
	struct utsname un;
	int major = 0, minor = 0;
	uint64_t id;
	pid_t srv;

	test_init();
	if (uname(&un) || sscanf(un.release, "%d.%d", &major, &minor) != 2 ||
	    major < 6 || (major == 6 && minor < 2))
		SKIP("kernel %s: before 6.2 ingress cannot see a request's listener "
		     "(bpf_cast_to_kern_ctx), so no SYN is dropped", un.release);
	enforce_config(1000);
	ASSERT_OK(daemon_start(""));
	cg = cg_create("syn");
	id = cg_id(cg);
	limits_write(cg, LIMIT_PAGES, 0, 0, 0);
	ASSERT_OK(daemon_reload_until(cg, LIMIT_PAGES, 5000));
	ASSERT_OK(pipe2(portp, O_CLOEXEC));
	ASSERT_OK(pipe2(repp, O_CLOEXEC));
	ASSERT_OK(pipe2(cmdp, O_CLOEXEC));
	srv = test_fork(1);
	ASSERT_TRUE(srv >= 0);
	if (srv == 0) {
		close(cmdp[1]);
		server(cg, portp[1], repp[1], cmdp[0]);
	}
	close(cmdp[0]);
	ASSERT_EQ(read(portp[0], &a, sizeof(a)), (ssize_t)sizeof(a));

	/* One connection: near, and the daemon links ingress at the cgroup. */
	fds[n++] = connect_to(&a, 0);
	ASSERT_TRUE(fds[0] >= 0);
	ASSERT_OK(accepted(repp[0], 1, 5000));
	ASSERT_OK(near_bit_set(id, 1, 5000));
	ASSERT_OK(ingress_linked(id, 5000));

	/* The daemon stopped: no pass gives the listener its MSS. Checks
	 * that do not abort until it runs again. */
	ASSERT_OK(daemon_signal(SIGSTOP));
	for (i = 1; i < NCROWD; i++)
		fds[n++] = connect_to(&a, 0);
	EXPECT_OK(accepted(repp[0], NCROWD - 1, 5000));
	EXPECT_OK(near_bit_set(id, TCPBUF_NEAR_CROWDED, 5000));
	for (i = 0; i < NLATE; i++)
		fds[n++] = connect_to(&a, SOCK_NONBLOCK);
	/* Each is made from its retransmitted SYN, a second later. */
	EXPECT_OK(accepted(repp[0], NLATE, 10000));
	ASSERT_OK(daemon_signal(SIGCONT));
	for (i = 0; i < n; i++)
		EXPECT_TRUE(fds[i] >= 0);

	drops = status_field(cg, "syn_drops");
	test_log("%d connections into a cgroup crowded at %d: syn_drops %" PRId64 ", state %s, "
		 "failcnt %" PRId64, n, NCROWD, drops, status_state(cg), status_field(cg, "failcnt"));
	EXPECT_GE(drops, NLATE);
	ASSERT_EQ(ctl(&out, "metrics"), 0);
	snprintf(needle, sizeof(needle), "tcpbufd_cgroup_syn_drops_total{cgroup=\"%s\"",
		 cg_rel(cg));
	for (line = out; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL)
		if (!strncmp(line, needle, strlen(needle)) && strchr(line, ' '))
			metric = strtoll(strchr(line, ' ') + 1, NULL, 10);
	test_log("metrics: %s... %" PRId64, needle, metric);
	EXPECT_EQ(metric, drops);
	free(out);

	close(cmdp[1]);
	test_reap(srv);
	for (i = 0; i < n; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	limits_remove(cg);
	ASSERT_EQ(daemon_stop(), 0);
	return test_done();
}
