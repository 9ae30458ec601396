// SPDX-License-Identifier: GPL-2.0
/* From an OCI spec's annotations and kernelTCP to the runtime limit to ask for. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "oci_limits.h"
#include "size.h"

enum { K_LIMIT, K_MIN, K_PRESSURE, K_MAX, N_KEYS };
static const char *const key_names[N_KEYS] = { "limit", "min", "pressure", "max" };

int oci_size_pages(const char *s, uint64_t *pages)
{
	char buf[64];
	size_t len = strlen(s);
	bool tera = false;
	uint64_t p;
	int r;

	if (len + 2 > sizeof(buf))
		return -EINVAL;
	memcpy(buf, s, len + 1);
	/* Kubernetes' binary suffixes are tcpbufd's KiB/MiB/GiB; Ti is 1024 Gi. */
	if (len >= 2 && buf[len - 1] == 'i' && strchr("KMGT", buf[len - 2])) {
		tera = buf[len - 2] == 'T';
		if (tera)
			buf[len - 2] = 'G';
		strcat(buf, "B");
	}
	r = size_parse_pages(buf, &p);
	if (r)
		return r;
	if (!p)
		return -EINVAL;
	if (tera && p > SIZE_MAX_PAGES / 1024)
		return -ERANGE;
	if (tera)
		p *= 1024;
	*pages = p;
	return 0;
}

/* Which tcpbufd.io/ key @key is, -1 if none of ours, N_KEYS if ours but unknown. */
static int key_index(const char *key)
{
	size_t plen = strlen(OCI_ANNOTATION_PREFIX);

	if (strncmp(key, OCI_ANNOTATION_PREFIX, plen))
		return -1;
	for (int i = 0; i < N_KEYS; i++)
		if (!strcmp(key + plen, key_names[i]))
			return i;
	return N_KEYS;
}

static int check_order(const uint64_t *v, char *err, size_t errlen)
{
	for (int a = K_MIN; a < K_MAX; a++)
		for (int b = a + 1; b <= K_MAX; b++)
			if (v[a] && v[b] && v[a] > v[b]) {
				snprintf(err, errlen, "annotation %s%s (%llu pages) is above %s%s "
					 "(%llu pages)", OCI_ANNOTATION_PREFIX, key_names[a],
					 (unsigned long long)v[a], OCI_ANNOTATION_PREFIX, key_names[b],
					 (unsigned long long)v[b]);
				return -EINVAL;
			}
	for (int a = K_MIN; a <= K_MAX; a++)
		if (v[a] > v[K_LIMIT]) {
			snprintf(err, errlen, "annotation %s%s (%llu pages) is above the limit "
				 "(%llu pages)", OCI_ANNOTATION_PREFIX, key_names[a],
				 (unsigned long long)v[a], (unsigned long long)v[K_LIMIT]);
			return -EINVAL;
		}
	return 0;
}

int oci_limits_decide(const struct oci_annotation *a, size_t n, bool has_kernel_tcp,
		      int64_t kernel_tcp, struct oci_limits *out, char *err, size_t errlen)
{
	uint64_t v[N_KEYS] = { 0 };
	bool seen = false;

	for (size_t i = 0; i < n; i++) {
		int k = key_index(a[i].key);
		int r;

		if (k < 0)
			continue;
		if (k == N_KEYS) {
			snprintf(err, errlen, "unknown annotation %s (tcpbufd reads %slimit, min, "
				 "pressure, max)", a[i].key, OCI_ANNOTATION_PREFIX);
			return -EINVAL;
		}
		r = oci_size_pages(a[i].value, &v[k]);
		if (r) {
			snprintf(err, errlen, "annotation %s: %s '%.64s'", a[i].key,
				 r == -ERANGE ? "size out of range" : "bad size", a[i].value);
			return -EINVAL;
		}
		seen = true;
	}
	*out = (struct oci_limits){ 0 };
	if (v[K_LIMIT]) {
		out->from = OCI_ANNOTATION_PREFIX "limit";
	} else if (seen) {
		snprintf(err, errlen, "annotations %smin, pressure and max need %slimit",
			 OCI_ANNOTATION_PREFIX, OCI_ANNOTATION_PREFIX);
		return -EINVAL;
	} else if (has_kernel_tcp && kernel_tcp > 0) {
		/* Bytes, rounded up to pages as sizes are everywhere in tcpbufd. */
		if ((uint64_t)kernel_tcp / SIZE_PAGE_BYTES >= SIZE_MAX_PAGES) {
			snprintf(err, errlen, "linux.resources.memory.kernelTCP: out of range");
			return -EINVAL;
		}
		v[K_LIMIT] = ((uint64_t)kernel_tcp + SIZE_PAGE_BYTES - 1) / SIZE_PAGE_BYTES;
		out->from = "linux.resources.memory.kernelTCP";
	} else {
		return 0;	/* kernelTCP <= 0: unlimited, as runtimes read it */
	}
	if (check_order(v, err, errlen))
		return -EINVAL;
	out->wanted = true;
	out->limit_pages = v[K_LIMIT];
	out->min_pages = v[K_MIN];
	out->pressure_pages = v[K_PRESSURE];
	out->max_pages = v[K_MAX];
	return 0;
}
