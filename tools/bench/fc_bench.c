// SPDX-License-Identifier: BSD-2-Clause
/*
 * make bench: the per-packet cost of freqctl's XDP program on every path,
 * with a store as large as the (1,000,000 exact bans, 100,000 IPv4
 * prefixes of /8 to /32, 10,000 IPv6 prefixes, 65,536 policies, one of them
 * ip=*), against an empty XDP program and xdp-filter (Debian xdp-tools) with
 * one IP rule per family, all run through BPF_PROG_TEST_RUN on the same
 * frames in one run, rounds interleaved. The verdict on each row is the
 * median of the paired ratios (freqctl over xdp-filter within each round)
 * over --runs runs of --rounds rounds, against the targets. The
 * prefix rows run a sample of sources drawn from the prefixes loaded, each
 * against xdp-filter on its own frame, and report the median and the
 * slowest. Then the flood (fc_bench_flood.c): a million distinct sources.
 * Also freqctl run through libxdp's dispatcher (as `freqctl attach` shares
 * the XDP hook) against freqctl alone, the time of `freqctl ban import` of
 * all the bans (target: < 10 s for 1,000,000), and the time and peak memory
 * of one `freqctl policy add` with all of it stored and published (target:
 * <= 20 ms). With --baseline, another build's program (say main's) on the
 * same maps, in the same rounds.
 */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <getopt.h>
#include <linux/in.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <jansson.h>

#include "bench_empty.skel.h"
#include "fc_bench.h"
#include "fc_clock.h"
#include "fc_error.h"
#include "fc_maps.h"
#include "freqctl.skel.h"

enum { FC_P_EMPTY, FC_P_XDP_FILTER, FC_P_FREQCTL, FC_P_DISPATCHED, FC_P_BASELINE, FC_NPROGS };

static const char *const fc_prog_names[FC_NPROGS] = { "empty XDP program", "xdp-filter, 1 rule/family", "freqctl",
						       "freqctl in dispatcher", "freqctl --baseline" };

/* A source drawn from the loaded prefixes: a host inside a random prefix
 * of a kind. */
enum fc_draw {
	FC_DRAW_NONE, /* the row's fixed source */
	FC_DRAW_BAN4, /* a host in an IPv4 prefix ban */
	FC_DRAW_POL4, /* a host in an IPv4 prefix policy */
	FC_DRAW_BAN6, /* a host in an IPv6 prefix ban */
};

/* The targets, x xdp-filter: lookups only (bans, clean, allowed
 * sources), a policy or two to charge, three. All aim at 0.75. */
enum fc_target { FC_T_LOOKUP, FC_T_POLICY, FC_T_THREE };
static const double fc_target_x[] = { 0.8, 0.9, 1.3 };
#define FC_AIM 0.75

struct fc_row {
	const char *name;
	struct fc_frame_spec spec;
	enum fc_draw draw;
	enum fc_target target;
};

/* The exact bans are 10.0.0.0 upwards (10.0.0.7 the banned frame's), the
 * exact-address policies 10.200.0.0/16 (10.200.0.8 a sliding window,
 * 10.200.0.9 and .10 GCRA with a warm-up, in its ramp and past it, .11 an
 * override, .12 a fixed window and .13 the same with --fleet, the rest GCRA), 10.201.0.7 an exact policy inside the prefix
 * policy 10.201.0.0/24, the prefix bans and policies anywhere else in
 * unicast space (never 10/8, 100/8 or 198.18/15; a source drawn from a
 * policy is one no ban covers). The ip=* policy counts TCP SYNs, so that UDP
 * frames meet only the others. 10.0.0.9 (banned) is allowed, and so is
 * 10.0.1.0/24 (its exact bans allowed through the prefix). */
