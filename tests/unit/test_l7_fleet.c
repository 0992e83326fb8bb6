// SPDX-License-Identifier: BSD-2-Clause
/*
 * The nginx engine's --fleet policies (doc/fleet-design.md sections 3-5),
 * with an injected clock: a key spends this node's share of each window
 * and then refuses; its first refusal in a window marks its demand word and
 * reports it on the fleet ring, once; a grant the agent tops up is spent;
 * the overflow bucket refuses; the fleet tag is the fleet's (secret, id,
 * epoch); the clock offset labels windows; a node whose state is new takes
 * no share of the window it was made in; a charge refunded by a later
 * policy's refusal gives the credit back.
 *
 * Most cases rewrite a local policy's published item as a fleet item
 * (maps/fc_shm.h: FC_SHM_POLICY_FLEET, struct fc_shm_fleet before the
 * dims) to set the split they need and inject the clock; the last goes
 * through the store and the publisher as freqctl does, node by node, and
 * checks that the fleet admits N per key across its nodes.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>

#include "fc_clock.h"
#include "fc_fleet.h"
#include "fc_fleet_split.h"
#include "fc_source.h"
#include "fc_test.h"
#include "fc_test_l7.h"

#define MIN (60 * SEC)
/* The start of a minute: windows begin here. */
#define W0 (T0 / MIN * MIN)

static const __u64 fc_secret[2] = { 0x0123456789abcdefULL, 0xfedcba9876543210ULL };

/* Rewrites policy 1's item in t's live block as a fleet policy of algo
 * with splits sp (the other items as they are), then builds the index.
 * fresh and clock: the header's fleet_fresh_ns and fleet_clock_ns. */
static void fc_fleet_item(struct fc_t *t, uint8_t algo, const struct fc_fleet_split *sp, __u64 lease_ns, __u32 fixed_u,
			  __u64 fresh, __s64 clock)
{
	struct fc_shm_header *h = t->base;
	struct fc_shm_block *blk = (struct fc_shm_block *)((char *)t->base + FC_SHM_BLOCK_OFF(h->active));
	uint8_t *it = (uint8_t *)(blk + 1), out[4096], *o = out;
	struct fc_shm_fleet f = { .lease_ns = lease_ns, .node_no = 1, .fixed_u = fixed_u };
	struct fc_shm_policy p;
	uint32_t i;

	assert_true(blk->used + sizeof(f) <= sizeof(out));
	f.split[0] = sp[0];
	f.split[1] = sp[1];
	for (i = 0; i < blk->nitems; i++, it += p.item.len) {
		memcpy(&p, it, sizeof(p));
		if (p.id != 1) {
			memcpy(o, it, p.item.len);
			o += p.item.len;
			continue;
		}
		memcpy(o + sizeof(p) + sizeof(f), it + sizeof(p), p.item.len - sizeof(p));
		p.algo = algo;
		p.flags |= FC_SHM_POLICY_FLEET;
		p.item.len = (__u16)(p.item.len + sizeof(f));
		memcpy(o, &p, sizeof(p));
		memcpy(o + sizeof(p), &f, sizeof(f));
		o += p.item.len;
		p.item.len = (__u16)(p.item.len - sizeof(f)); /* the input's, to step over it */
	}
	blk->used = (__u64)(o - out);
	memcpy(blk + 1, out, blk->used);
	memcpy(h->fleet_secret, fc_secret, sizeof(fc_secret));
	h->fleet_fresh_ns = fresh;
	h->fleet_clock_ns = clock;
	assert_int_equal(fc_build(t, t->base, t->size), 0);
	assert_true(fc_ix_policy(t, 1)->fleet);
}

/* A split giving every key base units (no remainder). */
static void fc_split_flat(struct fc_fleet_split *sp, __u64 base)
{
	sp[0] = (struct fc_fleet_split){ .from = 0, .base = base };
	sp[1] = (struct fc_fleet_split){ .from = FC_FLEET_NEVER };
}

