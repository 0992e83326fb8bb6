// SPDX-License-Identifier: BSD-2-Clause
#include <errno.h>
#include <stddef.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/syscall.h>
#include <linux/membarrier.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "fc_clock.h"
#include "fc_cmp.h"
#include "fc_enforce.h"
#include "fc_fleet_split.h"
#include "fc_step.h"
#include "fc_sync.h"

/* ENOTSUPP: the kernel's "this map type has no batch operation". */
#define FC_ENOTSUPP 524
#define FC_BATCH    8192

/* One map entry; the key is at most a struct fc_pfx6_key. in: for
 * fc_top6 (and fc_pfx6's /32 entries, for their copies there), the one
 * prefix inside the /32 that it carries, its map's ins->v[in - 1]; 0: none. */
struct fc_kv {
	uint8_t key[sizeof(struct fc_pfx6_key)];
	uint32_t in;
	struct fc_rule val;
};
/* A store's every exact address takes one: what fc_top6 carries is kept
 * apart (struct fc_ins), not in each (88 bytes: a whole publish of a
 * million addresses took 80 MB more). */
_Static_assert(sizeof(struct fc_kv) == 48, "struct fc_kv grew");

struct fc_kvs {
	struct fc_kv *v;
	size_t n, cap;
};

/* The prefixes fc_top6's entries carry (fc_kv.in), for one publish. */
struct fc_ins {
	struct fc_top6_in *v;
	size_t n, cap;
};

/*
 * What one rule map should hold, what it holds, and what a publish writes
 * to it, in the order that never uncovers a source (doc/architecture.md,
 * Publishing order; fc_order_write): put and del, and for an exact map the
 * final values of the entries first written as a union (fin) or without
 * the prefix answer they carry (carry), for fc_pfx6
 * and fc_top6 entries as they are with their search guides widened
 * (relax). Publishing everything, these are the difference itself;
 * publishing what changed, put holds what the changed keys' entries
 * should be and del the keys that may have to go, each compared with the
 * map as it is written.
 */
struct fc_map_sync {
	const char *name;
	int fd;
	size_t keysz;
	int family; /* 4 or 6 */
	bool prefixes; /* a prefix hash: fc_want_prefixes makes its entries */
	size_t max_entries;
	size_t valsz;       /* a struct fc_rule, or fc_top6's struct fc_top6 (fc_kv_value) */
	struct fc_ins *ins; /* the publish's, shared by its maps (in fc_top6's: carried) */
	struct fc_ins carried;
	struct fc_kvs want, have;
	struct fc_kvs put, del, fin, relax;
	struct fc_kvs carry; /* exact: entries first written as their own value less the prefix answer */
	long count;  /* publishing what changed: entries added less entries deleted */
	long dmarks; /* the same for fc_pfx6's search markers */
	size_t marks;    /* fc_pfx6: search markers among want */
	__u64 lens[2];   /* fc_pfx6: bit L of lens[L / 64], the lengths of its prefixes */
};

/* The rule maps the store's rows make (FC_MS_COUNT), then fc_top6, made
 * from fc_pfx6's entries. */
enum { FC_MS_EXACT4, FC_MS_EXACT6, FC_MS_PFX4, FC_MS_PFX6, FC_MS_COUNT, FC_MS_TOP6 = FC_MS_COUNT, FC_MS_ALL };

/* A /16 whose fc_top4 entry changes, and what it becomes. */
struct fc_top4_new {
	uint32_t idx;
	struct fc_top4 e;
};

#define FC_IN24_LEN_MAX (24 - FC_TOP4_SHIFT)

struct fc_u32s {
	uint32_t *v;
	size_t n, cap;
};

/* What fc_top4 is made of: the IPv4 prefixes, folded, in address order,
 * and (whole) the addresses of fc_exact4; what changes in it, and when
 * (fc_top4_plan). */
struct fc_top4_sync {
	struct fc_kvs pfx;
	const struct fc_kvs *exact; /* whole: fc_exact4's entries, sorted, for the FC_IN24_EXACT bits */
	bool whole;    /* look at every /16, not only where fc_pfx4 changed */
	__u32 used;    /* fc_top4 entries that are not empty (in: before, out: after) */
	size_t flips;  /* FC_IN24_EXACT bits set or cleared by fc_top4_exact */
	char *mem;     /* a mapping of the array's bytes off to off + size (fc_top4_view) */
	size_t off, size;
	struct fc_top4_new *chg; /* the /16s that change, in index order */
	size_t nchg, capchg;
	bool narrows; /* some of them lose a bit of a longer prefix (or, whole, of an address) */
	/* The /24s whose prefix of /17 to /24 (FC_IN24_LEN) changes, each as
	 * its /16's index in chg times 256 plus the /24: those whose prefix
	 * gets longer in sw[L - 16], moved once the prefixes of length L are
	 * written; the rest in sw[0], moved once every prefix is written. */
	struct fc_u32s sw[FC_IN24_LEN_MAX + 1];
	/* The /16s written (bit idx), and which of them were empty before:
	 * what the count of those in use (used) is put right by at the end. */
	uint64_t touched[FC_TOP4_SLOTS / 64], was_empty[FC_TOP4_SLOTS / 64];
};

/* Scratch for one batch of keys and values (fc_batch_*), and so one publish
 * at a time in this process (the pin dir's flock serialises processes). */
static pthread_mutex_t fc_sync_lock = PTHREAD_MUTEX_INITIALIZER;
static uint8_t fc_batch_keys[FC_BATCH * sizeof(struct fc_pfx6_key)];
static uint8_t fc_batch_vals[FC_BATCH * sizeof(struct fc_top6)];

/* Keeps in for an entry to carry: its fc_kv.in, or 0 out of memory. */
static uint32_t fc_in_add(struct fc_ins *ins, const struct fc_top6_in *in)
{
	struct fc_top6_in *nv;

	if (ins->n == ins->cap) {
		size_t cap = ins->cap ? ins->cap * 2 : 256;

		if (cap > UINT32_MAX || !(nv = realloc(ins->v, cap * sizeof(*nv))))
			return 0;
		ins->v = nv;
		ins->cap = cap;
	}
	ins->v[ins->n++] = *in;
	return (uint32_t)ins->n;
}

/* What the entry kv of ms is written as, and compared as: its rule, and
 * for fc_top6 the prefix it carries (ms->valsz bytes of out). */
static void fc_kv_value(const struct fc_map_sync *ms, const struct fc_kv *kv, struct fc_top6 *out)
{
	memset(out, 0, sizeof(*out));
	out->rule = kv->val;
	if (kv->in)
		out->in = ms->ins->v[kv->in - 1];
}

/* Sorts k; an empty one may have no array, which qsort_r may not be given. */
static void fc_kvs_sort(struct fc_kvs *k, int (*cmp)(const void *, const void *, void *), void *arg)
{
	if (k->n)
		qsort_r(k->v, k->n, sizeof(*k->v), cmp, arg);
}

static int fc_kv_cmp(const void *a, const void *b, void *keysz)
{
	return memcmp(((const struct fc_kv *)a)->key, ((const struct fc_kv *)b)->key, *(size_t *)keysz);
}

static struct fc_kv *fc_kvs_push(struct fc_kvs *s)
{
	struct fc_kv *nv;

	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 1024;

		nv = realloc(s->v, cap * sizeof(*nv));
		if (!nv)
			return NULL;
		s->v = nv;
		s->cap = cap;
	}
	memset(&s->v[s->n], 0, sizeof(s->v[0]));
	return &s->v[s->n++];
}

/* Appends n entries of v to s. */
static int fc_kvs_append(struct fc_kvs *s, const struct fc_kv *v, size_t n)
{
	struct fc_kv *nv;
	size_t cap = s->cap ? s->cap : 1024;

	while (cap < s->n + n)
		cap *= 2;
	if (cap != s->cap) {
		if (!(nv = realloc(s->v, cap * sizeof(*nv))))
			return -1;
		s->v = nv;
		s->cap = cap;
	}
	if (n)
		memcpy(s->v + s->n, v, n * sizeof(*v));
	s->n += n;
	return 0;
}

/* Sorts s by cmp and keeps one of each run of entries cmp finds equal. */
static void fc_kvs_unique(struct fc_kvs *s, int (*cmp)(const void *, const void *, void *), void *arg)
{
	size_t i, o = 0;

	fc_kvs_sort(s, cmp, arg);
	for (i = 0; i < s->n; i++)
		if (!o || cmp(&s->v[o - 1], &s->v[i], arg))
			s->v[o++] = s->v[i];
	s->n = o;
}

static bool fc_batch_unsupported(void)
{
	return errno == EINVAL || errno == FC_ENOTSUPP || errno == EOPNOTSUPP;
}

/* Reads a whole rule map, a batch at a time: linear in the map's capacity,
 * and never more entries than it can hold. */
static int fc_map_dump(struct fc_map_sync *ms, struct fc_err *err)
{
	LIBBPF_OPTS(bpf_map_batch_opts, opts);
	__u64 in = 0, out = 0; /* a hash map's batch token: a bucket number */
	struct fc_top6 val = { 0 };
	size_t seen = 0;
	void *inp = NULL;
	struct fc_kv *kv;
	__u32 cnt, i;
	int rc;

	for (;;) {
		cnt = FC_BATCH;
		rc = bpf_map_lookup_batch(ms->fd, inp, &out, fc_batch_keys, fc_batch_vals, &cnt, &opts);
		if (rc && errno != ENOENT)
			return fc_err_set(err, "map %s: batch lookup: %s", ms->name, strerror(errno));
		seen += cnt;
		if (seen > ms->max_entries)
			return fc_err_set(err, "map %s: reading past its %zu entries: the walk does not end", ms->name,
					  ms->max_entries);
		for (i = 0; i < cnt; i++) {
			if (!(kv = fc_kvs_push(&ms->have)))
				return fc_err_set(err, "out of memory reading map %s", ms->name);
			memcpy(kv->key, fc_batch_keys + i * ms->keysz, ms->keysz);
			memcpy(&val, fc_batch_vals + i * ms->valsz, ms->valsz);
			kv->val = val.rule;
			if (val.in.len && !(kv->in = fc_in_add(ms->ins, &val.in)))
				return fc_err_set(err, "out of memory reading map %s", ms->name);
		}
		if (rc)
			return 0; /* ENOENT: that was the last batch */
		in = out;
		inp = &in;
	}
}

/* Writes (update) or deletes n entries. */
static int fc_map_apply(struct fc_map_sync *ms, const struct fc_kv *kvs, size_t n, bool update,
			struct fc_err *err)
{
	LIBBPF_OPTS(bpf_map_batch_opts, opts);
	uint8_t *keys = fc_batch_keys;
	uint8_t *vals = fc_batch_vals;
	bool batch = !fc_stepping(); /* a test's stops: an entry at a time */
	struct fc_top6 val;
	size_t off, i;
	__u32 cnt;
	int rc;

	for (off = 0; off < n; off += cnt) {
		cnt = (__u32)(n - off < FC_BATCH ? n - off : FC_BATCH);
		for (i = 0; i < cnt; i++) {
			memcpy(keys + i * ms->keysz, kvs[off + i].key, ms->keysz);
			fc_kv_value(ms, &kvs[off + i], &val);
			memcpy(vals + i * ms->valsz, &val, ms->valsz);
		}
		if (batch) {
			__u32 done = cnt;

			rc = update ? bpf_map_update_batch(ms->fd, keys, vals, &done, &opts) :
				      bpf_map_delete_batch(ms->fd, keys, &done, &opts);
			if (!rc) {
				fc_step(ms->name);
				continue;
			}
			if (!fc_batch_unsupported())
				return fc_err_set(err, "map %s: batch %s: %s", ms->name, update ? "update" : "delete",
						  strerror(errno));
			batch = false; /* a kernel without batches: one at a time */
		}
		for (i = 0; i < cnt; i++) {
			rc = update ? bpf_map_update_elem(ms->fd, keys + i * ms->keysz, vals + i * ms->valsz, BPF_ANY) :
				      bpf_map_delete_elem(ms->fd, keys + i * ms->keysz);
			if (rc && !(errno == ENOENT && !update))
				return fc_err_set(err, "map %s: %s: %s", ms->name, update ? "update" : "delete",
						  errno == E2BIG ? "map full" : strerror(errno));
			fc_step(ms->name);
		}
	}
	return 0;
}

/* The address bytes and length of a prefix key. */
static const uint8_t *fc_kv_addr(const struct fc_kv *kv, uint32_t *len)
{
	memcpy(len, kv->key, sizeof(*len));
	return kv->key + sizeof(uint32_t);
}

/* Address order, shorter prefixes first: every prefix sorts before the
 * prefixes it covers, which is what the inheritance walk needs. */
static int fc_kv_addr_cmp(const void *a, const void *b, void *ms)
{
	uint32_t la, lb;
	const uint8_t *pa = fc_kv_addr(a, &la), *pb = fc_kv_addr(b, &lb);
	int c = memcmp(pa, pb, ((struct fc_map_sync *)ms)->family == 4 ? 4 : 16);

	return c ? c : (la > lb) - (la < lb);
}

/* Sets flag (a ban, an allow entry) on r, lapsing at *at: the later of
 * what it was and expires_ns (0: never). */
static void fc_rule_add(struct fc_rule *r, __u32 flag, __u64 *at, uint64_t expires_ns)
{
	if (!(r->flags & flag)) {
		r->flags |= flag;
		*at = expires_ns;
	} else if (*at && (!expires_ns || expires_ns > *at)) {
		*at = expires_ns; /* the longer one holds */
	}
}

/* Adds a ban of source set (0: by hand) to r: the longer ban holds, and
 * its drops count under the lowest source. */
static void fc_rule_add_ban(struct fc_rule *r, uint64_t expires_ns, uint32_t set)
{
	if (!(r->flags & FC_RULE_BANNED))
		r->flags = (r->flags & ~FC_RULE_SET_MASK) | set << FC_RULE_SET_SHIFT;
	else if (set < FC_RULE_SET(r->flags))
		r->flags = (r->flags & ~FC_RULE_SET_MASK) | set << FC_RULE_SET_SHIFT;
	fc_rule_add(r, FC_RULE_BANNED, &r->ban_expires_ns, expires_ns);
}

static void fc_rule_add_allow(struct fc_rule *r, uint64_t expires_ns)
{
	fc_rule_add(r, FC_RULE_ALLOWED, &r->allow_expires_ns, expires_ns);
}

/* The kernel's ban for a store's ban row (a set's member: no expiry, the
 * set lapses whole). */
static struct fc_rule fc_rule_of_ban(const struct fc_ban_row *b)
{
	struct fc_rule r = { 0 };

	fc_rule_add_ban(&r, b->set ? 0 : fc_expiry_ns(b->expires), b->set);
	return r;
}

/* Folds r into the entry with the same key: a ban, an allow entry and a
 * policy on one prefix, a marker where a prefix is (which is then no
 * marker). */
static void fc_rule_merge(struct fc_rule *into, const struct fc_rule *r)
{
	if (r->flags & FC_RULE_BANNED)
		fc_rule_add_ban(into, r->ban_expires_ns, FC_RULE_SET(r->flags));
	if (r->flags & FC_RULE_ALLOWED)
		fc_rule_add_allow(into, r->allow_expires_ns);
	if (r->policy)
		into->policy = r->policy;
	into->flags |= r->flags & FC_RULE_LONGER;
	if (!(r->flags & FC_RULE_MARKER))
		into->flags &= ~FC_RULE_MARKER;
}

