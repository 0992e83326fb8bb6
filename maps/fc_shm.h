/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The L7 shared memory: what freqctl publishes and the nginx module reads,
 * and what the module's workers write. One definition, included by the
 * loader, the module and the tests.
 *
 * Two files, one per writer, so that root never takes anything from a file
 * another user can write:
 *
 *   the config file (--shm, default /dev/shm/freqctl), written by root only
 *   (0640 root:www-data; workers map it read-only):
 *       header | config block 0 | config block 1 | ban table 0 | ban table 1
 *
 *   the state file (the same path + ".state"), written by the workers (0660
 *   root:www-data; workers map it read-write, root only ever reads it with
 *   pread, every value as hostile, and writes a slot's owner with pwrite):
 *       state header | stat slots | offender ring | worker records | holds | value table | fleet ring |
 *       key table
 *
 * Every offset is a constant of this header: no reader takes one from a
 * file. A layout change is a new version; root replaces an old file by
 * renaming a new one over it (workers notice the new inode and remap; a
 * file resized in place would SIGBUS them).
 *
 * Config blocks and ban tables are written RCU-style: the writer (one at a
 * time, under the pin dir's lock) fills the inactive one, then publishes it
 * by storing which is active and bumping a seq, with release ordering. A
 * reader copies what it needs, then re-reads the seq after an acquire fence
 * and starts over if it moved. Readers treat every byte as untrusted: magic,
 * lengths and bounds on every item; a bad item is skipped, never followed.
 *
 * Stat slots hold the bucket state (one 64-bit word per tier, and a warm-up
 * policy's ramp start after them, each changed only by compare-and-exchange:
 * exact across workers, no lock that a killed worker could leave held) and
 * counters; a policy keeps its slot across publishes.
 *
 * Bans (uids and IP addresses or prefixes) and allow entries (the same,
 * FC_SHM_BAN_ALLOW in their family) live in a multi-level hash that
 * workers read in place, so a change of bans costs no worker a rebuild. A
 * slot is in use only while its seq is its table's stamp; a reader stops at
 * the first slot of a probe sequence not in use. A change of a few bans is
 * made in the live table, in place: a new ban takes the first tombstone or
 * free slot of its probe sequence (a free one filled first, its stamp
 * stored last with release ordering; a tombstone rewritten under the slot's
 * seqlock: ver odd while it changes, a reader copies the slot between two
 * even, equal reads of ver and takes a slot that never settles as no ban);
 * a ban that stays changes only its expiry word, and a lifted ban only its
 * family byte, to FC_SHM_BAN_DEAD: a tombstone, which matches nothing but
 * keeps the probe sequences through it whole. When tombstones
 * pile up, or a ban finds no slot, or nothing is known of the live table
 * (a new file, a publish cut short), every live ban is written into the
 * inactive table under a fresh stamp (never one used before, so a failed
 * write leaves nothing a later one trusts), which is then made live
 * (ban_live: table and stamp in one word): what was not rewritten is gone
 * with the switch.
 */
#ifndef FC_SHM_H
#define FC_SHM_H

#include <linux/types.h>

#include "fc_fleet.h"
#include "fc_limit.h"
#include "fc_maps.h"
#include "fc_siphash.h"

#define FC_SHM_MAGIC       0x38474346 /* "FCG8" */
#define FC_SHM_STATE_MAGIC 0x54534346 /* "FCST" */
#define FC_SHM_VERSION     8
#define FC_SHM_DEFAULT     "/dev/shm/freqctl"
#define FC_SHM_STATE_SUFFIX ".state"

#define FC_SHM_BLOCK_MAGIC 0x4b4c4246 /* "FBLK" */
#define FC_SHM_ITEM_MAGIC  0x4d544946 /* "FITM" */

/* Capacity: a block holds 64 MiB of items (the files are sparse: only
 * written pages use memory); a stat slot for every policy slot number; ban
 * tables of FC_SHM_BAN_LEVELS levels of decreasing prime sizes, ~2M slots
 * each for up to ~1.5M bans. */
#define FC_SHM_BLOCK_SIZE (64u << 20)
#define FC_SHM_SLOTS      (FC_MAX_POLICIES + 1u)
#define FC_SHM_BAN_LEVELS 4
#define FC_SHM_BAN_L0     1048573u
#define FC_SHM_BAN_L1     524287u
#define FC_SHM_BAN_L2     262139u
#define FC_SHM_BAN_L3     131071u
#define FC_SHM_BAN_SLOTS  (FC_SHM_BAN_L0 + FC_SHM_BAN_L1 + FC_SHM_BAN_L2 + FC_SHM_BAN_L3)
#define FC_SHM_BAN_PROBE  64 /* linear probes in the last level */
static const __u32 fc_shm_ban_level[FC_SHM_BAN_LEVELS] = { FC_SHM_BAN_L0, FC_SHM_BAN_L1, FC_SHM_BAN_L2,
							     FC_SHM_BAN_L3 };
#define FC_SHM_RING_SIZE 65536u /* offender reports; a power of two */

/* Bounds on what an item may carry (the writer refuses more). */
#define FC_SHM_MAX_DIMS   8
#define FC_SHM_MAX_NAME   64
#define FC_SHM_MAX_NAMES  32 /* distinct arg names, and header names, nginx's policies may use */
#define FC_SHM_MAX_VALUE  255

/* The config file's header; root writes it, nobody else can. */
struct fc_shm_header {
	__u32 magic;
	__u32 version;
	__u32 init;        /* 1 once a block has been published */
	__u32 active;      /* 0 or 1: the live config block */
	__u64 seq;         /* bumped (release) after each block publish */
	__u64 ban_live;    /* FC_SHM_BAN_LIVE(stamp, table) of the live ban table; 0: none yet */
	__u32 ban_stamp;   /* the last stamp written, published or not: never reused */
	/* Made odd (a value it never had) before the live table changes in
	 * place, even after: a lookup that saw it odd, or move, may have met
	 * two states of the bans and looks again (ngx_bridge/fc_l7.c,
	 * fc_listed). Left odd by a change cut short: digest and counts
	 * unknown. (Versions before it was a count: 1, then 0.) */
	__u32 ban_gen;
	__u64 ban_digest;  /* of the live ban set (a sum over its bans): an unchanged set is not rewritten */
	__u64 ban_plens[4]; /* prefix lengths with an IP ban: IPv4 p at bit p, IPv6 p at bit 64 + p;
			     * bit 255 (FC_SHM_BAN_UIDS in word 3): some uid is banned */
	__u64 key_secret[2]; /* SipHash key of the key table (fc_shm_key): random, made with the file */
	__u64 allow_plens[4]; /* the same as ban_plens, for allow entries */
	/* The loader's, as fc_config's: the store and the last change of it
	 * this shm holds, set once the change is committed; 0 while a publish
	 * writes. */
	__u64 store_id;
	__u64 store_seq;
	__u32 ban_used;    /* slots of the live table in use: bans and tombstones */
	__u32 ban_dead;    /* tombstones among them */
	/* The agent's count of offender reports it could not read (overwritten
	 * by a faster lap, or never stamped: a worker killed writing one), for
	 * freqctl stats. After the fields workers read: a file of this version
	 * made before it holds zero here. */
	__u64 ring_lost;
	/* The key table's entries in the state file the publisher made or kept
	 * (0: not said yet): root reads a state file of another size as
	 * another's, never as a bigger table. */
	__u32 state_keys;
	__u32 pad;
	/* Fleet-global limits (--fleet, maps/fc_fleet.h), read by workers:
	 * the SipHash key of fleet tags, shared by the fleet (the store's
	 * fleet_k0/1); when this node's state was made anew (no share of a
	 * window that began before it); and a signed offset added to the
	 * clock of fleet policies (0 outside tests: --clock-offset). */
	__u64 fleet_secret[2];
	__u64 fleet_fresh_ns;
	__s64 fleet_clock_ns;
};

#define FC_SHM_BAN_UIDS (1ULL << 63)
/* In a ban table slot's family: an allow entry (what it covers is never
 * banned, limited or capped), not a ban. Part of the hash, so an allow
 * entry and a ban on one key are two slots. */
#define FC_SHM_BAN_ALLOW 0x80

/* The live ban table and its slots' stamp, in one word read at once. */
#define FC_SHM_BAN_LIVE(stamp, table) (((__u64)(stamp) << 32) | (table))
#define FC_SHM_BAN_STAMP(live)        ((__u32)((live) >> 32))
#define FC_SHM_BAN_TABLE(live)        ((__u32)(live) & 1)

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
	FC_DIM_IP = 1,     /* value: family byte, prefix length byte, 4 or 16 address bytes; with
			    * FC_SHM_DIM_ANY the unit: IPv4 prefix length byte, IPv6 prefix length byte */
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
	__u8 flags; /* FC_SHM_DIM_* */
};

/* fc_shm_dim.flags */
#define FC_SHM_DIM_ANY    0x1 /* DIM=*: any value, each its own bucket (no value bytes; ip's: its unit) */
#define FC_SHM_DIM_PREFIX 0x2 /* uri ending in a slash and a star: the value is a prefix of the path */

/* fc_shm_policy.flags, beside FC_POLICY_PRECISE and FC_POLICY_OVERRIDE */
#define FC_SHM_POLICY_ESCALATE 0x100
#define FC_SHM_POLICY_HTTP     0x200 /* ip= alone, but for nginx (--layer http) */
#define FC_SHM_POLICY_SHOW_KEYS 0x400 /* per-key: keep its busiest keys' values (--show-keys) */
#define FC_SHM_POLICY_FLEET    0x800 /* --fleet: a struct fc_shm_fleet follows the policy, before its dims */

struct fc_shm_policy {
	struct fc_shm_item item;
	__u32 id;
	__u32 slot;  /* stat slot, 1..FC_MAX_POLICIES */
	__u32 epoch; /* must equal the slot's owner epoch */
	__u8 algo;   /* enum fc_algo */
	__u8 action; /* enum fc_action */
	__u8 ndims;
	__u8 ntiers;
	__u32 delay_burst;
	__u32 flags; /* FC_POLICY_PRECISE, FC_POLICY_OVERRIDE, FC_SHM_POLICY_* */
	/* Per-key policies (a DIM=*): keys it may hold at most, and new keys a
	 * second it may make; past either, requests share its overflow
	 * bucket (the slot's state). */
	__u32 max_keys;
	__u32 new_keys;
	/* --concurrency: requests of a key (or of the policy, without keys) in
	 * flight at once; 0: no cap. ntiers may be 0 when it is set. */
	__u32 concurrency;
	__u32 warmup_ms; /* GCRA --warmup (fc_limit.h); 0 = none */
	struct fc_tier tier[FC_MAX_TIERS];
	/* GCRA: the generation of these limits and each tier's rescale from
	 * the ones before (struct fc_limits); the loader's, carried from
	 * publish to publish (it reads them back from the live block). */
	__u8 gen;
	__u8 pad[7];
	__u64 rescale[FC_MAX_TIERS];
	/* with FC_SHM_POLICY_FLEET a struct fc_shm_fleet, then ndims struct
	 * fc_shm_dim follow */
};

/*
 * A fleet policy's tail (FC_SHM_POLICY_FLEET; item.len covers it). Its one
 * rate is tier[0], N per unit for the whole fleet; algo is FC_ALGO_FLEET_*.
 * split[0] is this node's split for the current node set, split[1] the next
 * one's from its first window (FC_FLEET_NEVER: none yet), of N (window,
 * sliding) or of B (gcra, with T_i in interval_ns).
 */
struct fc_shm_fleet {
	struct fc_fleet_split split[2];
	__u64 lease_ns; /* gcra: the lease window (2 x --sync-interval); 0 otherwise */
	__u32 node_no;  /* this node's number in fleet_nodes (1..1023) */
	__u32 fixed_u;  /* a policy without DIM=*: its key's point, SipHash(fleet_secret; id << 32 | epoch) */
};

/* A ban table slot. A uid is kept as its 64-bit keyed tag (fc_shm_uid_hash),
 * as the source design keeps a hash; an address as its masked bytes. */
struct fc_shm_ban_slot {
	__u32 seq;        /* in use while equal to its table's live stamp; written last */
	__u16 ver;        /* seqlock of a slot in use: odd while it is rewritten */
	__u8 family;      /* 0: uid; 4 or 6: address; | FC_SHM_BAN_ALLOW: an allow entry;
			   * FC_SHM_BAN_DEAD: a tombstone */
	__u8 plen;
	__u64 hash;
	__u64 expires_ns; /* UTC ns; 0 = never */
	__u8 addr[16];
};

#define FC_SHM_BAN_DEAD 0xff
/* A reader's tries at a slot whose ver is odd or moves, before it takes the
 * slot as no ban (a writer killed half-way leaves ver odd for good). */
#define FC_SHM_BAN_TRIES 64

/* The config file, by constant offsets. */
#define FC_SHM_BLOCK_OFF(i) (4096ULL + (__u64)(i) * FC_SHM_BLOCK_SIZE)
#define FC_SHM_BANS_OFF(i) \
	(FC_SHM_BLOCK_OFF(2) + (__u64)(i) * FC_SHM_BAN_SLOTS * sizeof(struct fc_shm_ban_slot))
#define FC_SHM_SIZE        FC_SHM_BANS_OFF(2)

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
	__u8 addr[16]; /* an IPv4 address is its 4 bytes and zeros */
};

