// SPDX-License-Identifier: BSD-2-Clause
/*
 * make bench: the per-packet cost of freqctl's XDP program on every path,
 * with a store as large as the (1,000,000 exact bans, 100,000 IPv4
 * prefixes of /8 to /32, 10,000 IPv6 prefixes, 65,536 policies, one of them
 * ip=*), against an empty XDP program and xdp-filter (Debian xdp-tools) with
 * one IP rule, all run through BPF_PROG_TEST_RUN on the same frames in one
 * run, rounds interleaved, medians reported as ns/packet and as ratios. The
 * prefix rows run a sample of sources drawn from the prefixes loaded, each
 * against xdp-filter on its own frame, and report the median and the
 * slowest. Also freqctl run through libxdp's dispatcher (as `freqctl attach`
 * shares the XDP hook) against freqctl alone, the time of `freqctl ban
 * import` of all the bans (target: < 10 s for 1,000,000), and the time and
 * peak memory of one `freqctl policy add` with all of it stored and
 * published (target: <= 20 ms: it publishes its change alone). With
 * --baseline, another build's program (say main's) on the same maps, in the
 * same rounds: a change to the packet path compared on this noisy machine.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <arpa/inet.h>
#include <getopt.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <linux/if_link.h>
#include <linux/in.h>
#include <net/if.h>
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <jansson.h>

#include "bench_empty.skel.h"
#include "fc_attach.h"
#include "fc_clock.h"
#include "fc_duration.h"
#include "fc_frames.h"
#include "fc_kern.h"
#include "fc_prefix.h"
#include "fc_publish.h"
#include "fc_store.h"
#include "fc_sync.h"
#include "freqctl.skel.h"

#define FC_MAX_ROUNDS  31
#define FC_MAX_SAMPLES 64

enum { FC_P_EMPTY, FC_P_XDP_FILTER, FC_P_FREQCTL, FC_P_DISPATCHED, FC_P_BASELINE, FC_NPROGS };

static const char *const fc_prog_names[FC_NPROGS] = { "empty XDP program", "xdp-filter, 1 IP rule", "freqctl",
						       "freqctl in dispatcher", "freqctl --baseline" };

/* A source drawn from the loaded prefixes: a host inside prefix number
 * `pick` of a kind (see fc_row). */
enum fc_draw {
	FC_DRAW_NONE,   /* the row's fixed source */
	FC_DRAW_BAN4,   /* a host in an IPv4 prefix ban */
	FC_DRAW_POL4,   /* a host in an IPv4 prefix policy */
	FC_DRAW_BAN6,   /* a host in an IPv6 prefix ban */
};

/* One row: a frame (or a sample of frames), and whether the target
 * (at most 1.0x xdp-filter) applies. */
struct fc_row {
	const char *name;
	struct fc_frame_spec spec;
	enum fc_draw draw;
	bool target;
};

/* The exact bans are 10.0.0.0 upwards (10.0.0.7 the banned frame's), the
 * exact-address policies 10.200.0.0/16 (10.200.0.8 a sliding window,
 * 10.200.0.9 and .10 GCRA with a warm-up, in its ramp and past it, .11 an
 * override, the rest GCRA), the prefix bans and policies anywhere else in unicast space
 * (never 10/8, 100/8 or 198.18/15; a source drawn from a policy is one no
 * ban covers). The ip=* policy counts TCP SYNs, so that UDP frames meet only
 * the others. 10.0.0.9 (banned) is allowed, and so is 10.0.1.0/24 (its
 * exact bans allowed through the prefix). */
static const struct fc_row fc_rows[] = {
	{ "clean (no rule matches)", { "198.18.0.8", IPPROTO_UDP, .payload = 18 }, FC_DRAW_NONE, true },
	{ "exact ban", { "10.0.0.7", IPPROTO_UDP, .payload = 18 }, FC_DRAW_NONE, true },
	{ "prefix ban", { NULL, IPPROTO_UDP, .payload = 18 }, FC_DRAW_BAN4, true },
	{ "exact-address policy (GCRA)", { "10.200.0.7", IPPROTO_UDP, .payload = 18 }, FC_DRAW_NONE, true },
	{ "exact-address policy (sliding window)", { "10.200.0.8", IPPROTO_UDP, .payload = 18 }, FC_DRAW_NONE, true },
	{ "exact-address policy (GCRA, warming up)", { "10.200.0.9", IPPROTO_UDP, .payload = 18 }, FC_DRAW_NONE,
	  true },
	{ "exact-address policy (GCRA, warmed up)", { "10.200.0.10", IPPROTO_UDP, .payload = 18 }, FC_DRAW_NONE,
	  true },
	{ "prefix policy (GCRA)", { NULL, IPPROTO_UDP, .payload = 18 }, FC_DRAW_POL4, true },
	{ "exact-address + ip=* policies (TCP SYN)", { "10.200.0.7", IPPROTO_TCP, 0x02, .payload = 6 }, FC_DRAW_NONE,
	  true },
	{ "exact override over ip=* (TCP SYN)", { "10.200.0.11", IPPROTO_TCP, 0x02, .payload = 6 }, FC_DRAW_NONE,
	  true },
	{ "ip=* policy alone (TCP SYN)", { "198.18.0.8", IPPROTO_TCP, 0x02, .payload = 6 }, FC_DRAW_NONE, true },
	{ "allowed (an exact ban, allowed)", { "10.0.0.9", IPPROTO_UDP, .payload = 18 }, FC_DRAW_NONE, true },
	{ "allowed by a prefix (exact ban + ip=*, TCP SYN)", { "10.0.1.5", IPPROTO_TCP, 0x02, .payload = 6 },
	  FC_DRAW_NONE, true },
	{ "IPv6 clean", { "fd00::8", IPPROTO_UDP, .payload = 18 }, FC_DRAW_NONE, false },
	{ "IPv6 ip=* policy alone (TCP SYN, its /64)", { "fd00::8", IPPROTO_TCP, 0x02, .payload = 6 }, FC_DRAW_NONE,
	  false },
	{ "IPv6 prefix ban", { NULL, IPPROTO_UDP, .payload = 18 }, FC_DRAW_BAN6, false },
};

