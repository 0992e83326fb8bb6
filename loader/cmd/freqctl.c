// SPDX-License-Identifier: BSD-2-Clause
/* freqctl: the command line. Global options, then a command. */
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/libbpf.h>

#include "fc_cli.h"
#include "fc_error.h"
#include "fc_kern.h"
#include "fc_redis_conf.h"
#include "fc_settings.h"
#include "fc_shm_write.h"
#include "fc_store.h"
#include "fc_version.h"

static const struct fc_cmd *const fc_cmds[] = {
	&fc_cmd_attach, &fc_cmd_detach, &fc_cmd_status, &fc_cmd_ban_add, &fc_cmd_ban_del,
	&fc_cmd_ban_import, &fc_cmd_ban_list, &fc_cmd_ban_sets, &fc_cmd_allow_add, &fc_cmd_allow_del, &fc_cmd_allow_list,
	&fc_cmd_policy_add, &fc_cmd_policy_set, &fc_cmd_policy_edit, &fc_cmd_policy_del,
	&fc_cmd_policy_list, &fc_cmd_keys, &fc_cmd_sync, &fc_cmd_stats, &fc_cmd_top, &fc_cmd_export, &fc_cmd_import, &fc_cmd_agent,
	&fc_cmd_node_set, &fc_cmd_node_del, &fc_cmd_node_list, &fc_cmd_fleet_status, &fc_cmd_console_token,
};

#define FC_NCMDS (sizeof(fc_cmds) / sizeof(fc_cmds[0]))

struct fc_global_opt {
	const char *db, *pin_dir, *shm, *shm_group, *node, *redis, *redis_password_file, *redis_prefix;
	uint32_t shm_keys;
	bool verbose, version, help;
};

/* A key table size: rounded up to a power of two, within the layout's bounds. */
static int fc_shm_keys_parse(const char *text, void *dest, struct fc_err *err)
{
	uint64_t n, p = FC_SHM_KEYS_MIN;

	if (fc_decimal(text, FC_SHM_KEYS_MAX, &n) < 0 || n < FC_SHM_KEYS_MIN)
		return fc_err_set(err, "\"%s\": expected a number of keys from %u to %u", text, FC_SHM_KEYS_MIN,
				  FC_SHM_KEYS_MAX);
	while (p < n)
		p *= 2;
	*(uint32_t *)dest = (uint32_t)p;
	return 0;
}

/* --redis and --redis-prefix are checked here, so that a typo is a usage
 * error at once; what they say is parsed again where Redis is used. */
static int fc_redis_urls_check(const char *text, void *dest, struct fc_err *err)
{
	struct fc_redis_conf c;
	int rc;

	fc_redis_conf_init(&c);
	rc = fc_redis_conf_urls(&c, text, err);
	fc_redis_conf_wipe(&c);
	if (rc == 0)
		*(const char **)dest = text;
	return rc;
}

static int fc_redis_prefix_check(const char *text, void *dest, struct fc_err *err)
{
	struct fc_redis_conf c;

	fc_redis_conf_init(&c);
	if (fc_redis_conf_prefix(&c, text, err) < 0)
		return -1;
	*(const char **)dest = text;
	return 0;
}

#define FC_GLOBAL(name, short_, type, field, ...) \
	FC_OPTION(name, short_, type, struct fc_global_opt, field, __VA_ARGS__)

