/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The counters of one node in one read: the XDP/TC totals, each policy's
 * passed/dropped/delayed (packets at XDP/TC from the pinned per-CPU maps,
 * requests in nginx from the shm's stat slots) and the live bans. Read by
 * stats, top and the agent's /metrics.
 */
#ifndef FC_STATS_H
#define FC_STATS_H

#include <stdio.h>

#include "fc_ctx.h"
#include "fc_enforce.h"
#include "fc_escape.h"
#include "fc_fleet_file.h"
#include "fc_kern.h"
#include "fc_store.h"

struct fc_policy_stats {
	const struct fc_policy_row *row;
	struct fc_enforced enforced; /* the policy as this node enforces it */
	struct fc_pstats ps; /* packets at XDP/TC; requests in nginx (no bytes) */
	uint64_t delayed;    /* nginx, action delay */
	uint64_t keys;       /* nginx, per-key policies: keys it holds (the workers' count) */
	uint64_t overflowed; /* ... requests decided by its overflow bucket */
	uint64_t inflight;    /* nginx, --concurrency: places held now (every key's) */
	uint64_t conc_denied; /* ... requests refused by the cap (also counted as dropped) */
};

/* Drops by ban source: by hand (set 0, escalations included), or a ban set. */
struct fc_ban_source {
	uint32_t set;
	char name[FC_SET_NAME_MAX + 1]; /* the set's; "" by hand */
	uint64_t bans;                  /* the source's live bans */
	struct fc_counter dropped;      /* packets its bans dropped at XDP/TC (an address held by
					 * several sources counts under the first: by hand, then the
					 * set with the lowest id) */
};

struct fc_stats_all {
	struct fc_stats s;
	struct fc_node_ctx node; /* this node: its share of the limits */
	struct fc_policy_row *rows;
	struct fc_policy_stats *ps; /* one per row, in id order */
	size_t n;
	struct fc_ban_counts bans;
	struct fc_ban_source *sources; /* by hand first, then each set by id */
	size_t nsources;
	uint64_t nginx_allowed; /* requests nginx let through by an allow entry (the workers' count) */
	uint64_t nginx_banned_uid, nginx_banned_addr; /* ... refused by a uid ban, an address ban */
	uint64_t ring_lost;     /* offender reports the agent could not read (its count) */
	/* Where the counters come from: maps pinned in the pin dir, a shm
	 * published at its path; each may hold another store's publish (their
	 * marks name the store: 0 while one writes), whose counters are not
	 * this store's policies' and are not read as theirs. */
	bool maps_there, shm_there;
	bool maps_other_store, shm_other_store;
	uint64_t store_id, maps_store_id, shm_store_id;
	/* The agent's fleet status (fc_fleet_file.h): doc NULL with no file,
	 * one that can not be used, or one no agent writes any more. */
	struct fc_fleet_file fleet;
};

/* a's ban sources as JSON: [{"set": null | NAME, "bans", "dropped": {"packets", "bytes"}}]. */
struct json_t;
struct json_t *fc_ban_sources_to_json(const struct fc_stats_all *a);

/* The rows of struct fc_stats, in display order: key for JSON and
 * Prometheus, label for text. */
struct fc_stat_row {
	const char *key;
	const char *label;
	size_t off;
};

extern const struct fc_stat_row fc_stat_rows[];
extern const size_t fc_nstat_rows;
const struct fc_counter *fc_stat_at(const struct fc_stats *s, size_t row);

int fc_stats_gather(const struct fc_ctx *ctx, struct fc_stats_all *a, struct fc_err *err);
void fc_stats_free(struct fc_stats_all *a);

/* How much of its fullest tier a bucket (its tiers' states) uses at now,
 * UTC ns: 0 (empty) to 1 (at the limit). */
double fc_bucket_use(const struct fc_policy *pol, const __u64 *state, uint64_t now);

/* A key's value as freqctl shows it (--show-keys): escaped, fc_escape. */
#define FC_KEY_VALUE_LEN FC_ESCAPED_LEN(FC_SHM_VAL_MAX)

/* A key of a per-key nginx policy, as top and the console show it. */
struct fc_key_use {
	uint32_t policy;
	uint64_t tag; /* the key's keyed hash, in the key table */
	uint32_t passed, denied;
	double use;   /* of its fullest tier, now */
	bool has_value; /* its policy keeps values (--show-keys) and its value was there */
	bool value_cut; /* ... longer than the FC_SHM_VAL_MAX bytes kept */
	char value[FC_KEY_VALUE_LEN];
	bool is_fleet;  /* its policy is a fleet policy its agent reports: fleet says its credit */
	struct fc_key_fleet fleet;
};

/* A key of a per-key nginx policy as freqctl keys shows it, read from its
 * entry k (every field the workers' say-so); e is the row as enforced. */
struct fc_key_view {
	uint64_t remaining; /* what its first rate admits now (0 without a rate) */
	uint64_t retry_ns;  /* until a request could pass its rates (the first's ramp too) */
	uint64_t idle_s;    /* until its buckets are empty and its entry may be taken back */
	bool held;          /* requests of it are in flight: never taken back meanwhile */
	bool capped;        /* the policy has --concurrency: inflight counts its requests in flight */
	uint64_t inflight;
};

void fc_key_view(const struct fc_policy_row *row, const struct fc_enforced *e, const struct fc_shm_key *k, uint64_t now,
		 struct fc_key_view *v);

/* The value of key tag of the policy row (as e enforces it), from vals
 * (fc_state_vals; NULL: none read), escaped into out (FC_KEY_VALUE_LEN
 * bytes), and whether it was cut. False (out empty) when the policy keeps
 * no values now or the table has none for the key. */
bool fc_key_value(const struct fc_policy_row *row, const struct fc_enforced *e, const struct fc_shm_val *vals,
		  uint64_t tag, char *out, bool *cut);

/* The keys of a's per-key policies using the most of their fullest tier at
 * now (UTC ns), at most max, most first; *n how many. None without a shm;
 * -1 with err when its state file is not of the size named
 * (fc_state_open_keys). */
int fc_stats_busiest_keys(const struct fc_ctx *ctx, const struct fc_stats_all *a, uint64_t now,
			  struct fc_key_use *out, size_t max, size_t *n, struct fc_err *err);

/* Every counter in the Prometheus text format (stats --prometheus, agent --metrics). */
int fc_stats_write_prometheus(const struct fc_ctx *ctx, FILE *f, struct fc_err *err);

#endif /* FC_STATS_H */
