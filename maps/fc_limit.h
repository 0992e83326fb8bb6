/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The limit algorithms, GCRA (with an optional warm-up), fixed and sliding
 * window, as header-only C
 * that compiles both for clang -target bpf (the XDP/TC programs) and for
 * userspace (the nginx module and the tests), so the code the kernel runs is
 * the code the unit tests drive with an injected clock.
 *
 * Every bucket tier is one 64-bit word changed only by compare-and-exchange
 * (BPF_CMPXCHG, -mcpu=v3), so no number of CPUs racing on one bucket can
 * admit more than the limit. A request is charged to every tier of every
 * policy it meets or to none: a denial rolls back the tiers already charged.
 * A rollback undoes exactly its own charge or, where the word has moved since
 * in a way that could hide another's charge, nothing: it may make a racing
 * request see less room than there was, never more. The error is only ever
 * on the side of denying.
 */
#ifndef FC_LIMIT_H
#define FC_LIMIT_H

#include <linux/types.h>

#define FC_MAX_TIERS  4 /* a power of two (fc_warm_limit masks with it) */
#define FC_NS_PER_SEC 1000000000ULL

/* Bounded retries of a contended compare-and-exchange; past them, deny. */
#define FC_CAS_TRIES 8

/* A TAT this far beyond what any admission can leave (its room: the
 * tolerance, plus the queue of a delaying policy) means the clock went
 * backwards (settimeofday): the bucket starts afresh instead of denying for
 * as long as the jump. Wide enough for clock skew between CPUs. */
#define FC_CLOCK_SLACK_NS FC_NS_PER_SEC

/* Rooms saturate here (36 years): far beyond any real lead, and a TAT,
 * at most now + room, stays below 2^62, under its word's generation tag
 * (FC_GEN_SHIFT), until 2079. The loader compiles no tolerance above it. */
#define FC_ROOM_MAX (1ULL << 60)

/* Fixed window state: window number (low 24 bits) | count (40 bits). */
#define FC_WIN_COUNT_BITS 40
#define FC_WIN_COUNT_MASK ((1ULL << FC_WIN_COUNT_BITS) - 1)
#define FC_WIN_IDX_MASK   ((1ULL << (64 - FC_WIN_COUNT_BITS)) - 1)

/*
 * Sliding window state: window number (high 16 bits) | this window's count
 * (24 bits) | the previous window's count (low 24 bits). A count is at most
 * N, so N <= FC_SLIDE_COUNT_MAX (16,777,215 per window; the loader refuses
 * more). The window number wraps after 65,536 windows (18 h at /s, 45 days
 * at /m): a word left untouched for exactly a multiple of that reads as
 * current, which can only deny, for at most two windows.
 */
#define FC_SLIDE_COUNT_BITS 24
#define FC_SLIDE_COUNT_MAX  ((1ULL << FC_SLIDE_COUNT_BITS) - 1)
#define FC_SLIDE_IDX_SHIFT  (2 * FC_SLIDE_COUNT_BITS)
#define FC_SLIDE_IDX_MASK   ((1ULL << (64 - FC_SLIDE_IDX_SHIFT)) - 1)
/* The sliding rule's time unit: products of a count (< 2^24 + cost) and a
 * window in microseconds (<= 86,400 s < 2^37) stay below 2^62. */
#define FC_SLIDE_NS 1000ULL

/* Bounds the loader enforces, which keep every product below 2^64. */
#define FC_RATE_MAX   1000000000000ULL /* N: 10^12 per unit (bytes) */
#define FC_COST_MAX   65535ULL         /* a frame's length */
#define FC_UNIT_MAX   (86400ULL * FC_NS_PER_SEC)

#ifndef FC_INLINE
#ifdef __bpf__
#define FC_INLINE static __always_inline
/* A BPF subprogram of its own (at most 5 arguments). */
#define FC_SLOWPATH static __noinline
/* A BPF global function: the verifier checks it once, for any arguments
 * (pointers to structs of known size, maybe NULL, and scalars; at most 5),
 * not again at each call site. */
#define FC_GLOBAL_FN __noinline
/* The same, for code a charge rarely runs: out of line everywhere. */
#define FC_COLD_FN __noinline
#else
#define FC_INLINE static inline
/* Out of line here too: inlined into the nginx module's decision, its
 * branches moved gcc's registers on the GCRA path (7 instructions a
 * request, bench_nginx_cost.sh). */
#define FC_SLOWPATH static __attribute__((noinline))
#define FC_GLOBAL_FN static inline
#define FC_COLD_FN static __attribute__((noinline, cold))
#endif
#endif

/* A policy that needs the precise clock: its GCRA tolerance is too short for
 * a coarse clock (the kernel's tick, nginx's cached time), which would admit
 * at most B per tick. */
#define FC_POLICY_PRECISE 0x1
/* --override: where this policy matches, the matching policies more general
 * than it do not apply (at XDP/TC: an exact address's switches off its
 * prefix's and ip=*'s, a prefix's ip=*'s; in nginx, the lists the engine
 * makes when it reads a publish). Never on a log policy. */
#define FC_POLICY_OVERRIDE 0x2

enum fc_algo {
	FC_ALGO_GCRA,
	FC_ALGO_WINDOW,
	FC_ALGO_SLIDING,
	/* A fleet policy's (--fleet, maps/fc_fleet.h) as published: the store
	 * keeps the algorithm and the fleet flag apart. The words mean
	 * something else, so fc_limit_charge never sees these: callers
	 * dispatch them to fc_fleet.h, and a policy without --fleet pays
	 * nothing for them. */
	FC_ALGO_FLEET_WINDOW,
	FC_ALGO_FLEET_SLIDING,
	FC_ALGO_FLEET_GCRA,
};

/*
 * One tier of a policy: N per unit.
 *   GCRA: T = interval_ns = ceil(unit/N); a cost c advances the TAT by c*T
 *   (for c > 1, ceil(c*unit/N)); admit iff new_tat - now <= tolerance_ns = B*T.
 *   Window: at most limit per aligned window of unit_ns.
 *   Sliding: see fc_sliding_charge's rule below.
 */
struct fc_tier {
	__u64 interval_ns;
	__u64 tolerance_ns;
	__u64 unit_ns;
	__u64 limit;
};

