// SPDX-License-Identifier: BSD-2-Clause
/*
 * The L7 engine the nginx module runs (ngx_bridge/fc_l7.c) against shm files
 * written by freqctl's real publisher: round trips, every single-byte
 * corruption and every truncation of a published block (built with
 * AddressSanitizer), exactness with 8 forked processes on one slot, tiers,
 * delays, and indexed matching against a naive reference on random requests.
 */
#include <ctype.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <signal.h>
#include <time.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <unistd.h>
#include <cmocka.h>

#include "fc_allow.h"
#include "fc_l7.h"
#include "fc_shm_state.h"
#include "fc_shm_write.h"
#include "fc_store.h"
#include "fc_vectors.h"

#define SEC FC_NS_PER_SEC
#define MS  (SEC / 1000)
#define T0 (1795316400ULL * SEC)

/* Allocations of one index build, freed together. */
struct fc_arena {
	void **v;
	size_t n, cap;
};

static void *fc_arena_alloc(void *ctx, size_t size)
{
	struct fc_arena *a = ctx;
	void *p = calloc(1, size ? size : 1);

	if (!p)
		return NULL;
	if (a->n == a->cap) {
		a->cap = a->cap ? a->cap * 2 : 64;
		a->v = realloc(a->v, a->cap * sizeof(*a->v));
	}
	a->v[a->n++] = p;
	return p;
}

static void fc_arena_free(struct fc_arena *a)
{
	size_t i;

	for (i = 0; i < a->n; i++)
		free(a->v[i]);
	free(a->v);
	memset(a, 0, sizeof(*a));
}

struct fc_t {
	char dir[64], db[96], shm[96], state_path[128];
	struct fc_store *st;
	void *base;   /* the config file */
	size_t size;
	void *state;  /* the workers' state file */
	size_t state_size;
	uint32_t keys; /* the key table's size for a publish (0: keep the file's) */
	struct fc_arena arena;
	struct fc_l7_index ix;
};

static int fc_setup(void **state)
{
	struct fc_t *t = calloc(1, sizeof(*t));
	struct fc_err err;

	assert_non_null(t);
	snprintf(t->dir, sizeof(t->dir), "/tmp/fc-l7-XXXXXX");
	assert_non_null(mkdtemp(t->dir));
	snprintf(t->db, sizeof(t->db), "%s/store.db", t->dir);
	snprintf(t->shm, sizeof(t->shm), "%s/shm", t->dir);
	snprintf(t->state_path, sizeof(t->state_path), "%s%s", t->shm, FC_SHM_STATE_SUFFIX);
	if (fc_store_open(t->db, &t->st, &err) < 0)
		fail_msg("%s", err.msg);
	*state = t;
	return 0;
}

static void fc_unmap(struct fc_t *t)
{
	if (t->base)
		munmap(t->base, t->size);
	if (t->state)
		munmap(t->state, t->state_size);
	t->base = t->state = NULL;
	fc_arena_free(&t->arena);
}

/* Maps path read-write into *base, *size. */
static void fc_map(const char *path, void **base, size_t *size)
{
	struct stat sb;
	int fd = open(path, O_RDWR);

	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &sb), 0);
	*size = (size_t)sb.st_size;
	*base = mmap(NULL, *size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	assert_true(*base != MAP_FAILED);
}

static int fc_teardown(void **state)
{
	struct fc_t *t = *state;
	char cmd[128];

	fc_unmap(t);
	fc_store_close(t->st);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", t->dir);
	assert_int_equal(system(cmd), 0);
	free(t);
	return 0;
}

/* Stores p (its id and options set) with match and rates. */
static void fc_policy_put(struct fc_t *t, struct fc_policy_spec *p, const char *match, const char *rates)
{
	struct fc_policy_row row;
	struct fc_err err;

	if (fc_match_parse(match, p, &err) < 0 || fc_rates_parse(rates, p, &err) < 0 ||
	    fc_policy_validate(p, &err) < 0 || fc_store_policy_put(t->st, p, 1, &row, &err) < 0)
		fail_msg("policy %u: %s", p->id, err.msg);
}

static void fc_policy(struct fc_t *t, uint32_t id, const char *match, const char *rates, const char *action,
		      uint64_t burst, uint32_t delay_burst)
{
	struct fc_policy_spec p = { .id = id, .burst = burst, .delay_burst = delay_burst };
	struct fc_err err;

	if (fc_action_parse(action, &p.action, &err) < 0)
		fail_msg("policy %u: %s", id, err.msg);
	fc_policy_put(t, &p, match, rates);
}

/* Publishes t's store whole to its shm, as a node alone at time 1; keys:
 * the key table's size (0: keep it). No cmocka assertion: a forked writer
 * runs it. */
static int fc_shm_full(struct fc_t *t, uint32_t keys, struct fc_shm_result *res, struct fc_err *err)
{
	struct fc_node_ctx node = fc_node_here(1);
	struct fc_source src;
	int rc;

	fc_source_init(&src, t->st, 1, &node);
	rc = fc_shm_publish(t->shm, NULL, keys, &src, res, err);
	fc_source_free(&src);
	return rc;
}

/* Publishes the store and maps both files (the config file read-write
 * here, so the tests can corrupt it). */
static void fc_publish(struct fc_t *t)
{
	struct fc_shm_result res;
	struct fc_err err;

	fc_unmap(t);
	if (fc_shm_full(t, t->keys, &res, &err) < 0)
		fail_msg("%s", err.msg);
	fc_map(t->shm, &t->base, &t->size);
	fc_map(t->state_path, &t->state, &t->state_size);
}

static int fc_build(struct fc_t *t, const void *base, size_t size)
{
	struct fc_l7_alloc a = { fc_arena_alloc, &t->arena };

	fc_arena_free(&t->arena);
	return fc_l7_build(base, size, t->state, t->state_size, &t->ix, &a);
}

/* A request from text: "uid=u1 arg:api=login header:x-key=k uri=/a ip=198.18.0.1";
 * "query=RAW" gives the args as a raw query string (decoded by the engine),
 * and a dimension may repeat. */
