// SPDX-License-Identifier: BSD-2-Clause
/*
 * Publishing what changed leaves what publishing everything leaves.
 *
 * Thousands of random changes to one store: bans by hand (exact and prefix
 * of every length, IPv4 and IPv6, some with TTLs that run out meanwhile),
 * uid bans, policies added, replaced and deleted (at XDP/TC and in nginx,
 * ip=*, /0, nested prefixes; one in four an override), ban sets replaced and
 * deleted (some lapsing), allow entries added and deleted (exact, prefix and
 * uid, IPv4 and IPv6, some with TTLs that run out meanwhile), the node's
 * weight, now and then a sync, a policy row a script left without its
 * address columns, a publish cut short. Each change is published as a command does,
 * to pin dir and shm A (only what changed, when the change log can say).
 * Every so often the same store is published whole to pin dir and shm B,
 * and A and B are compared: every rule map entry (fc_top6's too), fc_top4 whole, the
 * policy slots, the config, the shm's live config block byte for byte and its live ban table
 * ban for ban.
 *
 * On SQLite here; on PostgreSQL when FC_TEST_PG_DSN names a scratch database
 * (tests/integration/test_publish.sh). FC_CHURN_OPS (default 3000) and
 * FC_CHURN_SEED (default: the time, printed) make a run again.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <fcntl.h>
#include <bpf/bpf.h>

#include "fc_change.h"
#include "fc_duration.h"
#include "fc_feed.h"
#include "fc_publish.h"
#include "fc_test.h"
#include "fc_test_bpf.h"

#define FC_SLOTS_CMP 512 /* policy ids stay below this, and so their slots */

struct fc_churn {
	char dir[64], db[160];
	char pin[2][96], shm[2][96];
	struct fc_ctx ctx[2];
	struct fc_maps maps[2];
	struct fc_store *st;
	unsigned seed;
	size_t deltas, fulls, compares;
	uint8_t *exact24;   /* bit i: A's /24 i had its FC_IN24_EXACT bit at the last comparison */
	size_t set24, cleared24; /* such bits seen set, and seen cleared since */
};

static unsigned fc_rnd(struct fc_churn *c, unsigned n)
{
	return (unsigned)(rand_r(&c->seed) % n);
}

/* Both shms made, then B given A's key secret: a uid's slot is tagged with
 * its file's secret, so the two tables can be compared slot for slot. */
static void fc_churn_same_secret(struct fc_churn *c)
{
	struct fc_shm_header h;
	struct fc_publish pub;
	struct fc_err err;
	int i, fd;

	for (i = 0; i < 2; i++)
		if (fc_publish_begin_on(&pub, &c->ctx[i], c->st, &err) < 0 ||
		    (pub.full = true, fc_publish_commit(&pub, &err) < 0))
			fail_msg("publish %c: %s", 'A' + i, err.msg);
	fd = open(c->shm[0], O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(pread(fd, &h, sizeof(h), 0), sizeof(h));
	close(fd);
	fd = open(c->shm[1], O_WRONLY);
	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, h.key_secret, sizeof(h.key_secret), offsetof(struct fc_shm_header, key_secret)),
			 sizeof(h.key_secret));
	close(fd);
}

static int fc_churn_setup(void **state)
{
	struct fc_churn *c = calloc(1, sizeof(*c));
	const char *dsn = getenv("FC_TEST_PG_DSN"), *seed = getenv("FC_CHURN_SEED");
	struct fc_err err;
	int i;

	assert_non_null(c);
	*state = c;
	c->exact24 = calloc(1 << 21, 1);
	assert_non_null(c->exact24);
	if (fc_bpf_unavailable())
		return 0;
	c->seed = seed ? (unsigned)strtoul(seed, NULL, 10) : (unsigned)time(NULL);
	print_message("seed %u (FC_CHURN_SEED=%u runs this again)\n", c->seed, c->seed);
	snprintf(c->dir, sizeof(c->dir), "/tmp/fc-churn-%d", (int)getpid());
	snprintf(c->db, sizeof(c->db), "%s", dsn ? dsn : "");
	if (!dsn)
		snprintf(c->db, sizeof(c->db), "%s/store.db", c->dir);
	for (i = 0; i < 2; i++) {
		snprintf(c->pin[i], sizeof(c->pin[i]), "/sys/fs/bpf/fc-churn-%d-%c", (int)getpid(), 'a' + i);
		snprintf(c->shm[i], sizeof(c->shm[i]), "%s/shm-%c", c->dir, 'a' + i);
		c->ctx[i] = (struct fc_ctx){ .db_path = c->db, .pin_dir = c->pin[i], .shm_path = c->shm[i], .node = "test" };
		c->maps[i].dirfd = -1;
		memset(c->maps[i].fd, -1, sizeof(c->maps[i].fd));
	}
	if (mkdir(c->dir, 0700) < 0 || fc_store_open(c->db, &c->st, &err) < 0 || fc_maps_open(c->pin[0], &c->maps[0], &err) < 0 ||
	    fc_maps_open(c->pin[1], &c->maps[1], &err) < 0)
		fail_msg("%s", err.msg);
	fc_churn_same_secret(c);
	return 0;
}

