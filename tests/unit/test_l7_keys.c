// SPDX-License-Identifier: BSD-2-Clause
/*
 * The L7 engine's per-key policies (DIM=*): the key table under forked
 * processes and threads racing, two-choice placement, a full table, idle
 * keys, the agent's recount while workers write, and corrupt tables; the
 * value table of --show-keys as workers write it and root reads it.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "fc_shm_state.h"
#include "fc_stats.h"
#include "fc_test.h"
#include "fc_test_l7.h"

/* ---- per-key policies ---- */

/* Racer i's n-th uid of 1,000: 200 keys, 5 requests each, in an order of
 * its own. */
static void fc_sparse_uid(char *uid, size_t cap, int i, int n)
{
	snprintf(uid, cap, "k%d", (n % 200 * 7 + i * 31 + n / 200) % 200);
}

/* A forked racer: fc_race_n requests, its n-th with uid fc_race_uid(i, n). */
static void (*fc_race_uid)(char *uid, size_t cap, int i, int n);
static int fc_race_n;

static int fc_uid_racer(struct fc_t *t, int i)
{
	char req[32];
	int ok = 0, n;

	for (n = 0; n < fc_race_n; n++) {
		memcpy(req, "uid=", 4);
		fc_race_uid(req + 4, sizeof(req) - 4, i, n);
		ok += fc_decide(t, req, T0, NULL) == FC_L7_PASS;
	}
	return ok;
}

/* The races' policy: uid=* at 3/h, published, the index built. */
static void fc_keys_race_policy(struct fc_t *t)
{
	fc_policy(t, 1, "uid=*", "3/h", "drop", 0, 0);
	fc_publish(t);
	assert_int_equal(fc_build(t, t->base, t->size), 0);
}

/* Each of 8 forked processes asks for the same 200 new keys, 5 times each,
 * in its own order: every key admits exactly its 3, one bucket per key. All
 * on one CPU, so a racer is often preempted while it makes an entry (a
 * request that did not wait for it passed in the overflow bucket: 601). */
static void test_keys_race(void **state)
{
	struct fc_t *t = *state;
	cpu_set_t cpus, one;

	fc_keys_race_policy(t);
	fc_race_uid = fc_sparse_uid;
	fc_race_n = 5 * 200;
	assert_int_equal(sched_getaffinity(0, sizeof(cpus), &cpus), 0);
	CPU_ZERO(&one);
	CPU_SET(sched_getcpu(), &one);
	assert_int_equal(sched_setaffinity(0, sizeof(one), &one), 0);
	assert_int_equal(fc_forked(t, fc_uid_racer), 600);
	assert_int_equal(sched_setaffinity(0, sizeof(cpus), &cpus), 0);
	assert_int_equal(t->ix.slots[1].passed, 600);
	assert_int_equal(t->ix.slots[1].keys, 200);
	assert_int_equal(t->ix.slots[1].overflowed, 0);
}

static int fc_u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* No key has two entries: every tag in the table is there once. */
static void fc_keys_unique(struct fc_t *t)
{
	uint64_t *tags = calloc(t->ix.nkeys, sizeof(*tags));
	size_t i, n = 0;

	assert_non_null(tags);
	for (i = 0; i < t->ix.nkeys; i++)
		if (t->ix.keys[i].tag >= FC_SHM_KEY_TAG_MIN)
			tags[n++] = t->ix.keys[i].tag;
	qsort(tags, n, sizeof(*tags), fc_u64_cmp);
	for (i = 1; i < n; i++)
		assert_int_not_equal(tags[i], tags[i - 1]);
	free(tags);
}

/* A uid=* policy at 3/h that may hold the whole table (the cap is its
 * size) and make keys as fast as they come. */
static void fc_keys_dense_policy(struct fc_t *t, uint32_t keys)
{
	struct fc_policy_spec p = { .id = 1, .max_keys = keys, .new_keys = 1000000000 };

	t->keys = keys;
	fc_policy_put(t, &p, "uid=*", "3/h");
	fc_publish(t);
	assert_int_equal(fc_build(t, t->base, t->size), 0);
	assert_int_equal(t->ix.nkeys, keys);
}

/* 950 keys in an 1,024-entry table, each asked for 5 times by each of 8
 * racers at once (forked processes, or threads), in orders of their own:
 * keys land in crowded windows, several workers meet each new key, and
 * still no key has two buckets, and none admits more than its 3. Racer i's
 * n-th uid: */
static void fc_dense_uid(char *uid, size_t cap, int i, int n)
{
	snprintf(uid, cap, "d%d", (n % 950 * 7 + i * 131 + n / 950 * 17) % 950);
}

/* What the racers admitted, against the table they left, where at least
 * keys keys were made. */
static void fc_race_check(struct fc_t *t, size_t passed, uint32_t keys)
{
	uint64_t in_keys = 0;
	size_t i;

	fc_keys_unique(t);
	for (i = 0; i < t->ix.nkeys; i++) {
		const struct fc_shm_key *e = &t->ix.keys[i];

		if (e->tag < FC_SHM_KEY_TAG_MIN)
			continue;
		assert_true(e->passed <= 3);
		in_keys += e->passed;
	}
	/* What the keys did not admit, the overflow bucket did: its 3 at most. */
	assert_true(passed >= in_keys && passed - in_keys <= 3);
	assert_int_equal(t->ix.slots[1].passed, passed);
	assert_true(t->ix.slots[1].keys >= keys);
}

static void test_keys_race_dense(void **state)
{
	struct fc_t *t = *state;

	fc_keys_dense_policy(t, FC_SHM_KEYS_MIN);
	fc_race_uid = fc_dense_uid;
	fc_race_n = 5 * 950;
	fc_race_check(t, (size_t)fc_forked(t, fc_uid_racer), 900);
}

/* The same races between 8 threads of one process, each a worker with an
 * index of its own (as nginx's workers, but where ASan sees every access
 * of all of them, the key table's included), let go at once. */
struct fc_key_thread {
	struct fc_l7_index ix;
	struct fc_arena arena;
	pthread_barrier_t *go;
	void (*uid)(char *uid, size_t cap, int i, int n);
	int i, n, passed;
};

static void *fc_key_thread_run(void *arg)
{
	struct fc_key_thread *c = arg;
	struct fc_l7_result res;
	struct fc_l7_req rq;
	char uid[16];
	int n;

	pthread_barrier_wait(c->go);
	for (n = 0; n < c->n; n++) {
		memset(&rq, 0, sizeof(rq)); /* not fc_req: its buffers are shared */
		c->uid(uid, sizeof(uid), c->i, n);
		rq.uid = (struct fc_l7_str){ uid, strlen(uid) };
		fc_l7_decide(&c->ix, &rq, T0, &res);
		c->passed += res.verdict == FC_L7_PASS;
	}
	return NULL;
}

/* n requests of each of 8 threads, racer i's n-th with uid(i, n): how many passed. */
static int fc_threaded(struct fc_t *t, void (*uid)(char *, size_t, int, int), int n)
{
	static struct fc_key_thread c[8];
	pthread_barrier_t go;
	pthread_t th[8];
	int i, passed = 0;

	assert_int_equal(pthread_barrier_init(&go, NULL, 8), 0);
	for (i = 0; i < 8; i++) {
		memset(&c[i], 0, sizeof(c[i]));
		c[i] = (struct fc_key_thread){ .go = &go, .uid = uid, .i = i, .n = n };
		assert_int_equal(fc_l7_build(t->base, t->size, t->state, t->state_size, &c[i].ix,
					     &(struct fc_l7_alloc){ fc_arena_alloc, &c[i].arena }), 0);
	}
	for (i = 0; i < 8; i++)
		assert_int_equal(pthread_create(&th[i], NULL, fc_key_thread_run, &c[i]), 0);
	for (i = 0; i < 8; i++) {
		assert_int_equal(pthread_join(th[i], NULL), 0);
		passed += c[i].passed;
		fc_arena_free(&c[i].arena);
	}
	pthread_barrier_destroy(&go);
	return passed;
}

