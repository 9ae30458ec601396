// SPDX-License-Identifier: GPL-2.0
/*
 * A container reaches the control socket through a bind mount of its
 * DIRECTORY, and keeps reaching it across daemon restarts: the daemon makes
 * its new socket in the same directory, and the unit keeps that directory
 * (RuntimeDirectoryPreserve=yes: systemd would otherwise remove it at stop
 * and make a new one, which the container's mount does not see).
 *
 * In its own mount namespace, a child bind-mounts the socket's directory and,
 * for comparison, the socket file itself; then the daemon restarts. Through
 * the directory, status works before and after; through the file, connect()
 * is refused after the restart (the file names the old, unlinked socket),
 * which is why the documentation says to mount the directory.
 */
#define _GNU_SOURCE
#include "harness.h"
#include "sdunit.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

static int status_via(const char *sock)
{
	char *out = NULL;
	int code;

	/* ctl() names the harness's socket; this one names the container's. */
	code = ctl(&out, "--socket %s status", sock);
	free(out);
	return code;
}

static int connect_errno(const char *sock)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM, 0), err = 0;

	if (strlen(sock) >= sizeof(sa.sun_path))
		return ENAMETOOLONG;
	memcpy(sa.sun_path, sock, strlen(sock) + 1);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)))
		err = errno;
	close(fd);
	return err;
}

int main(void)
{
	char dir_mnt[1024], file_mnt[1024], via_dir[2048], *sockdir, **preserve;
	int go[2], done[2], st;
	char c;
	pid_t pid;

	test_init();
	if (access(UNIT_FILE, R_OK) == 0) {
		preserve = unit_values("RuntimeDirectoryPreserve");
		EXPECT_TRUE(preserve && preserve[0] && !strcmp(preserve[0], "yes"));
		words_free(preserve);
	} else {
		test_log("%s not here (a VM guest): its RuntimeDirectoryPreserve= is not checked",
			 UNIT_FILE);
	}
	if (geteuid() != 0)
		SKIP("needs root for a mount namespace");
	sockdir = strdup(daemon_socket_path());
	sockdir = dirname(sockdir);
	snprintf(dir_mnt, sizeof(dir_mnt), "%s/ctrun", test_tmpdir());
	snprintf(file_mnt, sizeof(file_mnt), "%s/ctsock", test_tmpdir());
	snprintf(via_dir, sizeof(via_dir), "%s/%s", dir_mnt, strrchr(daemon_socket_path(), '/') + 1);
	ASSERT_OK(mkdir(dir_mnt, 0755));
	ASSERT_OK(close(open(file_mnt, O_CREAT | O_WRONLY, 0644)));
	ASSERT_EQ(daemon_start(""), 0);
	ASSERT_OK(pipe(go));
	ASSERT_OK(pipe(done));

	pid = test_fork(1);
	if (pid == 0) {
		int code[3], err;

		close(go[1]);
		close(done[0]);
		if (unshare(CLONE_NEWNS) || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) ||
		    mount(sockdir, dir_mnt, NULL, MS_BIND, NULL) ||
		    mount(daemon_socket_path(), file_mnt, NULL, MS_BIND, NULL)) {
			perror("bind mounts");
			_exit(126);
		}
		code[0] = status_via(via_dir);
		code[1] = status_via(file_mnt);
		if (write(done[1], "m", 1) != 1 || read(go[0], &c, 1) != 1)
			_exit(125);
		code[2] = status_via(via_dir);
		err = connect_errno(file_mnt);
		printf("before: dir %d file %d; after restart: dir %d, file connect: %s\n", code[0],
		       code[1], code[2], strerror(err));
		_exit(code[0] == 0 && code[1] == 0 && code[2] == 0 && err == ECONNREFUSED ? 0 : 1);
	}
	close(go[0]);
	close(done[1]);
	ASSERT_EQ(read(done[0], &c, 1), 1);
	st = daemon_stop();
	EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	ASSERT_EQ(daemon_start(""), 0);
	ASSERT_EQ(write(go[1], "g", 1), 1);
	st = test_reap(pid);
	EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	free(sockdir);
	return test_done();
}
