// SPDX-License-Identifier: BSD-2-Clause
/*
 * The L7 engine's concurrency caps (--concurrency): places taken and given
 * back, per key, with rates, all or nothing, across epochs and threads,
 * with warm-up, recovered from dead workers, and from corrupt records.
 */
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "fc_shm_state.h"
#include "fc_test.h"
#include "fc_test_l7.h"

/* ---- concurrency caps ---- */

/* A policy with --concurrency (and rates, if any). */
static void fc_conc_policy(struct fc_t *t, uint32_t id, const char *match, const char *rates, uint32_t n,
			   enum fc_action action)
{
	struct fc_policy_spec p = { .id = id, .concurrency = n, .action = action };

	fc_policy_put(t, &p, match, rates);
}

/* A worker's record for the tests: its free holds in static memory. */
static uint32_t fc_free_holds[FC_SHM_HOLDS];

static void fc_holder(struct fc_t *t, struct fc_l7_holder *h, uint64_t id)
{
	assert_int_equal(fc_l7_holder_open(t->state, t->state_size, id, fc_free_holds, h), 0);
}

/* The policies published and indexed, and a record for the test's worker. */
static void fc_conc_start(struct fc_t *t, struct fc_l7_holder *h)
{
	fc_publish(t);
	assert_int_equal(fc_build(t, t->base, t->size), 0);
	fc_holder(t, h, FC_SHM_WORKER_ID(1, 1));
}

/* One request's decision, its places (if it passed) kept in pl. */
static enum fc_l7_verdict fc_take(struct fc_t *t, struct fc_l7_holder *h, const char *req, uint64_t now,
				  struct fc_l7_place *pl, size_t *np, struct fc_l7_result *res)
{
	struct fc_l7_result r;
	struct fc_l7_req rq;

	fc_req(&t->ix, &rq, req);
	rq.holder = h;
	rq.places = pl;
	rq.places_cap = 4;
	fc_l7_decide(&t->ix, &rq, now, res ? res : &r);
	res = res ? res : &r;
	*np = res->nplaces;
	assert_true(!res->nplaces || res->places == pl);
	return res->verdict;
}

/* The live holds of a record. */
static size_t fc_live_holds(const struct fc_l7_holder *h)
{
	size_t i, n = 0;

	for (i = 0; i < h->used; i++)
		n += h->holds[i].who != 0;
	return n;
}

/* N=2 without keys: two in flight, the third refused (and counted) with the
 * cap in the result; a place given back lets the next one in. */
static void test_conc_basics(void **state)
{
	struct fc_t *t = *state;
	struct fc_l7_place pl[3][4];
	struct fc_l7_holder h;
	struct fc_l7_result res;
	size_t np[3];
	struct fc_shm_slot *s;

	fc_conc_policy(t, 1, "uid=c", "", 2, FC_ACTION_DROP);
	fc_conc_start(t, &h);
	s = &t->ix.slots[t->ix.pol[0].slot];
	assert_int_equal(fc_take(t, &h, "uid=c", T0, pl[0], &np[0], NULL), FC_L7_PASS);
	assert_int_equal(fc_take(t, &h, "uid=c", T0, pl[1], &np[1], NULL), FC_L7_PASS);
	assert_int_equal(np[0] + np[1], 2);
	assert_int_equal(s->inflight, 2);
	assert_int_equal(fc_live_holds(&h), 2);
	assert_int_equal(fc_take(t, &h, "uid=c", T0, pl[2], &np[2], &res), FC_L7_REJECTED);
	assert_true(res.concurrency);
	assert_int_equal(res.policy, 1);
	assert_int_equal(res.limit, 2);
	assert_int_equal(res.nplaces, 0);
	assert_int_equal(s->conc_denied, 1);
	assert_int_equal(s->denied, 1);
	assert_int_equal(fc_live_holds(&h), 2);
	/* Another uid is not this policy's. */
	assert_int_equal(fc_take(t, &h, "uid=d", T0, pl[2], &np[2], NULL), FC_L7_PASS);
	assert_int_equal(np[2], 0);
	fc_l7_give_back(t->state, t->state_size, &h, pl[0], np[0], T0);
	assert_int_equal(s->inflight, 1);
	assert_int_equal(fc_live_holds(&h), 1);
	assert_int_equal(fc_take(t, &h, "uid=c", T0, pl[0], &np[0], NULL), FC_L7_PASS);
	assert_int_equal(fc_take(t, &h, "uid=c", T0, pl[2], &np[2], NULL), FC_L7_REJECTED);
	fc_l7_give_back(t->state, t->state_size, &h, pl[0], np[0], T0);
	fc_l7_give_back(t->state, t->state_size, &h, pl[1], np[1], T0);
	assert_int_equal(s->inflight, 0);
	assert_int_equal(fc_live_holds(&h), 0);
	/* Given back twice (a bug elsewhere, or a forged record): never below zero. */
	fc_l7_give_back(t->state, t->state_size, &h, pl[1], np[1], T0);
	assert_int_equal(s->inflight, 0);
	fc_l7_holder_close(t->state, t->state_size, &h, T0);
}

