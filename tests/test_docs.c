// SPDX-License-Identifier: GPL-2.0
/*
 * The docs stay sized to their readers and point at things that exist:
 * DESIGN.md a page with a short glossary, ENFORCEMENT.md and PERFORMANCE.md
 * within their budgets (the dated figures go to docs/performance-log.md),
 * every relative link and "FILE.md, "Section"" reference resolves, every
 * docs/ path the tree names exists, and every metric the docs name is one
 * src/metrics.c prints. Pure file checks, run from the repository root.
 */
#include <ctype.h>
#include <dirent.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* A page a newcomer reads in one sitting is ~800 words; the rest is room
 * for the few lines a change adds before someone moves detail out again. */
#define DESIGN_WORDS_MAX	900
#define GLOSSARY_TERMS_MAX	15
#define ENFORCEMENT_WORDS_MAX	1800
#define PERFORMANCE_WORDS_MAX	1000

static int failures;

#define FAIL(...) do { printf("FAIL: " __VA_ARGS__); putchar('\n'); failures++; } while (0)

static char *file_text(const char *path)
{
	FILE *f = fopen(path, "r");
	char *s = NULL;
	size_t len = 0, cap = 0, n;

	if (!f)
		return NULL;
	do {
		if (cap - len < 4096) {
			char *t = realloc(s, cap += 65536);

			if (!t) {
				free(s);
				fclose(f);
				return NULL;
			}
			s = t;
		}
		n = fread(s + len, 1, cap - len - 1, f);
		len += n;
	} while (n > 0);
	fclose(f);
	s[len] = '\0';
	return s;
}

static bool exists(const char *path)
{
	struct stat st;

	return !stat(path, &st);
}

/* As wc -w counts them. */
static unsigned words(const char *s)
{
	unsigned n = 0;
	bool in = false;

	for (; *s; s++) {
		bool space = isspace((unsigned char)*s);

		n += !space && !in;
		in = !space;
	}
	return n;
}

/* The line after @l, or NULL at the end. */
static const char *next_line(const char *l)
{
	l = strchr(l, '\n');
	return l ? l + 1 : NULL;
}

/* The text of the heading at line @l, or NULL when it is not one. */
static const char *heading_text(const char *l)
{
	if (*l != '#')
		return NULL;
	while (*l == '#')
		l++;
	while (*l == ' ')
		l++;
	return l;
}

/* The bullets of the "## Glossary" section, or -1 without one. */
static int glossary_terms(const char *doc)
{
	const char *p = strstr(doc, "\n## Glossary\n"), *end;
	int n = 0;

	if (!p)
		return -1;
	p += strlen("\n## Glossary\n");
	end = strstr(p, "\n## ");
	for (const char *l = p; l && (!end || l < end); l = next_line(l))
		n += !strncmp(l, "- ", 2);
	return n;
}

/* Whether @doc has a heading reading @title, or a bold run starting with it. */
static bool has_section(const char *doc, const char *title, size_t len)
{
	for (const char *l = doc; l; l = next_line(l)) {
		const char *t = heading_text(l);

		if (t && !strncmp(t, title, len) && (t[len] == '\n' || t[len] == '\0'))
			return true;
	}
	for (const char *b = strstr(doc, "**"); b; b = strstr(b + 2, "**"))
		if (!strncmp(b + 2, title, len))
			return true;
	return false;
}

/* GitHub's anchor of a heading: lower case, spaces to '-', punctuation dropped. */
static bool has_anchor(const char *doc, const char *anchor, size_t len)
{
	for (const char *l = doc; l; l = next_line(l)) {
		char slug[256];
		size_t n = 0;
		const char *t = heading_text(l);

		for (; t && *t && *t != '\n' && n < sizeof(slug) - 1; t++)
			if (isalnum((unsigned char)*t) || *t == '-' || *t == '_')
				slug[n++] = tolower((unsigned char)*t);
			else if (*t == ' ')
				slug[n++] = '-';
		if (n == len && !strncmp(slug, anchor, len))
			return true;
	}
	return false;
}

/* The directory part of @path, with its '/', into @dir. */
static void dir_of(const char *path, char *dir, size_t size)
{
	const char *slash = strrchr(path, '/');
	size_t n = slash ? (size_t)(slash - path + 1) : 0;

	snprintf(dir, size, "%.*s", (int)n, path);
}

