// SPDX-License-Identifier: BSD-2-Clause
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fc_keytab.h"
#include "fc_l7.h"

#define FC_NONE UINT32_MAX

/* Inlined into every decision, whatever gcc would weigh: the calls and
 * their argument lists cost more than these small bodies. */
#define FC_HOT static inline __attribute__((always_inline))

_Static_assert(sizeof(struct fc_l7_result) <= 80, "a decision's result is zeroed by vector stores up to 80 bytes");

uint64_t fc_l7_hash(uint8_t kind, uint8_t name_idx, const char *data, size_t len)
{
	uint64_t h = 0xcbf29ce484222325ULL ^ ((uint64_t)kind << 8 | name_idx); /* FNV-1a */
	size_t i;

	for (i = 0; i < len; i++) {
		h ^= (uint8_t)data[i];
		h *= 0x100000001b3ULL;
	}
	return h ^ (h >> 29);
}

static size_t fc_pow2(size_t n)
{
	size_t c = 16;

	while (c < n * 2)
		c <<= 1;
	return c;
}

/* Copies len bytes of untrusted memory into the index's own. */
static const char *fc_copy(const struct fc_l7_alloc *a, const void *src, size_t len)
{
	char *p = a->alloc(a->ctx, len + 1);

	if (p)
		memcpy(p, src, len);
	return p;
}

static bool fc_str_eq(struct fc_l7_str s, const char *d, size_t len)
{
	return s.len == len && !memcmp(s.data, d, len);
}

/* The index of name in names (appended if new and there is room), or -1. */
static int fc_name_idx(struct fc_l7_str *names, size_t *n, const char *d, size_t len, const struct fc_l7_alloc *a)
{
	size_t i;

	for (i = 0; i < *n; i++)
		if (fc_str_eq(names[i], d, len))
			return (int)i;
	if (*n == FC_L7_MAX_NAMES || !(names[*n].data = fc_copy(a, d, len)))
		return -1;
	names[*n].len = len;
	return (int)(*n)++;
}

/* A policy's arg or header name (len <= FC_SHM_MAX_NAME) in the form the
 * index keeps: an argument's as fc_l7_name_canon writes it, a header's
 * lowercase with '-' for '_'. */
static void fc_canon_name(uint8_t kind, const char *name, size_t len, char *out)
{
	size_t i;

	if (kind == FC_DIM_ARG) {
		fc_l7_name_canon(name, len, out);
		return;
	}
	for (i = 0; i < len; i++)
		out[i] = name[i] == '_' ? '-' : name[i] >= 'A' && name[i] <= 'Z' ? (char)(name[i] | 0x20) : name[i];
}

/* A path as an exact uri= matches it: without one trailing '/' (but "/"
 * itself), as most frameworks route /login/ to /login. */
static inline struct fc_l7_str fc_uri_path(struct fc_l7_str u)
{
	u.len -= u.len > 1 && u.data[u.len - 1] == '/';
	return u;
}

/* A fleet algorithm's local one: what its tier is checked as. */
static uint8_t fc_algo_base(uint8_t algo)
{
	return algo == FC_ALGO_FLEET_WINDOW  ? FC_ALGO_WINDOW :
	       algo == FC_ALGO_FLEET_SLIDING ? FC_ALGO_SLIDING :
	       algo == FC_ALGO_FLEET_GCRA    ? FC_ALGO_GCRA :
					       algo;
}

static bool fc_tier_ok(uint8_t algo, const struct fc_tier *t)
{
	if (!t->unit_ns || t->unit_ns > FC_UNIT_MAX || !t->limit || t->limit > FC_RATE_MAX || !t->interval_ns ||
	    t->interval_ns > FC_UNIT_MAX || t->tolerance_ns > FC_ROOM_MAX)
		return false;
	if (algo == FC_ALGO_SLIDING)
		return t->limit <= FC_SLIDE_COUNT_MAX && t->unit_ns >= FC_SLIDE_NS;
	return algo == FC_ALGO_GCRA || algo == FC_ALGO_WINDOW;
}

/* Reads one dimension at *p (within end); fills d. The dimension's header
 * is copied first: what was checked is what is used. */
static bool fc_dim_read(struct fc_l7_index *ix, const uint8_t **p, const uint8_t *end, struct fc_l7_dim *d,
			const struct fc_l7_alloc *a)
{
	const uint8_t *name, *val;
	struct fc_shm_dim sdc, *sd = &sdc;
	char canon[FC_SHM_MAX_NAME];
	size_t total;
	int idx;

	if ((size_t)(end - *p) < sizeof(*sd))
		return false;
	memcpy(sd, *p, sizeof(*sd));
	total = (sizeof(*sd) + sd->name_len + sd->value_len + 3) & ~(size_t)3;
	if ((size_t)(end - *p) < total)
		return false;
	name = *p + sizeof(*sd);
	val = name + sd->name_len;
	memset(d, 0, sizeof(*d));
	d->kind = sd->kind;
	d->flags = sd->flags;
	/* A wildcard has no value; ip's has its unit, two lengths. */
	if (sd->flags & ~(FC_SHM_DIM_ANY | FC_SHM_DIM_PREFIX) ||
	    (sd->flags & FC_SHM_DIM_ANY &&
	     (sd->value_len != (sd->kind == FC_DIM_IP ? 2 : 0) || sd->flags & FC_SHM_DIM_PREFIX)) ||
	    (sd->flags & FC_SHM_DIM_PREFIX && (sd->kind != FC_DIM_URI || !sd->value_len)))
		return false;
	switch (sd->kind) {
	case FC_DIM_IP:
		if (sd->name_len)
			return false;
		if (sd->flags & FC_SHM_DIM_ANY) {
			d->unit4 = val[0];
			d->unit6 = val[1];
			if (!d->unit4 || d->unit4 > 32 || !d->unit6 || d->unit6 > 128)
				return false;
			break;
		}
		if (sd->value_len != 6 && sd->value_len != 18)
			return false;
		d->family = val[0];
		d->plen = val[1];
		if ((d->family != 4 || sd->value_len != 6 || d->plen > 32) &&
		    (d->family != 6 || sd->value_len != 18 || d->plen > 128))
			return false;
		memcpy(d->addr, val + 2, sd->value_len - 2u);
		break;
	case FC_DIM_UID:
	case FC_DIM_URI:
		if (sd->name_len || (!sd->value_len && !(sd->flags & FC_SHM_DIM_ANY)))
			return false;
		break;
	case FC_DIM_ARG:
	case FC_DIM_HEADER:
		if (!sd->name_len || (!sd->value_len && !(sd->flags & FC_SHM_DIM_ANY)) || sd->name_len > FC_SHM_MAX_NAME)
			return false;
		/* Names as requests are read (fc_l7_name_read, fc_l7_header_is):
		 * arg:API and arg:api are one name, header:X_Key is X-Key. */
		fc_canon_name(sd->kind, (const char *)name, sd->name_len, canon);
		idx = sd->kind == FC_DIM_ARG ? fc_name_idx(ix->args, &ix->nargs, canon, sd->name_len, a) :
					       fc_name_idx(ix->headers, &ix->nheaders, canon, sd->name_len, a);
		if (idx < 0)
			return false;
		d->name_idx = (uint8_t)idx;
		break;
	default:
		return false;
	}
	if (sd->kind != FC_DIM_IP && sd->value_len <= sizeof(d->addr)) {
		/* Most uids and args are short: no pointer to chase, no cache line more. */
		memcpy(d->addr, val, sd->value_len);
		d->value.data = (const char *)d->addr;
		d->value.len = sd->value_len;
	} else if (sd->kind != FC_DIM_IP) {
		d->value.data = fc_copy(a, val, sd->value_len);
		d->value.len = sd->value_len;
		if (!d->value.data)
			return false;
	}
	/* A uri as requests' are matched (fc_l7_uri_params, fc_uri_path): its
	 * own memory, rewritten in place. */
	if (sd->kind == FC_DIM_URI && d->value.len) {
		d->value.len = fc_l7_uri_params(d->value.data, d->value.len, (char *)(uintptr_t)d->value.data);
		if (!(sd->flags & FC_SHM_DIM_PREFIX))
			d->value = fc_uri_path(d->value);
	}
	ix->uses_uri |= sd->kind == FC_DIM_URI;
	*p += total;
	return true;
}

/* The state word of a key that counts its places: the one past its tiers
 * and its warm-up word. */
static inline uint8_t fc_conc_word(const struct fc_l7_policy *p)
{
	return fc_shm_conc_word(p->ntiers, p->warmup_ms);
}

/* How long state stops mattering after a charge: the latest a bucket of
 * p can still hold anything (GCRA: TAT within tolerance, the queue and one
 * interval; window: the window's end; sliding: the next window's end, which
 * the tolerance of N intervals covers). A warming tier's TAT may lead by up
 * to 3 intervals more, and it stays warm for D after: its horizon is that
 * much later (a key idle past it is cold, as a new one). For a policy with a
 * concurrency cap at least a second, so a key made for a place is not idle
 * before it is taken. Saturating: a far horizon only keeps a key longer.
 * Once per policy, when the index is built. */
static uint64_t fc_key_lead(const struct fc_l7_policy *p)
{
	uint64_t h = p->concurrency ? FC_NS_PER_SEC : 0, t, q;
	int i;

	for (i = 0; i < p->ntiers; i++) {
		q = 1 + (p->action == FC_ACTION_DELAY ? p->delay_burst : 0) + (!i && p->warmup_ms ? 2 : 0);
		if (__builtin_mul_overflow(p->tier[i].interval_ns, q, &t) ||
		    __builtin_add_overflow(t, p->tier[i].unit_ns + p->tier[i].tolerance_ns, &t) ||
		    __builtin_add_overflow(t, !i ? p->warmup_ms * FC_MS_NS : 0, &t))
			t = UINT64_MAX / 2;
		if (t > h)
			h = t;
	}
	/* A fleet key's entry holds its credit until its window has ended on
	 * the fleet's clock (offset) and its lease credit has lapsed: never idle
	 * before (doc/fleet-design.md 5.3); a gcra one's TAT may lead by its own
	 * tau_i + T_i, T_i longer than the fleet's T. */
	if (p->fleet) {
		for (i = 0; i < 2; i++)
			if (__builtin_mul_overflow(p->split[i].interval_ns, p->split[i].base + 2, &t) ||
			    __builtin_add_overflow(h, t, &h))
				h = UINT64_MAX / 2;
		if (__builtin_add_overflow(h, p->tier[0].unit_ns + p->lease_ns +
						      (uint64_t)(p->fleet_clock_ns < 0 ? -p->fleet_clock_ns : p->fleet_clock_ns),
					   &h))
			h = UINT64_MAX / 2;
	}
	return h;
}

/* The most a test's clock offset may be (the config file's
 * fleet_clock_ns; 0 outside tests). */
#define FC_FLEET_CLOCK_MAX (86400LL * (int64_t)FC_NS_PER_SEC)

/* Reads a fleet policy's tail (struct fc_shm_fleet, at *p) into pol: one
 * rate, no cap, warm-up or delay (the loader refuses them: the words are
 * the fleet's), splits whose segments a node set can have (r < 1024). */
static bool fc_fleet_read(const struct fc_l7_index *ix, const struct fc_shm_policy *sp, const uint8_t **p,
			  const uint8_t *end, struct fc_l7_policy *pol)
{
	struct fc_shm_fleet f;
	int64_t clk = ix->hdr->fleet_clock_ns;
	int i;

	if (sp->ntiers != 1 || sp->concurrency || sp->warmup_ms || sp->action == FC_ACTION_DELAY ||
	    (size_t)(end - *p) < sizeof(f) || clk > FC_FLEET_CLOCK_MAX || clk < -FC_FLEET_CLOCK_MAX)
		return false;
	memcpy(&f, *p, sizeof(f)); /* read once: what is checked is what is used */
	*p += sizeof(f);
	for (i = 0; i < 2; i++)
		if (f.split[i].seg_lo > f.split[i].seg_hi || f.split[i].seg_hi > (1024ULL << 32) ||
		    f.split[i].base > FC_RATE_MAX || f.split[i].interval_ns > FC_FLEET_INTERVAL_MAX)
			return false;
	if (sp->algo == FC_ALGO_FLEET_GCRA && (f.lease_ns < FC_MS_NS || f.lease_ns > FC_UNIT_MAX))
		return false;
	pol->fleet = true;
	memcpy(pol->split, f.split, sizeof(pol->split));
	pol->lease_ns = f.lease_ns;
	pol->fixed_u = f.fixed_u;
	pol->fleet_clock_ns = clk;
	pol->fleet_fresh_ns = ix->hdr->fleet_fresh_ns;
	return true;
}

