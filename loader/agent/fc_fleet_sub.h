/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The fleet's demand subscriber (design §8.1, "reactive releases"): a
 * connection of its own to one Redis node, SUBSCRIBEd to the prefix's
 * demand channel (classic pub/sub: in a Cluster one node hears every
 * PUBLISH), read without blocking from the fleet thread's poll loop, made
 * again with a backoff when it is lost. What it hears is hostile: each
 * message goes to the caller as bytes, for fc_fleet_demand_parse.
 */
#ifndef FC_FLEET_SUB_H
#define FC_FLEET_SUB_H

#include <stddef.h>
#include <stdint.h>

#include "fc_redis.h"

struct fc_fleet_sub {
	int fd;     /* -1: none */
	bool ready; /* SUBSCRIBE answered */
	struct fc_redis_reader rd;
	uint64_t retry_ms; /* CLOCK_MONOTONIC ms before which no new connection */
	unsigned backoff_ms;
	unsigned seed; /* which seed (or known node) to try next */
	uint64_t connects, messages;
};

void fc_fleet_sub_init(struct fc_fleet_sub *s);
void fc_fleet_sub_close(struct fc_fleet_sub *s);

/* Connects (when none, and its backoff is over) and reads what arrived:
 * calls cb for each message on the channel; how many, or -1 when the
 * connection was lost (made again later). Bounded by r's connect timeout. */
typedef void fc_fleet_sub_cb(void *arg, const char *msg, size_t len);
int fc_fleet_sub_poll(struct fc_fleet_sub *s, const struct fc_redis *r, fc_fleet_sub_cb *cb, void *arg);

#endif /* FC_FLEET_SUB_H */
