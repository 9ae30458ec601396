// SPDX-License-Identifier: GPL-2.0
/*
 * Configuration loading: read the main file and the drop-ins, hand their
 * lines to libinih, check every key, and build a struct config that is
 * either complete or not there at all.
 *
 * libinih splits "Key=Value" and handles ';' comments; our line reader in
 * front of it does the rest, for three reasons: the handler gets no line
 * numbers and no section boundaries (two [Cgroup] sections in a row look
 * like one), and indented lines would become multi-line continuations.
 * So the reader counts lines, strips indentation, sees section headers
 * before libinih does, and refuses lines libinih would silently split.
 */
#include <dirent.h>
#include <errno.h>
#include <grp.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <ini.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <syslog.h>
#include <unistd.h>

#include "config.h"
#include "size.h"
#include "tcpbuf_policy.h"

#define ERR_MAX 512

/* A value of a line longer than libinih's buffer, kept aside by read_line(). */
#define LONG_VALUE_MARK "\x01"

enum section {
	SEC_NONE,	/* before the first header */
	SEC_DAEMON,
	SEC_DEFAULT,
	SEC_CGROUP,
	SEC_COUNT,
};

static const char *const section_names[SEC_COUNT] = {
	[SEC_DAEMON] = "Daemon",
	[SEC_DEFAULT] = "Default",
	[SEC_CGROUP] = "Cgroup",
};

#define MAX_KEYS 16

struct parse_ctx;
struct key {
	const char *name;
	/* [Daemon]/[Default]: the value when unset or empty; NULL in [Cgroup]. */
	const char *default_value;
	int (*set)(struct parse_ctx *ctx, const struct key *k, const char *value);
	size_t offset;	/* into struct config, or struct cgroup_rule for [Cgroup] */
};

struct parse_ctx {
	struct config *cfg;
	const char *file;	/* name for errors */
	bool is_dropin;

	/* line reader over the file's text */
	const char *pos, *end;
	int line;

	/* the section being read */
	enum section sec;
	int sec_line;
	int key_line[SEC_COUNT][MAX_KEYS];	/* where each key was set, 0 = not yet */
	struct cgroup_rule rule;		/* the [Cgroup] being filled */

	/* the value of line long_line, too long for libinih (read_line()) */
	char *long_value;
	int long_line;

	/* the first error; parsing stops there */
	int err_line;
	int err_code;
	char err[ERR_MAX];
};

