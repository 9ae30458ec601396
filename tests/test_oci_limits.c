// SPDX-License-Identifier: GPL-2.0
/* Unit tests for oci_limits_decide(): what an OCI spec asks of tcpbufd. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "../src/oci_limits.h"

static int failures;

#define FAIL(...) do { printf("FAIL " __VA_ARGS__); failures++; } while (0)

struct decide_case {
	const char *name;
	struct oci_annotation a[5];
	bool has_ktcp;
	long long ktcp;
	int ret;
	bool wanted;
	unsigned long long limit, min, pressure, max;
	const char *err;	/* exact reason when ret != 0 */
};

#define A(k, v) { "tcpbufd.io/" k, v }

static const struct decide_case cases[] = {
	{ "nothing asked", { { "io.kubernetes.pod.name", "web" } }, false, 0, 0, false, 0, 0, 0, 0, NULL },
	{ "limit 16M", { A("limit", "16M") }, false, 0, 0, true, 4096, 0, 0, 0, NULL },
	{ "limit in pages", { A("limit", "4096") }, false, 0, 0, true, 4096, 0, 0, 0, NULL },
	{ "Kubernetes Mi", { A("limit", "64Mi") }, false, 0, 0, true, 16384, 0, 0, 0, NULL },
	{ "Kubernetes Gi", { A("limit", "1Gi") }, false, 0, 0, true, 262144, 0, 0, 0, NULL },
	{ "Kubernetes Ki", { A("limit", "8Ki") }, false, 0, 0, true, 2, 0, 0, 0, NULL },
	{ "Kubernetes Ti", { A("limit", "1Ti") }, false, 0, 0, true, 268435456, 0, 0, 0, NULL },
	{ "MiB too", { A("limit", "16MiB") }, false, 0, 0, true, 4096, 0, 0, 0, NULL },
	{ "all four", { A("limit", "64Mi"), A("min", "16Mi"), A("pressure", "32Mi"), A("max", "48Mi") },
	  false, 0, 0, true, 16384, 4096, 8192, 12288, NULL },
	{ "max only", { A("max", "12M"), A("limit", "16M") }, false, 0, 0, true, 4096, 0, 0, 3072, NULL },
	{ "annotation wins over kernelTCP", { A("limit", "16M") }, true, 1 << 30, 0, true, 4096, 0, 0, 0, NULL },
	{ "kernelTCP alone", { { NULL, NULL } }, true, 16777216, 0, true, 4096, 0, 0, 0, NULL },
	{ "kernelTCP rounds up", { { NULL, NULL } }, true, 4097, 0, true, 2, 0, 0, 0, NULL },
	{ "kernelTCP -1 is unlimited", { { NULL, NULL } }, true, -1, 0, false, 0, 0, 0, 0, NULL },
	{ "kernelTCP 0 is unlimited", { { NULL, NULL } }, true, 0, 0, false, 0, 0, 0, 0, NULL },
	{ "bad size", { A("limit", "16X") }, false, 0, -EINVAL, false, 0, 0, 0, 0,
	  "annotation tcpbufd.io/limit: bad size '16X'" },
	{ "empty size", { A("limit", "") }, false, 0, -EINVAL, false, 0, 0, 0, 0,
	  "annotation tcpbufd.io/limit: bad size ''" },
	{ "zero", { A("limit", "0") }, false, 0, -EINVAL, false, 0, 0, 0, 0,
	  "annotation tcpbufd.io/limit: bad size '0'" },
	{ "negative", { A("limit", "-16M") }, false, 0, -EINVAL, false, 0, 0, 0, 0,
	  "annotation tcpbufd.io/limit: bad size '-16M'" },
	{ "too big", { A("limit", "99999999999999999999") }, false, 0, -EINVAL, false, 0, 0, 0, 0,
	  "annotation tcpbufd.io/limit: size out of range '99999999999999999999'" },
	{ "typo in a key", { A("limt", "16M") }, false, 0, -EINVAL, false, 0, 0, 0, 0,
	  "unknown annotation tcpbufd.io/limt (tcpbufd reads tcpbufd.io/limit, min, pressure, max)" },
	{ "threshold without limit", { A("max", "8M") }, true, 16777216, -EINVAL, false, 0, 0, 0, 0,
	  "annotations tcpbufd.io/min, pressure and max need tcpbufd.io/limit" },
	{ "max above limit", { A("limit", "16M"), A("max", "32M") }, false, 0, -EINVAL, false, 0, 0, 0, 0,
	  "annotation tcpbufd.io/max (8192 pages) is above the limit (4096 pages)" },
	{ "min above pressure", { A("limit", "16M"), A("min", "12M"), A("pressure", "8M") }, false, 0,
	  -EINVAL, false, 0, 0, 0, 0,
	  "annotation tcpbufd.io/min (3072 pages) is above tcpbufd.io/pressure (2048 pages)" },
};

static void check(const struct decide_case *c)
{
	struct oci_limits got;
	char err[256] = "";
	size_t n = 0;
	int ret;

	while (n < 5 && c->a[n].key)
		n++;
	ret = oci_limits_decide(c->a, n, c->has_ktcp, c->ktcp, &got, err, sizeof(err));
	if (ret != c->ret) {
		FAIL("%s: expected %d, got %d \"%s\"\n", c->name, c->ret, ret, err);
		return;
	}
	if (ret) {
		if (strcmp(err, c->err))
			FAIL("%s: expected \"%s\", got \"%s\"\n", c->name, c->err, err);
		return;
	}
	if (got.wanted != c->wanted || got.limit_pages != c->limit || got.min_pages != c->min ||
	    got.pressure_pages != c->pressure || got.max_pages != c->max)
		FAIL("%s: expected wanted %d limit/min/pressure/max %llu/%llu/%llu/%llu, "
		     "got %d %llu/%llu/%llu/%llu\n", c->name, c->wanted, c->limit, c->min,
		     c->pressure, c->max, got.wanted, (unsigned long long)got.limit_pages,
		     (unsigned long long)got.min_pages, (unsigned long long)got.pressure_pages,
		     (unsigned long long)got.max_pages);
}

int main(void)
{
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		check(&cases[i]);
	if (failures) {
		printf("test_oci_limits: %d failure(s)\n", failures);
		return 1;
	}
	printf("test_oci_limits: %zu cases\n", sizeof(cases) / sizeof(cases[0]));
	return 0;
}
