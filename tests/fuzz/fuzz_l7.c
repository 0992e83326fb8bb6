// SPDX-License-Identifier: BSD-2-Clause
/*
 * The nginx module's engine (ngx_bridge/fc_l7.c) on arbitrary shm images:
 * fc_l7_build reads the config file into an index, requests are matched and
 * decided against it (a busy key's value noted in the value table, whatever
 * that holds) as a worker with a record of its concurrency places
 * (each place given back after), the places of every other worker record in
 * the image are recovered as a dead worker's, and all the while a second
 * thread scribbles on the image, as a hostile or racing writer would.
 * Nothing may crash, read out of bounds or hang, whatever the images hold.
 *
 * An input is a sparse image, chunks of [u8 what][u32 offset][u16 len][len
 * bytes], little-endian: what 0 writes the config file at offset, 1 the
 * state file; 2 is the raw query string and 3 a Cookie line of more
 * requests. Their uid is read as the module reads $arg_uid and $cookie_uid:
 * every copy (fc_l7_query_find, fc_l7_cookie_find), decoded; a Cookie line
 * without a uid is the uid itself.
 * With FC_FUZZ_SEED=FILE set, the target instead publishes a fixed set of
 * policies and bans through the real publisher and writes that shm to FILE
 * in this form: the corpus's seeds.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fc_fuzz.h"
#include "fc_l7.h"

#define FC_FUZZ_NOW   (1800000000ull * 1000000000ull)
#define FC_FUZZ_SELF  FC_SHM_WORKER_ID(1, 1)   /* this process, as a worker */
#define FC_FUZZ_DEAD  FC_SHM_WORKER_ID(2, 2)   /* the seed's worker, killed holding places */

static uint32_t free_holds[FC_SHM_HOLDS];

/* Every other record's owner is gone: recovery walks them all. */
static bool fc_gone(uint64_t id)
{
	(void)id;
	return false;
}

#define FC_FUZZ_REGIONS 64

struct fc_region {
	uint8_t *p;
	size_t len;
};

static uint8_t *cfg, *st; /* the two files' images, full size */
static struct fc_region regions[FC_FUZZ_REGIONS];
static size_t nregions;
static atomic_bool scribbling;

/* ---- memory for the index: calloc'd, all freed after each input ---- */

struct fc_block {
	struct fc_block *next;
	max_align_t data[];
};

static void *fc_alloc(void *ctx, size_t size)
{
	struct fc_block **list = ctx, *b = calloc(1, sizeof(*b) + size);

	if (!b)
		return NULL;
	b->next = *list;
	*list = b;
	return b->data;
}

static void fc_free_all(struct fc_block **list)
{
	struct fc_block *b;

	while ((b = *list)) {
		*list = b->next;
		free(b);
	}
}

/* ---- the scribbler ---- */

static void *fc_scribble(void *arg)
{
	uint64_t x = 0x9e3779b97f4a7c15ull;
	unsigned i;

	(void)arg;
	/* Bounded: a few thousand flips per input at most. */
	for (i = 0; i < 4096 && atomic_load_explicit(&scribbling, memory_order_relaxed) && nregions; i++) {
		const struct fc_region *r;

		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		r = &regions[x % nregions];
		if (r->len)
			__atomic_store_n(&r->p[(x >> 16) % r->len], (uint8_t)(x >> 40), __ATOMIC_RELAXED);
	}
	return NULL;
}

/* ---- one input ---- */

#define FC_FUZZ_UIDS 32

/* The copies of the uid in the query q and the Cookie line ck, as the
 * module reads and decodes them (into buf, qlen + 2 * clen bytes: a quoted
 * cookie may be two copies of its value), a non-empty one first, into rq:
 * what the engine decides on. Every copy found is checked to lie in its
 * input. */
static void fc_fuzz_uids(struct fc_l7_req *rq, const char *q, size_t qlen, const char *ck, size_t clen,
			 struct fc_l7_str *v, char *buf)
{
	size_t n, nq, i;
	struct fc_l7_str t;
	bool enc = false, exact = false, py[FC_FUZZ_UIDS] = { false };

