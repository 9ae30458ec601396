// SPDX-License-Identifier: GPL-2.0
/*
 * BypassProtMem=yes (kernel >= 6.19, SK_BPF_BYPASS_PROT_MEM): a limited
 * cgroup's stalled load is held at its max by tcpbufd while the global
 * TCP pool (/proc/net/sockstat "TCP: mem", the oracle) does not move; the
 * same load after BypassProtMem=no moves it by about what the cgroup holds.
 * Also memory.events sock_throttled beside failcnt, where the kernel has it.
 * Skipped with the reason where the kernel has no SK_BPF_BYPASS_PROT_MEM.
 */
#include "enforce_util.h"
#include "harness.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LIMIT_PAGES	4096		/* 16 MiB */
#define NCONN		32

/* "TCP: ... mem N" of /proc/net/sockstat: pages in the global tcp_mem pool. */
static int64_t sockstat_tcp_mem(void)
{
	char line[256];
	long long v = -1;
	FILE *f = fopen("/proc/net/sockstat", "r");

	ASSERT_TRUE(f != NULL);
	while (fgets(line, sizeof(line), f)) {
		char *m = strstr(line, " mem ");

		if (!strncmp(line, "TCP:", 4) && m)
			v = atoll(m + 5);
	}
	fclose(f);
	ASSERT_GE(v, 0);
	return v;
}

static void write_config(const char *bypass)
{
	daemon_write_config("[Daemon]\nDropInDir=%s\nStateDir=%s/state\nSampleIntervalMs=200\n"
			    "PollIntervalMs=200\nLogLevel=debug\nBypassProtMem=%s\n",
			    daemon_confdir(), test_tmpdir(), bypass);
}

static void bypass_state(char *buf, size_t len)
{
	char *out = NULL;

	ASSERT_EQ(ctl(&out, "status --json"), 0);
	ASSERT_EQ(json_string_field(out, "bypass_prot_mem", buf, len), JSON_FOUND);
	free(out);
}

/* The stalled load's rise of the global pool, and the cgroup's usage under it. */
static int64_t stalled_rise(const char *cg, int64_t *usage)
{
	char msg[256];
	int64_t before = sockstat_tcp_mem(), after;
	struct xload *l = xload_start(&(struct xload_opts){ .rx_cgroup = cg, .nconn = NCONN,
							     .mode = XL_STALL });

	ASSERT_TRUE(l != NULL);
	msleep(under_emulation() ? 6000 : 3000);
	after = sockstat_tcp_mem();
	*usage = status_field(cg, "usage_pages");
	ASSERT_OK(xload_finish(l, 60000, msg, sizeof(msg)) == 0 ? 0 : (test_log("%s", msg), -1));
	xload_close(l);
	return after - before;
}

/* memory.events sock_throttled of @cg, read here, against status --json. */
static void check_sock_throttled(const char *cg)
{
	char file[4096], line[128], *out = NULL;
	int64_t want = -1, got;
	int r;
	FILE *f;

	snprintf(file, sizeof(file), "%s/memory.events", cg);
	f = fopen(file, "r");
	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, "sock_throttled ", 15))
			want = atoll(line + 15);
	if (f)
		fclose(f);
	ASSERT_EQ(ctl(&out, "status --json"), 0);
	r = json_cgroup_field(out, cg, "sock_throttled", &got);
	free(out);
	if (want < 0) {
		test_log("no sock_throttled in %s: the field must be null", file);
		EXPECT_NE(r, JSON_FOUND);
		return;
	}
	ASSERT_EQ(r, JSON_FOUND);
	EXPECT_EQ(got, want);
}

int main(void)
{
	char state[32];
	int64_t rise_on, rise_off, usage_on, usage_off;
	const char *cg;

	test_init();
	write_config("yes");
	ASSERT_OK(daemon_start(""));
	bypass_state(state, sizeof(state));
	if (!strcmp(state, "unsupported")) {
		ASSERT_EQ(daemon_stop(), 0);
		SKIP("the kernel has no SK_BPF_BYPASS_PROT_MEM (Linux 6.19 and later)");
	}
	EXPECT_TRUE(!strcmp(state, "on"));

	cg = cg_create("limited");
	limits_write(cg, LIMIT_PAGES, 0, 0, 0);
	ASSERT_OK(daemon_reload_until(cg, LIMIT_PAGES, 10000));
	check_sock_throttled(cg);

	rise_on = stalled_rise(cg, &usage_on);
	test_log("BypassProtMem=yes: usage %" PRId64 " pages (max %d), TCP: mem rose %" PRId64,
		 usage_on, LIMIT_PAGES, rise_on);
	/* Held at max by tcpbufd, and not in the global pool: at most the
	 * per-CPU reserves' slack (net.core.mem_pcpu_rsv) moves there. */
	EXPECT_GE(usage_on, LIMIT_PAGES / 2);
	EXPECT_LE(usage_on, LIMIT_PAGES * 105 / 100);
	EXPECT_LT(rise_on, LIMIT_PAGES / 4);

	write_config("no");
	ASSERT_OK(daemon_reload_until(cg, LIMIT_PAGES, 10000));
	bypass_state(state, sizeof(state));
	EXPECT_TRUE(!strcmp(state, "off"));
	rise_off = stalled_rise(cg, &usage_off);
	test_log("BypassProtMem=no: usage %" PRId64 " pages, TCP: mem rose %" PRId64,
		 usage_off, rise_off);
	EXPECT_GE(usage_off, LIMIT_PAGES / 2);
	EXPECT_GE(rise_off, usage_off / 2);
	check_sock_throttled(cg);

	limits_remove(cg);
	ASSERT_EQ(daemon_stop(), 0);
	return test_done();
}
