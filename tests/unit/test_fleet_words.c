// SPDX-License-Identifier: BSD-2-Clause
/*
 * maps/fc_fleet.h, the code workers (nginx, XDP/TC) and the agent run on a
 * fleet policy's words, driven with an injected clock: the shares of a
 * split add up to N for every key and are fair by weight; each word
 * operation in and across windows (rollover, a grant that lapses, the
 * clock stepped back); and the agent's lock and donation against workers
 * racing on the same word in threads, which must leave nothing spent
 * twice.
 */
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "fc_fleet.h"
#include "fc_test.h"

#define MS 1000000ULL
#define SEC FC_NS_PER_SEC
#define MIN (60 * SEC)
/* A realistic clock: UTC ns in 2026. */
#define T0 (1795316400ULL * SEC)

/* The split of q over weights w[0..n) for node i, by the design's formula
 * (section 2), with 128-bit products: the reference the loader's
 * fc_fleet_split.c must agree with. */
static struct fc_fleet_split fc_split_ref(__u64 q, const __u64 *w, int n, int i)
{
	unsigned __int128 s = 0, f = 0, r = 0, lo = 0, hi;
	struct fc_fleet_split sp = { .from = 0 };
	int j;

	for (j = 0; j < n; j++)
		s += w[j];
	for (j = 0; j < n; j++)
		r += (unsigned __int128)q * w[j] % s;
	r /= s;
	for (j = 0; j < n; j++) {
		hi = j == n - 1 ? r << 32 : ((f + (unsigned __int128)q * w[j] % s) << 32) / s;
		if (j == i) {
			lo = (f << 32) / s;
			sp.base = (__u64)((unsigned __int128)q * w[j] / s);
			sp.seg_lo = (__u64)lo;
			sp.seg_hi = (__u64)hi;
		}
		f += (unsigned __int128)q * w[j] % s;
	}
	return sp;
}

/* splitmix64: every bit of its output is well mixed (the points are the
 * low 32 bits). */
