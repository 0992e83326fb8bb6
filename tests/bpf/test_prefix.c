// SPDX-License-Identifier: BSD-2-Clause
/*
 * Prefixes on the real programs under BPF_PROG_TEST_RUN: nested policies of
 * every length, IPv4 (/1 to /32) and IPv6 (/1 to /128), the longest match
 * charged; a covering ban dropping whatever longer entry matches; bans and
 * policies inherited from covering prefixes, and updated when a covering
 * prefix comes and goes; /0 refused for a ban; v4-mapped sources as IPv4;
 * and random sets of prefixes of every length (bans, policies, allow
 * entries), changed and republished,
 * against a reference computed here, through XDP and TC.
 */
#include <arpa/inet.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>
#include <linux/bpf.h>
#include <linux/in.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf.h>

#include "fc_prefix.h"
#include "fc_sync.h"
#include "fc_test.h"
#include "fc_test_bpf.h"

/* A rate no test exhausts: every charge is counted as passed. */
#define FC_T_RATE "1000000/s"

enum fc_verdict { FC_V_PASS, FC_V_DROP_EXACT, FC_V_DROP_PREFIX, FC_V_DROP_LIMIT, FC_V_ALLOWED };

/* Sends one UDP frame from src through XDP or TC; returns what happened,
 * by the counter it landed in. */
static enum fc_verdict fc_send(struct fc_env *env, bool tc, const char *src)
{
	struct fc_frame_spec spec = { .src = src, .l4proto = IPPROTO_UDP, .payload = 8 };
	uint8_t frame[FC_FRAME_MAX];
	struct fc_stats a, b;
	struct fc_err err;
	size_t len = fc_frame_build(&spec, frame);
	int rc;

	assert_true(len > 0);
	if (fc_stats_read(&env->maps, &a, &err) < 0)
		fail_msg("%s", err.msg);
	rc = fc_env_run(env, tc, frame, len);
	if (fc_stats_read(&env->maps, &b, &err) < 0)
		fail_msg("%s", err.msg);
	if (rc == (tc ? TC_ACT_OK : XDP_PASS)) {
		if (b.allowed.packets > a.allowed.packets)
			return FC_V_ALLOWED;
		assert_int_equal(b.passed.packets, a.passed.packets + 1);
		return FC_V_PASS;
	}
	assert_int_equal(rc, tc ? TC_ACT_SHOT : XDP_DROP);
	if (b.drop_exact.packets > a.drop_exact.packets)
		return FC_V_DROP_EXACT;
	if (b.drop_prefix.packets > a.drop_prefix.packets)
		return FC_V_DROP_PREFIX;
	assert_int_equal(b.drop_limit.packets, a.drop_limit.packets + 1);
	return FC_V_DROP_LIMIT;
}

/* Stores a policy on p (id) without publishing. */
static void fc_put_policy(struct fc_env *env, uint32_t id, const struct fc_prefix *p)
{
	struct fc_policy_spec spec = { .id = id };
	struct fc_policy_row row;
	char match[FC_PREFIX_STRLEN + 4], buf[FC_PREFIX_STRLEN];
	struct fc_err err;

	fc_prefix_format(p, buf);
	snprintf(match, sizeof(match), "ip=%s", buf);
	if (fc_match_parse(match, &spec, &err) < 0 || fc_rates_parse(FC_T_RATE, &spec, &err) < 0 ||
	    fc_policy_validate(&spec, &err) < 0 || fc_store_policy_put(env->st, &spec, (int64_t)time(NULL), &row, &err) < 0)
		fail_msg("policy %u on %s: %s", id, buf, err.msg);
}

static void fc_put_ban(struct fc_env *env, const struct fc_prefix *p)
{
	struct fc_ban_row row = { .p = *p, .created = (int64_t)time(NULL) };
	struct fc_err err;

	if (fc_store_ban_put(env->st, &row, &err) < 0)
		fail_msg("%s", err.msg);
}

static void fc_put_allow(struct fc_env *env, const struct fc_prefix *p)
{
	struct fc_allow_row row = { .p = *p, .created = (int64_t)time(NULL) };
	struct fc_err err;
	bool existed;

	if (fc_store_allow_put(env->st, &row, row.created, &existed, &err) < 0)
		fail_msg("%s", err.msg);
}

static uint64_t fc_passed(struct fc_env *env, uint32_t id)
{
	return fc_env_pstats(env, id).passed.packets;
}

/* bits (4 or 16 bytes) of x with bit i (0 = the first) flipped. */
static void fc_flip(uint8_t *a, unsigned i)
{
	a[i / 8] ^= (uint8_t)(0x80 >> (i % 8));
}

static void fc_text(uint8_t family, const uint8_t *a, char *out)
{
	struct fc_prefix p = { .family = family, .len = (uint8_t)(family == 4 ? 32 : 128) };

	memcpy(p.a, a, family == 4 ? 4 : 16);
	fc_prefix_format(&p, out);
}

/*
 * Policies on X/1 to X/max, id = length, and on the family's /0 (id 1000):
 * a source that agrees with X on its first L bits and differs at the next is
 * charged to policy L alone; X itself to its exact policy and to /max-1 (an
 * exact address meets the policy of its address and of its longest prefix).
 * Then a ban on each X/L in turn drops a source deeper than every policy.
 */
static void fc_every_length(struct fc_env *env, const char *x)
{
	uint64_t want[129] = { 0 };
	struct fc_prefix px, p;
	struct fc_err err;
	char src[FC_PREFIX_STRLEN];
	unsigned max, len, other;
	uint8_t a[16];

	assert_int_equal(fc_prefix_parse(x, &px, &err), 0);
	max = px.family == 4 ? 32 : 128;
	for (len = 0; len <= max; len++) {
		p = px;
		p.len = (uint8_t)len;
		fc_prefix_mask(p.a, max / 8, len);
		fc_put_policy(env, len ? len : 1000, &p);
	}
	fc_env_publish(env);
	for (len = 0; len <= max; len++) {
		memcpy(a, px.a, sizeof(a));
		if (len < max)
			fc_flip(a, len);
		fc_text(px.family, a, src);
		assert_int_equal(fc_send(env, len % 2, src), FC_V_PASS);
		want[len]++;
		if (len == max)
			want[max - 1]++;
		for (other = 0; other <= max; other++)
			if (fc_passed(env, other ? other : 1000) != want[other])
				fail_msg("source %s (%s's first %u bits): policy /%u charged %llu times, expected %llu", src,
					 x, len, other, (unsigned long long)fc_passed(env, other ? other : 1000),
					 (unsigned long long)want[other]);
	}
	/* A ban on any X/L (L >= 1; /0 is refused) drops X, the deepest source,
	 * however many longer policy prefixes match it. */
	for (len = 1; len < max; len++) {
		p = px;
		p.len = (uint8_t)len;
		fc_prefix_mask(p.a, max / 8, len);
		fc_put_ban(env, &p);
		fc_env_publish(env);
		if (fc_send(env, len % 2, x) != FC_V_DROP_PREFIX)
			fail_msg("%s under a ban on /%u: not dropped as prefix-banned", x, len);
		fc_prefix_format(&p, src);
		fc_env_unban(env, src);
		assert_int_equal(fc_send(env, len % 2, x), FC_V_PASS);
	}
}

