// SPDX-License-Identifier: BSD-2-Clause
/*
 * A change of a GCRA rate on the real programs (BPF_PROG_TEST_RUN), XDP and
 * TC: each bucket keeps the requests it used, rescaled lazily at its next
 * packet to the new interval (maps/fc_limit.h, Changing a rate), for an
 * exact address, a prefix, a source's own ip=* bucket and ip=*'s overflow
 * bucket; lowering never adds room; two changes in a row; nginx's items and
 * the kernel's slots carrying the generation alike. The packet path's
 * clock is set for each step (a publish puts it back to UTC), so the counts
 * are exact: a rate per minute does not move within the ticks a step takes.
 */
#include <fcntl.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include <sys/mman.h>
#include <linux/in.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "fc_shm.h"
#include "fc_test.h"
#include "fc_test_bpf.h"

#define SEC 1000000000ULL
/* The packet path's clock for the steps: 03:00 UTC, 2026-11-22. */
#define T0 (1795316400ULL * SEC)

static int fc_udp(struct fc_env *env, bool tc, const char *src, int n)
{
	struct fc_frame_spec spec = { .src = src, .l4proto = IPPROTO_UDP };

	return fc_env_send(env, tc, &spec, n);
}

/* n frames from src at time at (UTC ns): how many pass. */
static int fc_at(struct fc_env *env, bool tc, uint64_t at, const char *src, int n)
{
	fc_env_clock(env, at);
	return fc_udp(env, tc, src, n);
}

static void fc_both(void **state, void (*body)(struct fc_env *env, bool tc, uint32_t id))
{
	FC_REQUIRE_BPF();
	body(*state, false, 1);
	body(*state, true, 2);
}

/*
 * A client refused at 3/m is admitted right after the rate is raised to
 * 10/m: it used 3 requests (its TAT 60 s ahead, 59 s a second later), which
 * at 10/m lead by 17.7 s of the 60 s burst: 7 more pass at once. Before
 * the rescale it kept its 59 s lead, and 10/m admitted it only 6 s later.
 */
static void fc_raise(struct fc_env *env, bool tc, uint32_t id, const char *match, const char *src)
{
	fc_env_policy(env, id, match, "3/m", "");
	assert_int_equal(fc_at(env, tc, T0, src, 5), 3);
	fc_env_policy(env, id, match, "10/m", "");
	assert_int_equal(fc_at(env, tc, T0 + SEC, src, 10), 7);
	/* Then one each 6 s, as 10/m says. */
	assert_int_equal(fc_at(env, tc, T0 + 7 * SEC, src, 3), 1);
}

static void fc_raise_body(struct fc_env *env, bool tc, uint32_t id)
{
	fc_raise(env, tc, id * 10 + 1, tc ? "ip=198.18.1.2" : "ip=198.18.1.1", tc ? "198.18.1.2" : "198.18.1.1");
	fc_raise(env, tc, id * 10 + 2, tc ? "ip=198.18.3.0/24" : "ip=198.18.2.0/24", tc ? "198.18.3.9" : "198.18.2.9");
	fc_raise(env, tc, id * 10 + 3, tc ? "ip=2001:2:0:2::/64" : "ip=2001:2:0:1::/64",
		 tc ? "2001:2:0:2::5" : "2001:2:0:1::5");
}

static void test_raise_exact_and_prefix(void **state)
{
	fc_both(state, fc_raise_body);
}

/* ip=*: a source's own bucket. */
static void fc_raise_star_body(struct fc_env *env, bool tc, uint32_t id)
{
	fc_raise(env, tc, id, "ip=*", tc ? "198.18.4.2" : "198.18.4.1");
	fc_env_policy_del(env, id);
}

static void test_raise_star(void **state)
{
	fc_both(state, fc_raise_star_body);
}

/*
 * ip=*'s overflow bucket: one new bucket per CPU a second (the CPU pinned),
 * so within a second a second new source shares the overflow bucket, which
 * is rescaled as any.
 */
static void test_raise_star_overflow(void **state)
{
	struct fc_env *env = *state;
	int ncpus = libbpf_num_possible_cpus(), i;
	cpu_set_t one;
	char opts[64];

	FC_REQUIRE_BPF();
	CPU_ZERO(&one);
	CPU_SET(0, &one);
	assert_int_equal(sched_setaffinity(0, sizeof(one), &one), 0);
	snprintf(opts, sizeof(opts), "new_sources=%d", ncpus);
	fc_env_policy(env, 1, "ip=*", "3/m", opts);
	assert_int_equal(fc_at(env, false, T0, "198.18.5.1", 1), 1); /* its own bucket: the second's one */
	assert_int_equal(fc_udp(env, false, "198.18.5.2", 5), 3);     /* the overflow bucket */
	fc_env_policy(env, 1, "ip=*", "10/m", opts);
	assert_int_equal(fc_at(env, false, T0 + SEC, "198.18.5.3", 1), 1); /* the next second's bucket */
	assert_int_equal(fc_udp(env, false, "198.18.5.2", 10), 7);           /* overflow, rescaled */
	CPU_ZERO(&one);
	for (i = 0; i < ncpus; i++)
		CPU_SET(i, &one);
	sched_setaffinity(0, sizeof(one), &one);
}

