// SPDX-License-Identifier: BSD-2-Clause
/*
 * The limit algorithms of maps/fc_limit.h, the very code the BPF programs
 * compile, driven with an injected clock; tiers compiled from policies the
 * way `freqctl policy add` compiles them.
 */
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "fc_enforce.h"
#include "fc_policy.h"
#include "fc_stats.h"
#include "fc_test.h"
#include "fc_vectors.h"

#define MS (1000000ULL)
#define SEC FC_NS_PER_SEC
/* A realistic clock: UTC ns in 2026. */
#define T0 (1795316400ULL * SEC)

/* Compiles "--rate r1 [--rate r2] [--burst b] [--algo a] [--count c] [--warmup w]". */
static struct fc_policy fc_compile_warm(const char *rates, uint64_t burst, enum fc_algo algo, enum fc_count count,
					int64_t warmup)
{
	struct fc_policy_row row = { .spec = { .id = 1,
					       .burst = burst,
					       .algo = algo,
					       .count = count,
					       .kind = FC_MATCH_STAR,
					       .warmup = warmup },
				     .epoch = 1 };
	struct fc_node_ctx node = fc_node_here(1);
	struct fc_enforced e;
	struct fc_err err;

	if (fc_rates_parse(rates, &row.spec, &err) < 0 || fc_policy_validate(&row.spec, &err) < 0)
		fail_msg("%s", err.msg);
	fc_policy_enforced(&row, &node, NULL, &e);
	return e.k;
}

static struct fc_policy fc_compile(const char *rates, uint64_t burst, enum fc_algo algo, enum fc_count count)
{
	return fc_compile_warm(rates, burst, algo, count, 0);
}

/* Tries one request of cost at now against all tiers of k. */
static int fc_try(const struct fc_policy *k, __u64 *state, __u64 now, __u64 cost)
{
	struct fc_charge ch;

	return fc_limit_try(k->algo, k->ntiers, &k->lim, state, now, cost, &ch);
}

static int fc_try_n(const struct fc_policy *k, __u64 *state, __u64 now, int n)
{
	int i, ok = 0;

	for (i = 0; i < n; i++)
		ok += fc_try(k, state, now, 1);
	return ok;
}

/* rate 10/s burst 5: 6 at t=0 -> 5 pass; then one more every 100 ms. */
static void test_gcra_burst_then_rate(void **state)
{
	struct fc_policy k = fc_compile("10/s", 5, FC_ALGO_GCRA, FC_COUNT_PACKETS);
	__u64 st[FC_MAX_TIERS] = { 0 };
	int i;

	(void)state;
	assert_int_equal(k.tier[0].interval_ns, 100 * MS);
	assert_int_equal(k.tier[0].tolerance_ns, 500 * MS);
	assert_int_equal(fc_try_n(&k, st, T0, 6), 5);
	for (i = 1; i <= 20; i++) {
		assert_int_equal(fc_try(&k, st, T0 + i * 100 * MS - 1, 1), 0); /* 1 ns early */
		assert_int_equal(fc_try_n(&k, st, T0 + i * 100 * MS, 3), 1);
	}
	/* Idle for 10 s: the burst is back, exactly 5 again. */
	assert_int_equal(fc_try_n(&k, st, T0 + 12 * SEC, 7), 5);
}

/* Default burst = N; and the survey's off-by-one: B, not B+1. */
static void test_gcra_default_burst(void **state)
{
	struct fc_policy k = fc_compile("3/m", 0, FC_ALGO_GCRA, FC_COUNT_PACKETS);
	__u64 st[FC_MAX_TIERS] = { 0 };

	(void)state;
	assert_int_equal(fc_try_n(&k, st, T0, 10), 3);
	assert_int_equal(fc_try_n(&k, st, T0 + 19 * SEC, 10), 0);
	assert_int_equal(fc_try_n(&k, st, T0 + 20 * SEC, 10), 1);
}

/* At most N per aligned window; the count restarts at the boundary. */
static void test_window_boundaries(void **state)
{
	struct fc_policy k = fc_compile("3/s", 0, FC_ALGO_WINDOW, FC_COUNT_PACKETS);
	__u64 st[FC_MAX_TIERS] = { 0 };

	(void)state;
	assert_int_equal(fc_try_n(&k, st, T0 + 999 * MS, 5), 3);
	assert_int_equal(fc_try_n(&k, st, T0 + SEC - 1, 5), 0);
	assert_int_equal(fc_try_n(&k, st, T0 + SEC, 5), 3);
	assert_int_equal(fc_try_n(&k, st, T0 + 2 * SEC - 1, 5), 0);
	/* Several windows later, a fresh count. */
	assert_int_equal(fc_try_n(&k, st, T0 + 7 * SEC + 500 * MS, 5), 3);

	k = fc_compile("100/d", 0, FC_ALGO_WINDOW, FC_COUNT_PACKETS);
	memset(st, 0, sizeof(st));
	/* T0 is 03:00 UTC: the day window runs to midnight UTC. */
	assert_int_equal(fc_try_n(&k, st, T0, 150), 100);
	assert_int_equal(fc_try_n(&k, st, T0 + 20 * 3600 * SEC, 10), 0);
	assert_int_equal(fc_try_n(&k, st, T0 + 21 * 3600 * SEC, 10), 10);
}

