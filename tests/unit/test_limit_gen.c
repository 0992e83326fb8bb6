// SPDX-License-Identifier: BSD-2-Clause
/*
 * A change of a GCRA rate in maps/fc_limit.h (Changing a rate), with an
 * injected clock: the rescale's arithmetic against 128-bit integers, a
 * bucket brought to a new generation before its charge (raised, lowered, a
 * burst lowered, a tier added, several tiers, a warm-up, a delay queue),
 * buckets older than the kept generation, threads racing on a bucket to
 * bring; and fc_policy_enforced's generations, kept or moved on from what a
 * layer has published.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "fc_enforce.h"
#include "fc_policy.h"
#include "fc_test.h"

#define MS  (1000000ULL)
#define SEC FC_NS_PER_SEC
/* UTC ns in 2026, aligned to the minute. */
#define T0 (1795316400ULL * SEC)

/* What a layer publishes for a slot before its first publish. */
static const struct fc_enforced fc_nothing;

/* Policy 1 with rates (and burst, warm-up, action and queue), as this node
 * enforces it over pub (what is published for it; NULL: nothing yet). */
static struct fc_enforced fc_enf(const char *rates, uint64_t burst, int64_t warmup, enum fc_action action,
				 uint32_t queue, const struct fc_enforced *pub)
{
	struct fc_policy_row row = { .spec = { .id = 1,
					       .burst = burst,
					       .algo = FC_ALGO_GCRA,
					       .action = action,
					       .delay_burst = queue,
					       .kind = FC_MATCH_NONE,
					       .warmup = warmup },
				     .epoch = 7 };
	struct fc_node_ctx node = fc_node_here(1);
	struct fc_enforced e;
	struct fc_err err;

	if (fc_match_parse("uid=*", &row.spec, &err) < 0 || fc_rates_parse(rates, &row.spec, &err) < 0 ||
	    fc_policy_validate(&row.spec, &err) < 0)
		fail_msg("%s: %s", rates, err.msg);
	fc_policy_enforced(&row, &node, pub ? pub : &fc_nothing, &e);
	return e;
}

static struct fc_enforced fc_gcra(const char *rates, const struct fc_enforced *pub)
{
	return fc_enf(rates, 0, 0, FC_ACTION_DROP, 0, pub);
}

static int fc_try(const struct fc_enforced *e, __u64 *st, __u64 now, __u64 cost)
{
	struct fc_charge ch;

	return fc_limit_try(e->k.algo, e->k.ntiers, &e->k.lim, st, now, cost, &ch);
}

static int fc_try_n(const struct fc_enforced *e, __u64 *st, __u64 now, int n)
{
	int i, ok = 0;

	for (i = 0; i < n; i++)
		ok += fc_try(e, st, now, 1);
	return ok;
}

static __u64 fc_gcd(__u64 a, __u64 b)
{
	__u64 t;

	while (b) {
		t = a % b;
		a = b;
		b = t;
	}
	return a;
}

/* ceil(lead * a / b), a and b below 2^64, in 128 bits. */
static __u64 fc_exact(__u64 lead, __u64 a, __u64 b)
{
	return (__u64)(((unsigned __int128)lead * a + b - 1) / b);
}

/*
 * The rescale against 128-bit arithmetic, on random tiers and leads up to
 * the room's bound. Rates of every unit with counts up to 100,000: their
 * ratios reduce to 31 bits a side, exact. Counts up to 10^12 (bytes): never
 * short of the exact lead, and within what the ratio's 31 bits a side
 * allow of it.
 */