/*
 * Changing a rate (doc/architecture.md, A change of rates). A bucket keeps
 * what its clients used: a GCRA TAT leads now by the requests (or bytes) it
 * holds times T, so when a tier's T changes, the lead is rescaled by the
 * ratio of the new T to the old, lead' = lead * T'/T (rounded up), and the
 * new burst and rate apply to what was used: raising them gives room at
 * once, lowering them never adds room. (A window's count is already that
 * amount: it is kept as it is.) Rescaling every bucket at a publish is out
 * of the question (262,144 sources, 16M keys): a bucket is rescaled lazily,
 * before its next charge, from the previous limits, which the policy keeps
 * for one generation.
 *
 * A GCRA word is the TAT (62 bits: FC_ROOM_MAX keeps it there) and, in its
 * top two bits, the generation of the policy's limits it was charged under.
 * The generation moves (mod 4) when the interval or the room of any of its
 * tiers changes; rescale[i] says what a word of tier i of the generation
 * before becomes (FC_RESCALE_*; a tier that kept its interval: the same
 * word). A charge compares each word's tag with the generation and denies
 * a word of another (FC_CHARGE_REGEN); the bucket is then brought by
 * fc_gcra_adopt, which rescales each word with one compare-and-exchange,
 * the first word last, and charged again. Before a charge, whether it needs
 * bringing is one test on its first word (fc_gen_stale).
 */
#define FC_GEN_SHIFT 62
#define FC_TAT_MASK  ((1ULL << FC_GEN_SHIFT) - 1)
/* In fc_limits.gen beside the generation: the words are GCRA's, tagged
 * (a window's carry no tag), as a mask for the tag (FC_GEN_GCRA >> 2 is
 * 3): a test of staleness needs no branch on the algorithm, which in BPF
 * is paths for the verifier. */
#define FC_GEN_GCRA 0xc
#define FC_GEN(lim) ((__u64)(lim)->gen & 3)
/* The generation as a word's top bits (FC_GEN_GCRA shifts out). */
#define FC_TAG(lim) ((__u64)(lim)->gen << FC_GEN_SHIFT)

/* rescale[i]: how (its low 2 bits), and for FC_RESCALE_SCALE the ratio of
 * the new interval to the old, num / den (31 bits each, bits 2-32 and
 * 33-63): exact where the ratio reduced fits, else rounded up (never a
 * lead short of the exact one). */
#define FC_RESCALE_ASIS  0 /* nothing known of the previous limits: a word is read as it is */
#define FC_RESCALE_SCALE 1 /* the previous generation's lead times num / den; older ones full */
#define FC_RESCALE_FRESH 2 /* the tier is new: a word of another generation is empty */
#define FC_RESCALE_FULL  3 /* every other generation's busy word is full (T grew 2^31-fold) */
#define FC_RESCALE_BITS  31
#define FC_RESCALE_MAX   ((1ULL << FC_RESCALE_BITS) - 1)
#define FC_RESCALE(how, num, den) ((__u64)(how) | (__u64)(num) << 2 | (__u64)(den) << (2 + FC_RESCALE_BITS))
/* A tier whose interval stayed: the previous generation's words as they are. */
#define FC_RESCALE_SAME FC_RESCALE(FC_RESCALE_SCALE, 1, 1)

/* The limits a bucket is charged by: a policy's tiers, its warm-up and its
 * generations. struct fc_policy (fc_maps.h) and the nginx engine's policy
 * hold one from their tier array on, so that either can be handed to the
 * charge (in BPF, to its global functions) as one pointer. */
struct fc_limits {
	struct fc_tier tier[FC_MAX_TIERS];
	__u32 warmup_ms; /* GCRA --warmup: the first tier ramps over this (see below); 0 = none */
	__u8 gen;        /* FC_GEN(): the generation of these limits, a GCRA word's tag; | FC_GEN_GCRA */
	__u8 pad[3];
	__u64 rescale[FC_MAX_TIERS]; /* FC_RESCALE(): each tier's from the previous generation */
};

FC_INLINE __u64 fc_gcra_increment(const struct fc_tier *t, __u64 cost)
{
	if (cost == 1)
		return t->interval_ns;
	/* cost <= FC_COST_MAX and unit <= FC_UNIT_MAX: no overflow. */
	return (cost * t->unit_ns + t->limit - 1) / t->limit;
}

/* The largest lead over now that admissions can leave in a tier's TAT: the
 * tolerance, plus queue emission intervals for a delaying policy (saturating:
 * a slow rate times a long queue overflows 64 bits). */
FC_INLINE __u64 fc_room(__u64 tolerance, __u64 interval, __u64 queue)
{
	__u64 q;

	if (queue && interval > FC_ROOM_MAX / queue)
		return FC_ROOM_MAX;
	q = queue * interval;
	return tolerance > FC_ROOM_MAX - q ? FC_ROOM_MAX : tolerance + q;
}

FC_INLINE __u64 fc_gcra_room(const struct fc_tier *t, __u64 queue)
{
	return fc_room(t->tolerance_ns, t->interval_ns, queue);
}

/* Where a new TAT starts from: max(tat, now), or now if the clock went
 * backwards past anything an admission within room can leave. */
FC_INLINE __u64 fc_gcra_base(__u64 tat, __u64 room, __u64 now)
{
	if (tat > now + room + FC_CLOCK_SLACK_NS)
		return now;
	return tat > now ? tat : now;
}

/* ceil(lead * num / den) of rescale word rs, exactly, or cap if that is
 * more (cap <= FC_ROOM_MAX): no 128-bit product (BPF has none), lead split
 * by den: lead = q * den + r, r * num < 2^62. */
FC_INLINE __u64 fc_rescale_lead(__u64 lead, __u64 rs, __u64 cap)
{
	__u64 num = (rs >> 2) & FC_RESCALE_MAX, den = rs >> (2 + FC_RESCALE_BITS), q, r;

	if (!den || !num)
		return num ? cap : 0;
	q = lead / den;
	r = lead - q * den;
	if (q > cap / num)
		return cap;
	q = q * num + (r * num + den - 1) / den;
	return q < cap ? q : cap;
}

/*
 * A GCRA word of another generation than gen (the tier's, 0 to 3), as it
 * is to be written with gen's tag at now, for a bucket whose room is room
 * (at most FC_ROOM_MAX); or word itself: it stays as it is, and a charge of
 * gen admits nothing on it. An idle word (TAT <= now) holds nothing: only
 * retagged. A busy one of the generation before gen is rescaled
 * (FC_RESCALE_SCALE) once the rescaled lead fits in room (until then it is
 * more than full, as the exact rule has it); of any other generation
 * (older, or a publish's newer than this copy of the policy) it is full
 * until its TAT passes, the most any limits it was charged under can hold.
 */
FC_INLINE __u64 fc_gcra_regen(__u64 word, __u64 gen, __u64 rs, __u64 now, __u64 room)
{
	__u64 tat = word & FC_TAT_MASK, how = rs & 3, tag = (gen & 3) << FC_GEN_SHIFT, lead;

	if (word >> FC_GEN_SHIFT == (gen & 3))
		return word;
	if (tat <= now)
		return tat | tag;
	if (how == FC_RESCALE_FRESH)
		return now | tag;
	lead = tat - now;
	if (how == FC_RESCALE_SCALE && word >> FC_GEN_SHIFT == ((gen - 1) & 3))
		lead = fc_rescale_lead(lead, rs, room + 1);
	else if (how != FC_RESCALE_ASIS)
		return word;
	return lead <= room ? (now + lead) | tag : word;
}

