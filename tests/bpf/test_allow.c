// SPDX-License-Identifier: BSD-2-Clause
/*
 * Allow entries on the real programs under BPF_PROG_TEST_RUN, at XDP and
 * TC: an allowed source passes every ban (exact, prefix, folded from a
 * covering prefix) and every policy (exact, prefix, ip=*), charges none of
 * them and is counted as allowed; an ip=* source's noted rules never hide a
 * new allow entry, nor keep one that is gone; IPv6 too; an entry's expiry
 * ends it on the packet path's clock, and the ban applies again.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>
#include <cmocka.h>
#include <linux/bpf.h>
#include <linux/in.h>
#include <linux/pkt_cls.h>

#include "fc_test.h"
#include "fc_test_bpf.h"

/* Sends n UDP frames from src; returns how many passed. */
static int fc_udp(struct fc_env *env, bool tc, const char *src, int n)
{
	struct fc_frame_spec spec = { .src = src, .l4proto = IPPROTO_UDP };

	return fc_env_send(env, tc, &spec, n);
}

static uint64_t fc_allowed_count(struct fc_env *env)
{
	struct fc_stats s;
	struct fc_err err;

	if (fc_stats_read(&env->maps, &s, &err) < 0)
		fail_msg("%s", err.msg);
	return s.allowed.packets;
}

/* An exact allow entry beats an exact ban, and only while it exists. */
static void test_exact_under_exact_ban(void **state)
{
	struct fc_env *env = *state;
	int tc;

	FC_REQUIRE_BPF();
	fc_env_ban(env, "198.18.1.1", 0);
	assert_int_equal(fc_udp(env, false, "198.18.1.1", 2), 0);
	fc_env_allow(env, "198.18.1.1", 0);
	for (tc = 0; tc < 2; tc++)
		assert_int_equal(fc_udp(env, tc, "198.18.1.1", 3), 3);
	assert_int_equal(fc_allowed_count(env), 6);
	assert_int_equal(fc_udp(env, false, "198.18.1.2", 2), 2); /* no rule: passed, not allowed */
	assert_int_equal(fc_allowed_count(env), 6);
	fc_env_unallow(env, "198.18.1.1");
	assert_int_equal(fc_udp(env, true, "198.18.1.1", 2), 0);
}

/* An exact allow entry inside a banned prefix; the rest of it stays banned. */
static void test_exact_under_prefix_ban(void **state)
{
	struct fc_env *env = *state;
	int tc;

	FC_REQUIRE_BPF();
	fc_env_ban(env, "198.18.2.0/24", 0);
	fc_env_ban(env, "10.0.0.0/8", 0); /* folded into fc_top4's /16 entries */
	fc_env_allow(env, "198.18.2.5", 0);
	fc_env_allow(env, "10.1.2.3", 0);
	for (tc = 0; tc < 2; tc++) {
		assert_int_equal(fc_udp(env, tc, "198.18.2.5", 2), 2);
		assert_int_equal(fc_udp(env, tc, "198.18.2.6", 2), 0);
		assert_int_equal(fc_udp(env, tc, "10.1.2.3", 2), 2);
		assert_int_equal(fc_udp(env, tc, "10.1.2.4", 2), 0);
	}
}

/* An allowed prefix covers the exact bans and the longer prefix bans
 * inside it, and a prefix ban around it stays for what it does not cover. */
static void test_prefix_allow_covers_bans(void **state)
{
	struct fc_env *env = *state;
	int tc;

	FC_REQUIRE_BPF();
	fc_env_ban(env, "198.18.3.7", 0);
	fc_env_ban(env, "198.18.3.16/28", 0);
	fc_env_ban(env, "198.18.0.0/16", 0);
	fc_env_ban(env, "172.16.9.9", 0);
	fc_env_allow(env, "198.18.3.0/24", 0);
	fc_env_allow(env, "172.16.0.0/12", 0); /* /1 to /16: fc_top4's own rule */
	for (tc = 0; tc < 2; tc++) {
		assert_int_equal(fc_udp(env, tc, "198.18.3.7", 2), 2);
		assert_int_equal(fc_udp(env, tc, "198.18.3.17", 2), 2);
		assert_int_equal(fc_udp(env, tc, "198.18.3.200", 2), 2);
		assert_int_equal(fc_udp(env, tc, "198.18.4.1", 2), 0);
		assert_int_equal(fc_udp(env, tc, "172.16.9.9", 2), 2);
	}
	fc_env_unallow(env, "198.18.3.0/24");
	assert_int_equal(fc_udp(env, false, "198.18.3.7", 1), 0);
	assert_int_equal(fc_udp(env, false, "198.18.3.200", 1), 0);
}

/* Under an exact, a prefix and an ip=* policy, each 1/m with a burst of 1,
 * an allowed source passes every frame and charges none of them. */
