// SPDX-License-Identifier: BSD-2-Clause
/*
 * fc_keys(BLOB) for SQLite: the address keys packed in a BLOB (fc_db.h,
 * FC_KEY_BYTES) as rows (family, addr, len), an eponymous table-valued
 * function as SQLite's generate_series is. A bulk write (an import's
 * million bans) is then one statement per batch: SQLite journals the pages
 * each statement touches (the log triggers make it), and a statement per row
 * journaled the same pages once a row.
 */
#include <stdlib.h>
#include <string.h>
#include <sqlite3.h>

#include "fc_db.h"
#include "fc_db_sqlite_keys.h"

enum { FC_KEYS_FAMILY, FC_KEYS_ADDR, FC_KEYS_LEN, FC_KEYS_ARG };

struct fc_keys_cursor {
	sqlite3_vtab_cursor base;
	unsigned char *keys; /* a copy: xFilter's argument lives only for the call */
	size_t n, i;
};

static int fc_keys_connect(sqlite3 *h, void *aux, int argc, const char *const *argv, sqlite3_vtab **out,
			   char **msg)
{
	sqlite3_vtab *vt;
	int rc;

	(void)aux;
	(void)argc;
	(void)argv;
	(void)msg;
	rc = sqlite3_declare_vtab(h, "CREATE TABLE x(family INTEGER, addr BLOB, len INTEGER, keys HIDDEN)");
	if (rc != SQLITE_OK)
		return rc;
	vt = sqlite3_malloc(sizeof(*vt));
	if (!vt)
		return SQLITE_NOMEM;
	memset(vt, 0, sizeof(*vt));
	*out = vt;
	return SQLITE_OK;
}

static int fc_keys_disconnect(sqlite3_vtab *vt)
{
	sqlite3_free(vt);
	return SQLITE_OK;
}

/* Usable only with its argument: fc_keys(?N), i.e. keys = ?N. */
static int fc_keys_best_index(sqlite3_vtab *vt, sqlite3_index_info *info)
{
	int i;

	(void)vt;
	for (i = 0; i < info->nConstraint; i++) {
		const struct sqlite3_index_constraint *c = &info->aConstraint[i];

		if (c->iColumn == FC_KEYS_ARG && c->op == SQLITE_INDEX_CONSTRAINT_EQ && c->usable) {
			info->aConstraintUsage[i].argvIndex = 1;
			info->aConstraintUsage[i].omit = 1;
			info->estimatedCost = 1;
			info->estimatedRows = 1000;
			return SQLITE_OK;
		}
	}
	return SQLITE_CONSTRAINT;
}

static int fc_keys_open(sqlite3_vtab *vt, sqlite3_vtab_cursor **out)
{
	struct fc_keys_cursor *c = sqlite3_malloc(sizeof(*c));

	(void)vt;
	if (!c)
		return SQLITE_NOMEM;
	memset(c, 0, sizeof(*c));
	*out = &c->base;
	return SQLITE_OK;
}

static int fc_keys_close(sqlite3_vtab_cursor *cur)
{
	struct fc_keys_cursor *c = (struct fc_keys_cursor *)cur;

	sqlite3_free(c->keys);
	sqlite3_free(c);
	return SQLITE_OK;
}

/* Refuses what is not whole keys, or a key no address is: the rows would
 * be written as they come. */
static int fc_keys_filter(sqlite3_vtab_cursor *cur, int idx, const char *idx_str, int argc, sqlite3_value **argv)
{
	struct fc_keys_cursor *c = (struct fc_keys_cursor *)cur;
	const unsigned char *b;
	size_t bytes, i;

	(void)idx;
	(void)idx_str;
	sqlite3_free(c->keys);
	c->keys = NULL;
	c->n = c->i = 0;
	if (argc != 1 || sqlite3_value_type(argv[0]) != SQLITE_BLOB)
		goto bad;
	b = sqlite3_value_blob(argv[0]);
	bytes = (size_t)sqlite3_value_bytes(argv[0]);
	if (bytes % FC_KEY_BYTES)
		goto bad;
	for (i = 0; i < bytes; i += FC_KEY_BYTES)
		if ((b[i] != 4 && b[i] != 6) || b[i + 1] > (b[i] == 4 ? 32 : 128))
			goto bad;
	if (bytes && !(c->keys = sqlite3_malloc64(bytes)))
		return SQLITE_NOMEM;
	if (bytes)
		memcpy(c->keys, b, bytes);
	c->n = bytes / FC_KEY_BYTES;
	return SQLITE_OK;
bad:
	sqlite3_free(cur->pVtab->zErrMsg);
	cur->pVtab->zErrMsg = sqlite3_mprintf("fc_keys: not a BLOB of %d-byte address keys", FC_KEY_BYTES);
	return SQLITE_ERROR;
}

static int fc_keys_next(sqlite3_vtab_cursor *cur)
{
	((struct fc_keys_cursor *)cur)->i++;
	return SQLITE_OK;
}

static int fc_keys_eof(sqlite3_vtab_cursor *cur)
{
	struct fc_keys_cursor *c = (struct fc_keys_cursor *)cur;

	return c->i >= c->n;
}

static int fc_keys_column(sqlite3_vtab_cursor *cur, sqlite3_context *ctx, int col)
{
	struct fc_keys_cursor *c = (struct fc_keys_cursor *)cur;
	const unsigned char *k = c->keys + c->i * FC_KEY_BYTES;

	if (col == FC_KEYS_FAMILY)
		sqlite3_result_int(ctx, k[0]);
	else if (col == FC_KEYS_ADDR)
		sqlite3_result_blob(ctx, k + 2, k[0] == 4 ? 4 : 16, SQLITE_TRANSIENT);
	else if (col == FC_KEYS_LEN)
		sqlite3_result_int(ctx, k[1]);
	return SQLITE_OK;
}

static int fc_keys_rowid(sqlite3_vtab_cursor *cur, sqlite3_int64 *rowid)
{
	*rowid = (sqlite3_int64)((struct fc_keys_cursor *)cur)->i;
	return SQLITE_OK;
}

/* Eponymous only (no xCreate): there is no CREATE VIRTUAL TABLE of it. */
static const sqlite3_module fc_keys_module = {
	.xConnect = fc_keys_connect,
	.xBestIndex = fc_keys_best_index,
	.xDisconnect = fc_keys_disconnect,
	.xOpen = fc_keys_open,
	.xClose = fc_keys_close,
	.xFilter = fc_keys_filter,
	.xNext = fc_keys_next,
	.xEof = fc_keys_eof,
	.xColumn = fc_keys_column,
	.xRowid = fc_keys_rowid,
};

int fc_sq_keys_register(sqlite3 *h)
{
	return sqlite3_create_module_v2(h, "fc_keys", &fc_keys_module, NULL, NULL);
}
