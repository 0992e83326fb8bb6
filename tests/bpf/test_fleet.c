// SPDX-License-Identifier: BSD-2-Clause
/*
 * Fleet policies at XDP/TC on the real programs (BPF_PROG_TEST_RUN): the
 * bucket of a fixed-value policy mapped by the agent (fc_buckets is
 * BPF_F_MMAPABLE) and changed in place by compare-and-exchange, as the
 * packet path sees it at its next frame.
 */
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>
#include <sys/mman.h>
#include <linux/in.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "fc_clock.h"
#include "fc_fleet.h"
#include "fc_publish.h"
#include "fc_shm.h"
#include "fc_test.h"
#include "fc_test_bpf.h"

#define SEC 1000000000ULL
/* The packet path's clock: 03:00 UTC, 2026-11-22, aligned to every unit. */
#define T0 (1795316400ULL * SEC)

static int fc_udp(struct fc_env *env, bool tc, const char *src, int n)
{
	struct fc_frame_spec spec = { .src = src, .l4proto = IPPROTO_UDP };

	return fc_env_send(env, tc, &spec, n);
}

static uint32_t fc_slot_of(struct fc_env *env, uint32_t id)
{
	struct fc_policy_row row;
	struct fc_err err;
	bool found;

	if (fc_store_policy_get(env->st, id, &row, &found, &err) < 0 || !found)
		fail_msg("policy %u: %s", id, found ? err.msg : "not found");
	return row.slot;
}

/* fc_buckets, mapped shared as the agent maps it; munmap with fc_buckets_unmap. */
static struct fc_bucket *fc_buckets_map(struct fc_env *env)
{
	void *p = mmap(NULL, FC_POLICY_SLOTS * sizeof(struct fc_bucket), PROT_READ | PROT_WRITE, MAP_SHARED,
		       env->maps.buckets, 0);

	if (p == MAP_FAILED)
		fail_msg("mmap of fc_buckets: %s", strerror(errno));
	return p;
}

static void fc_buckets_unmap(struct fc_bucket *b)
{
	munmap(b, FC_POLICY_SLOTS * sizeof(struct fc_bucket));
}

/* A window word written through the mapping is the packet path's: credit
 * locked there (the count raised by CAS) is refused at the next frame, and
 * what the packet path charges shows in the mapping at once. */
static void fc_mmap_body(struct fc_env *env, bool tc, uint32_t id)
{
	const char *src = tc ? "198.18.5.2" : "198.18.5.1";
	struct fc_bucket *b = fc_buckets_map(env);
	__u64 w = T0 / (60 * SEC), word;
	uint32_t slot;
	char match[32];

	snprintf(match, sizeof(match), "ip=%s", src);
	fc_env_policy(env, id, match, "10/m", "algo=window");
	slot = fc_slot_of(env, id);
	fc_env_clock(env, T0 + SEC);
	assert_int_equal(fc_udp(env, tc, src, 2), 2);
	word = __atomic_load_n(&b[slot].state[0], __ATOMIC_SEQ_CST);
	assert_int_equal(word >> FC_WIN_COUNT_BITS, w & FC_WIN_IDX_MASK);
	assert_int_equal(word & FC_WIN_COUNT_MASK, 2);
	/* 5 more taken in place: 3 of the 10 are left. */
	assert_true(__sync_bool_compare_and_swap(&b[slot].state[0], word, word + 5));
	assert_int_equal(fc_udp(env, tc, src, 10), 3);
	assert_int_equal(__atomic_load_n(&b[slot].state[0], __ATOMIC_SEQ_CST) & FC_WIN_COUNT_MASK, 10);
	fc_buckets_unmap(b);
}

static void test_buckets_mmap(void **state)
{
	FC_REQUIRE_BPF();
	fc_mmap_body(*state, false, 1);
	fc_mmap_body(*state, true, 2);
}

/* A test per program, each with maps of its own: a later publish would
 * put back the slots written by hand below. */
