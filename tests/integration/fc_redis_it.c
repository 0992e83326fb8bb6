// SPDX-License-Identifier: BSD-2-Clause
/*
 * The Redis client (loader/lib/redis) against real servers, started by
 * tests/integration/test_redis.sh, which names them in the environment:
 *
 *   FC_REDIS_IT_STANDALONE  host:port of a standalone server with
 *                           requirepass FC_REDIS_IT_PASSWORD and an ACL user
 *                           "fleet" of password FC_REDIS_IT_USER_PASSWORD
 *   FC_REDIS_IT_CLUSTER     the ports of a Cluster's six nodes (3 primaries,
 *                           3 replicas), space-separated, on 127.0.0.1
 *   FC_REDIS_IT_DIR         where each node's pid is, in PORT.pid
 *   FC_REDIS_IT_FAKE        a free port for the fake servers of this file
 *
 * An admin connection of its own (hiredis's blocking client, linked
 * directly) moves slots and checks where keys went; the client under test
 * never learns of it. The failover test kills a primary by its pid and
 * runs last among the Cluster's.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
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
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <cmocka.h>
#include <hiredis/hiredis.h>

#include "fc_redis.h"
#include "fc_redis_slot.h"

#define NODES 6

static int cluster_port[NODES];
static char cluster_urls[256];

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static const char *env(const char *name)
{
	const char *v = getenv(name);

	if (!v || !*v) {
		fprintf(stderr, "fc_redis_it: %s is not set: run tests/integration/test_redis.sh\n", name);
		exit(2);
	}
	return v;
}

/* ---- the admin connection ---- */

static redisContext *adm_ctx[65536];

/* A command to the node at port (hiredis's format: %s is one argument);
 * NULL when it can not be reached (a node killed). */
static redisReply *adm_v(int port, const char *fmt, va_list ap)
{
	struct timeval tv = { .tv_sec = 3 };
	redisReply *reply;

	if (!adm_ctx[port]) {
		adm_ctx[port] = redisConnectWithTimeout("127.0.0.1", port, tv);
		if (!adm_ctx[port] || adm_ctx[port]->err) {
			redisFree(adm_ctx[port]);
			adm_ctx[port] = NULL;
			return NULL;
		}
		redisSetTimeout(adm_ctx[port], tv);
	}
	reply = redisvCommand(adm_ctx[port], fmt, ap);
	if (!reply) {
		redisFree(adm_ctx[port]);
		adm_ctx[port] = NULL;
	}
	return reply;
}

static redisReply *adm(int port, const char *fmt, ...)
{
	redisReply *reply;
	va_list ap;

	va_start(ap, fmt);
	reply = adm_v(port, fmt, ap);
	va_end(ap);
	return reply;
}

/* The same, which must succeed. */
static void adm_ok(int port, const char *fmt, ...)
{
	redisReply *reply;
	va_list ap;

	va_start(ap, fmt);
	reply = adm_v(port, fmt, ap);
	va_end(ap);
	if (!reply)
		fail_msg("port %d: %s: no answer", port, fmt);
	if (reply->type == REDIS_REPLY_ERROR)
		fail_msg("port %d: %s: %s", port, fmt, reply->str);
	freeReplyObject(reply);
}

static void adm_id(int port, char id[64])
{
	redisReply *reply = adm(port, "CLUSTER MYID");

	assert_non_null(reply);
	assert_int_equal(reply->type, REDIS_REPLY_STRING);
	snprintf(id, 64, "%s", reply->str);
	freeReplyObject(reply);
}

/* The port of slot's primary, and of its first replica (0 if none), as a
 * node that is up says. */
static int owner(unsigned slot, int *replica)
{
	redisReply *r = NULL;
	size_t i;
	int k, port = 0;

	for (k = 0; k < NODES && !r; k++)
		if ((r = adm(cluster_port[k], "CLUSTER SLOTS")) && r->type != REDIS_REPLY_ARRAY) {
			freeReplyObject(r);
			r = NULL;
		}
	assert_non_null(r);
	for (i = 0; i < r->elements; i++) {
		redisReply *e = r->element[i];

		if ((unsigned)e->element[0]->integer <= slot && slot <= (unsigned)e->element[1]->integer) {
			port = (int)e->element[2]->element[1]->integer;
			if (replica)
				*replica = e->elements > 3 ? (int)e->element[3]->element[1]->integer : 0;
		}
	}
	freeReplyObject(r);
	return port;
}

/* ---- the client under test ---- */

static struct fc_redis *client(const char *urls, unsigned timeout_ms)
{
	struct fc_redis_conf conf;
	struct fc_redis *r;
	struct fc_err err;

	fc_redis_conf_init(&conf);
	if (timeout_ms)
		conf.timeout_ms = timeout_ms;
	if (fc_redis_conf_urls(&conf, urls, &err) < 0)
		fail_msg("%s", err.msg);
	r = fc_redis_open(&conf, &err);
	fc_redis_conf_wipe(&conf);
	if (!r)
		fail_msg("%s", err.msg);
	return r;
}

/* A batch of up to 4096 commands of up to 6 arguments, built in place. */
struct batch {
	struct fc_redis_cmd cmd[4096];
	char arg[4096][6][48];
	const char *argv[4096][6];
	size_t n;
};

static struct fc_redis_cmd *add(struct batch *b, struct fc_redis_want want, unsigned key, const char *fmt, ...)
{
	struct fc_redis_cmd *c = &b->cmd[b->n];
	char line[256], *tok, *save = NULL;
	va_list ap;
	int argc = 0;

