/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The kernel ABI of freqctl: keys and values of the pinned BPF maps.
 *
 * This header is the only definition of these structs. It is included by the
 * BPF programs (clang -target bpf), the loader, and the tests, so it uses only
 * fixed-width <linux/types.h> types and no padding the two ABIs could disagree
 * on.
 */
#ifndef FC_MAPS_H
#define FC_MAPS_H

#include <linux/types.h>

/* One per-CPU counter. */
struct fc_counter {
	__u64 packets;
	__u64 bytes;
};

/*
 * The pinned maps, listed once: X(name) for the map the BPF programs declare
 * as fc_<name> (bpf/fc_state.bpf.h) and pin as <pin-dir>/fc_<name>. The
 * loader's fd table, the pin names and the open and close loops are made
 * from this list, and the loader refuses a BPF object whose pinned maps are
 * not exactly these (tests/bpf checks the skeleton against it too).
 */
#define FC_MAPS(X)                                                                                        \
	X(exact4) X(exact6) X(top4) X(pfx4) X(pfx6) X(top6) X(stats) X(config) X(policies) X(buckets) \
	X(src4) X(src6) X(pstats) X(flood) X(setstats)

/* A map's pinned name, e.g. FC_MAP_NAME(exact4) is "fc_exact4". */
#define FC_MAP_NAME(name) "fc_" #name

#define FC_PROG_XDP        "freqctl_xdp"
#define FC_PROG_TC         "freqctl_tc"

/* Capacity: one million bans of each kind. The maps are not preallocated, so
 * an empty map costs nothing. */
#define FC_MAX_BANS        1000000

/* Policies live in slots 1..FC_MAX_POLICIES of the policy arrays, of the
 * shm's stat slots and of the store's slot column (whose SQL CHECK is made
 * from this number: keep it a plain literal); slot 0 means "no policy". */
#define FC_MAX_POLICIES    65536
#define FC_POLICY_SLOTS    (FC_MAX_POLICIES + 1)

/* Named ban sets (freqctl ban import --set): ids 1..FC_MAX_SETS (the store's
 * CHECK is made from this number: keep it a plain literal), 0 = by hand. */
#define FC_MAX_SETS        1023

/* Each exact hash and each prefix hash holds bans and policy keys (a prefix
 * hash its search markers too). */
#define FC_MAX_RULES       (FC_MAX_BANS + FC_MAX_POLICIES)

/* Per-source buckets of the ip=* policy, per family (LRUs: preallocated). */
#define FC_MAX_SOURCES     262144

/* The ip=* policy's unit by default: a bucket per IPv4 address and per
 * IPv6 /64 (a host has a whole /64 to send from: privacy addresses, a
 * delegated /64). A policy may choose others (freqctl-policy(7)). */
#define FC_STAR_LEN4       32
#define FC_STAR_LEN6       64

#include "fc_limit.h"

/*
 * Addresses as the exact-address hashes and the ip=* buckets key them, one
 * map per family: an IPv4 key hashes and compares in a quarter of the work.
 * (An IPv6 packet from a v4-mapped source, ::ffff:a.b.c.d, counts as IPv4.)
 */
struct fc_addr4 {
	__u8 a[4];
};

struct fc_addr6 {
	__u8 a[16];
};

