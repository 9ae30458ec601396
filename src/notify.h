/* SPDX-License-Identifier: GPL-2.0 */
/*
 * systemd's service protocol (sd_notify): readiness, status line, reloads
 * and the watchdog. Every call is a no-op when systemd did not start us
 * ($NOTIFY_SOCKET unset), so the daemon runs the same by hand.
 */
#ifndef TCPBUF_NOTIFY_H
#define TCPBUF_NOTIFY_H

/* Programs attached, configuration applied, socket served: READY=1 + STATUS=. */
void notify_ready(const char *mode, unsigned limited_cgroups);
/* Around a reload: RELOADING=1 (+ MONOTONIC_USEC=), then READY=1 + STATUS=. */
void notify_reloading(void);
void notify_reloaded(const char *mode, unsigned limited_cgroups, const char *error);
/* STATUS= again, only if the line changed since the last one sent. */
void notify_status(const char *mode, unsigned limited_cgroups);
void notify_stopping(void);

/*
 * With WatchdogSec= set ($WATCHDOG_USEC, and $WATCHDOG_PID naming us): a
 * timerfd firing at half the interval, for the event loop, which answers
 * each expiry with notify_watchdog(). -1 when there is no watchdog, or
 * after logging why it could not be set up.
 */
int notify_watchdog_timer(void);
void notify_watchdog(void);

#endif
