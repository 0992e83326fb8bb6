// SPDX-License-Identifier: BSD-2-Clause
/*
 * What the fleet reads from Redis (loader/agent/fc_fleet_reply.c): the
 * script's replies, read from protocol bytes by the client's reader and
 * checked against what the node knows, each refusal with its message; the
 * demand channel's messages, canonical or refused; the records' names,
 * which the messages must give back exactly.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "fc_fleet_redis.h"

/* The reply of bytes (protocol), checked against x: 0 or -1, out, err. */
static int reply(const char *bytes, const struct fc_fleet_expect *x, struct fc_fleet_result *out, struct fc_err *err)
{
	struct fc_redis_reader rd;
	struct fc_redis_reply *r = NULL;
	int rc;

	if (fc_redis_reader_init(&rd, err) || fc_redis_reader_feed(&rd, bytes, strlen(bytes), err) ||
	    fc_redis_reader_next(&rd, &r, err) || !r)
		fail_msg("%s: not a whole reply: %s", bytes, err->msg);
	fc_redis_reader_free(&rd);
	rc = fc_fleet_reply_parse(r, x, out, err);
	fc_redis_reply_free(r);
	return rc;
}

static const struct fc_fleet_expect x10 = { .nstar = 10, .g_app = 2 };

static void refused(const char *bytes, const struct fc_fleet_expect *x, const char *msg)
{
	struct fc_fleet_result res;
	struct fc_err err;

	if (reply(bytes, x, &res, &err) == 0)
		fail_msg("%s: accepted", bytes);
	if (!strstr(err.msg, msg))
		fail_msg("%s: \"%s\" does not say \"%s\"", bytes, err.msg, msg);
	assert_int_equal(res.status, 0);
}

static void test_reply_accepted(void **state)
{
	struct fc_fleet_result res;
	struct fc_err err;

	(void)state;
	assert_int_equal(reply("*7\r\n:3\r\n:1\r\n:5\r\n:4\r\n:-2\r\n:1\r\n:0\r\n", &x10, &res, &err), 0);
	assert_int_equal(res.status, FC_FLEET_R_DONE);
	assert_int_equal(res.g, 3);
	assert_int_equal(res.r, 1);
	assert_int_equal(res.G, 5);
	assert_int_equal(res.R, 4);
	assert_int_equal(res.free, -2);
	assert_int_equal(res.holders, 1);
	assert_false(res.frozen);
	assert_int_equal(reply("*2\r\n:-1\r\n:12\r\n", &x10, &res, &err), 0);
	assert_int_equal(res.status, FC_FLEET_R_OTHER_SET);
	assert_int_equal(res.n, 12);
	/* totals past N (credit that went round), and G − R within N* */
	assert_int_equal(reply("*7\r\n:30\r\n:0\r\n:40\r\n:35\r\n:0\r\n:0\r\n:0\r\n", &x10, &res, &err), 0);
	/* g below what was applied: frozen (re-asserted elsewhere) or adopting */
	assert_int_equal(reply("*7\r\n:1\r\n:0\r\n:1\r\n:0\r\n:0\r\n:0\r\n:1\r\n", &x10, &res, &err), 0);
	assert_true(res.frozen);
	assert_int_equal(reply("*7\r\n:0\r\n:0\r\n:0\r\n:0\r\n:0\r\n:0\r\n:0\r\n",
			       &(struct fc_fleet_expect){ .nstar = 10, .g_app = 2, .adopt = true }, &res, &err),
			 0);
}