/*
 * Prefixes (ip=PREFIX bans and policies), one set of maps per family so that
 * an IPv6 prefix can never cover IPv4 traffic:
 *
 * - IPv4: fc_top4, an array with one entry per /16 (the top 16 bits of a
 *   source index it). An entry holds what the prefixes of /1 to /16 covering
 *   that /16 say and, for each of its 256 /24s, the length of the longest
 *   prefix of /17 to /24 covering that /24 and whether prefixes of /25 to /31
 *   lie inside it. The prefixes are in fc_pfx4, a hash keyed by length and
 *   masked address (those of /1 to /16 only for the loader, to know what
 *   fc_top4 was made of): a source costs one array access when no
 *   prefix longer than /16 covers its /24, one hash lookup when one of /17
 *   to /24 does, and, where /25 to /31 lie inside its /24, one more per
 *   such length in use in its /16 (longest first, to the first hit). The
 *   loader writes fc_top4 in place through a mapping (BPF_F_MMAPABLE).
 * - IPv6 /1 to /127 (and ::/0 for a policy): fc_pfx6, a hash keyed the same
 *   way, searched by binary search on the lengths (Waldvogel et al.): a
 *   binary tree over the lengths 1 to 127 (fc_pfx6_mid), walked from its
 *   root; a hit goes on to longer lengths, a miss to shorter ones. So that a
 *   miss is right to turn back, every prefix leaves a marker (FC_RULE_MARKER)
 *   at each length on its path where the search must turn longer to reach
 *   it. Lengths in use nowhere under a node (fc_config.lens6) are skipped
 *   without a lookup: one lookup where one length is in use, at most
 *   FC_PFX6_LEVELS. The tree puts the lengths IPv6 is handed out in
 *   nearest its root, /32 (a LIR's), /48 (a site's), /64 (a subnet), the
 *   rest halved: where no prefix is shorter than /32, a source no prefix
 *   covers costs one lookup, one in a /48 two.
 * - fc_top6: the entries of fc_pfx6 at the tree's root, /32 (prefixes and
 *   markers, as they are there), keyed by the /32 alone, a 4-byte key the
 *   packet path hashes in a fifth of the time: the root's lookup. Its
 *   markers (one for every prefix longer than /32) make a source no
 *   prefix of /32 or longer covers one lookup there. An entry whose /32
 *   holds one prefix (struct fc_top6) carries it: a source in a /48 that
 *   is alone in its /32 costs that one lookup too; where several lie
 *   inside, of one length, FC_RULE_NEXT's probe of fc_pfx6 makes it two.
 *   fc_pfx6 keeps them too, where maps another version published look
 *   them up (fc_config.pfx6_tree).
 * - /32 and /128 are exact addresses (fc_exact4, fc_exact6).
 *
 * Every prefix entry (and marker) carries what all the prefixes covering it
 * say (the loader folds them in, see struct fc_rule), so the longest match
 * is the whole answer.
 */
#define FC_TOP4_SHIFT  16 /* fc_top4 is indexed by the source's top 16 bits */
#define FC_TOP4_SLOTS  (1 << 16)
#define FC_PFX6_MIN    1 /* the lengths of fc_pfx6's tree */
#define FC_PFX6_MAX    127
#define FC_PFX6_LEVELS 9 /* its depth: 32, 48, 64, then 96 ... 127 */
/* Names the tree, in fc_config.pfx6_tree: the maps' markers are made for
 * it. Bumped with any change of fc_pfx6_mid, or of where its entries are
 * (3: its root's in fc_top6 too). */
#define FC_PFX6_TREE   3
#define FC_PFX6_ROOT   32 /* fc_pfx6_mid(FC_PFX6_MIN, FC_PFX6_MAX): fc_top6's length */

/* The node of fc_pfx6's tree over the lengths lo to hi (lo <= hi), which
 * the packet path walks and the loader places markers on. */
FC_INLINE __u32 fc_pfx6_mid(__u32 lo, __u32 hi)
{
	if (lo <= FC_PFX6_ROOT && hi >= FC_PFX6_ROOT)
		return FC_PFX6_ROOT;
	if (lo <= 48 && hi >= 48)
		return 48;
	if (lo <= 64 && hi >= 64)
		return 64;
	return (lo + hi) / 2;
}

struct fc_pfx4_key {
	__u32 prefixlen;
	__u8 a[4]; /* host bits zero */
};

struct fc_pfx6_key {
	__u32 prefixlen;
	__u8 a[16];
};

/* A /32 of IPv6, fc_top6's key: the address's first 4 bytes. */
struct fc_top6_key {
	__u8 a[4];
};

/*
 * What the exact-address hashes and the prefix maps map an address to: a
 * ban, a policy, an allow entry, or several, so that one lookup answers
 * every question.
 *
 * ban_expires_ns and allow_expires_ns are UTC in nanoseconds, on the packet
 * path's clock (see fc_config.utc_offset_ns); 0 with FC_RULE_BANNED
 * (FC_RULE_ALLOWED) means the ban (allow entry) never expires. A prefix
 * entry also carries the bans of the prefixes covering it (the
 * longest-lasting) and, without a policy of its own, the policy of the
 * nearest covering prefix that has one: the loader computes this, because a
 * search stops at the longest match. An entry of either kind, exact or
 * prefix, is FC_RULE_ALLOWED when an allow entry covers its key (the
 * longest-lasting such), so the entry a search ends at says whether the
 * source is allowed; an allow entry with no ban or policy on its key is an
 * entry of its own. An allowed source is never dropped: neither its bans
 * nor any policy (exact, prefix, ip=*) apply to it until the allow lapses.
 */