static void test_v4_every_length(void **state)
{
	FC_REQUIRE_BPF();
	fc_every_length(*state, "198.18.170.85");
}

static void test_v6_every_length(void **state)
{
	FC_REQUIRE_BPF();
	fc_every_length(*state, "2001:db8:aaaa:5555:aaaa:5555:aaaa:5555");
}

/*
 * What a prefix inherits, and what changes when a covering prefix comes and
 * goes: a ban-only prefix inside a policy prefix, a policy inside a banned
 * prefix, the longer of two bans' lifetimes, the nearest covering policy.
 */
static void fc_inherit_body(struct fc_env *env, const char *outer, const char *mid, const char *inner,
			    const char *in_inner, const char *in_mid, const char *in_outer)
{
	struct fc_prefix p;
	struct fc_err err;

	assert_int_equal(fc_prefix_parse(outer, &p, &err), 0);
	fc_put_policy(env, 1, &p);
	fc_env_publish(env);
	assert_int_equal(fc_send(env, false, in_inner), FC_V_PASS);
	assert_int_equal(fc_passed(env, 1), 1);
	/* A ban-only prefix inside it: dropped; lifted: the outer policy again. */
	fc_env_ban(env, mid, 0);
	assert_int_equal(fc_send(env, true, in_inner), FC_V_DROP_PREFIX);
	assert_int_equal(fc_send(env, false, in_outer), FC_V_PASS);
	fc_env_unban(env, mid);
	assert_int_equal(fc_send(env, true, in_inner), FC_V_PASS);
	assert_int_equal(fc_passed(env, 1), 3);
	/* A policy on the inner prefix: the longest wins; in between, the outer. */
	assert_int_equal(fc_prefix_parse(inner, &p, &err), 0);
	fc_put_policy(env, 2, &p);
	fc_env_publish(env);
	assert_int_equal(fc_send(env, false, in_inner), FC_V_PASS);
	assert_int_equal(fc_send(env, true, in_mid), FC_V_PASS);
	assert_int_equal(fc_passed(env, 2), 1);
	assert_int_equal(fc_passed(env, 1), 4);
	/* A covering ban comes: everything under it drops, policies or not; it
	 * goes: each its own policy again. */
	fc_env_ban(env, outer, 0);
	assert_int_equal(fc_send(env, false, in_inner), FC_V_DROP_PREFIX);
	assert_int_equal(fc_send(env, true, in_mid), FC_V_DROP_PREFIX);
	fc_env_unban(env, outer);
	assert_int_equal(fc_send(env, false, in_inner), FC_V_PASS);
	assert_int_equal(fc_passed(env, 2), 2);
	/* The outer policy goes: the middle falls to nothing, the inner keeps its own. */
	fc_env_policy_del(env, 1);
	assert_int_equal(fc_send(env, true, in_mid), FC_V_PASS);
	assert_int_equal(fc_send(env, false, in_inner), FC_V_PASS);
	assert_int_equal(fc_passed(env, 2), 3);
	/* Bans of two lifetimes: the inner one lapses, the outer one's holds
	 * there too; the outer lapses, the inner's holds under it alone. */
	fc_env_ban(env, outer, 600);
	fc_env_ban(env, inner, 60);
	fc_env_clock(env, ((uint64_t)time(NULL) + 120) * 1000000000ULL);
	assert_int_equal(fc_send(env, false, in_inner), FC_V_DROP_PREFIX);
	fc_env_clock(env, ((uint64_t)time(NULL) + 1200) * 1000000000ULL);
	assert_int_equal(fc_send(env, true, in_inner), FC_V_PASS);
	fc_env_unban(env, outer);
	fc_env_unban(env, inner);
	fc_env_ban(env, outer, 60);
	fc_env_ban(env, inner, 600);
	fc_env_clock(env, ((uint64_t)time(NULL) + 120) * 1000000000ULL);
	assert_int_equal(fc_send(env, false, in_inner), FC_V_DROP_PREFIX);
	assert_int_equal(fc_send(env, true, in_mid), FC_V_PASS);
}

static void test_v4_inheritance(void **state)
{
	FC_REQUIRE_BPF();
	/* /12 over /20 over /28: the top4 rule, a /24-length, a /25-/31 length. */
	fc_inherit_body(*state, "198.16.0.0/12", "198.18.16.0/20", "198.18.20.16/28", "198.18.20.17",
			"198.18.20.200", "198.19.0.1");
}

static void test_v6_inheritance(void **state)
{
	FC_REQUIRE_BPF();
	fc_inherit_body(*state, "2001:db8::/32", "2001:db8:1::/48", "2001:db8:1:2::/64", "2001:db8:1:2::9",
			"2001:db8:1:3::9", "2001:db8:2::1");
}

/* A ban on /0 is refused with a message saying why; a policy on /0 is one
 * bucket for every source of its family. /32 and /128 are exact addresses. */
static void test_zero_and_exact(void **state)
{
	struct fc_env *env = *state;
	struct fc_prefix p;
	struct fc_err err;

	FC_REQUIRE_BPF();
	assert_int_equal(fc_prefix_parse("0.0.0.0/0", &p, &err), -1);
	assert_non_null(strstr(err.msg, "a /0 prefix would cover every IPv4 source; refused"));
	assert_int_equal(fc_prefix_parse("::/0", &p, &err), -1);
	assert_non_null(strstr(err.msg, "a /0 prefix would cover every IPv6 source; refused"));
	fc_env_policy(env, 1, "ip=0.0.0.0/0", "2/m", "burst=2");
	fc_env_policy(env, 2, "ip=::/0", "3/m", "burst=3");
	assert_int_equal(fc_send(env, false, "198.18.0.1"), FC_V_PASS);
	assert_int_equal(fc_send(env, true, "203.0.113.9"), FC_V_PASS);
	assert_int_equal(fc_send(env, false, "1.2.3.4"), FC_V_DROP_LIMIT);
	assert_int_equal(fc_send(env, false, "2001:db8::1"), FC_V_PASS);
	assert_int_equal(fc_send(env, true, "fd00::1"), FC_V_PASS);
	assert_int_equal(fc_send(env, false, "2001:db8::2"), FC_V_PASS);
	assert_int_equal(fc_send(env, true, "2001:db8::3"), FC_V_DROP_LIMIT);
	/* /32 and /128 go into the exact maps. */
	fc_env_ban(env, "198.51.100.7/32", 0);
	fc_env_ban(env, "2001:db8::7/128", 0);
	assert_int_equal(fc_send(env, false, "198.51.100.7"), FC_V_DROP_EXACT);
	assert_int_equal(fc_send(env, true, "2001:db8::7"), FC_V_DROP_EXACT);
	assert_int_equal(fc_send(env, false, "198.51.100.6"), FC_V_DROP_LIMIT);
}

