// SPDX-License-Identifier: GPL-2.0
/* Persistence of tcpbufctl's changes: ceilings as drop-ins, thresholds as a state file. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE	/* mkostemp() */
#endif
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "array.h"
#include "config.h"
#include "dropin.h"
#include "errmsg.h"
#include "size.h"

#define DROPIN_SUFFIX	".conf"
/* mkostemp()'s ".XXXXXX" plus our leading '.' must still fit NAME_MAX. */
#define TMP_EXTRA	8
/* The state file is ours; anything this big is not. */
#define THRESHOLDS_MAX_BYTES	(64 << 20)

/* ---- atomic file replacement ------------------------------------------ */

static int write_all(int fd, const char *data, size_t len)
{
	while (len) {
		ssize_t n = write(fd, data, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		data += n;
		len -= (size_t)n;
	}
	return 0;
}

/* The directory itself: created if missing, so a fresh install works. */
static int open_dir(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0 && errno == ENOENT) {
		if (mkdir(dir, 0755) != 0 && errno != EEXIST)
			return -errno;
		fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	}
	return fd < 0 ? -errno : fd;
}

/* Fill a temporary file and make its data durable before it gets a real name. */
static int write_tmp(int fd, const char *data, size_t len, mode_t mode)
{
	int ret = write_all(fd, data, len);

	if (!ret && fchmod(fd, mode) != 0)
		ret = -errno;
	if (!ret && fsync(fd) != 0)
		ret = -errno;
	return ret;
}

/*
 * Replace @dir/@name with @data: temp file, fsync, rename, fsync the
 * directory (without the last step a crash can forget the rename).
 */
int dropin_replace_file(const char *dir, const char *name, const char *data, size_t len,
			char *err, size_t errlen)
{
	char tmp[PATH_MAX], path[PATH_MAX];
	int dfd, fd, ret;

	if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, name) >= sizeof(path) ||
	    (size_t)snprintf(tmp, sizeof(tmp), "%s/.%s.XXXXXX", dir, name) >= sizeof(tmp)) {
		set_err(err, errlen, "%s/%s: path too long", dir, name);
		return -ENAMETOOLONG;
	}
	dfd = open_dir(dir);
	if (dfd < 0) {
		set_err(err, errlen, "cannot open directory %s: %s", dir, strerror(-dfd));
		return dfd;
	}
	fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0) {
		ret = -errno;
		set_err(err, errlen, "cannot create a file in %s: %s", dir, strerror(-ret));
		close(dfd);
		return ret;
	}
	ret = write_tmp(fd, data, len, 0644);
	if (close(fd) != 0 && !ret)
		ret = -errno;
	if (!ret && rename(tmp, path) != 0)
		ret = -errno;
	if (ret) {
		unlink(tmp);
		set_err(err, errlen, "cannot write %s: %s", path, strerror(-ret));
	} else if (fsync(dfd) != 0) {
		ret = -errno;
		set_err(err, errlen, "cannot sync directory %s: %s", dir, strerror(-ret));
	}
	close(dfd);
	return ret;
}

/* ---- drop-in names ---------------------------------------------------- */

/* Bytes systemd-escape keeps as they are; '.' only after the first byte. */
static bool keeps(char c, bool first)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '_' || c == ':' || (c == '.' && !first);
}

/*
 * "/demo/a-b" -> "demo-a\x2db": '/' becomes '-', and so that no two paths
 * share a name, '-' and anything unusual become \xNN. "/" -> "-".
 */
static size_t escape_path(const char *norm, char *out, size_t cap)
{
	size_t o = 0;

	if (strcmp(norm, "/") == 0)
		return (size_t)snprintf(out, cap, "-");	/* systemd's name for the root */
	norm++;
	for (const char *p = norm; *p; p++) {
		char chunk[5];
		size_t n;

		if (*p == '/')
			n = (size_t)snprintf(chunk, sizeof(chunk), "-");
		else if (keeps(*p, p == norm))
			n = (size_t)snprintf(chunk, sizeof(chunk), "%c", *p);
		else
			n = (size_t)snprintf(chunk, sizeof(chunk), "\\x%02x", (unsigned char)*p);
		if (o + n < cap)
			memcpy(out + o, chunk, n);
		o += n;
	}
	if (o < cap)
		out[o] = '\0';
	return o;	/* as snprintf: the length it needed */
}

