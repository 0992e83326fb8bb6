/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What the fleet agent says of itself after each round: a view of its
 * state (struct fc_fleet_status, also what /metrics reads) and the status
 * file made of it, <shm>.fleet.json, written whole by rename, 0644, root's.
 * `freqctl fleet status`, stats, top, keys and the console read the file
 * (loader/lib/fc_fleet_file.c; its schema is doc/fleet.md's "The status
 * file"); none of them talks to Redis.
 */
#ifndef FC_FLEET_STATUS_H
#define FC_FLEET_STATUS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <jansson.h>

#include "fc_error.h"
#include "fc_fleet_split.h"
#include "fc_redis.h"

enum fc_fleet_mode {
	FC_FLEET_MODE_OFF, /* no --redis, or no fleet policy yet */
	FC_FLEET_MODE_FLEET,
	FC_FLEET_MODE_DEGRADED, /* Redis away, slow or wrong, or the clock too far: reason says which */
};

struct fc_fleet_status_policy {
	uint32_t id;
	const char *algo;    /* "window", "sliding", "gcra" */
	uint64_t limit;      /* the fleet's N (per key for DIM=*) */
	const char *unit;    /* "s", "m", "h", "d" */
	uint64_t window;     /* the current window's index */
	uint64_t fleet_used; /* the fleet's admissions in it (heartbeats) */
	uint64_t node_used;  /* this node's */
	uint64_t credit;     /* what this node holds now (summed over tracked keys) */
	uint64_t tracked, demanding, done;
	uint64_t grants, releases, donated;
};

struct fc_fleet_status_node {
	char name[64];
	uint32_t no;
	double weight;    /* in the node set it is in (the current windows', else the next) */
	bool in_set;      /* in the node set of every fleet policy's current window */
	int64_t joins_ms; /* not in_set: UTC ms from which it is in every policy's (0: not known to) */
	char mode[16];    /* as its heartbeat says */
	int64_t age_ms;   /* since its heartbeat */
};

struct fc_fleet_status_primary {
	char addr[FC_REDIS_ADDR_LEN];
	unsigned slots, replicas;
	bool up;
};

struct fc_fleet_counters {
	uint64_t commands, scripts, waits;
	uint64_t moved, ask, reconnects;
	uint64_t reasserted, frozen, reply_errors, deferred;
	uint64_t ring_errors;           /* fleet ring entries that did not check */
	uint64_t records;               /* release records made for keys never seen */
	uint64_t corrupt;               /* credit words above their key's allotment: not released */
	uint64_t untracked;             /* keys not tracked: as many as 2 x --fleet-max-keys were */
	uint64_t degraded, degraded_ms; /* episodes, and their time */
};

struct fc_fleet_status {
	char node[64];
	uint32_t node_no;
	enum fc_fleet_mode mode;
	char reason[160];     /* degraded: why */
	int64_t since_ms;     /* UTC ms of the mode's start */
	int64_t last_sync_ms; /* UTC ms of the last round that reached Redis; 0: none */
	uint64_t rounds;
	uint32_t interval_ms;                       /* --sync-interval */
	double lat_last, lat_p50, lat_p99, lat_sum; /* ms, over the last 100 rounds */
	enum fc_redis_mode redis_mode;
	unsigned wait; /* replicas WAIT asks for */
	size_t nprimaries;
	const struct fc_fleet_status_primary *primaries;
	double offset_ms; /* this node's clock minus Redis's, median of 5 */
	int64_t max_skew_ms, test_offset_ms;
	size_t nnodes;
	const struct fc_fleet_status_node *nodes;
	size_t npolicies;
	const struct fc_fleet_status_policy *policies;
	struct fc_fleet_counters counters;
	size_t keys; /* keys tracked in the agent's memory, every policy's */
};

const char *fc_fleet_mode_name(enum fc_fleet_mode mode);

/* Node n's place (n->no) in cfg's node sets at now (UTC ns, the fleet's
 * clock): in_set, weight, joins_ms. Sets change only at a window's start
 * (freqctl(8), node set): a node that joined holds no share of a window
 * that began before, however long that window is. */
void fc_fleet_status_node_set(struct fc_fleet_status_node *n, const struct fc_fleet_cfg *cfg, uint64_t now);

/* The view as the status file's document. */
json_t *fc_fleet_status_json(const struct fc_fleet_status *v);

/* Writes <shm_path>.fleet.json whole: a fresh temporary file beside it
 * (never one found there: O_EXCL, no symlink followed; /dev/shm is anyone's),
 * 0644, then rename. 0, or -1 with err. */
int fc_fleet_status_write(const char *shm_path, const struct fc_fleet_status *v, struct fc_err *err);

#endif /* FC_FLEET_STATUS_H */
