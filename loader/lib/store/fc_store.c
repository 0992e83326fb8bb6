// SPDX-License-Identifier: BSD-2-Clause
/*
 * The store's logic, whichever database holds it (fc_db.h): slots and epochs
 * of policies, ban rows, nodes. Rows are read back through the CLI's own
 * parsers, so a row edited by hand into something invalid is reported, never
 * published.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fc_db.h"
#include "fc_store.h"

enum fc_stmt_id {
	FC_SQL_BAN_GET,
	FC_SQL_BAN_PUT,
	FC_SQL_BAN_DEL,
	FC_SQL_BAN_PURGE,
	FC_SQL_BAN_LIST,
	FC_SQL_BAN_COUNT,
	FC_SQL_POL_GET,
	FC_SQL_POL_SLOT,
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
	FC_SQL_ALLOW_GET,
	FC_SQL_ALLOW_PUT,
	FC_SQL_ALLOW_DEL,
	FC_SQL_ALLOW_PURGE,
	FC_SQL_ALLOW_LIST,
	FC_SQL_ALLOWS_CLEAR,
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
	"escalate, ban_ttl, layer, max_keys, new_keys, concurrency, warmup, override"
	[FC_SQL_POL_GET] = "SELECT " FC_POL_COLS " FROM policies WHERE id = ?1",
	[FC_SQL_POL_SLOT] = "SELECT slot FROM policies WHERE id = ?1",
	[FC_SQL_POL_LIST] = "SELECT " FC_POL_COLS " FROM policies ORDER BY id",
	[FC_SQL_POL_PUT] = "INSERT INTO policies (" FC_POL_COLS ") "
			   "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21) "
			   "ON CONFLICT (id) DO UPDATE SET match = ?2, rates = ?3, burst = ?4, algo = ?5, "
			   "action = ?6, count = ?7, new_sources = ?8, slot = ?9, epoch = ?10, created = ?11, "
			   "updated = ?12, delay_burst = ?13, escalate = ?14, ban_ttl = ?15, layer = ?16, "
			   "max_keys = ?17, new_keys = ?18, concurrency = ?19, warmup = ?20, override = ?21",
	[FC_SQL_POL_DEL] = "DELETE FROM policies WHERE id = ?1",
	[FC_SQL_POL_CONFLICT] = "SELECT id FROM policies WHERE match = ?1 AND id != ?2",
	/* A freed slot if any (lowest first), else the next never used. */
	[FC_SQL_POL_FREE_SLOT] = "DELETE FROM free_slots WHERE slot = (SELECT min(slot) FROM free_slots) RETURNING slot",
	[FC_SQL_POL_NEXT_SLOT] = "SELECT coalesce(max(slot), 0) + 1 FROM policies",
	[FC_SQL_POL_FREE] = "INSERT INTO free_slots VALUES (?1) ON CONFLICT DO NOTHING",
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
	/* An address entry has an empty uid, a uid entry family 0, an empty
	 * address and length 0: one key for both. */
	[FC_SQL_ALLOW_GET] = "SELECT 1 FROM allows WHERE family = ?1 AND addr = ?2 AND len = ?3 AND uid = ?4 "
			     "AND (expires IS NULL OR expires > ?5)",
	[FC_SQL_ALLOW_PUT] = "INSERT INTO allows (family, addr, len, uid, created, expires, note) "
			     "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) "
			     "ON CONFLICT (family, addr, len, uid) DO UPDATE SET created = ?5, expires = ?6, note = ?7",
	[FC_SQL_ALLOW_DEL] = "DELETE FROM allows WHERE family = ?1 AND addr = ?2 AND len = ?3 AND uid = ?4",
	[FC_SQL_ALLOW_PURGE] = "DELETE FROM allows WHERE expires IS NOT NULL AND expires <= ?1",
	[FC_SQL_ALLOW_LIST] = "SELECT family, addr, len, uid, created, expires, note FROM allows "
			      "WHERE expires IS NULL OR expires > ?1 ORDER BY family = 0, family, addr, len, uid",
	[FC_SQL_ALLOWS_CLEAR] = "DELETE FROM allows",
	[FC_SQL_EPOCH_NEXT] = "UPDATE meta SET value = value % 4294967295 + 1 WHERE key = 'epoch' RETURNING value",
};

