// SPDX-License-Identifier: GPL-2.0
/* Bounded libFuzzer runs as tests: see fuzzrun.h. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "fuzzrun.h"
#include "harness.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define FUZZ_DIR	"tests/bin/fuzz"
#define CORPUS_DIR	"tests/fuzz/corpus"

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "re");
	char *s = NULL;
	size_t n = 0;

	if (!f)
		return NULL;
	if (getdelim(&s, &n, '\0', f) < 0) {
		free(s);
		s = NULL;
	}
	fclose(f);
	return s;
}

/* The last @n lines of @text, to stdout. */
static void print_tail(const char *text, int n)
{
	const char *p = text + strlen(text);

	while (p > text && n >= 0)
		if (*--p == '\n')
			n--;
	printf("%s%s", p == text ? "" : "...\n", p == text ? p : p + 1);
}

static int copy_file(const char *from, const char *to)
{
	int in = open(from, O_RDONLY | O_CLOEXEC), out = -1, ret = -1;
	char buf[65536];
	ssize_t n;

	if (in >= 0)
		out = open(to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	while (out >= 0 && (n = read(in, buf, sizeof(buf))) > 0)
		if (write(out, buf, n) != n)
			break;
	if (out >= 0 && n == 0)
		ret = 0;
	if (in >= 0)
		close(in);
	if (out >= 0 && close(out))
		ret = -1;
	return ret;
}

/* Copy what libFuzzer saved (crash-*, leak-*, timeout-*, oom-*) where it survives cleanup. */
static void keep_artifacts(const char *name, const char *dir)
{
	struct dirent *de;
	DIR *d = opendir(dir);

	if (!d)
		return;
	while ((de = readdir(d))) {
		char from[PATH_MAX], to[PATH_MAX];

		if (strncmp(de->d_name, "crash-", 6) && strncmp(de->d_name, "leak-", 5) &&
		    strncmp(de->d_name, "timeout-", 8) && strncmp(de->d_name, "oom-", 4))
			continue;
		snprintf(from, sizeof(from), "%s/%s", dir, de->d_name);
		snprintf(to, sizeof(to), "%s/%s-%s", FUZZ_DIR, name, de->d_name);
		if (copy_file(from, to) == 0)
			printf("input kept: %s\nreplay: %s/fuzz_%s %s\n", to, FUZZ_DIR, name, to);
	}
	closedir(d);
}

int fuzz_run(const char *name)
{
	char bin[PATH_MAX], skip[PATH_MAX + 8], corpus[PATH_MAX], scratch[PATH_MAX];
	char log[PATH_MAX], art[PATH_MAX], max_time[64];
	const char *t = getenv("FUZZ_TIME");
	int secs = t && atoi(t) > 0 ? atoi(t) : 20;
	char *text, *done;
	int st, code;
	pid_t pid;

	test_init();
	if (getenv("TCPBUF_VM"))
		SKIP("fuzz_%s: fuzzed on the host; the parser does not depend on the kernel", name);
	snprintf(bin, sizeof(bin), "%s/fuzz_%s", FUZZ_DIR, name);
	if (access(bin, X_OK)) {
		snprintf(skip, sizeof(skip), "%s.skip", bin);
		text = slurp(skip);
		if (text)
			text[strcspn(text, "\n")] = '\0';
		SKIP("%s not built: %s", bin,
		     text ? text : "make tests builds it with clang -fsanitize=fuzzer");
	}
	snprintf(corpus, sizeof(corpus), "%s/%s", CORPUS_DIR, name);
	snprintf(scratch, sizeof(scratch), "%s/corpus", test_tmpdir());
	snprintf(log, sizeof(log), "%s/fuzz.log", test_tmpdir());
	snprintf(art, sizeof(art), "%s/", test_tmpdir());
	snprintf(max_time, sizeof(max_time), "-max_total_time=%d", secs);
	ASSERT_OK(mkdir(scratch, 0755));
	ASSERT_OK(access(corpus, R_OK));

	pid = test_fork(1);
	if (pid == 0) {
		int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		char prefix[PATH_MAX + 32];

		snprintf(prefix, sizeof(prefix), "-artifact_prefix=%s", art);
		dup2(fd, 1);
		dup2(fd, 2);
		/* New inputs go to the first directory: the scratch one. */
		execl(bin, bin, max_time, "-timeout=10", "-rss_limit_mb=2048",
		      "-print_final_stats=1", prefix, scratch, corpus, (char *)NULL);
		dprintf(2, "cannot execute %s: %m\n", bin);
		_exit(127);
	}
	st = test_reap(pid);
	code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	text = slurp(log);
	if (!text)
		text = strdup("");
	if (code == 127 && (strstr(text, "cannot execute") || strstr(text, "error while loading")))
		SKIP("%s cannot run here: %.*s", bin, (int)strcspn(text, "\n"), text);
	done = strstr(text, "Done ");
	if (code == 0 && done) {
		test_log("fuzz_%s: %.*s over %s (%d s)", name, (int)strcspn(done, "\n"), done,
			 corpus, secs);
	} else {
		printf("fuzz_%s exited with %d; the end of its output:\n", name, code);
		print_tail(text, 40);
		keep_artifacts(name, test_tmpdir());
		test_fail();
	}
	free(text);
	return test_done();
}
