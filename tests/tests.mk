# tests/tests.mk: how to build the test harness, the tests and the test tools.
# Included by the top-level Makefile; all paths are relative to the repository
# root.  Standalone: make -f tests/tests.mk test-progs
#
#   TEST_LIB        tests/bin/lib/libtcpbuftest.a (harness, json, skmem oracle, load)
#   TEST_LIB_OBJS   its objects
#   TEST_PROGS      tests/bin/test_*   one per tests/test_*.c
#   TEST_TOOLS      tests/bin/skmem, tests/bin/tcpload   (from tests/tools/*.c)
#   TEST_LDFLAGS    extra link flags, e.g. TEST_LDFLAGS=-static for VM guests
#                   that have no libc
#   TEST_SRCS_<name>    extra sources linked into tests/bin/test_<name>: unit
#                       tests of daemon code name the src/*.c they need
#   TEST_LDLIBS_<name>  extra libraries for tests/bin/test_<name>
#   FUZZ_PROGS      tests/bin/fuzz/fuzz_*  libFuzzer targets from tests/fuzz/*.c,
#                   run by test_fuzz_* ($FUZZ_TIME s each, default 20). Built
#                   with FUZZ_CC (clang-19) -fsanitize=fuzzer,address,undefined;
#                   when that fails, the reason goes to tests/bin/fuzz/NAME.skip
#                   and the test reports a skip saying why (make does not fail)
#   targets: tests / test-progs (build all of the above), test-run (build,
#            then tests/run $(TEST_ARGS)), fuzz-check (build, then run only
#            the fuzz tests), test-clean

CFLAGS ?= -O2 -g -Wall -Wextra -Werror
AR ?= ar
TEST_CFLAGS ?= $(CFLAGS)
TEST_CPPFLAGS := -Itests/lib -Iinclude
TEST_LDFLAGS ?=
TEST_ARGS ?=