static void test_keys_race_threads(void **state)
{
	struct fc_t *t = *state;

	fc_keys_race_policy(t);
	/* 8 threads on a machine of fewer cores: one may be preempted while it
	 * sets a key up, and a request of that key that finds the entry still
	 * busy takes the overflow bucket (never a second bucket). */
	fc_race_check(t, (size_t)fc_threaded(t, fc_sparse_uid, 5 * 200), 200);
	assert_int_equal(t->ix.slots[1].keys, 200);
}

static void test_keys_race_dense_threads(void **state)
{
	struct fc_t *t = *state;

	fc_keys_dense_policy(t, FC_SHM_KEYS_MIN);
	fc_race_check(t, (size_t)fc_threaded(t, fc_dense_uid, 5 * 950), 900);
}

/* Two choices, as the walk makes them: a key whose first window is full of
 * another policy's live keys lands first in its second window, is found
 * there again, and an entry of the first window coming free later makes no
 * second bucket for it. */
static void test_keys_two_choices(void **state)
{
	struct fc_t *t = *state;
	struct fc_shm_key *keys;
	struct fc_l7_result res;
	uint32_t mask, p0 = 0, p1 = 0, j, other = 0;
	uint64_t tag = 0;
	char req[32];
	size_t i;
	int c;

	fc_policy(t, 1, "uid=*", "3/h", "drop", 0, 0);
	fc_policy(t, 2, "uid=*,arg:o=*", "3/h", "drop", 0, 0);
	fc_publish(t);
	assert_int_equal(fc_build(t, t->base, t->size), 0);
	keys = t->ix.keys;
	mask = t->ix.nkeys - 1;
	for (i = 0; i < t->ix.npolicies; i++)
		if (t->ix.pol[i].id == 2)
			other = (uint32_t)i;
	/* A uid whose two windows do not meet (nearly every one): its tag is
	 * that of the one entry its first decision makes, wiped after. */
	for (c = 0; c < 20; c++) {
		snprintf(req, sizeof(req), "uid=two%d", c);
		fc_decide(t, req, T0, &res);
		for (i = 0, tag = 0; i <= mask; i++)
			if (keys[i].tag >= FC_SHM_KEY_TAG_MIN) {
				assert_int_equal(tag, 0);
				tag = keys[i].tag;
				memset(&keys[i], 0, sizeof(keys[i]));
			}
		assert_true(tag >= FC_SHM_KEY_TAG_MIN);
		p0 = fc_shm_key_place(tag, 0, t->ix.nkeys);
		p1 = fc_shm_key_place(tag, 1, t->ix.nkeys);
		if (((p1 - p0) & mask) >= FC_SHM_KEY_PROBE && ((p0 - p1) & mask) >= FC_SHM_KEY_PROBE)
			break;
	}
	assert_true(c < 20);
	for (j = 0; j < FC_SHM_KEY_PROBE; j++) { /* policy 2's keys, live for an hour */
		struct fc_shm_key *e = &keys[(p0 + j) & mask];

		e->tag = (FC_SHM_KEY_TAG_MIN | (0x5a5a0000ULL + j)) ^ (tag & ~0xffffffffULL);
		assert_int_not_equal(e->tag, tag);
		e->slot = t->ix.pol[other].slot;
		e->epoch = t->ix.pol[other].epoch;
		e->idle_ns = T0 + 3600 * SEC;
	}
	assert_int_equal(fc_passes(t, req, T0, 5), 3);
	assert_int_equal(keys[p1].tag, tag);
	fc_keys_unique(t);
	/* The first window's first entry idle: the key is still found in its
	 * second window, its 3 spent. */
	keys[p0].idle_ns = T0;
	assert_int_equal(fc_passes(t, req, T0 + SEC, 2), 0);
	assert_int_not_equal(keys[p0].tag, tag);
	assert_int_equal(keys[p1].tag, tag);
	fc_keys_unique(t);
}

/* Two choices fill the table: 95% of it (62,259 keys in 65,536 entries)
 * with next to none left to the overflow bucket, each key found again in
 * its own entry. */
static void test_keys_dense(void **state)
{
	struct fc_t *t = *state;
	struct fc_l7_result res;
	char req[32];
	uint32_t k, n = 62259, over = 0;

	fc_keys_dense_policy(t, 65536);
	for (k = 0; k < n; k++) {
		snprintf(req, sizeof(req), "uid=n%u", k);
		fc_decide(t, req, T0, &res);
		over += res.overflow;
	}
	/* ~0.04% (14-42 keys in 20 simulated runs; a single window of 64: ~2%) */
	assert_true(over <= n / 250);
	assert_int_equal(t->ix.slots[1].keys, n - over);
	fc_keys_unique(t);
	for (k = 0; k < n; k++) { /* each key its own again (the overflow bucket's 3 are spent) */
		snprintf(req, sizeof(req), "uid=n%u", k);
		fc_decide(t, req, T0, &res);
		assert_true(res.overflow || res.verdict == FC_L7_PASS);
		over -= res.overflow;
	}
	assert_int_equal(over, 0);
	assert_int_equal(t->ix.slots[1].keys, n - t->ix.slots[1].overflowed / 2);
}

/* n requests, one from each of n clients, fmt with 1..n (twice) for the
 * address: how many pass. */
static int fc_passes_each(struct fc_t *t, const char *fmt, const char *rest, int n)
{
	char req[160], ip[64];
	int i, passed = 0;

	for (i = 1; i <= n; i++) {
		snprintf(ip, sizeof(ip), fmt, i, i);
		snprintf(req, sizeof(req), "ip=%s %s", ip, rest);
		passed += fc_passes(t, req, T0, 1);
	}
	return passed;
}

/* A request delayed by a policy with no key has no key ($freqctl_key is the
 * deciding policy's), though a per-key policy passed it too. */
static void test_keys_delayed_unkeyed(void **state)
{
	struct fc_t *t = *state;
	struct fc_policy_spec p = { .id = 1 };
	struct fc_l7_result res;
	char key[64];

	fc_policy_put(t, &p, "uid=*", "100/s");
	p = (struct fc_policy_spec){ .id = 2, .action = FC_ACTION_DELAY, .delay_burst = 3 };
	fc_policy_put(t, &p, "uri=/d", "10/s:1");
	fc_publish(t);
	assert_int_equal(fc_build(t, t->base, t->size), 0);
	assert_int_equal(fc_decide_key(t, "uid=u1 uri=/d", T0, &res, key, sizeof(key)), FC_L7_PASS);
	assert_int_equal(res.key_len, 2); /* passed: the per-key policy's */
	assert_int_equal(fc_decide_key(t, "uid=u1 uri=/d", T0, &res, key, sizeof(key)), FC_L7_DELAYED);
	assert_int_equal(res.policy, 2);
	assert_int_equal(res.key_len, 0);
}

