// SPDX-License-Identifier: BSD-2-Clause
/*
 * The L7 engine's decisions: exactness with 8 forked processes on one slot,
 * tiers and policies all or nothing, --override, the sliding window's and
 * the warm-up's shared vectors (tests/bpf/fc_vectors.h), and delays.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <cmocka.h>

#include "fc_shm_state.h"
#include "fc_test.h"
#include "fc_test_l7.h"
#include "fc_vectors.h"

static int fc_racer(struct fc_t *t, int i)
{
	(void)i;
	return fc_passes(t, "uid=racer", T0 + 5 * SEC, 5000);
}

/* 8 forked processes on one slot admit exactly the limit. */
static void fc_race(struct fc_t *t)
{
	assert_int_equal(fc_forked(t, fc_racer), 10000);
	assert_int_equal(t->ix.slots[1].passed, 10000);
}

static void test_exact_across_processes(void **state)
{
	struct fc_t *t = *state;

	fc_policy(t, 1, "uid=racer", "10000/h", "drop", 0, 0);
	fc_publish(t);
	assert_int_equal(fc_build(t, t->base, t->size), 0);
	fc_race(t);
}

static void test_exact_across_processes_window(void **state)
{
	struct fc_policy_spec p = { .id = 1, .algo = FC_ALGO_WINDOW };
	struct fc_t *t = *state;
	struct fc_policy_row row;
	struct fc_err err;

	assert_int_equal(fc_match_parse("uid=racer", &p, &err), 0);
	assert_int_equal(fc_rates_parse("10000/h", &p, &err), 0);
	assert_int_equal(fc_store_policy_put(t->st, &p, 1, &row, &err), 0);
	fc_publish(t);
	assert_int_equal(fc_build(t, t->base, t->size), 0);
	fc_race(t);
}

/* Tiers charge nothing on denial; across policies too. */
static void test_tiers_and_policies_all_or_nothing(void **state)
{
	struct fc_t *t = *state;
	struct fc_shm_slot before;

	fc_policy(t, 1, "uid=u1", "10/s,3/m", "drop", 0, 0);
	fc_policy(t, 2, "uid=u1,arg:a=1", "1/m", "drop", 0, 0);
	fc_publish(t);
	assert_int_equal(fc_build(t, t->base, t->size), 0);
	assert_int_equal(fc_passes(t, "uid=u1 arg:a=1", T0, 3), 1); /* policy 2 denies after 1 */
	before = t->ix.slots[1];
	assert_int_equal(fc_passes(t, "uid=u1 arg:a=1", T0, 3), 0);
	assert_memory_equal(before.state, t->ix.slots[1].state, sizeof(before.state)); /* policy 1 uncharged */
	assert_int_equal(fc_passes(t, "uid=u1", T0, 5), 2); /* 3 - 1 */
}

/* A policy of an override test: http puts an ip=-only one in nginx. */
struct fc_over_def {
	const char *match, *rates;
	bool over, http;
};

/* Policies 1..n as defs says, published and read. */
static void fc_overs(struct fc_t *t, const struct fc_over_def *defs, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		struct fc_policy_spec p = { .id = (uint32_t)(i + 1), .override = defs[i].over,
					    .layer = defs[i].http ? FC_LAYER_HTTP : FC_LAYER_AUTO };

		fc_policy_put(t, &p, defs[i].match, defs[i].rates);
	}
	fc_publish(t);
	assert_int_equal(fc_build(t, t->base, t->size), 0);
}

#define FC_OVERS(t, ...)                                                           \
	do {                                                                       \
		static const struct fc_over_def defs_[] = { __VA_ARGS__ };         \
		fc_overs(t, defs_, sizeof(defs_) / sizeof(defs_[0]));              \
	} while (0)

/* req is refused by policy, having matched that many policies of which
 * overrides switched off overridden. */
static void fc_refused_by(struct fc_t *t, const char *req, uint32_t policy, unsigned matched, unsigned overridden)
{
	struct fc_l7_result res;

	assert_int_equal(fc_decide(t, req, T0, &res), FC_L7_REJECTED);
	assert_int_equal(res.policy, policy);
	assert_int_equal(res.matched, matched);
	assert_int_equal(res.overridden, overridden);
}

