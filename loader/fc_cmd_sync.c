// SPDX-License-Identifier: BSD-2-Clause
/* freqctl sync */
#include <jansson.h>

#include "fc_cli.h"
#include "fc_publish.h"

static int fc_cmd_sync_run(const struct fc_ctx *ctx, const struct fc_cmd *cmd, int argc, char **argv)
{
	struct fc_publish pub;
	struct fc_sync_result *r = &pub.res;
	bool json = false;
	struct fc_err err;
	int c;

	while ((c = fc_cmd_getopt(cmd, argc, argv)) != -1)
		json |= c == FC_OPT_JSON;
	if (fc_publish_begin(&pub, ctx, &err) < 0 || fc_publish_commit(&pub, &err) < 0) {
		fc_warn("sync: %s", err.msg);
		return FC_EXIT_FAILURE;
	}
	if (json)
		return fc_json_print(json_pack("{s:i, s:i, s:i, s:i, s:{s:i, s:i, s:i}}", "added", (json_int_t)r->added,
					       "changed", (json_int_t)r->changed, "removed", (json_int_t)r->removed,
					       "expired_purged", (json_int_t)pub.purged, "published", "exact",
					       (json_int_t)r->cfg.n_exact, "prefix4", (json_int_t)r->cfg.n_pfx4,
					       "prefix6", (json_int_t)r->cfg.n_pfx6));
	printf("published %u exact, %u IPv4 prefix, %u IPv6 prefix bans (%zu added, %zu changed, %zu removed; "
	       "%zu expired purged)\n",
	       r->cfg.n_exact, r->cfg.n_pfx4, r->cfg.n_pfx6, r->added, r->changed, r->removed, pub.purged);
	return FC_EXIT_OK;
}

const struct fc_cmd fc_cmd_sync = {
	.name = "sync",
	.min_args = 0,
	.max_args = 0,
	.summary = "Publish the store to the pinned maps (idempotent).",
	.details = "Afterwards the maps hold exactly the store's live bans. Only the difference is\n"
		   "written, so a second sync reports 0 added, changed and removed. Expired bans are\n"
		   "purged from the store. Every 'ban' command already does this; run it after restoring\n"
		   "a store, or to repair maps edited by hand.",
	.opts = fc_opts_json,
	.run = fc_cmd_sync_run,
};
