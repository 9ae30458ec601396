/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What an OCI container's spec asks of tcpbufd, decided from plain values
 * (no JSON, no I/O) so it can be tested by table:
 *   tcpbufd.io/limit: 16M                       ceiling 4096 pages
 *   tcpbufd.io/limit: 64Mi, tcpbufd.io/max: 48Mi  ceiling 16384, max 12288
 *   (no annotation) kernelTCP: 16777216         ceiling 4096 pages
 *   (no annotation) kernelTCP: -1 or 0          no limit (Docker's "unlimited")
 *   tcpbufd.io/limit: 16X                       error naming the annotation
 *   tcpbufd.io/limt: 16M                        error: unknown annotation
 * Sizes as INTERFACE.md has them (a plain number counts pages; K/M/G are
 * binary, as in the rest of tcpbufd, so "16M" is 16 MiB even though
 * Kubernetes reads "M" as 10^6), plus Kubernetes' Ki/Mi/Gi/Ti.
 */
#ifndef TCPBUFD_OCI_LIMITS_H
#define TCPBUFD_OCI_LIMITS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define OCI_ANNOTATION_PREFIX	"tcpbufd.io/"

struct oci_limits {
	bool wanted;			/* false: the spec asks for nothing */
	uint64_t limit_pages;
	uint64_t min_pages, pressure_pages, max_pages;	/* 0: default under the ceiling */
	const char *from;		/* "tcpbufd.io/limit" or "linux.resources.memory.kernelTCP" */
};

/* One annotation of the spec; only those under OCI_ANNOTATION_PREFIX are read. */
struct oci_annotation {
	const char *key, *value;
};

/*
 * Decide from @n annotations and kernelTCP (@has_kernel_tcp, bytes).
 * Returns 0 with *out filled, or -EINVAL with one line in @err naming the
 * annotation or field.
 */
int oci_limits_decide(const struct oci_annotation *a, size_t n, bool has_kernel_tcp,
		      int64_t kernel_tcp, struct oci_limits *out, char *err, size_t errlen);

/* A size as above (Ki/Mi/Gi/Ti too) into pages, >= 1: 0, -EINVAL or -ERANGE. */
int oci_size_pages(const char *s, uint64_t *pages);

#endif /* TCPBUFD_OCI_LIMITS_H */