/* ip=* in nginx keys a client by its unit: an IPv6 /64 or an IPv4
 * address by default, the policy's lengths otherwise, alone or beside
 * other dimensions; $freqctl_key names the unit. */
static void test_keys_units(void **state)
{
	struct fc_t *t = *state;
	struct fc_policy_spec p = { .id = 1, .layer = FC_LAYER_HTTP };
	struct fc_l7_result res;
	char key[64];

	fc_policy_put(t, &p, "ip=*", "5/m");
	p = (struct fc_policy_spec){ .id = 2 };
	fc_policy_put(t, &p, "ip=*/24,uri=/login", "3/m");
	fc_publish(t);
	assert_int_equal(fc_build(t, t->base, t->size), 0);
	assert_int_equal(fc_passes_each(t, "2001:db8:1:2:%x::%x", "uri=/", 50), 5);
	assert_int_equal(fc_decide_key(t, "ip=2001:db8:1:2:ffff::77 uri=/", T0, &res, key, sizeof(key)),
			 FC_L7_REJECTED);
	assert_int_equal(res.key_len, strlen("2001:db8:1:2::/64"));
	assert_memory_equal(key, "2001:db8:1:2::/64", res.key_len);
	assert_int_equal(fc_passes_each(t, "2001:db8:1:3:%x::%x", "uri=/", 50), 5);
	assert_int_equal(fc_passes(t, "ip=198.18.7.1 uri=/", T0, 8), 5);
	assert_int_equal(fc_passes(t, "ip=198.18.7.2 uri=/", T0, 8), 5);
	assert_int_equal(fc_decide_key(t, "ip=198.18.7.1 uri=/", T0, &res, key, sizeof(key)), FC_L7_REJECTED);
	assert_int_equal(res.key_len, strlen("198.18.7.1"));
	assert_memory_equal(key, "198.18.7.1", res.key_len);
	/* ip=* per /24 on /login, beside ip=* per address. */
	assert_int_equal(fc_passes_each(t, "198.18.8.%d", "uri=/login", 50), 3);
	assert_int_equal(fc_decide_key(t, "ip=198.18.8.99 uri=/login", T0, &res, key, sizeof(key)), FC_L7_REJECTED);
	assert_int_equal(res.key_len, strlen("198.18.8.0/24"));
	assert_memory_equal(key, "198.18.8.0/24", res.key_len);
	assert_int_equal(fc_passes_each(t, "198.18.9.%d", "uri=/login", 50), 3);
	/* Per address again: the /64's 50 addresses, 50 buckets. */
	p = (struct fc_policy_spec){ .id = 1, .layer = FC_LAYER_HTTP };
	fc_policy_put(t, &p, "ip=*/32/128", "5/m");
	fc_publish(t);
	assert_int_equal(fc_build(t, t->base, t->size), 0);
	assert_int_equal(fc_passes_each(t, "2001:db8:1:2:%x::%x", "uri=/", 50), 50);
	assert_int_equal(fc_decide_key(t, "ip=2001:db8:1:2::1 uri=/", T0, &res, key, sizeof(key)), FC_L7_PASS);
	assert_int_equal(res.key_len, strlen("2001:db8:1:2::1"));
}

/* n requests at now, one from each of n clients (fmt as above): how many
 * went to the policy's overflow bucket. */
static int fc_overflowed_each(struct fc_t *t, const char *fmt, int n, uint64_t now)
{
	struct fc_l7_result res;
	char req[160], ip[64];
	int i, over = 0;

	for (i = 1; i <= n; i++) {
		snprintf(ip, sizeof(ip), fmt, i, i);
		snprintf(req, sizeof(req), "ip=%s uri=/", ip);
		fc_decide(t, req, now, &res);
		over += res.overflow;
	}
	return over;
}

/* --new-keys counts an ip=* policy's units in nginx, as --new-sources does
 * at XDP/TC: 50 addresses of one /64 are one new key, 50 /64s are 50, past
 * the cap the overflow bucket's. */
static void test_keys_new_in_units(void **state)
{
	struct fc_t *t = *state;
	struct fc_policy_spec p = { .id = 1, .layer = FC_LAYER_HTTP, .new_keys = 5 };

	fc_policy_put(t, &p, "ip=*", "100/m");
	fc_publish(t);
	assert_int_equal(fc_build(t, t->base, t->size), 0);
	assert_int_equal(fc_overflowed_each(t, "2001:db8:1:2:%x::%x", 50, T0), 0);
	assert_int_equal(t->ix.slots[1].keys, 1);
	/* 50 /64s: 4 more keys (the cap's 5 a second, a second's worth at
	 * once), then the overflow bucket. */
	assert_int_equal(fc_overflowed_each(t, "2001:db8:2:%x::%x", 50, T0), 46);
	assert_int_equal(t->ix.slots[1].keys, 5);
	/* Per address, the same 50 addresses of one /64 are 50 new keys. */
	p = (struct fc_policy_spec){ .id = 1, .layer = FC_LAYER_HTTP, .new_keys = 5 };
	fc_policy_put(t, &p, "ip=*/32/128", "100/m");
	fc_publish(t);
	assert_int_equal(fc_build(t, t->base, t->size), 0);
	assert_int_equal(fc_overflowed_each(t, "2001:db8:7:2:%x::%x", 50, T0 + 3600 * SEC), 45);
}

/* Keys of their own; a request without the dimension is not matched; the
 * deciding key is named; a changed limit keeps the keys, a deleted policy's
 * keys are taken back by others. */
static void test_keys_basics(void **state)
{
	struct fc_t *t = *state;
	struct fc_l7_result res;
	char key[64];

	fc_policy(t, 1, "uid=*,arg:api=login", "2/m", "drop", 0, 0);
	fc_policy(t, 2, "ip=*,header:x-k=*", "1/m", "drop", 0, 0);
	fc_publish(t);
	assert_int_equal(fc_build(t, t->base, t->size), 0);
	assert_int_equal(fc_passes(t, "uid=a arg:api=login", T0, 5), 2);
	assert_int_equal(fc_passes(t, "uid=b arg:api=login", T0, 5), 2);
	assert_int_equal(fc_passes(t, "uid=a arg:api=other", T0, 5), 5);
	assert_int_equal(fc_passes(t, "arg:api=login", T0, 5), 5); /* no uid */
	assert_int_equal(fc_decide_key(t, "uid=a arg:api=login", T0, &res, key, sizeof(key)), FC_L7_REJECTED);
	assert_int_equal(res.key_len, 1);
	assert_memory_equal(key, "a", 1);
	/* Per address and header value; both occurrences of a header make the key. */
	assert_int_equal(fc_passes(t, "ip=198.18.0.1 header:x-k=v", T0, 3), 1);
	assert_int_equal(fc_passes(t, "ip=198.18.0.2 header:x-k=v", T0, 3), 1);
	assert_int_equal(fc_passes(t, "ip=198.18.0.1 header:x-k=v header:x-k=w", T0, 3), 1);
	fc_decide_key(t, "ip=2001:db8::7 header:x-k=v", T0, &res, key, sizeof(key));
	assert_int_equal(fc_decide_key(t, "ip=2001:db8::7 header:x-k=v", T0, &res, key, sizeof(key)), FC_L7_REJECTED);
	assert_int_equal(res.key_len, strlen("2001:db8::/64,v")); /* an IPv6 client's unit, its /64 */
	assert_memory_equal(key, "2001:db8::/64,v", res.key_len);
	/* A changed limit keeps every key; a wider one admits what it adds. */
	fc_policy(t, 1, "uid=*,arg:api=login", "3/m", "drop", 0, 0);
	fc_publish(t);
	assert_int_equal(fc_build(t, t->base, t->size), 0);
	assert_int_equal(fc_passes(t, "uid=a arg:api=login", T0 + 21 * SEC, 5), 1);
}

