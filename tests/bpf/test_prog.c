// SPDX-License-Identifier: BSD-2-Clause
/*
 * The real programs under BPF_PROG_TEST_RUN: a table of frames with their
 * expected verdicts, replayed through XDP and TC; TTLs; truncated and garbage
 * frames; and the counters checked against what the programs returned.
 */
#include <errno.h>
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
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/in6.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf.h>

#include "fc_change.h"
#include "fc_prefix.h"
#include "fc_stats.h"
#include "fc_sync.h"
#include "fc_test.h"
#include "fc_test_bpf.h"

enum fc_want { FC_PASS, FC_DROP };

/* What a run should return, and which counter it lands in. */
struct fc_case {
	const char *name;
	struct fc_frame_spec spec;
	enum fc_want want;
	size_t counter; /* offsetof(struct fc_stats, ...) */
};

#define FC_CNT(f) offsetof(struct fc_stats, f)

/* Banned by fc_ban_fixture(). */
static const struct fc_case fc_cases[] = {
	{ "v4 exact, TCP", { "198.18.0.7", IPPROTO_TCP, 0x02 }, FC_DROP, FC_CNT(drop_exact) },
	{ "v4 exact, UDP", { "198.18.0.7", IPPROTO_UDP }, FC_DROP, FC_CNT(drop_exact) },
	{ "v4 exact, ICMP", { "198.18.0.7", IPPROTO_ICMP }, FC_DROP, FC_CNT(drop_exact) },
	{ "v4 neighbour of a ban", { "198.18.0.8", IPPROTO_TCP }, FC_PASS, FC_CNT(passed) },
	{ "v4 inside a /16", { "198.19.3.4", IPPROTO_UDP }, FC_DROP, FC_CNT(drop_prefix) },
	{ "v4 inside a /32 prefix form", { "198.18.1.1", IPPROTO_UDP }, FC_DROP, FC_CNT(drop_exact) },
	{ "v4 just outside the /16", { "198.20.0.1", IPPROTO_UDP }, FC_PASS, FC_CNT(passed) },
	{ "v4 exact, 1 VLAN", { "198.18.0.7", IPPROTO_TCP, 0x10, 1 }, FC_DROP, FC_CNT(drop_exact) },
	{ "v4 exact, 2 VLANs", { "198.18.0.7", IPPROTO_TCP, 0x10, 2 }, FC_DROP, FC_CNT(drop_exact) },
	{ "v4 prefix, 2 VLANs", { "198.19.200.1", IPPROTO_UDP, 0, 2 }, FC_DROP, FC_CNT(drop_prefix) },
	{ "v4 clean, 2 VLANs", { "198.18.0.9", IPPROTO_UDP, 0, 2 }, FC_PASS, FC_CNT(passed) },
	/* More tags than are parsed: dropped while rules exist (test_vlans). */
	{ "v4 exact, 3 VLANs", { "198.18.0.7", IPPROTO_TCP, 0x02, 3 }, FC_DROP, FC_CNT(drop_tagged) },
	{ "v4 clean, 3 VLANs", { "198.18.0.9", IPPROTO_UDP, 0, 3 }, FC_DROP, FC_CNT(drop_tagged) },
	{ "v4 prefix, 8 VLANs", { "198.19.200.1", IPPROTO_UDP, 0, 8 }, FC_DROP, FC_CNT(drop_tagged) },
	{ "v4 exact, IP options", { "198.18.0.7", IPPROTO_TCP, 0x02, 0, 10 }, FC_DROP, FC_CNT(drop_exact) },
	{ "v4 exact, options, 2 VLANs, payload", { "198.18.0.7", IPPROTO_UDP, 0, 2, 3, 0, 40 }, FC_DROP,
	  FC_CNT(drop_exact) },
	{ "v6 exact, TCP", { "2001:2::7", IPPROTO_TCP, 0x02 }, FC_DROP, FC_CNT(drop_exact) },
	{ "v6 exact, ICMPv6", { "2001:2::7", IPPROTO_ICMPV6 }, FC_DROP, FC_CNT(drop_exact) },
	{ "v6 clean", { "2001:2::8", IPPROTO_UDP }, FC_PASS, FC_CNT(passed) },
	{ "v6 inside a /64", { "2001:2:0:1::99", IPPROTO_UDP }, FC_DROP, FC_CNT(drop_prefix) },
	{ "v6 outside the /64", { "2001:2:0:2::99", IPPROTO_UDP }, FC_PASS, FC_CNT(passed) },
	{ "v6 exact, 1 VLAN", { "2001:2::7", IPPROTO_UDP, 0, 1 }, FC_DROP, FC_CNT(drop_exact) },
	{ "v6 prefix, 2 VLANs", { "2001:2:0:1::1", IPPROTO_TCP, 0x02, 2 }, FC_DROP, FC_CNT(drop_prefix) },
	{ "v6 exact, 3 VLANs", { "2001:2::7", IPPROTO_UDP, 0, 3 }, FC_DROP, FC_CNT(drop_tagged) },
	{ "v6 exact, extension headers", { "2001:2::7", IPPROTO_TCP, 0x02, 0, 0, 2 }, FC_DROP,
	  FC_CNT(drop_exact) },
	{ "v6 exact, ext headers, 2 VLANs", { "2001:2::7", IPPROTO_UDP, 0, 2, 0, 1, 20 }, FC_DROP,
	  FC_CNT(drop_exact) },
	{ "v6 from a v4-mapped source is that v4 address", { "::ffff:198.18.0.7", IPPROTO_UDP }, FC_DROP,
	  FC_CNT(drop_exact) },
	{ "v6 prefixes never cover v4", { "198.51.100.1", IPPROTO_UDP }, FC_PASS, FC_CNT(passed) },
	{ "v4 prefixes never cover v6", { "::c613:1", IPPROTO_UDP }, FC_PASS, FC_CNT(passed) },
};

