/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The verdict shared by the XDP and the TC program: parse; look the source up
 * once in the exact hash and once in its family's trie, each answering both
 * "banned?" and "which policy?"; then charge the policies of the exact
 * address, of the longest prefix and ip=*, all or none. Returns whether to
 * drop; the entry point maps that to its own return codes.
 */
#ifndef FC_DECIDE_BPF_H
#define FC_DECIDE_BPF_H

#include "fc_parse.bpf.h"
#include "fc_state.bpf.h"

#define FC_TCP_SYN 0x02
#define FC_TCP_ACK 0x10

/* Per-packet context. The clock is read at most once, and only when a TTL or
 * a policy needs it. */
struct fc_eval {
	struct fc_pkt pkt;
	const struct fc_config *cfg;
	struct fc_stats *st;
	__u64 len;
	__u64 now; /* UTC ns, 0 until read */
};

/* The three policies a packet can meet: exact address, prefix, ip=*. */
#define FC_HITS 3

struct fc_hit {
	struct fc_policy *pol;
	__u64 *state;
	__u32 slot;
	__u64 cost;
	struct fc_charge ch;
};

static __always_inline __u64 fc_now(struct fc_eval *ev)
{
	if (!ev->now)
		ev->now = bpf_ktime_get_tai_ns() - ev->cfg->tai_offset_ns;
	return ev->now;
}

static __always_inline bool fc_banned(const struct fc_rule *r, struct fc_eval *ev)
{
	if (!r || !(r->flags & FC_RULE_BANNED))
		return false;
	return !r->ban_expires_ns || fc_now(ev) < r->ban_expires_ns;
}

static __always_inline struct fc_rule *fc_prefix_lookup(struct fc_eval *ev)
{
	struct fc_pfx4_key k4;
	struct fc_pfx6_key k6;

	if (ev->pkt.family == 4) {
		if (!ev->cfg->n_pfx4)
			return NULL;
		k4.prefixlen = 32;
		__builtin_memcpy(k4.a, &ev->pkt.saddr.a[12], 4);
		return bpf_map_lookup_elem(&fc_ban_pfx4, &k4);
	}
	if (!ev->cfg->n_pfx6)
		return NULL;
	k6.prefixlen = 128;
	__builtin_memcpy(k6.a, ev->pkt.saddr.a, 16);
	return bpf_map_lookup_elem(&fc_ban_pfx6, &k6);
}

static __always_inline void fc_count(struct fc_counter *c, __u64 bytes)
{
	c->packets++;
	c->bytes += bytes;
}

/*
 * The state of this source's ip=* bucket. New buckets are capped per CPU
 * (fc_config.new_src): past the cap, or when the LRU cannot give an entry, the
 * source shares the policy's overflow bucket (fc_buckets[slot]), so a flood
 * of spoofed sources neither evicts steady sources wholesale nor escapes the
 * limit.
 */
static __always_inline __u64 *fc_src_state(struct fc_eval *ev, __u32 slot)
{
	struct fc_src_bucket *b, fresh = { .gen = ev->cfg->star_gen };
	struct fc_bucket *overflow;
	struct fc_flood *fl;
	__u64 prev;
	__u32 zero = 0;

	b = bpf_map_lookup_elem(&fc_src_buckets, &ev->pkt.saddr);
	if (b && b->gen == ev->cfg->star_gen)
		return b->state;
	fl = bpf_map_lookup_elem(&fc_flood, &zero);
	if (fl && (!ev->cfg->new_src.interval_ns ||
		   fc_gcra_try(&fl->state, &ev->cfg->new_src, fc_now(ev), 1, &prev))) {
		/* NOEXIST: of two CPUs making the same bucket, one wins, none resets it. */
		bpf_map_update_elem(&fc_src_buckets, &ev->pkt.saddr, &fresh, b ? BPF_EXIST : BPF_NOEXIST);
		b = bpf_map_lookup_elem(&fc_src_buckets, &ev->pkt.saddr);
		if (b && b->gen == ev->cfg->star_gen)
			return b->state;
	}
	fc_count(&ev->st->src_overflow, ev->len);
	overflow = bpf_map_lookup_elem(&fc_buckets, &slot);
	return overflow ? overflow->state : NULL;
}

/* Fills hit for the policy in slot, or leaves hit->pol NULL when the policy
 * does not apply to this packet (no policy, or a syn policy and no SYN). */
