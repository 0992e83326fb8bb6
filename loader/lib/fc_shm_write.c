// SPDX-License-Identifier: BSD-2-Clause
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>

#include "fc_shm_write.h"
#include "fc_sync.h"

int fc_shm_state_path(const char *path, char out[PATH_MAX], struct fc_err *err)
{
	if ((size_t)snprintf(out, PATH_MAX, "%s%s", path, FC_SHM_STATE_SUFFIX) >= PATH_MAX)
		return fc_err_set(err, "shm %s: path too long", path);
	return 0;
}

/* The workers' group: given, or the default where it exists. */
static int fc_shm_gid(const char *path, const char *group, gid_t *gid, struct fc_err *err)
{
	struct group *gr = getgrnam(group ? group : FC_SHM_GROUP_DEFAULT);

	if (!gr && group)
		return fc_err_set(err, "shm %s: --shm-group \"%s\": no such group", path, group);
	*gid = gr ? gr->gr_gid : (gid_t)-1;
	return 0;
}

/* Whether fd is a file of ours to keep: regular, owned by us, writable by
 * nobody else (but the group, for the state file), of this layout's size
 * (size 0: a state file of any key table size), and starting with its magic
 * and version. */
static bool fc_shm_ours(int fd, uint64_t size, __u32 magic, bool group_write, gid_t gid)
{
	mode_t bad = group_write ? S_IWOTH : (S_IWGRP | S_IWOTH);
	__u32 head[2] = { 0 };
	struct stat sb;

	return fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode) && sb.st_uid == geteuid() && !(sb.st_mode & bad) &&
	       (size ? (uint64_t)sb.st_size == size : fc_state_nkeys((uint64_t)sb.st_size) != 0) &&
	       (gid == (gid_t)-1 || sb.st_gid == gid) &&
	       pread(fd, head, sizeof(head), 0) == sizeof(head) && head[0] == magic && head[1] == FC_SHM_VERSION;
}

/*
 * Opens the file at path for writing if it is ours and whole; otherwise
 * makes a new one beside it (O_EXCL, so no one else's file or link is ever
 * followed), initialises it with init, and renames it over path. Mappers of
 * the old file keep it until they notice the new one.
 */
static int fc_shm_file(const char *path, uint64_t size, __u32 magic, mode_t mode, gid_t gid,
		       int (*init)(int fd, struct fc_err *err), struct fc_err *err)
{
	char tmp[PATH_MAX];
	int fd = open(path, O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);

	if (fd >= 0 && fc_shm_ours(fd, size, magic, mode & S_IWGRP, gid))
		return fd;
	if (fd < 0 && errno != ENOENT && errno != ELOOP)
		return fc_err_set(err, "shm %s: %s", path, strerror(errno));
	if (fd >= 0)
		close(fd);
	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.XXXXXX", path) >= sizeof(tmp))
		return fc_err_set(err, "shm %s: path too long", path);
	fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0)
		return fc_err_set(err, "shm %s: cannot create %s: %s", path, tmp, strerror(errno));
	if ((gid != (gid_t)-1 && fchown(fd, (uid_t)-1, gid) < 0) || fchmod(fd, mode) < 0 ||
	    ftruncate(fd, (off_t)(size ? size : FC_STATE_SIZE)) < 0) {
		fc_err_set(err, "shm %s: %s", tmp, strerror(errno));
		goto fail;
	}
	if (init(fd, err) < 0)
		goto fail;
	if (rename(tmp, path) < 0) {
		fc_err_set(err, "shm %s: cannot put %s in place: %s", path, tmp, strerror(errno));
		goto fail;
	}
	return fd;
fail:
	unlink(tmp);
	close(fd);
	return -1;
}

static int fc_shm_init_config(int fd, struct fc_err *err)
{
	struct fc_shm_header h = { .magic = FC_SHM_MAGIC, .version = FC_SHM_VERSION };

	if (getrandom(h.key_secret, sizeof(h.key_secret), 0) != (ssize_t)sizeof(h.key_secret))
		return fc_err_set(err, "shm: no random bytes for its key secret: %s", strerror(errno));
	if (pwrite(fd, &h, sizeof(h), 0) != (ssize_t)sizeof(h))
		return fc_err_set(err, "shm: writing its header: %s", strerror(errno));
	return 0;
}

