/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The limit algorithms, GCRA, fixed and sliding window, as header-only C
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

#define FC_MAX_TIERS  4
#define FC_NS_PER_SEC 1000000000ULL

/* Bounded retries of a contended compare-and-exchange; past them, deny. */
#define FC_CAS_TRIES 8

/* A TAT this far beyond what any admission can leave (its room: the
 * tolerance, plus the queue of a delaying policy) means the clock went
 * backwards (settimeofday): the bucket starts afresh instead of denying for
 * as long as the jump. Wide enough for clock skew between CPUs. */
#define FC_CLOCK_SLACK_NS FC_NS_PER_SEC

/* Rooms saturate here: far beyond any real lead, and now + room + slack
 * stays below 2^64 for centuries. */
#define FC_ROOM_MAX (1ULL << 62)

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
#else
#define FC_INLINE static inline
#define FC_SLOWPATH static inline
#endif
#endif

/* A policy that needs the precise clock: its GCRA tolerance is too short for
 * a coarse clock (the kernel's tick, nginx's cached time), which would admit
 * at most B per tick. */
#define FC_POLICY_PRECISE 0x1

enum fc_algo {
	FC_ALGO_GCRA,
	FC_ALGO_WINDOW,
	FC_ALGO_SLIDING,
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
FC_INLINE __u64 fc_gcra_room(const struct fc_tier *t, __u64 queue)
{
	__u64 q;

	if (queue && t->interval_ns > FC_ROOM_MAX / queue)
		return FC_ROOM_MAX;
	q = queue * t->interval_ns;
	return t->tolerance_ns > FC_ROOM_MAX - q ? FC_ROOM_MAX : t->tolerance_ns + q;
}

/* Where a new TAT starts from: max(tat, now), or now if the clock went
 * backwards past anything an admission within room can leave. */
FC_INLINE __u64 fc_gcra_base(__u64 tat, __u64 room, __u64 now)
{
	if (tat > now + room + FC_CLOCK_SLACK_NS)
		return now;
	return tat > now ? tat : now;
}

/* GCRA, the future-TAT check, allowing room ahead of now: returns 1 if
 * admitted (and the word before and after), 0 if not (nothing charged). */
FC_INLINE int fc_gcra_charge(__u64 *state, const struct fc_tier *t, __u64 now, __u64 cost, __u64 room, __u64 *prev,
			     __u64 *next)
{
	__u64 inc = fc_gcra_increment(t, cost), tat, new_tat;
	int i;

	for (i = 0; i < FC_CAS_TRIES; i++) {
		tat = *(volatile __u64 *)state;
		new_tat = fc_gcra_base(tat, room, now) + inc;
		if (new_tat - now > room)
			return 0;
		if (__sync_val_compare_and_swap(state, tat, new_tat) == tat) {
			*prev = tat;
			*next = new_tat;
			return 1;
		}
	}
	return 0;
}

FC_INLINE int fc_gcra_try(__u64 *state, const struct fc_tier *t, __u64 now, __u64 cost, __u64 *prev, __u64 *next)
{
	return fc_gcra_charge(state, t, now, cost, t->tolerance_ns, prev, next);
}

/* Undoes an admission that moved the word from prev to next, if nobody moved
 * it since. Otherwise the charge stays: a later charge may have started
 * afresh from the clock (the TAT had fallen behind it), and taking our
 * increment off would take it off theirs. */
FC_INLINE void fc_gcra_refund(__u64 *state, __u64 prev, __u64 next)
{
	__sync_val_compare_and_swap(state, next, prev);
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

/* U and e in microseconds at now: two divisions (now % U is now - w * U,
 * which spares the packet path a third). */
FC_INLINE void fc_slide_clock(const struct fc_tier *t, __u64 now, __u64 *idx, __u64 *u, __u64 *e)
{
	__u64 w = now / t->unit_ns;

	*idx = w & FC_SLIDE_IDX_MASK;
	*u = t->unit_ns / FC_SLIDE_NS;
	*e = (now - w * t->unit_ns) / FC_SLIDE_NS;
}

/* The rule's left side, c_prev*(U-e) + c_cur*U, in microseconds (to
 * compare with N*U). */
FC_INLINE __u64 fc_slide_used(__u64 u, __u64 e, __u64 prev, __u64 cur)
{
	return prev * (u - e) + cur * u;
}

/* Returns the word after charging cost (never 0: the count is at least
 * cost), with *prev the word before; 0 if the rule denies (nothing charged).
 * Out of line in BPF: inlined in every tier of every caller beside GCRA and
 * the fixed window, it spilled past the 512-byte stack. */
FC_SLOWPATH __u64 fc_sliding_charge(__u64 *state, const struct fc_tier *t, __u64 now, __u64 cost, __u64 *prev)
{
	__u64 idx, u, e, old, word, p, c;
	int i;

	fc_slide_clock(t, now, &idx, &u, &e);
	for (i = 0; i < FC_CAS_TRIES; i++) {
		old = *(volatile __u64 *)state;
		fc_slide_counts(old, idx, &p, &c);
		/* cost <= FC_COST_MAX keeps (c + cost) * U small. */
		if (fc_slide_used(u, e, p, c + cost) > t->limit * u)
			return 0;
		word = idx << FC_SLIDE_IDX_SHIFT | (c + cost) << FC_SLIDE_COUNT_BITS | p;
		if (__sync_val_compare_and_swap(state, old, word) == old) {
			*prev = old;
			return word;
		}
	}
	return 0;
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

/* What one policy's charge did to each tier's word, so that a later denial
 * can roll it back: no clock is read again, nothing is recomputed. */
struct fc_charge {
	__u64 prev[FC_MAX_TIERS];
	__u64 next[FC_MAX_TIERS];
};

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

/* Charges cost to every tier, or to none: returns 1 if all admit. */
FC_INLINE int fc_limit_try(__u8 algo, __u8 ntiers, const struct fc_tier *tiers, __u64 *state, __u64 now,
			   __u64 cost, struct fc_charge *ch)
{
	int i, ok;

	for (i = 0; i < FC_MAX_TIERS; i++) {
		if (i >= ntiers)
			break;
		if (algo == FC_ALGO_GCRA)
			ok = fc_gcra_try(&state[i], &tiers[i], now, cost, &ch->prev[i], &ch->next[i]);
		else if (algo == FC_ALGO_SLIDING)
			ok = fc_sliding_try(&state[i], &tiers[i], now, cost, &ch->prev[i], &ch->next[i]);
		else
			ok = fc_window_try(&state[i], &tiers[i], now, cost, &ch->prev[i], &ch->next[i]);
		if (!ok) {
			fc_limit_refund(algo, (__u8)i, state, cost, ch);
			return 0;
		}
	}
	return 1;
}

#ifndef __bpf__
/*
 * GCRA for shaping (L7 action delay, like nginx limit_req without nodelay):
 * admits up to `queue` emission intervals beyond the burst, and says how long
 * the request must wait to conform: *wait = new_tat - now - tolerance, or 0.
 */
static inline int fc_gcra_try_delay(__u64 *state, const struct fc_tier *t, __u64 now, __u64 cost, __u64 queue,
				    __u64 *prev, __u64 *next, __u64 *wait)
{
	if (!fc_gcra_charge(state, t, now, cost, fc_gcra_room(t, queue), prev, next))
		return 0;
	*wait = *next - now > t->tolerance_ns ? *next - now - t->tolerance_ns : 0;
	return 1;
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

/* How long until a request of cost would conform to this tier (0 = now);
 * queue: the policy's delay queue, whose TATs run that far ahead. */
static inline __u64 fc_tier_retry_after(__u8 algo, const struct fc_tier *t, __u64 state, __u64 now, __u64 cost,
					__u64 queue)
{
	__u64 new_tat, idx;

	if (algo == FC_ALGO_GCRA) {
		new_tat = fc_gcra_base(state, fc_gcra_room(t, queue), now) + fc_gcra_increment(t, cost);
		return new_tat - now > t->tolerance_ns ? new_tat - now - t->tolerance_ns : 0;
	}
	if (algo == FC_ALGO_SLIDING)
		return fc_sliding_retry_after(t, state, now, cost);
	idx = fc_window_index(t, now);
	if ((state >> FC_WIN_COUNT_BITS) != idx || (state & FC_WIN_COUNT_MASK) + cost <= t->limit)
		return 0;
	return t->unit_ns - now % t->unit_ns;
}

/* How many more requests of cost 1 this tier admits right now. */
static inline __u64 fc_tier_remaining(__u8 algo, const struct fc_tier *t, __u64 state, __u64 now, __u64 queue)
{
	__u64 used, count;

	if (algo == FC_ALGO_GCRA) {
		used = fc_gcra_base(state, fc_gcra_room(t, queue), now) - now;
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
#endif

#endif /* FC_LIMIT_H */
