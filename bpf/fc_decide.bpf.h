/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The verdict shared by the XDP and the TC program: parse up to the source
 * address; look it up once in the exact hash and once in its family's prefix
 * maps, each answering both "banned?" and "which policy?"; then charge the
 * policies of the exact address, of the longest prefix and ip=*, all or
 * none. What follows the IP header only ever sets a policy's cost: a frame
 * that is malformed past its source is banned and limited like any other.
 * Returns whether to drop; the entry point maps that to its own return codes.
 */
#ifndef FC_DECIDE_BPF_H
#define FC_DECIDE_BPF_H

#include <linux/errno.h>

#include "fc_clock.bpf.h"
#include "fc_fleet.bpf.h"
#include "fc_parse.bpf.h"
#include "fc_prefix.bpf.h"
#include "fc_state.bpf.h"

#define FC_TCP_SYN 0x02
#define FC_TCP_ACK 0x10

/* Per-packet context of the ban checks. The clock is read at most once, and
 * only when a TTL needs it. */
struct fc_eval {
	struct fc_pkt pkt;
	const struct fc_config *cfg;
	struct fc_stats *st;
	__u64 now; /* UTC ns from the coarse clock, 0 until read */
};

/* An IPv4 source's fc_top4 entry (or NULL), read once for the exact and the
 * prefix lookup: kept out of struct fc_eval, whose address global functions
 * take, so that it stays in registers. */
struct fc_src4 {
	const struct fc_top4 *top;
	__u32 a;    /* the source, host order */
	__u32 in24; /* what top says of its /24 */
};

/* Whether a ban or an allow entry that is set and lapses at expires_ns (0:
 * never) holds now. The clock is read only for one that lapses. */
static __always_inline bool fc_holds(bool set, __u64 expires_ns, struct fc_eval *ev)
{
	if (!set)
		return false;
	if (!expires_ns)
		return true;
	if (!ev->now)
		ev->now = fc_clock(ev->cfg, false);
	return ev->now < expires_ns;
}

static __always_inline bool fc_banned(const struct fc_rule *r, struct fc_eval *ev)
{
	return r && fc_holds(r->flags & FC_RULE_BANNED, r->ban_expires_ns, ev);
}

/* Whether an allow entry covers the source: its bans and policies do not
 * apply. Tested only on a rule found, so a source no rule names pays
 * nothing for it. */
static __always_inline bool fc_allowed(const struct fc_rule *r, struct fc_eval *ev)
{
	return r && fc_holds(r->flags & FC_RULE_ALLOWED, r->allow_expires_ns, ev);
}

/* The source's exact entry. An IPv4 source reads its fc_top4 entry first
 * (for the prefix lookup too) and looks fc_exact4 up only where its /24
 * may hold an entry; or wherever one is, while the bits are not known to be
 * kept (fc_config.exact4_gen, against the rules' generation gen) or no
 * fc_top4 entry was read (n_top4 read as 0 from a config a publish was
 * writing, the rest of it new). */
static __always_inline struct fc_rule *fc_exact_lookup(struct fc_eval *ev, __u32 gen, struct fc_src4 *s4)
{
	struct fc_rule *r = NULL;

	if (ev->pkt.family == 4) {
		s4->top = fc_top4_read(&ev->pkt, ev->cfg, &s4->a, &s4->in24);
		if ((s4->in24 & FC_IN24_EXACT) || ((ev->cfg->exact4_gen != gen || !s4->top) && ev->cfg->n_exact4))
			r = bpf_map_lookup_elem(&fc_exact4, ev->pkt.saddr.a);
		FC_KEEP_CALL4(r);
	} else {
		if (ev->cfg->n_exact6)
			r = bpf_map_lookup_elem(&fc_exact6, ev->pkt.saddr.a);
		FC_KEEP_CALL6(r);
	}
	return r;
}

/* Whether the source's exact entry r carries the prefix lookup's answer
 * (FC_RULE_CARRY: a policy slot, no ban, no allow entry) for the rules of
 * generation gen, the one the packet read first: a publisher of another
 * version moves rules_gen and not carry4_gen. An entry that bans or allows
 * carries nothing, so a ban of its own that lapsed looks the prefixes up. */
static __always_inline bool fc_carried(const struct fc_rule *r, const struct fc_config *cfg, __u32 gen)
{
	return r && (r->flags & (FC_RULE_CARRY | FC_RULE_BANNED | FC_RULE_ALLOWED)) == FC_RULE_CARRY &&
	       cfg->carry4_gen == gen;
}

/* The longest prefix covering the source, copied into *r (zeroed), if it
 * bans, limits or allows it: a marker's rule or a /16's with nothing over it
 * is no match; or what the source's exact entry carries of it. After
 * fc_exact_lookup, which read an IPv4 source's fc_top4 entry. */
