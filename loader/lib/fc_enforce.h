/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What a stored policy is on this node: its rates as this node's share of
 * them, compiled into the tiers the packet path and nginx charge by. The
 * one place that scales and compiles a policy, for every layer that
 * enforces it (the BPF maps, nginx's config block) and every reader that
 * must agree with them (stats, keys, top, the console).
 */
#ifndef FC_ENFORCE_H
#define FC_ENFORCE_H

#include <stdint.h>

#include "fc_error.h"
#include "fc_maps.h"
#include "fc_shm.h"
#include "fc_store.h"

/* This node, as far as what it enforces depends on it: read once per
 * publish or read, then handed to every policy (a fleet's node set, for
 * shares that add up to N, belongs here). */
struct fc_fleet_view;

struct fc_node_ctx {
	double weight;    /* its share of each policy's rate, (0, 1]: R is enforced as R * weight */
	int ncpus;        /* possible CPUs: an ip=* policy's new-source cap is shared among them */
	uint64_t tick_ns; /* the packet path's coarse clock's tick */
	/* The fleet's node set and key (fc_fleet_split.h), read by a publish:
	 * fleet policies' shares; NULL for a reader (then a fleet policy's
	 * splits are of no node set: no share). */
	const struct fc_fleet_view *fleet;
};

/* A policy as this node enforces it: what the BPF maps and nginx's item hold
 * (and what else a layer takes of one: an ip=* bucket's prefix length). */
struct fc_enforced {
	/* its tiers, flags and warm-up, as the kernel's policy slot holds
	 * them, and the limits a bucket is rescaled from (k.lim.gens,
	 * k.lim.rescale: fc_limit.h) */
	struct fc_policy k;
	uint32_t concurrency;   /* nginx: requests in flight at most (per key for a per-key policy); 0: no cap */
	bool show_keys;         /* nginx, per-key: its busiest keys' values kept (FC_SHM_POLICY_SHOW_KEYS) */
	uint32_t queue;         /* nginx: a delaying policy's queue, its --delay-burst; 0: none */
	struct fc_tier new_src; /* ip=*: new sources a second, per CPU (zero for other policies) */
	/* ip=*, at either layer: the prefix lengths of its buckets (its unit);
	 * 0 for other policies. */
	uint8_t star_len4, star_len6;
	/* --fleet: the item's tail for nginx (this node's splits, its number,
	 * the fixed key's point), from the node's fleet view. k then has
	 * FC_POLICY_FLEET, algo FC_ALGO_FLEET_*, its tier the fleet's N per
	 * unit (an XDP/TC gcra policy's: this node's T_i and tau_i) and, for a
	 * fixed key, the shares of fleet_share/fleet_from. */
	bool fleet;
	struct fc_shm_fleet fleet_tail;
};

/* Row's policy on node: each N (and an explicit burst) and the concurrency
 * cap times the weight, at least 1 per period; then compiled. pub: what a
 * layer has published for the policy's slot (zero: nothing), whose
 * generation a change of a tier's interval or room moves on and anything
 * else keeps; NULL for a reader, who reads every word as it is. */
void fc_policy_enforced(const struct fc_policy_row *row, const struct fc_node_ctx *node,
			const struct fc_enforced *pub, struct fc_enforced *e);

/* This machine as a node of the given weight. */
struct fc_node_ctx fc_node_here(double weight);
/* This machine as node name of the store (weight 1 when it has no row). */
int fc_node_read(struct fc_store *st, const char *name, struct fc_node_ctx *node, struct fc_err *err);

#endif /* FC_ENFORCE_H */
