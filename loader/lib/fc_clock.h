/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The packet path's coarse clock in its jiffies form: what to publish as
 * fc_config.jiffies_utc_ns so that it gives the same UTC as the coarse
 * monotonic clock plus utc_offset_ns.
 */
#ifndef FC_CLOCK_H
#define FC_CLOCK_H

#include <stdint.h>

#include "fc_maps.h"

/* UTC at jiffies 0 for a packet path whose coarse clock is CLOCK_MONOTONIC_
 * COARSE + utc_offset_ns; 0 (the packet path then calls the helper) where
 * the kernel's tick length is not known or the probe cannot run. prev: the
 * config the last publish left (NULL: none), whose constant is kept where
 * the one measured now is a late tick's (fc_clock.c). */
uint64_t fc_jiffies_utc_ns(uint64_t utc_offset_ns, const struct fc_config *prev);
/* The same, measured with the clock probe (bpf/fc_clock_probe.bpf.c)
 * loaded as probe_fd: a test loads it with another CONFIG_HZ. */
uint64_t fc_jiffies_utc_ns_probe(int probe_fd, uint64_t utc_offset_ns);

#endif /* FC_CLOCK_H */
