// SPDX-License-Identifier: GPL-2.0
/*
 * Unit tests for the configuration: the built-in default, accepted files,
 * every class of error (each must say FILE:LINE: reason and change
 * nothing), rule matching, threshold defaults, and config_load() on real
 * files in a temporary directory.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE	/* nftw() */
#endif
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <syslog.h>
#include <unistd.h>

#include "../src/config.h"
#include "../src/dropin.h"

static int failures;

#define FAIL(...) do { printf("FAIL " __VA_ARGS__); failures++; } while (0)

#define EXPECT_STR(what, want, got) do {						\
	const char *w_ = (want), *g_ = (got);						\
	if ((w_ || g_) && (!w_ || !g_ || strcmp(w_, g_) != 0))				\
		FAIL("%s: expected \"%s\", got \"%s\"\n", what, w_ ? w_ : "(null)",	\
		     g_ ? g_ : "(null)");						\
} while (0)

#define EXPECT_U64(what, want, got) do {						\
	unsigned long long w_ = (want), g_ = (got);					\
	if (w_ != g_)									\
		FAIL("%s: expected %llu, got %llu\n", what, w_, g_);			\
} while (0)

/* Up to three drop-ins named 10-a.conf, 20-b.conf, 30-c.conf. */
static const char *const dropin_names[] = { "10-a.conf", "20-b.conf", "30-c.conf" };

static int parse(const char *main_text, const char *const dropins[3], struct config *out,
		 char *err, size_t errlen)
{
	struct config_source main_src = { "main.conf", main_text, strlen(main_text) };
	struct config_source src[3];
	size_t n = 0;

	while (dropins && n < 3 && dropins[n]) {
		src[n] = (struct config_source){ dropin_names[n], dropins[n], strlen(dropins[n]) };
		n++;
	}
	return config_parse(&main_src, src, n, out, err, errlen);
}

/* ---- the built-in default -------------------------------------------- */

static void check_defaults(const char *what, const struct config *c)
{
	EXPECT_STR(what, "/sys/fs/bpf/tcpbufd", c->pin_path);
	EXPECT_STR(what, "/run/tcpbufd/control.sock", c->socket_path);
	EXPECT_STR(what, "/etc/tcpbufd.d", c->dropin_dir);
	EXPECT_STR(what, "/var/lib/tcpbufd", c->state_dir);
	EXPECT_STR(what, "/", c->scope);
	EXPECT_STR(what, "auto", c->mode);
	EXPECT_U64(what, 1000, c->sample_interval_ms);
	EXPECT_U64(what, 1000, c->poll_interval_ms);
	EXPECT_U64(what, LOG_INFO, (unsigned)c->log_level);
	EXPECT_U64(what, 0600, c->socket_mode);
	EXPECT_STR(what, NULL, c->socket_group);
	EXPECT_U64(what, 0, c->default_limit_pages);
	EXPECT_U64(what, INGRESS_REST_AUTO, c->ingress_rest);
	EXPECT_U64(what, 0, c->n_rules);
}

/* The shipped tcpbufd.conf documents the defaults: it must say what the code does. */
static void test_builtin_default(void)
{
	struct config c;
	char err[512] = "";

	if (parse(tcpbufd_default_conf, NULL, &c, err, sizeof(err)) != 0) {
		FAIL("built-in tcpbufd.conf does not parse: %s\n", err);
		return;
	}
	check_defaults("built-in tcpbufd.conf", &c);
	config_free(&c);

	if (parse("", NULL, &c, err, sizeof(err)) != 0) {
		FAIL("empty main file does not parse: %s\n", err);
		return;
	}
	check_defaults("empty main file", &c);
	EXPECT_STR("empty main file: main_file", "main.conf", c.main_file);
	config_free(&c);
}

/* ---- accepted files --------------------------------------------------- */

static void test_main_file(void)
{
	const char *text =
		"\xEF\xBB\xBF# full main file, with a byte order mark and CRLF\r\n"
		"[Daemon]\r\n"
		"  PinPath = /sys/fs/bpf/other   # inline comment\r\n"
		"\tSocket=/run/x.sock ; other comment\r\n"
		"DropInDir=/srv/tcpbufd.d\n"
		"StateDir=/srv/state\n"
		"Scope=//system.slice//\n"
		"Mode=sampled\n"
		"SampleIntervalMs=250\n"
		"PollIntervalMs=3600000\n"
		"LogLevel=debug\n"
		"SocketMode=0660\n"
		"SocketGroup=docker\n"
		"AdminGroup=4242\n"
		"IngressRest=no\n"
		"[Default]\n"
		"Limit=1G\n";
	struct config c;
	char err[512] = "";

	if (parse(text, NULL, &c, err, sizeof(err)) != 0) {
		FAIL("full main file: %s\n", err);
		return;
	}
	EXPECT_STR("PinPath", "/sys/fs/bpf/other", c.pin_path);
	EXPECT_STR("Socket", "/run/x.sock", c.socket_path);
	EXPECT_STR("DropInDir", "/srv/tcpbufd.d", c.dropin_dir);
	EXPECT_STR("StateDir", "/srv/state", c.state_dir);
	EXPECT_STR("Scope", "/system.slice", c.scope);
	EXPECT_STR("Mode", "sampled", c.mode);
	EXPECT_U64("SampleIntervalMs", 250, c.sample_interval_ms);
	EXPECT_U64("PollIntervalMs", 3600000, c.poll_interval_ms);
	EXPECT_U64("LogLevel", LOG_DEBUG, (unsigned)c.log_level);
	EXPECT_U64("SocketMode", 0660, c.socket_mode);
	EXPECT_STR("SocketGroup", "docker", c.socket_group);
	EXPECT_U64("AdminGroup", 4242, c.admin_gid);
	EXPECT_U64("IngressRest", INGRESS_REST_NO, c.ingress_rest);
	EXPECT_U64("[Default] Limit", 262144, c.default_limit_pages);
	config_free(&c);

	/* Empty values mean the default. */
	if (parse("[Daemon]\nMode=\nLogLevel=\n[Default]\nLimit=\n", NULL, &c, err,
		  sizeof(err)) != 0) {
		FAIL("empty values: %s\n", err);
		return;
	}
	check_defaults("empty values", &c);
	config_free(&c);
}

