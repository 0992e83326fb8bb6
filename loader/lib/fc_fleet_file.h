/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The agent's fleet status file, read: `<shm>.fleet.json`, which the agent
 * writes (by rename, 0644, root's) after each sync round (doc/fleet.md,
 * "The status file"). `fleet status`, `stats`, `top`, `keys` and the
 * console read it; none of them ever connects to Redis. What it says is
 * shown, not trusted: a file that is not root's (when we are root) is
 * refused, every field is checked for its type where it is used, and a file
 * the agent stopped writing is reported as such.
 */
#ifndef FC_FLEET_FILE_H
#define FC_FLEET_FILE_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <jansson.h>

#include "fc_error.h"

#define FC_FLEET_STATUS_SUFFIX ".fleet.json"
/* Bytes read at most: a status of 1023 nodes and thousands of policies fits. */
#define FC_FLEET_STATUS_MAX (8u << 20)
/* A file older than this, and older than 10 of its agent's rounds, is one no
 * agent writes any more. */
#define FC_FLEET_STALE_MS 5000

struct fc_fleet_file {
	char path[PATH_MAX];
	json_t *doc;    /* the document (an object); NULL when there is none */
	int64_t age_ms; /* since the agent wrote it */
	bool stale;     /* the agent has not written it for 10 rounds and FC_FLEET_STALE_MS */
};

/* Reads the status file of the shm at shm_path into f: 0 read, 1 there is
 * none (f->doc NULL), -1 one that can not be used (err says why: not root's,
 * not a JSON object, too large). fc_fleet_file_free releases it. */
int fc_fleet_file_read(const char *shm_path, struct fc_fleet_file *f, struct fc_err *err);
void fc_fleet_file_free(struct fc_fleet_file *f);

/* The object of policy id in its "policies", or NULL. */
json_t *fc_fleet_file_policy(const struct fc_fleet_file *f, uint32_t id);
/* An integer member of o, or def when absent or not an integer. */
int64_t fc_fleet_int(const json_t *o, const char *key, int64_t def);
/* A string member of o, or def. */
const char *fc_fleet_str(const json_t *o, const char *key, const char *def);
/* A number (integer or real) member of o, or def. */
double fc_fleet_num(const json_t *o, const char *key, double def);

/* A fleet policy's numbers as stats --json and the console's /api/stats
 * show them: {used, limit, node_used, credit}; JSON null for NULL. */
json_t *fc_fleet_policy_json(const json_t *p);

/* A key of a fleet policy as keys and top show it, from its entry's words
 * (maps/fc_fleet.h) and its policy's object sp in the status file, which
 * says the algorithm and the current window (gcra: the lease window). */
struct fc_key_fleet {
	bool current;    /* its credit word is of the current window (else it rolls over at its next request) */
	uint64_t credit; /* what it holds in the current window: window credit, sliding room, gcra lease credit */
	bool demand;     /* a worker refused it for lack of credit in this window: the agent asks for it */
};
struct fc_shm_key;
void fc_key_fleet_view(const json_t *sp, const struct fc_shm_key *k, struct fc_key_fleet *f);

/* The Prometheus families of the fleet (freqctl_fleet_*), from a status
 * document; nothing when doc is NULL. */
void fc_fleet_prometheus(FILE *f, const json_t *doc);

#endif /* FC_FLEET_FILE_H */
