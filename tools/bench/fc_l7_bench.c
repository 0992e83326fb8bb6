// SPDX-License-Identifier: BSD-2-Clause
/*
 * Helpers of `make bench` for the nginx side (tools/bench/bench_nginx.sh):
 *
 *   fc_l7_bench seed DB SHM N      store N policies "uid=uK,ip=127.0.0.1"
 *                                  (1e9/s: never denying) and publish them
 *   fc_l7_bench seed-conc DB SHM N the same with --concurrency 100000000: each
 *                                  decision takes a place, given back after
 *   fc_l7_bench seed-uids DB SHM N the same as seed with "uid=uK" alone: the
 *                                  fixed-value twin of seed-keys' "uid=*"
 *   fc_l7_bench decide SHM SECONDS [NUSERS]
 *                                  decisions per second of the L7 engine
 *                                  on "uid=u1 from 127.0.0.1", one thread,
 *                                  as a worker with its record of places;
 *                                  with NUSERS, uids u1..uNUSERS cycling
 *                                  (after seed N >= NUSERS: a policy each)
 *   fc_l7_bench seed-keys DB SHM   store the per-key policy "uid=*" (never
 *                                  denying, every key live for an hour) and
 *                                  publish it
 *   fc_l7_bench seed-show-keys DB SHM
 *                                  the same with --show-keys: it keeps its
 *                                  busiest keys' values
 *   fc_l7_bench seed-keys-window DB SHM
 *                                  the same with --algo window, per minute
 *   fc_l7_bench seed-keys-fleet DB SHM
 *                                  the same with --fleet, this node alone in
 *                                  the fleet's node set (from a day ago: its
 *                                  share is the whole N) from the minute
 *                                  after the shm is made (the fresh rule)
 *   fc_l7_bench decide-keys SHM SECONDS N
 *                                  the same with N distinct uids cycling: all
 *                                  N keys made first, then decisions timed
 *
 * Cycling uids come in one fixed shuffled order (fc_uids).
 *
 * The policies go through the real store and publisher in one transaction
 * (freqctl has no bulk policy import yet).
 */
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "fc_clock.h"
#include "fc_fleet_split.h"
#include "fc_l7.h"
#include "fc_worker_map.h"
#include "fc_shm_write.h"
#include "fc_store.h"

static double fc_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

enum fc_seed_kind {
	FC_SEED_FIXED, /* uid=uK,ip=127.0.0.1 */
	FC_SEED_UIDS,  /* uid=uK */
	FC_SEED_KEYS,  /* uid=* */
	FC_SEED_SHOW_KEYS, /* uid=* --show-keys */
	FC_SEED_KEYS_WINDOW, /* uid=* --algo window */
	FC_SEED_KEYS_FLEET,  /* uid=* --algo window --fleet */
};

/* The node the fleet seed publishes as. */
#define FC_SEED_NODE "bench"

