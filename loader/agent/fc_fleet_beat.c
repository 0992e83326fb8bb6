// SPDX-License-Identifier: BSD-2-Clause
/*
 * The fleet's heartbeat (see fc_fleet_beat.h).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <jansson.h>

#include "fc_fleet_beat.h"
#include "fc_fleet_redis.h"

static const char fc_beat_lua[] = "redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])\n"
				  "local t = redis.call('TIME')\n"
				  "local out = {t[1], t[2]}\n"
				  "local all = redis.call('HGETALL', KEYS[1])\n"
				  "for i = 1, #all do out[#out + 1] = all[i] end\n"
				  "return out\n";

static int64_t fc_beat_now(int64_t clock_ns)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec + clock_ns;
}

static int fc_cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

int64_t fc_fleet_beat_offset(const struct fc_fleet_beat *b)
{
	int64_t s[FC_FLEET_BEAT_SAMPLES];

	if (!b->nsamples)
		return 0;
	memcpy(s, b->sample, sizeof(s));
	qsort(s, b->nsamples, sizeof(s[0]), fc_cmp_i64);
	return s[b->nsamples / 2];
}

uint64_t fc_fleet_beat_used(const struct fc_fleet_beat *b, uint32_t id, uint64_t w)
{
	size_t i;

	for (i = 0; i < b->nused; i++)
		if (b->used[i].id == id && b->used[i].window == w)
			return b->used[i].passed;
	return 0;
}

/* This node's value: {"no", "mode", "ts", "rounds", "p": {"ID": [w, passed]}}. */
static char *fc_beat_value(uint32_t no, const char *mode, uint64_t rounds, const struct fc_fleet_beat_pol *pols,
			   size_t npols, int64_t now)
{
	json_t *p = json_object(), *v;
	char id[16];
	char *s;
	size_t i;

	for (i = 0; i < npols; i++) {
		snprintf(id, sizeof(id), "%" PRIu32, pols[i].id);
		json_object_set_new(p, id, json_pack("[I, I]", (json_int_t)pols[i].window, (json_int_t)pols[i].passed));
	}
	v = json_pack("{s:I, s:s, s:I, s:I, s:o}", "no", (json_int_t)no, "mode", mode, "ts",
		      (json_int_t)(now / 1000000), "rounds", (json_int_t)rounds, "p", p);
	s = v ? json_dumps(v, JSON_COMPACT) : NULL;
	json_decref(v);
	return s;
}

/* Adds one node's passes to the fleet's (a hostile value: only integers
 * in range are taken). */
static void fc_beat_add(struct fc_fleet_beat *b, const json_t *p)
{
	const char *key;
	json_t *v;
	size_t i;

	json_object_foreach((json_t *)p, key, v)
	{
		char *end;
		unsigned long id = strtoul(key, &end, 10);
		json_int_t w = json_integer_value(json_array_get(v, 0)), n = json_integer_value(json_array_get(v, 1));

		if (*end || id > UINT32_MAX || json_array_size(v) != 2 || w < 0 || n < 0)
			continue;
		for (i = 0; i < b->nused; i++)
			if (b->used[i].id == id && b->used[i].window == (uint64_t)w)
				break;
		if (i == b->nused) {
			if (b->nused == FC_FLEET_BEAT_POLS)
				continue;
			b->used[b->nused++] = (struct fc_fleet_beat_pol){ .id = (uint32_t)id, .window = (uint64_t)w };
		}
		/* n < 2^63 each: a sum that would pass UINT64_MAX stays there */
		b->used[i].passed = b->used[i].passed > UINT64_MAX - (uint64_t)n ? UINT64_MAX :
										    b->used[i].passed + (uint64_t)n;
	}
}

/* The fleet's values from the reply's pairs (name, value); a value that
 * is not a node's as fc_beat_value writes it is left out, counted. */
static void fc_beat_read(struct fc_fleet_beat *b, const struct fc_redis_reply *rep, int64_t now)
{
	size_t i;

	b->nnodes = 0;
	b->nused = 0;
	for (i = 2; i + 1 < rep->len; i += 2) {
		json_t *v = json_loadb(rep->elem[i + 1]->str, rep->elem[i + 1]->len, 0, NULL);
		struct fc_fleet_status_node *n = &b->nodes[b->nnodes];
		json_t *ts = json_object_get(v, "ts");
		json_int_t no = json_integer_value(json_object_get(v, "no"));
		const char *mode = json_string_value(json_object_get(v, "mode"));

		/* ts bounded before it is subtracted: a hostile one overflows */
		if (!json_is_object(v) || no < 0 || no > FC_FLEET_NODE_MAX || !mode || !json_is_integer(ts) ||
		    json_integer_value(ts) < 0 || json_integer_value(ts) > FC_FLEET_BEAT_TS_MAX) {
			b->reply_errors++;
			json_decref(v);
			continue;
		}
		fc_beat_add(b, json_object_get(v, "p"));
		if (b->nnodes < FC_FLEET_BEAT_NODES) {
			*n = (struct fc_fleet_status_node){ .no = (uint32_t)no,
							    .age_ms = now / 1000000 - json_integer_value(ts) };
			fc_redis_escape(rep->elem[i]->str, rep->elem[i]->len, n->name, sizeof(n->name));
			fc_redis_escape(mode, strlen(mode), n->mode, sizeof(n->mode));
			b->nnodes++;
		}
		json_decref(v);
	}
}