static void fc_req(const struct fc_l7_index *ix, struct fc_l7_req *rq, const char *text)
{
	static char buf[1024], qbuf[1024];
	static struct fc_l7_val vals[256];
	char *tok, *save = NULL, *eq, *colon;
	int k;

	memset(rq, 0, sizeof(*rq));
	rq->vals = vals;
	snprintf(buf, sizeof(buf), "%s", text);
	for (tok = strtok_r(buf, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
		eq = strchr(tok, '=');
		*eq++ = '\0';
		colon = strchr(tok, ':');
		if (!strcmp(tok, "uid")) {
			rq->uid = (struct fc_l7_str){ eq, strlen(eq) };
		} else if (!strcmp(tok, "uri")) {
			rq->uri = (struct fc_l7_str){ eq, strlen(eq) };
		} else if (!strcmp(tok, "query")) {
			assert_true(rq->nvals + fc_l7_args_max(eq, strlen(eq)) <= 256);
			rq->nvals += fc_l7_args(ix, eq, strlen(eq), qbuf, vals + rq->nvals);
		} else if (!strcmp(tok, "ip")) {
			struct fc_prefix p;
			struct fc_err err;

			assert_int_equal(fc_prefix_parse(eq, &p, &err), 0);
			rq->family = p.family;
			memcpy(rq->addr, p.a, 16);
		} else if (colon) {
			bool arg = !strncmp(tok, "arg", 3);

			k = arg ? -1 : fc_l7_header_idx(ix, colon + 1, strlen(colon + 1));
			if (arg) {
				size_t i;

				for (i = 0; i < ix->nargs; i++)
					if (ix->args[i].len == strlen(colon + 1) && !memcmp(ix->args[i].data, colon + 1, ix->args[i].len))
						k = (int)i;
			}
			if (k < 0)
				continue;
			assert_true(rq->nvals < 256);
			vals[rq->nvals++] = (struct fc_l7_val){ arg ? FC_DIM_ARG : FC_DIM_HEADER, (uint8_t)k, { eq, strlen(eq) } };
		}
	}
}

static enum fc_l7_verdict fc_decide(struct fc_t *t, const char *req, uint64_t now, struct fc_l7_result *res)
{
	struct fc_l7_result r;
	struct fc_l7_req rq;

	fc_req(&t->ix, &rq, req);
	fc_l7_decide(&t->ix, &rq, now, res ? res : &r);
	return res ? res->verdict : r.verdict;
}

/* fc_decide, with the deciding key's text written into key (cap bytes). */
static enum fc_l7_verdict fc_decide_key(struct fc_t *t, const char *req, uint64_t now, struct fc_l7_result *res,
					char *key, size_t cap)
{
	struct fc_l7_req rq;

	fc_req(&t->ix, &rq, req);
	rq.keybuf = key;
	rq.keycap = cap;
	fc_l7_decide(&t->ix, &rq, now, res);
	return res->verdict;
}

static int fc_passes(struct fc_t *t, const char *req, uint64_t now, int n)
{
	int i, ok = 0;

	for (i = 0; i < n; i++)
		ok += fc_decide(t, req, now, NULL) == FC_L7_PASS;
	return ok;
}

static void test_round_trip(void **state)
{
	struct fc_t *t = *state;
	struct fc_uid_ban ub = { .uid = "evil", .created = 1 };
	struct fc_ban_row br = { .created = 1 };
	struct fc_l7_result res;
	struct fc_err err;
	bool existed;

	fc_policy(t, 7, "uid=u1024,arg:api=login", "3/m,100/d", "drop", 0, 0);
	fc_policy(t, 8, "header:X-Key=k1,ip=198.18.0.0/24", "2/m", "drop", 0, 0);
	fc_policy(t, 9, "uri=/login", "1/m", "log", 0, 0);
	fc_policy(t, 10, "ip=198.18.0.7", "1/m", "drop", 0, 0); /* L4 only: not in the shm */
	assert_int_equal(fc_store_uid_ban_put(t->st, &ub, &existed, 1, &err), 0);
	assert_int_equal(fc_prefix_parse("203.0.113.0/24", &br.p, &err), 0);
	assert_int_equal(fc_store_ban_put(t->st, &br, &err), 0);
	fc_publish(t);
	assert_int_equal(fc_build(t, t->base, t->size), 0);
	assert_int_equal(t->ix.npolicies, 3);
	assert_int_equal(t->ix.skipped, 0);

	assert_int_equal(fc_passes(t, "uid=u1024 arg:api=login", T0, 5), 3);
	assert_int_equal(fc_decide(t, "uid=u1024 arg:api=login", T0, &res), FC_L7_REJECTED);
	assert_int_equal(res.policy, 7);
	assert_int_equal(res.limit, 3);
	assert_int_equal(res.window_s, 60);
	assert_int_equal(res.remaining, 0);
	assert_int_equal(res.retry_ns, 20 * SEC);
	assert_int_equal(fc_passes(t, "uid=u1024 arg:api=other", T0, 5), 5); /* another key */
	assert_int_equal(fc_passes(t, "uid=u9 arg:api=login", T0, 5), 5);
	assert_int_equal(fc_passes(t, "header:x-key=k1 ip=198.18.0.9", T0, 5), 2);
	assert_int_equal(fc_passes(t, "header:x-key=k1 ip=198.18.1.9", T0, 5), 5); /* outside the /24 */
	assert_int_equal(fc_passes(t, "uri=/login", T0, 5), 5); /* log: would deny 4 */
	assert_int_equal(fc_decide(t, "uri=/login", T0, &res), FC_L7_PASS);
	assert_int_equal(res.would_deny, 1);
	assert_int_equal(fc_decide(t, "uid=evil", T0, &res), FC_L7_BANNED);
	assert_true(res.uid_ban);
	assert_int_equal(fc_decide(t, "ip=203.0.113.77", T0, &res), FC_L7_BANNED);
	assert_false(res.uid_ban);
	assert_int_equal(fc_decide(t, "ip=198.18.0.7", T0, &res), FC_L7_PASS);
	/* Counters in the slots. */
	assert_int_equal(t->ix.slots[1].passed, 3);
	assert_int_equal(t->ix.slots[1].denied, 3);
}

/* Bans are read in place: many of them, all found; changes seen by an index
 * built before them, with no new block (no worker rebuild). */
static void test_ban_table(void **state)
{
	struct fc_t *t = *state;
	struct fc_ban_row br = { .created = 1 };
	struct fc_uid_ban ub = { .created = 1 };
	struct fc_l7_result res;
	struct fc_err err;
	char req[64];
	uint64_t seq;
	bool existed;
	int i;

	fc_policy(t, 1, "uid=u1", "3/m", "drop", 0, 0);
	assert_int_equal(fc_store_begin(t->st, &err), 0);
	for (i = 0; i < 50000; i++) {
		snprintf(ub.uid, sizeof(ub.uid), "user%d", i);
		assert_int_equal(fc_store_uid_ban_put(t->st, &ub, &existed, 1, &err), 0);
		br.p = (struct fc_prefix){ .family = 4, .len = 32, .a = { 10, (uint8_t)(i >> 16), (uint8_t)(i >> 8), (uint8_t)i } };
		assert_int_equal(fc_store_ban_put(t->st, &br, &err), 0);
	}
	assert_int_equal(fc_store_commit(t->st, &err), 0);
	fc_publish(t);
	assert_int_equal(fc_build(t, t->base, t->size), 0);
	seq = t->ix.seq;
	for (i = 0; i < 50000; i += 7) {
		snprintf(req, sizeof(req), "uid=user%d", i);
		assert_int_equal(fc_decide(t, req, T0, &res), FC_L7_BANNED);
		snprintf(req, sizeof(req), "ip=10.%d.%d.%d", (i >> 16) & 255, (i >> 8) & 255, i & 255);
		assert_int_equal(fc_decide(t, req, T0, &res), FC_L7_BANNED);
	}
	assert_int_equal(fc_decide(t, "uid=user50000", T0, NULL), FC_L7_PASS);
	assert_int_equal(fc_decide(t, "ip=10.1.0.0", T0, NULL), FC_L7_PASS);

	/* Lift one, add a prefix: the same index sees both. */
	snprintf(ub.uid, sizeof(ub.uid), "user7");
	assert_int_equal(fc_store_uid_ban_del(t->st, "user7", &existed, &err), 0);
	assert_int_equal(fc_prefix_parse("192.0.2.0/24", &br.p, &err), 0);
	assert_int_equal(fc_store_ban_put(t->st, &br, &err), 0);
	{
		struct fc_shm_result r;

		assert_int_equal(fc_shm_full(t, 0, &r, &err), 0);
		assert_false(r.published); /* no new block: workers keep their index */
	}
	assert_int_equal(((const struct fc_shm_header *)t->base)->seq, seq);
	assert_int_equal(fc_decide(t, "uid=user7", T0, NULL), FC_L7_PASS);
	assert_int_equal(fc_decide(t, "uid=user14", T0, NULL), FC_L7_BANNED);
	assert_int_equal(fc_decide(t, "ip=192.0.2.200", T0, NULL), FC_L7_BANNED);
	assert_int_equal(fc_decide(t, "ip=192.0.3.200", T0, NULL), FC_L7_PASS);

	/* IPv6, exact (/128) and prefixes of the extreme lengths. */
	assert_int_equal(fc_prefix_parse("2001:db8::7", &br.p, &err), 0);
	assert_int_equal(fc_store_ban_put(t->st, &br, &err), 0);
	assert_int_equal(fc_prefix_parse("2001:db9::/32", &br.p, &err), 0);
	assert_int_equal(fc_store_ban_put(t->st, &br, &err), 0);
	assert_int_equal(fc_prefix_parse("8000::/1", &br.p, &err), 0);
	assert_int_equal(fc_store_ban_put(t->st, &br, &err), 0);
	{
		struct fc_shm_result r;

		assert_int_equal(fc_shm_full(t, 0, &r, &err), 0);
	}
	assert_int_equal(fc_decide(t, "ip=2001:db8::7", T0, NULL), FC_L7_BANNED);
	assert_int_equal(fc_decide(t, "ip=2001:db8::8", T0, NULL), FC_L7_PASS);
	assert_int_equal(fc_decide(t, "ip=2001:db9:1::1", T0, NULL), FC_L7_BANNED);
	assert_int_equal(fc_decide(t, "ip=9000::1", T0, NULL), FC_L7_BANNED);
	assert_int_equal(fc_decide(t, "ip=7000::1", T0, NULL), FC_L7_PASS);
}

static void fc_allow_put(struct fc_t *t, const char *text, int64_t expires)
{
	struct fc_allow_row row;
	char canon[FC_BAN_TEXT_LEN];
	struct fc_err err;
	bool existed;

	assert_int_equal(fc_allow_text(text, &row, canon, &err), 0);
	row.created = 1;
	row.expires = expires;
	assert_int_equal(fc_store_allow_put(t->st, &row, 1, &existed, &err), 0);
}

/*
 * Allow entries in the ban table: a uid or an address allowed is decided
 * ALLOWED (and counted) over a ban on the same key, over a ban on a prefix
 * around it and over a policy; its neighbours stay banned; an entry's TTL
 * ends it and the ban holds again. A uid's tag is keyed by the file's
 * secret: with an unkeyed FNV-1a tag (which is inverted a byte at a time) a
 * client could pick a uid with an allowed uid's tag and pass every ban and
 * limit.
 */
static void test_allow_entries(void **state)
{
	struct fc_t *t = *state;
	struct fc_uid_ban ub = { .uid = "evil", .created = 1 };
	struct fc_ban_row br = { .created = 1 };
	const struct fc_shm_header *h;
	const struct fc_shm_ban_slot *tab;
	struct fc_l7_result res;
	struct fc_err err;
	uint64_t fnv_vip, fnv_evil, allowed;
	bool existed;
	size_t i;

	fc_policy(t, 1, "uid=vip", "1/m", "drop", 0, 0);
	assert_int_equal(fc_store_uid_ban_put(t->st, &ub, &existed, 1, &err), 0);
	assert_int_equal(fc_prefix_parse("203.0.113.0/24", &br.p, &err), 0);
	assert_int_equal(fc_store_ban_put(t->st, &br, &err), 0);
	assert_int_equal(fc_prefix_parse("198.51.100.9", &br.p, &err), 0);
	assert_int_equal(fc_store_ban_put(t->st, &br, &err), 0);
	fc_allow_put(t, "uid=vip", 0);
	fc_allow_put(t, "uid=evil", 0);
	fc_allow_put(t, "203.0.113.7", 0);
	fc_allow_put(t, "198.51.100.0/24", (int64_t)(T0 / SEC) + 60);
	fc_publish(t);
	assert_int_equal(fc_build(t, t->base, t->size), 0);
	allowed = t->ix.state_hdr->allowed;

	for (i = 0; i < 3; i++)
		assert_int_equal(fc_decide(t, "uid=vip", T0, NULL), FC_L7_ALLOWED); /* over its 1/m */
	assert_int_equal(fc_decide(t, "uid=evil ip=203.0.113.9", T0, &res), FC_L7_ALLOWED);
	assert_true(res.uid_ban);
	assert_int_equal(fc_decide(t, "uid=evi ip=203.0.113.7", T0, &res), FC_L7_ALLOWED);
	assert_false(res.uid_ban);
	assert_int_equal(fc_decide(t, "ip=203.0.113.8", T0, NULL), FC_L7_BANNED);
	assert_int_equal(fc_decide(t, "ip=198.51.100.9", T0, NULL), FC_L7_ALLOWED);
	assert_int_equal(fc_decide(t, "ip=198.51.100.9", T0 + 61 * SEC, NULL), FC_L7_BANNED);
	assert_int_equal(t->ix.state_hdr->allowed, allowed + 6);

	h = t->base;
	tab = (const struct fc_shm_ban_slot *)((const char *)t->base + FC_SHM_BANS_OFF(FC_SHM_BAN_TABLE(h->ban_live)));
	fnv_vip = fc_shm_ban_hash(FC_SHM_BAN_ALLOW, 0, "vip", 3);
	fnv_evil = fc_shm_ban_hash(FC_SHM_BAN_ALLOW, 0, "evil", 4);
	for (i = 0; i < FC_SHM_BAN_SLOTS; i++)
		if (tab[i].seq == FC_SHM_BAN_STAMP(h->ban_live) && (tab[i].hash == fnv_vip || tab[i].hash == fnv_evil))
			fail_msg("ban table slot %zu: a uid's tag is its unkeyed FNV-1a hash", i);
}

/* Allow entries with no ban anywhere: still ALLOWED, over a policy. Whether
 * to look for an allow entry is the allow bitmap's to say, not the bans'
 * (a request checked the bans' words for both, and an allowed uid met its
 * limit whenever nothing was banned). */
static void test_allow_without_bans(void **state)
{
	struct fc_t *t = *state;
	uint64_t allowed;
	size_t i;

	fc_policy(t, 1, "uid=vip", "1/m", "drop", 0, 0);
	fc_allow_put(t, "uid=vip", 0);
	fc_allow_put(t, "203.0.113.7", 0);
	fc_publish(t);
	assert_int_equal(fc_build(t, t->base, t->size), 0);
	allowed = t->ix.state_hdr->allowed;

	for (i = 0; i < 3; i++)
		assert_int_equal(fc_decide(t, "uid=vip", T0, NULL), FC_L7_ALLOWED); /* over its 1/m */
	assert_int_equal(fc_decide(t, "ip=203.0.113.7", T0, NULL), FC_L7_ALLOWED);
	assert_int_equal(fc_decide(t, "ip=203.0.113.8", T0, NULL), FC_L7_PASS);
	assert_int_equal(t->ix.state_hdr->allowed, allowed + 4);
}

/* Publishes what changed since the shm's mark, as a command does (all of
 * it when the mark says nothing), and marks the shm; the maps stay as they
 * are (an index built before sees the bans change in place). 1: only what
 * changed was published, 0: all, -1: failed (err). No cmocka assertion: a
 * forked writer runs it. */
static int fc_publish_shm(struct fc_t *t, struct fc_err *err)
{
	struct fc_node_ctx node = fc_node_here(1);
	struct fc_store_log log;
	struct fc_shm_result res;
	struct fc_source src;
	struct fc_delta d;
	uint64_t id, seq;
	int rc = 1;

	if (fc_store_log_head(t->st, &log, err) < 0)
		return -1;
	fc_shm_marked(t->shm, &id, &seq);
	if (id == log.id && seq) {
		if (fc_store_delta(t->st, seq, log.head, 1, "test", &d, err) < 0)
			return -1;
		fc_source_init(&src, t->st, 1, &node);
		rc = fc_shm_publish_delta(t->shm, NULL, t->keys, &src, &d, log.id, seq, &res, err);
		fc_source_free(&src);
		fc_delta_free(&d);
		if (rc < 0)
			return -1;
	}
	if ((rc && fc_shm_full(t, t->keys, &res, err) < 0) ||
	    fc_shm_mark(t->shm, log.id, log.head, err) < 0)
		return -1;
	return rc == 0;
}

static bool fc_publish_changes(struct fc_t *t)
{
	struct fc_err err;
	int rc = fc_publish_shm(t, &err);

	if (rc < 0)
		fail_msg("%s", err.msg);
	if (!t->base) {
		fc_map(t->shm, &t->base, &t->size);
		fc_map(t->state_path, &t->state, &t->state_size);
	}
	return rc == 1;
}

static int fc_ip_ban_try(struct fc_store *st, int i, int64_t expires, bool put, struct fc_err *err)
{
	struct fc_ban_row br = { .created = 1, .expires = expires };
	bool found;

	br.p = (struct fc_prefix){ .family = 4, .len = 32, .a = { 10, 9, (uint8_t)(i >> 8), (uint8_t)i } };
	return put ? fc_store_ban_put(st, &br, err) : fc_store_ban_del(st, &br.p, &found, err);
}

static void fc_ip_ban(struct fc_t *t, int i, int64_t expires, bool put)
{
	struct fc_err err;

	if (fc_ip_ban_try(t->st, i, expires, put, &err) < 0)
		fail_msg("%s", err.msg);
}

static void fc_ip_req(int i, char req[32])
{
	snprintf(req, 32, "ip=10.9.%d.%d", (i >> 8) & 255, i & 255);
}

/* The bans that should hold: banned[i] for 10.9.x.y = i. */
static void fc_bans_hold(struct fc_t *t, const bool *banned, int n)
{
	char req[32];
	int i;

	for (i = 0; i < n; i++) {
		fc_ip_req(i, req);
		if (fc_decide(t, req, T0, NULL) != (banned[i] ? FC_L7_BANNED : FC_L7_PASS))
			fail_msg("%s: %s", req, banned[i] ? "not banned" : "banned");
	}
}

/* Bans changed in place: lifted ones become tombstones that probe
 * sequences go through, new ones take tombstones or free slots, a new
 * expiry is rewritten in its slot; an index built before sees it all, the
 * config block untouched. Once tombstones are many the table is rebuilt
 * into the other one. A slot left half written (its seqlock odd) is no ban,
 * and no hang, and keeps no other ban from being found. */
static void test_ban_in_place(void **state)
{
	enum { N = 20000 };
	struct fc_t *t = *state;
	const struct fc_shm_header *h;
	struct fc_shm_ban_slot *tab;
	static bool banned[N];
	struct fc_err err;
	uint64_t seq, live;
	uint32_t i, k;

	fc_policy(t, 1, "uid=u1", "3/m", "drop", 0, 0);
	assert_int_equal(fc_store_begin(t->st, &err), 0);
	for (i = 0; i < N; i++)
		fc_ip_ban(t, (int)i, 0, banned[i] = true);
	assert_int_equal(fc_store_commit(t->st, &err), 0);
	assert_false(fc_publish_changes(t)); /* nothing known yet: all */
	assert_int_equal(fc_build(t, t->base, t->size), 0);
	h = t->base;
	seq = t->ix.seq;
	live = h->ban_live;

	/* Lift 3,000 (tombstones), ban 1,000 of them again, 500 others for a
	 * while (expired at T0), 500 others for longer. */
	for (i = 0; i < 3000; i++)
		fc_ip_ban(t, (int)(i * 5), 0, banned[i * 5] = false);
	assert_true(fc_publish_changes(t));
	assert_int_equal(h->ban_dead, 3000);
	fc_bans_hold(t, banned, N);
	for (i = 0; i < 1000; i++)
		fc_ip_ban(t, (int)(i * 15), 0, banned[i * 15] = true);
	for (i = 0; i < 500; i++) {
		fc_ip_ban(t, (int)(i * 7 + 1), (int64_t)(T0 / SEC) - 60, true);
		banned[i * 7 + 1] = false;
		fc_ip_ban(t, (int)(i * 7 + 2), (int64_t)(T0 / SEC) + 60, banned[i * 7 + 2] = true);
	}
	assert_true(fc_publish_changes(t));
	fc_bans_hold(t, banned, N);
	assert_true(h->ban_dead <= 2000);
	assert_int_equal(h->ban_live, live); /* in place */
	assert_int_equal(h->seq, seq);       /* no new block: no worker rebuilds */
	assert_int_equal(h->ban_dirty, 0);

	/* Half written: a banned address's slot with its seqlock odd. */
	tab = (struct fc_shm_ban_slot *)((char *)t->base + FC_SHM_BANS_OFF(FC_SHM_BAN_TABLE(live)));
	for (k = 0; k < FC_SHM_BAN_SLOTS && !(tab[k].seq == FC_SHM_BAN_STAMP(live) && tab[k].family == 4); k++)
		;
	assert_true(k < FC_SHM_BAN_SLOTS);
	tab[k].ver |= 1;
	i = (uint32_t)tab[k].addr[2] << 8 | tab[k].addr[3];
	banned[i] = false;
	fc_bans_hold(t, banned, N);
	tab[k].ver++;
	banned[i] = true;
	fc_bans_hold(t, banned, N);

	/* Many tombstones: rebuilt into the other table, all still right. */
	for (i = 0; i < N; i += 2)
		fc_ip_ban(t, (int)i, 0, banned[i] = false);
	assert_true(fc_publish_changes(t));
	assert_int_not_equal(h->ban_live, live);
	assert_int_equal(h->ban_dead, 0);
	fc_bans_hold(t, banned, N);
}

/* Readers never see a torn slot: a writer rewrites the expiries of bans
 * that stay (and lifts and bans others around them) as fast as it can
 * publish, while a reader checks that the bans hold, every time: with the
 * writer running, and with it stopped wherever a SIGSTOP found it (a
 * preempted writer, which a reader must not wait for: one that gave up on a
 * slot being rewritten missed a ban that stays). */
static void test_ban_in_place_race(void **state)
{
	enum { N = 512 };
	struct fc_t *t = *state;
	struct fc_store *st;
	struct fc_err err;
	char req[32];
	pid_t pid;
	int i, n, status, bad = 0, rounds = 0;
	uint64_t until;
	struct timespec ts;
	cpu_set_t cpus, one;

	assert_int_equal(fc_store_begin(t->st, &err), 0);
	for (i = 0; i < N; i++)
		fc_ip_ban(t, i, 0, true);
	assert_int_equal(fc_store_commit(t->st, &err), 0);
	fc_publish_changes(t);
	assert_int_equal(fc_build(t, t->base, t->size), 0);
	/* One CPU for both: the reader runs only where the writer was preempted. */
	assert_int_equal(sched_getaffinity(0, sizeof(cpus), &cpus), 0);
	CPU_ZERO(&one);
	CPU_SET(sched_getcpu(), &one);
	assert_int_equal(sched_setaffinity(0, sizeof(one), &one), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) { /* the writer, on a connection of its own */
		if (fc_store_open(t->db, &st, &err) < 0)
			_exit(1);
		t->st = st; /* the parent's connection is not the child's to use, nor to close */
		/* 40 rounds, or as many as 10 s allow on a loaded machine (at least 2). */
		clock_gettime(CLOCK_MONOTONIC, &ts);
		until = (uint64_t)ts.tv_sec + 10;
		for (n = 0; n < 40 && (n < 2 || (uint64_t)ts.tv_sec < until); n++) {
			bad = fc_store_begin(t->st, &err);
			for (i = 0; i < N && !bad; i++) /* the even ones stay banned, with another expiry */
				bad = fc_ip_ban_try(t->st, i, i % 2 ? 0 : (int64_t)(T0 / SEC) + 3600 + n, i % 2 == 0 || n % 2, &err);
			if (bad || fc_store_commit(t->st, &err) < 0 || fc_publish_shm(t, &err) < 0) {
				fprintf(stderr, "writer: %s\n", err.msg);
				_exit(1);
			}
			clock_gettime(CLOCK_MONOTONIC, &ts);
		}
		_exit(0);
	}
	clock_gettime(CLOCK_MONOTONIC, &ts);
	until = (uint64_t)ts.tv_sec + 60;
	while (waitpid(pid, &status, WNOHANG) == 0 && (uint64_t)ts.tv_sec < until) {
		for (n = 0; n < 2; n++) {
			for (i = 0; i < N; i += 2, rounds++) {
				fc_ip_req(i, req);
				bad += fc_decide(t, req, T0, NULL) != FC_L7_BANNED;
			}
			if (n == 0 && (kill(pid, SIGSTOP) < 0 || waitpid(pid, &status, WUNTRACED) != pid ||
				       !WIFSTOPPED(status)))
				break; /* it has just ended */
		}
		kill(pid, SIGCONT);
		clock_gettime(CLOCK_MONOTONIC, &ts);
	}
	if ((uint64_t)ts.tv_sec >= until) {
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
	}
	assert_int_equal(sched_setaffinity(0, sizeof(cpus), &cpus), 0);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	print_message("%d lookups while the writer changed them, %d missed\n", rounds, bad);
	assert_int_equal(bad, 0);
	assert_true(rounds > N);
}

/* Editing limits keeps a slot's state; a new match starts afresh; a
 * publish that changes nothing changes no seq. */
static void test_republish(void **state)
{
	struct fc_t *t = *state;
	struct fc_shm_result res;
	struct fc_err err;
	uint64_t seq;

	fc_policy(t, 7, "uid=u1", "3/m", "drop", 0, 0);
	fc_publish(t);
	assert_int_equal(fc_build(t, t->base, t->size), 0);
	assert_int_equal(fc_passes(t, "uid=u1", T0, 2), 2);
	seq = t->ix.seq;
	fc_policy(t, 7, "uid=u1", "3/m", "drop", 4, 0); /* burst 4: one more than before */
	fc_publish(t);
	assert_int_equal(fc_build(t, t->base, t->size), 0);
	assert_true(t->ix.seq > seq);
	assert_int_equal(fc_passes(t, "uid=u1", T0, 5), 2);
	fc_policy(t, 7, "uid=u2", "3/m", "drop", 4, 0);
	fc_publish(t);
	assert_int_equal(fc_build(t, t->base, t->size), 0);
	assert_int_equal(fc_passes(t, "uid=u2", T0, 5), 4);
	seq = t->ix.seq;
	assert_int_equal(fc_shm_full(t, 0, &res, &err), 0);
	assert_false(res.published);
	assert_int_equal(res.seq, seq);
}

static void fc_corpus(struct fc_t *t)
{
	struct fc_uid_ban ub = { .uid = "evil", .created = 1 };
	struct fc_ban_row br = { .created = 1 };
	struct fc_err err;
	bool existed;

	fc_policy(t, 1, "uid=u1,arg:a=1", "3/m", "drop", 0, 0);
	fc_policy(t, 2, "header:x=y,ip=2001:db8::/32", "2/s,10/m", "delay", 1, 2);
	fc_policy(t, 3, "uri=/x", "1/m", "log", 0, 0);
	assert_int_equal(fc_store_uid_ban_put(t->st, &ub, &existed, 1, &err), 0);
	assert_int_equal(fc_prefix_parse("203.0.113.0/24", &br.p, &err), 0);
	assert_int_equal(fc_store_ban_put(t->st, &br, &err), 0);
	fc_publish(t);
}

/* Every single-byte corruption of the header and of the live block's items:
 * the build rejects or skips, never reads out of bounds (ASan watches), and
 * whatever it builds decides without faulting. */
static void test_corruption(void **state)
{
	static const uint8_t flips[] = { 0xff, 0x01, 0x80, 0x00 };
	struct fc_t *t = *state;
	const struct fc_shm_header *h;
	const struct fc_shm_block *blk;
	struct fc_l7_result res;
	struct fc_l7_req rq;
	size_t span, i, f, built = 0, refused = 0;
	uint8_t *copy;

	fc_corpus(t);
	h = t->base;
	blk = (const struct fc_shm_block *)((const uint8_t *)t->base + FC_SHM_BLOCK_OFF(h->active));
	span = FC_SHM_BLOCK_OFF(h->active) + sizeof(*blk) + blk->used;
	/* A private copy of the whole file, so the slots stay in bounds. */
	copy = malloc(t->size);
	assert_non_null(copy);
	memcpy(copy, t->base, t->size);
	for (i = 0; i < span; i++) {
		if (i >= sizeof(*h) && i < FC_SHM_BLOCK_OFF(h->active))
			continue; /* the other block and padding: not read */
		for (f = 0; f < sizeof(flips); f++) {
			uint8_t old = copy[i];
			int rc;

			copy[i] = (uint8_t)(flips[f] ? old ^ flips[f] : 0);
			if (copy[i] == old) {
				continue;
			}
			rc = fc_build(t, copy, t->size);
			if (rc == 0) {
				built++;
				fc_req(&t->ix, &rq, "uid=u1 arg:a=1 header:x=y ip=2001:db8::1 uri=/x");
				fc_l7_decide(&t->ix, &rq, T0, &res);
			} else {
				refused++;
			}
			copy[i] = old;
		}
	}
	assert_true(built > 0);
	assert_true(refused > 0);
	free(copy);
}

/* Every truncation of the live block: cut at each byte, items past the cut
 * are skipped, nothing is read past it. */
static void test_truncation(void **state)
{
	struct fc_t *t = *state;
	struct fc_shm_header *h;
	struct fc_shm_block *blk;
	struct fc_l7_result res;
	struct fc_l7_req rq;
	uint64_t used, cut;

	fc_corpus(t);
	h = t->base;
	blk = (struct fc_shm_block *)((uint8_t *)t->base + FC_SHM_BLOCK_OFF(h->active));
	used = blk->used;
	for (cut = 0; cut <= used; cut++) {
		blk->used = cut;
		assert_int_equal(fc_build(t, t->base, t->size), 0);
		assert_true(t->ix.npolicies <= 3);
		fc_req(&t->ix, &rq, "uid=u1 arg:a=1 header:x=y ip=2001:db8::1 uri=/x");
		fc_l7_decide(&t->ix, &rq, T0, &res);
	}
	blk->used = used;
	/* A file shorter than its header says is refused whole. */
	assert_int_equal(fc_build(t, t->base, sizeof(struct fc_shm_header) - 1), -1);
	assert_int_equal(fc_build(t, t->base, t->size - 1), -1);
	assert_string_equal(t->ix.why, "not a freqctl shm of this version");
}

/* Runs work(t, i) in 8 forked processes at once; returns the sum of what
 * they return (requests passed). */
static int fc_forked(struct fc_t *t, int (*work)(struct fc_t *t, int i))
{
	int i, status, total = 0, fds[8][2];
	pid_t pids[8];

	for (i = 0; i < 8; i++) {
		assert_int_equal(pipe(fds[i]), 0);
		pids[i] = fork();
		assert_true(pids[i] >= 0);
		if (pids[i] == 0) {
			int ok = work(t, i);

			(void)!write(fds[i][1], &ok, sizeof(ok));
			_exit(0);
		}
		close(fds[i][1]);
	}
	for (i = 0; i < 8; i++) {
		int ok = 0;

		assert_int_equal(read(fds[i][0], &ok, sizeof(ok)), sizeof(ok));
		close(fds[i][0]);
		assert_int_equal(waitpid(pids[i], &status, 0), pids[i]);
		total += ok;
	}
	return total;
}

static int fc_racer(struct fc_t *t, int i)
{
	(void)i;
	return fc_passes(t, "uid=racer", T0 + 5 * SEC, 5000);
}

/* 8 forked processes on one slot admit exactly the limit. */
static void fc_race(struct fc_t *t)
{
	assert_int_equal(fc_forked(t, fc_racer), 10000);
	assert_int_equal(t->ix.slots[1].passed, 10000);
}

static void test_exact_across_processes(void **state)
{
	struct fc_t *t = *state;

	fc_policy(t, 1, "uid=racer", "10000/h", "drop", 0, 0);
	fc_publish(t);
	assert_int_equal(fc_build(t, t->base, t->size), 0);
	fc_race(t);
}

static void test_exact_across_processes_window(void **state)
{
	struct fc_policy_spec p = { .id = 1, .algo = FC_ALGO_WINDOW };
	struct fc_t *t = *state;
	struct fc_policy_row row;
	struct fc_err err;

	assert_int_equal(fc_match_parse("uid=racer", &p, &err), 0);
	assert_int_equal(fc_rates_parse("10000/h", &p, &err), 0);
	assert_int_equal(fc_store_policy_put(t->st, &p, 1, &row, &err), 0);
	fc_publish(t);
	assert_int_equal(fc_build(t, t->base, t->size), 0);
	fc_race(t);
}

/* Tiers charge nothing on denial; across policies too. */
static void test_tiers_and_policies_all_or_nothing(void **state)
{
	struct fc_t *t = *state;
	struct fc_shm_slot before;

	fc_policy(t, 1, "uid=u1", "10/s,3/m", "drop", 0, 0);
	fc_policy(t, 2, "uid=u1,arg:a=1", "1/m", "drop", 0, 0);
	fc_publish(t);
	assert_int_equal(fc_build(t, t->base, t->size), 0);
	assert_int_equal(fc_passes(t, "uid=u1 arg:a=1", T0, 3), 1); /* policy 2 denies after 1 */
	before = t->ix.slots[1];
	assert_int_equal(fc_passes(t, "uid=u1 arg:a=1", T0, 3), 0);
	assert_memory_equal(before.state, t->ix.slots[1].state, sizeof(before.state)); /* policy 1 uncharged */
	assert_int_equal(fc_passes(t, "uid=u1", T0, 5), 2); /* 3 - 1 */
}

/* A policy of an override test: http puts an ip=-only one in nginx. */
struct fc_over_def {
	const char *match, *rates;
	bool over, http;
};

/* Policies 1..n as defs says, published and read. */
static void fc_overs(struct fc_t *t, const struct fc_over_def *defs, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		struct fc_policy_spec p = { .id = (uint32_t)(i + 1), .override = defs[i].over,
					    .layer = defs[i].http ? FC_LAYER_HTTP : FC_LAYER_AUTO };

		fc_policy_put(t, &p, defs[i].match, defs[i].rates);
	}
	fc_publish(t);
	assert_int_equal(fc_build(t, t->base, t->size), 0);
}

