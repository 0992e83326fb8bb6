// SPDX-License-Identifier: BSD-2-Clause
/*
 * The console's API (loader/http/fc_console.c) without a socket: a request
 * as libmicrohttpd hands it over once admitted, answered into memory, with
 * writes going through the real store and publisher (a scratch pin dir and
 * shm). Properties: any request gets an answer (no crash, no connection
 * dropped for want of one), never a 5xx for what the client sent (the store
 * and the kernel are fine here), and every /api answer is valid JSON, an
 * error one with a message.
 *
 * An input: the first byte picks the method, then the URL up to a newline,
 * then the body.
 */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "fc_console.h"
#include "fc_fuzz.h"
#include "fc_kern.h"

static struct fc_console *console;
static struct fc_agent_counters counters;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const struct fc_ctx *ctx = fc_fuzz_ctx();
	struct fc_err err;

	(void)argc;
	(void)argv;
	/* The console never makes a store: one policy makes it, as the CLI would. */
	fc_fuzz_policy(1, "uid=seed", "3/m", "");
	console = fc_console_new(ctx, &counters, &err);
	if (!console)
		fc_fuzz_fail("console: %s", err.msg);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const methods[] = { "GET", "POST", "PUT", "DELETE", "PATCH", "HEAD" };
	struct fc_api_req q = { 0 };
	struct fc_reply r = { 0 };
	const uint8_t *nl;
	char url[512];
	size_t ulen;
	json_t *doc;

	if (size < 1 || size > 8192)
		return -1;
	q.method = methods[data[0] % 6];
	nl = memchr(data + 1, '\n', size - 1);
	ulen = nl ? (size_t)(nl - data - 1) : size - 1;
	if (ulen >= sizeof(url))
		return -1;
	memcpy(url, data + 1, ulen);
	url[ulen] = '\0';
	if (strlen(url) != ulen || (strncmp(url, "/api/", 5) && strcmp(url, "/metrics")))
		return -1; /* libmicrohttpd passes no NUL in a URL; only these reach the API */
	q.url = url;
	q.body = nl ? (const char *)nl + 1 : "";
	q.len = nl ? size - ulen - 2 : 0;
	fc_console_api(console, &q, &r);
	if (!r.body)
		fc_fuzz_fail("%s %s: no answer", q.method, url);
	if (r.status >= 500)
		fc_fuzz_fail("%s %s: %u %.*s", q.method, url, r.status, (int)r.len, r.body);
	if (!strcmp(r.type, "application/json")) {
		doc = json_loadb(r.body, r.len, 0, NULL);
		if (!doc)
			fc_fuzz_fail("%s %s: %u, not JSON: %.*s", q.method, url, r.status, (int)r.len, r.body);
		if (r.status >= 400 && !json_is_string(json_object_get(doc, "error")))
			fc_fuzz_fail("%s %s: %u without a message", q.method, url, r.status);
		json_decref(doc);
	}
	free(r.body);
	return 0;
}
