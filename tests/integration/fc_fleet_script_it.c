// SPDX-License-Identifier: BSD-2-Clause
/*
 * The fleet's script (loader/agent/fc_fleet_sync.lua) and its calls
 * (fc_fleet_redis.c) against a real redis-server, which
 * tests/integration/test_fleet_script.sh starts and names in
 * FC_FLEET_IT_REDIS (host:port). Each case works on records of its own
 * under a prefix of this run's. An admin connection (hiredis's blocking
 * client) reads the records, loses writes on purpose (HDEL) and listens on
 * the demand channel; the calls under test go through the agent's client.
 *
 * What the design's §7 asks of it: a call run twice grants once; a lost
 * grant re-asserted freezes the record; adopting changes nothing; a call
 * from another split changes nothing; grants come only from what is free
 * and are shared between those asking; a short node publishes demand only
 * when some other node holds credit; and over random calls of four nodes
 * (duplicates, losses of replies, releases, adoption) the allotments never
 * add up to more than N.
 */
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <unistd.h>
#include <cmocka.h>
#include <hiredis/hiredis.h>

#include "fc_fleet_redis.h"
#include "fc_fleet_sub.h"

static struct fc_redis *rc;
static redisContext *adm_ctx, *sub_ctx;
static char prefix[32];
static char adm_host[64];
static int adm_port;

/* ---- the admin connection ---- */

static redisReply *adm(const char *fmt, ...)
{
	redisReply *reply;
	va_list ap;

	va_start(ap, fmt);
	reply = redisvCommand(adm_ctx, fmt, ap);
	va_end(ap);
	if (!reply)
		fail_msg("admin: %s: %s", fmt, adm_ctx->errstr);
	if (reply->type == REDIS_REPLY_ERROR)
		fail_msg("admin: %s: %s", fmt, reply->str);
	return reply;
}

/* A field of a record as an integer; -1 when absent. */
static long long field(const char *rec, const char *name)
{
	redisReply *r = adm("HGET %s %s", rec, name);
	long long v = r->type == REDIS_REPLY_NIL ? -1 : strtoll(r->str, NULL, 10);

	freeReplyObject(r);
	return v;
}

/* The record's fields, sorted, as one line: to see that a call changed nothing. */
static void dump(const char *rec, char *out, size_t outlen)
{
	redisReply *r = adm("HGETALL %s", rec);
	char *pairs[128];
	size_t i, j, n = r->elements / 2, len = 0;

	assert_true(n < 128);
	for (i = 0; i < n; i++)
		pairs[i] = r->element[2 * i]->str;
	for (i = 1; i < n; i++) /* few fields: insertion sort */
		for (j = i; j && strcmp(pairs[j - 1], pairs[j]) > 0; j--) {
			char *t = pairs[j];
			pairs[j] = pairs[j - 1];
			pairs[j - 1] = t;
		}
	out[0] = 0;
	for (i = 0; i < n; i++) {
		redisReply *v = adm("HGET %s %s", rec, pairs[i]);

		len += (size_t)snprintf(out + len, outlen - len, "%s=%s ", pairs[i], v->str);
		freeReplyObject(v);
		assert_true(len < outlen);
	}
	freeReplyObject(r);
}

/* ---- calls under test ---- */

static const uint32_t nos[4] = { 1, 2, 3, 4 };

struct call {
	uint32_t no;
	uint64_t N, g_app, r, u, want;
	bool adopt, settled;
	uint64_t set;
	uint32_t nshares;
	const uint64_t *shares; /* of nodes 1..nshares */
};

static struct fc_fleet_batch batch;

static void rec_name(uint32_t id, uint64_t w, char *out)
{
	struct fc_fleet_rec rec = {
		.id = id, .epoch = 7, .kid = 0xabcdef0123456789ull, .kind = 'w', .unit = 60, .w = w
	};
	struct fc_err err;

	if (fc_fleet_rec_name(&rec, prefix, out, FC_FLEET_NAME_MAX, &err) < 0)
		fail_msg("%s", err.msg);
}

static void fill(struct fc_fleet_call *fc, const char *rec, const struct call *c)
{
	uint64_t n = 0;
	uint32_t j;

	for (j = 0; j < c->nshares; j++)
		n += c->shares[j];
	snprintf(fc->record, sizeof(fc->record), "%s", rec);
	fc->no = c->no;
	fc->limit = c->N;
	fc->n = n;
	fc->set = c->set ? c->set : 0x5e75e75e75e75e7ull;
	fc->ttl_ms = 60000;
	fc->adopt = c->adopt;
	fc->g_app = c->g_app;
	fc->r_lock = c->r;
	fc->used = c->u;
	fc->want = c->want;
	fc->settled = c->settled;
	fc->nshares = c->nshares;
	fc->share_no = nos;
	fc->share = c->shares;
}

