// SPDX-License-Identifier: BSD-2-Clause
/*
 * The flood: --flood distinct spoofed sources per round, TCP SYNs, each
 * frame given its source by a wrapper (bench_flood.bpf.c) that tail-calls
 * the program under test, so that the exact hash, the prefix maps and the
 * ip=* LRU are read cold, as in a SYN flood, and not one hot entry. freqctl
 * and xdp-filter both hold the same --flood-bans exact bans; freqctl with
 * the main store too. Two kinds of sources: anywhere in IPv4 (nearly all
 * unbanned), and drawn from the exact bans (each banned). The wrapper's own
 * cost is measured by tail-calling the empty program and taken off.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/in.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "bench_flood.skel.h"
#include "fc_bench.h"
#include "fc_maps.h"

enum fc_src_kind { FC_SRC_ANY, FC_SRC_BANNED };

/* One program under the flood: its per-round times and, for freqctl, what
 * its counters said of the packets. */
struct fc_flood_case {
	const char *prog;
	enum fc_src_kind kind;
	bool full; /* banned sources from the main store's bans, not --flood-bans */
	int fd, stats;
	bool udp; /* UDP, not SYNs: ip=* (counting SYNs) not met */
	/* Sources of their own, none the other programs saw: --baseline runs
	 * next to freqctl on the same maps, where the sources of the one run
	 * first would find the ip=* buckets it made and the lines it brought
	 * into cache. */
	bool apart;
	double ns[FC_MAX_TIMES];
	struct fc_stats seen;
};

enum { FC_F_WRAP_ANY, FC_F_XF_ANY, FC_F_SMALL_ANY, FC_F_FULL_ANY, FC_F_BASE_ANY, FC_F_FULL_UDP,
       FC_F_WRAP_BAN, FC_F_XF_BAN, FC_F_SMALL_BAN, FC_F_FULL_BAN, FC_F_BASE_BAN, FC_F_N };

/* The flood's frames: a TCP SYN, and a UDP datagram; the source set by the
 * wrapper. */
struct fc_flood_frames {
	uint8_t syn[FC_FRAME_MAX], udp[FC_FRAME_MAX];
	size_t syn_len, udp_len;
};

/* fc_stats summed over the CPUs. */
static int fc_stats_sum(int fd, struct fc_stats *sum)
{
	int ncpu = libbpf_num_possible_cpus(), i, j;
	__u32 zero = 0;
	struct fc_stats *v;

	memset(sum, 0, sizeof(*sum));
	v = ncpu > 0 ? calloc((size_t)ncpu, sizeof(*v)) : NULL;
	if (!v || bpf_map_lookup_elem(fd, &zero, v)) {
		free(v);
		return -1;
	}
	for (i = 0; i < ncpu; i++)
		for (j = 0; j < (int)(sizeof(*sum) / sizeof(struct fc_counter)); j++)
			((struct fc_counter *)sum)[j].packets += ((struct fc_counter *)&v[i])[j].packets;
	free(v);
	return 0;
}

/* One round of case c: the round's sources (seq from r * flood, the same
 * for every program but one apart, of n rounds), through the wrapper into
 * c's program. */
static int fc_flood_round(struct bench_flood *w, struct fc_flood_case *c, int r, int n,
			  const struct fc_flood_frames *fr)
{
	int wrap = bpf_program__fd(w->progs.fc_bench_flood), map = bpf_map__fd(w->maps.fc_flood_target);
	struct fc_stats before, after;
	__u32 zero = 0;
	size_t i;

	w->bss->fc_flood_seq = (uint64_t)(c->apart ? n + r : r) * (uint64_t)fc_b.flood;
	w->bss->fc_flood_base = 0x0a000000u;
	w->bss->fc_flood_n = c->kind == FC_SRC_ANY ? 0 : (uint32_t)(c->full ? fc_b.bans : fc_b.flood_bans);
	if (bpf_map_update_elem(map, &zero, &c->fd, BPF_ANY)) {
		fprintf(stderr, "fc_bench: flood: cannot tail-call %s: %s\n", c->prog, strerror(errno));
		return -1;
	}
	if (c->stats >= 0 && fc_stats_sum(c->stats, &before))
		return -1;
	c->ns[r] = c->udp ? fc_run(wrap, fr->udp, fr->udp_len, (unsigned)fc_b.flood) :
			    fc_run(wrap, fr->syn, fr->syn_len, (unsigned)fc_b.flood);
	if (c->stats >= 0) {
		if (fc_stats_sum(c->stats, &after))
			return -1;
		for (i = 0; i < sizeof(after) / sizeof(struct fc_counter); i++)
			((struct fc_counter *)&c->seen)[i].packets +=
				((struct fc_counter *)&after)[i].packets - ((struct fc_counter *)&before)[i].packets;
	}
	return 0;
}

/* Case c's ns per packet in round r, the wrapper's own cost (its run into
 * the empty program, less the empty program run alone) taken off. */
