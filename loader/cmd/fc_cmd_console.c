// SPDX-License-Identifier: BSD-2-Clause
/* freqctl console-token */
#include <stdio.h>

#include "fc_cli.h"
#include "fc_console.h"

struct fc_console_opt {
	const char *token_file;
};

static const struct fc_opt fc_console_opts[] = {
	FC_OPTION("token-file", 0, FC_OPT_STR, struct fc_console_opt, token_file, .arg = "PATH",
		  .help = "the file agent --http made (default " FC_CONSOLE_TOKEN_DEFAULT ")"),
	FC_OPT_END,
};

static int fc_console_token_run(const struct fc_ctx *ctx, const struct fc_cmd *cmd, int argc, char **argv)
{
	char token[FC_CONSOLE_TOKEN_LEN + 1];
	struct fc_console_opt opt = { .token_file = FC_CONSOLE_TOKEN_DEFAULT };
	struct fc_err err;

	(void)ctx;
	fc_cmd_parse(cmd, argc, argv, &opt, NULL);
	if (fc_console_token(opt.token_file, false, token, &err) < 0) {
		fc_warn("console-token: %s", err.msg);
		return FC_EXIT_FAILURE;
	}
	printf("%s\n", token);
	return fflush(stdout) ? FC_EXIT_FAILURE : FC_EXIT_OK;
}

const struct fc_cmd fc_cmd_console_token = {
	.name = "console-token",
	.min_args = 0,
	.max_args = 0,
	.summary = "Print the bearer token of the console that agent --http serves.",
	.details = "Every request to the console's /api and /metrics needs \"Authorization: Bearer TOKEN\".\n"
		   "Open the page as http://ADDR:PORT/#token=TOKEN (the part after # never leaves the\n"
		   "browser), or paste the token into its form. To change the token, remove the file and\n"
		   "restart the agent.",
	.opts = fc_console_opts,
	.run = fc_console_token_run,
};
