// SPDX-License-Identifier: BSD-2-Clause
/*
 * The lease engine's round (loader/agent/fc_fleet_engine.c) against a real
 * redis-server and its replica (tests/integration/test_fleet_script.sh
 * starts them: FC_FLEET_IT_REDIS, FC_FLEET_IT_REPLICA_PID; FC_FLEET_IT_USER,
 * _PASSWORD and _PREFIX run it as an ACL user), over a state
 * file this test writes as nginx's workers would: a key refused for lack of
 * credit sets its demand word and goes on the fleet ring; the engine's
 * round asks Redis and puts the grant in the key's credit word. Rounds are
 * run one at a time at a clock of the test's.
 *
 * What it holds to: a key on the ring is tracked and granted from the
 * pool other nodes released, after a WAIT, within one round; its demand
 * word is cleared when satisfied; hostile ring entries (an index past the
 * table, a tag or an epoch that is not the entry's, a slot of no fleet
 * policy) are counted and not tracked; a fixed-value policy's slot is
 * polled each round; Redis paused (CLIENT PAUSE) makes the node degraded
 * after three failed rounds and the status file says so, and it comes back
 * by itself; another node's demand makes this one release what it holds
 * idle, and the asking node gets it; the state file truncated under the engine voids the round
 * without a crash; a state file or pins made anew while it runs are mapped
 * again, and a window begun before they were made is released as nothing.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <cmocka.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <hiredis/hiredis.h>
#include <jansson.h>

#include "fc_fleet_beat.h"
#include "fc_fleet_engine.h"
#include "fc_policy.h"
#include "fc_shm.h"
#include "fc_test_dir.h"

#define NKEYS 1024u
#define UNIT_NS (60ULL * 1000000000ULL)
#define TAG 0x5eed00000000abcdULL

static char dir[64], state_path[128], shm_path[128], addr[64], prefix[32], pin_dir[64];
static redisContext *adm_ctx;
static uint64_t size;

static uint32_t nos[2] = { 1, 2 };
/* Two nodes of equal weight: N 10 is 5 and 5. */
static struct fc_fleet_member members[2] = { { .no = 1, .weight = 500000 }, { .no = 2, .weight = 500000 } };
static struct fc_fleet_set sets[1] = { { .at_ms = 0, .m = members, .n = 2, .digest = 0xd16e57 } };
static struct fc_fleet_policy pols[4];

/* A fleet policy of N 10 per minute. */
static struct fc_fleet_policy pol(uint32_t id, uint32_t epoch, uint32_t slot, uint8_t algo, uint8_t layer, bool keyed,
				  uint32_t fixed_u)
{
	return (struct fc_fleet_policy){ .id = id,
					 .epoch = epoch,
					 .slot = slot,
					 .algo = algo,
					 .layer = layer,
					 .keyed = keyed,
					 .n = 10,
					 .burst = 10,
					 .unit_ns = UNIT_NS,
					 .fixed_u = fixed_u };
}

/* What a publish hands node no's agent: policy 7 (uid=* 10/m, keyed,
 * slot 3, epoch 5), policy 8 (a fixed value, 10/m, slot 4, epoch 6) and
 * policy 9 (uid=* 10/m sliding, slot 5, epoch 7); policy 10 (ip=ADDR at
 * XDP/TC, 10/m, slot 6, epoch 8) only where a case adds it (npols 4). */
static struct fc_fleet_cfg cfg_of(uint32_t no)
{
	struct fc_fleet_cfg c = { .node_no = no, .pols = pols, .npols = 3, .sets = sets, .nsets = 1 };
	int i;

	pols[0] = pol(7, 5, 3, FC_ALGO_FLEET_WINDOW, FC_LAYER_HTTP, true, 0);
	pols[1] = pol(8, 6, 4, FC_ALGO_FLEET_WINDOW, FC_LAYER_HTTP, false, 77);
	pols[2] = pol(9, 7, 5, FC_ALGO_FLEET_SLIDING, FC_LAYER_HTTP, true, 0);
	pols[3] = pol(10, 8, 6, FC_ALGO_FLEET_WINDOW, FC_LAYER_XDP, false, 99);
	for (i = 0; i < 4; i++) {
		fc_fleet_split_make(members, 2, no - 1, 10, 0, UNIT_NS, 0, &pols[i].split[0]);
		pols[i].split[1] = (struct fc_fleet_split){ .from = FC_FLEET_NEVER };
	}
	return c;
}

static struct fc_fleet_cfg cfg(void)
{
	return cfg_of(1);
}

static struct fc_fleet_opts opts(void)
{
	struct fc_fleet_opts o = { .node = "n1", .interval_ms = 100, .max_skew_ms = 500 };

	snprintf(o.state_path, sizeof(o.state_path), "%s", state_path);
	snprintf(o.status_shm, sizeof(o.status_shm), "%s", shm_path);
	return o;
}

static struct fc_redis *client(unsigned timeout_ms)
{
	struct fc_redis_conf conf;
	struct fc_redis *r;
	struct fc_err err;
	char url[256];

	/* FC_FLEET_IT_USER: the engine as that ACL user (its password in
	 * FC_FLEET_IT_PASSWORD); the test's own connection stays the default's */
	if (getenv("FC_FLEET_IT_USER"))
		snprintf(url, sizeof(url), "redis://%s:%s@%s", getenv("FC_FLEET_IT_USER"),
			 getenv("FC_FLEET_IT_PASSWORD") ? getenv("FC_FLEET_IT_PASSWORD") : "", addr);
	else
		snprintf(url, sizeof(url), "redis://%s", addr);
	fc_redis_conf_init(&conf);
	conf.timeout_ms = timeout_ms;
	if (fc_redis_conf_urls(&conf, url, &err) || fc_redis_conf_prefix(&conf, prefix, &err))
		fail_msg("%s", err.msg);
	r = fc_redis_open(&conf, &err);
	if (!r)
		fail_msg("%s", err.msg);
	return r;
}

/* The state file as the workers have it. */
static void *state;

static struct fc_shm_key *entry(uint32_t i)
{
	return (struct fc_shm_key *)((char *)state + FC_STATE_KEYS_OFF) + i;
}

static struct fc_shm_fleet_ring *ring(void)
{
	return (struct fc_shm_fleet_ring *)((char *)state + FC_STATE_FLEET_OFF);
}

static void push(uint64_t tag, uint32_t index, uint32_t slot, uint32_t epoch, uint64_t w)
{
	struct fc_shm_fleet_ring *rg = ring();
	uint64_t i = rg->head++;
	struct fc_shm_fleet_entry *e = &rg->e[i & (FC_SHM_FLEET_RING_SIZE - 1)];

	*e = (struct fc_shm_fleet_entry){
		.tag = tag, .index = index, .slot = slot, .epoch = epoch, .window = (uint32_t)FC_FLEET_LABEL(w)
	};
	__atomic_store_n(&e->seq, i + 1, __ATOMIC_RELEASE);
}

/* A key refused in window w with no credit left: what a worker leaves. */
static void refused_key(uint32_t index, uint64_t tag, uint64_t w, uint32_t denied)
{
	struct fc_shm_key *k = entry(index);

	memset(k, 0, sizeof(*k));
	k->slot = 3;
	k->epoch = 5;
	k->state[0] = FC_FLEET_WORD(w, 0);
	k->state[1] = FC_FLEET_WORD(w, FC_FLEET_WANTED);
	k->denied = denied;
	k->passed = 5;
	__atomic_store_n(&k->tag, tag, __ATOMIC_RELEASE);
	push(tag, index, 3, 5, w);
}

/* A call of node 2's agent for the key's record in window w: what it
 * releases, has applied and wants. */
static struct fc_fleet_result node2_call_of(uint32_t id, uint32_t epoch, uint64_t kid, uint64_t w, uint64_t r_lock,
					    uint64_t g_app, uint64_t want)
{
	struct fc_fleet_rec rec = { .id = id, .epoch = epoch, .kid = kid, .kind = 'w', .unit = 60, .w = w };
	struct fc_fleet_expect ex = { .nstar = 10, .g_app = g_app };
	const uint64_t shares[2] = { 5, 5 };
	struct fc_redis *r = client(2000);
	struct fc_fleet_result res;
	struct fc_fleet_batch b;
	struct fc_fleet_call *c;
	struct fc_err err;

	fc_fleet_batch_init(&b);
	c = fc_fleet_batch_add(&b);
	assert_true(fc_fleet_rec_name(&rec, prefix, c->record, sizeof(c->record), &err) > 0);
	c->no = 2;
	c->limit = 10;
	c->n = 10;
	c->set = 0xd16e57;
	c->ttl_ms = 120000;
	c->r_lock = r_lock;
	c->g_app = g_app;
	c->want = want;
	c->nshares = 2;
	c->share_no = nos;
	c->share = shares;
	if (fc_fleet_batch_run(&b, r, &ex, &err))
		fail_msg("%s", err.msg);
	res = b.res[0];
	fc_fleet_batch_free(&b);
	fc_redis_close(r);
	return res;
}

static struct fc_fleet_result node2_call(uint64_t kid, uint64_t w, uint64_t r_lock, uint64_t g_app, uint64_t want)
{
	return node2_call_of(7, 5, kid, w, r_lock, g_app, want);
}

static void node2_releases(uint64_t kid, uint64_t w, uint64_t x)
{
	node2_call(kid, w, x, 0, 0);
}

static long long hget_of(uint32_t id, uint32_t epoch, uint64_t kid, uint64_t w, const char *field)
{
	struct fc_fleet_rec rec = { .id = id, .epoch = epoch, .kid = kid, .kind = 'w', .unit = 60, .w = w };
	char name[FC_FLEET_NAME_MAX];
	struct fc_err err;
	redisReply *r;
	long long v;

	assert_true(fc_fleet_rec_name(&rec, prefix, name, sizeof(name), &err) > 0);
	r = redisCommand(adm_ctx, "HGET %s %s", name, field);
	assert_non_null(r);
	v = r->type == REDIS_REPLY_STRING ? strtoll(r->str, NULL, 10) : -1;
	freeReplyObject(r);
	return v;
}

static long long hget(uint64_t kid, uint64_t w, const char *field)
{
	return hget_of(7, 5, kid, w, field);
}

static uint64_t window_start(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return ((uint64_t)ts.tv_sec * 1000000000ULL / UNIT_NS) * UNIT_NS;
}