	nq = fc_l7_query_find(q, qlen, "uid", "uid", 3, v, FC_FUZZ_UIDS, &enc, &exact);
	n = nq < FC_FUZZ_UIDS ? nq : FC_FUZZ_UIDS;
	n += fc_l7_cookie_find(ck, clen, "uid", "uid", 3, v + n, py + n, FC_FUZZ_UIDS - n, &enc,
				&exact);
	if (n > FC_FUZZ_UIDS)
		n = FC_FUZZ_UIDS;
	if (!n) { /* no uid= in either: the line is the uid, as a variable's */
		v[n++] = (struct fc_l7_str){ ck, clen };
		exact = true;
	}
	for (i = 0; i < n; i++) {
		const char *in = i < nq ? q : ck;
		size_t inlen = i < nq ? qlen : clen;

		if (v[i].len && (v[i].data < in || v[i].data + v[i].len > in + inlen))
			fc_fuzz_fail("uid copy %zu out of its input", i);
		if (!enc)
			continue;
		t.data = buf;
		t.len = i < nq ? fc_l7_decode(v[i].data, v[i].len, buf, v[i].len) :
			py[i]  ? fc_l7_cookie_unquote(v[i].data, v[i].len, buf) :
				 fc_l7_decode_cookie(v[i].data, v[i].len, buf, v[i].len);
		if (t.len > v[i].len)
			fc_fuzz_fail("uid copy %zu decoded longer", i);
		v[i] = t;
		buf += t.len;
	}
	for (i = 1; i < n && !v[0].len; i++) {
		t = v[0];
		v[0] = v[i];
		v[i] = t;
	}
	rq->uid = v[0];
	rq->uids = n > 1 && v[0].len ? v : NULL;
	rq->nuids = rq->uids ? n : 0;
	rq->uid_exact = exact;
}

static void fc_chunk(uint8_t *base, size_t size, uint32_t off, const uint8_t *p, size_t len)
{
	if (len > size)
		len = size;
	off %= (uint32_t)(size - len + 1);
	memcpy(base + off, p, len);
	if (nregions < FC_FUZZ_REGIONS)
		regions[nregions++] = (struct fc_region){ base + off, len };
}