#define FC_UDP(src)  { src, IPPROTO_UDP, .payload = 18 }
#define FC_SYN(src)  { src, IPPROTO_TCP, 0x02, .payload = 6 }
static const struct fc_row fc_rows[] = {
	{ "clean (no rule matches)", FC_UDP("198.18.0.8"), FC_DRAW_NONE, FC_T_LOOKUP },
	{ "exact ban", FC_UDP("10.0.0.7"), FC_DRAW_NONE, FC_T_LOOKUP },
	{ "IPv4 prefix ban", FC_UDP(NULL), FC_DRAW_BAN4, FC_T_LOOKUP },
	{ "IPv6 clean", FC_UDP("fd00::8"), FC_DRAW_NONE, FC_T_LOOKUP },
	{ "IPv6 prefix ban", FC_UDP(NULL), FC_DRAW_BAN6, FC_T_LOOKUP },
	{ "allowed (an exact ban, allowed)", FC_UDP("10.0.0.9"), FC_DRAW_NONE, FC_T_LOOKUP },
	{ "allowed by a prefix (exact ban + ip=*, SYN)", FC_SYN("10.0.1.5"), FC_DRAW_NONE, FC_T_LOOKUP },
	{ "exact-address policy (GCRA)", FC_UDP("10.200.0.7"), FC_DRAW_NONE, FC_T_POLICY },
	{ "exact-address policy (sliding window)", FC_UDP("10.200.0.8"), FC_DRAW_NONE, FC_T_POLICY },
	{ "exact-address policy (GCRA, warming up)", FC_UDP("10.200.0.9"), FC_DRAW_NONE, FC_T_POLICY },
	{ "exact-address policy (GCRA, warmed up)", FC_UDP("10.200.0.10"), FC_DRAW_NONE, FC_T_POLICY },
	{ "exact-address policy (window)", FC_UDP("10.200.0.12"), FC_DRAW_NONE, FC_T_POLICY },
	{ "exact-address policy (window --fleet)", FC_UDP("10.200.0.13"), FC_DRAW_NONE, FC_T_POLICY },
	{ "prefix policy (GCRA)", FC_UDP(NULL), FC_DRAW_POL4, FC_T_POLICY },
	{ "exact + prefix policies (2 met)", FC_UDP("10.201.0.7"), FC_DRAW_NONE, FC_T_POLICY },
	{ "ip=* alone (SYN)", FC_SYN("198.18.0.8"), FC_DRAW_NONE, FC_T_POLICY },
	{ "exact policy + ip=* (SYN)", FC_SYN("10.200.0.7"), FC_DRAW_NONE, FC_T_POLICY },
	{ "prefix policy + ip=* (SYN)", FC_SYN(NULL), FC_DRAW_POL4, FC_T_POLICY },
	{ "exact override over ip=* (SYN)", FC_SYN("10.200.0.11"), FC_DRAW_NONE, FC_T_POLICY },
	{ "three policies: exact+prefix+ip=* (SYN)", FC_SYN("10.201.0.7"), FC_DRAW_NONE, FC_T_THREE },
	{ "IPv6 ip=* alone (SYN, its /64)", FC_SYN("fd00::8"), FC_DRAW_NONE, FC_T_POLICY },
};

#define FC_NROWS (sizeof(fc_rows) / sizeof(fc_rows[0]))

/* What each further policy costs: rows by the number of policies met, on
 * UDP (exact, exact + prefix; ip=* counts SYNs only) and on SYNs (ip=*,
 * exact + ip=*, exact + prefix + ip=*). Indexes into fc_rows. */
static const int fc_ladder_udp[] = { 0, 7, 14 };
/* Issue 29's row: a fleet policy at most 1.0x the same without --fleet. */
#define FC_ROW_WINDOW 11
#define FC_ROW_FLEET 12
#define FC_FLEET_X 1.0
static const int fc_ladder_syn[] = { 15, 16, 19 };

/* One program on one frame: its timings, every round of every run. */
struct fc_subject {
	int prog_fd;
	uint8_t frame[FC_FRAME_MAX];
	size_t len;
	double ns[FC_MAX_TIMES];
	double median;
};

/* A row's frames (one, or a sample), each through every program. */
struct fc_row_run {
	int nframes;
	char src[FC_MAX_SAMPLES][FC_PREFIX_STRLEN];
	struct fc_subject s[FC_MAX_SAMPLES][FC_NPROGS];
};

/* The programs, and what loaded them. */
struct fc_progs {
	int fds[FC_NPROGS];
	struct fc_flood_fds flood;
	struct bench_empty *empty;
	struct freqctl *fq, *fq_small;
	struct bpf_object *base;
	const char *why, *dwhy;
};

struct fc_bench fc_b = { .bans = 1000000, .prefixes4 = 100000, .prefixes6 = 10000, .policies = FC_MAX_POLICIES,
			 .flood = 1000000, .flood_bans = 10000, .samples = 9, .repeat = 1000000, .rounds = 9,
			 .runs = 3, .freqctl = "build/freqctl" };

static bool fc_tty;

