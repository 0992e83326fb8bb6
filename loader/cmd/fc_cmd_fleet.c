// SPDX-License-Identifier: BSD-2-Clause
/* freqctl fleet status: what this node's agent says of the fleet, from its
 * status file (<shm>.fleet.json); never a connection to Redis. */
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>

#include "fc_cli.h"
#include "fc_fleet_file.h"

/* "fleet: off" and "no agent", as text or as the JSON a script reads. */
static int fc_fleet_absent(bool json, const char *mode, const char *reason, int rc)
{
	if (json)
		fc_json_print(json_pack("{s:s, s:s}", "mode", mode, "reason", reason));
	else
		printf("fleet: %s (%s)\n", mode, reason);
	return rc;
}

static void fc_fleet_print_redis(const json_t *doc)
{
	const json_t *r = json_object_get(doc, "redis"), *p;
	const json_t *pr = json_object_get(r, "primaries");
	size_t i;

	if (!json_is_object(r))
		return;
	printf("redis: %s, %zu primar%s, WAIT for %" PRId64 " replica(s)\n", fc_fleet_str(r, "mode", "?"),
	       json_array_size(pr), json_array_size(pr) == 1 ? "y" : "ies", fc_fleet_int(r, "wait", 0));
	json_array_foreach(pr, i, p)
		printf("  %-21s %5" PRId64 " slots  %" PRId64 " replica(s)  %s\n", fc_fleet_str(p, "addr", "?"),
		       fc_fleet_int(p, "slots", 0), fc_fleet_int(p, "replicas", 0), fc_fleet_str(p, "state", "?"));
}

static void fc_fleet_print_nodes(const json_t *doc)
{
	const json_t *nodes = json_object_get(doc, "nodes"), *n;
	size_t i;

	if (!json_array_size(nodes))
		return;
	printf("\n%-24s %4s %8s %-6s %-10s %s\n", "NODE", "NO", "WEIGHT", "IN SET", "MODE", "HEARD");
	json_array_foreach(nodes, i, n)
		printf("%-24.64s %4" PRId64 " %8g %-6s %-10.32s %.1f s ago\n", fc_fleet_str(n, "name", "?"),
		       fc_fleet_int(n, "no", 0), fc_fleet_num(n, "weight", 0),
		       json_is_true(json_object_get(n, "in_set")) ? "yes" : "no", fc_fleet_str(n, "mode", "?"),
		       (double)fc_fleet_int(n, "age_ms", 0) / 1000);
	/* IN SET no says nothing of why: a node set changes only at a window's
	 * start, which for a /d policy can be most of a day away. */
	json_array_foreach(nodes, i, n) {
		if (json_is_true(json_object_get(n, "in_set")))
			continue;
		if (json_is_string(json_object_get(n, "joins")))
			printf("%.64s holds no share of the current windows: it joins the split from the window starting "
			       "%.40s; until then it takes only what others grant\n",
			       fc_fleet_str(n, "name", "?"), fc_fleet_str(n, "joins", "?"));
		else
			printf("%.64s is not in the node set: it holds no share, it takes only what others grant "
			       "(freqctl node set, agent --weight)\n",
			       fc_fleet_str(n, "name", "?"));
	}
}

static void fc_fleet_print_policies(const json_t *doc)
{
	const json_t *pols = json_object_get(doc, "policies"), *p;
	char limit[48];
	size_t i;

	if (!json_array_size(pols))
		return;
	printf("\n%6s %-8s %-12s %12s %12s %12s %8s %9s %5s %8s %8s %8s\n", "ID", "ALGO", "LIMIT", "FLEET USED",
	       "NODE USED", "CREDIT", "TRACKED", "DEMANDING", "DONE", "GRANTS", "RELEASES", "DONATED");
	json_array_foreach(pols, i, p) {
		snprintf(limit, sizeof(limit), "%" PRId64 "/%.8s", fc_fleet_int(p, "limit", 0),
			 fc_fleet_str(p, "unit", "?"));
		printf("%6" PRId64 " %-8.8s %-12s %12" PRId64 " %12" PRId64 " %12" PRId64 " %8" PRId64 " %9" PRId64
		       " %5" PRId64 " %8" PRId64 " %8" PRId64 " %8" PRId64 "\n",
		       fc_fleet_int(p, "id", 0), fc_fleet_str(p, "algo", "?"), limit, fc_fleet_int(p, "fleet_used", 0),
		       fc_fleet_int(p, "node_used", 0), fc_fleet_int(p, "credit", 0), fc_fleet_int(p, "tracked", 0),
		       fc_fleet_int(p, "demanding", 0), fc_fleet_int(p, "done", 0), fc_fleet_int(p, "grants", 0),
		       fc_fleet_int(p, "releases", 0), fc_fleet_int(p, "donated", 0));
	}
}

