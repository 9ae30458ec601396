// SPDX-License-Identifier: GPL-2.0
/*
 * tcpbufctl: the command-line client of tcpbufd. It checks the command
 * line with the daemon's own parser (so usage errors never need a daemon),
 * sends the words over the control socket, and relays the answer: the
 * body on stdout, or errors on stderr, and the daemon's exit status.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include "request.h"
#include "top.h"

#ifndef TCPBUFD_VERSION
#define TCPBUFD_VERSION "0.1.0"
#endif

#define PROG			"tcpbufctl"
#define DEFAULT_SOCKET		"/run/tcpbufd/control.sock"
/* A reload walks every cgroup; a minute without a word means the daemon is stuck. */
#define REPLY_TIMEOUT_S		60
/* An error body is one line; more than this is not worth relaying. */
#define ERROR_BODY_MAX		4096

enum exit_code { EXIT_DONE = 0, EXIT_FAILED = 1, EXIT_USAGE = 2 };

struct command_help {
	const char *name;
	const char *summary;	/* the line in tcpbufctl --help */
	const char *details;	/* COMMAND --help */
};

static const struct command_help helps[] = {
	{ "status", "usage and limits, one row per tracked cgroup",
	  "Show TCP buffer usage and limits of the tracked cgroups, or of the given\n"
	  "cgroups and their descendants. Usage of a cgroup includes its descendants,\n"
	  "as memcg counts it. --json prints one JSON object instead of a table.\n" },
	{ "set-limit", "the administrator's ceiling; persisted under /etc/tcpbufd.d/",
	  "Set the administrator's ceiling of CGROUP to SIZE. It is written to a\n"
	  "drop-in in tcpbufd's DropInDir (/etc/tcpbufd.d/50-tcpbufctl-*.conf), so it\n"
	  "survives restarts, and applies at once.\n" },
	{ "set", "the container's three thresholds, each at most the ceiling",
	  "Set the thresholds of CGROUP, each at most its ceiling, with\n"
	  "MIN <= PRESSURE <= MAX:\n"
	  "  MAX       usage never passes this;\n"
	  "  PRESSURE  from here the cgroup's sockets are under memory pressure;\n"
	  "  MIN       pressure ends when usage falls below this.\n"
	  "A container may set its own; they are kept across restarts of tcpbufd.\n" },
	{ "unset", "remove limits and thresholds",
	  "Remove the thresholds set for CGROUP, and for the administrator also the\n"
	  "ceiling set with set-limit.\n" },
	{ "reload", "re-read the config files",
	  "Re-read the main config file and the drop-ins, all or nothing: on an\n"
	  "error the running configuration stays and the error names file and line.\n" },
	{ "metrics", "counters for monitoring",
	  "Print tcpbufd's counters for monitoring systems.\n" },
	{ "top", "live view of the cgroups nearest their limits", TOP_HELP },
};

#define N_HELPS (sizeof(helps) / sizeof(helps[0]))

static const char common_help[] =
	"CGROUP is a path relative to the cgroup v2 mount (/system.slice/web.service)\n"
	"or an absolute path below the mount.\n"
	"SIZE, MIN, PRESSURE and MAX: a plain integer counts 4 KiB pages, as in\n"
	"net.ipv4.tcp_mem; with a suffix B, K, M or G (also KiB, MiB, GiB) it is bytes,\n"
	"rounded up to whole pages.\n"
	"Exit status: 0 done, 1 refused or failed, 2 usage error.\n";

/* top runs here, not in the daemon: its parser does not know it. */
static const char *cmd_usage(const struct command_help *h)
{
	return strcmp(h->name, "top") ? request_cmd_usage(h->name) : TOP_USAGE;
}

static void print_help(void)
{
	printf("Usage: %s [--socket PATH] COMMAND [ARGS]\n\nCommands:\n", PROG);
	for (size_t i = 0; i < N_HELPS; i++)
		printf("  %-32s %s\n", cmd_usage(&helps[i]), helps[i].summary);
	printf("\nOptions:\n"
	       "  --socket PATH  tcpbufd's control socket (default %s)\n"
	       "  -h, --help     this help; COMMAND --help for one command\n"
	       "  --version      print the version\n\n%s",
	       DEFAULT_SOCKET, common_help);
}

static const struct command_help *find_help(const char *name)
{
	for (size_t i = 0; i < N_HELPS; i++)
		if (strcmp(helps[i].name, name) == 0)
			return &helps[i];
	return NULL;
}

static void print_command_help(const struct command_help *h)
{
	printf("Usage: %s [--socket PATH] %s\n\n%s\n%s", PROG, cmd_usage(h),
	       h->details, common_help);
}

static int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* One line on stderr, exit status 2, as for usage errors the daemon finds. */
static int usage_error(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", PROG);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return EXIT_USAGE;
}

/* ---- command line ------------------------------------------------------ */

struct cmdline {
	const char *socket;
	bool help, version;
	int argc;		/* the command and its arguments, options removed */
	char **argv;
};