/* Reads a policy item of len bytes at it; its fixed part is copied first. */
static bool fc_policy_read(struct fc_l7_index *ix, const uint8_t *it, size_t len, struct fc_l7_policy *pol,
			   const struct fc_l7_alloc *a)
{
	struct fc_shm_policy sp;
	const uint8_t *p = it + sizeof(sp), *end = it + len;
	bool l7 = false;
	int i;

	if (len < sizeof(sp))
		return false;
	memcpy(&sp, it, sizeof(sp));
	if (!sp.slot || sp.slot >= ix->nslots || (!sp.ntiers && !sp.concurrency) || sp.ntiers > FC_MAX_TIERS || !sp.ndims ||
	    sp.ndims > FC_SHM_MAX_DIMS || sp.algo > FC_ALGO_FLEET_GCRA || sp.action > FC_ACTION_DELAY ||
	    !(sp.flags & FC_SHM_POLICY_FLEET) != (sp.algo < FC_ALGO_FLEET_WINDOW))
		return false;
	memset(pol, 0, sizeof(*pol));
	pol->id = sp.id;
	pol->slot = sp.slot;
	pol->epoch = sp.epoch;
	pol->delay_burst = sp.delay_burst;
	pol->algo = sp.algo;
	pol->action = sp.action;
	pol->ntiers = sp.ntiers;
	pol->ndims = sp.ndims;
	pol->anchor = UINT8_MAX;
	/* A dry run switches nothing off (the loader refuses the pair). */
	pol->flags = sp.flags & (sp.action == FC_ACTION_LOG ? FC_POLICY_PRECISE : FC_POLICY_PRECISE | FC_POLICY_OVERRIDE);
	pol->escalate = sp.flags & FC_SHM_POLICY_ESCALATE;
	pol->max_keys = sp.max_keys;
	pol->new_keys = sp.new_keys;
	pol->concurrency = sp.concurrency;
	for (i = 0; i < sp.ntiers; i++) {
		pol->tier[i] = sp.tier[i];
		if (!fc_tier_ok(fc_algo_base(sp.algo), &pol->tier[i]))
			return false;
	}
	if ((sp.flags & FC_SHM_POLICY_FLEET) && !fc_fleet_read(ix, &sp, &p, end, pol))
		return false;
	/* A GCRA policy's generation (the tag its words carry, fc_limit.h)
	 * and rescale; the algorithm says whether words carry one. */
	if (sp.algo == FC_ALGO_GCRA)
		pol->lim.gen = (uint8_t)((sp.gen & 3) | FC_GEN_GCRA);
	memcpy(pol->lim.rescale, sp.rescale, sizeof(pol->lim.rescale));
	/* A ramp on the first GCRA tier, its word after the tiers'. */
	pol->warmup_ms = sp.warmup_ms;
	if (sp.warmup_ms && (sp.algo != FC_ALGO_GCRA || !sp.ntiers || sp.ntiers >= FC_MAX_TIERS || sp.warmup_ms < FC_WARMUP_MIN_MS ||
			     sp.warmup_ms > FC_WARMUP_MAX_MS || sp.tier[0].tolerance_ns > FC_WARM_TOL_MAX))
		return false;
	for (i = 0; i < sp.ndims; i++) {
		if (!fc_dim_read(ix, &p, end, &pol->dims[i], a))
			return false;
		l7 |= pol->dims[i].kind != FC_DIM_IP;
		pol->keyed |= pol->dims[i].flags & FC_SHM_DIM_ANY;
		pol->key_vals |= pol->dims[i].flags & FC_SHM_DIM_ANY &&
				 (pol->dims[i].kind == FC_DIM_ARG || pol->dims[i].kind == FC_DIM_HEADER);
		pol->key_uid |= pol->dims[i].flags & FC_SHM_DIM_ANY && pol->dims[i].kind == FC_DIM_UID;
		/* Filed under its first fixed value; a wildcard or prefix can not be looked up. */
		if (pol->dims[i].kind != FC_DIM_IP && !pol->dims[i].flags && pol->anchor == UINT8_MAX)
			pol->anchor = (uint8_t)i;
	}
	if (pol->keyed && (!pol->new_keys || pol->new_keys > FC_NS_PER_SEC))
		return false;
	if (pol->keyed && pol->concurrency && fc_conc_word(pol) >= FC_MAX_TIERS)
		return false;
	pol->show_keys = pol->keyed && (sp.flags & FC_SHM_POLICY_SHOW_KEYS);
	pol->key_lead_ns = fc_key_lead(pol);
	if (pol->keyed && pol->fleet) { /* one identity across the fleet: the store's id, not the slot */
		uint64_t fk[2];

		memcpy(fk, ix->hdr->fleet_secret, sizeof(fk));
		fc_sip_init(&pol->key_sip, fk);
		fc_sip_word(&pol->key_sip, (uint64_t)pol->id << 32 | pol->epoch);
	} else if (pol->keyed) {
		fc_sip_init(&pol->key_sip, ix->key_secret);
		fc_sip_word(&pol->key_sip, (uint64_t)pol->epoch << 32 | pol->slot);
	}
	return l7 || (sp.flags & FC_SHM_POLICY_HTTP); /* else an ip-only policy: XDP/TC's */
}

static void fc_file_policy(struct fc_l7_index *ix, uint32_t i)
{
	const struct fc_l7_dim *d = &ix->pol[i].dims[ix->pol[i].anchor];
	uint64_t h = fc_l7_hash(d->kind, d->name_idx, d->value.data, d->value.len);
	size_t b = h & (ix->cap - 1);

	for (;; b = (b + 1) & (ix->cap - 1)) {
		struct fc_l7_entry *e = &ix->tab[b];
		const struct fc_l7_dim *hd;

		if (e->head == FC_NONE) {
			e->hash = h;
			e->head = i;
			ix->pol[i].next = FC_NONE;
			return;
		}
		hd = &ix->pol[e->head].dims[ix->pol[e->head].anchor];
		if (e->hash == h && hd->kind == d->kind && hd->name_idx == d->name_idx &&
		    fc_str_eq(hd->value, d->value.data, d->value.len)) {
			ix->pol[i].next = e->head;
			e->head = i;
			return;
		}
	}
}

/* addr with the bits past plen cleared, as 16 bytes (an IPv4 address is
 * bytes 0-3, and its mask clears the rest). Two 64-bit words, no loop:
 * this runs for every request that meets an ip= dimension or ban. */
static void fc_mask(uint8_t *out, const uint8_t *addr, uint8_t family, uint8_t plen)
{
	uint64_t w[2], hi, lo;

	if (family == 4 && plen > 32)
		plen = 32;
	memcpy(w, addr, 16);
	hi = plen >= 64 ? ~0ULL : plen ? ~0ULL << (64 - plen) : 0;
	lo = plen >= 128 ? ~0ULL : plen > 64 ? ~0ULL << (128 - plen) : 0;
	w[0] &= htobe64(hi);
	w[1] &= htobe64(lo);
	memcpy(out, w, 16);
}

static int fc_fail(struct fc_l7_index *ix, const char *why)
{
	size_t i;

	for (i = 0; why[i] && i + 1 < sizeof(ix->why); i++)
		ix->why[i] = why[i];
	ix->why[i] = '\0';
	return -1;
}

/* Whether dimension q (of a policy Q) covers p's value on it: q is *, or
 * p has the dimension with a value q's equals or q's prefix holds. Where p
 * lacks the dimension, absent says. */
static bool fc_dim_covers(const struct fc_l7_dim *q, const struct fc_l7_policy *p, bool absent)
{
	uint8_t masked[16];
	int i;

	for (i = 0; i < p->ndims; i++) {
		const struct fc_l7_dim *d = &p->dims[i];

		if (d->kind != q->kind || d->name_idx != q->name_idx)
			continue;
		if (q->flags & FC_SHM_DIM_ANY)
			return true;
		if (d->flags & FC_SHM_DIM_ANY)
			return false;
		if (q->kind == FC_DIM_IP) {
			if (d->family != q->family || d->plen < q->plen)
				return false;
			fc_mask(masked, d->addr, d->family, q->plen);
			return !memcmp(masked, q->addr, d->family == 4 ? 4 : 16);
		}
		if (q->flags & FC_SHM_DIM_PREFIX) /* p's path (with its '/'), or p's own prefix, starts with q's */
			return (d->value.len >= q->value.len && !memcmp(d->value.data, q->value.data, q->value.len)) ||
			       (!(d->flags & FC_SHM_DIM_PREFIX) && d->value.len + 1 == q->value.len &&
				!memcmp(d->value.data, q->value.data, d->value.len));
		return !(d->flags & FC_SHM_DIM_PREFIX) && fc_str_eq(q->value, d->value.data, d->value.len);
	}
	return absent;
}

/* Whether every dimension of a covers b's value there (absent: where b
 * lacks it). */
static bool fc_covers_all(const struct fc_l7_policy *a, const struct fc_l7_policy *b, bool absent)
{
	int i;

	for (i = 0; i < a->ndims; i++)
		if (!fc_dim_covers(&a->dims[i], b, absent))
			return false;
	return true;
}

/*
 * Q is more general than P when each of Q's dimensions is absent from P's
 * match, *, or covers P's value there (the same value, a prefix holding
 * it) -- unless Q is more specific: P's every dimension is in Q and covers
 * Q's value (uid=alice,uri=/x is not more general than uid=alice).
 */
bool fc_l7_more_general(const struct fc_l7_policy *q, const struct fc_l7_policy *p)
{
	return fc_covers_all(q, p, true) && !fc_covers_all(p, q, false);
}

/* Whether override p switches q off: q is more general than p, unless q is
 * an override more general than p too (such overrides both apply). */
static bool fc_switches_off(const struct fc_l7_policy *p, const struct fc_l7_policy *q)
{
	return p != q && fc_l7_more_general(q, p) && !(q->flags & FC_POLICY_OVERRIDE && fc_l7_more_general(p, q));
}

/* Notes q in p's list (out: room for it, or NULL to count), *n one more. */
static void fc_off_note(const struct fc_l7_index *ix, const struct fc_l7_policy *p, uint32_t q, uint32_t *out,
			size_t *n)
{
	if (!fc_switches_off(p, &ix->pol[q]))
		return;
	if (out)
		out[*n] = q;
	(*n)++;
}

/* Anchored policies grouped by their anchor's dimension: each entry its
 * kind and name above bit 32, the policy below. */
struct fc_anchors {
	uint64_t *pol;
	size_t n;
};

static int fc_u64_cmp(const void *x, const void *y)
{
	uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;

	return (a > b) - (a < b);
}

/* p's dimension of that kind and name, or NULL. */
static const struct fc_l7_dim *fc_dim_of(const struct fc_l7_policy *p, uint8_t kind, uint8_t name_idx)
{
	int i;

	for (i = 0; i < p->ndims; i++)
		if (p->dims[i].kind == kind && p->dims[i].name_idx == name_idx)
			return &p->dims[i];
	return NULL;
}

/* What override p switches off, into out (NULL: counted only). A policy
 * filed under a fixed value can be more general than p only if p has that
 * value (a fixed value covers only itself) or lacks that dimension: the
 * chains of p's own values, the groups of dimensions p lacks and the
 * policies filed nowhere are all there is to look at. */
static size_t fc_off_walk(const struct fc_l7_index *ix, const struct fc_anchors *an, const struct fc_l7_policy *p,
			  uint32_t *out)
{
	size_t n = 0, i, b, e;
	uint32_t q;
	uint64_t h;
	int d;

	for (i = 0; i < ix->nloose; i++)
		fc_off_note(ix, p, ix->loose[i].pol, out, &n);
	for (i = 0; i < an->n; i = e) {
		bool lacks = !fc_dim_of(p, (uint8_t)(an->pol[i] >> 40), (uint8_t)(an->pol[i] >> 32));

		for (e = i; e < an->n && an->pol[e] >> 32 == an->pol[i] >> 32; e++)
			if (lacks)
				fc_off_note(ix, p, (uint32_t)an->pol[e], out, &n);
	}
	for (d = 0; d < p->ndims; d++) {
		const struct fc_l7_dim *pd = &p->dims[d];

		if (pd->kind == FC_DIM_IP || pd->flags)
			continue;
		h = fc_l7_hash(pd->kind, pd->name_idx, pd->value.data, pd->value.len);
		for (b = h & (ix->cap - 1); ix->tab[b].head != FC_NONE; b = (b + 1) & (ix->cap - 1)) {
			const struct fc_l7_policy *hp = &ix->pol[ix->tab[b].head];
			const struct fc_l7_dim *hd = &hp->dims[hp->anchor];

			if (ix->tab[b].hash != h || hd->kind != pd->kind || hd->name_idx != pd->name_idx ||
			    !fc_str_eq(hd->value, pd->value.data, pd->value.len))
				continue;
			for (q = ix->tab[b].head; q != FC_NONE; q = ix->pol[q].next)
				fc_off_note(ix, p, q, out, &n);
			break;
		}
	}
	return n;
}

/* Lists what each override switches off, once per publish: a request then
 * only marks the lists of the overrides it matched. An override whose list
 * would pass FC_L7_MAX_OFFS in all is checked against the request's matches. */
static int fc_offs_build(struct fc_l7_index *ix, const struct fc_l7_alloc *a)
{
	struct fc_anchors an = { 0 };
	size_t total = 0, n, i;

	for (i = 0; i < ix->npolicies && !ix->has_override; i++)
		ix->has_override = ix->pol[i].flags & FC_POLICY_OVERRIDE;
	ix->marks = ix->has_override || ix->npolicies > ix->nloose;
	if (!ix->has_override)
		return 0;
	if (!(an.pol = a->alloc(a->ctx, (ix->npolicies + 1) * sizeof(*an.pol))))
		return fc_fail(ix, "out of memory");
	for (i = 0; i < ix->npolicies; i++) {
		const struct fc_l7_policy *q = &ix->pol[i];

		if (q->anchor != UINT8_MAX)
			an.pol[an.n++] = (uint64_t)q->dims[q->anchor].kind << 40 |
					 (uint64_t)q->dims[q->anchor].name_idx << 32 | i;
	}
	qsort(an.pol, an.n, sizeof(*an.pol), fc_u64_cmp);
	for (i = 0; i < ix->npolicies; i++) {
		struct fc_l7_policy *p = &ix->pol[i];

		if (!(p->flags & FC_POLICY_OVERRIDE))
			continue;
		n = fc_off_walk(ix, &an, p, NULL);
		p->off_at = (uint32_t)total;
		p->noff = total + n > FC_L7_MAX_OFFS ? FC_L7_OFF_LATE : (uint32_t)n;
		total += p->noff == FC_L7_OFF_LATE ? 0 : n;
	}
	ix->offs = a->alloc(a->ctx, (total + 1) * sizeof(*ix->offs));
	ix->off_mark = a->alloc(a->ctx, (ix->npolicies + 1) * sizeof(*ix->off_mark));
	if (!ix->offs || !ix->off_mark)
		return fc_fail(ix, "out of memory");
	for (i = 0; i < ix->npolicies; i++)
		if (ix->pol[i].flags & FC_POLICY_OVERRIDE && ix->pol[i].noff != FC_L7_OFF_LATE)
			fc_off_walk(ix, &an, &ix->pol[i], ix->offs + ix->pol[i].off_at);
	return 0;
}

/* The least an item can be: a policy with one dimension. Bounds how many
 * items a block can hold, whatever its header says. */
#define FC_MIN_ITEM fc_shm_align8(sizeof(struct fc_shm_policy) + sizeof(struct fc_shm_dim) + 4)

/* What a loose policy asks of a request, when it asks only that the
 * request have some dimensions (fc_dim_matches of DIM=* on ip, uid, uri). */
static uint32_t fc_loose_need(const struct fc_l7_policy *p)
{
	static const uint32_t has[] = { [FC_DIM_IP] = FC_L7_HAS_IP, [FC_DIM_UID] = FC_L7_HAS_UID,
					[FC_DIM_URI] = FC_L7_HAS_URI };
	uint32_t need = 0;
	int d;

	for (d = 0; d < p->ndims; d++) {
		const struct fc_l7_dim *dm = &p->dims[d];

		if (dm->flags != FC_SHM_DIM_ANY || dm->kind >= sizeof(has) / sizeof(has[0]) || !has[dm->kind])
			return FC_L7_NEED_DIMS;
		need |= has[dm->kind];
	}
	return need;
}

