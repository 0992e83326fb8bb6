// SPDX-License-Identifier: BSD-2-Clause
#include <errno.h>
#include <limits.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <linux/capability.h>

#include <jansson.h>

#include "fc_change.h"
#include "fc_cli.h"
#include "fc_error.h"
#include "fc_settings.h"
#include "fc_store.h"

const struct fc_opt fc_opts_none[] = { FC_OPT_END };

const struct fc_opt fc_opts_json[] = {
	FC_OPTION("json", 0, FC_OPT_FLAG, struct fc_json_opt, json, .help = "print JSON instead of text"),
	FC_OPT_END,
};

/* The command fc_cmd_run runs, and its context: what its parse checks the
 * store by. */
static const struct fc_cmd *fc_running;
static const struct fc_ctx *fc_running_ctx;
static void fc_store_check(const struct fc_cmd *cmd, const char *db);

static const struct fc_opt fc_help_opt = { .name = "help", .short_name = 'h', .type = FC_OPT_FLAG,
					   .help = "show this help and exit" };

void fc_opt_print(const struct fc_opt *o, FILE *f)
{
	char head[64];
	int n = 0;

	if (o->short_name)
		n = snprintf(head, sizeof(head), "-%c, ", o->short_name);
	snprintf(head + n, sizeof(head) - (size_t)n, "--%s%s%s", o->name, o->arg ? " " : "", o->arg ? o->arg : "");
	fprintf(f, "  %-24s %s\n", head, o->help);
}

void fc_cmd_usage(const struct fc_cmd *cmd, FILE *f)
{
	const struct fc_opt *o;

	fprintf(f, "Usage: freqctl [GLOBAL OPTIONS] %s [OPTIONS]%s%s\n\n%s\n", cmd->name, cmd->args ? " " : "",
		cmd->args ? cmd->args : "", cmd->summary);
	if (cmd->details)
		fprintf(f, "\n%s\n", cmd->details);
	fputs("\nOptions:\n", f);
	for (o = cmd->opts; o && o->name; o++)
		fc_opt_print(o, f);
	fc_opt_print(&fc_help_opt, f);
	fputs("\nGlobal options (--db, --pin-dir, -v) go before the command; see 'freqctl --help'.\n", f);
}

void fc_usage_error(const struct fc_cmd *cmd, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "freqctl %s: ", cmd->name);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nTry 'freqctl %s --help'.\n", cmd->name);
	exit(FC_EXIT_USAGE);
}

/* getopt_long's value for the i-th option: its short name, or past any char. */
static int fc_opt_val(const struct fc_opt *o, size_t i)
{
	return o->short_name ? o->short_name : 256 + (int)i;
}

size_t fc_opts_count(const struct fc_opt *opts)
{
	size_t n = 0;

	while (opts && opts[n].name)
		n++;
	return n;
}

void fc_getopt_build(const struct fc_opt *opts, size_t n, const char *prefix, struct option *longopts,
		     char *shortopts)
{
	size_t i, s = strlen(prefix);

	memcpy(shortopts, prefix, s);
	for (i = 0; i < n; i++) {
		const struct fc_opt *o = &opts[i];

		if (!fc_opt_sane(o)) {
			/* A table typo: caught by any run of the command, the tests' included. */
			fprintf(stderr, "freqctl: internal error: option --%s: entry does not fit its type\n", o->name);
			abort();
		}

		longopts[i] = (struct option){ o->name, fc_opt_has_arg(o) ? required_argument : no_argument, NULL,
					       fc_opt_val(o, i) };
		if (o->short_name) {
			shortopts[s++] = o->short_name;
			if (fc_opt_has_arg(o))
				shortopts[s++] = ':';
		}
	}
	longopts[n] = (struct option){ 0 };
	shortopts[s] = '\0';
}

const struct fc_opt *fc_opt_find(const struct fc_opt *opts, size_t n, int val)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (fc_opt_val(&opts[i], i) == val)
			return &opts[i];
	return NULL;
}

/* An option the command does not know, argv[at] (or the short option c),
 * that is a global option: says where it goes ("freqctl --node n1 agent"),
 * taking its value from "--node=n1" or the next argument. Returns if it is
 * not a global option. */
