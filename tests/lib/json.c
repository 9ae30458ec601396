// SPDX-License-Identifier: GPL-2.0
/*
 * A small strict JSON reader for `tcpbufctl status --json`: validates the
 * whole document (RFC 8259: no trailing commas, no comments, no NaN, no
 * control characters in strings, valid escapes) before answering, then
 * looks values up by walking the text again.  No allocation.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "harness.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DEPTH 64

static const char *ws(const char *p)
{
	while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
		p++;
	return p;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

static int hex4(const char *p, unsigned int *out)
{
	unsigned int v = 0;

	for (int i = 0; i < 4; i++) {
		int h = hexval(p[i]);

		if (h < 0)
			return -1;
		v = v * 16 + (unsigned int)h;
	}
	*out = v;
	return 0;
}

static int put(char *buf, size_t len, size_t *n, char c)
{
	if (buf) {
		if (*n + 1 >= len)
			return -1;
		buf[*n] = c;
	}
	(*n)++;
	return 0;
}

/*
 * p at '"'.  Decodes into buf (if not NULL; fails if it does not fit).
 * Returns the position after the closing quote or NULL.
 */
static const char *parse_string(const char *p, char *buf, size_t len)
{
	size_t n = 0;

	if (*p != '"')
		return NULL;
	p++;
	for (;;) {
		unsigned char c = (unsigned char)*p;

		if (c == 0 || c < 0x20)
			return NULL;
		if (c == '"')
			break;
		if (c != '\\') {
			if (put(buf, len, &n, (char)c))
				return NULL;
			p++;
			continue;
		}
		p++;
		switch (*p) {
		case '"': case '\\': case '/':
			c = (unsigned char)*p;
			break;
		case 'b': c = '\b'; break;
		case 'f': c = '\f'; break;
		case 'n': c = '\n'; break;
		case 'r': c = '\r'; break;
		case 't': c = '\t'; break;
		case 'u': {
			unsigned int u, lo;

			if (hex4(p + 1, &u))
				return NULL;
			p += 4;
			if (u >= 0xd800 && u <= 0xdbff) {
				if (p[1] != '\\' || p[2] != 'u' || hex4(p + 3, &lo) ||
				    lo < 0xdc00 || lo > 0xdfff)
					return NULL;
				p += 6;
				u = 0x10000 + ((u - 0xd800) << 10) + (lo - 0xdc00);
			} else if (u >= 0xdc00 && u <= 0xdfff) {
				return NULL;
			}
			if (u < 0x80) {
				if (u == 0 || put(buf, len, &n, (char)u))
					return NULL;
			} else if (u < 0x800) {
				if (put(buf, len, &n, (char)(0xc0 | (u >> 6))) ||
				    put(buf, len, &n, (char)(0x80 | (u & 0x3f))))
					return NULL;
			} else if (u < 0x10000) {
				if (put(buf, len, &n, (char)(0xe0 | (u >> 12))) ||
				    put(buf, len, &n, (char)(0x80 | ((u >> 6) & 0x3f))) ||
				    put(buf, len, &n, (char)(0x80 | (u & 0x3f))))
					return NULL;
			} else {
				if (put(buf, len, &n, (char)(0xf0 | (u >> 18))) ||
				    put(buf, len, &n, (char)(0x80 | ((u >> 12) & 0x3f))) ||
				    put(buf, len, &n, (char)(0x80 | ((u >> 6) & 0x3f))) ||
				    put(buf, len, &n, (char)(0x80 | (u & 0x3f))))
					return NULL;
			}
			p++;
			continue;
		}
		default:
			return NULL;
		}
		if (put(buf, len, &n, (char)c))
			return NULL;
		p++;
	}
	if (buf)
		buf[n] = 0;
	return p + 1;
}

/* RFC 8259 number grammar; *integer says whether it has no fraction/exponent. */
static const char *parse_number(const char *p, int *integer)
{
	*integer = 1;
	if (*p == '-')
		p++;
	if (*p == '0')
		p++;
	else if (*p >= '1' && *p <= '9')
		while (*p >= '0' && *p <= '9')
			p++;
	else
		return NULL;
	if (*p == '.') {
		*integer = 0;
		p++;
		if (!(*p >= '0' && *p <= '9'))
			return NULL;
		while (*p >= '0' && *p <= '9')
			p++;
	}
	if (*p == 'e' || *p == 'E') {
		*integer = 0;
		p++;
		if (*p == '+' || *p == '-')
			p++;
		if (!(*p >= '0' && *p <= '9'))
			return NULL;
		while (*p >= '0' && *p <= '9')
			p++;
	}
	return p;
}

/* p at a value (no leading blanks).  Returns the position after it or NULL. */
static const char *skip_value(const char *p, int depth)
{
	int integer;

	if (depth > MAX_DEPTH)
		return NULL;
	switch (*p) {
	case '"':
		return parse_string(p, NULL, 0);
	case '{':
		p = ws(p + 1);
		if (*p == '}')
			return p + 1;
		for (;;) {
			p = parse_string(p, NULL, 0);
			if (!p)
				return NULL;
			p = ws(p);
			if (*p != ':')
				return NULL;
			p = skip_value(ws(p + 1), depth + 1);
			if (!p)
				return NULL;
			p = ws(p);
			if (*p == '}')
				return p + 1;
			if (*p != ',')
				return NULL;
			p = ws(p + 1);
		}
	case '[':
		p = ws(p + 1);
		if (*p == ']')
			return p + 1;
		for (;;) {
			p = skip_value(p, depth + 1);
			if (!p)
				return NULL;
			p = ws(p);
			if (*p == ']')
				return p + 1;
			if (*p != ',')
				return NULL;
			p = ws(p + 1);
		}
	case 't':
		return strncmp(p, "true", 4) ? NULL : p + 4;
	case 'f':
		return strncmp(p, "false", 5) ? NULL : p + 5;
	case 'n':
		return strncmp(p, "null", 4) ? NULL : p + 4;
	default:
		return parse_number(p, &integer);
	}
}

