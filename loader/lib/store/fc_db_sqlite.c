// SPDX-License-Identifier: BSD-2-Clause
/* The SQLite backend of the store: one file, WAL, schema in PRAGMA user_version. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <sqlite3.h>

#include "fc_db.h"
#include "fc_db_sqlite_keys.h"
#include "fc_owner.h"

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
	"  slot    INTEGER NOT NULL UNIQUE " FC_SQL_SLOT_CHECK "," /* kernel slot, kept across edits */
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
	"  slot    INTEGER NOT NULL UNIQUE " FC_SQL_SLOT_CHECK ","
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

/* Per-key policies; ip=-only policies in nginx. */
static const char fc_schema_v6[] =
	"ALTER TABLE policies ADD COLUMN layer TEXT CHECK (layer IN ('auto', 'xdp', 'http'));" /* NULL: auto */
	"ALTER TABLE policies ADD COLUMN max_keys INTEGER;"
	"ALTER TABLE policies ADD COLUMN new_keys INTEGER;";

/* --algo sliding (a CHECK again: rebuild the table, columns as they are). */
static const char fc_schema_v7[] =
	"CREATE TABLE policies_v7 ("
	"  id      INTEGER PRIMARY KEY CHECK (id BETWEEN 1 AND 4294967295),"
	"  match   TEXT    NOT NULL UNIQUE,"
	"  rates   TEXT    NOT NULL,"        /* canonical: 10/s:20,1000/d (N/UNIT[:B]) */
	"  burst   INTEGER,"                 /* --burst, the first rate's; NULL = its :B or N */
	"  algo    TEXT    NOT NULL CHECK (algo IN ('gcra', 'window', 'sliding')),"
	"  action  TEXT    NOT NULL CHECK (action IN ('drop', 'log', 'delay')),"
	"  count   TEXT    NOT NULL CHECK (count IN ('packets', 'bytes', 'syn')),"
	"  new_sources INTEGER,"
	"  slot    INTEGER NOT NULL UNIQUE " FC_SQL_SLOT_CHECK ","
	"  epoch   INTEGER NOT NULL,"
	"  created INTEGER NOT NULL,"
	"  updated INTEGER NOT NULL,"
	"  delay_burst INTEGER,"
	"  escalate TEXT,"
	"  ban_ttl INTEGER,"
	"  layer   TEXT CHECK (layer IN ('auto', 'xdp', 'http')),"
	"  max_keys INTEGER,"
	"  new_keys INTEGER"
	");"
	"INSERT INTO policies_v7 SELECT * FROM policies;"
	"DROP TABLE policies;"
	"ALTER TABLE policies_v7 RENAME TO policies;";

/* --concurrency: requests in flight at once (NULL: no cap). */
static const char fc_schema_v8[] = "ALTER TABLE policies ADD COLUMN concurrency INTEGER;";

/* --warmup: seconds; NULL = none. */
static const char fc_schema_v9[] = "ALTER TABLE policies ADD COLUMN warmup INTEGER;";

/* Allow lists: addresses, prefixes and uids never banned, limited or
 * escalated. (A step named for what it adds: its version is its place in
 * fc_schema.) */
static const char fc_schema_allows[] =
	"CREATE TABLE allows ("
	"  family  INTEGER NOT NULL CHECK (family IN (0, 4, 6)),"  /* 0: a uid */
	"  addr    BLOB    NOT NULL,"  /* 4 or 16 bytes, host bits zero; empty for a uid */
	"  len     INTEGER NOT NULL,"  /* prefix length; 0 for a uid */
	"  uid     TEXT    NOT NULL,"  /* '' for an address */
	"  created INTEGER NOT NULL,"  /* unix seconds */
	"  expires INTEGER,"           /* unix seconds; NULL = never */
	"  note    TEXT,"
	"  PRIMARY KEY (family, addr, len, uid)"
	") WITHOUT ROWID;";

/* --override: 1; NULL = not. (Named for what it adds, as the step before
 * it: its version is its place in fc_schema.) */
static const char fc_schema_override[] = "ALTER TABLE policies ADD COLUMN override INTEGER CHECK (override = 1);";

/* A row of the change log for each row a statement inserts, updates (the
 * old and the new) or deletes; cols: the change's columns, old and new the
 * row's values for them. */
#define FC_SQ_LOG(t, cols, old, new)                                                                     \
	"CREATE TRIGGER " t "_log_ins AFTER INSERT ON " t " BEGIN INSERT INTO changes " cols " VALUES " new \
	"; END;"                                                                                          \
	"CREATE TRIGGER " t "_log_upd AFTER UPDATE ON " t " BEGIN INSERT INTO changes " cols " VALUES " old \
	", " new "; END;"                                                                                 \
	"CREATE TRIGGER " t "_log_del AFTER DELETE ON " t " BEGIN INSERT INTO changes " cols " VALUES " old "; END;"
