// SPDX-License-Identifier: BSD-2-Clause
/*
 * The PostgreSQL backend of the store, for a fleet: every node's agent reads
 * the same database. A statement trigger on each table sends NOTIFY freqctl
 * at commit, so agents LISTEN instead of polling. Writers serialise on a
 * transaction-scoped advisory lock, as SQLite's BEGIN IMMEDIATE does.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <libpq-fe.h>

#include "fc_db.h"
#include "fc_dl.h"

#define FC_PG_LOCK_FN "pg_advisory_xact_lock(7382915460172)" /* any constant, freqctl's own */
#define FC_PG_LOCK    "SELECT " FC_PG_LOCK_FN
#define FC_PG_CHANNEL "freqctl"
#define FC_PG_ARGS    160 /* the most a statement takes: an IPv6 prefix's ancestors */


/* libpq, loaded when a PostgreSQL store is first opened (fc_dl.h): a
 * command on a SQLite store does not load it, nor what it pulls in. */
#define FC_PQ_FUNCS(X) \
	X(PQclear) X(PQcmdTuples) X(PQconnectdbParams) X(PQconsumeInput) X(PQerrorMessage) X(PQexec) \
	X(PQexecPrepared) X(PQfinish) X(PQfreemem) X(PQgetisnull) X(PQgetvalue) X(PQnotifies) X(PQntuples) \
	X(PQprepare) X(PQresultErrorMessage) X(PQresultStatus) X(PQsetNoticeProcessor) X(PQsocket) \
	X(PQstatus) X(PQtransactionStatus) X(PQunescapeBytea)
static struct {
	FC_PQ_FUNCS(FC_DL_PTR)
} fc_pq;
static const char *const fc_pq_names[] = { FC_PQ_FUNCS(FC_DL_NAME) };
static struct fc_dl fc_pq_dl = FC_DL_INIT("libpq.so.5", fc_pq_names, fc_pq);

/* Schema versions; version i + 1 is reached by fc_pg_schema[i]. */
static const char fc_pg_schema_v1[] =
	"CREATE TABLE bans ("
	"  family    smallint NOT NULL CHECK (family IN (4, 6)),"
	"  addr      bytea    NOT NULL," /* 4 or 16 bytes, network order, host bits zero */
	"  len       smallint NOT NULL,"
	"  created   bigint   NOT NULL,"
	"  expires   bigint,"            /* NULL = never */
	"  by_policy bigint,"            /* NULL: by hand */
	"  PRIMARY KEY (family, addr, len));"
	"CREATE INDEX bans_expires ON bans (expires) WHERE expires IS NOT NULL;"
	"CREATE TABLE policies ("
	"  id      bigint PRIMARY KEY CHECK (id BETWEEN 1 AND 4294967295),"
	"  match   text   NOT NULL UNIQUE,"
	"  rates   text   NOT NULL,"
	"  burst   bigint,"
	"  algo    text   NOT NULL CHECK (algo IN ('gcra', 'window')),"
	"  action  text   NOT NULL CHECK (action IN ('drop', 'log', 'delay')),"
	"  count   text   NOT NULL CHECK (count IN ('packets', 'bytes', 'syn')),"
	"  new_sources bigint,"
	"  slot    bigint NOT NULL UNIQUE " FC_SQL_SLOT_CHECK ","
	"  epoch   bigint NOT NULL,"
	"  created bigint NOT NULL,"
	"  updated bigint NOT NULL,"
	"  delay_burst bigint,"
	"  escalate text,"
	"  ban_ttl bigint);"
	"CREATE TABLE meta (key text PRIMARY KEY, value bigint NOT NULL);"
	"INSERT INTO meta VALUES ('epoch', 0);"
	"CREATE TABLE free_slots (slot bigint PRIMARY KEY);"
	"CREATE TABLE uid_bans (uid text PRIMARY KEY, created bigint NOT NULL, expires bigint);"
	"CREATE TABLE nodes (name text PRIMARY KEY,"
	"  weight double precision NOT NULL CHECK (weight > 0 AND weight <= 1));"
	"CREATE FUNCTION freqctl_notify() RETURNS trigger LANGUAGE plpgsql AS"
	"  $$BEGIN PERFORM pg_notify('" FC_PG_CHANNEL "', TG_TABLE_NAME); RETURN NULL; END$$;"