static void test_dropins(void)
{
	const char *const dropins[3] = {
		"# two sections back to back must stay two rules\n"
		"[Cgroup]   ; comment\n"
		"Path=/system.slice/docker-*.scope\n"
		"Limit=64M\n"
		"[Cgroup] # comment\n"
		"Path=/demo/a/\n"
		"Limit=4096\n"
		"Min=1024\n"
		"Pressure=2048   # explicit\n"
		"Max=3072\n",
		"",
		"[Cgroup]\n"
		"    Path=/system.slice/*\n"
		"    Limit=1G\n"
		"    Max=\n",
	};
	struct config c;
	char err[512] = "";

	if (parse("", dropins, &c, err, sizeof(err)) != 0) {
		FAIL("drop-ins: %s\n", err);
		return;
	}
	EXPECT_U64("n_rules", 3, c.n_rules);
	if (c.n_rules == 3) {
		EXPECT_STR("rule 0 pattern", "/system.slice/docker-*.scope", c.rules[0].pattern);
		EXPECT_STR("rule 0 file", "10-a.conf", c.rules[0].file);
		EXPECT_U64("rule 0 line", 3, c.rules[0].line);
		EXPECT_U64("rule 0 limit", 16384, c.rules[0].limit_pages);
		EXPECT_U64("rule 0 is_glob", 1, c.rules[0].is_glob);
		EXPECT_STR("rule 1 pattern", "/demo/a", c.rules[1].pattern);
		EXPECT_U64("rule 1 line", 6, c.rules[1].line);
		EXPECT_U64("rule 1 min", 1024, c.rules[1].min_pages);
		EXPECT_U64("rule 1 pressure", 2048, c.rules[1].pressure_pages);
		EXPECT_U64("rule 1 max", 3072, c.rules[1].max_pages);
		EXPECT_U64("rule 1 is_glob", 0, c.rules[1].is_glob);
		EXPECT_STR("rule 2 file", "30-c.conf", c.rules[2].file);
		EXPECT_U64("rule 2 max (empty = unset)", 0, c.rules[2].max_pages);
	}
	config_free(&c);
}

/* ---- matching ---------------------------------------------------------- */

static void test_match(void)
{
	const char *const dropins[3] = {
		"[Cgroup]\nPath=/system.slice/*\nLimit=1\n"
		"[Cgroup]\nPath=/system.slice/docker-*.scope\nLimit=2\n",
		"[Cgroup]\nPath=/system.slice/docker-abc.scope\nLimit=3\n"
		"[Cgroup]\nPath=/odd/a\\*b\nLimit=4\n"
		"[Cgroup]\nPath=/\nLimit=5\n",
		NULL,
	};
	static const struct { const char *path; uint64_t limit; } cases[] = {
		{ "/system.slice/web.service", 1 },		/* first glob in file order */
		{ "/system.slice/docker-1.scope", 1 },		/* still the first glob */
		{ "/system.slice/docker-abc.scope", 3 },	/* exact beats any glob */
		{ "//system.slice/docker-abc.scope/", 3 },	/* normalized first */
		{ "/system.slice/a/b", 0 },			/* '*' stays in one component */
		{ "/odd/a*b", 4 },				/* escaped glob char: literal */
		{ "/odd/axb", 0 },
		{ "/", 5 },
		{ "/user.slice", 0 },
		{ "relative", 0 },
		{ "/a/../system.slice/x", 0 },
	};
	struct config c;
	char err[512] = "";

	if (parse("", dropins, &c, err, sizeof(err)) != 0) {
		FAIL("match config: %s\n", err);
		return;
	}
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct cgroup_rule *r = config_match(&c, cases[i].path);
		char what[128];

		snprintf(what, sizeof(what), "config_match(\"%s\") limit", cases[i].path);
		EXPECT_U64(what, cases[i].limit, r ? r->limit_pages : 0);
	}
	config_free(&c);
	if (config_match(NULL, "/x") || config_match(&c, "/x"))
		FAIL("config_match on no config: expected NULL\n");
}

/* ---- threshold defaults ------------------------------------------------ */

static void test_thresholds(void)
{
	static const struct {
		uint64_t limit, min, pressure, max;	/* as configured, 0 = unset */
		uint64_t e_min, e_pressure, e_max;	/* effective */
	} cases[] = {
		{ 4096, 0, 0, 0,	2048, 3072, 4096 },	/* 1/2, 3/4, 1 of the limit */
		{ 4096, 0, 0, 2000,	1000, 1500, 2000 },	/* fractions of an explicit Max */
		{ 4096, 100, 200, 300,	100, 200, 300 },	/* explicit values win */
		{ 4096, 0, 1000, 0,	1000, 1000, 4096 },	/* min clamped below pressure */
		{ 4096, 3500, 0, 0,	3500, 3500, 4096 },	/* pressure raised to min */
		{ 4096, 0, 0, 10,	5, 7, 10 },
		{ 1, 0, 0, 0,		1, 1, 1 },		/* never 0: 0 means unset */
		{ 2, 0, 0, 0,		1, 1, 2 },
		{ 3, 0, 0, 0,		1, 2, 3 },
		{ 4503599627370495ULL, 0, 0, 0,
		  2251799813685247ULL, 3377699720527871ULL, 4503599627370495ULL },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct cgroup_rule r = {
			.limit_pages = cases[i].limit, .min_pages = cases[i].min,
			.pressure_pages = cases[i].pressure, .max_pages = cases[i].max,
		};
		uint64_t mn, pr, mx;

		rule_thresholds(&r, &mn, &pr, &mx);
		if (mn != cases[i].e_min || pr != cases[i].e_pressure || mx != cases[i].e_max)
			FAIL("rule_thresholds(limit %llu, %llu/%llu/%llu): expected %llu/%llu/%llu, "
			     "got %llu/%llu/%llu\n", (unsigned long long)cases[i].limit,
			     (unsigned long long)cases[i].min, (unsigned long long)cases[i].pressure,
			     (unsigned long long)cases[i].max, (unsigned long long)cases[i].e_min,
			     (unsigned long long)cases[i].e_pressure,
			     (unsigned long long)cases[i].e_max, (unsigned long long)mn,
			     (unsigned long long)pr, (unsigned long long)mx);
	}
}