static void test_reply_refused(void **state)
{
	const char *shape = "expected 7 integers (or -1 and n)";

	(void)state;
	refused(":5\r\n", &x10, "expected 7 integers (or -1 and n), got an integer (5)");
	refused("$3\r\nabc\r\n", &x10, shape);
	refused("-ERR wrong\r\n", &x10, shape);
	refused("*-1\r\n", &x10, shape);
	refused("*0\r\n", &x10, shape);
	refused("*6\r\n:3\r\n:1\r\n:5\r\n:4\r\n:2\r\n:1\r\n", &x10, shape);
	refused("*8\r\n:3\r\n:1\r\n:5\r\n:4\r\n:2\r\n:1\r\n:0\r\n:0\r\n", &x10, shape);
	refused("*7\r\n:3\r\n$1\r\n1\r\n:5\r\n:4\r\n:2\r\n:1\r\n:0\r\n", &x10, shape);
	refused("*7\r\n:3\r\n:1\r\n:5\r\n*1\r\n:4\r\n:2\r\n:1\r\n:0\r\n", &x10, shape);
	refused("*2\r\n:-2\r\n:12\r\n", &x10, "expected -1 and the record's n");
	refused("*2\r\n:-1\r\n:-12\r\n", &x10, "expected -1 and the record's n");
	refused("*7\r\n:-3\r\n:1\r\n:5\r\n:4\r\n:2\r\n:1\r\n:0\r\n", &x10, "total 0 is -3");
	refused("*7\r\n:3\r\n:1\r\n:9007199254740992\r\n:4\r\n:2\r\n:1\r\n:0\r\n", &x10, "total 2 is 9007199254740992");
	refused("*7\r\n:3\r\n:1\r\n:9223372036854775807\r\n:4\r\n:2\r\n:1\r\n:0\r\n", &x10, "outside 0-");
	refused("*7\r\n:3\r\n:1\r\n:15\r\n:4\r\n:0\r\n:1\r\n:0\r\n", &x10, "G 15 and R 4 are more than N* 10 apart");
	refused("*7\r\n:3\r\n:1\r\n:3\r\n:14\r\n:0\r\n:1\r\n:0\r\n", &x10, "G 3 and R 14 are more than N* 10 apart");
	refused("*7\r\n:3\r\n:1\r\n:5\r\n:4\r\n:11\r\n:1\r\n:0\r\n", &x10, "free 11");
	refused("*7\r\n:3\r\n:1\r\n:5\r\n:4\r\n:-11\r\n:1\r\n:0\r\n", &x10, "free -11");
	refused("*7\r\n:3\r\n:1\r\n:5\r\n:4\r\n:1\r\n:1024\r\n:0\r\n", &x10, "holders 1024");
	refused("*7\r\n:3\r\n:1\r\n:5\r\n:4\r\n:1\r\n:-1\r\n:0\r\n", &x10, "holders -1");
	refused("*7\r\n:3\r\n:1\r\n:5\r\n:4\r\n:1\r\n:1\r\n:2\r\n", &x10, "frozen 2");
	refused("*7\r\n:6\r\n:1\r\n:5\r\n:4\r\n:1\r\n:1\r\n:0\r\n", &x10, "g 6 or r 1 above the record's G 5 or R 4");
	refused("*7\r\n:3\r\n:5\r\n:5\r\n:4\r\n:1\r\n:1\r\n:0\r\n", &x10, "g 3 or r 5 above");
	refused("*7\r\n:1\r\n:0\r\n:1\r\n:0\r\n:0\r\n:0\r\n:0\r\n", &x10, "g 1 below the 2 applied, and not frozen");
}

/* ---- demand messages and names ---- */

static void demand_refused(const char *msg)
{
	struct fc_fleet_demand d;
	struct fc_err err;

	if (fc_fleet_demand_parse(msg, strlen(msg), "freqctl:", &d, &err) == 0)
		fail_msg("\"%s\": accepted", msg);
	assert_non_null(strstr(err.msg, "expected \"freqctl:{ID.EPOCH.KID16}:wUNIT.W NODE\""));
	assert_int_equal(d.no, 0);
}