	assert_true(b->n < 4096);
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	for (tok = strtok_r(line, " ", &save); tok && argc < 6; tok = strtok_r(NULL, " ", &save)) {
		snprintf(b->arg[b->n][argc], sizeof(b->arg[0][0]), "%s", tok);
		b->argv[b->n][argc] = b->arg[b->n][argc];
		argc++;
	}
	*c = (struct fc_redis_cmd){ .argc = argc, .argv = b->argv[b->n], .key = key, .want = want };
	b->n++;
	return c;
}

static void reset(struct batch *b)
{
	fc_redis_cmds_release(b->cmd, b->n);
	b->n = 0;
}

/* Every command answered as asked, or the first that was not, shown. */
static void all_ok(struct batch *b, size_t failed)
{
	size_t i;

	for (i = 0; i < b->n; i++)
		if (b->cmd[i].status != FC_REDIS_OK)
			fail_msg("command %zu of %zu (%zu failed): status %d: %s", i + 1, b->n, failed, b->cmd[i].status,
				 b->cmd[i].msg);
}

static void str_is(const struct fc_redis_cmd *c, const char *want)
{
	assert_int_equal(c->status, FC_REDIS_OK);
	assert_int_equal(c->reply->type, FC_REDIS_STR);
	assert_string_equal(c->reply->str, want);
}

static void msg_has(const struct fc_redis_cmd *c, const char *part)
{
	if (!c->msg || !strstr(c->msg, part))
		fail_msg("expected a message with \"%s\", got \"%s\"", part, c->msg ? c->msg : "(none)");
}

static struct batch *batch_new(void)
{
	struct batch *b = calloc(1, sizeof(*b));

	assert_non_null(b);
	return b;
}

static void batch_free(struct batch *b)
{
	reset(b);
	free(b);
}

/* ---- standalone ---- */

static void test_standalone(void **state)
{
	const char *at = env("FC_REDIS_IT_STANDALONE");
	struct fc_redis_stats st;
	struct batch *b = batch_new();
	struct fc_redis *r;
	struct fc_err err;
	char urls[256];
	size_t failed;

	(void)state;
	snprintf(urls, sizeof(urls), "redis://fleet:%s@%s", env("FC_REDIS_IT_USER_PASSWORD"), at);
	r = client(urls, 0);
	assert_int_equal(fc_redis_connect(r, &err), 0);
	assert_int_equal(fc_redis_mode(r), FC_REDIS_STANDALONE);
	add(b, FC_REDIS_WANT_OK, 1, "SET sa:k 41");
	add(b, FC_REDIS_WANT_INT, 1, "INCR sa:k");
	add(b, FC_REDIS_WANT_STR(16), 1, "GET sa:k");
	add(b, FC_REDIS_WANT_STR(16), 1, "GET sa:none");
	failed = fc_redis_exec(r, b->cmd, b->n, &err);
	assert_int_equal(failed, 0);
	assert_int_equal(b->cmd[1].reply->integer, 42);
	str_is(&b->cmd[2], "42");
	assert_int_equal(b->cmd[3].reply->type, FC_REDIS_NIL);
	reset(b);

	/* Redis's error, and a reply of the wrong type, named. */
	add(b, FC_REDIS_WANT_INT, 1, "HINCRBY sa:k f 1");
	add(b, FC_REDIS_WANT_INT, 1, "GET sa:k");
	add(b, FC_REDIS_WANT_INTS(2), 1, "GET sa:k");
	add(b, FC_REDIS_WANT_OK, 1, "SET sa:k 7");
	failed = fc_redis_exec(r, b->cmd, b->n, &err);
	assert_int_equal(failed, 3);
	assert_int_equal(b->cmd[0].status, FC_REDIS_ERROR);
	assert_int_equal(b->cmd[0].reply->type, FC_REDIS_ERR);
	msg_has(&b->cmd[0], "HINCRBY \"sa:k\": ");
	msg_has(&b->cmd[0], "WRONGTYPE");
	assert_int_equal(b->cmd[1].status, FC_REDIS_BAD_REPLY);
	msg_has(&b->cmd[1], "GET \"sa:k\": ");
	msg_has(&b->cmd[1], "expected an integer, got a bulk string of 2 bytes (\"42\")");
	assert_int_equal(b->cmd[2].status, FC_REDIS_BAD_REPLY);
	msg_has(&b->cmd[2], "expected an array, got a bulk string");
	assert_int_equal(b->cmd[3].status, FC_REDIS_OK);
	assert_non_null(strstr(err.msg, "3 of 4 Redis commands failed"));
	fc_redis_stats(r, &st);
	assert_int_equal(st.pipelines, 2);
	assert_int_equal(st.connects, 1);
	reset(b);
	fc_redis_close(r);

	/* The password alone (requirepass: the default user). */
	snprintf(urls, sizeof(urls), "redis://:%s@%s", env("FC_REDIS_IT_PASSWORD"), at);
	r = client(urls, 0);
	add(b, FC_REDIS_WANT_STR(16), 1, "GET sa:k");
	assert_int_equal(fc_redis_exec(r, b->cmd, b->n, &err), 0);
	str_is(&b->cmd[0], "7");
	reset(b);
	fc_redis_close(r);

	/* A wrong password: refused, saying so; nothing ran. */
	snprintf(urls, sizeof(urls), "redis://fleet:wrong@%s", at);
	r = client(urls, 0);
	assert_int_equal(fc_redis_connect(r, &err), -1);
	assert_non_null(strstr(err.msg, "AUTH (user and password) refused: an error (\"WRONGPASS"));
	assert_null(strstr(err.msg, "wrong@"));
	add(b, FC_REDIS_WANT_OK, 1, "SET sa:k 8");
	assert_int_equal(fc_redis_exec(r, b->cmd, b->n, &err), 1);
	assert_int_equal(b->cmd[0].status, FC_REDIS_NOT_RUN);
	fc_redis_close(r);
	batch_free(b);
}

