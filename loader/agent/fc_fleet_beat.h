/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The fleet's heartbeat (design §6, §8.1 step 6), once a second: one
 * script on P{nodes} sets this node's value (its mode, rounds and, per
 * fleet policy, the window and what it passed in it) and returns every
 * node's value and Redis's TIME. From it: this node's clock offset to Redis
 * (RTT midpoint, median of the last 5), which the engine holds against
 * --fleet-max-skew; the fleet's use of each policy in its window; the nodes
 * for the status file. Every value read is another node's say-so: parsed
 * with bounds, never trusted beyond display and the use figures.
 */
#ifndef FC_FLEET_BEAT_H
#define FC_FLEET_BEAT_H

#include <stddef.h>
#include <stdint.h>

#include "fc_fleet_durable.h"
#include "fc_fleet_redis.h"
#include "fc_fleet_status.h"
#include "fc_redis.h"

#define FC_FLEET_BEAT_SAMPLES 5
#define FC_FLEET_BEAT_NODES 64     /* shown in the status file */
#define FC_FLEET_BEAT_POLS 256     /* policies whose fleet use is summed */
#define FC_FLEET_BEAT_VAL_MAX 4096 /* bytes of one node's value */
#define FC_FLEET_BEAT_PINGS 64     /* primaries a heartbeat PINGs */
/* Bounds of what the reply says, checked before any arithmetic: TIME's
 * seconds (their nanoseconds fit int64: year 2262) and a value's ts (ms;
 * 2^53, as JSON's integers). */
#define FC_FLEET_BEAT_TIME_MAX_S 9223372035LL
#define FC_FLEET_BEAT_TS_MAX     ((1LL << 53) - 1)
/* The reply's shape, checked by the client: TIME, then name-value pairs. */
#define FC_FLEET_BEAT_WANT                                                                                      \
	((struct fc_redis_want){ .types = FC_REDIS_ARRAY,                                                       \
				 .elem_types = FC_REDIS_STR,                                                    \
				 .min_n = 2,                                                                    \
				 .max_n = 2 + 2 * (FC_FLEET_NODE_MAX + 1),                                      \
				 .max_len = FC_FLEET_BEAT_VAL_MAX })

/* What this node says of one policy. */
struct fc_fleet_beat_pol {
	uint32_t id;
	uint64_t window, passed;
};

struct fc_fleet_beat {
	int64_t sample[FC_FLEET_BEAT_SAMPLES]; /* node clock minus Redis's, ns */
	unsigned nsamples, next;
	size_t nnodes;
	struct fc_fleet_status_node nodes[FC_FLEET_BEAT_NODES];
	size_t nused;
	struct fc_fleet_beat_pol used[FC_FLEET_BEAT_POLS]; /* the fleet's, summed */
	unsigned pings; /* the last heartbeat's PINGs (primaries but the one of P{nodes}) */
	uint64_t reply_errors; /* replies (or a node's value in one) that did not check */
	struct fc_fleet_durable durable;
};

/* Sends this node's value and reads the fleet's, and PINGs every other
 * primary: 0, or -1 with err (the script failed, or its reply is not of
 * the shape asked; a node's value that does not parse is only left out; a
 * PING that failed only makes the client load the slot table again).
 * now_ns: this node's clock (its test offset included). */
int fc_fleet_beat_run(struct fc_fleet_beat *b, struct fc_redis *r, const char *name, uint32_t no, const char *mode,
		      uint64_t rounds, const struct fc_fleet_beat_pol *pols, size_t npols, int64_t clock_ns,
		      struct fc_err *err);

/* Takes the heartbeat's reply (of FC_FLEET_BEAT_WANT's shape, as the
 * client checked it): Redis's TIME, against this clock's t0 and t1 (ns) around
 * the call, as an offset sample; every node's value. 0, or -1 with err
 * (TIME not a time, pairs that are not pairs: nothing taken). Each refusal,
 * and each node's value left out, counts in reply_errors. */
int fc_fleet_beat_parse(struct fc_fleet_beat *b, const struct fc_redis_reply *rep, int64_t t0, int64_t t1,
			struct fc_err *err);

/* The median offset of the samples (0 with none). */
int64_t fc_fleet_beat_offset(const struct fc_fleet_beat *b);

/* The fleet's passes of policy id in window w (0: none heard). */
uint64_t fc_fleet_beat_used(const struct fc_fleet_beat *b, uint32_t id, uint64_t w);

#endif /* FC_FLEET_BEAT_H */