static void test_rescale_arith(void **state)
{
	static const __u64 units[] = { 1, 60, 3600, 86400 };
	struct fc_tier from, to;
	__u64 rs, lead, got, num, den, a, b, g, cap = FC_ROOM_MAX;
	long double x;
	int i, exact = 0;

	(void)state;
	srandom(27);
	for (i = 0; i < 100000; i++) {
		from = (struct fc_tier){ .unit_ns = units[random() % 4] * SEC, .limit = (__u64)random() % 100000 + 1 };
		to = (struct fc_tier){ .unit_ns = units[random() % 4] * SEC, .limit = (__u64)random() % 100000 + 1 };
		lead = i % 2 ? (__u64)random() % (3600 * SEC) : ((__u64)random() << 31 ^ (__u64)random()) % FC_ROOM_MAX;
		rs = fc_rescale_of(&from, &to);
		a = to.unit_ns * from.limit;
		b = from.unit_ns * to.limit;
		g = fc_gcd(a, b);
		if ((rs & 3) == FC_RESCALE_FULL) {
			assert_true(a / g > FC_RESCALE_MAX && a / b > (1u << 29));
			continue;
		}
		assert_int_equal(rs & 3, FC_RESCALE_SCALE);
		num = (rs >> 2) & FC_RESCALE_MAX;
		den = rs >> 33;
		got = fc_rescale_lead(lead, rs, cap);
		x = (long double)lead * a / b;
		if (x >= (long double)cap)
			assert_int_equal(got, cap);
		else if (a / g <= FC_RESCALE_MAX && b / g <= FC_RESCALE_MAX && ++exact)
			assert_int_equal(got, fc_exact(lead, a, b));
		else
			assert_true(got >= fc_exact(lead, a, b) && (long double)got <= x * (1 + 4.0L / num + 4.0L / den) + 2);
	}
	/* Same units, or counts below 2^15: exact. */
	assert_true(exact > 75000);
	for (i = 0; i < 100000; i++) {
		from = (struct fc_tier){ .unit_ns = units[random() % 4] * SEC,
					 .limit = (__u64)random() * (__u64)random() % 1000000000000ULL + 1 };
		to = (struct fc_tier){ .unit_ns = units[random() % 4] * SEC,
				       .limit = (__u64)random() * (__u64)random() % 1000000000000ULL + 1 };
		lead = ((__u64)random() << 31 ^ (__u64)random()) % (i % 2 ? 3600 * SEC : FC_ROOM_MAX);
		rs = fc_rescale_of(&from, &to);
		x = (long double)to.unit_ns * from.limit / ((long double)from.unit_ns * to.limit);
		if ((rs & 3) == FC_RESCALE_FULL) {
			assert_true(x > (long double)(1ULL << 29)); /* only where T grew that much */
			continue;
		}
		assert_int_equal(rs & 3, FC_RESCALE_SCALE);
		num = (rs >> 2) & FC_RESCALE_MAX;
		den = rs >> 33;
		got = fc_rescale_lead(lead, rs, cap);
		x *= lead;
		if (x >= (long double)cap) {
			assert_int_equal(got, cap);
			continue;
		}
		assert_true((long double)got + 1 >= x);
		assert_true((long double)got <= x * (1 + 4.0L / num + 4.0L / den) + 2);
	}
	/* 10/m to 3/m is 10/3, 3/m to 10/m 3/10: exact both ways. */
	from = (struct fc_tier){ .unit_ns = 60 * SEC, .limit = 3 };
	to = (struct fc_tier){ .unit_ns = 60 * SEC, .limit = 10 };
	assert_int_equal(fc_rescale_of(&from, &to), FC_RESCALE(FC_RESCALE_SCALE, 3, 10));
	assert_int_equal(fc_rescale_lead(59 * SEC, fc_rescale_of(&from, &to), cap), 17700 * MS);
	assert_int_equal(fc_rescale_lead(12 * SEC, fc_rescale_of(&to, &from), cap), 40 * SEC);
	assert_int_equal(fc_rescale_lead(1, fc_rescale_of(&to, &from), cap), 4); /* 10/3 ns, up */
	assert_int_equal(fc_rescale_lead(59 * SEC, fc_rescale_of(&from, &to), 10 * SEC), 10 * SEC);
	/* A word the loader never writes: no trap, no wrap. */
	assert_int_equal(fc_rescale_lead(FC_ROOM_MAX, FC_RESCALE(FC_RESCALE_SCALE, FC_RESCALE_MAX, 1), cap), cap);
	assert_int_equal(fc_rescale_lead(5, FC_RESCALE(FC_RESCALE_SCALE, 7, 0), cap), cap);
	assert_int_equal(fc_rescale_lead(5, FC_RESCALE(FC_RESCALE_SCALE, 0, 7), cap), 0);
}

