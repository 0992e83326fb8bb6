/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Fleet-global limits (--fleet): the shares and the credit words, as
 * header-only C for the XDP/TC programs (clang -target bpf), the nginx
 * module, the agent and the tests, so that every one of them runs the same
 * code on the same words. doc/fleet-design.md (the reviewed design, issue
 * 29) is the why; this is the what.
 *
 * A fleet policy has one rate, N per unit for the whole fleet. Each window's
 * N is split into whole-number shares (struct fc_fleet_split, made by the
 * loader), and a node's credit lives in the words its workers already
 * charge: the key entry's state[0..3] (nginx) or fc_buckets[slot] (XDP/TC).
 * Workers spend it; the agent tops it up with grants and locks what it
 * releases, by compare-and-exchange on the same words, so both are exact
 * against any number of racing workers.
 *
 *   word      window                  sliding                          gcra
 *   state[0]  w24 << 40 | credit40    w16 << 48 | room24 << 24 | prev24 TAT (interval T_i, tolerance state[3])
 *   state[1]  demand: w24 << 40 | FC_FLEET_WANTED (every algorithm; gcra: the lease window)
 *   state[2]  0                       net: w24 << 40 | (G - R + 2^39)   lease credit: lw24 << 40 | credit40
 *
 * (w24, w16: a label field, FC_FLEET_LABEL and FC_FLEET_SLABEL.)
 *   state[3]  0                       0                                 tau_i = B_i * T_i of this key
 *
 * Windows are labelled with 23 bits of the window index (15 for sliding)
 * under a "written" bit, so that a new entry's zeros are of no window: a
 * word whose label is behind the current one (mod 2^23, by less than half
 * the range), or never written, rolls over; one ahead of it (the clock
 * stepped back) refuses: a node never reopens a window it has left. A word
 * of a window exactly 2^23 (2^15) windows old reads as current: it only
 * refuses, for that one window.
 *
 * Every word the agent reads here is in a file workers can write: hostile.
 * The agent's operations bound their tries and their arithmetic (a credit
 * never passes FC_FLEET_CREDIT_MAX, a count never FC_SLIDE_COUNT_MAX), so a
 * corrupt word costs its key's credit, never the agent.
 */
#ifndef FC_FLEET_H
#define FC_FLEET_H

#include <linux/types.h>

#include "fc_limit.h"

/* A split not in use (its `from`). */
#define FC_FLEET_NEVER (~0ULL)

/* struct fc_fleet_split (one node set's split of a quantity q, N for
 * window and sliding, B for gcra, for windows from `from` on). The loader
 * computes it with 128-bit products (loader/lib/publish/fc_fleet_split.c):
 *
 *   base_j = floor(q W_j / S)   f_j = q W_j mod S   r = sum(f_j) / S
 *   F_j = sum_{l<j} f_l         seg_lo = floor(F_i 2^32 / S)   seg_hi = floor(F_{i+1} 2^32 / S)
 *
 * (seg_hi of the last node: r 2^32). The remainder r is dealt by
 * systematic sampling at the points u + m 2^32 (m < r), u the key's point
 * (fc_fleet_point): node i gets one more unit per point in [seg_lo, seg_hi).
 * A node outside the set has the split {from, 0, 0, 0, 0}: share 0. */
struct fc_fleet_split {
	__u64 from;   /* first window index (utc_ns / unit_ns); FC_FLEET_NEVER: unused */
	__u64 base;   /* floor(q W_i / S) */
	__u64 seg_lo; /* the node's segment of [0, r 2^32) */
	__u64 seg_hi;
	__u64 interval_ns; /* gcra: T_i = ceil(unit S / (N W_i)) (sum of R_i <= R); 0 otherwise */
};

/* This node's share for a key whose point is u: base plus the number of
 * points u + m 2^32 in [seg_lo, seg_hi), count(x) = ceil((x - u) / 2^32) =
 * (x + 2^32 - 1 - u) >> 32 for x >= 0. The shares of all nodes add up to
 * base + r = q for every u. seg_hi <= r 2^32 <= 2^63 (r < number of nodes
 * <= 1023): no sum wraps. */