/* The fleet tag of uid for policy (id, epoch): SipHash keyed by the fleet
 * secret over (id << 32 | epoch) and the uid, as every node computes it. */
static __u64 fc_fleet_tag(uint32_t id, uint32_t epoch, const char *uid)
{
	uint64_t k[2] = { fc_secret[0], fc_secret[1] };
	struct fc_sip h;

	fc_sip_init(&h, k);
	fc_sip_word(&h, (uint64_t)id << 32 | epoch);
	fc_sip_part(&h, uid, strlen(uid));
	return fc_sip_final(&h) | FC_SHM_KEY_TAG_MIN;
}

/* The key table's entry of tag, or NULL. */
static struct fc_shm_key *fc_entry(struct fc_t *t, __u64 tag)
{
	uint32_t i;

	for (i = 0; i < t->ix.nkeys; i++)
		if (t->ix.keys[i].tag == tag)
			return &t->ix.keys[i];
	return NULL;
}

static void test_fleet_window_share_demand_grant(void **state)
{
	struct fc_t *t = *state;
	struct fc_fleet_split sp[2];
	struct fc_shm_fleet_ring *ring;
	const struct fc_l7_policy *p;
	struct fc_l7_result res;
	struct fc_shm_key *e;
	__u64 tag;

	fc_policy(t, 1, "uid=*", "100/m", "drop", 0, 0);
	fc_publish(t);
	fc_split_flat(sp, 3);
	fc_fleet_item(t, FC_ALGO_FLEET_WINDOW, sp, 0, 0, 0, 0);
	p = fc_ix_policy(t, 1);
	ring = t->ix.fleet_ring;
	/* this node's share of the window is 3, not the policy's 100 */
	assert_int_equal(fc_passes(t, "uid=alice", W0 + SEC, 5), 3);
	assert_int_equal(fc_decide(t, "uid=alice", W0 + 2 * SEC, &res), FC_L7_REJECTED);
	assert_int_equal(res.policy, 1);
	assert_int_equal(res.limit, 100);
	assert_int_equal(res.remaining, 0);
	/* the key's entry is its fleet tag's: (id, epoch), not the slot */
	tag = fc_fleet_tag(1, p->epoch, "alice");
	e = fc_entry(t, tag);
	assert_non_null(e);
	/* its first refusal in the window marked it and reported it, once */
	assert_int_equal(e->state[1], FC_FLEET_WORD(W0 / MIN, FC_FLEET_WANTED));
	assert_int_equal(ring->head, 1);
	assert_int_equal(ring->e[0].seq, 1);
	assert_int_equal(ring->e[0].tag, tag);
	assert_int_equal(ring->e[0].index, (uint32_t)(e - t->ix.keys));
	assert_int_equal(ring->e[0].slot, p->slot);
	assert_int_equal(ring->e[0].epoch, p->epoch);
	assert_int_equal(ring->e[0].window, FC_FLEET_LABEL(W0 / MIN));
	/* the agent's grant of 2 is spent, then it refuses again: no second report */
	assert_int_equal(fc_fleet_topup(&e->state[0], W0 / MIN, 2, 0), FC_FLEET_DONE);
	assert_int_equal(fc_passes(t, "uid=alice", W0 + 3 * SEC, 4), 2);
	assert_int_equal(ring->head, 1);
	assert_int_equal(e->denied, 5);
	/* the next window: the share again, a new report on its first refusal */
	assert_int_equal(fc_passes(t, "uid=alice", W0 + MIN, 4), 3);
	assert_int_equal(ring->head, 2);
	assert_int_equal(ring->e[1].window, FC_FLEET_LABEL(W0 / MIN + 1));
	/* the clock stepped back into the window left: refused, never reopened */
	assert_int_equal(fc_decide(t, "uid=bob", W0 + MIN + SEC, NULL), FC_L7_PASS);
	assert_int_equal(fc_decide(t, "uid=bob", W0 + 59 * SEC, NULL), FC_L7_REJECTED);
}