static int fail(struct parse_ctx *ctx, int line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/*
 * Record the first error as "FILE:LINE: reason" (or "FILE: reason" for line
 * 0). Control characters from the file become '?' so it stays one line.
 */
static int fail(struct parse_ctx *ctx, int line, const char *fmt, ...)
{
	size_t n;
	va_list ap;

	if (ctx->err_code)
		return ctx->err_code;
	if (line > 0)
		snprintf(ctx->err, sizeof(ctx->err), "%s:%d: ", ctx->file, line);
	else
		snprintf(ctx->err, sizeof(ctx->err), "%s: ", ctx->file);
	n = strlen(ctx->err);
	va_start(ap, fmt);
	vsnprintf(ctx->err + n, sizeof(ctx->err) - n, fmt, ap);
	va_end(ap);
	for (char *p = ctx->err; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = '?';
	ctx->err_line = line;
	ctx->err_code = -EINVAL;
	return -EINVAL;
}

static int fail_oom(struct parse_ctx *ctx)
{
	if (ctx->err_code)
		return ctx->err_code;
	fail(ctx, 0, "out of memory");
	ctx->err_code = -ENOMEM;
	return -ENOMEM;
}

/* ---- cgroup paths ---------------------------------------------------- */

int cgroup_path_normalize(const char *in, char *out, size_t outlen)
{
	size_t o = 0;

	if (in[0] != '/')
		return -EINVAL;
	while (*in) {
		size_t n;

		while (*in == '/')
			in++;
		n = strcspn(in, "/");
		if (n == 0)
			break;
		if ((n == 1 && in[0] == '.') || (n == 2 && in[0] == '.' && in[1] == '.'))
			return -EINVAL;
		if (o + 1 + n + 1 > outlen)
			return -ENAMETOOLONG;
		out[o++] = '/';
		memcpy(out + o, in, n);
		o += n;
		in += n;
	}
	if (o == 0) {
		if (outlen < 2)
			return -ENAMETOOLONG;
		out[o++] = '/';
	}
	out[o] = '\0';
	return 0;
}

/* fnmatch(3) metacharacters not escaped by a backslash. */
static bool pattern_is_glob(const char *p)
{
	for (; *p; p++) {
		if (*p == '\\' && p[1])
			p++;
		else if (*p == '*' || *p == '?' || *p == '[')
			return true;
	}
	return false;
}

/* ---- value setters ----------------------------------------------------- */

static char **field_str(struct parse_ctx *ctx, const struct key *k)
{
	return (char **)((char *)ctx->cfg + k->offset);
}

static int replace_str(struct parse_ctx *ctx, char **field, const char *value)
{
	char *copy = NULL;

	if (value && !(copy = strdup(value)))
		return fail_oom(ctx);
	free(*field);
	*field = copy;
	return 0;
}

static int set_abs_path(struct parse_ctx *ctx, const struct key *k, const char *value)
{
	if (value[0] != '/')
		return fail(ctx, ctx->line, "%s=%s: must be an absolute path", k->name, value);
	return replace_str(ctx, field_str(ctx, k), value);
}

static int set_socket_path(struct parse_ctx *ctx, const struct key *k, const char *value)
{
	size_t max = sizeof(((struct sockaddr_un *)0)->sun_path) - 1;

	if (strlen(value) > max)
		return fail(ctx, ctx->line, "%s=%s: too long for a unix socket (max %zu bytes)",
			    k->name, value, max);
	return set_abs_path(ctx, k, value);
}

static int set_scope(struct parse_ctx *ctx, const struct key *k, const char *value)
{
	char norm[PATH_MAX];

	if (cgroup_path_normalize(value, norm, sizeof(norm)) != 0)
		return fail(ctx, ctx->line, "%s=%s: not a cgroup path (must start with '/', "
			    "no '.' or '..')", k->name, value);
	if (pattern_is_glob(norm))
		return fail(ctx, ctx->line, "%s=%s: must be one cgroup, not a glob", k->name, value);
	return replace_str(ctx, field_str(ctx, k), norm);
}

static int set_mode(struct parse_ctx *ctx, const struct key *k, const char *value)
{
	if (strcmp(value, "auto") && strcmp(value, "exact") && strcmp(value, "sampled"))
		return fail(ctx, ctx->line, "%s=%s: must be auto, exact or sampled", k->name, value);
	return replace_str(ctx, field_str(ctx, k), value);
}

/* Strict unsigned decimal or octal: no sign, no spaces, no trailing junk. */
static int parse_unsigned(const char *s, int base, unsigned long max, unsigned long *out)
{
	unsigned long v = 0;
	const char *digits = base == 8 ? "01234567" : "0123456789";

	if (!*s)
		return -EINVAL;
	for (; *s; s++) {
		const char *d = strchr(digits, *s);

		if (!d)
			return -EINVAL;
		if (v > (max - (unsigned long)(d - digits)) / (unsigned long)base)
			return -ERANGE;
		v = v * (unsigned long)base + (unsigned long)(d - digits);
	}
	*out = v;
	return 0;
}

/* Below 10 ms the poll loop would mostly spin; above an hour it is likely a typo. */
#define INTERVAL_MIN_MS	10
#define INTERVAL_MAX_MS	3600000

static int set_interval(struct parse_ctx *ctx, const struct key *k, const char *value)
{
	unsigned long v = 0;
	int ret = parse_unsigned(value, 10, INTERVAL_MAX_MS, &v);

	if (ret == -EINVAL)
		return fail(ctx, ctx->line, "%s=%s: bad number", k->name, value);
	if (ret == -ERANGE || v < INTERVAL_MIN_MS)
		return fail(ctx, ctx->line, "%s=%s: must be between %d and %d milliseconds",
			    k->name, value, INTERVAL_MIN_MS, INTERVAL_MAX_MS);
	*(unsigned *)((char *)ctx->cfg + k->offset) = (unsigned)v;
	return 0;
}

/* Entries of cgroup_usage and cgroup_limits: sized when the maps are made. */
#define MAX_CGROUPS_MIN	1
#define MAX_CGROUPS_MAX	(1 << 22)

static int set_max_cgroups(struct parse_ctx *ctx, const struct key *k, const char *value)
{
	unsigned long v = 0;
	int ret = parse_unsigned(value, 10, MAX_CGROUPS_MAX, &v);

	if (ret == -EINVAL)
		return fail(ctx, ctx->line, "%s=%s: bad number", k->name, value);
	if (ret == -ERANGE || v < MAX_CGROUPS_MIN)
		return fail(ctx, ctx->line, "%s=%s: must be between %d and %d cgroups", k->name,
			    value, MAX_CGROUPS_MIN, MAX_CGROUPS_MAX);
	*(unsigned *)((char *)ctx->cfg + k->offset) = (unsigned)v;
	return 0;
}

static int set_socket_mode(struct parse_ctx *ctx, const struct key *k, const char *value)
{
	unsigned long v = 0;

	if (parse_unsigned(value, 8, 0777, &v))
		return fail(ctx, ctx->line, "%s=%s: bad number (octal permission bits, "
			    "at most 0777)", k->name, value);
	*(unsigned *)((char *)ctx->cfg + k->offset) = (unsigned)v;
	return 0;
}

static int set_log_level(struct parse_ctx *ctx, const struct key *k, const char *value)
{
	static const struct { const char *name; int level; } levels[] = {
		{ "emerg", LOG_EMERG }, { "alert", LOG_ALERT }, { "crit", LOG_CRIT },
		{ "err", LOG_ERR }, { "warning", LOG_WARNING }, { "notice", LOG_NOTICE },
		{ "info", LOG_INFO }, { "debug", LOG_DEBUG },
	};

	for (size_t i = 0; i < sizeof(levels) / sizeof(levels[0]); i++) {
		if (strcmp(value, levels[i].name) == 0) {
			*(int *)((char *)ctx->cfg + k->offset) = levels[i].level;
			return 0;
		}
	}
	return fail(ctx, ctx->line, "%s=%s: must be err, warning, notice, info or debug",
		    k->name, value);
}

/* A group name or number for chown(2); the daemon resolves it. */
static int set_group(struct parse_ctx *ctx, const struct key *k, const char *value)
{
	if (strpbrk(value, " \t:/"))
		return fail(ctx, ctx->line, "%s=%s: not a group name", k->name, value);
	return replace_str(ctx, field_str(ctx, k), value[0] ? value : NULL);
}

/* AdminGroup=: a group of this host, by name or number, resolved here so a
 * typo is an error naming its line. */
static int set_admin_group(struct parse_ctx *ctx, const struct key *k, const char *value)
{
	struct group *g;
	unsigned long gid = 0;

	ctx->cfg->admin_gid = (gid_t)-1;
	if (!value[0])
		return replace_str(ctx, field_str(ctx, k), NULL);
	if (strpbrk(value, " \t:/"))
		return fail(ctx, ctx->line, "%s=%s: not a group name", k->name, value);
	g = getgrnam(value);
	if (g)
		gid = g->gr_gid;
	else if (parse_unsigned(value, 10, (gid_t)-2, &gid))
		return fail(ctx, ctx->line, "%s=%s: no such group", k->name, value);
	ctx->cfg->admin_gid = (gid_t)gid;
	return replace_str(ctx, field_str(ctx, k), value);
}

static int parse_size_value(struct parse_ctx *ctx, const char *name, const char *value,
			    uint64_t *pages)
{
	int ret = size_parse_pages(value, pages);

	if (ret == -ERANGE)
		return fail(ctx, ctx->line, "%s=%s: size out of range", name, value);
	if (ret)
		return fail(ctx, ctx->line, "%s=%s: bad size (pages, or bytes with B, K, M "
			    "or G)", name, value);
	/* 0 means "unset" everywhere, and a zero ceiling would refuse all traffic. */
	if (*pages == 0)
		return fail(ctx, ctx->line, "%s=%s: must be at least 1 page (leave it empty "
			    "for none)", name, value);
	return 0;
}

static int set_default_limit(struct parse_ctx *ctx, const struct key *k, const char *value)
{
	uint64_t *field = (uint64_t *)((char *)ctx->cfg + k->offset);

	if (!value[0]) {
		*field = 0;
		return 0;
	}
	return parse_size_value(ctx, k->name, value, field);
}

static int set_rule_path(struct parse_ctx *ctx, const struct key *k, const char *value)
{
	static const char mount[] = "/sys/fs/cgroup";
	char norm[PATH_MAX];
	int ret;

	if (!value[0])
		return fail(ctx, ctx->line, "%s= is empty", k->name);
	ret = cgroup_path_normalize(value, norm, sizeof(norm));
	if (ret)
		return fail(ctx, ctx->line, "%s=%s: not a cgroup path (must start with '/', "
			    "no '.' or '..')", k->name, value);
	/*
	 * A common slip, and it would silently match nothing. No rewrite is
	 * suggested: on hybrid hosts the v2 mount is /sys/fs/cgroup/unified.
	 */
	if (strncmp(norm, mount, sizeof(mount) - 1) == 0 &&
	    (norm[sizeof(mount) - 1] == '/' || norm[sizeof(mount) - 1] == '\0'))
		return fail(ctx, ctx->line, "%s=%s: is relative to the cgroup v2 mount: "
			    "leave out the mount point", k->name, value);
	free(ctx->rule.pattern);
	ctx->rule.pattern = strdup(norm);
	if (!ctx->rule.pattern)
		return fail_oom(ctx);
	ctx->rule.line = ctx->line;
	ctx->rule.is_glob = pattern_is_glob(norm);
	return 0;
}

static int set_rule_size(struct parse_ctx *ctx, const struct key *k, const char *value)
{
	uint64_t *field = (uint64_t *)((char *)&ctx->rule + k->offset);

	if (!value[0]) {
		if (field == &ctx->rule.limit_pages)
			return fail(ctx, ctx->line, "%s= is empty", k->name);
		*field = 0;	/* empty threshold: back to the default */
		return 0;
	}
	return parse_size_value(ctx, k->name, value, field);
}

static int set_yes_no(struct parse_ctx *ctx, const struct key *k, const char *value)
{
	bool *field = (bool *)((char *)ctx->cfg + k->offset);

	if (!strcmp(value, "yes") || !strcmp(value, "no")) {
		*field = value[0] == 'y';
		return 0;
	}
	return fail(ctx, ctx->line, "%s=%s: must be yes or no", k->name, value);
}

static int set_ingress_rest(struct parse_ctx *ctx, const struct key *k, const char *value)
{
	static const char *const names[] = {
		[INGRESS_REST_AUTO] = "auto", [INGRESS_REST_YES] = "yes", [INGRESS_REST_NO] = "no",
	};
	enum ingress_rest *field = (enum ingress_rest *)((char *)ctx->cfg + k->offset);

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(value, names[i])) {
			*field = (enum ingress_rest)i;
			return 0;
		}
	return fail(ctx, ctx->line, "%s=%s: must be auto, yes or no", k->name, value);
}

/* ---- key tables ------------------------------------------------------- */

#define CFG(f) offsetof(struct config, f)
#define RULE(f) offsetof(struct cgroup_rule, f)

static const struct key daemon_keys[] = {
	{ "PinPath",		"/sys/fs/bpf/tcpbufd",		set_abs_path,	 CFG(pin_path) },
	{ "Socket",		"/run/tcpbufd/control.sock",	set_socket_path, CFG(socket_path) },
	{ "DropInDir",		"/etc/tcpbufd.d",		set_abs_path,	 CFG(dropin_dir) },
	{ "StateDir",		"/var/lib/tcpbufd",		set_abs_path,	 CFG(state_dir) },
	{ "RuntimeDir",		"/run/tcpbufd",			set_abs_path,	 CFG(runtime_dir) },
	{ "Scope",		"/",				set_scope,	 CFG(scope) },
	{ "Mode",		"auto",				set_mode,	 CFG(mode) },
	{ "SampleIntervalMs",	"1000",				set_interval,	 CFG(sample_interval_ms) },
	{ "PollIntervalMs",	"1000",				set_interval,	 CFG(poll_interval_ms) },
	{ "MaxCgroups",		"65536",			set_max_cgroups, CFG(max_cgroups) },
	{ "LogLevel",		"info",				set_log_level,	 CFG(log_level) },
	{ "SocketMode",		"0600",				set_socket_mode, CFG(socket_mode) },
	{ "SocketGroup",	"",				set_group,	 CFG(socket_group) },
	{ "BypassProtMem",	"no",				set_yes_no,	 CFG(bypass_prot_mem) },
	{ "IngressRest",	"auto",				set_ingress_rest, CFG(ingress_rest) },
	{ "AdminGroup",		"",				set_admin_group, CFG(admin_group) },
	{ NULL, NULL, NULL, 0 },
};

static const struct key default_keys[] = {
	{ "Limit",		"",				set_default_limit, CFG(default_limit_pages) },
	{ NULL, NULL, NULL, 0 },
};

/* Indexed by RK_*, so the threshold checks can name the keys they compare. */
enum { RK_PATH, RK_LIMIT, RK_MIN, RK_PRESSURE, RK_MAX };
static const struct key cgroup_keys[] = {
	[RK_PATH]	= { "Path",	NULL, set_rule_path, 0 },
	[RK_LIMIT]	= { "Limit",	NULL, set_rule_size, RULE(limit_pages) },
	[RK_MIN]	= { "Min",	NULL, set_rule_size, RULE(min_pages) },
	[RK_PRESSURE]	= { "Pressure",	NULL, set_rule_size, RULE(pressure_pages) },
	[RK_MAX]	= { "Max",	NULL, set_rule_size, RULE(max_pages) },
	{ NULL, NULL, NULL, 0 },
};

static const struct key *const section_keys[SEC_COUNT] = {
	[SEC_DAEMON] = daemon_keys,
	[SEC_DEFAULT] = default_keys,
	[SEC_CGROUP] = cgroup_keys,
};

/* ---- sections ------------------------------------------------------- */

static int rule_add(struct parse_ctx *ctx)
{
	struct config *cfg = ctx->cfg;
	struct cgroup_rule *grown;

	grown = realloc(cfg->rules, (cfg->n_rules + 1) * sizeof(*grown));
	if (!grown)
		return fail_oom(ctx);
	cfg->rules = grown;
	ctx->rule.file = strdup(ctx->file);
	if (!ctx->rule.file)
		return fail_oom(ctx);
	cfg->rules[cfg->n_rules++] = ctx->rule;
	memset(&ctx->rule, 0, sizeof(ctx->rule));
	return 0;
}

static int check_threshold_pair(struct parse_ctx *ctx, int lo, int hi)
{
	uint64_t lo_v = *(const uint64_t *)((const char *)&ctx->rule + cgroup_keys[lo].offset);
	uint64_t hi_v = *(const uint64_t *)((const char *)&ctx->rule + cgroup_keys[hi].offset);
	const int *lines = ctx->key_line[SEC_CGROUP];
	int line = lines[lo] > lines[hi] ? lines[lo] : lines[hi];

	if (!lo_v || !hi_v || lo_v <= hi_v)
		return 0;
	return fail(ctx, line, "%s= (%llu pages) is above %s= (%llu pages): %s",
		    cgroup_keys[lo].name, (unsigned long long)lo_v, cgroup_keys[hi].name,
		    (unsigned long long)hi_v, "thresholds must keep Min <= Pressure <= Max <= Limit");
}

static int check_thresholds(struct parse_ctx *ctx)
{
	static const int pairs[][2] = {
		{ RK_MIN, RK_LIMIT }, { RK_PRESSURE, RK_LIMIT }, { RK_MAX, RK_LIMIT },
		{ RK_MIN, RK_PRESSURE }, { RK_PRESSURE, RK_MAX }, { RK_MIN, RK_MAX },
	};

	for (size_t i = 0; i < sizeof(pairs) / sizeof(pairs[0]); i++) {
		int ret = check_threshold_pair(ctx, pairs[i][0], pairs[i][1]);

		if (ret)
			return ret;
	}
	return 0;
}

/* One Path= per cgroup across all files, or which one applies would be a guess. */
static int check_unique_path(struct parse_ctx *ctx)
{
	const struct config *cfg = ctx->cfg;

	for (size_t i = 0; i < cfg->n_rules; i++) {
		const struct cgroup_rule *r = &cfg->rules[i];

		if (strcmp(r->pattern, ctx->rule.pattern) == 0)
			return fail(ctx, ctx->rule.line, "Path=%s is already configured at %s:%d",
				    r->pattern, r->file, r->line);
	}
	return 0;
}

static int finish_cgroup(struct parse_ctx *ctx)
{
	int ret;

	if (!ctx->rule.pattern)
		return fail(ctx, ctx->sec_line, "[Cgroup] section has no Path=");
	if (!ctx->rule.limit_pages)
		return fail(ctx, ctx->sec_line, "[Cgroup] section for %s has no Limit= "
			    "(the ceiling is required)", ctx->rule.pattern);
	ret = check_thresholds(ctx);
	if (!ret)
		ret = check_unique_path(ctx);
	if (!ret)
		ret = rule_add(ctx);
	return ret;
}

static int finish_section(struct parse_ctx *ctx)
{
	return ctx->sec == SEC_CGROUP ? finish_cgroup(ctx) : 0;
}

static int begin_section(struct parse_ctx *ctx, const char *name)
{
	enum section sec = SEC_NONE;
	int ret = finish_section(ctx);

	if (ret)
		return ret;
	for (int s = 0; s < SEC_COUNT; s++)
		if (section_names[s] && strcmp(section_names[s], name) == 0)
			sec = (enum section)s;
	if (sec == SEC_NONE)
		return fail(ctx, ctx->line, "unknown section [%s]", name);
	if (ctx->is_dropin && sec != SEC_CGROUP)
		return fail(ctx, ctx->line, "[%s] belongs in the main config file; drop-ins "
			    "hold [Cgroup] sections", name);
	if (!ctx->is_dropin && sec == SEC_CGROUP)
		return fail(ctx, ctx->line, "[Cgroup] sections belong in drop-in files "
			    "in DropInDir (%s)", ctx->cfg->dropin_dir);
	ctx->sec = sec;
	ctx->sec_line = ctx->line;
	/* [Cgroup] sections repeat; keys of the others may be set once per file. */
	if (sec == SEC_CGROUP) {
		memset(ctx->key_line[SEC_CGROUP], 0, sizeof(ctx->key_line[SEC_CGROUP]));
		free(ctx->rule.pattern);
		memset(&ctx->rule, 0, sizeof(ctx->rule));
	}
	return 0;
}

/* ---- libinih glue ---------------------------------------------------- */

static int on_key(void *user, const char *section, const char *name, const char *value)
{
	struct parse_ctx *ctx = user;
	const struct key *keys = section_keys[ctx->sec];
	int *lines = ctx->key_line[ctx->sec];

	(void)section;	/* the reader tracked it, with its line */
	if (ctx->err_code)
		return 1;	/* already failed: ini_parse_stream()'s answer is ignored */
	if (ctx->long_line == ctx->line && strcmp(value, LONG_VALUE_MARK) == 0)
		value = ctx->long_value;
	if (ctx->sec == SEC_NONE)
		return !fail(ctx, ctx->line, "%s= is outside of a section", name);
	for (int i = 0; keys[i].name; i++) {
		if (strcmp(keys[i].name, name) != 0)
			continue;
		if (lines[i])
			return !fail(ctx, ctx->line, "%s= is already set at line %d",
				     name, lines[i]);
		lines[i] = ctx->line;
		/* As in systemd, an empty value resets a key to its default. */
		if (!value[0] && keys[i].default_value)
			value = keys[i].default_value;
		return !keys[i].set(ctx, &keys[i], value);
	}
	return !fail(ctx, ctx->line, "unknown key %s= in [%s]", name, section_names[ctx->sec]);
}

/* Cut an inline "# comment" (whitespace, then '#'); libinih does ';' itself. */
static void strip_hash_comment(char *s)
{
	for (char *p = s; *p; p++) {
		if (*p == '#' && p > s && (p[-1] == ' ' || p[-1] == '\t')) {
			*p = '\0';
			return;
		}
	}
}

/* "[Name]" with nothing but blanks or a comment after it: start that section. */
static int read_header(struct parse_ctx *ctx, char *s)
{
	char *close = strchr(s, ']');
	const char *rest = close ? close + 1 + strspn(close + 1, " \t\r") : NULL;
	int ret;

	if (!rest || (*rest != '\0' && *rest != ';'))
		return fail(ctx, ctx->line, "malformed section header (expected [Name])");
	*close = '\0';
	ret = begin_section(ctx, s + 1);
	*close = ']';	/* libinih parses the header line too */
	return ret;
}

/* libinih's inline comment: ';' after a blank. */
static char *find_inline_comment(char *s)
{
	for (char *p = s; *p; p++)
		if (*p == ';' && p > s && (p[-1] == ' ' || p[-1] == '\t'))
			return p;
	return NULL;
}

static char *trim(char *s)
{
	size_t n;

	s += strspn(s, " \t\r\f\v");
	n = strlen(s);
	while (n && strchr(" \t\r\f\v", s[n - 1]))
		s[--n] = '\0';
	return s;
}

/*
 * A Key=Value line longer than libinih's buffer (a deep cgroup's Path=):
 * keep its value aside as libinih would have cut it, and give libinih
 * "Key=" and a mark that on_key() replaces with it.
 */
static char *read_long_line(struct parse_ctx *ctx, char *str, int num, char *line)
{
	char *sep = line + strcspn(line, "=:"), *comment = find_inline_comment(line);
	char *name, *value;

	if (line[0] == '[') {
		fail(ctx, ctx->line, "section header too long (%.32s...)", line);
		return NULL;
	}
	if (!*sep || (comment && comment < sep)) {
		fail(ctx, ctx->line, "syntax error (expected [Section], Key=Value or a comment)");
		return NULL;
	}
	*sep = '\0';
	name = trim(line);
	value = sep + 1;
	if ((comment = find_inline_comment(value)))
		*comment = '\0';
	value = trim(value);
	if (strlen(name) + strlen("=" LONG_VALUE_MARK) + 2 > (size_t)num) {
		fail(ctx, ctx->line, "key too long (%.32s...)", name);
		return NULL;
	}
	free(ctx->long_value);
	ctx->long_value = strdup(value);
	if (!ctx->long_value) {
		fail_oom(ctx);
		return NULL;
	}
	ctx->long_line = ctx->line;
	snprintf(str, (size_t)num, "%s=" LONG_VALUE_MARK, name);
	return str;
}

/*
 * read_line: hand libinih one line at a time, NUL-terminated, without the
 * newline, indentation or '#' comment. Lines longer than its buffer go
 * through read_long_line(): libinih itself would split them and parse the
 * tail as a line.
 */
static char *read_line(char *str, int num, void *stream)
{
	struct parse_ctx *ctx = stream;
	char *line, *ret;
	const char *nl;
	size_t len, skip;

	if (ctx->err_code || ctx->pos >= ctx->end)
		return NULL;
	nl = memchr(ctx->pos, '\n', (size_t)(ctx->end - ctx->pos));
	len = (nl ? nl : ctx->end) - ctx->pos;
	ctx->line++;
	if (len > CONFIG_MAX_LINE) {
		fail(ctx, ctx->line, "line too long (%zu characters, at most %d)", len,
		     CONFIG_MAX_LINE);
		return NULL;
	}
	if (memchr(ctx->pos, '\0', len)) {
		fail(ctx, ctx->line, "embedded NUL byte");
		return NULL;
	}
	line = len + 2 > (size_t)num ? malloc(len + 1) : str;
	if (!line) {
		fail_oom(ctx);
		return NULL;
	}
	memcpy(line, ctx->pos, len);
	line[len] = '\0';
	ctx->pos += len + (nl != NULL);

	if (ctx->line == 1 && strncmp(line, "\xEF\xBB\xBF", 3) == 0)
		memmove(line, line + 3, len - 2);	/* UTF-8 byte order mark */
	skip = strspn(line, " \t\r\f\v");
	memmove(line, line + skip, strlen(line + skip) + 1);
	if (line[0] != '#' && line[0] != ';')
		strip_hash_comment(line);
	if (line == str)
		return line[0] == '[' && read_header(ctx, line) ? NULL : line;
	ret = strlen(line) + 2 > (size_t)num ? read_long_line(ctx, str, num, line)
					     : strcpy(str, line);
	free(line);
	return ret && ret[0] == '[' && read_header(ctx, ret) ? NULL : ret;
}

static int parse_source(struct parse_ctx *ctx, const struct config_source *src, bool is_dropin)
{
	int ret;

	ctx->file = src->name;
	ctx->is_dropin = is_dropin;
	ctx->pos = src->text;
	ctx->end = src->text + src->len;
	ctx->line = 0;
	ctx->sec = SEC_NONE;
	ctx->sec_line = 0;
	memset(ctx->key_line, 0, sizeof(ctx->key_line));

	ret = ini_parse_stream(read_line, ctx, on_key, ctx);
	if (!ctx->err_code)
		finish_section(ctx);
	/* libinih reports its own syntax errors only as a line number. */
	if (ret > 0 && (!ctx->err_code || ret < ctx->err_line)) {
		ctx->err_code = 0;
		fail(ctx, ret, "syntax error (expected [Section], Key=Value or a comment)");
	} else if (ret < 0 && !ctx->err_code) {
		fail_oom(ctx);
	}
	return ctx->err_code;
}

/* ---- whole configs ---------------------------------------------------- */

static int apply_defaults(struct parse_ctx *ctx)
{
	for (int s = 0; s < SEC_COUNT; s++) {
		const struct key *keys = section_keys[s];

		for (int i = 0; keys && keys[i].name; i++) {
			int ret = keys[i].default_value ?
				  keys[i].set(ctx, &keys[i], keys[i].default_value) : 0;

			if (ret)
				return ret;
		}
	}
	return 0;
}

static void ctx_init(struct parse_ctx *ctx, struct config *cfg)
{
	memset(ctx, 0, sizeof(*ctx));
	memset(cfg, 0, sizeof(*cfg));
	ctx->cfg = cfg;
	ctx->file = CONFIG_BUILTIN_NAME;
}

/* Hand over a finished config, or drop a failed one and report why. */
static int ctx_finish(struct parse_ctx *ctx, struct config *out, char *err, size_t errlen)
{
	int ret = ctx->err_code;

	free(ctx->rule.pattern);
	free(ctx->long_value);
	if (ret) {
		config_free(ctx->cfg);
		if (err && errlen)
			snprintf(err, errlen, "%s", ctx->err);
		return ret;
	}
	*out = *ctx->cfg;
	return 0;
}

static int set_main_file(struct parse_ctx *ctx, const char *name)
{
	return replace_str(ctx, &ctx->cfg->main_file, name);
}

int config_parse(const struct config_source *main_src, const struct config_source *dropins,
		 size_t n_dropins, struct config *out, char *err, size_t errlen)
{
	struct config cfg;
	struct parse_ctx ctx;

	/* Each step stops at the first error, which ctx keeps for ctx_finish(). */
	ctx_init(&ctx, &cfg);
	if (apply_defaults(&ctx) || set_main_file(&ctx, main_src->name) ||
	    parse_source(&ctx, main_src, false))
		return ctx_finish(&ctx, out, err, errlen);
	for (size_t i = 0; i < n_dropins; i++)
		if (parse_source(&ctx, &dropins[i], true))
			break;
	return ctx_finish(&ctx, out, err, errlen);
}

/* ---- files ----------------------------------------------------------- */

static int read_fd(int fd, char **text, size_t *len)
{
	size_t cap = 4096, used = 0;
	char *buf = malloc(cap);

	if (!buf)
		return -ENOMEM;
	for (;;) {
		ssize_t n;

		if (used == cap) {
			char *grown = cap > CONFIG_MAX_FILE_BYTES ? NULL : realloc(buf, cap * 2);

			if (!grown) {
				free(buf);
				return cap > CONFIG_MAX_FILE_BYTES ? -EFBIG : -ENOMEM;
			}
			buf = grown;
			cap *= 2;
		}
		n = read(fd, buf + used, cap - used);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int e = -errno;

			free(buf);
			return e;
		}
		if (n == 0)
			break;
		used += (size_t)n;
	}
	if (used > CONFIG_MAX_FILE_BYTES) {
		free(buf);
		return -EFBIG;
	}
	*text = buf;
	*len = used;
	return 0;
}