/* ---- errors ------------------------------------------------------------ */

struct error_case {
	const char *main_text;
	const char *dropins[3];
	const char *err;
};

#define CG(body) "[Cgroup]\n" body
static const struct error_case error_cases[] = {
	/* main file: sections and keys */
	{ "[Foo]\n", { NULL }, "main.conf:1: unknown section [Foo]" },
	{ "[daemon]\n", { NULL }, "main.conf:1: unknown section [daemon]" },
	{ "[Daemon]\nPinpath=/x\n", { NULL }, "main.conf:2: unknown key Pinpath= in [Daemon]" },
	{ "[Default]\nMax=1\n", { NULL }, "main.conf:2: unknown key Max= in [Default]" },
	{ "Mode=auto\n", { NULL }, "main.conf:1: Mode= is outside of a section" },
	{ "[Daemon]\nMode=auto\n\n[Daemon]\nMode=exact\n", { NULL },
	  "main.conf:5: Mode= is already set at line 2" },
	{ "[Cgroup]\nPath=/a\nLimit=1\n", { NULL },
	  "main.conf:1: [Cgroup] sections belong in drop-in files in DropInDir (/etc/tcpbufd.d)" },
	/* main file: values */
	{ "[Daemon]\nMode=fast\n", { NULL }, "main.conf:2: Mode=fast: must be auto, exact or sampled" },
	{ "[Daemon]\nIngressRest=1\n", { NULL }, "main.conf:2: IngressRest=1: must be auto, yes or no" },
	{ "[Daemon]\nLogLevel=verbose\n", { NULL },
	  "main.conf:2: LogLevel=verbose: must be err, warning, notice, info or debug" },
	{ "[Daemon]\nPollIntervalMs=1s\n", { NULL }, "main.conf:2: PollIntervalMs=1s: bad number" },
	{ "[Daemon]\nPollIntervalMs=-5\n", { NULL }, "main.conf:2: PollIntervalMs=-5: bad number" },
	{ "[Daemon]\nSampleIntervalMs=5\n", { NULL },
	  "main.conf:2: SampleIntervalMs=5: must be between 10 and 3600000 milliseconds" },
	{ "[Daemon]\nSampleIntervalMs=99999999999999999999999\n", { NULL },
	  "main.conf:2: SampleIntervalMs=99999999999999999999999: must be between 10 and 3600000 milliseconds" },
	{ "[Daemon]\nSocketMode=0999\n", { NULL },
	  "main.conf:2: SocketMode=0999: bad number (octal permission bits, at most 0777)" },
	{ "[Daemon]\nSocketMode=01777\n", { NULL },
	  "main.conf:2: SocketMode=01777: bad number (octal permission bits, at most 0777)" },
	{ "[Daemon]\nSocketGroup=a b\n", { NULL }, "main.conf:2: SocketGroup=a b: not a group name" },
	{ "[Daemon]\nAdminGroup=no-such-group-here\n", { NULL },
	  "main.conf:2: AdminGroup=no-such-group-here: no such group" },
	{ "[Daemon]\nPinPath=sys/fs/bpf\n", { NULL },
	  "main.conf:2: PinPath=sys/fs/bpf: must be an absolute path" },
	{ "[Daemon]\nSocket=/run/tcpbufd/a-socket-path-that-is-much-too-long-to-fit-into-"
	  "sockaddr_un-sun_path-of-108-bytes-on-linux-x86-64.sock\n", { NULL },
	  "main.conf:2: Socket=/run/tcpbufd/a-socket-path-that-is-much-too-long-to-fit-into-"
	  "sockaddr_un-sun_path-of-108-bytes-on-linux-x86-64.sock: too long for a unix socket (max 107 bytes)" },
	{ "[Daemon]\nScope=/system.slice/*\n", { NULL },
	  "main.conf:2: Scope=/system.slice/*: must be one cgroup, not a glob" },
	{ "[Daemon]\nScope=system.slice\n", { NULL },
	  "main.conf:2: Scope=system.slice: not a cgroup path (must start with '/', no '.' or '..')" },
	{ "[Default]\nLimit=lots\n", { NULL },
	  "main.conf:2: Limit=lots: bad size (pages, or bytes with B, K, M or G)" },
	{ "[Default]\nLimit=0\n", { NULL },
	  "main.conf:2: Limit=0: must be at least 1 page (leave it empty for none)" },
	/* syntax */
	{ "[Daemon]\njust some words\n", { NULL },
	  "main.conf:2: syntax error (expected [Section], Key=Value or a comment)" },
	{ "[Daemon\n", { NULL }, "main.conf:1: malformed section header (expected [Name])" },
	{ "[Daemon] trailing\n", { NULL }, "main.conf:1: malformed section header (expected [Name])" },
	/* drop-ins */
	{ "", { "[Daemon]\nMode=auto\n" },
	  "10-a.conf:1: [Daemon] belongs in the main config file; drop-ins hold [Cgroup] sections" },
	{ "", { CG("Path=/a\nLimit=1\nWeight=5\n") }, "10-a.conf:4: unknown key Weight= in [Cgroup]" },
	{ "", { CG("Path=/a\nLimit=12Q\n") },
	  "10-a.conf:3: Limit=12Q: bad size (pages, or bytes with B, K, M or G)" },
	{ "", { CG("Path=/a\nLimit=99999999999999999999\n") },
	  "10-a.conf:3: Limit=99999999999999999999: size out of range" },
	{ "", { CG("Path=/a\nLimit=\n") }, "10-a.conf:3: Limit= is empty" },
	{ "", { CG("Path=/a\nLimit=0\n") },
	  "10-a.conf:3: Limit=0: must be at least 1 page (leave it empty for none)" },
	{ "", { CG("Path=/a\nLimit=8\nPressure=x\n") },
	  "10-a.conf:4: Pressure=x: bad size (pages, or bytes with B, K, M or G)" },
	{ "", { CG("Path=/a\nMax=4\n") },
	  "10-a.conf:1: [Cgroup] section for /a has no Limit= (the ceiling is required)" },
	{ "", { "# one good, then one without Limit\n" CG("Path=/a\nLimit=1\n") "\n" CG("Path=/b\n") CG("Path=/c\nLimit=1\n") },
	  "10-a.conf:6: [Cgroup] section for /b has no Limit= (the ceiling is required)" },
	{ "", { CG("Limit=4\n") }, "10-a.conf:1: [Cgroup] section has no Path=" },
	{ "", { CG("") }, "10-a.conf:1: [Cgroup] section has no Path=" },
	{ "", { CG("Path=/a\nLimit=4\nPath=/b\n") }, "10-a.conf:4: Path= is already set at line 2" },
	{ "", { CG("Path=\nLimit=4\n") }, "10-a.conf:2: Path= is empty" },
	{ "", { CG("Path=a/b\nLimit=4\n") },
	  "10-a.conf:2: Path=a/b: not a cgroup path (must start with '/', no '.' or '..')" },
	{ "", { CG("Path=/a/../b\nLimit=4\n") },
	  "10-a.conf:2: Path=/a/../b: not a cgroup path (must start with '/', no '.' or '..')" },
	{ "", { CG("Path=/sys/fs/cgroup/system.slice\nLimit=4\n") },
	  "10-a.conf:2: Path=/sys/fs/cgroup/system.slice: is relative to the cgroup v2 mount: leave out the mount point" },
	/* thresholds: above the ceiling, out of order */
	{ "", { CG("Path=/a\nLimit=4\nMax=5\n") },
	  "10-a.conf:4: Max= (5 pages) is above Limit= (4 pages): thresholds must keep Min <= Pressure <= Max <= Limit" },
	{ "", { CG("Path=/a\nMin=5\nLimit=4\n") },
	  "10-a.conf:4: Min= (5 pages) is above Limit= (4 pages): thresholds must keep Min <= Pressure <= Max <= Limit" },
	{ "", { CG("Path=/a\nLimit=16M\nMin=8M\nPressure=4M\n") },
	  "10-a.conf:5: Min= (2048 pages) is above Pressure= (1024 pages): thresholds must keep Min <= Pressure <= Max <= Limit" },
	{ "", { CG("Path=/a\nLimit=16M\nPressure=12M\nMax=8M\n") },
	  "10-a.conf:5: Pressure= (3072 pages) is above Max= (2048 pages): thresholds must keep Min <= Pressure <= Max <= Limit" },
	{ "", { CG("Path=/a\nLimit=16M\nMax=8M\nMin=12M\n") },
	  "10-a.conf:5: Min= (3072 pages) is above Max= (2048 pages): thresholds must keep Min <= Pressure <= Max <= Limit" },
	/* the same Path twice: in one file and across files, naming both places */
	{ "", { CG("Path=/a\nLimit=1\n") CG("Path=/a/\nLimit=2\n") },
	  "10-a.conf:5: Path=/a is already configured at 10-a.conf:2" },
	{ "", { CG("Path=/x/*\nLimit=1\n"), "\n" CG("Path=//x//*\nLimit=2\n") },
	  "20-b.conf:3: Path=/x/* is already configured at 10-a.conf:2" },
	/* the first error wins, whichever kind */
	{ "[Daemon]\nnonsense\nMode=bad\n", { NULL },
	  "main.conf:2: syntax error (expected [Section], Key=Value or a comment)" },
	{ "[Daemon]\nMode=bad\nnonsense\n", { NULL },
	  "main.conf:2: Mode=bad: must be auto, exact or sampled" },
	{ "", { CG("Path=/a\nLimit=1\n"), CG("Path=/b\nLimit=x\n"), CG("Path=/c\nLimit=y\n") },
	  "20-b.conf:3: Limit=x: bad size (pages, or bytes with B, K, M or G)" },
	/* control characters from the file do not break the one-line message */
	{ "[Daemon]\nMode=a\rb\n", { NULL }, "main.conf:2: Mode=a?b: must be auto, exact or sampled" },
};

