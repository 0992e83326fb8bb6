// SPDX-License-Identifier: BSD-2-Clause
/*
 * The fleet's calls of its script: a batch of them, one per record, sent in
 * one fc_redis_exec (a pipeline per primary). The script is loaded once
 * (SCRIPT LOAD, on any primary: its SHA1 is the same everywhere) and called
 * by EVALSHA; a node that answers NOSCRIPT (another primary, one promoted or
 * restarted) gets the same call as EVAL, which runs it and caches it there.
 * NOSCRIPT is answered before anything runs, so the EVAL is the first run.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fc_fleet_redis.h"
#include "fc_grow.h"

/* The script, built in (.incbin; the Makefile names the file as this
 * object's prerequisite). */
__asm__(".section .rodata\n"
	".global fc_fleet_sync_lua\n"
	"fc_fleet_sync_lua:\n"
	".incbin \"loader/agent/fc_fleet_sync.lua\"\n"
	".byte 0\n"
	".previous\n");

void fc_fleet_batch_init(struct fc_fleet_batch *b)
{
	memset(b, 0, sizeof(*b));
}

void fc_fleet_batch_free(struct fc_fleet_batch *b)
{
	free(b->call);
	free(b->res);
	free(b->cmd);
	free(b->argv);
	free(b->argvlen);
	free(b->off);
	free(b->text);
	fc_fleet_batch_init(b);
}

void fc_fleet_batch_reset(struct fc_fleet_batch *b)
{
	b->n = 0;
	b->nargs = 0;
	b->text_len = 0;
}

struct fc_fleet_call *fc_fleet_batch_add(struct fc_fleet_batch *b)
{
	size_t c1 = b->cap, c2 = b->cap;

	if (b->n == b->cap) {
		if (fc_grow((void **)&b->call, &c1, b->n + 1, sizeof(*b->call)) ||
		    fc_grow((void **)&b->res, &c2, b->n + 1, sizeof(*b->res)))
			return NULL;
		b->cap = c1;
	}
	memset(&b->call[b->n], 0, sizeof(b->call[b->n]));
	return &b->call[b->n++];
}

