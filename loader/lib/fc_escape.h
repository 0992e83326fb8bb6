/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Bytes someone else chose (a key's value as nginx's workers wrote it, a
 * client's text echoed in a message) made safe to print on a terminal, in
 * a page and in JSON, which must be UTF-8.
 */
#ifndef FC_ESCAPE_H
#define FC_ESCAPE_H

#include <stddef.h>

/* The length of the UTF-8 character that byte c starts, and the range its
 * second byte must be in (RFC 3629: no overlong forms, no surrogates,
 * nothing past U+10FFFF); 0 if c can not start one. */
size_t fc_utf8_lead(unsigned char c, unsigned char *lo, unsigned char *hi);

/* Room for fc_escape's text of n bytes, whatever they are, and its NUL. */
#define FC_ESCAPED_LEN(n) (4 * (n) + 1)

/*
 * Writes the len bytes at p into out as text that says what they were and
 * is safe to show: printable ASCII as it is, but '\' and '"' after a '\';
 * a UTF-8 character as it is, but C1 controls and the characters that
 * reorder or break lines (bidirectional formatting, U+2028 and U+2029),
 * which would change what a terminal or a page shows around them; every
 * other byte (controls, DEL, what is not UTF-8) as \xNN. The text is valid
 * UTF-8 and NUL-terminated, and holds as much as fits in cap bytes (no
 * escape cut): FC_ESCAPED_LEN(len) holds it all. Returns its length.
 */
size_t fc_escape(const void *p, size_t len, char *out, size_t cap);

#endif /* FC_ESCAPE_H */