/* A request denied by a later tier is charged to none. */
static void test_tiers_charge_nothing_on_denial(void **state)
{
	struct fc_policy k = fc_compile("10/s,3/m", 0, FC_ALGO_GCRA, FC_COUNT_PACKETS);
	__u64 st[FC_MAX_TIERS] = { 0 }, before[FC_MAX_TIERS];

	(void)state;
	assert_int_equal(fc_try_n(&k, st, T0, 3), 3);
	memcpy(before, st, sizeof(st));
	assert_int_equal(fc_try_n(&k, st, T0 + SEC, 5), 0); /* the minute tier says no */
	assert_memory_equal(st, before, sizeof(st));

	k = fc_compile("5/s,7/m", 0, FC_ALGO_WINDOW, FC_COUNT_PACKETS);
	memset(st, 0, sizeof(st));
	assert_int_equal(fc_try_n(&k, st, T0, 10), 5);
	assert_int_equal(fc_try_n(&k, st, T0 + SEC, 10), 2);
	memcpy(before, st, sizeof(st));
	assert_int_equal(fc_try_n(&k, st, T0 + 2 * SEC, 3), 0);
	assert_memory_equal(st, before, sizeof(st));
}

/* Refunds across policies, as the packet path does when a later policy denies. */
static void test_refund(void **state)
{
	struct fc_policy g = fc_compile("10/s", 2, FC_ALGO_GCRA, FC_COUNT_PACKETS);
	struct fc_policy w = fc_compile("2/s", 0, FC_ALGO_WINDOW, FC_COUNT_PACKETS);
	__u64 gs[FC_MAX_TIERS] = { 0 }, ws[FC_MAX_TIERS] = { 0 }, before[FC_MAX_TIERS];
	struct fc_charge gc, wc;

	(void)state;
	assert_true(fc_limit_try(g.algo, g.ntiers, &g.lim, gs, T0, 1, &gc));
	assert_true(fc_limit_try(w.algo, w.ntiers, &w.lim, ws, T0, 1, &wc));
	memcpy(before, gs, sizeof(gs));
	assert_true(fc_limit_try(g.algo, g.ntiers, &g.lim, gs, T0, 1, &gc));
	fc_limit_refund(g.algo, g.ntiers, gs, 1, &gc);
	assert_memory_equal(gs, before, sizeof(gs));
	memcpy(before, ws, sizeof(ws));
	assert_true(fc_limit_try(w.algo, w.ntiers, &w.lim, ws, T0, 1, &wc));
	fc_limit_refund(w.algo, w.ntiers, ws, 1, &wc);
	assert_memory_equal(ws, before, sizeof(ws));
	/* A refund from an older window gives nothing back into the new one. */
	assert_true(fc_limit_try(w.algo, w.ntiers, &w.lim, ws, T0, 1, &wc));
	{
		struct fc_charge later;

		assert_true(fc_limit_try(w.algo, w.ntiers, &w.lim, ws, T0 + SEC, 1, &later));
	}
	memcpy(before, ws, sizeof(ws));
	fc_limit_refund(w.algo, w.ntiers, ws, 1, &wc);
	assert_memory_equal(ws, before, sizeof(ws));
}

/*
 * A GCRA refund undoes its own charge only. Two charges stacked: the first
 * one's refund can not tell its increment from the second's, and keeps it.
 * A charge made after the TAT fell behind the clock starts from the clock:
 * an earlier charge's refund must not take its increment off that one.
 */
static void test_refund_only_its_own(void **state)
{
	struct fc_policy g = fc_compile("10/s", 5, FC_ALGO_GCRA, FC_COUNT_PACKETS);
	__u64 st[FC_MAX_TIERS] = { 0 }, after;
	struct fc_charge a, b;

	(void)state;
	assert_true(fc_limit_try(g.algo, g.ntiers, &g.lim, st, T0, 1, &a));
	assert_true(fc_limit_try(g.algo, g.ntiers, &g.lim, st, T0 + 5 * SEC, 1, &b)); /* from the clock */
	after = st[0];
	assert_int_equal(after, T0 + 5 * SEC + 100 * MS);
	fc_limit_refund(g.algo, g.ntiers, st, 1, &a);
	assert_int_equal(st[0], after); /* b's charge is whole */
	fc_limit_refund(g.algo, g.ntiers, st, 1, &b);
	assert_int_equal(st[0], T0 + 100 * MS); /* b's own, exactly */
}

/*
 * Shaping (--action delay) with a queue longer than a second: 60/m, burst
 * 10, delay-burst 5, 30 requests at once: 10 pass at once, 5 wait 1..5 s,
 * 15 are refused. (The clock-went-backwards guard once took the queued TAT
 * for a jump and started afresh: 30 passed.) Then the rate holds.
 */
static void test_delay_queue(void **state)
{
	struct fc_policy k = fc_compile("60/m", 10, FC_ALGO_GCRA, FC_COUNT_PACKETS);
	__u64 st = 0, prev, next, wait;
	int i, now_ = 0, delayed = 0, refused = 0;

	(void)state;
	for (i = 0; i < 30; i++) {
		if (!fc_gcra_try_delay(&st, &k.lim, 0, T0, 1, 5, &prev, &next, &wait)) {
			refused++;
			continue;
		}
		if (!wait) {
			now_++;
		} else {
			delayed++;
			assert_int_equal(wait, (__u64)delayed * SEC);
		}
	}
	assert_int_equal(now_, 10);
	assert_int_equal(delayed, 5);
	assert_int_equal(refused, 15);
	assert_int_equal(fc_tier_retry_after(k.algo, &k.lim, 0, st, T0, 1, 5), 6 * SEC);
	assert_int_equal(fc_tier_remaining(k.algo, &k.lim, 0, st, T0, 5), 0);
	/* A second on: one more place in the queue, not a fresh bucket. */
	assert_true(fc_gcra_try_delay(&st, &k.lim, 0, T0 + SEC, 1, 5, &prev, &next, &wait));
	assert_int_equal(wait, 5 * SEC);
	assert_false(fc_gcra_try_delay(&st, &k.lim, 0, T0 + SEC, 1, 5, &prev, &next, &wait));
}

