// SPDX-License-Identifier: BSD-2-Clause
/* The store: round trips, expiry, refusals, reopening, corruption. On SQLite
 * always; also on PostgreSQL when FC_TEST_PG_DSN names a scratch database
 * (tests/integration/test_fleet.sh starts a cluster and sets it). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <cmocka.h>
#include <sqlite3.h>
#include <libpq-fe.h>
#include <stdint.h>

#include "fc_db.h"
#include "fc_db_sqlite_keys.h"
#include "fc_store.h"
#include "fc_store_keep.h"
#include "fc_test.h"

/* The schema versions: this freqctl's, and the one before the round's
 * migration (fc_db_sqlite.c's fc_schema_round, fc_db_pg.c's
 * fc_pg_schema_round), which a test makes as that release did. */
#define FC_SQ_LAST 13
#define FC_PG_LAST 9
#define FC_SQ_PREV 12
#define FC_PG_PREV 8

struct fc_t {
	char dir[64];
	char path[512];
	bool pg;
	struct fc_store *st;
};

/* Writes behind the store's back, as an operator with a SQL shell would. */
static void fc_raw_sql(struct fc_t *t, const char *sqlite_sql, const char *pg_sql)
{
	if (t->pg) {
		PGconn *c = PQconnectdb(t->path);
		PGresult *r = PQexec(c, pg_sql);

		if (PQresultStatus(r) != PGRES_COMMAND_OK)
			fail_msg("%s: %s", pg_sql, PQerrorMessage(c));
		PQclear(r);
		PQfinish(c);
	} else {
		sqlite3 *db;

		assert_int_equal(sqlite3_open(t->path, &db), SQLITE_OK);
		assert_int_equal(sqlite3_exec(db, sqlite_sql, NULL, NULL, NULL), SQLITE_OK);
		sqlite3_close(db);
	}
}

/* A scratch PostgreSQL store: the database emptied, then opened (which makes the schema). */
static int fc_setup_pg(void **state)
{
	struct fc_t *t = calloc(1, sizeof(*t));
	struct fc_err err;

	assert_non_null(t);
	t->pg = true;
	snprintf(t->path, sizeof(t->path), "%s", getenv("FC_TEST_PG_DSN"));
	fc_raw_sql(t, NULL, "SET client_min_messages = warning; DROP SCHEMA public CASCADE; CREATE SCHEMA public");
	if (fc_store_open(t->path, &t->st, &err) < 0)
		fail_msg("%s", err.msg);
	*state = t;
	return 0;
}

static int fc_setup(void **state)
{
	struct fc_t *t = calloc(1, sizeof(*t));
	struct fc_err err;

	assert_non_null(t);
	snprintf(t->dir, sizeof(t->dir), "/tmp/fc-unit-XXXXXX");
	assert_non_null(mkdtemp(t->dir));
	/* A directory that does not exist yet: the store creates it. */
	snprintf(t->path, sizeof(t->path), "%s/sub/dir/store.db", t->dir);
	if (fc_store_open(t->path, &t->st, &err) < 0)
		fail_msg("%s", err.msg);
	*state = t;
	return 0;
}

static int fc_teardown(void **state)
{
	struct fc_t *t = *state;
	char cmd[128];

	fc_store_close(t->st);
	if (!t->pg) {
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", t->dir);
		assert_int_equal(system(cmd), 0);
	}
	free(t);
	return 0;
}

static struct fc_ban_row fc_row(const char *text, int64_t created, int64_t expires)
{
	struct fc_ban_row r = { .created = created, .expires = expires };
	struct fc_err err;

	if (fc_prefix_parse(text, &r.p, &err) < 0)
		fail_msg("%s", err.msg);
	return r;
}

static void fc_put(struct fc_store *st, const char *text, int64_t created, int64_t expires)
{
	struct fc_ban_row r = fc_row(text, created, expires);
	struct fc_err err;

	if (fc_store_ban_put(st, &r, &err) < 0)
		fail_msg("%s", err.msg);
}

static size_t live_bans(struct fc_store *st, int64_t now)
{
	struct fc_ban_counts c;
	struct fc_err err;

	if (fc_store_ban_count(st, now, &c, &err) < 0)
		fail_msg("%s", err.msg);
	return c.addresses;
}

/* The directory syncs the library makes itself (linked with --wrap=fsync;
 * SQLite's, in its own library, are not counted). */
static int fc_syncs;
int __real_fsync(int fd);
int __wrap_fsync(int fd);
int __wrap_fsync(int fd)
{
	fc_syncs++;
	return __real_fsync(fd);
}

static long long fc_size(const char *path)
{
	struct stat sb;

	return stat(path, &sb) == 0 ? (long long)sb.st_size : -1;
}

/* Whether the WAL holds frames SQLite would take: its header is SQLite's
 * (its magic number, either byte order of the checksums). */
static bool fc_wal_live(const char *path)
{
	unsigned char magic[4] = { 0 };
	FILE *f = fopen(path, "rb");

	if (f) {
		if (fread(magic, 1, sizeof(magic), f) != sizeof(magic))
			memset(magic, 0, sizeof(magic));
		fclose(f);
	}
	return magic[0] == 0x37 && magic[1] == 0x7f && magic[2] == 0x06 && (magic[3] & 0xfe) == 0x82;
}

static int fc_count_one(void *arg, int n, char **v, char **names)
{
	(void)names;
	*(long *)arg = n == 1 && v[0] ? strtol(v[0], NULL, 10) : -1;
	return 0;
}

/* A commit is durable when it returns, and the .db file alone is the
 * store: the checkpoint after the commit has copied it there and emptied
 * the WAL (its file kept, its header zeroed); while a reader's older
 * snapshot keeps the checkpoint from it, the WAL and its directory are
 * synced instead (the WAL through SQLite's own file: its header here says
 * it is not emptied). A .db restored from a copy beside the WAL of later
 * commits is the copy's store, nothing of the WAL replayed onto it. */