/* FNV-1a: stable across builds, so a long name is found again after an upgrade. */
static uint64_t fnv1a(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ULL;
	return h;
}

int dropin_name(const char *cgroup_rel, char *buf, size_t len)
{
	const size_t max_name = NAME_MAX - TMP_EXTRA;
	const size_t fixed = strlen(DROPIN_PREFIX) + strlen(DROPIN_SUFFIX);
	char norm[PATH_MAX], esc[PATH_MAX * 4 + 1];
	size_t n;
	int ret = cgroup_path_normalize(cgroup_rel, norm, sizeof(norm));

	if (ret)
		return ret;
	n = escape_path(norm, esc, sizeof(esc));
	if (fixed + n > max_name) {
		/* '~' is always escaped in full names, so these cannot collide with them. */
		const size_t keep = max_name - fixed - 17;

		snprintf(esc + keep, sizeof(esc) - keep, "~%016llx",
			 (unsigned long long)fnv1a(norm));
	}
	if ((size_t)snprintf(buf, len, "%s%s%s", DROPIN_PREFIX, esc, DROPIN_SUFFIX) >= len)
		return -ENAMETOOLONG;
	return 0;
}

/* ---- ceilings ---------------------------------------------------------- */

/*
 * Path= as config.c reads it: glob characters escaped so the path is
 * literal. @out holds 2 * strlen(@norm) + 1 bytes.
 */
static size_t path_value(const char *norm, char *out)
{
	size_t o = 0;

	for (const char *p = norm; *p; p++) {
		if (strchr("*?[\\", *p))
			out[o++] = '\\';
		out[o++] = *p;
	}
	out[o] = '\0';
	return o;
}

/* A path that the config parser would read back as something else cannot be persisted. */
static int check_persistable(const char *norm, const char *value, size_t value_len,
			     char *err, size_t errlen)
{
	for (const char *p = norm; *p; p++) {
		if ((unsigned char)*p <= ' ' || *p == 0x7f) {
			set_err(err, errlen, "%s: cannot persist a cgroup path holding blanks or "
				"control characters in a config file", norm);
			return -EINVAL;
		}
	}
	if (strlen("Path=") + value_len > CONFIG_MAX_LINE) {
		set_err(err, errlen, "%.64s...: cgroup path too long for a config line (%d "
			"characters at most)", value, CONFIG_MAX_LINE);
		return -ENAMETOOLONG;
	}
	return 0;
}

int dropin_write_limit(const char *dir, const char *cgroup_rel, uint64_t limit_pages,
		       char *err, size_t errlen)
{
	char norm[PATH_MAX], value[PATH_MAX * 2], name[NAME_MAX + 1], human[SIZE_HUMAN_LEN];
	char text[CONFIG_MAX_LINE * 2 + 256];	/* Path= fits a config line: checked below */
	size_t value_len;
	int ret, n;

	ret = cgroup_path_normalize(cgroup_rel, norm, sizeof(norm));
	if (!ret)
		ret = dropin_name(norm, name, sizeof(name));
	if (ret) {
		set_err(err, errlen, "%s: not a cgroup path", cgroup_rel);
		return ret;
	}
	if (limit_pages == 0 || limit_pages > SIZE_MAX_PAGES) {
		set_err(err, errlen, "%s: ceiling of %llu pages is out of range", norm,
			(unsigned long long)limit_pages);
		return -ERANGE;
	}
	value_len = path_value(norm, value);
	ret = check_persistable(norm, value, value_len, err, errlen);
	if (ret)
		return ret;
	size_format_human(limit_pages, human, sizeof(human));
	n = snprintf(text, sizeof(text),
		     /* No path in comments: every line must fit CONFIG_MAX_LINE. */
		     "# Written by \"tcpbufctl set-limit\"; \"tcpbufctl unset\" removes it.\n"
		     "[Cgroup]\n"
		     "Path=%s\n"
		     "# %s\n"
		     "Limit=%llu\n",
		     value, human, (unsigned long long)limit_pages);
	return dropin_replace_file(dir, name, text, (size_t)n, err, errlen);
}