struct fc_store {
	struct fc_db *db;
	/* Policy rows the last listing skipped: not valid as written (by a
	 * script writing SQL, say), they are reported, never published. */
	size_t bad_policies;
	char bad_why[FC_ERR_LEN];
};

#define FC_ARGS(...) (const struct fc_val[]){ __VA_ARGS__ }, \
	(int)(sizeof((const struct fc_val[]){ __VA_ARGS__ }) / sizeof(struct fc_val))
#define FC_NO_ARGS NULL, 0

bool fc_store_is_postgres(const char *dsn)
{
	return !strncmp(dsn, "postgresql://", 13) || !strncmp(dsn, "postgres://", 11);
}

/* The DSN for messages, its password masked: postgresql://user:secret@host/db
 * and ...?password=secret become user:*** and password=***. */
static char *fc_store_name(const char *dsn)
{
	const char *scheme = strstr(dsn, "://"), *at, *colon, *pw;
	char *name, *masked;
	size_t end;

	if (!fc_store_is_postgres(dsn) || !scheme)
		return strdup(dsn);
	if ((at = strchr(scheme + 3, '@')) && (colon = memchr(scheme + 3, ':', (size_t)(at - scheme - 3)))) {
		if (asprintf(&name, "%.*s:***%s", (int)(colon - dsn), dsn, at) < 0)
			return NULL;
	} else if (!(name = strdup(dsn))) {
		return NULL;
	}
	pw = strstr(name, "password=");
	if (!pw || (pw != name && pw[-1] != '?' && pw[-1] != '&'))
		return name;
	end = strcspn(pw + 9, "&");
	if (asprintf(&masked, "%.*s***%s", (int)(pw + 9 - name), name, pw + 9 + end) < 0)
		masked = NULL;
	free(name);
	return masked;
}

int fc_store_open(const char *path, struct fc_store **out, struct fc_err *err)
{
	return fc_store_open_ex(path, true, out, err);
}

int fc_store_open_ex(const char *dsn, bool create, struct fc_store **out, struct fc_err *err)
{
	const struct fc_db_ops *ops = fc_store_is_postgres(dsn) ? &fc_db_pg : &fc_db_sqlite;
	struct fc_store *st = calloc(1, sizeof(*st));
	char *name = fc_store_name(dsn);
	int rc = -1;

	if (!st || !name)
		fc_err_set(err, "store %s: out of memory", dsn);
	else
		rc = ops->open(dsn, name, create, fc_sql, FC_SQL_MAX, &st->db, err);
	free(name);
	if (rc < 0) {
		free(st);
		return -1;
	}
	*out = st;
	return 0;
}

void fc_store_close(struct fc_store *st)
{
	if (!st)
		return;
	st->db->ops->close(st->db);
	free(st);
}

int fc_store_begin(struct fc_store *st, struct fc_err *err)
{
	return st->db->ops->begin(st->db, err);
}

int fc_store_commit(struct fc_store *st, struct fc_err *err)
{
	return st->db->ops->commit(st->db, err);
}

void fc_store_rollback(struct fc_store *st)
{
	st->db->ops->rollback(st->db);
}

/* Runs a statement for its effect; *changes (if asked) the rows it changed. */
static int fc_exec(struct fc_store *st, enum fc_stmt_id id, const struct fc_val *args, int n, int64_t *changes,
		   const char *what, struct fc_err *err)
{
	const struct fc_db_ops *o = st->db->ops;
	int rc = o->run(st->db, id, args, n, what, err);

	if (rc == 0)
		rc = o->next(st->db, id, what, err) < 0 ? -1 : 0;
	if (rc == 0 && changes)
		*changes = o->changes(st->db, id);
	o->done(st->db, id);
	return rc;
}