/*
 * Read a whole file: 0 or a negative errno (-EFBIG past CONFIG_MAX_FILE_BYTES,
 * -ENOEXEC for a FIFO or socket). O_NONBLOCK: opening a FIFO would wait for
 * a writer, and the daemon with it.
 */
static int read_file(const char *path, char **text, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	struct stat st;
	int ret;

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st))
		ret = -errno;
	else if (S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode))
		ret = -ENOEXEC;
	else
		ret = read_fd(fd, text, len);
	close(fd);
	return ret;
}

static int fail_errno(struct parse_ctx *ctx, const char *path, int neg_errno)
{
	if (ctx->err_code)
		return ctx->err_code;
	if (neg_errno == -ENOMEM)
		return fail_oom(ctx);
	ctx->file = path;
	fail(ctx, 0, "%s", strerror(-neg_errno));
	ctx->err_code = neg_errno;
	return neg_errno;
}

static int load_file(struct parse_ctx *ctx, const char *path, bool is_dropin)
{
	struct config_source src = { .name = path };
	char *text = NULL;
	int ret = read_file(path, &text, &src.len);

	if (ret == -ENOEXEC) {
		ctx->file = path;
		return fail(ctx, 0, "not a regular file");
	}
	if (ret)
		return fail_errno(ctx, path, ret);
	src.text = text;
	ret = parse_source(ctx, &src, is_dropin);
	free(text);
	return ret;
}

