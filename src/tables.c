// SPDX-License-Identifier: GPL-2.0
/* The cgroup tables' size and fill (tables.h). */
#include <errno.h>
#include <limits.h>
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

void tables_want(unsigned max_cgroups)
{
	wanted = max_cgroups ? max_cgroups : TCPBUF_MAX_CGROUPS;
}

static long max_entries_of(int fd)
{
	struct bpf_map_info info = {};
	__u32 len = sizeof(info);

	if (bpf_obj_get_info_by_fd(fd, &info, &len))
		return -errno;
	return info.max_entries;
}

int tables_fit(struct bpf_object *obj, const char *pin_path)
{
	for (size_t i = 0; i < 2; i++) {
		struct bpf_map *map = bpf_object__find_map_by_name(obj, names[i]);
		char path[PATH_MAX];
		long max = wanted;
		int fd, err;

		if (!map)
			continue;
		if (!bpffs_path(path, sizeof(path), pin_path, "", names[i]) &&
		    (fd = bpf_obj_get(path)) >= 0) {
			max = max_entries_of(fd);
			close(fd);
			if (max < 0)
				return max;
		}
		err = bpf_map__set_max_entries(map, max);
		if (err)
			return err;
	}
	return 0;
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
	fprintf(f, "\"tables\": {\"cgroup_usage\": {\"entries\": %lu, \"max_entries\": %lu}, "
		   "\"cgroup_limits\": {\"entries\": %lu, \"max_entries\": %lu}}, ",
		c.usage.used, c.usage.max, c.limits.used, c.limits.max);
}

void tables_print_table(FILE *f)
{
	struct capacity c;

	if (!tables_read(&c))
		fprintf(f, "tables: cgroup_usage %lu of %lu entries, cgroup_limits %lu of %lu\n",
			c.usage.used, c.usage.max, c.limits.used, c.limits.max);
}

void tables_print_metrics(FILE *f)
{
	struct table_fill *fill[2];
	struct capacity c;

	if (tables_read(&c))
		return;
	fill[0] = &c.usage;
	fill[1] = &c.limits;
	fputs("# HELP tcpbufd_table_entries Entries in a cgroup table (BPF map) now.\n"
	      "# TYPE tcpbufd_table_entries gauge\n", f);
	for (size_t i = 0; i < 2; i++)
		fprintf(f, "tcpbufd_table_entries{table=\"%s\"} %lu\n", names[i], fill[i]->used);
	fputs("# HELP tcpbufd_table_max_entries The most entries a cgroup table holds "
	      "(MaxCgroups=).\n# TYPE tcpbufd_table_max_entries gauge\n", f);
	for (size_t i = 0; i < 2; i++)
		fprintf(f, "tcpbufd_table_max_entries{table=\"%s\"} %lu\n", names[i], fill[i]->max);
}