/* Runs a one-integer query; *found tells whether it returned a non-NULL value. */
static int fc_query_int(struct fc_store *st, enum fc_stmt_id id, const struct fc_val *args, int n, int64_t *v,
			bool *found, const char *what, struct fc_err *err)
{
	const struct fc_db_ops *o = st->db->ops;
	int rc = o->run(st->db, id, args, n, what, err);

	*found = false;
	if (rc == 0 && (rc = o->next(st->db, id, what, err)) == 1) {
		*found = !o->col_null(st->db, id, 0);
		*v = o->col_int(st->db, id, 0);
		rc = 0;
	}
	o->done(st->db, id);
	return rc;
}

/* Reads the current row of statement id into row (an element of the caller's type). */
typedef int (*fc_row_fn)(struct fc_store *st, int id, void *row, struct fc_err *err);

/* Runs statement id and reads every row with read into a growing array. */
/* A row read that found the row itself not valid: it is skipped and
 * counted, the listing goes on. */
#define FC_ROW_BAD 1

static int fc_collect(struct fc_store *st, enum fc_stmt_id id, const struct fc_val *args, int nargs, size_t elem,
		      fc_row_fn read, const char *what, void **rows, size_t *n, struct fc_err *err)
{
	const struct fc_db_ops *o = st->db->ops;
	size_t cnt = 0, cap = 0;
	char *v = NULL, *nv;
	int rc = o->run(st->db, id, args, nargs, what, err);

	while (rc == 0 && (rc = o->next(st->db, id, what, err)) == 1) {
		rc = 0;
		if (cnt == cap) {
			cap = cap ? cap * 2 : 64;
			nv = realloc(v, cap * elem);
			if (!nv) {
				rc = fc_err_set(err, "store %s: out of memory %s", st->db->name, what);
				break;
			}
			v = nv;
		}
		rc = read(st, id, v + cnt * elem, err);
		if (rc == FC_ROW_BAD) {
			if (!st->bad_policies++)
				snprintf(st->bad_why, sizeof(st->bad_why), "%s", err->msg);
			rc = 0;
			continue;
		}
		cnt++;
	}
	o->done(st->db, id);
	if (rc < 0) {
		free(v);
		return -1;
	}
	*rows = v;
	*n = cnt;
	return 0;
}

#define FC_PREFIX_ARGS(p) FC_INT((p)->family), FC_BLOB((p)->a, (p)->family == 4 ? 4 : 16), FC_INT((p)->len)

int fc_store_ban_put(struct fc_store *st, const struct fc_ban_row *row, struct fc_err *err)
{
	return fc_exec(st, FC_SQL_BAN_PUT,
		       FC_ARGS(FC_PREFIX_ARGS(&row->p), FC_INT(row->created), FC_INT_OR_NULL(row->expires),
			       FC_INT_OR_NULL(row->by_policy)),
		       NULL, "writing ban", err);
}

int fc_store_ban_del(struct fc_store *st, const struct fc_prefix *p, bool *found, struct fc_err *err)
{
	int64_t n = 0;
	int rc = fc_exec(st, FC_SQL_BAN_DEL, FC_ARGS(FC_PREFIX_ARGS(p)), &n, "deleting ban", err);

	*found = n > 0;
	return rc;
}

int fc_store_ban_purge(struct fc_store *st, int64_t now, size_t *n, struct fc_err *err)
{
	int64_t c = 0;
	int rc = fc_exec(st, FC_SQL_BAN_PURGE, FC_ARGS(FC_INT(now)), &c, "purging expired bans", err);

	*n = (size_t)c;
	return rc;
}

/* Reads one ban row; rejects what this version never writes. */
static int fc_ban_row_read(struct fc_store *st, int id, void *out, struct fc_err *err)
{
	const struct fc_db_ops *o = st->db->ops;
	struct fc_ban_row *row = out;
	int family = (int)o->col_int(st->db, id, 0);
	int len = (int)o->col_int(st->db, id, 2);
	int max = family == 4 ? 32 : 128;
	size_t bytes;
	const void *addr = o->col_blob(st->db, id, 1, &bytes);

	if ((family != 4 && family != 6) || !addr || bytes != (size_t)max / 8 || len < 1 || len > max)
		return fc_err_set(err, "store %s: corrupt ban row (family %d, %zu address bytes, length %d)",
				  st->db->name, family, bytes, len);
	memset(row, 0, sizeof(*row));
	row->p.family = (uint8_t)family;
	row->p.len = (uint8_t)len;
	memcpy(row->p.a, addr, bytes);
	row->created = o->col_int(st->db, id, 3);
	row->expires = o->col_int(st->db, id, 4);
	row->by_policy = (uint32_t)o->col_int(st->db, id, 5);
	return 0;
}

