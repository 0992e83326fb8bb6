// SPDX-License-Identifier: BSD-2-Clause
/* freqctl stats */
#include <inttypes.h>
#include <jansson.h>

#include <stdlib.h>
#include <string.h>
#include "fc_cli.h"
#include "fc_rows_json.h"
#include "fc_stats.h"

static json_t *fc_counter_json(const struct fc_counter *c)
{
	return json_pack("{s:I, s:I}", "packets", fc_json_count(c->packets), "bytes", fc_json_count(c->bytes));
}

/* A policy's counter, in its layer's unit: nginx counts requests, and no
 * bytes. Its "packets" and "bytes" stay until 0.3 for the scripts that read
 * them (doc/upgrading.md). */
static json_t *fc_policy_counter_json(const struct fc_policy_spec *p, const struct fc_counter *c)
{
	json_t *o = fc_counter_json(c);

	if (o && fc_policy_is_l7(p))
		json_object_set_new(o, "requests", json_integer(fc_json_count(c->packets)));
	return o;
}

struct fc_stats_opt {
	bool json, prometheus;
};

static const struct fc_opt fc_stats_opts[] = {
	FC_OPTION("json", 0, FC_OPT_FLAG, struct fc_stats_opt, json, .help = "print JSON instead of text"),
	FC_OPTION("prometheus", 0, FC_OPT_FLAG, struct fc_stats_opt, prometheus,
		  .help = "print the Prometheus text exposition format"),
	FC_OPT_END,
};

/* Whether a's counters of policy p are its own: its layer has published
 * this store. */
static bool fc_policy_counted(const struct fc_stats_all *a, const struct fc_policy_spec *p)
{
	return fc_policy_is_l7(p) ? a->shm_there && !a->shm_other_store : a->maps_there && !a->maps_other_store;
}

static int fc_stats_json(const struct fc_stats_all *a)
{
	const struct fc_stats *s = &a->s;
	const struct fc_policy_stats *ps = a->ps;
	char match[FC_MATCH_LEN];
	json_t *doc, *pols;
	size_t i;

	doc = json_object();
	pols = json_array();
	for (i = 0; doc && i < fc_nstat_rows; i++)
		json_object_set_new(doc, fc_stat_rows[i].key, fc_counter_json(fc_stat_at(s, i)));
	if (doc) {
		json_object_set_new(doc, "nginx_allowed", json_integer(fc_json_count(a->nginx_allowed)));
		json_object_set_new(doc, "nginx_banned",
				    json_pack("{s:I, s:I}", "uid", fc_json_count(a->nginx_banned_uid), "address",
					      fc_json_count(a->nginx_banned_addr)));
		json_object_set_new(doc, "offender_reports_lost", json_integer(fc_json_count(a->ring_lost)));
	}
	for (i = 0; pols && i < a->n; i++) {
		const struct fc_policy_spec *p = &ps[i].row->spec;
		const json_t *fp;
		json_t *o;

		fc_match_format(p, match);
		o = json_pack("{s:I, s:s, s:s, s:s, s:o, s:o, s:I, s:b}", "id", (json_int_t)p->id, "match", match,
			      "layer", fc_policy_is_l7(p) ? "nginx" : "xdp", "action", fc_action_name(p->action),
			      "passed", fc_policy_counter_json(p, &ps[i].ps.passed),
			      p->action == FC_ACTION_LOG ? "would_drop" : "dropped",
			      fc_policy_counter_json(p, &ps[i].ps.dropped), "delayed", fc_json_count(ps[i].delayed),
			      "counted", fc_policy_counted(a, p));
		if (o && fc_policy_is_keyed(p)) {
			json_object_set_new(o, "keys", json_integer(fc_json_count(ps[i].keys)));
			json_object_set_new(o, "overflowed", json_integer(fc_json_count(ps[i].overflowed)));
		}
		if (o && (fp = fc_fleet_file_policy(&a->fleet, p->id)))
			json_object_set_new(o, "fleet", fc_fleet_policy_json(fp));
		if (o && p->concurrency)
			json_object_set_new(o, "concurrency",
					    json_pack("{s:I, s:I, s:I}", "limit",
						      (json_int_t)ps[i].enforced.concurrency, "inflight",
						      fc_json_count(ps[i].inflight), "denied",
						      fc_json_count(ps[i].conc_denied)));
		json_array_append_new(pols, o);
	}
	if (doc) {
		json_object_set_new(doc, "policies", pols);
		json_object_set_new(doc, "fleet",
				    a->fleet.doc ? json_pack("{s:s, s:s, s:I}", "mode",
							     fc_fleet_str(a->fleet.doc, "mode", "?"), "reason",
							     fc_fleet_str(a->fleet.doc, "reason", ""), "rounds",
							     fc_fleet_int(a->fleet.doc, "rounds", 0)) :
						   json_null());
		json_object_set_new(doc, "ban_sources", fc_ban_sources_to_json(a));
		json_object_set_new(doc, "published",
				    json_pack("{s:b, s:b, s:b, s:b}", "pin_dir", a->maps_there, "pin_dir_other_store",
					      a->maps_other_store, "shm", a->shm_there, "shm_other_store",
					      a->shm_other_store));
	}
	return fc_json_print(doc);
}

