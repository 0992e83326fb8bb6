// SPDX-License-Identifier: BSD-2-Clause
/*
 * Policies on the real programs under BPF_PROG_TEST_RUN: exact pass counts
 * for GCRA and windows, CIDR buckets, ip=* per source (IPv4 and IPv6), syn
 * and bytes counting, log, edits and deletes taking effect on the next frame,
 * the all-or-nothing charge across policies, floods of new sources, a full
 * table, and exactness with threads on different CPUs.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>
#include <linux/bpf.h>
#include <linux/in.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf.h>

#include "fc_test.h"
#include "fc_step.h"
#include "fc_test_bpf.h"
#include "fc_vectors.h"

/* A time aligned to every window the vectors use (03:00 UTC, 2026-11-22). */
#define FC_VEC_BASE (1795316400ULL * 1000000000ULL)
#define FC_MS       1000000ULL

static int fc_udp(struct fc_env *env, bool tc, const char *src, int n)
{
	struct fc_frame_spec spec = { .src = src, .l4proto = IPPROTO_UDP };

	return fc_env_send(env, tc, &spec, n);
}

static struct fc_stats fc_stats_now(struct fc_env *env)
{
	struct fc_stats s;
	struct fc_err err;

	if (fc_stats_read(&env->maps, &s, &err) < 0)
		fail_msg("%s", err.msg);
	return s;
}

/* Runs a test body for XDP and for TC, each on a fresh policy. */
static void fc_both(void **state, void (*body)(struct fc_env *env, bool tc, uint32_t id))
{
	FC_REQUIRE_BPF();
	body(*state, false, 1);
	body(*state, true, 2);
}

/* GCRA 1/s burst 5: exactly 5 of 10 back-to-back frames. */
static void fc_gcra_body(struct fc_env *env, bool tc, uint32_t id)
{
	const char *src = tc ? "198.18.0.12" : "198.18.0.11";
	char match[32];
	struct fc_pstats ps;

	snprintf(match, sizeof(match), "ip=%s", src);
	fc_env_policy(env, id, match, "1/s", "burst=5");
	assert_int_equal(fc_udp(env, tc, src, 10), 5);
	assert_int_equal(fc_udp(env, tc, "198.18.0.99", 10), 10); /* other sources: no policy */
	ps = fc_env_pstats(env, id);
	assert_int_equal(ps.passed.packets, 5);
	assert_int_equal(ps.dropped.packets, 5);
}

static void test_gcra(void **state)
{
	fc_both(state, fc_gcra_body);
}

/* Waits until at least margin seconds remain in the current UTC minute, so a
 * window test does not straddle a boundary. */
static void fc_away_from_minute_edge(int margin)
{
	while (60 - time(NULL) % 60 < margin)
		usleep(100000);
}

/* Window 3/m: 3 of 10; 2001:2::/64 as one bucket for IPv6 too. */
static void fc_window_body(struct fc_env *env, bool tc, uint32_t id)
{
	fc_away_from_minute_edge(5);
	fc_env_policy(env, id, tc ? "ip=2001:2::/64" : "ip=2001:3::/64", "3/m", "algo=window");
	assert_int_equal(fc_udp(env, tc, tc ? "2001:2::1" : "2001:3::1", 10), 3);
	assert_int_equal(fc_udp(env, tc, tc ? "2001:2::2" : "2001:3::2", 10), 0);
}

static void test_window_and_v6_cidr(void **state)
{
	fc_both(state, fc_window_body);
}

/* The shared sliding-window vectors (fc_vectors.h) on the real programs,
 * with the packet path's clock set to each step's time: the same counts as
 * the algorithm's and the nginx engine's tests. */
static void fc_sliding_body(struct fc_env *env, bool tc, uint32_t id)
{
	const struct fc_vector *v;
	const struct fc_vec_step *s;
	char match[32], src[32];
	size_t i, j;
	int got;

	for (i = 0; i < FC_NVECTORS; i++) {
		snprintf(match, sizeof(match), "ip=198.18.%u.%zu", tc ? 21 : 20, i + 1);
		fc_env_policy(env, id * 100 + (uint32_t)i, match, fc_sliding_vectors[i].rates, "algo=sliding");
	}
	for (i = 0; i < FC_NVECTORS; i++) {
		v = &fc_sliding_vectors[i];
		snprintf(src, sizeof(src), "198.18.%u.%zu", tc ? 21 : 20, i + 1);
		for (j = 0; j < FC_VEC_STEPS && v->step[j].tries; j++) {
			s = &v->step[j];
			fc_env_clock(env, FC_VEC_BASE + s->at_ms * FC_MS);
			got = fc_udp(env, tc, src, (int)s->tries);
			if (got != (int)s->admitted)
				fail_msg("%s (%s): step %zu (%u ms): %d passed, expected %u", v->name, tc ? "TC" : "XDP",
					 j, s->at_ms, got, s->admitted);
		}
	}
}

static void test_sliding_vectors(void **state)
{
	fc_both(state, fc_sliding_body);
}

/* The shared warm-up vectors (fc_vectors.h) on the real programs, each
 * step at its exact time: the clock is set while the coarse clock stands
 * still. A step during which it ticked (a frame may have read the next
 * tick) is undone, its bucket put back as it was, and made again. */
struct fc_warm_bpf {
	struct fc_env *env;
	bool tc;
	struct fc_frame_spec spec;
	int map;        /* the bucket: fc_buckets[slot], or the source's in fc_src4 */
	const void *key;
	unsigned redone;
};

static uint32_t fc_warm_bpf_step(void *arg, uint32_t at_ms, uint32_t tries)
{
	struct fc_warm_bpf *w = arg;
	struct fc_src_bucket before;
	uint64_t tick;
	bool had;
	int passed, i;

	for (i = 0; i < 20; i++) {
		had = !bpf_map_lookup_elem(w->map, w->key, &before);
		tick = fc_env_clock_exact(w->env, FC_VEC_BASE + at_ms * FC_MS);
		passed = fc_env_send(w->env, w->tc, &w->spec, (int)tries);
		if (fc_env_clock_held(tick))
			return (uint32_t)passed;
		w->redone++;
		if (had)
			assert_int_equal(bpf_map_update_elem(w->map, w->key, &before, BPF_EXIST), 0);
		else
			bpf_map_delete_elem(w->map, w->key);
	}
	fail_msg("step at %u ms: the coarse clock ticked during it 20 times", at_ms);
	return 0;
}

/* Runs vector v on a new policy id (match: ip=src, or ip=*) for src. */
static void fc_warm_bpf_vector(struct fc_env *env, bool tc, uint32_t id, const struct fc_warm_vector *v,
			       const char *match, const char *src)
{
	struct fc_warm_bpf w = { .env = env, .tc = tc, .spec = { .src = src, .l4proto = IPPROTO_UDP } };
	struct fc_policy_row row;
	uint32_t got[FC_WARM_BINS];
	struct fc_addr4 a4;
	struct fc_err err;
	char opts[64];
	bool found;
	int bad;

	/* A UDP/IPv4 frame is 42 bytes of headers. */
	if (v->cost > 1)
		w.spec.payload = (uint16_t)(v->cost - 42);
	snprintf(opts, sizeof(opts), "warmup=%us%s", v->warmup_s, v->cost > 1 ? " count=bytes" : "");
	fc_env_policy(env, id, match, v->rates, opts);
	if (fc_store_policy_get(env->st, id, &row, &found, &err) < 0 || !found)
		fail_msg("policy %u: %s", id, found ? err.msg : "not found");
	if (strcmp(match, "ip=*")) {
		w.map = env->maps.buckets;
		w.key = &row.slot;
	} else {
		assert_int_equal(inet_pton(AF_INET, src, a4.a), 1);
		w.map = env->maps.src4;
		w.key = &a4;
	}
	bad = fc_warm_run(v, fc_warm_bpf_step, &w, got);
	if (w.redone)
		print_message("%s (%s, %s): %u steps made again (the clock ticked)\n", v->name, match,
			      tc ? "TC" : "XDP", w.redone);
	if (bad >= 0)
		fail_msg("%s (%s): bin %d: %u passed, expected %u", v->name, tc ? "TC" : "XDP", bad, got[bad],
			 v->admitted[bad]);
}