int fc_l7_build(const void *base, size_t size, void *state, size_t state_size, struct fc_l7_index *ix,
		const struct fc_l7_alloc *a)
{
	const struct fc_shm_header *h = base;
	const struct fc_shm_state_header *sh = state;
	const struct fc_shm_block *blk;
	const uint8_t *p, *end;
	size_t max_items, i;
	uint64_t seq, used;
	uint32_t active, nitems;

	memset(ix, 0, sizeof(*ix));
	if (size != FC_SHM_SIZE || h->magic != FC_SHM_MAGIC || h->version != FC_SHM_VERSION)
		return fc_fail(ix, "not a freqctl shm of this version");
	if (!fc_state_nkeys(state_size) || sh->magic != FC_SHM_STATE_MAGIC || sh->version != FC_SHM_VERSION)
		return fc_fail(ix, "its state file is not one of this version");
	seq = __atomic_load_n(&h->seq, __ATOMIC_ACQUIRE);
	active = __atomic_load_n(&h->active, __ATOMIC_ACQUIRE);
	if (!__atomic_load_n(&h->init, __ATOMIC_ACQUIRE))
		return fc_fail(ix, "not initialised yet");
	if (active > 1)
		return fc_fail(ix, "header out of bounds");
	/* Every offset is a constant of the layout: none is read from a file. */
	ix->seq = seq;
	ix->hdr = h;
	ix->bans = (const struct fc_shm_ban_slot *)((const char *)base + FC_SHM_BANS_OFF(0));
	ix->slots = (struct fc_shm_slot *)((char *)state + FC_STATE_SLOTS_OFF);
	ix->nslots = FC_SHM_SLOTS;
	ix->ring = (struct fc_shm_ring *)((char *)state + FC_STATE_RING_OFF);
	ix->fleet_ring = (struct fc_shm_fleet_ring *)((char *)state + FC_STATE_FLEET_OFF);
	ix->state_hdr = state;
	ix->keys = (struct fc_shm_key *)((char *)state + FC_STATE_KEYS_OFF);
	ix->nkeys = fc_state_nkeys(state_size);
	ix->vals = (struct fc_shm_val *)((char *)state + FC_STATE_VALS_OFF);
	memcpy(ix->key_secret, h->key_secret, sizeof(ix->key_secret));
	blk = (const struct fc_shm_block *)((const char *)base + FC_SHM_BLOCK_OFF(active));
	used = blk->used;
	nitems = blk->nitems;
	if (blk->magic != FC_SHM_BLOCK_MAGIC || used > FC_SHM_BLOCK_SIZE - sizeof(*blk))
		return fc_fail(ix, "config block out of bounds");
	p = (const uint8_t *)(blk + 1);
	end = p + used;
	/* As many as the block can hold and slots can take, whatever nitems says. */
	max_items = used / FC_MIN_ITEM;
	if (nitems < max_items)
		max_items = nitems;
	if (max_items > FC_MAX_POLICIES)
		max_items = FC_MAX_POLICIES;

	ix->pol = a->alloc(a->ctx, (max_items + 1) * sizeof(*ix->pol));
	ix->mark = a->alloc(a->ctx, (max_items + 1) * sizeof(*ix->mark));
	ix->gen = a->alloc(a->ctx, sizeof(*ix->gen));
	ix->cap = fc_pow2(max_items + 1);
	ix->tab = a->alloc(a->ctx, ix->cap * sizeof(*ix->tab));
	ix->loose = a->alloc(a->ctx, (max_items + 1) * sizeof(*ix->loose));
	if (!ix->pol || !ix->mark || !ix->gen || !ix->tab || !ix->loose)
		return fc_fail(ix, "out of memory");
	for (i = 0; i < ix->cap; i++)
		ix->tab[i].head = FC_NONE;

	for (i = 0; i < max_items && (size_t)(end - p) >= sizeof(struct fc_shm_item); i++) {
		struct fc_shm_item it;
		bool ok;

		memcpy(&it, p, sizeof(it)); /* read once: what is checked is what is used */
		if (it.magic != FC_SHM_ITEM_MAGIC || it.len < sizeof(it) || (it.len & 7) || it.len > (size_t)(end - p)) {
			ix->skipped += max_items - i; /* no way to find the next item: stop */
			break;
		}
		ok = it.kind == FC_SHM_POLICY && fc_policy_read(ix, p, it.len, &ix->pol[ix->npolicies], a);
		if (ok) {
			const struct fc_l7_policy *np = &ix->pol[ix->npolicies];

			ix->has_keys |= np->keyed;
			if (np->anchor == UINT8_MAX) {
				ix->loose[ix->nloose].pol = (uint32_t)ix->npolicies++;
				ix->loose[ix->nloose++].need = fc_loose_need(np);
			} else {
				ix->has_uid |= np->dims[np->anchor].kind == FC_DIM_UID;
				ix->has_uri |= np->dims[np->anchor].kind == FC_DIM_URI;
				fc_file_policy(ix, (uint32_t)ix->npolicies++);
			}
		}
		ix->skipped += !ok;
		p += it.len;
	}
	if (fc_offs_build(ix, a) < 0)
		return -1;
	/* A publish raced the copy: what was read may mix two blocks. The fence
	 * keeps every read above before the seq is read again. */
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	if (__atomic_load_n(&h->seq, __ATOMIC_RELAXED) != seq)
		return -2;
	return 0;
}

/* Copies slot s of a table whose slots carry stamp into c, whole: between
 * two even, equal reads of its seqlock. -1: not in use (a probe ends
 * there); 1: it never settled (a writer killed half-way): no ban. */
static int fc_ban_read(const struct fc_shm_ban_slot *s, __u32 stamp, struct fc_shm_ban_slot *c)
{
	__u16 v;
	int i;

	if (__atomic_load_n(&s->seq, __ATOMIC_ACQUIRE) != stamp)
		return -1;
	for (i = 0; i < FC_SHM_BAN_TRIES; i++) {
		v = __atomic_load_n(&s->ver, __ATOMIC_ACQUIRE);
		if (v & 1)
			continue;
		memcpy(c, s, sizeof(*c));
		/* Changed in place without the seqlock (maps/fc_shm.h): each read whole. */
		c->family = __atomic_load_n(&s->family, __ATOMIC_ACQUIRE);
		c->expires_ns = __atomic_load_n(&s->expires_ns, __ATOMIC_ACQUIRE);
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (__atomic_load_n(&s->ver, __ATOMIC_RELAXED) == v && __atomic_load_n(&s->seq, __ATOMIC_RELAXED) == stamp)
			return 0;
	}
	return 1;
}

/* Whether a live ban (or allow entry: family | FC_SHM_BAN_ALLOW) on
 * (family, plen, key) is in the ban table tab whose slots carry stamp, at
 * now. The first slot of the probe sequence not in use
 * ends the search: a new ban takes the first one free, or a tombstone
 * before it (maps/fc_shm.h). */
static bool fc_ban_holds(const struct fc_l7_index *ix, const struct fc_shm_ban_slot *tab, __u32 stamp, uint8_t family,
			 uint8_t plen, const void *key, uint32_t len, uint64_t now)
{
	__u64 h = family & ~FC_SHM_BAN_ALLOW ? fc_shm_ban_hash(family, plen, key, len) :
					       fc_shm_uid_hash(ix->key_secret, family, key, len);
	struct fc_shm_ban_slot c;
	__u32 step;
	int rc;

	for (step = 0; step < FC_SHM_BAN_LEVELS + FC_SHM_BAN_PROBE; step++) {
		rc = fc_ban_read(&tab[fc_shm_ban_probe(h, step)], stamp, &c);
		if (rc < 0)
			return false;
		if (rc || c.hash != h || c.family != family || c.plen != plen ||
		    ((family & ~FC_SHM_BAN_ALLOW) && memcmp(c.addr, key, len)))
			continue; /* unsettled, a tombstone (family FC_SHM_BAN_DEAD), another key */
		return !c.expires_ns || now < c.expires_ns;
	}
	return false;
}

/* The prefix lengths with an IP ban (allow entry), of a family, longest
 * first: the bits of the header's bitmap plens (IPv4 lengths at bits 0-32,
 * IPv6 at 64-192). */
static bool fc_next_plen(const __u64 *plens, uint8_t family, int *len)
{
	int bit;

	for (bit = (family == 6 ? 64 : 0) + *len - 1; bit >= (family == 6 ? 64 : 0); bit--) {
		__u64 w = __atomic_load_n(&plens[bit / 64], __ATOMIC_ACQUIRE);

		/* Skip whole empty words at once. */
		w &= bit % 64 == 63 ? ~0ULL : (2ULL << (bit % 64)) - 1;
		if (!w) {
			bit -= bit % 64;
			continue;
		}
		bit = bit - bit % 64 + 63 - __builtin_clzll(w);
		*len = bit - (family == 6 ? 64 : 0);
		return true;
	}
	return false;
}

/* Whether the ban table tab holds an allow entry (allow) for every copy of
 * rq's uid, or a ban (!allow) for one of them: copies a client adds can
 * lose it an allow entry, never hide a ban. */
static bool fc_uid_listed(const struct fc_l7_index *ix, const struct fc_shm_ban_slot *tab, __u32 stamp, uint8_t kind,
			  const struct fc_l7_req *rq, uint64_t now, bool allow)
{
	size_t i, n = rq->nuids ? rq->nuids : 1;
	struct fc_l7_str u;
	bool hit;

	for (i = 0; i < n; i++) {
		u = rq->nuids ? rq->uids[i] : rq->uid;
		hit = u.len && fc_ban_holds(ix, tab, stamp, kind, 0, u.data, (uint32_t)u.len, now);
		if (hit != allow)
			return hit; /* a copy without an allow entry (false), or a banned one (true) */
	}
	return allow;
}

/* The same, shortest first (from *len + 1). */
static bool fc_next_plen_up(const __u64 *plens, uint8_t family, int *len)
{
	int base = family == 6 ? 64 : 0, bit;

	for (bit = base + *len + 1; bit <= base + (family == 6 ? 128 : 32); bit++) {
		__u64 w = __atomic_load_n(&plens[bit / 64], __ATOMIC_ACQUIRE) >> (bit % 64);

		if (!w) {
			bit += 63 - bit % 64;
			continue;
		}
		bit += __builtin_ctzll(w);
		if (bit > base + (family == 6 ? 128 : 32))
			break;
		*len = bit - base;
		return true;
	}
	return false;
}

/* One lookup of every ban (allow: allow entry) that could hold rq, in the
 * live table: longest first, or (up) shortest first. */
static bool fc_listed_in(const struct fc_l7_index *ix, __u64 live, const struct fc_l7_req *rq, uint64_t now, bool allow,
			 bool up, bool *uid)
{
	const struct fc_shm_ban_slot *tab = ix->bans + (size_t)FC_SHM_BAN_TABLE(live) * FC_SHM_BAN_SLOTS;
	const __u64 *plens = allow ? ix->hdr->allow_plens : ix->hdr->ban_plens;
	uint8_t kind = allow ? FC_SHM_BAN_ALLOW : 0;
	__u32 stamp = FC_SHM_BAN_STAMP(live);
	uint8_t masked[16];
	int len;

	*uid = true;
	/* No uid banned, no lookup: a miss in a 80 MB table costs more than the
	 * rest. An allow entry needs a copy every application reads as the uid
	 * (a lone ?UID=partner is no uid to most). */
	if (rq->uid.len && (rq->uid_exact || !allow) &&
	    __atomic_load_n(&plens[3], __ATOMIC_ACQUIRE) & FC_SHM_BAN_UIDS &&
	    fc_uid_listed(ix, tab, stamp, kind, rq, now, allow))
		return true;
	*uid = false;
	if (!rq->family)
		return false;
	for (len = up ? -1 : rq->family == 4 ? 33 : 129;
	     up ? fc_next_plen_up(plens, rq->family, &len) : fc_next_plen(plens, rq->family, &len);) {
		fc_mask(masked, rq->addr, rq->family, (uint8_t)len);
		if (fc_ban_holds(ix, tab, stamp, kind | rq->family, (uint8_t)len, masked, rq->family == 4 ? 4 : 16, now))
			return true;
	}
	return false;
}

/* Whether a bitmap of prefix lengths (ban_plens, allow_plens) is empty: no
 * length, no uid flag, so fc_listed_in would find nothing, having read the
 * same words. Inline: most requests meet no ban and no allow entry, and
 * this is all they pay for both. */
static inline bool fc_plens_empty(const __u64 *pl)
{
	return !(__atomic_load_n(&pl[0], __ATOMIC_ACQUIRE) | __atomic_load_n(&pl[1], __ATOMIC_ACQUIRE) |
		 __atomic_load_n(&pl[2], __ATOMIC_ACQUIRE) | __atomic_load_n(&pl[3], __ATOMIC_ACQUIRE));
}

/*
 * A table is rewritten two publishes after it was live: a lookup that saw
 * the live table change under it looks again, in the new one. A change in
 * place adds bans before it lifts any (doc/architecture.md, Publishing
 * order), yet a lookup's probes, one per length, may each meet another
 * instant of it: the new bans' lengths before they were added, the old
 * ones' after they were lifted. So while one is under way (ban_gen odd) a
 * lookup that found nothing probes the lengths the other way too, which
 * meets one or the other; one that saw ban_gen move looks again.
 */
static bool fc_listed(const struct fc_l7_index *ix, const struct fc_l7_req *rq, uint64_t now, bool allow, bool *uid)
{
	__u64 live = __atomic_load_n(&ix->hdr->ban_live, __ATOMIC_ACQUIRE), again;
	__u32 gen = __atomic_load_n(&ix->hdr->ban_gen, __ATOMIC_ACQUIRE), gen2;
	bool banned = false;
	int tries;

	for (tries = 0; live && tries < 3; tries++, live = again, gen = gen2) {
		banned = fc_listed_in(ix, live, rq, now, allow, false, uid);
		if (!banned && (gen & 1))
			banned = fc_listed_in(ix, live, rq, now, allow, true, uid);
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		again = __atomic_load_n(&ix->hdr->ban_live, __ATOMIC_RELAXED);
		gen2 = __atomic_load_n(&ix->hdr->ban_gen, __ATOMIC_RELAXED);
		if (banned || (again == live && gen2 == gen))
			break;
	}
	return banned;
}

/* Whether some occurrence of the argument or header (kind, idx) has value v
 * (any value, when any). */
static bool fc_val_in(const struct fc_l7_req *rq, uint8_t kind, uint8_t idx, struct fc_l7_str v, bool any)
{
	size_t i;

	for (i = 0; i < rq->nvals; i++)
		if (rq->vals[i].kind == kind && rq->vals[i].idx == idx &&
		    (any || fc_str_eq(v, rq->vals[i].v.data, rq->vals[i].v.len)))
			return true;
	return false;
}

