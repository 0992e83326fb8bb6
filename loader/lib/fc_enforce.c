// SPDX-License-Identifier: BSD-2-Clause
#include <stdbool.h>
#include <string.h>
#include <bpf/libbpf.h>

#include "fc_clock.h"
#include "fc_enforce.h"
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