/* One call; its result (which must have been answered). */
static struct fc_fleet_result call(const char *rec, const struct call *c)
{
	struct fc_fleet_expect x = { .nstar = c->N, .g_app = c->g_app, .adopt = c->adopt };
	struct fc_err err;
	long bad;

	fc_fleet_batch_reset(&batch);
	fill(fc_fleet_batch_add(&batch), rec, c);
	bad = fc_fleet_batch_run(&batch, rc, &x, &err);
	if (bad)
		fail_msg("%s: %s", rec, err.msg);
	return batch.res[0];
}

static const uint64_t even[4] = { 5, 5, 0, 0 }; /* N 10 over nodes 1 and 2 */
static const uint64_t four[4] = { 25, 25, 25, 25 };

/* ---- cases ---- */

/* Made on the first call, with the split; the TTL set then and only then. */
static void test_create(void **state)
{
	char rec[FC_FLEET_NAME_MAX];
	struct fc_fleet_result res;
	redisReply *r;

	(void)state;
	rec_name(1, 100, rec);
	res = call(rec, &(struct call){ .no = 1, .N = 10, .want = 3, .nshares = 2, .shares = even });
	assert_int_equal(res.status, FC_FLEET_R_DONE);
	assert_int_equal(res.g, 0); /* all of N is in shares: nothing free */
	assert_int_equal(res.free, 0);
	assert_int_equal(res.holders, 1); /* node 2 holds its 5, unused */
	assert_int_equal(field(rec, "v"), 1);
	assert_int_equal(field(rec, "n"), 10);
	assert_int_equal(field(rec, "s1"), 5);
	assert_int_equal(field(rec, "s2"), 5);
	assert_int_equal(field(rec, "q1"), 1); /* unmet */
	assert_int_equal(field(rec, "frozen"), -1);
	r = adm("PTTL %s", rec);
	assert_true(r->integer > 50000 && r->integer <= 60000);
	freeReplyObject(r);
	freeReplyObject(adm("PEXPIRE %s 5000", rec));
	res = call(rec, &(struct call){ .no = 2, .N = 10, .u = 1, .nshares = 2, .shares = even });
	r = adm("PTTL %s", rec);
	assert_true(r->integer > 0 && r->integer <= 5000);
	freeReplyObject(r);
	assert_int_equal(field(rec, "u2"), 1);
}

/* A call run twice (its reply lost, sent again) grants once. */
static void test_grant_once(void **state)
{
	char rec[FC_FLEET_NAME_MAX];
	struct fc_fleet_result res;

	(void)state;
	rec_name(2, 100, rec);
	res = call(rec, &(struct call){ .no = 2, .N = 10, .r = 4, .u = 1, .nshares = 2, .shares = even });
	assert_int_equal(res.R, 4);
	assert_int_equal(res.free, 4);
	res = call(rec, &(struct call){ .no = 1, .N = 10, .want = 3, .nshares = 2, .shares = even });
	assert_int_equal(res.g, 3);
	assert_int_equal(res.G, 3);
	assert_int_equal(res.free, 1);
	/* the same call again: node 1 never applied the first reply */
	res = call(rec, &(struct call){ .no = 1, .N = 10, .want = 3, .nshares = 2, .shares = even });
	assert_int_equal(res.g, 3);
	assert_int_equal(res.G, 3);
	assert_int_equal(res.free, 1);
	assert_int_equal(field(rec, "G"), 3);
	/* applied now, asking again: the last one */
	res = call(rec, &(struct call){ .no = 1, .N = 10, .g_app = 3, .want = 3, .nshares = 2, .shares = even });
	assert_int_equal(res.g, 4);
	assert_int_equal(res.free, 0);
	assert_int_equal(field(rec, "q1"), 1);
}

/* A grant Redis lost (HDEL of g1, G back), re-asserted: the record freezes;
 * no one gets a grant in it any more, totals still move. */
static void test_reassert_freezes(void **state)
{
	char rec[FC_FLEET_NAME_MAX];
	struct fc_fleet_result res;

	(void)state;
	rec_name(3, 100, rec);
	call(rec, &(struct call){ .no = 2, .N = 10, .r = 4, .nshares = 2, .shares = even });
	res = call(rec, &(struct call){ .no = 1, .N = 10, .want = 2, .nshares = 2, .shares = even });
	assert_int_equal(res.g, 2);
	assert_false(res.frozen);
	freeReplyObject(adm("HDEL %s g1", rec));
	freeReplyObject(adm("HSET %s G 0", rec));
	res = call(rec, &(struct call){ .no = 1, .N = 10, .g_app = 2, .want = 1, .nshares = 2, .shares = even });
	assert_true(res.frozen);
	assert_int_equal(res.g, 2);
	assert_int_equal(res.G, 2);
	assert_int_equal(field(rec, "frozen"), 1);
	assert_int_equal(field(rec, "g1"), 2);
	/* free is 2, but nothing is granted in a frozen record */
	res = call(rec, &(struct call){ .no = 2, .N = 10, .r = 4, .want = 2, .nshares = 2, .shares = even });
	assert_int_equal(res.free, 2);
	assert_int_equal(res.g, 0);
	assert_true(res.frozen);
	res = call(rec, &(struct call){ .no = 2, .N = 10, .r = 5, .u = 1, .nshares = 2, .shares = even });
	assert_int_equal(res.r, 5);
	assert_int_equal(field(rec, "u2"), 1);
}