/* Whether a copy of rq's uid is v. */
static bool fc_uid_is(const struct fc_l7_req *rq, struct fc_l7_str v)
{
	size_t i;

	if (fc_str_eq(v, rq->uid.data, rq->uid.len))
		return true;
	for (i = 1; i < rq->nuids; i++)
		if (fc_str_eq(v, rq->uids[i].data, rq->uids[i].len))
			return true;
	return false;
}

FC_HOT bool fc_dim_matches(const struct fc_l7_dim *d, const struct fc_l7_req *rq)
{
	uint8_t masked[16];

	if (d->flags & FC_SHM_DIM_ANY) /* the request has the dimension */
		return d->kind == FC_DIM_IP ? rq->family != 0 :
		       d->kind == FC_DIM_UID ? rq->uid.len != 0 :
		       d->kind == FC_DIM_URI ? rq->uri.len != 0 : fc_val_in(rq, d->kind, d->name_idx, d->value, true);
	if (d->flags & FC_SHM_DIM_PREFIX)
		return rq->uri.len >= d->value.len && !memcmp(rq->uri.data, d->value.data, d->value.len);
	switch (d->kind) {
	case FC_DIM_IP:
		if (rq->family != d->family)
			return false;
		fc_mask(masked, rq->addr, d->family, d->plen);
		/* Constant sizes: the compiler compares inline, no call. */
		return d->family == 4 ? !memcmp(masked, d->addr, 4) : !memcmp(masked, d->addr, 16);
	case FC_DIM_UID:
		return fc_uid_is(rq, d->value);
	case FC_DIM_URI:
		return fc_str_eq(d->value, rq->uri.data, fc_uri_path(rq->uri).len);
	case FC_DIM_ARG:
	case FC_DIM_HEADER:
		return fc_val_in(rq, d->kind, d->name_idx, d->value, false);
	}
	return false;
}

/* Counts the policies filed under (kind, idx, value) that rq matches in
 * full and were not matched yet, the first cap of all of them into out. */
static void fc_collect(const struct fc_l7_index *ix, const struct fc_l7_req *rq, uint8_t kind, uint8_t idx,
		       struct fc_l7_str v, uint32_t gen, uint32_t *out, size_t cap, size_t *n)
{
	uint64_t h;
	size_t b;
	uint32_t i;
	int d;

	if (!v.len)
		return;
	h = fc_l7_hash(kind, idx, v.data, v.len);
	for (b = h & (ix->cap - 1); ix->tab[b].head != FC_NONE; b = (b + 1) & (ix->cap - 1)) {
		const struct fc_l7_policy *hp = &ix->pol[ix->tab[b].head];
		const struct fc_l7_dim *hd = &hp->dims[hp->anchor];

		if (ix->tab[b].hash != h || hd->kind != kind || hd->name_idx != idx || !fc_str_eq(hd->value, v.data, v.len))
			continue;
		/* Every policy of the chain has this anchor: only the others are checked. */
		for (i = ix->tab[b].head; i != FC_NONE; i = ix->pol[i].next) {
			if (ix->mark[i] == gen)
				continue; /* the anchor value occurs twice in the request */
			for (d = 0; d < ix->pol[i].ndims &&
				    (d == ix->pol[i].anchor || fc_dim_matches(&ix->pol[i].dims[d], rq));
			     d++)
				;
			if (d < ix->pol[i].ndims)
				continue;
			ix->mark[i] = gen;
			if (*n < cap)
				out[*n] = i;
			(*n)++;
		}
		return;
	}
}

static __u64 fc_precise_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (__u64)ts.tv_sec * FC_NS_PER_SEC + (__u64)ts.tv_nsec;
}

/* The clock a policy is charged at: the caller's, or the precise one.
 * Inline: read three times a decision, and nearly always the caller's. */
static inline __u64 fc_clock(const struct fc_l7_policy *p, __u64 now)
{
	return p->flags & FC_POLICY_PRECISE ? fc_precise_now() : now;
}

/* Reports a refused client to the agent: one fetch-and-add, no wait. */
static void fc_report(const struct fc_l7_index *ix, const struct fc_l7_policy *p, const struct fc_l7_req *rq)
{
	struct fc_shm_ring_entry *e;
	__u64 idx;

	if (!p->escalate || !rq->family)
		return;
	idx = __atomic_fetch_add(&ix->ring->head, 1, __ATOMIC_RELAXED);
	e = &ix->ring->e[idx & (FC_SHM_RING_SIZE - 1)];
	__atomic_store_n(&e->seq, 0, __ATOMIC_RELAXED);
	e->policy = p->id;
	e->family = rq->family;
	/* An IPv4 client is its 4 bytes and zeros: one client, one key. */
	memset(e->addr, 0, sizeof(e->addr));
	memcpy(e->addr, rq->addr, rq->family == 4 ? 4 : 16);
	__atomic_store_n(&e->seq, idx + 1, __ATOMIC_RELEASE);
}

/* ---- per-key buckets ---- */

/* The tag of rq's key for p: the policy (slot, epoch) in a word, then each
 * wildcard dimension's value in order (an argument or header given more
 * than once: every value, in order). Never below FC_SHM_KEY_TAG_MIN. */
static __u64 fc_key_tag(const struct fc_l7_policy *p, const struct fc_l7_req *rq)
{
	struct fc_sip h = p->key_sip; /* the policy's word, hashed when the index was built */
	uint8_t unit[16];
	struct fc_l7_str v;
	size_t i;
	int d;

	for (d = 0; d < p->ndims; d++) {
		const struct fc_l7_dim *dm = &p->dims[d];

		if (!(dm->flags & FC_SHM_DIM_ANY))
			continue;
		switch (dm->kind) {
		case FC_DIM_UID:
			v = rq->uid;
			break;
		case FC_DIM_URI:
			v = fc_uri_path(rq->uri);
			break;
		case FC_DIM_IP: /* the client's unit: its address cut to the policy's length */
			fc_mask(unit, rq->addr, rq->family, rq->family == 4 ? dm->unit4 : dm->unit6);
			v = (struct fc_l7_str){ (const char *)unit, rq->family == 4 ? 4 : 16 };
			break;
		default: /* an arg or a header: each of its values */
			for (i = 0; i < rq->nvals; i++)
				if (rq->vals[i].kind == dm->kind && rq->vals[i].idx == dm->name_idx)
					fc_sip_part(&h, rq->vals[i].v.data, rq->vals[i].v.len);
			continue;
		}
		fc_sip_part(&h, v.data, v.len);
	}
	return fc_sip_final(&h) | FC_SHM_KEY_TAG_MIN;
}

/* How many values dimension dm has in rq, for fc_key_text: an argument or
 * header one per occurrence (fc_key_text skips the others), the uid one
 * per copy, the rest one. */
static size_t fc_key_parts(const struct fc_l7_dim *dm, const struct fc_l7_req *rq)
{
	if (dm->kind == FC_DIM_ARG || dm->kind == FC_DIM_HEADER)
		return rq->nvals;
	return dm->kind == FC_DIM_UID && rq->nuids ? rq->nuids : 1;
}

/* The client's unit under ip dimension dm as text into buf: its address,
 * or the prefix it is cut to ("2001:db8:1:2::/64"). Returns its length. */
static size_t fc_unit_text(const struct fc_l7_dim *dm, const struct fc_l7_req *rq, char *buf, size_t size)
{
	uint8_t len = rq->family == 4 ? dm->unit4 : dm->unit6, unit[16];
	size_t l;

	fc_mask(unit, rq->addr, rq->family, len);
	if (!inet_ntop(rq->family == 4 ? AF_INET : AF_INET6, unit, buf, (socklen_t)size))
		return 0;
	l = strlen(buf);
	if (len != (rq->family == 4 ? 32 : 128))
		l += (size_t)snprintf(buf + l, size - l, "/%u", len);
	return l;
}

/* Writes rq's key for p as text into buf (cap above 0; for $freqctl_key
 * and the value table): the wildcard values joined by ','; at most cap
 * bytes. Returns its length. */
static size_t fc_key_text(const struct fc_l7_policy *p, const struct fc_l7_req *rq, char *buf, size_t cap)
{
	char ip[INET6_ADDRSTRLEN + 4];
	size_t n = 0, i, l;
	const char *v;
	int d;

	for (d = 0; d < p->ndims; d++) {
		const struct fc_l7_dim *dm = &p->dims[d];

		if (!(dm->flags & FC_SHM_DIM_ANY))
			continue;
		for (i = 0; i < fc_key_parts(dm, rq); i++) {
			if (dm->kind == FC_DIM_IP) {
				l = fc_unit_text(dm, rq, ip, sizeof(ip));
				v = ip;
			} else if (dm->kind == FC_DIM_UID) {
				v = rq->nuids ? rq->uids[i].data : rq->uid.data;
				l = rq->nuids ? rq->uids[i].len : rq->uid.len;
			} else if (dm->kind == FC_DIM_URI) {
				v = rq->uri.data;
				l = fc_uri_path(rq->uri).len;
			} else if (rq->vals[i].kind == dm->kind && rq->vals[i].idx == dm->name_idx) {
				v = rq->vals[i].v.data;
				l = rq->vals[i].v.len;
			} else {
				continue;
			}
			if (n && n < cap)
				buf[n++] = ',';
			if (l > cap - n)
				l = cap - n;
			memcpy(buf + n, v, l);
			n += l;
		}
	}
	return n;
}

/* now + d, saturating below the held bit. */
static uint64_t fc_key_after(uint64_t now, uint64_t d)
{
	return now + d < now || now + d >= FC_SHM_KEY_HELD ? FC_SHM_KEY_HELD - 1 : now + d;
}

/* When state stops mattering after a charge of p at now. */
static uint64_t fc_key_horizon(const struct fc_l7_policy *p, uint64_t now)
{
	return fc_key_after(now, p->key_lead_ns);
}

/* tau_i = B_i T_i of a fleet gcra key whose point is u, in window w:
 * its share of B times the split's T_i, saturating at FC_ROOM_MAX. */
static __u64 fc_fleet_tau(const struct fc_l7_policy *p, __u32 u, __u64 w)
{
	const struct fc_fleet_split *sp = fc_fleet_split_of(p->split, w);
	__u64 tau;

	if (__builtin_mul_overflow(fc_fleet_share(sp, u), sp->interval_ns, &tau) || tau > FC_ROOM_MAX)
		return FC_ROOM_MAX;
	return tau;
}

/* A fleet gcra key's bucket at now (maps/fc_fleet.h): tau_i in state[3];
 * made while now < fresh + tau_i (the state was made anew), it starts
 * empty at the node's birth: TAT = fresh + tau_i. */
static void fc_key_fresh_gcra(__u64 *state, const struct fc_l7_policy *p, __u64 tag, __u64 now)
{
	__u64 tau;

	now += (__u64)p->fleet_clock_ns;
	tau = fc_fleet_tau(p, fc_fleet_point(tag), now / p->tier[0].unit_ns);
	state[3] = tau;
	state[0] = now < p->fleet_fresh_ns + tau ? p->fleet_fresh_ns + tau : 0;
}

/* A new key's words: empty, of p's generation (a charge of it denies a
 * GCRA word of another), its count of places 0. A fleet window or sliding
 * key's zeros are of no window: its first charge rolls it over. */
static void fc_key_fresh(__u64 *state, const struct fc_l7_policy *p, __u64 tag, __u64 now)
{
	int i;

	memset(state, 0, FC_MAX_TIERS * sizeof(*state));
	for (i = 0; i < p->ntiers && i < FC_MAX_TIERS && (p->lim.gen & FC_GEN_GCRA); i++)
		state[i] = FC_TAG(&p->lim);
	if (p->algo == FC_ALGO_FLEET_GCRA)
		fc_key_fresh_gcra(state, p, tag, now);
}

/* The caps on p's keys (the agent's release records have none): a key
 * new to p is made only below max_keys, and within its new-key rate
 * (charged once a claim). */
struct fc_key_caps {
	const struct fc_l7_index *ix;
	const struct fc_l7_policy *p;
	struct fc_shm_slot *s;
};

static bool fc_key_may_make(void *ctx, __u64 now, bool charged)
{
	const struct fc_key_caps *c = ctx;
	uint32_t max_keys = c->p->max_keys ? c->p->max_keys : c->ix->nkeys / 2;
	__u64 prev, next;

	if (__atomic_load_n(&c->s->keys, __ATOMIC_RELAXED) >= max_keys)
		return false;
	return charged || fc_gcra_try(&c->s->new_keys,
				      &(struct fc_tier){ .interval_ns = FC_NS_PER_SEC / c->p->new_keys,
							 .tolerance_ns = FC_NS_PER_SEC,
							 .unit_ns = FC_NS_PER_SEC,
							 .limit = c->p->new_keys },
				      0, now, 1, &prev, &next);
}

/* rq's bucket of p when it is not first in either of its windows: found
 * further on, or made in the first free or idle entry of its walk if p may
 * make a key now (maps/fc_keytab.h). NULL: the overflow bucket. */
static struct fc_shm_key *fc_key_walk(const struct fc_l7_index *ix, const struct fc_l7_policy *p,
				      struct fc_shm_slot *s, __u64 tag, __u64 now)
{
	struct fc_key_caps caps = { ix, p, s };
	struct fc_keytab_new nk = { .slot = p->slot,
				    .epoch = p->epoch,
				    .idle_ns = fc_key_horizon(p, now),
				    .may_make = fc_key_may_make,
				    .ctx = &caps };
	const struct fc_keytab kt = { ix->keys, ix->slots, ix->nkeys, ix->nslots };

	fc_key_fresh(nk.state, p, tag, now);
	return fc_keytab_claim(&kt, tag, now, &nk);
}

/* rq's bucket of p, found or made (fc_key_walk); NULL: the overflow bucket.
 * Most keys sit first in one of their windows: found without a walk. A key
 * has one entry at most, so where it is found does not matter. */
FC_HOT struct fc_shm_key *fc_key_get(const struct fc_l7_index *ix, const struct fc_l7_policy *p,
				     struct fc_shm_slot *s, __u64 tag, __u64 now)
{
	struct fc_shm_key *e;
	int c;

	for (c = 0; c < 2; c++) {
		e = &ix->keys[fc_shm_key_place(tag, c, ix->nkeys)];
		if (__atomic_load_n(&e->tag, __ATOMIC_ACQUIRE) == tag)
			return e;
	}
	return fc_key_walk(ix, p, s, tag, now);
}

/* Moves e's idle time up to at least p's horizon at now; never down (two
 * workers race), and a bounded number of tries (a hostile writer could
 * keep changing it). The held bit stays as it is. It moves an eighth of
 * p's lead further than needed, so a busy key's line is written once in
 * that while, not on every request: the key is only kept a little longer. */
