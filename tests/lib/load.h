/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Loopback TCP load for tests.
 *
 * load_start() forks a child that joins opts->cgroup BEFORE it creates any
 * socket (listener, connecting and accepted sockets are all in that cgroup),
 * opens nconn connections to itself over 127.0.0.1 or ::1 and pushes a
 * deterministic byte pattern from the connecting end to the accepted end.
 *
 *  - stalled (readers = 0): receivers never read; senders are non-blocking
 *    and write until nothing more fits for settle_ms (or bytes is reached),
 *    so both the send and the receive queues fill; the child then reports
 *    "filled" and sits idle.
 *  - steady (readers = 1): receivers read (and verify) continuously; the
 *    child reports "filled" once every connection has delivered data and
 *    keeps the flow going until told otherwise.
 *
 * load_resume_and_verify() stops new sends, half-closes the senders and has
 * the receivers drain everything to EOF, checking every byte against the
 * pattern: data must arrive complete, in order, intact.
 *
 * The child is tracked by the harness (killed at cleanup) and dies with
 * its parent (PR_SET_PDEATHSIG).
 */
#ifndef TCPBUF_TEST_LOAD_H
#define TCPBUF_TEST_LOAD_H

#include <stdint.h>
#include <sys/types.h>

struct load_opts {
	const char *cgroup;	/* absolute or mount-relative; NULL: stay where we are */
	int nconn;		/* connections (default 1) */
	int family;		/* AF_INET (default) or AF_INET6 */
	uint64_t bytes;		/* per-connection cap in bytes, 0 = none */
	int readers;		/* receivers read: steady flow instead of stalled */
	int sndbuf;		/* SO_SNDBUF on senders, 0 = kernel autotuning */
	int rcvbuf;		/* SO_RCVBUF on receivers, 0 = kernel autotuning */
	int settle_ms;		/* stalled: no progress this long = full (default 300) */
	int fill_timeout_ms;	/* stop filling after this long (default 20000) */
	int netns;		/* the child makes its own network namespace (lo up)
				 * after joining the cgroup, as a container does */
	int drop_caps;		/* then drops every capability (uid 0 stays), as a
				 * runtime's container process has none */
};

struct load {
	pid_t pid;
	int cmd_fd, rep_fd;
	struct load_opts o;
	/* from the last report */
	uint64_t sent;		/* bytes written by all senders so far */
	uint64_t received;	/* bytes read by all receivers so far */
	int ok;			/* resume: 1 if every byte arrived intact */
	int timed_out;		/* filled: the fill timeout, not a quiet period, ended it */
	char msg[256];		/* resume: what went wrong, if anything */
	char buf[512];
	size_t blen;
};

/* Fork the child and wait until its connections are up.  NULL on error
 * (the reason is printed). */
struct load *load_start(const struct load_opts *o);
/* Wait for "filled" (timeout_ms <= 0: fill_timeout_ms + 10 s).  0 or -1. */
int load_wait_filled(struct load *l, int timeout_ms);
/* Stalled mode: try to push more (e.g. after a limit was raised) until
 * full again; then like load_wait_filled().  0 or -1. */
int load_fill_more(struct load *l, int timeout_ms);
/* Drain everything and verify it (timeout_ms <= 0: 60 s).  Returns 0 if
 * every byte sent arrived intact (l->ok = 1, l->received == l->sent),
 * else -1 with l->msg saying why. */
int load_resume_and_verify(struct load *l, int timeout_ms);
/* Close all sockets; the child exits; wait for it; free l.  0 if the child
 * exited cleanly. */
int load_close(struct load *l);
/* SIGKILL the child, reap it, free l. */
void load_kill(struct load *l);

/*
 * In a child that joins cgroup (NULL: stays), open and close n loopback
 * connections one after another: connect, write 16 bytes, accept, read
 * them, echo them back, read the echo, then close: the accepted end first
 * (it keeps the TIME_WAIT, so the client's ephemeral ports are free at
 * once), every 4th connection instead aborted by the client with
 * SO_LINGER 0 (RST).  0 on success.  *secs (if not NULL) gets the time.
 */
int short_connections(const char *cgroup, int n);
int short_connections_ex(const char *cgroup, int family, int n, double *secs);

/* 1 if AF_INET6 sockets can bind ::1. */
int ipv6_available(void);
/* Bring the loopback interface up if it is down (VM guests).  0 or -1. */
int lo_up(void);
/* In this process: a network namespace of its own with lo up, and (if
 * @drop_caps) no capabilities left.  0 or -1 with errno. */
int netns_enter_new(int drop_caps);

#endif /* TCPBUF_TEST_LOAD_H */