/* Every dimension keys (an argument, the uri, a uid under a uri prefix),
 * and what a policy does, it does per key: a fixed window counts the key's
 * requests, a delay queues behind the key's own requests, a log policy
 * counts what the key's bucket would deny, and a refusal's RateLimit
 * figures and Retry-After are its key's. */
static void test_keys_kinds(void **state)
{
	struct fc_policy_spec w = { .id = 7, .algo = FC_ALGO_WINDOW };
	struct fc_t *t = *state;
	struct fc_l7_result res;
	char key[64];

	fc_policy(t, 1, "arg:key=*", "2/m", "drop", 0, 0);
	fc_policy(t, 2, "uri=*,arg:u=1", "1/m", "drop", 0, 0);
	fc_policy(t, 3, "uid=*,uri=/api/*", "2/m", "drop", 0, 0);
	fc_policy(t, 4, "uid=*,arg:d=1", "10/s", "delay", 1, 3);
	fc_policy(t, 5, "uid=*,arg:l=1", "1/m", "log", 0, 0);
	fc_policy(t, 6, "uid=*,arg:r=1", "3/m", "drop", 0, 0);
	fc_policy_put(t, &w, "uid=*,arg:w=1", "2/m");
	fc_publish(t);
	assert_int_equal(fc_build(t, t->base, t->size), 0);
	assert_int_equal(fc_passes(t, "arg:key=a", T0, 5), 2);
	assert_int_equal(fc_passes(t, "arg:key=b", T0, 5), 2);
	assert_int_equal(fc_passes(t, "uid=q", T0, 5), 5);
	assert_int_equal(fc_passes(t, "uri=/a arg:u=1", T0, 3), 1);
	assert_int_equal(fc_passes(t, "uri=/b arg:u=1", T0, 3), 1);
	assert_int_equal(fc_passes(t, "uid=u1 uri=/api/x", T0, 5), 2);
	assert_int_equal(fc_passes(t, "uid=u1 uri=/api/y", T0, 5), 0); /* the prefix is not a key part */
	assert_int_equal(fc_passes(t, "uid=u2 uri=/api/y", T0, 5), 2);
	assert_int_equal(fc_passes(t, "uid=u1 uri=/apix", T0, 5), 5);

	assert_int_equal(fc_decide(t, "uid=a arg:d=1", T0, &res), FC_L7_PASS);
	assert_int_equal(fc_decide(t, "uid=a arg:d=1", T0, &res), FC_L7_DELAYED);
	assert_int_equal(res.delay_ns, SEC / 10);
	assert_int_equal(fc_decide(t, "uid=b arg:d=1", T0, &res), FC_L7_PASS);

	assert_int_equal(fc_decide(t, "uid=a arg:l=1", T0, &res), FC_L7_PASS);
	assert_int_equal(res.would_deny, 0);
	assert_int_equal(fc_decide(t, "uid=a arg:l=1", T0, &res), FC_L7_PASS);
	assert_int_equal(res.would_deny, 1);
	assert_int_equal(fc_decide(t, "uid=b arg:l=1", T0, &res), FC_L7_PASS);
	assert_int_equal(res.would_deny, 0);
	/* A request only a log policy matched: that policy's key, for the log. */
	fc_decide_key(t, "uid=a arg:l=1", T0, &res, key, sizeof(key));
	assert_int_equal(res.would_deny, 1);
	assert_int_equal(res.key_len, 1);
	assert_memory_equal(key, "a", 1);
	/* A passed request: its first per-key policy's key, though empty (an
	 * empty argument is a value), not a later policy's. */
	assert_int_equal(fc_decide_key(t, "uid=u9 uri=/api/z arg:key=", T0, &res, key, sizeof(key)), FC_L7_PASS);
	assert_int_equal(res.policy, 0);
	assert_int_equal(res.key_len, 0);

	assert_int_equal(fc_passes(t, "uid=a arg:r=1", T0, 3), 3);
	assert_int_equal(fc_decide(t, "uid=a arg:r=1", T0 + 5 * SEC, &res), FC_L7_REJECTED);
	assert_int_equal(res.policy, 6);
	assert_int_equal(res.limit, 3);
	assert_int_equal(res.window_s, 60);
	assert_int_equal(res.remaining, 0);
	assert_int_equal(res.retry_ns, 15 * SEC);
	assert_int_equal(fc_passes(t, "uid=b arg:r=1", T0 + 5 * SEC, 4), 3);

	assert_int_equal(fc_passes(t, "uid=a arg:w=1", T0 + 59 * SEC, 4), 2); /* T0 starts a minute */
	assert_int_equal(fc_passes(t, "uid=b arg:w=1", T0 + 59 * SEC, 4), 2);
	assert_int_equal(fc_passes(t, "uid=a arg:w=1", T0 + 60 * SEC, 4), 2); /* the next window */
}

/* A window of live keys of another policy: the request shares the
 * overflow bucket; once they are idle, it gets a key of its own. */
static void test_keys_full_and_idle(void **state)
{
	struct fc_t *t = *state;
	struct fc_l7_result res;
	struct fc_shm_key *keys;
	int i;

	fc_policy(t, 1, "uid=*", "2/m", "drop", 0, 0);
	fc_publish(t);
	assert_int_equal(fc_build(t, t->base, t->size), 0);
	keys = t->ix.keys;
	/* Every entry taken by a key of policy 1 that holds state for an hour. */
	for (i = 0; i < (int)FC_SHM_KEYS; i++) {
		keys[i].tag = FC_SHM_KEY_TAG_MIN + (uint64_t)i;
		keys[i].slot = t->ix.pol[0].slot;
		keys[i].epoch = t->ix.pol[0].epoch;
		keys[i].idle_ns = T0 + 3600 * SEC;
	}
	assert_int_equal(fc_passes(t, "uid=x", T0, 5), 2); /* the overflow bucket: 2/m for all */
	assert_int_equal(fc_passes(t, "uid=y", T0, 5), 0);
	assert_true(t->ix.slots[1].overflowed >= 10);
	fc_decide(t, "uid=y", T0, &res);
	assert_true(res.overflow);
	/* An hour later they carry nothing: keys of their own again. */
	assert_int_equal(fc_passes(t, "uid=x", T0 + 3601 * SEC, 5), 2);
	assert_int_equal(fc_passes(t, "uid=y", T0 + 3601 * SEC, 5), 2);
	fc_decide(t, "uid=y", T0 + 3601 * SEC, &res);
	assert_false(res.overflow);
}

/* A key argument given twice keys nothing: junk copies beside the value
 * the backend reads would make fresh buckets. It takes the overflow bucket. */
static void test_keys_repeated(void **state)
{
	struct fc_t *t = *state;
	char req[64];
	int i, passed = 0;

	fc_policy(t, 1, "header:x-k=*", "2/m", "drop", 0, 0);
	fc_publish(t);
	assert_int_equal(fc_build(t, t->base, t->size), 0);
	for (i = 0; i < 50; i++) {
		snprintf(req, sizeof(req), "header:x-k=victim header:x-k=junk%d", i);
		passed += fc_passes(t, req, T0, 1);
	}
	assert_int_equal(passed, 2); /* the overflow bucket's 2/m, not 2 per junk copy */
	assert_int_equal(t->ix.slots[1].keys, 0);
}