FC_HOT void fc_key_hold(struct fc_shm_key *e, const struct fc_l7_policy *p, __u64 now)
{
	__u64 cur = __atomic_load_n(&e->idle_ns, __ATOMIC_RELAXED), t = fc_key_horizon(p, now),
	      to = fc_key_after(t, p->key_lead_ns / 8);
	int i;

	for (i = 0; i < 64 && (cur & ~FC_SHM_KEY_HELD) < t; i++)
		if (__atomic_compare_exchange_n(&e->idle_ns, &cur, to | (cur & FC_SHM_KEY_HELD), true, __ATOMIC_RELAXED,
						__ATOMIC_RELAXED))
			break;
}

/* ---- the value table (--show-keys) ---- */

/* What entry e of the value table, whose tag was t, is worth to a key
 * that would take it at secs (maps/fc_shm.h): nothing if never used, left
 * busy by a killed worker or stale; else its score; UINT64_MAX while a
 * worker writes it. Every field is another worker's: read once each. */
static __u64 fc_val_worth(const struct fc_shm_val *e, __u64 t, __u64 secs)
{
	if (t < FC_SHM_KEY_TAG_MIN)
		return fc_shm_key_busy(t, secs) ? UINT64_MAX : 0;
	if ((__u64)__atomic_load_n(&e->secs, __ATOMIC_RELAXED) + FC_SHM_VAL_STALE <= secs)
		return 0;
	return __atomic_load_n(&e->score, __ATOMIC_RELAXED);
}

/* Notes the value of rq's key of p (its tag, its entry k) in the value
 * table: refreshes the key's entry in its set, or takes the one worth least
 * if that is worth less than the key. Never waits: an entry another worker
 * takes meanwhile is left to it. Out of line and cold: it runs for a key's
 * every FC_SHM_VAL_PASSES-th pass, its first refusal and every
 * FC_SHM_VAL_DENIALS-th, never for most requests. */
