// SPDX-License-Identifier: GPL-2.0
/*
 * The test tools prove themselves, without the daemon: the sock_diag oracle
 * (skmem) sees the load generator's sockets in the test cgroup, agrees with
 * `ss -tm` (when ss exists) and memcg's `sock` counter (when the memory
 * controller is there), accounts for every byte the stalled senders wrote,
 * the data arrives intact, and everything reads zero once the sockets close.
 * Also the JSON helpers, on the example of INTERFACE.md and broken input.
 */
#include "harness.h"
#include "load.h"
#include "skmem.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define NCONN 8

static int have_prog(const char *name)
{
	const char *path = getenv("PATH");
	char *dup, *dir, *save = NULL;
	int found = 0;

	dup = strdup(path ? path : "/usr/sbin:/usr/bin:/sbin:/bin");
	for (dir = strtok_r(dup, ":", &save); dir && !found; dir = strtok_r(NULL, ":", &save)) {
		char p[4096];

		snprintf(p, sizeof(p), "%s/%s", dir, name);
		found = access(p, X_OK) == 0;
	}
	free(dup);
	return found;
}

/* Sum `ss -tmna cgroup REL`: r + f + w per socket. -1 if ss failed. */
static int ss_cgroup(const char *rel, struct skmem_total *t)
{
	char cmd[4200], line[1024];
	FILE *f;
	int st;

	memset(t, 0, sizeof(*t));
	snprintf(cmd, sizeof(cmd), "ss -tmnaH cgroup '%s' 2>&1", rel);
	f = popen(cmd, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		char *p = strstr(line, "skmem:(");
		int64_t r = -1, fw = -1, w = -1;

		if (!p)
			continue;
		p += 7;
		while (*p && *p != ')') {
			char key[8];
			int k = 0;
			long long v;

			while (*p >= 'a' && *p <= 'z' && k < 7)
				key[k++] = *p++;
			key[k] = 0;
			v = strtoll(p, &p, 10);
			if (!strcmp(key, "r"))
				r = v;
			else if (!strcmp(key, "f"))
				fw = v;
			else if (!strcmp(key, "w"))
				w = v;
			if (*p == ',')
				p++;
			else if (*p != ')')
				break;
		}
		if (r < 0 || fw < 0 || w < 0) {
			fprintf(stderr, "cannot parse ss line: %s", line);
			pclose(f);
			return -1;
		}
		t->sockets++;
		if (r + fw + w > 0) {
			t->bytes += (uint64_t)(r + fw + w);
			t->pages += skmem_pages(r + fw + w);
			t->charged++;
		}
	}
	st = pclose(f);
	return st == 0 ? 0 : -1;
}

static int same(const struct skmem_total *a, const struct skmem_total *b)
{
	return a->bytes == b->bytes && a->pages == b->pages && a->sockets == b->sockets;
}

/* Wait until the cgroup has no sockets and no memory; seconds taken or -1. */
static double wait_empty(uint64_t id, double timeout)
{
	double t0 = now_sec();
	struct skmem_total t;

	for (;;) {
		ASSERT_OK(skmem_cgroup(id, &t));
		if (t.sockets == 0 && t.pages == 0)
			return now_sec() - t0;
		if (now_sec() - t0 > timeout) {
			test_log("still %" PRIu64 " sockets, %" PRIu64 " pages after %.0f s",
				 t.sockets, t.pages, timeout);
			return -1;
		}
		msleep(20);
	}
}