/* An IPv6 packet from ::ffff:a.b.c.d is that IPv4 source, prefixes too. */
static void test_v4_mapped(void **state)
{
	struct fc_env *env = *state;

	FC_REQUIRE_BPF();
	fc_env_ban(env, "198.18.64.0/18", 0);
	fc_env_policy(env, 1, "ip=198.18.200.0/25", FC_T_RATE, "");
	assert_int_equal(fc_send(env, false, "::ffff:198.18.65.1"), FC_V_DROP_PREFIX);
	assert_int_equal(fc_send(env, true, "::ffff:198.18.200.1"), FC_V_PASS);
	assert_int_equal(fc_passed(env, 1), 1);
	assert_int_equal(fc_send(env, false, "::ffff:198.18.200.129"), FC_V_PASS);
	assert_int_equal(fc_passed(env, 1), 1);
}

/*
 * A publish of what changed rewrites only the /16s whose prefixes changed,
 * trusting fc_top4 to be what it last wrote; after a publish cut short (its
 * marks cleared), the next publishes everything and repairs every /16.
 */
static void test_top4_repaired(void **state)
{
	struct fc_env *env = *state;
	struct fc_top4 bad = { .rule = { .flags = FC_RULE_BANNED } }, got;
	struct fc_ban_row row = { .created = (int64_t)time(NULL) };
	struct fc_config cfg;
	struct fc_err err;
	__u32 idx = 203 << 8 | 0; /* 203.0.0.0/16 */

	FC_REQUIRE_BPF();
	fc_env_ban(env, "198.18.0.0/20", 0);
	assert_int_equal(bpf_map_update_elem(env->maps.top4, &idx, &bad, BPF_ANY), 0);
	assert_int_equal(fc_send(env, false, "203.0.113.1"), FC_V_DROP_PREFIX);
	assert_int_equal(fc_prefix_parse("198.18.64.0/20", &row.p, &err), 0); /* changes 198.18.0.0/16 only */
	assert_int_equal(fc_store_ban_put(env->st, &row, &err), 0);
	assert_true(fc_env_publish_changes(env));
	assert_int_equal(fc_send(env, false, "203.0.113.1"), FC_V_DROP_PREFIX);
	assert_int_equal(fc_send(env, false, "198.18.64.1"), FC_V_DROP_PREFIX);
	assert_int_equal(fc_config_read(&env->maps, &cfg, &err), 0);
	cfg.store_seq = 0;
	assert_int_equal(fc_config_write(&env->maps, &cfg, &err), 0);
	fc_env_publish_changes(env); /* the maps: everything (the shm: what changed) */
	assert_int_equal(bpf_map_lookup_elem(env->maps.top4, &idx, &got), 0);
	assert_int_equal(got.rule.flags, 0);
	assert_int_equal(fc_send(env, true, "203.0.113.1"), FC_V_PASS);
	assert_int_equal(fc_send(env, true, "198.18.64.1"), FC_V_DROP_PREFIX);
}

/* The fc_top4 entry (*t, at *idx) of the IPv4 address text, and its /24 (*i24). */
static void fc_top4_of(struct fc_env *env, const char *text, struct fc_top4 *t, __u32 *idx, uint8_t *i24)
{
	struct fc_prefix p;
	struct fc_err err;

	assert_int_equal(fc_prefix_parse(text, &p, &err), 0);
	*idx = (__u32)p.a[0] << 8 | p.a[1];
	*i24 = p.a[2];
	assert_int_equal(bpf_map_lookup_elem(env->maps.top4, idx, t), 0);
}

/* The in24 byte of the /24 of the IPv4 address text. */
static uint8_t fc_in24(struct fc_env *env, const char *text)
{
	struct fc_top4 t;
	uint8_t i24;
	__u32 idx;

	fc_top4_of(env, text, &t, &idx, &i24);
	return t.in24[i24];
}

/* Writes the FC_IN24_EXACT bit of the /24 of text by hand. */
static void fc_in24_put(struct fc_env *env, const char *text, bool on)
{
	struct fc_top4 t;
	uint8_t i24;
	__u32 idx;

	fc_top4_of(env, text, &t, &idx, &i24);
	t.in24[i24] = (uint8_t)(on ? t.in24[i24] | FC_IN24_EXACT : t.in24[i24] & ~FC_IN24_EXACT);
	assert_int_equal(bpf_map_update_elem(env->maps.top4, &idx, &t, BPF_ANY), 0);
}

static struct fc_config fc_cfg(struct fc_env *env)
{
	struct fc_config cfg;
	struct fc_err err;

	assert_int_equal(fc_config_read(&env->maps, &cfg, &err), 0);
	return cfg;
}

/*
 * A /24's FC_IN24_EXACT bit: set while fc_exact4 holds an address there (a
 * ban, a policy, an allow entry), in a /16 without prefixes too, and only
 * then; the packet path looks fc_exact4 up only under it, and everywhere
 * while fc_config.exact4_gen says the bits are not kept (pins an earlier
 * version published), whose next publish is a full one.
 */
