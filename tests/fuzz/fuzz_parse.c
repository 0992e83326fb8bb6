// SPDX-License-Identifier: BSD-2-Clause
/*
 * The parsers of what operators and imported files write: an address or
 * prefix, a duration, a policy's match and rates, a policy as JSON (the
 * console's API and import). Property, besides not crashing: what parses
 * formats to text that parses to the same thing (parse, format, parse).
 *
 * The first byte picks the parser; the rest is the text.
 */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "fc_duration.h"
#include "fc_fuzz.h"
#include "fc_policy.h"
#include "fc_prefix.h"
#include "fc_rows_json.h"

static void fc_prefix_round(const char *s)
{
	struct fc_prefix a, b;
	char text[FC_PREFIX_STRLEN];
	struct fc_err err;

	if (fc_prefix_parse(s, &a, &err) < 0)
		return;
	fc_prefix_format(&a, text);
	if (fc_prefix_parse(text, &b, &err) < 0)
		fc_fuzz_fail("prefix \"%s\" formats as \"%s\", which does not parse: %s", s, text, err.msg);
	if (memcmp(&a, &b, sizeof(a)))
		fc_fuzz_fail("prefix \"%s\" formats as \"%s\", which parses to another", s, text);
}

static void fc_duration_round(const char *s)
{
	char text[FC_DURATION_STRLEN];
	int64_t a, b;
	struct fc_err err;

	if (fc_duration_parse(s, &a, &err) < 0)
		return;
	fc_duration_format(a, text);
	if (fc_duration_parse(text, &b, &err) < 0 || a != b)
		fc_fuzz_fail("duration \"%s\" (%lld s) formats as \"%s\", which does not parse back", s, (long long)a, text);
}

static void fc_match_round(const char *s)
{
	static struct fc_policy_spec a, b;
	static char t1[FC_MATCH_LEN], t2[FC_MATCH_LEN];
	struct fc_err err;

	memset(&a, 0, sizeof(a));
	memset(&b, 0, sizeof(b));
	if (fc_match_parse(s, &a, &err) < 0)
		return;
	fc_match_format(&a, t1);
	if (fc_match_parse(t1, &b, &err) < 0)
		fc_fuzz_fail("match \"%s\" formats as \"%s\", which does not parse: %s", s, t1, err.msg);
	fc_match_format(&b, t2);
	if (strcmp(t1, t2))
		fc_fuzz_fail("match \"%s\": \"%s\" then \"%s\"", s, t1, t2);
}

static void fc_rates_round(const char *s)
{
	static struct fc_policy_spec a, b;
	char t1[FC_TEXT_LEN], t2[FC_TEXT_LEN];
	struct fc_err err;

	memset(&a, 0, sizeof(a));
	memset(&b, 0, sizeof(b));
	if (fc_rates_parse(s, &a, &err) < 0)
		return;
	fc_rates_format(&a, t1);
	if (fc_rates_parse(t1, &b, &err) < 0)
		fc_fuzz_fail("rates \"%s\" format as \"%s\", which does not parse: %s", s, t1, err.msg);
	fc_rates_format(&b, t2);
	if (strcmp(t1, t2))
		fc_fuzz_fail("rates \"%s\": \"%s\" then \"%s\"", s, t1, t2);
}

/* A policy's JSON: from_json, to_json, from_json, to_json: the same text. */
static char *fc_policy_json_once(const char *text, size_t len)
{
	static struct fc_policy_spec p;
	char field[FC_JSON_FIELD_LEN], *out = NULL;
	struct fc_err err;
	json_t *doc = json_loadb(text, len, JSON_REJECT_DUPLICATES, NULL), *o;

	memset(&p, 0, sizeof(p));
	if (doc && fc_policy_from_json(doc, &p, field, &err) == 0 && (o = fc_policy_to_json(&p))) {
		out = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
		json_decref(o);
	}
	json_decref(doc);
	return out;
}

static void fc_policy_json_round(const char *s, size_t len)
{
	char *t1 = fc_policy_json_once(s, len), *t2;

	if (!t1)
		return;
	t2 = fc_policy_json_once(t1, strlen(t1));
	if (!t2)
		fc_fuzz_fail("policy %.200s exports as %.300s, which is refused", s, t1);
	if (strcmp(t1, t2))
		fc_fuzz_fail("policy %.200s: %.300s then %.300s", s, t1, t2);
	free(t1);
	free(t2);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s;

	if (size < 1 || size > 4096)
		return -1;
	s = malloc(size); /* the text after the first byte, NUL-terminated */
	if (!s)
		return 0;
	memcpy(s, data + 1, size - 1);
	s[size - 1] = '\0';
	switch (data[0] % 5) {
	case 0:
		fc_prefix_round(s);
		break;
	case 1:
		fc_duration_round(s);
		break;
	case 2:
		fc_match_round(s);
		break;
	case 3:
		fc_rates_round(s);
		break;
	default:
		fc_policy_json_round(s, size - 1);
		break;
	}
	free(s);
	return 0;
}