/* A config to check that failed loads leave *out alone. */
static const struct config sentinel = { .pin_path = (char *)"sentinel", .n_rules = 42 };

static void test_errors(void)
{
	for (size_t i = 0; i < sizeof(error_cases) / sizeof(error_cases[0]); i++) {
		const struct error_case *c = &error_cases[i];
		struct config out = sentinel;
		char err[512] = "";
		int ret = parse(c->main_text, c->dropins, &out, err, sizeof(err));

		if (ret != -EINVAL || strcmp(err, c->err) != 0)
			FAIL("error case %zu: expected -EINVAL \"%s\", got %d \"%s\"\n",
			     i, c->err, ret, err);
		if (memcmp(&out, &sentinel, sizeof(out)) != 0)
			FAIL("error case %zu: *out was changed\n", i);
		if (ret == 0)
			config_free(&out);
	}
}

/* Lines longer than libinih's buffer and NUL bytes are refused, not split. */
static void test_raw_errors(void)
{
	char long_line[400], err[512];
	struct config_source main_src = { "main.conf", "[Daemon]\nMode=au\0to\n", 21 };
	struct config_source dropin;
	struct config out = sentinel;
	int ret = config_parse(&main_src, NULL, 0, &out, err, sizeof(err));

	EXPECT_STR("NUL byte", "main.conf:2: embedded NUL byte", err);
	if (ret != -EINVAL || memcmp(&out, &sentinel, sizeof(out)) != 0)
		FAIL("NUL byte: expected -EINVAL and *out untouched, got %d\n", ret);

	/* Longer than libinih's 200-byte buffer: read whole, as libinih cuts a short one. */
	snprintf(long_line, sizeof(long_line),
		 "[Cgroup]\nLimit=1\n  Path = /%0300d/x  ; a comment\n", 0);
	dropin = (struct config_source){ "10-a.conf", long_line, strlen(long_line) };
	main_src = (struct config_source){ "main.conf", "", 0 };
	ret = config_parse(&main_src, &dropin, 1, &out, err, sizeof(err));
	if (ret != 0) {
		FAIL("long line: expected success, got %d \"%s\"\n", ret, err);
	} else {
		snprintf(long_line, sizeof(long_line), "/%0300d/x", 0);
		if (out.n_rules != 1 || strcmp(out.rules[0].pattern, long_line) != 0 ||
		    out.rules[0].line != 3)
			FAIL("long line: Path= read as \"%s\"\n",
			     out.n_rules ? out.rules[0].pattern : "(none)");
		config_free(&out);
	}
	snprintf(long_line, sizeof(long_line), "[Cgroup]\nLimit=1\nPath /%0300d\n", 0);
	dropin.len = strlen(long_line);
	out = sentinel;
	ret = config_parse(&main_src, &dropin, 1, &out, err, sizeof(err));
	EXPECT_STR("long line without =",
		   "10-a.conf:3: syntax error (expected [Section], Key=Value or a comment)", err);
	if (ret != -EINVAL || memcmp(&out, &sentinel, sizeof(out)) != 0)
		FAIL("long line without =: expected -EINVAL and *out untouched, got %d\n", ret);
	snprintf(long_line, sizeof(long_line), "[Cgroup%0300d]\n", 0);
	dropin.len = strlen(long_line);
	ret = config_parse(&main_src, &dropin, 1, &out, err, sizeof(err));
	if (ret != -EINVAL || !strstr(err, "10-a.conf:1: section header too long"))
		FAIL("long header: got %d \"%s\"\n", ret, err);
	{
		size_t n = CONFIG_MAX_LINE + 1;
		char *huge = malloc(n + 32), want[128];

		if (!huge)
			abort();
		memcpy(huge, "[Cgroup]\nPath=/", 15);
		memset(huge + 15, 'x', n - 6);
		strcpy(huge + 15 + n - 6, "\n");
		dropin = (struct config_source){ "10-a.conf", huge, strlen(huge) };
		ret = config_parse(&main_src, &dropin, 1, &out, err, sizeof(err));
		snprintf(want, sizeof(want), "10-a.conf:2: line too long (%zu characters, at most %d)",
			 n, CONFIG_MAX_LINE);
		EXPECT_STR("line past CONFIG_MAX_LINE", want, err);
		free(huge);
	}

	/* A tiny error buffer truncates but stays a string. */
	main_src = (struct config_source){ "main.conf", "[Foo]\n", 6 };
	ret = config_parse(&main_src, NULL, 0, &out, err, 8);
	EXPECT_STR("truncated error", "main.co", err);
}

