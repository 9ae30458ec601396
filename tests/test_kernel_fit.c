// SPDX-License-Identifier: GPL-2.0
/*
 * Unit tests for what tcpbufd reads of a new kernel: hook_fits() (exact
 * mode's hooks against the kernel's prototypes, so `auto` can pick sampled
 * and say why) and memory_events_parse() (memory.events sock_throttled).
 * Then the running kernel: its hooks must fit where it allows trampolines
 * (so a VM guest that passed on sampled mode would fail here).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../src/hookfit.h"
#include "../src/memevents.h"

static int failures;

#define SOCK "struct sock *"

static const struct fit_case {
	const char *func;
	struct hook_seen seen;
	bool fits;
	const char *why;	/* a part of the reason */
} fit_cases[] = {
	{ "__sk_mem_raise_allocated", { true, "int", 4, { SOCK, "int", "int", "int" } }, true, "" },
	{ "__sk_mem_reduce_allocated", { true, "void", 2, { SOCK, "int" } }, true, "" },
	{ "sk_forced_mem_schedule", { true, "void", 2, { SOCK, "int" } }, true, "" },
	/* renamed or inlined: BTF has no such function */
	{ "__sk_mem_raise_allocated", { false, NULL, 0, { NULL } }, false, "not in the kernel's BTF" },
	/* an argument's type changed (amt as long) */
	{ "__sk_mem_raise_allocated", { true, "int", 4, { SOCK, "int", "long", "int" } }, false,
	  "(struct sock *, int, int, int) expected, the kernel has int (struct sock *, int, long, int)" },
	/* an argument more (kind split in two) */
	{ "__sk_mem_raise_allocated", { true, "int", 5, { SOCK, "int", "int", "int", "int" } }, false,
	  "expected" },
	/* the return value became void: fexit's ret would be garbage */
	{ "__sk_mem_raise_allocated", { true, "void", 4, { SOCK, "int", "int", "int" } }, false,
	  "void (struct sock *" },
	/* the socket argument moved */
	{ "sk_forced_mem_schedule", { true, "void", 2, { "int", SOCK } }, false, "the kernel has" },
	{ "tcp_sendmsg", { true, "int", 3, { SOCK, "struct msghdr *", "size_t" } }, false,
	  "not a function exact mode hooks" },
};

static const struct events_case {
	const char *text, *key;
	int ret;
	uint64_t v;
} events_cases[] = {
	{ "low 0\nhigh 0\nmax 3\noom 0\noom_kill 0\noom_group_kill 0\nsock_throttled 17\n",
	  "sock_throttled", 0, 17 },
	{ "low 0\nhigh 0\nmax 3\noom 0\noom_kill 0\noom_group_kill 0\n", "sock_throttled", -ENOENT, 0 },
	{ "max 3\n", "max", 0, 3 },
	{ "max 3", "max", 0, 3 },			/* no final newline */
	{ "max_x 9\nmax 4\n", "max", 0, 4 },		/* a longer key is another key */
	{ "sock_throttled x\n", "sock_throttled", -EINVAL, 0 },
	{ "sock_throttled 18446744073709551615\n", "sock_throttled", 0, 18446744073709551615ULL },
	{ "", "sock_throttled", -ENOENT, 0 },
};

int main(void)
{
	char why[256];

	for (size_t i = 0; i < sizeof(fit_cases) / sizeof(fit_cases[0]); i++) {
		const struct fit_case *c = &fit_cases[i];
		bool got;

		why[0] = '\0';
		got = hook_fits(c->func, &c->seen, why, sizeof(why));
		if (got != c->fits || (!got && !strstr(why, c->why))) {
			printf("FAIL hook_fits case %zu (%s): got %d \"%s\", want %d \"...%s...\"\n", i,
			       c->func, got, why, c->fits, c->why);
			failures++;
		}
	}
	for (size_t i = 0; i < sizeof(events_cases) / sizeof(events_cases[0]); i++) {
		const struct events_case *c = &events_cases[i];
		uint64_t v = 0;
		int r = memory_events_parse(c->text, c->key, &v);

		if (r != c->ret || (!r && v != c->v)) {
			printf("FAIL memory_events_parse case %zu: got %d %llu, want %d %llu\n", i, r,
			       (unsigned long long)v, c->ret, (unsigned long long)c->v);
			failures++;
		}
	}
	/* The kernel under test: the hooks fit every kernel of the matrix (and
	 * the host's 6.18); a kernel where they do not is news to act on. */
	if (!hookfit_kernel(why, sizeof(why))) {
		printf("FAIL the running kernel: %s\n", why);
		failures++;
	}
	if (failures)
		printf("%d failures\n", failures);
	return failures ? 1 : 0;
}
