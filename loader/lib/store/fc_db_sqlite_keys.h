/* SPDX-License-Identifier: BSD-2-Clause */
/* fc_keys(BLOB), the table-valued function of bulk writes, for SQLite. */
#ifndef FC_DB_SQLITE_KEYS_H
#define FC_DB_SQLITE_KEYS_H

#include <sqlite3.h>

/* On connection h; an SQLite result code. */
int fc_sq_keys_register(sqlite3 *h);

#endif /* FC_DB_SQLITE_KEYS_H */