/* The room of tier i of lim for a delaying policy's queue (0: none). */
FC_INLINE __u64 fc_tier_room(const struct fc_limits *lim, int i, __u64 queue)
{
	return queue ? fc_gcra_room(&lim->tier[i], queue) : lim->tier[i].tolerance_ns;
}

/* Nonzero if the bucket whose words are state holds a GCRA word of another
 * generation than lim's: its first word says (fc_gcra_adopt brings it
 * last). No branch: a window's lim says its words carry no tag. */
FC_INLINE __u64 fc_gen_stale(const struct fc_limits *lim, const __u64 *state)
{
	__u64 g = lim->gen;

	return ((state[0] >> FC_GEN_SHIFT) ^ g) & (g >> 2);
}

/*
 * Brings the words of tiers 0 to ntiers - 1 (arg: FC_ADOPT_ARG) to lim's
 * generation, as fc_gcra_regen has them, before a charge: one
 * compare-and-exchange each, which a word that moved meanwhile fails (its
 * mover brought it, or a charge of another copy of the policy did: a charge
 * finds it of another generation and denies). The first word last, and only
 * once every other is of the generation: while one is not (it is more than
 * full), the first keeps the bucket stale, and each charge comes back here.
 * The tag makes a rescale happen once (a word of the generation is never
 * rescaled again), and a charge builds only on such a word. A word more
 * than full stays as it is, so the rescale writes nothing the rule would
 * not hold: what it writes admits what the rescaled lead admits, no more,
 * and a refund of the charge after it gives back that word. Out of line
 * (in BPF a leaf global function: verified once, its stack apart).
 */
#define FC_ADOPT_ARG(ntiers, queue) ((__u64)(ntiers) | (__u64)(queue) << 32)

FC_COLD_FN int fc_gcra_adopt(__u64 (*st)[FC_MAX_TIERS], const struct fc_limits *lim, __u64 now, __u64 arg)
{
	__u64 n = arg & 0xff, queue = arg >> 32, stale = 0, word, w;
	int i;

	if (!st || !lim)
		return 0;
	for (i = FC_MAX_TIERS - 1; i >= 0; i--) {
		if ((__u64)i >= n || (i == 0 && stale))
			continue;
		word = *(volatile __u64 *)&(*st)[i];
		w = fc_gcra_regen(word, FC_GEN(lim), lim->rescale[i], now, fc_tier_room(lim, i, queue));
		if (w != word && __sync_val_compare_and_swap(&(*st)[i], word, w) != word)
			w = *(volatile __u64 *)&(*st)[i];
		stale |= w >> FC_GEN_SHIFT != FC_GEN(lim);
	}
	return 0;
}

/* What a charge returns besides 1 (admitted) and 0 (denied): a GCRA word of
 * another generation, nothing charged. The caller brings the bucket
 * (fc_gcra_adopt) and charges again, or denies. In BPF a denial: the
 * programs bring a bucket before they charge it (fc_policy_check), and a third value
 * out of every charge was paths for the verifier (some 48,000 of its
 * instructions). */
#ifdef __bpf__
#define FC_CHARGE_REGEN 0
#else
#define FC_CHARGE_REGEN (-1)
#endif

/* GCRA, the future-TAT check, allowing room (the tolerance, and queue
 * intervals of a delaying policy) ahead of now, on tier t whose words are
 * tagged tag (FC_TAG; 0 for a word of no policy): returns 1 if admitted
 * (and the word before and after), 0 if not, FC_CHARGE_REGEN for a word of
 * another generation (nothing charged either way). */
FC_INLINE int fc_gcra_charge(__u64 *state, const struct fc_tier *t, __u64 tag, __u64 now, __u64 cost, __u64 queue,
			     __u64 *prev, __u64 *next)
{
	__u64 inc = fc_gcra_increment(t, cost), room = queue ? fc_gcra_room(t, queue) : t->tolerance_ns, word,
	      new_tat;
	int k;

	/* The arithmetic is the tag's: now carries it too (TAT and now stay
	 * below 2^62, room at most FC_ROOM_MAX: no sum wraps), so no register
	 * more lives through the loop than without generations (in BPF, one
	 * more spilled the stack of a chain of calls past its bound). Each word
	 * read is checked: one a CAS failed on may be of another generation
	 * (a copy of the policy of another publish, in its instant). */
	now |= tag;
	for (k = 0; k < FC_CAS_TRIES; k++) {
		word = *(volatile __u64 *)state;
		if ((word ^ now) >> FC_GEN_SHIFT)
			return FC_CHARGE_REGEN;
		new_tat = fc_gcra_base(word, room, now) + inc;
		if (new_tat - now > room)
			return 0;
		if (__sync_val_compare_and_swap(state, word, new_tat) == word) {
			*prev = word;
			*next = new_tat;
			return 1;
		}
	}
	return 0;
}

/* fc_gcra_charge, without a queue, 1 or 0: a word of another generation
 * denies (the bucket was brought before, or the word is of no policy). */
FC_INLINE int fc_gcra_try(__u64 *state, const struct fc_tier *t, __u64 tag, __u64 now, __u64 cost, __u64 *prev,
			  __u64 *next)
{
	return fc_gcra_charge(state, t, tag, now, cost, 0, prev, next) == 1;
}

/* Undoes an admission that moved the word from prev to next, if nobody moved
 * it since. Otherwise the charge stays: a later charge may have started
 * afresh from the clock (the TAT had fallen behind it), and taking our
 * increment off would take it off theirs. */
FC_INLINE void fc_gcra_refund(__u64 *state, __u64 prev, __u64 next)
{
	__sync_val_compare_and_swap(state, next, prev);
}

