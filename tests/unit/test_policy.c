// SPDX-License-Identifier: BSD-2-Clause
/* Policies as users write them: every accepted and malformed id, rate,
 * match and option, each rejection with its exact message; canonical texts;
 * what they compile to for the kernel. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "fc_enforce.h"
#include "fc_policy.h"
#include "fc_rows_json.h"
#include "fc_test.h"

static void test_ids(void **state)
{
	static const char *const bad[] = { "", "0", "-1", "+5", "1.5", "abc", "4294967296", "99999999999999999999",
					   " 7", "7 ", "0x10" };
	struct fc_err err;
	uint32_t id;
	size_t i;
	char want[128];

	(void)state;
	assert_int_equal(fc_policy_id_parse("1", &id, &err), 0);
	assert_int_equal(id, 1);
	assert_int_equal(fc_policy_id_parse("4294967295", &id, &err), 0);
	assert_int_equal(id, 4294967295u);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(fc_policy_id_parse(bad[i], &id, &err), -1);
		snprintf(want, sizeof(want), "policy id \"%s\": expected a whole number from 1 to 4294967295", bad[i]);
		assert_string_equal(err.msg, want);
	}
}

static const struct {
	const char *in;
	const char *msg;
} fc_bad_rates[] = {
	{ "10", "rate \"10\": expected N/UNIT[:B], e.g. 100/s or 5000/h" },
	{ "", "rate \"\": expected N/UNIT[:B], e.g. 100/s or 5000/h" },
	{ "10/x", "rate \"10/x\": unit must be one of s, m, h, d" },
	{ "10/", "rate \"10/\": unit must be one of s, m, h, d" },
	{ "10/sec", "rate \"10/sec\": unit must be one of s, m, h, d" },
	{ "10/S", "rate \"10/S\": unit must be one of s, m, h, d" },
	{ "10/s/m", "rate \"10/s/m\": unit must be one of s, m, h, d" },
	{ "/s", "rate \"/s\": N must be a whole number" },
	{ "abc/s", "rate \"abc/s\": N must be a whole number" },
	{ "1.5/s", "rate \"1.5/s\": N must be a whole number" },
	{ "-1/s", "rate \"-1/s\": N must be a whole number" },
	{ "r/s", "rate \"r/s\": N must be a whole number" },
	{ "5rr/s", "rate \"5rr/s\": N must be a whole number" },
	{ "5R/s", "rate \"5R/s\": N must be a whole number" },
	{ "0r/m", "rate \"0r/m\": N must be at least 1" },
	{ "0/s", "rate \"0/s\": N must be at least 1" },
	{ "1000000000001/s", "rate \"1000000000001/s\": N must be at most 1000000000000" },
	{ "99999999999999999999999999999999/s",
	  "rate \"99999999999999999999999999999999/s\": N must be at most 1000000000000" },
	{ "10/s:", "rate \"10/s:\": burst B must be a whole number from 1 to 1000000000000" },
	{ "10/s:0", "rate \"10/s:0\": burst B must be a whole number from 1 to 1000000000000" },
	{ "10/s:x", "rate \"10/s:x\": burst B must be a whole number from 1 to 1000000000000" },
	{ "10/s:5:6", "rate \"10/s:5:6\": burst B must be a whole number from 1 to 1000000000000" },
	{ "10/s:1000000000001", "rate \"10/s:1000000000001\": burst B must be a whole number from 1 to 1000000000000" },
	{ "10/sx:5", "rate \"10/sx:5\": unit must be one of s, m, h, d" },
	{ "10/:5", "rate \"10/:5\": unit must be one of s, m, h, d" },
};

static void test_rates(void **state)
{
	struct fc_policy_spec p = { 0 };
	char buf[FC_TEXT_LEN];
	struct fc_rate r;
	struct fc_err err;
	size_t i;

	(void)state;
	assert_int_equal(fc_rate_parse("100/s", &r, true, &err), 0);
	assert_int_equal(r.n, 100);
	assert_int_equal(r.unit_secs, 1);
	assert_int_equal(r.burst, 0);
	assert_int_equal(fc_rate_parse("1/d", &r, true, &err), 0);
	assert_int_equal(r.unit_secs, 86400);
	assert_int_equal(fc_rate_parse("1000000000000/h", &r, true, &err), 0);
	assert_int_equal(fc_rate_parse("10/m:3", &r, true, &err), 0);
	assert_int_equal(r.n, 10);
	assert_int_equal(r.unit_secs, 60);
	assert_int_equal(r.burst, 3);
	/* nginx's spelling, limit_req's rate=5r/m: the same rate, written as freqctl writes it. */
	assert_int_equal(fc_rates_parse("5r/m,100r/s:20,1000r/d", &p, &err), 0);
	fc_rates_format(&p, buf);
	assert_string_equal(buf, "5/m,100/s:20,1000/d");
	/* --escalate's rate has no burst. */
	assert_int_equal(fc_rate_parse("10/m:3", &r, false, &err), -1);
	assert_string_equal(err.msg, "rate \"10/m:3\": expected N/UNIT (no :B burst here)");
	assert_int_equal(fc_rate_parse("10", &r, false, &err), -1);
	assert_string_equal(err.msg, "rate \"10\": expected N/UNIT, e.g. 100/s or 5000/h");
	for (i = 0; i < sizeof(fc_bad_rates) / sizeof(fc_bad_rates[0]); i++) {
		memset(&err, 0, sizeof(err));
		if (fc_rate_parse(fc_bad_rates[i].in, &r, true, &err) == 0)
			fail_msg("accepted \"%s\"", fc_bad_rates[i].in);
		assert_string_equal(err.msg, fc_bad_rates[i].msg);
	}
	assert_int_equal(fc_rates_parse("10/s,600/m,5000/h,100000/d", &p, &err), 0);
	assert_int_equal(p.ntiers, 4);
	fc_rates_format(&p, buf);
	assert_string_equal(buf, "10/s,600/m,5000/h,100000/d");
	/* Per-tier bursts round-trip through the canonical text (the store's
	 * rates column, export/import, list). */
	assert_int_equal(fc_rates_parse("10/s:20,600/m,5000/h:1,100000/d:100000", &p, &err), 0);
	assert_int_equal(p.rate[0].burst, 20);
	assert_int_equal(p.rate[1].burst, 0);
	assert_int_equal(p.rate[2].burst, 1);
	fc_rates_format(&p, buf);
	assert_string_equal(buf, "10/s:20,600/m,5000/h:1,100000/d:100000");
	assert_int_equal(fc_rates_parse("1/s,1/s,1/s,1/s,1/s", &p, &err), -1);
	assert_string_equal(err.msg, "rates \"1/s,1/s,1/s,1/s,1/s\": at most 4");
	/* A stored list too long to read whole is refused, not cut. */
	{
		char longer[400];
		size_t k;

		for (k = 0; k + 6 < sizeof(longer); k += 6)
			memcpy(longer + k, "1/s,,,", 6);
		longer[k] = '\0';
		assert_int_equal(fc_rates_parse(longer, &p, &err), -1);
		assert_non_null(strstr(err.msg, "longer than 255 characters"));
	}
}

