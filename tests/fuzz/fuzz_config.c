// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer target: config_parse() on arbitrary text. The input is split at
 * NUL bytes into a main file and up to three drop-ins, so the fuzzer can
 * reach cross-file checks (the same Path twice) as well as each parser
 * path. Beyond memory safety it checks the promises callers rely on:
 * a failure leaves *out untouched with a one-line "FILE..." reason; a
 * success gives rules whose thresholds come out ordered.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "../../src/config.h"

#define CHECK(cond) do { if (!(cond)) __builtin_trap(); } while (0)

/* The drop-ins' names, in the order config_load() would read them. */
static const char *const names[] = { "main.conf", "10-a.conf", "20-b.conf", "30-c.conf" };
#define N_SOURCES (sizeof(names) / sizeof(names[0]))

static size_t split(const uint8_t *data, size_t size, struct config_source *src)
{
	size_t n = 0, start = 0;

	for (size_t i = 0; i <= size && n < N_SOURCES; i++) {
		if (i == size || (data[i] == '\0' && n + 1 < N_SOURCES)) {
			src[n] = (struct config_source){ names[n], (const char *)data + start, i - start };
			n++;
			start = i + 1;
		}
	}
	return n;
}

static void check_config(const struct config *c)
{
	CHECK(c->pin_path && c->socket_path && c->dropin_dir && c->state_dir);
	CHECK(c->scope && c->scope[0] == '/' && c->mode && c->main_file);
	for (size_t i = 0; i < c->n_rules; i++) {
		const struct cgroup_rule *r = &c->rules[i];
		uint64_t mn, pr, mx;

		CHECK(r->pattern[0] == '/' && r->file && r->line > 0 && r->limit_pages > 0);
		rule_thresholds(r, &mn, &pr, &mx);
		CHECK(1 <= mn && mn <= pr && pr <= mx && mx <= r->limit_pages);
		/* Every exact pattern matches itself. */
		if (!r->is_glob && !strchr(r->pattern, '\\'))
			CHECK(config_match(c, r->pattern) != NULL);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct config_source src[N_SOURCES];
	struct config out;
	char err[512];
	size_t n = split(data, size, src);
	int ret;

	memset(&out, 0xa5, sizeof(out));
	err[0] = '\0';
	ret = config_parse(&src[0], src + 1, n - 1, &out, err, sizeof(err));
	if (ret == 0) {
		check_config(&out);
		config_free(&out);
	} else {
		struct config untouched;

		memset(&untouched, 0xa5, sizeof(untouched));
		CHECK(ret == -EINVAL || ret == -ENOMEM);
		CHECK(memcmp(&out, &untouched, sizeof(out)) == 0);
		CHECK(err[0] != '\0' && !strchr(err, '\n'));
		CHECK(strncmp(err, "main.conf:", 10) == 0 || strncmp(err, "10-a.conf:", 10) == 0 ||
		      strncmp(err, "20-b.conf:", 10) == 0 || strncmp(err, "30-c.conf:", 10) == 0);
	}
	return 0;
}