static void fc_ban_fixture(struct fc_env *env)
{
	fc_env_ban(env, "198.18.0.7", 0);
	fc_env_ban(env, "198.18.1.1/32", 0);
	fc_env_ban(env, "198.19.0.0/16", 0);
	fc_env_ban(env, "2001:2::7", 0);
	fc_env_ban(env, "2001:2:0:1::/64", 0);
	fc_env_ban(env, "2001:2:8000::/33", 0);
}

static int fc_verdict(bool tc, enum fc_want want)
{
	if (tc)
		return want == FC_DROP ? TC_ACT_SHOT : TC_ACT_OK;
	return want == FC_DROP ? XDP_DROP : XDP_PASS;
}

static void fc_expect(struct fc_stats *exp, size_t counter, size_t len)
{
	struct fc_counter *c = (struct fc_counter *)((char *)exp + counter);

	c->packets++;
	c->bytes += len;
}

static void fc_check_counters(struct fc_env *env, const struct fc_stats *exp)
{
	struct fc_stats got;
	struct fc_err err;

	if (fc_stats_read(&env->maps, &got, &err) < 0)
		fail_msg("%s", err.msg);
	assert_memory_equal(&got, exp, sizeof(got));
}

static void fc_replay(void **state, bool tc)
{
	struct fc_env *env = *state;
	struct fc_stats exp = {};
	uint8_t frame[FC_FRAME_MAX];
	size_t i, len;

	FC_REQUIRE_BPF();
	fc_ban_fixture(env);
	for (i = 0; i < sizeof(fc_cases) / sizeof(fc_cases[0]); i++) {
		const struct fc_case *c = &fc_cases[i];

		len = fc_frame_build(&c->spec, frame);
		assert_true(len > 0);
		if (fc_env_run(env, tc, frame, len) != fc_verdict(tc, c->want))
			fail_msg("%s: %s: expected %s", tc ? "tc" : "xdp", c->name,
				 c->want == FC_DROP ? "drop" : "pass");
		fc_expect(&exp, c->counter, len);
	}
	fc_check_counters(env, &exp);
}

static void test_replay_xdp(void **state)
{
	fc_replay(state, false);
}

static void test_replay_tc(void **state)
{
	fc_replay(state, true);
}

/* A ban lifted with the store + sync path passes the very next frame. */
static void test_unban_next_frame(void **state)
{
	struct fc_frame_spec spec = { "198.18.0.7", IPPROTO_UDP };
	struct fc_env *env = *state;
	uint8_t frame[FC_FRAME_MAX];
	size_t len;

	FC_REQUIRE_BPF();
	len = fc_frame_build(&spec, frame);
	assert_int_equal(fc_env_run(env, false, frame, len), XDP_PASS);
	fc_env_ban(env, "198.18.0.7", 0);
	assert_int_equal(fc_env_run(env, false, frame, len), XDP_DROP);
	assert_int_equal(fc_env_run(env, true, frame, len), TC_ACT_SHOT);
	fc_env_unban(env, "198.18.0.7");
	assert_int_equal(fc_env_run(env, false, frame, len), XDP_PASS);
	assert_int_equal(fc_env_run(env, true, frame, len), TC_ACT_OK);
}

