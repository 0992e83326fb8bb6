/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Whether Redis keeps the fleet's records (doc/fleet.md, "One Redis" and
 * "A Redis Cluster"): a standalone server with neither a replica nor an
 * AOF loses, when it restarts, what it acknowledged since its last
 * snapshot, and the nodes can then over-grant what it lost; a Cluster
 * primary without a replica loses its slots' records when it fails. The
 * agent says so once, when it first reaches Redis and again when a new
 * connection or slot table finds something else (a primary restarted
 * without its AOF, a replica gone): one INFO per new connection for a
 * standalone server, nothing for a Cluster (its slot table names the
 * replicas).
 */
#ifndef FC_FLEET_DURABLE_H
#define FC_FLEET_DURABLE_H

#include <stdbool.h>
#include <stdint.h>

#include "fc_redis.h"

struct fc_fleet_durable {
	bool checked;
	uint64_t seen;    /* the client's connections and slot tables when last checked */
	char warned[512]; /* what was last logged ("": nothing wrong): not logged again */
};

/* Checks r after a new connection or slot table (nothing otherwise) and
 * logs what it finds once (fc_warn). Returns how many INFO replies did
 * not say what every Redis says (reply errors). */
unsigned fc_fleet_durable_check(struct fc_fleet_durable *d, struct fc_redis *r);

#endif /* FC_FLEET_DURABLE_H */
