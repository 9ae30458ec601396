/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Enforcement: loads bpf/enforce.bpf.c next to the accounting (same pinned
 * maps), attaches its sock_ops program at the scope cgroup and its ingress
 * program to the topmost limited cgroups, pins those links under
 * <pin>/links/, and answers the state changes BPF reports by sweeping
 * existing sockets. No libbpf types here.
 */
#ifndef TCPBUF_ENFORCE_DAEMON_H
#define TCPBUF_ENFORCE_DAEMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "cgroups.h"
#include "config.h"
#include "tcpbuf_maps.h"

struct enforcer;

struct enforce_opts {
	const char *pin_path;		/* bpffs directory shared with the loader */
	const char *cgroup_mount;	/* cgroup v2 mount point */
	const char *scope;		/* subtree (relative to the mount) for cgroup programs */
	enum tcpbuf_mode mode;		/* accounting mode the loader runs */
	enum ingress_rest rest;		/* IngressRest= */
};

/* A cgroup with limits: its id and its path relative to the mount. */
struct enforce_cgroup {
	uint64_t id;
	const char *path;
	bool covered;		/* an ancestor has limits too */
};

int enforce_start(const struct enforce_opts *opts, struct enforcer **out);
void enforce_close(struct enforcer *e);

/* What checks the incoming segments of topmost limited cgroup @id. */
enum enforce_ingress {
	ENFORCE_INGRESS_NONE,		/* not a topmost limited cgroup */
	ENFORCE_INGRESS_OFF,		/* none: its limits are far */
	ENFORCE_INGRESS_LINKED,		/* cgroup_skb/ingress */
	ENFORCE_INGRESS_RESTING,	/* none, its sockets bounded (IngressRest=) */
};
enum enforce_ingress enforce_ingress_of(const struct enforcer *e, uint64_t id);

/* IngressRest= changed (a reload): ingress rests, or no longer, from now. */
void enforce_set_rest(struct enforcer *e, enum ingress_rest rest);

/* Readable (EPOLLIN) when BPF reported state changes. */
int enforce_events_fd(const struct enforcer *e);
/* Readable when every limited cgroup has been far for a while: call
 * enforce_hold_expired(), which unlinks what runs per segment if still so. */
int enforce_hold_fd(const struct enforcer *e);
int enforce_hold_expired(struct enforcer *e, const struct cgroup_tree *tree);
/* Log the reported state changes and sweep once; @tree names the cgroups.
 * A sweep too soon after the last waits: enforce_pace_fd() is readable when
 * it is due, then call enforce_pace_expired(). */
int enforce_handle_events(struct enforcer *e, const struct cgroup_tree *tree);
int enforce_pace_fd(const struct enforcer *e);
int enforce_pace_expired(struct enforcer *e, const struct cgroup_tree *tree);
/* Ingress may rest now (enforce_rest.c): enforce_rest_fd() is readable, then
 * call enforce_rest_expired(). */
int enforce_rest_fd(const struct enforcer *e);
int enforce_rest_expired(struct enforcer *e);

/*
 * The limited cgroups are now exactly @cgs (their limits already in the
 * cgroup_limits map): attach ingress refusal where needed, detach where no
 * longer, and sweep the subtrees whose limits changed (@tree names them) so
 * existing sockets get (or lose) their caps.
 */
int enforce_set_limited(struct enforcer *e, const struct enforce_cgroup *cgs, size_t n,
			const struct cgroup_tree *tree);
/* @cgs got limits (new cgroups); @limited cgroups have limits now. */
int enforce_add_limited(struct enforcer *e, const struct enforce_cgroup *cgs, size_t n,
			unsigned limited, const struct cgroup_tree *tree);
/* The cgroup @id lost its limits or is gone; @limited cgroups have limits now. */
int enforce_forget(struct enforcer *e, uint64_t id, unsigned limited);

#endif
