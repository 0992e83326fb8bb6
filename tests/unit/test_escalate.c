// SPDX-License-Identifier: BSD-2-Clause
/*
 * Escalation's counting, on an offender ring in plain memory written the way
 * nginx workers write it: N refusals per window pass, the one past N bans,
 * windows restart the count, policies and clients count apart, torn or
 * overrun reports are skipped and counted, never followed, a report a
 * killed worker never finished is skipped in time; and the bounds on
 * what a hostile ring can make root ban: a cap per minute, IPv6 clients of
 * one /64 folded into a /64 ban, no more than the maps hold.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "fc_escalate.h"
#include "fc_test.h"

#define T0 1795316400 /* a whole minute, in 2026 */

struct fc_env {
	struct fc_shm_ring *ring;
	struct fc_ring_src src;
	struct fc_escalation esc;
};

static uint64_t fc_mem_head(void *ctx)
{
	return ((struct fc_shm_ring *)ctx)->head;
}

static void fc_mem_read(void *ctx, uint64_t from, size_t n, struct fc_shm_ring_entry *out)
{
	const struct fc_shm_ring *ring = ctx;
	size_t i;

	for (i = 0; i < n; i++)
		out[i] = ring->e[(from + i) & (FC_SHM_RING_SIZE - 1)];
}

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
	env->esc.cap = 1000;
	env->esc.v6_aggregate = 4;
	assert_int_equal(fc_esc_set_policies(&env->esc, rows, 3), 0);
	assert_int_equal(env->esc.npol, 2);
	env->src = (struct fc_ring_src){ fc_mem_head, fc_mem_read, env->ring };
	fc_esc_attach(&env->esc, &env->src);
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
	assert_int_equal(fc_esc_drain(&env->esc, T0, 100, bans, 8, &st), 0);
	fc_report(env->ring, 7, 4, "\xc6\x12\x00\x07");
	assert_int_equal(fc_esc_drain(&env->esc, T0 + 1, 100, bans, 8, &st), 1);
	assert_int_equal(bans[0].p.family, 4);
	assert_int_equal(bans[0].p.len, 32);
	assert_memory_equal(bans[0].p.a, "\xc6\x12\x00\x07", 4);
	assert_int_equal(bans[0].expires, T0 + 1 + 1 + 600); /* rounded up: at least the TTL */
	assert_int_equal(bans[0].by_policy, 7);
	/* Past the threshold, once: no second ban for the same window. */
	fc_report(env->ring, 7, 4, "\xc6\x12\x00\x07");
	assert_int_equal(fc_esc_drain(&env->esc, T0 + 2, 100, bans, 8, &st), 0);
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
	assert_int_equal(fc_esc_drain(&env->esc, T0 + 59, 100, bans, 8, &st), 0);
	for (i = 0; i < 3; i++)
		fc_report(env->ring, 7, 4, "\xc6\x12\x00\x07");
	assert_int_equal(fc_esc_drain(&env->esc, T0 + 60, 100, bans, 8, &st), 0);
	/* Another client, another policy, a policy that does not escalate: apart. */
	for (i = 0; i < 3; i++) {
		fc_report(env->ring, 7, 4, "\xc6\x12\x00\x08");
		fc_report(env->ring, 8, 4, "\xc6\x12\x00\x07");
	}
	assert_int_equal(fc_esc_drain(&env->esc, T0 + 61, 100, bans, 8, &st), 0);
	fc_report(env->ring, 9, 6, "\x20\x01\x0d\xb8\0\0\0\0\0\0\0\0\0\0\0\x01");
	fc_report(env->ring, 9, 6, "\x20\x01\x0d\xb8\0\0\0\0\0\0\0\0\0\0\0\x01");
	assert_int_equal(fc_esc_drain(&env->esc, T0 + 61, 100, bans, 8, &st), 1);
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
	assert_int_equal(fc_esc_drain(&env->esc, T0, 100, bans, 8, &st), 0);
	assert_int_equal(env->esc.tail, 0);
	env->ring->e[0].seq = 1;
	/* A bad family is skipped, not followed. */
	fc_report(env->ring, 7, 9, "\xc6\x12\x00\x07");
	assert_int_equal(fc_esc_drain(&env->esc, T0, 100, bans, 8, &st), 0);
	assert_int_equal(env->esc.tail, 2);
	/* Workers a whole lap ahead: what was overwritten is counted as lost,
	 * and the rest is read in batches. */
	for (i = 0; i < FC_SHM_RING_SIZE + 5; i++)
		fc_report(env->ring, 8, 4, "\xc6\x12\x00\x07");
	assert_int_equal(fc_esc_drain(&env->esc, T0, 100, bans, 8, &st), 0);
	assert_int_equal(st.lost, 5);
	assert_int_equal(env->esc.tail, env->ring->head - FC_SHM_RING_SIZE + FC_ESC_BATCH);
	while (env->esc.tail < env->ring->head)
		assert_int_equal(fc_esc_drain(&env->esc, T0, 100, bans, 8, &st), 0);
	/* A head set back (or forged) is followed back, not read behind. */
	env->ring->head -= 100;
	assert_int_equal(fc_esc_drain(&env->esc, T0, 100, bans, 8, &st), 0);
	assert_int_equal(env->esc.tail, env->ring->head);
}

