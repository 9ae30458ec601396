/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Profiling aid, off unless built with BPF_EXTRA_CFLAGS=-DTCPBUF_TIME_HIST:
 * a histogram of the time the per-segment and per-syscall programs (and
 * the per-socket ones: sock_ops at establishment, destruction) spend in
 * their work, per program, in the pinned per-CPU array "time_hist" (key:
 * program * TH_BUCKETS + bucket; buckets of 16 ns below 1,024 ns, then one
 * per power of two). bpf_stats gives only a mean, and a mean can hide rare
 * interrupts taken inside a program; the histogram shows what a typical run
 * costs. TH_CLOCK times an empty section: the cost of the timing itself;
 * TH_CLOCK_RECV the same at the start of recv_length, where interrupts due
 * after recvmsg land whatever the program does.
 */
#ifndef TCPBUF_TIMEHIST_BPF_H
#define TCPBUF_TIMEHIST_BPF_H

enum timehist_prog {
	TH_RECV_LENGTH,
	TH_SEND_LENGTH,
	TH_INGRESS,
	TH_SENDMSG_SAMPLE,
	TH_CLOCK,
	TH_CLOCK_RECV,
	TH_SOCKOPS_ESTABLISHED,	/* enforce_sockops at establishment */
	TH_DESTROY_SOCK,
	TH_SOCKOPS_SEGMENT,	/* enforce_sockops at a segment (armed sockets) */
	TH_SOCKOPS_STATE,	/* enforce_sockops at a state change (the close) */
	TH_SOCKOPS_CROWD,	/* its crowd part (RWND_INIT, a listen) */
	TH_PROGS,
};

#define TH_LINEAR	64	/* 16 ns each */
#define TH_BUCKETS	(TH_LINEAR + 22)

#ifdef TCPBUF_TIME_HIST
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, TH_PROGS * TH_BUCKETS);
	__type(key, __u32);
	__type(value, __u64);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} time_hist SEC(".maps");

static __always_inline void timehist_add(__u32 prog, __u64 t0)
{
	__u64 ns = bpf_ktime_get_ns() - t0, *slot;
	__u32 b;

	if (ns < TH_LINEAR * 16) {
		b = ns >> 4;
	} else {
		/* 1,024 ns and up: TH_LINEAR + log2(ns) - 10 */
		b = TH_LINEAR;
		ns >>= 11;
		while (ns && b < TH_BUCKETS - 1) {
			ns >>= 1;
			b++;
		}
	}
	b += prog * TH_BUCKETS;
	slot = bpf_map_lookup_elem(&time_hist, &b);
	if (slot)
		*slot += 1;
}

/* The start time in a per-CPU slot, not on the stack: for a program whose
 * stack is at the verifier's limit (enforce_sockops). A run nested on the
 * same CPU (softirq) overwrites it, so that outer run reads short. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} time_hist_t0 SEC(".maps");

static __always_inline void timehist_t0_set(void)
{
	__u32 zero = 0;
	__u64 *t0 = bpf_map_lookup_elem(&time_hist_t0, &zero);

	if (t0)
		*t0 = bpf_ktime_get_ns();
}

static __always_inline void timehist_t0_add(__u32 prog)
{
	__u32 zero = 0;
	__u64 *t0 = bpf_map_lookup_elem(&time_hist_t0, &zero);

	if (t0)
		timehist_add(prog, *t0);
}
#define TIMEHIST_START()	__u64 timehist_t0 = bpf_ktime_get_ns()
#define TIMEHIST_END(prog)	timehist_add(prog, timehist_t0)
#define TIMEHIST_EMPTY(prog)	timehist_add(prog, bpf_ktime_get_ns())
#define TIMEHIST_START_SLOT()	timehist_t0_set()
#define TIMEHIST_END_SLOT(prog)	timehist_t0_add(prog)
#else
#define TIMEHIST_START()	do { } while (0)
#define TIMEHIST_END(prog)	do { } while (0)
#define TIMEHIST_EMPTY(prog)	do { } while (0)
#define TIMEHIST_START_SLOT()	do { } while (0)
#define TIMEHIST_END_SLOT(prog)	do { } while (0)
#endif

#endif /* TCPBUF_TIMEHIST_BPF_H */