/* Policy 1, uid=* 2/m with --max-keys max_keys, published and mapped. */
static void fc_keyed_policy(struct fc_t *t, uint32_t max_keys)
{
	struct fc_policy_spec p = { .id = 1, .max_keys = max_keys };
	struct fc_policy_row row;
	struct fc_err err;

	assert_int_equal(fc_match_parse("uid=*", &p, &err), 0);
	assert_int_equal(fc_rates_parse("2/m", &p, &err), 0);
	assert_int_equal(fc_store_policy_put(t->st, &p, 1, &row, &err), 0);
	fc_publish(t);
	assert_int_equal(fc_build(t, t->base, t->size), 0);
}

/* --max-keys counts live keys: a policy at its cap takes back its own idle
 * keys for new ones. */
static void test_keys_max(void **state)
{
	struct fc_t *t = *state;
	struct fc_l7_result res;
	struct fc_err err;
	char req[32];
	int i;

	fc_keyed_policy(t, 2);
	assert_int_equal(fc_passes(t, "uid=a", T0, 1), 1);
	assert_int_equal(fc_passes(t, "uid=b", T0, 1), 1);
	fc_decide(t, "uid=c", T0, &res);
	assert_true(res.overflow); /* the third key, at the cap */
	/* An hour on, a and b are idle; the agent's recount frees their room. */
	assert_int_equal(fc_state_keys_recount(t->shm, 0, T0 + 3600 * SEC, &err), 0);
	assert_int_equal(t->ix.slots[1].keys, 0);
	for (i = 0; i < 10; i++) { /* new keys, each idle before the next: all get buckets */
		snprintf(req, sizeof(req), "uid=n%d", i);
		fc_decide(t, req, T0 + 3600 * SEC + (uint64_t)i * 200 * SEC, &res);
		assert_false(res.overflow);
		assert_int_equal(fc_state_keys_recount(t->shm, 0, T0 + 3600 * SEC + (uint64_t)i * 200 * SEC + 100 * SEC,
						       &err), 0);
	}
}

/* pread, wrapped (-Wl,--wrap=pread): fc_pread_hook runs once, right after
 * the read of the state file at fc_pread_hook_off, as a worker would in
 * the middle of the agent's reading. */
ssize_t __real_pread(int fd, void *buf, size_t len, off_t off);
static void (*fc_pread_hook)(void *arg);
static void *fc_pread_hook_arg;
static off_t fc_pread_hook_off;

ssize_t __wrap_pread(int fd, void *buf, size_t len, off_t off);
ssize_t __wrap_pread(int fd, void *buf, size_t len, off_t off)
{
	ssize_t r = __real_pread(fd, buf, len, off);
	void (*hook)(void *) = fc_pread_hook;

	if (hook && off == fc_pread_hook_off) {
		fc_pread_hook = NULL;
		hook(fc_pread_hook_arg);
	}
	return r;
}

static void fc_late_key(void *arg)
{
	struct fc_l7_result res;

	fc_decide(arg, "uid=late", T0 + 3600 * SEC, &res);
	assert_false(res.overflow);
}

/* A key a worker makes while the agent's recount reads the table is not
 * written out of the count, though the scan had passed where it landed:
 * the recount of an hour later would otherwise set the count to the 0
 * live keys it found, and the new one would go uncounted. */
static void test_keys_recount_race(void **state)
{
	struct fc_t *t = *state;
	struct fc_err err;
	struct stat sb;

	fc_keyed_policy(t, 10);
	assert_int_equal(fc_passes(t, "uid=a", T0, 1), 1);
	assert_int_equal(fc_passes(t, "uid=b", T0, 1), 1);
	assert_int_equal(t->ix.slots[1].keys, 2);
	/* After the table's last chunk is read. */
	assert_int_equal(stat(t->state_path, &sb), 0);
	fc_pread_hook_off = (off_t)(FC_STATE_KEYS_OFF + (fc_state_nkeys((uint64_t)sb.st_size) - FC_SHM_KEYS_MIN) *
						       sizeof(struct fc_shm_key));
	fc_pread_hook_arg = t;
	fc_pread_hook = fc_late_key;
	assert_int_equal(fc_state_keys_recount(t->shm, 0, T0 + 3600 * SEC, &err), 0);
	assert_null(fc_pread_hook); /* it ran */
	assert_int_equal(t->ix.slots[1].keys, 3); /* left for the next recount */
	/* The next, with nothing made meanwhile: a and b idle, the late one live. */
	assert_int_equal(fc_state_keys_recount(t->shm, 0, T0 + 3600 * SEC, &err), 0);
	assert_int_equal(t->ix.slots[1].keys, 1);
}

/* A worker caught between adding a new key to its policy's count and
 * tagging the key's entry: the recount sees a busy entry, not the key, and
 * leaves the count for the next recount rather than write it one short.
 * An entry a killed worker left busy does not hold the count up for long. */
static void test_keys_recount_busy(void **state)
{
	struct fc_t *t = *state;
	const struct fc_l7_policy *p;
	struct fc_shm_key *e;
	struct fc_err err;
	uint32_t i;

	fc_policy(t, 1, "uid=*", "2/m", "drop", 0, 0);
	fc_publish(t);
	assert_int_equal(fc_build(t, t->base, t->size), 0);
	p = &t->ix.pol[0];
	assert_int_equal(fc_passes(t, "uid=a", T0, 1), 1);
	assert_int_equal(fc_passes(t, "uid=b", T0, 1), 1);
	assert_int_equal(t->ix.slots[p->slot].keys, 2);
	/* The third key's entry as fc_key_walk leaves it before its last store. */
	for (i = 0; t->ix.keys[i].tag; i++)
		;
	e = &t->ix.keys[i];
	e->slot = p->slot;
	e->epoch = p->epoch;
	e->idle_ns = T0 + 3600 * SEC;
	e->tag = (T0 / SEC) | 1;
	t->ix.slots[p->slot].keys = 3;
	assert_int_equal(fc_state_keys_recount(t->shm, 0, T0 + SEC, &err), 0);
	assert_int_equal(t->ix.slots[p->slot].keys, 3);
	/* Tagged: the three are counted. */
	e->tag = FC_SHM_KEY_TAG_MIN | 3;
	assert_int_equal(fc_state_keys_recount(t->shm, 0, T0 + SEC, &err), 0);
	assert_int_equal(t->ix.slots[p->slot].keys, 3);
	/* Left busy for good: once it is stale, only the two keys count. */
	e->tag = (T0 / SEC) | 1;
	assert_int_equal(fc_state_keys_recount(t->shm, 0, T0 + FC_SHM_KEY_STALE * SEC + SEC, &err), 0);
	assert_int_equal(t->ix.slots[p->slot].keys, 2);
}

/* The key table is the workers' to write, so anything may be in it:
 * garbage everywhere, entries stuck mid-setup. Decisions neither crash nor
 * read out of bounds (ASan), and a key still admits no more than its limit. */