FC_INLINE __u64 fc_fleet_share(const struct fc_fleet_split *sp, __u32 u)
{
	const __u64 one = 1ULL << 32;

	return sp->base + ((sp->seg_hi + one - 1 - u) >> 32) - ((sp->seg_lo + one - 1 - u) >> 32);
}

/* A key's point: the low 32 bits of its fleet tag (bit 32 and up: the tag's
 * FC_SHM_KEY_TAG_MIN and its second place in the key table). */
FC_INLINE __u32 fc_fleet_point(__u64 tag)
{
	return (__u32)tag;
}

/* The split that window w uses: split[1] once it is in use and w has
 * reached its `from`, else split[0]. */
FC_INLINE const struct fc_fleet_split *fc_fleet_split_of(const struct fc_fleet_split *sp, __u64 w)
{
	return sp[1].from != FC_FLEET_NEVER && w >= sp[1].from ? &sp[1] : &sp[0];
}

/*
 * The share this node spends in window w (of unit_ns) of a key whose point
 * is u, under the fresh rule (design section 5.5): a node whose state was
 * made anew at fresh_ns takes no share of a window that began before it
 * (sliding: before fresh_ns + unit, as the count lost with the old state
 * would be the next window's prev). lead_ns: 0 for window, unit_ns for
 * sliding. Once per key and window: callers call it from their rollover's
 * out-of-line path (XDP/TC takes the fixed key's shares from fc_policy).
 */
FC_INLINE __u64 fc_fleet_share_in(const struct fc_fleet_split *sp, __u32 u, __u64 w, __u64 unit_ns, __u64 fresh_ns,
				  __u64 lead_ns)
{
	if (w * unit_ns < fresh_ns + lead_ns)
		return 0;
	return fc_fleet_share(fc_fleet_split_of(sp, w), u);
}

/* ---- window labels ---- */

#define FC_FLEET_CREDIT_BITS 40
#define FC_FLEET_CREDIT_MAX ((1ULL << FC_FLEET_CREDIT_BITS) - 1) /* > FC_RATE_MAX */
/* A word's label field is 24 bits: the top one says the word was ever
 * written (a new entry's zeros are of no window: always behind), the
 * others are the window index mod 2^23 (97 days of /s windows). */
#define FC_FLEET_W_BITS 23
#define FC_FLEET_W_MASK ((1ULL << FC_FLEET_W_BITS) - 1)
#define FC_FLEET_LABEL(w) ((1ULL << FC_FLEET_W_BITS) | ((__u64)(w)&FC_FLEET_W_MASK))
#define FC_FLEET_WORD(w, credit) (FC_FLEET_LABEL(w) << FC_FLEET_CREDIT_BITS | (credit))
#define FC_FLEET_WORD_W(word) ((word) >> FC_FLEET_CREDIT_BITS) /* the label field */
#define FC_FLEET_WORD_CREDIT(word) ((word)&FC_FLEET_CREDIT_MAX)

/* Where a word's label field lw stands to window w (mod mask + 1): */
#define FC_FLEET_SAME 0   /* lw is w */
#define FC_FLEET_BEHIND 1 /* lw is an earlier window: the word rolls over */
#define FC_FLEET_AHEAD 2  /* lw is a later window (the clock stepped back): refuse */

FC_INLINE int fc_fleet_cmp(__u64 lw, __u64 w, __u64 mask)
{
	__u64 d = (w - lw) & mask;

	if (!(lw & (mask + 1)))
		return FC_FLEET_BEHIND; /* never written */
	return !d ? FC_FLEET_SAME : d <= (mask >> 1) ? FC_FLEET_BEHIND : FC_FLEET_AHEAD;
}

/* What a worker's charge returns besides 1 (admitted) and 0 (refused): the
 * word is of an earlier window; the caller works out the share (once per
 * key and window, out of line) and calls the roll function. */
#define FC_FLEET_ROLL 2

/* ---- window: state[0] = w24 << 40 | credit40 ---- */

/* Admit iff the word is window w's and holds cost: credit -= cost. The
 * same instructions as fc_window_try's. */