static void test_allowed_under_limits(void **state)
{
	struct fc_env *env = *state;
	struct fc_pstats before[3];
	int tc, i;

	FC_REQUIRE_BPF();
	fc_env_policy(env, 1, "ip=*", "1/m", "burst=1");
	fc_env_policy(env, 2, "ip=198.18.5.1", "1/m", "burst=1");
	fc_env_policy(env, 3, "ip=198.18.6.0/24", "1/m", "burst=1");
	fc_env_allow(env, "198.18.5.1", 0);
	fc_env_allow(env, "198.18.6.0/25", 0);
	fc_env_allow(env, "198.18.7.7", 0);
	for (i = 0; i < 3; i++)
		before[i] = fc_env_pstats(env, (uint32_t)i + 1);
	for (tc = 0; tc < 2; tc++) {
		assert_int_equal(fc_udp(env, tc, "198.18.5.1", 5), 5);  /* exact + ip=* */
		assert_int_equal(fc_udp(env, tc, "198.18.6.9", 5), 5);  /* prefix + ip=* */
		assert_int_equal(fc_udp(env, tc, "198.18.7.7", 5), 5);  /* ip=* alone */
	}
	for (i = 0; i < 3; i++) {
		struct fc_pstats now = fc_env_pstats(env, (uint32_t)i + 1);

		assert_int_equal(now.passed.packets, before[i].passed.packets);
		assert_int_equal(now.dropped.packets, before[i].dropped.packets);
	}
	assert_int_equal(fc_allowed_count(env), 30);
	/* Not allowed: limited as ever. */
	assert_int_equal(fc_udp(env, false, "198.18.6.200", 3), 1);
	assert_int_equal(fc_udp(env, false, "198.18.7.8", 3), 1);
}

/* An ip=* source noted as "no exact or prefix rule" is allowed from the
 * frame after the publish that allows it, and limited again from the frame
 * after the one that deletes it: the note never outlives a publish. */
static void test_star_note_follows_allow(void **state)
{
	struct fc_env *env = *state;

	FC_REQUIRE_BPF();
	fc_env_policy(env, 1, "ip=*", "1/m", "burst=3");
	assert_int_equal(fc_udp(env, false, "198.18.8.1", 5), 3); /* noted, then limited */
	fc_env_allow(env, "198.18.8.1", 0);
	assert_int_equal(fc_udp(env, false, "198.18.8.1", 5), 5);
	assert_int_equal(fc_udp(env, true, "198.18.8.1", 5), 5);
	fc_env_unallow(env, "198.18.8.1");
	assert_int_equal(fc_udp(env, false, "198.18.8.1", 3), 0); /* its bucket is still spent */
	/* A covering prefix's entry does the same. */
	fc_env_allow(env, "198.18.8.0/24", 0);
	assert_int_equal(fc_udp(env, false, "198.18.8.1", 3), 3);
	fc_env_unallow(env, "198.18.8.0/24");
	assert_int_equal(fc_udp(env, true, "198.18.8.1", 3), 0);
	assert_int_equal(fc_env_pstats(env, 1).passed.packets, 3);
}

/* IPv6: prefixes through the binary search on lengths, exact entries, ip=*. */
static void test_ipv6(void **state)
{
	struct fc_env *env = *state;
	int tc;

	FC_REQUIRE_BPF();
	fc_env_ban(env, "2001:db8::/32", 0);
	fc_env_ban(env, "2001:db8:1::7", 0);
	fc_env_ban(env, "2001:db8:2::9", 0);
	fc_env_policy(env, 1, "ip=*", "1/m", "burst=1");
	fc_env_allow(env, "2001:db8:1::/48", 0);
	fc_env_allow(env, "2001:db8:2::9", 0);
	for (tc = 0; tc < 2; tc++) {
		assert_int_equal(fc_udp(env, tc, "2001:db8:1::5", 3), 3);
		assert_int_equal(fc_udp(env, tc, "2001:db8:1::7", 3), 3);
		assert_int_equal(fc_udp(env, tc, "2001:db8:2::9", 3), 3);
		assert_int_equal(fc_udp(env, tc, "2001:db8:2::8", 2), 0);
	}
	assert_int_equal(fc_udp(env, false, "2001:db9::1", 3), 1); /* ip=* as ever */
}

/* An entry with a TTL ends on the packet path's clock, without a publish:
 * the ban and the ip=* limit apply again. */
static void test_expiry(void **state)
{
	struct fc_env *env = *state;
	uint64_t now = (uint64_t)time(NULL) * 1000000000ULL;

	FC_REQUIRE_BPF();
	fc_env_ban(env, "198.18.9.0/24", 0);
	fc_env_policy(env, 1, "ip=*", "1/m", "burst=1");
	fc_env_allow(env, "198.18.9.1", 60);
	fc_env_allow(env, "198.18.10.1", 60);
	assert_int_equal(fc_udp(env, false, "198.18.9.1", 3), 3);
	assert_int_equal(fc_udp(env, false, "198.18.10.1", 3), 3);
	fc_env_clock(env, now + 59 * 1000000000ULL); /* at least its 60 s */
	assert_int_equal(fc_udp(env, true, "198.18.9.1", 3), 3);
	fc_env_clock(env, now + 62 * 1000000000ULL); /* at most a whole second more */
	assert_int_equal(fc_udp(env, false, "198.18.9.1", 3), 0);
	assert_int_equal(fc_udp(env, true, "198.18.10.1", 3), 1);
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, fc_env_setup, fc_env_teardown)
	const struct CMUnitTest tests[] = {
		T(test_exact_under_exact_ban),
		T(test_exact_under_prefix_ban),
		T(test_prefix_allow_covers_bans),
		T(test_allowed_under_limits),
		T(test_star_note_follows_allow),
		T(test_ipv6),
		T(test_expiry),
	};

	return fc_run_group("allow entries in the bpf programs (BPF_PROG_TEST_RUN)", tests, NULL, NULL);
}
