// SPDX-License-Identifier: GPL-2.0
/* The cgroup tables' size and fill, and the fallback table's (tables.h). */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "bpffs.h"
#include "log.h"
#include "tables.h"
#include "tcpbuf_maps.h"

static const char *const names[] = { "cgroup_usage", "cgroup_limits" };
static unsigned wanted = TCPBUF_MAX_CGROUPS;
static int fds[2] = { -1, -1 };
static unsigned long max_of[2];
static char pins[PATH_MAX];
static unsigned long refused;
/* The fallback table: its control entry and its size, read where pinned. */
static int fallback_ctl_fd = -1;
static unsigned long fallback_max;

/* Tests only: a small sock_fallback, so that filling it takes a few sockets. */
static long fallback_wanted(void)
{
	const char *v = getenv("TCPBUF_TEST_FALLBACK_SOCKETS");
	long n = v ? strtol(v, NULL, 10) : 0;

	return n > 0 ? n : TCPBUF_FALLBACK_SOCKETS;
}

static long max_entries_of(int fd)
{
	struct bpf_map_info info = {};
	__u32 len = sizeof(info);

	if (bpf_obj_get_info_by_fd(fd, &info, &len))
		return -errno;
	return info.max_entries;
}

/* Size @obj's map @name as pinned under @pin_path where a pin exists (an
 * object reusing a pin must match it), else @max. */
static int map_fit(struct bpf_object *obj, const char *pin_path, const char *name, long max)
{
	struct bpf_map *map = bpf_object__find_map_by_name(obj, name);
	char path[PATH_MAX];
	int fd;

	if (!map)
		return 0;
	if (!bpffs_path(path, sizeof(path), pin_path, "", name) && (fd = bpf_obj_get(path)) >= 0) {
		max = max_entries_of(fd);
		close(fd);
		if (max < 0)
			return max;
	}
	return bpf_map__set_max_entries(map, max);
}

void tables_want(unsigned max_cgroups)
{
	wanted = max_cgroups ? max_cgroups : TCPBUF_MAX_CGROUPS;
}

int tables_fit(struct bpf_object *obj, const char *pin_path)
{
	int err = 0;

	for (size_t i = 0; i < 2 && !err; i++)
		err = map_fit(obj, pin_path, names[i], wanted);
	return err ?: map_fit(obj, pin_path, "sock_fallback", fallback_wanted());
}

int tables_init(int usage_fd, int limits_fd, const char *pin_path)
{
	fds[0] = usage_fd;
	fds[1] = limits_fd;
	snprintf(pins, sizeof(pins), "%s", pin_path);
	for (size_t i = 0; i < 2; i++) {
		long max = max_entries_of(fds[i]);

		if (max < 0)
			return max;
		max_of[i] = max;
	}
	tables_reconfigured(wanted);
	return 0;
}

/* fallback_ctl and sock_fallback's size, opened once they are pinned. */
static int fallback_open(void)
{
	char path[PATH_MAX];
	long max;
	int fd;

	if (fallback_ctl_fd >= 0)
		return 0;
	if (bpffs_path(path, sizeof(path), pins, "", "sock_fallback") ||
	    (fd = bpf_obj_get(path)) < 0)
		return -ENOENT;
	max = max_entries_of(fd);
	close(fd);
	if (max < 0 || bpffs_path(path, sizeof(path), pins, "", "fallback_ctl") ||
	    (fd = bpf_obj_get(path)) < 0)
		return -ENOENT;
	fallback_max = max;
	fallback_ctl_fd = fd;
	return 0;
}

int tables_fallback_read(struct fallback_fill *f)
{
	struct tcpbuf_fallback_ctl fc;
	__u32 zero = 0;

	if (fallback_open() || bpf_map_lookup_elem(fallback_ctl_fd, &zero, &fc))
		return -ENOENT;
	f->entries = fc.sockets > 0 ? fc.sockets : 0;
	f->max = fallback_max;
	f->lost = fc.lost;
	return 0;
}

void tables_refused_note(void)
{
	refused++;
}

unsigned long tables_refused(void)
{
	return refused;
}

