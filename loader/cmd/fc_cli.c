// SPDX-License-Identifier: BSD-2-Clause
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "fc_cli.h"
#include "fc_error.h"

#define FC_MAX_OPTS 16

const struct fc_opt fc_opts_none[] = { { 0 } };

const struct fc_opt fc_opts_json[] = {
	{ "json", FC_OPT_JSON, no_argument, NULL, "print JSON instead of text" },
	{ 0 },
};

static const struct fc_opt fc_help_opt = { "help", 'h', no_argument, NULL, "show this help and exit" };

void fc_opt_print(const struct fc_opt *o, FILE *f)
{
	char head[64];
	int n = 0;

	if (o->val < 256)
		n = snprintf(head, sizeof(head), "-%c, ", o->val);
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

int fc_cmd_getopt(const struct fc_cmd *cmd, int argc, char **argv)
{
	static const struct fc_cmd *built;
	static struct option longopts[FC_MAX_OPTS + 2];
	static char shortopts[2 * FC_MAX_OPTS + 4];
	const struct fc_opt *o;
	size_t i = 0, s = 0;
	int c, nargs;

	if (built != cmd) {
		/* First call for this command: build the tables, restart getopt. */
		shortopts[s++] = ':'; /* report a missing argument as ':' */
		for (o = cmd->opts; o && o->name && i < FC_MAX_OPTS; o++, i++) {
			longopts[i] = (struct option){ o->name, o->has_arg, NULL, o->val };
			if (o->val < 256) {
				shortopts[s++] = (char)o->val;
				if (o->has_arg == required_argument)
					shortopts[s++] = ':';
			}
		}
		longopts[i++] = (struct option){ fc_help_opt.name, no_argument, NULL, 'h' };
		longopts[i] = (struct option){ 0 };
		shortopts[s++] = 'h';
		shortopts[s] = '\0';
		built = cmd;
		optind = 0;
	}
	opterr = 0;
	c = getopt_long(argc, argv, shortopts, longopts, NULL);
	switch (c) {
	case 'h':
		fc_cmd_usage(cmd, stdout);
		exit(FC_EXIT_OK);
	case '?':
		if (optopt && optopt < 256)
			fc_usage_error(cmd, "unknown option '-%c'", optopt);
		fc_usage_error(cmd, "unknown option '%s'", argv[optind - 1]);
	case ':':
		fc_usage_error(cmd, "option '%s' needs an argument", argv[optind - 1]);
	case -1:
		built = NULL;
		nargs = argc - optind;
		if (nargs < cmd->min_args)
			fc_usage_error(cmd, "missing argument: expected %s", cmd->args);
		if (nargs > cmd->max_args)
			fc_usage_error(cmd, "unexpected argument \"%s\"", argv[optind + cmd->max_args]);
		return -1;
	default:
		return c;
	}
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
