// SPDX-License-Identifier: BSD-2-Clause
/*
 * The configuration file's parser (loader/lib/fc_envfile.h): any bytes.
 * Properties, besides not crashing: what is accepted is what the syntax
 * promises (keys of letters, digits and _, values of printable ASCII), and
 * the entries, written back quoted, parse to the same entries.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fc_envfile.h"
#include "fc_fuzz.h"

static void fc_envfile_check(const struct fc_envfile *f)
{
	const char *c;
	size_t i;

	for (i = 0; i < f->n; i++) {
		c = f->v[i].key;
		if (!*c || strspn(c, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_") != strlen(c) ||
		    (*c >= '0' && *c <= '9'))
			fc_fuzz_fail("line %u: key \"%s\" is not of letters, digits and _", f->v[i].line, c);
		for (c = f->v[i].value; *c; c++)
			if (*c < 0x20 || *c > 0x7e)
				fc_fuzz_fail("line %u: %s's value holds byte %#x", f->v[i].line, f->v[i].key,
					     (unsigned char)*c);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fc_envfile a, b;
	struct fc_err err;
	size_t i, len = 0, cap;
	char *text;

	if (size > FC_ENVFILE_MAX || fc_envfile_parse("f", (const char *)data, size, &a, &err) < 0)
		return 0;
	fc_envfile_check(&a);
	/* Written back: in double quotes unless that would need an escape. */
	cap = size * 2 + 16 * a.n + 1;
	text = malloc(cap);
	if (!text)
		return 0;
	text[0] = '\0';
	for (i = 0; i < a.n; i++) {
		char q = strpbrk(a.v[i].value, "\"\\$`") ? '\'' : '"';

		len += (size_t)snprintf(text + len, cap - len, "%s=%c%s%c\n", a.v[i].key, q, a.v[i].value, q);
	}
	if (fc_envfile_parse("g", text, len, &b, &err) < 0)
		fc_fuzz_fail("entries written back do not parse: %s", err.msg);
	if (b.n != a.n)
		fc_fuzz_fail("%zu entries written back parse as %zu", a.n, b.n);
	for (i = 0; i < a.n; i++)
		if (strcmp(a.v[i].key, b.v[i].key) || strcmp(a.v[i].value, b.v[i].value))
			fc_fuzz_fail("entry %zu: %s=%s written back parses as %s=%s", i, a.v[i].key, a.v[i].value,
				     b.v[i].key, b.v[i].value);
	free(text);
	fc_envfile_free(&a);
	fc_envfile_free(&b);
	return 0;
}