/* r without the prefix answer it carries (FC_RULE_CARRY). */
static struct fc_rule fc_rule_uncarried(const struct fc_rule *r)
{
	struct fc_rule u = *r;

	/* carry_policy shares allow_expires_ns's bytes: an allow entry merged
	 * over a carried answer (fc_rule_union) keeps its whole expiry. */
	u.flags &= ~FC_RULE_CARRY;
	if (!(u.flags & FC_RULE_ALLOWED))
		u.allow_expires_ns = 0;
	return u;
}

/* Whether the entry r may carry a prefix answer: a policy, and neither a
 * ban nor an allow entry (the others look the prefixes up, a lapsed ban
 * too). */
static bool fc_rule_may_carry(const struct fc_rule *r)
{
	return r->policy && !(r->flags & (FC_RULE_BANNED | FC_RULE_ALLOWED));
}

/*
 * The prefix answer an IPv4 exact entry r carries, from pfx, the folded
 * entry of the longest prefix covering its address (NULL: none), which is
 * what the packet path's prefix lookup finds: only where r may carry one,
 * and where that prefix neither bans nor allows (so a prefix's ban, even
 * one that lapses in the kernel, is always looked up).
 */
static void fc_rule_carry(struct fc_rule *r, const struct fc_rule *pfx)
{
	*r = fc_rule_uncarried(r);
	if (!fc_rule_may_carry(r) || (pfx && (pfx->flags & (FC_RULE_BANNED | FC_RULE_ALLOWED))))
		return;
	r->flags |= FC_RULE_CARRY;
	r->carry_policy = pfx ? pfx->policy : 0;
}

/*
 * What an exact entry holds while a publish changes it from h to w: the
 * bans and allow entries of both (the longer-lasting), w's policy, else h's,
 * and no carried prefix answer: the packet path meets it with the prefix
 * maps' answer, old or new, and a source banned (allowed, limited by a
 * policy) before and after stays so whichever it meets (doc/architecture.md,
 * Publishing order). w's carried answer comes with its own value, once
 * every prefix is written.
 */
static struct fc_rule fc_rule_union(const struct fc_rule *h, const struct fc_rule *w)
{
	struct fc_rule u = *h;

	fc_rule_merge(&u, w);
	return fc_rule_uncarried(&u);
}

/*
 * An IPv6 prefix entry h as it is, its search guides widened to serve what
 * it will be (w) too: it goes on to longer lengths if either does, and
 * jumps to one length (FC_RULE_NEXT) only where both agree, or where only
 * one goes on. Written before anything else changes, so that no search is
 * sent past an entry the publish adds or changes. False if h needs none.
 */
static bool fc_rule_widen(const struct fc_rule *h, const struct fc_rule *w, struct fc_rule *out)
{
	uint32_t hl = h->flags & FC_RULE_LONGER, wl = w->flags & FC_RULE_LONGER;
	uint32_t hn = FC_RULE_NEXT(h->flags), wn = FC_RULE_NEXT(w->flags);
	uint32_t next = !wl ? hn : !hl ? wn : hn == wn ? hn : 0;

	*out = *h;
	out->flags = (h->flags & ~(FC_RULE_LONGER | FC_RULE_NEXT_MASK)) | hl | wl | next << FC_RULE_NEXT_SHIFT;
	return out->flags != h->flags;
}

/* Folds entries with the same key into one. */
static void fc_want_merge(struct fc_map_sync *ms)
{
	struct fc_kv *v = ms->want.v;
	size_t i, o = 0;

	fc_kvs_sort(&ms->want, fc_kv_cmp, &ms->keysz);
	for (i = 0; i < ms->want.n; i++) {
		if (o && !memcmp(v[o - 1].key, v[i].key, ms->keysz)) {
			fc_rule_merge(&v[o - 1].val, &v[i].val);
			continue;
		}
		v[o++] = v[i];
	}
	ms->want.n = o;
}

/* Whether a map's entries are exact addresses (fc_exact4, fc_exact6), not
 * prefixes (or fc_top6's copies of them). */
static bool fc_ms_exact(const struct fc_map_sync *ms)
{
	return !ms->prefixes && ms->keysz == (ms->family == 4 ? 4u : 16u);
}

/* Where an exact entry first written as u takes its own value w last: with
 * the carried prefix answer alone to come (which narrows nothing: no wait
 * for packets in flight), carry; else fin. */
static struct fc_kvs *fc_fin_of(struct fc_map_sync *ms, const struct fc_rule *u, const struct fc_rule *w)
{
	struct fc_rule bare = fc_rule_uncarried(w);

	return memcmp(u, &bare, sizeof(bare)) ? &ms->fin : &ms->carry;
}

/* Notes that the entry of key h changes from h to w (h NULL: added; w
 * NULL: deleted) in ms's lists, as fc_order_write writes them. */
static int fc_diff_note(struct fc_map_sync *ms, const struct fc_kv *h, const struct fc_kv *w)
{
	struct fc_kv u;

	if (!w)
		return fc_kvs_append(&ms->del, h, 1);
	u = *w;
	if (fc_ms_exact(ms)) {
		u.val = h ? fc_rule_union(&h->val, &w->val) : fc_rule_uncarried(&w->val);
		if (memcmp(&u.val, &w->val, sizeof(u.val)) && fc_kvs_append(fc_fin_of(ms, &u.val, &w->val), w, 1) < 0)
			return -1;
	} else if (h && ms->family == 6) {
		u = *h;
		if (fc_rule_widen(&h->val, &w->val, &u.val) && fc_kvs_append(&ms->relax, &u, 1) < 0)
			return -1;
		u = *w;
	}
	return fc_kvs_append(&ms->put, &u, 1);
}

/* Whether entries a and b of ms, of one key, are written differently. */
static bool fc_kv_differ(const struct fc_map_sync *ms, const struct fc_kv *a, const struct fc_kv *b)
{
	struct fc_top6 va, vb;

	if (memcmp(&a->val, &b->val, sizeof(a->val)))
		return true;
	if (ms->valsz == sizeof(a->val) || a->in == b->in)
		return false;
	fc_kv_value(ms, a, &va);
	fc_kv_value(ms, b, &vb);
	return memcmp(&va, &vb, sizeof(va)) != 0;
}

/* Reads what ms holds and notes how it differs from want (both sorted by
 * key), for fc_order_write. */
static int fc_map_diff(struct fc_map_sync *ms, struct fc_sync_result *res, struct fc_err *err)
{
	size_t i = 0, j = 0;
	int rc = 0, c;

	if (fc_map_dump(ms, err) < 0)
		return -1;
	fc_kvs_sort(&ms->have, fc_kv_cmp, &ms->keysz);
	while (!rc && (i < ms->want.n || j < ms->have.n)) {
		if (i == ms->want.n)
			c = 1;
		else if (j == ms->have.n)
			c = -1;
		else
			c = memcmp(ms->want.v[i].key, ms->have.v[j].key, ms->keysz);
		if (c < 0) {
			rc = fc_diff_note(ms, NULL, &ms->want.v[i]);
			res->added++;
		} else if (c > 0) {
			rc = fc_diff_note(ms, &ms->have.v[j], NULL);
			res->removed++;
		} else if (fc_kv_differ(ms, &ms->want.v[i], &ms->have.v[j])) {
			rc = fc_diff_note(ms, &ms->have.v[j], &ms->want.v[i]);
			res->changed++;
		}
		i += c <= 0;
		j += c >= 0;
	}
	free(ms->have.v);
	ms->have = (struct fc_kvs){ 0 };
	return rc < 0 ? fc_err_set(err, "out of memory diffing map %s", ms->name) : 0;
}

/* FC_RULE_NEXT's length of an IPv6 entry while the walk below makes it:
 * none yet, one, or this for several. */
#define FC_NEXT_MANY 0xff

/* Notes an IPv6 prefix of length len in next[] of the entries covering it
 * (stack[0..depth)) of the root's length or longer. */
static void fc_next_note(const struct fc_kv *v, const size_t *stack, size_t depth, uint8_t *next, uint32_t len)
{
	const uint32_t root = fc_pfx6_mid(FC_PFX6_MIN, FC_PFX6_MAX);
	uint32_t lt;
	size_t j;

	for (j = 0; j < depth; j++) {
		fc_kv_addr(&v[stack[j]], &lt);
		if (lt >= root)
			next[stack[j]] = !next[stack[j]] || next[stack[j]] == len ? (uint8_t)len : FC_NEXT_MANY;
	}
}

/* On each entry of the root's length (fc_top6's copies) whose prefixes
 * inside are one prefix (FC_RULE_NEXT says they have one length), that
 * prefix, as fc_pfx6 will hold it (kv.in): the search compares where it
 * would look it up. v is in address order, so what an entry covers follows
 * it. */
static int fc_want_inner(const struct fc_map_sync *ms, struct fc_kv *v, size_t n)
{
	struct fc_top6_in one_in;
	const uint8_t *a, *in;
	uint32_t len, lin;
	size_t i, j, one;
	bool many;

	for (i = 0; i < n; i++) {
		a = fc_kv_addr(&v[i], &len);
		if (len != FC_PFX6_ROOT || !FC_RULE_NEXT(v[i].val.flags))
			continue;
		one = n;
		many = false;
		for (j = i + 1; j < n && !many; j++) {
			in = fc_kv_addr(&v[j], &lin);
			if (!fc_prefix_covers_bits(a, len, in, lin))
				break;
			if (v[j].val.flags & FC_RULE_MARKER)
				continue;
			many = one != n;
			one = j;
		}
		if (one == n || many)
			continue;
		in = fc_kv_addr(&v[one], &lin);
		one_in = (struct fc_top6_in){ .rule = v[one].val, .len = lin };
		memcpy(one_in.a, in + sizeof(struct fc_top6_key), sizeof(one_in.a));
		if (!(v[i].in = fc_in_add(ms->ins, &one_in)))
			return -1;
	}
	return 0;
}

/*
 * A search stops at the longest match, so each entry carries the bans and
 * the allow entries of the prefixes covering it (the longest-lasting of
 * each) and, when it has no policy of its own, the policy of the nearest
 * covering prefix that has one; an IPv6 entry, the one length of the
 * prefixes inside it (FC_RULE_NEXT). Leaves want in address order.
 */
static int fc_want_inherit(struct fc_map_sync *ms, struct fc_err *err)
{
	struct fc_kv *v = ms->want.v;
	size_t *stack, depth = 0, i;
	uint8_t *next = NULL;
	uint32_t lt, le;
	int rc;

	if (!ms->want.n)
		return 0;
	stack = malloc(ms->want.n * sizeof(*stack));
	if (ms->family == 6)
		next = calloc(ms->want.n, sizeof(*next));
	if (!stack || (ms->family == 6 && !next)) {
		free(stack);
		free(next);
		return fc_err_set(err, "out of memory publishing map %s", ms->name);
	}
	fc_kvs_sort(&ms->want, fc_kv_addr_cmp, ms);
	for (i = 0; i < ms->want.n; i++) {
		const uint8_t *a = fc_kv_addr(&v[i], &le);

		while (depth) {
			const uint8_t *t = fc_kv_addr(&v[stack[depth - 1]], &lt);

			if (fc_prefix_covers_bits(t, lt, a, le))
				break;
			depth--;
		}
		if (depth) {
			const struct fc_rule *up = &v[stack[depth - 1]].val;

			if (up->flags & FC_RULE_BANNED)
				fc_rule_add_ban(&v[i].val, up->ban_expires_ns, FC_RULE_SET(up->flags));
			if (up->flags & FC_RULE_ALLOWED)
				fc_rule_add_allow(&v[i].val, up->allow_expires_ns);
			if (!v[i].val.policy)
				v[i].val.policy = up->policy;
		}
		if (next && !(v[i].val.flags & FC_RULE_MARKER))
			fc_next_note(v, stack, depth, next, le);
		stack[depth++] = i;
	}
	for (i = 0; next && i < ms->want.n; i++)
		if (next[i] && next[i] != FC_NEXT_MANY)
			v[i].val.flags |= (uint32_t)next[i] << FC_RULE_NEXT_SHIFT;
	rc = next ? fc_want_inner(ms, v, ms->want.n) : 0;
	free(stack);
	free(next);
	return rc < 0 ? fc_err_set(err, "out of memory publishing map %s", ms->name) : 0;
}

/* Adds to out the search markers of kv, an IPv6 prefix of ms
 * (maps/fc_maps.h): one at each length on its path through the tree of
 * lengths where the search must turn longer to reach it. */
static int fc_kv_markers(const struct fc_map_sync *ms, struct fc_kv kv, struct fc_kvs *out, struct fc_err *err)
{
	uint32_t lo = FC_PFX6_MIN, hi = FC_PFX6_MAX, len, mid;
	struct fc_kv *mk;

	fc_kv_addr(&kv, &len);
	while (len >= lo && lo <= hi) {
		mid = fc_pfx6_mid(lo, hi);
		if (len == mid)
			break;
		if (len < mid) {
			hi = mid - 1;
			continue;
		}
		if (!(mk = fc_kvs_push(out)))
			return fc_err_set(err, "out of memory publishing map %s", ms->name);
		memcpy(mk->key, kv.key, ms->keysz);
		memcpy(mk->key, &mid, sizeof(mid));
		fc_prefix_mask(mk->key + sizeof(mid), ms->keysz - sizeof(mid), mid);
		mk->val = (struct fc_rule){ .flags = FC_RULE_MARKER | FC_RULE_LONGER };
		lo = mid + 1;
	}
	return 0;
}

/*
 * The entries of a prefix map from the prefixes in ms->want (merged): what
 * the prefixes covering each entry say folded into it; for IPv6 their
 * search markers; for IPv4 a copy in address order, added to what fc_top4
 * is made of. (The prefixes of /1 to /16 stay in fc_pfx4 too, never looked
 * up there: what it holds says what fc_top4 was made of.) Leaves want
 * sorted by key, its markers counted and, for IPv6, the lengths of its
 * prefixes noted.
 */
static int fc_want_prefixes(struct fc_map_sync *ms, struct fc_top4_sync *top4, struct fc_err *err)
{
	size_t n = ms->want.n, i;
	struct fc_kv *v;
	uint32_t len;

	for (i = 0; ms->family == 6 && i < n; i++)
		if (fc_kv_markers(ms, ms->want.v[i], &ms->want, err) < 0)
			return -1;
	fc_want_merge(ms);
	if (fc_want_inherit(ms, err) < 0)
		return -1;
	v = ms->want.v;
	if (ms->family == 4 && fc_kvs_append(&top4->pfx, v, ms->want.n) < 0)
		return fc_err_set(err, "out of memory publishing map %s", FC_MAP_NAME(top4));
	for (i = 0; ms->family == 6 && i < ms->want.n; i++) {
		fc_kv_addr(&v[i], &len);
		if (v[i].val.flags & FC_RULE_MARKER)
			ms->marks++;
		else
			ms->lens[len / 64] |= 1ULL << (len % 64);
	}
	fc_kvs_sort(&ms->want, fc_kv_cmp, &ms->keysz);
	return 0;
}

/* The fc_top6 entry of kv, an entry of fc_pfx6 of its tree's root length. */
static void fc_kv_top6(const struct fc_kv *kv, struct fc_kv *top)
{
	uint32_t len;

	memset(top, 0, sizeof(*top));
	memcpy(top->key, fc_kv_addr(kv, &len), sizeof(struct fc_top6_key));
	top->val = kv->val;
	top->in = kv->in;
}

/* fc_top6's entries (ms[FC_MS_TOP6].want), sorted by key: those of
 * ms[FC_MS_PFX6].want at the root's length. */
