// SPDX-License-Identifier: BSD-2-Clause
/* Addresses, prefixes, durations and allow entries: every accepted form and
 * every malformed one, each rejection with its exact message. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "fc_allow.h"
#include "fc_duration.h"
#include "fc_prefix.h"
#include "fc_test.h"

static const struct {
	const char *in;
	const char *canon; /* fc_prefix_format of the result */
	int family;
	int len;
} fc_good_prefixes[] = {
	{ "198.18.0.7", "198.18.0.7", 4, 32 },
	{ "198.18.0.7/32", "198.18.0.7", 4, 32 },
	{ "198.18.0.0/15", "198.18.0.0/15", 4, 15 },
	{ "0.0.0.0/1", "0.0.0.0/1", 4, 1 },
	{ "128.0.0.0/1", "128.0.0.0/1", 4, 1 },
	{ "255.255.255.255", "255.255.255.255", 4, 32 },
	{ "10.1.2.128/25", "10.1.2.128/25", 4, 25 },
	{ "2001:db8::1", "2001:db8::1", 6, 128 },
	{ "2001:DB8::1/128", "2001:db8::1", 6, 128 },
	{ "2001:db8::/32", "2001:db8::/32", 6, 32 },
	{ "2001:0db8:0000:0000:0000:0000:0000:0000/48", "2001:db8::/48", 6, 48 },
	{ "::1", "::1", 6, 128 },
	{ "fe80::/10", "fe80::/10", 6, 10 },
	{ "2001:db8::8000:0/113", "2001:db8::8000:0/113", 6, 113 },
	{ "8000::/1", "8000::/1", 6, 1 },
};

static const struct {
	const char *in;
	const char *msg;
} fc_bad_prefixes[] = {
	{ "", "empty address: expected an IPv4 or IPv6 address, optionally /LEN" },
	{ "/24", "\"/24\": missing address before '/'" },
	{ "1.2.3", "\"1.2.3\": not a valid IPv4 address (expected dotted decimal a.b.c.d)" },
	{ "1.2.3.4.5", "\"1.2.3.4.5\": not a valid IPv4 address (expected dotted decimal a.b.c.d)" },
	{ "256.1.1.1", "\"256.1.1.1\": not a valid IPv4 address (expected dotted decimal a.b.c.d)" },
	{ "01.2.3.4", "\"01.2.3.4\": not a valid IPv4 address (expected dotted decimal a.b.c.d)" },
	{ "0x1.2.3.4", "\"0x1.2.3.4\": not a valid IPv4 address (expected dotted decimal a.b.c.d)" },
	{ " 1.2.3.4", "\" 1.2.3.4\": not a valid IPv4 address (expected dotted decimal a.b.c.d)" },
	{ "1.2.3.4 ", "\"1.2.3.4 \": not a valid IPv4 address (expected dotted decimal a.b.c.d)" },
	{ "example.com", "\"example.com\": not a valid IPv4 address (expected dotted decimal a.b.c.d)" },
	{ "ip=1.2.3.4", "\"ip=1.2.3.4\": not a valid IPv4 address (expected dotted decimal a.b.c.d)" },
	{ "1.2.3.4/", "\"1.2.3.4/\": prefix length \"\": expected a number from 1 to 32" },
	{ "1.2.3.4/33", "\"1.2.3.4/33\": prefix length \"33\": expected a number from 1 to 32" },
	{ "1.2.3.4/-1", "\"1.2.3.4/-1\": prefix length \"-1\": expected a number from 1 to 32" },
	{ "1.2.3.4/+8", "\"1.2.3.4/+8\": prefix length \"+8\": expected a number from 1 to 32" },
	{ "1.2.3.0/24/8", "\"1.2.3.0/24/8\": prefix length \"24/8\": expected a number from 1 to 32" },
	{ "1.2.3.0/0024", "\"1.2.3.0/0024\": prefix length \"0024\": expected a number from 1 to 32" },
	{ "1.2.3.0/2x", "\"1.2.3.0/2x\": prefix length \"2x\": expected a number from 1 to 32" },
	{ "1.2.3.0/255.255.255.0",
	  "\"1.2.3.0/255.255.255.0\": prefix length \"255.255.255.0\": expected a number from 1 to 32" },
	{ "0.0.0.0/0", "\"0.0.0.0/0\": a /0 prefix would cover every IPv4 source; refused" },
	{ "::/0", "\"::/0\": a /0 prefix would cover every IPv6 source; refused" },
	{ "10.0.0.5/8", "\"10.0.0.5/8\": host bits set; did you mean 10.0.0.0/8?" },
	{ "198.18.0.1/15", "\"198.18.0.1/15\": host bits set; did you mean 198.18.0.0/15?" },
	{ "2001:db8::1/64", "\"2001:db8::1/64\": host bits set; did you mean 2001:db8::/64?" },
	{ "2001:db8::/129", "\"2001:db8::/129\": prefix length \"129\": expected a number from 1 to 128" },
	{ "2001:db8:::1", "\"2001:db8:::1\": not a valid IPv6 address" },
	{ "1:2:3:4:5:6:7:8:9", "\"1:2:3:4:5:6:7:8:9\": not a valid IPv6 address" },
	{ "2001:db8::g", "\"2001:db8::g\": not a valid IPv6 address" },
	{ "[2001:db8::1]", "\"[2001:db8::1]\": not a valid IPv6 address" },
	{ "fe80::1%eth0", "\"fe80::1%eth0\": zone index not allowed in an address" },
	{ "::ffff:1.2.3.4", "\"::ffff:1.2.3.4\": IPv4-mapped IPv6 address; write it as IPv4 (1.2.3.4)" },
	{ "1111111111111111111111111111111111111111111111111111111111111111111111",
	  "\"1111111111111111111111111111111111111111111111111111111111111111...\": too long for an IPv4 or IPv6 "
	  "address" },
};

