/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The policy store: the source of truth that `freqctl sync` publishes. A
 * SQLite file (the default) or a PostgreSQL database shared by a fleet (a DSN
 * postgresql://...); every command changes it in one transaction.
 */
#ifndef FC_STORE_H
#define FC_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fc_error.h"
#include "fc_policy.h"
#include "fc_prefix.h"

#define FC_STORE_DEFAULT "/var/lib/freqctl/freqctl.db"

struct fc_store;

struct fc_ban_row {
	struct fc_prefix p;
	int64_t created;    /* unix seconds */
	int64_t expires;    /* unix seconds; 0 = never */
	uint32_t by_policy; /* escalated by this L7 policy; 0 = by hand */
};

/* dsn: a SQLite path, or postgresql://... (libpq's URI). */
int fc_store_open(const char *dsn, struct fc_store **out, struct fc_err *err);
/* The same, but a missing store is an error rather than a new empty one. */
int fc_store_open_ex(const char *dsn, bool create, struct fc_store **out, struct fc_err *err);
bool fc_store_is_postgres(const char *dsn);
void fc_store_close(struct fc_store *st);

int fc_store_begin(struct fc_store *st, struct fc_err *err);
int fc_store_commit(struct fc_store *st, struct fc_err *err);
void fc_store_rollback(struct fc_store *st);

/* Inserts or replaces the ban on row->p. */
int fc_store_ban_put(struct fc_store *st, const struct fc_ban_row *row, struct fc_err *err);
/* The live (not expired at now) ban on exactly p, if any. */
int fc_store_ban_get(struct fc_store *st, const struct fc_prefix *p, int64_t now, struct fc_ban_row *row,
		     bool *found, struct fc_err *err);
/* Deletes the ban on exactly p; *found is false when there was none. */
int fc_store_ban_del(struct fc_store *st, const struct fc_prefix *p, bool *found, struct fc_err *err);
/* Removes bans that expired at or before now; *n how many. */
int fc_store_ban_purge(struct fc_store *st, int64_t now, size_t *n, struct fc_err *err);
/* How many live bans the store holds: address bans (escalated: placed by a policy), uid bans. */
struct fc_ban_counts {
	size_t addresses, escalated, uids;
};
int fc_store_ban_count(struct fc_store *st, int64_t now, struct fc_ban_counts *n, struct fc_err *err);
/* Live bans (not expired at now), in address order. The caller frees *rows. */
int fc_store_ban_list(struct fc_store *st, int64_t now, struct fc_ban_row **rows, size_t *n,
		      struct fc_err *err);

struct fc_policy_row {
	struct fc_policy_spec spec;
	uint32_t slot;  /* in the kernel's policy arrays, kept across edits */
	uint32_t epoch; /* new whenever the match changes */
	int64_t created;
	int64_t updated;
};

int fc_store_policy_get(struct fc_store *st, uint32_t id, struct fc_policy_row *row, bool *found,
			struct fc_err *err);
/* In id order. The caller frees *rows. */
/* Rows that are not valid as written are skipped, counted and the first
 * one's message kept: fc_store_bad_policies says how many the last listing
 * skipped. */
int fc_store_policy_list(struct fc_store *st, struct fc_policy_row **rows, size_t *n, struct fc_err *err);
size_t fc_store_bad_policies(const struct fc_store *st, const char **why);
/* What a write returns when the input conflicts with what is stored (as
 * opposed to -1, the database failing). */
#define FC_STORE_REFUSED (-2)

/* Creates or replaces policy p->id: keeps its slot, and its epoch unless the
 * match changes; refuses (FC_STORE_REFUSED) a match another policy has, or a
 * new policy when every slot is taken. *out is what was stored. */
int fc_store_policy_put(struct fc_store *st, const struct fc_policy_spec *p, int64_t now,
			struct fc_policy_row *out, struct fc_err *err);
int fc_store_policy_del(struct fc_store *st, uint32_t id, bool *found, struct fc_err *err);

/* An L7 ban on a user id. */
struct fc_uid_ban {
	char uid[FC_SHM_MAX_VALUE + 1];
	int64_t created;
	int64_t expires; /* 0 = never */
};

/* Inserts or replaces; *existed tells whether a live ban was there. */
int fc_store_uid_ban_put(struct fc_store *st, const struct fc_uid_ban *b, bool *existed, int64_t now,
			 struct fc_err *err);
int fc_store_uid_ban_del(struct fc_store *st, const char *uid, bool *found, struct fc_err *err);
int fc_store_uid_ban_purge(struct fc_store *st, int64_t now, size_t *n, struct fc_err *err);
int fc_store_uid_ban_list(struct fc_store *st, int64_t now, struct fc_uid_ban **rows, size_t *n,
			  struct fc_err *err);
/* A node of a fleet: it enforces each policy's rate R as R * weight. */
#define FC_NODE_NAME_MAX 64

struct fc_node {
	char name[FC_NODE_NAME_MAX + 1];
	double weight; /* (0, 1] */
};

/* The weight of node name: 1 when it has no row. */
int fc_store_node_weight(struct fc_store *st, const char *name, double *weight, struct fc_err *err);
int fc_store_node_put(struct fc_store *st, const struct fc_node *n, struct fc_err *err);
int fc_store_node_list(struct fc_store *st, struct fc_node **rows, size_t *n, struct fc_err *err);
int fc_store_nodes_clear(struct fc_store *st, struct fc_err *err);

/* A number that changes when another connection commits: SQLite's
 * data_version, or how many NOTIFYs PostgreSQL sent (the first call LISTENs). */
int fc_store_data_version(struct fc_store *st, int64_t *v, struct fc_err *err);
/* A descriptor to poll for such changes (PostgreSQL's socket); -1: none. */
int fc_store_watch_fd(struct fc_store *st);

/* Deletes every ban, address and uid (freqctl import replaces them). */
int fc_store_bans_clear(struct fc_store *st, struct fc_err *err);

/* An allow entry: an address or prefix (p), or a user id (p.family 0, uid).
 * What it covers is never banned, limited or escalated, at either layer. */
#define FC_ALLOW_NOTE_MAX 200

struct fc_allow_row {
	struct fc_prefix p; /* family 0: the entry is uid */
	char uid[FC_SHM_MAX_VALUE + 1];
	int64_t created;
	int64_t expires; /* unix seconds; 0 = never */
	char note[FC_ALLOW_NOTE_MAX + 1];
};

/* Inserts or replaces the entry with row's key; *existed: a live one was there. */
int fc_store_allow_put(struct fc_store *st, const struct fc_allow_row *row, int64_t now, bool *existed,
		       struct fc_err *err);
/* Deletes the entry with key's key (p, or uid); *found is false when there was none. */
int fc_store_allow_del(struct fc_store *st, const struct fc_allow_row *key, bool *found, struct fc_err *err);
/* Removes entries that expired at or before now; *n how many. */
int fc_store_allow_purge(struct fc_store *st, int64_t now, size_t *n, struct fc_err *err);
/* Live entries: addresses in address order, then uids. The caller frees *rows. */
int fc_store_allow_list(struct fc_store *st, int64_t now, struct fc_allow_row **rows, size_t *n,
			struct fc_err *err);
/* Deletes every allow entry (freqctl import replaces them). */
int fc_store_allows_clear(struct fc_store *st, struct fc_err *err);

#endif /* FC_STORE_H */
