/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The verdict shared by the XDP and the TC program: parse up to the source
 * address; look it up once in the exact hash and once in its family's trie,
 * each answering both "banned?" and "which policy?"; then charge the
 * policies of the exact address, of the longest prefix and ip=*, all or
 * none. What follows the IP header only ever sets a policy's cost: a frame
 * that is malformed past its source is banned and limited like any other.
 * Returns whether to drop; the entry point maps that to its own return codes.
 */
#ifndef FC_DECIDE_BPF_H
#define FC_DECIDE_BPF_H

#include "fc_parse.bpf.h"
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

/* The packet path's clock: the coarse monotonic clock made UTC (see
 * fc_config.utc_offset_ns), or the precise one for a policy that needs it. */
static __always_inline __u64 fc_clock(const struct fc_config *cfg, bool precise)
{
	return (precise ? bpf_ktime_get_ns() : bpf_ktime_get_coarse_ns()) + cfg->utc_offset_ns;
}

static __always_inline bool fc_banned(const struct fc_rule *r, struct fc_eval *ev)
{
	if (!r || !(r->flags & FC_RULE_BANNED))
		return false;
	if (!r->ban_expires_ns)
		return true;
	if (!ev->now)
		ev->now = fc_clock(ev->cfg, false);
	return ev->now < r->ban_expires_ns;
}

/*
 * Ends the IPv4 or the IPv6 branch of a map lookup with an instruction of its
 * own. clang would otherwise merge the two branches' lookups into one call on
 * either map, and the verifier inlines a map lookup only where the call
 * always sees the same map: merged, every lookup became an indirect call,
 * 7 ns dearer here. The two no-op moves differ so they can not be merged.
 */
#define FC_KEEP_CALL4(p) asm volatile("%0 = %0" : "+r"(p))
#define FC_KEEP_CALL6(p) asm volatile("%0 = %0\n%0 = %0" : "+r"(p))

static __always_inline struct fc_rule *fc_exact_lookup(struct fc_eval *ev)
{
	struct fc_rule *r = NULL;

	if (ev->pkt.family == 4) {
		if (ev->cfg->n_exact4)
			r = bpf_map_lookup_elem(&fc_exact4, ev->pkt.saddr.a);
		FC_KEEP_CALL4(r);
	} else {
		if (ev->cfg->n_exact6)
			r = bpf_map_lookup_elem(&fc_exact6, ev->pkt.saddr.a);
		FC_KEEP_CALL6(r);
	}
	return r;
}

