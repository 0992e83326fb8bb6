/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The verdict shared by the XDP and the TC program: parse, look the source up
 * in the bans, count. Returns whether to drop; the entry point maps that to
 * its own return codes.
 */
#ifndef FC_DECIDE_BPF_H
#define FC_DECIDE_BPF_H

#include "fc_parse.bpf.h"
#include "fc_state.bpf.h"

/* The clock is read at most once per packet, and only for a ban with a TTL. */
struct fc_clock {
	__u64 now;
};

static __always_inline bool fc_ban_holds(const struct fc_ban *ban, struct fc_clock *clk)
{
	if (!ban)
		return false;
	if (!ban->expires_ns)
		return true;
	if (!clk->now)
		clk->now = bpf_ktime_get_tai_ns();
	return clk->now < ban->expires_ns;
}

static __always_inline bool fc_prefix_banned(const struct fc_pkt *pkt, const struct fc_config *cfg,
					     struct fc_clock *clk)
{
	struct fc_pfx4_key k4;
	struct fc_pfx6_key k6;

	if (pkt->family == 4) {
		if (!cfg->n_pfx4)
			return false;
		k4.prefixlen = 32;
		__builtin_memcpy(k4.a, &pkt->saddr.a[12], 4);
		return fc_ban_holds(bpf_map_lookup_elem(&fc_ban_pfx4, &k4), clk);
	}
	if (!cfg->n_pfx6)
		return false;
	k6.prefixlen = 128;
	__builtin_memcpy(k6.a, pkt->saddr.a, 16);
	return fc_ban_holds(bpf_map_lookup_elem(&fc_ban_pfx6, &k6), clk);
}

static __always_inline void fc_count(struct fc_counter *c, __u64 bytes)
{
	c->packets++;
	c->bytes += bytes;
}

static __always_inline bool fc_decide(void *data, void *data_end)
{
	__u64 len = data_end - data;
	struct fc_pkt pkt = {};
	struct fc_clock clk = {};
	struct fc_config *cfg;
	struct fc_stats *st;
	enum fc_parse_rc rc;
	__u32 zero = 0;
	bool drop = false;

	st = bpf_map_lookup_elem(&fc_stats, &zero);
	cfg = bpf_map_lookup_elem(&fc_config, &zero);
	if (!st || !cfg)
		return false;

	rc = fc_parse(data, data_end, &pkt);
	if (rc == FC_PARSE_NOT_IP) {
		fc_count(&st->non_ip, len);
	} else if (rc == FC_PARSE_MALFORMED) {
		fc_count(&st->malformed, len);
	} else if (cfg->n_exact &&
		   fc_ban_holds(bpf_map_lookup_elem(&fc_ban_exact, &pkt.saddr), &clk)) {
		fc_count(&st->drop_exact, len);
		drop = true;
	} else if (fc_prefix_banned(&pkt, cfg, &clk)) {
		fc_count(&st->drop_prefix, len);
		drop = true;
	} else {
		fc_count(&st->passed, len);
	}
	return drop;
}

#endif /* FC_DECIDE_BPF_H */
