/* SPDX-License-Identifier: GPL-2.0 */
#ifndef TCPBUFD_ARRAY_H
#define TCPBUFD_ARRAY_H

#include <errno.h>
#include <stdlib.h>

/* Room for one more element at index n of a doubling array (first: the
 * capacity of its first allocation). 0, or -ENOMEM with the array as it was. */
static inline int array_reserve_(void **array, size_t *cap, size_t n, size_t elem, size_t first)
{
	size_t c;
	void *p;

	if (n < *cap)
		return 0;
	c = *cap ? *cap * 2 : first;
	p = realloc(*array, c * elem);
	if (!p)
		return -ENOMEM;
	*array = p;
	*cap = c;
	return 0;
}

#define array_reserve(array, cap, n, first) \
	array_reserve_((void **)&(array), &(cap), (n), sizeof(*(array)), (first))

#endif /* TCPBUFD_ARRAY_H */
