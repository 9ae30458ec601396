/* SPDX-License-Identifier: GPL-2.0 */
/* The (char *err, size_t errlen) pair through which parsers and writers say why they failed. */
#ifndef TCPBUFD_ERRMSG_H
#define TCPBUFD_ERRMSG_H

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>

/* Format the reason into @err (truncated to @errlen); no-op where the caller passed none. */
static inline void set_err(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static inline void set_err(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (!err || errlen == 0)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

#endif /* TCPBUFD_ERRMSG_H */
