/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The agent: keeps the pinned maps and the nginx shm equal to the store,
 * whoever changes it. fc_cmd_agent.c parses the command line into a config;
 * fc_agent_run runs until SIGTERM or SIGINT.
 */
#ifndef FC_AGENT_H
#define FC_AGENT_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "fc_agent_fleet.h"
#include "fc_ctx.h"
#include "fc_http.h"

/* An address to serve on: as given, and parsed. */
struct fc_listen {
	const char *at; /* NULL: do not serve */
	struct sockaddr_storage sa;
};

struct fc_agent_config {
	bool quiet;             /* log only problems, not every publish */
	double weight;          /* this node's weight, recorded first; 0: leave the store's */
	struct fc_listen metrics; /* GET /metrics */
	struct fc_listen http;    /* the console and its API */
	struct fc_http_conf serve; /* both: the token, TLS, Host names (the log is the agent's) */
	uint32_t escalate_cap;       /* escalation bans per minute at most */
	uint32_t escalate_aggregate; /* IPv6 clients due in one /64 that make it a /64 ban; 0: never */
	struct fc_agent_fleet_opts fleet; /* with --redis: the fleet's sync rounds */
};

/* Returns the exit status: FC_EXIT_OK after a signal, else a failure to start. */
int fc_agent_run(const struct fc_ctx *ctx, const struct fc_agent_config *cfg);

#endif /* FC_AGENT_H */
