// SPDX-License-Identifier: BSD-2-Clause
/*
 * Frames through the real XDP and TC programs (BPF_PROG_TEST_RUN), loaded
 * once with bans and policies published the way the CLI publishes them.
 * Properties: a verdict is always PASS or DROP (XDP never ABORTED), and a
 * frame whose source address can be read is dropped when that source is
 * banned, however malformed the rest of it is. "Can be read" is the rule a
 * receiving stack needs at the least: an IPv4 or IPv6 EtherType (behind at
 * most two VLAN tags) and the whole base IP header. A frame with a third
 * VLAN tag (or more) is dropped whatever it carries: bans are published, and
 * the parser does not look past two tags.
 */
#include <limits.h>
#include <linux/bpf.h>
#include <linux/pkt_cls.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "fc_clock.h"
#include "fc_fuzz.h"
#include "fc_kern.h"
#include "freqctl.skel.h"

static struct freqctl *skel;

static void fc_fuzz_self_check(void);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	LIBBPF_OPTS(bpf_object_open_opts, opts);
	const struct fc_ctx *ctx = fc_fuzz_ctx();
	struct fc_err err;

	(void)argc;
	(void)argv;
	if (fc_pin_dir_prepare(ctx->pin_dir, &err) < 0) {
		fprintf(stderr, "fuzz_frames: %s\n", err.msg);
		exit(1);
	}
	opts.pin_root_path = ctx->pin_dir;
	skel = freqctl__open_opts(&opts);
	if (skel)
		skel->rodata->fc_tick_ns = fc_clock_tick_ns();
	if (!skel || freqctl__load(skel)) {
		fprintf(stderr, "fuzz_frames: loading freqctl.bpf.o failed (libbpf's log above)\n");
		exit(1);
	}
	/* Prefixes on each IPv4 path (a /16's own, a /17-/24 length, a /25-/31
	 * inside a /24), an exact address, and IPv6 ones. */
	fc_fuzz_ban("198.18.0.0/15");
	fc_fuzz_ban("100.64.16.0/20");
	fc_fuzz_ban("192.0.2.16/28");
	fc_fuzz_ban("203.0.113.7");
	fc_fuzz_ban("2001:db8::/32");
	fc_fuzz_ban("3fff:0:0:1::/64");
	fc_fuzz_ban("2001:db8:ffff::1");
	/* Limits too, so their paths run on the same frames. */
	fc_fuzz_policy(1, "ip=198.51.100.0/24", "5/s", "");
	fc_fuzz_policy(2, "ip=*", "1000/s", "count=syn");
	fc_fuzz_policy(3, "ip=2001:db8:1::/48", "3/s", "algo=window");
	fc_fuzz_self_check();
	return 0;
}

static bool fc_in(const uint8_t *a, const uint8_t *net, unsigned plen)
{
	return !memcmp(a, net, plen / 8) && (plen % 8 == 0 || ((a[plen / 8] ^ net[plen / 8]) >> (8 - plen % 8)) == 0);
}

/* The bans above, as address and length. */
static const struct {
	uint8_t a[16];
	unsigned len;
} fc_bans4[] = { { { 198, 18 }, 15 }, { { 100, 64, 16 }, 20 }, { { 192, 0, 2, 16 }, 28 }, { { 203, 0, 113, 7 }, 32 } },
  fc_bans6[] = { { { 0x20, 0x01, 0x0d, 0xb8 }, 32 },
		 { { 0x3f, 0xff, 0, 0, 0, 0, 0, 1 }, 64 },
		 { { 0x20, 0x01, 0x0d, 0xb8, 0xff, 0xff, [15] = 1 }, 128 } };

static bool fc_in_bans(const uint8_t *a, bool v6)
{
	size_t i, n = v6 ? sizeof(fc_bans6) / sizeof(fc_bans6[0]) : sizeof(fc_bans4) / sizeof(fc_bans4[0]);

	for (i = 0; i < n; i++)
		if (fc_in(a, v6 ? fc_bans6[i].a : fc_bans4[i].a, v6 ? fc_bans6[i].len : fc_bans4[i].len))
			return true;
	return false;
}

