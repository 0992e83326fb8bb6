// SPDX-License-Identifier: BSD-2-Clause
/*
 * What the fleet reads from Redis, as hostile input: the script's replies
 * and the demand channel's messages; and the records' names they refer to.
 * A reply or a message either checks in full or is refused whole, with a
 * message saying what was expected and what came.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "fc_fleet_redis.h"

int fc_fleet_rec_name(const struct fc_fleet_rec *rec, const char *prefix, char *out, size_t outlen, struct fc_err *err)
{
	int len;

	len = snprintf(out, outlen, "%s{%" PRIu32 ".%" PRIu32 ".%016" PRIx64 "}:%c%" PRIu64 ".%" PRIu64, prefix,
		       rec->id, rec->epoch, rec->kid, rec->kind, rec->unit, rec->w);
	if (len < 0 || (size_t)len >= outlen || (size_t)len >= FC_FLEET_NAME_MAX)
		return fc_err_set(err,
				  "fleet record of policy %" PRIu32 ": the name is longer than %u bytes "
				  "(--redis-prefix \"%s\" too long?)",
				  rec->id, FC_FLEET_NAME_MAX - 1, prefix);
	return len;
}

/* ---- demand messages ---- */

/* A canonical decimal at *p, before end: no sign, no leading zero, at most
 * max. Advances *p; -1 when there is none or it is out of range. */
static int fc_dec(const char **p, const char *end, uint64_t max, uint64_t *out)
{
	const char *s = *p;
	uint64_t v = 0;

	if (s >= end || *s < '0' || *s > '9' || (*s == '0' && s + 1 < end && s[1] >= '0' && s[1] <= '9'))
		return -1;
	for (; s < end && *s >= '0' && *s <= '9'; s++) {
		if (v > (max - (uint64_t)(*s - '0')) / 10)
			return -1;
		v = v * 10 + (uint64_t)(*s - '0');
	}
	*p = s;
	*out = v;
	return 0;
}

/* Exactly 16 lower-case hex digits. */
static int fc_hex16(const char **p, const char *end, uint64_t *out)
{
	const char *s = *p;
	uint64_t v = 0;
	int i;

	if (end - s < 16)
		return -1;
	for (i = 0; i < 16; i++, s++) {
		if (*s >= '0' && *s <= '9')
			v = v << 4 | (uint64_t)(*s - '0');
		else if (*s >= 'a' && *s <= 'f')
			v = v << 4 | (uint64_t)(*s - 'a' + 10);
		else
			return -1;
	}
	*p = s;
	*out = v;
	return 0;
}

static int fc_lit(const char **p, const char *end, char c)
{
	if (*p >= end || **p != c)
		return -1;
	(*p)++;
	return 0;
}

int fc_fleet_demand_parse(const void *msg, size_t len, const char *prefix, struct fc_fleet_demand *out,
			  struct fc_err *err)
{
	const char *p = msg, *end = p + len;
	size_t plen = strlen(prefix);
	uint64_t id, epoch, no;
	char shown[96];

	memset(out, 0, sizeof(*out));
	if (len > FC_FLEET_NAME_MAX + 8)
		goto bad;
	if (len < plen || memcmp(p, prefix, plen))
		goto bad;
	p += plen;
	if (fc_lit(&p, end, '{') || fc_dec(&p, end, UINT32_MAX, &id) || fc_lit(&p, end, '.') ||
	    fc_dec(&p, end, UINT32_MAX, &epoch) || fc_lit(&p, end, '.') || fc_hex16(&p, end, &out->rec.kid) ||
	    fc_lit(&p, end, '}') || fc_lit(&p, end, ':'))
		goto bad;
	if (p >= end || (*p != FC_FLEET_REC_WINDOW && *p != FC_FLEET_REC_POOL))
		goto bad;
	out->rec.kind = *p++;
	if (fc_dec(&p, end, UINT64_MAX, &out->rec.unit) || !out->rec.unit || fc_lit(&p, end, '.') ||
	    fc_dec(&p, end, UINT64_MAX, &out->rec.w) || fc_lit(&p, end, ' ') ||
	    fc_dec(&p, end, FC_FLEET_NODE_MAX, &no) || !no || p != end)
		goto bad;
	out->rec.id = (uint32_t)id;
	out->rec.epoch = (uint32_t)epoch;
	out->no = (uint32_t)no;
	return 0;
bad:
	fc_redis_escape(msg, len, shown, sizeof(shown));
	memset(out, 0, sizeof(*out));
	return fc_err_set(err,
			  "fleet demand message \"%s\": expected \"%s{ID.EPOCH.KID16}:wUNIT.W NODE\" "
			  "(or :lMS.W), NODE 1-%u",
			  shown, prefix, FC_FLEET_NODE_MAX);
}