#define FC_NROWS (sizeof(fc_rows) / sizeof(fc_rows[0]))

/* One program on one frame: its timings and their median. */
struct fc_subject {
	int prog_fd;
	uint8_t frame[FC_FRAME_MAX];
	size_t len;
	double ns[FC_MAX_ROUNDS];
	double median;
};

/* A row's frames (one, or a sample), each through every program. */
struct fc_row_run {
	int nframes;
	char src[FC_MAX_SAMPLES][FC_PREFIX_STRLEN];
	struct fc_subject s[FC_MAX_SAMPLES][FC_NPROGS];
};

/* The prefixes made for the store, kept to draw sources from. */
struct fc_pfx_list {
	struct fc_prefix *v;
	size_t n;
};

static struct {
	long bans, prefixes4, prefixes6, policies;
	int samples;
	unsigned repeat;
	int rounds;
	bool json;
	const char *freqctl;
	const char *baseline; /* another build's freqctl.bpf.o, on the same maps */
	char tag[32];
	char ns[48];
	char pin[96];
	char xdpfs[112];
	char dir[96];
	char db[128];
	uint64_t rng;
	struct fc_pfx_list ban4, pol4, ban6;
} fc_b = { 1000000, 100000, 10000, FC_MAX_POLICIES, 16, 1000000, 9, false, "build/freqctl" };

static bool fc_tty;

