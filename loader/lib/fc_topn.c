// SPDX-License-Identifier: BSD-2-Clause
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fc_topn.h"

/* The heap's root (element 0) is the last kept in the ranking: a parent
 * never ranks before its children. */
static void *fc_at(const struct fc_topn *t, size_t i)
{
	return (char *)t->v + i * t->size;
}

static void fc_swap(const struct fc_topn *t, size_t i, size_t j)
{
	unsigned char *a = fc_at(t, i), *b = fc_at(t, j), c;
	size_t k;

	for (k = 0; k < t->size; k++) {
		c = a[k];
		a[k] = b[k];
		b[k] = c;
	}
}

void fc_topn_init(struct fc_topn *t, void *v, size_t size, size_t max, int (*cmp)(const void *, const void *))
{
	*t = (struct fc_topn){ .v = v, .size = size, .max = max, .cmp = cmp };
}

bool fc_topn_push(struct fc_topn *t, const void *x)
{
	size_t i, c;

	if (t->n < t->max) {
		memcpy(fc_at(t, t->n), x, t->size);
		for (i = t->n++; i && t->cmp(fc_at(t, (i - 1) / 2), fc_at(t, i)) < 0; i = (i - 1) / 2)
			fc_swap(t, i, (i - 1) / 2);
		return true;
	}
	if (!t->max || t->cmp(x, t->v) >= 0)
		return false; /* ranks no better than the last kept */
	memcpy(t->v, x, t->size);
	for (i = 0; (c = 2 * i + 1) < t->n; i = c) {
		if (c + 1 < t->n && t->cmp(fc_at(t, c + 1), fc_at(t, c)) > 0)
			c++; /* the child that ranks last */
		if (t->cmp(fc_at(t, c), fc_at(t, i)) <= 0)
			break;
		fc_swap(t, i, c);
	}
	return true;
}

void fc_topn_sort(struct fc_topn *t)
{
	qsort(t->v, t->n, t->size, t->cmp);
}