/* ---- the script's replies ---- */

static int fc_fleet_reply_bad(const struct fc_redis_reply *rep, const char *what, struct fc_err *err)
{
	char got[120];

	fc_redis_reply_describe(rep, got, sizeof(got));
	return fc_err_set(err, "fleet script reply: %s, got %s", what, got);
}

int fc_fleet_reply_parse(const struct fc_redis_reply *rep, const struct fc_fleet_expect *x, struct fc_fleet_result *out,
			 struct fc_err *err)
{
	long long v[7];
	size_t i;

	memset(out, 0, sizeof(*out));
	if (rep->type != FC_REDIS_ARRAY || (rep->len != 7 && rep->len != 2))
		return fc_fleet_reply_bad(rep, "expected 7 integers (or -1 and n)", err);
	for (i = 0; i < rep->len; i++) {
		if (!rep->elem[i] || rep->elem[i]->type != FC_REDIS_INT)
			return fc_fleet_reply_bad(rep, "expected 7 integers (or -1 and n)", err);
		v[i] = rep->elem[i]->integer;
	}
	if (rep->len == 2) {
		if (v[0] != -1 || v[1] < 0)
			return fc_fleet_reply_bad(rep, "expected -1 and the record's n", err);
		out->status = FC_FLEET_R_OTHER_SET;
		out->n = (uint64_t)v[1];
		return 0;
	}
	/* Credit can go round (released, granted, released again), so the
	 * totals are not bounded by N*; what is: what is out beyond the shares,
	 * G − R ≤ N* − n, and what came back, R − G ≤ n ≤ N*. */
	for (i = 0; i < 4; i++)
		if (v[i] < 0 || v[i] > FC_FLEET_TOTAL_MAX)
			return fc_err_set(err, "fleet script reply: total %zu is %lld, outside 0-%lld", i, v[i],
					  FC_FLEET_TOTAL_MAX);
	if (v[2] - v[3] > (long long)x->nstar || v[3] - v[2] > (long long)x->nstar)
		return fc_err_set(err, "fleet script reply: G %lld and R %lld are more than N* %" PRIu64 " apart", v[2],
				  v[3], x->nstar);
	if ((v[6] != 0 && v[6] != 1) || v[5] < 0 || v[5] > FC_FLEET_NODE_MAX || v[4] < -(long long)x->nstar ||
	    v[4] > (long long)x->nstar)
		return fc_err_set(err,
				  "fleet script reply: free %lld, holders %lld or frozen %lld out of range "
				  "(N* %" PRIu64 ")",
				  v[4], v[5], v[6], x->nstar);
	if (v[0] > v[2] || v[1] > v[3])
		return fc_err_set(err,
				  "fleet script reply: this node's g %lld or r %lld above the record's "
				  "G %lld or R %lld",
				  v[0], v[1], v[2], v[3]);
	if (!x->adopt && !v[6] && (uint64_t)v[0] < x->g_app)
		return fc_err_set(err, "fleet script reply: g %lld below the %" PRIu64 " applied, and not frozen", v[0],
				  x->g_app);
	out->status = FC_FLEET_R_DONE;
	out->g = (uint64_t)v[0];
	out->r = (uint64_t)v[1];
	out->G = (uint64_t)v[2];
	out->R = (uint64_t)v[3];
	out->free = v[4];
	out->holders = (uint32_t)v[5];
	out->frozen = v[6];
	return 0;
}
