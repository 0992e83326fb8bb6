// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* The benchmark's floor: the cost of running any XDP program at all. */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

SEC("xdp")
int fc_bench_empty(struct xdp_md *ctx)
{
	return XDP_PASS;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