#define FC_OVERS(t, ...)                                                           \
	do {                                                                       \
		static const struct fc_over_def defs_[] = { __VA_ARGS__ };         \
		fc_overs(t, defs_, sizeof(defs_) / sizeof(defs_[0]));              \
	} while (0)

/* req is refused by policy, having matched that many policies of which
 * overrides switched off overridden. */
static void fc_refused_by(struct fc_t *t, const char *req, uint32_t policy, unsigned matched, unsigned overridden)
{
	struct fc_l7_result res;

	assert_int_equal(fc_decide(t, req, T0, &res), FC_L7_REJECTED);
	assert_int_equal(res.policy, policy);
	assert_int_equal(res.matched, matched);
	assert_int_equal(res.overridden, overridden);
}

/* The index's policy of id. */
static const struct fc_l7_policy *fc_ix_policy(const struct fc_t *t, uint32_t id)
{
	size_t i;

	for (i = 0; i < t->ix.npolicies; i++)
		if (t->ix.pol[i].id == id)
			return &t->ix.pol[i];
	fail_msg("policy %u is not in the index", id);
	return NULL;
}

/* The partner of the issue, in nginx: ip=* 5/m (--layer http) and an
 * address's 10/m override; a prefix override and an exact policy inside
 * it (not more general: it still applies); an exact override over that
 * prefix. What an override switches off is not charged. */
static void test_override_partner(void **state)
{
	struct fc_t *t = *state;

	FC_OVERS(t, { "ip=*", "5/m", false, true }, { "ip=198.18.0.7", "10/m", true, true },
		 { "ip=198.18.1.0/24", "4/m", true, true }, { "ip=198.18.1.9", "1/m", false, true },
		 { "ip=198.18.1.10", "7/m", true, true });
	assert_true(t->ix.has_override);
	assert_int_equal(fc_passes(t, "ip=198.18.0.7", T0, 20), 10);
	fc_refused_by(t, "ip=198.18.0.7", 2, 2, 1);
	assert_int_equal(fc_passes(t, "ip=198.18.0.8", T0, 20), 5);
	assert_int_equal(t->ix.slots[fc_ix_policy(t, 1)->slot].passed, 5); /* never the partner's */
	/* The /24 as one bucket of 4, ip=* off; .9's own 1 within it. */
	assert_int_equal(fc_passes(t, "ip=198.18.1.9", T0, 5), 1);
	assert_int_equal(fc_passes(t, "ip=198.18.1.5", T0, 5), 3);
	assert_int_equal(fc_passes(t, "ip=198.18.1.10", T0, 10), 7);
	assert_int_equal(t->ix.slots[fc_ix_policy(t, 3)->slot].passed, 4);
	assert_int_equal(t->ix.slots[fc_ix_policy(t, 1)->slot].passed, 5);
}

/* uid=partner over uid=*, and over uri=/login (its dimension absent from
 * the override's match); a more specific policy that is no override still
 * applies beside it. */
static void test_override_uid(void **state)
{
	struct fc_t *t = *state;

	FC_OVERS(t, { "uid=*", "2/m", false, false }, { "uid=partner", "6/m", true, false },
		 { "uid=partner,uri=/x", "1/m", false, false }, { "uri=/login", "1/m", false, false });
	assert_int_equal(fc_passes(t, "uid=partner uri=/x", T0, 3), 1);     /* 2 and 3 */
	assert_int_equal(fc_passes(t, "uid=partner uri=/login", T0, 6), 5); /* 2 alone: 6 less 1 */
	assert_int_equal(fc_passes(t, "uid=partner uri=/y", T0, 10), 0);    /* 2's 6 all used */
	assert_int_equal(fc_passes(t, "uid=bob uri=/login", T0, 3), 1);     /* 1 and 4 */
	assert_int_equal(fc_passes(t, "uid=bob uri=/y", T0, 5), 1);
	assert_int_equal(t->ix.slots[fc_ix_policy(t, 1)->slot].passed, 2);
	assert_int_equal(t->ix.slots[fc_ix_policy(t, 4)->slot].passed, 1);
}

/*
 * Several overrides at once, one switched off by a more specific one, and
 * two each more general than the other. For uid=alice uri=/api/v1/x: 2
 * switches off 1, 3 switches off 5, 4 switches off all four (it is more
 * specific than each): only 4 applies.
 */
static void test_override_several(void **state)
{
	struct fc_t *t = *state;
	struct fc_l7_result res;

	FC_OVERS(t, { "uri=/api/*", "100/m", false, false }, { "uri=/api/v1/*", "3/m", true, false },
		 { "uid=alice", "4/m", true, false }, { "uid=alice,uri=/api/v1/*", "2/m", true, false },
		 { "uid=*", "1/m", false, false }, { "uid=dave,arg:k=*", "3/m", true, false },
		 { "uid=dave,header:h=*", "2/m", true, false });
	assert_int_equal(fc_passes(t, "uid=alice uri=/api/v1/x", T0, 10), 2);
	fc_refused_by(t, "uid=alice uri=/api/v1/x", 4, 5, 4);
	/* uid=* counts as * (a per-key policy): more general than policy 2. */
	assert_int_equal(fc_passes(t, "uid=bob uri=/api/v1/y", T0, 10), 3);
	assert_int_equal(fc_passes(t, "uid=alice uri=/other", T0, 10), 4);
	assert_int_equal(fc_passes(t, "uid=carol uri=/api/z", T0, 10), 1); /* 1 and 5, no override */
	/* 6 and 7 differ only in * dimensions: both apply; each switches off 5. */
	assert_int_equal(fc_decide(t, "uid=dave arg:k=1 header:h=v", T0, &res), FC_L7_PASS);
	assert_int_equal(res.overridden, 1);
	assert_int_equal(fc_passes(t, "uid=dave arg:k=1 header:h=v", T0, 5), 1);
	assert_int_equal(fc_passes(t, "uid=dave arg:k=2", T0, 5), 3);
}

/* The relation by value: each pair (q, p) and whether q is more general. */
static void test_more_general(void **state)
{
	static const struct {
		const char *q, *p;
		bool more;
	} cases[] = {
		{ "ip=*", "ip=198.18.0.7", true },
		{ "ip=198.18.0.0/16", "ip=198.18.1.0/24", true },
		{ "ip=198.18.1.0/24", "ip=198.18.0.0/16", false },
		{ "ip=198.18.0.0/16", "ip=198.19.0.1", false },
		{ "ip=198.18.0.7", "ip=198.18.0.7,uid=a", true },
		{ "ip=2001:db8::/32", "ip=198.18.0.7,uid=b", false },
		{ "uid=*", "uid=a", true },
		{ "uid=a", "uid=*,arg:x=1", false },
		{ "uid=a", "uid=b,uri=/c", false },
		{ "uid=a", "uid=a,uri=/c", true },
		{ "uid=a,uri=/c", "uid=a", false }, /* more specific */
		{ "uri=/c", "uid=a", true },        /* uri absent from p's match */
		{ "uri=/c", "uid=a,uri=/c", true },
		{ "uri=/c", "uri=/api/*", false },
		{ "uid=*,uri=/c", "uid=a", true },
		{ "ip=*", "uid=*", true },
		{ "uri=/api/*", "uri=/api/v1", true },
		{ "uri=/api/*", "uri=/api/v1/*", true },
		{ "uri=/api/v1/*", "uri=/api/*", false },
		{ "uri=/api/v1", "uri=/api/v1/*", false },
		{ "arg:k=*", "uid=a", true },
		{ "header:h=v", "header:h=v,uid=*", true },
		{ "header:h=v", "header:g=v", true },
		{ "header:h=v", "header:h=w", false },
	};
	struct fc_t *t = *state;
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct fc_over_def pair[2] = { { cases[i].q, "1/s", false, true }, { cases[i].p, "1/s", false, true } };

		fc_overs(t, pair, 2);
		if (fc_l7_more_general(fc_ix_policy(t, 1), fc_ix_policy(t, 2)) != cases[i].more)
			fail_msg("%s more general than %s: expected %s", cases[i].q, cases[i].p, cases[i].more ? "yes" : "no");
		assert_int_equal(fc_store_policy_del(t->st, 1, &(bool){ 0 }, &(struct fc_err){ 0 }), 0);
		assert_int_equal(fc_store_policy_del(t->st, 2, &(bool){ 0 }, &(struct fc_err){ 0 }), 0);
	}
}

/* Vector i's two policies, like p: an aggregate one (uid=aI) as policy
 * 1 + i, and a per-key one (uid=*,arg:a=I) as policy 101 + i, a the letter
 * of the vectors' kind; and the request text each is tried with. */
static void fc_vector_policies(struct fc_t *t, size_t i, char a, struct fc_policy_spec p, const char *rates)
{
	char match[64];

	p.id = (uint32_t)(1 + i);
	snprintf(match, sizeof(match), "uid=%c%zu", a, i);
	fc_policy_put(t, &p, match, rates);
	p.id = (uint32_t)(101 + i);
	snprintf(match, sizeof(match), "uid=*,arg:%c=%zu", a, i);
	fc_policy_put(t, &p, match, rates);
}

static void fc_vector_req(char *req, size_t len, bool keyed, char a, size_t i)
{
	if (keyed)
		snprintf(req, len, "uid=k%zu arg:%c=%zu", i, a, i);
	else
		snprintf(req, len, "uid=%c%zu", a, i);
}

/* The shared sliding-window vectors (tests/bpf/fc_vectors.h) through the
 * engine, on an aggregate and a per-key policy each: the same counts as
 * the algorithm and the packet path. */
static void test_sliding_vectors(void **state)
{
	struct fc_t *t = *state;
	const struct fc_vector *v;
	const struct fc_vec_step *s;
	char req[64];
	size_t i, j, keyed;
	int got;

	for (i = 0; i < FC_NVECTORS; i++)
		fc_vector_policies(t, i, 'v', (struct fc_policy_spec){ .algo = FC_ALGO_SLIDING },
				   fc_sliding_vectors[i].rates);
	fc_publish(t);
	assert_int_equal(fc_build(t, t->base, t->size), 0);
	for (keyed = 0; keyed < 2; keyed++) {
		for (i = 0; i < FC_NVECTORS; i++) {
			v = &fc_sliding_vectors[i];
			fc_vector_req(req, sizeof(req), keyed, 'v', i);
			for (j = 0; j < FC_VEC_STEPS && v->step[j].tries; j++) {
				s = &v->step[j];
				got = fc_passes(t, req, T0 + s->at_ms * MS, (int)s->tries);
				if (got != (int)s->admitted)
					fail_msg("%s (%s): step %zu (%u ms): %d admitted, expected %u", v->name,
						 keyed ? "per key" : "aggregate", j, s->at_ms, got, s->admitted);
			}
		}
	}
}

/* A sliding refusal's headers: Retry-After when the rule next holds,
 * RateLimit's remaining and window. */
static void test_sliding_headers(void **state)
{
	struct fc_policy_spec p = { .id = 1, .algo = FC_ALGO_SLIDING };
	struct fc_t *t = *state;
	struct fc_l7_result res;

	fc_policy_put(t, &p, "uid=h", "10/m");
	fc_publish(t);
	assert_int_equal(fc_build(t, t->base, t->size), 0);
	assert_int_equal(fc_passes(t, "uid=h", T0 + 50 * SEC, 10), 10);
	assert_int_equal(fc_passes(t, "uid=h", T0 + 90 * SEC, 5), 5);
	assert_int_equal(fc_decide(t, "uid=h", T0 + 90 * SEC, &res), FC_L7_REJECTED);
	assert_int_equal(res.policy, 1);
	assert_int_equal(res.retry_ns, 6 * SEC); /* 10*(60-36) + 6*60 <= 600 */
	assert_int_equal(res.remaining, 0);
	assert_int_equal(res.limit, 10);
	assert_int_equal(res.window_s, 60);
	assert_int_equal(fc_decide(t, "uid=h", T0 + 96 * SEC, &res), FC_L7_PASS);
}

/* The shared warm-up vectors (tests/bpf/fc_vectors.h) through the engine,
 * on an aggregate and a per-key policy each: the same counts as the
 * algorithm and the packet path. The engine charges 1 a request: the bytes
 * vector is the packet path's. */
struct fc_warm_l7 {
	struct fc_t *t;
	char req[64];
};

static uint32_t fc_warm_l7_step(void *arg, uint32_t at_ms, uint32_t tries)
{
	struct fc_warm_l7 *w = arg;

	return (uint32_t)fc_passes(w->t, w->req, T0 + at_ms * MS, (int)tries);
}

static void test_warm_vectors(void **state)
{
	struct fc_t *t = *state;
	struct fc_warm_l7 w = { .t = t };
	const struct fc_warm_vector *v;
	uint32_t got[FC_WARM_BINS];
	size_t i, keyed;
	int bad;

	for (i = 0; i < FC_NWARM; i++)
		fc_vector_policies(t, i, 'w', (struct fc_policy_spec){ .warmup = fc_warm_vectors[i].warmup_s },
				   fc_warm_vectors[i].rates);
	fc_publish(t);
	assert_int_equal(fc_build(t, t->base, t->size), 0);
	for (keyed = 0; keyed < 2; keyed++) {
		for (i = 0; i < FC_NWARM; i++) {
			v = &fc_warm_vectors[i];
			if (v->cost > 1)
				continue;
			fc_vector_req(w.req, sizeof(w.req), keyed, 'w', i);
			bad = fc_warm_run(v, fc_warm_l7_step, &w, got);
			if (bad >= 0)
				fail_msg("%s (%s): bin %d: %u admitted, expected %u", v->name,
					 keyed ? "per key" : "aggregate", bad, got[bad], v->admitted[bad]);
		}
	}
}

