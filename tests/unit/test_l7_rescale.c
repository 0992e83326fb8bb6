// SPDX-License-Identifier: BSD-2-Clause
/*
 * A change of a GCRA rate in the L7 engine, on shm written by the real
 * publisher: each bucket (a policy's slot, each key's entry) keeps the
 * requests it used, rescaled at its next request to the new interval
 * (maps/fc_limit.h, Changing a rate); lowering never adds room; a delaying
 * policy's queue; a key whose rescaled lead is longer is not taken back
 * before it has passed; two changes in a row.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <cmocka.h>

#include "fc_test.h"
#include "fc_test_l7.h"

/* Changes policy id to rates (the rest as given) and publishes it. */
static void fc_change(struct fc_t *t, uint32_t id, const char *match, const char *rates, const char *action,
		      uint64_t burst, uint32_t delay_burst)
{
	fc_policy(t, id, match, rates, action, burst, delay_burst);
	fc_publish(t);
	assert_int_equal(fc_build(t, t->base, t->size), 0);
}

/* Refused at 3/m, a client is admitted right after the rate is raised to
 * 10/m: its 3 requests (59 s ahead a second on) lead by 17.7 s of the 60 s
 * burst at 10/m, so 7 more pass at once, then one each 6 s. */
static void test_raise(void **state)
{
	struct fc_t *t = *state;

	fc_change(t, 1, "uid=u1", "3/m", "drop", 0, 0);
	assert_int_equal(fc_passes(t, "uid=u1", T0, 5), 3);
	fc_change(t, 1, "uid=u1", "10/m", "drop", 0, 0);
	assert_int_equal(fc_passes(t, "uid=u1", T0 + SEC, 10), 7);
	assert_int_equal(fc_passes(t, "uid=u1", T0 + 7 * SEC, 3), 1);
}

/* Per key, each key's entry on its own; and the slot's overflow bucket. */
static void test_raise_per_key(void **state)
{
	struct fc_t *t = *state;

	fc_change(t, 1, "uid=*", "3/m", "drop", 0, 0);
	assert_int_equal(fc_passes(t, "uid=u1", T0, 5), 3);
	assert_int_equal(fc_passes(t, "uid=u2", T0, 1), 1);
	fc_change(t, 1, "uid=*", "10/m", "drop", 0, 0);
	assert_int_equal(fc_passes(t, "uid=u1", T0 + SEC, 10), 7);
	/* 1 used (20 s at 3/m, 19 s on): 5.7 s at 10/m, 9 more. */
	assert_int_equal(fc_passes(t, "uid=u2", T0 + SEC, 12), 9);
	assert_int_equal(fc_passes(t, "uid=u3", T0 + SEC, 12), 10);
}

/* Lowering 10/m to 3/m never adds room: 2 used (12 s at 10/m) are 40 s at
 * 3/m, so 1 more passes, where the bucket kept as it was let 2 through. */
static void test_lower(void **state)
{
	struct fc_t *t = *state;

	fc_change(t, 1, "uid=*", "10/m", "drop", 0, 0);
	assert_int_equal(fc_passes(t, "uid=u1", T0, 2), 2);
	fc_change(t, 1, "uid=*", "3/m", "drop", 0, 0);
	assert_int_equal(fc_passes(t, "uid=u1", T0, 5), 1);
	assert_int_equal(fc_passes(t, "uid=u1", T0 + 19 * SEC, 2), 0);
	assert_int_equal(fc_passes(t, "uid=u1", T0 + 20 * SEC, 2), 1);
}

/*
 * A delaying policy: 1/s, burst 1, 5 waiting. The 6 requests its TAT holds
 * (6 s) are 0.6 s at 10/s: the burst and queue full (0.1 s + 5 * 0.1 s), so
 * the next is refused, and 100 ms on one waits 500 ms. Kept as it was, the
 * 6 s lead read as the clock stepped back: the bucket started empty.
 */
static void test_delay(void **state)
{
	struct fc_t *t = *state;
	struct fc_l7_result res;
	int i;

	fc_change(t, 1, "uid=u1", "1/s", "delay", 1, 5);
	assert_int_equal(fc_decide(t, "uid=u1", T0, &res), FC_L7_PASS);
	for (i = 0; i < 5; i++)
		assert_int_equal(fc_decide(t, "uid=u1", T0, &res), FC_L7_DELAYED);
	assert_int_equal(fc_decide(t, "uid=u1", T0, &res), FC_L7_REJECTED);
	fc_change(t, 1, "uid=u1", "10/s", "delay", 1, 5);
	assert_int_equal(fc_decide(t, "uid=u1", T0, &res), FC_L7_REJECTED);
	assert_int_equal(fc_decide(t, "uid=u1", T0 + 100 * MS, &res), FC_L7_DELAYED);
	assert_int_equal(res.delay_ns, 500 * MS);
}