static void fc_global_misplaced(const struct fc_cmd *cmd, int argc, char **argv, int at, int c)
{
	const char *arg = argv[at], *eq = NULL, *val = NULL, *more;
	const struct fc_opt *o;
	size_t len;
	int used;

	for (o = fc_global_opts; o->name; o++) {
		if (c) {
			if (o->short_name == c)
				break;
			continue;
		}
		eq = strchr(arg, '=');
		len = eq ? (size_t)(eq - arg - 2) : strlen(arg + 2);
		if (!strncmp(arg, "--", 2) && strlen(o->name) == len && !strncmp(arg + 2, o->name, len)) {
			val = eq ? eq + 1 : at + 1 < argc ? argv[at + 1] : NULL;
			break;
		}
	}
	if (!o->name)
		return;
	/* The command's own arguments, besides this option (and its value). */
	used = 2 + (fc_opt_has_arg(o) && !eq && val);
	more = argc > used ? " ..." : "";
	if (!fc_opt_has_arg(o))
		fc_usage_error(cmd, "--%s is a global option: freqctl --%s %s%s", o->name, o->name, cmd->name, more);
	fc_usage_error(cmd, "--%s is a global option: freqctl --%s %s %s%s", o->name, o->name, val ? val : o->arg,
		       cmd->name, more);
}

/* getopt_long takes an unambiguous abbreviation: --redis for the agent's
 * --redis-wait. One that is a global option's whole name is that global
 * option, misplaced, and said so. */
static void fc_abbrev_global(const struct fc_cmd *cmd, int argc, char **argv, const struct fc_opt *o)
{
	int at = optarg && optind > 1 && optarg == argv[optind - 1] ? optind - 2 : optind - 1;
	const char *given;
	size_t len;

	if (!o || !o->name || at < 1 || strncmp(argv[at], "--", 2))
		return;
	given = argv[at] + 2;
	len = strcspn(given, "=");
	if (len != strlen(o->name))
		fc_global_misplaced(cmd, argc, argv, at, 0);
}

int fc_cmd_parse(const struct fc_cmd *cmd, int argc, char **argv, void *opts, struct fc_err *first)
{
	return fc_cmd_parse_seen(cmd, argc, argv, opts, first, NULL);
}

int fc_cmd_parse_seen(const struct fc_cmd *cmd, int argc, char **argv, void *opts, struct fc_err *first, bool *seen)
{
	size_t n = fc_opts_count(cmd->opts);
	const struct fc_opt *o;
	struct fc_err err;
	int c, nargs;
	/* Sized by the table (and --help): no option is ever dropped for want of room. */
	struct option longopts[n + 2];
	char shortopts[2 * n + 4];

	/* ':' first: a missing argument comes back as ':'. */
	fc_getopt_build(cmd->opts, n, ":h", longopts, shortopts);
	longopts[n] = (struct option){ fc_help_opt.name, no_argument, NULL, 'h' };
	longopts[n + 1] = (struct option){ 0 };
	if (first)
		first->msg[0] = '\0';
	optind = 0; /* restart getopt: argv is the command's */
	opterr = 0;
	while ((c = getopt_long(argc, argv, shortopts, longopts, NULL)) != -1) {
		switch (c) {
		case 'h':
			fc_cmd_usage(cmd, stdout);
			exit(FC_EXIT_OK);
		case '?':
			fc_global_misplaced(cmd, argc, argv, optind - 1, optopt < 256 ? optopt : 0);
			if (optopt && optopt < 256)
				fc_usage_error(cmd, "unknown option '-%c'", optopt);
			fc_usage_error(cmd, "unknown option '%s'", argv[optind - 1]);
		case ':':
			fc_usage_error(cmd, "option '%s' needs an argument", argv[optind - 1]);
		}
		o = fc_opt_find(cmd->opts, n, c);
		fc_abbrev_global(cmd, argc, argv, o);
		if (o && seen)
			seen[o - cmd->opts] = true;
		if (!o || fc_opt_set(o, opts, optarg, o->name, &err) == 0)
			continue;
		if (!first)
			fc_usage_error(cmd, "--%s: %s", o->name, err.msg);
		if (!first->msg[0])
			*first = err;
	}
	nargs = argc - optind;
	if (nargs < cmd->min_args)
		fc_usage_error(cmd, "missing argument: expected %s", cmd->args);
	if (nargs > cmd->max_args)
		fc_usage_error(cmd, "unexpected argument \"%s\"", argv[optind + cmd->max_args]);
	if (cmd == fc_running && cmd->store == FC_STORE_NEEDED)
		fc_store_check(cmd, fc_running_ctx->db_path);
	return optind;
}

