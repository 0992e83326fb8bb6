// SPDX-License-Identifier: BSD-2-Clause
/* freqctl policy add | set | del | list */
#include <stdlib.h>
#include <string.h>
#include <jansson.h>

#include "fc_cli.h"
#include "fc_duration.h"
#include "fc_change.h"

/* The semantics live in freqctl-policy(7) alone; --help says where. */
static const char fc_policy_details[] =
	"A policy whose match has only ip= runs at XDP/TC, on packets; any other dimension, or\n"
	"--layer http, makes it an nginx policy, on requests. What each option means, and exactly\n"
	"what each algorithm admits, with examples: freqctl-policy(7) (from a build tree:\n"
	"man -l build/man/freqctl-policy.7).";

/* Parses policy add/set's options and ID; exits 2 on bad input, naming the
 * policy by the ID given (which may come after the options). */
static void fc_policy_args(const struct fc_cmd *cmd, int argc, char **argv, struct fc_policy_spec *p)
{
	struct fc_err err, first;
	int a;

	memset(p, 0, sizeof(*p));
	a = fc_cmd_parse(cmd, argc, argv, p, &first);
	if (fc_policy_id_parse(argv[a], &p->id, &err) < 0)
		fc_usage_error(cmd, "%s", err.msg);
	if (first.msg[0])
		err = first;
	else if (fc_policy_validate(p, &err) == 0)
		return;
	/* As users expect it: "freqctl: policy 7: rate ...". */
	fprintf(stderr, "freqctl: policy %u: %s\nTry 'freqctl %s --help'.\n", p->id, err.msg, cmd->name);
	exit(FC_EXIT_USAGE);
}

/* Every tier's GCRA burst, as it applies: "20,1000". */
static void fc_bursts_format(const struct fc_policy_spec *p, char *buf, size_t len)
{
	size_t off = 0;
	int i;

	buf[0] = '\0';
	for (i = 0; i < p->ntiers && off < len; i++)
		off += (size_t)snprintf(buf + off, len - off, "%s%llu", i ? "," : "",
					(unsigned long long)fc_tier_burst(p, i));
}

static void fc_policy_describe(const struct fc_policy_spec *p, char *buf, size_t len)
{
	char match[FC_MATCH_LEN], rates[FC_TEXT_LEN], bursts[FC_TEXT_LEN];

	fc_match_format(p, match);
	fc_rates_format(p, rates);
	fc_bursts_format(p, bursts, sizeof(bursts));
	/* A cap alone: no rate, no algorithm to speak of. */
	if (p->ntiers)
		snprintf(buf, len, "%s %s (%s", match, rates, fc_algo_name(p->algo));
	else
		snprintf(buf, len, "%s (no rate", match);
	if (p->algo == FC_ALGO_GCRA && p->ntiers)
		snprintf(buf + strlen(buf), len - strlen(buf), ", burst %s", bursts);
	if (p->concurrency)
		snprintf(buf + strlen(buf), len - strlen(buf), ", at most %u in flight", p->concurrency);
	if (p->action == FC_ACTION_DELAY)
		snprintf(buf + strlen(buf), len - strlen(buf), ", delay up to %u", p->delay_burst);
	else
		snprintf(buf + strlen(buf), len - strlen(buf), ", %s", fc_action_name(p->action));
	if (p->warmup) {
		char d[FC_DURATION_STRLEN];

		fc_duration_format(p->warmup, d);
		snprintf(buf + strlen(buf), len - strlen(buf), ", warm-up %s", d);
	}
	if (p->override)
		snprintf(buf + strlen(buf), len - strlen(buf), ", overrides what is more general");
	snprintf(buf + strlen(buf), len - strlen(buf), ", %s",
		 fc_policy_is_l7(p) ? "requests in nginx" : fc_count_name(p->count));
	if (p->kind == FC_MATCH_STAR) {
		char unit[FC_STAR_UNIT_STRLEN];

		fc_star_unit_format(p, unit);
		snprintf(buf + strlen(buf), len - strlen(buf), ", a bucket per %s", unit);
	}
	snprintf(buf + strlen(buf), len - strlen(buf), ")");
}

