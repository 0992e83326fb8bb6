/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The L7 shared-memory layout: what `freqctl sync` writes to the shm file and
 * the nginx module (ngx_bridge/) reads. One definition, included by the
 * loader, the module and the tests.
 *
 *   header | config block 0 | config block 1 | stat slots | ban table | offender ring
 *
 * Config blocks are written RCU-style: the writer (one at a time, under the
 * pin dir's lock) fills the inactive block, then publishes it by storing
 * `active` and bumping `seq` with release ordering. A reader notices a new
 * seq, reads `active` and copies what it needs out of that block into its own
 * memory; a block is rewritten only two publishes later, and a reader that
 * saw seq change while it copied starts over. Readers treat every byte as
 * untrusted: magic, lengths and bounds are checked on every item, and a bad
 * item is skipped, never followed.
 *
 * Stat slots hold the bucket state (one 64-bit word per tier, changed only
 * by compare-and-exchange: exact across workers, no lock that a killed worker
 * could leave held) and counters; a policy keeps its slot across syncs.
 *
 * Bans (uids and IP addresses or prefixes) live apart, in a multi-level hash
 * that workers read in place, so a change of bans costs no worker a rebuild:
 * each publish writes every live ban stamped with ban_seq + 1, taking a slot
 * not stamped so in the first level that has one (the last level probes
 * linearly), then stores ban_seq + 1 with release ordering. A slot is valid
 * only while its stamp equals ban_seq, so what is not rewritten (lifted or
 * expired bans) is gone the moment the new seq is.
 */
#ifndef FC_SHM_H
#define FC_SHM_H

#include <linux/types.h>

#include "fc_limit.h"

#define FC_SHM_MAGIC     0x37474346 /* "FCG7" */
#define FC_SHM_VERSION   1
#define FC_SHM_DEFAULT   "/dev/shm/freqctl"

#define FC_SHM_BLOCK_MAGIC 0x4b4c4246 /* "FBLK" */
#define FC_SHM_ITEM_MAGIC  0x4d544946 /* "FITM" */

/* Capacity: a block holds 64 MiB of items (the file is sparse: only written
 * pages use memory); slots for every policy slot number; ban table levels of
 * decreasing prime sizes, ~2M slots for up to ~1.5M bans. */
#define FC_SHM_BLOCK_SIZE (64u << 20)
#define FC_SHM_SLOTS      65537u
#define FC_SHM_BAN_LEVELS 4
#define FC_SHM_BAN_PROBE  64 /* linear probes in the last level */
static const __u32 fc_shm_ban_level[FC_SHM_BAN_LEVELS] = { 1048573, 524287, 262139, 131071 };
#define FC_SHM_BAN_SLOTS (1048573u + 524287u + 262139u + 131071u)
#define FC_SHM_RING_SIZE 65536u /* offender reports; a power of two */

/* Bounds on what an item may carry (the writer refuses more). */
#define FC_SHM_MAX_DIMS   8
#define FC_SHM_MAX_NAME   64
#define FC_SHM_MAX_VALUE  255

struct fc_shm_header {
	__u32 magic;
	__u32 version;
	__u32 init;   /* 1 once the layout below is valid */
	__u32 active; /* 0 or 1: the live config block */
	__u64 seq;    /* bumped (release) after each publish */
	__u64 size;   /* the file's size */
	__u64 block_off[2];
	__u64 block_size;
	__u64 slots_off;
	__u32 nslots;
	__u32 ban_seq;     /* the stamp of valid ban slots */
	__u64 bans_off;
	__u32 nban_slots;  /* FC_SHM_BAN_SLOTS */
	__u32 pad;
	__u64 ban_plens[4]; /* prefix lengths with an IP ban: IPv4 p at bit p, IPv6 p at bit 64 + p */
	__u64 ring_off;     /* struct fc_shm_ring */
	__u32 ring_size;    /* FC_SHM_RING_SIZE */
	__u32 pad2;
};

/*
 * The offender ring: workers report each request refused by a policy that
 * escalates (FC_SHM_POLICY_ESCALATE) without ever waiting: they take an index
 * with one fetch-and-add on head and write that entry, stamping seq = index
 * + 1 last. The agent reads behind them; an entry whose stamp is not its
 * index + 1 is not written yet, or was overwritten by a faster lap.
 */
struct fc_shm_ring_entry {
	__u64 seq;
	__u32 policy; /* the refusing policy's id */
	__u8 family;  /* 4 or 6 */
	__u8 pad[3];
	__u8 addr[16];
};

struct fc_shm_ring {
	__u64 head; /* alone on its cache line: the only word workers write to */
	__u64 pad[7];
	struct fc_shm_ring_entry e[FC_SHM_RING_SIZE];
};

/* fc_shm_policy.flags */
#define FC_SHM_POLICY_ESCALATE 0x100

struct fc_shm_block {
	__u32 magic;
	__u32 nitems;
	__u64 seq;  /* the header seq this block was published with */
	__u64 used; /* bytes of items after this header */
};

enum fc_shm_item_kind {
	FC_SHM_POLICY = 1,
};

/* Every item starts with this; len covers the whole item, a multiple of 8. */
struct fc_shm_item {
	__u32 magic;
	__u16 kind;
	__u16 len;
};

enum fc_dim_kind {
	FC_DIM_IP = 1,     /* value: family byte, prefix length byte, 4 or 16 address bytes */
	FC_DIM_UID = 2,    /* value: the user id */
	FC_DIM_ARG = 3,    /* name: query argument; value: its value */
	FC_DIM_HEADER = 4, /* name: header, lowercase; value: its value */
	FC_DIM_URI = 5,    /* value: the path */
};

/* A dimension inside a policy item: header, then name_len + value_len bytes,
 * padded to 4. */
struct fc_shm_dim {
	__u8 kind;
	__u8 name_len;
	__u8 value_len;
	__u8 pad;
};

enum fc_l7_action {
	FC_L7_DROP = 0,  /* answer freqctl_status */
	FC_L7_LOG = 1,   /* count what would be denied */
	FC_L7_DELAY = 2, /* wait to the rate, up to delay_burst queued; past that, deny */
};

struct fc_shm_policy {
	struct fc_shm_item item;
	__u32 id;
	__u32 slot;  /* stat slot, 1..FC_SHM_SLOTS-1 */
	__u32 epoch; /* must equal the slot's owner epoch */
	__u8 algo;   /* enum fc_algo */
	__u8 action; /* enum fc_l7_action */
	__u8 ndims;
	__u8 ntiers;
	__u32 delay_burst;
	__u32 flags; /* FC_POLICY_PRECISE: read the precise clock for it */
	struct fc_tier tier[FC_MAX_TIERS];
	/* ndims struct fc_shm_dim follow */
};

/* A ban table slot. A uid is kept as its 64-bit hash (fc_shm_ban_hash), as
 * the source design does; an address as its masked bytes. */
struct fc_shm_ban_slot {
	__u32 seq;        /* valid while equal to the header's ban_seq */
	__u8 family;      /* 0: uid; 4 or 6: address */
	__u8 plen;
	__u8 pad[2];
	__u64 hash;
	__u64 expires_ns; /* UTC ns; 0 = never */
	__u8 addr[16];
};

/* FNV-1a over a ban's key: the family, the length, then the uid or the
 * masked address bytes. */
static inline __u64 fc_shm_ban_hash(__u8 family, __u8 plen, const void *key, __u32 len)
{
	const __u8 *p = key;
	__u64 h = 0xcbf29ce484222325ULL ^ ((__u64)family << 8 | plen);
	__u32 i;

	for (i = 0; i < len; i++) {
		h ^= p[i];
		h *= 0x100000001b3ULL;
	}
	return h ^ (h >> 31);
}

/* The slot of a key's hash in level l, as an index into the whole table. */
static inline __u32 fc_shm_ban_index(__u64 hash, int level)
{
	__u32 off = 0;
	int i;

	for (i = 0; i < level; i++)
		off += fc_shm_ban_level[i];
	return off + (__u32)(hash % fc_shm_ban_level[level]);
}

/* One policy's bucket and counters: one cache line. */
struct fc_shm_slot {
	__u64 state[FC_MAX_TIERS];
	__u64 owner; /* (id << 32) | epoch of the policy the state belongs to */
	__u64 passed;
	__u64 denied;
	__u64 delayed;
};

#define FC_SHM_OWNER(id, epoch) (((__u64)(id) << 32) | (epoch))

static inline __u64 fc_shm_align8(__u64 n)
{
	return (n + 7) & ~7ULL;
}

#endif /* FC_SHM_H */
