// SPDX-License-Identifier: GPL-2.0
/*
 * pressure, the kernel's hysteresis, and lifting the caps.
 *
 * A cgroup with Limit=16M, Pressure=8M, Min=2M holds 16 bulk connections
 * (both ends inside) and 4 idle ones:
 *   1. the receivers read for a second (buffers autotune to megabytes), then
 *      stop: what is in flight and in the open windows lands, the cgroup
 *      enters pressure (pressure_events counts it);
 *   2. the receivers read again, slowly (16 KiB per 100 ms each): usage must
 *      come back under pressure within 2 s and stay under it for the rest of
 *      the 5 s, while the state stays "pressure". Without caps the writers
 *      would refill what the readers take and usage would not move; with
 *      them it settles inside the hysteresis band. No socket holds more than
 *      a fair share meanwhile. (Fully stalled receivers cannot bring usage
 *      down: acknowledged data in a receive queue and unsent data in a send
 *      queue are only freed by reading.)
 *   3. the writers stop and the receivers take everything: usage falls
 *      below min, the state returns to normal and the caps are lifted on
 *      the open sockets (receive buffers back to the generous size, send
 *      buffers above every cap); every byte is then checked. A new bulk
 *      transfer runs within 10% of one in an unlimited sibling
 *      (interleaved, median of 9 paired ratios).
 */
#include "enforce_util.h"
#include "harness.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LIMIT_PAGES	4096		/* 16 MiB */
#define PRESSURE_PAGES	2048		/* 8 MiB */
#define MIN_PAGES	512		/* 2 MiB */
#define NCONN		16
#define NIDLE		4
#define ROUNDS		9
#define TRICKLE		16384		/* bytes per 100 ms per receiver */
#define SETTLE		2.0		/* seconds to get under pressure */

/* Phase 2: usage under pressure from (start + 1 s) to end, in the series. */
static void check_converged(struct peak_sampler *ps, double start, double end)
{
	const struct peak_sample *s;
	size_t n = peak_series(ps, &s), i, checked = 0, over = 0;
	uint64_t worst = 0, first = 0;
	double t_under = -1;

	for (i = 0; i < n; i++) {
		if (s[i].t < start || s[i].t > end)
			continue;
		if (!first)
			first = s[i].pages;
		if (t_under < 0 && s[i].pages < PRESSURE_PAGES)
			t_under = s[i].t - start;
		if (s[i].t < start + SETTLE)
			continue;
		checked++;
		if (s[i].pages >= PRESSURE_PAGES)
			over++;
		if (s[i].pages > worst)
			worst = s[i].pages;
	}
	test_log("trickle: usage %" PRIu64 " pages at the start, under pressure after %.2f s, "
		 "at most %" PRIu64 " pages over the last %.1f s (%zu samples, %zu at or over "
		 "pressure)", first, t_under, worst, end - start - 1.0, checked, over);
	EXPECT_GT(checked, 100);
	EXPECT_GE(t_under, 0);
	EXPECT_LE(t_under, SETTLE);
	EXPECT_EQ(over, 0);
}

