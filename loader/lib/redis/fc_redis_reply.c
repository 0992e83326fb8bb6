// SPDX-License-Identifier: BSD-2-Clause
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fc_hiredis.h"
#include "fc_redis_reply.h"

_Static_assert(offsetof(struct fc_redis_reply, str) % _Alignof(struct fc_redis_reply *) == 0,
	       "an array's element pointers follow the reply");

/* ---- objects made by hiredis's reader, within the reader's bounds ---- */

/* A new object of type for task t, with extra bytes after it; linked into
 * its parent array. NULL (the reader then fails with "Out of memory", and
 * rd->why says what it was) when the reply would cost too much. */
static struct fc_redis_reply *fc_obj_new(const redisReadTask *t, enum fc_redis_type type, size_t extra)
{
	struct fc_redis_reader *rd = t->privdata;
	struct fc_redis_reply *o, *parent = t->parent ? t->parent->obj : NULL;
	size_t cost = sizeof(*o) + extra;

	if (rd->why[0])
		return NULL;
	if (cost > FC_REDIS_REPLY_MAX - rd->cost) {
		snprintf(rd->why, sizeof(rd->why), "a reply of more than %u bytes", FC_REDIS_REPLY_MAX);
		return NULL;
	}
	if (parent && (t->idx < 0 || (size_t)t->idx >= parent->len)) {
		snprintf(rd->why, sizeof(rd->why), "an element out of its array");
		return NULL;
	}
	o = calloc(1, cost);
	if (!o) {
		snprintf(rd->why, sizeof(rd->why), "out of memory");
		return NULL;
	}
	rd->cost += cost;
	o->type = type;
	if (parent)
		parent->elem[t->idx] = o;
	return o;
}

static void *fc_obj_string(const redisReadTask *t, char *s, size_t len)
{
	enum fc_redis_type type = t->type == REDIS_REPLY_STATUS ? FC_REDIS_STATUS :
				  t->type == REDIS_REPLY_ERROR	? FC_REDIS_ERR :
								  FC_REDIS_STR;
	struct fc_redis_reply *o;

	if (len >= FC_REDIS_REPLY_MAX) {
		snprintf(((struct fc_redis_reader *)t->privdata)->why, sizeof(((struct fc_redis_reader *)t->privdata)->why),
			 "a string of more than %u bytes", FC_REDIS_REPLY_MAX);
		return NULL;
	}
	o = fc_obj_new(t, type, len + 1);
	if (o) {
		memcpy(o->str, s, len);
		o->str[len] = '\0';
		o->len = len;
	}
	return o;
}

static void *fc_obj_array(const redisReadTask *t, int n)
{
	struct fc_redis_reader *rd = t->privdata;
	struct fc_redis_reply *o;

	if (n < 0 || (unsigned)n > FC_REDIS_ARRAY_MAX) {
		snprintf(rd->why, sizeof(rd->why), "an array of %d elements (at most %u)", n, FC_REDIS_ARRAY_MAX);
		return NULL;
	}
	o = fc_obj_new(t, FC_REDIS_ARRAY, (size_t)n * sizeof(o->elem[0]));
	if (o) {
		o->len = (size_t)n;
		o->elem = (struct fc_redis_reply **)(void *)o->str;
	}
	return o;
}

static void *fc_obj_integer(const redisReadTask *t, long long v)
{
	struct fc_redis_reply *o = fc_obj_new(t, FC_REDIS_INT, 0);

	if (o)
		o->integer = v;
	return o;
}

static void *fc_obj_nil(const redisReadTask *t)
{
	return fc_obj_new(t, FC_REDIS_NIL, 0);
}

void fc_redis_reply_free(struct fc_redis_reply *r)
{
	size_t i;

	if (!r)
		return;
	if (r->type == FC_REDIS_ARRAY)
		for (i = 0; i < r->len; i++)
			fc_redis_reply_free(r->elem[i]);
	free(r);
}

static void fc_obj_free(void *o)
{
	fc_redis_reply_free(o);
}

static redisReplyObjectFunctions fc_redis_objs = {
	.createString = fc_obj_string,
	.createArray = fc_obj_array,
	.createInteger = fc_obj_integer,
	.createNil = fc_obj_nil,
	.freeObject = fc_obj_free,
};

/* ---- the reader ---- */

int fc_redis_reader_init(struct fc_redis_reader *rd, struct fc_err *err)
{
	memset(rd, 0, sizeof(*rd));
	if (fc_hiredis_load(err) < 0)
		return -1;
	rd->r = fc_hiredis.redisReaderCreateWithFunctions(&fc_redis_objs);
	if (!rd->r)
		return fc_err_set(err, "out of memory");
	rd->r->privdata = rd;
	return 0;
}

void fc_redis_reader_free(struct fc_redis_reader *rd)
{
	if (rd->r)
		fc_hiredis.redisReaderFree(rd->r);
	rd->r = NULL;
}

int fc_redis_reader_feed(struct fc_redis_reader *rd, const void *buf, size_t len, struct fc_err *err)
{
	if (fc_hiredis.redisReaderFeed(rd->r, buf, len) != REDIS_OK)
		return fc_err_set(err, "%s", rd->why[0] ? rd->why : rd->r->errstr);
	return 0;
}