/*
 * Options may come before or after the command: --socket and --help are
 * taken out wherever they are; every other word is the command's. Returns
 * 0 or an exit code.
 */
static int parse_cmdline(int argc, char **argv, struct cmdline *cl)
{
	cl->socket = DEFAULT_SOCKET;
	cl->argv = calloc((size_t)argc, sizeof(*cl->argv));
	if (!cl->argv) {
		fprintf(stderr, "%s: out of memory\n", PROG);
		return EXIT_FAILED;
	}
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (strcmp(a, "--socket") == 0) {
			if (++i == argc)
				return usage_error("%s needs a PATH", a);
			cl->socket = argv[i];
		} else if (strncmp(a, "--socket=", 9) == 0) {
			cl->socket = a + 9;
		} else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
			cl->help = true;
		} else if (strcmp(a, "--version") == 0 && cl->argc == 0) {
			cl->version = true;
		} else if (a[0] == '-' && cl->argc == 0) {
			return usage_error("unknown option '%s' (see %s --help)", a, PROG);
		} else {
			cl->argv[cl->argc++] = argv[i];	/* the daemon's parser judges the rest */
		}
	}
	if (!cl->socket[0])
		return usage_error("--socket needs a PATH");
	return 0;
}

/* --help, --version and "help [COMMAND]": answered without the daemon. */
static bool answer_locally(const struct cmdline *cl, int *code)
{
	const struct command_help *h = NULL;
	bool help_cmd = cl->argc > 0 && strcmp(cl->argv[0], "help") == 0;

	if (!cl->help && !cl->version && !help_cmd)
		return false;
	*code = EXIT_DONE;
	if (cl->version && !cl->help) {
		printf("%s %s\n", PROG, TCPBUFD_VERSION);
		return true;
	}
	if (cl->argc > (help_cmd ? 1 : 0)) {
		const char *name = cl->argv[help_cmd ? 1 : 0];

		h = find_help(name);
		if (!h) {
			*code = usage_error("unknown command '%s' (see %s --help)", name, PROG);
			return true;
		}
	}
	if (h)
		print_command_help(h);
	else
		print_help();
	return true;
}

/* Encode, then check with the daemon's parser: a usage error costs no round trip. */
static int build_request(const struct cmdline *cl, char *buf, size_t len, size_t *out_len)
{
	struct request req;
	char err[512];
	int n, ret;

	if (cl->argc == 0)
		return usage_error("no command given (see %s --help)", PROG);
	n = request_encode(cl->argc, cl->argv, buf, len);
	if (n == -EINVAL)
		return usage_error("arguments cannot contain a newline");
	if (n < 0)
		return usage_error("arguments too long (more than %d bytes)", REQUEST_MAX_BYTES);
	ret = request_parse(buf, (size_t)n, &req, err, sizeof(err));
	request_free(&req);
	if (ret == -ENOMEM) {
		fprintf(stderr, "%s: out of memory\n", PROG);
		return EXIT_FAILED;
	}
	if (ret)
		return usage_error("%s", err);
	*out_len = (size_t)n;
	return 0;
}

/* ---- talking to the daemon ---------------------------------------------- */

static int connect_daemon(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct timeval tv = { .tv_sec = REPLY_TIMEOUT_S };
	int fd, err;

	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	memcpy(sa.sun_path, path, strlen(path) + 1);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) != 0 ||
	    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) != 0 ||
	    connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
		err = -errno;
		close(fd);
		return err;
	}
	return fd;
}