static void test_exact_bits(void **state)
{
	struct fc_env *env = *state;
	struct fc_config cfg;
	struct fc_err err;
	__u32 gen;

	FC_REQUIRE_BPF();
	fc_env_ban(env, "198.18.5.7", 0);
	cfg = fc_cfg(env);
	assert_int_equal(cfg.n_pfx4, 0);
	assert_int_equal(cfg.n_top4, 1); /* 198.18.0.0/16, for its exact address alone */
	assert_int_equal(cfg.exact4_gen, cfg.rules_gen);
	assert_int_equal(fc_in24(env, "198.18.5.0"), FC_IN24_EXACT);
	assert_int_equal(fc_in24(env, "198.18.6.0"), 0);
	assert_int_equal(fc_send(env, false, "198.18.5.7"), FC_V_DROP_EXACT);
	assert_int_equal(fc_send(env, true, "198.18.5.7"), FC_V_DROP_EXACT);
	assert_int_equal(fc_send(env, false, "::ffff:198.18.5.7"), FC_V_DROP_EXACT);
	assert_int_equal(fc_send(env, false, "198.18.5.8"), FC_V_PASS);
	assert_int_equal(fc_send(env, true, "198.18.6.7"), FC_V_PASS);

	/* Added under a bit already set; the bit stays while one is left. */
	fc_env_ban(env, "198.18.5.200", 0);
	assert_int_equal(fc_send(env, false, "198.18.5.200"), FC_V_DROP_EXACT);
	fc_env_unban(env, "198.18.5.7");
	assert_int_equal(fc_in24(env, "198.18.5.0"), FC_IN24_EXACT);
	assert_int_equal(fc_send(env, true, "198.18.5.7"), FC_V_PASS);
	assert_int_equal(fc_send(env, true, "198.18.5.200"), FC_V_DROP_EXACT);
	fc_env_unban(env, "198.18.5.200");
	assert_int_equal(fc_in24(env, "198.18.5.0"), 0);
	assert_int_equal(fc_cfg(env).n_top4, 0);
	assert_int_equal(fc_send(env, false, "198.18.5.200"), FC_V_PASS);

	/* A policy on an address and an allow entry are entries too; beside
	 * a prefix of the same /24 the byte holds both. */
	fc_env_policy(env, 1, "ip=198.18.7.1", FC_T_RATE, "");
	fc_env_ban(env, "198.18.8.0/24", 0);
	fc_env_allow(env, "198.18.8.1", 0);
	assert_int_equal(fc_in24(env, "198.18.7.0"), FC_IN24_EXACT);
	assert_int_equal(fc_in24(env, "198.18.8.0"), FC_IN24_EXACT | (24 - 16));
	assert_int_equal(fc_send(env, false, "198.18.7.1"), FC_V_PASS);
	assert_int_equal(fc_passed(env, 1), 1);
	assert_int_equal(fc_send(env, false, "198.18.8.1"), FC_V_ALLOWED);
	assert_int_equal(fc_send(env, false, "198.18.8.2"), FC_V_DROP_PREFIX);
	fc_env_unallow(env, "198.18.8.1");
	assert_int_equal(fc_in24(env, "198.18.8.0"), 24 - 16);
	assert_int_equal(fc_send(env, false, "198.18.8.1"), FC_V_DROP_PREFIX);
	fc_env_policy_del(env, 1);
	assert_int_equal(fc_in24(env, "198.18.7.0"), 0);

	/* A bit over no address costs a lookup, nothing else; sync clears it. */
	fc_env_ban(env, "198.18.9.9", 0);
	fc_in24_put(env, "198.18.10.0", true);
	assert_int_equal(fc_send(env, false, "198.18.10.9"), FC_V_PASS);
	fc_env_sync(env);
	assert_int_equal(fc_in24(env, "198.18.10.0"), 0);

	/* The packet path trusts a clear bit (a ban under one is not looked
	 * up: the lookup is skipped), while the bits are kept... */
	fc_in24_put(env, "198.18.9.0", false);
	assert_int_equal(fc_send(env, false, "198.18.9.9"), FC_V_PASS);
	/* ...and not where another version published: every IPv4 source is
	 * looked up, and the next publish is whole and makes the bits again. */
	cfg = fc_cfg(env);
	cfg.exact4_gen = cfg.rules_gen - 1;
	assert_int_equal(fc_config_write(&env->maps, &cfg, &err), 0);
	assert_int_equal(fc_send(env, false, "198.18.9.9"), FC_V_DROP_EXACT);
	assert_int_equal(fc_send(env, true, "198.18.9.9"), FC_V_DROP_EXACT);
	assert_int_equal(fc_send(env, false, "198.18.9.10"), FC_V_PASS);
	fc_in24_put(env, "198.18.12.0", true); /* only a whole publish clears it */
	fc_put_ban(env, &(struct fc_prefix){ 4, 32, { 198, 18, 11, 1 } });
	fc_env_publish_changes(env);
	cfg = fc_cfg(env);
	assert_int_equal(cfg.exact4_gen, cfg.rules_gen);
	assert_int_equal(fc_in24(env, "198.18.12.0"), 0);
	assert_int_equal(fc_in24(env, "198.18.9.0"), FC_IN24_EXACT);
	assert_int_equal(fc_in24(env, "198.18.11.0"), FC_IN24_EXACT);
	assert_int_equal(fc_send(env, true, "198.18.9.9"), FC_V_DROP_EXACT);
	assert_int_equal(fc_send(env, false, "198.18.11.1"), FC_V_DROP_EXACT);

	/* A bit a sync puts back is a change of the rules: what a source's
	 * ip=* bucket noted without it ("no ban here") is void. */
	fc_env_policy(env, 2, "ip=*", FC_T_RATE, "");
	fc_env_ban(env, "198.18.13.7", 0);
	fc_in24_put(env, "198.18.13.0", false);
	assert_int_equal(fc_send(env, false, "198.18.13.7"), FC_V_PASS);
	assert_int_equal(fc_send(env, false, "198.18.13.7"), FC_V_PASS); /* from the bucket's note */
	gen = fc_cfg(env).rules_gen;
	fc_env_sync(env);
	assert_int_equal(fc_in24(env, "198.18.13.0"), FC_IN24_EXACT);
	assert_int_not_equal(fc_cfg(env).rules_gen, gen);
	assert_int_equal(fc_send(env, false, "198.18.13.7"), FC_V_DROP_EXACT);
	assert_int_equal(fc_send(env, true, "198.18.13.7"), FC_V_DROP_EXACT);
}

/*
 * Random sets: prefixes of every length around a few anchors (so that they
 * nest and neighbour), each a ban, a policy or both, with an ip=* policy
 * over all; sources inside them and around. The kernel's verdict and the
 * policies it charged must be the reference's, before and after a third of
 * the prefixes is replaced and the rest republished.
 */
#define FC_R_PFX  240
#define FC_R_SRC  600
#define FC_R_STAR 9999

struct fc_rpfx {
	struct fc_prefix p;
	bool ban;
	uint32_t pol; /* policy id, 0 = none */
	bool allow;
	bool live;
};

static struct {
	struct fc_rpfx v[4 * FC_R_PFX];
	size_t n;
	uint32_t next_id;
	unsigned seed;
} fc_r;

static bool fc_covers(const struct fc_prefix *p, const uint8_t *a, uint8_t family)
{
	struct fc_prefix q = { .family = family };

	if (p->family != family)
		return false;
	memcpy(q.a, a, 16);
	fc_prefix_mask(q.a, family == 4 ? 4 : 16, p->len);
	return !memcmp(q.a, p->a, 16);
}

/* A prefix near one of four anchors per family. */
static void fc_r_make(struct fc_rpfx *r)
{
	static const uint8_t anchors4[4][4] = { { 198, 18, 0, 0 }, { 198, 19, 128, 0 }, { 10, 1, 2, 3 }, { 172, 16, 9, 9 } };
	static const uint8_t anchors6[2][16] = { { 0x20, 0x01, 0x0d, 0xb8 }, { 0x20, 0x01, 0x0d, 0xb8, 0x80 } };
	uint8_t family = rand_r(&fc_r.seed) % 3 ? 4 : 6;
	unsigned max = family == 4 ? 32 : 128, from, i;
	int pick = rand_r(&fc_r.seed) % 8;

	memset(r, 0, sizeof(*r));
	r->p.family = family;
	r->p.len = (uint8_t)(1 + rand_r(&fc_r.seed) % max);
	if (family == 4)
		memcpy(r->p.a, anchors4[pick % 4], 4);
	else
		memcpy(r->p.a, anchors6[pick % 2], 16);
	/* Bits past a random depth differ from the anchor's, now and then. */
	from = rand_r(&fc_r.seed) % max;
	for (i = from; i < max; i++)
		if (rand_r(&fc_r.seed) % 4 == 0)
			fc_flip(r->p.a, i);
	fc_prefix_mask(r->p.a, max / 8, r->p.len);
	pick = rand_r(&fc_r.seed) % 20;
	r->ban = pick < 5 || pick >= 18;
	r->pol = pick >= 5 ? fc_r.next_id++ : 0;
	/* One in eight an allow entry too, one in sixteen an allow entry alone. */
	pick = rand_r(&fc_r.seed) % 16;
	r->allow = pick < 2;
	if (pick == 0)
		r->ban = false, r->pol = 0;
	r->live = true;
}

