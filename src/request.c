// SPDX-License-Identifier: GPL-2.0
/*
 * Control-protocol requests: split the words a client sent, check them
 * against the command table, and fill a struct request. Pure by design:
 * the daemon runs it on untrusted bytes and libFuzzer runs it on garbage.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "errmsg.h"
#include "request.h"
#include "size.h"

/* Longest excerpt of a client's word quoted back in an error message. */
#define QUOTE_MAX	48

/* A request split into words; argv points into one heap copy of the message. */
struct words {
	char *copy;
	char **argv;
	size_t argc;
};

struct command {
	const char *name;
	enum request_cmd cmd;
	int (*parse)(const struct command *c, struct words *w, struct request *req,
		     char *err, size_t errlen);
	const char *usage;
};

/*
 * Copy a client's word for an error message: bounded, and with control
 * characters replaced so the reply stays one line.
 */
static const char *quote(const char *word, char buf[QUOTE_MAX + 4])
{
	size_t i;

	for (i = 0; word[i] && i < QUOTE_MAX; i++)
		buf[i] = ((unsigned char)word[i] < 0x20 || word[i] == 0x7f) ? '?' : word[i];
	if (word[i])
		buf[i++] = '.', buf[i++] = '.', buf[i++] = '.';
	buf[i] = '\0';
	return buf;
}

static int check_cgroup(const char *cmd, const char *path, char *err, size_t errlen)
{
	char q[QUOTE_MAX + 4];
	size_t len = strlen(path);

	if (len == 0) {
		set_err(err, errlen, "%s: CGROUP: empty path", cmd);
		return -EINVAL;
	}
	if (path[0] != '/') {
		set_err(err, errlen, "%s: CGROUP: must start with '/' ('%s')", cmd, quote(path, q));
		return -EINVAL;
	}
	if (len >= PATH_MAX) {
		set_err(err, errlen, "%s: CGROUP: path too long (%zu bytes, max %d)",
			cmd, len, PATH_MAX - 1);
		return -EINVAL;
	}
	/* ".." could climb out of the cgroup mount or the configured scope. */
	for (const char *p = path; (p = strstr(p, "..")); p += 2) {
		if (p[-1] == '/' && (p[2] == '/' || p[2] == '\0')) {
			set_err(err, errlen, "%s: CGROUP: '..' is not allowed ('%s')",
				cmd, quote(path, q));
			return -EINVAL;
		}
	}
	return 0;
}

static int add_cgroup(const char *cmd, const char *path, struct request *req,
		      char *err, size_t errlen)
{
	char **grown;
	int ret = check_cgroup(cmd, path, err, errlen);

	if (ret)
		return ret;
	grown = realloc(req->cgroups, (req->n_cgroups + 1) * sizeof(*grown));
	if (!grown)
		goto nomem;
	req->cgroups = grown;
	req->cgroups[req->n_cgroups] = strdup(path);
	if (!req->cgroups[req->n_cgroups])
		goto nomem;
	req->n_cgroups++;
	return 0;
nomem:
	set_err(err, errlen, "out of memory");
	return -ENOMEM;
}

/* A size that is at least one page: zero would mean "unset" in the maps. */
static int parse_size_arg(const char *cmd, const char *field, const char *word,
			  uint64_t *pages, char *err, size_t errlen)
{
	char q[QUOTE_MAX + 4];
	int ret = size_parse_pages(word, pages);

	if (ret == -ERANGE) {
		set_err(err, errlen, "%s: %s: size out of range '%s'", cmd, field, quote(word, q));
		return -EINVAL;
	}
	if (ret) {
		set_err(err, errlen, "%s: %s: bad size '%s'", cmd, field, quote(word, q));
		return -EINVAL;
	}
	if (*pages == 0) {
		set_err(err, errlen, "%s: %s: must be at least 1 page", cmd, field);
		return -EINVAL;
	}
	return 0;
}

static int expect_args(const struct command *c, const struct words *w, size_t n,
		       char *err, size_t errlen)
{
	if (w->argc - 1 == n)
		return 0;
	set_err(err, errlen, "%s: %s (usage: %s)", c->name,
		n == 0 ? "takes no arguments" : "wrong number of arguments", c->usage);
	return -EINVAL;
}

static int parse_status(const struct command *c, struct words *w, struct request *req,
			char *err, size_t errlen)
{
	char q[QUOTE_MAX + 4];

	for (size_t i = 1; i < w->argc; i++) {
		const char *word = w->argv[i];
		int ret;

		if (strcmp(word, "--json") == 0) {
			req->json = true;
			continue;
		}
		if (word[0] == '-') {
			set_err(err, errlen, "%s: unknown option '%s'", c->name, quote(word, q));
			return -EINVAL;
		}
		ret = add_cgroup(c->name, word, req, err, errlen);
		if (ret)
			return ret;
	}
	return 0;
}

