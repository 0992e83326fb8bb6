/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Block-list feeds as operators get them (FireHOL netsets, Spamhaus
 * DROP/EDROP, a SIEM's export): one address, CIDR or range per line, IPv4
 * or IPv6; '#' and ';' start a comment, at the start of a line or after the
 * entry ("1.2.3.0/24 ; SBL123"); blank lines are skipped. A range
 * "a.b.c.d-e.f.g.h" (or two IPv6 addresses) becomes the fewest CIDRs that
 * cover exactly it.
 */
#ifndef FC_FEED_H
#define FC_FEED_H

#include <stddef.h>

#include "fc_error.h"
#include "fc_prefix.h"

/* A feed's entries, as they are parsed. */
struct fc_feed {
	struct fc_prefix *v;
	size_t n, cap;
};

/* Parses one line (NUL-terminated, its newline included or not) and adds
 * its entries to f. -1 with err saying what was expected (the caller names
 * the file and line): nothing is added then. */
int fc_feed_line(const char *line, struct fc_feed *f, struct fc_err *err);

/* Adds one entry to f. */
int fc_feed_add(struct fc_feed *f, const struct fc_prefix *p, struct fc_err *err);

/* Sorts f's entries in the store's address order (family, address, length)
 * and drops repeats. */
void fc_feed_sort(struct fc_feed *f);

/* The store's address order. */
int fc_prefix_cmp(const struct fc_prefix *a, const struct fc_prefix *b);

void fc_feed_free(struct fc_feed *f);

#endif /* FC_FEED_H */
