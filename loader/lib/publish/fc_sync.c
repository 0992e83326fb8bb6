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
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "fc_clock.h"
#include "fc_cmp.h"
#include "fc_enforce.h"
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
	long count;  /* publishing what changed: entries added less entries deleted */
	long dmarks; /* the same for fc_pfx6's search markers */
	size_t marks;    /* fc_pfx6: search markers among want */
	__u64 lens[2];   /* fc_pfx6: bit L of lens[L / 64], the lengths of its prefixes */
};

/* The rule maps the store's rows make (FC_MS_COUNT), then fc_top6, made
 * from fc_pfx6's entries. */
enum { FC_MS_EXACT4, FC_MS_EXACT6, FC_MS_PFX4, FC_MS_PFX6, FC_MS_COUNT, FC_MS_TOP6 = FC_MS_COUNT, FC_MS_ALL };

/* What fc_top4 is made of: the IPv4 prefixes, folded, in address order,
 * and (whole) the addresses of fc_exact4. */
struct fc_top4_sync {
	struct fc_kvs pfx;
	const struct fc_kvs *exact; /* whole: fc_exact4's entries, sorted, for the FC_IN24_EXACT bits */
	bool whole;    /* look at every /16, not only where fc_pfx4 changed */
	__u32 used;    /* fc_top4 entries that are not empty (in: before, out: after) */
	size_t flips;  /* FC_IN24_EXACT bits set or cleared by fc_top4_exact */
	char *mem;     /* a mapping of the array's bytes off to off + size (fc_top4_view) */
	size_t off, size;
};

/* Scratch for one batch of keys and values (fc_batch_*), and so one publish
 * at a time in this process (the pin dir's flock serialises processes). */
static pthread_mutex_t fc_sync_lock = PTHREAD_MUTEX_INITIALIZER;
static uint8_t fc_batch_keys[FC_BATCH * sizeof(struct fc_pfx6_key)];
static struct fc_rule fc_batch_vals[FC_BATCH];

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

	if (fc_map_dump(ms, err) < 0)
		return -1;
	fc_kvs_sort(&ms->have, fc_kv_cmp, &ms->keysz);

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
	free(stack);
	free(next);
	return 0;
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
		if (fc_kv_markers(ms, ms->want.v[i], &ms->want, err) < 0)
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

