// SPDX-License-Identifier: BSD-2-Clause
/* freqctl agent: its options, into the agent's config. */
#include <stdlib.h>
#include <string.h>

#include "fc_agent.h"
#include "fc_cli.h"
#include "fc_escalate.h"
#include "fc_console.h"
#include "fc_http.h"
#include "fc_policy.h"

static int fc_opt_listen(const char *text, void *dest, struct fc_err *err)
{
	struct fc_listen *l = dest;

	if (fc_http_parse(text, &l->sa, err) < 0)
		return -1;
	l->at = text;
	return 0;
}

/* --clock-offset MS: a signed number of milliseconds, within +-1 day. */
static int fc_opt_clock_offset(const char *text, void *dest, struct fc_err *err)
{
	char *end;
	long long v = strtoll(text, &end, 10);

	if (!*text || *end || v < -86400000LL || v > 86400000LL)
		return fc_err_set(err, "\"%s\": expected milliseconds, -86400000 to 86400000", text);
	*(int64_t *)dest = v;
	return 0;
}

/* --redis-wait N, or "all". */
static int fc_opt_redis_wait(const char *text, void *dest, struct fc_err *err)
{
	char *end;
	unsigned long v;

	if (!strcmp(text, "all")) {
		*(uint32_t *)dest = FC_AGENT_FLEET_WAIT_ALL;
		return 0;
	}
	v = strtoul(text, &end, 10);
	if (!*text || *end || *text == '-' || v < 1 || v > 16)
		return fc_err_set(err, "\"%s\": expected a number of replicas, 1 to 16, or all", text);
	*(uint32_t *)dest = (uint32_t)v;
	return 0;
}

static int fc_opt_weight(const char *text, void *dest, struct fc_err *err)
{
	return fc_weight_parse(text, dest, err);
}

#define FC_AGENT_OPT(name, short_, type, field, ...) \
	FC_OPTION(name, short_, type, struct fc_agent_config, field, __VA_ARGS__)

static const struct fc_opt fc_agent_opts[] = {
	FC_AGENT_OPT("quiet", 'q', FC_OPT_FLAG, quiet, .help = "log only problems, not every publish"),
	FC_AGENT_OPT("weight", 0, FC_OPT_PARSE, weight, .parse = fc_opt_weight, .arg = "W",
		     .help = "record this node's (--node) weight in the store first: its rates are R * W"),
	FC_AGENT_OPT("metrics", 0, FC_OPT_PARSE, metrics, .parse = fc_opt_listen, .arg = "[ADDR:]PORT",
		     .help = "serve Prometheus metrics at http://ADDR:PORT/metrics (ADDR: 127.0.0.1 unless given)"),
	FC_AGENT_OPT("http", 0, FC_OPT_PARSE, http, .parse = fc_opt_listen, .arg = "[ADDR:]PORT",
		     .help = "serve the operator console and its API (ADDR: 127.0.0.1 unless given; see console-token)"),
	FC_AGENT_OPT("escalate-cap", 0, FC_OPT_U32, escalate_cap, .min = 1, .max = 1000000, .arg = "N",
		     .help = "escalation bans N clients a minute at most; the rest are logged (default 600)"),
	FC_AGENT_OPT("escalate-aggregate", 0, FC_OPT_U32, escalate_aggregate, .min = 0, .max = FC_ESC_V6_NETS,
		     .arg = "N", .help = "N IPv6 clients of one /64 due in a minute ban the /64 (default 8; 0: never)"),
	FC_AGENT_OPT("sync-interval", 0, FC_OPT_U32, fleet.sync_interval_ms, .min = 10, .max = 10000, .arg = "MS",
		     .help = "with --redis: a fleet sync round every MS milliseconds (default 100)"),
	FC_AGENT_OPT("fleet-max-skew", 0, FC_OPT_U32, fleet.max_skew_ms, .min = 10, .max = 10000, .arg = "MS",
		     .help = "with --redis: degraded (clock) past MS ms from Redis's clock (default 500)"),
	FC_AGENT_OPT("fleet-max-keys", 0, FC_OPT_U32, fleet.max_keys, .min = 1, .max = 1000000, .arg = "N",
		     .help = "with --redis: fleet scripts a round sends at most (default 20000)"),
	FC_AGENT_OPT("redis-wait", 0, FC_OPT_PARSE, fleet.redis_wait, .parse = fc_opt_redis_wait, .arg = "N|all",
		     .help = "with --redis: replicas that must confirm a grant before it is used (default all)"),
	FC_AGENT_OPT("clock-offset", 0, FC_OPT_PARSE, fleet.clock_offset_ms, .parse = fc_opt_clock_offset,
		     .arg = "MS", .help = "for tests: label fleet windows as if this clock were MS ms ahead"),
	FC_AGENT_OPT("token-file", 0, FC_OPT_STR, serve.token_file, .arg = "PATH",
		     .help = "the bearer token of --http and --metrics, made (0600) on first start (default "
			     FC_HTTP_TOKEN_DEFAULT ")"),
	FC_AGENT_OPT("http-cert", 0, FC_OPT_STR, serve.cert_file, .arg = "PEM",
		     .help = "serve --http and --metrics over TLS with this certificate..."),
	FC_AGENT_OPT("http-key", 0, FC_OPT_STR, serve.key_file, .arg = "PEM", .help = "... and this private key"),
	FC_AGENT_OPT("http-insecure", 0, FC_OPT_FLAG, serve.insecure,
		     .help = "allow plain HTTP on an address other than loopback (the token then travels in the clear)"),
	FC_AGENT_OPT("http-host", 0, FC_OPT_STR, serve.host, .arg = "NAME",
		     .help = "a name clients reach the servers by, taken in Host besides the address"),
	FC_OPT_END,
};

static int fc_cmd_agent_run(const struct fc_ctx *ctx, const struct fc_cmd *cmd, int argc, char **argv)
{
	struct fc_agent_config cfg = { .serve.token_file = FC_HTTP_TOKEN_DEFAULT, .escalate_cap = FC_ESC_CAP_DEFAULT,
				       .escalate_aggregate = FC_ESC_V6_DEFAULT, .fleet = FC_AGENT_FLEET_OPTS_DEFAULT };

	fc_cmd_parse(cmd, argc, argv, &cfg, NULL);
	fc_need_privileges(cmd, "it publishes the store to the pinned BPF maps");
	return fc_agent_run(ctx, &cfg) ? FC_EXIT_FAILURE : FC_EXIT_OK;
}

const struct fc_cmd fc_cmd_agent = {
	.name = "agent",
	.min_args = 0,
	.max_args = 0,
	.summary = "Keep XDP/TC and nginx equal to the store, whoever changes it (foreground).",
	.details = "Publishes at start, then whenever the store changes (SQLite: inotify, then\n"
		   "data_version; PostgreSQL: LISTEN/NOTIFY), when a ban expires (and drops it from the\n"
		   "store), when the wall clock is stepped (the packet path's offset to UTC is set\n"
		   "afresh), and on SIGHUP. If the store can not be read or reached, what was published\n"
		   "stays enforced and the agent retries with backoff. SIGTERM stops it and leaves the\n"
		   "kernel and the shm as they are. One agent per store file, or per --shm with\n"
		   "PostgreSQL (a lock file beside it). A fleet: every node runs an agent with\n"
		   "--db postgresql://... --node NAME [--weight W]. For systemd: Type=notify, see\n"
		   "tools/pkg/freqctl-agent.service.in.",
	.opts = fc_agent_opts,
	.store = FC_STORE_UNUSED, /* its own rule: a store that vanishes is an outage */
	.run = fc_cmd_agent_run,
};