/* The password from a file: of mode 0600, used; readable by the group, refused. */
static void test_password_file(void **state)
{
	char path[] = "/tmp/fc-redis-it-pw-XXXXXX", urls[256];
	struct fc_redis_conf conf;
	struct batch *b = batch_new();
	struct fc_redis *r;
	struct fc_err err;
	int fd;

	(void)state;
	fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_true(dprintf(fd, "%s\n", env("FC_REDIS_IT_USER_PASSWORD")) > 0);
	close(fd);
	fc_redis_conf_init(&conf);
	snprintf(urls, sizeof(urls), "redis://fleet@%s", env("FC_REDIS_IT_STANDALONE"));
	assert_int_equal(fc_redis_conf_urls(&conf, urls, &err), 0);
	assert_int_equal(fc_redis_conf_password_file(&conf, path, &err), 0);
	r = fc_redis_open(&conf, &err);
	assert_non_null(r);
	add(b, FC_REDIS_WANT_OK, 1, "SET pw:k 1");
	assert_int_equal(fc_redis_exec(r, b->cmd, b->n, &err), 0);
	fc_redis_close(r);
	chmod(path, 0640);
	fc_redis_conf_init(&conf);
	assert_int_equal(fc_redis_conf_password_file(&conf, path, &err), -1);
	assert_non_null(strstr(err.msg, "must be a regular file of user"));
	assert_non_null(strstr(err.msg, "mode 640"));
	unlink(path);
	batch_free(b);
}

/* ---- Cluster ---- */

/* Our slots are the server's: CLUSTER KEYSLOT of 2,000 keys, hash tags too. */
static void test_keyslot(void **state)
{
	struct fc_redis *r = client(cluster_urls, 1000);
	struct batch *b = batch_new();
	struct fc_err err;
	char key[64];
	size_t i;

	(void)state;
	for (i = 0; i < 2000; i++) {
		switch (i % 4) {
		case 0: snprintf(key, sizeof(key), "k%zu", i * 7919); break;
		case 1: snprintf(key, sizeof(key), "{u%zu}:p%zu", i, i % 13); break;
		case 2: snprintf(key, sizeof(key), "a{}{b%zu}", i); break;
		default: snprintf(key, sizeof(key), "x{{y%zu}}z", i); break;
		}
		add(b, FC_REDIS_WANT_INT, 0, "CLUSTER KEYSLOT %s", key);
	}
	assert_int_equal(fc_redis_exec(r, b->cmd, b->n, &err), 0);
	for (i = 0; i < b->n; i++)
		if ((unsigned)b->cmd[i].reply->integer != fc_redis_slot(b->arg[i][2], strlen(b->arg[i][2])))
			fail_msg("\"%s\": the server says slot %lld, we say %u", b->arg[i][2], b->cmd[i].reply->integer,
				 fc_redis_slot(b->arg[i][2], strlen(b->arg[i][2])));
	batch_free(b);
	fc_redis_close(r);
}

/* 3,000 keys: one pipeline per primary, no redirection, each key on the
 * primary that serves its slot. */
/* A command routed by each slot of fc_redis_primary_slots reaches each
 * primary once (the fleet's heartbeat PINGs them so): the port that answers
 * is the slot's owner's, three different ones. */
static void primaries_reached(struct fc_redis *r)
{
	struct fc_redis_want two = { .types = FC_REDIS_ARRAY, .elem_types = FC_REDIS_STR, .min_n = 2, .max_n = 2 };
	struct batch *b = batch_new();
	struct fc_err err;
	uint16_t slots[8];
	int port[3];
	size_t i;

	assert_int_equal(fc_redis_primary_slots(r, slots, 8), 3);
	for (i = 0; i < 3; i++)
		add(b, two, 0, "CONFIG GET port")->route_slot = slots[i];
	all_ok(b, fc_redis_exec(r, b->cmd, b->n, &err));
	for (i = 0; i < 3; i++) {
		port[i] = atoi(b->cmd[i].reply->elem[1]->str);
		assert_int_equal(port[i], owner(slots[i], NULL));
	}
	assert_true(port[0] != port[1] && port[1] != port[2] && port[0] != port[2]);
	batch_free(b);
}

