// SPDX-License-Identifier: BSD-2-Clause
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "fc_redis_slot.h"

/* CRC16/XMODEM (polynomial 0x1021, initial value 0, no reflection), the
 * Cluster specification's, four bits at a time. */
uint16_t fc_redis_crc16(const void *buf, size_t len)
{
	static const uint16_t nibble[16] = {
		0x0000, 0x1021, 0x2042, 0x3063, 0x4084, 0x50a5, 0x60c6, 0x70e7,
		0x8108, 0x9129, 0xa14a, 0xb16b, 0xc18c, 0xd1ad, 0xe1ce, 0xf1ef,
	};
	const uint8_t *p = buf;
	uint16_t crc = 0;
	size_t i;

	for (i = 0; i < len; i++) {
		crc = (uint16_t)(crc << 4) ^ nibble[(crc >> 12) ^ (p[i] >> 4)];
		crc = (uint16_t)(crc << 4) ^ nibble[(crc >> 12) ^ (p[i] & 0x0f)];
	}
	return crc;
}

unsigned fc_redis_slot(const void *key, size_t len)
{
	const char *k = key, *open = memchr(k, '{', len), *close;

	if (open) {
		close = memchr(open + 1, '}', len - (size_t)(open + 1 - k));
		if (close && close > open + 1)
			return fc_redis_crc16(open + 1, (size_t)(close - open - 1)) & (FC_REDIS_SLOTS - 1);
	}
	return fc_redis_crc16(k, len) & (FC_REDIS_SLOTS - 1);
}

/* An endpoint a node may be reached at: a name, an IPv4 or an IPv6
 * address (no brackets). */
static bool fc_endpoint_ok(const char *s, size_t len)
{
	size_t i;

	if (!len || len > FC_REDIS_HOST_MAX)
		return false;
	for (i = 0; i < len; i++)
		if (!isalnum((unsigned char)s[i]) && !strchr("-._:", s[i]))
			return false;
	return true;
}

/* A decimal number in [s, s + len), at most max; -1 if not one. */
static long fc_number(const char *s, size_t len, long max)
{
	long v = 0;
	size_t i;

	if (!len || len > 6)
		return -1;
	for (i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		v = v * 10 + (s[i] - '0');
	}
	return v <= max ? v : -1;
}

int fc_redis_redirect_parse(const char *text, size_t len, struct fc_redis_redirect *out, struct fc_err *err)
{
	const char *p, *sp, *colon, *end = text + len;
	char shown[96];
	long slot, port;
	size_t hl;

	if (len >= 6 && !memcmp(text, "MOVED ", 6))
		out->ask = false, p = text + 6;
	else if (len >= 4 && !memcmp(text, "ASK ", 4))
		out->ask = true, p = text + 4;
	else
		return 0;
	fc_redis_escape(text, len, shown, sizeof(shown));
	sp = memchr(p, ' ', (size_t)(end - p));
	slot = sp ? fc_number(p, (size_t)(sp - p), FC_REDIS_SLOTS - 1) : -1;
	if (slot < 0)
		return fc_err_set(err, "\"%s\": expected a slot from 0 to %d", shown, FC_REDIS_SLOTS - 1);
	p = sp + 1;
	for (colon = end; colon > p && colon[-1] != ':'; colon--)
		;
	if (colon == p)
		return fc_err_set(err, "\"%s\": expected HOST:PORT after the slot", shown);
	port = fc_number(colon, (size_t)(end - colon), 65535);
	if (port < 1)
		return fc_err_set(err, "\"%s\": port must be 1-65535", shown);
	hl = (size_t)(colon - 1 - p);
	if (hl >= 2 && p[0] == '[' && p[hl - 1] == ']')
		p++, hl -= 2;
	if (hl && !fc_endpoint_ok(p, hl))
		return fc_err_set(err, "\"%s\": the host is not a name or an address", shown);
	out->slot = (unsigned)slot;
	out->to.port = (uint16_t)port;
	memcpy(out->to.host, p, hl);
	out->to.host[hl] = '\0';
	return 1;
}

/* A node of a range: [endpoint, port, id, metadata...]. 0 with *known
 * false for an endpoint the node does not know ("" or "?"). */
