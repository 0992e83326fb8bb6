// SPDX-License-Identifier: BSD-2-Clause
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include "fc_shm_write.h"
#include "fc_sync.h"

static size_t fc_shm_file_size(void)
{
	return fc_shm_align8(sizeof(struct fc_shm_header)) + 2ULL * FC_SHM_BLOCK_SIZE +
	       (size_t)FC_SHM_SLOTS * sizeof(struct fc_shm_slot) +
	       (size_t)FC_SHM_BAN_SLOTS * sizeof(struct fc_shm_ban_slot) + sizeof(struct fc_shm_ring);
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

static int fc_blk_policy(struct fc_blk *b, const struct fc_policy_row *r, double weight, struct fc_err *err)
{
	const struct fc_policy_spec *p = &r->spec;
	struct fc_policy_spec scaled;
	size_t len = sizeof(struct fc_shm_policy);
	struct fc_shm_policy *it;
	struct fc_policy k;
	__u8 *d;
	int i, ndims = p->ndims + (p->kind == FC_MATCH_PREFIX);

	for (i = 0; i < p->ndims; i++)
		len += (sizeof(struct fc_shm_dim) + strlen(p->dims[i].name) + strlen(p->dims[i].value) + 3) & ~3u;
	if (p->kind == FC_MATCH_PREFIX)
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
	it->action = p->action == FC_ACTION_DELAY ? FC_L7_DELAY : p->action == FC_ACTION_LOG ? FC_L7_LOG : FC_L7_DROP;
	it->ndims = (__u8)ndims;
	it->ntiers = (__u8)p->ntiers;
	it->delay_burst = p->delay_burst;
	it->flags = k.flags | (p->escalate.n ? FC_SHM_POLICY_ESCALATE : 0);
	memcpy(it->tier, k.tier, sizeof(it->tier));
	d = (__u8 *)(it + 1);
	if (p->kind == FC_MATCH_PREFIX) {
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
		size_t nl = strlen(p->dims[i].name), vl = strlen(p->dims[i].value);

		dim->kind = (__u8)p->dims[i].kind;
		dim->name_len = (__u8)nl;
		dim->value_len = (__u8)vl;
		memcpy(d + sizeof(*dim), p->dims[i].name, nl);
		memcpy(d + sizeof(*dim) + nl, p->dims[i].value, vl);
		d += (sizeof(*dim) + nl + vl + 3) & ~3u;
	}
	return 0;
}

/* Stamps one ban into the table at the first level whose slot this publish
 * has not taken (the last level probes on), so readers can stop at the first
 * slot without the current stamp. */
static int fc_ban_put(struct fc_shm_ban_slot *tab, __u32 seq, const struct fc_shm_ban_slot *b)
{
	__u32 last = fc_shm_ban_index(0, FC_SHM_BAN_LEVELS - 1), size = fc_shm_ban_level[FC_SHM_BAN_LEVELS - 1];
	__u32 i = 0, k;
	int l;

	for (l = 0; l < FC_SHM_BAN_LEVELS; l++) {
		i = fc_shm_ban_index(b->hash, l);
		if (tab[i].seq != seq)
			goto take;
	}
	for (k = 1; k <= FC_SHM_BAN_PROBE; k++) {
		i = last + (__u32)((b->hash % size + k) % size);
		if (tab[i].seq != seq)
			goto take;
	}
	return -1;
take:
	/* Stamped first: a reader of the old view sees it as empty meanwhile. */
	__atomic_store_n(&tab[i].seq, seq, __ATOMIC_RELEASE);
	tab[i].family = b->family;
	tab[i].plen = b->plen;
	tab[i].hash = b->hash;
	tab[i].expires_ns = b->expires_ns;
	memcpy(tab[i].addr, b->addr, sizeof(b->addr));
	return 0;
}

/* Rewrites the ban table with every live ban, then makes it the valid one. */
static int fc_bans_publish(struct fc_shm_header *h, void *base, const struct fc_ban_row *bans, size_t nbans,
			   const struct fc_uid_ban *ubans, size_t nub, struct fc_err *err)
{
	struct fc_shm_ban_slot *tab = (struct fc_shm_ban_slot *)((char *)base + h->bans_off), b;
	__u32 seq = h->ban_seq + 1 ? h->ban_seq + 1 : 1;
	__u64 plens[4] = { 0 };
	size_t i;

	for (i = 0; i < nbans + nub; i++) {
		memset(&b, 0, sizeof(b));
		if (i < nbans) {
			const struct fc_prefix *p = &bans[i].p;

			b.family = p->family;
			b.plen = p->len;
			memcpy(b.addr, p->a, 16);
			b.hash = fc_shm_ban_hash(b.family, b.plen, b.addr, p->family == 4 ? 4 : 16);
			b.expires_ns = fc_expiry_ns(bans[i].expires);
			plens[(p->family == 6 ? 64 + p->len : p->len) / 64] |= 1ULL << ((p->family == 6 ? 64 + p->len : p->len) % 64);
		} else {
			const struct fc_uid_ban *u = &ubans[i - nbans];

			b.hash = fc_shm_ban_hash(0, 0, u->uid, (__u32)strlen(u->uid));
			b.expires_ns = fc_expiry_ns(u->expires);
		}
		if (fc_ban_put(tab, seq, &b) < 0)
			return fc_err_set(err, "shm: the ban table is full (%u slots)", FC_SHM_BAN_SLOTS);
	}
	for (i = 0; i < 4; i++)
		__atomic_store_n(&h->ban_plens[i], h->ban_plens[i] | plens[i], __ATOMIC_RELEASE);
	__atomic_store_n(&h->ban_seq, seq, __ATOMIC_RELEASE);
	for (i = 0; i < 4; i++)
		__atomic_store_n(&h->ban_plens[i], plens[i], __ATOMIC_RELEASE);
	return 0;
}

/* A new policy in a slot starts with zero state and counters; edits that
 * keep its match keep both. */
static void fc_slot_claim(struct fc_shm_slot *slots, const struct fc_policy_row *r)
{
	struct fc_shm_slot *s = &slots[r->slot];
	__u64 owner = FC_SHM_OWNER(r->spec.id, r->epoch);

	if (__atomic_load_n(&s->owner, __ATOMIC_ACQUIRE) == owner)
		return;
	__atomic_store_n(&s->owner, 0, __ATOMIC_RELEASE); /* readers skip it meanwhile */
	memset(s->state, 0, sizeof(s->state));
	s->passed = s->denied = s->delayed = 0;
	__atomic_store_n(&s->owner, owner, __ATOMIC_RELEASE);
}

static int fc_shm_open(const char *path, const char *group, int *fd, void **base, struct fc_err *err)
{
	size_t size = fc_shm_file_size();
	struct group *gr = NULL;
	struct stat sb;

	*fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0660);
	if (*fd < 0)
		return fc_err_set(err, "shm %s: %s", path, strerror(errno));
	if (fstat(*fd, &sb) < 0 || fchmod(*fd, 0660) < 0)
		goto fail;
	gr = getgrnam(group ? group : FC_SHM_GROUP_DEFAULT);
	if (!gr && group) {
		close(*fd);
		return fc_err_set(err, "shm %s: --shm-group \"%s\": no such group", path, group);
	}
	if (gr && fchown(*fd, (uid_t)-1, gr->gr_gid) < 0)
		goto fail;
	if ((size_t)sb.st_size != size && ftruncate(*fd, (off_t)size) < 0)
		goto fail;
	*base = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, *fd, 0);
	if (*base == MAP_FAILED)
		goto fail;
	return 0;