int json_valid(const char *json)
{
	const char *p;

	if (!json)
		return 0;
	p = skip_value(ws(json), 0);
	return p && *ws(p) == 0;
}

/* obj at '{' of a valid object: the value of member key, or NULL. */
static const char *member(const char *obj, const char *key)
{
	const char *p = ws(obj + 1);

	if (*obj != '{' || *p == '}')
		return NULL;
	for (;;) {
		char name[256];
		const char *after = parse_string(p, name, sizeof(name));
		const char *v;

		if (!after)	/* key too long for us: skip it */
			after = parse_string(p, NULL, 0), name[0] = 0;
		v = ws(ws(after) + 1);	/* past ':' */
		if (!strcmp(name, key))
			return v;
		p = ws(skip_value(v, 0));
		if (*p != ',')
			return NULL;
		p = ws(p + 1);
	}
}

static int value_int(const char *v, int64_t *out)
{
	const char *end;
	int integer;
	long long x;
	char *e;

	if (!v)
		return JSON_MISSING;
	if (!strncmp(v, "null", 4))
		return JSON_NULL;
	end = parse_number(v, &integer);
	if (!end || !integer)
		return JSON_BAD;
	errno = 0;
	x = strtoll(v, &e, 10);
	if (errno || e != end)
		return JSON_BAD;
	if (out)
		*out = x;
	return JSON_FOUND;
}

static int value_string(const char *v, char *buf, size_t len)
{
	if (!v)
		return JSON_MISSING;
	if (!strncmp(v, "null", 4))
		return JSON_NULL;
	if (*v != '"')
		return JSON_BAD;
	return parse_string(v, buf, len) ? JSON_FOUND : JSON_BAD;
}

static const char *top(const char *json, int *err)
{
	const char *p;

	if (!json_valid(json)) {
		*err = JSON_BAD;
		return NULL;
	}
	p = ws(json);
	if (*p != '{') {
		*err = JSON_BAD;
		return NULL;
	}
	return p;
}

int json_string_field(const char *json, const char *key, char *buf, size_t len)
{
	int err;
	const char *o = top(json, &err);

	return o ? value_string(member(o, key), buf, len) : err;
}

int json_int_field(const char *json, const char *key, int64_t *out)
{
	int err;
	const char *o = top(json, &err);

	return o ? value_int(member(o, key), out) : err;
}

/* The idx-th element of "cgroups" (idx < 0: the one named cgroup). */
static const char *cgroup_obj(const char *json, int idx, const char *cgroup, int *err)
{
	const char *o = top(json, err);
	const char *p;
	char *want = NULL;
	int i = 0;

	if (!o)
		return NULL;
	p = member(o, "cgroups");
	*err = JSON_MISSING;
	if (!p)
		return NULL;
	if (*p != '[') {
		*err = JSON_BAD;
		return NULL;
	}
	if (cgroup)
		want = cg_rel(cgroup);
	p = ws(p + 1);
	while (*p != ']') {
		char name[4096];
		const char *v;

		if (*p != '{') {
			*err = JSON_BAD;
			break;
		}
		if (idx >= 0 && i == idx) {
			free(want);
			return p;
		}
		if (idx < 0) {
			v = member(p, "cgroup");
			if (v && *v == '"' && parse_string(v, name, sizeof(name)) &&
			    !strcmp(name, want)) {
				free(want);
				return p;
			}
		}
		p = ws(skip_value(p, 0));
		if (*p == ',')
			p = ws(p + 1);
		i++;
	}
	free(want);
	return NULL;
}

int json_cgroup_field(const char *json, const char *cgroup, const char *key, int64_t *out)
{
	int err;
	const char *o = cgroup_obj(json, -1, cgroup, &err);

	return o ? value_int(member(o, key), out) : err;
}

int64_t json_cgroup_value(const char *json, const char *cgroup, const char *key)
{
	int64_t v = -1;
	int r = json_cgroup_field(json, cgroup, key, &v);

	return r == JSON_FOUND ? v : r == JSON_NULL ? -2 : -3;
}

int json_cgroup_string(const char *json, const char *cgroup, const char *key,
		       char *buf, size_t len)
{
	int err;
	const char *o = cgroup_obj(json, -1, cgroup, &err);

	return o ? value_string(member(o, key), buf, len) : err;
}

int json_cgroup_count(const char *json)
{
	int err, n = 0;
	const char *o = top(json, &err);
	const char *p;

	if (!o)
		return err;
	p = member(o, "cgroups");
	if (!p)
		return JSON_MISSING;
	if (*p != '[')
		return JSON_BAD;
	p = ws(p + 1);
	while (*p != ']') {
		n++;
		p = ws(skip_value(p, 0));
		if (*p == ',')
			p = ws(p + 1);
	}
	return n;
}

int json_cgroup_name(const char *json, int idx, char *buf, size_t len)
{
	int err;
	const char *o;

	if (idx < 0)
		return JSON_MISSING;
	o = cgroup_obj(json, idx, NULL, &err);
	return o ? value_string(member(o, "cgroup"), buf, len) : err;
}