static void test_routing(void **state)
{
	struct fc_redis *r = client(cluster_urls, 1000);
	struct fc_redis_node_info nodes[16];
	struct batch *b = batch_new();
	struct fc_redis_stats st;
	struct fc_err err;
	redisReply *got;
	size_t i, k, primaries = 0;

	(void)state;
	assert_int_equal(fc_redis_connect(r, &err), 0);
	assert_int_equal(fc_redis_mode(r), FC_REDIS_CLUSTER);
	k = fc_redis_nodes(r, nodes, 16);
	for (i = 0; i < k; i++)
		primaries += nodes[i].primary;
	assert_int_equal(primaries, 3);
	assert_int_equal(k, 6);
	for (i = 0; i < 3000; i++)
		add(b, FC_REDIS_WANT_OK, 1, "SET rt:%zu v%zu", i, i);
	all_ok(b, fc_redis_exec(r, b->cmd, b->n, &err));
	fc_redis_stats(r, &st);
	assert_int_equal(st.pipelines, 3);
	assert_int_equal(st.rounds, 1);
	assert_int_equal(st.moved + st.ask, 0);
	primaries_reached(r);
	/* Where the server's own table says: the value is there (no MOVED). */
	for (i = 0; i < 3000; i += 97) {
		char key[32], val[32];

		snprintf(key, sizeof(key), "rt:%zu", i);
		snprintf(val, sizeof(val), "v%zu", i);
		got = adm(owner(fc_redis_slot(key, strlen(key)), NULL), "GET %s", key);
		assert_non_null(got);
		assert_int_equal(got->type, REDIS_REPLY_STRING);
		assert_string_equal(got->str, val);
		freeReplyObject(got);
	}
	batch_free(b);
	fc_redis_close(r);
}

/* Slot owners by slot as the node at port says; false if it does not answer. */
static bool slot_owners(int port, uint16_t own[FC_REDIS_SLOTS])
{
	redisReply *r = adm(port, "CLUSTER SLOTS");
	size_t i;
	long long s;

	if (!r || r->type != REDIS_REPLY_ARRAY) {
		freeReplyObject(r);
		return false;
	}
	memset(own, 0, FC_REDIS_SLOTS * sizeof(own[0]));
	for (i = 0; i < r->elements; i++)
		for (s = r->element[i]->element[0]->integer; s <= r->element[i]->element[1]->integer; s++)
			own[s] = (uint16_t)r->element[i]->element[2]->element[1]->integer;
	freeReplyObject(r);
	return true;
}

/* Every node that answers gives every slot the same owner. */
static bool cluster_agrees(void)
{
	static uint16_t first[FC_REDIS_SLOTS], other[FC_REDIS_SLOTS];
	bool have = false;
	int k;

	for (k = 0; k < NODES; k++) {
		if (!slot_owners(cluster_port[k], have ? other : first))
			continue;
		if (have && memcmp(first, other, sizeof(first)))
			return false;
		have = true;
	}
	return have;
}

/* Ends slot's migration from port from to port to: the slot is to's, and
 * every node says so (redis-cli --cluster reshard, later, wants them to
 * agree). */
static void slot_set(unsigned slot, int from, int to)
{
	char to_id[64];
	uint64_t until = now_ms() + 10000;
	bool agree = false;
	int k;

	adm_id(to, to_id);
	adm_ok(to, "CLUSTER SETSLOT %u NODE %s", slot, to_id);
	adm_ok(from, "CLUSTER SETSLOT %u NODE %s", slot, to_id);
	for (k = 0; k < NODES; k++) /* the others learn it now, not by gossip */
		if (cluster_port[k] != from && cluster_port[k] != to)
			freeReplyObject(adm(cluster_port[k], "CLUSTER SETSLOT %u NODE %s", slot, to_id));
	while (!(agree = cluster_agrees()) && now_ms() < until)
		usleep(50000);
	assert_true(agree);
}

/* Moves slot from its owner to another primary, keys and all (as
 * redis-cli --cluster reshard does). Returns the new owner's port. When
 * ask_only, stops half-way: the slot migrating, only key moved. */
static int move_slot(unsigned slot, const char *ask_only)
{
	int from = owner(slot, NULL), to = 0, k;
	char from_id[64], to_id[64];
	redisReply *keys;
	size_t i;

	for (k = 0; k < NODES && !to; k++)
		if (cluster_port[k] != from) {
			redisReply *role = adm(cluster_port[k], "ROLE");

			if (role && role->type == REDIS_REPLY_ARRAY && !strcmp(role->element[0]->str, "master"))
				to = cluster_port[k];
			freeReplyObject(role);
		}
	assert_true(to != 0);
	adm_id(from, from_id);
	adm_id(to, to_id);
	adm_ok(to, "CLUSTER SETSLOT %u IMPORTING %s", slot, from_id);
	adm_ok(from, "CLUSTER SETSLOT %u MIGRATING %s", slot, to_id);
	if (ask_only) {
		adm_ok(from, "MIGRATE 127.0.0.1 %d %s 0 5000", to, ask_only);
		return to;
	}
	keys = adm(from, "CLUSTER GETKEYSINSLOT %u 1000", slot);
	assert_non_null(keys);
	for (i = 0; i < keys->elements; i++)
		adm_ok(from, "MIGRATE 127.0.0.1 %d %s 0 5000", to, keys->element[i]->str);
	freeReplyObject(keys);
	slot_set(slot, from, to);
	return to;
}

/* A slot moved after the client loaded its table: MOVED, the command sent
 * again in a second pipeline to the new owner, the table updated; the next
 * call loads the table and goes straight there. */
