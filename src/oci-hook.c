// SPDX-License-Identifier: GPL-2.0
/*
 * tcpbufd-oci-hook: an OCI runtime hook that turns a container's spec into a
 * runtime limit (src/runtime_limits.h). At createRuntime (or prestart) it
 * reads the state on stdin (pid, annotations, bundle) and the bundle's
 * config.json (linux.resources.memory.kernelTCP), finds the container's
 * cgroup in /proc/PID/cgroup, and asks tcpbufd for `set-limit --runtime`.
 * At poststop it asks for `unset --runtime` (tcpbufd drops the limit with
 * the cgroup anyway; this covers runtimes that keep the cgroup).
 *
 * Fail closed (exit 1, the runtime does not start the container): a
 * malformed annotation, a spec or state that cannot be read, no cgroup, or
 * tcpbufd refusing the limit. Fail open (exit 0, a warning on stderr and in
 * syslog): tcpbufd not running, unless --require-daemon. Poststop never
 * fails: the container is gone, there is nothing left to protect.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <syslog.h>
#include <unistd.h>
#include <json-c/json.h>
#include "oci_limits.h"
#include "request.h"

#define PROG			"tcpbufd-oci-hook"
#define DEFAULT_SOCKET		"/run/tcpbufd/control.sock"
#define DEFAULT_STATE_DIR	"/run/tcpbufd/oci"
#define JSON_MAX_BYTES		(4 << 20)	/* a config.json is a few KiB */
#define REPLY_TIMEOUT_S		10
#define MAX_ANNOTATIONS		256

struct hook_opts {
	const char *socket, *state_dir, *stage;
	bool require_daemon;
};

static const char *container_id = "?";

static void say(int prio, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* stderr reaches the runtime's error on failure; syslog also keeps the warnings. */
static void say(int prio, const char *fmt, ...)
{
	char line[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	fprintf(stderr, "%s: container %s: %s\n", PROG, container_id, line);
	syslog(prio, "container %s: %s", container_id, line);
}

static char *read_fd(int fd, size_t max, size_t *len)
{
	size_t used = 0, cap = 4096;
	char *buf = malloc(cap + 1);

	while (buf) {
		ssize_t n;

		if (used == cap) {
			char *p = cap >= max ? NULL : realloc(buf, (cap *= 2) + 1);

			if (!p) {
				free(buf);
				errno = EFBIG;
				return NULL;
			}
			buf = p;
		}
		n = read(fd, buf + used, cap - used);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			free(buf);
			return NULL;
		}
		if (n == 0)
			break;
		used += (size_t)n;
	}
	if (buf) {
		buf[used] = '\0';
		*len = used;
	}
	return buf;
}

static json_object *parse_json(const char *what, int fd)
{
	enum json_tokener_error jerr;
	json_object *o;
	size_t len;
	char *text = read_fd(fd, JSON_MAX_BYTES, &len);

	if (!text) {
		say(LOG_ERR, "cannot read %s: %s", what, strerror(errno));
		return NULL;
	}
	o = json_tokener_parse_verbose(text, &jerr);
	free(text);
	if (!o || !json_object_is_type(o, json_type_object)) {
		say(LOG_ERR, "%s: not a JSON object%s%s", what, o ? "" : ": ",
		    o ? "" : json_tokener_error_desc(jerr));
		json_object_put(o);
		return NULL;
	}
	return o;
}

static const char *get_string(json_object *o, const char *key)
{
	json_object *v;

	return json_object_object_get_ex(o, key, &v) && json_object_is_type(v, json_type_string)
		       ? json_object_get_string(v) : NULL;
}

/* linux.resources.memory.kernelTCP, if the spec has it. */
static bool kernel_tcp(json_object *spec, int64_t *bytes)
{
	json_object *linux_, *res, *mem, *v;

	if (!json_object_object_get_ex(spec, "linux", &linux_) ||
	    !json_object_object_get_ex(linux_, "resources", &res) ||
	    !json_object_object_get_ex(res, "memory", &mem) ||
	    !json_object_object_get_ex(mem, "kernelTCP", &v) ||
	    !json_object_is_type(v, json_type_int))
		return false;
	*bytes = json_object_get_int64(v);
	return true;
}

/* The string annotations of @o's "annotations" object; -1 if there are too many. */
static int annotations(json_object *o, struct oci_annotation *a, size_t max)
{
	json_object *obj;
	size_t n = 0;

	if (!json_object_object_get_ex(o, "annotations", &obj) ||
	    !json_object_is_type(obj, json_type_object))
		return 0;
	json_object_object_foreach(obj, key, val) {
		if (!json_object_is_type(val, json_type_string))
			continue;
		if (n == max)
			return -1;
		a[n++] = (struct oci_annotation){ key, json_object_get_string(val) };
	}
	return (int)n;
}

/* The v2 cgroup of @pid as this (host) process sees it: the "0::" line. */
static int pid_cgroup(long pid, char *buf, size_t len)
{
	char path[64], line[PATH_MAX + 8];
	int err = -ENOENT;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%ld/cgroup", pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, "0::/", 4))
			continue;
		line[strcspn(line, "\n")] = '\0';
		if (snprintf(buf, len, "%s", line + 3) < (int)len)
			err = 0;
		break;
	}
	fclose(f);
	return err;
}

