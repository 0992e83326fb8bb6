/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * fc_bench's parts: the store it loads (fc_bench_store.c), the programs it
 * compares (fc_bench_progs.c), the rows of one hot frame each (fc_bench.c)
 * and the flood of distinct sources (fc_bench_flood.c).
 */
#ifndef FC_BENCH_H
#define FC_BENCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <jansson.h>

#include "fc_frames.h"
#include "fc_prefix.h"

#define FC_MAX_RUNS    9
#define FC_MAX_ROUNDS  31
/* Every round of every run, kept for the paired ratios. */
#define FC_MAX_TIMES   (FC_MAX_RUNS * FC_MAX_ROUNDS)
#define FC_MAX_SAMPLES 64

/* The prefixes made for the store, kept to draw sources from. */
struct fc_pfx_list {
	struct fc_prefix *v;
	size_t n;
};

/* One store, under its own paths: the main one (everything the issue
 * stores) and the flood's small one (only exact bans, as xdp-filter holds). */
struct fc_bench_store {
	char pin[96];
	char dir[96];
	char db[128];
	char shm[128];
};

struct fc_bench {
	long bans, prefixes4, prefixes6, policies;
	long flood;      /* distinct sources a flood round sends */
	long flood_bans; /* the exact bans both hold in the flood's comparison */
	int samples;
	unsigned repeat;
	int rounds, runs;
	bool json;
	const char *freqctl;
	const char *baseline; /* another build's freqctl.bpf.o, on the same maps */
	char tag[32];
	char ns[48];
	char xdpfs[112];
	struct fc_bench_store main, small;
	uint64_t rng;
	struct fc_pfx_list ban4, pol4, ban6;
};

extern struct fc_bench fc_b;

double fc_now(void);
void fc_progress(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int fc_sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
double fc_median(const double *v, int n);
/* BPF_PROG_TEST_RUN of prog_fd on frame, repeat times: kernel-timed ns per run. */
double fc_run(int prog_fd, const uint8_t *frame, size_t len, unsigned repeat);
/* The 1-, 5- and 15-minute load averages, printed; whether the first is < 1. */
bool fc_load_print(FILE *f, const char *when);

/* fc_bench_store.c */
int fc_make_store_prefixes(void);
int fc_store_paths(struct fc_bench_store *s, const char *name);
int fc_store_load(double *import_s, double *pol_s, double *add_s, long *add_rss);
int fc_store_load_small(void);
long fc_nexact(void);
/* A host inside a random prefix of l, as text; for a policy, one no ban covers. */
void fc_draw_host(const struct fc_pfx_list *l, bool unbanned, char *out);

/* fc_bench_progs.c: the programs compared, as fds (-1: not there, *why says why). */
int fc_bench_ns(void);
int fc_xdp_filter(bool have_ns, const char *ifname, const char **why);
int fc_xdp_filter_fill(int prog_fd, long n);
int fc_dispatched(void *why);
int fc_in_ns(int (*fn)(void *), void *arg);
struct bpf_object;
int fc_baseline(struct bpf_object **obj);

/* fc_bench_flood.c: the flood benchmark; fds of the programs it runs. */
struct fc_flood_fds {
	int empty, xdp_filter, freqctl_small, freqctl;
	int stats_small, stats; /* the two freqctls' fc_stats maps */
	int baseline;           /* --baseline's program, on the main store (-1: none) */
};
int fc_flood(const struct fc_flood_fds *fds, json_t *doc);

#endif /* FC_BENCH_H */
