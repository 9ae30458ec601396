// SPDX-License-Identifier: GPL-2.0
/*
 * systemd/tcpbufd.service as systemd reads it.
 *  - `systemd-analyze verify` accepts it (on a copy whose ExecStart= is the
 *    built daemon, since verify wants the binary to exist, with MANPATH on
 *    the repository's man pages, since it checks Documentation=man:...);
 *  - `systemd-analyze security --offline=yes` rates its exposure at most
 *    EXPOSURE_MAX (the score is printed);
 *  - the settings the daemon relies on: Type=notify, ExecReload= sending
 *    SIGHUP (systemd 252 has no Type=notify-reload), a watchdog,
 *    Restart=on-failure, NoNewPrivileges=, ProtectSystem=strict;
 *  - every place the built-in configuration writes to (PinPath=, Socket=,
 *    DropInDir=, StateDir=) is writable under the unit: below a
 *    ReadWritePaths= entry, /run/RuntimeDirectory= or /var/lib/StateDirectory=.
 */
#define _GNU_SOURCE
#include "harness.h"
#include "sdunit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define EXPOSURE_MAX 2.0

static char *write_unit_copy(void)
{
	char *bin = tcpbufd_abs_path(), *path, line[4096];
	FILE *in = fopen(UNIT_FILE, "re"), *out;

	ASSERT_TRUE(in != NULL);
	if (asprintf(&path, "%s/tcpbufd.service", test_tmpdir()) < 0)
		abort();
	out = fopen(path, "we");
	ASSERT_TRUE(out != NULL);
	while (fgets(line, sizeof(line), in)) {
		if (!strncmp(line, "ExecStart=/usr/sbin/tcpbufd", 27))
			fprintf(out, "ExecStart=%s%s", bin, line + 27);
		else
			fputs(line, out);
	}
	fclose(in);
	ASSERT_OK(fclose(out));
	free(bin);
	return path;
}

/* A man tree (man5/, man8/) holding the repository's pages. */
static char *man_tree(void)
{
	char *dir, *q;

	if (asprintf(&dir, "%s/man", test_tmpdir()) < 0)
		abort();
	q = sh_quote(dir);
	ASSERT_EQ(run_sh(NULL, "mkdir -p %s/man5 %s/man8 && cp docs/man/*.5 %s/man5 && "
			 "cp docs/man/*.8 %s/man8", q, q, q, q), 0);
	free(q);
	return dir;
}

/*
 * systemd-analyze ARGS, in a mount namespace with a tmpfs over /run/systemd
 * where it can: verify stamps /run/systemd/systemd-units-load otherwise,
 * and the test leaves the host as it found it.
 */
static int analyze(char **out, const char *env, const char *args)
{
	int rc = 127;

	if (have_program("unshare") && !access("/run/systemd", F_OK))
		rc = run_sh(out, "%s unshare -m --propagation private sh -c 'mount -t tmpfs tmpfs "
			    "/run/systemd 2>/dev/null || exit 99; exec \"$@\"' sh "
			    "systemd-analyze %s", env, args);
	if (rc == 99 || rc == 127 || (rc == 1 && out && *out && strstr(*out, "unshare:"))) {
		if (out)
			free(*out);
		rc = run_sh(out, "%s systemd-analyze %s", env, args);
	}
	return rc;
}

static const char *one(const char *key)
{
	char **v = unit_values(key);
	static char buf[1024];

	if (!v || !v[0]) {
		words_free(v);
		return "";
	}
	snprintf(buf, sizeof(buf), "%s", v[0]);
	words_free(v);
	return buf;
}

/* Key=value of the shipped tcpbufd.conf (the built-in defaults). */
static char *conf_value(const char *key)
{
	FILE *f = fopen("tcpbufd.conf", "re");
	char line[1024], *v = NULL;
	size_t klen = strlen(key);

	ASSERT_TRUE(f != NULL);
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, key, klen) && line[klen] == '=') {
			line[strcspn(line, "\n")] = '\0';
			v = strdup(line + klen + 1);
			break;
		}
	fclose(f);
	ASSERT_TRUE(v != NULL);
	return v;
}

static bool below(const char *path, const char *dir)
{
	size_t n = strlen(dir);

	return !strncmp(path, dir, n) && (path[n] == '/' || path[n] == '\0');
}

static void check_writable(const char *what, const char *path)
{
	char **rw = unit_words("ReadWritePaths"), **rt = unit_words("RuntimeDirectory");
	char **sd = unit_words("StateDirectory"), buf[1024];
	bool ok = false;

	for (char **w = rw; w && *w; w++)
		ok |= below(path, **w == '-' ? *w + 1 : *w);
	for (char **w = rt; w && *w; w++)
		ok |= (snprintf(buf, sizeof(buf), "/run/%s", *w), below(path, buf));
	for (char **w = sd; w && *w; w++)
		ok |= (snprintf(buf, sizeof(buf), "/var/lib/%s", *w), below(path, buf));
	if (!ok) {
		test_log("%s=%s is not writable under the unit", what, path);
		test_fail();
	}
	words_free(rw);
	words_free(rt);
	words_free(sd);
}

int main(void)
{
	char *unit, *man, *out = NULL, *q, *score;
	double exposure;

	test_init();
	if (access(UNIT_FILE, R_OK))
		SKIP("%s not found (tests run from the repository root)", UNIT_FILE);

	/* What the daemon relies on. */
	EXPECT_EQ(strcmp(one("Type"), "notify"), 0);
	EXPECT_TRUE(strstr(one("ExecReload"), "kill -HUP $MAINPID") != NULL);
	EXPECT_TRUE(*one("WatchdogSec") != '\0');
	EXPECT_EQ(strcmp(one("Restart"), "on-failure"), 0);
	EXPECT_EQ(strcmp(one("NoNewPrivileges"), "yes"), 0);
	EXPECT_EQ(strcmp(one("ProtectSystem"), "strict"), 0);
	{
		static const char *const keys[] = { "PinPath", "Socket", "DropInDir", "StateDir" };

		for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
			char *v = conf_value(keys[i]);

			check_writable(keys[i], v);
			free(v);
		}
	}

	if (!have_program("systemd-analyze"))
		SKIP("systemd-analyze not installed");
	unit = write_unit_copy();
	man = man_tree();
	q = sh_quote(unit);
	{
		char env[4200], args[4200];

		snprintf(env, sizeof(env), "MANPATH=%s", man);
		snprintf(args, sizeof(args), "verify %s", q);
		EXPECT_EQ(analyze(&out, env, args), 0);
	}
	if (out && *out) {
		test_log("systemd-analyze verify:\n%s", out);
		test_fail();
	}
	free(out);

	{
		char args[4200];

		snprintf(args, sizeof(args), "security --offline=yes --no-pager %s", q);
		EXPECT_EQ(analyze(&out, "", args), 0);
	}
	score = out ? strstr(out, "Overall exposure level for tcpbufd.service: ") : NULL;
	ASSERT_TRUE(score != NULL);
	exposure = strtod(score + strlen("Overall exposure level for tcpbufd.service: "), NULL);
	test_log("systemd-analyze security --offline=yes: exposure %.1f (at most %.1f)", exposure,
		 EXPOSURE_MAX);
	if (exposure > EXPOSURE_MAX) {
		test_log("%s", out);
		test_fail();
	}
	free(out);
	free(q);
	free(unit);
	free(man);
	return test_done();
}
