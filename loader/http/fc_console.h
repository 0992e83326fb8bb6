/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The operator console, served by the agent (`agent --http ADDR:PORT`): a
 * JSON API over the store (policies, bans, live counters, Prometheus text)
 * and one static page that uses it. Every /api and /metrics request needs
 * "Authorization: Bearer TOKEN", the token kept in a 0600 file; the page
 * itself holds no data and is served to anyone who can connect (loopback by
 * default). Writes go through fc_change.c, as the CLI's do.
 */
#ifndef FC_CONSOLE_H
#define FC_CONSOLE_H

#include <stdbool.h>

#include "fc_ctx.h"
#include "fc_metrics.h"

#define FC_CONSOLE_TOKEN_DEFAULT "/var/lib/freqctl/console.token"
#define FC_CONSOLE_TOKEN_LEN     64 /* hex digits: 256 random bits */

/* Reads the token from path; create: makes the file (0600, random token)
 * when it does not exist. */
int fc_console_token(const char *path, bool create, char token[FC_CONSOLE_TOKEN_LEN + 1], struct fc_err *err);

struct fc_console;
struct sockaddr_storage;

/* Serves on sa (see fc_http_parse) in threads of its own until stop. */
struct fc_console *fc_console_start(const struct sockaddr_storage *sa, const struct fc_ctx *ctx,
				    const struct fc_agent_counters *counters, const char *token, struct fc_err *err);
void fc_console_stop(struct fc_console *c);

/* The page, built into the binary (fc_console_page.c). */
struct fc_console_file {
	const char *path; /* "/", "/console.js", ... */
	const char *type;
	const char *data; /* NUL-terminated */
};

extern const struct fc_console_file fc_console_files[];
extern const size_t fc_console_nfiles;

#endif /* FC_CONSOLE_H */