static int load_main(struct parse_ctx *ctx, const char *path, bool is_default)
{
	struct config_source builtin = {
		.name = CONFIG_BUILTIN_NAME,
		.text = tcpbufd_default_conf,
		.len = strlen(tcpbufd_default_conf),
	};
	/* A missing /etc/tcpbufd.conf is normal: the packaged defaults apply. */
	bool use_builtin = !path || (is_default && access(path, F_OK) != 0 && errno == ENOENT);
	int ret = set_main_file(ctx, use_builtin ? CONFIG_BUILTIN_NAME : path);

	if (ret)
		return ret;
	if (use_builtin)
		return parse_source(ctx, &builtin, false);
	return load_file(ctx, path, false);
}

static bool is_dropin_name(const char *name)
{
	size_t n = strlen(name);

	/* Hidden files include tcpbufctl's temporaries. */
	return name[0] != '.' && n > 5 && strcmp(name + n - 5, ".conf") == 0;
}

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void free_names(char **names, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
}

/* The drop-in file names of @dir, sorted bytewise (not by locale). */
static int list_dropins(const char *dir, char ***names_out, size_t *n_out)
{
	DIR *d = opendir(dir);
	char **names = NULL;
	size_t n = 0;
	struct dirent *de;
	int ret = 0;

	*names_out = NULL;
	*n_out = 0;
	if (!d)
		return errno == ENOENT ? 0 : -errno;	/* no directory, no drop-ins */
	while ((errno = 0, de = readdir(d))) {
		char **grown;

		if (!is_dropin_name(de->d_name))
			continue;
		grown = realloc(names, (n + 1) * sizeof(*names));
		if (!grown || !(grown[n] = strdup(de->d_name))) {
			names = grown ? grown : names;
			ret = -ENOMEM;
			break;
		}
		names = grown;
		n++;
	}
	if (!ret && errno)
		ret = -errno;
	closedir(d);
	if (ret) {
		free_names(names, n);
		return ret;
	}
	qsort(names, n, sizeof(*names), cmp_names);
	*names_out = names;
	*n_out = n;
	return 0;
}

