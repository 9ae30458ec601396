// SPDX-License-Identifier: GPL-2.0
/*
 * The unit's capabilities are enough, and every one of them is needed.
 *
 * The daemon runs as systemd would run it from systemd/tcpbufd.service:
 * uid 0, bounding set = CapabilityBoundingSet=, no inheritable or ambient
 * capabilities, no_new_privs (setpriv does the same). With that set it
 * loads and attaches its programs, pins them, serves the control socket
 * (set-limit, set, status, metrics from root), reloads, and counts a
 * loopback load. Without any one capability of the set it cannot start and
 * says "Operation not permitted"; a capability it starts without would be
 * one the unit need not grant, and fails the test.
 *
 * SocketGroup= needs no CAP_CHOWN when the group is a supplementary group
 * (the unit's SupplementaryGroups=); without it the daemon says so.
 *
 * CAP_SYS_ADMIN is the one the daemon starts without: it needs it to enter
 * containers' network namespaces (setns), so without it the daemon runs,
 * says "Operation not permitted", and does not count the sockets of a
 * container (uid 0, no capabilities) in a netns of its own, which it counts
 * with the unit's set (in sampled mode: exact mode's charges follow the
 * socket wherever it is, only its passes need the namespace).
 *
 * Not covered: mounting bpffs — the unit relies on systemd having mounted
 * /sys/fs/bpf, and the test cannot unmount the host's.
 */
#define _GNU_SOURCE
#include "harness.h"
#include "load.h"
#include "sdunit.h"

#include <ctype.h>
#include <dirent.h>
#include <grp.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static const struct { const char *name; int bit; } cap_bits[] = {
	{ "CAP_CHOWN", 0 }, { "CAP_DAC_OVERRIDE", 1 }, { "CAP_DAC_READ_SEARCH", 2 },
	{ "CAP_FOWNER", 3 }, { "CAP_SETGID", 6 }, { "CAP_SETUID", 7 }, { "CAP_NET_ADMIN", 12 },
	{ "CAP_NET_RAW", 13 }, { "CAP_IPC_LOCK", 14 }, { "CAP_SYS_PTRACE", 19 },
	{ "CAP_SYS_ADMIN", 21 }, { "CAP_SYS_RESOURCE", 24 }, { "CAP_PERFMON", 38 },
	{ "CAP_BPF", 39 },
};

static int cap_bit(const char *name)
{
	for (size_t i = 0; i < sizeof(cap_bits) / sizeof(cap_bits[0]); i++)
		if (!strcmp(cap_bits[i].name, name))
			return cap_bits[i].bit;
	test_log("capability %s: add it to cap_bits[]", name);
	test_abort();
}

/* "+bpf,+perfmon" for setpriv, leaving out skip (NULL: none). */
static char *setpriv_caps(char **caps, const char *skip)
{
	char *s = calloc(1, 1024);

	for (char **c = caps; *c; c++) {
		if (skip && !strcmp(*c, skip))
			continue;
		strcat(s, ",+");
		for (const char *p = *c + 4; *p; p++)
			strncat(s, &(char){ (char)tolower((unsigned char)*p) }, 1);
	}
	return s;
}

static char *bin;	/* the real tcpbufd: $TCPBUFD is pointed at wrappers */

static char *wrapper(const char *name, char **caps, const char *skip, const char *extra)
{
	char *set = setpriv_caps(caps, skip);

	return write_script(name,
			    "exec setpriv --inh-caps=-all --ambient-caps=-all --bounding-set=-all%s "
			    "--no-new-privs %s -- %s \"$@\"", set, extra ? extra : "", sh_quote(bin));
}

static uint64_t proc_caps(pid_t pid, const char *field)
{
	char path[64], line[256], key[32];
	unsigned long long v = ~0ULL;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	snprintf(key, sizeof(key), "%s:\t%%llx", field);
	f = fopen(path, "re");
	if (!f)
		return ~0ULL;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, key, &v) == 1)
			break;
	fclose(f);
	return v;
}

static int count_entries(const char *dir)
{
	struct dirent *de;
	DIR *d = opendir(dir);
	int n = 0;

	if (!d)
		return -1;
	while ((de = readdir(d)))
		n += de->d_name[0] != '.';
	closedir(d);
	return n;
}

/* Start from nothing pinned: adopting pins needs fewer capabilities than
 * loading, and would hide a missing one. */
static void remove_pins(void)
{
	char *q = sh_quote(daemon_pin_path());

	ASSERT_EQ(run_sh(NULL, "rm -rf %s", q), 0);
	free(q);
}

static int64_t field(const char *json, const char *cg, const char *key)
{
	int64_t v = -1;

	return json_cgroup_field(json, cg, key, &v) == JSON_FOUND ? v : -1;
}

/* A container's client (uid 65534 in cgroup rel): the daemon reads its
 * /proc entries to authorize it, without CAP_SYS_PTRACE or DAC overrides. */