static __always_inline const struct fc_rule *fc_prefix_lookup(struct fc_eval *ev, const struct fc_src4 *s4,
							      const struct fc_rule *exact, __u32 gen, struct fc_rule *r)
{
	if (fc_carried(exact, ev->cfg, gen)) {
		/* An address with a policy inside a prefix: one lookup for both. */
		r->policy = exact->carry_policy;
	} else if (ev->pkt.family == 4) {
		if (s4->top)
			fc_prefix4_lookup(s4->top, s4->a, s4->in24, r);
	} else {
		if (ev->cfg->n_pfx6)
			fc_prefix6_lookup(&ev->pkt, ev->cfg, r);
	}
	return (r->flags & (FC_RULE_BANNED | FC_RULE_ALLOWED)) || r->policy ? r : NULL;
}

static __always_inline void fc_count(struct fc_counter *c, __u64 bytes)
{
	c->packets++;
	c->bytes += bytes;
}

/* A drop by ban r, counted also under the ban's source (by hand or its set). */
static __always_inline void fc_count_ban(struct fc_counter *verdict, const struct fc_rule *r, __u64 bytes)
{
	__u32 set = FC_RULE_SET(r->flags);
	struct fc_counter *c = bpf_map_lookup_elem(&fc_setstats, &set);

	fc_count(verdict, bytes);
	if (c)
		fc_count(c, bytes);
}

/*
 * The policies. A packet meets up to three (exact address, longest prefix,
 * ip=*), each checked by fc_policy_check. They are global functions: the
 * verifier checks each once, not at every call site and path, which keeps
 * the program small and well inside the verifier's limits. Their arguments
 * are plain memory and scalars (a global function can not be handed map
 * pointers), and what a charge found is kept per CPU in fc_scratch, so that a
 * later denial can roll it back.
 */
enum fc_check {
	FC_CHECK_NONE,  /* no such policy, or it does not apply (syn) */
	FC_CHECK_ADMIT, /* charged */
	FC_CHECK_DENY,  /* over the limit: drop (counted as dropped) */
	FC_CHECK_LOG,   /* a log policy: check it once the packet is known to pass */
};

enum fc_hit_idx {
	FC_HIT_EXACT,
	FC_HIT_PREFIX,
	FC_HIT_STAR,
	FC_HIT_SPARE, /* a charge no refund needs: kept off the stack, which is full */
	FC_HITS,
};

/* What each hit's charge found, per CPU, keyed by hit index. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, FC_HITS);
	__type(key, __u32);
	__type(value, struct fc_charge);
} fc_scratch SEC(".maps");

static __always_inline void fc_policy_count(__u32 slot, __u32 len, bool passed)
{
	struct fc_pstats *ps = bpf_map_lookup_elem(&fc_pstats, &slot);

	if (ps)
		fc_count(passed ? &ps->passed : &ps->dropped, len);
}

/* The key of the source's ip=* bucket: its address with the policy's host
 * bits (fc_config.star_host4/6) cleared, the unit. A few ALU instructions,
 * made where a bucket is looked up: kept in the packet, it would take
 * stack the verifier's bound has no room for. */
static __always_inline void fc_unit_key(const struct fc_pkt *pkt, const struct fc_config *cfg, struct fc_addr6 *k)
{
	__u64 w[2];
	__u32 a, host;

	if (pkt->family == 4) {
		__builtin_memcpy(&a, pkt->saddr.a, 4);
		a &= bpf_htonl(~0U << (cfg->star_host4 & 31));
		__builtin_memcpy(k->a, &a, 4);
		return;
	}
	__builtin_memcpy(w, pkt->saddr.a, 16);
	host = cfg->star_host6 & 127;
	if (host >= 64) {
		w[0] &= bpf_cpu_to_be64(~0ULL << (host - 64));
		w[1] = 0;
	} else {
		w[1] &= bpf_cpu_to_be64(~0ULL << host);
	}
	__builtin_memcpy(k->a, w, 16);
}

/*
 * Whether what the exact and the prefix lookup found for this source holds
 * for every address of its ip=* unit, so that its bucket may note it for
 * them all: the unit is one address, or no rule tells its addresses apart.
 * IPv4 units of /24 or longer ask the source's fc_top4 entry, already read
 * (its /24 holds no exact entry, no prefix of /25 to /31, with the bits
 * trusted for the rules' generation gen); shorter ones whether IPv4 has any
 * rule; IPv6 units the loader's word for it (FC_STAR_PLAIN6). What they
 * read lies before rules_gen in fc_config, and the loader writes it with
 * the rules it describes: a packet that read the rules' new generation
 * reads it new too.
 */
static __always_inline bool fc_unit_plain(const struct fc_eval *ev, const struct fc_src4 *s4, __u32 gen)
{
	const struct fc_config *cfg = ev->cfg;
	__u32 host;

	if (ev->pkt.family == 4) {
		host = cfg->star_host4;
		if (!host || (!cfg->n_exact4 && !cfg->n_pfx4))
			return true;
		return host <= 8 && s4->top && cfg->exact4_gen == gen && !(s4->in24 & (FC_IN24_EXACT | FC_IN24_LONGER));
	}
	return !cfg->star_host6 || (cfg->star_flags & FC_STAR_PLAIN6);
}