/* A record Redis does not hold, and a node that applied grants of it: a
 * write was lost; made frozen. A release alone is no such sign. */
static void test_history_on_new_record(void **state)
{
	char rec[FC_FLEET_NAME_MAX];
	struct fc_fleet_result res;

	(void)state;
	rec_name(4, 100, rec);
	res = call(rec, &(struct call){ .no = 1, .N = 10, .g_app = 2, .want = 5, .nshares = 2, .shares = even });
	assert_true(res.frozen);
	assert_int_equal(res.g, 2);
	assert_int_equal(res.G, 2);
	/* a release may be the first call: locked before it is sent */
	rec_name(4, 101, rec);
	res = call(rec, &(struct call){ .no = 1, .N = 10, .r = 1, .nshares = 2, .shares = even });
	assert_false(res.frozen);
	assert_int_equal(res.R, 1);
}

/* Adopting (an agent restarted) tells this node's totals and writes nothing. */
static void test_adopt(void **state)
{
	char rec[FC_FLEET_NAME_MAX], before[2048], after[2048];
	struct fc_fleet_result res;

	(void)state;
	rec_name(5, 100, rec);
	call(rec, &(struct call){ .no = 2, .N = 10, .r = 3, .u = 2, .nshares = 2, .shares = even });
	call(rec, &(struct call){ .no = 1, .N = 10, .want = 2, .u = 4, .nshares = 2, .shares = even });
	dump(rec, before, sizeof(before));
	res = call(rec,
		   &(struct call){ .no = 1, .N = 10, .adopt = true, .want = 9, .r = 7, .nshares = 2, .shares = even });
	dump(rec, after, sizeof(after));
	assert_string_equal(before, after);
	assert_int_equal(res.status, FC_FLEET_R_DONE);
	assert_int_equal(res.g, 2);
	assert_int_equal(res.r, 0);
	assert_int_equal(res.G, 2);
	assert_int_equal(res.R, 3);
	res = call(rec, &(struct call){ .no = 2, .N = 10, .adopt = true, .nshares = 2, .shares = even });
	assert_int_equal(res.g, 0);
	assert_int_equal(res.r, 3);
}

/* A call from another node set or another n: nothing recorded, the
 * record's n told. */
static void test_set_mismatch(void **state)
{
	char rec[FC_FLEET_NAME_MAX], before[2048], after[2048];
	const uint64_t other[4] = { 4, 6, 0, 0 };
	const uint64_t more[4] = { 6, 6, 0, 0 };
	struct fc_fleet_result res;

	(void)state;
	rec_name(6, 100, rec);
	call(rec, &(struct call){ .no = 2, .N = 10, .r = 2, .nshares = 2, .shares = even });
	dump(rec, before, sizeof(before));
	res = call(rec, &(struct call){ .no = 1, .N = 10, .want = 2, .set = 0x1234, .nshares = 2, .shares = other });
	assert_int_equal(res.status, FC_FLEET_R_OTHER_SET);
	assert_int_equal(res.n, 10);
	res = call(rec, &(struct call){ .no = 1, .N = 12, .want = 2, .nshares = 2, .shares = more });
	assert_int_equal(res.status, FC_FLEET_R_OTHER_SET);
	assert_int_equal(res.n, 10);
	dump(rec, after, sizeof(after));
	assert_string_equal(before, after);
}

/* Those asking share what is free; N raised mid-window is free at once,
 * N lowered grants nothing more. */
static void test_share_and_limit_change(void **state)
{
	char rec[FC_FLEET_NAME_MAX];
	struct fc_fleet_result res;

	(void)state;
	rec_name(7, 100, rec);
	/* node 3 asks first (no share: not in the set), unmet: q3 */
	res = call(rec, &(struct call){ .no = 3, .N = 10, .want = 5, .nshares = 2, .shares = even });
	assert_int_equal(res.g, 0);
	call(rec, &(struct call){ .no = 2, .N = 10, .r = 4, .nshares = 2, .shares = even });
	/* node 1 asks with node 3 asking: half of the 4 */
	res = call(rec, &(struct call){ .no = 1, .N = 10, .want = 5, .nshares = 2, .shares = even });
	assert_int_equal(res.g, 2);
	res = call(rec, &(struct call){ .no = 3, .N = 10, .want = 5, .nshares = 2, .shares = even });
	assert_int_equal(res.g, 1); /* ceil(2 / 2): node 1 still asks */
	/* N raised to 13: 3 more free at once */
	res = call(rec, &(struct call){ .no = 3, .N = 13, .g_app = 1, .want = 5, .nshares = 2, .shares = even });
	assert_int_equal(res.g, 3); /* ceil(4 / 2) */
	/* lowered to 8: free is negative, nothing granted */
	res = call(rec, &(struct call){ .no = 1, .N = 8, .g_app = 2, .want = 5, .nshares = 2, .shares = even });
	assert_int_equal(res.g, 2);
	assert_true(res.free < 0);
}