/* Reads at most one row of statement id; *found tells whether there was one. */
static int fc_get_one(struct fc_store *st, enum fc_stmt_id id, const struct fc_val *args, int n, fc_row_fn read,
		      void *row, bool *found, const char *what, struct fc_err *err)
{
	const struct fc_db_ops *o = st->db->ops;
	int rc = o->run(st->db, id, args, n, what, err);

	*found = false;
	if (rc == 0 && (rc = o->next(st->db, id, what, err)) == 1) {
		*found = true;
		rc = read(st, id, row, err);
	}
	o->done(st->db, id);
	return rc;
}

int fc_store_ban_get(struct fc_store *st, const struct fc_prefix *p, int64_t now, struct fc_ban_row *row,
		     bool *found, struct fc_err *err)
{
	return fc_get_one(st, FC_SQL_BAN_GET, FC_ARGS(FC_PREFIX_ARGS(p), FC_INT(now)), fc_ban_row_read, row, found,
			  "looking up ban", err);
}

static int fc_ban_counts_read(struct fc_store *st, int id, void *out, struct fc_err *err)
{
	struct fc_ban_counts *n = out;

	(void)err;
	n->addresses = (size_t)st->db->ops->col_int(st->db, id, 0);
	n->escalated = (size_t)st->db->ops->col_int(st->db, id, 1);
	n->uids = (size_t)st->db->ops->col_int(st->db, id, 2);
	return 0;
}

int fc_store_ban_count(struct fc_store *st, int64_t now, struct fc_ban_counts *n, struct fc_err *err)
{
	bool found;

	if (fc_get_one(st, FC_SQL_BAN_COUNT, FC_ARGS(FC_INT(now)), fc_ban_counts_read, n, &found, "counting bans",
		       err) < 0)
		return -1;
	return found ? 0 : fc_err_set(err, "store %s: counting bans: no result", st->db->name);
}

int fc_store_ban_list(struct fc_store *st, int64_t now, struct fc_ban_row **rows, size_t *n,
		      struct fc_err *err)
{
	return fc_collect(st, FC_SQL_BAN_LIST, FC_ARGS(FC_INT(now)), sizeof(**rows), fc_ban_row_read,
			  "listing bans", (void **)rows, n, err);
}

/* Reads one policy row; the texts go through the CLI's own parsers. */
static int fc_policy_row_read(struct fc_store *st, int id, void *out, struct fc_err *err)
{
	const struct fc_db_ops *o = st->db->ops;
	struct fc_policy_row *row = out;
	struct fc_policy_spec *p = &row->spec;
	static const int text_cols[5] = { 1, 2, 4, 5, 6 }; /* match, rates, algo, action, count */
	const char *txt[5], *esc, *layer;
	struct fc_err why;
	int i, rc = 0, lv = FC_LAYER_AUTO;

	memset(row, 0, sizeof(*row));
	for (i = 0; i < 5; i++)
		txt[i] = o->col_text(st->db, id, text_cols[i]);
	p->id = (uint32_t)o->col_int(st->db, id, 0);
	p->burst = (uint64_t)o->col_int(st->db, id, 3);
	p->new_sources = (uint64_t)o->col_int(st->db, id, 7);
	row->slot = (uint32_t)o->col_int(st->db, id, 8);
	row->epoch = (uint32_t)o->col_int(st->db, id, 9);
	row->created = o->col_int(st->db, id, 10);
	row->updated = o->col_int(st->db, id, 11);
	p->delay_burst = (uint32_t)o->col_int(st->db, id, 12);
	esc = o->col_text(st->db, id, 13);
	p->ban_ttl = o->col_int(st->db, id, 14);
	layer = o->col_text(st->db, id, 15);
	p->max_keys = (uint32_t)o->col_int(st->db, id, 16);
	p->new_keys = (uint32_t)o->col_int(st->db, id, 17);
	p->concurrency = (uint32_t)o->col_int(st->db, id, 18);
	p->warmup = o->col_int(st->db, id, 19);
	p->override = o->col_int(st->db, id, 20) != 0;
	for (i = 0; i < 5; i++)
		if (!txt[i])
			return fc_err_set(err, "store %s: policy %u: a required column is NULL", st->db->name, p->id),
			       FC_ROW_BAD;
	if ((esc && fc_rate_parse(esc, &p->escalate, false, &why) < 0) ||
	    (layer && fc_enum_parse("layer", layer, fc_layer_names, &lv, &why) < 0) ||
	    (p->layer = (enum fc_layer)lv, fc_match_parse(txt[0], p, &why) < 0) ||
	    fc_rates_parse(txt[1], p, &why) < 0 || fc_algo_parse(txt[2], &p->algo, &why) < 0 ||
	    fc_action_parse(txt[3], &p->action, &why) < 0 || fc_count_parse(txt[4], &p->count, &why) < 0 ||
	    fc_policy_validate(p, &why) < 0)
		rc = -1;
	else if (row->slot < 1 || row->slot > FC_MAX_POLICIES)
		rc = fc_err_set(&why, "slot %u out of range", row->slot);
	if (rc < 0) {
		fc_err_set(err, "store %s: policy %u: %s", st->db->name, p->id, why.msg);
		return FC_ROW_BAD;
	}
	return 0;
}