/* 3/m raised to 10/m: 3 used are 17.7 s at 10/m a second on, 7 more pass. */
static void test_raise(void **state)
{
	struct fc_enforced a = fc_gcra("3/m", NULL), b = fc_gcra("10/m", &a);
	__u64 st[FC_MAX_TIERS] = { 0 };

	(void)state;
	assert_int_equal(fc_try_n(&a, st, T0, 5), 3);
	assert_int_equal(FC_GEN(&b.k.lim), 1);
	assert_int_equal(fc_try_n(&b, st, T0 + SEC, 10), 7);
	assert_int_equal(st[0] >> FC_GEN_SHIFT, 1);
	assert_int_equal(st[0] & FC_TAT_MASK, T0 + SEC + 17700 * MS + 42 * SEC);
	/* A charge of the old copy (a publish's instant) finds a word of a
	 * newer generation: full, nothing written. */
	assert_int_equal(fc_try_n(&a, st, T0 + 30 * SEC, 1), 0);
	assert_int_equal(st[0] >> FC_GEN_SHIFT, 1);
}

/* 10/m lowered to 3/m: 2 used are 40 s at 3/m, 1 more passes (its used
 * fraction of the new burst, 2/10 of 3, would allow 2: never more). */
static void test_lower(void **state)
{
	struct fc_enforced a = fc_gcra("10/m", NULL), b = fc_gcra("3/m", &a);
	__u64 st[FC_MAX_TIERS] = { 0 };

	(void)state;
	assert_int_equal(fc_try_n(&a, st, T0, 2), 2);
	assert_int_equal(fc_try_n(&b, st, T0, 3), 1);
	assert_int_equal(fc_try_n(&b, st, T0 + 19 * SEC, 1), 0);
	assert_int_equal(fc_try_n(&b, st, T0 + 20 * SEC, 1), 1);
}

/*
 * More than full: 300 s of 1/m's 60 s burst (5 used at 10/s) stays as it
 * is, refused, until what is left of it fits (a lead of 100 ms at 10/s is
 * 60 s at 1/m); not read as the clock stepped back (which would empty it).
 */
static void test_more_than_full(void **state)
{
	struct fc_enforced a = fc_gcra("10/s", NULL), b = fc_gcra("1/m", &a);
	__u64 st[FC_MAX_TIERS] = { 0 }, w;

	(void)state;
	assert_int_equal(fc_try_n(&a, st, T0, 5), 5);
	w = st[0];
	assert_int_equal(fc_try_n(&b, st, T0 + 10 * MS, 1), 0);
	assert_int_equal(st[0], w);
	assert_int_equal(fc_try_n(&b, st, T0 + 399 * MS, 1), 0);
	assert_int_equal(st[0], w);
	assert_int_equal(fc_try_n(&b, st, T0 + 400 * MS, 1), 0); /* brought: exactly full */
	assert_int_equal(st[0], (T0 + 60400 * MS) | 1ULL << FC_GEN_SHIFT);
	assert_int_equal(fc_try_n(&b, st, T0 + 60399 * MS, 1), 0);
	assert_int_equal(fc_try_n(&b, st, T0 + 60400 * MS, 2), 1);
}

/* The burst alone lowered (the interval kept): the same word, a new
 * generation; a lead past the new room waits until it fits. */
static void test_burst_lowered(void **state)
{
	struct fc_enforced a = fc_enf("1/s", 100, 0, FC_ACTION_DROP, 0, NULL),
			   b = fc_enf("1/s", 2, 0, FC_ACTION_DROP, 0, &a);
	__u64 st[FC_MAX_TIERS] = { 0 };

	(void)state;
	assert_int_equal(FC_GEN(&b.k.lim), 1);
	assert_int_equal(b.k.lim.rescale[0], FC_RESCALE_SAME);
	assert_int_equal(fc_try_n(&a, st, T0, 100), 100);
	assert_int_equal(fc_try_n(&b, st, T0 + SEC, 5), 0);
	assert_int_equal(fc_try_n(&b, st, T0 + 97 * SEC, 5), 0);
	assert_int_equal(fc_try_n(&b, st, T0 + 98 * SEC, 5), 0); /* fits, and full */
	assert_int_equal(fc_try_n(&b, st, T0 + 99 * SEC, 5), 1);
}