static void test_ring_key_granted(void **state_)
{
	struct fc_fleet_cfg c = cfg();
	struct fc_fleet_opts o = opts();
	uint64_t t0 = window_start(), w = t0 / UNIT_NS;
	const struct fc_fleet_status *v;
	struct fc_redis *r = client(2000);
	struct fc_fleet *f;
	struct fc_err err;
	uint64_t scripts;
	int i;

	(void)state_;
	f = fc_fleet_new(&o, &c, r, &err);
	assert_non_null(f);
	fc_fleet_round(f, t0); /* maps the file; nothing to do */
	assert_int_equal(fc_fleet_status_of(f)->policies[0].tracked, 0);
	node2_releases(TAG, w, 4);
	refused_key(17, TAG, w, 3);
	/* one round, or more if its WAIT (interval/2) came back short on a
	 * loaded machine: the next call is a duplicate, which grants nothing
	 * and is confirmed by its own WAIT */
	for (i = 1; i <= 3; i++) {
		fc_fleet_round(f, t0 + i * 100000000ULL);
		if (FC_FLEET_WORD_CREDIT(entry(17)->state[0]))
			break;
	}
	printf("# granted after %d round(s)\n", i);
	v = fc_fleet_status_of(f);
	assert_string_equal(fc_fleet_mode_name(v->mode), "fleet");
	assert_int_equal(v->policies[0].tracked, 1);
	assert_int_equal(v->policies[0].grants, 3);
	/* 3 wanted (the denials), 4 free: granted, confirmed, applied */
	assert_int_equal(FC_FLEET_WORD_CREDIT(entry(17)->state[0]), 3);
	assert_int_equal(FC_FLEET_WORD_W(entry(17)->state[0]), FC_FLEET_LABEL(w));
	assert_int_equal(entry(17)->state[1], 0); /* satisfied: the flag cleared */
	assert_int_equal(hget(TAG, w, "g1"), 3);
	assert_int_equal(hget(TAG, w, "q1"), -1);
	/* nothing more to say: no script */
	scripts = v->counters.scripts;
	fc_fleet_round(f, t0 + 500000000);
	assert_int_equal(fc_fleet_status_of(f)->counters.scripts, scripts);
	assert_int_equal(FC_FLEET_WORD_CREDIT(entry(17)->state[0]), 3);
	fc_fleet_free(f);
	fc_redis_close(r);
}

/* A paced key asks for a lease, not for what was refused: what it met in
 * the last round, for two rounds. Asking only for the refusals leaves a key
 * that meets k requests a round short every other round (design §8.2: short
 * at most two rounds after it first runs out). And an active key whose
 * credit is below its lease asks before it is refused. */
static void test_paced_lease(void **state_)
{
	struct fc_fleet_cfg c = cfg();
	struct fc_fleet_opts o = opts();
	uint64_t t0 = window_start(), w = t0 / UNIT_NS, tag = TAG + 130, scripts;
	struct fc_redis *r = client(2000);
	struct fc_shm_key *e = entry(130);
	struct fc_fleet *f;
	struct fc_err err;
	int i;

	(void)state_;
	f = fc_fleet_new(&o, &c, r, &err);
	assert_non_null(f);
	fc_fleet_round(f, t0);
	node2_releases(tag, w, 4); /* 4 of node 2's share free; it holds 1 */
	refused_key(130, tag, w, 1);
	for (i = 1; i <= 3 && !FC_FLEET_WORD_CREDIT(e->state[0]); i++)
		fc_fleet_round(f, t0 + (uint64_t)i * 100000000ULL);
	assert_int_equal(FC_FLEET_WORD_CREDIT(e->state[0]), 1); /* the one refused */
	/* The round after: 3 requests, one passed on that credit, two refused. */
	e->passed += 1;
	e->denied += 2;
	e->state[0] = FC_FLEET_WORD(w, 0);
	e->state[1] = FC_FLEET_WORD(w, FC_FLEET_WANTED);
	for (i = 4; i <= 6 && !FC_FLEET_WORD_CREDIT(e->state[0]); i++)
		fc_fleet_round(f, t0 + (uint64_t)i * 100000000ULL);
	/* the lease, 2 x 3, of which 3 are free: all 3 (the refusals alone: 2) */
	assert_int_equal(FC_FLEET_WORD_CREDIT(e->state[0]), 3);
	assert_int_equal(hget(tag, w, "g1"), 4);
	/* 3 more passed, no refusal, credit 1 of a lease of 6: it asks anyway,
	 * node 2 still holding 1 (nothing is free: it is left asking, q1) */
	e->passed += 3;
	e->state[0] = FC_FLEET_WORD(w, 1);
	scripts = fc_fleet_status_of(f)->counters.scripts;
	fc_fleet_round(f, t0 + 700000000ULL);
	assert_int_equal(fc_fleet_status_of(f)->counters.scripts, scripts + 1);
	assert_int_equal(hget(tag, w, "q1"), 1);
	fc_fleet_free(f);
	fc_redis_close(r);
}

/* Keys under their share cost Redis nothing (design §8.1: a key is sent
 * only when it wants credit, has a release to tell, must re-assert or
 * adopt): 300 keys spending their own shares round after round, never
 * refused, are not tracked and make no script; the rounds send only the
 * heartbeat (once a second). */
static void test_never_short_no_script(void **state_)
{
	struct fc_fleet_cfg c = cfg();
	struct fc_fleet_opts o = opts();
	uint64_t t0 = window_start(), w = t0 / UNIT_NS, scripts, commands;
	struct fc_redis *r = client(2000);
	const struct fc_fleet_status *v;
	struct fc_fleet *f;
	struct fc_err err;
	uint32_t i;
	int k;

	(void)state_;
	f = fc_fleet_new(&o, &c, r, &err);
	assert_non_null(f);
	fc_fleet_round(f, t0); /* maps the file, the heartbeat of this second */
	for (i = 200; i < 500; i++) { /* as a worker leaves a key after its first request: 1 of 5 spent */
		struct fc_shm_key *e = entry(i);

		memset(e, 0, sizeof(*e));
		e->slot = 3;
		e->epoch = 5;
		e->state[0] = FC_FLEET_WORD(w, 4);
		e->passed = 1;
		__atomic_store_n(&e->tag, TAG + 1000 + i, __ATOMIC_RELEASE);
	}
	v = fc_fleet_status_of(f);
	scripts = v->counters.scripts;
	commands = v->counters.commands;
	for (k = 1; k <= 5; k++) {
		for (i = 200; i < 500 && k <= 3; i++) { /* a request each, on its own credit */
			entry(i)->state[0] = FC_FLEET_WORD(w, 4 - (uint64_t)k);
			entry(i)->passed++;
		}
		fc_fleet_round(f, t0 + (uint64_t)k * 100000000ULL);
		v = fc_fleet_status_of(f);
		printf("# round %d: %" PRIu64 " scripts, %" PRIu64 " commands\n", k, v->counters.scripts - scripts,
		       v->counters.commands - commands);
	}
	assert_int_equal(v->counters.scripts, scripts);
	assert_int_equal(v->counters.commands, commands); /* the next heartbeat is a second on */
	assert_int_equal(v->policies[0].tracked, 0);
	fc_fleet_free(f);
	fc_redis_close(r);
}

/* Ring entries that do not check are counted and not tracked; one of a
 * window that is over is dropped quietly. */
static void test_hostile_ring(void **state_)
{
	struct fc_fleet_cfg c = cfg();
	struct fc_fleet_opts o = opts();
	uint64_t t0 = window_start(), w = t0 / UNIT_NS;
	struct fc_redis *r = client(2000);
	const struct fc_fleet_status *v;
	struct fc_fleet *f;
	struct fc_err err;

	(void)state_;
	f = fc_fleet_new(&o, &c, r, &err);
	fc_fleet_round(f, t0);
	refused_key(40, TAG + 1, w, 1);
	ring()->head--;                    /* refused_key's own push: replaced by the bad ones */
	push(TAG + 1, NKEYS + 5, 3, 5, w); /* past the table */
	push(TAG + 2, 40, 3, 5, w);        /* not the entry's tag */
	push(TAG + 1, 40, 3, 9, w);        /* not the entry's epoch (and no policy's) */
	push(TAG + 1, 40, 11, 5, w);       /* a slot of no fleet policy */
	push(TAG + 1, 40, 3, 5, w - 1);    /* a window over */
	push(5, 40, 3, 5, w);              /* a busy word for a tag */
	fc_fleet_round(f, t0 + 100000000);
	v = fc_fleet_status_of(f);
	assert_int_equal(v->policies[0].tracked, 0);
	assert_int_equal(v->counters.ring_errors, 5);
	assert_int_equal(entry(40)->state[0], FC_FLEET_WORD(w, 0));
	fc_fleet_free(f);
	fc_redis_close(r);
}

/* A fixed-value policy's slot, polled each round: its use goes to Redis
 * when it changes, and a demand is granted into the slot's word. */
static void test_fixed_slot(void **state_)
{
	struct fc_fleet_cfg c = cfg();
	struct fc_fleet_opts o = opts();
	uint64_t t0 = window_start(), w = t0 / UNIT_NS;
	struct fc_shm_slot *s = (struct fc_shm_slot *)((char *)state + FC_STATE_SLOTS_OFF) + 4;
	struct fc_fleet_rec rec = { .id = 8, .epoch = 6, .kid = 0, .kind = 'w', .unit = 60, .w = w };
	struct fc_redis *r = client(2000);
	char name[FC_FLEET_NAME_MAX];
	struct fc_fleet *f;
	struct fc_err err;
	redisReply *rep;

	(void)state_;
	memset(s, 0, sizeof(*s));
	s->owner = (uint64_t)8 << 32 | 6;
	s->state[0] = FC_FLEET_WORD(w, 2); /* 3 of its 5 spent */
	f = fc_fleet_new(&o, &c, r, &err);
	fc_fleet_round(f, t0);
	assert_true(fc_fleet_rec_name(&rec, prefix, name, sizeof(name), &err) > 0);
	rep = redisCommand(adm_ctx, "HGET %s u1", name);
	assert_int_equal(rep->type, REDIS_REPLY_STRING);
	assert_string_equal(rep->str, "3");
	freeReplyObject(rep);
	/* its owner changed (another policy in the slot): left alone */
	s->owner = (uint64_t)9 << 32 | 6;
	s->state[0] = FC_FLEET_WORD(w, 0);
	fc_fleet_round(f, t0 + 100000000);
	rep = redisCommand(adm_ctx, "HGET %s u1", name);
	assert_string_equal(rep->str, "3");
	freeReplyObject(rep);
	fc_fleet_free(f);
	fc_redis_close(r);
}

/* A fixed-value policy's slot that saw no request in this window (its
 * word still of an earlier one) holds this node's whole share: another
 * node short of the policy asks, and this one releases all of it. */
static void test_fixed_release_unused(void **state_)
{
	struct fc_fleet_cfg c = cfg();
	struct fc_fleet_opts o = opts();
	uint64_t t0 = window_start(), w = t0 / UNIT_NS;
	struct fc_shm_slot *s = (struct fc_shm_slot *)((char *)state + FC_STATE_SLOTS_OFF) + 4;
	struct fc_redis *r = client(2000);
	struct fc_fleet_result res = { 0 };
	struct fc_fleet *f;
	struct fc_err err;
	int i;

	(void)state_;
	memset(s, 0, sizeof(*s));
	s->state[0] = FC_FLEET_WORD(w - 1, 2); /* the last window's: none of w spent */
	s->owner = (uint64_t)8 << 32 | 6;
	f = fc_fleet_new(&o, &c, r, &err);
	fc_fleet_round(f, t0); /* maps the file, subscribes, tracks the slot */
	for (i = 1; i <= 10 && res.g < 5; i++) {
		res = node2_call_of(8, 6, 0, w, 0, res.g, 5 - res.g);
		usleep(20000); /* the message on its way */
		fc_fleet_round(f, t0 + (uint64_t)i * 100000000ULL);
	}
	printf("# node 2 granted %" PRIu64 " after %d of its calls\n", res.g, i - 1);
	assert_int_equal(res.g, 5);
	assert_int_equal(s->state[0], FC_FLEET_WORD(w, 0)); /* rolled to w, all of it locked */
	fc_fleet_free(f);
	fc_redis_close(r);
}