static __always_inline struct fc_src_bucket *fc_src_lookup(const struct fc_pkt *pkt, const struct fc_config *cfg)
{
	struct fc_src_bucket *b;
	struct fc_addr6 k;

	fc_unit_key(pkt, cfg, &k);
	if (pkt->family == 4) {
		b = bpf_map_lookup_elem(&fc_src4, k.a);
		FC_KEEP_CALL4(b);
	} else {
		b = bpf_map_lookup_elem(&fc_src6, k.a);
		FC_KEEP_CALL6(b);
	}
	return b;
}

/*
 * This source's ip=* bucket. New buckets are capped per CPU (fc_config.new_src):
 * past the cap, or when the LRU can not give an entry, the source shares the
 * policy's overflow bucket (fc_buckets[slot]), so a flood of spoofed sources
 * neither evicts steady sources wholesale nor escapes the limit.
 */
/* Puts fresh in map at key, unless a bucket of the ip=* policy's epoch gen
 * is there: NOEXIST, so that of two CPUs making the same bucket one wins and
 * none resets it; then over a stale one (an earlier ip=* policy's). */
static __always_inline void fc_src_put(void *map, const void *key, const struct fc_src_bucket *fresh, __u32 gen)
{
	const struct fc_src_bucket *old;

	if (bpf_map_update_elem(map, key, fresh, BPF_NOEXIST) != -EEXIST)
		return;
	old = bpf_map_lookup_elem(map, key);
	if (old && old->gen != gen)
		bpf_map_update_elem(map, key, fresh, BPF_EXIST);
}

/* Makes (or remakes, over a stale one) the source's bucket, if the per-CPU
 * cap on new buckets allows; returns whether it tried. Its own function: a
 * new source is rare, and its bucket's image on the stack is not. */
__noinline int fc_src_make(const struct fc_pkt *pkt)
{
	struct fc_src_bucket fresh = {};
	struct fc_policy *pol;
	struct fc_config *cfg;
	struct fc_flood *fl;
	struct fc_addr6 k;
	__u32 zero = 0;
	__u64 prev, next;
	int i;

	cfg = bpf_map_lookup_elem(&fc_config, &zero);
	fl = bpf_map_lookup_elem(&fc_flood, &zero);
	if (!pkt || !cfg || !fl ||
	    (cfg->new_src.interval_ns &&
	     !fc_gcra_try(&fl->state, &cfg->new_src, 0, fc_clock(cfg, false), 1, &prev, &next)))
		return 0;
	/* Its words empty, of the generations of the ip=* policy's tiers (a
	 * charge denies a word of another). */
	pol = bpf_map_lookup_elem(&fc_policies, &cfg->star_slot);
	if (pol && pol->algo == FC_ALGO_GCRA)
		for (i = 0; i < FC_MAX_TIERS; i++)
			fresh.state[i] = FC_TAG(&pol->lim);
	/* A new bucket knows nothing yet about the exact and prefix rules: a
	 * generation gone by, which no publish brings back (the next one,
	 * rules_gen + 1, would make its empty note true until a packet of its
	 * unit wrote one; for a unit that is never noted, for good). */
	fresh.gen = cfg->star_gen;
	fresh.rules_gen = cfg->rules_gen - 1;
	fc_unit_key(pkt, cfg, &k);
	if (pkt->family == 4)
		fc_src_put(&fc_src4, k.a, &fresh, cfg->star_gen);
	else
		fc_src_put(&fc_src6, k.a, &fresh, cfg->star_gen);
	return 1;
}

/* The bucket of a source that has none of its own under the ip=* policy
 * in slot (or a stale one): made, or the overflow bucket. */
static __always_inline struct fc_bucket *fc_src_new(const struct fc_pkt *pkt, const struct fc_config *cfg,
						     __u32 slot)
{
	struct fc_src_bucket *b;
	struct fc_stats *st;
	__u32 zero = 0;

	if (fc_src_make(pkt)) {
		b = fc_src_lookup(pkt, cfg);
		if (b && b->gen == cfg->star_gen)
			return (struct fc_bucket *)b;
	}
	st = bpf_map_lookup_elem(&fc_stats, &zero);
	if (st)
		fc_count(&st->src_overflow, pkt->len);
	return bpf_map_lookup_elem(&fc_buckets, &slot);
}

/* b: what looking the source up in its LRU found. */
static __always_inline struct fc_bucket *fc_src_bucket(const struct fc_pkt *pkt, const struct fc_config *cfg,
							__u32 slot, struct fc_src_bucket *b)
{
	if (b && b->gen == cfg->star_gen)
		return (struct fc_bucket *)b;
	return fc_src_new(pkt, cfg, slot);
}

