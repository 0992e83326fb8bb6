// SPDX-License-Identifier: BSD-2-Clause
/*
 * GCRA fleet lending (design §8.3), four nodes' lease engines in one
 * process against a real redis-server and its replica (started by
 * tests/integration/test_fleet_script.sh: FC_FLEET_IT_REDIS). Each node has
 * its own state file; its "workers" are this test, charging a key's words
 * with the workers' own functions (maps/fc_fleet.h: fc_fleet_gcra_try, the
 * demand word and the fleet ring, as ngx_bridge/fc_l7.c does). Rounds run on
 * the real clock (lease windows of 1 s, as the agent's default), and a node
 * hears another's demand on Redis's channel.
 *
 * What it holds to: a key refused on node A and idle (or never seen) on B,
 * C and D: within two of A's rounds A's lease credit rises and A admits more
 * than its own bucket; the never-seen nodes' entries hold their TAT advanced
 * by what they donated, so those tokens are never spent or donated again;
 * and a key burst on A for 3 s, its others' tokens lent, then burst on them
 * too, admits across the four at most R (D + lease) + B in the span D it
 * took, counted exactly.
 */
#include <fcntl.h>
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
#include <cmocka.h>

#include "fc_fleet_engine.h"
#include "fc_shm.h"
#include "fc_test_dir.h"

#define NODES 4
#define NKEYS 1024u
#define UNIT_NS (60ULL * 1000000000ULL)
#define LEASE_NS FC_FLEET_LEASE_NS_DEFAULT
#define RATE 600 /* per minute: 10 a second for the fleet, T_i 400 ms on each of four */
#define BURST 8  /* B_i 2 each */
#define SLOT 7
#define EPOCH 9
#define FIXED_SLOT 8 /* policy 13, arg:f=x: one bucket, its slot's */
#define FIXED_EPOCH 10
#define FIXED_U 0x9e3779b9u

static char dir[64], addr[64], prefix[32], paths[NODES][128];
static void *states[NODES];
static uint64_t size;

static struct fc_fleet_member members[NODES] = { { .no = 1, .weight = 250000 },
						 { .no = 2, .weight = 250000 },
						 { .no = 3, .weight = 250000 },
						 { .no = 4, .weight = 250000 } };
static struct fc_fleet_set sets[1] = { { .at_ms = 0, .m = members, .n = NODES, .digest = 0x6c7a } };
static struct fc_fleet_policy pols[NODES][2];

/* uid=* --algo gcra --rate 600/m --burst 8 --fleet (policy 12), and the
 * same for arg:f=x (policy 13, a fixed value), as node no's publish hands
 * them to its agent. */
static struct fc_fleet_cfg cfg_of(uint32_t no)
{
	struct fc_fleet_policy *p = pols[no - 1];
	int i;

	for (i = 0; i < 2; i++) {
		p[i] = (struct fc_fleet_policy){ .id = i ? 13 : 12,
						 .epoch = i ? FIXED_EPOCH : EPOCH,
						 .slot = i ? FIXED_SLOT : SLOT,
						 .algo = FC_ALGO_FLEET_GCRA,
						 .layer = FC_LAYER_HTTP,
						 .keyed = !i,
						 .n = RATE,
						 .burst = BURST,
						 .unit_ns = UNIT_NS,
						 .lease_ns = LEASE_NS,
						 .fixed_u = i ? FIXED_U : 0 };
		fc_fleet_split_make(members, NODES, no - 1, BURST, 0, UNIT_NS, RATE, &p[i].split[0]);
		p[i].split[1] = (struct fc_fleet_split){ .from = FC_FLEET_NEVER };
	}
	return (struct fc_fleet_cfg){ .node_no = no, .pols = p, .npols = 2, .sets = sets, .nsets = 1 };
}

static struct fc_redis *client(void)
{
	struct fc_redis_conf conf;
	struct fc_redis *r;
	struct fc_err err;
	char url[96];

	snprintf(url, sizeof(url), "redis://%s", addr);
	fc_redis_conf_init(&conf);
	conf.timeout_ms = 2000;
	if (fc_redis_conf_urls(&conf, url, &err) || fc_redis_conf_prefix(&conf, prefix, &err))
		fail_msg("%s", err.msg);
	r = fc_redis_open(&conf, &err);
	if (!r)
		fail_msg("%s", err.msg);
	return r;
}