static bool fc_r_clash(const struct fc_rpfx *r)
{
	size_t i;

	for (i = 0; i < fc_r.n; i++)
		if (fc_r.v[i].live && !memcmp(&fc_r.v[i].p, &r->p, sizeof(r->p)))
			return true;
	return false;
}

static void fc_r_add(struct fc_env *env)
{
	struct fc_rpfx r;

	do
		fc_r_make(&r);
	while (fc_r_clash(&r));
	fc_r.v[fc_r.n++] = r;
	if (r.ban)
		fc_put_ban(env, &r.p);
	if (r.pol)
		fc_put_policy(env, r.pol, &r.p);
	if (r.allow)
		fc_put_allow(env, &r.p);
}

/* The reference: what should happen to a packet from a, and the policies
 * (prefix, exact) it should charge. */
static enum fc_verdict fc_r_expect(const uint8_t *a, uint8_t family, uint32_t *pfx_pol, uint32_t *exact_pol)
{
	unsigned max = family == 4 ? 32 : 128;
	int best_pol_len = -1;
	bool exact_ban = false, pfx_ban = false, allowed = false;
	size_t i;

	*pfx_pol = *exact_pol = 0;
	for (i = 0; i < fc_r.n; i++) {
		const struct fc_rpfx *r = &fc_r.v[i];

		if (!r->live || !fc_covers(&r->p, a, family))
			continue;
		allowed |= r->allow;
		if (r->p.len == max) {
			exact_ban |= r->ban;
			*exact_pol = r->pol;
			continue;
		}
		pfx_ban |= r->ban;
		if (r->pol && (int)r->p.len > best_pol_len) {
			best_pol_len = r->p.len;
			*pfx_pol = r->pol;
		}
	}
	if (allowed) {
		*pfx_pol = *exact_pol = 0; /* nothing charged */
		return FC_V_ALLOWED;
	}
	return exact_ban ? FC_V_DROP_EXACT : pfx_ban ? FC_V_DROP_PREFIX : FC_V_PASS;
}

/* A source inside a random live prefix (or, one in five, anywhere near an
 * anchor), as bytes and family. */
static uint8_t fc_r_source(uint8_t *a)
{
	const struct fc_rpfx *r;
	unsigned max, i;

	do
		r = &fc_r.v[(size_t)rand_r(&fc_r.seed) % fc_r.n];
	while (!r->live);
	max = r->p.family == 4 ? 32 : 128;
	memcpy(a, r->p.a, 16);
	for (i = r->p.len; i < max; i++)
		if (rand_r(&fc_r.seed) % 2)
			fc_flip(a, i);
	if (rand_r(&fc_r.seed) % 5 == 0)
		for (i = rand_r(&fc_r.seed) % max; i < max; i++)
			if (rand_r(&fc_r.seed) % 3 == 0)
				fc_flip(a, i);
	return r->p.family;
}

static void fc_r_round(struct fc_env *env, int round)
{
	static uint64_t want[4 * FC_R_PFX], base[4 * FC_R_PFX];
	uint32_t pfx_pol, exact_pol, id;
	enum fc_verdict v, got;
	uint8_t a[16], family;
	char src[FC_PREFIX_STRLEN + 8];
	size_t i, nallowed = 0;
	int k;

	/* Counters run on across rounds: the round's are the differences. The
	 * ip=* policy's are kept at index 0. */
	for (i = 0; i < fc_r.n; i++)
		if (fc_r.v[i].live && fc_r.v[i].pol)
			base[fc_r.v[i].pol] = fc_passed(env, fc_r.v[i].pol);
	base[0] = fc_passed(env, FC_R_STAR);
	memset(want, 0, sizeof(want));
	for (i = 0; i < FC_R_SRC; i++) {
		family = fc_r_source(a);
		v = fc_r_expect(a, family, &pfx_pol, &exact_pol);
		if (family == 4 && i % 7 == 0)
			snprintf(src, sizeof(src), "::ffff:%u.%u.%u.%u", a[0], a[1], a[2], a[3]);
		else
			fc_text(family, a, src);
		/* Twice: the second meets what the source's ip=* bucket noted. */
		for (k = 0; k < 2; k++) {
			got = fc_send(env, (i + (size_t)k) % 2, src);
			if (got != v)
				fail_msg("round %d: %s (send %d): verdict %d, the reference says %d", round, src, k, got, v);
			nallowed += v == FC_V_ALLOWED;
			if (v != FC_V_PASS)
				continue;
			want[0]++;
			if (pfx_pol)
				want[pfx_pol]++;
			if (exact_pol)
				want[exact_pol]++;
		}
	}
	for (i = 0; i < fc_r.n; i++) {
		const struct fc_rpfx *r = &fc_r.v[i];
		char buf[FC_PREFIX_STRLEN];

		if (!r->live || !r->pol)
			continue;
		id = r->pol;
		fc_prefix_format(&r->p, buf);
		if (fc_passed(env, id) - base[id] != want[id])
			fail_msg("round %d: policy %u on %s charged %llu times, the reference says %llu", round, id, buf,
				 (unsigned long long)(fc_passed(env, id) - base[id]), (unsigned long long)want[id]);
	}
	assert_int_equal(fc_passed(env, FC_R_STAR) - base[0], want[0]);
	/* Allowed sources, and not only those. */
	assert_true(nallowed > 0 && nallowed < 2 * FC_R_SRC);
}

/* Lifts about a third of the prefixes, adds as many new ones (which cover,
 * nest in and neighbour those that stay), publishes once. */
static void fc_r_churn(struct fc_env *env)
{
	size_t i, n = fc_r.n;
	char buf[FC_PREFIX_STRLEN];
	struct fc_err err;
	bool found;

	for (i = 0; i < n; i++) {
		struct fc_rpfx *r = &fc_r.v[i];

		if (!r->live || rand_r(&fc_r.seed) % 3)
			continue;
		r->live = false;
		fc_prefix_format(&r->p, buf);
		if ((r->pol && (fc_store_policy_del(env->st, r->pol, &found, &err) < 0 || !found)) ||
		    (r->ban && (fc_store_ban_del(env->st, &r->p, &found, &err) < 0 || !found)) ||
		    (r->allow && (fc_store_allow_del(env->st, &(struct fc_allow_row){ .p = r->p }, &found, &err) < 0 ||
				  !found)))
			fail_msg("lifting %s: %s", buf, found ? err.msg : "not found");
		fc_r_add(env);
	}
	fc_env_publish(env);
}

static void test_random_sets(void **state)
{
	struct fc_env *env = *state;
	int round;

	FC_REQUIRE_BPF();
	fc_r.seed = 20261124;
	fc_r.next_id = 1;
	for (fc_r.n = 0; fc_r.n < FC_R_PFX;)
		fc_r_add(env);
	fc_env_policy(env, FC_R_STAR, "ip=*", FC_T_RATE, "new_sources=100000000"); /* and publishes */
	for (round = 0; round < 3; round++) {
		fc_r_round(env, round);
		fc_r_churn(env);
	}
	fc_r_round(env, round);
}

