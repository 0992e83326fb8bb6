// SPDX-License-Identifier: BSD-2-Clause
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <sqlite3.h>

#include "fc_store.h"

#define FC_SCHEMA_VERSION 5

/* Each step takes the schema from version i to i + 1. */
static const char fc_schema_v1[] =
	"CREATE TABLE bans ("
	"  family  INTEGER NOT NULL CHECK (family IN (4, 6)),"
	"  addr    BLOB    NOT NULL," /* 4 or 16 bytes, network order, host bits zero */
	"  len     INTEGER NOT NULL," /* prefix length; 32 or 128 is an exact address */
	"  created INTEGER NOT NULL," /* unix seconds */
	"  expires INTEGER,"          /* unix seconds; NULL = never */
	"  PRIMARY KEY (family, addr, len)"
	") WITHOUT ROWID;"
	"CREATE INDEX bans_expires ON bans (expires) WHERE expires IS NOT NULL;";

static const char fc_schema_v2[] =
	"CREATE TABLE policies ("
	"  id      INTEGER PRIMARY KEY CHECK (id BETWEEN 1 AND 4294967295),"
	"  match   TEXT    NOT NULL UNIQUE," /* canonical: ip=198.18.0.0/15, ip=* */
	"  rates   TEXT    NOT NULL,"        /* canonical: 10/s,1000/d */
	"  burst   INTEGER,"                 /* GCRA burst of the first rate; NULL = its N */
	"  algo    TEXT    NOT NULL CHECK (algo IN ('gcra', 'window')),"
	"  action  TEXT    NOT NULL CHECK (action IN ('drop', 'log')),"
	"  count   TEXT    NOT NULL CHECK (count IN ('packets', 'bytes', 'syn')),"
	"  new_sources INTEGER,"             /* ip=* only: new buckets per second */
	"  slot    INTEGER NOT NULL UNIQUE CHECK (slot BETWEEN 1 AND 65536)," /* kernel slot, kept across edits */
	"  epoch   INTEGER NOT NULL,"        /* new when the match changes: bucket state starts afresh */
	"  created INTEGER NOT NULL,"
	"  updated INTEGER NOT NULL"
	");"
	"CREATE TABLE meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL);"
	"INSERT INTO meta VALUES ('epoch', 0);"
	/* Slots of deleted policies, given out again lowest first. */
	"CREATE TABLE free_slots (slot INTEGER PRIMARY KEY);";

/* L7 policies: action delay (SQLite can not alter a CHECK: rebuild the table). */
static const char fc_schema_v3[] =
	"CREATE TABLE policies_v3 ("
	"  id      INTEGER PRIMARY KEY CHECK (id BETWEEN 1 AND 4294967295),"
	"  match   TEXT    NOT NULL UNIQUE," /* canonical: ip=198.18.0.0/15, uid=u1,arg:api=login */
	"  rates   TEXT    NOT NULL,"
	"  burst   INTEGER,"
	"  algo    TEXT    NOT NULL CHECK (algo IN ('gcra', 'window')),"
	"  action  TEXT    NOT NULL CHECK (action IN ('drop', 'log', 'delay')),"
	"  count   TEXT    NOT NULL CHECK (count IN ('packets', 'bytes', 'syn')),"
	"  new_sources INTEGER,"
	"  slot    INTEGER NOT NULL UNIQUE CHECK (slot BETWEEN 1 AND 65536),"
	"  epoch   INTEGER NOT NULL,"
	"  created INTEGER NOT NULL,"
	"  updated INTEGER NOT NULL,"
	"  delay_burst INTEGER"              /* action delay: requests that may wait */
	");"
	"INSERT INTO policies_v3 SELECT *, NULL FROM policies;"
	"DROP TABLE policies;"
	"ALTER TABLE policies_v3 RENAME TO policies;"
	"CREATE TABLE uid_bans ("
	"  uid     TEXT    PRIMARY KEY,"
	"  created INTEGER NOT NULL,"
	"  expires INTEGER"                /* unix seconds; NULL = never */
	");";

/* Fleets: a node enforces a policy's rate R as R * weight. */
static const char fc_schema_v4[] =
	"CREATE TABLE nodes ("
	"  name   TEXT PRIMARY KEY,"
	"  weight REAL NOT NULL CHECK (weight > 0 AND weight <= 1)"
	");";

/* Escalation: L7 refusals become bans at XDP/TC; a ban says who made it. */
static const char fc_schema_v5[] =
	"ALTER TABLE policies ADD COLUMN escalate TEXT;" /* N/UNIT */
	"ALTER TABLE policies ADD COLUMN ban_ttl INTEGER;"
	"ALTER TABLE bans ADD COLUMN by_policy INTEGER;"; /* NULL: by hand */

