// SPDX-License-Identifier: BSD-2-Clause
/* freqctl sync */
#include <stdlib.h>
#include <jansson.h>

#include "fc_cli.h"
#include "fc_publish.h"

static int fc_cmd_sync_run(const struct fc_ctx *ctx, const struct fc_cmd *cmd, int argc, char **argv)
{
	struct fc_publish pub;
	struct fc_sync_result *r = &pub.res;
	struct fc_json_opt opt = { 0 };
	struct fc_err err;

	char (*notes)[FC_ERR_LEN] = NULL;
	size_t nnotes = 0, i;

	fc_cmd_parse(cmd, argc, argv, &opt, NULL);
	fc_need_privileges(cmd, "it writes the pinned BPF maps");
	if (fc_publish_begin(&pub, ctx, &err) < 0 || (pub.full = true, fc_publish_commit(&pub, &err) < 0)) {
		fc_warn("sync: %s", err.msg);
		return FC_EXIT_FAILURE;
	}
	/* Published as stored; what a policy of every source does, said. */
	if (fc_policy_notes(ctx, &notes, &nnotes) == 0)
		for (i = 0; i < nnotes; i++)
			fc_warn("sync: warning: %s", notes[i]);
	free(notes);
	if (opt.json)
		return fc_json_print(json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:{s:I, s:I, s:I, s:I, s:I, s:I}}",
					       "added", (json_int_t)r->added, "changed", (json_int_t)r->changed,
					       "removed", (json_int_t)r->removed, "policies_changed",
					       (json_int_t)r->policies_changed, "expired_purged",
					       (json_int_t)pub.purged, "policies_not_valid", (json_int_t)pub.bad_policies,
					       "published", "exact4", (json_int_t)r->cfg.n_exact4,
					       "exact6", (json_int_t)r->cfg.n_exact6, "top4", (json_int_t)r->cfg.n_top4,
					       "prefix4", (json_int_t)r->cfg.n_pfx4, "prefix6", (json_int_t)r->cfg.n_pfx6,
					       "policies", (json_int_t)r->cfg.n_policies));
	printf("XDP/TC: %u exact-address entries, %u IPv4 prefixes, %u IPv4 /16s in use, %u IPv6 prefix entries, %u "
	       "policies (entries: %zu added, %zu changed, %zu removed; %zu policy slots written; %zu expired bans "
	       "purged)\n",
	       r->cfg.n_exact4 + r->cfg.n_exact6, r->cfg.n_pfx4, r->cfg.n_top4, r->cfg.n_pfx6, r->cfg.n_policies,
	       r->added, r->changed, r->removed, r->policies_changed, pub.purged);
	printf("nginx shm %s: %zu policies, %zu IP bans, %zu uid bans (%s, seq %llu)\n", ctx->shm_path,
	       pub.shm.policies, pub.shm.ip_bans, pub.shm.uid_bans, pub.shm.published ? "published" : "unchanged",
	       (unsigned long long)pub.shm.seq);
	return FC_EXIT_OK;
}

const struct fc_cmd fc_cmd_sync = {
	.name = "sync",
	.min_args = 0,
	.max_args = 0,
	.summary = "Publish the store (bans, policies) to the pinned maps (idempotent).",
	.details = "Afterwards the maps hold exactly the store's live bans and policies. Only the\n"
		   "difference is written, so a second sync reports 0 added, changed and removed.\n"
		   "Expired bans are purged from the store. Every 'ban' and 'policy' command already\n"
		   "does this; run it after restoring a store, or to repair maps edited by hand.",
	.opts = fc_opts_json,
	.run = fc_cmd_sync_run,
};
