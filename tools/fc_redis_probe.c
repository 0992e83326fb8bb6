// SPDX-License-Identifier: BSD-2-Clause
/*
 * fc_redis_probe: the agent's Redis client (loader/lib/redis) by hand, for
 * manual checks and the integration test: connects as the agent would,
 * runs commands as one batch, prints what became of each, the mode, the
 * nodes and the client's counters.
 *
 *   fc_redis_probe [OPTIONS] CMD [ARG...] [';' CMD [ARG...]...]
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "fc_opt.h"
#include "fc_redis.h"

static void usage(FILE *f)
{
	fputs("Usage: fc_redis_probe [OPTIONS] CMD [ARG...] [';' CMD [ARG...]...]\n\n"
	      "Runs the commands as one batch through freqctl's Redis client: one pipeline per\n"
	      "primary, each command routed by its key (its first argument; EVAL and EVALSHA: their\n"
	      "keys; none for PING, INFO, TIME, CLUSTER, DBSIZE, SCRIPT).\n\n"
	      "  --redis URL[,URL...]          the seeds (default: $FREQCTL_REDIS)\n"
	      "  --redis-password-file PATH    the password, from a file of mode 0600\n"
	      "  --redis-prefix PREFIX         checked, and printed\n"
	      "  --timeout MS                  a call's time (default 200)\n"
	      "  --connect-timeout MS          a connection's (default 100)\n"
	      "  --repeat N                    run the batch N times (default 1)\n"
	      "  -h, --help                    this help\n\n"
	      "Exit status: 0 every command answered as expected, 1 not, 2 usage error.\n",
	      f);
}

/* Where a command's keys are: argv[key], nkeys of them. */
static void keys_of(struct fc_redis_cmd *c)
{
	static const char *const keyless[] = { "PING", "INFO", "TIME", "CLUSTER", "DBSIZE", "SCRIPT", "ECHO", NULL };
	const char *const *k;
	uint64_t n;

	for (k = keyless; *k; k++)
		if (!strcasecmp(c->argv[0], *k))
			return;
	if (!strcasecmp(c->argv[0], "EVAL") || !strcasecmp(c->argv[0], "EVALSHA")) {
		if (c->argc > 2 && fc_decimal(c->argv[2], (uint64_t)c->argc - 3, &n) == 0 && n) {
			c->key = 3;
			c->nkeys = (unsigned)n;
		}
		return;
	}
	if (c->argc > 1)
		c->key = 1;
}

static void print_reply(const struct fc_redis_reply *r)
{
	char text[256];
	size_t i;

	if (r->type != FC_REDIS_ARRAY) {
		fc_redis_reply_describe(r, text, sizeof(text));
		printf("%s", text);
		return;
	}
	printf("[");
	for (i = 0; i < r->len; i++) {
		printf(i ? ", " : "");
		print_reply(r->elem[i]);
	}
	printf("]");
}

