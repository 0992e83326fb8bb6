// SPDX-License-Identifier: BSD-2-Clause
/*
 * The fleet agent's status file (loader/agent/fc_fleet_status.c): every
 * field of doc/fleet.md's schema from a view, read back as JSON; written
 * by rename, 0644, whole each time (a reader never sees a part); what
 * someone else left at the temporary name (a symlink to a file of root's,
 * a file of theirs) is neither followed nor written into.
 */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <cmocka.h>
#include <jansson.h>

#include "fc_fleet_status.h"
#include "fc_test_dir.h"

static char dir[64], shm[96], path[128], tmp[136];

static const struct fc_fleet_status_primary primaries[] = {
	{ .addr = "127.0.0.1:16001", .slots = 5461, .replicas = 1, .up = true },
	{ .addr = "127.0.0.1:16002", .slots = 5462, .replicas = 0, .up = false },
};
static const struct fc_fleet_status_node nodes[] = {
	{ .name = "n1", .no = 1, .weight = 0.25, .in_set = true, .mode = "fleet", .age_ms = 120 },
	{ .name = "n2", .no = 2, .weight = 0.75, .in_set = false, .joins_ms = 1800086400000, .mode = "degraded",
	  .age_ms = 4000 },
};
static const struct fc_fleet_status_policy policies[] = {
	{ .id = 7,
	  .algo = "window",
	  .limit = 100,
	  .unit = "d",
	  .window = 20421,
	  .fleet_used = 61,
	  .node_used = 20,
	  .credit = 5,
	  .tracked = 3,
	  .demanding = 1,
	  .done = 0,
	  .grants = 9,
	  .releases = 2,
	  .donated = 0 },
};

static struct fc_fleet_status view(void)
{
	return (struct fc_fleet_status){
		.node = "n1",
		.node_no = 1,
		.mode = FC_FLEET_MODE_DEGRADED,
		.reason = "clock 812 ms from Redis (max 500)",
		.since_ms = 1795932000123LL,
		.last_sync_ms = 0,
		.rounds = 42,
		.interval_ms = 100,
		.lat_last = 0.4,
		.lat_p50 = 0.3,
		.lat_p99 = 1.5,
		.lat_sum = 12.5,
		.redis_mode = FC_REDIS_CLUSTER,
		.wait = 1,
		.nprimaries = 2,
		.primaries = primaries,
		.offset_ms = -2.5,
		.max_skew_ms = 500,
		.test_offset_ms = 300,
		.nnodes = 2,
		.nodes = nodes,
		.npolicies = 1,
		.policies = policies,
		.counters = { .commands = 120,
			      .scripts = 100,
			      .waits = 3,
			      .moved = 2,
			      .reply_errors = 1,
			      .degraded = 1,
			      .degraded_ms = 1500 },
	};
}

static json_t *read_back(void)
{
	json_error_t e;
	json_t *doc = json_load_file(path, 0, &e);

	if (!doc)
		fail_msg("%s: %s", path, e.text);
	return doc;
}

