/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The key table's claim protocol (maps/fc_shm.h, struct fc_shm_key): how a
 * key's entry is found, and made when it is missing, by any number of
 * writers at once with no lock, so that a key has one entry at most. The
 * nginx module's workers make keys for requests (ngx_bridge/fc_l7.c, which
 * keeps the policy caps); the agent makes a fleet key's release record for
 * a key this node never saw (doc/fleet-design.md section 5.2). Userspace
 * only; every word of the table is another process's to write.
 *
 * An entry is taken by CAS of its tag from 0 or from an idle key's tag to a
 * busy word (the UTC second it was taken, below FC_SHM_KEY_TAG_MIN); the
 * taker then walks the key's windows again, and if the key is there
 * already, or another entry on the way is busy, it puts the entry back as
 * it was. Otherwise it sets the entry up, then tags it (release).
 */
#ifndef FC_KEYTAB_H
#define FC_KEYTAB_H

#include <sched.h>
#include <stdbool.h>
#include <string.h>
#include <time.h>

#include "fc_shm.h"

/* The table and the stat slots whose owner words say which policy (slot,
 * epoch) still owns an entry. */
struct fc_keytab {
	struct fc_shm_key *keys;
	struct fc_shm_slot *slots;
	__u32 nkeys; /* a power of two, from the state file's size */
	__u32 nslots;
};

/* What a claim makes a new entry with. may_make (NULL: always) is asked
 * before an entry is taken for a key new to the policy (not one of its own
 * idle keys taken back); charged says whether it said yes before in this
 * claim (a new-key rate is charged once). */
struct fc_keytab_new {
	__u32 slot, epoch;
	__u64 idle_ns; /* held from the start: an entry not charged yet is not idle */
	__u64 state[FC_MAX_TIERS];
	bool (*may_make)(void *ctx, __u64 now, bool charged);
	void *ctx;
};

/* Lookups wait this many reads at most for an entry being set up; past it
 * the claim gives up (the caller's overflow bucket, never a second bucket). */
#define FC_KEYTAB_SPIN 256

/* How long a lookup waits, yielding the CPU, for a writer making an entry
 * on its key's walk (maybe for this very key: never a second bucket), which
 * may be preempted between taking the entry and tagging it. Past it (a
 * writer stalled or killed there) the claim gives up. Without the wait a
 * racing request went to the overflow bucket at once and could pass there
 * beyond its key's limit (test_keys_race, one CPU). */
#define FC_KEYTAB_WAIT_NS 2000000ULL

/* Whether a policy in slot still owns an entry made with epoch. */
static inline bool fc_keytab_owned(const struct fc_keytab *kt, __u32 slot, __u32 epoch)
{
	return slot && slot < kt->nslots && (__u32)__atomic_load_n(&kt->slots[slot].owner, __ATOMIC_ACQUIRE) == epoch;
}

/* Whether entry e carries nothing a decision needs: its policy is gone, or
 * every bucket of it has run empty. */
static inline bool fc_keytab_idle(const struct fc_keytab *kt, const struct fc_shm_key *e, __u64 now)
{
	__u64 idle;

	if (!fc_keytab_owned(kt, __atomic_load_n(&e->slot, __ATOMIC_RELAXED),
			     __atomic_load_n(&e->epoch, __ATOMIC_RELAXED)))
		return true;
	/* Sequentially consistent: see fc_place_take (ngx_bridge/fc_l7.c). */
	idle = __atomic_load_n(&e->idle_ns, __ATOMIC_SEQ_CST);
	return !(idle & FC_SHM_KEY_HELD) && idle < now;
}

/* Takes one off a count writers share: never below zero, and a bounded
 * number of tries (the word is the workers' to write). Returns what is left. */
static inline __u64 fc_shm_count_dec(__u64 *count)
{
	__u64 cur = __atomic_load_n(count, __ATOMIC_RELAXED);
	int i;

	for (i = 0; i < 64 && cur; i++)
		if (__atomic_compare_exchange_n(count, &cur, cur - 1, true, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED))
			return cur - 1;
	return cur;
}

/* The entries of a key's probe walk: its two windows, interleaved (each
 * window's j-th entry, the first choice's first), a window ending at its
 * first entry never used. An entry this writer holds busy (skip) is read as
 * the tag it had before (skip_t), without waiting for it. */
