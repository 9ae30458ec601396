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
#   targets: tests / test-progs (build all of the above), test-run (build,
#            then tests/run $(TEST_ARGS)), test-clean

CFLAGS ?= -O2 -g -Wall -Wextra -Werror
AR ?= ar
TEST_CFLAGS ?= $(CFLAGS)
TEST_CPPFLAGS := -Itests/lib -Iinclude
TEST_LDFLAGS ?=
TEST_ARGS ?=

TEST_BIN_DIR := tests/bin
TEST_LIB_HDRS := $(wildcard tests/lib/*.h)
TEST_LIB_SRCS := $(wildcard tests/lib/*.c)
TEST_LIB_OBJS := $(patsubst tests/lib/%.c,$(TEST_BIN_DIR)/lib/%.o,$(TEST_LIB_SRCS))
TEST_LIB := $(TEST_BIN_DIR)/lib/libtcpbuftest.a
TEST_PROGS := $(patsubst tests/%.c,$(TEST_BIN_DIR)/%,$(wildcard tests/test_*.c))
TEST_TOOLS := $(patsubst tests/tools/%.c,$(TEST_BIN_DIR)/%,$(wildcard tests/tools/*.c))

# Do not steal the including Makefile's default goal.
tests_mk_saved_goal := $(.DEFAULT_GOAL)

.PHONY: tests test-progs test-run test-clean

tests test-progs: $(TEST_PROGS) $(TEST_TOOLS)

test-run: test-progs
	tests/run $(TEST_ARGS)

test-clean:
	rm -rf $(TEST_BIN_DIR)

$(TEST_BIN_DIR)/lib/%.o: tests/lib/%.c $(TEST_LIB_HDRS)
	@mkdir -p $(@D)
	$(CC) $(TEST_CPPFLAGS) $(TEST_CFLAGS) -c -o $@ $<

$(TEST_LIB): $(TEST_LIB_OBJS)
	@mkdir -p $(@D)
	rm -f $@
	$(AR) rcs $@ $^

# Unit tests of daemon code (they include ../src/*.h).
TEST_SRCS_size := src/size.c
TEST_SRCS_request := src/request.c src/size.c
TEST_SRCS_config := src/config.c src/dropin.c src/size.c build/default_conf.c
TEST_LDLIBS_config := -linih

$(TEST_BIN_DIR)/test_%: tests/test_%.c $(TEST_LIB) $(TEST_LIB_HDRS)
	@mkdir -p $(@D)
	$(CC) $(TEST_CPPFLAGS) $(TEST_CFLAGS) -o $@ $< $(TEST_SRCS_$*) $(TEST_LIB) \
		$(TEST_LDFLAGS) $(TEST_LDLIBS_$*)

# rebuild a test when the daemon sources it links change
$(foreach t,$(TEST_PROGS),$(eval $(t): $(TEST_SRCS_$(patsubst $(TEST_BIN_DIR)/test_%,%,$(t)))))

$(TEST_TOOLS): $(TEST_BIN_DIR)/%: tests/tools/%.c $(TEST_LIB) $(TEST_LIB_HDRS)
	@mkdir -p $(@D)
	$(CC) $(TEST_CPPFLAGS) $(TEST_CFLAGS) -o $@ $< $(TEST_LIB) $(TEST_LDFLAGS)

.DEFAULT_GOAL := $(tests_mk_saved_goal)