/* A slow rate times a long queue overflows 64 bits: the room saturates. */
static void test_delay_room_saturates(void **state)
{
	struct fc_policy k = fc_compile("1/d", 1, FC_ALGO_GCRA, FC_COUNT_PACKETS);
	__u64 st = 0, prev, next, wait;

	(void)state;
	assert_int_equal(fc_gcra_room(&k.tier[0], 1000000), FC_ROOM_MAX);
	assert_true(fc_gcra_try_delay(&st, &k.lim, 0, T0, 1, 1000000, &prev, &next, &wait));
	assert_int_equal(wait, 0);
	assert_true(fc_gcra_try_delay(&st, &k.lim, 0, T0, 1, 1000000, &prev, &next, &wait));
	assert_int_equal(wait, 86400 * SEC);
}

/* Bytes: the frame length is the cost, N and B in bytes. */
static void test_bytes_cost(void **state)
{
	struct fc_policy k = fc_compile("1000/s", 1500, FC_ALGO_GCRA, FC_COUNT_BYTES);
	__u64 st[FC_MAX_TIERS] = { 0 };

	(void)state;
	assert_int_equal(fc_try(&k, st, T0, 1000), 1);
	assert_int_equal(fc_try(&k, st, T0, 600), 0);
	assert_int_equal(fc_try(&k, st, T0, 500), 1);
	assert_int_equal(fc_try(&k, st, T0, 1), 0);
	/* 64 bytes drain in 64 ms at 1000 B/s. */
	assert_int_equal(fc_try(&k, st, T0 + 63 * MS, 64), 0);
	assert_int_equal(fc_try(&k, st, T0 + 64 * MS, 64), 1);

	k = fc_compile("10000/s", 0, FC_ALGO_WINDOW, FC_COUNT_BYTES);
	memset(st, 0, sizeof(st));
	assert_int_equal(fc_try(&k, st, T0, 9000), 1);
	assert_int_equal(fc_try(&k, st, T0, 1001), 0);
	assert_int_equal(fc_try(&k, st, T0, 1000), 1);

	/* 10 Gbit/s of bytes: sub-ns per byte, still exact per frame. */
	k = fc_compile("1250000000/s", 0, FC_ALGO_GCRA, FC_COUNT_BYTES);
	memset(st, 0, sizeof(st));
	assert_int_equal(fc_gcra_increment(&k.tier[0], 1500), 1200);
	assert_int_equal(fc_gcra_increment(&k.tier[0], 65535), 52428);
}

/* Extreme rates: 1/d and 10,000,000/s, on a 2026 clock, no overflow. */
static void test_extreme_rates(void **state)
{
	struct fc_policy k = fc_compile("1/d", 0, FC_ALGO_GCRA, FC_COUNT_PACKETS);
	__u64 st[FC_MAX_TIERS] = { 0 };
	int i, ok = 0;

	(void)state;
	assert_int_equal(k.tier[0].interval_ns, 86400 * SEC);
	assert_int_equal(fc_try_n(&k, st, T0, 3), 1);
	assert_int_equal(fc_try_n(&k, st, T0 + 86400 * SEC - 1, 3), 0);
	assert_int_equal(fc_try_n(&k, st, T0 + 86400 * SEC, 3), 1);
	k = fc_compile("1/d", 0, FC_ALGO_WINDOW, FC_COUNT_PACKETS);
	memset(st, 0, sizeof(st));
	assert_int_equal(fc_try_n(&k, st, T0, 3), 1);

	k = fc_compile("10000000/s", 0, FC_ALGO_GCRA, FC_COUNT_PACKETS);
	memset(st, 0, sizeof(st));
	assert_int_equal(k.tier[0].interval_ns, 100);
	for (i = 0; i < 10000001; i++)
		ok += fc_try(&k, st, T0, 1);
	assert_int_equal(ok, 10000000);
	assert_int_equal(fc_try(&k, st, T0 + 100, 1), 1);

	k = fc_compile("10000000/s", 0, FC_ALGO_WINDOW, FC_COUNT_PACKETS);
	memset(st, 0, sizeof(st));
	for (i = 0, ok = 0; i < 10000001; i++)
		ok += fc_try(&k, st, T0 + 5 * MS, 1);
	assert_int_equal(ok, 10000000);

	/* 10^12 bytes per day fits the window's 40-bit count. */
	k = fc_compile("1000000000000/d", 0, FC_ALGO_WINDOW, FC_COUNT_BYTES);
	memset(st, 0, sizeof(st));
	for (i = 0, ok = 0; i < 1000; i++)
		ok += fc_try(&k, st, T0, 65535);
	assert_int_equal(ok, 1000);
}

/* Rates that do not divide the unit round T up: never faster than asked. */
static void test_rounding(void **state)
{
	struct fc_policy k = fc_compile("3/s", 1, FC_ALGO_GCRA, FC_COUNT_PACKETS);
	__u64 st[FC_MAX_TIERS] = { 0 };
	int i, ok = 0;

	(void)state;
	assert_int_equal(k.tier[0].interval_ns, 333333334);
	for (i = 0; i < 3000; i++)
		ok += fc_try(&k, st, T0 + (__u64)i * MS, 1);
	assert_int_equal(ok, 9); /* 3 s at 3/s: 9, never 10 */
}

/* The clock going back (settimeofday) restarts a bucket instead of
 * denying for as long as the jump. */
