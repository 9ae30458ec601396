// SPDX-License-Identifier: GPL-2.0
/*
 * A reload asked for while the daemon starts (its BPF objects take seconds
 * to load) waits for the event loop instead of ending the daemon by
 * SIGHUP's default action: SIGHUP sent every 20 ms from the loader's log
 * line until the control socket is up leaves the daemon running, its
 * `status` answered, the pending signal taken as one reload once the loop
 * runs ("configuration reloaded" in its log), and SIGTERM still stops it
 * with exit status 0.
 */
#include "harness.h"

#include <signal.h>
#include <stdlib.h>

int main(void)
{
	char *out = NULL;

	test_init();
	daemon_start_signal(SIGHUP);
	ASSERT_OK(daemon_start(""));
	daemon_start_signal(0);
	EXPECT_TRUE(daemon_alive());
	EXPECT_OK(ctl(&out, "status"));
	free(out);
	EXPECT_GE(daemon_log_wait("configuration reloaded", 1, 5000), 1);
	test_log("reloads logged: %d", daemon_log_count("configuration reloaded"));
	ASSERT_EQ(daemon_stop(), 0);
	return test_done();
}