struct fc_shm_ring {
	__u64 head; /* alone on its cache line: the only word workers write to */
	__u64 pad[7];
	struct fc_shm_ring_entry e[FC_SHM_RING_SIZE];
};

/*
 * The fleet ring: workers report a fleet key the first time it is refused
 * for lack of credit in a window (fc_fleet_demand set its demand word), so
 * that the agent asks Redis for it; taken and stamped as the offender
 * ring's entries are (fetch-and-add on head, seq = index + 1 last). Every
 * field is the workers' say-so: the agent checks tag, index, slot and
 * epoch against the entry and its fleet policies before it tracks a key. A
 * gap in seq (a lap lost) makes the agent scan the key table once.
 */
#define FC_SHM_FLEET_RING_SIZE 65536u /* a power of two */

struct fc_shm_fleet_entry {
	__u64 seq;
	__u64 tag;    /* the key's fleet tag */
	__u32 index;  /* its entry in the key table */
	__u32 slot;   /* its policy's slot and epoch */
	__u32 epoch;
	__u32 window; /* FC_FLEET_LABEL of the window it was refused in */
};

struct fc_shm_fleet_ring {
	__u64 head; /* alone on its cache line */
	__u64 pad[7];
	struct fc_shm_fleet_entry e[FC_SHM_FLEET_RING_SIZE];
};

