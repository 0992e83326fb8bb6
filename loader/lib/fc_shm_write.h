/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Publishing to the L7 shared memory (maps/fc_shm.h) that the nginx module
 * reads: the L7 policies, the IP bans (for nginx behind a proxy, on the real
 * client address) and the uid bans, in the inactive config block, then
 * switched live. Idempotent: a publish that would write what is live
 * already writes nothing.
 */
#ifndef FC_SHM_WRITE_H
#define FC_SHM_WRITE_H

#include <stdbool.h>
#include <stddef.h>

#include "fc_error.h"
#include "fc_shm.h"
#include "fc_store.h"

#define FC_SHM_GROUP_DEFAULT "www-data" /* Debian's nginx workers */

struct fc_shm_result {
	bool published; /* false: the live block already said this */
	size_t policies;
	size_t ip_bans;
	size_t uid_bans;
	__u64 seq;
};

/* group: the file's group (the nginx workers'); NULL for the default, which
 * is skipped if it does not exist. now: unix seconds (expired bans skipped).
 * weight: this node's share of every policy's rate. */
int fc_shm_publish(const char *path, const char *group, struct fc_store *st, int64_t now, double weight,
		   struct fc_shm_result *res, struct fc_err *err);

/* Maps an existing shm file read-only for its stat slots; *size for munmap. */
const struct fc_shm_slot *fc_shm_slots(const char *path, void **base, size_t *size, struct fc_err *err);

/* Maps an existing shm file read-only for its offender ring (the agent, top). */
const struct fc_shm_ring *fc_shm_ring_map(const char *path, void **base, size_t *size, struct fc_err *err);

#endif /* FC_SHM_WRITE_H */
