/* SPDX-License-Identifier: BSD-2-Clause */
/* Attaching the packet path to interfaces: native XDP, generic XDP, TC. */
#ifndef FC_ATTACH_H
#define FC_ATTACH_H

#include <net/if.h>
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

struct fc_attachment {
	char ifname[IF_NAMESIZE];
	int ifindex;
	enum fc_mode mode;
	uint32_t prog_id;
};

const char *fc_mode_name(enum fc_mode mode);
/* The modes' names, by value, NULL-terminated: attach --mode. */
extern const char *const fc_mode_names[];

/* Attaches (or atomically replaces freqctl's own program) on ifname. */
int fc_attach(const char *pin_dir, const struct fc_maps *m, const char *ifname, enum fc_mode mode,
	      struct fc_attachment *out, struct fc_err *err);
int fc_detach(const struct fc_maps *m, const char *ifname, struct fc_attachment *out, struct fc_err *err);
/* Every interface of this network namespace running this pin dir's programs. */
int fc_attachments(const struct fc_maps *m, struct fc_attachment **v, size_t *n, struct fc_err *err);

#endif /* FC_ATTACH_H */