int dropin_remove(const char *dir, const char *cgroup_rel, char *err, size_t errlen)
{
	char name[NAME_MAX + 1], path[PATH_MAX];
	int dfd, ret = dropin_name(cgroup_rel, name, sizeof(name));

	if (ret) {
		set_err(err, errlen, "%s: not a cgroup path", cgroup_rel);
		return ret;
	}
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if (unlink(path) != 0) {
		if (errno == ENOENT)
			return 0;	/* nothing persisted: already as asked */
		ret = -errno;
		set_err(err, errlen, "cannot remove %s: %s", path, strerror(-ret));
		return ret;
	}
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0 || fsync(dfd) != 0) {
		ret = -errno;
		set_err(err, errlen, "cannot sync directory %s: %s", dir, strerror(-ret));
	}
	if (dfd >= 0)
		close(dfd);
	return ret;
}

/* ---- thresholds -------------------------------------------------------- */

static bool valid_entry_path(const char *path)
{
	return path[0] == '/' && !strchr(path, '\n') && strlen(path) < PATH_MAX;
}

int thresholds_save(const char *state_dir, const struct thresholds_entry *e, size_t n,
		    char *err, size_t errlen)
{
	static const char header[] =
		"# tcpbufd: thresholds chosen with \"tcpbufctl set\". Written by tcpbufd;\n"
		"# one line per cgroup: PATH MIN PRESSURE MAX (4 KiB pages) id=CGROUP-ID.\n";
	char *text;
	size_t cap = sizeof(header), used;
	int ret;

	for (size_t i = 0; i < n; i++) {
		if (!valid_entry_path(e[i].path)) {
			set_err(err, errlen, "thresholds: not a cgroup path: %.64s", e[i].path);
			return -EINVAL;
		}
		cap += strlen(e[i].path) + 4 * 21 + 4;	/* " %llu" x3, " id=%llu" and '\n' */
	}
	text = malloc(cap);
	if (!text) {
		set_err(err, errlen, "out of memory");
		return -ENOMEM;
	}
	used = (size_t)snprintf(text, cap, "%s", header);
	for (size_t i = 0; i < n; i++) {
		used += (size_t)snprintf(text + used, cap - used, "%s %llu %llu %llu", e[i].path,
					 (unsigned long long)e[i].min_pages,
					 (unsigned long long)e[i].pressure_pages,
					 (unsigned long long)e[i].max_pages);
		if (e[i].id)
			used += (size_t)snprintf(text + used, cap - used, " id=%llu",
						 (unsigned long long)e[i].id);
		text[used++] = '\n';
	}
	ret = dropin_replace_file(state_dir, THRESHOLDS_FILE, text, used, err, errlen);
	free(text);
	return ret;
}

/* Read a whole file: -ENOENT if missing, -EFBIG past THRESHOLDS_MAX_BYTES. */
static int slurp(const char *path, char **text, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	size_t used = 0;
	char *buf;

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) != 0 || st.st_size > THRESHOLDS_MAX_BYTES) {
		int ret = st.st_size > THRESHOLDS_MAX_BYTES ? -EFBIG : -errno;

		close(fd);
		return ret;
	}
	buf = malloc((size_t)st.st_size + 1);
	while (buf && used < (size_t)st.st_size) {
		ssize_t n = read(fd, buf + used, (size_t)st.st_size - used);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		used += (size_t)n;
	}
	close(fd);
	if (!buf)
		return -ENOMEM;
	buf[used] = '\0';
	*text = buf;
	*len = used;
	return 0;
}

