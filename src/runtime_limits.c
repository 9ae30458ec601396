// SPDX-License-Identifier: GPL-2.0
/*
 * Runtime limits in memory and in <RuntimeDir>/runtime-limits, one line per
 * cgroup: "ID LIMIT MIN PRESSURE MAX PATH" (pages; 0 = default threshold;
 * the path last, since it may hold spaces).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "dropin.h"
#include "runtime_limits.h"

static size_t lower_bound(const struct runtime_limits *rl, uint64_t id)
{
	size_t lo = 0, hi = rl->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (rl->v[mid].id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

const struct runtime_limit *runtime_limits_find(const struct runtime_limits *rl, uint64_t id)
{
	size_t i = lower_bound(rl, id);

	return i < rl->n && rl->v[i].id == id ? &rl->v[i] : NULL;
}

int runtime_limits_put(struct runtime_limits *rl, const struct runtime_limit *l)
{
	size_t i = lower_bound(rl, l->id);
	char *path = strdup(l->path);

	if (!path)
		return -ENOMEM;
	if (i < rl->n && rl->v[i].id == l->id) {
		free(rl->v[i].path);
	} else {
		if (rl->n == rl->cap) {
			size_t cap = rl->cap ? rl->cap * 2 : 16;
			void *p = realloc(rl->v, cap * sizeof(*rl->v));

			if (!p) {
				free(path);
				return -ENOMEM;
			}
			rl->v = p;
			rl->cap = cap;
		}
		memmove(&rl->v[i + 1], &rl->v[i], (rl->n - i) * sizeof(*rl->v));
		rl->n++;
	}
	rl->v[i] = *l;
	rl->v[i].path = path;
	return 0;
}

bool runtime_limits_drop(struct runtime_limits *rl, uint64_t id)
{
	size_t i = lower_bound(rl, id);

	if (i == rl->n || rl->v[i].id != id)
		return false;
	free(rl->v[i].path);
	memmove(&rl->v[i], &rl->v[i + 1], (rl->n - i - 1) * sizeof(*rl->v));
	rl->n--;
	return true;
}

uint64_t runtime_limits_id_of(const struct runtime_limits *rl, const char *path)
{
	for (size_t i = 0; i < rl->n; i++)
		if (!strcmp(rl->v[i].path, path))
			return rl->v[i].id;
	return 0;
}

void runtime_limits_free(struct runtime_limits *rl)
{
	for (size_t i = 0; i < rl->n; i++)
		free(rl->v[i].path);
	free(rl->v);
	*rl = (struct runtime_limits){};
}

int runtime_limits_save(const char *dir, const struct runtime_limits *rl, char *err,
			size_t errlen)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	int r;

	if (!f) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	for (size_t i = 0; i < rl->n; i++) {
		const struct runtime_limit *l = &rl->v[i];

		fprintf(f, "%llu %llu %llu %llu %llu %s\n", (unsigned long long)l->id,
			(unsigned long long)l->limit_pages, (unsigned long long)l->min_pages,
			(unsigned long long)l->pressure_pages, (unsigned long long)l->max_pages,
			l->path);
	}
	if (fclose(f)) {
		free(text);
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	r = dropin_replace_file(dir, RUNTIME_LIMITS_FILE, text, len, err, errlen);
	free(text);
	return r;
}

/* One line -> @l (path not yet copied); a short reason on failure. */
static const char *parse_line(char *line, struct runtime_limit *l)
{
	unsigned long long id, limit, min, pressure, max;
	int used = -1;

	line[strcspn(line, "\n")] = '\0';
	if (sscanf(line, "%llu %llu %llu %llu %llu %n", &id, &limit, &min, &pressure, &max,
		   &used) != 5 || used < 0)
		return "expected ID LIMIT MIN PRESSURE MAX PATH";
	if (line[used] != '/')
		return "PATH must start with '/'";
	if (!id || !limit || max > limit || pressure > limit || min > limit ||
	    (min && pressure && min > pressure) || (pressure && max && pressure > max) ||
	    (min && max && min > max))
		return "limits must keep MIN <= PRESSURE <= MAX <= LIMIT (0: default) and LIMIT >= 1";
	*l = (struct runtime_limit){ .id = id, .limit_pages = limit, .min_pages = min,
				     .pressure_pages = pressure, .max_pages = max,
				     .path = line + used };
	return NULL;
}

int runtime_limits_load(const char *dir, struct runtime_limits *rl, char *err, size_t errlen)
{
	char path[PATH_MAX], *line = NULL;
	struct runtime_limits got = {};
	struct runtime_limit l;
	const char *why;
	size_t cap = 0;
	int lineno = 0, r = 0;
	FILE *f;

	if (snprintf(path, sizeof(path), "%s/%s", dir, RUNTIME_LIMITS_FILE) >= (int)sizeof(path)) {
		snprintf(err, errlen, "%s: path too long", dir);
		return -ENAMETOOLONG;
	}
	f = fopen(path, "re");
	if (!f) {
		if (errno == ENOENT)
			return 0;
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -errno;
	}
	while (!r && getline(&line, &cap, f) > 0) {
		lineno++;
		why = parse_line(line, &l);
		if (why) {
			snprintf(err, errlen, "%s:%d: %s", path, lineno, why);
			r = -EINVAL;
		} else if (runtime_limits_put(&got, &l)) {
			snprintf(err, errlen, "out of memory");
			r = -ENOMEM;
		}
	}
	free(line);
	fclose(f);
	if (r) {
		runtime_limits_free(&got);
		return r;
	}
	runtime_limits_free(rl);
	*rl = got;
	return 0;
}
