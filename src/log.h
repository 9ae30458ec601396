/* SPDX-License-Identifier: GPL-2.0 */
#ifndef TCPBUF_LOG_H
#define TCPBUF_LOG_H

#include <syslog.h>

/* Levels are syslog priorities, so journald gets them unchanged. */
extern int log_max_level;

void log_msg(int prio, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int log_level_parse(const char *name);

#define log_err(...)	log_msg(LOG_ERR, __VA_ARGS__)
#define log_warn(...)	log_msg(LOG_WARNING, __VA_ARGS__)
#define log_info(...)	log_msg(LOG_INFO, __VA_ARGS__)
#define log_debug(...)	log_msg(LOG_DEBUG, __VA_ARGS__)

#endif