static void test_keys_corrupt(void **state)
{
	struct fc_t *t = *state;
	uint64_t x = 88172645463325252ULL;
	uint8_t *b;
	size_t i, n;

	fc_policy(t, 1, "uid=*", "2/m", "drop", 0, 0);
	fc_publish(t);
	assert_int_equal(fc_build(t, t->base, t->size), 0);
	b = (uint8_t *)t->ix.keys;
	n = 4u << 20; /* the first 4 MiB of the table */
	for (i = 0; i < n; i++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		b[i] = (uint8_t)x;
	}
	for (i = 0; i < 64; i++) /* entries left "being set up": just now, and by a worker long dead */
		t->ix.keys[(x >> 8) % 65536 + i].tag = i % 2 ? T0 / SEC : 5;
	for (i = 0; i < 2000; i++) {
		char req[32];

		snprintf(req, sizeof(req), "uid=g%zu", i);
		assert_true(fc_passes(t, req, T0, 3) <= 2);
	}
}

/* --shm-keys: the table's size is the state file's; a publish keeps it
 * unless told another, which starts it afresh; a size that is no table is
 * refused (requests pass). */
static void test_keys_table_size(void **state)
{
	struct fc_t *t = *state;
	char req[32];
	int i, passed = 0;

	t->keys = FC_SHM_KEYS_MIN;
	fc_policy(t, 1, "uid=*", "1/m", "drop", 0, 0);
	fc_publish(t);
	assert_int_equal(t->state_size, FC_STATE_SIZE_FOR(FC_SHM_KEYS_MIN));
	assert_int_equal(fc_build(t, t->base, t->size), 0);
	assert_int_equal(t->ix.nkeys, FC_SHM_KEYS_MIN);
	/* 600 uids: half the table (the default --max-keys) get a bucket,
	 * the rest share the overflow bucket (1/m for all of them). */
	for (i = 0; i < 600; i++) {
		snprintf(req, sizeof(req), "uid=u%d", i);
		passed += fc_passes(t, req, T0, 1);
	}
	assert_int_equal(t->ix.slots[t->ix.pol[0].slot].keys, FC_SHM_KEYS_MIN / 2);
	assert_int_equal(passed, FC_SHM_KEYS_MIN / 2 + 1);
	assert_int_equal(fc_passes(t, "uid=u0", T0, 1), 0); /* spent */

	t->keys = 0; /* kept, with its keys */
	fc_publish(t);
	assert_int_equal(t->state_size, FC_STATE_SIZE_FOR(FC_SHM_KEYS_MIN));
	assert_int_equal(fc_build(t, t->base, t->size), 0);
	assert_int_equal(fc_passes(t, "uid=u0", T0, 1), 0);

	t->keys = 2 * FC_SHM_KEYS_MIN; /* another size: made anew */
	fc_publish(t);
	assert_int_equal(t->state_size, FC_STATE_SIZE_FOR(2 * FC_SHM_KEYS_MIN));
	assert_int_equal(fc_build(t, t->base, t->size), 0);
	assert_int_equal(t->ix.nkeys, 2 * FC_SHM_KEYS_MIN);
	assert_int_equal(fc_passes(t, "uid=u0", T0, 1), 1);

	/* Sizes that are no table: not a power of two, too small, ragged. */
	assert_int_not_equal(fc_l7_build(t->base, t->size, t->state, FC_STATE_SIZE_FOR(3 * FC_SHM_KEYS_MIN / 2), &t->ix,
					 &(struct fc_l7_alloc){ fc_arena_alloc, &t->arena }), 0);
	assert_int_not_equal(fc_l7_build(t->base, t->size, t->state, FC_STATE_SIZE_FOR(FC_SHM_KEYS_MIN / 2), &t->ix,
					 &(struct fc_l7_alloc){ fc_arena_alloc, &t->arena }), 0);
	assert_int_not_equal(fc_l7_build(t->base, t->size, t->state, FC_STATE_SIZE_FOR(FC_SHM_KEYS_MIN) + 8, &t->ix,
					 &(struct fc_l7_alloc){ fc_arena_alloc, &t->arena }), 0);
	assert_int_equal(fc_state_nkeys(FC_STATE_SIZE_FOR(FC_SHM_KEYS_MAX)), FC_SHM_KEYS_MAX);
	assert_int_equal(fc_state_nkeys(FC_STATE_SIZE_FOR(2ULL * FC_SHM_KEYS_MAX)), 0);
}

/* ---- the value table (--show-keys) ---- */

/* The tag of policy id's one key (it must have exactly one). */
static uint64_t fc_only_tag(struct fc_t *t, uint32_t id)
{
	const struct fc_l7_policy *p = fc_ix_policy(t, id);
	struct fc_keys_top top;
	struct fc_err err;
	uint64_t tag;

	assert_int_equal(fc_state_keys_top(t->shm, 0, p->slot, p->epoch, T0, 2, &top, &err), 0);
	assert_int_equal(top.n, 1);
	tag = top.v[0].tag;
	free(top.v);
	return tag;
}

/* The value root reads for policy id's key tag, escaped as freqctl shows
 * it, into out; false if none is shown. */
static bool fc_shown_value(struct fc_t *t, uint32_t id, uint64_t tag, char *out, bool *cut)
{
	struct fc_policy_row row;
	struct fc_enforced e;
	struct fc_shm_val *vals = malloc(FC_SHM_VALS * sizeof(*vals));
	struct fc_err err;
	bool found, has;
	int fd;

	assert_non_null(vals);
	assert_int_equal(fc_store_policy_get(t->st, id, &row, &found, &err), 0);
	assert_true(found);
	fc_policy_enforced(&row, &(struct fc_node_ctx){ .weight = 1, .ncpus = 1, .tick_ns = 1 }, NULL, &e);
	fd = fc_state_open(t->shm, &err);
	assert_true(fd >= 0);
	fc_state_vals(fd, vals);
	close(fd);
	has = fc_key_value(&row, &e, vals, tag, out, cut);
	free(vals);
	return has;
}

/* Entries of the value table in use (a tag). */
static int fc_vals_used(struct fc_t *t)
{
	int i, n = 0;

	for (i = 0; i < (int)FC_SHM_VALS; i++)
		n += t->ix.vals[i].tag >= FC_SHM_KEY_TAG_MIN;
	return n;
}

/* A policy that opts in keeps a busy key's value: written at its 64th pass
 * (none before), at a key's first refusal, cut at 64 bytes, shown escaped;
 * a policy that does not say keeps none, a header's keys included. */
