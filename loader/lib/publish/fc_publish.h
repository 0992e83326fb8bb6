/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * One change, all or nothing: the store changed inside one transaction,
 * published to the pinned maps and to the L7 shm, then committed; a failed
 * publish rolls back and puts both back to what the store says. Each layer
 * publishes what changed since the mark it holds, or everything when that
 * can not be known (doc/architecture.md, Publishing order).
 */
#ifndef FC_PUBLISH_H
#define FC_PUBLISH_H

#include "fc_ctx.h"
#include "fc_fleet_split.h"
#include "fc_kern.h"
#include "fc_shm_write.h"
#include "fc_store.h"
#include "fc_sync.h"

struct fc_publish {
	const struct fc_ctx *ctx;
	struct fc_store *st;
	struct fc_maps maps;
	int64_t now; /* unix seconds, read once for the whole change */
	size_t purged; /* expired bans (address and uid) dropped from the store */
	size_t lapsed; /* lapsed ban sets dropped from the store */
	int64_t next_expiry; /* unix time the next ban expires or set lapses, 0: none */
	bool full;     /* publish everything (freqctl sync), not only what changed */
	bool delta;    /* only what changed was published (to the maps, the shm or both) */
	struct fc_node_ctx node; /* whose share of the policies' limits, read from the store */
	struct fc_fleet_view fleet; /* the fleet's node set and key (node.fleet points here) */
	/* With want_fleet_cfg, once committed: what the agent leases with
	 * (fc_fleet_split.h), the caller's to free (fc_fleet_cfg_free). */
	bool want_fleet_cfg;
	struct fc_fleet_cfg fleet_cfg;
	/* With want_fleet_cfg: unix ms from which the published fleet splits
	 * may be stale (a node set change that no change-log entry announces):
	 * publish everything then (0: never). */
	int64_t fleet_refresh_ms;
	struct fc_sync_result res;
	struct fc_shm_result shm;
	size_t bad_policies; /* rows not valid as written: reported, not published */
	bool own_st; /* st was opened here, and is closed here */
	struct fc_store_keep *keep; /* st is ctx->keep's, given back at the end */
	bool failed; /* the store or a publish failed: a kept connection is dropped */
};

/* Opens the store (or takes ctx->keep's) and starts the transaction
 * (expired bans are purged in it). */
int fc_publish_begin(struct fc_publish *pub, const struct fc_ctx *ctx, struct fc_err *err);
/* The same on a store the caller keeps open (the agent's one connection to a
 * fleet's PostgreSQL, instead of connecting for every change). */
int fc_publish_begin_on(struct fc_publish *pub, const struct fc_ctx *ctx, struct fc_store *st, struct fc_err *err);
/* A publish applies the changes since the last one, as the change log
 * holds them, up to this many; past it, everything. */
#define FC_PUBLISH_DELTA_MAX 65536

/* Publishes and commits; on failure rolls back and restores the maps. */
int fc_publish_commit(struct fc_publish *pub, struct fc_err *err);
/* Abandons the change (a rejected input): nothing was published. */
void fc_publish_abort(struct fc_publish *pub);

#endif /* FC_PUBLISH_H */