static void test_fields(void **state)
{
	struct fc_fleet_status v = view();
	struct fc_err err;
	struct stat st;
	json_t *doc, *p;

	(void)state;
	assert_int_equal(fc_fleet_status_write(shm, &v, &err), 0);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0644);
	assert_int_equal(access(tmp, F_OK), -1);
	doc = read_back();
	assert_string_equal(json_string_value(json_object_get(doc, "node")), "n1");
	assert_int_equal(json_integer_value(json_object_get(doc, "node_no")), 1);
	assert_string_equal(json_string_value(json_object_get(doc, "mode")), "degraded");
	assert_string_equal(json_string_value(json_object_get(doc, "reason")), "clock 812 ms from Redis (max 500)");
	assert_string_equal(json_string_value(json_object_get(doc, "since")), "2026-11-29T06:00:00.123Z");
	assert_true(json_is_null(json_object_get(doc, "last_sync")));
	assert_int_equal(json_integer_value(json_object_get(doc, "rounds")), 42);
	assert_int_equal(json_integer_value(json_object_get(doc, "interval_ms")), 100);
	assert_true(json_real_value(json_object_get(json_object_get(doc, "latency_ms"), "p99")) == 1.5);
	p = json_object_get(doc, "redis");
	assert_string_equal(json_string_value(json_object_get(p, "mode")), "cluster");
	assert_int_equal(json_integer_value(json_object_get(p, "wait")), 1);
	p = json_array_get(json_object_get(p, "primaries"), 1);
	assert_string_equal(json_string_value(json_object_get(p, "addr")), "127.0.0.1:16002");
	assert_int_equal(json_integer_value(json_object_get(p, "slots")), 5462);
	assert_string_equal(json_string_value(json_object_get(p, "state")), "down");
	p = json_object_get(doc, "clock");
	assert_true(json_real_value(json_object_get(p, "offset_ms")) == -2.5);
	assert_int_equal(json_integer_value(json_object_get(p, "test_offset_ms")), 300);
	p = json_array_get(json_object_get(doc, "nodes"), 1);
	assert_string_equal(json_string_value(json_object_get(p, "name")), "n2");
	assert_true(json_real_value(json_object_get(p, "weight")) == 0.75);
	assert_true(json_is_false(json_object_get(p, "in_set")));
	assert_string_equal(json_string_value(json_object_get(p, "joins")), "2027-01-16T08:00:00.000Z");
	assert_true(json_is_null(json_object_get(json_array_get(json_object_get(doc, "nodes"), 0), "joins")));
	assert_int_equal(json_integer_value(json_object_get(p, "age_ms")), 4000);
	p = json_array_get(json_object_get(doc, "policies"), 0);
	assert_int_equal(json_integer_value(json_object_get(p, "id")), 7);
	assert_string_equal(json_string_value(json_object_get(p, "unit")), "d");
	assert_int_equal(json_integer_value(json_object_get(p, "fleet_used")), 61);
	assert_int_equal(json_integer_value(json_object_get(p, "credit")), 5);
	assert_int_equal(json_integer_value(json_object_get(p, "releases")), 2);
	p = json_object_get(doc, "counters");
	assert_int_equal(json_integer_value(json_object_get(p, "scripts")), 100);
	assert_int_equal(json_integer_value(json_object_get(p, "degraded_ms")), 1500);
	json_decref(doc);
}

/* Each write is a new file renamed over the old: a reader that opened the
 * old one reads it whole. */
static void test_rename(void **state)
{
	struct fc_fleet_status v = view();
	struct fc_err err;
	struct stat a, b;
	json_t *doc;
	FILE *old;

	(void)state;
	assert_int_equal(fc_fleet_status_write(shm, &v, &err), 0);
	old = fopen(path, "r");
	assert_non_null(old);
	assert_int_equal(stat(path, &a), 0);
	v.rounds = 43;
	v.mode = FC_FLEET_MODE_FLEET;
	v.reason[0] = 0;
	assert_int_equal(fc_fleet_status_write(shm, &v, &err), 0);
	assert_int_equal(stat(path, &b), 0);
	assert_true(a.st_ino != b.st_ino);
	doc = json_loadf(old, 0, NULL);
	fclose(old);
	assert_int_equal(json_integer_value(json_object_get(doc, "rounds")), 42);
	json_decref(doc);
	doc = read_back();
	assert_int_equal(json_integer_value(json_object_get(doc, "rounds")), 43);
	assert_string_equal(json_string_value(json_object_get(doc, "mode")), "fleet");
	json_decref(doc);
}

/* What others leave at the temporary name is removed, never written
 * through: a symlink to a file, a file of theirs. */
static void test_planted(void **state)
{
	struct fc_fleet_status v = view();
	char victim[128], buf[16] = { 0 };
	struct fc_err err;
	struct stat st;
	int fd;

	(void)state;
	snprintf(victim, sizeof(victim), "%s/victim", dir);
	fd = open(victim, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	assert_int_equal(write(fd, "intact", 6), 6);
	close(fd);
	assert_int_equal(symlink(victim, tmp), 0);
	assert_int_equal(fc_fleet_status_write(shm, &v, &err), 0);
	fd = open(victim, O_RDONLY);
	assert_int_equal(read(fd, buf, sizeof(buf) - 1), 6);
	close(fd);
	assert_string_equal(buf, "intact");
	assert_int_equal(lstat(path, &st), 0);
	assert_true(S_ISREG(st.st_mode));

	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0666);
	assert_true(fd >= 0);
	assert_int_equal(fchown(fd, 65534, 65534) == 0 || getuid() != 0, 1);
	close(fd);
	assert_int_equal(fc_fleet_status_write(shm, &v, &err), 0);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_uid, getuid());
	assert_int_equal(st.st_mode & 07777, 0644);
}

