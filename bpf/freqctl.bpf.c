// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* The two entry points of the packet path; everything else is shared. */
#include <linux/bpf.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_helpers.h>

#include "fc_decide.bpf.h"

/* The pin dir the loader loaded this program for (maps/fc_maps.h): never
 * read here, it only rides in .rodata, which the programs read (fc_tick_ns),
 * so that it is among the maps the kernel lists for the program. */
const volatile struct fc_pin_mark fc_pin_mark = { .magic = FC_PIN_MARK_MAGIC };

SEC("xdp")
int freqctl_xdp(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;

	return fc_decide(ctx, false, data, data_end, data_end - data) ? XDP_DROP : XDP_PASS;
}

/* Headers TC makes linear before parsing: two VLAN tags, an IPv6 header
 * with its extension headers, TCP. GRO-merged and header-split skbs may hold
 * less than that in their linear part. */
#define FC_TC_PULL 256

SEC("tc")
int freqctl_tc(struct __sk_buff *skb)
{
	__u32 want = skb->len < FC_TC_PULL ? skb->len : FC_TC_PULL;
	void *data = (void *)(long)skb->data;
	void *data_end = (void *)(long)skb->data_end;

	/* A failed pull leaves what is linear: the source is in it, or the
	 * frame counts as cut before its source. */
	if (data + want > data_end) {
		bpf_skb_pull_data(skb, want);
		data = (void *)(long)skb->data;
		data_end = (void *)(long)skb->data_end;
	}
	return fc_decide(skb, true, data, data_end, skb->len) ? TC_ACT_SHOT : TC_ACT_OK;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
