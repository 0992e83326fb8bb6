/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Redis replies, read as hostile input. libhiredis's reader parses the
 * protocol into our objects (its reply-object callbacks), which bound what
 * a reply may cost while it is read: FC_REDIS_ARRAY_MAX elements in an
 * array, FC_REDIS_REPLY_MAX bytes for a whole reply (its objects and its
 * unparsed bytes), nine levels of nesting (hiredis's own bound). Then each
 * reply is checked against what its command should get (struct
 * fc_redis_want) before anyone reads it.
 */
#ifndef FC_REDIS_REPLY_H
#define FC_REDIS_REPLY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fc_error.h"

#define FC_REDIS_ARRAY_MAX 65536u
#define FC_REDIS_REPLY_MAX (8u << 20)
#define FC_REDIS_STR_MAX   4096u /* a string's bytes unless a want says otherwise */

/* The types of a reply, as bits so that a want can accept several. */
enum fc_redis_type {
	FC_REDIS_NIL = 1 << 0,
	FC_REDIS_INT = 1 << 1,
	FC_REDIS_STR = 1 << 2,    /* a bulk string */
	FC_REDIS_STATUS = 1 << 3, /* "+OK" */
	FC_REDIS_ARRAY = 1 << 4,
	FC_REDIS_ERR = 1 << 5,    /* "-ERR ...": never wanted; fc_redis_exec tells it apart */
};

struct fc_redis_reply {
	enum fc_redis_type type;
	long long integer;            /* FC_REDIS_INT */
	size_t len;                   /* FC_REDIS_STR, STATUS, ERR: bytes; FC_REDIS_ARRAY: elements */
	struct fc_redis_reply **elem; /* FC_REDIS_ARRAY */
	char str[];                   /* FC_REDIS_STR, STATUS, ERR: len bytes and a NUL */
};

/* What a reply must be. Types not in types are refused; an array's
 * elements are of elem_types (never arrays: one level); bounds apply to an
 * array's length, to strings (the reply or its elements) and to integers
 * (the reply or its elements) when ranged. */
struct fc_redis_want {
	unsigned types;
	unsigned elem_types;
	uint32_t min_n, max_n;    /* an array's elements; max_n 0: FC_REDIS_ARRAY_MAX */
	uint32_t max_len;         /* a string's bytes; 0: FC_REDIS_STR_MAX */
	bool ranged;
	long long imin, imax;     /* integers, when ranged */
	const char *status;       /* a status must be this ("OK"); NULL: any */
};

#define FC_REDIS_WANT_INT         ((struct fc_redis_want){ .types = FC_REDIS_INT })
#define FC_REDIS_WANT_OK          ((struct fc_redis_want){ .types = FC_REDIS_STATUS, .status = "OK" })
#define FC_REDIS_WANT_STR(max)    ((struct fc_redis_want){ .types = FC_REDIS_STR | FC_REDIS_NIL, .max_len = (max) })
#define FC_REDIS_WANT_INTS(n)     ((struct fc_redis_want){ .types = FC_REDIS_ARRAY, .elem_types = FC_REDIS_INT, \
							   .min_n = (n), .max_n = (n) })

/* A reader of one connection's replies. */
struct redisReader;
struct fc_redis_reader {
	struct redisReader *r;
	size_t cost;         /* of the reply being read */
	char why[96];        /* why the reader refused it, or "" */
};

int fc_redis_reader_init(struct fc_redis_reader *rd, struct fc_err *err);
void fc_redis_reader_free(struct fc_redis_reader *rd);
int fc_redis_reader_feed(struct fc_redis_reader *rd, const void *buf, size_t len, struct fc_err *err);
/* The next whole reply (*out NULL: none yet), or -1 with err when the
 * bytes are not the protocol or break a bound: the connection is unusable. */
int fc_redis_reader_next(struct fc_redis_reader *rd, struct fc_redis_reply **out, struct fc_err *err);

void fc_redis_reply_free(struct fc_redis_reply *r);

/* Whether r is what w asks for: 0, or -1 with err saying what was expected
 * and what came ("expected an integer, got a bulk string of 12 bytes"). */
int fc_redis_reply_check(const struct fc_redis_reply *r, const struct fc_redis_want *w, struct fc_err *err);
/* r in a few words: "an integer (5)", "an array of 3", "an error (NOSCRIPT ...)". */
void fc_redis_reply_describe(const struct fc_redis_reply *r, char *out, size_t outlen);

/* Bytes from a hostile source (a reply, a key) as printable text: quotes,
 * backslashes and other bytes as \xNN, cut with "..." to fit outlen.
 * Returns the length written. */
size_t fc_redis_escape(const void *s, size_t len, char *out, size_t outlen);

#endif /* FC_REDIS_REPLY_H */