FC_INLINE int fc_fleet_window_try(__u64 *word, __u64 w, __u64 cost, __u64 *prev, __u64 *next)
{
	__u64 old;
	int i;

	for (i = 0; i < FC_CAS_TRIES; i++) {
		old = *(volatile __u64 *)word;
		if (FC_FLEET_WORD_W(old) != FC_FLEET_LABEL(w))
			return fc_fleet_cmp(FC_FLEET_WORD_W(old), w, FC_FLEET_W_MASK) == FC_FLEET_BEHIND ?
				       FC_FLEET_ROLL :
				       0;
		if (FC_FLEET_WORD_CREDIT(old) < cost)
			return 0;
		if (__sync_val_compare_and_swap(word, old, old - cost) == old) {
			*prev = old;
			*next = old - cost;
			return 1;
		}
	}
	return 0;
}

/* The rollover into window w with this node's share: the word becomes
 * (w, share - cost) and admits, or (w, share) and refuses when the share
 * does not hold cost (later requests of the window then refuse on the fast
 * path). A word another worker (or the agent) rolled meanwhile is charged
 * as it is. pn: the word before and after (a BPF subprogram takes five
 * arguments). */
__attribute__((unused)) FC_SLOWPATH int fc_fleet_window_roll(__u64 *word, __u64 w, __u64 share, __u64 cost, __u64 *pn)
{
	__u64 old, nw, *prev = &pn[0], *next = &pn[1];
	int i, ok;

	if (share > FC_FLEET_CREDIT_MAX)
		share = FC_FLEET_CREDIT_MAX;
	for (i = 0; i < FC_CAS_TRIES; i++) {
		old = *(volatile __u64 *)word;
		if (fc_fleet_cmp(FC_FLEET_WORD_W(old), w, FC_FLEET_W_MASK) != FC_FLEET_BEHIND)
			return fc_fleet_window_try(word, w, cost, prev, next) == 1;
		ok = share >= cost;
		nw = FC_FLEET_WORD(w, ok ? share - cost : share);
		if (__sync_val_compare_and_swap(word, old, nw) == old) {
			*prev = old;
			*next = nw;
			return ok;
		}
	}
	return 0;
}

/* Gives back cost to a word that a charge moved from prev to next, while
 * its label (the bits from label_shift up) is still next's: the amount
 * cnt_shift up (at most cnt_max) grows by cost, whatever others charged
 * since; a charge to a window that has ended stays spent. */
FC_INLINE void fc_fleet_give_back(__u64 *word, __u64 cost, __u64 prev, __u64 next, int label_shift, int cnt_shift,
				  __u64 cnt_max)
{
	__u64 old;
	int i;

	if (prev >> label_shift == next >> label_shift && __sync_val_compare_and_swap(word, next, prev) == next)
		return;
	for (i = 0; i < FC_CAS_TRIES; i++) {
		old = *(volatile __u64 *)word;
		if (old >> label_shift != next >> label_shift || ((old >> cnt_shift) & cnt_max) + cost > cnt_max)
			return;
		if (__sync_val_compare_and_swap(word, old, old + (cost << cnt_shift)) == old)
			return;
	}
}

/* Gives back an admission of cost that moved a window word from prev to
 * next. */
FC_INLINE void fc_fleet_window_refund(__u64 *word, __u64 cost, __u64 prev, __u64 next)
{
	fc_fleet_give_back(word, cost, prev, next, FC_FLEET_CREDIT_BITS, 0, FC_FLEET_CREDIT_MAX);
}

/* ---- demand: state[1] = w24 << 40 | FC_FLEET_WANTED ---- */

#define FC_FLEET_WANTED 1ULL

/* Marks key-window w as short of credit. Returns 1 for the one call that
 * set the flag in w (that caller pushes the key to the fleet ring), 0 when
 * it was set already (one load: later refusals of the window cost nothing
 * more) or the CAS lost (another worker set it). */
FC_INLINE int fc_fleet_demand(__u64 *word, __u64 w)
{
	__u64 want = FC_FLEET_WORD(w, FC_FLEET_WANTED), old = *(volatile __u64 *)word;

	if (old == want)
		return 0;
	return __sync_val_compare_and_swap(word, old, want) == old;
}