static int fc_want_top6(struct fc_map_sync *ms, struct fc_err *err)
{
	const struct fc_kvs *pfx = &ms[FC_MS_PFX6].want;
	struct fc_map_sync *top6 = &ms[FC_MS_TOP6];
	struct fc_kv *kv;
	uint32_t len;
	size_t i;

	for (i = 0; i < pfx->n; i++) {
		fc_kv_addr(&pfx->v[i], &len);
		if (len != FC_PFX6_ROOT)
			continue;
		if (!(kv = fc_kvs_push(&top6->want)))
			return fc_err_set(err, "out of memory publishing map %s", top6->name);
		fc_kv_top6(&pfx->v[i], kv);
	}
	fc_kvs_sort(&top6->want, fc_kv_cmp, &top6->keysz);
	return 0;
}

/* How many rule entries a publish wrote or deleted. */
static size_t fc_sync_wrote(const struct fc_sync_result *res)
{
	return res->added + res->changed + res->removed;
}

/* Where the address starts in a key of fc_pfx4 and of fc_exact4. */
#define FC_KV_PFX4   offsetof(struct fc_pfx4_key, a)
#define FC_KV_EXACT4 0

/* The /16 (fc_top4 index) of an IPv4 key whose address starts at off. */
static uint32_t fc_kv_top4(const struct fc_kv *kv, size_t off)
{
	return (uint32_t)kv->key[off] << 8 | kv->key[off + 1];
}

static bool fc_top4_empty(const struct fc_top4 *t)
{
	static const struct fc_top4 none;

	return !memcmp(t, &none, sizeof(none));
}

/* A prefix of /17 to /31 into the fc_top4 entry of its /16: the length
 * covering each /24 it covers, or a length inside its /24. Called in address
 * order, which puts a prefix before those it covers: the longest is noted
 * last. */
static void fc_top4_note(struct fc_top4 *t, const struct fc_kv *kv)
{
	uint32_t len, i;
	const uint8_t *a = fc_kv_addr(kv, &len);

	if (len > 24) {
		t->longer |= (__u8)(1u << (len - 25));
		t->in24[a[2]] |= FC_IN24_LONGER;
		return;
	}
	for (i = a[2]; i < a[2] + (1u << (24 - len)); i++)
		t->in24[i] = (__u8)((t->in24[i] & ~FC_IN24_LEN) | (len - FC_TOP4_SHIFT));
}

/* Marks (bit idx of mark) the /16s the prefix key covers or lies in. */
static void fc_top4_mark(uint64_t *mark, const struct fc_kv *kv)
{
	uint32_t len, idx = fc_kv_top4(kv, FC_KV_PFX4), end;

	fc_kv_addr(kv, &len);
	for (end = idx + (len < FC_TOP4_SHIFT ? 1u << (FC_TOP4_SHIFT - len) : 1); idx < end; idx++)
		mark[idx / 64] |= 1ULL << (idx % 64);
}

/* The first entry of the address-ordered list p (n long, addresses at off)
 * at or past the /16 idx. */
