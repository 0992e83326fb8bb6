// SPDX-License-Identifier: BSD-2-Clause
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <bpf/bpf.h>

#include "fc_sync.h"

/* ENOTSUPP: the kernel's "this map type has no batch operation". */
#define FC_ENOTSUPP 524
#define FC_BATCH    8192

/* Scratch for one batch of keys and values (the CLI is single-threaded). */
static uint8_t fc_batch_keys[FC_BATCH * sizeof(struct fc_pfx6_key)];
static struct fc_ban fc_batch_vals[FC_BATCH];

/* One map entry; the key is at most a struct fc_pfx6_key. */
struct fc_kv {
	uint8_t key[sizeof(struct fc_pfx6_key)];
	struct fc_ban val;
};

struct fc_kvs {
	struct fc_kv *v;
	size_t n, cap;
};

/* What one map should hold, what it holds, and how to get from one to the other. */
struct fc_map_sync {
	const char *name;
	int fd;
	size_t keysz;
	struct fc_kvs want, have;
};

uint64_t fc_expiry_tai_ns(int64_t expires)
{
	struct timespec rt, tai;
	int64_t off;

	if (!expires)
		return 0;
	/* TAI - UTC is a whole number of seconds (0 unless NTP set it). */
	clock_gettime(CLOCK_REALTIME, &rt);
	clock_gettime(CLOCK_TAI, &tai);
	off = (int64_t)tai.tv_sec - (int64_t)rt.tv_sec + ((tai.tv_nsec - rt.tv_nsec) >= 500000000L ? 1 : 0);
	return (uint64_t)(expires + off) * 1000000000ULL;
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

/* Reads a whole map; batched where the map type supports it. */
static int fc_map_dump(struct fc_map_sync *ms, struct fc_err *err)
{
	LIBBPF_OPTS(bpf_map_batch_opts, opts);
	uint8_t *keys = fc_batch_keys, cur[sizeof(struct fc_pfx6_key)];
	struct fc_ban *vals = fc_batch_vals;
	__u64 in = 0, outb = 0;
	void *inp = NULL;
	struct fc_kv *kv;
	__u32 cnt, i;
	int rc;

	for (;;) {
		cnt = FC_BATCH;
		rc = bpf_map_lookup_batch(ms->fd, inp, &outb, keys, vals, &cnt, &opts);
		if (rc && errno != ENOENT)
			break;
		for (i = 0; i < cnt; i++) {
			if (!(kv = fc_kvs_push(&ms->have)))
				return fc_err_set(err, "out of memory reading map %s", ms->name);
			memcpy(kv->key, keys + i * ms->keysz, ms->keysz);
			kv->val = vals[i];
		}
		if (rc)
			return 0; /* ENOENT: that was the last batch */
		in = outb;
		inp = &in;
	}
	if (errno != EINVAL && errno != FC_ENOTSUPP && errno != EOPNOTSUPP)
		return fc_err_set(err, "map %s: batch lookup: %s", ms->name, strerror(errno));

	/* LPM tries have no batch lookup: walk the keys. */
	ms->have.n = 0;
	for (rc = bpf_map_get_next_key(ms->fd, NULL, cur); !rc; rc = bpf_map_get_next_key(ms->fd, cur, cur)) {
		if (!(kv = fc_kvs_push(&ms->have)))
			return fc_err_set(err, "out of memory reading map %s", ms->name);
		memcpy(kv->key, cur, ms->keysz);
		if (bpf_map_lookup_elem(ms->fd, cur, &kv->val))
			ms->have.n--; /* deleted under us; nothing to diff */
	}
	if (errno != ENOENT)
		return fc_err_set(err, "map %s: walking keys: %s", ms->name, strerror(errno));
	return 0;
}

/* Applies updates (vals != NULL) or deletions of n entries. */
static int fc_map_apply(struct fc_map_sync *ms, const struct fc_kv *kvs, size_t n, bool update,
			struct fc_err *err)
{
	LIBBPF_OPTS(bpf_map_batch_opts, opts);
	uint8_t *keys = fc_batch_keys;
	struct fc_ban *vals = fc_batch_vals;
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
			if (errno != EINVAL && errno != FC_ENOTSUPP && errno != EOPNOTSUPP)
				return fc_err_set(err, "map %s: batch %s: %s", ms->name,
						  update ? "update" : "delete", strerror(errno));
			batch = false; /* LPM tries: one at a time */
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

/* Diffs want against have (both sorted) and writes the difference. */
static int fc_map_sync(struct fc_map_sync *ms, struct fc_sync_result *res, struct fc_err *err)
{
	struct fc_kvs upd = {}, del = {};
	size_t i = 0, j = 0;
	struct fc_kv *kv;
	int rc = -1, c;

	if (fc_map_dump(ms, err) < 0)
		return -1;
	qsort_r(ms->want.v, ms->want.n, sizeof(struct fc_kv), fc_kv_cmp, &ms->keysz);
	qsort_r(ms->have.v, ms->have.n, sizeof(struct fc_kv), fc_kv_cmp, &ms->keysz);

	while (i < ms->want.n || j < ms->have.n) {
		if (i == ms->want.n)
			c = 1;
		else if (j == ms->have.n)
			c = -1;
		else
			c = memcmp(ms->want.v[i].key, ms->have.v[j].key, ms->keysz);
		if (c < 0 || (c == 0 && ms->want.v[i].val.expires_ns != ms->have.v[j].val.expires_ns)) {
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

int fc_sync(struct fc_store *st, const struct fc_maps *m, const char *pin_dir, int64_t now,
	    struct fc_sync_result *res, struct fc_err *err)
{
	struct fc_map_sync ms[] = {
		{ .name = FC_MAP_BAN_EXACT, .fd = m->exact, .keysz = sizeof(struct fc_addr) },
		{ .name = FC_MAP_BAN_PFX4, .fd = m->pfx4, .keysz = sizeof(struct fc_pfx4_key) },
		{ .name = FC_MAP_BAN_PFX6, .fd = m->pfx6, .keysz = sizeof(struct fc_pfx6_key) },
	};
	const size_t nms = sizeof(ms) / sizeof(ms[0]);
	struct fc_ban_row *rows = NULL;
	size_t n = 0, i;
	int rc = -1;

	memset(res, 0, sizeof(*res));
	if (fc_store_ban_list(st, now, &rows, &n, err) < 0)
		return -1;
	for (i = 0; i < n; i++) {
		const struct fc_prefix *p = &rows[i].p;
		struct fc_map_sync *dst = fc_prefix_is_exact(p) ? &ms[0] : p->family == 4 ? &ms[1] : &ms[2];
		struct fc_kv *kv = fc_kvs_push(&dst->want);

		if (!kv) {
			fc_err_set(err, "out of memory publishing %zu bans", n);
			goto out;
		}
		if (dst == &ms[0])
			fc_prefix_to_addr(p, (struct fc_addr *)kv->key);
		else if (dst == &ms[1])
			fc_prefix_to_pfx4(p, (struct fc_pfx4_key *)kv->key);
		else
			fc_prefix_to_pfx6(p, (struct fc_pfx6_key *)kv->key);
		kv->val.expires_ns = fc_expiry_tai_ns(rows[i].expires);
	}
	for (i = 0; i < nms; i++) {
		if (ms[i].want.n > FC_MAX_BANS) {
			fc_err_set(err, "map %s: %zu entries exceed its capacity of %d", ms[i].name, ms[i].want.n,
				   FC_MAX_BANS);
			goto out;
		}
	}
	if (fc_maps_lock(m, pin_dir, err) < 0)
		goto out;
	for (i = 0; i < nms; i++) {
		if (fc_map_sync(&ms[i], res, err) < 0) {
			fc_maps_unlock(m);
			goto out;
		}
	}
	res->cfg.n_exact = (__u32)ms[0].want.n;
	res->cfg.n_pfx4 = (__u32)ms[1].want.n;
	res->cfg.n_pfx6 = (__u32)ms[2].want.n;
	rc = fc_config_write(m, &res->cfg, err);
	fc_maps_unlock(m);
out:
	for (i = 0; i < nms; i++) {
		free(ms[i].want.v);
		free(ms[i].have.v);
	}
	free(rows);
	return rc;
}
