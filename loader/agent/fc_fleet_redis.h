/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The fleet's Redis side, for the agent's fleet thread: the names of the
 * records (one hash per key-window, or per GCRA lease pool), the script that
 * is every read and write of them (fc_fleet_sync.lua, built into the binary,
 * loaded once with SCRIPT LOAD and called by EVALSHA, by EVAL on a node that
 * does not have it yet), a batch of its calls sent one pipeline per primary
 * through loader/lib/redis, and the parsers of what comes back: the script's
 * replies and the demand messages of the channel, both hostile input.
 */
#ifndef FC_FLEET_REDIS_H
#define FC_FLEET_REDIS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fc_error.h"
#include "fc_redis.h"

#define FC_FLEET_NODE_MAX 1023u /* node numbers are 1-1023 (fleet_nodes.no) */
#define FC_FLEET_NAME_MAX 160u  /* a record's name, its prefix included */
#define FC_FLEET_WAITS_MAX 64   /* primaries a batch waits on */
/* A record's totals: Lua's numbers are doubles, exact to 2^53. */
#define FC_FLEET_TOTAL_MAX ((1LL << 53) - 1)

/* What a record is of: a key's window, or a GCRA key's lease window. */
enum fc_fleet_rec_kind {
	FC_FLEET_REC_WINDOW = 'w', /* P{id.epoch.kid}:w<unit_s>.<w> */
	FC_FLEET_REC_POOL = 'l',   /* P{id.epoch.kid}:l<lease_ms>.<lw> */
};

struct fc_fleet_rec {
	uint32_t id, epoch; /* the policy, as the store has them */
	uint64_t kid;       /* the key's fleet tag; 0: a fixed-value policy */
	char kind;          /* enum fc_fleet_rec_kind */
	uint64_t unit;      /* the window's seconds, or the lease's milliseconds */
	uint64_t w;         /* the window (or lease window) index */
};

/* The record's name: its length, or -1 with err when it does not fit
 * FC_FLEET_NAME_MAX (a prefix too long). */
int fc_fleet_rec_name(const struct fc_fleet_rec *rec, const char *prefix, char *out, size_t outlen, struct fc_err *err);

/* A demand message: "<record> <node no>", as the script publishes it. */
struct fc_fleet_demand {
	struct fc_fleet_rec rec;
	uint32_t no; /* the asking node: 1-FC_FLEET_NODE_MAX */
};

/* Parses msg strictly (our prefix, canonical numbers: no sign, no leading
 * zero, kid in 16 lower-case hex digits): 0, or -1 with err saying what
 * is wrong. A message that parses is byte for byte what
 * fc_fleet_rec_name and " <no>" make of it. */
int fc_fleet_demand_parse(const void *msg, size_t len, const char *prefix, struct fc_fleet_demand *out,
			  struct fc_err *err);

/* One call of the script for one record. */
struct fc_fleet_call {
	char record[FC_FLEET_NAME_MAX];
	uint32_t no;     /* this node */
	uint64_t limit;  /* N now; 0: a lease pool */
	uint64_t n;      /* the split's shares' sum (0: a pool) */
	uint64_t set;    /* digest of the split's node set */
	uint64_t ttl_ms; /* the record's, set when it is made */
	bool adopt;      /* tell this node's totals, change nothing */
	uint64_t g_app;  /* grants this node applied */
	uint64_t r_lock; /* credit it locked and releases (absolute) */
	uint64_t used;   /* what it used of its allotment (absolute) */
	uint64_t want;
	bool settled;     /* it holds nothing to release */
	uint32_t nshares; /* the split: node numbers and their shares */
	const uint32_t *share_no;
	const uint64_t *share;
};

