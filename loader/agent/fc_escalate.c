// SPDX-License-Identifier: BSD-2-Clause
#include <stdlib.h>
#include <string.h>

#include "fc_escalate.h"

int fc_esc_set_policies(struct fc_escalation *e, const struct fc_policy_row *rows, size_t n)
{
	struct fc_esc_policy *pol = calloc(n + 1, sizeof(*pol));
	size_t i, np = 0;

	if (!pol || (!e->keys && !(e->keys = calloc(FC_ESC_KEYS, sizeof(*e->keys))))) {
		free(pol);
		return -1;
	}
	for (i = 0; i < n; i++)
		if (rows[i].spec.escalate.n)
			pol[np++] = (struct fc_esc_policy){ rows[i].spec.id, rows[i].spec.escalate, rows[i].spec.ban_ttl };
	free(e->pol);
	e->pol = pol;
	e->npol = np;
	return 0;
}

void fc_esc_attach(struct fc_escalation *e, const struct fc_shm_ring *ring)
{
	e->ring = ring;
	if (ring)
		e->tail = __atomic_load_n(&ring->head, __ATOMIC_ACQUIRE);
}

/* Counts one refusal; true when it is the one past the policy's N. */
static bool fc_esc_count(struct fc_escalation *e, const struct fc_esc_policy *p, uint8_t family, const uint8_t *addr,
			 int64_t now)
{
	uint64_t h = fc_shm_ban_hash(family, (uint8_t)p->id, addr, 16) ^ p->id;
	int64_t window = now / (int64_t)p->rate.unit_secs;
	struct fc_esc_key *k;
	size_t i, b;

	for (i = 0; i < 16; i++) {
		b = (h + i) & (FC_ESC_KEYS - 1);
		k = &e->keys[b];
		if (!k->policy || (k->policy == p->id && k->family == family && !memcmp(k->addr, addr, 16)) ||
		    k->window < window - 1)
			break; /* a free, matching or stale counter */
	}
	if (i == 16)
		k = &e->keys[h & (FC_ESC_KEYS - 1)]; /* crowded: the oldest guess wins */
	if (k->policy != p->id || k->family != family || memcmp(k->addr, addr, 16) || k->window != window) {
		*k = (struct fc_esc_key){ .policy = p->id, .family = family, .window = window };
		memcpy(k->addr, addr, 16);
	}
	return ++k->count == p->rate.n + 1;
}

size_t fc_esc_drain(struct fc_escalation *e, int64_t now, struct fc_ban_row *bans, size_t max,
		    struct fc_esc_stats *st)
{
	uint64_t head, idx, seq;
	size_t nb = 0, j;

	memset(st, 0, sizeof(*st));
	if (!e->ring || !e->npol)
		return 0;
	head = __atomic_load_n(&e->ring->head, __ATOMIC_ACQUIRE);
	if (head - e->tail > FC_SHM_RING_SIZE) {
		st->lost = head - e->tail - FC_SHM_RING_SIZE;
		e->tail = head - FC_SHM_RING_SIZE;
	}
	for (idx = e->tail; idx < head && nb < max; idx++) {
		const struct fc_shm_ring_entry *r = &e->ring->e[idx & (FC_SHM_RING_SIZE - 1)];
		struct fc_shm_ring_entry copy;

		seq = __atomic_load_n(&r->seq, __ATOMIC_ACQUIRE);
		if (seq < idx + 1)
			break; /* being written: next tick */
		copy = *r;
		if (seq != idx + 1 || __atomic_load_n(&r->seq, __ATOMIC_ACQUIRE) != seq ||
		    (copy.family != 4 && copy.family != 6))
			continue; /* overwritten by a faster lap */
		for (j = 0; j < e->npol && e->pol[j].id != copy.policy; j++)
			;
		if (j == e->npol || !fc_esc_count(e, &e->pol[j], copy.family, copy.addr, now))
			continue;
		memset(&bans[nb], 0, sizeof(bans[nb]));
		bans[nb].p.family = copy.family;
		bans[nb].p.len = copy.family == 4 ? 32 : 128;
		memcpy(bans[nb].p.a, copy.addr, copy.family == 4 ? 4 : 16);
		bans[nb].created = now;
		bans[nb].expires = now + e->pol[j].ttl;
		bans[nb].by_policy = copy.policy;
		nb++;
	}
	e->tail = idx;
	return nb;
}

void fc_esc_free(struct fc_escalation *e)
{
	free(e->pol);
	free(e->keys);
	memset(e, 0, sizeof(*e));
}