/* UTC ns, the packet path's clock (give or take a tick). */
static uint64_t fc_utc_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* The kernel honours expiry itself, exact and prefix, without a sync. */
static void test_ttl_in_kernel(void **state)
{
	struct fc_frame_spec exact = { "198.18.0.7", IPPROTO_UDP }, inpfx = { "2001:2:0:1::5", IPPROTO_UDP };
	struct fc_env *env = *state;
	uint8_t f1[FC_FRAME_MAX], f2[FC_FRAME_MAX];
	struct fc_pfx6_key k6;
	struct fc_prefix p;
	struct fc_rule ban = { .flags = FC_RULE_BANNED };
	struct fc_err err;
	size_t l1, l2;

	FC_REQUIRE_BPF();
	l1 = fc_frame_build(&exact, f1);
	l2 = fc_frame_build(&inpfx, f2);

	/* Through the store: a 1 s TTL holds, then lapses in the kernel. Made at
	 * x.990 s it lasts at least its second: the store's whole-second expiry
	 * rounds up (x+2), so 20 ms later, past x+1, it still holds. */
	{
		struct timespec now, wait = { 0 };

		clock_gettime(CLOCK_REALTIME, &now);
		wait.tv_nsec = 990000000L - now.tv_nsec;
		if (wait.tv_nsec < 0)
			wait.tv_nsec += 1000000000L;
		nanosleep(&wait, NULL);
	}
	fc_env_ban(env, "198.18.0.7", 1);
	fc_env_ban(env, "2001:2:0:1::/64", 1);
	{
		struct timespec wait = { 0, 20000000L };

		nanosleep(&wait, NULL);
	}
	assert_int_equal(fc_env_run(env, false, f1, l1), XDP_DROP);
	assert_int_equal(fc_env_run(env, true, f2, l2), TC_ACT_SHOT);
	usleep(2500000); /* past x+2 (x+3 if the second ban came after x+1), and a tick */
	assert_int_equal(fc_env_run(env, false, f1, l1), XDP_PASS);
	assert_int_equal(fc_env_run(env, true, f1, l1), TC_ACT_OK);
	assert_int_equal(fc_env_run(env, false, f2, l2), XDP_PASS);
	assert_int_equal(fc_env_run(env, true, f2, l2), TC_ACT_OK);

	/* Written straight into the maps: one ns in the past vs a minute ahead. */
	assert_int_equal(fc_prefix_parse("198.18.0.7", &p, &err), 0);
	/* A second back: the packet path's coarse clock lags UTC by up to a tick. */
	ban.ban_expires_ns = fc_utc_now() - 1000000000ULL;
	assert_int_equal(bpf_map_update_elem(env->maps.exact4, p.a, &ban, BPF_ANY), 0);
	assert_int_equal(fc_env_run(env, false, f1, l1), XDP_PASS);
	ban.ban_expires_ns = fc_utc_now() + 60000000000ULL;
	assert_int_equal(bpf_map_update_elem(env->maps.exact4, p.a, &ban, BPF_ANY), 0);
	assert_int_equal(fc_env_run(env, false, f1, l1), XDP_DROP);

	assert_int_equal(fc_prefix_parse("2001:2:0:1::/64", &p, &err), 0);
	fc_prefix_to_pfx6(&p, &k6);
	ban.ban_expires_ns = fc_utc_now() - 1000000000ULL;
	assert_int_equal(bpf_map_update_elem(env->maps.pfx6, &k6, &ban, BPF_ANY), 0);
	assert_int_equal(fc_env_run(env, true, f2, l2), TC_ACT_OK);
}

/*
 * The kernel's test harness refuses (EINVAL) a TC frame whose IPv4 or IPv6
 * header is cut short: the stack never hands such an skb to TC. That refusal,
 * and no other, is accepted; XDP runs those frames through the same parser.
 */
static bool fc_refused(bool tc, int rc, const uint8_t *f, size_t len)
{
	uint16_t type = (uint16_t)(f[12] << 8 | f[13]);

	return tc && rc == -EINVAL &&
	       ((type == 0x0800 && len < ETH_HLEN + 20) || (type == 0x86DD && len < ETH_HLEN + 40));
}

/*
 * Every truncation (14 to 128 bytes) of banned frames through each layer:
 * dropped once the source address is in, passed before; and seeded random
 * bytes behind each EtherType we parse: none aborts, and the counters add up
 * to what was returned.
 */
