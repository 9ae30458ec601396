/* SPDX-License-Identifier: GPL-2.0 */
/* BypassProtMem: limited cgroups' TCP sockets out of the global tcp_mem. */
#ifndef TCPBUF_BYPASS_H
#define TCPBUF_BYPASS_H

#include <stdbool.h>
#include <stdint.h>

enum bypass_state {
	BYPASS_OFF,		/* BypassProtMem=no */
	BYPASS_ON,		/* new sockets of limited cgroups bypass tcp_mem */
	BYPASS_UNSUPPORTED,	/* wanted, but the kernel has no SK_BPF_BYPASS_PROT_MEM */
};

/* What BypassProtMem=@wanted comes to on a kernel that has (or not) the option. */
enum bypass_state bypass_decide(bool wanted, bool kernel_has);
const char *bypass_state_name(enum bypass_state s);

/* Whether the running kernel's BTF names SK_BPF_BYPASS_PROT_MEM (kernel >= 6.19). */
bool bypass_kernel_has(void);

/*
 * Bring the pinned link links/bypass_prot_mem (cgroup/sock_create at @scope,
 * relative to the v2 mount @mount) in line with @wanted. Returns 0 (the state
 * in bypass_current()) or a negative errno after one log line.
 */
int bypass_apply(const char *pin_path, const char *mount, const char *scope, bool wanted);
enum bypass_state bypass_current(void);
/* Sockets taken out of tcp_mem, and refusals, since this daemon loaded the program. */
void bypass_counts(uint64_t *sockets, uint64_t *refused);
void bypass_close(void);

#endif