static void test_vals_noted(void **state)
{
	struct fc_policy_spec a = { .id = 1, .show_keys = 1 }, b = { .id = 2 }, c = { .id = 3, .show_keys = 1 },
			      d = { .id = 4, .show_keys = -1 }, e = { .id = 5, .show_keys = 1 };
	struct fc_t *t = *state;
	char v[FC_KEY_VALUE_LEN], req[160], big[101];
	uint64_t tag;
	bool cut;
	int i;

	fc_policy_put(t, &a, "uid=*,arg:a=1", "1000/s");
	fc_policy_put(t, &b, "header:x-key=*", "1000/s");
	fc_policy_put(t, &c, "arg:k=*", "2/m");
	fc_policy_put(t, &d, "uid=*,arg:d=1", "1000/s");
	fc_policy_put(t, &e, "arg:e=*", "1000/s");
	fc_publish(t);
	assert_int_equal(fc_build(t, t->base, t->size), 0);
	assert_true(fc_ix_policy(t, 1)->show_keys);
	assert_false(fc_ix_policy(t, 2)->show_keys);
	assert_int_equal(fc_passes(t, "uid=alice arg:a=1 header:x-key=s3cret", T0, 63), 63);
	assert_int_equal(fc_vals_used(t), 0);
	tag = fc_only_tag(t, 1);
	assert_false(fc_shown_value(t, 1, tag, v, &cut));
	assert_int_equal(fc_passes(t, "uid=alice arg:a=1 header:x-key=s3cret", T0, 1), 1);
	assert_int_equal(fc_vals_used(t), 1);
	assert_true(fc_shown_value(t, 1, tag, v, &cut));
	assert_string_equal(v, "alice");
	assert_false(cut);
	/* 64 requests of the header's key: its value is nowhere. */
	assert_false(fc_shown_value(t, 2, fc_only_tag(t, 2), v, &cut));
	for (i = 0; i < (int)FC_SHM_VALS; i++)
		assert_null(memmem(t->ix.vals[i].value, sizeof(t->ix.vals[i].value), "s3cret", 6));
	/* Said off: none either. */
	assert_int_equal(fc_passes(t, "uid=dave arg:d=1", T0, 64), 64);
	assert_int_equal(fc_vals_used(t), 1);
	/* The first refusal. */
	assert_int_equal(fc_passes(t, "arg:k=bob", T0, 3), 2);
	assert_true(fc_shown_value(t, 3, fc_only_tag(t, 3), v, &cut));
	assert_string_equal(v, "bob");
	/* A long key is cut at 64 bytes. */
	memset(big, 'x', 100);
	big[100] = '\0';
	snprintf(req, sizeof(req), "arg:e=%s", big);
	assert_int_equal(fc_passes(t, req, T0, 64), 64);
	assert_true(fc_shown_value(t, 5, fc_only_tag(t, 5), v, &cut));
	assert_int_equal(strlen(v), FC_SHM_VAL_MAX);
	assert_memory_equal(v, big, FC_SHM_VAL_MAX);
	assert_true(cut);
}

/* Bytes a client chose, shown as what they are and nothing more: quotes
 * and backslashes escaped, controls, DEL, C1 and bidirectional controls
 * and what is not UTF-8 as \xNN, UTF-8 text as it is; the text is valid
 * UTF-8 and as long as it fits without cutting an escape. */
static void test_vals_escape(void **state)
{
	static const struct {
		const char *in, *out;
	} v[] = {
		{ "alice", "alice" },
		{ "a\"b\\c", "a\\\"b\\\\c" },
		{ "\x01\n\x1b[31m\x7f", "\\x01\\x0a\\x1b[31m\\x7f" },
		{ "jos\xc3\xa9 \xe2\x82\xac", "jos\xc3\xa9 \xe2\x82\xac" },
		{ "\xff\xc3(\xed\xa0\x80", "\\xff\\xc3(\\xed\\xa0\\x80" },    /* not UTF-8: a lone lead, a surrogate */
		{ "\xc2\x85x\xe2\x80\xaey", "\\xc2\\x85x\\xe2\\x80\\xaey" }, /* NEL, RIGHT-TO-LEFT OVERRIDE */
		{ "\xf0\x9f\x98\x80\xe2\x82", "\xf0\x9f\x98\x80\\xe2\\x82" }, /* a character cut at the end */
	};
	char out[FC_ESCAPED_LEN(16)];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		assert_int_equal(fc_escape(v[i].in, strlen(v[i].in), out, sizeof(out)), strlen(v[i].out));
		assert_string_equal(out, v[i].out);
	}
	/* What does not fit is left out whole. */
	assert_int_equal(fc_escape("ab\x01", 3, out, 5), 2);
	assert_string_equal(out, "ab");
	assert_int_equal(fc_escape("ab\x01", 3, out, 7), 6);
	assert_int_equal(fc_escape("\"", 1, out, 2), 0);
	assert_int_equal(fc_escape("x", 1, out, 0), 0);
}

/* A key's set full of busier keys: its value waits. An entry not
 * refreshed for FC_SHM_VAL_STALE seconds is taken, as is one a killed
 * worker left busy; one a worker is writing now is not. */
static void test_vals_set(void **state)
{
	struct fc_policy_spec a = { .id = 1, .show_keys = 1 };
	struct fc_t *t = *state;
	const struct fc_l7_policy *p;
	struct fc_shm_val *set;
	char v[FC_KEY_VALUE_LEN];
	uint64_t tag;
	bool cut;
	int i;

	fc_policy_put(t, &a, "uid=*", "1000/s");
	fc_publish(t);
	assert_int_equal(fc_build(t, t->base, t->size), 0);
	p = fc_ix_policy(t, 1);
	assert_int_equal(fc_passes(t, "uid=carol", T0, 1), 1);
	tag = fc_only_tag(t, 1);
	set = &t->ix.vals[fc_shm_val_set(tag)];
	for (i = 0; i < FC_SHM_VAL_WAYS; i++)
		set[i] = (struct fc_shm_val){ .tag = FC_SHM_KEY_TAG_MIN + 100 + (uint64_t)i, .slot = p->slot,
					      .epoch = p->epoch, .score = 1000, .secs = (uint32_t)(T0 / SEC), .len = 1,
					      .value = "b" };
	assert_int_equal(fc_passes(t, "uid=carol", T0, 63), 63); /* its 64th: 64 is worth less than 1000 */
	assert_false(fc_shown_value(t, 1, tag, v, &cut));
	set[1].secs = (uint32_t)(T0 / SEC - FC_SHM_VAL_STALE);
	assert_int_equal(fc_passes(t, "uid=carol", T0, 64), 64);
	assert_int_equal(set[1].tag, tag);
	assert_int_equal(set[1].score, 128);
	assert_true(fc_shown_value(t, 1, tag, v, &cut));
	assert_string_equal(v, "carol");
	assert_memory_equal(set[1].value, "carol\0\0", 7); /* nothing of the value before */
	for (i = 0; i < FC_SHM_VAL_WAYS; i++)
		assert_true(i == 1 || set[i].tag == FC_SHM_KEY_TAG_MIN + 100 + (uint64_t)i);
	/* Refreshed in place at its next 64. */
	set[1].secs = 0;
	assert_int_equal(fc_passes(t, "uid=carol", T0 + SEC, 64), 64);
	assert_int_equal(set[1].secs, T0 / SEC + 1);
	assert_int_equal(set[1].score, 192);
	/* Being written by a worker now: not taken. */
	set[1].tag = (T0 / SEC) | 1;
	assert_int_equal(fc_passes(t, "uid=carol", T0 + SEC, 64), 64);
	assert_false(fc_shown_value(t, 1, tag, v, &cut));
	assert_int_equal(set[1].tag, (T0 / SEC) | 1);
	/* Left busy by a worker killed long ago: taken. */
	set[1].tag = 5;
	assert_int_equal(fc_passes(t, "uid=carol", T0 + SEC, 64), 64);
	assert_true(fc_shown_value(t, 1, tag, v, &cut));
}

static void fc_val_rewrite(void *arg)
{
	((struct fc_shm_val *)arg)->value[0] = 'X';
}

/* Root reads the value table as the workers' bytes: an entry a worker
 * changed between its two reads is not shown (it may be half of each), and
 * nothing out of bounds is: a length past 64, no tag, no policy slot. A
 * key's value is found only for that key of that policy. */
