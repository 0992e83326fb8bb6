// SPDX-License-Identifier: BSD-2-Clause
/*
 * The packet path's coarse clock, read by the real programs under
 * BPF_PROG_TEST_RUN at XDP and TC through a ban's expiry: in its jiffies
 * form (fc_config.jiffies_utc_ns as a publish measures it) it gives, to the
 * nanosecond, the coarse monotonic clock plus utc_offset_ns, as the helper
 * does, in the tick it was measured in (and within a tick later on: NTP's
 * frequency correction moves the two apart, loader/lib/fc_clock.c); a
 * publish writes it a tick less, which keeps the clock behind UTC (by under
 * three ticks) also where it is measured in a late tick. The field is what
 * the program reads, and with it 0 (an older freqctl's publish) the helper
 * is.
 *
 * tests/run.sh: alone: it measures clock ticks against each other.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>
#include <arpa/inet.h>
#include <bpf/bpf.h>
#include <linux/in.h>

#include "fc_clock.h"
#include "fc_clock_probe.skel.h"
#include "fc_prefix.h"
#include "fc_sync.h"
#include "fc_test.h"
#include "fc_test_bpf.h"

#define FC_SRC "198.18.7.1"
#define FC_SEC 1000000000ULL
/* utc_offset_ns is rounded down to whole milliseconds (fc_utc_offset_ns). */
#define FC_ROUNDING 1000000ULL
/* How far behind UTC the clock may be, in ticks: three (the jiffies form
 * as published), and room for late ticks on a loaded machine. */
#define FC_LATE_TICKS 6ULL

/* Skips a test of the jiffies form where the probe can not measure it. */
#define FC_REQUIRE_TICK()                                                                      \
	do {                                                                                   \
		if (!fc_jiffies_utc_ns_now(0)) {                                               \
			print_message("SKIPPED: the clock probe can not run: the helper's clock\n");  \
			skip();                                                                \
		}                                                                              \
	} while (0)

static uint64_t fc_now(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * FC_SEC + (uint64_t)ts.tv_nsec;
}

static struct fc_config fc_cfg(struct fc_env *env)
{
	struct fc_config cfg;
	struct fc_err err;

	if (fc_config_read(&env->maps, &cfg, &err) < 0)
		fail_msg("%s", err.msg);
	return cfg;
}

static void fc_cfg_set(struct fc_env *env, const struct fc_config *cfg)
{
	struct fc_err err;

	if (fc_config_write(&env->maps, cfg, &err) < 0)
		fail_msg("%s", err.msg);
}

/* Bans FC_SRC until expires_ns on the packet path's clock (UTC ns), in the
 * entry a publish wrote. */
static void fc_ban_until(struct fc_env *env, uint64_t expires_ns)
{
	struct fc_addr4 a;
	struct fc_rule r;

	assert_int_equal(inet_pton(AF_INET, FC_SRC, a.a), 1);
	assert_int_equal(bpf_map_lookup_elem(env->maps.exact4, &a, &r), 0);
	r.ban_expires_ns = expires_ns;
	assert_int_equal(bpf_map_update_elem(env->maps.exact4, &a, &r, BPF_EXIST), 0);
}

/* Whether a frame from FC_SRC, at XDP or TC, passes a ban lapsing at
 * expires_ns: whether the packet path's clock reads expires_ns or later. */
static bool fc_clock_reached(struct fc_env *env, bool tc, uint64_t expires_ns)
{
	struct fc_frame_spec spec = { .src = FC_SRC, .l4proto = IPPROTO_UDP };

	fc_ban_until(env, expires_ns);
	return fc_env_send(env, tc, &spec, 1) == 1;
}

/* The packet path's clock within one coarse tick, found to the ns by two
 * frames on each side of what the helper form gives (coarse + utc_offset_ns)
 * and checked against CLOCK_REALTIME read around it. In the jiffies form
 * (jiffies) jiffies_utc_ns is measured in that tick too, as a publish does:
 * from tick to tick the two forms may drift apart by NTP's frequency
 * correction. Retried when the tick moves under the frames. Returns the
 * jiffies_utc_ns the frames saw. */