static const struct {
	const char *in;
	const char *msg;
} fc_bad_matches[] = {
	{ "ip", "match \"ip\": \"ip\": expected DIM=VALUE (ip, uid, arg:NAME, header:NAME, uri)" },
	{ "", "match \"\": expected DIM=VALUE[,DIM=VALUE...], e.g. ip=198.18.0.0/15 or uid=u1024,arg:api=login" },
	{ "ip=", "match \"ip=\": empty address: expected an IPv4 or IPv6 address, optionally /LEN" },
	{ "ip=**", "match \"ip=**\": \"**\": not a valid IPv4 address (expected dotted decimal a.b.c.d)" },
	{ "ip=10.0.0.1/8", "match \"ip=10.0.0.1/8\": \"10.0.0.1/8\": host bits set; did you mean 10.0.0.0/8?" },
	{ "ip=1.2.3.4/33", "match \"ip=1.2.3.4/33\": \"1.2.3.4/33\": prefix length \"33\": expected a number from 0 to 32" },
	{ "IP=1.2.3.4", "match \"IP=1.2.3.4\": unknown dimension \"IP\" (expected ip, uid, arg:NAME, header:NAME or uri)" },
	{ "user=u1", "match \"user=u1\": unknown dimension \"user\" (expected ip, uid, arg:NAME, header:NAME or uri)" },
	{ "arg=x", "match \"arg=x\": unknown dimension \"arg\" (expected ip, uid, arg:NAME, header:NAME or uri)" },
	{ "uid:x=1", "match \"uid:x=1\": unknown dimension \"uid:x\" (expected ip, uid, arg:NAME, header:NAME or uri)" },
	{ "arg:=1", "match \"arg:=1\": arg name \"\": expected 1 to 64 of A-Z a-z 0-9 _ - ." },
	{ "header:a b=1", "match \"header:a b=1\": header name \"a b\": expected 1 to 64 of A-Z a-z 0-9 _ - ." },
	{ "uid=", "match \"uid=\": value \"\": expected 1 to 255 printable characters, no spaces or commas" },
	{ "uid=a b", "match \"uid=a b\": value \"a b\": expected 1 to 255 printable characters, no spaces or commas" },
	{ "uid=1,", "match \"uid=1,\": empty dimension" },
	{ ",uid=1", "match \",uid=1\": empty dimension" },
	{ "uid=1,,uri=/", "match \"uid=1,,uri=/\": empty dimension" },
	{ "ip=1.2.3.4,ip=5.6.7.8", "match \"ip=1.2.3.4,ip=5.6.7.8\": ip given twice" },
	{ "arg:a=1,arg:a=2", "match \"arg:a=1,arg:a=2\": arg:a given twice" },
	{ "uid=1,uid=2,uid=3", "match \"uid=1,uid=2,uid=3\": uid given twice" },
};

static void test_matches(void **state)
{
	struct fc_policy_spec p = { 0 };
	char buf[FC_MATCH_LEN];
	struct fc_err err;
	size_t i;

	(void)state;
	assert_int_equal(fc_match_parse("ip=*", &p, &err), 0);
	assert_int_equal(p.kind, FC_MATCH_STAR);
	fc_match_format(&p, buf);
	assert_string_equal(buf, "ip=*");
	assert_int_equal(fc_match_parse("ip=2001:DB8::/32", &p, &err), 0);
	assert_int_equal(p.kind, FC_MATCH_PREFIX);
	fc_match_format(&p, buf);
	assert_string_equal(buf, "ip=2001:db8::/32");
	assert_int_equal(fc_match_parse("ip=0.0.0.0/0", &p, &err), 0); /* one bucket for all of IPv4 */
	assert_int_equal(p.ip.len, 0);
	assert_false(fc_policy_is_l7(&p));
	/* L7: any order in, canonical order out; header names lowercased. */
	assert_int_equal(fc_match_parse("uri=/login,header:X-Api-Key=k1,arg:b=2,ip=198.18.0.0/24,arg:a=1,uid=u1024",
					&p, &err),
			 0);
	assert_true(fc_policy_is_l7(&p));
	assert_int_equal(p.ndims, 5);
	fc_match_format(&p, buf);
	assert_string_equal(buf, "ip=198.18.0.0/24,uid=u1024,arg:a=1,arg:b=2,header:x-api-key=k1,uri=/login");
	assert_int_equal(fc_match_parse(buf, &p, &err), 0);
	fc_match_format(&p, buf);
	assert_string_equal(buf, "ip=198.18.0.0/24,uid=u1024,arg:a=1,arg:b=2,header:x-api-key=k1,uri=/login");
	/* Per key: a wildcard value, ip=* beside other dimensions (in nginx), a uri prefix. */
	assert_int_equal(fc_match_parse("uri=/api/*,ip=*,header:X-Api-Key=*", &p, &err), 0);
	assert_true(fc_policy_is_l7(&p));
	assert_true(fc_policy_is_keyed(&p));
	fc_match_format(&p, buf);
	assert_string_equal(buf, "ip=*,header:x-api-key=*,uri=/api/*");
	assert_int_equal(fc_match_parse("uid=u1,uri=/api/*", &p, &err), 0);
	assert_false(fc_policy_is_keyed(&p)); /* a prefix alone keeps one bucket */
	assert_int_equal(fc_match_parse("ip=*", &p, &err), 0);
	assert_false(fc_policy_is_keyed(&p)); /* XDP's: its buckets are the kernel's */
	for (i = 0; i < sizeof(fc_bad_matches) / sizeof(fc_bad_matches[0]); i++) {
		memset(&err, 0, sizeof(err));
		if (fc_match_parse(fc_bad_matches[i].in, &p, &err) == 0)
			fail_msg("accepted \"%s\"", fc_bad_matches[i].in);
		assert_string_equal(err.msg, fc_bad_matches[i].msg);
	}
}

/* ip=*'s unit: a bucket per IPv4 address and IPv6 /64 by default, other
 * prefix lengths after the star (IPv4's first); canonical without the
 * defaults; both layers given both lengths. */
static const struct {
	const char *in, *canon;
	int len4, len6;
	const char *words;
} fc_star_units[] = {
	{ "ip=*", "ip=*", 32, 64, "IPv4 address and IPv6 /64" },
	{ "ip=*/32", "ip=*", 32, 64, "IPv4 address and IPv6 /64" },
	{ "ip=*/32/64", "ip=*", 32, 64, "IPv4 address and IPv6 /64" },
	{ "ip=*/24", "ip=*/24", 24, 64, "IPv4 /24 and IPv6 /64" },
	{ "ip=*/24/64", "ip=*/24", 24, 64, "IPv4 /24 and IPv6 /64" },
	{ "ip=*/32/56", "ip=*/32/56", 32, 56, "IPv4 address and IPv6 /56" },
	{ "ip=*/32/128", "ip=*/32/128", 32, 128, "IPv4 address and IPv6 address" },
	{ "ip=*/1/1", "ip=*/1/1", 1, 1, "IPv4 /1 and IPv6 /1" },
	{ "ip=*/016/048", "ip=*/16/48", 16, 48, "IPv4 /16 and IPv6 /48" },
	{ "uri=/login,ip=*/24", "ip=*/24,uri=/login", 24, 64, "IPv4 /24 and IPv6 /64" },
};