/* Whether the frame's source, where it can be read, is banned above, or it
 * is behind more VLAN tags than are read (then it must be dropped too). */
static bool fc_source_banned(const uint8_t *f, size_t n)
{
	static const uint8_t mapped[12] = { [10] = 0xff, [11] = 0xff };
	size_t off = 12;
	unsigned proto, i;
	const uint8_t *src;

	if (n < 14)
		return false;
	proto = (unsigned)f[off] << 8 | f[off + 1];
	for (i = 0; i < 2 && (proto == 0x8100 || proto == 0x88a8); i++) {
		off += 4;
		if (n < off + 2)
			return false;
		proto = (unsigned)f[off] << 8 | f[off + 1];
	}
	if (proto == 0x8100 || proto == 0x88a8)
		return true;
	off += 2;
	if (proto == 0x0800 && n >= off + 20)
		return fc_in_bans(f + off + 12, false);
	if (proto == 0x86dd && n >= off + 40) {
		src = f + off + 8;
		if (!memcmp(src, mapped, 12))
			return fc_in_bans(src + 12, false);
		return fc_in_bans(src, true);
	}
	return false;
}

static int fc_run(struct bpf_program *prog, const uint8_t *f, size_t n)
{
	LIBBPF_OPTS(bpf_test_run_opts, opts, .data_in = f, .data_size_in = (__u32)n, .repeat = 1);

	if (bpf_prog_test_run_opts(bpf_program__fd(prog), &opts))
		return INT_MIN; /* the kernel refused the frame itself (its size): nothing ran */
	return (int)opts.retval;
}

/* The properties are not vacuous: a banned source is seen as banned and
 * dropped, a clean one passes. */
static void fc_fuzz_self_check(void)
{
	uint8_t f[34] = { [12] = 0x08, [14] = 0x45, [23] = 1, [26] = 198, [27] = 18, [28] = 0, [29] = 7 };

	if (!fc_source_banned(f, sizeof(f)) || fc_run(skel->progs.freqctl_xdp, f, sizeof(f)) != XDP_DROP)
		fc_fuzz_fail("self-check: 198.18.0.7 is not seen as banned");
	f[26] = 192, f[27] = 0, f[28] = 2, f[29] = 17;
	if (!fc_source_banned(f, sizeof(f)) || fc_run(skel->progs.freqctl_xdp, f, sizeof(f)) != XDP_DROP)
		fc_fuzz_fail("self-check: 192.0.2.17 is not seen as banned");
	f[29] = 1;
	if (fc_source_banned(f, sizeof(f)) || fc_run(skel->progs.freqctl_xdp, f, sizeof(f)) != XDP_PASS)
		fc_fuzz_fail("self-check: 192.0.2.1 does not pass");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	bool banned = fc_source_banned(data, size);
	int xdp, tc;

	if (size < 14 || size > 4096)
		return -1; /* not a frame the kernel takes for a test run */
	xdp = fc_run(skel->progs.freqctl_xdp, data, size);
	tc = fc_run(skel->progs.freqctl_tc, data, size);
	if (xdp != INT_MIN && xdp != XDP_PASS && xdp != XDP_DROP)
		fc_fuzz_fail("XDP verdict %d on a %zu-byte frame", xdp, size);
	if (tc != INT_MIN && tc != TC_ACT_OK && tc != TC_ACT_SHOT)
		fc_fuzz_fail("TC verdict %d on a %zu-byte frame", tc, size);
	if (banned && xdp != INT_MIN && xdp != XDP_DROP)
		fc_fuzz_fail("a banned source passed XDP (verdict %d, %zu bytes)", xdp, size);
	if (banned && tc != INT_MIN && tc != TC_ACT_SHOT)
		fc_fuzz_fail("a banned source passed TC (verdict %d, %zu bytes)", tc, size);
	return 0;
}