/* A node releases at most its share and its grants: a release total above
 * that (a hostile or corrupt caller) is refused whole, the record left as it
 * was, and only that call fails: another in the same batch is answered. */
static void test_release_over_allotment(void **state)
{
	char rec[FC_FLEET_NAME_MAX], rec2[FC_FLEET_NAME_MAX], before[2048], after[2048];
	struct fc_fleet_expect x[2] = { { .nstar = 10 }, { .nstar = 10 } };
	struct fc_fleet_result res;
	struct fc_err err;

	(void)state;
	rec_name(13, 100, rec);
	rec_name(14, 100, rec2);
	call(rec, &(struct call){ .no = 1, .N = 10, .want = 3, .nshares = 2, .shares = even });
	dump(rec, before, sizeof(before));
	fc_fleet_batch_reset(&batch);
	fill(fc_fleet_batch_add(&batch), rec, &(struct call){ .no = 2, .N = 10, .r = 6, .nshares = 2, .shares = even });
	fill(fc_fleet_batch_add(&batch), rec2, &(struct call){ .no = 2, .N = 10, .r = 4, .nshares = 2, .shares = even });
	assert_int_equal(fc_fleet_batch_run(&batch, rc, x, &err), 0); /* the round goes on */
	assert_int_equal(batch.res[0].status, FC_FLEET_R_REFUSED);
	printf("# %s\n", batch.res[0].msg);
	assert_non_null(strstr(batch.res[0].msg, "node 2 releases 6, more than its share 5 and grants 0"));
	assert_int_equal(batch.res[1].status, FC_FLEET_R_DONE);
	assert_int_equal(batch.res[1].R, 4);
	dump(rec, after, sizeof(after));
	assert_string_equal(before, after);
	/* its whole share: taken; node 1 is granted from it */
	res = call(rec, &(struct call){ .no = 2, .N = 10, .r = 5, .nshares = 2, .shares = even });
	assert_int_equal(res.status, FC_FLEET_R_DONE);
	assert_int_equal(res.R, 5);
	res = call(rec, &(struct call){ .no = 1, .N = 10, .want = 3, .nshares = 2, .shares = even });
	assert_int_equal(res.g, 3);
	/* with grants, share + grants: node 1 (5 + 3) may release 8, not 9 */
	fc_fleet_batch_reset(&batch);
	fill(fc_fleet_batch_add(&batch), rec, &(struct call){ .no = 1, .N = 10, .g_app = 3, .r = 9, .nshares = 2, .shares = even });
	x[0].g_app = 3;
	assert_int_equal(fc_fleet_batch_run(&batch, rc, x, &err), 0);
	assert_int_equal(batch.res[0].status, FC_FLEET_R_REFUSED);
	res = call(rec, &(struct call){ .no = 1, .N = 10, .g_app = 3, .r = 8, .nshares = 2, .shares = even });
	assert_int_equal(res.R, 13);
}

/* Read one message of the demand channel, within 2 s. */
static void next_message(char *out, size_t outlen)
{
	redisReply *r = NULL;

	assert_int_equal(redisGetReply(sub_ctx, (void **)&r), REDIS_OK);
	assert_non_null(r);
	assert_int_equal(r->type, REDIS_REPLY_ARRAY);
	assert_int_equal(r->elements, 3);
	assert_string_equal(r->element[0]->str, "message");
	snprintf(out, outlen, "%.*s", (int)r->element[2]->len, r->element[2]->str);
	freeReplyObject(r);
}

/* Short, with another node holding unused credit: the demand is published,
 * and it parses back to the record and the asking node. A holder that says
 * it is settled is not one: nothing is published. */
