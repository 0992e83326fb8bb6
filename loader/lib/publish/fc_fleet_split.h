/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A fleet policy's shares (--fleet, design section 2): each window's N (B
 * for gcra) split over the fleet's node set of that window, by weight, the
 * remainder dealt by systematic sampling at the key's point
 * (maps/fc_fleet.h, fc_fleet_share). Every node computes the same split
 * from the store's fleet_nodes, so none waits for another.
 *
 * One publish reads the store's node set and the fleet's key once (struct
 * fc_fleet_view); fc_policy_enforced() makes a fleet policy's two splits
 * from it (the current window's node set, and the next one that differs),
 * and the publish hands the agent what it leases with (struct
 * fc_fleet_cfg).
 */
#ifndef FC_FLEET_SPLIT_H
#define FC_FLEET_SPLIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fc_error.h"
#include "fc_fleet.h"
#include "fc_policy.h"
#include "fc_shm.h"
#include "fc_store.h"

/* A node of a window's node set: its number and integer weight. */
struct fc_fleet_member {
	uint32_t no;
	uint32_t weight; /* 1..FC_FLEET_WEIGHT_ONE */
};

/* The fleet as one publish reads it from the store. */
struct fc_fleet_view {
	bool on; /* the store holds a fleet policy: the rest is read */
	uint64_t secret[2];
	struct fc_fleet_node *rows; /* every fleet_nodes row, history too, by number */
	size_t nrows;
	uint32_t node_no; /* this node's number (0: it never was in the set) */
	int64_t now_ms;   /* when (unix ms, on the fleet's clock): the windows around it are split */
	uint64_t lease_ns; /* gcra: the lease window (FC_FLEET_LEASE_ROUNDS sync intervals) */
	int64_t clock_ns;  /* this node's clock offset for fleet policies (tests; in now_ms already) */
};

/* gcra's lease window: this many sync intervals. A grant reaches a node a
 * round after it asked and lapses at the lease window's end, so a window
 * of 2 rounds left most grants of a paced key unspent; 10 leaves most of it
 * to spend, and lent tokens still move an admission by less than one
 * window (freqctl-policy(7), Bounds). */
#define FC_FLEET_LEASE_ROUNDS 10
/* The fleet's lease window by default: of the 100 ms sync interval. */
#define FC_FLEET_LEASE_NS_DEFAULT (FC_FLEET_LEASE_ROUNDS * 100000000ULL)

/* Reads the view for node at now_ms: one query when the store has no fleet
 * policy (on false, nothing else read); else the node set and the fleet's
 * key (made if the store has none yet, fc_store_fleet_secret). */
int fc_fleet_read(struct fc_store *st, const char *node, int64_t now_ms, struct fc_fleet_view *v, struct fc_err *err);
void fc_fleet_view_free(struct fc_fleet_view *v);

/* The node set at at_ms (rows with since <= at_ms < until), by number,
 * into m (room for v->nrows); returns how many. */
size_t fc_fleet_set_at(const struct fc_fleet_view *v, int64_t at_ms, struct fc_fleet_member *m);

/* Node i's split of q over the n members of a set (i >= n: a node outside
 * it, share 0), for windows from `from` on; unit_ns and n_rate: gcra's rate
 * N per unit (the interval T_i; 0 for window and sliding). 128-bit
 * products: q W_j and F_j 2^32 do not fit 64 bits. */
void fc_fleet_split_make(const struct fc_fleet_member *m, size_t n, size_t i, uint64_t q, uint64_t from,
			 uint64_t unit_ns, uint64_t n_rate, struct fc_fleet_split *sp);
/* The q whose split for node i of the set is sp (base and segment), or
 * FC_FLEET_NEVER when no q, or more than one, gives it: a split kept by the
 * workers (N changed in its window) known to an agent started since, which
 * needs its q for every node's share (fc_fleet_engine.c). */
uint64_t fc_fleet_split_q(const struct fc_fleet_member *m, size_t n, size_t i, const struct fc_fleet_split *sp);
/* The set's digest (Redis's `set` field): SipHash under the fleet's key of
 * its (number, weight) list. */
uint64_t fc_fleet_set_digest(const uint64_t secret[2], const struct fc_fleet_member *m, size_t n);
/* A fixed-value fleet policy's point (its one key, kid 0): SipHash under the
 * fleet's key of id << 32 | epoch, low 32 bits. */
uint32_t fc_fleet_fixed_point(const uint64_t secret[2], uint32_t id, uint32_t epoch);

/* A policy's splits as this node publishes them: split[0] for the set of
 * the window now, split[1] for the first later window whose set differs
 * (from FC_FLEET_NEVER: none known); q is N (window, sliding) or B (gcra).
 * at[k]: the unix ms the set of split k is taken at (for fc_fleet_cfg). */
void fc_fleet_splits(const struct fc_fleet_view *v, uint64_t unit_ns, uint64_t q, uint64_t n_rate,
		     struct fc_fleet_split sp[2], int64_t at[2]);

/* The same for policy p (a fleet policy with its one rate). */
void fc_fleet_policy_splits(const struct fc_fleet_view *v, const struct fc_policy_spec *p, struct fc_fleet_split sp[2],
			    int64_t at[2]);

/* A fleet policy's algorithm as published: FC_ALGO_FLEET_*. */
static inline enum fc_algo fc_fleet_algo(enum fc_algo a)
{
	return a == FC_ALGO_WINDOW ? FC_ALGO_FLEET_WINDOW : a == FC_ALGO_SLIDING ? FC_ALGO_FLEET_SLIDING :
										FC_ALGO_FLEET_GCRA;
}

/*
 * What the agent leases with, made by each publish from the same view
 * (design section 13, piece A): the fleet policies this node enforces,
 * their splits and node sets, the fleet's key and this node's number.
 */
struct fc_fleet_set {
	int64_t at_ms;                  /* the time the set was taken at (a window's start) */
	const struct fc_fleet_member *m; /* by number; into the cfg's own storage */
	size_t n;
	uint64_t digest; /* fc_fleet_set_digest */
};

struct fc_fleet_policy {
	uint32_t id, epoch, slot;
	uint8_t algo;  /* FC_ALGO_FLEET_WINDOW, _SLIDING or _GCRA */
	uint8_t layer; /* FC_LAYER_XDP (fc_buckets[slot]) or FC_LAYER_HTTP (the shm) */
	bool keyed;    /* a DIM=* policy: a key per value, on the fleet ring; else one key, kid 0 */
	uint64_t n;       /* N per unit for the whole fleet */
	uint64_t burst;   /* gcra: B (the quantity split); N otherwise */
	uint64_t unit_ns;
	uint64_t lease_ns; /* gcra's lease window; 0 otherwise */
	struct fc_fleet_split split[2]; /* this node's, as published */
	/* What the workers hold (has_held: the live item's tail after the
	 * publish, of the same epoch and node): split[] but for a window whose
	 * split a rate edit kept (fc_shm_fleet_held). */
	bool has_held;
	struct fc_fleet_split held[2];
	uint32_t set[2];  /* split k's node set: an index into sets (split[1] unused: set[0]) */
	uint32_t fixed_u; /* !keyed: the key's point */
};

struct fc_fleet_cfg {
	uint64_t secret[2];
	uint32_t node_no; /* 0: this node is in no set (it holds no share, it only leases) */
	int64_t made_ms;  /* the publish's time */
	struct fc_fleet_policy *pols; /* by id */
	size_t npols;
	struct fc_fleet_set *sets;
	size_t nsets;
	struct fc_fleet_member *members; /* the sets' members */
};

/* The cfg for the fleet policies among rows (valid policies in id order)
 * under view v; *cfg zeroed when v is off. */
int fc_fleet_cfg_make(const struct fc_fleet_view *v, const struct fc_policy_row *rows, size_t nrows,
		      struct fc_fleet_cfg *cfg, struct fc_err *err);
void fc_fleet_cfg_free(struct fc_fleet_cfg *cfg);

/* When the published splits go stale (unix ms on this machine's clock, the
 * view's offset taken off; 0: never): the first start
 * of a split[1] window among the fleet policies of rows, after which a
 * further change of the set may follow that no change-log entry announces;
 * a full publish then takes the next one. */
int64_t fc_fleet_refresh_ms(const struct fc_fleet_view *v, const struct fc_policy_row *rows, size_t nrows);

#endif /* FC_FLEET_SPLIT_H */
