// SPDX-License-Identifier: GPL-2.0
/*
 * Near and far (tcpbuf_near_next() in include/tcpbuf_policy.h). A limited
 * cgroup whose sockets, each holding the most the kernel lets one socket
 * hold (B), could not reach half its threshold is far: its sockets are left
 * to the kernel and nothing of tcpbufd runs per segment or syscall.
 *
 * "n" gets Max = 8 B, Pressure = 6 B, Min = 3 B (B from the sysctls, as the
 * daemon computes it): near from 3 sockets on, far again at 1 or none.
 *   1. one bulk connection inside (2 sockets): far. No ingress link, no
 *      per-syscall sampler linked, and no socket armed: sock_diag, asked
 *      for the pinned sock_charge map (INET_DIAG_REQ_SK_BPF_STORAGES),
 *      shows every socket's entry without TCPBUF_SE_LIMITED;
 *   2. one idle connection more (4 sockets): near. The ingress link and the
 *      samplers appear, and the sweep arms all four sockets;
 *   2b. the idle connection closed and the limits raised fourfold: far,
 *      and the bulk connection's sockets are released at their next
 *      segment (unarmed, sk_sndbuf back to the smaller of tcp_wmem[2] and
 *      what SO_SNDBUF gives);
 *      the limits go back;
 *   3. the bulk connection closed: far again, the links go (a second after
 *      the daemon reads that: enforce.c, NEAR_HOLD_MS);
 *   4. two connections opened and closed 20 times, near and far each
 *      time: the links are made once, not every time, and go after;
 *   5. the same once while the daemon is stopped (SIGSTOP): it reads the
 *      near and the far event in one batch, links, and unlinks after.
 * Every byte of the bulk connection arrives intact.
 */
#include "enforce_util.h"
#include "harness.h"
#include "skmem.h"

#include <linux/bpf.h>
#include <linux/types.h>
#include <netinet/tcp.h>
#include <sys/syscall.h>
#include "tcpbuf_maps.h"
#include "tcpbuf_enforce.h"

#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int pinned(const char *name)
{
	char path[4096];

	snprintf(path, sizeof(path), "%s/links/%s", daemon_pin_path(), name);
	return access(path, F_OK) == 0;
}

/* Wait until links/@name is there (@want) or gone; whether it came to be. */
static int wait_pinned(const char *name, int want, int timeout_ms)
{
	for (double end = now_sec() + timeout_ms / 1000.0; now_sec() < end; msleep(10))
		if (pinned(name) == want)
			return 1;
	return pinned(name) == want;
}