/* The status file, or NULL while there is none (or it is being renamed). */
static json_t *status_file_maybe(void)
{
	char path[160];

	snprintf(path, sizeof(path), "%s.fleet.json", shm_path);
	return json_load_file(path, 0, NULL);
}

static json_t *status_file(void)
{
	char path[160];
	json_t *doc;

	snprintf(path, sizeof(path), "%s.fleet.json", shm_path);
	doc = json_load_file(path, 0, NULL);
	assert_non_null(doc);
	return doc;
}

/* Redis paused: calls time out; three rounds of it and the node is
 * degraded (the status file says so, with the reason); Redis back, the next
 * try finds it and the node is in fleet mode again. */
static void test_degraded_and_back(void **state_)
{
	struct fc_fleet_cfg c = cfg();
	struct fc_fleet_opts o = opts();
	uint64_t t0 = window_start(), w = t0 / UNIT_NS, t;
	struct fc_redis *r = client(150);
	struct fc_fleet *f;
	struct fc_err err;
	redisReply *rep;
	json_t *doc;
	int i;

	(void)state_;
	f = fc_fleet_new(&o, &c, r, &err);
	fc_fleet_round(f, t0);
	refused_key(60, TAG + 60, w, 1);
	rep = redisCommand(adm_ctx, "CLIENT PAUSE 1200 ALL");
	freeReplyObject(rep);
	for (i = 1, t = t0; i <= 3; i++) {
		t += 100000000;
		fc_fleet_round(f, t);
		assert_int_equal(fc_fleet_status_of(f)->mode, i < 3 ? FC_FLEET_MODE_FLEET : FC_FLEET_MODE_DEGRADED);
		/* past the backoff, so that each round tries */
		t += 1000000000;
	}
	doc = status_file();
	assert_string_equal(json_string_value(json_object_get(doc, "mode")), "degraded");
	assert_true(strlen(json_string_value(json_object_get(doc, "reason"))) > 0);
	json_decref(doc);
	assert_int_equal(FC_FLEET_WORD_CREDIT(entry(60)->state[0]), 0);
	usleep(1300000); /* the pause is over */
	fc_fleet_round(f, t + 2000000000);
	assert_int_equal(fc_fleet_status_of(f)->mode, FC_FLEET_MODE_FLEET);
	assert_int_equal(fc_fleet_status_of(f)->counters.degraded, 1);
	doc = status_file();
	assert_string_equal(json_string_value(json_object_get(doc, "mode")), "fleet");
	json_decref(doc);
	fc_fleet_free(f);
	fc_redis_close(r);
}

/* The state file truncated under the engine (a hostile worker): the round
 * is void, nothing crashes; made whole again, the next round maps it anew. */
static void test_truncated_state(void **state_)
{
	struct fc_fleet_cfg c = cfg();
	struct fc_fleet_opts o = opts();
	uint64_t t0 = window_start(), w = t0 / UNIT_NS;
	struct fc_redis *r = client(2000);
	struct fc_fleet *f;
	struct fc_err err;

	(void)state_;
	f = fc_fleet_new(&o, &c, r, &err);
	fc_fleet_round(f, t0);
	refused_key(80, TAG + 80, w, 1);
	assert_int_equal(truncate(state_path, 4096), 0);
	fc_fleet_round(f, t0 + 100000000);
	assert_int_equal(truncate(state_path, (off_t)size), 0);
	fc_fleet_round(f, t0 + 200000000);
	assert_int_equal(fc_fleet_status_of(f)->mode, FC_FLEET_MODE_FLEET);
	fc_fleet_free(f);
	fc_redis_close(r);
}

/* Key tag (entry k) holding 4 of its 5 unused, idle, and node 2 asking for
 * 3 until it is granted them (at most 10 calls, a round after each): what
 * node 2 was last told. */
static struct fc_fleet_result idle_key_released(struct fc_fleet *f, struct fc_shm_key *k, uint64_t tag, uint64_t t0)
{
	struct fc_fleet_result res = { 0 };
	uint64_t w = t0 / UNIT_NS;
	int i;

	k->slot = 3;
	k->epoch = 5;
	k->state[0] = FC_FLEET_WORD(w, 4); /* 1 of its 5 spent, 4 unused */
	k->passed = 1;
	__atomic_store_n(&k->tag, tag, __ATOMIC_RELEASE);
	for (i = 1; i <= 10 && res.g < 3; i++) {
		res = node2_call(tag, w, 0, res.g, 3 - res.g);
		usleep(20000); /* the message on its way */
		fc_fleet_round(f, t0 + (uint64_t)i * 100000000ULL);
	}
	printf("# node 2 granted %" PRIu64 " after %d of its calls\n", res.g, i - 1);
	return res;
}

/* Node 2 short of a key node 1 holds idle: the script publishes the
 * demand, node 1's engine hears it, locks all of the key's credit once the
 * key has been idle two rounds, and tells Redis; node 2's next call is
 * granted from it. */
static void test_release_on_demand(void **state_)
{
	struct fc_fleet_cfg c = cfg();
	struct fc_fleet_opts o = opts();
	uint64_t t0 = window_start(), w = t0 / UNIT_NS, tag = TAG + 90;
	struct fc_redis *r = client(2000);
	struct fc_fleet_result res = { 0 };
	struct fc_shm_key *k = entry(fc_shm_key_place(tag, 0, NKEYS)); /* where a worker puts it */
	struct fc_fleet *f;
	struct fc_err err;

	(void)state_;
	f = fc_fleet_new(&o, &c, r, &err);
	fc_fleet_round(f, t0); /* maps the file, subscribes */
	res = idle_key_released(f, k, tag, t0);
	assert_int_equal(res.g, 3);
	assert_int_equal(FC_FLEET_WORD_CREDIT(k->state[0]), 0); /* all of it locked */
	assert_int_equal(FC_FLEET_WORD_W(k->state[0]), FC_FLEET_LABEL(w));
	assert_int_equal(hget(tag, w, "r1"), 4);
	assert_int_equal(hget(tag, w, "u1"), 1);
	assert_int_equal(fc_fleet_status_of(f)->policies[0].releases, 4);
	fc_fleet_free(f);
	fc_redis_close(r);
}

static void header_write(uint64_t fresh_ns);

/* A key that released (r_lock 4 of its share 5) whose share then falls to
 * 0 (its state made anew in the window: the fresh rule): what it reports
 * used is 0, not share + grants - released wrapped (was: 2^64 - 4). */
static void test_allot_below_released(void **state_)
{
	struct fc_fleet_cfg c = cfg();
	struct fc_fleet_opts o = opts();
	uint64_t t0 = window_start(), w = t0 / UNIT_NS, tag = TAG + 95;
	struct fc_redis *r = client(2000);
	struct fc_shm_key *k = entry(fc_shm_key_place(tag, 0, NKEYS));
	struct fc_fleet *f;
	struct fc_err err;

	(void)state_;
	f = fc_fleet_new(&o, &c, r, &err);
	fc_fleet_round(f, t0);
	assert_int_equal(idle_key_released(f, k, tag, t0).g, 3);
	assert_int_equal(hget(tag, w, "r1"), 4);
	assert_int_equal(hget(tag, w, "u1"), 1);
	header_write(t0 + 1); /* the state made anew in the window: no share of it */
	k->denied += 2; /* refused since: it asks, saying what it used */
	k->state[1] = FC_FLEET_WORD(w, FC_FLEET_WANTED);
	fc_fleet_round(f, t0 + 2000000000ULL);
	fc_fleet_round(f, t0 + 2100000000ULL);
	printf("# u1 after the share fell below what was released: %lld\n", hget(tag, w, "u1"));
	assert_int_equal(hget(tag, w, "u1"), 1);
	assert_int_equal(hget(tag, w, "r1"), 4);
	fc_fleet_free(f);
	fc_redis_close(r);
}

/* A key this node never saw, asked for by node 2: node 1 makes a release
 * record (its entry, with nothing left in the window, held to the window's
 * end plus the skew) and releases its whole share; node 2 is granted. */
static void test_release_record(void **state_)
{
	struct fc_fleet_cfg c = cfg();
	struct fc_fleet_opts o = opts();
	uint64_t t0 = window_start(), w = t0 / UNIT_NS, tag = TAG + 400;
	struct fc_shm_key *k = entry(fc_shm_key_place(tag, 0, NKEYS));
	struct fc_redis *r = client(2000);
	struct fc_fleet_result res = { 0 };
	struct fc_fleet *f;
	struct fc_err err;
	int i;

	(void)state_;
	f = fc_fleet_new(&o, &c, r, &err);
	fc_fleet_round(f, t0);
	for (i = 1; i <= 10 && res.g < 3; i++) {
		res = node2_call(tag, w, 0, res.g, 3 - res.g);
		usleep(20000);
		fc_fleet_round(f, t0 + (uint64_t)i * 100000000ULL);
	}
	printf("# node 2 granted %" PRIu64 " after %d of its calls\n", res.g, i - 1);
	assert_int_equal(res.g, 3);
	assert_int_equal(k->tag, tag);
	assert_int_equal(k->slot, 3);
	assert_int_equal(k->epoch, 5);
	assert_int_equal(k->state[0], FC_FLEET_WORD(w, 0)); /* nothing for a worker to spend */
	assert_int_equal(k->idle_ns, (w + 1) * UNIT_NS + 500000000ULL);
	assert_int_equal(hget(tag, w, "r1"), 5);
	assert_int_equal(fc_fleet_status_of(f)->counters.records, 1);
	fc_fleet_free(f);
	fc_redis_close(r);
}

/* A sliding policy's key: a grant raises its net word and its room
 * (fc_fleet_slide_topup); a release locks only what the rule does not keep
 * for the last window's count, prev (U - e) (fc_fleet_slide_release). */
