// SPDX-License-Identifier: GPL-2.0
/*
 * container_name_from_path() over the cgroup paths each runtime really
 * makes (shapes from runc's and crun's systemd and cgroupfs drivers,
 * containerd's and CRI-O's CRI plugins, kubelet's cgroup managers, podman):
 * the container id and the pod UID, or nothing, for each.
 */
#include <stdio.h>
#include <string.h>

#include "../src/container_name.h"

#define ID  "9ab4c1e27f0d3b5a6c8e9f10213243546576879809a0b1c2d3e4f5061728394a"
#define ID2 "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define UID "1f3c2d4e-5a6b-4c7d-8e9f-0a1b2c3d4e5f"
#define UID_ "1f3c2d4e_5a6b_4c7d_8e9f_0a1b2c3d4e5f"
#define KS "/kubepods.slice"
#define KB KS "/kubepods-burstable.slice"
#define KE KS "/kubepods-besteffort.slice"

static const struct name_case {
	const char *path, *container_id, *pod_uid;	/* "" = none */
} cases[] = {
	/* docker (runc, systemd driver; also cri-dockerd) */
	{ "/system.slice/docker-" ID ".scope", ID, "" },
	/* docker, cgroupfs driver */
	{ "/docker/" ID, ID, "" },
	/* podman rootful and rootless (systemd), its sub-cgroup, cgroupfs */
	{ "/machine.slice/libpod-" ID ".scope", ID, "" },
	{ "/machine.slice/libpod-" ID ".scope/container", ID, "" },
	{ "/user.slice/user-1000.slice/user@1000.service/user.slice/libpod-" ID ".scope", ID, "" },
	{ "/libpod_parent/libpod-" ID, ID, "" },
	/* conmon's own scopes are not containers */
	{ "/machine.slice/libpod-conmon-" ID ".scope", "", "" },
	{ KB "/kubepods-burstable-pod" UID_ ".slice/crio-conmon-" ID ".scope", "", UID },
	/* Kubernetes, systemd driver: containerd, CRI-O, cri-dockerd */
	{ KB "/kubepods-burstable-pod" UID_ ".slice/cri-containerd-" ID ".scope", ID, UID },
	{ KE "/kubepods-besteffort-pod" UID_ ".slice/crio-" ID ".scope", ID, UID },
	{ KS "/kubepods-pod" UID_ ".slice/docker-" ID ".scope", ID, UID },
	/* the pod slice alone, and a QoS slice alone */
	{ KB "/kubepods-burstable-pod" UID_ ".slice", "", UID },
	{ KB, "", "" },
	{ KS, "", "" },
	/* a static pod's UID is a hash, no dashes */
	{ KS "/kubepods-pod6c9b0f8e0a7d4b2e9f1c3d5a7b9e1f2a.slice", "",
	  "6c9b0f8e0a7d4b2e9f1c3d5a7b9e1f2a" },
	/* Kubernetes, cgroupfs driver: containerd (bare id), CRI-O (crio-ID) */
	{ "/kubepods/burstable/pod" UID "/" ID, ID, UID },
	{ "/kubepods/besteffort/pod" UID "/" ID, ID, UID },
	{ "/kubepods/pod" UID "/" ID, ID, UID },
	{ "/kubepods/pod" UID "/crio-" ID, ID, UID },
	{ "/kubepods/burstable/pod" UID, "", UID },
	/* a container's own sub-cgroups (systemd inside it) belong to it */
	{ "/system.slice/docker-" ID ".scope/init.scope", ID, "" },
	/* the deepest container wins (docker in docker) */
	{ "/system.slice/docker-" ID ".scope/docker/" ID2, ID2, "" },
	/* kubelet under a custom cgroup root */
	{ "/k8s.slice/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UID_
	  ".slice/cri-containerd-" ID ".scope", ID, UID },
	/* nothing: plain units, lookalikes, short or upper-case ids, wrong places */
	{ "/", "", "" },
	{ "", "", "" },
	{ "/system.slice/web.service", "", "" },
	{ "/system.slice/docker.service", "", "" },
	{ "/system.slice/docker-compose@app.service", "", "" },
	{ "/system.slice/docker-9ab4c1e27f0d.scope", "", "" },
	{ "/system.slice/docker-" "9AB4C1E27F0D3B5A6C8E9F10213243546576879809A0B1C2D3E4F5061728394A"
	  ".scope", "", "" },
	{ "/system.slice/docker-" ID ".service", "", "" },
	{ "/system.slice/docker-" ID, "", "" },
	{ "/" ID, "", "" },
	{ "/other/pod" UID "/" ID, "", "" },
	{ "/kubepods/guaranteed/pod" UID "/" ID, "", "" },
	{ KS "/kubepods-pod.slice", "", "" },
	{ KS "/kubepods-podnot-a-uid!.slice", "", "" },
	{ "/tcpbuf-test-1234/a", "", "" },
};

int main(void)
{
	int failures = 0;
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct name_case *c = &cases[i];
		struct container_name cn;
		bool found = container_name_from_path(c->path, &cn);
		bool want = c->container_id[0] || c->pod_uid[0];

		if (strcmp(cn.container_id, c->container_id) || strcmp(cn.pod_uid, c->pod_uid) ||
		    found != want) {
			printf("FAIL %s: container_id '%s' pod_uid '%s' found %d, want '%s' '%s' %d\n",
			       c->path, cn.container_id, cn.pod_uid, found, c->container_id,
			       c->pod_uid, want);
			failures++;
		}
	}
	{
		struct container_name cn;

		if (container_name_from_path(NULL, &cn) || cn.container_id[0] || cn.pod_uid[0]) {
			printf("FAIL NULL path gave a name\n");
			failures++;
		}
	}
	printf("%zu paths, %d wrong\n", i + 1, failures);
	return failures ? 1 : 0;
}
