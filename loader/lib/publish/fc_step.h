/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The writes of a publish that the packet path or nginx's workers can see
 * (a map entry, a byte of fc_top4, the config, a policy slot, a slot or
 * word of the shm), each told here once made: counted, so that a publish
 * knows whether it wrote before a point (fc_sync.c waits for packets in
 * flight only then); and a test's stop after each, where it sends its
 * frames and requests, the publish held while it runs
 * (tests/bpf/test_order.c, doc/architecture.md, Publishing order). The stop
 * is off unless a test sets it; while it is set, the maps are written an
 * entry at a time, each entry a stop, in the order a batch writes them.
 */
#ifndef FC_STEP_H
#define FC_STEP_H

#include <stdbool.h>
#include <stdint.h>

/* Called with what was just written (a map's or the shm's name, and how). */
typedef void (*fc_step_fn)(const char *what, void *arg);

/* Sets the stop (NULL: none). Not for use while a publish runs. */
void fc_step_set(fc_step_fn fn, void *arg);

extern fc_step_fn fc_step_hook;
extern uint64_t fc_step_writes;
void fc_step_call(const char *what);

/* Whether a stop is set: the maps are then written an entry at a time. */
static inline bool fc_stepping(void)
{
	return __builtin_expect(fc_step_hook != 0, 0);
}

/* A write was made. */
static inline void fc_step(const char *what)
{
	__atomic_fetch_add(&fc_step_writes, 1, __ATOMIC_RELAXED);
	if (fc_stepping())
		fc_step_call(what);
}

/* How many writes were made so far (in this process). */
static inline uint64_t fc_step_count(void)
{
	return __atomic_load_n(&fc_step_writes, __ATOMIC_RELAXED);
}

#endif /* FC_STEP_H */