/* Per row, so a statement that changed nothing (the agent's own purge of
 * expired bans, mostly) wakes no one; PostgreSQL sends one NOTIFY per
 * transaction however many rows raised it. */
#define FC_PG_TRIGGER(t)                                                                        \
	"CREATE TRIGGER " t "_notify AFTER INSERT OR UPDATE OR DELETE ON " t " "                 \
	"FOR EACH ROW EXECUTE FUNCTION freqctl_notify();"                                        \
	"CREATE TRIGGER " t "_truncate AFTER TRUNCATE ON " t " "                                 \
	"FOR EACH STATEMENT EXECUTE FUNCTION freqctl_notify();"
	FC_PG_TRIGGER("bans") FC_PG_TRIGGER("policies") FC_PG_TRIGGER("uid_bans") FC_PG_TRIGGER("nodes")
	"INSERT INTO meta VALUES ('schema', 0);";

/* Per-key policies; ip=-only policies in nginx. */
static const char fc_pg_schema_v2[] =
	"ALTER TABLE policies ADD COLUMN layer text CHECK (layer IN ('auto', 'xdp', 'http'));"
	"ALTER TABLE policies ADD COLUMN max_keys bigint;"
	"ALTER TABLE policies ADD COLUMN new_keys bigint;";

/* --algo sliding. */
static const char fc_pg_schema_v3[] =
	"ALTER TABLE policies DROP CONSTRAINT policies_algo_check;"
	"ALTER TABLE policies ADD CONSTRAINT policies_algo_check CHECK (algo IN ('gcra', 'window', 'sliding'));";

/* --concurrency: requests in flight at once (NULL: no cap). */
static const char fc_pg_schema_v4[] = "ALTER TABLE policies ADD COLUMN concurrency bigint;";

/* --warmup: seconds; NULL = none. */
static const char fc_pg_schema_v5[] = "ALTER TABLE policies ADD COLUMN warmup bigint;";

/* Allow lists (as SQLite's fc_schema_allows; its version is its place in
 * fc_pg_schema). */
static const char fc_pg_schema_allows[] =
	"CREATE TABLE allows ("
	"  family  smallint NOT NULL CHECK (family IN (0, 4, 6)),"
	"  addr    bytea    NOT NULL,"
	"  len     smallint NOT NULL,"
	"  uid     text     NOT NULL,"
	"  created bigint   NOT NULL,"
	"  expires bigint,"
	"  note    text,"
	"  PRIMARY KEY (family, addr, len, uid));"
	FC_PG_TRIGGER("allows");

/* --override: 1; NULL = not (as SQLite's fc_schema_override). */
static const char fc_pg_schema_override[] = "ALTER TABLE policies ADD COLUMN override smallint CHECK (override = 1);";

/* The change log and ban sets (as SQLite's fc_schema_log; after the allows
 * and override steps). Every statement
 * that changes a logged table first takes the writers' lock, so changes are
 * numbered in commit order whoever writes them (nextval is not ordered by
 * commit otherwise); a TRUNCATE logs a reset: publishers start over. */