static void fc_garbage(void **state, bool tc)
{
	static const struct fc_frame_spec full[] = {
		{ "198.18.0.7", IPPROTO_TCP, 0x02, 2, 4, 0, 60 },
		{ "2001:2::7", IPPROTO_UDP, 0, 2, 0, 2, 50 },
		{ "198.19.0.1", IPPROTO_ICMP, 0, 1, 0, 0, 90 },
		{ "2001:2:0:1::99", IPPROTO_TCP, 0x02, 1, 0, 3, 60 },  /* the /64: fc_top6's /32 says 64 */
		{ "2001:2:8000::5", IPPROTO_UDP, 0, 0, 0, 1, 70 },     /* the /33: a walk past the /32 */
	};
	static const uint16_t ethertypes[] = { 0x0800, 0x86DD, 0x8100, 0x88A8, 0x0806 };
	int pass = tc ? TC_ACT_OK : XDP_PASS, drop = tc ? TC_ACT_SHOT : XDP_DROP;
	struct fc_env *env = *state;
	uint8_t frame[FC_FRAME_MAX], junk[FC_FRAME_MAX];
	size_t i, len, flen, runs = 0, drops = 0;
	unsigned seed = 42;
	struct fc_stats got;
	struct fc_err err;
	int rc;

	FC_REQUIRE_BPF();
	fc_ban_fixture(env);
	for (i = 0; i < sizeof(full) / sizeof(full[0]); i++) {
		flen = fc_frame_build(&full[i], frame);
		assert_true(flen >= 128);
		for (len = 14; len <= 128; len++, runs++) {
			bool has_src = len >= fc_frame_source_len(&full[i]);

			rc = fc_env_try_run(env, tc, frame, len);
			if (fc_refused(tc, rc, frame, len)) {
				runs--;
				continue;
			}
			if (rc != (has_src ? drop : pass))
				fail_msg("frame %zu truncated to %zu bytes: verdict %d, expected %s", i, len, rc,
					 has_src ? "drop (the banned source is in)" : "pass");
			drops += has_src;
		}
		assert_int_equal(fc_env_run(env, tc, frame, flen), drop); /* whole, it is banned */
		runs++;
		drops++;
	}
	for (i = 0; i < 2000; i++, runs++) {
		len = 14 + (size_t)(rand_r(&seed) % 115);
		for (flen = 0; flen < len; flen++)
			junk[flen] = (uint8_t)rand_r(&seed);
		junk[12] = (uint8_t)(ethertypes[i % 5] >> 8);
		junk[13] = (uint8_t)ethertypes[i % 5];
		rc = fc_env_try_run(env, tc, junk, len);
		if (fc_refused(tc, rc, junk, len)) {
			runs--;
			continue;
		}
		if (rc != pass && rc != drop)
			fail_msg("random frame %zu (%zu bytes): verdict %d", i, len, rc);
		drops += rc == drop; /* random sources can fall in the banned /16 */
	}
	if (fc_stats_read(&env->maps, &got, &err) < 0)
		fail_msg("%s", err.msg);
	assert_int_equal(got.drop_exact.packets + got.drop_prefix.packets + got.drop_tagged.packets, drops);
	assert_int_equal(got.passed.packets + got.malformed.packets + got.non_ip.packets, runs - drops);
	assert_true(got.malformed.packets >= 3 * 20); /* the truncations before each source at least */
}

static void test_garbage_xdp(void **state)
{
	fc_garbage(state, false);
}

static void test_garbage_tc(void **state)
{
	fc_garbage(state, true);
}

/*
 * Dressed-up frames: whatever follows the source address (more extension
 * headers than the parser walks, fragments whose L4 header is elsewhere or
 * cut short, an invalid TCP header, lengths that lie), a banned source is
 * dropped, at XDP and at TC; a clean one passes, counted as malformed where
 * the rest is invalid.
 */
static const struct {
	const char *name;
	struct fc_frame_spec spec;
	bool malformed;
} fc_dressed[] = {
	{ "v6, 6 destination options headers", { "2001:2::7", IPPROTO_TCP, 0x02, 0, 0, 6 }, false },
	{ "v6, 8 extension headers", { "2001:2::7", IPPROTO_TCP, 0x02, 0, 0, 8 }, false },
	{ "v6, 9 extension headers", { "2001:2::7", IPPROTO_TCP, 0x02, 0, 0, 9 }, true },
	{ "v6, 10 extension headers, 2 VLANs", { "2001:2::7", IPPROTO_UDP, 0, 2, 0, 10 }, true },
	{ "v4 first fragment, 8 bytes of TCP", { "198.18.0.7", IPPROTO_TCP, 0x02, 0, 0, 0, 0, FC_FRAG_FIRST, 8 }, true },
	{ "v4 later fragment", { "198.18.0.7", IPPROTO_TCP, 0, 0, 0, 0, 12, FC_FRAG_LATER }, false },
	{ "v4 TCP header cut, not a fragment", { "198.18.0.7", IPPROTO_TCP, 0x02, 0, 0, 0, 0, 0, 12 }, true },
	{ "v6 first fragment, 8 bytes of TCP", { "2001:2::7", IPPROTO_TCP, 0x02, 0, 0, 0, 0, FC_FRAG_FIRST, 8 }, true },
	{ "v6 later fragment", { "2001:2::7", IPPROTO_TCP, 0, 0, 0, 0, 12, FC_FRAG_LATER }, false },
	{ "v4-mapped v6, 9 extension headers", { "::ffff:198.18.0.7", IPPROTO_TCP, 0x02, 0, 0, 9 }, true },
	{ "v4 inside a banned prefix, UDP cut", { "198.19.3.4", IPPROTO_UDP, 0, 1, 2, 0, 0, 0, 4 }, true },
};

