/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The clock the packet path reads, as a publish writes it into fc_config:
 * UTC as the monotonic clock plus utc_offset_ns, and the coarse clock in its
 * jiffies form (jiffies_utc_ns) giving the same UTC; expiries in that clock.
 */
#ifndef FC_CLOCK_H
#define FC_CLOCK_H

#include <stdint.h>

#include "fc_maps.h"

/* UTC now in unix milliseconds (the fleet's node set is written in them). */
int64_t fc_unix_ms(void);
/* A ban's kernel expiry (UTC ns) for a store expiry (unix seconds; 0 = never). */
uint64_t fc_expiry_ns(int64_t expires);
/* UTC - CLOCK_MONOTONIC in ns, whole ms: the packet path adds it to the
 * monotonic clock it reads. */
uint64_t fc_utc_offset_ns(void);
/* The clock's constants in cfg (utc_offset_ns, jiffies_utc_ns) as of now,
 * over old's, what the maps held: kept while the offset holds. shift_ns:
 * the packet path's clock this far ahead of UTC (agent --clock-offset, for
 * tests of a fleet's skew; 0 otherwise), in old's as in cfg's. */
void fc_clock_refresh(struct fc_config *cfg, const struct fc_config *old, int64_t shift_ns);
/* The packet path's clock constants for now (a full publish's), shift_ns
 * ahead of UTC. */
void fc_clock_set(struct fc_config *cfg, int64_t shift_ns);

/* The running kernel's tick length (TICK_NSEC): the coarse clock's
 * resolution; 0 if it can not be read. What a loader sets as the programs'
 * fc_tick_ns before loading them (bpf/fc_clock.bpf.h). */
uint64_t fc_clock_tick_ns(void);
/* UTC at jiffies 0 for a packet path whose coarse clock is CLOCK_MONOTONIC_
 * COARSE + utc_offset_ns, as a publish writes it: never ahead of UTC, under
 * three ticks behind (doc/architecture.md, The clock). 0 (the packet path
 * then calls the helper) where the tick is not known or the probe cannot run. */
uint64_t fc_jiffies_utc_ns(uint64_t utc_offset_ns);
/* The constant as measured: the jiffies form then gives the coarse clock
 * plus utc_offset_ns, to the ns, in the tick it is measured in, and may be
 * a tick ahead of it in later ones. For a test that sets the packet path's
 * clock within one tick. */
uint64_t fc_jiffies_utc_ns_now(uint64_t utc_offset_ns);
/* The same, measured with the clock probe (bpf/fc_clock_probe.bpf.c)
 * loaded as probe_fd: a test loads it with another tick. */
uint64_t fc_jiffies_utc_ns_probe(int probe_fd, uint64_t utc_offset_ns);

#endif /* FC_CLOCK_H */