/* Per key: each uid its own N; a key holding places is never taken back as
 * idle, however far the clock goes, and is again once they are given back. */
static void test_conc_keys(void **state)
{
	struct fc_t *t = *state;
	struct fc_l7_place pl[6][4];
	struct fc_l7_holder h;
	struct fc_l7_result res;
	struct fc_shm_key *e = NULL;
	size_t np[6], i;
	uint64_t tag;

	fc_conc_policy(t, 1, "uid=*", "", 2, FC_ACTION_DROP);
	fc_conc_start(t, &h);
	assert_int_equal(fc_take(t, &h, "uid=u1", T0, pl[0], &np[0], NULL), FC_L7_PASS);
	assert_int_equal(fc_take(t, &h, "uid=u1", T0, pl[1], &np[1], NULL), FC_L7_PASS);
	assert_int_equal(fc_take(t, &h, "uid=u1", T0, pl[2], &np[2], &res), FC_L7_REJECTED);
	assert_true(res.concurrency && !res.overflow);
	assert_int_equal(fc_take(t, &h, "uid=u2", T0, pl[3], &np[3], NULL), FC_L7_PASS);
	assert_int_equal(fc_take(t, &h, "uid=u2", T0, pl[4], &np[4], NULL), FC_L7_PASS);
	assert_int_equal(fc_take(t, &h, "uid=u2", T0, pl[5], &np[5], NULL), FC_L7_REJECTED);
	assert_int_equal(t->ix.slots[1].inflight, 4);
	assert_int_equal(FC_HOLD_KIND(pl[0][0].where), FC_HOLD_KEY);
	e = &t->ix.keys[FC_HOLD_INDEX(pl[0][0].where)];
	tag = e->tag;
	assert_int_equal(e->state[0], 2); /* no tiers: the count is word 0 */
	assert_true(e->idle_ns & FC_SHM_KEY_HELD);
	/* A day on, 200 new uids probe the table: u1's entry stays u1's. */
	for (i = 0; i < 200; i++) {
		char req[32];
		struct fc_l7_place p2[4];
		size_t n2;

		snprintf(req, sizeof(req), "uid=n%zu", i);
		assert_int_equal(fc_take(t, &h, req, T0 + 86400 * SEC, p2, &n2, NULL), FC_L7_PASS);
		fc_l7_give_back(t->state, t->state_size, &h, p2, n2, T0 + 86400 * SEC);
	}
	assert_int_equal(e->tag, tag);
	assert_int_equal(fc_take(t, &h, "uid=u1", T0 + 86400 * SEC, pl[2], &np[2], NULL), FC_L7_REJECTED);
	for (i = 0; i < 5; i++)
		fc_l7_give_back(t->state, t->state_size, &h, pl[i], np[i], T0 + 86400 * SEC);
	assert_int_equal(e->state[0], 0);
	assert_false(e->idle_ns & FC_SHM_KEY_HELD);
	assert_int_equal(t->ix.slots[1].inflight, 0);
	assert_int_equal(fc_live_holds(&h), 0);
	/* Idle a second after its last place: then another key may take it. */
	assert_true(e->idle_ns <= T0 + 86401 * SEC);
	fc_l7_holder_close(t->state, t->state_size, &h, T0);
}

/* With a rate: both must admit, and a request refused by one is charged by
 * neither. */
