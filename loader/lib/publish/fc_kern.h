/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The pinned maps under the pin dir: finding the BPF filesystem, creating the
 * maps on first use, opening them, and reading the counters.
 */
#ifndef FC_KERN_H
#define FC_KERN_H

#include <stddef.h>
#include <stdint.h>

#include "fc_error.h"
#include "fc_maps.h"

#define FC_PIN_DIR_DEFAULT "/sys/fs/bpf/freqctl"

#define FC_MAP_IDX(name) FC_MAP_IDX_##name,
enum { FC_MAPS(FC_MAP_IDX) FC_NMAPS };
#undef FC_MAP_IDX

/* The pinned maps' fds, by name (m->exact4) or by index (m->fd[i], in the
 * order of FC_MAPS). */
struct fc_maps {
	int dirfd; /* the pin dir; flock()ed while publishing */
	union {
		struct {
#define FC_MAP_FD(name) int name;
			FC_MAPS(FC_MAP_FD)
#undef FC_MAP_FD
		};
		int fd[FC_NMAPS];
	};
};

/* The pinned names, fc_map_names[i] for m->fd[i]. */
extern const char *const fc_map_names[FC_NMAPS];

/* Whether obj pins exactly the maps of FC_MAPS (obj opened with a
 * pin_root_path, so that libbpf has set the pin paths). */
struct bpf_object;
int fc_maps_match(const struct bpf_object *obj, struct fc_err *err);

/* How map fd differs in shape from the map FC_MAPS[i] of this version's
 * BPF object, in words into diff ("" if it does not); -1 if fd can not be
 * read. */
int fc_map_shape_diff(int fd, int i, char *diff, size_t size);

/* Mounts bpffs at /sys/fs/bpf if the pin dir needs it, creates the pin dir. */
int fc_pin_dir_prepare(const char *pin_dir, struct fc_err *err);

/* Opens the pinned maps, creating and pinning them if missing. */
int fc_maps_open(const char *pin_dir, struct fc_maps *m, struct fc_err *err);
/* The same for a reader (stats, top, status, /metrics): never creates
 * anything, no map, no pin dir, no mount. 1 (all fds -1) when nothing was
 * published under pin_dir yet. */
int fc_maps_open_existing(const char *pin_dir, struct fc_maps *m, struct fc_err *err);
/* The same, keeping those that are pinned where some are not (status): the
 * number missing, or -1. */
int fc_maps_open_pinned(const char *pin_dir, struct fc_maps *m, struct fc_err *err);
/* Only the pinned fc_config, of whatever shape (the other fds -1): what
 * tells freqctl's programs on a hook apart, another version's too (detach). */
int fc_maps_open_config(const char *pin_dir, struct fc_maps *m, struct fc_err *err);
void fc_maps_close(struct fc_maps *m);

/* Unpins the maps of FC_MAPS from pin_dir and removes it if nothing else
 * is there, once no interface of this network namespace runs the pin
 * dir's programs (m: what is pinned, fds -1 where nothing is). */
int fc_maps_unpin(const char *pin_dir, const struct fc_maps *m, struct fc_err *err);

/* Serialises publishers of one pin dir. */
int fc_maps_lock(const struct fc_maps *m, const char *pin_dir, struct fc_err *err);
void fc_maps_unlock(const struct fc_maps *m);

/* The kernel id of a map or program fd (0 on error). */
uint32_t fc_obj_id(int fd);

/* The counters summed over all CPUs. */
int fc_stats_read(const struct fc_maps *m, struct fc_stats *out, struct fc_err *err);
/* One policy slot's counters summed over all CPUs. */
int fc_pstats_read(const struct fc_maps *m, uint32_t slot, struct fc_pstats *out, struct fc_err *err);

/* The drops of bans of one source (0: by hand; else a ban set's id), summed. */
int fc_setstats_read(const struct fc_maps *m, uint32_t set, struct fc_counter *out, struct fc_err *err);

int fc_config_read(const struct fc_maps *m, struct fc_config *cfg, struct fc_err *err);
int fc_config_write(const struct fc_maps *m, const struct fc_config *cfg, struct fc_err *err);

#endif /* FC_KERN_H */
