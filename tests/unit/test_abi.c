// SPDX-License-Identifier: BSD-2-Clause
/*
 * The ABI's single definitions against what is built from them: the maps the
 * BPF object pins against FC_MAPS, and the store's slot CHECK against
 * FC_MAX_POLICIES. (Struct sizes and offsets are _Static_asserts in maps/:
 * they fail the build, not a test.) No root needed: the object is only
 * opened, never loaded.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>
#include <bpf/libbpf.h>

#include "fc_db.h"
#include "fc_kern.h"
#include "freqctl.skel.h"

static void test_pinned_maps_are_fc_maps(void **state)
{
	LIBBPF_OPTS(bpf_object_open_opts, opts, .pin_root_path = "/sys/fs/bpf/fc-test-abi-unused");
	struct freqctl *skel = freqctl__open_opts(&opts);
	struct fc_err err = { 0 };
	size_t i;

	(void)state;
	assert_non_null(skel);
	if (fc_maps_match(skel->obj, &err) < 0)
		fail_msg("%s", err.msg);
	for (i = 0; i < FC_NMAPS; i++)
		assert_non_null(bpf_object__find_map_by_name(skel->obj, fc_map_names[i]));
	/* The struct's named fds and its array are one and the same. */
	assert_int_equal(offsetof(struct fc_maps, exact4), offsetof(struct fc_maps, fd[FC_MAP_IDX_exact4]));
	assert_int_equal(offsetof(struct fc_maps, flood), offsetof(struct fc_maps, fd[FC_MAP_IDX_flood]));
	assert_string_equal(fc_map_names[FC_MAP_IDX_pstats], "fc_pstats");
	freqctl__destroy(skel);
}

static void test_sql_slot_check(void **state)
{
	char want[64];

	(void)state;
	snprintf(want, sizeof(want), "CHECK (slot BETWEEN 1 AND %d)", FC_MAX_POLICIES);
	assert_string_equal(FC_SQL_SLOT_CHECK, want);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pinned_maps_are_fc_maps),
		cmocka_unit_test(test_sql_slot_check),
	};

	return cmocka_run_group_tests_name("ABI: one definition each", tests, NULL, NULL);
}
