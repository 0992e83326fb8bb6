// SPDX-License-Identifier: BSD-2-Clause
#include <stdbool.h>
#include <string.h>
#include <bpf/libbpf.h>

#include "fc_clock.h"
#include "fc_enforce.h"
#include "fc_fleet_split.h"
#include "fc_policy.h"

/* A GCRA bucket whose tolerance is under this many ticks of the packet
 * path's coarse clock reads the precise clock. */
#define FC_PRECISE_TICKS 10
/* The tick where it can not be read: HZ=100, the coarsest. */
#define FC_TICK_COARSEST 10000000ULL

/* ceil(a/c) without overflow. */
static uint64_t fc_div_ceil(uint64_t a, uint64_t c)
{
	return (uint64_t)(((unsigned __int128)a + c - 1) / c);
}

/* A node's share of n: n times its weight, at least 1. */
static uint64_t fc_share(uint64_t n, double weight)
{
	double v = (double)n * weight;

	if (weight >= 1)
		return n;
	return v < 1 ? 1 : (uint64_t)v;
}

/* Tier i of p, of limit n and burst b (the node's shares), into t. */
static void fc_tier_compile(const struct fc_policy_spec *p, int i, uint64_t n, uint64_t b, struct fc_tier *t)
{
	t->unit_ns = p->rate[i].unit_secs * FC_NS_PER_SEC;
	t->limit = n;
	/* Rounded up: never faster than asked. */
	t->interval_ns = fc_div_ceil(t->unit_ns, n);
	/* B*T in the same units: B costs of one each. */
	t->tolerance_ns = (uint64_t)((unsigned __int128)b * t->unit_ns / n);
	if (p->count != FC_COUNT_BYTES)
		t->tolerance_ns = b * t->interval_ns;
	/* Past 36 years of credit (a policy validated may hold up to 2^62
	 * ns): as good as endless, and a TAT must keep its word's top bits. */
	if (t->tolerance_ns > FC_ROOM_MAX)
		t->tolerance_ns = FC_ROOM_MAX;
}

/* ip=*'s new buckets a second, shared among the CPUs (each CPU caps its own). */
static void fc_new_src_tier(const struct fc_policy_spec *p, int ncpus, struct fc_tier *t)
{
	uint64_t per_cpu =
		(p->new_sources ? p->new_sources : FC_NEW_SOURCES_DEFAULT) / (uint64_t)(ncpus > 0 ? ncpus : 1);

	if (!per_cpu)
		per_cpu = 1;
	t->unit_ns = FC_NS_PER_SEC;
	t->limit = per_cpu;
	t->interval_ns = fc_div_ceil(FC_NS_PER_SEC, per_cpu);
	t->tolerance_ns = per_cpu * t->interval_ns; /* a second's worth at once */
}

/* Whether the words of a tier mean the same under from's limits as under
 * to's: the same interval (a lead is that many requests) and the same room
 * (the tolerance, and a delaying policy's queue: a lead past it reads as
 * the clock stepped back, fc_gcra_base). */
static bool fc_tier_same(const struct fc_tier *from, uint32_t qfrom, const struct fc_tier *to, uint32_t qto)
{
	return fc_interval_same(from, to) && fc_gcra_room(from, qfrom) == fc_gcra_room(to, qto);
}

/*
 * A GCRA policy's generation, and how a bucket charged under the one before
 * is rescaled (fc_limit.h), from what is published (pub: the same policy and
 * epoch, or else its buckets are new; NULL: a reader's, who reads every word
 * as it is). Kept while no tier's interval or room changes, so a publish
 * that changes nothing else (a ban, another policy, a full sync) keeps what
 * buckets not charged since the change need; moved on, with each tier's
 * rescale from the published interval (the same word where it stayed), when
 * one does, so two changes published in a row leave a bucket charged under
 * neither older than the kept generation (full: fc_gcra_regen). A tier added
 * (or back) starts empty; one removed is forgotten. A new policy's first
 * generation reads any other as full: only a copy of a later publish, in
 * its instant, can have written one.
 */
static void fc_generations(const struct fc_enforced *pub, struct fc_enforced *e)
{
	const struct fc_policy *p = pub ? &pub->k : NULL;
	struct fc_policy *k = &e->k;
	struct fc_limits *l = &k->lim;
	uint8_t n = p && p->ntiers < FC_MAX_TIERS ? p->ntiers : FC_MAX_TIERS;
	bool moved = false;
	int i;

	if (k->algo != FC_ALGO_GCRA)
		return;
	l->gen = FC_GEN_GCRA;
	if (!p)
		return;
	if (p->id != k->id || p->epoch != k->epoch || p->algo != FC_ALGO_GCRA) {
		for (i = 0; i < FC_MAX_TIERS; i++)
			l->rescale[i] = FC_RESCALE(FC_RESCALE_FULL, 0, 0);
		return;
	}
	for (i = 0; i < k->ntiers; i++)
		moved |= i >= n || !fc_tier_same(&p->tier[i], pub->queue, &k->tier[i], e->queue);
	if (!moved) {
		l->gen = (uint8_t)(FC_GEN(&p->lim) | FC_GEN_GCRA);
		memcpy(l->rescale, p->lim.rescale, sizeof(l->rescale));
		return;
	}
	l->gen = (uint8_t)(((FC_GEN(&p->lim) + 1) & 3) | FC_GEN_GCRA);
	for (i = 0; i < k->ntiers; i++)
		l->rescale[i] = i >= n ? FC_RESCALE(FC_RESCALE_FRESH, 0, 0) :
				fc_interval_same(&p->tier[i], &k->tier[i]) ? FC_RESCALE_SAME :
									     fc_rescale_of(&p->tier[i], &k->tier[i]);
}

