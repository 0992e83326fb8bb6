// SPDX-License-Identifier: BSD-2-Clause
#include <string.h>
#include <time.h>

#include "fc_publish.h"
#include "fc_store_keep.h"

int fc_publish_begin(struct fc_publish *pub, const struct fc_ctx *ctx, struct fc_err *err)
{
	struct fc_store *st;

	if (ctx->keep) {
		st = fc_store_keep_get(ctx->keep, err);
		if (!st)
			return -1;
		if (fc_publish_begin_on(pub, ctx, st, err) < 0) {
			fc_store_keep_put(ctx->keep, true);
			return -1;
		}
		pub->keep = ctx->keep;
		return 0;
	}
	if (fc_store_open_ex(ctx->db_path, !ctx->store_must_exist, &st, err) < 0)
		return -1;
	if (fc_publish_begin_on(pub, ctx, st, err) < 0) {
		fc_store_close(st);
		return -1;
	}
	pub->own_st = true;
	return 0;
}

int fc_publish_begin_on(struct fc_publish *pub, const struct fc_ctx *ctx, struct fc_store *st, struct fc_err *err)
{
	size_t upurged = 0, apurged = 0;

	memset(pub, 0, sizeof(*pub));
	pub->ctx = ctx;
	pub->maps.dirfd = -1;
	pub->now = (int64_t)time(NULL);
	pub->st = st;
	if (fc_store_begin(pub->st, err) < 0 || fc_store_ban_purge(pub->st, pub->now, &pub->purged, err) < 0 ||
	    fc_store_uid_ban_purge(pub->st, pub->now, &upurged, err) < 0 ||
	    fc_store_allow_purge(pub->st, pub->now, &apurged, err) < 0) {
		fc_publish_abort(pub);
		return -1;
	}
	pub->purged += upurged;
	return 0;
}

static void fc_publish_close(struct fc_publish *pub)
{
	if (pub->maps.dirfd >= 0)
		fc_maps_close(&pub->maps);
	if (pub->keep)
		fc_store_keep_put(pub->keep, pub->failed);
	else if (pub->own_st)
		fc_store_close(pub->st);
	pub->st = NULL;
	pub->keep = NULL;
}

void fc_publish_abort(struct fc_publish *pub)
{
	fc_store_rollback(pub->st);
	fc_publish_close(pub);
}

int fc_publish_commit(struct fc_publish *pub, struct fc_err *err)
{
	const char *pin_dir = pub->ctx->pin_dir;
	struct fc_shm_result undo_shm;
	struct fc_sync_result undo;
	struct fc_err ignored;
	const char *why;

	if (fc_maps_open(pin_dir, &pub->maps, err) < 0) {
		fc_publish_abort(pub);
		return -1;
	}
	if (fc_store_node_weight(pub->st, pub->ctx->node, &pub->weight, err) < 0 ||
	    fc_sync(pub->st, &pub->maps, pin_dir, pub->now, pub->weight, &pub->res, err) < 0 ||
	    fc_shm_publish(pub->ctx->shm_path, pub->ctx->shm_group, pub->ctx->shm_keys, pub->st, pub->now,
			   pub->weight, &pub->shm, err) < 0 ||
	    fc_store_commit(pub->st, err) < 0) {
		fc_store_rollback(pub->st);
		/* Best effort: the maps and the shm may hold part of the change. */
		fc_sync(pub->st, &pub->maps, pin_dir, pub->now, pub->weight, &undo, &ignored);
		fc_shm_publish(pub->ctx->shm_path, pub->ctx->shm_group, pub->ctx->shm_keys, pub->st, pub->now,
			       pub->weight, &undo_shm, &ignored);
		pub->failed = true;
		fc_publish_close(pub);
		return -1;
	}
	/* A row not valid as written is not published; the rest is. Say so on
	 * every publish until it is fixed or deleted. */
	pub->bad_policies = fc_store_bad_policies(pub->st, &why);
	if (pub->bad_policies)
		fc_warn("store: %zu policy row%s not valid, not published (%s); fix it with 'freqctl policy set' or "
			"'freqctl policy del'",
			pub->bad_policies, pub->bad_policies == 1 ? " is" : "s are", why);
	fc_publish_close(pub);
	return 0;
}
