// SPDX-License-Identifier: BSD-2-Clause
/*
 * What Redis (or anyone on its path) sends the fleet: the script's replies,
 * read through the client's reader and checked by fc_fleet_reply_parse
 * against what a node knows; and the demand channel's messages, parsed by
 * fc_fleet_demand_parse. Properties, besides not crashing or leaking: a
 * reply that passes keeps every bound the agent relies on before it touches
 * a credit word (totals below 2^53, G and R at most N* apart, this node's
 * g and r within the record's, g at least what was applied unless frozen
 * or adopting, free within N*, holders a node count); a refused one fills
 * nothing; a message that parses is byte for byte the record's name and
 * " <node>" that fc_fleet_rec_name makes of what it parsed to.
 *
 * The heartbeat's replies too (fc_fleet_beat_parse, after the client's
 * check of their shape): TIME and every node's value; what is taken keeps
 * its bounds (ages from a ts within 2^53 ms, at most FC_FLEET_BEAT_NODES
 * nodes and FC_FLEET_BEAT_POLS sums), UBSan catches an overflow.
 *
 * The first byte picks: 0 mod 4, replies (the next bytes set N*, G applied
 * and adopt; the rest is protocol); odd, a demand message (under the prefix
 * "freqctl:"); 2 mod 4, heartbeat replies (protocol).
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "fc_fleet_beat.h"
#include "fc_fleet_redis.h"
#include "fc_fuzz.h"

static void reply_check(const struct fc_redis_reply *r, const struct fc_fleet_expect *x)
{
	struct fc_fleet_result res;
	struct fc_err err;
	int64_t nstar = (int64_t)x->nstar;

	if (fc_fleet_reply_parse(r, x, &res, &err) < 0) {
		if (res.status || res.g || res.G || res.free || res.holders)
			fc_fuzz_fail("refused (%s), yet filled", err.msg);
		if (strnlen(err.msg, sizeof(err.msg)) == sizeof(err.msg))
			fc_fuzz_fail("an unterminated message");
		return;
	}
	if (res.status == FC_FLEET_R_OTHER_SET)
		return;
	if (res.status != FC_FLEET_R_DONE)
		fc_fuzz_fail("accepted with status %d", res.status);
	if (res.G > (uint64_t)FC_FLEET_TOTAL_MAX || res.R > (uint64_t)FC_FLEET_TOTAL_MAX || res.g > res.G ||
	    res.r > res.R)
		fc_fuzz_fail("totals g %" PRIu64 " r %" PRIu64 " G %" PRIu64 " R %" PRIu64, res.g, res.r, res.G, res.R);
	if ((int64_t)res.G - (int64_t)res.R > nstar || (int64_t)res.R - (int64_t)res.G > nstar)
		fc_fuzz_fail("G %" PRIu64 " and R %" PRIu64 " more than %" PRId64 " apart", res.G, res.R, nstar);
	if (res.free > nstar || res.free < -nstar || res.holders > FC_FLEET_NODE_MAX)
		fc_fuzz_fail("free %" PRId64 " holders %" PRIu32, res.free, res.holders);
	if (!res.frozen && !x->adopt && res.g < x->g_app)
		fc_fuzz_fail("g %" PRIu64 " below the %" PRIu64 " applied", res.g, x->g_app);
}

static void replies(struct fc_fuzz_in *in)
{
	struct fc_fleet_expect x = { 0 };
	struct fc_redis_reader rd;
	struct fc_redis_reply *r;
	struct fc_err err;
	unsigned i;

	for (i = 0; i < 5; i++) /* N* up to 2^40, as the limits allow */
		x.nstar = x.nstar << 8 | fc_fuzz_byte(in);
	x.nstar &= (1ULL << 40) - 1;
	x.g_app = fc_fuzz_byte(in);
	x.adopt = fc_fuzz_byte(in) & 1;
	if (fc_redis_reader_init(&rd, &err) < 0)
		fc_fuzz_fail("reader: %s", err.msg);
	if (fc_redis_reader_feed(&rd, in->p, in->n, &err) == 0)
		while (fc_redis_reader_next(&rd, &r, &err) == 0 && r) {
			reply_check(r, &x);
			fc_redis_reply_free(r);
		}
	fc_redis_reader_free(&rd);
}

static void beats(const uint8_t *p, size_t n)
{
	static struct fc_fleet_beat b; /* 40 KiB: kept off the stack */
	const int64_t t0 = 1800000000000000000LL;
	struct fc_redis_reader rd;
	struct fc_redis_reply *r;
	struct fc_err err;
	size_t i;

	memset(&b, 0, sizeof(b));
	if (fc_redis_reader_init(&rd, &err) < 0)
		fc_fuzz_fail("reader: %s", err.msg);
	if (fc_redis_reader_feed(&rd, p, n, &err) == 0)
		while (fc_redis_reader_next(&rd, &r, &err) == 0 && r) {
			if (fc_redis_reply_check(r, &FC_FLEET_BEAT_WANT, &err) == 0)
				fc_fleet_beat_parse(&b, r, t0, t0 + 1000000, &err);
			fc_redis_reply_free(r);
		}
	fc_redis_reader_free(&rd);
	if (b.nnodes > FC_FLEET_BEAT_NODES || b.nused > FC_FLEET_BEAT_POLS || b.nsamples > FC_FLEET_BEAT_SAMPLES)
		fc_fuzz_fail("nodes %zu, sums %zu, samples %u", b.nnodes, b.nused, b.nsamples);
	for (i = 0; i < b.nnodes; i++)
		if (b.nodes[i].age_ms < t0 / 1000000 - FC_FLEET_BEAT_TS_MAX || b.nodes[i].age_ms > t0 / 1000000 + 1)
			fc_fuzz_fail("node %zu: age %" PRId64 " ms", i, b.nodes[i].age_ms);
}

static void demand(const uint8_t *p, size_t n)
{
	char name[FC_FLEET_NAME_MAX], again[FC_FLEET_NAME_MAX + 16];
	struct fc_fleet_demand d;
	struct fc_err err;
	int len;

	if (fc_fleet_demand_parse(p, n, "freqctl:", &d, &err) < 0) {
		if (d.no || d.rec.id || d.rec.kind)
			fc_fuzz_fail("refused (%s), yet filled", err.msg);
		return;
	}
	if (!d.no || d.no > FC_FLEET_NODE_MAX || !d.rec.unit)
		fc_fuzz_fail("node %" PRIu32 ", unit %" PRIu64, d.no, d.rec.unit);
	if (fc_fleet_rec_name(&d.rec, "freqctl:", name, sizeof(name), &err) < 0)
		fc_fuzz_fail("parsed, but its name does not fit: %s", err.msg);
	len = snprintf(again, sizeof(again), "%s %" PRIu32, name, d.no);
	if (len < 0 || (size_t)len != n || memcmp(again, p, n))
		fc_fuzz_fail("\"%.*s\" parsed, made again as \"%s\"", (int)n, (const char *)p, again);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fc_fuzz_in in;

	if (size < 1 || size > 65536)
		return -1;
	in = (struct fc_fuzz_in){ data + 1, size - 1 };
	if (data[0] % 2)
		demand(data + 1, size - 1);
	else if (data[0] % 4 == 2)
		beats(data + 1, size - 1);
	else
		replies(&in);
	return 0;
}
