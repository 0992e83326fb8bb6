// SPDX-License-Identifier: BSD-2-Clause
#include <pthread.h>
#include <stdlib.h>
#include <time.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "fc_clock.h"
#include "fc_maps.h"
#include "fc_clock_probe.skel.h"

/* Pairs read per measurement, and measurements before giving up. */
#define FC_CLOCK_READS 5
#define FC_CLOCK_TRIES 4

/* The probe, loaded once per process (its load is what costs). */
static pthread_mutex_t fc_clock_lock = PTHREAD_MUTEX_INITIALIZER;
static struct fc_clock_probe *fc_clock_skel;

static int fc_u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

/* The kernel's tick length: the coarse clock's resolution (TICK_NSEC). */
static uint64_t fc_kernel_tick_ns(void)
{
	struct timespec res;

	if (clock_getres(CLOCK_MONOTONIC_COARSE, &res))
		return 0;
	return (uint64_t)res.tv_sec * 1000000000ULL + (uint64_t)res.tv_nsec;
}

/* jiffies * tick - CLOCK_MONOTONIC_COARSE, read FC_CLOCK_READS times; -1
 * if the tick is not known or the probe fails. A tick the programs take
 * from a kernel config that is not the running kernel's (libbpf reads
 * /boot/config-$(uname -r) or /proc/config.gz) is not known: jiffies times
 * it would run fast or slow, and the reads would agree all the same. */
static int fc_clock_read(int fd, uint64_t *d)
{
	uint64_t tick = fc_kernel_tick_ns();
	struct fc_clock_pair p;
	unsigned char frame[64] = { 0 };
	int i;

	for (i = 0; i < FC_CLOCK_READS; i++) {
		LIBBPF_OPTS(bpf_test_run_opts, opts, .data_in = frame, .data_size_in = sizeof(frame),
			    .data_out = frame, .data_size_out = sizeof(frame));

		if (bpf_prog_test_run_opts(fd, &opts) || opts.retval != XDP_PASS)
			return -1;
		__builtin_memcpy(&p, frame, sizeof(p));
		if (!p.tick_ns || p.tick_ns != tick)
			return -1;
		d[i] = p.jiffies_ns - p.coarse_ns;
	}
	return 0;
}

/*
 * Both forms are advanced in the tick, jiffies first, so their distance is
 * one value but for a read that a tick splits: it sees jiffies moved and the
 * coarse clock not yet (the value plus a tick) or, rarer, the reverse. Such a
 * read is rare (nanoseconds of a tick's milliseconds, measured: 4 of 2,578
 * pairs when the CPU idles between them, 0 of 590,000 busy), so the value
 * that most of the reads agree on is the distance; with no majority, read
 * again. The value is checked only by agreement: a wrong one would shift the
 * clock by a whole tick, which is why none is published without it.
 *
 * From tick to tick the distance stays put only while NTP leaves the clock's
 * frequency alone: jiffies count whole ticks of CLOCK_MONOTONIC, the coarse
 * clock adds the timekeeper's interval, whose length NTP corrects, so the
 * distance then wanders by the correction (10 ppm: 40 ns a tick at HZ=250),
 * wrapping within a tick. The jiffies form keeps the distance its publish
 * measured, and with it the coarse clock's bounds: behind UTC by under two
 * ticks, ahead of it never but by how much later the tick it was measured in
 * ran than the current one (microseconds).
 */
uint64_t fc_jiffies_utc_ns_probe(int probe_fd, uint64_t utc_offset_ns)
{
	uint64_t d[FC_CLOCK_READS], ret = 0;
	int try, i, same;

	for (try = 0; try < FC_CLOCK_TRIES && !ret; try++) {
		if (fc_clock_read(probe_fd, d) < 0)
			break;
		qsort(d, FC_CLOCK_READS, sizeof(*d), fc_u64_cmp);
		for (i = same = 0; i < FC_CLOCK_READS; i++)
			same += d[i] == d[FC_CLOCK_READS / 2];
		if (same > FC_CLOCK_READS / 2)
			ret = utc_offset_ns - d[FC_CLOCK_READS / 2];
	}
	return ret;
}

/*
 * The distance has two values, a tick apart. A tick's handler advances
 * jiffies to the last tick boundary before it, and the coarse clock to the
 * last end of a timekeeper's interval before it; the interval ends a while
 * before each boundary (the coarse clock's least lag, 0.84 ms here), so the
 * coarse clock holds the end before the boundary, but for a handler that
 * runs so late that the next end has passed too (over 3 ms here, on a
 * loaded machine). A constant measured in such a tick would have the
 * jiffies form run ahead of UTC by up to a tick, ending TTLs early; of two
 * distances a tick apart the larger is the on-time one. So where the last
 * publish's distance is a tick (within half of one) larger than the one
 * measured now, it is kept: a late tick at both is what could still put the
 * clock ahead.
 */
uint64_t fc_jiffies_utc_ns(uint64_t utc_offset_ns, const struct fc_config *prev)
{
	uint64_t ret = 0, tick = fc_kernel_tick_ns(), more;

	pthread_mutex_lock(&fc_clock_lock);
	if (!fc_clock_skel)
		fc_clock_skel = fc_clock_probe__open_and_load();
	if (fc_clock_skel)
		ret = fc_jiffies_utc_ns_probe(bpf_program__fd(fc_clock_skel->progs.fc_clock_probe), utc_offset_ns);
	pthread_mutex_unlock(&fc_clock_lock);
	if (ret && prev && prev->jiffies_utc_ns) {
		/* (prev's distance) - (this one), from the two constants */
		more = (utc_offset_ns - ret) - (prev->utc_offset_ns - prev->jiffies_utc_ns);
		more = -more;
		if (more >= tick / 2 && more <= tick + tick / 2)
			ret -= more;
	}
	return ret;
}
