/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The maps every tcpbufd BPF object shares. Each object declares them with
 * LIBBPF_PIN_BY_NAME, so whichever object loads first creates the pin and the
 * others reuse it: the exact and sampled accounting and the enforcement
 * programs all see the same counters.
 */
#ifndef TCPBUF_MAPS_BPF_H
#define TCPBUF_MAPS_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include "tcpbuf_maps.h"

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, TCPBUF_MAX_CGROUPS);
	__type(key, __u64);
	__type(value, struct cgroup_usage);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} cgroup_usage SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, TCPBUF_MAX_CGROUPS);
	__type(key, __u64);
	__type(value, struct cgroup_limits);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} cgroup_limits SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_SK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct sock_charge);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} sock_charge SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct tcpbuf_meta);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} meta SEC(".maps");

#endif /* TCPBUF_MAPS_BPF_H */
