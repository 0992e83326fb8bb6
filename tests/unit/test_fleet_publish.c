// SPDX-License-Identifier: BSD-2-Clause
/* A fleet policy as the shm publisher writes it (design section 4): the
 * item's FC_SHM_POLICY_FLEET and its struct fc_shm_fleet before the dims,
 * FC_ALGO_FLEET_* and the fleet's N unscaled; the header's fleet key (the
 * store's) and when the state was made anew. Read back from the files as
 * the workers map them; the store, the view and the publisher are
 * freqctl's own. */
#include <grp.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>
#include <fcntl.h>
#include <sys/mman.h>

#include "fc_clock.h"
#include "fc_enforce.h"
#include "fc_fleet_split.h"
#include "fc_shm_write.h"
#include "fc_test.h"

struct fc_fp {
	char dir[64], db[96], shm[96], group[64];
	struct fc_store *st;
};

static int setup(void **state)
{
	struct fc_fp *t = calloc(1, sizeof(*t));
	struct group *gr = getgrgid(getegid());
	struct fc_err err;

	assert_non_null(t);
	assert_non_null(gr);
	snprintf(t->dir, sizeof(t->dir), "/tmp/fc-fleetpub-XXXXXX");
	assert_non_null(mkdtemp(t->dir));
	snprintf(t->db, sizeof(t->db), "%s/store.db", t->dir);
	snprintf(t->shm, sizeof(t->shm), "%s/shm", t->dir);
	snprintf(t->group, sizeof(t->group), "%s", gr->gr_name);
	if (fc_store_open(t->db, &t->st, &err) < 0)
		fail_msg("%s", err.msg);
	*state = t;
	return 0;
}

static int teardown(void **state)
{
	struct fc_fp *t = *state;
	char cmd[128];

	fc_store_close(t->st);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", t->dir);
	assert_int_equal(system(cmd), 0);
	free(t);
	return 0;
}

static void fc_put(struct fc_fp *t, struct fc_policy_spec *p, const char *match, const char *rates)
{
	struct fc_policy_row row;
	struct fc_err err;

	if (fc_match_parse(match, p, &err) < 0 || fc_rates_parse(rates, p, &err) < 0 ||
	    fc_policy_validate(p, &err) < 0 || fc_store_policy_put(t->st, p, 1, &row, &err) < 0)
		fail_msg("policy %u: %s", p->id, err.msg);
}

/* A test's clock offset for fleet policies (agent --clock-offset). */
static int64_t fc_clock_ns;

/* Publishes the store to t's shm as node name (its weight 0.25: a fleet
 * policy must not care), with the fleet view the publisher reads. */
static void fc_pub(struct fc_fp *t, const char *name, struct fc_fleet_view *v)
{
	struct fc_node_ctx node = fc_node_here(0.25);
	struct fc_shm_result res;
	struct fc_source src;
	struct fc_err err;

	if (fc_fleet_read(t->st, name, fc_unix_ms() + fc_clock_ns / 1000000, v, &err) < 0)
		fail_msg("%s", err.msg);
	v->clock_ns = fc_clock_ns;
	node.fleet = v;
	fc_source_init(&src, t->st, time(NULL), &node);
	if (fc_shm_publish(t->shm, t->group, 0, &src, &res, &err) < 0)
		fail_msg("%s", err.msg);
	fc_source_free(&src);
}

