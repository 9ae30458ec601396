// SPDX-License-Identifier: GPL-2.0
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "sdunit.h"

static void words_push(char ***w, size_t *n, const char *s, size_t len)
{
	*w = realloc(*w, (*n + 2) * sizeof(**w));
	if (!*w)
		abort();
	(*w)[*n] = strndup(s, len);
	(*w)[++*n] = NULL;
}

char **unit_values(const char *key)
{
	FILE *f = fopen(UNIT_FILE, "re");
	size_t klen = strlen(key), n = 0;
	char line[4096], **vals = NULL;

	if (!f)
		return NULL;
	vals = calloc(1, sizeof(*vals));
	if (!vals)
		abort();
	while (fgets(line, sizeof(line), f)) {
		char *v;

		line[strcspn(line, "\n")] = '\0';
		if (strncmp(line, key, klen) || line[klen] != '=')
			continue;
		v = line + klen + 1;
		words_push(&vals, &n, v, strlen(v));
	}
	fclose(f);
	return vals;
}

char **unit_words(const char *key)
{
	char **vals = unit_values(key), **words = NULL;
	size_t n = 0;

	if (!vals)
		return NULL;
	words = calloc(1, sizeof(*words));
	if (!words)
		abort();
	for (char **v = vals; *v; v++) {
		const char *p = *v;

		if (!*p) {	/* an empty assignment resets the list */
			for (size_t i = 0; i < n; i++)
				free(words[i]);
			n = 0;
			words[0] = NULL;
			continue;
		}
		while (*p) {
			size_t len = strcspn(p, " \t");

			if (len)
				words_push(&words, &n, p, len);
			p += len;
			p += strspn(p, " \t");
		}
	}
	words_free(vals);
	return words;
}

bool words_have(char **words, const char *w)
{
	for (; words && *words; words++)
		if (!strcmp(*words, w))
			return true;
	return false;
}

void words_free(char **words)
{
	for (char **w = words; w && *w; w++)
		free(*w);
	free(words);
}

char *tcpbufd_abs_path(void)
{
	char *p = realpath(tcpbufd_path(), NULL);

	if (!p)
		test_skip("tcpbufd not built: %s (set TCPBUFD)", tcpbufd_path());
	return p;
}

char *write_script(const char *name, const char *fmt, ...)
{
	char *path, *body;
	va_list ap;
	FILE *f;

	if (asprintf(&path, "%s/%s", test_tmpdir(), name) < 0)
		abort();
	va_start(ap, fmt);
	if (vasprintf(&body, fmt, ap) < 0)
		abort();
	va_end(ap);
	f = fopen(path, "we");
	if (!f || fprintf(f, "#!/bin/sh\n%s\n", body) < 0 || fclose(f) || chmod(path, 0755)) {
		fprintf(stderr, "sdunit: write %s: %s\n", path, strerror(errno));
		test_abort();
	}
	free(body);
	return path;
}

int run_sh(char **out, const char *fmt, ...)
{
	char *cmd, *buf = NULL;
	size_t len = 0, cap = 0;
	int fds[2], st;
	va_list ap;
	pid_t pid;
	ssize_t r;

	va_start(ap, fmt);
	if (vasprintf(&cmd, fmt, ap) < 0)
		abort();
	va_end(ap);
	if (pipe2(fds, O_CLOEXEC))
		return 127;
	fflush(NULL);
	pid = test_fork(1);
	if (pid == 0) {
		dup2(fds[1], 1);
		dup2(fds[1], 2);
		execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
		_exit(127);
	}
	close(fds[1]);
	for (;;) {
		if (len + 4096 + 1 > cap) {
			cap = cap ? cap * 2 : 8192;
			buf = realloc(buf, cap);
			if (!buf)
				abort();
		}
		r = read(fds[0], buf + len, cap - len - 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		len += r;
	}
	close(fds[0]);
	buf[len] = '\0';
	st = test_reap(pid);
	free(cmd);
	if (out)
		*out = buf;
	else
		free(buf);
	if (st < 0)
		return 127;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

bool have_program(const char *prog)
{
	const char *path = getenv("PATH");
	char buf[PATH_MAX];

	if (strchr(prog, '/'))
		return !access(prog, X_OK);
	if (!path)
		path = "/usr/sbin:/usr/bin:/sbin:/bin";
	while (*path) {
		size_t len = strcspn(path, ":");

		snprintf(buf, sizeof(buf), "%.*s/%s", (int)len, path, prog);
		if (!access(buf, X_OK))
			return true;
		path += len;
		path += *path == ':';
	}
	return false;
}

char *sh_quote(const char *s)
{
	size_t n = 3;
	char *q, *p;

	for (const char *c = s; *c; c++)
		n += *c == '\'' ? 4 : 1;
	q = p = malloc(n);
	if (!q)
		abort();
	*p++ = '\'';
	for (; *s; s++) {
		if (*s == '\'') {
			memcpy(p, "'\\''", 4);
			p += 4;
		} else {
			*p++ = *s;
		}
	}
	*p++ = '\'';
	*p = '\0';
	return q;
}

int file_lines_with(const char *path, const char *needle)
{
	FILE *f = fopen(path, "re");
	char *line = NULL;
	size_t cap = 0;
	int n = 0;

	if (!f)
		return -1;
	while (getline(&line, &cap, f) >= 0)
		n += strstr(line, needle) != NULL;
	free(line);
	fclose(f);
	return n;
}