/*
 * Warm-up (GCRA, --warmup D), Guava's SmoothWarmingUp made exact, in
 * integers: after the bucket has been idle for D, the first tier's rate
 * starts at N/3 and rises linearly to N over D. Only the first tier ramps
 * (the loader has it be the one of the shortest unit, the rate Guava has);
 * the others stay plain GCRA: a quota per hour or day must not start empty.
 * The bucket keeps one word beside its tiers' TATs, ws = state[ntiers]:
 * when the ramp began. With T, B*T (the tolerance) and D of the first tier,
 * a request of cost c at now:
 *
 *   cold     iff now - max(TAT, ws) >= D: idle for D (the TAT is when the
 *            bucket drained, ws when the last ramp began; a fresh bucket,
 *            all zero, is cold). A request that finds it cold sets ws = now
 *            and passes: a cold bucket admits one request (of cost <= B)
 *            at once, or 10 ms of the rate N/3 if that is more (below).
 *   e        = min(D, now - ws): the ramp's progress.
 *   r        = N/3 + (2N/3) * e/D: the rate, hence the interval
 *   I        = 3 T D / (D + 2e): 3T cold, T warm; the cost's increment
 *   inc      = inc_c * 3D / (D + 2e), inc_c being the plain one (c*T).
 *   tol      = max(B*T, inc): a request fits one at a time even if B < 3.
 *   F        = min(now, ws + D) + tol - min(tol, max(inc, G)): the credit
 *            floor, G = 10 ms (FC_WARM_GRAIN_NS).
 *   new TAT  = max(TAT, now, F) + inc; admit iff new TAT - now <= tol
 *              (plus queue * T for a delaying policy: the same wait in time
 *              as when warm, so fewer requests wait while it is cold).
 *
 * F caps the credit: during the ramp the bucket holds one request's worth,
 * or 10 ms of the ramped rate where that is more (the clocks move in steps:
 * FC_WARM_GRAIN_NS). No burst, then: a cold backend never gets B at once,
 * and from the first request on admissions follow r (a request that comes
 * late loses the lateness, as with B = 1). From ws + D the floor stays
 * where the ramp left it, so the burst comes back at the rate N over B*T,
 * as after any busy spell, and not all at once at the end of the ramp:
 * under sustained traffic the TAT leads by tol throughout and admissions
 * follow r, then N. A cost whose plain increment exceeds B*T (a cost over
 * B) is refused, as without warm-up. The policy's other tiers are charged
 * first: a request they refuse does not reach the ramp, nor start it.
 *
 * A pause shorter than D (counted from the TAT, when the bucket drained)
 * does not restart the ramp, and the ramp's clock runs through it: the ramp
 * lasts D from its first request, pauses included, and a pause within it
 * earns one request's credit, not a burst.
 *
 * Arithmetic: e and D in units of 2^10 ns (e rounded down, D up), the factor
 * 3D/(D + 2e) as m / 2^20 with m rounded up, inc = ceil(inc_c * m / 2^20)
 * in two halves: every rounding lengthens the interval, so it only denies
 * (by under 2^-20 of it, and under 1.1 us of progress). Bounds: D <= 1 day
 * (< 2^47 ns): 3 * (D >> 10) * 2^20 < 2^58; inc_c <= B*T <= FC_WARM_TOL_MAX
 * (2^60 ns, which the loader enforces; past it the charge denies): inc <
 * 3 * 2^60 + 2^21 and tol + queue * T stay below FC_ROOM_MAX.
 *
 * Races. ws moves only forward (but on a fresh bucket, or the clock stepped
 * back past the slack), to the now of a request that found the bucket cold,
 * by compare-and-exchange: of several finding it cold at once, one starts
 * the ramp and passes, the others are denied. The ramp (ws, and from it
 * inc, tol and F) is read once; the TAT changes only by compare-and-exchange,
 * as plain GCRA's, and after its CAS an admission reads ws again: if ws moved
 * (a restart raced it), it takes its charge back and denies. A TAT that moved
 * under the CAS is charged again from where it went, unless that leaves the
 * bucket cold (a refund took a charge back): then it denies. So every
 * admission is the rule applied to the TAT its CAS replaced and the ws the
 * word held from before to after that CAS. And a later ws never admits
 * more: at any time and TAT it admits only what an earlier one would, and
 * leaves the same or a later TAT (a smaller e: a larger inc; a later end: a
 * higher F). A restart made on a TAT another CPU was moving can only start
 * the ramp later than the rule: the error is on the side of denying, never
 * more than the rule admits. A refund gives back the TAT only: ws is not
 * quota.
 */
/* D, as the policies carry it: milliseconds, 1 s to 1 day. */
#define FC_WARMUP_MIN_MS 1000U
#define FC_WARMUP_MAX_MS 86400000U
#define FC_MS_NS         1000000ULL
#define FC_WARMUP_MIN_NS (FC_WARMUP_MIN_MS * FC_MS_NS)
#define FC_WARMUP_MAX_NS (FC_WARMUP_MAX_MS * FC_MS_NS)
#define FC_WARM_TOL_MAX  (1ULL << 60) /* B*T of a warming tier: 36 years */
#define FC_WARM_SHIFT    10           /* e and D in 1.024 us */
#define FC_WARM_ONE      (1ULL << 20) /* the factor's fixed point */
/* The credit a warming bucket keeps is one request's, or this much of the
 * ramped rate if that is more: the packet path's coarse clock (a tick, 10 ms
 * at HZ=100) and nginx's cached time advance in steps, and one request of
 * credit would pass one request a step whatever the rate. */
#define FC_WARM_GRAIN_NS (10ULL * 1000000)

/* What the ramp makes of one request at now (see above). */
struct fc_ramp {
	__u64 inc;   /* the cost's increment at the ramped rate */
	__u64 tol;   /* max(B*T, inc) */
	__u64 room;  /* the lead an admission may leave: tol, plus the queue */
	__u64 floor; /* F: the least the TAT counts as */
	__u64 mult;  /* the factor 3D/(D + 2e), in 1/FC_WARM_ONE */
};

FC_INLINE int fc_warm_cold(__u64 tat, __u64 ws, __u64 d, __u64 now)
{
	__u64 last = tat > ws ? tat : ws;

	/* A ws far ahead: the clock went backwards; start again from now. */
	return ws > now + FC_CLOCK_SLACK_NS || (now >= last && now - last >= d);
}

/* x * m / FC_WARM_ONE, rounded up, for x <= FC_WARM_TOL_MAX and m <= 3
 * FC_WARM_ONE, without a 128-bit product (BPF has none). */
FC_INLINE __u64 fc_warm_scale(__u64 x, __u64 m)
{
	return (x >> 20) * m + (((x & (FC_WARM_ONE - 1)) * m + FC_WARM_ONE - 1) >> 20);
}

/* The ramp at now of a bucket whose warm start is ws (not cold: the
 * caller has set ws = now if it was). inc: the plain increment. */
FC_INLINE void fc_warm_ramp(const struct fc_tier *t, __u64 d, __u64 ws, __u64 now, __u64 inc, __u64 queue,
			    struct fc_ramp *r)
{
	__u64 e = now > ws ? now - ws : 0, dq = (d + (1 << FC_WARM_SHIFT) - 1) >> FC_WARM_SHIFT, k;