static uint64_t fc_clock_is_coarse(struct fc_env *env, bool jiffies)
{
	struct fc_config cfg = fc_cfg(env);
	uint64_t tick, want, utc0, utc1;
	bool early, reached;
	struct timespec res;
	int tries, tc;

	assert_int_equal(clock_getres(CLOCK_MONOTONIC_COARSE, &res), 0);
	for (tries = 0; tries < 20; tries++) {
		utc0 = fc_now(CLOCK_REALTIME);
		tick = fc_now(CLOCK_MONOTONIC_COARSE);
		if (jiffies) {
			cfg.jiffies_utc_ns = fc_jiffies_utc_ns_now(cfg.utc_offset_ns);
			assert_int_not_equal(cfg.jiffies_utc_ns, 0);
			fc_cfg_set(env, &cfg);
		}
		want = tick + cfg.utc_offset_ns;
		early = false;
		reached = true;
		for (tc = 0; tc < 2; tc++) {
			early |= fc_clock_reached(env, tc, want + 1);
			reached &= fc_clock_reached(env, tc, want);
		}
		utc1 = fc_now(CLOCK_REALTIME);
		if (fc_now(CLOCK_MONOTONIC_COARSE) != tick)
			continue;
		assert_false(early);
		assert_true(reached);
		/* Never ahead of UTC; behind by the time since the tick and
		 * the coarse clock's phase against it (each under a tick). */
		assert_true(want <= utc1);
		assert_true(want + FC_LATE_TICKS * (uint64_t)res.tv_nsec + FC_ROUNDING >= utc0);
		return cfg.jiffies_utc_ns;
	}
	fail_msg("the coarse clock ticked under the frames 20 times");
	return 0;
}

/* The jiffies form gives what the helper gives, to the ns, in the tick its
 * constant is measured in; a publish's constant is a tick less than that,
 * or (measured in a late tick, or this one late) the same or two less, give
 * or take NTP's drift. */
static void test_jiffies_is_coarse(void **state)
{
	struct fc_env *env = *state;
	uint64_t published, now;
	struct timespec res;

	FC_REQUIRE_BPF();
	FC_REQUIRE_TICK();
	assert_int_equal(clock_getres(CLOCK_MONOTONIC_COARSE, &res), 0);
	fc_env_ban(env, FC_SRC, 3600);
	published = fc_cfg(env).jiffies_utc_ns;
	assert_int_not_equal(published, 0);
	now = fc_clock_is_coarse(env, true);
	assert_true(published <= now + (uint64_t)res.tv_nsec / 2);
	assert_true(now - published <= 5 * (uint64_t)res.tv_nsec / 2);
}

/* The program reads jiffies_utc_ns where it is set, and the helper with
 * utc_offset_ns where it is 0, giving the same UTC. */
static void test_field_read_and_fallback(void **state)
{
	struct fc_env *env = *state;
	struct fc_config cfg;
	uint64_t utc;
	int tc;

	FC_REQUIRE_BPF();
	FC_REQUIRE_TICK();
	fc_env_ban(env, FC_SRC, 3600);
	cfg = fc_cfg(env);
	utc = fc_now(CLOCK_REALTIME);
	for (tc = 0; tc < 2; tc++) {
		/* The jiffies form an hour on: the ban, 30 minutes on, is over. */
		cfg.jiffies_utc_ns += 3600 * FC_SEC;
		fc_cfg_set(env, &cfg);
		assert_true(fc_clock_reached(env, tc, utc + 1800 * FC_SEC));
		/* Then 0, the helper's offset an hour on: the same. */
		cfg.jiffies_utc_ns = 0;
		cfg.utc_offset_ns += 3600 * FC_SEC;
		fc_cfg_set(env, &cfg);
		assert_true(fc_clock_reached(env, tc, utc + 1800 * FC_SEC));
		/* The helper's offset back: the ban holds. */
		cfg.utc_offset_ns -= 3600 * FC_SEC;
		fc_cfg_set(env, &cfg);
		assert_false(fc_clock_reached(env, tc, utc + 1800 * FC_SEC));
		cfg.jiffies_utc_ns = fc_jiffies_utc_ns_now(cfg.utc_offset_ns);
	}
	/* The helper alone gives UTC as the jiffies form did. */
	cfg.jiffies_utc_ns = 0;
	fc_cfg_set(env, &cfg);
	fc_clock_is_coarse(env, false);
}