static double fc_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void fc_progress(const char *fmt, ...)
{
	va_list ap;

	if (!fc_tty)
		return;
	fputs("\r\033[K", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
}

static int fc_sh(const char *fmt, ...)
{
	char cmd[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	return system(cmd);
}

static void fc_cleanup(void)
{
	if (fc_b.ns[0])
		fc_sh("ip netns del %s 2>/dev/null", fc_b.ns);
	if (fc_b.pin[0])
		fc_sh("rm -rf '%s' '%s' '%s'", fc_b.pin, fc_b.xdpfs, fc_b.dir);
}

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

/* Writes bans.txt: fc_b.bans exact IPv4 addresses (10.0.0.0 upwards), then
 * the prefixes. */
static int fc_write_bans(const char *path)
{
	char buf[FC_PREFIX_STRLEN];
	FILE *f = fopen(path, "w");
	long i;
	size_t j;

	if (!f)
		return -1;
	for (i = 0; i < fc_b.bans; i++)
		fprintf(f, "10.%ld.%ld.%ld\n", (i >> 16) & 255, (i >> 8) & 255, i & 255);
	for (j = 0; j < fc_b.ban4.n; j++) {
		fc_prefix_format(&fc_b.ban4.v[j], buf);
		fprintf(f, "%s\n", buf);
	}
	for (j = 0; j < fc_b.ban6.n; j++) {
		fc_prefix_format(&fc_b.ban6.v[j], buf);
		fprintf(f, "%s\n", buf);
	}
	return fclose(f);
}

static int fc_import(const char *file, double *secs)
{
	double t0 = fc_now();
	int rc;

	/* Every path its own: the machine's freqctl (its shm included) is not ours to write. */
	rc = fc_sh("'%s' --db '%s' --pin-dir '%s' --shm '%s/shm' ban import '%s' >/dev/null", fc_b.freqctl, fc_b.db,
		   fc_b.pin, fc_b.dir, file);
	*secs = fc_now() - t0;
	return rc;
}

/* Policy i's match: ids from 1 are exact addresses in 10.200.0.0/16, then
 * the prefix policies, then ip=* (the last id but one); the last id, one
 * more exact address, is left to the `policy add` that is timed. */
static long fc_npol4(void)
{
	return (long)fc_b.pol4.n;
}

static long fc_nexact(void)
{
	return fc_b.policies - fc_npol4() - 2;
}

static void fc_policy_match(long id, char *match, size_t size)
{
	char buf[FC_PREFIX_STRLEN];

	if (id <= fc_nexact()) {
		snprintf(match, size, "ip=10.200.%ld.%ld", id / 256, id % 256);
	} else if (id <= fc_nexact() + fc_npol4()) {
		fc_prefix_format(&fc_b.pol4.v[id - fc_nexact() - 1], buf);
		snprintf(match, size, "ip=%s", buf);
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
 * may be refused), and ip=*, which counts TCP SYNs. 10.200.0.9 warms up over
 * a day (the ramp's arithmetic on every packet), 10.200.0.10 over an hour
 * that ended (its bucket set so); 10.200.0.11 is an override (ip=* does not
 * apply to it). The allow entries with them. */
static int fc_add_policies(double *secs)
{
	struct fc_policy_spec p = { .algo = FC_ALGO_GCRA };
	struct fc_bucket warm = { 0 };
	__u32 warm_slot = 0;
	struct fc_policy_row row;
	struct fc_publish pub;
	struct fc_maps m = { .dirfd = -1 };
	struct fc_err err;
	char shm[160];
	const struct fc_ctx ctx = { .db_path = fc_b.db, .pin_dir = fc_b.pin, .shm_path = shm, .node = "bench" };
	double t0 = fc_now();
	char match[80];
	long i;
	int rc = -1;

	snprintf(shm, sizeof(shm), "%s/shm", fc_b.dir);
	if (fc_publish_begin(&pub, &ctx, &err) < 0)
		goto out;
	for (i = 1; i < fc_b.policies; i++) {
		p.id = (uint32_t)i;
		fc_policy_match(i, match, sizeof(match));
		p.count = i == fc_b.policies - 1 ? FC_COUNT_SYN : FC_COUNT_PACKETS;
		p.algo = i == 8 ? FC_ALGO_SLIDING : FC_ALGO_GCRA;
		p.warmup = i == 9 ? 86400 : i == 10 ? 3600 : 0;
		p.override = i == 11;
		if (fc_match_parse(match, &p, &err) < 0 ||
		    fc_rates_parse(i == 8 ? "16000000/s" : "1000000000/s", &p, &err) < 0 ||
		    fc_store_policy_put(pub.st, &p, pub.now, &row, &err) < 0) {
			fc_publish_abort(&pub);
			goto out;
		}
		if (i == 10)
			warm_slot = row.slot;
	}
	if (fc_add_allows(pub.st, &err) < 0) {
		fc_publish_abort(&pub);
		goto out;
	}
	if (fc_publish_commit(&pub, &err) < 0 || fc_maps_open(fc_b.pin, &m, &err) < 0)
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
	char id[24], shm[160];
	struct rusage ru;
	double t0 = fc_now();
	int status;
	pid_t pid;

	snprintf(id, sizeof(id), "%ld", fc_b.policies);
	snprintf(shm, sizeof(shm), "%s/shm", fc_b.dir);
	pid = fork();
	if (pid == 0) {
		if (!freopen("/dev/null", "w", stdout))
			_exit(127);
		execl(fc_b.freqctl, fc_b.freqctl, "--db", fc_b.db, "--pin-dir", fc_b.pin, "--shm", shm, "policy", "add",
		      id, "--match", "ip=10.200.255.254", "--rate", "1000000000/s", (char *)NULL);
		_exit(127);
	}
	if (pid < 0 || wait4(pid, &status, 0, &ru) != pid || !WIFEXITED(status) || WEXITSTATUS(status))
		return -1;
	*secs = fc_now() - t0;
	*maxrss_kib = ru.ru_maxrss;
	return 0;
}

/* Sets the read-only global name (a __u64) of obj to v before it loads, as
 * a skeleton's rodata would be; -1 if obj has none. */
static int fc_rodata_u64(struct bpf_object *obj, const char *name, uint64_t v)
{
	struct btf *btf = bpf_object__btf(obj);
	const struct btf_var_secinfo *vi;
	const struct btf_type *sec;
	struct bpf_map *m;
	const void *init;
	size_t size;
	char *copy;
	int id, i, rc = -1;

	bpf_object__for_each_map(m, obj)
		if (strstr(bpf_map__name(m), ".rodata"))
			break;
	id = btf ? btf__find_by_name_kind(btf, ".rodata", BTF_KIND_DATASEC) : -1;
	if (!m || id < 0 || !(init = bpf_map__initial_value(m, &size)))
		return -1;
	sec = btf__type_by_id(btf, (__u32)id);
	vi = btf_var_secinfos(sec);
	for (i = 0; i < btf_vlen(sec); i++, vi++) {
		if (strcmp(btf__name_by_offset(btf, btf__type_by_id(btf, vi->type)->name_off), name) ||
		    vi->size != sizeof(v) || vi->offset + sizeof(v) > size || !(copy = malloc(size)))
			continue;
		memcpy(copy, init, size);
		memcpy(copy + vi->offset, &v, sizeof(v));
		rc = bpf_map__set_initial_value(m, copy, size);
		free(copy);
		break;
	}
	return rc;
}

/* The XDP program of another build's freqctl.bpf.o, on the bench's pinned
 * maps (which must have its layouts), as an fd; -1 if it cannot load. Its
 * clock's tick is set as freqctl attach sets it: without it, it would read
 * the coarse clock's helper, as this build's program does not. */
static int fc_baseline(struct bpf_object **obj)
{
	LIBBPF_OPTS(bpf_object_open_opts, oopts, .pin_root_path = fc_b.pin);
	struct bpf_program *prog;
	int err;

	*obj = bpf_object__open_file(fc_b.baseline, &oopts);
	if (!*obj) {
		fprintf(stderr, "fc_bench: --baseline %s: %s\n", fc_b.baseline, strerror(errno));
		return -1;
	}
	prog = bpf_object__find_program_by_name(*obj, FC_PROG_XDP);
	if (!prog) {
		fprintf(stderr, "fc_bench: --baseline %s: no program %s\n", fc_b.baseline, FC_PROG_XDP);
		return -1;
	}
	if (fc_rodata_u64(*obj, "fc_tick_ns", fc_clock_tick_ns()) < 0)
		fprintf(stderr, "fc_bench: --baseline %s: no fc_tick_ns: it reads the coarse clock's helper\n",
			fc_b.baseline);
	err = bpf_object__load(*obj);
	if (err) {
		fprintf(stderr, "fc_bench: --baseline %s: cannot load: %s\n", fc_b.baseline, strerror(-err));
		return -1;
	}
	return bpf_program__fd(prog);
}

static void fc_subject_init(struct fc_subject *s, int prog_fd, const struct fc_frame_spec *spec)
{
	memset(s, 0, sizeof(*s));
	s->prog_fd = prog_fd;
	s->len = fc_frame_build(spec, s->frame);
}

/* Runs fn(arg) inside the bench's namespace; -1 if it cannot get there. */
static int fc_in_ns(int (*fn)(void *), void *arg)
{
	char path[128];
	int self, target, rc = -1;

	snprintf(path, sizeof(path), "/var/run/netns/%s", fc_b.ns);
	self = open("/proc/self/ns/net", O_RDONLY);
	target = open(path, O_RDONLY);
	if (self < 0 || target < 0 || setns(target, CLONE_NEWNET) < 0)
		goto out;
	rc = fn(arg);
	setns(self, CLONE_NEWNET);
out:
	if (self >= 0)
		close(self);
	if (target >= 0)
		close(target);
	return rc;
}

/* The XDP program attached to ifname (in either mode), as an fd. */
static int fc_hook_fd(void *ifname)
{
	LIBBPF_OPTS(bpf_xdp_query_opts, q);

	if (bpf_xdp_query((int)if_nametoindex(ifname), 0, &q) || !q.prog_id)
		return -1;
	return bpf_prog_get_fd_by_id(q.prog_id);
}

/* The bench's namespace: a veth pair, fcb0 for xdp-filter, fcb1 for freqctl
 * in libxdp's dispatcher. */
static int fc_bench_ns(void)
{
	return fc_sh("ip netns add %s && ip -n %s link add fcb0 type veth peer name fcb1 && "
		     "ip -n %s link set fcb0 up && ip -n %s link set fcb1 up",
		     fc_b.ns, fc_b.ns, fc_b.ns, fc_b.ns);
}

/* xdp-filter as its users run it: loaded on an interface, one IP rule. */
static int fc_xdp_filter(bool have_ns, const char **why)
{
	if (system("command -v xdp-filter >/dev/null")) {
		*why = "xdp-filter not installed (Debian xdp-tools)";
		return -1;
	}
	if (!have_ns) {
		*why = "cannot create the bench namespace";
		return -1;
	}
	/* `ip netns exec` gives a fresh /sys: a private bpffs for xdp-filter's pins,
	 * gone with this shell; the program stays attached until the veth goes.
	 * Without libxdp's dispatcher, so that the row is xdp-filter alone, as
	 * freqctl's is freqctl alone; the dispatcher has a row of its own. */
	if (fc_sh("ip netns exec %s sh -c 'mount -t bpf bpf /sys/fs/bpf && "
		  "LIBXDP_SKIP_DISPATCHER=1 xdp-filter load fcb0 && "
		  "xdp-filter ip --mode src 198.18.0.99' >/dev/null",
		  fc_b.ns)) {
		*why = "xdp-filter load or ip failed";
		return -1;
	}
	return fc_in_ns(fc_hook_fd, "fcb0");
}

/* Attaches freqctl, on the bench's pin dir, to fcb1 the way `freqctl attach`
 * does, and returns the dispatcher libxdp put on the hook. */
static int fc_dispatched(void *why)
{
	struct fc_attachment a;
	struct fc_maps m = { .dirfd = -1 };
	struct fc_err err;
	int rc;

	rc = fc_maps_open(fc_b.pin, &m, &err);
	if (!rc)
		rc = fc_attach(fc_b.pin, &m, "fcb1", FC_MODE_XDP_GENERIC, FC_XDP_PRIO_DEFAULT, &a, &err);
	fc_maps_close(&m);
	if (rc < 0) {
		fprintf(stderr, "fc_bench: freqctl attach: %s\n", err.msg);
		*(const char **)why = "freqctl attach failed";
		return -1;
	}
	if (!a.dispatched) {
#ifdef FC_HAVE_LIBXDP
		*(const char **)why = "libxdp's dispatcher cannot load on this kernel (freqctl -v attach says why)";
#else
		*(const char **)why = "built without libxdp (Debian libxdp-dev)";
#endif
		return -1;
	}
	return fc_hook_fd("fcb1");
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
static void fc_draw_host(const struct fc_pfx_list *l, bool unbanned, char *out)
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

/* The row's frames, each through every program (dp_fd < 0: no dispatcher). */
static void fc_row_init(struct fc_row_run *rr, const struct fc_row *row, const int *fds)
{
	const struct fc_pfx_list *from = row->draw == FC_DRAW_BAN4 ? &fc_b.ban4 :
					 row->draw == FC_DRAW_POL4 ? &fc_b.pol4 :
					 row->draw == FC_DRAW_BAN6 ? &fc_b.ban6 : NULL;
	struct fc_frame_spec spec = row->spec;
	int i, p;

	rr->nframes = from ? (from->n ? fc_b.samples : 0) : 1;
	for (i = 0; i < rr->nframes; i++) {
		if (from)
			fc_draw_host(from, row->draw == FC_DRAW_POL4, rr->src[i]);
		else
			snprintf(rr->src[i], sizeof(rr->src[i]), "%s", row->spec.src);
		spec.src = rr->src[i];
		for (p = 0; p < FC_NPROGS; p++)
			fc_subject_init(&rr->s[i][p], fds[p], &spec);
	}
}

static double fc_run(const struct fc_subject *s)
{
	LIBBPF_OPTS(bpf_test_run_opts, opts, .data_in = s->frame, .data_size_in = (__u32)s->len,
		    .repeat = fc_b.repeat);

	if (bpf_prog_test_run_opts(s->prog_fd, &opts)) {
		fprintf(stderr, "fc_bench: test run of prog fd %d: %s\n", s->prog_fd, strerror(errno));
		exit(1);
	}
	/* The kernel's own timing: it stops the clock while the CPU is taken away
	 * (a wall clock here is stretched by whatever else the machine runs), at
	 * the price of whole-ns resolution. */
	return opts.duration;
}

static int fc_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* The median of v, which stays in its order (a round's figures are paired
 * across programs). */
static double fc_median(const double *v, int n)
{
	double w[FC_MAX_ROUNDS > FC_MAX_SAMPLES ? FC_MAX_ROUNDS : FC_MAX_SAMPLES];

	memcpy(w, v, (size_t)n * sizeof(*v));
	qsort(w, (size_t)n, sizeof(*w), fc_cmp_double);
	return n % 2 ? w[n / 2] : (w[n / 2 - 1] + w[n / 2]) / 2;
}

/* Runs every subject once per round, rounds interleaved, and keeps medians. */
static void fc_measure(struct fc_row_run *rr, size_t nrows)
{
	size_t r, i;
	int f, p;

	for (r = 0; r < (size_t)fc_b.rounds; r++)
		for (i = 0; i < nrows; i++) {
			fc_progress("round %zu/%d: row %zu/%zu", r + 1, fc_b.rounds, i + 1, nrows);
			for (f = 0; f < rr[i].nframes; f++)
				for (p = 0; p < FC_NPROGS; p++)
					if (rr[i].s[f][p].prog_fd >= 0)
						rr[i].s[f][p].ns[r] = fc_run(&rr[i].s[f][p]);
		}
	fc_progress("");
	for (i = 0; i < nrows; i++)
		for (f = 0; f < rr[i].nframes; f++)
			for (p = 0; p < FC_NPROGS; p++)
				rr[i].s[f][p].median = fc_median(rr[i].s[f][p].ns, fc_b.rounds);
}

/* A row's figures for program p: ns and ratios of its one frame, or over a
 * sample the median of each (max: the slowest frame's instead). */
struct fc_fig {
	double ns, x_empty, x_xf; /* x_xf 0: no xdp-filter */
	const char *src;          /* the slowest frame's source, for max */
};

static struct fc_fig fc_row_fig(const struct fc_row_run *rr, int p, bool max)
{
	double ns[FC_MAX_SAMPLES], xe[FC_MAX_SAMPLES], xf[FC_MAX_SAMPLES];
	struct fc_fig fig = { 0 };
	int f, worst = 0;

	for (f = 0; f < rr->nframes; f++) {
		const struct fc_subject *s = rr->s[f];

		ns[f] = s[p].median;
		xe[f] = s[p].median / s[FC_P_EMPTY].median;
		xf[f] = s[FC_P_XDP_FILTER].prog_fd >= 0 ? s[p].median / s[FC_P_XDP_FILTER].median : 0;
		if (xf[f] > xf[worst] || (xf[f] == xf[worst] && ns[f] > ns[worst]))
			worst = f;
	}
	if (max) {
		fig = (struct fc_fig){ ns[worst], xe[worst], xf[worst], rr->src[worst] };
		return fig;
	}
	fig.ns = fc_median(ns, rr->nframes);
	fig.x_empty = fc_median(xe, rr->nframes);
	fig.x_xf = fc_median(xf, rr->nframes);
	return fig;
}

/* Program p's ns over program q's in a row: per frame the median over the
 * rounds of the ratio within each round (the load that slows one slows the
 * other), then the median over the frames. */
static double fc_paired(const struct fc_row_run *rr, int p, int q)
{
	double x[FC_MAX_ROUNDS], xf[FC_MAX_SAMPLES];
	int f, r;

	for (f = 0; f < rr->nframes; f++) {
		for (r = 0; r < fc_b.rounds; r++)
			x[r] = rr->s[f][p].ns[r] / rr->s[f][q].ns[r];
		xf[f] = fc_median(x, fc_b.rounds);
	}
	return fc_median(xf, rr->nframes);
}

/* Each row's fc_paired of programs p and q, or null without both. */
static json_t *fc_ratios_json(const struct fc_row_run *rr, const int *fds, int p, int q)
{
	json_t *o;
	size_t i;

	if (fds[p] < 0 || fds[q] < 0)
		return json_null();
	o = json_object();
	for (i = 0; i < FC_NROWS; i++)
		if (rr[i].nframes)
			json_object_set_new(o, fc_rows[i].name, json_real(fc_paired(&rr[i], p, q)));
	return o;
}

static void fc_ratios_print(const char *title, const struct fc_row_run *rr, const int *fds, int p, int q)
{
	size_t i;

	if (fds[p] < 0 || fds[q] < 0)
		return;
	printf("\n%s:\n", title);
	for (i = 0; i < FC_NROWS; i++)
		if (rr[i].nframes)
			printf("  %-42s %5.2f\n", fc_rows[i].name, fc_paired(&rr[i], p, q));
}

static void fc_usage(FILE *f)
{
	fprintf(f, "Usage: fc_bench [--bans N] [--prefixes N] [--prefixes6 N] [--policies N] [--samples N]\n"
		   "                [--repeat N] [--rounds N] [--freqctl PATH] [--baseline OBJ] [--json]\n\n"
		   "Per-packet cost of freqctl_xdp on each path with N exact bans (default 1000000), N IPv4\n"
		   "prefix bans of /8 to /32 (100000), N IPv6 prefix bans (10000) and N policies (65536,\n"
		   "one of them ip=*) stored, against an empty XDP program and xdp-filter with one IP\n"
		   "rule, and run through libxdp's dispatcher against alone, via BPF_PROG_TEST_RUN;\n"
		   "medians of interleaved rounds. Prefix rows draw --samples sources (16) from what is\n"
		   "loaded. Times `freqctl ban import` and one `freqctl policy add` (with its peak RSS).\n"
		   "--baseline runs another build's freqctl.bpf.o (same map layouts) in the same rounds\n"
		   "and prints this build's ns over its own.\n"
		   "Needs root. Creates and removes its own namespace, pin dir, store and libxdp state.\n");
}

static json_t *fc_fig_json(const char *prog, const char *row, const struct fc_fig *g, int nframes)
{
	return json_pack("{s:s, s:s, s:i, s:f, s:f, s:o, s:s?}", "program", prog, "frame", row, "frames", nframes,
			 "ns_per_packet", g->ns, "x_empty", g->x_empty, "x_xdp_filter",
			 g->x_xf > 0 ? json_real(g->x_xf) : json_null(), "slowest_source", g->src);
}

static void fc_fig_print(const char *prog, const char *row, const struct fc_fig *g, bool target)
{
	printf("%-22s %-42s %7.1f %8.2f", prog, row, g->ns, g->x_empty);
	if (g->x_xf > 0)
		printf(" %12.2f%s", g->x_xf, !target ? "" : g->x_xf <= 1.0 ? "  target <= 1.0: met" : "  target <= 1.0: MISSED");
	putchar('\n');
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "bans", required_argument, NULL, 'b' },      { "prefixes", required_argument, NULL, 'p' },
		{ "prefixes6", required_argument, NULL, '6' }, { "policies", required_argument, NULL, 'P' },
		{ "samples", required_argument, NULL, 's' },   { "repeat", required_argument, NULL, 'r' },
		{ "rounds", required_argument, NULL, 'n' },    { "freqctl", required_argument, NULL, 'f' },
		{ "baseline", required_argument, NULL, 'B' },  { "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	LIBBPF_OPTS(bpf_object_open_opts, oopts);
	static struct fc_row_run rr[FC_NROWS];
	struct bench_empty *empty = NULL;
	struct bpf_object *base = NULL;
	struct freqctl *fq = NULL;
	const char *why = NULL, *dwhy = "cannot create the bench namespace";
	double import_s = 0, pol_s = 0, add_s = 0;
	long add_rss = 0;
	int c, fds[FC_NPROGS], rc = 1;
	bool have_ns;
	size_t i;
	int p;
	json_t *doc, *rows, *ratios;
	char file[160], name[96];

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'b':
			fc_b.bans = strtol(optarg, NULL, 10);
			break;
		case 'p':
			fc_b.prefixes4 = strtol(optarg, NULL, 10);
			break;
		case '6':
			fc_b.prefixes6 = strtol(optarg, NULL, 10);
			break;
		case 'P':
			fc_b.policies = strtol(optarg, NULL, 10);
			break;
		case 's':
			fc_b.samples = atoi(optarg);
			break;
		case 'r':
			fc_b.repeat = (unsigned)strtoul(optarg, NULL, 10);
			break;
		case 'n':
			fc_b.rounds = atoi(optarg);
			break;
		case 'f':
			fc_b.freqctl = optarg;
			break;
		case 'B':
			fc_b.baseline = optarg;
			break;
		case 'j':
			fc_b.json = true;
			break;
		case 'h':
			fc_usage(stdout);
			return 0;
		default:
			fc_usage(stderr);
			return 2;
		}
	}
	if (fc_b.bans < 8 || fc_b.bans > FC_MAX_BANS || fc_b.prefixes4 < 0 || fc_b.prefixes4 > 500000 ||
	    fc_b.prefixes6 < 0 || fc_b.prefixes6 > 500000 || fc_b.policies < 64 || fc_b.policies > FC_MAX_POLICIES ||
	    fc_b.samples < 1 || fc_b.samples > FC_MAX_SAMPLES || !fc_b.repeat || fc_b.rounds < 1 ||
	    fc_b.rounds > FC_MAX_ROUNDS) {
		fprintf(stderr,
			"fc_bench: --bans 8-%d, --prefixes and --prefixes6 0-500000, --policies 64-%d, --samples 1-%d, "
			"--rounds 1-%d\n",
			FC_MAX_BANS, FC_MAX_POLICIES, FC_MAX_SAMPLES, FC_MAX_ROUNDS);
		return 2;
	}
	if (geteuid() != 0) {
		fprintf(stderr, "fc_bench: needs root (BPF, network namespaces)\n");
		return 1;
	}
	fc_tty = isatty(STDERR_FILENO);
	libbpf_set_print(fc_libbpf_print);
	snprintf(fc_b.tag, sizeof(fc_b.tag), "%d", (int)getpid());
	snprintf(fc_b.ns, sizeof(fc_b.ns), "fc-bench-%s", fc_b.tag);
	snprintf(fc_b.pin, sizeof(fc_b.pin), "/sys/fs/bpf/fc-bench-%s", fc_b.tag);
	snprintf(fc_b.xdpfs, sizeof(fc_b.xdpfs), "%s-xdp", fc_b.pin);
	snprintf(fc_b.dir, sizeof(fc_b.dir), "/tmp/fc-bench-%s", fc_b.tag);
	snprintf(fc_b.db, sizeof(fc_b.db), "%s/store.db", fc_b.dir);
	atexit(fc_cleanup);
	mkdir(fc_b.dir, 0700);
	mkdir(fc_b.xdpfs, 0700);

	fc_progress("making %ld + %ld prefixes", fc_b.prefixes4, fc_b.prefixes6);
	fc_b.rng = 13;
	if (fc_make_prefixes(&fc_b.ban4, (size_t)fc_b.prefixes4, fc_w4, 32, 24, fc_rand_pfx4) < 0 ||
	    fc_make_prefixes(&fc_b.ban6, (size_t)fc_b.prefixes6, fc_w6, 128, 64, fc_rand_pfx6) < 0 ||
	    fc_make_prefixes(&fc_b.pol4, (size_t)fc_b.policies / 32, fc_wpol, 28, 24, fc_rand_pfx4) < 0)
		goto out;
	fc_progress("writing %ld bans", fc_b.bans + fc_b.prefixes4 + fc_b.prefixes6);
	snprintf(file, sizeof(file), "%s/bans.txt", fc_b.dir);
	if (fc_write_bans(file) < 0)
		goto out;
	fc_progress("freqctl ban import");
	if (fc_import(file, &import_s)) {
		fprintf(stderr, "fc_bench: freqctl ban import failed\n");
		goto out;
	}
	fc_progress("adding %ld policies", fc_b.policies - 1);
	if (fc_add_policies(&pol_s) < 0)
		goto out;
	fc_progress("freqctl policy add");
	if (fc_time_policy_add(&add_s, &add_rss) < 0) {
		fprintf(stderr, "fc_bench: freqctl policy add failed\n");
		goto out;
	}

	empty = bench_empty__open_and_load();
	if (!empty) {
		fprintf(stderr, "fc_bench: cannot load the empty program: %s\n", strerror(errno));
		goto out;
	}
	oopts.pin_root_path = fc_b.pin;
	fq = freqctl__open_opts(&oopts);
	if (fq)
		fq->rodata->fc_tick_ns = fc_clock_tick_ns();
	if (!fq || (c = freqctl__load(fq))) {
		fprintf(stderr, "fc_bench: cannot load freqctl: %s\n", strerror(fq ? -c : errno));
		goto out;
	}
	fds[FC_P_EMPTY] = bpf_program__fd(empty->progs.fc_bench_empty);
	fds[FC_P_FREQCTL] = bpf_program__fd(fq->progs.freqctl_xdp);
	fds[FC_P_BASELINE] = fc_b.baseline ? fc_baseline(&base) : -1;
	if (fc_b.baseline && fds[FC_P_BASELINE] < 0)
		goto out;
	have_ns = !fc_bench_ns();
	fds[FC_P_XDP_FILTER] = fc_xdp_filter(have_ns, &why);
	/* libxdp's state for the dispatcher made here, removed with the rest
	 * (xdp-filter, above, kept its own in its private bpffs). */
	setenv("LIBXDP_BPFFS", fc_b.xdpfs, 1);
	fds[FC_P_DISPATCHED] = have_ns ? fc_in_ns(fc_dispatched, &dwhy) : -1;
	fc_b.rng = 29;
	for (i = 0; i < FC_NROWS; i++)
		fc_row_init(&rr[i], &fc_rows[i], fds);
	fc_measure(rr, FC_NROWS);

	if (fc_b.json) {
		rows = json_array();
		for (i = 0; i < FC_NROWS; i++) {
			struct fc_fig g, w;

			for (p = 0; rr[i].nframes && p < FC_NPROGS; p++) {
				if (fds[p] < 0)
					continue;
				g = fc_row_fig(&rr[i], p, false);
				json_array_append_new(rows, fc_fig_json(fc_prog_names[p], fc_rows[i].name, &g, rr[i].nframes));
			}
			if (rr[i].nframes > 1) {
				w = fc_row_fig(&rr[i], FC_P_FREQCTL, true);
				snprintf(name, sizeof(name), "%s, slowest source", fc_rows[i].name);
				json_array_append_new(rows, fc_fig_json(fc_prog_names[FC_P_FREQCTL], name, &w, 1));
			}
		}
		/* The dispatcher's price: freqctl through it over freqctl alone. */
		ratios = fc_ratios_json(rr, fds, FC_P_DISPATCHED, FC_P_FREQCTL);
		doc = json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:i, s:i, s:f, s:f, s:f, s:I, s:s?, s:s?, s:o, s:o, s:o, s:o}",
				"bans", (json_int_t)fc_b.bans, "prefixes4", (json_int_t)fc_b.ban4.n, "prefixes6",
				(json_int_t)fc_b.ban6.n, "policies", (json_int_t)fc_b.policies, "prefix_policies",
				(json_int_t)fc_b.pol4.n, "repeat", (json_int_t)fc_b.repeat, "rounds", fc_b.rounds,
				"samples", fc_b.samples, "import_seconds", import_s, "policies_publish_seconds", pol_s,
				"policy_add_seconds", add_s, "policy_add_maxrss_kib", (json_int_t)add_rss,
				"xdp_filter_skipped", why, "dispatcher_skipped", fds[FC_P_DISPATCHED] >= 0 ? NULL : dwhy,
				"results", rows, "dispatcher_x_direct", ratios, "x_xdp_filter_paired",
				fc_ratios_json(rr, fds, FC_P_FREQCTL, FC_P_XDP_FILTER), "x_baseline",
				fc_ratios_json(rr, fds, FC_P_FREQCTL, FC_P_BASELINE));
		json_dumpf(doc, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
		putchar('\n');
		json_decref(doc);
	} else {
		printf("BPF_PROG_TEST_RUN (kernel-timed, whole ns), %u repeats x %d interleaved rounds, median.\n"
		       "freqctl has %ld exact bans, %zu IPv4 prefix bans (/8 to /32), %zu IPv6 prefix bans and %ld\n"
		       "policies (%ld exact-address, %zu prefix, one ip=* counting TCP SYNs) stored. Prefix rows:\n"
		       "the median over %d sources drawn from the prefixes, and the slowest of them.\n\n",
		       fc_b.repeat, fc_b.rounds, fc_b.bans, fc_b.ban4.n, fc_b.ban6.n, fc_b.policies, fc_nexact() + 1,
		       fc_b.pol4.n, fc_b.samples);
		printf("%-22s %-42s %7s %8s %12s\n", "program", "frame", "ns/pkt", "x empty", "x xdp-filter");
		for (i = 0; i < FC_NROWS; i++) {
			struct fc_fig g;

			for (p = 0; rr[i].nframes && p < FC_NPROGS; p++) {
				if (fds[p] < 0)
					continue;
				g = fc_row_fig(&rr[i], p, false);
				fc_fig_print(fc_prog_names[p], fc_rows[i].name, &g, p == FC_P_FREQCTL && fc_rows[i].target);
			}
			if (rr[i].nframes > 1) {
				g = fc_row_fig(&rr[i], FC_P_FREQCTL, true);
				snprintf(name, sizeof(name), "  slowest: %s", g.src);
				fc_fig_print(fc_prog_names[FC_P_FREQCTL], name, &g, false);
			}
		}
		if (why)
			printf("xdp-filter: SKIPPED: %s\n", why);
		if (fds[FC_P_DISPATCHED] < 0)
			printf("freqctl in libxdp's dispatcher: SKIPPED: %s\n", dwhy);
		else
			fc_ratios_print("freqctl through libxdp's dispatcher (alone in it, as attach puts it) / freqctl alone",
					rr, fds, FC_P_DISPATCHED, FC_P_FREQCTL);
		fc_ratios_print("freqctl / xdp-filter, paired (median of each round's ratio)", rr, fds, FC_P_FREQCTL,
				FC_P_XDP_FILTER);
		fc_ratios_print("freqctl / freqctl --baseline, paired", rr, fds, FC_P_FREQCTL, FC_P_BASELINE);
		fc_ratios_print("freqctl --baseline / xdp-filter, paired", rr, fds, FC_P_BASELINE, FC_P_XDP_FILTER);
		printf("\nfreqctl ban import of %ld bans: %.2f s (target < 10 s: %s)\n",
		       fc_b.bans + (long)fc_b.ban4.n + (long)fc_b.ban6.n, import_s, import_s < 10 ? "met" : "MISSED");
		printf("%ld policies stored and published in one transaction: %.2f s\n", fc_b.policies - 1, pol_s);
		printf("freqctl policy add with all of that stored: %.1f ms (target <= 20 ms: %s), peak RSS %.1f MiB\n",
		       add_s * 1000, add_s <= 0.020 ? "met" : "MISSED", (double)add_rss / 1024);
	}
	rc = 0;
out:
	bench_empty__destroy(empty);
	bpf_object__close(base);
	freqctl__destroy(fq);
	return rc;
}
