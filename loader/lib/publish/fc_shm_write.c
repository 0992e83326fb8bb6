// SPDX-License-Identifier: BSD-2-Clause
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>

#include "fc_clock.h"
#include "fc_cmp.h"
#include "fc_enforce.h"
#include "fc_fleet_split.h"
#include "fc_owner.h"
#include "fc_shm_write.h"
#include "fc_step.h"

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
		       int (*init)(int fd, struct fc_err *err), bool *made, struct fc_err *err)
{
	char tmp[PATH_MAX];
	int fd = open(path, O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);

	/* Ours, but readable by others (a chmod -R): back to mode, as the
	 * state file keeps key values (--show-keys) and the config the key
	 * secret. */
	if (fd >= 0 && fc_shm_ours(fd, size, magic, mode & S_IWGRP, gid) && fchmod(fd, mode) == 0)
		return fd;
	*made = true;
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

/* What an item of the live block says of its policy's limits, as the
 * enforced-policy function takes them: their generation carried (pub). */
static void fc_item_enforced(const struct fc_shm_policy *it, struct fc_enforced *pub)
{
	pub->k.id = it->id;
	pub->k.epoch = it->epoch;
	pub->k.algo = it->algo;
	pub->k.ntiers = it->ntiers < FC_MAX_TIERS ? it->ntiers : FC_MAX_TIERS;
	memcpy(pub->k.tier, it->tier, sizeof(pub->k.tier));
	pub->k.warmup_ms = it->warmup_ms;
	pub->k.lim.gen = it->gen;
	memcpy(pub->k.lim.rescale, it->rescale, sizeof(pub->k.lim.rescale));
	pub->queue = it->action == FC_ACTION_DELAY ? it->delay_burst : 0;
	/* a fleet policy's tail: the window's split a rate edit keeps */
	if (it->flags & FC_SHM_POLICY_FLEET && it->item.len >= sizeof(*it) + sizeof(pub->fleet_tail)) {
		pub->k.flags |= FC_POLICY_FLEET;
		pub->fleet = true;
		memcpy(&pub->fleet_tail, it + 1, sizeof(pub->fleet_tail));
	}
}

/* The item of policy r, over what the live block says of it (live: its
 * item there, or NULL). */
static int fc_blk_policy(struct fc_blk *b, const struct fc_policy_row *r, const struct fc_node_ctx *node,
			 const struct fc_shm_policy *live, struct fc_err *err)
{
	const struct fc_policy_spec *p = &r->spec;
	size_t len = sizeof(struct fc_shm_policy), vl;
	struct fc_enforced e, pub;
	struct fc_shm_policy *it;
	__u8 *d;
	bool ip = p->kind == FC_MATCH_PREFIX || p->kind == FC_MATCH_STAR;
	int i, ndims = p->ndims + ip;

	for (i = 0; i < p->ndims; i++)
		len += (sizeof(struct fc_shm_dim) + strlen(p->dims[i].name) + strlen(p->dims[i].value) + 3) & ~3u;
	if (ip)
		len += sizeof(struct fc_shm_dim) + 2 + 16;
	if (p->fleet)
		len += sizeof(struct fc_shm_fleet);
	it = fc_blk_item(b, len, FC_SHM_POLICY, err);
	if (!it)
		return -1;
	memset(&pub, 0, sizeof(pub));
	if (live)
		fc_item_enforced(live, &pub);
	fc_policy_enforced(r, node, &pub, &e);
	it->id = p->id;
	it->slot = r->slot;
	it->epoch = r->epoch;
	it->algo = e.k.algo; /* a fleet policy's: FC_ALGO_FLEET_* */
	it->action = (__u8)p->action;
	it->ndims = (__u8)ndims;
	it->ntiers = (__u8)p->ntiers;
	it->delay_burst = p->delay_burst;
	/* FC_POLICY_FLEET is the kernel's flag; the item says FC_SHM_POLICY_FLEET. */
	it->flags = (e.k.flags & ~FC_POLICY_FLEET) | (p->escalate.n ? FC_SHM_POLICY_ESCALATE : 0) |
		    (p->ndims ? 0 : FC_SHM_POLICY_HTTP) | (e.show_keys ? FC_SHM_POLICY_SHOW_KEYS : 0) |
		    (e.fleet ? FC_SHM_POLICY_FLEET : 0);
	it->max_keys = p->max_keys; /* 0: as the table holds */
	it->new_keys = p->new_keys ? p->new_keys : FC_NEW_KEYS_DEFAULT;
	it->concurrency = e.concurrency;
	memcpy(it->tier, e.k.tier, sizeof(it->tier));
	it->warmup_ms = e.k.warmup_ms;
	it->gen = e.k.lim.gen;
	memcpy(it->rescale, e.k.lim.rescale, sizeof(it->rescale));
	d = (__u8 *)(it + 1);
	if (e.fleet) { /* the tail, before the dims (item.len covers it) */
		memcpy(d, &e.fleet_tail, sizeof(e.fleet_tail));
		d += sizeof(e.fleet_tail);
	}
	if (p->kind == FC_MATCH_STAR) { /* ip=* in nginx: a bucket per client unit */
		struct fc_shm_dim *dim = (struct fc_shm_dim *)d;

		dim->kind = FC_DIM_IP;
		dim->flags = FC_SHM_DIM_ANY;
		dim->value_len = 2;
		d[sizeof(*dim)] = e.star_len4;
		d[sizeof(*dim) + 1] = e.star_len6;
		d += (sizeof(*dim) + 2 + 3) & ~3u;
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

/* A ban as a table slot (its stamp and ver aside). */
static void fc_ban_slot_ip(struct fc_shm_ban_slot *b, const struct fc_prefix *p, uint64_t expires_ns)
{
	memset(b, 0, sizeof(*b));
	b->family = p->family;
	b->plen = p->len;
	memcpy(b->addr, p->a, 16);
	b->hash = fc_shm_ban_hash(b->family, b->plen, b->addr, p->family == 4 ? 4 : 16);
	b->expires_ns = expires_ns;
}

/* A uid's slot: its tag keyed by the header's key_secret (maps/fc_shm.h). */
static void fc_ban_slot_uid(struct fc_shm_ban_slot *b, const __u64 *secret, const char *uid, uint64_t expires_ns)
{
	memset(b, 0, sizeof(*b));
	b->hash = fc_shm_uid_hash(secret, 0, uid, (__u32)strlen(uid));
	b->expires_ns = expires_ns;
}

/* An allow entry as a table slot: FC_SHM_BAN_ALLOW in its family, which
 * its hash covers (an allow entry and a ban on one key are two slots). */
static void fc_ban_slot_allow(struct fc_shm_ban_slot *b, const __u64 *secret, const struct fc_allow_row *a)
{
	memset(b, 0, sizeof(*b));
	b->family = FC_SHM_BAN_ALLOW | a->p.family;
	if (a->p.family) {
		b->plen = a->p.len;
		memcpy(b->addr, a->p.a, 16);
		b->hash = fc_shm_ban_hash(b->family, b->plen, b->addr, a->p.family == 4 ? 4 : 16);
	} else {
		b->hash = fc_shm_uid_hash(secret, b->family, a->uid, (__u32)strlen(a->uid));
	}
	b->expires_ns = fc_expiry_ns(a->expires);
}

/* A ban's part of the ban set's digest, which is their sum: a set that did
 * not change is not rewritten, and a change in place keeps the sum. */
static __u64 fc_ban_mix(const struct fc_shm_ban_slot *b)
{
	__u64 x = (b->hash ^ b->expires_ns * 0xbf58476d1ce4e5b9ULL) * 0x94d049bb133111ebULL;

	return x ^ (x >> 31);
}

static bool fc_ban_same(const struct fc_shm_ban_slot *a, const struct fc_shm_ban_slot *b)
{
	return a->family == b->family && a->plen == b->plen && a->hash == b->hash &&
	       (!a->family || !memcmp(a->addr, b->addr, sizeof(a->addr)));
}

/* The bit of ban_plens (plens[0]; an allow entry: allow_plens, plens[1])
 * a slot needs readers to probe. */
static void fc_ban_plen(const struct fc_shm_ban_slot *b, __u64 plens[2][4])
{
	__u8 family = b->family & (__u8)~FC_SHM_BAN_ALLOW;
	__u64 *pl = plens[!!(b->family & FC_SHM_BAN_ALLOW)];
	int bit = family == 6 ? 64 + b->plen : b->plen;

	if (family)
		pl[bit / 64] |= 1ULL << (bit % 64);
	else
		pl[3] |= FC_SHM_BAN_UIDS;
}

/* The live bans, one slot per key: the sources of a key (by hand, sets)
 * merged, the longest ban holding (a set's member has no expiry: the set
 * lapses whole). bans are in address order, as the store lists them. Then
 * the allow entries, one slot each. */
static int fc_bans_effective(const __u64 *secret, const struct fc_ban_row *bans, size_t nbans,
			     const struct fc_uid_ban *ub, size_t nub, const struct fc_allow_row *al, size_t nal,
			     struct fc_shm_ban_slot **out, size_t *n, struct fc_err *err)
{
	struct fc_shm_ban_slot *v = calloc(nbans + nub + nal + 1, sizeof(*v));
	size_t i, o = 0;

	if (!v)
		return fc_err_set(err, "shm: out of memory");
	for (i = 0; i < nbans; i++) {
		uint64_t e = bans[i].set ? 0 : fc_expiry_ns(bans[i].expires);

		if (o && !memcmp(&bans[i].p, &bans[i - 1].p, sizeof(bans[i].p))) {
			if (v[o - 1].expires_ns && (!e || e > v[o - 1].expires_ns))
				v[o - 1].expires_ns = e;
			continue;
		}
		fc_ban_slot_ip(&v[o++], &bans[i].p, e);
	}
	for (i = 0; i < nub; i++)
		fc_ban_slot_uid(&v[o++], secret, ub[i].uid, fc_expiry_ns(ub[i].expires));
	for (i = 0; i < nal; i++)
		fc_ban_slot_allow(&v[o++], secret, &al[i]);
	*out = v;
	*n = o;
	return 0;
}

/* Writes one ban into a table being made, at the first slot of its probe
 * sequence that does not carry stamp, its stamp last (release): a reader
 * that sees the stamp sees the rest. */
static int fc_ban_put(struct fc_shm_ban_slot *tab, __u32 stamp, const struct fc_shm_ban_slot *b)
{
	__u32 step, i;

	for (step = 0; step < FC_SHM_BAN_LEVELS + FC_SHM_BAN_PROBE; step++) {
		i = fc_shm_ban_probe(b->hash, step);
		if (tab[i].seq == stamp)
			continue;
		tab[i].ver = 0;
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

static struct fc_shm_ban_slot *fc_ban_table(void *base, __u32 table)
{
	return (struct fc_shm_ban_slot *)((char *)base + FC_SHM_BANS_OFF(table));
}

/* Publishes plens into the header's words, the lengths of both sets while
 * the switch to the table live happens. */
static void fc_plens_store(__u64 *words, const __u64 *plens, bool both)
{
	int i;

	for (i = 0; i < 4; i++)
		__atomic_store_n(&words[i], (both ? words[i] : 0) | plens[i], __ATOMIC_RELEASE);
	fc_step("shm ban lengths");
}

/* Writes the bans into the inactive table, then makes it live; unless the
 * live table is known to hold the same (force: it is rewritten anyway). */
static int fc_bans_publish(struct fc_shm_header *h, void *base, const struct fc_shm_ban_slot *bans, size_t n, bool force,
			   bool *written, struct fc_err *err)
{
	__u64 live = __atomic_load_n(&h->ban_live, __ATOMIC_ACQUIRE), digest = 0, plens[2][4] = { { 0 } };
	__u32 table = live ? !FC_SHM_BAN_TABLE(live) : 0, stamp = h->ban_stamp + 1 ? h->ban_stamp + 1 : 1;
	struct fc_shm_ban_slot *tab = fc_ban_table(base, table);
	size_t i;

	*written = false;
	for (i = 0; i < n; i++) {
		digest += fc_ban_mix(&bans[i]);
		fc_ban_plen(&bans[i], plens);
	}
	if (live && !force && !(h->ban_gen & 1) && h->ban_digest == digest)
		return 0;
	/* Taken before any slot carries it: a failed write is never resumed. */
	h->ban_stamp = stamp;
	for (i = 0; i < n; i++)
		if (fc_ban_put(tab, stamp, &bans[i]) < 0)
			return fc_err_set(err, "shm: the ban table is full (%u slots)", FC_SHM_BAN_SLOTS);
	fc_step("shm ban table (inactive)");
	/* Readers probe the lengths of both sets while the switch happens. */
	fc_plens_store(h->ban_plens, plens[0], true);
	fc_plens_store(h->allow_plens, plens[1], true);
	h->ban_digest = digest;
	h->ban_used = (__u32)n;
	h->ban_dead = 0;
	__atomic_store_n(&h->ban_live, FC_SHM_BAN_LIVE(stamp, table), __ATOMIC_RELEASE);
	if (h->ban_gen & 1) /* a change in place cut short, or given up for this */
		__atomic_store_n(&h->ban_gen, h->ban_gen + 1, __ATOMIC_RELEASE);
	fc_step("shm ban table live");
	fc_plens_store(h->ban_plens, plens[0], false);
	fc_plens_store(h->allow_plens, plens[1], false);
	*written = true;
	return 0;
}

/* Gives a tombstone's slot another key under its seqlock: ver odd, the
 * fields, ver even. */
static void fc_ban_rewrite(struct fc_shm_ban_slot *s, const struct fc_shm_ban_slot *b)
{
	__u16 v = (__u16)(s->ver | 1);

	__atomic_store_n(&s->ver, v, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_RELEASE);
	s->family = b->family;
	s->plen = b->plen;
	s->hash = b->hash;
	s->expires_ns = b->expires_ns;
	memcpy(s->addr, b->addr, sizeof(b->addr));
	__atomic_store_n(&s->ver, (__u16)(v + 1), __ATOMIC_RELEASE);
}

#define FC_BAN_NONE UINT32_MAX
#define FC_SHM_BLOCK_CHUNK (256u << 10) /* bytes of a config block read at a time */

/* Where ban b's key is in the live table (*found), else the slot a new ban
 * of it takes: the first tombstone of its probe sequence, else its first
 * free slot; FC_BAN_NONE: no room. */
static __u32 fc_ban_find(const struct fc_shm_ban_slot *tab, __u32 stamp, const struct fc_shm_ban_slot *b, bool *found)
{
	__u32 step, i, room = FC_BAN_NONE;

	*found = false;
	for (step = 0; step < FC_SHM_BAN_LEVELS + FC_SHM_BAN_PROBE; step++) {
		i = fc_shm_ban_probe(b->hash, step);
		if (tab[i].seq != stamp)
			return room != FC_BAN_NONE ? room : i;
		if (tab[i].family == FC_SHM_BAN_DEAD) {
			room = room != FC_BAN_NONE ? room : i;
		} else if (fc_ban_same(&tab[i], b)) {
			*found = true;
			return i;
		}
	}
	return room;
}

/* Makes the live table hold ban b (want) or not, in place. 1: no slot left
 * for it (the table must be rebuilt). */
static int fc_ban_change(struct fc_shm_header *h, struct fc_shm_ban_slot *tab, __u32 stamp,
			 const struct fc_shm_ban_slot *b, bool want)
{
	__u64 plens[2][4] = { { 0 } };
	bool found;
	__u32 i = fc_ban_find(tab, stamp, b, &found), k;
	struct fc_shm_ban_slot *s = i == FC_BAN_NONE ? NULL : &tab[i];

	if (!found && !want)
		return 0;
	if (!s)
		return 1;
	if (found) {
		if (want && s->expires_ns == b->expires_ns)
			return 0;
		h->ban_digest -= fc_ban_mix(s);
		/* One word each, never under the seqlock: a reader must not
		 * miss a ban that stays while its expiry changes, however long
		 * the writer is preempted. */
		if (!want) {
			__atomic_store_n(&s->family, FC_SHM_BAN_DEAD, __ATOMIC_RELEASE);
			fc_step("shm ban lifted");
			h->ban_dead++;
			return 0;
		}
		h->ban_digest += fc_ban_mix(b);
		__atomic_store_n(&s->expires_ns, b->expires_ns, __ATOMIC_RELEASE);
		fc_step("shm ban expiry");
		return 0;
	}
	/* A new ban: readers probe its length before they can find it. */
	fc_ban_plen(b, plens);
	for (k = 0; k < 4; k++)
		if (plens[0][k] & ~h->ban_plens[k])
			__atomic_store_n(&h->ban_plens[k], h->ban_plens[k] | plens[0][k], __ATOMIC_RELEASE);
	fc_step("shm ban lengths");
	h->ban_digest += fc_ban_mix(b);
	if (s->seq == stamp) { /* a tombstone */
		fc_ban_rewrite(s, b);
		fc_step("shm ban (tombstone reused)");
		h->ban_dead--;
		return 0;
	}
	s->ver = 0;
	s->family = b->family;
	s->plen = b->plen;
	s->hash = b->hash;
	s->expires_ns = b->expires_ns;
	memcpy(s->addr, b->addr, sizeof(b->addr));
	__atomic_store_n(&s->seq, stamp, __ATOMIC_RELEASE);
	fc_step("shm ban added");
	h->ban_used++;
	return 0;
}

/* Tombstones are rebuilt away once they are many, and a quarter of the table's use. */
#define FC_BAN_DEAD_MAX 4096

/*
 * The changed bans, in the live table: new bans and new expiries first,
 * then the bans lifted, so that a source banned before and after (by a
 * prefix of another length, a set in another shape) is banned at every
 * instant between (doc/architecture.md, Publishing order). 1: the table
 * must be rebuilt.
 */
static int fc_bans_change(struct fc_shm_header *h, void *base, const struct fc_delta *d)
{
	__u64 live = __atomic_load_n(&h->ban_live, __ATOMIC_ACQUIRE);
	struct fc_shm_ban_slot *tab = fc_ban_table(base, FC_SHM_BAN_TABLE(live)), b;
	__u32 stamp = FC_SHM_BAN_STAMP(live);
	size_t i, j;
	bool want;
	int rc = 0, lift;

	__atomic_store_n(&h->ban_gen, (h->ban_gen + 1) | 1, __ATOMIC_RELEASE);
	for (lift = 0; lift < 2; lift++) {
		for (i = 0; i < d->nkeys && !rc; i = j) {
			uint64_t e = 0;

			for (want = false, j = i;
			     j < d->nkeys && !memcmp(&d->keys[j].p, &d->keys[i].p, sizeof(d->keys[i].p)); j++) {
				uint64_t k = d->keys[j].src ? 0 : fc_expiry_ns(d->keys[j].expires);

				if (d->keys[j].src < 0)
					continue;
				e = !want || (e && (!k || k > e)) ? k : e;
				want = true;
			}
			fc_ban_slot_ip(&b, &d->keys[i].p, e);
			if (want == !lift)
				rc = fc_ban_change(h, tab, stamp, &b, want);
		}
		for (i = 0; i < d->nuids && !rc; i++) {
			fc_ban_slot_uid(&b, h->key_secret, d->uids[i].uid, fc_expiry_ns(d->uids[i].expires));
			if (d->uids[i].live == !lift)
				rc = fc_ban_change(h, tab, stamp, &b, d->uids[i].live);
		}
	}
	if (rc || (h->ban_dead >= FC_BAN_DEAD_MAX && h->ban_dead * 4 > h->ban_used))
		return 1; /* left odd: the rebuild rewrites it all */
	__atomic_store_n(&h->ban_gen, h->ban_gen + 1, __ATOMIC_RELEASE);
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
	fc_step("shm state slot");
	return 0;
}

/* The config file, mapped, and the workers' state file. */
struct fc_shm_map {
	int fd, state_fd;
	void *base;
	struct fc_shm_header *h;
	bool made; /* a file was made anew: nothing in it to build on */
};

static void fc_shm_unmap(struct fc_shm_map *sm)
{
	if (sm->base)
		munmap(sm->base, FC_SHM_SIZE);
	if (sm->fd >= 0)
		close(sm->fd);
	if (sm->state_fd >= 0)
		close(sm->state_fd);
}

static int fc_shm_map(const char *path, const char *group, uint32_t keys, struct fc_shm_map *sm, struct fc_err *err)
{
	char state_path[PATH_MAX];
	gid_t gid = (gid_t)-1;
	struct stat sb;

	memset(sm, 0, sizeof(*sm));
	sm->fd = sm->state_fd = -1;
	/* Root refuses a config file another user made or may write (one of
	 * its own of another layout or group is replaced, below). */
	if (fc_owner_check(FC_OWNED_SHM, path, err) < 0 || fc_shm_gid(path, group, &gid, err) < 0 ||
	    fc_shm_state_path(path, state_path, err) < 0)
		return -1;
	sm->fd = fc_shm_file(path, FC_SHM_SIZE, FC_SHM_MAGIC, 0640, gid, fc_shm_init_config, &sm->made, err);
	if (sm->fd < 0)
		return -1;
	sm->base = mmap(NULL, FC_SHM_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, sm->fd, 0);
	if (sm->base == MAP_FAILED) {
		sm->base = NULL;
		fc_err_set(err, "shm %s: %s", path, strerror(errno));
		goto fail;
	}
	sm->h = sm->base;
	if (sm->h->magic != FC_SHM_MAGIC || sm->h->version != FC_SHM_VERSION || sm->h->active > 1) {
		fc_err_set(err, "shm %s: not a freqctl shm of version %d", path, FC_SHM_VERSION);
		goto fail;
	}
	/* Without --shm-keys, the table the config file names: a state file
	 * the workers' user resized is made anew, not taken as it is. */
	if (!keys && fc_state_nkeys(FC_STATE_SIZE_FOR(sm->h->state_keys)))
		keys = sm->h->state_keys;
	sm->state_fd = fc_shm_file(state_path, keys ? FC_STATE_SIZE_FOR(keys) : 0, FC_SHM_STATE_MAGIC, 0660, gid,
				   fc_shm_init_state, &sm->made, err);
	if (sm->state_fd < 0 || fstat(sm->state_fd, &sb) < 0) {
		if (sm->state_fd >= 0)
			fc_err_set(err, "shm state %s: %s", state_path, strerror(errno));
		goto fail;
	}
	sm->h->state_keys = fc_state_nkeys((uint64_t)sb.st_size);
	return 0;
fail:
	fc_shm_unmap(sm);
	return -1;
}

/* The header's fleet fields, before a block that may need them goes live:
 * the fleet's key (from the store: every node tags a key alike), a test's
 * clock offset, and when this node's state was made anew (a file made now,
 * or a header that never said: a fleet policy takes no share of a window
 * that began before; on the fleet policies' clock). */
static void fc_shm_fleet_header(const struct fc_shm_map *sm, const struct fc_node_ctx *node)
{
	int64_t offset = node->fleet ? node->fleet->clock_ns : 0;
	struct timespec ts;

	if (sm->made || !sm->h->fleet_fresh_ns) {
		clock_gettime(CLOCK_REALTIME, &ts);
		sm->h->fleet_fresh_ns = (__u64)ts.tv_sec * FC_NS_PER_SEC + (__u64)ts.tv_nsec + (__u64)offset;
	}
	sm->h->fleet_clock_ns = offset;
	if (node->fleet && node->fleet->on)
		memcpy(sm->h->fleet_secret, node->fleet->secret, sizeof(sm->h->fleet_secret));
}

/* The inactive config block, to fill. */
static void fc_blk_start(const struct fc_shm_map *sm, struct fc_blk *b)
{
	b->hdr = (struct fc_shm_block *)((char *)sm->base + FC_SHM_BLOCK_OFF(sm->h->init ? !sm->h->active : 0));
	b->pos = (__u8 *)(b->hdr + 1);
	b->end = (__u8 *)b->hdr + FC_SHM_BLOCK_SIZE;
	b->nitems = 0;
}

static const struct fc_shm_block *fc_blk_live(const struct fc_shm_map *sm)
{
	return (const struct fc_shm_block *)((const char *)sm->base + FC_SHM_BLOCK_OFF(sm->h->active));
}

/* Makes the inactive block (its header says seq + 1) live. Release: a
 * reader that sees the new seq sees the block behind it. */
static void fc_blk_switch(const struct fc_shm_map *sm, struct fc_shm_result *res)
{
	struct fc_shm_header *h = sm->h;

	__atomic_store_n(&h->active, h->init ? !h->active : 0, __ATOMIC_RELEASE);
	__atomic_store_n(&h->seq, h->seq + 1, __ATOMIC_RELEASE);
	__atomic_store_n(&h->init, 1, __ATOMIC_RELEASE);
	fc_step("shm config block live");
	res->published = true;
	res->seq = h->seq;
}

/* Makes the filled block live, unless it says what the live one does. */
static void fc_blk_flip(const struct fc_shm_map *sm, struct fc_blk *b, struct fc_shm_result *res)
{
	struct fc_shm_header *h = sm->h;
	const struct fc_shm_block *live = fc_blk_live(sm);

	b->hdr->magic = FC_SHM_BLOCK_MAGIC;
	b->hdr->nitems = b->nitems;
	b->hdr->used = (__u64)(b->pos - (__u8 *)(b->hdr + 1));
	res->seq = h->seq;
	if (h->init && live->magic == FC_SHM_BLOCK_MAGIC && live->used == b->hdr->used &&
	    live->nitems == b->hdr->nitems && !memcmp(live + 1, b->hdr + 1, b->hdr->used))
		return; /* nothing new to say */
	b->hdr->seq = h->seq + 1;
	fc_blk_switch(sm, res);
}

/* Clears the shm's mark before anything is written. */
static void fc_shm_unmark(struct fc_shm_header *h)
{
	__atomic_store_n(&h->store_seq, 0, __ATOMIC_RELEASE);
	__atomic_store_n(&h->store_id, 0, __ATOMIC_RELEASE);
}

/* The whole ban set of the store, rewritten into the inactive table (force)
 * or unless the live one holds it. */
static int fc_bans_rebuild(struct fc_shm_map *sm, struct fc_store *st, int64_t now, bool force, struct fc_shm_result *res,
			   struct fc_err *err)
{
	struct fc_shm_ban_slot *slots = NULL;
	struct fc_allow_row *allows = NULL;
	struct fc_ban_row *bans = NULL;
	struct fc_uid_ban *ubans = NULL;
	size_t nbans = 0, nub = 0, nallows = 0, n = 0;
	int rc = -1;

	if (fc_store_ban_list(st, now, &bans, &nbans, err) < 0 || fc_store_uid_ban_list(st, now, &ubans, &nub, err) < 0 ||
	    fc_store_allow_list(st, now, &allows, &nallows, err) < 0 ||
	    fc_bans_effective(sm->h->key_secret, bans, nbans, ubans, nub, allows, nallows, &slots, &n, err) < 0 ||
	    fc_bans_publish(sm->h, sm->base, slots, n, force, &res->bans_written, err) < 0)
		goto out;
	res->ip_bans = n - nub - nallows;
	res->uid_bans = nub;
	rc = 0;
out:
	free(slots);
	free(bans);
	free(ubans);
	free(allows);
	return rc;
}

/* The live block's items, walked in policy id order beside the store's
 * rows (both are in it): what each policy's new item carries on. */
struct fc_live_walk {
	const __u8 *p, *end;
	__u32 left;
};

static void fc_live_start(const struct fc_shm_map *sm, struct fc_live_walk *w)
{
	const struct fc_shm_block *live = fc_blk_live(sm);

	memset(w, 0, sizeof(*w));
	if (sm->made || !sm->h->init || live->magic != FC_SHM_BLOCK_MAGIC ||
	    live->used > FC_SHM_BLOCK_SIZE - sizeof(*live))
		return;
	w->p = (const __u8 *)(live + 1);
	w->end = w->p + live->used;
	w->left = live->nitems;
}

/* The live item of policy id, or NULL (ids asked in increasing order). A
 * block not as the loader writes them ends the walk. */
static const struct fc_shm_policy *fc_live_find(struct fc_live_walk *w, __u32 id)
{
	const struct fc_shm_policy *it;

	for (; w->left && (size_t)(w->end - w->p) >= sizeof(*it); w->left--) {
		it = (const struct fc_shm_policy *)w->p;
		if (it->item.magic != FC_SHM_ITEM_MAGIC || it->item.kind != FC_SHM_POLICY ||
		    it->item.len < sizeof(*it) || it->item.len > (size_t)(w->end - w->p)) {
			w->left = 0;
			break;
		}
		if (it->id > id)
			break;
		w->p += it->item.len;
		if (it->id == id) {
			w->left--;
			return it;
		}
	}
	return NULL;
}

int fc_shm_publish(const char *path, const char *group, uint32_t keys, struct fc_source *src, struct fc_shm_result *res,
		   struct fc_err *err)
{
	const struct fc_policy_row *pols;
	struct fc_live_walk live;
	struct fc_shm_map sm;
	struct fc_blk b;
	size_t i;
	int rc = -1;

	memset(res, 0, sizeof(*res));
	if (fc_source_policies(src, err) < 0 || fc_shm_map(path, group, keys, &sm, err) < 0)
		return -1;
	pols = src->pols;
	fc_shm_unmark(sm.h);
	fc_shm_fleet_header(&sm, &src->node);
	fc_live_start(&sm, &live);
	fc_blk_start(&sm, &b);
	for (i = 0; i < src->npols; i++) {
		if (!fc_policy_is_l7(&pols[i].spec))
			continue;
		if (fc_slot_claim(sm.state_fd, &pols[i], err) < 0 ||
		    fc_blk_policy(&b, &pols[i], &src->node, fc_live_find(&live, pols[i].spec.id), err) < 0)
			goto out;
		res->policies++;
	}
	if (fc_bans_rebuild(&sm, src->st, src->now, false, res, err) < 0)
		goto out;
	fc_blk_flip(&sm, &b, res);
	rc = 0;
out:
	fc_shm_unmap(&sm);
	return rc;
}

static int fc_row_id_cmp(const void *a, const void *b)
{
	return fc_u32_cmp(&((const struct fc_policy_row *)a)->spec.id, &((const struct fc_policy_row *)b)->spec.id);
}

/* A block written through the file, not the map: each page a process maps
 * costs it a fault (a dear one under a hypervisor), and a block of 65,536
 * policies is megabytes. Unchanged items are copied by the kernel. */
struct fc_blk_file {
	int fd;
	off_t at;      /* the block's offset in the file */
	__u64 used;    /* bytes of items written */
	__u32 nitems;
	__u8 buf[FC_SHM_BLOCK_CHUNK]; /* the live block, read a chunk at a time */
};

/* Copies len bytes of the file from off to the end of b. */
static int fc_blk_copy(struct fc_blk_file *b, off_t off, size_t len, struct fc_err *err)
{
	loff_t in = off, out = b->at + (off_t)sizeof(struct fc_shm_block) + (off_t)b->used;
	__u8 tmp[4096];
	ssize_t n;

	if (b->used + len > FC_SHM_BLOCK_SIZE - sizeof(struct fc_shm_block))
		return fc_err_set(err, "shm: the config block (%u MiB) is full", FC_SHM_BLOCK_SIZE >> 20);
	b->used += len;
	while (len) {
		n = copy_file_range(b->fd, &in, b->fd, &out, len, 0);
		if (n <= 0) { /* no kernel copy here: through a buffer */
			n = pread(b->fd, tmp, len < sizeof(tmp) ? len : sizeof(tmp), in);
			if (n <= 0 || pwrite(b->fd, tmp, (size_t)n, out) != n)
				return fc_err_set(err, "shm: writing the config block: %s", n < 0 ? strerror(errno) : "short");
			in += n;
			out += n;
		}
		len -= (size_t)n;
	}
	return 0;
}

/* Writes a new item for row r at the end of b, over live (its item in the
 * live block, or NULL). */
static int fc_blk_write_policy(struct fc_blk_file *b, int state_fd, const struct fc_policy_row *r,
			       const struct fc_node_ctx *node, const struct fc_shm_policy *live, struct fc_err *err)
{
	__u8 item[0x10000];
	struct fc_blk one = { .hdr = NULL, .pos = item, .end = item + sizeof(item) };
	size_t len;

	if (fc_slot_claim(state_fd, r, err) < 0 || fc_blk_policy(&one, r, node, live, err) < 0)
		return -1;
	len = (size_t)(one.pos - item);
	if (b->used + len > FC_SHM_BLOCK_SIZE - sizeof(struct fc_shm_block))
		return fc_err_set(err, "shm: the config block (%u MiB) is full", FC_SHM_BLOCK_SIZE >> 20);
	if (pwrite(b->fd, item, len, b->at + (off_t)sizeof(struct fc_shm_block) + (off_t)b->used) != (ssize_t)len)
		return fc_err_set(err, "shm: writing the config block: %s", strerror(errno));
	b->used += len;
	b->nitems++;
	return 0;
}

/*
 * The live block's items, but those of the changed policies (ids, sorted),
 * with items for the rows of nginx's changed policies (rows, sorted by id)
 * spliced in at their places: the block a full publish would write, as
 * items go in policy id order. Written into the inactive block, then made
 * live. 1: the live block is not one to build on.
 */
static int fc_blk_splice(const struct fc_shm_map *sm, const uint32_t *ids, size_t nids,
			 const struct fc_policy_row *rows, size_t nrows, const struct fc_node_ctx *node,
			 struct fc_shm_result *res, struct fc_err *err)
{
	const struct fc_shm_block *live = fc_blk_live(sm);
	struct fc_blk_file *b = malloc(sizeof(*b));
	off_t from = (off_t)FC_SHM_BLOCK_OFF(sm->h->active) + (off_t)sizeof(*live), chunk = 0, run = -1;
	__u64 used = live->used, off = 0;
	__u32 nitems = live->nitems, n;
	struct fc_shm_policy it, gone = { .id = 0 };
	struct fc_shm_block hdr;
	size_t r = 0, have = 0;
	bool more;
	int rc = -1;

	if (!b)
		return fc_err_set(err, "shm: out of memory");
	b->fd = sm->fd;
	b->at = (off_t)FC_SHM_BLOCK_OFF(sm->h->init ? !sm->h->active : 0);
	b->used = 0;
	b->nitems = 0;
	if (live->magic != FC_SHM_BLOCK_MAGIC || used > FC_SHM_BLOCK_SIZE - sizeof(*live)) {
		rc = 1;
		goto out;
	}
	for (n = 0;; n++) {
		more = n < nitems && used - off >= sizeof(it);
		if (more) {
			if (off < (__u64)chunk || off + sizeof(it) > (__u64)chunk + have) { /* the next chunk */
				chunk = (off_t)off;
				have = (size_t)(used - off < sizeof(b->buf) ? used - off : sizeof(b->buf));
				if (pread(b->fd, b->buf, have, from + chunk) != (ssize_t)have) {
					fc_err_set(err, "shm: reading the config block: %s", strerror(errno));
					goto out;
				}
			}
			memcpy(&it, b->buf + (off - (__u64)chunk), sizeof(it));
			if (it.item.magic != FC_SHM_ITEM_MAGIC || it.item.kind != FC_SHM_POLICY || it.item.len < sizeof(it) ||
			    it.item.len > used - off) {
				rc = 1;
				goto out;
			}
		}
		/* A run of unchanged items is copied whole, before anything new. */
		if (run >= 0 && (!more || bsearch(&it.id, ids, nids, sizeof(*ids), fc_u32_cmp) ||
				 (r < nrows && rows[r].spec.id < it.id))) {
			if (fc_blk_copy(b, from + run, (size_t)((off_t)off - run), err) < 0)
				goto out;
			run = -1;
		}
		/* A changed policy's item follows its old one (gone), if any. */
		for (; r < nrows && (!more || rows[r].spec.id < it.id); r++)
			if (fc_blk_write_policy(b, sm->state_fd, &rows[r], node,
						gone.id == rows[r].spec.id ? &gone : NULL, err) < 0)
				goto out;
		if (!more)
			break;
		if (!bsearch(&it.id, ids, nids, sizeof(*ids), fc_u32_cmp)) {
			run = run >= 0 ? run : (off_t)off;
			b->nitems++;
		} else {
			gone = it;
		}
		off += it.item.len;
	}
	hdr = (struct fc_shm_block){ .magic = FC_SHM_BLOCK_MAGIC, .nitems = b->nitems, .seq = sm->h->seq + 1,
				     .used = b->used };
	if (pwrite(b->fd, &hdr, sizeof(hdr), b->at) != (ssize_t)sizeof(hdr)) {
		fc_err_set(err, "shm: writing the config block: %s", strerror(errno));
		goto out;
	}
	res->policies = b->nitems;
	rc = 0;
out:
	free(b);
	return rc;
}

/* nginx's policies among the changed ones: the changed ids, and the rows
 * of those that are nginx's now (sorted by id). */
static int fc_blk_changes(const struct fc_delta *d, uint32_t **ids, size_t *nids, struct fc_policy_row **rows,
			  size_t *nrows, struct fc_err *err)
{
	size_t i, j;

	*ids = calloc(d->npols + 1, sizeof(**ids));
	*rows = calloc(d->npols + 1, sizeof(**rows));
	*nids = *nrows = 0;
	if (!*ids || !*rows)
		return fc_err_set(err, "shm: out of memory");
	for (i = 0; i < d->npols; i++) {
		const struct fc_policy_change *c = &d->pols[i];

		(*ids)[(*nids)++] = c->id;
		if (!c->found || !fc_policy_is_l7(&c->row.spec))
			continue;
		for (j = 0; j < *nrows && (*rows)[j].spec.id != c->row.spec.id; j++)
			;
		if (j == *nrows)
			(*rows)[(*nrows)++] = c->row;
	}
	qsort(*ids, *nids, sizeof(**ids), fc_u32_cmp);
	qsort(*rows, *nrows, sizeof(**rows), fc_row_id_cmp);
	return 0;
}

/* Whether a change was, or is, of one of nginx's policies. */
static bool fc_blk_touched(const struct fc_delta *d)
{
	size_t i;

	for (i = 0; i < d->npols; i++)
		if (d->pols[i].l7 || (d->pols[i].found && fc_policy_is_l7(&d->pols[i].row.spec)))
			return true;
	return false;
}

int fc_shm_publish_delta(const char *path, const char *group, uint32_t keys, struct fc_source *src,
			 const struct fc_delta *d, uint64_t store_id, uint64_t from, struct fc_shm_result *res,
			 struct fc_err *err)
{
	struct fc_policy_row *rows = NULL;
	uint32_t *ids = NULL;
	size_t nids = 0, nrows = 0;
	struct fc_shm_map sm;
	int rc = -1;

	memset(res, 0, sizeof(*res));
	if (fc_shm_map(path, group, keys, &sm, err) < 0)
		return -1;
	res->seq = sm.h->seq;
	if (sm.made || !sm.h->init || !sm.h->ban_live || (sm.h->ban_gen & 1) || sm.h->store_id != store_id ||
	    sm.h->store_seq != from) {
		rc = 1; /* nothing known to build on */
		goto out;
	}
	fc_shm_unmark(sm.h);
	fc_shm_fleet_header(&sm, &src->node);
	if (fc_blk_touched(d)) {
		if (fc_blk_changes(d, &ids, &nids, &rows, &nrows, err) < 0)
			goto out;
		rc = fc_blk_splice(&sm, ids, nids, rows, nrows, &src->node, res, err);
		if (rc)
			goto out;
		fc_blk_switch(&sm, res);
		rc = -1;
	}
	if ((d->nkeys || d->nuids) && fc_bans_change(sm.h, sm.base, d) &&
	    fc_bans_rebuild(&sm, src->st, src->now, true, res, err) < 0)
		goto out;
	rc = 0;
out:
	fc_shm_unmap(&sm);
	free(ids);
	free(rows);
	return rc;
}

/* Opens the config file at path if it is ours (as fc_shm_ours, any group). */
static int fc_shm_open_ours(const char *path, int flags)
{
	int fd = open(path, flags | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);

	if (fd >= 0 && !fc_shm_ours(fd, FC_SHM_SIZE, FC_SHM_MAGIC, false, (gid_t)-1)) {
		close(fd);
		fd = -1;
	}
	return fd;
}

int fc_shm_mark(const char *path, uint64_t store_id, uint64_t seq, struct fc_err *err)
{
	__u64 mark[2] = { store_id, seq };
	int fd = fc_shm_open_ours(path, O_RDWR), rc = 0;

	if (fd < 0)
		return fc_err_set(err, "shm %s: not ours to mark", path);
	if (pwrite(fd, mark, sizeof(mark), offsetof(struct fc_shm_header, store_id)) != sizeof(mark))
		rc = fc_err_set(err, "shm %s: %s", path, strerror(errno));
	close(fd);
	return rc;
}

/* Reads len bytes of the header of the shm at path, at off; zeros if there
 * is no shm of ours there. */
static void fc_shm_header_read(const char *path, size_t off, void *buf, size_t len)
{
	int fd = fc_shm_open_ours(path, O_RDONLY);

	if (fd < 0 || pread(fd, buf, len, (off_t)off) != (ssize_t)len)
		memset(buf, 0, len);
	if (fd >= 0)
		close(fd);
}

int64_t fc_shm_fleet_clock(const char *path)
{
	int64_t ns;

	fc_shm_header_read(path, offsetof(struct fc_shm_header, fleet_clock_ns), &ns, sizeof(ns));
	return ns >= -FC_FLEET_CLOCK_MAX_NS && ns <= FC_FLEET_CLOCK_MAX_NS ? ns : 0;
}

void fc_shm_fleet_held(const char *path, struct fc_fleet_cfg *cfg)
{
	struct fc_shm_map sm = { .fd = fc_shm_open_ours(path, O_RDONLY) };
	const struct fc_shm_policy *it;
	struct fc_shm_fleet tail;
	struct fc_live_walk w;
	size_t i;

	for (i = 0; i < cfg->npols; i++)
		cfg->pols[i].has_held = false;
	if (sm.fd < 0)
		return;
	sm.base = mmap(NULL, FC_SHM_SIZE, PROT_READ, MAP_SHARED, sm.fd, 0);
	close(sm.fd);
	if (sm.base == MAP_FAILED)
		return;
	sm.h = sm.base;
	fc_live_start(&sm, &w);
	for (i = 0; i < cfg->npols; i++) { /* both by id */
		struct fc_fleet_policy *fp = &cfg->pols[i];

		it = fc_live_find(&w, fp->id);
		if (!it || it->epoch != fp->epoch || !(it->flags & FC_SHM_POLICY_FLEET) ||
		    it->item.len < sizeof(*it) + sizeof(tail))
			continue;
		memcpy(&tail, it + 1, sizeof(tail));
		if (tail.node_no != cfg->node_no)
			continue;
		memcpy(fp->held, tail.split, sizeof(fp->held));
		fp->has_held = true;
	}
	munmap(sm.base, FC_SHM_SIZE);
}

void fc_shm_marked(const char *path, uint64_t *store_id, uint64_t *seq)
{
	__u64 mark[2];

	fc_shm_header_read(path, offsetof(struct fc_shm_header, store_id), mark, sizeof(mark));
	*store_id = mark[0];
	*seq = mark[1];
}

bool fc_shm_published(const char *path, uint64_t *store_id, uint64_t *seq)
{
	struct fc_shm_header h;
	struct stat sb;
	bool live;
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);

	live = fd >= 0 && fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode) && sb.st_size == (off_t)FC_SHM_SIZE &&
	       pread(fd, &h, sizeof(h), 0) == (ssize_t)sizeof(h) && h.magic == FC_SHM_MAGIC &&
	       h.version == FC_SHM_VERSION && h.init;
	if (fd >= 0)
		close(fd);
	*store_id = live ? h.store_id : 0;
	*seq = live ? h.store_seq : 0;
	return live;
}

int fc_shm_unpublish(const char *path, struct fc_err *err)
{
	char state[PATH_MAX];
	__u32 magic = 0;
	struct stat sb;
	int fd;

	if (fc_owner_check(FC_OWNED_SHM, path, err) < 0 || fc_shm_state_path(path, state, err) < 0)
		return -1;
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0 && errno != ENOENT)
		return fc_err_set(err, "shm %s: %s", path, strerror(errno));
	if (fd >= 0) {
		if (fstat(fd, &sb) < 0 || !S_ISREG(sb.st_mode) ||
		    pread(fd, &magic, sizeof(magic), 0) != sizeof(magic) || magic != FC_SHM_MAGIC) {
			close(fd);
			return fc_err_set(err, "shm %s: not a shm of freqctl's: left in place", path);
		}
		close(fd);
		if (unlink(path) < 0)
			return fc_err_set(err, "shm %s: %s", path, strerror(errno));
	}
	if (lstat(state, &sb) == 0 && S_ISREG(sb.st_mode) && unlink(state) < 0)
		return fc_err_set(err, "shm state %s: %s", state, strerror(errno));
	return 0;
}

/* One agent per shm writes the count: read, add, write back. */
int fc_shm_add_lost(const char *path, uint64_t n, struct fc_err *err)
{
	int fd = fc_shm_open_ours(path, O_RDWR), rc = 0;
	__u64 lost = 0;

	if (fd < 0)
		return fc_err_set(err, "shm %s: not ours to count in", path);
	if (pread(fd, &lost, sizeof(lost), offsetof(struct fc_shm_header, ring_lost)) != sizeof(lost))
		lost = 0;
	lost += n;
	if (pwrite(fd, &lost, sizeof(lost), offsetof(struct fc_shm_header, ring_lost)) != sizeof(lost))
		rc = fc_err_set(err, "shm %s: %s", path, strerror(errno));
	close(fd);
	return rc;
}

uint32_t fc_shm_state_keys(const char *path)
{
	__u32 keys;

	fc_shm_header_read(path, offsetof(struct fc_shm_header, state_keys), &keys, sizeof(keys));
	return fc_state_nkeys(FC_STATE_SIZE_FOR(keys)) ? keys : 0;
}

uint64_t fc_shm_lost(const char *path)
{
	__u64 lost;

	fc_shm_header_read(path, offsetof(struct fc_shm_header, ring_lost), &lost, sizeof(lost));
	return lost;
}