static const struct {
	const char *in, *msg;
} fc_bad_star_units[] = {
	{ "ip=*/", "match \"ip=*/\": IPv4 length \"\": expected a whole number of bits (ip=*/V4LEN[/V6LEN], e.g. "
		   "ip=*/24 or ip=*/32/56)" },
	{ "ip=*/24/", "match \"ip=*/24/\": IPv6 length \"\": expected a whole number of bits (ip=*/V4LEN[/V6LEN], e.g. "
		      "ip=*/24 or ip=*/32/56)" },
	{ "ip=*/x", "match \"ip=*/x\": IPv4 length \"x\": expected a whole number of bits (ip=*/V4LEN[/V6LEN], e.g. "
		    "ip=*/24 or ip=*/32/56)" },
	{ "ip=*/-1", "match \"ip=*/-1\": IPv4 length \"-1\": expected a whole number of bits (ip=*/V4LEN[/V6LEN], "
		     "e.g. ip=*/24 or ip=*/32/56)" },
	{ "ip=*/0", "match \"ip=*/0\": IPv4 length /0: expected 1 to 32" },
	{ "ip=*/33", "match \"ip=*/33\": IPv4 length /33: expected 1 to 32; the IPv6 length comes second "
		     "(ip=*/32/33 for a bucket per IPv6 /33)" },
	{ "ip=*/56", "match \"ip=*/56\": IPv4 length /56: expected 1 to 32; the IPv6 length comes second "
		     "(ip=*/32/56 for a bucket per IPv6 /56)" },
	{ "ip=*/129", "match \"ip=*/129\": IPv4 length /129: expected 1 to 32" },
	{ "ip=*/99999999999999999999", "match \"ip=*/99999999999999999999\": IPv4 length /99999999999999999999: "
				       "expected 1 to 32" },
	{ "ip=*/32/0", "match \"ip=*/32/0\": IPv6 length /0: expected 1 to 128" },
	{ "ip=*/32/129", "match \"ip=*/32/129\": IPv6 length /129: expected 1 to 128" },
	{ "ip=*/32/64/1", "match \"ip=*/32/64/1\": expected ip=* or ip=*/V4LEN[/V6LEN], the prefix lengths of its "
			  "buckets (e.g. ip=*/24, ip=*/32/56)" },
	{ "ip=*//64", "match \"ip=*//64\": IPv4 length \"\": expected a whole number of bits (ip=*/V4LEN[/V6LEN], "
		      "e.g. ip=*/24 or ip=*/32/56)" },
	{ "ip=*24", "match \"ip=*24\": \"*24\": not a valid IPv4 address (expected dotted decimal a.b.c.d)" },
};

static void test_star_units(void **state)
{
	const struct fc_node_ctx alone = { .weight = 1, .ncpus = 4, .tick_ns = 4000000 };
	struct fc_policy_spec p = { 0 };
	struct fc_policy_row row = { .slot = 1 };
	char buf[FC_MATCH_LEN], words[FC_STAR_UNIT_STRLEN];
	struct fc_enforced e;
	struct fc_err err;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(fc_star_units) / sizeof(fc_star_units[0]); i++) {
		memset(&p, 0, sizeof(p));
		if (fc_match_parse(fc_star_units[i].in, &p, &err) < 0)
			fail_msg("\"%s\": %s", fc_star_units[i].in, err.msg);
		assert_int_equal(p.kind, FC_MATCH_STAR);
		fc_match_format(&p, buf);
		assert_string_equal(buf, fc_star_units[i].canon);
		assert_int_equal(fc_star_len4(&p), fc_star_units[i].len4);
		assert_int_equal(fc_star_len6(&p), fc_star_units[i].len6);
		fc_star_unit_format(&p, words);
		assert_string_equal(words, fc_star_units[i].words);
		/* The canonical text means the same. */
		assert_int_equal(fc_match_parse(buf, &p, &err), 0);
		assert_int_equal(fc_star_len4(&p), fc_star_units[i].len4);
		assert_int_equal(fc_star_len6(&p), fc_star_units[i].len6);
		/* What both layers are given. */
		assert_int_equal(fc_rates_parse("5/m", &p, &err), 0);
		row.spec = p;
		fc_policy_enforced(&row, &alone, NULL, &e);
		assert_int_equal(e.star_len4, fc_star_units[i].len4);
		assert_int_equal(e.star_len6, fc_star_units[i].len6);
	}
	/* Not ip=*: no unit. */
	assert_int_equal(fc_match_parse("ip=198.18.0.0/24", &row.spec, &err), 0);
	fc_policy_enforced(&row, &alone, NULL, &e);
	assert_int_equal(e.star_len4, 0);
	assert_int_equal(e.star_len6, 0);
	for (i = 0; i < sizeof(fc_bad_star_units) / sizeof(fc_bad_star_units[0]); i++) {
		memset(&err, 0, sizeof(err));
		if (fc_match_parse(fc_bad_star_units[i].in, &p, &err) == 0)
			fail_msg("accepted \"%s\"", fc_bad_star_units[i].in);
		assert_string_equal(err.msg, fc_bad_star_units[i].msg);
	}
}

static void test_enums(void **state)
{
	enum fc_algo a;
	enum fc_action ac;
	enum fc_count c;
	struct fc_err err;

	(void)state;
	assert_int_equal(fc_algo_parse("window", &a, &err), 0);
	assert_int_equal(a, FC_ALGO_WINDOW);
	assert_int_equal(fc_algo_parse("leaky", &a, &err), -1);
	assert_string_equal(err.msg, "algo \"leaky\": expected one of gcra, window, sliding");
	assert_int_equal(fc_action_parse("log", &ac, &err), 0);
	assert_int_equal(ac, FC_ACTION_LOG);
	assert_int_equal(fc_action_parse("reject", &ac, &err), -1);
	assert_string_equal(err.msg, "action \"reject\": expected one of drop, log, delay");
	assert_int_equal(fc_action_parse("delay", &ac, &err), 0);
	assert_int_equal(ac, FC_ACTION_DELAY);
	assert_int_equal(fc_count_parse("syn", &c, &err), 0);
	assert_int_equal(c, FC_COUNT_SYN);
	assert_int_equal(fc_count_parse("requests", &c, &err), -1);
	assert_string_equal(err.msg, "count \"requests\": expected one of packets, bytes, syn");
}