int fc_store_policy_get(struct fc_store *st, uint32_t id, struct fc_policy_row *row, bool *found, struct fc_err *err)
{
	/* One row asked for by id: not valid, it is an error, not an absence. */
	return fc_get_one(st, FC_SQL_POL_GET, FC_ARGS(FC_INT(id)), fc_policy_row_read, row, found,
			  "looking up policy", err) ? -1 : 0;
}

int fc_store_policy_list(struct fc_store *st, struct fc_policy_row **rows, size_t *n, struct fc_err *err)
{
	st->bad_policies = 0;
	return fc_collect(st, FC_SQL_POL_LIST, FC_NO_ARGS, sizeof(**rows), fc_policy_row_read, "listing policies",
			  (void **)rows, n, err);
}

size_t fc_store_bad_policies(const struct fc_store *st, const char **why)
{
	*why = st->bad_why;
	return st->bad_policies;
}

/* The slot of a new policy: a freed one if any (lowest first), else the next never used. */
static int fc_slot_alloc(struct fc_store *st, uint32_t *slot, struct fc_err *err)
{
	const char *what = "allocating a policy slot";
	int64_t v = 0;
	bool found;

	if (fc_query_int(st, FC_SQL_POL_FREE_SLOT, FC_NO_ARGS, &v, &found, what, err) < 0)
		return -1;
	if (!found && fc_query_int(st, FC_SQL_POL_NEXT_SLOT, FC_NO_ARGS, &v, &found, what, err) < 0)
		return -1;
	if (v > FC_MAX_POLICIES) {
		fc_err_set(err, "all %d policy slots are in use", FC_MAX_POLICIES);
		return FC_STORE_REFUSED;
	}
	*slot = (uint32_t)v;
	return 0;
}

int fc_store_policy_put(struct fc_store *st, const struct fc_policy_spec *p, int64_t now,
			struct fc_policy_row *out, struct fc_err *err)
{
	char match[FC_MATCH_LEN], rates[FC_TEXT_LEN], esc[FC_RATE_STRLEN];
	struct fc_policy_row old;
	int64_t v;
	bool found, have;

