// SPDX-License-Identifier: BSD-2-Clause
/*
 * What keys and top show of a fleet key (fc_key_fleet_view): its credit and
 * demand read from the entry's words as maps/fc_fleet.h lays them out, for
 * each algorithm, against the current window that the agent's status names;
 * a word of another window holds nothing now; words a worker forged are
 * shown as they are, never trusted further.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>
#include <jansson.h>

#include "fc_fleet.h"
#include "fc_fleet_file.h"
#include "fc_shm.h"
#include "fc_test.h"

static json_t *fc_sp(const char *algo, uint64_t w)
{
	json_t *sp = json_pack("{s:I, s:s, s:I}", "id", (json_int_t)7, "algo", algo, "window", (json_int_t)w);

	assert_non_null(sp);
	return sp;
}

static void test_window_key(void **state)
{
	const uint64_t w = 29714400; /* a minute's index in 2026 */
	struct fc_shm_key k = { .tag = FC_SHM_KEY_TAG_MIN | 5 };
	struct fc_key_fleet f;
	json_t *sp = fc_sp("window", w);

	(void)state;
	k.state[0] = FC_FLEET_WORD(w, 37);
	fc_key_fleet_view(sp, &k, &f);
	assert_true(f.current);
	assert_int_equal(f.credit, 37);
	assert_false(f.demand);
	/* Refused for lack of credit in w: the demand word says so. */
	k.state[0] = FC_FLEET_WORD(w, 0);
	assert_int_equal(fc_fleet_demand(&k.state[1], w), 1);
	fc_key_fleet_view(sp, &k, &f);
	assert_true(f.current && f.demand);
	assert_int_equal(f.credit, 0);
	/* Last window's word and flag: nothing held now, nothing asked. */
	k.state[0] = FC_FLEET_WORD(w - 1, 12);
	k.state[1] = FC_FLEET_WORD(w - 1, FC_FLEET_WANTED);
	fc_key_fleet_view(sp, &k, &f);
	assert_false(f.current || f.demand);
	assert_int_equal(f.credit, 0);
	/* A new entry's zeros are of no window. */
	memset(k.state, 0, sizeof(k.state));
	fc_key_fleet_view(sp, &k, &f);
	assert_false(f.current || f.demand);
	json_decref(sp);
}

static void test_sliding_key(void **state)
{
	const uint64_t w = 29714400;
	struct fc_shm_key k = { .tag = FC_SHM_KEY_TAG_MIN | 5 };
	struct fc_key_fleet f;
	json_t *sp = fc_sp("sliding", w);

	(void)state;
	k.state[0] = FC_FLEET_SLIDE(w, 5, 3);
	fc_key_fleet_view(sp, &k, &f);
	assert_true(f.current);
	assert_int_equal(f.credit, 5);
	k.state[0] = FC_FLEET_SLIDE(w - 1, 5, 3);
	fc_key_fleet_view(sp, &k, &f);
	assert_false(f.current);
	assert_int_equal(f.credit, 0);
	json_decref(sp);
}

static void test_gcra_key(void **state)
{
	const uint64_t lw = 3714300000ULL; /* a lease window of 200 ms */
	struct fc_shm_key k = { .tag = FC_SHM_KEY_TAG_MIN | 5 };
	struct fc_key_fleet f;
	json_t *sp = fc_sp("gcra", lw);

	(void)state;
	k.state[0] = 1783000000000000000ULL; /* the TAT: not credit */
	k.state[2] = FC_FLEET_WORD(lw, 4);
	fc_key_fleet_view(sp, &k, &f);
	assert_true(f.current);
	assert_int_equal(f.credit, 4);
	k.state[2] = FC_FLEET_WORD(lw - 1, 4);
	fc_key_fleet_view(sp, &k, &f);
	assert_false(f.current);
	assert_int_equal(f.credit, 0);
	json_decref(sp);
}

/* A status without an algorithm or window, or with a forged word: shown, bounded by the word's field. */
static void test_hostile(void **state)
{
	struct fc_shm_key k = { .tag = FC_SHM_KEY_TAG_MIN | 5 };
	struct fc_key_fleet f;
	json_t *sp = json_object();

	(void)state;
	k.state[0] = ~0ULL;
	k.state[1] = ~0ULL;
	fc_key_fleet_view(sp, &k, &f);
	assert_false(f.current || f.demand);
	json_object_set_new(sp, "window", json_integer((json_int_t)FC_FLEET_W_MASK));
	fc_key_fleet_view(sp, &k, &f);
	assert_true(f.current);
	assert_true(f.credit <= FC_FLEET_CREDIT_MAX);
	json_decref(sp);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_window_key),
		cmocka_unit_test(test_sliding_key),
		cmocka_unit_test(test_gcra_key),
		cmocka_unit_test(test_hostile),
	};

	return fc_run_group("fleet key view", tests, NULL, NULL);
}
