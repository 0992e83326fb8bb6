/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Commands and their options, declared once as tables: the same table
 * yields the getopt_long structures and the --help text, so the help can not
 * drift from what is parsed.
 */
#ifndef FC_CLI_H
#define FC_CLI_H

#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>

#include "fc_ctx.h"

#define FC_EXIT_OK      0
#define FC_EXIT_FAILURE 1
#define FC_EXIT_USAGE   2

/* Values for long-only options. */
enum {
	FC_OPT_JSON = 256,
	FC_OPT_TTL,
	FC_OPT_MODE,
	FC_OPT_ACTION,
	FC_OPT_NEW_SOURCES,
	FC_OPT_DELAY_BURST,
	FC_OPT_PROMETHEUS,
	FC_OPT_WEIGHT,
	FC_OPT_ESCALATE,
	FC_OPT_BAN_TTL,
	FC_OPT_METRICS,
	FC_OPT_HTTP,
	FC_OPT_TOKEN_FILE,
};

struct fc_opt {
	const char *name;
	int val;         /* the short option character, or an FC_OPT_* */
	int has_arg;     /* no_argument or required_argument */
	const char *arg; /* the argument's name in the help */
	const char *help;
};

struct fc_cmd {
	const char *name; /* "ban add" */
	const char *args; /* positional arguments, as shown in the synopsis */
	int min_args;
	int max_args;
	const char *summary;
	const char *details; /* more paragraphs for --help, or NULL */
	const struct fc_opt *opts; /* ends with an entry whose name is NULL */
	int (*run)(const struct fc_ctx *ctx, const struct fc_cmd *cmd, int argc, char **argv);
};

/*
 * getopt_long over cmd->opts, argv[0] being the command. Returns the next
 * option's val, or -1 once the options end; then the positional arguments
 * are argv[optind..argc) and their count has been checked. --help prints the
 * usage to stdout and exits 0; a usage error exits 2.
 */
int fc_cmd_getopt(const struct fc_cmd *cmd, int argc, char **argv);
void fc_cmd_usage(const struct fc_cmd *cmd, FILE *f);
/* One line of option help: "  -m, --mode MODE   text". */
void fc_opt_print(const struct fc_opt *o, FILE *f);
__attribute__((noreturn, format(printf, 2, 3)))
void fc_usage_error(const struct fc_cmd *cmd, const char *fmt, ...);

/* Option tables shared by several commands. */
extern const struct fc_opt fc_opts_none[];
extern const struct fc_opt fc_opts_json[];

/* Prints a JSON document to stdout and releases it. */
struct json_t;
int fc_json_print(struct json_t *doc);

extern const struct fc_cmd fc_cmd_attach, fc_cmd_detach, fc_cmd_status;
extern const struct fc_cmd fc_cmd_ban_add, fc_cmd_ban_del, fc_cmd_ban_import, fc_cmd_ban_list;
extern const struct fc_cmd fc_cmd_policy_add, fc_cmd_policy_set, fc_cmd_policy_del, fc_cmd_policy_list;
extern const struct fc_cmd fc_cmd_sync, fc_cmd_stats, fc_cmd_top, fc_cmd_export, fc_cmd_import, fc_cmd_agent;
extern const struct fc_cmd fc_cmd_node_set, fc_cmd_node_list, fc_cmd_console_token;

#endif /* FC_CLI_H */