static const char *const fc_schema[] = { fc_schema_v1, fc_schema_v2, fc_schema_v3, fc_schema_v4, fc_schema_v5 };

enum fc_stmt_id {
	FC_SQL_BAN_GET,
	FC_SQL_BAN_PUT,
	FC_SQL_BAN_DEL,
	FC_SQL_BAN_PURGE,
	FC_SQL_BAN_LIST,
	FC_SQL_BAN_COUNT,
	FC_SQL_POL_GET,
	FC_SQL_POL_LIST,
	FC_SQL_POL_PUT,
	FC_SQL_POL_DEL,
	FC_SQL_POL_CONFLICT,
	FC_SQL_POL_FREE_SLOT,
	FC_SQL_POL_NEXT_SLOT,
	FC_SQL_POL_FREE,
	FC_SQL_UBAN_PUT,
	FC_SQL_UBAN_GET,
	FC_SQL_UBAN_DEL,
	FC_SQL_UBAN_PURGE,
	FC_SQL_UBAN_LIST,
	FC_SQL_EPOCH_NEXT,
	FC_SQL_BANS_CLEAR,
	FC_SQL_NODE_GET,
	FC_SQL_NODE_PUT,
	FC_SQL_NODE_LIST,
	FC_SQL_NODES_CLEAR,
	FC_SQL_UBANS_CLEAR,
	FC_SQL_MAX,
};

static const char *const fc_sql[FC_SQL_MAX] = {
	[FC_SQL_BAN_GET] = "SELECT family, addr, len, created, expires, by_policy FROM bans "
			   "WHERE family = ?1 AND addr = ?2 AND len = ?3 AND (expires IS NULL OR expires > ?4)",
	[FC_SQL_BAN_PUT] = "INSERT INTO bans (family, addr, len, created, expires, by_policy) "
			   "VALUES (?1, ?2, ?3, ?4, ?5, ?6) "
			   "ON CONFLICT (family, addr, len) DO UPDATE SET created = ?4, expires = ?5, by_policy = ?6",
	[FC_SQL_BAN_DEL] = "DELETE FROM bans WHERE family = ?1 AND addr = ?2 AND len = ?3",
	[FC_SQL_BAN_PURGE] = "DELETE FROM bans WHERE expires IS NOT NULL AND expires <= ?1",
	[FC_SQL_BAN_LIST] = "SELECT family, addr, len, created, expires, by_policy FROM bans "
			    "WHERE expires IS NULL OR expires > ?1 ORDER BY family, addr, len",
	[FC_SQL_BAN_COUNT] = "SELECT count(*), count(by_policy), "
			     "(SELECT count(*) FROM uid_bans WHERE expires IS NULL OR expires > ?1) "
			     "FROM bans WHERE expires IS NULL OR expires > ?1",
#define FC_POL_COLS                                                                                          \
	"id, match, rates, burst, algo, action, count, new_sources, slot, epoch, created, updated, delay_burst, " \
	"escalate, ban_ttl"
	[FC_SQL_POL_GET] = "SELECT " FC_POL_COLS " FROM policies WHERE id = ?1",
	[FC_SQL_POL_LIST] = "SELECT " FC_POL_COLS " FROM policies ORDER BY id",
	[FC_SQL_POL_PUT] = "INSERT OR REPLACE INTO policies (" FC_POL_COLS ") "
			   "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)",
	[FC_SQL_POL_DEL] = "DELETE FROM policies WHERE id = ?1",
	[FC_SQL_POL_CONFLICT] = "SELECT id FROM policies WHERE match = ?1 AND id != ?2",
	/* A freed slot if any (lowest first), else the next never used. */
	[FC_SQL_POL_FREE_SLOT] = "DELETE FROM free_slots WHERE slot = (SELECT min(slot) FROM free_slots) RETURNING slot",
	[FC_SQL_POL_NEXT_SLOT] = "SELECT coalesce(max(slot), 0) + 1 FROM policies",
	[FC_SQL_POL_FREE] = "INSERT OR IGNORE INTO free_slots VALUES (?1)",
	[FC_SQL_UBAN_PUT] = "INSERT INTO uid_bans (uid, created, expires) VALUES (?1, ?2, ?3) "
			    "ON CONFLICT (uid) DO UPDATE SET created = ?2, expires = ?3",
	[FC_SQL_UBAN_GET] = "SELECT 1 FROM uid_bans WHERE uid = ?1 AND (expires IS NULL OR expires > ?2)",
	[FC_SQL_UBAN_DEL] = "DELETE FROM uid_bans WHERE uid = ?1",
	[FC_SQL_UBAN_PURGE] = "DELETE FROM uid_bans WHERE expires IS NOT NULL AND expires <= ?1",
	[FC_SQL_UBAN_LIST] = "SELECT uid, created, expires FROM uid_bans WHERE expires IS NULL OR expires > ?1 ORDER BY uid",
	[FC_SQL_BANS_CLEAR] = "DELETE FROM bans",
	[FC_SQL_NODE_GET] = "SELECT weight FROM nodes WHERE name = ?1",
	[FC_SQL_NODE_PUT] = "INSERT INTO nodes (name, weight) VALUES (?1, ?2) "
			    "ON CONFLICT (name) DO UPDATE SET weight = ?2",
	[FC_SQL_NODE_LIST] = "SELECT name, weight FROM nodes ORDER BY name",
	[FC_SQL_NODES_CLEAR] = "DELETE FROM nodes",
	[FC_SQL_UBANS_CLEAR] = "DELETE FROM uid_bans",
	[FC_SQL_EPOCH_NEXT] = "UPDATE meta SET value = value % 4294967295 + 1 WHERE key = 'epoch' RETURNING value",
};

