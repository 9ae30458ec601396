// SPDX-License-Identifier: GPL-2.0
/* `tcpbufctl top`'s rows, rates, order, bars and columns (top_model.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <json-c/json.h>
#include "top_model.h"

static const char *const key_names[TOP_N_KEYS] = { "share", "usage", "refusals", "pressure" };
static const char key_chars[TOP_N_KEYS] = { 's', 'u', 'f', 'p' };

/* An unsigned field: a number, or TOP_NONE for null when @nullable. */
static int field_u64(json_object *o, const char *name, bool nullable, uint64_t *v,
		     char *err, size_t errlen, size_t i)
{
	json_object *f;

	if (!json_object_object_get_ex(o, name, &f)) {
		snprintf(err, errlen, "status --json: cgroups[%zu] has no \"%s\"", i, name);
		return -1;
	}
	if (!f && nullable) {
		*v = TOP_NONE;
		return 0;
	}
	if (!json_object_is_type(f, json_type_int) || json_object_get_int64(f) < 0) {
		snprintf(err, errlen, "status --json: cgroups[%zu].%s is not a count", i, name);
		return -1;
	}
	*v = (uint64_t)json_object_get_int64(f);
	return 0;
}

/* A string field copied into @buf; "" when absent or null (older daemons have none). */
static int field_word(json_object *o, const char *name, char *buf, size_t len, char *err,
		      size_t errlen, size_t i)
{
	json_object *f;

	buf[0] = '\0';
	if (!json_object_object_get_ex(o, name, &f) || !f)
		return 0;
	if (!json_object_is_type(f, json_type_string) ||
	    (size_t)json_object_get_string_len(f) >= len) {
		snprintf(err, errlen, "status --json: cgroups[%zu].%s is not a short string", i,
			 name);
		return -1;
	}
	memcpy(buf, json_object_get_string(f), (size_t)json_object_get_string_len(f) + 1);
	return 0;
}

/* A path as top shows it: control bytes as \xNN and '\' as "\\", so that a
 * name cannot break a line of batch output or move the cursor. */
char *top_path_display(const char *path)
{
	size_t n = 0;
	char *out, *o;

	for (const char *c = path; *c; c++)
		n += (unsigned char)*c < 0x20 || *c == 0x7f ? 4 : *c == '\\' ? 2 : 1;
	out = malloc(n + 1);
	if (!out)
		return NULL;
	for (o = out; *path; path++) {
		unsigned char c = (unsigned char)*path;

		if (c < 0x20 || c == 0x7f)
			o += sprintf(o, "\\x%02x", c);
		else if (c == '\\')
			o += sprintf(o, "\\\\");
		else
			*o++ = (char)c;
	}
	*o = '\0';
	return out;
}

static int parse_row(json_object *o, struct top_row *r, char *err, size_t errlen, size_t i)
{
	json_object *path;

	if (!json_object_is_type(o, json_type_object)) {
		snprintf(err, errlen, "status --json: cgroups[%zu] is not an object", i);
		return -1;
	}
	if (!json_object_object_get_ex(o, "cgroup", &path) ||
	    (path && !json_object_is_type(path, json_type_string))) {
		snprintf(err, errlen, "status --json: cgroups[%zu].cgroup is not a path", i);
		return -1;
	}
	r->cgroup = top_path_display(path ? json_object_get_string(path) : "(removed)");
	r->refusals_per_s = -1;
	if (!r->cgroup) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	if (field_u64(o, "id", false, &r->id, err, errlen, i) ||
	    field_u64(o, "usage_pages", false, &r->usage_pages, err, errlen, i) ||
	    field_u64(o, "sockets", false, &r->sockets, err, errlen, i) ||
	    field_u64(o, "pressure_pages", true, &r->pressure_pages, err, errlen, i) ||
	    field_u64(o, "max_pages", true, &r->max_pages, err, errlen, i) ||
	    field_u64(o, "limit_pages", true, &r->limit_pages, err, errlen, i) ||
	    field_u64(o, "failcnt", false, &r->failcnt, err, errlen, i) ||
	    field_u64(o, "pressure_events", false, &r->pressure_events, err, errlen, i) ||
	    field_word(o, "state", r->state, sizeof(r->state), err, errlen, i) ||
	    field_word(o, "container_id", r->container_id, sizeof(r->container_id), err, errlen, i) ||
	    field_word(o, "pod_uid", r->pod_uid, sizeof(r->pod_uid), err, errlen, i))
		return -1;
	return 0;
}