static const char *status_name(enum fc_redis_status s)
{
	static const char *const names[] = { "?", "ok", "not run", "error", "bad reply", "lost" };

	return (unsigned)s < sizeof(names) / sizeof(names[0]) ? names[s] : "?";
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "redis", required_argument, NULL, 'r' }, { "redis-password-file", required_argument, NULL, 'p' },
		{ "redis-prefix", required_argument, NULL, 'x' }, { "timeout", required_argument, NULL, 't' },
		{ "connect-timeout", required_argument, NULL, 'c' }, { "repeat", required_argument, NULL, 'n' },
		{ "help", no_argument, NULL, 'h' }, { NULL, 0, NULL, 0 },
	};
	const char *urls = getenv("FREQCTL_REDIS"), *pwfile = NULL, *prefix = NULL;
	struct fc_redis_node_info nodes[64];
	struct fc_redis_conf conf;
	struct fc_redis_stats st;
	struct fc_redis_cmd *cmds;
	struct fc_redis *r;
	struct fc_err err;
	uint64_t repeat = 1, ms;
	size_t n = 0, i, k, failed = 0;
	int c, a;

	fc_redis_conf_init(&conf);
	while ((c = getopt_long(argc, argv, "+h", opts, NULL)) != -1) {
		switch (c) {
		case 'r': urls = optarg; break;
		case 'p': pwfile = optarg; break;
		case 'x': prefix = optarg; break;
		case 't':
		case 'c':
			if (fc_decimal(optarg, 60000, &ms) < 0 || !ms) {
				fprintf(stderr, "fc_redis_probe: --%s \"%s\": expected milliseconds, 1 to 60000\n",
					c == 't' ? "timeout" : "connect-timeout", optarg);
				return 2;
			}
			*(c == 't' ? &conf.timeout_ms : &conf.connect_timeout_ms) = (unsigned)ms;
			break;
		case 'n':
			if (fc_decimal(optarg, 1000000, &repeat) < 0 || !repeat) {
				fprintf(stderr, "fc_redis_probe: --repeat \"%s\": expected 1 to 1000000\n", optarg);
				return 2;
			}
			break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (!urls || optind == argc) {
		fprintf(stderr, "fc_redis_probe: %s\n", !urls ? "no --redis (nor FREQCTL_REDIS)" : "no command");
		return 2;
	}
	if (fc_redis_conf_urls(&conf, urls, &err) < 0) {
		fprintf(stderr, "fc_redis_probe: --redis: %s\n", err.msg);
		return 2;
	}
	if (prefix && fc_redis_conf_prefix(&conf, prefix, &err) < 0) {
		fprintf(stderr, "fc_redis_probe: --redis-prefix: %s\n", err.msg);
		return 2;
	}
	if (pwfile && fc_redis_conf_password_file(&conf, pwfile, &err) < 0) {
		fprintf(stderr, "fc_redis_probe: %s\n", err.msg);
		return 1;
	}
	cmds = calloc((size_t)argc, sizeof(*cmds));
	if (!cmds)
		return 1;
	for (a = optind; a < argc; a++) {
		if (!strcmp(argv[a], ";"))
			continue;
		cmds[n].argv = (const char *const *)&argv[a];
		while (a < argc && strcmp(argv[a], ";"))
			cmds[n].argc++, a++;
		cmds[n].want = (struct fc_redis_want){
			.types = FC_REDIS_NIL | FC_REDIS_INT | FC_REDIS_STR | FC_REDIS_STATUS | FC_REDIS_ARRAY,
			.elem_types = FC_REDIS_NIL | FC_REDIS_INT | FC_REDIS_STR | FC_REDIS_STATUS,
			.max_len = FC_REDIS_REPLY_MAX,
		};
		keys_of(&cmds[n++]);
	}
	r = fc_redis_open(&conf, &err);
	fc_redis_conf_wipe(&conf);
	if (!r) {
		fprintf(stderr, "fc_redis_probe: %s\n", err.msg);
		return 1;
	}
	while (repeat--) {
		fc_redis_cmds_release(cmds, n);
		failed = fc_redis_exec(r, cmds, n, &err);
	}
	for (i = 0; i < n; i++) {
		printf("%zu %s: ", i + 1, status_name(cmds[i].status));
		if (cmds[i].status == FC_REDIS_OK)
			print_reply(cmds[i].reply);
		else
			printf("%s", cmds[i].msg);
		printf("\n");
	}
	printf("mode: %s\n", fc_redis_mode_name(fc_redis_mode(r)));
	k = fc_redis_nodes(r, nodes, sizeof(nodes) / sizeof(nodes[0]));
	for (i = 0; i < k && i < sizeof(nodes) / sizeof(nodes[0]); i++)
		printf("node: %s %s slots=%u%s\n", nodes[i].name, nodes[i].primary ? "primary" : "replica", nodes[i].slots,
		       nodes[i].connected ? " connected" : "");
	fc_redis_stats(r, &st);
	printf("stats: calls=%llu commands=%llu pipelines=%llu rounds=%llu moved=%llu ask=%llu tryagain=%llu "
	       "refreshes=%llu connects=%llu failures=%llu timeouts=%llu last_usec=%llu\n",
	       (unsigned long long)st.calls, (unsigned long long)st.commands, (unsigned long long)st.pipelines,
	       (unsigned long long)st.rounds, (unsigned long long)st.moved, (unsigned long long)st.ask,
	       (unsigned long long)st.tryagain, (unsigned long long)st.refreshes, (unsigned long long)st.connects,
	       (unsigned long long)st.failures, (unsigned long long)st.timeouts, (unsigned long long)st.last_usec);
	if (failed)
		fprintf(stderr, "fc_redis_probe: %s\n", err.msg);
	fc_redis_cmds_release(cmds, n);
	fc_redis_close(r);
	free(cmds);
	return failed ? 1 : 0;
}
