// SPDX-License-Identifier: BSD-2-Clause
/* The loader's fleet splits (loader/lib/publish/fc_fleet_split.c): shares
 * that add up to exactly q for every key point over any weights, gcra
 * intervals whose rates add up to at most N, the node set of each window
 * from fleet_nodes' history, and what the agent is handed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "fc_fleet_split.h"
#include "fc_test.h"

/* xorshift64*: the same sequence every run. */
static uint64_t fc_rand(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 2685821657736338717ULL;
}

/* The shares of every node of a set add up to q, whatever the key's point. */
static void test_split_sums(void **state)
{
	struct fc_fleet_member m[16];
	struct fc_fleet_split sp[16];
	uint64_t seed = 29, q, sum;
	size_t n, i, k, t;
	uint32_t u;

	(void)state;
	for (t = 0; t < 2000; t++) {
		n = 1 + fc_rand(&seed) % 16;
		q = t % 3 ? fc_rand(&seed) % 1000 : fc_rand(&seed) % FC_RATE_MAX + 1;
		for (i = 0; i < n; i++)
			m[i] = (struct fc_fleet_member){ .no = (uint32_t)i + 1,
							 .weight = (uint32_t)(1 + fc_rand(&seed) % FC_FLEET_WEIGHT_ONE) };
		for (i = 0; i < n; i++)
			fc_fleet_split_make(m, n, i, q, 7, 0, 0, &sp[i]);
		for (k = 0; k < 20; k++) {
			u = (uint32_t)fc_rand(&seed);
			sum = 0;
			for (i = 0; i < n; i++)
				sum += fc_fleet_share(&sp[i], u);
			if (sum != q)
				fail_msg("%zu nodes, q %llu, u %u: shares add up to %llu", n, (unsigned long long)q, u,
					 (unsigned long long)sum);
		}
	}
	/* The most nodes a set has, the most a weight and a rate are: 128-bit
	 * products, shares still adding up to q. */
	{
		static struct fc_fleet_member big[FC_FLEET_NODES_MAX];
		static struct fc_fleet_split bsp[FC_FLEET_NODES_MAX];

		for (i = 0; i < FC_FLEET_NODES_MAX; i++)
			big[i] = (struct fc_fleet_member){ .no = (uint32_t)i + 1,
							   .weight = i % 2 ? FC_FLEET_WEIGHT_ONE : (uint32_t)(i + 1) };
		for (i = 0; i < FC_FLEET_NODES_MAX; i++)
			fc_fleet_split_make(big, FC_FLEET_NODES_MAX, i, FC_FLEET_CREDIT_MAX, 0, 0, 0, &bsp[i]);
		for (k = 0; k < 4; k++) {
			u = (uint32_t)fc_rand(&seed);
			sum = 0;
			for (i = 0; i < FC_FLEET_NODES_MAX; i++)
				sum += fc_fleet_share(&bsp[i], u);
			assert_int_equal(sum, FC_FLEET_CREDIT_MAX);
		}
	}
	/* The design's example: 3/d over four nodes of 0.25: three of them get
	 * 1, which three turns with the key; R x W gave each 1 (4 in all). */
	for (i = 0; i < 4; i++)
		m[i] = (struct fc_fleet_member){ .no = (uint32_t)i + 1, .weight = 250000 };
	for (i = 0; i < 4; i++) {
		fc_fleet_split_make(m, 4, i, 3, 0, 0, 0, &sp[i]);
		assert_int_equal(sp[i].base, 0);
	}
	assert_int_equal(sp[3].seg_hi, 3ULL << 32);
	for (k = 0; k < 4; k++) {
		u = (uint32_t)(k * 0x40000000u + 5);
		sum = 0;
		for (i = 0; i < 4; i++) {
			assert_true(fc_fleet_share(&sp[i], u) <= 1);
			sum += fc_fleet_share(&sp[i], u);
		}
		assert_int_equal(sum, 3);
	}
	/* Outside the set: nothing. */
	fc_fleet_split_make(m, 4, 4, 3, 9, 0, 0, &sp[0]);
	assert_int_equal(sp[0].from, 9);
	assert_int_equal(fc_fleet_share(&sp[0], 12345), 0);
}

