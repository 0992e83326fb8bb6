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

/* One source of a ban on p: by hand (or escalated), or a ban set holding it.
 * A set's members carry the set's expiry here, but are published without
 * one: the whole set lapses at once (its members are then deleted, which
 * lifts them), so an import that extends a set rewrites nothing. */
struct fc_ban_row {
	struct fc_prefix p;
	int64_t created;    /* unix seconds (a set member: when it joined) */
	int64_t expires;    /* unix seconds; 0 = never */
	uint32_t by_policy; /* escalated by this L7 policy; 0 = by hand */
	uint32_t set;       /* the ban set (struct fc_ban_set.id) holding it; 0 = by hand or escalated */
};

/* dsn: a SQLite path, or postgresql://... (libpq's URI). */
int fc_store_open(const char *dsn, struct fc_store **out, struct fc_err *err);
/* The same, but a missing store is an error rather than a new empty one. */
int fc_store_open_ex(const char *dsn, bool create, struct fc_store **out, struct fc_err *err);
/* The same, for reading only: a store that is not there is not made (1,
 * *out NULL: nothing is stored), nothing is written but the schema's
 * upgrade, and a store this user can not read says what reading it needs. */
int fc_store_open_read(const char *dsn, struct fc_store **out, struct fc_err *err);
bool fc_store_is_postgres(const char *dsn);
/* dsn as it may be printed, its password masked (malloc'd; NULL: no memory). */
char *fc_store_dsn_redact(const char *dsn);
void fc_store_close(struct fc_store *st);

int fc_store_begin(struct fc_store *st, struct fc_err *err);
int fc_store_commit(struct fc_store *st, struct fc_err *err);
void fc_store_rollback(struct fc_store *st);

/* Inserts or replaces the ban on row->p. */
int fc_store_ban_put(struct fc_store *st, const struct fc_ban_row *row, struct fc_err *err);
/* fc_store_ban_put, unless a ban there already would last longer (then
 * kept as it is, *written false). */
int fc_store_ban_extend(struct fc_store *st, const struct fc_ban_row *row, bool *written, struct fc_err *err);

/* Bulk writes (an import's) take keys without repeats, written by one
 * statement per FC_STORE_BATCH of them (a statement a row journals and logs
 * the same pages once a row); prog, if given, is told before the first
 * batch and after each. */
#define FC_STORE_BATCH 65536
struct fc_store_progress {
	void (*fn)(size_t done, size_t total, void *arg);
	void *arg;
	size_t done, total;
};
/* Bans keys by hand, all created and expiring (0: never) alike; a ban there
 * already is kept where it would last longer, unless force. *written: the
 * bans made or replaced. */
int fc_store_bans_put(struct fc_store *st, const struct fc_prefix *keys, size_t n, int64_t created, int64_t expires,
		      bool force, struct fc_store_progress *prog, size_t *written, struct fc_err *err);
/* The live (not expired at now) ban on exactly p, if any. */
int fc_store_ban_get(struct fc_store *st, const struct fc_prefix *p, int64_t now, struct fc_ban_row *row,
		     bool *found, struct fc_err *err);
/* Deletes the ban on exactly p; *found is false when there was none. */
int fc_store_ban_del(struct fc_store *st, const struct fc_prefix *p, bool *found, struct fc_err *err);
/* Removes bans that expired at or before now; *n how many. */
int fc_store_ban_purge(struct fc_store *st, int64_t now, size_t *n, struct fc_err *err);
/* How many live bans the store holds: address bans by hand (escalated: placed
 * by a policy), uid bans, members of ban sets. */
struct fc_ban_counts {
	size_t addresses, escalated, uids, in_sets;
};
int fc_store_ban_count(struct fc_store *st, int64_t now, struct fc_ban_counts *n, struct fc_err *err);
/* Every source of every live ban (not expired at now): by hand, and each set
 * holding one, in address order (then by hand first, then by set). The
 * caller frees *rows. */
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
/* The same, of those that may escalate or keep a bucket per key (the agent's
 * own work; a superset: the caller checks each), without reading the rest. */
int fc_store_policy_list_agent(struct fc_store *st, struct fc_policy_row **rows, size_t *n, struct fc_err *err);
/* The same, of the fleet's policies alone. */
int fc_store_policy_list_fleet(struct fc_store *st, struct fc_policy_row **rows, size_t *n, struct fc_err *err);
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