static const char fc_pg_schema_log[] =
	"CREATE TABLE changes ("
	"  seq    bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,"
	"  kind   text NOT NULL,"
	"  family smallint, addr bytea, len smallint,"
	"  txt    text,"
	"  id     bigint,"
	"  slot   bigint,"
	"  layer  text);"
	"INSERT INTO meta VALUES ('store_id', floor(random() * 9007199254740991)::bigint | 1),"
	"  ('log_pruned', 0), ('policy_ip', 0);"
	"ALTER TABLE policies ADD COLUMN ip_family smallint, ADD COLUMN ip_addr bytea, ADD COLUMN ip_len smallint;"
	FC_SQL_RULE_INDEXES
	"CREATE TABLE ban_sets ("
	"  id      bigint PRIMARY KEY CHECK (id BETWEEN 1 AND " FC_SQL_STR(FC_MAX_SETS) "),"
	"  name    text   NOT NULL UNIQUE,"
	"  created bigint NOT NULL,"
	"  updated bigint NOT NULL,"
	"  expires bigint,"
	"  size    bigint NOT NULL DEFAULT 0);"
	"CREATE TABLE set_bans ("
	"  family  smallint NOT NULL CHECK (family IN (4, 6)),"
	"  addr    bytea    NOT NULL,"
	"  len     smallint NOT NULL,"
	"  set_id  bigint   NOT NULL,"
	"  created bigint   NOT NULL,"
	"  PRIMARY KEY (family, addr, len, set_id));"
	"CREATE INDEX set_bans_set ON set_bans (set_id, family, addr, len);"
	FC_SQL_SET_INDEXES
	"CREATE FUNCTION freqctl_lock() RETURNS trigger LANGUAGE plpgsql AS"
	"  $$BEGIN PERFORM " FC_PG_LOCK_FN "; RETURN NULL; END$$;"
	"CREATE FUNCTION freqctl_log_reset() RETURNS trigger LANGUAGE plpgsql AS"
	"  $$BEGIN INSERT INTO changes (kind) VALUES ('reset'); RETURN NULL; END$$;"
/* A row function: logs OLD (update, delete) and NEW (insert, update) as vals. */
#define FC_PG_LOG_FN(name, cols, old, new)                                                                 \
	"CREATE FUNCTION freqctl_log_" name "() RETURNS trigger LANGUAGE plpgsql AS $$BEGIN"                \
	"  IF TG_OP <> 'INSERT' THEN INSERT INTO changes " cols " VALUES " old "; END IF;"                 \
	"  IF TG_OP <> 'DELETE' THEN INSERT INTO changes " cols " VALUES " new "; END IF;"                 \
	"  RETURN NULL; END$$;"
#define FC_PG_LOG_FN_OF(name, what) FC_PG_LOG_FN(name, FC_LOG_COLS_##what, FC_LOG_ROW_##what("OLD"), FC_LOG_ROW_##what("NEW"))
	FC_PG_LOG_FN_OF("key", KEY) FC_PG_LOG_FN_OF("uid", UID) FC_PG_LOG_FN_OF("allow", ALLOW)
	FC_PG_LOG_FN_OF("policy", POLICY)
	FC_PG_LOG_FN_OF("node", NODE)
	"CREATE FUNCTION freqctl_log_set() RETURNS trigger LANGUAGE plpgsql AS $$BEGIN"
	"  INSERT INTO changes (kind, txt, id) VALUES ('set', CASE TG_OP WHEN 'INSERT' THEN 'new' WHEN 'UPDATE'"
	"    THEN 'upd' ELSE 'del' END, CASE TG_OP WHEN 'DELETE' THEN OLD.id ELSE NEW.id END);"
	"  RETURN NULL; END$$;"
#define FC_PG_LOG(t, fn)                                                                                  \
	"CREATE TRIGGER " t "_lock BEFORE INSERT OR UPDATE OR DELETE OR TRUNCATE ON " t " "                 \
	"FOR EACH STATEMENT EXECUTE FUNCTION freqctl_lock();"                                              \
	"CREATE TRIGGER " t "_log AFTER INSERT OR UPDATE OR DELETE ON " t " "                              \
	"FOR EACH ROW EXECUTE FUNCTION freqctl_log_" fn "();"                                             \
	"CREATE TRIGGER " t "_reset AFTER TRUNCATE ON " t " FOR EACH STATEMENT EXECUTE FUNCTION freqctl_log_reset();"
	FC_PG_LOG("bans", "key") FC_PG_LOG("set_bans", "key") FC_PG_LOG("uid_bans", "uid") FC_PG_LOG("allows", "allow")
	FC_PG_LOG("policies", "policy") FC_PG_LOG("nodes", "node") FC_PG_LOG("ban_sets", "set")
	FC_PG_TRIGGER("set_bans") FC_PG_TRIGGER("ban_sets");

