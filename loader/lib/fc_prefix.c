// SPDX-License-Identifier: BSD-2-Clause
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fc_prefix.h"

static const uint8_t fc_v4mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

/* Parses the decimal prefix length in s (digits only). */
static int fc_parse_len(const char *s, unsigned max, unsigned *len)
{
	unsigned v = 0;

	if (!*s || strlen(s) > 3)
		return -1;
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return -1;
		v = v * 10 + (unsigned)(*s - '0');
	}
	if (v > max)
		return -1;
	*len = v;
	return 0;
}

bool fc_prefix_covers_bits(const uint8_t *a, unsigned alen, const uint8_t *b, unsigned blen)
{
	unsigned full = alen / 8, rest = alen % 8;

	if (alen > blen || memcmp(a, b, full))
		return false;
	return !rest || ((a[full] ^ b[full]) & (uint8_t)(0xff << (8 - rest))) == 0;
}

void fc_prefix_mask(uint8_t *a, unsigned bytes, unsigned len)
{
	unsigned i;

	for (i = 0; i < bytes; i++) {
		unsigned bit0 = i * 8;

		if (bit0 >= len)
			a[i] = 0;
		else if (bit0 + 8 > len)
			a[i] &= (uint8_t)(0xff << (8 - (len - bit0)));
	}
}

int fc_prefix_parse_ex(const char *s, struct fc_prefix *p, bool allow_zero, struct fc_err *err)
{
	char addr[INET6_ADDRSTRLEN + 8];
	struct fc_prefix fixed;
	const char *slash;
	size_t alen;
	unsigned max, len;

	memset(p, 0, sizeof(*p));
	if (!*s)
		return fc_err_set(err, "empty address: expected an IPv4 or IPv6 address, optionally /LEN");
	slash = strchr(s, '/');
	alen = slash ? (size_t)(slash - s) : strlen(s);
	if (alen == 0)
		return fc_err_set(err, "\"%s\": missing address before '/'", s);
	if (alen >= sizeof(addr))
		return fc_err_set(err, "\"%.64s...\": too long for an IPv4 or IPv6 address", s);
	memcpy(addr, s, alen);
	addr[alen] = '\0';

	if (strchr(addr, '%'))
		return fc_err_set(err, "\"%s\": zone index not allowed in a ban", s);
	if (strchr(addr, ':')) {
		if (inet_pton(AF_INET6, addr, p->a) != 1)
			return fc_err_set(err, "\"%s\": not a valid IPv6 address", addr);
		if (!memcmp(p->a, fc_v4mapped, sizeof(fc_v4mapped)))
			return fc_err_set(err, "\"%s\": IPv4-mapped IPv6 address; write it as IPv4 (%u.%u.%u.%u)",
					  addr, p->a[12], p->a[13], p->a[14], p->a[15]);
		p->family = 6;
		max = 128;
	} else {
		if (inet_pton(AF_INET, addr, p->a) != 1)
			return fc_err_set(err, "\"%s\": not a valid IPv4 address (expected dotted decimal a.b.c.d)",
					  addr);
		p->family = 4;
		max = 32;
	}

	len = max;
	if (slash && fc_parse_len(slash + 1, max, &len) < 0)
		return fc_err_set(err, "\"%s\": prefix length \"%s\": expected a number from %d to %u", s,
				  slash + 1, allow_zero ? 0 : 1, max);
	if (len == 0 && !allow_zero)
		return fc_err_set(err, "\"%s\": a /0 prefix would ban every IPv%u source; refused", s, p->family);
	p->len = (uint8_t)len;
	fixed = *p;
	fc_prefix_mask(fixed.a, max / 8, len);
	if (memcmp(fixed.a, p->a, sizeof(p->a))) {
		char buf[FC_PREFIX_STRLEN];

		fc_prefix_format(&fixed, buf);
		return fc_err_set(err, "\"%s\": host bits set; did you mean %s?", s, buf);
	}
	return 0;
}

int fc_prefix_parse(const char *s, struct fc_prefix *p, struct fc_err *err)
{
	return fc_prefix_parse_ex(s, p, false, err);
}

void fc_prefix_format(const struct fc_prefix *p, char buf[FC_PREFIX_STRLEN])
{
	char a[INET6_ADDRSTRLEN];

	inet_ntop(p->family == 4 ? AF_INET : AF_INET6, p->a, a, sizeof(a));
	if (fc_prefix_is_exact(p))
		snprintf(buf, FC_PREFIX_STRLEN, "%s", a);
	else
		snprintf(buf, FC_PREFIX_STRLEN, "%s/%u", a, p->len);
}

void fc_prefix_to_pfx4(const struct fc_prefix *p, struct fc_pfx4_key *key)
{
	key->prefixlen = p->len;
	memcpy(key->a, p->a, 4);
}

void fc_prefix_to_pfx6(const struct fc_prefix *p, struct fc_pfx6_key *key)
{
	key->prefixlen = p->len;
	memcpy(key->a, p->a, 16);
}
