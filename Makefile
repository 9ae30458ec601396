# tcpbufd — per-cgroup TCP buffer memory limits with eBPF.
# `make` builds everything quietly; `make V=1` shows the commands.

VERSION      := 0.1.0
ARCH         := x86
CLANG        ?= clang-19
LLVM_STRIP   ?= llvm-strip-19
BPFTOOL      ?= bpftool
CC           ?= gcc
PKG_CONFIG   ?= pkg-config

PREFIX       ?= /usr
SBINDIR      ?= $(PREFIX)/sbin
BINDIR       ?= $(PREFIX)/bin
MANDIR       ?= $(PREFIX)/share/man
SYSCONFDIR   ?= /etc
UNITDIR      ?= $(shell $(PKG_CONFIG) --variable=systemdsystemunitdir systemd 2>/dev/null || echo /lib/systemd/system)
DESTDIR      ?=

OUT          := build
# A committed vmlinux.h (as libbpf-tools does) keeps builds working on hosts
# without BTF; CO-RE relocates the objects on 5.15 .. 6.18. `make vmlinux`
# refreshes it from the running kernel.
VMLINUX_H    := bpf/vmlinux/$(ARCH)/vmlinux.h

ifeq ($(V),1)
Q :=
msg :=
else
Q := @
msg = @printf '  %-8s %s\n' "$(1)" "$(2)";
endif

BPF_CFLAGS   := -g -O2 -target bpf -mcpu=v3 -D__TARGET_ARCH_$(ARCH) -Werror=undef \
		-Wall -I$(OUT)/bpf -Iinclude -Ibpf -Ibpf/vmlinux/$(ARCH) $(BPF_EXTRA_CFLAGS)
CFLAGS       ?= -O2 -g
CFLAGS       += -std=gnu11 -Wall -Wextra -Werror -Iinclude -Isrc -I$(OUT) \
		-DTCPBUFD_VERSION='"$(VERSION)"' \
		$(shell $(PKG_CONFIG) --cflags libbpf inih libsystemd 2>/dev/null)
LIBS_DAEMON  := $(shell $(PKG_CONFIG) --libs libbpf inih libsystemd 2>/dev/null || echo -lbpf -linih -lsystemd) -lelf -lz
LIBS_CTL     := $(shell $(PKG_CONFIG) --libs json-c ncursesw 2>/dev/null || echo -ljson-c -lncursesw -ltinfo) -lm

BPF_OBJS     := account_exact account_sampled reconcile enforce bypass peer_iter
SKELS        := $(patsubst %,$(OUT)/%.skel.h,$(BPF_OBJS))

DAEMON_SRCS  := src/tcpbufd.c src/loader.c src/demand.c src/cgroups.c src/cgwatch.c src/bpffs.c src/log.c \
		src/control.c src/commands.c src/limits.c src/status.c src/subtree.c src/config.c src/size.c src/request.c src/dropin.c \
		src/runtime_limits.c src/enforce.c src/enforce_links.c src/enforce_events.c src/enforce_rest.c src/enforce_sweep.c src/container_name.c src/host_tcp_mem.c src/netns.c \
		src/privilege.c src/bypass.c src/memevents.c src/hookfit.c src/peer.c src/peer_facts.c \
		src/unaccounted.c
CTL_SRCS     := src/tcpbufctl.c src/request.c src/size.c src/top.c src/top_model.c src/host_tcp_mem.c
HOOK_SRCS    := src/oci-hook.c src/oci_limits.c src/request.c src/size.c
# Static: the hook runs in the runtime's mount namespace, on nodes whose
# libraries are not ours (a DaemonSet copies it onto the host).
LIBS_HOOK    := -static $(shell $(PKG_CONFIG) --libs json-c 2>/dev/null || echo -ljson-c)
LIBEXECDIR   ?= $(PREFIX)/libexec/tcpbufd
HOOKSDIR     ?= $(PREFIX)/share/containers/oci/hooks.d
# systemd integration (sd_notify) and the Prometheus exporter
DAEMON_SRCS  += src/notify.c src/metrics.c
# MaxCgroups=: the cgroup tables' size and fill
DAEMON_SRCS  += src/capacity.c src/tables.c src/limits_room.c