/* ---- asking tcpbufd ------------------------------------------------------ */

/* Send one request; 0 done, 1 refused (reason in @why), -errno when unreachable. */
static int ask(const char *socket_path, int argc, char **argv, char *why, size_t whylen)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct timeval tv = { .tv_sec = REPLY_TIMEOUT_S };
	char req[REQUEST_MAX_BYTES], *reply, *body;
	int n = request_encode(argc, argv, req, sizeof(req)), fd, code;
	size_t len;

	if (n < 0 || strlen(socket_path) >= sizeof(sa.sun_path)) {
		snprintf(why, whylen, "request or socket path too long");
		return 1;
	}
	memcpy(sa.sun_path, socket_path, strlen(socket_path) + 1);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) ||
	    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) ||
	    connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		code = -errno;
		close(fd);
		return code;
	}
	if (send(fd, req, (size_t)n, MSG_NOSIGNAL) != n || shutdown(fd, SHUT_WR)) {
		snprintf(why, whylen, "lost the connection to tcpbufd: %s", strerror(errno));
		close(fd);
		return 1;
	}
	reply = read_fd(fd, 1 << 20, &len);
	close(fd);
	/* "CODE LENGTH\n" then the body: an error's reason. */
	if (!reply || len < 4 || reply[0] < '0' || reply[0] > '2' || reply[1] != ' ' ||
	    !(body = strchr(reply, '\n'))) {
		snprintf(why, whylen, "no answer from tcpbufd at %s", socket_path);
		free(reply);
		return 1;
	}
	code = reply[0] - '0';
	body++;
	body[strcspn(body, "\n")] = '\0';
	snprintf(why, whylen, "%s", code && *body ? body : "refused without a reason");
	free(reply);
	return code ? 1 : 0;
}

static bool daemon_absent(int r)
{
	return r == -ENOENT || r == -ECONNREFUSED || r == -ENOTDIR;
}

/* ---- what each stage does ---------------------------------------------- */

/* Runtimes' ids are [A-Za-z0-9_+.-]; anything else would not make a safe file name. */
static bool safe_id(const char *id)
{
	if (!id || !*id || *id == '.' || strlen(id) > NAME_MAX - 8)
		return false;
	for (const char *p = id; *p; p++)
		if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_+.-", *p))
			return false;
	return true;
}

/* Where poststop finds the cgroup again: the state at poststop has no pid. */
static int record_write(const struct hook_opts *o, const char *id, const char *cgroup)
{
	char path[PATH_MAX], tmp[PATH_MAX];
	FILE *f;

	if (mkdir(o->state_dir, 0700) && errno != EEXIST)
		return -errno;
	snprintf(path, sizeof(path), "%s/%s", o->state_dir, id);
	snprintf(tmp, sizeof(tmp), "%s/.%s.tmp", o->state_dir, id);
	f = fopen(tmp, "we");
	if (!f)
		return -errno;
	fprintf(f, "%s\n", cgroup);
	if (fclose(f) || rename(tmp, path)) {
		int r = -errno;

		unlink(tmp);
		return r;
	}
	return 0;
}