/* The partner of the issue, in nginx: ip=* 5/m (--layer http) and an
 * address's 10/m override; a prefix override and an exact policy inside
 * it (not more general: it still applies); an exact override over that
 * prefix. What an override switches off is not charged. */
static void test_override_partner(void **state)
{
	struct fc_t *t = *state;

	FC_OVERS(t, { "ip=*", "5/m", false, true }, { "ip=198.18.0.7", "10/m", true, true },
		 { "ip=198.18.1.0/24", "4/m", true, true }, { "ip=198.18.1.9", "1/m", false, true },
		 { "ip=198.18.1.10", "7/m", true, true });
	assert_true(t->ix.has_override);
	assert_int_equal(fc_passes(t, "ip=198.18.0.7", T0, 20), 10);
	fc_refused_by(t, "ip=198.18.0.7", 2, 2, 1);
	assert_int_equal(fc_passes(t, "ip=198.18.0.8", T0, 20), 5);
	assert_int_equal(t->ix.slots[fc_ix_policy(t, 1)->slot].passed, 5); /* never the partner's */
	/* The /24 as one bucket of 4, ip=* off; .9's own 1 within it. */
	assert_int_equal(fc_passes(t, "ip=198.18.1.9", T0, 5), 1);
	assert_int_equal(fc_passes(t, "ip=198.18.1.5", T0, 5), 3);
	assert_int_equal(fc_passes(t, "ip=198.18.1.10", T0, 10), 7);
	assert_int_equal(t->ix.slots[fc_ix_policy(t, 3)->slot].passed, 4);
	assert_int_equal(t->ix.slots[fc_ix_policy(t, 1)->slot].passed, 5);
}

/* uid=partner over uid=*, and over uri=/login (its dimension absent from
 * the override's match); a more specific policy that is no override still
 * applies beside it. */
static void test_override_uid(void **state)
{
	struct fc_t *t = *state;

	FC_OVERS(t, { "uid=*", "2/m", false, false }, { "uid=partner", "6/m", true, false },
		 { "uid=partner,uri=/x", "1/m", false, false }, { "uri=/login", "1/m", false, false });
	assert_int_equal(fc_passes(t, "uid=partner uri=/x", T0, 3), 1);     /* 2 and 3 */
	assert_int_equal(fc_passes(t, "uid=partner uri=/login", T0, 6), 5); /* 2 alone: 6 less 1 */
	assert_int_equal(fc_passes(t, "uid=partner uri=/y", T0, 10), 0);    /* 2's 6 all used */
	assert_int_equal(fc_passes(t, "uid=bob uri=/login", T0, 3), 1);     /* 1 and 4 */
	assert_int_equal(fc_passes(t, "uid=bob uri=/y", T0, 5), 1);
	assert_int_equal(t->ix.slots[fc_ix_policy(t, 1)->slot].passed, 2);
	assert_int_equal(t->ix.slots[fc_ix_policy(t, 4)->slot].passed, 1);
}

/*
 * Several overrides at once, one switched off by a more specific one, and
 * two each more general than the other. For uid=alice uri=/api/v1/x: 2
 * switches off 1, 3 switches off 5, 4 switches off all four (it is more
 * specific than each): only 4 applies.
 */
static void test_override_several(void **state)
{
	struct fc_t *t = *state;
	struct fc_l7_result res;

	FC_OVERS(t, { "uri=/api/*", "100/m", false, false }, { "uri=/api/v1/*", "3/m", true, false },
		 { "uid=alice", "4/m", true, false }, { "uid=alice,uri=/api/v1/*", "2/m", true, false },
		 { "uid=*", "1/m", false, false }, { "uid=dave,arg:k=*", "3/m", true, false },
		 { "uid=dave,header:h=*", "2/m", true, false });
	assert_int_equal(fc_passes(t, "uid=alice uri=/api/v1/x", T0, 10), 2);
	fc_refused_by(t, "uid=alice uri=/api/v1/x", 4, 5, 4);
	/* uid=* counts as * (a per-key policy): more general than policy 2. */
	assert_int_equal(fc_passes(t, "uid=bob uri=/api/v1/y", T0, 10), 3);
	assert_int_equal(fc_passes(t, "uid=alice uri=/other", T0, 10), 4);
	assert_int_equal(fc_passes(t, "uid=carol uri=/api/z", T0, 10), 1); /* 1 and 5, no override */
	/* 6 and 7 differ only in * dimensions: both apply; each switches off 5. */
	assert_int_equal(fc_decide(t, "uid=dave arg:k=1 header:h=v", T0, &res), FC_L7_PASS);
	assert_int_equal(res.overridden, 1);
	assert_int_equal(fc_passes(t, "uid=dave arg:k=1 header:h=v", T0, 5), 1);
	assert_int_equal(fc_passes(t, "uid=dave arg:k=2", T0, 5), 3);
}

