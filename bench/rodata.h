/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Setting a BPF object's .rodata before load, for the tools that load
 * tcpbufd's programs as its loaders would (bpfinfo verify, vprofile).
 * Header-only, as common.h.
 */
#ifndef TCPBUF_BENCH_RODATA_H
#define TCPBUF_BENCH_RODATA_H

#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <stdlib.h>
#include <string.h>
#include "common.h"

/* Set the .rodata integer NAME to VALUE before load, as a loader's
 * skel->rodata->NAME = VALUE would (the verifier prunes on it). */
static inline void rodata_set(struct bpf_object *obj, const char *setting)
{
	const char *eq = strchr(setting, '=');
	struct btf *btf = bpf_object__btf(obj);
	const struct btf_var_secinfo *vs;
	const struct btf_type *sec;
	struct bpf_map *map;
	long long value;
	const void *initial;
	size_t size;
	char *data;
	int id;

	if (!eq || !btf)
		die("%s: not NAME=VALUE, or the object has no BTF", setting);
	value = strtoll(eq + 1, NULL, 0);
	map = bpf_object__find_map_by_name(obj, ".rodata");
	id = btf__find_by_name_kind(btf, ".rodata", BTF_KIND_DATASEC);
	if (!map || id < 0)
		die("%s: the object has no .rodata", setting);
	initial = bpf_map__initial_value(map, &size);
	data = malloc(size);
	if (!initial || !data)
		die("%s: no .rodata image", setting);
	memcpy(data, initial, size);
	sec = btf__type_by_id(btf, id);
	vs = btf_var_secinfos(sec);
	for (int i = 0; i < btf_vlen(sec); i++, vs++) {
		const char *name = btf__name_by_offset(btf, btf__type_by_id(btf, vs->type)->name_off);

		if (strlen(name) != (size_t)(eq - setting) || strncmp(name, setting, eq - setting))
			continue;
		if (vs->offset + vs->size > size || (vs->size != 4 && vs->size != 8))
			die("%s: not a 32- or 64-bit integer", setting);
		if (vs->size == 4)
			*(__u32 *)(data + vs->offset) = (__u32)value;
		else
			*(__u64 *)(data + vs->offset) = (__u64)value;
		if (bpf_map__set_initial_value(map, data, size))
			die("%s: cannot set .rodata", setting);
		free(data);
		return;
	}
	die("%s: no such .rodata variable", setting);
}

#endif /* TCPBUF_BENCH_RODATA_H */