static void test_conc_with_rate(void **state)
{
	struct fc_t *t = *state;
	struct fc_l7_place pl[8][4];
	struct fc_l7_holder h;
	struct fc_l7_result res;
	size_t np[8];
	int i;

	fc_conc_policy(t, 1, "uid=r", "3/m", 1, FC_ACTION_DROP);
	fc_conc_policy(t, 2, "uid=*,arg:a=1", "2/m", 4, FC_ACTION_DROP);
	fc_conc_start(t, &h);
	/* Refused by the cap: the rate is not charged. */
	assert_int_equal(fc_take(t, &h, "uid=r", T0, pl[0], &np[0], NULL), FC_L7_PASS);
	for (i = 1; i < 6; i++) {
		assert_int_equal(fc_take(t, &h, "uid=r", T0, pl[1], &np[1], &res), FC_L7_REJECTED);
		assert_true(res.concurrency);
	}
	fc_l7_give_back(t->state, t->state_size, &h, pl[0], np[0], T0);
	for (i = 0; i < 2; i++) { /* two more of the 3/m */
		assert_int_equal(fc_take(t, &h, "uid=r", T0, pl[0], &np[0], NULL), FC_L7_PASS);
		fc_l7_give_back(t->state, t->state_size, &h, pl[0], np[0], T0);
	}
	/* Refused by the rate: the place is given back. */
	assert_int_equal(fc_take(t, &h, "uid=r", T0, pl[0], &np[0], &res), FC_L7_REJECTED);
	assert_false(res.concurrency);
	assert_int_equal(t->ix.slots[1].inflight, 0);
	/* Per key, both on one policy: a key's tier and its count side by side. */
	assert_int_equal(fc_take(t, &h, "uid=k arg:a=1", T0, pl[0], &np[0], NULL), FC_L7_PASS);
	assert_int_equal(fc_take(t, &h, "uid=k arg:a=1", T0, pl[1], &np[1], NULL), FC_L7_PASS);
	assert_int_equal(t->ix.keys[FC_HOLD_INDEX(pl[0][0].where)].state[1], 2);
	assert_int_equal(fc_take(t, &h, "uid=k arg:a=1", T0, pl[2], &np[2], &res), FC_L7_REJECTED);
	assert_false(res.concurrency); /* 2/m spent; its places stay 2 */
	assert_int_equal(t->ix.keys[FC_HOLD_INDEX(pl[0][0].where)].state[1], 2);
	fc_l7_give_back(t->state, t->state_size, &h, pl[0], np[0], T0);
	fc_l7_give_back(t->state, t->state_size, &h, pl[1], np[1], T0);
	assert_int_equal(t->ix.keys[FC_HOLD_INDEX(pl[0][0].where)].state[1], 0);
	fc_l7_holder_close(t->state, t->state_size, &h, T0);
}

/* Several policies: all admit or none keeps anything; a log policy's cap
 * counts what it would refuse, and refuses nothing. */
static void test_conc_all_or_nothing(void **state)
{
	struct fc_t *t = *state;
	struct fc_l7_place pl[4][4];
	struct fc_l7_holder h;
	struct fc_l7_result res;
	size_t np[4];

	fc_conc_policy(t, 1, "uid=a", "", 5, FC_ACTION_DROP);
	fc_policy(t, 2, "uid=a,arg:x=1", "1/m", "drop", 0, 0);
	fc_conc_policy(t, 3, "uid=a,arg:y=1", "", 1, FC_ACTION_LOG);
	fc_conc_start(t, &h);
	assert_int_equal(fc_take(t, &h, "uid=a arg:x=1", T0, pl[0], &np[0], NULL), FC_L7_PASS);
	assert_int_equal(fc_take(t, &h, "uid=a arg:x=1", T0, pl[1], &np[1], NULL), FC_L7_REJECTED);
	assert_int_equal(t->ix.slots[1].inflight, 1); /* policy 2 refused: policy 1's place given back */
	assert_int_equal(fc_live_holds(&h), 1);
	assert_int_equal(fc_take(t, &h, "uid=a arg:y=1", T0, pl[1], &np[1], &res), FC_L7_PASS);
	assert_int_equal(np[1], 2); /* policy 1's and the log policy's */
	assert_int_equal(fc_take(t, &h, "uid=a arg:y=1", T0, pl[2], &np[2], &res), FC_L7_PASS);
	assert_int_equal(res.would_deny, 1);
	assert_int_equal(np[2], 1);
	assert_int_equal(t->ix.slots[3].conc_denied, 1);
	assert_int_equal(t->ix.slots[1].inflight, 3);
	fc_l7_give_back(t->state, t->state_size, &h, pl[0], np[0], T0);
	fc_l7_give_back(t->state, t->state_size, &h, pl[1], np[1], T0);
	fc_l7_give_back(t->state, t->state_size, &h, pl[2], np[2], T0);
	assert_int_equal(t->ix.slots[1].inflight + t->ix.slots[3].inflight, 0);
	fc_l7_holder_close(t->state, t->state_size, &h, T0);
}

/* A place taken before the policy's epoch changed (its match, or adding or
 * removing the cap) is given back nowhere: the new epoch counts afresh. */
