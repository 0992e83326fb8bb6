// SPDX-License-Identifier: BSD-2-Clause
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "fc_duration.h"
#include "fc_sync.h"

/* ENOTSUPP: the kernel's "this map type has no batch operation". */
#define FC_ENOTSUPP 524
#define FC_BATCH    8192

/* One map entry; the key is at most a struct fc_pfx6_key. */
struct fc_kv {
	uint8_t key[sizeof(struct fc_pfx6_key)];
	struct fc_rule val;
};

struct fc_kvs {
	struct fc_kv *v;
	size_t n, cap;
};

/* What one rule map should hold, what it holds, and the difference. */
struct fc_map_sync {
	const char *name;
	int fd;
	size_t keysz;
	int family; /* 4 or 6 */
	bool prefixes; /* a prefix hash: fc_want_prefixes makes its entries */
	size_t max_entries;
	struct fc_kvs want, have;
	bool have_known; /* have is this process's last publish: no walk */
	size_t marks;    /* fc_pfx6: search markers among want */
	__u64 lens[2];   /* fc_pfx6: bit L of lens[L / 64], the lengths of its prefixes */
};

enum { FC_MS_EXACT4, FC_MS_EXACT6, FC_MS_PFX4, FC_MS_PFX6, FC_MS_COUNT };

/* The IPv4 prefixes, folded, in address order: what fc_top4 is made of. */
struct fc_top4_sync {
	struct fc_kvs pfx;
	bool whole;    /* look at every /16, not only where fc_pfx4 changed */
	__u32 used;    /* fc_top4 entries that are not empty (in: before, out: after) */
};

/* What this process last wrote to the rule maps, sorted as fc_kv_cmp sorts:
 * valid while fc_config.publish_gen is gen, i.e. no other publish came
 * since (the maps are freqctl's alone to write). gen is 0 while a publish
 * runs, so one cut short is never trusted. A long-running publisher (the
 * agent, its console) then diffs each change against this instead of
 * walking maps of a million buckets. */
static struct {
	pthread_mutex_t lock;
	__u64 gen;
	struct fc_kvs have[FC_MS_COUNT];
} fc_shadow = { .lock = PTHREAD_MUTEX_INITIALIZER };

/* Scratch for one batch of keys and values, used under fc_shadow.lock. */
static uint8_t fc_batch_keys[FC_BATCH * sizeof(struct fc_pfx6_key)];
static struct fc_rule fc_batch_vals[FC_BATCH];

uint64_t fc_expiry_ns(int64_t expires)
{
	/* Saturated: a stored time past FC_TIME_MAX can not wrap into the past. */
	if (expires > FC_TIME_MAX)
		expires = FC_TIME_MAX;
	return expires > 0 ? (uint64_t)expires * FC_NS_PER_SEC : 0;
}

uint64_t fc_utc_offset_ns(void)
{
	struct timespec rt, mono;
	uint64_t d;

	clock_gettime(CLOCK_MONOTONIC, &mono);
	clock_gettime(CLOCK_REALTIME, &rt);
	d = ((uint64_t)rt.tv_sec - (uint64_t)mono.tv_sec) * FC_NS_PER_SEC + (uint64_t)rt.tv_nsec - (uint64_t)mono.tv_nsec;
	/* Whole milliseconds: two syncs compute the same offset, so a sync that
	 * changes nothing else writes nothing. */
	return (d + 500000) / 1000000 * 1000000;
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
			kv->val = fc_batch_vals[i];
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
	struct fc_rule *vals = fc_batch_vals;
	bool batch = true;
	size_t off, i;
	__u32 cnt;
	int rc;

	for (off = 0; off < n; off += cnt) {
		cnt = (__u32)(n - off < FC_BATCH ? n - off : FC_BATCH);
		for (i = 0; i < cnt; i++) {
			memcpy(keys + i * ms->keysz, kvs[off + i].key, ms->keysz);
			vals[i] = kvs[off + i].val;
		}
		if (batch) {
			__u32 done = cnt;

			rc = update ? bpf_map_update_batch(ms->fd, keys, vals, &done, &opts) :
				      bpf_map_delete_batch(ms->fd, keys, &done, &opts);
			if (!rc)
				continue;
			if (!fc_batch_unsupported())
				return fc_err_set(err, "map %s: batch %s: %s", ms->name, update ? "update" : "delete",
						  strerror(errno));
			batch = false; /* a kernel without batches: one at a time */
		}
		for (i = 0; i < cnt; i++) {
			rc = update ? bpf_map_update_elem(ms->fd, keys + i * ms->keysz, &vals[i], BPF_ANY) :
				      bpf_map_delete_elem(ms->fd, keys + i * ms->keysz);
			if (rc && !(errno == ENOENT && !update))
				return fc_err_set(err, "map %s: %s: %s", ms->name, update ? "update" : "delete",
						  errno == E2BIG ? "map full" : strerror(errno));
		}
	}
	return 0;
}