/* Whether the demand word says key-window w wants credit (the agent's read). */
FC_INLINE int fc_fleet_wanted(__u64 word, __u64 w)
{
	return word == FC_FLEET_WORD(w, FC_FLEET_WANTED);
}

/* ---- the agent's operations on a window word (also the gcra lease credit) ---- */

/* Tries of the agent's compare-and-exchange against racing workers; past
 * them the operation reports FC_FLEET_BUSY and the agent retries next round. */
#define FC_FLEET_AGENT_TRIES 64

/* What the agent's operations return. */
#define FC_FLEET_DONE 0    /* applied */
#define FC_FLEET_LAPSED 1  /* the word is of a later window: a grant lapses, nothing to release */
#define FC_FLEET_SHORT 2   /* lock: the credit holds less than asked; nothing locked */
#define FC_FLEET_BUSY (-1) /* the word kept moving: nothing done */

/*
 * A grant of d in window w: credit += d if the word is w's; a word of an
 * earlier window is rolled over to (w, share + d) (share: this node's own
 * for w, fc_fleet_share_in; 0 for a gcra lease credit); a word of a later
 * window drops the grant (FC_FLEET_LAPSED). A credit that would pass
 * FC_FLEET_CREDIT_MAX (a corrupt word: N is at most FC_RATE_MAX) takes
 * nothing (FC_FLEET_SHORT): withheld credit is under-admission only.
 */
FC_INLINE int fc_fleet_topup(__u64 *word, __u64 w, __u64 d, __u64 share)
{
	__u64 old, credit;
	int i, at;

	if (d > FC_FLEET_CREDIT_MAX || share > FC_FLEET_CREDIT_MAX - d)
		return FC_FLEET_SHORT;
	for (i = 0; i < FC_FLEET_AGENT_TRIES; i++) {
		old = *(volatile __u64 *)word;
		at = fc_fleet_cmp(FC_FLEET_WORD_W(old), w, FC_FLEET_W_MASK);
		if (at == FC_FLEET_AHEAD)
			return FC_FLEET_LAPSED;
		credit = at == FC_FLEET_SAME ? FC_FLEET_WORD_CREDIT(old) : share;
		if (credit > FC_FLEET_CREDIT_MAX - d)
			return FC_FLEET_SHORT;
		if (__sync_val_compare_and_swap(word, old, FC_FLEET_WORD(w, credit + d)) == old)
			return FC_FLEET_DONE;
	}
	return FC_FLEET_BUSY;
}

/*
 * Locks x of window w's credit, the local record of a release: credit -= x
 * only if it holds x (FC_FLEET_SHORT: nothing locked). A word of an earlier
 * window is rolled over first, to (w, share - x) (a fixed-value policy's
 * bucket, which the agent rolls itself); one of a later window has nothing
 * of w to release (FC_FLEET_LAPSED). Exact against racing workers: what a
 * worker spent is never locked, what is locked no worker spends.
 */
FC_INLINE int fc_fleet_lock(__u64 *word, __u64 w, __u64 x, __u64 share)
{
	__u64 old, credit;
	int i, at;

	for (i = 0; i < FC_FLEET_AGENT_TRIES; i++) {
		old = *(volatile __u64 *)word;
		at = fc_fleet_cmp(FC_FLEET_WORD_W(old), w, FC_FLEET_W_MASK);
		if (at == FC_FLEET_AHEAD)
			return FC_FLEET_LAPSED;
		credit = at == FC_FLEET_SAME ? FC_FLEET_WORD_CREDIT(old) : share;
		if (credit < x || credit > FC_FLEET_CREDIT_MAX)
			return FC_FLEET_SHORT;
		if (__sync_val_compare_and_swap(word, old, FC_FLEET_WORD(w, credit - x)) == old)
			return FC_FLEET_DONE;
	}
	return FC_FLEET_BUSY;
}

/* The credit window w's word holds (0 for a word of another window). */
FC_INLINE __u64 fc_fleet_credit(__u64 word, __u64 w)
{
	return FC_FLEET_WORD_W(word) == FC_FLEET_LABEL(w) ? FC_FLEET_WORD_CREDIT(word) : 0;
}