/* The round of issues 28 and 29 (as SQLite's fc_schema_round, which says
 * why): the layer written out and (match, layer) the key, show_keys, fleet,
 * fleet_nodes. The rows' layers are filled in with the log's trigger off,
 * as SQLite's copy logs nothing: their meaning is the same. */
static const char fc_pg_schema_round[] =
	"ALTER TABLE policies DISABLE TRIGGER policies_log;"
	"UPDATE policies SET layer = " FC_SQL_LAYER_OF("layer", "match") ";"
	"ALTER TABLE policies ENABLE TRIGGER policies_log;"
	"ALTER TABLE policies ALTER COLUMN layer SET NOT NULL,"
	"  DROP CONSTRAINT policies_layer_check, ADD CONSTRAINT policies_layer_check " FC_SQL_LAYER_CHECK ","
	"  DROP CONSTRAINT policies_match_key, ADD CONSTRAINT policies_match_layer_key UNIQUE (match, layer),"
	"  ADD COLUMN show_keys smallint CHECK (show_keys IN (0, 1)),"
	"  ADD COLUMN fleet smallint CHECK (fleet = 1);"
	FC_SQL_FLEET_INDEX
	FC_SQL_FLEET_NODES
	FC_PG_LOG_FN_OF("fleet", FLEET)
	FC_PG_LOG("fleet_nodes", "fleet")
	FC_PG_TRIGGER("fleet_nodes");

static const char *const fc_pg_schema[] = { fc_pg_schema_v1, fc_pg_schema_v2, fc_pg_schema_v3, fc_pg_schema_v4,
					    fc_pg_schema_v5, fc_pg_schema_allows, fc_pg_schema_override,
					    fc_pg_schema_log, fc_pg_schema_round };
#define FC_PG_SCHEMA_VERSION ((int64_t)(sizeof(fc_pg_schema) / sizeof(fc_pg_schema[0])))

struct fc_db_pg {
	struct fc_db db;
	PGconn *conn;
	const char *const *sql;
	PGresult **res; /* per statement: the last run's result */
	int *row;       /* -2: not prepared yet */
	int nstmt;
	unsigned char *blob; /* the last col_blob, decoded */
	bool listening;
	int64_t notifies;
};

#define FC_PG(d) ((struct fc_db_pg *)(d))

/* libpq's messages end in a newline and may span lines: keep the first. */
static int fc_pg_fail(struct fc_db_pg *d, struct fc_err *err, const char *what)
{
	char msg[FC_ERR_LEN];

	snprintf(msg, sizeof(msg), "%s", d->conn ? fc_pq.PQerrorMessage(d->conn) : "out of memory");
	msg[strcspn(msg, "\n")] = '\0';
	return fc_err_set(err, "store %s: %s: %s", d->db.name, what, msg);
}

/* The same, for a failed statement: its own message says more than the connection's. */
static int fc_pg_result_fail(struct fc_db_pg *d, const PGresult *r, const char *what, struct fc_err *err)
{
	const char *m = r ? fc_pq.PQresultErrorMessage(r) : "";
	char msg[FC_ERR_LEN];

	snprintf(msg, sizeof(msg), "%s", *m ? m : fc_pq.PQerrorMessage(d->conn));
	msg[strcspn(msg, "\n")] = '\0';
	return fc_err_set(err, "store %s: %s: %s", d->db.name, what, msg);
}

