// SPDX-License-Identifier: BSD-2-Clause
#include <stdlib.h>
#include <string.h>

#include "fc_allow.h"
#include "fc_escalate.h"

int fc_esc_set_policies(struct fc_escalation *e, const struct fc_policy_row *rows, size_t n)
{
	struct fc_esc_policy *pol = calloc(n + 1, sizeof(*pol));
	size_t i, np = 0;

	if (!e->cap)
		e->cap = FC_ESC_CAP_DEFAULT;
	if (!e->nkeys || (e->nkeys & (e->nkeys - 1)))
		e->nkeys = FC_ESC_KEYS;
	if (!e->nbatch)
		e->nbatch = FC_ESC_BATCH;
	if (!pol || (!e->keys && !(e->keys = calloc(e->nkeys, sizeof(*e->keys)))) ||
	    (!e->batch && !(e->batch = calloc(e->nbatch, sizeof(*e->batch)))) ||
	    (!e->nets && !(e->nets = calloc(FC_ESC_V6_NETS, sizeof(*e->nets))))) {
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

void fc_esc_set_allows(struct fc_escalation *e, struct fc_allow_row *rows, size_t n)
{
	free(e->allows);
	e->allows = rows;
	e->nallows = n;
}

/* Whether an allow entry covers the client of r: counted, and named in st. */
static bool fc_esc_allowed(const struct fc_escalation *e, const struct fc_shm_ring_entry *r, int64_t now,
			   struct fc_esc_stats *st)
{
	const struct fc_allow_row *by;
	struct fc_prefix c = { .family = r->family, .len = r->family == 4 ? 32 : 128 };

	memcpy(c.a, r->addr, r->family == 4 ? 4 : 16);
	by = fc_allow_covering(e->allows, e->nallows, &c, now);
	if (!by)
		return false;
	if (st->nskipped < FC_ESC_SKIPS)
		st->skipped[st->nskipped++] = (struct fc_esc_skip){ c, r->policy, by };
	st->allowed++;
	return true;
}

/* Starts reading at head: nothing before it is read, so nothing there ages. */
static void fc_esc_restart(struct fc_escalation *e, uint64_t head)
{
	e->tail = e->seen = e->aged = e->mark = head;
	e->mark_at = 0;
}

void fc_esc_attach(struct fc_escalation *e, const struct fc_ring_src *src)
{
	e->src = src;
	if (src)
		fc_esc_restart(e, src->head(src->ctx));
}

/* Whether the unstamped report at idx, the i-th of the batch, is a killed
 * worker's (see fc_esc_drain); stamped: the batch's stamped reports up to
 * the last of them. */
static bool fc_esc_stalled(const struct fc_escalation *e, uint64_t idx, size_t i, size_t stamped)
{
	return idx < e->aged || (idx < e->seen && i + 1 < stamped);
}

/* Ages the reports below the head of a read FC_ESC_STALL_S before now, and
 * marks head for a read that long after. */
static void fc_esc_age(struct fc_escalation *e, uint64_t head, int64_t now)
{
	if (now - e->mark_at >= FC_ESC_STALL_S) {
		e->aged = e->mark;
		e->mark = head;
		e->mark_at = now;
	}
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
		b = (h + i) & (e->nkeys - 1);
		k = &e->keys[b];
		if (!k->policy || (k->policy == p->id && k->family == family && !memcmp(k->addr, addr, 16)) ||
		    k->window < window - 1)
			break; /* a free, matching or stale counter */
	}
	if (i == 16)
		k = &e->keys[h & (e->nkeys - 1)]; /* crowded: the oldest guess wins */
	if (k->policy != p->id || k->family != family || memcmp(k->addr, addr, 16) || k->window != window) {
		*k = (struct fc_esc_key){ .policy = p->id, .family = family, .window = window };
		memcpy(k->addr, addr, 16);
	}
	return ++k->count == p->rate.n + 1;
}

/* The /64 of an IPv6 client due for a ban, counted; NULL when no room is
 * left to track it (then it is banned alone). */
static struct fc_esc_net *fc_esc_net(struct fc_escalation *e, const uint8_t *addr)
{
	size_t i;

	for (i = 0; i < e->nnets; i++)
		if (!memcmp(e->nets[i].prefix, addr, 8))
			return &e->nets[i];
	if (e->nnets == FC_ESC_V6_NETS)
		return NULL;
	memset(&e->nets[e->nnets], 0, sizeof(e->nets[0]));
	memcpy(e->nets[e->nnets].prefix, addr, 8);
	return &e->nets[e->nnets++];
}

/* Turns a client past its threshold into a ban in *b (the client, or its
 * /64), within the bounds; false when none is to be made. */
static bool fc_esc_ban(struct fc_escalation *e, const struct fc_shm_ring_entry *r, const struct fc_esc_policy *p,
		       int64_t now, size_t room, struct fc_ban_row *b, struct fc_esc_stats *st)
{
	struct fc_esc_net *net = NULL;

	if (r->family == 6 && e->v6_aggregate && (net = fc_esc_net(e, r->addr))) {
		if (net->banned) {
			st->aggregated++; /* its /64 is banned already */
			return false;
		}
		net->due++;
	}
	if (e->made >= e->cap) {
		st->capped++;
		return false;
	}
	if (room == 0) {
		st->full++;
		return false;
	}
	memset(b, 0, sizeof(*b));
	b->p.family = r->family;
	b->p.len = r->family == 4 ? 32 : 128;
	memcpy(b->p.a, r->addr, r->family == 4 ? 4 : 16);
	if (net && net->due >= e->v6_aggregate) {
		/* Enough of one /64 to say it is one client, not many. */
		b->p.len = 64;
		memset(b->p.a + 8, 0, 8);
		net->banned = true;
		st->aggregated += net->due - 1;
	}
	b->created = now;
	/* now is a whole second (time()): the refusal may be up to 1 s past it,
	 * and the ban lasts at least its TTL from there. */
	b->expires = now + 1 + p->ttl;
	b->by_policy = p->id;
	e->made++;
	return true;
}

size_t fc_esc_drain(struct fc_escalation *e, int64_t now, size_t room, struct fc_ban_row *bans, size_t max,
		    struct fc_esc_stats *st)
{
	uint64_t head, idx, seq;
	size_t nb = 0, n, i, j, stamped;

	memset(st, 0, sizeof(*st));
	if (!e->src || !e->npol)
		return 0;
	if (now / 60 != e->minute) {
		e->minute = now / 60;
		e->made = 0;
		e->nnets = 0;
	}
	head = e->src->head(e->src->ctx);
	if (head < e->tail) {
		fc_esc_restart(e, head); /* the head went back: nothing to read behind it */
		return 0;
	}
	if (head - e->tail > FC_SHM_RING_SIZE) {
		st->lost = head - e->tail - FC_SHM_RING_SIZE;
		e->tail = head - FC_SHM_RING_SIZE;
	}
	fc_esc_age(e, head, now);
	n = head - e->tail < e->nbatch ? (size_t)(head - e->tail) : e->nbatch;
	e->src->read(e->src->ctx, e->tail, n, e->batch);
	for (stamped = n; stamped && e->batch[stamped - 1].seq != e->tail + stamped; stamped--)
		;
	for (i = 0, idx = e->tail; i < n && nb < max; i++, idx++) {
		const struct fc_shm_ring_entry *r = &e->batch[i];

		seq = r->seq;
		if (seq < idx + 1) {
			if (!fc_esc_stalled(e, idx, i, stamped))
				break; /* being written: next tick */
			st->lost++; /* its worker was killed before the stamp */
			continue;
		}
		if (seq != idx + 1 || (r->family != 4 && r->family != 6))
			continue; /* overwritten by a faster lap, or nonsense */
		for (j = 0; j < e->npol && e->pol[j].id != r->policy; j++)
			;
		if (j == e->npol || !fc_esc_count(e, &e->pol[j], r->family, r->addr, now) ||
		    fc_esc_allowed(e, r, now, st))
			continue;
		if (fc_esc_ban(e, r, &e->pol[j], now, room - nb, &bans[nb], st))
			nb++;
	}
	e->tail = idx;
	e->seen = head;
	return nb;
}

void fc_esc_free(struct fc_escalation *e)
{
	free(e->pol);
	free(e->keys);
	free(e->batch);
	free(e->nets);
	free(e->allows);
	memset(e, 0, sizeof(*e));
}