/* N changed in the window now (a rate edit keeps the epoch): that window
 * keeps the split it began with (freqctl-policy(7), "Bounds"), as its
 * shares are out and Redis's record of it holds them (n, digest); the new
 * split applies from the next window. The agent keeps its own the same way
 * (fc_fleet_engine.c). pub is the last publish of the policy; its window
 * w0 is kept when N changed now, or when pub was kept for this window (its
 * split[1] starts at w0 + 1 and, for the same node, its share of w0 is not
 * the new one's: a node set corrected mid-window would look the same, and
 * keeps its old split to the window's end, as a node whose store is behind
 * does). Window and sliding only: gcra's split is a bucket, not a window's.
 * Here: whether pub is of this policy's window kind at all, and w0. Another
 * unit is another epoch (fc_store_policy_put), but a row edited before that
 * rule kept it: pub's split, of other windows, is never this one's. */
static bool fc_fleet_kept(const struct fc_policy_row *row, const struct fc_node_ctx *node,
			  const struct fc_enforced *pub, const struct fc_enforced *e, uint64_t *w0)
{
	const struct fc_policy_spec *p = &row->spec;

	if (!pub || pub->k.id != p->id || pub->k.epoch != row->epoch || !(pub->k.flags & FC_POLICY_FLEET) ||
	    pub->k.algo != e->k.algo || (p->algo != FC_ALGO_WINDOW && p->algo != FC_ALGO_SLIDING) ||
	    pub->k.tier[0].unit_ns != e->k.tier[0].unit_ns || node->fleet->now_ms <= 0 || !p->rate[0].unit_secs)
		return false;
	*w0 = (uint64_t)node->fleet->now_ms / (p->rate[0].unit_secs * 1000);
	return true;
}

/* Whether the rate (N) differs from the last publish's: the tier is what
 * the policy's N compiles to. */
static bool fc_fleet_rate_moved(const struct fc_enforced *pub, const struct fc_enforced *e)
{
	return memcmp(&pub->k.tier[0], &e->k.tier[0], sizeof(e->k.tier[0])) != 0;
}

static bool fc_split_same(const struct fc_fleet_split *a, const struct fc_fleet_split *b)
{
	return a->base == b->base && a->seg_lo == b->seg_lo && a->seg_hi == b->seg_hi;
}

/* nginx's item: pub's split of w0 kept (see fc_fleet_kept). */
static void fc_fleet_keep_split(const struct fc_policy_row *row, const struct fc_node_ctx *node,
				const struct fc_enforced *pub, struct fc_enforced *e)
{
	struct fc_shm_fleet *t = &e->fleet_tail;
	const struct fc_fleet_split *old;
	struct fc_fleet_split next;
	uint64_t w0;

	if (!pub->fleet || !fc_fleet_kept(row, node, pub, e, &w0))
		return;
	old = fc_fleet_split_of(pub->fleet_tail.split, w0);
	if (!fc_fleet_rate_moved(pub, e) && !(pub->fleet_tail.split[1].from == w0 + 1 &&
					      pub->fleet_tail.node_no == node->fleet->node_no &&
					      !fc_split_same(old, fc_fleet_split_of(t->split, w0))))
		return;
	next = *fc_fleet_split_of(t->split, w0 + 1);
	t->split[0] = *old;
	t->split[1] = next;
	t->split[1].from = w0 + 1;
}

/* XDP/TC's slot: only the fixed key's shares are published, and kept. */
static void fc_fleet_keep_share(const struct fc_policy_row *row, const struct fc_node_ctx *node,
				const struct fc_enforced *pub, struct fc_enforced *e)
{
	struct fc_policy *k = &e->k;
	uint64_t w0, was, now, next;

	if (pub->fleet || !fc_fleet_kept(row, node, pub, e, &w0))
		return;
	was = pub->k.fleet_share[w0 >= pub->k.fleet_from];
	now = k->fleet_share[w0 >= k->fleet_from];
	if (!fc_fleet_rate_moved(pub, e) && !(pub->k.fleet_from == w0 + 1 && was != now))
		return;
	next = k->fleet_share[w0 + 1 >= k->fleet_from];
	k->fleet_share[0] = was;
	k->fleet_share[1] = next;
	k->fleet_from = w0 + 1;
}

/* A fleet policy's words are credit (maps/fc_fleet.h): its algorithm as
 * published, its splits for this node and, for a fixed key (one bucket, kid
 * 0), the shares the packet path and the slot take without the key's tag. */