static void check_json(void)
{
	static const char ok[] =
		"{\"version\": \"0.1.0\", \"mode\": \"exact\",\n"
		" \"cgroups\": [\n"
		"  {\"cgroup\": \"/demo/a\", \"id\": 4242,\n"
		"   \"usage_pages\": 1536, \"usage_bytes\": 6291456, \"peak_pages\": 2048,"
		" \"sockets\": 12,\n"
		"   \"limit_pages\": 4096, \"min_pages\": null, \"pressure_pages\": 3072,"
		" \"max_pages\": 4096,\n"
		"   \"state\": \"normal\", \"failcnt\": 0, \"pressure_events\": 3},\n"
		"  {\"id\": -1, \"cgroup\": \"/d\\u00e9mo/\\\"q\\\"\", \"nested\": {\"a\": [1, 2.5e3, true, false, null, {}]},"
		" \"usage_pages\": 1.5, \"state\": 7}\n"
		" ]}\n";
	static const char *const bad[] = {
		"", "{", "{\"a\": 1,}", "{\"a\": [1, 2,]}", "{\"a\": 01}", "{\"a\": NaN}",
		"{\"a\": \"x\ty\"}", "{\"a\": \"\\x\"}", "{'a': 1}", "{\"a\": 1} x",
		"{\"a\": \"\\ud800\"}", "{\"a\" 1}", "[1] [2]", "{\"a\": -}", "{\"a\": 1.}",
	};
	char buf[64];
	int64_t v;

	ASSERT_TRUE(json_valid(ok));
	ASSERT_EQ(json_string_field(ok, "mode", buf, sizeof(buf)), JSON_FOUND);
	ASSERT_TRUE(!strcmp(buf, "exact"));
	ASSERT_EQ(json_string_field(ok, "nope", buf, sizeof(buf)), JSON_MISSING);
	ASSERT_EQ(json_string_field(ok, "cgroups", buf, sizeof(buf)), JSON_BAD);
	ASSERT_EQ(json_string_field(ok, "version", buf, 3), JSON_BAD);	/* too long */
	ASSERT_EQ(json_cgroup_count(ok), 2);
	ASSERT_EQ(json_cgroup_field(ok, "/demo/a", "usage_pages", &v), JSON_FOUND);
	ASSERT_EQ(v, 1536);
	ASSERT_EQ(json_cgroup_field(ok, "/demo/a", "pressure_events", &v), JSON_FOUND);
	ASSERT_EQ(v, 3);
	ASSERT_EQ(json_cgroup_field(ok, "/demo/a", "min_pages", &v), JSON_NULL);
	ASSERT_EQ(json_cgroup_field(ok, "/demo/a", "nope", &v), JSON_MISSING);
	ASSERT_EQ(json_cgroup_field(ok, "/demo/b", "usage_pages", &v), JSON_MISSING);
	ASSERT_EQ(json_cgroup_field(ok, "/demo/a", "state", &v), JSON_BAD);
	ASSERT_EQ(json_cgroup_string(ok, "/demo/a", "state", buf, sizeof(buf)), JSON_FOUND);
	ASSERT_TRUE(!strcmp(buf, "normal"));
	/* escapes decode; members in any order; non-integers refused */
	ASSERT_EQ(json_cgroup_name(ok, 1, buf, sizeof(buf)), JSON_FOUND);
	ASSERT_TRUE(!strcmp(buf, "/d\xc3\xa9mo/\"q\""));
	ASSERT_EQ(json_cgroup_field(ok, buf, "id", &v), JSON_FOUND);
	ASSERT_EQ(v, -1);
	ASSERT_EQ(json_cgroup_field(ok, buf, "usage_pages", &v), JSON_BAD);
	ASSERT_EQ(json_cgroup_name(ok, 2, buf, sizeof(buf)), JSON_MISSING);
	/* an absolute path below the mount names the same cgroup */
	if (cg_root()) {
		char abs[4200], doc[4400];

		snprintf(abs, sizeof(abs), "%s/x/y", cg_root());
		snprintf(doc, sizeof(doc), "{\"cgroups\":[{\"cgroup\":\"/x/y\",\"usage_pages\":7}]}");
		ASSERT_EQ(json_cgroup_field(doc, abs, "usage_pages", &v), JSON_FOUND);
		ASSERT_EQ(v, 7);
	}
	ASSERT_EQ(json_int_field("{\"n\": 9223372036854775807}", "n", &v), JSON_FOUND);
	ASSERT_EQ(v, INT64_MAX);
	ASSERT_EQ(json_int_field("{\"n\": 9223372036854775808}", "n", &v), JSON_BAD);
	ASSERT_EQ(json_cgroup_count("{\"cgroups\": []}"), 0);
	ASSERT_EQ(json_cgroup_count("{\"cgroups\": {}}"), JSON_BAD);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (json_valid(bad[i]))
			test_log("accepted invalid JSON: %s", bad[i]);
		EXPECT_FALSE(json_valid(bad[i]));
		EXPECT_EQ(json_string_field(bad[i], "a", buf, sizeof(buf)), JSON_BAD);
	}
	test_log("json helpers: ok on the INTERFACE.md example, %zu broken documents refused",
		 sizeof(bad) / sizeof(bad[0]));
}

