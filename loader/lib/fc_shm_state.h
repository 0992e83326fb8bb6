/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Root's reads of the workers' state file (maps/fc_shm.h): stat slots and
 * the offender ring. The file is writable by the workers' user, so it is
 * read with pread into our own memory, never mapped (a worker may truncate
 * it, and a mapped read past its end would kill us with SIGBUS), every
 * offset is a constant, and every value read is the workers' say-so: a
 * counter may be garbage, an index is bounded before use.
 */
#ifndef FC_SHM_STATE_H
#define FC_SHM_STATE_H

#include <stddef.h>
#include <stdint.h>

#include "fc_error.h"
#include "fc_shm.h"

/* Opens the state file of the shm at shm_path for reading (a regular file,
 * no link followed); -1 with err if there is none. */
int fc_state_open(const char *shm_path, struct fc_err *err);

/* Reads slots [0, n) into out; what the file does not hold reads as zeros. */
void fc_state_slots(int fd, struct fc_shm_slot *out, size_t n);

/* The ring's head, as the workers left it (0 if unreadable). */
uint64_t fc_state_ring_head(int fd);
/* The workers' count of requests an allow entry let through (as written). */
uint64_t fc_state_allowed(int fd);
/* The workers' counts of requests a uid ban and an address ban refused. */
void fc_state_banned(int fd, uint64_t *uid, uint64_t *addr);

/* Reads n ring entries from index from (wrapping) into out; what the file
 * does not hold reads as zeros, i.e. as entries not written yet. */
void fc_state_ring_read(int fd, uint64_t from, size_t n, struct fc_shm_ring_entry *out);

/* Opens the state file of the shm at shm_path (flags: O_RDONLY or O_RDWR)
 * to read its key table, of *nkeys entries: as many as the config file
 * names, or keys (--shm-keys) where it names none, or FC_SHM_KEYS. A file
 * of another size (the workers' user can resize it) is refused: -1 with
 * err naming the path, the size found and the size expected (errno
 * EINVAL; ENOENT: there is no state file). */
int fc_state_open_keys(const char *shm_path, uint32_t keys, int flags, uint32_t *nkeys, struct fc_err *err);

/* Calls each(key, arg) for every entry of fd's key table of nkeys entries
 * whose tag is at least from_tag: FC_SHM_KEY_TAG_MIN for those that hold a
 * key, 1 for entries being set up too (read in chunks; every field the
 * workers' say-so). */
int fc_state_keys_each(int fd, uint32_t nkeys, uint64_t from_tag, void (*each)(const struct fc_shm_key *k, void *arg),
		       void *arg, struct fc_err *err);

/* A per-key policy's keys in the key table: the busiest (passed + denied),
 * most first, at most max of them, and how many it holds. */
struct fc_keys_top {
	struct fc_shm_key *v; /* malloc'd; every field the workers' say-so */
	size_t n;
	uint64_t total, live; /* the policy's keys, and those not idle at now */
};

/* Reads the keys of the policy in slot with epoch (keys: as
 * fc_state_open_keys) into *t, in memory for max keys whatever the table
 * holds. A key's value is not kept, only its keyed hash (tag). */
int fc_state_keys_top(const char *shm_path, uint32_t keys, uint32_t slot, uint32_t epoch, uint64_t now, size_t max,
		      struct fc_keys_top *t, struct fc_err *err);

/* The value table (--show-keys), into out (FC_SHM_VALS entries): read
 * twice, an entry kept only where both reads agree and it is whole (a key's
 * tag, a length within bounds, a policy slot), every other read as never
 * used. What it keeps is still the workers' say-so. */
void fc_state_vals(int fd, struct fc_shm_val *out);

/* The value in vals (from fc_state_vals) of key tag of the policy in slot
 * with epoch, or NULL. A key the key table no longer holds may have one
 * left: look up only the tags of keys just read there. */
const struct fc_shm_val *fc_state_val_of(const struct fc_shm_val *vals, uint64_t tag, uint32_t slot, uint32_t epoch);

/* Counts each policy's live keys in the key table (an entry its policy
 * still owns, not idle at now, UTC ns) and writes the counts into the
 * slots' keys words, which workers hold --max-keys against: a key that
 * went idle frees room for a new one. The counts race the workers'
 * increments, so they are approximate. -1 with err if the state file can
 * not be opened for writing, or is not of the size named (keys: as
 * fc_state_open_keys). */
int fc_state_keys_recount(const char *shm_path, uint32_t keys, uint64_t now, struct fc_err *err);

#endif /* FC_SHM_STATE_H */