/* A warming policy's refusal: RateLimit-Policy's quota and the retry at the
 * ramped rate; a key holds its entry while its bucket is warm (D past its
 * TAT), not only while the TAT leads; delay waits to the ramped rate with a
 * queue of the warm rate's intervals. */
static void test_warm_headers(void **state)
{
	struct fc_policy_spec p = { .id = 1, .warmup = 10 }, k = { .id = 2, .warmup = 10 };
	struct fc_policy_spec d = { .id = 3, .warmup = 10, .burst = 1, .action = FC_ACTION_DELAY, .delay_burst = 3 };
	struct fc_t *t = *state;
	struct fc_l7_result res;
	uint32_t i, n = 0;

	fc_policy_put(t, &p, "uid=h", "30/s");
	fc_policy_put(t, &k, "uid=*,arg:hk=1", "30/s");
	fc_policy_put(t, &d, "uid=d", "10/s");
	fc_publish(t);
	assert_int_equal(fc_build(t, t->base, t->size), 0);
	assert_int_equal(fc_passes(t, "uid=h", T0, 1), 1);
	assert_int_equal(fc_decide(t, "uid=h", T0, &res), FC_L7_REJECTED);
	assert_int_equal(res.limit, 10); /* N/3 */
	assert_int_equal(res.window_s, 1);
	assert_int_equal(res.remaining, 0);
	assert_int_equal(res.retry_ns, 3 * 33333334); /* 3T */
	assert_int_equal(fc_passes(t, "uid=h", T0 + 5 * SEC, 1), 1);
	assert_int_equal(fc_decide(t, "uid=h", T0 + 5 * SEC, &res), FC_L7_REJECTED);
	assert_int_equal(res.limit, 20); /* half way */
	/* 3TD/(D+2e), rounded up in fixed point: never shorter, within 2^-19 */
	assert_true(res.retry_ns >= 50000001 && res.retry_ns <= 50000001 + 50000001 / (1 << 19));

	assert_int_equal(fc_passes(t, "uid=x arg:hk=1", T0, 1), 1);
	for (i = 0; i < t->ix.nkeys; i++) {
		if (t->ix.keys[i].slot != t->ix.pol[1].slot || t->ix.keys[i].tag < FC_SHM_KEY_TAG_MIN)
			continue;
		n++;
		/* TAT T0 + 1 s (one request of credit), warm for 10 s after. */
		assert_true(t->ix.keys[i].idle_ns >= T0 + 11 * SEC);
	}
	assert_int_equal(n, 1);

	assert_int_equal(fc_decide(t, "uid=d", T0, &res), FC_L7_PASS);
	assert_int_equal(fc_decide(t, "uid=d", T0, &res), FC_L7_DELAYED);
	assert_int_equal(res.delay_ns, 3 * SEC / 10); /* cold: 3T = 300 ms apart */
	assert_int_equal(fc_decide(t, "uid=d", T0, &res), FC_L7_REJECTED); /* 3 x 100 ms of queue hold one */
}

/* A warm-up the packet path or a worker could not run is refused with its
 * item: beside an algorithm without a rate, with no word left after the
 * tiers, outside 1 s .. 1 d, or on a burst beyond the ramp's arithmetic. */
static void test_warm_item_checked(void **state)
{
	struct fc_policy_spec p = { .id = 1, .warmup = 10 };
	struct fc_t *t = *state;
	struct fc_shm_policy *it;
	const struct fc_shm_header *h;
	size_t i, j;
	static const struct {
		uint32_t warmup_ms;
		uint8_t algo, ntiers;
		uint64_t tolerance_ns;
	} bad[] = {
		{ 10000, FC_ALGO_WINDOW, 1, SEC }, { 10000, FC_ALGO_GCRA, 4, SEC }, { 999, FC_ALGO_GCRA, 1, SEC },
		{ 86400001, FC_ALGO_GCRA, 1, SEC }, { 10000, FC_ALGO_GCRA, 1, FC_WARM_TOL_MAX + 1 },
	};

	fc_policy_put(t, &p, "uid=item", "30/s");
	fc_publish(t);
	h = t->base;
	it = (struct fc_shm_policy *)((uint8_t *)t->base + FC_SHM_BLOCK_OFF(h->active) + sizeof(struct fc_shm_block));
	assert_int_equal(it->warmup_ms, 10000);
	assert_int_equal(fc_build(t, t->base, t->size), 0);
	assert_int_equal(t->ix.npolicies, 1);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct fc_shm_policy keep = *it;

		it->warmup_ms = bad[i].warmup_ms;
		it->algo = bad[i].algo;
		it->ntiers = bad[i].ntiers;
		it->tier[0].tolerance_ns = bad[i].tolerance_ns;
		for (j = 1; j < bad[i].ntiers; j++)
			it->tier[j] = it->tier[0];
		assert_int_equal(fc_build(t, t->base, t->size), 0);
		assert_int_equal(t->ix.npolicies, 0);
		assert_int_equal(t->ix.skipped, 1);
		*it = keep;
	}
}

static int fc_warm_racer(struct fc_t *t, int i)
{
	(void)i;
	return fc_passes(t, "uid=wracer", T0 + 5 * SEC, 5000);
}

/* 8 forked processes on a cold warming slot: exactly one passes (the
 * ramp's first interval, 3 x 86.4 s, is far longer than the race). */
static void test_warm_across_processes(void **state)
{
	struct fc_policy_spec p = { .id = 1, .warmup = 3600 };
	struct fc_t *t = *state;

	fc_policy_put(t, &p, "uid=wracer", "1000/d");
	fc_publish(t);
	assert_int_equal(fc_build(t, t->base, t->size), 0);
	assert_int_equal(fc_forked(t, fc_warm_racer), 1);
	assert_int_equal(t->ix.slots[1].passed, 1);
}

/* delay: 10/s, burst 1, up to 3 waiting: 1 now, then 100, 200, 300 ms, then no. */
static void test_delay(void **state)
{
	struct fc_t *t = *state;
	struct fc_l7_result res;

	fc_policy(t, 1, "uid=u1", "10/s", "delay", 1, 3);
	fc_policy(t, 2, "uid=u1,arg:a=1", "5/s", "delay", 1, 3);
	fc_publish(t);
	assert_int_equal(fc_build(t, t->base, t->size), 0);
	assert_int_equal(fc_decide(t, "uid=u1", T0, &res), FC_L7_PASS);
	assert_int_equal(fc_decide(t, "uid=u1", T0, &res), FC_L7_DELAYED);
	assert_int_equal(res.delay_ns, SEC / 10);
	assert_int_equal(fc_decide(t, "uid=u1", T0, &res), FC_L7_DELAYED);
	assert_int_equal(res.delay_ns, 2 * SEC / 10);
	assert_int_equal(fc_decide(t, "uid=u1", T0, &res), FC_L7_DELAYED);
	assert_int_equal(res.delay_ns, 3 * SEC / 10);
	assert_int_equal(fc_decide(t, "uid=u1", T0, &res), FC_L7_REJECTED);
	assert_int_equal(res.policy, 1);
	/* Two delay policies: the longest wait wins. 1 s later policy 1 has room
	 * for 4 (1 + 3 waiting) but policy 2 spaces by 200 ms. */
	assert_int_equal(fc_decide(t, "uid=u1 arg:a=1", T0 + SEC, &res), FC_L7_PASS);
	assert_int_equal(fc_decide(t, "uid=u1 arg:a=1", T0 + SEC, &res), FC_L7_DELAYED);
	assert_int_equal(res.delay_ns, SEC / 5);
	assert_int_equal(res.policy, 2);
}

/* Decoding as applications decode query strings: %XX, '+' a space; what is
 * not a valid escape stays as written; a cap is never passed. */
static void test_decode(void **state)
{
	static const struct {
		const char *in, *out;
	} v[] = {
		{ "login", "login" }, { "%6Cogin", "login" }, { "%6cogin", "login" }, { "lo+gin", "lo gin" },
		{ "%2B", "+" },	      { "%zz", "%zz" },	      { "%4", "%4" },	    { "100%", "100%" },
		{ "%00x", "\0x" },   { "", "" },
	};
	char out[64];
	size_t i, n;

	(void)state;
	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		n = fc_l7_decode(v[i].in, strlen(v[i].in), out, sizeof(out));
		assert_int_equal(n, strlen(v[i].out) + (v[i].out[0] == 0 && v[i].in[0] ? 2 : 0));
		assert_memory_equal(out, v[i].out, n);
	}
	assert_int_equal(fc_l7_decode("%41%41%41", 9, out, 3), 3);
	assert_int_equal(fc_l7_decode("%41%41%41", 9, out, 2), SIZE_MAX);
	assert_int_equal(fc_l7_args_max("a=1&b=2&&c", 10), 4);
}

/* An argument found as nginx's $arg_uid finds it (ngx_http_arg): its first
 * occurrence at the start or after a '&', the name in any case and followed
 * by '='; the value raw, and whether it would decode. */
static void test_arg(void **state)
{
	static const struct {
		const char *q, *v; /* v NULL: not there */
		bool enc;
	} c[] = {
		{ "uid=u1", "u1", false },	 { "UID=u1", "u1", false },	  { "xuid=1&uid=2", "2", false },
		{ "a=uid=3", NULL, false },	 { "uid", NULL, false },	  { "uid&uid=4", "4", false },
		{ "uid=", "", false },		 { "uid=a%20b&x=1", "a%20b", true }, { "uid=a+b", "a+b", true },
		{ "uid=1&uid=2", "1", false },	 { "", NULL, false },		  { "ui", NULL, false },
		{ "uidx=1&uId=6", "6", false }, { "&uid=5", "5", false },	  { "x=%&uid=7&y=+", "7", false },
		{ "uid=&", "", false },		 { "uid==", "=", false },
	};
	struct fc_l7_str v;
	size_t i;
	bool enc, got;

	(void)state;
	for (i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		enc = !c[i].enc;
		got = fc_l7_arg(c[i].q, strlen(c[i].q), "uid", 3, &v, &enc);
		assert_int_equal(got, c[i].v != NULL);
		if (!got)
			continue;
		assert_int_equal(v.len, strlen(c[i].v));
		assert_memory_equal(v.data, c[i].v, v.len);
		assert_int_equal(enc, c[i].enc);
	}
	/* The query's end is its length, not a NUL. */
	assert_false(fc_l7_arg("uid=9", 3, "uid", 3, &v, &enc));
	assert_false(fc_l7_arg(NULL, 0, "uid", 3, &v, &enc)); /* a request without a query */
	assert_true(fc_l7_arg("uid=9&", 4, "uid", 3, &v, &enc));
	assert_int_equal(v.len, 0);
}

/* nginx's ngx_http_arg, byte by byte, for test_arg_random. */
static bool ngx_arg_ref(const char *q, size_t len, const char *name, size_t nlen, struct fc_l7_str *v, bool *enc)
{
	size_t s, i, e;

	for (s = 0; s + nlen < len; s++) {
		if (s && q[s - 1] != '&')
			continue;
		for (i = 0; i < nlen && tolower((unsigned char)q[s + i]) == name[i]; i++)
			;
		if (i < nlen || q[s + nlen] != '=')
			continue;
		for (e = s + nlen + 1; e < len && q[e] != '&'; e++)
			;
		v->data = q + s + nlen + 1;
		v->len = e - (s + nlen + 1);
		*enc = memchr(v->data, '%', v->len) || memchr(v->data, '+', v->len);
		return true;
	}
	return false;
}

/* fc_l7_arg against the byte-by-byte reference on random queries of every
 * length around its word size, each in a buffer of exactly its length (ASan
 * sees a read past it). */
static void test_arg_random(void **state)
{
	static const char bytes[] = "uUiIdD=&%+a\x80\xff";
	struct fc_l7_str v, rv;
	bool enc, renc, got;
	unsigned seed = 7;
	size_t len, i, round;
	char *q;

	(void)state;
	for (round = 0; round < 200000; round++) {
		len = rand_r(&seed) % 40;
		q = malloc(len ? len : 1);
		assert_non_null(q);
		for (i = 0; i < len; i++)
			q[i] = bytes[rand_r(&seed) % (sizeof(bytes) - 1)];
		got = fc_l7_arg(q, len, "uid", 3, &v, &enc);
		assert_int_equal(got, ngx_arg_ref(q, len, "uid", 3, &rv, &renc));
		if (got) {
			assert_ptr_equal(v.data, rv.data);
			assert_int_equal(v.len, rv.len);
			assert_int_equal(enc, renc);
		}
		free(q);
	}
}

/*
 * arg:api=login is charged however it is spelled: percent-escaped, its name
 * escaped, given after another value of the same argument; a value given
 * twice is one match, not two charges; a header sent twice matches if
 * either line does.
 */
static void test_spelling(void **state)
{
	struct fc_t *t = *state;

	fc_policy(t, 1, "arg:api=login", "3/m", "drop", 3, 0);
	fc_policy(t, 2, "header:x-key=k", "1/m", "drop", 1, 0);
	fc_publish(t);
	assert_int_equal(fc_build(t, t->base, t->size), 0);
	assert_int_equal(fc_decide(t, "query=api=%6Cogin", T0, NULL), FC_L7_PASS);
	assert_int_equal(fc_decide(t, "query=x=1&api=x&api=login", T0, NULL), FC_L7_PASS);
	assert_int_equal(fc_decide(t, "query=%61pi=lo%67in&api=login", T0, NULL), FC_L7_PASS);
	assert_int_equal(fc_decide(t, "query=api=LOGIN&api=log+in&apix=login", T0, NULL), FC_L7_PASS);
	assert_int_equal(fc_decide(t, "query=api=login", T0, NULL), FC_L7_REJECTED);
	assert_int_equal(t->ix.slots[1].passed + t->ix.slots[1].denied, 4);
	assert_int_equal(fc_decide(t, "header:x-key=a header:x-key=k", T0, NULL), FC_L7_PASS);
	assert_int_equal(fc_decide(t, "header:x-key=k header:x-key=b", T0, NULL), FC_L7_REJECTED);
	assert_int_equal(fc_decide(t, "header:x-key=a header:x-key=b", T0, NULL), FC_L7_PASS);
}

/*
 * More matching policies than the engine decides on its stack: every one is
 * charged (memory from the request), and without memory nothing is decided
 * or charged rather than some policies ignored.
 */
static void test_many_matches(void **state)
{
	struct fc_t *t = *state;
	struct fc_arena arena = { 0 };
	struct fc_l7_alloc a = { fc_arena_alloc, &arena };
	struct fc_l7_result res;
	struct fc_l7_req rq;
	char match[64], query[1024] = "query=";
	size_t off = strlen(query);
	uint32_t i;

	for (i = 1; i <= 100; i++) {
		snprintf(match, sizeof(match), "uid=u1,arg:p=%u", i);
		fc_policy(t, i, match, i == 100 ? "1/m" : "5/m", "drop", 0, 0);
		off += (size_t)snprintf(query + off, sizeof(query) - off, "%sp=%u", i > 1 ? "&" : "", i);
	}
	fc_publish(t);
	assert_int_equal(fc_build(t, t->base, t->size), 0);
	snprintf(query + off, sizeof(query) - off, " uid=u1");
	fc_req(&t->ix, &rq, query);
	fc_l7_decide(&t->ix, &rq, T0, &res);
	assert_int_equal(res.verdict, FC_L7_ERROR); /* no memory given: nothing decided */
	assert_int_equal(res.matched, 100);
	for (i = 1; i <= 100; i++)
		assert_int_equal(t->ix.slots[i].passed + t->ix.slots[i].denied, 0);
	rq.alloc = &a;
	fc_l7_decide(&t->ix, &rq, T0, &res);
	assert_int_equal(res.verdict, FC_L7_PASS);
	for (i = 1; i <= 100; i++)
		assert_int_equal(t->ix.slots[i].passed, 1);
	/* The 100th policy, beyond any stack, denies the next one: all or none. */
	fc_l7_decide(&t->ix, &rq, T0, &res);
	assert_int_equal(res.verdict, FC_L7_REJECTED);
	assert_int_equal(res.policy, 100);
	for (i = 1; i < 100; i++)
		assert_int_equal(t->ix.slots[i].passed, 1);
	fc_arena_free(&arena);
}

/* Random policies over small domains, random requests: the index finds
 * exactly what checking every policy finds. */
