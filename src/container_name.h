/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A container's id and a Kubernetes pod's UID, read from a cgroup path
 * alone (no runtime is asked). Recognised, in any component of the path:
 *   docker-ID.scope  cri-containerd-ID.scope  crio-ID.scope  libpod-ID.scope
 *                                           (systemd cgroup driver, ID 64 hex)
 *   kubepods-pod<UID>.slice, kubepods-burstable-pod<UID>.slice,
 *   kubepods-besteffort-pod<UID>.slice      (kubelet's systemd driver writes
 *                                            the UID's '-' as '_')
 *   /kubepods[/burstable|/besteffort]/pod<UID>/ID   (kubelet's cgroupfs driver)
 *   /docker/ID, /libpod_parent/libpod-ID    (cgroupfs driver of docker, podman)
 * A descendant of a container's cgroup belongs to that container; the
 * deepest container component wins. conmon's scopes (crio-conmon-ID.scope,
 * libpod-conmon-ID.scope) are not containers.
 */
#ifndef TCPBUF_CONTAINER_NAME_H
#define TCPBUF_CONTAINER_NAME_H

#include <stdbool.h>

#define CONTAINER_ID_LEN	64
#define POD_UID_MAX		64

struct container_name {
	char container_id[CONTAINER_ID_LEN + 1];	/* "" when the path has none */
	char pod_uid[POD_UID_MAX + 1];			/* "" when the path has none */
};

/* Fill @out from @path (NULL: nothing found). True if anything was found. */
bool container_name_from_path(const char *path, struct container_name *out);

#endif