static int parse_one_cgroup(const struct command *c, struct words *w, struct request *req,
			    char *err, size_t errlen);

/* Take "--runtime" out of the words wherever it stands after the command. */
static void take_runtime_flag(struct words *w, struct request *req)
{
	size_t kept = 1;

	for (size_t i = 1; i < w->argc; i++) {
		if (strcmp(w->argv[i], "--runtime") == 0)
			req->runtime = true;
		else
			w->argv[kept++] = w->argv[i];
	}
	w->argc = kept;
}

/* MIN <= PRESSURE <= MAX, as the kernel's tcp_mem has them; 0 is a default, not compared. */
static int check_order(const char *cmd, const struct request *req, char *err, size_t errlen)
{
	static const char *const names[] = { "MIN", "PRESSURE", "MAX" };
	const uint64_t v[] = { req->min_pages, req->pressure_pages, req->max_pages };

	for (int a = 0; a < 2; a++)
		for (int b = a + 1; b < 3; b++)
			if (v[a] && v[b] && v[a] > v[b]) {
				set_err(err, errlen, "%s: %s (%llu pages) is above %s (%llu pages)",
					cmd, names[a], (unsigned long long)v[a], names[b],
					(unsigned long long)v[b]);
				return -EINVAL;
			}
	return 0;
}

/* A threshold; "-" leaves it to the defaults under the ceiling where @optional. */
static int parse_threshold(const char *cmd, const char *field, const char *word, bool optional,
			   uint64_t *pages, char *err, size_t errlen)
{
	if (optional && strcmp(word, "-") == 0) {
		*pages = 0;
		return 0;
	}
	return parse_size_arg(cmd, field, word, pages, err, errlen);
}

static int parse_thresholds(const char *cmd, char **words, bool optional, struct request *req,
			    char *err, size_t errlen)
{
	int ret = parse_threshold(cmd, "MIN", words[0], optional, &req->min_pages, err, errlen);

	if (!ret)
		ret = parse_threshold(cmd, "PRESSURE", words[1], optional, &req->pressure_pages,
				      err, errlen);
	if (!ret)
		ret = parse_threshold(cmd, "MAX", words[2], optional, &req->max_pages, err, errlen);
	return ret ? ret : check_order(cmd, req, err, errlen);
}

/* set-limit [--runtime] CGROUP SIZE; a runtime limit may bring its thresholds ("-": default). */
static int parse_set_limit(const struct command *c, struct words *w, struct request *req,
			   char *err, size_t errlen)
{
	int ret;

	take_runtime_flag(w, req);
	ret = req->runtime && w->argc == 6 ? 0 : expect_args(c, w, 2, err, errlen);
	if (!ret)
		ret = add_cgroup(c->name, w->argv[1], req, err, errlen);
	if (!ret)
		ret = parse_size_arg(c->name, "SIZE", w->argv[2], &req->limit_pages, err, errlen);
	if (!ret && w->argc == 6)
		ret = parse_thresholds(c->name, &w->argv[3], true, req, err, errlen);
	if (!ret && req->max_pages > req->limit_pages) {
		set_err(err, errlen, "%s: MAX (%llu pages) is above SIZE (%llu pages)", c->name,
			(unsigned long long)req->max_pages, (unsigned long long)req->limit_pages);
		return -EINVAL;
	}
	return ret;
}

static int parse_set(const struct command *c, struct words *w, struct request *req,
		     char *err, size_t errlen)
{
	int ret = expect_args(c, w, 4, err, errlen);

	if (!ret)
		ret = add_cgroup(c->name, w->argv[1], req, err, errlen);
	return ret ? ret : parse_thresholds(c->name, &w->argv[2], false, req, err, errlen);
}

/* unset [--runtime] CGROUP */
static int parse_unset(const struct command *c, struct words *w, struct request *req,
		       char *err, size_t errlen)
{
	take_runtime_flag(w, req);
	return parse_one_cgroup(c, w, req, err, errlen);
}

static int parse_one_cgroup(const struct command *c, struct words *w, struct request *req,
			    char *err, size_t errlen)
{
	int ret = expect_args(c, w, 1, err, errlen);

	return ret ? ret : add_cgroup(c->name, w->argv[1], req, err, errlen);
}

static int parse_no_args(const struct command *c, struct words *w, struct request *req,
			 char *err, size_t errlen)
{
	(void)req;
	return expect_args(c, w, 0, err, errlen);
}

