// SPDX-License-Identifier: BSD-2-Clause
#include <stddef.h>

#include "fc_step.h"

fc_step_fn fc_step_hook;
uint64_t fc_step_writes;
static void *fc_step_arg;

void fc_step_set(fc_step_fn fn, void *arg)
{
	fc_step_arg = arg;
	fc_step_hook = fn;
}

void fc_step_call(const char *what)
{
	fc_step_hook(what, fc_step_arg);
}
