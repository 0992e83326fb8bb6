/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The memory the fleet agent changes in place: the workers' state file
 * (nginx), mapped MAP_SHARED read-write so that the agent's
 * compare-and-exchange meets the workers' on the same words, and the
 * XDP/TC bucket map (fc_buckets, BPF_F_MMAPABLE), mapped the same way.
 *
 * The state file is writable by the workers' user: one could truncate it
 * under the mapping, and the next access would raise SIGBUS in root. A
 * guard (as libwayland-server's for client shm) catches it: when the fault
 * is inside a guarded mapping, anonymous zero pages replace the whole
 * mapping (MAP_FIXED), the mapping is marked lost and the access resumes,
 * reading zeros and writing nowhere. The caller treats a lost mapping's
 * round as void (writes lost there only withhold credit) and maps the file
 * again next round. A SIGBUS anywhere else is not ours: the previous
 * disposition takes it. Every value read from a mapping is hostile.
 */
#ifndef FC_FLEET_MAP_H
#define FC_FLEET_MAP_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "fc_error.h"

#define FC_FLEET_MAPS_MAX 8 /* guarded at once, in the process */

struct fc_fleet_map {
	void *base;
	size_t len;
	bool guarded;               /* a file's: in the guard's table */
	volatile sig_atomic_t lost; /* a SIGBUS hit it: zeros now */
	dev_t dev;                  /* a file's: the one mapped (a file made anew */
	ino_t ino;                  /* at its path is another: map it again) */
};

/* Maps the first len bytes of path read-write, shared, guarded: 0, or -1
 * with err (path missing, a symlink, not a regular file, shorter than len,
 * the guard's table full). */
int fc_fleet_map_file(struct fc_fleet_map *m, const char *path, size_t len, struct fc_err *err);

/* Maps len bytes of a BPF map's fd (BPF_F_MMAPABLE) read-write, shared;
 * kernel memory, which can not be truncated: not guarded. */
int fc_fleet_map_bpf(struct fc_fleet_map *m, int map_fd, size_t len, const char *name, struct fc_err *err);

/* Whether a SIGBUS replaced it: the round that read it is void. */
static inline bool fc_fleet_map_lost(const struct fc_fleet_map *m)
{
	return m->lost != 0;
}

/* Unmaps it (and takes it out of the guard's table). */
void fc_fleet_map_close(struct fc_fleet_map *m);

#endif /* FC_FLEET_MAP_H */
