// SPDX-License-Identifier: BSD-2-Clause
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "fc_escape.h"

size_t fc_utf8_lead(unsigned char c, unsigned char *lo, unsigned char *hi)
{
	*lo = 0x80, *hi = 0xbf;
	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		return 2;
	if (c >= 0xe0 && c <= 0xef) {
		if (c == 0xe0)
			*lo = 0xa0;
		if (c == 0xed)
			*hi = 0x9f;
		return 3;
	}
	if (c >= 0xf0 && c <= 0xf4) {
		if (c == 0xf0)
			*lo = 0x90;
		if (c == 0xf4)
			*hi = 0x8f;
		return 4;
	}
	return 0;
}

/* The length of the valid UTF-8 character of 2 to 4 bytes at p (len bytes
 * left), its code point in *cp; 0 if there is none. */
static size_t fc_utf8_char(const unsigned char *p, size_t len, uint32_t *cp)
{
	unsigned char lo, hi;
	size_t n = fc_utf8_lead(p[0], &lo, &hi), i;

	if (n < 2 || len < n || p[1] < lo || p[1] > hi)
		return 0;
	*cp = p[0] & (0xff >> (n + 1));
	for (i = 1; i < n; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		*cp = *cp << 6 | (p[i] & 0x3f);
	}
	return n;
}

/* Whether a character is shown as it is: not a C1 control, and nothing that
 * reorders what is around it (Unicode's bidirectional formatting
 * characters) or breaks lines. */
static bool fc_shown(uint32_t cp)
{
	return !(cp >= 0x80 && cp <= 0x9f) && cp != 0x61c && !(cp >= 0x200e && cp <= 0x200f) &&
	       !(cp >= 0x2028 && cp <= 0x202e) && !(cp >= 0x2066 && cp <= 0x2069);
}

size_t fc_escape(const void *src, size_t len, char *out, size_t cap)
{
	const unsigned char *p = src;
	size_t i = 0, n = 0, m, k;
	uint32_t cp;

	if (!cap)
		return 0;
	while (i < len) {
		m = p[i] < 0x80 ? 1 : fc_utf8_char(p + i, len - i, &cp);
		if (m == 1 && p[i] >= 0x20 && p[i] < 0x7f) {
			k = p[i] == '\\' || p[i] == '"';
			if (n + k + 1 >= cap)
				break;
			if (k)
				out[n++] = '\\';
			out[n++] = (char)p[i++];
		} else if (m > 1 && fc_shown(cp)) {
			if (n + m >= cap)
				break;
			for (k = 0; k < m; k++)
				out[n++] = (char)p[i++];
		} else {
			/* A control, DEL, a byte that is not UTF-8, a character not
			 * shown (each of its bytes). */
			for (k = 0; k < (m ? m : 1); k++, i++) {
				if (n + 4 >= cap)
					goto out;
				snprintf(out + n, 5, "\\x%02x", p[i]);
				n += 4;
			}
		}
	}
out:
	out[n] = '\0';
	return n;
}