static int fc_map_node(const struct fc_redis_reply *n, const struct fc_redis_addr *asked, struct fc_redis_addr *a,
		       bool *known, struct fc_err *err)
{
	const struct fc_redis_reply *host, *port;

	if (n->type != FC_REDIS_ARRAY || n->len < 2)
		return fc_err_set(err, "a node is not an array [endpoint, port, ...]");
	host = n->elem[0];
	port = n->elem[1];
	if (port->type != FC_REDIS_INT || port->integer < 1 || port->integer > 65535)
		return fc_err_set(err, "a node's port is not a number from 1 to 65535");
	*known = true;
	a->port = (uint16_t)port->integer;
	if (host->type == FC_REDIS_NIL) { /* the endpoint we asked */
		memcpy(a->host, asked->host, sizeof(a->host));
		return 0;
	}
	if (host->type != FC_REDIS_STR)
		return fc_err_set(err, "a node's endpoint is not a string");
	if (!host->len || (host->len == 1 && host->str[0] == '?')) {
		*known = false;
		return 0;
	}
	if (!fc_endpoint_ok(host->str, host->len))
		return fc_err_set(err, "a node's endpoint is not a name or an address");
	memcpy(a->host, host->str, host->len + 1);
	return 0;
}

static bool fc_addr_eq(const struct fc_redis_addr *a, const struct fc_redis_addr *b)
{
	return a->port == b->port && !strcmp(a->host, b->host);
}

/* The shard of primary p, made when new; NULL with err when full. */
static struct fc_redis_shard *fc_map_shard(struct fc_redis_map *m, const struct fc_redis_addr *p, struct fc_err *err)
{
	unsigned i;

	for (i = 0; i < m->nshards; i++)
		if (fc_addr_eq(&m->shard[i].primary, p))
			return &m->shard[i];
	if (m->nshards == FC_REDIS_SHARDS_MAX) {
		fc_err_set(err, "more than %d primaries", FC_REDIS_SHARDS_MAX);
		return NULL;
	}
	memset(&m->shard[m->nshards], 0, sizeof(m->shard[0]));
	m->shard[m->nshards].primary = *p;
	return &m->shard[m->nshards++];
}

/* One range: [start, end, primary, replica...]. */
static int fc_map_range(const struct fc_redis_reply *e, const struct fc_redis_addr *asked, struct fc_redis_map *m,
			struct fc_err *err)
{
	struct fc_redis_addr a;
	struct fc_redis_shard *sh;
	long long lo, hi, s;
	unsigned j, k;
	bool known;

	if (e->type != FC_REDIS_ARRAY || e->len < 3)
		return fc_err_set(err, "a range is not an array [start, end, primary, replica...]");
	if (e->elem[0]->type != FC_REDIS_INT || e->elem[1]->type != FC_REDIS_INT)
		return fc_err_set(err, "a range's start and end are not integers");
	lo = e->elem[0]->integer;
	hi = e->elem[1]->integer;
	if (lo < 0 || hi >= FC_REDIS_SLOTS || lo > hi)
		return fc_err_set(err, "the range %lld-%lld is not within 0-%d", lo, hi, FC_REDIS_SLOTS - 1);
	if (fc_map_node(e->elem[2], asked, &a, &known, err) < 0)
		return -1;
	if (!known) /* no one to send these slots to */
		return 0;
	sh = fc_map_shard(m, &a, err);
	if (!sh)
		return -1;
	for (s = lo; s <= hi; s++) {
		if (m->slot[s] != FC_REDIS_NO_SHARD)
			return fc_err_set(err, "slot %lld is in two ranges", s);
		m->slot[s] = (uint16_t)(sh - m->shard);
	}
	sh->nslots += (unsigned)(hi - lo + 1);
	for (j = 3; j < e->len; j++) {
		if (fc_map_node(e->elem[j], asked, &a, &known, err) < 0)
			return -1;
		for (k = 0; k < sh->nreplicas && !fc_addr_eq(&sh->replicas[k], &a); k++)
			;
		if (known && k == sh->nreplicas && k < FC_REDIS_REPLICAS_MAX)
			sh->replicas[sh->nreplicas++] = a;
	}
	return 0;
}

int fc_redis_map_parse(const struct fc_redis_reply *r, const struct fc_redis_addr *asked, struct fc_redis_map *m,
		       struct fc_err *err)
{
	struct fc_err why;
	size_t i;

	memset(m->slot, 0xff, sizeof(m->slot));
	m->nshards = 0;
	if (r->type != FC_REDIS_ARRAY)
		return fc_err_set(err, "CLUSTER SLOTS: expected an array of ranges");
	for (i = 0; i < r->len; i++)
		if (fc_map_range(r->elem[i], asked, m, &why) < 0)
			return fc_err_set(err, "CLUSTER SLOTS: range %zu: %s", i + 1, why.msg);
	return 0;
}