const struct fc_opt fc_global_opts[] = {
	FC_GLOBAL("db", 0, FC_OPT_STR, db, .arg = "DSN",
		  .help = "the store: a SQLite file (default " FC_STORE_DEFAULT ") or postgresql://..."),
	FC_GLOBAL("pin-dir", 0, FC_OPT_STR, pin_dir, .arg = "DIR",
		  .help = "where the BPF maps are pinned (default " FC_PIN_DIR_DEFAULT ")"),
	FC_GLOBAL("shm", 0, FC_OPT_STR, shm, .arg = "PATH",
		  .help = "the L7 shared memory nginx reads (default " FC_SHM_DEFAULT ")"),
	FC_GLOBAL("shm-group", 0, FC_OPT_STR, shm_group, .arg = "GROUP",
		  .help = "group of the shm file: nginx's workers (default " FC_SHM_GROUP_DEFAULT ", if it exists)"),
	FC_GLOBAL("shm-keys", 0, FC_OPT_PARSE, shm_keys, .parse = fc_shm_keys_parse, .arg = "N",
		  .help = "nginx's key table: N entries of 64 bytes, a power of two from 1024 to 16777216 (default "
			  "1048576 for a new table; another size remakes it: keys and counters start afresh)"),
	FC_GLOBAL("node", 0, FC_OPT_STR, node, .arg = "NAME",
		  .help = "this machine in the nodes table (default: host name)"),
	FC_GLOBAL("redis", 0, FC_OPT_PARSE, redis, .parse = fc_redis_urls_check, .arg = "URL[,URL...]",
		  .help = "Redis for fleet policies, redis://[user:password@]host[:port]: a standalone server, or "
			  "nodes of a Cluster (only the agent connects)"),
	FC_GLOBAL("redis-password-file", 0, FC_OPT_STR, redis_password_file, .arg = "PATH",
		  .help = "Redis's password, from a file of mode 0600 (instead of the URL)"),
	FC_GLOBAL("redis-prefix", 0, FC_OPT_PARSE, redis_prefix, .parse = fc_redis_prefix_check, .arg = "PREFIX",
		  .help = "the prefix of freqctl's keys in Redis, one per fleet sharing it (default "
			  FC_REDIS_PREFIX_DEFAULT ")"),
	FC_GLOBAL("verbose", 'v', FC_OPT_FLAG, verbose, .help = "explain more, including libbpf's log"),
	FC_GLOBAL("version", 0, FC_OPT_FLAG, version, .help = "print the version and exit"),
	FC_GLOBAL("help", 'h', FC_OPT_FLAG, help, .help = "show this help and exit"),
	FC_OPT_END,
};

#define FC_NGLOBAL (sizeof(fc_global_opts) / sizeof(fc_global_opts[0]) - 1)

/* The commands, one line each, or those of group ("ban" for ban add, ban
 * del, ...) alone; returns how many (f NULL: only counts them). */
static size_t fc_cmds_print(FILE *f, const char *group)
{
	size_t i, n = 0, glen = group ? strlen(group) : 0;

	for (i = 0; i < FC_NCMDS; i++) {
		const char *nl = strchr(fc_cmds[i]->summary, '\n');
		char head[48];

		if (group && (strncmp(fc_cmds[i]->name, group, glen) || fc_cmds[i]->name[glen] != ' '))
			continue;
		snprintf(head, sizeof(head), "%s %s", fc_cmds[i]->name, fc_cmds[i]->args ? fc_cmds[i]->args : "");
		/* First line of the summary only; 'COMMAND --help' has the rest. */
		if (f)
			fprintf(f, "  %-24s %.*s\n", head, nl ? (int)(nl - fc_cmds[i]->summary) : (int)strlen(fc_cmds[i]->summary),
				fc_cmds[i]->summary);
		n++;
	}
	return n;
}

static void fc_main_usage(FILE *f)
{
	const struct fc_opt *o;

	fputs("Usage: freqctl [GLOBAL OPTIONS] COMMAND [OPTIONS] [ARGS]\n\n"
	      "Frequency control for Linux edge servers: bans and rate limits at XDP/TC and in nginx,\n"
	      "published from a policy store.\n\n"
	      "Commands:\n",
	      f);
	fc_cmds_print(f, NULL);
	fputs("\nGlobal options:\n", f);
	for (o = fc_global_opts; o->name; o++)
		fc_opt_print(o, f);
	fc_settings_usage(f);
	fputs("\nExit status: 0 done, 1 runtime error, 2 usage error.\n"
	      "Run 'freqctl COMMAND --help' for a command's options.\n",
	      f);
}

