// SPDX-License-Identifier: BSD-2-Clause
/* freqctl keys ID: a per-key policy's buckets in nginx, busiest first. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <jansson.h>

#include "fc_cli.h"
#include "fc_duration.h"
#include "fc_rows_json.h"
#include "fc_shm_state.h"
#include "fc_stats.h"
#include "fc_store.h"

struct fc_keys_opt {
	uint64_t rows;
	bool json;
};

static const struct fc_opt fc_keys_opts[] = {
	FC_OPTION("rows", 'n', FC_OPT_UINT, struct fc_keys_opt, rows, .min = 1, .max = FC_SHM_KEYS_MAX, .arg = "N",
		  .help = "the N busiest keys (default 20)"),
	FC_OPTION("json", 0, FC_OPT_FLAG, struct fc_keys_opt, json, .help = "print them as a JSON array"),
	FC_OPT_END,
};

/* v as text, or what when it is UINT64_MAX. */
static const char *fc_keys_num(uint64_t v, const char *what, char buf[24])
{
	if (v == UINT64_MAX)
		return what;
	snprintf(buf, 24, "%llu", (unsigned long long)v);
	return buf;
}

/* The value table, if the policy keeps values (NULL: it keeps none, or
 * nginx has no state file yet, or no memory: hashes alone are shown). */
static struct fc_shm_val *fc_keys_vals(const struct fc_ctx *ctx, const struct fc_enforced *e)
{
	struct fc_shm_val *vals;
	struct fc_err err;
	int fd;

	if (!e->show_keys || (fd = fc_state_open(ctx->shm_path, &err)) < 0)
		return NULL;
	vals = malloc(FC_SHM_VALS * sizeof(*vals));
	if (vals)
		fc_state_vals(fd, vals);
	close(fd);
	return vals;
}