int main(void)
{
	struct skmem_total t, t2, s;
	struct load *l4, *l6 = NULL;
	const char *cg;
	uint64_t id, sent;
	int64_t memcg;
	int v6, nsock;
	char *rel;
	double secs;

	test_init();
	check_json();
	ASSERT_OK(lo_up());
	cg = cg_create("oracle");
	id = cg_id(cg);
	rel = cg_rel(cg);
	ASSERT_NE(id, 0);
	v6 = ipv6_available();
	test_log("cgroup %s id %" PRIu64 ", IPv6 %s", rel, id, v6 ? "yes" : "no (v4 only)");

	/* nothing there yet */
	ASSERT_OK(skmem_cgroup(id, &t));
	ASSERT_EQ(t.sockets, 0);
	ASSERT_EQ(t.pages, 0);

	/* --- stalled load, v4 and v6 */
	{
		struct load_opts o = { .cgroup = cg, .nconn = NCONN, .family = AF_INET };

		l4 = load_start(&o);
		ASSERT_TRUE(l4 != NULL);
		ASSERT_OK(load_wait_filled(l4, 0));
		EXPECT_FALSE(l4->timed_out);
		EXPECT_EQ(l4->received, 0);
		if (v6) {
			o.family = AF_INET6;
			l6 = load_start(&o);
			ASSERT_TRUE(l6 != NULL);
			ASSERT_OK(load_wait_filled(l6, 0));
			EXPECT_FALSE(l6->timed_out);
		}
	}
	sent = l4->sent + (l6 ? l6->sent : 0);
	nsock = (2 * NCONN + 1) * (v6 ? 2 : 1);	/* both ends + listener */

	/* a stable snapshot (two equal reads) */
	for (int i = 0; i < 20; i++) {
		ASSERT_OK(skmem_cgroup(id, &t));
		msleep(50);
		ASSERT_OK(skmem_cgroup(id, &t2));
		if (same(&t, &t2))
			break;
	}
	test_log("stalled: sent %" PRIu64 " bytes; skmem: %" PRIu64 " pages, %" PRIu64
		 " bytes, %" PRIu64 " sockets (%" PRIu64 " holding memory)",
		 sent, t.pages, t.bytes, t.sockets, t.charged);
	EXPECT_TRUE(same(&t, &t2));
	ASSERT_EQ(t.sockets, nsock);
	ASSERT_GT(t.pages, 0);
	/* whole pages per socket */
	ASSERT_GE(t.pages * SKMEM_PAGE, t.bytes);
	ASSERT_LE(t.pages * SKMEM_PAGE, t.bytes + t.charged * (SKMEM_PAGE - 1));
	/* nothing was read: every byte written sits in a send or receive queue,
	 * charged with its skb overhead */
	ASSERT_GE(t.bytes, sent);
	ASSERT_LE(t.bytes, 2 * sent + (uint64_t)nsock * 65536);
	/* the charge sits on the data sockets, not on the listeners */
	EXPECT_EQ(t.charged, (uint64_t)(nsock - (v6 ? 2 : 1)));

	/* subtree: the test parent holds no sockets itself */
	ASSERT_OK(skmem_subtree(cg_test_parent(), &s));
	EXPECT_TRUE(same(&s, &t));
	{
		uint64_t ids[2] = { cg_id(cg_test_parent()), id };

		ASSERT_OK(skmem_cgroups(ids, 2, &s));
		EXPECT_TRUE(same(&s, &t));
	}

	/* --- ss agrees exactly on a stalled load */
	if (have_prog("ss")) {
		int agreed = 0;

		for (int i = 0; i < 10 && !agreed; i++) {
			ASSERT_OK(skmem_cgroup(id, &t));
			ASSERT_OK(ss_cgroup(rel, &s));
			ASSERT_OK(skmem_cgroup(id, &t2));
			agreed = same(&t, &t2) && same(&s, &t);
			if (!agreed)
				msleep(100);
		}
		test_log("ss -tmna cgroup %s: %" PRIu64 " pages, %" PRIu64 " bytes, %" PRIu64
			 " sockets", rel, s.pages, s.bytes, s.sockets);
		EXPECT_EQ(s.sockets, t.sockets);
		EXPECT_EQ(s.bytes, t.bytes);
		EXPECT_EQ(s.pages, t.pages);
	} else {
		test_log("no ss here: not compared");
	}

	/* --- memcg's own counter, where the memory controller is enabled */
	memcg = memcg_sock_bytes(cg);
	if (memcg >= 0) {
		int64_t want = (int64_t)(t.pages * SKMEM_PAGE);
		long ncpu = sysconf(_SC_NPROCESSORS_ONLN);

		test_log("memcg sock: %" PRId64 " bytes (%" PRId64 " pages), skmem %" PRIu64
			 " pages", memcg, memcg / SKMEM_PAGE, t.pages);
		/* memory.stat is flushed lazily: allow one charge batch per cpu */
		EXPECT_NEAR(memcg, want, want / 20 + 64 * (ncpu > 0 ? ncpu : 1) * SKMEM_PAGE);
	} else {
		test_log("no memory.stat in %s: memcg not compared", rel);
	}

	/* --- the data arrives intact */
	ASSERT_OK(load_resume_and_verify(l4, 0));
	test_log("v4 drained: %" PRIu64 " of %" PRIu64 " bytes %s", l4->received, l4->sent,
		 l4->ok ? "intact" : l4->msg);
	ASSERT_EQ(l4->received, l4->sent);
	if (l6) {
		ASSERT_OK(load_resume_and_verify(l6, 0));
		ASSERT_EQ(l6->received, l6->sent);
	}

	/* --- closed: back to zero */
	ASSERT_OK(load_close(l4));
	if (l6)
		ASSERT_OK(load_close(l6));
	secs = wait_empty(id, 5);
	ASSERT_GE_F(secs, 0);
	test_log("stalled load closed: zero after %.2f s", secs);

	/* --- steady flow */
	{
		struct load_opts o = { .cgroup = cg, .nconn = 4, .family = AF_INET,
				       .readers = 1 };
		struct load *l = load_start(&o);

		ASSERT_TRUE(l != NULL);
		ASSERT_OK(load_wait_filled(l, 0));
		ASSERT_GT(l->received, 0);
		ASSERT_OK(skmem_cgroup(id, &t));
		ASSERT_EQ(t.sockets, 2 * 4 + 1);
		msleep(200);
		ASSERT_OK(load_resume_and_verify(l, 0));
		test_log("steady flow: %" PRIu64 " bytes through 4 connections, %s",
			 l->received, l->ok ? "intact" : l->msg);
		ASSERT_EQ(l->received, l->sent);
		ASSERT_OK(load_close(l));
		ASSERT_GE_F(wait_empty(id, 5), 0);
	}

	/* --- short connections: many, fast, nothing left behind */
	ASSERT_OK(short_connections_ex(cg, AF_INET, 10000, &secs));
	test_log("10000 short v4 connections in %.2f s", secs);
	/* 0.2 s on the host; ~10 s under qemu TCG emulation */
	EXPECT_LT_F(secs, 60);
	if (v6) {
		ASSERT_OK(short_connections_ex(cg, AF_INET6, 2000, &secs));
		test_log("2000 short v6 connections in %.2f s", secs);
	}
	secs = wait_empty(id, 5);
	ASSERT_GE_F(secs, 0);

	free(rel);
	return test_done();
}