/* Every [text](target) that is not a URL names a file that exists, and an
 * anchor names a heading in it. */
static void check_links(const char *path, const char *doc)
{
	char dir[256];

	dir_of(path, dir, sizeof(dir));
	for (const char *p = strstr(doc, "]("); p; p = strstr(p + 2, "](")) {
		const char *t = p + 2, *close = strchr(t, ')'), *hash;
		char target[512];
		char *text;

		if (!close || memchr(t, '\n', close - t) || memchr(t, ' ', close - t))
			continue;
		if (!strncmp(t, "http://", 7) || !strncmp(t, "https://", 8) || !strncmp(t, "mailto:", 7))
			continue;
		hash = memchr(t, '#', close - t);
		snprintf(target, sizeof(target), "%s%.*s", hash == t ? "" : dir,
			 (int)((hash ? hash : close) - t), t);
		if (hash == t)
			snprintf(target, sizeof(target), "%s", path);
		if (!exists(target)) {
			FAIL("%s: link to %.*s: no such file", path, (int)(close - t), t);
			continue;
		}
		if (!hash)
			continue;
		text = file_text(target);
		if (!text || !has_anchor(text, hash + 1, close - hash - 1))
			FAIL("%s: link to %.*s: no such heading", path, (int)(close - t), t);
		free(text);
	}
}

/* "NAME.md, "Section"": the section is still there (references into
 * files this repository does not hold are left alone). */
static void check_section_refs(const char *path, const char *doc)
{
	for (const char *p = strstr(doc, ".md, \""); p; p = strstr(p + 1, ".md, \"")) {
		const char *name = p, *title = p + strlen(".md, \""), *end = strchr(title, '"');
		char file[256];
		char *text;

		while (name > doc && (isalnum((unsigned char)name[-1]) || name[-1] == '_' ||
				      name[-1] == '-' || name[-1] == '/' || name[-1] == '.'))
			name--;
		if (!end || memchr(title, '\n', end - title))
			continue;
		snprintf(file, sizeof(file), "%.*s.md", (int)(p - name), name);
		if (!exists(file))
			snprintf(file, sizeof(file), "docs/%.*s.md", (int)(p - name), name);
		if (!exists(file))
			continue;
		text = file_text(file);
		if (!text || !has_section(text, title, end - title))
			FAIL("%s: refers to %s, \"%.*s\": no such section", path, file,
			     (int)(end - title), title);
		free(text);
	}
}

/* Every docs/ path the file mentions exists (a doc renamed is a doc lost). */
static void check_doc_paths(const char *path, const char *text)
{
	for (const char *p = strstr(text, "docs/"); p; p = strstr(p + 5, "docs/")) {
		char name[256];
		size_t n = 0;

		if (p > text && (isalnum((unsigned char)p[-1]) || p[-1] == '_' || p[-1] == '-'))
			continue;	/* part of a longer path */
		while (n < sizeof(name) - 1 && (isalnum((unsigned char)p[n]) || strchr("/._-", p[n])))
			name[n] = p[n], n++;
		while (n && strchr("./", name[n - 1]))
			n--;	/* the sentence's full stop, a directory's slash */
		name[n] = '\0';
		if (p[n] == '*' || p[n] == '<')
			continue;	/* a pattern */
		if (!exists(name))
			FAIL("%s: names %s, which does not exist", path, name);
	}
}

/* Every tcpbufd_* metric @doc names is one src/metrics.c prints. */
static void check_metrics(const char *path, const char *doc, const char *metrics_c)
{
	for (const char *p = strstr(doc, "tcpbufd_"); p; p = strstr(p + 1, "tcpbufd_")) {
		size_t n = strlen("tcpbufd_");
		const char *q;
		bool found = false;

		if (p > doc && (isalnum((unsigned char)p[-1]) || p[-1] == '_' || p[-1] == '/'))
			continue;
		while (islower((unsigned char)p[n]) || p[n] == '_')
			n++;
		for (q = strstr(metrics_c, "\"tcpbufd_"); q && !found; q = strstr(q + 1, "\"tcpbufd_"))
			found = !strncmp(q + 1, p, n) && !(islower((unsigned char)q[n + 1]) || q[n + 1] == '_');
		if (!found)
			FAIL("%s: metric %.*s is not in src/metrics.c", path, (int)n, p);
	}
}