static void test_sliding(void **state_)
{
	struct fc_fleet_cfg c = cfg();
	struct fc_fleet_opts o = opts();
	uint64_t t0 = window_start(), w = t0 / UNIT_NS, ta = TAG + 200, tb = TAG + 300;
	struct fc_shm_key *a = entry(fc_shm_key_place(ta, 0, NKEYS)), *b = entry(fc_shm_key_place(tb, 0, NKEYS));
	struct fc_redis *r = client(2000);
	struct fc_fleet_result res = { 0 };
	struct fc_fleet *f;
	struct fc_err err;
	int later, i;

	(void)state_;
	f = fc_fleet_new(&o, &c, r, &err);
	fc_fleet_round(f, t0);
	/* a: refused, room 0; node 2 released 4 of its share */
	a->slot = 5;
	a->epoch = 7;
	a->state[0] = FC_FLEET_SLIDE(w, 0, 0);
	a->state[1] = FC_FLEET_WORD(w, FC_FLEET_WANTED);
	a->denied = 2;
	__atomic_store_n(&a->tag, ta, __ATOMIC_RELEASE);
	push(ta, (uint32_t)(a - entry(0)), 5, 7, w);
	node2_call_of(9, 7, ta, w, 4, 0, 0);
	for (i = 1; i <= 3 && !FC_FLEET_SLIDE_ROOM(a->state[0]); i++)
		fc_fleet_round(f, t0 + (uint64_t)i * 100000000ULL);
	assert_int_equal(FC_FLEET_SLIDE_ROOM(a->state[0]), 2);
	assert_int_equal(fc_fleet_net(a->state[2], w, &later), 2);
	/* b: 5 of room, 3 counted in the last window: at e ~ 0 the rule
	 * keeps 3 of the room, so 2 go */
	b->slot = 5;
	b->epoch = 7;
	b->state[0] = FC_FLEET_SLIDE(w, 5, 3);
	b->passed = 4;
	__atomic_store_n(&b->tag, tb, __ATOMIC_RELEASE);
	for (i = 1; i <= 10 && res.g < 2; i++) {
		res = node2_call_of(9, 7, tb, w, 0, res.g, 2 - res.g);
		usleep(20000);
		fc_fleet_round(f, t0 + (uint64_t)(3 + i) * 100000000ULL);
	}
	assert_int_equal(FC_FLEET_SLIDE_ROOM(b->state[0]), 3);
	assert_int_equal(FC_FLEET_SLIDE_PREV(b->state[0]), 3);
	assert_int_equal(fc_fleet_net(b->state[2], w, &later), -2);
	assert_int_equal(res.g, 2);
	fc_fleet_free(f);
	fc_redis_close(r);
}

/* A fixed-value XDP/TC policy: its bucket is fc_buckets[slot], mapped
 * shared from the pin dir (BPF_F_MMAPABLE, a map made here as the loader
 * makes it); a demand word set as the packet path sets it is granted into
 * the bucket's word. */
static void test_xdp_fixed(void **state_)
{
	struct fc_fleet_cfg c = cfg();
	struct fc_fleet_opts o = opts();
	uint64_t t0 = window_start(), w = t0 / UNIT_NS;
	LIBBPF_OPTS(bpf_map_create_opts, mo, .map_flags = BPF_F_MMAPABLE);
	struct fc_redis *r = client(2000);
	struct fc_bucket *b;
	struct fc_fleet *f;
	struct fc_err err;
	char pin[4200];
	size_t len = ((size_t)FC_POLICY_SLOTS * sizeof(struct fc_bucket) + 4095) & ~(size_t)4095;
	int fd, i;

	(void)state_;
	if (geteuid() != 0)
		skip();
	snprintf(o.pin_dir, sizeof(o.pin_dir), "%s", pin_dir); /* removed by the teardown, however the case ends */
	snprintf(pin, sizeof(pin), "%s/fc_buckets", o.pin_dir);
	assert_int_equal(mkdir(o.pin_dir, 0700), 0);
	fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "fc_buckets", 4, sizeof(struct fc_bucket), FC_POLICY_SLOTS, &mo);
	assert_true(fd >= 0);
	assert_int_equal(bpf_obj_pin(fd, pin), 0);
	b = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	assert_true(b != MAP_FAILED);
	close(fd);
	b[6].state[0] = FC_FLEET_WORD(w, 0); /* spent */
	b[6].state[1] = FC_FLEET_WORD(w, FC_FLEET_WANTED);
	c.npols = 4;
	node2_call_of(10, 8, 0, w, 4, 0, 0); /* node 2 releases 4 of the policy's one record, {10.8.0} */
	f = fc_fleet_new(&o, &c, r, &err);
	for (i = 0; i < 4 && !FC_FLEET_WORD_CREDIT(b[6].state[0]); i++)
		fc_fleet_round(f, t0 + (uint64_t)i * 100000000ULL);
	/* no fc_pstats pinned: a want of 1 a round */
	assert_int_equal(FC_FLEET_WORD_CREDIT(b[6].state[0]), 1);
	assert_int_equal(FC_FLEET_WORD_W(b[6].state[0]), FC_FLEET_LABEL(w));
	assert_int_equal(b[6].state[1], 0);
	fc_fleet_free(f);
	fc_redis_close(r);
	munmap(b, len);
}

/* A key short while another node holds credit and never lets go (its
 * agent down): asked three rounds in vain, then backed off 2 rounds, then
 * 4 (design §8.1). */
static void test_backoff(void **state_)
{
	struct fc_fleet_cfg c = cfg();
	struct fc_fleet_opts o = opts();
	uint64_t t0 = window_start(), w = t0 / UNIT_NS, calls[10];
	struct fc_redis *r = client(2000);
	struct fc_fleet *f;
	struct fc_err err;
	int i;

	(void)state_;
	f = fc_fleet_new(&o, &c, r, &err);
	fc_fleet_round(f, t0);
	refused_key(110, TAG + 110, w, 1);
	for (i = 0; i < 10; i++) {
		fc_fleet_round(f, t0 + (uint64_t)(i + 1) * 100000000ULL);
		calls[i] = fc_fleet_status_of(f)->counters.scripts;
	}
	/* rounds 1-3 ask; 4-5 quiet; 6 asks; 7-10 quiet */
	assert_int_equal(calls[0], 1);
	assert_int_equal(calls[2], 3);
	assert_int_equal(calls[4], 3);
	assert_int_equal(calls[5], 4);
	assert_int_equal(calls[9], 4);
	fc_fleet_free(f);
	fc_redis_close(r);
}

/* Redis loses a grant it confirmed (HDEL g1, G back: a server restarted
 * without AOF) and drops the engine's connection: once the engine has a new
 * connection, its next round re-asserts the key's totals, which restores
 * g1 and freezes the record (design §7, "re-assertion"). */
static void test_reassert_after_reconnect(void **state_)
{
	struct fc_fleet_cfg c = cfg();
	struct fc_fleet_opts o = opts();
	uint64_t t0 = window_start(), w = t0 / UNIT_NS, tag = TAG + 120, t;
	struct fc_fleet_rec rec = { .id = 7, .epoch = 5, .kid = tag, .kind = 'w', .unit = 60, .w = w };
	struct fc_redis *r = client(2000);
	char name[FC_FLEET_NAME_MAX];
	struct fc_fleet *f;
	struct fc_err err;
	int i;

	(void)state_;
	f = fc_fleet_new(&o, &c, r, &err);
	fc_fleet_round(f, t0);
	node2_releases(tag, w, 4);
	refused_key(120, tag, w, 3);
	for (i = 1, t = t0; i <= 3 && !FC_FLEET_WORD_CREDIT(entry(120)->state[0]); i++)
		fc_fleet_round(f, t += 100000000);
	assert_int_equal(hget(tag, w, "g1"), 3);
	assert_true(fc_fleet_rec_name(&rec, prefix, name, sizeof(name), &err) > 0);
	freeReplyObject(redisCommand(adm_ctx, "HDEL %s g1", name));
	freeReplyObject(redisCommand(adm_ctx, "HINCRBY %s G -3", name));
	freeReplyObject(redisCommand(adm_ctx, "CLIENT KILL TYPE normal SKIPME yes"));
	for (i = 0; i < 6 && !fc_fleet_status_of(f)->counters.reasserted; i++)
		fc_fleet_round(f, t += 1000000000);
	printf("# re-asserted after %d rounds\n", i);
	assert_int_equal(fc_fleet_status_of(f)->counters.reasserted, 1);
	assert_int_equal(fc_fleet_status_of(f)->counters.frozen, 1);
	assert_int_equal(hget(tag, w, "g1"), 3);
	assert_int_equal(hget(tag, w, "frozen"), 1);
	fc_fleet_free(f);
	fc_redis_close(r);
}

/* --fleet-max-keys 3 with 5 keys asking: 3 scripts a round, the rest
 * deferred (counted) and first in the next round, so every key is asked
 * within 3 rounds. (3, not 2: 2 x it is the cap of tracked keys, and
 * policy 8's fixed key is one.) */
static void test_max_keys(void **state_)
{
	struct fc_fleet_cfg c = cfg();
	struct fc_fleet_opts o = opts();
	uint64_t t0 = window_start(), w = t0 / UNIT_NS;
	struct fc_redis *r = client(2000);
	struct fc_fleet *f;
	struct fc_err err;
	int i;

	(void)state_;
	o.max_keys = 3;
	f = fc_fleet_new(&o, &c, r, &err);
	fc_fleet_round(f, t0);
	for (i = 0; i < 5; i++)
		refused_key(200 + (uint32_t)i, TAG + 200 + (uint64_t)i, w, 1);
	fc_fleet_round(f, t0 + 100000000);
	assert_int_equal(fc_fleet_status_of(f)->counters.scripts, 3);
	assert_int_equal(fc_fleet_status_of(f)->counters.deferred, 2);
	fc_fleet_round(f, t0 + 200000000);
	fc_fleet_round(f, t0 + 300000000);
	for (i = 0; i < 5; i++)
		assert_int_equal(hget(TAG + 200 + (uint64_t)i, w, "q1"), 1); /* each asked */
	fc_fleet_free(f);
	fc_redis_close(r);
}

/* The heartbeat: two nodes see each other (in the node set), the fleet's
 * use of a policy is what both passed in the window; a clock 2 s ahead of
 * Redis's with --fleet-max-skew 500 ms is degraded (clock), sends no
 * script, and comes back by itself once the clock is right. */
static void test_heartbeat_and_clock(void **state_)
{
	struct fc_fleet_cfg c1 = cfg(), c2;
	struct fc_fleet_opts o1 = opts(), o2 = opts();
	uint64_t t0 = window_start(), w = t0 / UNIT_NS, t, scripts;
	struct fc_shm_slot *slot = (struct fc_shm_slot *)((char *)state + FC_STATE_SLOTS_OFF) + 3;
	struct fc_redis *r1 = client(2000), *r2 = client(2000);
	const struct fc_fleet_status *v;
	struct fc_fleet *f1, *f2;
	struct fc_err err;
	int i;

	(void)state_;
	snprintf(o2.node, sizeof(o2.node), "n2");
	o2.status_shm[0] = 0;
	slot->owner = (uint64_t)7 << 32 | 5;
	slot->passed = 100;
	f1 = fc_fleet_new(&o1, &c1, r1, &err);
	c2 = cfg_of(2);
	f2 = fc_fleet_new(&o2, &c2, r2, &err);
	c1 = cfg_of(1); /* pols[] is shared: the engines copied theirs */
	fc_fleet_round(f1, t0);
	fc_fleet_round(f2, t0);
	slot->passed = 107; /* 7 passed in the window since both began it */
	fc_fleet_round(f1, t0 + 1000000000);
	fc_fleet_round(f2, t0 + 1000000000);
	fc_fleet_round(f1, t0 + 2000000000);
	v = fc_fleet_status_of(f1);
	assert_int_equal(v->nnodes, 2);
	assert_true(v->nodes[0].in_set && v->nodes[1].in_set);
	assert_true(!strcmp(v->nodes[0].name, "n2") || !strcmp(v->nodes[1].name, "n2"));
	assert_int_equal(v->policies[0].fleet_used, 14);
	assert_int_equal(v->policies[0].window, w);
	assert_true(v->offset_ms > -500 && v->offset_ms < 500);
	fc_fleet_free(f2);
	fc_redis_close(r2);

	/* the clock 2 s ahead */
	o1.clock_ns = 2000000000;
	assert_int_equal(fc_fleet_update(f1, &o1, NULL, &err), 0);
	refused_key(70, TAG + 70, (t0 + 2000000000) / UNIT_NS, 1);
	t = t0 + 3000000000ULL;
	for (i = 0; i < 5 && fc_fleet_status_of(f1)->mode != FC_FLEET_MODE_DEGRADED; i++, t += 1000000000)
		fc_fleet_round(f1, t);
	v = fc_fleet_status_of(f1);
	assert_int_equal(v->mode, FC_FLEET_MODE_DEGRADED);
	assert_non_null(strstr(v->reason, "ms from Redis (max 500)"));
	assert_true(!strncmp(v->reason, "clock 19", 8) || !strncmp(v->reason, "clock 20", 8));
	scripts = v->counters.scripts;
	fc_fleet_round(f1, t);
	assert_int_equal(fc_fleet_status_of(f1)->counters.scripts, scripts); /* no grants asked */
	/* right again: back within a few heartbeats (the median of 5) */
	o1.clock_ns = 0;
	assert_int_equal(fc_fleet_update(f1, &o1, NULL, &err), 0);
	for (i = 0; i < 8 && fc_fleet_status_of(f1)->mode != FC_FLEET_MODE_FLEET; i++, t += 1000000000)
		fc_fleet_round(f1, t);
	assert_int_equal(fc_fleet_status_of(f1)->mode, FC_FLEET_MODE_FLEET);
	assert_int_equal(fc_fleet_status_of(f1)->counters.degraded, 1); /* one episode: no flapping */
	fc_fleet_free(f1);
	fc_redis_close(r1);
}