static int fc_seed(const char *db, const char *shm, long n, enum fc_seed_kind kind, bool conc)
{
	bool keys = kind >= FC_SEED_KEYS;
	struct fc_fleet_view v = { 0 };
	struct fc_policy_spec p = { 0 };
	struct fc_node_ctx node = fc_node_here(1);
	struct fc_shm_result res;
	struct fc_policy_row row;
	struct fc_source src;
	struct fc_store *st;
	struct fc_err err;
	char match[64];
	long i;
	int rc;

	if (fc_store_open(db, &st, &err) < 0 || fc_store_begin(st, &err) < 0)
		goto fail;
	for (i = 1; i <= n; i++) {
		memset(&p, 0, sizeof(p));
		p.id = (uint32_t)i;
		snprintf(match, sizeof(match), keys ? "uid=*" : kind == FC_SEED_UIDS ? "uid=u%ld" : "uid=u%ld,ip=127.0.0.1",
			 i);
		/* New keys as fast as the benchmark makes them, as many as the table holds. */
		p.new_keys = keys ? 1000000000 : 0;
		p.max_keys = keys ? FC_SHM_KEYS : 0;
		p.concurrency = conc ? 100000000 : 0;
		p.show_keys = kind == FC_SEED_SHOW_KEYS;
		p.algo = kind >= FC_SEED_KEYS_WINDOW ? FC_ALGO_WINDOW : FC_ALGO_GCRA;
		p.fleet = kind == FC_SEED_KEYS_FLEET;
		/* Per key: 1e9 an hour, so every key stays live (never idle) through the run. */
		if (fc_match_parse(match, &p, &err) < 0 ||
		    fc_rates_parse(kind >= FC_SEED_KEYS_WINDOW ? "1000000000/m" : keys ? "1000000000/h" : "1000000000/s", &p,
				   &err) < 0 ||
		    fc_store_policy_put(st, &p, (int64_t)time(NULL), &row, &err) < 0)
			goto fail;
	}
	if (kind == FC_SEED_KEYS_FLEET) {
		if (fc_store_fleet_node_set(st, FC_SEED_NODE, FC_FLEET_WEIGHT_ONE, fc_unix_ms() - 86400000, &err) < 0 ||
		    fc_fleet_read(st, FC_SEED_NODE, fc_unix_ms(), &v, &err) < 0)
			goto fail;
		node.fleet = &v;
	}
	fc_source_init(&src, st, (int64_t)time(NULL), &node);
	rc = fc_shm_publish(shm, NULL, 0, &src, &res, &err);
	fc_source_free(&src);
	fc_fleet_view_free(&v);
	if (rc < 0 || fc_store_commit(st, &err) < 0)
		goto fail;
	fc_store_close(st);
	return 0;
fail:
	fc_fleet_view_free(&v);
	fprintf(stderr, "fc_l7_bench: seed: %s\n", err.msg);
	return 1;
}

static void *fc_alloc(void *ctx, size_t size)
{
	(void)ctx;
	return calloc(1, size);
}

/* The uids a run cycles through, each 8 bytes at u[8 * i], in an order
 * shuffled once (fixed seed): neither the policies' nor the keys' places in
 * memory follow it, so no run is helped by the hardware prefetcher. */
static char *fc_uids(long n, bool keyed)
{
	char *u = malloc((size_t)n * 8), t[16];
	uint64_t x = 88172645463325252ULL;
	long i, j;

	if (!u)
		return NULL;
	/* Fixed-value policies are uid=u1..uN (fc_seed), keys u0000000.. */
	for (i = 0; i < n; i++) {
		snprintf(t, sizeof(t), keyed ? "u%07ld" : "u%ld", keyed ? i % 10000000 : i + 1);
		memset(u + i * 8, 0, 8);
		memcpy(u + i * 8, t, strnlen(t, 8));
	}
	for (i = n - 1; i > 0; i--) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		j = (long)(x % (uint64_t)(i + 1));
		memcpy(t, u + i * 8, 8), memcpy(u + i * 8, u + j * 8, 8), memcpy(u + j * 8, t, 8);
	}
	return u;
}

/* n: 0, the one uid u1; else n uids cycling (keyed: each key made once
 * before the clock starts). */