static void test_matching_vs_naive(void **state)
{
	static const char *const uids[] = { "u1", "u2", "u3", "u4", "u5", "u6", "u7", "u8" };
	static const char *const vals[] = { "a", "b", "c", "d" };
	struct fc_t *t = *state;
	struct fc_policy_spec *specs = calloc(3000, sizeof(*specs));
	uint32_t got[64];
	struct fc_policy_row row;
	struct fc_l7_req rq;
	struct fc_err err;
	char match[256], req[256];
	unsigned seed = 7, n, i, j, k, naive;
	int used[3000], nused = 0;

	assert_non_null(specs);
	assert_int_equal(fc_store_begin(t->st, &err), 0);
	for (i = 0; i < 3000; i++) {
		size_t off = 0;

		match[0] = '\0';
		if (rand_r(&seed) % 2)
			off += (size_t)snprintf(match + off, sizeof(match) - off, "uid=%s,", uids[rand_r(&seed) % 8]);
		if (rand_r(&seed) % 2)
			off += (size_t)snprintf(match + off, sizeof(match) - off, "arg:p=%s,", vals[rand_r(&seed) % 4]);
		if (rand_r(&seed) % 2)
			off += (size_t)snprintf(match + off, sizeof(match) - off, "header:h=%s,", vals[rand_r(&seed) % 4]);
		if (rand_r(&seed) % 3 == 0)
			off += (size_t)snprintf(match + off, sizeof(match) - off, "uri=/%s,", vals[rand_r(&seed) % 4]);
		if (!off)
			off += (size_t)snprintf(match, sizeof(match), "uid=%s,", uids[rand_r(&seed) % 8]);
		if (rand_r(&seed) % 4 == 0)
			snprintf(match + off, sizeof(match) - off, "ip=198.18.%u.0/24,", rand_r(&seed) % 2);
		match[strlen(match) - 1] = '\0';
		specs[i].id = i + 1;
		if (fc_match_parse(match, &specs[i], &err) < 0 || fc_rates_parse("1000/s", &specs[i], &err) < 0)
			fail_msg("%s: %s", match, err.msg);
		if (fc_store_policy_put(t->st, &specs[i], 1, &row, &err) == 0)
			used[nused++] = (int)i; /* duplicates of a match are refused: fine */
	}
	assert_int_equal(fc_store_commit(t->st, &err), 0);
	fc_publish(t);
	assert_int_equal(fc_build(t, t->base, t->size), 0);
	assert_int_equal(t->ix.npolicies, (size_t)nused);

	for (k = 0; k < 2000; k++) {
		snprintf(req, sizeof(req), "uid=%s arg:p=%s header:h=%s uri=/%s ip=198.18.%u.5", uids[rand_r(&seed) % 8],
			 vals[rand_r(&seed) % 4], vals[rand_r(&seed) % 4], vals[rand_r(&seed) % 4], rand_r(&seed) % 3);
		fc_req(&t->ix, &rq, req);
		n = (unsigned)fc_l7_match(&t->ix, &rq, got, 64);
		assert_true(n <= 64);
		/* The naive way: every policy, every dimension. */
		for (i = 0, naive = 0; i < (unsigned)nused; i++) {
			const struct fc_policy_spec *p = &specs[used[i]];
			bool all = true;

			for (j = 0; j < (unsigned)p->ndims && all; j++) {
				const struct fc_dim *d = &p->dims[j];
				char want[300];

				snprintf(want, sizeof(want), " %s%s%s=%s ",
					 d->kind == FC_DIM_UID ? "uid" : d->kind == FC_DIM_ARG ? "arg:" :
					 d->kind == FC_DIM_HEADER ? "header:" : "uri",
					 d->name, "", d->value);
				{
					char padded[300];

					snprintf(padded, sizeof(padded), " %s ", req);
					all = strstr(padded, want) != NULL;
				}
			}
			if (all && p->kind == FC_MATCH_PREFIX)
				all = rq.family == 4 && rq.addr[2] == p->ip.a[2];
			if (all) {
				for (j = 0; j < n && t->ix.pol[got[j]].id != p->id; j++)
					;
				if (j == n)
					fail_msg("request \"%s\": index missed policy %u", req, p->id);
				naive++;
			}
		}
		assert_int_equal(n, naive);
	}
	free(specs);
}

/* ---- per-key policies ---- */

/* Racer i's n-th uid of 1,000: 200 keys, 5 requests each, in an order of
 * its own. */
static void fc_sparse_uid(char *uid, size_t cap, int i, int n)
{
	snprintf(uid, cap, "k%d", (n % 200 * 7 + i * 31 + n / 200) % 200);
}

/* A forked racer: fc_race_n requests, its n-th with uid fc_race_uid(i, n). */
static void (*fc_race_uid)(char *uid, size_t cap, int i, int n);
static int fc_race_n;

static int fc_uid_racer(struct fc_t *t, int i)
{
	char req[32];
	int ok = 0, n;

	for (n = 0; n < fc_race_n; n++) {
		memcpy(req, "uid=", 4);
		fc_race_uid(req + 4, sizeof(req) - 4, i, n);
		ok += fc_decide(t, req, T0, NULL) == FC_L7_PASS;
	}
	return ok;
}

/* The races' policy: uid=* at 3/h, published, the index built. */
static void fc_keys_race_policy(struct fc_t *t)
{
	fc_policy(t, 1, "uid=*", "3/h", "drop", 0, 0);
	fc_publish(t);
	assert_int_equal(fc_build(t, t->base, t->size), 0);
}

/* Each of 8 forked processes asks for the same 200 new keys, 5 times each,
 * in its own order: every key admits exactly its 3, one bucket per key. All
 * on one CPU, so a racer is often preempted while it makes an entry (a
 * request that did not wait for it passed in the overflow bucket: 601). */
static void test_keys_race(void **state)
{
	struct fc_t *t = *state;
	cpu_set_t cpus, one;

	fc_keys_race_policy(t);
	fc_race_uid = fc_sparse_uid;
	fc_race_n = 5 * 200;
	assert_int_equal(sched_getaffinity(0, sizeof(cpus), &cpus), 0);
	CPU_ZERO(&one);
	CPU_SET(sched_getcpu(), &one);
	assert_int_equal(sched_setaffinity(0, sizeof(one), &one), 0);
	assert_int_equal(fc_forked(t, fc_uid_racer), 600);
	assert_int_equal(sched_setaffinity(0, sizeof(cpus), &cpus), 0);
	assert_int_equal(t->ix.slots[1].passed, 600);
	assert_int_equal(t->ix.slots[1].keys, 200);
	assert_int_equal(t->ix.slots[1].overflowed, 0);
}

static int fc_u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* No key has two entries: every tag in the table is there once. */
static void fc_keys_unique(struct fc_t *t)
{
	uint64_t *tags = calloc(t->ix.nkeys, sizeof(*tags));
	size_t i, n = 0;

	assert_non_null(tags);
	for (i = 0; i < t->ix.nkeys; i++)
		if (t->ix.keys[i].tag >= FC_SHM_KEY_TAG_MIN)
			tags[n++] = t->ix.keys[i].tag;
	qsort(tags, n, sizeof(*tags), fc_u64_cmp);
	for (i = 1; i < n; i++)
		assert_int_not_equal(tags[i], tags[i - 1]);
	free(tags);
}

/* A uid=* policy at 3/h that may hold the whole table (the cap is its
 * size) and make keys as fast as they come. */
static void fc_keys_dense_policy(struct fc_t *t, uint32_t keys)
{
	struct fc_policy_spec p = { .id = 1, .max_keys = keys, .new_keys = 1000000000 };

	t->keys = keys;
	fc_policy_put(t, &p, "uid=*", "3/h");
	fc_publish(t);
	assert_int_equal(fc_build(t, t->base, t->size), 0);
	assert_int_equal(t->ix.nkeys, keys);
}

/* 950 keys in an 1,024-entry table, each asked for 5 times by each of 8
 * racers at once (forked processes, or threads), in orders of their own:
 * keys land in crowded windows, several workers meet each new key, and
 * still no key has two buckets, and none admits more than its 3. Racer i's
 * n-th uid: */
static void fc_dense_uid(char *uid, size_t cap, int i, int n)
{
	snprintf(uid, cap, "d%d", (n % 950 * 7 + i * 131 + n / 950 * 17) % 950);
}

/* What the racers admitted, against the table they left, where at least
 * keys keys were made. */
static void fc_race_check(struct fc_t *t, size_t passed, uint32_t keys)
{
	uint64_t in_keys = 0;
	size_t i;

	fc_keys_unique(t);
	for (i = 0; i < t->ix.nkeys; i++) {
		const struct fc_shm_key *e = &t->ix.keys[i];

		if (e->tag < FC_SHM_KEY_TAG_MIN)
			continue;
		assert_true(e->passed <= 3);
		in_keys += e->passed;
	}
	/* What the keys did not admit, the overflow bucket did: its 3 at most. */
	assert_true(passed >= in_keys && passed - in_keys <= 3);
	assert_int_equal(t->ix.slots[1].passed, passed);
	assert_true(t->ix.slots[1].keys >= keys);
}

static void test_keys_race_dense(void **state)
{
	struct fc_t *t = *state;

	fc_keys_dense_policy(t, FC_SHM_KEYS_MIN);
	fc_race_uid = fc_dense_uid;
	fc_race_n = 5 * 950;
	fc_race_check(t, (size_t)fc_forked(t, fc_uid_racer), 900);
}

/* The same races between 8 threads of one process, each a worker with an
 * index of its own (as nginx's workers, but where ASan sees every access
 * of all of them, the key table's included), let go at once. */
struct fc_key_thread {
	struct fc_l7_index ix;
	struct fc_arena arena;
	pthread_barrier_t *go;
	void (*uid)(char *uid, size_t cap, int i, int n);
	int i, n, passed;
};

static void *fc_key_thread_run(void *arg)
{
	struct fc_key_thread *c = arg;
	struct fc_l7_result res;
	struct fc_l7_req rq;
	char uid[16];
	int n;

	pthread_barrier_wait(c->go);
	for (n = 0; n < c->n; n++) {
		memset(&rq, 0, sizeof(rq)); /* not fc_req: its buffers are shared */
		c->uid(uid, sizeof(uid), c->i, n);
		rq.uid = (struct fc_l7_str){ uid, strlen(uid) };
		fc_l7_decide(&c->ix, &rq, T0, &res);
		c->passed += res.verdict == FC_L7_PASS;
	}
	return NULL;
}

/* n requests of each of 8 threads, racer i's n-th with uid(i, n): how many passed. */
static int fc_threaded(struct fc_t *t, void (*uid)(char *, size_t, int, int), int n)
{
	static struct fc_key_thread c[8];
	pthread_barrier_t go;
	pthread_t th[8];
	int i, passed = 0;

	assert_int_equal(pthread_barrier_init(&go, NULL, 8), 0);
	for (i = 0; i < 8; i++) {
		memset(&c[i], 0, sizeof(c[i]));
		c[i] = (struct fc_key_thread){ .go = &go, .uid = uid, .i = i, .n = n };
		assert_int_equal(fc_l7_build(t->base, t->size, t->state, t->state_size, &c[i].ix,
					     &(struct fc_l7_alloc){ fc_arena_alloc, &c[i].arena }), 0);
	}
	for (i = 0; i < 8; i++)
		assert_int_equal(pthread_create(&th[i], NULL, fc_key_thread_run, &c[i]), 0);
	for (i = 0; i < 8; i++) {
		assert_int_equal(pthread_join(th[i], NULL), 0);
		passed += c[i].passed;
		fc_arena_free(&c[i].arena);
	}
	pthread_barrier_destroy(&go);
	return passed;
}

static void test_keys_race_threads(void **state)
{
	struct fc_t *t = *state;

	fc_keys_race_policy(t);
	/* 8 threads on a machine of fewer cores: one may be preempted while it
	 * sets a key up, and a request of that key that finds the entry still
	 * busy takes the overflow bucket (never a second bucket). */
	fc_race_check(t, (size_t)fc_threaded(t, fc_sparse_uid, 5 * 200), 200);
	assert_int_equal(t->ix.slots[1].keys, 200);
}

static void test_keys_race_dense_threads(void **state)
{
	struct fc_t *t = *state;

	fc_keys_dense_policy(t, FC_SHM_KEYS_MIN);
	fc_race_check(t, (size_t)fc_threaded(t, fc_dense_uid, 5 * 950), 900);
}

/* Two choices, as the walk makes them: a key whose first window is full of
 * another policy's live keys lands first in its second window, is found
 * there again, and an entry of the first window coming free later makes no
 * second bucket for it. */
static void test_keys_two_choices(void **state)
{
	struct fc_t *t = *state;
	struct fc_shm_key *keys;
	struct fc_l7_result res;
	uint32_t mask, p0 = 0, p1 = 0, j, other = 0;
	uint64_t tag = 0;
	char req[32];
	size_t i;
	int c;

	fc_policy(t, 1, "uid=*", "3/h", "drop", 0, 0);
	fc_policy(t, 2, "uid=*,arg:o=*", "3/h", "drop", 0, 0);
	fc_publish(t);
	assert_int_equal(fc_build(t, t->base, t->size), 0);
	keys = t->ix.keys;
	mask = t->ix.nkeys - 1;
	for (i = 0; i < t->ix.npolicies; i++)
		if (t->ix.pol[i].id == 2)
			other = (uint32_t)i;
	/* A uid whose two windows do not meet (nearly every one): its tag is
	 * that of the one entry its first decision makes, wiped after. */
	for (c = 0; c < 20; c++) {
		snprintf(req, sizeof(req), "uid=two%d", c);
		fc_decide(t, req, T0, &res);
		for (i = 0, tag = 0; i <= mask; i++)
			if (keys[i].tag >= FC_SHM_KEY_TAG_MIN) {
				assert_int_equal(tag, 0);
				tag = keys[i].tag;
				memset(&keys[i], 0, sizeof(keys[i]));
			}
		assert_true(tag >= FC_SHM_KEY_TAG_MIN);
		p0 = fc_shm_key_place(tag, 0, t->ix.nkeys);
		p1 = fc_shm_key_place(tag, 1, t->ix.nkeys);
		if (((p1 - p0) & mask) >= FC_SHM_KEY_PROBE && ((p0 - p1) & mask) >= FC_SHM_KEY_PROBE)
			break;
	}
	assert_true(c < 20);
	for (j = 0; j < FC_SHM_KEY_PROBE; j++) { /* policy 2's keys, live for an hour */
		struct fc_shm_key *e = &keys[(p0 + j) & mask];

		e->tag = (FC_SHM_KEY_TAG_MIN | (0x5a5a0000ULL + j)) ^ (tag & ~0xffffffffULL);
		assert_int_not_equal(e->tag, tag);
		e->slot = t->ix.pol[other].slot;
		e->epoch = t->ix.pol[other].epoch;
		e->idle_ns = T0 + 3600 * SEC;
	}
	assert_int_equal(fc_passes(t, req, T0, 5), 3);
	assert_int_equal(keys[p1].tag, tag);
	fc_keys_unique(t);
	/* The first window's first entry idle: the key is still found in its
	 * second window, its 3 spent. */
	keys[p0].idle_ns = T0;
	assert_int_equal(fc_passes(t, req, T0 + SEC, 2), 0);
	assert_int_not_equal(keys[p0].tag, tag);
	assert_int_equal(keys[p1].tag, tag);
	fc_keys_unique(t);
}

/* Two choices fill the table: 95% of it (62,259 keys in 65,536 entries)
 * with next to none left to the overflow bucket, each key found again in
 * its own entry. */
static void test_keys_dense(void **state)
{
	struct fc_t *t = *state;
	struct fc_l7_result res;
	char req[32];
	uint32_t k, n = 62259, over = 0;

	fc_keys_dense_policy(t, 65536);
	for (k = 0; k < n; k++) {
		snprintf(req, sizeof(req), "uid=n%u", k);
		fc_decide(t, req, T0, &res);
		over += res.overflow;
	}
	/* ~0.04% (14-42 keys in 20 simulated runs; a single window of 64: ~2%) */
	assert_true(over <= n / 250);
	assert_int_equal(t->ix.slots[1].keys, n - over);
	fc_keys_unique(t);
	for (k = 0; k < n; k++) { /* each key its own again (the overflow bucket's 3 are spent) */
		snprintf(req, sizeof(req), "uid=n%u", k);
		fc_decide(t, req, T0, &res);
		assert_true(res.overflow || res.verdict == FC_L7_PASS);
		over -= res.overflow;
	}
	assert_int_equal(over, 0);
	assert_int_equal(t->ix.slots[1].keys, n - t->ix.slots[1].overflowed / 2);
}

/* Keys of their own; a request without the dimension is not matched; the
 * deciding key is named; a changed limit keeps the keys, a deleted policy's
 * keys are taken back by others. */
static void test_keys_basics(void **state)
{
	struct fc_t *t = *state;
	struct fc_l7_result res;
	char key[64];

	fc_policy(t, 1, "uid=*,arg:api=login", "2/m", "drop", 0, 0);
	fc_policy(t, 2, "ip=*,header:x-k=*", "1/m", "drop", 0, 0);
	fc_publish(t);
	assert_int_equal(fc_build(t, t->base, t->size), 0);
	assert_int_equal(fc_passes(t, "uid=a arg:api=login", T0, 5), 2);
	assert_int_equal(fc_passes(t, "uid=b arg:api=login", T0, 5), 2);
	assert_int_equal(fc_passes(t, "uid=a arg:api=other", T0, 5), 5);
	assert_int_equal(fc_passes(t, "arg:api=login", T0, 5), 5); /* no uid */
	assert_int_equal(fc_decide_key(t, "uid=a arg:api=login", T0, &res, key, sizeof(key)), FC_L7_REJECTED);
	assert_int_equal(res.key_len, 1);
	assert_memory_equal(key, "a", 1);
	/* Per address and header value; both occurrences of a header make the key. */
	assert_int_equal(fc_passes(t, "ip=198.18.0.1 header:x-k=v", T0, 3), 1);
	assert_int_equal(fc_passes(t, "ip=198.18.0.2 header:x-k=v", T0, 3), 1);
	assert_int_equal(fc_passes(t, "ip=198.18.0.1 header:x-k=v header:x-k=w", T0, 3), 1);
	fc_decide_key(t, "ip=2001:db8::7 header:x-k=v", T0, &res, key, sizeof(key));
	assert_int_equal(fc_decide_key(t, "ip=2001:db8::7 header:x-k=v", T0, &res, key, sizeof(key)), FC_L7_REJECTED);
	assert_int_equal(res.key_len, strlen("2001:db8::7,v"));
	assert_memory_equal(key, "2001:db8::7,v", res.key_len);
	/* A changed limit keeps every key; a wider one admits what it adds. */
	fc_policy(t, 1, "uid=*,arg:api=login", "3/m", "drop", 0, 0);
	fc_publish(t);
	assert_int_equal(fc_build(t, t->base, t->size), 0);
	assert_int_equal(fc_passes(t, "uid=a arg:api=login", T0 + 21 * SEC, 5), 1);
}

/* Every dimension keys (an argument, the uri, a uid under a uri prefix),
 * and what a policy does, it does per key: a fixed window counts the key's
 * requests, a delay queues behind the key's own requests, a log policy
 * counts what the key's bucket would deny, and a refusal's RateLimit
 * figures and Retry-After are its key's. */
