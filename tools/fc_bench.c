// SPDX-License-Identifier: BSD-2-Clause
/*
 * make bench: the per-packet cost of freqctl's XDP program with a million
 * bans, against an empty XDP program and xdp-filter (Debian xdp-tools) with
 * one IP rule, all run through BPF_PROG_TEST_RUN on the same frames in one
 * run, rounds interleaved, medians reported as ns/packet and as ratios.
 * Also times `freqctl ban import` of the million bans (target: < 10 s).
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
#include "fc_frames.h"
#include "freqctl.skel.h"

#define FC_MAX_ROUNDS   31
#define FC_MAX_SUBJECTS 8

struct fc_subject {
	const char *name;
	const char *frame_name;
	bool target; /* the target applies: <= 1.0x xdp-filter */
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
	char dir[96];
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
		fc_sh("rm -rf '%s' '%s'", fc_b.pin, fc_b.dir);
}

static void fc_frame(struct fc_subject *s, const char *src, const char *what)
{
	struct fc_frame_spec spec = { .src = src, .l4proto = IPPROTO_UDP, .payload = 18 };

	s->len = fc_frame_build(&spec, s->frame);
	s->frame_name = what;
}

/* The XDP program attached to ifname inside the bench's namespace. */
static int fc_xdp_prog_in_ns(const char *ifname)
{
	LIBBPF_OPTS(bpf_xdp_query_opts, q);
	char path[128];
	int self, target, fd = -1;

	snprintf(path, sizeof(path), "/var/run/netns/%s", fc_b.ns);
	self = open("/proc/self/ns/net", O_RDONLY);
	target = open(path, O_RDONLY);
	if (self < 0 || target < 0 || setns(target, CLONE_NEWNET) < 0)
		goto out;
	if (!bpf_xdp_query((int)if_nametoindex(ifname), 0, &q) && q.prog_id)
		fd = bpf_prog_get_fd_by_id(q.prog_id);
	setns(self, CLONE_NEWNET);
out:
	if (self >= 0)
		close(self);
	if (target >= 0)
		close(target);
	return fd;
}

/* xdp-filter as its users run it: loaded on an interface, one IP rule. */
static int fc_xdp_filter(const char **why)
{
	if (system("command -v xdp-filter >/dev/null")) {
		*why = "xdp-filter not installed (Debian xdp-tools)";
		return -1;
	}
	if (fc_sh("ip netns add %s && ip -n %s link add fcb0 type veth peer name fcb1 && "
		  "ip -n %s link set fcb0 up && ip -n %s link set fcb1 up",
		  fc_b.ns, fc_b.ns, fc_b.ns, fc_b.ns)) {
		*why = "cannot create the bench namespace";
		return -1;
	}
	/* `ip netns exec` gives a fresh /sys: a private bpffs for xdp-filter's pins,
	 * gone with this shell; the program stays attached until the veth goes. */
	if (fc_sh("ip netns exec %s sh -c 'mount -t bpf bpf /sys/fs/bpf && xdp-filter load fcb0 && "
		  "xdp-filter ip --mode src 198.18.0.99' >/dev/null",
		  fc_b.ns)) {
		*why = "xdp-filter load or ip failed";
		return -1;
	}
	return fc_xdp_prog_in_ns("fcb0");
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

	rc = fc_sh("'%s' --db '%s/store.db' --pin-dir '%s' ban import '%s' >/dev/null", fc_b.freqctl, fc_b.dir,
		   fc_b.pin, file);
	*secs = fc_now() - t0;
	return rc;
}