int top_snapshot_parse(const char *json, struct top_snapshot *out, char *err, size_t errlen)
{
	enum json_tokener_error jerr;
	json_object *root = json_tokener_parse_verbose(json, &jerr), *cgroups, *mode;
	size_t i, n;
	int ret = -1;

	memset(out, 0, sizeof(*out));
	if (!root) {
		snprintf(err, errlen, "status --json: %s", json_tokener_error_desc(jerr));
		return -1;
	}
	if (!json_object_object_get_ex(root, "cgroups", &cgroups) ||
	    !json_object_is_type(cgroups, json_type_array)) {
		snprintf(err, errlen, "status --json: no \"cgroups\" array");
		goto out;
	}
	if (json_object_object_get_ex(root, "mode", &mode) &&
	    json_object_is_type(mode, json_type_string))
		snprintf(out->mode, sizeof(out->mode), "%s", json_object_get_string(mode));
	n = json_object_array_length(cgroups);
	out->rows = calloc(n ? n : 1, sizeof(*out->rows));
	if (!out->rows) {
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	out->n = n;	/* rows not yet read are zero: top_snapshot_free() may free them all */
	for (i = 0; i < n; i++)
		if (parse_row(json_object_array_get_idx(cgroups, i), &out->rows[i], err, errlen, i))
			goto out;
	ret = 0;
out:
	json_object_put(root);
	if (ret)
		top_snapshot_free(out);
	return ret;
}

void top_snapshot_free(struct top_snapshot *s)
{
	for (size_t i = 0; i < s->n; i++)
		free(s->rows[i].cgroup);
	free(s->rows);
	s->rows = NULL;
	s->n = 0;
}

void top_rates(struct top_snapshot *now, const struct top_snapshot *prev, double seconds)
{
	for (size_t i = 0; i < now->n; i++) {
		struct top_row *r = &now->rows[i];

		r->refusals_per_s = -1;
		if (seconds <= 0)
			continue;
		for (size_t j = 0; prev && j < prev->n; j++)
			if (prev->rows[j].id == r->id) {
				/* A counter that went back is a new cgroup with the same id. */
				if (r->failcnt >= prev->rows[j].failcnt)
					r->refusals_per_s = (double)(r->failcnt - prev->rows[j].failcnt) /
							    seconds;
				break;
			}
	}
}

static uint64_t scale_of(const struct top_row *r)
{
	if (r->max_pages != TOP_NONE && r->max_pages)
		return r->max_pages;
	if (r->limit_pages != TOP_NONE && r->limit_pages)
		return r->limit_pages;
	return 0;
}

double top_share(const struct top_row *r)
{
	uint64_t scale = scale_of(r);

	return scale ? (double)r->usage_pages / (double)scale : -1;
}

static enum top_key sort_key;

/* Largest first; ties by path, so the order does not flicker. */
static int row_cmp(const void *a, const void *b)
{
	const struct top_row *x = a, *y = b;
	double vx, vy;

	switch (sort_key) {
	case TOP_BY_USAGE:	vx = (double)x->usage_pages; vy = (double)y->usage_pages; break;
	case TOP_BY_REFUSALS:	vx = x->refusals_per_s; vy = y->refusals_per_s; break;
	case TOP_BY_PRESSURE:	vx = (double)x->pressure_events; vy = (double)y->pressure_events; break;
	default:		vx = top_share(x); vy = top_share(y); break;
	}
	if (vx != vy)
		return vx < vy ? 1 : -1;
	return strcmp(x->cgroup, y->cgroup);
}

void top_sort(struct top_snapshot *s, enum top_key key)
{
	sort_key = key;
	qsort(s->rows, s->n, sizeof(*s->rows), row_cmp);
}

const char *top_key_name(enum top_key key)
{
	return key < TOP_N_KEYS ? key_names[key] : "?";
}

bool top_key_parse(const char *name, enum top_key *key)
{
	for (int k = 0; k < TOP_N_KEYS; k++)
		if (!strcmp(name, key_names[k])) {
			*key = (enum top_key)k;
			return true;
		}
	return false;
}

int top_key_for_char(int c)
{
	for (int k = 0; k < TOP_N_KEYS; k++)
		if (c == key_chars[k])
			return k;
	return -1;
}

/* The cell of @pages on a bar of @width cells for @scale pages (rounded down). */
static size_t cell_of(uint64_t pages, uint64_t scale, size_t width)
{
	if (pages >= scale)
		return width;
	return (size_t)((double)pages / (double)scale * (double)width);
}

void top_bar(const struct top_row *r, char *buf, size_t width)
{
	uint64_t scale = scale_of(r);
	size_t used, mark = width, i;

	memset(buf, ' ', width);
	buf[width] = '\0';
	if (!scale || !width)
		return;
	used = cell_of(r->usage_pages, scale, width);
	if (r->usage_pages && !used)
		used = 1;	/* something is held: show it */
	if (r->pressure_pages != TOP_NONE && r->pressure_pages < scale)
		mark = cell_of(r->pressure_pages, scale, width);
	for (i = 0; i < width; i++)
		buf[i] = i < used ? '#' : '.';
	if (mark < width && mark >= used)
		buf[mark] = '|';
}

/* Cells of each column (the bar's at its narrowest); the cgroup's at least. */
static const unsigned col_width[TOP_N_COLS] = {
	[COL_SHARE] = 6, [COL_USAGE] = 7, [COL_PRESSURE] = 8, [COL_MAX] = 7, [COL_BAR] = 12,
	[COL_STATE] = 8, [COL_REFUSALS] = 8, [COL_PRESS_ENTRIES] = 7, [COL_CONTAINER] = 12,
	[COL_POD] = 8, [COL_CGROUP] = 16,
};
/* What goes first when the terminal is too narrow for everything. */
static const enum top_col drop_order[] = { COL_POD, COL_CONTAINER, COL_PRESSURE,
					   COL_PRESS_ENTRIES, COL_BAR, COL_MAX };
#define BAR_MAX_WIDTH 30

static unsigned layout_total(const struct top_layout *l)
{
	unsigned total = 0;

	for (int c = 0; c < TOP_N_COLS; c++)
		if (l->shown[c])
			total += l->width[c] + (c != COL_CGROUP);	/* a space after each */
	return total;
}

void top_layout_for(unsigned cols, struct top_layout *l)
{
	unsigned total;
	size_t d;

	for (int c = 0; c < TOP_N_COLS; c++) {
		l->shown[c] = true;
		l->width[c] = col_width[c];
	}
	for (d = 0; layout_total(l) > cols && d < sizeof(drop_order) / sizeof(drop_order[0]); d++)
		l->shown[drop_order[d]] = false;
	total = layout_total(l);
	if (total <= cols && l->shown[COL_BAR]) {
		unsigned grow = (cols - total) / 3;

		l->width[COL_BAR] += grow < BAR_MAX_WIDTH - col_width[COL_BAR] ?
				     grow : BAR_MAX_WIDTH - col_width[COL_BAR];
		total = layout_total(l);
	}
	/* The cgroup column takes the rest, however little. */
	total -= l->width[COL_CGROUP];
	l->width[COL_CGROUP] = cols > total ? cols - total : 1;
}
