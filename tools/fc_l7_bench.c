// SPDX-License-Identifier: BSD-2-Clause
/*
 * Helpers of `make bench` for the nginx side (tools/bench_nginx.sh):
 *
 *   fc_l7_bench seed DB SHM N      store N policies "uid=uK,ip=127.0.0.1"
 *                                  (1e9/s: never denying) and publish them
 *   fc_l7_bench seed-conc DB SHM N the same with --concurrency 100000000: each
 *                                  decision takes a place, given back after
 *   fc_l7_bench decide SHM SECONDS decisions per second of the L7 engine
 *                                  on "uid=u1 from 127.0.0.1", one thread,
 *                                  as a worker with its record of places
 *   fc_l7_bench seed-keys DB SHM   store the per-key policy "uid=*" (never
 *                                  denying, every key live for an hour) and
 *                                  publish it
 *   fc_l7_bench decide-keys SHM SECONDS N
 *                                  the same with N distinct uids cycling: all
 *                                  N keys made first, then decisions timed
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

static int fc_seed(const char *db, const char *shm, long n, bool keys, bool conc)
{
	struct fc_policy_spec p = { 0 };
	struct fc_shm_result res;
	struct fc_policy_row row;
	struct fc_store *st;
	struct fc_err err;
	char match[64];
	long i;

	if (fc_store_open(db, &st, &err) < 0 || fc_store_begin(st, &err) < 0)
		goto fail;
	for (i = 1; i <= n; i++) {
		memset(&p, 0, sizeof(p));
		p.id = (uint32_t)i;
		snprintf(match, sizeof(match), keys ? "uid=*" : "uid=u%ld,ip=127.0.0.1", i);
		/* New keys as fast as the benchmark makes them, as many as the table holds. */
		p.new_keys = keys ? 1000000000 : 0;
		p.max_keys = keys ? FC_SHM_KEYS : 0;
		p.concurrency = conc ? 100000000 : 0;
		/* Per key: 1e9 an hour, so every key stays live (never idle) through the run. */
		if (fc_match_parse(match, &p, &err) < 0 || fc_rates_parse(keys ? "1000000000/h" : "1000000000/s", &p, &err) < 0 ||
		    fc_store_policy_put(st, &p, (int64_t)time(NULL), &row, &err) < 0)
			goto fail;
	}
	if (fc_shm_publish(shm, NULL, 0, st, (int64_t)time(NULL), 1, &res, &err) < 0 || fc_store_commit(st, &err) < 0)
		goto fail;
	fc_store_close(st);
	return 0;
fail:
	fprintf(stderr, "fc_l7_bench: seed: %s\n", err.msg);
	return 1;
}

static void *fc_alloc(void *ctx, size_t size)
{
	(void)ctx;
	return calloc(1, size);
}

/* nkeys: 0, the one uid u1; else uids u0000000.. cycling, each made once
 * before the clock starts. */
static int fc_decide_rate(const char *shm, double secs, long nkeys)
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
	double t0, t;
	long n = 0, i, k = 0;

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
	if (nkeys) {
		uids = malloc((size_t)nkeys * 8);
		if (!uids)
			return 1;
		for (i = 0; i < nkeys; i++) {
			char u[9];

			snprintf(u, sizeof(u), "u%07ld", i % 10000000);
			memcpy(uids + i * 8, u, 8);
		}
	}
	rq.uid = (struct fc_l7_str){ "u1", 2 };
	rq.uri = (struct fc_l7_str){ "/", 1 };
	rq.family = 4;
	memcpy(rq.addr, (uint8_t[]){ 127, 0, 0, 1 }, 4);
	for (i = 0; i < nkeys; i++) { /* every key made, untimed */
		rq.uid = (struct fc_l7_str){ uids + i * 8, 8 };
		fc_l7_decide(&ix, &rq, (uint64_t)time(NULL) * FC_NS_PER_SEC, &res);
	}
	t0 = fc_now();
	do {
		for (i = 0; i < 10000; i++) {
			struct timespec ts;

			if (nkeys) {
				rq.uid = (struct fc_l7_str){ uids + k * 8, 8 };
				k = k + 1 == nkeys ? 0 : k + 1;
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
		n += 10000;
		t = fc_now() - t0;
	} while (t < secs);
	printf("%.0f\n", (double)n / t);
	if (nkeys) /* a key past a full probe window shares the overflow bucket */
		fprintf(stderr, "fc_l7_bench: %llu of %ld keys made, %llu decisions by the overflow bucket\n",
			(unsigned long long)ix.slots[1].keys, nkeys, (unsigned long long)ix.slots[1].overflowed);
	fc_l7_holder_close(state, state_size, &h, 0);
	free(uids);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 5 && !strcmp(argv[1], "seed"))
		return fc_seed(argv[2], argv[3], atol(argv[4]), false, false);
	if (argc == 5 && !strcmp(argv[1], "seed-conc"))
		return fc_seed(argv[2], argv[3], atol(argv[4]), false, true);
	if (argc == 4 && !strcmp(argv[1], "seed-keys"))
		return fc_seed(argv[2], argv[3], 1, true, false);
	if (argc == 4 && !strcmp(argv[1], "decide"))
		return fc_decide_rate(argv[2], atof(argv[3]), 0);
	if (argc == 5 && !strcmp(argv[1], "decide-keys") && atol(argv[4]) > 0)
		return fc_decide_rate(argv[2], atof(argv[3]), atol(argv[4]));
	fprintf(stderr, "usage: fc_l7_bench seed DB SHM N | seed-conc DB SHM N | seed-keys DB SHM | "
			"decide SHM SECONDS | decide-keys SHM SECONDS NKEYS\n");
	return 2;
}
