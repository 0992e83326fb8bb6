// SPDX-License-Identifier: BSD-2-Clause
/*
 * make bench: the per-packet cost of freqctl's XDP program with a million
 * bans and ten thousand policies, against an empty XDP program and
 * xdp-filter (Debian xdp-tools) with one IP rule, all run through
 * BPF_PROG_TEST_RUN on the same frames in one run, rounds interleaved,
 * medians reported as ns/packet and as ratios. Also freqctl run through
 * libxdp's dispatcher (as `freqctl attach` shares the XDP hook), against
 * freqctl alone, and times `freqctl ban import` of the million bans
 * (target: < 10 s).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <sys/stat.h>
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
#include <bpf/libbpf.h>
#include <jansson.h>

#include "bench_empty.skel.h"
#include "fc_attach.h"
#include "fc_duration.h"
#include "fc_frames.h"
#include "fc_kern.h"
#include "fc_store.h"
#include "fc_sync.h"
#include "freqctl.skel.h"

#define FC_MAX_ROUNDS 31
#define FC_POLICIES   10000

/* The frames every program runs, and whether the target applies. */
struct fc_case {
	const char *name;
	struct fc_frame_spec spec;
	bool target;
};

static const struct fc_case fc_cases[] = {
	{ "banned (exact ban)", { "10.0.0.7", IPPROTO_UDP, .payload = 18 }, true },
	{ "unmatched", { "198.18.0.8", IPPROTO_UDP, .payload = 18 }, true },
	{ "exact-address GCRA policy", { "10.200.0.7", IPPROTO_UDP, .payload = 18 }, true },
	{ "exact-address sliding-window policy", { "10.200.0.8", IPPROTO_UDP, .payload = 18 }, true },
	{ "exact-address GCRA policy, warming up", { "10.200.0.9", IPPROTO_UDP, .payload = 18 }, true },
	{ "exact-address GCRA policy, warmed up", { "10.200.0.10", IPPROTO_UDP, .payload = 18 }, true },
	{ "ip=* GCRA policy (TCP SYN)", { "198.18.0.8", IPPROTO_TCP, 0x02, .payload = 6 }, true },
	/* The usual setup: a general ip=* limit and specific ones, both charged. */
	{ "exact-address + ip=* policies (TCP SYN)", { "10.200.0.7", IPPROTO_TCP, 0x02, .payload = 6 }, true },
};

/* With real prefixes too: informational (xdp-filter has no prefixes). */
static const struct fc_case fc_pfx_cases[] = {
	{ "banned (prefix ban)", { "172.16.0.9", IPPROTO_UDP, .payload = 18 }, false },
	{ "unmatched", { "198.18.0.8", IPPROTO_UDP, .payload = 18 }, false },
};

#define FC_NCASES (sizeof(fc_cases) / sizeof(fc_cases[0]))

enum { FC_P_EMPTY, FC_P_XDP_FILTER, FC_P_FREQCTL, FC_P_DISPATCHED, FC_NPROGS };

static const char *const fc_prog_names[FC_NPROGS] = { "empty XDP program", "xdp-filter, 1 IP rule", "freqctl",
						       "freqctl in dispatcher" };

/* One program on one frame: its timings and their median. */
struct fc_subject {
	int prog_fd;
	uint8_t frame[FC_FRAME_MAX];
	size_t len;
	double ns[FC_MAX_ROUNDS];
	double median;
};

static struct {
	long bans;
	long prefixes;
	unsigned repeat;
	int rounds;
	bool json;
	const char *freqctl;
	char tag[32];
	char ns[48];
	char pin[96];
	char xdpfs[112];
	char dir[96];
	char db[128];
} fc_b = { 1000000, 1000, 2000000, 9, false, "build/freqctl" };

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

/* Writes bans.txt: fc_b.bans exact IPv4 addresses (10.0.0.0 upwards, with
 * 10.0.0.7 the banned frame's source), then the IPv4 prefixes if asked. */
