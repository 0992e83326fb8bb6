/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Publishing to the L7 shared memory (maps/fc_shm.h) that the nginx module
 * reads: the L7 policies in the inactive config block, then switched live;
 * the IP bans (for nginx behind a proxy, on the real client address) and the
 * uid bans in the inactive ban table, then switched live. Idempotent: a
 * publish that would write what is live already writes nothing.
 *
 * The config file is root's: created with O_EXCL|O_NOFOLLOW, 0640 with the
 * workers' group; an existing one that is not a regular file owned by us,
 * not of this layout, or writable by others is replaced (a new file renamed
 * over it), never trusted or resized in place. The workers' state file is
 * made the same way (0660) but never mapped here: root writes only a slot's
 * owner into it, with pwrite.
 */
#ifndef FC_SHM_WRITE_H
#define FC_SHM_WRITE_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

#include "fc_error.h"
#include "fc_shm.h"
#include "fc_source.h"
#include "fc_store.h"

#define FC_SHM_GROUP_DEFAULT "www-data" /* Debian's nginx workers */

struct fc_shm_result {
	bool published;   /* false: the live block already said this */
	bool bans_written; /* false: the live ban table already held these bans */
	size_t policies;
	size_t ip_bans;
	size_t uid_bans;
	__u64 seq;
};

/* Publishes src (fc_source.h) to the shm at path. group: the files' group
 * (the nginx workers'); NULL for the default, which is skipped if it does not
 * exist. keys: the key table's entries (a power of two from FC_SHM_KEYS_MIN
 * to FC_SHM_KEYS_MAX) for the state file, made anew if it has another size
 * (the workers' keys and counters start afresh); 0: any state file there is
 * kept, a new one has FC_SHM_KEYS. */
int fc_shm_publish(const char *path, const char *group, uint32_t keys, struct fc_source *src, struct fc_shm_result *res,
		   struct fc_err *err);

/* Publishes only what changed (d, read from src's store) over a shm marked as
 * holding store store_id up to change from: nginx's changed policies spliced
 * into a new block, the changed bans changed in the live ban table (rebuilt
 * when it must be). 1 (nothing written): the shm is not marked so, only a
 * full publish can do. The caller holds the pin dir's lock. */
int fc_shm_publish_delta(const char *path, const char *group, uint32_t keys, struct fc_source *src,
			 const struct fc_delta *d, uint64_t store_id, uint64_t from, struct fc_shm_result *res,
			 struct fc_err *err);

/* Marks the shm as holding store store_id up to change seq (once committed);
 * a publish clears the mark before it writes. fc_shm_marked reads it (0, 0:
 * none, or no shm of ours at path). */
int fc_shm_mark(const char *path, uint64_t store_id, uint64_t seq, struct fc_err *err);
void fc_shm_marked(const char *path, uint64_t *store_id, uint64_t *seq);

struct fc_fleet_cfg;
/* Each of cfg's policies' splits as the live block at path holds them, for
 * the workers (has_held: an item of the same epoch and node): where a rate
 * edit kept a window's split, an agent started since learns it here. */
void fc_shm_fleet_held(const char *path, struct fc_fleet_cfg *cfg);

/* The clock offset of fleet policies the shm at path says (0: none, or no
 * shm of ours): a publisher not told one (the CLI) keeps the agent's. */
int64_t fc_shm_fleet_clock(const char *path);
/* An offset past a day is none: no test needs one, and windows of a day
 * would be another's. */
#define FC_FLEET_CLOCK_MAX_NS (86400LL * 1000000000LL)

/* Whether path holds a shm of this layout with a block published (whoever
 * owns it: a reader's answer), and its mark (0, 0: none). */
bool fc_shm_published(const char *path, uint64_t *store_id, uint64_t *seq);

/* Removes the shm at path (a config file of freqctl's, or nothing) and its
 * workers' state file: nginx's workers find them gone within a second and
 * let every request pass. */
int fc_shm_unpublish(const char *path, struct fc_err *err);

/* Adds n to the offender reports lost in the shm at path (the agent, after
 * reading the ring); fc_shm_lost reads the count (0 without a shm of ours). */
int fc_shm_add_lost(const char *path, uint64_t n, struct fc_err *err);
uint64_t fc_shm_lost(const char *path);

/* The key table's entries of the state file the config file at path names
 * (0: it names none, or there is no config file of ours). */
uint32_t fc_shm_state_keys(const char *path);

/* The workers' state file of the config file at path: path + ".state". */
int fc_shm_state_path(const char *path, char out[PATH_MAX], struct fc_err *err);

#endif /* FC_SHM_WRITE_H */