/* The fc_top6 entry of kv, an entry of fc_pfx6 of its tree's root length. */
static void fc_kv_top6(const struct fc_kv *kv, struct fc_kv *top)
{
	uint32_t len;

	memset(top, 0, sizeof(*top));
	memcpy(top->key, fc_kv_addr(kv, &len), sizeof(struct fc_top6_key));
	top->val = kv->val;
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
	bool was;

	if (fc_top4_view(m, top4, idx, idx, err) < 0)
		return -1;
	t = fc_top4_at(top4, idx);
	if (!!(t->in24[a[2]] & FC_IN24_EXACT) == on)
		return 0;
	was = fc_top4_empty(t);
	*(volatile __u8 *)&t->in24[a[2]] = t->in24[a[2]] ^ FC_IN24_EXACT; /* one store: the packet path reads it */
	top4->flips++;
	top4->used += was;
	top4->used -= fc_top4_empty(t);
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

/*
 * Makes fc_top4 what the IPv4 prefixes say, in place through a mapping of
 * the array, at the /16s marked (bit idx of mark: those a changed prefix
 * covers or lies in) or, whole, at every /16. top4->pfx holds every prefix
 * covering or inside a marked /16. The FC_IN24_EXACT bits are made, whole,
 * from top4->exact (what fc_exact4 now holds), else kept as they are
 * (doc/architecture.md, Publishing order).
 */
static int fc_top4_sync(const struct fc_maps *m, struct fc_top4_sync *top4, uint64_t *mark,
			struct fc_sync_result *res, struct fc_err *err)
{
	const struct fc_kv *p = top4->pfx.v;
	uint32_t *cover = NULL, len, idx, end, i, lo, hi;
	struct fc_top4 *t, e;
	size_t j;
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
		memset(&e, 0, sizeof(e));
		if (cover[idx])
			e.rule = p[cover[idx] - 1].val;
		for (j = fc_top4_seek(p, top4->pfx.n, FC_KV_PFX4, idx);
		     j < top4->pfx.n && fc_kv_top4(&p[j], FC_KV_PFX4) == idx; j++) {
			fc_kv_addr(&p[j], &len);
			if (len > FC_TOP4_SHIFT)
				fc_top4_note(&e, &p[j]);
		}
		if (top4->whole)
			fc_top4_note_exact(&e, top4->exact, idx);
		else
			for (i = 0; i < 256; i++)
				e.in24[i] |= t->in24[i] & FC_IN24_EXACT;
		if (top4->whole) {
			top4->used += !fc_top4_empty(&e);
		} else if (fc_top4_empty(t) != fc_top4_empty(&e)) {
			top4->used += fc_top4_empty(t);
			top4->used -= fc_top4_empty(&e);
		}
		if (!memcmp(t, &e, sizeof(e)))
			continue;
		res->added += fc_top4_empty(t);
		res->removed += fc_top4_empty(&e);
		res->changed += !fc_top4_empty(t) && !fc_top4_empty(&e);
		memcpy(t, &e, sizeof(e));
	}
	rc = 0;
out:
	free(cover);
	return rc;
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
		[FC_MS_EXACT4] = { FC_MAP_NAME(exact4), m->exact4, sizeof(struct fc_addr4), 4, false, FC_MAX_RULES },
		[FC_MS_EXACT6] = { FC_MAP_NAME(exact6), m->exact6, sizeof(struct fc_addr6), 6, false, FC_MAX_RULES },
		[FC_MS_PFX4] = { FC_MAP_NAME(pfx4), m->pfx4, sizeof(struct fc_pfx4_key), 4, true, FC_MAX_RULES },
		[FC_MS_PFX6] = { FC_MAP_NAME(pfx6), m->pfx6, sizeof(struct fc_pfx6_key), 6, true, FC_MAX_RULES },
		[FC_MS_TOP6] = { FC_MAP_NAME(top6), m->top6, sizeof(struct fc_top6_key), 6, false, FC_MAX_RULES },
	};

	memcpy(ms, init, sizeof(init));
}

static void fc_rule_maps_free(struct fc_map_sync ms[FC_MS_ALL])
{
	size_t i;

	for (i = 0; i < FC_MS_ALL; i++) {
		free(ms[i].want.v);
		free(ms[i].have.v);
	}
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
		fc_policy_enforced(r, &src->node, &e);
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

/* Makes each rule map's want what the map should hold: entries of one key
 * merged, prefixes carrying what covers them, exact entries the allow
 * entries over them; fc_top6's made. Refuses more than a map holds. */
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
	return fc_want_top6(ms, err);
}

