// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* Reads the two forms of the coarse clock together, for the loader to
 * measure their distance (loader/lib/fc_clock.c). XDP, run by
 * BPF_PROG_TEST_RUN on a frame it writes the pair into: a syscall program
 * may not call bpf_ktime_get_coarse_ns(). */
#include "fc_clock.bpf.h"

SEC("xdp")
int fc_clock_probe(struct xdp_md *ctx)
{
	struct fc_clock_pair *p = (void *)(long)ctx->data;

	if ((void *)(p + 1) > (void *)(long)ctx->data_end)
		return XDP_ABORTED;
	p->tick_ns = fc_tick_ns;
	p->jiffies_ns = bpf_jiffies64() * fc_tick_ns;
	p->coarse_ns = bpf_ktime_get_coarse_ns();
	return XDP_PASS;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