/* ---- config_load on files ----------------------------------------------- */

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st, (void)flag, (void)ftw;
	return remove(path);
}

/* rm -rf without a shell: the tests also run in VM guests with little userland. */
static void remove_tree(const char *dir)
{
	if (nftw(dir, remove_one, 16, FTW_DEPTH | FTW_PHYS) != 0)
		FAIL("cleanup of %s failed: %s\n", dir, strerror(errno));
}

static char tmpdir[] = "/tmp/test_config.XXXXXX";

static void write_file(const char *name, const char *text)
{
	char path[PATH_MAX];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
	f = fopen(path, "w");
	if (!f || fputs(text, f) < 0 || fclose(f) != 0)
		FAIL("cannot write %s\n", path);
}

static void test_load(void)
{
	char main_path[PATH_MAX], path[PATH_MAX], text[PATH_MAX + 64], want[PATH_MAX * 2], err[512];
	struct config c, out = sentinel;
	int ret;

	if (!mkdtemp(tmpdir)) {
		FAIL("mkdtemp: %s\n", strerror(errno));
		return;
	}
	snprintf(main_path, sizeof(main_path), "%s/tcpbufd.conf", tmpdir);

	/* A missing default path runs on the built-in copy; a missing -c FILE is an error. */
	ret = config_load(main_path, true, &c, err, sizeof(err));
	if (ret != 0) {
		FAIL("missing default main file: expected the built-in, got %d \"%s\"\n", ret, err);
	} else {
		EXPECT_STR("missing default: main_file", CONFIG_BUILTIN_NAME, c.main_file);
		config_free(&c);
	}
	ret = config_load(NULL, false, &c, err, sizeof(err));
	if (ret != 0)
		FAIL("NULL main path: expected the built-in, got %d \"%s\"\n", ret, err);
	else
		config_free(&c);
	ret = config_load(main_path, false, &out, err, sizeof(err));
	snprintf(want, sizeof(want), "%s: No such file or directory", main_path);
	EXPECT_STR("missing -c FILE", want, err);
	if (ret != -ENOENT || memcmp(&out, &sentinel, sizeof(out)) != 0)
		FAIL("missing -c FILE: expected -ENOENT and *out untouched, got %d\n", ret);

	/* A main file naming a drop-in directory that does not exist yet: no rules. */
	snprintf(text, sizeof(text), "[Daemon]\nDropInDir=%s/d\n", tmpdir);
	write_file("tcpbufd.conf", text);
	ret = config_load(main_path, true, &c, err, sizeof(err));
	if (ret != 0 || c.n_rules != 0)
		FAIL("missing drop-in dir: expected no rules, got %d \"%s\"\n", ret, err);
	else
		EXPECT_STR("main_file", main_path, c.main_file);
	if (ret == 0)
		config_free(&c);

	/* Drop-ins in name order; hidden files and other suffixes are not drop-ins. */
	snprintf(path, sizeof(path), "%s/d", tmpdir);
	mkdir(path, 0755);
	write_file("d/20-b.conf", "[Cgroup]\nPath=/b\nLimit=2\n");
	write_file("d/10-a.conf", "[Cgroup]\nPath=/a\nLimit=1\n");
	write_file("d/.50-tcpbufctl-x.conf.tmp123", "garbage");
	write_file("d/.hidden.conf", "garbage");
	write_file("d/README", "garbage");
	write_file("d/x.conf.disabled", "garbage");
	ret = config_load(main_path, false, &c, err, sizeof(err));
	if (ret != 0 || c.n_rules != 2) {
		FAIL("two drop-ins: expected 2 rules, got %d \"%s\"\n", ret, err);
	} else {
		snprintf(want, sizeof(want), "%s/d/10-a.conf", tmpdir);
		EXPECT_STR("first drop-in", want, c.rules[0].file);
		EXPECT_STR("first rule", "/a", c.rules[0].pattern);
		EXPECT_STR("second rule", "/b", c.rules[1].pattern);
	}
	if (ret == 0)
		config_free(&c);

	/* The same Path in two files names both. */
	write_file("d/30-c.conf", "# again\n[Cgroup]\nPath=/a\nLimit=3\n");
	out = sentinel;
	ret = config_load(main_path, false, &out, err, sizeof(err));
	snprintf(want, sizeof(want), "%s/d/30-c.conf:3: Path=/a is already configured at %s/d/10-a.conf:2",
		 tmpdir, tmpdir);
	EXPECT_STR("Path in two files", want, err);
	if (ret != -EINVAL || memcmp(&out, &sentinel, sizeof(out)) != 0)
		FAIL("Path in two files: expected -EINVAL and *out untouched, got %d\n", ret);
	snprintf(path, sizeof(path), "%s/d/30-c.conf", tmpdir);
	unlink(path);

	/* An unreadable drop-in: "FILE: reason", no line. */
	snprintf(path, sizeof(path), "%s/d/40-dir.conf", tmpdir);
	mkdir(path, 0755);
	ret = config_load(main_path, false, &out, err, sizeof(err));
	snprintf(want, sizeof(want), "%s: Is a directory", path);
	EXPECT_STR("unreadable drop-in", want, err);
	if (ret != -EISDIR)
		FAIL("unreadable drop-in: expected -EISDIR, got %d\n", ret);
	rmdir(path);

	/* A drop-in masked by a symlink to /dev/null is empty, as in systemd. */
	snprintf(path, sizeof(path), "%s/d/20-b.conf", tmpdir);
	unlink(path);
	if (symlink("/dev/null", path) != 0)
		FAIL("symlink: %s\n", strerror(errno));
	ret = config_load(main_path, false, &c, err, sizeof(err));
	if (ret != 0 || c.n_rules != 1)
		FAIL("masked drop-in: expected 1 rule, got %d \"%s\"\n", ret, err);
	if (ret == 0)
		config_free(&c);

	/* An error in the main file stops before any drop-in is read. */
	write_file("tcpbufd.conf", "[Daemon]\nMode=turbo\n");
	ret = config_load(main_path, false, &out, err, sizeof(err));
	snprintf(want, sizeof(want), "%s:2: Mode=turbo: must be auto, exact or sampled", main_path);
	EXPECT_STR("bad main file", want, err);

	/* An error in a present default file is an error, not a fallback. */
	ret = config_load(main_path, true, &out, err, sizeof(err));
	EXPECT_STR("bad default main file", want, err);
	if (memcmp(&out, &sentinel, sizeof(out)) != 0)
		FAIL("bad main file: *out was changed\n");

	remove_tree(tmpdir);
}

