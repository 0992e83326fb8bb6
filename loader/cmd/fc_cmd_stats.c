// SPDX-License-Identifier: BSD-2-Clause
/* freqctl stats */
#include <jansson.h>

#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/mman.h>

#include "fc_shm_write.h"
#include "fc_stats.h"

/* The counters of struct fc_stats, in display order. */
static const struct {
	const char *key;
	const char *label;
	size_t off;
} fc_stat_rows[] = {
	{ "passed", "passed", offsetof(struct fc_stats, passed) },
	{ "dropped_exact", "dropped: exact ban", offsetof(struct fc_stats, drop_exact) },
	{ "dropped_prefix", "dropped: prefix ban", offsetof(struct fc_stats, drop_prefix) },
	{ "dropped_limit", "dropped: rate limit", offsetof(struct fc_stats, drop_limit) },
	{ "source_overflow", "ip=* overflow bucket", offsetof(struct fc_stats, src_overflow) },
	{ "passed_non_ip", "passed: not IP", offsetof(struct fc_stats, non_ip) },
	{ "passed_malformed", "passed: malformed", offsetof(struct fc_stats, malformed) },
};

#define FC_NSTAT_ROWS (sizeof(fc_stat_rows) / sizeof(fc_stat_rows[0]))

static const struct fc_counter *fc_stat_at(const struct fc_stats *s, size_t row)
{
	return (const struct fc_counter *)((const char *)s + fc_stat_rows[row].off);
}

static json_t *fc_counter_json(const struct fc_counter *c)
{
	return json_pack("{s:I, s:I}", "packets", (json_int_t)c->packets, "bytes", (json_int_t)c->bytes);
}

enum fc_stats_format { FC_STATS_TEXT, FC_STATS_JSON, FC_STATS_PROMETHEUS };

static const struct fc_opt fc_stats_opts[] = {
	{ "json", FC_OPT_JSON, no_argument, NULL, "print JSON instead of text" },
	{ "prometheus", FC_OPT_PROMETHEUS, no_argument, NULL, "print the Prometheus text exposition format" },
	{ 0 },
};

/* The same numbers for Prometheus: one family per counter kind, labelled. */
static void fc_stats_prometheus(FILE *f, const struct fc_stats *s, const struct fc_policy_stats *ps, size_t n)
{
	char match[FC_MATCH_LEN], esc[2 * FC_MATCH_LEN];
	const struct fc_counter *cnt;
	size_t i, j, k;

	fputs("# HELP freqctl_packets_total Packets seen by freqctl's XDP/TC programs, by verdict.\n"
	      "# TYPE freqctl_packets_total counter\n",
	      f);
	for (i = 0; i < FC_NSTAT_ROWS; i++)
		if (fc_stat_rows[i].off != offsetof(struct fc_stats, src_overflow))
			fprintf(f, "freqctl_packets_total{verdict=\"%s\"} %llu\n", fc_stat_rows[i].key,
			       (unsigned long long)fc_stat_at(s, i)->packets);
	fputs("# HELP freqctl_bytes_total Bytes seen by freqctl's XDP/TC programs, by verdict.\n"
	      "# TYPE freqctl_bytes_total counter\n",
	      f);
	for (i = 0; i < FC_NSTAT_ROWS; i++)
		if (fc_stat_rows[i].off != offsetof(struct fc_stats, src_overflow))
			fprintf(f, "freqctl_bytes_total{verdict=\"%s\"} %llu\n", fc_stat_rows[i].key,
			       (unsigned long long)fc_stat_at(s, i)->bytes);
	/* Not a verdict: these packets also passed or were dropped. */
	fprintf(f, "# HELP freqctl_source_overflow_packets_total Packets of new ip=* sources past the cap, charged to "
	       "the shared overflow bucket.\n# TYPE freqctl_source_overflow_packets_total counter\n"
	       "freqctl_source_overflow_packets_total %llu\n",
	       (unsigned long long)s->src_overflow.packets);
	fputs("# HELP freqctl_policy_total Packets (layer xdp) or requests (layer nginx) per policy and outcome.\n"
	      "# TYPE freqctl_policy_total counter\n",
	      f);
	for (i = 0; i < n; i++) {
		const struct fc_policy_spec *p = &ps[i].row->spec;
		const char *layer = fc_policy_is_l7(p) ? "nginx" : "xdp";

		fc_match_format(p, match);
		for (j = 0, k = 0; match[j] && k + 2 < sizeof(esc); j++) { /* label value escaping */
			if (match[j] == '"' || match[j] == '\\')
				esc[k++] = '\\';
			esc[k++] = match[j];
		}
		esc[k] = '\0';
		cnt = &ps[i].ps.passed;
		fprintf(f, "freqctl_policy_total{policy=\"%u\",match=\"%s\",layer=\"%s\",outcome=\"passed\"} %llu\n", p->id,
		       esc, layer, (unsigned long long)cnt->packets);
		fprintf(f, "freqctl_policy_total{policy=\"%u\",match=\"%s\",layer=\"%s\",outcome=\"%s\"} %llu\n", p->id, esc,
		       layer, p->action == FC_ACTION_LOG ? "would_drop" : "dropped",
		       (unsigned long long)ps[i].ps.dropped.packets);
		if (p->action == FC_ACTION_DELAY)
			fprintf(f, "freqctl_policy_total{policy=\"%u\",match=\"%s\",layer=\"%s\",outcome=\"delayed\"} "
			       "%llu\n",
			       p->id, esc, layer, (unsigned long long)ps[i].delayed);
	}
}