static void test_vals_hostile(void **state)
{
	struct fc_policy_spec a = { .id = 1, .show_keys = 1 }, b = { .id = 2, .show_keys = 1 };
	struct fc_shm_val *vals = malloc(FC_SHM_VALS * sizeof(*vals)), *ea;
	const struct fc_l7_policy *p1, *p2;
	struct fc_t *t = *state;
	uint64_t ta, tb;
	struct fc_err err;
	int fd, i;

	assert_non_null(vals);
	fc_policy_put(t, &a, "uid=*,arg:a=1", "1000/s");
	fc_policy_put(t, &b, "uid=*,arg:b=1", "1000/s");
	fc_publish(t);
	assert_int_equal(fc_build(t, t->base, t->size), 0);
	p1 = fc_ix_policy(t, 1);
	p2 = fc_ix_policy(t, 2);
	assert_int_equal(fc_passes(t, "uid=alice arg:a=1", T0, 64), 64);
	assert_int_equal(fc_passes(t, "uid=bob arg:b=1", T0, 64), 64);
	ta = fc_only_tag(t, 1);
	tb = fc_only_tag(t, 2);
	ea = (struct fc_shm_val *)fc_state_val_of(t->ix.vals, ta, p1->slot, p1->epoch);
	assert_non_null(ea);
	fc_pread_hook_off = (off_t)FC_STATE_VALS_OFF;
	fc_pread_hook_arg = ea;
	fc_pread_hook = fc_val_rewrite;
	fd = fc_state_open(t->shm, &err);
	assert_true(fd >= 0);
	fc_state_vals(fd, vals);
	assert_null(fc_pread_hook); /* it ran */
	assert_null(fc_state_val_of(vals, ta, p1->slot, p1->epoch));
	assert_non_null(fc_state_val_of(vals, tb, p2->slot, p2->epoch));
	/* Settled: shown as it is now. */
	fc_state_vals(fd, vals);
	assert_memory_equal(fc_state_val_of(vals, ta, p1->slot, p1->epoch)->value, "Xlice", 5);
	/* Another policy's key, or another key, finds nothing. */
	assert_null(fc_state_val_of(vals, ta, p2->slot, p2->epoch));
	assert_null(fc_state_val_of(vals, ta ^ 0x100, p1->slot, p1->epoch));
	/* Out of bounds: not taken. */
	ea->len = FC_SHM_VAL_MAX + 1;
	fc_state_vals(fd, vals);
	assert_null(fc_state_val_of(vals, ta, p1->slot, p1->epoch));
	ea->len = 5;
	ea->slot = FC_SHM_SLOTS;
	fc_state_vals(fd, vals);
	assert_null(fc_state_val_of(vals, ta, FC_SHM_SLOTS, p1->epoch));
	/* Garbage everywhere: what is kept is whole. */
	for (i = 0; i < (int)(FC_SHM_VALS * sizeof(*vals)); i++)
		((uint8_t *)t->ix.vals)[i] = (uint8_t)(i * 131 + (i >> 7));
	fc_state_vals(fd, vals);
	for (i = 0; i < (int)FC_SHM_VALS; i++)
		assert_true(!vals[i].tag || (vals[i].tag >= FC_SHM_KEY_TAG_MIN && vals[i].len <= FC_SHM_VAL_MAX &&
					     vals[i].slot && vals[i].slot < FC_SHM_SLOTS));
	close(fd);
	free(vals);
}

static int fc_busier_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? 1 : x > y ? -1 : 0;
}

/* freqctl keys' read of the table: the busiest N of a policy's keys in
 * memory for N, most first, as a full sort would give them, with the
 * policy's count of keys and live ones; and a state file of another size
 * than the shm names is refused, naming both sizes. */
static void test_keys_top(void **state)
{
	struct fc_t *t = *state;
	uint64_t want[300], now = T0 + 3600 * SEC;
	struct fc_keys_top top;
	struct fc_err err;
	uint32_t slot, epoch;
	char req[32], msg[256];
	size_t i, n;

	t->keys = FC_SHM_KEYS_MIN;
	fc_policy(t, 1, "uid=*", "5/m", "drop", 0, 0);
	fc_publish(t);
	assert_int_equal(fc_build(t, t->base, t->size), 0);
	slot = t->ix.pol[0].slot;
	epoch = t->ix.pol[0].epoch;
	for (i = 0; i < 300; i++) { /* 1 to 11 requests each */
		snprintf(req, sizeof(req), "uid=u%zu", i);
		n = i * 37 % 11 + 1;
		assert_int_equal(fc_passes(t, req, T0, (int)n), n < 5 ? (int)n : 5);
		want[i] = n;
	}
	qsort(want, 300, sizeof(want[0]), fc_busier_u64);
	assert_int_equal(fc_state_keys_top(t->shm, 0, slot, epoch, T0, 7, &top, &err), 0);
	assert_int_equal(top.live, 300);
	free(top.v);
	assert_int_equal(fc_state_keys_top(t->shm, 0, slot, epoch, now, 7, &top, &err), 0);
	assert_int_equal(top.n, 7);
	assert_int_equal(top.total, 300);
	assert_int_equal(top.live, 0); /* idle an hour on */
	for (i = 0; i < top.n; i++) {
		assert_int_equal(top.v[i].slot, slot);
		assert_int_equal((uint64_t)top.v[i].passed + top.v[i].denied, want[i]);
	}
	free(top.v);
	/* Asked for more than there are: all of them, in order. */
	assert_int_equal(fc_state_keys_top(t->shm, 0, slot, epoch, now, FC_SHM_KEYS_MAX, &top, &err), 0);
	assert_int_equal(top.n, 300);
	for (i = 0; i < top.n; i++)
		assert_int_equal((uint64_t)top.v[i].passed + top.v[i].denied, want[i]);
	free(top.v);
	/* Grown by the workers' user: refused, whatever --shm-keys says. */
	assert_int_equal(truncate(t->state_path, (off_t)FC_STATE_SIZE_FOR(FC_SHM_KEYS_MAX)), 0);
	assert_int_equal(fc_state_keys_top(t->shm, FC_SHM_KEYS_MAX, slot, epoch, now, 7, &top, &err), -1);
	snprintf(msg, sizeof(msg), "%s: %llu bytes, expected %llu (a key table of %u entries, as the shm names)",
		 t->state_path, (unsigned long long)FC_STATE_SIZE_FOR(FC_SHM_KEYS_MAX),
		 (unsigned long long)FC_STATE_SIZE_FOR(FC_SHM_KEYS_MIN), FC_SHM_KEYS_MIN);
	assert_non_null(strstr(err.msg, msg));
	assert_int_equal(fc_state_keys_recount(t->shm, 0, now, &err), -1);
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, fc_setup, fc_teardown)
	const struct CMUnitTest tests[] = {
		T(test_keys_race),
		T(test_keys_race_dense),
		T(test_keys_race_threads),
		T(test_keys_race_dense_threads),
		T(test_keys_two_choices),
		T(test_keys_dense),
		T(test_keys_basics),
		T(test_keys_units),
		T(test_keys_delayed_unkeyed),
		T(test_keys_new_in_units),
		T(test_keys_kinds),
		T(test_keys_full_and_idle),
		T(test_keys_corrupt),
		T(test_keys_repeated),
		T(test_keys_max),
		T(test_keys_recount_race),
		T(test_keys_recount_busy),
		T(test_keys_table_size),
		T(test_vals_noted),
		T(test_vals_set),
		T(test_vals_hostile),
		cmocka_unit_test(test_vals_escape),
		T(test_keys_top),
	};
#undef T

	return fc_run_group("L7 engine: per-key policies (the key table)", tests, NULL, NULL);
}