#define FC_RULE_BANNED  0x1
#define FC_RULE_LONGER  0x2 /* fc_pfx6: the search goes on to longer lengths from here */
#define FC_RULE_MARKER  0x4 /* fc_pfx6: no prefix of its own, only what covers it (a search marker) */
#define FC_RULE_ALLOWED 0x8 /* an allow entry covers it (until allow_expires_ns) */
/* fc_exact4, on an entry with a policy and neither a ban nor an allow
 * entry: it carries what the prefix lookup answers for its address
 * (carry_policy: the longest covering prefix's policy, 0 = none; no prefix
 * covering it bans or allows), so that the packet path skips that lookup.
 * Written only once every prefix of a publish is written, taken away
 * before any is (doc/architecture.md, Publishing order), and trusted only
 * while fc_config.carry4_gen says this publisher keeps it. */
#define FC_RULE_CARRY   0x10
/* fc_pfx6, on an entry of the tree root's length (fc_pfx6_mid(FC_PFX6_MIN,
 * FC_PFX6_MAX)) or longer: the length of every prefix inside it, where they
 * all have one (0: none, or several lengths). A search that goes on from
 * there looks that length up and ends. (A change of a prefix longer than
 * the root rewrites every entry in its root-length prefix, so every entry
 * covering it there; an entry shorter would not be, and carries none.) */
#define FC_RULE_NEXT_SHIFT 8
#define FC_RULE_NEXT_MASK  (0x7fu << FC_RULE_NEXT_SHIFT)
#define FC_RULE_NEXT(flags) (((flags) & FC_RULE_NEXT_MASK) >> FC_RULE_NEXT_SHIFT)
/* The upper 16 bits of flags: the set whose ban this is (fc_setstats counts
 * its drops there); 0: by hand or escalated. A ban held by several sources
 * counts under the lowest: by hand first, then the set with the lowest id. */
#define FC_RULE_SET_SHIFT 16
#define FC_RULE_SET_MASK  (0xffffu << FC_RULE_SET_SHIFT)
#define FC_RULE_SET(flags) ((flags) >> FC_RULE_SET_SHIFT)

struct fc_rule {
	__u64 ban_expires_ns;
	__u32 flags;
	__u32 policy; /* slot in fc_policies, 0 = none */
	union {
		__u64 allow_expires_ns; /* FC_RULE_ALLOWED */
		__u32 carry_policy;     /* FC_RULE_CARRY, never with FC_RULE_ALLOWED */
	};
};

/* fc_top6's value: fc_pfx6's entry of the /32 (rule) and, where every
 * prefix inside it is one prefix, of length FC_RULE_NEXT(rule.flags) (in.len
 * then says the same), that prefix: its address's bytes 4 to 15 (a /32's
 * first four are the key) and its entry, as fc_pfx6 holds them. A search
 * that jumps there compares instead of looking it up. in.len 0: none (no
 * jump, or several prefixes to jump to). */
struct fc_top6_in {
	struct fc_rule rule;
	__u32 len;
	__u8 a[12];
};

struct fc_top6 {
	struct fc_rule rule;
	struct fc_top6_in in;
};

/* One /16 of IPv4 (fc_top4[top 16 bits of the address]). in24[i] is about
 * its i-th /24: the length of the longest prefix of /17 to /24 covering it
 * (16 + in24[i] & FC_IN24_LEN; 0 = none), whether a prefix of /25 to /31
 * lies inside it (FC_IN24_LONGER), one of the lengths in longer, and
 * whether fc_exact4 may hold an address inside it (FC_IN24_EXACT): a source
 * whose /24 holds none skips that lookup. The loader sets the bit before
 * the first entry of a /24 is added and clears it only after its last one
 * is gone, so a packet may see it set over none, never clear over one;
 * the packet path trusts it only while fc_config.exact4_gen says so. */
#define FC_IN24_LEN    0x0f
#define FC_IN24_LONGER 0x10
#define FC_IN24_EXACT  0x20

struct fc_top4 {
	struct fc_rule rule; /* the prefixes of /1 to /16 covering it, folded as above */
	__u8 longer;         /* bit L - 25: a prefix of length L (25 to 31) lies inside it */
	__u8 pad[7];
	__u8 in24[256];
};