struct fc_keytab_walk {
	struct fc_shm_key *keys;
	const struct fc_shm_key *skip;
	__u64 skip_t;
	__u32 mask, at[2], left[2];
	int w;
};

static inline void fc_keytab_walk_start(const struct fc_keytab *kt, __u64 tag, const struct fc_shm_key *skip,
					__u64 skip_t, struct fc_keytab_walk *k)
{
	k->keys = kt->keys;
	k->skip = skip;
	k->skip_t = skip_t;
	k->mask = kt->nkeys - 1;
	k->at[0] = fc_shm_key_place(tag, 0, kt->nkeys);
	k->at[1] = fc_shm_key_place(tag, 1, kt->nkeys);
	k->left[0] = k->left[1] = FC_SHM_KEY_PROBE;
	k->w = 1;
}

/* The next entry of the walk and its tag (waited for a while if it is
 * being set up), or NULL at its end. */
static inline struct fc_shm_key *fc_keytab_walk_next(struct fc_keytab_walk *k, __u64 *t)
{
	struct fc_shm_key *e;
	unsigned spin;

	if (!k->left[k->w ^ 1] && !k->left[k->w])
		return NULL;
	if (k->left[k->w ^ 1])
		k->w ^= 1;
	e = &k->keys[k->at[k->w]];
	k->at[k->w] = (k->at[k->w] + 1) & k->mask;
	k->left[k->w]--;
	*t = e == k->skip ? k->skip_t : __atomic_load_n(&e->tag, __ATOMIC_ACQUIRE);
	for (spin = 0; e != k->skip && *t && *t < FC_SHM_KEY_TAG_MIN && spin < FC_KEYTAB_SPIN; spin++)
		*t = __atomic_load_n(&e->tag, __ATOMIC_ACQUIRE);
	if (!*t)
		k->left[k->w] = 0; /* the end of this window's chain */
	return e;
}

enum fc_keytab_find {
	FC_KEYTAB_FOUND,
	FC_KEYTAB_ABSENT,
	FC_KEYTAB_BUSY, /* absent, but an entry on the way is being set up: maybe for this key */
};

/* Walks tag's windows for its entry (*e); skip is an entry this writer
 * holds busy, which had tag skip_t. For FC_KEYTAB_ABSENT and
 * FC_KEYTAB_BUSY, *take is the first entry that could be taken (never used,
 * idle, or left busy by a killed writer; NULL: none) and *seen its tag. */
static inline enum fc_keytab_find fc_keytab_find(const struct fc_keytab *kt, __u64 tag, __u64 now,
						 const struct fc_shm_key *skip, __u64 skip_t, struct fc_shm_key **e,
						 struct fc_shm_key **take, __u64 *seen)
{
	__u64 t, secs = now / FC_NS_PER_SEC;
	struct fc_keytab_walk k;
	bool busy = false;

	*take = NULL;
	*seen = 0;
	fc_keytab_walk_start(kt, tag, skip, skip_t, &k);
	while ((*e = fc_keytab_walk_next(&k, &t))) {
		if (*e == skip)
			continue;
		if (t == tag)
			return FC_KEYTAB_FOUND;
		if (fc_shm_key_busy(t, secs))
			busy = true;
		else if (!*take && (t < FC_SHM_KEY_TAG_MIN || fc_keytab_idle(kt, *e, now)))
			*take = *e, *seen = t;
	}
	return busy ? FC_KEYTAB_BUSY : FC_KEYTAB_ABSENT;
}

/* Whether to look again: yes, after a yield, until FC_KEYTAB_WAIT_NS have
 * passed since the first call (*since: 0 before it). */
static inline bool fc_keytab_wait(__u64 *since)
{
	struct timespec ts;
	__u64 t;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	t = (__u64)ts.tv_sec * FC_NS_PER_SEC + (__u64)ts.tv_nsec;
	if (!*since)
		*since = t;
	if (t - *since >= FC_KEYTAB_WAIT_NS)
		return false;
	sched_yield();
	return true;
}

/* Puts back an entry taken for a key that another writer made meanwhile
 * (unless a writer took it over as a killed one's). */