/* One policy's bucket and counters: two cache lines. A per-key policy's
 * state is its overflow bucket, shared by requests past its key caps. */
struct fc_shm_slot {
	__u64 state[FC_MAX_TIERS]; /* per tier, then --warmup's ramp start (state[ntiers]) */
	__u64 owner; /* (id << 32) | epoch of the policy the state belongs to; root writes it */
	__u64 passed;
	__u64 denied;
	__u64 delayed;
	__u64 new_keys;   /* GCRA TAT of the policy's new-key rate */
	__u64 keys;       /* keys made, less keys taken back (approximate) */
	__u64 overflowed; /* requests decided by the overflow bucket */
	/* --concurrency: the places held now, every key's (the cap's count for
	 * a policy without keys); a per-key policy's overflow bucket's places;
	 * requests refused by the cap. */
	__u64 inflight;
	__u64 overflow_inflight;
	__u64 conc_denied;
	__u64 pad[2];
};

/*
 * The key table: one bucket per key of a per-key policy, in the state file.
 * A key is its 64-bit SipHash tag (policy slot, epoch and the key's bytes,
 * keyed by the header's key_secret, so clients can not aim at collisions).
 * Open addressing with two choices: a key has two places in the table
 * (fc_shm_key_place), each the start of a window of FC_SHM_KEY_PROBE
 * entries; lookups walk both windows at once, a window ending at its first
 * entry never used, and a new key takes the first entry it could take in
 * that walk, so it lands near whichever of its places has room. With two
 * choices 1,000,000 keys fit in 1,048,576 entries (a window of one choice
 * overflows for ~2% of them), and most keys sit in the first entry of one
 * of their windows: a lookup reads two cache lines at once.
 *
 * An entry is taken by CAS of its tag from 0 or from an idle key's tag to a
 * busy word (the UTC second it was taken, below FC_SHM_KEY_TAG_MIN); the
 * taker then walks the key's windows again, and if the key is there
 * already, or another entry on the way is busy (another worker may be
 * making this key), it puts the entry back as it was: of two workers
 * meeting a new key at once, each CAS comes before the other's walk, so one
 * of them sees the other, and they make one bucket at most. Otherwise it
 * sets the entry up, then tags it (release). A busy word a killed worker
 * left is taken over once it is stale. An entry is idle when idle_ns (no
 * later than which its state stops mattering) has passed, or its policy
 * (slot, epoch) is gone: taking it back changes no decision.
 */