/* A tier added starts empty (as a new policy's); the others keep theirs.
 * 10/m, then 10/m,5/h: the hour's is new, so 5 of the minute's next 10. */
static void test_tier_added(void **state)
{
	struct fc_enforced a = fc_gcra("10/m", NULL), b = fc_gcra("10/m,5/h", &a), c;
	__u64 st[FC_MAX_TIERS] = { 0 };

	(void)state;
	assert_int_equal((b.k.lim.rescale[0]), FC_RESCALE_SAME);
	assert_int_equal((b.k.lim.rescale[1] & 3), FC_RESCALE_FRESH);
	assert_int_equal(fc_try_n(&a, st, T0, 10), 10);
	/* An hour's word left from long ago, of another generation: empty. */
	st[1] = (T0 + 3000 * SEC) | 3ULL << FC_GEN_SHIFT;
	assert_int_equal(fc_try_n(&b, st, T0 + 30 * SEC, 10), 5);
	assert_int_equal(fc_try_n(&b, st, T0 + 90 * SEC, 10), 0);
	/* Taken away again, and back: empty again. */
	c = fc_gcra("10/m", &b);
	assert_int_equal(FC_GEN(&c.k.lim), FC_GEN(&b.k.lim));
	b = fc_gcra("10/m,5/h", &c);
	assert_int_equal(FC_GEN(&b.k.lim), 2);
	assert_int_equal(fc_try_n(&b, st, T0 + 150 * SEC, 10), 5);
}

/*
 * Two changes. With a charge between, each rescales from the one before;
 * without, a bucket is older than the kept generation: full until its TAT
 * passes. Published as one (both changes in the store before a publish),
 * the published limits are still the first: rescaled from them.
 */
static void test_two_changes(void **state)
{
	struct fc_enforced g0 = fc_gcra("3/m", NULL), g1 = fc_gcra("10/m", &g0), g2 = fc_gcra("20/m", &g1),
			   g2direct = fc_gcra("20/m", &g0);
	__u64 a[FC_MAX_TIERS] = { 0 }, b[FC_MAX_TIERS] = { 0 }, c[FC_MAX_TIERS] = { 0 };

	(void)state;
	assert_int_equal(fc_try_n(&g0, a, T0, 3), 3);
	assert_int_equal(fc_try_n(&g0, b, T0, 3), 3);
	assert_int_equal(fc_try_n(&g0, c, T0, 3), 3);
	assert_int_equal(fc_try_n(&g1, a, T0 + SEC, 1), 1);
	assert_int_equal(fc_try_n(&g2, a, T0 + 2 * SEC, 20), 16);
	assert_int_equal(fc_try_n(&g2, b, T0 + 2 * SEC, 5), 0);
	assert_int_equal(fc_try_n(&g2, b, T0 + 60 * SEC - 1, 5), 0);
	assert_int_equal(fc_try_n(&g2, b, T0 + 60 * SEC, 25), 20);
	/* 58 s ahead at 3/m, 8.7 s at 20/m: 17 more. */
	assert_int_equal(FC_GEN(&g2direct.k.lim), 1);
	assert_int_equal(fc_try_n(&g2direct, c, T0 + 2 * SEC, 20), 17);
}

/* The generation is two bits: the fourth change wraps it to a bucket's
 * from four changes ago, read as current (its TAT as it is, as before
 * rescaling existed): the one aliasing documented. */
