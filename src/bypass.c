// SPDX-License-Identifier: GPL-2.0
/*
 * BypassProtMem (tcpbufd.conf): where the kernel has SK_BPF_BYPASS_PROT_MEM,
 * a cgroup/sock_create program (bpf/bypass.bpf.c) at the scope cgroup takes
 * each new TCP socket of a limited cgroup out of the global tcp_mem. Its link
 * is pinned like enforcement's, so it outlives the daemon; BypassProtMem=no
 * removes it.
 */
#include "bypass.h"
#include "bpffs.h"
#include "log.h"
#include "tables.h"
#include "bypass.skel.h"

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define LINK_NAME "bypass_prot_mem"

static struct bypass *skel;
static enum bypass_state state;
static bool unsupported_said;

enum bypass_state bypass_decide(bool wanted, bool kernel_has)
{
	if (!wanted)
		return BYPASS_OFF;
	return kernel_has ? BYPASS_ON : BYPASS_UNSUPPORTED;
}

const char *bypass_state_name(enum bypass_state s)
{
	return s == BYPASS_ON ? "on" : s == BYPASS_UNSUPPORTED ? "unsupported" : "off";
}

/* The option is an enumerator of an anonymous uapi enum: look at every enum. */
bool bypass_kernel_has(void)
{
	struct btf *btf = btf__load_vmlinux_btf();
	bool found = false;

	if (!btf)
		return false;
	for (__u32 id = 1; id < btf__type_cnt(btf) && !found; id++) {
		const struct btf_type *t = btf__type_by_id(btf, id);
		const struct btf_enum *e;

		if (!btf_is_enum(t))
			continue;
		e = btf_enum(t);
		for (__u16 i = 0; i < btf_vlen(t); i++, e++) {
			if (!strcmp(btf__name_by_offset(btf, e->name_off), "SK_BPF_BYPASS_PROT_MEM")) {
				found = true;
				break;
			}
		}
	}
	btf__free(btf);
	return found;
}

static int link_path(const char *pin_path, char *buf, size_t len)
{
	return bpffs_path(buf, len, pin_path, "links/", LINK_NAME);
}

static int attach(const char *pin_path, const char *mount, const char *scope)
{
	LIBBPF_OPTS(bpf_object_open_opts, opts, .pin_root_path = pin_path);
	char path[PATH_MAX], cg[PATH_MAX];
	struct bpf_link *link;
	int cg_fd, fd, err;

	err = link_path(pin_path, path, sizeof(path));
	if (err)
		return err;
	if (snprintf(cg, sizeof(cg), "%s%s", mount, strcmp(scope, "/") ? scope : "") >= (int)sizeof(cg))
		return -ENAMETOOLONG;
	if (!skel) {
		skel = bypass__open_opts(&opts);
		if (!skel)
			return -errno;
		err = tables_fit(skel->obj, pin_path);
		if (!err)
			err = bypass__load(skel);
		if (err) {
			bypass__destroy(skel);
			skel = NULL;
			return err;
		}
	}
	/* A link pinned by an earlier daemon moves to this program in place. */
	fd = bpf_obj_get(path);
	if (fd >= 0) {
		err = bpf_link_update(fd, bpf_program__fd(skel->progs.bypass_prot_mem), NULL);
		close(fd);
		if (!err)
			return 0;
		unlink(path);
	}
	cg_fd = open(cg, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (cg_fd < 0)
		return -errno;
	link = bpf_program__attach_cgroup(skel->progs.bypass_prot_mem, cg_fd);
	close(cg_fd);
	if (!link)
		return -errno;
	err = bpf_link__pin(link, path);
	bpf_link__destroy(link);	/* the pin keeps it attached */
	return err;
}

int bypass_apply(const char *pin_path, const char *mount, const char *scope, bool wanted)
{
	enum bypass_state want = bypass_decide(wanted, wanted && bypass_kernel_has());
	char path[PATH_MAX];
	int err;

	if (want != BYPASS_ON) {
		if (!link_path(pin_path, path, sizeof(path)))
			unlink(path);
		if (want == BYPASS_UNSUPPORTED && !unsupported_said) {
			log_warn("BypassProtMem=yes: this kernel has no SK_BPF_BYPASS_PROT_MEM "
				 "(Linux 6.19 and later); limited cgroups stay in the global tcp_mem");
			unsupported_said = true;
		}
		state = want;
		return 0;
	}
	err = attach(pin_path, mount, scope ? scope : "/");
	if (err) {
		log_err("BypassProtMem=yes: cannot attach cgroup/sock_create at %s: %s",
			scope ? scope : "/", strerror(-err));
		return err;
	}
	if (state != BYPASS_ON)
		log_info("BypassProtMem: new TCP sockets of limited cgroups leave the global tcp_mem");
	state = BYPASS_ON;
	return 0;
}

enum bypass_state bypass_current(void) { return state; }

void bypass_counts(uint64_t *sockets, uint64_t *refused)
{
	*sockets = skel ? skel->bss->bypass_sockets : 0;
	*refused = skel ? skel->bss->bypass_refused : 0;
}

void bypass_close(void)
{
	bypass__destroy(skel);
	skel = NULL;
}
