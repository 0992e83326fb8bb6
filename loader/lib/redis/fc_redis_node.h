/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * One Redis node and its connection, inside the client (fc_redis.c): a
 * non-blocking socket driven by the client's poll loop, AUTH first when
 * there is a password, then commands written as one pipeline and the
 * replies they owe read back in order. Private to loader/lib/redis.
 */
#ifndef FC_REDIS_NODE_H
#define FC_REDIS_NODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fc_redis_conf.h"
#include "fc_redis_reply.h"

enum fc_node_state {
	FC_NODE_IDLE,       /* no connection */
	FC_NODE_CONNECTING,
	FC_NODE_AUTH,       /* AUTH sent, its reply awaited */
	FC_NODE_READY,
};

/* A reply a node owes, in the order asked. */
enum fc_wait_kind { FC_WAIT_CMD, FC_WAIT_ASKING, FC_WAIT_AUTH, FC_WAIT_CALL };
struct fc_redis_wait {
	uint8_t kind;
	uint32_t cmd;   /* FC_WAIT_CMD: its index in the batch */
	uint64_t start; /* where its bytes start in the connection's stream */
};

struct fc_redis_node {
	struct fc_redis_addr addr;
	char name[FC_REDIS_ADDR_LEN];
	bool listed;    /* in the slot table (or the standalone server) */
	bool primary;
	bool seed;      /* one of the URLs: kept to ask for the table */
	bool down;      /* failed during this call: not tried again in it */
	unsigned slots; /* the table's slots it serves */
	unsigned replicas;  /* the table's replicas of it */
	uint32_t connects;  /* connections made to it: a new one may have lost what the last had */

	int fd;
	enum fc_node_state state;
	uint64_t connect_at, connect_by; /* microseconds, monotonic */
	struct fc_redis_reader rd;
	char *out;           /* bytes to send */
	size_t out_len, out_off, out_cap;
	bool out_secret;     /* out holds the password: wiped once sent */
	uint64_t queued;     /* bytes of this connection put in out */
	uint64_t sent;       /* and taken by the kernel */
	struct fc_redis_wait *wait;
	size_t wait_head, wait_len, wait_cap;

	/* What waits for the connection to be ready. */
	uint32_t *todo;      /* commands of the batch, in order */
	size_t todo_len, todo_cap;
	bool call;           /* an internal command (CLUSTER SLOTS) */
	struct fc_redis_reply *call_reply;
	char call_err[FC_ERR_LEN];
};

#endif /* FC_REDIS_NODE_H */