fail:
	fc_err_set(err, "shm %s: %s", path, strerror(errno));
	close(*fd);
	return -1;
}

int fc_shm_publish(const char *path, const char *group, struct fc_store *st, int64_t now, double weight,
		   struct fc_shm_result *res, struct fc_err *err)
{
	size_t size = fc_shm_file_size(), npols = 0, nbans = 0, nub = 0, i;
	struct fc_policy_row *pols = NULL;
	struct fc_ban_row *bans = NULL;
	struct fc_uid_ban *ubans = NULL;
	struct fc_shm_header *h;
	struct fc_shm_block *live;
	struct fc_shm_slot *slots;
	struct fc_blk b;
	void *base = NULL;
	int fd = -1, rc = -1;
	__u32 next;

	memset(res, 0, sizeof(*res));
	if (fc_store_policy_list(st, &pols, &npols, err) < 0 || fc_store_ban_list(st, now, &bans, &nbans, err) < 0 ||
	    fc_store_uid_ban_list(st, now, &ubans, &nub, err) < 0)
		goto out;
	if (fc_shm_open(path, group, &fd, &base, err) < 0)
		goto out;
	h = base;
	if (h->magic != FC_SHM_MAGIC || h->version != FC_SHM_VERSION || h->size != size || h->active > 1) {
		/* New, or another layout: start it over. */
		memset(h, 0, sizeof(*h));
		h->magic = FC_SHM_MAGIC;
		h->version = FC_SHM_VERSION;
		h->size = size;
		h->block_size = FC_SHM_BLOCK_SIZE;
		h->block_off[0] = fc_shm_align8(sizeof(*h));
		h->block_off[1] = h->block_off[0] + FC_SHM_BLOCK_SIZE;
		h->slots_off = h->block_off[1] + FC_SHM_BLOCK_SIZE;
		h->nslots = FC_SHM_SLOTS;
		h->bans_off = h->slots_off + (__u64)FC_SHM_SLOTS * sizeof(struct fc_shm_slot);
		h->nban_slots = FC_SHM_BAN_SLOTS;
		h->ring_off = h->bans_off + (__u64)FC_SHM_BAN_SLOTS * sizeof(struct fc_shm_ban_slot);
		h->ring_size = FC_SHM_RING_SIZE;
		memset((char *)base + h->block_off[0], 0, sizeof(struct fc_shm_block));
		memset((char *)base + h->block_off[1], 0, sizeof(struct fc_shm_block));
	}
	slots = (struct fc_shm_slot *)((char *)base + h->slots_off);
	next = h->init ? !h->active : 0;
	b.hdr = (struct fc_shm_block *)((char *)base + h->block_off[next]);
	b.pos = (__u8 *)(b.hdr + 1);
	b.end = (__u8 *)b.hdr + FC_SHM_BLOCK_SIZE;
	b.nitems = 0;
	for (i = 0; i < npols; i++) {
		if (!fc_policy_is_l7(&pols[i].spec))
			continue;
		fc_slot_claim(slots, &pols[i]);
		if (fc_blk_policy(&b, &pols[i], weight, err) < 0)
			goto out;
		res->policies++;
	}
	if (fc_bans_publish(h, base, bans, nbans, ubans, nub, err) < 0)
		goto out;
	res->ip_bans = nbans;
	res->uid_bans = nub;
	b.hdr->magic = FC_SHM_BLOCK_MAGIC;
	b.hdr->nitems = b.nitems;
	b.hdr->used = (__u64)(b.pos - (__u8 *)(b.hdr + 1));