/* The thread: rounds every --sync-interval (the status file's "rounds"
 * grows), a new snapshot taken (a policy dropped shows in the file),
 * stopped and joined. */
static void test_thread(void **state_)
{
	struct fc_fleet_cfg c = cfg();
	struct fc_fleet_opts o = opts();
	struct fc_fleet *f;
	struct fc_err err;
	json_t *doc;
	int64_t rounds = 0;
	int i;

	(void)state_;
	o.interval_ms = 20;
	f = fc_fleet_start(&o, &c, client(2000), &err);
	assert_non_null(f);
	for (i = 0; i < 100 && rounds < 5; i++) {
		usleep(20000);
		doc = status_file_maybe();
		rounds = doc ? json_integer_value(json_object_get(doc, "rounds")) : 0;
		json_decref(doc);
	}
	assert_true(rounds >= 5);
	c.npols = 1;
	assert_int_equal(fc_fleet_update(f, NULL, &c, &err), 0);
	for (i = 0; i < 100; i++) {
		usleep(20000);
		doc = status_file_maybe();
		rounds = doc ? (int64_t)json_array_size(json_object_get(doc, "policies")) : 2;
		json_decref(doc);
		if (rounds == 1)
			break;
	}
	assert_int_equal(rounds, 1);
	fc_fleet_stop(f); /* closes its client too */
}

/* The thread hears a demand between its rounds and releases within a
 * quarter of its interval: with rounds 2 s apart, node 2 short of a key
 * node 1 never saw is granted node 1's share well before the next round. */
static void test_thread_early_release(void **state_)
{
	struct fc_fleet_cfg c = cfg();
	struct fc_fleet_opts o = opts();
	uint64_t w, tag = TAG + 500, t0;
	struct fc_fleet_result res = { 0 };
	struct fc_fleet *f;
	struct fc_err err;
	json_t *doc = NULL;
	int i;

	(void)state_;
	o.interval_ms = 2000;
	f = fc_fleet_start(&o, &c, client(2000), &err);
	assert_non_null(f);
	for (i = 0; i < 100 && !doc; i++) { /* its first round: mapped, subscribed */
		usleep(20000);
		doc = status_file_maybe();
	}
	json_decref(doc);
	usleep(200000); /* the subscription made */
	w = window_start() / UNIT_NS;
	t0 = (uint64_t)time(NULL);
	res = node2_call(tag, w, 0, 0, 3); /* short: published */
	assert_int_equal(res.g, 0);
	usleep(700000); /* within I/4 = 500 ms the release went out */
	res = node2_call(tag, w, 0, 0, 3);
	printf("# granted %" PRIu64 " within %llu s of asking\n", res.g, (unsigned long long)time(NULL) - t0);
	assert_int_equal(res.g, 3);
	assert_int_equal(hget(tag, w, "r1"), 5);
	fc_fleet_stop(f);
}

/* A key's credit word above what this node was allotted (5 of N 10),
 * written by someone with the state file (the workers' group): node 2 asks,
 * and this node releases nothing for it (released, node 2 would admit its
 * own 5 and these 10); counted once, in the status file too. */
static void test_inflated_release(void **state_)
{
	struct fc_fleet_cfg c = cfg();
	struct fc_fleet_opts o = opts();
	uint64_t t0 = window_start(), w = t0 / UNIT_NS, tag = TAG + 777;
	struct fc_redis *r = client(2000);
	struct fc_fleet_result res = { 0 };
	struct fc_shm_key *k = entry(fc_shm_key_place(tag, 0, NKEYS));
	struct fc_fleet *f;
	struct fc_err err;
	json_t *doc;
	int i;

	(void)state_;
	f = fc_fleet_new(&o, &c, r, &err);
	fc_fleet_round(f, t0);
	k->slot = 3;
	k->epoch = 5;
	k->state[0] = FC_FLEET_WORD(w, 10); /* hostile: the share is 5 */
	k->passed = 1;
	__atomic_store_n(&k->tag, tag, __ATOMIC_RELEASE);
	for (i = 1; i <= 6; i++) {
		res = node2_call(tag, w, 0, res.g, 10 - res.g);
		usleep(20000);
		fc_fleet_round(f, t0 + (uint64_t)i * 100000000ULL);
	}
	printf("# node 2 granted %" PRIu64 "; r1 %lld, corrupt %" PRIu64 "\n", res.g, hget(tag, w, "r1"),
	       fc_fleet_status_of(f)->counters.corrupt);
	assert_int_equal(res.g, 0);
	assert_true(hget(tag, w, "r1") <= 0);
	assert_int_equal(FC_FLEET_WORD_CREDIT(k->state[0]), 10); /* nothing locked */
	assert_int_equal(fc_fleet_status_of(f)->counters.corrupt, 1);
	doc = status_file();
	assert_int_equal(json_integer_value(json_object_get(json_object_get(doc, "counters"), "corrupt")), 1);
	json_decref(doc);
	fc_fleet_free(f);
	fc_redis_close(r);
}

/* One record whose reply does not check (R 30 of N 10: poisoned by
 * whatever wrote it) fails that key's call only: the round goes on, the
 * other key is granted, and the node never goes degraded for it. */
static void test_bad_record_key_only(void **state_)
{
	struct fc_fleet_cfg c = cfg();
	struct fc_fleet_opts o = opts();
	uint64_t t0 = window_start(), w = t0 / UNIT_NS, bad = TAG + 801, good = TAG + 802;
	struct fc_fleet_rec rec = { .id = 7, .epoch = 5, .kid = bad, .kind = 'w', .unit = 60, .w = w };
	struct fc_redis *r = client(2000);
	char name[FC_FLEET_NAME_MAX];
	struct fc_fleet *f;
	struct fc_err err;
	int i;

	(void)state_;
	f = fc_fleet_new(&o, &c, r, &err);
	fc_fleet_round(f, t0);
	node2_releases(bad, w, 0);
	assert_true(fc_fleet_rec_name(&rec, prefix, name, sizeof(name), &err) > 0);
	freeReplyObject(redisCommand(adm_ctx, "HSET %s R 30", name));
	node2_releases(good, w, 4);
	refused_key(81, bad, w, 2);
	refused_key(82, good, w, 2);
	for (i = 1; i <= 5; i++)
		fc_fleet_round(f, t0 + (uint64_t)i * 100000000ULL);
	assert_int_equal(fc_fleet_status_of(f)->mode, FC_FLEET_MODE_FLEET);
	assert_int_equal(fc_fleet_status_of(f)->counters.degraded, 0);
	assert_true(fc_fleet_status_of(f)->counters.reply_errors >= 1);
	assert_int_equal(FC_FLEET_WORD_CREDIT(entry(82)->state[0]), 2);
	assert_int_equal(FC_FLEET_WORD_CREDIT(entry(81)->state[0]), 0);
	fc_fleet_free(f);
	fc_redis_close(r);
}

/* A record's g written by a Redis client (every node's credentials can):
 * the engine applies no more than this node could rightly be granted. Node
 * 1 (share 5 of N 10) was granted 1; g1 then written as 1000000 (G and R
 * kept within N* of each other, so that the reply checks): its allotment
 * would pass N*: refused (reply_errors), nothing applied. Then g1 5 (share
 * + g 10: within N*) while it asked for 2 at most: refused too. */
static void test_hostile_grant(void **state_)
{
	struct fc_fleet_cfg c = cfg();
	struct fc_fleet_opts o = opts();
	uint64_t t0 = window_start(), w = t0 / UNIT_NS, tag = TAG + 140, errors;
	struct fc_fleet_rec rec = { .id = 7, .epoch = 5, .kid = tag, .kind = 'w', .unit = 60, .w = w };
	struct fc_redis *r = client(2000);
	struct fc_shm_key *k = entry(140);
	char name[FC_FLEET_NAME_MAX];
	struct fc_fleet *f;
	struct fc_err err;
	int i, j;

	(void)state_;
	f = fc_fleet_new(&o, &c, r, &err);
	assert_non_null(f);
	fc_fleet_round(f, t0);
	node2_releases(tag, w, 4);
	refused_key(140, tag, w, 1);
	for (i = 1; i <= 3 && !FC_FLEET_WORD_CREDIT(k->state[0]); i++)
		fc_fleet_round(f, t0 + (uint64_t)i * 100000000ULL);
	assert_int_equal(FC_FLEET_WORD_CREDIT(k->state[0]), 1);
	assert_int_equal(hget(tag, w, "g1"), 1);
	assert_true(fc_fleet_rec_name(&rec, prefix, name, sizeof(name), &err) > 0);
	for (j = 0; j < 2; j++) {
		freeReplyObject(redisCommand(adm_ctx,
					     j ? "HSET %s g1 5 G 9 R 4" : "HSET %s g1 1000000 G 1000000 R 999990",
					     name));
		k->state[0] = FC_FLEET_WORD(w, 0); /* spent, refused again: it asks */
		k->state[1] = FC_FLEET_WORD(w, FC_FLEET_WANTED);
		k->denied += 1;
		errors = fc_fleet_status_of(f)->counters.reply_errors;
		for (i = 0; i < 3; i++)
			fc_fleet_round(f, t0 + (uint64_t)(4 + 3 * j + i) * 100000000ULL);
		printf("# g1 %lld written: credit %llu, reply_errors +%llu\n", hget(tag, w, "g1"),
		       (unsigned long long)FC_FLEET_WORD_CREDIT(k->state[0]),
		       (unsigned long long)(fc_fleet_status_of(f)->counters.reply_errors - errors));
		assert_int_equal(FC_FLEET_WORD_CREDIT(k->state[0]), 0);
		assert_true(fc_fleet_status_of(f)->counters.reply_errors > errors);
		assert_int_equal(fc_fleet_status_of(f)->mode, FC_FLEET_MODE_FLEET);
	}
	fc_fleet_free(f);
	fc_redis_close(r);
}

