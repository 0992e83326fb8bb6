/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Test vectors by value for the sliding window (maps/fc_limit.h), run the
 * same through the algorithm itself (tests/unit/test_limit.c), the nginx
 * engine (tests/unit/test_l7.c) and the packet path under BPF_PROG_TEST_RUN
 * (tests/bpf/test_limits.c), which must all give the same counts.
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

#endif /* FC_VECTORS_H */
