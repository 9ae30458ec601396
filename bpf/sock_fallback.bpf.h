/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The entry of a socket whose socket storage cannot be made. The kernel
 * charges socket storage to the socket's option memory, which
 * net.core.optmem_max bounds (per network namespace since 6.9), so a tenant
 * can exhaust it on its own sockets (a large socket filter) and
 * bpf_sk_storage_get(..., F_CREATE) then fails. Such a socket of a limited
 * subtree gets the same struct sock_charge in a hash map keyed by its
 * cookie instead: it is charged, counted, capped and refused like any other,
 * and counted in its cgroups' unaccounted_sockets, so the administrator sees
 * it. Only the cold path looks here: while fallback_ctl says no entry
 * exists, a socket without storage costs one array lookup more.
 *
 * Included by charge.bpf.h after sock_charge_get(): it uses its ancestry
 * walk and fill.
 */
#ifndef TCPBUF_SOCK_FALLBACK_BPF_H
#define TCPBUF_SOCK_FALLBACK_BPF_H

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, TCPBUF_FALLBACK_SOCKETS);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, __u64);	/* socket cookie */
	__type(value, struct sock_charge);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} sock_fallback SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct tcpbuf_fallback_ctl);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} fallback_ctl SEC(".maps");

/* What a new entry starts from (never written). */
static struct sock_charge sock_fallback_blank;

static __always_inline struct tcpbuf_fallback_ctl *fallback_ctl_get(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&fallback_ctl, &zero);
}

/* The socket's entry in sock_fallback, if it has one. Its key is the cookie
 * made when the entry was (sock_fallback_make()): a socket whose cookie was
 * never made has none. */
static __always_inline struct sock_charge *sock_fallback_lookup(const struct sock *sk)
{
	struct tcpbuf_fallback_ctl *fc = fallback_ctl_get();
	__u64 cookie;

	if (!fc || fc->sockets <= 0)
		return NULL;
	cookie = sk->__sk_common.skc_cookie.counter;
	return cookie ? bpf_map_lookup_elem(&sock_fallback, &cookie) : NULL;
}

/* Tell the daemon, which logs it, @count sockets of @kind
 * (TCPBUF_EVENT_UNACCOUNTED or _LOST) in the cgroup @cgroup_id. By force, as
 * state changes: the adaptive wake-up stays silent behind an unread event. */
static __always_inline void fallback_event(__u64 cgroup_id, __s64 count, __u32 kind)
{
	struct tcpbuf_state_event *ev = bpf_ringbuf_reserve(&enforce_events, sizeof(*ev), 0);

	if (!ev)
		return;
	ev->cgroup_id = cgroup_id;
	ev->time_ns = bpf_ktime_get_ns();
	ev->usage_pages = count;
	ev->threshold_pages = 0;
	ev->old_state = 0;
	ev->new_state = 0;
	ev->kind = kind;
	ev->pad = 0;
	bpf_ringbuf_submit(ev, BPF_RB_FORCE_WAKEUP);
}

/* Count the socket whose entry is @sc in (@delta 1) or out of (-1) the
 * unaccounted_sockets of every cgroup it charges; tell the daemon, which
 * logs it, as tcpbuf_unaccounted_tell() says. */
struct unaccounted_walk {
	const struct sock_charge *sc;
	__s32 delta;
	__u32 own_now;
};

static long unaccounted_level(__u64 i, void *ctx)
{
	struct unaccounted_walk *w = ctx;
	struct cgroup_usage *u;
	__u64 id;
	__u32 now;

	if (!ancestry_level(w->sc, i, &id))
		return 1;
	u = bpf_map_lookup_elem(&cgroup_usage, &id);
	if (!u && w->delta > 0)
		u = usage_entry_make(w->sc, id);
	if (!u)
		return 0;
	now = __sync_fetch_and_add(&u->unaccounted_sockets, w->delta) + w->delta;
	if (i == 0)
		w->own_now = now;
	return 0;
}

static __always_inline void unaccounted_count(const struct sock_charge *sc, __s32 delta)
{
	struct unaccounted_walk w = { .sc = sc, .delta = delta };

	bpf_loop(TCPBUF_MAX_DEPTH, unaccounted_level, &w, 0);
	if (delta >= 0 && tcpbuf_unaccounted_tell(w.own_now))
		fallback_event(sc->ancestors[0], w.own_now, TCPBUF_EVENT_UNACCOUNTED);
}

/*
 * Find or make the fallback entry of @sk, whose cookie is @cookie (the
 * helper that makes it takes the program's context in sock_ops, the socket
 * elsewhere), if the socket has a limited ancestor: others are left as
 * before, uncharged. Made entries are armed (TCPBUF_SE_LIMITED), so ingress
 * holds them to max whatever their count says. NULL for a socket with a
 * limited ancestor: sock_fallback had no room for it (fallback_hold()
 * holds it by other means).
 */
static __always_inline struct sock_charge *sock_fallback_make(struct sock *sk, __u64 cookie)
{
	struct tcpbuf_fallback_ctl *fc = fallback_ctl_get();
	struct ancestry_list a = {};
	struct sock_charge *sc;
	long err;

	if (!fc || !cookie)
		return NULL;
	sc = bpf_map_lookup_elem(&sock_fallback, &cookie);
	if (sc)
		return sc;
	ancestry_list_limited(&a, sk_cgroup(sk));
	if (!a.n)
		return NULL;
	err = bpf_map_update_elem(&sock_fallback, &cookie, &sock_fallback_blank, BPF_NOEXIST);
	sc = bpf_map_lookup_elem(&sock_fallback, &cookie);
	if (!sc)
		return NULL;
	if (!sc->levels && !sc->cgroup_id)
		sock_ancestry_fill(sc, sk);
	if (err)
		return sc;	/* made meanwhile on another CPU, which counts it */
	sc->enforce.flags |= TCPBUF_SE_LIMITED | TCPBUF_SE_FALLBACK;
	__sync_fetch_and_add(&fc->sockets, 1);
	unaccounted_count(sc, 1);
	return sc;
}

/* At the socket's destruction, after its charge and counts went back: its
 * fallback entry, if it has one, and its place in unaccounted_sockets. */
static __always_inline void sock_fallback_release(const struct sock *sk)
{
	struct sock_charge *sc = sock_fallback_lookup(sk);
	struct tcpbuf_fallback_ctl *fc;
	__u64 cookie;

	if (!sc)
		return;
	unaccounted_count(sc, -1);
	cookie = sk->__sk_common.skc_cookie.counter;
	fc = fallback_ctl_get();
	if (fc && !bpf_map_delete_elem(&sock_fallback, &cookie))
		__sync_fetch_and_add(&fc->sockets, -1);
}

#endif /* TCPBUF_SOCK_FALLBACK_BPF_H */
