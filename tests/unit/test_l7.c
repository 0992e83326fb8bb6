// SPDX-License-Identifier: BSD-2-Clause
/*
 * The L7 engine the nginx module runs (ngx_bridge/fc_l7.c) reading shm files
 * written by freqctl's real publisher: round trips and republishing, bans
 * and allow entries read in place (also while a forked writer publishes),
 * every single-byte corruption and every truncation of a published block
 * (built with AddressSanitizer). The engine's other suites, by topic:
 * test_l7_decide.c, test_l7_match.c, test_l7_keys.c and test_l7_conc.c;
 * their shared fixtures are in fc_test_l7.c.
 */
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "fc_allow.h"
#include "fc_enforce.h"
#include "fc_shm_write.h"
#include "fc_source.h"
#include "fc_test.h"
#include "fc_test_l7.h"

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
	/* A uid ban first: the request is counted once, as a uid's. */
	assert_int_equal(fc_decide(t, "uid=evil ip=203.0.113.77", T0, &res), FC_L7_BANNED);
	assert_true(res.uid_ban);
	/* Counters in the slots, and the bans' in the state file's header. */
	assert_int_equal(t->ix.slots[1].passed, 3);
	assert_int_equal(t->ix.slots[1].denied, 3);
	assert_int_equal(t->ix.state_hdr->banned_uid, 2);
	assert_int_equal(t->ix.state_hdr->banned_addr, 1);
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
		rc = fc_shm_publish_delta(t->shm, t->group, t->keys, &src, &d, log.id, seq, &res, err);
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
	assert_int_equal(h->ban_gen & 1, 0); /* settled */

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
	};
#undef T

	return fc_run_group("L7 engine: the shm reader (round trips, bans and allows in place, corruption, truncation)", tests, NULL, NULL);
}
