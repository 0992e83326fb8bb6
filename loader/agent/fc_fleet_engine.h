/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The lease engine: the agent's fleet thread (design §8.1). Every
 * --sync-interval it drains the fleet ring of the workers' state file,
 * tracks the keys short of credit in the current window, calls the fleet
 * script for them in one pipeline per Redis primary with a WAIT, applies
 * the grants Redis confirmed to the keys' credit words (maps/fc_fleet.h),
 * and writes the status file. Requests never wait on it: it is on no
 * decision path, and when Redis is away, slow or wrong it goes degraded
 * (no grants, no releases; workers spend their credit and their shares of
 * new windows, which needs nothing from it) and comes back by itself.
 *
 * What it is given (struct fc_fleet_cfg) is a snapshot the agent's main
 * loop swaps in after each publish; the thread copies it whole.
 */
#ifndef FC_FLEET_ENGINE_H
#define FC_FLEET_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fc_error.h"
#include "fc_fleet.h"
#include "fc_fleet_redis.h"
#include "fc_fleet_status.h"
#include "fc_redis.h"

/* A node set's split of a policy's quantity (N; B for gcra), for windows
 * from `from` on: every node's, so that the record made by whoever comes
 * first carries each node's share (s<j>), which depends on the key's point. */
struct fc_fleet_set {
	uint64_t from;                /* first window (FC_FLEET_NEVER: unused) */
	uint64_t digest;              /* of the (no, weight) list: the records' `set` */
	uint32_t nnodes;              /* at most FC_FLEET_NODE_MAX */
	uint32_t *no;                 /* in `no` order */
	struct fc_fleet_split *split; /* node no[j]'s */
};

/* One fleet policy as the agent needs it. */
struct fc_fleet_pol {
	uint32_t id, epoch; /* the store's: the records' names */
	uint32_t slot;      /* its slot in the shm (L7) or the pins (XDP) */
	uint32_t shm_epoch; /* the slot's epoch, as key entries carry it */
	uint8_t algo;       /* FC_ALGO_FLEET_WINDOW, _SLIDING, _GCRA */
	bool keyed;         /* DIM=*: one entry per key in the key table; else the slot's words */
	bool xdp;           /* a fixed-value XDP/TC policy: fc_buckets[slot] */
	uint64_t limit;     /* N */
	uint64_t unit_ns;
	uint32_t fixed_u; /* not keyed: the key's point */
	struct fc_fleet_set set[2];
};

struct fc_fleet_cfg {
	char node[64];
	uint32_t node_no;      /* 0: not in fleet_nodes (shares 0: grants only) */
	char state_path[4096]; /* the workers' state file (<shm>.state) */
	char status_shm[4096]; /* the status file is <status_shm>.fleet.json */
	uint64_t fresh_ns;     /* fleet_fresh_ns of the state file */
	int64_t clock_ns;      /* --clock-offset (tests) */
	uint32_t interval_ms;  /* --sync-interval */
	uint32_t max_skew_ms;  /* --fleet-max-skew */
	uint32_t max_keys;     /* --fleet-max-keys: scripts per round */
	size_t npolicies;
	struct fc_fleet_pol *policies;
};

struct fc_fleet;

/* Starts the fleet thread over redis (the fleet's: the thread owns it
 * from here) with a copy of cfg; NULL with err. */
struct fc_fleet *fc_fleet_start(const struct fc_fleet_cfg *cfg, struct fc_redis *redis, struct fc_err *err);
/* Hands a new snapshot to the thread (copied; taken at its next round). */
int fc_fleet_update(struct fc_fleet *f, const struct fc_fleet_cfg *cfg, struct fc_err *err);
/* Stops the thread and frees it all (the Redis client too). */
void fc_fleet_stop(struct fc_fleet *f);
/* A copy of the counters and mode, for /metrics. */
void fc_fleet_counters(struct fc_fleet *f, struct fc_fleet_counters *out, enum fc_fleet_mode *mode, uint64_t *rounds);

/* For tests: the engine without its thread, one round at a time at now
 * (UTC ns, the node's clock). */
struct fc_fleet *fc_fleet_new(const struct fc_fleet_cfg *cfg, struct fc_redis *redis, struct fc_err *err);
void fc_fleet_round(struct fc_fleet *f, uint64_t now);
void fc_fleet_free(struct fc_fleet *f);
/* What the last round left: its view (valid until the next round). */
const struct fc_fleet_view *fc_fleet_view(const struct fc_fleet *f);

#endif /* FC_FLEET_ENGINE_H */