static void test_validate(void **state)
{
	struct fc_policy_spec p = { .id = 1 };
	struct fc_err err;

	(void)state;
	assert_int_equal(fc_match_parse("ip=198.18.0.7", &p, &err), 0);
	assert_int_equal(fc_policy_validate(&p, &err), -1);
	assert_string_equal(err.msg, "missing --rate N/UNIT (or --concurrency N in nginx)");
	assert_int_equal(fc_rates_parse("2000000000/s", &p, &err), 0);
	assert_int_equal(fc_policy_validate(&p, &err), -1);
	assert_string_equal(err.msg, "rate \"2000000000/s\": more than one packet per nanosecond");
	p.count = FC_COUNT_BYTES; /* bytes may go faster than 1/ns */
	assert_int_equal(fc_policy_validate(&p, &err), 0);
	p.count = FC_COUNT_PACKETS;
	assert_int_equal(fc_rates_parse("10/s", &p, &err), 0);
	p.algo = FC_ALGO_WINDOW;
	p.burst = 5;
	assert_int_equal(fc_policy_validate(&p, &err), -1);
	assert_string_equal(err.msg, "a burst (--burst, N/UNIT:B) applies to --algo gcra; --algo window admits N "
				     "per window");
	p.burst = 0;
	assert_int_equal(fc_rates_parse("10/s,100/m:5", &p, &err), 0);
	assert_int_equal(fc_policy_validate(&p, &err), -1);
	assert_string_equal(err.msg, "a burst (--burst, N/UNIT:B) applies to --algo gcra; --algo window admits N "
				     "per window");
	p.algo = FC_ALGO_GCRA;
	assert_int_equal(fc_policy_validate(&p, &err), 0);
	/* --burst is the first tier's shorthand: both for it is an error. */
	assert_int_equal(fc_rates_parse("10/s:20,100/m", &p, &err), 0);
	p.burst = 5;
	assert_int_equal(fc_policy_validate(&p, &err), -1);
	assert_string_equal(err.msg, "the first rate's burst given twice: --burst 5 and --rate 10/s:20 (use one)");
	assert_int_equal(fc_rates_parse("10/s,100/m:20", &p, &err), 0);
	assert_int_equal(fc_policy_validate(&p, &err), 0); /* --burst for the first, :20 the second */
	assert_int_equal(fc_tier_burst(&p, 0), 5);
	assert_int_equal(fc_tier_burst(&p, 1), 20);
	p.burst = 0;
	assert_int_equal(fc_tier_burst(&p, 0), 10);
	assert_int_equal(fc_rates_parse("10/s,1/d:1000000000000", &p, &err), 0);
	assert_int_equal(fc_policy_validate(&p, &err), -1);
	assert_string_equal(err.msg, "rate \"1/d:1000000000000\": burst 1000000000000 at that rate is more than a "
				     "century of credit");
	assert_int_equal(fc_rates_parse("10/s", &p, &err), 0);
	p.new_sources = 100;
	assert_int_equal(fc_policy_validate(&p, &err), -1);
	assert_string_equal(err.msg, "--new-sources applies to the ip=* policy only");
	p.new_sources = 0;
	assert_int_equal(fc_rates_parse("1/d", &p, &err), 0);
	p.burst = 1000000000000ULL;
	assert_int_equal(fc_policy_validate(&p, &err), -1);
	assert_string_equal(err.msg, "rate \"1/d\": burst 1000000000000 at that rate is more than a century of "
				     "credit");
}

/* A node of weight w on a machine of 4 CPUs whose coarse clock ticks every tick_ns. */
static struct fc_node_ctx fc_node(double w, uint64_t tick_ns)
{
	return (struct fc_node_ctx){ .weight = w, .ncpus = 4, .tick_ns = tick_ns };
}

/* p as node enforces it (epoch 9). */
static struct fc_enforced fc_enforce(const struct fc_policy_spec *p, struct fc_node_ctx node)
{
	struct fc_policy_row row = { .spec = *p, .epoch = 9 };
	struct fc_enforced e;

	fc_policy_enforced(&row, &node, NULL, &e);
	return e;
}

static void test_compile(void **state)
{
	struct fc_policy_spec p = { .id = 42, .burst = 5, .action = FC_ACTION_LOG, .count = FC_COUNT_SYN };
	const struct fc_node_ctx alone = fc_node(1, 4000000);
	struct fc_enforced e;
	struct fc_policy k;
	struct fc_err err;

	(void)state;
	assert_int_equal(fc_rates_parse("10/s,3/m", &p, &err), 0);
	k = fc_enforce(&p, alone).k;
	assert_int_equal(k.id, 42);
	assert_int_equal(k.epoch, 9);
	assert_int_equal(k.ntiers, 2);
	assert_int_equal(k.action, FC_ACTION_LOG);
	assert_int_equal(k.count, FC_COUNT_SYN);
	assert_int_equal(k.tier[0].interval_ns, 100000000);
	assert_int_equal(k.tier[0].tolerance_ns, 500000000); /* --burst: first rate only */
	assert_int_equal(k.tier[1].interval_ns, 20000000000ULL);
	assert_int_equal(k.tier[1].tolerance_ns, 60000000000ULL); /* its own N */
	assert_int_equal(k.tier[1].unit_ns, 60000000000ULL);
	assert_int_equal(k.tier[1].limit, 3);
	assert_int_equal(k.flags, 0); /* 0.5 s of tolerance: the coarse clock will do */
	/* ... not where the coarse clock ticks every 100 ms (under 10 ticks). */
	assert_int_equal(fc_enforce(&p, fc_node(1, 100000000)).k.flags, FC_POLICY_PRECISE);
	assert_int_equal(fc_rates_parse("100000/s", &p, &err), 0);
	p.burst = 10; /* 100 us of tolerance: under a tick */
	assert_int_equal(fc_enforce(&p, alone).k.flags, FC_POLICY_PRECISE);
	/* Each tier its own burst. */
	p.burst = 0;
	assert_int_equal(fc_rates_parse("10/s:2,3/m:1", &p, &err), 0);
	k = fc_enforce(&p, alone).k;
	assert_int_equal(k.tier[0].tolerance_ns, 200000000);
	assert_int_equal(k.tier[1].tolerance_ns, 20000000000ULL);
	assert_int_equal(fc_rates_parse("100000/s", &p, &err), 0);
	p.algo = FC_ALGO_WINDOW;
	p.burst = 0;
	assert_int_equal(fc_enforce(&p, alone).k.flags, 0); /* windows: a tick late at a boundary at most */
	p.algo = FC_ALGO_GCRA;
	assert_int_equal(fc_enforce(&p, alone).new_src.limit, 0); /* not ip=* */

	/* ip=*: new sources a second, shared among the CPUs. */
	p.kind = FC_MATCH_STAR;
	p.new_sources = 1000;
	e = fc_enforce(&p, alone);
	assert_int_equal(e.new_src.limit, 250);
	assert_int_equal(e.new_src.interval_ns, 4000000);
	assert_int_equal(e.new_src.tolerance_ns, 1000000000);
	p.new_sources = 0;
	e = fc_enforce(&p, (struct fc_node_ctx){ .weight = 1, .ncpus = 1, .tick_ns = 4000000 });
	assert_int_equal(e.new_src.limit, FC_NEW_SOURCES_DEFAULT);
	e = fc_enforce(&p, fc_node(0.25, 4000000));
	assert_int_equal(e.new_src.limit, FC_NEW_SOURCES_DEFAULT / 4); /* per node, not a share of the fleet's */
}

/* A node's share: N (and an explicit burst) times the weight, at least 1. */
static void test_scale(void **state)
{
	struct fc_policy_spec p = { .id = 1, .burst = 8 };
	struct fc_policy k;
	struct fc_err err;

	(void)state;
	assert_int_equal(fc_rates_parse("10/s,1/d,1000/h:400", &p, &err), 0);
	k = fc_enforce(&p, fc_node(0.25, 4000000)).k;
	assert_int_equal(k.tier[0].limit, 2);
	assert_int_equal(k.tier[0].unit_ns, 1000000000);
	assert_int_equal(k.tier[0].tolerance_ns, 1000000000); /* --burst 8: 2 of 2 per second */
	assert_int_equal(k.tier[1].limit, 1);                 /* at least one per period */
	assert_int_equal(k.tier[1].tolerance_ns, 86400000000000ULL);
	assert_int_equal(k.tier[2].limit, 250);
	assert_int_equal(k.tier[2].tolerance_ns, 1440000000000ULL); /* its :400 as 100 */
	k = fc_enforce(&p, fc_node(1, 4000000)).k;
	assert_int_equal(k.tier[0].limit, 10);
	assert_int_equal(k.tier[0].tolerance_ns, 800000000);
	assert_int_equal(k.tier[2].limit, 1000);
	assert_int_equal(k.tier[2].tolerance_ns, 1440000000000ULL);
}

/* p (its options set) with match and rates: valid if msg is NULL, else
 * refused with msg. */