/* ---- persistence: drop-ins written by set-limit, the thresholds file ---- */

static void test_dropin_names(void)
{
	static const struct { const char *in; const char *out; } cases[] = {
		{ "/demo/a", "50-tcpbufctl-demo-a.conf" },
		{ "/demo/a/", "50-tcpbufctl-demo-a.conf" },		/* normalized first */
		{ "/demo-a", "50-tcpbufctl-demo\\x2da.conf" },		/* not /demo/a */
		{ "/", "50-tcpbufctl--.conf" },
		{ "/system.slice/web.service", "50-tcpbufctl-system.slice-web.service.conf" },
		{ "/.hidden/x", "50-tcpbufctl-\\x2ehidden-x.conf" },	/* never a dot file */
		{ "/a b/c\\d", "50-tcpbufctl-a\\x20b-c\\x5cd.conf" },
		{ "/a~b", "50-tcpbufctl-a\\x7eb.conf" },
	};
	char name[NAME_MAX + 1], path[PATH_MAX], other[NAME_MAX + 1];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int ret = dropin_name(cases[i].in, name, sizeof(name));

		if (ret != 0 || strcmp(name, cases[i].out) != 0)
			FAIL("dropin_name(\"%s\"): expected \"%s\", got %d \"%s\"\n", cases[i].in,
			     cases[i].out, ret, ret ? "" : name);
	}
	if (dropin_name("relative", name, sizeof(name)) != -EINVAL)
		FAIL("dropin_name(\"relative\"): expected -EINVAL\n");
	if (dropin_name("/a/../b", name, sizeof(name)) != -EINVAL)
		FAIL("dropin_name(\"/a/../b\"): expected -EINVAL\n");

	/* Deep paths: a bounded name ending in a hash, distinct per path. */
	memset(path, 'x', 2000);
	path[0] = '/';
	path[2000] = '\0';
	if (dropin_name(path, name, sizeof(name)) != 0 || strlen(name) > NAME_MAX - 8 ||
	    !strchr(name, '~') || strcmp(name + strlen(name) - 5, ".conf") != 0)
		FAIL("dropin_name(long path): expected a hashed name of at most %d bytes, got \"%s\"\n",
		     NAME_MAX - 8, name);
	path[1999] = 'y';
	if (dropin_name(path, other, sizeof(other)) != 0 || strcmp(name, other) == 0)
		FAIL("dropin_name: two long paths share the name \"%s\"\n", name);
}