struct fc_store {
	sqlite3 *db;
	char *path;
	sqlite3_stmt *stmt[FC_SQL_MAX];
};

static int fc_store_fail(struct fc_store *st, struct fc_err *err, const char *what)
{
	return fc_err_set(err, "store %s: %s: %s", st->path, what, sqlite3_errmsg(st->db));
}

static int fc_store_exec(struct fc_store *st, const char *sql, struct fc_err *err)
{
	char *msg = NULL;

	if (sqlite3_exec(st->db, sql, NULL, NULL, &msg) != SQLITE_OK) {
		fc_err_set(err, "store %s: %s", st->path, msg ? msg : sqlite3_errmsg(st->db));
		sqlite3_free(msg);
		return -1;
	}
	return 0;
}

/* mkdir -p for the directory that will hold the store. */
static int fc_mkdir_parents(const char *path, struct fc_err *err)
{
	char buf[PATH_MAX];
	char *p;

	if (strlen(path) >= sizeof(buf))
		return fc_err_set(err, "store %s: path too long", path);
	strcpy(buf, path);
	for (p = buf + 1; (p = strchr(p, '/')); p++) {
		*p = '\0';
		if (mkdir(buf, 0750) < 0 && errno != EEXIST)
			return fc_err_set(err, "store %s: cannot create %s: %s", path, buf, strerror(errno));
		*p = '/';
	}
	return 0;
}

static int fc_store_migrate(struct fc_store *st, struct fc_err *err)
{
	sqlite3_stmt *s;
	int version;

	if (sqlite3_prepare_v2(st->db, "PRAGMA user_version", -1, &s, NULL) != SQLITE_OK)
		return fc_store_fail(st, err, "reading schema version");
	sqlite3_step(s);
	version = sqlite3_column_int(s, 0);
	sqlite3_finalize(s);
	if (version == FC_SCHEMA_VERSION)
		return 0;
	if (version > FC_SCHEMA_VERSION)
		return fc_err_set(err, "store %s: schema version %d is newer than this freqctl knows (%d)", st->path,
				  version, FC_SCHEMA_VERSION);
	if (fc_store_exec(st, "BEGIN IMMEDIATE", err) < 0)
		return -1;
	for (; version < FC_SCHEMA_VERSION; version++) {
		char pragma[64];

		snprintf(pragma, sizeof(pragma), "PRAGMA user_version = %d", version + 1);
		if (fc_store_exec(st, fc_schema[version], err) < 0 || fc_store_exec(st, pragma, err) < 0) {
			fc_store_rollback(st);
			return -1;
		}
	}
	return fc_store_commit(st, err);
}

int fc_store_open(const char *path, struct fc_store **out, struct fc_err *err)
{
	return fc_store_open_ex(path, true, out, err);
}

