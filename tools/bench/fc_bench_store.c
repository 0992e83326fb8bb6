// SPDX-License-Identifier: BSD-2-Clause
/*
 * fc_bench's store, loaded through freqctl itself: the exact bans, IPv4 and
 * IPv6 prefix bans of the sizes (`freqctl ban import`, timed), the
 * policies (through the store and publish path, in one transaction) and one
 * `freqctl policy add` timed with all of it stored. And the flood's small
 * store: exact bans only, as many as xdp-filter holds.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <bpf/bpf.h>

#include "fc_bench.h"
#include "fc_clock.h"
#include "fc_duration.h"
#include "fc_kern.h"
#include "fc_publish.h"
#include "fc_store.h"
#include "fc_sync.h"

/* splitmix64: the same prefixes on every run. */
static uint64_t fc_rand(void)
{
	uint64_t z = (fc_b.rng += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* A random IPv4 prefix of len bits inside first octets that hold no other
 * part of the setup (nor 0, 127, private or multicast space). */
static void fc_rand_pfx4(struct fc_prefix *p, unsigned len)
{
	static const uint8_t skip[] = { 0, 10, 100, 127, 169, 172, 192, 198 };
	uint32_t a;
	size_t i;

	do {
		a = (uint32_t)fc_rand();
		a = (a % (223u << 24)) + (1u << 24);
		for (i = 0; i < sizeof(skip) && (a >> 24) != skip[i]; i++)
			;
	} while (i < sizeof(skip));
	memset(p, 0, sizeof(*p));
	p->family = 4;
	p->len = (uint8_t)len;
	a = htonl(a);
	memcpy(p->a, &a, 4);
	fc_prefix_mask(p->a, 4, len);
}

/* A random IPv6 prefix of len bits inside 2000::/3. */
static void fc_rand_pfx6(struct fc_prefix *p, unsigned len)
{
	uint64_t w[2] = { fc_rand(), fc_rand() };

	memset(p, 0, sizeof(*p));
	p->family = 6;
	p->len = (uint8_t)len;
	memcpy(p->a, w, 16);
	p->a[0] = (uint8_t)(0x20 | (p->a[0] & 0x1f));
	fc_prefix_mask(p->a, 16, len);
}

static int fc_pfx_cmp(const void *a, const void *b)
{
	return memcmp(a, b, sizeof(struct fc_prefix));
}

/*
 * n distinct prefixes, lengths in proportion to weights[len] (per 100,000;
 * what is left over goes to rest_len), placed at random by make.
 */
static int fc_make_prefixes(struct fc_pfx_list *l, size_t n, const unsigned *weights, unsigned maxlen,
			    unsigned rest_len, void (*make)(struct fc_prefix *, unsigned))
{
	size_t want[129] = { 0 }, have[129] = { 0 }, total = 0, i, o;
	unsigned len;

	for (len = 0; len <= maxlen; len++) {
		want[len] = n * weights[len] / 100000;
		total += want[len];
	}
	want[rest_len] += n - total;
	l->v = calloc(n ? n : 1, sizeof(*l->v));
	if (!l->v)
		return -1;
	/* Draw what each length lacks, then drop repeats, until none lacks. */
	while (l->n < n) {
		for (len = 0; len <= maxlen; len++)
			for (; have[len] < want[len]; have[len]++)
				make(&l->v[l->n++], len);
		qsort(l->v, l->n, sizeof(*l->v), fc_pfx_cmp);
		for (i = 0, o = 0; i < l->n; i++)
			if (!o || fc_pfx_cmp(&l->v[o - 1], &l->v[i]))
				l->v[o++] = l->v[i];
			else
				have[l->v[i].len]--;
		l->n = o;
	}
	return 0;
}

/* IPv4 bans: mostly /24, every length from /8 to /32 (few /32: they are
 * exact addresses, which the million exact bans nearly fill). */
static const unsigned fc_w4[33] = {
	[8] = 2,     [9] = 10,    [10] = 10,   [11] = 10,   [12] = 10,   [13] = 10,   [14] = 10,
	[15] = 10,   [16] = 1000, [17] = 3000, [18] = 3000, [19] = 3000, [20] = 3000, [21] = 3000,
	[22] = 3000, [23] = 3000, [25] = 3000, [26] = 3000, [27] = 3000, [28] = 3000, [29] = 3000,
	[30] = 3000, [31] = 3000, [32] = 1000,
};

/* IPv6 bans: allocations and end sites. */
static const unsigned fc_w6[129] = { [32] = 10000, [40] = 5000, [44] = 5000, [48] = 40000, [56] = 15000 };

/* Prefix policies: /16 to /26, placed as the bans are. */
static const unsigned fc_wpol[29] = { [16] = 2000, [20] = 18000, [22] = 20000, [24] = 30000, [26] = 15000 };

/* Writes a bans file: n exact IPv4 addresses (10.0.0.0 upwards), then, if
 * prefixes, the prefix bans. */
static int fc_write_bans(const char *path, long n, bool prefixes)
{
	char buf[FC_PREFIX_STRLEN];
	FILE *f = fopen(path, "w");
	long i;
	size_t j;

	if (!f)
		return -1;
	for (i = 0; i < n; i++)
		fprintf(f, "10.%ld.%ld.%ld\n", (i >> 16) & 255, (i >> 8) & 255, i & 255);
	for (j = 0; prefixes && j < fc_b.ban4.n; j++) {
		fc_prefix_format(&fc_b.ban4.v[j], buf);
		fprintf(f, "%s\n", buf);
	}
	for (j = 0; prefixes && j < fc_b.ban6.n; j++) {
		fc_prefix_format(&fc_b.ban6.v[j], buf);
		fprintf(f, "%s\n", buf);
	}
	return fclose(f);
}

static int fc_import(const struct fc_bench_store *s, const char *file, double *secs)
{
	double t0 = fc_now();
	int rc;

	/* Every path its own: the machine's freqctl (its shm included) is not ours to write. */
	rc = fc_sh("'%s' --db '%s' --pin-dir '%s' --shm '%s' ban import '%s' >/dev/null", fc_b.freqctl, s->db, s->pin,
		   s->shm, file);
	*secs = fc_now() - t0;
	return rc;
}

/* Policy i's match: ids from 1 are exact addresses in 10.200.0.0/16, then
 * the prefix policies, then the three-policy source's two (10.201.0.0/24
 * and 10.201.0.7 inside it), then ip=* (the last id but one); the last id,
 * one more exact address, is left to the `policy add` that is timed. */
static long fc_npol4(void)
{
	return (long)fc_b.pol4.n;
}

long fc_nexact(void)
{
	return fc_b.policies - fc_npol4() - 4;
}

static void fc_policy_match(long id, char *match, size_t size)
{
	char buf[FC_PREFIX_STRLEN];

	if (id <= fc_nexact()) {
		snprintf(match, size, "ip=10.200.%ld.%ld", id / 256, id % 256);
	} else if (id <= fc_nexact() + fc_npol4()) {
		fc_prefix_format(&fc_b.pol4.v[id - fc_nexact() - 1], buf);
		snprintf(match, size, "ip=%s", buf);
	} else if (id == fc_b.policies - 3) {
		snprintf(match, size, "ip=10.201.0.0/24");
	} else if (id == fc_b.policies - 2) {
		snprintf(match, size, "ip=10.201.0.7");
	} else {
		snprintf(match, size, "ip=*");
	}
}

/* The allow entries of the allowed rows, on banned sources. */
static int fc_add_allows(struct fc_store *st, struct fc_err *err)
{
	static const char *const allows[] = { "10.0.0.9", "10.0.1.0/24" };
	struct fc_allow_row a = { .created = (int64_t)time(NULL) };
	size_t i;
	bool existed;

	for (i = 0; i < sizeof(allows) / sizeof(allows[0]); i++)
		if (fc_prefix_parse(allows[i], &a.p, err) < 0 || fc_store_allow_put(st, &a, a.created, &existed, err) < 0)
			return -1;
	return 0;
}

/* All policies but the last, through the real store and publish path, in one
 * transaction (published as a command publishes: the maps and the shm marked
 * with the change, so the `policy add` timed next publishes its change
 * alone), at rates the benchmark never exhausts: GCRA, except 10.200.0.8, a
 * sliding window at the most it counts (16,000,000/s, so part of a round
 * may be refused), 10.200.0.12 and .13 fixed windows, .13 with --fleet (the
 * fleet this node alone), and ip=*, which counts TCP SYNs. 10.200.0.9 warms
 * up over a day (the ramp's arithmetic on every packet), 10.200.0.10 over an
 * hour that ended (its bucket set so); 10.200.0.11 is an override (ip=* does
 * not apply to it). The allow entries with them. */
static int fc_add_policies(double *secs)
{
	struct fc_policy_spec p = { .algo = FC_ALGO_GCRA };
	struct fc_bucket warm = { 0 };
	__u32 warm_slot = 0;
	struct fc_policy_row row;
	struct fc_publish pub;
	struct fc_maps m = { .dirfd = -1 };
	struct fc_err err;
	const struct fc_ctx ctx = { .db_path = fc_b.main.db, .pin_dir = fc_b.main.pin, .shm_path = fc_b.main.shm,
				    .node = "bench" };
	double t0 = fc_now();
	char match[80];
	long i;
	int rc = -1;

	if (fc_publish_begin(&pub, &ctx, &err) < 0)
		goto out;
	for (i = 1; i < fc_b.policies; i++) {
		p.id = (uint32_t)i;
		fc_policy_match(i, match, sizeof(match));
		p.count = i == fc_b.policies - 1 ? FC_COUNT_SYN : FC_COUNT_PACKETS;
		p.algo = i == 8 ? FC_ALGO_SLIDING : i == 12 || i == 13 ? FC_ALGO_WINDOW : FC_ALGO_GCRA;
		p.warmup = i == 9 ? 86400 : i == 10 ? 3600 : 0;
		p.override = i == 11;
		p.fleet = i == 13;
		if (fc_match_parse(match, &p, &err) < 0 ||
		    fc_rates_parse(i == 8 ? "16000000/s" : "1000000000/s", &p, &err) < 0 ||
		    fc_store_policy_put(pub.st, &p, pub.now, &row, &err) < 0) {
			fc_publish_abort(&pub);
			goto out;
		}
		if (i == 10)
			warm_slot = row.slot;
	}
	/* The fleet: this node alone, weight 1, from two days ago (its whole
	 * N is its share, from the second after the maps were made). */
	if (fc_add_allows(pub.st, &err) < 0 ||
	    fc_store_fleet_node_set(pub.st, ctx.node, FC_FLEET_WEIGHT_ONE, fc_unix_ms() - 2 * 86400000LL, &err) < 0) {
		fc_publish_abort(&pub);
		goto out;
	}
	if (fc_publish_commit(&pub, &err) < 0 || fc_maps_open(fc_b.main.pin, &m, &err) < 0)
		goto out;
	/* Its TAT now, its ramp begun two hours ago: warm for as long as the
	 * rounds come within the hour. */
	warm.state[0] = fc_utc_ns();
	warm.state[1] = warm.state[0] - 7200 * FC_NS_PER_SEC;
	if (bpf_map_update_elem(m.buckets, &warm_slot, &warm, BPF_ANY)) {
		fc_err_set(&err, "the warm bucket: %s", strerror(errno));
		goto out;
	}
	rc = 0;
out:
	if (rc)
		fprintf(stderr, "fc_bench: adding policies: %s\n", err.msg);
	fc_maps_close(&m);
	*secs = fc_now() - t0;
	return rc;
}

/* `freqctl policy add` of the last policy, with everything else stored:
 * its wall time and peak resident memory. */
static int fc_time_policy_add(double *secs, long *maxrss_kib)
{
	char id[24];
	struct rusage ru;
	double t0 = fc_now();
	int status;
	pid_t pid;

	snprintf(id, sizeof(id), "%ld", fc_b.policies);
	pid = fork();
	if (pid == 0) {
		if (!freopen("/dev/null", "w", stdout))
			_exit(127);
		execl(fc_b.freqctl, fc_b.freqctl, "--db", fc_b.main.db, "--pin-dir", fc_b.main.pin, "--shm", fc_b.main.shm,
		      "policy", "add",
		      id, "--match", "ip=10.200.255.254", "--rate", "1000000000/s", (char *)NULL);
		_exit(127);
	}
	if (pid < 0 || wait4(pid, &status, 0, &ru) != pid || !WIFEXITED(status) || WEXITSTATUS(status))
		return -1;
	*secs = fc_now() - t0;
	*maxrss_kib = ru.ru_maxrss;
	return 0;
}


/* Whether a prefix of l covers the address p. */
static bool fc_covered(const struct fc_pfx_list *l, const struct fc_prefix *p)
{
	struct fc_prefix q;
	size_t i;

	for (i = 0; i < l->n; i++) {
		q = *p;
		fc_prefix_mask(q.a, 16, l->v[i].len);
		if (l->v[i].family == p->family && !memcmp(q.a, l->v[i].a, 16))
			return true;
	}
	return false;
}

/* A host inside a random prefix of l (its address + 7, or the prefix's
 * only address), as text; for a policy, one no ban covers. */
void fc_draw_host(const struct fc_pfx_list *l, bool unbanned, char *out)
{
	struct fc_prefix p;
	unsigned bytes, tries = 0;

	do {
		p = l->v[fc_rand() % l->n];
		bytes = p.family == 4 ? 4 : 16;
		if (p.len < (p.family == 4 ? 29 : 125))
			p.a[bytes - 1] |= 7;
		p.len = (uint8_t)(bytes * 8);
	} while (unbanned && fc_covered(&fc_b.ban4, &p) && ++tries < 1000);
	fc_prefix_format(&p, out);
}

/* The store's prefixes, the same on every run. */
int fc_make_store_prefixes(void)
{
	fc_b.rng = 13;
	if (fc_make_prefixes(&fc_b.ban4, (size_t)fc_b.prefixes4, fc_w4, 32, 24, fc_rand_pfx4) < 0 ||
	    fc_make_prefixes(&fc_b.ban6, (size_t)fc_b.prefixes6, fc_w6, 128, 64, fc_rand_pfx6) < 0 ||
	    fc_make_prefixes(&fc_b.pol4, (size_t)fc_b.policies / 32, fc_wpol, 28, 24, fc_rand_pfx4) < 0)
		return -1;
	return 0;
}

/* A store's own paths (the machine's freqctl, its shm included, is not ours
 * to write), its directory made. */
int fc_store_paths(struct fc_bench_store *s, const char *name)
{
	snprintf(s->pin, sizeof(s->pin), "/sys/fs/bpf/fc-bench-%s%s", fc_b.tag, name);
	snprintf(s->dir, sizeof(s->dir), "/tmp/fc-bench-%s%s", fc_b.tag, name);
	snprintf(s->db, sizeof(s->db), "%s/store.db", s->dir);
	snprintf(s->shm, sizeof(s->shm), "%s/shm", s->dir);
	return mkdir(s->dir, 0700);
}

/* The main store: bans imported, policies added, one policy add timed. */
int fc_store_load(double *import_s, double *pol_s, double *add_s, long *add_rss)
{
	char file[160];

	fc_progress("writing %ld bans", fc_b.bans + fc_b.prefixes4 + fc_b.prefixes6);
	snprintf(file, sizeof(file), "%s/bans.txt", fc_b.main.dir);
	if (fc_write_bans(file, fc_b.bans, true) < 0) {
		fprintf(stderr, "fc_bench: %s: %s\n", file, strerror(errno));
		return -1;
	}
	fc_progress("freqctl ban import");
	if (fc_import(&fc_b.main, file, import_s)) {
		fprintf(stderr, "fc_bench: freqctl ban import failed\n");
		return -1;
	}
	fc_progress("adding %ld policies", fc_b.policies - 1);
	if (fc_add_policies(pol_s) < 0)
		return -1;
	fc_progress("freqctl policy add");
	if (fc_time_policy_add(add_s, add_rss) < 0) {
		fprintf(stderr, "fc_bench: freqctl policy add failed\n");
		return -1;
	}
	return 0;
}

/* The flood's small store: the first flood_bans exact bans alone. */
int fc_store_load_small(void)
{
	char file[160];
	double secs;

	snprintf(file, sizeof(file), "%s/bans.txt", fc_b.small.dir);
	if (fc_write_bans(file, fc_b.flood_bans, false) < 0 || fc_import(&fc_b.small, file, &secs)) {
		fprintf(stderr, "fc_bench: the flood's store of %ld bans: cannot import\n", fc_b.flood_bans);
		return -1;
	}
	return 0;
}
