/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The agent's Redis client: standalone Redis or a Redis Cluster behind the
 * same redis:// URLs, the mode detected (CLUSTER SLOTS). One call sends a
 * batch of commands, one pipeline per primary, each command routed by its
 * key's hash slot; MOVED, ASK and TRYAGAIN are retried in a further pipeline
 * to the node named, a bounded number of times; a lost connection, a
 * CLUSTERDOWN or a failover makes the next call load the slot table afresh.
 * A call never takes longer than conf.timeout_ms: the agent's loop must not
 * wait on Redis.
 *
 * Replies are hostile input: each command says what its reply must be (a
 * struct fc_redis_want) and gets it typed and checked, or an error naming
 * the command and what was expected; a reply's size is bounded while it is
 * read (fc_redis_reply.h).
 *
 * Hosts are resolved when a connection is made: an address at once, a
 * name by the system's resolver, which may wait longer than the call's
 * deadline; give addresses where that matters.
 *
 * libhiredis (0.14: no TLS, no Cluster) writes and reads the protocol;
 * the sockets, their deadlines and the Cluster's routing are ours. It is
 * loaded on first use (fc_dl.h), so freqctl needs it only with --redis.
 * Not thread-safe: one thread owns a struct fc_redis.
 */
#ifndef FC_REDIS_H
#define FC_REDIS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fc_error.h"
#include "fc_redis_conf.h"
#include "fc_redis_reply.h"

enum fc_redis_mode {
	FC_REDIS_UNKNOWN,    /* not yet reached */
	FC_REDIS_STANDALONE, /* one server: every slot is its */
	FC_REDIS_CLUSTER,    /* slots routed by the table of CLUSTER SLOTS */
};

/* What became of one command. */
enum fc_redis_status {
	FC_REDIS_OK = 1,     /* reply: of the shape asked for */
	FC_REDIS_NOT_RUN,    /* it did not run: never sent (no node, no connection, out of time), or
			      * refused unrun (redirected too often, CLUSTERDOWN, LOADING, TRYAGAIN);
			      * safe to send again */
	FC_REDIS_ERROR,      /* Redis answered an error (reply: its text, as "NOSCRIPT ..."); a script
			      * may have written before failing */
	FC_REDIS_BAD_REPLY,  /* a reply of another shape than asked for: it may have run */
	FC_REDIS_LOST,       /* sent, not answered (timeout, connection lost): it may have run */
};

/* One command of a batch. The caller fills the first part; fc_redis_exec
 * the second; fc_redis_cmds_release frees what it holds. */
struct fc_redis_cmd {
	int argc;
	const char *const *argv;
	const size_t *argvlen;  /* NULL: each argv is a NUL-terminated string */
	/* argv[key], ..., argv[key + nkeys - 1] are its keys, all in one slot
	 * (a hash tag, "{...}", puts related keys there); key 0: no key (sent
	 * to the primary of slot 0); nkeys 0 with a key: 1. */
	unsigned key, nkeys;
	/* With no key: a key to route by (not sent), for a command that
	 * follows others on their node (WAIT after a slot's scripts). */
	const char *route;
	/* With no key and no route: the hash slot to route by (a command for
	 * one primary: fc_redis_primary_slots). */
	uint16_t route_slot;
	struct fc_redis_want want;

	enum fc_redis_status status;
	const struct fc_redis_reply *reply; /* FC_REDIS_OK: the reply; FC_REDIS_ERROR: the error */
	const char *msg; /* not FC_REDIS_OK: why, naming the command, its key and the node */

	struct {         /* the client's */
		uint16_t slot;
		uint16_t node;
		uint16_t why;    /* where msg says why, after the label */
		uint8_t tries;
		bool asking, retry, msg_owned;
		struct fc_redis_reply *reply;
	} st;
};

/* What the client did, counted since fc_redis_open. */
struct fc_redis_stats {
	uint64_t calls, commands;  /* fc_redis_exec calls, and commands they carried */
	uint64_t pipelines;        /* batches written to a node: one per primary per round */
	uint64_t rounds;           /* the first pipelines of a call and each round of retries */
	uint64_t moved, ask, tryagain;
	uint64_t refreshes;        /* slot tables loaded */
	uint64_t connects;         /* connections made (after the first: reconnections) */
	uint64_t failures;         /* connections lost: refused, closed, timed out, a bad reply */
	uint64_t timeouts;         /* calls that ran out of time */
	uint64_t bad_replies;      /* replies that did not check: of another shape than asked, not the protocol */
	uint64_t last_usec;        /* the last call's time */
};