static void test_generation_wraps(void **state)
{
	struct fc_enforced g[5];
	__u64 st[FC_MAX_TIERS] = { 0 };
	static const char *const rates[5] = { "3/m", "4/m", "5/m", "6/m", "10/m" };
	int i;

	(void)state;
	g[0] = fc_gcra(rates[0], NULL);
	for (i = 1; i < 5; i++)
		g[i] = fc_gcra(rates[i], &g[i - 1]);
	assert_int_equal(FC_GEN(&g[4].k.lim), 0);
	assert_int_equal(fc_try_n(&g[0], st, T0, 3), 3);
	/* 59 s ahead read as 10/m's: 6 s on, one more. */
	assert_int_equal(fc_try_n(&g[4], st, T0 + SEC, 2), 0);
	assert_int_equal(fc_try_n(&g[4], st, T0 + 6 * SEC, 2), 1);
}

/* The same aliasing where the last limits hold less than the bucket's lead
 * and a second: the TAT, read as a clock stepped back, counts as empty
 * (freqctl-policy(7), CHANGING POLICIES, says so). */
static void test_generation_wraps_far(void **state)
{
	struct fc_enforced g[5];
	__u64 st[FC_MAX_TIERS] = { 0 };
	static const char *const rates[4] = { "1/m", "2/m", "3/m", "4/m" };
	int i;

	(void)state;
	g[0] = fc_gcra(rates[0], NULL);
	for (i = 1; i < 4; i++)
		g[i] = fc_gcra(rates[i], &g[i - 1]);
	g[4] = fc_enf("60/m", 1, 0, FC_ACTION_DROP, 0, &g[3]);
	assert_int_equal(FC_GEN(&g[4].k.lim), 0);
	assert_int_equal(fc_try_n(&g[0], st, T0, 1), 1);
	assert_int_equal(fc_try_n(&g[4], st, T0 + SEC, 2), 1);
}

/*
 * What fc_policy_enforced keeps: a publish that changes no interval nor
 * room keeps the generation and the rescale (however often); a new epoch
 * or policy, or nothing published, starts at 0; a window carries none.
 */
static void test_generations_kept(void **state)
{
	struct fc_enforced a = fc_gcra("3/m,100/h", NULL), b, c, d;
	struct fc_policy_row row = { .spec = { .id = 1, .algo = FC_ALGO_WINDOW, .kind = FC_MATCH_NONE }, .epoch = 7 };
	struct fc_node_ctx node = fc_node_here(1);
	struct fc_err err;

	(void)state;
	assert_int_equal(a.k.lim.gen, FC_GEN_GCRA);
	b = fc_gcra("10/m,100/h", &a);
	assert_int_equal(b.k.lim.gen, 1 | FC_GEN_GCRA);
	assert_int_equal(b.k.lim.rescale[0], FC_RESCALE(FC_RESCALE_SCALE, 3, 10));
	assert_int_equal(b.k.lim.rescale[1], FC_RESCALE_SAME);
	c = fc_gcra("10/m,100/h", &b);
	assert_memory_equal(&c.k, &b.k, sizeof(c.k));
	c = fc_gcra("10/m,100/h", &c);
	assert_memory_equal(&c.k, &b.k, sizeof(c.k));
	/* The same interval and room spelt otherwise: 60/h is 1/m, burst 60. */
	c = fc_gcra("1/m:60", &a);
	d = fc_gcra("60/h", &c);
	assert_int_equal(d.k.lim.gen, c.k.lim.gen);
	assert_memory_equal(d.k.lim.rescale, c.k.lim.rescale, sizeof(d.k.lim.rescale));
	/* Another epoch (a new match): a policy of its own, whose first
	 * generation reads another (a later publish's, in its instant) full. */
	b.k.epoch = 8;
	c = fc_gcra("20/m,100/h", &b);
	assert_int_equal(c.k.lim.gen, FC_GEN_GCRA);
	assert_int_equal(c.k.lim.rescale[0], FC_RESCALE(FC_RESCALE_FULL, 0, 0));
	/* A reader (nothing published said): every word as it is. */
	row.spec.algo = FC_ALGO_GCRA;
	assert_int_equal(fc_match_parse("uid=*", &row.spec, &err), 0);
	assert_int_equal(fc_rates_parse("3/m", &row.spec, &err), 0);
	fc_policy_enforced(&row, &node, NULL, &d);
	assert_int_equal(d.k.lim.gen, FC_GEN_GCRA);
	assert_int_equal(d.k.lim.rescale[0], FC_RESCALE_ASIS);
	row.spec.algo = FC_ALGO_WINDOW;
	/* A delaying policy: its queue is its room too. */
	c = fc_enf("10/s", 1, 0, FC_ACTION_DELAY, 5, NULL);
	d = fc_enf("10/s", 1, 0, FC_ACTION_DELAY, 2, &c);
	assert_int_equal(d.k.lim.gen, 1 | FC_GEN_GCRA);
	assert_int_equal(d.k.lim.rescale[0], FC_RESCALE_SAME);
	/* A window's words carry no generation. */
	fc_policy_enforced(&row, &node, &a, &c);
	assert_int_equal(c.k.lim.gen, 0);
}

