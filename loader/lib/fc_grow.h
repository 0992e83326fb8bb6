/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * An array that grows by doubling, for the callers that build one entry at
 * a time (the Redis client's pipelines, the fleet's batches).
 */
#ifndef FC_GROW_H
#define FC_GROW_H

#include <stdlib.h>

/* Room for need elements of size bytes in *p (*cap of them now): 0, or -1
 * (out of memory: *p and *cap as they were). */
static inline int fc_grow(void **p, size_t *cap, size_t need, size_t size)
{
	size_t n = *cap ? *cap : 16;
	void *q;

	if (need <= *cap)
		return 0;
	while (n < need)
		n *= 2;
	q = realloc(*p, n * size);
	if (!q)
		return -1;
	*p = q;
	*cap = n;
	return 0;
}

#endif /* FC_GROW_H */
