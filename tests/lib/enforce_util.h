/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Pieces the enforcement tests and bench need on top of harness/load/skmem:
 *
 *  - xload: N loopback connections whose receiving ends (listener and
 *    accepted sockets) live in one cgroup and whose sending ends live in
 *    another (or the same), with receivers that can be switched at run time
 *    between reading, stalling and trickling, and a final drain that checks
 *    every byte against a per-connection pattern.
 *  - bulk_throughput: one bulk transfer, sender and receiver in separate
 *    processes (separate CPUs), bytes per second.
 *  - peak sampler: a thread that reads a subtree's socket memory from
 *    sock_diag every interval and keeps the peak and the series.
 *  - limits through the daemon's drop-in configuration, and status fields.
 */
#ifndef TCPBUF_TEST_ENFORCE_UTIL_H
#define TCPBUF_TEST_ENFORCE_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <netinet/in.h>
#include <sys/types.h>

#define MIB (1024 * 1024)
#define PAGES(bytes) ((int64_t)(bytes) / 4096)

/* ---------------------------------------------------------------- xload */

enum xload_mode {
	XL_READ,	/* receivers read everything as it comes */
	XL_STALL,	/* receivers do not read */
	XL_TRICKLE,	/* each receiver reads at most trickle bytes per 100 ms */
};

struct xload_opts {
	const char *rx_cgroup;	/* receiving ends; absolute or mount-relative */
	const char *tx_cgroup;	/* sending ends; NULL: same as rx_cgroup */
	int nconn;
	enum xload_mode mode;	/* from the start */
	int trickle;		/* bytes per 100 ms per connection in XL_TRICKLE */
	int family;		/* AF_INET (default) or AF_INET6 */
	int idle;		/* senders send nothing: connections only */
	int netns;		/* in a network namespace of their own (both ends) */
	int optmem_max;		/* with netns: net.core.optmem_max there, bytes (0: as made) */
	const char *v1_memcg;	/* also join this cgroup v1 memory directory (the
				 * bench's in-kernel reference): the receiving ends,
				 * and the sending ends when tx_cgroup is NULL */
};

struct xload;

/* Fork the generator; returns once every connection is up. NULL on error. */
struct xload *xload_start(const struct xload_opts *o);
/* Switch the receivers. 0 or -1. */
int xload_set_mode(struct xload *l, enum xload_mode mode, int trickle);
/* Senders start writing (after .idle). 0 or -1. */
int xload_send(struct xload *l);
/* Stop writing; receivers read what is left. Connections stay open. */
int xload_quiesce(struct xload *l);
/* Bytes written by all senders and read by all receivers so far. */
int xload_stats(struct xload *l, uint64_t *sent, uint64_t *received);
/* Stop sending, half-close, read everything to EOF and compare every byte.
 * 0 if all arrived intact; else -1 with msg saying what went wrong. */
int xload_finish(struct xload *l, int timeout_ms, char *msg, size_t msglen);
/* The generator's pid (its network namespace is the connections'). */
pid_t xload_pid(const struct xload *l);
/* Kill the generator and forget it. */
void xload_close(struct xload *l);
/* 1 if a new network namespace has a net.core.optmem_max of its own (Linux
 * 6.9), as .optmem_max needs. */
int netns_has_optmem(void);

/* ------------------------------------------------------------ throughput */

/* One bulk transfer for secs seconds: the connecting sender in tx_cgroup,
 * the listener (and so the accepted receiver) in rx_cgroup. Bytes per
 * second as the receiver saw them; < 0 on error. */
double bulk_throughput(const char *tx_cgroup, const char *rx_cgroup, double secs);
/* The same with both ends pinned to cpu (-1: not pinned). */
double bulk_throughput_on(const char *tx_cgroup, const char *rx_cgroup, double secs, int cpu);

/* Median of num[i] / den[i]: a ratio of paired, interleaved runs, robust to
 * the machine's drift and to a few disturbed runs. */