/* The room's bounds: a TAT stays under its tag for the longest burst the
 * loader compiles, until 2079, at every generation. */
static void test_tag_bounds(void **state)
{
	struct fc_enforced e = fc_enf("1/d", 20000, 0, FC_ACTION_DROP, 0, NULL);
	__u64 late = 3 * (1ULL << 60) - 2 * FC_ROOM_MAX / 3, st[FC_MAX_TIERS];
	int g;

	(void)state;
	assert_int_equal(e.k.tier[0].tolerance_ns, FC_ROOM_MAX); /* 20,000 days: held at 36 years */
	for (g = 0; g < 4; g++) {
		e.k.lim.gen = (__u8)(g | FC_GEN_GCRA);
		st[0] = (__u64)g << FC_GEN_SHIFT;
		assert_int_equal(fc_try_n(&e, st, late, 3), 3);
		assert_int_equal(st[0] >> FC_GEN_SHIFT, (__u64)g);
		assert_int_equal(st[0] & FC_TAT_MASK, late + 3 * e.k.tier[0].interval_ns);
	}
}

/*
 * Multi-tier with a warm-up: each tier rescaled as any, the ramp's word
 * untouched. 10/s,1000/m warming over 10 s, warm from T0 + 10 s on: at
 * T0 + 14 s its burst of 10 at once (its TAT 1 s ahead, full); raised to
 * 20/s, that is 0.5 s of 20/s's 1 s: 10 more at once; the minute's word
 * the same (its interval kept).
 */
static void test_warm(void **state)
{
	struct fc_enforced a = fc_enf("10/s,1000/m", 0, 10, FC_ACTION_DROP, 0, NULL),
			   b = fc_enf("20/s,1000/m", 0, 10, FC_ACTION_DROP, 0, &a);
	__u64 st[FC_MAX_TIERS] = { 0 }, kept[FC_MAX_TIERS], minute;
	int i;

	(void)state;
	assert_int_equal(b.k.lim.rescale[0], FC_RESCALE(FC_RESCALE_SCALE, 1, 2));
	assert_int_equal(b.k.lim.rescale[1], FC_RESCALE_SAME);
	for (i = 0; i <= 120; i++)
		fc_try(&a, st, T0 + (__u64)i * 100 * MS, 1);
	assert_int_equal(st[2], T0); /* the ramp began at the first request */
	assert_int_equal(fc_try_n(&a, st, T0 + 14 * SEC, 20), 10);
	memcpy(kept, st, sizeof(st));
	assert_int_equal(fc_try_n(&a, kept, T0 + 14 * SEC, 5), 0);
	minute = st[1] & FC_TAT_MASK;
	assert_int_equal(fc_try_n(&b, st, T0 + 14 * SEC, 20), 10);
	assert_int_equal(st[0], (T0 + 15 * SEC) | 1ULL << FC_GEN_SHIFT);
	assert_int_equal(st[1], (minute + 10 * 60 * MS) | 1ULL << FC_GEN_SHIFT);
	assert_int_equal(st[2], T0);
}