static void test_prefix_good(void **state)
{
	char buf[FC_PREFIX_STRLEN];
	struct fc_prefix p, again;
	struct fc_err err;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(fc_good_prefixes) / sizeof(fc_good_prefixes[0]); i++) {
		if (fc_prefix_parse(fc_good_prefixes[i].in, &p, &err) < 0)
			fail_msg("%s: %s", fc_good_prefixes[i].in, err.msg);
		assert_int_equal(p.family, fc_good_prefixes[i].family);
		assert_int_equal(p.len, fc_good_prefixes[i].len);
		fc_prefix_format(&p, buf);
		assert_string_equal(buf, fc_good_prefixes[i].canon);
		/* The canonical text parses back to the same prefix. */
		assert_int_equal(fc_prefix_parse(buf, &again, &err), 0);
		assert_memory_equal(&p, &again, sizeof(p));
	}
}

static void test_prefix_bad(void **state)
{
	struct fc_prefix p;
	struct fc_err err;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(fc_bad_prefixes) / sizeof(fc_bad_prefixes[0]); i++) {
		memset(&err, 0, sizeof(err));
		if (fc_prefix_parse(fc_bad_prefixes[i].in, &p, &err) == 0)
			fail_msg("accepted \"%s\"", fc_bad_prefixes[i].in);
		assert_string_equal(err.msg, fc_bad_prefixes[i].msg);
	}
}

static void test_prefix_keys(void **state)
{
	struct fc_pfx4_key k4;
	struct fc_pfx6_key k6;
	struct fc_prefix p;
	struct fc_err err;

	(void)state;
	assert_int_equal(fc_prefix_parse("198.18.0.7", &p, &err), 0);
	assert_memory_equal(p.a, ((uint8_t[]){ 198, 18, 0, 7 }), 4); /* the fc_exact4 key */
	assert_int_equal(fc_prefix_parse("198.18.0.0/15", &p, &err), 0);
	fc_prefix_to_pfx4(&p, &k4);
	assert_int_equal(k4.prefixlen, 15);
	assert_memory_equal(k4.a, ((uint8_t[]){ 198, 18, 0, 0 }), 4);
	assert_int_equal(fc_prefix_parse("2001:db8::/32", &p, &err), 0);
	fc_prefix_to_pfx6(&p, &k6);
	assert_int_equal(k6.prefixlen, 32);
	assert_memory_equal(k6.a, ((uint8_t[]){ 0x20, 0x01, 0x0d, 0xb8, 0, 0 }), 6);
	assert_int_equal(fc_prefix_parse("2001:db8::1", &p, &err), 0);
	assert_memory_equal(p.a, ((uint8_t[]){ 0x20, 0x01, 0x0d, 0xb8, [15] = 1 }), 16);
}

