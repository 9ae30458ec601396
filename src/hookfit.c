// SPDX-License-Identifier: GPL-2.0
/*
 * Exact mode reads its hooks' arguments by position (BPF_PROG()): checked
 * here against the kernel's BTF before loading, so that `auto` picks
 * sampled accounting, and says why, on a kernel where a hook moved.
 */
#include "hookfit.h"

#include <bpf/btf.h>
#include <stdio.h>
#include <string.h>

struct hook_want {
	const char *func, *ret;
	int nparams;
	const char *params[HOOKFIT_MAX_PARAMS];
};

/* As bpf/account_exact.bpf.c reads them (6.1 .. 7.2). */
static const struct hook_want wanted[] = {
	{ "__sk_mem_raise_allocated", "int", 4, { "struct sock *", "int", "int", "int" } },
	{ "__sk_mem_reduce_allocated", "void", 2, { "struct sock *", "int" } },
	{ "sk_forced_mem_schedule", "void", 2, { "struct sock *", "int" } },
};

const char *const hookfit_functions[] = {
	"__sk_mem_raise_allocated", "__sk_mem_reduce_allocated", "sk_forced_mem_schedule", NULL,
};

static void proto_str(char *buf, size_t len, const char *ret, int n, const char *const *p)
{
	size_t off = (size_t)snprintf(buf, len, "%s (", ret);

	for (int i = 0; i < n && off < len; i++)
		off += (size_t)snprintf(buf + off, len - off, "%s%s", i ? ", " : "", p[i]);
	if (off < len)
		snprintf(buf + off, len - off, ")");
}

bool hook_fits(const char *func, const struct hook_seen *seen, char *why, size_t len)
{
	const struct hook_want *w = NULL;
	char want_s[160], seen_s[160];
	bool same;

	for (size_t i = 0; i < sizeof(wanted) / sizeof(wanted[0]); i++)
		if (!strcmp(wanted[i].func, func))
			w = &wanted[i];
	if (!w) {
		snprintf(why, len, "%s: not a function exact mode hooks", func);
		return false;
	}
	if (!seen->found) {
		snprintf(why, len, "%s: not in the kernel's BTF (renamed, or inlined everywhere)", func);
		return false;
	}
	same = seen->nparams == w->nparams && !strcmp(seen->ret, w->ret);
	for (int i = 0; same && i < w->nparams; i++)
		same = !strcmp(seen->params[i], w->params[i]);
	if (same)
		return true;
	proto_str(want_s, sizeof(want_s), w->ret, w->nparams, w->params);
	proto_str(seen_s, sizeof(seen_s), seen->ret, seen->nparams, seen->params);
	snprintf(why, len, "%s: %s expected, the kernel has %s", func, want_s, seen_s);
	return false;
}

/* A C name for a BTF type, as far as the hooks' arguments need: base types,
 * typedefs by name, structs, pointers, qualifiers dropped. */
static const char *type_name(const struct btf *btf, __u32 id, char *buf, size_t len)
{
	const struct btf_type *t;
	char inner[96];

	while (id) {
		t = btf__type_by_id(btf, id);
		if (!t)
			break;
		switch (btf_kind(t)) {
		case BTF_KIND_CONST:
		case BTF_KIND_VOLATILE:
		case BTF_KIND_RESTRICT:
		case BTF_KIND_TYPE_TAG:
			id = t->type;
			continue;
		case BTF_KIND_PTR:
			snprintf(buf, len, "%s *", type_name(btf, t->type, inner, sizeof(inner)));
			return buf;
		case BTF_KIND_STRUCT:
			snprintf(buf, len, "struct %s", btf__name_by_offset(btf, t->name_off));
			return buf;
		case BTF_KIND_UNION:
			snprintf(buf, len, "union %s", btf__name_by_offset(btf, t->name_off));
			return buf;
		default:
			snprintf(buf, len, "%s", btf__name_by_offset(btf, t->name_off));
			return buf;
		}
	}
	snprintf(buf, len, "void");
	return buf;
}

static void seen_of(const struct btf *btf, const char *func, struct hook_seen *s,
		    char names[][96])
{
	const struct btf_type *fn, *proto;
	const struct btf_param *p;
	__s32 id = btf__find_by_name_kind(btf, func, BTF_KIND_FUNC);

	memset(s, 0, sizeof(*s));
	if (id <= 0)
		return;
	fn = btf__type_by_id(btf, id);
	proto = fn ? btf__type_by_id(btf, fn->type) : NULL;
	if (!proto || !btf_is_func_proto(proto))
		return;
	s->found = true;
	s->ret = type_name(btf, proto->type, names[0], 96);
	s->nparams = btf_vlen(proto);
	p = btf_params(proto);
	for (int i = 0; i < s->nparams && i < HOOKFIT_MAX_PARAMS; i++)
		s->params[i] = type_name(btf, p[i].type, names[i + 1], 96);
	if (s->nparams > HOOKFIT_MAX_PARAMS)
		s->nparams = HOOKFIT_MAX_PARAMS;
}

bool hookfit_kernel(char *why, size_t len)
{
	struct btf *btf = btf__load_vmlinux_btf();
	char names[HOOKFIT_MAX_PARAMS + 1][96];
	struct hook_seen s;
	bool ok = true;

	if (!btf) {
		snprintf(why, len, "the kernel has no BTF (/sys/kernel/btf/vmlinux)");
		return false;
	}
	for (int i = 0; ok && hookfit_functions[i]; i++) {
		seen_of(btf, hookfit_functions[i], &s, names);
		ok = hook_fits(hookfit_functions[i], &s, why, len);
	}
	btf__free(btf);
	return ok;
}