static int send_request(int fd, const char *buf, size_t len)
{
	while (len) {
		/* MSG_NOSIGNAL: a daemon that went away is an error, not a SIGPIPE. */
		ssize_t n = send(fd, buf, len, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		buf += n;
		len -= (size_t)n;
	}
	/* The end of the request: the daemon reads until it sees this. */
	return shutdown(fd, SHUT_WR) ? -errno : 0;
}

static ssize_t recv_some(int fd, char *buf, size_t len)
{
	ssize_t n;

	do
		n = recv(fd, buf, len, 0);
	while (n < 0 && errno == EINTR);
	return n < 0 ? -errno : n;
}

/* Print an error body line by line, each as "tcpbufctl: why". */
static void print_error_body(const char *body, size_t len)
{
	while (len) {
		const char *nl = memchr(body, '\n', len);
		size_t n = nl ? (size_t)(nl - body) : len;

		if (n)
			fprintf(stderr, "%s: %.*s\n", PROG, (int)n, body);
		body += n + (nl != NULL);
		len -= n + (nl != NULL);
	}
}

struct reply {
	int code;		/* the status digit, -1 until read */
	char head[32];		/* the status line so far: "CODE LENGTH" */
	size_t head_len;
	unsigned long long body_len;	/* what the status line announced */
	unsigned long long body_got;
	char err_body[ERROR_BODY_MAX];
	size_t err_len;
	FILE *out;		/* where the body of an answer goes */
};

/* "CODE LENGTH": the exit status and the bytes of body that follow. */
static int parse_status_line(struct reply *r)
{
	char *end;

	r->head[r->head_len] = '\0';
	if (r->head_len < 3 || r->head[0] < '0' || r->head[0] > '2' || r->head[1] != ' ' ||
	    r->head[2] < '0' || r->head[2] > '9')
		return -1;
	errno = 0;
	r->body_len = strtoull(r->head + 2, &end, 10);
	if (errno || *end)
		return -1;
	r->code = r->head[0] - '0';
	return 0;
}

/* Take the status line off the front of the stream; returns bytes used or -1. */
static ssize_t take_status(struct reply *r, const char *buf, size_t len)
{
	size_t used = 0;

	while (r->code < 0 && used < len) {
		char c = buf[used++];

		if (c != '\n') {
			if (r->head_len == sizeof(r->head) - 1)
				return -1;
			r->head[r->head_len++] = c;
			continue;
		}
		if (parse_status_line(r))
			return -1;
	}
	return (ssize_t)used;
}

/* Output goes to stdout as it arrives: a status of many cgroups can be long. */
static void take_body(struct reply *r, const char *buf, size_t len)
{
	r->body_got += len;
	if (r->code == EXIT_DONE) {
		fwrite(buf, 1, len, r->out);
		return;
	}
	if (len > sizeof(r->err_body) - r->err_len)
		len = sizeof(r->err_body) - r->err_len;
	memcpy(r->err_body + r->err_len, buf, len);
	r->err_len += len;
}

static int fail_io(const char *what, const char *path, int neg_errno)
{
	if (neg_errno == -EAGAIN || neg_errno == -EWOULDBLOCK)
		fprintf(stderr, "%s: no answer from tcpbufd at %s within %d s\n", PROG, path,
			REPLY_TIMEOUT_S);
	else
		fprintf(stderr, "%s: %s tcpbufd at %s: %s\n", PROG, what, path,
			strerror(-neg_errno));
	return EXIT_FAILED;
}

static int read_reply(int fd, const char *path, FILE *out)
{
	struct reply r = { .code = -1, .out = out };
	char buf[65536];

	for (;;) {
		ssize_t n = recv_some(fd, buf, sizeof(buf)), used;

		if (n < 0)
			return fail_io("lost the connection to", path, (int)n);
		if (n == 0)
			break;
		used = take_status(&r, buf, (size_t)n);
		if (used < 0) {
			fprintf(stderr, "%s: unexpected answer from tcpbufd at %s\n", PROG, path);
			return EXIT_FAILED;
		}
		if (r.code >= 0)
			take_body(&r, buf + used, (size_t)(n - used));
		if (r.code >= 0 && r.body_got > r.body_len) {
			fprintf(stderr, "%s: tcpbufd at %s sent more than the %llu bytes it announced\n",
				PROG, path, r.body_len);
			return EXIT_FAILED;
		}
	}
	if (r.code < 0) {
		fprintf(stderr, "%s: tcpbufd at %s closed the connection without an answer\n",
			PROG, path);
		return EXIT_FAILED;
	}
	/* What was printed is not the answer: never let a script take it for one. */
	if (r.body_got < r.body_len) {
		fprintf(stderr, "%s: the answer of tcpbufd at %s was cut short: %llu of %llu bytes\n",
			PROG, path, r.body_got, r.body_len);
		return EXIT_FAILED;
	}
	if (r.code != EXIT_DONE) {
		print_error_body(r.err_body, r.err_len);
		if (r.err_len == 0)
			fprintf(stderr, "%s: tcpbufd refused the request without saying why\n", PROG);
	}
	return r.code;
}

static int run(const char *path, const char *req, size_t len, FILE *out)
{
	int fd = connect_daemon(path), code, ret;

	if (fd < 0)
		return fail_io("cannot reach", path, fd);
	ret = send_request(fd, req, len);
	code = ret ? fail_io("lost the connection to", path, ret) : read_reply(fd, path, out);
	close(fd);
	return code;
}

int tcpbufctl_call(const char *socket, int argc, char **argv, FILE *out)
{
	static char req[REQUEST_MAX_BYTES];
	struct cmdline cl = { .socket = socket, .argc = argc, .argv = argv };
	size_t len = 0;
	int code = build_request(&cl, req, sizeof(req), &len);

	return code ? code : run(socket, req, len, out);
}

int main(int argc, char **argv)
{
	struct cmdline cl = { 0 };
	int code = parse_cmdline(argc, argv, &cl);

	if (!code && !answer_locally(&cl, &code)) {
		if (cl.argc && !strcmp(cl.argv[0], "top"))
			code = top_main(cl.socket, cl.argc, cl.argv);
		else
			code = tcpbufctl_call(cl.socket, cl.argc, cl.argv, stdout);
	}
	free(cl.argv);
	/* Output that did not reach its reader is a failure too (a full disk, a closed pipe). */
	if (fflush(stdout) != 0 || ferror(stdout)) {
		fprintf(stderr, "%s: cannot write the output: %s\n", PROG, strerror(errno));
		return EXIT_FAILED;
	}
	return code;
}
