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
#include <sys/socket.h>
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

/* @ss = 127.0.0.1 or ::1 (@family), port @port; returns its length. */
socklen_t loopback_addr(int family, struct sockaddr_storage *ss, uint16_t port);
/* 1 if AF_INET6 sockets can bind ::1. */
int ipv6_available(void);
/* Bring the loopback interface up if it is down (VM guests).  0 or -1. */
int lo_up(void);
/* In this process: a network namespace of its own with lo up, and (if
 * @drop_caps) no capabilities left.  0 or -1 with errno. */
int netns_enter_new(int drop_caps);

/*
 * The byte pattern every generator sends: connection i carries
 * pattern_at(i, off)[0] at stream offset off. The period is prime, so a lost
 * or repeated chunk shifts it; pattern_at() is readable PATTERN_RUN bytes on.
 */
#define PATTERN_PERIOD	65521
#define PATTERN_RUN	65536
void pattern_init(void);
const uint8_t *pattern_at(int conn, uint64_t off);

/* The receiving end of one connection, checked against the pattern. */
struct pattern_rx {
	uint64_t received;	/* bytes read so far */
	uint64_t bad_off;	/* offset of the first wrong byte, or of the receive error */
	int bad;		/* PATTERN_WRONG_BYTE or PATTERN_RECV_ERROR once seen */
	int eof;		/* EOF or a receive error: nothing more comes */
};
enum { PATTERN_WRONG_BYTE = 1, PATTERN_RECV_ERROR = 2 };
/*
 * Read from non-blocking @fd what is there, at most @limit bytes (< 0: no
 * limit) in recv()s of at most @chunk (<= 256 KiB), checking it as connection
 * @conn's pattern. Returns the bytes read.
 */
uint64_t pattern_pull(int fd, int conn, struct pattern_rx *rx, int64_t limit, size_t chunk);
/* "wrong byte", "receive error", or NULL while every byte was right. */
const char *pattern_error(const struct pattern_rx *rx);

/*
 * In a generator child: write one line (printf format; '\n' added, cut at
 * 510 bytes) to the pipe @fd; _exit(3) if it cannot.
 */
void child_report(int fd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif /* TCPBUF_TEST_LOAD_H */
