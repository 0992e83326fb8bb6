/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The operator console, served by the agent (`agent --http ADDR:PORT`): a
 * JSON API over the store (policies, bans, live counters, Prometheus text)
 * and one static page that uses it. Every request must name this server in
 * Host (fc_http.h); every /api and /metrics request needs "Authorization:
 * Bearer TOKEN", the token kept in a 0600 file; the page itself holds no
 * data. Writes go through fc_change.c, as the CLI's do, and each is logged:
 * who (the peer and a tag of the token), what, and how it ended.
 */
#ifndef FC_CONSOLE_H
#define FC_CONSOLE_H

#include <stdbool.h>

#include "fc_ctx.h"
#include "fc_metrics.h"

struct fc_console;
struct fc_http_conf;
struct sockaddr_storage;

/* Serves on sa (see fc_http_parse) as conf says (Host names, the token,
 * TLS, where writes are logged), in threads of its own until stop. */
struct fc_console *fc_console_start(const struct sockaddr_storage *sa, const struct fc_http_conf *conf,
				    const struct fc_ctx *ctx, const struct fc_agent_counters *counters,
				    struct fc_err *err);
void fc_console_stop(struct fc_console *c);

/* A console that serves nothing by itself: requests are given to
 * fc_console_api (the fuzzer's way in). Ended by fc_console_stop. */
struct fc_console *fc_console_new(const struct fc_ctx *ctx, const struct fc_agent_counters *counters,
				  struct fc_err *err);

/* One API request, as admitted (Host and token taken, the body whole). */
struct fc_api_req {
	const char *method, *url;
	const char *body;
	size_t len;
	char what[96]; /* set: the policy or ban a write was about, for the log */
};

/* Its answer: body is malloc'd (the caller frees it; NULL: out of memory). */
struct fc_reply {
	unsigned int status;
	char *body;
	size_t len;
	const char *type;
};

/* Answers q (/api/... or /metrics) into r. Returns 0. */
int fc_console_api(struct fc_console *c, struct fc_api_req *q, struct fc_reply *r);

/* The page, built into the binary (fc_console_page.c). */
struct fc_console_file {
	const char *path; /* "/", "/console.js", ... */
	const char *type;
	const char *data; /* NUL-terminated */
};

extern const struct fc_console_file fc_console_files[];
extern const size_t fc_console_nfiles;

#endif /* FC_CONSOLE_H */