static void test_keys_kinds(void **state)
{
	struct fc_policy_spec w = { .id = 7, .algo = FC_ALGO_WINDOW };
	struct fc_t *t = *state;
	struct fc_l7_result res;
	char key[64];

	fc_policy(t, 1, "arg:key=*", "2/m", "drop", 0, 0);
	fc_policy(t, 2, "uri=*,arg:u=1", "1/m", "drop", 0, 0);
	fc_policy(t, 3, "uid=*,uri=/api/*", "2/m", "drop", 0, 0);
	fc_policy(t, 4, "uid=*,arg:d=1", "10/s", "delay", 1, 3);
	fc_policy(t, 5, "uid=*,arg:l=1", "1/m", "log", 0, 0);
	fc_policy(t, 6, "uid=*,arg:r=1", "3/m", "drop", 0, 0);
	fc_policy_put(t, &w, "uid=*,arg:w=1", "2/m");
	fc_publish(t);
	assert_int_equal(fc_build(t, t->base, t->size), 0);
	assert_int_equal(fc_passes(t, "arg:key=a", T0, 5), 2);
	assert_int_equal(fc_passes(t, "arg:key=b", T0, 5), 2);
	assert_int_equal(fc_passes(t, "uid=q", T0, 5), 5);
	assert_int_equal(fc_passes(t, "uri=/a arg:u=1", T0, 3), 1);
	assert_int_equal(fc_passes(t, "uri=/b arg:u=1", T0, 3), 1);
	assert_int_equal(fc_passes(t, "uid=u1 uri=/api/x", T0, 5), 2);
	assert_int_equal(fc_passes(t, "uid=u1 uri=/api/y", T0, 5), 0); /* the prefix is not a key part */
	assert_int_equal(fc_passes(t, "uid=u2 uri=/api/y", T0, 5), 2);
	assert_int_equal(fc_passes(t, "uid=u1 uri=/apix", T0, 5), 5);

	assert_int_equal(fc_decide(t, "uid=a arg:d=1", T0, &res), FC_L7_PASS);
	assert_int_equal(fc_decide(t, "uid=a arg:d=1", T0, &res), FC_L7_DELAYED);
	assert_int_equal(res.delay_ns, SEC / 10);
	assert_int_equal(fc_decide(t, "uid=b arg:d=1", T0, &res), FC_L7_PASS);

	assert_int_equal(fc_decide(t, "uid=a arg:l=1", T0, &res), FC_L7_PASS);
	assert_int_equal(res.would_deny, 0);
	assert_int_equal(fc_decide(t, "uid=a arg:l=1", T0, &res), FC_L7_PASS);
	assert_int_equal(res.would_deny, 1);
	assert_int_equal(fc_decide(t, "uid=b arg:l=1", T0, &res), FC_L7_PASS);
	assert_int_equal(res.would_deny, 0);
	/* A request only a log policy matched: that policy's key, for the log. */
	fc_decide_key(t, "uid=a arg:l=1", T0, &res, key, sizeof(key));
	assert_int_equal(res.would_deny, 1);
	assert_int_equal(res.key_len, 1);
	assert_memory_equal(key, "a", 1);
	/* A passed request: its first per-key policy's key, though empty (an
	 * empty argument is a value), not a later policy's. */
	assert_int_equal(fc_decide_key(t, "uid=u9 uri=/api/z arg:key=", T0, &res, key, sizeof(key)), FC_L7_PASS);
	assert_int_equal(res.policy, 0);
	assert_int_equal(res.key_len, 0);

	assert_int_equal(fc_passes(t, "uid=a arg:r=1", T0, 3), 3);
	assert_int_equal(fc_decide(t, "uid=a arg:r=1", T0 + 5 * SEC, &res), FC_L7_REJECTED);
	assert_int_equal(res.policy, 6);
	assert_int_equal(res.limit, 3);
	assert_int_equal(res.window_s, 60);
	assert_int_equal(res.remaining, 0);
	assert_int_equal(res.retry_ns, 15 * SEC);
	assert_int_equal(fc_passes(t, "uid=b arg:r=1", T0 + 5 * SEC, 4), 3);

	assert_int_equal(fc_passes(t, "uid=a arg:w=1", T0 + 59 * SEC, 4), 2); /* T0 starts a minute */
	assert_int_equal(fc_passes(t, "uid=b arg:w=1", T0 + 59 * SEC, 4), 2);
	assert_int_equal(fc_passes(t, "uid=a arg:w=1", T0 + 60 * SEC, 4), 2); /* the next window */
}

/* A window of live keys of another policy: the request shares the
 * overflow bucket; once they are idle, it gets a key of its own. */
static void test_keys_full_and_idle(void **state)
{
	struct fc_t *t = *state;
	struct fc_l7_result res;
	struct fc_shm_key *keys;
	int i;

	fc_policy(t, 1, "uid=*", "2/m", "drop", 0, 0);
	fc_publish(t);
	assert_int_equal(fc_build(t, t->base, t->size), 0);
	keys = t->ix.keys;
	/* Every entry taken by a key of policy 1 that holds state for an hour. */
	for (i = 0; i < (int)FC_SHM_KEYS; i++) {
		keys[i].tag = FC_SHM_KEY_TAG_MIN + (uint64_t)i;
		keys[i].slot = t->ix.pol[0].slot;
		keys[i].epoch = t->ix.pol[0].epoch;
		keys[i].idle_ns = T0 + 3600 * SEC;
	}
	assert_int_equal(fc_passes(t, "uid=x", T0, 5), 2); /* the overflow bucket: 2/m for all */
	assert_int_equal(fc_passes(t, "uid=y", T0, 5), 0);
	assert_true(t->ix.slots[1].overflowed >= 10);
	fc_decide(t, "uid=y", T0, &res);
	assert_true(res.overflow);
	/* An hour later they carry nothing: keys of their own again. */
	assert_int_equal(fc_passes(t, "uid=x", T0 + 3601 * SEC, 5), 2);
	assert_int_equal(fc_passes(t, "uid=y", T0 + 3601 * SEC, 5), 2);
	fc_decide(t, "uid=y", T0 + 3601 * SEC, &res);
	assert_false(res.overflow);
}

/* A key argument given twice keys nothing: junk copies beside the value
 * the backend reads would make fresh buckets. It takes the overflow bucket. */
static void test_keys_repeated(void **state)
{
	struct fc_t *t = *state;
	char req[64];
	int i, passed = 0;

	fc_policy(t, 1, "header:x-k=*", "2/m", "drop", 0, 0);
	fc_publish(t);
	assert_int_equal(fc_build(t, t->base, t->size), 0);
	for (i = 0; i < 50; i++) {
		snprintf(req, sizeof(req), "header:x-k=victim header:x-k=junk%d", i);
		passed += fc_passes(t, req, T0, 1);
	}
	assert_int_equal(passed, 2); /* the overflow bucket's 2/m, not 2 per junk copy */
	assert_int_equal(t->ix.slots[1].keys, 0);
}

/* Policy 1, uid=* 2/m with --max-keys max_keys, published and mapped. */
static void fc_keyed_policy(struct fc_t *t, uint32_t max_keys)
{
	struct fc_policy_spec p = { .id = 1, .max_keys = max_keys };
	struct fc_policy_row row;
	struct fc_err err;

	assert_int_equal(fc_match_parse("uid=*", &p, &err), 0);
	assert_int_equal(fc_rates_parse("2/m", &p, &err), 0);
	assert_int_equal(fc_store_policy_put(t->st, &p, 1, &row, &err), 0);
	fc_publish(t);
	assert_int_equal(fc_build(t, t->base, t->size), 0);
}

/* --max-keys counts live keys: a policy at its cap takes back its own idle
 * keys for new ones. */
static void test_keys_max(void **state)
{
	struct fc_t *t = *state;
	struct fc_l7_result res;
	struct fc_err err;
	char req[32];
	int i;

	fc_keyed_policy(t, 2);
	assert_int_equal(fc_passes(t, "uid=a", T0, 1), 1);
	assert_int_equal(fc_passes(t, "uid=b", T0, 1), 1);
	fc_decide(t, "uid=c", T0, &res);
	assert_true(res.overflow); /* the third key, at the cap */
	/* An hour on, a and b are idle; the agent's recount frees their room. */
	assert_int_equal(fc_state_keys_recount(t->shm, T0 + 3600 * SEC, &err), 0);
	assert_int_equal(t->ix.slots[1].keys, 0);
	for (i = 0; i < 10; i++) { /* new keys, each idle before the next: all get buckets */
		snprintf(req, sizeof(req), "uid=n%d", i);
		fc_decide(t, req, T0 + 3600 * SEC + (uint64_t)i * 200 * SEC, &res);
		assert_false(res.overflow);
		assert_int_equal(fc_state_keys_recount(t->shm, T0 + 3600 * SEC + (uint64_t)i * 200 * SEC + 100 * SEC,
						       &err), 0);
	}
}

/* pread, wrapped (-Wl,--wrap=pread): fc_pread_hook runs once, right after
 * the read of the state file at fc_pread_hook_off, as a worker would in
 * the middle of the agent's reading. */
ssize_t __real_pread(int fd, void *buf, size_t len, off_t off);
static void (*fc_pread_hook)(void *arg);
static void *fc_pread_hook_arg;
static off_t fc_pread_hook_off;

ssize_t __wrap_pread(int fd, void *buf, size_t len, off_t off);
ssize_t __wrap_pread(int fd, void *buf, size_t len, off_t off)
{
	ssize_t r = __real_pread(fd, buf, len, off);
	void (*hook)(void *) = fc_pread_hook;

	if (hook && off == fc_pread_hook_off) {
		fc_pread_hook = NULL;
		hook(fc_pread_hook_arg);
	}
	return r;
}

static void fc_late_key(void *arg)
{
	struct fc_l7_result res;

	fc_decide(arg, "uid=late", T0 + 3600 * SEC, &res);
	assert_false(res.overflow);
}

/* A key a worker makes while the agent's recount reads the table is not
 * written out of the count, though the scan had passed where it landed:
 * the recount of an hour later would otherwise set the count to the 0
 * live keys it found, and the new one would go uncounted. */
static void test_keys_recount_race(void **state)
{
	struct fc_t *t = *state;
	struct fc_err err;
	struct stat sb;

	fc_keyed_policy(t, 10);
	assert_int_equal(fc_passes(t, "uid=a", T0, 1), 1);
	assert_int_equal(fc_passes(t, "uid=b", T0, 1), 1);
	assert_int_equal(t->ix.slots[1].keys, 2);
	/* After the table's last chunk is read. */
	assert_int_equal(stat(t->state_path, &sb), 0);
	fc_pread_hook_off = (off_t)(FC_STATE_KEYS_OFF + (fc_state_nkeys((uint64_t)sb.st_size) - FC_SHM_KEYS_MIN) *
						       sizeof(struct fc_shm_key));
	fc_pread_hook_arg = t;
	fc_pread_hook = fc_late_key;
	assert_int_equal(fc_state_keys_recount(t->shm, T0 + 3600 * SEC, &err), 0);
	assert_null(fc_pread_hook); /* it ran */
	assert_int_equal(t->ix.slots[1].keys, 3); /* left for the next recount */
	/* The next, with nothing made meanwhile: a and b idle, the late one live. */
	assert_int_equal(fc_state_keys_recount(t->shm, T0 + 3600 * SEC, &err), 0);
	assert_int_equal(t->ix.slots[1].keys, 1);
}

/* A worker caught between adding a new key to its policy's count and
 * tagging the key's entry: the recount sees a busy entry, not the key, and
 * leaves the count for the next recount rather than write it one short.
 * An entry a killed worker left busy does not hold the count up for long. */
static void test_keys_recount_busy(void **state)
{
	struct fc_t *t = *state;
	const struct fc_l7_policy *p;
	struct fc_shm_key *e;
	struct fc_err err;
	uint32_t i;

	fc_policy(t, 1, "uid=*", "2/m", "drop", 0, 0);
	fc_publish(t);
	assert_int_equal(fc_build(t, t->base, t->size), 0);
	p = &t->ix.pol[0];
	assert_int_equal(fc_passes(t, "uid=a", T0, 1), 1);
	assert_int_equal(fc_passes(t, "uid=b", T0, 1), 1);
	assert_int_equal(t->ix.slots[p->slot].keys, 2);
	/* The third key's entry as fc_key_walk leaves it before its last store. */
	for (i = 0; t->ix.keys[i].tag; i++)
		;
	e = &t->ix.keys[i];
	e->slot = p->slot;
	e->epoch = p->epoch;
	e->idle_ns = T0 + 3600 * SEC;
	e->tag = (T0 / SEC) | 1;
	t->ix.slots[p->slot].keys = 3;
	assert_int_equal(fc_state_keys_recount(t->shm, T0 + SEC, &err), 0);
	assert_int_equal(t->ix.slots[p->slot].keys, 3);
	/* Tagged: the three are counted. */
	e->tag = FC_SHM_KEY_TAG_MIN | 3;
	assert_int_equal(fc_state_keys_recount(t->shm, T0 + SEC, &err), 0);
	assert_int_equal(t->ix.slots[p->slot].keys, 3);
	/* Left busy for good: once it is stale, only the two keys count. */
	e->tag = (T0 / SEC) | 1;
	assert_int_equal(fc_state_keys_recount(t->shm, T0 + FC_SHM_KEY_STALE * SEC + SEC, &err), 0);
	assert_int_equal(t->ix.slots[p->slot].keys, 2);
}

/* The key table is the workers' to write, so anything may be in it:
 * garbage everywhere, entries stuck mid-setup. Decisions neither crash nor
 * read out of bounds (ASan), and a key still admits no more than its limit. */
static void test_keys_corrupt(void **state)
{
	struct fc_t *t = *state;
	uint64_t x = 88172645463325252ULL;
	uint8_t *b;
	size_t i, n;

	fc_policy(t, 1, "uid=*", "2/m", "drop", 0, 0);
	fc_publish(t);
	assert_int_equal(fc_build(t, t->base, t->size), 0);
	b = (uint8_t *)t->ix.keys;
	n = 4u << 20; /* the first 4 MiB of the table */
	for (i = 0; i < n; i++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		b[i] = (uint8_t)x;
	}
	for (i = 0; i < 64; i++) /* entries left "being set up": just now, and by a worker long dead */
		t->ix.keys[(x >> 8) % 65536 + i].tag = i % 2 ? T0 / SEC : 5;
	for (i = 0; i < 2000; i++) {
		char req[32];

		snprintf(req, sizeof(req), "uid=g%zu", i);
		assert_true(fc_passes(t, req, T0, 3) <= 2);
	}
}

/* --shm-keys: the table's size is the state file's; a publish keeps it
 * unless told another, which starts it afresh; a size that is no table is
 * refused (requests pass). */
static void test_keys_table_size(void **state)
{
	struct fc_t *t = *state;
	char req[32];
	int i, passed = 0;

	t->keys = FC_SHM_KEYS_MIN;
	fc_policy(t, 1, "uid=*", "1/m", "drop", 0, 0);
	fc_publish(t);
	assert_int_equal(t->state_size, FC_STATE_SIZE_FOR(FC_SHM_KEYS_MIN));
	assert_int_equal(fc_build(t, t->base, t->size), 0);
	assert_int_equal(t->ix.nkeys, FC_SHM_KEYS_MIN);
	/* 600 uids: half the table (the default --max-keys) get a bucket,
	 * the rest share the overflow bucket (1/m for all of them). */
	for (i = 0; i < 600; i++) {
		snprintf(req, sizeof(req), "uid=u%d", i);
		passed += fc_passes(t, req, T0, 1);
	}
	assert_int_equal(t->ix.slots[t->ix.pol[0].slot].keys, FC_SHM_KEYS_MIN / 2);
	assert_int_equal(passed, FC_SHM_KEYS_MIN / 2 + 1);
	assert_int_equal(fc_passes(t, "uid=u0", T0, 1), 0); /* spent */

	t->keys = 0; /* kept, with its keys */
	fc_publish(t);
	assert_int_equal(t->state_size, FC_STATE_SIZE_FOR(FC_SHM_KEYS_MIN));
	assert_int_equal(fc_build(t, t->base, t->size), 0);
	assert_int_equal(fc_passes(t, "uid=u0", T0, 1), 0);

	t->keys = 2 * FC_SHM_KEYS_MIN; /* another size: made anew */
	fc_publish(t);
	assert_int_equal(t->state_size, FC_STATE_SIZE_FOR(2 * FC_SHM_KEYS_MIN));
	assert_int_equal(fc_build(t, t->base, t->size), 0);
	assert_int_equal(t->ix.nkeys, 2 * FC_SHM_KEYS_MIN);
	assert_int_equal(fc_passes(t, "uid=u0", T0, 1), 1);

	/* Sizes that are no table: not a power of two, too small, ragged. */
	assert_int_not_equal(fc_l7_build(t->base, t->size, t->state, FC_STATE_SIZE_FOR(3 * FC_SHM_KEYS_MIN / 2), &t->ix,
					 &(struct fc_l7_alloc){ fc_arena_alloc, &t->arena }), 0);
	assert_int_not_equal(fc_l7_build(t->base, t->size, t->state, FC_STATE_SIZE_FOR(FC_SHM_KEYS_MIN / 2), &t->ix,
					 &(struct fc_l7_alloc){ fc_arena_alloc, &t->arena }), 0);
	assert_int_not_equal(fc_l7_build(t->base, t->size, t->state, FC_STATE_SIZE_FOR(FC_SHM_KEYS_MIN) + 8, &t->ix,
					 &(struct fc_l7_alloc){ fc_arena_alloc, &t->arena }), 0);
	assert_int_equal(fc_state_nkeys(FC_STATE_SIZE_FOR(FC_SHM_KEYS_MAX)), FC_SHM_KEYS_MAX);
	assert_int_equal(fc_state_nkeys(FC_STATE_SIZE_FOR(2ULL * FC_SHM_KEYS_MAX)), 0);
}

/* ---- concurrency caps ---- */

/* A policy with --concurrency (and rates, if any). */
static void fc_conc_policy(struct fc_t *t, uint32_t id, const char *match, const char *rates, uint32_t n,
			   enum fc_action action)
{
	struct fc_policy_spec p = { .id = id, .concurrency = n, .action = action };

	fc_policy_put(t, &p, match, rates);
}

/* A worker's record for the tests: its free holds in static memory. */
static uint32_t fc_free_holds[FC_SHM_HOLDS];

static void fc_holder(struct fc_t *t, struct fc_l7_holder *h, uint64_t id)
{
	assert_int_equal(fc_l7_holder_open(t->state, t->state_size, id, fc_free_holds, h), 0);
}

