// SPDX-License-Identifier: GPL-2.0
/*
 * What a first touch costs in a BPF program right after a kernel entry, for
 * bench/coldtouch. Run with BPF_PROG_TEST_RUN: at repeat 1 every run follows
 * the syscall's entry; at repeat 1000 nearly every run finds what the one
 * before left. Three programs, so the difference says lines or pages:
 * empty, TOUCHES cache lines of one page, TOUCHES lines each on its own page.
 * Never loaded by tcpbufd.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

char LICENSE[] SEC("license") = "GPL";

#define TOUCHES	16

struct page_value {
	__u64 word[512];	/* 4 KiB: array values are laid out back to back */
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, TOUCHES);
	__type(key, __u32);
	__type(value, struct page_value);
} pages SEC(".maps");

SEC("xdp")
int touch_none(struct xdp_md *ctx)
{
	return XDP_PASS;
}

SEC("xdp")
int touch_lines(struct xdp_md *ctx)
{
	__u32 key = 0;
	struct page_value *v = bpf_map_lookup_elem(&pages, &key);
	__u64 sum = 0;

	if (!v)
		return XDP_PASS;
	for (__u32 i = 0; i < TOUCHES; i++)
		sum += v->word[(i * 8) & 511];	/* 64 bytes apart */
	return sum == 1 ? XDP_DROP : XDP_PASS;	/* keeps the loads */
}

SEC("xdp")
int touch_pages(struct xdp_md *ctx)
{
	__u64 sum = 0;

	for (__u32 i = 0; i < TOUCHES; i++) {
		__u32 key = i;
		struct page_value *v = bpf_map_lookup_elem(&pages, &key);

		if (v)
			sum += v->word[0];
	}
	return sum == 1 ? XDP_DROP : XDP_PASS;
}