/* A split's q found back from this node's split alone (an agent started
 * after a rate edit whose window's split the workers kept): the q made,
 * or none where another q gives the same split; never a wrong one. */
static void test_split_q(void **state)
{
	struct fc_fleet_member m[16];
	struct fc_fleet_split sp;
	uint64_t seed = 41, q, got;
	size_t n, i, t, found = 0;

	(void)state;
	for (t = 0; t < 20000; t++) {
		n = 1 + fc_rand(&seed) % 16;
		q = t % 3 ? fc_rand(&seed) % 1000 : fc_rand(&seed) % FC_RATE_MAX + 1;
		for (i = 0; i < n; i++)
			m[i] = (struct fc_fleet_member){ .no = (uint32_t)i + 1,
							 .weight = (uint32_t)(1 + fc_rand(&seed) % FC_FLEET_WEIGHT_ONE) };
		i = fc_rand(&seed) % n;
		fc_fleet_split_make(m, n, i, q, 7, 0, 0, &sp);
		got = fc_fleet_split_q(m, n, i, &sp);
		if (got != q && got != FC_FLEET_NEVER)
			fail_msg("%zu nodes, node %zu, q %llu: found %llu", n, i, (unsigned long long)q,
				 (unsigned long long)got);
		found += got == q;
	}
	assert_true(found > 19000); /* nearly always one q gives it */
	/* The review's case: 1000/h over a 0.25 and a 0.75, kept into the window. */
	m[0] = (struct fc_fleet_member){ .no = 1, .weight = 250000 };
	m[1] = (struct fc_fleet_member){ .no = 2, .weight = 750000 };
	fc_fleet_split_make(m, 2, 1, 1000, 7, 0, 0, &sp);
	assert_int_equal(fc_fleet_split_q(m, 2, 1, &sp), 1000);
	/* outside the set: no q */
	assert_int_equal(fc_fleet_split_q(m, 2, 2, &sp), FC_FLEET_NEVER);
}

/* gcra: each node's interval T_i = ceil(unit S / (N W_i)): the rates add up
 * to at most N (never faster than asked), within a node's rounding. */
static void test_split_gcra_interval(void **state)
{
	const uint64_t unit = 1000000000ULL;
	struct fc_fleet_member m[3] = { { 1, 250000 }, { 2, 250000 }, { 3, 500000 } };
	struct fc_fleet_split sp;
	double rate = 0;
	size_t i;

	(void)state;
	for (i = 0; i < 3; i++) {
		fc_fleet_split_make(m, 3, i, 20, 0, unit, 10, &sp);
		assert_true(sp.interval_ns > 0);
		rate += (double)unit / (double)sp.interval_ns;
	}
	assert_true(rate <= 10.0 && rate > 9.99);
	fc_fleet_split_make(m, 3, 0, 20, 0, unit, 10, &sp);
	assert_int_equal(sp.interval_ns, 400000000); /* 2.5/s */
	/* 1/d on a node of weight 1e-6 beside two of 1: too long for the words, leases only. */
	m[0].weight = 1;
	m[1].weight = m[2].weight = FC_FLEET_WEIGHT_ONE;
	fc_fleet_split_make(m, 3, 0, 1, 0, 86400 * unit, 1, &sp);
	assert_int_equal(sp.interval_ns, 0);
}

static struct fc_fleet_node fc_row(const char *name, uint32_t no, uint32_t w, int64_t since, int64_t until)
{
	struct fc_fleet_node r = { .no = no, .weight = w, .since = since, .until = until };

	snprintf(r.name, sizeof(r.name), "%s", name);
	return r;
}

