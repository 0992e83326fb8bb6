/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The packet path's clock. The coarse one is jiffies times the tick length
 * plus fc_config.jiffies_utc_ns: bpf_jiffies64() is inlined by the verifier
 * into a load where bpf_ktime_get_coarse_ns() is a helper call. Both are
 * advanced together in the tick: the loader measures their distance and
 * publishes it a tick larger, which keeps this form behind UTC (fc_clock.c).
 */
#ifndef FC_CLOCK_BPF_H
#define FC_CLOCK_BPF_H

#include <stdbool.h>
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include "fc_maps.h"

/* The running kernel's tick length (TICK_NSEC), which the loader sets
 * before the load from the coarse clock's resolution (fc_clock_tick_ns);
 * 0, as an object loaded without it has: the helper's form. Read-only, so
 * the verifier knows it: a kconfig CONFIG_HZ would be libbpf's reading of
 * a config file that may not be the running kernel's, and its values spelled
 * out at every clock read cost the verifier 130,000 instructions. */
const volatile __u64 fc_tick_ns = 0;

/* UTC in ns: the coarse clock (see fc_config.utc_offset_ns), or the precise
 * one for a policy that needs it. The jiffies' form needs the tick set and
 * jiffies_utc_ns published; else the helper, as a publish that could not
 * measure the constant (the field 0) asks. */
static __always_inline __u64 fc_clock(const struct fc_config *cfg, bool precise)
{
	if (precise)
		return bpf_ktime_get_ns() + cfg->utc_offset_ns;
	if (fc_tick_ns && cfg->jiffies_utc_ns)
		return bpf_jiffies64() * fc_tick_ns + cfg->jiffies_utc_ns;
	return bpf_ktime_get_coarse_ns() + cfg->utc_offset_ns;
}

#endif /* FC_CLOCK_BPF_H */
