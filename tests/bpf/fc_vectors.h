/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Test vectors by value for the sliding window and the GCRA warm-up
 * (maps/fc_limit.h), run the same through the algorithm itself
 * (tests/unit/test_limit.c), the nginx engine (tests/unit/test_l7_decide.c) and the
 * packet path under BPF_PROG_TEST_RUN (tests/bpf/test_limits.c), which must
 * all give the same counts.
 *
 * Times are from a base aligned to every window used (s and m). The rule:
 * admit cost c iff c_prev * (U - e) + (c_cur + c) * U <= N * U. No step
 * sits within 5 ms of a point where its answer changes, so the packet
 * path's clock (set, then running, and read a tick late) gives it too.
 */
#ifndef FC_VECTORS_H
#define FC_VECTORS_H

#include <stdint.h>

struct fc_vec_step {
	uint32_t at_ms;    /* from the aligned base */
	uint32_t tries;    /* requests of cost 1, back to back */
	uint32_t admitted; /* how many of them pass */
};

#define FC_VEC_STEPS 4

struct fc_vector {
	const char *name, *rates;
	struct fc_vec_step step[FC_VEC_STEPS]; /* tries 0: no more steps */
};

static const struct fc_vector fc_sliding_vectors[] = {
	/* The example: 10 in the last minute, 30 s into this one:
	 * 10*30 + (0+k)*60 <= 600, k = 5; at 36 s, 10*24 + (5+k)*60 <= 600,
	 * one more. */
	{ "10/m: 10 last minute, 30 s in: 5 more", "10/m", { { 50000, 10, 10 }, { 90000, 20, 5 }, { 96000, 5, 1 } } },
	/* More than one window on, the previous count is 0: N again. */
	{ "10/m: two windows on, c_prev is 0", "10/m", { { 10000, 10, 10 }, { 130000, 20, 10 } } },
	/* 10 s in: 10*50 + 60k <= 600, k = 1; 54 s in: 10*6 + (1+k)*60 <= 600,
	 * k = 8. */
	{ "10/m: the last window weighs (U-e)/U", "10/m", { { 10000, 10, 10 }, { 70000, 5, 1 }, { 114000, 10, 8 } } },
	/* 3/s: 3 at once; none till the window ends; 0.5 s in, 3*0.5 + k <= 3,
	 * k = 1; next window 0.9 s in, 1*0.1 + k <= 3, k = 2. */
	{ "3/s: N at once, then weighted", "3/s", { { 100, 5, 3 }, { 900, 5, 0 }, { 1500, 5, 1 }, { 2900, 5, 2 } } },
	/* Tiers as ever: all must admit, a denial charges none. 1.5 s: the
	 * second tier (5*0.5 + k <= 5) allows 2, the minute 3; 2.9 s: the
	 * second 4 (2*0.1 + k <= 5), the minute 1 (7 + k <= 8). */
	{ "5/s,8/m: tiers, denials charge none", "5/s,8/m", { { 500, 10, 5 }, { 1500, 10, 2 }, { 2900, 10, 1 } } },
};

#define FC_NVECTORS (sizeof(fc_sliding_vectors) / sizeof(fc_sliding_vectors[0]))

/*
 * Warm-up: a client sends `tries` requests back to back every `every_ms`
 * within each phase [from_ms, to_ms) (phases in order, the gaps are
 * pauses), from a fresh bucket; admitted[] counts what passed in each bin
 * of bin_ms from 0. Exact times: the packet path's clock is set to each
 * step's time while the coarse clock stands still (test_limits.c).
 * With rate r = N/3 + (2N/3) * e/D and one request of credit until the ramp
 * ends (these rates' intervals are all over 10 ms), a second from s admits
 * about r(s + 1/2), less a little: a try every ms comes up to 1 ms after the
 * interval ends, and the late part is lost (the floor: no credit while
 * warming).
 */
struct fc_warm_phase {
	uint32_t from_ms, to_ms, every_ms, tries;
};

#define FC_WARM_PHASES 3
#define FC_WARM_BINS   12

struct fc_warm_vector {
	const char *name, *rates;
	uint32_t warmup_s;
	uint32_t cost; /* each request's: 1, or its bytes (count=bytes; the nginx engine charges 1) */
	uint32_t bin_ms;
	struct fc_warm_phase phase[FC_WARM_PHASES]; /* to_ms 0: no more phases */
	uint32_t admitted[FC_WARM_BINS];
};

