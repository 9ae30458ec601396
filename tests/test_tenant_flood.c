// SPDX-License-Identifier: GPL-2.0
/*
 * A tenant cannot starve the administrator. 64 tenant clients (each its own
 * uid, in cgroup t) keep trying to hold a connection slot: connect, send
 * nothing, reconnect when cut off or refused; one more floods complete
 * status requests as one tenant. Meanwhile every administrator request is
 * answered within a second (the daemon used to serve 32 connections in all,
 * so the administrator waited in the backlog behind tenants, ~1 s per 32).
 * The flood is answered "busy" past its share, and the daemon's CPU time
 * over the run is printed. "Within a second" is on top of four times the
 * median of the same requests without the flood (a few ms here, tenths of a second
 * in an emulated guest, where starting tcpbufctl alone takes that long).
 */
#define _GNU_SOURCE
#include "harness.h"

#include <fcntl.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#define HOLDERS		64
#define FLOODERS	1
#define ADMIN_ASKS	10

static const char *t, *parent;

static void become(const char *cg, uid_t uid)
{
	if (cg_enter(cg) || setgroups(0, NULL) || setresgid(uid, uid, uid) ||
	    setresuid(uid, uid, uid))
		_exit(126);
}

static int connect_daemon(void)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", daemon_socket_path());
	if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		close(fd);
		return -1;
	}
	return fd;
}

/* Hold a slot: connect, send nothing, wait to be cut off; again. */
static void holder(uid_t uid)
{
	char buf[256];

	become(t, uid);
	for (;;) {
		int fd = connect_daemon();

		if (fd < 0) {
			msleep(50);
			continue;
		}
		if (read(fd, buf, sizeof(buf)) > 0 && strstr(buf, "busy"))
			msleep(500); /* refused at once: try again a little later */
		close(fd);
	}
}

/* Complete requests, one every 20 ms: more than its share. */
static void flooder(void)
{
	static const char req[] = "status\n";
	char buf[4096];

	become(t, 65534);
	for (;;) {
		int fd = connect_daemon();

		if (fd < 0) {
			msleep(2);
			continue;
		}
		if (write(fd, req, sizeof(req) - 1) == (ssize_t)sizeof(req) - 1) {
			shutdown(fd, SHUT_WR);
			while (read(fd, buf, sizeof(buf)) > 0)
				;
		}
		close(fd);
		msleep(20);
	}
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* @n administrator status requests: the slowest, and the median in *@median (s). */
static double admin_worst(int n, const char *what, double *median)
{
	double worst = 0, took_all[32];

	for (int i = 0; i < n; i++) {
		double start = now_sec(), took;
		int code = ctl(NULL, "status %s", parent);

		took = now_sec() - start;
		test_log("administrator's status %s #%d: exit %d in %.3f s", what, i, code, took);
		EXPECT_EQ(code, 0);
		if (took > worst)
			worst = took;
		took_all[i] = took;
		msleep(200);
	}
	qsort(took_all, n, sizeof(took_all[0]), cmp_double);
	*median = took_all[n / 2];
	return worst;
}

int main(void)
{
	double worst, quiet, t0_median, cpu0, cpu1, t0, t1;
	int i;

	test_init();
	if (geteuid() != 0)
		SKIP("needs root to switch uids");
	t = cg_rel(cg_create("t"));
	parent = cg_rel(cg_test_parent());
	daemon_write_config("[Daemon]\nSocketMode=0666\nDropInDir=%s\nStateDir=%s/state\n",
			    daemon_confdir(), test_tmpdir());
	ASSERT_EQ(daemon_start(""), 0);
	admin_worst(5, "alone", &quiet);

	for (i = 0; i < HOLDERS; i++)
		if (test_fork(1) == 0)
			holder(60000 + i);
	for (i = 0; i < FLOODERS; i++)
		if (test_fork(1) == 0)
			flooder();
	msleep(1500); /* every slot a tenant may have is taken */
	cpu0 = daemon_cpu_sec();
	t0 = now_sec();
	worst = admin_worst(ADMIN_ASKS, "under the flood", &t0_median);
	t1 = now_sec();
	cpu1 = daemon_cpu_sec();
	test_log("worst administrator answer %.3f s (median %.3f s alone); daemon CPU %.2f s in %.2f s "
		 "(%.0f%% of a core)", worst, quiet, cpu1 - cpu0, t1 - t0,
		 100 * (cpu1 - cpu0) / (t1 - t0));
	EXPECT_LT((int)(1000 * worst), (int)(1000 * (1.0 + 4 * quiet)));
	EXPECT_TRUE(daemon_alive());
	EXPECT_GE(daemon_log_count("refused"), 1);
	return test_done();
}
