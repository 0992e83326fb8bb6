/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The pinned maps under the pin dir: finding the BPF filesystem, creating the
 * maps on first use, opening them, and reading the counters.
 */
#ifndef FC_KERN_H
#define FC_KERN_H

#include <stdint.h>

#include "fc_error.h"
#include "fc_maps.h"

#define FC_PIN_DIR_DEFAULT "/sys/fs/bpf/freqctl"

struct fc_maps {
	int dirfd; /* the pin dir; flock()ed while publishing */
	int exact4;
	int exact6;
	int pfx4;
	int pfx6;
	int stats;
	int config;
	int policies;
	int buckets;
	int src4;
	int src6;
	int pstats;
	int flood;
};

/* The names of the pinned maps, as under the pin dir. */
extern const char *const fc_map_names[];
extern const size_t fc_map_count;

/* Mounts bpffs at /sys/fs/bpf if the pin dir needs it, creates the pin dir. */
int fc_pin_dir_prepare(const char *pin_dir, struct fc_err *err);

/* Opens the pinned maps, creating and pinning them if missing. */
int fc_maps_open(const char *pin_dir, struct fc_maps *m, struct fc_err *err);
void fc_maps_close(struct fc_maps *m);

/* Serialises publishers of one pin dir. */
int fc_maps_lock(const struct fc_maps *m, const char *pin_dir, struct fc_err *err);
void fc_maps_unlock(const struct fc_maps *m);

/* The kernel id of a map or program fd (0 on error). */
uint32_t fc_obj_id(int fd);

/* The counters summed over all CPUs. */
int fc_stats_read(const struct fc_maps *m, struct fc_stats *out, struct fc_err *err);
/* One policy slot's counters summed over all CPUs. */
int fc_pstats_read(const struct fc_maps *m, uint32_t slot, struct fc_pstats *out, struct fc_err *err);

int fc_config_read(const struct fc_maps *m, struct fc_config *cfg, struct fc_err *err);
int fc_config_write(const struct fc_maps *m, const struct fc_config *cfg, struct fc_err *err);

#endif /* FC_KERN_H */