static void fc_validate_case(struct fc_policy_spec *p, const char *match, const char *rates, const char *msg)
{
	struct fc_err err;

	assert_int_equal(fc_match_parse(match, p, &err), 0);
	assert_int_equal(fc_rates_parse(rates, p, &err), 0);
	if (!msg) {
		if (fc_policy_validate(p, &err) < 0)
			fail_msg("%s %s: %s", match, rates, err.msg);
		return;
	}
	assert_int_equal(fc_policy_validate(p, &err), -1);
	assert_string_equal(err.msg, msg);
}

/* --concurrency: in nginx only, a rate optional, a key's count in a word of its own. */
static void test_validate_concurrency(void **state)
{
	static const struct {
		const char *match, *rates;
		uint64_t burst;
		enum fc_action action;
		enum fc_layer layer;
		const char *msg; /* NULL: valid */
	} cases[] = {
		{ "uid=a", "", 0, FC_ACTION_DROP, FC_LAYER_AUTO, NULL },
		{ "uid=*", "1/s,1/m,1/h", 0, FC_ACTION_DROP, FC_LAYER_AUTO, NULL },
		{ "uid=a", "1/s,1/m,1/h,1/d", 0, FC_ACTION_DROP, FC_LAYER_AUTO, NULL }, /* no key: the slot counts */
		{ "ip=*", "", 0, FC_ACTION_LOG, FC_LAYER_HTTP, NULL },
		{ "ip=198.18.0.7", "1/s", 0, FC_ACTION_DROP, FC_LAYER_AUTO,
		  "--concurrency counts requests in flight in nginx; an ip=-only policy runs at XDP/TC, on packets "
		  "(add --layer http to put it in nginx)" },
		{ "ip=198.18.0.0/15", "1/s", 0, FC_ACTION_DROP, FC_LAYER_XDP,
		  "--concurrency counts requests in flight in nginx; an ip=-only policy runs at XDP/TC, on packets "
		  "(add --layer http to put it in nginx)" },
		{ "uid=*", "1/s,1/m,1/h,1/d", 0, FC_ACTION_DROP, FC_LAYER_AUTO,
		  "4 rates and --concurrency need 5 words in each key's bucket, which has 4 (one per rate, one for the "
		  "count of requests in flight): at most 3 rates with --concurrency in a per-key policy" },
		{ "uid=a", "", 5, FC_ACTION_DROP, FC_LAYER_AUTO, "--burst applies to a --rate, and the policy has none" },
		{ "uid=a", "", 0, FC_ACTION_DELAY, FC_LAYER_AUTO,
		  "action \"delay\" waits a request to a --rate, and the policy has none" },
	};
	struct fc_policy_spec p;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		memset(&p, 0, sizeof(p));
		p.id = 1;
		p.concurrency = 2;
		p.burst = cases[i].burst;
		p.action = cases[i].action;
		p.layer = cases[i].layer;
		fc_validate_case(&p, cases[i].match, cases[i].rates, cases[i].msg);
	}
	/* A node's share: N times its weight, at least one; none stays none. */
	memset(&p, 0, sizeof(p));
	p.concurrency = 10;
	assert_int_equal(fc_enforce(&p, fc_node(0.25, 4000000)).concurrency, 2);
	assert_int_equal(fc_enforce(&p, fc_node(0.01, 4000000)).concurrency, 1);
	p.concurrency = 0;
	assert_int_equal(fc_enforce(&p, fc_node(0.25, 4000000)).concurrency, 0);
}

/* One table for the command line and for JSON: the same bounds, the same
 * parsers, each key named in the message. */
static void test_options_table(void **state)
{
	static const struct {
		const char *json, *field, *msg;
	} bad[] = {
		{ "{\"id\": 1, \"match\": \"uid=a\", \"rates\": [\"1/s\"], \"action\": \"delay\", \"delay_burst\": 2000000}",
		  "delay_burst", "delay_burst \"2000000\": expected a whole number from 1 to 1000000" },
		{ "{\"id\": 1, \"match\": \"uid=a\", \"rates\": [\"1/s\"], \"burst\": 0}", "burst",
		  "burst \"0\": expected a whole number from 1 to 1000000000000" },
		{ "{\"id\": 1, \"match\": \"uid=a\", \"rates\": [\"1/s\"], \"algo\": \"leaky\"}", "algo",
		  "algo \"leaky\": expected one of gcra, window, sliding" },
		{ "{\"id\": 1, \"match\": \"ip=*\", \"rates\": [\"1/s\"], \"new_sources\": \"5\"}", "new_sources",
		  "new_sources: expected null or a whole number" },
		{ "{\"id\": 1, \"match\": \"uid=a\", \"rates\": [\"1/s\", \"2/x\"]}", "rates[1]",
		  "rate \"2/x\": unit must be one of s, m, h, d" },
		{ "{\"id\": 1, \"match\": \"uid=a\", \"rates\": [\"1/s:3\"], \"burst\": 2}", "",
		  "the first rate's burst given twice: --burst 2 and --rate 1/s:3 (use one)" },
		{ "{\"id\": 1, \"match\": \"uid=a\", \"rates\": [\"1/s\"], \"escalate\": \"5/m:2\", \"ban_ttl\": 9}",
		  "escalate", "rate \"5/m:2\": expected N/UNIT (no :B burst here)" },
		{ "{\"id\": 1, \"match\": \"uid=a\", \"rates\": [\"1/s\"], \"escalate\": \"5/m\", \"ban_ttl\": -1}",
		  "ban_ttl", "duration \"-1s\": expected a number at \"-1s\"" },
		{ "{\"id\": 1, \"match\": \"uid=a\", \"rates\": [\"1/s\"], \"colour\": 1}", "colour",
		  "unknown key \"colour\"" },
		{ "{\"id\": 1, \"match\": \"uid=a\", \"rates\": [], \"concurrency\": 0}", "concurrency",
		  "concurrency \"0\": expected a whole number from 1 to 100000000" },
		{ "{\"id\": 1, \"match\": \"uid=a\", \"rates\": []}", "", "missing --rate N/UNIT (or --concurrency N in nginx)" },
		{ "{\"id\": 1, \"match\": \"uid=a\", \"rates\": \"1/s\"}", "rates", "rates: expected an array of 0 to 4 \"N/UNIT\"" },
		{ "{\"id\": 1, \"match\": \"uid=a\", \"rates\": [\"1/s\"], \"override\": 1}", "override",
		  "override: expected true or false" },
		{ "{\"id\": 1, \"match\": \"uid=a\", \"rates\": [\"1/s\"], \"override\": true, \"action\": \"log\"}", "",
		  "--override switches off the policies more general than this one; a dry run (--action log) must not "
		  "change what they enforce" },
	};
	char field[FC_JSON_FIELD_LEN];
	struct fc_policy_spec p;
	const struct fc_opt *o;
	struct fc_err err;
	json_t *j;
	size_t i;

	(void)state;
	for (o = fc_policy_opts; o->name; o++)
		assert_true(fc_opt_sane(o));
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		j = json_loads(bad[i].json, 0, NULL);
		assert_non_null(j);
		assert_int_equal(fc_policy_from_json(j, &p, field, &err), -1);
		assert_string_equal(field, bad[i].field);
		assert_string_equal(err.msg, bad[i].msg);
		json_decref(j);
	}
	j = json_loads("{\"id\": 9, \"match\": \"uid=a\", \"rates\": [\"1/s\", \"100/d\"], \"action\": \"delay\", "
		       "\"delay_burst\": 4, \"escalate\": \"5/m\", \"ban_ttl\": 3600}", 0, NULL);
	assert_int_equal(fc_policy_from_json(j, &p, field, &err), 0);
	assert_int_equal(p.id, 9);
	assert_int_equal(p.ntiers, 2);
	assert_int_equal(p.action, FC_ACTION_DELAY);
	assert_int_equal(p.delay_burst, 4);
	assert_int_equal(p.escalate.n, 5);
	assert_int_equal(p.ban_ttl, 3600);
	json_decref(j);
	/* Export writes the per-tier bursts in the rates; import reads them back. */
	assert_int_equal(fc_rates_parse("10/s:3,100/d:50", &p, &err), 0);
	p.action = FC_ACTION_DROP;
	p.escalate.n = 0;
	p.ban_ttl = 0;
	p.delay_burst = 0;
	j = fc_policy_to_json(&p);
	{
		struct fc_policy_spec q;
		char *text = json_dumps(json_object_get(j, "rates"), JSON_COMPACT);

		assert_string_equal(text, "[\"10/s:3\",\"100/d:50\"]");
		free(text);
		assert_int_equal(fc_policy_from_json(j, &q, field, &err), 0);
		assert_memory_equal(q.rate, p.rate, sizeof(p.rate));
	}
	json_decref(j);
	/* --override: true, and back; false is the same as absent. */
	p.override = true;
	j = fc_policy_to_json(&p);
	{
		struct fc_policy_spec q;

		assert_true(json_is_true(json_object_get(j, "override")));
		assert_int_equal(fc_policy_from_json(j, &q, field, &err), 0);
		assert_true(q.override);
		json_object_set_new(j, "override", json_false());
		assert_int_equal(fc_policy_from_json(j, &q, field, &err), 0);
		assert_false(q.override);
	}
	json_decref(j);
	/* A cap alone: no rates, and back. */
	memset(&p, 0, sizeof(p));
	p.id = 3;
	p.concurrency = 7;
	assert_int_equal(fc_match_parse("uid=*", &p, &err), 0);
	j = fc_policy_to_json(&p);
	{
		struct fc_policy_spec q;
		char *text = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS);

		assert_non_null(strstr(text, "\"concurrency\":7"));
		assert_non_null(strstr(text, "\"rates\":[]"));
		free(text);
		assert_int_equal(fc_policy_from_json(j, &q, field, &err), 0);
		assert_memory_equal(&q, &p, sizeof(p));
	}
	json_decref(j);
}