/* N raised mid-window (10 -> 20/m, the epoch kept, as policy edit --rate
 * does; the publish's new split is from this window): the window's split
 * stays (record n 10, shares 5 and 5, its digest), Redis's pool becomes
 * N' - allotted, grantable at once: node 2 released 4 of its 5, node 1
 * spent its 5 and asks for 15: granted 14, every node's allotment then
 * N' = 20, and no more. Lowered to 8: nothing more granted, and the
 * replies (free -12) still check. */
static void test_n_changed_mid_window(void **state_)
{
	struct fc_fleet_cfg c = cfg();
	struct fc_fleet_opts o = opts();
	uint64_t t0 = window_start(), w = t0 / UNIT_NS, tag = TAG + 55;
	struct fc_redis *r = client(2000);
	struct fc_shm_key *k = entry(18);
	struct fc_fleet *f;
	struct fc_err err;
	int i;

	(void)state_;
	f = fc_fleet_new(&o, &c, r, &err);
	fc_fleet_round(f, t0);
	node2_releases(tag, w, 4); /* the record: n 10, s1 5, s2 5 */
	pols[0].n = pols[0].burst = 20;
	fc_fleet_split_make(members, 2, 0, 20, w, UNIT_NS, 0, &pols[0].split[0]);
	assert_int_equal(fc_fleet_update(f, NULL, &c, &err), 0);
	refused_key(18, tag, w, 15);
	for (i = 1; i <= 3 && FC_FLEET_WORD_CREDIT(k->state[0]) < 14; i++)
		fc_fleet_round(f, t0 + (uint64_t)i * 100000000ULL);
	printf("# after the raise: credit %llu, g1 %lld, n %lld, G %lld, R %lld\n",
	       (unsigned long long)FC_FLEET_WORD_CREDIT(k->state[0]), hget(tag, w, "g1"), hget(tag, w, "n"),
	       hget(tag, w, "G"), hget(tag, w, "R"));
	assert_int_equal(FC_FLEET_WORD_CREDIT(k->state[0]), 14);
	assert_int_equal(hget(tag, w, "n"), 10);
	assert_int_equal(hget(tag, w, "g1"), 14);
	/* allotted: n + G - R = 10 + 14 - 4 = N' */
	assert_int_equal(hget(tag, w, "n") + hget(tag, w, "G") - hget(tag, w, "R"), 20);
	/* more asked: nothing is free */
	k->denied += 5;
	k->state[1] = FC_FLEET_WORD(w, FC_FLEET_WANTED);
	for (i = 4; i <= 5; i++)
		fc_fleet_round(f, t0 + (uint64_t)i * 100000000ULL);
	assert_int_equal(hget(tag, w, "g1"), 14);
	/* lowered to 8: nothing more, and no reply refused */
	pols[0].n = pols[0].burst = 8;
	fc_fleet_split_make(members, 2, 0, 8, w, UNIT_NS, 0, &pols[0].split[0]);
	assert_int_equal(fc_fleet_update(f, NULL, &c, &err), 0);
	k->denied += 5;
	for (i = 6; i <= 8; i++)
		fc_fleet_round(f, t0 + (uint64_t)i * 100000000ULL);
	assert_int_equal(hget(tag, w, "g1"), 14);
	assert_int_equal(hget(tag, w, "n"), 10);
	assert_int_equal(fc_fleet_status_of(f)->counters.reply_errors, 0);
	assert_int_equal(fc_fleet_status_of(f)->mode, FC_FLEET_MODE_FLEET);
	fc_fleet_free(f);
	fc_redis_close(r);
}

/* stderr into a file while a case runs rounds: what the engine logged. */
static int log_saved = -1;
static char log_path[160];

static void log_capture(void)
{
	int fd;

	snprintf(log_path, sizeof(log_path), "%s/log", dir);
	fflush(stderr);
	log_saved = dup(2);
	fd = open(log_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	assert_true(fd >= 0 && log_saved >= 0);
	dup2(fd, 2);
	close(fd);
}

/* Ends the capture: how many lines logged hold what. */
static int log_count(const char *what)
{
	char line[512];
	FILE *in;
	int n = 0;

	fflush(stderr);
	dup2(log_saved, 2);
	close(log_saved);
	in = fopen(log_path, "r");
	assert_non_null(in);
	while (fgets(line, sizeof(line), in)) {
		fputs(line, stderr);
		n += strstr(line, what) != NULL;
	}
	fclose(in);
	return n;
}

/* The agent started in a window whose N changed (10 to 20) before: the
 * workers hold the window's kept split (5 of 10), the store's is 10 of 20.
 * The engine keeps what the workers hold (its cfg's held, from the live
 * block) and finds its q, 10: its calls are of the record's split, granted
 * as before the restart (test_n_changed_mid_window), nothing logged (was:
 * each call refused as of another split, "node set differs", no grant). */
static void test_kept_split_after_restart(void **state_)
{
	struct fc_fleet_cfg c = cfg(), none = { 0 };
	struct fc_fleet_opts o = opts();
	uint64_t t0 = window_start(), w = t0 / UNIT_NS, tag = TAG + 57;
	struct fc_redis *r = client(2000);
	struct fc_shm_key *k = entry(19);
	struct fc_fleet *f;
	struct fc_err err;
	int i;

	(void)state_;
	node2_releases(tag, w, 4); /* the record: n 10, s1 5, s2 5 */
	memcpy(pols[0].held, pols[0].split, sizeof(pols[0].held));
	pols[0].has_held = true;
	pols[0].n = pols[0].burst = 20;
	fc_fleet_split_make(members, 2, 0, 20, w, UNIT_NS, 0, &pols[0].split[0]);
	log_capture();
	f = fc_fleet_new(&o, &none, r, &err); /* as the agent starts it */
	assert_int_equal(fc_fleet_update(f, NULL, &c, &err), 0);
	refused_key(19, tag, w, 15);
	for (i = 0; i <= 3 && FC_FLEET_WORD_CREDIT(k->state[0]) < 14; i++)
		fc_fleet_round(f, t0 + (uint64_t)i * 100000000ULL);
	printf("# restarted: credit %llu, g1 %lld, n %lld\n", (unsigned long long)FC_FLEET_WORD_CREDIT(k->state[0]),
	       hget(tag, w, "g1"), hget(tag, w, "n"));
	assert_int_equal(log_count("node set differs"), 0);
	assert_int_equal(FC_FLEET_WORD_CREDIT(k->state[0]), 14);
	assert_int_equal(hget(tag, w, "g1"), 14);
	assert_int_equal(hget(tag, w, "n") + hget(tag, w, "G") - hget(tag, w, "R"), 20);
	assert_int_equal(fc_fleet_status_of(f)->counters.reply_errors, 0);
	fc_fleet_free(f);
	fc_redis_close(r);
}

/* A state-file writer gives every entry of the table a new tag each round,
 * refused (demand) and rung: the keys whose entries are no longer theirs
 * and hold nothing are dropped, so the agent tracks one table's worth, not
 * a table more each round (it had 200 tables after 200 rounds, its round
 * time growing with them). Round times are printed. */
static void test_tracked_keys_bounded(void **state_)
{
	struct fc_fleet_cfg c = cfg();
	struct fc_fleet_opts o = opts();
	uint64_t t0 = window_start(), w = t0 / UNIT_NS, tag = TAG + 100000;
	struct fc_redis *r = client(2000);
	struct fc_fleet *f;
	struct fc_err err;
	struct timespec a, b;
	uint32_t i, round;

	(void)state_;
	f = fc_fleet_new(&o, &c, r, &err);
	fc_fleet_round(f, t0);
	for (round = 1; round <= 100; round++) {
		for (i = 0; i < NKEYS; i++) {
			struct fc_shm_key *k = entry(i);

			k->slot = 3;
			k->epoch = 5;
			k->state[0] = FC_FLEET_WORD(w, 0);
			k->state[1] = FC_FLEET_WORD(w, FC_FLEET_WANTED);
			__atomic_store_n(&k->tag, tag++, __ATOMIC_RELEASE);
			push(k->tag, i, 3, 5, w);
		}
		clock_gettime(CLOCK_MONOTONIC, &a);
		fc_fleet_round(f, t0 + (uint64_t)round * 1000000ULL);
		clock_gettime(CLOCK_MONOTONIC, &b);
		if (round % 25 == 0)
			printf("# round %u: %zu keys tracked, the round took %.1f ms\n", round, fc_fleet_status_of(f)->keys,
			       (double)(b.tv_sec - a.tv_sec) * 1e3 + (double)(b.tv_nsec - a.tv_nsec) / 1e6);
	}
	/* this round's table, and policy 8's fixed key */
	assert_int_equal(fc_fleet_status_of(f)->keys, NKEYS + 1);
	assert_int_equal(fc_fleet_status_of(f)->policies[0].tracked, NKEYS);
	fc_fleet_free(f);
	fc_redis_close(r);
}

/* At most 2 x --fleet-max-keys keys are tracked (a writer of the state
 * file can ring any number): past that a key is counted, not tracked, and
 * the cap is logged once for rounds that meet it one after another. */
static void test_tracked_keys_cap(void **state_)
{
	struct fc_fleet_cfg c = cfg();
	struct fc_fleet_opts o = opts();
	uint64_t t0 = window_start(), w = t0 / UNIT_NS;
	struct fc_redis *r = client(2000);
	struct fc_fleet *f;
	struct fc_err err;
	uint32_t i;

	(void)state_;
	o.max_keys = 2;
	f = fc_fleet_new(&o, &c, r, &err);
	fc_fleet_round(f, t0); /* policy 8's fixed key: tracked, whatever the cap */
	log_capture();
	for (i = 0; i < 10; i++)
		refused_key(300 + i, TAG + 300 + i, w, 1);
	fc_fleet_round(f, t0 + 100000000);
	for (i = 10; i < 15; i++)
		refused_key(300 + i, TAG + 300 + i, w, 1);
	fc_fleet_round(f, t0 + 200000000);
	assert_int_equal(log_count("keys tracked, the most"), 1);
	assert_int_equal(fc_fleet_status_of(f)->keys, 4);
	assert_int_equal(fc_fleet_status_of(f)->counters.untracked, 7 + 5);
	fc_fleet_free(f);
	fc_redis_close(r);
}

/* The ring's head moved back each round (a writer of the state file): the
 * key table is scanned each time, and "lost entries" is logged once for the
 * episode, not every round. */
static void test_ring_lost_logged_once(void **state_)
{
	struct fc_fleet_cfg c = cfg();
	struct fc_fleet_opts o = opts();
	uint64_t t0 = window_start(), w = t0 / UNIT_NS;
	struct fc_redis *r = client(2000);
	struct fc_fleet *f;
	struct fc_err err;
	int i;

	(void)state_;
	f = fc_fleet_new(&o, &c, r, &err);
	refused_key(90, TAG + 90, w, 1);
	fc_fleet_round(f, t0);
	log_capture();
	for (i = 1; i <= 4; i++) {
		ring()->head -= 1;
		fc_fleet_round(f, t0 + (uint64_t)i * 100000000ULL);
	}
	assert_int_equal(log_count("the fleet ring lost entries"), 1);
	assert_int_equal(fc_fleet_status_of(f)->policies[0].tracked, 1); /* found by the scans */
	fc_fleet_free(f);
	fc_redis_close(r);
}

/* The record's TTL covers two nodes each up to --fleet-max-skew off, in
 * opposite directions: one 9 s ahead (max 10 s) makes it; it must outlive
 * the window's end as a node 10 s behind sees it, plus that node's last
 * interval. (Once the TTL had only one skew in it: it ended ~9 s early.) */
static void test_record_ttl_skew(void **state_)
{
	struct fc_fleet_cfg c = cfg();
	struct fc_fleet_opts o = opts();
	uint64_t t0 = window_start(), w = t0 / UNIT_NS, tag = TAG + 610, now, end = (w + 1) * UNIT_NS;
	struct fc_fleet_rec rec = { .id = 7, .epoch = 5, .kid = tag, .kind = 'w', .unit = 60, .w = w };
	struct fc_redis *r = client(2000);
	char name[FC_FLEET_NAME_MAX];
	struct fc_fleet *f;
	struct fc_err err;
	redisReply *rep;
	long long need;

	(void)state_;
	o.max_skew_ms = 10000;
	o.clock_ns = 9000000000LL;
	f = fc_fleet_new(&o, &c, r, &err);
	fc_fleet_round(f, t0);
	refused_key(61, tag, w, 1);
	now = t0 + 100000000ULL; /* true time; the node's clock is 9 s ahead of it */
	fc_fleet_round(f, now);
	assert_true(fc_fleet_rec_name(&rec, prefix, name, sizeof(name), &err) > 0);
	rep = redisCommand(adm_ctx, "PTTL %s", name);
	assert_int_equal(rep->type, REDIS_REPLY_INTEGER);
	need = (long long)((end - now) / 1000000) + 10000 + 100;
	printf("# PTTL %lld ms, a node 10 s behind needs %lld\n", rep->integer, need);
	/* less the time since the call (well under a second here) */
	assert_true(rep->integer >= need - 500);
	freeReplyObject(rep);
	fc_fleet_free(f);
	fc_redis_close(r);
}

/* The status file's counter of reply errors. */
static long long file_reply_errors(void)
{
	char path[160];
	json_t *doc;
	long long n;

	snprintf(path, sizeof(path), "%s.fleet.json", shm_path);
	doc = json_load_file(path, 0, NULL);
	assert_non_null(doc);
	n = json_integer_value(json_object_get(json_object_get(doc, "counters"), "reply_errors"));
	json_decref(doc);
	return n;
}

/* Replies that do not check count as reply errors (the status file, hence
 * freqctl_fleet_reply_errors_total): in the heartbeat's, a node's value
 * that is not one (left out), and a reply the client refuses (a value
 * longer than a heartbeat's: the round fails). */
static void test_reply_errors_counted(void **state_)
{
	struct fc_fleet_cfg c = cfg();
	struct fc_fleet_opts o = opts();
	struct fc_redis *r = client(2000);
	struct timespec ts;
	struct fc_fleet *f;
	struct fc_err err;
	char key[64], *big = malloc(FC_FLEET_BEAT_VAL_MAX + 2);
	uint64_t now;

	(void)state_;
	clock_gettime(CLOCK_REALTIME, &ts);
	now = (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
	snprintf(key, sizeof(key), "%s{nodes}", prefix);
	f = fc_fleet_new(&o, &c, r, &err);
	assert_non_null(f);
	fc_fleet_round(f, now);
	assert_int_equal(fc_fleet_status_of(f)->counters.reply_errors, 0);
	freeReplyObject(redisCommand(adm_ctx, "HSET %s evil %s", key, "not json"));
	fc_fleet_round(f, now + 1100000000); /* the next heartbeat */
	assert_int_equal(fc_fleet_status_of(f)->counters.reply_errors, 1);
	assert_int_equal(file_reply_errors(), 1);
	memset(big, 'x', FC_FLEET_BEAT_VAL_MAX + 1);
	big[FC_FLEET_BEAT_VAL_MAX + 1] = 0;
	freeReplyObject(redisCommand(adm_ctx, "HSET %s evil %s", key, big));
	fc_fleet_round(f, now + 2200000000);
	assert_int_equal(fc_fleet_status_of(f)->counters.reply_errors, 2);
	assert_int_equal(file_reply_errors(), 2);
	freeReplyObject(redisCommand(adm_ctx, "HDEL %s evil", key));
	free(big);
	fc_fleet_free(f);
	fc_redis_close(r);
}

/* The config file's header as a publish leaves it: fleet_fresh_ns, when
 * this node's state was made anew. */
static void header_write(uint64_t fresh_ns)
{
	struct fc_shm_header h = { .magic = FC_SHM_MAGIC, .version = FC_SHM_VERSION, .fleet_fresh_ns = fresh_ns };
	int fd = open(shm_path, O_RDWR | O_CREAT, 0640);

	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, &h, sizeof(h), 0), sizeof(h));
	close(fd);
}

