/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A test's stop after each write a publish makes where the packet path or
 * nginx's workers can see it (a map entry, a byte of fc_top4, the config,
 * a policy slot, a slot or word of the shm): the test sends its frames and
 * requests there, the publish held while it runs (tests/bpf/test_order.c,
 * doc/architecture.md, Publishing order). Off unless a test sets it; a
 * publish then pays one test of a pointer per write. While it is set, the
 * maps are written an entry at a time, each entry a stop, in the order a
 * batch writes them.
 */
#ifndef FC_STEP_H
#define FC_STEP_H

#include <stdbool.h>

/* Called with what was just written (a map's or the shm's name, and how). */
typedef void (*fc_step_fn)(const char *what, void *arg);

/* Sets the stop (NULL: none). Not for use while a publish runs. */
void fc_step_set(fc_step_fn fn, void *arg);

extern fc_step_fn fc_step_hook;
void fc_step_call(const char *what);

/* Whether a stop is set: the maps are then written an entry at a time. */
static inline bool fc_stepping(void)
{
	return __builtin_expect(fc_step_hook != 0, 0);
}

/* A stop, after a write. */
static inline void fc_step(const char *what)
{
	if (fc_stepping())
		fc_step_call(what);
}

#endif /* FC_STEP_H */