TEST_BIN_DIR := tests/bin
TEST_LIB_HDRS := $(wildcard tests/lib/*.h include/*.h)
TEST_LIB_SRCS := $(wildcard tests/lib/*.c)
TEST_LIB_OBJS := $(patsubst tests/lib/%.c,$(TEST_BIN_DIR)/lib/%.o,$(TEST_LIB_SRCS))
TEST_LIB := $(TEST_BIN_DIR)/lib/libtcpbuftest.a
TEST_PROGS := $(patsubst tests/%.c,$(TEST_BIN_DIR)/%,$(wildcard tests/test_*.c))
TEST_TOOLS := $(patsubst tests/tools/%.c,$(TEST_BIN_DIR)/%,$(wildcard tests/tools/*.c))

# Do not steal the including Makefile's default goal.
tests_mk_saved_goal := $(.DEFAULT_GOAL)

FUZZ_CC ?= clang-19
FUZZ_CFLAGS ?= -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
FUZZ_NAMES := $(patsubst tests/fuzz/fuzz_%.c,%,$(wildcard tests/fuzz/fuzz_*.c))
FUZZ_PROGS := $(patsubst %,$(TEST_BIN_DIR)/fuzz/fuzz_%,$(FUZZ_NAMES))

.PHONY: tests test-progs test-run test-clean fuzz-check

tests test-progs: $(TEST_PROGS) $(TEST_TOOLS) $(FUZZ_PROGS)

test-run: test-progs
	tests/run $(TEST_ARGS)

fuzz-check: $(FUZZ_PROGS) $(patsubst %,$(TEST_BIN_DIR)/test_fuzz_%,$(FUZZ_NAMES))
	tests/run $(patsubst %,fuzz_%,$(FUZZ_NAMES))

test-clean:
	rm -rf $(TEST_BIN_DIR)

$(TEST_BIN_DIR)/lib/%.o: tests/lib/%.c $(TEST_LIB_HDRS)
	@mkdir -p $(@D)
	$(call msg,CC,$@)
	$(Q)$(CC) $(TEST_CPPFLAGS) $(TEST_CFLAGS) -c -o $@ $<

$(TEST_LIB): $(TEST_LIB_OBJS)
	@mkdir -p $(@D)
	$(call msg,AR,$@)
	$(Q)rm -f $@
	$(Q)$(AR) rcs $@ $^

# Unit tests of daemon code (they include ../src/*.h).
TEST_SRCS_size := src/size.c
TEST_SRCS_capacity_rule := src/capacity.c
TEST_SRCS_container_name := src/container_name.c
TEST_LDLIBS_dashboard := -ljson-c
TEST_SRCS_top_model := src/top_model.c src/host_tcp_mem.c
TEST_LDLIBS_top_model := -ljson-c
TEST_SRCS_subtree := src/subtree.c src/cgroups.c
TEST_SRCS_cgroups := src/cgroups.c
TEST_SRCS_request := src/request.c src/size.c
TEST_SRCS_oci_limits := src/oci_limits.c src/size.c
TEST_LDLIBS_k8s_manifests := -lyaml -ljson-c
TEST_SRCS_config := src/config.c src/dropin.c src/size.c build/default_conf.c
TEST_LDLIBS_config := -linih
TEST_SRCS_journal := src/log.c
TEST_SRCS_kernel_fit := src/hookfit.c src/memevents.c
TEST_LDLIBS_kernel_fit := -lbpf
TEST_LDLIBS_near_free := -lbpf
TEST_LDLIBS_bounded_leave := -lbpf
TEST_LDLIBS_rest_ooo := -lbpf
TEST_LDLIBS_rest_passes := -lbpf
TEST_LDLIBS_settle_walk := -lbpf
TEST_SRCS_peer := src/peer.c
TEST_LDLIBS_journal := -lsystemd
TEST_SRCS_netns_parse := src/netns.c src/privilege.c src/log.c src/cgroups.c
TEST_LDLIBS_netns_parse := -lbpf -lsystemd

$(TEST_BIN_DIR)/test_%: tests/test_%.c $(TEST_LIB) $(TEST_LIB_HDRS)
	@mkdir -p $(@D)
	$(call msg,CC,$@)
	$(Q)$(CC) $(TEST_CPPFLAGS) $(TEST_CFLAGS) -o $@ $< $(TEST_SRCS_$*) $(TEST_LIB) \
		$(TEST_LDFLAGS) $(TEST_LDLIBS_$*)

# rebuild a test when the daemon sources it links change
$(foreach t,$(TEST_PROGS),$(eval $(t): $(TEST_SRCS_$(patsubst $(TEST_BIN_DIR)/test_%,%,$(t)))))

# The daemon code each fuzz target links.
FUZZ_SRCS_request := src/request.c src/size.c
FUZZ_SRCS_config := src/config.c src/size.c build/default_conf.c
FUZZ_LDLIBS_config := -linih

# Never fails: without a working clang and libFuzzer runtime (Debian's
# libclang-rt-19-dev) the fuzz test is a skip with the compiler's reason.
$(TEST_BIN_DIR)/fuzz/fuzz_%: tests/fuzz/fuzz_%.c
	@mkdir -p $(@D)
	@rm -f $@.skip
	@if $(FUZZ_CC) $(FUZZ_CFLAGS) -Iinclude -Isrc -o $@ $< $(FUZZ_SRCS_$*) $(FUZZ_LDLIBS_$*) \
		>$@.log 2>&1; then rm -f $@.log; echo "  FUZZ     $@"; else rm -f $@; \
		{ printf '%s -fsanitize=fuzzer failed: ' '$(FUZZ_CC)'; \
		  grep -m1 -E 'error|not found|cannot find' $@.log || head -n1 $@.log; } > $@.skip; \
		echo "  FUZZ     $@: not built ($$(cat $@.skip))"; fi

$(foreach n,$(FUZZ_NAMES),$(eval $(TEST_BIN_DIR)/fuzz/fuzz_$(n): $(FUZZ_SRCS_$(n))))

$(TEST_TOOLS): $(TEST_BIN_DIR)/%: tests/tools/%.c $(TEST_LIB) $(TEST_LIB_HDRS)
	@mkdir -p $(@D)
	$(call msg,CC,$@)
	$(Q)$(CC) $(TEST_CPPFLAGS) $(TEST_CFLAGS) -o $@ $< $(TEST_LIB) $(TEST_LDFLAGS)

.DEFAULT_GOAL := $(tests_mk_saved_goal)