/* The relation by value: each pair (q, p) and whether q is more general. */
static void test_more_general(void **state)
{
	static const struct {
		const char *q, *p;
		bool more;
	} cases[] = {
		{ "ip=*", "ip=198.18.0.7", true },
		{ "ip=198.18.0.0/16", "ip=198.18.1.0/24", true },
		{ "ip=198.18.1.0/24", "ip=198.18.0.0/16", false },
		{ "ip=198.18.0.0/16", "ip=198.19.0.1", false },
		{ "ip=198.18.0.7", "ip=198.18.0.7,uid=a", true },
		{ "ip=2001:db8::/32", "ip=198.18.0.7,uid=b", false },
		{ "uid=*", "uid=a", true },
		{ "uid=a", "uid=*,arg:x=1", false },
		{ "uid=a", "uid=b,uri=/c", false },
		{ "uid=a", "uid=a,uri=/c", true },
		{ "uid=a,uri=/c", "uid=a", false }, /* more specific */
		{ "uri=/c", "uid=a", true },        /* uri absent from p's match */
		{ "uri=/c", "uid=a,uri=/c", true },
		{ "uri=/c", "uri=/api/*", false },
		{ "uid=*,uri=/c", "uid=a", true },
		{ "ip=*", "uid=*", true },
		{ "uri=/api/*", "uri=/api/v1", true },
		{ "uri=/api/*", "uri=/api/v1/*", true },
		{ "uri=/api/v1/*", "uri=/api/*", false },
		{ "uri=/api/v1", "uri=/api/v1/*", false },
		{ "arg:k=*", "uid=a", true },
		{ "header:h=v", "header:h=v,uid=*", true },
		{ "header:h=v", "header:g=v", true },
		{ "header:h=v", "header:h=w", false },
	};
	struct fc_t *t = *state;
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct fc_over_def pair[2] = { { cases[i].q, "1/s", false, true }, { cases[i].p, "1/s", false, true } };

		fc_overs(t, pair, 2);
		if (fc_l7_more_general(fc_ix_policy(t, 1), fc_ix_policy(t, 2)) != cases[i].more)
			fail_msg("%s more general than %s: expected %s", cases[i].q, cases[i].p, cases[i].more ? "yes" : "no");
		assert_int_equal(fc_store_policy_del(t->st, 1, &(bool){ 0 }, &(struct fc_err){ 0 }), 0);
		assert_int_equal(fc_store_policy_del(t->st, 2, &(bool){ 0 }, &(struct fc_err){ 0 }), 0);
	}
}

/* Vector i's two policies, like p: an aggregate one (uid=aI) as policy
 * 1 + i, and a per-key one (uid=*,arg:a=I) as policy 101 + i, a the letter
 * of the vectors' kind; and the request text each is tried with. */
static void fc_vector_policies(struct fc_t *t, size_t i, char a, struct fc_policy_spec p, const char *rates)
{
	char match[64];

	p.id = (uint32_t)(1 + i);
	snprintf(match, sizeof(match), "uid=%c%zu", a, i);
	fc_policy_put(t, &p, match, rates);
	p.id = (uint32_t)(101 + i);
	snprintf(match, sizeof(match), "uid=*,arg:%c=%zu", a, i);
	fc_policy_put(t, &p, match, rates);
}

static void fc_vector_req(char *req, size_t len, bool keyed, char a, size_t i)
{
	if (keyed)
		snprintf(req, len, "uid=k%zu arg:%c=%zu", i, a, i);
	else
		snprintf(req, len, "uid=%c%zu", a, i);
}

/* The shared sliding-window vectors (tests/bpf/fc_vectors.h) through the
 * engine, on an aggregate and a per-key policy each: the same counts as
 * the algorithm and the packet path. */
