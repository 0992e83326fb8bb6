// SPDX-License-Identifier: BSD-2-Clause
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fc_clock.h"
#include "fc_pins.h"
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
	memset(pub, 0, sizeof(*pub));
	pub->ctx = ctx;
	pub->maps.dirfd = -1;
	pub->now = (int64_t)time(NULL);
	pub->st = st;
	if (fc_store_begin(pub->st, err) < 0 ||
	    fc_store_purge(pub->st, pub->now, &pub->purged, &pub->lapsed, &pub->next_expiry, err) < 0) {
		fc_publish_abort(pub);
		return -1;
	}
	return 0;
}

static void fc_publish_close(struct fc_publish *pub)
{
	fc_fleet_view_free(&pub->fleet);
	if (pub->maps.dirfd >= 0) {
		fc_maps_unlock(&pub->maps);
		fc_maps_close(&pub->maps);
	}
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

/* Where a layer marked (id, seq) can publish from: seq, if the change log
 * holds every change since (then only those are published), else 0 (all). */
static uint64_t fc_publish_from(const struct fc_publish *pub, const struct fc_store_log *log, uint64_t id, uint64_t seq)
{
	if (pub->full || !seq || id != log->id || seq < log->pruned || seq > log->head ||
	    log->head - seq > FC_PUBLISH_DELTA_MAX)
		return 0;
	return seq;
}

/* What changed since from; 1: only publishing everything can tell (a
 * table truncated, the node's weight, an allow entry, a change log not as freqctl writes
 * it, a policy row whose address columns a script left wrong: they are
 * put right first). */
static int fc_publish_delta(struct fc_publish *pub, const struct fc_store_log *log, uint64_t from, struct fc_delta *d,
			    struct fc_err *err)
{
	struct fc_err why;
	size_t i;

	if (fc_store_delta(pub->st, from, log->head, pub->now, pub->ctx->node, d, &why) < 0) {
		fc_warn("publish: %s (publishing everything)", why.msg);
		return 1;
	}
	for (i = 0; d->ip_stale && i < d->npols; i++)
		if (d->pols[i].ip_stale && fc_store_policy_ip_fix(pub->st, &d->pols[i].row.spec, err) < 0)
			return -1;
	/* The fleet's node set: every fleet policy's splits. */
	return d->reset || d->weight || d->ip_stale || d->allows || d->fleet;
}

/* What a publish tells the agent of the fleet (pub->want_fleet_cfg): its
 * cfg and when the splits go stale, from the fleet's policies: those a
 * whole publish read, else those alone. A command's publish tells nothing:
 * it reads no policy it does not change, however many are stored. */
static int fc_publish_fleet(struct fc_publish *pub, struct fc_source *src, struct fc_err *err)
{
	struct fc_policy_row *rows = src->pols;
	size_t n = src->npols;
	int rc = -1;

	if (!pub->fleet.on || !pub->want_fleet_cfg)
		return 0;
	if (!src->read && fc_store_policy_list_fleet(src->st, &rows, &n, err) < 0)
		return -1;
	if (fc_fleet_cfg_make(&pub->fleet, rows, n, &pub->fleet_cfg, err) < 0)
		goto out;
	fc_shm_fleet_held(pub->ctx->shm_path, &pub->fleet_cfg); /* written: what the workers hold */
	pub->fleet_refresh_ms = fc_fleet_refresh_ms(&pub->fleet, rows, n);
	rc = 0;
out:
	if (rows != src->pols)
		free(rows);
	return rc;
}

/* Publishes to the maps and the shm, each what changed since its mark when
 * the change log can say, else everything. The caller holds the pin dir's
 * lock; the marks are cleared (by what writes), set once committed. */
static int fc_publish_layers(struct fc_publish *pub, const struct fc_store_log *log, struct fc_err *err)
{
	const struct fc_ctx *ctx = pub->ctx;
	struct fc_delta d = { 0 }, dshm = { 0 };
	const struct fc_delta *ds = &d;
	uint64_t maps_from, shm_from, id, seq;
	struct fc_source src;
	struct fc_config cfg;
	int rc = -1, r = 0;

	if (fc_config_read(&pub->maps, &cfg, err) < 0)
		return -1;
	fc_source_init(&src, pub->st, pub->now, &pub->node);
	/* Maps another version published lack fc_top4's exact bits or
	 * fc_exact4's prefix answers kept true, or have fc_pfx6's markers on
	 * another tree: everything. */
	maps_from = cfg.exact4_gen == cfg.rules_gen && cfg.carry4_gen == cfg.rules_gen && cfg.pfx6_tree == FC_PFX6_TREE ?
			    fc_publish_from(pub, log, cfg.store_id, cfg.store_seq) :
			    0;
	fc_shm_marked(ctx->shm_path, &id, &seq);
	shm_from = fc_publish_from(pub, log, id, seq);
	if (maps_from && (r = fc_publish_delta(pub, log, maps_from, &d, err)) != 0) {
		if (r < 0)
			goto out;
		maps_from = shm_from = 0;
	}
	if (shm_from && shm_from != maps_from) {
		if ((r = fc_publish_delta(pub, log, shm_from, &dshm, err)) < 0)
			goto out;
		shm_from = r ? 0 : shm_from;
		ds = &dshm;
	}
	pub->delta = maps_from || shm_from;
	pub->res.cfg = cfg; /* what it holds, if nothing changed */
	/* A delta puts right the ip_* columns of the policies it reads; a full
	 * publish reads none that way, and later deltas trust every row's. */
	if (!maps_from && fc_store_policy_ip_check(pub->st, err) < 0)
		goto out;
	if (!maps_from)
		r = fc_sync_full(&src, &pub->maps, &pub->res, err);
	else if (maps_from < log->head)
		r = fc_sync_delta(&src, &pub->maps, &d, &pub->res, err);
	if (r < 0)
		goto out;
	r = shm_from ? shm_from == log->head ? 0 :
		       fc_shm_publish_delta(ctx->shm_path, ctx->shm_group, ctx->shm_keys, &src, ds, log->id, shm_from,
					    &pub->shm, err) :
		       1;
	if (r < 0 || (r && fc_shm_publish(ctx->shm_path, ctx->shm_group, ctx->shm_keys, &src, &pub->shm, err) < 0) ||
	    fc_publish_fleet(pub, &src, err) < 0)
		goto out;
	rc = 0;
out:
	fc_source_free(&src);
	fc_delta_free(&d);
	fc_delta_free(&dshm);
	return rc;
}

/* This node as the store says: its weight, and the fleet's node set and key
 * (its windows labelled by this node's clock, plus a test's offset). */
static int fc_publish_node(struct fc_publish *pub, struct fc_err *err)
{
	const struct fc_ctx *ctx = pub->ctx;
	int64_t clock = ctx->fleet_clock_given ? ctx->fleet_clock_ns : fc_shm_fleet_clock(ctx->shm_path);

	if (fc_node_read(pub->st, ctx->node, &pub->node, err) < 0 ||
	    fc_fleet_read(pub->st, ctx->node, fc_unix_ms() + clock / 1000000, &pub->fleet, err) < 0)
		return -1;
	pub->fleet.clock_ns = clock;
	if (ctx->fleet_sync_ns)
		pub->fleet.lease_ns = FC_FLEET_LEASE_ROUNDS * ctx->fleet_sync_ns;
	pub->node.fleet = &pub->fleet;
	return 0;
}

int fc_publish_commit(struct fc_publish *pub, struct fc_err *err)
{
	const char *pin_dir = pub->ctx->pin_dir;
	struct fc_shm_result undo_shm;
	struct fc_sync_result undo;
	struct fc_store_log log;
	struct fc_source src;
	struct fc_err ignored, note;
	const char *why;
	int r;

	if (fc_maps_open(pin_dir, &pub->maps, err) < 0) {
		fc_publish_abort(pub);
		return -1;
	}
	/* The lock is held until the marks are set, after the commit: another
	 * publisher never sees a change committed and not marked. */
	if (fc_maps_lock(&pub->maps, pin_dir, err) < 0) {
		fc_publish_abort(pub);
		return -1;
	}
	/* The maps the attached programs read, or nothing reaches them. */
	r = fc_pins_repair(pin_dir, &pub->maps, &note, err);
	if (r < 0) {
		fc_publish_abort(pub);
		return -1;
	}
	if (r) {
		fc_warn("%s; publishing everything", note.msg);
		pub->full = true;
	}
	if (fc_publish_node(pub, err) < 0 || fc_store_log_head(pub->st, &log, err) < 0 ||
	    fc_publish_layers(pub, &log, err) < 0 || fc_store_log_prune(pub->st, &log, err) < 0 ||
	    fc_store_commit(pub->st, err) < 0) {
		fc_store_rollback(pub->st);
		fc_fleet_cfg_free(&pub->fleet_cfg);
		/* Best effort: the maps and the shm may hold part of the change. */
		fc_source_init(&src, pub->st, pub->now, &pub->node);
		fc_sync_full(&src, &pub->maps, &undo, &ignored);
		fc_shm_publish(pub->ctx->shm_path, pub->ctx->shm_group, pub->ctx->shm_keys, &src, &undo_shm, &ignored);
		fc_source_free(&src);
		pub->failed = true;
		fc_publish_close(pub);
		return -1;
	}
	/* Committed: the next publish may start from here. A mark not set
	 * only costs the next publish a full one. */
	if (fc_sync_mark(&pub->maps, log.id, log.head, pub->fleet.clock_ns, &ignored) < 0 ||
	    fc_shm_mark(pub->ctx->shm_path, log.id, log.head, &ignored) < 0)
		fc_warn("publish: %s (the next publish writes everything)", ignored.msg);
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