static void container_client(const char *rel)
{
	char *out = NULL, *procs, *ctlq = sh_quote(tcpbufctl_path()), *sockq;
	char *abs = cg_abs(rel);
	int rc;

	sockq = sh_quote(daemon_socket_path());
	if (asprintf(&procs, "%s/cgroup.procs", abs) < 0)
		abort();
	rc = run_sh(&out, "echo $$ > %s && exec setpriv --reuid=65534 --regid=65534 "
		    "--clear-groups %s --socket %s status --json", procs, ctlq, sockq);
	EXPECT_EQ(rc, 0);
	EXPECT_TRUE(out && json_valid(out));
	EXPECT_EQ(out ? json_cgroup_count(out) : -1, 1);
	free(out);
	/* metrics too shows the client its own subtree only. */
	rc = run_sh(&out, "echo $$ > %s && exec setpriv --reuid=65534 --regid=65534 "
		    "--clear-groups %s --socket %s metrics", procs, ctlq, sockq);
	EXPECT_EQ(rc, 0);
	{
		char *own;
		int others = 0;

		if (asprintf(&own, "tcpbufd_cgroup_limit_bytes{cgroup=\"%s\"} ", rel) < 0)
			abort();
		EXPECT_TRUE(out && strstr(out, own));
		for (const char *c = out; c && (c = strstr(c, "cgroup=\"")); c++)
			others += strncmp(c + 8, rel, strlen(rel)) != 0;
		EXPECT_EQ(others, 0);
		free(own);
	}
	free(out);
	rc = run_sh(&out, "echo $$ > %s && exec setpriv --reuid=65534 --regid=65534 "
		    "--clear-groups %s --socket %s set-limit %s 1M", procs, ctlq, sockq, rel);
	EXPECT_EQ(rc, 1);
	EXPECT_TRUE(out && strstr(out, "permission denied"));
	free(out);
	free(procs);
	free(ctlq);
	free(sockq);
	free(abs);
}

/* A container's load in a netns of its own: usage_pages of @nrel with it. */
static int64_t netns_usage(const char *nrel)
{
	struct load *l = load_start(&(struct load_opts){ .cgroup = nrel, .nconn = 4, .netns = 1,
							  .drop_caps = 1 });
	char *json = NULL;
	int64_t usage;

	ASSERT_TRUE(l != NULL);
	ASSERT_EQ(load_wait_filled(l, 0), 0);
	ASSERT_EQ(ctl(&json, "status --json"), 0);
	usage = field(json, nrel, "usage_pages");
	test_log("%s under load in its own netns: %" PRId64 " pages", nrel, usage);
	free(json);
	load_kill(l);
	return usage;
}

static bool sampled_mode(void)
{
	char *json = NULL, mode[16] = "";

	ASSERT_EQ(ctl(&json, "status --json"), 0);
	json_string_field(json, "mode", mode, sizeof(mode));
	free(json);
	return !strcmp(mode, "sampled");
}

