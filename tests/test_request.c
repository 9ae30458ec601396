// SPDX-License-Identifier: GPL-2.0
/* Unit tests for the control protocol: request_parse() and request_encode(). */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../src/request.h"

static int failures;

#define FAIL(...) do { printf("FAIL " __VA_ARGS__); failures++; } while (0)

struct accept_case {
	const char *name;
	const char *msg;
	enum request_cmd cmd;
	bool json;
	const char *cgroups[3];
	uint64_t limit, min, pressure, max;
	bool runtime;
};

static const struct accept_case accept_cases[] = {
	{ "status all", "status\n", REQ_STATUS, false, { NULL }, 0, 0, 0, 0, false },
	{ "status json", "status\n--json\n", REQ_STATUS, true, { NULL }, 0, 0, 0, 0, false },
	{ "status cgroups, json anywhere", "status\n/demo/a\n--json\n/sys/fs/cgroup/demo/b\n",
	  REQ_STATUS, true, { "/demo/a", "/sys/fs/cgroup/demo/b" }, 0, 0, 0, 0, false },
	{ "status root", "status\n/\n", REQ_STATUS, false, { "/" }, 0, 0, 0, 0, false },
	{ "dots inside names are fine", "status\n/a..b/.c/...\n", REQ_STATUS, false,
	  { "/a..b/.c/..." }, 0, 0, 0, 0, false },
	{ "set-limit pages", "set-limit\n/demo/a\n4096\n", REQ_SET_LIMIT, false,
	  { "/demo/a" }, 4096, 0, 0, 0, false },
	{ "set-limit bytes", "set-limit\n/demo/a\n64M\n", REQ_SET_LIMIT, false,
	  { "/demo/a" }, 16384, 0, 0, 0, false },
	{ "set", "set\n/demo/a\n8M\n12M\n16M\n", REQ_SET, false,
	  { "/demo/a" }, 0, 2048, 3072, 4096, false },
	{ "set equal thresholds", "set\n/demo/a\n1\n1\n1\n", REQ_SET, false,
	  { "/demo/a" }, 0, 1, 1, 1, false },
	{ "unset", "unset\n/demo/a\n", REQ_UNSET, false, { "/demo/a" }, 0, 0, 0, 0, false },
	{ "set-limit --runtime", "set-limit\n--runtime\n/demo/a\n16M\n", REQ_SET_LIMIT, false,
	  { "/demo/a" }, 4096, 0, 0, 0, true },
	{ "set-limit --runtime after the cgroup, with thresholds",
	  "set-limit\n/demo/a\n--runtime\n16M\n8M\n12M\n16M\n", REQ_SET_LIMIT, false,
	  { "/demo/a" }, 4096, 2048, 3072, 4096, true },
	{ "set-limit --runtime, max only", "set-limit\n--runtime\n/demo/a\n16M\n-\n-\n12M\n",
	  REQ_SET_LIMIT, false, { "/demo/a" }, 4096, 0, 0, 3072, true },
	{ "unset --runtime", "unset\n--runtime\n/demo/a\n", REQ_UNSET, false, { "/demo/a" },
	  0, 0, 0, 0, true },
	{ "reload", "reload\n", REQ_RELOAD, false, { NULL }, 0, 0, 0, 0, false },
	{ "metrics", "metrics\n", REQ_METRICS, false, { NULL }, 0, 0, 0, 0, false },
};