	if (e < d) {
		k = dq + 2 * (e >> FC_WARM_SHIFT);
		r->mult = (3 * dq * FC_WARM_ONE + k - 1) / k;
		r->inc = fc_warm_scale(inc, r->mult);
		r->floor = now;
	} else {
		r->mult = FC_WARM_ONE;
		r->inc = inc;
		r->floor = ws + d;
	}
	r->tol = t->tolerance_ns > r->inc ? t->tolerance_ns : r->inc;
	r->room = fc_room(r->tol, t->interval_ns, queue);
	/* tol - min(tol, max(inc, grain)): the credit, never past the bucket */
	k = r->inc > FC_WARM_GRAIN_NS ? r->inc : FC_WARM_GRAIN_NS;
	r->floor += r->tol - (k < r->tol ? k : r->tol);
}

/* Charges the warming tier (lim's first) whose word is *state and ramp
 * start *wsw, for cost at now (queue: a delaying policy's): returns the new
 * word (never 0), with *prev the word before and *tol (if not NULL) the
 * tolerance it was admitted under; 0 if the rule denies (nothing charged; a
 * ramp may have started). The ramp is read once; a TAT that moves under the CAS is
 * charged again from where it went, unless that leaves the bucket cold (a
 * refund took the last charge back): then deny, the next request starts
 * the ramp. */
FC_INLINE __u64 fc_warm_charge(__u64 *state, __u64 *wsw, const struct fc_limits *lim, __u64 warmup_ns, __u64 now,
			       __u64 cost, __u64 queue, __u64 *prev, __u64 *tol)
{
	const struct fc_tier *t = &lim->tier[0];
	__u64 inc = fc_gcra_increment(t, cost), hi = FC_TAG(lim), word, tat, ws, base,
	      next, old, edge;
	struct fc_ramp r;
	int i;

	/* The loader never makes such a policy; the bounds keep the ramp's
	 * divisor from 0 and its products below 2^64. */
	if (inc > t->tolerance_ns || inc > FC_WARM_TOL_MAX || warmup_ns < FC_WARMUP_MIN_NS ||
	    warmup_ns > FC_WARMUP_MAX_NS)
		return 0;
	ws = *(volatile __u64 *)wsw;
	word = *(volatile __u64 *)state;
	if (fc_warm_cold(word & FC_TAT_MASK, ws, warmup_ns, now)) {
		/* Another request starting it at once: it takes the one place. */
		if (__sync_val_compare_and_swap(wsw, ws, now) != ws)
			return 0;
		ws = now;
	}
	fc_warm_ramp(t, warmup_ns, ws, now, inc, queue, &r);
	/* With ws as it is, the bucket is cold again once its TAT is below
	 * edge (0: never, ws being too recent). */
	edge = ws + warmup_ns <= now ? now - warmup_ns + 1 : 0;
	for (i = 0; i < FC_CAS_TRIES; i++) {
		/* Another generation's (fc_gcra_adopt left it): nothing fits. */
		if (word >> FC_GEN_SHIFT != hi >> FC_GEN_SHIFT)
			return 0;
		tat = word - hi;
		base = fc_gcra_base(tat, r.room, now);
		next = (base > r.floor ? base : r.floor) + r.inc;
		if (next - now > r.room)
			return 0;
		old = __sync_val_compare_and_swap(state, word, next + hi);
		if (old == word)
			break;
		word = old;
		if ((word & FC_TAT_MASK) < edge)
			return 0;
	}
	if (i == FC_CAS_TRIES)
		return 0;
	/* A restart moved ws meanwhile: our ramp is not the bucket's. */
	if (*(volatile __u64 *)wsw != ws) {
		__sync_val_compare_and_swap(state, next + hi, word);
		return 0;
	}
	*prev = word;
	if (tol)
		*tol = r.tol;
	return next + hi;
}

/* What one policy's charge did to each tier's word, so that a later denial
 * can roll it back: no clock is read again, nothing is recomputed. */
struct fc_charge {
	__u64 prev[FC_MAX_TIERS];
	__u64 next[FC_MAX_TIERS];
};

/* fc_warm_limit's fifth argument: the cost and the tiers, packed (a BPF
 * global function takes five). A cost past FC_WARM_COST_MAX (16 MB: no
 * frame is) is refused. */
#define FC_WARM_COST_BITS 24
#define FC_WARM_COST_MAX  ((1ULL << FC_WARM_COST_BITS) - 1)
#define FC_WARM_ARG(cost, ntiers) ((cost) | (__u64)(ntiers) << 56)

/* A warm-up policy's charge, every tier or none (arg: FC_WARM_ARG): its
 * first tier ramps, the others are plain GCRA. In BPF a global function,
 * called last: checked once, and nothing of its callers' lives across it.
 * st: the bucket's words; lim: the policy's limits, D in lim->warmup_ms. */
FC_GLOBAL_FN int fc_warm_limit(__u64 (*st)[FC_MAX_TIERS], const struct fc_limits *lim, struct fc_charge *ch, __u64 now,
			       __u64 arg)
{
	/* ntiers is at most FC_MAX_TIERS, and the ramp's word needs one more:
	 * 4 masks to 0 (refused), and the mask is a bound the verifier sees. */
	__u64 ntiers = (arg >> 56) & (FC_MAX_TIERS - 1), cost = arg & FC_WARM_COST_MAX, i, next;

	if (!st || !lim || !ch || !ntiers)
		return 0;
	/* The plain tiers first: the ramp's many values then live alone. */
	for (i = 1; i < ntiers; i++)
		if (!fc_gcra_try(&(*st)[i], &lim->tier[i], FC_TAG(lim), now, cost, &ch->prev[i], &ch->next[i]))
			goto deny;
	/* Written only when it admits, as a plain tier's: the packet path
	 * keeps one charge for two single-tier policies. */
	next = fc_warm_charge(&(*st)[0], &(*st)[ntiers], lim, (__u64)lim->warmup_ms * FC_MS_NS, now, cost, 0,
			      &ch->prev[0], NULL);
	if (next) {
		ch->next[0] = next;
		return 1;
	}
deny:
	for (i--; i > 0; i--)
		fc_gcra_refund(&(*st)[i], ch->prev[i], ch->next[i]);
	return 0;
}

FC_INLINE __u64 fc_window_index(const struct fc_tier *t, __u64 now)
{
	return (now / t->unit_ns) & FC_WIN_IDX_MASK;
}

