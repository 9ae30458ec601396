// SPDX-License-Identifier: GPL-2.0
/* Unit tests for size_parse_pages() and size_format_human(). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "../src/size.h"

static int failures;

#define GIB_PAGES	(1ULL << 18)

static const struct parse_case {
	const char *in;
	int ret;
	uint64_t pages;
} parse_cases[] = {
	/* plain integers are pages, as in net.ipv4.tcp_mem */
	{ "0", 0, 0 },
	{ "1", 0, 1 },
	{ "4096", 0, 4096 },
	{ "007", 0, 7 },
	/* bytes, rounded up to whole pages */
	{ "1B", 0, 1 },
	{ "4096b", 0, 1 },
	{ "4097B", 0, 2 },
	{ "0B", 0, 0 },
	{ "4K", 0, 1 },
	{ "5k", 0, 2 },
	{ "512KiB", 0, 128 },
	{ "512kib", 0, 128 },
	{ "64M", 0, 16384 },
	{ "64MiB", 0, 16384 },
	{ "64mib", 0, 16384 },
	{ "1G", 0, GIB_PAGES },
	{ "4GiB", 0, 4 * GIB_PAGES },
	{ "4gIb", 0, 4 * GIB_PAGES },
	/* fractions with K/M/G, so status output can be pasted back */
	{ "16.0M", 0, 4096 },
	{ "1.5M", 0, 384 },
	{ "0.5G", 0, GIB_PAGES / 2 },
	{ "1.001K", 0, 1 },
	{ "4.001K", 0, 2 },
	{ "0.000000001G", 0, 1 },
	/* limits */
	{ "4503599627370495", 0, 4503599627370495ULL },	/* SIZE_MAX_PAGES */
	{ "4503599627370496", -ERANGE, 0 },
	{ "18446744073709551615", -ERANGE, 0 },
	{ "18446744073709551616", -ERANGE, 0 },
	{ "99999999999999999999999", -ERANGE, 0 },
	{ "17179869183G", 0, (17179869183ULL << 30) / 4096 },	/* 2^64 - 2^30 bytes */
	{ "17179869184G", -ERANGE, 0 },				/* 2^64 bytes */
	{ "16777216G", 0, 16777216ULL * GIB_PAGES },
	{ "18446744073709551615B", -ERANGE, 0 },	/* rounds up to 2^52 pages */
	{ "18446744073709547520B", 0, 4503599627370495ULL },
	/* malformed */
	{ "", -EINVAL, 0 },
	{ "-1", -EINVAL, 0 },
	{ "+1", -EINVAL, 0 },
	{ " 1", -EINVAL, 0 },
	{ "1 ", -EINVAL, 0 },
	{ "1 M", -EINVAL, 0 },
	{ "M", -EINVAL, 0 },
	{ "abc", -EINVAL, 0 },
	{ "0x10", -EINVAL, 0 },
	{ "1e3", -EINVAL, 0 },
	{ "64MB", -EINVAL, 0 },
	{ "64T", -EINVAL, 0 },
	{ "64Mi", -EINVAL, 0 },
	{ "64MiBx", -EINVAL, 0 },
	{ "64M\n", -EINVAL, 0 },
	{ "1.5", -EINVAL, 0 },
	{ "1.5B", -EINVAL, 0 },
	{ "1.M", -EINVAL, 0 },
	{ ".5M", -EINVAL, 0 },
	{ "1..5M", -EINVAL, 0 },
	{ "1.0000000001G", -EINVAL, 0 },
	{ "1,5M", -EINVAL, 0 },
};

static void test_parse(void)
{
	for (size_t i = 0; i < sizeof(parse_cases) / sizeof(parse_cases[0]); i++) {
		const struct parse_case *c = &parse_cases[i];
		uint64_t pages = 0xdeadbeef;
		int ret = size_parse_pages(c->in, &pages);
		uint64_t want = c->ret ? 0xdeadbeef : c->pages;

		if (ret != c->ret || pages != want) {
			printf("FAIL size_parse_pages(\"%s\"): expected ret %d pages %" PRIu64
			       ", got ret %d pages %" PRIu64 "\n",
			       c->in, c->ret, want, ret, pages);
			failures++;
		}
	}
	if (size_parse_pages(NULL, &(uint64_t){0}) != -EINVAL) {
		printf("FAIL size_parse_pages(NULL): expected -EINVAL\n");
		failures++;
	}
}

static const struct format_case {
	uint64_t pages;
	const char *out;
} format_cases[] = {
	{ 0, "0K" },
	{ 1, "4K" },
	{ 128, "512K" },
	{ 255, "1020K" },
	{ 256, "1.0M" },
	{ 384, "1.5M" },
	{ 4096, "16.0M" },
	{ 16384, "64.0M" },
	{ GIB_PAGES - 1, "1.0G" },	/* 1023.996M must not print as 1024.0M */
	{ GIB_PAGES - 13, "1023.9M" },
	{ GIB_PAGES, "1.0G" },
	{ 4 * GIB_PAGES, "4.0G" },
	{ UINT64_MAX, "70368744177664.0G" },
};

static void test_format(void)
{
	char buf[SIZE_HUMAN_LEN];

	for (size_t i = 0; i < sizeof(format_cases) / sizeof(format_cases[0]); i++) {
		const struct format_case *c = &format_cases[i];

		size_format_human(c->pages, buf, sizeof(buf));
		if (strcmp(buf, c->out) != 0) {
			printf("FAIL size_format_human(%" PRIu64 "): expected \"%s\", got \"%s\"\n",
			       c->pages, c->out, buf);
			failures++;
		}
	}
	/* Truncation keeps the buffer a terminated string. */
	size_format_human(4096, buf, 3);
	if (strcmp(buf, "16") != 0) {
		printf("FAIL size_format_human truncation: expected \"16\", got \"%s\"\n", buf);
		failures++;
	}
}

/* What the human form says must parse back to within a tenth of its unit. */
static void test_round_trip(void)
{
	static const uint64_t samples[] = { 1, 100, 256, 300, 4096, 12345, GIB_PAGES + 7 };
	char buf[SIZE_HUMAN_LEN];

	for (size_t i = 0; i < sizeof(samples) / sizeof(samples[0]); i++) {
		uint64_t back = 0, p = samples[i];
		uint64_t slack = p >= GIB_PAGES ? GIB_PAGES / 10 : p >= 256 ? 256 / 10 + 1 : 0;

		size_format_human(p, buf, sizeof(buf));
		if (size_parse_pages(buf, &back) != 0 ||
		    (back > p ? back - p : p - back) > slack) {
			printf("FAIL round trip %" PRIu64 " -> \"%s\" -> %" PRIu64 "\n",
			       p, buf, back);
			failures++;
		}
	}
}

int main(void)
{
	test_parse();
	test_format();
	test_round_trip();
	if (failures) {
		printf("test_size: %d failure(s)\n", failures);
		return 1;
	}
	printf("test_size: all passed\n");
	return 0;
}