static void check_accept(const struct accept_case *c)
{
	struct request req;
	char err[256] = "";
	size_t n = 0;
	int ret = request_parse(c->msg, strlen(c->msg), &req, err, sizeof(err));

	if (ret != 0) {
		FAIL("%s: expected success, got %d \"%s\"\n", c->name, ret, err);
		return;
	}
	while (n < 3 && c->cgroups[n])
		n++;
	if (req.runtime != c->runtime)
		FAIL("%s: expected runtime %d, got %d\n", c->name, c->runtime, req.runtime);
	if (req.cmd != c->cmd || req.json != c->json || req.n_cgroups != n)
		FAIL("%s: expected cmd %d json %d n_cgroups %zu, got %d %d %zu\n", c->name,
		     c->cmd, c->json, n, req.cmd, req.json, req.n_cgroups);
	for (size_t i = 0; i < n && i < req.n_cgroups; i++)
		if (strcmp(req.cgroups[i], c->cgroups[i]) != 0)
			FAIL("%s: cgroup %zu: expected \"%s\", got \"%s\"\n", c->name, i,
			     c->cgroups[i], req.cgroups[i]);
	if (req.limit_pages != c->limit || req.min_pages != c->min ||
	    req.pressure_pages != c->pressure || req.max_pages != c->max)
		FAIL("%s: expected limit/min/pressure/max %llu/%llu/%llu/%llu, got %llu/%llu/%llu/%llu\n",
		     c->name, (unsigned long long)c->limit, (unsigned long long)c->min,
		     (unsigned long long)c->pressure, (unsigned long long)c->max,
		     (unsigned long long)req.limit_pages, (unsigned long long)req.min_pages,
		     (unsigned long long)req.pressure_pages, (unsigned long long)req.max_pages);
	request_free(&req);
}

struct reject_case {
	const char *msg;
	size_t len;		/* 0: strlen(msg) */
	const char *err;	/* the exact reason */
};

static const struct reject_case reject_cases[] = {
	{ "", 0, "empty request" },
	{ "\n", 0, "unknown command ''" },
	{ "foo\n", 0, "unknown command 'foo'" },
	{ "STATUS\n", 0, "unknown command 'STATUS'" },
	{ "status\0\n", 8, "embedded NUL" },
	{ "status", 0, "incomplete request: no '\\n' after the last word" },
	{ "unset\n/a", 0, "incomplete request: no '\\n' after the last word" },
	{ "set-limit\n/a\x00x\n64M\n", 17, "embedded NUL" },
	{ "bad\x01\n", 0, "unknown command 'bad?'" },
	{ "status\n--yaml\n", 0, "status: unknown option '--yaml'" },
	{ "status\ndemo\n", 0, "status: CGROUP: must start with '/' ('demo')" },
	{ "status\n\n", 0, "status: CGROUP: empty path" },
	{ "status\n/a/../b\n", 0, "status: CGROUP: '..' is not allowed ('/a/../b')" },
	{ "status\n/..\n", 0, "status: CGROUP: '..' is not allowed ('/..')" },
	{ "status\n/a/..\n", 0, "status: CGROUP: '..' is not allowed ('/a/..')" },
	{ "set-limit\n/demo/a\n", 0,
	  "set-limit: wrong number of arguments (usage: set-limit [--runtime] CGROUP SIZE [MIN PRESSURE MAX])" },
	{ "set-limit\n/demo/a\n64M\n--json\n", 0,
	  "set-limit: wrong number of arguments (usage: set-limit [--runtime] CGROUP SIZE [MIN PRESSURE MAX])" },
	{ "set-limit\ndemo\n64M\n", 0, "set-limit: CGROUP: must start with '/' ('demo')" },
	{ "set-limit\n/demo/a\nlots\n", 0, "set-limit: SIZE: bad size 'lots'" },
	{ "set-limit\n/demo/a\n-1\n", 0, "set-limit: SIZE: bad size '-1'" },
	{ "set-limit\n/demo/a\n0\n", 0, "set-limit: SIZE: must be at least 1 page" },
	{ "set-limit\n/demo/a\n99999999999999999999\n", 0,
	  "set-limit: SIZE: size out of range '99999999999999999999'" },
	{ "set\n/demo/a\n1\n2\n", 0,
	  "set: wrong number of arguments (usage: set CGROUP MIN PRESSURE MAX)" },
	{ "set\n/demo/a\nx\n2\n3\n", 0, "set: MIN: bad size 'x'" },
	{ "set\n/demo/a\n1\nx\n3\n", 0, "set: PRESSURE: bad size 'x'" },
	{ "set\n/demo/a\n1\n2\n3Q\n", 0, "set: MAX: bad size '3Q'" },
	{ "set\n/demo/a\n0\n2\n3\n", 0, "set: MIN: must be at least 1 page" },
	{ "set\n/demo/a\n3\n2\n4\n", 0, "set: MIN (3 pages) is above PRESSURE (2 pages)" },
	{ "set\n/demo/a\n1\n5\n4\n", 0, "set: PRESSURE (5 pages) is above MAX (4 pages)" },
	{ "set-limit\n/demo/a\n16M\n8M\n12M\n16M\n", 0, "set-limit: wrong number of arguments "
	  "(usage: set-limit [--runtime] CGROUP SIZE [MIN PRESSURE MAX])" },
	{ "set-limit\n--runtime\n/demo/a\n16M\n8M\n12M\n32M\n", 0,
	  "set-limit: MAX (8192 pages) is above SIZE (4096 pages)" },
	{ "set-limit\n--runtime\n/demo/a\n16M\n8M\n4M\n16M\n", 0,
	  "set-limit: MIN (2048 pages) is above PRESSURE (1024 pages)" },
	{ "set\n/demo/a\n-\n12M\n16M\n", 0, "set: MIN: bad size '-'" },
	{ "set-limit\n--runtime\n/demo/a\n16M\n12M\n-\n8M\n", 0,
	  "set-limit: MIN (3072 pages) is above MAX (2048 pages)" },
	{ "unset\n", 0, "unset: wrong number of arguments (usage: unset [--runtime] CGROUP)" },
	{ "unset\n/a\n/b\n", 0, "unset: wrong number of arguments (usage: unset [--runtime] CGROUP)" },
	{ "reload\n/a\n", 0, "reload: takes no arguments (usage: reload)" },
	{ "metrics\n--json\n", 0, "metrics: takes no arguments (usage: metrics)" },
	{ "unknown-command-with-a-very-long-name-that-goes-on-and-on-and-on\n", 0,
	  "unknown command 'unknown-command-with-a-very-long-name-that-goes-...'" },
};