static void test_sliding_vectors(void **state)
{
	struct fc_t *t = *state;
	const struct fc_vector *v;
	const struct fc_vec_step *s;
	char req[64];
	size_t i, j, keyed;
	int got;

	for (i = 0; i < FC_NVECTORS; i++)
		fc_vector_policies(t, i, 'v', (struct fc_policy_spec){ .algo = FC_ALGO_SLIDING },
				   fc_sliding_vectors[i].rates);
	fc_publish(t);
	assert_int_equal(fc_build(t, t->base, t->size), 0);
	for (keyed = 0; keyed < 2; keyed++) {
		for (i = 0; i < FC_NVECTORS; i++) {
			v = &fc_sliding_vectors[i];
			fc_vector_req(req, sizeof(req), keyed, 'v', i);
			for (j = 0; j < FC_VEC_STEPS && v->step[j].tries; j++) {
				s = &v->step[j];
				got = fc_passes(t, req, T0 + s->at_ms * MS, (int)s->tries);
				if (got != (int)s->admitted)
					fail_msg("%s (%s): step %zu (%u ms): %d admitted, expected %u", v->name,
						 keyed ? "per key" : "aggregate", j, s->at_ms, got, s->admitted);
			}
		}
	}
}

/* A sliding refusal's headers: Retry-After when the rule next holds,
 * RateLimit's remaining and window. */
static void test_sliding_headers(void **state)
{
	struct fc_policy_spec p = { .id = 1, .algo = FC_ALGO_SLIDING };
	struct fc_t *t = *state;
	struct fc_l7_result res;

	fc_policy_put(t, &p, "uid=h", "10/m");
	fc_publish(t);
	assert_int_equal(fc_build(t, t->base, t->size), 0);
	assert_int_equal(fc_passes(t, "uid=h", T0 + 50 * SEC, 10), 10);
	assert_int_equal(fc_passes(t, "uid=h", T0 + 90 * SEC, 5), 5);
	assert_int_equal(fc_decide(t, "uid=h", T0 + 90 * SEC, &res), FC_L7_REJECTED);
	assert_int_equal(res.policy, 1);
	assert_int_equal(res.retry_ns, 6 * SEC); /* 10*(60-36) + 6*60 <= 600 */
	assert_int_equal(res.remaining, 0);
	assert_int_equal(res.limit, 10);
	assert_int_equal(res.window_s, 60);
	assert_int_equal(fc_decide(t, "uid=h", T0 + 96 * SEC, &res), FC_L7_PASS);
}

/* The shared warm-up vectors (tests/bpf/fc_vectors.h) through the engine,
 * on an aggregate and a per-key policy each: the same counts as the
 * algorithm and the packet path. The engine charges 1 a request: the bytes
 * vector is the packet path's. */
struct fc_warm_l7 {
	struct fc_t *t;
	char req[64];
};

static uint32_t fc_warm_l7_step(void *arg, uint32_t at_ms, uint32_t tries)
{
	struct fc_warm_l7 *w = arg;

	return (uint32_t)fc_passes(w->t, w->req, T0 + at_ms * MS, (int)tries);
}

static void test_warm_vectors(void **state)
{
	struct fc_t *t = *state;
	struct fc_warm_l7 w = { .t = t };
	const struct fc_warm_vector *v;
	uint32_t got[FC_WARM_BINS];
	size_t i, keyed;
	int bad;

	for (i = 0; i < FC_NWARM; i++)
		fc_vector_policies(t, i, 'w', (struct fc_policy_spec){ .warmup = fc_warm_vectors[i].warmup_s },
				   fc_warm_vectors[i].rates);
	fc_publish(t);
	assert_int_equal(fc_build(t, t->base, t->size), 0);
	for (keyed = 0; keyed < 2; keyed++) {
		for (i = 0; i < FC_NWARM; i++) {
			v = &fc_warm_vectors[i];
			if (v->cost > 1)
				continue;
			fc_vector_req(w.req, sizeof(w.req), keyed, 'w', i);
			bad = fc_warm_run(v, fc_warm_l7_step, &w, got);
			if (bad >= 0)
				fail_msg("%s (%s): bin %d: %u admitted, expected %u", v->name,
					 keyed ? "per key" : "aggregate", bad, got[bad], v->admitted[bad]);
		}
	}
}