static const struct fc_warm_vector fc_warm_vectors[] = {
	/* The example: 30/s after idle starts near 10/s (11 to 12 in
	 * the first second with the request at 0) and rises by 2/s a second
	 * to 30/s, reached at 10 s. */
	{ "30/s --warmup 10s: a try every ms", "30/s", 10, 1, 1000, { { 0, 12000, 1, 1 } },
	  { 12, 12, 15, 17, 19, 21, 23, 25, 26, 29, 30, 30 } },
	/* A pause shorter than D keeps the ramp, whose clock runs through it:
	 * at 5 s the rate is 10 + 20*5/6, not 10 again. */
	{ "30/s --warmup 6s: a 2 s pause keeps the ramp", "30/s", 6, 1, 1000,
	  { { 0, 3000, 1, 1 }, { 5000, 9000, 1, 1 } }, { 12, 15, 18, 0, 0, 29, 29, 30, 30 } },
	/* Idle for D from the TAT (which led now by B*T = 1 s at 3 s): the
	 * ramp starts again at 7 s. */
	{ "30/s --warmup 2s: idle 3 s from the TAT starts again", "30/s", 2, 1, 1000,
	  { { 0, 3000, 1, 1 }, { 7000, 10000, 1, 1 } }, { 16, 25, 30, 0, 0, 0, 0, 16, 25, 30 } },
	/* No burst while warming: 100 at once from cold pass 1, and 100 at
	 * once after a pause within the ramp pass 1. */
	{ "30/s --warmup 10s: one request of credit while warming", "30/s", 10, 1, 1000,
	  { { 0, 1, 1, 100 }, { 1, 1000, 1, 1 }, { 3000, 3001, 1, 100 } }, { 12, 0, 0, 1 } },
	/* Once warm, the burst comes back at N: 0.5 s after sustained
	 * traffic, 15 of 100 at once (bins of 0.5 s). */
	{ "30/s --warmup 2s: the burst refills at N after the ramp", "30/s", 2, 1, 500,
	  { { 0, 3000, 1, 1 }, { 3500, 3501, 1, 100 } }, { 7, 9, 11, 14, 15, 15, 0, 15 } },
	/* Bytes: 100-byte frames at 3000/s ramp as 30 frames a second do. */
	{ "3000/s bytes --warmup 10s: 100-byte frames", "3000/s", 10, 100, 1000, { { 0, 12000, 1, 1 } },
	  { 12, 12, 15, 17, 19, 21, 23, 25, 26, 29, 30, 30 } },
	/* Tiers: the first ramps; the minute's 200 (its burst) and 200/60 a
	 * second since bind in the twelfth second (240 by its end). */
	{ "30/s,200/m --warmup 10s: the first tier ramps", "30/s,200/m", 10, 1, 1000, { { 0, 12000, 1, 1 } },
	  { 12, 12, 15, 17, 19, 21, 23, 25, 26, 29, 30, 10 } },
	/* B < 3: the cold interval (300 ms) is more than B*T (200 ms); one
	 * at a time still passes, every 300 ms, then 10/s. */
	{ "10/s:2 --warmup 5s: a burst under 3", "10/s:2", 5, 1, 1000, { { 0, 7000, 1, 1 } },
	  { 4, 6, 6, 8, 10, 10, 10 } },
};

#define FC_NWARM (sizeof(fc_warm_vectors) / sizeof(fc_warm_vectors[0]))

/* Runs v's steps in order through step(ctx, at_ms, tries), which sends
 * tries requests of v->cost at at_ms and returns how many passed; counts
 * them into got[] by bin. Returns the first bin that differs from
 * v->admitted, or -1. */
static inline int fc_warm_run(const struct fc_warm_vector *v, uint32_t (*step)(void *ctx, uint32_t at_ms, uint32_t tries),
			      void *ctx, uint32_t got[FC_WARM_BINS])
{
	const struct fc_warm_phase *ph;
	uint32_t ms, b, n;
	int i;

	for (b = 0; b < FC_WARM_BINS; b++)
		got[b] = 0;
	for (i = 0; i < FC_WARM_PHASES && v->phase[i].to_ms; i++) {
		ph = &v->phase[i];
		for (ms = ph->from_ms; ms < ph->to_ms; ms += ph->every_ms) {
			n = step(ctx, ms, ph->tries);
			if (ms / v->bin_ms < FC_WARM_BINS)
				got[ms / v->bin_ms] += n;
		}
	}
	for (b = 0; b < FC_WARM_BINS; b++)
		if (got[b] != v->admitted[b])
			return (int)b;
	return -1;
}

#endif /* FC_VECTORS_H */