static const struct command commands[] = {
	{ "status", REQ_STATUS, parse_status,
	  "status [CGROUP...] [--json]" },
	{ "set-limit", REQ_SET_LIMIT, parse_set_limit,
	  "set-limit [--runtime] CGROUP SIZE [MIN PRESSURE MAX]" },
	{ "set", REQ_SET, parse_set,
	  "set CGROUP MIN PRESSURE MAX" },
	{ "unset", REQ_UNSET, parse_unset,
	  "unset [--runtime] CGROUP" },
	{ "reload", REQ_RELOAD, parse_no_args,
	  "reload" },
	{ "metrics", REQ_METRICS, parse_no_args,
	  "metrics" },
};

#define N_COMMANDS (sizeof(commands) / sizeof(commands[0]))

static const struct command *find_command(const char *name)
{
	for (size_t i = 0; i < N_COMMANDS; i++)
		if (strcmp(commands[i].name, name) == 0)
			return &commands[i];
	return NULL;
}

/* Split "a\nb\n" into words; the caller made sure the last one ends in '\n'. */
static int split_words(const char *buf, size_t len, struct words *w)
{
	size_t n = 0;

	w->copy = malloc(len + 1);
	if (!w->copy)
		return -ENOMEM;
	memcpy(w->copy, buf, len);
	w->copy[len] = '\0';
	for (size_t i = 0; i < len; i++)
		n += buf[i] == '\n';
	w->argv = calloc(n, sizeof(*w->argv));
	if (!w->argv)
		return -ENOMEM;
	for (char *p = w->copy; w->argc < n; p++) {
		w->argv[w->argc++] = p;
		p += strcspn(p, "\n");
		*p = '\0';
	}
	return 0;
}

static void words_free(struct words *w)
{
	free(w->argv);
	free(w->copy);
}

static int parse_words(struct words *w, struct request *req, char *err, size_t errlen)
{
	char q[QUOTE_MAX + 4];
	const struct command *c = find_command(w->argv[0]);

	if (!c) {
		set_err(err, errlen, "unknown command '%s'", quote(w->argv[0], q));
		return -EINVAL;
	}
	req->cmd = c->cmd;
	return c->parse(c, w, req, err, errlen);
}

int request_parse(const char *buf, size_t len, struct request *req,
		  char *err, size_t errlen)
{
	struct words w = { 0 };
	int ret;

	memset(req, 0, sizeof(*req));
	if (err && errlen)
		err[0] = '\0';
	if (len > REQUEST_MAX_BYTES) {
		set_err(err, errlen, "message too large (more than %d bytes)", REQUEST_MAX_BYTES);
		return -EINVAL;
	}
	if (len == 0 || !buf) {
		set_err(err, errlen, "empty request");
		return -EINVAL;
	}
	if (memchr(buf, '\0', len)) {
		set_err(err, errlen, "embedded NUL");
		return -EINVAL;
	}
	/* A client cut off mid-word must not run what it did send ("unset\n/a" of "/ab"). */
	if (buf[len - 1] != '\n') {
		set_err(err, errlen, "incomplete request: no '\\n' after the last word");
		return -EINVAL;
	}
	ret = split_words(buf, len, &w);
	if (ret)
		set_err(err, errlen, "out of memory");
	else
		ret = parse_words(&w, req, err, errlen);
	words_free(&w);
	if (ret)
		request_free(req);
	return ret;
}

void request_free(struct request *req)
{
	if (!req)
		return;
	for (size_t i = 0; i < req->n_cgroups; i++)
		free(req->cgroups[i]);
	free(req->cgroups);
	memset(req, 0, sizeof(*req));
}

int request_encode(int argc, char **argv, char *buf, size_t len)
{
	size_t used = 0;

	if (len > REQUEST_MAX_BYTES)
		len = REQUEST_MAX_BYTES;
	for (int i = 0; i < argc; i++) {
		size_t n = strlen(argv[i]);

		if (memchr(argv[i], '\n', n))
			return -EINVAL;
		if (n + 1 > len - used)
			return -EMSGSIZE;
		memcpy(buf + used, argv[i], n);
		used += n;
		buf[used++] = '\n';
	}
	return (int)used;
}

const char *request_cmd_name(enum request_cmd cmd)
{
	for (size_t i = 0; i < N_COMMANDS; i++)
		if (commands[i].cmd == cmd)
			return commands[i].name;
	return "unknown";
}

const char *request_cmd_usage(const char *name)
{
	const struct command *c = find_command(name);

	return c ? c->usage : NULL;
}