static void test_clock_backwards(void **state)
{
	struct fc_policy k = fc_compile("1/s", 1, FC_ALGO_GCRA, FC_COUNT_PACKETS);
	__u64 st[FC_MAX_TIERS] = { 0 };

	(void)state;
	assert_int_equal(fc_try_n(&k, st, T0, 2), 1);
	assert_int_equal(fc_try_n(&k, st, T0 - 500 * MS, 2), 0); /* within slack: still limited */
	assert_int_equal(fc_try_n(&k, st, T0 - 3600 * SEC, 2), 1);
}

/* Threads racing on one word admit exactly the limit. */
struct fc_race {
	const struct fc_policy *k;
	__u64 *state;
	int admitted;
};

static void *fc_racer(void *arg)
{
	struct fc_race *r = arg;
	int i;

	for (i = 0; i < 200000; i++)
		r->admitted += fc_try(r->k, r->state, T0 + 10 * MS, 1);
	return NULL;
}

/* Four racers on state: what they admitted together. */
static int fc_race4(const struct fc_policy *k, __u64 *state)
{
	struct fc_race r[4];
	pthread_t th[4];
	int i, total = 0;

	for (i = 0; i < 4; i++) {
		r[i] = (struct fc_race){ .k = k, .state = state };
		assert_int_equal(pthread_create(&th[i], NULL, fc_racer, &r[i]), 0);
	}
	for (i = 0; i < 4; i++) {
		pthread_join(th[i], NULL);
		total += r[i].admitted;
	}
	return total;
}

/* The shared sliding-window vectors (tests/bpf/fc_vectors.h), each on a
 * fresh bucket; T0 is aligned to the minute. */
static void test_sliding_vectors(void **state)
{
	const struct fc_vector *v;
	const struct fc_vec_step *s;
	__u64 st[FC_MAX_TIERS];
	struct fc_policy k;
	size_t i, j;
	int got;

	(void)state;
	for (i = 0; i < FC_NVECTORS; i++) {
		v = &fc_sliding_vectors[i];
		k = fc_compile(v->rates, 0, FC_ALGO_SLIDING, FC_COUNT_PACKETS);
		memset(st, 0, sizeof(st));
		for (j = 0; j < FC_VEC_STEPS && v->step[j].tries; j++) {
			s = &v->step[j];
			got = fc_try_n(&k, st, T0 + s->at_ms * MS, (int)s->tries);
			if (got != (int)s->admitted)
				fail_msg("%s: step %zu (%u ms): %d admitted, expected %u", v->name, j, s->at_ms, got,
					 s->admitted);
		}
	}
}

/* The rule at its edges, in microseconds: the boundary itself admits, a
 * microsecond before does not; a cost over N never passes, a cost of N
 * does on an empty window; a denial leaves the word as it was. */
static void test_sliding_edges(void **state)
{
	struct fc_policy k = fc_compile("3/s", 0, FC_ALGO_SLIDING, FC_COUNT_PACKETS);
	__u64 st[FC_MAX_TIERS] = { 0 }, before;

	(void)state;
	assert_int_equal(fc_try_n(&k, st, T0, 3), 3);
	/* Next window: 3*(1 - e) + 1 <= 3 from e = 1/3 s, i.e. 333,334 us
	 * (e rounds down to whole us, so 333,333.999 us is not yet). */
	assert_int_equal(fc_try(&k, st, T0 + SEC, 1), 0);
	assert_int_equal(fc_try(&k, st, T0 + SEC + 333333999, 1), 0);
	assert_int_equal(fc_try(&k, st, T0 + SEC + 333334000, 1), 1);
	assert_int_equal(fc_try(&k, st, T0 + SEC + 333334000, 1), 0);
	before = st[0];
	assert_int_equal(fc_try(&k, st, T0 + SEC + 400 * MS, 1), 0);
	assert_int_equal(st[0], before); /* denied: nothing charged */
	/* Cost: over N never, N on an idle bucket. */
	k = fc_compile("10/m", 0, FC_ALGO_SLIDING, FC_COUNT_BYTES);
	memset(st, 0, sizeof(st));
	assert_int_equal(fc_try(&k, st, T0, 11), 0);
	assert_int_equal(st[0], 0);
	assert_int_equal(fc_try(&k, st, T0 + 30 * SEC, 10), 1);
	assert_int_equal(fc_try(&k, st, T0 + 200 * SEC, 11), 0);
	assert_int_equal(fc_try(&k, st, T0 + 200 * SEC, 10), 1); /* two windows on: all clear */
	/* A day window: U = 86,400 s in us, products of counts near the
	 * bound stay exact. */
	k = fc_compile("16777215/d", 0, FC_ALGO_SLIDING, FC_COUNT_PACKETS);
	memset(st, 0, sizeof(st));
	assert_int_equal(fc_try(&k, st, T0, 65535), 1);
	assert_int_equal(fc_tier_remaining(k.algo, &k.lim, 0, st[0], T0, 0), 16777215 - 65535);
	/* T0 is 03:00 UTC: noon the next day is half a day in. */
	assert_int_equal(fc_try(&k, st, T0 + (21 + 12) * 3600 * SEC, 65535), 1);
	/* Half of the last day's 65535 still counts, rounded up. */
	assert_int_equal(fc_tier_remaining(k.algo, &k.lim, 0, st[0], T0 + (21 + 12) * 3600 * SEC, 0),
			 16777215 - 65535 - 32768);
}

/* A rollback takes its cost off this window's count, or nothing once the
 * window has moved on. */
