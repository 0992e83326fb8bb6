/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The store's database: a SQLite file (one machine) or PostgreSQL (a fleet,
 * DSN postgresql://...). fc_store.c holds the queries, written once in the
 * SQL both understand (?N parameters, ON CONFLICT, RETURNING); a backend
 * prepares and runs them, owns its schema and tells when another connection
 * changed the data.
 */
#ifndef FC_DB_H
#define FC_DB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fc_error.h"
#include "fc_maps.h"

/* The SQL CHECK on a policy's slot, made from the one slot constant. */
#define FC_SQL_STR_(x) #x
#define FC_SQL_STR(x) FC_SQL_STR_(x)
#define FC_SQL_SLOT_CHECK "CHECK (slot BETWEEN 1 AND " FC_SQL_STR(FC_MAX_POLICIES) ")"

/* The indexes by which fc_store.c finds the rules on the prefixes around a
 * prefix (its INDEXED BY names them), and the uid bans that expire: the
 * same in both backends' schemas (SQLite 10, PostgreSQL 6). */
#define FC_SQL_POLICY_INDEXES                                                                                \
	"CREATE INDEX policies_ip ON policies (ip_family, ip_addr, ip_len) WHERE ip_family IS NOT NULL;"      \
	"CREATE INDEX policies_pfx4 ON policies (ip_addr, ip_len) WHERE ip_family = 4 AND ip_len < 32;"      \
	"CREATE INDEX policies_pfx6 ON policies (ip_addr, ip_len) WHERE ip_family = 6 AND ip_len < 128;"
#define FC_SQL_RULE_INDEXES                                                                                  \
	FC_SQL_POLICY_INDEXES                                                                                \
	"CREATE INDEX bans_pfx4 ON bans (addr, len) WHERE family = 4 AND len < 32;"                          \
	"CREATE INDEX bans_pfx6 ON bans (addr, len) WHERE family = 6 AND len < 128;"                         \
	"CREATE INDEX uid_bans_expires ON uid_bans (expires) WHERE expires IS NOT NULL;"
#define FC_SQL_SET_INDEXES                                                                                   \
	"CREATE INDEX set_bans_pfx4 ON set_bans (addr, len) WHERE family = 4 AND len < 32;"                  \
	"CREATE INDEX set_bans_pfx6 ON set_bans (addr, len) WHERE family = 6 AND len < 128;"

/* What the change log records of a row of each logged table, in both
 * backends' triggers: the columns, and their values from row R (OLD or NEW). */
#define FC_LOG_COLS_KEY      "(kind, family, addr, len)"
#define FC_LOG_ROW_KEY(R)    "('ban', " R ".family, " R ".addr, " R ".len)"
#define FC_LOG_COLS_UID      "(kind, txt)"
#define FC_LOG_ROW_UID(R)    "('uid', " R ".uid)"
#define FC_LOG_COLS_POLICY   "(kind, family, addr, len, txt, id, slot, layer)"
#define FC_LOG_ROW_POLICY(R) "('policy', " R ".ip_family, " R ".ip_addr, " R ".ip_len, " R ".match, " R ".id, " R \
			     ".slot, " R ".layer)"
#define FC_LOG_COLS_ALLOW    "(kind, family, addr, len, txt)"
#define FC_LOG_ROW_ALLOW(R)  "('allow', " R ".family, " R ".addr, " R ".len, " R ".uid)"
#define FC_LOG_COLS_NODE     "(kind, txt)"
#define FC_LOG_ROW_NODE(R)   "('node', " R ".name)"
#define FC_LOG_COLS_FLEET    "(kind, txt)"
#define FC_LOG_ROW_FLEET(R)  "('fleet', " R ".name)"

/*
 * A policy's layer as the store keeps it (since the round's migration):
 * always written out, xdp or http, so that (match, layer) is the key: one
 * ip=* at XDP/TC and one in nginx may stand side by side. A match with a
 * dimension besides ip= is nginx's only; an ip=-only match is the kernel's
 * unless it says http. FC_SQL_LAYER_OF(layer, match) is the layer a row of
 * an older schema meant (NULL or 'auto': as its match says).
 */
#define FC_SQL_IP_ONLY(m) "(substr(" m ", 1, 3) = 'ip=' AND " m " NOT LIKE '%,%')"
#define FC_SQL_LAYER_CHECK "CHECK (layer = 'http' OR (layer = 'xdp' AND " FC_SQL_IP_ONLY("match") "))"
#define FC_SQL_LAYER_OF(l, m) \
	"CASE WHEN " l " = 'http' OR NOT " FC_SQL_IP_ONLY(m) " THEN 'http' ELSE 'xdp' END"

/* The fleet's node set, window by window, with its history: a fleet
 * policy's rate is split over the nodes of each window (--fleet). The same
 * in both backends. */
