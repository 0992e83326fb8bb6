/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Redis Cluster's keyspace, as its specification defines it: a key's hash
 * slot (CRC16/XMODEM of the key, or of its hash tag "{...}", modulo 16384);
 * the slot table CLUSTER SLOTS answers; the MOVED and ASK redirections.
 * Pure functions over replies that were read as hostile (fc_redis_reply.h):
 * anything out of range is an error, never followed.
 */
#ifndef FC_REDIS_SLOT_H
#define FC_REDIS_SLOT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fc_error.h"
#include "fc_redis_conf.h"
#include "fc_redis_reply.h"

#define FC_REDIS_SLOTS        16384
#define FC_REDIS_SHARDS_MAX   256 /* primaries in one table */
#define FC_REDIS_REPLICAS_MAX 4   /* replicas kept per primary (more are ignored) */
#define FC_REDIS_NO_SHARD     0xffff

uint16_t fc_redis_crc16(const void *buf, size_t len);
/* The slot of a key: of its hash tag when it has one (the bytes between
 * the first '{' and the first '}' after it, if there are any). */
unsigned fc_redis_slot(const void *key, size_t len);

/* "MOVED 3999 127.0.0.1:6381", "ASK 3999 127.0.0.1:6381". An empty host
 * (":6381") means the host of the node that answered. */
struct fc_redis_redirect {
	bool ask;
	unsigned slot;
	struct fc_redis_addr to;
};

/* 1: err_text (an error reply's text) is a redirection, now in *out; 0: it
 * is not one; -1: it claims to be one and is malformed (err says how). */
int fc_redis_redirect_parse(const char *text, size_t len, struct fc_redis_redirect *out, struct fc_err *err);

/* A primary and its replicas. */
struct fc_redis_shard {
	struct fc_redis_addr primary;
	struct fc_redis_addr replicas[FC_REDIS_REPLICAS_MAX];
	unsigned nreplicas;
	unsigned nslots;
};

struct fc_redis_map {
	uint16_t slot[FC_REDIS_SLOTS]; /* a shard's index, or FC_REDIS_NO_SHARD */
	struct fc_redis_shard shard[FC_REDIS_SHARDS_MAX];
	unsigned nshards;
};

/* The table from CLUSTER SLOTS's reply, asked of the node at asked (whose
 * host stands for a NULL endpoint). A range whose primary's address is
 * unknown ("" or "?") is left without a node. Slots out of range, ranges
 * that overlap, a port out of 1-65535, a host that is no host: -1 with err. */
int fc_redis_map_parse(const struct fc_redis_reply *r, const struct fc_redis_addr *asked, struct fc_redis_map *m,
		       struct fc_err *err);

#endif /* FC_REDIS_SLOT_H */