/* The state file made anew as a publish makes it (another file renamed
 * over its path): the test's workers use the new one from here on. */
static void state_remake(void)
{
	char tmp[160];
	void *m;
	int fd;

	snprintf(tmp, sizeof(tmp), "%s.new", state_path);
	fd = open(tmp, O_RDWR | O_CREAT | O_TRUNC, 0660);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, (off_t)size), 0);
	m = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	assert_true(m != MAP_FAILED);
	assert_int_equal(rename(tmp, state_path), 0);
	munmap(state, size);
	state = m;
}

/* The state file made anew mid-window while the agent runs (a key table
 * resized, the file deleted; the publish sets a new fleet_fresh_ns): its
 * workers take no share of the window, so the engine, asked by node 2 for
 * a key it never saw, releases none either: a release record of 0, made
 * in the new file. (It released its whole share from the old file.) */
static void test_fresh_state_remade(void **state_)
{
	struct fc_fleet_cfg c = cfg();
	struct fc_fleet_opts o = opts();
	uint64_t t0 = window_start(), w = t0 / UNIT_NS, tag = TAG + 900000;
	struct fc_redis *r = client(2000);
	struct fc_fleet_result res = { 0 };
	struct fc_shm_key *k;
	struct fc_fleet *f;
	struct fc_err err;
	int i;

	(void)state_;
	header_write(t0 - UNIT_NS);
	f = fc_fleet_new(&o, &c, r, &err);
	fc_fleet_round(f, t0);
	state_remake();
	header_write(t0 + 1000000);
	k = entry(fc_shm_key_place(tag, 0, NKEYS));
	for (i = 1; i <= 10 && !__atomic_load_n(&k->tag, __ATOMIC_ACQUIRE); i++) {
		res = node2_call(tag, w, 0, 0, 3);
		usleep(20000);
		fc_fleet_round(f, t0 + (uint64_t)i * 100000000ULL);
	}
	printf("# node 1 released %lld for the key; node 2 granted %" PRIu64 "\n", hget(tag, w, "r1"), res.g);
	assert_true(hget(tag, w, "r1") <= 0);
	assert_int_equal(k->tag, tag);
	assert_int_equal(k->state[0], FC_FLEET_WORD(w, 0));
	assert_int_equal(fc_fleet_status_of(f)->counters.records, 1);
	fc_fleet_free(f);
	fc_redis_close(r);
	unlink(shm_path);
}

/* A BPF_F_MMAPABLE fc_buckets of FC_POLICY_SLOTS pinned at <pin_dir>/fc_buckets
 * (the one there before unpinned), mapped here as the packet path has it. */
static struct fc_bucket *buckets_pin(size_t len)
{
	LIBBPF_OPTS(bpf_map_create_opts, mo, .map_flags = BPF_F_MMAPABLE);
	struct fc_bucket *b;
	char pin[160];
	int fd;

	snprintf(pin, sizeof(pin), "%s/fc_buckets", pin_dir);
	unlink(pin);
	fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "fc_buckets", 4, sizeof(struct fc_bucket), FC_POLICY_SLOTS, &mo);
	assert_true(fd >= 0);
	assert_int_equal(bpf_obj_pin(fd, pin), 0);
	b = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	assert_true(b != MAP_FAILED);
	close(fd);
	return b;
}

/* XDP/TC pins made anew mid-window (fc_config.fleet_fresh_ns past the
 * window's start) while the shm stays: the packet path takes no share of
 * the window, so the fixed-value policy's bucket, whose word is of the last
 * window, has nothing to release when node 2 asks. (It released its whole
 * share.) */
static void test_fresh_xdp_pins(void **state_)
{
	struct fc_fleet_cfg c = cfg();
	struct fc_fleet_opts o = opts();
	uint64_t t0 = window_start(), w = t0 / UNIT_NS;
	struct fc_config xc = { .fleet_fresh_ns = t0 + 1000000 };
	struct fc_redis *r = client(2000);
	struct fc_fleet_result res = { 0 };
	size_t len = ((size_t)FC_POLICY_SLOTS * sizeof(struct fc_bucket) + 4095) & ~(size_t)4095;
	uint32_t zero = 0;
	struct fc_bucket *b;
	struct fc_fleet *f;
	struct fc_err err;
	char pin[4200];
	int fd, i;

	(void)state_;
	if (geteuid() != 0)
		skip();
	snprintf(o.pin_dir, sizeof(o.pin_dir), "%s", pin_dir); /* removed by the teardown */
	assert_true(mkdir(o.pin_dir, 0700) == 0 || errno == EEXIST);
	snprintf(pin, sizeof(pin), "%s/fc_config", o.pin_dir);
	fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "fc_config", 4, sizeof(struct fc_config), 1, NULL);
	assert_true(fd >= 0);
	assert_int_equal(bpf_map_update_elem(fd, &zero, &xc, 0), 0);
	assert_int_equal(bpf_obj_pin(fd, pin), 0);
	close(fd);
	b = buckets_pin(len);
	b[6].state[0] = FC_FLEET_WORD(w - 1, 2); /* the last window's: none of w spent */
	c.npols = 4;
	pols[3].epoch = 18; /* a record of its own: test_xdp_fixed's may be of this window */
	f = fc_fleet_new(&o, &c, r, &err);
	fc_fleet_round(f, t0);
	for (i = 1; i <= 6; i++) {
		res = node2_call_of(10, 18, 0, w, 0, res.g, 5 - res.g);
		usleep(20000);
		fc_fleet_round(f, t0 + (uint64_t)i * 100000000ULL);
	}
	printf("# node 1 released %lld of policy 10; node 2 granted %" PRIu64 "\n", hget_of(10, 18, 0, w, "r1"), res.g);
	assert_true(hget_of(10, 18, 0, w, "r1") <= 0);
	assert_int_equal(res.g, 0);
	fc_fleet_free(f);
	fc_redis_close(r);
	munmap(b, len);
	unlink(pin); /* its fc_config: the next cases' pins have none */
}

