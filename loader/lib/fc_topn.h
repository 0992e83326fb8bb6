/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The first max of a stream in a ranking, kept in a bounded heap: memory
 * for max elements whatever the stream's length, O(log max) an element.
 * freqctl keys keeps a policy's busiest keys so, and top the keys using
 * most of their limits, from key tables of up to 16M entries.
 */
#ifndef FC_TOPN_H
#define FC_TOPN_H

#include <stdbool.h>
#include <stddef.h>

struct fc_topn {
	void *v; /* room for max elements of size bytes (the caller's) */
	size_t size, max, n;
	/* < 0: a ranks before b (qsort's order for the ranking) */
	int (*cmp)(const void *a, const void *b);
};

/* Over v, empty. */
void fc_topn_init(struct fc_topn *t, void *v, size_t size, size_t max, int (*cmp)(const void *, const void *));
/* Keeps a copy of x if it is among the first max so far; whether it did. */
bool fc_topn_push(struct fc_topn *t, const void *x);
/* Sorts what is kept, in ranking order (the heap is no more). */
void fc_topn_sort(struct fc_topn *t);

#endif /* FC_TOPN_H */
