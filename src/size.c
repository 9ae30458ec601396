// SPDX-License-Identifier: GPL-2.0
/* Size parsing and formatting: the one place that knows what "64M" means. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "size.h"

/* Fraction digits beyond this cannot change a page-rounded result in practice. */
#define MAX_FRACTION_DIGITS	9

struct size_suffix {
	const char *name;
	uint64_t bytes;		/* 0: no suffix, the number counts pages */
};

static const struct size_suffix suffixes[] = {
	{ "",    0 },
	{ "b",   1 },
	{ "k",   1ULL << 10 }, { "kib", 1ULL << 10 },
	{ "m",   1ULL << 20 }, { "mib", 1ULL << 20 },
	{ "g",   1ULL << 30 }, { "gib", 1ULL << 30 },
};

static const struct size_suffix *find_suffix(const char *s)
{
	for (size_t i = 0; i < sizeof(suffixes) / sizeof(suffixes[0]); i++)
		if (strcasecmp(s, suffixes[i].name) == 0)
			return &suffixes[i];
	return NULL;
}

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/* Parse @len decimal digits at @s; -ERANGE if they overflow a uint64_t. */
static int parse_digits(const char *s, size_t len, uint64_t *out)
{
	uint64_t v = 0;

	for (size_t i = 0; i < len; i++) {
		unsigned d = (unsigned)(s[i] - '0');

		if (v > (UINT64_MAX - d) / 10)
			return -ERANGE;
		v = v * 10 + d;
	}
	*out = v;
	return 0;
}

static uint64_t pow10_u64(size_t n)
{
	uint64_t v = 1;

	while (n--)
		v *= 10;
	return v;
}

static uint64_t bytes_to_pages(uint64_t bytes)
{
	return bytes / SIZE_PAGE_BYTES + (bytes % SIZE_PAGE_BYTES != 0);
}

/*
 * Bytes of "INT.FRAC<suffix>", the fraction rounded up to a whole byte so
 * that a size never shrinks when it is written with decimals.
 */
static int scaled_bytes(uint64_t ip, uint64_t frac, size_t frac_len,
			uint64_t unit, uint64_t *bytes)
{
	uint64_t scale = pow10_u64(frac_len);
	/* frac < 10^9 and unit <= 2^30: the product stays below 2^60. */
	uint64_t frac_bytes = (frac * unit + scale - 1) / scale;

	if (ip > UINT64_MAX / unit)
		return -ERANGE;
	if (ip * unit > UINT64_MAX - frac_bytes)
		return -ERANGE;
	*bytes = ip * unit + frac_bytes;
	return 0;
}

int size_parse_pages(const char *s, uint64_t *pages)
{
	const struct size_suffix *suffix;
	size_t int_len, frac_len = 0;
	const char *frac = NULL;
	uint64_t ip, fv = 0, bytes, result;
	int err;

	if (!s)
		return -EINVAL;
	for (int_len = 0; is_digit(s[int_len]); int_len++)
		;
	if (int_len == 0)
		return -EINVAL;		/* empty, sign, or junk first */
	if (s[int_len] == '.') {
		frac = s + int_len + 1;
		while (is_digit(frac[frac_len]))
			frac_len++;
		if (frac_len == 0 || frac_len > MAX_FRACTION_DIGITS)
			return -EINVAL;
	}
	suffix = find_suffix(frac ? frac + frac_len : s + int_len);
	if (!suffix)
		return -EINVAL;		/* unknown suffix or trailing garbage */
	/* Pages and bytes are indivisible units: "1.5" and "1.5B" mean nothing. */
	if (frac && suffix->bytes < 1024)
		return -EINVAL;

	err = parse_digits(s, int_len, &ip);
	if (err)
		return err;
	if (frac)
		parse_digits(frac, frac_len, &fv);	/* <= 9 digits: cannot fail */

	if (suffix->bytes == 0) {
		result = ip;
	} else {
		err = scaled_bytes(ip, fv, frac_len, suffix->bytes, &bytes);
		if (err)
			return err;
		result = bytes_to_pages(bytes);
	}
	if (result > SIZE_MAX_PAGES)
		return -ERANGE;
	*pages = result;
	return 0;
}

/* Tenths of @unit in @pages, rounded to nearest, without overflowing. */
static uint64_t tenths_of(uint64_t pages, uint64_t unit)
{
	return pages / unit * 10 + ((pages % unit) * 10 + unit / 2) / unit;
}

static void format_tenths(uint64_t tenths, char unit, char *buf, size_t len)
{
	snprintf(buf, len, "%llu.%llu%c", (unsigned long long)(tenths / 10),
		 (unsigned long long)(tenths % 10), unit);
}

void size_format_human(uint64_t pages, char *buf, size_t len)
{
	const uint64_t mib = 1ULL << 8, gib = 1ULL << 18;	/* in pages */

	if (!buf || len == 0)
		return;
	if (pages >= gib) {
		format_tenths(tenths_of(pages, gib), 'G', buf, len);
	} else if (pages >= mib) {
		uint64_t tenths = tenths_of(pages, mib);

		/* 1023.96M would print as "1024.0M": say "1.0G" instead. */
		if (tenths >= 10240)
			format_tenths(tenths_of(pages, gib), 'G', buf, len);
		else
			format_tenths(tenths, 'M', buf, len);
	} else {
		/* Below 1 MiB: whole KiB, exact since a page is 4 KiB. */
		snprintf(buf, len, "%lluK", (unsigned long long)(pages * 4));
	}
}