#define FC_SQ_LOG_OF(t, what) FC_SQ_LOG(t, FC_LOG_COLS_##what, FC_LOG_ROW_##what("OLD"), FC_LOG_ROW_##what("NEW"))

/*
 * Incremental publishing and ban sets (a step named for what it adds: its
 * version is its place in fc_schema, after the allows and override steps).
 * The change log: every write records
 * what it changed (triggers, so a script's SQL is recorded too), numbered in
 * commit order (one writer at a time), in the writer's transaction; a
 * publisher applies the changes since the seq it published. store_id tells
 * stores apart; changes up to log_pruned are gone. A policy whose match is
 * one ip=ADDR[/LEN] has it in ip_* too, so that a prefix finds the policies
 * it covers by index (policy_ip 0: rows written before are filled on open).
 * Sets: named lists of bans (freqctl ban import --set), each member a row of
 * its own; a set lapses as a whole at expires.
 */
static const char fc_schema_log[] =
	"CREATE TABLE changes ("
	"  seq    INTEGER PRIMARY KEY AUTOINCREMENT,"
	"  kind   TEXT NOT NULL," /* ban (its key: family, addr, len), uid, allow, policy, node, set */
	"  family INTEGER, addr BLOB, len INTEGER,"
	"  txt    TEXT,"          /* uid (a uid ban's, an allow entry's); policy: its match; node: its name; set: new, upd or del */
	"  id     INTEGER,"       /* policy, set */
	"  slot   INTEGER,"       /* policy */
	"  layer  TEXT"           /* policy */
	");"
	"INSERT INTO meta VALUES ('store_id', (random() & 9223372036854775807) | 1);"
	"INSERT INTO meta VALUES ('log_pruned', 0);"
	"INSERT INTO meta VALUES ('policy_ip', 0);"
	"ALTER TABLE policies ADD COLUMN ip_family INTEGER;"
	"ALTER TABLE policies ADD COLUMN ip_addr BLOB;"
	"ALTER TABLE policies ADD COLUMN ip_len INTEGER;"
	FC_SQL_RULE_INDEXES
	"CREATE TABLE ban_sets ("
	"  id      INTEGER PRIMARY KEY CHECK (id BETWEEN 1 AND " FC_SQL_STR(FC_MAX_SETS) "),"
	"  name    TEXT    NOT NULL UNIQUE,"
	"  created INTEGER NOT NULL,"
	"  updated INTEGER NOT NULL," /* the last import */
	"  expires INTEGER,"          /* the whole set lapses then; NULL = never */
	"  size    INTEGER NOT NULL DEFAULT 0"
	");"
	"CREATE TABLE set_bans ("
	"  family  INTEGER NOT NULL CHECK (family IN (4, 6)),"
	"  addr    BLOB    NOT NULL,"
	"  len     INTEGER NOT NULL,"
	"  set_id  INTEGER NOT NULL,"
	"  created INTEGER NOT NULL,"
	"  PRIMARY KEY (family, addr, len, set_id)"
	") WITHOUT ROWID;"
	"CREATE INDEX set_bans_set ON set_bans (set_id);"
	FC_SQL_SET_INDEXES
	FC_SQ_LOG_OF("bans", KEY) FC_SQ_LOG_OF("set_bans", KEY) FC_SQ_LOG_OF("uid_bans", UID)
	FC_SQ_LOG_OF("allows", ALLOW) FC_SQ_LOG_OF("policies", POLICY) FC_SQ_LOG_OF("nodes", NODE)
	"CREATE TRIGGER ban_sets_log_ins AFTER INSERT ON ban_sets BEGIN "
	"  INSERT INTO changes (kind, txt, id) VALUES ('set', 'new', NEW.id); END;"
	"CREATE TRIGGER ban_sets_log_upd AFTER UPDATE ON ban_sets BEGIN "
	"  INSERT INTO changes (kind, txt, id) VALUES ('set', 'upd', NEW.id); END;"
	"CREATE TRIGGER ban_sets_log_del AFTER DELETE ON ban_sets BEGIN "
	"  INSERT INTO changes (kind, txt, id) VALUES ('set', 'del', OLD.id); END;";