static __attribute__((noinline, cold)) void fc_val_note(const struct fc_l7_index *ix, const struct fc_l7_policy *p,
							const struct fc_l7_req *rq, __u64 tag,
							const struct fc_shm_key *k, __u64 now)
{
	struct fc_shm_val *set = ix->vals + fc_shm_val_set(tag), *take = NULL;
	__u64 secs = now / FC_NS_PER_SEC, score, least = UINT64_MAX, seen = 0, t, w;
	char text[FC_SHM_VAL_MAX + 1]; /* one byte more: a longer key is seen to be cut */
	size_t len;
	int i;

	score = (__u64)__atomic_load_n(&k->passed, __ATOMIC_RELAXED) + __atomic_load_n(&k->denied, __ATOMIC_RELAXED);
	for (i = 0; i < FC_SHM_VAL_WAYS; i++) {
		struct fc_shm_val *e = &set[i];

		t = __atomic_load_n(&e->tag, __ATOMIC_ACQUIRE);
		if (t == tag && __atomic_load_n(&e->slot, __ATOMIC_RELAXED) == p->slot &&
		    __atomic_load_n(&e->epoch, __ATOMIC_RELAXED) == p->epoch) {
			__atomic_store_n(&e->score, score, __ATOMIC_RELAXED);
			__atomic_store_n(&e->secs, (__u32)secs, __ATOMIC_RELAXED);
			return;
		}
		w = fc_val_worth(e, t, secs);
		if (w < least) {
			least = w;
			take = e;
			seen = t;
		}
	}
	if (!take || least >= score ||
	    !__atomic_compare_exchange_n(&take->tag, &seen, secs | 1, false, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
		return;
	len = fc_key_text(p, rq, text, sizeof(text));
	take->slot = p->slot;
	take->epoch = p->epoch;
	take->score = score;
	take->secs = (__u32)secs;
	take->flags = len > FC_SHM_VAL_MAX ? FC_SHM_VAL_CUT : 0;
	take->len = (__u8)(len > FC_SHM_VAL_MAX ? FC_SHM_VAL_MAX : len);
	memcpy(take->value, text, take->len);
	/* Nothing of the value it held before stays readable after this one. */
	memset(take->value + take->len, 0, FC_SHM_VAL_MAX - take->len);
	__atomic_store_n(&take->tag, tag, __ATOMIC_RELEASE);
}

/* Notes rq's key of p (fc_val_note) if p keeps values and due says the
 * count the request just added calls for it. */
FC_HOT void fc_val_check(const struct fc_l7_index *ix, const struct fc_l7_policy *p, const struct fc_l7_req *rq,
			 __u64 tag, const struct fc_shm_key *k, bool due, __u64 now)
{
	if (__builtin_expect(p->show_keys, 0) && due && k)
		fc_val_note(ix, p, rq, tag, k, now);
}

/* Whether a key's count of passes (denials) that just became n calls for
 * its value: n's low bits, no memory read. */
#define FC_VAL_DUE_PASS(n) ((n) && !((n) & (FC_SHM_VAL_PASSES - 1)))
#define FC_VAL_DUE_DENY(n) ((n) == 1 || ((n) && !((n) & (FC_SHM_VAL_DENIALS - 1))))

/* ---- concurrency places ---- */

/* The state file's parts that places are counted in. */
struct fc_view {
	struct fc_shm_slot *slots;
	struct fc_shm_key *keys;
	uint32_t nkeys;
	struct fc_shm_worker *workers;
	struct fc_shm_hold *holds;
};

static bool fc_view(void *state, size_t size, struct fc_view *v)
{
	v->nkeys = fc_state_nkeys(size);
	if (!state || !v->nkeys)
		return false;
	v->slots = (struct fc_shm_slot *)((char *)state + FC_STATE_SLOTS_OFF);
	v->keys = (struct fc_shm_key *)((char *)state + FC_STATE_KEYS_OFF);
	v->workers = (struct fc_shm_worker *)((char *)state + FC_STATE_WORKERS_OFF);
	v->holds = (struct fc_shm_hold *)((char *)state + FC_STATE_HOLDS_OFF);
	return true;
}

/* Takes a place in count if fewer than cap are taken. */
static bool fc_count_take(__u64 *count, __u64 cap)
{
	__u64 cur = __atomic_load_n(count, __ATOMIC_RELAXED);
	int i;

	for (i = 0; i < 64 && cur < cap; i++)
		if (__atomic_compare_exchange_n(count, &cur, cur + 1, true, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED))
			return true;
	return false;
}

/* A key's last place given back: its entry may go idle again, at the
 * earliest a second on (a worker taking it back meanwhile would take it from
 * under a request taking a place now), unless a place was taken meanwhile. */
static void fc_key_unheld(struct fc_shm_key *e, __u64 *count, __u64 now)
{
	__u64 cur = __atomic_load_n(&e->idle_ns, __ATOMIC_RELAXED), t;
	int i;

	for (i = 0; i < 64; i++) {
		t = cur & ~FC_SHM_KEY_HELD;
		if (t < now + FC_NS_PER_SEC)
			t = now + FC_NS_PER_SEC;
		if (__atomic_compare_exchange_n(&e->idle_ns, &cur, t & ~FC_SHM_KEY_HELD, true, __ATOMIC_SEQ_CST,
						__ATOMIC_RELAXED))
			break;
	}
	if (__atomic_load_n(count, __ATOMIC_SEQ_CST))
		__atomic_fetch_or(&e->idle_ns, FC_SHM_KEY_HELD, __ATOMIC_SEQ_CST);
}

/* Gives a place back where it was counted, if that is still its bucket: the
 * slot's owner is the policy it was taken under, the key's entry is still
 * that key's (its tag says key, policy slot and epoch). */
static void fc_place_give(const struct fc_view *v, __u64 who, __u32 slot, __u32 where, __u64 now)
{
	struct fc_shm_slot *s;
	struct fc_shm_key *e;
	__u64 *count;

	if (!slot || slot >= FC_SHM_SLOTS)
		return;
	s = &v->slots[slot];
	switch (FC_HOLD_KIND(where)) {
	case FC_HOLD_SLOT:
	case FC_HOLD_OVERFLOW:
		if (__atomic_load_n(&s->owner, __ATOMIC_ACQUIRE) != who)
			return;
		if (FC_HOLD_KIND(where) == FC_HOLD_OVERFLOW)
			fc_shm_count_dec(&s->overflow_inflight);
		fc_shm_count_dec(&s->inflight);
		return;
	case FC_HOLD_KEY:
		if (FC_HOLD_INDEX(where) >= v->nkeys)
			return;
		e = &v->keys[FC_HOLD_INDEX(where)];
		count = &e->state[FC_HOLD_WORD(where)];
		if (__atomic_load_n(&e->tag, __ATOMIC_ACQUIRE) != who || __atomic_load_n(&e->slot, __ATOMIC_RELAXED) != slot)
			return;
		if (!fc_shm_count_dec(count))
			fc_key_unheld(e, count, now);
		if ((__u32)__atomic_load_n(&s->owner, __ATOMIC_ACQUIRE) == __atomic_load_n(&e->epoch, __ATOMIC_RELAXED))
			fc_shm_count_dec(&s->inflight);
		return;
	}
}

/* Records a place in the worker's record before it is taken (the hold's
 * who last): a kill after this gives it back, whether taken or not. */
static uint32_t fc_hold_record(struct fc_l7_holder *h, const struct fc_l7_place *pl)
{
	struct fc_shm_hold *hd;
	uint32_t i;

	if (!h || !h->rec)
		return FC_NONE;
	if (h->nfree) {
		i = h->free[--h->nfree];
	} else if (h->used < FC_SHM_HOLDS) {
		i = h->used++;
		__atomic_store_n(&h->holds[i].who, 0, __ATOMIC_RELAXED);
		__atomic_store_n(&h->rec->used, h->used, __ATOMIC_RELEASE);
	} else {
		h->unrecorded++;
		return FC_NONE;
	}
	hd = &h->holds[i];
	hd->slot = pl->slot;
	hd->where = pl->where;
	/* Ordered before the take by the take's own compare-and-exchange (and
	 * read by others only once this process is gone). */
	__atomic_store_n(&hd->who, pl->who, __ATOMIC_RELAXED);
	return i;
}

/* A place given back: its hold cleared, then free for the next. */
static void fc_hold_free(struct fc_l7_holder *h, uint32_t i)
{
	if (i == FC_NONE || !h || !h->rec || i >= FC_SHM_HOLDS || h->nfree >= FC_SHM_HOLDS)
		return;
	__atomic_store_n(&h->holds[i].who, 0, __ATOMIC_RELEASE);
	h->free[h->nfree++] = i;
}

/*
 * Takes a place of p's in the bucket just charged: key e (at index eidx,
 * its tag tag), or the slot's count (the overflow's, for a per-key policy).
 * A key's entry is marked held before the caller checks that it is still
 * the key's, and a worker taking an idle entry checks that it is not held
 * after it marked the entry its own (fc_key_get): with both sequentially
 * consistent, one of them sees the other, so a key holding places is never
 * taken back under it.
 */
static bool fc_place_take(const struct fc_l7_policy *p, struct fc_shm_slot *s, struct fc_shm_key *e, uint32_t eidx,
			  __u64 tag, struct fc_l7_holder *h, struct fc_l7_place *pl)
{
	__u64 *count = e ? &e->state[fc_conc_word(p)] : p->keyed ? &s->overflow_inflight : &s->inflight;

	pl->slot = p->slot;
	pl->who = e ? tag : FC_SHM_OWNER(p->id, p->epoch);
	pl->where = e ? FC_HOLD_AT(eidx, fc_conc_word(p)) : p->keyed ? FC_HOLD_OVERFLOW : FC_HOLD_SLOT;
	pl->hold = fc_hold_record(h, pl);
	if (!fc_count_take(count, p->concurrency)) {
		fc_hold_free(h, pl->hold);
		pl->where = 0;
		return false;
	}
	if (e)
		__atomic_fetch_or(&e->idle_ns, FC_SHM_KEY_HELD, __ATOMIC_SEQ_CST);
	if (p->keyed)
		__atomic_fetch_add(&s->inflight, 1, __ATOMIC_RELAXED);
	return true;
}

/* Undoes a place just taken in key entry e that another worker took back
 * meanwhile: off the entry's count whatever key it now holds (the count may
 * have been cleared with the entry: never below zero). */
static void fc_place_undo(const struct fc_l7_policy *p, struct fc_shm_slot *s, struct fc_shm_key *e,
			  struct fc_l7_holder *h, struct fc_l7_place *pl, __u64 now)
{
	__u64 *count = &e->state[fc_conc_word(p)];

	if (!fc_shm_count_dec(count))
		fc_key_unheld(e, count, now);
	if (__atomic_load_n(&s->owner, __ATOMIC_ACQUIRE) == FC_SHM_OWNER(p->id, p->epoch))
		fc_shm_count_dec(&s->inflight);
	fc_hold_free(h, pl->hold);
	pl->where = 0;
}

static void fc_places_give(const struct fc_view *v, struct fc_l7_holder *h, const struct fc_l7_place *pl, size_t n,
			   uint64_t now)
{
	size_t i;

	for (i = 0; i < n; i++) {
		fc_place_give(v, pl[i].who, pl[i].slot, pl[i].where, now);
		fc_hold_free(h, pl[i].hold);
	}
}

/* Gives back the places a decision took, in the index's state file. */
static void fc_ix_places_give(const struct fc_l7_index *ix, struct fc_l7_holder *h, const struct fc_l7_place *pl,
			      size_t n, uint64_t now)
{
	struct fc_view v = { .slots = ix->slots, .keys = ix->keys, .nkeys = ix->nkeys };

	if (n)
		fc_places_give(&v, h, pl, n, now);
}

void fc_l7_give_back(void *state, size_t state_size, struct fc_l7_holder *h, const struct fc_l7_place *pl, size_t n,
		     uint64_t now)
{
	struct fc_view v;

	if (fc_view(state, state_size, &v))
		fc_places_give(&v, h, pl, n, now);
}

/* Gives back every live hold of record w, then clears it. */
static size_t fc_record_give_back(const struct fc_view *v, size_t w, uint64_t now)
{
	struct fc_shm_hold *hd = v->holds + w * FC_SHM_HOLDS;
	uint32_t used = __atomic_load_n(&v->workers[w].used, __ATOMIC_ACQUIRE), j;
	size_t n = 0;
	__u64 who;

	if (used > FC_SHM_HOLDS)
		used = FC_SHM_HOLDS;
	for (j = 0; j < used; j++) {
		who = __atomic_load_n(&hd[j].who, __ATOMIC_ACQUIRE);
		if (!who)
			continue;
		fc_place_give(v, who, hd[j].slot, hd[j].where, now);
		__atomic_store_n(&hd[j].who, 0, __ATOMIC_RELEASE);
		n++;
	}
	__atomic_store_n(&v->workers[w].used, 0, __ATOMIC_RELEASE);
	return n;
}

int fc_l7_holder_open(void *state, size_t state_size, uint64_t id, uint32_t *free, struct fc_l7_holder *h)
{
	struct fc_view v;
	__u64 o;
	size_t w;

	memset(h, 0, sizeof(*h));
	if (!id || id & FC_SHM_WORKER_RECOVER || !fc_view(state, state_size, &v))
		return -1;
	for (w = 0; w < FC_SHM_WORKERS; w++) {
		o = 0;
		if (!__atomic_compare_exchange_n(&v.workers[w].owner, &o, id, false, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
			continue;
		__atomic_store_n(&v.workers[w].used, 0, __ATOMIC_RELEASE);
		h->rec = &v.workers[w];
		h->holds = v.holds + w * FC_SHM_HOLDS;
		h->free = free;
		return 0;
	}
	return -1;
}

void fc_l7_holder_close(void *state, size_t state_size, struct fc_l7_holder *h, uint64_t now)
{
	struct fc_view v;
	size_t w;

	if (h->rec && fc_view(state, state_size, &v)) {
		w = (size_t)(h->rec - v.workers);
		fc_record_give_back(&v, w, now);
		__atomic_store_n(&v.workers[w].owner, 0, __ATOMIC_RELEASE);
	}
	memset(h, 0, sizeof(*h));
}

size_t fc_l7_recover(void *state, size_t state_size, uint64_t self, uint64_t now, bool (*alive)(uint64_t id))
{
	struct fc_view v;
	size_t n = 0, w;
	__u64 o;

	if (!fc_view(state, state_size, &v))
		return 0;
	if (!alive)
		alive = fc_l7_worker_alive;
	for (w = 0; w < FC_SHM_WORKERS; w++) {
		o = __atomic_load_n(&v.workers[w].owner, __ATOMIC_ACQUIRE);
		/* A record being recovered names the worker recovering it: one
		 * that died at it leaves it to the next. */
		if (!o || (o & ~FC_SHM_WORKER_RECOVER) == self || alive(o & ~FC_SHM_WORKER_RECOVER))
			continue;
		if (!__atomic_compare_exchange_n(&v.workers[w].owner, &o, self | FC_SHM_WORKER_RECOVER, false,
						 __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
			continue;
		n += fc_record_give_back(&v, w, now);
		__atomic_store_n(&v.workers[w].owner, 0, __ATOMIC_RELEASE);
	}
	return n;
}

uint64_t fc_l7_worker_id(int pid)
{
	char path[32], buf[1024], *p;
	unsigned long long start;
	ssize_t n;
	int fd, i;

	if (pid <= 0 || pid >= (1 << 22))
		return 0;
	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	/* After the command, which may hold anything, ')' too: field 3 on; the
	 * start time is field 22. */
	p = strrchr(buf, ')');
	for (i = 3; p && i <= 22; i++)
		p = strchr(p + 1, ' ');
	if (!p || sscanf(p + 1, "%llu", &start) != 1)
		return 0;
	return FC_SHM_WORKER_ID(pid, start);
}

bool fc_l7_worker_alive(uint64_t id)
{
	int pid = (int)FC_SHM_WORKER_PID(id);
	uint64_t cur;

	if (!pid)
		return false;
	cur = fc_l7_worker_id(pid);
	if (cur)
		return cur == id;
	return !(kill(pid, 0) < 0 && errno == ESRCH);
}

/* The queue a policy's TATs may run ahead by: its delay burst, if it delays. */
static __u64 fc_l7_queue(const struct fc_l7_policy *p)
{
	return p->action == FC_ACTION_DELAY ? p->delay_burst : 0;
}

/* Brings the words of a bucket of p (state; key: its key's entry, or
 * NULL) charged under p's limits before a change of its rates to p's
 * generation (fc_gcra_adopt; room: a delaying policy's queue too). A
 * longer interval leads further: a key must not look idle before its
 * rescaled lead has passed. */
static void fc_bucket_adopt(const struct fc_l7_policy *p, __u64 *state, struct fc_shm_key *key, __u64 now)
{
	fc_gcra_adopt((__u64(*)[FC_MAX_TIERS])state, &p->lim, now, FC_ADOPT_ARG(p->ntiers, fc_l7_queue(p)));
	if (key)
		fc_key_hold(key, p, now);
}

/* ---- fleet policies (--fleet, maps/fc_fleet.h) ---- */

/* The rollover of a fleet window or sliding word into window w at now:
 * this node's share of it (of w - 1 too, for sliding's prev), worked out
 * once per key and window. */
static __attribute__((noinline)) int fc_fleet_roll(const struct fc_l7_policy *p, __u64 *state, __u32 u, __u64 now,
						    __u64 w, struct fc_charge *ch)
{
	__u64 unit = p->tier[0].unit_ns, pn[2], sv, sw;
	int ok;

	if (p->algo == FC_ALGO_FLEET_WINDOW) {
		ok = fc_fleet_window_roll(&state[0], w, fc_fleet_share_in(p->split, u, w, unit, p->fleet_fresh_ns, 0), 1,
					  pn);
		ch->prev[0] = pn[0];
		ch->next[0] = pn[1];
		return ok;
	}
	sv = fc_fleet_share_in(p->split, u, w - 1, unit, p->fleet_fresh_ns, unit);
	sw = fc_fleet_share_in(p->split, u, w, unit, p->fleet_fresh_ns, unit);
	return fc_fleet_slide_roll(&state[0], &state[2], unit, now, w, sv, sw, 1, &ch->prev[0], &ch->next[0]);
}

/* A fleet policy's charge of one request at now in state (its key's, tag;
 * its slot's for a fixed key): 1 or 0. The overflow bucket refuses: a key
 * past the caps would take a second share. Out of line: a policy without
 * --fleet pays one test of p->fleet. ch->next[1]: gcra, the lease credit was
 * charged. */
static __attribute__((noinline)) int fc_fleet_charge(const struct fc_l7_policy *p, __u64 *state,
						     const struct fc_shm_key *key, __u64 tag, __u64 now,
						     struct fc_charge *ch, __u64 *wait)
{
	const struct fc_tier *t = &p->tier[0];
	__u32 u = p->keyed ? fc_fleet_point(tag) : p->fixed_u;
	__u64 w, tau;
	int r, lease;

	*wait = 0;
	if (p->keyed && !key)
		return 0;
	now += (__u64)p->fleet_clock_ns;
	w = now / t->unit_ns;
	if (p->algo == FC_ALGO_FLEET_GCRA) {
		tau = p->keyed ? __atomic_load_n(&state[3], __ATOMIC_RELAXED) : fc_fleet_tau(p, u, w);
		/* A fixed key's bucket (its slot's) never charged on a node
		 * whose state is new starts empty, as a key's entry is made
		 * (fc_key_fresh_gcra). */
		if (!p->keyed && now < p->fleet_fresh_ns + tau)
			__sync_val_compare_and_swap(&state[0], 0, p->fleet_fresh_ns + tau);
		r = fc_fleet_gcra_try(state, fc_fleet_split_of(p->split, w)->interval_ns, tau < FC_ROOM_MAX ? tau : FC_ROOM_MAX,
				      now / p->lease_ns, now, 1, &ch->prev[0], &ch->next[0], &lease);
		ch->next[1] = (__u64)lease;
		return r;
	}
	if (p->algo == FC_ALGO_FLEET_WINDOW)
		r = fc_fleet_window_try(&state[0], w, 1, &ch->prev[0], &ch->next[0]);
	else
		r = fc_fleet_slide_try(&state[0], t->unit_ns, now, w, 1, &ch->prev[0], &ch->next[0]);
	return r == FC_FLEET_ROLL ? fc_fleet_roll(p, state, u, now, w, ch) : r;
}

/* Gives back what fc_fleet_charge took. */
static __attribute__((noinline, cold)) void fc_fleet_refund(const struct fc_l7_policy *p, __u64 *state,
							     const struct fc_charge *ch)
{
	if (p->algo == FC_ALGO_FLEET_WINDOW)
		fc_fleet_window_refund(&state[0], 1, ch->prev[0], ch->next[0]);
	else if (p->algo == FC_ALGO_FLEET_SLIDING)
		fc_fleet_slide_refund(&state[0], 1, ch->prev[0], ch->next[0]);
	else
		fc_fleet_gcra_refund(state, (int)ch->next[1], 1, ch->prev[0], ch->next[0]);
}

/* Gives back p's charge ch of bucket state. */
static inline void fc_refund(const struct fc_l7_policy *p, __u64 *state, const struct fc_charge *ch)
{
	if (__builtin_expect(p->fleet, 0))
		fc_fleet_refund(p, state, ch);
	else
		fc_limit_refund(p->algo, p->ntiers, state, 1, ch);
}

/* A fleet key refused at now (key: its entry; NULL for a fixed key, whose
 * bucket is its slot's): its demand word marks the window (the lease
 * window for gcra), and the first refusal of a key in a window reports it
 * on the fleet ring (one fetch-and-add, no wait), so that the agent asks
 * for credit. A fixed key's slot the agent reads every round; a request
 * the overflow refused has no entry to mark. */
static __attribute__((noinline, cold)) void fc_fleet_refused(const struct fc_l7_index *ix,
							      const struct fc_l7_policy *p, struct fc_shm_key *key,
							      __u64 *st, __u64 now)
{
	struct fc_shm_fleet_entry *e;
	__u64 w, idx;

	if (!st || (p->keyed && !key))
		return;
	now += (__u64)p->fleet_clock_ns;
	w = p->algo == FC_ALGO_FLEET_GCRA ? now / p->lease_ns : now / p->tier[0].unit_ns;
	if (!fc_fleet_demand(&st[1], w) || !key)
		return;
	idx = __atomic_fetch_add(&ix->fleet_ring->head, 1, __ATOMIC_RELAXED);
	e = &ix->fleet_ring->e[idx & (FC_SHM_FLEET_RING_SIZE - 1)];
	__atomic_store_n(&e->seq, 0, __ATOMIC_RELAXED);
	e->tag = __atomic_load_n(&key->tag, __ATOMIC_RELAXED);
	e->index = (__u32)(key - ix->keys);
	e->slot = p->slot;
	e->epoch = p->epoch;
	e->window = (__u32)FC_FLEET_LABEL(w);
	__atomic_store_n(&e->seq, idx + 1, __ATOMIC_RELEASE);
}

/* What a fleet bucket tells a client: the fleet's N, this node's credit
 * left in the window (sliding: its room; gcra: the bucket's tokens and the
 * lease credit), and until the window ends (gcra: an interval). */
static void fc_fleet_view(const struct fc_l7_policy *p, const __u64 *st, __u64 now, struct fc_l7_result *res)
{
	const struct fc_tier *t = &p->tier[0];
	__u64 w, iv;

	now += (__u64)p->fleet_clock_ns;
	w = now / t->unit_ns;
	res->limit = t->limit;
	res->window_s = t->unit_ns / FC_NS_PER_SEC;
	res->retry_ns = t->unit_ns - now % t->unit_ns;
	if (p->algo == FC_ALGO_FLEET_WINDOW) {
		res->remaining = fc_fleet_credit(st[0], w);
	} else if (p->algo == FC_ALGO_FLEET_SLIDING) {
		res->remaining = FC_FLEET_SLIDE_W(st[0]) == FC_FLEET_SLABEL(w) ? FC_FLEET_SLIDE_ROOM(st[0]) : 0;
	} else {
		iv = fc_fleet_split_of(p->split, w)->interval_ns;
		res->remaining = fc_fleet_gcra_tokens(st[0], iv, st[3], now) + fc_fleet_credit(st[2], now / p->lease_ns);
		res->retry_ns = iv ? iv : res->retry_ns;
	}
	if (res->remaining)
		res->retry_ns = 0;
}

/* One policy's charge: every tier or none (1 or 0); for delay, the wait.
 * FC_CHARGE_REGEN: a word of limits before a change of p's rates, nothing
 * charged (fc_bucket_adopt, then again). */
FC_HOT int fc_charge(const struct fc_l7_policy *p, __u64 *state, __u64 now, struct fc_charge *ch, __u64 *wait)
{
	__u64 w = 0, tol;
	bool ok;
	int i;

	now = fc_clock(p, now);
	*wait = 0;
	if (p->action != FC_ACTION_DELAY || p->algo != FC_ALGO_GCRA)
		return fc_limit_charge(p->algo, p->ntiers, &p->lim, state, now, 1, ch);
	if (fc_gen_stale(&p->lim, state))
		return FC_CHARGE_REGEN;
	for (i = 0; i < p->ntiers; i++) {
		if (!i && p->warmup_ms) {
			/* fc_policy_read saw the ramp's word within the bucket. */
			ch->next[0] = fc_warm_charge(&state[0], &state[p->ntiers], &p->lim, p->warmup_ms * FC_MS_NS, now, 1,
						     p->delay_burst, &ch->prev[0], &tol);
			ok = ch->next[0] != 0;
			w = ok && (ch->next[0] & FC_TAT_MASK) - now > tol ? (ch->next[0] & FC_TAT_MASK) - now - tol : 0;
		} else {
			ok = fc_gcra_try_delay(&state[i], &p->lim, i, now, 1, p->delay_burst, &ch->prev[i], &ch->next[i],
					       &w);
		}
		if (!ok) {
			fc_limit_refund(p->algo, (uint8_t)i, state, 1, ch);
			return 0;
		}
		if (w > *wait)
			*wait = w;
	}
	return 1;
}

/* fc_charge of a bucket of words of limits before a change of p's rates
 * (key: its key's entry, or NULL), brought first: the rare case, out of
 * line (inlined, it cost every request's charge registers). */
static __attribute__((noinline, cold)) int fc_charge_brought(const struct fc_l7_policy *p, __u64 *state,
							      struct fc_shm_key *key, __u64 now, struct fc_charge *ch,
							      __u64 *wait)
{
	fc_bucket_adopt(p, state, key, fc_clock(p, now));
	return fc_charge(p, state, now, ch, wait);
}

static void fc_result_limits(const struct fc_l7_policy *p, const __u64 *state, uint64_t now,
			     struct fc_l7_result *res)
{
	struct fc_limit_view v;

	if (p->fleet) {
		res->policy = p->id;
		fc_fleet_view(p, state, now, res);
		return;
	}
	fc_limit_view(p->algo, p->ntiers, &p->lim, state, now, fc_l7_queue(p), &v);
	res->policy = p->id;
	res->limit = v.limit;
	res->window_s = p->tier[0].unit_ns / FC_NS_PER_SEC;
	res->remaining = v.remaining;
	res->retry_ns = v.retry_ns;
}

/* fc_l7_match, inlined into the decision. */
FC_HOT size_t fc_match(const struct fc_l7_index *ix, const struct fc_l7_req *rq, uint32_t *out, size_t cap)
{
	uint32_t gen = ix->marks ? ++*ix->gen : 1; /* none kept: none read */
	size_t n = 0, i;

	if (!gen) { /* wrapped: no mark may look current */
		memset(ix->mark, 0, ix->npolicies * sizeof(*ix->mark));
		if (ix->off_mark)
			memset(ix->off_mark, 0, ix->npolicies * sizeof(*ix->off_mark));
		gen = *ix->gen = 1;
	}
	if (ix->has_uid) {
		fc_collect(ix, rq, FC_DIM_UID, 0, rq->uid, gen, out, cap, &n);
		for (i = 1; i < rq->nuids; i++)
			fc_collect(ix, rq, FC_DIM_UID, 0, rq->uids[i], gen, out, cap, &n);
	}
	for (i = 0; i < rq->nvals; i++)
		fc_collect(ix, rq, rq->vals[i].kind, rq->vals[i].idx, rq->vals[i].v, gen, out, cap, &n);
	if (ix->has_uri)
		fc_collect(ix, rq, FC_DIM_URI, 0, fc_uri_path(rq->uri), gen, out, cap, &n);
	for (i = 0; i < ix->nloose; i++) {
		const struct fc_l7_loose *l = &ix->loose[i];

		if (l->need & FC_L7_NEED_DIMS) {
			const struct fc_l7_policy *p = &ix->pol[l->pol];
			int d;

			for (d = 0; d < p->ndims && fc_dim_matches(&p->dims[d], rq); d++)
				;
			if (d < p->ndims)
				continue;
		} else if (((l->need & FC_L7_HAS_UID) && !rq->uid.len) || ((l->need & FC_L7_HAS_IP) && !rq->family) ||
			   ((l->need & FC_L7_HAS_URI) && !rq->uri.len)) {
			continue;
		}
		if (n < cap)
			out[n] = l->pol;
		n++;
	}
	return n;
}

size_t fc_l7_match(const struct fc_l7_index *ix, const struct fc_l7_req *rq, uint32_t *out, size_t cap)
{
	return fc_match(ix, rq, out, cap);
}

/* ---- reading names and values as applications read them ---- */

static int fc_hex(char c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* The byte at s[*i] (of len) decoded: a %XX escape, '+' a space if plus,
 * anything else (an invalid escape too) as it is; *i moved past it. */
static unsigned char fc_unescape(const char *s, size_t len, size_t *i, bool plus)
{
	unsigned char c = (unsigned char)s[*i];
	int hi, lo;

	if (c == '%' && len - *i > 2 && (hi = fc_hex(s[*i + 1])) >= 0 && (lo = fc_hex(s[*i + 2])) >= 0) {
		*i += 3;
		return (unsigned char)(hi << 4 | lo);
	}
	(*i)++;
	return plus && c == '+' ? ' ' : c;
}

static size_t fc_decode(const char *s, size_t len, char *out, size_t cap, bool plus)
{
	size_t i = 0, n = 0;

	while (i < len) {
		if (n == cap)
			return SIZE_MAX;
		out[n++] = (char)fc_unescape(s, len, &i, plus);
	}
	return n;
}

size_t fc_l7_decode(const char *s, size_t len, char *out, size_t cap)
{
	return fc_decode(s, len, out, cap, true);
}

size_t fc_l7_decode_cookie(const char *s, size_t len, char *out, size_t cap)
{
	return fc_decode(s, len, out, cap, false);
}

/* A byte of a name in canonical form: ASCII lowercase, '.' and ' ' '_'. */
static char fc_name_byte(unsigned char c)
{
	return c >= 'A' && c <= 'Z' ? (char)(c | 0x20) : c == '.' || c == ' ' ? '_' : (char)c;
}

void fc_l7_name_canon(const char *s, size_t len, char *out)
{
	size_t i;

	for (i = 0; i < len; i++)
		out[i] = fc_name_byte((unsigned char)s[i]);
}

/* Whether a ']' (decoded) comes in s from i on, before a NUL (where PHP's
 * name ends). */
static bool fc_bracket_closes(const char *s, size_t len, size_t i)
{
	unsigned char c;

	while (i < len)
		if ((c = fc_unescape(s, len, &i, true)) == ']')
			return true;
		else if (!c)
			break;
	return false;
}

size_t fc_l7_name_read(const char *s, size_t len, char *out, size_t cap)
{
	size_t i = 0, n = 0;
	bool open = false; /* a '[' with no ']' after it was met: every later '[' is '_' too */
	unsigned char c;

	while (i < len) {
		c = fc_unescape(s, len, &i, true);
		if (!c)
			break; /* PHP reads a name as a C string: uid%00x is uid */
		if (c == ' ' && !n)
			continue; /* PHP drops leading spaces */
		if (c == '[' && !open) {
			if (fc_bracket_closes(s, len, i))
				return n; /* NAME[...]: an array named NAME */
			open = true;
		}
		if (n == cap)
			return SIZE_MAX;
		out[n++] = c == '[' ? '_' : fc_name_byte(c);
	}
	return n;
}

/* Whether the name s (len bytes, as sent) reads as name (canonical): most
 * names are told by their bytes as sent; only one holding an escape, a
 * bracket or a space is read in full. */
static bool fc_name_is(const char *s, size_t len, const char *name, size_t nlen)
{
	char buf[FC_SHM_MAX_NAME];
	size_t i;

	if (len < nlen)
		return false; /* a name as sent is never shorter than the one it reads as */
	for (i = 0; i < nlen && fc_l7_name_char((unsigned char)s[i], (unsigned char)name[i]); i++)
		;
	if (i == nlen && len == nlen)
		return true;
	for (i = 0; i < len && !(fc_l7_qbyte[(unsigned char)s[i]] & FC_L7_Q_ODD); i++)
		;
	return i < len && nlen <= sizeof(buf) && fc_l7_name_read(s, len, buf, nlen) == nlen && !memcmp(buf, name, nlen);
}

const unsigned char *fc_l7_query_skip(const unsigned char *s, const unsigned char *end, int *semi)
{
	const unsigned char *e, *c;

	if (*semi < 0)
		*semi = memchr(s, ';', (size_t)(end - s)) != NULL;
	e = memchr(s, '&', (size_t)(end - s));
	if (!e)
		e = end;
	if (*semi && (c = memchr(s, ';', (size_t)(e - s))))
		e = c;
	return e;
}

bool fc_l7_query_pair(const char *p, const char *end, const char *name, const char *raw, size_t nlen,
		      struct fc_l7_str *v, const char **next, bool *exact)
{
	char dec[FC_SHM_MAX_NAME];
	const char *e, *eq;

	for (e = p; e < end && !(fc_l7_qbyte[(unsigned char)*e] & FC_L7_Q_SEP); e++)
		;
	*next = e;
	eq = memchr(p, '=', (size_t)(e - p));
	if (!fc_name_is(p, (size_t)((eq ? eq : e) - p), name, nlen))
		return false;
	v->data = eq ? eq + 1 : e;
	v->len = eq ? (size_t)(e - eq - 1) : 0;
	/* Decoding is what every framework does to a name; nothing more. */
	*exact = eq && nlen <= sizeof(dec) && fc_l7_decode(p, (size_t)(eq - p), dec, nlen) == nlen &&
		 !memcmp(dec, raw, nlen);
	return true;
}

static bool fc_ows(char c)
{
	return c == ' ' || c == '\t';
}

size_t fc_l7_cookie_unquote(const char *s, size_t len, char *out)
{
	size_t i = 0, n = 0;

	while (i < len) {
		if (s[i] != '\\' || i + 1 == len) {
			out[n++] = s[i++];
		} else if (len - i > 3 && s[i + 1] >= '0' && s[i + 1] <= '3' && s[i + 2] >= '0' && s[i + 2] <= '7' &&
			   s[i + 3] >= '0' && s[i + 3] <= '7') {
			out[n++] = (char)((s[i + 1] - '0') << 6 | (s[i + 2] - '0') << 3 | (s[i + 3] - '0'));
			i += 4;
		} else {
			out[n++] = s[i + 1];
			i += 2;
		}
	}
	return n;
}

size_t fc_l7_cookie_find(const char *h, size_t len, const char *name, const char *raw, size_t nlen,
			 struct fc_l7_str *v, bool *py, size_t cap, bool *enc, bool *exact)
{
	const char *p = h, *end = h + len, *e, *eq, *ne, *vs, *ve, *start;
	size_t n = 0;
	bool pct, quoted;

	for (; p < end; p = e + 1) {
		for (e = p; e < end && *e != ';' && *e != ','; e++)
			;
		eq = memchr(p, '=', (size_t)(e - p));
		for (ne = eq ? eq : e; ne > p && fc_ows(ne[-1]); ne--)
			;
		start = p;
		while (p < ne && fc_ows(*p))
			p++;
		if (!fc_name_is(p, (size_t)(ne - p), name, nlen))
			continue;
		vs = eq ? eq + 1 : e;
		for (ve = e; ve > vs && fc_ows(ve[-1]); ve--)
			;
		while (vs < ve && fc_ows(*vs))
			vs++;
		quoted = ve - vs >= 2 && *vs == '"' && ve[-1] == '"'; /* as RFC 6265 allows */
		if (quoted)
			vs++, ve--;
		if (n < cap)
			v[n] = (struct fc_l7_str){ vs, (size_t)(ve - vs) };
		if (py && n < cap)
			py[n] = false;
		n++;
		pct = memchr(vs, '%', (size_t)(ve - vs)) != NULL;
		*enc |= pct;
		if (quoted && memchr(vs, '\\', (size_t)(ve - vs))) {
			/* Python's reading too (fc_l7_cookie_unquote): "\142ob" is
			 * bob to Django and Werkzeug, \142ob to the rest. */
			if (n < cap)
				v[n] = (struct fc_l7_str){ vs, (size_t)(ve - vs) };
			if (py && n < cap)
				py[n] = true;
			n++;
			*enc = true;
		}
		/* Exact: NAME=VALUE as sent, nothing trimmed, unquoted or
		 * decoded, between ';'s (only nginx and Rack split at ','). */
		*exact |= ne == eq && (size_t)(ne - p) == nlen && !memcmp(p, raw, nlen) && vs == eq + 1 && ve == e &&
			  !pct && (e == end || *e == ';') && (start == h || start[-1] == ';');
	}
	return n;
}

bool fc_l7_header_is(const char *low, size_t len, const char *name, size_t nlen)
{
	size_t i;

	if (len != nlen)
		return false;
	for (i = 0; i < len && (low[i] == name[i] || (low[i] == '_' && name[i] == '-')); i++)
		;
	return i == len;
}

size_t fc_l7_uri_params(const char *u, size_t len, char *out)
{
	size_t i, n = 0;
	bool param = false;

	for (i = 0; i < len; i++) {
		param = u[i] == ';' || (param && u[i] != '/');
		if (!param)
			out[n++] = u[i];
	}
	return n;
}

size_t fc_l7_args_max(const char *q, size_t len)
{
	size_t i, n = 1;

	for (i = 0; i < len; i++)
		n += fc_l7_qbyte[(unsigned char)q[i]] & FC_L7_Q_SEP;
	return n;
}

size_t fc_l7_args(const struct fc_l7_index *ix, const char *q, size_t len, char *buf, struct fc_l7_val *vals)
{
	const char *p = q, *end = q + len, *e, *eq;
	char name[FC_SHM_MAX_NAME];
	size_t n = 0, nl, i;
	int idx;

	if (!ix->nargs)
		return 0;
	for (; p < end; p = e + 1) {
		for (e = p; e < end && !(fc_l7_qbyte[(unsigned char)*e] & FC_L7_Q_SEP); e++)
			;
		eq = memchr(p, '=', (size_t)(e - p));
		if (!eq)
			eq = e; /* "?flag": an empty value */
		nl = fc_l7_name_read(p, (size_t)(eq - p), name, sizeof(name));
		if (nl == SIZE_MAX)
			continue; /* longer than any policy's name */
		for (idx = -1, i = 0; i < ix->nargs && idx < 0; i++)
			if (fc_str_eq(ix->args[i], name, nl))
				idx = (int)i;
		if (idx < 0)
			continue;
		vals[n].kind = FC_DIM_ARG;
		vals[n].idx = (uint8_t)idx;
		vals[n].v.data = buf;
		vals[n].v.len = eq < e ? fc_l7_decode(eq + 1, (size_t)(e - eq - 1), buf, (size_t)(e - eq - 1)) : 0;
		buf += vals[n].v.len;
		n++;
	}
	return n;
}

int fc_l7_header_idx(const struct fc_l7_index *ix, const char *lowname, size_t len)
{
	size_t i;

	for (i = 0; i < ix->nheaders; i++)
		if (fc_l7_header_is(lowname, len, ix->headers[i].data, ix->headers[i].len))
			return (int)i;
	return -1;
}

/* Whether an argument or header p keys on is given more than once: a
 * client could key on junk copies beside the one the backend reads. */
static bool fc_key_repeated(const struct fc_l7_policy *p, const struct fc_l7_req *rq)
{
	size_t i, n;
	int d;

	for (d = 0; d < p->ndims; d++) {
		const struct fc_l7_dim *dm = &p->dims[d];

		if (!(dm->flags & FC_SHM_DIM_ANY) || (dm->kind != FC_DIM_ARG && dm->kind != FC_DIM_HEADER))
			continue;
		for (i = n = 0; i < rq->nvals; i++)
			n += rq->vals[i].kind == dm->kind && rq->vals[i].idx == dm->name_idx;
		if (n > 1)
			return true;
	}
	return false;
}

/* The tag of rq's key for a per-key policy p, 0 for the overflow bucket
 * (a key argument, header or uid given more than once); and the first entry of
 * each of its windows asked for ahead, while the rest of the decision goes
 * on: two misses at once, not one after the other. */
static __u64 fc_key_prepare(const struct fc_l7_index *ix, const struct fc_l7_policy *p, const struct fc_l7_req *rq)
{
	__u64 tag;

	if ((rq->nuids && p->key_uid) || (p->key_vals && fc_key_repeated(p, rq)))
		return 0;
	tag = fc_key_tag(p, rq);
	__builtin_prefetch(&ix->keys[fc_shm_key_place(tag, 0, ix->nkeys)], 1);
	__builtin_prefetch(&ix->keys[fc_shm_key_place(tag, 1, ix->nkeys)], 1);
	return tag;
}

/* The bucket p charges for rq: its key's (tag, from fc_key_prepare), the
 * overflow bucket (NULL key: past the caps, full windows, or tag 0), or,
 * for a policy without keys, its slot's. */
FC_HOT __u64 *fc_bucket(const struct fc_l7_index *ix, const struct fc_l7_policy *p, struct fc_shm_slot *s,
			__u64 tag, __u64 now, struct fc_shm_key **key)
{
	*key = NULL;
	if (!p->keyed)
		return s->state;
	if (tag)
		*key = fc_key_get(ix, p, s, tag, now);
	if (*key)
		return (*key)->state;
	__atomic_fetch_add(&s->overflowed, 1, __ATOMIC_RELAXED);
	return s->state;
}

enum fc_admit {
	FC_ADMIT,
	FC_DENY_RATE,
	FC_DENY_CONC, /* its --concurrency cap */
};

/* Charges p for rq in its bucket and, if p caps concurrency, takes a place
 * there (pl; its where 0 if none was taken): both or neither. A key's entry
 * taken back by another worker meanwhile (it looked idle) is not this key's
 * any more: the charge and the place are undone and made again in the key's
 * new bucket. */
FC_HOT enum fc_admit fc_charge_bucket(const struct fc_l7_index *ix, const struct fc_l7_policy *p,
				      struct fc_shm_slot *s, const struct fc_l7_req *rq, __u64 tag, __u64 now,
				      __u64 **st, struct fc_shm_key **key, struct fc_charge *ch, __u64 *wait,
				      struct fc_l7_place *pl)
{
	__u64 t = fc_clock(p, now);
	int tries, ok;

	pl->where = 0;
	for (tries = 0; tries < 3; tries++) {
		*st = fc_bucket(ix, p, s, tag, t, key);
		ok = __builtin_expect(p->fleet, 0) ? fc_fleet_charge(p, *st, *key, tag, t, ch, wait) :
						     fc_charge(p, *st, now, ch, wait);
		if (__builtin_expect(ok != 1, 0) &&
		    (ok != FC_CHARGE_REGEN || fc_charge_brought(p, *st, *key, now, ch, wait) != 1))
			return FC_DENY_RATE;
		if (p->concurrency &&
		    !fc_place_take(p, s, *key, *key ? (uint32_t)(*key - ix->keys) : 0, tag, rq->holder, pl)) {
			fc_refund(p, *st, ch);
			return FC_DENY_CONC;
		}
		if (!*key || __atomic_load_n(&(*key)->tag, __ATOMIC_SEQ_CST) == tag) {
			if (*key)
				fc_key_hold(*key, p, t);
			return FC_ADMIT;
		}
		if (pl->where)
			fc_place_undo(p, s, *key, rq->holder, pl, t);
		fc_refund(p, *st, ch);
	}
	*st = NULL; /* charged nowhere: pass, as a policy gone meanwhile would */
	*key = NULL;
	return FC_ADMIT;
}

/* The deciding policy's bucket, in the result. */
FC_HOT void fc_result_key(const struct fc_l7_policy *p, const struct fc_shm_key *key, const struct fc_l7_req *rq,
			  struct fc_l7_result *res)
{
	if (!p->keyed) { /* deciding, as a delay does: no key of another's */
		res->overflow = false;
		res->key_len = 0;
		return;
	}
	res->overflow = !key;
	/* At most keycap: the module's 256; no buffer when nothing reads $freqctl_key. */
	res->key_len = rq->keybuf && rq->keycap ? (uint32_t)fc_key_text(p, rq, rq->keybuf, rq->keycap) : 0;
}

/* The deciding policy's cap, in the result: no rate, no time to wait for. */
static void fc_result_conc(const struct fc_l7_policy *p, struct fc_l7_result *res)
{
	res->policy = p->id;
	res->concurrency = true;
	res->limit = p->concurrency;
	res->window_s = 0;
	res->remaining = 0;
	res->retry_ns = FC_NS_PER_SEC; /* when a place frees is unknown: a hint */
}

/* The refusal by p (r: by its rates or its cap), in the result. */
static void fc_result_refused(const struct fc_l7_policy *p, enum fc_admit r, const __u64 *st,
			      const struct fc_shm_key *k, __u64 now, const struct fc_l7_req *rq,
			      struct fc_l7_result *res)
{
	res->verdict = FC_L7_REJECTED;
	if (r == FC_DENY_CONC)
		fc_result_conc(p, res);
	else
		fc_result_limits(p, st, now, res);
	fc_result_key(p, k, rq, res);
}

/* The places taken, where the caller keeps them: its room, or allocated. */
static bool fc_result_places(const struct fc_l7_req *rq, const struct fc_l7_place *pl, size_t np,
			     struct fc_l7_result *res)
{
	res->places = np <= rq->places_cap ? rq->places :
		      rq->alloc ? rq->alloc->alloc(rq->alloc->ctx, np * sizeof(*pl)) : NULL;
	if (!res->places)
		return false;
	memcpy(res->places, pl, np * sizeof(*pl));
	res->nplaces = (uint32_t)np;
	return true;
}

/* Marks, as of match gen, the matches m[0..n) that a matching override
 * switches off; returns how many. */
static unsigned fc_overrides(const struct fc_l7_index *ix, const uint32_t *m, size_t n, uint32_t gen)
{
	unsigned off = 0;
	size_t i, j;
	uint32_t k;

	for (i = 0; i < n; i++) {
		const struct fc_l7_policy *p = &ix->pol[m[i]];

		if (!(p->flags & FC_POLICY_OVERRIDE))
			continue;
		if (p->noff != FC_L7_OFF_LATE) {
			for (k = 0; k < p->noff; k++)
				ix->off_mark[ix->offs[p->off_at + k]] = gen;
			continue;
		}
		for (j = 0; j < n; j++)
			if (fc_switches_off(p, &ix->pol[m[j]]))
				ix->off_mark[m[j]] = gen;
	}
	for (i = 0; i < n; i++)
		off += ix->off_mark[m[i]] == gen;
	return off;
}

/* The allow list, then the ban list: true if one decides (res says which). */
FC_HOT bool fc_decide_listed(const struct fc_l7_index *ix, const struct fc_l7_req *rq, uint64_t now,
			     struct fc_l7_result *res)
{
	bool allows = !fc_plens_empty(ix->hdr->allow_plens), bans = !fc_plens_empty(ix->hdr->ban_plens), uid;

	if (!allows && !bans)
		return false; /* most often: nothing listed */
	if (allows && fc_listed(ix, rq, now, true, &uid)) {
		res->verdict = FC_L7_ALLOWED;
		res->uid_ban = uid;
		__atomic_fetch_add(&ix->state_hdr->allowed, 1, __ATOMIC_RELAXED);
		return true;
	}
	if (bans && fc_listed(ix, rq, now, false, &uid)) {
		res->verdict = FC_L7_BANNED;
		res->uid_ban = uid;
		__atomic_fetch_add(uid ? &ix->state_hdr->banned_uid : &ix->state_hdr->banned_addr, 1, __ATOMIC_RELAXED);
		return true;
	}
	return false;
}

/* size bytes of the request's memory, or NULL. */
static void *fc_req_alloc(const struct fc_l7_req *rq, size_t size)
{
	return rq->alloc ? rq->alloc->alloc(rq->alloc->ctx, size) : NULL;
}

/* A pass in the slot's counter c and the counters of key k (if any).
 * Returns the key's count of passes now (0: no key). */
FC_HOT __u32 fc_count_passed(__u64 *c, struct fc_shm_key *k)
{
	__atomic_fetch_add(c, 1, __ATOMIC_RELAXED);
	return k ? __atomic_add_fetch(&k->passed, 1, __ATOMIC_RELAXED) : 0;
}

/* A denial (r) in the counters of slot s and of key k (if any). Returns
 * the key's count of denials now (0: no key). */
FC_HOT __u32 fc_count_denied(struct fc_shm_slot *s, struct fc_shm_key *k, enum fc_admit r)
{
	__atomic_fetch_add(&s->denied, 1, __ATOMIC_RELAXED);
	if (r == FC_DENY_CONC)
		__atomic_fetch_add(&s->conc_denied, 1, __ATOMIC_RELAXED);
	return k ? __atomic_add_fetch(&k->denied, 1, __ATOMIC_RELAXED) : 0;
}

void fc_l7_decide(const struct fc_l7_index *ix, const struct fc_l7_req *rq, uint64_t now, struct fc_l7_result *res)
{
	uint32_t m_stack[FC_L7_MATCHES], *m = m_stack;
	struct fc_charge ch_stack[FC_L7_MATCHES], *ch = ch_stack;
	struct fc_shm_key *k_stack[FC_L7_MATCHES], **k = k_stack;
	__u64 *st_stack[FC_L7_MATCHES], **st = st_stack;
	struct fc_l7_place pl_stack[FC_L7_MATCHES], *pl = pl_stack;
	__u64 tg_stack[FC_L7_MATCHES], *tg = tg_stack;
	__u64 wait, longest = 0, t;
	size_t n, i, j, longest_at = 0, np = 0;
	enum fc_admit r;
	uint32_t gen, kn;
	/* A passed request's key is its first per-key policy's, even when that
	 * key's text is empty or not asked for (res->key_len 0). */
	bool keyed = false, delayed;

	memset(res, 0, sizeof(*res));
	if (fc_decide_listed(ix, rq, now, res) || !ix->npolicies)
		return;
	n = fc_match(ix, rq, m, FC_L7_MATCHES);
	res->matched = (unsigned)n;
	/* More than the stack holds: every one of them, in the request's
	 * memory; none is left out. */
	if (n > FC_L7_MATCHES &&
	    (!(m = fc_req_alloc(rq, n * sizeof(*m))) || !(ch = fc_req_alloc(rq, n * sizeof(*ch))) ||
	     !(k = fc_req_alloc(rq, n * sizeof(*k))) || !(st = fc_req_alloc(rq, n * sizeof(*st))) ||
	     !(pl = fc_req_alloc(rq, n * sizeof(*pl))) || !(tg = fc_req_alloc(rq, n * sizeof(*tg))) ||
	     fc_l7_match(ix, rq, m, n) != n)) {
		res->verdict = FC_L7_ERROR;
		return;
	}
	/* The policies a matching override switches off do not apply. */
	gen = *ix->gen;
	if (ix->has_override)
		res->overridden = fc_overrides(ix, m, n, gen);
	/* Every key's entries asked for at once, before any is needed. */
	for (i = 0; ix->has_keys && i < n; i++)
		tg[i] = ix->pol[m[i]].keyed ? fc_key_prepare(ix, &ix->pol[m[i]], rq) : 0;
	/* Enforcing policies: all admit, or none is charged and no place is kept. */
	for (i = 0; i < n; i++) {
		const struct fc_l7_policy *p = &ix->pol[m[i]];
		struct fc_shm_slot *s = &ix->slots[p->slot];

		st[i] = NULL;
		k[i] = NULL;
		if (p->action == FC_ACTION_LOG || (res->overridden && ix->off_mark[m[i]] == gen) ||
		    __atomic_load_n(&s->owner, __ATOMIC_ACQUIRE) != FC_SHM_OWNER(p->id, p->epoch))
			continue;
		r = fc_charge_bucket(ix, p, s, rq, p->keyed ? tg[i] : 0, now, &st[i], &k[i], &ch[i], &wait, &pl[np]);
		if (r == FC_ADMIT) {
			np += pl[np].where != 0;
			if (wait > longest) {
				longest = wait;
				longest_at = i;
			}
			continue;
		}
		t = fc_clock(p, now);
		for (j = 0; j < i; j++)
			if (st[j])
				fc_refund(&ix->pol[m[j]], st[j], &ch[j]);
		fc_ix_places_give(ix, rq->holder, pl, np, t);
		if (p->fleet && r == FC_DENY_RATE)
			fc_fleet_refused(ix, p, k[i], st[i], t);
		kn = fc_count_denied(s, k[i], r);
		fc_val_check(ix, p, rq, tg[i], k[i], FC_VAL_DUE_DENY(kn), t);
		fc_report(ix, p, rq);
		fc_result_refused(p, r, st[i], k[i], t, rq, res);
		return;
	}
	for (i = 0; i < n; i++) {
		const struct fc_l7_policy *p = &ix->pol[m[i]];
		struct fc_shm_slot *s = &ix->slots[p->slot];
		__u64 *lst;
		struct fc_shm_key *lk;

		if (p->action != FC_ACTION_LOG) {
			if (!st[i]) /* not charged: switched off, or not its owner's */
				continue;
			delayed = p->action == FC_ACTION_DELAY && longest && i == longest_at;
			kn = fc_count_passed(delayed ? &s->delayed : &s->passed, k[i]);
			fc_val_check(ix, p, rq, tg[i], k[i], FC_VAL_DUE_PASS(kn), now);
			if (p->keyed && !keyed) {
				keyed = true;
				fc_result_key(p, k[i], rq, res);
			}
			continue;
		}
		if ((res->overridden && ix->off_mark[m[i]] == gen) ||
		    __atomic_load_n(&s->owner, __ATOMIC_ACQUIRE) != FC_SHM_OWNER(p->id, p->epoch))
			continue;
		/* A log policy counts what it would do: a place it would give is
		 * held (and counted) like any other. */
		r = fc_charge_bucket(ix, p, s, rq, p->keyed ? tg[i] : 0, now, &lst, &lk, &ch[i], &wait, &pl[np]);
		if (r == FC_ADMIT) {
			np += pl[np].where != 0;
			kn = fc_count_passed(&s->passed, lk);
			fc_val_check(ix, p, rq, tg[i], lk, FC_VAL_DUE_PASS(kn), now);
		} else {
			kn = fc_count_denied(s, lk, r);
			fc_val_check(ix, p, rq, tg[i], lk, FC_VAL_DUE_DENY(kn), now);
			if (p->fleet && r == FC_DENY_RATE)
				fc_fleet_refused(ix, p, lk, lst, now);
			res->would_deny++;
		}
		if (p->keyed && !keyed) {
			keyed = true;
			fc_result_key(p, lk, rq, res);
		}
	}
	if (np && !fc_result_places(rq, pl, np, res)) {
		fc_ix_places_give(ix, rq->holder, pl, np, now);
		res->verdict = FC_L7_ERROR;
		return;
	}
	if (longest) {
		const struct fc_l7_policy *p = &ix->pol[m[longest_at]];

		res->verdict = FC_L7_DELAYED;
		res->delay_ns = longest;
		fc_result_limits(p, st[longest_at], now, res);
		fc_result_key(p, k[longest_at], rq, res);
		res->retry_ns = 0;
	}
}