static int load_dropins(struct parse_ctx *ctx)
{
	const char *dir = ctx->cfg->dropin_dir;
	char **names, path[PATH_MAX];
	size_t n;
	int ret = list_dropins(dir, &names, &n);

	if (ret)
		return fail_errno(ctx, dir, ret);
	for (size_t i = 0; !ret && i < n; i++) {
		if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, names[i]) >= sizeof(path))
			ret = fail_errno(ctx, names[i], -ENAMETOOLONG);
		else
			ret = load_file(ctx, path, true);
	}
	free_names(names, n);
	return ret;
}

int config_load(const char *main_path, bool main_is_default, struct config *out,
		char *err, size_t errlen)
{
	struct config cfg;
	struct parse_ctx ctx;

	/* Each step stops at the first error, which ctx keeps for ctx_finish(). */
	ctx_init(&ctx, &cfg);
	if (!apply_defaults(&ctx) && !load_main(&ctx, main_path, main_is_default))
		load_dropins(&ctx);
	return ctx_finish(&ctx, out, err, errlen);
}

void config_free(struct config *c)
{
	if (!c)
		return;
	free(c->pin_path);
	free(c->socket_path);
	free(c->dropin_dir);
	free(c->state_dir);
	free(c->runtime_dir);
	free(c->scope);
	free(c->mode);
	free(c->socket_group);
	free(c->admin_group);
	free(c->main_file);
	for (size_t i = 0; i < c->n_rules; i++) {
		free(c->rules[i].pattern);
		free(c->rules[i].file);
	}
	free(c->rules);
	memset(c, 0, sizeof(*c));
}

