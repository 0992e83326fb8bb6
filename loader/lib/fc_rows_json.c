// SPDX-License-Identifier: BSD-2-Clause
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "fc_duration.h"
#include "fc_rows_json.h"

json_t *fc_policy_to_json(const struct fc_policy_spec *p)
{
	char match[FC_MATCH_LEN], rate[FC_RATE_STRLEN], esc[FC_RATE_STRLEN];
	json_t *rates = json_array();
	int i;

	fc_match_format(p, match);
	for (i = 0; rates && i < p->ntiers; i++) {
		fc_rate_format(&p->rate[i], rate);
		json_array_append_new(rates, json_string(rate));
	}
	fc_rate_format(&p->escalate, esc);
	return json_pack("{s:I, s:s, s:o, s:o, s:s, s:s, s:s, s:o, s:o, s:o, s:o}", "id", (json_int_t)p->id, "match",
			 match, "rates", rates, "burst", p->burst ? json_integer((json_int_t)p->burst) : json_null(),
			 "algo", fc_algo_name(p->algo), "action", fc_action_name(p->action), "count",
			 fc_count_name(p->count), "delay_burst",
			 p->delay_burst ? json_integer(p->delay_burst) : json_null(), "new_sources",
			 p->new_sources ? json_integer((json_int_t)p->new_sources) : json_null(), "escalate",
			 p->escalate.n ? json_string(esc) : json_null(), "ban_ttl",
			 p->ban_ttl ? json_integer(p->ban_ttl) : json_null());
}

int fc_json_uint(json_t *v, uint64_t max, uint64_t *out)
{
	*out = 0;
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_integer(v) || json_integer_value(v) < 1 || (uint64_t)json_integer_value(v) > max)
		return -1;
	*out = (uint64_t)json_integer_value(v);
	return 0;
}

static const char *const fc_policy_keys[] = { "id",	   "match",	  "rates",   "burst",	"algo",
					       "action",   "count",	  "delay_burst", "new_sources", "escalate",
					       "ban_ttl", NULL };

/* Names the offending key in field, says what is wrong in err; returns -1. */
__attribute__((format(printf, 4, 5)))
static int fc_json_fail(char field[FC_JSON_FIELD_LEN], const char *key, struct fc_err *err, const char *fmt, ...)
{
	va_list ap;

	snprintf(field, FC_JSON_FIELD_LEN, "%s", key);
	va_start(ap, fmt);
	vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
	va_end(ap);
	return -1;
}

#define FC_FAIL(key, ...) fc_json_fail(field, key, err, __VA_ARGS__)

/* A string key parsed by one of the CLI's parsers (whose message names the input). */
#define FC_STR_KEY(key, parse, out)                                                              \
	do {                                                                                     \
		const char *s_ = json_string_value(json_object_get(o, key));                       \
		struct fc_err e_;                                                                \
		if (!s_)                                                                         \
			return FC_FAIL(key, "%s: expected a string", key);                        \
		if (parse(s_, out, &e_) < 0)                                                     \
			return FC_FAIL(key, "%s", e_.msg);                                        \
	} while (0)

