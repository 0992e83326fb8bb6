// SPDX-License-Identifier: BSD-2-Clause
/*
 * The agent's side of the fleet (see fc_agent_fleet.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fc_agent_fleet.h"
#include "fc_fleet_engine.h"

static struct fc_fleet_opts fc_engine_opts(const struct fc_ctx *ctx, const struct fc_agent_fleet_opts *o)
{
	struct fc_fleet_opts e = { .clock_ns = o->clock_offset_ms * 1000000,
				   .interval_ms = o->sync_interval_ms,
				   .max_skew_ms = o->max_skew_ms,
				   .max_keys = o->max_keys,
				   .wait_replicas = o->redis_wait == FC_AGENT_FLEET_WAIT_ALL ? 0 : o->redis_wait };
	snprintf(e.node, sizeof(e.node), "%s", ctx->node);
	snprintf(e.state_path, sizeof(e.state_path), "%s.state", ctx->shm_path);
	snprintf(e.status_shm, sizeof(e.status_shm), "%s", ctx->shm_path);
	snprintf(e.pin_dir, sizeof(e.pin_dir), "%s", ctx->pin_dir);
	return e;
}

int fc_agent_fleet_start(struct fc_agent_fleet *af, const struct fc_ctx *ctx, const struct fc_agent_fleet_opts *o,
			 struct fc_err *err)
{
	struct fc_fleet_opts e = fc_engine_opts(ctx, o);
	struct fc_fleet_cfg none = { 0 };
	struct fc_redis_conf conf;
	struct fc_redis *r;

	memset(af, 0, sizeof(*af));
	if (!ctx->redis)
		return 0;
	fc_redis_conf_init(&conf);
	if (fc_redis_conf_urls(&conf, ctx->redis, err) < 0 ||
	    (ctx->redis_password_file && fc_redis_conf_password_file(&conf, ctx->redis_password_file, err) < 0) ||
	    (ctx->redis_prefix && fc_redis_conf_prefix(&conf, ctx->redis_prefix, err) < 0)) {
		fc_redis_conf_wipe(&conf);
		return -1;
	}
	/* A round must not outlast its interval by much (design §9). */
	conf.timeout_ms = o->sync_interval_ms > 250 ? o->sync_interval_ms : 250;
	r = fc_redis_open(&conf, err);
	fc_redis_conf_wipe(&conf);
	if (!r)
		return -1;
	af->f = fc_fleet_start(&e, &none, r, err);
	if (!af->f) {
		fc_redis_close(r);
		return -1;
	}
	return 0;
}

void fc_agent_fleet_published(struct fc_agent_fleet *af, const struct fc_fleet_cfg *cfg)
{
	struct fc_err err;

	if (af->f && fc_fleet_update(af->f, NULL, cfg, &err) < 0)
		fc_warn("%s", err.msg);
}

void fc_agent_fleet_stop(struct fc_agent_fleet *af)
{
	fc_fleet_stop(af->f); /* closes its client */
	af->f = NULL;
}