/* Strict decimal, as thresholds_save() writes it. */
static int parse_pages(const char *s, uint64_t *out)
{
	uint64_t v = 0;

	if (!*s)
		return -EINVAL;
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return -EINVAL;
		if (v > (SIZE_MAX_PAGES - (uint64_t)(*s - '0')) / 10)
			return -ERANGE;
		v = v * 10 + (uint64_t)(*s - '0');
	}
	*out = v;
	return 0;
}

/* Split off the last space-separated field of @line (paths may hold spaces). */
static char *last_field(char *line)
{
	char *sp = strrchr(line, ' ');

	if (!sp)
		return NULL;
	*sp = '\0';
	return sp + 1;
}

/* "PATH MIN PRESSURE MAX [id=ID]" -> @e; a short reason on failure. */
static const char *parse_entry(char *line, struct thresholds_entry *e)
{
	char *max = last_field(line);
	char *pressure, *min;

	e->id = 0;
	if (max && !strncmp(max, "id=", 3)) {
		if (parse_pages(max + 3, &e->id) || !e->id)
			return "id= must be a cgroup id";
		max = last_field(line);
	}
	pressure = max ? last_field(line) : NULL;
	min = pressure ? last_field(line) : NULL;
	if (!min)
		return "expected PATH MIN PRESSURE MAX";
	if (!valid_entry_path(line))
		return "PATH must start with '/'";
	if (parse_pages(min, &e->min_pages) || parse_pages(pressure, &e->pressure_pages) ||
	    parse_pages(max, &e->max_pages))
		return "MIN, PRESSURE and MAX must be page counts";
	if (!e->min_pages || e->min_pages > e->pressure_pages || e->pressure_pages > e->max_pages)
		return "thresholds must keep 1 <= MIN <= PRESSURE <= MAX";
	snprintf(e->path, sizeof(e->path), "%s", line);
	return NULL;
}

static int find_entry(const struct thresholds_entry *e, size_t n, const char *path)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(e[i].path, path) == 0)
			return (int)i;
	return -1;
}

struct entry_list {
	struct thresholds_entry *e;
	size_t n, cap;
};

static struct thresholds_entry *entry_append(struct entry_list *l)
{
	if (array_reserve(l->e, l->cap, l->n, 16))
		return NULL;
	return &l->e[l->n];
}

static int parse_thresholds(char *text, const char *path, struct entry_list *l,
			    char *err, size_t errlen)
{
	int lineno = 0;

	for (char *line = text, *next; line; line = next) {
		struct thresholds_entry *e;
		const char *why;

		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		lineno++;
		if (line[0] == '\0' || line[0] == '#')
			continue;
		e = entry_append(l);
		if (!e) {
			set_err(err, errlen, "out of memory");
			return -ENOMEM;
		}
		why = parse_entry(line, e);
		if (!why && find_entry(l->e, l->n, e->path) >= 0)
			why = "this cgroup is listed twice";
		if (why) {
			set_err(err, errlen, "%s:%d: %s", path, lineno, why);
			return -EINVAL;
		}
		l->n++;
	}
	return 0;
}

int thresholds_load(const char *state_dir, struct thresholds_entry **e, size_t *n,
		    char *err, size_t errlen)
{
	struct entry_list l = { 0 };
	char path[PATH_MAX], *text = NULL;
	size_t len = 0;
	int ret;

	if ((size_t)snprintf(path, sizeof(path), "%s/%s", state_dir, THRESHOLDS_FILE) >=
	    sizeof(path)) {
		set_err(err, errlen, "%s: path too long", state_dir);
		return -ENAMETOOLONG;
	}
	ret = slurp(path, &text, &len);
	if (ret == -ENOENT) {
		*e = NULL;	/* nothing chosen yet */
		*n = 0;
		return 0;
	}
	if (ret) {
		set_err(err, errlen, "%s: %s", path, strerror(-ret));
		return ret;
	}
	if (memchr(text, '\0', len)) {
		set_err(err, errlen, "%s: embedded NUL byte", path);
		ret = -EINVAL;
	} else {
		ret = parse_thresholds(text, path, &l, err, errlen);
	}
	free(text);
	if (ret) {
		free(l.e);
		return ret;
	}
	*e = l.e;
	*n = l.n;
	return 0;
}