/* ---- sliding: state[0] = w16 << 48 | room24 << 24 | prev24, state[2] = net ---- */

/*
 * The node's budget for window w is L(w) = share(w) + net(w), net = G - R
 * (grants applied less releases locked). room = L - cur; prev is the count
 * of the window before. A cost c is admitted iff
 *
 *	prev (U - e) + c U <= room U
 *
 * which is fc_slide_charge's rule with room in place of N - cur. The net
 * word (state[2], w24 << 40 | (net + 2^39)) is written by the agent only.
 */
#define FC_FLEET_NET_BIAS (1ULL << 39)
/* Its label field: 16 bits, the top one "written", 15 of window index
 * (9 hours of /s windows). */
#define FC_FLEET_SW_BITS 15
#define FC_FLEET_SW_MASK ((1ULL << FC_FLEET_SW_BITS) - 1)
#define FC_FLEET_SLABEL(w) ((1ULL << FC_FLEET_SW_BITS) | ((__u64)(w)&FC_FLEET_SW_MASK))
#define FC_FLEET_SLIDE(w, room, prev) \
	(FC_FLEET_SLABEL(w) << FC_SLIDE_IDX_SHIFT | (__u64)(room) << FC_SLIDE_COUNT_BITS | (__u64)(prev))
#define FC_FLEET_SLIDE_W(word) ((word) >> FC_SLIDE_IDX_SHIFT)
#define FC_FLEET_SLIDE_ROOM(word) (((word) >> FC_SLIDE_COUNT_BITS) & FC_SLIDE_COUNT_MAX)
#define FC_FLEET_SLIDE_PREV(word) ((word)&FC_SLIDE_COUNT_MAX)

/* The signed net of window w in a net word: 0 for a word of an earlier
 * window (nothing granted or released in w), and *later set when the word
 * is of a later window (the agent has moved on: w's net is gone). */
FC_INLINE __s64 fc_fleet_net(__u64 nw, __u64 w, int *later)
{
	int at = fc_fleet_cmp(FC_FLEET_WORD_W(nw), w, FC_FLEET_W_MASK);

	*later = at == FC_FLEET_AHEAD;
	return at == FC_FLEET_SAME ? (__s64)FC_FLEET_WORD_CREDIT(nw) - (__s64)FC_FLEET_NET_BIAS : 0;
}

/* Whether prev (U - e) + cost U <= room U, with U and e in FC_SLIDE_NS;
 * the time is worked out only when prev matters. */
FC_INLINE int fc_fleet_slide_fits(__u64 room, __u64 prev, __u64 cost, __u64 unit_ns, __u64 now, __u64 w)
{
	__u64 u, e;

	if (cost > room)
		return 0;
	if (!prev || prev + cost <= room)
		return 1;
	u = unit_ns / FC_SLIDE_NS;
	e = (now - w * unit_ns) / FC_SLIDE_NS;
	return prev * (u - e) + cost * u <= room * u;
}

/* A worker's charge of cost at now in window w = now / unit_ns: 1, 0 or
 * FC_FLEET_ROLL (the word is of an earlier window: fc_fleet_slide_roll). */
FC_INLINE int fc_fleet_slide_try(__u64 *word, __u64 unit_ns, __u64 now, __u64 w, __u64 cost, __u64 *prev, __u64 *next)
{
	__u64 old, room, p;
	int i;

	for (i = 0; i < FC_CAS_TRIES; i++) {
		old = *(volatile __u64 *)word;
		if (FC_FLEET_SLIDE_W(old) != FC_FLEET_SLABEL(w))
			return fc_fleet_cmp(FC_FLEET_SLIDE_W(old), w, FC_FLEET_SW_MASK) == FC_FLEET_BEHIND ?
				       FC_FLEET_ROLL :
				       0;
		room = FC_FLEET_SLIDE_ROOM(old);
		p = FC_FLEET_SLIDE_PREV(old);
		if (!fc_fleet_slide_fits(room, p, cost, unit_ns, now, w))
			return 0;
		if (__sync_val_compare_and_swap(word, old, old - (cost << FC_SLIDE_COUNT_BITS)) == old) {
			*prev = old;
			*next = old - (cost << FC_SLIDE_COUNT_BITS);
			return 1;
		}
	}
	return 0;
}

