// SPDX-License-Identifier: GPL-2.0
/*
 * make install / make uninstall into a DESTDIR.
 *  - install puts exactly: tcpbufd in SBINDIR, tcpbufctl in BINDIR (the
 *    built binaries, BPF objects embedded: no other file), the unit in
 *    pkg-config's systemdsystemunitdir with ExecStart= in SBINDIR, the three
 *    man pages in MANDIR, the shipped tcpbufd.conf in /etc, the OCI hook in
 *    LIBEXECDIR and its hooks.d file (naming it there) in HOOKSDIR;
 *  - the man pages render without a groff warning;
 *  - a second install keeps a changed /etc/tcpbufd.conf;
 *  - uninstall keeps a changed config and removes everything else, and
 *    with the shipped config leaves DESTDIR empty: no file, no directory,
 *    DESTDIR itself and everything beside it untouched;
 *  - PREFIX=/usr/local moves binaries, man pages and ExecStart=.
 */
#define _GNU_SOURCE
#include "harness.h"
#include "sdunit.h"

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char *listing;	/* the tree under the DESTDIR being listed */
static size_t prefix_len;

static int list_one(const char *path, const struct stat *st, int type, struct FTW *f)
{
	char *old = listing;

	(void)st;
	(void)f;
	if (strlen(path) <= prefix_len)
		return 0;
	if (asprintf(&listing, "%s%s%s\n", old ? old : "", path + prefix_len,
		     type == FTW_D || type == FTW_DP ? "/" : "") < 0)
		abort();
	free(old);
	return 0;
}

/* Every file and directory under dir, "/usr/sbin/tcpbufd\n", sorted by nftw's walk. */
static char *tree(const char *dir)
{
	free(listing);
	listing = NULL;
	prefix_len = strlen(dir);
	nftw(dir, list_one, 16, FTW_PHYS);
	return listing ? listing : (listing = strdup(""));
}

static bool listed(const char *t, const char *path)
{
	char *want;
	bool r;

	if (asprintf(&want, "%s\n", path) < 0)
		abort();
	r = strstr(t, want) != NULL;
	free(want);
	return r;
}

static int count_files(const char *t)
{
	int n = 0;

	for (const char *l = t; *l; l = strchr(l, '\n') + 1) {
		const char *nl = strchr(l, '\n');

		n += nl[-1] != '/';
	}
	return n;
}

static bool same_file(const char *a, const char *b)
{
	char *qa = sh_quote(a), *qb = sh_quote(b);
	int rc = run_sh(NULL, "cmp -s %s %s", qa, qb);

	free(qa);
	free(qb);
	return rc == 0;
}

static int make(char **out, const char *dest, const char *target, const char *vars)
{
	char *q = sh_quote(dest);
	/* -o all: install what is built, never rebuild here. */
	int rc = run_sh(out, "make -s --no-print-directory -o all %s DESTDIR=%s %s", target, q,
			vars ? vars : "");

	free(q);
	return rc;
}

static char *unitdir(void)
{
	char *out = NULL;

	if (run_sh(&out, "pkg-config --variable=systemdsystemunitdir systemd") || !out[0]) {
		free(out);
		return strdup("/lib/systemd/system");
	}
	out[strcspn(out, "\n")] = '\0';
	return out;
}

static void check_installed(const char *dest, const char *prefix, const char *udir)
{
	char path[4096], *t = tree(dest), *unit = NULL, *q;

	test_log("installed under %s:\n%s", dest, t);
#define IN(fmt, ...) (snprintf(path, sizeof(path), fmt, __VA_ARGS__), path)
	EXPECT_TRUE(listed(t, IN("%s/sbin/tcpbufd", prefix)));
	EXPECT_TRUE(same_file(IN("%s%s/sbin/tcpbufd", dest, prefix), "build/tcpbufd"));
	EXPECT_TRUE(listed(t, IN("%s/bin/tcpbufctl", prefix)));
	EXPECT_TRUE(same_file(IN("%s%s/bin/tcpbufctl", dest, prefix), "build/tcpbufctl"));
	EXPECT_OK(access(IN("%s%s/sbin/tcpbufd", dest, prefix), X_OK));
	EXPECT_TRUE(listed(t, IN("%s/tcpbufd.service", udir)));
	EXPECT_TRUE(listed(t, IN("%s/share/man/man8/tcpbufd.8", prefix)));
	EXPECT_TRUE(listed(t, IN("%s/share/man/man8/tcpbufctl.8", prefix)));
	EXPECT_TRUE(listed(t, IN("%s/share/man/man5/tcpbufd.conf.5", prefix)));
	EXPECT_TRUE(listed(t, IN("%s/libexec/tcpbufd/tcpbufd-oci-hook", prefix)));
	EXPECT_TRUE(same_file(IN("%s%s/libexec/tcpbufd/tcpbufd-oci-hook", dest, prefix),
			      "build/tcpbufd-oci-hook"));
	EXPECT_TRUE(listed(t, IN("%s/share/containers/oci/hooks.d/tcpbufd.json", prefix)));
	EXPECT_TRUE(listed(t, IN("%s/share/man/man8/tcpbufd-oci-hook.8", prefix)));
	EXPECT_TRUE(listed(t, "/etc/tcpbufd.conf"));
	EXPECT_TRUE(same_file(IN("%s/etc/tcpbufd.conf", dest), "tcpbufd.conf"));
	EXPECT_EQ(count_files(t), 10);
	/* The hooks.d file names the hook where it was installed. */
	q = sh_quote(IN("%s%s/share/containers/oci/hooks.d/tcpbufd.json", dest, prefix));
	snprintf(path, sizeof(path), "grep -c '\"path\": \"%s/libexec/tcpbufd/tcpbufd-oci-hook\"' %s",
		 prefix, q);
	EXPECT_EQ(run_sh(NULL, "%s", path), 0);
	free(q);
	q = sh_quote(IN("%s%s/tcpbufd.service", dest, udir));
	EXPECT_EQ(run_sh(&unit, "grep '^ExecStart=' %s", q), 0);
	snprintf(path, sizeof(path), "ExecStart=%s/sbin/tcpbufd\n", prefix);
	EXPECT_TRUE(unit && !strcmp(unit, path));
	free(unit);
	free(q);
	q = sh_quote(IN("%s%s/sbin/tcpbufd", dest, prefix));
	EXPECT_EQ(run_sh(&unit, "%s --version", q), 0);
	EXPECT_TRUE(unit && !strcmp(unit, "tcpbufd " TCPBUFD_VERSION "\n"));
	free(unit);
	free(q);
#undef IN
}