#define FC_BOTH(name, body)                  \
	static void name##_xdp(void **state) \
	{                                    \
		FC_REQUIRE_BPF();            \
		body(*state, false, 1);      \
	}                                    \
	static void name##_tc(void **state)  \
	{                                    \
		FC_REQUIRE_BPF();            \
		body(*state, true, 2);       \
	}
/* The policy of id as the loader would publish it with --fleet: its slot
 * rewritten by hand (fleet algorithm, this node's shares per split, the
 * second split's first window from, the GCRA lease window), so that the
 * packet path's words are tested at any shares and times. */
static uint32_t fc_fleet_policy(struct fc_env *env, uint32_t id, const char *match, const char *rates,
				const char *opts, __u8 algo, __u64 share0, __u64 share1, __u64 from)
{
	struct fc_config cfg;
	struct fc_policy pol;
	struct fc_err err;
	uint32_t slot;

	fc_env_policy(env, id, match, rates, opts);
	slot = fc_slot_of(env, id);
	assert_int_equal(bpf_map_lookup_elem(env->maps.policies, &slot, &pol), 0);
	pol.algo = algo;
	pol.flags |= FC_POLICY_FLEET;
	memset(pol.lim.rescale, 0, sizeof(pol.lim.rescale));
	pol.lim.gen = 0;
	pol.fleet_share[0] = share0;
	pol.fleet_share[1] = share1;
	pol.fleet_from = from;
	pol.fleet_lease_ns = algo == FC_ALGO_FLEET_GCRA ? 200 * 1000000ULL : 0;
	assert_int_equal(bpf_map_update_elem(env->maps.policies, &slot, &pol, BPF_ANY), 0);
	/* Maps made long before T0: the fresh rule withholds no share. */
	assert_int_equal(fc_config_read(&env->maps, &cfg, &err), 0);
	cfg.fleet_fresh_ns = T0 - 3600 * SEC;
	assert_int_equal(fc_config_write(&env->maps, &cfg, &err), 0);
	return slot;
}

/* Window N = 10/m for the fleet, this node's share 4: 4 of 10 pass, the
 * refusal flags the window's demand; the agent's grant of 3 (a top-up in
 * place) passes 3 more; the next window rolls over to the share again; a
 * clock stepped back into the window left refuses (never reopened). */
static void fc_window_body(struct fc_env *env, bool tc, uint32_t id)
{
	const char *src = tc ? "198.18.6.2" : "198.18.6.1";
	struct fc_bucket *b = fc_buckets_map(env);
	__u64 w = T0 / (60 * SEC);
	uint32_t slot;
	char match[32];

	snprintf(match, sizeof(match), "ip=%s", src);
	slot = fc_fleet_policy(env, id, match, "10/m", "algo=window", FC_ALGO_FLEET_WINDOW, 4, 4, FC_FLEET_NEVER);
	fc_env_clock(env, T0 + SEC);
	assert_int_equal(fc_udp(env, tc, src, 10), 4);
	assert_int_equal(b[slot].state[0], FC_FLEET_WORD(w, 0));
	assert_true(fc_fleet_wanted(b[slot].state[1], w));
	assert_int_equal(fc_fleet_topup(&b[slot].state[0], w, 3, 4), FC_FLEET_DONE);
	assert_int_equal(fc_udp(env, tc, src, 10), 3);
	assert_int_equal(fc_env_pstats(env, id).passed.packets, 7);
	assert_int_equal(fc_env_pstats(env, id).dropped.packets, 13);
	fc_env_clock(env, T0 + 61 * SEC);
	assert_int_equal(fc_udp(env, tc, src, 10), 4);
	assert_int_equal(b[slot].state[0], FC_FLEET_WORD(w + 1, 0));
	assert_true(fc_fleet_wanted(b[slot].state[1], w + 1));
	fc_env_clock(env, T0 + 59 * SEC);
	assert_int_equal(fc_fleet_topup(&b[slot].state[0], w + 1, 2, 4), FC_FLEET_DONE);
	assert_int_equal(fc_udp(env, tc, src, 3), 0);
	fc_buckets_unmap(b);
}