/*
 * Whether --count syn charges the packet: a TCP SYN without ACK, and, deny
 * biased, any packet that may carry one unseen: a TCP fragment (the SYN flag
 * can sit in any fragment, and reassembly puts it back), a TCP header cut
 * short, or an L4 protocol hidden past more extension headers than we walk.
 * Otherwise splitting SYNs would be a way around a connection-rate limit.
 */
static __always_inline bool fc_is_syn(const struct fc_pkt *pkt)
{
	if (pkt->flags & FC_PKT_L4_UNSEEN)
		return pkt->l4proto == IPPROTO_TCP || pkt->l4proto == 0;
	return pkt->l4proto == IPPROTO_TCP && (pkt->tcp_flags & (FC_TCP_SYN | FC_TCP_ACK)) == FC_TCP_SYN;
}

/* Whether fc_is_syn may hold once fc_parse_rest has run, from the IP
 * header alone (c at it): false only where that header rules a SYN out,
 * its protocol known and not TCP (nor 0, unknown to fc_is_syn), and, for
 * IPv6, nothing in it that fc_parse_rest would find malformed. */
static __always_inline bool fc_may_syn(const struct fc_cursor *c, const struct fc_pkt *pkt)
{
	if (pkt->l4proto == IPPROTO_TCP || pkt->l4proto == 0)
		return true;
	if (!(pkt->flags & FC_PKT_IPV6_HDR))
		return false;
	return fc_ipv6_ext(pkt->l4proto) || !fc_ipv6_hdr_ok(c);
}

/* What a policy charges this packet, or 0 if it does not apply (syn). */
static __always_inline __u64 fc_policy_cost(const struct fc_policy *pol, const struct fc_pkt *pkt)
{
	if (pol->count == FC_COUNT_BYTES)
		return pkt->len;
	if (pol->count == FC_COUNT_SYN && !fc_is_syn(pkt))
		return 0;
	return 1;
}

/* Nonzero if bucket b holds a GCRA word of another generation than pol's:
 * the first charge after a change of rates. */
static __always_inline __u64 fc_stale(const struct fc_policy *pol, const struct fc_bucket *b)
{
	return fc_gen_stale(&pol->lim, b->state);
}

/* fc_policy_check's flags. */
#define FC_CHECK_LOG_PASS 0x1 /* check a log policy: count passed or would-drop */
#define FC_CHECK_KEEP     0x2 /* a later policy may deny: keep the charge for a refund */

/* Checks the policy in slot against pkt, as hit idx, on bucket b (NULL:
 * the policy's, or for ip=* the source's, looked up here). Without
 * FC_CHECK_LOG_PASS it leaves log policies for later and counts a denial. */
__noinline int fc_policy_check(const struct fc_pkt *pkt, __u32 slot, __u32 idx, __u32 flags, struct fc_bucket *b)
{
	bool log = flags & FC_CHECK_LOG_PASS;
	const struct fc_config *cfg;
	__u32 zero = 0, spare = FC_HIT_SPARE;
	struct fc_policy *pol;
	struct fc_charge *ch;
	__u64 cost;
	int ok;

	pol = bpf_map_lookup_elem(&fc_policies, &slot);
	cfg = bpf_map_lookup_elem(&fc_config, &zero);
	ch = bpf_map_lookup_elem(&fc_scratch, flags & FC_CHECK_KEEP ? &idx : &spare);
	if (!pkt || !pol || !cfg || !ch || !pol->ntiers)
		return FC_CHECK_NONE;
	if ((pol->action == FC_ACTION_LOG) != !!log)
		return log ? FC_CHECK_NONE : FC_CHECK_LOG;
	cost = fc_policy_cost(pol, pkt);
	if (!cost)
		return FC_CHECK_NONE;
	if (!b)
		b = idx == FC_HIT_STAR ? fc_src_bucket(pkt, cfg, slot, fc_src_lookup(pkt, cfg)) :
					 bpf_map_lookup_elem(&fc_buckets, &slot);
	if (!b)
		return FC_CHECK_NONE;
	/* A word of another generation: brought first (the first charge after
	 * a change of rates); one it could not bring denies. */
	if (fc_stale(pol, b))
		fc_gcra_adopt((__u64(*)[FC_MAX_TIERS])b->state, &pol->lim, fc_clock(cfg, pol->flags & FC_POLICY_PRECISE),
			      FC_ADOPT_ARG(pol->ntiers, 0));
	ok = fc_charge_any(pol, pol->algo, pol->ntiers, b, fc_clock(cfg, pol->flags & FC_POLICY_PRECISE), cost, ch);
	if (log)
		fc_policy_count(slot, pkt->len, ok);
	else if (!ok)
		fc_policy_count(slot, pkt->len, false);
	return ok ? FC_CHECK_ADMIT : FC_CHECK_DENY;
}