/* 3 per minute over four nodes of one weight: each key's one unit goes to
 * three of the four, by its point; this node admits exactly its share of
 * each key (fc_fleet_share of the tag's point), and about 3/4 of them. */
static void test_fleet_remainder_by_point(void **state)
{
	struct fc_t *t = *state;
	/* node 2 of four: F = 3, 6; seg [3 2^32 / 4, 6 2^32 / 4) */
	struct fc_fleet_split sp[2] = { { .from = 0, .base = 0, .seg_lo = 3ULL << 30, .seg_hi = 6ULL << 30 },
					{ .from = FC_FLEET_NEVER } };
	char req[32];
	int i, admitted = 0, want, got;
	uint32_t epoch;

	fc_policy(t, 1, "uid=*", "3/m", "drop", 0, 0);
	fc_publish(t);
	fc_fleet_item(t, FC_ALGO_FLEET_WINDOW, sp, 0, 0, 0, 0);
	epoch = fc_ix_policy(t, 1)->epoch;
	for (i = 0; i < 400; i++) {
		snprintf(req, sizeof(req), "uid=u%d", i);
		got = fc_passes(t, req, W0 + SEC, 3);
		want = (int)fc_fleet_share(&sp[0], fc_fleet_point(fc_fleet_tag(1, epoch, req + 4)));
		assert_int_equal(got, want);
		admitted += got;
	}
	assert_true(admitted > 300 - 45 && admitted < 300 + 45);
}

/* Past --max-keys a fleet key is refused, not charged to the overflow
 * bucket (which would be a second share of the fleet's N). */
static void test_fleet_overflow_refuses(void **state)
{
	struct fc_t *t = *state;
	struct fc_policy_spec ps = { .id = 1, .max_keys = 2 };
	struct fc_fleet_split sp[2];

	fc_policy_put(t, &ps, "uid=*", "100/m");
	fc_publish(t);
	fc_split_flat(sp, 5);
	fc_fleet_item(t, FC_ALGO_FLEET_WINDOW, sp, 0, 0, 0, 0);
	assert_int_equal(fc_decide(t, "uid=a", W0 + SEC, NULL), FC_L7_PASS);
	assert_int_equal(fc_decide(t, "uid=b", W0 + SEC, NULL), FC_L7_PASS);
	assert_int_equal(fc_passes(t, "uid=c", W0 + SEC, 3), 0);
	assert_int_equal(t->ix.slots[1].overflowed, 3);
	assert_int_equal(t->ix.slots[1].denied, 3);
	/* nothing reported: the overflow has no entry to mark */
	assert_int_equal(t->ix.fleet_ring->head, 0);
}

/* The fresh rule: state made 10 s into a window takes no share of it;
 * the next window it does. The clock offset labels windows: +30 s at 45 s
 * into a minute is the next minute's. */
static void test_fleet_fresh_and_clock(void **state)
{
	struct fc_t *t = *state;
	struct fc_fleet_split sp[2];

	fc_policy(t, 1, "uid=*", "100/m", "drop", 0, 0);
	fc_publish(t);
	fc_split_flat(sp, 2);
	fc_fleet_item(t, FC_ALGO_FLEET_WINDOW, sp, 0, 0, W0 + 10 * SEC, 0);
	assert_int_equal(fc_passes(t, "uid=a", W0 + 20 * SEC, 2), 0);
	assert_int_equal(fc_passes(t, "uid=a", W0 + MIN, 3), 2);

	fc_policy(t, 1, "uid=*", "100/m", "drop", 0, 0);
	fc_publish(t);
	fc_fleet_item(t, FC_ALGO_FLEET_WINDOW, sp, 0, 0, 0, 30 * (__s64)SEC);
	assert_int_equal(fc_passes(t, "uid=b", W0 + 45 * SEC, 3), 2);
	/* 20 s on, local time is still in the first minute, the fleet's in the
	 * second: the same window, nothing more */
	assert_int_equal(fc_passes(t, "uid=b", W0 + 50 * SEC, 3), 0);
	assert_int_equal(fc_passes(t, "uid=b", W0 + 95 * SEC, 3), 2);
}