FC_BOTH(test_window, fc_window_body)

/* The node set changes from window w + 1 (the second split): 4 in w, 7
 * from w + 1 on; a prefix policy the same. */
static void fc_split_body(struct fc_env *env, bool tc, uint32_t id)
{
	const char *src = tc ? "198.18.7.130" : "198.18.7.2";
	__u64 w = T0 / (60 * SEC);

	fc_fleet_policy(env, id, tc ? "ip=198.18.7.128/25" : "ip=198.18.7.0/25", "10/m", "algo=window",
			FC_ALGO_FLEET_WINDOW, 4, 7, w + 1);
	fc_env_clock(env, T0 + SEC);
	assert_int_equal(fc_udp(env, tc, src, 10), 4);
	fc_env_clock(env, T0 + 61 * SEC);
	assert_int_equal(fc_udp(env, tc, src, 10), 7);
	fc_env_clock(env, T0 + 121 * SEC);
	assert_int_equal(fc_udp(env, tc, src, 10), 7);
}

FC_BOTH(test_split, fc_split_body)

/* Maps made anew mid-window (fc_config.fleet_fresh_ns) take no share of
 * that window: refused, demand flagged; the next window has its share. */
static void fc_fresh_body(struct fc_env *env, bool tc, uint32_t id)
{
	const char *src = tc ? "198.18.8.2" : "198.18.8.1";
	struct fc_bucket *b = fc_buckets_map(env);
	__u64 w = T0 / (60 * SEC);
	struct fc_config cfg;
	struct fc_err err;
	uint32_t slot;
	char match[32];

	snprintf(match, sizeof(match), "ip=%s", src);
	slot = fc_fleet_policy(env, id, match, "10/m", "algo=window", FC_ALGO_FLEET_WINDOW, 5, 5, FC_FLEET_NEVER);
	assert_int_equal(fc_config_read(&env->maps, &cfg, &err), 0);
	cfg.fleet_fresh_ns = T0 + 30 * SEC;
	assert_int_equal(fc_config_write(&env->maps, &cfg, &err), 0);
	fc_env_clock(env, T0 + 40 * SEC);
	assert_int_equal(fc_udp(env, tc, src, 5), 0);
	assert_true(fc_fleet_wanted(b[slot].state[1], w));
	/* what the agent grants it is spent */
	assert_int_equal(fc_fleet_topup(&b[slot].state[0], w, 2, 0), FC_FLEET_DONE);
	assert_int_equal(fc_udp(env, tc, src, 5), 2);
	fc_env_clock(env, T0 + 60 * SEC);
	assert_int_equal(fc_udp(env, tc, src, 10), 5);
	fc_buckets_unmap(b);
}

FC_BOTH(test_fresh, fc_fresh_body)

/* A fleet address inside a prefix policy that refuses: the fleet credit
 * each refused frame took is given back (all policies or none). */
static void fc_refund_body(struct fc_env *env, bool tc, uint32_t id)
{
	const char *src = tc ? "198.18.9.130" : "198.18.9.2";
	struct fc_bucket *b = fc_buckets_map(env);
	__u64 w = T0 / (60 * SEC);
	uint32_t slot;
	char match[32];

	fc_env_policy(env, id * 10, tc ? "ip=198.18.9.128/25" : "ip=198.18.9.0/25", "2/m", "algo=window");
	snprintf(match, sizeof(match), "ip=%s", src);
	slot = fc_fleet_policy(env, id, match, "10/m", "algo=window", FC_ALGO_FLEET_WINDOW, 6, 6, FC_FLEET_NEVER);
	fc_env_clock(env, T0 + SEC);
	assert_int_equal(fc_udp(env, tc, src, 5), 2);
	assert_int_equal(b[slot].state[0], FC_FLEET_WORD(w, 4));
	fc_buckets_unmap(b);
}

FC_BOTH(test_refund, fc_refund_body)

/* Sliding, share 6 of 6/m: 6 pass in w; 30 s into w + 1, the 6 of w
 * weigh half: 3 more pass (6 * 30 + 3 * 60 <= 6 * 60). */
