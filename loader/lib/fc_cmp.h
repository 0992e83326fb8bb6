/* SPDX-License-Identifier: BSD-2-Clause */
/* qsort/bsearch orders of plain numbers. */
#ifndef FC_CMP_H
#define FC_CMP_H

#include <stdint.h>

static inline int fc_u32_cmp(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return (x > y) - (x < y);
}

static inline int fc_u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

#endif /* FC_CMP_H */