/* A ban lapsing 20 ms on, on the real clock: it holds until then, also
 * when UTC reaches it (the clock is never ahead), and is over 50 ms after
 * (the clock is behind by under three ticks), in the jiffies form as
 * published and in the helper's. */
static void test_ttl_on_utc(void **state)
{
	struct fc_env *env = *state;
	struct fc_config cfg;
	uint64_t until;
	int helper;

	FC_REQUIRE_BPF();
	fc_env_ban(env, FC_SRC, 3600);
	for (helper = 0; helper < 2; helper++) {
		cfg = fc_cfg(env);
		if (helper) {
			cfg.jiffies_utc_ns = 0;
			fc_cfg_set(env, &cfg);
		}
		until = fc_now(CLOCK_REALTIME) + 20000000ULL;
		assert_false(fc_clock_reached(env, false, until));
		while (fc_now(CLOCK_REALTIME) < until)
			;
		assert_false(fc_clock_reached(env, true, fc_now(CLOCK_REALTIME) + 1));
		usleep(50000);
		assert_true(fc_clock_reached(env, false, until));
		assert_true(fc_clock_reached(env, true, until));
	}
}

/* The probe loaded with tick as its tick length: what it gives for
 * utc_offset_ns 0, or fails the test where it can not load. */
static uint64_t fc_probe_with_tick(uint64_t tick)
{
	struct fc_clock_probe *skel;
	uint64_t ret;

	skel = fc_clock_probe__open();
	assert_non_null(skel);
	skel->rodata->fc_tick_ns = tick;
	assert_int_equal(fc_clock_probe__load(skel), 0);
	ret = fc_jiffies_utc_ns_probe(bpf_program__fd(skel->progs.fc_clock_probe), 0);
	fc_clock_probe__destroy(skel);
	return ret;
}

/* A tick length that is not the running kernel's gives no constant: the
 * packet path calls the helper rather than run jiffies at the wrong rate.
 * The kernel's own gives one. */
static void test_wrong_tick(void **state)
{
	uint64_t tick = fc_clock_tick_ns();

	(void)state;
	FC_REQUIRE_BPF();
	FC_REQUIRE_TICK();
	assert_int_not_equal(fc_probe_with_tick(tick), 0);
	assert_int_equal(fc_probe_with_tick(tick == 4000000 ? 1000000 : 4000000), 0);
	assert_int_equal(fc_probe_with_tick(0), 0);
}

/* Programs loaded without the tick (fc_tick_ns 0: a loader that does not
 * set it) read the helper's clock, whatever jiffies_utc_ns says. */
static void test_no_tick(void **state)
{
	LIBBPF_OPTS(bpf_object_open_opts, opts);
	struct fc_env *env = *state;
	struct freqctl *own = env->skel, *untold;
	struct fc_config cfg;
	uint64_t utc;

	FC_REQUIRE_BPF();
	FC_REQUIRE_TICK();
	fc_env_ban(env, FC_SRC, 3600);
	opts.pin_root_path = env->pin_dir;
	untold = freqctl__open_opts(&opts);
	assert_non_null(untold);
	assert_int_equal(freqctl__load(untold), 0);
	cfg = fc_cfg(env);
	cfg.jiffies_utc_ns += 3600 * FC_SEC;
	fc_cfg_set(env, &cfg);
	utc = fc_now(CLOCK_REALTIME);
	/* The jiffies form an hour on ends a ban 30 minutes on; the helper's
	 * does not. */
	assert_true(fc_clock_reached(env, false, utc + 1800 * FC_SEC));
	env->skel = untold;
	assert_false(fc_clock_reached(env, false, utc + 1800 * FC_SEC));
	assert_false(fc_clock_reached(env, true, utc + 1800 * FC_SEC));
	env->skel = own;
	freqctl__destroy(untold);
}

