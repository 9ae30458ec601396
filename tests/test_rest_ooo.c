// SPDX-License-Identifier: GPL-2.0
/*
 * Out-of-order data while ingress rests (src/enforce_rest.c). The kernel grows
 * sk_rcvbuf for an out-of-order queue (tcp_data_queue_ofo() calls
 * tcp_rcvbuf_grow()) and no tracepoint says so. A cgroup with one reader,
 * under the smallest limit that leaves it bounded, rests; then, on a lossy
 * path (a test-owned cgroup_skb program drops one data skb in eight before
 * TCP sees it):
 *   1. inflate: app-limited writers (6 or 4 KiB a millisecond, 1 KiB every
 *      200 us; 1 s each) and a reader that reads as data comes: wherever
 *      ingress rests and the cgroup is still bounded, the reader's
 *      sk_rcvbuf is what it was as ingress went or a doubling of it (the
 *      rest's lock, raised where autotuning asked), within its share;
 *   2. stall: the reader stops and the writer writes as fast as it can for
 *      2 s: the cgroup's peak by sock_diag every 10 ms stays within 1.05 x
 *      max, and every byte arrives once it reads again.
 * Sampled mode, kernels with the tcp_rcvbuf_grow tracepoint.
 */
#include "enforce_util.h"
#include "harness.h"
#include "tcpbuf_maps.h"
#include "tcpbuf_policy.h"

#include <arpa/inet.h>
#include <bpf/bpf.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/bpf.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define MAX_RATIO	1.05

#define INSN(c, d, s, o, i) \
	((struct bpf_insn){ .code = (c), .dst_reg = (d), .src_reg = (s), .off = (o), .imm = (i) })

/* cgroup_skb/ingress: one skb in eight larger than 1000 bytes dropped. */
static int lossy_attach(const char *cg)
{
	struct bpf_insn prog[] = {
		INSN(BPF_LDX | BPF_MEM | BPF_W, BPF_REG_2, BPF_REG_1, offsetof(struct __sk_buff, len), 0),
		INSN(BPF_JMP | BPF_JLT | BPF_K, BPF_REG_2, 0, 5, 1000),
		INSN(BPF_JMP | BPF_CALL, 0, 0, 0, BPF_FUNC_get_prandom_u32),
		INSN(BPF_ALU64 | BPF_AND | BPF_K, BPF_REG_0, 0, 0, 7),
		INSN(BPF_JMP | BPF_JNE | BPF_K, BPF_REG_0, 0, 2, 0),
		INSN(BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_0, 0, 0, 0),
		INSN(BPF_JMP | BPF_EXIT, 0, 0, 0, 0),
		INSN(BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_0, 0, 0, 1),
		INSN(BPF_JMP | BPF_EXIT, 0, 0, 0, 0),
	};
	LIBBPF_OPTS(bpf_prog_load_opts, o, .expected_attach_type = BPF_CGROUP_INET_INGRESS);
	int fd, cgfd;

	fd = bpf_prog_load(BPF_PROG_TYPE_CGROUP_SKB, "test_lossy", "GPL", prog,
			   sizeof(prog) / sizeof(prog[0]), &o);
	if (fd < 0)
		return fd;
	cgfd = open(cg, O_RDONLY | O_DIRECTORY);
	if (cgfd < 0 || bpf_prog_attach(fd, cgfd, BPF_CGROUP_INET_INGRESS, BPF_F_ALLOW_MULTI)) {
		close(fd);
		fd = -1;
	}
	if (cgfd >= 0)
		close(cgfd);
	return fd;
}

/* The cgroup's cgroup_sockets.dormant (3: bounded), through its pinned
 * usage map @fd. */
static uint32_t dormant_of(int fd, const char *cg)
{
	struct cgroup_usage u = {};
	uint64_t id = cg_id(cg);

	return bpf_map_lookup_elem(fd, &id, &u) ? 0 : u.established.dormant;
}

static void lossy_detach(const char *cg, int fd)
{
	int cgfd = open(cg, O_RDONLY | O_DIRECTORY);

	if (cgfd >= 0) {
		bpf_prog_detach2(fd, cgfd, BPF_CGROUP_INET_INGRESS);
		close(cgfd);
	}
	close(fd);
}

static int rcvbuf_of(int fd)
{
	int v = 0;
	socklen_t l = sizeof(v);

	getsockopt(fd, SOL_SOCKET, SO_RCVBUF, &v, &l);
	return v;
}

