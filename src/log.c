// SPDX-License-Identifier: GPL-2.0
/* Plain, readable lines on stderr; journald adds time and priority itself. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "log.h"

int log_max_level = LOG_INFO;

void log_msg(int prio, const char *fmt, ...)
{
	static const char *const prefix[] = {
		[LOG_ERR] = "<3>", [LOG_WARNING] = "<4>", [LOG_INFO] = "<6>", [LOG_DEBUG] = "<7>",
	};
	va_list ap;

	if (prio > log_max_level)
		return;
	/* The <N> prefix lets journald (SyslogLevelPrefix=) keep the priority. */
	fputs(prefix[prio] ? prefix[prio] : "", stderr);
	fputs("tcpbufd: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

int log_level_parse(const char *name)
{
	if (!strcmp(name, "err") || !strcmp(name, "error"))
		return LOG_ERR;
	if (!strcmp(name, "warning") || !strcmp(name, "warn"))
		return LOG_WARNING;
	if (!strcmp(name, "info"))
		return LOG_INFO;
	if (!strcmp(name, "debug"))
		return LOG_DEBUG;
	return -1;
}
