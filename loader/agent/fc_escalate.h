/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Escalation: nginx workers report each client an escalating policy refuses
 * in the offender ring of the shm's state file; the agent reads the ring
 * behind them, counts refusals per (policy, client) in fixed windows of the
 * policy's --escalate unit, and past N bans the client at XDP/TC for
 * --ban-ttl.
 *
 * The ring is written by the workers' user, so what it says is bounded
 * before it becomes a ban: at most cap bans per minute, IPv6 clients of one
 * /64 become one /64 ban once v6_aggregate of them are due in a minute,
 * never more than the maps have room for; whatever is dropped is counted for
 * the log. This file only reads and counts: it turns reports into the bans
 * to make, so the tests drive it with a ring in plain memory.
 */
#ifndef FC_ESCALATE_H
#define FC_ESCALATE_H

#include <stddef.h>
#include <stdint.h>

#include "fc_shm.h"
#include "fc_store.h"

#define FC_ESC_TICK_MS     100   /* how often the agent reads the ring */
#define FC_ESC_KEYS        65536 /* counters kept; a power of two */
#define FC_ESC_BATCH       4096  /* reports read per tick at most */
#define FC_ESC_CAP_DEFAULT 600   /* bans per minute */
#define FC_ESC_V6_DEFAULT  8     /* due IPv6 clients of one /64 that make it a /64 ban */
#define FC_ESC_V6_NETS     1024  /* /64s tracked per minute */
#define FC_ESC_SKIPS       16    /* allowed clients named per read of the ring */
/* A report claimed this long before (2 to 4 s, by whole seconds) and still
 * not stamped is a killed worker's: it is skipped, counted as lost. */
#define FC_ESC_STALL_S     2

/* Where the reports come from: the state file (the agent) or memory (tests). */
struct fc_ring_src {
	uint64_t (*head)(void *ctx);
	void (*read)(void *ctx, uint64_t from, size_t n, struct fc_shm_ring_entry *out);
	void *ctx;
};

struct fc_esc_policy {
	uint32_t id;
	struct fc_rate rate;
	int64_t ttl;
};

struct fc_esc_key {
	uint32_t policy; /* 0: free */
	uint8_t family;
	uint8_t addr[16];
	int64_t window;
	uint64_t count;
};

/* A /64 with IPv6 bans due this minute. */
struct fc_esc_net {
	uint8_t prefix[8];
	uint32_t due;    /* distinct addresses that crossed their threshold */
	bool banned;     /* the /64 itself was banned this minute */
};

struct fc_escalation {
	const struct fc_ring_src *src; /* NULL: not read (no escalating policy, or no shm yet) */
	uint64_t tail;                 /* the next report to read */
	/* What the ring's head said at earlier reads, to age the reports below
	 * them: seen at the last read; aged at one FC_ESC_STALL_S or more ago
	 * (mark, taken at mark_at, becomes it). */
	uint64_t seen, aged, mark;
	int64_t mark_at;
	struct fc_esc_policy *pol;
	size_t npol;
	struct fc_esc_key *keys;
	struct fc_shm_ring_entry *batch;
	uint32_t cap;          /* bans per minute (the caller's to set) */
	uint32_t v6_aggregate; /* 0: never aggregate (the caller's to set) */
	/* The caller's to set, before the first fc_esc_set_policies (a fuzz
	 * target keeps them small): counters kept, a power of two (0:
	 * FC_ESC_KEYS), and reports read at once (0: FC_ESC_BATCH). */
	uint32_t nkeys, nbatch;
	int64_t minute;        /* of the counts below */
	uint32_t made;         /* bans made this minute */
	struct fc_esc_net *nets;
	size_t nnets;
	struct fc_allow_row *allows; /* live allow entries: what they cover is never banned */
	size_t nallows;
};

/* A client past its threshold that was not banned: an allow entry covers it. */
struct fc_esc_skip {
	struct fc_prefix client;
	uint32_t policy;
	const struct fc_allow_row *by; /* in fc_escalation.allows, valid until the next fc_esc_set_allows */
};

/* What one read of the ring found besides bans. */
struct fc_esc_stats {
	uint64_t lost;       /* reports overwritten before they were read (a faster lap), or
			      * claimed and never stamped (a worker killed in between) */
	uint64_t capped;     /* bans not made: past the cap per minute */
	uint64_t full;       /* bans not made: the maps have no room */
	uint64_t aggregated; /* IPv6 bans folded into a /64 ban */
	uint64_t allowed;    /* bans not made: an allow entry covers the client */
	struct fc_esc_skip skipped[FC_ESC_SKIPS]; /* the first of them, to log */
	size_t nskipped;
};

/* Takes the escalating policies among rows (after each publish); a cap of 0
 * becomes FC_ESC_CAP_DEFAULT. Returns 0, or -1 out of memory (the previous
 * list is kept). */
int fc_esc_set_policies(struct fc_escalation *e, const struct fc_policy_row *rows, size_t n);

/* Takes the allow entries (rows, allocated; the caller's no more) after each
 * publish: a client they cover at the time of its report is never banned. */
void fc_esc_set_allows(struct fc_escalation *e, struct fc_allow_row *rows, size_t n);

/* Starts reading src from its head: reports made before are not counted. */
void fc_esc_attach(struct fc_escalation *e, const struct fc_ring_src *src);

/* Reads the ring up to its head (at most nbatch reports, or until max
 * bans are due) at now (unix seconds); fills bans with what crossed a
 * threshold, within room more bans. Returns how many. A report still being
 * written is left for next time, unless a worker was killed writing it: one
 * claimed before the last read while a later one is stamped, or claimed
 * FC_ESC_STALL_S before, is skipped and counted as lost. */
size_t fc_esc_drain(struct fc_escalation *e, int64_t now, size_t room, struct fc_ban_row *bans, size_t max,
		    struct fc_esc_stats *st);

void fc_esc_free(struct fc_escalation *e);

#endif /* FC_ESCALATE_H */
