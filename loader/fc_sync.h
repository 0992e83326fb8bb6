/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Publishing: make the pinned maps hold exactly the store's live bans. A pure
 * function of the store: it diffs what the maps hold against what they should
 * hold and writes only the difference, so running it twice changes nothing.
 */
#ifndef FC_SYNC_H
#define FC_SYNC_H

#include <stddef.h>
#include <stdint.h>

#include "fc_error.h"
#include "fc_kern.h"
#include "fc_store.h"

struct fc_sync_result {
	size_t added;   /* entries written that were missing */
	size_t changed; /* entries rewritten with a new expiry */
	size_t removed; /* entries deleted (unbanned or expired) */
	struct fc_config cfg; /* what the maps hold now */
};

/* now is the unix time the store is read at (expired bans are not published). */
int fc_sync(struct fc_store *st, const struct fc_maps *m, const char *pin_dir, int64_t now,
	    struct fc_sync_result *res, struct fc_err *err);

/* A ban's kernel expiry (CLOCK_TAI ns) for a store expiry (unix seconds). */
uint64_t fc_expiry_tai_ns(int64_t expires);

#endif /* FC_SYNC_H */