static int fc_stats_print(const struct fc_stats *s, const struct fc_policy_stats *ps, size_t n,
			  enum fc_stats_format fmt)
{
	bool json = fmt == FC_STATS_JSON;
	char match[FC_MATCH_LEN];
	const struct fc_counter *cnt;
	json_t *doc, *pols;
	size_t i;

	if (json) {
		doc = json_object();
		pols = json_array();
		for (i = 0; doc && i < FC_NSTAT_ROWS; i++)
			json_object_set_new(doc, fc_stat_rows[i].key, fc_counter_json(fc_stat_at(s, i)));
		for (i = 0; pols && i < n; i++) {
			const struct fc_policy_spec *p = &ps[i].row->spec;

			fc_match_format(p, match);
			json_array_append_new(
				pols, json_pack("{s:I, s:s, s:s, s:s, s:o, s:o, s:I}", "id", (json_int_t)p->id, "match",
						match, "layer", fc_policy_is_l7(p) ? "nginx" : "xdp", "action",
						fc_action_name(p->action), "passed", fc_counter_json(&ps[i].ps.passed),
						p->action == FC_ACTION_LOG ? "would_drop" : "dropped",
						fc_counter_json(&ps[i].ps.dropped), "delayed", (json_int_t)ps[i].delayed));
		}
		if (doc)
			json_object_set_new(doc, "policies", pols);
		return fc_json_print(doc);
	}
	printf("%-22s %16s %18s\n", "", "PACKETS", "BYTES");
	for (i = 0; i < FC_NSTAT_ROWS; i++) {
		cnt = fc_stat_at(s, i);
		printf("%-22s %16llu %18llu\n", fc_stat_rows[i].label, (unsigned long long)cnt->packets,
		       (unsigned long long)cnt->bytes);
	}
	if (n)
		printf("\n%-10s %-30s %-6s %-7s %14s %14s %14s %10s\n", "POLICY", "MATCH", "LAYER", "ACTION", "PASSED",
		       "DROPPED", "WOULD-DROP", "DELAYED");
	for (i = 0; i < n; i++) {
		const struct fc_policy_spec *p = &ps[i].row->spec;
		char dropped[24];

		fc_match_format(p, match);
		snprintf(dropped, sizeof(dropped), "%llu", (unsigned long long)ps[i].ps.dropped.packets);
		printf("%-10u %-30s %-6s %-7s %14llu %14s %14s %10llu\n", p->id, match, fc_policy_is_l7(p) ? "nginx" : "xdp",
		       fc_action_name(p->action), (unsigned long long)ps[i].ps.passed.packets,
		       p->action == FC_ACTION_LOG ? "-" : dropped, p->action == FC_ACTION_LOG ? dropped : "-",
		       (unsigned long long)ps[i].delayed);
	}
	return FC_EXIT_OK;
}

void fc_stats_free(struct fc_stats_all *a)
{
	free(a->rows);
	free(a->ps);
}