int fc_store_open_ex(const char *path, bool create, struct fc_store **out, struct fc_err *err)
{
	struct fc_store *st;
	int i;

	if (!create && access(path, F_OK) < 0)
		return fc_err_set(err, "store %s: %s", path, strerror(errno));
	if (create && fc_mkdir_parents(path, err) < 0)
		return -1;
	st = calloc(1, sizeof(*st));
	if (!st || !(st->path = strdup(path))) {
		free(st);
		return fc_err_set(err, "store %s: out of memory", path);
	}
	if (sqlite3_open_v2(path, &st->db, SQLITE_OPEN_READWRITE | (create ? SQLITE_OPEN_CREATE : 0), NULL) !=
	    SQLITE_OK) {
		fc_store_fail(st, err, "cannot open");
		goto fail;
	}
	sqlite3_busy_timeout(st->db, 10000);
	/* WAL lets readers (ban list, an agent) run beside one writer. */
	if (fc_store_exec(st, "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL", err) < 0)
		goto fail;
	if (fc_store_migrate(st, err) < 0)
		goto fail;
	for (i = 0; i < FC_SQL_MAX; i++) {
		if (sqlite3_prepare_v3(st->db, fc_sql[i], -1, SQLITE_PREPARE_PERSISTENT, &st->stmt[i], NULL) !=
		    SQLITE_OK) {
			fc_store_fail(st, err, "preparing statements");
			goto fail;
		}
	}
	*out = st;
	return 0;
fail:
	fc_store_close(st);
	return -1;
}

void fc_store_close(struct fc_store *st)
{
	int i;

	if (!st)
		return;
	for (i = 0; i < FC_SQL_MAX; i++)
		sqlite3_finalize(st->stmt[i]);
	sqlite3_close(st->db);
	free(st->path);
	free(st);
}

int fc_store_begin(struct fc_store *st, struct fc_err *err)
{
	return fc_store_exec(st, "BEGIN IMMEDIATE", err);
}

int fc_store_commit(struct fc_store *st, struct fc_err *err)
{
	if (fc_store_exec(st, "COMMIT", err) < 0) {
		fc_store_rollback(st);
		return -1;
	}
	return 0;
}

void fc_store_rollback(struct fc_store *st)
{
	if (!sqlite3_get_autocommit(st->db))
		sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
}

static sqlite3_stmt *fc_stmt(struct fc_store *st, enum fc_stmt_id id)
{
	sqlite3_reset(st->stmt[id]);
	sqlite3_clear_bindings(st->stmt[id]);
	return st->stmt[id];
}

static void fc_bind_prefix(sqlite3_stmt *s, const struct fc_prefix *p)
{
	sqlite3_bind_int(s, 1, p->family);
	sqlite3_bind_blob(s, 2, p->a, p->family == 4 ? 4 : 16, SQLITE_STATIC);
	sqlite3_bind_int(s, 3, p->len);
}

/* Runs a statement that returns no rows. */
static int fc_step_done(struct fc_store *st, sqlite3_stmt *s, struct fc_err *err, const char *what)
{
	int rc = sqlite3_step(s);

	sqlite3_reset(s);
	if (rc != SQLITE_DONE)
		return fc_store_fail(st, err, what);
	return 0;
}

int fc_store_ban_put(struct fc_store *st, const struct fc_ban_row *row, struct fc_err *err)
{
	sqlite3_stmt *s = fc_stmt(st, FC_SQL_BAN_PUT);

	fc_bind_prefix(s, &row->p);
	sqlite3_bind_int64(s, 4, row->created);
	if (row->expires)
		sqlite3_bind_int64(s, 5, row->expires);
	if (row->by_policy)
		sqlite3_bind_int64(s, 6, row->by_policy);
	return fc_step_done(st, s, err, "writing ban");
}

int fc_store_ban_del(struct fc_store *st, const struct fc_prefix *p, bool *found, struct fc_err *err)
{
	sqlite3_stmt *s = fc_stmt(st, FC_SQL_BAN_DEL);

	fc_bind_prefix(s, p);
	if (fc_step_done(st, s, err, "deleting ban") < 0)
		return -1;
	*found = sqlite3_changes(st->db) > 0;
	return 0;
}

int fc_store_ban_purge(struct fc_store *st, int64_t now, size_t *n, struct fc_err *err)
{
	sqlite3_stmt *s = fc_stmt(st, FC_SQL_BAN_PURGE);

	sqlite3_bind_int64(s, 1, now);
	if (fc_step_done(st, s, err, "purging expired bans") < 0)
		return -1;
	*n = (size_t)sqlite3_changes(st->db);
	return 0;
}