/* Fixed window: returns 1 if cost fits in this window's remaining count. */
FC_INLINE int fc_window_try(__u64 *state, const struct fc_tier *t, __u64 now, __u64 cost, __u64 *prev, __u64 *next)
{
	__u64 idx = fc_window_index(t, now), old, count;
	int i;

	for (i = 0; i < FC_CAS_TRIES; i++) {
		old = *(volatile __u64 *)state;
		count = (old >> FC_WIN_COUNT_BITS) == idx ? old & FC_WIN_COUNT_MASK : 0;
		if (count + cost > t->limit)
			return 0;
		if (__sync_val_compare_and_swap(state, old, (idx << FC_WIN_COUNT_BITS) | (count + cost)) == old) {
			*prev = old;
			*next = (idx << FC_WIN_COUNT_BITS) | (count + cost);
			return 1;
		}
	}
	return 0;
}

/* Undoes an admission of cost that moved a counting word from prev to next
 * (the window's index above idx_shift, the count of this window cnt_shift
 * up under cnt_mask): counts add up, so within the window of next the cost
 * comes off whatever others added since; a charge to a window that has since
 * ended is not given back. */
FC_INLINE void fc_count_refund(__u64 *state, __u64 cost, __u64 prev, __u64 next, int idx_shift, int cnt_shift,
			       __u64 cnt_mask)
{
	__u64 idx = next >> idx_shift, old;
	int i;

	if (__sync_val_compare_and_swap(state, next, prev) == next)
		return;
	for (i = 0; i < FC_CAS_TRIES; i++) {
		old = *(volatile __u64 *)state;
		if ((old >> idx_shift) != idx || ((old >> cnt_shift) & cnt_mask) < cost)
			return;
		if (__sync_val_compare_and_swap(state, old, old - (cost << cnt_shift)) == old)
			return;
	}
}

FC_INLINE void fc_window_refund(__u64 *state, __u64 cost, __u64 prev, __u64 next)
{
	fc_count_refund(state, cost, prev, next, FC_WIN_COUNT_BITS, 0, FC_WIN_COUNT_MASK);
}

/*
 * Sliding window (the counter approximation): with c_prev the count of the
 * previous aligned window, c_cur the current one's and e the time elapsed in
 * the current window of length U, a cost c is admitted iff
 *
 *	c_prev * (U - e) + (c_cur + c) * U <= N * U
 *
 * U and e in microseconds, e rounded down: the previous window's weight is
 * never under-counted, so the rounding (under 1 us of U) only ever denies.
 * A window more than one behind counts 0; a cost over N is always denied.
 */
FC_INLINE __u64 fc_slide_index(const struct fc_tier *t, __u64 now)
{
	return (now / t->unit_ns) & FC_SLIDE_IDX_MASK;
}

/* The counts of word as seen in window idx: this window's, the last one's. */
FC_INLINE void fc_slide_counts(__u64 word, __u64 idx, __u64 *prev, __u64 *cur)
{
	__u64 widx = word >> FC_SLIDE_IDX_SHIFT, c = (word >> FC_SLIDE_COUNT_BITS) & FC_SLIDE_COUNT_MAX;

	*cur = widx == idx ? c : 0;
	*prev = widx == idx ? word & FC_SLIDE_COUNT_MAX : widx == ((idx - 1) & FC_SLIDE_IDX_MASK) ? c : 0;
}

/* U and e in microseconds at now, in window w = now / U: now % U is
 * now - w * U, which spares a division. */
FC_INLINE void fc_slide_span(const struct fc_tier *t, __u64 now, __u64 w, __u64 *u, __u64 *e)
{
	*u = t->unit_ns / FC_SLIDE_NS;
	*e = (now - w * t->unit_ns) / FC_SLIDE_NS;
}

FC_INLINE void fc_slide_clock(const struct fc_tier *t, __u64 now, __u64 *idx, __u64 *u, __u64 *e)
{
	__u64 w = now / t->unit_ns;

	*idx = w & FC_SLIDE_IDX_MASK;
	fc_slide_span(t, now, w, u, e);
}

/* The rule's left side, c_prev*(U-e) + c_cur*U, in microseconds (to
 * compare with N*U). */
FC_INLINE __u64 fc_slide_used(__u64 u, __u64 e, __u64 prev, __u64 cur)
{
	return prev * (u - e) + cur * u;
}

/* Returns the word after charging cost (never 0: the count is at least
 * cost), with *prev the word before; 0 if the rule denies (nothing charged).
 * Inline: the packet path charges a single-tier policy with it (see
 * fc_sliding_charge). */
FC_INLINE __u64 fc_slide_charge(__u64 *state, const struct fc_tier *t, __u64 now, __u64 cost, __u64 *prev)
{
	__u64 w = now / t->unit_ns, idx = w & FC_SLIDE_IDX_MASK, u, e, old, word, p, c;
	int i;

	for (i = 0; i < FC_CAS_TRIES; i++) {
		old = *(volatile __u64 *)state;
		fc_slide_counts(old, idx, &p, &c);
		/* 0 <= c_prev*(U-e) <= c_prev*U: the time into the window decides
		 * only where c_cur + c <= N < c_prev + c_cur + c, and is worked
		 * out only there (two divisions that a source under its limit, or
		 * a flood past it, never pays). cost <= FC_COST_MAX keeps
		 * (c_cur + c) * U small. */
		if (c + cost > t->limit)
			return 0;
		if (p + c + cost > t->limit) {
			fc_slide_span(t, now, w, &u, &e);
			if (fc_slide_used(u, e, p, c + cost) > t->limit * u)
				return 0;
		}
		word = idx << FC_SLIDE_IDX_SHIFT | (c + cost) << FC_SLIDE_COUNT_BITS | p;
		if (__sync_val_compare_and_swap(state, old, word) == old) {
			*prev = old;
			return word;
		}
	}
	return 0;
}

/* The same out of line: in BPF, inlined in every tier of every caller beside
 * GCRA and the fixed window, it spilled past the 512-byte stack; in the
 * nginx module it moved gcc's registers on the GCRA path (FC_SLOWPATH). */
FC_SLOWPATH __u64 fc_sliding_charge(__u64 *state, const struct fc_tier *t, __u64 now, __u64 cost, __u64 *prev)
{
	return fc_slide_charge(state, t, now, cost, prev);
}

FC_INLINE int fc_sliding_try(__u64 *state, const struct fc_tier *t, __u64 now, __u64 cost, __u64 *prev, __u64 *next)
{
	*next = fc_sliding_charge(state, t, now, cost, prev);
	return *next != 0;
}

/* The same for the sliding window's word: within the window of next the
 * cost comes off this window's count; once the window has moved on, the
 * charge stays. */
FC_INLINE void fc_sliding_refund(__u64 *state, __u64 cost, __u64 prev, __u64 next)
{
	fc_count_refund(state, cost, prev, next, FC_SLIDE_IDX_SHIFT, FC_SLIDE_COUNT_BITS, FC_SLIDE_COUNT_MAX);
}