/* ---- lookups ---------------------------------------------------------- */

const struct cgroup_rule *config_match(const struct config *c, const char *cgroup_rel_path)
{
	char path[PATH_MAX];

	if (!c || !cgroup_rel_path || cgroup_path_normalize(cgroup_rel_path, path, sizeof(path)))
		return NULL;
	for (size_t i = 0; i < c->n_rules; i++)
		if (!c->rules[i].is_glob && fnmatch(c->rules[i].pattern, path, FNM_PATHNAME) == 0)
			return &c->rules[i];
	for (size_t i = 0; i < c->n_rules; i++)
		if (c->rules[i].is_glob && fnmatch(c->rules[i].pattern, path, FNM_PATHNAME) == 0)
			return &c->rules[i];
	return NULL;
}

/* Defaults follow an explicit Max (the real hard stop) rather than Limit
 * (tcpbuf_thresholds_of(), tcpbuf_policy.h, says why these ratios). */
void rule_thresholds(const struct cgroup_rule *r, uint64_t *min, uint64_t *pressure,
		     uint64_t *max)
{
	uint64_t ceiling = r->max_pages ? r->max_pages : r->limit_pages;
	struct tcpbuf_thresholds t = tcpbuf_thresholds_of(ceiling, r->pressure_pages, r->min_pages);

	*min = t.min;
	*pressure = t.pressure;
	*max = t.max;
}
