// SPDX-License-Identifier: BSD-2-Clause
#include <pthread.h>
#include <stdlib.h>
#include <time.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "fc_clock.h"
#include "fc_cmp.h"
#include "fc_duration.h"
#include "fc_clock_probe.skel.h"

/* Pairs read per measurement, and measurements before giving up. */
#define FC_CLOCK_READS 5
#define FC_CLOCK_TRIES 4

/* The probe, loaded once per process (its load is what costs). */
static pthread_mutex_t fc_clock_lock = PTHREAD_MUTEX_INITIALIZER;
static struct fc_clock_probe *fc_clock_skel;

uint64_t fc_expiry_ns(int64_t expires)
{
	/* Saturated: a stored time past FC_TIME_MAX can not wrap into the past. */
	if (expires > FC_TIME_MAX)
		expires = FC_TIME_MAX;
	return expires > 0 ? (uint64_t)expires * FC_NS_PER_SEC : 0;
}

/* What the offset to UTC is rounded down to. */
#define FC_OFFSET_UNIT_NS 1000000

uint64_t fc_utc_offset_ns(void)
{
	struct timespec rt, mono;
	uint64_t d;

	/* UTC first: a delay between the reads (a preemption) then puts the
	 * packet path's clock behind UTC, where it only ever delays, rather
	 * than ahead, where a TTL would end early. */
	clock_gettime(CLOCK_REALTIME, &rt);
	clock_gettime(CLOCK_MONOTONIC, &mono);
	d = ((uint64_t)rt.tv_sec - (uint64_t)mono.tv_sec) * FC_NS_PER_SEC + (uint64_t)rt.tv_nsec - (uint64_t)mono.tv_nsec;
	/* Whole milliseconds: two syncs compute the same offset, so a sync that
	 * changes nothing else writes nothing. Rounded down, as the reads are
	 * ordered: to the nearest, it could put the clock ahead by half a ms. */
	return d / FC_OFFSET_UNIT_NS * FC_OFFSET_UNIT_NS;
}

uint64_t fc_clock_tick_ns(void)
{
	struct timespec res;

	if (clock_getres(CLOCK_MONOTONIC_COARSE, &res))
		return 0;
	return (uint64_t)res.tv_sec * 1000000000ULL + (uint64_t)res.tv_nsec;
}

/* jiffies * tick - CLOCK_MONOTONIC_COARSE, read FC_CLOCK_READS times; -1
 * if the probe fails or was loaded with a tick that is not the kernel's
 * (jiffies times it would run fast or slow, and the reads would agree all
 * the same). */
static int fc_clock_read(int fd, uint64_t *d)
{
	uint64_t tick = fc_clock_tick_ns();
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
 * measured; what bounds it against UTC is below (fc_jiffies_utc_ns).
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

uint64_t fc_jiffies_utc_ns_now(uint64_t utc_offset_ns)
{
	uint64_t ret = 0;

	pthread_mutex_lock(&fc_clock_lock);
	if (!fc_clock_skel) {
		fc_clock_skel = fc_clock_probe__open();
		if (fc_clock_skel) {
			fc_clock_skel->rodata->fc_tick_ns = fc_clock_tick_ns();
			if (fc_clock_probe__load(fc_clock_skel)) {
				fc_clock_probe__destroy(fc_clock_skel);
				fc_clock_skel = NULL;
			}
		}
	}
	if (fc_clock_skel)
		ret = fc_jiffies_utc_ns_probe(bpf_program__fd(fc_clock_skel->progs.fc_clock_probe), utc_offset_ns);
	pthread_mutex_unlock(&fc_clock_lock);
	return ret;
}

/*
 * What a publish writes: the constant measured now, a tick less. Jiffies
 * times the tick is L + K: L the tick boundary (on CLOCK_MONOTONIC) that
 * jiffies were last advanced to, never later than now, and K a constant.
 * The coarse clock C is advanced by the same tick handler just after
 * jiffies, to the end of the timekeeper's last whole interval, so C is
 * before L + tick. A constant measured with L0 and C0 has the jiffies form
 * read, at any time after, L - (L0 + tick - C0) on CLOCK_MONOTONIC: before
 * L, so never ahead of UTC, whatever NTP does to C's phase meanwhile.
 * Without the tick taken away it would read L + (C0 - L0), and C0 is past
 * L0 where the handler ran late (after the timekeeper's next interval had
 * ended, over 3 ms late at HZ=250 here): a TTL could then end up to a tick
 * early until the next publish. The price is a tick more lag: under three
 * ticks behind UTC (the time since L, under one, and L0 + tick - C0, under
 * two) where the coarse clock is under two; a constant measured in a late
 * tick lags no more than the coarse clock. L + K, and so the bound, holds
 * for as long as utc_offset_ns does: a publish that finds it unchanged may
 * keep the last constant instead of measuring one.
 */
uint64_t fc_jiffies_utc_ns(uint64_t utc_offset_ns)
{
	uint64_t tick = fc_clock_tick_ns(), a, b;
	struct timespec wait = { .tv_nsec = (long)tick };

	/* C also moves outside the tick handler, to the exact time, when the
	 * wall clock is stepped (settime, adjtimex's offset, a resume): one
	 * that lands after a boundary whose handler runs late has C past L0 +
	 * tick until the handler runs, and a constant measured then is ahead
	 * by that lateness. A tick later the handler has run: of the two, the
	 * smaller holds. It costs a publish that measures (sync, attach, one
	 * after a step) a tick. */
	a = fc_jiffies_utc_ns_now(utc_offset_ns);
	if (!a || !tick)
		return 0;
	nanosleep(&wait, NULL);
	b = fc_jiffies_utc_ns_now(utc_offset_ns);
	if (!b)
		return 0;
	return (a < b ? a : b) - tick;
}

/* The clock's constants in cfg as of now, over old's (what the maps held).
 * The last publish's constants hold while the offset does (fc_clock.c):
 * the probe's load is most of what measuring the jiffies one costs a
 * command. "Holds" has a millisecond of slack upwards: a read delayed
 * across a millisecond boundary (a preemption between the two clock reads;
 * an offset just past a boundary) would otherwise flip the offset by one
 * and back from publish to publish, each flip a measurement. The old one is
 * kept only while it is not above the offset read now, itself never above
 * the true one: the clock stays behind UTC, by under 2 ms more than the
 * ticks' lag. */
void fc_clock_refresh(struct fc_config *cfg, const struct fc_config *old)
{
	uint64_t off = fc_utc_offset_ns();

	if (old->jiffies_utc_ns && old->utc_offset_ns <= off && off - old->utc_offset_ns <= FC_OFFSET_UNIT_NS) {
		cfg->utc_offset_ns = old->utc_offset_ns;
		cfg->jiffies_utc_ns = old->jiffies_utc_ns;
		return;
	}
	cfg->utc_offset_ns = off;
	cfg->jiffies_utc_ns = fc_jiffies_utc_ns(off);
}