/* A reply's string of 1 to max decimal digits, nothing else; -1 when not. */
static int64_t fc_beat_digits(const struct fc_redis_reply *e, size_t max)
{
	int64_t v = 0;
	size_t i;

	if (!e->len || e->len > max)
		return -1;
	for (i = 0; i < e->len; i++) {
		if (e->str[i] < '0' || e->str[i] > '9')
			return -1;
		v = v * 10 + (e->str[i] - '0');
	}
	return v;
}

int fc_fleet_beat_parse(struct fc_fleet_beat *b, const struct fc_redis_reply *rep, int64_t t0, int64_t t1,
			struct fc_err *err)
{
	char sec[24], usec[24];
	int64_t s, us;

	if (rep->len < 2 || rep->len % 2) {
		b->reply_errors++;
		return fc_err_set(err, "fleet: heartbeat: a reply of %zu elements, expected TIME's 2 and pairs",
				  rep->len);
	}
	/* TIME: seconds whose nanoseconds fit int64, microseconds of 6 digits */
	s = fc_beat_digits(rep->elem[0], 10);
	us = fc_beat_digits(rep->elem[1], 6);
	if (s <= 0 || s > FC_FLEET_BEAT_TIME_MAX_S || us < 0) {
		b->reply_errors++;
		fc_redis_escape(rep->elem[0]->str, rep->elem[0]->len, sec, sizeof(sec));
		fc_redis_escape(rep->elem[1]->str, rep->elem[1]->len, usec, sizeof(usec));
		return fc_err_set(err, "fleet: heartbeat: Redis TIME \"%s\" \"%s\" is not a time", sec, usec);
	}
	b->sample[b->next] = t0 + (t1 - t0) / 2 - (s * 1000000000LL + us * 1000);
	b->next = (b->next + 1) % FC_FLEET_BEAT_SAMPLES;
	b->nsamples += b->nsamples < FC_FLEET_BEAT_SAMPLES;
	fc_beat_read(b, rep, t1);
	return 0;
}

int fc_fleet_beat_run(struct fc_fleet_beat *b, struct fc_redis *r, const char *name, uint32_t no, const char *mode,
		      uint64_t rounds, const struct fc_fleet_beat_pol *pols, size_t npols, int64_t clock_ns,
		      struct fc_err *err)
{
	char key[FC_REDIS_PREFIX_MAX + 16];
	int64_t t0 = fc_beat_now(clock_ns), t1;
	char *value = fc_beat_value(no, mode, rounds, pols, npols, t0);
	const char *argv[6] = { "EVAL", fc_beat_lua, "1", key, name, value };
	static const char *const ping[1] = { "PING" };
	struct fc_redis_cmd cmd[1 + FC_FLEET_BEAT_PINGS] = {
		{ .argc = 6, .argv = argv, .key = 3, .want = FC_FLEET_BEAT_WANT }
	};
	uint16_t slots[FC_FLEET_BEAT_PINGS];
	size_t n = 1, i, ns;
	int rc = -1;

	if (!value)
		return fc_err_set(err, "fleet: heartbeat: out of memory");
	snprintf(key, sizeof(key), "%s{nodes}", fc_redis_prefix(r));
	/* A PING to every other primary: a failover (or a restart) of one
	 * that no key of this node needs now is followed within a heartbeat,
	 * and the keys that hold totals re-assert them there (design §7). */
	ns = fc_redis_primary_slots(r, slots, FC_FLEET_BEAT_PINGS);
	for (i = 0; i < ns && i < FC_FLEET_BEAT_PINGS; i++)
		if (fc_redis_node_of(r, key) != fc_redis_node_of_slot(r, slots[i]))
			cmd[n++] = (struct fc_redis_cmd){ .argc = 1,
							  .argv = ping,
							  .route_slot = slots[i],
							  .want = { .types = FC_REDIS_STATUS, .status = "PONG" } };
	b->pings = (unsigned)(n - 1);
	/* Only the script's own answer decides: a primary down is a key's
	 * failure when a key needs it, not the heartbeat's. */
	if (fc_redis_exec(r, cmd, n, err) && cmd[0].status != FC_REDIS_OK)
		goto out;
	t1 = fc_beat_now(clock_ns);
	if (fc_fleet_beat_parse(b, cmd[0].reply, t0, t1, err) < 0)
		goto out;
	b->reply_errors += fc_fleet_durable_check(&b->durable, r);
	rc = 0;
out:
	fc_redis_cmds_release(cmd, n);
	free(value);
	return rc;
}