double median_ratio(const double *num, const double *den, int n);
/* The same median, and its distribution-free 95% interval (order statistics
 * of the sign test: for 9 rounds, the 2nd and 8th ratio): a slowdown is
 * shown only when *hi is below the bar, not when noise moves the median. */
double median_ratio_interval(const double *num, const double *den, int n, double *lo,
			     double *hi);
/* Median of v (sorts a copy). */
double median_of(const double *v, int n);

/* --------------------------------------------------------------- sampler */

struct peak_sample {
	double t;		/* seconds since peak_start */
	uint64_t pages;
};

struct peak_sampler;

/* Sample skmem_subtree(path) every interval_ms from a real-time thread. */
struct peak_sampler *peak_start(const char *path, unsigned interval_ms);
/* Stop; the sampler stays readable until peak_free(). */
void peak_stop(struct peak_sampler *p);
uint64_t peak_pages(const struct peak_sampler *p);
/* Largest gap between two consecutive samples, ms. */
double peak_max_gap_ms(const struct peak_sampler *p);
size_t peak_series(const struct peak_sampler *p, const struct peak_sample **out);
void peak_free(struct peak_sampler *p);

/* 1 under CPU emulation (a VM guest with TCPBUF_VM=tcg): everything is 5-20x
 * slower, and every cycle a neighbour spends is taken from the measured load. */
int under_emulation(void);

/* -------------------------------------------------------------- daemon */

/*
 * Write a drop-in for the cgroup at path (absolute or mount-relative) into
 * daemon_confdir(): Limit= always, Max=/Pressure=/Min= when non-zero (all
 * in pages). Remove it with limits_remove. The main config written by
 * enforce_config() names that directory; reload with SIGHUP.
 */
void limits_write(const char *path, int64_t limit, int64_t max, int64_t pressure, int64_t min);
/* cg_create(@rel) with Limit=@limit pages, the running daemon reloaded
 * until it holds it (the test fails otherwise): the cgroup's path. */
const char *cg_limited(const char *rel, int64_t limit);
/* B, the most one socket can hold (tcpbuf_near_next(), as the daemon computes
 * it from the sysctls), in pages: a limited cgroup is near from the point where
 * its sockets times B reach half its pressure (or max) threshold. */
int64_t sock_bound_pages(void);
/* From now on sock_diag reports each socket's sock_charge entry (skmem.h:
 * has_storage) and the 4 bytes at @off in it (storage_u32), e.g.
 * offsetof(struct sock_charge, enforce.flags). Fails the test if the daemon
 * has no such map pinned. */
void skmem_watch_sock_charge(size_t off);
/* Established sockets of a cgroup with a sock_charge entry, and those of
 * them armed (TCPBUF_SE_LIMITED, read through skmem_watch_sock_charge() at
 * enforce.flags). */
struct armed {
	int entries, armed;
	int sized;	/* entries whose sk_sndbuf or sk_rcvbuf tcpbufd set */
	int followed;	/* TCPBUF_SE_FOLLOWED: sampled, not armed (a dormant ancestor) */
};
struct armed armed_count(const char *cg);
/* Field @field (0-based) of a whitespace-separated sysctl file; -1 if unreadable. */
long sysctl_field(const char *path, int field);
/* The largest sk_sndbuf a socket reaches without SO_SNDBUFFORCE, by the
 * kernel's rules: autotuning up to tcp_wmem[2], SO_SNDBUF twice wmem_max. */
long writer_ceiling(void);
/* The narrow one, tcp_wmem[2]: what a cgroup's guard keeps while none of its
 * writers set SO_SNDBUF past it (tcpbuf_sndbuf_wide()). */
long narrow_writer_ceiling(void);
/* A limit under which one connection (both ends inside, no SO_SNDBUF) can
 * be bounded (sampled mode): 16 MiB, or four narrow writers' ceilings where
 * those are larger (the guard keeps two of them below max). Bytes. */
long bounded_limit(void);
/* The sk_rcvbuf each of @sockets may have while bounded under Limit=@limit
 * (bytes), writers reaching @writer bytes (tcpbuf_bounded_share()); 0: not
 * bounded. */