struct fc_shm_key {
	__u64 tag;      /* 0: never used; below FC_SHM_KEY_TAG_MIN: being set up since that second */
	__u64 idle_ns;  /* UTC ns after which the state carries no information */
	__u64 state[FC_MAX_TIERS]; /* as a slot's, then a capped policy's count */
	__u32 slot;
	__u32 epoch;
	__u32 passed;
	__u32 denied;
};

/* Entries in the key table: a power of two, chosen when the state file is
 * made (freqctl --shm-keys); the file's size says which. 64 bytes each,
 * used as touched: the default takes 64 MiB of address space. */
#define FC_SHM_KEYS      1048576u /* the default */
#define FC_SHM_KEYS_MIN  1024u
#define FC_SHM_KEYS_MAX  16777216u /* 1 GiB */
#define FC_SHM_KEY_PROBE 64 /* entries in each of a key's two windows */
#define FC_SHM_KEY_TAG_MIN (1ULL << 32) /* tags are at least this; busy words below */
#define FC_SHM_KEY_STALE   2             /* seconds after which a busy word is a dead worker's */
/* In idle_ns: the key holds concurrency places (its count is the state word
 * past its tiers and warm-up word), so it is never idle, whatever the time
 * below says. */
#define FC_SHM_KEY_HELD    (1ULL << 63)