/* Diffs want against have (both sorted by key) and writes the difference. */
static int fc_map_sync(struct fc_map_sync *ms, struct fc_sync_result *res, struct fc_err *err)
{
	struct fc_kvs upd = {}, del = {};
	size_t i = 0, j = 0;
	struct fc_kv *kv;
	int rc = -1, c;

	if (!ms->have_known) {
		if (fc_map_dump(ms, err) < 0)
			return -1;
		fc_kvs_sort(&ms->have, fc_kv_cmp, &ms->keysz);
	}

	while (i < ms->want.n || j < ms->have.n) {
		if (i == ms->want.n)
			c = 1;
		else if (j == ms->have.n)
			c = -1;
		else
			c = memcmp(ms->want.v[i].key, ms->have.v[j].key, ms->keysz);
		if (c < 0 || (c == 0 && memcmp(&ms->want.v[i].val, &ms->have.v[j].val, sizeof(struct fc_rule)))) {
			if (!(kv = fc_kvs_push(&upd)))
				goto oom;
			*kv = ms->want.v[i];
			if (c < 0)
				res->added++;
			else
				res->changed++;
		} else if (c > 0) {
			if (!(kv = fc_kvs_push(&del)))
				goto oom;
			*kv = ms->have.v[j];
			res->removed++;
		}
		i += c <= 0;
		j += c >= 0;
	}
	if (fc_map_apply(ms, upd.v, upd.n, true, err) == 0 && fc_map_apply(ms, del.v, del.n, false, err) == 0)
		rc = 0;
	goto out;
oom:
	fc_err_set(err, "out of memory diffing map %s", ms->name);
out:
	free(upd.v);
	free(del.v);
	return rc;
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

static void fc_rule_add_ban(struct fc_rule *r, uint64_t expires_ns)
{
	fc_rule_add(r, FC_RULE_BANNED, &r->ban_expires_ns, expires_ns);
}

static void fc_rule_add_allow(struct fc_rule *r, uint64_t expires_ns)
{
	fc_rule_add(r, FC_RULE_ALLOWED, &r->allow_expires_ns, expires_ns);
}

/* Folds r into the entry with the same key: a ban, an allow entry and a
 * policy on one prefix, a marker where a prefix is (which is then no
 * marker). */
static void fc_rule_merge(struct fc_rule *into, const struct fc_rule *r)
{
	if (r->flags & FC_RULE_BANNED)
		fc_rule_add_ban(into, r->ban_expires_ns);
	if (r->flags & FC_RULE_ALLOWED)
		fc_rule_add_allow(into, r->allow_expires_ns);
	if (r->policy)
		into->policy = r->policy;
	into->flags |= r->flags & FC_RULE_LONGER;
	if (!(r->flags & FC_RULE_MARKER))
		into->flags &= ~FC_RULE_MARKER;
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

/*
 * A search stops at the longest match, so each entry carries the bans and
 * the allow entries of the prefixes covering it (the longest-lasting of
 * each) and, when it has no policy of its own, the policy of the nearest
 * covering prefix that has one. Leaves want in address order.
 */
static int fc_want_inherit(struct fc_map_sync *ms, struct fc_err *err)
{
	struct fc_kv *v = ms->want.v;
	size_t *stack, depth = 0, i;
	uint32_t lt, le;

	if (!ms->want.n)
		return 0;
	stack = malloc(ms->want.n * sizeof(*stack));
	if (!stack)
		return fc_err_set(err, "out of memory publishing map %s", ms->name);
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
				fc_rule_add_ban(&v[i].val, up->ban_expires_ns);
			if (up->flags & FC_RULE_ALLOWED)
				fc_rule_add_allow(&v[i].val, up->allow_expires_ns);
			if (!v[i].val.policy)
				v[i].val.policy = up->policy;
		}
		stack[depth++] = i;
	}
	free(stack);
	return 0;
}