static __attribute__((noreturn, format(printf, 1, 2))) void fc_main_usage_error(const char *fmt, ...)
{
	va_list ap;

	fputs("freqctl: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs("\nTry 'freqctl --help'.\n", stderr);
	exit(FC_EXIT_USAGE);
}

/* Finds the command named by argv[0] (and argv[1] for two-word commands). */
static const struct fc_cmd *fc_cmd_find(int argc, char **argv, int *words)
{
	size_t i, len;

	for (i = 0; i < FC_NCMDS; i++) {
		const char *name = fc_cmds[i]->name, *sp = strchr(name, ' ');

		len = sp ? (size_t)(sp - name) : strlen(name);
		if (strncmp(argv[0], name, len) || argv[0][len])
			continue;
		if (!sp) {
			*words = 1;
			return fc_cmds[i];
		}
		if (argc > 1 && !strcmp(argv[1], sp + 1)) {
			*words = 2;
			return fc_cmds[i];
		}
	}
	return NULL;
}

int main(int argc, char **argv)
{
	struct fc_global_opt g = { .db = FC_STORE_DEFAULT, .pin_dir = FC_PIN_DIR_DEFAULT, .shm = FC_SHM_DEFAULT };
	struct option longopts[FC_NGLOBAL + 1];
	char shortopts[2 * FC_NGLOBAL + 3];
	const struct fc_opt *o;
	const struct fc_cmd *cmd;
	struct fc_ctx ctx;
	struct fc_err err, conf_err;
	char host[256];
	int c, words, conf;

	/* The file, then the environment; reported once --help and --version
	 * have had their say. */
	conf = fc_settings_load(fc_global_opts, &g, &conf_err);
	/* '+': stop at the command, whose options are its own; ':' reports a
	 * missing argument as ':'. */
	fc_getopt_build(fc_global_opts, FC_NGLOBAL, "+:", longopts, shortopts);
	opterr = 0;
	while ((c = getopt_long(argc, argv, shortopts, longopts, NULL)) != -1) {
		if (c == ':')
			fc_main_usage_error("option '%s' needs an argument", argv[optind - 1]);
		o = fc_opt_find(fc_global_opts, FC_NGLOBAL, c);
		if (!o)
			fc_main_usage_error("unknown global option '%s'", argv[optind - 1]);
		if (fc_opt_set(o, &g, optarg, o->name, &err) < 0)
			fc_main_usage_error("--%s: %s", o->name, err.msg);
		fc_settings_given(o);
	}
	if (g.help) {
		fc_main_usage(stdout);
		return FC_EXIT_OK;
	}
	if (g.version) {
		printf("freqctl %s\n", FC_VERSION);
		return FC_EXIT_OK;
	}
	if (conf == FC_EXIT_USAGE)
		fc_main_usage_error("%s", conf_err.msg);
	if (conf) {
		fc_warn("%s", conf_err.msg);
		return conf;
	}
	fc_verbose = g.verbose;
	if (optind == argc)
		fc_main_usage_error("missing command");
	if (!g.node) {
		host[sizeof(host) - 1] = '\0';
		g.node = gethostname(host, sizeof(host) - 1) == 0 ? host : "localhost";
	}
	if (!*g.db || !*g.pin_dir || !*g.shm || !*g.node)
		fc_main_usage_error("--db, --pin-dir and --shm need a non-empty path");
	ctx = (struct fc_ctx){ .db_path = g.db, .pin_dir = g.pin_dir, .shm_path = g.shm, .shm_group = g.shm_group,
			       .shm_keys = g.shm_keys, .node = g.node, .redis = g.redis,
			       .redis_password_file = g.redis_password_file, .redis_prefix = g.redis_prefix };
	argc -= optind;
	argv += optind;
	if (!strcmp(argv[0], "help")) {
		fc_main_usage(stdout);
		return FC_EXIT_OK;
	}
	cmd = fc_cmd_find(argc, argv, &words);
	/* 'freqctl ban --help': the group's commands, as --help is everywhere. */
	if (!cmd && argc == 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) && fc_cmds_print(NULL, argv[0])) {
		printf("Usage: freqctl [GLOBAL OPTIONS] %s SUBCOMMAND [OPTIONS] [ARGS]\n\nCommands:\n", argv[0]);
		fc_cmds_print(stdout, argv[0]);
		printf("\nRun 'freqctl %s SUBCOMMAND --help' for a command's options.\n", argv[0]);
		return FC_EXIT_OK;
	}
	if (!cmd) {
		if (!strcmp(argv[0], "ban"))
			fc_main_usage_error("ban: expected add, del, import, list or sets");
		if (!strcmp(argv[0], "allow"))
			fc_main_usage_error("allow: expected add, del or list");
		if (!strcmp(argv[0], "policy"))
			fc_main_usage_error("policy: expected add, set, edit, del or list");
		if (!strcmp(argv[0], "node"))
			fc_main_usage_error("node: expected set or list");
		if (!strcmp(argv[0], "fleet"))
			fc_main_usage_error("fleet: expected status");
		fc_main_usage_error("unknown command '%s'", argv[0]);
	}
	libbpf_set_print(fc_libbpf_print);
	/* The command sees itself as argv[0], as getopt expects. */
	return fc_cmd_run(&ctx, cmd, argc - (words - 1), argv + (words - 1));
}
