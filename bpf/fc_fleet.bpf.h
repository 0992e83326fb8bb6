/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Fleet policies at XDP/TC (--fleet, design section 4): an ip=ADDR or
 * ip=PREFIX policy whose rate is the whole fleet's. Its bucket,
 * fc_buckets[slot], holds this node's credit in the words of
 * maps/fc_fleet.h: spent here, topped up and locked by the agent through a
 * mapping of the same words. The node's share of each window is the
 * loader's (fc_policy.fleet_share, per split), so a rollover costs no
 * SipHash and no division beyond the window's.
 *
 * A fleet policy enters through its algorithm (FC_ALGO_FLEET_*): fc_fast
 * takes one met alone (a window's credit spent inline), fc_policy_check
 * any other; a policy without --fleet pays one compare. The rollover, the
 * demand flag and the sliding and GCRA words are out of line, in global
 * functions (each checked once by the verifier, whatever the paths into
 * it), never called from fc_enforce, whose stack leaves them too little.
 */
#ifndef FC_FLEET_BPF_H
#define FC_FLEET_BPF_H

#include "fc_fleet.h"
#include "fc_state.bpf.h"

static __always_inline bool fc_fleet_algo(__u8 algo)
{
	return algo >= FC_ALGO_FLEET_WINDOW;
}

/* This node's share of window w of pol (unit unit_ns): that of the split
 * w falls in, none of a window that began before the maps were made
 * (fc_config.fleet_fresh_ns; sliding, lead unit_ns: before it and a
 * window, whose count the lost maps held as the next window's prev). */
static __always_inline __u64 fc_fleet_share_of(const struct fc_policy *pol, const struct fc_config *cfg, __u64 w,
					       __u64 unit_ns, __u64 lead_ns)
{
	if (w * unit_ns < cfg->fleet_fresh_ns + lead_ns)
		return 0;
	return w >= pol->fleet_from ? pol->fleet_share[1] : pol->fleet_share[0];
}

/* A refusal in window w: flags its demand (state[1]) once, which the
 * agent polls. */
static __always_inline int fc_fleet_deny(struct fc_bucket *b, __u64 w)
{
	fc_fleet_demand(&b->state[1], w);
	return 0;
}

/* The config a fleet charge reads (the fresh rule), or NULL where an
 * argument is missing or pol has no unit (a window's divisor). */
static __always_inline const struct fc_config *fc_fleet_cfg(const struct fc_policy *pol, const struct fc_bucket *b,
							    const struct fc_charge *ch)
{
	__u32 zero = 0;
	const struct fc_config *cfg = bpf_map_lookup_elem(&fc_config, &zero);

	return pol && b && ch && pol->tier[0].unit_ns ? cfg : NULL;
}

/*
 * The charges of fleet policy pol, cost at now on bucket b: 1 admitted, 0
 * refused. What was charged goes in ch as for any policy (tier 0's prev
 * and next; for GCRA, next[1] says whether the lease credit paid), for the
 * refund. One global function per algorithm: each one's stack, apart,
 * stays within what the chain of calls above it leaves (512 bytes in all).
 */
__noinline int fc_fleet_window_charge(const struct fc_policy *pol, struct fc_bucket *b, struct fc_charge *ch, __u64 now,
				      __u64 cost)
{
	const struct fc_config *cfg = fc_fleet_cfg(pol, b, ch);
	__u64 unit, w;
	int ok;

	if (!cfg || !pol || !b || !ch)
		return 0;
	unit = pol->tier[0].unit_ns;
	w = now / unit;
	ok = fc_fleet_window_try(&b->state[0], w, cost, &ch->prev[0], &ch->next[0]);
	if (ok == FC_FLEET_ROLL) {
		/* prev[1] and next[1] are free (one tier): the roll's pair */
		ok = fc_fleet_window_roll(&b->state[0], w, fc_fleet_share_of(pol, cfg, w, unit, 0), cost, &ch->prev[0]);
		ch->next[0] = ch->prev[1];
	}
	return ok == 1 ? 1 : fc_fleet_deny(b, w);
}

__noinline int fc_fleet_slide_charge(const struct fc_policy *pol, struct fc_bucket *b, struct fc_charge *ch, __u64 now,
				     __u64 cost)
{
	const struct fc_config *cfg = fc_fleet_cfg(pol, b, ch);
	__u64 unit, w;
	int ok;

	if (!cfg || !pol || !b || !ch)
		return 0;
	unit = pol->tier[0].unit_ns;
	w = now / unit;
	ok = fc_fleet_slide_try(&b->state[0], unit, now, w, cost, &ch->prev[0], &ch->next[0]);
	if (ok != FC_FLEET_ROLL)
		return ok ? 1 : fc_fleet_deny(b, w);
	/* For fc_fleet_slide_rollover, in the words one tier leaves free:
	 * the cost, and the shares of the window before and of this one. */
	ch->prev[2] = cost;
	ch->prev[3] = fc_fleet_share_of(pol, cfg, w - 1, unit, unit);
	ch->next[2] = fc_fleet_share_of(pol, cfg, w, unit, unit);
	return ok;
}

/* The sliding word's rollover (fc_fleet_slide_charge said FC_FLEET_ROLL,
 * and left what it needs in ch): a function of its own, called after the
 * charge and not from it, so that the two stacks are never on the chain
 * at once. */
__noinline int fc_fleet_slide_rollover(const struct fc_policy *pol, struct fc_bucket *b, struct fc_charge *ch,
				       __u64 now)
{
	__u64 unit;

	if (!pol || !b || !ch || !pol->tier[0].unit_ns)
		return 0;
	unit = pol->tier[0].unit_ns;
	if (fc_fleet_slide_roll(&b->state[0], &b->state[2], unit, now, now / unit, ch->prev[3], ch->next[2],
				ch->prev[2], &ch->prev[0], &ch->next[0]))
		return 1;
	return fc_fleet_deny(b, now / unit);
}

/* GCRA: the node's bucket is the policy's tier (T_i, tau_i); past it, the
 * lease credit of the lease window now falls in (the window the demand
 * flag names). */
__noinline int fc_fleet_gcra_charge(const struct fc_policy *pol, struct fc_bucket *b, struct fc_charge *ch, __u64 now,
				    __u64 cost)
{
	__u64 lw;

	if (!pol || !b || !ch || !pol->fleet_lease_ns)
		return 0;
	lw = now / pol->fleet_lease_ns;
	/* the lease flag in next[1] (one tier: free), its low half */
	ch->next[1] = 0;
	if (fc_fleet_gcra_try(b->state, pol->tier[0].interval_ns, pol->tier[0].tolerance_ns, lw, now, cost,
			      &ch->prev[0], &ch->next[0], (int *)&ch->next[1]))
		return 1;
	return fc_fleet_deny(b, lw);
}

/* A fleet policy's charge, by its algorithm; one of another version's
 * algorithms admits nothing on words it does not know. A global function
 * of its own, which holds nothing across its calls (no stack): a caller
 * tests one range of algorithms, not each, and its paths on from the
 * charge do not multiply by them for the verifier. */
__noinline int fc_fleet_charge(const struct fc_policy *pol, struct fc_bucket *b, struct fc_charge *ch, __u64 now,
			       __u64 cost)
{
	int ok;

	if (!pol)
		return 0;
	if (pol->algo == FC_ALGO_FLEET_WINDOW)
		return fc_fleet_window_charge(pol, b, ch, now, cost);
	if (pol->algo == FC_ALGO_FLEET_GCRA)
		return fc_fleet_gcra_charge(pol, b, ch, now, cost);
	if (pol->algo != FC_ALGO_FLEET_SLIDING)
		return 0;
	ok = fc_fleet_slide_charge(pol, b, ch, now, cost);
	return ok == FC_FLEET_ROLL ? fc_fleet_slide_rollover(pol, b, ch, now) : ok;
}

/* Gives back what fc_fleet_charge charged (cost, ch) to b, for a policy
 * of algorithm algo. */
__noinline int fc_fleet_refund(struct fc_bucket *b, const struct fc_charge *ch, __u64 cost, __u64 algo)
{
	if (!b || !ch)
		return 0;
	if (algo == FC_ALGO_FLEET_WINDOW)
		fc_fleet_window_refund(&b->state[0], cost, ch->prev[0], ch->next[0]);
	else if (algo == FC_ALGO_FLEET_SLIDING)
		fc_fleet_slide_refund(&b->state[0], cost, ch->prev[0], ch->next[0]);
	else if (algo == FC_ALGO_FLEET_GCRA)
		fc_fleet_gcra_refund(b->state, *(const int *)&ch->next[1], cost, ch->prev[0], ch->next[0]);
	return 0;
}

/* Any policy's charge of its bucket b: 1 admitted, 0 not (a GCRA word of
 * another generation denies: the callers bring it first). */
static __always_inline int fc_charge_any(const struct fc_policy *pol, __u8 algo, __u8 tiers, struct fc_bucket *b,
					 __u64 now, __u64 cost, struct fc_charge *ch)
{
	if (fc_fleet_algo(algo))
		return fc_fleet_charge(pol, b, ch, now, cost);
	return fc_limit_charge(algo, tiers, &pol->lim, b->state, now, cost, ch) == 1;
}

static __always_inline void fc_refund_any(__u8 algo, __u8 tiers, struct fc_bucket *b, __u64 cost,
					  const struct fc_charge *ch)
{
	if (fc_fleet_algo(algo))
		fc_fleet_refund(b, ch, cost, algo);
	else
		fc_limit_refund(algo, tiers, b->state, cost, ch);
}

#endif /* FC_FLEET_BPF_H */