static struct fc_fleet *engines[NODES];
static struct fc_redis *clients[NODES];

static void engines_start(void)
{
	struct fc_err err;
	int i;

	for (i = 0; i < NODES; i++) {
		struct fc_fleet_opts o = { .interval_ms = 100, .max_skew_ms = 500 };
		struct fc_fleet_cfg c = cfg_of((uint32_t)i + 1);

		snprintf(o.node, sizeof(o.node), "n%d", i + 1);
		snprintf(o.state_path, sizeof(o.state_path), "%s", paths[i]);
		clients[i] = client();
		engines[i] = fc_fleet_new(&o, &c, clients[i], &err);
		if (!engines[i])
			fail_msg("%s", err.msg);
	}
}

static void engines_stop(void)
{
	int i;

	for (i = 0; i < NODES; i++) {
		fc_fleet_free(engines[i]);
		fc_redis_close(clients[i]);
	}
}

static uint64_t utc_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* A round of node i's engine, now. */
static void round_of(int i)
{
	fc_fleet_round(engines[i], utc_ns());
}

/* Sleeps until 20 ms into the next lease window, in the first 40 s of a
 * minute (a key's tau_i is of the minute it is made in; one minute here). */
static void lease_start(void)
{
	uint64_t now = utc_ns();

	if (now % UNIT_NS > 40 * 1000000000ULL)
		usleep((useconds_t)((UNIT_NS - now % UNIT_NS) / 1000));
	now = utc_ns();
	usleep((useconds_t)((LEASE_NS - now % LEASE_NS) / 1000 + 20000));
}

static struct fc_shm_key *keys_of(int node)
{
	return (struct fc_shm_key *)((char *)states[node] + FC_STATE_KEYS_OFF);
}

/* Node i's entry of tag: where its agent put it, else made where a worker
 * makes it, as fc_l7.c's fc_key_fresh_gcra does (its state is not new:
 * a full bucket). */
static struct fc_shm_key *entry_of(int node, uint64_t tag)
{
	const struct fc_fleet_split *sp = &pols[node][0].split[0];
	struct fc_shm_key *k = keys_of(node);
	uint32_t i;

	for (i = 0; i < NKEYS; i++)
		if (k[i].tag == tag)
			return &k[i];
	k += fc_shm_key_place(tag, 0, NKEYS);
	memset(k, 0, sizeof(*k));
	k->slot = SLOT;
	k->epoch = EPOCH;
	k->state[3] = fc_fleet_share(sp, fc_fleet_point(tag)) * sp->interval_ns;
	__atomic_store_n(&k->tag, tag, __ATOMIC_RELEASE);
	return k;
}

/* One request of tag on node i's workers now: 1 admitted, 0 refused (the
 * demand word set for the lease window, the key on the fleet ring at its
 * first refusal of the window). *lease: the lease credit paid for it. */
static int request(int node, uint64_t tag, int *lease)
{
	struct fc_shm_key *k = entry_of(node, tag);
	const struct fc_fleet_split *sp = &pols[node][0].split[0];
	struct fc_shm_fleet_ring *rg = (struct fc_shm_fleet_ring *)((char *)states[node] + FC_STATE_FLEET_OFF);
	uint64_t now = utc_ns(), lw = now / LEASE_NS, idx;
	__u64 prev, next;
	struct fc_shm_fleet_entry *e;

	if (fc_fleet_gcra_try(k->state, sp->interval_ns, k->state[3], lw, now, 1, &prev, &next, lease)) {
		__atomic_fetch_add(&k->passed, 1, __ATOMIC_RELAXED);
		return 1;
	}
	__atomic_fetch_add(&k->denied, 1, __ATOMIC_RELAXED);
	if (fc_fleet_demand(&k->state[1], lw)) {
		idx = rg->head++;
		e = &rg->e[idx & (FC_SHM_FLEET_RING_SIZE - 1)];
		*e = (struct fc_shm_fleet_entry){ .tag = tag,
						  .index = (uint32_t)(k - keys_of(node)),
						  .slot = SLOT,
						  .epoch = EPOCH,
						  .window = (uint32_t)FC_FLEET_LABEL(lw) };
		__atomic_store_n(&e->seq, idx + 1, __ATOMIC_RELEASE);
	}
	return 0;
}