static void test_demand(void **state)
{
	char rec[FC_FLEET_NAME_MAX], msg[256], chan[64];
	struct fc_fleet_demand d;
	struct fc_fleet_result res;
	struct fc_err err;
	redisReply *r;

	(void)state;
	snprintf(chan, sizeof(chan), "%sdemand", prefix);
	r = redisCommand(sub_ctx, "SUBSCRIBE %s", chan);
	assert_non_null(r);
	freeReplyObject(r);
	rec_name(8, 100, rec);
	res = call(rec, &(struct call){ .no = 1, .N = 10, .want = 2, .nshares = 2, .shares = even });
	assert_int_equal(res.holders, 1);
	next_message(msg, sizeof(msg));
	assert_int_equal(fc_fleet_demand_parse(msg, strlen(msg), prefix, &d, &err), 0);
	assert_int_equal(d.no, 1);
	assert_int_equal(d.rec.id, 8);
	assert_int_equal(d.rec.epoch, 7);
	assert_int_equal(d.rec.kid, 0xabcdef0123456789ull);
	assert_int_equal(d.rec.kind, 'w');
	assert_int_equal(d.rec.unit, 60);
	assert_int_equal(d.rec.w, 100);
	/* node 2 settles: holds nothing to release */
	call(rec, &(struct call){ .no = 2, .N = 10, .u = 1, .settled = true, .nshares = 2, .shares = even });
	res = call(rec, &(struct call){ .no = 1, .N = 10, .want = 2, .nshares = 2, .shares = even });
	assert_int_equal(res.holders, 0);
	freeReplyObject(adm("PUBLISH %s sentinel", chan));
	next_message(msg, sizeof(msg));
	assert_string_equal(msg, "sentinel");
	r = redisCommand(sub_ctx, "UNSUBSCRIBE %s", chan);
	freeReplyObject(r);
}

/* A gcra key's lease pool (P{...}:l<lease_ms>.<lw>), as the engine calls
 * it: N = n = B with the split of B, so free = R - G, what was donated and
 * not yet granted, and the nodes with a share that neither ask nor said
 * they hold nothing are the holders a short pool publishes its demand to.
 * A grant called twice (its reply lost) is made once; a donation whose
 * write was lost, re-asserted, counts once. */
static void test_pool(void **state)
{
	static const uint64_t b[4] = { 2, 2, 2, 2 }; /* B 8 over four nodes */
	struct fc_fleet_rec pool = {
		.id = 9, .epoch = 7, .kid = 0xabcdef0123456789ull, .kind = 'l', .unit = 1000, .w = 5
	};
	char rec[FC_FLEET_NAME_MAX], msg[256], chan[64];
	struct fc_fleet_demand d;
	struct fc_fleet_result res;
	struct fc_err err;
	redisReply *r;

	(void)state;
	assert_true(fc_fleet_rec_name(&pool, prefix, rec, sizeof(rec), &err) > 0);
	snprintf(chan, sizeof(chan), "%sdemand", prefix);
	r = redisCommand(sub_ctx, "SUBSCRIBE %s", chan);
	assert_non_null(r);
	freeReplyObject(r);
	/* node 1 short: nothing donated yet, three holders: published */
	res = call(rec, &(struct call){ .no = 1, .N = 8, .want = 3, .nshares = 4, .shares = b });
	assert_int_equal(res.g, 0);
	assert_int_equal(res.free, 0);
	assert_int_equal(res.holders, 3);
	next_message(msg, sizeof(msg));
	assert_int_equal(fc_fleet_demand_parse(msg, strlen(msg), prefix, &d, &err), 0);
	assert_int_equal(d.rec.kind, 'l');
	assert_int_equal(d.rec.unit, 1000);
	assert_int_equal(d.rec.w, 5);
	assert_int_equal(d.no, 1);
	/* node 2 donates its 2 tokens, and has nothing more */
	res = call(rec, &(struct call){ .no = 2, .N = 8, .r = 2, .settled = true, .nshares = 4, .shares = b });
	assert_int_equal(res.R, 2);
	assert_int_equal(res.free, 2);
	/* node 1 asks again: granted the 2; the same call again (its reply
	 * lost, nothing applied): still 2, G 2 */
	res = call(rec, &(struct call){ .no = 1, .N = 8, .want = 3, .nshares = 4, .shares = b });
	assert_int_equal(res.g, 2);
	assert_int_equal(res.free, 0);
	res = call(rec, &(struct call){ .no = 1, .N = 8, .want = 3, .nshares = 4, .shares = b });
	assert_int_equal(res.g, 2);
	assert_int_equal(res.G, 2);
	assert_int_equal(field(rec, "G"), 2);
	/* node 2's donation lost (a restart without it), re-asserted twice:
	 * counted once, nothing more free */
	freeReplyObject(adm("HDEL %s r2", rec));
	freeReplyObject(adm("HSET %s R 0", rec));
	res = call(rec, &(struct call){ .no = 2, .N = 8, .r = 2, .settled = true, .nshares = 4, .shares = b });
	assert_int_equal(res.R, 2);
	res = call(rec, &(struct call){ .no = 2, .N = 8, .r = 2, .settled = true, .nshares = 4, .shares = b });
	assert_int_equal(res.R, 2);
	assert_int_equal(res.free, 0);
	assert_int_equal(field(rec, "R"), 2);
	/* nodes 3 and 4 have nothing: no holder left, node 1 is told so */
	call(rec, &(struct call){ .no = 3, .N = 8, .settled = true, .nshares = 4, .shares = b });
	call(rec, &(struct call){ .no = 4, .N = 8, .settled = true, .nshares = 4, .shares = b });
	/* (the calls still short while 3 and 4 held published again: read up to here) */
	freeReplyObject(adm("PUBLISH %s mark", chan));
	do
		next_message(msg, sizeof(msg));
	while (strcmp(msg, "mark"));
	res = call(rec, &(struct call){ .no = 1, .N = 8, .g_app = 2, .want = 1, .nshares = 4, .shares = b });
	assert_int_equal(res.g, 2);
	assert_int_equal(res.free, 0);
	assert_int_equal(res.holders, 0);
	/* no demand published for that one */
	freeReplyObject(adm("PUBLISH %s sentinel", chan));
	next_message(msg, sizeof(msg));
	assert_string_equal(msg, "sentinel");
	r = redisCommand(sub_ctx, "UNSUBSCRIBE %s", chan);
	freeReplyObject(r);
}