/* The flags of the entry at the IPv6 prefix text in fc_pfx6, or (top) of
 * fc_top6's for its /32; -1 without one. */
static long fc_entry6_flags(struct fc_env *env, const char *text, bool top)
{
	struct fc_pfx6_key key;
	struct fc_prefix p;
	struct fc_top6 t;
	struct fc_rule r;
	struct fc_err err;

	assert_int_equal(fc_prefix_parse(text, &p, &err), 0);
	fc_prefix_to_pfx6(&p, &key);
	if (top)
		return bpf_map_lookup_elem(env->maps.top6, key.a, &t) ? -1 : (long)t.rule.flags;
	return bpf_map_lookup_elem(env->maps.pfx6, &key, &r) ? -1 : (long)r.flags;
}

/* The flags of fc_pfx6's entry at the prefix text (0 without one). */
static __u32 fc_flags6(struct fc_env *env, const char *text)
{
	long flags = fc_entry6_flags(env, text, false);

	return flags < 0 ? 0 : (__u32)flags;
}

static bool fc_marker6(struct fc_env *env, const char *text)
{
	return fc_flags6(env, text) & FC_RULE_MARKER;
}

/*
 * fc_pfx6's tree (fc_pfx6_mid) starts at /32, then /48, then /64: a /64
 * leaves markers at its /32 and its /48, and a source no prefix covers costs
 * one lookup. An entry whose prefixes inside are all of one length says
 * which (FC_RULE_NEXT), kept by publishing what changed. Maps whose markers
 * were made for another tree
 * (fc_config.pfx6_tree) are published whole, which makes the markers again.
 */
static void test_pfx6_tree(void **state)
{
	struct fc_env *env = *state;
	struct fc_pfx6_key key;
	struct fc_prefix p;
	struct fc_config cfg;
	struct fc_err err;

	FC_REQUIRE_BPF();
	assert_int_equal(fc_pfx6_mid(1, 127), 32);
	assert_int_equal(fc_pfx6_mid(33, 127), 48);
	assert_int_equal(fc_pfx6_mid(49, 127), 64);
	assert_int_equal(fc_pfx6_mid(65, 127), 96);
	assert_int_equal(fc_pfx6_mid(33, 47), 40);
	fc_env_ban(env, "2001:db8:1:2::/64", 0);
	cfg = fc_cfg(env);
	assert_int_equal(cfg.pfx6_tree, FC_PFX6_TREE);
	assert_int_equal(cfg.n_marks6, 2);
	assert_true(fc_marker6(env, "2001:db8::/32"));
	assert_true(fc_marker6(env, "2001:db8:1::/48"));
	/* The one length inside: from the /32, the /64 is looked up at once. */
	assert_int_equal(FC_RULE_NEXT(fc_flags6(env, "2001:db8::/32")), 64);
	assert_int_equal(FC_RULE_NEXT(fc_flags6(env, "2001:db8:1::/48")), 64);
	assert_int_equal(fc_send(env, false, "2001:db8:1:2::5"), FC_V_DROP_PREFIX);
	assert_int_equal(fc_send(env, true, "2001:db8:1:3::5"), FC_V_PASS);
	/* A /40 under the /32's marker, a /56 under the /48's: several lengths
	 * inside each, which the search walks as before. */
	fc_env_ban(env, "2001:db8:100::/40", 0);
	fc_env_ban(env, "2001:db8:1:100::/56", 0);
	assert_int_equal(fc_cfg(env).n_marks6, 2);
	assert_int_equal(FC_RULE_NEXT(fc_flags6(env, "2001:db8::/32")), 0);
	assert_int_equal(FC_RULE_NEXT(fc_flags6(env, "2001:db8:1::/48")), 0);
	assert_int_equal(FC_RULE_NEXT(fc_flags6(env, "2001:db8:100::/40")), 0);
	assert_int_equal(fc_send(env, false, "2001:db8:1:2::5"), FC_V_DROP_PREFIX);
	assert_int_equal(fc_send(env, true, "2001:db8:1:105::5"), FC_V_DROP_PREFIX);
	assert_int_equal(fc_send(env, false, "2001:db8:1ff::5"), FC_V_DROP_PREFIX);
	assert_int_equal(fc_send(env, true, "2001:db8:1:200::5"), FC_V_PASS);

	/* Maps of another tree lack this one's markers: what changed is not
	 * enough, everything is published. */
	assert_int_equal(fc_prefix_parse("2001:db8:1::/48", &p, &err), 0);
	fc_prefix_to_pfx6(&p, &key);
	assert_int_equal(bpf_map_delete_elem(env->maps.pfx6, &key), 0);
	assert_int_equal(fc_send(env, false, "2001:db8:1:2::5"), FC_V_PASS); /* the search turns back at /48 */
	cfg = fc_cfg(env);
	cfg.pfx6_tree = FC_PFX6_TREE - 1;
	assert_int_equal(fc_config_write(&env->maps, &cfg, &err), 0);
	fc_put_ban(env, &(struct fc_prefix){ 6, 64, { 0x20, 0x01, 0x0d, 0xb9, 0, 9 } }); /* another /32 */
	fc_env_publish_changes(env); /* the maps: everything (the shm: what changed) */
	cfg = fc_cfg(env);
	assert_int_equal(cfg.pfx6_tree, FC_PFX6_TREE);
	assert_true(fc_marker6(env, "2001:db8:1::/48"));
	assert_int_equal(fc_send(env, true, "2001:db8:1:2::5"), FC_V_DROP_PREFIX);
	assert_int_equal(fc_send(env, false, "2001:db9:9::5"), FC_V_DROP_PREFIX);
	/* The /56 and the /40 lifted, one at a time: the /32 and the /48 hold
	 * /64s alone again. */
	fc_env_unban(env, "2001:db8:1:100::/56");
	assert_int_equal(FC_RULE_NEXT(fc_flags6(env, "2001:db8:1::/48")), 64);
	assert_int_equal(FC_RULE_NEXT(fc_flags6(env, "2001:db8::/32")), 0);
	fc_env_unban(env, "2001:db8:100::/40");
	assert_int_equal(FC_RULE_NEXT(fc_flags6(env, "2001:db8::/32")), 64);
	assert_int_equal(fc_send(env, true, "2001:db8:1:2::5"), FC_V_DROP_PREFIX);
	assert_int_equal(fc_send(env, false, "2001:db8:100::5"), FC_V_PASS);
}

/* The flags of fc_top6's entry for the /32 of the IPv6 address text, or -1
 * without one. */
static long fc_top6_flags(struct fc_env *env, const char *text)
{
	return fc_entry6_flags(env, text, true);
}

/* The one prefix (not a marker) fc_pfx6 holds inside the /32 top, longer
 * than it, into *in (its key and entry); how many there are. */
static size_t fc_pfx6_inside(struct fc_env *env, const struct fc_top6_key *top, struct fc_pfx6_key *in,
			     struct fc_rule *r)
{
	struct fc_pfx6_key k;
	struct fc_rule v;
	size_t n = 0;
	int rc;

