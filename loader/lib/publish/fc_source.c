// SPDX-License-Identifier: BSD-2-Clause
#include <stdlib.h>
#include <string.h>

#include "fc_source.h"

void fc_source_init(struct fc_source *src, struct fc_store *st, int64_t now, const struct fc_node_ctx *node)
{
	memset(src, 0, sizeof(*src));
	src->st = st;
	src->now = now;
	src->node = *node;
}

int fc_source_policies(struct fc_source *src, struct fc_err *err)
{
	if (src->read)
		return 0;
	if (fc_store_policy_list(src->st, &src->pols, &src->npols, err) < 0)
		return -1;
	src->read = true;
	return 0;
}

void fc_source_free(struct fc_source *src)
{
	free(src->pols);
	src->pols = NULL;
	src->npols = 0;
	src->read = false;
}
