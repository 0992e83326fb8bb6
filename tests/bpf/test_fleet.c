// SPDX-License-Identifier: BSD-2-Clause
/*
 * Fleet policies at XDP/TC on the real programs (BPF_PROG_TEST_RUN): the
 * bucket of a fixed-value policy mapped by the agent (fc_buckets is
 * BPF_F_MMAPABLE) and changed in place by compare-and-exchange, as the
 * packet path sees it at its next frame.
 */
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

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, fc_env_setup, fc_env_teardown)
	const struct CMUnitTest tests[] = {
		T(test_buckets_mmap),
	};
#undef T

	return fc_run_group("fleet policies in the bpf programs (BPF_PROG_TEST_RUN)", tests, NULL, NULL);
}