static void fc_decide_one(const struct fc_l7_index *ix, struct fc_l7_req *rq, const char *query, size_t qlen)
{
	struct fc_l7_val vals[64];
	struct fc_l7_place pl[2];
	struct fc_l7_result res;
	char buf[1024];
	uint32_t m[8];

	rq->nvals = 0;
	if (qlen && qlen <= sizeof(buf) && fc_l7_args_max(query, qlen) <= 64) {
		rq->nvals = fc_l7_args(ix, query, qlen, buf, vals);
		rq->vals = vals;
	}
	rq->places = pl;
	rq->places_cap = 2;
	fc_l7_match(ix, rq, m, 8);
	fc_l7_decide(ix, rq, FC_FUZZ_NOW, &res);
	if (res.verdict > FC_L7_ALLOWED)
		fc_fuzz_fail("verdict %d", (int)res.verdict);
	if (res.nplaces > res.matched || (res.nplaces && res.verdict != FC_L7_PASS && res.verdict != FC_L7_DELAYED))
		fc_fuzz_fail("%u places kept of %u policies, verdict %d", res.nplaces, res.matched, (int)res.verdict);
	/* The request's end. */
	fc_l7_give_back(st, FC_STATE_SIZE, rq->holder, res.places, res.nplaces, FC_FUZZ_NOW);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint8_t v4[4] = { 198, 18, 0, 9 }, v6[16] = { 0x20, 0x01, 0x0d, 0xb8, [15] = 7 };
	struct fc_fuzz_in in = { data, size };
	struct fc_fuzz_chunk c;
	char query[1024] = "", cookie[1024] = "u1", dec[sizeof(query) + 2 * sizeof(cookie)];
	struct fc_l7_str copies[FC_FUZZ_UIDS];
	size_t qlen = 0, clen = 2, i;
	struct fc_block *blocks = NULL;
	struct fc_l7_alloc a = { fc_alloc, &blocks };
	struct fc_l7_holder h;
	struct fc_l7_index ix;
	pthread_t t;
	int rc;

	nregions = 0;
	while (fc_fuzz_next_chunk(&in, &c)) {
		if (c.what % 4 == 0)
			fc_chunk(cfg, FC_SHM_SIZE, c.off, c.p, c.len);
		else if (c.what % 4 == 1)
			fc_chunk(st, FC_STATE_SIZE, c.off, c.p, c.len);
		else if (c.what % 4 == 2)
			memcpy(query, c.p, qlen = c.len < sizeof(query) ? c.len : sizeof(query));
		else
			memcpy(cookie, c.p, clen = c.len < sizeof(cookie) ? c.len : sizeof(cookie));
	}

	atomic_store(&scribbling, true);
	if (pthread_create(&t, NULL, fc_scribble, NULL))
		abort();
	fc_l7_holder_open(st, FC_STATE_SIZE, FC_FUZZ_SELF, free_holds, &h); /* none free: places unrecorded */
	rc = fc_l7_build(cfg, FC_SHM_SIZE, st, FC_STATE_SIZE, &ix, &a);
	if (rc == 0) {
		struct fc_l7_req rq = { .alloc = &a, .holder = &h };

		fc_decide_one(&ix, &rq, query, qlen);
		fc_fuzz_uids(&rq, query, qlen, cookie, clen, copies, dec);
		rq.family = 4;
		memcpy(rq.addr, v4, 4);
		fc_decide_one(&ix, &rq, query, qlen);
		rq.family = 6;
		memcpy(rq.addr, v6, 16);
		rq.uri = (struct fc_l7_str){ "/login", 6 };
		fc_decide_one(&ix, &rq, query, qlen);
	}
	fc_l7_recover(st, FC_STATE_SIZE, FC_FUZZ_SELF, FC_FUZZ_NOW, fc_gone);
	if (h.rec && h.nfree != h.used)
		fc_fuzz_fail("%u holds used, %u given back", h.used, h.nfree);
	fc_l7_holder_close(st, FC_STATE_SIZE, &h, FC_FUZZ_NOW);
	atomic_store(&scribbling, false);
	pthread_join(t, NULL);
	fc_free_all(&blocks);
	/* The next input starts from blank files. */
	for (i = 0; i < nregions; i++)
		memset(regions[i].p, 0, regions[i].len);
	/* Decisions wrote slots, the ring and keys anywhere in 64 MiB: drop
	 * the pages (a private anonymous mapping reads back as zeros). */
	if (madvise(st, FC_STATE_SIZE, MADV_DONTNEED))
		abort();
	return 0;
}

/* ---- seeds: the real publisher's shm, in the input's form ---- */

static void fc_seed_chunk(FILE *out, uint8_t what, size_t off, const uint8_t *p, size_t len)
{
	uint8_t hdr[7] = { what, off, off >> 8, off >> 16, off >> 24, len, len >> 8 };

	fwrite(hdr, 1, sizeof(hdr), out);
	fwrite(p, 1, len, out);
}

/* The file's non-zero 64-byte lines, merged into chunks of up to 4 KiB. */
static void fc_seed_file(FILE *out, uint8_t what, const char *path, size_t size)
{
	static const uint8_t zero[64];
	uint8_t buf[4096];
	size_t off = 0, n, i, start = 0, len = 0;
	FILE *f = fopen(path, "rb");

	if (!f) {
		perror(path);
		exit(1);
	}
	while (off < size && (n = fread(buf, 1, sizeof(buf), f)) > 0) {
		for (i = 0; i + 64 <= n; i += 64) {
			if (!memcmp(buf + i, zero, 64))
				continue;
			if (len && start + len == off + i && len < 4096 && i) {
				len += 64;
				continue;
			}
			if (len)
				fc_seed_chunk(out, what, start, buf + (start - off), len);
			start = off + i;
			len = 64;
		}
		if (len) /* a chunk ends with the buffer */
			fc_seed_chunk(out, what, start, buf + (start - off), len);
		len = 0;
		off += n;
	}
	fclose(f);
}

static void *fc_seed_map(const char *path, size_t size, bool writable)
{
	int fd = open(path, writable ? O_RDWR : O_RDONLY);
	void *p = fd < 0 ? MAP_FAILED : mmap(NULL, size, PROT_READ | (writable ? PROT_WRITE : 0), MAP_SHARED, fd, 0);

	if (p == MAP_FAILED) {
		perror(path);
		exit(1);
	}
	close(fd);
	return p;
}