/* Requests of tag on node i until one is refused: how many passed. */
static int burst(int node, uint64_t tag, int *lent)
{
	int n = 0, lease = 0;

	while (request(node, tag, &lease)) {
		n++;
		*lent += lease;
	}
	return n;
}

/* A key refused on node 1 (A), never seen on 2-4: A asks its lease pool,
 * the script publishes the demand, the others (their next round, where
 * they hear it) make the key's entry with their tokens donated, and A's
 * next round is granted them: A's lease credit rises within two of its
 * rounds, and A admits more than its own bucket's B_i. */
static void test_refused_here_idle_there(void **state_)
{
	uint64_t tag = 0x5eed0000cafe0001ULL, lw;
	int i, passed, lent = 0, refused, rounds;
	struct fc_shm_key *a;

	(void)state_;
	engines_start();
	for (i = 0; i < NODES; i++)
		round_of(i); /* maps the files, subscribes */
	lease_start();       /* a lease window after the engines' first: nothing to adopt */
	lw = utc_ns() / LEASE_NS;
	passed = burst(0, tag, &lent);
	assert_int_equal(passed, 2); /* B_i: its own bucket */
	for (i = 0; i < 3; i++)
		request(0, tag, &refused); /* refused: what it met asks for more */
	a = entry_of(0, tag);
	for (rounds = 1; rounds <= 2 && !fc_fleet_credit(a->state[2], lw); rounds++) {
		round_of(0); /* asks: the pool is short, the demand is published */
		usleep(20000);
		for (i = 1; i < NODES; i++)
			round_of(i); /* hear it: donate */
	}
	printf("# A's lease credit %" PRIu64 " after %d of its rounds (lease window %s)\n",
	       (uint64_t)fc_fleet_credit(a->state[2], lw), rounds - 1, utc_ns() / LEASE_NS == lw ? "the same" : "over");
	assert_int_equal(utc_ns() / LEASE_NS, lw);
	assert_true(fc_fleet_credit(a->state[2], lw) >= 1);
	assert_true(fc_fleet_credit(a->state[2], lw) <= 6); /* what the others had: 2 each */
	passed += burst(0, tag, &lent);
	printf("# A admitted %d (its own bucket: 2), %d of them lent\n", passed, lent);
	assert_true(passed > 2);
	assert_int_equal(lent, passed - 2);
	/* B, C and D never saw the key: each made its entry with its TAT
	 * advanced by what it donated (two tokens of 400 ms: nothing left to
	 * spend or to donate again until they come back). */
	for (i = 1; i < NODES; i++) {
		struct fc_shm_key *k = entry_of(i, tag);
		uint64_t now = utc_ns();

		printf("# node %d: TAT %" PRIu64 " ms ahead, tokens %" PRIu64 "\n", i + 1,
		       (uint64_t)(k->state[0] > now ? (k->state[0] - now) / 1000000 : 0),
		       (uint64_t)fc_fleet_gcra_tokens(k->state[0], pols[i][0].split[0].interval_ns, k->state[3], now));
		assert_true(k->idle_ns >= k->state[0]);
		assert_int_equal(fc_fleet_status_of(engines[i])->policies[0].donated, 2);
		assert_int_equal(fc_fleet_status_of(engines[i])->counters.records, 1);
	}
	engines_stop();
}

/* The bound: a key burst on A for 3 s (a request every 5 ms, every sync
 * round run), the others' tokens lent to it; then the others' own users
 * burst it too. Across the four nodes, in the span D from the first
 * admission to the last: at most R D + B + R lease (lent tokens move an
 * admission by less than one lease window; the clocks here agree). */