/*
 * The word of window w rolled over from old (of an earlier window v):
 * room' = share(w) (+ d for the agent's top-up), prev' = what was admitted
 * in v when v is w - 1: L(v) - room(v), L(v) = share_v + net(v) read from
 * the net word nw; 0 when v is older. Where the net word has moved past v
 * (the agent wrote w's net before rolling the word: its order), v's net is
 * gone and prev' is taken as full (FC_SLIDE_COUNT_MAX): that window then
 * denies more, never admits more than the rule.
 */
FC_INLINE __u64 fc_fleet_slide_rolled(__u64 old, __u64 nw, __u64 w, __u64 share_v, __u64 room_w)
{
	__u64 v = FC_FLEET_SLIDE_W(old), room = FC_FLEET_SLIDE_ROOM(old), prev = 0;
	__s64 net, lv;
	int later;

	if (v == FC_FLEET_SLABEL(w - 1)) {
		net = fc_fleet_net(nw, w - 1, &later);
		lv = (__s64)share_v + net;
		prev = later ? FC_SLIDE_COUNT_MAX : lv <= (__s64)room ? 0 : (__u64)lv - room;
		if (prev > FC_SLIDE_COUNT_MAX)
			prev = FC_SLIDE_COUNT_MAX;
	}
	if (room_w > FC_SLIDE_COUNT_MAX)
		room_w = FC_SLIDE_COUNT_MAX;
	return FC_FLEET_SLIDE(w, room_w, prev);
}

/* A worker's rollover into window w (share_v: this node's share of w - 1,
 * share_w of w; nw: the key's net word): 1 admitted, 0 refused (the word
 * rolled all the same). Inline: its caller's out-of-line path computes the
 * shares and calls it (a BPF caller packs its arguments: five at most). */
FC_INLINE int fc_fleet_slide_roll(__u64 *word, const __u64 *nw, __u64 unit_ns, __u64 now, __u64 w, __u64 share_v,
				  __u64 share_w, __u64 cost, __u64 *prev, __u64 *next)
{
	__u64 old, nwd, rolled;
	int i, ok;

	for (i = 0; i < FC_CAS_TRIES; i++) {
		old = *(volatile __u64 *)word;
		if (fc_fleet_cmp(FC_FLEET_SLIDE_W(old), w, FC_FLEET_SW_MASK) != FC_FLEET_BEHIND)
			return fc_fleet_slide_try(word, unit_ns, now, w, cost, prev, next) == 1;
		nwd = *(volatile const __u64 *)nw;
		rolled = fc_fleet_slide_rolled(old, nwd, w, share_v, share_w);
		ok = fc_fleet_slide_fits(FC_FLEET_SLIDE_ROOM(rolled), FC_FLEET_SLIDE_PREV(rolled), cost, unit_ns, now,
					 w);
		if (ok)
			rolled -= cost << FC_SLIDE_COUNT_BITS;
		if (__sync_val_compare_and_swap(word, old, rolled) == old) {
			*prev = old;
			*next = rolled;
			return ok;
		}
	}
	return 0;
}

/* Gives back cost of room while the word is still next's window. */
FC_INLINE void fc_fleet_slide_refund(__u64 *word, __u64 cost, __u64 prev, __u64 next)
{
	fc_fleet_give_back(word, cost, prev, next, FC_SLIDE_IDX_SHIFT, FC_SLIDE_COUNT_BITS, FC_SLIDE_COUNT_MAX);
}

/* Adds delta (signed) to window w's net word: a word of an earlier window
 * starts from 0; one of a later window is left (FC_FLEET_LAPSED). */