static __u64 fc_rand64(__u64 *x)
{
	__u64 z = (*x += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* Every node's share of every key adds up to q, over random node sets,
 * weights (micro-units, 1 to 10^6), quantities and points. */
static void test_share_sums_to_q(void **state)
{
	__u64 x = 0x9e3779b97f4a7c15ULL, w[16], q, sum;
	struct fc_fleet_split sp[16];
	int it, n, i, k;
	__u32 u;

	(void)state;
	for (it = 0; it < 20000; it++) {
		n = 1 + (int)(fc_rand64(&x) % 16);
		for (i = 0; i < n; i++)
			w[i] = 1 + fc_rand64(&x) % 1000000;
		q = it % 3 ? fc_rand64(&x) % 1000 : fc_rand64(&x) % (FC_RATE_MAX + 1);
		for (i = 0; i < n; i++)
			sp[i] = fc_split_ref(q, w, n, i);
		for (k = 0; k < 8; k++) {
			u = k == 0 ? 0 : k == 1 ? 0xffffffffu : (__u32)fc_rand64(&x);
			for (sum = 0, i = 0; i < n; i++)
				sum += fc_fleet_share(&sp[i], u);
			if (sum != q)
				fail_msg("q %llu over %d nodes, u %#x: shares add up to %llu", (unsigned long long)q, n,
					 u, (unsigned long long)sum);
		}
	}
}

/* 3/d over four nodes of 0.25: base 0, r 3, and for every key exactly
 * three nodes get 1 (today's R x W gave each 1: four in all). */
static void test_share_three_over_four(void **state)
{
	const __u64 w[4] = { 250000, 250000, 250000, 250000 };
	struct fc_fleet_split sp[4];
	int i, ones, counts[4] = { 0 };
	__u32 u;

	(void)state;
	for (i = 0; i < 4; i++) {
		sp[i] = fc_split_ref(3, w, 4, i);
		assert_int_equal(sp[i].base, 0);
	}
	for (u = 0; u < 4096; u++) {
		__u32 pt = u * 1048573u;

		for (ones = 0, i = 0; i < 4; i++) {
			assert_true(fc_fleet_share(&sp[i], pt) <= 1);
			ones += (int)fc_fleet_share(&sp[i], pt);
			counts[i] += (int)fc_fleet_share(&sp[i], pt);
		}
		assert_int_equal(ones, 3);
	}
	for (i = 0; i < 4; i++) /* which three turns with the key */
		assert_true(counts[i] > 4096 * 3 / 4 - 100 && counts[i] < 4096 * 3 / 4 + 100);
}

/* Over 10^6 keys, each node's extra unit goes to it with probability f_j /
 * S: fair by weight. */
static void test_share_fair_by_weight(void **state)
{
	const __u64 w[5] = { 1, 2, 3, 4, 990 }, q = 7; /* S = 1000 */
	__u64 x = 12345, extra[5] = { 0 }, s = 1000;
	struct fc_fleet_split sp[5];
	int i, k;

	(void)state;
	for (i = 0; i < 5; i++)
		sp[i] = fc_split_ref(q, w, 5, i);
	for (k = 0; k < 1000000; k++) {
		__u32 u = (__u32)fc_rand64(&x);

		for (i = 0; i < 5; i++)
			extra[i] += fc_fleet_share(&sp[i], u) - sp[i].base;
	}
	for (i = 0; i < 5; i++) {
		double want = 1e6 * (double)(q * w[i] % s) / (double)s, got = (double)extra[i];

		/* binomial: within 5 standard deviations, (got - want)^2 <= 25 want */
		if ((got - want) * (got - want) > 25 * want + 1)
			fail_msg("node %d: %llu extra units over 10^6 keys, expected %.0f", i,
				 (unsigned long long)extra[i], want);
	}
}

/* split[1] from its first window on; the fresh rule: no share of a window
 * that began before the state was made (sliding: before fresh + unit). */
static void test_split_of_and_fresh(void **state)
{
	struct fc_fleet_split sp[2] = { { .from = 0, .base = 10 }, { .from = FC_FLEET_NEVER, .base = 20 } };
	__u64 w = T0 / MIN;

	(void)state;
	assert_int_equal(fc_fleet_share_in(sp, 7, w, MIN, 0, 0), 10);
	sp[1].from = w + 1;
	assert_int_equal(fc_fleet_share_in(sp, 7, w, MIN, 0, 0), 10);
	assert_int_equal(fc_fleet_share_in(sp, 7, w + 1, MIN, 0, 0), 20);
	/* fresh in the middle of w: w is written off, w + 1 is not */
	assert_int_equal(fc_fleet_share_in(sp, 7, w, MIN, w * MIN + 1, 0), 0);
	assert_int_equal(fc_fleet_share_in(sp, 7, w + 1, MIN, w * MIN + 1, 0), 20);
	/* sliding: w + 1 too (its prev would be the lost count of w) */
	assert_int_equal(fc_fleet_share_in(sp, 7, w + 1, MIN, w * MIN + 1, MIN), 0);
	assert_int_equal(fc_fleet_share_in(sp, 7, w + 2, MIN, w * MIN + 1, MIN), 20);
}

/* A worker's charge on a window word, with its rollover. */
static int fc_win(__u64 *word, __u64 now, __u64 share, __u64 cost, __u64 *pn)
{
	__u64 w = now / MIN;
	int r = fc_fleet_window_try(word, w, cost, &pn[0], &pn[1]);

	return r == FC_FLEET_ROLL ? fc_fleet_window_roll(word, w, share, cost, pn) : r;
}

static void test_window_spend_roll_refund(void **state)
{
	__u64 word = 0, pn[2], w = T0 / MIN, t = w * MIN;
	int i;

	(void)state;
	/* a new word (all zeros) is an earlier window: rolls over to the share */
	assert_int_equal(fc_fleet_window_try(&word, w, 1, &pn[0], &pn[1]), FC_FLEET_ROLL);
	for (i = 0; i < 5; i++)
		assert_int_equal(fc_win(&word, t + (__u64)i * SEC, 5, 1, pn), 1);
	assert_int_equal(fc_win(&word, t + 10 * SEC, 5, 1, pn), 0);
	assert_int_equal(word, FC_FLEET_WORD(w, 0));
	/* a refund gives back within the window */
	word = FC_FLEET_WORD(w, 2);
	assert_int_equal(fc_win(&word, t + 11 * SEC, 5, 2, pn), 1);
	fc_fleet_window_refund(&word, 2, pn[0], pn[1]);
	assert_int_equal(word, FC_FLEET_WORD(w, 2));
	/* ... also after another charge moved it (counts add up) */
	assert_int_equal(fc_win(&word, t + 12 * SEC, 5, 1, pn), 1);
	assert_int_equal(fc_fleet_window_try(&word, w, 1, &(__u64){ 0 }, &(__u64){ 0 }), 1);
	fc_fleet_window_refund(&word, 1, pn[0], pn[1]);
	assert_int_equal(word, FC_FLEET_WORD(w, 1));
	/* next window: the share again, whatever was left */
	assert_int_equal(fc_win(&word, t + MIN, 3, 1, pn), 1);
	assert_int_equal(word, FC_FLEET_WORD(w + 1, 2));
	/* a refund after the window ended stays spent */
	fc_fleet_window_refund(&word, 1, FC_FLEET_WORD(w, 1), FC_FLEET_WORD(w, 0));
	assert_int_equal(word, FC_FLEET_WORD(w + 1, 2));
	/* the clock stepped back: the window left is never reopened */
	assert_int_equal(fc_win(&word, t + 59 * SEC, 100, 1, pn), 0);
	assert_int_equal(word, FC_FLEET_WORD(w + 1, 2));
	/* a share that does not hold the cost: rolled, refused; then refused
	 * on the fast path without a share */
	assert_int_equal(fc_win(&word, t + 2 * MIN, 2, 3, pn), 0);
	assert_int_equal(word, FC_FLEET_WORD(w + 2, 2));
	assert_int_equal(fc_fleet_window_try(&word, w + 2, 3, &pn[0], &pn[1]), 0);
	/* a share of 0 (fresh node): refuses */
	assert_int_equal(fc_win(&word, t + 3 * MIN, 0, 1, pn), 0);
	/* labels wrap mod 2^24: window 2^24 follows 2^24 - 1 */
	word = FC_FLEET_WORD(FC_FLEET_W_MASK, 0);
	assert_int_equal(fc_fleet_window_try(&word, FC_FLEET_W_MASK + 1, 1, &pn[0], &pn[1]), FC_FLEET_ROLL);
}

static void test_demand_once_per_window(void **state)
{
	__u64 d = 0, w = T0 / MIN;

	(void)state;
	assert_false(fc_fleet_wanted(d, w));
	assert_int_equal(fc_fleet_demand(&d, w), 1);
	assert_true(fc_fleet_wanted(d, w));
	assert_int_equal(fc_fleet_demand(&d, w), 0);
	assert_false(fc_fleet_wanted(d, w + 1));
	assert_int_equal(fc_fleet_demand(&d, w + 1), 1);
	assert_int_equal(d, FC_FLEET_WORD(w + 1, FC_FLEET_WANTED));
}

static void test_topup_and_lock(void **state)
{
	__u64 word = FC_FLEET_WORD(100, 4);

	(void)state;
	assert_int_equal(fc_fleet_topup(&word, 100, 6, 50), FC_FLEET_DONE);
	assert_int_equal(word, FC_FLEET_WORD(100, 10));
	/* an earlier window: rolled over with this node's own share */
	assert_int_equal(fc_fleet_topup(&word, 101, 6, 3), FC_FLEET_DONE);
	assert_int_equal(word, FC_FLEET_WORD(101, 9));
	/* a later window: the grant lapses */
	assert_int_equal(fc_fleet_topup(&word, 100, 6, 3), FC_FLEET_LAPSED);
	assert_int_equal(word, FC_FLEET_WORD(101, 9));
	/* a corrupt credit near the top: nothing taken */
	word = FC_FLEET_WORD(101, FC_FLEET_CREDIT_MAX - 1);
	assert_int_equal(fc_fleet_topup(&word, 101, 2, 0), FC_FLEET_SHORT);
	assert_int_equal(fc_fleet_topup(&word, 101, FC_FLEET_CREDIT_MAX + 1, 0), FC_FLEET_SHORT);

	word = FC_FLEET_WORD(101, 9);
	assert_int_equal(fc_fleet_lock(&word, 101, 10, 0), FC_FLEET_SHORT);
	assert_int_equal(word, FC_FLEET_WORD(101, 9));
	assert_int_equal(fc_fleet_lock(&word, 101, 9, 0), FC_FLEET_DONE);
	assert_int_equal(word, FC_FLEET_WORD(101, 0));
	assert_int_equal(fc_fleet_lock(&word, 100, 1, 5), FC_FLEET_LAPSED);
	/* a fixed bucket the agent rolls itself: (w, share - x) */
	assert_int_equal(fc_fleet_lock(&word, 102, 3, 5), FC_FLEET_DONE);
	assert_int_equal(word, FC_FLEET_WORD(102, 2));
	assert_int_equal(fc_fleet_credit(word, 102), 2);
	assert_int_equal(fc_fleet_credit(word, 103), 0);
}

/* Workers spend, the agent locks and tops up, on one word, in threads:
 * what was admitted plus what was locked plus what is left is exactly the
 * share plus the grants; never more admitted than that. */
struct fc_race {
	__u64 word;
	__u64 w;
	pthread_barrier_t go;
	volatile int stop;
};

static void *fc_race_worker(void *arg)
{
	struct fc_race *r = arg;
	__u64 pn[2], n = 0, k;

	pthread_barrier_wait(&r->go);
	for (k = 0; !r->stop; k++) {
		if (fc_fleet_window_try(&r->word, r->w, 1, &pn[0], &pn[1]) == 1)
			n++;
		if (k % 16 == 0)
			sched_yield(); /* the agent gets its turns on 2 cores */
	}
	return (void *)(uintptr_t)n;
}

static void test_lock_races_workers(void **state)
{
	struct fc_race r = { .word = FC_FLEET_WORD(77, 200000), .w = 77 };
	__u64 total = 0, locked = 0, granted = 0, k;
	pthread_t t[3];
	void *ret;
	int i;

	(void)state;
	assert_int_equal(pthread_barrier_init(&r.go, NULL, 4), 0);
	for (i = 0; i < 3; i++)
		assert_int_equal(pthread_create(&t[i], NULL, fc_race_worker, &r), 0);
	pthread_barrier_wait(&r.go);
	for (k = 0; FC_FLEET_WORD_CREDIT(*(volatile __u64 *)&r.word); k++) {
		if (fc_fleet_lock(&r.word, 77, 3, 0) == FC_FLEET_DONE)
			locked += 3;
		else if (fc_fleet_lock(&r.word, 77, 1, 0) == FC_FLEET_DONE)
			locked++;
		if (k % 7 == 0 && k < 100000 && fc_fleet_topup(&r.word, 77, 2, 0) == FC_FLEET_DONE)
			granted += 2;
		if (k % 16 == 0)
			sched_yield();
	}
	r.stop = 1;
	for (i = 0; i < 3; i++) {
		assert_int_equal(pthread_join(t[i], &ret), 0);
		total += (__u64)(uintptr_t)ret;
	}
	pthread_barrier_destroy(&r.go);
	if (!locked || !total)
		fail_msg("no race: %llu admitted, %llu locked", (unsigned long long)total, (unsigned long long)locked);
	assert_int_equal(FC_FLEET_WORD_CREDIT(r.word), 0);
	assert_int_equal(total + locked, 200000 + granted);
}

/* Sliding: room replaces N - cur; the rollover carries prev = L(v) -
 * room(v) from the net word; a net word already moved on takes prev as
 * full. */
static void test_slide_words(void **state)
{
	__u64 w = T0 / MIN, t = w * MIN, word, nw = 0, p, n;
	int i;

	(void)state;
	word = FC_FLEET_SLIDE(w - 5, 0, 0); /* long idle: prev 0 */
	assert_int_equal(fc_fleet_slide_try(&word, MIN, t, w, 1, &p, &n), FC_FLEET_ROLL);
	assert_int_equal(fc_fleet_slide_roll(&word, &nw, MIN, t, w, 10, 10, 1, &p, &n), 1);
	assert_int_equal(word, FC_FLEET_SLIDE(w, 9, 0));
	for (i = 0; i < 9; i++)
		assert_int_equal(fc_fleet_slide_try(&word, MIN, t + SEC, w, 1, &p, &n), 1);
	assert_int_equal(fc_fleet_slide_try(&word, MIN, t + SEC, w, 1, &p, &n), 0);
	/* a grant of 4 in w: net 4, room 4; L(w) = 14, 10 used */
	assert_int_equal(fc_fleet_slide_topup(&word, &nw, w, 4, 10, 10), FC_FLEET_DONE);
	assert_int_equal(FC_FLEET_SLIDE_ROOM(word), 4);
	assert_int_equal(fc_fleet_slide_try(&word, MIN, t + 2 * SEC, w, 1, &p, &n), 1);
	fc_fleet_slide_refund(&word, 1, p, n);
	assert_int_equal(FC_FLEET_SLIDE_ROOM(word), 4);
	/* w + 1 at its start: prev = 14 - 4 = 10, room = share 10: the rule
	 * 10 * U + U <= 10 U refuses; at e = U/2: 5 U + U <= 10 U admits */
	assert_int_equal(fc_fleet_slide_roll(&word, &nw, MIN, t + MIN, w + 1, 10, 10, 1, &p, &n), 0);
	assert_int_equal(word, FC_FLEET_SLIDE(w + 1, 10, 10));
	assert_int_equal(fc_fleet_slide_try(&word, MIN, t + MIN + 30 * SEC, w + 1, 1, &p, &n), 1);
	assert_int_equal(fc_fleet_slide_try(&word, MIN, t + MIN + 30 * SEC, w + 1, 5, &p, &n), 0);
	/* the clock stepped back into w: refused */
	assert_int_equal(fc_fleet_slide_try(&word, MIN, t + 59 * SEC, w, 1, &p, &n), 0);
	/* a net word moved past w + 1 before the word rolled: prev full */
	word = FC_FLEET_SLIDE(w + 1, 3, 0);
	nw = FC_FLEET_WORD(w + 2, FC_FLEET_NET_BIAS + 1);
	assert_int_equal(fc_fleet_slide_roll(&word, &nw, MIN, t + 2 * MIN, w + 2, 10, 10, 1, &p, &n), 0);
	assert_int_equal(FC_FLEET_SLIDE_PREV(word), FC_SLIDE_COUNT_MAX);
}

/* The release's two steps against a rollover in between: it can only
 * overstate prev. */
static void test_slide_release_then_roll(void **state)
{
	__u64 w = T0 / MIN, t = w * MIN, word = FC_FLEET_SLIDE(w, 8, 0), nw = 0, p, n, before;

	(void)state;
	/* L(w) = share 10, 2 used, room 8. Lock 5 of the room: room 3. */
	assert_int_equal(fc_fleet_slide_release(&word, &nw, MIN, t + 10 * SEC, w, 5, 0, 10), FC_FLEET_DONE);
	assert_int_equal(FC_FLEET_SLIDE_ROOM(word), 3);
	assert_int_equal(nw, FC_FLEET_WORD(w, FC_FLEET_NET_BIAS - 5));
	/* the rollover: prev = L - room = (10 - 5) - 3 = 2, what was used */
	before = word;
	assert_int_equal(fc_fleet_slide_roll(&word, &nw, MIN, t + MIN, w + 1, 10, 10, 1, &p, &n), 1);
	assert_int_equal(FC_FLEET_SLIDE_PREV(word), 2);
	/* had the rollover landed between room -= 5 and net -= 5: L read as
	 * 10, prev 7 > 2: more denied, never more admitted */
	assert_int_equal(FC_FLEET_SLIDE_PREV(
				 fc_fleet_slide_rolled(before, FC_FLEET_WORD(w, FC_FLEET_NET_BIAS), w + 1, 10, 10)),
			 7);
	/* a release the rule would break is refused: prev 2 at e = 0 needs
	 * room >= 2 */
	word = FC_FLEET_SLIDE(w + 1, 3, 2);
	assert_int_equal(fc_fleet_slide_release(&word, &nw, MIN, t + MIN, w + 1, 2, 10, 10), FC_FLEET_SHORT);
	assert_int_equal(fc_fleet_slide_release(&word, &nw, MIN, t + MIN, w + 1, 1, 10, 10), FC_FLEET_DONE);
	assert_int_equal(fc_fleet_slide_release(&word, &nw, MIN, t + MIN, w, 1, 10, 10), FC_FLEET_LAPSED);
}

/* GCRA: the node's bucket, then lease credit; the refund goes to the word
 * charged; a donation takes only tokens that are there. */
static void test_gcra_lease_and_donate(void **state)
{
	__u64 st[4] = { 0 }, T = 100 * MS, tau = 2 * T, now = T0, lw = now / (200 * MS), p = 0, n = 0, k;
	int lease, i;

	(void)state;
	st[3] = tau;
	/* a burst of tau / T = 2 from the bucket */
	for (i = 0; i < 2; i++) {
		assert_int_equal(fc_fleet_gcra_try(st, T, st[3], lw, now, 1, &p, &n, &lease), 1);
		assert_int_equal(lease, 0);
	}
	assert_int_equal(fc_fleet_gcra_try(st, T, st[3], lw, now, 1, &p, &n, &lease), 0);
	/* lease credit of the current lease window */
	st[2] = FC_FLEET_WORD(lw, 0);
	assert_int_equal(fc_fleet_topup(&st[2], lw, 2, 0), FC_FLEET_DONE);
	assert_int_equal(fc_fleet_gcra_try(st, T, st[3], lw, now, 1, &p, &n, &lease), 1);
	assert_int_equal(lease, 1);
	fc_fleet_gcra_refund(st, lease, 1, p, n);
	assert_int_equal(fc_fleet_credit(st[2], lw), 2);
	/* a lease window gone: its credit is not spent */
	assert_int_equal(fc_fleet_gcra_try(st, T, st[3], lw + 1, now, 1, &p, &n, &lease), 0);
	/* no rate share (T_i 0): lease only */
	assert_int_equal(fc_fleet_gcra_try(st, 0, st[3], lw, now, 1, &p, &n, &lease), 1);
	assert_int_equal(lease, 1);

	/* donation: an idle bucket holds tau / T = 2 tokens */
	st[0] = 0;
	st[2] = 0;
	assert_int_equal(fc_fleet_gcra_tokens(st[0], T, tau, now), 2);
	k = fc_fleet_donate(&st[0], T, tau, now, 5);
	assert_int_equal(k, 2);
	assert_int_equal(st[0], now + 2 * T);
	assert_int_equal(fc_fleet_gcra_try(st, T, tau, lw, now, 1, &p, &n, &lease), 0);
	assert_int_equal(fc_fleet_donate(&st[0], T, tau, now, 5), 0);
	/* after T one token is back, and one can be donated */
	assert_int_equal(fc_fleet_donate(&st[0], T, tau, now + T, 5), 1);
	/* a TAT past anything an admission leaves: nothing */
	st[0] = now + 10 * SEC;
	assert_int_equal(fc_fleet_donate(&st[0], T, tau, now, 5), 0);
}

/* Donation against workers charging the same bucket in threads: what was
 * admitted plus what was donated never passes what the bucket held. */
struct fc_gcra_race {
	__u64 st[4];
	__u64 now;
	volatile int stop;
};

static void *fc_gcra_worker(void *arg)
{
	struct fc_gcra_race *r = arg;
	__u64 p, n, got = 0, k;
	int lease;

	for (k = 0; !r->stop; k++) {
		if (fc_fleet_gcra_try(r->st, 1000, r->st[3], 0, r->now, 1, &p, &n, &lease) == 1)
			got++;
		if (k % 16 == 0)
			sched_yield(); /* the donor gets its turns on 2 cores */
	}
	return (void *)(uintptr_t)got;
}

static void test_donate_races_workers(void **state)
{
	struct fc_gcra_race r = { .now = T0 };
	__u64 total = 0, donated = 0;
	pthread_t t[3];
	void *ret;
	int i;

	(void)state;
	r.st[3] = 100000 * 1000ULL; /* 100,000 tokens, the clock held still */
	for (i = 0; i < 3; i++)
		assert_int_equal(pthread_create(&t[i], NULL, fc_gcra_worker, &r), 0);
	while (fc_fleet_gcra_tokens(*(volatile __u64 *)&r.st[0], 1000, r.st[3], r.now))
		donated += fc_fleet_donate(&r.st[0], 1000, r.st[3], r.now, 3);
	r.stop = 1;
	for (i = 0; i < 3; i++) {
		assert_int_equal(pthread_join(t[i], &ret), 0);
		total += (__u64)(uintptr_t)ret;
	}
	assert_true(donated > 0);
	assert_int_equal(total + donated, 100000);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_share_sums_to_q),
		cmocka_unit_test(test_share_three_over_four),
		cmocka_unit_test(test_share_fair_by_weight),
		cmocka_unit_test(test_split_of_and_fresh),
		cmocka_unit_test(test_window_spend_roll_refund),
		cmocka_unit_test(test_demand_once_per_window),
		cmocka_unit_test(test_topup_and_lock),
		cmocka_unit_test(test_lock_races_workers),
		cmocka_unit_test(test_slide_words),
		cmocka_unit_test(test_slide_release_then_roll),
		cmocka_unit_test(test_gcra_lease_and_donate),
		cmocka_unit_test(test_donate_races_workers),
	};

	return fc_run_group("fleet_words", tests, NULL, NULL);
}
