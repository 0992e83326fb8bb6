// SPDX-License-Identifier: BSD-2-Clause
#include <stdlib.h>
#include <string.h>

#include "fc_fleet_split.h"
#include "fc_policy.h"
#include "fc_siphash.h"

int fc_fleet_read(struct fc_store *st, const char *node, int64_t now_ms, struct fc_fleet_view *v, struct fc_err *err)
{
	size_t n = 0, i;

	memset(v, 0, sizeof(*v));
	v->now_ms = now_ms;
	v->lease_ns = FC_FLEET_LEASE_NS_DEFAULT;
	if (fc_store_fleet_policies(st, &n, err) < 0)
		return -1;
	if (!n)
		return 0;
	if (fc_store_fleet_secret(st, v->secret, err) < 0 || fc_store_fleet_nodes_all(st, &v->rows, &v->nrows, err) < 0) {
		fc_fleet_view_free(v);
		return -1;
	}
	/* A number is the same for a name throughout (fc_store_fleet_node_set). */
	for (i = 0; i < v->nrows && !v->node_no; i++)
		if (!strcmp(v->rows[i].name, node))
			v->node_no = v->rows[i].no;
	v->on = true;
	return 0;
}

void fc_fleet_view_free(struct fc_fleet_view *v)
{
	free(v->rows);
	v->rows = NULL;
	v->nrows = 0;
	v->on = false;
}

size_t fc_fleet_set_at(const struct fc_fleet_view *v, int64_t at_ms, struct fc_fleet_member *m)
{
	size_t i, n = 0;

	/* Rows by number: a number has one row at a time. */
	for (i = 0; i < v->nrows; i++)
		if (v->rows[i].since <= at_ms && (!v->rows[i].until || at_ms < v->rows[i].until))
			m[n++] = (struct fc_fleet_member){ .no = v->rows[i].no, .weight = v->rows[i].weight };
	return n;
}

void fc_fleet_split_make(const struct fc_fleet_member *m, size_t n, size_t i, uint64_t q, uint64_t from,
			 uint64_t unit_ns, uint64_t n_rate, struct fc_fleet_split *sp)
{
	unsigned __int128 s = 0, f = 0, fi = 0, t;
	size_t j;

	memset(sp, 0, sizeof(*sp));
	sp->from = from;
	if (i >= n)
		return; /* outside the set: no share, grants only */
	for (j = 0; j < n; j++)
		s += m[j].weight;
	/* F_j: the remainders before node j; r 2^32 = F_n 2^32 / S exactly. */
	for (j = 0; j < n; j++) {
		if (j == i)
			fi = f;
		f += (unsigned __int128)q * m[j].weight % s;
	}
	sp->base = (uint64_t)((unsigned __int128)q * m[i].weight / s);
	sp->seg_lo = (uint64_t)((fi << 32) / s);
	sp->seg_hi = (uint64_t)(((fi + (unsigned __int128)q * m[i].weight % s) << 32) / s);
	if (!n_rate)
		return;
	/* gcra: T_i = ceil(unit S / (N W_i)), so that the nodes' rates add up
	 * to at most N; one too long for the words takes leases only. */
	t = ((unsigned __int128)unit_ns * s + (unsigned __int128)n_rate * m[i].weight - 1) /
	    ((unsigned __int128)n_rate * m[i].weight);
	sp->interval_ns = t > FC_FLEET_INTERVAL_MAX ? 0 : (uint64_t)t;
}

uint64_t fc_fleet_split_q(const struct fc_fleet_member *m, size_t n, size_t i, const struct fc_fleet_split *sp)
{
	unsigned __int128 s = 0, f, lo, hi, x;
	uint64_t found = FC_FLEET_NEVER, d;
	struct fc_fleet_split t;
	size_t j;

	if (i >= n || !m[i].weight || sp->seg_hi < sp->seg_lo)
		return FC_FLEET_NEVER;
	for (j = 0; j < n; j++)
		s += m[j].weight;
	/* base S + f_i = q W_i with f_i < S, and the segment's length d is
	 * floor(f_i 2^32 / S) or one more: f_i in ((d - 1) S / 2^32, (d + 1) S / 2^32),
	 * a few values (S < 2^32: at most three), each q checked whole. */
	d = sp->seg_hi - sp->seg_lo;
	lo = d ? ((unsigned __int128)(d - 1) * s) >> 32 : 0;
	hi = (((unsigned __int128)d + 1) * s + 0xffffffffu) >> 32;
	if (hi >= s)
		hi = s - 1;
	if (hi - lo > 4096)
		return FC_FLEET_NEVER; /* weights past 2^32 in all: too many to try */
	for (f = lo; f <= hi; f++) {
		x = (unsigned __int128)sp->base * s + f;
		if (x % m[i].weight || x / m[i].weight >= FC_FLEET_NEVER)
			continue;
		fc_fleet_split_make(m, n, i, (uint64_t)(x / m[i].weight), sp->from, 0, 0, &t);
		if (t.base != sp->base || t.seg_lo != sp->seg_lo || t.seg_hi != sp->seg_hi)
			continue;
		if (found != FC_FLEET_NEVER)
			return FC_FLEET_NEVER;
		found = (uint64_t)(x / m[i].weight);
	}
	return found;
}