static void fc_fleet_print(const struct fc_fleet_file *f)
{
	const json_t *doc = f->doc, *lat = json_object_get(doc, "latency_ms"), *clk = json_object_get(doc, "clock");
	const json_t *cnt = json_object_get(doc, "counters"), *v;
	const char *reason = fc_fleet_str(doc, "reason", ""), *mode = fc_fleet_str(doc, "mode", "?"), *key;
	bool first = true;

	printf("fleet: %s%s%s%s%s since %s (node %s, no %" PRId64 ")\n", mode, strcmp(mode, "fleet") ? "" : " mode",
	       *reason ? " (" : "", reason, *reason ? ")" : "", fc_fleet_str(doc, "since", "?"),
	       fc_fleet_str(doc, "node", "?"), fc_fleet_int(doc, "node_no", 0));
	fc_fleet_print_redis(doc);
	printf("last sync: %s, round %" PRId64 " (every %" PRId64 " ms); latency %.2f ms, p50 %.2f ms, p99 %.2f ms\n",
	       fc_fleet_str(doc, "last_sync", "never"), fc_fleet_int(doc, "rounds", 0),
	       fc_fleet_int(doc, "interval_ms", 0), fc_fleet_num(lat, "last", 0), fc_fleet_num(lat, "p50", 0),
	       fc_fleet_num(lat, "p99", 0));
	if (json_is_object(clk))
		printf("clock: %+.1f ms from Redis (max skew %" PRId64 " ms%s)\n", fc_fleet_num(clk, "offset_ms", 0),
		       fc_fleet_int(clk, "max_skew_ms", 0),
		       fc_fleet_int(clk, "test_offset_ms", 0) ? ", a test offset" : "");
	fc_fleet_print_nodes(doc);
	fc_fleet_print_policies(doc);
	json_object_foreach((json_t *)cnt, key, v) {
		if (!json_is_integer(v))
			continue;
		printf("%s%s %" JSON_INTEGER_FORMAT, first ? "\ncounters: " : ", ", key, json_integer_value(v));
		first = false;
	}
	if (!first)
		putchar('\n');
}

static int fc_fleet_status_run(const struct fc_ctx *ctx, const struct fc_cmd *cmd, int argc, char **argv)
{
	struct fc_json_opt opt = { 0 };
	struct fc_fleet_file f;
	struct fc_err err;
	char why[PATH_MAX + 64];
	int rc;

	fc_cmd_parse(cmd, argc, argv, &opt, NULL);
	rc = fc_fleet_file_read(ctx->shm_path, &f, &err);
	if (rc < 0) {
		fc_warn("fleet status: %s", err.msg);
		return FC_EXIT_FAILURE;
	}
	if (rc == 1 && !ctx->redis)
		return fc_fleet_absent(opt.json, "off", "no --redis", FC_EXIT_OK);
	if (rc == 1) {
		snprintf(why, sizeof(why), "no %s: is 'freqctl agent' running with --redis?", f.path);
		return fc_fleet_absent(opt.json, "no agent", why, FC_EXIT_FAILURE);
	}
	if (f.stale) {
		snprintf(why, sizeof(why), "%s was last written %.1f s ago", f.path, (double)f.age_ms / 1000);
		fc_fleet_file_free(&f);
		return fc_fleet_absent(opt.json, "no agent", why, FC_EXIT_FAILURE);
	}
	if (opt.json) {
		json_object_set_new(f.doc, "status_age_ms", json_integer(f.age_ms));
		return fc_json_print(f.doc);
	}
	fc_fleet_print(&f);
	fc_fleet_file_free(&f);
	return FC_EXIT_OK;
}

const struct fc_cmd fc_cmd_fleet_status = {
	.name = "fleet status",
	.min_args = 0,
	.max_args = 0,
	.summary = "Show this node's view of the fleet: Redis, the nodes, this node's leases.",
	.details = "Read from the status file the agent writes after each sync round (SHM.fleet.json);\n"
		   "no connection to Redis is made. \"fleet: off (no --redis)\" when no Redis is\n"
		   "configured; \"no agent\" (exit 1) when no agent has written the file for 10 rounds\n"
		   "and 5 s. The mode is fleet, degraded (with the reason) or off.",
	.opts = fc_opts_json,
	.run = fc_fleet_status_run,
};