static void test_sliding_refund(void **state)
{
	struct fc_policy k = fc_compile("10/m", 0, FC_ALGO_SLIDING, FC_COUNT_PACKETS);
	__u64 st[FC_MAX_TIERS] = { 0 }, mid;
	struct fc_charge a = { { 0 } }, b = { { 0 } };

	(void)state;
	assert_true(fc_limit_try(k.algo, k.ntiers, &k.lim, st, T0, 1, &a));
	assert_true(fc_limit_try(k.algo, k.ntiers, &k.lim, st, T0, 1, &b));
	fc_limit_refund(k.algo, k.ntiers, st, 1, &a); /* not the last: comes off the count */
	assert_int_equal(fc_tier_remaining(k.algo, &k.lim, 0, st[0], T0, 0), 9);
	mid = st[0];
	assert_true(fc_limit_try(k.algo, k.ntiers, &k.lim, st, T0 + 61 * SEC, 1, &a));
	fc_limit_refund(k.algo, k.ntiers, st, 1, &b); /* its window is over */
	assert_int_equal(st[0], ((mid >> FC_SLIDE_IDX_SHIFT) + 1) << FC_SLIDE_IDX_SHIFT | 1ULL << FC_SLIDE_COUNT_BITS | 1);
}

/* Remaining and Retry-After read the same rule. */
static void test_sliding_headers(void **state)
{
	struct fc_policy k = fc_compile("10/m", 0, FC_ALGO_SLIDING, FC_COUNT_PACKETS);
	__u64 st[FC_MAX_TIERS] = { 0 }, w;

	(void)state;
	assert_int_equal(fc_tier_remaining(k.algo, &k.lim, 0, st[0], T0, 0), 10);
	assert_int_equal(fc_tier_retry_after(k.algo, &k.lim, 0, st[0], T0, 1, 0), 0);
	assert_int_equal(fc_try_n(&k, st, T0 + 50 * SEC, 10), 10);
	/* Full this window: the next, where 10*(60-e) + 60 <= 600 from 6 s. */
	assert_int_equal(fc_tier_remaining(k.algo, &k.lim, 0, st[0], T0 + 50 * SEC, 0), 0);
	assert_int_equal(fc_tier_retry_after(k.algo, &k.lim, 0, st[0], T0 + 50 * SEC, 1, 0), 16 * SEC);
	assert_int_equal(fc_tier_retry_after(k.algo, &k.lim, 0, st[0], T0 + 50 * SEC, 10, 0), 70 * SEC); /* all 10: 60 s on */
	assert_int_equal(fc_tier_retry_after(k.algo, &k.lim, 0, st[0], T0 + 50 * SEC, 11, 0), 70 * SEC); /* never: both gone */
	/* 30 s into the next: 5 left, as the vectors say. */
	assert_int_equal(fc_tier_remaining(k.algo, &k.lim, 0, st[0], T0 + 90 * SEC, 0), 5);
	assert_int_equal(fc_try_n(&k, st, T0 + 90 * SEC, 20), 5);
	/* 10*(60-e) + 6*60 <= 600 from e = 36 s: 6 s on. */
	w = fc_tier_retry_after(k.algo, &k.lim, 0, st[0], T0 + 90 * SEC, 1, 0);
	assert_int_equal(w, 6 * SEC);
	assert_int_equal(fc_try(&k, st, T0 + 90 * SEC + w - 1000, 1), 0);
	assert_int_equal(fc_try(&k, st, T0 + 90 * SEC + w, 1), 1);
}

/* The charge against the rule written out, on every c_prev, c_cur and cost
 * around N and times across the window: the shortcuts that skip e (admit
 * when c_prev + c_cur + c <= N, deny when c_cur + c > N) decide exactly as
 * the rule, and an admission leaves the counts the rule says. */
static void test_sliding_rule(void **state)
{
	static const __u64 at_us[] = { 0, 1, 333333, 500000, 999999 };
	struct fc_policy k = fc_compile("7/s", 0, FC_ALGO_SLIDING, FC_COUNT_BYTES);
	__u64 u = SEC / FC_SLIDE_NS, n = 7, idx = fc_slide_index(&k.tier[0], T0), p, c, cost, e, st, prev, next;
	size_t i;
	int rule;

	(void)state;
	for (p = 0; p <= n + 1; p++)
		for (c = 0; c <= n + 1; c++)
			for (cost = 1; cost <= n + 2; cost++)
				for (i = 0; i < sizeof(at_us) / sizeof(at_us[0]); i++) {
					e = at_us[i];
					st = idx << FC_SLIDE_IDX_SHIFT | c << FC_SLIDE_COUNT_BITS | p;
					rule = p * (u - e) + (c + cost) * u <= n * u;
					next = fc_slide_charge(&st, &k.tier[0], T0 + e * FC_SLIDE_NS + 999, cost, &prev);
					if (!!next != rule)
						fail_msg("c_prev %llu, c_cur %llu, cost %llu, e %llu us: %d, the rule says %d",
							 (unsigned long long)p, (unsigned long long)c,
							 (unsigned long long)cost, (unsigned long long)e, !!next, rule);
					assert_int_equal(st, rule ? idx << FC_SLIDE_IDX_SHIFT |
									(c + cost) << FC_SLIDE_COUNT_BITS | p :
								    (idx << FC_SLIDE_IDX_SHIFT | c << FC_SLIDE_COUNT_BITS | p));
				}
}