FC_INLINE void fc_limit_refund(__u8 algo, __u8 ntiers, __u64 *state, __u64 cost, const struct fc_charge *ch)
{
	int i;

	for (i = 0; i < FC_MAX_TIERS; i++) {
		if (i >= ntiers)
			break;
		if (algo == FC_ALGO_GCRA)
			fc_gcra_refund(&state[i], ch->prev[i], ch->next[i]);
		else if (algo == FC_ALGO_SLIDING)
			fc_sliding_refund(&state[i], cost, ch->prev[i], ch->next[i]);
		else
			fc_window_refund(&state[i], cost, ch->prev[i], ch->next[i]);
	}
}

/* Charges cost to every one of ntiers tiers of lim, or to none: returns 1
 * if all admit, 0 if not, FC_CHARGE_REGEN if a GCRA word is of another
 * generation than lim's (the first charge after its rates changed; nothing
 * charged: fc_limit_try brings the bucket, the BPF programs' general path
 * does). A GCRA policy's --warmup (lim->warmup_ms, 0: none) ramps the first
 * tier, and its word follows the tiers' in state (FC_MAX_TIERS words too).
 * Always inline, in userspace too: the nginx module's decision calls it
 * once, and gcc's own choice there was a call costing a third more. */
FC_INLINE __attribute__((always_inline)) int fc_limit_charge(__u8 algo, __u8 ntiers, const struct fc_limits *lim,
							    __u64 *state, __u64 now, __u64 cost,
							    struct fc_charge *ch)
{
	int i, ok;

	if (algo == FC_ALGO_GCRA && lim->warmup_ms) {
		if (fc_gen_stale(lim, state))
			return FC_CHARGE_REGEN;
		return cost <= FC_WARM_COST_MAX &&
		       fc_warm_limit((__u64(*)[FC_MAX_TIERS])state, lim, ch, now, FC_WARM_ARG(cost, ntiers));
	}
	for (i = 0; i < FC_MAX_TIERS; i++) {
		if (i >= ntiers)
			break;
		if (algo == FC_ALGO_GCRA)
			ok = fc_gcra_charge(&state[i], &lim->tier[i], FC_TAG(lim), now, cost, 0, &ch->prev[i],
					    &ch->next[i]);
		else if (algo == FC_ALGO_SLIDING)
			ok = fc_sliding_try(&state[i], &lim->tier[i], now, cost, &ch->prev[i], &ch->next[i]);
		else
			ok = fc_window_try(&state[i], &lim->tier[i], now, cost, &ch->prev[i], &ch->next[i]);
		if (ok != 1) {
			fc_limit_refund(algo, (__u8)i, state, cost, ch);
			return ok;
		}
	}
	return 1;
}

#ifndef __bpf__
/* fc_limit_charge of a bucket brought to lim's generation first if it is
 * of another: 1 if admitted, 0 if not. */
static inline __attribute__((always_inline)) int fc_limit_try(__u8 algo, __u8 ntiers, const struct fc_limits *lim,
							     __u64 *state, __u64 now, __u64 cost, struct fc_charge *ch)
{
	int ok = fc_limit_charge(algo, ntiers, lim, state, now, cost, ch);

	if (ok != FC_CHARGE_REGEN)
		return ok;
	fc_gcra_adopt((__u64(*)[FC_MAX_TIERS])state, lim, now, FC_ADOPT_ARG(ntiers, 0));
	return fc_limit_charge(algo, ntiers, lim, state, now, cost, ch) == 1;
}

/* Whether tiers from and to have the same interval, T = unit / N (a
 * bucket's words mean the same under both). */
static inline int fc_interval_same(const struct fc_tier *from, const struct fc_tier *to)
{
	return (unsigned __int128)to->unit_ns * from->limit == (unsigned __int128)from->unit_ns * to->limit;
}

static inline unsigned __int128 fc_gcd128(unsigned __int128 a, unsigned __int128 b)
{
	unsigned __int128 t;

	while (b) {
		t = a % b;
		a = b;
		b = t;
	}
	return a;
}

/* The rescale word from tier from's interval to tier to's (another: see
 * fc_interval_same): T'/T = to.unit * from.N / (from.unit * to.N), reduced;
 * where that does not fit 31 bits a side, both halved, the numerator
 * rounded up and the denominator down, so that a rescaled lead is never
 * short of the exact one; FC_RESCALE_FULL where the ratio is past that
 * (T grew some 2^31-fold). */
static inline __u64 fc_rescale_of(const struct fc_tier *from, const struct fc_tier *to)
{
	unsigned __int128 a = (unsigned __int128)to->unit_ns * from->limit,
			  b = (unsigned __int128)from->unit_ns * to->limit, g;

	if (!a || !b)
		return FC_RESCALE(a ? FC_RESCALE_FULL : FC_RESCALE_FRESH, 0, 0);
	g = fc_gcd128(a, b);
	a /= g;
	b /= g;
	while (a > FC_RESCALE_MAX || b > FC_RESCALE_MAX) {
		a = (a + 1) / 2;
		b /= 2;
		if (!b)
			return FC_RESCALE(FC_RESCALE_FULL, 0, 0);
	}
	return FC_RESCALE(FC_RESCALE_SCALE, (__u64)a, (__u64)b);
}

/*
 * GCRA for shaping (L7 action delay, like nginx limit_req without nodelay):
 * admits up to `queue` emission intervals beyond the burst, and says how long
 * the request must wait to conform: *wait = new_tat - now - tolerance, or 0.
 */
static inline int fc_gcra_try_delay(__u64 *state, const struct fc_limits *lim, int i, __u64 now, __u64 cost,
				    __u64 queue, __u64 *prev, __u64 *next, __u64 *wait)
{
	const struct fc_tier *t = &lim->tier[i];
	__u64 lead;

	if (fc_gcra_charge(state, t, FC_TAG(lim), now, cost, queue, prev, next) != 1)
		return 0;
	lead = (*next & FC_TAT_MASK) - now;
	*wait = lead > t->tolerance_ns ? lead - t->tolerance_ns : 0;
	return 1;
}

/* The TAT of tier i's word as a charge of lim at now (with room) counts
 * it: rescaled as fc_gcra_adopt would; one it would leave as it is (which
 * admits nothing until its TAT passes or its rescale fits) full, and no
 * further than fc_gcra_base reads as a TAT rather than a clock stepped back. */
static inline __u64 fc_gcra_view(const struct fc_limits *lim, int i, __u64 word, __u64 now, __u64 room)
{
	__u64 gen = FC_GEN(lim), w = fc_gcra_regen(word, gen, lim->rescale[i], now, room), tat;

	if (w >> FC_GEN_SHIFT == gen)
		return w & FC_TAT_MASK;
	tat = w & FC_TAT_MASK;
	return tat < now + room ? now + room : tat < now + room + FC_CLOCK_SLACK_NS ? tat : now + room + FC_CLOCK_SLACK_NS;
}