/* Runs sql (one or more statements, no parameters). */
static int fc_pg_exec(struct fc_db_pg *d, const char *sql, const char *what, struct fc_err *err)
{
	PGresult *r = fc_pq.PQexec(d->conn, sql);
	ExecStatusType s = fc_pq.PQresultStatus(r);
	int rc = s == PGRES_COMMAND_OK || s == PGRES_TUPLES_OK ? 0 : -1;

	if (rc < 0)
		fc_pg_result_fail(d, r, what, err);
	fc_pq.PQclear(r);
	return rc;
}

static void fc_pg_rollback(struct fc_db *db)
{
	struct fc_db_pg *d = FC_PG(db);

	if (fc_pq.PQtransactionStatus(d->conn) != PQTRANS_IDLE)
		fc_pq.PQclear(fc_pq.PQexec(d->conn, "ROLLBACK"));
}

static int fc_pg_begin(struct fc_db *db, struct fc_err *err)
{
	if (fc_pg_exec(FC_PG(db), "BEGIN; " FC_PG_LOCK, "starting a transaction", err) < 0) {
		fc_pg_rollback(db);
		return -1;
	}
	return 0;
}

static int fc_pg_commit(struct fc_db *db, struct fc_err *err)
{
	if (fc_pg_exec(FC_PG(db), "COMMIT", "committing", err) < 0) {
		fc_pg_rollback(db);
		return -1;
	}
	return 0;
}

/* Runs a one-value query: *v its value, -1 for NULL or no row. */
static int fc_pg_value(struct fc_db_pg *d, const char *sql, int64_t *v, const char *what, struct fc_err *err)
{
	PGresult *r = fc_pq.PQexec(d->conn, sql);
	int rc = fc_pq.PQresultStatus(r) == PGRES_TUPLES_OK ? 0 : fc_pg_result_fail(d, r, what, err);

	*v = rc == 0 && fc_pq.PQntuples(r) == 1 && !fc_pq.PQgetisnull(r, 0, 0) ? strtoll(fc_pq.PQgetvalue(r, 0, 0), NULL, 10) : -1;
	fc_pq.PQclear(r);
	return rc;
}

/* The schema version, 0 when the database has no freqctl tables yet. */
static int fc_pg_schema_version(struct fc_db_pg *d, int64_t *v, struct fc_err *err)
{
	const char *what = "reading schema version";

	/* A scan of the catalog, not to_regclass(): its cache may predate the
	 * commit of a node that created the schema while we waited for the lock. */
	if (fc_pg_value(d, "SELECT 1 FROM pg_tables WHERE schemaname = current_schema() AND tablename = 'meta'", v,
			what, err) < 0)
		return -1;
	if (*v < 0) {
		*v = 0;
		return 0;
	}
	if (fc_pg_value(d, "SELECT value FROM meta WHERE key = 'schema'", v, what, err) < 0)
		return -1;
	if (*v < 0)
		return fc_err_set(err, "store %s: a table meta without freqctl's schema row: not a freqctl database",
				  d->db.name);
	return 0;
}

static int fc_pg_migrate(struct fc_db_pg *d, bool create, struct fc_err *err)
{
	char sql[96];
	int64_t v, upto = fc_db_schema_upto > 0 && fc_db_schema_upto < FC_PG_SCHEMA_VERSION ? fc_db_schema_upto :
											      FC_PG_SCHEMA_VERSION;

	if (fc_pg_schema_version(d, &v, err) < 0)
		return -1;
	if (v > FC_PG_SCHEMA_VERSION)
		return fc_err_set(err, "store %s: schema version %lld is newer than this freqctl knows (%lld)",
				  d->db.name, (long long)v, (long long)FC_PG_SCHEMA_VERSION);
	if (v >= upto)
		return 0;
	if (!v && !create)
		return fc_err_set(err, "store %s: no freqctl schema in this database (any freqctl command that "
				       "writes creates it)", d->db.name);
	/* Two nodes starting at once: the second waits, then finds it done. */
	if (fc_pg_begin(&d->db, err) < 0 || fc_pg_schema_version(d, &v, err) < 0)
		goto fail;
	for (; v < upto; v++) {
		snprintf(sql, sizeof(sql), "UPDATE meta SET value = %lld WHERE key = 'schema'", (long long)v + 1);
		if (fc_pg_exec(d, fc_pg_schema[v], "creating the schema", err) < 0 ||
		    fc_pg_exec(d, sql, "creating the schema", err) < 0)
			goto fail;
	}
	return fc_pg_commit(&d->db, err);
fail:
	fc_pg_rollback(&d->db);
	return -1;
}

