/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The longest prefix covering a source, on the prefix maps laid out in
 * maps/fc_maps.h: for IPv4 one array access (shared with the exact lookup),
 * then a hash lookup only where a prefix longer than /16 covers the source's
 * /24 or lies inside it; for
 * IPv6 a binary search on the lengths in use, its root (/32) in a map of
 * its own. The rule found carries what
 * every prefix covering it says, and is copied out.
 */
#ifndef FC_PREFIX_BPF_H
#define FC_PREFIX_BPF_H

#include <bpf/bpf_endian.h>

#include "fc_parse.bpf.h"
#include "fc_state.bpf.h"

/*
 * Ends the IPv4 or the IPv6 branch of a map lookup with an instruction of its
 * own. clang would otherwise merge the two branches' lookups into one call on
 * either map, and the verifier inlines a map lookup only where the call
 * always sees the same map: merged, every lookup became an indirect call,
 * 7 ns dearer here. The two no-op moves differ so they can not be merged.
 */
#define FC_KEEP_CALL4(p) asm volatile("%0 = %0" : "+r"(p))
#define FC_KEEP_CALL6(p) asm volatile("%0 = %0\n%0 = %0" : "+r"(p))

/* The fc_pfx4 entry of the IPv4 address a (host order) cut to len bits. */
static __always_inline struct fc_rule *fc_pfx4_probe(__u32 a, __u32 len)
{
	struct fc_pfx4_key k = { .prefixlen = len };

	*(__u32 *)k.a = bpf_htonl(a & (~0U << (32 - len)));
	return bpf_map_lookup_elem(&fc_pfx4, &k);
}

/* The IPv4 source's fc_top4 entry, read once for the exact and the prefix
 * lookup: NULL while no /16 has one (fc_config.n_top4). *a is the source
 * (host order), *in24 what the entry says of its /24 (0 without one). */
static __always_inline const struct fc_top4 *fc_top4_read(const struct fc_pkt *pkt, const struct fc_config *cfg,
							 __u32 *a, __u32 *in24)
{
	const struct fc_top4 *top;
	__u32 idx;

	__builtin_memcpy(a, pkt->saddr.a, 4);
	*a = bpf_ntohl(*a);
	*in24 = 0;
	if (!cfg->n_top4)
		return NULL;
	idx = *a >> FC_TOP4_SHIFT;
	top = bpf_map_lookup_elem(&fc_top4, &idx);
	FC_KEEP_CALL4(top);
	if (top)
		*in24 = top->in24[(*a >> 8) & 0xff];
	return top;
}

/* What the longest prefix covering the IPv4 source a says, into *out, from
 * its fc_top4 entry top and that entry's in24 byte of its /24: the prefixes
 * of /25 to /31 inside its /24 longest first, then the one of /17 to /24
 * covering the /24, then the /16's own. */
static __always_inline void fc_prefix4_lookup(const struct fc_top4 *top, __u32 a, __u32 in24, struct fc_rule *out)
{
	const struct fc_rule *r = NULL;
	int l;

	if (in24 & FC_IN24_LONGER) {
#pragma unroll
		for (l = 31; l >= 25; l--)
			if ((top->longer & (1U << (l - 25))) && (r = fc_pfx4_probe(a, l)))
				break;
	}
	if (!r && (in24 & FC_IN24_LEN))
		r = fc_pfx4_probe(a, 16 + (in24 & FC_IN24_LEN));
	*out = r ? *r : top->rule;
}

/* Sets of prefix lengths are two words, bit L of word L / 64. The lengths
 * up to m (0 to 127), word by word: */
static __always_inline __u64 fc_upto0(__u32 m)
{
	return m < 64 ? (2ULL << m) - 1 : ~0ULL;
}

static __always_inline __u64 fc_upto1(__u32 m)
{
	return m < 64 ? 0 : (2ULL << (m - 64)) - 1;
}

/* The fc_pfx6 entry of the address a0:a1 (host order) cut to len bits. */
static __always_inline struct fc_rule *fc_pfx6_probe(__u64 a0, __u64 a1, __u32 len)
{
	struct fc_pfx6_key k = { .prefixlen = len };
	__u64 w;

	w = bpf_cpu_to_be64(len < 64 ? a0 & (~0ULL << (64 - len)) : a0);
	__builtin_memcpy(k.a, &w, 8);
	w = bpf_cpu_to_be64(len <= 64 ? 0 : a1 & (~0ULL << (128 - len)));
	__builtin_memcpy(k.a + 8, &w, 8);
	return bpf_map_lookup_elem(&fc_pfx6, &k);
}

/* Whether the prefix fc_top6's entry carries (in, of length len, 33 to
 * 127) covers the address a0:a1 (host order), whose /32 is the entry's. */
static __always_inline bool fc_top6_in_covers(const struct fc_top6_in *in, __u64 a0, __u64 a1, __u32 len)
{
	__u64 m0 = len < 64 ? ~0ULL << (64 - len) : ~0ULL, w1;
	__u32 w0;

	/* Bytes 8 to 15 of the address are 8-aligned in the entry: one load. */
	__builtin_memcpy(&w0, in->a, 4);
	__builtin_memcpy(&w1, __builtin_assume_aligned(in->a + 4, 8), 8);
	return bpf_ntohl(w0) == (__u32)(a0 & m0) &&
	       bpf_be64_to_cpu(w1) == (len <= 64 ? 0 : a1 & (~0ULL << (128 - len)));
}