/* The split of a window is over its node set: rows with since <= start <
 * until; split[1] the first later window whose set differs. */
static void test_splits_of_windows(void **state)
{
	struct fc_fleet_node rows[] = {
		fc_row("a", 1, 500000, 0, 0),
		fc_row("b", 2, 500000, 0, 125000),     /* b leaves at 125 s (its until) */
		fc_row("c", 3, 500000, 61000, 0),      /* c from 61 s */
	};
	struct fc_fleet_view v = { .on = true, .secret = { 1, 2 }, .rows = rows, .nrows = 3, .node_no = 1,
				   .now_ms = 30000, .lease_ns = FC_FLEET_LEASE_NS_DEFAULT };
	const uint64_t m = 60ULL * 1000000000ULL;
	struct fc_fleet_split sp[2];
	int64_t at[2];

	(void)state;
	/* /m at 30 s: window 0 is {a, b}; window 2 (120 s) {a, b, c}; 100 each
	 * of a's in window 0 is 50. */
	fc_fleet_splits(&v, m, 100, 0, sp, at);
	assert_int_equal(sp[0].from, 0);
	assert_int_equal(at[0], 0);
	assert_int_equal(fc_fleet_share(&sp[0], 77), 50);
	assert_int_equal(sp[1].from, 2);
	assert_int_equal(at[1], 120000);
	assert_int_equal(sp[1].base, 33);
	/* At 130 s: window 2 still has b (125 s is after its start); window 3 does not. */
	v.now_ms = 130000;
	fc_fleet_splits(&v, m, 100, 0, sp, at);
	assert_int_equal(sp[0].from, 2);
	assert_int_equal(sp[1].from, 3);
	assert_int_equal(fc_fleet_share(&sp[1], 77), 50);
	/* Stale when window 3 begins: at 180 s, or 10 s earlier on the clock
	 * of a node whose fleet clock is 10 s ahead. */
	{
		struct fc_policy_row pr = { .spec = { .id = 1, .fleet = true, .algo = FC_ALGO_WINDOW } };
		struct fc_err err;

		assert_int_equal(fc_rates_parse("100/m", &pr.spec, &err), 0);
		assert_int_equal(fc_fleet_refresh_ms(&v, &pr, 1), 180000);
		v.clock_ns = 10000000000LL;
		assert_int_equal(fc_fleet_refresh_ms(&v, &pr, 1), 170000);
		v.clock_ns = 0;
	}
	/* Later: nothing changes again. */
	v.now_ms = 200000;
	fc_fleet_splits(&v, m, 100, 0, sp, at);
	assert_int_equal(sp[1].from, FC_FLEET_NEVER);
	/* /d: the day's set is {a, b} at its start; the next day's {a, c}. */
	v.now_ms = 30000;
	fc_fleet_splits(&v, 1440 * m, 3, 0, sp, at);
	assert_int_equal(sp[1].from, 1);
	/* A node never in the set: no share, grants only. */
	v.node_no = 0;
	fc_fleet_splits(&v, m, 100, 0, sp, at);
	assert_int_equal(fc_fleet_share(&sp[0], 77), 0);
	assert_int_equal(fc_fleet_share(&sp[1], 77), 0);
}

/* What the agent is handed: the fleet policies, their splits, the sets by
 * time with their digests, the fixed key's point. */