static int on_create(const struct hook_opts *o, json_object *state)
{
	struct oci_annotation a[MAX_ANNOTATIONS];
	const char *bundle = get_string(state, "bundle");
	char path[PATH_MAX], cgroup[PATH_MAX], why[512], sz[4][32];
	json_object *pid = NULL, *spec;
	struct oci_limits want;
	int64_t ktcp = 0;
	bool has_ktcp;
	int n, fd, r;

	if (!bundle || snprintf(path, sizeof(path), "%s/config.json", bundle) >= (int)sizeof(path)) {
		say(LOG_ERR, "the state names no bundle");
		return 1;
	}
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		say(LOG_ERR, "%s: %s", path, strerror(errno));
		return 1;
	}
	spec = parse_json(path, fd);
	close(fd);
	if (!spec)
		return 1;
	has_ktcp = kernel_tcp(spec, &ktcp);
	/* The state's annotations are the spec's; the spec's serve runtimes that omit them. */
	n = annotations(state, a, MAX_ANNOTATIONS);
	if (n == 0)
		n = annotations(spec, a, MAX_ANNOTATIONS);
	if (n < 0) {
		say(LOG_ERR, "more than %d annotations", MAX_ANNOTATIONS);
		json_object_put(spec);
		return 1;
	}
	r = oci_limits_decide(a, (size_t)n, has_ktcp, ktcp, &want, why, sizeof(why));
	json_object_put(spec);	/* after the decision: @a may point into it */
	if (r) {
		say(LOG_ERR, "%s: the container is not started", why);
		return 1;
	}
	if (!want.wanted)
		return 0;
	if (!json_object_object_get_ex(state, "pid", &pid) || json_object_get_int64(pid) <= 0 ||
	    pid_cgroup((long)json_object_get_int64(pid), cgroup, sizeof(cgroup))) {
		say(LOG_ERR, "cannot find the container's cgroup (pid %s)",
		    pid ? json_object_get_string(pid) : "missing");
		return 1;
	}
	if (!safe_id(container_id) || (r = record_write(o, container_id, cgroup))) {
		say(LOG_ERR, "cannot record the container's cgroup in %s: %s", o->state_dir,
		    safe_id(container_id) ? strerror(-r) : "unusable container id");
		return 1;
	}
	snprintf(sz[0], sizeof(sz[0]), "%llu", (unsigned long long)want.limit_pages);
	for (int i = 1; i < 4; i++) {
		uint64_t v = i == 1 ? want.min_pages : i == 2 ? want.pressure_pages : want.max_pages;

		snprintf(sz[i], sizeof(sz[i]), v ? "%llu" : "-", (unsigned long long)v);
	}
	char *argv[] = { "set-limit", "--runtime", cgroup, sz[0], sz[1], sz[2], sz[3] };
	r = ask(o->socket, 7, argv, why, sizeof(why));
	if (r == 0) {
		syslog(LOG_INFO, "container %s: %s: runtime limit %s pages (from %s)", container_id,
		       cgroup, sz[0], want.from);
		return 0;
	}
	if (r < 0 && daemon_absent(r) && !o->require_daemon) {
		say(LOG_WARNING, "%s: tcpbufd is not running (%s: %s); the container runs without "
		    "its TCP buffer limit of %s pages", cgroup, o->socket, strerror(-r), sz[0]);
		return 0;
	}
	say(LOG_ERR, "%s: tcpbufd did not set the limit of %s pages: %s; the container is not "
	    "started", cgroup, sz[0], r < 0 ? strerror(-r) : why);
	return 1;
}

static int on_stop(const struct hook_opts *o)
{
	char path[PATH_MAX], cgroup[PATH_MAX] = "", why[512];
	FILE *f;
	int r;

	if (!safe_id(container_id))
		return 0;
	snprintf(path, sizeof(path), "%s/%s", o->state_dir, container_id);
	f = fopen(path, "re");
	if (!f)
		return 0;	/* no limit was asked for */
	if (fgets(cgroup, sizeof(cgroup), f))
		cgroup[strcspn(cgroup, "\n")] = '\0';
	fclose(f);
	if (cgroup[0] == '/') {
		char *argv[] = { "unset", "--runtime", cgroup };

		r = ask(o->socket, 3, argv, why, sizeof(why));
		if (r && !daemon_absent(r))
			say(LOG_WARNING, "%s: tcpbufd did not remove the runtime limit: %s", cgroup,
			    r < 0 ? strerror(-r) : why);
	}
	unlink(path);
	return 0;
}

static int usage(void)
{
	fprintf(stderr, "usage: %s [--socket PATH] [--state-dir DIR] [--require-daemon] "
		"[createRuntime|prestart|poststop] < STATE\n", PROG);
	return 2;
}

int main(int argc, char **argv)
{
	struct hook_opts o = { .socket = DEFAULT_SOCKET, .state_dir = DEFAULT_STATE_DIR };
	const char *status;
	json_object *state;
	bool create;
	int r;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--socket") && i + 1 < argc)
			o.socket = argv[++i];
		else if (!strcmp(argv[i], "--state-dir") && i + 1 < argc)
			o.state_dir = argv[++i];
		else if (!strcmp(argv[i], "--require-daemon"))
			o.require_daemon = true;
		else if (!o.stage && argv[i][0] != '-')
			o.stage = argv[i];
		else
			return usage();
	}
	openlog(PROG, LOG_PID, LOG_DAEMON);
	state = parse_json("the OCI state on stdin", STDIN_FILENO);
	if (!state)
		return 1;
	container_id = get_string(state, "id") ? get_string(state, "id") : "?";
	/* The stage from the command line, else from the state's status (one hooks.d file
	 * serves both stages): "creating" at createRuntime, "stopped" at poststop. */
	status = get_string(state, "status");
	if (o.stage)
		create = strcmp(o.stage, "poststop") != 0;
	else if (status && (!strcmp(status, "creating") || !strcmp(status, "created")))
		create = true;
	else if (status && !strcmp(status, "stopped"))
		create = false;
	else {
		say(LOG_ERR, "cannot tell the hook's stage from status \"%s\"", status ? status : "");
		json_object_put(state);
		return 1;
	}
	r = create ? on_create(&o, state) : on_stop(&o);
	json_object_put(state);
	return r;
}