/* A node as the client knows it, for fleet status. */
struct fc_redis_node_info {
	char name[FC_REDIS_ADDR_LEN]; /* "10.0.0.5:6379", "[2001:db8::5]:6379" */
	bool primary;                 /* serves slots (standalone: the server) */
	bool connected;
	unsigned slots;               /* how many the table gives it */
	unsigned replicas;            /* Cluster: the table's replicas of it (standalone: 0, ask INFO) */
	uint32_t connects;            /* connections made to it so far: one more, and writes may be lost */
	uint16_t index;               /* as fc_redis_node_of names it */
};

struct fc_redis;

#define FC_REDIS_NO_NODE 0xffff /* no node serves the slot */

/* A client for conf (copied); loads libhiredis, connects to nothing yet. */
struct fc_redis *fc_redis_open(const struct fc_redis_conf *conf, struct fc_err *err);
void fc_redis_close(struct fc_redis *r);

/* Reaches the seeds in order until one answers, and learns the mode and
 * (Cluster) the slot table: 0, or -1 with err naming each seed's failure.
 * fc_redis_exec does this itself when it has not been done; calling it at
 * start tells a wrong password or a wrong address at once. Bounded by
 * conf.timeout_ms. Several seeds that are standalone servers are refused:
 * several URLs are the seeds of one Cluster, and two servers would be two
 * separate budgets. */
int fc_redis_connect(struct fc_redis *r, struct fc_err *err);

/* Runs the n commands: one pipeline per primary (in parallel), then the
 * retries of those redirected (MOVED: the slot's new owner, kept in the
 * table; ASK: ASKING and the command on the node named, the table kept;
 * TRYAGAIN), at most conf.max_redirects times. Commands to one node run in
 * their order in cmds. Returns within conf.timeout_ms; each command's
 * status says what became of it. Returns how many are not FC_REDIS_OK (0:
 * all are), with err saying why for the first of them. */
size_t fc_redis_exec(struct fc_redis *r, struct fc_redis_cmd *cmds, size_t n, struct fc_err *err);

/* Frees the replies and messages of cmds (after fc_redis_exec), so that
 * cmds can be reused. */
void fc_redis_cmds_release(struct fc_redis_cmd *cmds, size_t n);

enum fc_redis_mode fc_redis_mode(const struct fc_redis *r);
const char *fc_redis_mode_name(enum fc_redis_mode mode);
void fc_redis_stats(const struct fc_redis *r, struct fc_redis_stats *out);
/* Up to max known nodes (primaries first); returns how many there are. */
size_t fc_redis_nodes(const struct fc_redis *r, struct fc_redis_node_info *out, size_t max);
/* One slot of each primary that serves slots in the table now (the first
 * it serves), up to max; returns how many there are. A command routed by
 * each (route_slot) reaches every primary. */
size_t fc_redis_primary_slots(const struct fc_redis *r, uint16_t *out, size_t max);
/* The node the slot table sends key to now (its index; FC_REDIS_NO_NODE
 * for none): to group a batch's commands per primary before it is sent. */
unsigned fc_redis_node_of(const struct fc_redis *r, const char *key);
unsigned fc_redis_node_of_slot(const struct fc_redis *r, uint16_t slot);
/* After fc_redis_exec: whether a (earlier in the batch) and b both ran, in
 * the call's first pipeline to one node, on one connection (so a ran
 * before b there): a WAIT b confirms what a wrote. */
bool fc_redis_ran_before(const struct fc_redis_cmd *a, const struct fc_redis_cmd *b);

/* The configuration it was opened with (the seeds, the password), for a
 * connection of the caller's own: the fleet's subscriber. */
const struct fc_redis_conf *fc_redis_get_conf(const struct fc_redis *r);
/* The key prefix (--redis-prefix), for the caller's keys. */
const char *fc_redis_prefix(const struct fc_redis *r);

#endif /* FC_REDIS_H */