double fc_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void fc_progress(const char *fmt, ...)
{
	va_list ap;

	if (!fc_tty)
		return;
	fputs("\r\033[K", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
}

int fc_sh(const char *fmt, ...)
{
	char cmd[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	return system(cmd);
}

bool fc_load_print(FILE *f, const char *when)
{
	double l[3] = { 0 };

	if (getloadavg(l, 3) < 3)
		return true;
	fprintf(f, "load average at %s: %.2f %.2f %.2f%s\n", when, l[0], l[1], l[2],
		l[0] >= 1 ? "  WARNING: >= 1, the machine is busy: ratios are less trustworthy" : "");
	fflush(f); /* before a child (policy add) inherits the buffer */
	return l[0] < 1;
}

static void fc_cleanup(void)
{
	if (fc_b.ns[0])
		fc_sh("ip netns del %s 2>/dev/null", fc_b.ns);
	if (fc_b.main.pin[0])
		fc_sh("rm -rf '%s' '%s' '%s'", fc_b.main.pin, fc_b.xdpfs, fc_b.main.dir);
	if (fc_b.small.pin[0])
		fc_sh("rm -rf '%s' '%s'", fc_b.small.pin, fc_b.small.dir);
}

/* Stopped by a signal (^C in a long run), it still removes its namespace,
 * pins and directories: exit runs fc_cleanup. The main thread is in a
 * syscall or a loop of ours, never inside the cleanup itself. */
static void fc_on_signal(int sig)
{
	signal(sig, SIG_DFL);
	exit(128 + sig);
}

double fc_run(int prog_fd, const uint8_t *frame, size_t len, unsigned repeat)
{
	LIBBPF_OPTS(bpf_test_run_opts, opts, .data_in = frame, .data_size_in = (__u32)len, .repeat = repeat);

	if (bpf_prog_test_run_opts(prog_fd, &opts)) {
		fprintf(stderr, "fc_bench: test run of prog fd %d: %s\n", prog_fd, strerror(errno));
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
double fc_median(const double *v, int n)
{
	double w[FC_MAX_TIMES > FC_MAX_SAMPLES ? FC_MAX_TIMES : FC_MAX_SAMPLES];

	memcpy(w, v, (size_t)n * sizeof(*v));
	qsort(w, (size_t)n, sizeof(*w), fc_cmp_double);
	return n % 2 ? w[n / 2] : (w[n / 2 - 1] + w[n / 2]) / 2;
}

/* The row's frames, each through every program. */
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
		for (p = 0; p < FC_NPROGS; p++) {
			struct fc_subject *s = &rr->s[i][p];

			memset(s, 0, sizeof(*s));
			s->prog_fd = fds[p];
			s->len = fc_frame_build(&spec, s->frame);
		}
	}
}

/* Runs every subject once per round, rounds of every run interleaved
 * across rows and programs, and keeps medians. */
static void fc_measure(struct fc_row_run *rr, size_t nrows)
{
	int n = fc_b.runs * fc_b.rounds, r, f, p;
	size_t i;

	for (r = 0; r < n; r++)
		for (i = 0; i < nrows; i++) {
			fc_progress("run %d/%d, round %d/%d: row %zu/%zu", r / fc_b.rounds + 1, fc_b.runs,
				    r % fc_b.rounds + 1, fc_b.rounds, i + 1, nrows);
			for (f = 0; f < rr[i].nframes; f++)
				for (p = 0; p < FC_NPROGS; p++) {
					struct fc_subject *s = &rr[i].s[f][p];

					if (s->prog_fd >= 0)
						s->ns[r] = fc_run(s->prog_fd, s->frame, s->len, fc_b.repeat);
				}
		}
	fc_progress("%s", "");
	for (i = 0; i < nrows; i++)
		for (f = 0; f < rr[i].nframes; f++)
			for (p = 0; p < FC_NPROGS; p++)
				rr[i].s[f][p].median = fc_median(rr[i].s[f][p].ns, n);
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

/* Program p's ns over program q's in a row, over rounds from..to-1: per
 * frame the median of the ratio within each round (the load that slows one
 * slows the other), then the median over the frames. */
static double fc_paired(const struct fc_row_run *rr, int p, int q, int from, int to)
{
	double x[FC_MAX_TIMES], xf[FC_MAX_SAMPLES];
	int f, r;

	for (f = 0; f < rr->nframes; f++) {
		for (r = from; r < to; r++)
			x[r - from] = rr->s[f][p].ns[r] / rr->s[f][q].ns[r];
		xf[f] = fc_median(x, to - from);
	}
	return fc_median(xf, rr->nframes);
}

static double fc_paired_all(const struct fc_row_run *rr, int p, int q)
{
	return fc_paired(rr, p, q, 0, fc_b.runs * fc_b.rounds);
}

/* Row a's ns over row b's for program p (single frames), paired by round
 * as fc_paired pairs programs: the rows run in the same rounds. */
static double fc_rows_paired(const struct fc_row_run *a, const struct fc_row_run *b, int p)
{
	double x[FC_MAX_TIMES];
	int r, n = fc_b.runs * fc_b.rounds;

	for (r = 0; r < n; r++)
		x[r] = a->s[0][p].ns[r] / b->s[0][p].ns[r];
	return fc_median(x, n);
}

static void fc_fleet_print(const struct fc_row_run *rr)
{
	double x = fc_rows_paired(&rr[FC_ROW_FLEET], &rr[FC_ROW_WINDOW], FC_P_FREQCTL);

	printf("\nfreqctl, %s / %s, paired: %.2f (target <= %.1f: %s)\n", fc_rows[FC_ROW_FLEET].name,
	       fc_rows[FC_ROW_WINDOW].name, x, FC_FLEET_X, x <= FC_FLEET_X ? "met" : "MISSED");
}

/* Each row's fc_paired_all of programs p and q, or null without both. */
static json_t *fc_ratios_json(const struct fc_row_run *rr, const int *fds, int p, int q)
{
	json_t *o;
	size_t i;

	if (fds[p] < 0 || fds[q] < 0)
		return json_null();
	o = json_object();
	for (i = 0; i < FC_NROWS; i++)
		if (rr[i].nframes)
			json_object_set_new(o, fc_rows[i].name, json_real(fc_paired_all(&rr[i], p, q)));
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
			printf("  %-46s %5.2f\n", fc_rows[i].name, fc_paired_all(&rr[i], p, q));
}

static const char *fc_verdict(double x, enum fc_target t)
{
	return x <= FC_AIM ? "PASS (aim met)" : x <= fc_target_x[t] ? "PASS" : "MISSED";
}

/* The verdicts: freqctl / xdp-filter paired over every round of
 * every run, each run's own median beside it to show the spread. Returns
 * how many rows missed. */
static int fc_targets_print(const struct fc_row_run *rr)
{
	int run, missed = 0;
	size_t i;
	double x;

	printf("\nfreqctl / xdp-filter, paired (median of each round's ratio over %d runs x %d rounds):\n"
	       "  %-46s %6s %7s  %-14s  %s\n",
	       fc_b.runs, fc_b.rounds, "row", "x xf", "target", "verdict", "each run");
	for (i = 0; i < FC_NROWS; i++) {
		if (!rr[i].nframes)
			continue;
		x = fc_paired_all(&rr[i], FC_P_FREQCTL, FC_P_XDP_FILTER);
		missed += x > fc_target_x[fc_rows[i].target];
		printf("  %-46s %6.2f  <=%4.2f  %-14s ", fc_rows[i].name, x, fc_target_x[fc_rows[i].target],
		       fc_verdict(x, fc_rows[i].target));
		for (run = 0; run < fc_b.runs; run++)
			printf(" %5.2f", fc_paired(&rr[i], FC_P_FREQCTL, FC_P_XDP_FILTER, run * fc_b.rounds,
						   (run + 1) * fc_b.rounds));
		putchar('\n');
	}
	printf("  %d row(s) MISSED their target (aim for all: <= %.2f)\n", missed, FC_AIM);
	return missed;
}

/* The same verdicts for a script: per row x, target and verdict. */
static json_t *fc_targets_json(const struct fc_row_run *rr, const int *fds)
{
	json_t *o;
	size_t i;
	double x;

	if (fds[FC_P_XDP_FILTER] < 0)
		return json_null();
	o = json_object();
	for (i = 0; i < FC_NROWS; i++) {
		if (!rr[i].nframes)
			continue;
		x = fc_paired_all(&rr[i], FC_P_FREQCTL, FC_P_XDP_FILTER);
		json_object_set_new(o, fc_rows[i].name,
				    json_pack("{s:f, s:f, s:f, s:s}", "x_xdp_filter", x, "target",
					      fc_target_x[fc_rows[i].target], "aim", FC_AIM, "verdict",
					      x <= fc_target_x[fc_rows[i].target] ? "PASS" : "MISSED"));
	}
	return o;
}

/* What each further policy met costs freqctl: rows by the number of
 * policies met (first ones), ns, the step's cost and x xdp-filter. */
static void fc_ladder_print(const char *title, const struct fc_row_run *rr, const int *ladder, int first)
{
	double prev = 0, ns;
	int k;

	printf("  %s:\n", title);
	for (k = 0; k < 3; k++) {
		ns = fc_row_fig(&rr[ladder[k]], FC_P_FREQCTL, false).ns;
		printf("    %d met (%s): %6.1f ns", first + k, fc_rows[ladder[k]].name, ns);
		if (k)
			printf(", %+5.1f ns for this one", ns - prev);
		if (rr[ladder[k]].s[0][FC_P_XDP_FILTER].prog_fd >= 0)
			printf(", %.2fx xdp-filter", fc_paired_all(&rr[ladder[k]], FC_P_FREQCTL, FC_P_XDP_FILTER));
		putchar('\n');
		prev = ns;
	}
}

static void fc_usage(FILE *f)
{
	fprintf(f,
		"Usage: fc_bench [--quick] [--bans N] [--prefixes N] [--prefixes6 N] [--policies N] [--samples N]\n"
		"                [--repeat N] [--rounds N] [--runs N] [--flood N] [--flood-bans N]\n"
		"                [--freqctl PATH] [--baseline OBJ] [--json]\n\n"
		"Per-packet cost of freqctl_xdp on each path with N exact bans (default 1000000), N IPv4\n"
		"prefix bans of /8 to /32 (100000), N IPv6 prefix bans (10000) and N policies (65536,\n"
		"one of them ip=*) stored, against an empty XDP program and xdp-filter with one IP rule\n"
		"per family, and run through libxdp's dispatcher against alone, via BPF_PROG_TEST_RUN\n"
		"(--repeat runs a round, 1000000). Each row's verdict (PASS or MISSED against the targets\n"
		"of issue 30) is the median of the paired ratios freqctl / xdp-filter over --runs (3) runs\n"
		"of --rounds (9) interleaved rounds. Prefix rows draw --samples sources (9) from what is\n"
		"loaded. Then a flood of --flood (1000000) distinct spoofed sources per round, through a\n"
		"wrapper that tail-calls freqctl or xdp-filter, both holding --flood-bans (10000) exact\n"
		"bans (0: no flood). Times `freqctl ban import` and one `freqctl policy add`.\n"
		"--baseline runs another build's freqctl.bpf.o (same map layouts) in the same rounds.\n"
		"--quick: a small store and short runs, to try the tool (options after it still apply).\n"
		"Needs root. Creates and removes its own namespace, pin dirs, stores and libxdp state.\n");
}

static json_t *fc_fig_json(const char *prog, const char *row, const struct fc_fig *g, int nframes)
{
	return json_pack("{s:s, s:s, s:i, s:f, s:f, s:o, s:s?}", "program", prog, "frame", row, "frames", nframes,
			 "ns_per_packet", g->ns, "x_empty", g->x_empty, "x_xdp_filter",
			 g->x_xf > 0 ? json_real(g->x_xf) : json_null(), "slowest_source", g->src);
}

static void fc_fig_print(const char *prog, const char *row, const struct fc_fig *g)
{
	printf("%-26s %-46s %7.1f %8.2f", prog, row, g->ns, g->x_empty);
	if (g->x_xf > 0)
		printf(" %12.2f", g->x_xf);
	putchar('\n');
}

static void fc_quick(void)
{
	fc_b.bans = 20000;
	fc_b.prefixes4 = 2000;
	fc_b.prefixes6 = 200;
	fc_b.policies = 1024;
	fc_b.samples = 3;
	fc_b.repeat = 100000;
	fc_b.rounds = 3;
	fc_b.runs = 1;
	fc_b.flood = 100000;
}

/* Options into fc_b: 0, or the exit code (2: a usage error, -1: --help). */
static int fc_args(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "bans", required_argument, NULL, 'b' },      { "prefixes", required_argument, NULL, 'p' },
		{ "prefixes6", required_argument, NULL, '6' }, { "policies", required_argument, NULL, 'P' },
		{ "samples", required_argument, NULL, 's' },   { "repeat", required_argument, NULL, 'r' },
		{ "rounds", required_argument, NULL, 'n' },    { "runs", required_argument, NULL, 'R' },
		{ "flood", required_argument, NULL, 'F' },     { "flood-bans", required_argument, NULL, 'X' },
		{ "freqctl", required_argument, NULL, 'f' },   { "baseline", required_argument, NULL, 'B' },
		{ "json", no_argument, NULL, 'j' },            { "quick", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },            { 0 },
	};
	int c;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'b': fc_b.bans = strtol(optarg, NULL, 10); break;
		case 'p': fc_b.prefixes4 = strtol(optarg, NULL, 10); break;
		case '6': fc_b.prefixes6 = strtol(optarg, NULL, 10); break;
		case 'P': fc_b.policies = strtol(optarg, NULL, 10); break;
		case 's': fc_b.samples = atoi(optarg); break;
		case 'r': fc_b.repeat = (unsigned)strtoul(optarg, NULL, 10); break;
		case 'n': fc_b.rounds = atoi(optarg); break;
		case 'R': fc_b.runs = atoi(optarg); break;
		case 'F': fc_b.flood = strtol(optarg, NULL, 10); break;
		case 'X': fc_b.flood_bans = strtol(optarg, NULL, 10); break;
		case 'f': fc_b.freqctl = optarg; break;
		case 'B': fc_b.baseline = optarg; break;
		case 'j': fc_b.json = true; break;
		case 'q': fc_quick(); break;
		case 'h': fc_usage(stdout); return -1;
		default: fc_usage(stderr); return 2;
		}
	}
	if (optind < argc || fc_b.bans < 8 || fc_b.bans > FC_MAX_BANS || fc_b.prefixes4 < 0 ||
	    fc_b.prefixes4 > 500000 || fc_b.prefixes6 < 0 || fc_b.prefixes6 > 500000 || fc_b.policies < 64 ||
	    fc_b.policies > FC_MAX_POLICIES || fc_b.samples < 1 || fc_b.samples > FC_MAX_SAMPLES || !fc_b.repeat ||
	    fc_b.rounds < 1 || fc_b.rounds > FC_MAX_ROUNDS || fc_b.runs < 1 || fc_b.runs > FC_MAX_RUNS ||
	    fc_b.flood < 0 || fc_b.flood > 100000000 || fc_b.flood_bans < 1 || fc_b.flood_bans > 10000 ||
	    fc_b.flood_bans > fc_b.bans) {
		fprintf(stderr,
			"fc_bench: --bans 8-%d, --prefixes and --prefixes6 0-500000, --policies 64-%d, --samples 1-%d, "
			"--repeat >= 1, --rounds 1-%d, --runs 1-%d, --flood 0-100000000, --flood-bans 1-10000 and at "
			"most --bans\n",
			FC_MAX_BANS, FC_MAX_POLICIES, FC_MAX_SAMPLES, FC_MAX_ROUNDS, FC_MAX_RUNS);
		return 2;
	}
	return 0;
}