static int fc_shm_init_state(int fd, struct fc_err *err)
{
	struct fc_shm_state_header h = { .magic = FC_SHM_STATE_MAGIC, .version = FC_SHM_VERSION };

	if (pwrite(fd, &h, sizeof(h), 0) != (ssize_t)sizeof(h))
		return fc_err_set(err, "shm state: writing its header: %s", strerror(errno));
	return 0;
}

/* A block being written: the inactive one. */
struct fc_blk {
	struct fc_shm_block *hdr;
	__u8 *pos, *end;
	__u32 nitems;
};

static void *fc_blk_item(struct fc_blk *b, size_t len, __u16 kind, struct fc_err *err)
{
	struct fc_shm_item *it;

	len = fc_shm_align8(len);
	if (len > 0xffff || (size_t)(b->end - b->pos) < len) {
		fc_err_set(err, "shm: the config block (%u MiB) is full", FC_SHM_BLOCK_SIZE >> 20);
		return NULL;
	}
	it = (struct fc_shm_item *)b->pos;
	memset(it, 0, len);
	it->magic = FC_SHM_ITEM_MAGIC;
	it->kind = kind;
	it->len = (__u16)len;
	b->pos += len;
	b->nitems++;
	return it;
}

/* How a dimension's value is published: "*" any value (a bucket per value),
 * a uri ending in a slash and a star a prefix, else the value itself. */
static __u8 fc_dim_flags(const struct fc_dim *dm, size_t *vl)
{
	*vl = strlen(dm->value);
	if (!strcmp(dm->value, "*")) {
		*vl = 0;
		return FC_SHM_DIM_ANY;
	}
	if (dm->kind == FC_DIM_URI && *vl >= 2 && !strcmp(dm->value + *vl - 2, "/*")) {
		(*vl)--;
		return FC_SHM_DIM_PREFIX;
	}
	return 0;
}

static int fc_blk_policy(struct fc_blk *b, const struct fc_policy_row *r, double weight, struct fc_err *err)
{
	const struct fc_policy_spec *p = &r->spec;
	struct fc_policy_spec scaled;
	size_t len = sizeof(struct fc_shm_policy), vl;
	struct fc_shm_policy *it;
	struct fc_policy k;
	__u8 *d;
	bool ip = p->kind == FC_MATCH_PREFIX || p->kind == FC_MATCH_STAR;
	int i, ndims = p->ndims + ip;

	for (i = 0; i < p->ndims; i++)
		len += (sizeof(struct fc_shm_dim) + strlen(p->dims[i].name) + strlen(p->dims[i].value) + 3) & ~3u;
	if (ip)
		len += sizeof(struct fc_shm_dim) + 2 + 16;
	it = fc_blk_item(b, len, FC_SHM_POLICY, err);
	if (!it)
		return -1;
	fc_policy_scale(p, weight, &scaled);
	fc_policy_compile(&scaled, r->epoch, &k);
	it->id = p->id;
	it->slot = r->slot;
	it->epoch = r->epoch;
	it->algo = (__u8)p->algo;
	it->action = (__u8)p->action;
	it->ndims = (__u8)ndims;
	it->ntiers = (__u8)p->ntiers;
	it->delay_burst = p->delay_burst;
	it->flags = k.flags | (p->escalate.n ? FC_SHM_POLICY_ESCALATE : 0) | (p->ndims ? 0 : FC_SHM_POLICY_HTTP);
	it->max_keys = p->max_keys; /* 0: as the table holds */
	it->new_keys = p->new_keys ? p->new_keys : FC_NEW_KEYS_DEFAULT;
	it->concurrency = scaled.concurrency;
	memcpy(it->tier, k.tier, sizeof(it->tier));
	it->warmup_ms = k.warmup_ms;
	d = (__u8 *)(it + 1);
	if (p->kind == FC_MATCH_STAR) { /* ip=* in nginx: a bucket per client address */
		struct fc_shm_dim *dim = (struct fc_shm_dim *)d;

		dim->kind = FC_DIM_IP;
		dim->flags = FC_SHM_DIM_ANY;
		d += sizeof(*dim);
	} else if (p->kind == FC_MATCH_PREFIX) {
		struct fc_shm_dim *dim = (struct fc_shm_dim *)d;
		size_t alen = p->ip.family == 4 ? 4 : 16;

		dim->kind = FC_DIM_IP;
		dim->value_len = (__u8)(2 + alen);
		d[sizeof(*dim)] = p->ip.family;
		d[sizeof(*dim) + 1] = p->ip.len;
		memcpy(d + sizeof(*dim) + 2, p->ip.a, alen);
		d += (sizeof(*dim) + 2 + alen + 3) & ~3u;
	}
	for (i = 0; i < p->ndims; i++) {
		struct fc_shm_dim *dim = (struct fc_shm_dim *)d;
		size_t nl = strlen(p->dims[i].name);

		dim->kind = (__u8)p->dims[i].kind;
		dim->flags = fc_dim_flags(&p->dims[i], &vl);
		dim->name_len = (__u8)nl;
		dim->value_len = (__u8)vl;
		memcpy(d + sizeof(*dim), p->dims[i].name, nl);
		memcpy(d + sizeof(*dim) + nl, p->dims[i].value, vl);
		d += (sizeof(*dim) + nl + vl + 3) & ~3u;
	}
	return 0;
}