/* A warming policy's refusal: RateLimit-Policy's quota and the retry at the
 * ramped rate; a key holds its entry while its bucket is warm (D past its
 * TAT), not only while the TAT leads; delay waits to the ramped rate with a
 * queue of the warm rate's intervals. */
static void test_warm_headers(void **state)
{
	struct fc_policy_spec p = { .id = 1, .warmup = 10 }, k = { .id = 2, .warmup = 10 };
	struct fc_policy_spec d = { .id = 3, .warmup = 10, .burst = 1, .action = FC_ACTION_DELAY, .delay_burst = 3 };
	struct fc_t *t = *state;
	struct fc_l7_result res;
	uint32_t i, n = 0;

	fc_policy_put(t, &p, "uid=h", "30/s");
	fc_policy_put(t, &k, "uid=*,arg:hk=1", "30/s");
	fc_policy_put(t, &d, "uid=d", "10/s");
	fc_publish(t);
	assert_int_equal(fc_build(t, t->base, t->size), 0);
	assert_int_equal(fc_passes(t, "uid=h", T0, 1), 1);
	assert_int_equal(fc_decide(t, "uid=h", T0, &res), FC_L7_REJECTED);
	assert_int_equal(res.limit, 10); /* N/3 */
	assert_int_equal(res.window_s, 1);
	assert_int_equal(res.remaining, 0);
	assert_int_equal(res.retry_ns, 3 * 33333334); /* 3T */
	assert_int_equal(fc_passes(t, "uid=h", T0 + 5 * SEC, 1), 1);
	assert_int_equal(fc_decide(t, "uid=h", T0 + 5 * SEC, &res), FC_L7_REJECTED);
	assert_int_equal(res.limit, 20); /* half way */
	/* 3TD/(D+2e), rounded up in fixed point: never shorter, within 2^-19 */
	assert_true(res.retry_ns >= 50000001 && res.retry_ns <= 50000001 + 50000001 / (1 << 19));

	assert_int_equal(fc_passes(t, "uid=x arg:hk=1", T0, 1), 1);
	for (i = 0; i < t->ix.nkeys; i++) {
		if (t->ix.keys[i].slot != t->ix.pol[1].slot || t->ix.keys[i].tag < FC_SHM_KEY_TAG_MIN)
			continue;
		n++;
		/* TAT T0 + 1 s (one request of credit), warm for 10 s after. */
		assert_true(t->ix.keys[i].idle_ns >= T0 + 11 * SEC);
	}
	assert_int_equal(n, 1);

	assert_int_equal(fc_decide(t, "uid=d", T0, &res), FC_L7_PASS);
	assert_int_equal(fc_decide(t, "uid=d", T0, &res), FC_L7_DELAYED);
	assert_int_equal(res.delay_ns, 3 * SEC / 10); /* cold: 3T = 300 ms apart */
	assert_int_equal(fc_decide(t, "uid=d", T0, &res), FC_L7_REJECTED); /* 3 x 100 ms of queue hold one */
}

/* A warm-up the packet path or a worker could not run is refused with its
 * item: beside an algorithm without a rate, with no word left after the
 * tiers, outside 1 s .. 1 d, or on a burst beyond the ramp's arithmetic. */
static void test_warm_item_checked(void **state)
{
	struct fc_policy_spec p = { .id = 1, .warmup = 10 };
	struct fc_t *t = *state;
	struct fc_shm_policy *it;
	const struct fc_shm_header *h;
	size_t i, j;
	static const struct {
		uint32_t warmup_ms;
		uint8_t algo, ntiers;
		uint64_t tolerance_ns;
	} bad[] = {
		{ 10000, FC_ALGO_WINDOW, 1, SEC }, { 10000, FC_ALGO_GCRA, 4, SEC }, { 999, FC_ALGO_GCRA, 1, SEC },
		{ 86400001, FC_ALGO_GCRA, 1, SEC }, { 10000, FC_ALGO_GCRA, 1, FC_WARM_TOL_MAX + 1 },
	};

	fc_policy_put(t, &p, "uid=item", "30/s");
	fc_publish(t);
	h = t->base;
	it = (struct fc_shm_policy *)((uint8_t *)t->base + FC_SHM_BLOCK_OFF(h->active) + sizeof(struct fc_shm_block));
	assert_int_equal(it->warmup_ms, 10000);
	assert_int_equal(fc_build(t, t->base, t->size), 0);
	assert_int_equal(t->ix.npolicies, 1);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct fc_shm_policy keep = *it;

		it->warmup_ms = bad[i].warmup_ms;
		it->algo = bad[i].algo;
		it->ntiers = bad[i].ntiers;
		it->tier[0].tolerance_ns = bad[i].tolerance_ns;
		for (j = 1; j < bad[i].ntiers; j++)
			it->tier[j] = it->tier[0];
		assert_int_equal(fc_build(t, t->base, t->size), 0);
		assert_int_equal(t->ix.npolicies, 0);
		assert_int_equal(t->ix.skipped, 1);
		*it = keep;
	}
}