/* Rolls back what fc_policy_check charged as hit idx, on the same b. */
__noinline int fc_policy_refund(const struct fc_pkt *pkt, __u32 slot, __u32 idx, struct fc_bucket *b)
{
	const struct fc_config *cfg;
	struct fc_policy *pol;
	struct fc_charge *ch;
	__u32 zero = 0;

	pol = bpf_map_lookup_elem(&fc_policies, &slot);
	ch = bpf_map_lookup_elem(&fc_scratch, &idx);
	cfg = bpf_map_lookup_elem(&fc_config, &zero);
	if (!pkt || !pol || !ch || !cfg)
		return 0;
	/* An ip=* charge may have gone to the overflow bucket: a refund to the
	 * wrong word finds it moved and gives nothing back. */
	if (!b)
		b = idx == FC_HIT_STAR ? (struct fc_bucket *)fc_src_lookup(pkt, cfg) :
					 bpf_map_lookup_elem(&fc_buckets, &slot);
	if (b)
		fc_refund_any(pol->algo, pol->ntiers, b, fc_policy_cost(pol, pkt), ch);
	return 0;
}

/*
 * Drop policies are one conjunction: the packet passes only if every one
 * admits it, and a denial rolls back the charges already made. Log policies
 * are then checked on their own, as if enforcing, and never drop. own: the
 * source's ip=* bucket where the caller holds it, else NULL.
 */
static __always_inline bool fc_policies_deny(struct fc_eval *ev, __u32 exact_slot, __u32 prefix_slot,
					     __u32 star_slot, struct fc_bucket *own)
{
	__u32 slots[FC_HITS] = { exact_slot, prefix_slot, star_slot };

	int r[FC_HITS], i, j;

#pragma unroll
	for (i = 0; i < FC_HITS; i++) {
		/* Only a charge that a later policy may undo is kept. */
		__u32 keep = (i < FC_HIT_PREFIX && slots[FC_HIT_PREFIX]) || (i < FC_HIT_STAR && slots[FC_HIT_STAR]);

		r[i] = slots[i] ? fc_policy_check(&ev->pkt, slots[i], i, keep ? FC_CHECK_KEEP : 0,
						  i == FC_HIT_STAR ? own : NULL) :
				  FC_CHECK_NONE;
		if (r[i] != FC_CHECK_DENY)
			continue;
#pragma unroll
		for (j = 0; j < FC_HITS; j++)
			if (j < i && r[j] == FC_CHECK_ADMIT)
				fc_policy_refund(&ev->pkt, slots[j], j, j == FC_HIT_STAR ? own : NULL);
		return true;
	}
#pragma unroll
	for (i = 0; i < FC_HITS; i++) {
		if (r[i] == FC_CHECK_ADMIT)
			fc_policy_count(slots[i], ev->pkt.len, true);
		else if (r[i] == FC_CHECK_LOG)
			fc_policy_check(&ev->pkt, slots[i], i, FC_CHECK_LOG_PASS, i == FC_HIT_STAR ? own : NULL);
	}
	return false;
}

/*
 * The fast path, for the one or two policies met with their buckets in hand
 * (the ip=* bucket of a source that has one): one clock read, no lookup
 * made twice, and the two (an exact address or a prefix with ip=*, an exact
 * address inside a limited prefix) both charged or neither. Log policies,
 * three policies and a source still without an ip=* bucket take the general
 * path, fc_policies_deny.
 */
enum fc_fast {
	FC_FAST_PASS,
	FC_FAST_DROP,
	FC_FAST_GENERAL, /* for the general path: nothing was charged */
};

/*
 * What fc_charge2 may take for known, so that the limit code folds to a few
 * compare-and-exchanges, small enough to inline in the main program (and to
 * verify on each path into it); fc_enforce runs the general case. A warm-up's
 * ramp is a global function of its own, called from either.
 */
enum fc_inline {
	FC_INLINE_NONE,  /* any policies */
	FC_INLINE_GCRA1, /* single-tier GCRA policies */
	FC_INLINE_TIER1, /* one single-tier policy, of any algorithm */
};

/* Charges pa to its bucket a as fc_limit_charge does, but a single-tier
 * sliding window inline (FC_INLINE_TIER1): out of line, the call and its
 * spills cost more than the window's arithmetic. The bucket's words are of
 * their generations (fc_fast and fc_enforce see to it). */
static __always_inline int fc_charge_a(const struct fc_policy *pa, __u8 algo, __u8 tiers, struct fc_bucket *a,
				       __u64 now, __u64 cost, struct fc_charge *ch, enum fc_inline known)
{
	if (known == FC_INLINE_TIER1 && algo == FC_ALGO_SLIDING) {
		ch->next[0] = fc_slide_charge(&a->state[0], &pa->tier[0], now, cost, &ch->prev[0]);
		return ch->next[0] != 0;
	}
	return fc_limit_charge(algo, tiers, &pa->lim, a->state, now, cost, ch) == 1;
}

