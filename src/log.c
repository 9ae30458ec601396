// SPDX-License-Identifier: GPL-2.0
/*
 * Logging. By hand: plain "tcpbufd: ..." lines on stderr. Under journald
 * (stderr is the journal's stream): the same lines with a <N> priority
 * prefix, and cgroup state changes as structured entries whose fields can
 * be queried (journalctl CGROUP=/x STATE=max).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>
#define SD_JOURNAL_SUPPRESS_LOCATION	/* every entry would name log.c */
#include <systemd/sd-journal.h>
#include "log.h"

int log_max_level = LOG_INFO;

bool log_to_journal(void)
{
	static int cached = -1;
	unsigned long long dev, ino;
	const char *e;
	struct stat st;

	/* sd_journal_stream_fd(3): systemd sets $JOURNAL_STREAM to the
	 * "device:inode" of the stream it connected stdout/stderr to. */
	if (cached < 0) {
		e = getenv("JOURNAL_STREAM");
		cached = e && sscanf(e, "%llu:%llu", &dev, &ino) == 2 &&
			 !fstat(STDERR_FILENO, &st) && st.st_dev == dev && st.st_ino == ino;
	}
	return cached;
}

void log_msg(int prio, const char *fmt, ...)
{
	va_list ap;

	if (prio > log_max_level)
		return;
	/* journald keeps the priority of a <N> prefix and adds the name itself. */
	if (log_to_journal())
		fprintf(stderr, "<%d>", prio);
	else
		fputs("tcpbufd: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

int log_level_parse(const char *name)
{
	if (!strcmp(name, "err") || !strcmp(name, "error"))
		return LOG_ERR;
	if (!strcmp(name, "warning") || !strcmp(name, "warn"))
		return LOG_WARNING;
	if (!strcmp(name, "notice"))
		return LOG_NOTICE;
	if (!strcmp(name, "info"))
		return LOG_INFO;
	if (!strcmp(name, "debug"))
		return LOG_DEBUG;
	return -1;
}

/* ---- cgroup state changes ---------------------------------------------- */

/* What one cgroup has logged in its current rate-limit interval. */
struct state_slot {
	uint64_t hash;			/* FNV-1a of path; 0 = free */
	char *path;
	uint64_t interval_start_ms;
	unsigned logged;		/* messages in this interval */
	unsigned held;			/* changes not logged in this interval */
	char state[16];			/* last state seen, logged or not */
	char mode[16];
	uint64_t usage_pages, limit_pages;
};

#define STATE_SLOTS	1024

static struct state_slot slots[STATE_SLOTS];
static unsigned rl_interval_ms = 30000, rl_burst = 5;

void log_state_ratelimit(unsigned interval_ms, unsigned burst)
{
	rl_interval_ms = interval_ms;
	rl_burst = burst;
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static uint64_t path_hash(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ULL;
	return h ? h : 1;
}

static int state_priority(const char *state)
{
	if (!strcmp(state, "max"))
		return LOG_WARNING;
	if (!strcmp(state, "pressure"))
		return LOG_NOTICE;
	return LOG_INFO;
}

/* "entered pressure", "hit max" ...: what happened, in words. */
static const char *transition(const char *prev, const char *state)
{
	if (!strcmp(state, "max"))
		return "hit max";
	if (!strcmp(state, "pressure"))
		return !strcmp(prev, "max") ? "fell below max, still under pressure" :
					      "entered pressure";
	if (!strcmp(state, "normal"))
		return !strcmp(prev, "max") ? "fell from max to normal" :
		       !strcmp(prev, "pressure") ? "left pressure" : "is normal";
	return "changed state";
}

static int journal_send(int prio, const char *msg, const char *cgroup, const char *state,
			const char *prev, uint64_t usage, uint64_t limit, const char *mode,
			unsigned held)
{
	struct iovec iov[11];
	int n = 0, r = -ENOMEM;

#define FIELD(...) do {							\
	char *f_;							\
	int len_ = asprintf(&f_, __VA_ARGS__);				\
	if (len_ < 0)							\
		goto out;						\
	iov[n++] = (struct iovec){ .iov_base = f_, .iov_len = len_ };	\
} while (0)
	FIELD("MESSAGE=%s", msg);
	FIELD("PRIORITY=%d", prio);
	FIELD("SYSLOG_IDENTIFIER=tcpbufd");
	FIELD("MESSAGE_ID=%s", LOG_STATE_MESSAGE_ID);
	FIELD("CGROUP=%s", cgroup);
	FIELD("USAGE_PAGES=%llu", (unsigned long long)usage);
	FIELD("THRESHOLD_PAGES=%llu", (unsigned long long)limit);
	FIELD("STATE=%s", state);
	FIELD("MODE=%s", mode);
	if (*prev)
		FIELD("PREVIOUS_STATE=%s", prev);
	if (held)
		FIELD("SUPPRESSED=%u", held);
#undef FIELD
	r = sd_journal_sendv(iov, n);
out:
	while (n--)
		free(iov[n].iov_base);
	return r;
}

static void emit(const char *cgroup, const char *state, const char *prev, uint64_t usage,
		 uint64_t limit, const char *mode, unsigned held)
{
	int prio = state_priority(state);
	char msg[4352];

	if (prio > log_max_level)
		return;
	if (held)	/* a summary names the state, not a transition */
		snprintf(msg, sizeof(msg),
			 "%s: now %s (usage %llu pages, threshold %llu pages); %u change%s not logged",
			 cgroup, state, (unsigned long long)usage, (unsigned long long)limit,
			 held, held == 1 ? " was" : "s were");
	else
		snprintf(msg, sizeof(msg), "%s: %s (usage %llu pages, threshold %llu pages)", cgroup,
			 transition(prev, state), (unsigned long long)usage,
			 (unsigned long long)limit);
	if (log_to_journal() &&
	    journal_send(prio, msg, cgroup, state, prev, usage, limit, mode, held) >= 0)
		return;
	log_msg(prio, "%s", msg);
}

static struct state_slot *slot_get(const char *cgroup, uint64_t now)
{
	uint64_t h = path_hash(cgroup);
	struct state_slot *s, *free_slot = NULL, *oldest = NULL;

	for (s = slots; s < slots + STATE_SLOTS; s++) {
		if (s->hash == h && !strcmp(s->path, cgroup))
			return s;
		if (!s->hash) {
			if (!free_slot)
				free_slot = s;
		} else if (!oldest || s->interval_start_ms < oldest->interval_start_ms) {
			oldest = s;
		}
	}
	s = free_slot;
	if (!s) {
		/* Full: forget the quietest cgroup, after saying what it held back. */
		s = oldest;
		if (s->held)
			emit(s->path, s->state, "", s->usage_pages, s->limit_pages, s->mode,
			     s->held);
		free(s->path);
	}
	memset(s, 0, sizeof(*s));
	s->path = strdup(cgroup);
	if (!s->path)
		return NULL;
	s->hash = h;
	s->interval_start_ms = now;
	return s;
}

static void slot_flush(struct state_slot *s, uint64_t now)
{
	if (s->held)
		emit(s->path, s->state, "", s->usage_pages, s->limit_pages, s->mode, s->held);
	s->interval_start_ms = now;
	s->logged = s->held ? 1 : 0;
	s->held = 0;
}

void log_state_change(const char *cgroup, const char *state, uint64_t usage_pages,
		      uint64_t limit_pages, const char *mode)
{
	uint64_t now = now_ms();
	struct state_slot *s = slot_get(cgroup, now);
	char prev[sizeof(s->state)];

	if (!s) {	/* out of memory: say it, unlimited */
		emit(cgroup, state, "", usage_pages, limit_pages, mode, 0);
		return;
	}
	if (now - s->interval_start_ms >= rl_interval_ms)
		slot_flush(s, now);
	snprintf(prev, sizeof(prev), "%s", s->state);
	snprintf(s->state, sizeof(s->state), "%s", state);
	snprintf(s->mode, sizeof(s->mode), "%s", mode);
	s->usage_pages = usage_pages;
	s->limit_pages = limit_pages;
	if (s->logged < rl_burst) {
		s->logged++;
		emit(cgroup, state, prev, usage_pages, limit_pages, mode, 0);
	} else {
		s->held++;
	}
}

void log_state_flush(void)
{
	uint64_t now = now_ms();
	struct state_slot *s;

	for (s = slots; s < slots + STATE_SLOTS; s++)
		if (s->hash && s->held && now - s->interval_start_ms >= rl_interval_ms)
			slot_flush(s, now);
}
