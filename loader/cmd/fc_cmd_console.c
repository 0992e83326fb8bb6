// SPDX-License-Identifier: BSD-2-Clause
/* freqctl console-token */
#include <stdio.h>

#include "fc_cli.h"
#include "fc_http.h"

struct fc_console_opt {
	const char *token_file;
	bool rotate;
};

static const struct fc_opt fc_console_opts[] = {
	FC_OPTION("token-file", 0, FC_OPT_STR, struct fc_console_opt, token_file, .arg = "PATH",
		  .help = "the file agent --http made (default " FC_HTTP_TOKEN_DEFAULT ")"),
	FC_OPTION("rotate", 0, FC_OPT_FLAG, struct fc_console_opt, rotate,
		  .help = "make a new token: a running agent refuses the old one from its next request"),
	FC_OPT_END,
};

static int fc_console_token_run(const struct fc_ctx *ctx, const struct fc_cmd *cmd, int argc, char **argv)
{
	char token[FC_HTTP_TOKEN_LEN + 1];
	struct fc_console_opt opt = { .token_file = FC_HTTP_TOKEN_DEFAULT };
	struct fc_err err;

	(void)ctx;
	fc_cmd_parse(cmd, argc, argv, &opt, NULL);
	if ((opt.rotate ? fc_http_token_rotate(opt.token_file, token, &err) :
			  fc_http_token(opt.token_file, false, token, &err)) < 0) {
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
		   "browser), or paste the token into its form. The same token guards agent --metrics\n"
		   "(Prometheus: authorization: {credentials_file: PATH}). --rotate makes a new one and\n"
		   "prints it; a running agent takes it from its next request, and the old one is refused.",
	.opts = fc_console_opts,
	.store = FC_STORE_UNUSED,
	.run = fc_console_token_run,
};