/* Writes one ban into table at the first slot of its probe sequence that
 * does not carry stamp, its stamp last (release): a reader that sees the
 * stamp sees the rest. */
static int fc_ban_put(struct fc_shm_ban_slot *tab, __u32 stamp, const struct fc_shm_ban_slot *b)
{
	__u32 step, i;

	for (step = 0; step < FC_SHM_BAN_LEVELS + FC_SHM_BAN_PROBE; step++) {
		i = fc_shm_ban_probe(b->hash, step);
		if (tab[i].seq == stamp)
			continue;
		tab[i].family = b->family;
		tab[i].plen = b->plen;
		tab[i].hash = b->hash;
		tab[i].expires_ns = b->expires_ns;
		memcpy(tab[i].addr, b->addr, sizeof(b->addr));
		__atomic_store_n(&tab[i].seq, stamp, __ATOMIC_RELEASE);
		return 0;
	}
	return -1;
}

/* What the ban table holds: address bans, uid bans, then allow entries. */
struct fc_ban_set {
	const struct fc_ban_row *bans;
	size_t nbans;
	const struct fc_uid_ban *ubans;
	size_t nub;
	const struct fc_allow_row *allows;
	size_t nallows;
	const __u64 *secret; /* the header's key_secret, for uids' tags */
};

/* Entry i of the set as a table slot (its stamp aside). */
static void fc_ban_slot(struct fc_shm_ban_slot *b, const struct fc_ban_set *set, size_t i)
{
	const struct fc_allow_row *a = NULL;
	const struct fc_prefix *p = NULL;
	const char *uid = NULL;
	int64_t expires;

	memset(b, 0, sizeof(*b));
	if (i < set->nbans) {
		p = &set->bans[i].p;
		expires = set->bans[i].expires;
	} else if (i < set->nbans + set->nub) {
		uid = set->ubans[i - set->nbans].uid;
		expires = set->ubans[i - set->nbans].expires;
	} else {
		a = &set->allows[i - set->nbans - set->nub];
		p = a->p.family ? &a->p : NULL;
		uid = a->p.family ? NULL : a->uid;
		expires = a->expires;
		b->family = FC_SHM_BAN_ALLOW;
	}
	if (p) {
		b->family |= p->family;
		b->plen = p->len;
		memcpy(b->addr, p->a, 16);
		b->hash = fc_shm_ban_hash(b->family, b->plen, b->addr, p->family == 4 ? 4 : 16);
	} else {
		b->hash = fc_shm_uid_hash(set->secret, b->family, uid, (__u32)strlen(uid));
	}
	b->expires_ns = fc_expiry_ns(expires);
}

static size_t fc_ban_set_size(const struct fc_ban_set *set)
{
	return set->nbans + set->nub + set->nallows;
}

/* Of the whole ban set, whatever its order: a set that did not change is
 * not rewritten (a publish is mostly about something else). */
static __u64 fc_bans_digest(const struct fc_ban_set *set)
{
	struct fc_shm_ban_slot b;
	__u64 d = set->nbans * 0x9e3779b97f4a7c15ULL ^ set->nub ^ (__u64)set->nallows << 32, x;
	size_t i;

	for (i = 0; i < fc_ban_set_size(set); i++) {
		fc_ban_slot(&b, set, i);
		x = (b.hash ^ b.expires_ns * 0xbf58476d1ce4e5b9ULL) * 0x94d049bb133111ebULL;
		d += x ^ (x >> 31);
	}
	return d | 1; /* 0 is "never written" */
}