static void test_bound(void **state_)
{
	uint64_t tag = 0x5eed0000cafe0002ULL, t_first = 0, t_last = 0, now, next_round, end;
	int i, total = 0, on_a = 0, lent = 0, lease, n;
	double d, bound;

	(void)state_;
	engines_start();
	for (i = 0; i < NODES; i++)
		round_of(i);
	lease_start();
	now = utc_ns();
	next_round = now + 100000000ULL;
	end = now + 3000000000ULL;
	while ((now = utc_ns()) < end) {
		if (request(0, tag, &lease)) {
			t_first = t_first ? t_first : now;
			t_last = now;
			on_a++;
			lent += lease;
		}
		if (now >= next_round) {
			round_of(0);
			usleep(5000); /* its demand on its way to the others */
			for (i = 1; i < NODES; i++)
				round_of(i);
			next_round += 100000000ULL;
		}
		usleep(5000);
	}
	for (i = 1; i < NODES; i++) {
		n = burst(i, tag, &lease);
		if (n)
			t_last = utc_ns();
		total += n;
	}
	total += on_a;
	d = (double)(t_last - t_first) / 1e9;
	bound = RATE / 60.0 * (d + LEASE_NS / 1e9) + BURST;
	printf("# over %.3f s: %d admitted (A %d, %d of them lent; the others %d after lending), bound %.1f;"
	       " A alone without lending: at most %.1f\n",
	       d, total, on_a, lent, total - on_a, bound, RATE / 60.0 / NODES * d + BURST / NODES);
	assert_true(total <= bound);
	assert_true(lent > 0);
	for (i = 0; i < NODES; i++) /* every grant of the script's within the bounds applied */
		assert_int_equal(fc_fleet_status_of(engines[i])->counters.reply_errors, 0);
	assert_true(on_a > RATE / 60.0 / NODES * d + BURST / NODES); /* more than its own bucket */
	engines_stop();
}

static struct fc_shm_slot *slot_of(int node, uint32_t slot)
{
	return (struct fc_shm_slot *)((char *)states[node] + FC_STATE_SLOTS_OFF) + slot;
}

/* One request of policy 13 on node i's workers now, as fc_l7.c charges a
 * fixed key: the slot's bucket, tau_i of the policy's point; a refusal
 * sets the slot's demand word (no ring: the agent reads the slot). */
static int fixed_request(int node, int *lease)
{
	struct fc_shm_slot *s = slot_of(node, FIXED_SLOT);
	const struct fc_fleet_split *sp = &pols[node][1].split[0];
	uint64_t now = utc_ns(), tau = fc_fleet_share(sp, FIXED_U) * sp->interval_ns;
	__u64 prev, next;

	if (fc_fleet_gcra_try(s->state, sp->interval_ns, tau, now / LEASE_NS, now, 1, &prev, &next, lease)) {
		__atomic_fetch_add(&s->passed, 1, __ATOMIC_RELAXED);
		return 1;
	}
	__atomic_fetch_add(&s->denied, 1, __ATOMIC_RELAXED);
	fc_fleet_demand(&s->state[1], now / LEASE_NS);
	return 0;
}

/* A fixed-value gcra policy (arg:f=x) refused on A, idle on the others:
 * its one key's pool (kid 0) lends as a DIM=* key's does; the others'
 * slots give the tokens they hold, their TAT moved on by them. */
static void test_fixed_value(void **state_)
{
	int i, passed = 0, lent = 0, lease, rounds;
	uint64_t lw;

	(void)state_;
	for (i = 0; i < NODES; i++)
		slot_of(i, FIXED_SLOT)->owner = (uint64_t)13 << 32 | FIXED_EPOCH;
	engines_start();
	for (i = 0; i < NODES; i++)
		round_of(i);
	lease_start();
	lw = utc_ns() / LEASE_NS;
	while (fixed_request(0, &lease))
		passed++;
	assert_int_equal(passed, 2);
	for (rounds = 1; rounds <= 2 && !fc_fleet_credit(slot_of(0, FIXED_SLOT)->state[2], lw); rounds++) {
		round_of(0);
		usleep(20000);
		for (i = 1; i < NODES; i++)
			round_of(i);
	}
	printf("# A's lease credit %" PRIu64 " after %d of its rounds\n",
	       (uint64_t)fc_fleet_credit(slot_of(0, FIXED_SLOT)->state[2], lw), rounds - 1);
	assert_int_equal(utc_ns() / LEASE_NS, lw);
	assert_true(fc_fleet_credit(slot_of(0, FIXED_SLOT)->state[2], lw) >= 1);
	while (fixed_request(0, &lease)) {
		passed++;
		lent += lease;
	}
	printf("# A admitted %d (its own bucket: 2), %d of them lent\n", passed, lent);
	assert_true(passed > 2);
	assert_int_equal(lent, passed - 2);
	for (i = 1; i < NODES; i++)
		assert_true(slot_of(i, FIXED_SLOT)->state[0] > utc_ns()); /* what they gave is gone from them */
	engines_stop();
}

/* A pool's record whose g for node 1 (A) was written by a Redis client (any
 * node's credentials can), after A's first ask: G and R written within
 * what the reply's check allows. A applies none of it: refused
 * (reply_errors), its lease credit never above lambda (10), and it admits
 * no more than its bucket and lambda in the lease window. */