/* A worker killed between taking an index and stamping it leaves a slot
 * that is never stamped: it is skipped once a later report is stamped (and
 * it was claimed before an earlier read), or once it is FC_ESC_STALL_S old,
 * and counted as lost; escalation goes on behind it. A slot seen unstamped
 * for the first time is always waited for. */
static void test_stalled(void **state)
{
	struct fc_env *env = *state;
	struct fc_ban_row bans[8];
	struct fc_esc_stats st;
	int i;

	env->ring->head++; /* claimed, never stamped */
	for (i = 0; i < 4; i++)
		fc_report(env->ring, 7, 4, "\xc6\x12\x00\x07");
	assert_int_equal(fc_esc_drain(&env->esc, T0, 100, bans, 8, &st), 0);
	assert_int_equal(env->esc.tail, 0);
	assert_int_equal(st.lost, 0);
	/* The next read: reports after it are stamped, so its worker is gone. */
	assert_int_equal(fc_esc_drain(&env->esc, T0, 100, bans, 8, &st), 1);
	assert_int_equal(st.lost, 1);
	assert_memory_equal(bans[0].p.a, "\xc6\x12\x00\x07", 4);
	assert_int_equal(env->esc.tail, 5);

	/* Being written while a later one is stamped: waited for, not lost. */
	env->ring->head++;
	fc_report(env->ring, 9, 4, "\xc6\x12\x00\x08");
	assert_int_equal(fc_esc_drain(&env->esc, T0 + 1, 100, bans, 8, &st), 0);
	assert_int_equal(env->esc.tail, 5);
	env->ring->e[5] = (struct fc_shm_ring_entry){ .seq = 6, .policy = 9, .family = 4, .addr = { 198, 18, 0, 8 } };
	assert_int_equal(fc_esc_drain(&env->esc, T0 + 1, 100, bans, 8, &st), 1); /* 1/s: due on the second */
	assert_int_equal(st.lost, 0);
	assert_int_equal(env->esc.tail, 7);

	/* The last report of the ring never stamped: skipped once it is old. */
	env->ring->head++;
	for (i = 0; i < 3; i++) {
		assert_int_equal(fc_esc_drain(&env->esc, T0 + 2, 100, bans, 8, &st), 0);
		assert_int_equal(env->esc.tail, 7);
	}
	assert_int_equal(fc_esc_drain(&env->esc, T0 + 2 + FC_ESC_STALL_S, 100, bans, 8, &st), 0);
	assert_int_equal(st.lost, 1);
	assert_int_equal(env->esc.tail, 8);
	fc_report(env->ring, 7, 4, "\xc6\x12\x00\x09");
	assert_int_equal(fc_esc_drain(&env->esc, T0 + 2 + FC_ESC_STALL_S, 100, bans, 8, &st), 0);
	assert_int_equal(env->esc.tail, 9);
}

/* Each client of policy 9 (1 per second) is due on its second report. */
static void fc_due(struct fc_env *env, uint8_t family, const uint8_t *addr)
{
	fc_report(env->ring, 9, family, addr);
	fc_report(env->ring, 9, family, addr);
}

/* A hostile ring can not make root ban without bound. */
static void test_bounds(void **state)
{
	struct fc_env *env = *state;
	struct fc_ban_row bans[64];
	struct fc_esc_stats st;
	uint8_t a[16] = { 198, 18, 0, 0 };
	int i;

	/* The cap per minute: 1000 set, a fresh minute, 40 due, 5 allowed. */
	env->esc.cap = 5;
	for (i = 0; i < 40; i++) {
		a[3] = (uint8_t)i;
		fc_due(env, 4, a);
	}
	assert_int_equal(fc_esc_drain(&env->esc, T0 + 120, 100, bans, 64, &st), 5);
	assert_int_equal(st.capped, 35);
	/* The next minute has room for 5 more. */
	for (i = 0; i < 10; i++) {
		a[3] = (uint8_t)(100 + i);
		fc_due(env, 4, a);
	}
	assert_int_equal(fc_esc_drain(&env->esc, T0 + 180, 100, bans, 64, &st), 5);
	/* No more than the maps hold. */
	env->esc.cap = 1000;
	for (i = 0; i < 10; i++) {
		a[3] = (uint8_t)(200 + i);
		fc_due(env, 4, a);
	}
	assert_int_equal(fc_esc_drain(&env->esc, T0 + 240, 3, bans, 64, &st), 3);
	assert_int_equal(st.full, 7);
}