static void test_moved(void **state)
{
	struct fc_redis *r = client(cluster_urls, 1000);
	struct batch *b = batch_new();
	struct fc_redis_stats st0, st1, st2;
	unsigned slot = fc_redis_slot("mv", 2);
	struct fc_err err;
	size_t i;

	(void)state;
	for (i = 0; i < 5; i++)
		add(b, FC_REDIS_WANT_OK, 1, "SET {mv}:%zu m%zu", i, i);
	for (i = 0; i < 30; i++)
		add(b, FC_REDIS_WANT_OK, 1, "SET other:%zu o", i);
	all_ok(b, fc_redis_exec(r, b->cmd, b->n, &err));
	reset(b);
	move_slot(slot, NULL);

	fc_redis_stats(r, &st0);
	for (i = 0; i < 5; i++)
		add(b, FC_REDIS_WANT_STR(16), 1, "GET {mv}:%zu", i);
	for (i = 0; i < 30; i++)
		add(b, FC_REDIS_WANT_STR(16), 1, "GET other:%zu", i);
	all_ok(b, fc_redis_exec(r, b->cmd, b->n, &err));
	for (i = 0; i < 5; i++) {
		char want[8];

		snprintf(want, sizeof(want), "m%zu", i);
		str_is(&b->cmd[i], want);
	}
	fc_redis_stats(r, &st1);
	assert_int_equal(st1.moved - st0.moved, 5);
	assert_int_equal(st1.rounds - st0.rounds, 2);
	assert_int_equal(st1.pipelines - st0.pipelines, 3 + 1);
	reset(b);

	for (i = 0; i < 5; i++)
		add(b, FC_REDIS_WANT_STR(16), 1, "GET {mv}:%zu", i);
	all_ok(b, fc_redis_exec(r, b->cmd, b->n, &err));
	fc_redis_stats(r, &st2);
	assert_int_equal(st2.moved - st1.moved, 0);
	assert_int_equal(st2.rounds - st1.rounds, 1);
	assert_int_equal(st2.refreshes - st1.refreshes, 1);
	batch_free(b);
	fc_redis_close(r);
}

/* A slot half-way through a migration: a key already moved, or new, is
 * answered ASK: ASKING and the command on the importing node; the table is
 * kept, so the next call asks the old owner again. */
static void test_ask(void **state)
{
	struct fc_redis *r = client(cluster_urls, 1000);
	struct batch *b = batch_new();
	unsigned slot = fc_redis_slot("ask", 3);
	struct fc_redis_stats st0, st1, st2;
	int from = owner(slot, NULL), to;
	struct fc_err err;

	(void)state;
	add(b, FC_REDIS_WANT_OK, 1, "SET {ask}:moved m");
	add(b, FC_REDIS_WANT_OK, 1, "SET {ask}:stays s");
	all_ok(b, fc_redis_exec(r, b->cmd, b->n, &err));
	reset(b);
	to = move_slot(slot, "{ask}:moved");

	fc_redis_stats(r, &st0);
	add(b, FC_REDIS_WANT_STR(8), 1, "GET {ask}:moved");
	add(b, FC_REDIS_WANT_STR(8), 1, "GET {ask}:stays");
	add(b, FC_REDIS_WANT_OK, 1, "SET {ask}:new n");
	all_ok(b, fc_redis_exec(r, b->cmd, b->n, &err));
	str_is(&b->cmd[0], "m");
	str_is(&b->cmd[1], "s");
	fc_redis_stats(r, &st1);
	assert_int_equal(st1.ask - st0.ask, 2); /* the moved key and the new one */
	assert_int_equal(st1.moved - st0.moved, 0);
	assert_int_equal(st1.rounds - st0.rounds, 2);
	reset(b);

	add(b, FC_REDIS_WANT_STR(8), 1, "GET {ask}:new");
	all_ok(b, fc_redis_exec(r, b->cmd, b->n, &err));
	str_is(&b->cmd[0], "n");
	fc_redis_stats(r, &st2);
	assert_int_equal(st2.ask - st1.ask, 1); /* the table still names the old owner */
	reset(b);

	/* The migration ends: the rest moves, the slot is the new owner's. */
	adm_ok(from, "MIGRATE 127.0.0.1 %d {ask}:stays 0 5000", to);
	slot_set(slot, from, to);
	add(b, FC_REDIS_WANT_STR(8), 1, "GET {ask}:stays");
	all_ok(b, fc_redis_exec(r, b->cmd, b->n, &err));
	str_is(&b->cmd[0], "s");
	batch_free(b);
	fc_redis_close(r);
}

/* redis-cli --cluster reshard moving 300 slots between primaries while
 * batches run: every command answered, every read the last value written. */
static void test_reshard_live(void **state)
{
	struct fc_redis *r = client(cluster_urls, 1000);
	struct batch *b = batch_new();
	struct fc_redis_stats st0, st1;
	char from_id[64], to_id[64], from_at[32];
	int from = owner(100, NULL), to = owner(16000, NULL), status;
	unsigned round = 0, i;
	uint64_t until;
	struct fc_err err;
	pid_t pid;

	(void)state;
	assert_true(from != to);
	assert_true(cluster_agrees());
	adm_id(from, from_id);
	adm_id(to, to_id);
	snprintf(from_at, sizeof(from_at), "127.0.0.1:%d", from);
	/* Keys in the slots that move: 0-299 are from's. */
	for (i = 0; i < 600; i++)
		add(b, FC_REDIS_WANT_OK, 1, "SET lv:%u 0", i);
	all_ok(b, fc_redis_exec(r, b->cmd, b->n, &err));
	reset(b);
	fc_redis_stats(r, &st0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY);

		dup2(null, 1);
		execlp("redis-cli", "redis-cli", "--cluster", "reshard", from_at, "--cluster-from", from_id, "--cluster-to",
		       to_id, "--cluster-slots", "300", "--cluster-yes", "--cluster-pipeline", "5", (char *)NULL);
		_exit(127);
	}
	until = now_ms() + 60000;
	do {
		round++;
		for (i = 0; i < 600; i++)
			add(b, FC_REDIS_WANT_OK, 1, "SET lv:%u %u", i, round);
		for (i = 0; i < 600; i++)
			add(b, FC_REDIS_WANT_STR(16), 1, "GET lv:%u", i);
		all_ok(b, fc_redis_exec(r, b->cmd, b->n, &err));
		for (i = 0; i < 600; i++) {
			char want[16];

			snprintf(want, sizeof(want), "%u", round);
			str_is(&b->cmd[600 + i], want);
		}
		reset(b);
	} while (waitpid(pid, &status, WNOHANG) == 0 && now_ms() < until);
	if (now_ms() >= until) {
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
		fail_msg("redis-cli --cluster reshard did not end within 60 s");
	}
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	fc_redis_stats(r, &st1);
	print_message("# reshard: %u rounds of 1200 commands during it; %llu MOVED, %llu ASK, %llu TRYAGAIN\n", round,
		      (unsigned long long)(st1.moved - st0.moved), (unsigned long long)(st1.ask - st0.ask),
		      (unsigned long long)(st1.tryagain - st0.tryagain));
	assert_true(st1.moved + st1.ask > st0.moved + st0.ask);
	assert_int_equal(owner(0, NULL), to);
	batch_free(b);
	fc_redis_close(r);
}