static void test_hostile_grant(void **state_)
{
	uint64_t tag = 0x5eed0000cafe0005ULL, lw, errors;
	struct fc_fleet_rec rec = { .id = 12, .epoch = EPOCH, .kid = tag, .kind = 'l', .unit = LEASE_NS / 1000000 };
	char name[FC_FLEET_NAME_MAX], cmd[600];
	int i, passed, lease;
	struct fc_err err;
	struct fc_shm_key *a;

	(void)state_;
	engines_start();
	for (i = 0; i < NODES; i++)
		round_of(i);
	lease_start();
	lw = utc_ns() / LEASE_NS;
	passed = burst(0, tag, &lease);
	request(0, tag, &lease);
	round_of(0); /* A asks: the pool's record is made */
	rec.w = lw;
	assert_true(fc_fleet_rec_name(&rec, prefix, name, sizeof(name), &err) > 0);
	snprintf(cmd, sizeof(cmd),
		 "[ \"$(redis-cli -p %s EXISTS '%s')\" = 1 ] && "
		 "redis-cli -p %s HSET '%s' g1 1000000 G 1000000 R 999990 >/dev/null",
		 strchr(addr, ':') + 1, name, strchr(addr, ':') + 1, name);
	assert_int_equal(system(cmd), 0);
	errors = fc_fleet_status_of(engines[0])->counters.reply_errors;
	request(0, tag, &lease);
	round_of(0);
	a = entry_of(0, tag);
	printf("# A's lease credit after g1 1000000 written: %" PRIu64 " (lambda 10), reply_errors +%" PRIu64 "\n",
	       (uint64_t)fc_fleet_credit(a->state[2], lw),
	       fc_fleet_status_of(engines[0])->counters.reply_errors - errors);
	assert_true(fc_fleet_credit(a->state[2], lw) <= 10);
	assert_true(fc_fleet_status_of(engines[0])->counters.reply_errors > errors);
	for (i = 0; i < 5000 && request(0, tag, &lease); i++)
		passed++;
	printf("# A admitted %d in lease window %s\n", passed, utc_ns() / LEASE_NS == lw ? "the same" : "over");
	assert_true(passed <= 2 + 10 + 1); /* B_i, lambda, a token refilled (400 ms) */
	engines_stop();
}

static int setup_one(void **state_)
{
	int i;

	(void)state_;
	for (i = 0; i < NODES; i++)
		memset(states[i], 0, FC_STATE_KEYS_OFF + (size_t)NKEYS * sizeof(struct fc_shm_key));
	return 0;
}

static int setup(void **state_)
{
	const char *a = getenv("FC_FLEET_IT_REDIS");
	int fd, i;

	(void)state_;
	if (!a) {
		fprintf(stderr, "fc_fleet_gcra_it: FC_FLEET_IT_REDIS is not set: run "
				"tests/integration/test_fleet_script.sh\n");
		exit(2);
	}
	snprintf(addr, sizeof(addr), "%s", a);
	snprintf(prefix, sizeof(prefix), "fg%d:", (int)getpid());
	if (fc_test_dir_make(dir, sizeof(dir), "fleet-gcra") < 0)
		return -1;
	size = FC_STATE_SIZE_FOR(NKEYS);
	for (i = 0; i < NODES; i++) {
		snprintf(paths[i], sizeof(paths[i]), "%s/n%d.state", dir, i + 1);
		fd = open(paths[i], O_RDWR | O_CREAT, 0660);
		if (fd < 0 || ftruncate(fd, (off_t)size) < 0)
			return -1;
		states[i] = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		close(fd);
		if (states[i] == MAP_FAILED)
			return -1;
	}
	return 0;
}

static int teardown(void **state_)
{
	int i;

	(void)state_;
	for (i = 0; i < NODES; i++)
		munmap(states[i], size);
	return fc_test_dir_remove(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_refused_here_idle_there, setup_one),
		cmocka_unit_test_setup(test_bound, setup_one),
		cmocka_unit_test_setup(test_fixed_value, setup_one),
		cmocka_unit_test_setup(test_hostile_grant, setup_one),
	};

	return cmocka_run_group_tests_name("gcra fleet lending, four lease engines against a real redis-server", tests,
					   setup, teardown);
}