/* Leaves the live ban table's slot of 198.18.0.last as a writer killed
 * half-way would: its seqlock odd. */
static void fc_seed_half_written(const char *shm, uint8_t last)
{
	const uint8_t addr[16] = { 198, 18, 0, last };
	struct fc_shm_ban_slot *tab;
	struct fc_shm_header *h;
	__u64 hash = fc_shm_ban_hash(4, 32, addr, 4);
	__u32 step, i;
	void *base = fc_seed_map(shm, FC_SHM_SIZE, true);

	h = base;
	tab = (struct fc_shm_ban_slot *)((char *)base + FC_SHM_BANS_OFF(FC_SHM_BAN_TABLE(h->ban_live)));
	for (step = 0; step < FC_SHM_BAN_LEVELS + FC_SHM_BAN_PROBE; step++) {
		i = fc_shm_ban_probe(hash, step);
		if (tab[i].hash == hash && tab[i].family == 4) {
			tab[i].ver |= 1;
			break;
		}
	}
	munmap(base, FC_SHM_SIZE);
}

/* A key of a policy that keeps values (16), one pass short of having its
 * value noted: the inputs' first request (the seed's query) notes it, in
 * the value table as the input holds it. */
static void fc_seed_busy_key(const char *shm, const char *state)
{
	static const char q[] = "sv=k%01%22";
	struct fc_block *blocks = NULL;
	struct fc_l7_alloc a = { fc_alloc, &blocks };
	struct fc_l7_val vals[4];
	struct fc_l7_result res;
	struct fc_l7_index ix;
	char buf[sizeof(q)];
	void *c = fc_seed_map(shm, FC_SHM_SIZE, false), *s = fc_seed_map(state, FC_STATE_SIZE, true);
	int i;

	if (fc_l7_build(c, FC_SHM_SIZE, s, FC_STATE_SIZE, &ix, &a)) {
		fprintf(stderr, "fuzz_l7: seed: no index\n");
		exit(1);
	}
	for (i = 0; i < FC_SHM_VAL_PASSES - 1; i++) {
		struct fc_l7_req rq = { .alloc = &a, .vals = vals };

		rq.nvals = fc_l7_args(&ix, q, sizeof(q) - 1, buf, vals);
		fc_l7_decide(&ix, &rq, FC_FUZZ_NOW, &res);
	}
	munmap(c, FC_SHM_SIZE);
	munmap(s, FC_STATE_SIZE);
	fc_free_all(&blocks);
}

/* A worker killed holding places: its record, its holds and the counts
 * they are in, as the published state file then holds them. */
static void fc_seed_killed_worker(const char *shm, const char *state)
{
	static const char *const uids[] = { "u1", "u7", "u7", "u9" };
	struct fc_block *blocks = NULL;
	struct fc_l7_alloc a = { fc_alloc, &blocks };
	struct fc_l7_place pl[4];
	struct fc_l7_holder h;
	struct fc_l7_index ix;
	void *c = fc_seed_map(shm, FC_SHM_SIZE, false), *s = fc_seed_map(state, FC_STATE_SIZE, true);
	size_t i;

	if (fc_l7_build(c, FC_SHM_SIZE, s, FC_STATE_SIZE, &ix, &a) || fc_l7_holder_open(s, FC_STATE_SIZE, FC_FUZZ_DEAD,
											 free_holds, &h)) {
		fprintf(stderr, "fuzz_l7: seed: no index or record\n");
		exit(1);
	}
	for (i = 0; i < 4; i++) {
		struct fc_l7_req rq = { .alloc = &a, .holder = &h, .places = pl, .places_cap = 4 };
		struct fc_l7_result res;

		rq.uid = (struct fc_l7_str){ uids[i], strlen(uids[i]) };
		rq.uri = (struct fc_l7_str){ "/login", 6 };
		fc_l7_decide(&ix, &rq, FC_FUZZ_NOW, &res);
	}
	munmap(c, FC_SHM_SIZE);
	munmap(s, FC_STATE_SIZE);
	fc_free_all(&blocks);
}