	live = (struct fc_shm_block *)((char *)base + h->block_off[h->active]);
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
		munmap(base, size);
	if (fd >= 0)
		close(fd);
	free(pols);
	free(bans);
	free(ubans);
	return rc;
}

/* Maps an existing shm of this version (read-only, or read-write for the ring). */
static struct fc_shm_header *fc_shm_map(const char *path, bool writable, void **base, size_t *size,
					struct fc_err *err)
{
	struct fc_shm_header *h;
	int fd = open(path, (writable ? O_RDWR : O_RDONLY) | O_CLOEXEC);
	struct stat sb;

	*base = NULL;
	*size = fc_shm_file_size();
	if (fd < 0 || fstat(fd, &sb) < 0)
		fc_err_set(err, "shm %s: %s", path, strerror(errno));
	else if ((size_t)sb.st_size != *size)
		fc_err_set(err, "shm %s: not a freqctl shm of this version", path);
	else if ((*base = mmap(NULL, *size, PROT_READ | (writable ? PROT_WRITE : 0), MAP_SHARED, fd, 0)) == MAP_FAILED) {
		*base = NULL;
		fc_err_set(err, "shm %s: %s", path, strerror(errno));
	}
	if (fd >= 0)
		close(fd);
	if (!*base)
		return NULL;
	h = *base;
	if (h->magic != FC_SHM_MAGIC || h->version != FC_SHM_VERSION || h->size != *size ||
	    h->ring_size != FC_SHM_RING_SIZE || h->ring_off + sizeof(struct fc_shm_ring) > *size) {
		munmap(*base, *size);
		*base = NULL;
		fc_err_set(err, "shm %s: not a freqctl shm of this version", path);
		return NULL;
	}
	return h;
}

const struct fc_shm_slot *fc_shm_slots(const char *path, void **base, size_t *size, struct fc_err *err)
{
	const struct fc_shm_header *h = fc_shm_map(path, false, base, size, err);

	return h ? (const struct fc_shm_slot *)((const char *)*base + h->slots_off) : NULL;
}

const struct fc_shm_ring *fc_shm_ring_map(const char *path, void **base, size_t *size, struct fc_err *err)
{
	const struct fc_shm_header *h = fc_shm_map(path, false, base, size, err);

	return h ? (const struct fc_shm_ring *)((const char *)*base + h->ring_off) : NULL;
}