static void test_conc_epoch(void **state)
{
	struct fc_t *t = *state;
	struct fc_l7_place pl[2][4];
	struct fc_l7_holder h;
	size_t np[2];

	fc_conc_policy(t, 1, "uid=e", "10/s", 1, FC_ACTION_DROP);
	fc_conc_start(t, &h);
	assert_int_equal(fc_take(t, &h, "uid=e", T0, pl[0], &np[0], NULL), FC_L7_PASS);
	fc_conc_policy(t, 1, "uid=e", "10/s,100/m", 1, FC_ACTION_DROP); /* a rate more: its words move */
	fc_publish(t);
	assert_int_equal(fc_build(t, t->base, t->size), 0);
	assert_int_equal(t->ix.slots[1].inflight, 0);
	assert_int_equal(fc_take(t, &h, "uid=e", T0, pl[1], &np[1], NULL), FC_L7_PASS);
	fc_l7_give_back(t->state, t->state_size, &h, pl[0], np[0], T0);
	assert_int_equal(t->ix.slots[1].inflight, 1); /* the new epoch's own place stays */
	fc_l7_give_back(t->state, t->state_size, &h, pl[1], np[1], T0);
	assert_int_equal(t->ix.slots[1].inflight, 0);
	/* A new limit, the same words: places are kept across it. */
	assert_int_equal(fc_take(t, &h, "uid=e", T0, pl[0], &np[0], NULL), FC_L7_PASS);
	fc_conc_policy(t, 1, "uid=e", "20/s,100/m", 3, FC_ACTION_DROP);
	fc_publish(t);
	assert_int_equal(fc_build(t, t->base, t->size), 0);
	assert_int_equal(t->ix.slots[1].inflight, 1);
	fc_l7_give_back(t->state, t->state_size, &h, pl[0], np[0], T0);
	assert_int_equal(t->ix.slots[1].inflight, 0);
	fc_l7_holder_close(t->state, t->state_size, &h, T0);
}

struct fc_conc_thread {
	struct fc_t *t;
	struct fc_l7_index ix;
	struct fc_arena arena;
	struct fc_l7_holder h;
	uint32_t free[FC_SHM_HOLDS];
	int passed, refused;
};

static int fc_conc_now, fc_conc_max; /* in flight now (by the threads' own count), and the most seen */

static void *fc_conc_racer(void *arg)
{
	struct fc_conc_thread *c = arg;
	struct fc_l7_place pl[4];
	struct fc_l7_result res;
	struct fc_l7_req rq;
	int i, now, max;

	for (i = 0; i < 20000; i++) {
		memset(&rq, 0, sizeof(rq)); /* not fc_req: its buffers are shared */
		rq.uid = (struct fc_l7_str){ "hot", 3 };
		rq.holder = &c->h;
		rq.places = pl;
		rq.places_cap = 4;
		fc_l7_decide(&c->ix, &rq, T0, &res);
		if (res.verdict != FC_L7_PASS) {
			c->refused++;
			continue;
		}
		c->passed++;
		now = __atomic_add_fetch(&fc_conc_now, 1, __ATOMIC_SEQ_CST);
		max = __atomic_load_n(&fc_conc_max, __ATOMIC_RELAXED);
		while (now > max && !__atomic_compare_exchange_n(&fc_conc_max, &max, now, true, __ATOMIC_SEQ_CST,
								 __ATOMIC_RELAXED))
			;
		__atomic_sub_fetch(&fc_conc_now, 1, __ATOMIC_SEQ_CST);
		fc_l7_give_back(c->t->state, c->t->state_size, &c->h, res.places, res.nplaces, T0);
	}
	return NULL;
}

/* 8 threads, each a worker with its own index and record, take and give
 * back places of one key: never more than N in flight, none left after. */
static void fc_conc_race(struct fc_t *t, const char *match)
{
	static struct fc_conc_thread c[8];
	pthread_t th[8];
	int i, passed = 0;

	fc_conc_policy(t, 1, match, "", 3, FC_ACTION_DROP);
	fc_publish(t);
	assert_int_equal(fc_build(t, t->base, t->size), 0);
	fc_conc_now = fc_conc_max = 0;
	for (i = 0; i < 8; i++) {
		memset(&c[i], 0, sizeof(c[i]));
		c[i].t = t;
		assert_int_equal(fc_l7_build(t->base, t->size, t->state, t->state_size, &c[i].ix,
					     &(struct fc_l7_alloc){ fc_arena_alloc, &c[i].arena }), 0);
		assert_int_equal(fc_l7_holder_open(t->state, t->state_size, FC_SHM_WORKER_ID(100 + i, 1), c[i].free,
						   &c[i].h), 0);
	}
	for (i = 0; i < 8; i++)
		assert_int_equal(pthread_create(&th[i], NULL, fc_conc_racer, &c[i]), 0);
	for (i = 0; i < 8; i++) {
		assert_int_equal(pthread_join(th[i], NULL), 0);
		passed += c[i].passed;
		assert_int_equal(fc_live_holds(&c[i].h), 0);
		fc_l7_holder_close(t->state, t->state_size, &c[i].h, T0);
		fc_arena_free(&c[i].arena);
	}
	assert_true(fc_conc_max <= 3);
	assert_true(fc_conc_max >= 1);
	assert_true(passed > 0);
	assert_int_equal(t->ix.slots[1].inflight, 0);
	assert_int_equal(t->ix.slots[1].passed, (uint64_t)passed);
}

