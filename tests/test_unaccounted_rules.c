// SPDX-License-Identifier: GPL-2.0
/*
 * The two rules that keep sockets without socket storage from flooding the
 * ring buffer and the log, table-driven: BPF tells the daemon at a cgroup's
 * first such socket and at each doubling (tcpbuf_unaccounted_tell()); the
 * daemon says a cgroup at most once per UNACCOUNTED_LOG_MS
 * (unaccounted_log_due()).
 */
#include "harness.h"
#include <linux/types.h>
#include "tcpbuf_enforce.h"
#include "../src/unaccounted.h"

static const struct { __u32 now; int tell; } tell_cases[] = {
	{ 0, 0 }, { 1, 1 }, { 2, 1 }, { 3, 0 }, { 4, 1 }, { 5, 0 }, { 7, 0 }, { 8, 1 },
	{ 1000, 0 }, { 1024, 1 }, { 0x80000000u, 1 }, { 0xffffffffu, 0 },
};

static const struct { uint64_t last_ms, now_ms; int due; } due_cases[] = {
	{ 0, 5, 1 },				/* never said */
	{ 1000, 1000, 0 },			/* just said */
	{ 1000, 1000 + UNACCOUNTED_LOG_MS - 1, 0 },
	{ 1000, 1000 + UNACCOUNTED_LOG_MS, 1 },
	{ 1000, 1000 + 10 * UNACCOUNTED_LOG_MS, 1 },
};

int main(void)
{
	test_init();
	for (size_t i = 0; i < sizeof(tell_cases) / sizeof(tell_cases[0]); i++) {
		test_log("tell at %u: %d", tell_cases[i].now, tcpbuf_unaccounted_tell(tell_cases[i].now));
		EXPECT_EQ(tcpbuf_unaccounted_tell(tell_cases[i].now), tell_cases[i].tell);
	}
	for (size_t i = 0; i < sizeof(due_cases) / sizeof(due_cases[0]); i++)
		EXPECT_EQ(unaccounted_log_due(due_cases[i].last_ms, due_cases[i].now_ms),
			  due_cases[i].due);
	return test_done();
}