/* The addresses of fc_dressed sent from clean sources instead. */
static const char *fc_clean_twin(const char *src)
{
	return strchr(src, ':') ? (strstr(src, "ffff") ? "::ffff:198.18.0.9" : "2001:2::9") : "198.18.0.9";
}

static void fc_dressed_run(void **state, bool tc)
{
	struct fc_env *env = *state;
	struct fc_stats exp = {};
	uint8_t frame[FC_FRAME_MAX];
	struct fc_frame_spec spec;
	size_t i, len;

	FC_REQUIRE_BPF();
	fc_ban_fixture(env);
	for (i = 0; i < sizeof(fc_dressed) / sizeof(fc_dressed[0]); i++) {
		spec = fc_dressed[i].spec;
		len = fc_frame_build(&spec, frame);
		assert_true(len > 0);
		if (fc_env_run(env, tc, frame, len) != fc_verdict(tc, FC_DROP))
			fail_msg("%s: %s from a banned source passed", tc ? "tc" : "xdp", fc_dressed[i].name);
		fc_expect(&exp, strchr(spec.src, '/') || !strncmp(spec.src, "198.19", 6) ? FC_CNT(drop_prefix) :
											  FC_CNT(drop_exact),
			  len);
		spec.src = fc_clean_twin(spec.src);
		len = fc_frame_build(&spec, frame);
		if (fc_env_run(env, tc, frame, len) != fc_verdict(tc, FC_PASS))
			fail_msg("%s: %s from a clean source was dropped", tc ? "tc" : "xdp", fc_dressed[i].name);
		fc_expect(&exp, fc_dressed[i].malformed ? FC_CNT(malformed) : FC_CNT(passed), len);
	}
	fc_check_counters(env, &exp);
}

static void test_dressed_xdp(void **state)
{
	fc_dressed_run(state, false);
}

static void test_dressed_tc(void **state)
{
	fc_dressed_run(state, true);
}

/*
 * --count syn charges what may carry a SYN unseen: TCP fragments, a cut TCP
 * header, an L4 protocol past more extension headers than the parser walks.
 * A UDP fragment and a TCP ACK are not charged.
 */
static void test_syn_unseen(void **state)
{
	static const struct {
		struct fc_frame_spec spec;
		bool charged;
	} f[] = {
		{ { "198.18.0.5", IPPROTO_TCP, 0x02 }, true },
		{ { "198.18.0.5", IPPROTO_TCP, 0x10 }, false },
		{ { "198.18.0.5", IPPROTO_TCP, 0x02, 0, 0, 0, 0, FC_FRAG_FIRST, 8 }, true },
		{ { "198.18.0.5", IPPROTO_TCP, 0, 0, 0, 0, 12, FC_FRAG_LATER }, true },
		{ { "198.18.0.5", IPPROTO_UDP, 0, 0, 0, 0, 12, FC_FRAG_LATER }, false },
		{ { "198.18.0.5", IPPROTO_TCP, 0x02, 0, 0, 0, 0, 0, 10 }, true },
		{ { "::ffff:198.18.0.5", IPPROTO_TCP, 0x10, 0, 0, 9 }, true },
		{ { "::ffff:198.18.0.5", IPPROTO_UDP, 0, 0, 0, 2 }, false },
	};
	struct fc_env *env = *state;
	uint8_t frame[FC_FRAME_MAX];
	uint64_t charged = 0;
	struct fc_pstats ps;
	size_t i, len;

	FC_REQUIRE_BPF();
	/* A burst far above what is sent: each charge is counted as passed. */
	fc_env_policy(env, 5, "ip=198.18.0.5", "1000/s", "count=syn");
	for (i = 0; i < sizeof(f) / sizeof(f[0]); i++) {
		len = fc_frame_build(&f[i].spec, frame);
		assert_true(len > 0);
		assert_int_equal(fc_env_run(env, false, frame, len), XDP_PASS);
		charged += f[i].charged;
		ps = fc_env_pstats(env, 5);
		if (ps.passed.packets != charged)
			fail_msg("frame %zu: %s charged", i, f[i].charged ? "not" : "wrongly");
	}
	/* And the limit holds on them: burst 2, a third SYN-like fragment is dropped. */
	fc_env_policy(env, 6, "ip=198.18.0.6", "2/m", "count=syn");
	for (i = 0; i < 3; i++) {
		struct fc_frame_spec s = { "198.18.0.6", IPPROTO_TCP, 0, 0, 0, 0, 12, FC_FRAG_LATER };

		len = fc_frame_build(&s, frame);
		assert_int_equal(fc_env_run(env, true, frame, len), i < 2 ? TC_ACT_OK : TC_ACT_SHOT);
	}
}