/* --action delay waits to a GCRA rate: with a window it is refused as new
 * (naming what delays), and loads as it did when stored (validate). */
static void test_delay_algo(void **state)
{
	struct fc_policy_spec p = { .id = 5, .action = FC_ACTION_DELAY, .delay_burst = 3 };
	struct fc_err err;

	(void)state;
	assert_int_equal(fc_match_parse("uid=a", &p, &err), 0);
	assert_int_equal(fc_rates_parse("1/s", &p, &err), 0);
	assert_int_equal(fc_policy_validate_new(&p, &err), 0);
	p.algo = FC_ALGO_WINDOW;
	assert_int_equal(fc_policy_validate(&p, &err), 0);
	assert_int_equal(fc_policy_validate_new(&p, &err), -1);
	assert_string_equal(err.msg, "--action delay waits requests to a GCRA rate (--algo gcra, the default); --algo "
				     "window never delays, it denies what is over its window (that is --action drop)");
	p.algo = FC_ALGO_SLIDING;
	assert_int_equal(fc_policy_validate_new(&p, &err), -1);
	p.action = FC_ACTION_DROP;
	p.delay_burst = 0;
	assert_int_equal(fc_policy_validate_new(&p, &err), 0);
}

/* The keys added with the round's migration: show_keys (true, false or
 * null: not said) and fleet; a policy's layer written only where the match
 * would not give it. An export from before them imports as it was. */
static void test_json_new_keys(void **state)
{
	static const struct {
		const char *json;
		int show_keys;
		bool fleet;
		enum fc_layer layer;
	} cases[] = {
		{ "{\"id\": 1, \"match\": \"uid=*\", \"rates\": [\"1/s\"]}", 0, false, FC_LAYER_AUTO },
		{ "{\"id\": 1, \"match\": \"uid=*\", \"rates\": [\"1/s\"], \"show_keys\": true, \"fleet\": true}", 1,
		  true, FC_LAYER_AUTO },
		{ "{\"id\": 1, \"match\": \"uid=*\", \"rates\": [\"1/s\"], \"show_keys\": false, \"fleet\": false}", -1,
		  false, FC_LAYER_AUTO },
		{ "{\"id\": 1, \"match\": \"uid=*\", \"rates\": [\"1/s\"], \"show_keys\": null, \"fleet\": null}", 0,
		  false, FC_LAYER_AUTO },
		{ "{\"id\": 1, \"match\": \"ip=*\", \"rates\": [\"1/s\"], \"layer\": \"http\"}", 0, false, FC_LAYER_HTTP },
		{ "{\"id\": 1, \"match\": \"ip=*\", \"rates\": [\"1/s\"], \"layer\": \"xdp\"}", 0, false, FC_LAYER_XDP },
	};
	char field[FC_JSON_FIELD_LEN];
	struct fc_policy_spec p, q;
	struct fc_err err;
	json_t *j, *out;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		j = json_loads(cases[i].json, 0, NULL);
		assert_non_null(j);
		if (fc_policy_from_json(j, &p, field, &err) < 0)
			fail_msg("case %zu: %s", i, err.msg);
		assert_int_equal(p.show_keys, cases[i].show_keys);
		assert_int_equal(p.fleet, cases[i].fleet);
		assert_int_equal(p.layer, cases[i].layer);
		out = fc_policy_to_json(&p);
		assert_true(cases[i].show_keys ? json_is_boolean(json_object_get(out, "show_keys")) &&
							 json_is_true(json_object_get(out, "show_keys")) == (cases[i].show_keys > 0) :
						 json_is_null(json_object_get(out, "show_keys")));
		assert_true(json_is_boolean(json_object_get(out, "fleet")));
		/* --layer xdp on an ip= policy is what its match gives: null. */
		assert_true(cases[i].layer == FC_LAYER_HTTP ? json_is_string(json_object_get(out, "layer")) :
							      json_is_null(json_object_get(out, "layer")));
		assert_int_equal(fc_policy_from_json(out, &q, field, &err), 0);
		assert_int_equal(q.show_keys, p.show_keys);
		assert_int_equal(q.fleet, p.fleet);
		assert_int_equal(fc_policy_layer(&q), fc_policy_layer(&p));
		json_decref(out);
		json_decref(j);
	}
	j = json_loads("{\"id\": 1, \"match\": \"uid=*\", \"rates\": [\"1/s\"], \"fleet\": 1}", 0, NULL);
	assert_int_equal(fc_policy_from_json(j, &p, field, &err), -1);
	assert_string_equal(field, "fleet");
	assert_string_equal(err.msg, "fleet: expected true or false");
	json_decref(j);
	j = json_loads("{\"id\": 1, \"match\": \"uid=*\", \"rates\": [\"1/s\"], \"show_keys\": \"yes\"}", 0, NULL);
	assert_int_equal(fc_policy_from_json(j, &p, field, &err), -1);
	assert_string_equal(field, "show_keys");
	assert_string_equal(err.msg, "show_keys: expected true or false");
	json_decref(j);
}