/* What the counters below can not say of one layer: nothing published
 * there, or another store's publish. */
static void fc_stats_whence(const char *layer, const char *place, const char *path, const char *counted, bool there,
			    bool other, uint64_t id, uint64_t store_id)
{
	if (!there)
		printf("%s: nothing is published in %s %s: no %s counters\n", layer, place, path, counted);
	else if (other)
		printf("%s: %s %s holds another store's publish (store %016llx; this store is %016llx): its policy "
		       "counters are not these policies'\n",
		       layer, place, path, (unsigned long long)id, (unsigned long long)store_id);
}

/* A fleet policy's columns: the fleet's use of its limit in the current
 * window (every node's, from the heartbeats) and this node's credit. */
static void fc_stats_fleet_cols(const json_t *fp)
{
	char used[48] = "-", credit[24] = "-";

	if (fp) {
		snprintf(used, sizeof(used), "%" PRId64 "/%" PRId64, fc_fleet_int(fp, "fleet_used", 0),
			 fc_fleet_int(fp, "limit", 0));
		snprintf(credit, sizeof(credit), "%" PRId64, fc_fleet_int(fp, "credit", 0));
	}
	printf(" %23s %12s", used, credit);
}

static int fc_stats_print(const struct fc_ctx *ctx, const struct fc_stats_all *a)
{
	const struct fc_stats *s = &a->s;
	const struct fc_policy_stats *ps = a->ps;
	char match[FC_MATCH_LEN];
	const struct fc_counter *cnt;
	bool fleet;
	size_t i;

	fc_stats_whence("XDP/TC", "pin dir", ctx->pin_dir, "packet", a->maps_there, a->maps_other_store,
			a->maps_store_id, a->store_id);
	fc_stats_whence("nginx", "shm", ctx->shm_path, "request", a->shm_there, a->shm_other_store, a->shm_store_id,
			a->store_id);
	if (a->maps_there) {
		printf("%-22s %16s %18s\n", "", "PACKETS", "BYTES");
		for (i = 0; i < fc_nstat_rows; i++) {
			cnt = fc_stat_at(s, i);
			printf("%-22s %16llu %18llu\n", fc_stat_rows[i].label, (unsigned long long)cnt->packets,
			       (unsigned long long)cnt->bytes);
		}
	}
	if (a->shm_there && !a->shm_other_store) {
		printf("%-22s %16llu %18s\n", "nginx: allowed", (unsigned long long)a->nginx_allowed, "(requests)");
		printf("%-22s %16llu %18s\n", "nginx: banned uid", (unsigned long long)a->nginx_banned_uid, "(requests)");
		printf("%-22s %16llu %18s\n", "nginx: banned address", (unsigned long long)a->nginx_banned_addr,
		       "(requests)");
		printf("%-22s %16llu %18s\n", "nginx: reports lost", (unsigned long long)a->ring_lost, "(offender ring)");
	}
	printf("\n%-30s %10s %16s %18s\n", "BAN SOURCE", "BANS", "DROPPED PACKETS", "BYTES");
	for (i = 0; i < a->nsources; i++) {
		char name[FC_SET_NAME_MAX + 8];

		snprintf(name, sizeof(name), "%s%s", a->sources[i].set ? "set " : "by hand",
			 a->sources[i].set ? a->sources[i].name : "");
		printf("%-30s %10llu %16llu %18llu\n", name, (unsigned long long)a->sources[i].bans,
		       (unsigned long long)a->sources[i].dropped.packets, (unsigned long long)a->sources[i].dropped.bytes);
	}
	fleet = json_array_size(json_object_get(a->fleet.doc, "policies")) > 0;
	if (a->n)
		printf("\n%-10s %-30s %-6s %-7s %14s %14s %14s %10s %12s %12s%s\n", "POLICY", "MATCH", "LAYER", "ACTION",
		       "PASSED", "DROPPED", "WOULD-DROP", "DELAYED", "IN-FLIGHT", "BY-CAP",
		       fleet ? "                   FLEET       CREDIT" : "");
	for (i = 0; i < a->n; i++) {
		const struct fc_policy_spec *p = &ps[i].row->spec;
		char passed[24] = "-", dropped[24] = "-", delayed[24] = "-", inflight[48] = "-", bycap[24] = "-";
		bool counted = fc_policy_counted(a, p);

		fc_match_format(p, match);
		if (counted) {
			snprintf(passed, sizeof(passed), "%llu", (unsigned long long)ps[i].ps.passed.packets);
			snprintf(dropped, sizeof(dropped), "%llu", (unsigned long long)ps[i].ps.dropped.packets);
			snprintf(delayed, sizeof(delayed), "%llu", (unsigned long long)ps[i].delayed);
		}
		/* Places held now of the cap (per key for a per-key policy), and refusals by it. */
		if (counted && p->concurrency) {
			snprintf(inflight, sizeof(inflight), "%llu/%u", (unsigned long long)ps[i].inflight,
				 ps[i].enforced.concurrency);
			snprintf(bycap, sizeof(bycap), "%llu", (unsigned long long)ps[i].conc_denied);
		}
		printf("%-10u %-30s %-6s %-7s %14s %14s %14s %10s %12s %12s", p->id, match,
		       fc_policy_is_l7(p) ? "nginx" : "xdp", fc_action_name(p->action), passed,
		       p->action == FC_ACTION_LOG ? "-" : dropped, p->action == FC_ACTION_LOG ? dropped : "-", delayed,
		       inflight, bycap);
		if (fleet)
			fc_stats_fleet_cols(fc_fleet_file_policy(&a->fleet, p->id));
		putchar('\n');
	}
	return FC_EXIT_OK;
}

