/* SPDX-License-Identifier: GPL-2.0 */
/*
 * tcpbufd's configuration: the main file (/etc/tcpbufd.conf, [Daemon] and
 * [Default]) and the drop-ins (every NAME.conf in DropInDir, [Cgroup] sections),
 * INI in the style of systemd units. Loading is all-or-nothing: a config
 * either parses completely or the caller keeps the one it had.
 */
#ifndef TCPBUFD_CONFIG_H
#define TCPBUFD_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define CONFIG_DEFAULT_PATH	"/etc/tcpbufd.conf"
/* The FILE part of errors and config.main_file when the embedded copy is used. */
#define CONFIG_BUILTIN_NAME	"<built-in>"
/*
 * Longest line, in characters without the newline: a Path= of the deepest
 * cgroup (PATH_MAX, each character escaped). Lines past libinih's own
 * buffer (200 bytes in Debian's build) are read whole by config.c.
 */
#define CONFIG_MAX_LINE		(2 * 4096 + 16)
/* Files larger than this are refused: a config that big is a mistake. */
#define CONFIG_MAX_FILE_BYTES	(1 << 20)

/* The repository's tcpbufd.conf, NUL-terminated; generated at build time. */
extern const char tcpbufd_default_conf[];

/* One [Cgroup] section of a drop-in. Sizes in pages; 0 = unset. */
struct cgroup_rule {
	char *pattern;		/* normalized Path=: starts with '/', no "//", no trailing '/' */
	char *file;		/* the drop-in it came from */
	int line;		/* line of its Path= */
	uint64_t limit_pages;	/* the administrator's ceiling, always set */
	uint64_t min_pages, pressure_pages, max_pages;
	bool is_glob;		/* pattern holds an unescaped * ? or [ */
};

/* IngressRest=: whether ingress may rest at a cgroup whose sockets are all
 * bounded (docs/ENFORCEMENT.md, "Near and far"). */
enum ingress_rest {
	INGRESS_REST_AUTO,	/* where its locks cost nothing (tcpbuf_rest_free()) */
	INGRESS_REST_YES,	/* wherever it may */
	INGRESS_REST_NO,
};

struct config {
	char *pin_path;		/* bpffs directory of pinned maps and links */
	char *socket_path;	/* control socket */
	char *dropin_dir;	/* where the [Cgroup] drop-ins live */
	char *state_dir;	/* thresholds set by containers survive restarts here */
	char *runtime_dir;	/* runtime limits: kept across restarts, gone at reboot */
	char *scope;		/* cgroup subtree the programs are attached to, e.g. "/" */
	char *mode;		/* "auto", "exact" or "sampled" */
	unsigned sample_interval_ms;	/* sampled-mode reconcile period */
	unsigned poll_interval_ms;	/* cgroup tree and state poll period */
	unsigned max_cgroups;	/* entries of cgroup_usage and cgroup_limits, at their making */
	int log_level;		/* syslog priority: LOG_ERR .. LOG_DEBUG */
	unsigned socket_mode;	/* permission bits of the control socket */
	char *socket_group;	/* group owning the control socket, NULL = unchanged */
	char *admin_group;	/* host users of this group administer too, NULL = none */
	gid_t admin_gid;	/* its gid, (gid_t)-1 for none */
	uint64_t default_limit_pages;	/* ceiling of cgroups no rule matches, 0 = none */
	bool bypass_prot_mem;	/* limited cgroups' sockets leave the global tcp_mem */
	enum ingress_rest ingress_rest;	/* IngressRest= */
	struct cgroup_rule *rules;	/* in file-name order, then line order */
	size_t n_rules;
	char *main_file;	/* the main file read, or CONFIG_BUILTIN_NAME */
};

/*
 * Load @main_path and the drop-ins it names. @main_path NULL, or a missing
 * file when @main_is_default, means the embedded tcpbufd_default_conf.
 * Returns 0 and fills *out, or a negative errno with *out untouched and
 * @err holding one line: "FILE:LINE: reason" ("FILE: reason" when the file
 * itself cannot be read).
 */
int config_load(const char *main_path, bool main_is_default, struct config *out,
		char *err, size_t errlen);

/* A config file's text, for config_parse(): no I/O, so it can be fuzzed. */
struct config_source {
	const char *name;	/* used in errors and cgroup_rule.file */
	const char *text;	/* need not be NUL-terminated */
	size_t len;
};

/*
 * Parse a main file and drop-ins given as text (in the order they apply).
 * Same contract as config_load(); DropInDir is parsed but not read.
 */
int config_parse(const struct config_source *main_src, const struct config_source *dropins,
		 size_t n_dropins, struct config *out, char *err, size_t errlen);

/* Free what a successful load allocated; leaves *c zeroed. */
void config_free(struct config *c);

/*
 * The rule for a cgroup path (relative to the mount, as from the daemon's
 * tree walk): an exact Path= wins over globs; among globs the first in file
 * order wins. Globs use fnmatch(3) with FNM_PATHNAME, so '*' stays within
 * one path component. NULL if no rule matches.
 */
const struct cgroup_rule *config_match(const struct config *c, const char *cgroup_rel_path);

/*
 * The thresholds a rule gives, each >= 1 and min <= pressure <= max <= limit.
 * Unset values default to fractions of max (which defaults to the limit):
 * pressure = 3/4 max, min = 1/2 max, clamped to stay ordered around
 * explicit values. See config.c for why these ratios.
 */
void rule_thresholds(const struct cgroup_rule *r, uint64_t *min, uint64_t *pressure,
		     uint64_t *max);

/*
 * Normalize a cgroup path relative to the v2 mount: require a leading '/',
 * collapse "//", drop a trailing '/'. Refuses "." and ".." components
 * (-EINVAL) and results that do not fit @outlen (-ENAMETOOLONG).
 */
int cgroup_path_normalize(const char *in, char *out, size_t outlen);

#endif /* TCPBUFD_CONFIG_H */
