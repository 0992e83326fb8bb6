/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The counters of one node in one read: the XDP/TC totals, each policy's
 * passed/dropped/delayed (packets at XDP/TC from the pinned per-CPU maps,
 * requests in nginx from the shm's stat slots) and the live bans. Read by
 * stats, top and the agent's /metrics.
 */
#ifndef FC_STATS_H
#define FC_STATS_H

#include "fc_cli.h"
#include "fc_kern.h"
#include "fc_store.h"

struct fc_policy_stats {
	const struct fc_policy_row *row;
	struct fc_pstats ps; /* packets at XDP/TC; requests in nginx (no bytes) */
	uint64_t delayed;    /* nginx, action delay */
};

struct fc_stats_all {
	struct fc_stats s;
	struct fc_policy_row *rows;
	struct fc_policy_stats *ps; /* one per row, in id order */
	size_t n;
	struct fc_ban_counts bans;
};

int fc_stats_gather(const struct fc_ctx *ctx, struct fc_stats_all *a, struct fc_err *err);
void fc_stats_free(struct fc_stats_all *a);

#endif /* FC_STATS_H */