/* The live ban of uid: *found, and its expiry (0: none). */
int fc_store_uid_ban_get(struct fc_store *st, const char *uid, int64_t now, int64_t *expires, bool *found,
			 struct fc_err *err);
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
/* In the writers' transaction: node n weighs n->weight, in nodes and in the
 * fleet's node set (a new row from now_ms + FC_FLEET_NODE_DELAY_MS on, only
 * if its weight there changes). node set, import and agent --weight. */
int fc_store_node_weigh(struct fc_store *st, const struct fc_node *n, int64_t now_ms, struct fc_err *err);
/* The same for a node that says no weight (an agent without --weight): it
 * joins the fleet's node set at its weight in nodes (1 without a row) if it
 * is not there, and nothing else changes. */
int fc_store_node_join(struct fc_store *st, const char *name, int64_t now_ms, struct fc_err *err);
/* Node name leaves: its nodes row is deleted (its weight is 1 again) and it
 * leaves the fleet's node set from now_ms + FC_FLEET_NODE_DELAY_MS on;
 * *found: it had either. */
int fc_store_node_del(struct fc_store *st, const char *name, int64_t now_ms, bool *found, struct fc_err *err);
/* After nodes was rewritten (import): every node in it, and every node in
 * the fleet's node set, is in the set at its weight in nodes (1 without a
 * row), from now_ms + FC_FLEET_NODE_DELAY_MS on where that changes it. */
int fc_store_nodes_follow(struct fc_store *st, int64_t now_ms, struct fc_err *err);
int fc_store_node_list(struct fc_store *st, struct fc_node **rows, size_t *n, struct fc_err *err);
int fc_store_nodes_clear(struct fc_store *st, struct fc_err *err);

/*
 * Fleets (--fleet: a policy's rate is the whole fleet's). The fleet's key:
 * the SipHash key every node tags a fleet policy's keys with, so that a key
 * is one key fleet-wide. Made from getrandom() by the first node that asks
 * (meta rows fleet_k0, fleet_k1), the same for every node after; never
 * exported.
 */
int fc_store_fleet_secret(struct fc_store *st, uint64_t key[2], struct fc_err *err);

/* The fleet's node set, window by window, with its history: a row per node
 * and span of time, in integer weights. A change takes effect
 * FC_FLEET_NODE_DELAY_MS after it is written (more than a change takes to
 * reach every node, and their clocks' skew), so every node splits a window
 * over the same set. */
#define FC_FLEET_NODE_DELAY_MS 2000
#define FC_FLEET_NODES_MAX     1023
#define FC_FLEET_WEIGHT_ONE    1000000 /* a weight of 1, in micro-units */
/* A closed row is kept this long past its end (agents on a day's window
 * may still split by it), then purged with the expired bans. */
#define FC_FLEET_NODES_KEEP_MS (86400000 + FC_FLEET_NODE_DELAY_MS)

struct fc_fleet_node {
	char name[FC_NODE_NAME_MAX + 1];
	uint32_t no;     /* 1..FC_FLEET_NODES_MAX, the same for a name throughout */
	uint32_t weight; /* 1..FC_FLEET_WEIGHT_ONE */
	int64_t since;   /* unix ms from which windows use the row */
	int64_t until;   /* unix ms from which they do not; 0: open */
};

/* In the writers' transaction: node name weighs weight from now_ms +
 * FC_FLEET_NODE_DELAY_MS on (0: it leaves the set then). FC_STORE_REFUSED
 * when all FC_FLEET_NODES_MAX numbers are taken. */
int fc_store_fleet_node_set(struct fc_store *st, const char *name, uint32_t weight, int64_t now_ms,
			    struct fc_err *err);
/* The set at at_ms, by number. The caller frees *rows. */
int fc_store_fleet_nodes_at(struct fc_store *st, int64_t at_ms, struct fc_fleet_node **rows, size_t *n,
			    struct fc_err *err);
/* Every row, history too, by number then since. The caller frees *rows. */
int fc_store_fleet_nodes_all(struct fc_store *st, struct fc_fleet_node **rows, size_t *n, struct fc_err *err);
/* How many policies are the fleet's (--fleet). */
int fc_store_fleet_policies(struct fc_store *st, size_t *n, struct fc_err *err);
/* Deletes the rows that ended at or before before_ms; *n how many. */
int fc_store_fleet_nodes_purge(struct fc_store *st, int64_t before_ms, size_t *n, struct fc_err *err);

/* A number that changes when another connection commits: SQLite's
 * data_version, or how many NOTIFYs PostgreSQL sent (the first call LISTENs). */
