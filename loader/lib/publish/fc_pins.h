/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The pins against the programs. freqctl publishes to the maps pinned in
 * the pin dir; its attached programs read the maps that were pinned there
 * when they were loaded. The two part when a pin is unlinked while a program
 * runs (rm, a cleanup script, bpffs remounted): freqctl would make new maps
 * that nothing reads. So every publish compares the ids of the maps the
 * programs read (bpf_prog_info's map_ids, as bpftool prog show lists them)
 * with the pinned ones, and pins the programs' maps again where they differ.
 */
#ifndef FC_PINS_H
#define FC_PINS_H

#include <stdbool.h>
#include <stdint.h>

#include "fc_error.h"
#include "fc_kern.h"

/* A pin dir as the programs know it: the dir their mark names, the maps
 * pinned there now. */
struct fc_pin_ref {
	char dir[FC_PIN_MARK_DIR]; /* "": too long to be marked */
	uint32_t pinned[FC_NMAPS]; /* the id of each map of FC_MAPS pinned there, 0: none */
};

/* From pin_dir and its maps as opened (fds -1: not pinned). */
void fc_pin_ref_init(struct fc_pin_ref *r, const char *pin_dir, const struct fc_maps *m);

/* The pin dir's name in the programs' mark (maps/fc_maps.h, struct
 * fc_pin_mark): its real path, or the path as given while it does not
 * exist; "" when longer than the mark holds (then only the pins tell). */
void fc_pin_mark_dir(const char *pin_dir, char out[FC_PIN_MARK_DIR]);

/* One program as the pins see it. */
struct fc_prog_maps {
	uint32_t id;
	char name[16];          /* BPF_OBJ_NAME_LEN */
	bool ours;              /* freqctl's, of this pin dir: it reads a map pinned there, or its mark names it */
	bool stale;             /* ours, and one of its maps is not the one pinned (or none is) */
	uint32_t map[FC_NMAPS]; /* the id of each map of FC_MAPS it reads, 0: none */
};

/* Reads program id; -1 if it is gone (or not ours to read: no root). */
int fc_prog_maps_read(const struct fc_pin_ref *r, uint32_t id, struct fc_prog_maps *p);

/* Whether any program in the kernel is ours and stale, attached or not: the
 * cheap first look of every publish (each program's info, no netlink), which
 * fc_pins_repair then confirms on the hooks. */
bool fc_pins_suspect(const struct fc_pin_ref *r);

/*
 * Where the programs attached in this network namespace for pin_dir read
 * other maps than m's (opened from the pins, with the pin dir locked), pins
 * theirs there again (the one of each name they all read) and reopens m on
 * them. 0: they read m's maps (or none is attached); 1: re-pinned, note says
 * which and where, for the caller to report (what was published to the maps
 * it replaced is lost: publish everything); -1: the programs read different
 * maps of one name, or maps of another version's shape: err says which and
 * what to do, nothing was changed.
 */
int fc_pins_repair(const char *pin_dir, struct fc_maps *m, struct fc_err *note, struct fc_err *err);

#endif /* FC_PINS_H */
