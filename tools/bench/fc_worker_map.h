/* SPDX-License-Identifier: BSD-2-Clause */
/* The benchmarks' stand-in for an nginx worker: both shm files mapped as the
 * module maps them (the config file read-only, the state file read-write),
 * and the index built from them. */
#ifndef FC_WORKER_MAP_H
#define FC_WORKER_MAP_H

#include "fc_l7.h"

/* 0, or -1 with a message on stderr naming what failed. */
int fc_worker_map(const char *shm, struct fc_l7_index *ix, const struct fc_l7_alloc *a);

#endif /* FC_WORKER_MAP_H */