int fc_store_data_version(struct fc_store *st, int64_t *v, struct fc_err *err);
/* A descriptor to poll for such changes (PostgreSQL's socket); -1: none. */
int fc_store_watch_fd(struct fc_store *st);

/* Deletes every ban by hand, address and uid (freqctl import replaces them). */
int fc_store_bans_clear(struct fc_store *st, struct fc_err *err);
/* Removes what expired at or before now: bans (address and uid; *bans how
 * many) and ban sets (*sets), with their members; *next the unix time after
 * now at which the next ban expires or set lapses (0: none). One query when
 * nothing expired, the usual case (a round trip counts on PostgreSQL). */
int fc_store_purge(struct fc_store *st, int64_t now, size_t *bans, size_t *sets, int64_t *next, struct fc_err *err);

/*
 * Ban sets: named lists of bans (block-list feeds), each replaced whole by
 * freqctl ban import --set. An address stays banned while any source holds
 * it (by hand, escalation, any set); ban del lifts the ban by hand only.
 */
#define FC_SET_NAME_MAX 64

struct fc_ban_set {
	uint32_t id; /* 1..FC_MAX_SETS: the index of its drop counters at XDP/TC */
	char name[FC_SET_NAME_MAX + 1];
	int64_t created;
	int64_t updated; /* the last import */
	int64_t expires; /* the whole set lapses then; 0 = never */
	uint64_t size;   /* members, as the last import left them */
};

/* A name as sets take it: 1 to FC_SET_NAME_MAX of A-Z a-z 0-9 . _ -, not
 * starting with . or -. */
int fc_set_name_check(const char *name, struct fc_err *err);
/* The live set called name, if any. */
int fc_store_set_get(struct fc_store *st, const char *name, int64_t now, struct fc_ban_set *set, bool *found,
		     struct fc_err *err);
/* Live sets, by id. The caller frees *rows. */
int fc_store_set_list(struct fc_store *st, int64_t now, struct fc_ban_set **rows, size_t *n, struct fc_err *err);
/* Creates (set->id 0: an id is given, FC_STORE_REFUSED when all are taken)
 * or updates the set. */
int fc_store_set_put(struct fc_store *st, struct fc_ban_set *set, struct fc_err *err);
/* Deletes the set and its members. */
int fc_store_set_del(struct fc_store *st, uint32_t id, struct fc_err *err);
/* Deletes the sets that lapsed at or before now, with their members; *n how many sets. */
int fc_store_set_purge(struct fc_store *st, int64_t now, size_t *n, struct fc_err *err);
/* A set's members, in address order. The caller frees *keys. */
int fc_store_set_keys(struct fc_store *st, uint32_t id, struct fc_prefix **keys, size_t *n, struct fc_err *err);
/* The same as ban rows (ban list --set). */
int fc_store_set_bans(struct fc_store *st, uint32_t id, int64_t now, struct fc_ban_row **rows, size_t *n,
		      struct fc_err *err);
/* Adds keys to set id (those in it stay as they are), or takes them out. */
int fc_store_set_members_put(struct fc_store *st, uint32_t id, const struct fc_prefix *keys, size_t n,
			     int64_t created, struct fc_store_progress *prog, struct fc_err *err);
int fc_store_set_members_del(struct fc_store *st, uint32_t id, const struct fc_prefix *keys, size_t n,
			     struct fc_store_progress *prog, struct fc_err *err);
/* The names of the live sets holding exactly p, comma-separated in names (cut at size). */
int fc_store_set_holders(struct fc_store *st, const struct fc_prefix *p, int64_t now, char *names, size_t size,
			 struct fc_err *err);

/*
 * The change log: every write to the store records, in its transaction,
 * what it changed, numbered by a seq that grows in commit order. A
 * publisher that knows the seq it published applies only what came after.
 */
struct fc_store_log {
	uint64_t id;     /* the store's identity: random, made with its schema */
	uint64_t head;   /* the seq of the last change */
	uint64_t pruned; /* changes up to this seq are gone: a publisher behind it starts over */
};

int fc_store_log_head(struct fc_store *st, struct fc_store_log *log, struct fc_err *err);
/* Forgets old changes: keeps the last FC_STORE_LOG_KEEP, once twice as many piled up. */
#define FC_STORE_LOG_KEEP (1u << 18)
int fc_store_log_prune(struct fc_store *st, const struct fc_store_log *log, struct fc_err *err);

/* What holds one address key (a ban's, an ip=ADDR[/LEN] policy's): each a
 * row, sorted by key. */