static int fc_keys_run(const struct fc_ctx *ctx, const struct fc_cmd *cmd, int argc, char **argv)
{
	struct fc_keys_opt opt = { .rows = 20 };
	struct fc_store *st = NULL;
	struct fc_keys_top top;
	struct fc_shm_val *vals;
	char value[FC_KEY_VALUE_LEN];
	struct fc_policy_row row;
	struct fc_node_ctx node;
	struct fc_enforced enf;
	struct fc_err err;
	struct fc_key_view v;
	struct fc_fleet_file ff = { .doc = NULL };
	const json_t *sp = NULL;
	uint64_t now;
	json_t *arr = NULL;
	size_t i;
	uint32_t id;
	bool found = false, has, cut;
	int rc;

	fc_cmd_parse(cmd, argc, argv, &opt, NULL);
	if (fc_policy_id_parse(argv[optind], &id, &err) < 0)
		fc_usage_error(cmd, "%s", err.msg);
	rc = fc_store_open_read(ctx->db_path, &st, &err);
	if (rc == 1)
		fc_err_set(&err, "no store at %s: no such file ('freqctl status' says where the path is from)",
			   ctx->db_path);
	if (rc || fc_store_policy_get(st, id, &row, &found, &err) < 0 || fc_node_read(st, ctx->node, &node, &err) < 0)
		goto fail;
	fc_store_close(st);
	st = NULL;
	if (!found) {
		fc_warn("keys: policy %u: no such policy", id);
		return FC_EXIT_FAILURE;
	}
	if (!fc_policy_is_keyed(&row.spec)) {
		if (row.spec.kind == FC_MATCH_STAR) { /* at XDP/TC: buckets per source unit, in the kernel */
			char unit[FC_STAR_UNIT_STRLEN];

			fc_star_unit_format(&row.spec, unit);
			fc_warn("keys: policy %u: its buckets are one per %s, at XDP/TC, not in nginx's key table: "
				"'freqctl top' ranks its busiest sources", id, unit);
		} else {
			fc_warn("keys: policy %u: one bucket for all it matches, no keys (a per-key policy has a DIM=* in "
				"its match, or ip=* with --layer http)", id);
		}
		return FC_EXIT_FAILURE;
	}
	/* The busiest opt.rows alone are kept, whatever the table holds. */
	now = fc_utc_ns();
	if (fc_state_keys_top(ctx->shm_path, ctx->shm_keys, row.slot, row.epoch, now, opt.rows, &top, &err) < 0)
		goto fail;
	/* Its limits as nginx enforces them here: this node's share. */
	fc_policy_enforced(&row, &node, NULL, &enf);
	vals = fc_keys_vals(ctx, &enf);
	/* A fleet policy its agent reports: its keys' credit and demand. */
	if (fc_fleet_file_read(ctx->shm_path, &ff, &err) == 0 && !ff.stale)
		sp = fc_fleet_file_policy(&ff, id);
	if (opt.json)
		arr = json_array();
	else
		printf("policy %u: %llu keys, %llu live (%s)\n%-18s %10s %10s %10s %10s %10s %10s %s %s\n", id,
		       (unsigned long long)top.total, (unsigned long long)top.live,
		       enf.show_keys ?
			       "with the values of the busiest and most refused, --show-keys" :
			       "keyed hashes: --show-keys keeps the busiest keys' values, $freqctl_key logs them",
		       "KEY", "PASSED", "DENIED", "REMAINING", "NEXT-S", "IDLE-IN-S", "IN-FLIGHT",
		       sp ? "    CREDIT DEMAND" : "", "VALUE");
	for (i = 0; i < top.n; i++) {
		const struct fc_shm_key *e = &top.v[i];
		char tag[24], nb[2][24], fl[32] = "";
		struct fc_key_fleet f;
		json_t *o;

		fc_key_view(&row, &enf, e, now, &v);
		has = fc_key_value(&row, &enf, vals, e->tag, value, &cut);
		snprintf(tag, sizeof(tag), "%016llx", (unsigned long long)e->tag);
		if (sp) {
			/* What it can admit now is its credit; when a grant comes, no one can say. */
			fc_key_fleet_view(sp, e, &f);
			v.remaining = f.credit;
			v.retry_ns = 0;
			snprintf(fl, sizeof(fl), "%10llu %-6s", (unsigned long long)f.credit, f.demand ? "yes" : "no");
		}
		if (arr) {
			o = json_pack("{s:s, s:I, s:I, s:I, s:f, s:I, s:b, s:o, s:o}", "key", tag, "passed",
				      (json_int_t)e->passed, "denied", (json_int_t)e->denied, "remaining",
				      fc_json_count(v.remaining), "next_s", (double)v.retry_ns / FC_NS_PER_SEC, "idle_in_s",
				      fc_json_count(v.idle_s), "held", v.held, "inflight",
				      v.capped ? json_integer(fc_json_count(v.inflight)) : json_null(), "value",
				      fc_key_value_to_json(has, value, cut));
			if (o && sp)
				json_object_set_new(o, "fleet",
						    json_pack("{s:I, s:b, s:b}", "credit", fc_json_count(f.credit),
							      "current", f.current, "demand", f.demand));
			json_array_append_new(arr, o);
		} else
			printf("%-18s %10u %10u %10llu %10.1f %10s %10s %s %s%s%s%s\n", tag, e->passed, e->denied,
			       (unsigned long long)v.remaining, (double)v.retry_ns / FC_NS_PER_SEC,
			       fc_keys_num(v.held ? UINT64_MAX : v.idle_s, "held", nb[0]),
			       fc_keys_num(v.capped ? v.inflight : UINT64_MAX, "-", nb[1]), fl,
			       has ? "\"" : "-", value, has ? "\"" : "", cut ? "..." : "");
	}
	fc_fleet_file_free(&ff);
	free(top.v);
	free(vals);
	return arr ? fc_json_print(arr) : FC_EXIT_OK;
fail:
	fc_store_close(st);
	fc_warn("keys: %s", err.msg);
	return FC_EXIT_FAILURE;
}

const struct fc_cmd fc_cmd_keys = {
	.name = "keys",
	.args = "ID",
	.min_args = 1,
	.max_args = 1,
	.summary = "List a per-key policy's keys in nginx, busiest first.",
	.details = "For each key: requests passed and denied, what its first rate has left now, the seconds\n"
		   "until the next request could pass, and until its bucket is empty (then its entry may be\n"
		   "taken back; \"held\" while requests of it are in flight under --concurrency), and its\n"
		   "requests in flight (IN-FLIGHT, for a policy with --concurrency). The key table keeps a\n"
		   "keyed hash of each key (KEY). A policy with --show-keys keeps the values of its busiest\n"
		   "and most refused keys too (VALUE, in quotes, at most 64 bytes: \"...\" after a longer\n"
		   "one cut; '-' where none is kept): as nginx's workers wrote them, escaped (\\\" and\n"
		   "\\\\, \\xNN for a control byte or one that is not UTF-8). nginx's $freqctl_key names\n"
		   "the deciding key in the access log.",
	.opts = fc_keys_opts,
	.store = FC_STORE_AT_OPEN,
	.run = fc_keys_run,
};
