/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What tcpbufctl changes, kept on disk so it survives restarts:
 *  - set-limit writes a drop-in <DropInDir>/50-tcpbufctl-<escaped cgroup>.conf
 *    holding one [Cgroup] section, read back by config_load() like any other;
 *  - set writes <StateDir>/thresholds, one "PATH MIN PRESSURE MAX id=ID" line
 *    (pages; ID the cgroup's, so thresholds die with it) per cgroup.
 * Every write is atomic: a temporary file in the same directory, fsync,
 * rename over the old one, fsync of the directory. A crash leaves the old
 * file or the new one, never half of one.
 */
#ifndef TCPBUFD_DROPIN_H
#define TCPBUFD_DROPIN_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

/* Sorts after hand-written 10-*.conf files and before 90-*.conf overrides. */
#define DROPIN_PREFIX		"50-tcpbufctl-"
#define THRESHOLDS_FILE		"thresholds"

/* Thresholds a container chose with `tcpbufctl set`, in pages. */
struct thresholds_entry {
	char path[PATH_MAX];	/* cgroup path relative to the v2 mount */
	uint64_t min_pages, pressure_pages, max_pages;
	uint64_t id;		/* the cgroup they were set for; 0: not known (older file) */
};

/*
 * File name (no directory) of the drop-in for @cgroup_rel, escaped like
 * systemd-escape --path: "/demo/a" -> "50-tcpbufctl-demo-a.conf",
 * "/a-b" -> "50-tcpbufctl-a\x2db.conf", "/" -> "50-tcpbufctl--.conf".
 * Names too long for the file system end in "~<hash>" instead of the full
 * path. Returns 0, -EINVAL for a path that is not a cgroup path, or
 * -ENAMETOOLONG if @len is too small.
 */
int dropin_name(const char *cgroup_rel, char *buf, size_t len);

/*
 * Persist the administrator's ceiling for @cgroup_rel in @dir (created if
 * missing, parent must exist), replacing an earlier one. Returns 0 or a
 * negative errno with one line in @err (which may be NULL).
 */
int dropin_write_limit(const char *dir, const char *cgroup_rel, uint64_t limit_pages,
		       char *err, size_t errlen);

/* Replace @dir/@name with @data atomically, as above (@dir created if missing). */
int dropin_replace_file(const char *dir, const char *name, const char *data, size_t len,
			char *err, size_t errlen);

/* Remove that drop-in. Returns 0 also when there was none. */
int dropin_remove(const char *dir, const char *cgroup_rel, char *err, size_t errlen);

/* Replace <state_dir>/thresholds with @n entries (state_dir created if missing). */
int thresholds_save(const char *state_dir, const struct thresholds_entry *e, size_t n,
		    char *err, size_t errlen);

/*
 * Read <state_dir>/thresholds into a malloc'd array (free() it); a missing
 * file is an empty list. Errors say "FILE:LINE: reason" and leave *e, *n alone.
 */
int thresholds_load(const char *state_dir, struct thresholds_entry **e, size_t *n,
		    char *err, size_t errlen);

#endif /* TCPBUFD_DROPIN_H */