/*
 * 10,000 IPv6 /64 bans: reading the prefixes back (a publish diffs against
 * them) once ran past the end of an LPM trie, until out of memory, and took
 * 48 s: the kernel's generic batch walk of a trie hands back a whole key as
 * its position. In a hash, two publishes take well under a second and the
 * second changes nothing.
 */
static void test_many_v6_prefixes(void **state)
{
	struct fc_frame_spec spec = { "2001:db8:63:63::5", IPPROTO_UDP };
	struct fc_env *env = *state;
	struct fc_ban_row row = { .created = 1 };
	struct fc_node_ctx node = fc_node_here(1);
	struct fc_sync_result res;
	uint8_t frame[FC_FRAME_MAX];
	struct fc_source src;
	char text[64];
	struct fc_err err;
	int x, y;

	FC_REQUIRE_BPF();
	for (x = 0; x < 100; x++) {
		for (y = 0; y < 100; y++) {
			snprintf(text, sizeof(text), "2001:db8:%x:%x::/64", x, y);
			assert_int_equal(fc_prefix_parse(text, &row.p, &err), 0);
			assert_int_equal(fc_store_ban_put(env->st, &row, &err), 0);
		}
	}
	fc_source_init(&src, env->st, (int64_t)time(NULL), &node);
	if (fc_sync(&src, &env->maps, env->pin_dir, &res, &err) < 0)
		fail_msg("sync: %s", err.msg);
	/* Each /64 with its search markers, shared: at 2001:db8::/32 and at
	 * the 100 /48s. */
	assert_int_equal(res.added, 10000 + 1 + 100);
	if (fc_sync(&src, &env->maps, env->pin_dir, &res, &err) < 0)
		fail_msg("second sync: %s", err.msg);
	fc_source_free(&src);
	assert_int_equal(res.added + res.changed + res.removed, 0);
	assert_int_equal(fc_env_run(env, false, frame, fc_frame_build(&spec, frame)), XDP_DROP);
}

/*
 * Pins another version left: a map of another shape (fc_pfx4 was an LPM
 * trie; fc_config was 136 bytes before jiffies_utc_ns) makes every opener,
 * writer or reader, stop with a message that names the map, what differs
 * and what to do, and leaves the pins alone.
 */
static void fc_old_pin(const char *name, enum bpf_map_type type, __u32 value_size, __u32 max, __u32 flags,
		       const char *want)
{
	LIBBPF_OPTS(bpf_map_create_opts, o, .map_flags = flags);
	char dir[128], path[160], top4[160], msg_rw[FC_ERR_LEN], msg_ro[FC_ERR_LEN];
	int fd, rc_rw, rc_ro, kept, made;
	__u32 key_size = type == BPF_MAP_TYPE_ARRAY ? 4 : 8;
	struct fc_maps m;
	struct fc_err err;

	snprintf(dir, sizeof(dir), "/sys/fs/bpf/fc-test-old-%d", (int)getpid());
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	snprintf(top4, sizeof(top4), "%s/fc_top4", dir);
	assert_int_equal(fc_pin_dir_prepare(dir, &err), 0);
	fd = bpf_map_create(type, name, key_size, value_size, max, &o);
	if (fd >= 0 && bpf_obj_pin(fd, path) < 0) {
		close(fd);
		fd = -1;
	}
	rc_rw = fc_maps_open(dir, &m, &err);
	snprintf(msg_rw, sizeof(msg_rw), "%s", err.msg);
	rc_ro = fc_maps_open_existing(dir, &m, &err);
	snprintf(msg_ro, sizeof(msg_ro), "%s", err.msg);
	kept = access(path, F_OK) == 0;
	made = access(top4, F_OK) == 0;
	/* Removed before any check can fail. */
	if (fd >= 0)
		close(fd);
	unlink(top4);
	unlink(path);
	rmdir(dir);
	assert_true(fd >= 0);
	assert_int_equal(rc_rw, -1);
	assert_non_null(strstr(msg_rw, want));
	assert_int_equal(rc_ro, -1);
	assert_non_null(strstr(msg_ro, "remove /sys/fs/bpf/fc-test-old-"));
	/* Whole, to its last words: a message cut short hides what to do. */
	assert_non_null(strstr(msg_ro, "then 'freqctl attach IFACE'; or use another --pin-dir"));
	assert_true(kept);
	assert_false(made); /* nothing made beside them */
}