/* The script flushed from the server: the call goes again as EVAL. */
static void test_noscript(void **state)
{
	char rec[FC_FLEET_NAME_MAX];
	struct fc_fleet_result res;
	uint64_t before = batch.noscript;

	(void)state;
	freeReplyObject(adm("SCRIPT FLUSH"));
	rec_name(9, 100, rec);
	res = call(rec, &(struct call){ .no = 2, .N = 10, .r = 1, .nshares = 2, .shares = even });
	assert_int_equal(res.R, 1);
	assert_int_equal(batch.noscript, before + 1);
	res = call(rec, &(struct call){ .no = 2, .N = 10, .r = 2, .nshares = 2, .shares = even });
	assert_int_equal(res.R, 2);
	assert_int_equal(batch.noscript, before + 1); /* cached by the EVAL */
}

/* A grant is confirmed only by a WAIT after it that counted the server's
 * replica: with the replica stopped (SIGSTOP), the same call is not. */
static void test_wait(void **state)
{
	const char *pid_env = getenv("FC_FLEET_IT_REPLICA_PID");
	char rec[FC_FLEET_NAME_MAX];
	struct fc_fleet_result res;
	pid_t replica;

	(void)state;
	if (!pid_env)
		skip();
	replica = (pid_t)atoi(pid_env);
	rec_name(11, 100, rec);
	call(rec, &(struct call){ .no = 2, .N = 10, .r = 5, .nshares = 2, .shares = even });
	res = call(rec, &(struct call){ .no = 1, .N = 10, .want = 1, .nshares = 2, .shares = even });
	assert_int_equal(res.g, 1);
	assert_false(res.confirmed); /* no WAIT asked */
	batch.wait_ms = 1000;
	res = call(rec, &(struct call){ .no = 1, .N = 10, .g_app = 1, .want = 1, .nshares = 2, .shares = even });
	assert_int_equal(res.g, 2);
	assert_true(res.confirmed);
	assert_int_equal(batch.nwaits, 1);
	assert_int_equal(batch.wait_need[0], 1);
	/* a call that wants nothing sends no WAIT, and is not confirmed */
	res = call(rec, &(struct call){ .no = 1, .N = 10, .g_app = 2, .nshares = 2, .shares = even });
	assert_int_equal(batch.nwaits, 0);
	assert_false(res.confirmed);
	assert_int_equal(kill(replica, SIGSTOP), 0);
	batch.wait_ms = 200;
	res = call(rec, &(struct call){ .no = 1, .N = 10, .g_app = 2, .want = 1, .nshares = 2, .shares = even });
	kill(replica, SIGCONT);
	assert_int_equal(res.g, 3);
	assert_false(res.confirmed);
	/* the same call again once it is back: a duplicate, confirmed now */
	batch.wait_ms = 1000;
	res = call(rec, &(struct call){ .no = 1, .N = 10, .g_app = 2, .want = 1, .nshares = 2, .shares = even });
	assert_int_equal(res.g, 3);
	assert_true(res.confirmed);
	batch.wait_ms = 0;
}

static int n_msgs;
static char last_msg[256];

static void on_msg(void *arg, const char *msg, size_t len)
{
	(void)arg;
	n_msgs++;
	snprintf(last_msg, sizeof(last_msg), "%.*s", (int)len, msg);
}

/* In a Cluster: 30 records over the slots, one pipeline per primary and a
 * WAIT on each that a call wanting a grant went to (3, each for its one
 * replica); the script loaded on one primary, EVAL on the others once
 * (NOSCRIPT), EVALSHA after; those redone after the WAIT are confirmed only
 * by the next call. A demand published by a script on any primary is heard
 * by the subscriber on one node. */
