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

extern unsigned int CONFIG_HZ __kconfig __weak;

/* The kernel's TICK_NSEC, (NSEC_PER_SEC + HZ / 2) / HZ, for the HZ values
 * Kconfig offers; 0 for another or an unknown one. Spelled as constants: a
 * division by CONFIG_HZ, known only at load time, would stay a division in
 * every packet, where these comparisons are pruned by the verifier. */
static __always_inline __u64 fc_tick_ns(void)
{
	if (CONFIG_HZ == 100)
		return 10000000;
	if (CONFIG_HZ == 250)
		return 4000000;
	if (CONFIG_HZ == 300)
		return 3333333;
	if (CONFIG_HZ == 1000)
		return 1000000;
	return 0;
}

/* UTC in ns: the coarse clock (see fc_config.utc_offset_ns), or the precise
 * one for a policy that needs it. The jiffies' form needs the tick known and
 * jiffies_utc_ns published; else the helper, as a config that an older
 * freqctl published (the field 0) asks. */
static __always_inline __u64 fc_clock(const struct fc_config *cfg, bool precise)
{
	__u64 tick = fc_tick_ns();

	if (precise)
		return bpf_ktime_get_ns() + cfg->utc_offset_ns;
	if (tick && cfg->jiffies_utc_ns)
		return bpf_jiffies64() * tick + cfg->jiffies_utc_ns;
	return bpf_ktime_get_coarse_ns() + cfg->utc_offset_ns;
}

#endif /* FC_CLOCK_BPF_H */