static void fc_warm_body(struct fc_env *env, bool tc, uint32_t id)
{
	char match[40], src[32];
	size_t i;

	for (i = 0; i < FC_NWARM; i++) {
		snprintf(src, sizeof(src), "198.18.%u.%zu", tc ? 31 : 30, i + 1);
		snprintf(match, sizeof(match), "ip=%s", src);
		fc_warm_bpf_vector(env, tc, id * 100 + (uint32_t)i, &fc_warm_vectors[i], match, src);
	}
	/* The ip=* buckets (a word more after their tiers' too), the first
	 * packet through every policy, the rest on the source's fast path. */
	snprintf(src, sizeof(src), "198.18.%u.1", tc ? 33 : 32);
	fc_warm_bpf_vector(env, tc, id * 100 + 99, &fc_warm_vectors[0], "ip=*", src);
	fc_env_policy_del(env, id * 100 + 99);
}

static void test_warm_vectors(void **state)
{
	fc_both(state, fc_warm_body);
}

/* Sliding by bytes: a frame longer than N never passes; the rest fit. */
static void fc_sliding_bytes_body(struct fc_env *env, bool tc, uint32_t id)
{
	struct fc_frame_spec big = { tc ? "198.18.22.2" : "198.18.22.1", IPPROTO_UDP, .payload = 58 }; /* 100 bytes */
	struct fc_frame_spec huge = { tc ? "198.18.22.4" : "198.18.22.3", IPPROTO_UDP, .payload = 58 };

	fc_env_policy(env, id * 10, tc ? "ip=198.18.22.2" : "ip=198.18.22.1", "250/m", "algo=sliding count=bytes");
	fc_env_policy(env, id * 10 + 1, tc ? "ip=198.18.22.4" : "ip=198.18.22.3", "99/m",
		      "algo=sliding count=bytes");
	fc_env_clock(env, FC_VEC_BASE + 1000 * FC_MS);
	assert_int_equal(fc_env_send(env, tc, &big, 5), 2);
	assert_int_equal(fc_env_send(env, tc, &huge, 3), 0);
	/* 30 s into the next minute: 200*30 + (0+100k)*60 <= 250*60, k = 1. */
	fc_env_clock(env, FC_VEC_BASE + 90000 * FC_MS);
	assert_int_equal(fc_env_send(env, tc, &big, 5), 1);
	fc_env_clock(env, FC_VEC_BASE + 300000 * FC_MS); /* idle for minutes: still never */
	assert_int_equal(fc_env_send(env, tc, &huge, 3), 0);
}

static void test_sliding_bytes(void **state)
{
	fc_both(state, fc_sliding_bytes_body);
}

/* A CIDR policy is one bucket for every address in it. */
static void fc_cidr_body(struct fc_env *env, bool tc, uint32_t id)
{
	fc_env_policy(env, id, tc ? "ip=198.18.2.0/24" : "ip=198.18.1.0/24", "1/s", "burst=3");
	assert_int_equal(fc_udp(env, tc, tc ? "198.18.2.1" : "198.18.1.1", 2) +
				 fc_udp(env, tc, tc ? "198.18.2.2" : "198.18.1.2", 2) +
				 fc_udp(env, tc, tc ? "198.18.2.3" : "198.18.1.3", 2),
			 3);
	assert_int_equal(fc_udp(env, tc, "198.18.3.1", 4), 4);
}

static void test_cidr_one_bucket(void **state)
{
	fc_both(state, fc_cidr_body);
}

/* ip=*: each source its own bucket, IPv4 and IPv6 alike. */
static void test_star_per_source(void **state)
{
	struct fc_env *env = *state;

	FC_REQUIRE_BPF();
	fc_env_policy(env, 1, "ip=*", "1/s", "burst=2");
	assert_int_equal(fc_udp(env, false, "198.18.0.1", 5), 2);
	assert_int_equal(fc_udp(env, true, "198.18.0.2", 5), 2);
	assert_int_equal(fc_udp(env, false, "2001:2::1", 5), 2);
	assert_int_equal(fc_udp(env, true, "2001:2:0:1::1", 5), 2); /* another /64 */
	assert_int_equal(fc_udp(env, true, "198.18.0.1", 5), 0); /* XDP and TC share the buckets */
}

/* Sends one frame from each of n sources, fmt with 0..n-1 (an IPv6 source
 * gets it twice: in the interface id's high and low bits); returns how many
 * passed. */
static int fc_udp_each(struct fc_env *env, bool tc, const char *fmt, int n)
{
	char src[64];
	int i, passed = 0;

	for (i = 0; i < n; i++) {
		snprintf(src, sizeof(src), fmt, i + 1, i + 1);
		passed += fc_udp(env, tc, src, 1);
	}
	return passed;
}

/* The walk: 50 frames from 50 addresses of one /64 under ip=* 5/m
 * pass 5, as 50 from one address do; a unit of /32 and /128 gives each
 * address its own bucket again (50 pass), one of /32 and /48 one to a /48. */
static void fc_star_unit6_body(struct fc_env *env, bool tc, uint32_t id)
{
	const char *walk = tc ? "2001:2:0:31:%x::%x" : "2001:2:0:30:%x::%x";

	fc_env_policy(env, id, "ip=*", "5/m", "");
	assert_int_equal(fc_udp_each(env, tc, walk, 50), 5);
	assert_int_equal(fc_udp(env, tc, tc ? "2001:2:0:31::1" : "2001:2:0:30::1", 3), 0);
	assert_int_equal(fc_udp(env, !tc, tc ? "2001:2:0:31:ffff::1" : "2001:2:0:30:ffff::1", 3), 0);
	/* Another /64 of the same /48: a bucket of its own. */
	assert_int_equal(fc_udp_each(env, tc, tc ? "2001:2:0:131:%x::%x" : "2001:2:0:130:%x::%x", 50), 5);
	assert_int_equal(fc_env_pstats(env, id).passed.packets, 10);
	fc_env_policy(env, id, "ip=*/32/128", "5/m", "");
	assert_int_equal(fc_udp_each(env, tc, walk, 50), 50);
	fc_env_policy(env, id, "ip=*/32/48", "5/m", "");
	assert_int_equal(fc_udp_each(env, tc, tc ? "2001:2:0:%x31::%x" : "2001:2:0:%x30::%x", 50), 5);
	/* IPv4 keeps a bucket per address: 5 each. */
	assert_int_equal(fc_udp(env, tc, tc ? "198.18.31.1" : "198.18.30.1", 8), 5);
	assert_int_equal(fc_udp(env, tc, tc ? "198.18.31.2" : "198.18.30.2", 8), 5);
	fc_env_policy_del(env, id);
}

static void test_star_unit6(void **state)
{
	fc_both(state, fc_star_unit6_body);
}

/* A unit of /24: a bucket per IPv4 /24 (an IPv6 source's v4-mapped address
 * counting as its IPv4 one), while IPv6 keeps its /64; plain ip=* is a
 * bucket per IPv4 address. */
static void fc_star_unit4_body(struct fc_env *env, bool tc, uint32_t id)
{
	fc_env_policy(env, id, "ip=*/24", "5/m", "");
	assert_int_equal(fc_udp_each(env, tc, tc ? "198.18.41.%d" : "198.18.40.%d", 50), 5);
	assert_int_equal(fc_udp(env, tc, tc ? "::ffff:198.18.41.200" : "::ffff:198.18.40.200", 3), 0);
	assert_int_equal(fc_udp_each(env, tc, tc ? "198.18.43.%d" : "198.18.42.%d", 50), 5);
	assert_int_equal(fc_udp_each(env, tc, tc ? "2001:2:0:41:%x::%x" : "2001:2:0:40:%x::%x", 50), 5);
	fc_env_policy(env, id, "ip=*", "5/m", "");
	assert_int_equal(fc_udp_each(env, tc, tc ? "198.18.41.%d" : "198.18.40.%d", 50), 50);
	fc_env_policy_del(env, id);
}

static void test_star_unit4(void **state)
{
	fc_both(state, fc_star_unit4_body);
}

/* The ip=* bucket of src as the maps hold it (its unit's key), and whether
 * it notes the rules for the current generation. */
static bool fc_star_noted(struct fc_env *env, const char *unit)
{
	struct fc_src_bucket b;
	struct fc_config cfg;
	struct fc_prefix p;
	struct fc_err err;

	if (fc_prefix_parse(unit, &p, &err) < 0 || fc_config_read(&env->maps, &cfg, &err) < 0)
		fail_msg("%s", err.msg);
	if (bpf_map_lookup_elem(p.family == 4 ? env->maps.src4 : env->maps.src6, p.a, &b))
		fail_msg("%s: no ip=* bucket", unit);
	return b.rules_gen == cfg.rules_gen;
}

