/* SPDX-License-Identifier: GPL-2.0 */
#ifndef TCPBUF_LOG_H
#define TCPBUF_LOG_H

#include <stdbool.h>
#include <stdint.h>
#include <syslog.h>

/* Levels are syslog priorities, so journald gets them unchanged. */
extern int log_max_level;

void log_msg(int prio, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int log_level_parse(const char *name);

#define log_err(...)	log_msg(LOG_ERR, __VA_ARGS__)
#define log_warn(...)	log_msg(LOG_WARNING, __VA_ARGS__)
#define log_info(...)	log_msg(LOG_INFO, __VA_ARGS__)
#define log_debug(...)	log_msg(LOG_DEBUG, __VA_ARGS__)

/* stderr is journald's stream for us ($JOURNAL_STREAM names its dev:inode). */
bool log_to_journal(void);

/*
 * A cgroup's state changed: @state is "normal", "pressure" or "max" (what
 * tcpbuf_state_name() gives), @usage_pages its usage now, @limit_pages the
 * threshold it is measured against (0 = none), @mode the accounting mode.
 * Under journald: one entry with MESSAGE=, CGROUP=, USAGE_PAGES=,
 * THRESHOLD_PAGES=, STATE=, PREVIOUS_STATE=, MODE= and MESSAGE_ID=
 * LOG_STATE_MESSAGE_ID (`journalctl MESSAGE_ID=… CGROUP=/x`); otherwise a
 * plain line on stderr ("/x: entered pressure (usage 3120 pages, limit 3072
 * pages)"). Rate-limited per cgroup: at most `burst` messages per
 * `interval`; what is held back is summed up by log_state_flush().
 */
void log_state_change(const char *cgroup, const char *state, uint64_t usage_pages,
		      uint64_t limit_pages, const char *mode);
/* Report cgroups whose rate-limit interval ended with changes held back:
 * their last state and how many changes were not logged. Call periodically. */
void log_state_flush(void);
/* Defaults: 5 messages per cgroup per 30 s. */
void log_state_ratelimit(unsigned interval_ms, unsigned burst);

#define LOG_STATE_MESSAGE_ID "5b3f0b7c2a6e4d1f9c8e2a417d6b0e93"

#endif