static double fc_run(const struct fc_subject *s)
{
	LIBBPF_OPTS(bpf_test_run_opts, opts, .data_in = s->frame, .data_size_in = (__u32)s->len,
		    .repeat = fc_b.repeat);

	if (bpf_prog_test_run_opts(s->prog_fd, &opts)) {
		fprintf(stderr, "fc_bench: test run of %s: %s\n", s->name, strerror(errno));
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

static void fc_measure(struct fc_subject *v, int n)
{
	int r, i;

	for (r = 0; r < fc_b.rounds; r++) {
		for (i = 0; i < n; i++) {
			fc_progress("round %d/%d: %s", r + 1, fc_b.rounds, v[i].name);
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
		   "XDP program and xdp-filter with one IP rule, via BPF_PROG_TEST_RUN; medians of\n"
		   "interleaved rounds. Needs root. Creates and removes its own namespace and pin dir.\n");
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
	struct fc_subject v[FC_MAX_SUBJECTS] = {};
	struct bench_empty *empty = NULL;
	struct freqctl *fq = NULL;
	const char *why = NULL;
	double import_s = 0, import_pfx_s = 0, xf = 0;
	char file[160];
	int n = 0, c, i, xf_fd, rc = 1;
	json_t *doc, *rows;

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
	snprintf(fc_b.tag, sizeof(fc_b.tag), "%d", (int)getpid());
	snprintf(fc_b.ns, sizeof(fc_b.ns), "fc-bench-%s", fc_b.tag);
	snprintf(fc_b.pin, sizeof(fc_b.pin), "/sys/fs/bpf/fc-bench-%s", fc_b.tag);
	snprintf(fc_b.dir, sizeof(fc_b.dir), "/tmp/fc-bench-%s", fc_b.tag);
	atexit(fc_cleanup);
	mkdir(fc_b.dir, 0700);

	fc_progress("writing %ld bans", fc_b.bans);
	snprintf(file, sizeof(file), "%s/bans.txt", fc_b.dir);
	if (fc_write_bans(file, fc_b.bans, 0) < 0)
		goto out;
	fc_progress("freqctl ban import of %ld bans", fc_b.bans);
	if (fc_import(file, &import_s)) {
		fprintf(stderr, "fc_bench: freqctl ban import failed\n");
		goto out;
	}

	empty = bench_empty__open_and_load();
	oopts.pin_root_path = fc_b.pin;
	fq = freqctl__open_opts(&oopts);
	if (!empty || !fq || freqctl__load(fq)) {
		fprintf(stderr, "fc_bench: cannot load the programs: %s\n", strerror(errno));
		goto out;
	}
	v[n] = (struct fc_subject){ .name = "empty XDP program", .prog_fd = bpf_program__fd(empty->progs.fc_bench_empty) };
	fc_frame(&v[n++], "198.18.0.8", "clean");
	xf_fd = fc_xdp_filter(&why);
	if (xf_fd >= 0) {
		v[n] = (struct fc_subject){ .name = "xdp-filter, 1 IP rule", .prog_fd = xf_fd };
		fc_frame(&v[n++], "198.18.0.8", "clean");
	}
	v[n] = (struct fc_subject){ .name = "freqctl, exact bans", .target = true,
				    .prog_fd = bpf_program__fd(fq->progs.freqctl_xdp) };
	fc_frame(&v[n++], "10.0.0.7", "banned");
	v[n] = v[n - 1];
	fc_frame(&v[n++], "198.18.0.8", "clean");
	fc_measure(v, n);

	/* The same with real prefixes too: the clean frame now also searches a trie. */
	if (fc_b.prefixes) {
		snprintf(file, sizeof(file), "%s/prefixes.txt", fc_b.dir);
		if (fc_write_bans(file, 0, fc_b.prefixes) < 0 || fc_import(file, &import_pfx_s))
			goto out;
		v[n] = v[n - 1];
		v[n].name = "freqctl, + prefixes";
		v[n].target = false;
		fc_frame(&v[n++], "172.16.0.9", "banned (prefix)");
		v[n] = v[n - 1];
		fc_frame(&v[n++], "198.18.0.8", "clean");
		fc_measure(v + n - 2, 2);
	}
	if (xf_fd >= 0)
		xf = v[1].median;

	if (fc_b.json) {
		rows = json_array();
		for (i = 0; i < n; i++)
			json_array_append_new(rows, json_pack("{s:s, s:s, s:b, s:f, s:f, s:o}", "program", v[i].name, "frame",
							      v[i].frame_name, "target_applies", v[i].target, "ns_per_packet", v[i].median,
							      "x_empty", v[i].median / v[0].median, "x_xdp_filter",
							      xf ? json_real(v[i].median / xf) : json_null()));
		doc = json_pack("{s:i, s:i, s:i, s:i, s:f, s:s?, s:o}", "bans", (json_int_t)fc_b.bans, "prefixes",
				(json_int_t)fc_b.prefixes, "repeat", (json_int_t)fc_b.repeat, "rounds", fc_b.rounds,
				"import_seconds", import_s, "xdp_filter_skipped", why, "results", rows);
		json_dumpf(doc, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
		putchar('\n');
		json_decref(doc);
	} else {
		printf("BPF_PROG_TEST_RUN (kernel-timed, whole ns), %u repeats x %d interleaved rounds, median;\n"
		       "%ld exact bans loaded\n",
		       fc_b.repeat, fc_b.rounds, fc_b.bans);
		printf("%-26s %-16s %9s %9s %13s\n", "program", "frame", "ns/pkt", "x empty", "x xdp-filter");
		for (i = 0; i < n; i++) {
			printf("%-26s %-16s %9.1f %9.2f", v[i].name, v[i].frame_name, v[i].median,
			       v[i].median / v[0].median);
			if (xf)
				printf(" %13.2f%s", v[i].median / xf,
				       !v[i].target ? "" : v[i].median <= xf ? "  (target <= 1.0: met)" : "  (target <= 1.0: MISSED)");
			putchar('\n');
		}
		if (why)
			printf("xdp-filter: SKIPPED: %s\n", why);
		printf("freqctl ban import of %ld bans: %.2f s (target < 10 s: %s)\n", fc_b.bans, import_s,
		       import_s < 10 ? "met" : "MISSED");
		if (fc_b.prefixes)
			printf("freqctl ban import of %ld more prefixes: %.2f s\n", fc_b.prefixes, import_pfx_s);
	}
	rc = 0;
out:
	bench_empty__destroy(empty);
	freqctl__destroy(fq);
	return rc;
}