static inline __u64 fc_gcra_tat(const struct fc_limits *lim, int i, __u64 word, __u64 now, __u64 queue)
{
	return fc_gcra_view(lim, i, word, now, fc_tier_room(lim, i, queue));
}

/*
 * Sliding window: how long until cost conforms. Within a window, with
 * c_cur + c <= N, the rule holds from e >= U - (N - c_cur - c) * U / c_prev
 * (the quotient rounded down, in microseconds); otherwise from the next
 * window, where this window's count becomes c_prev and c_cur is 0. A cost
 * over N never conforms: the answer is then the end of the next window,
 * when both counts have gone.
 */
static inline __u64 fc_sliding_at(__u64 u, __u64 n, __u64 prev, __u64 cur, __u64 cost)
{
	__u64 q;

	if (!prev)
		return 0;
	q = (n - cur - cost) * u / prev;
	return q >= u ? 0 : u - q;
}

static inline __u64 fc_sliding_retry_after(const struct fc_tier *t, __u64 state, __u64 now, __u64 cost)
{
	__u64 u = t->unit_ns / FC_SLIDE_NS, e_ns = now % t->unit_ns, at, p, c;

	fc_slide_counts(state, fc_slide_index(t, now), &p, &c);
	if (cost > t->limit)
		return 2 * t->unit_ns - e_ns;
	if (c + cost <= t->limit) {
		at = fc_sliding_at(u, t->limit, p, c, cost) * FC_SLIDE_NS;
		return at > e_ns ? at - e_ns : 0;
	}
	return t->unit_ns - e_ns + fc_sliding_at(u, t->limit, c, 0, cost) * FC_SLIDE_NS;
}

/* How long until a request of cost would conform to tier i of lim (0 =
 * now); queue: the policy's delay queue, whose TATs run that far ahead. */
static inline __u64 fc_tier_retry_after(__u8 algo, const struct fc_limits *lim, int i, __u64 state, __u64 now,
					__u64 cost, __u64 queue)
{
	const struct fc_tier *t = &lim->tier[i];
	__u64 new_tat, idx;

	if (algo == FC_ALGO_GCRA) {
		new_tat = fc_gcra_base(fc_gcra_tat(lim, i, state, now, queue), fc_gcra_room(t, queue), now) +
			  fc_gcra_increment(t, cost);
		return new_tat - now > t->tolerance_ns ? new_tat - now - t->tolerance_ns : 0;
	}
	if (algo == FC_ALGO_SLIDING)
		return fc_sliding_retry_after(t, state, now, cost);
	idx = fc_window_index(t, now);
	if ((state >> FC_WIN_COUNT_BITS) != idx || (state & FC_WIN_COUNT_MASK) + cost <= t->limit)
		return 0;
	return t->unit_ns - now % t->unit_ns;
}

/* The warming tier of lim (its first, whose word is word) as a request of
 * cost at now would find it (the ramp started afresh if the bucket is
 * cold): fills r, returns the TAT the charge would count from, max(TAT,
 * now, F). */
static inline __u64 fc_warm_view(const struct fc_limits *lim, __u64 warmup_ns, __u64 word, __u64 ws, __u64 now,
				 __u64 cost, __u64 queue, struct fc_ramp *r)
{
	const struct fc_tier *t = &lim->tier[0];
	__u64 base;

	if (fc_warm_cold(word & FC_TAT_MASK, ws, warmup_ns, now))
		ws = now;
	fc_warm_ramp(t, warmup_ns, ws, now, fc_gcra_increment(t, cost), queue, r);
	base = fc_gcra_base(fc_gcra_view(lim, 0, word, now, r->room), r->room, now);
	return base > r->floor ? base : r->floor;
}

/* How many more requests of cost 1 tier i of lim admits right now. */
static inline __u64 fc_tier_remaining(__u8 algo, const struct fc_limits *lim, int i, __u64 state, __u64 now,
				      __u64 queue)
{
	const struct fc_tier *t = &lim->tier[i];
	__u64 used, count;

	if (algo == FC_ALGO_GCRA) {
		used = fc_gcra_base(fc_gcra_tat(lim, i, state, now, queue), fc_gcra_room(t, queue), now) - now;
		return used >= t->tolerance_ns ? 0 : (t->tolerance_ns - used) / t->interval_ns;
	}
	if (algo == FC_ALGO_SLIDING) {
		__u64 idx, u, e, p, c;

		fc_slide_clock(t, now, &idx, &u, &e);
		fc_slide_counts(state, idx, &p, &c);
		used = fc_slide_used(u, e, p, c);
		return used >= t->limit * u ? 0 : (t->limit * u - used) / u;
	}
	count = (state >> FC_WIN_COUNT_BITS) == fc_window_index(t, now) ? state & FC_WIN_COUNT_MASK : 0;
	return count >= t->limit ? 0 : t->limit - count;
}

/* What a bucket tells a client (RateLimit headers, freqctl keys). */
struct fc_limit_view {
	__u64 limit;     /* the first tier's N per unit; while it warms, the ramped N (rounded, at least 1) */
	__u64 remaining; /* requests of cost 1 the first tier admits now */
	__u64 retry_ns;  /* until a request of cost 1 conforms to every tier (0: now) */
};

static inline void fc_limit_view(__u8 algo, __u8 ntiers, const struct fc_limits *lim, const __u64 *state, __u64 now,
				 __u64 queue, struct fc_limit_view *v)
{
	__u64 warmup_ns = lim->warmup_ms * FC_MS_NS, base, retry;
	struct fc_ramp r;
	int i;

	v->limit = lim->tier[0].limit;
	v->remaining = fc_tier_remaining(algo, lim, 0, state[0], now, queue);
	v->retry_ns = 0;
	for (i = 0; i < ntiers && i < FC_MAX_TIERS; i++) {
		if (algo == FC_ALGO_GCRA && !i && warmup_ns && ntiers < FC_MAX_TIERS) {
			base = fc_warm_view(lim, warmup_ns, state[0], state[ntiers], now, 1, queue, &r) - now;
			v->limit = (lim->tier[0].limit * FC_WARM_ONE + r.mult / 2) / r.mult;
			v->limit = v->limit ? v->limit : 1;
			v->remaining = base >= r.tol ? 0 : (r.tol - base) / r.inc;
			retry = base + r.inc > r.tol ? base + r.inc - r.tol : 0;
		} else {
			retry = fc_tier_retry_after(algo, lim, i, state[i], now, 1, queue);
		}
		if (retry > v->retry_ns)
			v->retry_ns = retry;
	}
}
#endif

#endif /* FC_LIMIT_H */