/* One family's case of the rules inside a unit: the ip=* policy, a ban
 * outside every unit used, then a unit each for a source with nothing
 * inside (noted: its packets skip the lookups), an exact ban beside a
 * neighbour, a longer prefix ban, an exact policy and an allow entry. */
struct fc_unit_case {
	const char *match, *elsewhere;
	const char *plain, *plain_unit;
	const char *banned, *neighbour, *neighbour_unit;
	const char *longer, *longer_in, *longer_out;
	const char *policed, *policed_neighbour;
	const char *allowed, *allowed_neighbour;
};

static const struct fc_unit_case fc_unit_cases[] = {
	{ "ip=*", "2001:db8::/32", "2001:2:0:50::1", "2001:2:0:50::", "2001:2:0:51::bad", "2001:2:0:51::1",
	  "2001:2:0:51::", "2001:2:0:52:8000::/65", "2001:2:0:52:8000::1", "2001:2:0:52::1", "2001:2:0:53::9",
	  "2001:2:0:53::1", "2001:2:0:54::a", "2001:2:0:54::1" },
	{ "ip=*/24", "198.16.0.0/16", "198.18.54.1", "198.18.54.0", "198.18.55.9", "198.18.55.1", "198.18.55.0",
	  "198.18.56.16/28", "198.18.56.17", "198.18.56.1", "198.18.57.9", "198.18.57.1", "198.18.58.10",
	  "198.18.58.1" },
};

/* A unit's bucket notes what the exact and prefix lookups found only where
 * that holds for all its addresses: an exact ban, an exact policy, a longer
 * prefix or an allow entry inside it is seen by the addresses it is on,
 * whatever their neighbours' packets noted. */
static void fc_unit_case_run(struct fc_env *env, bool tc, uint32_t id, const struct fc_unit_case *c)
{
	char match[64];

	fc_env_policy(env, id, c->match, "1/m", "burst=100");
	fc_env_ban(env, c->elsewhere, 0);
	assert_int_equal(fc_udp(env, tc, c->plain, 3), 3);
	assert_true(fc_star_noted(env, c->plain_unit));
	fc_env_ban(env, c->banned, 0);
	assert_int_equal(fc_udp(env, tc, c->neighbour, 3), 3);
	assert_false(fc_star_noted(env, c->neighbour_unit));
	assert_int_equal(fc_udp(env, tc, c->banned, 3), 0);
	assert_int_equal(fc_udp(env, !tc, c->neighbour, 3), 3);
	fc_env_ban(env, c->longer, 0);
	assert_int_equal(fc_udp(env, tc, c->longer_out, 3), 3);
	assert_int_equal(fc_udp(env, tc, c->longer_in, 3), 0);
	snprintf(match, sizeof(match), "ip=%s", c->policed);
	fc_env_policy(env, id + 10, match, "1/m", "burst=1");
	assert_int_equal(fc_udp(env, tc, c->policed_neighbour, 3), 3);
	assert_int_equal(fc_udp(env, tc, c->policed, 3), 1);
	fc_env_allow(env, c->allowed, 0);
	fc_env_policy(env, id, c->match, "1/m", "burst=1");
	assert_int_equal(fc_udp(env, tc, c->allowed_neighbour, 3), 1);
	assert_int_equal(fc_udp(env, tc, c->allowed, 3), 3);
	fc_env_policy_del(env, id);
	fc_env_policy_del(env, id + 10);
	fc_env_unallow(env, c->allowed);
	fc_env_unban(env, c->longer);
	fc_env_unban(env, c->banned);
	fc_env_unban(env, c->elsewhere);
}

static void fc_star_unit_rules_body(struct fc_env *env, bool tc, uint32_t id)
{
	size_t i;

	for (i = 0; i < sizeof(fc_unit_cases) / sizeof(fc_unit_cases[0]); i++)
		fc_unit_case_run(env, tc, id, &fc_unit_cases[i]);
	/* Units shorter than a /24: noted while IPv4 has no rule at all, not
	 * once it has one. */
	fc_env_policy(env, id, "ip=*/16", "1/m", "burst=100");
	assert_int_equal(fc_udp(env, tc, "198.19.1.1", 3), 3);
	assert_true(fc_star_noted(env, "198.19.0.0"));
	fc_env_ban(env, "198.19.2.9", 0);
	assert_int_equal(fc_udp(env, tc, "198.19.1.1", 3), 3);
	assert_false(fc_star_noted(env, "198.19.0.0"));
	assert_int_equal(fc_udp(env, tc, "198.19.2.9", 3), 0);
	fc_env_policy_del(env, id);
	fc_env_unban(env, "198.19.2.9");
}

static void test_star_unit_rules(void **state)
{
	fc_both(state, fc_star_unit_rules_body);
}

/* syn: only SYN without ACK is charged; other packets pass untouched. */
static void test_syn(void **state)
{
	struct fc_frame_spec syn = { "198.18.0.5", IPPROTO_TCP, 0x02 }, synack = { "198.18.0.5", IPPROTO_TCP, 0x12 },
			     ack = { "198.18.0.5", IPPROTO_TCP, 0x10 }, udp = { "198.18.0.5", IPPROTO_UDP };
	struct fc_env *env = *state;
	struct fc_pstats ps;

	FC_REQUIRE_BPF();
	fc_env_policy(env, 1, "ip=*", "1/m", "burst=2 count=syn");
	assert_int_equal(fc_env_send(env, false, &syn, 5), 2);
	assert_int_equal(fc_env_send(env, true, &syn, 5), 0);
	assert_int_equal(fc_env_send(env, false, &ack, 10), 10);
	assert_int_equal(fc_env_send(env, true, &synack, 10), 10);
	assert_int_equal(fc_env_send(env, false, &udp, 10), 10);
	ps = fc_env_pstats(env, 1);
	assert_int_equal(ps.passed.packets, 2);
	assert_int_equal(ps.dropped.packets, 8);
}

/* bytes: the frame length is the cost. */
static void test_bytes(void **state)
{
	struct fc_frame_spec big = { "198.18.0.6", IPPROTO_UDP, .payload = 58 }; /* 100-byte frame */
	struct fc_env *env = *state;

	FC_REQUIRE_BPF();
	fc_env_policy(env, 1, "ip=198.18.0.6", "1000/m", "burst=450 count=bytes");
	assert_int_equal(fc_env_send(env, false, &big, 10), 4);
	assert_int_equal(fc_env_pstats(env, 1).passed.bytes, 400);
}

/* log: counts what it would drop, drops nothing. */
static void test_log(void **state)
{
	struct fc_env *env = *state;
	struct fc_stats st;
	struct fc_pstats ps;

	FC_REQUIRE_BPF();
	fc_env_policy(env, 1, "ip=198.18.0.0/16", "1/m", "burst=2 action=log");
	assert_int_equal(fc_udp(env, false, "198.18.0.1", 5), 5);
	assert_int_equal(fc_udp(env, true, "198.18.0.2", 5), 5);
	ps = fc_env_pstats(env, 1);
	assert_int_equal(ps.passed.packets, 2);
	assert_int_equal(ps.dropped.packets, 8); /* would have dropped */
	st = fc_stats_now(env);
	assert_int_equal(st.drop_limit.packets, 0);
	assert_int_equal(st.passed.packets, 10);
}

/* Delete, limit edits and match edits, each on the next frame. */
static void test_edits(void **state)
{
	struct fc_env *env = *state;

	FC_REQUIRE_BPF();
	fc_env_policy(env, 1, "ip=198.18.0.7", "1/m", "burst=2");
	assert_int_equal(fc_udp(env, false, "198.18.0.7", 5), 2);
	/* New limits keep the state: burst 3 leaves room for exactly one more. */
	fc_env_policy(env, 1, "ip=198.18.0.7", "1/m", "burst=3");
	assert_int_equal(fc_udp(env, false, "198.18.0.7", 5), 1);
	/* A new match starts afresh, and the old address is free. */
	fc_env_policy(env, 1, "ip=198.18.0.8", "1/m", "burst=3");
	assert_int_equal(fc_udp(env, false, "198.18.0.8", 5), 3);
	assert_int_equal(fc_udp(env, false, "198.18.0.7", 5), 5);
	/* Deleted: the next frame passes. */
	fc_env_policy_del(env, 1);
	assert_int_equal(fc_udp(env, true, "198.18.0.8", 5), 5);
	/* A new policy in the freed slot starts with fresh counters and state. */
	fc_env_policy(env, 2, "ip=198.18.0.8", "1/m", "burst=1");
	assert_int_equal(fc_udp(env, false, "198.18.0.8", 5), 1);
	assert_int_equal(fc_env_pstats(env, 2).passed.packets, 1);
	assert_int_equal(fc_env_pstats(env, 2).dropped.packets, 4);
}