/* Bans text in the store alone; the caller publishes. */
static void fc_store_ban(struct fc_env *env, const char *text)
{
	struct fc_ban_row row = { .created = (int64_t)time(NULL) };
	struct fc_err err;

	if (fc_prefix_parse(text, &row.p, &err) < 0 || fc_store_ban_put(env->st, &row, &err) < 0)
		fail_msg("%s", err.msg);
}

/* Publishes a change (a ban on 198.18.7.N, N from 2) over a config whose
 * offset is moved by delta and whose jiffies constant is marked (further
 * behind: as good a constant); returns whether the publish kept both.
 * Retried where the offset read now moves under the publish. */
static bool fc_publish_kept(struct fc_env *env, int64_t delta)
{
	static int n = 2;
	struct fc_config cfg, got;
	char addr[32];
	int tries;

	for (tries = 1;; tries++) {
		uint64_t before = fc_utc_offset_ns();

		cfg = fc_cfg(env);
		cfg.utc_offset_ns = before + (uint64_t)delta;
		cfg.jiffies_utc_ns -= 7;
		fc_cfg_set(env, &cfg);
		snprintf(addr, sizeof(addr), "198.18.7.%d", n++);
		fc_store_ban(env, addr);
		assert_true(fc_env_publish_changes(env));
		got = fc_cfg(env);
		if (fc_utc_offset_ns() != before) {
			if (tries == 5)
				fail_msg("the offset to UTC moved under the test 5 times");
			continue;
		}
		assert_int_not_equal(got.jiffies_utc_ns, 0);
		if (got.utc_offset_ns == cfg.utc_offset_ns && got.jiffies_utc_ns == cfg.jiffies_utc_ns)
			return true;
		assert_int_equal(got.utc_offset_ns, before);
		assert_int_not_equal(got.jiffies_utc_ns, cfg.jiffies_utc_ns);
		return false;
	}
}

/* A publish of changes keeps the last constants while utc_offset_ns holds
 * (the constant holds as long, fc_clock.c), or is a ms behind the offset
 * read now (a read across a ms boundary, which would otherwise flip it),
 * and measures them again where the offset moved: further behind, or
 * ahead, as a step of the wall clock leaves it. */
static void test_publish_keeps(void **state)
{
	struct fc_env *env = *state;

	FC_REQUIRE_BPF();
	FC_REQUIRE_TICK();
	fc_env_ban(env, FC_SRC, 3600);
	assert_true(fc_publish_kept(env, 0));
	assert_true(fc_publish_kept(env, -(int64_t)FC_ROUNDING));
	assert_false(fc_publish_kept(env, -2 * (int64_t)FC_ROUNDING));
	assert_false(fc_publish_kept(env, (int64_t)FC_ROUNDING));
	assert_false(fc_publish_kept(env, 3600 * (int64_t)FC_SEC));
}

/* What a publish writes is the constant measured, a tick less: the one
 * measured in a late tick would put the clock up to a tick ahead of UTC. */
static void test_publish_bias(void **state)
{
	const uint64_t utc_offset_ns = 1000000000ULL * 1800000000ULL;
	uint64_t before, published, after;
	struct timespec res;
	int tries;

	(void)state;
	FC_REQUIRE_BPF();
	FC_REQUIRE_TICK();
	assert_int_equal(clock_getres(CLOCK_MONOTONIC_COARSE, &res), 0);
	/* Retried where a tick moves the distance under the test. */
	for (tries = 0; tries < 20; tries++) {
		before = fc_jiffies_utc_ns_now(utc_offset_ns);
		published = fc_jiffies_utc_ns(utc_offset_ns);
		after = fc_jiffies_utc_ns_now(utc_offset_ns);
		if (before != after)
			continue;
		assert_int_equal(before - published, (uint64_t)res.tv_nsec);
		return;
	}
	fail_msg("the distance moved under the test 20 times");
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, fc_env_setup, fc_env_teardown)
	const struct CMUnitTest tests[] = {
		T(test_jiffies_is_coarse),
		T(test_field_read_and_fallback),
		T(test_ttl_on_utc),
		cmocka_unit_test(test_wrong_tick),
		T(test_no_tick),
		cmocka_unit_test(test_publish_bias),
		T(test_publish_keeps),
	};
#undef T

	return fc_run_group("the clock in the bpf programs", tests, NULL, NULL);
}