FC_INLINE int fc_fleet_net_add(__u64 *nw, __u64 w, __s64 delta)
{
	__u64 old;
	__s64 net;
	int i, later;

	for (i = 0; i < FC_FLEET_AGENT_TRIES; i++) {
		old = *(volatile __u64 *)nw;
		net = fc_fleet_net(old, w, &later);
		if (later)
			return FC_FLEET_LAPSED;
		net += delta;
		if (net < -(__s64)FC_FLEET_NET_BIAS || net >= (__s64)FC_FLEET_NET_BIAS)
			return FC_FLEET_SHORT;
		if (__sync_val_compare_and_swap(nw, old, FC_FLEET_WORD(w, (__u64)(net + (__s64)FC_FLEET_NET_BIAS))) ==
		    old)
			return FC_FLEET_DONE;
	}
	return FC_FLEET_BUSY;
}

/*
 * The agent's release of x in window w (at now): room -= x, only if the
 * rule still holds for what stays, prev (U - e_now) <= (room - x) U; then
 * net -= x. A word of an earlier window is rolled over first (room =
 * share_w; share_v and the net word give its prev). In that order a
 * rollover landing between the two steps reads a net without the release,
 * overstates prev and can only deny.
 */
FC_INLINE int fc_fleet_slide_release(__u64 *word, __u64 *nw, __u64 unit_ns, __u64 now, __u64 w, __u64 x, __u64 share_v,
				     __u64 share_w)
{
	__u64 old, cur, room, p, u, e;
	int i, at, done = 0;

	for (i = 0; i < FC_FLEET_AGENT_TRIES && !done; i++) {
		old = *(volatile __u64 *)word;
		at = fc_fleet_cmp(FC_FLEET_SLIDE_W(old), w, FC_FLEET_SW_MASK);
		if (at == FC_FLEET_AHEAD)
			return FC_FLEET_LAPSED;
		cur = at == FC_FLEET_SAME ? old :
					    fc_fleet_slide_rolled(old, *(volatile __u64 *)nw, w, share_v, share_w);
		room = FC_FLEET_SLIDE_ROOM(cur);
		p = FC_FLEET_SLIDE_PREV(cur);
		u = unit_ns / FC_SLIDE_NS;
		e = (now - w * unit_ns) / FC_SLIDE_NS;
		if (room < x || e > u || p * (u - e) > (room - x) * u)
			return FC_FLEET_SHORT;
		done = __sync_val_compare_and_swap(word, old, cur - (x << FC_SLIDE_COUNT_BITS)) == old;
	}
	if (!done)
		return FC_FLEET_BUSY;
	/* The room is locked: the net follows (a failure here leaves the
	 * net overstated, which only makes the next window's prev larger). */
	fc_fleet_net_add(nw, w, -(__s64)x);
	return FC_FLEET_DONE;
}

/*
 * The agent's grant of d in window w: net += d, then room += d. A word of
 * an earlier window is rolled over to room share_w + d (prev from v's net,
 * read before w's net is written: the net word moving on first makes a
 * rollover in between take prev as full, which only denies).
 */
FC_INLINE int fc_fleet_slide_topup(__u64 *word, __u64 *nw, __u64 w, __u64 d, __u64 share_v, __u64 share_w)
{
	__u64 old, cur, nv, rolled = 0;
	int i, at, r;

	if (d > FC_SLIDE_COUNT_MAX)
		return FC_FLEET_SHORT;
	/* v's net, as the rollover of a word still in w - 1 reads it, before
	 * the net word moves on to w. */
	old = *(volatile __u64 *)word;
	if (fc_fleet_cmp(FC_FLEET_SLIDE_W(old), w, FC_FLEET_SW_MASK) == FC_FLEET_BEHIND) {
		nv = *(volatile __u64 *)nw;
		rolled = fc_fleet_slide_rolled(old, nv, w, share_v, share_w);
	}
	r = fc_fleet_net_add(nw, w, (__s64)d);
	if (r != FC_FLEET_DONE)
		return r;
	for (i = 0; i < FC_FLEET_AGENT_TRIES; i++) {
		cur = *(volatile __u64 *)word;
		at = fc_fleet_cmp(FC_FLEET_SLIDE_W(cur), w, FC_FLEET_SW_MASK);
		if (at == FC_FLEET_AHEAD)
			return FC_FLEET_LAPSED;
		if (at == FC_FLEET_BEHIND) {
			if (cur != old || !rolled)
				return FC_FLEET_BUSY; /* moved between the reads: the net holds d, the room not */
			nv = rolled;
		} else {
			nv = cur;
		}
		if (FC_FLEET_SLIDE_ROOM(nv) + d > FC_SLIDE_COUNT_MAX)
			return FC_FLEET_SHORT;
		if (__sync_val_compare_and_swap(word, cur, nv + (d << FC_SLIDE_COUNT_BITS)) == cur)
			return FC_FLEET_DONE;
	}
	return FC_FLEET_BUSY;
}