static int fc_churn_teardown(void **state)
{
	struct fc_churn *c = *state;
	char path[256];
	size_t i, k;

	if (c->dir[0]) {
		fc_store_close(c->st);
		for (i = 0; i < 2; i++) {
			fc_maps_close(&c->maps[i]);
			for (k = 0; k < FC_NMAPS; k++) {
				snprintf(path, sizeof(path), "%s/%s", c->pin[i], fc_map_names[k]);
				unlink(path);
			}
			rmdir(c->pin[i]);
			unlink(c->shm[i]);
			snprintf(path, sizeof(path), "%s%s", c->shm[i], FC_SHM_STATE_SUFFIX);
			unlink(path);
		}
		for (k = 0; k < 3; k++) {
			snprintf(path, sizeof(path), "%s/store.db%s", c->dir, (const char *[]){ "", "-wal", "-shm" }[k]);
			unlink(path);
		}
		rmdir(c->dir);
	}
	free(c->exact24);
	free(c);
	return 0;
}

/* ---- random changes ---- */

/* An exact address one time in three, else a prefix of any length (IPv4
 * /1-/31, IPv6 /1-/127) around a few anchors, so that they nest, cover
 * each other across fc_top4's /16s and share fc_pfx6's search markers. */
static void fc_rnd_prefix(struct fc_churn *c, struct fc_prefix *p)
{
	struct fc_err err;
	char text[64];
	unsigned len;
	bool exact = !fc_rnd(c, 3);

	if (fc_rnd(c, 3)) {
		len = exact ? 32 : fc_rnd(c, 3) ? 16 + fc_rnd(c, 16) : 1 + fc_rnd(c, 15);
		/* Half the addresses few to a /24 over many: /24s lose their
		 * last one (fc_top4's FC_IN24_EXACT bit clears). */
		if (exact && fc_rnd(c, 2))
			snprintf(text, sizeof(text), "198.%u.%u.%u", 18 + fc_rnd(c, 2), fc_rnd(c, 64), fc_rnd(c, 4));
		else
			snprintf(text, sizeof(text), "198.%u.%u.%u", 18 + fc_rnd(c, 2), fc_rnd(c, 4), fc_rnd(c, 256));
	} else {
		len = exact ? 128 : fc_rnd(c, 3) ? 32 + fc_rnd(c, 96) : 1 + fc_rnd(c, 31);
		snprintf(text, sizeof(text), "2001:db%x:%x:%x::%x", 8 + fc_rnd(c, 2), fc_rnd(c, 4), fc_rnd(c, 4),
			 fc_rnd(c, 4));
	}
	if (fc_prefix_parse_ex(text, p, false, &err) < 0)
		fail_msg("%s: %s", text, err.msg);
	p->len = (uint8_t)len;
	for (; len < (p->family == 4 ? 32u : 128u); len++) /* host bits off */
		p->a[len / 8] &= (uint8_t)~(0x80 >> (len % 8));
}

