// SPDX-License-Identifier: GPL-2.0
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/capability.h>
#include "privilege.h"

void sys_admin_effective(bool on)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[2];

	if (syscall(SYS_capget, &h, d) || !(d[0].permitted & (1U << CAP_SYS_ADMIN)))
		return;
	if (on)
		d[0].effective |= 1U << CAP_SYS_ADMIN;
	else
		d[0].effective &= ~(1U << CAP_SYS_ADMIN);
	syscall(SYS_capset, &h, d);
}