/* Counts are 24 bits of the word: the loader refuses rates beyond them. */
static void test_sliding_bounds(void **state)
{
	struct fc_policy_spec p = { .id = 1, .algo = FC_ALGO_SLIDING, .kind = FC_MATCH_STAR };
	struct fc_err err;

	(void)state;
	assert_int_equal(fc_rates_parse("16777215/s,16777215/d", &p, &err), 0);
	assert_int_equal(fc_policy_validate(&p, &err), 0);
	assert_int_equal(fc_rates_parse("10/s,16777216/d", &p, &err), 0);
	assert_int_equal(fc_policy_validate(&p, &err), -1);
	assert_string_equal(err.msg, "rate \"16777216/d\": --algo sliding counts at most 16777215 per window (24 "
				     "bits of a 64-bit word); use gcra or window for more");
	p.algo = FC_ALGO_WINDOW;
	assert_int_equal(fc_policy_validate(&p, &err), 0);
}

static void test_race_exact(void **state)
{
	static const enum fc_algo algos[] = { FC_ALGO_WINDOW, FC_ALGO_GCRA, FC_ALGO_SLIDING };
	__u64 st[FC_MAX_TIERS];
	size_t a;

	(void)state;
	for (a = 0; a < sizeof(algos) / sizeof(algos[0]); a++) {
		struct fc_policy k = fc_compile("100000/m,50000/h", 0, algos[a], FC_COUNT_PACKETS);

		memset(st, 0, sizeof(st));
		assert_int_equal(fc_race4(&k, st), 50000);
	}
}

/* The shared warm-up vectors (tests/bpf/fc_vectors.h), each on a fresh
 * bucket, steps at T0 + their ms. */
struct fc_warm_ctx {
	const struct fc_policy *k;
	__u64 *state;
	__u64 cost;
};

static uint32_t fc_warm_step(void *arg, uint32_t at_ms, uint32_t tries)
{
	struct fc_warm_ctx *c = arg;
	uint32_t i, ok = 0;

	for (i = 0; i < tries; i++)
		ok += (uint32_t)fc_try(c->k, c->state, T0 + at_ms * MS, c->cost);
	return ok;
}

static void test_warm_vectors(void **state)
{
	const struct fc_warm_vector *v;
	uint32_t got[FC_WARM_BINS];
	__u64 st[FC_MAX_TIERS];
	struct fc_policy k;
	size_t i;
	int bad;

	(void)state;
	for (i = 0; i < FC_NWARM; i++) {
		v = &fc_warm_vectors[i];
		k = fc_compile_warm(v->rates, 0, FC_ALGO_GCRA, v->cost > 1 ? FC_COUNT_BYTES : FC_COUNT_PACKETS,
				    v->warmup_s);
		memset(st, 0, sizeof(st));
		bad = fc_warm_run(v, fc_warm_step, &(struct fc_warm_ctx){ &k, st, v->cost }, got);
		if (bad >= 0)
			fail_msg("%s: bin %d: %u passed, expected %u", v->name, bad, got[bad], v->admitted[bad]);
	}
}

/* Never faster than the ramp, however the tries fall: while warming, two
 * admissions at t1 < t2 (from a cold start at 0) are at least the interval
 * at t2 apart, 3 T D / (D + 2 t2), checked exactly in 128 bits; and a try
 * every 100 us keeps up with it: about 1 + the integral of r over 10 s,
 * 10 * (10 + 10) = 200. */
static void test_warm_bound(void **state)
{
	struct fc_policy k = fc_compile_warm("30/s", 0, FC_ALGO_GCRA, FC_COUNT_PACKETS, 10);
	const unsigned __int128 d = 10 * SEC, tt = k.tier[0].interval_ns;
	__u64 st[FC_MAX_TIERS] = { 0 }, t, last = 0;
	__u64 admitted = 0;

	(void)state;
	for (t = 0; t < 10 * SEC; t += 100000) {
		if (!fc_try(&k, st, T0 + t, 1))
			continue;
		if (admitted++ && (unsigned __int128)(t - last) * (d + 2 * t) < 3 * tt * d)
			fail_msg("admission %llu at %llu ns: %llu ns after the last, under the ramp's interval",
				 (unsigned long long)admitted, (unsigned long long)t, (unsigned long long)(t - last));
		last = t;
	}
	assert_true(admitted <= 202);
	assert_true(admitted >= 198);
}

/* The factor 3D/(D + 2e) in fixed point, and the increment it scales:
 * never shorter than exact (rounding only denies), and no longer than
 * exact with e 1024 ns less and D 1024 ns more, by 2^-20 and 2 ns. */
static void test_warm_arith(void **state)
{
	static const __u64 ds[] = { FC_WARMUP_MIN_NS, 10 * SEC, 3599 * SEC + 7, FC_WARMUP_MAX_NS };
	static const __u64 incs[] = { 1, 100, 33333334, 86400 * SEC, 5000000000000000ULL, FC_WARM_TOL_MAX };
	struct fc_tier t = { .interval_ns = 1, .tolerance_ns = FC_WARM_TOL_MAX };
	unsigned __int128 exact_num, got_num, ref;
	struct fc_ramp r;
	size_t i, j, s;
	__u64 e, e2, d2;

	(void)state;
	for (i = 0; i < sizeof(ds) / sizeof(ds[0]); i++) {
		fc_warm_ramp(&t, ds[i], T0, T0, 1, 0, &r);
		assert_int_equal(r.mult, 3 * FC_WARM_ONE); /* cold: 3T */
		fc_warm_ramp(&t, ds[i], T0, T0 + ds[i], 1, 0, &r);
		assert_int_equal(r.mult, FC_WARM_ONE); /* warm: T */
		for (s = 0; s <= 64; s++) {
			e = ds[i] / 64 * s + s;
			if (e > ds[i])
				e = ds[i];
			for (j = 0; j < sizeof(incs) / sizeof(incs[0]); j++) {
				fc_warm_ramp(&t, ds[i], T0, T0 + e, incs[j], 0, &r);
				exact_num = (unsigned __int128)incs[j] * 3 * ds[i];
				got_num = (unsigned __int128)r.inc * (ds[i] + 2 * e);
				assert_true(got_num >= exact_num);
				e2 = e > 1024 ? e - 1024 : 0;
				d2 = ds[i] + 1024;
				ref = (unsigned __int128)incs[j] * 3 * d2 / (d2 + 2 * e2);
				assert_true(r.inc <= ref + ref / FC_WARM_ONE + 2);
				assert_true(r.inc <= 3 * incs[j] + 1);
			}
		}
	}
}