/* Reads one row of FC_SQL_BAN_LIST; rejects what this version never writes. */
static int fc_row_read(struct fc_store *st, sqlite3_stmt *s, struct fc_ban_row *row, struct fc_err *err)
{
	int family = sqlite3_column_int(s, 0);
	int bytes = sqlite3_column_bytes(s, 1);
	int len = sqlite3_column_int(s, 2);
	int max = family == 4 ? 32 : 128;

	if ((family != 4 && family != 6) || bytes != max / 8 || len < 1 || len > max)
		return fc_err_set(err, "store %s: corrupt ban row (family %d, %d address bytes, length %d)", st->path,
				  family, bytes, len);
	memset(row, 0, sizeof(*row));
	row->p.family = (uint8_t)family;
	row->p.len = (uint8_t)len;
	memcpy(row->p.a, sqlite3_column_blob(s, 1), (size_t)bytes);
	row->created = sqlite3_column_int64(s, 3);
	row->expires = sqlite3_column_int64(s, 4);
	row->by_policy = (uint32_t)sqlite3_column_int64(s, 5);
	return 0;
}

int fc_store_ban_get(struct fc_store *st, const struct fc_prefix *p, int64_t now, struct fc_ban_row *row,
		     bool *found, struct fc_err *err)
{
	sqlite3_stmt *s = fc_stmt(st, FC_SQL_BAN_GET);
	int rc;

	fc_bind_prefix(s, p);
	sqlite3_bind_int64(s, 4, now);
	rc = sqlite3_step(s);
	*found = rc == SQLITE_ROW;
	if (*found)
		rc = fc_row_read(st, s, row, err);
	else if (rc != SQLITE_DONE)
		rc = fc_store_fail(st, err, "looking up ban");
	else
		rc = 0;
	sqlite3_reset(s);
	return rc;
}

int fc_store_ban_count(struct fc_store *st, int64_t now, struct fc_ban_counts *n, struct fc_err *err)
{
	sqlite3_stmt *s = fc_stmt(st, FC_SQL_BAN_COUNT);
	int rc;

	sqlite3_bind_int64(s, 1, now);
	rc = sqlite3_step(s);
	if (rc == SQLITE_ROW) {
		n->addresses = (size_t)sqlite3_column_int64(s, 0);
		n->escalated = (size_t)sqlite3_column_int64(s, 1);
		n->uids = (size_t)sqlite3_column_int64(s, 2);
	}
	sqlite3_reset(s);
	return rc == SQLITE_ROW ? 0 : fc_store_fail(st, err, "counting bans");
}

/* Reads one row of a listing into row (an element of the caller's type). */
typedef int (*fc_row_fn)(struct fc_store *st, sqlite3_stmt *s, void *row, struct fc_err *err);

/* Steps s to its end, reading each row with read into a growing array. */
static int fc_collect(struct fc_store *st, sqlite3_stmt *s, size_t elem, fc_row_fn read, const char *what,
		      void **rows, size_t *n, struct fc_err *err)
{
	size_t cnt = 0, cap = 0;
	char *v = NULL, *nv;
	int rc;

	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		if (cnt == cap) {
			cap = cap ? cap * 2 : 64;
			nv = realloc(v, cap * elem);
			if (!nv) {
				fc_err_set(err, "store %s: out of memory %s", st->path, what);
				goto fail;
			}
			v = nv;
		}
		if (read(st, s, v + cnt * elem, err) < 0)
			goto fail;
		cnt++;
	}
	if (rc != SQLITE_DONE) {
		fc_store_fail(st, err, what);
		goto fail;
	}
	sqlite3_reset(s);
	*rows = v;
	*n = cnt;
	return 0;
fail:
	sqlite3_reset(s);
	free(v);
	return -1;
}

static int fc_ban_row_read(struct fc_store *st, sqlite3_stmt *s, void *row, struct fc_err *err)
{
	return fc_row_read(st, s, row, err);
}

int fc_store_ban_list(struct fc_store *st, int64_t now, struct fc_ban_row **rows, size_t *n,
		      struct fc_err *err)
{
	sqlite3_stmt *s = fc_stmt(st, FC_SQL_BAN_LIST);

	sqlite3_bind_int64(s, 1, now);
	return fc_collect(st, s, sizeof(**rows), fc_ban_row_read, "listing bans", (void **)rows, n, err);
}

/* Reads one policy row; the texts go through the CLI's own parsers, so a row
 * edited by hand into something invalid is reported, never published. */