static void check_man_pages(void)
{
	static const char *const pages[] = { "docs/man/tcpbufd.8", "docs/man/tcpbufctl.8",
					     "docs/man/tcpbufd.conf.5", "docs/man/tcpbufd-oci-hook.8" };
	char *out = NULL;

	if (!have_program("groff")) {
		test_log("groff not installed: man pages not linted");
		return;
	}
	for (size_t i = 0; i < sizeof(pages) / sizeof(pages[0]); i++) {
		EXPECT_EQ(run_sh(&out, "LC_ALL=C.UTF-8 groff -man -Tutf8 -ww -z %s", pages[i]), 0);
		if (out && *out) {
			test_log("%s: %s", pages[i], out);
			test_fail();
		}
		free(out);
	}
}

int main(void)
{
	char dest[3800], beside[3800], conf[4096], etc[3900], *out = NULL, *udir;
	FILE *f;

	test_init();
	if (!have_program("make") || access("Makefile", R_OK))
		SKIP("needs make and the repository (tests run from its root)");
	if (access("build/tcpbufd", X_OK) || access("build/tcpbufctl", X_OK))
		SKIP("build/tcpbufd and build/tcpbufctl not built");
	udir = unitdir();
	check_man_pages();

	/* DESTDIR lives in a directory that also holds an empty sibling:
	 * uninstall may remove what is empty below DESTDIR, nothing beside. */
	snprintf(dest, sizeof(dest), "%s/stage", test_tmpdir());
	snprintf(beside, sizeof(beside), "%s/empty-neighbour", test_tmpdir());
	ASSERT_OK(mkdir(dest, 0755));
	ASSERT_OK(mkdir(beside, 0755));

	ASSERT_EQ(make(&out, dest, "install", NULL), 0);
	free(out);
	check_installed(dest, "/usr", udir);

	/* A changed config survives install and uninstall. */
	snprintf(etc, sizeof(etc), "%s/etc", dest);
	snprintf(conf, sizeof(conf), "%s/tcpbufd.conf", etc);
	f = fopen(conf, "ae");
	ASSERT_TRUE(f != NULL);
	fputs("# changed by the administrator\n", f);
	ASSERT_OK(fclose(f));
	ASSERT_EQ(make(&out, dest, "install", NULL), 0);
	EXPECT_TRUE(out && strstr(out, "KEEP"));
	free(out);
	EXPECT_FALSE(same_file(conf, "tcpbufd.conf"));
	ASSERT_EQ(make(&out, dest, "uninstall", NULL), 0);
	free(out);
	EXPECT_EQ(strcmp(tree(dest), "/etc/\n/etc/tcpbufd.conf\n"), 0);
	test_log("after uninstall with a changed config:\n%s", tree(dest));
	ASSERT_OK(unlink(conf));
	ASSERT_OK(rmdir(etc));

	/* The shipped config: uninstall leaves nothing. */
	ASSERT_EQ(make(&out, dest, "install", NULL), 0);
	free(out);
	ASSERT_EQ(make(&out, dest, "uninstall", NULL), 0);
	free(out);
	EXPECT_EQ(strcmp(tree(dest), ""), 0);
	EXPECT_OK(access(dest, F_OK));
	EXPECT_OK(access(beside, F_OK));

	/* PREFIX moves what belongs to the prefix. */
	ASSERT_EQ(make(&out, dest, "install", "PREFIX=/usr/local"), 0);
	free(out);
	check_installed(dest, "/usr/local", udir);
	ASSERT_EQ(make(&out, dest, "uninstall", "PREFIX=/usr/local"), 0);
	free(out);
	EXPECT_EQ(strcmp(tree(dest), ""), 0);
	EXPECT_OK(access(beside, F_OK));

	free(udir);
	return test_done();
}