/* The policies published and indexed, and a record for the test's worker. */
static void fc_conc_start(struct fc_t *t, struct fc_l7_holder *h)
{
	fc_publish(t);
	assert_int_equal(fc_build(t, t->base, t->size), 0);
	fc_holder(t, h, FC_SHM_WORKER_ID(1, 1));
}

/* One request's decision, its places (if it passed) kept in pl. */
static enum fc_l7_verdict fc_take(struct fc_t *t, struct fc_l7_holder *h, const char *req, uint64_t now,
				  struct fc_l7_place *pl, size_t *np, struct fc_l7_result *res)
{
	struct fc_l7_result r;
	struct fc_l7_req rq;

	fc_req(&t->ix, &rq, req);
	rq.holder = h;
	rq.places = pl;
	rq.places_cap = 4;
	fc_l7_decide(&t->ix, &rq, now, res ? res : &r);
	res = res ? res : &r;
	*np = res->nplaces;
	assert_true(!res->nplaces || res->places == pl);
	return res->verdict;
}

/* The live holds of a record. */
static size_t fc_live_holds(const struct fc_l7_holder *h)
{
	size_t i, n = 0;

	for (i = 0; i < h->used; i++)
		n += h->holds[i].who != 0;
	return n;
}

/* N=2 without keys: two in flight, the third refused (and counted) with the
 * cap in the result; a place given back lets the next one in. */
static void test_conc_basics(void **state)
{
	struct fc_t *t = *state;
	struct fc_l7_place pl[3][4];
	struct fc_l7_holder h;
	struct fc_l7_result res;
	size_t np[3];
	struct fc_shm_slot *s;

	fc_conc_policy(t, 1, "uid=c", "", 2, FC_ACTION_DROP);
	fc_conc_start(t, &h);
	s = &t->ix.slots[t->ix.pol[0].slot];
	assert_int_equal(fc_take(t, &h, "uid=c", T0, pl[0], &np[0], NULL), FC_L7_PASS);
	assert_int_equal(fc_take(t, &h, "uid=c", T0, pl[1], &np[1], NULL), FC_L7_PASS);
	assert_int_equal(np[0] + np[1], 2);
	assert_int_equal(s->inflight, 2);
	assert_int_equal(fc_live_holds(&h), 2);
	assert_int_equal(fc_take(t, &h, "uid=c", T0, pl[2], &np[2], &res), FC_L7_REJECTED);
	assert_true(res.concurrency);
	assert_int_equal(res.policy, 1);
	assert_int_equal(res.limit, 2);
	assert_int_equal(res.nplaces, 0);
	assert_int_equal(s->conc_denied, 1);
	assert_int_equal(s->denied, 1);
	assert_int_equal(fc_live_holds(&h), 2);
	/* Another uid is not this policy's. */
	assert_int_equal(fc_take(t, &h, "uid=d", T0, pl[2], &np[2], NULL), FC_L7_PASS);
	assert_int_equal(np[2], 0);
	fc_l7_give_back(t->state, t->state_size, &h, pl[0], np[0], T0);
	assert_int_equal(s->inflight, 1);
	assert_int_equal(fc_live_holds(&h), 1);
	assert_int_equal(fc_take(t, &h, "uid=c", T0, pl[0], &np[0], NULL), FC_L7_PASS);
	assert_int_equal(fc_take(t, &h, "uid=c", T0, pl[2], &np[2], NULL), FC_L7_REJECTED);
	fc_l7_give_back(t->state, t->state_size, &h, pl[0], np[0], T0);
	fc_l7_give_back(t->state, t->state_size, &h, pl[1], np[1], T0);
	assert_int_equal(s->inflight, 0);
	assert_int_equal(fc_live_holds(&h), 0);
	/* Given back twice (a bug elsewhere, or a forged record): never below zero. */
	fc_l7_give_back(t->state, t->state_size, &h, pl[1], np[1], T0);
	assert_int_equal(s->inflight, 0);
	fc_l7_holder_close(t->state, t->state_size, &h, T0);
}

/* Per key: each uid its own N; a key holding places is never taken back as
 * idle, however far the clock goes, and is again once they are given back. */
static void test_conc_keys(void **state)
{
	struct fc_t *t = *state;
	struct fc_l7_place pl[6][4];
	struct fc_l7_holder h;
	struct fc_l7_result res;
	struct fc_shm_key *e = NULL;
	size_t np[6], i;
	uint64_t tag;

	fc_conc_policy(t, 1, "uid=*", "", 2, FC_ACTION_DROP);
	fc_conc_start(t, &h);
	assert_int_equal(fc_take(t, &h, "uid=u1", T0, pl[0], &np[0], NULL), FC_L7_PASS);
	assert_int_equal(fc_take(t, &h, "uid=u1", T0, pl[1], &np[1], NULL), FC_L7_PASS);
	assert_int_equal(fc_take(t, &h, "uid=u1", T0, pl[2], &np[2], &res), FC_L7_REJECTED);
	assert_true(res.concurrency && !res.overflow);
	assert_int_equal(fc_take(t, &h, "uid=u2", T0, pl[3], &np[3], NULL), FC_L7_PASS);
	assert_int_equal(fc_take(t, &h, "uid=u2", T0, pl[4], &np[4], NULL), FC_L7_PASS);
	assert_int_equal(fc_take(t, &h, "uid=u2", T0, pl[5], &np[5], NULL), FC_L7_REJECTED);
	assert_int_equal(t->ix.slots[1].inflight, 4);
	assert_int_equal(FC_HOLD_KIND(pl[0][0].where), FC_HOLD_KEY);
	e = &t->ix.keys[FC_HOLD_INDEX(pl[0][0].where)];
	tag = e->tag;
	assert_int_equal(e->state[0], 2); /* no tiers: the count is word 0 */
	assert_true(e->idle_ns & FC_SHM_KEY_HELD);
	/* A day on, 200 new uids probe the table: u1's entry stays u1's. */
	for (i = 0; i < 200; i++) {
		char req[32];
		struct fc_l7_place p2[4];
		size_t n2;

		snprintf(req, sizeof(req), "uid=n%zu", i);
		assert_int_equal(fc_take(t, &h, req, T0 + 86400 * SEC, p2, &n2, NULL), FC_L7_PASS);
		fc_l7_give_back(t->state, t->state_size, &h, p2, n2, T0 + 86400 * SEC);
	}
	assert_int_equal(e->tag, tag);
	assert_int_equal(fc_take(t, &h, "uid=u1", T0 + 86400 * SEC, pl[2], &np[2], NULL), FC_L7_REJECTED);
	for (i = 0; i < 5; i++)
		fc_l7_give_back(t->state, t->state_size, &h, pl[i], np[i], T0 + 86400 * SEC);
	assert_int_equal(e->state[0], 0);
	assert_false(e->idle_ns & FC_SHM_KEY_HELD);
	assert_int_equal(t->ix.slots[1].inflight, 0);
	assert_int_equal(fc_live_holds(&h), 0);
	/* Idle a second after its last place: then another key may take it. */
	assert_true(e->idle_ns <= T0 + 86401 * SEC);
	fc_l7_holder_close(t->state, t->state_size, &h, T0);
}

/* With a rate: both must admit, and a request refused by one is charged by
 * neither. */
static void test_conc_with_rate(void **state)
{
	struct fc_t *t = *state;
	struct fc_l7_place pl[8][4];
	struct fc_l7_holder h;
	struct fc_l7_result res;
	size_t np[8];
	int i;

	fc_conc_policy(t, 1, "uid=r", "3/m", 1, FC_ACTION_DROP);
	fc_conc_policy(t, 2, "uid=*,arg:a=1", "2/m", 4, FC_ACTION_DROP);
	fc_conc_start(t, &h);
	/* Refused by the cap: the rate is not charged. */
	assert_int_equal(fc_take(t, &h, "uid=r", T0, pl[0], &np[0], NULL), FC_L7_PASS);
	for (i = 1; i < 6; i++) {
		assert_int_equal(fc_take(t, &h, "uid=r", T0, pl[1], &np[1], &res), FC_L7_REJECTED);
		assert_true(res.concurrency);
	}
	fc_l7_give_back(t->state, t->state_size, &h, pl[0], np[0], T0);
	for (i = 0; i < 2; i++) { /* two more of the 3/m */
		assert_int_equal(fc_take(t, &h, "uid=r", T0, pl[0], &np[0], NULL), FC_L7_PASS);
		fc_l7_give_back(t->state, t->state_size, &h, pl[0], np[0], T0);
	}
	/* Refused by the rate: the place is given back. */
	assert_int_equal(fc_take(t, &h, "uid=r", T0, pl[0], &np[0], &res), FC_L7_REJECTED);
	assert_false(res.concurrency);
	assert_int_equal(t->ix.slots[1].inflight, 0);
	/* Per key, both on one policy: a key's tier and its count side by side. */
	assert_int_equal(fc_take(t, &h, "uid=k arg:a=1", T0, pl[0], &np[0], NULL), FC_L7_PASS);
	assert_int_equal(fc_take(t, &h, "uid=k arg:a=1", T0, pl[1], &np[1], NULL), FC_L7_PASS);
	assert_int_equal(t->ix.keys[FC_HOLD_INDEX(pl[0][0].where)].state[1], 2);
	assert_int_equal(fc_take(t, &h, "uid=k arg:a=1", T0, pl[2], &np[2], &res), FC_L7_REJECTED);
	assert_false(res.concurrency); /* 2/m spent; its places stay 2 */
	assert_int_equal(t->ix.keys[FC_HOLD_INDEX(pl[0][0].where)].state[1], 2);
	fc_l7_give_back(t->state, t->state_size, &h, pl[0], np[0], T0);
	fc_l7_give_back(t->state, t->state_size, &h, pl[1], np[1], T0);
	assert_int_equal(t->ix.keys[FC_HOLD_INDEX(pl[0][0].where)].state[1], 0);
	fc_l7_holder_close(t->state, t->state_size, &h, T0);
}

/* Several policies: all admit or none keeps anything; a log policy's cap
 * counts what it would refuse, and refuses nothing. */
static void test_conc_all_or_nothing(void **state)
{
	struct fc_t *t = *state;
	struct fc_l7_place pl[4][4];
	struct fc_l7_holder h;
	struct fc_l7_result res;
	size_t np[4];

	fc_conc_policy(t, 1, "uid=a", "", 5, FC_ACTION_DROP);
	fc_policy(t, 2, "uid=a,arg:x=1", "1/m", "drop", 0, 0);
	fc_conc_policy(t, 3, "uid=a,arg:y=1", "", 1, FC_ACTION_LOG);
	fc_conc_start(t, &h);
	assert_int_equal(fc_take(t, &h, "uid=a arg:x=1", T0, pl[0], &np[0], NULL), FC_L7_PASS);
	assert_int_equal(fc_take(t, &h, "uid=a arg:x=1", T0, pl[1], &np[1], NULL), FC_L7_REJECTED);
	assert_int_equal(t->ix.slots[1].inflight, 1); /* policy 2 refused: policy 1's place given back */
	assert_int_equal(fc_live_holds(&h), 1);
	assert_int_equal(fc_take(t, &h, "uid=a arg:y=1", T0, pl[1], &np[1], &res), FC_L7_PASS);
	assert_int_equal(np[1], 2); /* policy 1's and the log policy's */
	assert_int_equal(fc_take(t, &h, "uid=a arg:y=1", T0, pl[2], &np[2], &res), FC_L7_PASS);
	assert_int_equal(res.would_deny, 1);
	assert_int_equal(np[2], 1);
	assert_int_equal(t->ix.slots[3].conc_denied, 1);
	assert_int_equal(t->ix.slots[1].inflight, 3);
	fc_l7_give_back(t->state, t->state_size, &h, pl[0], np[0], T0);
	fc_l7_give_back(t->state, t->state_size, &h, pl[1], np[1], T0);
	fc_l7_give_back(t->state, t->state_size, &h, pl[2], np[2], T0);
	assert_int_equal(t->ix.slots[1].inflight + t->ix.slots[3].inflight, 0);
	fc_l7_holder_close(t->state, t->state_size, &h, T0);
}

/* A place taken before the policy's epoch changed (its match, or adding or
 * removing the cap) is given back nowhere: the new epoch counts afresh. */
static void test_conc_epoch(void **state)
{
	struct fc_t *t = *state;
	struct fc_l7_place pl[2][4];
	struct fc_l7_holder h;
	size_t np[2];

	fc_conc_policy(t, 1, "uid=e", "10/s", 1, FC_ACTION_DROP);
	fc_conc_start(t, &h);
	assert_int_equal(fc_take(t, &h, "uid=e", T0, pl[0], &np[0], NULL), FC_L7_PASS);
	fc_conc_policy(t, 1, "uid=e", "10/s,100/m", 1, FC_ACTION_DROP); /* a rate more: its words move */
	fc_publish(t);
	assert_int_equal(fc_build(t, t->base, t->size), 0);
	assert_int_equal(t->ix.slots[1].inflight, 0);
	assert_int_equal(fc_take(t, &h, "uid=e", T0, pl[1], &np[1], NULL), FC_L7_PASS);
	fc_l7_give_back(t->state, t->state_size, &h, pl[0], np[0], T0);
	assert_int_equal(t->ix.slots[1].inflight, 1); /* the new epoch's own place stays */
	fc_l7_give_back(t->state, t->state_size, &h, pl[1], np[1], T0);
	assert_int_equal(t->ix.slots[1].inflight, 0);
	/* A new limit, the same words: places are kept across it. */
	assert_int_equal(fc_take(t, &h, "uid=e", T0, pl[0], &np[0], NULL), FC_L7_PASS);
	fc_conc_policy(t, 1, "uid=e", "20/s,100/m", 3, FC_ACTION_DROP);
	fc_publish(t);
	assert_int_equal(fc_build(t, t->base, t->size), 0);
	assert_int_equal(t->ix.slots[1].inflight, 1);
	fc_l7_give_back(t->state, t->state_size, &h, pl[0], np[0], T0);
	assert_int_equal(t->ix.slots[1].inflight, 0);
	fc_l7_holder_close(t->state, t->state_size, &h, T0);
}

struct fc_conc_thread {
	struct fc_t *t;
	struct fc_l7_index ix;
	struct fc_arena arena;
	struct fc_l7_holder h;
	uint32_t free[FC_SHM_HOLDS];
	int passed, refused;
};

static int fc_conc_now, fc_conc_max; /* in flight now (by the threads' own count), and the most seen */

static void *fc_conc_racer(void *arg)
{
	struct fc_conc_thread *c = arg;
	struct fc_l7_place pl[4];
	struct fc_l7_result res;
	struct fc_l7_req rq;
	int i, now, max;

	for (i = 0; i < 20000; i++) {
		memset(&rq, 0, sizeof(rq)); /* not fc_req: its buffers are shared */
		rq.uid = (struct fc_l7_str){ "hot", 3 };
		rq.holder = &c->h;
		rq.places = pl;
		rq.places_cap = 4;
		fc_l7_decide(&c->ix, &rq, T0, &res);
		if (res.verdict != FC_L7_PASS) {
			c->refused++;
			continue;
		}
		c->passed++;
		now = __atomic_add_fetch(&fc_conc_now, 1, __ATOMIC_SEQ_CST);
		max = __atomic_load_n(&fc_conc_max, __ATOMIC_RELAXED);
		while (now > max && !__atomic_compare_exchange_n(&fc_conc_max, &max, now, true, __ATOMIC_SEQ_CST,
								 __ATOMIC_RELAXED))
			;
		__atomic_sub_fetch(&fc_conc_now, 1, __ATOMIC_SEQ_CST);
		fc_l7_give_back(c->t->state, c->t->state_size, &c->h, res.places, res.nplaces, T0);
	}
	return NULL;
}

/* 8 threads, each a worker with its own index and record, take and give
 * back places of one key: never more than N in flight, none left after. */
static void fc_conc_race(struct fc_t *t, const char *match)
{
	static struct fc_conc_thread c[8];
	pthread_t th[8];
	int i, passed = 0;

	fc_conc_policy(t, 1, match, "", 3, FC_ACTION_DROP);
	fc_publish(t);
	assert_int_equal(fc_build(t, t->base, t->size), 0);
	fc_conc_now = fc_conc_max = 0;
	for (i = 0; i < 8; i++) {
		memset(&c[i], 0, sizeof(c[i]));
		c[i].t = t;
		assert_int_equal(fc_l7_build(t->base, t->size, t->state, t->state_size, &c[i].ix,
					     &(struct fc_l7_alloc){ fc_arena_alloc, &c[i].arena }), 0);
		assert_int_equal(fc_l7_holder_open(t->state, t->state_size, FC_SHM_WORKER_ID(100 + i, 1), c[i].free,
						   &c[i].h), 0);
	}
	for (i = 0; i < 8; i++)
		assert_int_equal(pthread_create(&th[i], NULL, fc_conc_racer, &c[i]), 0);
	for (i = 0; i < 8; i++) {
		assert_int_equal(pthread_join(th[i], NULL), 0);
		passed += c[i].passed;
		assert_int_equal(fc_live_holds(&c[i].h), 0);
		fc_l7_holder_close(t->state, t->state_size, &c[i].h, T0);
		fc_arena_free(&c[i].arena);
	}
	assert_true(fc_conc_max <= 3);
	assert_true(fc_conc_max >= 1);
	assert_true(passed > 0);
	assert_int_equal(t->ix.slots[1].inflight, 0);
	assert_int_equal(t->ix.slots[1].passed, (uint64_t)passed);
}

static void test_conc_threads(void **state)
{
	fc_conc_race(*state, "uid=hot");
}

static void test_conc_threads_key(void **state)
{
	struct fc_t *t = *state;
	size_t i;

	fc_conc_race(t, "uid=*");
	for (i = 0; i < t->ix.nkeys; i++)
		if (t->ix.keys[i].tag >= FC_SHM_KEY_TAG_MIN) {
			assert_int_equal(t->ix.keys[i].state[0], 0);
			assert_false(t->ix.keys[i].idle_ns & FC_SHM_KEY_HELD);
		}
}

