/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Whether the kernel functions exact mode hooks still have the prototypes
 * its programs read (bpf/account_exact.bpf.c): a renamed or inlined
 * function, or one whose arguments moved, would load but count wrong.
 */
#ifndef TCPBUF_HOOKFIT_H
#define TCPBUF_HOOKFIT_H

#include <stdbool.h>
#include <stddef.h>

#define HOOKFIT_MAX_PARAMS 8

/* A function as the kernel's BTF gives it: C type names ("struct sock *",
 * "int", "void"); found false when BTF has no such function. */
struct hook_seen {
	bool found;
	const char *ret;
	int nparams;
	const char *params[HOOKFIT_MAX_PARAMS];
};

/* The functions exact mode hooks, NULL-terminated. */
extern const char *const hookfit_functions[];

/* Whether @seen is what exact mode's hook on @func reads; if not, @why says
 * how it differs in one line ("sk_forced_mem_schedule: (struct sock *, int)
 * expected, the kernel has (struct sock *, long)"). */
bool hook_fits(const char *func, const struct hook_seen *seen, char *why, size_t len);

/* Every hooked function against the running kernel's BTF: true, or false
 * with @why naming the first that does not fit. */
bool hookfit_kernel(char *why, size_t len);

#endif