/* The config file, mapped read-only. */
static const struct fc_shm_header *fc_config(const char *path)
{
	int fd = open(path, O_RDONLY);
	void *p;

	assert_true(fd >= 0);
	p = mmap(NULL, FC_SHM_SIZE, PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	assert_true(p != MAP_FAILED);
	return p;
}

/* The live block's item of policy id, or NULL. */
static const struct fc_shm_policy *fc_item(const struct fc_shm_header *h, uint32_t id)
{
	const struct fc_shm_block *b = (const void *)((const char *)h + FC_SHM_BLOCK_OFF(h->active));
	const __u8 *p = (const __u8 *)(b + 1);
	const struct fc_shm_policy *it;
	__u32 i;

	assert_int_equal(b->magic, FC_SHM_BLOCK_MAGIC);
	for (i = 0; i < b->nitems; i++, p += it->item.len) {
		it = (const struct fc_shm_policy *)p;
		assert_int_equal(it->item.magic, FC_SHM_ITEM_MAGIC);
		if (it->id == id)
			return it;
	}
	return NULL;
}

static void test_fleet_items(void **state)
{
	struct fc_fp *t = *state;
	struct fc_policy_spec keyed = { .id = 1, .algo = FC_ALGO_WINDOW, .fleet = true },
			      fixed = { .id = 2, .layer = FC_LAYER_HTTP, .fleet = true }, local = { .id = 3 };
	const struct fc_shm_policy *it;
	const struct fc_shm_fleet *tail;
	const struct fc_shm_dim *dim;
	const struct fc_shm_header *h;
	struct fc_policy_row row;
	struct fc_fleet_view v;
	uint64_t secret[2];
	int64_t now = fc_unix_ms();
	struct fc_err err;
	bool found;

	fc_put(t, &keyed, "uid=*", "100/d");
	fc_put(t, &fixed, "ip=198.18.0.1", "10/s:40");
	fc_put(t, &local, "uid=x", "8/s");
	/* a and b, from two days ago: b's share of today's 100/d is 75; c
	 * joins now, from tomorrow's window on (a /d window's set is the
	 * one at its start). */
	assert_int_equal(fc_store_fleet_node_set(t->st, "a", 250000, now - 2 * 86400000, &err), 0);
	assert_int_equal(fc_store_fleet_node_set(t->st, "b", 750000, now - 2 * 86400000, &err), 0);
	assert_int_equal(fc_store_fleet_node_set(t->st, "c", 1000000, now, &err), 0);
	fc_pub(t, "b", &v);
	assert_true(v.on);
	assert_int_equal(v.node_no, 2);
	h = fc_config(t->shm);
	assert_int_equal(fc_store_fleet_secret(t->st, secret, &err), 0);
	assert_memory_equal(h->fleet_secret, secret, sizeof(secret));
	assert_true(h->fleet_fresh_ns / FC_NS_PER_SEC >= (uint64_t)now / 1000 - 1);
	assert_true(h->fleet_fresh_ns / FC_NS_PER_SEC <= (uint64_t)time(NULL));
	assert_int_equal(h->fleet_clock_ns, 0);

	/* uid=*: its tail, then its dim; the fleet's 100, not 25. */
	it = fc_item(h, 1);
	assert_non_null(it);
	assert_true(it->flags & FC_SHM_POLICY_FLEET);
	assert_false(it->flags & FC_POLICY_FLEET);
	assert_int_equal(it->algo, FC_ALGO_FLEET_WINDOW);
	assert_int_equal(it->tier[0].limit, 100);
	tail = (const struct fc_shm_fleet *)(it + 1);
	assert_int_equal(tail->node_no, 2);
	assert_int_equal(tail->split[0].from, (uint64_t)fc_unix_ms() / 86400000);
	assert_int_equal(fc_fleet_share(&tail->split[0], 12345), 75);
	assert_int_equal(tail->split[1].from, tail->split[0].from + 1);
	assert_int_equal(tail->split[1].base, 37); /* 37.5: half the points give b 38 */
	assert_int_equal(tail->split[1].seg_hi - tail->split[1].seg_lo, 1ULL << 31);
	assert_int_equal(tail->fixed_u, 0);
	assert_int_equal(tail->lease_ns, 0);
	dim = (const struct fc_shm_dim *)(tail + 1);
	assert_int_equal(dim->kind, FC_DIM_UID);
	assert_int_equal(dim->flags, FC_SHM_DIM_ANY);
	assert_int_equal(it->item.len, fc_shm_align8(sizeof(*it) + sizeof(*tail) + sizeof(*dim)));

	/* ip=ADDR in nginx, gcra: one key, its point; tier[0] the fleet's 10/s. */
	assert_int_equal(fc_store_policy_get(t->st, 2, &row, &found, &err), 0);
	it = fc_item(h, 2);
	assert_non_null(it);
	assert_int_equal(it->algo, FC_ALGO_FLEET_GCRA);
	assert_int_equal(it->tier[0].limit, 10);
	tail = (const struct fc_shm_fleet *)(it + 1);
	assert_int_equal(tail->fixed_u, fc_fleet_fixed_point(secret, 2, row.epoch));
	assert_int_equal(tail->lease_ns, FC_FLEET_LEASE_NS_DEFAULT);
	assert_int_equal(tail->split[0].interval_ns, 133333334); /* 7.5/s of 10/s */
	assert_int_equal(fc_fleet_share(&tail->split[0], tail->fixed_u), 30); /* 40 x 0.75 */

	/* A local policy: as before, scaled, no tail. */
	it = fc_item(h, 3);
	assert_non_null(it);
	assert_false(it->flags & FC_SHM_POLICY_FLEET);
	assert_int_equal(it->algo, FC_ALGO_GCRA);
	assert_int_equal(it->tier[0].limit, 2);
	assert_int_equal(((const struct fc_shm_dim *)(it + 1))->kind, FC_DIM_UID);
	munmap((void *)h, FC_SHM_SIZE);
	fc_fleet_view_free(&v);

	/* A node outside today's set: no share today (grants only), its
	 * share from tomorrow on. */
	fc_pub(t, "c", &v);
	h = fc_config(t->shm);
	tail = (const struct fc_shm_fleet *)(fc_item(h, 1) + 1);
	assert_int_equal(tail->node_no, 3);
	assert_int_equal(fc_fleet_share(&tail->split[0], 12345), 0);
	assert_int_equal(tail->split[1].base, 50);
	munmap((void *)h, FC_SHM_SIZE);
	fc_fleet_view_free(&v);
}

/* N edited mid-window (the epoch kept): the window keeps the split it
 * began with (its shares are out, Redis's record holds them), the new one
 * from the next window; a later publish in the window keeps it again; a
 * publish in the next window takes the new split. */
static void test_fleet_rate_edit(void **state)
{
	struct fc_fp *t = *state;
	struct fc_policy_spec p = { .id = 1, .algo = FC_ALGO_WINDOW, .fleet = true },
			      q = { .id = 1, .algo = FC_ALGO_WINDOW, .fleet = true };
	const struct fc_shm_fleet *tail;
	const struct fc_shm_header *h;
	struct fc_fleet_view v;
	int64_t now = fc_unix_ms();
	uint64_t today = (uint64_t)now / 86400000;
	struct fc_err err;
	int i;

	fc_put(t, &p, "uid=*", "100/d");
	assert_int_equal(fc_store_fleet_node_set(t->st, "a", 250000, now - 2 * 86400000, &err), 0);
	assert_int_equal(fc_store_fleet_node_set(t->st, "b", 750000, now - 2 * 86400000, &err), 0);
	fc_pub(t, "b", &v);
	fc_fleet_view_free(&v);
	fc_put(t, &q, "uid=*", "200/d");
	for (i = 0; i < 2; i++) { /* the edit's publish, then one more in the window */
		fc_pub(t, "b", &v);
		fc_fleet_view_free(&v);
		h = fc_config(t->shm);
		assert_int_equal(fc_item(h, 1)->tier[0].limit, 200);
		tail = (const struct fc_shm_fleet *)(fc_item(h, 1) + 1);
		assert_int_equal(fc_fleet_share(fc_fleet_split_of(tail->split, today), 12345), 75);
		assert_int_equal(tail->split[1].from, today + 1);
		assert_int_equal(fc_fleet_share(fc_fleet_split_of(tail->split, today + 1), 12345), 150);
		munmap((void *)h, FC_SHM_SIZE);
	}
	/* What an agent started now learns of it (fc_publish hands it the cfg):
	 * the workers' split, and its q from it alone (fc_fleet_engine.c). */
	{
		struct fc_policy_row row;
		struct fc_fleet_cfg cfg;
		const struct fc_fleet_set *set;
		bool found;

		assert_int_equal(fc_store_policy_get(t->st, 1, &row, &found, &err), 0);
		if (fc_fleet_read(t->st, "b", now, &v, &err) < 0 || fc_fleet_cfg_make(&v, &row, 1, &cfg, &err) < 0)
			fail_msg("%s", err.msg);
		assert_int_equal(fc_fleet_share(fc_fleet_split_of(cfg.pols[0].split, today), 12345), 150);
		fc_shm_fleet_held(t->shm, &cfg);
		assert_true(cfg.pols[0].has_held);
		assert_int_equal(fc_fleet_share(fc_fleet_split_of(cfg.pols[0].held, today), 12345), 75);
		set = &cfg.sets[cfg.pols[0].set[0]];
		assert_int_equal(fc_fleet_split_q(set->m, set->n, 1, fc_fleet_split_of(cfg.pols[0].held, today)), 100);
		fc_fleet_cfg_free(&cfg);
		fc_fleet_view_free(&v);
	}
	/* a day on: the new split for that window */
	fc_clock_ns = 86400 * (int64_t)FC_NS_PER_SEC;
	fc_pub(t, "b", &v);
	fc_fleet_view_free(&v);
	fc_clock_ns = 0;
	h = fc_config(t->shm);
	tail = (const struct fc_shm_fleet *)(fc_item(h, 1) + 1);
	assert_int_equal(fc_fleet_share(fc_fleet_split_of(tail->split, today + 1), 12345), 150);
	assert_int_equal(tail->split[1].from, FC_FLEET_NEVER);
	munmap((void *)h, FC_SHM_SIZE);
}

/* The same at XDP/TC, where a fixed key's slot holds its shares only: the
 * policy the maps hold (pub) keeps this window's share, the edit's from the
 * next window. */
static void test_fleet_rate_edit_xdp(void **state)
{
	struct fc_fp *t = *state;
	struct fc_policy_spec p = { .id = 2, .algo = FC_ALGO_WINDOW, .fleet = true },
			      q = { .id = 2, .algo = FC_ALGO_WINDOW, .fleet = true };
	struct fc_node_ctx node = fc_node_here(1);
	struct fc_enforced first, pub, e;
	struct fc_policy_row row;
	struct fc_fleet_view v;
	int64_t now = fc_unix_ms();
	uint64_t w0 = (uint64_t)now / 60000;
	struct fc_err err;
	bool found;

	fc_put(t, &p, "ip=198.18.0.1", "10/m");
	assert_int_equal(fc_store_fleet_node_set(t->st, "a", 500000, now - 86400000, &err), 0);
	assert_int_equal(fc_store_fleet_node_set(t->st, "b", 500000, now - 86400000, &err), 0);
	if (fc_fleet_read(t->st, "a", now, &v, &err) < 0)
		fail_msg("%s", err.msg);
	node.fleet = &v;
	assert_int_equal(fc_store_policy_get(t->st, 2, &row, &found, &err), 0);
	assert_false(fc_policy_is_l7(&row.spec));
	fc_policy_enforced(&row, &node, NULL, &first);
	assert_int_equal(first.k.fleet_share[0], 5);
	memset(&pub, 0, sizeof(pub));
	pub.k = first.k; /* what the maps hold */
	fc_put(t, &q, "ip=198.18.0.1", "20/m");
	assert_int_equal(fc_store_policy_get(t->st, 2, &row, &found, &err), 0);
	assert_int_equal(row.epoch, first.k.epoch); /* a rate edit keeps it */
	fc_policy_enforced(&row, &node, &pub, &e);
	assert_int_equal(e.k.tier[0].limit, 20);
	assert_int_equal(e.k.fleet_share[0], 5);
	assert_int_equal(e.k.fleet_from, w0 + 1);
	assert_int_equal(e.k.fleet_share[1], 10);
	pub.k = e.k; /* published: kept again in the window */
	fc_policy_enforced(&row, &node, &pub, &e);
	assert_int_equal(e.k.fleet_share[0], 5);
	assert_int_equal(e.k.fleet_share[1], 10);
	fc_fleet_view_free(&v);
}

/* The unit edited (/h to /m, the epoch kept, was: the keys' words, labelled
 * with an hour, read "ahead" in a minute and refused, and the hour's split,
 * kept, gave the minute 750 of 100): a new epoch, so the keys start afresh,
 * and the new unit's shares from this window on. The agent keeps nothing
 * of another epoch either (fc_keep_update). */
static void test_fleet_unit_edit(void **state)
{
	struct fc_fp *t = *state;
	struct fc_policy_spec p = { .id = 3, .algo = FC_ALGO_WINDOW, .fleet = true },
			      q = { .id = 3, .algo = FC_ALGO_WINDOW, .fleet = true };
	const struct fc_shm_fleet *tail;
	const struct fc_shm_header *h;
	struct fc_policy_row row;
	struct fc_fleet_view v;
	int64_t now = fc_unix_ms();
	uint64_t minute = (uint64_t)now / 60000;
	struct fc_err err;
	uint32_t epoch;
	bool found;

	fc_put(t, &p, "uid=*", "1000/h");
	assert_int_equal(fc_store_fleet_node_set(t->st, "a", 250000, now - 2 * 86400000, &err), 0);
	assert_int_equal(fc_store_fleet_node_set(t->st, "b", 750000, now - 2 * 86400000, &err), 0);
	fc_pub(t, "b", &v);
	fc_fleet_view_free(&v);
	assert_int_equal(fc_store_policy_get(t->st, 3, &row, &found, &err), 0);
	epoch = row.epoch;
	fc_put(t, &q, "uid=*", "100/m");
	assert_int_equal(fc_store_policy_get(t->st, 3, &row, &found, &err), 0);
	assert_int_not_equal(row.epoch, epoch);
	fc_pub(t, "b", &v);
	fc_fleet_view_free(&v);
	h = fc_config(t->shm);
	assert_int_equal(fc_item(h, 3)->epoch, row.epoch);
	assert_int_equal(fc_item(h, 3)->tier[0].limit, 100);
	tail = (const struct fc_shm_fleet *)(fc_item(h, 3) + 1);
	assert_int_equal(fc_fleet_share(fc_fleet_split_of(tail->split, minute), 12345), 75);
	assert_int_equal(fc_fleet_share(fc_fleet_split_of(tail->split, minute + 1), 12345), 75);
	munmap((void *)h, FC_SHM_SIZE);
}

/* fleet_fresh_ns: set when the state file is made anew, kept otherwise. */
static void test_fleet_fresh(void **state)
{
	struct fc_fp *t = *state;
	struct fc_policy_spec p = { .id = 1, .algo = FC_ALGO_WINDOW, .fleet = true };
	const struct fc_shm_header *h;
	struct fc_fleet_view v;
	char path[128];
	uint64_t fresh;

	fc_put(t, &p, "uid=*", "100/d");
	fc_pub(t, "a", &v);
	fc_fleet_view_free(&v);
	h = fc_config(t->shm);
	fresh = h->fleet_fresh_ns;
	assert_true(fresh > 0);
	usleep(2000);
	fc_pub(t, "a", &v);
	fc_fleet_view_free(&v);
	assert_int_equal(h->fleet_fresh_ns, fresh);
	snprintf(path, sizeof(path), "%s%s", t->shm, FC_SHM_STATE_SUFFIX);
	assert_int_equal(unlink(path), 0);
	fc_pub(t, "a", &v);
	fc_fleet_view_free(&v);
	assert_true(h->fleet_fresh_ns > fresh);
	/* A node 10 s behind (a test's offset): the header says so, and a state
	 * made now is fresh from then on its clock. */
	fresh = h->fleet_fresh_ns;
	fc_clock_ns = -10 * (int64_t)FC_NS_PER_SEC;
	assert_int_equal(unlink(path), 0);
	fc_pub(t, "a", &v);
	fc_fleet_view_free(&v);
	fc_clock_ns = 0;
	assert_int_equal(h->fleet_clock_ns, -10 * (int64_t)FC_NS_PER_SEC);
	/* What a publisher not given an offset (the CLI) keeps. */
	assert_int_equal(fc_shm_fleet_clock(t->shm), -10 * (int64_t)FC_NS_PER_SEC);
	assert_true(h->fleet_fresh_ns < fresh - 9 * FC_NS_PER_SEC);
	munmap((void *)h, FC_SHM_SIZE);
}

/* Without fleet policies the publisher reads no node set and no key (one
 * query), and the header's key stays zero. */
static void test_fleet_off(void **state)
{
	struct fc_fp *t = *state;
	struct fc_policy_spec p = { .id = 1 };
	const struct fc_shm_header *h;
	struct fc_fleet_view v;
	uint64_t zero[2] = { 0, 0 };

	fc_put(t, &p, "uid=*", "100/d");
	fc_pub(t, "a", &v);
	assert_false(v.on);
	assert_null(v.rows);
	h = fc_config(t->shm);
	assert_memory_equal(h->fleet_secret, zero, sizeof(zero));
	assert_false(fc_item(h, 1)->flags & FC_SHM_POLICY_FLEET);
	munmap((void *)h, FC_SHM_SIZE);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_fleet_items, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fleet_fresh, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fleet_off, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fleet_rate_edit, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fleet_rate_edit_xdp, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fleet_unit_edit, setup, teardown),
	};

	return fc_run_group("fleet policies in the shm", tests, NULL, NULL);
}