static void test_old_pins(void **state)
{
	char want[96];

	(void)state;
	FC_REQUIRE_BPF();
	fc_old_pin("fc_pfx4", BPF_MAP_TYPE_LPM_TRIE, sizeof(struct fc_rule), 16, BPF_F_NO_PREALLOC,
		   "fc_pfx4: a lpm_trie, not a hash: another version's pins");
	/* The config a field shorter, as the version before the last field's had it. */
	snprintf(want, sizeof(want), "fc_config: %zu-byte values, not %zu: another version's pins",
		 sizeof(struct fc_config) - sizeof(__u64), sizeof(struct fc_config));
	fc_old_pin("fc_config", BPF_MAP_TYPE_ARRAY, sizeof(struct fc_config) - sizeof(__u64), 1, 0, want);
	/* fc_buckets before it was mappable (the fleet's agent writes it in place). */
	fc_old_pin("fc_buckets", BPF_MAP_TYPE_ARRAY, sizeof(struct fc_bucket), FC_POLICY_SLOTS, 0,
		   "fc_buckets: flags 0, not 0x400: another version's pins");
}

/* Non-IP (ARP) passes and is counted as such. */
static void test_non_ip(void **state)
{
	struct fc_env *env = *state;
	uint8_t arp[42] = { [12] = 0x08, [13] = 0x06 };
	struct fc_stats exp = {};

	FC_REQUIRE_BPF();
	fc_ban_fixture(env);
	assert_int_equal(fc_env_run(env, false, arp, sizeof(arp)), XDP_PASS);
	assert_int_equal(fc_env_run(env, true, arp, sizeof(arp)), TC_ACT_OK);
	fc_expect(&exp, FC_CNT(non_ip), sizeof(arp));
	fc_expect(&exp, FC_CNT(non_ip), sizeof(arp));
	fc_check_counters(env, &exp);
}

/* Three VLAN tags or more: the parser reads two, so what the others carry
 * is not seen. With nothing published such a frame passes (not IP); once a
 * rule or an ip=* policy is published it is dropped, a banned source's and
 * any other alike, at XDP and TC; two tags are read through. */
static void test_vlans(void **state)
{
	struct fc_frame_spec three = { "198.18.0.7", IPPROTO_UDP, 0, 3 }, two = { "198.18.0.9", IPPROTO_UDP, 0, 2 },
			     six = { "2001:2::9", IPPROTO_TCP, 0x02, 6 };
	struct fc_env *env = *state;
	uint8_t f3[FC_FRAME_MAX], f2[FC_FRAME_MAX], f6[FC_FRAME_MAX];
	size_t l3 = fc_frame_build(&three, f3), l2 = fc_frame_build(&two, f2), l6 = fc_frame_build(&six, f6);
	struct fc_stats exp = {};
	int tc;

	FC_REQUIRE_BPF();
	assert_true(l3 && l2 && l6);
	for (tc = 0; tc <= 1; tc++) {
		assert_int_equal(fc_env_run(env, tc, f3, l3), fc_verdict(tc, FC_PASS));
		assert_int_equal(fc_env_run(env, tc, f6, l6), fc_verdict(tc, FC_PASS));
		fc_expect(&exp, FC_CNT(non_ip), l3);
		fc_expect(&exp, FC_CNT(non_ip), l6);
	}
	fc_env_ban(env, "203.0.113.1", 0); /* a rule: someone else's */
	for (tc = 0; tc <= 1; tc++) {
		assert_int_equal(fc_env_run(env, tc, f3, l3), fc_verdict(tc, FC_DROP));
		assert_int_equal(fc_env_run(env, tc, f6, l6), fc_verdict(tc, FC_DROP));
		assert_int_equal(fc_env_run(env, tc, f2, l2), fc_verdict(tc, FC_PASS));
		fc_expect(&exp, FC_CNT(drop_tagged), l3);
		fc_expect(&exp, FC_CNT(drop_tagged), l6);
		fc_expect(&exp, FC_CNT(passed), l2);
	}
	fc_check_counters(env, &exp);
}

static void fc_run_n(struct fc_env *env, const char *src, int n, int want, uint64_t *bytes)
{
	struct fc_frame_spec spec = { src, IPPROTO_UDP };
	uint8_t frame[FC_FRAME_MAX];
	size_t len = fc_frame_build(&spec, frame);
	int i;

	for (i = 0; i < n; i++)
		assert_int_equal(fc_env_run(env, false, frame, len), want);
	*bytes += (uint64_t)n * len;
}

/* Drops by ban source: an address held by several counts under the first
 * (by hand, then the set made first); a deleted set's drops are gone, and
 * its addresses count under what still holds them. stats reads them back by
 * name. A set lapses as a whole after its TTL, lifting its bans. */