int main(void)
{
	long snd_set_max = 2 * sysctl_field("/proc/sys/net/core/wmem_max", 0);
	long rcv_set_max = 2 * sysctl_field("/proc/sys/net/core/rmem_max", 0);
	long tcp_wmem2 = sysctl_field("/proc/sys/net/ipv4/tcp_wmem", 2);
	int sampled;
	struct bufs_summary far, near, released;
	struct xload *bulk, *idle;
	struct armed a;
	int64_t b = sock_bound_pages();
	char ingress[64], msg[256];
	const char *cg;

	test_init();
	enforce_config(1000);
	/* Near by reach alone: usage here stays under the guard, where exact
	 * mode would keep the cgroup dormant (test_near_free). */
	setenv("TCPBUF_NO_DORMANT", "1", 1);
	ASSERT_OK(daemon_start(""));
	skmem_watch_sock_charge(offsetof(struct sock_charge, enforce.flags));
	cg = cg_create("n");
	snprintf(ingress, sizeof(ingress), "ingress-%" PRIu64, cg_id(cg));
	limits_write(cg, 8 * b, 8 * b, 6 * b, 3 * b);
	ASSERT_OK(daemon_reload_until(cg, 8 * b, 5000));
	/* Which accounting runs: the samplers exist in sampled mode only. */
	{
		char *out = NULL, mode[16] = "";

		ASSERT_OK(ctl(&out, "status --json"));
		json_string_field(out, "mode", mode, sizeof(mode));
		free(out);
		sampled = !strcmp(mode, "sampled");
		test_log("B = %" PRId64 " pages; limits %" PRId64 " / %" PRId64 " / %" PRId64
			 " pages; %s mode", b, 8 * b, 6 * b, 3 * b, mode);
	}

	/* 1. Far. */
	bulk = xload_start(&(struct xload_opts){ .rx_cgroup = cg, .nconn = 1, .mode = XL_READ });
	ASSERT_TRUE(bulk != NULL);
	msleep(1500);
	/* Until autotuning takes the receiver past what SO_RCVBUF gives
	 * (where it can): step 2's sweep caps that. A socket armed below it
	 * whose caps settle is left to autotuning, which a slow host's
	 * receiver may reach only after the sweep. */
	for (double end = now_sec() + 10; now_sec() < end; msleep(100)) {
		ASSERT_OK(bufs_summary(cg, 0, &far));
		if (far.rcv_max > rcv_set_max)
			break;
	}
	ASSERT_OK(bufs_summary(cg, 0, &far));
	test_log("far: %d sockets, sndbuf %u..%u, rcvbuf %u..%u (SO_*BUF sets at most %ld / %ld); "
		 "ingress link %d, send_length link %d", far.sockets, far.snd_min, far.snd_max,
		 far.rcv_min, far.rcv_max, snd_set_max, rcv_set_max, pinned(ingress),
		 pinned("send_length"));
	a = armed_count(cg);
	test_log("far: %d of the sockets' sock_charge entries armed, of %d", a.armed, a.entries);
	EXPECT_EQ(far.sockets, 2);
	EXPECT_EQ(a.entries, 2);
	EXPECT_EQ(a.armed, 0);
	EXPECT_EQ(pinned(ingress), 0);
	EXPECT_EQ(pinned("send_length"), 0);
	EXPECT_EQ(pinned("enforce_sendmsg_sample"), 0);

	/* 2. Near. */
	idle = xload_start(&(struct xload_opts){ .rx_cgroup = cg, .nconn = 1, .idle = 1,
						  .mode = XL_READ });
	ASSERT_TRUE(idle != NULL);
	EXPECT_TRUE(wait_pinned(ingress, 1, 2000));
	if (sampled)
		EXPECT_TRUE(wait_pinned("send_length", 1, 2000));
	/* The sweep arms and caps what was already there: wait for it, not a
	 * fixed time (a loaded host or guest can take longer than 200 ms). */
	for (double end = now_sec() + 10; now_sec() < end; msleep(50)) {
		ASSERT_OK(bufs_summary(cg, 0, &near));
		if (armed_count(cg).armed >= 4 && near.snd_max <= snd_set_max &&
		    near.rcv_max <= rcv_set_max)
			break;
	}
	ASSERT_OK(bufs_summary(cg, 0, &near));
	test_log("near: %d sockets, sndbuf %u..%u, rcvbuf %u..%u; ingress link %d, send_length "
		 "link %d", near.sockets, near.snd_min, near.snd_max, near.rcv_min, near.rcv_max,
		 pinned(ingress), pinned("send_length"));
	a = armed_count(cg);
	test_log("near: %d of the sockets' sock_charge entries armed, of %d", a.armed, a.entries);
	EXPECT_EQ(near.sockets, 4);
	EXPECT_EQ(a.entries, 4);
	EXPECT_EQ(a.armed, 4);
	EXPECT_LE(near.snd_max, snd_set_max);
	EXPECT_LE(near.rcv_max, rcv_set_max);
	EXPECT_GE(daemon_log_wait("per-segment enforcement on", 1, 3000), 1);

	/* 2b. Far by a change of limits, with the bulk connection running: its
	 * sockets, which keep receiving segments, are released at the next
	 * one (sizes back to what SO_*BUF gives at most, entries unarmed). The
	 * idle connection goes first: with no segment it would stay armed. */
	xload_close(idle);
	idle = NULL;
	limits_write(cg, 32 * b, 32 * b, 24 * b, 12 * b);
	ASSERT_OK(daemon_reload_until(cg, 32 * b, 5000));
	for (double end = now_sec() + 5; now_sec() < end; msleep(50)) {
		a = armed_count(cg);
		if (a.entries == 2 && a.armed == 0)
			break;
	}
	ASSERT_OK(bufs_summary(cg, 0, &released));
	test_log("far by limits: %d of %d entries armed; sndbuf %u..%u", a.armed, a.entries,
		 released.snd_min, released.snd_max);
	EXPECT_EQ(a.entries, 2);
	EXPECT_EQ(a.armed, 0);
	/* Where tcpbufd releases a size it set: where autotuning stops, as
	 * far as SO_SNDBUF reaches (src/enforce.c, sndbuf_ceiling); SO_SNDBUF
	 * locks it there, so on Debian's sysctls (wmem_max 212992) that is
	 * below the 4 MiB autotuning reached before the caps. */
	EXPECT_EQ(released.snd_min, snd_set_max < tcp_wmem2 ? snd_set_max : tcp_wmem2);
	limits_write(cg, 8 * b, 8 * b, 6 * b, 3 * b);
	ASSERT_OK(daemon_reload_until(cg, 8 * b, 5000));

	/* 3. Far again. */
	ASSERT_OK(xload_quiesce(bulk));
	ASSERT_OK(xload_finish(bulk, 60000, msg, sizeof(msg)) == 0 ? 0 : (test_log("%s", msg), -1));
	test_log("bulk connection: %s", msg);
	xload_close(bulk);
	EXPECT_TRUE(wait_pinned(ingress, 0, 10000));
	EXPECT_TRUE(wait_pinned("send_length", 0, 10000));
	EXPECT_GE(daemon_log_wait("per-segment enforcement off", 1, 10000), 1);
	test_log("after close: ingress link %d, send_length link %d", pinned(ingress),
		 pinned("send_length"));

	/* 4. Churn: two connections opened and closed, 20 times, each time
	 * near and far again. The links stay (one "on"), and go a while after
	 * the last close. */
	{
		int on0 = daemon_log_count("per-segment enforcement on"), on, off0, off;
		double t0 = now_sec();

		off0 = daemon_log_count("per-segment enforcement off");
		for (int i = 0; i < 20; i++) {
			struct xload *l = xload_start(&(struct xload_opts){
				.rx_cgroup = cg, .nconn = 2, .idle = 1, .mode = XL_READ });

			ASSERT_TRUE(l != NULL);
			xload_close(l);
			msleep(20);	/* time for the daemon to see each */
		}
		on = daemon_log_count("per-segment enforcement on") - on0;
		off = daemon_log_count("per-segment enforcement off") - off0;
		test_log("churn: 20 times near and far in %.2f s: links made %d times, removed %d",
			 now_sec() - t0, on, off);
		EXPECT_LE(on, 3);
		EXPECT_LE(off, 2);
		/* Read at the next poll (1 s), then one or two holds of 1 s. */
		EXPECT_TRUE(wait_pinned(ingress, 0, 10000));
	}

	/* 5. Near and far while the daemon is stopped: it reads both at once
	 * when it resumes, and must still unlink once far. */
	{
		struct xload *l;

		ASSERT_OK(daemon_signal(SIGSTOP));
		l = xload_start(&(struct xload_opts){ .rx_cgroup = cg, .nconn = 2, .idle = 1,
						     .mode = XL_READ });
		if (l)
			xload_close(l);
		/* Both events in the ring buffer before the daemon runs again. */
		for (int i = 0; i < 200 && !bufs_summary(cg, 0, &near) && near.sockets; i++)
			msleep(10);
		ASSERT_OK(daemon_signal(SIGCONT));
		ASSERT_TRUE(l != NULL);
		EXPECT_TRUE(wait_pinned(ingress, 1, 3000));
		EXPECT_TRUE(wait_pinned(ingress, 0, 10000));
		test_log("near and far in one batch: ingress link %d after", pinned(ingress));
	}

	close(skmem_storage_fd);
	ASSERT_EQ(daemon_stop(), 0);
	return test_done();
}
