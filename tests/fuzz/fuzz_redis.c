// SPDX-License-Identifier: BSD-2-Clause
/*
 * What a Redis server (or anyone on its path) sends the agent: bytes read
 * through libhiredis's reader into the client's bounded reply objects
 * (loader/lib/redis/fc_redis_reply.c), each reply checked against what
 * commands expect, read as a CLUSTER SLOTS table and as a MOVED/ASK; and
 * what an operator writes: the --redis URLs. Properties, besides not
 * crashing or leaking: a reply that passes a check is of the shape asked
 * for; a table names only shards it has, with ports in 1-65535 and hosts
 * that are hosts, and counts its slots right; a redirection names a slot
 * and a port in range; a key's slot is the CRC16 of its hash tag, as a
 * plain bit-by-bit CRC computes it; a printed URL with a userinfo hides
 * it.
 *
 * The first byte picks: 0 replies (the rest fed to the reader in pieces
 * whose sizes the next byte sets), 1 a redirection's text, 2 URLs, 3 a key.
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "fc_fuzz.h"
#include "fc_redis.h"
#include "fc_redis_slot.h"

static struct fc_redis_map map;

/* CRC16/XMODEM a bit at a time: the reference. */
static uint16_t crc16_bits(const uint8_t *p, size_t len)
{
	uint16_t crc = 0;
	size_t i;
	int b;

	for (i = 0; i < len; i++) {
		crc ^= (uint16_t)(p[i] << 8);
		for (b = 0; b < 8; b++)
			crc = crc & 0x8000 ? (uint16_t)(crc << 1) ^ 0x1021 : (uint16_t)(crc << 1);
	}
	return crc;
}

static void host_ok(const struct fc_redis_addr *a, const char *what)
{
	size_t i, len = strnlen(a->host, sizeof(a->host));

	if (!len || len == sizeof(a->host) || !a->port)
		fc_fuzz_fail("%s: an empty or unterminated host, or port 0", what);
	for (i = 0; i < len; i++)
		if (!isalnum((unsigned char)a->host[i]) && !strchr("-._:", a->host[i]))
			fc_fuzz_fail("%s: host \"%s\" has a byte 0x%02x", what, a->host, (unsigned char)a->host[i]);
}

static void map_check(const struct fc_redis_reply *r)
{
	static const struct fc_redis_addr asked = { .host = "10.0.0.9", .port = 7000 };
	unsigned counted[FC_REDIS_SHARDS_MAX] = { 0 }, i, j;
	struct fc_err err;

	if (fc_redis_map_parse(r, &asked, &map, &err) < 0)
		return;
	if (map.nshards > FC_REDIS_SHARDS_MAX)
		fc_fuzz_fail("CLUSTER SLOTS: %u shards", map.nshards);
	for (i = 0; i < FC_REDIS_SLOTS; i++) {
		if (map.slot[i] == FC_REDIS_NO_SHARD)
			continue;
		if (map.slot[i] >= map.nshards)
			fc_fuzz_fail("CLUSTER SLOTS: slot %u names shard %u of %u", i, map.slot[i], map.nshards);
		counted[map.slot[i]]++;
	}
	for (i = 0; i < map.nshards; i++) {
		if (counted[i] != map.shard[i].nslots || !counted[i])
			fc_fuzz_fail("CLUSTER SLOTS: shard %u says %u slots, has %u", i, map.shard[i].nslots, counted[i]);
		host_ok(&map.shard[i].primary, "CLUSTER SLOTS primary");
		if (map.shard[i].nreplicas > FC_REDIS_REPLICAS_MAX)
			fc_fuzz_fail("CLUSTER SLOTS: %u replicas", map.shard[i].nreplicas);
		for (j = 0; j < map.shard[i].nreplicas; j++)
			host_ok(&map.shard[i].replicas[j], "CLUSTER SLOTS replica");
	}
}

static void redirect_check(const char *text, size_t len)
{
	struct fc_redis_redirect to;
	struct fc_err err;

	if (fc_redis_redirect_parse(text, len, &to, &err) != 1)
		return;
	if (to.slot >= FC_REDIS_SLOTS || !to.to.port)
		fc_fuzz_fail("redirection \"%.*s\": slot %u, port %u", (int)len, text, to.slot, to.to.port);
	if (to.to.host[0])
		host_ok(&to.to, "redirection");
}