static int fc_policy_put(const struct fc_ctx *ctx, const struct fc_cmd *cmd, int argc, char **argv, bool replace)
{
	char desc[FC_MATCH_LEN + 2 * FC_TEXT_LEN + FC_STAR_UNIT_STRLEN + 64];
	struct fc_policy_spec p;
	struct fc_policy_row row;
	struct fc_err err;
	bool found;

	fc_policy_args(cmd, argc, argv, &p);
	if (fc_change_policy_put(ctx, &p, replace, &found, &row, &err)) {
		fc_warn("policy %u: %s", p.id, err.msg);
		return FC_EXIT_FAILURE;
	}
	fc_policy_describe(&p, desc, sizeof(desc));
	printf("policy %u %s: %s\n", p.id, found ? "replaced" : "added", desc);
	return FC_EXIT_OK;
}

static int fc_policy_add(const struct fc_ctx *ctx, const struct fc_cmd *cmd, int argc, char **argv)
{
	return fc_policy_put(ctx, cmd, argc, argv, false);
}

static int fc_policy_set(const struct fc_ctx *ctx, const struct fc_cmd *cmd, int argc, char **argv)
{
	return fc_policy_put(ctx, cmd, argc, argv, true);
}

static int fc_policy_del(const struct fc_ctx *ctx, const struct fc_cmd *cmd, int argc, char **argv)
{
	struct fc_err err;
	uint32_t id;

	fc_cmd_parse(cmd, argc, argv, NULL, NULL);
	if (fc_policy_id_parse(argv[optind], &id, &err) < 0)
		fc_usage_error(cmd, "%s", err.msg);
	if (fc_change_policy_del(ctx, id, &err)) {
		fc_warn("policy %u: %s", id, err.msg);
		return FC_EXIT_FAILURE;
	}
	printf("policy %u deleted\n", id);
	return FC_EXIT_OK;
}

static json_t *fc_policy_json(const struct fc_policy_row *r)
{
	const struct fc_policy_spec *p = &r->spec;
	char match[FC_MATCH_LEN], created[FC_TIME_STRLEN], updated[FC_TIME_STRLEN];
	json_t *rates = json_array(), *bursts = p->algo == FC_ALGO_GCRA && p->ntiers ? json_array() : json_null();
	int i;

	fc_match_format(p, match);
	for (i = 0; rates && i < p->ntiers; i++) {
		char one[FC_RATE_STRLEN];

		fc_rate_format(&p->rate[i], one);
		json_array_append_new(rates, json_string(one));
		if (json_is_array(bursts))
			json_array_append_new(bursts, json_integer((json_int_t)fc_tier_burst(p, i)));
	}
	fc_time_format(r->created, created);
	fc_time_format(r->updated, updated);
	/* burst: the first tier's (as --burst); bursts: every tier's; unit:
	 * ip=*'s prefix lengths, the defaults too. */
	return json_pack("{s:I, s:s, s:o, s:o, s:o, s:s, s:s, s:s, s:o, s:o, s:o, s:o, s:b, s:s, s:s}", "id",
			 (json_int_t)p->id,
			 "match", match, "rates", rates, "burst",
			 p->algo == FC_ALGO_GCRA && p->ntiers ? json_integer((json_int_t)fc_tier_burst(p, 0)) : json_null(),
			 "bursts",
			 bursts,
			 "algo", fc_algo_name(p->algo), "action", fc_action_name(p->action), "count",
			 fc_policy_is_l7(p) ? "requests" : fc_count_name(p->count), "new_sources",
			 p->kind == FC_MATCH_STAR ?
				 json_integer((json_int_t)(p->new_sources ? p->new_sources : FC_NEW_SOURCES_DEFAULT)) :
				 json_null(),
			 "unit",
			 p->kind == FC_MATCH_STAR ?
				 json_pack("{s:i, s:i}", "ipv4", fc_star_len4(p), "ipv6", fc_star_len6(p)) :
				 json_null(),
			 "warmup", p->warmup ? json_integer(p->warmup) : json_null(), "concurrency",
			 p->concurrency ? json_integer(p->concurrency) : json_null(), "override", p->override, "created",
			 created, "updated",
			 updated);
}

