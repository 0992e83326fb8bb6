/* SPDX-License-Identifier: BSD-2-Clause */
/* Attaching the packet path to interfaces: native XDP, generic XDP, TC. */
#ifndef FC_ATTACH_H
#define FC_ATTACH_H

#include <net/if.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fc_error.h"
#include "fc_kern.h"

enum fc_mode {
	FC_MODE_XDP,         /* native (driver) XDP */
	FC_MODE_XDP_GENERIC, /* skb-mode XDP, works on any interface */
	FC_MODE_TC,          /* TC ingress on a clsact qdisc */
};

/* The TC filter freqctl owns on a clsact ingress hook. */
#define FC_TC_HANDLE   0xfc
#define FC_TC_PRIORITY 1

/* freqctl's run priority in libxdp's dispatcher (lower runs first): before
 * xdp-filter (10) and libxdp's default (50), so banned sources are dropped
 * before the others spend anything on them. */
#define FC_XDP_PRIO_DEFAULT 5
/* The programs one dispatcher runs (libxdp's MAX_DISPATCHER_ACTIONS). */
#define FC_XDP_MAX_PROGS 10

/* Another program run by the same libxdp dispatcher. */
struct fc_xdp_peer {
	uint32_t id;
	uint32_t prio;
	char name[16]; /* BPF_OBJ_NAME_LEN */
};

struct fc_attachment {
	char ifname[IF_NAMESIZE];
	int ifindex;
	enum fc_mode mode;
	uint32_t prog_id;
	/* The maps the program reads, by FC_MAPS index (0: none), and whether
	 * one of them is not the map pinned in the pin dir (fc_pins.h). */
	uint32_t map[FC_NMAPS];
	bool stale;
	/* Through libxdp's dispatcher: freqctl's priority there and the
	 * programs it shares the hook with (none when attached directly). */
	bool dispatched;
	uint32_t prio;
	size_t n_peers;
	struct fc_xdp_peer peers[FC_XDP_MAX_PROGS];
};

const char *fc_mode_name(enum fc_mode mode);
/* The modes' names, by value, NULL-terminated: attach --mode. */
extern const char *const fc_mode_names[];

/* Attaches (or replaces freqctl's own program) on ifname. In the XDP modes,
 * when built with libxdp, through its dispatcher at run priority prio, beside
 * the programs already there; directly when the dispatcher cannot load. */
int fc_attach(const char *pin_dir, const struct fc_maps *m, const char *ifname, enum fc_mode mode, uint32_t prio,
	      struct fc_attachment *out, struct fc_err *err);
/* m: the pinned maps there are (fds -1: none; the program is found by its mark). */
int fc_detach(const char *pin_dir, const struct fc_maps *m, const char *ifname, struct fc_attachment *out,
	      struct fc_err *err);
/* Every interface of this network namespace running r's pin dir's programs. */
struct fc_pin_ref;
int fc_attachments(const struct fc_pin_ref *r, struct fc_attachment **v, size_t *n, struct fc_err *err);

#endif /* FC_ATTACH_H */