static double fc_flood_net(const struct fc_flood_case *cs, const double *empty, int c, int r)
{
	int wrap = cs[c].kind == FC_SRC_ANY ? FC_F_WRAP_ANY : FC_F_WRAP_BAN;

	return cs[c].ns[r] - cs[wrap].ns[r] + empty[r];
}

/* Median over the rounds of case c's net ns, or of its ratio to case q's. */
static double fc_flood_fig(const struct fc_flood_case *cs, const double *empty, int c, int q, int n)
{
	double x[FC_MAX_TIMES];
	int r;

	for (r = 0; r < n; r++)
		x[r] = fc_flood_net(cs, empty, c, r) / (q < 0 ? 1 : fc_flood_net(cs, empty, q, r));
	return fc_median(x, n);
}

/* What freqctl's counters said of the flood's packets, in shares. */
static void fc_flood_shares(const struct fc_flood_case *c, json_t *o)
{
	const struct fc_stats *s = &c->seen;
	double all = (double)(s->passed.packets + s->drop_exact.packets + s->drop_prefix.packets +
			      s->drop_limit.packets + s->allowed.packets + s->malformed.packets + s->non_ip.packets);
	/* Every unbanned SYN meets ip=* when the store has it: what did not go to
	 * the overflow bucket went to the source's own. */
	double met = c->full && !c->udp ? (double)(s->passed.packets + s->drop_limit.packets) : 0;
	double own = met - (double)s->src_overflow.packets;

	if (all <= 0)
		return;
	if (fc_b.json) {
		json_object_set_new(o, "share", json_pack("{s:f, s:f, s:f, s:f, s:f, s:f}", "exact_ban",
							  s->drop_exact.packets / all, "prefix_ban",
							  s->drop_prefix.packets / all, "own_bucket", own / all,
							  "overflow_bucket", s->src_overflow.packets / all,
							  "limited", s->drop_limit.packets / all, "allowed",
							  s->allowed.packets / all));
		return;
	}
	printf("      %.0f packets: exact ban %.1f%%, prefix ban %.1f%%, own ip=* bucket %.1f%%, overflow bucket "
	       "%.1f%%, dropped over a limit %.1f%%, allowed %.1f%%\n",
	       all, 100 * s->drop_exact.packets / all, 100 * s->drop_prefix.packets / all, 100 * own / all,
	       100 * s->src_overflow.packets / all, 100 * s->drop_limit.packets / all, 100 * s->allowed.packets / all);
}

static const char *fc_flood_src_name(const struct fc_flood_case *c)
{
	if (c->kind == FC_SRC_ANY)
		return c->udp ? "any IPv4 source, UDP (ip=* not met)" : "any IPv4 source";
	return c->full ? "sources from the main store's exact bans" : "sources from the shared exact bans";
}

/* freqctl over --baseline, paired, on the main store (null without one). */
static json_t *fc_flood_base_json(const struct fc_flood_case *cs, const double *empty, int n)
{
	if (cs[FC_F_BASE_ANY].fd < 0)
		return json_null();
	return json_pack("{s:f, s:f}", "any", fc_flood_fig(cs, empty, FC_F_FULL_ANY, FC_F_BASE_ANY, n), "banned",
			 fc_flood_fig(cs, empty, FC_F_FULL_BAN, FC_F_BASE_BAN, n));
}

/* The table: per case net ns and x xdp-filter (net, and raw: the wrapper
 * left in both), with freqctl's shares. */
static void fc_flood_report(struct fc_flood_case *cs, const double *empty, int n, json_t *doc)
{
	json_t *rows = json_array(), *o;
	int c, xf;
	double x;

	if (!fc_b.json)
		printf("\nFlood: %ld distinct spoofed sources per round (TCP SYN), %d rounds; a wrapper sets each\n"
		       "frame's source and tail-calls the program; ns less the wrapper's own cost (empty program\n"
		       "alone: %.1f ns, through the wrapper: %.1f ns). xdp-filter and \"freqctl, %ld bans\" hold the\n"
		       "same %ld exact bans. TCP SYNs unless said.\n"
		       "%-34s %-42s %7s %13s %9s\n",
		       fc_b.flood, n, fc_median(empty, n), fc_median(cs[FC_F_WRAP_ANY].ns, n), fc_b.flood_bans,
		       fc_b.flood_bans, "program", "sources",
		       "ns/pkt", "x xdp-filter", "raw x xf");
	for (c = 0; c < FC_F_N; c++) {
		if (c == FC_F_WRAP_ANY || c == FC_F_WRAP_BAN || cs[c].fd < 0)
			continue;
		xf = cs[c].kind == FC_SRC_ANY ? FC_F_XF_ANY : FC_F_XF_BAN;
		x = cs[xf].fd >= 0 && c != xf ? fc_flood_fig(cs, empty, c, xf, n) : 0;
		o = json_pack("{s:s, s:s, s:f, s:o}", "program", cs[c].prog, "sources", fc_flood_src_name(&cs[c]),
			      "ns_per_packet", fc_flood_fig(cs, empty, c, -1, n), "x_xdp_filter",
			      x > 0 ? json_real(x) : json_null());
		if (!fc_b.json) {
			printf("%-34s %-42s %7.1f", cs[c].prog, fc_flood_src_name(&cs[c]), fc_flood_fig(cs, empty, c, -1, n));
			if (x > 0) {
				double raw[FC_MAX_TIMES];
				int r;

				for (r = 0; r < n; r++)
					raw[r] = cs[c].ns[r] / cs[xf].ns[r];
				printf(" %13.2f %9.2f", x, fc_median(raw, n));
			}
			putchar('\n');
		}
		if (cs[c].stats >= 0)
			fc_flood_shares(&cs[c], o);
		json_array_append_new(rows, o);
	}
	if (!fc_b.json && cs[FC_F_BASE_ANY].fd >= 0)
		printf("freqctl / --baseline, main store, paired: any IPv4 source %.3f, each a ban %.3f\n",
		       fc_flood_fig(cs, empty, FC_F_FULL_ANY, FC_F_BASE_ANY, n),
		       fc_flood_fig(cs, empty, FC_F_FULL_BAN, FC_F_BASE_BAN, n));
	if (fc_b.json)
		json_object_set_new(doc, "flood", json_pack("{s:I, s:I, s:i, s:f, s:o, s:o}", "sources_per_round",
							    (json_int_t)fc_b.flood, "shared_exact_bans",
							    (json_int_t)fc_b.flood_bans, "rounds", n,
							    "empty_ns", fc_median(empty, n), "results", rows,
							    "x_baseline", fc_flood_base_json(cs, empty, n)));
	else
		json_decref(rows);
}