#define FC_SQL_FLEET_NODES                                                                                   \
	"CREATE TABLE fleet_nodes ("                                                                           \
	"  name   text    NOT NULL,"                                                                           \
	"  no     integer NOT NULL CHECK (no BETWEEN 1 AND 1023)," /* stable per name */                     \
	"  weight bigint  NOT NULL CHECK (weight BETWEEN 1 AND 1000000)," /* micro-units of nodes.weight */   \
	"  since  bigint  NOT NULL," /* unix ms from which windows use this row */                           \
	"  until  bigint," /* unix ms from which they do not; NULL: open */                                   \
	"  PRIMARY KEY (name, since));"

/* The fleet's policies, found without reading every policy (a publish asks
 * whether there are any). */
#define FC_SQL_FLEET_INDEX "CREATE INDEX policies_fleet ON policies (id) WHERE fleet = 1;"

/*
 * A batch of address keys as one BLOB parameter, which the SQL reads as rows
 * (family, addr, len) from fc_keys(?N): FC_KEY_BYTES a key, its family (4
 * or 6), its prefix length, then 16 address bytes (IPv4 in the first 4), as
 * struct fc_prefix lays them out, so that an array of them is passed as it
 * is. SQLite has fc_keys as a table-valued function (fc_db_sqlite_keys.c);
 * PostgreSQL's dialect spells fc_keys(?1) as a subquery (fc_db_pg.c). The
 * store checks each key before it is sent (fc_store.c).
 */
#define FC_KEY_BYTES 18

enum fc_val_type {
	FC_VAL_NULL,
	FC_VAL_INT,
	FC_VAL_REAL,
	FC_VAL_TEXT,
	FC_VAL_BLOB,
};

/* A query parameter. */
struct fc_val {
	enum fc_val_type type;
	int64_t i;
	double r;
	const void *p; /* text (NUL-terminated) or blob */
	size_t len;    /* blob */
};

#define FC_INT(v)  ((struct fc_val){ .type = FC_VAL_INT, .i = (int64_t)(v) })
#define FC_REAL(v) ((struct fc_val){ .type = FC_VAL_REAL, .r = (v) })
#define FC_TEXT(v) ((struct fc_val){ .type = FC_VAL_TEXT, .p = (v) })
#define FC_BLOB(v, n) ((struct fc_val){ .type = FC_VAL_BLOB, .p = (v), .len = (n) })
#define FC_NULL    ((struct fc_val){ .type = FC_VAL_NULL })
/* v if nonzero, else SQL NULL. */
#define FC_INT_OR_NULL(v) ((v) ? FC_INT(v) : FC_NULL)

struct fc_db;

/* Every call that fails fills err with "store NAME: what: reason". */
struct fc_db_ops {
	/* Connects, creating (create) or refusing a missing store, brings the
	 * schema up to date; the n statements sql[] (which outlive it) are
	 * prepared now or on first use. */
	int (*open)(const char *dsn, const char *name, bool create, const char *const *sql, int n,
		    struct fc_db **out, struct fc_err *err);
	void (*close)(struct fc_db *db);
	/* One writer at a time, across processes and machines. */
	int (*begin)(struct fc_db *db, struct fc_err *err);
	int (*commit)(struct fc_db *db, struct fc_err *err);
	void (*rollback)(struct fc_db *db);
	/* Runs statement id; its rows are then read with next and col_*, until done. */
	int (*run)(struct fc_db *db, int id, const struct fc_val *args, int nargs, const char *what,
		   struct fc_err *err);
	/* 1: a row is there; 0: no more rows; -1: error. */
	int (*next)(struct fc_db *db, int id, const char *what, struct fc_err *err);
	bool (*col_null)(struct fc_db *db, int id, int col);
	int64_t (*col_int)(struct fc_db *db, int id, int col); /* 0 for NULL */
	double (*col_real)(struct fc_db *db, int id, int col);
	const char *(*col_text)(struct fc_db *db, int id, int col); /* NULL for NULL */
	const void *(*col_blob)(struct fc_db *db, int id, int col, size_t *len);
	int64_t (*changes)(struct fc_db *db, int id); /* rows the last run changed */
	void (*done)(struct fc_db *db, int id);
	/* A number that changes when another connection commits a change. */
	int (*version)(struct fc_db *db, int64_t *v, struct fc_err *err);
	/* A descriptor that becomes readable on such a change; -1: none. */
	int (*watch_fd)(struct fc_db *db);
};

/* The schema version a store is brought up to: 0, its backend's last; or
 * an earlier one, for a test that makes a store as an older release did. */
extern int fc_db_schema_upto;

struct fc_db {
	const struct fc_db_ops *ops;
	char *name; /* for messages: the path, or the DSN without its password */
};

extern const struct fc_db_ops fc_db_sqlite;
extern const struct fc_db_ops fc_db_pg;

#endif /* FC_DB_H */
