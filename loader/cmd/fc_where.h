/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Where this machine enforces what was just published: the interfaces
 * running the pin dir's programs on the pinned maps (XDP/TC), and the nginx
 * processes that map the shm. A command that says "banned" says where, or
 * that nothing enforces it yet and what would.
 */
#ifndef FC_WHERE_H
#define FC_WHERE_H

#include <stdbool.h>
#include <stddef.h>

#include "fc_ctx.h"

struct fc_where {
	char ifs[256];   /* "eth0 (xdp), lo (tc)": the interfaces on the pinned maps; "" none */
	size_t nginx;    /* nginx processes mapping the shm */
	bool l4_unknown; /* the attachments could not be read (a warning said why) */
};

void fc_where_read(const struct fc_ctx *ctx, struct fc_where *w);

/* What enforces a ban (l4: of an address, dropped at XDP/TC too; else of a
 * uid, in nginx only), as "dropped at XDP/TC on eth0 (xdp); refused by
 * nginx (2 processes map /dev/shm/freqctl)"; false when nothing does, and
 * buf says what would. */
bool fc_where_ban(const struct fc_ctx *ctx, const struct fc_where *w, bool l4, char *buf, size_t len);

#endif /* FC_WHERE_H */