.DELETE_ON_ERROR:
.SECONDARY:
.PHONY: all clean install uninstall check check-host check-vm check-vm-matrix vmlinux tests

all: $(OUT)/tcpbufd $(OUT)/tcpbufctl $(OUT)/tcpbufd-oci-hook

$(OUT) $(OUT)/bpf:
	$(Q)mkdir -p $@

$(OUT)/bpf/%.tmp.o: bpf/%.bpf.c bpf/*.bpf.h include/*.h $(VMLINUX_H) | $(OUT)/bpf
	$(call msg,BPF,$@)
	$(Q)$(CLANG) $(BPF_CFLAGS) -c $< -o $@

# bpftool gen object links the object (and strips nothing we need: BTF stays).
$(OUT)/bpf/%.bpf.o: $(OUT)/bpf/%.tmp.o
	$(call msg,GEN-OBJ,$@)
	$(Q)$(BPFTOOL) gen object $@ $<

$(OUT)/%.skel.h: $(OUT)/bpf/%.bpf.o
	$(call msg,GEN-SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< name $* > $@

# The repository's tcpbufd.conf is the documented default; the daemon embeds it.
$(OUT)/default_conf.c: tcpbufd.conf | $(OUT)
	$(call msg,EMBED,$@)
	$(Q){ printf 'const char tcpbufd_default_conf[] = {'; od -An -v -tx1 $< | \
		sed 's/ *\([0-9a-f][0-9a-f]\)/0x\1,/g'; printf '0x00};\n'; } > $@

$(OUT)/tcpbufd: $(DAEMON_SRCS) $(OUT)/default_conf.c $(SKELS) src/*.h include/*.h
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS) $(DAEMON_SRCS) $(OUT)/default_conf.c -o $@ $(LDFLAGS) $(LIBS_DAEMON)

$(OUT)/tcpbufctl: $(CTL_SRCS) src/*.h
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS) $(CTL_SRCS) -o $@ $(LDFLAGS) $(LIBS_CTL)

$(OUT)/tcpbufd-oci-hook: $(HOOK_SRCS) src/*.h
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS) $(HOOK_SRCS) -o $@ $(LDFLAGS) $(LIBS_HOOK)

vmlinux:
	$(BPFTOOL) btf dump file /sys/kernel/btf/vmlinux format c > $(VMLINUX_H)

-include tests/tests.mk

# The host suite and the VM matrix, one closing count (tests/check).
check: all tests
	tests/check

check-host: all tests
	tests/run --mode $${TCPBUFD_MODE:-auto}

# One kernel: make check-vm KERNEL=path/to/vmlinuz (or a cached series: 6.1, 6.12, 7.2).
# The matrix's kernels are fetched first, as make check does (cached ones are kept).
KERNEL ?= 6.12
check-vm: all tests
	tests/vm/fetch-kernels >/dev/null
	tests/vm/run-vm $(KERNEL)

check-vm-matrix: all tests
	tests/vm/run-matrix

# BPF objects are embedded in tcpbufd (skeletons), so the binaries, the unit,
# the man pages and the config are all there is. An existing config is never
# overwritten; uninstall removes it only if it is still the shipped one.
MANPAGES     := docs/man/tcpbufd.8 docs/man/tcpbufctl.8 docs/man/tcpbufd.conf.5 docs/man/tcpbufd-oci-hook.8
MAN_DESTS    := $(foreach m,$(MANPAGES),$(MANDIR)/man$(subst .,,$(suffix $(m)))/$(notdir $(m)))
INSTALL_DIRS := $(SBINDIR) $(BINDIR) $(LIBEXECDIR) $(HOOKSDIR) $(UNITDIR) $(sort $(dir $(MAN_DESTS))) $(SYSCONFDIR)

install: all
	$(call msg,INSTALL,$(DESTDIR)$(SBINDIR)/tcpbufd $(DESTDIR)$(BINDIR)/tcpbufctl)
	$(Q)install -D -m 0755 $(OUT)/tcpbufd $(DESTDIR)$(SBINDIR)/tcpbufd
	$(Q)install -D -m 0755 $(OUT)/tcpbufctl $(DESTDIR)$(BINDIR)/tcpbufctl
	$(call msg,INSTALL,$(DESTDIR)$(LIBEXECDIR)/tcpbufd-oci-hook $(DESTDIR)$(HOOKSDIR)/tcpbufd.json)
	$(Q)install -D -m 0755 $(OUT)/tcpbufd-oci-hook $(DESTDIR)$(LIBEXECDIR)/tcpbufd-oci-hook
	$(Q)install -d -m 0755 $(DESTDIR)$(HOOKSDIR)
	$(Q)sed 's|"/usr/libexec/tcpbufd/tcpbufd-oci-hook"|"$(LIBEXECDIR)/tcpbufd-oci-hook"|' oci/tcpbufd.json \
		> $(DESTDIR)$(HOOKSDIR)/tcpbufd.json
	$(Q)chmod 0644 $(DESTDIR)$(HOOKSDIR)/tcpbufd.json
	$(call msg,INSTALL,$(DESTDIR)$(UNITDIR)/tcpbufd.service)
	$(Q)install -d -m 0755 $(DESTDIR)$(UNITDIR)
	$(Q)sed 's|^ExecStart=/usr/sbin/tcpbufd|ExecStart=$(SBINDIR)/tcpbufd|' systemd/tcpbufd.service \
		> $(DESTDIR)$(UNITDIR)/tcpbufd.service
	$(Q)chmod 0644 $(DESTDIR)$(UNITDIR)/tcpbufd.service
	$(call msg,INSTALL,$(addprefix $(DESTDIR),$(MAN_DESTS)))
	$(Q)$(foreach m,$(MANPAGES),install -D -m 0644 $(m) \
		$(DESTDIR)$(MANDIR)/man$(subst .,,$(suffix $(m)))/$(notdir $(m)) &&) true
	$(Q)if [ -e $(DESTDIR)$(SYSCONFDIR)/tcpbufd.conf ]; then \
		echo "  KEEP     $(DESTDIR)$(SYSCONFDIR)/tcpbufd.conf (exists)"; \
	else \
		install -D -m 0644 tcpbufd.conf $(DESTDIR)$(SYSCONFDIR)/tcpbufd.conf; \
	fi

# With DESTDIR, directories left empty are removed too, up to DESTDIR itself
# and never above it; without DESTDIR system directories stay.
uninstall:
	$(call msg,RM,$(DESTDIR)$(SBINDIR)/tcpbufd $(DESTDIR)$(BINDIR)/tcpbufctl ...)
	$(Q)rm -f $(DESTDIR)$(SBINDIR)/tcpbufd $(DESTDIR)$(BINDIR)/tcpbufctl \
		$(DESTDIR)$(LIBEXECDIR)/tcpbufd-oci-hook $(DESTDIR)$(HOOKSDIR)/tcpbufd.json \
		$(DESTDIR)$(UNITDIR)/tcpbufd.service $(addprefix $(DESTDIR),$(MAN_DESTS))
	$(Q)if cmp -s tcpbufd.conf $(DESTDIR)$(SYSCONFDIR)/tcpbufd.conf; then \
		rm -f $(DESTDIR)$(SYSCONFDIR)/tcpbufd.conf; \
	elif [ -e $(DESTDIR)$(SYSCONFDIR)/tcpbufd.conf ]; then \
		echo "  KEEP     $(DESTDIR)$(SYSCONFDIR)/tcpbufd.conf (changed since install)"; \
	fi
	$(Q)if [ -n "$(DESTDIR)" ]; then \
		for d in $(addprefix $(DESTDIR),$(INSTALL_DIRS)); do \
			d=$${d%/}; \
			while case $$d in "$(DESTDIR)"/?*) true;; *) false;; esac && \
			      rmdir "$$d" 2>/dev/null; do \
				d=$${d%/*}; \
			done; \
		done; \
	fi

clean:
	rm -rf $(OUT) tests/bin