static int fc_cmd_stats_run(const struct fc_ctx *ctx, const struct fc_cmd *cmd, int argc, char **argv)
{
	struct fc_stats_opt opt = { 0 };
	struct fc_stats_all a;
	struct fc_err err;
	int rc;

	fc_cmd_parse(cmd, argc, argv, &opt, NULL);
	if (opt.json && opt.prometheus)
		fc_usage_error(cmd, "--json and --prometheus: choose one");
	fc_need_privileges(cmd, "it reads the pinned BPF maps");
	if (opt.prometheus) {
		if (fc_stats_write_prometheus(ctx, stdout, &err) < 0) {
			fc_warn("stats: %s", err.msg);
			return FC_EXIT_FAILURE;
		}
		return fflush(stdout) ? FC_EXIT_FAILURE : FC_EXIT_OK;
	}
	if (fc_stats_gather(ctx, &a, &err) < 0) {
		fc_warn("stats: %s", err.msg);
		return FC_EXIT_FAILURE;
	}
	/* No counter anywhere: zeros would be a state that is not true. */
	if (!a.maps_there && !a.shm_there) {
		fc_warn("stats: nothing is published in pin dir %s nor in shm %s: no counters (freqctl status says "
			"where freqctl is attached; --pin-dir and --shm name others)",
			ctx->pin_dir, ctx->shm_path);
		fc_stats_free(&a);
		return FC_EXIT_FAILURE;
	}
	rc = opt.json ? fc_stats_json(&a) : fc_stats_print(ctx, &a);
	fc_stats_free(&a);
	return rc;
}

const struct fc_cmd fc_cmd_stats = {
	.name = "stats",
	.min_args = 0,
	.max_args = 0,
	.summary = "Show passed and dropped packet counters, by ban kind, by ban source and by policy.",
	.details = "Summed over all CPUs and all interfaces attached with this pin dir. The counters live\n"
		   "in pinned per-CPU maps: they survive detach, attach and restarts of freqctl, and\n"
		   "start at zero when the pin dir is new. Ban sources are by hand (escalations too) and\n"
		   "each ban set: an address held by several counts under the first (by hand, then the\n"
		   "set made first). Policies in nginx with --concurrency show the requests in flight now\n"
		   "of their cap (IN-FLIGHT; every key's for a per-key policy) and the refusals by the cap\n"
		   "(BY-CAP, also counted as dropped). nginx counts the requests an allow entry let through\n"
		   "and those a ban refused, a uid ban apart from an address ban. --prometheus adds the\n"
		   "freqctl_bans gauge (live bans in the store, by kind: address, uid; reason: by_hand,\n"
		   "escalated, set), freqctl_ban_dropped_packets_total and _bytes_total by source (by_hand,\n"
		   "or set with its name) and freqctl_nginx_banned_total by kind (uid, address).",
	.opts = fc_stats_opts,
	.store = FC_STORE_AT_OPEN,
	.run = fc_cmd_stats_run,
};