void tables_reconfigured(unsigned max_cgroups)
{
	static unsigned said;

	wanted = max_cgroups;
	/* Never resized in place: that would drop every counter. */
	if (max_of[0] != wanted && said != wanted)
		log_warn("%s: cgroup_usage and cgroup_limits hold %lu entries each, as made by an "
			 "earlier start; MaxCgroups=%u takes effect at a clean start (stop tcpbufd, "
			 "remove %s)", pins, max_of[0], wanted, pins);
	said = max_of[0] != wanted ? wanted : 0;
}

unsigned long tables_limits_max(void)
{
	return max_of[1];
}

static long entries_count(int fd)
{
	__u64 key, next, *prev = NULL;
	long n = 0;

	for (; !bpf_map_get_next_key(fd, prev, &next); prev = &key, n++)
		key = next;
	return errno == ENOENT ? n : -errno;
}

int tables_read(struct capacity *c)
{
	struct table_fill *fill[2] = { &c->usage, &c->limits };

	for (size_t i = 0; i < 2; i++) {
		long n = entries_count(fds[i]);

		if (n < 0)
			return n;
		fill[i]->used = n;
		fill[i]->max = max_of[i];
	}
	return 0;
}

void tables_print_json(FILE *f)
{
	struct capacity c;

	if (tables_read(&c)) {
		fputs("\"tables\": null, ", f);
		return;
	}
	struct fallback_fill fb;

	fprintf(f, "\"tables\": {\"cgroup_usage\": {\"entries\": %lu, \"max_entries\": %lu}, "
		   "\"cgroup_limits\": {\"entries\": %lu, \"max_entries\": %lu}, "
		   "\"refused_cgroups\": %lu, ",
		c.usage.used, c.usage.max, c.limits.used, c.limits.max, refused);
	if (tables_fallback_read(&fb))
		fputs("\"sock_fallback\": null}, ", f);
	else
		fprintf(f, "\"sock_fallback\": {\"entries\": %lu, \"max_entries\": %lu, "
			   "\"lost_sockets\": %llu}}, ", fb.entries, fb.max, fb.lost);
}

void tables_print_table(FILE *f)
{
	struct capacity c;

	struct fallback_fill fb;

	if (!tables_read(&c))
		fprintf(f, "tables: cgroup_usage %lu of %lu entries, cgroup_limits %lu of %lu, "
			   "%lu new cgroups refused for want of room\n",
			c.usage.used, c.usage.max, c.limits.used, c.limits.max, refused);
	if (!tables_fallback_read(&fb))
		fprintf(f, "sock_fallback: %lu of %lu entries, %llu sockets lost (no entry: held "
			   "at the floors, refused at ingress)\n", fb.entries, fb.max, fb.lost);
}

void tables_print_metrics(FILE *f)
{
	struct table_fill *fill[2];
	struct fallback_fill fb;
	struct capacity c;
	bool have_fb;

	if (tables_read(&c))
		return;
	have_fb = !tables_fallback_read(&fb);
	fill[0] = &c.usage;
	fill[1] = &c.limits;
	fputs("# HELP tcpbufd_table_entries Entries in a cgroup table or sock_fallback (BPF maps) now.\n"
	      "# TYPE tcpbufd_table_entries gauge\n", f);
	for (size_t i = 0; i < 2; i++)
		fprintf(f, "tcpbufd_table_entries{table=\"%s\"} %lu\n", names[i], fill[i]->used);
	if (have_fb)
		fprintf(f, "tcpbufd_table_entries{table=\"sock_fallback\"} %lu\n", fb.entries);
	fputs("# HELP tcpbufd_table_max_entries The most entries a table holds "
	      "(the cgroup tables: MaxCgroups=).\n# TYPE tcpbufd_table_max_entries gauge\n", f);
	for (size_t i = 0; i < 2; i++)
		fprintf(f, "tcpbufd_table_max_entries{table=\"%s\"} %lu\n", names[i], fill[i]->max);
	if (have_fb)
		fprintf(f, "tcpbufd_table_max_entries{table=\"sock_fallback\"} %lu\n", fb.max);
}