/* freqctl's program on the pinned maps of store s, with its fc_stats fd. */
static struct freqctl *fc_freqctl_load(const struct fc_bench_store *s, int *stats)
{
	LIBBPF_OPTS(bpf_object_open_opts, oopts, .pin_root_path = s->pin);
	struct freqctl *fq = freqctl__open_opts(&oopts);
	int err;

	if (fq)
		fq->rodata->fc_tick_ns = fc_clock_tick_ns();
	if (!fq || (err = freqctl__load(fq))) {
		fprintf(stderr, "fc_bench: cannot load freqctl on %s: %s\n", s->pin, strerror(fq ? -err : errno));
		freqctl__destroy(fq);
		return NULL;
	}
	*stats = bpf_map__fd(fq->maps.fc_stats);
	return fq;
}

/* Every program compared, loaded; the flood's small store and xdp-filter
 * only if there is a flood. */
static int fc_progs_load(struct fc_progs *pg)
{
	bool have_ns;
	int i;

	for (i = 0; i < FC_NPROGS; i++)
		pg->fds[i] = -1;
	pg->flood = (struct fc_flood_fds){ -1, -1, -1, -1, -1, -1, -1 };
	pg->dwhy = "cannot create the bench namespace";
	pg->empty = bench_empty__open_and_load();
	if (!pg->empty) {
		fprintf(stderr, "fc_bench: cannot load the empty program: %s\n", strerror(errno));
		return -1;
	}
	pg->fq = fc_freqctl_load(&fc_b.main, &pg->flood.stats);
	if (!pg->fq)
		return -1;
	pg->fds[FC_P_EMPTY] = pg->flood.empty = bpf_program__fd(pg->empty->progs.fc_bench_empty);
	pg->fds[FC_P_FREQCTL] = pg->flood.freqctl = bpf_program__fd(pg->fq->progs.freqctl_xdp);
	if (fc_b.baseline && (pg->fds[FC_P_BASELINE] = pg->flood.baseline = fc_baseline(&pg->base)) < 0)
		return -1;
	have_ns = !fc_bench_ns();
	pg->fds[FC_P_XDP_FILTER] = fc_xdp_filter(have_ns, "fcb0", &pg->why);
	if (fc_b.flood) {
		if (fc_store_load_small() < 0)
			return -1;
		pg->fq_small = fc_freqctl_load(&fc_b.small, &pg->flood.stats_small);
		if (!pg->fq_small)
			return -1;
		pg->flood.freqctl_small = bpf_program__fd(pg->fq_small->progs.freqctl_xdp);
		pg->flood.xdp_filter = fc_xdp_filter(have_ns, "fcb2", &pg->why);
		if (pg->flood.xdp_filter >= 0 && fc_xdp_filter_fill(pg->flood.xdp_filter, fc_b.flood_bans) < 0)
			return -1;
	}
	/* libxdp's state for the dispatcher made here, removed with the rest
	 * (xdp-filter, above, kept its own in its private bpffs). */
	setenv("LIBXDP_BPFFS", fc_b.xdpfs, 1);
	pg->fds[FC_P_DISPATCHED] = have_ns ? fc_in_ns(fc_dispatched, &pg->dwhy) : -1;
	return 0;
}