/*
 * Lowering 10/m to 3/m never adds room: 2 requests used (12 s at 10/m) are
 * 40 s at 3/m, so 1 more passes (a bucket kept as it was let 2 through, its
 * used fraction of the new burst 3 allows 2: never more than that).
 */
static void fc_lower_body(struct fc_env *env, bool tc, uint32_t id)
{
	const char *src = tc ? "198.18.6.2" : "198.18.6.1";

	fc_env_policy(env, id, tc ? "ip=198.18.6.2" : "ip=198.18.6.1", "10/m", "");
	assert_int_equal(fc_at(env, tc, T0, src, 2), 2);
	fc_env_policy(env, id, tc ? "ip=198.18.6.2" : "ip=198.18.6.1", "3/m", "");
	assert_int_equal(fc_at(env, tc, T0, src, 5), 1);
	/* Then one each 20 s (the steps' ticks aside). */
	assert_int_equal(fc_at(env, tc, T0 + 19 * SEC, src, 2), 0);
	assert_int_equal(fc_at(env, tc, T0 + 21 * SEC, src, 2), 1);
}

static void test_lower(void **state)
{
	fc_both(state, fc_lower_body);
}

/*
 * Two changes in a row. With a packet between, each rescales from the one
 * before: 3 used at 3/m (59 s ahead at T0 + 1 s) lead 17.7 s at 10/m, and
 * one more 23.7 s; at T0 + 2 s, 22.7 s at 10/m is 11.35 s at 20/m: 16 more
 * of the 60 s burst (3 s each). Without, the bucket is older than the one
 * generation kept: full (nothing passes) until its TAT, T0 + 60 s, passes;
 * then it is empty and 20/m gives its burst of 20.
 */
static void fc_twice_body(struct fc_env *env, bool tc, uint32_t id)
{
	const char *a = tc ? "198.18.7.2" : "198.18.7.1", *b = tc ? "198.18.8.2" : "198.18.8.1";
	char ma[32], mb[32];

	snprintf(ma, sizeof(ma), "ip=%s", a);
	snprintf(mb, sizeof(mb), "ip=%s", b);
	fc_env_policy(env, id * 10 + 1, ma, "3/m", "");
	fc_env_policy(env, id * 10 + 2, mb, "3/m", "");
	assert_int_equal(fc_at(env, tc, T0, a, 3), 3);
	assert_int_equal(fc_at(env, tc, T0, b, 3), 3);
	fc_env_policy(env, id * 10 + 1, ma, "10/m", "");
	fc_env_policy(env, id * 10 + 2, mb, "10/m", "");
	assert_int_equal(fc_at(env, tc, T0 + SEC, a, 1), 1);
	fc_env_policy(env, id * 10 + 1, ma, "20/m", "");
	fc_env_policy(env, id * 10 + 2, mb, "20/m", "");
	assert_int_equal(fc_at(env, tc, T0 + 2 * SEC, a, 20), 16);
	assert_int_equal(fc_at(env, tc, T0 + 2 * SEC, b, 5), 0);
	assert_int_equal(fc_at(env, tc, T0 + 59 * SEC, b, 5), 0);
	assert_int_equal(fc_at(env, tc, T0 + 60 * SEC, b, 25), 20);
}

static void test_two_changes(void **state)
{
	fc_both(state, fc_twice_body);
}

/*
 * A publish that changes no interval (a ban, another policy, the burst
 * alone, a full sync) keeps the generation: a bucket charged before it and
 * not since is still rescaled from the limits before the change.
 */
static void test_keeps_generation(void **state)
{
	struct fc_env *env = *state;

	FC_REQUIRE_BPF();
	fc_env_policy(env, 1, "ip=198.18.9.1", "3/m", "");
	assert_int_equal(fc_at(env, false, T0, "198.18.9.1", 3), 3);
	fc_env_policy(env, 1, "ip=198.18.9.1", "10/m", "");
	fc_env_ban(env, "198.18.10.0/24", 0);
	fc_env_policy(env, 2, "ip=198.18.11.1", "1/s", "");
	fc_env_sync(env);
	assert_int_equal(fc_at(env, false, T0 + SEC, "198.18.9.1", 10), 7);
}

/*
 * Lowering the burst alone: the requests used stay, so a bucket whose lead
 * is past the new burst (more than full) admits nothing until it fits, and
 * is not taken for a clock stepped back (which would start it afresh).
 */