static void read_text(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");
	size_t n = f ? fread(buf, 1, len - 1, f) : 0;

	buf[n] = '\0';
	if (f)
		fclose(f);
}

static size_t count_entries(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	size_t n = 0;

	while (d && (de = readdir(d)))
		n += strcmp(de->d_name, ".") && strcmp(de->d_name, "..");
	if (d)
		closedir(d);
	return n;
}

/* What set-limit writes, config_load() reads back as the same ceiling. */
static void test_dropin_round_trip(void)
{
	char dir[] = "/tmp/test_dropin.XXXXXX", dropins[256], main_path[PATH_MAX];
	char text[PATH_MAX * 2], err[512], want[PATH_MAX];
	static const char *const cgroups[] = { "/demo/a", "/demo-a", "/odd/a*b", "/" };
	struct config c;
	FILE *f;
	int ret;

	if (!mkdtemp(dir)) {
		FAIL("mkdtemp: %s\n", strerror(errno));
		return;
	}
	snprintf(dropins, sizeof(dropins), "%s/tcpbufd.d", dir);	/* created on demand */
	snprintf(main_path, sizeof(main_path), "%s/tcpbufd.conf", dir);
	f = fopen(main_path, "w");
	fprintf(f, "[Daemon]\nDropInDir=%s\n", dropins);
	fclose(f);

	for (size_t i = 0; i < 4; i++) {
		ret = dropin_write_limit(dropins, cgroups[i], 1000 + i, err, sizeof(err));
		if (ret)
			FAIL("dropin_write_limit(%s): %d \"%s\"\n", cgroups[i], ret, err);
	}
	/* Rewriting replaces; it does not add a second Path=. */
	ret = dropin_write_limit(dropins, "/demo/a/", 16384, err, sizeof(err));
	if (ret)
		FAIL("dropin_write_limit again: %d \"%s\"\n", ret, err);
	if (count_entries(dropins) != 4)
		FAIL("drop-in dir: expected 4 files and no temporaries, got %zu\n",
		     count_entries(dropins));

	snprintf(want, sizeof(want), "%s/50-tcpbufctl-demo-a.conf", dropins);
	read_text(want, text, sizeof(text));
	EXPECT_STR("drop-in text",
		   "# Written by \"tcpbufctl set-limit\"; \"tcpbufctl unset\" removes it.\n"
		   "[Cgroup]\nPath=/demo/a\n# 64.0M\nLimit=16384\n", text);

	ret = config_load(main_path, false, &c, err, sizeof(err));
	if (ret) {
		FAIL("config_load of written drop-ins: %d \"%s\"\n", ret, err);
	} else {
		static const struct { const char *path; uint64_t limit; } want_limits[] = {
			{ "/demo/a", 16384 }, { "/demo-a", 1001 }, { "/odd/a*b", 1002 },
			{ "/odd/axb", 0 }, { "/", 1003 },
		};

		EXPECT_U64("rules read back", 4, c.n_rules);
		for (size_t i = 0; i < sizeof(want_limits) / sizeof(want_limits[0]); i++) {
			const struct cgroup_rule *r = config_match(&c, want_limits[i].path);

			EXPECT_U64(want_limits[i].path, want_limits[i].limit, r ? r->limit_pages : 0);
		}
		config_free(&c);
	}

	/* unset removes it; removing what is not there is not an error. */
	if (dropin_remove(dropins, "/demo/a", err, sizeof(err)) != 0)
		FAIL("dropin_remove: %s\n", err);
	if (access(want, F_OK) == 0)
		FAIL("dropin_remove: %s still exists\n", want);
	if (dropin_remove(dropins, "/demo/a", err, sizeof(err)) != 0)
		FAIL("dropin_remove of a missing drop-in: %s\n", err);

	/* Paths the config parser could not read back are refused. */
	ret = dropin_write_limit(dropins, "/a b", 1, err, sizeof(err));
	EXPECT_STR("blank in path",
		   "/a b: cannot persist a cgroup path holding blanks or control characters in a config file",
		   err);
	if (ret != -EINVAL)
		FAIL("blank in path: expected -EINVAL, got %d\n", ret);
	/* A pod's path (in a kind node) past libinih's 200-byte line persists and reads back. */
	snprintf(text, sizeof(text), "/system.slice/docker-%s.scope/kubepods.slice/"
		 "kubepods-burstable.slice/"
		 "kubepods-burstable-pod%s.slice/cri-containerd-%s%s.scope",
		 "5f0d2a7c9e1b3d5f7a9c1e3b5d7f9a1c3e5b7d9f1a3c5e7b9d1f3a5c7e9b1d3f",
		 "0f3c9a4e_5b1d_4c2e_9a7f_2d8e6b4c1a90",
		 "7c1e5d9b3a2f4e6d8c0b1a3f5e7d9c2b", "4a6e8f0d2c4b6a8e0f2d4c6b8a0e2f4d");
	if (strlen(text) < 200)
		FAIL("the kubepods path is only %zu characters\n", strlen(text));
	ret = dropin_write_limit(dropins, text, 7, err, sizeof(err));
	if (ret)
		FAIL("long path: %d \"%s\"\n", ret, err);
	ret = config_load(main_path, false, &c, err, sizeof(err));
	if (ret || !config_match(&c, text) || config_match(&c, text)->limit_pages != 7)
		FAIL("long path does not read back: %d \"%s\"\n", ret, err);
	if (!ret)
		config_free(&c);
	dropin_remove(dropins, text, NULL, 0);
	ret = dropin_write_limit(dropins, "/a", 0, err, sizeof(err));
	if (ret != -ERANGE)
		FAIL("zero ceiling: expected -ERANGE, got %d \"%s\"\n", ret, err);
	ret = dropin_write_limit("/proc/no/such/dir", "/a", 1, err, sizeof(err));
	EXPECT_STR("unwritable dir",
		   "cannot open directory /proc/no/such/dir: No such file or directory", err);
	ret = dropin_write_limit(dropins, "/a", 1, NULL, 0);	/* NULL err is allowed */
	if (ret)
		FAIL("dropin_write_limit with NULL err: %d\n", ret);

	remove_tree(dir);
}