long bounded_share_for(long limit, int sockets, long writer);
/* The smallest limit (16 MiB doubled) under which @conns connections (both
 * ends inside) stay bounded whatever autotuning gives their receivers: each
 * socket's share is at least the sk_rcvbuf a socket reaches without
 * SO_RCVBUFFORCE. Bytes. */
long bounded_limit_streams(int conns);
void limits_remove(const char *path);
/* Main config: DropInDir = daemon_confdir(), sampling every sample_ms, the
 * full pass over cgroups and limits every 200 ms (poll_ms). */
void enforce_config(unsigned sample_ms);
void enforce_config_poll(unsigned sample_ms, unsigned poll_ms);
/* SIGHUP the daemon and wait until status shows path with limit_pages. */
int daemon_reload_until(const char *path, int64_t limit_pages, int timeout_ms);

/* One integer field of the cgroup's row in `status --json`; -1 if absent. */
int64_t status_field(const char *path, const char *key);
/* The same from `status --json @filter` (cgroup arguments). */
int64_t status_field_in(const char *filter, const char *path, const char *key);
/* A string field of @path's row in `status --json` ("" if absent; a static
 * buffer, overwritten by the next call). */
const char *status_string(const char *path, const char *key);
/* The state string ("normal", "pressure", "max") or "" if absent. */
const char *status_state(const char *path);
/* Wait until the state is want (poll every 10 ms). 0 or -1 on timeout. */
int wait_state(const char *path, const char *want, int timeout_ms);
/* Wait until status_field(path, key) is want (poll every 50 ms); returns the
 * last value read. */
int64_t wait_field(const char *path, const char *key, int64_t want, int timeout_ms);

/* ----------------------------------------------------------- sock_diag */

/* Over the TCP sockets of the subtree at path: how many have sndbuf/rcvbuf
 * at most cap bytes, and the largest of each. */
struct bufs_summary {
	int sockets;
	int snd_at_most, rcv_at_most;
	uint32_t snd_max, rcv_max, snd_min, rcv_min;
};
int bufs_summary(const char *path, uint32_t cap, struct bufs_summary *out);
/* Sockets of the subtree with sndbuf (rcv = 0) or rcvbuf (rcv = 1) >= min. */
int bufs_count_at_least(const char *path, int rcv, uint32_t min);

/* The running daemon's accounting mode ("sampled", "exact"; "" if it does
 * not answer), from `status --json`. */
const char *daemon_mode(void);

/* ------------------------------------------------------- ingress at rest */

/* IngressRest= in enforce_config()'s file ("auto", "yes", "no"); NULL: the
 * daemon's default. */
extern const char *enforce_ingress_rest;
/* Whether the daemon may rest ingress here (src/enforce_rest.c: the kernel
 * has the tcp_rcvbuf_grow tracepoint, and enforce_ingress_rest is not "no");
 * sampled mode is the caller's to check. */
int ingress_rest_possible(void);
/* The daemon started with IngressRest=yes and enforce_config(@sample_ms);
 * the test skipped (saying why) where ingress never rests. */
void rest_daemon_start(unsigned sample_ms);
/* A listener on 127.0.0.1, port chosen by the kernel, made in cgroup @cg
 * (what it accepts is @cg's): its fd, its address in *@a; the test fails
 * otherwise. */
int listener_in(const char *cg, struct sockaddr_in *a, int backlog);
/* Whether ingress rests at the topmost limited cgroup @cg: its link gone,
 * enforce_ctl.ingress_rests set. */
int ingress_resting(const char *cg);
/* Wait until ingress_resting(@cg) is @want: the ms waited, or -1 after
 * @timeout_ms. */
int ingress_rest_wait(const char *cg, int want, int timeout_ms);
/* Wait until @cg's ingress has rested @ms without a break (the wakes of
 * sockets just counted or closed come and go first): the ms waited, or -1
 * after @timeout_ms. */
int ingress_rest_steady(const char *cg, int ms, int timeout_ms);

#endif /* TCPBUF_TEST_ENFORCE_UTIL_H */
