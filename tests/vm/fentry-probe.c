/* fentry-probe OBJ: VM self-test of the kernel features "exact" mode relies on.
 *
 * Loads OBJ (fentry-probe.bpf.o), attaches its fentry/fexit programs, moves
 * itself into a fresh memory cgroup, fills a loopback TCP connection that is
 * never read, then compares the pages the probes saw charged with the
 * cgroup's memory.stat "sock" line (the kernel's own count). Prints what it
 * measured; exits 0 pass, 1 fail, 77 skip (no cgroup v2 memory controller).
 *
 * Why a C loader and not bpftool: Debian's bpftool 7.1 loads but cannot
 * attach tracing programs, and a loaded-but-unattached program proves less.
 */
#include <arpa/inet.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define CGROUP "/sys/fs/cgroup/tcpbuf-vm-probe"

/* Same order and types as the globals in fentry-probe.bpf.c (.bss). */
struct counters {
	unsigned long long raise_entry_calls, raise_exit_calls, raise_failed;
	unsigned long long reduce_calls, forced_calls;
	long long net_pages;
};

static int write_file(const char *path, const char *fmt, ...)
{
	char buf[64];
	va_list ap;
	int fd, n, ok;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	fd = open(path, O_WRONLY);
	if (fd < 0)
		return -1;
	ok = write(fd, buf, n) == n;
	close(fd);
	return ok ? 0 : -1;
}

/* memory.stat "sock" in pages, -1 if unreadable. */
static long long memcg_sock_pages(void)
{
	char line[256];
	long long v = -1;
	FILE *f = fopen(CGROUP "/memory.stat", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "sock %lld", &v) == 1)
			break;
	fclose(f);
	return v < 0 ? v : v / 4096;
}

static int read_counters(struct bpf_map *bss, struct counters *c)
{
	int zero = 0;

	return bpf_map_lookup_elem(bpf_map__fd(bss), &zero, c);
}

static void msleep(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

/* Poll until the probes' net page count equals memcg's, for at most ~3 s:
 * memcg statistics are flushed lazily. Returns 1 when they matched. */
static int settle(struct bpf_map *bss, struct counters *c, long long *memcg)
{
	for (int i = 0; i < 30; i++) {
		if (read_counters(bss, c) == 0) {
			*memcg = memcg_sock_pages();
			if (*memcg == c->net_pages)
				return 1;
		}
		msleep(100);
	}
	return 0;
}

static void print_counters(const char *when, const struct counters *c, long long memcg)
{
	printf("fentry-probe: %s: raise fentry=%llu fexit=%llu failed=%llu reduce=%llu "
	       "forced=%llu net_pages=%lld memcg_sock_pages=%lld\n",
	       when, c->raise_entry_calls, c->raise_exit_calls, c->raise_failed,
	       c->reduce_calls, c->forced_calls, c->net_pages, memcg);
}

int main(int argc, char **argv)
{
	struct sockaddr_in addr = { .sin_family = AF_INET };
	socklen_t alen = sizeof(addr);
	struct bpf_object *obj;
	struct bpf_program *prog;
	struct bpf_map *bss;
	struct counters c;
	long long memcg, queued = 0;
	static char chunk[65536];
	int lfd, cfd, sfd, attached = 0, fail = 0, matched;

	if (argc != 2) {
		fprintf(stderr, "usage: fentry-probe OBJ\n");
		return 1;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);

	/* A private memory cgroup whose only sockets are ours. */
	if (mkdir(CGROUP, 0755) && errno != EEXIST) {
		printf("fentry-probe: SKIP: mkdir %s: %s\n", CGROUP, strerror(errno));
		return 77;
	}
	if (write_file(CGROUP "/cgroup.procs", "%d", getpid()) || memcg_sock_pages() < 0) {
		printf("fentry-probe: SKIP: no memory.stat sock in %s\n", CGROUP);
		return 77;
	}

	obj = bpf_object__open_file(argv[1], NULL);
	if (!obj || bpf_object__load(obj)) {
		printf("fentry-probe: FAIL: loading %s: %s\n", argv[1], strerror(errno));
		return 1;
	}
	bpf_object__for_each_program(prog, obj) {
		if (!bpf_program__attach(prog)) {
			printf("fentry-probe: FAIL: attach %s: %s\n",
			       bpf_program__name(prog), strerror(errno));
			return 1;
		}
		attached++;
	}
	bss = bpf_object__find_map_by_name(obj, ".bss");
	if (!bss || bpf_map__value_size(bss) != sizeof(c)) {
		printf("fentry-probe: FAIL: .bss map missing or of unexpected size\n");
		return 1;
	}
	printf("fentry-probe: loaded and attached %d fentry/fexit programs\n", attached);

	/* Loopback connection; the receiver never reads, so its receive queue
	 * and the sender's write queue stay charged until we close. */
	addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	lfd = socket(AF_INET, SOCK_STREAM, 0);
	if (lfd < 0 || bind(lfd, (void *)&addr, sizeof(addr)) || listen(lfd, 1) ||
	    getsockname(lfd, (void *)&addr, &alen)) {
		perror("fentry-probe: listen");
		return 1;
	}
	cfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
	if (cfd < 0 || (connect(cfd, (void *)&addr, sizeof(addr)) && errno != EINPROGRESS)) {
		perror("fentry-probe: connect");
		return 1;
	}
	sfd = accept(lfd, NULL, NULL);
	if (sfd < 0) {
		perror("fentry-probe: accept");
		return 1;
	}
	memset(chunk, 'x', sizeof(chunk));
	for (int idle = 0; idle < 20;) {
		ssize_t n = send(cfd, chunk, sizeof(chunk), 0);

		if (n > 0) {
			queued += n;
			idle = 0;
		} else if (errno == EAGAIN) {
			idle++; /* let loopback delivery catch up, then retry */
			msleep(10);
		} else {
			perror("fentry-probe: send");
			return 1;
		}
	}
	printf("fentry-probe: %lld bytes queued on a loopback connection nobody reads\n", queued);

	matched = settle(bss, &c, &memcg);
	print_counters("queued", &c, memcg);
	if (c.raise_entry_calls == 0 || c.raise_exit_calls == 0 || c.reduce_calls == 0) {
		printf("fentry-probe: FAIL: a probe never fired\n");
		fail = 1;
	}
	if (memcg <= 0) {
		printf("fentry-probe: FAIL: memcg charged no socket memory\n");
		fail = 1;
	}
	if (!matched) {
		printf("fentry-probe: FAIL: probes and memcg disagree while queued\n");
		fail = 1;
	}

	close(sfd);
	close(cfd);
	close(lfd);
	matched = settle(bss, &c, &memcg);
	print_counters("closed", &c, memcg);
	if (!matched) {
		printf("fentry-probe: FAIL: probes and memcg disagree after close\n");
		fail = 1;
	}

	bpf_object__close(obj);
	write_file("/sys/fs/cgroup/cgroup.procs", "%d", getpid());
	rmdir(CGROUP);
	printf("fentry-probe: %s\n", fail ? "FAIL" : "PASS");
	return fail;
}
