/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Libraries loaded on first use (dlopen), not at every start: libpq for a
 * PostgreSQL store, libmicrohttpd for the agent's console and metrics.
 * Between them they pull in some twenty more libraries (Kerberos, LDAP,
 * TLS...), whose loading cost every command ~15-30 ms here, most of them
 * on a SQLite store with no server to run.
 *
 * A user declares the functions once as an X-macro list, gets a table of
 * pointers of their own types (FC_DL_PTR) and their names (FC_DL_NAME),
 * and calls through the table after fc_dl_load.
 */
#ifndef FC_DL_H
#define FC_DL_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

#include "fc_error.h"

#define FC_DL_PTR(f)  __typeof__(f) *f;
#define FC_DL_NAME(f) #f,

struct fc_dl {
	const char *lib;          /* its soname: "libpq.so.5" */
	const char *const *names; /* the functions */
	size_t n;
	void *table;              /* n pointers, in the order of names */
	pthread_mutex_t lock;
	bool tried;
	char why[FC_ERR_LEN];     /* why it could not be loaded ("": it was) */
};

#define FC_DL_INIT(lib_, names_, table_) \
	{ .lib = (lib_), .names = (names_), .n = sizeof(names_) / sizeof((names_)[0]), .table = &(table_), \
	  .lock = PTHREAD_MUTEX_INITIALIZER }

/* Loads dl's library and functions, once; -1 with err (naming the library
 * and what failed) if it can not. */
int fc_dl_load(struct fc_dl *dl, struct fc_err *err);

#endif /* FC_DL_H */