static void fc_make_seed(const char *path)
{
	const struct fc_ctx *ctx = fc_fuzz_ctx();
	char state[600];
	FILE *out;

	fc_fuzz_policy(1, "uid=u1", "3/m", "");
	fc_fuzz_policy(2, "arg:api=login", "2/s,10/m", "algo=window");
	fc_fuzz_policy(3, "header:x-key=k1", "10/m", "action=delay delay_burst=5");
	fc_fuzz_policy(4, "uid=u2,ip=198.18.0.0/16", "1/s", "escalate=5/m ban_ttl=1h");
	fc_fuzz_policy(5, "uri=/login,ip=2001:db8::/32", "5/s", "action=log");
	fc_fuzz_policy(6, "uid=*,uri=/api/*", "3/m", "");
	fc_fuzz_policy(7, "ip=*,header:x-key=*", "2/s,10/m", "action=delay delay_burst=2");
	fc_fuzz_policy(8, "uid=*,uri=/login", "", "concurrency=2");
	fc_fuzz_policy(9, "uri=/login", "100/m,500/h", "concurrency=3");
	fc_fuzz_policy(10, "uid=w1", "30/s", "warmup=10s");
	fc_fuzz_policy(11, "arg:wk=*", "30/s,1000/h", "warmup=1m action=delay delay_burst=3");
	/* Both in a key's bucket: the ramp's word, then the count's (the killed
	 * worker below holds places in it). */
	fc_fuzz_policy(12, "uid=*", "30/s", "warmup=10s concurrency=2");
	/* Overrides: of uid=* (12), and of the /16 over an address in it. */
	fc_fuzz_policy(13, "uid=u1,arg:api=login", "10/s", "override=1");
	fc_fuzz_policy(14, "ip=198.18.0.0/16", "5/s", "layer=http");
	fc_fuzz_policy(15, "ip=198.18.0.9", "50/s", "layer=http override=1");
	/* Keeps its busiest keys' values (fc_seed_busy_key). */
	fc_fuzz_policy(16, "arg:sv=*", "1000/s", "show_keys=1");
	fc_fuzz_ban("uid=bob");
	fc_fuzz_ban("198.18.0.9");
	fc_fuzz_ban("2001:db8::/48");
	/* Not the requests' fixed addresses (all else would be skipped for
	 * them); the uid a input gives may be one. */
	fc_fuzz_allow("uid=vip");
	fc_fuzz_allow("198.18.1.0/24");
	fc_fuzz_allow("2001:db8::8");
	/* Changed in place: a tombstone, and a slot left half written. */
	fc_fuzz_ban("198.18.0.10");
	fc_fuzz_ban("198.18.0.11");
	fc_fuzz_unban("198.18.0.10");
	fc_seed_half_written(ctx->shm_path, 11);
	snprintf(state, sizeof(state), "%s%s", ctx->shm_path, FC_SHM_STATE_SUFFIX);
	fc_seed_killed_worker(ctx->shm_path, state);
	fc_seed_busy_key(ctx->shm_path, state);
	out = fopen(path, "wb");
	if (!out) {
		perror(path);
		exit(1);
	}
	fc_seed_file(out, 0, ctx->shm_path, FC_SHM_SIZE);
	fc_seed_file(out, 1, state, FC_STATE_SIZE);
	fwrite((const uint8_t[]){ 2, 0, 0, 0, 0, 45, 0 }, 1, 7, out);
	fwrite("api=log%69n&api=x&sv=k%01%22&Uid=u2;%75id=vip", 1, 45, out);
	fwrite((const uint8_t[]){ 3, 0, 0, 0, 0, 30, 0 }, 1, 7, out);
	fwrite("UID=vip; uid=\"b%6fb\", uid[]=u1", 1, 30, out);
	if (fclose(out)) {
		perror(path);
		exit(1);
	}
	exit(0);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *seed = getenv("FC_FUZZ_SEED");

	(void)argc;
	(void)argv;
	if (seed)
		fc_make_seed(seed);
	cfg = mmap(NULL, FC_SHM_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	st = mmap(NULL, FC_STATE_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (cfg == MAP_FAILED || st == MAP_FAILED) {
		perror("fuzz_l7: mmap");
		exit(1);
	}
	return 0;
}