static void fc_progs_close(struct fc_progs *pg)
{
	bench_empty__destroy(pg->empty);
	bpf_object__close(pg->base);
	freqctl__destroy(pg->fq);
	freqctl__destroy(pg->fq_small);
}

/* What the store loading took, for the report. */
struct fc_times {
	double import_s, pol_s, add_s;
	long add_rss;
};

/* The verifier's instructions for program fd (bpf_prog_info), 0 unknown. */
static __u32 fc_verified(int fd)
{
	struct bpf_prog_info info = { 0 };
	__u32 len = sizeof(info);

	return fd >= 0 && !bpf_obj_get_info_by_fd(fd, &info, &len) ? info.verified_insns : 0;
}

/* The verified_insns of the XDP and TC programs of obj (of its 1,000,000). */
static void fc_verified_print(const char *what, const struct bpf_object *obj)
{
	const struct bpf_program *x = bpf_object__find_program_by_name(obj, "freqctl_xdp");
	const struct bpf_program *tc = bpf_object__find_program_by_name(obj, "freqctl_tc");

	printf("%s: verified_insns XDP %u, TC %u (the verifier's bound: 1000000)\n", what,
	       fc_verified(x ? bpf_program__fd(x) : -1), fc_verified(tc ? bpf_program__fd(tc) : -1));
}