/*
 * The binary search on the lengths lens0:lens1 in use (the tree of
 * maps/fc_maps.h, fc_pfx6_mid, from its root), leaving in *best the rule of the last hit
 * (which covers what came before it). A node under which no length is in
 * use at or beyond it sends the search shorter, one where none is at or
 * before it longer, both without a lookup; otherwise a hit goes longer (or
 * ends, when nothing longer lies inside it; or looks up the one length of
 * what does, FC_RULE_NEXT, and ends) and a miss shorter.
 *
 * Global functions, this and fc_pfx6_search: the verifier checks each
 * once, while inlined it would walk the tree again for each of the many
 * states the parser leaves (the tree's nodes are known constants on each
 * path), or here for each way fc_pfx6_search comes to it.
 */
__noinline int fc_pfx6_walk(struct fc_rule *best, __u64 lens0, __u64 lens1, __u64 a0, __u64 a1)
{
	__u32 lo = FC_PFX6_MIN, hi = FC_PFX6_MAX, mid, next;
	struct fc_rule *r;
	__u64 ge, le;
	int i;

	for (i = 0; best && i < FC_PFX6_LEVELS; i++) {
		if (!(lens0 | lens1))
			break;
		mid = fc_pfx6_mid(lo, hi);
		ge = mid < 64 ? lens0 >> mid | lens1 : lens1 >> (mid - 64);
		le = (lens0 & fc_upto0(mid)) | (lens1 & fc_upto1(mid));
		if (!ge) {
			hi = mid - 1;
			continue;
		}
		if (!le) {
			lo = mid + 1;
			continue;
		}
		r = fc_pfx6_probe(a0, a1, mid);
		if (r) {
			*best = *r;
			if (!(r->flags & FC_RULE_LONGER))
				break;
			/* Every prefix inside it of one length: that one, and done. */
			next = FC_RULE_NEXT(r->flags);
			if (next) {
				r = fc_pfx6_probe(a0, a1, next);
				if (r)
					*best = *r;
				break;
			}
			lo = mid + 1;
			lens0 &= ~fc_upto0(mid);
			lens1 &= ~fc_upto1(mid);
		} else {
			hi = mid - 1;
			lens0 &= fc_upto0(mid - 1);
			lens1 &= fc_upto1(mid - 1);
		}
	}
	return 0;
}

/*
 * The search, with its root from fc_top6 (a 4-byte key, hashed in a fifth
 * of the time of fc_pfx6's): with a length of /32 or longer in use, where
 * every prefix longer than /32 leaves its /32 an entry, that is looked up
 * first. A miss leaves the lengths shorter than /32, none where none is in
 * use: one lookup for a source no prefix covers. A hit that says the one
 * length inside it (FC_RULE_NEXT) ends there: with the one prefix inside
 * it in hand (struct fc_top6), whether that covers the source, else with
 * a look at that length in fc_pfx6. One that goes on
 * leaves the longer lengths to the walk. Maps another version published
 * (fc_config.pfx6_tree) keep no fc_top6: the walk looks the root up in
 * fc_pfx6. It reads the config itself, so that the caller (verified
 * once per parser state) does not branch on the tree.
 */
__noinline int fc_pfx6_search(struct fc_rule *best, __u64 a0, __u64 a1)
{
	const struct fc_config *cfg;
	const struct fc_top6 *t;
	const struct fc_rule *r;
	struct fc_top6_key k;
	__u64 lens0, lens1;
	__u32 next, top, zero = 0;

	cfg = bpf_map_lookup_elem(&fc_config, &zero);
	if (!best || !cfg)
		goto out;
	lens0 = cfg->lens6[0] & ~1ULL; /* ::/0 is the caller's */
	lens1 = cfg->lens6[1];
	if (cfg->pfx6_tree == FC_PFX6_TREE && ((lens0 >> FC_PFX6_ROOT) | lens1)) {
		top = bpf_htonl((__u32)(a0 >> 32));
		__builtin_memcpy(k.a, &top, sizeof(k.a));
		t = bpf_map_lookup_elem(&fc_top6, &k);
		if (!t) {
			lens0 &= fc_upto0(FC_PFX6_ROOT - 1);
			lens1 = 0;
		} else {
			*best = t->rule;
			next = FC_RULE_NEXT(t->rule.flags);
			if (!(t->rule.flags & FC_RULE_LONGER))
				goto out;
			if (next && t->in.len == next) {
				if (fc_top6_in_covers(&t->in, a0, a1, next))
					*best = t->in.rule;
				goto out;
			}
			if (next) {
				r = fc_pfx6_probe(a0, a1, next);
				if (r)
					*best = *r;
				goto out;
			}
			lens0 &= ~fc_upto0(FC_PFX6_ROOT);
		}
	}
	/* Nothing left to walk (no prefix shorter than /32 in use, for a
	 * source no /32 holds): no call. */
	if (lens0 | lens1)
		fc_pfx6_walk(best, lens0, lens1, a0, a1);
out:
	return 0;
}

/* The same for an IPv6 source. ::/0 (a policy over every IPv6 source) is
 * outside the tree: looked up first, and only where it is in use
 * (fc_config.lens6). */
static __always_inline void fc_prefix6_lookup(const struct fc_pkt *pkt, const struct fc_config *cfg,
					      struct fc_rule *out)
{
	struct fc_pfx6_key all = { 0 };
	struct fc_rule *r = NULL;
	__u64 a0, a1;

	if (cfg->lens6[0] & 1) {
		r = bpf_map_lookup_elem(&fc_pfx6, &all);
		FC_KEEP_CALL6(r);
		if (r)
			*out = *r;
	}
	__builtin_memcpy(&a0, pkt->saddr.a, 8);
	__builtin_memcpy(&a1, pkt->saddr.a + 8, 8);
	fc_pfx6_search(out, bpf_be64_to_cpu(a0), bpf_be64_to_cpu(a1));
}

#endif /* FC_PREFIX_BPF_H */