/* A delaying policy's queue counts in its room: the 6 requests a 1/s
 * bucket holds are 0.6 s at 10/s, its burst and queue of 5 full. */
static void test_delay(void **state)
{
	struct fc_enforced a = fc_enf("1/s", 1, 0, FC_ACTION_DELAY, 5, NULL),
			   b = fc_enf("1/s", 1, 0, FC_ACTION_DELAY, 5, NULL);
	__u64 st[FC_MAX_TIERS] = { 0 }, prev, next, wait;
	int i;

	(void)state;
	b = fc_enf("10/s", 1, 0, FC_ACTION_DELAY, 5, &a);
	for (i = 0; i < 6; i++)
		assert_true(fc_gcra_try_delay(&st[0], &a.k.lim, 0, T0, 1, 5, &prev, &next, &wait));
	assert_true(fc_gen_stale(&b.k.lim, st));
	fc_gcra_adopt(&st, &b.k.lim, T0, FC_ADOPT_ARG(1, 5));
	assert_int_equal(st[0], (T0 + 600 * MS) | 1ULL << FC_GEN_SHIFT);
	assert_false(fc_gcra_try_delay(&st[0], &b.k.lim, 0, T0, 1, 5, &prev, &next, &wait));
	assert_true(fc_gcra_try_delay(&st[0], &b.k.lim, 0, T0 + 100 * MS, 1, 5, &prev, &next, &wait));
	assert_int_equal(wait, 500 * MS);
}

/* Threads racing on a bucket to bring, released together: exactly what
 * the rule admits (7 after 3/m raised to 10/m), however they meet in the
 * rescale and the charges, and each word rescaled once. */
struct fc_race {
	const struct fc_enforced *e;
	__u64 *st;
	int *gate;
	int admitted;
};

static void *fc_racer(void *arg)
{
	struct fc_race *r = arg;
	int i;

	__atomic_fetch_sub(r->gate, 1, __ATOMIC_ACQ_REL);
	while (__atomic_load_n(r->gate, __ATOMIC_ACQUIRE) > 0)
		;
	for (i = 0; i < 5; i++)
		r->admitted += fc_try(r->e, r->st, T0 + SEC, 1);
	return NULL;
}

static void test_race(void **state)
{
	struct fc_enforced a = fc_gcra("3/m,100/h", NULL), b = fc_gcra("10/m,200/h", &a);
	struct fc_race r[4];
	pthread_t th[4];
	__u64 st[FC_MAX_TIERS];
	int round, i, gate, total;

	(void)state;
	for (round = 0; round < 300; round++) {
		memset(st, 0, sizeof(st));
		assert_int_equal(fc_try_n(&a, st, T0, 3), 3);
		gate = 4;
		for (i = 0; i < 4; i++) {
			r[i] = (struct fc_race){ .e = &b, .st = st, .gate = &gate };
			assert_int_equal(pthread_create(&th[i], NULL, fc_racer, &r[i]), 0);
		}
		for (i = 0, total = 0; i < 4; i++) {
			pthread_join(th[i], NULL);
			total += r[i].admitted;
		}
		if (total != 7)
			fail_msg("round %d: %d admitted, the rule says 7", round, total);
		assert_int_equal(st[0] & FC_TAT_MASK, T0 + SEC + 17700 * MS + 42 * SEC);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rescale_arith),
		cmocka_unit_test(test_raise),
		cmocka_unit_test(test_lower),
		cmocka_unit_test(test_more_than_full),
		cmocka_unit_test(test_burst_lowered),
		cmocka_unit_test(test_tier_added),
		cmocka_unit_test(test_two_changes),
		cmocka_unit_test(test_generation_wraps),
		cmocka_unit_test(test_generation_wraps_far),
		cmocka_unit_test(test_generations_kept),
		cmocka_unit_test(test_tag_bounds),
		cmocka_unit_test(test_warm),
		cmocka_unit_test(test_delay),
		cmocka_unit_test(test_race),
	};

	return fc_run_group("limit generations: a rate changed, buckets rescaled (maps/fc_limit.h)", tests, NULL, NULL);
}
