/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Publishing: make the pinned maps hold exactly the store's live bans and
 * policies. A pure function of the store: a full publish diffs what the maps
 * hold against what they should hold and writes only the difference, so
 * running it twice changes nothing, and a policy whose limits change keeps
 * its bucket state. A publish of what changed (the store's change log since
 * the seq the maps were marked with) recomputes only the changed keys and
 * slots, and must leave the maps as a full one would.
 */
#ifndef FC_SYNC_H
#define FC_SYNC_H

#include <stddef.h>
#include <stdint.h>

#include "fc_error.h"
#include "fc_kern.h"
#include "fc_source.h"
#include "fc_store.h"

struct fc_sync_result {
	size_t added;   /* rule entries (bans, policy keys) written that were missing */
	size_t changed; /* rule entries rewritten (a new expiry, another policy) */
	size_t removed; /* rule entries deleted (unbanned, expired, policy gone) */
	size_t policies_changed; /* policy slots written */
	size_t copied;  /* fc_top6 entries written or deleted: copies of fc_pfx6's, not counted above */
	struct fc_config cfg; /* what the maps hold now */
};

/* Makes the maps hold src (fc_source.h): the store's live bans and policies
 * at src->now, at src->node's share. Takes the pin dir's lock. */
int fc_sync(struct fc_source *src, const struct fc_maps *m, const char *pin_dir, struct fc_sync_result *res,
	    struct fc_err *err);
/* The same, the caller holding the pin dir's lock (fc_maps_lock). */
int fc_sync_full(struct fc_source *src, const struct fc_maps *m, struct fc_sync_result *res, struct fc_err *err);
/* Publishes only what changed (d, read from src's store at src->now) over
 * maps that hold the store as it was before: the changed slots and keys,
 * each recomputed from the store. The caller holds the pin dir's lock and
 * knows the maps are marked with the seq d starts from
 * (fc_config.store_seq). */
int fc_sync_delta(struct fc_source *src, const struct fc_maps *m, const struct fc_delta *d, struct fc_sync_result *res,
		  struct fc_err *err);
/* Marks the maps as holding store store_id up to change seq (once it is
 * committed); 0, 0: not known. A publish clears the mark before it writes.
 * Sets the clock's offset to UTC afresh (fc_clock_refresh), shift_ns ahead
 * (struct fc_fleet_view.clock_ns). */
int fc_sync_mark(const struct fc_maps *m, uint64_t store_id, uint64_t seq, int64_t shift_ns, struct fc_err *err);

#endif /* FC_SYNC_H */
