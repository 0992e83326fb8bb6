/* SPDX-License-Identifier: BSD-2-Clause */
/* IPv4/IPv6 addresses and CIDR prefixes as users write them. */
#ifndef FC_PREFIX_H
#define FC_PREFIX_H

#include <stdbool.h>
#include <stdint.h>

#include "fc_error.h"
#include "fc_maps.h"

/* INET6_ADDRSTRLEN (46, with the NUL) plus "/128". */
#define FC_PREFIX_STRLEN 52

struct fc_prefix {
	uint8_t family; /* 4 or 6 */
	uint8_t len;    /* 0-32 or 0-128; 32/128 is an exact address */
	uint8_t a[16];  /* network order; IPv4 in a[0..3]; host bits zero */
};

/* Parses "ADDR" or "ADDR/LEN". Rejects host bits set, /0, zone ids and
 * IPv4-mapped IPv6, each with a message that names the input. */
int fc_prefix_parse(const char *s, struct fc_prefix *p, struct fc_err *err);
/* The same, where a /0 is meaningful (a policy over every source). */
int fc_prefix_parse_ex(const char *s, struct fc_prefix *p, bool allow_zero, struct fc_err *err);

/* Canonical text: "198.18.0.7", "198.18.0.0/15", "2001:db8::/32". */
void fc_prefix_format(const struct fc_prefix *p, char buf[FC_PREFIX_STRLEN]);

static inline bool fc_prefix_is_exact(const struct fc_prefix *p)
{
	return p->len == (p->family == 4 ? 32 : 128);
}

/* Whether the first alen bits of a equal those of b, and alen <= blen: the
 * prefix a/alen covers the prefix (or address) b/blen. */
bool fc_prefix_covers_bits(const uint8_t *a, unsigned alen, const uint8_t *b, unsigned blen);

/* Whether a covers b (same family, a no longer than b, b inside a). */
static inline bool fc_prefix_covers(const struct fc_prefix *a, const struct fc_prefix *b)
{
	return a->family == b->family && fc_prefix_covers_bits(a->a, a->len, b->a, b->len);
}

/* Clears the bits of a (bytes long, network order) past the first len. */
void fc_prefix_mask(uint8_t *a, unsigned bytes, unsigned len);

/* The kernel's keys for a prefix (see maps/fc_maps.h). An exact address's
 * key is its bytes: p->a, 4 or 16 of them. */
void fc_prefix_to_pfx4(const struct fc_prefix *p, struct fc_pfx4_key *key);
void fc_prefix_to_pfx6(const struct fc_prefix *p, struct fc_pfx6_key *key);

#endif /* FC_PREFIX_H */