static void test_set_counters(void **state)
{
	static const char *const a[] = { "198.18.0.7", "198.19.0.0/16" }, *const b[] = { "198.18.0.7", "2001:2::7" },
				  *const c[] = { "198.18.0.50" };
	struct fc_env *env = *state;
	uint64_t bytes[4] = { 0 };
	const struct fc_ctx ctx = fc_env_ctx(env);
	struct fc_stats_all all;
	struct fc_counter cnt;
	struct fc_err err;
	size_t members;

	FC_REQUIRE_BPF();
	fc_env_set(env, "a", a, 2, 0);
	fc_env_set(env, "b", b, 2, 0);
	fc_env_ban(env, "198.18.0.9", 0);
	fc_env_ban(env, "2001:2::7", 0);
	fc_run_n(env, "198.18.0.7", 3, XDP_DROP, &bytes[1]);  /* sets a and b: a's */
	fc_run_n(env, "198.19.1.1", 2, XDP_DROP, &bytes[1]);  /* a's prefix */
	fc_run_n(env, "198.18.0.9", 1, XDP_DROP, &bytes[0]);  /* by hand */
	fc_run_n(env, "2001:2::7", 4, XDP_DROP, &bytes[0]);   /* by hand and set b: by hand */
	fc_run_n(env, "198.18.0.8", 5, XDP_PASS, &bytes[3]);  /* no ban: no source counts */
	assert_int_equal(fc_stats_gather(&ctx, &all, &err), 0);
	assert_int_equal(all.nsources, 3);
	assert_int_equal(all.sources[0].set, 0);
	assert_string_equal(all.sources[1].name, "a");
	assert_string_equal(all.sources[2].name, "b");
	assert_int_equal(all.sources[0].dropped.packets, 5);
	assert_int_equal(all.sources[0].dropped.bytes, bytes[0]);
	assert_int_equal(all.sources[1].dropped.packets, 5);
	assert_int_equal(all.sources[1].dropped.bytes, bytes[1]);
	assert_int_equal(all.sources[2].dropped.packets, 0);
	assert_int_equal(all.sources[1].bans, 2);
	fc_stats_free(&all);

	assert_int_equal(fc_change_set_del(&ctx, "a", &members, &err), 0);
	assert_int_equal(members, 2);
	fc_env_publish(env);
	assert_int_equal(fc_setstats_read(&env->maps, 1, &cnt, &err), 0);
	assert_int_equal(cnt.packets, 0); /* gone with its set */
	fc_run_n(env, "198.18.0.7", 1, XDP_DROP, &bytes[2]); /* now b's */
	fc_run_n(env, "198.19.1.1", 1, XDP_PASS, &bytes[3]); /* lifted with a */
	assert_int_equal(fc_setstats_read(&env->maps, 2, &cnt, &err), 0);
	assert_int_equal(cnt.packets, 1);
	assert_int_equal(cnt.bytes, bytes[2]);

	fc_env_set(env, "c", c, 1, 1);
	fc_run_n(env, "198.18.0.50", 1, XDP_DROP, &bytes[3]);
	sleep(3); /* the set lapses (its TTL lasts at least 1 s): the next publish lifts it */
	fc_env_publish(env);
	fc_run_n(env, "198.18.0.50", 1, XDP_PASS, &bytes[3]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_replay_xdp, fc_env_setup, fc_env_teardown),
		cmocka_unit_test_setup_teardown(test_replay_tc, fc_env_setup, fc_env_teardown),
		cmocka_unit_test_setup_teardown(test_unban_next_frame, fc_env_setup, fc_env_teardown),
		cmocka_unit_test_setup_teardown(test_ttl_in_kernel, fc_env_setup, fc_env_teardown),
		cmocka_unit_test_setup_teardown(test_garbage_xdp, fc_env_setup, fc_env_teardown),
		cmocka_unit_test_setup_teardown(test_garbage_tc, fc_env_setup, fc_env_teardown),
		cmocka_unit_test_setup_teardown(test_non_ip, fc_env_setup, fc_env_teardown),
		cmocka_unit_test_setup_teardown(test_vlans, fc_env_setup, fc_env_teardown),
		cmocka_unit_test_setup_teardown(test_dressed_xdp, fc_env_setup, fc_env_teardown),
		cmocka_unit_test_setup_teardown(test_dressed_tc, fc_env_setup, fc_env_teardown),
		cmocka_unit_test_setup_teardown(test_syn_unseen, fc_env_setup, fc_env_teardown),
		cmocka_unit_test_setup_teardown(test_many_v6_prefixes, fc_env_setup, fc_env_teardown),
		cmocka_unit_test_setup_teardown(test_set_counters, fc_env_setup, fc_env_teardown),
		cmocka_unit_test(test_old_pins),
	};

	return fc_run_group("bpf programs (BPF_PROG_TEST_RUN)", tests, NULL, NULL);
}