/* The exact, prefix and ip=* policies must all admit; a denial by one
 * charges none, and bans come before any policy. */
static void test_all_or_nothing(void **state)
{
	struct fc_env *env = *state;
	struct fc_stats st;

	FC_REQUIRE_BPF();
	fc_env_policy(env, 1, "ip=198.18.0.7", "1/m", "burst=5");
	fc_env_policy(env, 2, "ip=198.18.0.0/24", "1/m", "burst=2");
	assert_int_equal(fc_udp(env, false, "198.18.0.7", 10), 2); /* the prefix says no after 2 */
	fc_env_policy_del(env, 2);
	assert_int_equal(fc_udp(env, false, "198.18.0.7", 10), 3); /* the exact bucket was charged 2, not 10 */

	fc_env_policy(env, 3, "ip=*", "1/m", "burst=1");
	assert_int_equal(fc_udp(env, true, "198.18.0.9", 5), 1);
	fc_env_policy_del(env, 3);

	/* A ban wins over the policy on the same address, which is not charged. */
	fc_env_policy(env, 4, "ip=198.18.0.20", "1/m", "burst=1");
	fc_env_ban(env, "198.18.0.20", 0);
	assert_int_equal(fc_udp(env, false, "198.18.0.20", 3), 0);
	fc_env_unban(env, "198.18.0.20");
	assert_int_equal(fc_udp(env, false, "198.18.0.20", 3), 1);
	st = fc_stats_now(env);
	assert_int_equal(st.drop_exact.packets, 3);
	assert_int_equal(fc_env_pstats(env, 4).passed.packets + fc_env_pstats(env, 4).dropped.packets, 3);
}

/*
 * Two policies, charged both or neither, on each way the program takes them:
 * inline for single-tier GCRA ones, in a global function otherwise (tiers,
 * another algorithm). The second denies after its burst; the first, charged
 * only with the second, then has exactly its burst minus that left.
 */
static void fc_pair_body(struct fc_env *env, const char *first, const char *rates, const char *opts,
			 const char *second, const char *src)
{
	char match[48];

	snprintf(match, sizeof(match), "ip=%s", first);
	fc_env_policy(env, 1, match, rates, opts);
	if (strcmp(second, "*")) {
		snprintf(match, sizeof(match), "ip=%s", second);
		fc_env_policy(env, 2, match, "1/m", "burst=2");
	} else {
		fc_env_policy(env, 2, "ip=*", "1/m", "burst=2");
	}
	assert_int_equal(fc_udp(env, false, src, 3) + fc_udp(env, true, src, 3), 2);
	assert_int_equal(fc_env_pstats(env, 1).passed.packets, 2);
	assert_int_equal(fc_env_pstats(env, 2).dropped.packets, 4);
	fc_env_policy_del(env, 2);
	assert_int_equal(fc_udp(env, true, src, 10), 3); /* burst 5, charged 2 */
	fc_env_policy_del(env, 1);
}

static void test_pairs(void **state)
{
	struct fc_env *env = *state;

	FC_REQUIRE_BPF();
	fc_pair_body(env, "198.18.0.40", "1/m", "burst=5", "*", "198.18.0.40");
	fc_pair_body(env, "198.18.0.0/24", "1/m", "burst=5", "*", "198.18.0.41");
	fc_pair_body(env, "198.18.0.42", "1/m:5,100/h", "", "198.18.0.0/26", "198.18.0.42");
	fc_away_from_minute_edge(5);
	fc_pair_body(env, "198.18.0.43", "5/m", "algo=window", "*", "198.18.0.43");
	fc_pair_body(env, "2001:2::44", "1/m", "burst=5", "2001:2::/64", "2001:2::44");
}

/*
 * A warm-up policy on each pair's path (never inline: its ramp would be
 * skipped). Second after a plain single-tier GCRA policy, it admits one
 * frame cold and refuses the rest, and the first is charged for that one
 * alone: its burst of 5 then admits 4. Alone under ip=*, one passes too.
 */
static void fc_pair_warm_body(struct fc_env *env, const char *first, const char *second, const char *src)
{
	char match[48];

	if (first) {
		snprintf(match, sizeof(match), "ip=%s", first);
		fc_env_policy(env, 1, match, "1/m", "burst=5");
	}
	snprintf(match, sizeof(match), "ip=%s", second);
	fc_env_policy(env, 2, match, "1/m", "burst=5 warmup=1h");
	assert_int_equal(fc_udp(env, false, src, 3) + fc_udp(env, true, src, 3), 1);
	assert_int_equal(fc_env_pstats(env, 2).passed.packets, 1);
	assert_int_equal(fc_env_pstats(env, 2).dropped.packets, 5);
	fc_env_policy_del(env, 2);
	if (first) {
		assert_int_equal(fc_env_pstats(env, 1).passed.packets, 1);
		assert_int_equal(fc_udp(env, true, src, 10), 4);
		fc_env_policy_del(env, 1);
	}
}

static void test_pairs_warming(void **state)
{
	struct fc_env *env = *state;

	FC_REQUIRE_BPF();
	fc_pair_warm_body(env, "198.18.0.50", "*", "198.18.0.50");
	fc_pair_warm_body(env, NULL, "*", "198.18.0.51");
	fc_pair_warm_body(env, "198.18.0.52", "198.18.0.0/26", "198.18.0.52");
	fc_pair_warm_body(env, NULL, "198.18.0.64/26", "198.18.0.65");
	fc_pair_warm_body(env, "2001:2::53", "2001:2::/64", "2001:2::53");
}

/*
 * --override at XDP/TC: an exact address's policy switches off its prefix's
 * and ip=*, a prefix's ip=*; the exact address's still applies under a
 * prefix override. What is switched off is not charged: its bucket is as
 * the other sources left it. Each step on both programs (3 frames by XDP,
 * then by TC), on every path: a pair inline, three through the general path.
 */
static int fc_udp_both(struct fc_env *env, const char *src, int n)
{
	return fc_udp(env, false, src, n) + fc_udp(env, true, src, n);
}