static void test_conc_threads(void **state)
{
	fc_conc_race(*state, "uid=hot");
}

static void test_conc_threads_key(void **state)
{
	struct fc_t *t = *state;
	size_t i;

	fc_conc_race(t, "uid=*");
	for (i = 0; i < t->ix.nkeys; i++)
		if (t->ix.keys[i].tag >= FC_SHM_KEY_TAG_MIN) {
			assert_int_equal(t->ix.keys[i].state[0], 0);
			assert_false(t->ix.keys[i].idle_ns & FC_SHM_KEY_HELD);
		}
}

/* --warmup and --concurrency on one per-key policy: a key's bucket holds the
 * rate's TAT (word 0), the ramp's start (word 1) and the count of places
 * (word 2). The ramp admits what it admits without the cap (a twin policy
 * without one, fed the same requests), the cap refuses past N where the ramp
 * would admit, neither word is written by the other's work, and a key
 * holding places is not taken back however long its bucket has been idle. */
static void test_conc_warmup(void **state)
{
	struct fc_policy_spec c = { .id = 1, .warmup = 10, .concurrency = 2 }, w = { .id = 2, .warmup = 10 };
	struct fc_t *t = *state;
	struct fc_l7_place pl[3][4], p2[4];
	struct fc_l7_holder h;
	struct fc_l7_result res;
	struct fc_shm_key *e, *v;
	enum fc_l7_verdict vc, vw;
	uint64_t now, tag, tat;
	size_t np[3], n2, i;
	int passed = 0;

	t->keys = FC_SHM_KEYS_MIN; /* new keys probe u's entry's window often */
	fc_policy_put(t, &c, "uid=*,arg:c=1", "30/s");
	fc_policy_put(t, &w, "uid=*,arg:w=1", "30/s");
	fc_conc_start(t, &h);
	assert_int_equal(t->ix.pol[0].warmup_ms, 10000);
	assert_int_equal(t->ix.pol[0].concurrency, 2);

	/* Cold: one request passes and starts the ramp (word 1); its place is
	 * counted in word 2. */
	assert_int_equal(fc_take(t, &h, "uid=u arg:c=1", T0, pl[0], &np[0], NULL), FC_L7_PASS);
	assert_int_equal(np[0], 1);
	assert_int_equal(FC_HOLD_KIND(pl[0][0].where), FC_HOLD_KEY);
	assert_int_equal(FC_HOLD_WORD(pl[0][0].where), 2);
	e = &t->ix.keys[FC_HOLD_INDEX(pl[0][0].where)];
	tag = e->tag;
	assert_true(e->state[0] > T0);
	assert_int_equal(e->state[1], T0);
	assert_int_equal(e->state[2], 1);
	assert_int_equal(e->state[3], 0);
	assert_true(e->idle_ns & FC_SHM_KEY_HELD);
	/* No burst while cold: the ramp refuses the next at once, and it takes
	 * no place. */
	assert_int_equal(fc_take(t, &h, "uid=u arg:c=1", T0, pl[1], &np[1], &res), FC_L7_REJECTED);
	assert_false(res.concurrency);
	assert_int_equal(res.limit, 10); /* N/3 */
	assert_int_equal(e->state[1], T0);
	assert_int_equal(e->state[2], 1);
	/* The second place once the ramp admits one more: 3T = 100 ms apart. */
	for (now = T0 + MS; now < T0 + SEC; now += MS)
		if (fc_take(t, &h, "uid=u arg:c=1", now, pl[1], &np[1], NULL) == FC_L7_PASS)
			break;
	assert_true(now >= T0 + 90 * MS && now <= T0 + 110 * MS);
	assert_int_equal(e->state[1], T0);
	assert_int_equal(e->state[2], 2);
	/* Two in flight: a second on, the ramp would admit, the cap refuses;
	 * the charge is taken back (word 0 as it was), the ramp goes on. */
	tat = e->state[0];
	for (i = 0; i < 5; i++) {
		assert_int_equal(fc_take(t, &h, "uid=u arg:c=1", T0 + SEC + i * 100 * MS, pl[2], &np[2], &res),
				 FC_L7_REJECTED);
		assert_true(res.concurrency);
		assert_int_equal(res.limit, 2);
		assert_int_equal(e->state[0], tat);
		assert_int_equal(e->state[1], T0);
		assert_int_equal(e->state[2], 2);
	}
	assert_int_equal(t->ix.slots[1].conc_denied, 5);

	/* A day on, with both places still held: 300 new keys probe the table,
	 * and u's entry stays u's. The bucket is cold: a request that passes the
	 * ramp is still refused by the cap (a refused request may start the
	 * ramp, as one refused by another policy does, but counts no place). */
	now = T0 + 86400 * SEC;
	for (i = 0; i < 300; i++) {
		char req[48];

		snprintf(req, sizeof(req), "uid=n%zu arg:c=1", i);
		assert_int_equal(fc_take(t, &h, req, now, p2, &n2, NULL), FC_L7_PASS);
		fc_l7_give_back(t->state, t->state_size, &h, p2, n2, now);
	}
	assert_int_equal(e->tag, tag);
	assert_true(e->idle_ns & FC_SHM_KEY_HELD);
	assert_int_equal(e->state[2], 2);
	tat = e->state[0];
	assert_int_equal(fc_take(t, &h, "uid=u arg:c=1", now, pl[2], &np[2], &res), FC_L7_REJECTED);
	assert_true(res.concurrency);
	assert_int_equal(e->state[0], tat);
	assert_int_equal(e->state[2], 2);
	assert_true(e->state[1] == T0 || e->state[1] == now);
	/* Given back: the count drops, the ramp's word stays, the key is no
	 * longer held and passes again. */
	fc_l7_give_back(t->state, t->state_size, &h, pl[0], np[0], now);
	fc_l7_give_back(t->state, t->state_size, &h, pl[1], np[1], now);
	assert_int_equal(e->state[2], 0);
	assert_false(e->idle_ns & FC_SHM_KEY_HELD);
	assert_true(e->state[1] == T0 || e->state[1] == now);
	assert_int_equal(fc_take(t, &h, "uid=u arg:c=1", now + SEC, pl[0], &np[0], NULL), FC_L7_PASS);
	assert_int_equal(e->state[2], 1);
	fc_l7_give_back(t->state, t->state_size, &h, pl[0], np[0], now + SEC);
	assert_int_equal(fc_live_holds(&h), 0);

	/* The ramp as without the cap: a fresh key of each policy, cold, fed a
	 * request every 5 ms for 12 s (each place given back at once), decides
	 * alike each time; its ramp starts once, at the first request. */
	now = T0 + 2 * 86400 * SEC;
	for (i = 0; i < 2400; i++, now += 5 * MS) {
		vc = fc_take(t, &h, "uid=v arg:c=1", now, pl[0], &np[0], NULL);
		vw = fc_take(t, &h, "uid=v arg:w=1", now, p2, &n2, NULL);
		if (vc != vw)
			fail_msg("at %zu ms: %d with the cap, %d without", i * 5, vc, vw);
		passed += vc == FC_L7_PASS;
		if (vc == FC_L7_PASS) {
			assert_int_equal(np[0], 1);
			v = &t->ix.keys[FC_HOLD_INDEX(pl[0][0].where)];
			assert_int_equal(v->state[2], 1);
			assert_int_equal(v->state[1], T0 + 2 * 86400 * SEC);
			fc_l7_give_back(t->state, t->state_size, &h, pl[0], np[0], now);
			assert_int_equal(v->state[2], 0);
			assert_int_equal(v->state[1], T0 + 2 * 86400 * SEC);
		}
	}
	/* 10/s rising to 30/s over 10 s, then 30/s: about 200 + 60. */
	assert_true(passed > 240 && passed < 280);
	assert_int_equal(t->ix.slots[1].inflight, 0);
	fc_l7_holder_close(t->state, t->state_size, &h, now);
}