/* --warmup and --concurrency on one per-key policy: a key's bucket holds the
 * rate's TAT (word 0), the ramp's start (word 1) and the count of places
 * (word 2). The ramp admits what it admits without the cap (a twin policy
 * without one, fed the same requests), the cap refuses past N where the ramp
 * would admit, neither word is written by the other's work, and a key
 * holding places is not taken back however long its bucket has been idle. */
static void test_conc_warmup(void **state)
{
	struct fc_policy_spec c = { .id = 1, .warmup = 10, .concurrency = 2 }, w = { .id = 2, .warmup = 10 };
	struct fc_t *t = *state;
	struct fc_l7_place pl[3][4], p2[4];
	struct fc_l7_holder h;
	struct fc_l7_result res;
	struct fc_shm_key *e, *v;
	enum fc_l7_verdict vc, vw;
	uint64_t now, tag, tat;
	size_t np[3], n2, i;
	int passed = 0;

	t->keys = FC_SHM_KEYS_MIN; /* new keys probe u's entry's window often */
	fc_policy_put(t, &c, "uid=*,arg:c=1", "30/s");
	fc_policy_put(t, &w, "uid=*,arg:w=1", "30/s");
	fc_conc_start(t, &h);
	assert_int_equal(t->ix.pol[0].warmup_ms, 10000);
	assert_int_equal(t->ix.pol[0].concurrency, 2);

	/* Cold: one request passes and starts the ramp (word 1); its place is
	 * counted in word 2. */
	assert_int_equal(fc_take(t, &h, "uid=u arg:c=1", T0, pl[0], &np[0], NULL), FC_L7_PASS);
	assert_int_equal(np[0], 1);
	assert_int_equal(FC_HOLD_KIND(pl[0][0].where), FC_HOLD_KEY);
	assert_int_equal(FC_HOLD_WORD(pl[0][0].where), 2);
	e = &t->ix.keys[FC_HOLD_INDEX(pl[0][0].where)];
	tag = e->tag;
	assert_true(e->state[0] > T0);
	assert_int_equal(e->state[1], T0);
	assert_int_equal(e->state[2], 1);
	assert_int_equal(e->state[3], 0);
	assert_true(e->idle_ns & FC_SHM_KEY_HELD);
	/* No burst while cold: the ramp refuses the next at once, and it takes
	 * no place. */
	assert_int_equal(fc_take(t, &h, "uid=u arg:c=1", T0, pl[1], &np[1], &res), FC_L7_REJECTED);
	assert_false(res.concurrency);
	assert_int_equal(res.limit, 10); /* N/3 */
	assert_int_equal(e->state[1], T0);
	assert_int_equal(e->state[2], 1);
	/* The second place once the ramp admits one more: 3T = 100 ms apart. */
	for (now = T0 + MS; now < T0 + SEC; now += MS)
		if (fc_take(t, &h, "uid=u arg:c=1", now, pl[1], &np[1], NULL) == FC_L7_PASS)
			break;
	assert_true(now >= T0 + 90 * MS && now <= T0 + 110 * MS);
	assert_int_equal(e->state[1], T0);
	assert_int_equal(e->state[2], 2);
	/* Two in flight: a second on, the ramp would admit, the cap refuses;
	 * the charge is taken back (word 0 as it was), the ramp goes on. */
	tat = e->state[0];
	for (i = 0; i < 5; i++) {
		assert_int_equal(fc_take(t, &h, "uid=u arg:c=1", T0 + SEC + i * 100 * MS, pl[2], &np[2], &res),
				 FC_L7_REJECTED);
		assert_true(res.concurrency);
		assert_int_equal(res.limit, 2);
		assert_int_equal(e->state[0], tat);
		assert_int_equal(e->state[1], T0);
		assert_int_equal(e->state[2], 2);
	}
	assert_int_equal(t->ix.slots[1].conc_denied, 5);

	/* A day on, with both places still held: 300 new keys probe the table,
	 * and u's entry stays u's. The bucket is cold: a request that passes the
	 * ramp is still refused by the cap (a refused request may start the
	 * ramp, as one refused by another policy does, but counts no place). */
	now = T0 + 86400 * SEC;
	for (i = 0; i < 300; i++) {
		char req[48];

		snprintf(req, sizeof(req), "uid=n%zu arg:c=1", i);
		assert_int_equal(fc_take(t, &h, req, now, p2, &n2, NULL), FC_L7_PASS);
		fc_l7_give_back(t->state, t->state_size, &h, p2, n2, now);
	}
	assert_int_equal(e->tag, tag);
	assert_true(e->idle_ns & FC_SHM_KEY_HELD);
	assert_int_equal(e->state[2], 2);
	tat = e->state[0];
	assert_int_equal(fc_take(t, &h, "uid=u arg:c=1", now, pl[2], &np[2], &res), FC_L7_REJECTED);
	assert_true(res.concurrency);
	assert_int_equal(e->state[0], tat);
	assert_int_equal(e->state[2], 2);
	assert_true(e->state[1] == T0 || e->state[1] == now);
	/* Given back: the count drops, the ramp's word stays, the key is no
	 * longer held and passes again. */
	fc_l7_give_back(t->state, t->state_size, &h, pl[0], np[0], now);
	fc_l7_give_back(t->state, t->state_size, &h, pl[1], np[1], now);
	assert_int_equal(e->state[2], 0);
	assert_false(e->idle_ns & FC_SHM_KEY_HELD);
	assert_true(e->state[1] == T0 || e->state[1] == now);
	assert_int_equal(fc_take(t, &h, "uid=u arg:c=1", now + SEC, pl[0], &np[0], NULL), FC_L7_PASS);
	assert_int_equal(e->state[2], 1);
	fc_l7_give_back(t->state, t->state_size, &h, pl[0], np[0], now + SEC);
	assert_int_equal(fc_live_holds(&h), 0);

	/* The ramp as without the cap: a fresh key of each policy, cold, fed a
	 * request every 5 ms for 12 s (each place given back at once), decides
	 * alike each time; its ramp starts once, at the first request. */
	now = T0 + 2 * 86400 * SEC;
	for (i = 0; i < 2400; i++, now += 5 * MS) {
		vc = fc_take(t, &h, "uid=v arg:c=1", now, pl[0], &np[0], NULL);
		vw = fc_take(t, &h, "uid=v arg:w=1", now, p2, &n2, NULL);
		if (vc != vw)
			fail_msg("at %zu ms: %d with the cap, %d without", i * 5, vc, vw);
		passed += vc == FC_L7_PASS;
		if (vc == FC_L7_PASS) {
			assert_int_equal(np[0], 1);
			v = &t->ix.keys[FC_HOLD_INDEX(pl[0][0].where)];
			assert_int_equal(v->state[2], 1);
			assert_int_equal(v->state[1], T0 + 2 * 86400 * SEC);
			fc_l7_give_back(t->state, t->state_size, &h, pl[0], np[0], now);
			assert_int_equal(v->state[2], 0);
			assert_int_equal(v->state[1], T0 + 2 * 86400 * SEC);
		}
	}
	/* 10/s rising to 30/s over 10 s, then 30/s: about 200 + 60. */
	assert_true(passed > 240 && passed < 280);
	assert_int_equal(t->ix.slots[1].inflight, 0);
	fc_l7_holder_close(t->state, t->state_size, &h, now);
}

/* A per-key item whose count word would fall past the bucket (its rates,
 * the ramp's word and the count's more than FC_MAX_TIERS) is refused with
 * its item, as the loader never writes one. */
static void test_conc_warmup_item(void **state)
{
	struct fc_policy_spec c = { .id = 1, .warmup = 10, .concurrency = 2 };
	struct fc_t *t = *state;
	struct fc_shm_policy *it;
	const struct fc_shm_header *h;

	fc_policy_put(t, &c, "uid=*", "30/s,1000/h");
	fc_publish(t);
	h = t->base;
	it = (struct fc_shm_policy *)((uint8_t *)t->base + FC_SHM_BLOCK_OFF(h->active) + sizeof(struct fc_shm_block));
	assert_int_equal(it->warmup_ms, 10000);
	assert_int_equal(it->concurrency, 2);
	assert_int_equal(it->ntiers, 2);
	assert_int_equal(fc_build(t, t->base, t->size), 0);
	assert_int_equal(t->ix.npolicies, 1);
	it->ntiers = 3;
	it->tier[2] = it->tier[1];
	assert_int_equal(fc_build(t, t->base, t->size), 0);
	assert_int_equal(t->ix.npolicies, 0);
	assert_int_equal(t->ix.skipped, 1);
	it->warmup_ms = 0; /* without the ramp, 3 rates and the count fit */
	assert_int_equal(fc_build(t, t->base, t->size), 0);
	assert_int_equal(t->ix.npolicies, 1);
}

static bool fc_none_alive(uint64_t id)
{
	(void)id;
	return false;
}

/* A worker killed holding places: another one's recovery gives them back
 * (the process checked by its pid and start time); a live worker's record
 * is left alone; a recovery cut short is finished by the next. */
static void test_conc_recover(void **state)
{
	struct fc_t *t = *state;
	struct fc_l7_place pl[4];
	struct fc_l7_holder h;
	size_t np, w;
	pid_t pid;
	int fds[2], status, i;
	char c;

	fc_conc_policy(t, 1, "uid=*", "", 5, FC_ACTION_DROP);
	fc_conc_policy(t, 2, "uid=agg", "", 5, FC_ACTION_DROP);
	fc_publish(t);
	assert_int_equal(fc_build(t, t->base, t->size), 0);
	assert_int_not_equal(fc_l7_worker_id(getpid()), 0);
	assert_true(fc_l7_worker_alive(fc_l7_worker_id(getpid())));
	assert_false(fc_l7_worker_alive(fc_l7_worker_id(getpid()) + 1)); /* this pid, another start: reused */
	assert_int_equal(pipe(fds), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) { /* a worker: takes places, then is killed holding them */
		static uint32_t free_holds[FC_SHM_HOLDS];
		struct fc_l7_holder ch;

		if (fc_l7_holder_open(t->state, t->state_size, fc_l7_worker_id(getpid()), free_holds, &ch))
			_exit(1);
		for (i = 0; i < 3; i++) {
			fc_take(t, &ch, "uid=u1", T0, pl, &np, NULL);
			fc_take(t, &ch, "uid=agg", T0, pl, &np, NULL);
		}
		(void)!write(fds[1], "x", 1);
		alarm(30); /* should the test fail before it kills this */
		pause();
		_exit(0);
	}
	close(fds[1]);
	assert_int_equal(read(fds[0], &c, 1), 1);
	close(fds[0]);
	assert_int_equal(t->ix.slots[1].inflight, 6); /* uid=agg is a uid=* key too */
	assert_int_equal(t->ix.slots[2].inflight, 3);
	/* Alive: its places are its own. */
	assert_int_equal(fc_l7_recover(t->state, t->state_size, fc_l7_worker_id(getpid()), T0, NULL), 0);
	assert_int_equal(t->ix.slots[2].inflight, 3);
	kill(pid, SIGKILL);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_int_equal(fc_l7_recover(t->state, t->state_size, fc_l7_worker_id(getpid()), T0, NULL), 9);
	assert_int_equal(t->ix.slots[1].inflight, 0);
	assert_int_equal(t->ix.slots[2].inflight, 0);
	for (i = 0; i < 5; i++) /* u1's five places are free again */
		assert_int_equal(fc_take(t, NULL, "uid=u1", T0, pl, &np, NULL), FC_L7_PASS);
	assert_int_equal(fc_take(t, NULL, "uid=u1", T0, pl, &np, NULL), FC_L7_REJECTED);
	for (w = 0; w < FC_SHM_WORKERS; w++)
		assert_int_equal(((struct fc_shm_worker *)((char *)t->state + FC_STATE_WORKERS_OFF))[w].owner, 0);

	/* A recoverer that died at it: the record names it; the next one finishes. */
	fc_holder(t, &h, FC_SHM_WORKER_ID(7, 7));
	for (i = 0; i < 4; i++)
		assert_int_equal(fc_take(t, &h, "uid=agg", T0, pl, &np, NULL), FC_L7_PASS);
	h.rec->owner = FC_SHM_WORKER_ID(8, 8) | FC_SHM_WORKER_RECOVER;
	/* The part it did: a hold given back, then cleared. */
	pl[0] = (struct fc_l7_place){ h.holds[0].who, h.holds[0].slot, h.holds[0].where, UINT32_MAX };
	fc_l7_give_back(t->state, t->state_size, NULL, pl, 1, T0);
	h.holds[0].who = 0;
	/* 4 requests, each a place of policy 1's (key agg) and of policy 2's */
	assert_int_equal(fc_l7_recover(t->state, t->state_size, FC_SHM_WORKER_ID(9, 9), T0, fc_none_alive), 7);
	assert_int_equal(t->ix.slots[2].inflight, 0);
	assert_int_equal(t->ix.slots[1].inflight, 5); /* u1's, taken without a record: not given back */
	assert_int_equal(h.rec->owner, 0);
}

/* Records, holds and counts are the workers' to write: garbage in them
 * crashes nothing (ASan), recovery follows no index out of bounds, and a
 * count never goes below zero. */
static void test_conc_corrupt(void **state)
{
	struct fc_t *t = *state;
	struct fc_l7_place pl[4];
	struct fc_l7_holder h;
	uint64_t x = 0x9e3779b97f4a7c15ULL;
	struct fc_shm_worker *w;
	struct fc_shm_hold *hd;
	size_t i, np;

	fc_conc_policy(t, 1, "uid=*", "1/s", 2, FC_ACTION_DROP);
	fc_conc_policy(t, 2, "uid=agg", "", 2, FC_ACTION_DROP);
	fc_publish(t);
	assert_int_equal(fc_build(t, t->base, t->size), 0);
	w = (struct fc_shm_worker *)((char *)t->state + FC_STATE_WORKERS_OFF);
	hd = (struct fc_shm_hold *)((char *)t->state + FC_STATE_HOLDS_OFF);
	for (i = 0; i < FC_SHM_WORKERS; i++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		w[i].owner = x & ~FC_SHM_WORKER_RECOVER;
		w[i].used = (uint32_t)(x >> 20);
	}
	for (i = 0; i < 64 * FC_SHM_HOLDS; i++) { /* the first 64 records' holds: wild */
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		hd[i].who = x | 1;
		hd[i].slot = i % 3 ? (uint32_t)(x >> 7) % 4 : (uint32_t)(x >> 40);
		hd[i].where = i % 2 ? (uint32_t)x : FC_HOLD_AT((x >> 3) & 0xfff, (x >> 30) & 3);
	}
	t->ix.slots[2].inflight = UINT64_MAX; /* forged: refuses, gives back from it without wrapping */
	assert_int_equal(fc_take(t, NULL, "uid=agg", T0, pl, &np, NULL), FC_L7_REJECTED);
	(void)fc_l7_recover(t->state, t->state_size, 1, T0, fc_none_alive);
	for (i = 0; i < FC_SHM_WORKERS; i++)
		assert_int_equal(w[i].owner, 0);
	/* Every record was free, or is now: a new worker gets one, and decides. */
	fc_holder(t, &h, FC_SHM_WORKER_ID(3, 3));
	t->ix.slots[2].inflight = 0;
	for (i = 0; i < 100; i++) {
		char req[32];

		snprintf(req, sizeof(req), "uid=g%zu", i % 10);
		if (fc_take(t, &h, req, T0 + i * SEC, pl, &np, NULL) == FC_L7_PASS)
			fc_l7_give_back(t->state, t->state_size, &h, pl, np, T0 + i * SEC);
	}
	/* A record whose used says more than the record holds, and holds that
	 * name keys and slots past the table. */
	h.rec->used = UINT32_MAX;
	h.holds[0] = (struct fc_shm_hold){ .who = 5, .slot = UINT32_MAX, .where = FC_HOLD_SLOT };
	h.holds[1] = (struct fc_shm_hold){ .who = 5, .slot = 1, .where = FC_HOLD_AT(0xffffff, 3) };
	h.rec->owner = FC_SHM_WORKER_ID(4, 4);
	assert_true(fc_l7_recover(t->state, t->state_size, 1, T0, fc_none_alive) >= 2);
	assert_int_equal(t->ix.slots[2].inflight, 0);
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, fc_setup, fc_teardown)
	const struct CMUnitTest tests[] = {
		T(test_round_trip),
		T(test_republish),
		T(test_ban_table),
		T(test_allow_entries),
		T(test_allow_without_bans),
		T(test_ban_in_place),
		T(test_ban_in_place_race),
		T(test_corruption),
		T(test_truncation),
		T(test_exact_across_processes),
		T(test_keys_race),
		T(test_keys_race_dense),
		T(test_keys_race_threads),
		T(test_keys_race_dense_threads),
		T(test_keys_two_choices),
		T(test_keys_dense),
		T(test_keys_basics),
		T(test_keys_kinds),
		T(test_keys_full_and_idle),
		T(test_keys_corrupt),
		T(test_keys_repeated),
		T(test_keys_max),
		T(test_keys_recount_race),
		T(test_keys_recount_busy),
		T(test_keys_table_size),
		T(test_exact_across_processes_window),
		T(test_tiers_and_policies_all_or_nothing),
		T(test_delay), T(test_sliding_vectors), T(test_sliding_headers), T(test_warm_vectors),
		T(test_warm_headers), T(test_warm_item_checked), T(test_warm_across_processes),
		T(test_matching_vs_naive),
		T(test_decode),
		T(test_arg),
		T(test_arg_random),
		T(test_spelling),
		T(test_many_matches),
		T(test_conc_basics),
		T(test_conc_keys),
		T(test_conc_with_rate),
		T(test_conc_all_or_nothing),
		T(test_conc_epoch),
		T(test_conc_threads),
		T(test_conc_threads_key),
		T(test_conc_recover),
		T(test_conc_corrupt),
		T(test_conc_warmup),
		T(test_conc_warmup_item),
		T(test_override_partner),
		T(test_override_uid),
		T(test_override_several),
		T(test_more_general),
	};

	if (getenv("FC_TEST")) /* one test, or a glob of them: FC_TEST=test_keys_race */
		cmocka_set_test_filter(getenv("FC_TEST"));
	return cmocka_run_group_tests_name("L7 engine (shm reader, matching, decisions)", tests, NULL, NULL);
}