/* The state word a capped per-key policy's key counts its places in: past
 * its tiers and, with --warmup, the ramp's word (state[ntiers]). The loader
 * lets a policy have both only if that word is within the bucket. */
static inline __u8 fc_shm_conc_word(__u8 ntiers, __u32 warmup_ms)
{
	return ntiers + (warmup_ms ? 1 : 0);
}

/*
 * Concurrency places (--concurrency N): a request takes a place at its
 * decision and gives it back when it ends, however it ends. The count is
 * beside the bucket: a policy without keys counts in its slot's inflight, a
 * per-key policy in its key's state word past its tiers and its warm-up word
 * (state[ntiers + (warmup_ms != 0)]), its overflow bucket in the slot's
 * overflow_inflight.
 *
 * So that a worker killed mid-request leaks none, each worker process has a
 * record of the places it holds: one hold per place, written before the
 * place is taken and cleared after it is given back (a kill between the two
 * can give a place back early, never keep one for ever). Any worker returns
 * the places of a record whose process is gone (at its start, and every
 * second): it marks the record as its own to recover, gives back each live
 * hold, then frees it. A record's owner is a process, not a worker slot:
 * during a reload old and new workers run side by side.
 */
#define FC_SHM_WORKERS 256  /* records: workers of every nginx on the shm, old and new */
#define FC_SHM_HOLDS   8192 /* places one worker can record at once; more are held unrecorded */

/* A record's owner: a process as its pid (below 2^22) and its start time
 * (clock ticks since boot, /proc/PID/stat): a reused pid is another owner. */
#define FC_SHM_WORKER_START_BITS 41
#define FC_SHM_WORKER_ID(pid, start) \
	(((__u64)(pid) << FC_SHM_WORKER_START_BITS) | ((__u64)(start) & ((1ULL << FC_SHM_WORKER_START_BITS) - 1)))
#define FC_SHM_WORKER_PID(id)  ((__u32)(((id) >> FC_SHM_WORKER_START_BITS) & ((1U << 22) - 1)))
#define FC_SHM_WORKER_RECOVER (1ULL << 63) /* in owner: a worker is returning the record's places */

struct fc_shm_worker {
	__u64 owner; /* FC_SHM_WORKER_ID of its process, maybe | FC_SHM_WORKER_RECOVER; 0: free */
	__u32 used;  /* holds [0, used) may be live; readers bound it by FC_SHM_HOLDS */
	__u32 pad;
	__u64 pad2[6];
};

/* fc_shm_hold.where: what the place is counted in. */
#define FC_HOLD_SLOT     (1U << 28) /* the slot's inflight */
#define FC_HOLD_OVERFLOW (2U << 28) /* the slot's overflow_inflight (and inflight) */
#define FC_HOLD_KEY      (3U << 28) /* key entry (low 24 bits), state word (bits 24-25) (and the slot's inflight) */
#define FC_HOLD_KIND(w)  ((w) & (0xfU << 28))
#define FC_HOLD_INDEX(w) ((w) & 0xffffffU)
#define FC_HOLD_WORD(w)  (((w) >> 24) & 3U)
#define FC_HOLD_AT(idx, word) (FC_HOLD_KEY | ((__u32)(word) << 24) | (__u32)(idx))

struct fc_shm_hold {
	__u64 who;   /* the key's tag, or the slot's owner word; written last, cleared first; 0: none */
	__u32 slot;
	__u32 where; /* FC_HOLD_* */
};

#define FC_SHM_OWNER(id, epoch) (((__u64)(id) << 32) | (epoch))

/* The state file's header: what it is, nothing a reader needs to trust;
 * then what workers count outside any policy. */
struct fc_shm_state_header {
	__u32 magic;
	__u32 version;
	__u64 allowed;     /* requests an allow entry let through (bans, policies and caps skipped) */
	__u64 banned_uid;  /* requests a uid ban refused */
	__u64 banned_addr; /* requests an address ban refused (a uid ban first: a request is counted once) */
};