/* A primary killed (by its pid): its slots' commands fail, saying so, until
 * its replica is promoted, then go to the replica; the other primaries'
 * commands go on all along. */
static void test_failover(void **state)
{
	struct fc_redis *r = client(cluster_urls, 200);
	struct fc_redis_node_info nodes[16];
	struct batch *b = batch_new();
	unsigned slot = fc_redis_slot("fo", 2), rounds = 0, failed_rounds = 0;
	int victim = owner(slot, NULL), replica = 0, k;
	char path[512], name[32];
	bool promoted = false, others_ok = true;
	uint64_t until;
	struct fc_err err;
	FILE *f;
	pid_t pid = 0;
	size_t i, n;

	(void)state;
	owner(slot, &replica);
	assert_true(replica != 0);
	/* A key on another primary, for the commands that must go on. */
	for (k = 0;; k++) {
		snprintf(name, sizeof(name), "x%d", k);
		if (owner(fc_redis_slot(name, strlen(name)), NULL) != victim)
			break;
	}
	add(b, FC_REDIS_WANT_OK, 1, "SET {fo}:k 0");
	all_ok(b, fc_redis_exec(r, b->cmd, b->n, &err));
	reset(b);
	snprintf(path, sizeof(path), "%s/%d.pid", env("FC_REDIS_IT_DIR"), victim);
	f = fopen(path, "r");
	assert_non_null(f);
	assert_int_equal(fscanf(f, "%d", &pid), 1);
	fclose(f);
	assert_true(pid > 1);
	assert_int_equal(kill(pid, SIGKILL), 0);
	print_message("# killed the primary at port %d (pid %d); its replica is at %d\n", victim, (int)pid, replica);

	until = now_ms() + 30000;
	while (!promoted && now_ms() < until) {
		rounds++;
		add(b, FC_REDIS_WANT_OK, 1, "SET {fo}:k %u", rounds);
		add(b, FC_REDIS_WANT_OK, 1, "SET %s %u", name, rounds);
		fc_redis_exec(r, b->cmd, b->n, &err);
		if (b->cmd[1].status != FC_REDIS_OK) {
			others_ok = false;
			print_message("# round %u: another primary's command failed: %s\n", rounds, b->cmd[1].msg);
		}
		promoted = b->cmd[0].status == FC_REDIS_OK;
		if (!promoted) {
			failed_rounds++;
			/* Not run, or lost when it was on the wire: never taken for done. */
			assert_true(b->cmd[0].status == FC_REDIS_NOT_RUN || b->cmd[0].status == FC_REDIS_LOST);
			if (failed_rounds == 1)
				print_message("# during the failover: %s\n", b->cmd[0].msg);
		}
		reset(b);
		if (!promoted)
			usleep(100000);
	}
	print_message("# promoted after %u rounds of 100 ms (%u failed)\n", rounds, failed_rounds);
	assert_true(promoted);
	assert_true(others_ok);
	/* The replica serves the slot now, as the client knows. */
	n = fc_redis_nodes(r, nodes, 16);
	snprintf(path, sizeof(path), "127.0.0.1:%d", replica);
	for (i = 0; i < n && strcmp(nodes[i].name, path); i++)
		;
	assert_true(i < n);
	assert_true(nodes[i].primary);
	assert_true(nodes[i].slots > 0);
	add(b, FC_REDIS_WANT_STR(16), 1, "GET {fo}:k");
	all_ok(b, fc_redis_exec(r, b->cmd, b->n, &err));
	batch_free(b);
	fc_redis_close(r);
}

/* ---- hostile servers ---- */

/* A fake server on 127.0.0.1:FC_REDIS_IT_FAKE for one connection: after
 * each read, the next of its replies (the last one again when repeat), then
 * holds the connection until the client closes it. */
struct fake {
	int lfd;
	const char *const *replies;
	size_t nreplies;
	size_t big;     /* after the replies: this many 'x' (a huge bulk string) */
	bool repeat;    /* the last reply again to every later read */
	bool hang_up;   /* closes after the last reply */
	pthread_t thread;
};