/* A per-key item whose count word would fall past the bucket (its rates,
 * the ramp's word and the count's more than FC_MAX_TIERS) is refused with
 * its item, as the loader never writes one. */
static void test_conc_warmup_item(void **state)
{
	struct fc_policy_spec c = { .id = 1, .warmup = 10, .concurrency = 2 };
	struct fc_t *t = *state;
	struct fc_shm_policy *it;
	const struct fc_shm_header *h;

	fc_policy_put(t, &c, "uid=*", "30/s,1000/h");
	fc_publish(t);
	h = t->base;
	it = (struct fc_shm_policy *)((uint8_t *)t->base + FC_SHM_BLOCK_OFF(h->active) + sizeof(struct fc_shm_block));
	assert_int_equal(it->warmup_ms, 10000);
	assert_int_equal(it->concurrency, 2);
	assert_int_equal(it->ntiers, 2);
	assert_int_equal(fc_build(t, t->base, t->size), 0);
	assert_int_equal(t->ix.npolicies, 1);
	it->ntiers = 3;
	it->tier[2] = it->tier[1];
	assert_int_equal(fc_build(t, t->base, t->size), 0);
	assert_int_equal(t->ix.npolicies, 0);
	assert_int_equal(t->ix.skipped, 1);
	it->warmup_ms = 0; /* without the ramp, 3 rates and the count fit */
	assert_int_equal(fc_build(t, t->base, t->size), 0);
	assert_int_equal(t->ix.npolicies, 1);
}