static __always_inline struct fc_rule *fc_prefix_lookup(struct fc_eval *ev)
{
	struct fc_pfx4_key k4;
	struct fc_pfx6_key k6;

	struct fc_rule *r = NULL;

	if (ev->pkt.family == 4) {
		if (ev->cfg->n_pfx4) {
			k4.prefixlen = 32;
			__builtin_memcpy(k4.a, ev->pkt.saddr.a, 4);
			r = bpf_map_lookup_elem(&fc_pfx4, &k4);
		}
		FC_KEEP_CALL4(r);
	} else {
		if (ev->cfg->n_pfx6) {
			k6.prefixlen = 128;
			__builtin_memcpy(k6.a, ev->pkt.saddr.a, 16);
			r = bpf_map_lookup_elem(&fc_pfx6, &k6);
		}
		FC_KEEP_CALL6(r);
	}
	return r;
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

static __always_inline struct fc_src_bucket *fc_src_lookup(const struct fc_pkt *pkt)
{
	struct fc_src_bucket *b;

	if (pkt->family == 4) {
		b = bpf_map_lookup_elem(&fc_src4, pkt->saddr.a);
		FC_KEEP_CALL4(b);
	} else {
		b = bpf_map_lookup_elem(&fc_src6, pkt->saddr.a);
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
static __always_inline struct fc_bucket *fc_src_bucket(const struct fc_pkt *pkt, const struct fc_config *cfg,
							__u32 slot)
{
	/* A new bucket knows nothing yet about the exact and prefix rules. */
	struct fc_src_bucket *b, fresh = { .gen = cfg->star_gen, .rules_gen = cfg->rules_gen + 1 };
	struct fc_stats *st;
	struct fc_flood *fl;
	__u32 zero = 0;
	__u64 prev, next;

	b = fc_src_lookup(pkt);
	if (b && b->gen == cfg->star_gen)
		return (struct fc_bucket *)b;
	fl = bpf_map_lookup_elem(&fc_flood, &zero);
	if (fl && (!cfg->new_src.interval_ns ||
		   fc_gcra_try(&fl->state, &cfg->new_src, fc_clock(cfg, false), 1, &prev, &next))) {
		/* NOEXIST: of two CPUs making the same bucket, one wins, none resets it. */
		if (pkt->family == 4)
			bpf_map_update_elem(&fc_src4, pkt->saddr.a, &fresh, b ? BPF_EXIST : BPF_NOEXIST);
		else
			bpf_map_update_elem(&fc_src6, pkt->saddr.a, &fresh, b ? BPF_EXIST : BPF_NOEXIST);
		b = fc_src_lookup(pkt);
		if (b && b->gen == cfg->star_gen)
			return (struct fc_bucket *)b;
	}
	st = bpf_map_lookup_elem(&fc_stats, &zero);
	if (st)
		fc_count(&st->src_overflow, pkt->len);
	return bpf_map_lookup_elem(&fc_buckets, &slot);
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

/* What a policy charges this packet, or 0 if it does not apply (syn). */
static __always_inline __u64 fc_policy_cost(const struct fc_policy *pol, const struct fc_pkt *pkt)
{
	if (pol->count == FC_COUNT_BYTES)
		return pkt->len;
	if (pol->count == FC_COUNT_SYN && !fc_is_syn(pkt))
		return 0;
	return 1;
}

/* fc_policy_check's flags. */
#define FC_CHECK_LOG_PASS 0x1 /* check a log policy: count passed or would-drop */
#define FC_CHECK_KEEP     0x2 /* a later policy may deny: keep the charge for a refund */

/* Checks the policy in slot against pkt, as hit idx. Without
 * FC_CHECK_LOG_PASS it leaves log policies for later and counts a denial. */
__noinline int fc_policy_check(const struct fc_pkt *pkt, __u32 slot, __u32 idx, __u32 flags)
{
	bool log = flags & FC_CHECK_LOG_PASS;
	const struct fc_config *cfg;
	struct fc_charge *ch, mine;
	struct fc_policy *pol;
	struct fc_bucket *b;
	__u32 zero = 0;
	__u64 cost;
	int ok;

	pol = bpf_map_lookup_elem(&fc_policies, &slot);
	cfg = bpf_map_lookup_elem(&fc_config, &zero);
	ch = flags & FC_CHECK_KEEP ? bpf_map_lookup_elem(&fc_scratch, &idx) : &mine;
	if (!pkt || !pol || !cfg || !ch || !pol->ntiers)
		return FC_CHECK_NONE;
	if ((pol->action == FC_ACTION_LOG) != !!log)
		return log ? FC_CHECK_NONE : FC_CHECK_LOG;
	cost = fc_policy_cost(pol, pkt);
	if (!cost)
		return FC_CHECK_NONE;
	b = idx == FC_HIT_STAR ? fc_src_bucket(pkt, cfg, slot) : bpf_map_lookup_elem(&fc_buckets, &slot);
	if (!b)
		return FC_CHECK_NONE;
	ok = fc_limit_try(pol->algo, pol->ntiers, pol->tier, b->state, fc_clock(cfg, pol->flags & FC_POLICY_PRECISE),
			  cost, ch);
	if (log)
		fc_policy_count(slot, pkt->len, ok);
	else if (!ok)
		fc_policy_count(slot, pkt->len, false);
	return ok ? FC_CHECK_ADMIT : FC_CHECK_DENY;
}

/* Rolls back what fc_policy_check charged as hit idx. */
__noinline int fc_policy_refund(const struct fc_pkt *pkt, __u32 slot, __u32 idx)
{
	struct fc_policy *pol;
	struct fc_charge *ch;
	struct fc_bucket *b;

	pol = bpf_map_lookup_elem(&fc_policies, &slot);
	ch = bpf_map_lookup_elem(&fc_scratch, &idx);
	if (!pkt || !pol || !ch)
		return 0;
	/* An ip=* charge may have gone to the overflow bucket: a refund to the
	 * wrong word finds it moved and gives nothing back. */
	b = idx == FC_HIT_STAR ? (struct fc_bucket *)fc_src_lookup(pkt) : bpf_map_lookup_elem(&fc_buckets, &slot);
	if (b)
		fc_limit_refund(pol->algo, pol->ntiers, b->state, fc_policy_cost(pol, pkt), ch);
	return 0;
}

/*
 * Drop policies are one conjunction: the packet passes only if every one
 * admits it, and a denial rolls back the charges already made. Log policies
 * are then checked on their own, as if enforcing, and never drop.
 */
static __always_inline bool fc_policies_deny(struct fc_eval *ev, __u32 exact_slot, __u32 prefix_slot,
					     __u32 star_slot)
{
	__u32 slots[FC_HITS] = { exact_slot, prefix_slot, star_slot };

	int r[FC_HITS], i, j;

#pragma unroll
	for (i = 0; i < FC_HITS; i++) {
		/* Only a charge that a later policy may undo is kept. */
		__u32 keep = (i < FC_HIT_PREFIX && slots[FC_HIT_PREFIX]) || (i < FC_HIT_STAR && slots[FC_HIT_STAR]);

		r[i] = slots[i] ? fc_policy_check(&ev->pkt, slots[i], i, keep ? FC_CHECK_KEEP : 0) : FC_CHECK_NONE;
		if (r[i] != FC_CHECK_DENY)
			continue;
#pragma unroll
		for (j = 0; j < FC_HITS; j++)
			if (j < i && r[j] == FC_CHECK_ADMIT)
				fc_policy_refund(&ev->pkt, slots[j], j);
		return true;
	}
#pragma unroll
	for (i = 0; i < FC_HITS; i++) {
		if (r[i] == FC_CHECK_ADMIT)
			fc_policy_count(slots[i], ev->pkt.len, true);
		else if (r[i] == FC_CHECK_LOG)
			fc_policy_check(&ev->pkt, slots[i], i, FC_CHECK_LOG_PASS);
	}
	return false;
}

/*
 * The fast path of a packet that meets one policy only, whose bucket the
 * caller has in hand: nothing to roll back, nothing to keep. Used for a
 * source that only ip=* applies to (its bucket says no exact or prefix entry
 * matched it under the current rules: one lookup instead of three) and for
 * an address whose exact policy is all there is.
 */
static __always_inline bool fc_single_deny(struct fc_eval *ev, __u64 *state, __u32 slot, __u32 idx)
{
	struct fc_policy *pol = bpf_map_lookup_elem(&fc_policies, &slot);
	struct fc_charge mine;
	__u64 cost;
	int ok;

	if (!pol || !pol->ntiers)
		return false;
	if (pol->action == FC_ACTION_LOG) {
		fc_policy_check(&ev->pkt, slot, idx, FC_CHECK_LOG_PASS);
		return false;
	}
	cost = fc_policy_cost(pol, &ev->pkt);
	if (!cost)
		return false;
	ok = fc_limit_try(pol->algo, pol->ntiers, pol->tier, state, fc_clock(ev->cfg, pol->flags & FC_POLICY_PRECISE),
			  cost, &mine);
	fc_policy_count(slot, ev->pkt.len, ok);
	return !ok;
}

/* len: the packet's whole length (at TC, beyond what is linear in data). */
static __always_inline bool fc_decide(void *data, void *data_end, __u32 len)
{
	struct fc_cursor c = { .pos = data, .end = data_end };
	struct fc_eval ev = { .pkt.len = len };
	struct fc_src_bucket *src = NULL;
	struct fc_rule *exact, *prefix;
	struct fc_bucket *bucket;
	enum fc_parse_rc rc;
	__u32 star;
	__u32 zero = 0;

	ev.st = bpf_map_lookup_elem(&fc_stats, &zero);
	ev.cfg = bpf_map_lookup_elem(&fc_config, &zero);
	if (!ev.st || !ev.cfg)
		return false;

	rc = fc_parse_src(&c, &ev.pkt);
	if (rc == FC_PARSE_NOT_IP) {
		fc_count(&ev.st->non_ip, ev.pkt.len);
		return false;
	}
	if (rc == FC_PARSE_MALFORMED) {
		fc_count(&ev.st->malformed, ev.pkt.len); /* no source: nothing to decide on */
		return false;
	}
	/* Only a policy's cost depends on what follows, never a ban. */
	fc_parse_rest(&c, &ev.pkt);
	/* An ip=* policy counting SYNs is skipped without a call for the rest. */
	star = ev.cfg->star_slot;
	if (ev.cfg->star_syn && !fc_is_syn(&ev.pkt))
		star = 0;
	if (star) {
		src = fc_src_lookup(&ev.pkt);
		if (src && src->gen == ev.cfg->star_gen && src->rules_gen == ev.cfg->rules_gen) {
			if (fc_single_deny(&ev, src->state, star, FC_HIT_STAR))
				goto limited;
			goto passed;
		}
	}
	exact = fc_exact_lookup(&ev);
	if (fc_banned(exact, &ev)) {
		fc_count_ban(&ev.st->drop_exact, exact, ev.pkt.len);
		return true;
	}
	prefix = fc_prefix_lookup(&ev);
	if (fc_banned(prefix, &ev)) {
		fc_count_ban(&ev.st->drop_prefix, prefix, ev.pkt.len);
		return true;
	}
	if (src && !exact && !prefix && src->gen == ev.cfg->star_gen)
		src->rules_gen = ev.cfg->rules_gen; /* only ip=* applies here, until the rules change */
	if (exact && exact->policy && !(prefix && prefix->policy) && !star) {
		bucket = bpf_map_lookup_elem(&fc_buckets, &exact->policy);
		if (bucket && fc_single_deny(&ev, bucket->state, exact->policy, FC_HIT_EXACT))
			goto limited;
	} else if ((exact && exact->policy) || (prefix && prefix->policy) || star) {
		if (fc_policies_deny(&ev, exact ? exact->policy : 0, prefix ? prefix->policy : 0, star))
			goto limited;
	}
passed:
	fc_count(ev.pkt.flags & FC_PKT_MALFORMED ? &ev.st->malformed : &ev.st->passed, ev.pkt.len);
	return false;
limited:
	fc_count(&ev.st->drop_limit, ev.pkt.len);
	return true;
}

#endif /* FC_DECIDE_BPF_H */