static void test_cfg(void **state)
{
	struct fc_fleet_node rows[] = { fc_row("a", 1, 250000, 0, 0), fc_row("b", 2, 750000, 0, 0) };
	struct fc_fleet_view v = { .on = true, .secret = { 3, 4 }, .rows = rows, .nrows = 2, .node_no = 2,
				   .now_ms = 90000000, .lease_ns = FC_FLEET_LEASE_NS_DEFAULT };
	struct fc_policy_row pr[3] = { 0 };
	struct fc_fleet_member m[2] = { { 1, 250000 }, { 2, 750000 } };
	struct fc_fleet_cfg cfg;
	struct fc_err err;

	(void)state;
	assert_int_equal(fc_match_parse("uid=*", &pr[0].spec, &err), 0);
	assert_int_equal(fc_rates_parse("100/d", &pr[0].spec, &err), 0);
	pr[0].spec.id = 1;
	pr[0].spec.algo = FC_ALGO_WINDOW;
	pr[0].spec.fleet = true;
	pr[0].epoch = 5;
	pr[0].slot = 3;
	assert_int_equal(fc_match_parse("ip=198.18.0.1", &pr[1].spec, &err), 0);
	assert_int_equal(fc_rates_parse("10/s:40", &pr[1].spec, &err), 0);
	pr[1].spec.id = 2;
	pr[1].spec.fleet = true;
	pr[1].epoch = 6;
	assert_int_equal(fc_match_parse("uid=x", &pr[2].spec, &err), 0); /* not the fleet's */
	assert_int_equal(fc_rates_parse("1/s", &pr[2].spec, &err), 0);
	pr[2].spec.id = 3;
	assert_int_equal(fc_fleet_cfg_make(&v, pr, 3, &cfg, &err), 0);
	assert_int_equal(cfg.node_no, 2);
	assert_int_equal(cfg.npols, 2);
	assert_int_equal(cfg.pols[0].algo, FC_ALGO_FLEET_WINDOW);
	assert_true(cfg.pols[0].keyed);
	assert_int_equal(cfg.pols[0].layer, FC_LAYER_HTTP);
	assert_int_equal(cfg.pols[0].slot, 3);
	assert_int_equal(cfg.pols[0].split[0].from, 1); /* 90,000 s: day 1 */
	assert_int_equal(fc_fleet_share(&cfg.pols[0].split[0], 0), 75);
	assert_int_equal(cfg.pols[1].algo, FC_ALGO_FLEET_GCRA);
	assert_false(cfg.pols[1].keyed);
	assert_int_equal(cfg.pols[1].layer, FC_LAYER_XDP);
	assert_int_equal(cfg.pols[1].burst, 40);
	assert_int_equal(cfg.pols[1].lease_ns, FC_FLEET_LEASE_NS_DEFAULT);
	assert_int_equal(cfg.pols[1].split[0].interval_ns, 133333334); /* 7.5/s */
	assert_int_equal(cfg.pols[1].fixed_u, fc_fleet_fixed_point(v.secret, 2, 6));
	assert_int_not_equal(cfg.pols[1].fixed_u, fc_fleet_fixed_point(v.secret, 2, 7));
	/* Two units, two times, one set: both taken at their windows' starts. */
	assert_int_equal(cfg.nsets, 2);
	assert_int_equal(cfg.sets[cfg.pols[0].set[0]].at_ms, 86400000);
	assert_int_equal(cfg.sets[cfg.pols[0].set[0]].n, 2);
	assert_int_equal(cfg.sets[0].digest, cfg.sets[1].digest);
	assert_int_equal(cfg.sets[0].digest, fc_fleet_set_digest(v.secret, m, 2));
	m[1].weight = 500000;
	assert_int_not_equal(cfg.sets[0].digest, fc_fleet_set_digest(v.secret, m, 2));
	fc_fleet_cfg_free(&cfg);
	/* Off (no fleet policy in the store): nothing. */
	v.on = false;
	assert_int_equal(fc_fleet_cfg_make(&v, pr, 3, &cfg, &err), 0);
	assert_int_equal(cfg.npols, 0);
	assert_null(cfg.pols);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_split_sums),
		cmocka_unit_test(test_split_q),
		cmocka_unit_test(test_split_gcra_interval),
		cmocka_unit_test(test_splits_of_windows),
		cmocka_unit_test(test_cfg),
	};

	return fc_run_group("fleet splits (loader)", tests, NULL, NULL);
}