/* A fleet charge that another policy's refusal undoes gives its credit
 * back: the request meets the fleet policy, then a local 1/m one (both
 * checked for every request, in the order published). */
static void test_fleet_refund(void **state)
{
	struct fc_t *t = *state;
	struct fc_fleet_split sp[2];
	struct fc_shm_key *e;

	fc_policy(t, 1, "uid=*", "100/m", "drop", 0, 0);
	fc_policy(t, 2, "uri=/x/*", "1/m", "drop", 0, 0);
	fc_publish(t);
	fc_split_flat(sp, 5);
	fc_fleet_item(t, FC_ALGO_FLEET_WINDOW, sp, 0, 0, 0, 0);
	assert_int_equal(fc_passes(t, "uid=a uri=/x/y", W0 + SEC, 4), 1);
	e = fc_entry(t, fc_fleet_tag(1, fc_ix_policy(t, 1)->epoch, "a"));
	assert_non_null(e);
	/* one admitted: 4 of the share of 5 left */
	assert_int_equal(fc_fleet_credit(e->state[0], W0 / MIN), 4);
	assert_int_equal(t->ix.slots[2].denied, 3);
	assert_int_equal(t->ix.slots[1].denied, 0);
}

/* A fixed key (uid=alice, no wildcard): its bucket is the slot's, its
 * point the loader's fixed_u; its refusal marks the slot's demand word and
 * reports nothing (the agent reads fixed keys' slots every round). */
static void test_fleet_fixed_key(void **state)
{
	struct fc_t *t = *state;
	/* two of four nodes get a unit: this one's segment holds u = 5 */
	struct fc_fleet_split sp[2] = { { .from = 0, .base = 1, .seg_lo = 0, .seg_hi = 1ULL << 31 },
					{ .from = FC_FLEET_NEVER } };

	fc_policy(t, 1, "uid=alice", "6/m", "drop", 0, 0);
	fc_publish(t);
	fc_fleet_item(t, FC_ALGO_FLEET_WINDOW, sp, 0, 5, 0, 0);
	assert_int_equal(fc_passes(t, "uid=alice", W0 + SEC, 4), 2);
	assert_int_equal(t->ix.slots[1].state[1], FC_FLEET_WORD(W0 / MIN, FC_FLEET_WANTED));
	assert_int_equal(t->ix.fleet_ring->head, 0);
	/* the same split at a point outside the segment: the base only */
	fc_policy(t, 1, "uid=alice", "6/m", "drop", 0, 0);
	fc_publish(t);
	fc_fleet_item(t, FC_ALGO_FLEET_WINDOW, sp, 0, 0x90000000u, 0, 0);
	assert_int_equal(fc_passes(t, "uid=alice", W0 + MIN + SEC, 4), 1);
}

/* Sliding: this node's share is its room; the next window's prev is what
 * it used. */
static void test_fleet_sliding(void **state)
{
	struct fc_t *t = *state;
	struct fc_fleet_split sp[2];

	fc_policy(t, 1, "uid=*", "100/m", "drop", 0, 0);
	fc_publish(t);
	fc_split_flat(sp, 4);
	fc_fleet_item(t, FC_ALGO_FLEET_SLIDING, sp, 0, 0, 0, 0);
	assert_int_equal(fc_passes(t, "uid=a", W0 + SEC, 6), 4);
	/* at the next window's start prev = 4 weighs fully: nothing */
	assert_int_equal(fc_decide(t, "uid=a", W0 + MIN, NULL), FC_L7_REJECTED);
	/* halfway: 4 (U - U/2) + c U <= 4 U admits 2 */
	assert_int_equal(fc_passes(t, "uid=a", W0 + MIN + 30 * SEC, 4), 2);
}