/* Adds the search markers of want.v[i], an IPv6 prefix (maps/fc_maps.h):
 * one at each length on its path through the tree of lengths where the
 * search must turn longer to reach it. */
static int fc_want_markers(struct fc_map_sync *ms, size_t i, struct fc_err *err)
{
	uint32_t lo = FC_PFX6_MIN, hi = FC_PFX6_MAX, len, mid;
	struct fc_kv *kv;

	fc_kv_addr(&ms->want.v[i], &len);
	while (len >= lo && lo <= hi) {
		mid = (lo + hi) / 2;
		if (len == mid)
			break;
		if (len < mid) {
			hi = mid - 1;
			continue;
		}
		if (!(kv = fc_kvs_push(&ms->want)))
			return fc_err_set(err, "out of memory publishing map %s", ms->name);
		memcpy(kv->key, ms->want.v[i].key, ms->keysz);
		memcpy(kv->key, &mid, sizeof(mid));
		fc_prefix_mask(kv->key + sizeof(mid), ms->keysz - sizeof(mid), mid);
		kv->val.flags = FC_RULE_MARKER | FC_RULE_LONGER;
		lo = mid + 1;
	}
	return 0;
}

/*
 * The entries of a prefix map from the prefixes in ms->want (merged): what
 * the prefixes covering each entry say folded into it; for IPv6 their
 * search markers; for IPv4 a copy in address order for fc_top4. (The
 * prefixes of /1 to /16 stay in fc_pfx4 too, never looked up there: what
 * it holds says what fc_top4 was made of.) Leaves want sorted by key, its
 * markers counted and, for IPv6, the lengths of its prefixes noted.
 */