static void test_override(void **state)
{
	struct fc_env *env = *state;

	FC_REQUIRE_BPF();
	/* Exact over ip=*: the partner gets its 5, not ip=*'s 2. */
	fc_env_policy(env, 1, "ip=*", "1/m", "burst=2");
	fc_env_policy(env, 2, "ip=198.18.1.5", "1/m", "burst=5 override=1");
	assert_int_equal(fc_udp_both(env, "198.18.1.5", 5), 5);
	assert_int_equal(fc_udp_both(env, "198.18.1.6", 5), 2);
	assert_int_equal(fc_env_pstats(env, 1).passed.packets, 2);
	assert_int_equal(fc_env_pstats(env, 2).passed.packets, 5);
	/* No override: both must admit again, and ip=* finds the partner's
	 * bucket untouched (burst 2), however much the partner sent. */
	fc_env_policy(env, 2, "ip=198.18.1.5", "1/m", "burst=20");
	assert_int_equal(fc_udp_both(env, "198.18.1.5", 5), 2);
	/* And an override again: the exact policy's 20 less the 7 it passed;
	 * a ban still comes first. */
	fc_env_policy(env, 2, "ip=198.18.1.5", "1/m", "burst=20 override=1");
	fc_env_ban(env, "198.18.1.5", 0);
	assert_int_equal(fc_udp_both(env, "198.18.1.5", 3), 0);
	fc_env_unban(env, "198.18.1.5");
	assert_int_equal(fc_udp_both(env, "198.18.1.5", 10), 13);
	fc_env_policy_del(env, 2);

	/* Exact over its prefix: the /24's aggregate is not charged for it. */
	fc_env_policy(env, 3, "ip=198.18.2.0/24", "1/m", "burst=2");
	fc_env_policy(env, 4, "ip=198.18.2.5", "1/m", "burst=5 override=1");
	assert_int_equal(fc_udp_both(env, "198.18.2.5", 5), 5);
	assert_int_equal(fc_udp_both(env, "198.18.2.6", 5), 2); /* the /24's 2, and ip=*'s 2 */
	/* Exact over prefix and ip=* at once (three policies: the general path). */
	fc_env_policy(env, 5, "ip=198.18.2.7", "1/m", "burst=4 override=1");
	assert_int_equal(fc_udp_both(env, "198.18.2.7", 5), 4);
	assert_int_equal(fc_env_pstats(env, 3).passed.packets, 2);
	assert_int_equal(fc_env_pstats(env, 3).dropped.packets, 8);
	fc_env_policy_del(env, 3);
	fc_env_policy_del(env, 4);
	fc_env_policy_del(env, 5);

	/* Prefix over ip=*: the /24 as one bucket of 4 for all of it, ip=*
	 * not charged (198.18.3.8 has its 2 of ip=* afterwards)... */
	fc_env_policy(env, 6, "ip=198.18.3.0/24", "1/m", "burst=4 override=1");
	assert_int_equal(fc_udp_both(env, "198.18.3.7", 2), 4);
	assert_int_equal(fc_udp_both(env, "198.18.3.8", 2), 0);
	fc_env_policy(env, 6, "ip=198.18.3.0/24", "1/m", "burst=6");
	assert_int_equal(fc_udp_both(env, "198.18.3.8", 5), 2);
	/* ... and an exact policy inside it still applies: it is not more
	 * general than the prefix. 198.18.4.9: its 1, within the /24's 6. */
	fc_env_policy(env, 7, "ip=198.18.4.0/24", "1/m", "burst=6 override=1");
	fc_env_policy(env, 8, "ip=198.18.4.9", "1/m", "burst=1");
	assert_int_equal(fc_udp_both(env, "198.18.4.9", 5), 1);
	assert_int_equal(fc_env_pstats(env, 8).dropped.packets, 9);
	assert_int_equal(fc_udp_both(env, "198.18.4.10", 5), 5); /* 1 + 5 of the /24's 6 */
	fc_env_policy_del(env, 7);
	fc_env_policy_del(env, 8);

	/* IPv6: an exact override over its /64 and ip=*. */
	fc_env_policy(env, 9, "ip=2001:2::/64", "1/m", "burst=1");
	fc_env_policy(env, 10, "ip=2001:2::5", "1/m", "burst=3 override=1");
	assert_int_equal(fc_udp_both(env, "2001:2::5", 5), 3);
	assert_int_equal(fc_udp_both(env, "2001:2::6", 5), 1);
	/* ip=* was charged by 198.18.1.5 once no override (2), 198.18.1.6,
	 * 198.18.2.6, 198.18.3.8 once no override (2 each) and 2001:2::6 (1):
	 * never by a source an override covered. */
	assert_int_equal(fc_env_pstats(env, 1).passed.packets, 2 + 2 + 2 + 2 + 1);
}

/* A prefix ban covers a longer prefix with only a policy; a policy covers a
 * longer banned prefix once that ban is lifted. */
static void test_inheritance(void **state)
{
	struct fc_env *env = *state;

	FC_REQUIRE_BPF();
	fc_env_ban(env, "198.18.0.0/16", 0);
	fc_env_policy(env, 1, "ip=198.18.5.0/24", "1/m", "burst=1");
	assert_int_equal(fc_udp(env, false, "198.18.5.1", 3), 0);
	assert_int_equal(fc_udp(env, true, "198.18.6.1", 3), 0);
	assert_int_equal(fc_stats_now(env).drop_prefix.packets, 6);
	fc_env_unban(env, "198.18.0.0/16");
	fc_env_policy(env, 2, "ip=198.18.0.0/16", "1/m", "burst=2");
	fc_env_ban(env, "198.18.7.0/24", 0);
	assert_int_equal(fc_udp(env, false, "198.18.5.1", 3), 1); /* the longest prefix: the /24, burst 1 */
	assert_int_equal(fc_udp(env, false, "198.18.7.1", 3), 0); /* banned */
	fc_env_unban(env, "198.18.7.0/24");
	assert_int_equal(fc_udp(env, false, "198.18.7.1", 3), 2); /* the /16 policy it inherits */
}

/* A source that only ip=* applied to is remembered as such, until the rules
 * change: a later ban or exact policy on it applies from the next frame. */
static void test_star_fast_path_follows_rule_changes(void **state)
{
	struct fc_env *env = *state;

	FC_REQUIRE_BPF();
	fc_env_policy(env, 1, "ip=*", "1/m", "burst=100");
	assert_int_equal(fc_udp(env, false, "198.18.0.30", 5), 5);
	fc_env_ban(env, "198.18.0.30", 0);
	assert_int_equal(fc_udp(env, false, "198.18.0.30", 3), 0);
	fc_env_unban(env, "198.18.0.30");
	assert_int_equal(fc_udp(env, true, "198.18.0.30", 3), 3);
	fc_env_ban(env, "198.18.0.0/24", 0);
	assert_int_equal(fc_udp(env, true, "198.18.0.30", 3), 0);
	fc_env_unban(env, "198.18.0.0/24");
	assert_int_equal(fc_udp(env, false, "198.18.0.30", 3), 3);
	fc_env_policy(env, 2, "ip=198.18.0.30", "1/m", "burst=1");
	assert_int_equal(fc_udp(env, false, "198.18.0.30", 3), 1);
	fc_env_policy_del(env, 2);
	assert_int_equal(fc_udp(env, false, "198.18.0.30", 3), 3);
	/* A prefix policy, and a ban of a prefix shorter than /16 (fc_top4's
	 * folded rule), each published by what changed alone. */
	fc_env_policy(env, 3, "ip=198.18.0.0/20", "1/m", "burst=1");
	assert_int_equal(fc_udp(env, true, "198.18.0.30", 3), 1);
	fc_env_policy_del(env, 3);
	assert_int_equal(fc_udp(env, true, "198.18.0.30", 3), 3);
	fc_env_ban(env, "198.16.0.0/12", 0);
	assert_int_equal(fc_udp(env, false, "198.18.0.30", 3), 0);
	fc_env_unban(env, "198.16.0.0/12");
	assert_int_equal(fc_udp(env, false, "198.18.0.30", 3), 3);
	/* The ip=* bucket kept counting through all of it: 5+3+3+1+3+1+3+3 of 100. */
	assert_int_equal(fc_env_pstats(env, 1).passed.packets, 22);
}

/* A source's new bucket notes nothing, for good: the next publish (a ban
 * of that very source) does not make its empty note true. */
static void fc_star_new_then_ban_body(struct fc_env *env, bool tc, uint32_t id)
{
	const char *src = tc ? "198.18.0.41" : "198.18.0.40", *src6 = tc ? "2001:2:0:71::1" : "2001:2:0:70::1";

	fc_env_policy(env, id, "ip=*", "1/m", "burst=100");
	assert_int_equal(fc_udp(env, tc, src, 1), 1);
	assert_int_equal(fc_udp(env, tc, src6, 1), 1);
	fc_env_ban(env, src, 0);
	assert_int_equal(fc_udp(env, tc, src, 3), 0);
	fc_env_ban(env, src6, 0);
	assert_int_equal(fc_udp(env, tc, src6, 3), 0);
	fc_env_policy_del(env, id);
}

static void test_star_new_then_ban(void **state)
{
	fc_both(state, fc_star_new_then_ban_body);
}

/* A flood of new sources: past the per-CPU cap they share the overflow
 * bucket (limited like any source), and a steady source keeps its bucket. */
static void test_flood_of_sources(void **state)
{
	struct fc_env *env = *state;
	struct fc_src_bucket b;
	struct fc_prefix p;
	struct fc_err err;
	cpu_set_t one;
	char src[32];
	int i, passed = 0, ncpus = libbpf_num_possible_cpus();

	FC_REQUIRE_BPF();
	CPU_ZERO(&one);
	CPU_SET(0, &one);
	assert_int_equal(sched_setaffinity(0, sizeof(one), &one), 0); /* one per-CPU limiter */
	/* 5 new buckets per CPU per second, 5 at once. */
	snprintf(src, sizeof(src), "new_sources=%d burst=2", 5 * ncpus);
	fc_env_policy(env, 1, "ip=*", "1/m", src);
	assert_int_equal(fc_udp(env, false, "198.18.0.1", 1), 1); /* the steady source */
	for (i = 0; i < 1000; i++) {
		snprintf(src, sizeof(src), "198.19.%d.%d", i / 250, i % 250 + 1);
		passed += fc_udp(env, false, src, 1);
	}
	/* 4 more own buckets (1 frame each), then the overflow bucket's burst of 2. */
	assert_int_equal(passed, 4 + 2);
	assert_int_equal(fc_stats_now(env).src_overflow.packets, 996);
	assert_int_equal(fc_prefix_parse("198.18.0.1", &p, &err), 0);
	assert_int_equal(bpf_map_lookup_elem(env->maps.src4, p.a, &b), 0);
	assert_int_equal(fc_udp(env, false, "198.18.0.1", 3), 1); /* its own state: 1 left of burst 2 */
	CPU_ZERO(&one);
	for (i = 0; i < ncpus; i++)
		CPU_SET(i, &one);
	sched_setaffinity(0, sizeof(one), &one);
}