/* s with every from replaced by to (malloc'd; NULL if out of memory). */
static char *fc_pg_replace(const char *s, const char *from, const char *to)
{
	size_t n = strlen(s) + 1, lf = strlen(from), lt = strlen(to);
	const char *at, *q;
	char *out, *p;

	for (q = s; (q = strstr(q, from)); q += lf)
		n += lt - lf;
	if (!(out = malloc(n)))
		return NULL;
	for (p = out, q = s; (at = strstr(q, from)); q = at + lf) {
		memcpy(p, q, (size_t)(at - q));
		p += at - q;
		memcpy(p, to, lt);
		p += lt;
	}
	strcpy(p, q);
	return out;
}

/* fc_keys(?1) (fc_db.h) as a subquery: in the statement itself, not a
 * function of the schema, so the schema stays one that nodes of the
 * version before can open, and no function of that name that another role
 * puts on the search path is called instead. The parameter is typed. */
#define FC_PG_KEYS                                                                                          \
	"(SELECT get_byte(k, i)::smallint AS family, "                                                       \
	"substring(k FROM i + 3 FOR CASE get_byte(k, i) WHEN 4 THEN 4 ELSE 16 END) AS addr, "             \
	"get_byte(k, i + 1)::smallint AS len FROM (SELECT CAST(?1 AS bytea) AS k) AS b, "                   \
	"generate_series(0, length(k) - " FC_SQL_STR(FC_KEY_BYTES) ", " FC_SQL_STR(FC_KEY_BYTES) ") AS i) AS fc_keys"

/* The queries are written with SQLite's ?N; PostgreSQL spells them $N,
 * has no INDEXED BY (its planner knows how small a partial index is),
 * calls a BLOB bytea (a cast that gives a parameter its type) and reads a
 * batch of keys with FC_PG_KEYS. */
static char *fc_pg_dialect(const char *sql)
{
	char *keys = fc_pg_replace(sql, "fc_keys(?1)", FC_PG_KEYS), *out, *p, *end;

	out = keys ? fc_pg_replace(keys, " AS BLOB)", " AS bytea)") : NULL;
	free(keys);
	for (p = out; p && (p = strchr(p, '?')); p++)
		*p = '$';
	while (out && (p = strstr(out, " INDEXED BY "))) {
		end = p + strlen(" INDEXED BY ");
		end += strcspn(end, " ");
		memmove(p, end, strlen(end) + 1);
	}
	return out;
}

static void fc_pg_close(struct fc_db *db)
{
	struct fc_db_pg *d = FC_PG(db);
	int i;

	for (i = 0; d->res && i < d->nstmt; i++)
		fc_pq.PQclear(d->res[i]);
	fc_pq.PQfreemem(d->blob);
	fc_pq.PQfinish(d->conn);
	free(d->res);
	free(d->row);
	free(d->db.name);
	free(d);
}

static void fc_pg_quiet(void *arg, const char *msg)
{
	(void)arg;
	(void)msg; /* NOTICEs such as "relation already exists, skipping" */
}

static int fc_pg_open(const char *dsn, const char *name, bool create, const char *const *sql, int n,
		      struct fc_db **out, struct fc_err *err)
{
	/* A DSN's own connect_timeout wins: later keywords override earlier ones. */
	const char *const keys[] = { "connect_timeout", "application_name", "dbname", NULL };
	const char *const vals[] = { "5", "freqctl", dsn, NULL };
	struct fc_db_pg *d;
	struct fc_err why;