int fc_policy_from_json(json_t *o, struct fc_policy_spec *p, char field[FC_JSON_FIELD_LEN], struct fc_err *err)
{
	const char *key, *str;
	struct fc_err why;
	uint64_t v;
	json_t *val;
	size_t i;

	memset(p, 0, sizeof(*p));
	field[0] = '\0';
	if (!json_is_object(o))
		return FC_FAIL("", "expected an object");
	json_object_foreach(o, key, val) {
		for (i = 0; fc_policy_keys[i] && strcmp(key, fc_policy_keys[i]); i++)
			;
		if (!fc_policy_keys[i])
			return FC_FAIL(key, "unknown key \"%.64s\"", key);
	}
	if (fc_json_uint(json_object_get(o, "id"), FC_POLICY_ID_MAX, &v) < 0 || !v)
		return FC_FAIL("id", "id: expected a whole number from 1 to %llu", (unsigned long long)FC_POLICY_ID_MAX);
	p->id = (uint32_t)v;
	str = json_string_value(json_object_get(o, "match"));
	if (!str)
		return FC_FAIL("match", "match: expected a string");
	if (fc_match_parse(str, p, &why) < 0)
		return FC_FAIL("match", "%s", why.msg);
	val = json_object_get(o, "rates");
	if (!json_is_array(val) || !json_array_size(val) || json_array_size(val) > FC_MAX_TIERS)
		return FC_FAIL("rates", "rates: expected an array of 1 to %d \"N/UNIT\"", FC_MAX_TIERS);
	for (i = 0; i < json_array_size(val); i++) {
		char f[FC_JSON_FIELD_LEN];

		snprintf(f, sizeof(f), "rates[%zu]", i);
		str = json_string_value(json_array_get(val, i));
		if (!str)
			return FC_FAIL(f, "%s: expected a string \"N/UNIT\"", f);
		if (fc_rate_parse(str, &p->rate[p->ntiers++], &why) < 0)
			return FC_FAIL(f, "%s", why.msg);
	}
	if (fc_json_uint(json_object_get(o, "burst"), FC_RATE_MAX, &p->burst) < 0)
		return FC_FAIL("burst", "burst: expected null or a whole number");
	if (fc_json_uint(json_object_get(o, "delay_burst"), 1000000, &v) < 0)
		return FC_FAIL("delay_burst", "delay_burst: expected null or a whole number");
	p->delay_burst = (uint32_t)v;
	if (fc_json_uint(json_object_get(o, "new_sources"), 100000000, &p->new_sources) < 0)
		return FC_FAIL("new_sources", "new_sources: expected null or a whole number");
	if (fc_json_uint(json_object_get(o, "ban_ttl"), FC_DURATION_MAX, &v) < 0)
		return FC_FAIL("ban_ttl", "ban_ttl: expected null or seconds");
	p->ban_ttl = (int64_t)v;
	val = json_object_get(o, "escalate");
	if (val && !json_is_null(val)) {
		if (!(str = json_string_value(val)))
			return FC_FAIL("escalate", "escalate: expected null or a string \"N/UNIT\"");
		if (fc_rate_parse(str, &p->escalate, &why) < 0)
			return FC_FAIL("escalate", "escalate: %s", why.msg);
	}
	/* Defaults as on the command line. */
	p->algo = FC_ALGO_GCRA;
	p->action = FC_ACTION_DROP;
	p->count = FC_COUNT_PACKETS;
	if (json_object_get(o, "algo") && !json_is_null(json_object_get(o, "algo")))
		FC_STR_KEY("algo", fc_algo_parse, &p->algo);
	if (json_object_get(o, "action") && !json_is_null(json_object_get(o, "action")))
		FC_STR_KEY("action", fc_action_parse, &p->action);
	if (json_object_get(o, "count") && !json_is_null(json_object_get(o, "count")))
		FC_STR_KEY("count", fc_count_parse, &p->count);
	if (fc_policy_validate(p, &why) < 0)
		return FC_FAIL("", "%s", why.msg);
	return 0;
}

json_t *fc_ban_to_json(const struct fc_ban_row *r, int64_t now)
{
	char text[FC_PREFIX_STRLEN], created[FC_TIME_STRLEN], expires[FC_TIME_STRLEN];

	fc_prefix_format(&r->p, text);
	fc_time_format(r->created, created);
	fc_time_format(r->expires, expires);
	return json_pack("{s:s, s:i, s:s, s:s, s:s?, s:o, s:o}", "ban", text, "family", r->p.family, "kind",
			 fc_prefix_is_exact(&r->p) ? "exact" : "prefix", "created", created, "expires",
			 r->expires ? expires : NULL, "ttl_remaining",
			 r->expires ? json_integer(r->expires - now) : json_null(), "escalated_by_policy",
			 r->by_policy ? json_integer(r->by_policy) : json_null());
}

json_t *fc_uid_ban_to_json(const struct fc_uid_ban *b, int64_t now)
{
	char created[FC_TIME_STRLEN], expires[FC_TIME_STRLEN], text[4 + sizeof(b->uid)];

	/* Spelled as ban add/del and export take it. */
	snprintf(text, sizeof(text), "uid=%s", b->uid);
	fc_time_format(b->created, created);
	fc_time_format(b->expires, expires);
	return json_pack("{s:s, s:s, s:s, s:s?, s:o}", "ban", text, "kind", "uid", "created", created, "expires",
			 b->expires ? expires : NULL, "ttl_remaining",
			 b->expires ? json_integer(b->expires - now) : json_null());
}