static void fc_sliding_body(struct fc_env *env, bool tc, uint32_t id)
{
	const char *src = tc ? "198.18.10.2" : "198.18.10.1";
	char match[32];

	snprintf(match, sizeof(match), "ip=%s", src);
	fc_fleet_policy(env, id, match, "6/m", "algo=sliding", FC_ALGO_FLEET_SLIDING, 6, 6, FC_FLEET_NEVER);
	fc_env_clock(env, T0 + SEC);
	assert_int_equal(fc_udp(env, tc, src, 10), 6);
	fc_env_clock(env, T0 + 90 * SEC);
	assert_int_equal(fc_udp(env, tc, src, 10), 3);
}

FC_BOTH(test_sliding, fc_sliding_body)

/* GCRA: the node's bucket (its tier: T_i, tau_i) passes its burst of 2;
 * then only lease credit of the current lease window (200 ms) pays: a
 * grant of 3 passes 3, and lapses with its lease window. */
static void fc_gcra_body(struct fc_env *env, bool tc, uint32_t id)
{
	const char *src = tc ? "198.18.11.2" : "198.18.11.1";
	struct fc_bucket *b = fc_buckets_map(env);
	__u64 lw = (T0 + SEC) / (200 * 1000000ULL);
	uint32_t slot;
	char match[32];

	snprintf(match, sizeof(match), "ip=%s", src);
	slot = fc_fleet_policy(env, id, match, "1/m", "burst=2", FC_ALGO_FLEET_GCRA, 2, 2, FC_FLEET_NEVER);
	fc_env_clock(env, T0 + SEC);
	assert_int_equal(fc_udp(env, tc, src, 5), 2);
	assert_true(fc_fleet_wanted(b[slot].state[1], lw));
	assert_int_equal(fc_fleet_topup(&b[slot].state[2], lw, 3, 0), FC_FLEET_DONE);
	assert_int_equal(fc_udp(env, tc, src, 5), 3);
	assert_int_equal(fc_fleet_topup(&b[slot].state[2], lw, 3, 0), FC_FLEET_DONE);
	fc_env_clock(env, T0 + 2 * SEC);
	assert_int_equal(fc_udp(env, tc, src, 5), 0);
	fc_buckets_unmap(b);
}

FC_BOTH(test_gcra, fc_gcra_body)

/* Publishes the store (everything) as the agent does with --clock-offset
 * shift_ns. */
static void fc_publish_shifted(struct fc_env *env, int64_t shift_ns)
{
	struct fc_ctx ctx = fc_env_ctx(env);
	struct fc_publish pub;
	struct fc_err err;

	ctx.fleet_clock_ns = shift_ns;
	ctx.fleet_clock_given = true;
	if (fc_publish_begin_on(&pub, &ctx, env->st, &err) < 0 || (pub.full = true, fc_publish_commit(&pub, &err) < 0))
		fail_msg("publish: %s", err.msg);
}

static uint64_t fc_utc_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * SEC + (uint64_t)ts.tv_nsec;
}

/* The first publish to maps made anew says when (fc_config.fleet_fresh_ns);
 * later ones keep it. */
static void test_fresh_published(void **state)
{
	struct fc_env *env = *state;
	struct fc_config cfg;
	struct fc_err err;
	uint64_t now, fresh;

	FC_REQUIRE_BPF();
	now = fc_utc_ns();
	fc_env_sync(env);
	assert_int_equal(fc_config_read(&env->maps, &cfg, &err), 0);
	fresh = cfg.fleet_fresh_ns;
	assert_true(fresh && fresh <= fc_utc_ns() && fresh + 60 * SEC > now);
	usleep(10000);
	fc_env_policy(env, 1, "ip=198.18.13.1", "10/m", "algo=window fleet=1");
	fc_env_sync(env);
	assert_int_equal(fc_config_read(&env->maps, &cfg, &err), 0);
	assert_int_equal(cfg.fleet_fresh_ns, fresh);
}

