/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What one publish writes: the store as it is at one instant, for this
 * node. Its policies are read once, by the first layer that needs them,
 * and handed to the next (the BPF maps, then nginx's shm).
 */
#ifndef FC_SOURCE_H
#define FC_SOURCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fc_enforce.h"
#include "fc_error.h"
#include "fc_store.h"

struct fc_source {
	struct fc_store *st;
	int64_t now;                /* unix seconds: what has expired by then is not published */
	struct fc_node_ctx node;    /* whose share of the limits */
	struct fc_policy_row *pols; /* every valid policy in id order, once read */
	size_t npols;
	bool read;
};

void fc_source_init(struct fc_source *src, struct fc_store *st, int64_t now, const struct fc_node_ctx *node);
/* Reads the policies (src->pols) unless they were read. */
int fc_source_policies(struct fc_source *src, struct fc_err *err);
void fc_source_free(struct fc_source *src);

#endif /* FC_SOURCE_H */