int fc_redis_reader_next(struct fc_redis_reader *rd, struct fc_redis_reply **out, struct fc_err *err)
{
	void *obj = NULL;

	*out = NULL;
	if (fc_hiredis.redisReaderGetReply(rd->r, &obj) != REDIS_OK)
		return fc_err_set(err, "%s", rd->why[0] ? rd->why : rd->r->errstr);
	if (obj) {
		rd->cost = 0;
		*out = obj;
		return 0;
	}
	/* A reply still incomplete: what is buffered of it counts too (a
	 * string is made only once all its bytes are in). */
	if (rd->r->len - rd->r->pos > FC_REDIS_REPLY_MAX - rd->cost)
		return fc_err_set(err, "a reply of more than %u bytes", FC_REDIS_REPLY_MAX);
	return 0;
}

/* ---- text ---- */

size_t fc_redis_escape(const void *s, size_t len, char *out, size_t outlen)
{
	const unsigned char *p = s;
	size_t i, o = 0;

	if (!outlen)
		return 0;
	for (i = 0; i < len; i++) {
		bool plain = isprint(p[i]) && p[i] != '"' && p[i] != '\\';
		size_t w = plain ? 1 : 4;

		/* Room for this byte, and for "..." if more follow. */
		if (o + w + (i + 1 < len ? 3 : 0) + 1 > outlen) {
			if (o + 4 <= outlen) {
				memcpy(out + o, "...", 3);
				o += 3;
			}
			break;
		}
		if (plain)
			out[o++] = (char)p[i];
		else
			o += (size_t)snprintf(out + o, outlen - o, "\\x%02x", p[i]);
	}
	out[o] = '\0';
	return o;
}

void fc_redis_reply_describe(const struct fc_redis_reply *r, char *out, size_t outlen)
{
	char text[80];

	switch (r->type) {
	case FC_REDIS_NIL:
		snprintf(out, outlen, "nil");
		break;
	case FC_REDIS_INT:
		snprintf(out, outlen, "an integer (%lld)", r->integer);
		break;
	case FC_REDIS_ARRAY:
		snprintf(out, outlen, "an array of %zu", r->len);
		break;
	default:
		fc_redis_escape(r->str, r->len, text, sizeof(text));
		if (r->type == FC_REDIS_STR)
			snprintf(out, outlen, "a bulk string of %zu bytes (\"%s\")", r->len, text);
		else
			snprintf(out, outlen, "%s (\"%s\")", r->type == FC_REDIS_ERR ? "an error" : "a status", text);
	}
}

/* What types ask for, in words: "an integer or nil". */
static void fc_types_describe(unsigned types, bool plural, char *out, size_t outlen)
{
	static const struct {
		unsigned type;
		const char *one, *many;
	} names[] = {
		{ FC_REDIS_INT, "an integer", "integers" }, { FC_REDIS_STR, "a bulk string", "bulk strings" },
		{ FC_REDIS_STATUS, "a status", "statuses" }, { FC_REDIS_ARRAY, "an array", "arrays" },
		{ FC_REDIS_NIL, "nil", "nils" },
	};
	size_t i, o = 0;

	out[0] = '\0';
	for (i = 0; i < sizeof(names) / sizeof(names[0]) && o < outlen; i++)
		if (types & names[i].type)
			o += (size_t)snprintf(out + o, outlen - o, "%s%s", o ? " or " : "",
					      plural ? names[i].many : names[i].one);
	if (!o)
		snprintf(out, outlen, "nothing");
}

/* One scalar (the reply, or an element) against the want's bounds. */
static int fc_scalar_check(const struct fc_redis_reply *r, unsigned types, const struct fc_redis_want *w,
			   const char *where, struct fc_err *err)
{
	uint32_t max_len = w->max_len ? w->max_len : FC_REDIS_STR_MAX;
	char got[96], want[96];

	fc_redis_reply_describe(r, got, sizeof(got));
	if (!(r->type & types)) {
		fc_types_describe(types, false, want, sizeof(want));
		return fc_err_set(err, "%sexpected %s, got %s", where, want, got);
	}
	if (r->type == FC_REDIS_INT && w->ranged && (r->integer < w->imin || r->integer > w->imax))
		return fc_err_set(err, "%sexpected an integer from %lld to %lld, got %lld", where, w->imin, w->imax,
				  r->integer);
	if ((r->type == FC_REDIS_STR || r->type == FC_REDIS_STATUS) && r->len > max_len)
		return fc_err_set(err, "%sexpected a string of at most %u bytes, got %s", where, max_len, got);
	if (r->type == FC_REDIS_STATUS && w->status && strcmp(r->str, w->status))
		return fc_err_set(err, "%sexpected the status \"%s\", got %s", where, w->status, got);
	return 0;
}

int fc_redis_reply_check(const struct fc_redis_reply *r, const struct fc_redis_want *w, struct fc_err *err)
{
	uint32_t max_n = w->max_n ? w->max_n : FC_REDIS_ARRAY_MAX;
	char where[32], want[96];
	size_t i;

	if (r->type != FC_REDIS_ARRAY || !(w->types & FC_REDIS_ARRAY))
		return fc_scalar_check(r, w->types, w, "", err);
	if (r->len < w->min_n || r->len > max_n) {
		fc_types_describe(w->elem_types, true, want, sizeof(want));
		if (w->min_n == max_n)
			return fc_err_set(err, "expected an array of %u %s, got an array of %zu", max_n, want, r->len);
		return fc_err_set(err, "expected an array of %u to %u %s, got an array of %zu", w->min_n, max_n, want,
				  r->len);
	}
	for (i = 0; i < r->len; i++) {
		snprintf(where, sizeof(where), "element %zu: ", i + 1);
		if (fc_scalar_check(r->elem[i], w->elem_types & ~(unsigned)FC_REDIS_ARRAY, w, where, err) < 0)
			return -1;
	}
	return 0;
}