/* A policy as the packet path reads it (fc_policies[slot]). */
enum fc_action {
	FC_ACTION_DROP,
	FC_ACTION_LOG, /* count what would be dropped, drop nothing */
	FC_ACTION_DELAY, /* L7 only: wait to the rate (the packet path never sees it) */
};

enum fc_count {
	FC_COUNT_PACKETS,
	FC_COUNT_BYTES, /* the frame length is the cost */
	FC_COUNT_SYN,   /* only TCP SYN without ACK is charged; the rest passes untouched */
};

/* fc_policy.flags, beside FC_POLICY_PRECISE and FC_POLICY_OVERRIDE
 * (fc_limit.h): --fleet; algo is FC_ALGO_FLEET_* and the fleet_* fields
 * hold this node's shares. */
#define FC_POLICY_FLEET 0x4

struct fc_policy {
	__u32 id;    /* the user's policy id; 0 = free slot */
	__u32 epoch; /* bumped when the match changes: bucket state starts afresh */
	__u8 algo;   /* enum fc_algo */
	__u8 action; /* enum fc_action */
	__u8 count;  /* enum fc_count */
	__u8 ntiers;
	__u8 flags;  /* FC_POLICY_* */
	__u8 pad[3];
	/* The limits the charge reads (fc_limit.h: tiers, warm-up, their
	 * generation and each tier's rescale from the limits before), whose
	 * first two fields go by their own names too. */
	union {
		struct fc_limits lim;
		struct {
			struct fc_tier tier[FC_MAX_TIERS];
			__u32 warmup_ms; /* GCRA --warmup: the first tier ramps over this; 0 = none */
		};
	};
	/* --fleet (FC_POLICY_FLEET; 0 otherwise): the policy is one key (ip=ADDR
	 * or ip=PREFIX), and its bucket's share of the fleet's N (B for gcra)
	 * in windows before fleet_from is fleet_share[0], from it on
	 * fleet_share[1] (the loader computes them from the splits and the
	 * key's point: maps/fc_fleet.h); gcra: tier[0] is this node's (T_i,
	 * tau_i), and its lease window is fleet_lease_ns. */
	__u64 fleet_share[2];
	__u64 fleet_from;
	__u64 fleet_lease_ns;
};

/* The bucket of an ip=ADDR or ip=PREFIX policy, or the shared overflow
 * bucket of the ip=* policy (fc_buckets[slot]). A word per tier (a GCRA
 * word tagged with the generation of the tier's limits it was charged
 * under, fc_limit.h), then a warm-up policy's ramp start (state[ntiers]). */
struct fc_bucket {
	__u64 state[FC_MAX_TIERS];
};

/* One source's bucket under the ip=* policy, keyed by the source cut to
 * the policy's unit (fc_config.star_host4/6): an IPv4 address, an IPv6 /64
 * by default. gen is the policy's epoch when the bucket was made: a bucket
 * from an earlier ip=* policy is stale. While rules_gen equals
 * fc_config.rules_gen, exact_policy and prefix_policy are the policies of
 * the exact and of the prefix entry that match every address of the unit
 * (0 = none), and no ban does: its packets skip those lookups until the
 * rules change. A unit whose addresses the rules tell apart (an exact
 * entry or a longer prefix inside it) is never noted so. */
struct fc_src_bucket {
	__u64 state[FC_MAX_TIERS];
	__u32 gen;
	__u32 rules_gen;
	__u32 exact_policy;
	__u32 prefix_policy;
};

/* Per-policy counters, per CPU (fc_pstats[slot]). For a log policy,
 * dropped counts what would have been dropped. */
struct fc_pstats {
	struct fc_counter passed;
	struct fc_counter dropped;
};

/* The per-CPU limiter on making new ip=* buckets (fc_flood[0]). */
struct fc_flood {
	__u64 state;
};


/* The fc_stats map holds one of these per CPU; the fields are the verdicts. */
struct fc_stats {
	struct fc_counter passed;      /* well-formed IP, no ban matched */
	struct fc_counter drop_exact;  /* dropped: exact-address ban */
	struct fc_counter drop_prefix; /* dropped: prefix (CIDR) ban */
	struct fc_counter drop_limit;  /* dropped: over a policy's rate */
	struct fc_counter src_overflow; /* charged to the ip=* overflow bucket (flood of new sources) */
	struct fc_counter non_ip;      /* passed: not IPv4/IPv6 (ARP, LLDP, ...) */
	struct fc_counter malformed;   /* passed: truncated or invalid headers */
	struct fc_counter allowed;     /* passed: an allow entry covers the source (bans and limits skipped) */
	struct fc_counter drop_tagged; /* dropped: behind more VLAN tags than are parsed, while rules exist */
};

