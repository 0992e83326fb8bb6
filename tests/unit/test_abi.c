// SPDX-License-Identifier: BSD-2-Clause
/*
 * The ABI's single definitions against what is built from them: the maps the
 * BPF object pins against FC_MAPS, and the store's slot CHECK against
 * FC_MAX_POLICIES, the BTF that bpftool map dump prints (field names where
 * the loader puts them). (Struct sizes and offsets are _Static_asserts in maps/:
 * they fail the build, not a test.) No root needed: the object is only
 * opened, never loaded.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "fc_db.h"
#include "fc_kern.h"
#include "fc_test.h"
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
	assert_string_equal(fc_map_names[FC_MAP_IDX_setstats], "fc_setstats");
	assert_int_equal(FC_MAP_IDX_setstats, FC_NMAPS - 1);
	freqctl__destroy(skel);
}

/* The member name of struct name at byte off in the object's BTF (of an
 * anonymous union there, its first member's). */
static const char *fc_btf_member_at(const struct btf *btf, const char *name, size_t off)
{
	const struct btf_type *t = btf__type_by_id(btf, (__u32)btf__find_by_name_kind(btf, name, BTF_KIND_STRUCT));
	const struct btf_member *m = btf_members(t);
	const struct btf_type *u;
	__u16 i;

	for (i = 0; i < btf_vlen(t); i++, m++) {
		if (btf_member_bit_offset(t, i) != off * 8)
			continue;
		u = btf__type_by_id(btf, m->type);
		if (!m->name_off && btf_is_union(u))
			return btf__name_by_offset(btf, btf_members(u)->name_off);
		return btf__name_by_offset(btf, m->name_off);
	}
	return "";
}

/* What bpftool map dump shows of fc_config and fc_rule is the loader's
 * layout, named: the publish marks and the IPv6 lengths (one struct, both
 * branches' fields). */
static void test_btf_names(void **state)
{
	LIBBPF_OPTS(bpf_object_open_opts, opts, .pin_root_path = "/sys/fs/bpf/fc-test-abi-unused");
	struct freqctl *skel = freqctl__open_opts(&opts);
	const struct btf *btf;

	(void)state;
	assert_non_null(skel);
	btf = bpf_object__btf(skel->obj);
	assert_non_null(btf);
	assert_string_equal(fc_btf_member_at(btf, "fc_config", offsetof(struct fc_config, store_id)), "store_id");
	assert_string_equal(fc_btf_member_at(btf, "fc_config", offsetof(struct fc_config, store_seq)), "store_seq");
	assert_string_equal(fc_btf_member_at(btf, "fc_config", offsetof(struct fc_config, lens6)), "lens6");
	assert_string_equal(fc_btf_member_at(btf, "fc_config", offsetof(struct fc_config, n_marks6)), "n_marks6");
	assert_string_equal(fc_btf_member_at(btf, "fc_config", offsetof(struct fc_config, n_top4)), "n_top4");
	assert_string_equal(fc_btf_member_at(btf, "fc_config", offsetof(struct fc_config, pfx6_tree)), "pfx6_tree");
	assert_string_equal(fc_btf_member_at(btf, "fc_config", offsetof(struct fc_config, carry4_gen)), "carry4_gen");
	assert_string_equal(fc_btf_member_at(btf, "fc_config", offsetof(struct fc_config, jiffies_utc_ns)),
			    "jiffies_utc_ns");
	assert_string_equal(fc_btf_member_at(btf, "fc_rule", offsetof(struct fc_rule, flags)), "flags");
	assert_string_equal(fc_btf_member_at(btf, "fc_rule", offsetof(struct fc_rule, allow_expires_ns)),
			    "allow_expires_ns");
	assert_int_equal(btf__resolve_size(btf, btf__find_by_name_kind(btf, "fc_rule", BTF_KIND_STRUCT)),
			 sizeof(struct fc_rule));
	assert_int_equal(btf__resolve_size(btf, btf__find_by_name_kind(btf, "fc_top4", BTF_KIND_STRUCT)),
			 sizeof(struct fc_top4));
	assert_int_equal(btf__resolve_size(btf, btf__find_by_name_kind(btf, "fc_config", BTF_KIND_STRUCT)),
			 sizeof(struct fc_config));
	freqctl__destroy(skel);
}

/* A ban set's index in fc_rule.flags: every id fits, none touches a flag
 * (FC_RULE_ALLOWED, main's, among them). */
static void test_rule_set_bits(void **state)
{
	const __u32 flags = FC_RULE_BANNED | FC_RULE_LONGER | FC_RULE_MARKER | FC_RULE_ALLOWED;

	(void)state;
	assert_int_equal(FC_RULE_SET((__u32)FC_MAX_SETS << FC_RULE_SET_SHIFT), FC_MAX_SETS);
	assert_int_equal(((__u32)FC_MAX_SETS << FC_RULE_SET_SHIFT) & flags, 0);
	assert_int_equal(FC_RULE_SET(flags), 0);
}

static void test_sql_slot_check(void **state)
{
	char want[64];

	(void)state;
	snprintf(want, sizeof(want), "CHECK (slot BETWEEN 1 AND %d)", FC_MAX_POLICIES);
	assert_string_equal(FC_SQL_SLOT_CHECK, want);
	snprintf(want, sizeof(want), "%d", FC_MAX_SETS);
	assert_string_equal(FC_SQL_STR(FC_MAX_SETS), want); /* the ban_sets id CHECK */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pinned_maps_are_fc_maps),
		cmocka_unit_test(test_sql_slot_check),
		cmocka_unit_test(test_btf_names),
		cmocka_unit_test(test_rule_set_bits),
	};

	return fc_run_group("ABI: one definition each", tests, NULL, NULL);
}
