// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* The two entry points of the packet path; everything else is shared. */
#include <linux/bpf.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_helpers.h>

#include "fc_decide.bpf.h"

SEC("xdp")
int freqctl_xdp(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;

	return fc_decide(data, data_end) ? XDP_DROP : XDP_PASS;
}

SEC("tc")
int freqctl_tc(struct __sk_buff *skb)
{
	void *data = (void *)(long)skb->data;
	void *data_end = (void *)(long)skb->data_end;

	return fc_decide(data, data_end) ? TC_ACT_SHOT : TC_ACT_OK;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
