// SPDX-License-Identifier: BSD-2-Clause
#include <sys/stat.h>

#include "fc_store_keep.h"

void fc_store_keep_init(struct fc_store_keep *k, const char *dsn)
{
	pthread_mutex_init(&k->lock, NULL);
	k->dsn = dsn;
	k->st = NULL;
}

/* Whether the SQLite file at the path is still the one opened. */
static bool fc_store_keep_same(const struct fc_store_keep *k)
{
	struct stat sb;

	return fc_store_is_postgres(k->dsn) || (stat(k->dsn, &sb) == 0 && sb.st_dev == k->dev && sb.st_ino == k->ino);
}

struct fc_store *fc_store_keep_get(struct fc_store_keep *k, struct fc_err *err)
{
	struct stat sb;

	pthread_mutex_lock(&k->lock);
	if (k->st && !fc_store_keep_same(k)) {
		fc_store_close(k->st);
		k->st = NULL;
	}
	if (!k->st) {
		if (fc_store_open_ex(k->dsn, false, &k->st, err) < 0) {
			k->st = NULL;
			pthread_mutex_unlock(&k->lock);
			return NULL;
		}
		if (!fc_store_is_postgres(k->dsn) && stat(k->dsn, &sb) == 0) {
			k->dev = sb.st_dev;
			k->ino = sb.st_ino;
		}
	}
	return k->st;
}

void fc_store_keep_put(struct fc_store_keep *k, bool failed)
{
	if (failed) {
		fc_store_close(k->st);
		k->st = NULL;
	}
	pthread_mutex_unlock(&k->lock);
}

void fc_store_keep_fini(struct fc_store_keep *k)
{
	fc_store_close(k->st);
	k->st = NULL;
	pthread_mutex_destroy(&k->lock);
}