static size_t fc_top4_seek(const struct fc_kv *p, size_t n, size_t off, uint32_t idx)
{
	size_t lo = 0, hi = n, mid;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (fc_kv_top4(&p[mid], off) < idx)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Maps the pages of fc_top4 that hold the /16s lo to hi, unless the
 * mapping made last holds them: a publish that changes many addresses of a
 * /16 maps it once. fc_top4_unview ends it. */
static int fc_top4_view(const struct fc_maps *m, struct fc_top4_sync *top4, uint32_t lo, uint32_t hi,
			struct fc_err *err)
{
	const size_t page = (size_t)sysconf(_SC_PAGESIZE);
	size_t off = (size_t)lo * sizeof(struct fc_top4) / page * page;
	size_t end = ((size_t)(hi + 1) * sizeof(struct fc_top4) + page - 1) / page * page;
	void *mem;

	if (lo > hi || hi >= FC_TOP4_SLOTS)
		return fc_err_set(err, "map %s: /16s %u to %u: no such range", FC_MAP_NAME(top4), lo, hi);
	if (top4->mem && off >= top4->off && end <= top4->off + top4->size)
		return 0;
	mem = mmap(NULL, end - off, PROT_READ | PROT_WRITE, MAP_SHARED, m->top4, (off_t)off);
	if (mem == MAP_FAILED)
		return fc_err_set(err, "map %s: mmap: %s", FC_MAP_NAME(top4), strerror(errno));
	if (top4->mem)
		munmap(top4->mem, top4->size);
	top4->mem = mem;
	top4->off = off;
	top4->size = end - off;
	return 0;
}

static void fc_top4_unview(struct fc_top4_sync *top4)
{
	if (top4->mem)
		munmap(top4->mem, top4->size);
	top4->mem = NULL;
}

/* The entry of the /16 idx, in the mapping fc_top4_view made for it. */
static struct fc_top4 *fc_top4_at(const struct fc_top4_sync *top4, uint32_t idx)
{
	return (struct fc_top4 *)(void *)(top4->mem + (size_t)idx * sizeof(struct fc_top4) - top4->off);
}

/* Notes, before its first write in a publish, whether the entry t of the
 * /16 idx was empty: the count of entries in use is put right from it. */
static void fc_top4_touch(struct fc_top4_sync *top4, uint32_t idx, const struct fc_top4 *t)
{
	uint64_t bit = 1ULL << (idx % 64);

	if (top4->touched[idx / 64] & bit)
		return;
	top4->touched[idx / 64] |= bit;
	if (fc_top4_empty(t))
		top4->was_empty[idx / 64] |= bit;
}

/* A byte of fc_top4, in one store where the packet path reads it. */
static void fc_top4_store8(__u8 *p, __u8 v)
{
	__atomic_store_n(p, v, __ATOMIC_RELEASE);
	fc_step(FC_MAP_NAME(top4));
}

/* The count of fc_top4 entries in use after a publish that did not look
 * at every /16: as it was, put right for those written. */
static void fc_top4_recount(struct fc_top4_sync *top4)
{
	uint32_t w, idx;
	uint64_t bits;

	for (w = 0; w < FC_TOP4_SLOTS / 64; w++) {
		for (bits = top4->touched[w]; bits; bits &= bits - 1) {
			idx = w * 64 + (uint32_t)__builtin_ctzll(bits);
			top4->used += !!(top4->was_empty[w] & (1ULL << (idx % 64)));
			top4->used -= fc_top4_empty(fc_top4_at(top4, idx));
		}
	}
}

/* The FC_IN24_EXACT bits of the /16 idx: its /24s that an address of the
 * sorted list exact lies in. */
static void fc_top4_note_exact(struct fc_top4 *t, const struct fc_kvs *exact, uint32_t idx)
{
	size_t j;

	for (j = fc_top4_seek(exact->v, exact->n, FC_KV_EXACT4, idx);
	     j < exact->n && fc_kv_top4(&exact->v[j], FC_KV_EXACT4) == idx; j++)
		t->in24[exact->v[j].key[2]] |= FC_IN24_EXACT;
}

/*
 * Sets (on) or clears the FC_IN24_EXACT bit of the /24 of the IPv4 address a:
 * set before an entry of fc_exact4 there is written, cleared after its last
 * one went (fc_top4_exact_gone). Counts the entries it makes (not) empty,
 * and the bits it flips: each is a change of the rules (a bit a full sync
 * puts back voids what ip=* buckets noted without it).
 */
static int fc_top4_exact(const struct fc_maps *m, struct fc_top4_sync *top4, const uint8_t *a, bool on,
			 struct fc_err *err)
{
	uint32_t idx = (uint32_t)a[0] << 8 | a[1];
	struct fc_top4 *t;

	if (fc_top4_view(m, top4, idx, idx, err) < 0)
		return -1;
	t = fc_top4_at(top4, idx);
	if (!!(t->in24[a[2]] & FC_IN24_EXACT) == on)
		return 0;
	fc_top4_touch(top4, idx, t);
	fc_top4_store8(&t->in24[a[2]], t->in24[a[2]] ^ FC_IN24_EXACT);
	top4->flips++;
	return 0;
}

/* The /24s of the IPv4 addresses a delta takes out of fc_exact4 (a << 16 |
 * b << 8 | c), in the order the store gave their keys: their bits are
 * looked at once. */
struct fc_gone24 {
	uint32_t *v;
	size_t n, cap;
};

static int fc_gone24_push(struct fc_gone24 *g, const uint8_t *a, struct fc_err *err)
{
	uint32_t p24 = (uint32_t)a[0] << 16 | (uint32_t)a[1] << 8 | a[2];
	uint32_t *v;

	if (g->n && g->v[g->n - 1] == p24)
		return 0; /* the common case; fc_top4_exact_gone sorts the rest out */
	if (g->n == g->cap) {
		if (!(v = realloc(g->v, (g->cap ? g->cap * 2 : 64) * sizeof(*v))))
			return fc_err_set(err, "out of memory publishing map %s", FC_MAP_NAME(top4));
		g->v = v;
		g->cap = g->cap ? g->cap * 2 : 64;
	}
	g->v[g->n++] = p24;
	return 0;
}

/*
 * After the delta's entries went: clears the bit of each /24 of gone that no
 * rule of the store is on an address in any more, asking the store once for
 * them all (doc/architecture.md, Publishing order). Leaves gone holding the
 * /24s whose bits were set.
 */
static int fc_top4_exact_gone(struct fc_store *st, const struct fc_maps *m, struct fc_top4_sync *top4,
			      struct fc_gone24 *gone, int64_t now, struct fc_err *err)
{
	size_t *held = NULL, nheld = 0, i, j, n = 0;
	uint8_t a[3];
	int rc = -1;

	if (!gone->n)
		return 0;
	/* The store's order, not ours: a row a script wrote may sort apart. */
	qsort(gone->v, gone->n, sizeof(*gone->v), fc_u32_cmp);
	if (fc_top4_view(m, top4, gone->v[0] >> 8, gone->v[gone->n - 1] >> 8, err) < 0)
		return -1;
	for (i = 0; i < gone->n; i++)
		if ((!n || gone->v[i] != gone->v[n - 1]) &&
		    (fc_top4_at(top4, gone->v[i] >> 8)->in24[gone->v[i] & 0xff] & FC_IN24_EXACT))
			gone->v[n++] = gone->v[i];
	gone->n = n;
	if (fc_store_exact_in(st, gone->v, gone->n, now, &held, &nheld, err) < 0)
		return -1;
	for (i = j = 0; i < gone->n; i++) {
		while (j < nheld && held[j] < i)
			j++;
		if (j < nheld && held[j] == i)
			continue;
		a[0] = (uint8_t)(gone->v[i] >> 16);
		a[1] = (uint8_t)(gone->v[i] >> 8);
		a[2] = (uint8_t)gone->v[i];
		if (fc_top4_exact(m, top4, a, false, err) < 0)
			goto out;
	}
	rc = 0;
out:
	free(held);
	return rc;
}

/* The bits of the /24s the sorted list exact (fc_exact4's entries to be)
 * has addresses in, set before those entries are written. */
static int fc_top4_exact_all(const struct fc_maps *m, struct fc_top4_sync *top4, const struct fc_kvs *exact,
			     struct fc_err *err)
{
	size_t i;

	if (!exact->n)
		return 0;
	if (fc_top4_view(m, top4, fc_kv_top4(&exact->v[0], FC_KV_EXACT4),
			 fc_kv_top4(&exact->v[exact->n - 1], FC_KV_EXACT4), err) < 0)
		return -1;
	for (i = 0; i < exact->n; i++)
		if (fc_top4_exact(m, top4, exact->v[i].key, true, err) < 0)
			return -1;
	return 0;
}

static int fc_u32s_push(struct fc_u32s *s, uint32_t v)
{
	uint32_t *nv;

	if (s->n == s->cap) {
		if (!(nv = realloc(s->v, (s->cap ? s->cap * 2 : 64) * sizeof(*nv))))
			return -1;
		s->v = nv;
		s->cap = s->cap ? s->cap * 2 : 64;
	}
	s->v[s->n++] = v;
	return 0;
}

/* Notes that the /16 idx's entry t becomes e: in chg, and each /24 whose
 * prefix of /17 to /24 moves in the list of when it moves (fc_top4_sync.sw). */
static int fc_top4_note_new(struct fc_top4_sync *top4, uint32_t idx, const struct fc_top4 *t, const struct fc_top4 *e)
{
	struct fc_top4_new *nv;
	uint32_t i, was, will;

	if (top4->nchg == top4->capchg) {
		nv = realloc(top4->chg, (top4->capchg ? top4->capchg * 2 : 16) * sizeof(*nv));
		if (!nv)
			return -1;
		top4->chg = nv;
		top4->capchg = top4->capchg ? top4->capchg * 2 : 16;
	}
	top4->chg[top4->nchg] = (struct fc_top4_new){ .idx = idx, .e = *e };
	top4->narrows |= (t->longer & ~e->longer) != 0;
	for (i = 0; i < 256; i++) {
		top4->narrows |= (t->in24[i] & ~e->in24[i] &
				  (top4->whole ? FC_IN24_LONGER | FC_IN24_EXACT : FC_IN24_LONGER)) != 0;
		was = t->in24[i] & FC_IN24_LEN;
		will = e->in24[i] & FC_IN24_LEN;
		if (was != will && fc_u32s_push(&top4->sw[will > was ? will : 0], (uint32_t)top4->nchg << 8 | i) < 0)
			return -1;
	}
	top4->nchg++;
	return 0;
}

/* The entry of the /16 idx as the IPv4 prefixes say (top4->pfx, in address
 * order; cover: for each /16 the longest of them of /1 to /16 covering it,
 * its index + 1), its FC_IN24_EXACT bits those of t, or (whole) from
 * top4->exact. */
static void fc_top4_make(const struct fc_top4_sync *top4, const uint32_t *cover, uint32_t idx, const struct fc_top4 *t,
			 struct fc_top4 *e)
{
	const struct fc_kv *p = top4->pfx.v;
	uint32_t len, i;
	size_t j;

	memset(e, 0, sizeof(*e));
	if (cover[idx])
		e->rule = p[cover[idx] - 1].val;
	for (j = fc_top4_seek(p, top4->pfx.n, FC_KV_PFX4, idx); j < top4->pfx.n && fc_kv_top4(&p[j], FC_KV_PFX4) == idx;
	     j++) {
		fc_kv_addr(&p[j], &len);
		if (len > FC_TOP4_SHIFT)
			fc_top4_note(e, &p[j]);
	}
	if (top4->whole)
		fc_top4_note_exact(e, top4->exact, idx);
	else
		for (i = 0; i < 256; i++)
			e->in24[i] |= t->in24[i] & FC_IN24_EXACT;
}

/*
 * What fc_top4 should hold, at the /16s marked (bit idx of mark: those a
 * changed prefix covers or lies in) or, whole, at every /16: the entries
 * that change, noted for fc_order_write, which writes them in its order;
 * nothing is written here. top4->pfx holds every prefix covering or inside
 * a marked /16. The FC_IN24_EXACT bits are made, whole, from top4->exact
 * (what fc_exact4 will hold), else kept as they are (doc/architecture.md,
 * Publishing order). Counts the entries that change in res, and, whole,
 * those in use after.
 */
static int fc_top4_plan(const struct fc_maps *m, struct fc_top4_sync *top4, uint64_t *mark, struct fc_sync_result *res,
			struct fc_err *err)
{
	const struct fc_kv *p = top4->pfx.v;
	uint32_t *cover = NULL, len, idx, end, i, lo, hi;
	const struct fc_top4 *t;
	struct fc_top4 e;
	int rc = -1;

	if (top4->whole)
		memset(mark, 0xff, FC_TOP4_SLOTS / 8);
	for (lo = 0; lo < FC_TOP4_SLOTS / 64 && !mark[lo]; lo++)
		;
	if (lo == FC_TOP4_SLOTS / 64)
		return 0;
	for (hi = FC_TOP4_SLOTS / 64 - 1; !mark[hi]; hi--)
		;
	lo = lo * 64 + (uint32_t)__builtin_ctzll(mark[lo]);
	hi = hi * 64 + 63 - (uint32_t)__builtin_clzll(mark[hi]);
	/* For each /16, the longest prefix of /1 to /16 covering it (index + 1). */
	if (!(cover = calloc(FC_TOP4_SLOTS, sizeof(*cover))))
		return fc_err_set(err, "out of memory publishing map %s", FC_MAP_NAME(top4));
	for (i = 0; i < top4->pfx.n; i++) {
		fc_kv_addr(&p[i], &len);
		if (len > FC_TOP4_SHIFT)
			continue;
		for (idx = fc_kv_top4(&p[i], FC_KV_PFX4), end = idx + (1u << (FC_TOP4_SHIFT - len)); idx < end; idx++)
			cover[idx] = i + 1;
	}
	/* Only the pages of the marked /16s: the kernel maps every page of
	 * the range at mmap time (4,608 for the whole array, ~1 ms here). */
	if (fc_top4_view(m, top4, lo, hi, err) < 0)
		goto out;
	if (top4->whole)
		top4->used = 0;
	for (idx = lo; idx <= hi; idx++) {
		if (!(mark[idx / 64] & (1ULL << (idx % 64))))
			continue;
		t = fc_top4_at(top4, idx);
		fc_top4_make(top4, cover, idx, t, &e);
		top4->used += top4->whole && !fc_top4_empty(&e);
		if (!memcmp(t, &e, sizeof(e)))
			continue;
		res->added += fc_top4_empty(t);
		res->removed += fc_top4_empty(&e);
		res->changed += !fc_top4_empty(t) && !fc_top4_empty(&e);
		if (fc_top4_note_new(top4, idx, t, &e) < 0) {
			fc_err_set(err, "out of memory publishing map %s", FC_MAP_NAME(top4));
			goto out;
		}
	}
	rc = 0;
out:
	free(cover);
	return rc;
}

/* Maps the /16s that change. */
static int fc_top4_view_chg(const struct fc_maps *m, struct fc_top4_sync *top4, struct fc_err *err)
{
	return top4->nchg ? fc_top4_view(m, top4, top4->chg[0].idx, top4->chg[top4->nchg - 1].idx, err) : 0;
}

/* First: the /16s and /24s that will hold prefixes of /25 to /31 say so
 * (FC_IN24_LONGER, fc_top4.longer), before those are written: a lookup
 * that finds none of them there goes on as before. */
static int fc_top4_relax(const struct fc_maps *m, struct fc_top4_sync *top4, struct fc_err *err)
{
	struct fc_top4 *t;
	size_t c;
	uint32_t i;

	if (fc_top4_view_chg(m, top4, err) < 0)
		return -1;
	for (c = 0; c < top4->nchg; c++) {
		const struct fc_top4 *e = &top4->chg[c].e;

		t = fc_top4_at(top4, top4->chg[c].idx);
		fc_top4_touch(top4, top4->chg[c].idx, t);
		if (e->longer & ~t->longer)
			fc_top4_store8(&t->longer, t->longer | e->longer);
		for (i = 0; i < 256; i++)
			if (e->in24[i] & FC_IN24_LONGER & ~t->in24[i])
				fc_top4_store8(&t->in24[i], t->in24[i] | FC_IN24_LONGER);
	}
	return 0;
}

/* The /24s of sw[k] point at their prefix of /17 to /24 to be. */
static void fc_top4_switch(struct fc_top4_sync *top4, uint32_t k)
{
	const struct fc_top4_new *c;
	struct fc_top4 *t;
	uint32_t i;
	size_t j;

	for (j = 0; j < top4->sw[k].n; j++) {
		c = &top4->chg[top4->sw[k].v[j] >> 8];
		i = top4->sw[k].v[j] & 0xff;
		t = fc_top4_at(top4, c->idx);
		fc_top4_store8(&t->in24[i], (__u8)((t->in24[i] & ~FC_IN24_LEN) | (c->e.in24[i] & FC_IN24_LEN)));
	}
}

/* A word of fc_top4, in one store where the packet path reads it. */
#define FC_TOP4_STORE(p, v)                                   \
	do {                                                  \
		__atomic_store_n((p), (v), __ATOMIC_RELEASE); \
		fc_step(FC_MAP_NAME(top4));                   \
	} while (0)

/*
 * What the prefixes of /1 to /16 say of each /16 that changes, field by
 * field as the packet path reads them: what is added first (an expiry, the
 * flags of both, a policy where there was none), then what goes, so that
 * a source the entry bans, allows or limits before and after stays so.
 */
static void fc_top4_rules(struct fc_top4_sync *top4)
{
	struct fc_rule *t;
	const struct fc_rule *e;
	size_t c;

	for (c = 0; c < top4->nchg; c++) {
		t = &fc_top4_at(top4, top4->chg[c].idx)->rule;
		e = &top4->chg[c].e.rule;
		if (!memcmp(t, e, sizeof(*t)))
			continue;
		if ((e->flags & FC_RULE_BANNED) && t->ban_expires_ns != e->ban_expires_ns)
			FC_TOP4_STORE(&t->ban_expires_ns, e->ban_expires_ns);
		if ((e->flags & FC_RULE_ALLOWED) && t->allow_expires_ns != e->allow_expires_ns)
			FC_TOP4_STORE(&t->allow_expires_ns, e->allow_expires_ns);
		if (e->flags & ~t->flags & (FC_RULE_BANNED | FC_RULE_ALLOWED))
			FC_TOP4_STORE(&t->flags, t->flags | (e->flags & (FC_RULE_BANNED | FC_RULE_ALLOWED)));
		if (e->policy && t->policy != e->policy)
			FC_TOP4_STORE(&t->policy, e->policy);
		if (t->flags != e->flags)
			FC_TOP4_STORE(&t->flags, e->flags);
		if (t->policy != e->policy)
			FC_TOP4_STORE(&t->policy, e->policy);
		if (t->ban_expires_ns != e->ban_expires_ns)
			FC_TOP4_STORE(&t->ban_expires_ns, e->ban_expires_ns);
		if (t->allow_expires_ns != e->allow_expires_ns)
			FC_TOP4_STORE(&t->allow_expires_ns, e->allow_expires_ns);
	}
}

/* Last, once the prefixes that went are gone: the bits of longer prefixes
 * where none is left; whole, the FC_IN24_EXACT bits where no address is
 * left. Then, unless whole, the count of entries in use. */
static int fc_top4_tighten(const struct fc_maps *m, struct fc_top4_sync *top4, struct fc_err *err)
{
	const struct fc_top4 *e;
	struct fc_top4 *t;
	uint32_t i, keep;
	uint32_t w, lo = FC_TOP4_SLOTS, hi = 0;
	size_t c;

	if (fc_top4_view_chg(m, top4, err) < 0)
		return -1;
	for (c = 0; c < top4->nchg; c++) {
		e = &top4->chg[c].e;
		t = fc_top4_at(top4, top4->chg[c].idx);
		for (i = 0; i < 256; i++) {
			keep = top4->whole ? e->in24[i] : (e->in24[i] & ~FC_IN24_EXACT) | (t->in24[i] & FC_IN24_EXACT);
			if (t->in24[i] != keep)
				fc_top4_store8(&t->in24[i], (__u8)keep);
		}
		if (t->longer != e->longer)
			fc_top4_store8(&t->longer, e->longer);
	}
	if (top4->whole)
		return 0;
	for (w = 0; w < FC_TOP4_SLOTS / 64; w++) {
		if (!top4->touched[w])
			continue;
		lo = lo < FC_TOP4_SLOTS ? lo : w * 64 + (uint32_t)__builtin_ctzll(top4->touched[w]);
		hi = w * 64 + 63 - (uint32_t)__builtin_clzll(top4->touched[w]);
	}
	if (lo < FC_TOP4_SLOTS && fc_top4_view(m, top4, lo, hi, err) < 0)
		return -1;
	fc_top4_recount(top4);
	return 0;
}

static void fc_top4_free(struct fc_top4_sync *top4)
{
	size_t k;

	fc_top4_unview(top4);
	free(top4->pfx.v);
	free(top4->chg);
	for (k = 0; k <= FC_IN24_LEN_MAX; k++)
		free(top4->sw[k].v);
}

/* The map (of ms[FC_MS_ALL]) that holds p's kind. */
static struct fc_map_sync *fc_map_of(struct fc_map_sync *ms, const struct fc_prefix *p)
{
	return &ms[(fc_prefix_is_exact(p) ? FC_MS_EXACT4 : FC_MS_PFX4) + (p->family == 6)];
}

/* p's key in its map. */
static void fc_kv_key(const struct fc_map_sync *ms, const struct fc_prefix *p, struct fc_kv *kv)
{
	if (!ms->prefixes)
		memcpy(kv->key, p->a, ms->keysz);
	else if (p->family == 4)
		fc_prefix_to_pfx4(p, (struct fc_pfx4_key *)kv->key);
	else
		fc_prefix_to_pfx6(p, (struct fc_pfx6_key *)kv->key);
}

/* Adds a ban or a policy (r) on p to the map that holds its kind. */
static int fc_want_add(struct fc_map_sync *ms, const struct fc_prefix *p, struct fc_rule r, struct fc_err *err)
{
	struct fc_map_sync *dst = fc_map_of(ms, p);
	struct fc_kv *kv = fc_kvs_push(&dst->want);

	if (!kv)
		return fc_err_set(err, "out of memory publishing map %s", dst->name);
	fc_kv_key(dst, p, kv);
	kv->val = r;
	return 0;
}

/* An allow entry on an address or a prefix, for the exact entries it covers. */
struct fc_allow_pfx {
	uint8_t a[16]; /* masked */
	uint32_t len;
	uint64_t expires_ns;
};

/* The live allow entries (rows), and those on addresses of each family
 * (v4, v6) sorted for fc_allow_fold: each length in use is one binary
 * search, none when nothing of the family is allowed. */
struct fc_allows {
	struct fc_allow_row *rows;
	size_t nrows;
	struct fc_allow_fam {
		struct fc_allow_pfx *v;
		size_t n;
		uint32_t lens[129], nlens;
	} fam[2];
};

static int fc_allow_pfx_cmp(const void *x, const void *y)
{
	const struct fc_allow_pfx *a = x, *b = y;

	if (a->len != b->len)
		return (a->len > b->len) - (a->len < b->len);
	return memcmp(a->a, b->a, sizeof(a->a));
}

static void fc_allows_free(struct fc_allows *al)
{
	free(al->rows);
	free(al->fam[0].v);
	free(al->fam[1].v);
	memset(al, 0, sizeof(*al));
}

/* Reads the live allow entries into al. */
static int fc_allows_read(struct fc_store *st, int64_t now, struct fc_allows *al, struct fc_err *err)
{
	bool used[2][129] = { { false } };
	size_t i;
	int f;

	memset(al, 0, sizeof(*al));
	if (fc_store_allow_list(st, now, &al->rows, &al->nrows, err) < 0)
		return -1;
	for (f = 0; f < 2; f++) {
		al->fam[f].v = calloc(al->nrows ? al->nrows : 1, sizeof(*al->fam[f].v));
		if (!al->fam[f].v)
			return fc_err_set(err, "out of memory reading allow entries");
	}
	for (i = 0; i < al->nrows; i++) {
		const struct fc_prefix *p = &al->rows[i].p;
		struct fc_allow_fam *fa;

		if (!p->family)
			continue; /* a uid: nginx's alone */
		fa = &al->fam[p->family == 6];
		memcpy(fa->v[fa->n].a, p->a, sizeof(p->a));
		fa->v[fa->n].len = p->len;
		fa->v[fa->n].expires_ns = fc_expiry_ns(al->rows[i].expires);
		if (!used[p->family == 6][p->len]) {
			used[p->family == 6][p->len] = true;
			fa->lens[fa->nlens++] = p->len;
		}
		fa->n++;
	}
	for (f = 0; f < 2; f++)
		qsort(al->fam[f].v, al->fam[f].n, sizeof(*al->fam[f].v), fc_allow_pfx_cmp);
	return 0;
}

/* Folds into r the allow entries covering the address a (bytes long);
 * true if one is on a itself (an entry of its own). */
static bool fc_allow_fold(const struct fc_allow_fam *fa, const uint8_t *a, size_t bytes, struct fc_rule *r)
{
	struct fc_allow_pfx key, *hit;
	bool own = false;
	uint32_t l;

	for (l = 0; fa->n && l < fa->nlens; l++) {
		memset(&key, 0, sizeof(key));
		memcpy(key.a, a, bytes);
		fc_prefix_mask(key.a, (unsigned)bytes, fa->lens[l]);
		key.len = fa->lens[l];
		hit = bsearch(&key, fa->v, fa->n, sizeof(*fa->v), fc_allow_pfx_cmp);
		if (hit)
			fc_rule_add_allow(r, hit->expires_ns);
		own |= hit && key.len == bytes * 8;
	}
	return own;
}

/* An allow entry's rule, as fc_want_add takes it. */
static struct fc_rule fc_rule_of_allow(const struct fc_allow_row *a)
{
	struct fc_rule r = { 0 };

	fc_rule_add_allow(&r, fc_expiry_ns(a->expires));
	return r;
}

/*
 * An exact entry (a ban, a policy) inside an allowed prefix is allowed too:
 * the exact lookup's answer is the whole answer for a source it finds.
 */
static void fc_want_allow_exact(struct fc_map_sync *ms, const struct fc_allows *al)
{
	size_t i;

	for (i = 0; i < ms->want.n; i++)
		fc_allow_fold(&al->fam[ms->family == 6], ms->want.v[i].key, ms->keysz, &ms->want.v[i].val);
}

/* What the policy arrays should hold and hold now, slot by slot. */
struct fc_policy_sync {
	struct fc_policy *want, *have;
	int ncpus;
	size_t changed;
};

static int fc_policies_read(const struct fc_maps *m, struct fc_policy *have, struct fc_err *err)
{
	LIBBPF_OPTS(bpf_map_batch_opts, opts);
	static __u32 keys[FC_POLICY_SLOTS];
	__u32 out = 0, cnt = FC_POLICY_SLOTS;

	if (!bpf_map_lookup_batch(m->policies, NULL, &out, keys, have, &cnt, &opts) || errno == ENOENT)
		return 0;
	return fc_err_set(err, "map %s: batch lookup: %s", FC_MAP_NAME(policies), strerror(errno));
}

/* FNV-1a over the occupied slots and what they hold, in the store's order
 * of the policies (pols), which is stable; of what the store makes of them,
 * their generations aside (fc_policy_enforced carries those from the maps,
 * which an unchanged digest spares reading). */
static __u64 fc_policies_digest(const struct fc_policy *want, const struct fc_policy_row *pols, size_t npols)
{
	__u64 h = 0xcbf29ce484222325ull;
	const unsigned char *p;
	struct fc_policy one;
	size_t i, j;

	for (i = 0; i < npols; i++) {
		if (fc_policy_is_l7(&pols[i].spec))
			continue;
		one = want[pols[i].slot];
		one.lim.gen = 0;
		memset(one.lim.rescale, 0, sizeof(one.lim.rescale));
		h = (h ^ pols[i].slot) * 0x100000001b3ull;
		for (p = (const unsigned char *)&one, j = 0; j < sizeof(one); j++)
			h = (h ^ p[j]) * 0x100000001b3ull;
	}
	return h | 1; /* never 0, which means "not known" */
}

/* The policies wanted, each with the generation of its limits carried
 * from what the maps hold (have: read), or moved on where its rates
 * changed (fc_policy_enforced). */
static void fc_want_carry(const struct fc_source *src, struct fc_policy_sync *ps)
{
	struct fc_enforced pub, e;
	size_t i;

	for (i = 0; i < src->npols; i++) {
		const struct fc_policy_row *r = &src->pols[i];

		if (fc_policy_is_l7(&r->spec))
			continue;
		memset(&pub, 0, sizeof(pub));
		pub.k = ps->have[r->slot];
		fc_policy_enforced(r, &src->node, &pub, &e);
		ps->want[r->slot] = e.k;
	}
}

/* Zeroes a slot's bucket, and its counters when the slot changes hands. */
static int fc_slot_reset(const struct fc_maps *m, struct fc_policy_sync *ps, __u32 slot, bool counters,
			 struct fc_err *err)
{
	struct fc_bucket zero = {};
	struct fc_pstats *pz;
	int rc;

	if (bpf_map_update_elem(m->buckets, &slot, &zero, BPF_ANY))
		return fc_err_set(err, "map %s: slot %u: %s", FC_MAP_NAME(buckets), slot, strerror(errno));
	fc_step(FC_MAP_NAME(buckets));
	if (!counters)
		return 0;
	pz = calloc((size_t)ps->ncpus, sizeof(*pz));
	if (!pz)
		return fc_err_set(err, "out of memory");
	rc = bpf_map_update_elem(m->pstats, &slot, pz, BPF_ANY);
	free(pz);
	if (rc)
		return fc_err_set(err, "map %s: slot %u: %s", FC_MAP_NAME(pstats), slot, strerror(errno));
	return 0;
}

/* Writes slot's policy w over h if they differ: a new policy (or a new
 * epoch) starts with a fresh bucket, a new id with fresh counters too.
 * Returns 1 if it wrote, 0 if not, -1 on failure. */
static int fc_slot_write(const struct fc_maps *m, struct fc_policy_sync *ps, __u32 slot, const struct fc_policy *w,
			 const struct fc_policy *h, struct fc_err *err)
{
	if (!memcmp(w, h, sizeof(*w)))
		return 0;
	if (w->id && (w->id != h->id || w->epoch != h->epoch) && fc_slot_reset(m, ps, slot, w->id != h->id, err) < 0)
		return -1;
	if (bpf_map_update_elem(m->policies, &slot, w, BPF_ANY))
		return fc_err_set(err, "map %s: slot %u: %s", FC_MAP_NAME(policies), slot, strerror(errno));
	fc_step(FC_MAP_NAME(policies));
	ps->changed++;
	return 1;
}

/* Writes the slots that differ: occupied ones (live) before the rules point
 * at them, freed ones after the rules stopped pointing at them. */
static int fc_policies_apply(const struct fc_maps *m, struct fc_policy_sync *ps, bool live, struct fc_err *err)
{
	__u32 slot;

	for (slot = 1; slot < FC_POLICY_SLOTS; slot++)
		if ((ps->want[slot].id != 0) == live && fc_slot_write(m, ps, slot, &ps->want[slot], &ps->have[slot], err) < 0)
			return -1;
	return 0;
}

/* The rule maps, to diff or to change. */
static void fc_rule_maps(struct fc_map_sync ms[FC_MS_ALL], const struct fc_maps *m)
{
	const struct fc_map_sync init[FC_MS_ALL] = {
		[FC_MS_EXACT4] = { FC_MAP_NAME(exact4), m->exact4, sizeof(struct fc_addr4), 4, false, FC_MAX_RULES,
				   sizeof(struct fc_rule) },
		[FC_MS_EXACT6] = { FC_MAP_NAME(exact6), m->exact6, sizeof(struct fc_addr6), 6, false, FC_MAX_RULES,
				   sizeof(struct fc_rule) },
		[FC_MS_PFX4] = { FC_MAP_NAME(pfx4), m->pfx4, sizeof(struct fc_pfx4_key), 4, true, FC_MAX_RULES,
				 sizeof(struct fc_rule) },
		[FC_MS_PFX6] = { FC_MAP_NAME(pfx6), m->pfx6, sizeof(struct fc_pfx6_key), 6, true, FC_MAX_RULES,
				 sizeof(struct fc_rule) },
		[FC_MS_TOP6] = { FC_MAP_NAME(top6), m->top6, sizeof(struct fc_top6_key), 6, false, FC_MAX_RULES,
				 sizeof(struct fc_top6) },
	};
	size_t i;

	memcpy(ms, init, sizeof(init));
	for (i = 0; i < FC_MS_ALL; i++)
		ms[i].ins = &ms[FC_MS_TOP6].carried;
}

static void fc_rule_maps_free(struct fc_map_sync ms[FC_MS_ALL])
{
	size_t i;

	for (i = 0; i < FC_MS_ALL; i++) {
		free(ms[i].want.v);
		free(ms[i].have.v);
		free(ms[i].put.v);
		free(ms[i].del.v);
		free(ms[i].fin.v);
		free(ms[i].carry.v);
		free(ms[i].relax.v);
	}
	free(ms[FC_MS_TOP6].carried.v);
}

/* Zeroes the drop counters of set id (0: by hand). */
static int fc_setstats_zero(const struct fc_maps *m, __u32 id, int ncpus, struct fc_err *err)
{
	struct fc_counter *zero = calloc((size_t)ncpus, sizeof(*zero));
	int rc = 0;

	if (!zero)
		return fc_err_set(err, "out of memory");
	if (bpf_map_update_elem(m->setstats, &id, zero, BPF_ANY))
		rc = fc_err_set(err, "map %s: set %u: %s", FC_MAP_NAME(setstats), id, strerror(errno));
	free(zero);
	return rc;
}

/* The counters of sets that are no more start afresh, should their id be
 * given again (a publish that saw the set go does so at once). */
static int fc_setstats_sweep(struct fc_store *st, const struct fc_maps *m, int64_t now, int ncpus, struct fc_err *err)
{
	LIBBPF_OPTS(bpf_map_batch_opts, opts);
	static __u32 keys[FC_MAX_SETS + 1];
	bool live[FC_MAX_SETS + 1] = { true };
	__u32 out = 0, cnt = FC_MAX_SETS + 1, id;
	struct fc_counter *vals = NULL;
	struct fc_ban_set *sets = NULL;
	size_t nsets = 0, i;
	int rc = -1, c;

	if (fc_store_set_list(st, now, &sets, &nsets, err) < 0)
		return -1;
	for (i = 0; i < nsets; i++)
		live[sets[i].id] = true;
	vals = calloc((size_t)(FC_MAX_SETS + 1) * (size_t)ncpus, sizeof(*vals));
	if (!vals) {
		fc_err_set(err, "out of memory");
		goto out;
	}
	if (bpf_map_lookup_batch(m->setstats, NULL, &out, keys, vals, &cnt, &opts) && errno != ENOENT) {
		fc_err_set(err, "map %s: batch lookup: %s", FC_MAP_NAME(setstats), strerror(errno));
		goto out;
	}
	for (i = 0; i < cnt; i++) {
		id = keys[i];
		if (id > FC_MAX_SETS || live[id])
			continue;
		for (c = 0; c < ncpus && !vals[i * (size_t)ncpus + (size_t)c].packets; c++)
			;
		if (c < ncpus && fc_setstats_zero(m, id, ncpus, err) < 0)
			goto out;
	}
	rc = 0;
out:
	free(vals);
	free(sets);
	return rc;
}

/* cfg's fields of the ip=* policy row, e as this node enforces it (NULL:
 * there is none at XDP/TC). */
static void fc_star_fill(struct fc_config *cfg, const struct fc_policy_row *r, const struct fc_enforced *e)
{
	cfg->star_slot = r ? r->slot : 0;
	cfg->star_gen = r ? r->epoch : 0;
	cfg->star_syn = r && r->spec.count == FC_COUNT_SYN;
	cfg->star_host4 = r ? (__u8)(32 - e->star_len4) : 0;
	cfg->star_host6 = r ? (__u8)(128 - e->star_len6) : 0;
	if (r)
		cfg->new_src = e->new_src;
	else
		memset(&cfg->new_src, 0, sizeof(cfg->new_src));
}

/* Whether no IPv6 rule tells the addresses of an ip=* unit apart (cfg as
 * it is about to be written): no exact entry, no prefix longer than the
 * unit. */
static __u8 fc_star_flags(const struct fc_config *cfg)
{
	__u32 len = 128 - cfg->star_host6, l;

	if (cfg->n_exact6)
		return 0;
	for (l = len + 1; l < 128; l++)
		if (cfg->lens6[l / 64] & (1ULL << (l % 64)))
			return 0;
	return FC_STAR_PLAIN6;
}

/* What the maps should hold, from the store: the rule maps' entries (ms,
 * unmerged), the policy slots (ps->want) and the ip=* policy's fields and
 * the count of policies in cfg. */
static int fc_want_collect(struct fc_source *src, struct fc_map_sync *ms, struct fc_policy_sync *ps,
			   const struct fc_allows *al, struct fc_config *cfg, struct fc_err *err)
{
	struct fc_ban_row *bans = NULL;
	struct fc_enforced e;
	size_t nbans = 0, i;
	int rc = -1;

	if (fc_store_ban_list(src->st, src->now, &bans, &nbans, err) < 0 || fc_source_policies(src, err) < 0)
		goto out;
	for (i = 0; i < nbans; i++)
		if (fc_want_add(ms, &bans[i].p, fc_rule_of_ban(&bans[i]), err) < 0)
			goto out;
	/* Allow entries on uids are nginx's alone. */
	for (i = 0; i < al->nrows; i++)
		if (al->rows[i].p.family && fc_want_add(ms, &al->rows[i].p, fc_rule_of_allow(&al->rows[i]), err) < 0)
			goto out;
	for (i = 0; i < src->npols; i++) {
		const struct fc_policy_row *r = &src->pols[i];

		if (fc_policy_is_l7(&r->spec))
			continue; /* nginx's, through the shm */
		fc_policy_enforced(r, &src->node, NULL, &e); /* generations: fc_want_carry */
		ps->want[r->slot] = e.k;
		cfg->n_policies++;
		if (r->spec.kind == FC_MATCH_STAR)
			fc_star_fill(cfg, r, &e);
		else if (fc_want_add(ms, &r->spec.ip, (struct fc_rule){ .policy = r->slot }, err) < 0)
			goto out;
	}
	rc = 0;
out:
	free(bans);
	return rc;
}

/*
 * The prefix answers the entries of ex (fc_exact4's, n, in address order)
 * carry (fc_rule_carry), from pfx: IPv4 prefixes, folded, in address order,
 * among them every prefix covering an address of ex. Both walked once, the
 * prefixes covering the current address on a stack (each longer than the
 * one under it: at most /0 to /31), as fc_want_inherit does.
 */
static void fc_carry_sweep(struct fc_kv *ex, size_t n, const struct fc_kvs *pfx)
{
	size_t stack[33], depth = 0, i = 0, j;
	const uint8_t *a, *t;
	uint32_t la, lt;

	for (j = 0; j < n; j++) {
		for (; i < pfx->n && memcmp((a = fc_kv_addr(&pfx->v[i], &la)), ex[j].key, 4) <= 0; i++) {
			while (depth && (t = fc_kv_addr(&pfx->v[stack[depth - 1]], &lt)) &&
			       !fc_prefix_covers_bits(t, lt, a, la))
				depth--;
			if (depth < sizeof(stack) / sizeof(stack[0]))
				stack[depth++] = i;
		}
		while (depth && (t = fc_kv_addr(&pfx->v[stack[depth - 1]], &lt)) &&
		       !fc_prefix_covers_bits(t, lt, ex[j].key, 32))
			depth--;
		fc_rule_carry(&ex[j].val, depth ? &pfx->v[stack[depth - 1]].val : NULL);
	}
}

/* Makes each rule map's want what the map should hold: entries of one key
 * merged, prefixes carrying what covers them, exact entries the allow
 * entries over them and (IPv4) their prefix answer; fc_top6's made. Refuses
 * more than a map holds. */
static int fc_want_finish(struct fc_map_sync *ms, const struct fc_allows *al, struct fc_top4_sync *top4,
			  struct fc_err *err)
{
	size_t i;

	for (i = 0; i < FC_MS_COUNT; i++) {
		fc_want_merge(&ms[i]);
		if (ms[i].prefixes && fc_want_prefixes(&ms[i], top4, err) < 0)
			return -1;
		if (!ms[i].prefixes)
			fc_want_allow_exact(&ms[i], al);
		if (ms[i].want.n > FC_MAX_RULES)
			return fc_err_set(err, "map %s: %zu entries%s exceed its capacity of %d", ms[i].name,
					  ms[i].want.n, ms[i].marks ? " (prefixes and their search markers)" : "",
					  FC_MAX_RULES);
	}
	/* top4->pfx: every IPv4 prefix, folded, in address order. */
	fc_carry_sweep(ms[FC_MS_EXACT4].want.v, ms[FC_MS_EXACT4].want.n, &top4->pfx);
	return fc_want_top6(ms, err);
}

/* ---- the order of the writes ---- */

/*
 * Makes the entry kv->key of ms hold kv->val (want) or nothing (!want),
 * counting what it did, the search markers of fc_pfx6 too. An exact
 * address's entry that changes holds the union of both first
 * (fc_rule_union), the new value going on ms->fin when it is not that. What
 * a delta mostly does, add a new key or take one out, is one syscall (~30
 * us here), which also tells whether the key was there and what it held.
 */
static int fc_entry_put(struct fc_map_sync *ms, const struct fc_kv *kv, bool want, struct fc_sync_result *res,
			struct fc_err *err)
{
	const char *op = want ? "update" : "delete";
	struct fc_top6 have, val, to; /* of ms->valsz bytes: .rule alone, but for fc_top6 */
	bool had;

	fc_kv_value(ms, kv, &to);
	val = to;
	/* A new exact entry carries its prefix answer from its own value on. */
	if (fc_ms_exact(ms))
		val.rule = fc_rule_uncarried(&to.rule);
	if (want) {
		had = bpf_map_update_elem(ms->fd, kv->key, &val, BPF_NOEXIST) != 0;
		if (had && errno != EEXIST)
			goto fail;
		if (had) {
			op = "lookup";
			if (bpf_map_lookup_elem(ms->fd, kv->key, &have))
				goto fail;
			if (!memcmp(&have, &to, ms->valsz))
				return 0;
			if (fc_ms_exact(ms))
				val.rule = fc_rule_union(&have.rule, &kv->val);
			op = "update";
			if (bpf_map_update_elem(ms->fd, kv->key, &val, BPF_EXIST))
				goto fail;
		}
		if (memcmp(&val, &to, ms->valsz) && fc_kvs_append(fc_fin_of(ms, &val.rule, &to.rule), kv, 1) < 0)
			return fc_err_set(err, "out of memory publishing map %s", ms->name);
	} else {
		had = !bpf_map_lookup_and_delete_elem(ms->fd, kv->key, &have);
		if (!had && errno != ENOENT)
			goto fail;
		if (!had)
			return 0;
	}
	fc_step(ms->name);
	ms->dmarks += (want && (kv->val.flags & FC_RULE_MARKER)) - (had && (have.rule.flags & FC_RULE_MARKER));
	if (want && had)
		res->changed++;
	else
		ms->count += want ? 1 : -1;
	res->added += want && !had;
	res->removed += !want && had;
	return 0;
fail:
	return fc_err_set(err, "map %s: %s: %s", ms->name, op, errno == E2BIG ? "map full" : strerror(errno));
}

/* fc_entry_put for a prefix entry, which for fc_pfx6's root length puts its
 * copy in fc_top6 after it (counted apart, res->copied). */
static int fc_prefix_put(struct fc_map_sync *all, struct fc_map_sync *ms, const struct fc_kv *kv, bool want,
			 struct fc_sync_result *res, struct fc_err *err)
{
	struct fc_sync_result copies = { 0 };
	struct fc_kv top;
	uint32_t len;

	if (fc_entry_put(ms, kv, want, res, err) < 0)
		return -1;
	fc_kv_addr(kv, &len);
	if (ms != &all[FC_MS_PFX6] || len != FC_PFX6_ROOT)
		return 0;
	fc_kv_top6(kv, &top);
	if (fc_entry_put(&all[FC_MS_TOP6], &top, want, &copies, err) < 0)
		return -1;
	res->copied += fc_sync_wrote(&copies);
	return 0;
}

/* Widens the search guides of the entry kv->key of ms, if it has one, to
 * serve kv->val too (fc_rule_widen). */
static int fc_entry_widen(struct fc_map_sync *ms, const struct fc_kv *kv, struct fc_err *err)
{
	struct fc_top6 have, wide; /* .rule alone, but for fc_top6 */

	if (bpf_map_lookup_elem(ms->fd, kv->key, &have))
		return errno == ENOENT ? 0 : fc_err_set(err, "map %s: lookup: %s", ms->name, strerror(errno));
	wide = have;
	if (!fc_rule_widen(&have.rule, &kv->val, &wide.rule))
		return 0;
	if (bpf_map_update_elem(ms->fd, kv->key, &wide, BPF_EXIST))
		return fc_err_set(err, "map %s: update: %s", ms->name, strerror(errno));
	fc_step(ms->name);
	return 0;
}

/* A publish's writes to the rule maps and fc_top4 (fc_order_write). */
struct fc_order {
	const struct fc_maps *m;
	struct fc_map_sync *ms; /* FC_MS_ALL */
	struct fc_top4_sync *top4;
	/* Publishing what changed: the lists say what the changed keys' entries
	 * should be, each compared with the map as it is written; else they are
	 * the difference, written in batches. */
	bool delta;
	struct fc_store *st; /* delta: asked which /24s still hold an address */
	int64_t now;
	struct fc_sync_result *res;
};

/* The prefix length of an entry of a prefix map (fc_top6's: the tree's root). */
static uint32_t fc_kv_len(const struct fc_map_sync *ms, const struct fc_kv *kv)
{
	uint32_t len = FC_PFX6_ROOT;

	if (ms->prefixes)
		fc_kv_addr(kv, &len);
	return len;
}

static int fc_kv_len_cmp(const void *a, const void *b, void *ms)
{
	uint32_t la = fc_kv_len(ms, a), lb = fc_kv_len(ms, b);

	return la != lb ? (la > lb) - (la < lb) : fc_kv_cmp(a, b, &((struct fc_map_sync *)ms)->keysz);
}

/* Puts s in order of length, unless it is: in key order it is, where the
 * length, the key's first word, is little-endian. */
static void fc_kvs_by_len(struct fc_map_sync *ms, struct fc_kvs *s)
{
	size_t i;

	for (i = 1; i < s->n && fc_kv_len(ms, &s->v[i - 1]) <= fc_kv_len(ms, &s->v[i]); i++)
		;
	if (i < s->n)
		fc_kvs_sort(s, fc_kv_len_cmp, ms);
}

/* Writes (update) or deletes the entries [from, to) of s in ms: in batches,
 * or publishing what changed, one by one, each against what the map holds. */
static int fc_order_apply(struct fc_order *o, struct fc_map_sync *ms, const struct fc_kvs *s, size_t from, size_t to,
			  bool update, struct fc_err *err)
{
	size_t i;

	if (from == to) /* s->v may be NULL: no offset from it */
		return 0;
	if (!o->delta)
		return fc_map_apply(ms, s->v + from, to - from, update, err);
	for (i = from; i < to; i++)
		if (fc_prefix_put(o->ms, ms, &s->v[i], update, o->res, err) < 0)
			return -1;
	return 0;
}

/* The first entry of s (in order of length, ascending) of length len or longer. */
static size_t fc_len_bound(const struct fc_map_sync *ms, const struct fc_kvs *s, uint32_t len)
{
	size_t lo = 0, hi = s->n, mid;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (fc_kv_len(ms, &s->v[mid]) < len)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/*
 * An IPv6 entry written while entries that go are still there jumps to no
 * length (FC_RULE_NEXT): one that goes may lie there, on the way to what
 * the search must go on to (say, a marker of a prefix that goes, over an
 * allow entry inside it). It walks instead, and takes its own value on
 * fin once they are gone (fc_order_guides).
 */
static int fc_order_unjump(struct fc_map_sync *ms, struct fc_map_sync *top6, bool copies, struct fc_err *err)
{
	struct fc_kv top;
	size_t i;

	for (i = 0; i < ms->put.n; i++) {
		if (!FC_RULE_NEXT(ms->put.v[i].val.flags))
			continue;
		if (fc_kvs_append(&ms->fin, &ms->put.v[i], 1) < 0)
			return fc_err_set(err, "out of memory publishing map %s", ms->name);
		if (copies && fc_kv_len(ms, &ms->put.v[i]) == FC_PFX6_ROOT) {
			fc_kv_top6(&ms->put.v[i], &top);
			if (fc_kvs_append(&top6->fin, &top, 1) < 0)
				return fc_err_set(err, "out of memory publishing map %s", top6->name);
		}
		ms->put.v[i].val.flags &= ~FC_RULE_NEXT_MASK;
	}
	return 0;
}

/* Last of the prefixes: their jumps (fc_order_unjump), the rest gone. */
static int fc_order_guides(struct fc_order *o, struct fc_err *err)
{
	struct fc_map_sync *pfx6 = &o->ms[FC_MS_PFX6], *top6 = &o->ms[FC_MS_TOP6];

	if (fc_map_apply(pfx6, pfx6->fin.v, pfx6->fin.n, true, err) < 0)
		return -1;
	return fc_map_apply(top6, top6->fin.v, top6->fin.n, true, err);
}

/*
 * The entries of list s of prefix map k (its put or its del), a batch per
 * length: written (update) longest first, deleted shortest first; with
 * fc_pfx6's /32s their fc_top6 copies (top6s, publishing everything); as
 * fc_pfx4's /24 to /17 are written, the /24s that point at one of that
 * length from now on.
 */
static int fc_order_lengths(struct fc_order *o, int k, struct fc_kvs *s, struct fc_kvs *top6s, bool update,
			    struct fc_err *err)
{
	struct fc_map_sync *ms = &o->ms[k];
	uint32_t max = ms->family == 4 ? 32 : 128, step, len;

	fc_kvs_by_len(ms, s);
	for (step = 0; step <= max; step++) {
		len = update ? max - step : step;
		if (fc_order_apply(o, ms, s, fc_len_bound(ms, s, len), fc_len_bound(ms, s, len + 1), update, err) < 0)
			return -1;
		if (k == FC_MS_PFX6 && len == FC_PFX6_ROOT && !o->delta &&
		    fc_map_apply(&o->ms[FC_MS_TOP6], top6s->v, top6s->n, update, err) < 0)
			return -1;
		if (update && k == FC_MS_PFX4 && len > FC_TOP4_SHIFT && len <= 24)
			fc_top4_switch(o->top4, len - FC_TOP4_SHIFT);
	}
	return 0;
}

/* The prefixes written, longest first (fc_order_lengths), then what the
 * prefixes of /1 to /16 say of their /16s, and the /24s that point at a
 * shorter prefix or none. */
static int fc_order_prefixes(struct fc_order *o, struct fc_err *err)
{
	struct fc_map_sync *pfx6 = &o->ms[FC_MS_PFX6], *top6 = &o->ms[FC_MS_TOP6];

	if ((pfx6->del.n || top6->del.n) &&
	    (fc_order_unjump(pfx6, top6, o->delta, err) < 0 || fc_order_unjump(top6, NULL, false, err) < 0))
		return -1;
	if (fc_order_lengths(o, FC_MS_PFX6, &pfx6->put, &top6->put, true, err) < 0 ||
	    fc_order_lengths(o, FC_MS_PFX4, &o->ms[FC_MS_PFX4].put, NULL, true, err) < 0)
		return -1;
	fc_top4_rules(o->top4);
	fc_top4_switch(o->top4, 0);
	return 0;
}

/* First: the search guides of fc_pfx6's and fc_top6's entries that change,
 * widened (fc_rule_widen), before anything they guide to changes. */
static int fc_order_widen(struct fc_order *o, struct fc_err *err)
{
	struct fc_map_sync *pfx6 = &o->ms[FC_MS_PFX6], *top6 = &o->ms[FC_MS_TOP6];
	struct fc_kv top;
	size_t i;

	if (!o->delta) {
		if (fc_map_apply(pfx6, pfx6->relax.v, pfx6->relax.n, true, err) < 0)
			return -1;
		return fc_map_apply(top6, top6->relax.v, top6->relax.n, true, err);
	}
	for (i = 0; i < pfx6->put.n; i++) {
		if (fc_entry_widen(pfx6, &pfx6->put.v[i], err) < 0)
			return -1;
		if (fc_kv_len(pfx6, &pfx6->put.v[i]) != FC_PFX6_ROOT)
			continue;
		fc_kv_top6(&pfx6->put.v[i], &top);
		if (fc_entry_widen(top6, &top, err) < 0)
			return -1;
	}
	return 0;
}

/* The exact addresses of map k that are written, each holding the union of
 * what it held and will hold (fc_rule_union); an IPv4 address's /24 bit
 * set before it. */
static int fc_order_exact(struct fc_order *o, int k, struct fc_err *err)
{
	struct fc_map_sync *ms = &o->ms[k];
	size_t i;

	if (!o->delta) {
		if (k == FC_MS_EXACT4 && fc_top4_exact_all(o->m, o->top4, &ms->want, err) < 0)
			return -1;
		return fc_map_apply(ms, ms->put.v, ms->put.n, true, err);
	}
	for (i = 0; i < ms->put.n; i++)
		if ((k == FC_MS_EXACT4 && fc_top4_exact(o->m, o->top4, ms->put.v[i].key, true, err) < 0) ||
		    fc_entry_put(ms, &ms->put.v[i], true, o->res, err) < 0)
			return -1;
	return 0;
}

/* Last: the exact addresses of map k written as a union take their own
 * value, then those that go are deleted; an IPv4 /24's bit is cleared
 * once no address is left in it. */
static int fc_order_exact_last(struct fc_order *o, int k, struct fc_err *err)
{
	struct fc_map_sync *ms = &o->ms[k];
	struct fc_gone24 gone = { 0 };
	size_t i;
	int rc = -1;

	if (fc_map_apply(ms, ms->fin.v, ms->fin.n, true, err) < 0 ||
	    fc_map_apply(ms, ms->carry.v, ms->carry.n, true, err) < 0)
		return -1;
	if (!o->delta)
		return fc_map_apply(ms, ms->del.v, ms->del.n, false, err);
	for (i = 0; i < ms->del.n; i++)
		if (fc_entry_put(ms, &ms->del.v[i], false, o->res, err) < 0 ||
		    (k == FC_MS_EXACT4 && fc_gone24_push(&gone, ms->del.v[i].key, err) < 0))
			goto out;
	rc = k == FC_MS_EXACT4 ? fc_top4_exact_gone(o->st, o->m, o->top4, &gone, o->now, err) : 0;
out:
	free(gone.v);
	return rc;
}

/*
 * Waits until every packet that may have begun before now has been
 * decided: the programs run inside an RCU read-side section (softirq or
 * BPF_PROG_TEST_RUN), which membarrier's global command waits out
 * (synchronize_rcu, ~10 ms here). Where it is refused (nohz_full CPUs, a
 * seccomp filter), nothing is waited for.
 */
static void fc_order_settle(void)
{
	syscall(__NR_membarrier, MEMBARRIER_CMD_GLOBAL, 0, 0);
}

/* Whether the prefix maps or fc_top4 change (from step 3 of fc_order_write on). */
static bool fc_order_prefix_work(const struct fc_order *o)
{
	return o->ms[FC_MS_PFX4].put.n || o->ms[FC_MS_PFX6].put.n || o->ms[FC_MS_TOP6].put.n || o->top4->nchg ||
	       o->ms[FC_MS_PFX4].del.n || o->ms[FC_MS_PFX6].del.n || o->ms[FC_MS_TOP6].del.n;
}

/* Whether anything is taken away or narrowed (from step 4 on). */
static bool fc_order_narrows(const struct fc_order *o)
{
	size_t i;

	for (i = 0; i < FC_MS_ALL; i++)
		if (o->ms[i].del.n || o->ms[i].fin.n)
			return true;
	return o->top4->narrows;
}

/*
 * Writes a publish to the rule maps and fc_top4 in the order that never
 * uncovers a source covered before and after (doc/architecture.md,
 * Publishing order): (1) what the search structures point at grows first
 * (fc_top4's bits of longer prefixes, fc_pfx6's guides); (2) exact
 * addresses as unions; (3) prefixes longest first, each /24's pointer
 * moved once what it points at is there; (4) what goes, shortest first;
 * (5) exact addresses' own values and deletions; (6) the bits of what is
 * gone. A packet's lookups take tens of ns, a publish's writes a few us
 * each; so that a packet held between its lookups (an interrupt, a
 * hypervisor's pause) never meets one state in one and a far one in the
 * next, a publish that both adds and takes away waits for the packets in
 * flight after (2), if (1) or (2) wrote, and before (4).
 */
static int fc_order_write(struct fc_order *o, struct fc_err *err)
{
	uint64_t start = fc_step_count();

	if (fc_top4_relax(o->m, o->top4, err) < 0 || fc_order_widen(o, err) < 0 ||
	    fc_order_exact(o, FC_MS_EXACT4, err) < 0 || fc_order_exact(o, FC_MS_EXACT6, err) < 0)
		return -1;
	if (fc_step_count() != start && (fc_order_prefix_work(o) || fc_order_narrows(o)))
		fc_order_settle();
	if (fc_top4_view_chg(o->m, o->top4, err) < 0 || fc_order_prefixes(o, err) < 0)
		return -1;
	if (fc_step_count() != start && fc_order_narrows(o))
		fc_order_settle();
	if (fc_order_lengths(o, FC_MS_PFX4, &o->ms[FC_MS_PFX4].del, NULL, false, err) < 0 ||
	    fc_order_lengths(o, FC_MS_PFX6, &o->ms[FC_MS_PFX6].del, &o->ms[FC_MS_TOP6].del, false, err) < 0 ||
	    fc_order_guides(o, err) < 0 || fc_order_exact_last(o, FC_MS_EXACT4, err) < 0 ||
	    fc_order_exact_last(o, FC_MS_EXACT6, err) < 0)
		return -1;
	return fc_top4_tighten(o->m, o->top4, err);
}

/*
 * The config while a publish writes, from cfg, which the maps hold: its
 * marks cleared (a publish cut short is never trusted), and what the packet
 * path skips lookups by (the counts of entries, the IPv6 prefix lengths in
 * use) covering both what the maps hold and what they will (want), so that
 * a lookup is skipped only where neither has an entry. Written first, if
 * that changes it; the publish's last write puts want's in.
 */
static int fc_config_interim(const struct fc_maps *m, struct fc_config *cfg, const struct fc_config *want,
			     struct fc_err *err)
{
	struct fc_config before = *cfg;

	cfg->store_id = cfg->store_seq = 0;
	/* ip=*'s IPv6 units are plain only while no rule tells their addresses
	 * apart (fc_star_flags): not while one may be written. */
	if (cfg->n_exact6 != want->n_exact6 || memcmp(cfg->lens6, want->lens6, sizeof(cfg->lens6)))
		cfg->star_flags &= (__u8)~FC_STAR_PLAIN6;
	cfg->n_exact4 = cfg->n_exact4 > want->n_exact4 ? cfg->n_exact4 : want->n_exact4;
	cfg->n_exact6 = cfg->n_exact6 > want->n_exact6 ? cfg->n_exact6 : want->n_exact6;
	cfg->n_pfx6 = cfg->n_pfx6 > want->n_pfx6 ? cfg->n_pfx6 : want->n_pfx6;
	cfg->n_top4 = cfg->n_top4 > want->n_top4 ? cfg->n_top4 : want->n_top4;
	cfg->lens6[0] |= want->lens6[0];
	cfg->lens6[1] |= want->lens6[1];
	return memcmp(cfg, &before, sizeof(before)) ? fc_config_write(m, cfg, err) : 0;
}

/* How far ahead of UTC the packet path's clock runs: a test's offset of
 * the fleet's clock (agent --clock-offset, fc_fleet_view.clock_ns), 0
 * otherwise. Every policy's clock at XDP/TC, as the design has it: the
 * packet path has one clock. */
static int64_t fc_node_shift(const struct fc_node_ctx *node)
{
	return node->fleet ? node->fleet->clock_ns : 0;
}

/* When the maps were made, for the fleet's fresh rule (maps/fc_fleet.h):
 * kept from old, or now (on the packet path's clock, UTC in tests shifted
 * as it is) where old never said, its maps just made (all zero). A fleet
 * policy then takes no share of a window that began before: what the
 * maps lost may have spent it. */
static void fc_fleet_fresh(struct fc_config *cfg, const struct fc_config *old, int64_t shift_ns)
{
	struct timespec ts;

	cfg->fleet_fresh_ns = old->fleet_fresh_ns;
	if (cfg->fleet_fresh_ns)
		return;
	clock_gettime(CLOCK_REALTIME, &ts);
	cfg->fleet_fresh_ns = (__u64)ts.tv_sec * FC_NS_PER_SEC + (__u64)ts.tv_nsec + (__u64)shift_ns;
}

/* Publishing everything: what each map holds against what it should (the
 * lists fc_order_write writes), fc_top4 whole, and the counts the config
 * will hold. Nothing is written. */
static int fc_full_plan(const struct fc_maps *m, struct fc_map_sync *ms, struct fc_top4_sync *top4,
			struct fc_sync_result *res, struct fc_err *err)
{
	struct fc_sync_result copies = { 0 };
	uint64_t mark[FC_TOP4_SLOTS / 64];
	size_t i;

	for (i = 0; i < FC_MS_COUNT; i++)
		if (fc_map_diff(&ms[i], res, err) < 0)
			return -1;
	if (fc_map_diff(&ms[FC_MS_TOP6], &copies, err) < 0)
		return -1;
	res->copied = fc_sync_wrote(&copies);
	/* A full publish repairs fc_top4 at every /16. */
	top4->whole = true;
	top4->exact = &ms[FC_MS_EXACT4].want;
	if (fc_top4_plan(m, top4, mark, res, err) < 0)
		return -1;
	res->cfg.n_exact4 = (__u32)ms[FC_MS_EXACT4].want.n;
	res->cfg.n_exact6 = (__u32)ms[FC_MS_EXACT6].want.n;
	res->cfg.n_pfx4 = (__u32)ms[FC_MS_PFX4].want.n;
	res->cfg.n_pfx6 = (__u32)ms[FC_MS_PFX6].want.n;
	res->cfg.n_top4 = top4->used;
	res->cfg.n_marks6 = (__u32)ms[FC_MS_PFX6].marks;
	res->cfg.pfx6_tree = FC_PFX6_TREE;
	memcpy(res->cfg.lens6, ms[FC_MS_PFX6].lens, sizeof(res->cfg.lens6));
	return 0;
}

int fc_sync_full(struct fc_source *src, const struct fc_maps *m, struct fc_sync_result *res, struct fc_err *err)
{
	struct fc_map_sync ms[FC_MS_ALL];
	struct fc_policy_sync ps = { .ncpus = libbpf_num_possible_cpus() };
	struct fc_top4_sync *top4 = calloc(1, sizeof(*top4));
	struct fc_order o = { .m = m, .ms = ms, .top4 = top4, .res = res };
	struct fc_allows al = { 0 };
	struct fc_config old;
	bool locked = false, skip;
	int rc = -1;

	memset(res, 0, sizeof(*res));
	fc_rule_maps(ms, m);
	ps.want = calloc(FC_POLICY_SLOTS, sizeof(*ps.want));
	if (!ps.want || !top4 || ps.ncpus <= 0) {
		fc_err_set(err, "out of memory");
		goto out;
	}
	if (fc_allows_read(src->st, src->now, &al, err) < 0 || fc_want_collect(src, ms, &ps, &al, &res->cfg, err) < 0 ||
	    fc_want_finish(ms, &al, top4, err) < 0)
		goto out;

	/* Written in an order that never uncovers what is covered before and
	 * after: the config's marks cleared and its gates widened, slots
	 * taken, the rule maps and fc_top4 (fc_order_write), the config, slots
	 * freed (doc/architecture.md, Publishing order). */
	pthread_mutex_lock(&fc_sync_lock);
	locked = true;
	if (fc_config_read(m, &old, err) < 0 || fc_full_plan(m, ms, top4, res, err) < 0)
		goto out;
	fc_clock_set(&res->cfg, fc_node_shift(&src->node));
	fc_fleet_fresh(&res->cfg, &old, fc_node_shift(&src->node));
	/* The array of 65,536 policies is read only when they changed. The
	 * digest is cleared before anything is written, with the marks. */
	res->cfg.policies_digest = fc_policies_digest(ps.want, src->pols, src->npols);
	skip = old.policies_digest && old.policies_digest == res->cfg.policies_digest;
	old.policies_digest = skip ? old.policies_digest : 0;
	if (fc_config_interim(m, &old, &res->cfg, err) < 0)
		goto out;
	if (!skip && !(ps.have = calloc(FC_POLICY_SLOTS, sizeof(*ps.have)))) {
		fc_err_set(err, "out of memory");
		goto out;
	}
	if (!skip && fc_policies_read(m, ps.have, err) < 0)
		goto out;
	if (!skip)
		fc_want_carry(src, &ps);
	if ((!skip && fc_policies_apply(m, &ps, true, err) < 0) || fc_order_write(&o, err) < 0)
		goto out;
	res->cfg.n_top4 = top4->used;
	/* What the ip=* buckets noted of the rules (struct fc_src_bucket) is void. */
	res->changed += top4->flips;
	res->cfg.rules_gen = old.rules_gen + (fc_sync_wrote(res) || res->copied);
	res->cfg.exact4_gen = res->cfg.rules_gen; /* the bits are made whole */
	res->cfg.carry4_gen = res->cfg.rules_gen; /* and the carried prefix answers */
	res->cfg.star_flags = fc_star_flags(&res->cfg);
	/* Slots are freed once the config names none of them (ip=*). */
	if (fc_config_write(m, &res->cfg, err) < 0 || (!skip && fc_policies_apply(m, &ps, false, err) < 0) ||
	    fc_setstats_sweep(src->st, m, src->now, ps.ncpus, err) < 0)
		goto out;
	res->policies_changed = ps.changed;
	rc = 0;
out:
	if (locked)
		pthread_mutex_unlock(&fc_sync_lock);
	fc_rule_maps_free(ms);
	if (top4)
		fc_top4_free(top4);
	free(top4);
	free(ps.want);
	free(ps.have);
	fc_allows_free(&al);
	return rc;
}

int fc_sync(struct fc_source *src, const struct fc_maps *m, const char *pin_dir, struct fc_sync_result *res,
	    struct fc_err *err)
{
	int rc;

	if (fc_maps_lock(m, pin_dir, err) < 0)
		return -1;
	rc = fc_sync_full(src, m, res, err);
	fc_maps_unlock(m);
	return rc;
}

int fc_sync_mark(const struct fc_maps *m, uint64_t store_id, uint64_t seq, int64_t shift_ns, struct fc_err *err)
{
	struct fc_config cfg, old;

	if (fc_config_read(m, &cfg, err) < 0)
		return -1;
	old = cfg;
	cfg.store_id = store_id;
	cfg.store_seq = seq;
	/* Every publish ends here, even one with nothing to write: a step of
	 * the wall clock since the last is put right. */
	fc_clock_refresh(&cfg, &old, shift_ns);
	return fc_config_write(m, &cfg, err);
}

/* ---- publishing only what changed ---- */

/* Folds one of a key's rules into its entry (a policy of nginx's adds nothing). */
static void fc_rule_fold(struct fc_rule *r, const struct fc_key_rule *k)
{
	if (k->src >= 0)
		fc_rule_add_ban(r, k->src ? 0 : fc_expiry_ns(k->expires), (uint32_t)k->src);
	else if (k->src == FC_SRC_POLICY && !k->http)
		r->policy = k->slot;
}

/* The prefix whose entries a change on p may change, all inside it: for an
 * IPv4 prefix longer than /16 its /16 (the fc_top4 entry made of every
 * prefix there), for an IPv6 prefix its shortest search marker (the
 * markers it needs lie between), else p. */
static void fc_prefix_scope(const struct fc_prefix *p, struct fc_prefix *s)
{
	uint32_t lo = FC_PFX6_MIN, hi = FC_PFX6_MAX, mid;

	*s = *p;
	if (p->family == 4) {
		s->len = p->len > FC_TOP4_SHIFT ? FC_TOP4_SHIFT : p->len;
	} else {
		while (p->len >= lo && lo <= hi && p->len != (mid = fc_pfx6_mid(lo, hi))) {
			if (p->len > mid) {
				s->len = (uint8_t)mid;
				break;
			}
			hi = mid - 1;
		}
	}
	fc_prefix_mask(s->a, p->family == 4 ? 4 : 16, s->len);
}

/* The entry of s (sorted by key, keysz bytes) with kv's key, or NULL. */
static const struct fc_kv *fc_kvs_find(const struct fc_kvs *s, size_t keysz, const struct fc_kv *kv)
{
	size_t lo = 0, hi = s->n, mid;
	int c;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		c = memcmp(s->v[mid].key, kv->key, keysz);
		if (!c)
			return &s->v[mid];
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

/* The entry of ms's want with kv's key, or NULL. */
static const struct fc_kv *fc_want_find(const struct fc_map_sync *ms, const struct fc_kv *kv)
{
	return fc_kvs_find(&ms->want, ms->keysz, kv);
}

/* Onto ex->want, the IPv4 addresses inside s that have a policy: their
 * entries may carry the answer of a prefix there (fc_carry_plan4). */
static int fc_plan_carriers(struct fc_store *st, struct fc_map_sync *ex, const struct fc_prefix *s, struct fc_err *err)
{
	struct fc_key_rule *rows = NULL;
	struct fc_kv *kv;
	size_t n = 0, i;
	int rc = 0;

	if (fc_store_exact_policies4(st, s, &rows, &n, err) < 0)
		return -1;
	for (i = 0; i < n && !rc; i++) {
		if (!(kv = fc_kvs_push(&ex->want)))
			rc = fc_err_set(err, "out of memory publishing map %s", ex->name);
		else
			fc_kv_key(ex, &rows[i].p, kv);
	}
	free(rows);
	return rc;
}

/*
 * Recomputes, from the store, the prefix entries a change on p affects: those
 * inside its scope (fc_prefix_scope), each with what the prefixes covering
 * it say, and the search markers there, onto the map's put; p's own entry
 * and markers onto its del, unless something still needs them; for IPv4,
 * the /16s in the scope marked and what covers or lies in them added to
 * what fc_top4 is made of; for IPv6, whether p's length is in use. The
 * store rows read are those covering the scope or inside it: all these
 * entries are made of. The one place that knows how prefix entries are
 * kept, with fc_sync_full. Nothing is written here.
 */
static int fc_plan_prefix(struct fc_store *st, struct fc_map_sync *all, struct fc_top4_sync *top4, uint64_t *mark,
			  const struct fc_prefix *p, const struct fc_allows *al, int64_t now, struct fc_err *err)
{
	struct fc_map_sync *ms = fc_map_of(all, p);
	struct fc_kvs mine = { 0 };
	struct fc_key_rule *rows = NULL;
	struct fc_kv own = { 0 }, scope = { 0 };
	const struct fc_kv *e;
	struct fc_prefix s;
	struct fc_rule r;
	size_t n = 0, i;
	uint32_t len;
	bool used;
	int rc = -1;

	fc_prefix_scope(p, &s);
	ms->want.n = 0;
	if (fc_store_prefix_rules(st, &s, now, &rows, &n, err) < 0)
		return -1;
	for (i = 0; i < n; i++) {
		const struct fc_prefix *q = &rows[i].p;

		memset(&r, 0, sizeof(r));
		fc_rule_fold(&r, &rows[i]);
		if ((r.flags || r.policy) && (fc_prefix_covers(q, &s) || fc_prefix_covers(&s, q)) &&
		    fc_want_add(all, q, r, err) < 0)
			goto out;
	}
	/* The allow entries on prefixes there, as fc_sync_full adds them. */
	for (i = 0; i < al->nrows; i++) {
		const struct fc_prefix *q = &al->rows[i].p;

		if (q->family && !fc_prefix_is_exact(q) && (fc_prefix_covers(q, &s) || fc_prefix_covers(&s, q)) &&
		    fc_want_add(all, q, fc_rule_of_allow(&al->rows[i]), err) < 0)
			goto out;
	}
	if (fc_want_prefixes(ms, top4, err) < 0)
		goto out;
	for (i = 0; i < ms->want.n; i++) {
		const uint8_t *a = fc_kv_addr(&ms->want.v[i], &len);

		if (fc_prefix_covers_bits(s.a, s.len, a, len) && fc_kvs_append(&ms->put, &ms->want.v[i], 1) < 0)
			goto oom;
	}
	/* What p alone needed. */
	fc_kv_key(ms, p, &own);
	if (fc_kvs_append(&mine, &own, 1) < 0)
		goto oom;
	if (ms->family == 6 && fc_kv_markers(ms, own, &mine, err) < 0)
		goto out;
	for (i = 0; i < mine.n; i++)
		if (!fc_want_find(ms, &mine.v[i]) && fc_kvs_append(&ms->del, &mine.v[i], 1) < 0)
			goto oom;
	if (ms->family == 4) {
		fc_kv_key(ms, &s, &scope);
		fc_top4_mark(mark, &scope);
		if (fc_plan_carriers(st, &all[FC_MS_EXACT4], &s, err) < 0)
			goto out;
	} else {
		/* p's length stays in use while a prefix anywhere has it (an
		 * allow entry's too). */
		e = fc_want_find(ms, &own);
		used = e && !(e->val.flags & FC_RULE_MARKER);
		for (i = 0; !used && i < al->fam[1].nlens; i++)
			used = al->fam[1].lens[i] == p->len;
		if (!used && fc_store_prefix_len_used(st, p, now, &used, err) < 0)
			goto out;
		if (used)
			ms->lens[p->len / 64] |= 1ULL << (p->len % 64);
		else
			ms->lens[p->len / 64] &= ~(1ULL << (p->len % 64));
	}
	rc = 0;
	goto out;
oom:
	fc_err_set(err, "out of memory publishing map %s", ms->name);
out:
	ms->want.n = 0;
	free(mine.v);
	free(rows);
	return rc;
}

/* Two scopes may hold the same entry, once each: a map's lists made
 * unique, and a key both to be and to go kept (what a scope still needs,
 * the other's view of it is not whole). */
static void fc_plan_unique(struct fc_map_sync *ms)
{
	size_t i, o = 0;

	fc_kvs_unique(&ms->put, fc_kv_cmp, &ms->keysz);
	fc_kvs_unique(&ms->del, fc_kv_cmp, &ms->keysz);
	for (i = 0; i < ms->del.n; i++)
		if (!fc_kvs_find(&ms->put, ms->keysz, &ms->del.v[i]))
			ms->del.v[o++] = ms->del.v[i];
	ms->del.n = o;
}

/*
 * What the prefix lookup finds for the IPv4 address a in the maps as they
 * are, into *out (zero: nothing), as the packet path's fc_prefix4_lookup
 * does: for an address whose /16 no change of the publish touches, so
 * that the answer is the one after it too. Reads fc_top4 through a
 * mapping, and fc_pfx4 only where the /24's byte says a prefix is there.
 */
static int fc_prefix4_now(const struct fc_maps *m, struct fc_top4_sync *top4, const uint8_t *a, struct fc_rule *out,
			  struct fc_err *err)
{
	uint32_t idx = (uint32_t)a[0] << 8 | a[1], in24, len;
	struct fc_pfx4_key k;
	const struct fc_top4 *t;

	if (fc_top4_view(m, top4, idx, idx, err) < 0)
		return -1;
	t = fc_top4_at(top4, idx);
	in24 = t->in24[a[2]];
	*out = t->rule;
	for (len = 31; len > FC_TOP4_SHIFT; len--) {
		if (len > 24 ? !(in24 & FC_IN24_LONGER) || !(t->longer & (1u << (len - 25))) :
			       len != FC_TOP4_SHIFT + (in24 & FC_IN24_LEN))
			continue;
		k.prefixlen = len;
		memcpy(k.a, a, 4);
		fc_prefix_mask(k.a, 4, len);
		if (!bpf_map_lookup_elem(m->pfx4, &k, out))
			return 0;
		if (errno != ENOENT)
			return fc_err_set(err, "map %s: lookup: %s", FC_MAP_NAME(pfx4), strerror(errno));
		*out = t->rule;
	}
	return 0;
}

/*
 * Publishing what changed, the prefix answers fc_exact4's entries carry
 * (fc_rule_carry): those of the addresses with a policy inside the scope of
 * a changed prefix (ex->want, fc_plan_carriers), each put again as the map
 * holds it, and a changed address's: from the prefixes to be inside the
 * /16s a change touches (mark; top4->pfx: those, folded, in address order),
 * from the maps as they are elsewhere. Each is compared with the map as it
 * is written, so only those whose answer moves are written. ex->put:
 * sorted, one entry a key.
 */
static int fc_carry_plan4(const struct fc_maps *m, struct fc_map_sync *ex, struct fc_top4_sync *top4,
			  const uint64_t *mark, struct fc_err *err)
{
	size_t i, j = 0, n = ex->put.n;
	struct fc_rule now;
	struct fc_kv kv;
	uint32_t idx;

	fc_kvs_unique(&ex->want, fc_kv_cmp, &ex->keysz);
	for (i = 0; i < ex->want.n; i++) {
		while (j < n && memcmp(ex->put.v[j].key, ex->want.v[i].key, ex->keysz) < 0)
			j++;
		if (j < n && !memcmp(ex->put.v[j].key, ex->want.v[i].key, ex->keysz))
			continue; /* a changed key: its own rows say */
		kv = ex->want.v[i];
		if (bpf_map_lookup_elem(m->exact4, kv.key, &kv.val)) {
			if (errno == ENOENT)
				continue;
			return fc_err_set(err, "map %s: lookup: %s", ex->name, strerror(errno));
		}
		if (fc_kvs_append(&ex->put, &kv, 1) < 0)
			return fc_err_set(err, "out of memory publishing map %s", ex->name);
	}
	fc_kvs_sort(&ex->put, fc_kv_cmp, &ex->keysz);
	fc_carry_sweep(ex->put.v, ex->put.n, &top4->pfx);
	for (i = 0; i < ex->put.n; i++) {
		idx = fc_kv_top4(&ex->put.v[i], FC_KV_EXACT4);
		if ((mark[idx / 64] & (1ULL << (idx % 64))) || !fc_rule_may_carry(&ex->put.v[i].val))
			continue;
		if (fc_prefix4_now(m, top4, ex->put.v[i].key, &now, err) < 0)
			return -1;
		fc_rule_carry(&ex->put.v[i].val, &now);
	}
	return 0;
}

/*
 * Publishing what changed: the rule entries of the changed keys, an exact
 * address's from its rows, a prefix's (and what it covers) by
 * fc_plan_prefix, onto the maps' lists; what changes in fc_top4 (top4).
 * Nothing is written.
 */
static int fc_plan_keys(struct fc_store *st, const struct fc_maps *m, struct fc_map_sync *ms, const struct fc_delta *d,
			const struct fc_allows *al, int64_t now, struct fc_top4_sync *top4, struct fc_sync_result *res,
			struct fc_err *err)
{
	uint64_t mark[FC_TOP4_SLOTS / 64] = { 0 };
	struct fc_kv kv;
	size_t i, j;
	bool want;

	for (i = 0; i < d->nkeys; i = j) {
		const struct fc_prefix *p = &d->keys[i].p;

		memset(&kv, 0, sizeof(kv));
		for (j = i; j < d->nkeys && !memcmp(&d->keys[j].p, p, sizeof(*p)); j++)
			fc_rule_fold(&kv.val, &d->keys[j]);
		if (!fc_prefix_is_exact(p)) {
			if (fc_plan_prefix(st, ms, top4, mark, p, al, now, err) < 0)
				return -1;
			continue;
		}
		/* An entry for its ban or policy, or for an allow entry on it alone,
		 * carrying the allow entries covering it (a prefix's alone makes
		 * none: the prefix's entry answers). */
		want = kv.val.flags || kv.val.policy;
		want |= fc_allow_fold(&al->fam[p->family == 6], p->a, p->family == 4 ? 4 : 16, &kv.val);
		fc_kv_key(fc_map_of(ms, p), p, &kv);
		if (fc_kvs_append(want ? &fc_map_of(ms, p)->put : &fc_map_of(ms, p)->del, &kv, 1) < 0)
			return fc_err_set(err, "out of memory publishing map %s", fc_map_of(ms, p)->name);
	}
	for (i = 0; i < FC_MS_COUNT; i++)
		fc_plan_unique(&ms[i]);
	fc_kvs_unique(&top4->pfx, fc_kv_addr_cmp, &ms[FC_MS_PFX4]);
	if (fc_carry_plan4(m, &ms[FC_MS_EXACT4], top4, mark, err) < 0)
		return -1;
	return fc_top4_plan(m, top4, mark, res, err);
}

/* A changed slot's policy, as the maps should hold it (zero: none), over
 * what the slot holds (h: the generation of its limits carried or moved). */
static void fc_slot_want(const struct fc_policy_change *c, const struct fc_node_ctx *node, const struct fc_policy *h,
			 struct fc_policy *w)
{
	struct fc_enforced pub = { .k = *h }, e;

	memset(w, 0, sizeof(*w));
	if (!c->found || fc_policy_is_l7(&c->row.spec))
		return;
	fc_policy_enforced(&c->row, node, &pub, &e);
	*w = e.k;
}

/* Writes the changed slots that are (live) or are no more occupied; or,
 * (count) writes none, only counting in cfg what freeing them will take
 * (a slot a change names twice, once). */
static int fc_slots_apply(const struct fc_maps *m, struct fc_policy_sync *ps, const struct fc_delta *d,
			  const struct fc_node_ctx *node, bool live, bool count, struct fc_config *cfg,
			  struct fc_err *err)
{
	uint64_t *seen = count ? calloc(FC_POLICY_SLOTS / 64, sizeof(*seen)) : NULL;
	struct fc_policy w, h;
	size_t i;
	int rc = 0;

	if (count && !seen)
		return fc_err_set(err, "out of memory");
	for (i = 0; i < d->npols && rc >= 0; i++) {
		__u32 slot = d->pols[i].slot;

		if (slot < 1 || slot > FC_MAX_POLICIES)
			continue;
		if (seen && (seen[slot / 64] & (1ULL << (slot % 64))))
			continue;
		if (bpf_map_lookup_elem(m->policies, &slot, &h)) {
			rc = fc_err_set(err, "map %s: slot %u: %s", FC_MAP_NAME(policies), slot, strerror(errno));
			break;
		}
		fc_slot_want(&d->pols[i], node, &h, &w);
		if ((w.id != 0) != live)
			continue;
		if (seen)
			seen[slot / 64] |= 1ULL << (slot % 64);
		rc = count ? memcmp(&w, &h, sizeof(w)) != 0 : fc_slot_write(m, ps, slot, &w, &h, err);
		if (rc > 0 && (count || live))
			cfg->n_policies += (w.id != 0) - (h.id != 0);
	}
	free(seen);
	return rc < 0 ? -1 : 0;
}

/* The ip=* policy's fields of cfg, from the store. */
static int fc_star_config(const struct fc_source *src, struct fc_config *cfg, struct fc_err *err)
{
	struct fc_policy_row row;
	struct fc_enforced e;
	bool found;

	if (fc_store_policy_star(src->st, &row, &found, err) < 0)
		return -1;
	found = found && !fc_policy_is_l7(&row.spec);
	if (found)
		fc_policy_enforced(&row, &src->node, NULL, &e);
	fc_star_fill(cfg, found ? &row : NULL, &e);
	return 0;
}

/* Publishing what changed: the config while it writes (fc_config_interim),
 * its gates covering what the changed keys may add. */
static int fc_delta_interim(const struct fc_maps *m, const struct fc_map_sync *ms, const struct fc_top4_sync *top4,
			    struct fc_config *cfg, struct fc_err *err)
{
	struct fc_config will = *cfg;

	will.n_exact4 += (__u32)ms[FC_MS_EXACT4].put.n;
	will.n_exact6 += (__u32)ms[FC_MS_EXACT6].put.n;
	will.n_pfx6 += (__u32)ms[FC_MS_PFX6].put.n;
	will.n_top4 += (__u32)top4->nchg + (ms[FC_MS_EXACT4].put.n ? 1 : 0);
	memcpy(will.lens6, ms[FC_MS_PFX6].lens, sizeof(will.lens6));
	return fc_config_interim(m, cfg, &will, err);
}

int fc_sync_delta(struct fc_source *src, const struct fc_maps *m, const struct fc_delta *d, struct fc_sync_result *res,
		  struct fc_err *err)
{
	struct fc_policy_sync ps = { .ncpus = libbpf_num_possible_cpus() };
	struct fc_map_sync ms[FC_MS_ALL];
	struct fc_top4_sync *top4 = calloc(1, sizeof(*top4));
	struct fc_order o = {
		.m = m, .ms = ms, .top4 = top4, .delta = true, .st = src->st, .now = src->now, .res = res
	};
	struct fc_allows al = { 0 };
	struct fc_config old, interim;
	bool star = false;
	size_t i;
	int rc = -1;

	memset(res, 0, sizeof(*res));
	fc_rule_maps(ms, m);
	pthread_mutex_lock(&fc_sync_lock);
	if (ps.ncpus <= 0 || !top4) {
		fc_err_set(err, top4 ? "cannot count possible CPUs" : "out of memory");
		goto out;
	}
	/* A changed key's entry carries the allow entries covering it (an
	 * allow entry's own change is published whole: fc_delta.allows). */
	if (d->nkeys && fc_allows_read(src->st, src->now, &al, err) < 0)
		goto out;
	if (fc_config_read(m, &old, err) < 0)
		goto out;
	top4->used = old.n_top4;
	memcpy(ms[FC_MS_PFX6].lens, old.lens6, sizeof(old.lens6));
	if (fc_plan_keys(src->st, m, ms, d, &al, src->now, top4, res, err) < 0)
		goto out;
	/* The marks first (a publish cut short is redone whole), the gates
	 * widened; then slots taken, the rule maps and fc_top4
	 * (fc_order_write), the config, slots freed. */
	interim = old;
	if (d->npols)
		interim.policies_digest = 0;
	if (fc_delta_interim(m, ms, top4, &interim, err) < 0)
		goto out;
	res->cfg = old;
	res->cfg.store_id = res->cfg.store_seq = 0;
	if (d->npols)
		res->cfg.policies_digest = 0;
	fc_clock_refresh(&res->cfg, &old, fc_node_shift(&src->node));
	fc_fleet_fresh(&res->cfg, &old, fc_node_shift(&src->node));
	if (fc_slots_apply(m, &ps, d, &src->node, true, false, &res->cfg, err) < 0 || fc_order_write(&o, err) < 0 ||
	    fc_slots_apply(m, &ps, d, &src->node, false, true, &res->cfg, err) < 0)
		goto out;
	for (i = 0; i < d->npols; i++)
		star |= d->pols[i].star;
	if (star && fc_star_config(src, &res->cfg, err) < 0)
		goto out;
	for (i = 0; i < d->nsets; i++)
		if (d->sets[i] <= FC_MAX_SETS && fc_setstats_zero(m, d->sets[i], ps.ncpus, err) < 0)
			goto out;
	res->cfg.n_exact4 += (__u32)ms[FC_MS_EXACT4].count;
	res->cfg.n_exact6 += (__u32)ms[FC_MS_EXACT6].count;
	res->cfg.n_pfx4 += (__u32)ms[FC_MS_PFX4].count;
	res->cfg.n_pfx6 += (__u32)ms[FC_MS_PFX6].count;
	res->cfg.n_top4 = top4->used;
	res->cfg.n_marks6 += (__u32)ms[FC_MS_PFX6].dmarks;
	memcpy(res->cfg.lens6, ms[FC_MS_PFX6].lens, sizeof(res->cfg.lens6));
	/* What the ip=* buckets noted of the rules (struct fc_src_bucket) is void. */
	res->changed += top4->flips;
	res->cfg.rules_gen = old.rules_gen + (fc_sync_wrote(res) || res->copied);
	/* The bits stay whole if they were; if not (pins another version
	 * published) they stay untrusted, defensively: fc_publish_layers
	 * publishes everything onto such maps, never this delta. */
	res->cfg.exact4_gen = res->cfg.rules_gen + (old.exact4_gen != old.rules_gen);
	res->cfg.carry4_gen = res->cfg.rules_gen + (old.carry4_gen != old.rules_gen);
	res->cfg.star_flags = fc_star_flags(&res->cfg);
	/* Slots are freed once the config names none of them (ip=*). */
	if (fc_config_write(m, &res->cfg, err) < 0 ||
	    fc_slots_apply(m, &ps, d, &src->node, false, false, &res->cfg, err) < 0)
		goto out;
	res->policies_changed = ps.changed;
	rc = 0;
out:
	pthread_mutex_unlock(&fc_sync_lock);
	fc_rule_maps_free(ms);
	if (top4)
		fc_top4_free(top4);
	free(top4);
	fc_allows_free(&al);
	return rc;
}