/* Charges pa (slot sa, bucket a) and, if sb, pb (sb, b). */
static __always_inline int fc_charge2(const struct fc_pkt *pkt, const struct fc_config *cfg, __u32 sa,
				      const struct fc_policy *pa, struct fc_bucket *a, __u32 sb,
				      const struct fc_policy *pb, struct fc_bucket *b, struct fc_charge *cha,
				      struct fc_charge *chb, enum fc_inline known)
{
	__u8 algo_a = known == FC_INLINE_GCRA1 ? FC_ALGO_GCRA : pa->algo;
	__u8 algo_b = known == FC_INLINE_GCRA1 ? FC_ALGO_GCRA : pb->algo;
	__u8 tiers_a = known ? 1 : pa->ntiers, tiers_b = known ? 1 : pb->ntiers;
	__u64 ca, cb = 0, now;

	ca = tiers_a ? fc_policy_cost(pa, pkt) : 0;
	if (sb && tiers_b)
		cb = fc_policy_cost(pb, pkt);
	if (!ca && !cb)
		return FC_FAST_PASS;
	now = fc_clock(cfg, (pa->flags | (sb ? pb->flags : 0)) & FC_POLICY_PRECISE);
	if (ca && !fc_charge_a(pa, algo_a, tiers_a, a, now, ca, cha, known)) {
		fc_policy_count(sa, pkt->len, false);
		return FC_FAST_DROP;
	}
	if (cb && fc_limit_charge(algo_b, tiers_b, &pb->lim, b->state, now, cb, chb) != 1) {
		if (ca)
			fc_limit_refund(algo_a, tiers_a, a->state, ca, cha);
		fc_policy_count(sb, pkt->len, false);
		return FC_FAST_DROP;
	}
	if (ca)
		fc_policy_count(sa, pkt->len, true);
	if (cb)
		fc_policy_count(sb, pkt->len, true);
	return FC_FAST_PASS;
}

/* The same for any policies but log ones and fleet ones (fc_fast takes
 * those elsewhere), as a global function: verified once, whatever the
 * paths into it. */
__noinline int fc_enforce(const struct fc_pkt *pkt, __u32 sa, struct fc_bucket *a, __u32 sb, struct fc_bucket *b)
{
	struct fc_policy *pa = bpf_map_lookup_elem(&fc_policies, &sa);
	struct fc_policy *pb = bpf_map_lookup_elem(&fc_policies, &sb);
	struct fc_charge *cha, *chb;
	struct fc_config *cfg;
	__u32 zero = 0, one = 1;

	cfg = bpf_map_lookup_elem(&fc_config, &zero);
	cha = bpf_map_lookup_elem(&fc_scratch, &zero);
	chb = bpf_map_lookup_elem(&fc_scratch, &one);
	/* A word of another generation: the general path brings it first. */
	if (!pkt || !a || !b || !pa || !pb || !cfg || !cha || !chb || pa->action == FC_ACTION_LOG ||
	    (sb && pb->action == FC_ACTION_LOG) || (fc_stale(pa, a) | fc_stale(pb, b)))
		return FC_FAST_GENERAL;
	return fc_charge2(pkt, cfg, sa, pa, a, sb, pb, b, cha, chb, FC_INLINE_NONE);
}

/* A policy the inline fast path takes: one tier (with its ramp, if it
 * warms up). */
static __always_inline bool fc_tier1(const struct fc_policy *pol)
{
	return pol->ntiers == 1 && pol->action != FC_ACTION_LOG;
}

/* A fleet policy met alone (its bucket a), on the fast path: the fleet's
 * charge is a global function, called from here and from fc_policy_check
 * only, so that fc_enforce and the inline charges never hold it (nor its
 * stack, on a chain of calls at the verifier's 512 bytes). */
static __always_inline int fc_fleet_fast(const struct fc_pkt *pkt, const struct fc_config *cfg, __u32 sa,
					 const struct fc_policy *pa, struct fc_bucket *a, struct fc_charge *ch)
{
	__u64 cost = fc_policy_cost(pa, pkt), now;
	int ok = FC_FLEET_ROLL;

	if (!cost)
		return FC_FAST_PASS;
	now = fc_clock(cfg, pa->flags & FC_POLICY_PRECISE);
	/* A window's credit spent inline, as a local window's count is: the
	 * same instructions. The rest (its rollover, a refusal's demand, the
	 * other algorithms) out of line. */
	if (pa->algo == FC_ALGO_FLEET_WINDOW)
		ok = fc_fleet_window_try(&a->state[0], now / pa->tier[0].unit_ns, cost, &ch->prev[0], &ch->next[0]);
	if (ok != 1)
		ok = fc_fleet_charge(pa, a, ch, now, cost);
	fc_policy_count(sa, pkt->len, ok);
	return ok ? FC_FAST_PASS : FC_FAST_DROP;
}

static __always_inline bool fc_gcra1(const struct fc_policy *pol)
{
	return pol->algo == FC_ALGO_GCRA && fc_tier1(pol);
}