/* A reply against a few wants; one that passes is what it asked for. */
static void reply_check(const struct fc_redis_reply *r)
{
	static const struct fc_redis_want mixed = {
		.types = FC_REDIS_ARRAY | FC_REDIS_NIL, .elem_types = FC_REDIS_INT | FC_REDIS_STR | FC_REDIS_NIL,
		.min_n = 1, .max_n = 8, .max_len = 8, .ranged = true, .imin = -5, .imax = 5,
	};
	const struct fc_redis_want wants[] = { FC_REDIS_WANT_INT, FC_REDIS_WANT_OK, FC_REDIS_WANT_STR(16),
					       FC_REDIS_WANT_INTS(3), mixed };
	char text[200];
	struct fc_err err;
	size_t i, k;

	fc_redis_reply_describe(r, text, sizeof(text));
	if (strnlen(text, sizeof(text)) == sizeof(text))
		fc_fuzz_fail("describe: unterminated");
	for (k = 0; k < sizeof(wants) / sizeof(wants[0]); k++) {
		if (fc_redis_reply_check(r, &wants[k], &err) < 0)
			continue;
		if (!(r->type & wants[k].types))
			fc_fuzz_fail("want %zu: passed a reply of type %d", k, r->type);
		if (k == 1 && strcmp(r->str, "OK"))
			fc_fuzz_fail("WANT_OK passed \"%s\"", r->str);
		if (k == 2 && r->type == FC_REDIS_STR && r->len > 16)
			fc_fuzz_fail("WANT_STR(16) passed %zu bytes", r->len);
		if (r->type != FC_REDIS_ARRAY)
			continue;
		if (r->len < wants[k].min_n || r->len > wants[k].max_n)
			fc_fuzz_fail("want %zu: passed an array of %zu", k, r->len);
		for (i = 0; i < r->len; i++)
			if (!(r->elem[i]->type & wants[k].elem_types) ||
			    (r->elem[i]->type == FC_REDIS_INT && wants[k].ranged &&
			     (r->elem[i]->integer < wants[k].imin || r->elem[i]->integer > wants[k].imax)) ||
			    (r->elem[i]->type == FC_REDIS_STR && r->elem[i]->len > wants[k].max_len))
				fc_fuzz_fail("want %zu: passed element %zu", k, i);
	}
	map_check(r);
	if (r->type == FC_REDIS_ERR)
		redirect_check(r->str, r->len);
}

static void replies(const uint8_t *p, size_t n)
{
	struct fc_redis_reader rd;
	struct fc_redis_reply *r;
	struct fc_err err;
	size_t piece = n ? p[0] % 16 + 1 : 1, o = 1;

	if (fc_redis_reader_init(&rd, &err) < 0)
		fc_fuzz_fail("reader: %s", err.msg);
	while (o < n) {
		size_t len = n - o < piece ? n - o : piece;

		if (fc_redis_reader_feed(&rd, p + o, len, &err) < 0)
			break;
		o += len;
		for (;;) {
			if (fc_redis_reader_next(&rd, &r, &err) < 0)
				goto out;
			if (!r)
				break;
			reply_check(r);
			fc_redis_reply_free(r);
		}
	}
out:
	fc_redis_reader_free(&rd);
}

static void urls(const char *s)
{
	struct fc_redis_conf c;
	struct fc_err err;
	char shown[160];
	const char *at = strrchr(s, '@'), *scheme = strstr(s, "://");

	fc_redis_conf_init(&c);
	fc_redis_conf_urls(&c, s, &err);
	if (strnlen(err.msg, sizeof(err.msg)) == sizeof(err.msg))
		fc_fuzz_fail("URLs: an unterminated message");
	fc_redis_url_redact(s, shown, sizeof(shown));
	if (strnlen(shown, sizeof(shown)) == sizeof(shown))
		fc_fuzz_fail("redact: unterminated");
	/* A userinfo, however written, is hidden (when it fits). */
	if (at && (!scheme || at > scheme + 3) && strlen(s) < 40 && !strstr(shown, "***"))
		fc_fuzz_fail("\"%s\" printed as \"%s\"", s, shown);
	fc_redis_conf_wipe(&c);
}

static void key(const uint8_t *p, size_t n)
{
	const uint8_t *open = memchr(p, '{', n), *close = open ? memchr(open + 1, '}', n - (size_t)(open + 1 - p)) : NULL;
	unsigned want = close && close > open + 1 ? crc16_bits(open + 1, (size_t)(close - open - 1)) & 16383 :
						    crc16_bits(p, n) & 16383;

	if (fc_redis_crc16(p, n) != crc16_bits(p, n))
		fc_fuzz_fail("CRC16 of %zu bytes: %04x, bit by bit %04x", n, fc_redis_crc16(p, n), crc16_bits(p, n));
	if (fc_redis_slot(p, n) != want)
		fc_fuzz_fail("slot of %zu bytes: %u, want %u", n, fc_redis_slot(p, n), want);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s;

	if (size < 1 || size > 65536)
		return -1;
	switch (data[0] % 4) {
	case 0:
		replies(data + 1, size - 1);
		break;
	case 1:
		redirect_check((const char *)data + 1, size - 1);
		break;
	case 2:
		s = malloc(size);
		if (!s)
			return 0;
		memcpy(s, data + 1, size - 1);
		s[size - 1] = '\0';
		urls(s);
		free(s);
		break;
	default:
		key(data + 1, size - 1);
	}
	return 0;
}
