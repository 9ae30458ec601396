// SPDX-License-Identifier: GPL-2.0
/*
 * Enforcement: hold each limited cgroup under its thresholds.
 *   sockops          caps for a socket of a limited subtree when it is
 *                    established, then at each segment it receives
 *   ingress          refuses data that would take a cgroup past max
 *                    (attached only to cgroups with limits)
 *   sweep            iter/tcp: caps for every existing socket, run by the
 *                    daemon right after a state change
 *   limits_refresh   run on demand (raw_tp, test run): each usage entry's
 *                    copy of its cgroup's limits, its state and near or far
 *                    after a change of limits
 *   sendmsg_sample   sampled mode only: keeps a limited socket's usage fresh
 *                    while tcp_sendmsg queues
 *   setsockopt       sampled mode: an SO_SNDBUF past tcp_wmem[2] widens its
 *                    cgroups' guard before it applies; while ingress rests,
 *                    an SO_RCVBUF past a bounded share leaves bounded
 *   rest_rcvbuf_grow while ingress rests: autotuning past a bounded share
 *                    leaves bounded (enforce_rest.bpf.h)
 * The state machine itself runs where usage changes (charge.bpf.h); the
 * caps come from enforce_policy.bpf.h. Only sockets with a limited ancestor
 * that is near (tcpbuf_near_next()) are armed: capped, followed segment by
 * segment, checked at ingress. The others are counted and left alone.
 */
/* Its charges leave the guard to followed_guard_check() (charge.bpf.h). */
#define TCPBUF_CHARGE_NO_GUARD
#include "enforce_sockops.bpf.h"
#include "enforce_ingress.bpf.h"
#include "enforce_sweep.bpf.h"
#include "enforce_refresh.bpf.h"
#include "enforce_setsockopt.bpf.h"
#include "timehist.bpf.h"
#include <bpf/bpf_tracing.h>

char LICENSE[] SEC("license") = "GPL";

/* ------------------------------------------------------- sampled mode */

/*
 * Sampled mode sees a writer's queue only when sendmsg returns, and a writer
 * blocked on a full peer may not return for a long time. For sockets of
 * limited subtrees, sample at each round of tcp_sendmsg's copy loop, so the
 * state machine and the ingress check see what is queued (kernel >= 6.2).
 */
SEC("tp_btf/tcp_sendmsg_locked")
int BPF_PROG(sendmsg_sample, const struct sock *csk, const struct msghdr *msg,
	     const struct sk_buff *skb, int size_goal)
{
	struct sock *sk = (struct sock *)csk;

	TIMEHIST_EMPTY(TH_CLOCK);
	TIMEHIST_START();
	/* Every TCP socket on the host passes here: while no cgroup has
	 * limits nothing is ours to do. */
	if (limits_present())
		sample_if_armed(sk);
	TIMEHIST_END(TH_SENDMSG_SAMPLE);
	return 0;
}