/*
 * The round of issues 28 and 29, in one step (a step named for what it
 * adds; PostgreSQL's fc_pg_schema_round has the same meaning):
 * - A match is unique per layer, not alone: an ip=* at XDP/TC (packets) and
 *   one in nginx (requests) are two policies an operator wants side by
 *   side. The layer is written out for every row (FC_SQL_LAYER_OF: NULL and
 *   'auto' meant "as the match says"), so that (match, layer) is the key.
 *   A CHECK can not be altered: the table is rebuilt, its indexes and log
 *   triggers with it; the rows are copied, not changed, so nothing is
 *   logged (their meaning is the same).
 * - show_keys: NULL as the default says, 1 --show-keys, 0 --no-show-keys.
 * - fleet: 1, the rate is the fleet's; NULL, this node's share (R x W); indexed
 *   where 1 (FC_SQL_FLEET_INDEX), so that a publish asks "any?" of a few rows.
 *   fleet_nodes: the fleet's node set per window (FC_SQL_FLEET_NODES); the
 *   fleet's key is made in meta when first asked for (fc_store_fleet_secret).
 * Upgrading changes what a stored ip=* policy does, at XDP/TC and in nginx,
 * alone or beside other dimensions: IPv6 sources are counted per /64 from
 * this version on, not per address (a client holds a /64); no row is
 * rewritten, and the unit /32/128 after the star is the old meaning
 * (doc/upgrading.md).
 */
static const char fc_schema_round[] =
	"CREATE TABLE policies_new ("
	"  id      INTEGER PRIMARY KEY CHECK (id BETWEEN 1 AND 4294967295),"
	"  match   TEXT    NOT NULL,"
	"  rates   TEXT    NOT NULL,"        /* canonical: 10/s:20,1000/d (N/UNIT[:B]) */
	"  burst   INTEGER,"                 /* --burst, the first rate's; NULL = its :B or N */
	"  algo    TEXT    NOT NULL CHECK (algo IN ('gcra', 'window', 'sliding')),"
	"  action  TEXT    NOT NULL CHECK (action IN ('drop', 'log', 'delay')),"
	"  count   TEXT    NOT NULL CHECK (count IN ('packets', 'bytes', 'syn')),"
	"  new_sources INTEGER,"
	"  slot    INTEGER NOT NULL UNIQUE " FC_SQL_SLOT_CHECK ","
	"  epoch   INTEGER NOT NULL,"
	"  created INTEGER NOT NULL,"
	"  updated INTEGER NOT NULL,"
	"  delay_burst INTEGER,"
	"  escalate TEXT,"
	"  ban_ttl INTEGER,"
	"  layer   TEXT    NOT NULL " FC_SQL_LAYER_CHECK ","
	"  max_keys INTEGER,"
	"  new_keys INTEGER,"
	"  concurrency INTEGER,"
	"  warmup  INTEGER,"
	"  override INTEGER CHECK (override = 1),"
	"  ip_family INTEGER,"
	"  ip_addr BLOB,"
	"  ip_len  INTEGER,"
	"  show_keys INTEGER CHECK (show_keys IN (0, 1)),"
	"  fleet   INTEGER CHECK (fleet = 1),"
	"  UNIQUE (match, layer)"
	");"
#define FC_SQ_ROUND_COLS                                                                                  \
	"id, match, rates, burst, algo, action, count, new_sources, slot, epoch, created, updated, delay_burst, " \
	"escalate, ban_ttl, max_keys, new_keys, concurrency, warmup, override, ip_family, ip_addr, ip_len"
	"INSERT INTO policies_new (" FC_SQ_ROUND_COLS ", layer) SELECT " FC_SQ_ROUND_COLS ", "
	FC_SQL_LAYER_OF("layer", "match") " FROM policies;"
#undef FC_SQ_ROUND_COLS
	"DROP TABLE policies;"
	"ALTER TABLE policies_new RENAME TO policies;"
	FC_SQL_POLICY_INDEXES
	FC_SQL_FLEET_INDEX
	FC_SQ_LOG_OF("policies", POLICY)
	FC_SQL_FLEET_NODES
	FC_SQ_LOG_OF("fleet_nodes", FLEET);

static const char *const fc_schema[] = { fc_schema_v1, fc_schema_v2, fc_schema_v3, fc_schema_v4, fc_schema_v5,
					 fc_schema_v6, fc_schema_v7, fc_schema_v8, fc_schema_v9, fc_schema_allows,
					 fc_schema_override, fc_schema_log, fc_schema_round };
#define FC_SCHEMA_VERSION ((int)(sizeof(fc_schema) / sizeof(fc_schema[0])))

struct fc_db_sqlite {
	struct fc_db db;
	sqlite3 *h;
	const char *const *sql;
	sqlite3_stmt **stmt; /* prepared on first use: a command runs a few of them */
	int nstmt;
	bool wal_empty; /* by this connection's checkpoint after its last commit */
};

#define FC_SQ(d) ((struct fc_db_sqlite *)(d))

/* How long a writer waits for another one. */
#define FC_SQ_BUSY_MS 10000