static void *fake_run(void *arg)
{
	struct fake *fk = arg;
	struct pollfd p = { .events = POLLIN };
	char buf[65536];
	size_t step = 0, sent;
	ssize_t got;

	p.fd = fk->lfd;
	if (poll(&p, 1, 3000) != 1)
		return NULL;
	p.fd = accept(fk->lfd, NULL, NULL);
	if (p.fd < 0)
		return NULL;
	while (poll(&p, 1, 3000) == 1 && (got = read(p.fd, buf, sizeof(buf))) > 0) {
		const char *reply = step < fk->nreplies ? fk->replies[step] : fk->repeat ? fk->replies[fk->nreplies - 1] : NULL;

		if (reply)
			send(p.fd, reply, strlen(reply), MSG_NOSIGNAL);
		if (step + 1 == fk->nreplies && fk->big) {
			memset(buf, 'x', sizeof(buf));
			for (sent = 0; sent < fk->big; sent += sizeof(buf))
				if (send(p.fd, buf, sizeof(buf), MSG_NOSIGNAL) < 0)
					break;
		}
		if (++step == fk->nreplies && fk->hang_up)
			break;
	}
	close(p.fd);
	return NULL;
}

static void fake_start(struct fake *fk)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK),
				  .sin_port = htons((uint16_t)atoi(env("FC_REDIS_IT_FAKE"))) };
	int one = 1;

	fk->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(fk->lfd >= 0);
	setsockopt(fk->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	assert_int_equal(bind(fk->lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(fk->lfd, 4), 0);
	assert_int_equal(pthread_create(&fk->thread, NULL, fake_run, fk), 0);
}

static void fake_stop(struct fake *fk)
{
	pthread_join(fk->thread, NULL);
	close(fk->lfd);
}

#define STANDALONE "-ERR This instance has cluster support disabled\r\n"

/* Runs b against a fake with replies; returns the time it took (ms). */
static uint64_t against(struct fake *fk, struct batch *b, unsigned timeout_ms, size_t *failed, struct fc_err *err)
{
	char url[64];
	struct fc_redis *r;
	uint64_t t0;

	snprintf(url, sizeof(url), "redis://127.0.0.1:%s", env("FC_REDIS_IT_FAKE"));
	fake_start(fk);
	r = client(url, timeout_ms);
	t0 = now_ms();
	*failed = fc_redis_exec(r, b->cmd, b->n, err);
	t0 = now_ms() - t0;
	fc_redis_close(r);
	fake_stop(fk);
	return t0;
}

/* Replies of the wrong type or size: errors naming the command and what it
 * expected; the connection stays in step. */
static void test_hostile_types(void **state)
{
	static const char *const replies[] = { STANDALONE,
					       ":5\r\n$3\r\nabc\r\n*2\r\n:1\r\n:2\r\n*3\r\n:1\r\n$1\r\nx\r\n:3\r\n" };
	char big[5100 + 8];
	const char *with_big[] = { STANDALONE, big };
	struct fake fk = { .replies = replies, .nreplies = 2 };
	struct batch *b = batch_new();
	struct fc_err err;
	size_t failed;

	(void)state;
	add(b, FC_REDIS_WANT_STR(16), 1, "GET h:1");
	add(b, FC_REDIS_WANT_INT, 1, "INCR h:2");
	add(b, FC_REDIS_WANT_INTS(3), 1, "EVALSHA h:3");
	add(b, FC_REDIS_WANT_INTS(3), 1, "EVALSHA h:4");
	against(&fk, b, 300, &failed, &err);
	assert_int_equal(failed, 4);
	assert_int_equal(b->cmd[0].status, FC_REDIS_BAD_REPLY);
	msg_has(&b->cmd[0], "GET \"h:1\": 127.0.0.1:");
	msg_has(&b->cmd[0], "expected a bulk string or nil, got an integer (5)");
	msg_has(&b->cmd[1], "INCR \"h:2\": ");
	msg_has(&b->cmd[1], "expected an integer, got a bulk string of 3 bytes (\"abc\")");
	msg_has(&b->cmd[2], "expected an array of 3 integers, got an array of 2");
	msg_has(&b->cmd[3], "element 2: expected an integer, got a bulk string of 1 bytes (\"x\")");
	reset(b);

	/* A string longer than the command allows. */
	memcpy(big, "$5000\r\n", 7);
	memset(big + 7, 'y', 5000);
	memcpy(big + 5007, "\r\n", 3);
	fk = (struct fake){ .replies = with_big, .nreplies = 2 };
	add(b, FC_REDIS_WANT_STR(64), 1, "GET h:5");
	against(&fk, b, 300, &failed, &err);
	assert_int_equal(b->cmd[0].status, FC_REDIS_BAD_REPLY);
	msg_has(&b->cmd[0], "expected a string of at most 64 bytes, got a bulk string of 5000 bytes");
	batch_free(b);
}

/* Bytes that are not the protocol, or that would cost too much memory: the
 * connection is dropped, the commands lost (they may have run), nothing
 * crashes or grows without bound. */
static void test_hostile_stream(void **state)
{
	static const struct {
		const char *reply;
		size_t big;
		const char *msg;
	} cases[] = {
		{ "!oops\r\n", 0, "reply: Protocol error, got \"!\" as reply type byte" },
		{ "*2000000000\r\n", 0, "reply: an array of 2000000000 elements (at most 65536)" },
		{ "$100000000\r\n", 9u << 20, "reply: a reply of more than 8388608 bytes" },
		{ ":12345678901234567890123\r\n", 0, "reply: Bad integer value" },
		{ "$5\r\nab", 0, "connection closed by the server" },
	};
	struct batch *b = batch_new();
	struct fc_err err;
	size_t i, failed;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *replies[] = { STANDALONE, cases[i].reply };
		struct fake fk = { .replies = replies, .nreplies = 2, .big = cases[i].big };

		fk.hang_up = i == 4; /* the half reply: the server closes after it */
		add(b, FC_REDIS_WANT_STR(16), 1, "GET s:%zu", i);
		against(&fk, b, 2000, &failed, &err);
		assert_int_equal(failed, 1);
		assert_int_equal(b->cmd[0].status, FC_REDIS_LOST);
		msg_has(&b->cmd[0], cases[i].msg);
		reset(b);
	}
	batch_free(b);
}

