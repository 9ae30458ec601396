// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "subtree.h"

static int row_path_cmp(const void *a, const void *b)
{
	const struct status_row *x = a, *y = b;

	if (!x->path || !y->path)
		return !x->path - !y->path;
	return strcmp(x->path, y->path);
}

/* Cut @path to its parent in place: false at the root. */
static bool path_up(char *path)
{
	char *slash = strrchr(path, '/');

	if (!slash || !strcmp(path, "/"))
		return false;
	slash[slash == path] = '\0';	/* "/a" -> "/", "/a/b" -> "/a" */
	return strcmp(path, "/") != 0;
}

static struct status_row *row_at(struct status_rows *rows, const char *path)
{
	struct status_row probe = { .path = path };

	return bsearch(&probe, rows->rows, rows->n, sizeof(*rows->rows), row_path_cmp);
}

/* BPF charges this cgroup for its whole subtree (its entry's copy of limits). */
static bool row_counts_subtree(const struct status_row *r)
{
	return r->has_usage && r->usage.limits.limit_pages;
}

int subtree_usage_sum(struct status_rows *rows)
{
	__s64 *own_pages, *own_sockets, *own_unaccounted;
	char up[PATH_MAX];
	size_t i;

	own_pages = calloc(rows->n ? rows->n : 1, sizeof(*own_pages));
	own_sockets = calloc(rows->n ? rows->n : 1, sizeof(*own_sockets));
	own_unaccounted = calloc(rows->n ? rows->n : 1, sizeof(*own_unaccounted));
	if (!own_pages || !own_sockets || !own_unaccounted) {
		free(own_pages);
		free(own_sockets);
		free(own_unaccounted);
		return -ENOMEM;
	}
	for (i = 0; i < rows->n; i++) {
		own_pages[i] = rows->rows[i].usage.usage_pages;
		own_sockets[i] = rows->rows[i].usage.sockets;
		own_unaccounted[i] = rows->rows[i].usage.unaccounted_sockets;
	}
	for (i = 0; i < rows->n; i++) {
		const struct status_row *d = &rows->rows[i];
		struct status_row *a;

		if (!d->path || (!own_pages[i] && !own_sockets[i] && !own_unaccounted[i]) ||
		    snprintf(up, sizeof(up), "%s", d->path) >= (int)sizeof(up))
			continue;
		/* Up to the first level that counted it itself. */
		while (path_up(up) && (a = row_at(rows, up)) && !row_counts_subtree(a)) {
			a->usage.usage_pages += own_pages[i];
			a->usage.sockets += own_sockets[i];
			a->usage.unaccounted_sockets += own_unaccounted[i];
			if (a->usage.peak_pages < a->usage.usage_pages)
				a->usage.peak_pages = a->usage.usage_pages;
		}
	}
	free(own_pages);
	free(own_sockets);
	free(own_unaccounted);
	return 0;
}

int subtree_rows_add(struct status_rows *rows, const struct cgroup_tree *tree)
{
	size_t n = rows->n, cap = rows->n, i;
	char up[PATH_MAX];

	qsort(rows->rows, rows->n, sizeof(*rows->rows), row_path_cmp);
	for (i = 0; i < n; i++) {
		const char *path = rows->rows[i].path;

		if (!path || snprintf(up, sizeof(up), "%s", path) >= (int)sizeof(up))
			continue;
		while (path_up(up)) {
			const struct cgroup_entry *e;
			struct status_row *r;

			/* Among the sorted rows, or added since (few: a scan). */
			if (bsearch(&(struct status_row){ .path = up }, rows->rows, n,
				    sizeof(*rows->rows), row_path_cmp))
				break;
			for (r = rows->rows + n; r < rows->rows + rows->n; r++)
				if (!strcmp(r->path, up))
					break;
			if (r < rows->rows + rows->n)
				break;
			e = cgroup_tree_find_path(tree, up);
			if (!e)
				break;
			if (rows->n == cap) {
				void *p = realloc(rows->rows, (cap = cap * 2 + 16) * sizeof(*rows->rows));

				if (!p)
					return -ENOMEM;
				rows->rows = p;
			}
			r = &rows->rows[rows->n++];
			memset(r, 0, sizeof(*r));
			r->id = e->id;
			r->path = e->path;
			r->has_usage = true;
		}
	}
	qsort(rows->rows, rows->n, sizeof(*rows->rows), row_path_cmp);
	return 0;
}
