/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The maps through which charging (charge.bpf.h, in every object) and the
 * enforcement programs talk to the daemon. Pinned by name like the others.
 */
#ifndef TCPBUF_ENFORCE_MAPS_BPF_H
#define TCPBUF_ENFORCE_MAPS_BPF_H

#include "tcpbuf_maps.bpf.h"
#include "tcpbuf_enforce.h"

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct tcpbuf_enforce_ctl);
	__uint(map_flags, BPF_F_MMAPABLE);	/* the daemon bumps epoch in place */
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} enforce_ctl SEC(".maps");

/* State changes are rare (hysteresis between min and pressure): 256 KiB holds
 * thousands while the daemon is busy or down. */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 256 * 1024);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} enforce_events SEC(".maps");

#endif /* TCPBUF_ENFORCE_MAPS_BPF_H */