static void check_reject(const struct reject_case *c)
{
	struct request req;
	char err[256] = "";
	size_t len = c->len ? c->len : strlen(c->msg);
	int ret = request_parse(c->msg, len, &req, err, sizeof(err));

	if (ret != -EINVAL || strcmp(err, c->err) != 0)
		FAIL("request %.*s: expected -EINVAL \"%s\", got %d \"%s\"\n",
		     (int)strcspn(c->msg, "\n"), c->msg, c->err, ret, err);
	if (req.cgroups || req.n_cgroups)
		FAIL("request %s: rejected request still holds cgroups\n", c->msg);
	request_free(&req);
}

/* Messages at the size limits: just fits, one byte over, path at PATH_MAX. */
static void check_limits(void)
{
	char *buf = malloc(REQUEST_MAX_BYTES + 2), err[256];
	struct request req;
	int ret;

	/* "status\n" then "/" + 'a'*k + "\n" words of 100 bytes up to the limit. */
	memcpy(buf, "status\n", 7);
	memset(buf + 7, 'a', REQUEST_MAX_BYTES - 7);
	for (size_t i = 7; i + 100 <= REQUEST_MAX_BYTES; i += 100)
		buf[i] = '/', buf[i + 99] = '\n';
	buf[REQUEST_MAX_BYTES - 1] = '\n';
	buf[(REQUEST_MAX_BYTES - 7) / 100 * 100 + 7] = '/';
	ret = request_parse(buf, REQUEST_MAX_BYTES, &req, err, sizeof(err));
	if (ret != 0 || req.n_cgroups != (REQUEST_MAX_BYTES - 7 + 99) / 100)
		FAIL("request of exactly REQUEST_MAX_BYTES: expected success, got %d \"%s\" (%zu cgroups)\n",
		     ret, err, req.n_cgroups);
	request_free(&req);

	ret = request_parse(buf, REQUEST_MAX_BYTES + 1, &req, err, sizeof(err));
	if (ret != -EINVAL || strcmp(err, "message too large (more than 65536 bytes)") != 0)
		FAIL("oversized request: expected -EINVAL \"message too large...\", got %d \"%s\"\n",
		     ret, err);

	memcpy(buf, "unset\n/", 7);
	memset(buf + 7, 'a', PATH_MAX);
	buf[6 + PATH_MAX - 1] = '\n';		/* path of PATH_MAX - 1 bytes: fits */
	ret = request_parse(buf, 6 + PATH_MAX, &req, err, sizeof(err));
	if (ret != 0)
		FAIL("path of PATH_MAX-1 bytes: expected success, got %d \"%s\"\n", ret, err);
	request_free(&req);
	buf[6 + PATH_MAX - 1] = 'a';
	buf[6 + PATH_MAX] = '\n';		/* PATH_MAX bytes: too long */
	ret = request_parse(buf, 7 + PATH_MAX, &req, err, sizeof(err));
	if (ret != -EINVAL || strcmp(err, "unset: CGROUP: path too long (4096 bytes, max 4095)") != 0)
		FAIL("path of PATH_MAX bytes: expected -EINVAL path too long, got %d \"%s\"\n",
		     ret, err);
	free(buf);
}

