// SPDX-License-Identifier: GPL-2.0
/*
 * The pure parts of src/netns.c, table-driven: a namespace link's inode,
 * and whether /proc/PID/cgroup puts a process in the daemon's scope (which
 * decides, at start, which namespaces are walked).
 */
#include "harness.h"
#include "../src/netns.h"

#include <inttypes.h>

static const struct { const char *link; uint64_t inum; } links[] = {
	{ "net:[4026531840]", 4026531840ULL },
	{ "net:[1]", 1 },
	{ "net:[]", 0 },
	{ "net:[12x]", 0 },
	{ "net:[12", 0 },
	{ "net:[12]x", 0 },
	{ "mnt:[4026531841]", 0 },
	{ "net:[-5]", 0 },
	{ "", 0 },
};

static const struct { const char *cgroup, *scope; bool in; } scopes[] = {
	{ "0::/tcpbuf-test-1/a\n", "/tcpbuf-test-1", true },
	{ "0::/tcpbuf-test-1\n", "/tcpbuf-test-1", true },
	{ "0::/tcpbuf-test-1\n", "/tcpbuf-test-1/", true },
	{ "0::/tcpbuf-test-10/a\n", "/tcpbuf-test-1", false },	/* a prefix, not an ancestor */
	{ "0::/other\n", "/tcpbuf-test-1", false },
	{ "0::/other\n", "/", true },
	{ "12:memory:/x\n1:name=systemd:/tcpbuf-test-1\n0::/tcpbuf-test-1/b\n", "/tcpbuf-test-1", true },
	{ "12:memory:/tcpbuf-test-1\n0::/x\n", "/tcpbuf-test-1", false },	/* v1 lines do not count */
	{ "1:name=systemd:/tcpbuf-test-1\n", "/tcpbuf-test-1", false },	/* no v2 line */
	{ "0::/tcpbuf-test-1/a", "/tcpbuf-test-1", true },		/* no trailing newline */
	{ "", "/", false },
};

int main(void)
{
	test_init();
	for (size_t i = 0; i < sizeof(links) / sizeof(links[0]); i++) {
		test_log("link \"%s\"", links[i].link);
		EXPECT_EQ(netns_link_inode(links[i].link), links[i].inum);
	}
	for (size_t i = 0; i < sizeof(scopes) / sizeof(scopes[0]); i++) {
		test_log("scope %s, cgroup \"%s\"", scopes[i].scope, scopes[i].cgroup);
		EXPECT_EQ(netns_cgroup_in_scope(scopes[i].cgroup, scopes[i].scope), scopes[i].in);
	}
	return test_done();
}