/* A valid policy, or false when the draw made none. */
static bool fc_rnd_policy(struct fc_churn *c, struct fc_policy_spec *p)
{
	static const char *const rates[] = { "10/s", "100/m,1000/h", "5/s:9", "2/s,60/m" };
	static const char *const algos[] = { "gcra", "window", "sliding" };
	char match[96], pfx[FC_PREFIX_STRLEN];
	struct fc_prefix q;
	struct fc_err err;
	int algo;

	memset(p, 0, sizeof(*p));
	p->id = 1 + fc_rnd(c, 150);
	switch (fc_rnd(c, 6)) {
	case 0:
	case 1:
		fc_rnd_prefix(c, &q);
		fc_prefix_format(&q, pfx);
		snprintf(match, sizeof(match), "ip=%s", pfx);
		break;
	case 2:
		snprintf(match, sizeof(match), "uid=u%u", fc_rnd(c, 50));
		break;
	case 3:
		snprintf(match, sizeof(match), "arg:api=v%u,uid=*", fc_rnd(c, 20));
		break;
	case 4:
		if (fc_rnd(c, 4))
			snprintf(match, sizeof(match), "header:x-k=h%u", fc_rnd(c, 20));
		else
			snprintf(match, sizeof(match), "%s",
				 (const char *[]){ "ip=*", "ip=*", "ip=0.0.0.0/0", "ip=::/0" }[fc_rnd(c, 4)]);
		break;
	default:
		snprintf(match, sizeof(match), "ip=198.18.0.%u", fc_rnd(c, 256));
		p->layer = FC_LAYER_HTTP;
		break;
	}
	if (fc_match_parse(match, p, &err) < 0 || fc_rates_parse(rates[fc_rnd(c, 4)], p, &err) < 0 ||
	    fc_enum_parse("algo", algos[fc_rnd(c, 3)], fc_algo_names, &algo, &err) < 0)
		fail_msg("%s: %s", match, err.msg);
	p->algo = (enum fc_algo)algo;
	if (p->kind == FC_MATCH_STAR && !fc_rnd(c, 3))
		p->layer = FC_LAYER_HTTP;
	p->override = !fc_rnd(c, 4); /* --override: a flag of the compiled policy, both layers */
	return fc_policy_validate(p, &err) == 0;
}

/* One random change, in the open transaction. */
static int fc_churn_change(struct fc_churn *c, struct fc_publish *pub, struct fc_err *err)
{
	static const char *const sets[] = { "feed-a", "feed-b", "drop" };
	unsigned op = fc_rnd(c, 104), i, n;
	struct fc_allow_row al = { .created = pub->now };
	struct fc_ban_row row = { .created = pub->now };
	struct fc_uid_ban ub = { .created = pub->now };
	struct fc_policy_spec p;
	struct fc_policy_row pr;
	struct fc_set_result res;
	struct fc_feed feed = { 0 };
	struct fc_ban_set set;
	struct fc_node node = { .name = "test" };
	bool found;
	int rc;

	if (op >= 100) { /* allow entries: an address or prefix (v4, v6), a uid; one in three for 1 to 4 s */
		if (fc_rnd(c, 5))
			fc_rnd_prefix(c, &al.p);
		else
			snprintf(al.uid, sizeof(al.uid), "u%u", fc_rnd(c, 40));
		if (!fc_rnd(c, 3))
			return fc_store_allow_del(pub->st, &al, &found, err);
		al.expires = fc_rnd(c, 3) ? 0 : fc_expires_after(1 + fc_rnd(c, 4));
		return fc_store_allow_put(pub->st, &al, pub->now, &found, err);
	}
	if (op < 30) { /* a ban by hand, one in three for 1 to 4 s; some escalated */
		fc_rnd_prefix(c, &row.p);
		row.expires = fc_rnd(c, 3) ? 0 : fc_expires_after(1 + fc_rnd(c, 4));
		row.by_policy = fc_rnd(c, 10) ? 0 : 1 + fc_rnd(c, 150);
		return fc_store_ban_put(pub->st, &row, err);
	}
	if (op < 45) {
		fc_rnd_prefix(c, &row.p);
		return fc_store_ban_del(pub->st, &row.p, &found, err);
	}
	if (op < 53) { /* uid bans */
		snprintf(ub.uid, sizeof(ub.uid), "u%u", fc_rnd(c, 40));
		ub.expires = fc_rnd(c, 3) ? 0 : fc_expires_after(1 + fc_rnd(c, 4));
		return fc_rnd(c, 3) ? fc_store_uid_ban_put(pub->st, &ub, &found, pub->now, err) :
				      fc_store_uid_ban_del(pub->st, ub.uid, &found, err);
	}
	if (op < 70) {
		if (!fc_rnd_policy(c, &p))
			return 0;
		rc = fc_store_policy_put(pub->st, &p, pub->now, &pr, err);
		return rc == FC_STORE_REFUSED ? 0 : rc; /* a match another policy has */
	}
	if (op < 78)
		return fc_store_policy_del(pub->st, 1 + fc_rnd(c, 150), &found, err);
	if (op < 88) { /* a set replaced by another draw, one in four lapsing in 1 to 4 s */
		for (n = fc_rnd(c, 40), i = 0; i < n; i++) {
			fc_rnd_prefix(c, &row.p);
			if (fc_feed_add(&feed, &row.p, err) < 0)
				return -1;
		}
		fc_feed_sort(&feed);
		rc = fc_set_replace(pub, sets[fc_rnd(c, 3)], feed.v, feed.n,
				    fc_rnd(c, 4) ? 0 : fc_expires_after(1 + fc_rnd(c, 4)), NULL, NULL, &res, err);
		fc_feed_free(&feed);
		return rc;
	}
	if (op < 91) {
		if (fc_store_set_get(pub->st, sets[fc_rnd(c, 3)], pub->now, &set, &found, err) < 0)
			return -1;
		return found ? fc_store_set_del(pub->st, set.id, err) : 0;
	}
	if (op < 93) { /* the node's weight: every policy changes */
		node.weight = fc_rnd(c, 2) ? 1 : 0.5;
		return fc_store_node_put(pub->st, &node, err);
	}
	if (op < 95) {
		pub->full = true; /* freqctl sync */
		return 0;
	}
	if (op < 97) { /* a script rewrote a policy's row without its address columns */
		if (fc_store_policy_get(pub->st, 1 + fc_rnd(c, 150), &pr, &found, err) < 0)
			return -1;
		pr.spec.kind = FC_MATCH_STAR; /* as written: the columns emptied */
		return found ? fc_store_policy_ip_fix(pub->st, &pr.spec, err) : 0;
	}
	/* A change that a publish cut short left half done: only the mark
	 * cleared (what it wrote is the store's anyway). */
	if (fc_rnd(c, 2))
		return fc_sync_mark(&c->maps[0], 0, 0, 0, err);
	return access(pub->ctx->shm_path, F_OK) ? 0 : fc_shm_mark(pub->ctx->shm_path, 0, 0, err);
}