static void fc_report_text(const struct fc_row_run *rr, const struct fc_progs *pg, const struct fc_times *t)
{
	char name[96];
	struct fc_fig g;
	size_t i;
	int p;

	printf("BPF_PROG_TEST_RUN (kernel-timed, whole ns), %u repeats x %d runs x %d interleaved rounds, median.\n"
	       "freqctl has %ld exact bans, %zu IPv4 prefix bans (/8 to /32), %zu IPv6 prefix bans and %ld\n"
	       "policies (%ld exact-address, %zu prefix, 10.201.0.0/24 + 10.201.0.7, one ip=* counting TCP\n"
	       "SYNs) stored. Prefix rows: the median over %d sources drawn from the prefixes, and the slowest.\n\n",
	       fc_b.repeat, fc_b.runs, fc_b.rounds, fc_b.bans, fc_b.ban4.n, fc_b.ban6.n, fc_b.policies,
	       fc_nexact() + 1, fc_b.pol4.n, fc_b.samples);
	printf("%-26s %-46s %7s %8s %12s\n", "program", "frame", "ns/pkt", "x empty", "x xdp-filter");
	for (i = 0; i < FC_NROWS; i++) {
		for (p = 0; rr[i].nframes && p < FC_NPROGS; p++) {
			if (pg->fds[p] < 0)
				continue;
			g = fc_row_fig(&rr[i], p, false);
			fc_fig_print(fc_prog_names[p], fc_rows[i].name, &g);
		}
		if (rr[i].nframes > 1) {
			g = fc_row_fig(&rr[i], FC_P_FREQCTL, true);
			snprintf(name, sizeof(name), "  slowest: %s", g.src);
			fc_fig_print(fc_prog_names[FC_P_FREQCTL], name, &g);
		}
	}
	if (pg->why)
		printf("xdp-filter: SKIPPED: %s\n", pg->why);
	fc_verified_print("freqctl", pg->fq->obj);
	if (pg->base)
		fc_verified_print("freqctl --baseline", pg->base);
	if (pg->fds[FC_P_DISPATCHED] < 0)
		printf("freqctl in libxdp's dispatcher: SKIPPED: %s\n", pg->dwhy);
	else
		fc_ratios_print("freqctl through libxdp's dispatcher (alone in it, as attach puts it) / freqctl alone",
				rr, pg->fds, FC_P_DISPATCHED, FC_P_FREQCTL);
	fc_ratios_print("freqctl / freqctl --baseline, paired", rr, pg->fds, FC_P_FREQCTL, FC_P_BASELINE);
	fc_ratios_print("freqctl --baseline / xdp-filter, paired", rr, pg->fds, FC_P_BASELINE, FC_P_XDP_FILTER);
	if (pg->fds[FC_P_XDP_FILTER] >= 0)
		fc_targets_print(rr);
	fc_fleet_print(rr);
	printf("\nWhat each further policy costs freqctl:\n");
	fc_ladder_print("UDP (ip=* counts SYNs only)", rr, fc_ladder_udp, 0);
	fc_ladder_print("TCP SYN", rr, fc_ladder_syn, 1);
	printf("\nfreqctl ban import of %ld bans: %.2f s (target < 10 s: %s)\n",
	       fc_b.bans + (long)fc_b.ban4.n + (long)fc_b.ban6.n, t->import_s, t->import_s < 10 ? "met" : "MISSED");
	printf("%ld policies stored and published in one transaction: %.2f s\n", fc_b.policies - 1, t->pol_s);
	printf("freqctl policy add with all of that stored: %.1f ms (target <= 20 ms: %s), peak RSS %.1f MiB\n",
	       t->add_s * 1000, t->add_s <= 0.020 ? "met" : "MISSED", (double)t->add_rss / 1024);
}

