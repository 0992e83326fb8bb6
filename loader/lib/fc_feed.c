// SPDX-License-Identifier: BSD-2-Clause
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fc_feed.h"

#define FC_BLANKS " \t\r\n"

typedef unsigned __int128 fc_u128;

int fc_feed_add(struct fc_feed *f, const struct fc_prefix *p, struct fc_err *err)
{
	struct fc_prefix *nv;

	if (f->n == f->cap) {
		size_t cap = f->cap ? f->cap * 2 : 4096;

		nv = realloc(f->v, cap * sizeof(*nv));
		if (!nv)
			return fc_err_set(err, "out of memory");
		f->v = nv;
		f->cap = cap;
	}
	f->v[f->n++] = *p;
	return 0;
}

/* An address's bytes as a number (an IPv4 address in the low 32 bits). */
static fc_u128 fc_addr_num(const struct fc_prefix *p)
{
	fc_u128 v = 0;
	int i;

	for (i = 0; i < (p->family == 4 ? 4 : 16); i++)
		v = v << 8 | p->a[i];
	return v;
}

static void fc_num_addr(fc_u128 v, int family, struct fc_prefix *p)
{
	int i, n = family == 4 ? 4 : 16;

	memset(p->a, 0, sizeof(p->a));
	for (i = n - 1; i >= 0; i--, v >>= 8)
		p->a[i] = (uint8_t)v;
}

/* The text between s and end, without the blanks around it. */
static size_t fc_trim(const char **s, const char *end)
{
	*s += strspn(*s, FC_BLANKS);
	if (*s > end)
		*s = end;
	while (end > *s && strchr(FC_BLANKS, end[-1]))
		end--;
	return (size_t)(end - *s);
}

/* One end of a range: an address alone. */
static int fc_range_end(const char *s, const char *end, struct fc_prefix *p, struct fc_err *err)
{
	char buf[FC_PREFIX_STRLEN];
	size_t len = fc_trim(&s, end);

	if (!len || len >= sizeof(buf))
		return fc_err_set(err, "\"%.*s\": expected an address at each end of a range", (int)(len < 64 ? len : 64), s);
	memcpy(buf, s, len);
	buf[len] = '\0';
	if (strchr(buf, '/'))
		return fc_err_set(err, "\"%s\": a range is from an address to an address, without /LEN", buf);
	return fc_prefix_parse(buf, p, err);
}

/* The fewest CIDRs covering exactly lo..hi. */
static int fc_range_split(const struct fc_prefix *lo, const struct fc_prefix *hi, struct fc_feed *f,
			  struct fc_err *err)
{
	const int bits = lo->family == 4 ? 32 : 128;
	fc_u128 a = fc_addr_num(lo), b = fc_addr_num(hi), size;
	struct fc_prefix p = { .family = lo->family };
	int len;

	for (;;) {
		/* The longest block aligned at a that ends at b at the latest. */
		for (len = 0; len < bits && (len == 0 ? a != 0 : (a & (((fc_u128)1 << (bits - len)) - 1)) != 0); len++)
			;
		for (; len < bits && a + ((((fc_u128)1 << (bits - len - 1)) << 1) - 1) > b; len++)
			;
		if (len == 0)
			return fc_err_set(err, "a range over every IPv%u address would ban every source; refused",
					  lo->family);
		size = (fc_u128)1 << (bits - len);
		fc_num_addr(a, lo->family, &p);
		p.len = (uint8_t)len;
		if (fc_feed_add(f, &p, err) < 0)
			return -1;
		if (a + (size - 1) >= b)
			return 0;
		a += size;
	}
}

int fc_feed_line(const char *line, struct fc_feed *f, struct fc_err *err)
{
	const char *s = line, *end = line + strcspn(line, "#;"), *dash, *rest;
	size_t len = fc_trim(&s, end), tok, n0 = f->n;
	char buf[FC_PREFIX_STRLEN];
	struct fc_prefix lo, hi;

	if (!len)
		return 0; /* blank, or a comment */
	end = s + len;
	dash = memchr(s, '-', len);
	if (dash) {
		if (fc_range_end(s, dash, &lo, err) < 0 || fc_range_end(dash + 1, end, &hi, err) < 0)
			return -1;
		if (lo.family != hi.family)
			return fc_err_set(err, "\"%.*s\": a range's ends must both be IPv4 or both IPv6", (int)len, s);
		if (fc_addr_num(&lo) > fc_addr_num(&hi))
			return fc_err_set(err, "\"%.*s\": a range goes from the lower address to the higher", (int)len, s);
		if (fc_range_split(&lo, &hi, f, err) < 0) {
			f->n = n0;
			return -1;
		}
		return 0;
	}
	tok = strcspn(s, FC_BLANKS);
	if (tok < len) {
		rest = s + tok;
		fc_trim(&rest, end);
		return fc_err_set(err, "unexpected \"%.*s\" after \"%.*s\" (one address, CIDR or range per line; "
				       "comments start with # or ;)",
				  (int)(end - rest < 64 ? end - rest : 64), rest, (int)(tok < 64 ? tok : 64), s);
	}
	if (len >= sizeof(buf))
		return fc_err_set(err, "\"%.64s...\": too long for an address or CIDR", s);
	memcpy(buf, s, len);
	buf[len] = '\0';
	if (fc_prefix_parse(buf, &lo, err) < 0)
		return -1;
	return fc_feed_add(f, &lo, err);
}

int fc_prefix_cmp(const struct fc_prefix *a, const struct fc_prefix *b)
{
	int c = (a->family > b->family) - (a->family < b->family);

	if (!c)
		c = memcmp(a->a, b->a, a->family == 4 ? 4 : 16);
	return c ? c : (a->len > b->len) - (a->len < b->len);
}

static int fc_prefix_qcmp(const void *a, const void *b)
{
	return fc_prefix_cmp(a, b);
}

void fc_feed_sort(struct fc_feed *f)
{
	size_t i, o = 0;

	if (!f->n)
		return;
	qsort(f->v, f->n, sizeof(*f->v), fc_prefix_qcmp);
	for (i = 0; i < f->n; i++)
		if (!o || fc_prefix_cmp(&f->v[o - 1], &f->v[i]))
			f->v[o++] = f->v[i];
	f->n = o;
}

void fc_feed_free(struct fc_feed *f)
{
	free(f->v);
	memset(f, 0, sizeof(*f));
}