int main(void)
{
	const char *cg, *free_cg;
	struct xload *l, *idle;
	struct peak_sampler *ps;
	struct bufs_summary before, during, after;
	double t0, t_trickle, t_drain, lim[ROUNDS], ref[ROUNDS];
	char msg[256];
	int64_t events;
	double ratio;

	test_init();
	enforce_config(1000);
	ASSERT_OK(daemon_start(""));
	cg = cg_create("p");
	free_cg = cg_create("free");
	limits_write(cg, LIMIT_PAGES, LIMIT_PAGES, PRESSURE_PAGES, MIN_PAGES);
	ASSERT_OK(daemon_reload_until(cg, LIMIT_PAGES, 5000));
	ASSERT_EQ(status_field(cg, "pressure_pages"), PRESSURE_PAGES);
	ASSERT_EQ(status_field(cg, "min_pages"), MIN_PAGES);

	idle = xload_start(&(struct xload_opts){ .rx_cgroup = cg, .nconn = NIDLE, .idle = 1,
						  .mode = XL_READ });
	ASSERT_TRUE(idle != NULL);
	msleep(200);
	ASSERT_OK(bufs_summary(cg, 0, &before));
	test_log("idle sockets before: sndbuf %u..%u, rcvbuf %u..%u", before.snd_min,
		 before.snd_max, before.rcv_min, before.rcv_max);

	/* 1. Readers at full speed (buffers autotune to megabytes), then they
	 * stop: what is in flight and in the open windows lands, past pressure. */
	ps = peak_start(cg, 5);
	t0 = now_sec();
	l = xload_start(&(struct xload_opts){ .rx_cgroup = cg, .nconn = NCONN, .mode = XL_READ });
	ASSERT_TRUE(l != NULL);
	msleep(1000);
	ASSERT_OK(xload_set_mode(l, XL_STALL, 0));
	msleep(1000);
	events = status_field(cg, "pressure_events");
	test_log("after the readers' burst: state %s, pressure_events %" PRId64 ", peak %" PRIu64
		 " pages", status_state(cg), events, peak_pages(ps));
	ASSERT_GE(events, 1);

	/* 2. A trickle: back under pressure, and staying there. */
	ASSERT_OK(xload_set_mode(l, XL_TRICKLE, TRICKLE));
	t_trickle = now_sec() - t0;
	ASSERT_OK(wait_state(cg, "pressure", 2000));
	msleep(3000);
	ASSERT_OK(bufs_summary(cg, 0, &during));
	test_log("in pressure: %d sockets, sndbuf %u..%u, rcvbuf %u..%u", during.sockets,
		 during.snd_min, during.snd_max, during.rcv_min, during.rcv_max);
	msleep(2000);
	t_drain = now_sec() - t0;
	EXPECT_EQ(strcmp(status_state(cg), "pressure"), 0);
	/* Nobody holds more than a fair share of pressure (over the sockets
	 * holding memory: at least the NCONN receivers). */
	EXPECT_LE(during.rcv_max, (uint32_t)(PRESSURE_PAGES * 4096LL / NCONN));
	EXPECT_LE(during.snd_max, (uint32_t)(PRESSURE_PAGES * 4096LL / NCONN));

	/* 3. The writers stop and the readers take everything: normal again,
	 * and the caps are lifted on the sockets that are still open. */
	ASSERT_OK(xload_quiesce(l));
	ASSERT_OK(wait_state(cg, "normal", 10000));
	peak_stop(ps);
	check_converged(ps, t_trickle, t_drain);
	msleep(100);
	ASSERT_OK(bufs_summary(cg, 0, &after));
	test_log("after: %d sockets, sndbuf %u..%u, rcvbuf %u..%u; %d with rcvbuf >= 4 MiB",
		 after.sockets, after.snd_min, after.snd_max, after.rcv_min, after.rcv_max,
		 bufs_count_at_least(cg, 1, 4 * MIB));
	/* Every receiver was capped in pressure: back to the generous size.
	 * Send buffers, which tcpbufd sizes on every socket of a limited
	 * subtree, are back to a share of the headroom (and grow from there
	 * while a writer keeps them full): every one above every cap. */
	EXPECT_GE(bufs_count_at_least(cg, 1, 4 * MIB), NCONN);
	EXPECT_GT(after.snd_min, during.snd_max);
	ASSERT_OK(xload_finish(l, 60000, msg, sizeof(msg)) == 0 ? 0 : (test_log("%s", msg), -1));
	test_log("every byte checked: %s", msg);
	xload_close(l);
	xload_close(idle);

	/* A new bulk transfer, against one in an unlimited sibling. */
	for (int r = 0; r < ROUNDS; r++) {
		if (r % 2) {
			lim[r] = bulk_throughput(cg, cg, 1.0);
			ref[r] = bulk_throughput(free_cg, free_cg, 1.0);
		} else {
			ref[r] = bulk_throughput(free_cg, free_cg, 1.0);
			lim[r] = bulk_throughput(cg, cg, 1.0);
		}
		test_log("round %d: limited %.0f MB/s, unlimited %.0f MB/s", r, lim[r] / 1e6,
			 ref[r] / 1e6);
		ASSERT_GT(lim[r], 0);
		ASSERT_GT(ref[r], 0);
	}
	ratio = median_ratio(lim, ref, ROUNDS);
	test_log("bulk after the episode: median %.0f MB/s limited, %.0f MB/s unlimited; median "
		 "of the rounds' ratios %.3f; state %s", median_of(lim, ROUNDS) / 1e6,
		 median_of(ref, ROUNDS) / 1e6, ratio, status_state(cg));
	EXPECT_GE((int64_t)(ratio * 1000), 900);

	peak_free(ps);
	ASSERT_EQ(daemon_stop(), 0);
	return test_done();
}