/* ---- comparing A and B ---- */

struct fc_entry {
	uint8_t key[sizeof(struct fc_pfx6_key)];
	struct fc_top6 val; /* .rule alone, but in fc_top6 */
};

static int fc_entry_cmp(const void *a, const void *b)
{
	return memcmp(a, b, sizeof(struct fc_entry));
}

/* A rule map's entries, sorted. */
static struct fc_entry *fc_map_entries(int fd, size_t keysz, size_t *n)
{
	uint8_t cur[sizeof(struct fc_pfx6_key)];
	struct fc_entry *v = NULL;
	size_t cap = 0;
	int rc;

	*n = 0;
	for (rc = bpf_map_get_next_key(fd, NULL, cur); !rc; rc = bpf_map_get_next_key(fd, cur, cur)) {
		if (*n == cap) {
			cap = cap ? cap * 2 : 256;
			v = realloc(v, cap * sizeof(*v));
			assert_non_null(v);
		}
		memset(&v[*n], 0, sizeof(v[*n]));
		memcpy(v[*n].key, cur, keysz);
		assert_int_equal(bpf_map_lookup_elem(fd, cur, &v[*n].val), 0);
		(*n)++;
	}
	if (*n)
		qsort(v, *n, sizeof(*v), fc_entry_cmp);
	return v;
}

/* fc_top4, whole, through a mapping; the FC_IN24_EXACT bits published
 * whole are those of the /24s fc_exact4 holds addresses in. */