static void test_refused(void **state)
{
	struct fc_fleet_status v = view();
	struct fc_err err;
	char missing[128];

	(void)state;
	snprintf(missing, sizeof(missing), "%s/no/such/shm", dir);
	assert_int_equal(fc_fleet_status_write(missing, &v, &err), -1);
	assert_non_null(strstr(err.msg, "/no/such/shm.fleet.json.tmp: No such file or directory"));
}

/* A directory at the file's path (anyone may make one in /dev/shm): the
 * write fails, naming the path, what is there and who reads it. */
static void test_directory_there(void **state)
{
	struct fc_fleet_status v = view();
	struct fc_err err;

	(void)state;
	unlink(path);
	assert_int_equal(mkdir(path, 0755), 0);
	assert_int_equal(fc_fleet_status_write(shm, &v, &err), -1);
	assert_non_null(strstr(err.msg, "status file "));
	assert_non_null(strstr(err.msg, path));
	assert_non_null(strstr(err.msg, "Is a directory"));
	assert_int_equal(access(tmp, F_OK), -1); /* no litter */
	assert_int_equal(rmdir(path), 0);
}

/* Where a node stands in the node sets: in the current windows' set, or
 * joining from the start of the first window whose set has it (the last
 * policy's: a /d one is hours away), or in none. */
static void test_node_set(void **state)
{
	static const struct fc_fleet_member before[] = { { .no = 1, .weight = 1000000 } },
					    after[] = { { .no = 1, .weight = 1000000 }, { .no = 2, .weight = 250000 } };
	static const struct fc_fleet_set sets[] = { { .m = before, .n = 1 }, { .m = after, .n = 2 } };
	const uint64_t s = 1000000000ULL, now = 1800000000ULL * s + 30 * s; /* 30 s into a minute */
	struct fc_fleet_policy pols[2] = {
		/* per minute: the set with node 2 from the next minute on */
		{ .id = 1, .unit_ns = 60 * s, .set = { 0, 1 }, .split = { { .from = 0 }, { .from = now / (60 * s) + 1 } } },
		/* per day: from the next day on */
		{ .id = 2, .unit_ns = 86400 * s, .set = { 0, 1 }, .split = { { .from = 0 }, { .from = now / (86400 * s) + 1 } } },
	};
	struct fc_fleet_cfg cfg = { .pols = pols, .npols = 2, .sets = (struct fc_fleet_set *)sets, .nsets = 2 };
	struct fc_fleet_status_node n1 = { .no = 1 }, n2 = { .no = 2 }, n3 = { .no = 3 };

	(void)state;
	fc_fleet_status_node_set(&n1, &cfg, now);
	fc_fleet_status_node_set(&n2, &cfg, now);
	fc_fleet_status_node_set(&n3, &cfg, now);
	assert_true(n1.in_set);
	assert_true(n1.weight == 1.0);
	assert_false(n2.in_set);
	assert_true(n2.weight == 0.25);
	assert_int_equal(n2.joins_ms, (int64_t)((now / (86400 * s) + 1) * 86400 * 1000));
	assert_false(n3.in_set);
	assert_int_equal(n3.joins_ms, 0);
	assert_true(n3.weight == 0);
	/* the day's window began: node 2 is in every policy's set */
	fc_fleet_status_node_set(&n2, &cfg, (now / (86400 * s) + 1) * 86400 * s);
	assert_true(n2.in_set);
	assert_int_equal(n2.joins_ms, 0);
}

static int setup(void **state)
{
	(void)state;
	umask(022);
	if (fc_test_dir_make(dir, sizeof(dir), "fleet-status") < 0)
		return -1;
	snprintf(shm, sizeof(shm), "%s/shm", dir);
	snprintf(path, sizeof(path), "%s.fleet.json", shm);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	return fc_test_dir_remove(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fields),
		cmocka_unit_test(test_rename),
		cmocka_unit_test(test_planted),
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_directory_there),
		cmocka_unit_test(test_node_set),
	};

	return cmocka_run_group_tests_name("the fleet status file", tests, setup, teardown);
}