/* ---- gcra: state[0] TAT, state[2] lease credit, state[3] tau_i ---- */

/* The longest T_i a split carries: a cost times it stays within
 * FC_ROOM_MAX. The loader writes 0 for a node whose T_i would be longer
 * (a weight so small its rate share rounds to nothing): its bucket admits
 * nothing of its own, only lease credit. */
#define FC_FLEET_INTERVAL_MAX (FC_ROOM_MAX / FC_COST_MAX)

/*
 * The node's bucket is GCRA(T_i, tau_i): T_i policy-wide (the split's
 * interval_ns), tau_i = B_i T_i per key (state[3], set when the key is made;
 * at XDP/TC the policy's tier itself). Its TAT carries no generation tag
 * (a fleet policy's words are the fleet's: a change of its rate is a new
 * split, and the TAT is read as it is). When the bucket refuses, one cost
 * comes out of the lease credit if its lease window (now / lease_ns) is
 * current. *lease says which word was charged, for the refund.
 */
FC_INLINE int fc_fleet_gcra_try(__u64 *state, __u64 interval_ns, __u64 tau, __u64 lw, __u64 now, __u64 cost,
				__u64 *prev, __u64 *next, int *lease)
{
	__u64 inc = cost * interval_ns, word, tat;
	int k;

	*lease = 0;
	for (k = 0; k < FC_CAS_TRIES && interval_ns; k++) {
		word = *(volatile __u64 *)&state[0];
		tat = fc_gcra_base(word, tau, now) + inc;
		if (tat - now > tau)
			break;
		if (__sync_val_compare_and_swap(&state[0], word, tat) == word) {
			*prev = word;
			*next = tat;
			return 1;
		}
	}
	*lease = 1;
	return fc_fleet_window_try(&state[2], lw, cost, prev, next) == 1;
}

/* Gives back what fc_fleet_gcra_try charged. */
FC_INLINE void fc_fleet_gcra_refund(__u64 *state, int lease, __u64 cost, __u64 prev, __u64 next)
{
	if (lease)
		fc_fleet_window_refund(&state[2], cost, prev, next);
	else
		fc_gcra_refund(&state[0], prev, next);
}

/* The whole tokens a TAT leaves in a bucket (T, tau) at now. */
FC_INLINE __u64 fc_fleet_gcra_tokens(__u64 tat, __u64 interval_ns, __u64 tau, __u64 now)
{
	__u64 lead = tat > now ? tat - now : 0;

	return !interval_ns || lead >= tau ? 0 : (tau - lead) / interval_ns;
}

/*
 * The agent's donation of up to k tokens of the bucket (a release): the TAT
 * becomes max(TAT, now) + n T with n <= the tokens there are, so nothing a
 * worker could have spent is given away. Returns the tokens donated (0:
 * none there, or the word kept moving).
 */
FC_INLINE __u64 fc_fleet_donate(__u64 *tat_word, __u64 interval_ns, __u64 tau, __u64 now, __u64 k)
{
	__u64 old, n, base;
	int i;

	for (i = 0; i < FC_FLEET_AGENT_TRIES; i++) {
		old = *(volatile __u64 *)tat_word;
		if (old > now + tau + FC_CLOCK_SLACK_NS)
			return 0; /* a TAT no admission leaves: hostile, or the clock stepped back */
		n = fc_fleet_gcra_tokens(old, interval_ns, tau, now);
		n = n < k ? n : k;
		if (!n)
			return 0;
		base = old > now ? old : now;
		if (__sync_val_compare_and_swap(tat_word, old, base + n * interval_ns) == old)
			return n;
	}
	return 0;
}

#endif /* FC_FLEET_H */