static json_t *fc_report_json(const struct fc_row_run *rr, const struct fc_progs *pg, const struct fc_times *t)
{
	json_t *rows = json_array();
	char name[96];
	struct fc_fig g;
	size_t i;
	int p;

	for (i = 0; i < FC_NROWS; i++) {
		for (p = 0; rr[i].nframes && p < FC_NPROGS; p++) {
			if (pg->fds[p] < 0)
				continue;
			g = fc_row_fig(&rr[i], p, false);
			json_array_append_new(rows, fc_fig_json(fc_prog_names[p], fc_rows[i].name, &g, rr[i].nframes));
		}
		if (rr[i].nframes > 1) {
			g = fc_row_fig(&rr[i], FC_P_FREQCTL, true);
			snprintf(name, sizeof(name), "%s, slowest source", fc_rows[i].name);
			json_array_append_new(rows, fc_fig_json(fc_prog_names[FC_P_FREQCTL], name, &g, 1));
		}
	}
	return json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:i, s:i, s:i, s:f, s:f, s:f, s:I, s:s?, s:s?, s:o, s:o, "
			 "s:o, s:o, s:o, s:f}",
			 "bans", (json_int_t)fc_b.bans, "prefixes4", (json_int_t)fc_b.ban4.n, "prefixes6",
			 (json_int_t)fc_b.ban6.n, "policies", (json_int_t)fc_b.policies, "prefix_policies",
			 (json_int_t)fc_b.pol4.n, "repeat", (json_int_t)fc_b.repeat, "runs", fc_b.runs, "rounds",
			 fc_b.rounds, "samples", fc_b.samples, "import_seconds", t->import_s,
			 "policies_publish_seconds", t->pol_s, "policy_add_seconds", t->add_s,
			 "policy_add_maxrss_kib", (json_int_t)t->add_rss, "xdp_filter_skipped", pg->why,
			 "dispatcher_skipped", pg->fds[FC_P_DISPATCHED] >= 0 ? NULL : pg->dwhy, "results", rows,
			 "dispatcher_x_direct", fc_ratios_json(rr, pg->fds, FC_P_DISPATCHED, FC_P_FREQCTL),
			 "x_xdp_filter_paired", fc_ratios_json(rr, pg->fds, FC_P_FREQCTL, FC_P_XDP_FILTER),
			 "x_baseline", fc_ratios_json(rr, pg->fds, FC_P_FREQCTL, FC_P_BASELINE), "targets",
			 fc_targets_json(rr, pg->fds), "fleet_x_window",
			 fc_rows_paired(&rr[FC_ROW_FLEET], &rr[FC_ROW_WINDOW], FC_P_FREQCTL));
}