int main(void)
{
	struct sockaddr_in a;
	static char buf[1 << 16];
	struct peak_sampler *ps;
	uint64_t sent = 0, got = 0;
	long limit = 4 * MIB, share;
	/* Writes of so many bytes every so many microseconds: app-limited
	 * writers, their reader kept below autotuning's notice longest. */
	static const int shapes[][2] = { { 6144, 1000 }, { 4096, 1000 }, { 1024, 200 } };
	int usage;
	int lis, c, s, lossy, rb, rb0, rb_rest = 0, rb_max = 0, odd = 0, waited;
	double t0;
	ssize_t n;
	const char *cg;

	test_init();
	rest_daemon_start(1000);
	/* The smallest limit that leaves one reader bounded. */
	while (bounded_share_for(limit, 1, narrow_writer_ceiling()) <= 0 && limit < (1L << 34))
		limit += 256 * 1024;
	share = bounded_share_for(limit, 1, narrow_writer_ceiling());
	cg = cg_create("o");
	limits_write(cg, PAGES(limit), 0, 0, 0);
	ASSERT_OK(daemon_reload_until(cg, PAGES(limit), 5000));
	test_log("limit %ld KiB, the reader's share %ld bytes, tcp_rmem[2] %ld", limit / 1024,
		 share, sysctl_field("/proc/sys/net/ipv4/tcp_rmem", 2));

	/* The reader is accepted from a listener in the cgroup; the writer
	 * stays out of it. */
	lis = listener_in(cg, &a, 1);
	c = socket(AF_INET, SOCK_STREAM, 0);
	ASSERT_TRUE(c >= 0);
	ASSERT_OK(connect(c, (void *)&a, sizeof(a)));
	s = accept(lis, NULL, NULL);
	ASSERT_TRUE(s >= 0);
	close(lis);
	ASSERT_EQ(write(c, "x", 1), 1);
	ASSERT_EQ(read(s, buf, 1), 1);
	waited = ingress_rest_wait(cg, 1, 3000);
	rb0 = rcvbuf_of(s);
	test_log("one connection: ingress at rest after %d ms, reader's sk_rcvbuf %d", waited, rb0);
	ASSERT_TRUE(waited >= 0);
	usage = daemon_pinned_fd("cgroup_usage");
	ASSERT_TRUE(usage >= 0);
	lossy = lossy_attach(cg);
	ASSERT_TRUE(lossy >= 0);

	/* 1. */
	fcntl(s, F_SETFL, O_NONBLOCK);
	fcntl(c, F_SETFL, O_NONBLOCK);
	for (size_t i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++) {
		t0 = now_sec();
		while (now_sec() - t0 < 1) {
			n = write(c, buf, shapes[i][0]);
			if (n > 0)
				sent += n;
			while ((n = read(s, buf, sizeof(buf))) > 0)
				got += n;
			/* The buffer first: a growth BPF saw has taken the
			 * cgroup out of bounded before it happened. */
			rb = rcvbuf_of(s);
			if (rb > rb_max)
				rb_max = rb;
			if (dormant_of(usage, cg) == 3 && ingress_resting(cg)) {
				if (rb > rb_rest)
					rb_rest = rb;
				/* Only the rest's raises: doublings of rb0. */
				if (rb % rb0 || (rb / rb0 & (rb / rb0 - 1)))
					odd = rb;
			}
			usleep(shapes[i][1]);
		}
	}
	test_log("inflate: %" PRIu64 " bytes, reader's sk_rcvbuf up to %d (%d while ingress "
		 "rested bounded, %d not a doubling of %d; share %ld), ingress %s", sent, rb_max,
		 rb_rest, odd, rb0, share, ingress_resting(cg) ? "at rest" : "linked");
	EXPECT_EQ(odd, 0);
	EXPECT_LE(rb_rest, share);

	/* 2. */
	ps = peak_start(cg, 10);
	ASSERT_TRUE(ps != NULL);
	t0 = now_sec();
	while (now_sec() - t0 < 2) {
		n = write(c, buf, sizeof(buf));
		if (n > 0)
			sent += n;
		else
			msleep(1);
	}
	peak_stop(ps);
	test_log("stall: peak %" PRIu64 " pages by sock_diag (%.3f x max), reader's sk_rcvbuf %d, "
		 "ingress %s", peak_pages(ps), (double)peak_pages(ps) / PAGES(limit), rcvbuf_of(s),
		 ingress_resting(cg) ? "at rest" : "linked");
	EXPECT_LE_F((double)peak_pages(ps) / PAGES(limit), MAX_RATIO);
	peak_free(ps);
	lossy_detach(cg, lossy);
	shutdown(c, SHUT_WR);
	fcntl(s, F_SETFL, 0);
	while ((n = read(s, buf, sizeof(buf))) > 0)
		got += n;
	test_log("drained %" PRIu64 " of %" PRIu64 " bytes", got, sent);
	EXPECT_EQ(got, sent);
	close(c);
	close(s);
	limits_remove(cg);
	ASSERT_EQ(daemon_stop(), 0);
	return test_done();
}