static __always_inline int fc_fast(struct fc_eval *ev, __u32 sa, struct fc_bucket *a, __u32 sb,
				   struct fc_bucket *b)
{
	struct fc_policy *pa = bpf_map_lookup_elem(&fc_policies, &sa), *pb = pa;
	struct fc_charge ch;

	if (!a || !b || !pa)
		return FC_FAST_GENERAL;
	/* sb is met after sa (ip=* after either, a prefix after the exact
	 * address inside it): more general, so an override sa switches it off. */
	if (pa->flags & FC_POLICY_OVERRIDE)
		sb = 0;
	if (sb)
		pb = bpf_map_lookup_elem(&fc_policies, &sb);
	if (!pb)
		return FC_FAST_GENERAL;
	/* A word of another generation to bring (rare: the first charge after
	 * a change of rates) takes the general path, which does: the charges
	 * here deny one. */
	if (fc_stale(pa, a) | fc_stale(pb, b))
		return FC_FAST_GENERAL;
	/* A fleet policy: alone here, with another the general path (never
	 * fc_enforce). */
	if (fc_fleet_algo(pa->algo) || fc_fleet_algo(pb->algo))
		return !sb && pa->action != FC_ACTION_LOG ? fc_fleet_fast(&ev->pkt, ev->cfg, sa, pa, a, &ch) :
							     FC_FAST_GENERAL;
	/* One charge kept for both: a single tier's is written only when it
	 * admits, so pb's never overwrites the one pa's refund needs. */
	if (fc_gcra1(pa) && (!sb || fc_gcra1(pb)))
		return fc_charge2(&ev->pkt, ev->cfg, sa, pa, a, sb, pb, b, &ch, &ch, FC_INLINE_GCRA1);
	if (!sb && fc_tier1(pa))
		return fc_charge2(&ev->pkt, ev->cfg, sa, pa, a, 0, pa, a, &ch, &ch, FC_INLINE_TIER1);
	return fc_enforce(&ev->pkt, sa, a, sb, b);
}

/* The bucket of slot: the source's own under ip=* (star), the policy's
 * otherwise. */
static __always_inline struct fc_bucket *fc_bucket_of(__u32 slot, __u32 star, struct fc_src_bucket *src)
{
	if (slot == star)
		return (struct fc_bucket *)src;
	return bpf_map_lookup_elem(&fc_buckets, &slot);
}

/* Whether the policy in slot is an override (slot 0: none). */
static __always_inline bool fc_overrides(__u32 slot)
{
	struct fc_policy *pol = bpf_map_lookup_elem(&fc_policies, &slot);

	return slot && pol && (pol->flags & FC_POLICY_OVERRIDE);
}

/* Makes the source's ip=* bucket, or remakes one of an earlier ip=*
 * policy, if the per-CPU cap on new buckets allows. */
static __always_inline void fc_src_keep(const struct fc_pkt *pkt, const struct fc_config *cfg)
{
	struct fc_src_bucket *b = fc_src_lookup(pkt, cfg);

	if (!b || b->gen != cfg->star_gen)
		fc_src_make(pkt);
}

/* A frame whose source was not read: one that is not IP, or is cut before
 * its source (nothing to decide on), passes; one behind more VLAN tags
 * than are parsed could hide any source, so it is dropped while any rule
 * (a ban, an address policy, an allow entry) or an ip=* policy is
 * published, and passes as not IP while none is. */
static __always_inline bool fc_unparsed(struct fc_eval *ev, enum fc_parse_rc rc)
{
	const struct fc_config *cfg = ev->cfg;

	if (rc == FC_PARSE_TAGGED &&
	    (cfg->n_exact4 | cfg->n_exact6 | cfg->n_pfx4 | cfg->n_pfx6 | cfg->n_top4 | cfg->star_slot)) {
		fc_count(&ev->st->drop_tagged, ev->pkt.len);
		return true;
	}
	fc_count(rc == FC_PARSE_MALFORMED ? &ev->st->malformed : &ev->st->non_ip, ev->pkt.len);
	return false;
}

/* ctx: the program's context, tc whether it is TC's; len: the packet's
 * whole length (at TC, beyond what is linear in data). */
