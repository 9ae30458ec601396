// SPDX-License-Identifier: GPL-2.0
/*
 * A socket's charge after its last syscall is at least what it holds and
 * at most the sampler's slack above it (bpf/charge.bpf.h: small shrinks of
 * a settled socket wait, less than TCPBUF_SAMPLE_SLACK_PAGES).
 *
 * The cgroup is set up as bench/run's configuration (3): held in pressure
 * by stalled connections (Limit=1G, Pressure=256K, Min=128K), so its
 * sockets are armed and their caps settled, which is where shrinks wait.
 * One more connection in it: the writer sends 1 MiB while the reader, after
 * letting its queue fill, reads it 16 KiB (4 pages) at a time: every
 * shrink a small one. Then each end makes one last call (a recv that finds
 * nothing) and the charge of each is read from its socket-storage entry
 * through sock_diag, against the footprint sock_diag reports for it. No
 * reconcile pass runs meanwhile (SampleIntervalMs and PollIntervalMs an
 * hour, and no status is asked): a pass would make both exact.
 *
 * Without a bound on the slack the reader stays charged for what its queue
 * held at its fullest. In exact mode the charge is the kernel's own and the
 * same bound holds.
 */
#define _GNU_SOURCE
#include "enforce_util.h"
#include "harness.h"
#include "skmem.h"
#include "tcpbuf_maps.h"

#include <arpa/inet.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

#define SLACK_PAGES	8		/* TCPBUF_SAMPLE_SLACK_PAGES */
#define STREAM_BYTES	(1 << 20)
#define READ_BYTES	16384
#define NSTALL		8

struct pair_look {
	uint16_t port;		/* the listener's: the accepted end's sport */
	int seen;
	int64_t excess[2];	/* charged - footprint pages: [0] writer, [1] reader */
	int64_t footprint[2];
};

static int look_pair(const struct skmem_sock *s, void *arg)
{
	struct pair_look *p = arg;
	int reader;

	if (s->state != TCP_ESTABLISHED || !s->has_storage)
		return 0;
	if (s->sport == p->port)
		reader = 1;
	else if (s->dport == p->port)
		reader = 0;
	else
		return 0;
	p->footprint[reader] = (int64_t)skmem_pages(s->bytes);
	p->excess[reader] = (int32_t)s->storage_u32 - p->footprint[reader];
	p->seen |= 1 << reader;
	return 0;
}

static void xwrite(int fd, char c)
{
	if (write(fd, &c, 1) != 1)
		_exit(3);
}

static void xread(int fd)
{
	char c;

	if (read(fd, &c, 1) != 1)
		_exit(3);
}

/* In @cg: the connection, its writer and its reader. Each end reports on
 * @rep when it made its last call; the writer makes it when told on @cmd. */
static void pair_run(const char *cg, int listener_port_fd, int cmd, int rep)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t alen = sizeof(a);
	int l, w, r, one = 1;
	char *buf = calloc(1, READ_BYTES);
	long got = 0;
	pid_t writer;

	if (cg_enter(cg) || !buf)
		_exit(2);
	l = socket(AF_INET, SOCK_STREAM, 0);
	if (l < 0 || bind(l, (void *)&a, sizeof(a)) || listen(l, 1) ||
	    getsockname(l, (void *)&a, &alen))
		_exit(2);
	if (write(listener_port_fd, &a.sin_port, sizeof(a.sin_port)) != sizeof(a.sin_port))
		_exit(2);
	w = socket(AF_INET, SOCK_STREAM, 0);
	if (w < 0 || connect(w, (void *)&a, sizeof(a)) || (r = accept(l, NULL, NULL)) < 0)
		_exit(2);
	setsockopt(w, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	writer = fork();
	if (writer < 0)
		_exit(2);
	if (writer == 0) {
		char *data = calloc(1, STREAM_BYTES);

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (!data || send(w, data, STREAM_BYTES, 0) != STREAM_BYTES)
			_exit(2);
		xread(cmd);
		recv(w, buf, 1, MSG_DONTWAIT);	/* the last call: finds nothing */
		xwrite(rep, 'w');
		pause();
		_exit(0);
	}
	msleep(200);	/* the reader's queue fills first */
	while (got < STREAM_BYTES) {
		ssize_t n = recv(r, buf, READ_BYTES, 0);

		if (n <= 0)
			_exit(2);
		got += n;
	}
	recv(r, buf, 1, MSG_DONTWAIT);
	xwrite(rep, 'r');
	pause();
	_exit(0);
}

int main(void)
{
	int port_pipe[2], cmd_pipe[2], rep_pipe[2];
	struct pair_look look = { 0 };
	struct xload *stall;
	const char *cg;
	char c;
	pid_t pid;

	test_init();
	enforce_config_poll(3600000, 3600000);
	ASSERT_OK(daemon_start(""));
	skmem_watch_sock_charge(offsetof(struct sock_charge, charged_pages));
	cg = cg_create("s");
	limits_write(cg, 262144, 0, 64, 32);
	ASSERT_OK(daemon_reload_until(cg, 262144, 5000));
	stall = xload_start(&(struct xload_opts){ .rx_cgroup = cg, .nconn = NSTALL,
						   .mode = XL_STALL });
	ASSERT_TRUE(stall != NULL);
	ASSERT_OK(wait_state(cg, "pressure", 10000));

	ASSERT_OK(pipe(port_pipe));
	ASSERT_OK(pipe(cmd_pipe));
	ASSERT_OK(pipe(rep_pipe));
	pid = test_fork(1);
	ASSERT_GE(pid, 0);
	if (pid == 0)
		pair_run(cg, port_pipe[1], cmd_pipe[0], rep_pipe[1]);
	ASSERT_EQ(read(port_pipe[0], &look.port, sizeof(look.port)), (ssize_t)sizeof(look.port));
	look.port = ntohs(look.port);
	/* The reader's last call, then the writer's, once what it sent is
	 * acknowledged. */
	ASSERT_EQ(read(rep_pipe[0], &c, 1), 1);
	msleep(300);
	ASSERT_EQ(write(cmd_pipe[1], "x", 1), 1);
	ASSERT_EQ(read(rep_pipe[0], &c, 1), 1);

	ASSERT_OK(skmem_foreach(look_pair, &look));
	ASSERT_EQ(look.seen, 3);
	test_log("writer: footprint %" PRId64 " pages, charged %+" PRId64 "; reader: footprint %"
		 PRId64 " pages, charged %+" PRId64 " (slack under %d pages)", look.footprint[0],
		 look.excess[0], look.footprint[1], look.excess[1], SLACK_PAGES);
	for (int i = 0; i < 2; i++) {
		EXPECT_GE(look.excess[i], 0);
		EXPECT_LT(look.excess[i], SLACK_PAGES);
	}
	/* The state it was measured in, said after the measure (status
	 * reconciles). */
	test_log("cgroup state %s", status_state(cg));

	kill(pid, SIGKILL);
	test_reap(pid);
	xload_close(stall);
	close(skmem_storage_fd);
	return test_done();
}
