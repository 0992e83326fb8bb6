// SPDX-License-Identifier: BSD-2-Clause
/* The fleet's Prometheus families, from the agent's status file: the same
 * numbers for `stats --prometheus` and the agent's /metrics. */
#include <inttypes.h>
#include <string.h>

#include "fc_fleet_file.h"

static void fc_fleet_prom_policies(FILE *f, const json_t *pols)
{
	static const struct {
		const char *name, *field, *help;
	} fam[] = {
		{ "freqctl_fleet_policy_used", "fleet_used",
		  "Admissions of the fleet in the current window (from the nodes' heartbeats)." },
		{ "freqctl_fleet_policy_limit", "limit", "The fleet's limit per window (per key for DIM=*)." },
		{ "freqctl_fleet_policy_credit", "credit", "Credit this node holds now (summed over tracked keys)." },
	};
	const json_t *p;
	size_t i, k;

	for (k = 0; k < sizeof(fam) / sizeof(fam[0]); k++) {
		fprintf(f, "# HELP %s %s\n# TYPE %s gauge\n", fam[k].name, fam[k].help, fam[k].name);
		json_array_foreach(pols, i, p) {
			fprintf(f, "%s{policy=\"%" PRId64 "\"} %" PRId64 "\n", fam[k].name, fc_fleet_int(p, "id", 0),
				fc_fleet_int(p, fam[k].field, 0));
		}
	}
}

void fc_fleet_prometheus(FILE *f, const json_t *doc)
{
	static const char *const modes[] = { "fleet", "degraded", "off" };
	static const char *const events[] = { "moved", "ask", "reconnects", "reasserted", "frozen", "deferred" };
	const json_t *lat = json_object_get(doc, "latency_ms"), *cnt = json_object_get(doc, "counters");
	const char *mode = fc_fleet_str(doc, "mode", "");
	int64_t cmds = fc_fleet_int(cnt, "commands", 0), scripts = fc_fleet_int(cnt, "scripts", 0),
		waits = fc_fleet_int(cnt, "waits", 0), rounds = fc_fleet_int(doc, "rounds", 0);
	size_t i;

	if (!doc)
		return;
	fputs("# HELP freqctl_fleet_mode This node's fleet mode: 1 for the one it is in.\n"
	      "# TYPE freqctl_fleet_mode gauge\n",
	      f);
	for (i = 0; i < sizeof(modes) / sizeof(modes[0]); i++)
		fprintf(f, "freqctl_fleet_mode{mode=\"%s\"} %d\n", modes[i], !strcmp(mode, modes[i]));
	fprintf(f,
		"# HELP freqctl_fleet_rounds_total Sync rounds of the agent with Redis.\n"
		"# TYPE freqctl_fleet_rounds_total counter\nfreqctl_fleet_rounds_total %" PRId64 "\n"
		"# HELP freqctl_fleet_round_seconds How long a sync round took (over the last 100).\n"
		"# TYPE freqctl_fleet_round_seconds summary\n"
		"freqctl_fleet_round_seconds{quantile=\"0.5\"} %.6f\nfreqctl_fleet_round_seconds{quantile=\"0.99\"} "
		"%.6f\n"
		"freqctl_fleet_round_seconds_sum %.6f\nfreqctl_fleet_round_seconds_count %" PRId64 "\n"
		"# HELP freqctl_fleet_degraded_seconds_total Time spent in degraded mode (Redis away, slow or "
		"the clock too far from it).\n# TYPE freqctl_fleet_degraded_seconds_total counter\n"
		"freqctl_fleet_degraded_seconds_total %.3f\n"
		"# HELP freqctl_fleet_redis_commands_total Commands sent to Redis, by kind.\n"
		"# TYPE freqctl_fleet_redis_commands_total counter\n"
		"freqctl_fleet_redis_commands_total{kind=\"script\"} %" PRId64 "\n"
		"freqctl_fleet_redis_commands_total{kind=\"wait\"} %" PRId64 "\n"
		"freqctl_fleet_redis_commands_total{kind=\"other\"} %" PRId64 "\n"
		"# HELP freqctl_fleet_reply_errors_total Redis replies refused as malformed or out of bounds.\n"
		"# TYPE freqctl_fleet_reply_errors_total counter\nfreqctl_fleet_reply_errors_total %" PRId64 "\n"
		"# HELP freqctl_fleet_clock_offset_seconds This node's clock minus Redis's (median of 5).\n"
		"# TYPE freqctl_fleet_clock_offset_seconds gauge\nfreqctl_fleet_clock_offset_seconds %.6f\n",
		rounds, fc_fleet_num(lat, "p50", 0) / 1e3, fc_fleet_num(lat, "p99", 0) / 1e3,
		fc_fleet_num(lat, "sum", 0) / 1e3, rounds, (double)fc_fleet_int(cnt, "degraded_ms", 0) / 1e3, scripts,
		waits, cmds > scripts + waits ? cmds - scripts - waits : 0, fc_fleet_int(cnt, "reply_errors", 0),
		fc_fleet_num(json_object_get(doc, "clock"), "offset_ms", 0) / 1e3);
	fputs("# HELP freqctl_fleet_events_total Redis events the agent handled, by event.\n"
	      "# TYPE freqctl_fleet_events_total counter\n",
	      f);
	for (i = 0; i < sizeof(events) / sizeof(events[0]); i++)
		fprintf(f, "freqctl_fleet_events_total{event=\"%s\"} %" PRId64 "\n", events[i],
			fc_fleet_int(cnt, events[i], 0));
	fc_fleet_prom_policies(f, json_object_get(doc, "policies"));
}