int fc_stats_gather(const struct fc_ctx *ctx, struct fc_stats_all *a, struct fc_err *err)
{
	const struct fc_shm_slot *slots;
	struct fc_store *st = NULL;
	size_t shm_size = 0, i;
	struct fc_err shm_err;
	struct fc_maps m;
	void *shm = NULL;
	int rc = -1;

	memset(a, 0, sizeof(*a));
	/* From the agent's /metrics, a missing store is an outage: making an
	 * empty one would have the agent publish it. */
	if (fc_maps_open(ctx->pin_dir, &m, err) < 0 || fc_stats_read(&m, &a->s, err) < 0 ||
	    fc_store_open_ex(ctx->db_path, !ctx->store_must_exist, &st, err) < 0 ||
	    fc_store_policy_list(st, &a->rows, &a->n, err) < 0 ||
	    fc_store_ban_count(st, (int64_t)time(NULL), &a->bans, err) < 0)
		goto out;
	a->ps = calloc(a->n ? a->n : 1, sizeof(*a->ps));
	if (!a->ps) {
		fc_err_set(err, "out of memory");
		goto out;
	}
	slots = fc_shm_slots(ctx->shm_path, &shm, &shm_size, &shm_err); /* none yet: zeros */
	for (i = 0; i < a->n; i++) {
		const struct fc_policy_row *r = &a->rows[i];

		a->ps[i].row = r;
		if (!fc_policy_is_l7(&r->spec)) {
			if (fc_pstats_read(&m, r->slot, &a->ps[i].ps, err) < 0)
				goto out;
		} else if (slots && slots[r->slot].owner == FC_SHM_OWNER(r->spec.id, r->epoch)) {
			a->ps[i].ps.passed.packets = slots[r->slot].passed;
			a->ps[i].ps.dropped.packets = slots[r->slot].denied;
			a->ps[i].delayed = slots[r->slot].delayed;
		}
	}
	rc = 0;
out:
	if (shm)
		munmap(shm, shm_size);
	fc_maps_close(&m);
	fc_store_close(st);
	if (rc)
		fc_stats_free(a);
	return rc;
}

int fc_stats_write_prometheus(const struct fc_ctx *ctx, FILE *f, struct fc_err *err)
{
	struct fc_stats_all a;

	if (fc_stats_gather(ctx, &a, err) < 0)
		return -1;
	fc_stats_prometheus(f, &a.s, a.ps, a.n);
	fprintf(f, "# HELP freqctl_bans Live bans in the store, by kind and reason.\n# TYPE freqctl_bans gauge\n"
		   "freqctl_bans{kind=\"address\",reason=\"by_hand\"} %zu\n"
		   "freqctl_bans{kind=\"address\",reason=\"escalated\"} %zu\n"
		   "freqctl_bans{kind=\"uid\",reason=\"by_hand\"} %zu\n",
		a.bans.addresses - a.bans.escalated, a.bans.escalated, a.bans.uids);
	fc_stats_free(&a);
	return 0;
}

static int fc_cmd_stats_run(const struct fc_ctx *ctx, const struct fc_cmd *cmd, int argc, char **argv)
{
	enum fc_stats_format fmt = FC_STATS_TEXT;
	struct fc_stats_all a;
	struct fc_err err;
	int c, rc;

	while ((c = fc_cmd_getopt(cmd, argc, argv)) != -1)
		fmt = c == FC_OPT_JSON ? FC_STATS_JSON : FC_STATS_PROMETHEUS;
	if (fmt == FC_STATS_PROMETHEUS) {
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
	rc = fc_stats_print(&a.s, a.ps, a.n, fmt);
	fc_stats_free(&a);
	return rc;
}

const struct fc_cmd fc_cmd_stats = {
	.name = "stats",
	.min_args = 0,
	.max_args = 0,
	.summary = "Show passed and dropped packet counters, by ban kind and by policy.",
	.details = "Summed over all CPUs and all interfaces attached with this pin dir. The counters live\n"
		   "in a pinned per-CPU map: they survive detach, attach and restarts of freqctl, and\n"
		   "start at zero when the pin dir is new. --prometheus adds the freqctl_bans gauge:\n"
		   "live bans in the store, by kind (address, uid) and reason (by_hand, escalated).",
	.opts = fc_stats_opts,
	.run = fc_cmd_stats_run,
};
