// SPDX-License-Identifier: GPL-2.0
/* sd_notify from libsystemd: the protocol is systemd's, so is the code. */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>
#include <systemd/sd-daemon.h>
#include "log.h"
#include "notify.h"

static char last_status[128];

static void status_line(char *buf, size_t len, const char *mode, unsigned limited)
{
	snprintf(buf, len, "%s accounting, %u cgroup%s limited", mode, limited,
		 limited == 1 ? "" : "s");
}

static void notify(const char *state)
{
	int r = sd_notify(0, state);

	if (r < 0)
		log_debug("sd_notify: %s", strerror(-r));
}

void notify_ready(const char *mode, unsigned limited)
{
	char buf[sizeof(last_status) + 32];

	status_line(last_status, sizeof(last_status), mode, limited);
	snprintf(buf, sizeof(buf), "READY=1\nSTATUS=%s", last_status);
	notify(buf);
}

void notify_reloading(void)
{
	char buf[64];
	struct timespec ts;

	/* systemd >= 253 (Type=notify-reload) wants the reload's start time
	 * to tell it from an earlier one; older ones ignore it. */
	clock_gettime(CLOCK_MONOTONIC, &ts);
	snprintf(buf, sizeof(buf), "RELOADING=1\nMONOTONIC_USEC=%llu",
		 (unsigned long long)ts.tv_sec * 1000000ULL + (unsigned long long)ts.tv_nsec / 1000);
	notify(buf);
}

void notify_reloaded(const char *mode, unsigned limited, const char *error)
{
	char buf[sizeof(last_status) + 256];

	status_line(last_status, sizeof(last_status), mode, limited);
	if (error)
		snprintf(buf, sizeof(buf), "READY=1\nSTATUS=%s; last reload refused: %.200s",
			 last_status, error);
	else
		snprintf(buf, sizeof(buf), "READY=1\nSTATUS=%s", last_status);
	notify(buf);
}

void notify_status(const char *mode, unsigned limited)
{
	char line[sizeof(last_status)], buf[sizeof(last_status) + 8];

	status_line(line, sizeof(line), mode, limited);
	if (!strcmp(line, last_status))
		return;
	memcpy(last_status, line, sizeof(last_status));
	snprintf(buf, sizeof(buf), "STATUS=%s", last_status);
	notify(buf);
}

void notify_stopping(void)
{
	notify("STOPPING=1");
}

int notify_watchdog_timer(void)
{
	struct itimerspec its = {};
	uint64_t usec = 0;
	int r, fd;

	r = sd_watchdog_enabled(0, &usec);
	if (r < 0) {
		log_warn("watchdog: bad $WATCHDOG_USEC/$WATCHDOG_PID: %s", strerror(-r));
		return -1;
	}
	if (r == 0 || usec == 0)
		return -1;
	/* Half the interval, as sd_watchdog_enabled(3) recommends. */
	usec /= 2;
	its.it_interval.tv_sec = usec / 1000000;
	its.it_interval.tv_nsec = (usec % 1000000) * 1000;
	its.it_value = its.it_interval;
	fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	if (fd < 0 || timerfd_settime(fd, 0, &its, NULL)) {
		log_err("watchdog: cannot arm a timer: %m");
		if (fd >= 0)
			close(fd);
		return -1;
	}
	log_debug("watchdog: pinging systemd every %llu ms", (unsigned long long)usec / 1000);
	return fd;
}

void notify_watchdog(void)
{
	notify("WATCHDOG=1");
}