static __always_inline bool fc_decide(void *ctx, bool tc, void *data, void *data_end, __u32 len)
{
	struct fc_cursor c = { .pos = data, .end = data_end };
	struct fc_eval ev = { .pkt.len = len };
	struct fc_src_bucket *src = NULL;
	const struct fc_rule *exact, *prefix;
	struct fc_rule pfx = { 0 };
	struct fc_src4 s4 = { 0 };
	struct fc_bucket *ba, *bb, *own = NULL;
	__u32 star, gen, e, p, sa, sb, zero = 0;
	enum fc_parse_rc rc;
	bool over;
	int v;

	ev.st = bpf_map_lookup_elem(&fc_stats, &zero);
	ev.cfg = bpf_map_lookup_elem(&fc_config, &zero);
	if (!ev.st || !ev.cfg)
		return false;

	rc = fc_parse_src(&c, &ev.pkt);
	if (rc != FC_PARSE_OK)
		return fc_unparsed(&ev, rc);
	/* An ip=* policy counting SYNs is skipped without a call where the IP
	 * header rules a SYN out; what follows it is parsed after the bans. */
	star = ev.cfg->star_slot;
	if (ev.cfg->star_syn && !fc_may_syn(&c, &ev.pkt))
		star = 0;
	/* Read before the lookups: a publish that lands between them and the
	 * note below leaves a note of the rules before it, which it voids. */
	gen = *(volatile __u32 *)&ev.cfg->rules_gen;
	if (star) {
		src = fc_src_lookup(&ev.pkt, ev.cfg);
		if (src && src->gen != ev.cfg->star_gen)
			src = NULL; /* an earlier ip=* policy's */
		if (src && src->rules_gen == gen) {
			/* What the rules say of this source, as its bucket noted it:
			 * one lookup instead of three. */
			e = src->exact_policy;
			p = src->prefix_policy;
			goto policies;
		}
	}
	/* An allowed source is never noted in its ip=* bucket (below): the
	 * lookups that find it allowed run for each of its packets. */
	exact = fc_exact_lookup(&ev, gen, &s4);
	if (fc_allowed(exact, &ev))
		goto allowed;
	if (fc_banned(exact, &ev)) {
		fc_count_ban(&ev.st->drop_exact, exact, ev.pkt.len);
		return true;
	}
	prefix = fc_prefix_lookup(&ev, &s4, exact, gen, &pfx);
	if (fc_allowed(prefix, &ev))
		goto allowed;
	if (fc_banned(prefix, &ev)) {
		fc_count_ban(&ev.st->drop_prefix, prefix, ev.pkt.len);
		return true;
	}
	e = exact ? exact->policy : 0;
	/* Met once if both name it, as a publish moving it does for an instant. */
	p = prefix && prefix->policy != e ? prefix->policy : 0;
	/* Noted in the source's bucket where no ban applies, not even a lapsed
	 * one (a ban starts only with a publish, which moves rules_gen), and
	 * what was found holds for its whole unit: the slots, then (in that
	 * order for a reader on another CPU) the rules' generation they hold
	 * for. */
	if (src && !(exact && (exact->flags & FC_RULE_BANNED)) && !(prefix && (prefix->flags & FC_RULE_BANNED)) &&
	    fc_unit_plain(&ev, &s4, gen)) {
		src->exact_policy = e;
		src->prefix_policy = p;
		asm volatile("" ::: "memory");
		src->rules_gen = gen;
	}
policies:
	/* Only a policy's cost depends on what follows, never a ban. */
	fc_parse_after(&c, &ev.pkt, ctx, tc, data);
	if (ev.cfg->star_syn && !fc_is_syn(&ev.pkt))
		star = 0;
	/* The policies met, first and second, in the order exact, prefix, ip=*. */
	sa = e ? e : p ? p : star;
	sb = e && p ? p : sa != star ? star : 0;
	if (!sa)
		goto passed;
	/* ip=* alone on a source without a bucket (a flood's every packet): the
	 * bucket made, or the overflow bucket, for the general path without its
	 * second lookup (on the fast path, the verifier would walk it twice). */
	if (star && !src && !e && !p)
		own = fc_src_new(&ev.pkt, ev.cfg, star);
	if ((star && !src) || (e && p && star))
		goto general;
	ba = fc_bucket_of(sa, star, src);
	bb = sb ? fc_bucket_of(sb, star, src) : ba;
	v = fc_fast(&ev, sa, ba, sb, bb);
	if (v != FC_FAST_GENERAL)
		goto verdict;
general:
	/* Overrides: the exact address's switches off the prefix's and ip=*,
	 * the prefix's ip=*. A source that ip=* no longer applies to still
	 * gets a bucket, to hold its note of the rules: its next packets take
	 * the fast path. */
	over = fc_overrides(e);
	if (star && (over || fc_overrides(p))) {
		if (!src)
			fc_src_keep(&ev.pkt, ev.cfg);
		star = 0;
	}
	if (over)
		p = 0;
	v = fc_policies_deny(&ev, e, p, star, src ? (struct fc_bucket *)src : own) ? FC_FAST_DROP : FC_FAST_PASS;
verdict:
	if (v == FC_FAST_DROP) {
		fc_count(&ev.st->drop_limit, ev.pkt.len);
		return true;
	}
passed:
	fc_count(ev.pkt.flags & FC_PKT_MALFORMED ? &ev.st->malformed : &ev.st->passed, ev.pkt.len);
	return false;
allowed:
	fc_count(&ev.st->allowed, ev.pkt.len);
	return false;
}

#endif /* FC_DECIDE_BPF_H */