	if (fc_dl_load(&fc_pq_dl, &why) < 0)
		return fc_err_set(err, "store %s: PostgreSQL's client library: %s", name, why.msg);
	d = calloc(1, sizeof(*d));
	if (!d || !(d->db.name = strdup(name)) || !(d->res = calloc((size_t)n, sizeof(*d->res))) ||
	    !(d->row = calloc((size_t)n, sizeof(*d->row)))) {
		if (d) {
			free(d->res);
			free(d->db.name);
		}
		free(d);
		return fc_err_set(err, "store %s: out of memory", name);
	}
	d->db.ops = &fc_db_pg;
	d->sql = sql;
	d->nstmt = n;
	for (int i = 0; i < n; i++)
		d->row[i] = -2;
	d->conn = fc_pq.PQconnectdbParams(keys, vals, 1);
	if (!d->conn || fc_pq.PQstatus(d->conn) != CONNECTION_OK) {
		fc_pg_fail(d, err, "cannot connect");
		goto fail;
	}
	fc_pq.PQsetNoticeProcessor(d->conn, fc_pg_quiet, NULL);
	if (fc_pg_migrate(d, create, err) < 0)
		goto fail;
	*out = &d->db;
	return 0;
fail:
	fc_pg_close(&d->db);
	return -1;
}

/* Prepared on first use: a command runs a few statements, and each prepare
 * is a round trip. */
static int fc_pg_prepare(struct fc_db_pg *d, int id, struct fc_err *err)
{
	char stmt[16], *text = fc_pg_dialect(d->sql[id]);
	PGresult *r;
	int rc;

	if (!text)
		return fc_err_set(err, "store %s: preparing a statement: out of memory", d->db.name);
	snprintf(stmt, sizeof(stmt), "fc%d", id);
	r = fc_pq.PQprepare(d->conn, stmt, text, 0, NULL);
	rc = fc_pq.PQresultStatus(r) == PGRES_COMMAND_OK ? 0 : fc_pg_result_fail(d, r, "preparing a statement", err);
	fc_pq.PQclear(r);
	free(text);
	if (rc == 0)
		d->row[id] = -1;
	return rc;
}

static int fc_pg_run(struct fc_db *db, int id, const struct fc_val *args, int nargs, const char *what,
		     struct fc_err *err)
{
	struct fc_db_pg *d = FC_PG(db);
	const char *values[FC_PG_ARGS];
	int lengths[FC_PG_ARGS], formats[FC_PG_ARGS];
	char text[FC_PG_ARGS][32], stmt[16];
	ExecStatusType s;
	int i;

	if (nargs > FC_PG_ARGS)
		return fc_err_set(err, "store %s: %s: too many parameters", d->db.name, what);
	for (i = 0; i < nargs; i++) {
		const struct fc_val *a = &args[i];

		lengths[i] = 0;
		formats[i] = 0;
		values[i] = text[i];
		switch (a->type) {
		case FC_VAL_NULL:
			values[i] = NULL;
			break;
		case FC_VAL_INT:
			snprintf(text[i], sizeof(text[i]), "%lld", (long long)a->i);
			break;
		case FC_VAL_REAL:
			snprintf(text[i], sizeof(text[i]), "%.17g", a->r);
			break;
		case FC_VAL_TEXT:
			values[i] = a->p;
			break;
		case FC_VAL_BLOB: /* bytea, sent as raw bytes */
			values[i] = a->p;
			lengths[i] = (int)a->len;
			formats[i] = 1;
			break;
		}
	}
	if (d->row[id] == -2 && fc_pg_prepare(d, id, err) < 0)
		return -1;
	fc_pq.PQclear(d->res[id]);
	snprintf(stmt, sizeof(stmt), "fc%d", id);
	d->res[id] = fc_pq.PQexecPrepared(d->conn, stmt, nargs, values, lengths, formats, 0);
	d->row[id] = -1;
	s = fc_pq.PQresultStatus(d->res[id]);
	if (s == PGRES_TUPLES_OK || s == PGRES_COMMAND_OK)
		return 0;
	return fc_pg_result_fail(d, d->res[id], what, err);
}