static inline void fc_keytab_untake(struct fc_shm_key *e, __u64 busy, __u64 seen)
{
	__atomic_compare_exchange_n(&e->tag, &busy, seen, false, __ATOMIC_RELEASE, __ATOMIC_RELAXED);
}

/* Sets up an entry taken (busy) for tag as nk says, then tags it. */
static inline void fc_keytab_make(const struct fc_keytab *kt, struct fc_shm_key *take, __u64 seen, __u64 tag,
				  const struct fc_keytab_new *nk)
{
	__u32 os = __atomic_load_n(&take->slot, __ATOMIC_RELAXED), oe = __atomic_load_n(&take->epoch, __ATOMIC_RELAXED);

	/* The count of the policy it belonged to, if that still owns it. */
	if (seen >= FC_SHM_KEY_TAG_MIN && fc_keytab_owned(kt, os, oe))
		fc_shm_count_dec(&kt->slots[os].keys);
	take->slot = nk->slot;
	take->epoch = nk->epoch;
	take->idle_ns = nk->idle_ns;
	memcpy(take->state, nk->state, sizeof(take->state));
	take->passed = take->denied = 0;
	__atomic_fetch_add(&kt->slots[nk->slot].keys, 1, __ATOMIC_RELAXED);
	__atomic_store_n(&take->tag, tag, __ATOMIC_RELEASE);
}

/*
 * tag's entry, found or made in the first free or idle entry of its walk
 * (nk: how, and whether the policy may make a key now). NULL: not found and
 * not made (both windows full of live keys, the caps, or a writer stalled
 * on the walk). Of two writers meeting a new key at once, each CAS comes
 * before the other's walk, so one of them sees the other, and they make
 * one entry at most.
 */
static inline struct fc_shm_key *fc_keytab_claim(const struct fc_keytab *kt, __u64 tag, __u64 now,
						 const struct fc_keytab_new *nk)
{
	struct fc_shm_key *e, *take, *other, *dummy;
	__u64 seen, t, busy = (now / FC_NS_PER_SEC) | 1, since = 0;
	bool charged = false;
	int tries;

	for (tries = 0; tries < 4; tries++) {
		switch (fc_keytab_find(kt, tag, now, NULL, 0, &e, &take, &seen)) {
		case FC_KEYTAB_FOUND:
			return e;
		case FC_KEYTAB_BUSY: /* maybe this very key, being made: wait for it, not a try */
			if (!fc_keytab_wait(&since))
				return NULL;
			tries--;
			continue;
		case FC_KEYTAB_ABSENT:
			break;
		}
		if (!take)
			return NULL;
		/* Taking back one of its own keys is not a new key. */
		if (!(seen >= FC_SHM_KEY_TAG_MIN && __atomic_load_n(&take->slot, __ATOMIC_RELAXED) == nk->slot &&
		      __atomic_load_n(&take->epoch, __ATOMIC_RELAXED) == nk->epoch)) {
			if (nk->may_make && !nk->may_make(nk->ctx, now, charged))
				return NULL;
			charged = true;
		}
		t = seen;
		if (!__atomic_compare_exchange_n(&take->tag, &t, busy, false, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED))
			continue; /* taken meanwhile, maybe for this very key: look again */
		if (seen >= FC_SHM_KEY_TAG_MIN && !fc_keytab_idle(kt, take, now)) {
			/* Its key took a place or was charged since it looked idle
			 * (see fc_place_take): it stays that key's. */
			fc_keytab_untake(take, busy, seen);
			continue;
		}
		/* Another writer making this key too: one of the two sees the
		 * other's entry (the fence keeps the walk's reads after the CAS),
		 * and backs off. */
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
		switch (fc_keytab_find(kt, tag, now, take, seen, &other, &dummy, &t)) {
		case FC_KEYTAB_FOUND:
			fc_keytab_untake(take, busy, seen);
			return other;
		case FC_KEYTAB_BUSY:
			fc_keytab_untake(take, busy, seen);
			if (!fc_keytab_wait(&since))
				return NULL;
			continue;
		case FC_KEYTAB_ABSENT:
			break;
		}
		fc_keytab_make(kt, take, seen, tag, nk);
		return take;
	}
	return NULL;
}

#endif /* FC_KEYTAB_H */