static void check_encode(void)
{
	char *argv[] = { "set", "/demo/a", "8M", "12M", "16M" };
	char *bad[] = { "status", "/a\nb" };
	const char *want = "set\n/demo/a\n8M\n12M\n16M\n";
	char buf[64], err[128];
	struct request req;
	int n = request_encode(5, argv, buf, sizeof(buf));

	if (n != (int)strlen(want) || memcmp(buf, want, (size_t)n) != 0)
		FAIL("request_encode: expected \"%s\" (%zu), got %d\n", want, strlen(want), n);
	else if (request_parse(buf, (size_t)n, &req, err, sizeof(err)) != 0 ||
		 req.cmd != REQ_SET || req.max_pages != 4096)
		FAIL("request_encode: round trip failed: %s\n", err);
	request_free(&req);

	n = request_encode(2, bad, buf, sizeof(buf));
	if (n != -EINVAL)
		FAIL("request_encode with newline in a word: expected -EINVAL, got %d\n", n);
	n = request_encode(5, argv, buf, strlen(want) - 1);
	if (n != -EMSGSIZE)
		FAIL("request_encode into a short buffer: expected -EMSGSIZE, got %d\n", n);
	n = request_encode(5, argv, buf, strlen(want));
	if (n != (int)strlen(want))
		FAIL("request_encode into an exact buffer: expected %zu, got %d\n", strlen(want), n);
	n = request_encode(0, argv, buf, sizeof(buf));
	if (n != 0)
		FAIL("request_encode of nothing: expected 0, got %d\n", n);
}

static void check_names(void)
{
	if (strcmp(request_cmd_name(REQ_SET_LIMIT), "set-limit") != 0)
		FAIL("request_cmd_name(REQ_SET_LIMIT): expected set-limit, got %s\n",
		     request_cmd_name(REQ_SET_LIMIT));
	if (!request_cmd_usage("set") || strcmp(request_cmd_usage("set"), "set CGROUP MIN PRESSURE MAX"))
		FAIL("request_cmd_usage(\"set\"): got %s\n", request_cmd_usage("set"));
	if (request_cmd_usage("nope"))
		FAIL("request_cmd_usage(\"nope\"): expected NULL\n");
}

int main(void)
{
	for (size_t i = 0; i < sizeof(accept_cases) / sizeof(accept_cases[0]); i++)
		check_accept(&accept_cases[i]);
	for (size_t i = 0; i < sizeof(reject_cases) / sizeof(reject_cases[0]); i++)
		check_reject(&reject_cases[i]);
	check_limits();
	check_encode();
	check_names();
	if (failures) {
		printf("test_request: %d failure(s)\n", failures);
		return 1;
	}
	printf("test_request: all passed\n");
	return 0;
}