/* Publishes plens into the header's words, the lengths of both sets while
 * the switch to the table live happens. */
static void fc_plens_store(__u64 *words, const __u64 *plens, bool both)
{
	int i;

	for (i = 0; i < 4; i++)
		__atomic_store_n(&words[i], (both ? words[i] : 0) | plens[i], __ATOMIC_RELEASE);
}

/* Writes every live ban and allow entry into the inactive table, then makes it live. */
static int fc_bans_publish(struct fc_shm_header *h, void *base, const struct fc_ban_set *set, bool *written,
			   struct fc_err *err)
{
	__u64 live = __atomic_load_n(&h->ban_live, __ATOMIC_ACQUIRE), digest = fc_bans_digest(set);
	__u32 table = live ? !FC_SHM_BAN_TABLE(live) : 0, stamp = h->ban_stamp + 1 ? h->ban_stamp + 1 : 1;
	struct fc_shm_ban_slot *tab = (struct fc_shm_ban_slot *)((char *)base + FC_SHM_BANS_OFF(table)), b;
	__u64 plens[4] = { 0 }, aplens[4] = { 0 }, *pl;
	__u8 family;
	size_t i;
	int bit;

	*written = false;
	if (live && h->ban_digest == digest)
		return 0;
	/* Taken before any slot carries it: a failed write is never resumed. */
	h->ban_stamp = stamp;
	for (i = 0; i < fc_ban_set_size(set); i++) {
		fc_ban_slot(&b, set, i);
		pl = b.family & FC_SHM_BAN_ALLOW ? aplens : plens;
		family = b.family & ~FC_SHM_BAN_ALLOW;
		bit = family == 6 ? 64 + b.plen : b.plen;
		if (family)
			pl[bit / 64] |= 1ULL << (bit % 64);
		else
			pl[3] |= FC_SHM_BAN_UIDS;
		if (fc_ban_put(tab, stamp, &b) < 0)
			return fc_err_set(err, "shm: the ban table is full (%u slots)", FC_SHM_BAN_SLOTS);
	}
	/* Readers probe the lengths of both sets while the switch happens. */
	fc_plens_store(h->ban_plens, plens, true);
	fc_plens_store(h->allow_plens, aplens, true);
	h->ban_digest = digest;
	__atomic_store_n(&h->ban_live, FC_SHM_BAN_LIVE(stamp, table), __ATOMIC_RELEASE);
	fc_plens_store(h->ban_plens, plens, false);
	fc_plens_store(h->allow_plens, aplens, false);
	*written = true;
	return 0;
}

/* A new policy in a slot starts with zero state and counters; edits that
 * keep its match keep both. The owner word is written last, and cleared
 * first: workers skip a slot whose owner is not their policy's. */
static int fc_slot_claim(int state_fd, const struct fc_policy_row *r, struct fc_err *err)
{
	__u64 owner = FC_SHM_OWNER(r->spec.id, r->epoch), have = 0, zero[sizeof(struct fc_shm_slot) / 8] = { 0 };
	off_t off;

	if (r->slot < 1 || r->slot > FC_MAX_POLICIES)
		return fc_err_set(err, "policy %u: slot %u is out of range 1..%d", r->spec.id, r->slot, FC_MAX_POLICIES);
	off = (off_t)(FC_STATE_SLOTS_OFF + (__u64)r->slot * sizeof(struct fc_shm_slot));
	if (pread(state_fd, &have, sizeof(have), off + (off_t)offsetof(struct fc_shm_slot, owner)) == sizeof(have) &&
	    have == owner)
		return 0;
	if (pwrite(state_fd, zero, sizeof(owner), off + (off_t)offsetof(struct fc_shm_slot, owner)) != sizeof(owner) ||
	    pwrite(state_fd, zero, sizeof(struct fc_shm_slot), off) != sizeof(struct fc_shm_slot) ||
	    pwrite(state_fd, &owner, sizeof(owner), off + (off_t)offsetof(struct fc_shm_slot, owner)) != sizeof(owner))
		return fc_err_set(err, "shm state: slot %u: %s", r->slot, strerror(errno));
	return 0;
}