/* Whether a is b + d, to within 20 ms (a clock measured twice). */
static bool fc_near(uint64_t a, uint64_t b, int64_t d)
{
	int64_t x = (int64_t)(a - b) - d;

	return x > -20000000 && x < 20000000;
}

/* --clock-offset shifts the packet path's clock (both forms) and says so
 * in nginx's header; a publish without it puts them back. */
static void test_clock_shift(void **state)
{
	struct fc_env *env = *state;
	const struct fc_shm_header *h;
	struct fc_config cfg0, cfg;
	struct fc_err err;
	int fd;

	FC_REQUIRE_BPF();
	fc_publish_shifted(env, 0);
	assert_int_equal(fc_config_read(&env->maps, &cfg0, &err), 0);
	fc_publish_shifted(env, 5 * (int64_t)SEC);
	assert_int_equal(fc_config_read(&env->maps, &cfg, &err), 0);
	assert_true(fc_near(cfg.utc_offset_ns, cfg0.utc_offset_ns, 5 * (int64_t)SEC));
	assert_true(!cfg0.jiffies_utc_ns || fc_near(cfg.jiffies_utc_ns, cfg0.jiffies_utc_ns, 5 * (int64_t)SEC));
	fd = open(env->shm, O_RDONLY);
	assert_true(fd >= 0);
	h = mmap(NULL, sizeof(*h), PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	assert_true(h != MAP_FAILED);
	assert_int_equal(h->fleet_clock_ns, 5 * (int64_t)SEC);
	fc_publish_shifted(env, 0);
	assert_int_equal(fc_config_read(&env->maps, &cfg, &err), 0);
	assert_true(fc_near(cfg.utc_offset_ns, cfg0.utc_offset_ns, 0));
	assert_int_equal(h->fleet_clock_ns, 0);
	munmap((void *)h, sizeof(*h));
}

/* ip=ADDR 10/m --fleet published from the store, this node one of four of
 * weight 0.25: its share is 2 or 3 (10 = 4 x 2 + 2 dealt by the key's
 * point), none in the window the maps were made in (the fresh rule: it
 * refuses and flags its demand), all of it in the next. */
static void fc_published_body(struct fc_env *env, bool tc, uint32_t id)
{
	const char *src = tc ? "198.18.14.2" : "198.18.14.1", *names[] = { "test", "n2", "n3", "n4" };
	struct fc_bucket *b = fc_buckets_map(env);
	int64_t long_ago = (int64_t)(fc_utc_ns() / 1000000) - 2 * 86400000;
	__u64 w = fc_utc_ns() / (60 * SEC);
	struct fc_policy pol;
	struct fc_err err;
	uint32_t slot;
	char match[32];
	size_t i;

	for (i = 0; i < 4; i++)
		if (fc_store_fleet_node_set(env->st, names[i], 250000, long_ago, &err) < 0)
			fail_msg("%s", err.msg);
	snprintf(match, sizeof(match), "ip=%s", src);
	fc_env_policy(env, id, match, "10/m", "algo=window fleet=1");
	slot = fc_slot_of(env, id);
	assert_int_equal(bpf_map_lookup_elem(env->maps.policies, &slot, &pol), 0);
	assert_int_equal(pol.algo, FC_ALGO_FLEET_WINDOW);
	assert_true(pol.flags & FC_POLICY_FLEET);
	assert_int_equal(pol.tier[0].limit, 10);
	assert_true(pol.fleet_share[0] == 2 || pol.fleet_share[0] == 3);
	assert_int_equal(pol.fleet_from, FC_FLEET_NEVER);
	if (fc_utc_ns() / (60 * SEC) != w)
		skip(); /* a minute turned meanwhile: the fresh rule's window is gone */
	assert_int_equal(fc_udp(env, tc, src, 5), 0);
	assert_true(fc_fleet_wanted(b[slot].state[1], w));
	fc_env_clock(env, (w + 1) * 60 * SEC + SEC);
	assert_int_equal(fc_udp(env, tc, src, 10), (int)pol.fleet_share[0]);
	fc_buckets_unmap(b);
}

FC_BOTH(test_published, fc_published_body)

/* Frames raced from every CPU (XDP and TC alternating) on one fleet
 * window, while the agent grants and locks credit through the mapping:
 * what passes is exactly the share, plus what was granted, less what was
 * locked and what is left: no credit lost or made twice. */
struct fc_fleet_racer {
	struct fc_env *env;
	int cpu;
	bool tc;
	int passed;
	int *finished; /* racers done, shared */
};

static void *fc_fleet_race(void *arg)
{
	struct fc_fleet_racer *r = arg;
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(r->cpu, &set);
	pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
	r->passed = fc_udp(r->env, r->tc, "198.18.15.1", 4000);
	__atomic_fetch_add(r->finished, 1, __ATOMIC_SEQ_CST);
	return NULL;
}

static void test_race_agent(void **state)
{
	struct fc_env *env = *state;
	int ncpus = libbpf_num_possible_cpus(), i, n = ncpus < 2 ? 2 : ncpus > 8 ? 8 : ncpus, finished = 0;
	uint64_t total = 0, granted = 0, locked = 0, left;
	__u64 w = T0 / (3600 * SEC);
	struct fc_fleet_racer r[8];
	struct fc_bucket *b;
	pthread_t th[8];
	uint32_t slot;

	FC_REQUIRE_BPF();
	b = fc_buckets_map(env);
	slot = fc_fleet_policy(env, 1, "ip=198.18.15.1", "100000/h", "algo=window", FC_ALGO_FLEET_WINDOW, 3000, 3000,
			       FC_FLEET_NEVER);
	fc_env_clock(env, T0 + SEC);
	for (i = 0; i < n; i++) {
		r[i] = (struct fc_fleet_racer){ .env = env, .cpu = i % ncpus, .tc = i % 2, .finished = &finished };
		assert_int_equal(pthread_create(&th[i], NULL, fc_fleet_race, &r[i]), 0);
	}
	/* The agent, as its round does: grants of 10, locks of 5 (refused
	 * where the credit is short), while the frames run. */
	for (i = 0; i < 4000 && __atomic_load_n(&finished, __ATOMIC_SEQ_CST) < n; i++) {
		if (fc_fleet_topup(&b[slot].state[0], w, 10, 3000) == FC_FLEET_DONE)
			granted += 10;
		if (fc_fleet_lock(&b[slot].state[0], w, 5, 3000) == FC_FLEET_DONE)
			locked += 5;
		usleep(50);
	}
	for (i = 0; i < n; i++) {
		pthread_join(th[i], NULL);
		total += (uint64_t)r[i].passed;
	}
	left = fc_fleet_credit(b[slot].state[0], w);
	print_message("# %d racers: %" PRIu64 " passed, granted %" PRIu64 ", locked %" PRIu64 ", left %" PRIu64 "\n", n,
		      total, granted, locked, left);
	assert_true(granted > 0 && locked > 0);
	assert_int_equal(total, 3000 + granted - locked - left);
	assert_int_equal(fc_env_pstats(env, 1).passed.packets, total);
	fc_buckets_unmap(b);
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, fc_env_setup, fc_env_teardown)
	const struct CMUnitTest tests[] = {
		T(test_buckets_mmap),
		T(test_window_xdp),
		T(test_window_tc),
		T(test_split_xdp),
		T(test_split_tc),
		T(test_fresh_xdp),
		T(test_fresh_tc),
		T(test_refund_xdp),
		T(test_refund_tc),
		T(test_sliding_xdp),
		T(test_sliding_tc),
		T(test_gcra_xdp),
		T(test_gcra_tc),
		T(test_fresh_published),
		T(test_clock_shift),
		T(test_published_xdp),
		T(test_published_tc),
		T(test_race_agent),
	};
#undef T

	return fc_run_group("fleet policies in the bpf programs (BPF_PROG_TEST_RUN)", tests, NULL, NULL);
}