/* --warmup: GCRA only, 1 s to 1 d, a word beside the rates' (at most 3
 * rates), the first rate the fastest, a burst within the ramp's bounds;
 * compiled to ns, kept by a node's scaling, through JSON as seconds. */
static void test_warmup(void **state)
{
	static const struct {
		const char *rates;
		enum fc_algo algo;
		int64_t warmup;
		const char *msg;
	} bad[] = {
		{ "10/s", FC_ALGO_WINDOW, 10, "--warmup ramps a GCRA rate from N/3 to N; --algo window admits N per "
					       "window, with no rate to ramp" },
		{ "10/s", FC_ALGO_SLIDING, 10, "--warmup ramps a GCRA rate from N/3 to N; --algo sliding admits N per "
						"window, with no rate to ramp" },
		{ "10/s", FC_ALGO_GCRA, 86401, "--warmup 1d1s: expected 1s to 1d" },
		{ "10/s,1/m,1/h,1/d", FC_ALGO_GCRA, 10, "4 rates and --warmup need 5 words in each bucket, which has 4 "
						       "(one per rate, one for the ramp): at most 3 rates with --warmup" },
		{ "100/m,5/s", FC_ALGO_GCRA, 10, "--warmup ramps the first rate, 100/m: give the rate of the shortest "
						 "unit first (5/s)" },
		{ "1/d:20000", FC_ALGO_GCRA, 10, "rate \"1/d:20000\": burst 20000 at that rate is more than 36 years of "
						 "credit, the most --warmup ramps" },
	};
	char field[FC_JSON_FIELD_LEN];
	struct fc_policy_spec p, s;
	struct fc_policy k;
	struct fc_err err;
	json_t *j;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		p = (struct fc_policy_spec){ .id = 1, .algo = bad[i].algo, .warmup = bad[i].warmup };
		assert_int_equal(fc_match_parse("ip=198.18.0.7", &p, &err), 0);
		assert_int_equal(fc_rates_parse(bad[i].rates, &p, &err), 0);
		assert_int_equal(fc_policy_validate(&p, &err), -1);
		assert_string_equal(err.msg, bad[i].msg);
	}
	p = (struct fc_policy_spec){ .id = 1, .warmup = 86400, .action = FC_ACTION_DELAY };
	assert_int_equal(fc_match_parse("uid=u", &p, &err), 0);
	assert_int_equal(fc_rates_parse("30/s,1/m,1000/d", &p, &err), 0);
	assert_int_equal(fc_policy_validate(&p, &err), 0); /* 3 rates, a day, delay: all fine */
	assert_int_equal(fc_policy_words(&p), 4);
	k = fc_enforce(&p, fc_node(1, 4000000)).k;
	assert_int_equal(k.warmup_ms, 86400000);
	/* While it warms the credit is at least 10 ms of the rate, a tick of the
	 * coarsest clock: the coarse clock does (its burst decides, as ever). */
	assert_int_equal(k.flags & FC_POLICY_PRECISE, 0);
	k = fc_enforce(&p, fc_node(0.5, 4000000)).k;
	assert_int_equal(k.warmup_ms, 86400000); /* a node's share of the rate, the same ramp */
	assert_int_equal(k.tier[0].limit, 15);
	j = fc_policy_to_json(&p);
	assert_int_equal(json_integer_value(json_object_get(j, "warmup")), 86400);
	assert_int_equal(fc_policy_from_json(j, &s, field, &err), 0);
	assert_int_equal(s.warmup, 86400);
	json_decref(j);
	j = json_loads("{\"id\": 1, \"match\": \"uid=a\", \"rates\": [\"1/s\"], \"warmup\": \"10s\"}", 0, NULL);
	assert_int_equal(fc_policy_from_json(j, &s, field, &err), -1);
	assert_string_equal(field, "warmup");
	assert_string_equal(err.msg, "warmup: expected null or a whole number of seconds");
	json_decref(j);
	j = json_loads("{\"id\": 1, \"match\": \"uid=a\", \"rates\": [\"1/s\"], \"algo\": \"window\", \"warmup\": 5}", 0,
		       NULL);
	assert_int_equal(fc_policy_from_json(j, &s, field, &err), -1);
	assert_string_equal(err.msg, "--warmup ramps a GCRA rate from N/3 to N; --algo window admits N per window, "
				     "with no rate to ramp");
	json_decref(j);
}

/* --warmup and --concurrency in one policy: a key's bucket holds the rates,
 * the ramp's word and the count's, 4 words: at most 2 rates per key, and the
 * message names both options. Without keys the count is the slot's. */
static void test_warmup_concurrency(void **state)
{
	static const struct {
		const char *match, *rates;
		enum fc_algo algo;
		const char *msg; /* NULL: valid */
	} cases[] = {
		{ "uid=*", "30/s,1000/h", FC_ALGO_GCRA, NULL },
		{ "uid=*,uri=/login", "30/s", FC_ALGO_GCRA, NULL },
		{ "uid=a", "30/s,1/m,1000/h", FC_ALGO_GCRA, NULL }, /* no key: the slot counts */
		{ "uid=*", "30/s,1/m,1000/h", FC_ALGO_GCRA,
		  "3 rates, --warmup and --concurrency need 5 words in each key's bucket, which has 4 (one per rate, "
		  "one for the ramp, one for the count of requests in flight): at most 2 rates with --warmup and "
		  "--concurrency in a per-key policy" },
		{ "header:x-k=*", "30/s,1/m,1/h,1/d", FC_ALGO_GCRA,
		  "4 rates, --warmup and --concurrency need 6 words in each key's bucket, which has 4 (one per rate, "
		  "one for the ramp, one for the count of requests in flight): at most 2 rates with --warmup and "
		  "--concurrency in a per-key policy" },
		{ "uid=a", "30/s,1/m,1/h,1/d", FC_ALGO_GCRA,
		  "4 rates and --warmup need 5 words in each bucket, which has 4 (one per rate, one for the ramp): at "
		  "most 3 rates with --warmup" },
		{ "uid=*", "", FC_ALGO_GCRA, "--warmup ramps a --rate from N/3 to N, and the policy has none" },
		{ "uid=*", "30/s", FC_ALGO_WINDOW,
		  "--warmup ramps a GCRA rate from N/3 to N; --algo window admits N per window, with no rate to ramp" },
	};
	struct fc_policy_spec p;
	struct fc_err err;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		p = (struct fc_policy_spec){ .id = 1, .algo = cases[i].algo, .warmup = 10, .concurrency = 2 };
		fc_validate_case(&p, cases[i].match, cases[i].rates, cases[i].msg);
		assert_true(cases[i].msg || fc_policy_words(&p) <= FC_MAX_TIERS);
	}
	/* Each word counted once: 2 rates, the ramp, a key's count. */
	p = (struct fc_policy_spec){ .id = 1, .warmup = 10, .concurrency = 2 };
	assert_int_equal(fc_match_parse("uid=*", &p, &err), 0);
	assert_int_equal(fc_rates_parse("30/s,1000/h", &p, &err), 0);
	assert_int_equal(fc_policy_words(&p), 4);
	p.warmup = 0;
	assert_int_equal(fc_policy_words(&p), 3);
}

/* --fleet: one rate, no --concurrency, --warmup or --action delay, not
 * ip=* at XDP/TC, a GCRA burst of at most 2^32; and never scaled by the
 * node's weight (its shares are the fleet's split, not R x W). */
