// SPDX-License-Identifier: BSD-2-Clause
/* freqctl stats */
#include <jansson.h>

#include "fc_cli.h"
#include "fc_kern.h"

/* The counters of struct fc_stats, in display order. */
static const struct {
	const char *key;
	const char *label;
	size_t off;
} fc_stat_rows[] = {
	{ "passed", "passed", offsetof(struct fc_stats, passed) },
	{ "dropped_exact", "dropped: exact ban", offsetof(struct fc_stats, drop_exact) },
	{ "dropped_prefix", "dropped: prefix ban", offsetof(struct fc_stats, drop_prefix) },
	{ "passed_non_ip", "passed: not IP", offsetof(struct fc_stats, non_ip) },
	{ "passed_malformed", "passed: malformed", offsetof(struct fc_stats, malformed) },
};

#define FC_NSTAT_ROWS (sizeof(fc_stat_rows) / sizeof(fc_stat_rows[0]))

static const struct fc_counter *fc_stat_at(const struct fc_stats *s, size_t row)
{
	return (const struct fc_counter *)((const char *)s + fc_stat_rows[row].off);
}

static int fc_cmd_stats_run(const struct fc_ctx *ctx, const struct fc_cmd *cmd, int argc, char **argv)
{
	const struct fc_counter *cnt;
	struct fc_stats s;
	struct fc_maps m;
	struct fc_err err;
	bool json = false;
	json_t *doc;
	size_t i;
	int c;

	while ((c = fc_cmd_getopt(cmd, argc, argv)) != -1)
		json |= c == FC_OPT_JSON;
	if (fc_maps_open(ctx->pin_dir, &m, &err) < 0 || fc_stats_read(&m, &s, &err) < 0) {
		fc_warn("stats: %s", err.msg);
		fc_maps_close(&m);
		return FC_EXIT_FAILURE;
	}
	fc_maps_close(&m);
	if (json) {
		doc = json_object();
		for (i = 0; doc && i < FC_NSTAT_ROWS; i++) {
			cnt = fc_stat_at(&s, i);
			json_object_set_new(doc, fc_stat_rows[i].key,
					    json_pack("{s:I, s:I}", "packets", (json_int_t)cnt->packets, "bytes",
						      (json_int_t)cnt->bytes));
		}
		return fc_json_print(doc);
	}
	printf("%-22s %16s %18s\n", "", "PACKETS", "BYTES");
	for (i = 0; i < FC_NSTAT_ROWS; i++) {
		cnt = fc_stat_at(&s, i);
		printf("%-22s %16llu %18llu\n", fc_stat_rows[i].label, (unsigned long long)cnt->packets,
		       (unsigned long long)cnt->bytes);
	}
	return FC_EXIT_OK;
}

const struct fc_cmd fc_cmd_stats = {
	.name = "stats",
	.min_args = 0,
	.max_args = 0,
	.summary = "Show passed and dropped packet counters, by ban kind.",
	.details = "Summed over all CPUs and all interfaces attached with this pin dir. The counters live\n"
		   "in a pinned per-CPU map: they survive detach, attach and restarts of freqctl, and\n"
		   "start at zero when the pin dir is new.",
	.opts = fc_opts_json,
	.run = fc_cmd_stats_run,
};
