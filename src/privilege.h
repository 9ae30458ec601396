/* SPDX-License-Identifier: GPL-2.0 */
/*
 * CAP_SYS_ADMIN stays in the permitted set and is made effective only for
 * the calls that need it (setns() into containers' network namespaces,
 * mounting bpffs): effective, it would also stand in for CAP_BPF,
 * CAP_PERFMON and CAP_NET_ADMIN everywhere else.
 */
#ifndef TCPBUF_PRIVILEGE_H
#define TCPBUF_PRIVILEGE_H

#include <stdbool.h>

/* Nothing when CAP_SYS_ADMIN is not permitted. */
void sys_admin_effective(bool on);

#endif
