// SPDX-License-Identifier: BSD-2-Clause
/*
 * make bench, the agent: how long from a change written to the store by
 * another writer until it is enforced at XDP (the pinned map holds it) and in
 * nginx (the shm's ban table holds it), over many changes, as a distribution.
 *
 *   fc_agent_bench DB PIN_DIR SHM N [WHAT]
 *
 * WHAT says what the store holds, for the report (tools/bench/bench_agent.sh
 * runs it on an empty store, then on 1,000,000 bans and 65,535 policies).
 * DB is a SQLite path or a postgresql:// DSN. An agent must be running on
 * DB, PIN_DIR and SHM (tools/bench/bench_agent.sh). Each change bans a new address
 * in its own transaction through the store (as another freqctl, a console or
 * a script would), without publishing it; the next one waits until this one
 * is seen (or 1 s).
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include "fc_l7.h"
#include "fc_worker_map.h"
#include "fc_store.h"

static double fc_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int fc_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static void *fc_alloc(void *ctx, size_t size)
{
	(void)ctx;
	return calloc(1, size);
}

int main(int argc, char **argv)
{
	struct fc_l7_alloc a = { fc_alloc, NULL };
	double *xdp, *ngx, t0, t;
	char map[512];
	struct fc_l7_index ix;
	struct fc_l7_result res;
	struct fc_store *st;
	struct fc_err err;
	int n, i, mfd;

	if (argc < 5 || argc > 6 || (n = atoi(argv[4])) < 1) {
		fprintf(stderr, "usage: fc_agent_bench DB PIN_DIR SHM N [WHAT]\n");
		return 2;
	}
	snprintf(map, sizeof(map), "%s/fc_exact4", argv[2]);
	mfd = bpf_obj_get(map);
	if (mfd < 0) {
		fprintf(stderr, "fc_agent_bench: cannot open %s\n", map);
		return 1;
	}
	if (fc_store_open_ex(argv[1], false, &st, &err) < 0) {
		fprintf(stderr, "fc_agent_bench: %s\n", err.msg);
		return 1;
	}
	if (fc_worker_map(argv[3], &ix, &a) < 0)
		return 1;
	xdp = calloc((size_t)n, sizeof(*xdp));
	ngx = calloc((size_t)n, sizeof(*ngx));
	for (i = 0; i < n; i++) {
		struct fc_l7_req rq = { .family = 4, .addr = { 198, 19, (uint8_t)(i >> 8), (uint8_t)i } };
		struct fc_ban_row ban = { .p = { .family = 4, .len = 32 }, .created = 1 };
		struct { __u64 e; __u32 f, p; } val;
		bool in_map = false, in_shm = false;

		memcpy(ban.p.a, rq.addr, 4);
		t0 = fc_now_ms();
		if (fc_store_ban_put(st, &ban, &err) < 0) {
			fprintf(stderr, "fc_agent_bench: %s\n", err.msg);
			return 1;
		}
		do {
			t = fc_now_ms();
			/* Banned, not merely there: a policy may have the address. */
			if (!in_map && !bpf_map_lookup_elem(mfd, rq.addr, &val) && (val.f & FC_RULE_BANNED)) {
				in_map = true;
				xdp[i] = t - t0;
			}
			if (!in_shm) {
				fc_l7_decide(&ix, &rq, 1, &res);
				if (res.verdict == FC_L7_BANNED) {
					in_shm = true;
					ngx[i] = t - t0;
				}
			}
			if (!in_map || !in_shm)
				usleep(200);
		} while ((!in_map || !in_shm) && t - t0 < 1000);
		if (!in_map)
			xdp[i] = 1000;
		if (!in_shm)
			ngx[i] = 1000;
	}
	qsort(xdp, (size_t)n, sizeof(*xdp), fc_cmp);
	qsort(ngx, (size_t)n, sizeof(*ngx), fc_cmp);
	printf("agent, %s store%s%s: a ban written by another writer, until enforced (%d changes, ms):\n",
	       fc_store_is_postgres(argv[1]) ? "PostgreSQL" : "SQLite", argc > 5 ? " of " : "", argc > 5 ? argv[5] : "", n);
	printf("%-22s %8s %8s %8s %8s %8s\n", "", "min", "p50", "p90", "p99", "max");
	printf("%-22s %8.1f %8.1f %8.1f %8.1f %8.1f  (target p99 <= 25 at 1M bans, 65,536 policies)\n",
	       "XDP (pinned map)", xdp[0], xdp[n / 2], xdp[n * 9 / 10], xdp[n * 99 / 100], xdp[n - 1]);
	printf("%-22s %8.1f %8.1f %8.1f %8.1f %8.1f\n", "nginx (shm ban table)", ngx[0], ngx[n / 2], ngx[n * 9 / 10],
	       ngx[n * 99 / 100], ngx[n - 1]);
	fc_store_close(st);
	return 0;
}
