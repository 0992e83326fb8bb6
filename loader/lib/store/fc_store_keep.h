/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A store connection kept between operations by a long-lived reader or
 * writer (the console, top), instead of one connection per request: opened
 * on first use, used by one thread at a time, dropped after a failure and
 * opened again on the next use. A SQLite file replaced or removed since it
 * was opened is opened again (or reported gone), as a fresh open would.
 */
#ifndef FC_STORE_KEEP_H
#define FC_STORE_KEEP_H

#include <pthread.h>
#include <stdbool.h>
#include <sys/types.h>

#include "fc_store.h"

struct fc_store_keep {
	pthread_mutex_t lock;
	const char *dsn;
	struct fc_store *st;
	dev_t dev; /* the SQLite file it was opened on */
	ino_t ino;
};

void fc_store_keep_init(struct fc_store_keep *k, const char *dsn);
/* The connection, with the lock held until fc_store_keep_put; NULL with
 * err (and the lock released) if the store can not be opened. */
struct fc_store *fc_store_keep_get(struct fc_store_keep *k, struct fc_err *err);
/* Releases it; failed: something went wrong on it, drop it. */
void fc_store_keep_put(struct fc_store_keep *k, bool failed);
void fc_store_keep_fini(struct fc_store_keep *k);

#endif /* FC_STORE_KEEP_H */