static void test_lower_burst(void **state)
{
	struct fc_env *env = *state;

	FC_REQUIRE_BPF();
	fc_env_policy(env, 1, "ip=198.18.12.1", "1/s", "burst=100");
	assert_int_equal(fc_at(env, false, T0, "198.18.12.1", 100), 100); /* 100 s ahead */
	fc_env_policy(env, 1, "ip=198.18.12.1", "1/s", "burst=2");
	assert_int_equal(fc_at(env, false, T0 + SEC, "198.18.12.1", 5), 0);
	assert_int_equal(fc_at(env, false, T0 + 97 * SEC, "198.18.12.1", 5), 0);
	assert_int_equal(fc_at(env, false, T0 + 99 * SEC, "198.18.12.1", 5), 1);
}

/* The live shm block's item of policy id (its fixed part), or fail. */
static struct fc_shm_policy fc_shm_item(struct fc_env *env, uint32_t id)
{
	const struct fc_shm_header *h;
	const struct fc_shm_block *blk;
	struct fc_shm_policy it;
	const uint8_t *p, *end;
	void *base;
	int fd;

	fd = open(env->shm, O_RDONLY);
	assert_true(fd >= 0);
	base = mmap(NULL, FC_SHM_SIZE, PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	assert_true(base != MAP_FAILED);
	h = base;
	blk = (const struct fc_shm_block *)((const uint8_t *)base + FC_SHM_BLOCK_OFF(h->active));
	for (p = (const uint8_t *)(blk + 1), end = p + blk->used; end - p >= (long)sizeof(it); p += it.item.len) {
		memcpy(&it, p, sizeof(it));
		assert_true(it.item.len >= sizeof(it));
		if (it.id == id) {
			munmap(base, FC_SHM_SIZE);
			return it;
		}
	}
	fail_msg("policy %u: no item in the live block", id);
	return it;
}

/*
 * nginx's item carries the generation as the kernel's slot does, from what
 * was published: moved on by a change of rates published alone (a publish
 * of what changed, spliced into the live block), kept by a publish of
 * anything else and by a whole one (which, fc_env_publish checks, writes
 * nothing the change did not).
 */
static void test_shm_generations(void **state)
{
	struct fc_env *env = *state;
	struct fc_shm_policy it;
	struct fc_policy k;
	__u32 slot;

	FC_REQUIRE_BPF();
	fc_env_policy(env, 1, "uid=*", "3/m", "");
	fc_env_policy(env, 2, "ip=198.18.13.1", "3/m", "");
	it = fc_shm_item(env, 1);
	assert_int_equal(it.gen, FC_GEN_GCRA);
	fc_env_policy(env, 1, "uid=*", "10/m", "");
	fc_env_policy(env, 2, "ip=198.18.13.1", "10/m", "");
	it = fc_shm_item(env, 1);
	assert_int_equal(it.gen, 1 | FC_GEN_GCRA);
	assert_int_equal(it.rescale[0], FC_RESCALE(FC_RESCALE_SCALE, 3, 10));
	fc_env_ban(env, "198.18.14.0/24", 0);
	fc_env_policy(env, 3, "uid=u3", "1/s", "");
	fc_env_sync(env);
	it = fc_shm_item(env, 1);
	assert_int_equal(it.gen, 1 | FC_GEN_GCRA);
	assert_int_equal(it.rescale[0], FC_RESCALE(FC_RESCALE_SCALE, 3, 10));
	/* The kernel's slot of policy 2, the same way. */
	for (slot = 1; slot <= 3; slot++) {
		assert_int_equal(bpf_map_lookup_elem(env->maps.policies, &slot, &k), 0);
		if (k.id != 2)
			continue;
		assert_int_equal(k.lim.gen, 1 | FC_GEN_GCRA);
		assert_int_equal(k.lim.rescale[0], FC_RESCALE(FC_RESCALE_SCALE, 3, 10));
	}
	/* The burst alone: a generation on, the words as they are. */
	fc_env_policy(env, 1, "uid=*", "10/m", "burst=5");
	it = fc_shm_item(env, 1);
	assert_int_equal(it.gen, 2 | FC_GEN_GCRA);
	assert_int_equal(it.rescale[0], FC_RESCALE_SAME);
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, fc_env_setup, fc_env_teardown)
	const struct CMUnitTest tests[] = {
		T(test_raise_exact_and_prefix),
		T(test_raise_star),
		T(test_raise_star_overflow),
		T(test_lower),
		T(test_two_changes),
		T(test_keeps_generation),
		T(test_lower_burst),
		T(test_shm_generations),
	};
#undef T

	return fc_run_group("a rate changed in the bpf programs: buckets rescaled (BPF_PROG_TEST_RUN)", tests, NULL,
			    NULL);
}
