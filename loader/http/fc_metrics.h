/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The agent's Prometheus endpoint: GET /metrics answers what
 * `freqctl stats --prometheus` prints, plus the agent's own counters.
 */
#ifndef FC_METRICS_H
#define FC_METRICS_H

#include <stdint.h>
#include <stdio.h>

#include "fc_ctx.h"
#include "fc_error.h"

/* Written by the agent's loop, read by the server's thread: atomics. */
struct fc_agent_counters {
	uint64_t publishes;      /* successful publishes */
	uint64_t publish_errors; /* failed ones (the store could not be read, ...) */
	uint64_t escalations;    /* clients banned by escalation */
	int64_t last_publish;    /* unix time of the last successful publish, 0: none */
	uint64_t last_publish_us; /* how long it took */
};

struct fc_metrics;
struct sockaddr_storage;

/* The Prometheus text: what `stats --prometheus` prints, then the agent's counters. */
void fc_metrics_write(FILE *f, const struct fc_ctx *ctx, const struct fc_agent_counters *c);

/* Listens on sa (from fc_http_parse) as conf says (the token, TLS); the
 * server runs in its own thread and reads ctx and counters until
 * fc_metrics_stop. */
struct fc_http_conf;
struct fc_metrics *fc_metrics_start(const struct sockaddr_storage *sa, const struct fc_http_conf *conf,
				    const struct fc_ctx *ctx, const struct fc_agent_counters *counters, struct fc_err *err);
void fc_metrics_stop(struct fc_metrics *m);

#endif /* FC_METRICS_H */
