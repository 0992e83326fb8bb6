// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The flood benchmark's wrapper: gives each run of the frame (an untagged
 * IPv4 one) a new source address, then tail-calls the program under test,
 * so that BPF_PROG_TEST_RUN's repeats replay a flood of distinct (spoofed)
 * sources through it. This kernel refuses freplace, and a tail call keeps
 * the program under test exactly as loaded. Its own cost is measured by
 * tail-calling an empty program instead.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

struct {
	__uint(type, BPF_MAP_TYPE_PROG_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} fc_flood_target SEC(".maps");

/* Set by the benchmark before each run: the next frame's number, and the
 * sources drawn from it: anywhere (n 0), or base + a permutation of 0..n-1
 * (the benchmark's exact bans). */
__u64 fc_flood_seq;
__u32 fc_flood_base;
__u32 fc_flood_n;

/* murmur3's finaliser: a bijection of 32 bits, so consecutive numbers give
 * distinct, scattered addresses. */
static __always_inline __u32 fc_mix32(__u32 h)
{
	h ^= h >> 16;
	h *= 0x85ebca6b;
	h ^= h >> 13;
	h *= 0xc2b2ae35;
	return h ^ (h >> 16);
}

SEC("xdp")
int fc_bench_flood(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct iphdr *iph = data + sizeof(struct ethhdr);
	__u64 seq = fc_flood_seq++;
	__u32 a;

	if ((void *)(iph + 1) > data_end)
		return XDP_ABORTED;
	/* 2654435761 is prime: seq times it modulo n walks all of 0..n-1 once
	 * per n frames, in an order that is not the addresses'. */
	a = fc_flood_n ? fc_flood_base + (__u32)((seq * 2654435761ULL) % fc_flood_n) : fc_mix32((__u32)seq);
	iph->saddr = bpf_htonl(a);
	bpf_tail_call(ctx, &fc_flood_target, 0);
	return XDP_ABORTED; /* no program under test */
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
