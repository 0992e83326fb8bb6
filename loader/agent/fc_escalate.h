/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Escalation: nginx workers report each client an escalating policy refuses
 * in the offender ring of the shm; the agent reads the ring behind them,
 * counts refusals per (policy, client) in fixed windows of the policy's
 * --escalate unit, and past N bans the client at XDP/TC for --ban-ttl.
 *
 * This file only reads and counts: it turns ring entries into the bans to
 * make, so the tests drive it with a ring in plain memory. The agent stores
 * and publishes what it returns.
 */
#ifndef FC_ESCALATE_H
#define FC_ESCALATE_H

#include <stddef.h>
#include <stdint.h>

#include "fc_shm.h"
#include "fc_store.h"

#define FC_ESC_TICK_MS 100   /* how often the agent reads the ring */
#define FC_ESC_KEYS    65536 /* counters kept; a power of two */

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

struct fc_escalation {
	const struct fc_shm_ring *ring; /* NULL: not read (no escalating policy, or no shm yet) */
	uint64_t tail;                  /* the next report to read */
	struct fc_esc_policy *pol;
	size_t npol;
	struct fc_esc_key *keys;
};

/* What one read of the ring found besides bans. */
struct fc_esc_stats {
	uint64_t lost; /* reports overwritten before they were read (a faster lap) */
};

/* Takes the escalating policies among rows (after each publish). Returns 0,
 * or -1 out of memory (the previous list is kept). */
int fc_esc_set_policies(struct fc_escalation *e, const struct fc_policy_row *rows, size_t n);

/* Starts reading ring from its head: reports made before are not counted. */
void fc_esc_attach(struct fc_escalation *e, const struct fc_shm_ring *ring);

/* Reads the ring up to its head (or until max bans are due) at now (unix
 * seconds); fills bans with the clients that crossed their policy's N.
 * Returns how many. A report still being written is left for next time. */
size_t fc_esc_drain(struct fc_escalation *e, int64_t now, struct fc_ban_row *bans, size_t max,
		    struct fc_esc_stats *st);

void fc_esc_free(struct fc_escalation *e);

#endif /* FC_ESCALATE_H */