/* A server that never answers: the call ends at its deadline, the command
 * lost; one whose slot table is out of range: refused; one that redirects
 * to itself forever: given up after the bound, saying so. */
static void test_hostile_behaviour(void **state)
{
	static const char *const silent[] = { STANDALONE, "" };
	static const char *const bad_slots[] = { "*1\r\n*3\r\n:0\r\n:99999\r\n*2\r\n$9\r\n127.0.0.1\r\n:6379\r\n" };
	char slots[256], moved[64];
	const char *loop[] = { slots, moved };
	struct batch *b = batch_new();
	struct fc_err err;
	uint64_t ms;
	size_t failed;
	struct fake fk = { .replies = silent, .nreplies = 2 };

	(void)state;
	add(b, FC_REDIS_WANT_STR(16), 1, "GET q:1");
	ms = against(&fk, b, 150, &failed, &err);
	print_message("# a silent server: the call took %llu ms (timeout 150)\n", (unsigned long long)ms);
	assert_true(ms >= 140 && ms < 400);
	assert_int_equal(b->cmd[0].status, FC_REDIS_LOST);
	msg_has(&b->cmd[0], "no answer within 150 ms");
	reset(b);

	fk = (struct fake){ .replies = bad_slots, .nreplies = 1 };
	add(b, FC_REDIS_WANT_STR(16), 1, "GET q:2");
	against(&fk, b, 300, &failed, &err);
	assert_int_equal(b->cmd[0].status, FC_REDIS_NOT_RUN);
	msg_has(&b->cmd[0], "CLUSTER SLOTS: range 1: the range 0-99999 is not within 0-16383");
	reset(b);

	snprintf(slots, sizeof(slots), "*1\r\n*3\r\n:0\r\n:16383\r\n*2\r\n$9\r\n127.0.0.1\r\n:%s\r\n",
		 env("FC_REDIS_IT_FAKE"));
	snprintf(moved, sizeof(moved), "-MOVED %u 127.0.0.1:%s\r\n", fc_redis_slot("q:3", 3), env("FC_REDIS_IT_FAKE"));
	fk = (struct fake){ .replies = loop, .nreplies = 2, .repeat = true };
	add(b, FC_REDIS_WANT_STR(16), 1, "GET q:3");
	against(&fk, b, 1000, &failed, &err);
	assert_int_equal(b->cmd[0].status, FC_REDIS_NOT_RUN);
	msg_has(&b->cmd[0], "sent 6 times, the most allowed; the last: ");
	msg_has(&b->cmd[0], "MOVED ");
	reset(b);

	/* A MOVED for another slot than the key's: not followed. */
	snprintf(moved, sizeof(moved), "-MOVED %u 10.9.9.9:1\r\n", (fc_redis_slot("q:4", 3) + 1) % FC_REDIS_SLOTS);
	fk = (struct fake){ .replies = loop, .nreplies = 2 };
	add(b, FC_REDIS_WANT_STR(16), 1, "GET q:4");
	against(&fk, b, 1000, &failed, &err);
	assert_int_equal(b->cmd[0].status, FC_REDIS_BAD_REPLY);
	msg_has(&b->cmd[0], "not the slot of the key");
	batch_free(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_standalone),
		cmocka_unit_test(test_password_file),
		cmocka_unit_test(test_keyslot),
		cmocka_unit_test(test_routing),
		cmocka_unit_test(test_moved),
		cmocka_unit_test(test_ask),
		cmocka_unit_test(test_reshard_live),
		cmocka_unit_test(test_failover),
		cmocka_unit_test(test_hostile_types),
		cmocka_unit_test(test_hostile_stream),
		cmocka_unit_test(test_hostile_behaviour),
	};
	char *ports = strdup(env("FC_REDIS_IT_CLUSTER")), *tok, *save = NULL;
	size_t o = 0;
	int k = 0;

	signal(SIGPIPE, SIG_IGN);
	for (tok = strtok_r(ports, " ", &save); tok && k < NODES; tok = strtok_r(NULL, " ", &save))
		cluster_port[k++] = atoi(tok);
	if (k != NODES) {
		fprintf(stderr, "fc_redis_it: FC_REDIS_IT_CLUSTER: expected %d ports\n", NODES);
		return 2;
	}
	/* Two seeds, the second a replica: any node tells the table. */
	o += (size_t)snprintf(cluster_urls + o, sizeof(cluster_urls) - o, "redis://127.0.0.1:%d,", cluster_port[0]);
	snprintf(cluster_urls + o, sizeof(cluster_urls) - o, "redis://127.0.0.1:%d", cluster_port[5]);
	free(ports);
	if (getenv("FC_TEST"))
		cmocka_set_test_filter(getenv("FC_TEST"));
	return cmocka_run_group_tests_name("Redis client against real servers", tests, NULL, NULL);
}