/*
 * The value table (--show-keys): the values of the busiest and most
 * refused keys of the policies that keep them (FC_SHM_POLICY_SHOW_KEYS),
 * by tag. The key table has no room for them (an entry is a cache line,
 * full), and would not want them there: a value is written rarely, a
 * bucket on every request.
 *
 * FC_SHM_VALS entries in sets of FC_SHM_VAL_WAYS; a key's set is a bit
 * range of its tag. A worker writes a key's value when the count it just
 * added to the key's entry reaches a multiple of FC_SHM_VAL_PASSES
 * (passed) or is 1 or a multiple of FC_SHM_VAL_DENIALS (denied): the check
 * reads no memory, and most requests write nothing. In the key's set it
 * refreshes the key's own entry (score and second), or takes the entry
 * worth least: one never used, left busy by a killed worker, or not
 * refreshed for FC_SHM_VAL_STALE seconds is worth nothing, any other its
 * score, and it is taken only for a key of a higher score. Taken as a key
 * table entry is (fc_shm_key): its tag CASed to a busy word, the fields
 * written, then the tag (release); no lock, and a busy word a killed worker
 * left is stale after FC_SHM_KEY_STALE seconds.
 *
 * Readers (root, with pread) take an entry only if two reads of it agree
 * and it is whole (a tag, a length within bounds), and show a value only
 * for a key the key table holds now for that very policy (slot, epoch),
 * which itself keeps values: a value whose key was taken back is never
 * shown for another. Every byte of a value is the workers' say-so, printed
 * escaped.
 */
#define FC_SHM_VALS         4096 /* entries; a power of two */
#define FC_SHM_VAL_WAYS     4
#define FC_SHM_VAL_MAX      64   /* bytes of a value kept; a longer one is cut (FC_SHM_VAL_CUT) */
#define FC_SHM_VAL_PASSES   64   /* a power of two */
#define FC_SHM_VAL_DENIALS  8    /* a power of two */
#define FC_SHM_VAL_STALE    60   /* seconds */
#define FC_SHM_VAL_CUT      0x1  /* fc_shm_val.flags */

struct fc_shm_val {
	__u64 tag;   /* the key's tag in the key table; 0: never used; below FC_SHM_KEY_TAG_MIN: being written */
	__u32 slot;  /* its policy's slot and epoch */
	__u32 epoch;
	__u64 score; /* the key's passed and denied requests, when last written */
	__u32 secs;  /* the UTC second it was last written */
	__u8 len;    /* bytes of value, at most FC_SHM_VAL_MAX */
	__u8 flags;  /* FC_SHM_VAL_CUT */
	__u16 pad;
	__u8 value[FC_SHM_VAL_MAX]; /* as $freqctl_key writes the key: its wildcard values joined by ',' */
};

/* The first entry of the set of a key's tag. */
static inline __u32 fc_shm_val_set(__u64 tag)
{
	return (__u32)(tag >> 8) & (FC_SHM_VALS - FC_SHM_VAL_WAYS);
}

/* The state file, by constant offsets. */
#define FC_STATE_SLOTS_OFF   4096ULL
#define FC_STATE_RING_OFF    (FC_STATE_SLOTS_OFF + (__u64)FC_SHM_SLOTS * sizeof(struct fc_shm_slot))
#define FC_STATE_WORKERS_OFF (FC_STATE_RING_OFF + sizeof(struct fc_shm_ring))
#define FC_STATE_HOLDS_OFF   (FC_STATE_WORKERS_OFF + (__u64)FC_SHM_WORKERS * sizeof(struct fc_shm_worker))
#define FC_STATE_VALS_OFF    (FC_STATE_HOLDS_OFF + (__u64)FC_SHM_WORKERS * FC_SHM_HOLDS * sizeof(struct fc_shm_hold))
#define FC_STATE_FLEET_OFF   (FC_STATE_VALS_OFF + (__u64)FC_SHM_VALS * sizeof(struct fc_shm_val))
#define FC_STATE_KEYS_OFF    (FC_STATE_FLEET_OFF + sizeof(struct fc_shm_fleet_ring))
#define FC_STATE_SIZE_FOR(keys) (FC_STATE_KEYS_OFF + (__u64)(keys) * sizeof(struct fc_shm_key))
#define FC_STATE_SIZE      FC_STATE_SIZE_FOR(FC_SHM_KEYS)

/* The key table's entries in a state file of size bytes, or 0 if no valid
 * table has that size (a reader never trusts more than the size it saw). */