int fc_shm_publish(const char *path, const char *group, uint32_t keys, struct fc_store *st, int64_t now,
		   double weight, struct fc_shm_result *res, struct fc_err *err)
{
	size_t npols = 0, nbans = 0, nub = 0, nallows = 0, i;
	struct fc_allow_row *allows = NULL;
	struct fc_ban_set set;
	struct fc_policy_row *pols = NULL;
	struct fc_ban_row *bans = NULL;
	struct fc_uid_ban *ubans = NULL;
	char state_path[PATH_MAX];
	struct fc_shm_header *h;
	struct fc_shm_block *live;
	struct fc_blk b;
	void *base = NULL;
	int fd = -1, state_fd = -1, rc = -1;
	gid_t gid = (gid_t)-1;
	__u32 next;

	memset(res, 0, sizeof(*res));
	if (fc_store_policy_list(st, &pols, &npols, err) < 0 || fc_store_ban_list(st, now, &bans, &nbans, err) < 0 ||
	    fc_store_uid_ban_list(st, now, &ubans, &nub, err) < 0 ||
	    fc_store_allow_list(st, now, &allows, &nallows, err) < 0 || fc_shm_gid(path, group, &gid, err) < 0 ||
	    fc_shm_state_path(path, state_path, err) < 0)
		goto out;
	fd = fc_shm_file(path, FC_SHM_SIZE, FC_SHM_MAGIC, 0640, gid, fc_shm_init_config, err);
	if (fd < 0)
		goto out;
	state_fd = fc_shm_file(state_path, keys ? FC_STATE_SIZE_FOR(keys) : 0, FC_SHM_STATE_MAGIC, 0660, gid,
			       fc_shm_init_state, err);
	if (state_fd < 0)
		goto out;
	base = mmap(NULL, FC_SHM_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (base == MAP_FAILED) {
		base = NULL;
		fc_err_set(err, "shm %s: %s", path, strerror(errno));
		goto out;
	}
	h = base;
	if (h->magic != FC_SHM_MAGIC || h->version != FC_SHM_VERSION || h->active > 1) {
		fc_err_set(err, "shm %s: not a freqctl shm of version %d", path, FC_SHM_VERSION);
		goto out;
	}
	next = h->init ? !h->active : 0;
	b.hdr = (struct fc_shm_block *)((char *)base + FC_SHM_BLOCK_OFF(next));
	b.pos = (__u8 *)(b.hdr + 1);
	b.end = (__u8 *)b.hdr + FC_SHM_BLOCK_SIZE;
	b.nitems = 0;
	for (i = 0; i < npols; i++) {
		if (!fc_policy_is_l7(&pols[i].spec))
			continue;
		if (fc_slot_claim(state_fd, &pols[i], err) < 0 || fc_blk_policy(&b, &pols[i], weight, err) < 0)
			goto out;
		res->policies++;
	}
	set = (struct fc_ban_set){ bans, nbans, ubans, nub, allows, nallows, h->key_secret };
	if (fc_bans_publish(h, base, &set, &res->bans_written, err) < 0)
		goto out;
	res->ip_bans = nbans;
	res->uid_bans = nub;
	b.hdr->magic = FC_SHM_BLOCK_MAGIC;
	b.hdr->nitems = b.nitems;
	b.hdr->used = (__u64)(b.pos - (__u8 *)(b.hdr + 1));

	live = (struct fc_shm_block *)((char *)base + FC_SHM_BLOCK_OFF(h->active));
	res->seq = h->seq;
	if (h->init && live->magic == FC_SHM_BLOCK_MAGIC && live->used == b.hdr->used &&
	    live->nitems == b.hdr->nitems && !memcmp(live + 1, b.hdr + 1, b.hdr->used)) {
		rc = 0; /* nothing new to say */
		goto out;
	}
	b.hdr->seq = h->seq + 1;
	/* Release: a reader that sees the new seq sees the block behind it. */
	__atomic_store_n(&h->active, next, __ATOMIC_RELEASE);
	__atomic_store_n(&h->seq, h->seq + 1, __ATOMIC_RELEASE);
	__atomic_store_n(&h->init, 1, __ATOMIC_RELEASE);
	res->published = true;
	res->seq = h->seq;
	rc = 0;
out:
	if (base)
		munmap(base, FC_SHM_SIZE);
	if (fd >= 0)
		close(fd);
	if (state_fd >= 0)
		close(state_fd);
	free(pols);
	free(bans);
	free(ubans);
	free(allows);
	return rc;
}