static const struct {
	const char *in;
	int64_t secs;
	const char *canon;
} fc_good_durations[] = {
	{ "1s", 1, "1s" },       { "90s", 90, "1m30s" },   { "10m", 600, "10m" },
	{ "1h", 3600, "1h" },    { "7d", 604800, "7d" },   { "1h30m", 5400, "1h30m" },
	{ "1d2h3m4s", 93784, "1d2h3m4s" }, { "3650d", 315360000, "3650d" }, { "0d1s", 1, "1s" },
	{ "00010m", 600, "10m" },
};

static const struct {
	const char *in;
	const char *msg;
} fc_bad_durations[] = {
	{ "", "empty duration: expected e.g. 90s, 10m, 1h, 7d" },
	{ "10", "duration \"10\": missing unit after 10 (one of s, m, h, d)" },
	{ "10x", "duration \"10\x78\": unit 'x' must be one of s, m, h, d" },
	{ "10S", "duration \"10S\": unit 'S' must be one of s, m, h, d" },
	{ "1w", "duration \"1w\": unit 'w' must be one of s, m, h, d" },
	{ "s", "duration \"s\": expected a number at \"s\"" },
	{ "-5s", "duration \"-5s\": expected a number at \"-5s\"" },
	{ " 5s", "duration \" 5s\": expected a number at \" 5s\"" },
	{ "5s ", "duration \"5s \": expected a number at \" \"" },
	{ "1.5h", "duration \"1.5h\": unit '.' must be one of s, m, h, d" },
	{ "0s", "duration \"0s\": must be at least 1s" },
	{ "0d0h", "duration \"0d0h\": must be at least 1s" },
	{ "30m1h", "duration \"30m1h\": units must appear once each, largest first" },
	{ "1h1h", "duration \"1h1h\": units must appear once each, largest first" },
	{ "3651d", "duration \"3651d\": too long (at most 3650d)" },
	{ "3650d1s", "duration \"3650d1s\": too long (at most 3650d)" },
	{ "99999999999999999999999s", "duration \"99999999999999999999999s\": too long (at most 3650d)" },
};

static void test_duration_good(void **state)
{
	char buf[FC_DURATION_STRLEN];
	struct fc_err err;
	int64_t secs;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(fc_good_durations) / sizeof(fc_good_durations[0]); i++) {
		if (fc_duration_parse(fc_good_durations[i].in, &secs, &err) < 0)
			fail_msg("%s: %s", fc_good_durations[i].in, err.msg);
		assert_int_equal(secs, fc_good_durations[i].secs);
		fc_duration_format(secs, buf);
		assert_string_equal(buf, fc_good_durations[i].canon);
	}
}

static void test_duration_bad(void **state)
{
	struct fc_err err;
	int64_t secs;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(fc_bad_durations) / sizeof(fc_bad_durations[0]); i++) {
		memset(&err, 0, sizeof(err));
		if (fc_duration_parse(fc_bad_durations[i].in, &secs, &err) == 0)
			fail_msg("accepted \"%s\"", fc_bad_durations[i].in);
		assert_string_equal(err.msg, fc_bad_durations[i].msg);
	}
}

static void test_time_format(void **state)
{
	char buf[FC_TIME_STRLEN];

	(void)state;
	fc_time_format(0, buf);
	assert_string_equal(buf, "1970-01-01T00:00:00Z");
	fc_time_format(1795316400, buf);
	assert_string_equal(buf, "2026-11-22T03:00:00Z");
}