static void test_commit_durable(void **state)
{
	struct fc_t *t = *state;
	char wal[600], copy[600], cmd[1400];
	struct fc_err err;
	sqlite3 *db;
	long n = 0;

	snprintf(wal, sizeof(wal), "%s-wal", t->path);
	snprintf(copy, sizeof(copy), "%s/copy.db", t->dir);
	fc_syncs = 0;
	assert_int_equal(fc_store_begin(t->st, &err), 0);
	fc_put(t->st, "192.0.2.1", 100, 0);
	assert_int_equal(fc_store_commit(t->st, &err), 0);
	assert_true(fc_size(wal) >= 0);
	assert_false(fc_wal_live(wal));
	assert_int_equal(fc_syncs, 0);
	snprintf(cmd, sizeof(cmd), "cp '%s' '%s'", t->path, copy);
	assert_int_equal(system(cmd), 0);
	assert_int_equal(sqlite3_open_v2(copy, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_exec(db, "SELECT count(*) FROM bans", fc_count_one, &n, NULL), SQLITE_OK);
	assert_int_equal(n, 1);
	sqlite3_close(db);

	/* A reader in a transaction begun before the next commit. */
	assert_int_equal(sqlite3_open(t->path, &db), SQLITE_OK);
	assert_int_equal(sqlite3_exec(db, "BEGIN; SELECT count(*) FROM bans", fc_count_one, &n, NULL), SQLITE_OK);
	assert_int_equal(fc_store_begin(t->st, &err), 0);
	fc_put(t->st, "192.0.2.2", 100, 0);
	assert_int_equal(fc_store_commit(t->st, &err), 0);
	assert_true(fc_wal_live(wal));
	assert_int_equal(fc_syncs, 1);
	assert_int_equal(sqlite3_exec(db, "COMMIT", NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(db);
	/* The reader gone, the next commit's checkpoint takes both in. */
	fc_put(t->st, "192.0.2.3", 100, 0);
	assert_false(fc_wal_live(wal));
	assert_int_equal(fc_syncs, 1);
	assert_int_equal(live_bans(t->st, 100), 3);

	/* The copy (one ban) put back in the store's place, beside its WAL. */
	fc_store_close(t->st);
	t->st = NULL;
	snprintf(cmd, sizeof(cmd), "cp '%s' '%s'", copy, t->path);
	assert_int_equal(system(cmd), 0);
	if (fc_store_open(t->path, &t->st, &err) < 0)
		fail_msg("%s", err.msg);
	assert_int_equal(live_bans(t->st, 100), 1);
}

static void test_round_trip(void **state)
{
	static const char *const bans[] = { "2001:db8::/32", "198.18.0.7", "198.18.0.0/15", "2001:db8::1",
					    "10.0.0.0/8" };
	struct fc_t *t = *state;
	struct fc_ban_row *rows, got;
	char buf[FC_PREFIX_STRLEN];
	struct fc_err err;
	size_t n, i, j;
	bool found;

	for (i = 0; i < 5; i++)
		fc_put(t->st, bans[i], 1000, i == 1 ? 5000 : 0);
	assert_int_equal(fc_store_ban_list(t->st, 2000, &rows, &n, &err), 0);
	assert_int_equal(n, 5);
	for (i = 0; i < 5; i++) {
		fc_prefix_format(&rows[i].p, buf);
		for (j = 0; j < 5 && strcmp(buf, bans[j]); j++)
			;
		assert_true(j < 5);
		assert_int_equal(rows[i].created, 1000);
		assert_int_equal(rows[i].expires, j == 1 ? 5000 : 0);
	}
	free(rows);

	/* get: exact key only; a prefix is not found by an address inside it. */
	got = fc_row("198.18.0.7", 0, 0);
	assert_int_equal(fc_store_ban_get(t->st, &got.p, 2000, &got, &found, &err), 0);
	assert_true(found);
	assert_int_equal(got.expires, 5000);
	got = fc_row("198.18.0.8", 0, 0);
	assert_int_equal(fc_store_ban_get(t->st, &got.p, 2000, &got, &found, &err), 0);
	assert_false(found);
}

static void test_replace_and_delete(void **state)
{
	struct fc_t *t = *state;
	struct fc_ban_row r = fc_row("198.18.0.7", 1, 100), got;
	struct fc_err err;
	bool found;

	fc_put(t->st, "198.18.0.7", 1, 100);
	fc_put(t->st, "198.18.0.7", 2, 0); /* again: replaces, no duplicate */
	assert_int_equal(live_bans(t->st, 50), 1);
	assert_int_equal(fc_store_ban_get(t->st, &r.p, 50, &got, &found, &err), 0);
	assert_true(found);
	assert_int_equal(got.created, 2);
	assert_int_equal(got.expires, 0);

	assert_int_equal(fc_store_ban_del(t->st, &r.p, &found, &err), 0);
	assert_true(found);
	assert_int_equal(fc_store_ban_del(t->st, &r.p, &found, &err), 0);
	assert_false(found);
	/* 198.18.0.7/32 and 198.18.0.0/24 are different bans. */
	fc_put(t->st, "198.18.0.0/24", 1, 0);
	r = fc_row("198.18.0.0", 0, 0);
	assert_int_equal(fc_store_ban_del(t->st, &r.p, &found, &err), 0);
	assert_false(found);
}

/* Bulk writes: batches of fc_keys, IPv4 and IPv6 in one, each row logged;
 * a key no address is refuses its statement, writing nothing. */
static void test_bulk(void **state)
{
	struct fc_t *t = *state;
	size_t n = FC_STORE_BATCH + 3, i, got, written;
	struct fc_prefix *keys = calloc(n, sizeof(*keys)), *back = NULL;
	struct fc_store_log before, after;
	struct fc_ban_set set = { .created = 1, .updated = 1 };
	struct fc_ban_row row;
	struct fc_err err;
	bool found;

	assert_non_null(keys);
	for (i = 0; i < n - 1; i++) {
		keys[i].family = 4;
		keys[i].len = 32;
		keys[i].a[0] = 10;
		keys[i].a[1] = (uint8_t)(i >> 16);
		keys[i].a[2] = (uint8_t)(i >> 8);
		keys[i].a[3] = (uint8_t)i;
	}
	keys[n - 1] = fc_row("2001:db8::/64", 0, 0).p;
	assert_int_equal(fc_store_log_head(t->st, &before, &err), 0);
	if (fc_store_bans_put(t->st, keys, n, 7, 900, false, NULL, &written, &err) < 0)
		fail_msg("%s", err.msg);
	assert_int_equal(written, n);
	assert_int_equal(fc_store_log_head(t->st, &after, &err), 0);
	assert_int_equal(after.head - before.head, n);
	assert_int_equal(live_bans(t->st, 0), n);
	assert_int_equal(live_bans(t->st, 900), 0);
	assert_int_equal(fc_store_ban_get(t->st, &keys[n - 1], 0, &row, &found, &err), 0);
	assert_true(found);
	assert_int_equal(row.p.len, 64);
	assert_int_equal(row.created, 7);
	assert_int_equal(row.expires, 900);
	/* Again, without expiry: replaced, not repeated. */
	assert_int_equal(fc_store_bans_put(t->st, keys, n, 8, 0, false, NULL, &written, &err), 0);
	assert_int_equal(written, n);
	assert_int_equal(live_bans(t->st, 900), n);
	/* A TTL over bans of no expiry: kept as they were, unless forced. */
	assert_int_equal(fc_store_bans_put(t->st, keys, n, 9, 500, false, NULL, &written, &err), 0);
	assert_int_equal(written, 0);
	assert_int_equal(live_bans(t->st, 900), n);
	assert_int_equal(fc_store_bans_put(t->st, keys, 2, 9, 500, true, NULL, &written, &err), 0);
	assert_int_equal(written, 2);
	assert_int_equal(live_bans(t->st, 900), n - 2);
	/* A later expiry extends a TTL; no expiry lifts it. */
	assert_int_equal(fc_store_bans_put(t->st, keys, 1, 9, 600, false, NULL, &written, &err), 0);
	assert_int_equal(written, 1);
	assert_int_equal(fc_store_bans_put(t->st, keys, 2, 8, 0, false, NULL, &written, &err), 0);
	assert_int_equal(written, 2);
	assert_int_equal(live_bans(t->st, 900), n);

	snprintf(set.name, sizeof(set.name), "feed");
	assert_int_equal(fc_store_set_put(t->st, &set, &err), 0);
	assert_int_equal(fc_store_set_members_put(t->st, set.id, keys, n, 1, NULL, &err), 0);
	assert_int_equal(fc_store_set_members_put(t->st, set.id, keys, 5, 1, NULL, &err), 0); /* kept */
	/* The first and the last two out, across both batches and families. */
	assert_int_equal(fc_store_set_members_del(t->st, set.id, keys, 1, NULL, &err), 0);
	assert_int_equal(fc_store_set_members_del(t->st, set.id, keys + n - 2, 2, NULL, &err), 0);
	assert_int_equal(fc_store_set_keys(t->st, set.id, &back, &got, &err), 0);
	assert_int_equal(got, n - 3);
	assert_memory_equal(&back[0], &keys[1], sizeof(*keys));
	assert_memory_equal(&back[got - 1], &keys[n - 3], sizeof(*keys));
	free(back);

	/* A key of no family: refused, nothing of its batch written. */
	keys[1].family = 5;
	assert_int_equal(fc_store_log_head(t->st, &before, &err), 0);
	assert_int_equal(fc_store_bans_put(t->st, keys, 3, 9, 0, false, NULL, &written, &err), -1);
	assert_non_null(strstr(err.msg, ": writing bans: key 1 is not an address prefix (family 5, length 32)"));
	keys[1].family = 6;
	keys[1].len = 129;
	assert_int_equal(fc_store_set_members_put(t->st, set.id, keys, 3, 9, NULL, &err), -1);
	assert_non_null(strstr(err.msg, "key 1 is not an address prefix (family 6, length 129)"));
	assert_int_equal(fc_store_ban_get(t->st, &keys[0], 0, &row, &found, &err), 0);
	assert_int_equal(row.created, 8);
	assert_int_equal(fc_store_log_head(t->st, &after, &err), 0);
	assert_int_equal(after.head, before.head);
	free(keys);
}

static void test_expiry(void **state)
{
	struct fc_t *t = *state;
	struct fc_ban_row *rows, got;
	struct fc_err err;
	size_t n;
	bool found;

	fc_put(t->st, "198.18.0.1", 0, 100);
	fc_put(t->st, "198.18.0.2", 0, 200);
	fc_put(t->st, "198.18.0.3", 0, 0);
	assert_int_equal(fc_store_ban_list(t->st, 100, &rows, &n, &err), 0); /* expires at 100: gone at 100 */
	assert_int_equal(n, 2);
	free(rows);
	assert_int_equal(live_bans(t->st, 99), 3);
	got = fc_row("198.18.0.1", 0, 0);
	assert_int_equal(fc_store_ban_get(t->st, &got.p, 100, &got, &found, &err), 0);
	assert_false(found);
	assert_int_equal(fc_store_ban_purge(t->st, 150, &n, &err), 0);
	assert_int_equal(n, 1);
	assert_int_equal(live_bans(t->st, 0), 2);
}

/* The counts stats exports: by hand vs escalated, uid bans apart, expired ones left out. */
static void test_counts(void **state)
{
	struct fc_t *t = *state;
	struct fc_ban_row r = fc_row("198.18.0.9", 0, 0);
	struct fc_uid_ban u = { .uid = "alice", .expires = 50 };
	struct fc_ban_counts c;
	struct fc_err err;
	bool existed;

	fc_put(t->st, "198.18.0.1", 0, 0);
	fc_put(t->st, "198.18.0.2", 0, 10);
	r.by_policy = 3;
	assert_int_equal(fc_store_ban_put(t->st, &r, &err), 0);
	assert_int_equal(fc_store_uid_ban_put(t->st, &u, &existed, 0, &err), 0);
	assert_int_equal(fc_store_ban_count(t->st, 20, &c, &err), 0);
	assert_int_equal(c.addresses, 2);
	assert_int_equal(c.escalated, 1);
	assert_int_equal(c.uids, 1);
	assert_int_equal(fc_store_ban_count(t->st, 60, &c, &err), 0);
	assert_int_equal(c.uids, 0);
}

/* An escalation's ban never cuts one short: kept where the ban there lasts
 * longer (no expiry, a later one), made or extended otherwise. */
static void test_extend(void **state)
{
	struct fc_t *t = *state;
	struct fc_ban_row r = fc_row("198.18.0.9", 5, 100), got;
	struct fc_err err;
	bool written, found;

	r.by_policy = 3;
	assert_int_equal(fc_store_ban_extend(t->st, &r, &written, &err), 0);
	assert_true(written); /* made */
	r.expires = 50;
	assert_int_equal(fc_store_ban_extend(t->st, &r, &written, &err), 0);
	assert_false(written); /* a later expiry there: kept */
	r.expires = 200;
	assert_int_equal(fc_store_ban_extend(t->st, &r, &written, &err), 0);
	assert_true(written); /* extended */
	fc_put(t->st, "198.18.0.9", 6, 0); /* by hand, no expiry */
	assert_int_equal(fc_store_ban_extend(t->st, &r, &written, &err), 0);
	assert_false(written);
	assert_int_equal(fc_store_ban_get(t->st, &r.p, 0, &got, &found, &err), 0);
	assert_true(found);
	assert_int_equal(got.expires, 0);
	assert_int_equal(got.by_policy, 0);
}

static void test_rollback_and_reopen(void **state)
{
	struct fc_t *t = *state;
	struct fc_err err;

	assert_int_equal(fc_store_begin(t->st, &err), 0);
	fc_put(t->st, "198.18.0.1", 0, 0);
	fc_store_rollback(t->st);
	assert_int_equal(live_bans(t->st, 0), 0);

	assert_int_equal(fc_store_begin(t->st, &err), 0);
	fc_put(t->st, "2001:db8::/48", 7, 0);
	assert_int_equal(fc_store_commit(t->st, &err), 0);
	fc_store_close(t->st);
	if (fc_store_open(t->path, &t->st, &err) < 0)
		fail_msg("%s", err.msg);
	assert_int_equal(live_bans(t->st, 0), 1);
}

/* A row this version never writes is reported, not published. */
static void test_corrupt_row(void **state)
{
	struct fc_t *t = *state;
	struct fc_ban_row *rows;
	struct fc_err err;
	size_t n;
	char want[768];

	fc_raw_sql(t, "INSERT INTO bans (family, addr, len, created) VALUES (4, x'0102', 32, 0)",
		   "INSERT INTO bans (family, addr, len, created) VALUES (4, '\\x0102', 32, 0)");
	assert_int_equal(fc_store_ban_list(t->st, 0, &rows, &n, &err), -1);
	snprintf(want, sizeof(want), "store %s: corrupt ban row (family 4, 2 address bytes, length 32)", t->path);
	assert_string_equal(err.msg, want);
}

/* Allow entries: an address, a prefix and a uid under one key scheme;
 * existed, replace, expiry, purge, delete by key, clear, corrupt rows. */
static void test_allows(void **state)
{
	struct fc_t *t = *state;
	struct fc_allow_row a = { .created = 5, .expires = 100 }, *rows;
	struct fc_err err;
	char want[768];
	size_t n;
	bool existed, found;

	assert_int_equal(fc_prefix_parse("198.18.0.0/24", &a.p, &err), 0);
	snprintf(a.note, sizeof(a.note), "partner");
	assert_int_equal(fc_store_allow_put(t->st, &a, 0, &existed, &err), 0);
	assert_false(existed);
	a.expires = 0; /* replaced: no expiry */
	assert_int_equal(fc_store_allow_put(t->st, &a, 0, &existed, &err), 0);
	assert_true(existed);
	memset(&a, 0, sizeof(a));
	snprintf(a.uid, sizeof(a.uid), "alice");
	a.expires = 50;
	assert_int_equal(fc_store_allow_put(t->st, &a, 0, &existed, &err), 0);
	assert_false(existed);
	memset(&a, 0, sizeof(a));
	assert_int_equal(fc_prefix_parse("2001:db8::1", &a.p, &err), 0);
	assert_int_equal(fc_store_allow_put(t->st, &a, 0, &existed, &err), 0);

	assert_int_equal(fc_store_allow_list(t->st, 10, &rows, &n, &err), 0);
	assert_int_equal(n, 3);
	assert_int_equal(rows[0].p.family, 4); /* addresses first, then uids */
	assert_int_equal(rows[0].p.len, 24);
	assert_int_equal(rows[0].expires, 0);
	assert_string_equal(rows[0].note, "partner");
	assert_int_equal(rows[1].p.family, 6);
	assert_string_equal(rows[1].note, "");
	assert_int_equal(rows[2].p.family, 0);
	assert_string_equal(rows[2].uid, "alice");
	assert_int_equal(rows[2].expires, 50);
	free(rows);
	assert_int_equal(fc_store_allow_list(t->st, 50, &rows, &n, &err), 0); /* alice's lapsed at 50 */
	assert_int_equal(n, 2);
	free(rows);
	assert_int_equal(fc_store_allow_purge(t->st, 60, &n, &err), 0);
	assert_int_equal(n, 1);
	/* Deleted by key: the uid's key is not the address's. */
	assert_int_equal(fc_store_allow_del(t->st, &a, &found, &err), 0);
	assert_true(found);
	assert_int_equal(fc_store_allow_del(t->st, &a, &found, &err), 0);
	assert_false(found);
	assert_int_equal(fc_store_allows_clear(t->st, &err), 0);
	assert_int_equal(fc_store_allow_list(t->st, 0, &rows, &n, &err), 0);
	assert_int_equal(n, 0);
	free(rows);

	fc_raw_sql(t, "INSERT INTO allows (family, addr, len, uid, created) VALUES (0, x'01', 0, 'bob', 0)",
		   "INSERT INTO allows (family, addr, len, uid, created) VALUES (0, '\\x01', 0, 'bob', 0)");
	assert_int_equal(fc_store_allow_list(t->st, 0, &rows, &n, &err), -1);
	snprintf(want, sizeof(want), "store %s: corrupt allow row (family 0, 1 address bytes, length 0)", t->path);
	assert_string_equal(err.msg, want);
}

static void test_newer_schema_refused(void **state)
{
	struct fc_t *t = *state;
	struct fc_store *st;
	struct fc_err err;
	char want[768];

	fc_raw_sql(t, "PRAGMA user_version = 99", "UPDATE meta SET value = 99 WHERE key = 'schema'");
	assert_int_equal(fc_store_open(t->path, &st, &err), -1);
	snprintf(want, sizeof(want), "store %s: schema version 99 is newer than this freqctl knows (%d)", t->path,
		 t->pg ? FC_PG_LAST : FC_SQ_LAST);
	assert_string_equal(err.msg, want);
}

static void test_open_errors(void **state)
{
	struct fc_store *st;
	struct fc_err err;

	(void)state;
	assert_int_equal(fc_store_open("/proc/freqctl-test/store.db", &st, &err), -1);
	assert_string_equal(err.msg, "store /proc/freqctl-test/store.db: cannot create /proc/freqctl-test: No such "
				     "file or directory");
}

static struct fc_policy_spec fc_spec(uint32_t id, const char *match, const char *rates)
{
	struct fc_policy_spec p = { .id = id };
	struct fc_err err;

	if (fc_match_parse(match, &p, &err) < 0 || fc_rates_parse(rates, &p, &err) < 0)
		fail_msg("%s", err.msg);
	return p;
}

static void fc_policy_put_ok(struct fc_store *st, const struct fc_policy_spec *p, struct fc_policy_row *row)
{
	struct fc_err err;

	if (fc_store_policy_put(st, p, 100, row, &err) < 0)
		fail_msg("%s", err.msg);
}

/* Puts p, a policy the store has, and says whether its buckets start afresh
 * (a new epoch in the same slot) since *row, which becomes p's. */
static bool fc_policy_put_fresh(struct fc_store *st, const struct fc_policy_spec *p, struct fc_policy_row *row)
{
	struct fc_policy_row r;
	bool fresh;

	fc_policy_put_ok(st, p, &r);
	assert_int_equal(r.slot, row->slot);
	fresh = r.epoch != row->epoch;
	*row = r;
	return fresh;
}

/* Puts p and reads it back as it was given. */
static void fc_policy_round_trip(struct fc_store *st, const struct fc_policy_spec *p, struct fc_policy_row *row)
{
	struct fc_policy_row got;
	struct fc_err err;
	bool found;

	fc_policy_put_ok(st, p, row);
	assert_int_equal(fc_store_policy_get(st, p->id, &got, &found, &err), 0);
	assert_true(found);
	assert_memory_equal(&got.spec, p, sizeof(*p));
}

/* Policies: round trip, slots kept and reused, epochs, refusals. */
static void test_policies(void **state)
{
	struct fc_t *t = *state;
	/* --burst for the first tier, :B for the second: both kept as given. */
	struct fc_policy_spec a = fc_spec(7, "ip=198.18.0.0/15", "10/s,100/d:40"), b = fc_spec(9, "ip=*", "5/m");
	struct fc_policy_row ra, rb, rc, got, *rows;
	struct fc_err err;
	size_t n;
	bool found;

	a.burst = 3;
	a.action = FC_ACTION_LOG;
	a.count = FC_COUNT_SYN;
	b.algo = FC_ALGO_WINDOW;
	b.new_sources = 500;
	fc_policy_put_ok(t->st, &a, &ra);
	fc_policy_put_ok(t->st, &b, &rb);
	assert_int_equal(ra.slot, 1);
	assert_int_equal(rb.slot, 2);
	assert_int_not_equal(ra.epoch, rb.epoch);

	assert_int_equal(fc_store_policy_get(t->st, 7, &got, &found, &err), 0);
	assert_true(found);
	assert_memory_equal(&got.spec, &a, sizeof(a));
	assert_int_equal(got.slot, 1);

	/* New limits, same match: slot and epoch kept (the bucket state stays). */
	a.rate[0].n = 20;
	fc_policy_put_ok(t->st, &a, &rc);
	assert_int_equal(rc.slot, ra.slot);
	assert_int_equal(rc.epoch, ra.epoch);
	/* New match: same slot, new epoch. */
	a.ip.len = 16;
	a.ip.a[1] = 18;
	fc_policy_put_ok(t->st, &a, &rc);
	assert_int_equal(rc.slot, ra.slot);
	assert_int_not_equal(rc.epoch, ra.epoch);

	/* One policy per match at a layer. */
	b.id = 10;
	assert_int_equal(fc_store_policy_put(t->st, &b, 100, &rc, &err), FC_STORE_REFUSED);
	assert_string_equal(err.msg, "ip=* is already limited at XDP/TC by policy 9 (one policy per match at each "
				    "layer; --layer http puts one in nginx beside it)");

	/* A freed slot is the next one given. */
	assert_int_equal(fc_store_policy_del(t->st, 7, &found, &err), 0);
	assert_true(found);
	assert_int_equal(fc_store_policy_del(t->st, 7, &found, &err), 0);
	assert_false(found);
	b = fc_spec(11, "ip=2001:db8::/32", "1/s");
	fc_policy_put_ok(t->st, &b, &rc);
	assert_int_equal(rc.slot, 1);
	b = fc_spec(12, "ip=2001:db8::1", "1/s");
	fc_policy_put_ok(t->st, &b, &rc);
	assert_int_equal(rc.slot, 3);

	assert_int_equal(fc_store_policy_list(t->st, &rows, &n, &err), 0);
	assert_int_equal(n, 3);
	assert_int_equal(rows[0].spec.id, 9);
	assert_int_equal(rows[1].spec.id, 11);
	assert_int_equal(rows[2].spec.id, 12);
	assert_int_equal(rows[0].spec.new_sources, 500);
	free(rows);

	/* --algo sliding is a value the schema takes (v7 rebuilt the CHECK). */
	b = fc_spec(13, "uid=s", "10/m");
	fc_policy_put_ok(t->st, &b, &ra);
	b.algo = FC_ALGO_SLIDING;
	fc_policy_put_ok(t->st, &b, &rc);
	assert_int_equal(fc_store_policy_get(t->st, 13, &got, &found, &err), 0);
	assert_true(found);
	assert_memory_equal(&got.spec, &b, sizeof(b));
	/* Another algorithm reads the bucket words otherwise: a new epoch. */
	assert_int_equal(rc.slot, ra.slot);
	assert_int_not_equal(rc.epoch, ra.epoch);

	/* --concurrency, with no rate: kept; adding or removing it, or another
	 * count of rates beside it, moves a key's words: a new epoch each time;
	 * another N does not. */
	b = fc_spec(14, "uid=*", "");
	b.concurrency = 3;
	fc_policy_round_trip(t->st, &b, &ra);
	b.concurrency = 5;
	assert_false(fc_policy_put_fresh(t->st, &b, &ra));
	b = fc_spec(14, "uid=*", "10/s");
	b.concurrency = 5;
	assert_true(fc_policy_put_fresh(t->st, &b, &ra));
	b.rate[0].n = 20;
	assert_false(fc_policy_put_fresh(t->st, &b, &ra));
	b.concurrency = 0;
	assert_true(fc_policy_put_fresh(t->st, &b, &ra));
	b = fc_spec(14, "uid=*", "20/s,100/m"); /* no cap: another count of rates keeps the words */
	assert_false(fc_policy_put_fresh(t->st, &b, &ra));

	/* --warmup round-trips (v9 / PostgreSQL v5). New limits keep the
	 * buckets; another warm-up, or another number of rates (the ramp's
	 * word sits after the rates'), starts them afresh. */
	b = fc_spec(15, "uid=w", "30/s");
	b.warmup = 10;
	fc_policy_round_trip(t->st, &b, &ra);
	b.rate[0].n = 40;
	assert_false(fc_policy_put_fresh(t->st, &b, &ra));
	b.warmup = 20;
	assert_true(fc_policy_put_fresh(t->st, &b, &ra));
	b = fc_spec(15, "uid=w", "40/s,1000/h");
	b.warmup = 20;
	assert_true(fc_policy_put_fresh(t->st, &b, &ra));
	b.warmup = 0;
	assert_true(fc_policy_put_fresh(t->st, &b, &ra));

	/* --override round-trips (v11 / PostgreSQL v7) and keeps the buckets:
	 * it changes which policies apply, not how one counts. */
	b = fc_spec(17, "ip=198.18.0.0/24", "30/s");
	b.override = true;
	fc_policy_round_trip(t->st, &b, &ra);
	b.override = false;
	assert_false(fc_policy_put_fresh(t->st, &b, &ra));
	fc_policy_round_trip(t->st, &b, &ra);

	/* Both: the ramp's word, then a key's count. Another N of either keeps
	 * the buckets; another number of rates, or either added or removed,
	 * moves the count's word: a new epoch. */
	b = fc_spec(16, "uid=*,uri=/wc", "30/s");
	b.warmup = 10;
	b.concurrency = 2;
	fc_policy_round_trip(t->st, &b, &ra);
	b.concurrency = 4;
	b.rate[0].n = 60;
	assert_false(fc_policy_put_fresh(t->st, &b, &ra));
	b = fc_spec(16, "uid=*,uri=/wc", "60/s,1000/h");
	b.warmup = 10;
	b.concurrency = 4;
	assert_true(fc_policy_put_fresh(t->st, &b, &ra));
	b.concurrency = 0;
	assert_true(fc_policy_put_fresh(t->st, &b, &ra));
	b.concurrency = 4;
	b.warmup = 0;
	assert_true(fc_policy_put_fresh(t->st, &b, &ra));
}

/* A policy row edited by hand into nonsense is reported, not published. */
static void test_policy_corrupt(void **state)
{
	struct fc_t *t = *state;
	struct fc_policy_spec a = fc_spec(7, "ip=198.18.0.7", "10/s");
	struct fc_policy_row r, *rows;
	struct fc_err err;
	size_t n;
	char want[768];

	struct fc_policy_spec b = fc_spec(8, "uid=u8", "5/m");
	const char *why;
	bool found;

	fc_policy_put_ok(t->st, &a, &r);
	fc_policy_put_ok(t->st, &b, &r);
	fc_raw_sql(t, "UPDATE policies SET rates = '10/x' WHERE id = 7", "UPDATE policies SET rates = '10/x' WHERE id = 7");
	/* One row not valid as written blocks nothing: the rest is listed, the
	 * bad one counted and named. */
	assert_int_equal(fc_store_policy_list(t->st, &rows, &n, &err), 0);
	assert_int_equal(n, 1);
	assert_int_equal(rows[0].spec.id, 8);
	free(rows);
	assert_int_equal(fc_store_bad_policies(t->st, &why), 1);
	snprintf(want, sizeof(want), "store %s: policy 7: rate \"10/x\": unit must be one of s, m, h, d", t->path);
	assert_string_equal(why, want);
	/* Asked for by id, it is an error; and it can still be deleted. */
	assert_int_equal(fc_store_policy_get(t->st, 7, &r, &found, &err), -1);
	assert_string_equal(err.msg, want);
	assert_int_equal(fc_store_policy_del(t->st, 7, &found, &err), 0);
	assert_true(found);
	assert_int_equal(fc_store_policy_list(t->st, &rows, &n, &err), 0);
	assert_int_equal(n, 1);
	assert_int_equal(fc_store_bad_policies(t->st, &why), 0);
	free(rows);
}

/* ip=* with a unit: one such policy at XDP/TC whatever its unit (the
 * packet path has one), found as the ip=* policy and its changes published
 * as its; in nginx as many as wanted. */
static void test_star_units(void **state)
{
	struct fc_t *t = *state;
	struct fc_policy_spec a = fc_spec(1, "ip=*/24", "5/m"), b = fc_spec(2, "ip=*", "5/m");
	struct fc_policy_row ra, rb, got;
	struct fc_store_log h0, h1;
	struct fc_delta d;
	struct fc_err err;
	bool found;
	size_t i;

	fc_policy_put_ok(t->st, &a, &ra);
	assert_int_equal(fc_store_policy_star(t->st, &got, &found, &err), 0);
	assert_true(found);
	assert_int_equal(got.spec.id, 1);
	assert_int_equal(fc_star_len4(&got.spec), 24);
	assert_int_equal(fc_star_len6(&got.spec), 64);
	assert_int_equal(fc_store_policy_put(t->st, &b, 100, &rb, &err), FC_STORE_REFUSED);
	assert_string_equal(err.msg,
			    "ip=*: policy 1 is the ip=* policy at XDP/TC, and there is one, whatever its unit "
			    "(change its --match with policy set 1, or put this one in nginx with --layer http)");
	b.layer = FC_LAYER_XDP;
	assert_int_equal(fc_store_policy_put(t->st, &b, 100, &rb, &err), FC_STORE_REFUSED);
	/* In nginx, beside it: per address and per /64 as well as per /24. */
	b.layer = FC_LAYER_HTTP;
	fc_policy_put_ok(t->st, &b, &rb);
	b = fc_spec(3, "ip=*/32/128", "50/m");
	b.layer = FC_LAYER_HTTP;
	fc_policy_put_ok(t->st, &b, &rb);
	b = fc_spec(4, "ip=*/24,uri=/login", "5/m");
	fc_policy_put_ok(t->st, &b, &rb);
	assert_int_equal(fc_store_policy_star(t->st, &got, &found, &err), 0);
	assert_true(found);
	assert_int_equal(got.spec.id, 1);
	/* Its own unit changed: the same slot, a new epoch (new buckets), and
	 * the change is the ip=* policy's. */
	assert_int_equal(fc_store_log_head(t->st, &h0, &err), 0);
	a = fc_spec(1, "ip=*/32/56", "5/m");
	fc_policy_put_ok(t->st, &a, &rb);
	assert_int_equal(rb.slot, ra.slot);
	assert_int_not_equal(rb.epoch, ra.epoch);
	assert_int_equal(fc_store_log_head(t->st, &h1, &err), 0);
	if (fc_store_delta(t->st, h0.head, h1.head, 0, "test", &d, &err) < 0)
		fail_msg("%s", err.msg);
	for (i = 0; i < d.npols && d.pols[i].id != 1; i++)
		;
	assert_true(i < d.npols);
	assert_true(d.pols[i].star);
	fc_delta_free(&d);
	assert_int_equal(fc_store_policy_get(t->st, 1, &got, &found, &err), 0);
	assert_int_equal(fc_star_len6(&got.spec), 56);
	/* Gone from XDP/TC, another may take its place: plain ip=* too, beside
	 * nginx's (a match is unique at each layer), then no other. */
	assert_int_equal(fc_store_policy_del(t->st, 1, &found, &err), 0);
	b = fc_spec(5, "ip=*", "5/m");
	fc_policy_put_ok(t->st, &b, &rb);
	assert_int_equal(fc_store_policy_star(t->st, &got, &found, &err), 0);
	assert_true(found);
	assert_int_equal(got.spec.id, 5);
	b = fc_spec(6, "ip=*/16", "5/m");
	assert_int_equal(fc_store_policy_put(t->st, &b, 100, &rb, &err), FC_STORE_REFUSED);
	assert_string_equal(err.msg,
			    "ip=*/16: policy 5 is the ip=* policy at XDP/TC, and there is one, whatever its unit "
			    "(change its --match with policy set 5, or put this one in nginx with --layer http)");
}

/* A version-1 store (bans only) is upgraded in place, its bans kept. */
static void test_migrate_v1(void **state)
{
	struct fc_t *t = *state;
	struct fc_store *st;
	struct fc_err err;
	char wal[128];
	sqlite3 *db;

	fc_store_close(t->st);
	t->st = NULL;
	assert_int_equal(unlink(t->path), 0);
	unlink(strcat(strcpy(wal, t->path), "-wal"));
	/* The first schema, as its release wrote it. */
	assert_int_equal(sqlite3_open(t->path, &db), SQLITE_OK);
	assert_int_equal(sqlite3_exec(db,
				      "CREATE TABLE bans (family INTEGER NOT NULL CHECK (family IN (4, 6)), addr BLOB "
				      "NOT NULL, len INTEGER NOT NULL, created INTEGER NOT NULL, expires INTEGER, "
				      "PRIMARY KEY (family, addr, len)) WITHOUT ROWID;"
				      "CREATE INDEX bans_expires ON bans (expires) WHERE expires IS NOT NULL;"
				      "INSERT INTO bans VALUES (4, x'c6120007', 32, 1, NULL);"
				      "PRAGMA user_version = 1",
				      NULL, NULL, NULL),
			 SQLITE_OK);
	sqlite3_close(db);
	if (fc_store_open(t->path, &st, &err) < 0)
		fail_msg("%s", err.msg);
	t->st = st;
	assert_int_equal(live_bans(st, 0), 1);
	test_policies(state);
}

static void test_nodes(void **state)
{
	struct fc_t *t = *state;
	struct fc_node n = { .name = "edge-a", .weight = 0.25 }, *rows;
	struct fc_err err;
	double w;
	size_t cnt;

	assert_int_equal(fc_store_node_weight(t->st, "edge-a", &w, &err), 0);
	assert_true(w == 1.0); /* no row: the whole rate */
	assert_int_equal(fc_store_node_put(t->st, &n, &err), 0);
	n.weight = 0.75;
	snprintf(n.name, sizeof(n.name), "edge-b");
	assert_int_equal(fc_store_node_put(t->st, &n, &err), 0);
	assert_int_equal(fc_store_node_weight(t->st, "edge-a", &w, &err), 0);
	assert_true(w == 0.25);
	assert_int_equal(fc_store_node_list(t->st, &rows, &cnt, &err), 0);
	assert_int_equal(cnt, 2);
	assert_string_equal(rows[1].name, "edge-b");
	assert_true(rows[1].weight == 0.75);
	free(rows);
	n.weight = 1.5;
	assert_int_equal(fc_store_node_put(t->st, &n, &err), -1); /* the schema's CHECK */
	assert_int_equal(fc_store_nodes_clear(t->st, &err), 0);
	assert_int_equal(fc_store_node_list(t->st, &rows, &cnt, &err), 0);
	assert_int_equal(cnt, 0);
	free(rows);
}

/* Another connection's commit changes the version the agent watches. */
static void test_version(void **state)
{
	struct fc_t *t = *state;
	struct fc_store *other;
	struct fc_err err;
	int64_t v0, v = 0;
	int i;

	assert_int_equal(fc_store_data_version(t->st, &v0, &err), 0);
	if (fc_store_open(t->path, &other, &err) < 0)
		fail_msg("%s", err.msg);
	fc_put(other, "198.18.0.1", 0, 0);
	fc_store_close(other);
	/* PostgreSQL's NOTIFY arrives a moment after the commit. */
	for (i = 0; i < 200; i++) {
		assert_int_equal(fc_store_data_version(t->st, &v, &err), 0);
		if (v != v0)
			break;
		usleep(5000);
	}
	assert_true(v != v0);
	assert_true(t->pg ? fc_store_watch_fd(t->st) >= 0 : fc_store_watch_fd(t->st) == -1);
}

/* The cases both backends run, each on a fresh store made by setup. */
/* Policies written before the address columns (ip_*) existed, or by a
 * script that left them empty: filled once when the store is opened, so a
 * prefix finds the policies it covers, and its own. */
static void test_policy_ip_fill(void **state)
{
	struct fc_t *t = *state;
	struct fc_policy_spec a = fc_spec(5, "ip=198.18.0.0/24", "10/s"), b = fc_spec(6, "ip=198.18.0.7", "10/s"),
			      c = fc_spec(7, "uid=u1", "10/s");
	struct fc_policy_row row;
	struct fc_key_rule *rows = NULL;
	struct fc_prefix p = fc_row("198.18.0.0/16", 0, 0).p;
	struct fc_err err;
	size_t n = 0, i;

	fc_policy_put_ok(t->st, &a, &row);
	fc_policy_put_ok(t->st, &b, &row);
	fc_policy_put_ok(t->st, &c, &row);
	fc_store_close(t->st);
	t->st = NULL;
	fc_raw_sql(t, "UPDATE policies SET ip_family = NULL, ip_addr = NULL, ip_len = NULL;"
		      "UPDATE meta SET value = 0 WHERE key = 'policy_ip'",
		   "UPDATE policies SET ip_family = NULL, ip_addr = NULL, ip_len = NULL;"
		   "UPDATE meta SET value = 0 WHERE key = 'policy_ip'");
	if (fc_store_open(t->path, &t->st, &err) < 0)
		fail_msg("%s", err.msg);
	assert_int_equal(fc_store_prefix_rules(t->st, &p, 0, &rows, &n, &err), 0);
	assert_true(n > 0); /* the /24's (maybe twice: the caller keeps what it needs) */
	for (i = 0; i < n; i++) {
		assert_int_equal(rows[i].src, FC_SRC_POLICY);
		assert_int_equal(rows[i].p.len, 24); /* exact addresses are not prefixes */
	}
	free(rows);
}

/* The triggers and functions of the change log, as a store of the schema
 * before it (SQLite v11, PostgreSQL v7) has none of them. */
#define FC_SQ_DROP_LOG(t) "DROP TRIGGER " t "_log_ins; DROP TRIGGER " t "_log_upd; DROP TRIGGER " t "_log_del;"

/* A store of main's last schema before the change log (SQLite v11 with
 * --concurrency, --warmup, allow lists and --override, PostgreSQL v7), with
 * a ban, an allow entry and policies in it, is upgraded in place when
 * opened: its rows kept, its policies' address columns filled, its changes
 * logged from then on (an allow entry's too). */
static void test_migrate_from_warmup(void **state)
{
	struct fc_t *t = *state;
	struct fc_policy_spec a = fc_spec(5, "ip=198.18.0.0/24", "10/s"), b = fc_spec(6, "uid=u1", "10/s");
	struct fc_prefix p = fc_row("198.18.0.0/16", 0, 0).p;
	struct fc_store_log log, after;
	struct fc_key_rule *rows = NULL;
	struct fc_allow_row al = { .created = 1 }, *allows = NULL;
	struct fc_policy_row row;
	struct fc_delta d = { 0 };
	struct fc_err err;
	bool found, existed;
	size_t n = 0;

	b.warmup = 10;
	b.concurrency = 3;
	b.override = true;
	fc_put(t->st, "198.18.7.7", 1, 0);
	assert_int_equal(fc_prefix_parse("198.18.9.0/24", &al.p, &err), 0);
	assert_int_equal(fc_store_allow_put(t->st, &al, 0, &existed, &err), 0);
	fc_policy_put_ok(t->st, &a, &row);
	fc_policy_put_ok(t->st, &b, &row);
	fc_store_close(t->st);
	t->st = NULL;
	fc_raw_sql(t,
		   FC_SQ_DROP_LOG("bans") FC_SQ_DROP_LOG("set_bans") FC_SQ_DROP_LOG("uid_bans")
		   FC_SQ_DROP_LOG("policies") FC_SQ_DROP_LOG("nodes") FC_SQ_DROP_LOG("ban_sets")
		   FC_SQ_DROP_LOG("allows")
		   "DROP TABLE fleet_nodes;" /* the round's step, after this one */
		   "DROP TABLE changes; DROP TABLE set_bans; DROP TABLE ban_sets;"
		   "DROP INDEX policies_ip; DROP INDEX policies_pfx4; DROP INDEX policies_pfx6;"
		   "DROP INDEX bans_pfx4; DROP INDEX bans_pfx6; DROP INDEX uid_bans_expires;"
		   "ALTER TABLE policies DROP COLUMN ip_family; ALTER TABLE policies DROP COLUMN ip_addr;"
		   "ALTER TABLE policies DROP COLUMN ip_len;"
		   "DELETE FROM meta WHERE key IN ('store_id', 'log_pruned', 'policy_ip');"
		   "PRAGMA user_version = 11",
		   /* The round's step, after this one. */
		   "DROP TABLE fleet_nodes; ALTER TABLE policies DROP COLUMN show_keys, DROP COLUMN fleet,"
		   "  DROP CONSTRAINT policies_match_layer_key, ADD CONSTRAINT policies_match_key UNIQUE (match),"
		   "  ALTER COLUMN layer DROP NOT NULL;"
		   "DROP TABLE changes; DROP TABLE set_bans CASCADE; DROP TABLE ban_sets CASCADE;"
		   "DROP FUNCTION freqctl_lock, freqctl_log_reset, freqctl_log_key, freqctl_log_uid, freqctl_log_policy,"
		   "  freqctl_log_node, freqctl_log_set, freqctl_log_allow, freqctl_log_fleet CASCADE;"
		   "DROP INDEX bans_pfx4, bans_pfx6, uid_bans_expires;"
		   "ALTER TABLE policies DROP COLUMN ip_family, DROP COLUMN ip_addr, DROP COLUMN ip_len;"
		   "DELETE FROM meta WHERE key IN ('store_id', 'log_pruned', 'policy_ip');"
		   "UPDATE meta SET value = 7 WHERE key = 'schema'");
	if (fc_store_open(t->path, &t->st, &err) < 0)
		fail_msg("%s", err.msg);
	assert_int_equal(live_bans(t->st, 0), 1);
	assert_int_equal(fc_store_policy_get(t->st, 6, &row, &found, &err), 0);
	assert_true(found);
	assert_int_equal(row.spec.warmup, 10);
	assert_int_equal(row.spec.concurrency, 3);
	assert_true(row.spec.override);
	assert_int_equal(fc_store_allow_list(t->st, 0, &allows, &n, &err), 0);
	assert_int_equal(n, 1);
	free(allows);
	assert_int_equal(fc_store_prefix_rules(t->st, &p, 0, &rows, &n, &err), 0);
	assert_true(n > 0); /* the /24's policy, its address columns filled */
	assert_int_equal(rows[0].src, FC_SRC_POLICY);
	free(rows);
	assert_int_equal(fc_store_log_head(t->st, &log, &err), 0);
	assert_int_not_equal(log.id, 0);
	fc_put(t->st, "198.18.7.8", 1, 0);
	assert_int_equal(fc_store_log_head(t->st, &after, &err), 0);
	assert_int_equal(after.id, log.id);
	assert_true(after.head > log.head);
	if (fc_store_delta(t->st, log.head, after.head, 0, "test", &d, &err) < 0)
		fail_msg("%s", err.msg);
	assert_true(d.nkeys > 0); /* the key, and the ban on it */
	for (n = 0; n < d.nkeys; n++)
		assert_int_equal(d.keys[n].p.a[3], 8);
	assert_false(d.allows);
	fc_delta_free(&d);
	/* An allow entry's change is logged, and not as a key's: it is
	 * published by publishing everything. */
	al.p.a[2] = 10;
	assert_int_equal(fc_store_allow_put(t->st, &al, 0, &existed, &err), 0);
	assert_int_equal(fc_store_log_head(t->st, &log, &err), 0);
	if (fc_store_delta(t->st, after.head, log.head, 0, "test", &d, &err) < 0)
		fail_msg("%s", err.msg);
	assert_true(d.allows);
	assert_int_equal(d.nkeys, 0);
	fc_delta_free(&d);
}


/* A policy's layer: an ip=* at XDP/TC and one in nginx side by side (one
 * per match at each layer); the layer read back as the spec gave it (auto
 * where the match gives it anyway); show_keys and fleet kept. */
static void test_policy_layers(void **state)
{
	struct fc_t *t = *state;
	struct fc_policy_spec x = fc_spec(1, "ip=*", "20/s"), h = fc_spec(2, "ip=*", "5/s"), u = fc_spec(3, "uid=*", "1/s");
	struct fc_policy_row rx, rh, ru, row;
	struct fc_err err;
	bool found;

	h.layer = FC_LAYER_HTTP;
	h.show_keys = -1;
	u.show_keys = 1;
	u.fleet = true;
	fc_policy_round_trip(t->st, &x, &rx);
	fc_policy_round_trip(t->st, &h, &rh);
	fc_policy_round_trip(t->st, &u, &ru);
	assert_int_not_equal(rx.slot, rh.slot);
	/* The XDP one is the kernel's ip=* policy. */
	assert_int_equal(fc_store_policy_star(t->st, &row, &found, &err), 0);
	assert_true(found);
	assert_int_equal(row.spec.id, 1);
	/* A third at either layer is refused, saying which holds it. */
	x.id = h.id = 4;
	assert_int_equal(fc_store_policy_put(t->st, &x, 100, &row, &err), FC_STORE_REFUSED);
	assert_string_equal(err.msg, "ip=* is already limited at XDP/TC by policy 1 (one policy per match at each "
				    "layer; --layer http puts one in nginx beside it)");
	assert_int_equal(fc_store_policy_put(t->st, &h, 100, &row, &err), FC_STORE_REFUSED);
	assert_string_equal(err.msg, "ip=* is already limited in nginx by policy 2 (one policy per match at each "
				    "layer; without --layer http, an ip= policy runs at XDP/TC)");
	/* A match of nginx's alone: no layer to choose, no hint about one. */
	u.id = 4;
	assert_int_equal(fc_store_policy_put(t->st, &u, 100, &row, &err), FC_STORE_REFUSED);
	assert_string_equal(err.msg, "uid=* is already limited by policy 3 (one policy per match: change that one "
				    "with 'freqctl policy edit 3')");
	/* --layer xdp said or not is the same policy: auto read back. */
	x.id = 1;
	x.layer = FC_LAYER_XDP;
	fc_policy_put_ok(t->st, &x, &row);
	assert_int_equal(row.epoch, rx.epoch);
	assert_int_equal(fc_store_policy_get(t->st, 1, &row, &found, &err), 0);
	assert_int_equal(row.spec.layer, FC_LAYER_AUTO);
	/* Moved to nginx: fresh buckets (packets became requests). */
	x.layer = FC_LAYER_HTTP;
	assert_int_equal(fc_store_policy_del(t->st, 2, &found, &err), 0);
	assert_true(fc_policy_put_fresh(t->st, &x, &rx));
	/* A fleet's N edited keeps its buckets (the window keeps its split);
	 * its unit does not: a key's word is labelled with a window of it. */
	u.id = 3;
	u.rate[0].n = 2;
	assert_false(fc_policy_put_fresh(t->st, &u, &ru));
	u.rate[0].unit_secs = 60;
	assert_true(fc_policy_put_fresh(t->st, &u, &ru));
	/* A fleet's rate turned a node's: fresh buckets (credit is not a count). */
	u.fleet = false;
	assert_true(fc_policy_put_fresh(t->st, &u, &ru));
	assert_int_equal(fc_store_policy_get(t->st, 3, &row, &found, &err), 0);
	assert_false(row.spec.fleet);
	assert_int_equal(row.spec.show_keys, 1);
}

/* The fleet's key: made once, the same for every connection after; the
 * fleet's node set, window by window. */
static void test_fleet_store(void **state)
{
	struct fc_t *t = *state;
	struct fc_fleet_node *rows = NULL;
	struct fc_store_log log, after;
	struct fc_delta d = { 0 };
	struct fc_store *other;
	uint64_t k[2], k2[2];
	struct fc_err err;
	size_t n = 0;

	assert_int_equal(fc_store_fleet_secret(t->st, k, &err), 0);
	assert_true(k[0] || k[1]);
	if (fc_store_open(t->path, &other, &err) < 0)
		fail_msg("%s", err.msg);
	assert_int_equal(fc_store_fleet_secret(other, k2, &err), 0);
	fc_store_close(other);
	assert_memory_equal(k, k2, sizeof(k));

	/* web1 from 1000 + the delay; web2 joins; web1's weight changes later. */
	assert_int_equal(fc_store_log_head(t->st, &log, &err), 0);
	assert_int_equal(fc_store_begin(t->st, &err), 0);
	assert_int_equal(fc_store_fleet_node_set(t->st, "web1", 250000, 1000, &err), 0);
	assert_int_equal(fc_store_fleet_node_set(t->st, "web2", 750000, 1000, &err), 0);
	assert_int_equal(fc_store_fleet_node_set(t->st, "web1", 500000, 5000, &err), 0);
	assert_int_equal(fc_store_commit(t->st, &err), 0);
	/* Logged: agents republish the fleet's shares. */
	assert_int_equal(fc_store_log_head(t->st, &after, &err), 0);
	assert_int_equal(fc_store_delta(t->st, log.head, after.head, 0, "web1", &d, &err), 0);
	assert_true(d.fleet);
	assert_false(d.weight);
	assert_int_equal(d.nkeys, 0);
	fc_delta_free(&d);
	assert_int_equal(fc_store_fleet_nodes_at(t->st, 1000 + FC_FLEET_NODE_DELAY_MS - 1, &rows, &n, &err), 0);
	assert_int_equal(n, 0); /* not yet */
	free(rows);
	assert_int_equal(fc_store_fleet_nodes_at(t->st, 1000 + FC_FLEET_NODE_DELAY_MS, &rows, &n, &err), 0);
	assert_int_equal(n, 2);
	assert_string_equal(rows[0].name, "web1");
	assert_int_equal(rows[0].no, 1);
	assert_int_equal(rows[0].weight, 250000);
	assert_int_equal(rows[0].until, 5000 + FC_FLEET_NODE_DELAY_MS);
	assert_string_equal(rows[1].name, "web2");
	assert_int_equal(rows[1].no, 2);
	free(rows);
	assert_int_equal(fc_store_fleet_nodes_at(t->st, 5000 + FC_FLEET_NODE_DELAY_MS, &rows, &n, &err), 0);
	assert_int_equal(n, 2);
	assert_int_equal(rows[0].no, 1); /* the same number */
	assert_int_equal(rows[0].weight, 500000);
	assert_int_equal(rows[0].until, 0);
	free(rows);
	/* web2 leaves; its row stays until purged. */
	assert_int_equal(fc_store_fleet_node_set(t->st, "web2", 0, 9000, &err), 0);
	assert_int_equal(fc_store_fleet_nodes_at(t->st, 9000 + FC_FLEET_NODE_DELAY_MS, &rows, &n, &err), 0);
	assert_int_equal(n, 1);
	free(rows);
	assert_int_equal(fc_store_fleet_nodes_purge(t->st, 9000 + FC_FLEET_NODE_DELAY_MS, &n, &err), 0);
	assert_int_equal(n, 2); /* web1's first row, web2's */
	/* A weight out of range is the schema's CHECK. */
	assert_int_equal(fc_store_fleet_node_set(t->st, "web3", FC_FLEET_WEIGHT_ONE + 1, 9000, &err), -1);
}

/* The fleet's node set follows the nodes: node set and agent --weight open
 * a row only when the weight changes, an agent without --weight joins at
 * its weight (1 without a row), node del closes it, import follows what
 * nodes became; closed rows are purged a day past their end with the bans. */
static void test_fleet_nodes_follow(void **state)
{
	const int64_t d = FC_FLEET_NODE_DELAY_MS;
	struct fc_t *t = *state;
	struct fc_node web1 = { .name = "web1", .weight = 0.25 }, web2 = { .name = "web2", .weight = 0.75 };
	struct fc_fleet_node *rows = NULL;
	size_t n = 0, bans, sets;
	int64_t next;
	struct fc_err err;
	bool found;

	assert_int_equal(fc_store_begin(t->st, &err), 0);
	assert_int_equal(fc_store_node_weigh(t->st, &web1, 1000, &err), 0);
	assert_int_equal(fc_store_node_weigh(t->st, &web2, 1000, &err), 0);
	assert_int_equal(fc_store_node_join(t->st, "web3", 1000, &err), 0); /* no row: weight 1 */
	assert_int_equal(fc_store_commit(t->st, &err), 0);
	assert_int_equal(fc_store_fleet_nodes_at(t->st, 1000 + d, &rows, &n, &err), 0);
	assert_int_equal(n, 3);
	assert_int_equal(rows[0].weight, 250000);
	assert_int_equal(rows[1].weight, 750000);
	assert_string_equal(rows[2].name, "web3");
	assert_int_equal(rows[2].weight, FC_FLEET_WEIGHT_ONE);
	free(rows);
	/* The same weight again, a join of a member: no new row. */
	assert_int_equal(fc_store_node_weigh(t->st, &web1, 5000, &err), 0);
	assert_int_equal(fc_store_node_join(t->st, "web1", 5000, &err), 0);
	assert_int_equal(fc_store_fleet_nodes_at(t->st, INT64_MAX, &rows, &n, &err), 0);
	assert_int_equal(n, 3);
	assert_int_equal(rows[0].since, 1000 + d);
	free(rows);
	/* Another weight: from 5000 + the delay; web2 deleted: it leaves then. */
	web1.weight = 0.5;
	assert_int_equal(fc_store_node_weigh(t->st, &web1, 5000, &err), 0);
	assert_int_equal(fc_store_node_del(t->st, "web2", 5000, &found, &err), 0);
	assert_true(found);
	assert_int_equal(fc_store_node_del(t->st, "web2", 5000, &found, &err), 0);
	assert_false(found); /* neither a nodes row nor a member any more */
	assert_int_equal(fc_store_node_del(t->st, "web3", 5000, &found, &err), 0);
	assert_true(found); /* a member without a nodes row */
	assert_int_equal(fc_store_fleet_nodes_at(t->st, 5000 + d - 1, &rows, &n, &err), 0);
	assert_int_equal(n, 3); /* the old set until then */
	free(rows);
	assert_int_equal(fc_store_fleet_nodes_at(t->st, 5000 + d, &rows, &n, &err), 0);
	assert_int_equal(n, 1);
	assert_string_equal(rows[0].name, "web1");
	assert_int_equal(rows[0].weight, 500000);
	free(rows);
	/* import: nodes rewritten; web4 joins with its row, web1 follows its new weight. */
	assert_int_equal(fc_store_nodes_clear(t->st, &err), 0);
	web1.weight = 1;
	assert_int_equal(fc_store_node_put(t->st, &web1, &err), 0);
	assert_int_equal(fc_store_node_put(t->st, &(struct fc_node){ .name = "web4", .weight = 0.1 }, &err), 0);
	assert_int_equal(fc_store_nodes_follow(t->st, 9000, &err), 0);
	assert_int_equal(fc_store_fleet_nodes_at(t->st, 9000 + d, &rows, &n, &err), 0);
	assert_int_equal(n, 2);
	assert_int_equal(rows[0].weight, FC_FLEET_WEIGHT_ONE);
	assert_string_equal(rows[1].name, "web4");
	assert_int_equal(rows[1].no, 4); /* the next number never used */
	assert_int_equal(rows[1].weight, 100000);
	free(rows);
	/* The purge: rows closed a day and the delay before now go with the expired bans. */
	assert_int_equal(fc_store_purge(t->st, (5000 + d + FC_FLEET_NODES_KEEP_MS) / 1000 - 1, &bans, &sets, &next,
					&err), 0);
	assert_int_equal(next, (5000 + d + FC_FLEET_NODES_KEEP_MS + 999) / 1000);
	assert_int_equal(fc_store_fleet_nodes_at(t->st, 1000 + d, &rows, &n, &err), 0);
	assert_int_equal(n, 3); /* history still there */
	free(rows);
	assert_int_equal(fc_store_purge(t->st, next + 1, &bans, &sets, &next, &err), 0);
	assert_int_equal(bans + sets, 0);
	assert_int_equal(fc_store_fleet_nodes_at(t->st, 1000 + d, &rows, &n, &err), 0);
	assert_int_equal(n, 0);
	free(rows);
	assert_int_equal(fc_store_fleet_nodes_at(t->st, INT64_MAX, &rows, &n, &err), 0);
	assert_int_equal(n, 2);
	free(rows);
}

/* A store of the schema before the round's migration (made by the steps
 * that release ran), with rows as that release wrote them, is upgraded in
 * place when opened: its rows kept, every layer written out (NULL and
 * 'auto' as the match said), a match unique per layer, its indexes and
 * change log triggers there again, the fleet's tables there. */
static void test_migrate_round(void **state)
{
	struct fc_t *t = *state;
	struct fc_policy_spec h = fc_spec(6, "ip=*", "9/s"), dup = fc_spec(7, "ip=*", "9/s");
	struct fc_prefix p = fc_row("198.18.0.0/16", 0, 0).p;
	struct fc_policy_row *rows = NULL, row;
	struct fc_key_rule *rules = NULL;
	struct fc_store_log log, after;
	struct fc_delta d = { 0 };
	struct fc_err err;
	uint64_t k[2];
	size_t n = 0, i;
	char wal[600];

	fc_store_close(t->st);
	t->st = NULL;
	if (t->pg) {
		fc_raw_sql(t, NULL, "SET client_min_messages = warning; DROP SCHEMA public CASCADE; CREATE SCHEMA public");
	} else {
		assert_int_equal(unlink(t->path), 0);
		unlink(strcat(strcpy(wal, t->path), "-wal"));
	}
	fc_db_schema_upto = t->pg ? FC_PG_PREV : FC_SQ_PREV;
	if (fc_store_open(t->path, &t->st, &err) < 0)
		fail_msg("%s", err.msg);
	fc_db_schema_upto = 0;
	fc_store_close(t->st);
	t->st = NULL;
#define FC_OLD_POL "INSERT INTO policies (id, match, rates, algo, action, count, slot, epoch, created, updated, " \
		   "layer, max_keys, override, ip_family, ip_addr, ip_len) VALUES "
#define FC_OLD_ROWS(x15, x7)                                                                                  \
	"(1, 'ip=*', '20/s', 'gcra', 'drop', 'packets', 1, 1, 1, 1, NULL, NULL, NULL, NULL, NULL, NULL),"      \
	"(2, 'ip=198.18.0.0/15', '10/s', 'window', 'log', 'packets', 2, 2, 1, 1, 'xdp', NULL, NULL, 4, " x15 \
	", 15),"                                                                                                \
	"(3, 'uid=*', '5/m', 'gcra', 'drop', 'packets', 3, 3, 1, 1, NULL, 100, NULL, NULL, NULL, NULL),"       \
	"(4, 'ip=198.18.0.7', '1/s', 'gcra', 'drop', 'packets', 4, 4, 1, 1, 'http', NULL, NULL, 4, " x7       \
	", 32),"                                                                                                \
	"(5, 'ip=*,uid=a', '1/s', 'gcra', 'drop', 'packets', 5, 5, 1, 1, 'auto', NULL, 1, NULL, NULL, NULL);"  \
	"UPDATE meta SET value = 5 WHERE key = 'epoch';"                                                       \
	"INSERT INTO nodes VALUES ('edge-a', 0.5);"
	fc_raw_sql(t,
		   FC_OLD_POL FC_OLD_ROWS("x'c6120000'", "x'c6120007'")
		   "INSERT INTO bans VALUES (4, x'c6120009', 32, 1, NULL, NULL);",
		   FC_OLD_POL FC_OLD_ROWS("'\\xc6120000'::bytea", "'\\xc6120007'::bytea")
		   "INSERT INTO bans VALUES (4, '\\xc6120009', 32, 1, NULL, NULL);");
#undef FC_OLD_POL
#undef FC_OLD_ROWS
	if (fc_store_open(t->path, &t->st, &err) < 0)
		fail_msg("%s", err.msg);
	assert_int_equal(live_bans(t->st, 0), 1);
	assert_int_equal(fc_store_policy_list(t->st, &rows, &n, &err), 0);
	assert_int_equal(n, 5);
	for (i = 0; i < n; i++) {
		assert_int_equal(rows[i].slot, i + 1);
		assert_int_equal(rows[i].epoch, i + 1);
		assert_int_equal(rows[i].spec.show_keys, 0);
		assert_false(rows[i].spec.fleet);
		/* Only the ip= policy that said http is not as its match says. */
		assert_int_equal(rows[i].spec.layer, i == 3 ? FC_LAYER_HTTP : FC_LAYER_AUTO);
	}
	assert_int_equal(rows[1].spec.algo, FC_ALGO_WINDOW);
	assert_int_equal(rows[2].spec.max_keys, 100);
	assert_true(rows[4].spec.override);
	/* Stored ip=* keeps its text and takes the new meaning: a bucket per
	 * IPv6 /64 (per IPv4 address, as before), alone and beside uid. */
	for (i = 0; i < n; i += 4) {
		char m[FC_MATCH_LEN];

		fc_match_format(&rows[i].spec, m);
		assert_string_equal(m, i ? "ip=*,uid=a" : "ip=*");
		assert_int_equal(fc_star_len4(&rows[i].spec), 32);
		assert_int_equal(fc_star_len6(&rows[i].spec), 64);
	}
	free(rows);
	/* The key is (match, layer): an ip=* in nginx beside the kernel's. */
	h.layer = FC_LAYER_HTTP;
	fc_policy_put_ok(t->st, &h, &row);
	assert_int_equal(fc_store_policy_put(t->st, &dup, 100, &row, &err), FC_STORE_REFUSED);
	/* The prefixes' indexes (INDEXED BY names them) and the address columns. */
	assert_int_equal(fc_store_prefix_rules(t->st, &p, 0, &rules, &n, &err), 0);
	assert_true(n > 0);
	assert_int_equal(rules[0].src, FC_SRC_POLICY);
	assert_int_equal(rules[0].slot, 2);
	free(rules);
	/* The change log's triggers: a change of a policy is logged. */
	assert_int_equal(fc_store_log_head(t->st, &log, &err), 0);
	dup.id = 3;
	dup = fc_spec(3, "uid=*", "6/m");
	fc_policy_put_ok(t->st, &dup, &row);
	assert_int_equal(fc_store_log_head(t->st, &after, &err), 0);
	assert_true(after.head > log.head);
	if (fc_store_delta(t->st, log.head, after.head, 0, "test", &d, &err) < 0)
		fail_msg("%s", err.msg);
	assert_true(d.npols > 0);
	assert_int_equal(d.pols[0].id, 3);
	fc_delta_free(&d);
	/* The fleet's tables. */
	assert_int_equal(fc_store_fleet_secret(t->st, k, &err), 0);
	assert_int_equal(fc_store_fleet_node_set(t->st, "edge-a", 500000, 0, &err), 0);
	/* Once: opened again, nothing to do. */
	fc_store_close(t->st);
	if (fc_store_open(t->path, &t->st, &err) < 0)
		fail_msg("%s", err.msg);
	assert_int_equal(fc_store_policy_list(t->st, &rows, &n, &err), 0);
	assert_int_equal(n, 6);
	free(rows);
}

#define FC_STORE_CASES(setup)                                                   \
	cmocka_unit_test_setup_teardown(test_round_trip, setup, fc_teardown),          \
	cmocka_unit_test_setup_teardown(test_replace_and_delete, setup, fc_teardown),  \
	cmocka_unit_test_setup_teardown(test_bulk, setup, fc_teardown),                \
	cmocka_unit_test_setup_teardown(test_expiry, setup, fc_teardown),              \
	cmocka_unit_test_setup_teardown(test_counts, setup, fc_teardown),              \
	cmocka_unit_test_setup_teardown(test_extend, setup, fc_teardown),              \
	cmocka_unit_test_setup_teardown(test_rollback_and_reopen, setup, fc_teardown), \
	cmocka_unit_test_setup_teardown(test_corrupt_row, setup, fc_teardown),         \
	cmocka_unit_test_setup_teardown(test_allows, setup, fc_teardown),              \
	cmocka_unit_test_setup_teardown(test_newer_schema_refused, setup, fc_teardown),\
	cmocka_unit_test_setup_teardown(test_policies, setup, fc_teardown),            \
	cmocka_unit_test_setup_teardown(test_policy_corrupt, setup, fc_teardown),      \
	cmocka_unit_test_setup_teardown(test_star_units, setup, fc_teardown),          \
	cmocka_unit_test_setup_teardown(test_nodes, setup, fc_teardown),               \
	cmocka_unit_test_setup_teardown(test_version, setup, fc_teardown),             \
	cmocka_unit_test_setup_teardown(test_policy_ip_fill, setup, fc_teardown),      \
	cmocka_unit_test_setup_teardown(test_migrate_from_warmup, setup, fc_teardown), \
	cmocka_unit_test_setup_teardown(test_policy_layers, setup, fc_teardown),       \
	cmocka_unit_test_setup_teardown(test_fleet_store, setup, fc_teardown),         \
	cmocka_unit_test_setup_teardown(test_fleet_nodes_follow, setup, fc_teardown),  \
	cmocka_unit_test_setup_teardown(test_migrate_round, setup, fc_teardown)

/* A kept connection serves one use after another; a SQLite file moved away
 * is reported gone (nothing made in its place), and another file put there
 * is opened, as a fresh open would. */
static void test_keep(void **state)
{
	struct fc_t *t = *state;
	struct fc_store_keep k;
	struct fc_store *st, *first;
	struct fc_err err;
	char moved[600];

	fc_put(t->st, "192.0.2.1", 100, 0);
	fc_store_close(t->st);
	t->st = NULL;
	fc_store_keep_init(&k, t->path, false);
	first = fc_store_keep_get(&k, &err);
	assert_non_null(first);
	assert_int_equal(live_bans(first, 100), 1);
	fc_store_keep_put(&k, false);
	st = fc_store_keep_get(&k, &err);
	assert_ptr_equal(st, first); /* kept, not opened again */
	fc_store_keep_put(&k, false);

	snprintf(moved, sizeof(moved), "%s.old", t->path);
	assert_int_equal(rename(t->path, moved), 0);
	assert_null(fc_store_keep_get(&k, &err));
	assert_non_null(strstr(err.msg, "store.db"));
	assert_int_equal(access(t->path, F_OK), -1);

	/* Another store where it was: that one is read. */
	assert_int_equal(fc_store_open(t->path, &t->st, &err), 0);
	st = fc_store_keep_get(&k, &err);
	assert_non_null(st);
	assert_int_equal(live_bans(st, 100), 0);
	fc_store_keep_put(&k, true); /* a failed use drops it */
	assert_null(k.st);
	fc_store_keep_fini(&k);
}

/* Runs SELECT on fc_keys(blob); the rows as "family/hex(addr)/len ..." in
 * out, or SQLite's message. Returns SQLite's last result code. */
static int fc_keys_rows(sqlite3 *h, const void *blob, int bytes, char *out, size_t size)
{
	sqlite3_stmt *s;
	size_t off = 0;
	int rc;

	assert_int_equal(sqlite3_prepare_v2(h, "SELECT family, hex(addr), len FROM fc_keys(?1)", -1, &s, NULL),
			 SQLITE_OK);
	if (blob)
		sqlite3_bind_blob(s, 1, blob, bytes, SQLITE_TRANSIENT);
	else
		sqlite3_bind_text(s, 1, "text", -1, SQLITE_STATIC);
	out[0] = '\0';
	while ((rc = sqlite3_step(s)) == SQLITE_ROW)
		off += (size_t)snprintf(out + off, size - off, "%d/%s/%d ", sqlite3_column_int(s, 0),
					(const char *)sqlite3_column_text(s, 1), sqlite3_column_int(s, 2));
	if (rc != SQLITE_DONE)
		snprintf(out, size, "%s", sqlite3_errmsg(h));
	sqlite3_finalize(s);
	return rc;
}

/* SQLite's fc_keys on its own: keys as rows; a BLOB of part of a key, a key
 * of no family or too long a length, or a TEXT refused, not read. */
static void test_keys_function(void **state)
{
	struct fc_prefix k[2] = { { 4, 24, { 198, 18, 7 } }, { 6, 128, { 0x20, 0x01, 0x0d, 0xb8, [15] = 1 } } };
	sqlite3 *h;
	char out[256];

	(void)state;
	assert_int_equal(sqlite3_open(":memory:", &h), SQLITE_OK);
	assert_int_equal(fc_sq_keys_register(h), SQLITE_OK);
	assert_int_equal(fc_keys_rows(h, k, sizeof(k), out, sizeof(out)), SQLITE_DONE);
	assert_string_equal(out, "4/C6120700/24 6/20010DB8000000000000000000000001/128 ");
	assert_int_equal(fc_keys_rows(h, k, 0, out, sizeof(out)), SQLITE_DONE);
	assert_string_equal(out, "");
	assert_int_equal(fc_keys_rows(h, k, sizeof(k) - 1, out, sizeof(out)), SQLITE_ERROR);
	assert_string_equal(out, "fc_keys: not a BLOB of 18-byte address keys");
	k[1].len = 129;
	assert_int_equal(fc_keys_rows(h, k, sizeof(k), out, sizeof(out)), SQLITE_ERROR);
	k[1].len = 128;
	k[0].family = 5;
	assert_int_equal(fc_keys_rows(h, k, sizeof(k), out, sizeof(out)), SQLITE_ERROR);
	assert_int_equal(fc_keys_rows(h, NULL, 0, out, sizeof(out)), SQLITE_ERROR);
	assert_string_equal(out, "fc_keys: not a BLOB of 18-byte address keys");
	sqlite3_close(h);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		FC_STORE_CASES(fc_setup),
		/* SQLite's own: where the store file goes, and its migrations. */
		cmocka_unit_test(test_open_errors),
		cmocka_unit_test_setup_teardown(test_migrate_v1, fc_setup, fc_teardown),
		cmocka_unit_test_setup_teardown(test_keep, fc_setup, fc_teardown),
		cmocka_unit_test_setup_teardown(test_commit_durable, fc_setup, fc_teardown),
		cmocka_unit_test(test_keys_function),
	};
	const struct CMUnitTest pg_tests[] = {
		FC_STORE_CASES(fc_setup_pg),
	};

	if (getenv("FC_TEST_PG_DSN"))
		return fc_run_group("store (PostgreSQL)", pg_tests, NULL, NULL);
	return fc_run_group("store (SQLite)", tests, NULL, NULL);
}