	fc_match_format(p, match);
	fc_rates_format(p, rates);
	if (fc_query_int(st, FC_SQL_POL_CONFLICT, FC_ARGS(FC_TEXT(match), FC_INT(p->id)), &v, &found,
			 "checking policy matches", err) < 0)
		return -1;
	if (found) {
		fc_err_set(err, "%s is already limited by policy %lld (one policy per match; an ip=* is either "
				"at XDP/TC or in nginx)",
			   match, (long long)v);
		return FC_STORE_REFUSED;
	}
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
		/* A new key, packets turned requests, another algorithm (whose
		 * word means something else), another warm-up, a cap added or
		 * removed, or, with either, another number of rates (the ramp's
		 * word sits after the rates', a key's count of places after
		 * both): its buckets start afresh. */
		if (strcmp(old_match, match) || fc_policy_is_l7(&old.spec) != fc_policy_is_l7(p) ||
		    old.spec.algo != p->algo || old.spec.warmup != p->warmup || !old.spec.concurrency != !p->concurrency ||
		    ((p->warmup || p->concurrency) && old.spec.ntiers != p->ntiers))
			out->epoch = 0;
	} else {
		int rc = fc_slot_alloc(st, &out->slot, err);

		if (rc < 0)
			return rc;
	}
	if (!out->epoch) {
		if (fc_query_int(st, FC_SQL_EPOCH_NEXT, FC_NO_ARGS, &v, &found, "allocating an epoch", err) < 0)
			return -1;
		out->epoch = (uint32_t)v;
	}
	if (p->escalate.n)
		fc_rate_format(&p->escalate, esc);
	return fc_exec(st, FC_SQL_POL_PUT,
		       FC_ARGS(FC_INT(p->id), FC_TEXT(match), FC_TEXT(rates), FC_INT_OR_NULL(p->burst),
			       FC_TEXT(fc_algo_name(p->algo)), FC_TEXT(fc_action_name(p->action)),
			       FC_TEXT(fc_count_name(p->count)), FC_INT_OR_NULL(p->new_sources), FC_INT(out->slot),
			       FC_INT(out->epoch), FC_INT(out->created), FC_INT(out->updated),
			       FC_INT_OR_NULL(p->delay_burst),
			       p->escalate.n ? FC_TEXT(esc) : (struct fc_val){ .type = FC_VAL_NULL },
			       p->escalate.n ? FC_INT(p->ban_ttl) : (struct fc_val){ .type = FC_VAL_NULL },
			       p->layer != FC_LAYER_AUTO ? FC_TEXT(fc_layer_names[p->layer]) :
							  (struct fc_val){ .type = FC_VAL_NULL },
			       FC_INT_OR_NULL(p->max_keys), FC_INT_OR_NULL(p->new_keys), FC_INT_OR_NULL(p->concurrency),
			       FC_INT_OR_NULL(p->warmup), FC_INT_OR_NULL(p->override)),
		       NULL, "writing policy", err);
}

int fc_store_policy_del(struct fc_store *st, uint32_t id, bool *found, struct fc_err *err)
{
	int64_t slot;

	/* By its slot alone: a row that is not valid can still be deleted. A
	 * database error is not "no such policy". */
	if (fc_query_int(st, FC_SQL_POL_SLOT, FC_ARGS(FC_INT(id)), &slot, found, "looking up policy", err) < 0)
		return -1;
	if (!*found)
		return 0;
	if (fc_exec(st, FC_SQL_POL_DEL, FC_ARGS(FC_INT(id)), NULL, "deleting policy", err) < 0)
		return -1;
	if (slot < 1 || slot > FC_MAX_POLICIES)
		return 0; /* a slot out of range was never one to give out again */
	return fc_exec(st, FC_SQL_POL_FREE, FC_ARGS(FC_INT(slot)), NULL, "freeing policy slot", err);
}

int fc_store_uid_ban_put(struct fc_store *st, const struct fc_uid_ban *b, bool *existed, int64_t now,
			 struct fc_err *err)
{
	int64_t v;

	if (fc_query_int(st, FC_SQL_UBAN_GET, FC_ARGS(FC_TEXT(b->uid), FC_INT(now)), &v, existed,
			 "looking up uid ban", err) < 0)
		return -1;
	return fc_exec(st, FC_SQL_UBAN_PUT, FC_ARGS(FC_TEXT(b->uid), FC_INT(b->created), FC_INT_OR_NULL(b->expires)),
		       NULL, "writing uid ban", err);
}

int fc_store_uid_ban_del(struct fc_store *st, const char *uid, bool *found, struct fc_err *err)
{
	int64_t n = 0;
	int rc = fc_exec(st, FC_SQL_UBAN_DEL, FC_ARGS(FC_TEXT(uid)), &n, "deleting uid ban", err);

	*found = n > 0;
	return rc;
}