static void test_thresholds_file(void)
{
	char dir[] = "/tmp/test_thresholds.XXXXXX", state[256], path[PATH_MAX];
	char err[512];
	struct thresholds_entry in[3] = {
		{ "/demo/a", 1, 2, 3, 4242 },
		{ "/with space/x", 10, 20, 30, 0 },
		{ "/", 5, 5, 5, 1 },
	};
	struct thresholds_entry *out = NULL;
	size_t n = 99;
	int ret;

	if (!mkdtemp(dir)) {
		FAIL("mkdtemp: %s\n", strerror(errno));
		return;
	}
	snprintf(state, sizeof(state), "%s/state", dir);
	snprintf(path, sizeof(path), "%s/thresholds", state);

	/* Missing file: an empty list. */
	ret = thresholds_load(state, &out, &n, err, sizeof(err));
	if (ret != 0 || n != 0 || out)
		FAIL("thresholds_load of a missing file: expected 0 entries, got %d %zu\n", ret, n);

	ret = thresholds_save(state, in, 3, err, sizeof(err));
	if (ret)
		FAIL("thresholds_save: %d \"%s\"\n", ret, err);
	ret = thresholds_load(state, &out, &n, err, sizeof(err));
	if (ret != 0 || n != 3) {
		FAIL("thresholds_load: expected 3 entries, got %d %zu \"%s\"\n", ret, n, err);
	} else {
		for (size_t i = 0; i < 3; i++) {
			EXPECT_STR("thresholds path", in[i].path, out[i].path);
			EXPECT_U64("thresholds min", in[i].min_pages, out[i].min_pages);
			EXPECT_U64("thresholds pressure", in[i].pressure_pages, out[i].pressure_pages);
			EXPECT_U64("thresholds max", in[i].max_pages, out[i].max_pages);
			EXPECT_U64("thresholds id", in[i].id, out[i].id);
		}
	}
	free(out);

	/* Saving nothing leaves a file with no entries. */
	ret = thresholds_save(state, NULL, 0, err, sizeof(err));
	out = NULL;
	if (ret || thresholds_load(state, &out, &n, err, sizeof(err)) || n != 0)
		FAIL("empty thresholds: expected 0 entries, got %zu \"%s\"\n", n, err);
	free(out);

	/* A bad path is refused before anything is written. */
	snprintf(in[0].path, sizeof(in[0].path), "/a\nb");
	ret = thresholds_save(state, in, 1, err, sizeof(err));
	if (ret != -EINVAL)
		FAIL("thresholds_save of a path with a newline: expected -EINVAL, got %d\n", ret);

	static const struct { const char *text; const char *err; } bad[] = {
		{ "/a 1 2\n", ":1: expected PATH MIN PRESSURE MAX" },
		{ "# c\n\na 1 2 3\n", ":3: PATH must start with '/'" },
		{ "/a 1 x 3\n", ":1: MIN, PRESSURE and MAX must be page counts" },
		{ "/a 1 2 99999999999999999999\n", ":1: MIN, PRESSURE and MAX must be page counts" },
		{ "/a 3 2 4\n", ":1: thresholds must keep 1 <= MIN <= PRESSURE <= MAX" },
		{ "/a 0 2 4\n", ":1: thresholds must keep 1 <= MIN <= PRESSURE <= MAX" },
		{ "/a 1 2 3\n/a 1 2 3\n", ":2: this cgroup is listed twice" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		FILE *f = fopen(path, "w");
		char want[PATH_MAX + 128];

		fputs(bad[i].text, f);
		fclose(f);
		out = (struct thresholds_entry *)1;
		n = 99;
		ret = thresholds_load(state, &out, &n, err, sizeof(err));
		snprintf(want, sizeof(want), "%s%s", path, bad[i].err);
		if (ret != -EINVAL || strcmp(err, want) != 0 || n != 99 ||
		    out != (struct thresholds_entry *)1)
			FAIL("thresholds_load of \"%s\": expected -EINVAL \"%s\" and no output, got %d \"%s\"\n",
			     bad[i].text, want, ret, err);
	}
	remove_tree(dir);
}

/* ---- path normalization ------------------------------------------------ */

static void test_normalize(void)
{
	static const struct { const char *in; int ret; const char *out; } cases[] = {
		{ "/", 0, "/" },
		{ "//", 0, "/" },
		{ "/a", 0, "/a" },
		{ "/a/", 0, "/a" },
		{ "//a//b///", 0, "/a/b" },
		{ "/.a/..b", 0, "/.a/..b" },
		{ "", -EINVAL, NULL },
		{ "a", -EINVAL, NULL },
		{ "/a/./b", -EINVAL, NULL },
		{ "/a/..", -EINVAL, NULL },
		{ "/../a", -EINVAL, NULL },
		{ "/abcdefgh", -ENAMETOOLONG, NULL },	/* out buffer of 8 */
		{ "/abcdef/", 0, "/abcdef" },		/* exactly fits */
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char out[8] = "";
		int ret = cgroup_path_normalize(cases[i].in, out, sizeof(out));

		if (ret != cases[i].ret || (ret == 0 && strcmp(out, cases[i].out) != 0))
			FAIL("cgroup_path_normalize(\"%s\"): expected %d \"%s\", got %d \"%s\"\n",
			     cases[i].in, cases[i].ret, cases[i].out ? cases[i].out : "",
			     ret, ret == 0 ? out : "");
	}
}

int main(void)
{
	test_builtin_default();
	test_main_file();
	test_dropins();
	test_match();
	test_thresholds();
	test_errors();
	test_raw_errors();
	test_load();
	test_normalize();
	test_dropin_names();
	test_dropin_round_trip();
	test_thresholds_file();
	if (failures) {
		printf("test_config: %d failure(s)\n", failures);
		return 1;
	}
	printf("test_config: all passed\n");
	return 0;
}
