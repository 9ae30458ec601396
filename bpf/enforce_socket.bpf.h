/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What sock_ops and the sweep both do to one socket: which sockets are
 * connections, which callbacks it needs, and applying or releasing its caps.
 */
#ifndef TCPBUF_ENFORCE_SOCKET_BPF_H
#define TCPBUF_ENFORCE_SOCKET_BPF_H

#include "enforce_policy.bpf.h"

/*
 * Per-segment callbacks both ways, and the state callback that sees the
 * socket close. The outgoing one (HDR_OPT_LEN, run before TCP computes the
 * window it advertises) is what keeps the receive guard fresh where a
 * window is promised: a reader's window update goes out from recvmsg, with
 * no incoming segment before it.
 */
#define ENFORCE_CB_FLAGS (BPF_SOCK_OPS_PARSE_ALL_HDR_OPT_CB_FLAG |		\
			  BPF_SOCK_OPS_WRITE_HDR_OPT_CB_FLAG | BPF_SOCK_OPS_STATE_CB_FLAG)

/* Sockets of a connection: not a listener, not a time-wait or request
 * minisock. (A passive socket is still SYN_RECV at its established
 * callback: TCP moves it to ESTABLISHED just after.) */
static __always_inline bool sock_ops_connected(__u32 state)
{
	return state != BPF_TCP_LISTEN && state != BPF_TCP_TIME_WAIT &&
	       state != BPF_TCP_NEW_SYN_RECV && state != BPF_TCP_CLOSE;
}

/* The callbacks a socket needs: every segment while armed (a limited
 * ancestor is near); only the close, to be counted out, while its limited
 * ancestors are all far; none without limits. */
static __always_inline int cb_flags_wanted(int flags, bool armed, bool limited)
{
	flags &= ~ENFORCE_CB_FLAGS;
	if (armed)
		return flags | ENFORCE_CB_FLAGS;
	return limited ? flags | BPF_SOCK_OPS_STATE_CB_FLAG : flags;
}

/*
 * Apply caps to one socket. @ctx is what bpf_setsockopt wants in the calling
 * program type (struct bpf_sock_ops * or the socket itself in iter/tcp).
 * SO_*BUF take half the size: the kernel doubles the value.
 * A macro, not an inline function, whose stack layout makes the verifier
 * walk many more states in enforce_sockops.
 */
#define caps_apply(ctx, sk, c, se) ({						\
	__s64 snd_ = sndbuf_target(sk, c, se), rcv_ = rcvbuf_target(sk, c, se);	\
	int val_;								\
										\
	if (tcpbuf_buf_differs((sk)->sk_sndbuf, snd_, (se)->flags & TCPBUF_SE_SNDBUF_SET) && \
	    ((c)->limited || ((se)->flags & TCPBUF_SE_SNDBUF_SET))) {		\
		val_ = snd_ > 0 ? snd_ >> 1 : 0;					\
		if (!bpf_setsockopt(ctx, SOL_SOCKET, SO_SNDBUF, &val_, sizeof(val_))) { \
			(se)->flags |= TCPBUF_SE_SNDBUF_SET;			\
			(se)->set_sndbuf = (sk)->sk_sndbuf;			\
		}								\
	}									\
	if (rcv_ >= 0 &&							\
	    tcpbuf_buf_differs((sk)->sk_rcvbuf, rcv_, (se)->flags & TCPBUF_SE_RCVBUF_SET)) { \
		val_ = rcv_ > 0 ? rcv_ >> 1 : 0;					\
		if (!bpf_setsockopt(ctx, SOL_SOCKET, SO_RCVBUF, &val_, sizeof(val_))) { \
			(se)->flags |= TCPBUF_SE_RCVBUF_SET;			\
			(se)->set_rcvbuf = (sk)->sk_rcvbuf;			\
		}								\
	}									\
	(se)->state = (c)->state;						\
	if ((c)->limited)							\
		(se)->flags = ((se)->flags & ~TCPBUF_SE_FOLLOWED) | TCPBUF_SE_LIMITED; \
	else									\
		(se)->flags &= ~(TCPBUF_SE_LIMITED | TCPBUF_SE_FOLLOWED);	\
})

/*
 * Far again: sizes tcpbufd set while the socket was armed go back to what
 * autotuning stops at (or to the application's own), since no callback
 * would grow them any more; from then on the kernel sizes it. A path apart
 * from caps_apply(), so the verifier walks each alone.
 */
static __always_inline void caps_release(void *ctx, struct sock *sk, struct sock_charge *sc)
{
	struct sock_enforce *se = &sc->enforce;
	int val;

	notice_user_change(sk, se);
	if (se->flags & TCPBUF_SE_SNDBUF_SET) {
		val = (se->user_locks & TCPBUF_SNDBUF_LOCK ? se->user_sndbuf : sndbuf_ceiling) >> 1;
		if (!bpf_setsockopt(ctx, SOL_SOCKET, SO_SNDBUF, &val, sizeof(val)))
			se->set_sndbuf = sk->sk_sndbuf;
	}
	if (se->flags & TCPBUF_SE_RCVBUF_SET) {
		val = (se->user_locks & TCPBUF_RCVBUF_LOCK ? se->user_rcvbuf : rcvbuf_ceiling) >> 1;
		if (!bpf_setsockopt(ctx, SOL_SOCKET, SO_RCVBUF, &val, sizeof(val)))
			se->set_rcvbuf = sk->sk_rcvbuf;
	}
	se->state = TCPBUF_STATE_NORMAL;
	se->flags &= ~TCPBUF_SE_LIMITED;
	verdict_note(sc, verdict_of(sc).epoch, 0, TCPBUF_V_SETTLED | TCPBUF_V_SND_AT_CAP, 0, 0);
}

/*
 * A socket left to the kernel (not armed): followed by the samplers where
 * the walk's @reach says a limited ancestor is dormant and only they see its
 * charges (sampled mode), so the charge that reaches the guard is seen.
 */
static __always_inline void follow_set(struct sock_enforce *se, bool limited, int reach)
{
	if (near_guard_followed && limited && (reach & TCPBUF_NEAR_DORMANT))
		se->flags |= TCPBUF_SE_FOLLOWED;
	else
		se->flags &= ~TCPBUF_SE_FOLLOWED;
}

#endif /* TCPBUF_ENFORCE_SOCKET_BPF_H */