#define FC_NO_STAR                                                                                        \
	"ip=* --fleet is refused at XDP/TC (per-source buckets are evicted by the kernel and sources can be " \
	"spoofed; use --layer http to enforce it per address in nginx)"
#define FC_NO_CONC                                                                                           \
	"--concurrency is refused with --fleet: places in flight are not leasable credit, and the key entry has " \
	"no word left for them"

static void test_fleet(void **state)
{
	static const struct {
		const char *match, *rates;
		enum fc_algo algo;
		enum fc_action action;
		enum fc_layer layer;
		uint32_t concurrency;
		int64_t warmup;
		const char *msg; /* NULL: valid */
	} cases[] = {
		{ "uid=*", "100/d", FC_ALGO_WINDOW, FC_ACTION_DROP, FC_LAYER_AUTO, 0, 0, NULL },
		{ "uid=*,arg:api=login", "10/s:20", FC_ALGO_GCRA, FC_ACTION_LOG, FC_LAYER_AUTO, 0, 0, NULL },
		{ "ip=198.18.0.0/15", "60/h", FC_ALGO_SLIDING, FC_ACTION_DROP, FC_LAYER_AUTO, 0, 0, NULL },
		{ "ip=198.18.0.1", "60/m", FC_ALGO_WINDOW, FC_ACTION_DROP, FC_LAYER_XDP, 0, 0, NULL },
		{ "ip=*", "60/m", FC_ALGO_WINDOW, FC_ACTION_DROP, FC_LAYER_HTTP, 0, 0, NULL },
		{ "ip=*", "60/m", FC_ALGO_WINDOW, FC_ACTION_DROP, FC_LAYER_AUTO, 0, 0,
		  FC_NO_STAR },
		{ "ip=*/24", "60/m", FC_ALGO_GCRA, FC_ACTION_DROP, FC_LAYER_XDP, 0, 0,
		  FC_NO_STAR },
		{ "uid=*", "100/d", FC_ALGO_WINDOW, FC_ACTION_DROP, FC_LAYER_AUTO, 5, 0,
		  FC_NO_CONC },
		{ "uid=*", "", FC_ALGO_WINDOW, FC_ACTION_DROP, FC_LAYER_AUTO, 5, 0,
		  FC_NO_CONC },
		{ "uid=*", "10/s,100/d", FC_ALGO_WINDOW, FC_ACTION_DROP, FC_LAYER_AUTO, 0, 0,
		  "--fleet takes one --rate, and this policy has 2: the entry holds one tier's credit, demand and "
		  "lending words (give the others a policy of their own)" },
		{ "uid=*", "10/s", FC_ALGO_GCRA, FC_ACTION_DROP, FC_LAYER_AUTO, 0, 60,
		  "--warmup is refused with --fleet: a ramp is per node, and its word is the fleet's lending word" },
		{ "uid=*", "10/s", FC_ALGO_GCRA, FC_ACTION_DELAY, FC_LAYER_AUTO, 0, 0,
		  "--action delay is refused with --fleet: shaping would spend credit that a node had lent out (use "
		  "drop or log)" },
		{ "uid=*", "10/s:4294967296", FC_ALGO_GCRA, FC_ACTION_DROP, FC_LAYER_AUTO, 0, 0, NULL },
		{ "uid=*", "10/s:4294967297", FC_ALGO_GCRA, FC_ACTION_DROP, FC_LAYER_AUTO, 0, 0,
		  "rate \"10/s:4294967297\": --fleet --algo gcra takes a burst of at most 4294967296 (the fleet's "
		  "bucket is split into 32-bit shares)" },
		{ "uid=*", "16777216/m", FC_ALGO_SLIDING, FC_ACTION_DROP, FC_LAYER_AUTO, 0, 0,
		  "rate \"16777216/m\": --algo sliding counts at most 16777215 per window (24 bits of a 64-bit word); "
		  "use gcra or window for more" },
		{ "uid=*", "1000000000000/d", FC_ALGO_WINDOW, FC_ACTION_DROP, FC_LAYER_AUTO, 0, 0, NULL },
	};
	struct fc_policy_spec p;
	struct fc_policy k;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		p = (struct fc_policy_spec){ .id = 7, .fleet = true, .algo = cases[i].algo, .action = cases[i].action,
					     .layer = cases[i].layer, .concurrency = cases[i].concurrency,
					     .warmup = cases[i].warmup };
		fc_validate_case(&p, cases[i].match, cases[i].rates, cases[i].msg);
		/* Without --fleet, the same policy is not refused for what --fleet refuses. */
		if (cases[i].msg && strstr(cases[i].msg, "fleet")) {
			struct fc_err err;

			p.fleet = false;
			if (p.action == FC_ACTION_DELAY)
				p.algo = FC_ALGO_GCRA;
			if (fc_policy_validate(&p, &err) < 0)
				fail_msg("case %zu without --fleet: %s", i, err.msg);
		}
	}
	/* 3/d at a weight of 0.25: a local policy is 1 per node, a fleet's is
	 * the fleet's 3 (the split makes the shares). */
	p = (struct fc_policy_spec){ .id = 7, .algo = FC_ALGO_WINDOW };
	fc_validate_case(&p, "uid=*", "3/d", NULL);
	k = fc_enforce(&p, fc_node(0.25, 4000000)).k;
	assert_int_equal(k.tier[0].limit, 1);
	p.fleet = true;
	k = fc_enforce(&p, fc_node(0.25, 4000000)).k;
	assert_int_equal(k.tier[0].limit, 3);
	assert_int_equal(k.tier[0].interval_ns, 28800000000000ULL);
}

/* The names nginx's index keeps are counted as nginx folds them: a header's
 * '_' is its '-' there (header:x_q matches X-Q), so header:x_h0 brings no
 * 33rd name beside header:x-h0. (Found by review 28b: refused wrongly.) */
static void test_names_fold(void **state)
{
	struct fc_names *names = calloc(1, sizeof(*names));
	struct fc_policy_spec p;
	struct fc_err err;
	char m[64];
	int i;

	(void)state;
	assert_non_null(names);
	for (i = 0; i < 32; i++) {
		memset(&p, 0, sizeof(p));
		snprintf(m, sizeof(m), "header:x-h%d=*", i);
		assert_int_equal(fc_match_parse(m, &p, &err), 0);
		assert_int_equal(fc_names_add(names, &p, &err), 0);
	}
	memset(&p, 0, sizeof(p));
	assert_int_equal(fc_match_parse("header:X_H0=*", &p, &err), 0);
	assert_int_equal(fc_names_add(names, &p, &err), 0);
	free(names);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ids),     cmocka_unit_test(test_rates),    cmocka_unit_test(test_matches),
		cmocka_unit_test(test_star_units),
		cmocka_unit_test(test_enums),   cmocka_unit_test(test_validate),
		cmocka_unit_test(test_validate_concurrency), cmocka_unit_test(test_compile),
		cmocka_unit_test(test_scale),   cmocka_unit_test(test_options_table), cmocka_unit_test(test_json_new_keys), cmocka_unit_test(test_delay_algo),
		cmocka_unit_test(test_warmup),
		cmocka_unit_test(test_warmup_concurrency),
		cmocka_unit_test(test_fleet),
		cmocka_unit_test(test_names_fold),
	};

	return fc_run_group("policies (parsing, validation, compiling)", tests, NULL, NULL);
}