static __always_inline void fc_hit_prepare(struct fc_eval *ev, struct fc_hit *hit, __u32 slot, bool star)
{
	struct fc_bucket *bucket;
	struct fc_policy *pol;

	hit->pol = NULL;
	if (!slot)
		return;
	pol = bpf_map_lookup_elem(&fc_policies, &slot);
	if (!pol || !pol->ntiers)
		return;
	if (pol->count == FC_COUNT_SYN &&
	    (ev->pkt.l4proto != IPPROTO_TCP || (ev->pkt.tcp_flags & (FC_TCP_SYN | FC_TCP_ACK)) != FC_TCP_SYN))
		return;
	if (star) {
		hit->state = fc_src_state(ev, slot);
	} else {
		bucket = bpf_map_lookup_elem(&fc_buckets, &slot);
		hit->state = bucket ? bucket->state : NULL;
	}
	if (!hit->state)
		return;
	hit->pol = pol;
	hit->slot = slot;
	hit->cost = pol->count == FC_COUNT_BYTES ? ev->len : 1;
}

static __always_inline bool fc_hit_try(struct fc_eval *ev, struct fc_hit *hit)
{
	struct fc_policy *p = hit->pol;

	return fc_limit_try(p->algo, p->ntiers, p->tier, hit->state, fc_now(ev), hit->cost, &hit->ch);
}

static __always_inline void fc_hit_count(struct fc_eval *ev, struct fc_hit *hit, bool passed)
{
	struct fc_pstats *ps = bpf_map_lookup_elem(&fc_pstats, &hit->slot);

	if (ps)
		fc_count(passed ? &ps->passed : &ps->dropped, ev->len);
}

/*
 * Drop policies are one conjunction: the packet passes only if every one
 * admits it, and a denial rolls back the charges already made. Log policies
 * are then charged on their own, as if enforcing, and never drop.
 */
static __always_inline bool fc_policies_deny(struct fc_eval *ev, __u32 exact_slot, __u32 prefix_slot)
{
	struct fc_hit hits[FC_HITS];
	int i, j;

	if (!exact_slot && !prefix_slot && !ev->cfg->star_slot)
		return false;
	fc_hit_prepare(ev, &hits[0], exact_slot, false);
	fc_hit_prepare(ev, &hits[1], prefix_slot, false);
	fc_hit_prepare(ev, &hits[2], ev->cfg->star_slot, true);

#pragma unroll
	for (i = 0; i < FC_HITS; i++) {
		if (!hits[i].pol || hits[i].pol->action != FC_ACTION_DROP)
			continue;
		if (fc_hit_try(ev, &hits[i]))
			continue;
#pragma unroll
		for (j = 0; j < FC_HITS; j++) {
			if (j < i && hits[j].pol && hits[j].pol->action == FC_ACTION_DROP)
				fc_limit_refund(hits[j].pol->algo, hits[j].pol->ntiers, hits[j].pol->tier,
						hits[j].state, fc_now(ev), hits[j].cost, &hits[j].ch);
		}
		fc_hit_count(ev, &hits[i], false);
		return true;
	}
#pragma unroll
	for (i = 0; i < FC_HITS; i++) {
		if (!hits[i].pol)
			continue;
		fc_hit_count(ev, &hits[i], hits[i].pol->action == FC_ACTION_DROP || fc_hit_try(ev, &hits[i]));
	}
	return false;
}

static __always_inline bool fc_decide(void *data, void *data_end)
{
	struct fc_eval ev = { .len = data_end - data };
	struct fc_rule *exact = NULL, *prefix;
	enum fc_parse_rc rc;
	__u32 zero = 0;

	ev.st = bpf_map_lookup_elem(&fc_stats, &zero);
	ev.cfg = bpf_map_lookup_elem(&fc_config, &zero);
	if (!ev.st || !ev.cfg)
		return false;

	rc = fc_parse(data, data_end, &ev.pkt);
	if (rc == FC_PARSE_NOT_IP) {
		fc_count(&ev.st->non_ip, ev.len);
		return false;
	}
	if (rc == FC_PARSE_MALFORMED) {
		fc_count(&ev.st->malformed, ev.len);
		return false;
	}
	if (ev.cfg->n_exact)
		exact = bpf_map_lookup_elem(&fc_ban_exact, &ev.pkt.saddr);
	if (fc_banned(exact, &ev)) {
		fc_count(&ev.st->drop_exact, ev.len);
		return true;
	}
	prefix = fc_prefix_lookup(&ev);
	if (fc_banned(prefix, &ev)) {
		fc_count(&ev.st->drop_prefix, ev.len);
		return true;
	}
	if (fc_policies_deny(&ev, exact ? exact->policy : 0, prefix ? prefix->policy : 0)) {
		fc_count(&ev.st->drop_limit, ev.len);
		return true;
	}
	fc_count(&ev.st->passed, ev.len);
	return false;
}

#endif /* FC_DECIDE_BPF_H */