/* Many IPv6 clients of one /64 are one client: its /64 is banned. */
static void test_v6_aggregate(void **state)
{
	struct fc_env *env = *state;
	struct fc_ban_row bans[64];
	struct fc_esc_stats st;
	uint8_t a[16] = { 0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 1 };
	size_t n;
	int i;

	/* v6_aggregate 4: three are banned alone, the fourth bans the /64,
	 * the rest of that /64 is not banned again. */
	for (i = 0; i < 10; i++) {
		a[15] = (uint8_t)i;
		fc_due(env, 6, a);
	}
	n = fc_esc_drain(&env->esc, T0, 100, bans, 64, &st);
	assert_int_equal(n, 4);
	for (i = 0; i < 3; i++)
		assert_int_equal(bans[i].p.len, 128);
	assert_int_equal(bans[3].p.len, 64);
	assert_memory_equal(bans[3].p.a, "\x20\x01\x0d\xb8\0\0\0\x01\0\0\0\0\0\0\0\0", 16);
	assert_int_equal(st.aggregated, 3 + 6);
	/* Another /64 counts on its own. */
	a[7] = 2;
	fc_due(env, 6, a);
	assert_int_equal(fc_esc_drain(&env->esc, T0, 100, bans, 64, &st), 1);
	assert_int_equal(bans[0].p.len, 128);
}

/* A client an allow entry covers is never banned: counted and named (the
 * first FC_ESC_SKIPS), not counted against the cap; a lapsed entry, or one
 * on another address, allows nothing. */
static void test_allowed(void **state)
{
	struct fc_env *env = *state;
	struct fc_allow_row *allows = calloc(3, sizeof(*allows));
	struct fc_ban_row bans[8];
	struct fc_esc_stats st;
	struct fc_err err;
	int i;

	assert_non_null(allows);
	assert_int_equal(fc_prefix_parse("198.18.0.0/24", &allows[0].p, &err), 0);
	assert_int_equal(fc_prefix_parse("198.18.1.7", &allows[1].p, &err), 0);
	allows[1].expires = T0; /* lapsed at T0 */
	snprintf(allows[2].uid, sizeof(allows[2].uid), "vip"); /* a uid: no address */
	fc_esc_set_allows(&env->esc, allows, 3);
	env->esc.cap = 1;
	for (i = 0; i < 4; i++) {
		fc_report(env->ring, 7, 4, "\xc6\x12\x00\x07");
		fc_report(env->ring, 7, 4, "\xc6\x12\x01\x07");
	}
	assert_int_equal(fc_esc_drain(&env->esc, T0, 100, bans, 8, &st), 1);
	assert_memory_equal(bans[0].p.a, "\xc6\x12\x01\x07", 4); /* its entry lapsed: banned */
	assert_int_equal(st.allowed, 1);
	assert_int_equal(st.capped, 0);
	assert_int_equal(st.nskipped, 1);
	assert_memory_equal(st.skipped[0].client.a, "\xc6\x12\x00\x07", 4);
	assert_int_equal(st.skipped[0].client.len, 32);
	assert_int_equal(st.skipped[0].policy, 7);
	assert_ptr_equal(st.skipped[0].by, &allows[0]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_threshold, fc_setup, fc_teardown),
		cmocka_unit_test_setup_teardown(test_windows_and_keys, fc_setup, fc_teardown),
		cmocka_unit_test_setup_teardown(test_torn_and_overrun, fc_setup, fc_teardown),
		cmocka_unit_test_setup_teardown(test_stalled, fc_setup, fc_teardown),
		cmocka_unit_test_setup_teardown(test_bounds, fc_setup, fc_teardown),
		cmocka_unit_test_setup_teardown(test_v6_aggregate, fc_setup, fc_teardown),
		cmocka_unit_test_setup_teardown(test_allowed, fc_setup, fc_teardown),
	};

	return fc_run_group("escalation: counting offender reports", tests, NULL, NULL);
}