static inline __u32 fc_state_nkeys(__u64 size)
{
	__u64 n;

	if (size < FC_STATE_SIZE_FOR(FC_SHM_KEYS_MIN) || size > FC_STATE_SIZE_FOR(FC_SHM_KEYS_MAX) ||
	    (size - FC_STATE_KEYS_OFF) % sizeof(struct fc_shm_key))
		return 0;
	n = (size - FC_STATE_KEYS_OFF) / sizeof(struct fc_shm_key);
	return n & (n - 1) ? 0 : (__u32)n;
}

/* The first entry of a key's window choice (0 or 1) in a table of nkeys
 * entries (a power of two): two independent bit ranges of its tag, the
 * second above bit 32, which every tag has set (FC_SHM_KEY_TAG_MIN). */
static inline __u32 fc_shm_key_place(__u64 tag, int choice, __u32 nkeys)
{
	return (__u32)(choice ? tag >> 33 : tag) & (nkeys - 1);
}

/* Whether an entry's tag t says a worker is setting it up now, at secs
 * (unix seconds): a busy word no older than FC_SHM_KEY_STALE. An older one
 * is a killed worker's, and the entry may be taken. */
static inline int fc_shm_key_busy(__u64 t, __u64 secs)
{
	return t && t < FC_SHM_KEY_TAG_MIN && t + FC_SHM_KEY_STALE > secs;
}

/* FNV-1a over an address ban's key: the family, the length, then the
 * masked address bytes (which the slot keeps and a reader compares). */
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

/* A uid's tag in the ban table: SipHash keyed by the file's key_secret over
 * the slot's family (0, or FC_SHM_BAN_ALLOW) and the uid. The slot keeps the
 * tag alone, so an unkeyed hash would let a client pick a uid that collides
 * with an allowed one (FNV-1a is inverted a byte at a time). */
static inline __u64 fc_shm_uid_hash(const void *secret, __u8 family, const void *uid, __u32 len)
{
	struct fc_sip h;
	uint64_t k[2];

	memcpy(k, secret, sizeof(k));
	fc_sip_init(&h, k);
	fc_sip_word(&h, family);
	fc_sip_part(&h, uid, len);
	return fc_sip_final(&h);
}

/* The slot of a key's hash in level l, as an index into a whole table. */
static inline __u32 fc_shm_ban_index(__u64 hash, int level)
{
	__u32 off = 0;
	int i;

	for (i = 0; i < level; i++)
		off += fc_shm_ban_level[i];
	return off + (__u32)(hash % fc_shm_ban_level[level]);
}

/* The step-th slot of a key's probe sequence (writer's and readers' order:
 * each level once, then FC_SHM_BAN_PROBE slots on in the last). */
static inline __u32 fc_shm_ban_probe(__u64 hash, __u32 step)
{
	__u32 last = FC_SHM_BAN_SLOTS - FC_SHM_BAN_L3;

	if (step < FC_SHM_BAN_LEVELS)
		return fc_shm_ban_index(hash, (int)step);
	return last + (__u32)((hash % FC_SHM_BAN_L3 + step - FC_SHM_BAN_LEVELS + 1) % FC_SHM_BAN_L3);
}

static inline __u64 fc_shm_align8(__u64 n)
{
	return (n + 7) & ~7ULL;
}

