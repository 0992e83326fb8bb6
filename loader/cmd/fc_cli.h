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
#include "fc_opt.h"
#include "fc_policy.h"

#define FC_EXIT_OK      0
#define FC_EXIT_FAILURE 1
#define FC_EXIT_USAGE   2

/* What a command does with the store: one that reads or changes it refuses
 * a SQLite store that is not there, naming the path (a --db with a typo is
 * not an empty store); those whose documented first use makes it (attach,
 * ban add, ban import, allow add, policy add and set, import, node set) make
 * it and say so. */
enum fc_store_use {
	FC_STORE_NEEDED = 0, /* refused once its arguments parse */
	FC_STORE_AT_OPEN,    /* refused where it opens the store, after its own usage errors */
	FC_STORE_MAKES,
	FC_STORE_UNUSED, /* or its own rule (status shows a store that is not there) */
};

struct fc_cmd {
	const char *name; /* "ban add" */
	const char *args; /* positional arguments, as shown in the synopsis */
	int min_args;
	int max_args;
	const char *summary;
	const char *details; /* more paragraphs for --help, or NULL */
	const struct fc_opt *opts; /* ends with an entry whose name is NULL */
	enum fc_store_use store;
	int (*run)(const struct fc_ctx *ctx, const struct fc_cmd *cmd, int argc, char **argv);
};

/* Runs cmd (main's last step): a command of FC_STORE_NEEDED refuses a
 * SQLite store that is not there once its arguments parse (so --help and
 * usage errors come first), one of FC_STORE_AT_OPEN where it opens it (the
 * store's "no store at PATH"); one of FC_STORE_MAKES says that it made it. */
int fc_cmd_run(const struct fc_ctx *ctx, const struct fc_cmd *cmd, int argc, char **argv);
/* Whether ctx's store is a SQLite file that is not there. */
bool fc_store_missing(const struct fc_ctx *ctx);

/*
 * Parses argv (argv[0] being the command) by cmd->opts into opts, then checks
 * the count of positional arguments; returns the index of the first. --help
 * prints the usage and exits 0; an unknown option or a missing argument
 * exits 2. A value that does not parse exits 2 naming the option, unless
 * first is given: then the first such error is kept there and parsing goes
 * on, for a command that names its object first ("policy 7: rate ...").
 */
int fc_cmd_parse(const struct fc_cmd *cmd, int argc, char **argv, void *opts, struct fc_err *first);
/* The same, and seen[i] set for each option cmd->opts[i] given. */
int fc_cmd_parse_seen(const struct fc_cmd *cmd, int argc, char **argv, void *opts, struct fc_err *first, bool *seen);
void fc_cmd_usage(const struct fc_cmd *cmd, FILE *f);
/* One line of option help: "  -m, --mode MODE   text". */
void fc_opt_print(const struct fc_opt *o, FILE *f);
__attribute__((noreturn, format(printf, 2, 3)))
void fc_usage_error(const struct fc_cmd *cmd, const char *fmt, ...);

/* What a command that changed one object (fc_change.h's rc, text its
 * canonical spelling) returns: a usage error exits 2; another failure is
 * reported as "CMD TEXT: why" and gives FC_EXIT_FAILURE; success gives
 * FC_EXIT_OK, for the command to say what it did. */
int fc_cmd_changed(const struct fc_cmd *cmd, int rc, const char *text, const struct fc_err *err);

/* The getopt_long tables of opts[0..n): shortopts starts with prefix;
 * longopts needs n + 1 entries, shortopts 2n + strlen(prefix) + 1 chars. */
size_t fc_opts_count(const struct fc_opt *opts);
void fc_getopt_build(const struct fc_opt *opts, size_t n, const char *prefix, struct option *longopts,
		     char *shortopts);
/* The entry getopt_long answered val for, or NULL. */
const struct fc_opt *fc_opt_find(const struct fc_opt *opts, size_t n, int val);

/* The global options (freqctl.c), given before the command: one given after
 * it gets a usage error that shows where it goes. */
extern const struct fc_opt fc_global_opts[];

/* Options of commands that have none, or only --json. */
struct fc_json_opt {
	bool json;
};
extern const struct fc_opt fc_opts_none[];
extern const struct fc_opt fc_opts_json[];

/* A policy that would be refused as new but was taken before (one bucket
 * for every source without --force, --action delay with a window) is
 * stored, published, and sync, status and import say what it does.
 * fc_policy_note: p's note in buf, 1, if it is one; 0 if not.
 * fc_policy_notes: the notes of the store's policies (the caller frees
 * *notes); -1 if the store can not be read. */
int fc_policy_note(const struct fc_policy_spec *p, char *buf, size_t len);
int fc_policy_notes(const struct fc_ctx *ctx, char (**notes)[FC_ERR_LEN], size_t *n);

/* What the BPF side needs: loading, attaching, reading and writing pinned
 * maps. fc_privileged: the process has it (effective CAP_BPF or
 * CAP_SYS_ADMIN, and CAP_NET_ADMIN: root has them). fc_need_privileges:
 * exits 1 saying so first, with why (after the command's usage errors: a
 * command's --help needs nothing). fc_priv_hint: the start of a runtime
 * error's message when the process lacks it ("" when it has it): every
 * change publishes to the maps. */
#define FC_NEEDS_ROOT "needs root (or CAP_BPF and CAP_NET_ADMIN)"
bool fc_privileged(void);
void fc_need_privileges(const struct fc_cmd *cmd, const char *why);
const char *fc_priv_hint(void);

/* Prints a JSON document to stdout and releases it. */
struct json_t;
int fc_json_print(struct json_t *doc);

extern const struct fc_cmd fc_cmd_attach, fc_cmd_detach, fc_cmd_status;
extern const struct fc_cmd fc_cmd_ban_add, fc_cmd_ban_del, fc_cmd_ban_import, fc_cmd_ban_list, fc_cmd_ban_sets;
extern const struct fc_cmd fc_cmd_allow_add, fc_cmd_allow_del, fc_cmd_allow_list;
extern const struct fc_cmd fc_cmd_policy_add, fc_cmd_policy_set, fc_cmd_policy_edit, fc_cmd_policy_del,
	fc_cmd_policy_list;
extern const struct fc_cmd fc_cmd_sync, fc_cmd_stats, fc_cmd_top, fc_cmd_export, fc_cmd_import, fc_cmd_agent;
extern const struct fc_cmd fc_cmd_node_set, fc_cmd_node_del, fc_cmd_node_list, fc_cmd_console_token, fc_cmd_keys;
extern const struct fc_cmd fc_cmd_fleet_status;

#endif /* FC_CLI_H */