/* What a warming bucket tells a client: the ramped N, what is left, when
 * the next could pass; and a denial by a later tier gives back the first
 * tier's charge, not the ramp's start. */
static void test_warm_view_refund(void **state)
{
	struct fc_policy k = fc_compile_warm("30/s,31/m", 0, FC_ALGO_GCRA, FC_COUNT_PACKETS, 10);
	struct fc_limit_view v;
	struct fc_charge ch;
	__u64 st[FC_MAX_TIERS] = { 0 }, tat;

	(void)state;
	assert_true(fc_bucket_use(&k, st, T0) == 0); /* top: a cold bucket uses nothing */
	fc_limit_view(k.algo, k.ntiers, &k.lim, st, T0, 0, &v);
	assert_int_equal(v.limit, 10); /* cold: N/3 */
	assert_int_equal(v.remaining, 1);
	assert_int_equal(v.retry_ns, 0);
	assert_true(fc_try(&k, st, T0, 1));
	assert_int_equal(st[2], T0); /* the ramp's start, after the two tiers */
	fc_limit_view(k.algo, k.ntiers, &k.lim, st, T0, 0, &v);
	assert_int_equal(v.remaining, 0);
	assert_true(fc_bucket_use(&k, st, T0) == 1); /* its one request of credit spent */
	assert_int_equal(v.retry_ns, 3 * k.tier[0].interval_ns); /* 3T: 100 ms */
	/* Half way: 20/s. */
	fc_limit_view(k.algo, k.ntiers, &k.lim, st, T0 + 5 * SEC, 0, &v);
	assert_int_equal(v.limit, 20);
	assert_int_equal(v.remaining, 1);
	/* The other tiers are charged first: one that denies leaves the ramp
	 * unstarted, and a ramp that denies takes their charge back. */
	memset(st, 0, sizeof(st));
	st[1] = T0 + 60 * SEC; /* the minute tier full */
	assert_false(fc_limit_try(k.algo, k.ntiers, &k.lim, st, T0, 1, &ch));
	assert_int_equal(st[0], 0);
	assert_int_equal(st[2], 0);
	st[1] = 0;
	assert_true(fc_try(&k, st, T0, 1));
	tat = st[1];
	assert_false(fc_try(&k, st, T0 + MS, 1)); /* 3T */
	assert_int_equal(st[1], tat);
	assert_int_equal(st[2], T0);
	/* ws moves only when cold: a second later, the ramp is 1 s along. */
	assert_true(fc_try(&k, st, T0 + SEC, 1));
	assert_int_equal(st[2], T0);
}

/* A fast rate warming: the credit is 10 ms of the ramped rate (FC_WARM_GRAIN_NS),
 * not one request, so a clock that moves in 4 ms ticks (the packet path's
 * coarse clock, nginx's cached time) still gives the ramp's rate: within 1%
 * of the precise clock's over the first second, at 10000/s from cold (3333
 * a second rising); 1000 at once from cold pass 10 ms' worth, 33: that is
 * the only burst a warming bucket allows. */
static void test_warm_grain(void **state)
{
	struct fc_policy k = fc_compile_warm("10000/s", 0, FC_ALGO_GCRA, FC_COUNT_PACKETS, 10);
	__u64 st[FC_MAX_TIERS] = { 0 }, t;
	long precise = 0, coarse = 0;

	(void)state;
	assert_int_equal(fc_try_n(&k, st, T0, 1000), 33);
	memset(st, 0, sizeof(st));
	for (t = 0; t < SEC; t += 10000)
		precise += fc_try(&k, st, T0 + t, 1);
	memset(st, 0, sizeof(st));
	for (t = 0; t < SEC; t += 10000)
		coarse += fc_try(&k, st, T0 + t / (4 * MS) * (4 * MS), 1);
	print_message("first second from cold: %ld (precise clock), %ld (4 ms ticks)\n", precise, coarse);
	/* 33 at once (10 ms' worth), then the integral: 3333 + 333 */
	assert_true(precise >= 3680 && precise <= 3710);
	assert_true(coarse * 100 >= precise * 99 && coarse <= precise + 33);
}

/* The clock stepped back an hour leaves a ramp start in the future: the
 * bucket starts again from now rather than stay cold for an hour. */
static void test_warm_clock_backwards(void **state)
{
	struct fc_policy k = fc_compile_warm("30/s", 0, FC_ALGO_GCRA, FC_COUNT_PACKETS, 10);
	__u64 st[FC_MAX_TIERS] = { 0 };

	(void)state;
	assert_int_equal(fc_try_n(&k, st, T0 + 3600 * SEC, 5), 1);
	assert_int_equal(fc_try_n(&k, st, T0 + 3600 * SEC + 20 * SEC, 1), 1); /* cold again: idle 20 s */
	assert_int_equal(fc_try_n(&k, st, T0, 5), 1);
	assert_int_equal(st[1], T0);
	assert_int_equal(fc_try_n(&k, st, T0 + 50 * MS, 5), 0); /* 3T = 100 ms */
	assert_int_equal(fc_try_n(&k, st, T0 + 100 * MS, 5), 1);
}