static void fc_cmp_top4(struct fc_churn *c)
{
	const size_t size = (size_t)FC_TOP4_SLOTS * sizeof(struct fc_top4);
	const struct fc_top4 *t[2];
	uint8_t *want = calloc(1 << 21, 1);
	struct fc_entry *e;
	size_t i, idx, n, in24;
	bool bit;

	assert_non_null(want);
	for (i = 0; i < 2; i++) {
		t[i] = mmap(NULL, size, PROT_READ, MAP_SHARED, c->maps[i].top4, 0);
		assert_true(t[i] != MAP_FAILED);
	}
	for (idx = 0; idx < FC_TOP4_SLOTS && !memcmp(&t[0][idx], &t[1][idx], sizeof(t[0][idx])); idx++)
		;
	if (idx < FC_TOP4_SLOTS)
		fail_msg("map %s: the /16 %zu.%zu.0.0 published by changes differs from the one published whole",
			 FC_MAP_NAME(top4), idx >> 8, idx & 0xff);
	e = fc_map_entries(c->maps[1].exact4, sizeof(struct fc_addr4), &n);
	for (i = 0; i < n; i++) {
		in24 = (size_t)e[i].key[0] << 16 | (size_t)e[i].key[1] << 8 | e[i].key[2];
		want[in24 / 8] |= (uint8_t)(1u << (in24 % 8));
	}
	for (in24 = 0; in24 < (size_t)FC_TOP4_SLOTS << 8; in24++) {
		bit = t[1][in24 >> 8].in24[in24 & 0xff] & FC_IN24_EXACT;
		if (bit != !!(want[in24 / 8] & (1u << (in24 % 8))))
			fail_msg("map %s: the /24 %zu.%zu.%zu.0: FC_IN24_EXACT %s, fc_exact4 %s an address there",
				 FC_MAP_NAME(top4), in24 >> 16, (in24 >> 8) & 0xff, in24 & 0xff, bit ? "set" : "clear",
				 bit ? "holds no" : "holds");
		/* Against the last comparison (A and B are equal by now). */
		c->set24 += bit && !(c->exact24[in24 / 8] & (1u << (in24 % 8)));
		c->cleared24 += !bit && (c->exact24[in24 / 8] & (1u << (in24 % 8)));
	}
	memcpy(c->exact24, want, 1 << 21);
	free(e);
	free(want);
	for (i = 0; i < 2; i++)
		munmap((void *)t[i], size);
}

/* Fails naming the first entry the maps do not agree on. */
static void fc_entries_differ(const char *name, size_t keysz, const struct fc_entry *ea, size_t na,
			      const struct fc_entry *eb, size_t nb)
{
	const struct fc_entry *e;
	char key[2 * sizeof(ea->key) + 1];
	size_t i = 0, j = 0, k;
	int c;

	while (i < na && j < nb && !(c = memcmp(&ea[i], &eb[j], sizeof(*ea))))
		i++, j++;
	if (i == na && j == nb)
		return;
	c = i == na ? 1 : j == nb ? -1 : memcmp(ea[i].key, eb[j].key, keysz);
	e = c <= 0 ? &ea[i] : &eb[j];
	for (k = 0; k < keysz; k++)
		snprintf(key + 2 * k, 3, "%02x", e->key[k]);
	fail_msg("map %s: %zu entries published by changes, %zu whole; first difference at key %s: %s "
		 "(flags %#x, policy %u, ban until %llu, allowed until %llu)%s",
		 name, na, nb, key, c < 0 ? "only by changes" : c > 0 ? "only whole" : "by changes", e->val.rule.flags,
		 e->val.rule.policy, (unsigned long long)e->val.rule.ban_expires_ns,
		 (unsigned long long)e->val.rule.allow_expires_ns,
		 c ? "" : " (whole differs)");
}