/* SQLite's message, and the system's when a system call failed beneath it:
 * "disk I/O error" alone does not say the disk is full. */
static int fc_sq_err(struct fc_db_sqlite *d, struct fc_err *err, const char *what, const char *msg)
{
	int sys = d->h ? sqlite3_system_errno(d->h) : 0;

	return fc_err_set(err, "store %s: %s%s%s%s%s", d->db.name, what ? what : "", what ? ": " : "", msg,
			  sys ? ": " : "", sys ? strerror(sys) : "");
}

static int fc_sq_fail(struct fc_db_sqlite *d, struct fc_err *err, const char *what)
{
	return fc_sq_err(d, err, what, sqlite3_errmsg(d->h));
}

static int fc_sq_exec(struct fc_db_sqlite *d, const char *sql, struct fc_err *err)
{
	char *msg = NULL;

	if (sqlite3_exec(d->h, sql, NULL, NULL, &msg) != SQLITE_OK) {
		fc_sq_err(d, err, NULL, msg ? msg : sqlite3_errmsg(d->h));
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

static void fc_sq_rollback(struct fc_db *db)
{
	if (!sqlite3_get_autocommit(FC_SQ(db)->h))
		sqlite3_exec(FC_SQ(db)->h, "ROLLBACK", NULL, NULL, NULL);
}

static int fc_sq_commit(struct fc_db *db, struct fc_err *err)
{
	if (fc_sq_exec(FC_SQ(db), "COMMIT", err) < 0) {
		fc_sq_rollback(db);
		return -1;
	}
	return 0;
}

/* WAL, durable through the checkpoint after each commit (fc_sq_wal_hook);
 * where WAL can not be had (a file system without shared memory), the
 * rollback journal, each commit synced (NORMAL would not, there). */
static int fc_sq_wal(struct fc_db_sqlite *d, struct fc_err *err)
{
	const unsigned char *mode;
	sqlite3_stmt *s;
	bool wal;

	if (sqlite3_prepare_v2(d->h, "PRAGMA journal_mode = WAL", -1, &s, NULL) != SQLITE_OK)
		return fc_sq_fail(d, err, "setting the journal mode");
	wal = sqlite3_step(s) == SQLITE_ROW && (mode = sqlite3_column_text(s, 0)) && !strcmp((const char *)mode, "wal");
	sqlite3_finalize(s);
	return fc_sq_exec(d, wal ? "PRAGMA synchronous = NORMAL" : "PRAGMA synchronous = FULL", err);
}

static int fc_sq_migrate(struct fc_db_sqlite *d, struct fc_err *err)
{
	int upto = fc_db_schema_upto > 0 && fc_db_schema_upto < FC_SCHEMA_VERSION ? fc_db_schema_upto : FC_SCHEMA_VERSION;
	sqlite3_stmt *s;
	int version;

	if (sqlite3_prepare_v2(d->h, "PRAGMA user_version", -1, &s, NULL) != SQLITE_OK)
		return fc_sq_fail(d, err, "reading schema version");
	sqlite3_step(s);
	version = sqlite3_column_int(s, 0);
	sqlite3_finalize(s);
	if (version > FC_SCHEMA_VERSION)
		return fc_err_set(err, "store %s: schema version %d is newer than this freqctl knows (%d)", d->db.name,
				  version, FC_SCHEMA_VERSION);
	if (version >= upto)
		return 0;
	if (sqlite3_db_readonly(d->h, "main") == 1)
		return fc_err_set(err, "store %s: schema version %d is older than this freqctl's (%d), and this user can "
				       "not write it: any freqctl command that writes, run by one who can, upgrades it",
				  d->db.name, version, upto);
	if (fc_sq_exec(d, "BEGIN IMMEDIATE", err) < 0)
		return -1;
	for (; version < upto; version++) {
		char pragma[64];

		snprintf(pragma, sizeof(pragma), "PRAGMA user_version = %d", version + 1);
		if (fc_sq_exec(d, fc_schema[version], err) < 0 || fc_sq_exec(d, pragma, err) < 0) {
			fc_sq_rollback(&d->db);
			return -1;
		}
	}
	return fc_sq_commit(&d->db, err);
}

/*
 * The WAL is kept (its file, not its contents) and emptied by the store's
 * own checkpoint after every commit (and at close, for one a reader held
 * up): it copies the WAL into the .db file, syncs that, and has the next
 * writer start the WAL afresh (SQLITE_CHECKPOINT_RESTART), if no reader is
 * using it (another process's: then a later checkpoint does it; writers
 * never wait for it). Then its header is zeroed (fc_sq_wal_forget).
 *
 * Why: SQLite's default, a checkpoint when the last connection closes and
 * then the WAL deleted, cost each one-shot command the WAL's creation and
 * deletion and a sync of the directory besides the commit's and the
 * checkpoint's. And why not keep the WAL's contents between commands: a
 * .db restored from a backup beside a WAL of the store's later changes
 * would have those replayed onto it, silently; once every commit has been
 * checkpointed (no reader held an older snapshot), the .db alone is the
 * store. Why not truncate the WAL (SQLITE_CHECKPOINT_TRUNCATE), as this did
 * before: on ext4 mounted with discard, freeing its blocks waits for the
 * disk to discard them, 0.5 to 4 ms a command here, and the next commit
 * allocates them again. A WAL that grew past FC_SQ_WAL_KEEP (an import's)
 * is truncated all the same.
 *
 * A commit is durable when it returns, with one sync fewer than
 * synchronous = FULL takes: NORMAL does not sync the WAL at the commit,
 * the checkpoint right after it does (SQLite syncs the WAL before it
 * copies anything, and the .db file after a checkpoint that copied it
 * all). A checkpoint a reader kept from copying everything syncs nothing
 * of what it did not copy: then the WAL is synced here, as FULL would have
 * at the commit, and its directory (see fc_sq_vfs_open).
 */
static int fc_sq_wal_sync(sqlite3 *h, const char *db)
{
	const char *path = sqlite3_db_filename(h, db);
	sqlite3_file *wal = NULL;
	char dir[PATH_MAX];
	int rc, fd;

	/* SQLite's own file of the WAL: no other descriptor of it is opened. */
	if (sqlite3_file_control(h, db, SQLITE_FCNTL_JOURNAL_POINTER, &wal) != SQLITE_OK || !wal || !wal->pMethods ||
	    !path || (size_t)snprintf(dir, sizeof(dir), "%s", path) >= sizeof(dir))
		return SQLITE_IOERR_FSYNC;
	rc = wal->pMethods->xSync(wal, SQLITE_SYNC_NORMAL);
	*(strrchr(dir, '/') ?: dir) = '\0';
	fd = open(*dir ? dir : "/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (rc == SQLITE_OK && (fd < 0 || fsync(fd) < 0))
		rc = SQLITE_IOERR_DIR_FSYNC;
	if (fd >= 0)
		close(fd);
	return rc;
}

/* Bytes of WAL kept for the next commits; a bigger one is truncated. */
#define FC_SQ_WAL_KEEP (1 << 20)

/* The WAL-index (the -shm file, SQLite's file format, "WAL-index Format"):
 * two copies of its header, then the checkpoint's; the WAL's write lock is
 * lock 0, the read locks of readers that may use the WAL's frames 4 to 7
 * (WAL_READ_LOCK(1) to WAL_READ_LOCK(WAL_NREADER - 1)). */
#define FC_SQ_SHM_HDR 48
#define FC_SQ_SHM_MXFRAME 16  /* u32, native order: the last valid frame */
#define FC_SQ_SHM_BACKFILL 96 /* u32: the frames copied into the .db file */
#define FC_SQ_SHM_REGION 32768
#define FC_SQ_WAL_HDR 32
#define FC_SQ_SHM_READ1 4
#define FC_SQ_SHM_NREAD 4

/*
 * Zeroes the WAL's header: then neither SQLite's recovery (a later
 * connection's, or one over a .db restored from a backup) nor anything
 * else takes the frames still in the file for the store's. Under the WAL's
 * write lock, and only while the WAL-index says every frame is in the .db
 * file (a checkpoint syncs that before it says so), and while no reader
 * holds a read lock that lets it use the WAL's frames: such a reader stops
 * the next writer from starting the WAL afresh (SQLite's walRestartLog
 * takes these locks to), and that writer would append its frames, its
 * commit, behind the zeroed header, where recovery after a crash does not
 * look. With the locks, a writer that came in after the checkpoint has
 * started the WAL afresh, its header and frames are its own, and they stay
 * (its checkpoint zeroes them); readers that come after use no frame (all
 * are in the .db), so the next writer starts the WAL afresh too. The zeroing
 * needs no sync: its frames all being in the .db, replaying them changes
 * nothing.
 */
static int fc_sq_wal_forget(sqlite3_file *f, sqlite3_file *wal)
{
	static const char zero[FC_SQ_WAL_HDR];
	unsigned char hdr[2][FC_SQ_SHM_HDR];
	volatile void *shm = NULL;
	uint32_t mx, backfill;
	int rc;

	rc = f->pMethods->xShmLock(f, 0, 1, SQLITE_SHM_LOCK | SQLITE_SHM_EXCLUSIVE);
	if (rc != SQLITE_OK)
		return rc;
	rc = f->pMethods->xShmLock(f, FC_SQ_SHM_READ1, FC_SQ_SHM_NREAD, SQLITE_SHM_LOCK | SQLITE_SHM_EXCLUSIVE);
	if (rc != SQLITE_OK)
		goto out;
	rc = f->pMethods->xShmMap(f, 0, FC_SQ_SHM_REGION, 0, &shm);
	if (rc == SQLITE_OK && !shm)
		rc = SQLITE_BUSY;
	if (rc == SQLITE_OK) {
		memcpy(hdr, (const void *)shm, sizeof(hdr));
		memcpy(&mx, hdr[0] + FC_SQ_SHM_MXFRAME, sizeof(mx));
		memcpy(&backfill, (const char *)shm + FC_SQ_SHM_BACKFILL, sizeof(backfill));
		rc = memcmp(hdr[0], hdr[1], sizeof(hdr[0])) || mx != backfill ? SQLITE_BUSY
									: wal->pMethods->xWrite(wal, zero, sizeof(zero), 0);
	}
	f->pMethods->xShmLock(f, FC_SQ_SHM_READ1, FC_SQ_SHM_NREAD, SQLITE_SHM_UNLOCK | SQLITE_SHM_EXCLUSIVE);
out:
	f->pMethods->xShmLock(f, 0, 1, SQLITE_SHM_UNLOCK | SQLITE_SHM_EXCLUSIVE);
	return rc;
}

/* Empties the WAL into the .db file; SQLITE_OK if it did, all of it. */
static int fc_sq_wal_empty(sqlite3 *h, const char *db)
{
	sqlite3_file *f = NULL, *wal = NULL;
	int rc, frames = -1, copied = -1;
	sqlite3_int64 size = 0;

	sqlite3_busy_timeout(h, 0);
	rc = sqlite3_wal_checkpoint_v2(h, db, SQLITE_CHECKPOINT_RESTART, &frames, &copied);
	if (rc == SQLITE_OK && frames != copied)
		rc = SQLITE_BUSY;
	if (rc == SQLITE_OK && frames > 0 &&
	    (sqlite3_file_control(h, db, SQLITE_FCNTL_FILE_POINTER, &f) != SQLITE_OK || !f || !f->pMethods ||
	     f->pMethods->iVersion < 2 || sqlite3_file_control(h, db, SQLITE_FCNTL_JOURNAL_POINTER, &wal) != SQLITE_OK ||
	     !wal || !wal->pMethods || wal->pMethods->xFileSize(wal, &size) != SQLITE_OK))
		rc = SQLITE_IOERR;
	if (rc == SQLITE_OK && frames > 0)
		rc = size > FC_SQ_WAL_KEEP ? sqlite3_wal_checkpoint_v2(h, db, SQLITE_CHECKPOINT_TRUNCATE, &frames, &copied)
					   : fc_sq_wal_forget(f, wal);
	sqlite3_busy_timeout(h, FC_SQ_BUSY_MS);
	return rc == SQLITE_OK && frames == copied ? SQLITE_OK : SQLITE_BUSY;
}

/* After each commit (and each write outside a transaction): an error
 * returned here is the commit's, though it has taken place. */
static int fc_sq_wal_hook(void *arg, sqlite3 *h, const char *db, int frames)
{
	struct fc_db_sqlite *d = arg;

	(void)frames;
	d->wal_empty = fc_sq_wal_empty(h, db) == SQLITE_OK;
	return d->wal_empty ? SQLITE_OK : fc_sq_wal_sync(h, db);
}

static void fc_sq_close(struct fc_db *db)
{
	struct fc_db_sqlite *d = FC_SQ(db);
	int i;

	for (i = 0; d->stmt && i < d->nstmt; i++)
		sqlite3_finalize(d->stmt[i]);
	if (d->h && !d->wal_empty) /* NULL: the open ran out of memory */
		fc_sq_wal_empty(d->h, "main");
	sqlite3_close(d->h);
	free(d->stmt);
	free(d->db.name);
	free(d);
}

/*
 * SQLite syncs the WAL's directory on the first sync after each opening of
 * the WAL with SQLITE_OPEN_CREATE, and asks for that every time, though the
 * WAL's file (kept: SQLITE_FCNTL_PERSIST_WAL) is new only on the store's
 * first use. The "freqctl" VFS is SQLite's default one but that it opens a
 * WAL that is there without it: no command syncs an unchanged directory.
 */
static sqlite3_vfs fc_sq_vfs, *fc_sq_vfs_base;

static int fc_sq_vfs_open(sqlite3_vfs *vfs, sqlite3_filename name, sqlite3_file *f, int flags, int *out)
{
	sqlite3_vfs *base = fc_sq_vfs_base;

	(void)vfs;
	if ((flags & SQLITE_OPEN_WAL) && (flags & SQLITE_OPEN_CREATE) && name && access(name, F_OK) == 0 &&
	    base->xOpen(base, name, f, flags & ~SQLITE_OPEN_CREATE, out) == SQLITE_OK)
		return SQLITE_OK;
	return base->xOpen(base, name, f, flags, out);
}

/* No bulk allocation of page cache lines ahead of use: SQLite would fill in
 * some twenty of them per cache (the main one and each temporary one), a
 * fault a page that a command of a few lookups never needs (dear under a
 * hypervisor). Before SQLite initialises; later it refuses, harmlessly.
 * Then the VFS above, over the default one (its methods, its pAppData). */
static void fc_sq_config(void)
{
	sqlite3_config(SQLITE_CONFIG_PAGECACHE, NULL, 0, 0);
	fc_sq_vfs_base = sqlite3_vfs_find(NULL);
	if (!fc_sq_vfs_base)
		return;
	fc_sq_vfs = *fc_sq_vfs_base;
	fc_sq_vfs.zName = "freqctl";
	fc_sq_vfs.pNext = NULL;
	fc_sq_vfs.xOpen = fc_sq_vfs_open;
	if (sqlite3_vfs_register(&fc_sq_vfs, 0) != SQLITE_OK)
		fc_sq_vfs_base = NULL;
}

static int fc_sq_open(const char *dsn, const char *name, bool create, const char *const *sql, int n,
		      struct fc_db **out, struct fc_err *err)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	struct fc_db_sqlite *d;

	pthread_once(&once, fc_sq_config);

	if (!create && access(dsn, F_OK) < 0)
		return errno == ENOENT ? fc_err_set(err, "no store at %s: no such file ('freqctl status' says where "
							  "the path is from)",
						    name) :
					 fc_err_set(err, "store %s: %s", name, strerror(errno));
	if (fc_owner_check(FC_OWNED_STORE, dsn, err) < 0)
		return -1;
	/* A store that is there has its directories. */
	if (create && access(dsn, F_OK) < 0 && fc_mkdir_parents(dsn, err) < 0)
		return -1;
	d = calloc(1, sizeof(*d));
	if (!d || !(d->db.name = strdup(name)) || !(d->stmt = calloc((size_t)n, sizeof(*d->stmt)))) {
		if (d)
			free(d->db.name);
		free(d);
		return fc_err_set(err, "store %s: out of memory", name);
	}
	d->db.ops = &fc_db_sqlite;
	d->sql = sql;
	d->nstmt = n;
	if (sqlite3_open_v2(dsn, &d->h, SQLITE_OPEN_READWRITE | (create ? SQLITE_OPEN_CREATE : 0),
			    fc_sq_vfs_base ? fc_sq_vfs.zName : NULL) !=
	    SQLITE_OK) {
		fc_sq_fail(d, err, "cannot open");
		goto fail;
	}
	sqlite3_busy_timeout(d->h, FC_SQ_BUSY_MS);
	/* WAL lets readers (ban list, an agent) run beside one writer. A
	 * commit is durable when it returns: see fc_sq_wal_hook. The WAL's
	 * file outlives the connection, emptied. Statement journals in memory:
	 * each statement of a long transaction (an import's million inserts,
	 * with their log triggers) journals the pages it touches, and in a
	 * temporary file that was three writes a page, 7.4M syscalls for 1M
	 * set members. */
	sqlite3_db_config(d->h, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, NULL);
	sqlite3_file_control(d->h, "main", SQLITE_FCNTL_PERSIST_WAL, &(int){ 1 });
	sqlite3_wal_hook(d->h, fc_sq_wal_hook, d);
	if (fc_sq_keys_register(d->h) != SQLITE_OK) {
		fc_sq_fail(d, err, "registering fc_keys");
		goto fail;
	}
	if (fc_sq_wal(d, err) < 0 || fc_sq_exec(d, "PRAGMA temp_store = MEMORY", err) < 0 ||
	    fc_sq_migrate(d, err) < 0)
		goto fail;
	*out = &d->db;
	return 0;
fail:
	fc_sq_close(&d->db);
	return -1;
}

static int fc_sq_begin(struct fc_db *db, struct fc_err *err)
{
	return fc_sq_exec(FC_SQ(db), "BEGIN IMMEDIATE", err);
}

static int fc_sq_run(struct fc_db *db, int id, const struct fc_val *args, int nargs, const char *what,
		     struct fc_err *err)
{
	struct fc_db_sqlite *d = FC_SQ(db);
	sqlite3_stmt *s;
	int i, rc = SQLITE_OK;

	if (!d->stmt[id] &&
	    sqlite3_prepare_v3(d->h, d->sql[id], -1, SQLITE_PREPARE_PERSISTENT, &d->stmt[id], NULL) != SQLITE_OK)
		return fc_sq_fail(d, err, "preparing a statement");
	s = d->stmt[id];
	sqlite3_reset(s);
	sqlite3_clear_bindings(s);
	for (i = 0; i < nargs && rc == SQLITE_OK; i++) {
		const struct fc_val *a = &args[i];

		switch (a->type) {
		case FC_VAL_NULL:
			break;
		case FC_VAL_INT:
			rc = sqlite3_bind_int64(s, i + 1, a->i);
			break;
		case FC_VAL_REAL:
			rc = sqlite3_bind_double(s, i + 1, a->r);
			break;
		case FC_VAL_TEXT:
			rc = sqlite3_bind_text(s, i + 1, a->p, -1, SQLITE_TRANSIENT);
			break;
		case FC_VAL_BLOB:
			rc = sqlite3_bind_blob(s, i + 1, a->p, (int)a->len, SQLITE_TRANSIENT);
			break;
		}
	}
	return rc == SQLITE_OK ? 0 : fc_sq_fail(FC_SQ(db), err, what);
}

static int fc_sq_next(struct fc_db *db, int id, const char *what, struct fc_err *err)
{
	int rc = sqlite3_step(FC_SQ(db)->stmt[id]);

	if (rc == SQLITE_ROW)
		return 1;
	if (rc == SQLITE_DONE)
		return 0;
	return fc_sq_fail(FC_SQ(db), err, what);
}

static bool fc_sq_col_null(struct fc_db *db, int id, int col)
{
	return sqlite3_column_type(FC_SQ(db)->stmt[id], col) == SQLITE_NULL;
}

static int64_t fc_sq_col_int(struct fc_db *db, int id, int col)
{
	return sqlite3_column_int64(FC_SQ(db)->stmt[id], col);
}

static double fc_sq_col_real(struct fc_db *db, int id, int col)
{
	return sqlite3_column_double(FC_SQ(db)->stmt[id], col);
}

static const char *fc_sq_col_text(struct fc_db *db, int id, int col)
{
	return (const char *)sqlite3_column_text(FC_SQ(db)->stmt[id], col);
}

/* Only a BLOB is one: SQLite would hand over a TEXT's bytes (a script's
 * row), which the queries that find addresses by range (BETWEEN two blobs)
 * never see, so a bit or a length they clear would hide its entry. A row
 * holding one reads as corrupt. */
static const void *fc_sq_col_blob(struct fc_db *db, int id, int col, size_t *len)
{
	sqlite3_stmt *s = FC_SQ(db)->stmt[id];
	const void *p;

	*len = 0;
	if (sqlite3_column_type(s, col) != SQLITE_BLOB)
		return NULL;
	p = sqlite3_column_blob(s, col);
	*len = (size_t)sqlite3_column_bytes(s, col);
	return p;
}

static int64_t fc_sq_changes(struct fc_db *db, int id)
{
	(void)id;
	return sqlite3_changes(FC_SQ(db)->h);
}

static void fc_sq_done(struct fc_db *db, int id)
{
	sqlite3_reset(FC_SQ(db)->stmt[id]);
}

static int fc_sq_version(struct fc_db *db, int64_t *v, struct fc_err *err)
{
	struct fc_db_sqlite *d = FC_SQ(db);
	sqlite3_stmt *s;
	int rc;

	if (sqlite3_prepare_v2(d->h, "PRAGMA data_version", -1, &s, NULL) != SQLITE_OK)
		return fc_sq_fail(d, err, "reading data_version");
	rc = sqlite3_step(s);
	if (rc == SQLITE_ROW)
		*v = sqlite3_column_int64(s, 0);
	sqlite3_finalize(s);
	return rc == SQLITE_ROW ? 0 : fc_sq_fail(d, err, "reading data_version");
}

/* The agent watches the file's directory with inotify instead. */
static int fc_sq_watch_fd(struct fc_db *db)
{
	(void)db;
	return -1;
}

const struct fc_db_ops fc_db_sqlite = {
	.open = fc_sq_open,
	.close = fc_sq_close,
	.begin = fc_sq_begin,
	.commit = fc_sq_commit,
	.rollback = fc_sq_rollback,
	.run = fc_sq_run,
	.next = fc_sq_next,
	.col_null = fc_sq_col_null,
	.col_int = fc_sq_col_int,
	.col_real = fc_sq_col_real,
	.col_text = fc_sq_col_text,
	.col_blob = fc_sq_col_blob,
	.changes = fc_sq_changes,
	.done = fc_sq_done,
	.version = fc_sq_version,
	.watch_fd = fc_sq_watch_fd,
};
