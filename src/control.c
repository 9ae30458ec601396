// SPDX-License-Identifier: GPL-2.0
#define _GNU_SOURCE
#include <errno.h>
#include <grp.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>
#include "control.h"
#include "log.h"

static int mkdir_parent(const char *path)
{
	char dir[PATH_MAX];
	char *slash;

	if (snprintf(dir, sizeof(dir), "%s", path) >= (int)sizeof(dir))
		return -ENAMETOOLONG;
	slash = strrchr(dir, '/');
	if (!slash || slash == dir)
		return 0;
	*slash = '\0';
	if (mkdir(dir, 0755) && errno != EEXIST)
		return -errno;
	return 0;
}

int control_listen(const char *path, unsigned mode, const char *group)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd, err;

	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	strcpy(sa.sun_path, path);
	err = mkdir_parent(path);
	if (err)
		return err;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	unlink(path); /* a stale socket of a previous run */
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) || listen(fd, 64))
		goto fail;
	if (chmod(path, mode))
		goto fail;
	if (group && *group) {
		struct group *g = getgrnam(group);

		if (!g) {
			errno = ENOENT;
			log_err("%s: unknown SocketGroup '%s'", path, group);
			goto fail;
		}
		if (chown(path, 0, g->gr_gid))
			goto fail;
	}
	return fd;
fail:
	err = -errno;
	close(fd);
	return err;
}

void control_close(int fd, const char *path)
{
	if (fd >= 0)
		close(fd);
	if (path)
		unlink(path);
}

/* Read until the client shuts down its side. A slow or silent client is cut
 * off after a second, so it cannot hold the daemon. */
static ssize_t read_request(int fd, char *buf, size_t cap)
{
	struct timeval tv = { .tv_sec = 1 };
	size_t len = 0;
	ssize_t n;

	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	while (len < cap) {
		n = read(fd, buf + len, cap - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			break;
		len += n;
	}
	return len;
}

static void write_all(int fd, const char *buf, size_t len)
{
	struct timeval tv = { .tv_sec = 1 };
	ssize_t n;

	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	while (len) {
		n = send(fd, buf, len, MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return;
		buf += n;
		len -= n;
	}
}

static void answer(int fd, int code, const char *body, size_t len)
{
	char head[4];

	snprintf(head, sizeof(head), "%d\n", code);
	write_all(fd, head, strlen(head));
	write_all(fd, body, len);
}

static int handle(int fd, control_handler handler, void *ctx)
{
	static char buf[REQUEST_MAX_BYTES + 1];
	struct ucred cred;
	socklen_t cl = sizeof(cred);
	struct request req;
	struct peer peer;
	char err[512] = "";
	char *out = NULL;
	size_t out_len = 0;
	FILE *f;
	ssize_t len;
	int code;

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &cl))
		return -errno;
	peer = (struct peer){ .pid = cred.pid, .uid = cred.uid, .gid = cred.gid };
	/* Keep blocking I/O with timeouts for the one exchange on this fd. */
	len = read_request(fd, buf, sizeof(buf));
	if (len < 0)
		return len;
	if ((size_t)len > REQUEST_MAX_BYTES) {
		snprintf(err, sizeof(err), "request: message larger than %d bytes", REQUEST_MAX_BYTES);
		answer(fd, 2, err, strlen(err));
		return 0;
	}
	if (request_parse(buf, len, &req, err, sizeof(err))) {
		size_t n = strlen(err);

		err[n] = '\n';
		answer(fd, 2, err, n + 1);
		return 0;
	}
	f = open_memstream(&out, &out_len);
	if (!f) {
		request_free(&req);
		return -ENOMEM;
	}
	code = handler(ctx, &req, &peer, f, err, sizeof(err));
	fclose(f);
	request_free(&req);
	if (code) {
		size_t n = strlen(err);

		if (n < sizeof(err) - 1)
			err[n++] = '\n';
		answer(fd, code, err, n);
	} else {
		answer(fd, 0, out, out_len);
	}
	free(out);
	return 0;
}

int control_serve(int listen_fd, control_handler handler, void *ctx)
{
	int fd, err;

	fd = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC);
	if (fd < 0)
		return errno == EAGAIN || errno == EINTR ? 0 : -errno;
	err = handle(fd, handler, ctx);
	close(fd);
	return err;
}