/* Case k's turn in odd rounds: --baseline before freqctl. Run second, a
 * program finds the new-source cap (per CPU, over time) drained by the
 * first, which makes fewer ip=* buckets; identical builds measured 6% apart
 * in a fixed order. */
static int fc_flood_turn(int k)
{
	switch (k) {
	case FC_F_FULL_ANY: return FC_F_BASE_ANY;
	case FC_F_BASE_ANY: return FC_F_FULL_ANY;
	case FC_F_FULL_BAN: return FC_F_BASE_BAN;
	case FC_F_BASE_BAN: return FC_F_FULL_BAN;
	default: return k;
	}
}

int fc_flood(const struct fc_flood_fds *fds, json_t *doc)
{
	char small[48];
	struct fc_flood_case cs[FC_F_N] = {
		{ "wrapper + empty program", FC_SRC_ANY, false, fds->empty, -1 },
		{ "xdp-filter", FC_SRC_ANY, false, fds->xdp_filter, -1 },
		{ small, FC_SRC_ANY, false, fds->freqctl_small, fds->stats_small },
		{ "freqctl, main store", FC_SRC_ANY, true, fds->freqctl, fds->stats },
		{ "freqctl --baseline, main store", FC_SRC_ANY, true, fds->baseline, -1, .apart = true },
		{ "freqctl, main store", FC_SRC_ANY, true, fds->freqctl, fds->stats, .udp = true },
		{ "wrapper + empty program", FC_SRC_BANNED, false, fds->empty, -1 },
		{ "xdp-filter", FC_SRC_BANNED, false, fds->xdp_filter, -1 },
		{ small, FC_SRC_BANNED, false, fds->freqctl_small, fds->stats_small },
		{ "freqctl, main store", FC_SRC_BANNED, true, fds->freqctl, fds->stats },
		{ "freqctl --baseline, main store", FC_SRC_BANNED, true, fds->baseline, -1, .apart = true },
	};
	struct fc_frame_spec syn = { "198.18.0.8", IPPROTO_TCP, 0x02, .payload = 6 };
	struct fc_frame_spec udp = { "198.18.0.8", IPPROTO_UDP, .payload = 18 };
	struct fc_flood_frames fr;
	double empty[FC_MAX_TIMES];
	struct bench_flood *w;
	int n = fc_b.runs * fc_b.rounds, r, c, k, rc = -1;

	snprintf(small, sizeof(small), "freqctl, %ld bans", fc_b.flood_bans);
	fr.syn_len = fc_frame_build(&syn, fr.syn);
	fr.udp_len = fc_frame_build(&udp, fr.udp);
	w = bench_flood__open_and_load();
	if (!w) {
		fprintf(stderr, "fc_bench: cannot load the flood's wrapper: %s\n", strerror(errno));
		return -1;
	}
	for (r = 0; r < n; r++) {
		fc_progress("flood: round %d/%d", r + 1, n);
		empty[r] = fc_run(fds->empty, fr.syn, fr.syn_len, (unsigned)fc_b.flood);
		for (k = 0; k < FC_F_N; k++) {
			c = r & 1 ? fc_flood_turn(k) : k;
			if (cs[c].fd >= 0 && fc_flood_round(w, &cs[c], r, n, &fr) < 0)
				goto out;
		}
	}
	fc_progress("%s", "");
	fc_flood_report(cs, empty, n, doc);
	rc = 0;
out:
	bench_flood__destroy(w);
	return rc;
}