static int fc_policy_row_read(struct fc_store *st, sqlite3_stmt *s, struct fc_policy_row *row, struct fc_err *err)
{
	struct fc_policy_spec *p = &row->spec;
	const char *txt[5];
	struct fc_err why;
	int i, rc = 0;

	memset(row, 0, sizeof(*row));
	for (i = 0; i < 5; i++)
		txt[i] = (const char *)sqlite3_column_text(s, i == 0 ? 1 : i == 1 ? 2 : i + 2);
	p->id = (uint32_t)sqlite3_column_int64(s, 0);
	p->burst = (uint64_t)sqlite3_column_int64(s, 3);
	p->new_sources = (uint64_t)sqlite3_column_int64(s, 7);
	row->slot = (uint32_t)sqlite3_column_int64(s, 8);
	row->epoch = (uint32_t)sqlite3_column_int64(s, 9);
	row->created = sqlite3_column_int64(s, 10);
	row->updated = sqlite3_column_int64(s, 11);
	p->delay_burst = (uint32_t)sqlite3_column_int64(s, 12);
	p->ban_ttl = sqlite3_column_int64(s, 14);
	for (i = 0; i < 5; i++)
		if (!txt[i])
			return fc_err_set(err, "store %s: policy %u: a required column is NULL", st->path, p->id);
	if ((sqlite3_column_text(s, 13) &&
	     fc_rate_parse((const char *)sqlite3_column_text(s, 13), &p->escalate, &why) < 0) ||
	    fc_match_parse(txt[0], p, &why) < 0 || fc_rates_parse(txt[1], p, &why) < 0 ||
	    fc_algo_parse(txt[2], &p->algo, &why) < 0 || fc_action_parse(txt[3], &p->action, &why) < 0 ||
	    fc_count_parse(txt[4], &p->count, &why) < 0 || fc_policy_validate(p, &why) < 0)
		rc = -1;
	else if (row->slot < 1 || row->slot > FC_MAX_POLICIES)
		rc = fc_err_set(&why, "slot %u out of range", row->slot);
	if (rc < 0)
		return fc_err_set(err, "store %s: policy %u: %s", st->path, p->id, why.msg);
	return 0;
}

int fc_store_policy_get(struct fc_store *st, uint32_t id, struct fc_policy_row *row, bool *found, struct fc_err *err)
{
	sqlite3_stmt *s = fc_stmt(st, FC_SQL_POL_GET);
	int rc;

	sqlite3_bind_int64(s, 1, id);
	rc = sqlite3_step(s);
	*found = rc == SQLITE_ROW;
	if (*found)
		rc = fc_policy_row_read(st, s, row, err);
	else
		rc = rc == SQLITE_DONE ? 0 : fc_store_fail(st, err, "looking up policy");
	sqlite3_reset(s);
	return rc;
}

static int fc_policy_row_fn(struct fc_store *st, sqlite3_stmt *s, void *row, struct fc_err *err)
{
	return fc_policy_row_read(st, s, row, err);
}

int fc_store_policy_list(struct fc_store *st, struct fc_policy_row **rows, size_t *n, struct fc_err *err)
{
	return fc_collect(st, fc_stmt(st, FC_SQL_POL_LIST), sizeof(**rows), fc_policy_row_fn, "listing policies",
			  (void **)rows, n, err);
}

/* Runs a one-integer query; *found tells whether it returned a row. */
static int fc_query_int(struct fc_store *st, sqlite3_stmt *s, int64_t *v, bool *found, struct fc_err *err,
			const char *what)
{
	int rc = sqlite3_step(s);

	*found = rc == SQLITE_ROW && sqlite3_column_type(s, 0) != SQLITE_NULL;
	if (*found)
		*v = sqlite3_column_int64(s, 0);
	sqlite3_reset(s);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		return fc_store_fail(st, err, what);
	return 0;
}

int fc_store_policy_put(struct fc_store *st, const struct fc_policy_spec *p, int64_t now,
			struct fc_policy_row *out, struct fc_err *err)
{
	char match[FC_MATCH_LEN], rates[FC_TEXT_LEN];
	struct fc_policy_row old;
	sqlite3_stmt *s;
	int64_t v;
	bool found, have;

	fc_match_format(p, match);
	fc_rates_format(p, rates);
	s = fc_stmt(st, FC_SQL_POL_CONFLICT);
	sqlite3_bind_text(s, 1, match, -1, SQLITE_STATIC);
	sqlite3_bind_int64(s, 2, p->id);
	if (fc_query_int(st, s, &v, &found, err, "checking policy matches") < 0)
		return -1;
	if (found)
		return fc_err_set(err, "%s is already limited by policy %lld (one L4 policy per address, prefix "
				       "or ip=*)",
				  match, (long long)v);
	if (fc_store_policy_get(st, p->id, &old, &have, err) < 0)
		return -1;