int fc_sync_full(struct fc_source *src, const struct fc_maps *m, struct fc_sync_result *res, struct fc_err *err)
{
	struct fc_map_sync ms[FC_MS_ALL];
	struct fc_policy_sync ps = { .ncpus = libbpf_num_possible_cpus() };
	struct fc_top4_sync top4 = { 0 };
	uint64_t mark[FC_TOP4_SLOTS / 64];
	struct fc_sync_result copies = { 0 };
	struct fc_allows al = { 0 };
	struct fc_config old;
	bool locked = false, skip;
	size_t i;
	int rc = -1;

	memset(res, 0, sizeof(*res));
	fc_rule_maps(ms, m);
	ps.want = calloc(FC_POLICY_SLOTS, sizeof(*ps.want));
	if (!ps.want || ps.ncpus <= 0) {
		fc_err_set(err, "out of memory");
		goto out;
	}
	res->cfg.utc_offset_ns = fc_utc_offset_ns();
	if (fc_allows_read(src->st, src->now, &al, err) < 0 || fc_want_collect(src, ms, &ps, &al, &res->cfg, err) < 0 ||
	    fc_want_finish(ms, &al, &top4, err) < 0)
		goto out;

	/* Written in an order that never uncovers what is covered before and
	 * after: slots taken, /24 bits, rule maps, fc_top6, fc_top4, slots freed
	 * (doc/architecture.md, Publishing order). */
	pthread_mutex_lock(&fc_sync_lock);
	locked = true;
	if (fc_config_read(m, &old, err) < 0)
		goto out;
	res->cfg.jiffies_utc_ns = fc_jiffies_utc_ns(res->cfg.utc_offset_ns);
	/* The array of 65,536 policies is read only when they changed. The
	 * marks (the digest, the change published) are cleared before anything
	 * is written, so what a publish cut short left is never trusted. */
	res->cfg.policies_digest = fc_policies_digest(ps.want, src->pols, src->npols);
	skip = old.policies_digest && old.policies_digest == res->cfg.policies_digest;
	/* A full publish repairs fc_top4 at every /16. */
	top4.whole = true;
	top4.used = old.n_top4;
	if ((!skip && old.policies_digest) || old.store_seq || old.store_id) {
		old.policies_digest = skip ? old.policies_digest : 0;
		old.store_id = old.store_seq = 0;
		if (fc_config_write(m, &old, err) < 0)
			goto out;
	}
	if (!skip && !(ps.have = calloc(FC_POLICY_SLOTS, sizeof(*ps.have)))) {
		fc_err_set(err, "out of memory");
		goto out;
	}
	if (!skip && (fc_policies_read(m, ps.have, err) < 0 || fc_policies_apply(m, &ps, true, err) < 0))
		goto out;
	/* The /24s' bits before fc_exact4's addresses in them, cleared (below)
	 * after those that went: a packet may meet a bit over no address, never
	 * an address without its bit. */
	if (fc_top4_exact_all(m, &top4, &ms[FC_MS_EXACT4].want, err) < 0)
		goto out;
	for (i = 0; i < FC_MS_COUNT; i++)
		if (fc_map_sync(&ms[i], res, err) < 0)
			goto out;
	/* After fc_pfx6: a /32 points the search at entries already there. */
	if (fc_map_sync(&ms[FC_MS_TOP6], &copies, err) < 0)
		goto out;
	res->copied = fc_sync_wrote(&copies);
	/* After fc_pfx4: a /16 points the search at entries already there. */
	top4.exact = &ms[FC_MS_EXACT4].want;
	if (fc_top4_sync(m, &top4, mark, res, err) < 0)
		goto out;
	if ((!skip && fc_policies_apply(m, &ps, false, err) < 0) ||
	    fc_setstats_sweep(src->st, m, src->now, ps.ncpus, err) < 0)
		goto out;
	res->cfg.n_exact4 = (__u32)ms[FC_MS_EXACT4].want.n;
	res->cfg.n_exact6 = (__u32)ms[FC_MS_EXACT6].want.n;
	res->cfg.n_pfx4 = (__u32)ms[FC_MS_PFX4].want.n;
	res->cfg.n_pfx6 = (__u32)ms[FC_MS_PFX6].want.n;
	res->cfg.n_top4 = top4.used;
	res->cfg.n_marks6 = (__u32)ms[FC_MS_PFX6].marks;
	res->cfg.pfx6_tree = FC_PFX6_TREE;
	memcpy(res->cfg.lens6, ms[FC_MS_PFX6].lens, sizeof(res->cfg.lens6));
	/* What the ip=* buckets noted of the rules (struct fc_src_bucket) is void. */
	res->changed += top4.flips;
	res->cfg.rules_gen = old.rules_gen + (fc_sync_wrote(res) || res->copied);
	res->cfg.exact4_gen = res->cfg.rules_gen; /* the bits are made whole */
	res->cfg.star_flags = fc_star_flags(&res->cfg);
	res->policies_changed = ps.changed;
	rc = fc_config_write(m, &res->cfg, err);
out:
	if (locked)
		pthread_mutex_unlock(&fc_sync_lock);
	fc_rule_maps_free(ms);
	fc_top4_unview(&top4);
	free(top4.pfx.v);
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

int fc_sync_mark(const struct fc_maps *m, uint64_t store_id, uint64_t seq, struct fc_err *err)
{
	struct fc_config cfg, old;

	if (fc_config_read(m, &cfg, err) < 0)
		return -1;
	old = cfg;
	cfg.store_id = store_id;
	cfg.store_seq = seq;
	/* Every publish ends here, even one with nothing to write: a step of
	 * the wall clock since the last is put right. */
	fc_clock_refresh(&cfg, &old);
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

/* Makes the entry kv->key of ms hold kv->val (want) or nothing (!want),
 * counting what it did, the search markers of fc_pfx6 too. What a delta
 * mostly does, add a new key or take one out, is one syscall (~30 us
 * here), which also tells whether the key was there and what it held. */
static int fc_entry_put(struct fc_map_sync *ms, const struct fc_kv *kv, bool want, struct fc_sync_result *res,
			struct fc_err *err)
{
	const char *op = want ? "update" : "delete";
	struct fc_rule have;
	bool had;

	if (want) {
		had = bpf_map_update_elem(ms->fd, kv->key, &kv->val, BPF_NOEXIST) != 0;
		if (had && errno != EEXIST)
			goto fail;
		if (had) {
			op = "lookup";
			if (bpf_map_lookup_elem(ms->fd, kv->key, &have))
				goto fail;
			if (!memcmp(&have, &kv->val, sizeof(have)))
				return 0;
			op = "update";
			if (bpf_map_update_elem(ms->fd, kv->key, &kv->val, BPF_EXIST))
				goto fail;
		}
	} else {
		had = !bpf_map_lookup_and_delete_elem(ms->fd, kv->key, &have);
		if (!had && errno != ENOENT)
			goto fail;
		if (!had)
			return 0;
	}
	ms->dmarks += (want && (kv->val.flags & FC_RULE_MARKER)) - (had && (have.flags & FC_RULE_MARKER));
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

/* The entry of want (sorted by key) with kv's key, or NULL. */
static const struct fc_kv *fc_want_find(const struct fc_map_sync *ms, const struct fc_kv *kv)
{
	size_t lo = 0, hi = ms->want.n, mid;
	int c;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		c = memcmp(ms->want.v[mid].key, kv->key, ms->keysz);
		if (!c)
			return &ms->want.v[mid];
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

/*
 * Recomputes, from the store, the prefix entries a change on p affects: those
 * inside its scope (fc_prefix_scope), each with what the prefixes covering
 * it say, and the search markers there; p's own entry and markers go when
 * nothing needs them any more; for IPv4, the fc_top4 entries of the /16s in
 * the scope; for IPv6, whether p's length is in use. The store rows read
 * are those covering the scope or inside it: all these entries are made of.
 * The one place that knows how prefix entries are kept, with fc_sync_full.
 */
static int fc_sync_prefix(struct fc_store *st, const struct fc_maps *m, struct fc_map_sync *all,
			  struct fc_top4_sync *top4, const struct fc_prefix *p, const struct fc_allows *al, int64_t now,
			  struct fc_sync_result *res, struct fc_err *err)
{
	struct fc_map_sync *ms = fc_map_of(all, p);
	struct fc_kvs mine = { 0 };
	struct fc_key_rule *rows = NULL;
	uint64_t mark[FC_TOP4_SLOTS / 64] = { 0 };
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
	free(top4->pfx.v);
	top4->pfx = (struct fc_kvs){ 0 };
	if (fc_want_prefixes(ms, top4, err) < 0)
		goto out;
	for (i = 0; i < ms->want.n; i++) {
		const uint8_t *a = fc_kv_addr(&ms->want.v[i], &len);

		if (fc_prefix_covers_bits(s.a, s.len, a, len) && fc_prefix_put(all, ms, &ms->want.v[i], true, res, err) < 0)
			goto out;
	}
	/* What p alone needed. */
	fc_kv_key(ms, p, &own);
	if (!fc_kvs_push(&mine)) {
		fc_err_set(err, "out of memory publishing map %s", ms->name);
		goto out;
	}
	mine.v[0] = own;
	if (ms->family == 6 && fc_kv_markers(ms, own, &mine, err) < 0)
		goto out;
	for (i = 0; i < mine.n; i++)
		if (!fc_want_find(ms, &mine.v[i]) && fc_prefix_put(all, ms, &mine.v[i], false, res, err) < 0)
			goto out;
	if (ms->family == 4) {
		fc_kv_key(ms, &s, &scope);
		fc_top4_mark(mark, &scope);
		if (fc_top4_sync(m, top4, mark, res, err) < 0)
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
out:
	ms->want.n = 0;
	free(mine.v);
	free(rows);
	return rc;
}

/* The rule entries of the changed keys: an exact address's from its rows, a
 * prefix's (and what it covers) by fc_sync_prefix. */
static int fc_sync_keys(struct fc_store *st, const struct fc_maps *m, struct fc_map_sync *ms, const struct fc_delta *d,
			const struct fc_allows *al, int64_t now, struct fc_top4_sync *top4, struct fc_sync_result *res,
			struct fc_err *err)
{
	struct fc_gone24 gone = { 0 };
	bool want, v4;
	struct fc_kv kv;
	size_t i, j;
	int rc = -1;

	for (i = 0; i < d->nkeys; i = j) {
		const struct fc_prefix *p = &d->keys[i].p;

		memset(&kv, 0, sizeof(kv));
		for (j = i; j < d->nkeys && !memcmp(&d->keys[j].p, p, sizeof(*p)); j++)
			fc_rule_fold(&kv.val, &d->keys[j]);
		if (!fc_prefix_is_exact(p)) {
			if (fc_sync_prefix(st, m, ms, top4, p, al, now, res, err) < 0)
				goto out;
			continue;
		}
		/* An entry for its ban or policy, or for an allow entry on it alone,
		 * carrying the allow entries covering it (a prefix's alone makes
		 * none: the prefix's entry answers). */
		want = kv.val.flags || kv.val.policy;
		want |= fc_allow_fold(&al->fam[p->family == 6], p->a, p->family == 4 ? 4 : 16, &kv.val);
		fc_kv_key(fc_map_of(ms, p), p, &kv);
		/* An IPv4 address's /24 bit is set before its entry is written, and
		 * looked at after the delta's entries are written. */
		v4 = p->family == 4;
		if ((v4 && want && fc_top4_exact(m, top4, p->a, true, err) < 0) ||
		    fc_entry_put(fc_map_of(ms, p), &kv, want, res, err) < 0 ||
		    (v4 && !want && fc_gone24_push(&gone, p->a, err) < 0))
			goto out;
	}
	rc = fc_top4_exact_gone(st, m, top4, &gone, now, err);
out:
	free(gone.v);
	return rc;
}

/* A changed slot's policy, as the maps should hold it (zero: none). */
static void fc_slot_want(const struct fc_policy_change *c, const struct fc_node_ctx *node, struct fc_policy *w)
{
	struct fc_enforced e;

	memset(w, 0, sizeof(*w));
	if (!c->found || fc_policy_is_l7(&c->row.spec))
		return;
	fc_policy_enforced(&c->row, node, &e);
	*w = e.k;
}

/* Writes the changed slots that are (live) or are no more occupied. */
static int fc_slots_apply(const struct fc_maps *m, struct fc_policy_sync *ps, const struct fc_delta *d,
			  const struct fc_node_ctx *node, bool live, struct fc_config *cfg, struct fc_err *err)
{
	struct fc_policy w, h;
	size_t i;
	int rc;

	for (i = 0; i < d->npols; i++) {
		__u32 slot = d->pols[i].slot;

		if (slot < 1 || slot > FC_MAX_POLICIES)
			continue;
		fc_slot_want(&d->pols[i], node, &w);
		if ((w.id != 0) != live)
			continue;
		if (bpf_map_lookup_elem(m->policies, &slot, &h))
			return fc_err_set(err, "map %s: slot %u: %s", FC_MAP_NAME(policies), slot, strerror(errno));
		rc = fc_slot_write(m, ps, slot, &w, &h, err);
		if (rc < 0)
			return -1;
		cfg->n_policies += rc ? (w.id != 0) - (h.id != 0) : 0;
	}
	return 0;
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
		fc_policy_enforced(&row, &src->node, &e);
	fc_star_fill(cfg, found ? &row : NULL, &e);
	return 0;
}

int fc_sync_delta(struct fc_source *src, const struct fc_maps *m, const struct fc_delta *d, struct fc_sync_result *res,
		  struct fc_err *err)
{
	struct fc_policy_sync ps = { .ncpus = libbpf_num_possible_cpus() };
	struct fc_map_sync ms[FC_MS_ALL];
	struct fc_top4_sync top4 = { 0 };
	struct fc_allows al = { 0 };
	struct fc_config old;
	bool star = false;
	size_t i;
	int rc = -1;

	memset(res, 0, sizeof(*res));
	fc_rule_maps(ms, m);
	pthread_mutex_lock(&fc_sync_lock);
	if (ps.ncpus <= 0) {
		fc_err_set(err, "cannot count possible CPUs");
		goto out;
	}
	/* A changed key's entry carries the allow entries covering it (an
	 * allow entry's own change is published whole: fc_delta.allows). */
	if (d->nkeys && fc_allows_read(src->st, src->now, &al, err) < 0)
		goto out;
	if (fc_config_read(m, &old, err) < 0)
		goto out;
	/* The marks first: a publish cut short is redone whole. */
	res->cfg = old;
	res->cfg.store_id = res->cfg.store_seq = 0;
	if (d->npols)
		res->cfg.policies_digest = 0;
	if (memcmp(&res->cfg, &old, sizeof(old)) && fc_config_write(m, &res->cfg, err) < 0)
		goto out;
	fc_clock_refresh(&res->cfg, &old);
	top4.used = old.n_top4;
	memcpy(ms[FC_MS_PFX6].lens, old.lens6, sizeof(old.lens6));
	if (fc_slots_apply(m, &ps, d, &src->node, true, &res->cfg, err) < 0 ||
	    fc_sync_keys(src->st, m, ms, d, &al, src->now, &top4, res, err) < 0 ||
	    fc_slots_apply(m, &ps, d, &src->node, false, &res->cfg, err) < 0)
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
	res->cfg.n_top4 = top4.used;
	res->cfg.n_marks6 += (__u32)ms[FC_MS_PFX6].dmarks;
	memcpy(res->cfg.lens6, ms[FC_MS_PFX6].lens, sizeof(res->cfg.lens6));
	/* What the ip=* buckets noted of the rules (struct fc_src_bucket) is void. */
	res->changed += top4.flips;
	res->cfg.rules_gen = old.rules_gen + (fc_sync_wrote(res) || res->copied);
	/* The bits stay whole if they were; if not (pins another version
	 * published) they stay untrusted, defensively: fc_publish_layers
	 * publishes everything onto such maps, never this delta. */
	res->cfg.exact4_gen = res->cfg.rules_gen + (old.exact4_gen != old.rules_gen);
	res->cfg.star_flags = fc_star_flags(&res->cfg);
	res->policies_changed = ps.changed;
	rc = fc_config_write(m, &res->cfg, err);
out:
	pthread_mutex_unlock(&fc_sync_lock);
	fc_rule_maps_free(ms);
	fc_top4_unview(&top4);
	free(top4.pfx.v);
	fc_allows_free(&al);
	return rc;
}
