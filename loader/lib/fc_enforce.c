// SPDX-License-Identifier: BSD-2-Clause
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

void fc_policy_enforced(const struct fc_policy_row *row, const struct fc_node_ctx *node, struct fc_enforced *e)
{
	const struct fc_policy_spec *p = &row->spec;
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
		fc_tier_compile(p, i, fc_share(p->rate[i].n, node->weight), fc_share(fc_tier_burst(p, i), node->weight),
				&k->tier[i]);
		if (p->algo == FC_ALGO_GCRA && k->tier[i].tolerance_ns < FC_PRECISE_TICKS * node->tick_ns)
			k->flags |= FC_POLICY_PRECISE;
	}
	e->concurrency = p->concurrency ? (uint32_t)fc_share(p->concurrency, node->weight) : 0;
	if (p->kind == FC_MATCH_STAR) {
		e->star_len4 = fc_star_len4(p);
		e->star_len6 = fc_star_len6(p);
	}
	/* Only where asked for: a key may be a secret (an API key in a header
	 * or an argument) or personal (a user id, an address), whatever its
	 * dimension, so not saying keeps none. */
	e->show_keys = p->show_keys > 0 && fc_policy_is_keyed(p);
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