/* GCRA: the node's bucket (T_i, tau_i = B_i T_i), then lease credit. */
static void test_fleet_gcra(void **state)
{
	struct fc_t *t = *state;
	/* B_i = 2, T_i = 1 s */
	struct fc_fleet_split sp[2] = { { .from = 0, .base = 2, .interval_ns = SEC }, { .from = FC_FLEET_NEVER } };
	struct fc_shm_key *e;
	__u64 lease = 200 * MS;

	fc_policy(t, 1, "uid=*", "10/s", "drop", 20, 0);
	fc_publish(t);
	fc_fleet_item(t, FC_ALGO_FLEET_GCRA, sp, lease, 0, 0, 0);
	assert_int_equal(fc_passes(t, "uid=a", W0 + SEC, 4), 2);
	e = fc_entry(t, fc_fleet_tag(1, fc_ix_policy(t, 1)->epoch, "a"));
	assert_non_null(e);
	assert_int_equal(e->state[3], 2 * SEC);
	/* demand is per lease window */
	assert_int_equal(e->state[1], FC_FLEET_WORD((W0 + SEC) / lease, FC_FLEET_WANTED));
	/* a lease grant of 3 in the current lease window */
	assert_int_equal(fc_fleet_topup(&e->state[2], (W0 + SEC) / lease, 3, 0), FC_FLEET_DONE);
	assert_int_equal(fc_passes(t, "uid=a", W0 + SEC, 5), 3);
	/* a second on, the bucket holds one token again */
	assert_int_equal(fc_passes(t, "uid=a", W0 + 2 * SEC, 3), 1);
}

/* A fleet gcra key's entry is not idle while its TAT can lead: a node's
 * T_i (here 10 s: a small share of the fleet's 10/s) is far longer than
 * the fleet's T, and a key taken back too soon would start a full bucket. */
static void test_fleet_gcra_hold(void **state)
{
	struct fc_t *t = *state;
	struct fc_fleet_split sp[2] = { { .from = 0, .base = 2, .interval_ns = 10 * SEC }, { .from = FC_FLEET_NEVER } };
	struct fc_shm_key *e;

	fc_policy(t, 1, "uid=*", "10/s", "drop", 20, 0);
	fc_publish(t);
	fc_fleet_item(t, FC_ALGO_FLEET_GCRA, sp, 200 * MS, 0, 0, 0);
	assert_int_equal(fc_passes(t, "uid=a", W0 + SEC, 3), 2);
	e = fc_entry(t, fc_fleet_tag(1, fc_ix_policy(t, 1)->epoch, "a"));
	assert_non_null(e);
	/* TAT 21 s, tau_i 20 s: held at least until the bucket is full again */
	assert_int_equal(e->state[0], W0 + 21 * SEC);
	assert_true(e->idle_ns >= e->state[0] + e->state[3]);
}

/* The fresh rule for gcra: a node whose state was made at fresh starts
 * each bucket empty then (TAT = fresh + tau_i), a key's and a fixed key's
 * alike; it fills at the node's rate T_i. */
static void test_fleet_gcra_fresh(void **state)
{
	struct fc_t *t = *state;
	/* B_i = 2, T_i = 1 s: tau_i 2 s */
	struct fc_fleet_split sp[2] = { { .from = 0, .base = 2, .interval_ns = SEC }, { .from = FC_FLEET_NEVER } };
	int k;

	for (k = 0; k < 2; k++) {
		fc_policy(t, 1, k ? "uid=alice" : "uid=*", "10/s", "drop", 20, 0);
		fc_publish(t);
		fc_fleet_item(t, FC_ALGO_FLEET_GCRA, sp, 200 * MS, 5, W0, 0);
		/* at birth nothing; a second on one token; at fresh + tau_i full */
		assert_int_equal(fc_passes(t, "uid=alice", W0, 2), 0);
		assert_int_equal(fc_passes(t, "uid=alice", W0 + SEC, 2), 1);
		assert_int_equal(fc_passes(t, "uid=alice", W0 + 4 * SEC, 3), 2);
	}
}