/*
 * Lowering 10/s to 1/m for a key: its 5 requests (0.5 s at 10/s) are 300 s
 * at 1/m, more than the 60 s burst: refused until what is left of them fits
 * (0.1 s at 10/s, 400 ms on), then full for 60 s (kept as it was, it took
 * one more 500 ms on). The key's entry holds state for that long: it does
 * not look idle (and is not taken back for another key, which would start
 * it empty) once the 10/s lead has passed.
 */
static void test_key_kept(void **state)
{
	struct fc_t *t = *state;
	uint32_t i, n = 0;

	fc_change(t, 1, "uid=*", "10/s", "drop", 0, 0);
	assert_int_equal(fc_passes(t, "uid=u1", T0, 5), 5);
	fc_change(t, 1, "uid=*", "1/m", "drop", 0, 0);
	assert_int_equal(fc_passes(t, "uid=u1", T0, 1), 0);
	assert_int_equal(fc_passes(t, "uid=u1", T0 + 300 * MS, 1), 0);
	for (i = 0; i < t->ix.nkeys; i++) {
		if (t->ix.keys[i].slot != t->ix.pol[0].slot || t->ix.keys[i].tag < FC_SHM_KEY_TAG_MIN)
			continue;
		n++;
		assert_true((t->ix.keys[i].idle_ns & ~FC_SHM_KEY_HELD) >= T0 + 60 * SEC);
	}
	assert_int_equal(n, 1);
	assert_int_equal(fc_passes(t, "uid=u1", T0 + 400 * MS, 1), 0);
	assert_int_equal(fc_passes(t, "uid=u1", T0 + SEC, 1), 0);
	assert_int_equal(fc_passes(t, "uid=u1", T0 + 60 * SEC, 1), 0);
	assert_int_equal(fc_passes(t, "uid=u1", T0 + 60400 * MS, 2), 1);
}

/* Two changes in a row: with a request between, each rescales from the one
 * before (as tests/bpf/test_rescale.c has it); without, the bucket is older
 * than the kept generation: full until its TAT passes, then empty. */
static void test_two_changes(void **state)
{
	struct fc_t *t = *state;

	fc_change(t, 1, "uid=*", "3/m", "drop", 0, 0);
	assert_int_equal(fc_passes(t, "uid=a", T0, 3), 3);
	assert_int_equal(fc_passes(t, "uid=b", T0, 3), 3);
	fc_change(t, 1, "uid=*", "10/m", "drop", 0, 0);
	assert_int_equal(fc_passes(t, "uid=a", T0 + SEC, 1), 1);
	fc_change(t, 1, "uid=*", "20/m", "drop", 0, 0);
	assert_int_equal(fc_passes(t, "uid=a", T0 + 2 * SEC, 20), 16);
	assert_int_equal(fc_passes(t, "uid=b", T0 + 2 * SEC, 5), 0);
	assert_int_equal(fc_passes(t, "uid=b", T0 + 59 * SEC, 5), 0);
	assert_int_equal(fc_passes(t, "uid=b", T0 + 60 * SEC, 25), 20);
}

/* Several rates: each tier rescaled by its own ratio, one kept where its
 * interval stayed. 10/m,20/h: 20 used in two minutes, the hour's 3480 s
 * ahead; at 40/h that is 1740 s of its 3600: the minute's 10 pass again. */
static void test_tiers(void **state)
{
	struct fc_t *t = *state;

	fc_change(t, 1, "uid=*", "10/m,20/h", "drop", 0, 0);
	assert_int_equal(fc_passes(t, "uid=u1", T0, 12), 10);
	/* The minute's full; a minute on, 10 more, then the hour's 20 used. */
	assert_int_equal(fc_passes(t, "uid=u1", T0 + 60 * SEC, 12), 10);
	assert_int_equal(fc_passes(t, "uid=u1", T0 + 120 * SEC, 5), 0);
	fc_change(t, 1, "uid=*", "10/m,40/h", "drop", 0, 0);
	assert_int_equal(fc_passes(t, "uid=u1", T0 + 120 * SEC, 12), 10);
	assert_int_equal(fc_passes(t, "uid=u1", T0 + 180 * SEC, 12), 10);
	/* 3420 s of the hour's 3600 used: 2 more (90 s each). */
	assert_int_equal(fc_passes(t, "uid=u1", T0 + 240 * SEC, 5), 2);
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, fc_setup, fc_teardown)
	const struct CMUnitTest tests[] = {
		T(test_raise),
		T(test_raise_per_key),
		T(test_lower),
		T(test_delay),
		T(test_key_kept),
		T(test_two_changes),
		T(test_tiers),
	};
#undef T

	return fc_run_group("L7 engine: a rate changed, buckets rescaled", tests, NULL, NULL);
}