int fc_store_uid_ban_purge(struct fc_store *st, int64_t now, size_t *n, struct fc_err *err)
{
	int64_t c = 0;
	int rc = fc_exec(st, FC_SQL_UBAN_PURGE, FC_ARGS(FC_INT(now)), &c, "purging expired uid bans", err);

	*n = (size_t)c;
	return rc;
}

static int fc_uid_ban_read(struct fc_store *st, int id, void *row, struct fc_err *err)
{
	const char *uid = st->db->ops->col_text(st->db, id, 0);
	struct fc_uid_ban *b = row;

	if (!uid || !*uid || strlen(uid) > FC_SHM_MAX_VALUE)
		return fc_err_set(err, "store %s: corrupt uid ban row", st->db->name);
	memset(b, 0, sizeof(*b));
	snprintf(b->uid, sizeof(b->uid), "%s", uid);
	b->created = st->db->ops->col_int(st->db, id, 1);
	b->expires = st->db->ops->col_int(st->db, id, 2);
	return 0;
}

int fc_store_uid_ban_list(struct fc_store *st, int64_t now, struct fc_uid_ban **rows, size_t *n,
			  struct fc_err *err)
{
	return fc_collect(st, FC_SQL_UBAN_LIST, FC_ARGS(FC_INT(now)), sizeof(**rows), fc_uid_ban_read,
			  "listing uid bans", (void **)rows, n, err);
}

int fc_store_bans_clear(struct fc_store *st, struct fc_err *err)
{
	if (fc_exec(st, FC_SQL_BANS_CLEAR, FC_NO_ARGS, NULL, "clearing bans", err) < 0)
		return -1;
	return fc_exec(st, FC_SQL_UBANS_CLEAR, FC_NO_ARGS, NULL, "clearing uid bans", err);
}

int fc_store_data_version(struct fc_store *st, int64_t *v, struct fc_err *err)
{
	return st->db->ops->version(st->db, v, err);
}

int fc_store_watch_fd(struct fc_store *st)
{
	return st->db->ops->watch_fd(st->db);
}

static int fc_weight_read(struct fc_store *st, int id, void *out, struct fc_err *err)
{
	(void)err;
	*(double *)out = st->db->ops->col_real(st->db, id, 0);
	return 0;
}

int fc_store_node_weight(struct fc_store *st, const char *name, double *weight, struct fc_err *err)
{
	bool found;

	*weight = 1.0;
	if (fc_get_one(st, FC_SQL_NODE_GET, FC_ARGS(FC_TEXT(name)), fc_weight_read, weight, &found,
		       "reading node weight", err) < 0)
		return -1;
	if (!(*weight > 0 && *weight <= 1))
		return fc_err_set(err, "store %s: node %s: weight %g outside (0, 1]", st->db->name, name, *weight);
	return 0;
}

int fc_store_node_put(struct fc_store *st, const struct fc_node *n, struct fc_err *err)
{
	return fc_exec(st, FC_SQL_NODE_PUT, FC_ARGS(FC_TEXT(n->name), FC_REAL(n->weight)), NULL, "writing node",
		       err);
}

static int fc_node_read(struct fc_store *st, int id, void *row, struct fc_err *err)
{
	const char *name = st->db->ops->col_text(st->db, id, 0);
	struct fc_node *n = row;

	if (!name || !*name || strlen(name) >= sizeof(n->name))
		return fc_err_set(err, "store %s: corrupt node row", st->db->name);
	snprintf(n->name, sizeof(n->name), "%s", name);
	n->weight = st->db->ops->col_real(st->db, id, 1);
	return 0;
}

int fc_store_node_list(struct fc_store *st, struct fc_node **rows, size_t *n, struct fc_err *err)
{
	return fc_collect(st, FC_SQL_NODE_LIST, FC_NO_ARGS, sizeof(**rows), fc_node_read, "listing nodes",
			  (void **)rows, n, err);
}

int fc_store_nodes_clear(struct fc_store *st, struct fc_err *err)
{
	return fc_exec(st, FC_SQL_NODES_CLEAR, FC_NO_ARGS, NULL, "clearing nodes", err);
}

