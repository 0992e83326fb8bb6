// SPDX-License-Identifier: BSD-2-Clause
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sqlite3.h>

#include "fc_store.h"

#define FC_SCHEMA_VERSION 1

static const char fc_schema[] =
	"CREATE TABLE bans ("
	"  family  INTEGER NOT NULL CHECK (family IN (4, 6)),"
	"  addr    BLOB    NOT NULL," /* 4 or 16 bytes, network order, host bits zero */
	"  len     INTEGER NOT NULL," /* prefix length; 32 or 128 is an exact address */
	"  created INTEGER NOT NULL," /* unix seconds */
	"  expires INTEGER,"          /* unix seconds; NULL = never */
	"  PRIMARY KEY (family, addr, len)"
	") WITHOUT ROWID;"
	"CREATE INDEX bans_expires ON bans (expires) WHERE expires IS NOT NULL;";

enum fc_stmt_id {
	FC_SQL_BAN_GET,
	FC_SQL_BAN_PUT,
	FC_SQL_BAN_DEL,
	FC_SQL_BAN_PURGE,
	FC_SQL_BAN_LIST,
	FC_SQL_BAN_COUNT,
	FC_SQL_MAX,
};

static const char *const fc_sql[FC_SQL_MAX] = {
	[FC_SQL_BAN_GET] = "SELECT family, addr, len, created, expires FROM bans "
			   "WHERE family = ?1 AND addr = ?2 AND len = ?3 AND (expires IS NULL OR expires > ?4)",
	[FC_SQL_BAN_PUT] = "INSERT INTO bans (family, addr, len, created, expires) VALUES (?1, ?2, ?3, ?4, ?5) "
			   "ON CONFLICT (family, addr, len) DO UPDATE SET created = ?4, expires = ?5",
	[FC_SQL_BAN_DEL] = "DELETE FROM bans WHERE family = ?1 AND addr = ?2 AND len = ?3",
	[FC_SQL_BAN_PURGE] = "DELETE FROM bans WHERE expires IS NOT NULL AND expires <= ?1",
	[FC_SQL_BAN_LIST] = "SELECT family, addr, len, created, expires FROM bans "
			    "WHERE expires IS NULL OR expires > ?1 ORDER BY family, addr, len",
	[FC_SQL_BAN_COUNT] = "SELECT count(*) FROM bans WHERE expires IS NULL OR expires > ?1",
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
	if (fc_store_exec(st, fc_schema, err) < 0 || fc_store_exec(st, "PRAGMA user_version = 1", err) < 0 ||
	    fc_store_exec(st, "COMMIT", err) < 0) {
		fc_store_rollback(st);
		return -1;
	}
	return 0;
}

int fc_store_open(const char *path, struct fc_store **out, struct fc_err *err)
{
	struct fc_store *st;
	int i;

	if (fc_mkdir_parents(path, err) < 0)
		return -1;
	st = calloc(1, sizeof(*st));
	if (!st || !(st->path = strdup(path))) {
		free(st);
		return fc_err_set(err, "store %s: out of memory", path);
	}
	if (sqlite3_open_v2(path, &st->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL) != SQLITE_OK) {
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

int fc_store_ban_count(struct fc_store *st, int64_t now, size_t *n, struct fc_err *err)
{
	sqlite3_stmt *s = fc_stmt(st, FC_SQL_BAN_COUNT);
	int rc;

	sqlite3_bind_int64(s, 1, now);
	rc = sqlite3_step(s);
	if (rc == SQLITE_ROW)
		*n = (size_t)sqlite3_column_int64(s, 0);
	sqlite3_reset(s);
	return rc == SQLITE_ROW ? 0 : fc_store_fail(st, err, "counting bans");
}

int fc_store_ban_list(struct fc_store *st, int64_t now, struct fc_ban_row **rows, size_t *n,
		      struct fc_err *err)
{
	sqlite3_stmt *s = fc_stmt(st, FC_SQL_BAN_LIST);
	struct fc_ban_row *v = NULL, *nv;
	size_t cnt = 0, cap = 0;
	int rc;

	sqlite3_bind_int64(s, 1, now);
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		if (cnt == cap) {
			cap = cap ? cap * 2 : 1024;
			nv = realloc(v, cap * sizeof(*v));
			if (!nv) {
				fc_err_set(err, "store %s: out of memory listing bans", st->path);
				goto fail;
			}
			v = nv;
		}
		if (fc_row_read(st, s, &v[cnt], err) < 0)
			goto fail;
		cnt++;
	}
	if (rc != SQLITE_DONE) {
		fc_store_fail(st, err, "listing bans");
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