static void fc_cmp_maps(struct fc_churn *c)
{
	static const size_t keysz[5] = { sizeof(struct fc_addr4), sizeof(struct fc_addr6), sizeof(struct fc_pfx4_key),
					 sizeof(struct fc_pfx6_key), sizeof(struct fc_top6_key) };
	static const char *const names[5] = { FC_MAP_NAME(exact4), FC_MAP_NAME(exact6), FC_MAP_NAME(pfx4),
					      FC_MAP_NAME(pfx6), FC_MAP_NAME(top6) };
	const int fds[2][5] = {
		{ c->maps[0].exact4, c->maps[0].exact6, c->maps[0].pfx4, c->maps[0].pfx6, c->maps[0].top6 },
		{ c->maps[1].exact4, c->maps[1].exact6, c->maps[1].pfx4, c->maps[1].pfx6, c->maps[1].top6 }
	};
	struct fc_policy pa, pb;
	struct fc_config ca, cb;
	struct fc_entry *ea, *eb;
	struct fc_err err;
	size_t na, nb, i;
	__u32 slot;

	for (i = 0; i < 5; i++) {
		ea = fc_map_entries(fds[0][i], keysz[i], &na);
		eb = fc_map_entries(fds[1][i], keysz[i], &nb);
		if (na != nb || (na && memcmp(ea, eb, na * sizeof(*ea))))
			fc_entries_differ(names[i], keysz[i], ea, na, eb, nb);
		free(ea);
		free(eb);
	}
	fc_cmp_top4(c);
	for (slot = 1; slot < FC_SLOTS_CMP; slot++) {
		assert_int_equal(bpf_map_lookup_elem(c->maps[0].policies, &slot, &pa), 0);
		assert_int_equal(bpf_map_lookup_elem(c->maps[1].policies, &slot, &pb), 0);
		/* The generation of a policy's limits is the publishes' history
		 * (A published every change, B every 50th), not the store's. */
		pa.lim.gen = pb.lim.gen = 0;
		memset(pa.lim.rescale, 0, sizeof(pa.lim.rescale));
		memset(pb.lim.rescale, 0, sizeof(pb.lim.rescale));
		if (memcmp(&pa, &pb, sizeof(pa)))
			fail_msg("policy slot %u: policy %u published by changes, %u whole, or they differ", slot, pa.id,
				 pb.id);
	}
	assert_int_equal(fc_config_read(&c->maps[0], &ca, &err), 0);
	assert_int_equal(fc_config_read(&c->maps[1], &cb, &err), 0);
	assert_int_equal(ca.n_exact4, cb.n_exact4);
	assert_int_equal(ca.n_exact6, cb.n_exact6);
	assert_int_equal(ca.n_pfx4, cb.n_pfx4);
	assert_int_equal(ca.n_pfx6, cb.n_pfx6);
	assert_int_equal(ca.n_top4, cb.n_top4);
	assert_int_equal(ca.n_marks6, cb.n_marks6);
	assert_memory_equal(ca.lens6, cb.lens6, sizeof(ca.lens6));
	assert_int_equal(ca.n_policies, cb.n_policies);
	assert_int_equal(ca.star_slot, cb.star_slot);
	assert_int_equal(ca.star_gen, cb.star_gen);
	assert_int_equal(ca.star_syn, cb.star_syn);
	assert_memory_equal(&ca.new_src, &cb.new_src, sizeof(ca.new_src));
}

static int fc_slot_cmp(const void *a, const void *b)
{
	return memcmp(a, b, sizeof(struct fc_shm_ban_slot));
}

/* The live ban table's bans (no tombstone), normalised and sorted. */
static struct fc_shm_ban_slot *fc_shm_bans(const void *base, size_t *n)
{
	const struct fc_shm_header *h = base;
	__u64 live = h->ban_live;
	const struct fc_shm_ban_slot *tab =
		(const struct fc_shm_ban_slot *)((const char *)base + FC_SHM_BANS_OFF(FC_SHM_BAN_TABLE(live)));
	struct fc_shm_ban_slot *v = calloc(FC_SHM_BAN_SLOTS, sizeof(*v));
	size_t i;

	assert_non_null(v);
	assert_int_not_equal(live, 0);
	for (*n = 0, i = 0; i < FC_SHM_BAN_SLOTS; i++) {
		if (tab[i].seq != FC_SHM_BAN_STAMP(live) || tab[i].family == FC_SHM_BAN_DEAD)
			continue;
		assert_int_equal(tab[i].ver & 1, 0);
		v[*n] = tab[i];
		v[*n].seq = 0;
		v[(*n)++].ver = 0;
	}
	qsort(v, *n, sizeof(*v), fc_slot_cmp);
	return v;
}

/* A block's items with the generation of each policy's limits taken out:
 * the publishes' history, not the store's (fc_cmp_maps). */
static void fc_shm_plain(const struct fc_shm_block *blk, __u8 *out)
{
	struct fc_shm_policy *it;
	__u64 off = 0;

	memcpy(out, blk + 1, blk->used);
	while (blk->used - off >= sizeof(*it)) {
		it = (struct fc_shm_policy *)(out + off);
		assert_true(it->item.len >= sizeof(*it) && it->item.len <= blk->used - off);
		it->gen = 0;
		memset(it->rescale, 0, sizeof(it->rescale));
		off += it->item.len;
	}
}