int main(int argc, char **argv)
{
	static struct fc_row_run rr[FC_NROWS];
	struct fc_progs pg = { .base = NULL };
	struct fc_times t = { 0 };
	json_t *doc = NULL;
	int rc;
	size_t i;

	rc = fc_args(argc, argv);
	if (rc)
		return rc < 0 ? 0 : rc;
	if (geteuid() != 0) {
		fprintf(stderr, "fc_bench: needs root (BPF, network namespaces)\n");
		return 1;
	}
	rc = 1;
	fc_tty = isatty(STDERR_FILENO);
	libbpf_set_print(fc_libbpf_print);
	snprintf(fc_b.tag, sizeof(fc_b.tag), "%d", (int)getpid());
	snprintf(fc_b.ns, sizeof(fc_b.ns), "fc-bench-%s", fc_b.tag);
	snprintf(fc_b.xdpfs, sizeof(fc_b.xdpfs), "/sys/fs/bpf/fc-bench-%s-xdp", fc_b.tag);
	atexit(fc_cleanup);
	signal(SIGINT, fc_on_signal);
	signal(SIGTERM, fc_on_signal);
	signal(SIGHUP, fc_on_signal);
	if (fc_store_paths(&fc_b.main, "") < 0 || fc_store_paths(&fc_b.small, "-flood") < 0 ||
	    mkdir(fc_b.xdpfs, 0700) < 0) {
		fprintf(stderr, "fc_bench: cannot make its directories: %s\n", strerror(errno));
		return 1;
	}
	fc_load_print(fc_b.json ? stderr : stdout, "start");
	fc_progress("making %ld + %ld prefixes", fc_b.prefixes4, fc_b.prefixes6);
	if (fc_make_store_prefixes() < 0 || fc_store_load(&t.import_s, &t.pol_s, &t.add_s, &t.add_rss) < 0 ||
	    fc_progs_load(&pg) < 0)
		goto out;
	fc_b.rng = 29;
	for (i = 0; i < FC_NROWS; i++)
		fc_row_init(&rr[i], &fc_rows[i], pg.fds);
	fc_measure(rr, FC_NROWS);
	if (fc_b.json) {
		doc = fc_report_json(rr, &pg, &t);
	} else {
		fc_report_text(rr, &pg, &t);
	}
	if (fc_b.flood && fc_flood(&pg.flood, doc) < 0)
		goto out;
	if (doc) {
		json_dumpf(doc, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
		putchar('\n');
	}
	fc_load_print(fc_b.json ? stderr : stdout, "end");
	rc = 0;
out:
	json_decref(doc);
	fc_progs_close(&pg);
	return rc;
}