static void test_cluster(void **state)
{
	const char *urls = getenv("FC_FLEET_IT_CLUSTER");
	struct fc_fleet_expect x[30];
	struct fc_redis_conf conf;
	struct fc_fleet_batch b;
	struct fc_fleet_sub sub;
	struct fc_redis *r;
	struct fc_err err;
	char cprefix[32];
	int i, k, all;

	(void)state;
	if (!urls || !*urls)
		skip();
	snprintf(cprefix, sizeof(cprefix), "fic%d:", (int)getpid());
	fc_redis_conf_init(&conf);
	conf.timeout_ms = 3000;
	if (fc_redis_conf_urls(&conf, urls, &err) || fc_redis_conf_prefix(&conf, cprefix, &err))
		fail_msg("%s", err.msg);
	r = fc_redis_open(&conf, &err);
	assert_non_null(r);
	fc_fleet_sub_init(&sub);
	for (i = 0; i < 20 && !sub.ready; i++) {
		fc_fleet_sub_poll(&sub, r, on_msg, NULL);
		usleep(20000);
	}
	assert_true(sub.ready);
	fc_fleet_batch_init(&b);
	b.wait_ms = 1000;
	for (k = 0; k < 2; k++) {
		fc_fleet_batch_reset(&b);
		for (i = 0; i < 30; i++) {
			struct fc_fleet_rec rec = { .id = 1,
						    .epoch = 1,
						    .kid = 0x100000000ULL + (uint64_t)i * 0x9e3779b9ULL,
						    .kind = 'w',
						    .unit = 60,
						    .w = 100 };
			struct fc_fleet_call *c = fc_fleet_batch_add(&b);

			assert_true(fc_fleet_rec_name(&rec, cprefix, c->record, sizeof(c->record), &err) > 0);
			*c = (struct fc_fleet_call){ .no = 1,
						     .limit = 10,
						     .n = 10,
						     .set = 7,
						     .ttl_ms = 60000,
						     .want = 1,
						     .nshares = 2,
						     .share_no = nos,
						     .share = even };
			assert_true(fc_fleet_rec_name(&rec, cprefix, c->record, sizeof(c->record), &err) > 0);
			x[i] = (struct fc_fleet_expect){ .nstar = 10 };
		}
		if (fc_fleet_batch_run(&b, r, x, &err))
			fail_msg("%s", err.msg);
		assert_int_equal(b.nwaits, 3);
		for (i = 0; i < 3; i++)
			assert_int_equal(b.wait_need[i], 1);
		for (i = 0, all = 0; i < 30; i++) {
			assert_int_equal(b.res[i].status, FC_FLEET_R_DONE);
			assert_int_equal(b.res[i].holders, 1); /* node 2's share */
			all += b.res[i].confirmed;
		}
		if (k == 0) {
			printf("# first batch: %llu calls redone as EVAL, %d confirmed\n",
			       (unsigned long long)b.noscript, all);
			assert_true(b.noscript > 0 && b.noscript < 30);
		} else {
			assert_int_equal(all, 30); /* every call after its primary's WAIT */
		}
	}
	/* the demands (node 2 holds its share) reach the subscriber */
	for (i = 0; i < 50 && n_msgs < 60; i++) {
		fc_fleet_sub_poll(&sub, r, on_msg, NULL);
		usleep(20000);
	}
	printf("# %d demand messages heard, the last: %s\n", n_msgs, last_msg);
	assert_int_equal(n_msgs, 60);
	assert_non_null(strstr(last_msg, cprefix));
	fc_fleet_sub_close(&sub);
	fc_fleet_batch_free(&b);
	fc_redis_close(r);
}

/* A node's local view in the random run. */
struct node {
	uint64_t g_app, r_lock, used;
	bool restarted;
};

/* Redis loses node no's grants (a restart without AOF, a replica promoted
 * that had not confirmed them); the node's next call re-asserts them and
 * freezes the record. */
static void lose_grant(const char *rec, struct node *n, uint32_t no)
{
	struct fc_fleet_result res;
	long long g;
	char name[16];

	snprintf(name, sizeof(name), "g%" PRIu32, no);
	g = field(rec, name);
	if (g <= 0 || n->restarted)
		return;
	freeReplyObject(adm("HDEL %s %s", rec, name));
	freeReplyObject(adm("HINCRBY %s G %lld", rec, -g));
	res = call(rec, &(struct call){ .no = no,
					.N = 100,
					.g_app = n->g_app,
					.r = n->r_lock,
					.u = n->used,
					.nshares = 4,
					.shares = four });
	assert_true(res.frozen || n->g_app == 0);
	n->g_app = res.g;
}

/* Σ_j (s_j + g_app_j − r_lock_j) ≤ N, and n + G − R ≤ N in Redis, over
 * 600 random calls of four nodes: grants whose replies are lost (applied
 * later, or never), calls repeated, releases of what is unused, restarts
 * that adopt, and lost writes re-asserted. Several calls go in one batch. */
