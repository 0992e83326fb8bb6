// SPDX-License-Identifier: BSD-2-Clause
/*
 * The fleet's heartbeat reply (loader/agent/fc_fleet_beat.c), read from
 * protocol bytes by the client's reader as Redis (or anyone on its path)
 * sends them: TIME and every node's value. Hostile numbers (TIME's seconds
 * near INT64_MAX, a negative or huge ts, passes that add past 2^64) are
 * refused or bounded before any arithmetic; built with UBSan, which aborts
 * this test on a signed overflow. Each refusal counts in reply_errors.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "fc_fleet_beat.h"

#define T0 1800000000000000000LL /* this clock, ns */

/* A heartbeat reply: TIME's two strings, then name-value pairs. */
static struct fc_redis_reply *beat_reply(const char *sec, const char *usec, size_t npairs, const char *const *pairs)
{
	char bytes[8192];
	size_t at, i, n = 2 + 2 * npairs;
	struct fc_redis_reader rd;
	struct fc_redis_reply *r = NULL;
	struct fc_err err;
	const char *s;

	at = (size_t)snprintf(bytes, sizeof(bytes), "*%zu\r\n", n);
	for (i = 0; i < n; i++) {
		s = i == 0 ? sec : i == 1 ? usec : pairs[i - 2];
		at += (size_t)snprintf(bytes + at, sizeof(bytes) - at, "$%zu\r\n%s\r\n", strlen(s), s);
	}
	if (fc_redis_reader_init(&rd, &err) || fc_redis_reader_feed(&rd, bytes, at, &err) ||
	    fc_redis_reader_next(&rd, &r, &err) || !r)
		fail_msg("not a whole reply: %s", err.msg);
	fc_redis_reader_free(&rd);
	if (fc_redis_reply_check(r, &FC_FLEET_BEAT_WANT, &err))
		fail_msg("not the heartbeat's shape: %s", err.msg);
	return r;
}

static int parse(struct fc_fleet_beat *b, const char *sec, const char *usec, size_t npairs, const char *const *pairs,
		 struct fc_err *err)
{
	struct fc_redis_reply *r = beat_reply(sec, usec, npairs, pairs);
	int rc = fc_fleet_beat_parse(b, r, T0, T0 + 2000000, err);

	fc_redis_reply_free(r);
	return rc;
}

static void test_beat_taken(void **state)
{
	const char *const pairs[] = { "n1", "{\"no\":1,\"mode\":\"fleet\",\"ts\":1800000000000,\"rounds\":4,\"p\":{\"7\":[3,5]}}",
				      "n2", "{\"no\":2,\"mode\":\"degraded\",\"ts\":1799999999000,\"p\":{\"7\":[3,2]}}" };
	struct fc_fleet_beat b = { 0 };
	struct fc_err err;

	(void)state;
	assert_int_equal(parse(&b, "1800000000", "000500", 2, pairs, &err), 0);
	/* the midpoint (T0 + 1 ms) minus Redis's 0.5 ms */
	assert_int_equal(fc_fleet_beat_offset(&b), 500000);
	assert_int_equal(b.nnodes, 2);
	assert_string_equal(b.nodes[1].name, "n2");
	assert_int_equal(b.nodes[0].age_ms, 2);
	assert_int_equal(b.nodes[1].age_ms, 1002);
	assert_int_equal(fc_fleet_beat_used(&b, 7, 3), 7);
	assert_int_equal(b.reply_errors, 0);
}