/* fc_config.star_flags: an IPv6 unit's bucket may note the rules for all
 * its addresses: fc_exact6 is empty and fc_pfx6 holds no prefix longer
 * than the unit (0 from a publisher that does not say: never). */
#define FC_STAR_PLAIN6 0x1

/*
 * Published by the loader, read once per packet by the program: lets it skip
 * a lookup into a map that holds nothing and an absent ip=* policy.
 */
struct fc_config {
	__u32 n_exact4;   /* entries in fc_exact4 */
	__u32 n_exact6;
	__u32 n_pfx4;     /* entries in fc_pfx4 */
	__u32 n_pfx6;
	__u32 star_slot;  /* slot of the ip=* policy, 0 = none */
	__u32 star_gen;   /* its epoch: fc_src4/6 buckets of another gen are stale */
	__u8 star_syn;    /* the ip=* policy counts TCP SYNs only */
	/* Its unit, as the host bits a source's bucket key clears: 32 less the
	 * IPv4 prefix length, 128 less the IPv6 one (0, as a version before
	 * units published it: a bucket per address). */
	__u8 star_host4;
	__u8 star_host6;
	__u8 star_flags;  /* FC_STAR_*: before rules_gen, written with what it says of the rules */
	__u32 n_policies; /* for status; the packet path does not read it */
	__u32 rules_gen;  /* bumped whenever an exact or prefix map changes */
	__u32 n_top4;     /* fc_top4 entries (/16s) in use, by a prefix or an exact address: 0 = none */
	/* UTC - CLOCK_MONOTONIC. The packet path's clock is the coarse (tick)
	 * monotonic clock plus this (read as jiffies where jiffies_utc_ns is
	 * set, which gives the same value a tick behind): reading it costs a
	 * few ns where the precise clock costs ~20 here. It lags UTC by under
	 * two ticks (it holds the timekeeper's last whole interval before the
	 * tick that set it: 0.84-4.8 ms measured at HZ=250, more when a tick
	 * runs late), under three in the jiffies form; rounded down to whole
	 * ms, it is never ahead, and only ever delays an admission; a policy
	 * for which a tick matters (FC_POLICY_PRECISE) reads the precise clock.
	 * Fixed windows align to UTC; the offset moves only when the wall clock
	 * is stepped (or the machine resumes from suspend). Every publish sets
	 * it afresh, and the agent publishes on a step. */
	__u64 utc_offset_ns;
	struct fc_tier new_src; /* GCRA cap on new ip=* buckets, per CPU */
	/* The loader's, never the packet path's: a digest of fc_policies as
	 * the last publish left it whole, 0 while one is rewriting it. A
	 * publish whose policies hash the same skips reading the array. */
	__u64 policies_digest;
	/* The loader's: the store (its random id) and the last change (its
	 * seq in the store's change log) the maps hold, set once that change
	 * is committed; 0 while a publish writes. A publish applies only the
	 * changes after store_seq to maps marked with its store's id. */
	__u64 store_id;
	__u64 store_seq;
	/* Bit L % 64 of lens6[L / 64]: fc_pfx6 holds IPv6 prefixes of length L. */
	__u64 lens6[2];
	__u32 n_marks6;   /* search markers among the entries of fc_pfx6 */
	/* fc_top4's FC_IN24_EXACT bits cover every entry of fc_exact4 while this
	 * equals rules_gen: a publish of a freqctl that keeps them set both. Pins
	 * another version published (the field was padding there, and that
	 * version's publishes move rules_gen) make the packet path look every
	 * IPv4 source up, and the next publish a full one. */
	__u32 exact4_gen;
	/* The tree fc_pfx6's markers are made for (FC_PFX6_TREE); a version
	 * whose tree differs publishes everything. (The field made fc_config
	 * larger than that of versions with another tree, whose pins are
	 * refused as another version's.) */
	__u32 pfx6_tree;
	/* fc_exact4's carried prefix answers (FC_RULE_CARRY) are kept true
	 * while this equals rules_gen: a publish of a freqctl that keeps them
	 * sets both. Pins another version published (the field was padding
	 * there, and its publishes move rules_gen) make the packet path look
	 * the prefixes up, and the next publish a full one. */
	__u32 carry4_gen;
	/* UTC at jiffies 0, in ns: the coarse clock read as jiffies times the
	 * tick length plus this, measured by a publish where utc_offset_ns
	 * moved, a tick less: never ahead of UTC, under three ticks behind
	 * (doc/architecture.md, The clock). 0: not measured, and the packet path
	 * calls the coarse clock's helper, as where the programs were loaded
	 * without the tick (fc_tick_ns 0). */
	__u64 jiffies_utc_ns;
	/* --fleet: when these pins were made (UTC ns); a fleet policy takes no
	 * share of a window that began before it (maps/fc_fleet.h, the fresh
	 * rule). 0 from a publisher before fleets: no fleet policy is
	 * published there. */
	__u64 fleet_fresh_ns;
};