/* --new-sources counts units: 50 addresses of one /64 make one bucket,
 * 50 /64s as many as the cap allows. */
static void test_new_sources_in_units(void **state)
{
	struct fc_env *env = *state;
	cpu_set_t one;
	char opts[64];
	int i, ncpus = libbpf_num_possible_cpus();

	FC_REQUIRE_BPF();
	CPU_ZERO(&one);
	CPU_SET(0, &one);
	assert_int_equal(sched_setaffinity(0, sizeof(one), &one), 0); /* one per-CPU limiter */
	snprintf(opts, sizeof(opts), "new_sources=%d burst=2", 5 * ncpus); /* 5 a second, 5 at once */
	fc_env_policy(env, 1, "ip=*", "1/m", opts);
	/* One /64: one new bucket, its burst of 2. */
	assert_int_equal(fc_udp_each(env, false, "2001:2:0:60:%x::%x", 50), 2);
	assert_int_equal(fc_stats_now(env).src_overflow.packets, 0);
	/* 50 /64s: 4 more buckets (a frame each), then the overflow bucket's 2. */
	assert_int_equal(fc_udp_each(env, false, "2001:2:0:%x61::%x", 50), 4 + 2);
	assert_int_equal(fc_stats_now(env).src_overflow.packets, 46);
	CPU_ZERO(&one);
	for (i = 0; i < ncpus; i++)
		CPU_SET(i, &one);
	sched_setaffinity(0, sizeof(one), &one);
}

/* A full table (128 entries here) evicts the least recently used sources:
 * never an error, every new source still limited by a bucket of its own. */
static void test_table_full(void **state)
{
	struct fc_env *env = *state;
	struct fc_addr6 key, next;
	char src[32];
	int i, passed = 0, entries = 0;

	FC_REQUIRE_BPF();
	fc_env_policy(env, 1, "ip=*", "1/m", "burst=1 new_sources=100000000");
	for (i = 0; i < 1000; i++) {
		snprintf(src, sizeof(src), "2001:2:0:%x::1", i + 1); /* a /64 each: a unit each */
		passed += fc_udp(env, i % 2, src, 2);
	}
	assert_int_equal(passed, 1000); /* one each: its own fresh bucket, burst 1 */
	assert_int_equal(fc_stats_now(env).src_overflow.packets, 0);
	for (int rc = bpf_map_get_next_key(env->maps.src6, NULL, &key); !rc;
	     rc = bpf_map_get_next_key(env->maps.src6, &key, &next), key = next)
		entries++;
	assert_true(entries <= 128);
	assert_true(entries > 0);
}

/* Threads on different CPUs race on one source: admitted == limit, exactly. */
struct fc_racer {
	struct fc_env *env;
	int cpu;
	bool tc;
	int passed;
};

static void *fc_race(void *arg)
{
	struct fc_racer *r = arg;
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(r->cpu, &set);
	pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
	r->passed = fc_udp(r->env, r->tc, "198.18.0.77", 6000);
	return NULL;
}

/* rates and opts on one address, raced from every CPU: exactly want pass. */
static void fc_exact_race(struct fc_env *env, const char *rates, const char *opts, uint32_t id, int want)
{
	int ncpus = libbpf_num_possible_cpus(), i, total = 0, n = ncpus < 2 ? 2 : ncpus > 8 ? 8 : ncpus;
	struct fc_racer r[8];
	pthread_t th[8];

	fc_away_from_minute_edge(20);
	fc_env_policy(env, id, "ip=198.18.0.77", rates, opts);
	for (i = 0; i < n; i++) {
		r[i] = (struct fc_racer){ .env = env, .cpu = i % ncpus, .tc = i % 2 };
		assert_int_equal(pthread_create(&th[i], NULL, fc_race, &r[i]), 0);
	}
	for (i = 0; i < n; i++) {
		pthread_join(th[i], NULL);
		total += r[i].passed;
	}
	assert_int_equal(total, want);
	assert_int_equal(fc_env_pstats(env, id).passed.packets, (uint64_t)want);
	fc_env_policy_del(env, id);
}

static void test_exact_under_race(void **state)
{
	FC_REQUIRE_BPF();
	fc_exact_race(*state, "5000/h", "algo=window", 1, 5000);
	fc_exact_race(*state, "5000/h", "", 2, 5000);
	/* A cold warming bucket: one, the ramp's first interval (3 x 86.4 s)
	 * far longer than the race. */
	fc_exact_race(*state, "1000/d", "warmup=1h", 3, 1);
}

/* The policies array is read back only when the policies changed (its
 * digest in fc_config); a publish cut short after it cleared the digest is
 * redone whole by the next. */
static void test_policy_digest(void **state)
{
	struct fc_env *env = *state;
	struct fc_policy_row row;
	struct fc_policy good, bad, now;
	struct fc_config cfg;
	struct fc_err err;
	bool found;

	FC_REQUIRE_BPF();
	fc_env_policy(env, 7, "ip=198.18.0.0/24", "5/s", "");
	assert_int_equal(fc_store_policy_get(env->st, 7, &row, &found, &err), 0);
	assert_true(found);
	assert_int_equal(bpf_map_lookup_elem(env->maps.policies, &row.slot, &good), 0);
	assert_int_equal(fc_config_read(&env->maps, &cfg, &err), 0);
	assert_int_not_equal(cfg.policies_digest, 0);
	bad = good;
	bad.tier[0].interval_ns *= 2;

	/* Nothing changed, digest intact: the array is not even read. */
	assert_int_equal(bpf_map_update_elem(env->maps.policies, &row.slot, &bad, BPF_ANY), 0);
	fc_env_sync(env);
	assert_int_equal(bpf_map_lookup_elem(env->maps.policies, &row.slot, &now), 0);
	assert_memory_equal(&now, &bad, sizeof(now));

	/* As a publish cut short leaves it: the digest cleared, a slot half done. */
	cfg.policies_digest = 0;
	assert_int_equal(fc_config_write(&env->maps, &cfg, &err), 0);
	fc_env_sync(env);
	assert_int_equal(bpf_map_lookup_elem(env->maps.policies, &row.slot, &now), 0);
	assert_memory_equal(&now, &good, sizeof(now));
	assert_int_equal(fc_config_read(&env->maps, &cfg, &err), 0);
	assert_int_not_equal(cfg.policies_digest, 0);
}

/* A publish writes only what changed since the change the maps are marked
 * with: what is in the maps and not in the store stays (nothing walks the
 * maps), until freqctl sync. A publish cut short (it cleared the mark and
 * wrote part of a change) is redone whole by the next one. */
