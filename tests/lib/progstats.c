// SPDX-License-Identifier: GPL-2.0
#include "progstats.h"
#include "harness.h"

#include <dirent.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>

int64_t daemon_prog_run_cnt(const char *name)
{
	char dir[4096], path[8192];
	struct dirent *d;
	int64_t cnt = -1;
	DIR *dp;

	snprintf(dir, sizeof(dir), "%s/links", daemon_pin_path());
	dp = opendir(dir);
	if (!dp)
		return -1;
	while (cnt < 0 && (d = readdir(dp))) {
		struct bpf_link_info li = {};
		struct bpf_prog_info pi = {};
		__u32 len = sizeof(li);
		int fd, pfd;

		if (d->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, d->d_name);
		fd = bpf_obj_get(path);
		if (fd < 0)
			continue;
		if (!bpf_obj_get_info_by_fd(fd, &li, &len) &&
		    (pfd = bpf_prog_get_fd_by_id(li.prog_id)) >= 0) {
			len = sizeof(pi);
			if (!bpf_obj_get_info_by_fd(pfd, &pi, &len) && !strcmp(pi.name, name))
				cnt = pi.run_cnt;
			close(pfd);
		}
		close(fd);
	}
	closedir(dp);
	return cnt;
}

int64_t daemon_iter_run_cnt(const char *name)
{
	char dir[64], path[384], line[256];
	struct dirent *d;
	int64_t cnt = -1;
	DIR *dp;

	snprintf(dir, sizeof(dir), "/proc/%d/fdinfo", (int)daemon_pid());
	dp = opendir(dir);
	if (!dp)
		return -1;
	while ((d = readdir(dp))) {
		struct bpf_prog_info pi = {};
		__u32 len = sizeof(pi), id = 0;
		bool iter = false;
		FILE *f;
		int pfd;

		snprintf(path, sizeof(path), "%s/%s", dir, d->d_name);
		f = d->d_name[0] != '.' ? fopen(path, "re") : NULL;
		if (!f)
			continue;
		while (fgets(line, sizeof(line), f)) {
			iter |= !strcmp(line, "link_type:\titer\n");
			sscanf(line, "prog_id:\t%u", &id);
		}
		fclose(f);
		if (!iter || !id || (pfd = bpf_prog_get_fd_by_id(id)) < 0)
			continue;
		if (!bpf_obj_get_info_by_fd(pfd, &pi, &len) && !strcmp(pi.name, name))
			cnt = (cnt < 0 ? 0 : cnt) + (int64_t)pi.run_cnt;
		close(pfd);
	}
	closedir(dp);
	return cnt;
}