static int fc_write_bans(const char *path, long exact, long prefixes)
{
	FILE *f = fopen(path, "w");
	long i;

	if (!f)
		return -1;
	for (i = 0; i < exact; i++)
		fprintf(f, "10.%ld.%ld.%ld\n", (i >> 16) & 255, (i >> 8) & 255, i & 255);
	for (i = 0; i < prefixes; i++)
		fprintf(f, "172.%ld.%ld.0/24\n", 16 + ((i >> 8) & 15), i & 255);
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

/* FC_POLICIES policies through the real store and publish path, in one
 * transaction: exact-address GCRA policies on 10.200.0.0/16 at a rate the
 * benchmark never exhausts, one of them (10.200.0.8) a sliding window at
 * the most it counts (16,000,000/s, so part of a round may be refused), one
 * (10.200.0.9) warming up over a day (the ramp's arithmetic on every
 * packet), one (10.200.0.10) with a warm-up whose ramp ended an hour ago
 * (its bucket set so), and one ip=* GCRA policy charging TCP SYNs. */
static int fc_add_policies(double *secs)
{
	struct fc_policy_spec p = { .algo = FC_ALGO_GCRA };
	struct fc_bucket warm = { 0 };
	struct fc_sync_result res;
	__u32 warm_slot = 0;
	struct fc_policy_row row;
	struct fc_store *st = NULL;
	struct fc_maps m = { .dirfd = -1 };
	struct fc_err err;
	double t0 = fc_now();
	char match[64];
	int i, rc = -1;

	if (fc_store_open(fc_b.db, &st, &err) < 0 || fc_store_begin(st, &err) < 0)
		goto out;
	for (i = 1; i <= FC_POLICIES; i++) {
		p.id = (uint32_t)i;
		if (i < FC_POLICIES)
			snprintf(match, sizeof(match), "ip=10.200.%d.%d", i / 256, i % 256);
		else
			snprintf(match, sizeof(match), "ip=*");
		p.count = i < FC_POLICIES ? FC_COUNT_PACKETS : FC_COUNT_SYN;
		p.algo = i == 8 ? FC_ALGO_SLIDING : FC_ALGO_GCRA;
		p.warmup = i == 9 ? 86400 : i == 10 ? 3600 : 0;
		if (fc_match_parse(match, &p, &err) < 0 ||
		    fc_rates_parse(i == 8 ? "16000000/s" : "1000000000/s", &p, &err) < 0 ||
		    fc_store_policy_put(st, &p, (int64_t)time(NULL), &row, &err) < 0)
			goto out;
		if (i == 10)
			warm_slot = row.slot;
	}
	if (fc_maps_open(fc_b.pin, &m, &err) < 0 || fc_sync(st, &m, fc_b.pin, (int64_t)time(NULL), 1, &res, &err) < 0 ||
	    fc_store_commit(st, &err) < 0)
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
	fc_store_close(st);
	*secs = fc_now() - t0;
	return rc;
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

/* Runs every subject once per round, rounds interleaved, and keeps medians. */
static void fc_measure(struct fc_subject *v, int n)
{
	int r, i;

	for (r = 0; r < fc_b.rounds; r++) {
		for (i = 0; i < n; i++) {
			fc_progress("round %d/%d: %d/%d", r + 1, fc_b.rounds, i + 1, n);
			if (v[i].prog_fd >= 0)
				v[i].ns[r] = fc_run(&v[i]);
		}
	}
	fc_progress("");
	for (i = 0; i < n; i++) {
		qsort(v[i].ns, (size_t)fc_b.rounds, sizeof(double), fc_cmp_double);
		v[i].median = v[i].ns[fc_b.rounds / 2];
	}
}

static void fc_usage(FILE *f)
{
	fprintf(f, "Usage: fc_bench [--bans N] [--prefixes N] [--repeat N] [--rounds N] [--freqctl PATH] [--json]\n\n"
		   "Per-packet cost of freqctl_xdp with N exact bans (default 1000000), against an empty\n"
		   "XDP program and xdp-filter with one IP rule, and run through libxdp's dispatcher\n"
		   "against alone, via BPF_PROG_TEST_RUN; medians of interleaved rounds. Needs root.\n"
		   "Creates and removes its own namespace, pin dir and libxdp state.\n");
}

static json_t *fc_row_json(const char *prog, const char *frame, double ns, double empty, double xf)
{
	return json_pack("{s:s, s:s, s:f, s:f, s:o}", "program", prog, "frame", frame, "ns_per_packet", ns, "x_empty",
			 ns / empty, "x_xdp_filter", xf > 0 ? json_real(ns / xf) : json_null());
}

static void fc_row_print(const char *prog, const char *frame, double ns, double empty, double xf, bool target)
{
	printf("%-22s %-40s %7.0f %8.2f", prog, frame, ns, ns / empty);
	if (xf > 0)
		printf(" %12.2f%s", ns / xf, !target ? "" : ns <= xf ? "  target <= 1.0: met" : "  target <= 1.0: MISSED");
	putchar('\n');
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "bans", required_argument, NULL, 'b' },   { "prefixes", required_argument, NULL, 'p' },
		{ "repeat", required_argument, NULL, 'r' }, { "rounds", required_argument, NULL, 'n' },
		{ "freqctl", required_argument, NULL, 'f' }, { "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },         { 0 },
	};
	LIBBPF_OPTS(bpf_object_open_opts, oopts);
	struct fc_subject v[FC_NCASES][FC_NPROGS], pv[2];
	struct bench_empty *empty = NULL;
	struct freqctl *fq = NULL;
	const char *why = NULL, *dwhy = "cannot create the bench namespace";
	double import_s = 0, import_pfx_s = 0, pol_s = 0;
	int c, xf_fd, fq_fd, dp_fd, rc = 1;
	bool have_ns;
	size_t f, p;
	json_t *doc, *rows, *ratios;
	char file[160];

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'b':
			fc_b.bans = strtol(optarg, NULL, 10);
			break;
		case 'p':
			fc_b.prefixes = strtol(optarg, NULL, 10);
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
	if (fc_b.bans < 8 || fc_b.bans > 1000000 || fc_b.prefixes < 0 || fc_b.prefixes > 4096 || !fc_b.repeat ||
	    fc_b.rounds < 1 || fc_b.rounds > FC_MAX_ROUNDS) {
		fprintf(stderr, "fc_bench: --bans 8-1000000, --prefixes 0-4096, --rounds 1-%d\n", FC_MAX_ROUNDS);
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

	fc_progress("writing %ld bans", fc_b.bans);
	snprintf(file, sizeof(file), "%s/bans.txt", fc_b.dir);
	if (fc_write_bans(file, fc_b.bans, 0) < 0)
		goto out;
	fc_progress("freqctl ban import of %ld bans", fc_b.bans);
	if (fc_import(file, &import_s)) {
		fprintf(stderr, "fc_bench: freqctl ban import failed\n");
		goto out;
	}
	fc_progress("adding %d policies", FC_POLICIES);
	if (fc_add_policies(&pol_s) < 0)
		goto out;

	empty = bench_empty__open_and_load();
	if (!empty) {
		fprintf(stderr, "fc_bench: cannot load the empty program: %s\n", strerror(errno));
		goto out;
	}
	oopts.pin_root_path = fc_b.pin;
	fq = freqctl__open_opts(&oopts);
	if (!fq || (c = freqctl__load(fq))) {
		fprintf(stderr, "fc_bench: cannot load freqctl: %s\n", strerror(fq ? -c : errno));
		goto out;
	}
	fq_fd = bpf_program__fd(fq->progs.freqctl_xdp);
	have_ns = !fc_bench_ns();
	xf_fd = fc_xdp_filter(have_ns, &why);
	/* libxdp's state for the dispatcher made here, removed with the rest
	 * (xdp-filter, above, kept its own in its private bpffs). */
	setenv("LIBXDP_BPFFS", fc_b.xdpfs, 1);
	dp_fd = have_ns ? fc_in_ns(fc_dispatched, &dwhy) : -1;
	for (f = 0; f < FC_NCASES; f++) {
		fc_subject_init(&v[f][FC_P_EMPTY], bpf_program__fd(empty->progs.fc_bench_empty), &fc_cases[f].spec);
		fc_subject_init(&v[f][FC_P_XDP_FILTER], xf_fd, &fc_cases[f].spec);
		fc_subject_init(&v[f][FC_P_FREQCTL], fq_fd, &fc_cases[f].spec);
		fc_subject_init(&v[f][FC_P_DISPATCHED], dp_fd, &fc_cases[f].spec);
	}
	fc_measure(&v[0][0], (int)(FC_NCASES * FC_NPROGS));

	if (fc_b.prefixes) {
		snprintf(file, sizeof(file), "%s/prefixes.txt", fc_b.dir);
		if (fc_write_bans(file, 0, fc_b.prefixes) < 0 || fc_import(file, &import_pfx_s))
			goto out;
		for (f = 0; f < 2; f++)
			fc_subject_init(&pv[f], fq_fd, &fc_pfx_cases[f].spec);
		fc_measure(pv, 2);
	}

	if (fc_b.json) {
		rows = json_array();
		for (f = 0; f < FC_NCASES; f++)
			for (p = 0; p < FC_NPROGS; p++)
				if (v[f][p].prog_fd >= 0)
					json_array_append_new(rows, fc_row_json(fc_prog_names[p], fc_cases[f].name,
										 v[f][p].median, v[f][FC_P_EMPTY].median,
										 v[f][FC_P_XDP_FILTER].median));
		for (f = 0; fc_b.prefixes && f < 2; f++)
			json_array_append_new(rows, fc_row_json("freqctl, + prefixes", fc_pfx_cases[f].name,
								 pv[f].median, v[1][FC_P_EMPTY].median,
								 v[1][FC_P_XDP_FILTER].median));
		/* The dispatcher's price: freqctl through it over freqctl alone. */
		ratios = dp_fd >= 0 ? json_object() : json_null();
		for (f = 0; dp_fd >= 0 && f < FC_NCASES; f++)
			json_object_set_new(ratios, fc_cases[f].name,
					    json_real(v[f][FC_P_DISPATCHED].median / v[f][FC_P_FREQCTL].median));
		doc = json_pack("{s:I, s:I, s:I, s:I, s:i, s:f, s:f, s:s?, s:s?, s:o, s:o}", "bans",
				(json_int_t)fc_b.bans, "policies", (json_int_t)FC_POLICIES, "prefixes",
				(json_int_t)fc_b.prefixes, "repeat", (json_int_t)fc_b.repeat, "rounds", fc_b.rounds,
				"import_seconds", import_s, "policies_publish_seconds", pol_s, "xdp_filter_skipped", why,
				"dispatcher_skipped", dp_fd >= 0 ? NULL : dwhy, "results", rows,
				"dispatcher_x_direct", ratios);
		json_dumpf(doc, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
		putchar('\n');
		json_decref(doc);
	} else {
		printf("BPF_PROG_TEST_RUN (kernel-timed, whole ns), %u repeats x %d interleaved rounds, median.\n"
		       "freqctl has %ld exact bans and %d policies loaded (%d exact-address GCRA, one ip=* GCRA).\n\n",
		       fc_b.repeat, fc_b.rounds, fc_b.bans, FC_POLICIES, FC_POLICIES - 1);
		printf("%-22s %-40s %7s %8s %12s\n", "program", "frame", "ns/pkt", "x empty", "x xdp-filter");
		for (f = 0; f < FC_NCASES; f++)
			for (p = 0; p < FC_NPROGS; p++)
				if (v[f][p].prog_fd >= 0)
					fc_row_print(fc_prog_names[p], fc_cases[f].name, v[f][p].median,
						     v[f][FC_P_EMPTY].median, xf_fd >= 0 ? v[f][FC_P_XDP_FILTER].median : 0,
						     p == FC_P_FREQCTL && fc_cases[f].target);
		for (f = 0; fc_b.prefixes && f < 2; f++)
			fc_row_print("freqctl, + prefixes", fc_pfx_cases[f].name, pv[f].median, v[1][FC_P_EMPTY].median,
				     xf_fd >= 0 ? v[1][FC_P_XDP_FILTER].median : 0, false);
		if (why)
			printf("xdp-filter: SKIPPED: %s\n", why);
		if (dp_fd < 0)
			printf("freqctl in libxdp's dispatcher: SKIPPED: %s\n", dwhy);
		else
			printf("\nfreqctl through libxdp's dispatcher (alone in it, as attach puts it) / freqctl alone:\n");
		for (f = 0; dp_fd >= 0 && f < FC_NCASES; f++)
			printf("  %-40s %5.2f\n", fc_cases[f].name,
			       v[f][FC_P_DISPATCHED].median / v[f][FC_P_FREQCTL].median);
		printf("\nfreqctl ban import of %ld bans: %.2f s (target < 10 s: %s)\n", fc_b.bans, import_s,
		       import_s < 10 ? "met" : "MISSED");
		printf("%d policies stored and published in one transaction: %.2f s\n", FC_POLICIES, pol_s);
		if (fc_b.prefixes)
			printf("freqctl ban import of %ld IPv4 /24 prefixes on top: %.2f s\n", fc_b.prefixes, import_pfx_s);
	}
	rc = 0;
out:
	bench_empty__destroy(empty);
	freqctl__destroy(fq);
	return rc;
}