/* The match as the list shows it: an ip=* policy's unit spelled out after
 * its star, the defaults too (/32/64, which plain ip=* means). */
static void fc_match_shown(const struct fc_policy_spec *p, char buf[FC_MATCH_LEN])
{
	struct fc_policy_spec q = *p;

	q.star_len4 = fc_star_len4(p);
	q.star_len6 = fc_star_len6(p);
	fc_match_format(&q, buf);
}

static int fc_policy_list(const struct fc_ctx *ctx, const struct fc_cmd *cmd, int argc, char **argv)
{
	char match[FC_MATCH_LEN], rates[FC_TEXT_LEN], bursts[FC_TEXT_LEN], warmup[FC_DURATION_STRLEN];
	struct fc_policy_row *rows = NULL;
	struct fc_store *st = NULL;
	struct fc_json_opt opt = { 0 };
	struct fc_err err;
	json_t *arr;
	size_t n, i;

	fc_cmd_parse(cmd, argc, argv, &opt, NULL);
	if (fc_store_open(ctx->db_path, &st, &err) < 0 || fc_store_policy_list(st, &rows, &n, &err) < 0) {
		fc_warn("policy list: %s", err.msg);
		fc_store_close(st);
		return FC_EXIT_FAILURE;
	}
	fc_store_close(st);
	if (opt.json) {
		arr = json_array();
		for (i = 0; arr && i < n; i++)
			json_array_append_new(arr, fc_policy_json(&rows[i]));
		free(rows);
		return fc_json_print(arr);
	}
	if (n)
		printf("%-10s %-30s %-24s %-8s %-7s %-7s %-8s %-8s %-7s %s\n", "ID", "MATCH", "RATES", "BURST", "ALGO",
		       "ACTION", "COUNT", "OVERRIDE", "WARMUP", "CONCURRENCY");
	for (i = 0; i < n; i++) {
		const struct fc_policy_spec *p = &rows[i].spec;
		char conc[16] = "-";

		fc_match_shown(p, match);
		fc_rates_format(p, rates);
		fc_bursts_format(p, bursts, sizeof(bursts));
		if (p->warmup)
			fc_duration_format(p->warmup, warmup);
		if (p->concurrency)
			snprintf(conc, sizeof(conc), "%u", p->concurrency);
		printf("%-10u %-30s %-24s %-8s %-7s %-7s %-8s %-8s %-7s %s\n", p->id, match, p->ntiers ? rates : "-",
		       p->algo == FC_ALGO_GCRA && p->ntiers ? bursts : "-", fc_algo_name(p->algo),
		       fc_action_name(p->action), fc_policy_is_l7(p) ? "requests" : fc_count_name(p->count),
		       p->override ? "yes" : "-", p->warmup ? warmup : "-", conc);
	}
	free(rows);
	return FC_EXIT_OK;
}

const struct fc_cmd fc_cmd_policy_add = {
	.name = "policy add",
	.args = "ID",
	.min_args = 1,
	.max_args = 1,
	.summary = "Add a rate-limit policy (XDP/TC for ip= alone, nginx otherwise); refuses an existing ID.",
	.details = fc_policy_details,
	.opts = fc_policy_opts,
	.run = fc_policy_add,
};

const struct fc_cmd fc_cmd_policy_set = {
	.name = "policy set",
	.args = "ID",
	.min_args = 1,
	.max_args = 1,
	.summary = "Create or replace a policy (same options as 'policy add').",
	.details = fc_policy_details,
	.opts = fc_policy_opts,
	.run = fc_policy_set,
};

const struct fc_cmd fc_cmd_policy_del = {
	.name = "policy del",
	.args = "ID",
	.min_args = 1,
	.max_args = 1,
	.summary = "Delete a policy; refuses an ID that does not exist. Holds from the next packet or request.",
	.opts = fc_opts_none,
	.run = fc_policy_del,
};

const struct fc_cmd fc_cmd_policy_list = {
	.name = "policy list",
	.min_args = 0,
	.max_args = 0,
	.summary = "List the policies in the store.",
	.opts = fc_opts_json,
	.run = fc_policy_list,
};