static void test_demand_messages(void **state)
{
	const char *ok = "freqctl:{7.3.00000000deadbeef}:w86400.20421 12";
	struct fc_fleet_demand d;
	struct fc_err err;

	(void)state;
	assert_int_equal(fc_fleet_demand_parse(ok, strlen(ok), "freqctl:", &d, &err), 0);
	assert_int_equal(d.rec.id, 7);
	assert_int_equal(d.rec.epoch, 3);
	assert_int_equal(d.rec.kid, 0xdeadbeef);
	assert_int_equal(d.rec.kind, 'w');
	assert_int_equal(d.rec.unit, 86400);
	assert_int_equal(d.rec.w, 20421);
	assert_int_equal(d.no, 12);
	ok = "p:{0.4294967295.ffffffffffffffff}:l200.18446744073709551615 1023";
	assert_int_equal(fc_fleet_demand_parse(ok, strlen(ok), "p:", &d, &err), 0);
	assert_int_equal(d.rec.kind, 'l');
	assert_int_equal(d.rec.epoch, UINT32_MAX);
	assert_int_equal(d.rec.w, UINT64_MAX);
	assert_int_equal(d.no, 1023);

	demand_refused("");
	demand_refused("other:{7.3.00000000deadbeef}:w86400.20421 12");
	demand_refused("freqctl:{07.3.00000000deadbeef}:w86400.20421 12");
	demand_refused("freqctl:{+7.3.00000000deadbeef}:w86400.20421 12");
	demand_refused("freqctl:{7.3.00000000DEADBEEF}:w86400.20421 12");
	demand_refused("freqctl:{7.3.0000000deadbeef}:w86400.20421 12");
	demand_refused("freqctl:{7.3.000000000deadbeef}:w86400.20421 12");
	demand_refused("freqctl:{4294967296.3.00000000deadbeef}:w86400.20421 12");
	demand_refused("freqctl:{7.3.00000000deadbeef}:x86400.20421 12");
	demand_refused("freqctl:{7.3.00000000deadbeef}:w0.20421 12");
	demand_refused("freqctl:{7.3.00000000deadbeef}:w86400.18446744073709551616 12");
	demand_refused("freqctl:{7.3.00000000deadbeef}:w86400.20421 0");
	demand_refused("freqctl:{7.3.00000000deadbeef}:w86400.20421 1024");
	demand_refused("freqctl:{7.3.00000000deadbeef}:w86400.20421 12 ");
	demand_refused("freqctl:{7.3.00000000deadbeef}:w86400.20421  12");
	demand_refused("freqctl:{7.3.00000000deadbeef}:w86400.20421");
	demand_refused("freqctl:{7.3.00000000deadbeef}w86400.20421 12");
	/* a NUL inside: the length is the message's, not strlen's */
	assert_int_equal(fc_fleet_demand_parse("freqctl:{7.3.00000000deadbeef}:w60.1 1\0", 39, "freqctl:", &d, &err),
			 -1);
}

/* A record's name and a node number, as the script publishes them, parse
 * back to what made them, over random records and the longest prefix. */
static void test_names_round_trip(void **state)
{
	char prefix[FC_REDIS_PREFIX_MAX + 1], name[FC_FLEET_NAME_MAX], msg[FC_FLEET_NAME_MAX + 8];
	struct fc_fleet_demand d;
	struct fc_err err;
	unsigned i;

	(void)state;
	memset(prefix, 'p', FC_REDIS_PREFIX_MAX);
	prefix[FC_REDIS_PREFIX_MAX - 1] = ':';
	prefix[FC_REDIS_PREFIX_MAX] = 0;
	srandom(29);
	for (i = 0; i < 20000; i++) {
		struct fc_fleet_rec rec = {
			.id = (uint32_t)random() >> (random() % 32),
			.epoch = (uint32_t)random(),
			.kid = (uint64_t)random() << 33 ^ (uint64_t)random(),
			.kind = i % 2 ? FC_FLEET_REC_WINDOW : FC_FLEET_REC_POOL,
			.unit = 1 + ((uint64_t)random() << 31 ^ (uint64_t)random()) % (i % 3 ? 86400 : UINT64_MAX),
			.w = i % 7 ? (uint64_t)random() : UINT64_MAX,
		};
		uint32_t no = 1 + (uint32_t)random() % FC_FLEET_NODE_MAX;
		const char *pre = i % 2 ? prefix : "freqctl:";

		assert_true(fc_fleet_rec_name(&rec, pre, name, sizeof(name), &err) > 0);
		snprintf(msg, sizeof(msg), "%s %u", name, no);
		if (fc_fleet_demand_parse(msg, strlen(msg), pre, &d, &err))
			fail_msg("%s: %s", msg, err.msg);
		assert_int_equal(d.rec.id, rec.id);
		assert_int_equal(d.rec.epoch, rec.epoch);
		assert_int_equal(d.rec.kid, rec.kid);
		assert_int_equal(d.rec.kind, rec.kind);
		assert_int_equal(d.rec.unit, rec.unit);
		assert_int_equal(d.rec.w, rec.w);
		assert_int_equal(d.no, no);
	}
	assert_int_equal(fc_fleet_rec_name(&(struct fc_fleet_rec){ .kind = 'w', .unit = 1 }, prefix, name, 20, &err),
			 -1);
	assert_non_null(strstr(err.msg, "the name is longer than"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_reply_accepted),
		cmocka_unit_test(test_reply_refused),
		cmocka_unit_test(test_demand_messages),
		cmocka_unit_test(test_names_round_trip),
	};

	return cmocka_run_group_tests_name("fleet replies and demand messages", tests, NULL, NULL);
}