static void test_invariant_random(void **state)
{
	char rec[FC_FLEET_NAME_MAX];
	struct node nd[4] = { 0 };
	unsigned seed = (unsigned)getpid(), step, k;
	struct fc_fleet_expect x[4];
	struct fc_err err;
	long long G, R, allot;

	(void)state;
	printf("# seed %u\n", seed);
	srandom(seed);
	rec_name(10, 100, rec);
	for (step = 0; step < 150; step++) {
		unsigned ncalls = 1 + (unsigned)(random() % 4);
		uint32_t who[4];

		fc_fleet_batch_reset(&batch);
		for (k = 0; k < ncalls; k++) {
			struct fc_fleet_call *c = fc_fleet_batch_add(&batch);
			uint32_t i = (uint32_t)(random() % 4);
			struct node *n = &nd[i];
			uint64_t allot_i = four[i] + n->g_app - n->r_lock;

			who[k] = i;
			fill(c, rec, &(struct call){ .no = i + 1, .N = 100, .nshares = 4, .shares = four });
			c->g_app = n->g_app;
			c->adopt = n->restarted;
			if (random() % 3 == 0 && allot_i > n->used) /* use some */
				n->used += 1 + (uint64_t)random() % (allot_i - n->used);
			if (random() % 4 == 0 && allot_i > n->used) /* lock and release the rest */
				n->r_lock += allot_i - n->used;
			c->r_lock = n->r_lock;
			c->used = n->used;
			c->want = random() % 2 ? 1 + (uint64_t)random() % 30 : 0;
			x[k] = (struct fc_fleet_expect){ .nstar = 100, .g_app = n->g_app, .adopt = n->restarted };
		}
		if (fc_fleet_batch_run(&batch, rc, x, &err))
			fail_msg("step %u: %s", step, err.msg);
		for (k = 0; k < ncalls; k++) {
			struct node *n = &nd[who[k]];
			const struct fc_fleet_result *res = &batch.res[k];

			assert_int_equal(res->status, FC_FLEET_R_DONE);
			if (n->restarted) { /* adopts what Redis says it applied */
				n->g_app = res->g;
				n->restarted = false;
			} else if (random() % 5) { /* else the reply is "lost": not applied */
				assert_true(res->g >= n->g_app);
				n->g_app = res->g;
			}
			if (random() % 40 == 0) /* the agent restarts: adopts next */
				n->restarted = true;
		}
		if (step % 50 == 49)
			lose_grant(rec, &nd[step / 50 % 4], step / 50 % 4 + 1);
		G = field(rec, "G");
		R = field(rec, "R");
		assert_true(100 + G - R <= 100);
		for (allot = 0, k = 0; k < 4; k++)
			allot += (long long)(four[k] + nd[k].g_app - nd[k].r_lock);
		assert_true(allot <= 100);
	}
	printf("# G %lld R %lld, allotted %lld\n", G, R, allot);
}

static int setup(void **state)
{
	const char *addr = getenv("FC_FLEET_IT_REDIS");
	struct fc_redis_conf conf;
	struct fc_err err;
	char url[128];

	(void)state;
	if (!addr || sscanf(addr, "%63[^:]:%d", adm_host, &adm_port) != 2) {
		fprintf(stderr, "fc_fleet_script_it: FC_FLEET_IT_REDIS is not host:port: run "
				"tests/integration/test_fleet_script.sh\n");
		exit(2);
	}
	snprintf(prefix, sizeof(prefix), "fit%d:", (int)getpid());
	snprintf(url, sizeof(url), "redis://%s", addr);
	fc_redis_conf_init(&conf);
	conf.timeout_ms = 2000;
	if (fc_redis_conf_urls(&conf, url, &err) || fc_redis_conf_prefix(&conf, prefix, &err))
		fail_msg("%s", err.msg);
	rc = fc_redis_open(&conf, &err);
	if (!rc || fc_redis_connect(rc, &err))
		fail_msg("%s", err.msg);
	adm_ctx = redisConnectWithTimeout(adm_host, adm_port, (struct timeval){ .tv_sec = 3 });
	sub_ctx = redisConnectWithTimeout(adm_host, adm_port, (struct timeval){ .tv_sec = 3 });
	if (!adm_ctx || adm_ctx->err || !sub_ctx || sub_ctx->err)
		fail_msg("admin connection to %s failed", addr);
	redisSetTimeout(sub_ctx, (struct timeval){ .tv_sec = 2 });
	fc_fleet_batch_init(&batch);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	fc_fleet_batch_free(&batch);
	fc_redis_close(rc);
	redisFree(adm_ctx);
	redisFree(sub_ctx);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_create),
		cmocka_unit_test(test_grant_once),
		cmocka_unit_test(test_reassert_freezes),
		cmocka_unit_test(test_history_on_new_record),
		cmocka_unit_test(test_adopt),
		cmocka_unit_test(test_set_mismatch),
		cmocka_unit_test(test_share_and_limit_change),
		cmocka_unit_test(test_release_over_allotment),
		cmocka_unit_test(test_demand),
		cmocka_unit_test(test_pool),
		cmocka_unit_test(test_noscript),
		cmocka_unit_test(test_wait),
		cmocka_unit_test(test_cluster),
		cmocka_unit_test(test_invariant_random),
	};

	return cmocka_run_group_tests_name("fleet script against a real redis-server", tests, setup, teardown);
}