/* Which pin dir a program was loaded for, in its .rodata (bpf/freqctl.bpf.c
 * fc_pin_mark): where the pins are gone (the dir removed, bpffs remounted)
 * the loader still finds the attached program of a pin dir, and pins its
 * maps there again. Found by its magic at any 8-byte offset of the .rodata,
 * so that another version's layout of .rodata does not hide it. The program
 * never reads it. */
#define FC_PIN_MARK_MAGIC 0x6b72616d6e697066ULL /* "fpinmark" */
#define FC_PIN_MARK_DIR 248                     /* the dir, NUL-terminated */

struct fc_pin_mark {
	__u64 magic;
	char dir[FC_PIN_MARK_DIR];
};

/* What the clock probe (bpf/fc_clock_probe.bpf.c) writes into its frame:
 * the two forms of the coarse clock, read together. */
struct fc_clock_pair {
	__u64 jiffies_ns; /* jiffies * the tick length, 0: the tick is not known */
	__u64 coarse_ns;  /* CLOCK_MONOTONIC_COARSE */
	__u64 tick_ns;    /* the tick length the programs take (fc_tick_ns, as the loader set it) */
};

/*
 * The layouts the BPF programs (clang -target bpf) and the loader (gcc) must
 * agree on, byte for byte: a field moved or resized on one side only fails
 * the build of both.
 */