/* A SQLite store that is not there, or in a directory this user may not
 * enter (the default's is root's: it keeps the fleet's key, the console's
 * token beside it), is refused before anything is read: exit 1. */
static void fc_store_check(const struct fc_cmd *cmd, const char *db)
{
	char dir[PATH_MAX], from[600], *slash;
	struct passwd *pw;
	struct stat st;

	if (fc_store_is_postgres(db))
		return;
	if (access(db, F_OK) < 0 && errno == ENOENT) {
		fc_settings_origin("db", from, sizeof(from));
		fc_warn("%s: no store at %s: no such file (%s%s; attach, ban add or import, allow add, policy add or "
			"set, import or node set makes one)",
			cmd->name, db, strcmp(from, "default") ? "the path is from " : "the default path: --db, FREQCTL_DB or ",
			strcmp(from, "default") ? from : FC_CONFIG_DEFAULT " set another");
		exit(FC_EXIT_FAILURE);
	}
	snprintf(dir, sizeof(dir), "%s", db);
	slash = strrchr(dir, '/');
	if (!slash || geteuid() == 0)
		return;
	slash[slash == dir] = '\0';
	if (access(dir, X_OK) == 0 || errno != EACCES || stat(dir, &st) < 0)
		return;
	pw = getpwuid(st.st_uid);
	fc_warn("%s: store %s: its directory %s (mode %04o, owner %s) is closed to this user: reading the store "
		"there needs root (freqctl keeps it closed: the store holds the fleet's key)",
		cmd->name, db, dir, (unsigned)(st.st_mode & 07777), pw ? pw->pw_name : "?");
	exit(FC_EXIT_FAILURE);
}

bool fc_store_missing(const struct fc_ctx *ctx)
{
	return !fc_store_is_postgres(ctx->db_path) && access(ctx->db_path, F_OK) < 0 && errno == ENOENT;
}

int fc_cmd_run(const struct fc_ctx *ctx0, const struct fc_cmd *cmd, int argc, char **argv)
{
	struct fc_ctx ctx = *ctx0;
	bool missing = fc_store_missing(&ctx);
	int rc;

	/* Below the CLI too: nothing but a first use makes a store. */
	ctx.store_must_exist = cmd->store != FC_STORE_MAKES;
	fc_running = cmd;
	fc_running_ctx = &ctx;
	rc = cmd->run(&ctx, cmd, argc, argv);
	if (missing && cmd->store == FC_STORE_MAKES && !fc_store_missing(&ctx))
		fc_warn("made a new store at %s", ctx.db_path);
	return rc;
}

#ifndef CAP_BPF
#define CAP_BPF 39 /* Linux 5.8; older kernels take CAP_SYS_ADMIN for it */
#endif

bool fc_privileged(void)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[_LINUX_CAPABILITY_U32S_3] = { 0 };

	if (syscall(SYS_capget, &h, d) < 0)
		return geteuid() == 0;
#define FC_HAS(c) ((d[(c) / 32].effective >> ((c) % 32)) & 1)
	return (FC_HAS(CAP_BPF) || FC_HAS(CAP_SYS_ADMIN)) && FC_HAS(CAP_NET_ADMIN);
#undef FC_HAS
}

const char *fc_priv_hint(void)
{
	return fc_privileged() ? "" : FC_NEEDS_ROOT ": ";
}

void fc_need_privileges(const struct fc_cmd *cmd, const char *why)
{
	if (fc_privileged())
		return;
	fc_warn("%s: " FC_NEEDS_ROOT ": %s", cmd->name, why);
	exit(FC_EXIT_FAILURE);
}

int fc_json_print(json_t *doc)
{
	int rc;

	if (!doc) {
		fc_warn("out of memory building JSON");
		return FC_EXIT_FAILURE;
	}
	rc = json_dumpf(doc, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	json_decref(doc);
	if (rc < 0 || fputc('\n', stdout) == EOF) {
		fc_warn("writing JSON to stdout failed");
		return FC_EXIT_FAILURE;
	}
	return FC_EXIT_OK;
}

int fc_cmd_changed(const struct fc_cmd *cmd, int rc, const char *text, const struct fc_err *err)
{
	if (rc == FC_CHANGE_INVALID)
		fc_usage_error(cmd, "%s", err->msg);
	if (rc) {
		fc_warn("%s %s: %s%s", cmd->name, text, rc == FC_CHANGE_RUNTIME ? fc_priv_hint() : "", err->msg);
		return FC_EXIT_FAILURE;
	}
	return FC_EXIT_OK;
}