static void test_publish_marks(void **state)
{
	struct fc_env *env = *state;
	struct fc_frame_spec spec = { "198.18.0.7", IPPROTO_UDP };
	uint8_t k[4] = { 198, 18, 0, 9 }, frame[FC_FRAME_MAX];
	struct fc_rule r = { .flags = FC_RULE_BANNED };
	struct fc_store_log log;
	struct fc_config cfg;
	struct fc_err err;
	size_t len;

	FC_REQUIRE_BPF();
	fc_env_ban(env, "198.18.0.7", 0);
	assert_int_equal(fc_config_read(&env->maps, &cfg, &err), 0);
	assert_int_equal(fc_store_log_head(env->st, &log, &err), 0);
	assert_int_equal(cfg.store_id, log.id);
	assert_int_equal(cfg.store_seq, log.head);

	/* A stray entry, under an intact mark: a publish of another change
	 * leaves it (it never looked), sync removes it. */
	assert_int_equal(bpf_map_update_elem(env->maps.exact4, k, &r, BPF_ANY), 0);
	assert_int_equal(fc_store_ban_put(env->st, &(struct fc_ban_row){ .p = { 4, 32, { 198, 18, 0, 8 } } }, &err), 0);
	assert_true(fc_env_publish_changes(env));
	assert_int_equal(bpf_map_lookup_elem(env->maps.exact4, k, &r), 0);
	assert_int_equal(bpf_map_lookup_elem(env->maps.exact4, (uint8_t[4]){ 198, 18, 0, 8 }, &r), 0);
	fc_env_sync(env);
	assert_int_not_equal(bpf_map_lookup_elem(env->maps.exact4, k, &r), 0);

	/* Another publisher, cut short: it cleared the mark, then wrote a ban. */
	assert_int_equal(fc_config_read(&env->maps, &cfg, &err), 0);
	cfg.store_seq = 0;
	assert_int_equal(fc_config_write(&env->maps, &cfg, &err), 0);
	r.flags = FC_RULE_BANNED;
	assert_int_equal(bpf_map_update_elem(env->maps.exact4, k, &r, BPF_ANY), 0);
	fc_env_ban(env, "198.18.0.10", 0); /* a publish: everything, as nothing is known */
	assert_int_not_equal(bpf_map_lookup_elem(env->maps.exact4, k, &r), 0);
	assert_int_equal(fc_config_read(&env->maps, &cfg, &err), 0);
	assert_int_equal(fc_store_log_head(env->st, &log, &err), 0);
	assert_int_equal(cfg.store_seq, log.head);

	/* Marked by another store: everything too. */
	cfg.store_id ^= 1;
	assert_int_equal(fc_config_write(&env->maps, &cfg, &err), 0);
	r.flags = FC_RULE_BANNED;
	assert_int_equal(bpf_map_update_elem(env->maps.exact4, k, &r, BPF_ANY), 0);
	fc_env_unban(env, "198.18.0.10");
	assert_int_not_equal(bpf_map_lookup_elem(env->maps.exact4, k, &r), 0);
	len = fc_frame_build(&spec, frame);
	assert_int_equal(fc_env_run(env, false, frame, len), XDP_DROP); /* the store's ban stayed */
}

/* The entry fc_exact4 holds for the IPv4 address text. */
static struct fc_rule fc_exact4_rule(struct fc_env *env, const char *text)
{
	struct fc_rule r = { 0 };
	uint8_t k[4];

	assert_int_equal(inet_pton(AF_INET, text, k), 1);
	assert_int_equal(bpf_map_lookup_elem(env->maps.exact4, k, &r), 0);
	return r;
}

/* The policy slot fc_pfx4's entry of text/len names. */
static __u32 fc_pfx4_policy(struct fc_env *env, const char *text, __u32 len)
{
	struct fc_pfx4_key k = { .prefixlen = len };
	struct fc_rule r = { 0 };

	assert_int_equal(inet_pton(AF_INET, text, k.a), 1);
	assert_int_equal(bpf_map_lookup_elem(env->maps.pfx4, &k, &r), 0);
	return r.policy;
}

/* Whether the address text's entry carries its prefix answer, and which. */
static void fc_assert_carry(struct fc_env *env, const char *text, bool carried, __u32 slot)
{
	struct fc_rule r = fc_exact4_rule(env, text);

	assert_int_equal(!!(r.flags & FC_RULE_CARRY), carried);
	if (carried)
		assert_int_equal(r.carry_policy, slot);
}

/*
 * An address with a policy inside prefixes with policies (a /16, a /24):
 * its fc_exact4 entry carries the longest one's policy, the program takes
 * it from there (a carry changed by hand is obeyed) and charges both; and
 * after each publish that changes what covers it (the prefix's policy
 * removed, a longer one added, a ban, a lapsing ban, an allow entry) the
 * next frame sees exactly the new rules: a carry left as it was would
 * charge a freed slot, the wrong bucket, or pass a banned source.
 */
static void fc_carry_body(struct fc_env *env, bool star)
{
	const char *src = "198.18.0.7";
	struct fc_ban_row other = { .created = (int64_t)time(NULL) };
	struct fc_rule r;
	struct fc_err err;
	uint64_t wide;
	uint8_t k[4];

	fc_env_policy(env, 1, "ip=198.18.0.7", "1/m", "burst=1000");
	fc_env_policy(env, 4, "ip=198.18.0.0/16", "1/m", "burst=1000");
	fc_env_policy(env, 2, "ip=198.18.0.0/24", "1/m", "burst=2");
	if (star)
		fc_env_policy(env, 9, "ip=*", "1/m", "burst=1000");
	fc_assert_carry(env, src, true, fc_pfx4_policy(env, "198.18.0.0", 24));
	assert_int_equal(fc_udp(env, false, src, 2) + fc_udp(env, true, src, 1), 2);
	assert_int_equal(fc_env_pstats(env, 1).passed.packets, 2); /* both charged, or neither */
	assert_int_equal(fc_env_pstats(env, 2).dropped.packets, 1);
	/* An address given a policy where the prefixes stay carries theirs too
	 * (read from the maps as they are). */
	fc_env_policy(env, 3, "ip=198.18.0.9", "1/m", "burst=1000");
	fc_assert_carry(env, "198.18.0.9", true, fc_pfx4_policy(env, "198.18.0.0", 24));

	/* What the entry carries is what the program charges: the /16's policy
	 * by hand here, made known by a publish of something else (which
	 * voids what an ip=* bucket noted of the source). */
	r = fc_exact4_rule(env, src);
	r.carry_policy = fc_pfx4_policy(env, "198.18.0.0", 16);
	assert_int_equal(inet_pton(AF_INET, src, k), 1);
	assert_int_equal(bpf_map_update_elem(env->maps.exact4, k, &r, BPF_EXIST), 0);
	assert_int_equal(fc_prefix_parse("203.0.113.1", &other.p, &err), 0);
	assert_int_equal(fc_store_ban_put(env->st, &other, &err), 0);
	fc_env_publish_changes(env);
	assert_int_equal(fc_udp(env, false, src, 3), 3);
	fc_env_sync(env);
	assert_int_equal(fc_udp(env, true, src, 1), 0); /* the /24's bucket again */

	/* The /24's policy removed: the /16's applies. */
	fc_env_policy_del(env, 2);
	fc_assert_carry(env, src, true, fc_pfx4_policy(env, "198.18.0.0", 16));
	wide = fc_env_pstats(env, 4).passed.packets;
	assert_int_equal(fc_udp(env, false, src, 3), 3);
	assert_int_equal(fc_env_pstats(env, 4).passed.packets, wide + 3);

	/* A longer prefix's policy (of /25 to /31) added: it applies. */
	fc_env_policy(env, 5, "ip=198.18.0.0/26", "1/m", "burst=1");
	fc_assert_carry(env, src, true, fc_pfx4_policy(env, "198.18.0.0", 26));
	assert_int_equal(fc_udp(env, true, src, 3), 1);
	fc_env_policy(env, 6, "ip=198.18.0.10", "1/m", "burst=1000");
	fc_assert_carry(env, "198.18.0.10", true, fc_pfx4_policy(env, "198.18.0.0", 26));

	/* Banned, for good and for an hour: dropped, and nothing carried. */
	fc_env_ban(env, "198.18.0.0/26", 0);
	fc_assert_carry(env, src, false, 0);
	assert_int_equal(fc_udp(env, false, src, 2), 0);
	fc_env_policy(env, 7, "ip=198.18.0.11", "1/m", "burst=1000");
	fc_assert_carry(env, "198.18.0.11", false, 0);
	assert_int_equal(fc_udp(env, true, "198.18.0.11", 2), 0);
	fc_env_unban(env, "198.18.0.0/26");
	fc_assert_carry(env, src, true, fc_pfx4_policy(env, "198.18.0.0", 26));
	fc_env_ban(env, "198.18.0.0/20", 3600);
	fc_assert_carry(env, src, false, 0);
	assert_int_equal(fc_udp(env, true, src, 2), 0);
	fc_env_unban(env, "198.18.0.0/20");
	assert_int_equal(fc_udp(env, true, src, 2), 0); /* the /26's bucket, empty */

	/* Allowed: every frame passes, nothing carried; then limited again. */
	fc_env_allow(env, "198.18.0.0/24", 0);
	fc_assert_carry(env, src, false, 0);
	assert_int_equal(fc_udp(env, false, src, 3), 3);
	fc_env_unallow(env, "198.18.0.0/24");
	fc_assert_carry(env, src, true, fc_pfx4_policy(env, "198.18.0.0", 26));
	assert_int_equal(fc_udp(env, false, src, 2), 0);
	assert_int_equal(fc_stats_now(env).drop_prefix.packets, 6);
}