static void full_run(char **caps, uint64_t mask, const char *rel, const char *nrel)
{
	char path[4096], *json = NULL;
	struct load_opts lo = { .cgroup = rel, .nconn = 4 };
	struct load *l;
	pid_t pid;
	int st;

	setenv("TCPBUFD", wrapper("tcpbufd-caps", caps, NULL, NULL), 1);
	remove_pins();
	ASSERT_EQ(daemon_start(NULL), 0);
	pid = daemon_pid();
	test_log("CapEff %" PRIx64 " CapPrm %" PRIx64 " CapBnd %" PRIx64 " (unit: %" PRIx64 ")",
		 proc_caps(pid, "CapEff"), proc_caps(pid, "CapPrm"), proc_caps(pid, "CapBnd"), mask);
	/* CAP_SYS_ADMIN is effective only around setns() (src/netns.c). */
	EXPECT_EQ(proc_caps(pid, "CapEff"), mask & ~(1ULL << cap_bit("CAP_SYS_ADMIN")));
	EXPECT_EQ(proc_caps(pid, "CapPrm"), mask);
	EXPECT_EQ(proc_caps(pid, "CapBnd"), mask);
	EXPECT_EQ(proc_caps(pid, "CapAmb"), 0);

	/* Loaded, attached and pinned. */
	snprintf(path, sizeof(path), "%s/links", daemon_pin_path());
	EXPECT_GE(count_entries(path), 3);
	snprintf(path, sizeof(path), "%s/cgroup_usage", daemon_pin_path());
	EXPECT_OK(access(path, F_OK));

	/* Served: root administers it. */
	EXPECT_EQ(ctl(NULL, "set-limit %s 16M", rel), 0);
	EXPECT_EQ(ctl(NULL, "set %s 2M 3M 8M", rel), 0);
	EXPECT_EQ(ctl(NULL, "metrics"), 0);
	ASSERT_EQ(ctl(&json, "status --json %s", rel), 0);
	EXPECT_EQ(field(json, rel, "limit_pages"), 4096);
	EXPECT_EQ(field(json, rel, "max_pages"), 2048);
	free(json);
	EXPECT_EQ(daemon_signal(SIGHUP), 0);
	EXPECT_EQ(ctl(NULL, "reload"), 0);
	container_client(rel);

	/* Counting. */
	l = load_start(&lo);
	ASSERT_TRUE(l != NULL);
	ASSERT_EQ(load_wait_filled(l, 0), 0);
	ASSERT_EQ(ctl(&json, "status --json %s", rel), 0);
	test_log("%s under load: %" PRId64 " pages", rel, field(json, rel, "usage_pages"));
	EXPECT_GT(field(json, rel, "usage_pages"), 0);
	free(json);
	load_kill(l);
	EXPECT_GT(netns_usage(nrel), 0);

	EXPECT_TRUE(daemon_alive());
	st = daemon_stop();
	EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

/* Without CAP_SYS_ADMIN: up, but blind to other network namespaces. */
static void run_without_setns(char **caps, const char *nrel)
{
	int before = file_lines_with(daemon_log_path(), "cannot enter network namespaces: Operation not permitted");
	int64_t usage;

	setenv("TCPBUFD", wrapper("tcpbufd-less", caps, "CAP_SYS_ADMIN", NULL), 1);
	remove_pins();
	ASSERT_EQ(daemon_start(NULL), 0);
	EXPECT_GT(file_lines_with(daemon_log_path(), "cannot enter network namespaces: Operation not permitted"),
		  before);
	if (sampled_mode()) {
		usage = netns_usage(nrel);
		if (usage > 0) {
			test_log("tcpbufd counts a container's netns without CAP_SYS_ADMIN: the unit need not grant it");
			test_fail();
		} else {
			test_log("without CAP_SYS_ADMIN: the container's netns is not walked, as it must not be");
		}
	}
	daemon_stop();
}

/* Without cap the daemon must not come up, and must say EPERM. */
static void run_without(char **caps, const char *cap, const char *nrel)
{
	int before = file_lines_with(daemon_log_path(), "Operation not permitted");

	if (!strcmp(cap, "CAP_SYS_ADMIN")) {
		run_without_setns(caps, nrel);
		return;
	}
	setenv("TCPBUFD", wrapper("tcpbufd-less", caps, cap, NULL), 1);
	remove_pins();
	if (daemon_start(NULL) == 0) {
		test_log("tcpbufd starts without %s: the unit need not grant it", cap);
		test_fail();
		daemon_stop();
		return;
	}
	test_log("without %s: refused, as it must be", cap);
	EXPECT_GT(file_lines_with(daemon_log_path(), "Operation not permitted"), before);
}

static void socket_group(char **caps)
{
	struct group *g = getgrgid(65534);
	char extra[64], *conf_group;
	struct stat st;

	if (!g) {
		test_log("no group 65534: SocketGroup= not tested");
		return;
	}
	conf_group = strdup(g->gr_name);
	daemon_write_config("[Daemon]\nDropInDir=%s\nStateDir=%s\nSocketMode=0660\nSocketGroup=%s\n",
			    daemon_confdir(), test_tmpdir(), conf_group);

	/* No CAP_CHOWN, not in the group: refused, with the way out. */
	setenv("TCPBUFD", wrapper("tcpbufd-nogroup", caps, NULL, NULL), 1);
	EXPECT_EQ(daemon_start(NULL), -1);
	EXPECT_GE(file_lines_with(daemon_log_path(), "SupplementaryGroups="), 1);

	/* As with SupplementaryGroups=GROUP: the socket gets the group. */
	snprintf(extra, sizeof(extra), "--groups=%u", (unsigned)g->gr_gid);
	setenv("TCPBUFD", wrapper("tcpbufd-group", caps, NULL, extra), 1);
	ASSERT_EQ(daemon_start(NULL), 0);
	ASSERT_OK(stat(daemon_socket_path(), &st));
	EXPECT_EQ(st.st_gid, g->gr_gid);
	EXPECT_EQ(st.st_mode & 0777, 0660);
	EXPECT_EQ(ctl(NULL, "status"), 0);
	daemon_stop();
	free(conf_group);
}

int main(void)
{
	char **caps, **ambient, **nnp;
	uint64_t mask = 0;
	const char *rel, *nrel;

	test_init();
	bin = tcpbufd_abs_path();
	if (!have_program("setpriv"))
		SKIP("setpriv not installed (util-linux)");
	caps = unit_words("CapabilityBoundingSet");
	if (!caps)
		SKIP("%s not found (tests run from the repository root)", UNIT_FILE);
	ambient = unit_words("AmbientCapabilities");
	nnp = unit_words("NoNewPrivileges");
	EXPECT_TRUE(ambient && !ambient[0]);
	EXPECT_TRUE(words_have(nnp, "yes"));
	ASSERT_TRUE(caps[0] != NULL);
	for (char **c = caps; *c; c++)
		mask |= 1ULL << cap_bit(*c);
	rel = cg_rel(cg_create("a"));
	nrel = cg_rel(cg_create("n"));
	daemon_write_config("[Daemon]\nDropInDir=%s\nStateDir=%s\nSocketMode=0666\n",
			    daemon_confdir(), test_tmpdir());

	full_run(caps, mask, rel, nrel);
	for (char **c = caps; *c; c++)
		run_without(caps, *c, nrel);
	socket_group(caps);

	words_free(caps);
	words_free(ambient);
	words_free(nnp);
	return test_done();
}