/* A dry run (action log) takes part in leasing: it passes, counts what it
 * would refuse, and marks and reports its demand. */
static void test_fleet_log_demands(void **state)
{
	struct fc_t *t = *state;
	struct fc_fleet_split sp[2];

	fc_policy(t, 1, "uid=*", "100/m", "log", 0, 0);
	fc_publish(t);
	fc_split_flat(sp, 1);
	fc_fleet_item(t, FC_ALGO_FLEET_WINDOW, sp, 0, 0, 0, 0);
	assert_int_equal(fc_passes(t, "uid=a", W0 + SEC, 3), 3);
	assert_int_equal(t->ix.slots[1].denied, 2);
	assert_int_equal(t->ix.fleet_ring->head, 1);
}

/* The reader refuses a fleet item it can not trust: a split past any node
 * set, a tail cut short, a cap beside. */
static void test_fleet_item_refused(void **state)
{
	struct fc_t *t = *state;
	struct fc_fleet_split sp[2] = { { .from = 0, .base = 1, .seg_lo = 0, .seg_hi = 2000ULL << 32 },
					{ .from = FC_FLEET_NEVER } };
	struct fc_shm_header *h;
	struct fc_shm_block *blk;

	fc_policy(t, 1, "uid=*", "100/m", "drop", 0, 0);
	fc_publish(t);
	h = t->base;
	blk = (struct fc_shm_block *)((char *)t->base + FC_SHM_BLOCK_OFF(h->active));
	{
		/* as fc_fleet_item, but the index must refuse it */
		uint8_t *it = (uint8_t *)(blk + 1);
		struct fc_shm_policy p;

		memcpy(&p, it, sizeof(p));
		p.algo = FC_ALGO_FLEET_WINDOW; /* without the flag: refused */
		memcpy(it, &p, sizeof(p));
		assert_int_equal(fc_build(t, t->base, t->size), 0);
		assert_int_equal(t->ix.npolicies, 0);
	}
	fc_policy(t, 1, "uid=*", "100/m", "drop", 0, 0);
	fc_publish(t);
	{
		struct fc_shm_header *h2 = t->base;
		struct fc_shm_block *b2 = (struct fc_shm_block *)((char *)t->base + FC_SHM_BLOCK_OFF(h2->active));
		uint8_t *it = (uint8_t *)(b2 + 1), dims[512];
		struct fc_shm_fleet f = { .split = { sp[0], sp[1] } };
		struct fc_shm_policy p;
		size_t nd;

		memcpy(&p, it, sizeof(p));
		nd = p.item.len - sizeof(p);
		memcpy(dims, it + sizeof(p), nd);
		p.algo = FC_ALGO_FLEET_WINDOW;
		p.flags |= FC_SHM_POLICY_FLEET;
		p.item.len = (__u16)(p.item.len + sizeof(f));
		memcpy(it, &p, sizeof(p));
		memcpy(it + sizeof(p), &f, sizeof(f));
		memcpy(it + sizeof(p) + sizeof(f), dims, nd);
		b2->used += sizeof(f);
		assert_int_equal(fc_build(t, t->base, t->size), 0);
		assert_int_equal(t->ix.npolicies, 0); /* seg_hi past 1024 nodes */
	}
}

/* Publishes t's store as fleet node name, as the agent does (the fleet's
 * view read at the time), maps both files and builds the index. */