/* The layouts both compilers and every reader must agree on. */
FC_ABI_SIZE(struct fc_shm_header, 200);
FC_ABI_OFF(struct fc_shm_header, fleet_secret, 168);
FC_ABI_OFF(struct fc_shm_header, fleet_fresh_ns, 184);
FC_ABI_OFF(struct fc_shm_header, fleet_clock_ns, 192);
FC_ABI_SIZE(struct fc_shm_fleet, 96);
FC_ABI_OFF(struct fc_shm_fleet, lease_ns, 80);
FC_ABI_OFF(struct fc_shm_fleet, node_no, 88);
FC_ABI_SIZE(struct fc_shm_fleet_entry, 32);
FC_ABI_OFF(struct fc_shm_fleet_ring, e, 64);
FC_ABI_OFF(struct fc_shm_header, ring_lost, 152);
FC_ABI_OFF(struct fc_shm_header, state_keys, 160);
FC_ABI_OFF(struct fc_shm_header, allow_plens, 96);
FC_ABI_OFF(struct fc_shm_header, store_seq, 136);
FC_ABI_OFF(struct fc_shm_header, key_secret, 80);
FC_ABI_OFF(struct fc_shm_header, seq, 16);
FC_ABI_OFF(struct fc_shm_header, ban_live, 24);
FC_ABI_OFF(struct fc_shm_header, ban_digest, 40);
FC_ABI_SIZE(struct fc_shm_block, 24);
FC_ABI_SIZE(struct fc_shm_item, 8);
FC_ABI_SIZE(struct fc_shm_dim, 4);
FC_ABI_SIZE(struct fc_shm_policy, 48 + FC_MAX_TIERS * 32 + 8 + FC_MAX_TIERS * 8);
FC_ABI_OFF(struct fc_shm_policy, gen, 48 + FC_MAX_TIERS * 32);
FC_ABI_OFF(struct fc_shm_policy, rescale, 56 + FC_MAX_TIERS * 32);
FC_ABI_OFF(struct fc_shm_policy, algo, 20);
FC_ABI_OFF(struct fc_shm_policy, max_keys, 32);
FC_ABI_OFF(struct fc_shm_policy, concurrency, 40);
FC_ABI_OFF(struct fc_shm_policy, warmup_ms, 44);
FC_ABI_OFF(struct fc_shm_policy, tier, 48);
FC_ABI_SIZE(struct fc_shm_ban_slot, 40);
FC_ABI_OFF(struct fc_shm_ban_slot, ver, 4);
FC_ABI_OFF(struct fc_shm_ban_slot, hash, 8);
FC_ABI_SIZE(struct fc_shm_ring_entry, 32);
FC_ABI_OFF(struct fc_shm_ring, e, 64);
FC_ABI_SIZE(struct fc_shm_slot, 128);
FC_ABI_SIZE(struct fc_shm_key, 64);
FC_ABI_OFF(struct fc_shm_slot, owner, FC_MAX_TIERS * 8);
FC_ABI_OFF(struct fc_shm_slot, inflight, FC_MAX_TIERS * 8 + 56);
FC_ABI_SIZE(struct fc_shm_worker, 64);
FC_ABI_SIZE(struct fc_shm_hold, 16);
FC_ABI_SIZE(struct fc_shm_state_header, 32);
FC_ABI_SIZE(struct fc_shm_val, 32 + FC_SHM_VAL_MAX);
FC_ABI_OFF(struct fc_shm_val, value, 32);
_Static_assert(sizeof(struct fc_shm_header) <= FC_SHM_BLOCK_OFF(0), "the header must fit before block 0");
_Static_assert(sizeof(struct fc_shm_state_header) <= FC_STATE_SLOTS_OFF, "the state header must fit");
_Static_assert((FC_SHM_RING_SIZE & (FC_SHM_RING_SIZE - 1)) == 0, "the ring size must be a power of two");
_Static_assert((FC_SHM_FLEET_RING_SIZE & (FC_SHM_FLEET_RING_SIZE - 1)) == 0,
	       "the fleet ring's size must be a power of two");
_Static_assert(!(FC_SHM_POLICY_FLEET & (FC_SHM_POLICY_ESCALATE | FC_SHM_POLICY_HTTP | FC_SHM_POLICY_SHOW_KEYS |
					FC_POLICY_PRECISE | FC_POLICY_OVERRIDE)),
	       "fc_shm_policy.flags: the fleet bit overlaps another");
_Static_assert((FC_SHM_KEYS & (FC_SHM_KEYS - 1)) == 0, "the key table's size must be a power of two");
_Static_assert((FC_SHM_KEYS_MIN & (FC_SHM_KEYS_MIN - 1)) == 0 && (FC_SHM_KEYS_MAX & (FC_SHM_KEYS_MAX - 1)) == 0,
	       "the key table's bounds must be powers of two");
_Static_assert(FC_SHM_KEYS_MIN >= FC_SHM_KEY_PROBE, "a probe window fits in the smallest table");
_Static_assert(FC_SHM_KEYS_MAX <= (1U << 24) && FC_MAX_TIERS <= 4, "a hold's where names any key entry and word");
_Static_assert(FC_SHM_KEYS_MAX <= (1U << 31), "a key's second place takes 31 bits of its tag");
_Static_assert(FC_STATE_KEYS_OFF % 64 == 0, "key entries are cache lines");
_Static_assert((FC_SHM_VALS & (FC_SHM_VALS - 1)) == 0 && (FC_SHM_VAL_WAYS & (FC_SHM_VAL_WAYS - 1)) == 0 &&
		       FC_SHM_VAL_WAYS <= 256 && FC_SHM_VALS <= (1u << 24),
	       "a value set is a bit range of a tag");
_Static_assert((FC_SHM_VAL_PASSES & (FC_SHM_VAL_PASSES - 1)) == 0 && (FC_SHM_VAL_DENIALS & (FC_SHM_VAL_DENIALS - 1)) == 0,
	       "a value is due on a count's low bits");
_Static_assert(FC_SHM_VAL_MAX <= 255, "a value's length is a byte");

#endif /* FC_SHM_H */