uint64_t fc_fleet_set_digest(const uint64_t secret[2], const struct fc_fleet_member *m, size_t n)
{
	struct fc_sip h;
	size_t i;

	fc_sip_init(&h, secret);
	for (i = 0; i < n; i++)
		fc_sip_word(&h, (uint64_t)m[i].no << 32 | m[i].weight);
	return fc_sip_final(&h);
}

uint32_t fc_fleet_fixed_point(const uint64_t secret[2], uint32_t id, uint32_t epoch)
{
	struct fc_sip h;

	fc_sip_init(&h, secret);
	fc_sip_word(&h, (uint64_t)id << 32 | epoch);
	return (uint32_t)fc_sip_final(&h);
}

static bool fc_fleet_set_same(const struct fc_fleet_member *a, size_t na, const struct fc_fleet_member *b, size_t nb)
{
	return na == nb && !memcmp(a, b, na * sizeof(*a));
}

static int fc_u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* The first window after w0 (of unit_ms) whose set differs from w0's
 * (FC_FLEET_NEVER: none), into m and *n. A set changes only where a row
 * starts or ends: the first window starting at or after each such time,
 * tried in order (the first usually differs: O(rows log rows)). */
static uint64_t fc_fleet_next_set(const struct fc_fleet_view *v, uint64_t w0, int64_t unit_ms,
				  const struct fc_fleet_member *m0, size_t n0, struct fc_fleet_member *m, size_t *n)
{
	uint64_t *ws = calloc(2 * v->nrows + 1, sizeof(*ws)), best = FC_FLEET_NEVER;
	int64_t t, start0 = (int64_t)w0 * unit_ms;
	size_t i, k, nw = 0;

	if (!ws)
		return FC_FLEET_NEVER; /* the next set unknown: the agent republishes on the change anyway */
	for (i = 0; i < v->nrows; i++)
		for (k = 0; k < 2; k++) {
			t = k ? v->rows[i].until : v->rows[i].since;
			if (t > start0 && !(k && !t))
				ws[nw++] = (uint64_t)((t + unit_ms - 1) / unit_ms);
		}
	qsort(ws, nw, sizeof(*ws), fc_u64_cmp);
	for (i = 0; i < nw && best == FC_FLEET_NEVER; i++) {
		if (i && ws[i] == ws[i - 1])
			continue;
		*n = fc_fleet_set_at(v, (int64_t)ws[i] * unit_ms, m);
		if (!fc_fleet_set_same(m0, n0, m, *n))
			best = ws[i];
	}
	free(ws);
	return best;
}

static size_t fc_fleet_index(const struct fc_fleet_member *m, size_t n, uint32_t no)
{
	size_t i;

	for (i = 0; i < n && m[i].no != no; i++)
		;
	return no ? i : n;
}

void fc_fleet_splits(const struct fc_fleet_view *v, uint64_t unit_ns, uint64_t q, uint64_t n_rate,
		     struct fc_fleet_split sp[2], int64_t at[2])
{
	int64_t unit_ms = (int64_t)(unit_ns / 1000000);
	struct fc_fleet_member *m0 = calloc(v->nrows + 1, sizeof(*m0)), *m1 = calloc(v->nrows + 1, sizeof(*m1));
	uint64_t w0 = v->now_ms > 0 ? (uint64_t)(v->now_ms / unit_ms) : 0, w1;
	size_t n0, n1 = 0;

	memset(sp, 0, 2 * sizeof(*sp));
	sp[0].from = w0;
	sp[1].from = FC_FLEET_NEVER;
	at[0] = at[1] = (int64_t)w0 * unit_ms;
	if (!m0 || !m1) /* no memory: no share (refusals are safe; the agent leases) */
		goto out;
	n0 = fc_fleet_set_at(v, at[0], m0);
	fc_fleet_split_make(m0, n0, fc_fleet_index(m0, n0, v->node_no), q, w0, unit_ns, n_rate, &sp[0]);
	w1 = fc_fleet_next_set(v, w0, unit_ms, m0, n0, m1, &n1);
	if (w1 == FC_FLEET_NEVER)
		goto out;
	at[1] = (int64_t)w1 * unit_ms;
	fc_fleet_split_make(m1, n1, fc_fleet_index(m1, n1, v->node_no), q, w1, unit_ns, n_rate, &sp[1]);
out:
	free(m0);
	free(m1);
}