/* The files of @dir (not its subdirectories), each given to @fn. */
static void each_file(const char *dir, void (*fn)(const char *path, const char *text, void *),
		      void *ctx)
{
	DIR *d = opendir(dir);
	struct dirent *e;

	if (!d) {
		FAIL("cannot read %s (run from the repository root)", dir);
		return;
	}
	while ((e = readdir(d))) {
		char path[512];
		struct stat st;
		char *text;

		snprintf(path, sizeof(path), "%s%s%s", strcmp(dir, ".") ? dir : "",
			 strcmp(dir, ".") ? "/" : "", e->d_name);
		if (e->d_name[0] == '.' || stat(path, &st) || !S_ISREG(st.st_mode) ||
		    st.st_size > (1 << 20))
			continue;
		text = file_text(path);
		if (text)
			fn(path, text, ctx);
		free(text);
	}
	closedir(d);
}

/* The log keeps what was written then, references to old sections included. */
static bool is_log(const char *path)
{
	return strstr(path, "performance-log.md") != NULL;
}

static void doc_checks(const char *path, const char *text, void *metrics_c)
{
	size_t len = strlen(path);

	if (len < 3 || strcmp(path + len - 3, ".md") || is_log(path))
		return;
	check_links(path, text);
	check_section_refs(path, text);
	check_metrics(path, text, metrics_c);
}

static void tree_checks(const char *path, const char *text, void *ctx)
{
	(void)ctx;
	if (is_log(path))
		return;
	check_doc_paths(path, text);
	if (!strstr(path, ".md"))
		check_section_refs(path, text);	/* comments in code and scripts */
}

static void check_budget(const char *path, unsigned max)
{
	char *text = file_text(path);
	unsigned n;

	if (!text) {
		FAIL("%s: missing", path);
		return;
	}
	n = words(text);
	if (n > max)
		FAIL("%s: %u words, at most %u (move detail to the code, figures to "
		     "docs/performance-log.md)", path, n, max);
	free(text);
}

int main(void)
{
	static const char *const tree[] = { ".", "docs", "docs/man", "src", "bpf", "include",
					    "bench", "scripts", "systemd", "tests", "tests/vm",
					    "deploy/kubernetes" };
	char *design = file_text("docs/DESIGN.md"), *perf = file_text("docs/PERFORMANCE.md");
	char *metrics_c = file_text("src/metrics.c");
	int terms;

	if (!design || !perf || !metrics_c) {
		printf("FAIL: docs/DESIGN.md, docs/PERFORMANCE.md or src/metrics.c missing "
		       "(run from the repository root)\n");
		return 1;
	}
	check_budget("docs/DESIGN.md", DESIGN_WORDS_MAX);
	check_budget("docs/ENFORCEMENT.md", ENFORCEMENT_WORDS_MAX);
	check_budget("docs/PERFORMANCE.md", PERFORMANCE_WORDS_MAX);
	terms = glossary_terms(design);
	if (terms < 1 || terms > GLOSSARY_TERMS_MAX)
		FAIL("docs/DESIGN.md: %d glossary terms (\"## Glossary\", one \"- \" each), "
		     "want 1 to %d", terms, GLOSSARY_TERMS_MAX);
	if (!strstr(perf, "\n## Where each target stands\n"))
		FAIL("docs/PERFORMANCE.md: does not open with \"## Where each target stands\"");
	else if (strstr(perf, "\n## ") != strstr(perf, "\n## Where each target stands\n"))
		FAIL("docs/PERFORMANCE.md: \"## Where each target stands\" is not its first section");
	if (!exists("docs/performance-log.md"))
		FAIL("docs/performance-log.md: missing (the dated log)");

	each_file(".", doc_checks, metrics_c);
	each_file("docs", doc_checks, metrics_c);
	for (size_t i = 0; i < sizeof(tree) / sizeof(tree[0]); i++)
		each_file(tree[i], tree_checks, NULL);

	free(design);
	free(perf);
	free(metrics_c);
	if (failures) {
		printf("test_docs: %d failure(s)\n", failures);
		return 1;
	}
	printf("test_docs: all passed\n");
	return 0;
}