/* What the script answered, checked. */
enum fc_fleet_answer {
	FC_FLEET_R_DONE = 1,  /* the record answered: fields below */
	FC_FLEET_R_OTHER_SET, /* the record is of another split (store behind?): n is its */
	FC_FLEET_R_NOT_RUN,   /* not sent or refused unrun: nothing changed, send it again */
	FC_FLEET_R_UNKNOWN,   /* it may have run (lost, an error of Redis's): the round failed */
	FC_FLEET_R_REFUSED,   /* the record's own answer is wrong: the script refused the call
			       * (FLEET ...), failed on the record's fields, or replied what does
			       * not check; this call only, never the round's */
};

struct fc_fleet_result {
	enum fc_fleet_answer status;
	uint64_t g, r;        /* this node's totals in the record */
	uint64_t G, R;        /* the record's */
	int64_t free;         /* N − (n + G − R) after the call */
	uint32_t holders;     /* other nodes with allotment to release */
	bool frozen;          /* a lost write was re-asserted: no more grants */
	bool confirmed;       /* a WAIT after the call counted every replica of its node:
			       * its grant may be applied (a server without replicas: at once) */
	uint64_t n;           /* FC_FLEET_R_OTHER_SET: the record's n */
	char msg[FC_ERR_LEN]; /* not DONE: why */
};

/* What a reply must be, from what the caller knows. */
struct fc_fleet_expect {
	uint64_t nstar; /* the largest N of the window (a pool: B); at most 2^40 */
	uint64_t g_app; /* g is at least this, unless frozen */
	bool adopt;
};

/* Checks a reply of the script: 0 with out filled (DONE or OTHER_SET), or
 * -1 with err saying what was expected and what came. */
int fc_fleet_reply_parse(const struct fc_redis_reply *rep, const struct fc_fleet_expect *x, struct fc_fleet_result *out,
			 struct fc_err *err);

/* The script, as built into the binary (NUL-terminated). */
extern const char fc_fleet_sync_lua[];

/* A batch of calls, reused round after round. */
struct fc_fleet_batch {
	struct fc_fleet_call *call;
	struct fc_fleet_result *res;
	struct fc_redis_cmd *cmd; /* the calls, then the WAITs */
	size_t n, cap, cmd_cap;
	uint32_t wait_ms; /* WAIT's timeout; 0: no WAIT, nothing confirmed */
	uint32_t wait_max; /* replicas a WAIT asks for at most (--redis-wait; 0: all the node has) */
	size_t nwaits;
	unsigned wait_need[FC_FLEET_WAITS_MAX]; /* replicas each WAIT must count */
	unsigned standalone_replicas;           /* from INFO replication, */
	uint32_t info_connects;                 /* asked on this connection */
	const char **argv;                      /* the commands' arguments, one run after another */
	size_t *argvlen, *off;                  /* their lengths; off: where each starts in text */
	size_t nargs, args_cap;
	char *text; /* the arguments' bytes */
	size_t text_len, text_cap;
	char sha[41];      /* the script's, once loaded */
	uint64_t noscript; /* EVALs sent because a node lacked the script */
};

void fc_fleet_batch_init(struct fc_fleet_batch *b);
void fc_fleet_batch_free(struct fc_fleet_batch *b);
/* Empties b for the next round (keeps what it allocated). */
void fc_fleet_batch_reset(struct fc_fleet_batch *b);
/* A call to make: its slot to fill, or NULL when out of memory. */
struct fc_fleet_call *fc_fleet_batch_add(struct fc_fleet_batch *b);

/* Sends every call (SCRIPT LOAD first if not yet done; EVAL again where a
 * node answers NOSCRIPT), then, when b->wait_ms is set, a WAIT on each node
 * that calls wanting a grant went to, for all of its replicas; fills
 * b->res[i] for each, checked against x[i]. Returns how many are not
 * answered (neither DONE, OTHER_SET nor REFUSED: Redis away, slow or in
 * error), with err saying why for the first; -1 when nothing could be sent
 * (the script not loaded). */
long fc_fleet_batch_run(struct fc_fleet_batch *b, struct fc_redis *r, const struct fc_fleet_expect *x,
			struct fc_err *err);

#endif /* FC_FLEET_REDIS_H */