static int fc_want_prefixes(struct fc_map_sync *ms, struct fc_top4_sync *top4, struct fc_err *err)
{
	size_t n = ms->want.n, i;
	struct fc_kv *v;
	uint32_t len;

	for (i = 0; ms->family == 6 && i < n; i++)
		if (fc_want_markers(ms, i, err) < 0)
			return -1;
	fc_want_merge(ms);
	if (fc_want_inherit(ms, err) < 0)
		return -1;
	v = ms->want.v;
	if (ms->family == 4 && ms->want.n) {
		if (!(top4->pfx.v = malloc(ms->want.n * sizeof(*v))))
			return fc_err_set(err, "out of memory publishing map %s", FC_MAP_NAME(top4));
		memcpy(top4->pfx.v, v, ms->want.n * sizeof(*v));
		top4->pfx.n = ms->want.n;
	}
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

/* The /16 (fc_top4 index) of an IPv4 prefix key. */
static uint32_t fc_kv_top4(const struct fc_kv *kv)
{
	uint32_t len;
	const uint8_t *a = fc_kv_addr(kv, &len);

	return (uint32_t)a[0] << 8 | a[1];
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
	uint32_t len, idx = fc_kv_top4(kv), end;

	fc_kv_addr(kv, &len);
	for (end = idx + (len < FC_TOP4_SHIFT ? 1u << (FC_TOP4_SHIFT - len) : 1); idx < end; idx++)
		mark[idx / 64] |= 1ULL << (idx % 64);
}

/* Marks the /16s of the fc_pfx4 entries added, changed or removed: have
 * and want are both sorted by key. */
static void fc_top4_changed(const struct fc_map_sync *ms, uint64_t *mark)
{
	size_t i = 0, j = 0;
	int c;

	while (i < ms->want.n || j < ms->have.n) {
		c = i == ms->want.n ? 1 : j == ms->have.n ? -1 : memcmp(ms->want.v[i].key, ms->have.v[j].key, ms->keysz);
		if (c < 0 || (c == 0 && memcmp(&ms->want.v[i].val, &ms->have.v[j].val, sizeof(struct fc_rule))))
			fc_top4_mark(mark, &ms->want.v[i]);
		if (c > 0)
			fc_top4_mark(mark, &ms->have.v[j]);
		i += c <= 0;
		j += c >= 0;
	}
}

/* The first prefix of the address-ordered list p (n long) at or past the
 * /16 idx. */
static size_t fc_top4_seek(const struct fc_kv *p, size_t n, uint32_t idx)
{
	size_t lo = 0, hi = n, mid;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (fc_kv_top4(&p[mid]) < idx)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/*
 * Makes fc_top4 what the IPv4 prefixes say, through a mapping of the array,
 * at the /16s whose prefixes changed (fc_pfx4's entries, ms->have against
 * ms->want) or, whole, at every /16 (10 ms here). What differs is written
 * in place; nothing the size of the array is allocated or read through a
 * syscall (a batch read of it took 150 ms), and a publish that is not whole
 * and changes no IPv4 prefix touches none of it.
 */
static int fc_top4_sync(const struct fc_maps *m, struct fc_top4_sync *top4, const struct fc_map_sync *ms,
			struct fc_sync_result *res, struct fc_err *err)
{
	const size_t size = (size_t)FC_TOP4_SLOTS * sizeof(struct fc_top4);
	const struct fc_kv *p = top4->pfx.v;
	uint64_t mark[FC_TOP4_SLOTS / 64] = { 0 };
	uint32_t *cover = NULL, len, idx, end, i;
	struct fc_top4 *map, e;
	size_t j;
	int rc = -1;

	if (top4->whole)
		memset(mark, 0xff, sizeof(mark));
	else
		fc_top4_changed(ms, mark);
	for (idx = 0; idx < FC_TOP4_SLOTS / 64 && !mark[idx]; idx++)
		;
	if (idx == FC_TOP4_SLOTS / 64)
		return 0;
	/* For each /16, the longest prefix of /1 to /16 covering it (index + 1). */
	if (!(cover = calloc(FC_TOP4_SLOTS, sizeof(*cover))))
		return fc_err_set(err, "out of memory publishing map %s", FC_MAP_NAME(top4));
	for (i = 0; i < top4->pfx.n; i++) {
		fc_kv_addr(&p[i], &len);
		if (len > FC_TOP4_SHIFT)
			continue;
		for (idx = fc_kv_top4(&p[i]), end = idx + (1u << (FC_TOP4_SHIFT - len)); idx < end; idx++)
			cover[idx] = i + 1;
	}
	map = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | (top4->whole ? MAP_POPULATE : 0), m->top4, 0);
	if (map == MAP_FAILED) {
		fc_err_set(err, "map %s: mmap: %s", FC_MAP_NAME(top4), strerror(errno));
		goto out;
	}
	if (top4->whole)
		top4->used = 0;
	for (idx = 0; idx < FC_TOP4_SLOTS; idx++) {
		if (!(mark[idx / 64] & (1ULL << (idx % 64))))
			continue;
		memset(&e, 0, sizeof(e));
		if (cover[idx])
			e.rule = p[cover[idx] - 1].val;
		for (j = fc_top4_seek(p, top4->pfx.n, idx); j < top4->pfx.n && fc_kv_top4(&p[j]) == idx; j++) {
			fc_kv_addr(&p[j], &len);
			if (len > FC_TOP4_SHIFT)
				fc_top4_note(&e, &p[j]);
		}
		if (top4->whole) {
			top4->used += !fc_top4_empty(&e);
		} else if (fc_top4_empty(&map[idx]) != fc_top4_empty(&e)) {
			top4->used += fc_top4_empty(&map[idx]);
			top4->used -= fc_top4_empty(&e);
		}
		if (!memcmp(&map[idx], &e, sizeof(e)))
			continue;
		res->added += fc_top4_empty(&map[idx]);
		res->removed += fc_top4_empty(&e);
		res->changed += !fc_top4_empty(&map[idx]) && !fc_top4_empty(&e);
		memcpy(&map[idx], &e, sizeof(e));
	}
	munmap(map, size);
	rc = 0;
out:
	free(cover);
	return rc;
}

/* Adds a ban, an allow entry or a policy (what r says) on p to the map that
 * holds its kind. */
static int fc_want_add(struct fc_map_sync *ms, const struct fc_prefix *p, const struct fc_rule *r,
		       struct fc_err *err)
{
	int which = (fc_prefix_is_exact(p) ? FC_MS_EXACT4 : FC_MS_PFX4) + (p->family == 6);
	struct fc_map_sync *dst = &ms[which];
	struct fc_kv *kv = fc_kvs_push(&dst->want);

	if (!kv)
		return fc_err_set(err, "out of memory publishing map %s", dst->name);
	if (!dst->prefixes)
		memcpy(kv->key, p->a, dst->keysz);
	else if (p->family == 4)
		fc_prefix_to_pfx4(p, (struct fc_pfx4_key *)kv->key);
	else
		fc_prefix_to_pfx6(p, (struct fc_pfx6_key *)kv->key);
	kv->val = *r;
	return 0;
}

/* An allow prefix (not an exact address) of one family, for the exact
 * entries it covers. */
struct fc_allow_pfx {
	uint8_t a[16]; /* masked */
	uint32_t len;
	uint64_t expires_ns;
};

static int fc_allow_pfx_cmp(const void *x, const void *y)
{
	const struct fc_allow_pfx *a = x, *b = y;

	if (a->len != b->len)
		return (a->len > b->len) - (a->len < b->len);
	return memcmp(a->a, b->a, sizeof(a->a));
}

/*
 * An exact entry (a ban, a policy) inside an allowed prefix is allowed too:
 * the exact lookup's answer is the whole answer for a source it finds. For
 * each exact entry, each length of allow prefix in use is one binary search;
 * none when no prefix is allowed.
 */
static int fc_want_allow_exact(struct fc_map_sync *ms, const struct fc_allow_row *allows, size_t nallows,
			       struct fc_err *err)
{
	struct fc_allow_pfx *ap, key, *hit;
	uint32_t lens[128], nlens = 0, l;
	bool used[128] = { false };
	size_t n = 0, i;

	ap = malloc((nallows ? nallows : 1) * sizeof(*ap));
	if (!ap)
		return fc_err_set(err, "out of memory publishing map %s", ms->name);
	for (i = 0; i < nallows; i++) {
		const struct fc_prefix *p = &allows[i].p;

		if (p->family != ms->family || fc_prefix_is_exact(p))
			continue;
		memset(&ap[n], 0, sizeof(ap[n]));
		memcpy(ap[n].a, p->a, sizeof(p->a));
		ap[n].len = p->len;
		ap[n].expires_ns = fc_expiry_ns(allows[i].expires);
		if (!used[p->len]) {
			used[p->len] = true;
			lens[nlens++] = p->len;
		}
		n++;
	}
	if (n)
		qsort(ap, n, sizeof(*ap), fc_allow_pfx_cmp);
	for (i = 0; n && i < ms->want.n; i++) {
		for (l = 0; l < nlens; l++) {
			memset(&key, 0, sizeof(key));
			memcpy(key.a, ms->want.v[i].key, ms->keysz);
			fc_prefix_mask(key.a, ms->keysz, lens[l]);
			key.len = lens[l];
			hit = bsearch(&key, ap, n, sizeof(*ap), fc_allow_pfx_cmp);
			if (hit)
				fc_rule_add_allow(&ms->want.v[i].val, hit->expires_ns);
		}
	}
	free(ap);
	return 0;
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
 * of the policies (pols), which is stable. */
static __u64 fc_policies_digest(const struct fc_policy *want, const struct fc_policy_row *pols, size_t npols)
{
	__u64 h = 0xcbf29ce484222325ull;
	const unsigned char *p;
	size_t i, j;

	for (i = 0; i < npols; i++) {
		if (fc_policy_is_l7(&pols[i].spec))
			continue;
		h = (h ^ pols[i].slot) * 0x100000001b3ull;
		for (p = (const unsigned char *)&want[pols[i].slot], j = 0; j < sizeof(*want); j++)
			h = (h ^ p[j]) * 0x100000001b3ull;
	}
	return h | 1; /* never 0, which means "not known" */
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

/* Writes the slots that differ: occupied ones (live) before the rules point
 * at them, freed ones after the rules stopped pointing at them. */
static int fc_policies_apply(const struct fc_maps *m, struct fc_policy_sync *ps, bool live, struct fc_err *err)
{
	__u32 slot;

	for (slot = 1; slot < FC_POLICY_SLOTS; slot++) {
		struct fc_policy *w = &ps->want[slot], *h = &ps->have[slot];

		if ((w->id != 0) != live || !memcmp(w, h, sizeof(*w)))
			continue;
		if (live && (w->id != h->id || w->epoch != h->epoch) &&
		    fc_slot_reset(m, ps, slot, w->id != h->id, err) < 0)
			return -1;
		if (bpf_map_update_elem(m->policies, &slot, w, BPF_ANY))
			return fc_err_set(err, "map %s: slot %u: %s", FC_MAP_NAME(policies), slot, strerror(errno));
		ps->changed++;
	}
	return 0;
}

int fc_sync(struct fc_store *st, const struct fc_maps *m, const char *pin_dir, int64_t now, double weight,
	    struct fc_sync_result *res, struct fc_err *err)
{
	struct fc_policy_spec scaled;
	struct fc_map_sync ms[FC_MS_COUNT] = {
		[FC_MS_EXACT4] = { FC_MAP_NAME(exact4), m->exact4, sizeof(struct fc_addr4), 4, false, FC_MAX_RULES },
		[FC_MS_EXACT6] = { FC_MAP_NAME(exact6), m->exact6, sizeof(struct fc_addr6), 6, false, FC_MAX_RULES },
		[FC_MS_PFX4] = { FC_MAP_NAME(pfx4), m->pfx4, sizeof(struct fc_pfx4_key), 4, true, FC_MAX_RULES },
		[FC_MS_PFX6] = { FC_MAP_NAME(pfx6), m->pfx6, sizeof(struct fc_pfx6_key), 6, true, FC_MAX_RULES },
	};
	const size_t nms = FC_MS_COUNT;
	struct fc_policy_sync ps = { .ncpus = libbpf_num_possible_cpus() };
	struct fc_top4_sync top4 = { 0 };
	struct fc_policy_row *pols = NULL;
	struct fc_allow_row *allows = NULL;
	struct fc_ban_row *bans = NULL;
	struct fc_config old;
	size_t nbans = 0, npols = 0, nallows = 0, i;
	struct fc_rule rule;
	bool locked = false, skip, shadow;
	int rc = -1;

	memset(res, 0, sizeof(*res));
	ps.want = calloc(FC_POLICY_SLOTS, sizeof(*ps.want));
	if (!ps.want || ps.ncpus <= 0) {
		fc_err_set(err, "out of memory");
		goto out;
	}
	if (fc_store_ban_list(st, now, &bans, &nbans, err) < 0 || fc_store_policy_list(st, &pols, &npols, err) < 0 ||
	    fc_store_allow_list(st, now, &allows, &nallows, err) < 0)
		goto out;
	for (i = 0; i < nbans; i++) {
		rule = (struct fc_rule){ .flags = FC_RULE_BANNED, .ban_expires_ns = fc_expiry_ns(bans[i].expires) };
		if (fc_want_add(ms, &bans[i].p, &rule, err) < 0)
			goto out;
	}
	/* Allow entries on uids are nginx's alone. */
	for (i = 0; i < nallows; i++) {
		rule = (struct fc_rule){ .flags = FC_RULE_ALLOWED, .allow_expires_ns = fc_expiry_ns(allows[i].expires) };
		if (allows[i].p.family && fc_want_add(ms, &allows[i].p, &rule, err) < 0)
			goto out;
	}
	res->cfg.utc_offset_ns = fc_utc_offset_ns();
	for (i = 0; i < npols; i++) {
		const struct fc_policy_row *r = &pols[i];

		if (fc_policy_is_l7(&r->spec))
			continue; /* nginx's, through the shm */
		fc_policy_scale(&r->spec, weight, &scaled);
		fc_policy_compile(&scaled, r->epoch, &ps.want[r->slot]);
		if (r->spec.kind == FC_MATCH_STAR) {
			res->cfg.star_slot = r->slot;
			res->cfg.star_gen = r->epoch;
			res->cfg.star_syn = r->spec.count == FC_COUNT_SYN;
			fc_policy_new_src_tier(&r->spec, ps.ncpus, &res->cfg.new_src);
		} else if (fc_want_add(ms, &r->spec.ip, &(struct fc_rule){ .policy = r->slot }, err) < 0) {
			goto out;
		}
	}
	for (i = 0; i < nms; i++) {
		fc_want_merge(&ms[i]);
		if (ms[i].prefixes && fc_want_prefixes(&ms[i], &top4, err) < 0)
			goto out;
		if (!ms[i].prefixes && fc_want_allow_exact(&ms[i], allows, nallows, err) < 0)
			goto out;
		if (ms[i].want.n > FC_MAX_RULES) {
			fc_err_set(err, "map %s: %zu entries%s exceed its capacity of %d", ms[i].name, ms[i].want.n,
				   ms[i].marks ? " (prefixes and their search markers)" : "", FC_MAX_RULES);
			goto out;
		}
	}

	if (fc_maps_lock(m, pin_dir, err) < 0)
		goto out;
	locked = true;
	pthread_mutex_lock(&fc_shadow.lock);
	if (fc_config_read(m, &old, err) < 0)
		goto out;
	/* The array of 65,536 policies is read only when they changed, and the
	 * rule maps walked only when this process did not write them last.
	 * Both marks are cleared before anything is written, so what a
	 * publish cut short left is never trusted. */
	res->cfg.policies_digest = fc_policies_digest(ps.want, pols, npols);
	skip = old.policies_digest && old.policies_digest == res->cfg.policies_digest;
	shadow = fc_shadow.gen && old.publish_gen == fc_shadow.gen;
	/* fc_top4 is taken for what fc_pfx4 says, and fc_pfx4 for what this
	 * process wrote, only where the rule maps' walk is spared too. */
	top4.whole = !shadow;
	top4.used = old.n_top4;
	fc_shadow.gen = 0;
	if ((!skip && old.policies_digest) || old.publish_gen) {
		old.policies_digest = skip ? old.policies_digest : 0;
		old.publish_gen = 0;
		if (fc_config_write(m, &old, err) < 0)
			goto out;
	}
	for (i = 0; shadow && i < nms; i++) {
		ms[i].have = fc_shadow.have[i];
		ms[i].have_known = true;
		fc_shadow.have[i] = (struct fc_kvs){ 0 };
	}
	if (!skip && !(ps.have = calloc(FC_POLICY_SLOTS, sizeof(*ps.have)))) {
		fc_err_set(err, "out of memory");
		goto out;
	}
	if (!skip && (fc_policies_read(m, ps.have, err) < 0 || fc_policies_apply(m, &ps, true, err) < 0))
		goto out;
	for (i = 0; i < nms; i++)
		if (fc_map_sync(&ms[i], res, err) < 0)
			goto out;
	/* After fc_pfx4: a /16 points the search at entries already there. */
	if (fc_top4_sync(m, &top4, &ms[FC_MS_PFX4], res, err) < 0)
		goto out;
	if (!skip && fc_policies_apply(m, &ps, false, err) < 0)
		goto out;
	res->cfg.n_exact4 = (__u32)ms[FC_MS_EXACT4].want.n;
	res->cfg.n_exact6 = (__u32)ms[FC_MS_EXACT6].want.n;
	res->cfg.n_pfx4 = (__u32)ms[FC_MS_PFX4].want.n;
	res->cfg.n_pfx6 = (__u32)ms[FC_MS_PFX6].want.n;
	res->cfg.n_top4 = top4.used;
	res->cfg.n_marks6 = (__u32)ms[FC_MS_PFX6].marks;
	memcpy(res->cfg.lens6, ms[FC_MS_PFX6].lens, sizeof(res->cfg.lens6));
	for (i = 0; i < npols; i++)
		res->cfg.n_policies += !fc_policy_is_l7(&pols[i].spec);
	/* What the ip=* buckets noted of the rules (struct fc_src_bucket) is void. */
	res->cfg.rules_gen = old.rules_gen + (res->added || res->changed || res->removed);
	res->policies_changed = ps.changed;
	if (getrandom(&res->cfg.publish_gen, sizeof(res->cfg.publish_gen), 0) != sizeof(res->cfg.publish_gen))
		res->cfg.publish_gen = 0; /* unknown: the next publish walks the maps */
	rc = fc_config_write(m, &res->cfg, err);
	if (rc == 0 && res->cfg.publish_gen) {
		/* What the maps now hold is what was wanted: keep it. */
		fc_shadow.gen = res->cfg.publish_gen;
		for (i = 0; i < nms; i++) {
			fc_shadow.have[i] = ms[i].want;
			ms[i].want = (struct fc_kvs){ 0 };
		}
	}
out:
	if (locked) {
		if (!fc_shadow.gen)
			for (i = 0; i < nms; i++) {
				free(fc_shadow.have[i].v);
				fc_shadow.have[i] = (struct fc_kvs){ 0 };
			}
		pthread_mutex_unlock(&fc_shadow.lock);
		fc_maps_unlock(m);
	}
	for (i = 0; i < nms; i++) {
		free(ms[i].want.v);
		free(ms[i].have.v);
	}
	free(top4.pfx.v);
	free(ps.want);
	free(ps.have);
	free(bans);
	free(pols);
	free(allows);
	return rc;
}