/* The quantity a policy's split divides (N; gcra: B) and gcra's rate. */
static void fc_fleet_quantities(const struct fc_policy_spec *p, uint64_t *q, uint64_t *n_rate)
{
	bool gcra = p->algo == FC_ALGO_GCRA;

	*q = gcra ? fc_tier_burst(p, 0) : p->rate[0].n;
	*n_rate = gcra ? p->rate[0].n : 0;
}

void fc_fleet_policy_splits(const struct fc_fleet_view *v, const struct fc_policy_spec *p, struct fc_fleet_split sp[2],
			    int64_t at[2])
{
	uint64_t q, n_rate;

	fc_fleet_quantities(p, &q, &n_rate);
	fc_fleet_splits(v, p->rate[0].unit_secs * FC_NS_PER_SEC, q, n_rate, sp, at);
}

/* The index in cfg->sets of the set taken at at_ms, added if new. */
static int fc_fleet_cfg_set(struct fc_fleet_cfg *cfg, const struct fc_fleet_view *v, int64_t at_ms, size_t *used,
			    uint32_t *idx)
{
	struct fc_fleet_set *s;
	size_t i;

	for (i = 0; i < cfg->nsets && cfg->sets[i].at_ms != at_ms; i++)
		;
	*idx = (uint32_t)i;
	if (i < cfg->nsets)
		return 0;
	s = &cfg->sets[cfg->nsets++];
	s->at_ms = at_ms;
	s->m = cfg->members + *used;
	s->n = fc_fleet_set_at(v, at_ms, cfg->members + *used);
	s->digest = fc_fleet_set_digest(v->secret, s->m, s->n);
	*used += s->n;
	return 0;
}

int fc_fleet_cfg_make(const struct fc_fleet_view *v, const struct fc_policy_row *rows, size_t nrows,
		      struct fc_fleet_cfg *cfg, struct fc_err *err)
{
	size_t i, k, used = 0;
	int64_t at[2];

	memset(cfg, 0, sizeof(*cfg));
	if (!v->on)
		return 0;
	memcpy(cfg->secret, v->secret, sizeof(cfg->secret));
	cfg->node_no = v->node_no;
	cfg->made_ms = v->now_ms;
	cfg->pols = calloc(nrows + 1, sizeof(*cfg->pols));
	cfg->sets = calloc(2 * nrows + 1, sizeof(*cfg->sets));
	cfg->members = calloc((2 * nrows + 1) * (v->nrows + 1), sizeof(*cfg->members));
	if (!cfg->pols || !cfg->sets || !cfg->members) {
		fc_fleet_cfg_free(cfg);
		return fc_err_set(err, "fleet: out of memory");
	}
	for (i = 0; i < nrows; i++) {
		const struct fc_policy_spec *p = &rows[i].spec;
		struct fc_fleet_policy *fp = &cfg->pols[cfg->npols];

		if (!p->fleet || !p->ntiers)
			continue;
		fp->id = p->id;
		fp->epoch = rows[i].epoch;
		fp->slot = rows[i].slot;
		fp->algo = (uint8_t)fc_fleet_algo(p->algo);
		fp->layer = (uint8_t)fc_policy_layer(p);
		fp->keyed = fc_policy_is_keyed(p);
		fp->n = p->rate[0].n;
		fp->burst = p->algo == FC_ALGO_GCRA ? fc_tier_burst(p, 0) : p->rate[0].n;
		fp->unit_ns = p->rate[0].unit_secs * FC_NS_PER_SEC;
		fp->lease_ns = p->algo == FC_ALGO_GCRA ? v->lease_ns : 0;
		fc_fleet_policy_splits(v, p, fp->split, at);
		for (k = 0; k < 2; k++)
			fc_fleet_cfg_set(cfg, v, fp->split[k].from == FC_FLEET_NEVER ? at[0] : at[k], &used, &fp->set[k]);
		fp->fixed_u = fp->keyed ? 0 : fc_fleet_fixed_point(v->secret, fp->id, fp->epoch);
		cfg->npols++;
	}
	return 0;
}

void fc_fleet_cfg_free(struct fc_fleet_cfg *cfg)
{
	free(cfg->pols);
	free(cfg->sets);
	free(cfg->members);
	memset(cfg, 0, sizeof(*cfg));
}

int64_t fc_fleet_refresh_ms(const struct fc_fleet_view *v, const struct fc_policy_row *rows, size_t nrows)
{
	struct fc_fleet_split sp[2];
	int64_t at[2], first = 0;
	size_t i;

	for (i = 0; v->on && i < nrows; i++) {
		if (!rows[i].spec.fleet || !rows[i].spec.ntiers)
			continue;
		fc_fleet_policy_splits(v, &rows[i].spec, sp, at);
		if (sp[1].from != FC_FLEET_NEVER && (!first || at[1] < first))
			first = at[1];
	}
	/* On this machine's clock: a node set ahead (a test's offset) gets there earlier. */
	return first ? first - v->clock_ns / 1000000 : 0;
}