/* TIME that is not a time: refused whole, nothing taken, counted. */
static void test_beat_time_hostile(void **state)
{
	static const char *const times[][2] = {
		{ "9223372036854775807", "0" }, /* its nanoseconds overflow int64 */
		{ "9223372036", "0" },          /* just past the bound */
		{ "99999999999", "0" },         /* 11 digits */
		{ "-1800000000", "0" },
		{ "0", "0" },
		{ "1800000000", "1000000" },    /* 7 digits of microseconds */
		{ "1800000000", "-1" },
		{ "1800000000", "9223372036854775807" },
		{ "18e8", "0" },
		{ "", "0" },
		{ "1800000000 ", "0" },
	};
	struct fc_fleet_beat b = { 0 };
	struct fc_err err;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(times) / sizeof(times[0]); i++) {
		if (parse(&b, times[i][0], times[i][1], 0, NULL, &err) == 0)
			fail_msg("TIME \"%s\" \"%s\": accepted", times[i][0], times[i][1]);
		if (!strstr(err.msg, "is not a time"))
			fail_msg("TIME \"%s\" \"%s\": \"%s\"", times[i][0], times[i][1], err.msg);
	}
	assert_int_equal(b.nsamples, 0);
	assert_int_equal(b.reply_errors, i);
	/* the largest that is taken: its nanoseconds still fit */
	assert_int_equal(parse(&b, "9223372035", "999999", 0, NULL, &err), 0);
	assert_int_equal(b.nsamples, 1);
}

/* Another node's value with a hostile ts or passes: left out or bounded,
 * never an overflow. */
static void test_beat_values_hostile(void **state)
{
	const char *const pairs[] = {
		"min", "{\"no\":1,\"mode\":\"fleet\",\"ts\":-9223372036854775808}",
		"max", "{\"no\":2,\"mode\":\"fleet\",\"ts\":9223372036854775807}",
		"big", "{\"no\":3,\"mode\":\"fleet\",\"ts\":9007199254740992}",
		"nots", "{\"no\":4,\"mode\":\"fleet\"}",
		"junk", "not json",
		"p1", "{\"no\":5,\"mode\":\"fleet\",\"ts\":0,\"p\":{\"7\":[3,9223372036854775807]}}",
		"p2", "{\"no\":6,\"mode\":\"fleet\",\"ts\":0,\"p\":{\"7\":[3,9223372036854775807]}}",
		"p3", "{\"no\":7,\"mode\":\"fleet\",\"ts\":0,\"p\":{\"7\":[3,9223372036854775807]}}",
	};
	struct fc_fleet_beat b = { 0 };
	struct fc_err err;

	(void)state;
	assert_int_equal(parse(&b, "1800000000", "0", 8, pairs, &err), 0);
	assert_int_equal(b.reply_errors, 5); /* min, max, big, nots, junk */
	assert_int_equal(b.nnodes, 3);
	assert_string_equal(b.nodes[0].name, "p1");
	assert_int_equal(b.nodes[0].age_ms, 1800000000002);
	assert_true(fc_fleet_beat_used(&b, 7, 3) == UINT64_MAX);
}

/* Pairs that are not pairs: refused, counted. */
static void test_beat_shape(void **state)
{
	const char *bytes = "*3\r\n$10\r\n1800000000\r\n$1\r\n0\r\n$2\r\nn1\r\n";
	struct fc_fleet_beat b = { 0 };
	struct fc_redis_reader rd;
	struct fc_redis_reply *r = NULL;
	struct fc_err err;

	(void)state;
	assert_int_equal(fc_redis_reader_init(&rd, &err), 0);
	assert_int_equal(fc_redis_reader_feed(&rd, bytes, strlen(bytes), &err), 0);
	assert_int_equal(fc_redis_reader_next(&rd, &r, &err), 0);
	assert_non_null(r);
	assert_int_equal(fc_fleet_beat_parse(&b, r, T0, T0, &err), -1);
	assert_non_null(strstr(err.msg, "a reply of 3 elements"));
	assert_int_equal(b.reply_errors, 1);
	fc_redis_reply_free(r);
	fc_redis_reader_free(&rd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_beat_taken),
		cmocka_unit_test(test_beat_time_hostile),
		cmocka_unit_test(test_beat_values_hostile),
		cmocka_unit_test(test_beat_shape),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