static int fc_pg_next(struct fc_db *db, int id, const char *what, struct fc_err *err)
{
	struct fc_db_pg *d = FC_PG(db);

	(void)what;
	(void)err;
	return ++d->row[id] < fc_pq.PQntuples(d->res[id]) ? 1 : 0;
}

static bool fc_pg_col_null(struct fc_db *db, int id, int col)
{
	return fc_pq.PQgetisnull(FC_PG(db)->res[id], FC_PG(db)->row[id], col);
}

static int64_t fc_pg_col_int(struct fc_db *db, int id, int col)
{
	return strtoll(fc_pq.PQgetvalue(FC_PG(db)->res[id], FC_PG(db)->row[id], col), NULL, 10);
}

static double fc_pg_col_real(struct fc_db *db, int id, int col)
{
	return strtod(fc_pq.PQgetvalue(FC_PG(db)->res[id], FC_PG(db)->row[id], col), NULL);
}

static const char *fc_pg_col_text(struct fc_db *db, int id, int col)
{
	return fc_pg_col_null(db, id, col) ? NULL : fc_pq.PQgetvalue(FC_PG(db)->res[id], FC_PG(db)->row[id], col);
}

static const void *fc_pg_col_blob(struct fc_db *db, int id, int col, size_t *len)
{
	struct fc_db_pg *d = FC_PG(db);

	fc_pq.PQfreemem(d->blob);
	d->blob = fc_pq.PQunescapeBytea((const unsigned char *)fc_pq.PQgetvalue(d->res[id], d->row[id], col), len);
	if (!d->blob)
		*len = 0;
	return d->blob;
}

static int64_t fc_pg_changes(struct fc_db *db, int id)
{
	return strtoll(fc_pq.PQcmdTuples(FC_PG(db)->res[id]), NULL, 10);
}

static void fc_pg_done(struct fc_db *db, int id)
{
	fc_pq.PQclear(FC_PG(db)->res[id]);
	FC_PG(db)->res[id] = NULL;
}

/* Counts the NOTIFYs received: LISTEN on first use, then read what arrived
 * without waiting. A lost connection is an error: the caller reconnects. */
static int fc_pg_version(struct fc_db *db, int64_t *v, struct fc_err *err)
{
	struct fc_db_pg *d = FC_PG(db);
	PGnotify *n;

	if (!d->listening) {
		if (fc_pg_exec(d, "LISTEN " FC_PG_CHANNEL, "listening for changes", err) < 0)
			return -1;
		d->listening = true;
	}
	if (!fc_pq.PQconsumeInput(d->conn) || fc_pq.PQstatus(d->conn) != CONNECTION_OK)
		return fc_pg_fail(d, err, "waiting for changes");
	while ((n = fc_pq.PQnotifies(d->conn))) {
		d->notifies++;
		fc_pq.PQfreemem(n);
	}
	*v = d->notifies;
	return 0;
}

static int fc_pg_watch_fd(struct fc_db *db)
{
	return fc_pq.PQsocket(FC_PG(db)->conn);
}

const struct fc_db_ops fc_db_pg = {
	.open = fc_pg_open,
	.close = fc_pg_close,
	.begin = fc_pg_begin,
	.commit = fc_pg_commit,
	.rollback = fc_pg_rollback,
	.run = fc_pg_run,
	.next = fc_pg_next,
	.col_null = fc_pg_col_null,
	.col_int = fc_pg_col_int,
	.col_real = fc_pg_col_real,
	.col_text = fc_pg_col_text,
	.col_blob = fc_pg_col_blob,
	.changes = fc_pg_changes,
	.done = fc_pg_done,
	.version = fc_pg_version,
	.watch_fd = fc_pg_watch_fd,
};