/* An allow entry's key: family, address, length, uid. */
#define FC_ALLOW_ARGS(r)                                                                                   \
	FC_INT((r)->p.family), FC_BLOB((r)->p.a, (r)->p.family == 4 ? 4 : (r)->p.family == 6 ? 16 : 0), \
		FC_INT((r)->p.len), FC_TEXT((r)->p.family ? "" : (r)->uid)

int fc_store_allow_put(struct fc_store *st, const struct fc_allow_row *row, int64_t now, bool *existed,
		       struct fc_err *err)
{
	int64_t v;

	if (fc_query_int(st, FC_SQL_ALLOW_GET, FC_ARGS(FC_ALLOW_ARGS(row), FC_INT(now)), &v, existed,
			 "looking up allow entry", err) < 0)
		return -1;
	return fc_exec(st, FC_SQL_ALLOW_PUT,
		       FC_ARGS(FC_ALLOW_ARGS(row), FC_INT(row->created), FC_INT_OR_NULL(row->expires),
			       row->note[0] ? FC_TEXT(row->note) : (struct fc_val){ .type = FC_VAL_NULL }),
		       NULL, "writing allow entry", err);
}

int fc_store_allow_del(struct fc_store *st, const struct fc_allow_row *key, bool *found, struct fc_err *err)
{
	int64_t n = 0;
	int rc = fc_exec(st, FC_SQL_ALLOW_DEL, FC_ARGS(FC_ALLOW_ARGS(key)), &n, "deleting allow entry", err);

	*found = n > 0;
	return rc;
}

int fc_store_allow_purge(struct fc_store *st, int64_t now, size_t *n, struct fc_err *err)
{
	int64_t c = 0;
	int rc = fc_exec(st, FC_SQL_ALLOW_PURGE, FC_ARGS(FC_INT(now)), &c, "purging expired allow entries", err);

	*n = (size_t)c;
	return rc;
}

/* Reads one allow row; rejects what this version never writes. */
static int fc_allow_row_read(struct fc_store *st, int id, void *out, struct fc_err *err)
{
	const struct fc_db_ops *o = st->db->ops;
	struct fc_allow_row *row = out;
	int family = (int)o->col_int(st->db, id, 0), len = (int)o->col_int(st->db, id, 2);
	const char *uid = o->col_text(st->db, id, 3), *note = o->col_text(st->db, id, 6);
	int max = family == 4 ? 32 : 128;
	size_t bytes = 0;
	const void *addr = o->col_blob(st->db, id, 1, &bytes);
	bool ok;

	if (family == 0)
		ok = uid && *uid && strlen(uid) <= FC_SHM_MAX_VALUE && !bytes && !len;
	else
		ok = (family == 4 || family == 6) && addr && bytes == (size_t)max / 8 && len >= 1 && len <= max &&
		     uid && !*uid;
	if (!ok || (note && strlen(note) > FC_ALLOW_NOTE_MAX))
		return fc_err_set(err, "store %s: corrupt allow row (family %d, %zu address bytes, length %d)",
				  st->db->name, family, bytes, len);
	memset(row, 0, sizeof(*row));
	row->p.family = (uint8_t)family;
	row->p.len = (uint8_t)len;
	if (family)
		memcpy(row->p.a, addr, bytes);
	else
		snprintf(row->uid, sizeof(row->uid), "%s", uid);
	row->created = o->col_int(st->db, id, 4);
	row->expires = o->col_int(st->db, id, 5);
	snprintf(row->note, sizeof(row->note), "%s", note ? note : "");
	return 0;
}

int fc_store_allow_list(struct fc_store *st, int64_t now, struct fc_allow_row **rows, size_t *n,
			struct fc_err *err)
{
	return fc_collect(st, FC_SQL_ALLOW_LIST, FC_ARGS(FC_INT(now)), sizeof(**rows), fc_allow_row_read,
			  "listing allow entries", (void **)rows, n, err);
}

int fc_store_allows_clear(struct fc_store *st, struct fc_err *err)
{
	return fc_exec(st, FC_SQL_ALLOWS_CLEAR, FC_NO_ARGS, NULL, "clearing allow entries", err);
}