static void test_carry(void **state)
{
	FC_REQUIRE_BPF();
	fc_carry_body(*state, false);
}

/* The same under ip=* counting packets: three policies met. */
static void test_carry_star(void **state)
{
	FC_REQUIRE_BPF();
	fc_carry_body(*state, true);
}

/* Review probe: carries across /16s, sets, a policy's match moved. */
static void test_carry_probe(void **state)
{
	struct fc_env *env = *state;
	static const char *const set1[] = { "198.18.1.0/24" };
	struct fc_rule r;

	FC_REQUIRE_BPF();
	fc_env_policy(env, 1, "ip=198.19.5.5", "1/m", "burst=1000");
	fc_env_policy(env, 2, "ip=198.18.1.1", "1/m", "burst=1000");
	/* A /15 across both /16s. */
	fc_env_policy(env, 3, "ip=198.18.0.0/15", "1/m", "burst=1000");
	fc_assert_carry(env, "198.19.5.5", true, fc_pfx4_policy(env, "198.18.0.0", 15));
	fc_assert_carry(env, "198.18.1.1", true, fc_pfx4_policy(env, "198.18.0.0", 15));
	/* A /24 policy, then its match moved to another /24. */
	fc_env_policy(env, 4, "ip=198.18.1.0/24", "1/m", "burst=1000");
	fc_assert_carry(env, "198.18.1.1", true, fc_pfx4_policy(env, "198.18.1.0", 24));
	fc_env_policy(env, 4, "ip=198.18.2.0/24", "1/m", "burst=1000");
	fc_assert_carry(env, "198.18.1.1", true, fc_pfx4_policy(env, "198.18.0.0", 15));
	/* A ban set over it. */
	fc_env_set(env, "s", set1, 1, 0);
	fc_assert_carry(env, "198.18.1.1", false, 0);
	assert_int_equal(fc_udp(env, false, "198.18.1.1", 2), 0);
	fc_env_set(env, "s", NULL, 0, 0);
	fc_assert_carry(env, "198.18.1.1", true, fc_pfx4_policy(env, "198.18.0.0", 15));
	/* A set that lapses. */
	fc_env_set(env, "t", set1, 1, 2);
	fc_assert_carry(env, "198.18.1.1", false, 0);
	assert_int_equal(fc_udp(env, false, "198.18.1.1", 2), 0);
	sleep(3);
	fc_env_publish(env);
	r = fc_exact4_rule(env, "198.18.1.1");
	print_message("after lapse: flags %#x carry %u\n", r.flags, r.carry_policy);
	assert_int_equal(fc_udp(env, false, "198.18.1.1", 2), 2);
	/* The /15 removed. */
	fc_env_policy_del(env, 3);
	fc_assert_carry(env, "198.19.5.5", true, 0);
	fc_assert_carry(env, "198.18.1.1", true, 0);
	/* IPv6 entry with a policy under an IPv6 prefix policy: no carry bit. */
	fc_env_policy(env, 5, "ip=2001:2::5", "1/m", "burst=1000");
	fc_env_policy(env, 6, "ip=2001:2::/48", "1/m", "burst=1000");
	{
		uint8_t k6[16];
		assert_int_equal(inet_pton(AF_INET6, "2001:2::5", k6), 1);
		assert_int_equal(bpf_map_lookup_elem(env->maps.exact6, k6, &r), 0);
		assert_int_equal(r.flags & FC_RULE_CARRY, 0);
		assert_int_equal(r.allow_expires_ns, 0);
	}
}

/* Review probe: a publisher of another version (rules_gen moved, carry4_gen
 * not) writes a ban on the /24 over a carried address, by hand here: the
 * carried answer is no longer trusted, the ban applies. */
static void test_carry_gate(void **state)
{
	struct fc_env *env = *state;
	struct fc_pfx4_key k = { .prefixlen = 24 };
	struct fc_config cfg;
	struct fc_rule r;
	struct fc_err err;

	FC_REQUIRE_BPF();
	fc_env_policy(env, 1, "ip=198.18.0.7", "1/m", "burst=1000");
	fc_env_policy(env, 2, "ip=198.18.0.0/24", "1/m", "burst=1000");
	fc_assert_carry(env, "198.18.0.7", true, fc_pfx4_policy(env, "198.18.0.0", 24));
	assert_int_equal(inet_pton(AF_INET, "198.18.0.0", k.a), 1);
	assert_int_equal(bpf_map_lookup_elem(env->maps.pfx4, &k, &r), 0);
	r.flags |= FC_RULE_BANNED;
	r.ban_expires_ns = 0;
	assert_int_equal(bpf_map_update_elem(env->maps.pfx4, &k, &r, BPF_EXIST), 0);
	assert_int_equal(fc_config_read(&env->maps, &cfg, &err), 0);
	cfg.rules_gen++;
	assert_int_equal(fc_config_write(&env->maps, &cfg, &err), 0);
	assert_int_equal(fc_udp(env, false, "198.18.0.7", 2), 0);
}

/* Review probe: at every write of a publish that allows a carried address
 * for an hour, its entry, once allowed, is allowed until the allow's end. */
struct fc_allow_watch {
	struct fc_env *env;
	uint64_t min_expires, seen;
};

static void fc_allow_watch_stop(const char *what, void *arg)
{
	struct fc_allow_watch *w = arg;
	uint8_t k[4] = { 198, 18, 0, 7 };
	struct fc_rule r;

	(void)what;
	if (bpf_map_lookup_elem(w->env->maps.exact4, k, &r) == 0 && (r.flags & FC_RULE_ALLOWED)) {
		w->seen++;
		if (!w->min_expires || r.allow_expires_ns < w->min_expires)
			w->min_expires = r.allow_expires_ns;
	}
}

static void test_carry_allow_union(void **state)
{
	struct fc_env *env = *state;
	struct fc_allow_watch w = { .env = env };
	struct fc_rule r;

	FC_REQUIRE_BPF();
	fc_env_policy(env, 1, "ip=198.18.0.7", "1/m", "burst=1000");
	fc_env_policy(env, 2, "ip=198.18.0.0/24", "1/m", "burst=1000");
	fc_assert_carry(env, "198.18.0.7", true, fc_pfx4_policy(env, "198.18.0.0", 24));
	fc_step_set(fc_allow_watch_stop, &w);
	fc_env_allow(env, "198.18.0.7", 3600);
	fc_step_set(NULL, NULL);
	r = fc_exact4_rule(env, "198.18.0.7");
	print_message("final allow_expires_ns %llu, least seen mid-publish %llu (%llu stops allowed), short by %lld ns\n",
		      (unsigned long long)r.allow_expires_ns, (unsigned long long)w.min_expires,
		      (unsigned long long)w.seen, (long long)(r.allow_expires_ns - w.min_expires));
	assert_int_equal(w.min_expires, r.allow_expires_ns);
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, fc_env_setup, fc_env_teardown)
	const struct CMUnitTest tests[] = {
		T(test_gcra),
		T(test_window_and_v6_cidr),
		T(test_sliding_vectors),
		T(test_warm_vectors),
		T(test_sliding_bytes),
		T(test_cidr_one_bucket),
		T(test_star_per_source),
		T(test_star_unit6),
		T(test_star_unit4),
		T(test_star_unit_rules),
		T(test_syn),
		T(test_bytes),
		T(test_log),
		T(test_edits),
		T(test_all_or_nothing),
		T(test_override),
		T(test_pairs),
		T(test_pairs_warming),
		T(test_inheritance),
		T(test_star_fast_path_follows_rule_changes),
		T(test_star_new_then_ban),
		T(test_flood_of_sources),
		T(test_new_sources_in_units),
		cmocka_unit_test_setup_teardown(test_table_full, fc_env_setup_small_lru, fc_env_teardown),
		T(test_exact_under_race),
		T(test_policy_digest),
		T(test_publish_marks),
		T(test_carry),
		T(test_carry_star),
		T(test_carry_probe),
		T(test_carry_gate),
		T(test_carry_allow_union),
	};

	return fc_run_group("policies in the bpf programs (BPF_PROG_TEST_RUN)", tests, NULL, NULL);
}