static int fc_warm_racer(struct fc_t *t, int i)
{
	(void)i;
	return fc_passes(t, "uid=wracer", T0 + 5 * SEC, 5000);
}

/* 8 forked processes on a cold warming slot: exactly one passes (the
 * ramp's first interval, 3 x 86.4 s, is far longer than the race). */
static void test_warm_across_processes(void **state)
{
	struct fc_policy_spec p = { .id = 1, .warmup = 3600 };
	struct fc_t *t = *state;

	fc_policy_put(t, &p, "uid=wracer", "1000/d");
	fc_publish(t);
	assert_int_equal(fc_build(t, t->base, t->size), 0);
	assert_int_equal(fc_forked(t, fc_warm_racer), 1);
	assert_int_equal(t->ix.slots[1].passed, 1);
}

/* delay: 10/s, burst 1, up to 3 waiting: 1 now, then 100, 200, 300 ms, then no. */
static void test_delay(void **state)
{
	struct fc_t *t = *state;
	struct fc_l7_result res;

	fc_policy(t, 1, "uid=u1", "10/s", "delay", 1, 3);
	fc_policy(t, 2, "uid=u1,arg:a=1", "5/s", "delay", 1, 3);
	fc_publish(t);
	assert_int_equal(fc_build(t, t->base, t->size), 0);
	assert_int_equal(fc_decide(t, "uid=u1", T0, &res), FC_L7_PASS);
	assert_int_equal(fc_decide(t, "uid=u1", T0, &res), FC_L7_DELAYED);
	assert_int_equal(res.delay_ns, SEC / 10);
	assert_int_equal(fc_decide(t, "uid=u1", T0, &res), FC_L7_DELAYED);
	assert_int_equal(res.delay_ns, 2 * SEC / 10);
	assert_int_equal(fc_decide(t, "uid=u1", T0, &res), FC_L7_DELAYED);
	assert_int_equal(res.delay_ns, 3 * SEC / 10);
	assert_int_equal(fc_decide(t, "uid=u1", T0, &res), FC_L7_REJECTED);
	assert_int_equal(res.policy, 1);
	/* Two delay policies: the longest wait wins. 1 s later policy 1 has room
	 * for 4 (1 + 3 waiting) but policy 2 spaces by 200 ms. */
	assert_int_equal(fc_decide(t, "uid=u1 arg:a=1", T0 + SEC, &res), FC_L7_PASS);
	assert_int_equal(fc_decide(t, "uid=u1 arg:a=1", T0 + SEC, &res), FC_L7_DELAYED);
	assert_int_equal(res.delay_ns, SEC / 5);
	assert_int_equal(res.policy, 2);
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, fc_setup, fc_teardown)
	const struct CMUnitTest tests[] = {
		T(test_exact_across_processes),
		T(test_exact_across_processes_window),
		T(test_tiers_and_policies_all_or_nothing),
		T(test_delay),
		T(test_sliding_vectors),
		T(test_sliding_headers),
		T(test_warm_vectors),
		T(test_warm_headers),
		T(test_warm_item_checked),
		T(test_warm_across_processes),
		T(test_override_partner),
		T(test_override_uid),
		T(test_override_several),
		T(test_more_general),
	};
#undef T

	return fc_run_group("L7 engine: decisions (exactness, tiers, overrides, sliding, warm-up, delay)", tests, NULL, NULL);
}
