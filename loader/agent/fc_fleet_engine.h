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
 * What it leases with (struct fc_fleet_cfg, made by each publish:
 * loader/lib/publish/fc_fleet_split.h) is a snapshot the agent's main loop
 * hands over after each publish; the thread copies it whole.
 */
#ifndef FC_FLEET_ENGINE_H
#define FC_FLEET_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fc_error.h"
#include "fc_fleet.h"
#include "fc_fleet_redis.h"
#include "fc_fleet_split.h"
#include "fc_fleet_status.h"
#include "fc_redis.h"

/* The engine's own settings: the agent's options, fixed while it runs.
 * What it leases with (struct fc_fleet_cfg, loader/lib/publish/
 * fc_fleet_split.h) comes from each publish. */
struct fc_fleet_opts {
	char node[64];
	char state_path[4096];  /* the workers' state file (<shm>.state) */
	char status_shm[4096];  /* the config file, its header's fleet_fresh_ns read each round; the status
				 * file is <status_shm>.fleet.json ("": neither) */
	char pin_dir[4096];     /* XDP/TC: fc_buckets, fc_pstats and fc_config pinned here ("": no XDP/TC policies) */
	int64_t clock_ns;       /* --clock-offset (tests) */
	uint32_t interval_ms;   /* --sync-interval */
	uint32_t max_skew_ms;   /* --fleet-max-skew */
	uint32_t max_keys;      /* --fleet-max-keys: scripts per round (0: 20,000) */
	uint32_t wait_replicas; /* --redis-wait: replicas a grant waits for at most (0: all) */
};

struct fc_fleet;

/* Starts the fleet thread over redis (the fleet's: the thread owns it
 * from here) with a copy of cfg; NULL with err. */
struct fc_fleet *fc_fleet_start(const struct fc_fleet_opts *o, const struct fc_fleet_cfg *cfg, struct fc_redis *redis,
				struct fc_err *err);
/* Hands new options or a new snapshot (or both; NULL: unchanged) to the
 * thread, copied, taken at its next round. */
int fc_fleet_update(struct fc_fleet *f, const struct fc_fleet_opts *o, const struct fc_fleet_cfg *cfg,
		    struct fc_err *err);
/* Stops the thread and frees it all (the Redis client too). */
void fc_fleet_stop(struct fc_fleet *f);

/* For tests: the engine without its thread, one round at a time at now
 * (UTC ns, the node's clock). */
struct fc_fleet *fc_fleet_new(const struct fc_fleet_opts *o, const struct fc_fleet_cfg *cfg, struct fc_redis *redis,
			      struct fc_err *err);
void fc_fleet_round(struct fc_fleet *f, uint64_t now);
void fc_fleet_free(struct fc_fleet *f);
/* What the last round left: its status (valid until the next round). */
const struct fc_fleet_status *fc_fleet_status_of(const struct fc_fleet *f);

#endif /* FC_FLEET_ENGINE_H */