	memset(out, 0, sizeof(*out));
	out->spec = *p;
	out->created = have ? old.created : now;
	out->updated = now;
	if (have) {
		char old_match[FC_MATCH_LEN];

		out->slot = old.slot;
		out->epoch = old.epoch;
		fc_match_format(&old.spec, old_match);
		if (strcmp(old_match, match))
			out->epoch = 0; /* a new key: its bucket starts afresh */
	} else {
		s = fc_stmt(st, FC_SQL_POL_FREE_SLOT);
		if (fc_query_int(st, s, &v, &found, err, "allocating a policy slot") < 0)
			return -1;
		if (!found) {
			s = fc_stmt(st, FC_SQL_POL_NEXT_SLOT);
			if (fc_query_int(st, s, &v, &found, err, "allocating a policy slot") < 0)
				return -1;
		}
		if (v > FC_MAX_POLICIES)
			return fc_err_set(err, "all %d policy slots are in use", FC_MAX_POLICIES);
		out->slot = (uint32_t)v;
	}
	if (!out->epoch) {
		s = fc_stmt(st, FC_SQL_EPOCH_NEXT);
		if (fc_query_int(st, s, &v, &found, err, "allocating an epoch") < 0)
			return -1;
		out->epoch = (uint32_t)v;
	}

	s = fc_stmt(st, FC_SQL_POL_PUT);
	sqlite3_bind_int64(s, 1, p->id);
	sqlite3_bind_text(s, 2, match, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 3, rates, -1, SQLITE_STATIC);
	if (p->burst)
		sqlite3_bind_int64(s, 4, (int64_t)p->burst);
	sqlite3_bind_text(s, 5, fc_algo_name(p->algo), -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 6, fc_action_name(p->action), -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 7, fc_count_name(p->count), -1, SQLITE_STATIC);
	if (p->new_sources)
		sqlite3_bind_int64(s, 8, (int64_t)p->new_sources);
	sqlite3_bind_int64(s, 9, out->slot);
	sqlite3_bind_int64(s, 10, out->epoch);
	sqlite3_bind_int64(s, 11, out->created);
	sqlite3_bind_int64(s, 12, out->updated);
	if (p->delay_burst)
		sqlite3_bind_int64(s, 13, p->delay_burst);
	if (p->escalate.n) {
		char esc[FC_RATE_STRLEN];

		fc_rate_format(&p->escalate, esc);
		sqlite3_bind_text(s, 14, esc, -1, SQLITE_TRANSIENT);
		sqlite3_bind_int64(s, 15, p->ban_ttl);
	}
	return fc_step_done(st, s, err, "writing policy");
}

int fc_store_policy_del(struct fc_store *st, uint32_t id, bool *found, struct fc_err *err)
{
	struct fc_policy_row row;
	sqlite3_stmt *s;

	if (fc_store_policy_get(st, id, &row, found, err) < 0 || !*found)
		return *found ? -1 : 0;
	s = fc_stmt(st, FC_SQL_POL_DEL);
	sqlite3_bind_int64(s, 1, id);
	if (fc_step_done(st, s, err, "deleting policy") < 0)
		return -1;
	s = fc_stmt(st, FC_SQL_POL_FREE);
	sqlite3_bind_int64(s, 1, row.slot);
	return fc_step_done(st, s, err, "freeing policy slot");
}

int fc_store_uid_ban_put(struct fc_store *st, const struct fc_uid_ban *b, bool *existed, int64_t now,
			 struct fc_err *err)
{
	sqlite3_stmt *s = fc_stmt(st, FC_SQL_UBAN_GET);
	int64_t v;

	sqlite3_bind_text(s, 1, b->uid, -1, SQLITE_STATIC);
	sqlite3_bind_int64(s, 2, now);
	if (fc_query_int(st, s, &v, existed, err, "looking up uid ban") < 0)
		return -1;
	s = fc_stmt(st, FC_SQL_UBAN_PUT);
	sqlite3_bind_text(s, 1, b->uid, -1, SQLITE_STATIC);
	sqlite3_bind_int64(s, 2, b->created);
	if (b->expires)
		sqlite3_bind_int64(s, 3, b->expires);
	return fc_step_done(st, s, err, "writing uid ban");
}

int fc_store_uid_ban_del(struct fc_store *st, const char *uid, bool *found, struct fc_err *err)
{
	sqlite3_stmt *s = fc_stmt(st, FC_SQL_UBAN_DEL);

	sqlite3_bind_text(s, 1, uid, -1, SQLITE_STATIC);
	if (fc_step_done(st, s, err, "deleting uid ban") < 0)
		return -1;
	*found = sqlite3_changes(st->db) > 0;
	return 0;
}

