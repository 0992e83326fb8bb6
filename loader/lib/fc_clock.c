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

int64_t fc_unix_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

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

/* The distance most of the reads agree on (a read that a tick splits is a
 * tick off, and rare); with no majority, read again: a wrong value would
 * shift the clock by a tick (doc/architecture.md, The clock). */
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

/* The constant measured now, a tick less, so that the jiffies form never
 * runs ahead of UTC, even measured in a tick whose handler ran late; it
 * lags by under three ticks (doc/architecture.md, The clock). */
uint64_t fc_jiffies_utc_ns(uint64_t utc_offset_ns)
{
	uint64_t tick = fc_clock_tick_ns(), a, b;
	struct timespec wait = { .tv_nsec = (long)tick };

	/* Twice, a tick apart, the smaller: one measured just after a step of
	 * the wall clock may be ahead (doc/architecture.md, The clock). */
	a = fc_jiffies_utc_ns_now(utc_offset_ns);
	if (!a || !tick)
		return 0;
	nanosleep(&wait, NULL);
	b = fc_jiffies_utc_ns_now(utc_offset_ns);
	if (!b)
		return 0;
	return (a < b ? a : b) - tick;
}

/* The constants measured for offset off to UTC, shifted by shift_ns (the
 * jiffies form's 0, not measured, stays 0). */
static void fc_clock_put(struct fc_config *cfg, uint64_t off, uint64_t jiffies_utc_ns, int64_t shift_ns)
{
	cfg->utc_offset_ns = off + (uint64_t)shift_ns;
	cfg->jiffies_utc_ns = jiffies_utc_ns ? jiffies_utc_ns + (uint64_t)shift_ns : 0;
}

void fc_clock_set(struct fc_config *cfg, int64_t shift_ns)
{
	uint64_t off = fc_utc_offset_ns();

	fc_clock_put(cfg, off, fc_jiffies_utc_ns(off), shift_ns);
}

/* The last publish's constants hold while the offset does (measuring costs
 * the probe's load), with a millisecond of slack upwards so that a read
 * delayed across a boundary does not flip it; never above the offset read
 * now (doc/architecture.md, The clock). Both compared unshifted. */
void fc_clock_refresh(struct fc_config *cfg, const struct fc_config *old, int64_t shift_ns)
{
	uint64_t off = fc_utc_offset_ns(), had = old->utc_offset_ns - (uint64_t)shift_ns;

	if (old->jiffies_utc_ns && had <= off && off - had <= FC_OFFSET_UNIT_NS) {
		cfg->utc_offset_ns = old->utc_offset_ns;
		cfg->jiffies_utc_ns = old->jiffies_utc_ns;
		return;
	}
	fc_clock_set(cfg, shift_ns);
}