static void fc_fleet_publish(struct fc_t *t, const char *name)
{
	struct fc_node_ctx node = fc_node_here(1);
	struct fc_fleet_view v;
	struct fc_shm_result res;
	struct fc_source src;
	struct fc_err err;

	fc_unmap(t);
	if (fc_fleet_read(t->st, name, fc_unix_ms(), &v, &err) < 0)
		fail_msg("%s", err.msg);
	node.fleet = &v;
	fc_source_init(&src, t->st, time(NULL), &node);
	if (fc_shm_publish(t->shm, t->group, 0, &src, &res, &err) < 0)
		fail_msg("%s", err.msg);
	fc_source_free(&src);
	fc_fleet_view_free(&v);
	fc_map(t->shm, &t->base, &t->size);
	fc_map(t->state_path, &t->state, &t->state_size);
	assert_int_equal(fc_build(t, t->base, t->size), 0);
}

/* uid=* 3/m --fleet over four nodes of one weight, published by freqctl's
 * own store and publisher as each node in turn, each node's requests in a
 * window of its own (the key table carries over): for every key the four
 * nodes admit exactly 3 between them, three of them one each. */
static void test_fleet_published_four_nodes(void **state)
{
	struct fc_t *t = *state;
	struct fc_policy_spec ps = { .id = 1, .algo = FC_ALGO_WINDOW, .fleet = true };
	int64_t now = fc_unix_ms();
	/* two minutes on: windows that start after the state file is made */
	__u64 w0 = ((__u64)now / 60000 + 2) * MIN;
	int got[100] = { 0 }, i, k;
	char name[8], req[32];
	struct fc_err err;

	fc_policy_put(t, &ps, "uid=*", "3/m");
	for (k = 1; k <= 4; k++) {
		snprintf(name, sizeof(name), "n%d", k);
		assert_int_equal(fc_store_fleet_node_set(t->st, name, 250000, now - 2 * 86400000, &err), 0);
	}
	for (k = 0; k < 4; k++) {
		snprintf(name, sizeof(name), "n%d", k + 1);
		fc_fleet_publish(t, name);
		assert_true(fc_ix_policy(t, 1)->fleet);
		for (i = 0; i < 100; i++) {
			snprintf(req, sizeof(req), "uid=u%d", i);
			got[i] += fc_passes(t, req, w0 + (__u64)k * MIN + SEC, 3);
		}
	}
	for (i = 0; i < 100; i++)
		assert_int_equal(got[i], 3);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_fleet_window_share_demand_grant, fc_setup, fc_teardown),
		cmocka_unit_test_setup_teardown(test_fleet_remainder_by_point, fc_setup, fc_teardown),
		cmocka_unit_test_setup_teardown(test_fleet_overflow_refuses, fc_setup, fc_teardown),
		cmocka_unit_test_setup_teardown(test_fleet_fresh_and_clock, fc_setup, fc_teardown),
		cmocka_unit_test_setup_teardown(test_fleet_refund, fc_setup, fc_teardown),
		cmocka_unit_test_setup_teardown(test_fleet_fixed_key, fc_setup, fc_teardown),
		cmocka_unit_test_setup_teardown(test_fleet_sliding, fc_setup, fc_teardown),
		cmocka_unit_test_setup_teardown(test_fleet_gcra, fc_setup, fc_teardown),
		cmocka_unit_test_setup_teardown(test_fleet_gcra_hold, fc_setup, fc_teardown),
		cmocka_unit_test_setup_teardown(test_fleet_gcra_fresh, fc_setup, fc_teardown),
		cmocka_unit_test_setup_teardown(test_fleet_log_demands, fc_setup, fc_teardown),
		cmocka_unit_test_setup_teardown(test_fleet_item_refused, fc_setup, fc_teardown),
		cmocka_unit_test_setup_teardown(test_fleet_published_four_nodes, fc_setup, fc_teardown),
	};

	return fc_run_group("l7_fleet", tests, NULL, NULL);
}
