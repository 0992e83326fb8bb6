/* SPDX-License-Identifier: BSD-2-Clause */
/* Durations as users write them: 90s, 10m, 1h, 7d, 1h30m. */
#ifndef FC_DURATION_H
#define FC_DURATION_H

#include <stdint.h>
#include <time.h>

#include "fc_error.h"

/* Ten years: beyond that "forever" (no TTL) is what was meant. */
#define FC_DURATION_MAX (3650LL * 86400)

#define FC_DURATION_STRLEN 32

/* The latest unix time freqctl takes (2286-11-20): an expiry in
 * nanoseconds, as the kernel and nginx compare it, fits in 64 bits. */
#define FC_TIME_MAX 9999999999LL

/* Parses one or more NUMBER UNIT groups (units s, m, h, d, each at most
 * once, largest first) into seconds, 1 to FC_DURATION_MAX. */
int fc_duration_parse(const char *s, int64_t *secs, struct fc_err *err);

/* The shortest text that parses back to secs: 5400 -> "1h30m". */
void fc_duration_format(int64_t secs, char buf[FC_DURATION_STRLEN]);

/* The unix second at which a TTL of ttl seconds begun at now has run out,
 * rounded up: the store keeps whole seconds, and a ban made at x.999 s with
 * --ttl 1s must hold until x+2, not lapse 1 ms later at x+1. */
int64_t fc_expires_at(const struct timespec *now, int64_t ttl);
/* The same from the real-time clock. */
int64_t fc_expires_after(int64_t ttl);

/* A unix time as ISO 8601 UTC: "2026-11-22T04:40:00Z". */
#define FC_TIME_STRLEN 32
void fc_time_format(int64_t t, char buf[FC_TIME_STRLEN]);

/* Now, UTC, in nanoseconds: the clock the packet path and nginx charge by
 * (a whole second read instead would misstate a bucket by up to a second). */
uint64_t fc_utc_ns(void);

#endif /* FC_DURATION_H */