	for (rc = bpf_map_get_next_key(env->maps.pfx6, NULL, &k); !rc;
	     rc = bpf_map_get_next_key(env->maps.pfx6, &k, &k)) {
		if (k.prefixlen <= FC_PFX6_ROOT || memcmp(k.a, top->a, sizeof(top->a)))
			continue;
		assert_int_equal(bpf_map_lookup_elem(env->maps.pfx6, &k, &v), 0);
		if (v.flags & FC_RULE_MARKER)
			continue;
		*in = k;
		*r = v;
		n++;
	}
	return n;
}

/* fc_top6 holds fc_pfx6's /32 entries (prefixes and markers), each keyed by
 * its /32, and nothing else, each with the one prefix inside it where it
 * jumps to one (FC_RULE_NEXT) and fc_pfx6 holds one there, as it holds it;
 * returns how many. */
static size_t fc_top6_check(struct fc_env *env)
{
	struct fc_pfx6_key k6, in;
	struct fc_top6_key k;
	struct fc_rule r6, rin;
	struct fc_top6 t;
	size_t n = 0, m = 0, inside;
	int rc;

	for (rc = bpf_map_get_next_key(env->maps.pfx6, NULL, &k6); !rc;
	     rc = bpf_map_get_next_key(env->maps.pfx6, &k6, &k6)) {
		if (k6.prefixlen != FC_PFX6_ROOT)
			continue;
		assert_int_equal(bpf_map_lookup_elem(env->maps.pfx6, &k6, &r6), 0);
		memcpy(k.a, k6.a, sizeof(k.a));
		if (bpf_map_lookup_elem(env->maps.top6, &k, &t))
			fail_msg("fc_top6: no entry for the /32 %02x%02x:%02x%02x:: of fc_pfx6", k.a[0], k.a[1], k.a[2],
				 k.a[3]);
		if (memcmp(&t.rule, &r6, sizeof(r6)))
			fail_msg("fc_top6: the /32 %02x%02x:%02x%02x:: has flags %#x policy %u, fc_pfx6 %#x %u", k.a[0],
				 k.a[1], k.a[2], k.a[3], t.rule.flags, t.rule.policy, r6.flags, r6.policy);
		inside = fc_pfx6_inside(env, &k, &in, &rin);
		if (FC_RULE_NEXT(r6.flags) && inside == 1) {
			if (t.in.len != in.prefixlen || memcmp(t.in.a, in.a + sizeof(k.a), sizeof(t.in.a)) ||
			    memcmp(&t.in.rule, &rin, sizeof(rin)))
				fail_msg("fc_top6: the /32 %02x%02x:%02x%02x:: carries /%u (flags %#x), "
					 "fc_pfx6 holds /%u (flags %#x) inside it",
					 k.a[0], k.a[1], k.a[2], k.a[3], t.in.len, t.in.rule.flags, in.prefixlen,
					 rin.flags);
		} else if (t.in.len) {
			fail_msg("fc_top6: the /32 %02x%02x:%02x%02x:: carries /%u, with %zu prefixes inside it",
				 k.a[0], k.a[1], k.a[2], k.a[3], t.in.len, inside);
		}
		n++;
	}
	for (rc = bpf_map_get_next_key(env->maps.top6, NULL, &k); !rc;
	     rc = bpf_map_get_next_key(env->maps.top6, &k, &k))
		m++;
	assert_int_equal(m, n);
	return n;
}

/* Sends src through XDP and TC: both must say want. */
static void fc_send2(struct fc_env *env, const char *src, enum fc_verdict want)
{
	enum fc_verdict x = fc_send(env, false, src), t = fc_send(env, true, src);

	if (x != want || t != want)
		fail_msg("%s: XDP verdict %d, TC %d, expected %d", src, x, t, want);
}

/*
 * The root of fc_pfx6's tree in fc_top6: a /32 ban, /32s with prefixes of
 * one length inside (FC_RULE_NEXT) and of several, a prefix shorter than
 * /32 covering them and covering /32s with no entry, allow entries and
 * policies inside, /128s beside them; kept by publishing what changed (each
 * fc_env_* change publishes it, then checks that a full publish writes
 * nothing more, fc_top6 included) and equal to fc_pfx6's /32 entries at
 * every step. Maps
 * whose fc_pfx6_tree says another version published them are searched in
 * fc_pfx6 alone, until a publish makes fc_top6 again.
 */
