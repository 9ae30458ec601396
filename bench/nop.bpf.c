// SPDX-License-Identifier: GPL-2.0
/*
 * Empty programs on the tracepoints sampled mode uses, for calibration only:
 * with kernel.bpf_stats_enabled=1 their run_time_ns per run is what the
 * statistics themselves add to every program (two clock reads), so bench/run
 * can report tcpbufd's per-run times net of it. Loaded by `bpfinfo hold`,
 * never by tcpbufd.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

char LICENSE[] SEC("license") = "GPL";

SEC("tp_btf/sock_send_length")
int nop_send(void *ctx)
{
	return 0;
}

SEC("tp_btf/sock_recv_length")
int nop_recv(void *ctx)
{
	return 0;
}