static bool fc_none_alive(uint64_t id)
{
	(void)id;
	return false;
}

/* A worker killed holding places: another one's recovery gives them back
 * (the process checked by its pid and start time); a live worker's record
 * is left alone; a recovery cut short is finished by the next. */
static void test_conc_recover(void **state)
{
	struct fc_t *t = *state;
	struct fc_l7_place pl[4];
	struct fc_l7_holder h;
	size_t np, w;
	pid_t pid;
	int fds[2], status, i;
	char c;

	fc_conc_policy(t, 1, "uid=*", "", 5, FC_ACTION_DROP);
	fc_conc_policy(t, 2, "uid=agg", "", 5, FC_ACTION_DROP);
	fc_publish(t);
	assert_int_equal(fc_build(t, t->base, t->size), 0);
	assert_int_not_equal(fc_l7_worker_id(getpid()), 0);
	assert_true(fc_l7_worker_alive(fc_l7_worker_id(getpid())));
	assert_false(fc_l7_worker_alive(fc_l7_worker_id(getpid()) + 1)); /* this pid, another start: reused */
	assert_int_equal(pipe(fds), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) { /* a worker: takes places, then is killed holding them */
		static uint32_t free_holds[FC_SHM_HOLDS];
		struct fc_l7_holder ch;

		if (fc_l7_holder_open(t->state, t->state_size, fc_l7_worker_id(getpid()), free_holds, &ch))
			_exit(1);
		for (i = 0; i < 3; i++) {
			fc_take(t, &ch, "uid=u1", T0, pl, &np, NULL);
			fc_take(t, &ch, "uid=agg", T0, pl, &np, NULL);
		}
		(void)!write(fds[1], "x", 1);
		alarm(30); /* should the test fail before it kills this */
		pause();
		_exit(0);
	}
	close(fds[1]);
	assert_int_equal(read(fds[0], &c, 1), 1);
	close(fds[0]);
	assert_int_equal(t->ix.slots[1].inflight, 6); /* uid=agg is a uid=* key too */
	assert_int_equal(t->ix.slots[2].inflight, 3);
	/* Alive: its places are its own. */
	assert_int_equal(fc_l7_recover(t->state, t->state_size, fc_l7_worker_id(getpid()), T0, NULL), 0);
	assert_int_equal(t->ix.slots[2].inflight, 3);
	kill(pid, SIGKILL);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_int_equal(fc_l7_recover(t->state, t->state_size, fc_l7_worker_id(getpid()), T0, NULL), 9);
	assert_int_equal(t->ix.slots[1].inflight, 0);
	assert_int_equal(t->ix.slots[2].inflight, 0);
	for (i = 0; i < 5; i++) /* u1's five places are free again */
		assert_int_equal(fc_take(t, NULL, "uid=u1", T0, pl, &np, NULL), FC_L7_PASS);
	assert_int_equal(fc_take(t, NULL, "uid=u1", T0, pl, &np, NULL), FC_L7_REJECTED);
	for (w = 0; w < FC_SHM_WORKERS; w++)
		assert_int_equal(((struct fc_shm_worker *)((char *)t->state + FC_STATE_WORKERS_OFF))[w].owner, 0);

	/* A recoverer that died at it: the record names it; the next one finishes. */
	fc_holder(t, &h, FC_SHM_WORKER_ID(7, 7));
	for (i = 0; i < 4; i++)
		assert_int_equal(fc_take(t, &h, "uid=agg", T0, pl, &np, NULL), FC_L7_PASS);
	h.rec->owner = FC_SHM_WORKER_ID(8, 8) | FC_SHM_WORKER_RECOVER;
	/* The part it did: a hold given back, then cleared. */
	pl[0] = (struct fc_l7_place){ h.holds[0].who, h.holds[0].slot, h.holds[0].where, UINT32_MAX };
	fc_l7_give_back(t->state, t->state_size, NULL, pl, 1, T0);
	h.holds[0].who = 0;
	/* 4 requests, each a place of policy 1's (key agg) and of policy 2's */
	assert_int_equal(fc_l7_recover(t->state, t->state_size, FC_SHM_WORKER_ID(9, 9), T0, fc_none_alive), 7);
	assert_int_equal(t->ix.slots[2].inflight, 0);
	assert_int_equal(t->ix.slots[1].inflight, 5); /* u1's, taken without a record: not given back */
	assert_int_equal(h.rec->owner, 0);
}