static void fc_fleet_enforced(const struct fc_policy_row *row, const struct fc_node_ctx *node,
			      const struct fc_enforced *pub, struct fc_enforced *e)
{
	const struct fc_policy_spec *p = &row->spec;
	struct fc_shm_fleet *t = &e->fleet_tail;
	struct fc_policy *k = &e->k;
	const struct fc_fleet_split *sp = t->split;
	int64_t at[2];
	uint64_t b;

	e->fleet = true;
	k->algo = (__u8)fc_fleet_algo(p->algo);
	k->flags |= FC_POLICY_FLEET;
	t->split[1].from = FC_FLEET_NEVER;
	if (!node->fleet || !node->fleet->on || !p->ntiers)
		return; /* no node set known: no share */
	fc_fleet_policy_splits(node->fleet, p, t->split, at);
	if (pub)
		fc_fleet_keep_split(row, node, pub, e);
	t->node_no = node->fleet->node_no;
	t->lease_ns = p->algo == FC_ALGO_GCRA ? node->fleet->lease_ns : 0;
	if (fc_policy_is_keyed(p))
		return;
	t->fixed_u = fc_fleet_fixed_point(node->fleet->secret, p->id, row->epoch);
	k->fleet_share[0] = fc_fleet_share(&sp[0], t->fixed_u);
	k->fleet_share[1] = sp[1].from == FC_FLEET_NEVER ? k->fleet_share[0] : fc_fleet_share(&sp[1], t->fixed_u);
	k->fleet_from = sp[1].from;
	k->fleet_lease_ns = t->lease_ns;
	if (pub)
		fc_fleet_keep_share(row, node, pub, e);
	/* XDP/TC's gcra bucket is this node's: (T_i, tau_i = B_i T_i) of the
	 * split now; T_i 0 (too slow for the words) leaves it to leases. */
	if (p->algo != FC_ALGO_GCRA || fc_policy_is_l7(p))
		return;
	b = k->fleet_share[0];
	k->tier[0].interval_ns = sp[0].interval_ns;
	k->tier[0].limit = b;
	k->tier[0].tolerance_ns = b && sp[0].interval_ns <= FC_ROOM_MAX / b ? b * sp[0].interval_ns : 0;
}

void fc_policy_enforced(const struct fc_policy_row *row, const struct fc_node_ctx *node,
			const struct fc_enforced *pub, struct fc_enforced *e)
{
	const struct fc_policy_spec *p = &row->spec;
	/* A fleet policy's rate is the fleet's: never R x W. Its shares are
	 * the split of the window's node set (fc_fleet_split.h). */
	double weight = p->fleet ? 1 : node->weight;
	struct fc_policy *k = &e->k;
	int i;

	memset(e, 0, sizeof(*e));
	k->id = p->id;
	k->epoch = row->epoch;
	k->algo = (__u8)p->algo;
	k->action = (__u8)p->action;
	k->count = (__u8)p->count;
	k->ntiers = (__u8)p->ntiers;
	k->warmup_ms = (__u32)(p->warmup * 1000); /* validated: at most a day */
	if (p->override)
		k->flags |= FC_POLICY_OVERRIDE;
	for (i = 0; i < p->ntiers; i++) {
		fc_tier_compile(p, i, fc_share(p->rate[i].n, weight), fc_share(fc_tier_burst(p, i), weight), &k->tier[i]);
		if (p->algo == FC_ALGO_GCRA && k->tier[i].tolerance_ns < FC_PRECISE_TICKS * node->tick_ns)
			k->flags |= FC_POLICY_PRECISE;
	}
	e->concurrency = p->concurrency ? (uint32_t)fc_share(p->concurrency, weight) : 0;
	if (p->kind == FC_MATCH_STAR) {
		e->star_len4 = fc_star_len4(p);
		e->star_len6 = fc_star_len6(p);
	}
	/* Only where asked for: a key may be a secret (an API key in a header
	 * or an argument) or personal (a user id, an address), whatever its
	 * dimension, so not saying keeps none. */
	e->show_keys = p->show_keys > 0 && fc_policy_is_keyed(p);
	e->queue = p->action == FC_ACTION_DELAY ? p->delay_burst : 0;
	/* Before the generations: a fleet word carries none (maps/fc_fleet.h). */
	if (p->fleet)
		fc_fleet_enforced(row, node, pub, e);
	fc_generations(pub, e);
	if (p->kind == FC_MATCH_STAR && !fc_policy_is_l7(p))
		fc_new_src_tier(p, node->ncpus, &e->new_src);
}

struct fc_node_ctx fc_node_here(double weight)
{
	uint64_t tick = fc_clock_tick_ns();

	return (struct fc_node_ctx){ .weight = weight,
				     .ncpus = libbpf_num_possible_cpus(),
				     .tick_ns = tick ? tick : FC_TICK_COARSEST };
}

int fc_node_read(struct fc_store *st, const char *name, struct fc_node_ctx *node, struct fc_err *err)
{
	double weight;

	if (fc_store_node_weight(st, name, &weight, err) < 0)
		return -1;
	*node = fc_node_here(weight);
	return 0;
}
