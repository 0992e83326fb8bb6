// SPDX-License-Identifier: BSD-2-Clause
/*
 * Escalation's counting, on an offender ring in plain memory written the way
 * nginx workers write it: N refusals per window pass, the one past N bans,
 * windows restart the count, policies and clients count apart, and torn or
 * overrun reports are skipped and counted, never followed.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "fc_escalate.h"

#define T0 1795316400 /* a whole minute, in 2026 */

struct fc_env {
	struct fc_shm_ring *ring;
	struct fc_escalation esc;
};

/* Appends a report as a worker does: index by fetch-and-add, stamp last. */
static void fc_report(struct fc_shm_ring *ring, uint32_t policy, uint8_t family, const void *addr)
{
	uint64_t idx = ring->head++;
	struct fc_shm_ring_entry *e = &ring->e[idx & (FC_SHM_RING_SIZE - 1)];

	memset(e, 0, sizeof(*e));
	e->policy = policy;
	e->family = family;
	memcpy(e->addr, addr, family == 6 ? 16 : 4);
	e->seq = idx + 1;
}

static int fc_setup(void **state)
{
	struct fc_policy_row rows[3] = { 0 };
	struct fc_env *env = calloc(1, sizeof(*env));

	env->ring = calloc(1, sizeof(*env->ring));
	rows[0].spec.id = 7;
	rows[0].spec.escalate = (struct fc_rate){ .n = 3, .unit_secs = 60 };
	rows[0].spec.ban_ttl = 600;
	rows[1].spec.id = 8; /* not escalating */
	rows[2].spec.id = 9;
	rows[2].spec.escalate = (struct fc_rate){ .n = 1, .unit_secs = 1 };
	rows[2].spec.ban_ttl = 60;
	assert_int_equal(fc_esc_set_policies(&env->esc, rows, 3), 0);
	assert_int_equal(env->esc.npol, 2);
	fc_esc_attach(&env->esc, env->ring);
	*state = env;
	return 0;
}

static int fc_teardown(void **state)
{
	struct fc_env *env = *state;

	fc_esc_free(&env->esc);
	free(env->ring);
	free(env);
	return 0;
}

static void test_threshold(void **state)
{
	struct fc_env *env = *state;
	struct fc_ban_row bans[8];
	struct fc_esc_stats st;
	int i;

	for (i = 0; i < 3; i++)
		fc_report(env->ring, 7, 4, "\xc6\x12\x00\x07");
	assert_int_equal(fc_esc_drain(&env->esc, T0, bans, 8, &st), 0);
	fc_report(env->ring, 7, 4, "\xc6\x12\x00\x07");
	assert_int_equal(fc_esc_drain(&env->esc, T0 + 1, bans, 8, &st), 1);
	assert_int_equal(bans[0].p.family, 4);
	assert_int_equal(bans[0].p.len, 32);
	assert_memory_equal(bans[0].p.a, "\xc6\x12\x00\x07", 4);
	assert_int_equal(bans[0].expires, T0 + 1 + 600);
	assert_int_equal(bans[0].by_policy, 7);
	/* Past the threshold, once: no second ban for the same window. */
	fc_report(env->ring, 7, 4, "\xc6\x12\x00\x07");
	assert_int_equal(fc_esc_drain(&env->esc, T0 + 2, bans, 8, &st), 0);
	assert_int_equal(st.lost, 0);
}

static void test_windows_and_keys(void **state)
{
	struct fc_env *env = *state;
	struct fc_ban_row bans[8];
	struct fc_esc_stats st;
	int i;

	/* Three in one minute, three in the next: never four in one window. */
	for (i = 0; i < 3; i++)
		fc_report(env->ring, 7, 4, "\xc6\x12\x00\x07");
	assert_int_equal(fc_esc_drain(&env->esc, T0 + 59, bans, 8, &st), 0);
	for (i = 0; i < 3; i++)
		fc_report(env->ring, 7, 4, "\xc6\x12\x00\x07");
	assert_int_equal(fc_esc_drain(&env->esc, T0 + 60, bans, 8, &st), 0);
	/* Another client, another policy, a policy that does not escalate: apart. */
	for (i = 0; i < 3; i++) {
		fc_report(env->ring, 7, 4, "\xc6\x12\x00\x08");
		fc_report(env->ring, 8, 4, "\xc6\x12\x00\x07");
	}
	assert_int_equal(fc_esc_drain(&env->esc, T0 + 61, bans, 8, &st), 0);
	fc_report(env->ring, 9, 6, "\x20\x01\x0d\xb8\0\0\0\0\0\0\0\0\0\0\0\x01");
	fc_report(env->ring, 9, 6, "\x20\x01\x0d\xb8\0\0\0\0\0\0\0\0\0\0\0\x01");
	assert_int_equal(fc_esc_drain(&env->esc, T0 + 61, bans, 8, &st), 1);
	assert_int_equal(bans[0].p.family, 6);
	assert_int_equal(bans[0].p.len, 128);
	assert_int_equal(bans[0].by_policy, 9);
}

static void test_torn_and_overrun(void **state)
{
	struct fc_env *env = *state;
	struct fc_ban_row bans[8];
	struct fc_esc_stats st;
	uint64_t i;

	/* A report still being written (stamp not yet its index + 1) is left for later. */
	fc_report(env->ring, 7, 4, "\xc6\x12\x00\x07");
	env->ring->e[0].seq = 0;
	assert_int_equal(fc_esc_drain(&env->esc, T0, bans, 8, &st), 0);
	assert_int_equal(env->esc.tail, 0);
	env->ring->e[0].seq = 1;
	/* A bad family is skipped, not followed. */
	fc_report(env->ring, 7, 9, "\xc6\x12\x00\x07");
	assert_int_equal(fc_esc_drain(&env->esc, T0, bans, 8, &st), 0);
	assert_int_equal(env->esc.tail, 2);
	/* Workers a whole lap ahead: what was overwritten is counted as lost. */
	for (i = 0; i < FC_SHM_RING_SIZE + 5; i++)
		fc_report(env->ring, 8, 4, "\xc6\x12\x00\x07");
	assert_int_equal(fc_esc_drain(&env->esc, T0, bans, 8, &st), 0);
	assert_int_equal(st.lost, 5);
	assert_int_equal(env->esc.tail, env->ring->head);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_threshold, fc_setup, fc_teardown),
		cmocka_unit_test_setup_teardown(test_windows_and_keys, fc_setup, fc_teardown),
		cmocka_unit_test_setup_teardown(test_torn_and_overrun, fc_setup, fc_teardown),
	};

	return cmocka_run_group_tests_name("escalation: counting offender reports", tests, NULL, NULL);
}