/* Records, holds and counts are the workers' to write: garbage in them
 * crashes nothing (ASan), recovery follows no index out of bounds, and a
 * count never goes below zero. */
static void test_conc_corrupt(void **state)
{
	struct fc_t *t = *state;
	struct fc_l7_place pl[4];
	struct fc_l7_holder h;
	uint64_t x = 0x9e3779b97f4a7c15ULL;
	struct fc_shm_worker *w;
	struct fc_shm_hold *hd;
	size_t i, np;

	fc_conc_policy(t, 1, "uid=*", "1/s", 2, FC_ACTION_DROP);
	fc_conc_policy(t, 2, "uid=agg", "", 2, FC_ACTION_DROP);
	fc_publish(t);
	assert_int_equal(fc_build(t, t->base, t->size), 0);
	w = (struct fc_shm_worker *)((char *)t->state + FC_STATE_WORKERS_OFF);
	hd = (struct fc_shm_hold *)((char *)t->state + FC_STATE_HOLDS_OFF);
	for (i = 0; i < FC_SHM_WORKERS; i++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		w[i].owner = x & ~FC_SHM_WORKER_RECOVER;
		w[i].used = (uint32_t)(x >> 20);
	}
	for (i = 0; i < 64 * FC_SHM_HOLDS; i++) { /* the first 64 records' holds: wild */
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		hd[i].who = x | 1;
		hd[i].slot = i % 3 ? (uint32_t)(x >> 7) % 4 : (uint32_t)(x >> 40);
		hd[i].where = i % 2 ? (uint32_t)x : FC_HOLD_AT((x >> 3) & 0xfff, (x >> 30) & 3);
	}
	t->ix.slots[2].inflight = UINT64_MAX; /* forged: refuses, gives back from it without wrapping */
	assert_int_equal(fc_take(t, NULL, "uid=agg", T0, pl, &np, NULL), FC_L7_REJECTED);
	(void)fc_l7_recover(t->state, t->state_size, 1, T0, fc_none_alive);
	for (i = 0; i < FC_SHM_WORKERS; i++)
		assert_int_equal(w[i].owner, 0);
	/* Every record was free, or is now: a new worker gets one, and decides. */
	fc_holder(t, &h, FC_SHM_WORKER_ID(3, 3));
	t->ix.slots[2].inflight = 0;
	for (i = 0; i < 100; i++) {
		char req[32];

		snprintf(req, sizeof(req), "uid=g%zu", i % 10);
		if (fc_take(t, &h, req, T0 + i * SEC, pl, &np, NULL) == FC_L7_PASS)
			fc_l7_give_back(t->state, t->state_size, &h, pl, np, T0 + i * SEC);
	}
	/* A record whose used says more than the record holds, and holds that
	 * name keys and slots past the table. */
	h.rec->used = UINT32_MAX;
	h.holds[0] = (struct fc_shm_hold){ .who = 5, .slot = UINT32_MAX, .where = FC_HOLD_SLOT };
	h.holds[1] = (struct fc_shm_hold){ .who = 5, .slot = 1, .where = FC_HOLD_AT(0xffffff, 3) };
	h.rec->owner = FC_SHM_WORKER_ID(4, 4);
	assert_true(fc_l7_recover(t->state, t->state_size, 1, T0, fc_none_alive) >= 2);
	assert_int_equal(t->ix.slots[2].inflight, 0);
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, fc_setup, fc_teardown)
	const struct CMUnitTest tests[] = {
		T(test_conc_basics),
		T(test_conc_keys),
		T(test_conc_with_rate),
		T(test_conc_all_or_nothing),
		T(test_conc_epoch),
		T(test_conc_threads),
		T(test_conc_threads_key),
		T(test_conc_recover),
		T(test_conc_corrupt),
		T(test_conc_warmup),
		T(test_conc_warmup_item),
	};
#undef T

	return fc_run_group("L7 engine: concurrency caps", tests, NULL, NULL);
}