/* A TTL lasts at least its duration: the expiry (whole seconds) rounds up. */
static void test_expires(void **state)
{
	struct timespec t = { .tv_sec = 1000, .tv_nsec = 999000000 };
	int64_t before, got;

	(void)state;
	assert_int_equal(fc_expires_at(&t, 1), 1002); /* not 1001, 1 ms later */
	t.tv_nsec = 1;
	assert_int_equal(fc_expires_at(&t, 1), 1002);
	t.tv_nsec = 0; /* on the second: exactly ttl */
	assert_int_equal(fc_expires_at(&t, 1), 1001);
	before = (int64_t)time(NULL);
	got = fc_expires_after(60);
	assert_true(got >= before + 60 && got <= before + 62);
}

/* allow add's argument and note, and which entry covers an address. */
static void test_allow_text(void **state)
{
	struct fc_allow_row rows[3];
	char canon[FC_BAN_TEXT_LEN], note[FC_ALLOW_NOTE_MAX + 2];
	struct fc_prefix p;
	struct fc_err err;

	(void)state;
	assert_int_equal(fc_allow_text("uid=vip", &rows[0], canon, &err), 0);
	assert_int_equal(rows[0].p.family, 0);
	assert_string_equal(rows[0].uid, "vip");
	assert_string_equal(canon, "uid=vip");
	assert_int_equal(fc_allow_text("198.18.0.7/32", &rows[1], canon, &err), 0);
	assert_string_equal(canon, "198.18.0.7");
	assert_int_equal(rows[1].p.len, 32);
	assert_int_equal(fc_allow_text("198.18.0.0/16", &rows[2], canon, &err), 0);
	assert_int_equal(fc_allow_text("10.0.0.5/8", &rows[0], canon, &err), -1);
	assert_string_equal(err.msg, "\"10.0.0.5/8\": host bits set; did you mean 10.0.0.0/8?");
	assert_int_equal(fc_allow_text("uid=", &rows[0], canon, &err), -1);
	assert_string_equal(err.msg, "\"uid=\": expected 1 to 255 characters");
	assert_int_equal(fc_allow_text("uid=a b", &rows[0], canon, &err), -1);
	assert_string_equal(err.msg, "\"uid=a b\": printable characters only, no spaces or commas");
	assert_int_equal(fc_allow_text("uid=vip", &rows[0], canon, &err), 0);

	assert_int_equal(fc_allow_note_check("partner, by ticket 42", &err), 0);
	assert_int_equal(fc_allow_note_check("two\nlines", &err), -1);
	assert_string_equal(err.msg, "note \"two\nlines\": expected no control characters");
	memset(note, 'x', sizeof(note) - 1);
	note[sizeof(note) - 1] = '\0';
	assert_int_equal(fc_allow_note_check(note, &err), -1);
	assert_string_equal(err.msg, "note \"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx...\": expected at most 200 characters");

	/* The most specific live entry covering an address or prefix; uids never. */
	assert_int_equal(fc_prefix_parse("198.18.0.7", &p, &err), 0);
	assert_ptr_equal(fc_allow_covering(rows, 3, &p, 0), &rows[1]);
	rows[1].expires = 100;
	assert_ptr_equal(fc_allow_covering(rows, 3, &p, 99), &rows[1]);
	assert_ptr_equal(fc_allow_covering(rows, 3, &p, 100), &rows[2]); /* lapsed at 100 */
	assert_int_equal(fc_prefix_parse("198.0.0.0/8", &p, &err), 0);
	assert_null(fc_allow_covering(rows, 3, &p, 0)); /* wider than every entry */
	assert_ptr_equal(fc_allow_uid(rows, 3, "vip"), &rows[0]);
	assert_null(fc_allow_uid(rows, 3, "vip2"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_prefix_good),   cmocka_unit_test(test_prefix_bad),
		cmocka_unit_test(test_prefix_keys),   cmocka_unit_test(test_duration_good),
		cmocka_unit_test(test_duration_bad),  cmocka_unit_test(test_time_format), cmocka_unit_test(test_expires),
		cmocka_unit_test(test_allow_text),
	};

	return fc_run_group("parsing (addresses, prefixes, durations, allow entries)", tests, NULL, NULL);
}