#define FC_ABI_SIZE(type, size) _Static_assert(sizeof(type) == (size), #type " changed size: the kernel ABI")
#define FC_ABI_OFF(type, field, off) \
	_Static_assert(__builtin_offsetof(type, field) == (off), #type "." #field " moved: the kernel ABI")

FC_ABI_SIZE(struct fc_counter, 16);
FC_ABI_SIZE(struct fc_addr4, 4);
FC_ABI_SIZE(struct fc_addr6, 16);
FC_ABI_SIZE(struct fc_pfx4_key, 8);
FC_ABI_OFF(struct fc_pfx4_key, a, 4);
FC_ABI_SIZE(struct fc_pfx6_key, 20);
FC_ABI_OFF(struct fc_pfx6_key, a, 4);
FC_ABI_SIZE(struct fc_top6_key, 4);
FC_ABI_SIZE(struct fc_rule, 24);
FC_ABI_OFF(struct fc_rule, flags, 8);
FC_ABI_OFF(struct fc_rule, policy, 12);
FC_ABI_OFF(struct fc_rule, allow_expires_ns, 16);
FC_ABI_OFF(struct fc_rule, carry_policy, 16);
FC_ABI_SIZE(struct fc_top6_in, 40);
FC_ABI_OFF(struct fc_top6_in, len, 24);
FC_ABI_OFF(struct fc_top6_in, a, 28);
FC_ABI_SIZE(struct fc_top6, 64);
FC_ABI_OFF(struct fc_top6, in, 24);
FC_ABI_SIZE(struct fc_top4, 24 + 8 + 256);
FC_ABI_OFF(struct fc_top4, longer, 24);
FC_ABI_OFF(struct fc_top4, in24, 32);
FC_ABI_SIZE(struct fc_tier, 32);
FC_ABI_SIZE(struct fc_limits, FC_MAX_TIERS * 32 + 8 + FC_MAX_TIERS * 8);
FC_ABI_OFF(struct fc_limits, warmup_ms, FC_MAX_TIERS * 32);
FC_ABI_OFF(struct fc_limits, gen, FC_MAX_TIERS * 32 + 4);
FC_ABI_OFF(struct fc_limits, rescale, FC_MAX_TIERS * 32 + 8);
FC_ABI_SIZE(struct fc_policy, 16 + sizeof(struct fc_limits) + 32);
FC_ABI_OFF(struct fc_policy, fleet_share, 16 + sizeof(struct fc_limits));
FC_ABI_OFF(struct fc_policy, fleet_lease_ns, 16 + sizeof(struct fc_limits) + 24);
FC_ABI_OFF(struct fc_policy, lim, 16);
FC_ABI_OFF(struct fc_policy, warmup_ms, 16 + FC_MAX_TIERS * 32);
FC_ABI_OFF(struct fc_policy, algo, 8);
FC_ABI_OFF(struct fc_policy, flags, 12);
FC_ABI_OFF(struct fc_policy, tier, 16);
FC_ABI_SIZE(struct fc_bucket, FC_MAX_TIERS * 8);
FC_ABI_SIZE(struct fc_src_bucket, FC_MAX_TIERS * 8 + 16);
FC_ABI_OFF(struct fc_src_bucket, gen, FC_MAX_TIERS * 8);
FC_ABI_SIZE(struct fc_pstats, 32);
FC_ABI_SIZE(struct fc_flood, 8);
FC_ABI_SIZE(struct fc_stats, 9 * 16);
FC_ABI_OFF(struct fc_stats, malformed, 6 * 16);
FC_ABI_OFF(struct fc_stats, allowed, 7 * 16);
FC_ABI_OFF(struct fc_stats, drop_tagged, 8 * 16);
FC_ABI_SIZE(struct fc_config, 48 + 32 + 24 + 16 + 8 + 8 + 8 + 8);
FC_ABI_OFF(struct fc_config, fleet_fresh_ns, 144);
FC_ABI_OFF(struct fc_config, star_host4, 25);
FC_ABI_OFF(struct fc_config, star_host6, 26);
FC_ABI_OFF(struct fc_config, star_flags, 27);
FC_ABI_OFF(struct fc_config, n_policies, 28);
FC_ABI_OFF(struct fc_config, rules_gen, 32);
FC_ABI_OFF(struct fc_config, n_top4, 36);
FC_ABI_OFF(struct fc_config, utc_offset_ns, 40);
FC_ABI_OFF(struct fc_config, new_src, 48);
FC_ABI_OFF(struct fc_config, store_seq, 96);
FC_ABI_OFF(struct fc_config, lens6, 104);
FC_ABI_OFF(struct fc_config, exact4_gen, 124);
FC_ABI_OFF(struct fc_config, pfx6_tree, 128);
FC_ABI_OFF(struct fc_config, carry4_gen, 132);
FC_ABI_OFF(struct fc_config, jiffies_utc_ns, 136);
FC_ABI_SIZE(struct fc_clock_pair, 24);
FC_ABI_SIZE(struct fc_pin_mark, 8 + FC_PIN_MARK_DIR);
_Static_assert(!(FC_POLICY_FLEET & (FC_POLICY_PRECISE | FC_POLICY_OVERRIDE)), "fc_policy.flags: the fleet bit overlaps");
_Static_assert(!(FC_IN24_EXACT & (FC_IN24_LEN | FC_IN24_LONGER)), "fc_top4.in24: the bits overlap");
_Static_assert(FC_MAX_SETS <= 0xffffu, "a set id must fit in fc_rule.flags' upper 16 bits");
_Static_assert(!(FC_RULE_SET_MASK & (FC_RULE_BANNED | FC_RULE_LONGER | FC_RULE_MARKER | FC_RULE_ALLOWED | FC_RULE_CARRY)),
	       "fc_rule.flags: the set index and the flags overlap");
_Static_assert(!(FC_RULE_NEXT_MASK & (FC_RULE_SET_MASK | FC_RULE_BANNED | FC_RULE_LONGER | FC_RULE_MARKER |
				      FC_RULE_ALLOWED | FC_RULE_CARRY)) && FC_PFX6_MAX <= FC_RULE_NEXT(FC_RULE_NEXT_MASK),
	       "fc_rule.flags: the next length and the flags overlap, or it does not fit");

#endif /* FC_MAPS_H */