static int fc_decide_rate(const char *shm, double secs, long n, bool keyed)
{
	static uint32_t free_holds[FC_SHM_HOLDS];
	struct fc_l7_alloc a = { fc_alloc, NULL };
	struct fc_l7_holder h;
	struct fc_l7_index ix;
	struct fc_l7_result res;
	struct fc_l7_place pl[2];
	struct fc_l7_req rq = { 0 };
	char *uids = NULL;
	void *state;
	size_t state_size;
	uint64_t over0 = 0;
	double t0, t;
	long done = 0, i, k = 0;

	if (fc_worker_map(shm, &ix, &a) < 0)
		return 1;
	/* As the module: a record of its places, room for two of them. */
	state = (char *)ix.slots - FC_STATE_SLOTS_OFF;
	state_size = FC_STATE_SIZE_FOR(ix.nkeys);
	if (fc_l7_holder_open(state, state_size, fc_l7_worker_id(getpid()), free_holds, &h) < 0) {
		fprintf(stderr, "fc_l7_bench: decide: no free worker record\n");
		return 1;
	}
	rq.holder = &h;
	rq.places = pl;
	rq.places_cap = 2;
	if (n && !(uids = fc_uids(n, keyed)))
		return 1;
	rq.uid = (struct fc_l7_str){ "u1", 2 };
	rq.uri = (struct fc_l7_str){ "/", 1 };
	rq.family = 4;
	memcpy(rq.addr, (uint8_t[]){ 127, 0, 0, 1 }, 4);
	for (i = 0; keyed && i < n; i++) { /* every key made, untimed */
		rq.uid = (struct fc_l7_str){ uids + i * 8, strnlen(uids + i * 8, 8) };
		fc_l7_decide(&ix, &rq, (uint64_t)time(NULL) * FC_NS_PER_SEC, &res);
	}
	if (keyed)
		over0 = ix.slots[1].overflowed;
	t0 = fc_now();
	do {
		for (i = 0; i < 10000; i++) {
			struct timespec ts;

			if (n) {
				rq.uid = (struct fc_l7_str){ uids + k * 8, strnlen(uids + k * 8, 8) };
				k = k + 1 == n ? 0 : k + 1;
			}
			clock_gettime(CLOCK_REALTIME, &ts); /* as the module reads it, per request */
			fc_l7_decide(&ix, &rq, (uint64_t)ts.tv_sec * FC_NS_PER_SEC + (uint64_t)ts.tv_nsec, &res);
			if (res.verdict != FC_L7_PASS || res.matched != 1) {
				fprintf(stderr, "fc_l7_bench: decide: unexpected verdict %d (%u matched)\n", res.verdict,
					res.matched);
				return 1;
			}
			/* The request's end, as the module's pool cleanup sees it. */
			if (res.nplaces)
				fc_l7_give_back(state, state_size, &h, res.places, res.nplaces,
						(uint64_t)ts.tv_sec * FC_NS_PER_SEC + (uint64_t)ts.tv_nsec);
		}
		done += 10000;
		t = fc_now() - t0;
	} while (t < secs);
	printf("%.0f\n", (double)done / t);
	if (keyed) /* a key past a full probe window shares the overflow bucket */
		fprintf(stderr, "fc_l7_bench: %llu of %ld keys made, %llu of %ld timed decisions by the overflow bucket\n",
			(unsigned long long)ix.slots[1].keys, n, (unsigned long long)(ix.slots[1].overflowed - over0), done);
	fc_l7_holder_close(state, state_size, &h, 0);
	free(uids);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 5 && !strcmp(argv[1], "seed"))
		return fc_seed(argv[2], argv[3], atol(argv[4]), FC_SEED_FIXED, false);
	if (argc == 5 && !strcmp(argv[1], "seed-conc"))
		return fc_seed(argv[2], argv[3], atol(argv[4]), FC_SEED_FIXED, true);
	if (argc == 5 && !strcmp(argv[1], "seed-uids"))
		return fc_seed(argv[2], argv[3], atol(argv[4]), FC_SEED_UIDS, false);
	if (argc == 4 && !strcmp(argv[1], "seed-keys"))
		return fc_seed(argv[2], argv[3], 1, FC_SEED_KEYS, false);
	if (argc == 4 && !strcmp(argv[1], "seed-show-keys"))
		return fc_seed(argv[2], argv[3], 1, FC_SEED_SHOW_KEYS, false);
	if (argc == 4 && !strcmp(argv[1], "seed-keys-window"))
		return fc_seed(argv[2], argv[3], 1, FC_SEED_KEYS_WINDOW, false);
	if (argc == 4 && !strcmp(argv[1], "seed-keys-fleet"))
		return fc_seed(argv[2], argv[3], 1, FC_SEED_KEYS_FLEET, false);
	if ((argc == 4 || (argc == 5 && atol(argv[4]) > 0)) && !strcmp(argv[1], "decide"))
		return fc_decide_rate(argv[2], atof(argv[3]), argc == 5 ? atol(argv[4]) : 0, false);
	if (argc == 5 && !strcmp(argv[1], "decide-keys") && atol(argv[4]) > 0)
		return fc_decide_rate(argv[2], atof(argv[3]), atol(argv[4]), true);
	fprintf(stderr, "usage: fc_l7_bench seed DB SHM N | seed-conc DB SHM N | seed-uids DB SHM N | seed-keys DB SHM | "
			"seed-show-keys DB SHM | seed-keys-window DB SHM | seed-keys-fleet DB SHM | "
			"decide SHM SECONDS [NUSERS] | decide-keys SHM SECONDS NKEYS\n");
	return 2;
}