int fc_store_uid_ban_purge(struct fc_store *st, int64_t now, size_t *n, struct fc_err *err)
{
	sqlite3_stmt *s = fc_stmt(st, FC_SQL_UBAN_PURGE);

	sqlite3_bind_int64(s, 1, now);
	if (fc_step_done(st, s, err, "purging expired uid bans") < 0)
		return -1;
	*n = (size_t)sqlite3_changes(st->db);
	return 0;
}

static int fc_uid_ban_read(struct fc_store *st, sqlite3_stmt *s, void *row, struct fc_err *err)
{
	const char *uid = (const char *)sqlite3_column_text(s, 0);
	struct fc_uid_ban *b = row;

	if (!uid || !*uid || strlen(uid) > FC_SHM_MAX_VALUE)
		return fc_err_set(err, "store %s: corrupt uid ban row", st->path);
	memset(b, 0, sizeof(*b));
	snprintf(b->uid, sizeof(b->uid), "%s", uid);
	b->created = sqlite3_column_int64(s, 1);
	b->expires = sqlite3_column_int64(s, 2);
	return 0;
}

int fc_store_uid_ban_list(struct fc_store *st, int64_t now, struct fc_uid_ban **rows, size_t *n,
			  struct fc_err *err)
{
	sqlite3_stmt *s = fc_stmt(st, FC_SQL_UBAN_LIST);

	sqlite3_bind_int64(s, 1, now);
	return fc_collect(st, s, sizeof(**rows), fc_uid_ban_read, "listing uid bans", (void **)rows, n, err);
}

int fc_store_bans_clear(struct fc_store *st, struct fc_err *err)
{
	if (fc_step_done(st, fc_stmt(st, FC_SQL_BANS_CLEAR), err, "clearing bans") < 0)
		return -1;
	return fc_step_done(st, fc_stmt(st, FC_SQL_UBANS_CLEAR), err, "clearing uid bans");
}

int fc_store_data_version(struct fc_store *st, int64_t *v, struct fc_err *err)
{
	sqlite3_stmt *s;
	int rc;

	if (sqlite3_prepare_v2(st->db, "PRAGMA data_version", -1, &s, NULL) != SQLITE_OK)
		return fc_store_fail(st, err, "reading data_version");
	rc = sqlite3_step(s);
	if (rc == SQLITE_ROW)
		*v = sqlite3_column_int64(s, 0);
	sqlite3_finalize(s);
	return rc == SQLITE_ROW ? 0 : fc_store_fail(st, err, "reading data_version");
}

int fc_store_node_weight(struct fc_store *st, const char *name, double *weight, struct fc_err *err)
{
	sqlite3_stmt *s = fc_stmt(st, FC_SQL_NODE_GET);
	int rc;

	*weight = 1.0;
	sqlite3_bind_text(s, 1, name, -1, SQLITE_STATIC);
	rc = sqlite3_step(s);
	if (rc == SQLITE_ROW)
		*weight = sqlite3_column_double(s, 0);
	sqlite3_reset(s);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		return fc_store_fail(st, err, "reading node weight");
	if (!(*weight > 0 && *weight <= 1))
		return fc_err_set(err, "store %s: node %s: weight %g outside (0, 1]", st->path, name, *weight);
	return 0;
}

int fc_store_node_put(struct fc_store *st, const struct fc_node *n, struct fc_err *err)
{
	sqlite3_stmt *s = fc_stmt(st, FC_SQL_NODE_PUT);

	sqlite3_bind_text(s, 1, n->name, -1, SQLITE_STATIC);
	sqlite3_bind_double(s, 2, n->weight);
	return fc_step_done(st, s, err, "writing node");
}

static int fc_node_read(struct fc_store *st, sqlite3_stmt *s, void *row, struct fc_err *err)
{
	const char *name = (const char *)sqlite3_column_text(s, 0);
	struct fc_node *n = row;

	if (!name || !*name || strlen(name) >= sizeof(n->name))
		return fc_err_set(err, "store %s: corrupt node row", st->path);
	snprintf(n->name, sizeof(n->name), "%s", name);
	n->weight = sqlite3_column_double(s, 1);
	return 0;
}

int fc_store_node_list(struct fc_store *st, struct fc_node **rows, size_t *n, struct fc_err *err)
{
	return fc_collect(st, fc_stmt(st, FC_SQL_NODE_LIST), sizeof(**rows), fc_node_read, "listing nodes",
			  (void **)rows, n, err);
}

int fc_store_nodes_clear(struct fc_store *st, struct fc_err *err)
{
	return fc_step_done(st, fc_stmt(st, FC_SQL_NODES_CLEAR), err, "clearing nodes");
}