static void test_top6(void **state)
{
	struct fc_env *env = *state;
	struct fc_prefix p;
	struct fc_top6_key key;
	struct fc_config cfg;
	struct fc_err err;

	FC_REQUIRE_BPF();
	assert_int_equal(fc_pfx6_mid(FC_PFX6_MIN, FC_PFX6_MAX), FC_PFX6_ROOT);
	/* A /32 ban: the root's own entry, nothing longer. */
	fc_env_ban(env, "2001:db8::/32", 0);
	assert_int_equal(fc_top6_check(env), 1);
	assert_int_equal(fc_top6_flags(env, "2001:db8::"), FC_RULE_BANNED);
	fc_send2(env, "2001:db8:ffff::1", FC_V_DROP_PREFIX);
	fc_send2(env, "2001:db9::1", FC_V_PASS);
	fc_send2(env, "2001:db7:ffff:ffff:ffff:ffff:ffff:ffff", FC_V_PASS);

	/* A /48 alone in its /32: a marker saying 48. */
	fc_env_ban(env, "2001:db7:1::/48", 0);
	assert_int_equal(fc_top6_check(env), 2);
	assert_int_equal(fc_top6_flags(env, "2001:db7::"),
			 FC_RULE_MARKER | FC_RULE_LONGER | 48 << FC_RULE_NEXT_SHIFT);
	fc_send2(env, "2001:db7:1::9", FC_V_DROP_PREFIX);
	fc_send2(env, "2001:db7:2::9", FC_V_PASS);
	/* A /64 policy inside the banned /48: the ban drops it. An allow entry
	 * inside it lets its sources through; a /128 ban in the /32, not in
	 * the /48, drops as an exact address, the rest of the /32 passes. */
	fc_env_policy(env, 61, "ip=2001:db7:1:2::/64", FC_T_RATE, "");
	fc_send2(env, "2001:db7:1:2::1", FC_V_DROP_PREFIX);
	fc_env_allow(env, "2001:db7:1:5::/64", 0);
	fc_send2(env, "2001:db7:1:5::1", FC_V_ALLOWED);
	fc_env_ban(env, "2001:db7:3::7", 0);
	fc_send2(env, "2001:db7:3::7", FC_V_DROP_EXACT);
	fc_send2(env, "2001:db7:3::8", FC_V_PASS);
	assert_int_equal(FC_RULE_NEXT(fc_top6_flags(env, "2001:db7::")), 0); /* 48 and 64 inside */
	fc_top6_check(env);

	/* Mixed lengths: a /40 ban and a /56 policy beside the /48. */
	fc_env_ban(env, "2001:db7:100::/40", 0);
	fc_env_policy(env, 62, "ip=2001:db7:200:100::/56", FC_T_RATE, "");
	fc_top6_check(env);
	assert_int_equal(FC_RULE_NEXT(fc_top6_flags(env, "2001:db7::")), 0);
	fc_send2(env, "2001:db7:1ff::1", FC_V_DROP_PREFIX);
	fc_send2(env, "2001:db7:1:2::1", FC_V_DROP_PREFIX);
	fc_send2(env, "2001:db7:1:5::1", FC_V_ALLOWED);
	assert_int_equal(fc_passed(env, 62), 0);
	fc_send2(env, "2001:db7:200:1ff::1", FC_V_PASS);
	assert_int_equal(fc_passed(env, 62), 2);
	fc_send2(env, "2001:db7:200:200::1", FC_V_PASS);
	assert_int_equal(fc_passed(env, 62), 2);

	/* A /24 covering both /32s and others with no entry: folded into the
	 * /32s' entries, found by the walk below /32 for the others. */
	fc_env_ban(env, "2001:d00::/24", 0);
	fc_top6_check(env);
	assert_true(fc_top6_flags(env, "2001:db7::") & FC_RULE_BANNED);
	fc_send2(env, "2001:db7:2::9", FC_V_DROP_PREFIX);
	fc_send2(env, "2001:db7:200:100::1", FC_V_DROP_PREFIX);
	fc_send2(env, "2001:d42::1", FC_V_DROP_PREFIX);
	fc_send2(env, "2001:db7:1:5::1", FC_V_ALLOWED);
	fc_send2(env, "2001:e00::1", FC_V_PASS);
	fc_env_unban(env, "2001:d00::/24");
	fc_top6_check(env);
	fc_send2(env, "2001:db7:2::9", FC_V_PASS);
	fc_send2(env, "2001:d42::1", FC_V_PASS);

	/* Lifted one by one: the /32's entry says one length again, then goes. */
	fc_env_unban(env, "2001:db7:100::/40");
	fc_env_policy_del(env, 62);
	fc_env_policy_del(env, 61);
	fc_env_unallow(env, "2001:db7:1:5::/64");
	fc_top6_check(env);
	assert_int_equal(fc_top6_flags(env, "2001:db7::"),
			 FC_RULE_MARKER | FC_RULE_LONGER | 48 << FC_RULE_NEXT_SHIFT);
	fc_send2(env, "2001:db7:1:5::1", FC_V_DROP_PREFIX);
	fc_send2(env, "2001:db7:1ff::1", FC_V_PASS);
	fc_env_unban(env, "2001:db7:1::/48");
	assert_int_equal(fc_top6_check(env), 1);
	assert_int_equal(fc_top6_flags(env, "2001:db7::"), -1);
	fc_send2(env, "2001:db7:1::9", FC_V_PASS);
	fc_send2(env, "2001:db7:3::7", FC_V_DROP_EXACT); /* a /128 needs no entry there */

	/* Maps another version published: no fc_top6 to trust (here an entry
	 * gone), the search finds the ban in fc_pfx6; the next publish, whole,
	 * makes fc_top6 again. */
	fc_env_ban(env, "2001:db6:1::/48", 0);
	assert_int_equal(fc_prefix_parse("2001:db6::", &p, &err), 0);
	memcpy(key.a, p.a, sizeof(key.a));
	assert_int_equal(bpf_map_delete_elem(env->maps.top6, &key), 0);
	fc_send2(env, "2001:db6:1::9", FC_V_PASS); /* a miss at the root: nothing shorter */
	cfg = fc_cfg(env);
	cfg.pfx6_tree = FC_PFX6_TREE - 1;
	assert_int_equal(fc_config_write(&env->maps, &cfg, &err), 0);
	fc_send2(env, "2001:db6:1::9", FC_V_DROP_PREFIX);
	fc_send2(env, "2001:db8:1::9", FC_V_DROP_PREFIX);
	fc_send2(env, "2001:db6:2::9", FC_V_PASS);
	fc_put_ban(env, &(struct fc_prefix){ 6, 64, { 0x20, 0x01, 0x0d, 0xb5, 0, 9 } });
	fc_env_publish_changes(env);
	assert_int_equal(fc_cfg(env).pfx6_tree, FC_PFX6_TREE);
	assert_int_equal(fc_top6_check(env), 3);
	fc_send2(env, "2001:db6:1::9", FC_V_DROP_PREFIX);
	fc_send2(env, "2001:db5:9::1", FC_V_DROP_PREFIX);
}

/*
 * The one prefix inside a /32, carried by its fc_top6 entry (struct
 * fc_top6's in) and compared with the source there, at lengths that cut a
 * word of the address: /36, /80, /127; a second one of that length beside
 * it: nothing carried, the search looks the length up in fc_pfx6; the
 * first one lifted: carried again.
 */
static void test_top6_in(void **state)
{
	struct fc_env *env = *state;

	FC_REQUIRE_BPF();
	fc_env_ban(env, "2001:db3:1000::/36", 0);
	fc_env_ban(env, "2001:db2::abcd:0:0:0/80", 0);
	fc_env_ban(env, "2001:db1::2/127", 0);
	fc_top6_check(env);
	assert_int_equal(FC_RULE_NEXT(fc_top6_flags(env, "2001:db2::")), 80);
	fc_send2(env, "2001:db3:1fff::1", FC_V_DROP_PREFIX);
	fc_send2(env, "2001:db3:2000::1", FC_V_PASS);
	fc_send2(env, "2001:db3::1", FC_V_PASS);
	fc_send2(env, "2001:db2::abcd:1:2:3", FC_V_DROP_PREFIX);
	fc_send2(env, "2001:db2::abce:0:0:1", FC_V_PASS);
	fc_send2(env, "2001:db2:0:1:abcd::1", FC_V_PASS);
	fc_send2(env, "2001:db1::3", FC_V_DROP_PREFIX);
	fc_send2(env, "2001:db1::1", FC_V_PASS);
	fc_send2(env, "2001:db1::4", FC_V_PASS);
	fc_env_ban(env, "2001:db1::8/127", 0);
	fc_top6_check(env);
	fc_send2(env, "2001:db1::3", FC_V_DROP_PREFIX);
	fc_send2(env, "2001:db1::9", FC_V_DROP_PREFIX);
	fc_send2(env, "2001:db1::4", FC_V_PASS);
	fc_env_unban(env, "2001:db1::2/127");
	fc_top6_check(env);
	fc_send2(env, "2001:db1::3", FC_V_PASS);
	fc_send2(env, "2001:db1::9", FC_V_DROP_PREFIX);
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, fc_env_setup, fc_env_teardown)
	const struct CMUnitTest tests[] = {
		T(test_v4_every_length), T(test_v6_every_length), T(test_v4_inheritance), T(test_v6_inheritance),
		T(test_zero_and_exact),  T(test_v4_mapped),       T(test_top4_repaired),   T(test_random_sets),
		T(test_exact_bits),      T(test_pfx6_tree),       T(test_top6),            T(test_top6_in),
	};

	return fc_run_group("prefixes in the bpf programs (BPF_PROG_TEST_RUN)", tests, NULL, NULL);
}