/* The pins made anew while the agent runs (freqctl detach and attach): the
 * engine leaves the old fc_buckets, no one's now, for the new one, where
 * the packet path's demand is and where a grant goes. */
static void test_xdp_pins_remade(void **state_)
{
	struct fc_fleet_cfg c = cfg();
	struct fc_fleet_opts o = opts();
	uint64_t t0 = window_start(), w = t0 / UNIT_NS;
	size_t len = ((size_t)FC_POLICY_SLOTS * sizeof(struct fc_bucket) + 4095) & ~(size_t)4095;
	struct fc_redis *r = client(2000);
	struct fc_bucket *old, *b;
	struct fc_fleet *f;
	struct fc_err err;
	int i;

	(void)state_;
	if (geteuid() != 0)
		skip();
	snprintf(o.pin_dir, sizeof(o.pin_dir), "%s", pin_dir); /* removed by the teardown */
	assert_true(mkdir(o.pin_dir, 0700) == 0 || errno == EEXIST);
	old = buckets_pin(len);
	old[6].state[0] = FC_FLEET_WORD(w, 5);
	c.npols = 4;
	pols[3].epoch = 28; /* a record of its own */
	f = fc_fleet_new(&o, &c, r, &err);
	fc_fleet_round(f, t0); /* maps the old fc_buckets */
	b = buckets_pin(len);
	b[6].state[0] = FC_FLEET_WORD(w, 0); /* spent */
	b[6].state[1] = FC_FLEET_WORD(w, FC_FLEET_WANTED);
	node2_call_of(10, 28, 0, w, 4, 0, 0); /* node 2 releases 4 */
	for (i = 1; i <= 4 && !FC_FLEET_WORD_CREDIT(b[6].state[0]); i++)
		fc_fleet_round(f, t0 + (uint64_t)i * 100000000ULL);
	printf("# the new fc_buckets' credit %" PRIu64 ", the old one's %" PRIu64 "\n",
	       (uint64_t)FC_FLEET_WORD_CREDIT(b[6].state[0]), (uint64_t)FC_FLEET_WORD_CREDIT(old[6].state[0]));
	assert_int_equal(FC_FLEET_WORD_CREDIT(b[6].state[0]), 1); /* no fc_pstats pinned: a want of 1 a round */
	assert_int_equal(b[6].state[1], 0);
	fc_fleet_free(f);
	fc_redis_close(r);
	munmap(old, len);
	munmap(b, len);
}

/* A gcra policy's pool asked for by anyone who can PUBLISH, for keys this
 * node never saw, past the cap of tracked keys (2 x --fleet-max-keys): no
 * entry is made for a key that is not tracked (its donated tokens would
 * leave the bucket, never told). */
static void test_gcra_records_capped(void **state_)
{
	struct fc_fleet_policy gp = { .id = 11,
				      .epoch = 9,
				      .slot = 9,
				      .algo = FC_ALGO_FLEET_GCRA,
				      .layer = FC_LAYER_HTTP,
				      .keyed = true,
				      .n = 600,
				      .burst = 8,
				      .unit_ns = UNIT_NS,
				      .lease_ns = FC_FLEET_LEASE_NS_DEFAULT };
	struct fc_fleet_cfg c = { .node_no = 1, .pols = &gp, .npols = 1, .sets = sets, .nsets = 1 };
	struct fc_fleet_opts o = opts();
	struct fc_redis *r = client(2000);
	char name[FC_FLEET_NAME_MAX], chan[64];
	uint64_t lw, now;
	struct fc_fleet *f;
	struct fc_err err;
	uint32_t made = 0, i, round;

	(void)state_;
	fc_fleet_split_make(members, 2, 0, 8, 0, UNIT_NS, 600, &gp.split[0]);
	gp.split[1] = (struct fc_fleet_split){ .from = FC_FLEET_NEVER };
	o.max_keys = 2; /* records: 2 a round; tracked: 4 */
	snprintf(chan, sizeof(chan), "%sdemand", prefix);
	f = fc_fleet_new(&o, &c, r, &err);
	now = (uint64_t)time(NULL) * 1000000000ULL;
	while ((uint64_t)time(NULL) * 1000000000ULL == now) /* a lease window's start: the case fits in it */
		usleep(10000);
	lw = ((uint64_t)time(NULL) * 1000000000ULL) / FC_FLEET_LEASE_NS_DEFAULT;
	fc_fleet_round(f, lw * FC_FLEET_LEASE_NS_DEFAULT); /* maps the file, subscribes */
	for (round = 1; round <= 4; round++) {
		for (i = 0; i < 3; i++) {
			struct fc_fleet_rec rec = { .id = 11,
						    .epoch = 9,
						    .kid = TAG + 800000 + round * 10 + i,
						    .kind = 'l',
						    .unit = FC_FLEET_LEASE_NS_DEFAULT / 1000000,
						    .w = lw };
			redisReply *rr;

			assert_true(fc_fleet_rec_name(&rec, prefix, name, sizeof(name) - 2, &err) > 0);
			strcat(name, " 2"); /* node 2 asks */
			rr = redisCommand(adm_ctx, "PUBLISH %s %s", chan, name);
			assert_true(rr && rr->type == REDIS_REPLY_INTEGER);
			freeReplyObject(rr);
		}
		usleep(20000); /* the messages on their way */
		fc_fleet_round(f, lw * FC_FLEET_LEASE_NS_DEFAULT + (uint64_t)round * 100000000ULL);
	}
	assert_int_equal(((uint64_t)time(NULL) * 1000000000ULL) / FC_FLEET_LEASE_NS_DEFAULT, lw);
	for (i = 0; i < NKEYS; i++)
		made += entry(i)->tag >= TAG + 800000 && entry(i)->tag < TAG + 800100;
	printf("# entries made %u, keys tracked %zu, untracked %" PRIu64 "\n", made, fc_fleet_status_of(f)->keys,
	       (uint64_t)fc_fleet_status_of(f)->counters.untracked);
	assert_int_equal(fc_fleet_status_of(f)->keys, 4);
	assert_int_equal(made, 4);
	assert_true(fc_fleet_status_of(f)->counters.untracked >= 1);
	fc_fleet_free(f);
	fc_redis_close(r);
}

static int setup_one(void **state_)
{
	char path[160];

	(void)state_;
	snprintf(path, sizeof(path), "%s.fleet.json", shm_path);
	unlink(path); /* each case's own */
	unlink(shm_path); /* no fresh time, whatever a case that wrote one (header_write) did */
	memset(state, 0, FC_STATE_KEYS_OFF + (size_t)NKEYS * sizeof(struct fc_shm_key));
	return 0;
}

static int setup(void **state_)
{
	const char *a = getenv("FC_FLEET_IT_REDIS");
	int fd;

	(void)state_;
	if (!a) {
		fprintf(stderr, "fc_fleet_engine_it: FC_FLEET_IT_REDIS is not set: run "
				"tests/integration/test_fleet_script.sh\n");
		exit(2);
	}
	snprintf(addr, sizeof(addr), "%s", a);
	if (getenv("FC_FLEET_IT_PREFIX")) /* the ACL user's keys */
		snprintf(prefix, sizeof(prefix), "%s", getenv("FC_FLEET_IT_PREFIX"));
	else
		snprintf(prefix, sizeof(prefix), "fe%d:", (int)getpid());
	snprintf(pin_dir, sizeof(pin_dir), "/sys/fs/bpf/fc-fleet-engine-%d", (int)getpid());
	if (fc_test_dir_make(dir, sizeof(dir), "fleet-engine") < 0)
		return -1;
	snprintf(state_path, sizeof(state_path), "%s/shm.state", dir);
	snprintf(shm_path, sizeof(shm_path), "%s/shm", dir);
	size = FC_STATE_SIZE_FOR(NKEYS);
	fd = open(state_path, O_RDWR | O_CREAT, 0660);
	if (fd < 0 || ftruncate(fd, (off_t)size) < 0)
		return -1;
	state = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (state == MAP_FAILED)
		return -1;
	adm_ctx = redisConnectWithTimeout("127.0.0.1", atoi(strchr(addr, ':') + 1), (struct timeval){ .tv_sec = 3 });
	return adm_ctx && !adm_ctx->err ? 0 : -1;
}

static int teardown(void **state_)
{
	char pin[128];

	snprintf(pin, sizeof(pin), "%s/fc_buckets", pin_dir);
	unlink(pin);
	snprintf(pin, sizeof(pin), "%s/fc_config", pin_dir);
	unlink(pin);
	rmdir(pin_dir);
	(void)state_;
	munmap(state, size);
	redisFree(adm_ctx);
	return fc_test_dir_remove(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_ring_key_granted, setup_one),
		cmocka_unit_test_setup(test_paced_lease, setup_one),
		cmocka_unit_test_setup(test_never_short_no_script, setup_one),
		cmocka_unit_test_setup(test_hostile_ring, setup_one),
		cmocka_unit_test_setup(test_fixed_slot, setup_one),
		cmocka_unit_test_setup(test_fixed_release_unused, setup_one),
		cmocka_unit_test_setup(test_release_on_demand, setup_one),
		cmocka_unit_test_setup(test_release_record, setup_one),
		cmocka_unit_test_setup(test_allot_below_released, setup_one),
		cmocka_unit_test_setup(test_sliding, setup_one),
		cmocka_unit_test_setup(test_xdp_fixed, setup_one),
		cmocka_unit_test_setup(test_backoff, setup_one),
		cmocka_unit_test_setup(test_max_keys, setup_one),
		cmocka_unit_test_setup(test_reassert_after_reconnect, setup_one),
		cmocka_unit_test_setup(test_degraded_and_back, setup_one),
		cmocka_unit_test_setup(test_truncated_state, setup_one),
		cmocka_unit_test_setup(test_heartbeat_and_clock, setup_one),
		cmocka_unit_test_setup(test_reply_errors_counted, setup_one),
		cmocka_unit_test_setup(test_thread, setup_one),
		cmocka_unit_test_setup(test_thread_early_release, setup_one),
		cmocka_unit_test_setup(test_record_ttl_skew, setup_one),
		cmocka_unit_test_setup(test_inflated_release, setup_one),
		cmocka_unit_test_setup(test_bad_record_key_only, setup_one),
		cmocka_unit_test_setup(test_tracked_keys_bounded, setup_one),
		cmocka_unit_test_setup(test_tracked_keys_cap, setup_one),
		cmocka_unit_test_setup(test_ring_lost_logged_once, setup_one),
		cmocka_unit_test_setup(test_n_changed_mid_window, setup_one),
		cmocka_unit_test_setup(test_kept_split_after_restart, setup_one),
		cmocka_unit_test_setup(test_hostile_grant, setup_one),
		cmocka_unit_test_setup(test_fresh_state_remade, setup_one),
		cmocka_unit_test_setup(test_fresh_xdp_pins, setup_one),
		cmocka_unit_test_setup(test_xdp_pins_remade, setup_one),
		cmocka_unit_test_setup(test_gcra_records_capped, setup_one),
	};

	return cmocka_run_group_tests_name("the lease engine's round against a real redis-server", tests, setup,
					   teardown);
}