static void fc_cmp_shm(struct fc_churn *c)
{
	const struct fc_shm_block *blk[2];
	struct fc_shm_ban_slot *bans[2];
	__u8 *plain[2];
	void *base[2];
	size_t nb[2];
	int i, fd;

	for (i = 0; i < 2; i++) {
		fd = open(c->shm[i], O_RDONLY);
		assert_true(fd >= 0);
		base[i] = mmap(NULL, FC_SHM_SIZE, PROT_READ, MAP_SHARED, fd, 0);
		close(fd);
		assert_true(base[i] != MAP_FAILED);
		blk[i] = (const struct fc_shm_block *)((const char *)base[i] +
						       FC_SHM_BLOCK_OFF(((const struct fc_shm_header *)base[i])->active));
		plain[i] = malloc(blk[i]->used + 1);
		assert_non_null(plain[i]);
		fc_shm_plain(blk[i], plain[i]);
		bans[i] = fc_shm_bans(base[i], &nb[i]);
	}
	if (blk[0]->nitems != blk[1]->nitems || blk[0]->used != blk[1]->used || memcmp(plain[0], plain[1], blk[0]->used))
		fail_msg("shm: the config block published by changes (%u items, %llu bytes) is not the one published whole "
			 "(%u items, %llu bytes)",
			 blk[0]->nitems, (unsigned long long)blk[0]->used, blk[1]->nitems, (unsigned long long)blk[1]->used);
	if (nb[0] != nb[1] || (nb[0] && memcmp(bans[0], bans[1], nb[0] * sizeof(*bans[0]))))
		fail_msg("shm: %zu bans published by changes, %zu whole, or they differ", nb[0], nb[1]);
	for (i = 0; i < 2; i++) {
		free(plain[i]);
		free(bans[i]);
		munmap(base[i], FC_SHM_SIZE);
	}
}

/* Publishes to A (what changed) and B (everything) in the same second, so
 * that both see the same bans expired; then compares. */
static void fc_churn_compare(struct fc_churn *c)
{
	struct fc_publish pub;
	struct fc_err err;
	time_t t0;
	int i, tries;

	for (tries = 0; tries < 5; tries++) {
		t0 = time(NULL);
		for (i = 0; i < 2; i++)
			if (fc_publish_begin_on(&pub, &c->ctx[i], c->st, &err) < 0 ||
			    (pub.full = i == 1, fc_publish_commit(&pub, &err) < 0))
				fail_msg("publish %c: %s", 'A' + i, err.msg);
		if (time(NULL) == t0)
			break;
	}
	fc_cmp_maps(c);
	fc_cmp_shm(c);
	c->compares++;
}

static void test_churn(void **state)
{
	struct fc_churn *c = *state;
	const char *ops_env = getenv("FC_CHURN_OPS");
	long ops = ops_env ? strtol(ops_env, NULL, 10) : 3000, i;
	struct fc_publish pub;
	struct fc_err err;

	FC_REQUIRE_BPF();
	for (i = 0; i < ops; i++) {
		if (fc_publish_begin_on(&pub, &c->ctx[0], c->st, &err) < 0)
			fail_msg("change %ld: %s", i, err.msg);
		if (fc_churn_change(c, &pub, &err) < 0)
			fail_msg("change %ld: %s", i, err.msg);
		if (fc_publish_commit(&pub, &err) < 0)
			fail_msg("change %ld: publish: %s", i, err.msg);
		c->deltas += pub.delta;
		c->fulls += !pub.delta;
		if (i % 50 == 49 || i + 1 == ops)
			fc_churn_compare(c);
	}
	print_message("%ld changes: %zu published by what changed, %zu whole; %zu comparisons, all equal; "
		      "fc_top4's exact bits of a /24 seen set %zu times, cleared %zu\n",
		      ops, c->deltas, c->fulls, c->compares, c->set24, c->cleared24);
	/* Most must have gone the short way, or this tested nothing. */
	assert_true(c->deltas > (size_t)ops * 3 / 4);
	assert_true(c->cleared24 > 0 || ops < 1000);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_churn, fc_churn_setup, fc_churn_teardown),
	};

	return fc_run_group(getenv("FC_TEST_PG_DSN") ? "publishing what changed (PostgreSQL)" : "publishing what changed (SQLite)",
			    tests, NULL, NULL);
}