#define FC_SRC_POLICY (-1) /* the policy on the key */
#define FC_SRC_KEY    (-2) /* the key alone: it changed (one such row per changed key) */
struct fc_key_rule {
	struct fc_prefix p;
	int32_t src;     /* 0: a ban by hand or escalated; 1..FC_MAX_SETS: that set's; or FC_SRC_* */
	int64_t expires; /* a ban's, unix seconds; 0 = never (always so for a set's) */
	uint32_t slot;   /* a policy's */
	bool http;       /* a policy for nginx (--layer http), none of the kernel's */
};

struct fc_uid_change {
	char uid[FC_SHM_MAX_VALUE + 1];
	bool live;       /* banned now */
	int64_t expires;
};

/* A policy that changed, one of the slots it had or has, and what holds that slot now. */
struct fc_policy_change {
	uint32_t id, slot;
	bool star;  /* the change was on match ip=* */
	bool l7;    /* the policy, before or after the change, was nginx's */
	bool ip_stale; /* its row's ip_* columns disagree with its match (a script wrote it) */
	bool found; /* a valid policy holds the slot: row */
	struct fc_policy_row row;
};

/* Everything that changed in (from, to], as the store holds it at now. */
struct fc_delta {
	struct fc_key_rule *keys; /* sorted by key, then source: each key's FC_SRC_KEY row first */
	size_t nkeys;
	struct fc_uid_change *uids;
	size_t nuids;
	struct fc_policy_change *pols;
	size_t npols;
	uint32_t *sets; /* sets made or deleted: their drop counters start afresh */
	size_t nsets;
	bool weight;    /* the node's row changed (its weight scales every policy) */
	bool fleet;     /* the fleet's node set changed (fleet_nodes): fleet policies' shares */
	bool ip_stale;  /* a changed policy's ip_* columns disagree with its match */
	bool reset;     /* a table was truncated: only publishing everything can tell */
	bool allows;    /* an allow entry changed: it is folded into every entry it covers, in
			 * both layers; rare, so published by publishing everything */
};

int fc_store_delta(struct fc_store *st, uint64_t from, uint64_t to, int64_t now, const char *node,
		   struct fc_delta *d, struct fc_err *err);
void fc_delta_free(struct fc_delta *d);
/* Whether a change in (from, to] was a policy's (or the store's reset). */
int fc_store_policies_changed(struct fc_store *st, uint64_t from, uint64_t to, bool *changed, struct fc_err *err);

/* At least the rules (as in struct fc_delta, no FC_SRC_KEY rows) on the
 * prefixes of p's family (exact addresses aside) that cover p or that p
 * covers, at now, in no order and maybe twice (the caller keeps what it
 * needs). The caller frees *rows. */
int fc_store_prefix_rules(struct fc_store *st, const struct fc_prefix *p, int64_t now, struct fc_key_rule **rows,
			  size_t *n, struct fc_err *err);
/* The policies the kernel's maps hold on IPv4 addresses inside p (rows as
 * fc_store_prefix_rules'). The caller frees *rows. */
int fc_store_exact_policies4(struct fc_store *st, const struct fc_prefix *p, struct fc_key_rule **rows, size_t *n,
			      struct fc_err *err);
/* Whether a rule the kernel's maps hold is on a prefix of p's family and
 * length, at now. */
int fc_store_prefix_len_used(struct fc_store *st, const struct fc_prefix *p, int64_t now, bool *used,
			     struct fc_err *err);
/* Of the n IPv4 /24s p24 (a.b.c as a << 16 | b << 8 | c), the indexes
 * (ascending, into a malloc'ed *held) of those a rule the kernel's exact
 * maps hold is on an address inside, at now. One query for all. */
int fc_store_exact_in(struct fc_store *st, const uint32_t *p24, size_t n, int64_t now, size_t **held,
		      size_t *nheld, struct fc_err *err);
/* Makes policy p's ip_* columns say what its match does (they find it by
 * address; a script writing a row may not fill them). */
int fc_store_policy_ip_fix(struct fc_store *st, const struct fc_policy_spec *p, struct fc_err *err);
/* Puts right the ip_* columns of every policy row a script left saying
 * something else than its match: the queries that find rules on an address
 * range read them (fc_store_exact_in, the prefix lengths in use). */
int fc_store_policy_ip_check(struct fc_store *st, struct fc_err *err);
/* The ip=* policy, if any. */
int fc_store_policy_star(struct fc_store *st, struct fc_policy_row *row, bool *found, struct fc_err *err);

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
