/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What root trusts: a pin dir, a store file, the shm's config file and the
 * configuration file are root's to write. One that another user owns (left
 * by a non-root run, planted in a shared directory) or that its group or
 * others may write would let them change what root publishes or enforces,
 * or keep root's maps where root can not remove them; root refuses it,
 * naming the path and the fix. Checked only when running as root (euid 0):
 * without root, the kernel and the file modes already say who may do what.
 */
#ifndef FC_OWNER_H
#define FC_OWNER_H

#include "fc_error.h"

enum fc_owned {
	FC_OWNED_PIN_DIR,
	FC_OWNED_STORE,
	FC_OWNED_SHM,    /* the config file; the workers' state file is theirs to write, by design */
	FC_OWNED_CONFIG, /* /etc/default/freqctl, or FREQCTL_CONFIG's */
	FC_OWNED_FLEET_STATUS, /* <shm>.fleet.json, read */
};

/*
 * 0 if path, a kind's, is fit for root: absent, or owned by root and
 * writable by no one else (a symbolic link: the link and what it leads
 * to); else -1 with err naming the path, why, and what to do
 * ("pin dir /sys/fs/bpf/freqctl: owned by nobody (uid 65534), not root:
 * remove it (rm -r ...) or chown root ..."). Always 0 when not root.
 */
int fc_owner_check(enum fc_owned kind, const char *path, struct fc_err *err);
/* The same for the file fd, opened from path (with O_NOFOLLOW): what was
 * opened is what is checked, however the path changes meanwhile. */
int fc_owner_check_fd(enum fc_owned kind, const char *path, int fd, struct fc_err *err);

#endif /* FC_OWNER_H */