/* Threads racing on one warming bucket. First with the clock stepped 1 ms
 * at a time, every thread at the same now, released together by a spin
 * barrier (so they meet in the charge): at every step the admissions so
 * far are at most the rule's with all those tries made one by one,
 * restarts included (a pause of 3 s > D in the middle). Then on a warm
 * bucket with its burst full: exactly the burst, as test_race_exact. */
#define FC_WRACE_THREADS 2
#define FC_WRACE_TRIES   8
#define FC_WRACE_STEPS   5000

struct fc_wrace {
	const struct fc_policy *k;
	__u64 *state;
	int *gate;
	int id;
	int admitted[FC_WRACE_STEPS];
};

static __u64 fc_wrace_at(int s)
{
	return T0 + (__u64)(s < 2000 ? s : s + 3000) * MS; /* 0-2 s, then 5-8 s */
}

/* Step s starts when every thread has arrived: the gate counts arrivals. */
static void fc_wrace_gate(int *gate, int s)
{
	__atomic_fetch_add(gate, 1, __ATOMIC_ACQ_REL);
	while (__atomic_load_n(gate, __ATOMIC_ACQUIRE) < (s + 1) * FC_WRACE_THREADS)
		;
}

static void *fc_wracer(void *arg)
{
	struct fc_wrace *r = arg;
	cpu_set_t set;
	int s, i;

	CPU_ZERO(&set);
	CPU_SET(r->id, &set);
	pthread_setaffinity_np(pthread_self(), sizeof(set), &set); /* where it can: one CPU each */
	for (s = 0; s < FC_WRACE_STEPS; s++) {
		fc_wrace_gate(r->gate, s);
		for (i = 0; i < FC_WRACE_TRIES; i++)
			r->admitted[s] += fc_try(r->k, r->state, fc_wrace_at(s), 1);
	}
	return NULL;
}

static void test_warm_race(void **state)
{
	struct fc_policy k = fc_compile_warm("300/s", 0, FC_ALGO_GCRA, FC_COUNT_PACKETS, 2);
	static struct fc_wrace r[FC_WRACE_THREADS];
	__u64 st[FC_MAX_TIERS] = { 0 }, seq[FC_MAX_TIERS] = { 0 };
	pthread_t th[FC_WRACE_THREADS];
	long rule = 0, raced = 0;
	int i, s, gate = 0;

	(void)state;
	for (i = 0; i < FC_WRACE_THREADS; i++) {
		memset(&r[i], 0, sizeof(r[i]));
		r[i] = (struct fc_wrace){ .k = &k, .state = st, .gate = &gate, .id = i };
		assert_int_equal(pthread_create(&th[i], NULL, fc_wracer, &r[i]), 0);
	}
	for (i = 0; i < FC_WRACE_THREADS; i++)
		pthread_join(th[i], NULL);
	for (s = 0; s < FC_WRACE_STEPS; s++) {
		rule += fc_try_n(&k, seq, fc_wrace_at(s), FC_WRACE_THREADS * FC_WRACE_TRIES);
		for (i = 0; i < FC_WRACE_THREADS; i++)
			raced += r[i].admitted[s];
		if (raced > rule)
			fail_msg("step %d: %ld admitted racing, the rule admits %ld", s, raced, rule);
		if (s == 0)
			assert_int_equal(raced, 1); /* cold: one at a time */
	}
	/* Racing only ever denies more: CAS retries run out rarely. */
	assert_true(raced * 10 >= rule * 9);

	/* Warm, its burst full: drained 1 s ago, the ramp over for an hour. */
	k = fc_compile_warm("100000/m", 0, FC_ALGO_GCRA, FC_COUNT_PACKETS, 3600);
	memset(st, 0, sizeof(st));
	st[0] = T0 + 10 * MS - SEC;
	st[1] = T0 - 2 * 3600 * SEC;
	assert_int_equal(fc_race4(&k, st), 100000);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_gcra_burst_then_rate),
		cmocka_unit_test(test_gcra_default_burst),
		cmocka_unit_test(test_window_boundaries),
		cmocka_unit_test(test_tiers_charge_nothing_on_denial),
		cmocka_unit_test(test_refund),
		cmocka_unit_test(test_refund_only_its_own),
		cmocka_unit_test(test_delay_queue),
		cmocka_unit_test(test_delay_room_saturates),
		cmocka_unit_test(test_bytes_cost),
		cmocka_unit_test(test_extreme_rates),
		cmocka_unit_test(test_rounding),
		cmocka_unit_test(test_clock_backwards),
		cmocka_unit_test(test_race_exact),
		cmocka_unit_test(test_sliding_vectors),
		cmocka_unit_test(test_sliding_edges),
		cmocka_unit_test(test_sliding_refund),
		cmocka_unit_test(test_sliding_headers),
		cmocka_unit_test(test_sliding_rule),
		cmocka_unit_test(test_sliding_bounds),
		cmocka_unit_test(test_warm_vectors),
		cmocka_unit_test(test_warm_bound),
		cmocka_unit_test(test_warm_arith),
		cmocka_unit_test(test_warm_view_refund),
		cmocka_unit_test(test_warm_grain),
		cmocka_unit_test(test_warm_clock_backwards),
		cmocka_unit_test(test_warm_race),
	};

	return fc_run_group("limit algorithms (maps/fc_limit.h)", tests, NULL, NULL);
}