/* Appends one argument's text; -1 when out of memory. */
static int fc_arg(struct fc_fleet_batch *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fc_arg(struct fc_fleet_batch *b, const char *fmt, ...)
{
	size_t c1 = b->args_cap, c2 = b->args_cap, c3 = b->args_cap, room;
	va_list ap;
	int len;

	if (b->nargs == b->args_cap) {
		if (fc_grow((void **)&b->off, &c1, b->nargs + 1, sizeof(*b->off)) ||
		    fc_grow((void **)&b->argvlen, &c2, b->nargs + 1, sizeof(*b->argvlen)) ||
		    fc_grow((void **)&b->argv, &c3, b->nargs + 1, sizeof(*b->argv)))
			return -1;
		b->args_cap = c1;
	}
	for (room = 64;; room = (size_t)len + 1) {
		if (fc_grow((void **)&b->text, &b->text_cap, b->text_len + room, 1))
			return -1;
		va_start(ap, fmt);
		len = vsnprintf(b->text + b->text_len, b->text_cap - b->text_len, fmt, ap);
		va_end(ap);
		if (len < 0)
			return -1;
		if (b->text_len + (size_t)len < b->text_cap)
			break;
	}
	b->off[b->nargs] = b->text_len;
	b->argvlen[b->nargs++] = (size_t)len;
	b->text_len += (size_t)len + 1;
	return 0;
}

/* The arguments of one call: EVALSHA, the SHA, the key, ARGV (the
 * script's header says what each is). */
static int fc_fleet_args(struct fc_fleet_batch *b, const struct fc_fleet_call *c, const char *prefix)
{
	uint32_t j;
	int rc = 0;

	rc |= fc_arg(b, "EVALSHA") | fc_arg(b, "%s", b->sha) | fc_arg(b, "1") | fc_arg(b, "%s", c->record);
	rc |= fc_arg(b, "1") | fc_arg(b, "%" PRIu32, c->no) | fc_arg(b, "%" PRIu64, c->limit) |
	      fc_arg(b, "%" PRIu64, c->n) | fc_arg(b, "%016" PRIx64, c->set) | fc_arg(b, "%" PRIu64, c->ttl_ms);
	if (c->adopt)
		rc |= fc_arg(b, "-");
	else
		rc |= fc_arg(b, "%" PRIu64, c->g_app);
	rc |= fc_arg(b, "%" PRIu64, c->r_lock) | fc_arg(b, "%" PRIu64, c->used) | fc_arg(b, "%" PRIu64, c->want) |
	      fc_arg(b, "%d", c->settled ? 1 : 0) | fc_arg(b, "%sdemand", prefix);
	for (j = 0; j < c->nshares; j++)
		rc |= fc_arg(b, "%" PRIu32, c->share_no[j]) | fc_arg(b, "%" PRIu64, c->share[j]);
	return rc;
}

/* Loads the script once: b->sha, or -1 with err. */
static int fc_fleet_load(struct fc_fleet_batch *b, struct fc_redis *r, struct fc_err *err)
{
	const char *argv[] = { "SCRIPT", "LOAD", fc_fleet_sync_lua };
	struct fc_redis_cmd cmd = { .argc = 3, .argv = argv, .want = FC_REDIS_WANT_STR(40) };
	const struct fc_redis_reply *rep;
	size_t i;
	int rc = -1;

	if (b->sha[0])
		return 0;
	if (fc_redis_exec(r, &cmd, 1, err))
		goto out;
	rep = cmd.reply;
	if (rep->type != FC_REDIS_STR || rep->len != 40) {
		fc_err_set(err, "fleet: SCRIPT LOAD: expected a SHA1 of 40 hex digits");
		goto out;
	}
	for (i = 0; i < 40; i++)
		if (!strchr("0123456789abcdef", rep->str[i])) {
			fc_err_set(err, "fleet: SCRIPT LOAD: expected a SHA1 of 40 hex digits");
			goto out;
		}
	memcpy(b->sha, rep->str, 40);
	b->sha[40] = 0;
	rc = 0;
out:
	fc_redis_cmds_release(&cmd, 1);
	return rc;
}

/* An error reply of the record's own making: the script's refusal (its
 * errors start "FLEET") or its failure on the record's fields (Redis names
 * the script). Any other error is Redis's (OOM, READONLY, ...): the round's. */
static bool fc_record_error(const struct fc_redis_cmd *c)
{
	const struct fc_redis_reply *e = c->reply;

	return c->status == FC_REDIS_ERROR && e &&
	       ((e->len >= 6 && !memcmp(e->str, "FLEET ", 6)) || (e->len >= 15 && !memcmp(e->str, "ERR user_script", 15)));
}

/* Result i from its command. */
static void fc_fleet_result(struct fc_fleet_batch *b, size_t i, const struct fc_fleet_expect *x)
{
	struct fc_fleet_result *res = &b->res[i];
	const struct fc_redis_cmd *c = &b->cmd[i];
	struct fc_err err;

	if (c->status == FC_REDIS_OK) {
		if (!fc_fleet_reply_parse(c->reply, x, res, &err))
			return;
		res->status = FC_FLEET_R_REFUSED;
		/* cut if need be: the record's name comes first */
		if (snprintf(res->msg, sizeof(res->msg), "%s: %s", b->call[i].record, err.msg) < 0)
			res->msg[0] = 0;
		return;
	}
	memset(res, 0, sizeof(*res));
	res->status = c->status == FC_REDIS_NOT_RUN ? FC_FLEET_R_NOT_RUN :
		      fc_record_error(c)             ? FC_FLEET_R_REFUSED :
						       FC_FLEET_R_UNKNOWN;
	snprintf(res->msg, sizeof(res->msg), "%s", c->msg ? c->msg : "no reply");
}

static bool fc_noscript(const struct fc_redis_cmd *c)
{
	return c->status == FC_REDIS_ERROR && c->reply && c->reply->len >= 8 && !memcmp(c->reply->str, "NOSCRIPT", 8);
}

/* Points the commands at their arguments (the text no longer moves): the
 * calls, then the WAITs. */
static void fc_fleet_point(struct fc_fleet_batch *b)
{
	size_t i, a = 0;

	for (i = 0; i < b->nargs; i++)
		b->argv[i] = b->text + b->off[i];
	for (i = 0; i < b->n + b->nwaits; i++) {
		b->cmd[i].argv = b->argv + a;
		b->cmd[i].argvlen = b->argvlen + a;
		a += (size_t)b->cmd[i].argc;
	}
}

/* How many replicas a WAIT on node k asks for: the Cluster table's, or a
 * standalone server's INFO (asked again after each new connection). */
static unsigned fc_fleet_replicas(struct fc_fleet_batch *b, struct fc_redis *r, unsigned k)
{
	const char *argv[] = { "INFO", "replication" };
	struct fc_redis_cmd cmd = { .argc = 2, .argv = argv, .want = FC_REDIS_WANT_STR(FC_REDIS_STR_MAX) };
	struct fc_redis_node_info info[64];
	size_t i, n = fc_redis_nodes(r, info, 64);
	const char *at;
	struct fc_err err;

	for (i = 0; i < n && i < 64; i++)
		if (info[i].index == k)
			break;
	if (i == n || i == 64)
		return 0;
	if (fc_redis_mode(r) == FC_REDIS_CLUSTER)
		return info[i].replicas;
	if (b->info_connects == info[i].connects)
		return b->standalone_replicas;
	b->standalone_replicas = 0;
	if (!fc_redis_exec(r, &cmd, 1, &err) && cmd.reply->type == FC_REDIS_STR &&
	    (at = strstr(cmd.reply->str, "connected_slaves:")))
		b->standalone_replicas = (unsigned)strtoul(at + 17, NULL, 10);
	fc_redis_cmds_release(&cmd, 1);
	b->info_connects = info[i].connects;
	return b->standalone_replicas;
}

/* A WAIT after the calls that want grants, per node they go to: the
 * replicas it must reach, in b->wait_need. */
static int fc_fleet_waits(struct fc_fleet_batch *b, struct fc_redis *r)
{
	unsigned node[FC_FLEET_WAITS_MAX], k;
	size_t i, j, start;

	b->nwaits = 0;
	if (!b->wait_ms)
		return 0;
	for (i = 0; i < b->n; i++) {
		if (!b->call[i].want || b->call[i].adopt)
			continue;
		k = fc_redis_node_of(r, b->call[i].record);
		for (j = 0; j < b->nwaits && node[j] != k; j++)
			;
		if (j < b->nwaits || k == FC_REDIS_NO_NODE || b->nwaits == FC_FLEET_WAITS_MAX)
			continue;
		node[j] = k;
		b->wait_need[j] = fc_fleet_replicas(b, r, k);
		if (b->wait_max && b->wait_need[j] > b->wait_max)
			b->wait_need[j] = b->wait_max;
		start = b->nargs;
		if (fc_arg(b, "WAIT") || fc_arg(b, "%u", b->wait_need[j]) || fc_arg(b, "%u", b->wait_ms))
			return -1;
		b->cmd[b->n + j] = (struct fc_redis_cmd){ .argc = (int)(b->nargs - start),
							  .route = b->call[i].record,
							  .want = FC_REDIS_WANT_INT };
		b->nwaits++;
	}
	return 0;
}

/* Whether call i's grant is on as many replicas as its node has: a WAIT
 * after it on its connection counted them. */
static bool fc_fleet_confirmed(const struct fc_fleet_batch *b, size_t i)
{
	const struct fc_redis_cmd *w;
	size_t j;

	for (j = 0; j < b->nwaits; j++) {
		w = &b->cmd[b->n + j];
		if (fc_redis_ran_before(&b->cmd[i], w))
			return w->reply->integer >= (long long)b->wait_need[j];
	}
	return false;
}

/* The calls a node answered NOSCRIPT, again as EVAL (NOSCRIPT ran nothing),
 * in an exec of their own: after the WAITs, so never confirmed by them. */
static int fc_fleet_redo(struct fc_fleet_batch *b, struct fc_redis *r, struct fc_err *err)
{
	struct fc_redis_cmd *redo;
	size_t i, k = 0, again = 0, a;

	for (i = 0; i < b->n; i++)
		again += fc_noscript(&b->cmd[i]);
	if (!again)
		return 0;
	redo = calloc(again, sizeof(*redo));
	if (!redo)
		return fc_err_set(err, "fleet: out of memory");
	for (i = 0; i < b->n; i++) {
		if (!fc_noscript(&b->cmd[i]))
			continue;
		a = (size_t)(b->cmd[i].argv - b->argv);
		fc_redis_cmds_release(&b->cmd[i], 1);
		b->argv[a] = "EVAL";
		b->argvlen[a] = 4;
		b->argv[a + 1] = fc_fleet_sync_lua;
		b->argvlen[a + 1] = strlen(fc_fleet_sync_lua);
		redo[k++] = b->cmd[i];
	}
	b->noscript += again;
	fc_redis_exec(r, redo, again, err);
	for (i = 0, k = 0; i < b->n; i++)
		if (b->cmd[i].argv[1] == fc_fleet_sync_lua) {
			b->cmd[i] = redo[k++];
			b->res[i].confirmed = false;
		}
	free(redo);
	return 0;
}

long fc_fleet_batch_run(struct fc_fleet_batch *b, struct fc_redis *r, const struct fc_fleet_expect *x,
			struct fc_err *err)
{
	const struct fc_redis_want want = {
		.types = FC_REDIS_ARRAY, .elem_types = FC_REDIS_INT, .min_n = 2, .max_n = 7
	};
	size_t i, start, cap = b->cmd_cap;
	long bad = 0;

	if (fc_fleet_load(b, r, err))
		return -1;
	if (fc_grow((void **)&b->cmd, &cap, b->n + FC_FLEET_WAITS_MAX, sizeof(*b->cmd)))
		return fc_err_set(err, "fleet: out of memory"), -1;
	b->cmd_cap = cap;
	b->nargs = b->text_len = 0;
	for (i = 0; i < b->n; i++) {
		start = b->nargs;
		if (fc_fleet_args(b, &b->call[i], fc_redis_prefix(r)))
			return fc_err_set(err, "fleet: out of memory"), -1;
		b->cmd[i] = (struct fc_redis_cmd){ .argc = (int)(b->nargs - start), .key = 3, .want = want };
	}
	if (fc_fleet_waits(b, r))
		return fc_err_set(err, "fleet: out of memory"), -1;
	fc_fleet_point(b);
	fc_redis_exec(r, b->cmd, b->n + b->nwaits, err);
	for (i = 0; i < b->n; i++)
		b->res[i].confirmed = b->call[i].want && !b->call[i].adopt && fc_fleet_confirmed(b, i);
	if (fc_fleet_redo(b, r, err))
		return -1;
	for (i = 0; i < b->n; i++) {
		bool confirmed = b->res[i].confirmed;

		fc_fleet_result(b, i, &x[i]);
		b->res[i].confirmed = confirmed && b->res[i].status == FC_FLEET_R_DONE;
		if (b->res[i].status != FC_FLEET_R_DONE && b->res[i].status != FC_FLEET_R_OTHER_SET &&
		    b->res[i].status != FC_FLEET_R_REFUSED && !bad++)
			fc_err_set(err, "%s", b->res[i].msg);
	}
	fc_redis_cmds_release(b->cmd, b->n + b->nwaits);
	return bad;
}
