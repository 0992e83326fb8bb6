// SPDX-License-Identifier: BSD-2-Clause
/* freqctl allow add | del | list */
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <jansson.h>

#include "fc_allow.h"
#include "fc_change.h"
#include "fc_cli.h"
#include "fc_duration.h"
#include "fc_rows_json.h"

struct fc_allow_opt {
	int64_t ttl; /* seconds; 0 = none */
	const char *note;
};

static const struct fc_opt fc_allow_add_opts[] = {
	FC_OPTION("ttl", 0, FC_OPT_DURATION, struct fc_allow_opt, ttl, .arg = "DURATION",
		  .help = "lift the allow entry after DURATION (90s, 10m, 1h, 7d, 1h30m)"),
	FC_OPTION("note", 0, FC_OPT_STR, struct fc_allow_opt, note, .arg = "TEXT",
		  .help = "a note shown by allow list (who, why), at most 200 characters"),
	FC_OPT_END,
};

static int fc_allow_add(const struct fc_ctx *ctx, const struct fc_cmd *cmd, int argc, char **argv)
{
	char text[FC_BAN_TEXT_LEN], dur[FC_DURATION_STRLEN];
	struct fc_allow_opt opt = { 0 };
	struct fc_err err;
	bool existed;
	int rc;

	fc_cmd_parse(cmd, argc, argv, &opt, NULL);
	rc = fc_change_allow_put(ctx, argv[optind], opt.ttl, opt.note ? opt.note : "", text, &existed, &err);
	if ((rc = fc_cmd_changed(cmd, rc, text, &err)))
		return rc;
	fc_duration_format(opt.ttl, dur);
	printf("%s %s%s%s\n", existed ? "re-allowed" : "allowed", text, opt.ttl ? " for " : " (no expiry)",
	       opt.ttl ? dur : "");
	return FC_EXIT_OK;
}

static int fc_allow_del(const struct fc_ctx *ctx, const struct fc_cmd *cmd, int argc, char **argv)
{
	char text[FC_BAN_TEXT_LEN];
	struct fc_err err;
	int rc;

	fc_cmd_parse(cmd, argc, argv, NULL, NULL);
	rc = fc_change_allow_del(ctx, argv[optind], text, &err);
	if ((rc = fc_cmd_changed(cmd, rc, text, &err)))
		return rc;
	printf("no longer allowed: %s\n", text);
	return FC_EXIT_OK;
}

static int fc_allow_list(const struct fc_ctx *ctx, const struct fc_cmd *cmd, int argc, char **argv)
{
	char text[FC_BAN_TEXT_LEN], expires[FC_TIME_STRLEN], left[FC_DURATION_STRLEN];
	struct fc_allow_row *rows = NULL;
	struct fc_store *st = NULL;
	int64_t now = (int64_t)time(NULL);
	struct fc_json_opt opt = { 0 };
	struct fc_err err;
	size_t n = 0, i;
	json_t *arr;
	int rc;

	fc_cmd_parse(cmd, argc, argv, &opt, NULL);
	rc = fc_store_open_read(ctx->db_path, &st, &err);
	if (rc < 0 || (rc == 0 && fc_store_allow_list(st, now, &rows, &n, &err) < 0)) {
		fc_warn("allow list: %s", err.msg);
		fc_store_close(st);
		return FC_EXIT_FAILURE;
	}
	fc_store_close(st);
	if (opt.json) {
		arr = json_array();
		for (i = 0; arr && i < n; i++)
			json_array_append_new(arr, fc_allow_to_json(&rows[i], now));
		free(rows);
		return fc_json_print(arr);
	}
	if (n)
		printf("%-44s %-6s %-20s %-10s %s\n", "ALLOW", "KIND", "EXPIRES", "REMAINING", "NOTE");
	for (i = 0; i < n; i++) {
		fc_allow_format(&rows[i], text);
		fc_time_format(rows[i].expires, expires);
		fc_duration_format(rows[i].expires - now, left);
		printf("%-44s %-6s %-20s %-10s %s\n", text,
		       !rows[i].p.family ? "uid" : fc_prefix_is_exact(&rows[i].p) ? "exact" : "prefix",
		       rows[i].expires ? expires : "never", rows[i].expires ? left : "-", rows[i].note);
	}
	free(rows);
	return FC_EXIT_OK;
}

const struct fc_cmd fc_cmd_allow_add = {
	.name = "allow add",
	.args = "ADDR[/LEN]|uid=VALUE",
	.min_args = 1,
	.max_args = 1,
	.summary = "Allow an address or prefix (at XDP/TC and in nginx) or a user id (nginx).",
	.details = "What an allow entry covers is never dropped or refused: not by a ban (by hand or\n"
		   "escalated, on the address or any prefix around it), not by a policy (exact, prefix,\n"
		   "ip=* or any nginx policy, per-key ones too), not by a --concurrency cap (it takes no\n"
		   "place), and escalation never bans it (the agent logs that it did not). Such packets\n"
		   "and requests are counted as allowed (freqctl stats). A ban on an allowed address is\n"
		   "still accepted and listed; it applies once the allow entry is deleted or lapses.\n"
		   "At XDP/TC the entry shares the lookup bans and policies use: a source no entry\n"
		   "names pays nothing for it. A TTL lasts at least its duration: it ends at the\n"
		   "whole second after, checked on each packet and request (the packet path's clock\n"
		   "lags by under three ticks). Allowing an entry again replaces its TTL and note.",
	.opts = fc_allow_add_opts,
	.store = FC_STORE_MAKES,
	.run = fc_allow_add,
};

const struct fc_cmd fc_cmd_allow_del = {
	.name = "allow del",
	.args = "ADDR[/LEN]|uid=VALUE",
	.min_args = 1,
	.max_args = 1,
	.summary = "Delete an allow entry.",
	.details = "The entry must be written as it was added (a prefix is not deleted by naming an\n"
		   "address inside it); deleting an entry that does not exist is an error (exit 1).",
	.opts = fc_opts_none,
	.store = FC_STORE_AT_OPEN,
	.run = fc_allow_del,
};

const struct fc_cmd fc_cmd_allow_list = {
	.name = "allow list",
	.min_args = 0,
	.max_args = 0,
	.summary = "List the allow entries in the store that have not expired.",
	.details = "Columns: ALLOW, KIND (exact, prefix or uid), EXPIRES (UTC, or never), REMAINING, NOTE.\n"
		   "--json prints an array of {allow, kind, family, created, expires, ttl_remaining, note}.",
	.opts = fc_opts_json,
	.run = fc_allow_list,
};
