// SPDX-License-Identifier: BSD-2-Clause
/* freqctl: the command line. Global options, then a command. */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/libbpf.h>

#include "fc_cli.h"
#include "fc_error.h"
#include "fc_kern.h"
#include "fc_shm_write.h"
#include "fc_store.h"

#ifndef FC_VERSION
#define FC_VERSION "0.1.0"
#endif

static const struct fc_cmd *const fc_cmds[] = {
	&fc_cmd_attach, &fc_cmd_detach, &fc_cmd_status, &fc_cmd_ban_add, &fc_cmd_ban_del,
	&fc_cmd_ban_import, &fc_cmd_ban_list, &fc_cmd_policy_add, &fc_cmd_policy_set, &fc_cmd_policy_del,
	&fc_cmd_policy_list, &fc_cmd_sync, &fc_cmd_stats, &fc_cmd_top, &fc_cmd_export, &fc_cmd_import, &fc_cmd_agent,
	&fc_cmd_node_set, &fc_cmd_node_list, &fc_cmd_console_token,
};

#define FC_NCMDS (sizeof(fc_cmds) / sizeof(fc_cmds[0]))

enum { FC_GOPT_DB = 300, FC_GOPT_PIN_DIR, FC_GOPT_SHM, FC_GOPT_SHM_GROUP, FC_GOPT_NODE, FC_GOPT_VERSION };

static const struct fc_opt fc_global_opts[] = {
	{ "db", FC_GOPT_DB, required_argument, "DSN",
	  "the store: a SQLite file (default " FC_STORE_DEFAULT ") or postgresql://..." },
	{ "pin-dir", FC_GOPT_PIN_DIR, required_argument, "DIR",
	  "where the BPF maps are pinned (default " FC_PIN_DIR_DEFAULT ")" },
	{ "shm", FC_GOPT_SHM, required_argument, "PATH", "the L7 shared memory nginx reads (default " FC_SHM_DEFAULT ")" },
	{ "shm-group", FC_GOPT_SHM_GROUP, required_argument, "GROUP",
	  "group of the shm file: nginx's workers (default " FC_SHM_GROUP_DEFAULT ", if it exists)" },
	{ "node", FC_GOPT_NODE, required_argument, "NAME", "this machine in the nodes table (default: host name)" },
	{ "verbose", 'v', no_argument, NULL, "explain more, including libbpf's log" },
	{ "version", FC_GOPT_VERSION, no_argument, NULL, "print the version and exit" },
	{ "help", 'h', no_argument, NULL, "show this help and exit" },
	{ 0 },
};

static void fc_main_usage(FILE *f)
{
	const struct fc_opt *o;
	size_t i;

	fputs("Usage: freqctl [GLOBAL OPTIONS] COMMAND [OPTIONS] [ARGS]\n\n"
	      "Frequency control for Linux edge servers: bans and rate limits at XDP/TC and in nginx,\n"
	      "published from a policy store.\n\n"
	      "Commands:\n",
	      f);
	for (i = 0; i < FC_NCMDS; i++) {
		const char *nl = strchr(fc_cmds[i]->summary, '\n');
		char head[48];

		snprintf(head, sizeof(head), "%s %s", fc_cmds[i]->name, fc_cmds[i]->args ? fc_cmds[i]->args : "");
		/* First line of the summary only; 'COMMAND --help' has the rest. */
		fprintf(f, "  %-24s %.*s\n", head, nl ? (int)(nl - fc_cmds[i]->summary) : (int)strlen(fc_cmds[i]->summary),
			fc_cmds[i]->summary);
	}
	fputs("\nGlobal options:\n", f);
	for (o = fc_global_opts; o->name; o++)
		fc_opt_print(o, f);
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
	struct fc_ctx ctx = { .db_path = FC_STORE_DEFAULT, .pin_dir = FC_PIN_DIR_DEFAULT, .shm_path = FC_SHM_DEFAULT };
	struct option longopts[sizeof(fc_global_opts) / sizeof(fc_global_opts[0])];
	const struct fc_cmd *cmd;
	char host[256];
	size_t i;
	int c, words;

	for (i = 0; fc_global_opts[i].name; i++)
		longopts[i] = (struct option){ fc_global_opts[i].name, fc_global_opts[i].has_arg, NULL,
					       fc_global_opts[i].val };
	longopts[i] = (struct option){ 0 };
	opterr = 0;
	/* '+': stop at the command, whose options are its own. */
	while ((c = getopt_long(argc, argv, "+:hv", longopts, NULL)) != -1) {
		switch (c) {
		case FC_GOPT_DB:
			ctx.db_path = optarg;
			break;
		case FC_GOPT_PIN_DIR:
			ctx.pin_dir = optarg;
			break;
		case FC_GOPT_SHM:
			ctx.shm_path = optarg;
			break;
		case FC_GOPT_SHM_GROUP:
			ctx.shm_group = optarg;
			break;
		case FC_GOPT_NODE:
			ctx.node = optarg;
			break;
		case 'v':
			fc_verbose = 1;
			break;
		case FC_GOPT_VERSION:
			printf("freqctl %s\n", FC_VERSION);
			return FC_EXIT_OK;
		case 'h':
			fc_main_usage(stdout);
			return FC_EXIT_OK;
		case ':':
			fc_main_usage_error("option '%s' needs an argument", argv[optind - 1]);
		default:
			fc_main_usage_error("unknown global option '%s'", argv[optind - 1]);
		}
	}
	if (optind == argc)
		fc_main_usage_error("missing command");
	if (!ctx.node) {
		host[sizeof(host) - 1] = '\0';
		ctx.node = gethostname(host, sizeof(host) - 1) == 0 ? host : "localhost";
	}
	if (!*ctx.db_path || !*ctx.pin_dir || !*ctx.shm_path || !*ctx.node)
		fc_main_usage_error("--db, --pin-dir and --shm need a non-empty path");
	argc -= optind;
	argv += optind;
	if (!strcmp(argv[0], "help")) {
		fc_main_usage(stdout);
		return FC_EXIT_OK;
	}
	cmd = fc_cmd_find(argc, argv, &words);
	if (!cmd) {
		if (!strcmp(argv[0], "ban"))
			fc_main_usage_error("ban: expected add, del, import or list");
		if (!strcmp(argv[0], "policy"))
			fc_main_usage_error("policy: expected add, set, del or list");
		if (!strcmp(argv[0], "node"))
			fc_main_usage_error("node: expected set or list");
		fc_main_usage_error("unknown command '%s'", argv[0]);
	}
	libbpf_set_print(fc_libbpf_print);
	/* The command sees itself as argv[0], as getopt expects. */
	return cmd->run(&ctx, cmd, argc - (words - 1), argv + (words - 1));
}
