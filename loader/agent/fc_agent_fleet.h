/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The agent's side of the fleet: with --redis, the lease engine's thread
 * (fc_fleet_engine.h) started with the agent, handed what each publish
 * leases with (fleet29a's struct fc_fleet_cfg, made from the store as the
 * publish read it) and stopped with the agent. Without --redis, nothing.
 */
#ifndef FC_AGENT_FLEET_H
#define FC_AGENT_FLEET_H

#include <stdbool.h>
#include <stdint.h>

#include "fc_ctx.h"
#include "fc_error.h"
#include "fc_fleet_split.h"

struct fc_fleet;

/* The agent's fleet options (freqctl(8): --sync-interval, --fleet-max-skew,
 * --fleet-max-keys, --redis-wait, --clock-offset). */
struct fc_agent_fleet_opts {
	uint32_t sync_interval_ms; /* 10-10000, default 100 */
	uint32_t max_skew_ms;      /* 10-10000, default 500 */
	uint32_t max_keys;         /* default 20000 */
	uint32_t redis_wait;       /* replicas a grant waits for; FC_AGENT_FLEET_WAIT_ALL: all */
	int64_t clock_offset_ms;   /* tests only */
};

#define FC_AGENT_FLEET_WAIT_ALL UINT32_MAX
#define FC_AGENT_FLEET_OPTS_DEFAULT                                                                                   \
	{                                                                                                             \
		.sync_interval_ms = 100, .max_skew_ms = 500, .max_keys = 20000, .redis_wait = FC_AGENT_FLEET_WAIT_ALL \
	}

struct fc_agent_fleet {
	struct fc_fleet *f; /* NULL: no --redis */
};

/* Starts the engine when ctx has --redis: 0, or -1 with err (a password
 * file of the wrong mode, no libhiredis). Redis unreachable is not an
 * error: the engine starts degraded and keeps trying. */
int fc_agent_fleet_start(struct fc_agent_fleet *af, const struct fc_ctx *ctx, const struct fc_agent_fleet_opts *o,
			 struct fc_err *err);
/* After a publish: what the engine leases with now, the cfg that publish
 * made from the store it read (fc_publish.want_fleet_cfg), so the engine
 * and the shm never disagree on a split. */
void fc_agent_fleet_published(struct fc_agent_fleet *af, const struct fc_fleet_cfg *cfg);
void fc_agent_fleet_stop(struct fc_agent_fleet *af);

#endif /* FC_AGENT_FLEET_H */
