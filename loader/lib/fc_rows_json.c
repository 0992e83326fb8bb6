// SPDX-License-Identifier: BSD-2-Clause
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "fc_allow.h"
#include "fc_duration.h"
#include "fc_rows_json.h"
#include "fc_stats.h"

json_t *fc_policy_to_json(const struct fc_policy_spec *p)
{
	char match[FC_MATCH_LEN], rate[FC_RATE_STRLEN], esc[FC_RATE_STRLEN];
	enum fc_layer layer = fc_policy_layer_said(p); /* one the match gives anyway: null */
	json_t *rates = json_array(), *o;
	int i;

	fc_match_format(p, match);
	for (i = 0; rates && i < p->ntiers; i++) {
		fc_rate_format(&p->rate[i], rate);
		json_array_append_new(rates, json_string(rate));
	}
	fc_rate_format(&p->escalate, esc);
	o = json_pack("{s:I, s:s, s:o, s:o, s:s, s:s, s:s, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:b}", "id",
			 (json_int_t)p->id, "match", match, "rates", rates, "burst",
			 p->burst ? json_integer((json_int_t)p->burst) : json_null(), "algo", fc_algo_name(p->algo),
			 "action", fc_action_name(p->action), "count", fc_count_name(p->count), "delay_burst",
			 p->delay_burst ? json_integer(p->delay_burst) : json_null(), "new_sources",
			 p->new_sources ? json_integer((json_int_t)p->new_sources) : json_null(), "escalate",
			 p->escalate.n ? json_string(esc) : json_null(), "ban_ttl",
			 p->ban_ttl ? json_integer(p->ban_ttl) : json_null(), "layer",
			 layer != FC_LAYER_AUTO ? json_string(fc_layer_names[layer]) : json_null(), "max_keys",
			 p->max_keys ? json_integer(p->max_keys) : json_null(), "new_keys",
			 p->new_keys ? json_integer(p->new_keys) : json_null(), "concurrency",
			 p->concurrency ? json_integer(p->concurrency) : json_null(), "warmup",
			 p->warmup ? json_integer(p->warmup) : json_null(), "override", p->override);
	/* Added later than the rest: an export without them is read as null and false. */
	if (o) {
		json_object_set_new(o, "show_keys", p->show_keys ? json_boolean(p->show_keys > 0) : json_null());
		json_object_set_new(o, "fleet", json_boolean(p->fleet));
	}
	return o;
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

/* Whether an option takes a number in JSON (the rest take strings). */
static bool fc_json_numeric(const struct fc_opt *o)
{
	return o->type == FC_OPT_UINT || o->type == FC_OPT_U32 || o->type == FC_OPT_DURATION;
}

/* One JSON value of option o, through the option's own parser and bounds:
 * the same rules, and the same messages, as on the command line. */
static int fc_json_opt_set(const struct fc_opt *o, json_t *v, struct fc_policy_spec *p, const char *key,
			   char field[FC_JSON_FIELD_LEN], struct fc_err *err)
{
	char num[32];
	struct fc_err why;
	const char *text;

	if (o->type == FC_OPT_FLAG || o->type == FC_OPT_YES) {
		if (!json_is_boolean(v))
			return FC_FAIL(key, "%s: expected true or false", key);
		if (json_is_false(v) && o->type == FC_OPT_YES)
			*(int *)((char *)p + o->off) = -1;
		if (json_is_false(v))
			return 0;
		text = "";
	} else if (fc_json_numeric(o)) {
		if (!json_is_integer(v))
			return FC_FAIL(key, "%s: expected null or a whole number%s", key,
				       o->type == FC_OPT_DURATION ? " of seconds" : "");
		snprintf(num, sizeof(num), "%lld%s", (long long)json_integer_value(v),
			 o->type == FC_OPT_DURATION ? "s" : "");
		text = num;
	} else if (!(text = json_string_value(v))) {
		return FC_FAIL(key, "%s: expected a string", key);
	}
	if (fc_opt_set(o, p, text, o->json, &why) < 0)
		return FC_FAIL(key, "%s", why.msg);
	return 0;
}

int fc_policy_from_json(json_t *o, struct fc_policy_spec *p, char field[FC_JSON_FIELD_LEN], struct fc_err *err)
{
	const struct fc_opt *opt;
	const char *key;
	struct fc_err why;
	char f[FC_JSON_FIELD_LEN];
	uint64_t v;
	json_t *val;
	size_t i;

	memset(p, 0, sizeof(*p));
	field[0] = '\0';
	if (!json_is_object(o))
		return FC_FAIL("", "expected an object");
	json_object_foreach(o, key, val) {
		for (opt = fc_policy_opts; opt->name && (!opt->json || strcmp(key, opt->json)); opt++)
			;
		if (!opt->name && strcmp(key, "id"))
			return FC_FAIL(key, "unknown key \"%.64s\"", key);
	}
	if (fc_json_uint(json_object_get(o, "id"), FC_POLICY_ID_MAX, &v) < 0 || !v)
		return FC_FAIL("id", "id: expected a whole number from 1 to %llu", (unsigned long long)FC_POLICY_ID_MAX);
	p->id = (uint32_t)v;
	if (!json_is_string(json_object_get(o, "match")))
		return FC_FAIL("match", "match: expected a string");
	/* Empty for a policy with a concurrency cap alone: validation says if it may be. */
	val = json_object_get(o, "rates");
	if (!json_is_array(val) || json_array_size(val) > FC_MAX_TIERS)
		return FC_FAIL("rates", "rates: expected an array of 0 to %d \"N/UNIT\"", FC_MAX_TIERS);
	for (opt = fc_policy_opts; opt->name; opt++) {
		val = opt->json ? json_object_get(o, opt->json) : NULL;
		if (!val || json_is_null(val))
			continue;
		if (!opt->repeat) {
			if (fc_json_opt_set(opt, val, p, opt->json, field, err) < 0)
				return -1;
			continue;
		}
		for (i = 0; i < json_array_size(val); i++) {
			snprintf(f, sizeof(f), "%s[%zu]", opt->json, i);
			if (fc_json_opt_set(opt, json_array_get(val, i), p, f, field, err) < 0)
				return -1;
		}
	}
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

const char *fc_set_name_of(const struct fc_ban_set *sets, size_t n, uint32_t id)
{
	size_t i;

	for (i = 0; i < n && sets[i].id != id; i++)
		;
	return i < n ? sets[i].name : "?";
}

json_t *fc_ban_set_to_json(const struct fc_ban_set *set)
{
	char created[FC_TIME_STRLEN], updated[FC_TIME_STRLEN], expires[FC_TIME_STRLEN];

	fc_time_format(set->created, created);
	fc_time_format(set->updated, updated);
	fc_time_format(set->expires, expires);
	return json_pack("{s:s, s:I, s:s, s:s, s:s?}", "set", set->name, "bans", (json_int_t)set->size, "created",
			 created, "updated", updated, "expires", set->expires ? expires : NULL);
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

json_t *fc_bans_to_json(const struct fc_ban_row *bans, size_t n, const struct fc_uid_ban *ub, size_t nu,
			const struct fc_ban_set *sets, size_t nsets, const struct fc_allow_row *allows, size_t na,
			int64_t now)
{
	const struct fc_allow_row *a;
	char by[FC_BAN_TEXT_LEN];
	json_t *arr = json_array(), *o;
	size_t i;

	for (i = 0; arr && i < n + nu; i++) {
		o = i < n ? fc_ban_to_json(&bans[i], now) : fc_uid_ban_to_json(&ub[i - n], now);
		if (i < n)
			json_object_set_new(o, "set", bans[i].set ? json_string(fc_set_name_of(sets, nsets, bans[i].set)) :
								    json_null());
		a = fc_allow_over_ban(allows, na, i < n ? &bans[i] : NULL, i < n ? NULL : &ub[i - n]);
		if (a)
			fc_allow_format(a, by);
		json_object_set_new(o, "allowed_by", a ? json_string(by) : json_null());
		json_array_append_new(arr, o);
	}
	return arr;
}

json_t *fc_allow_to_json(const struct fc_allow_row *r, int64_t now)
{
	char text[FC_BAN_TEXT_LEN], created[FC_TIME_STRLEN], expires[FC_TIME_STRLEN];
	json_t *o;

	fc_allow_format(r, text);
	fc_time_format(r->created, created);
	fc_time_format(r->expires, expires);
	o = json_pack("{s:s, s:s, s:s, s:s?, s:o, s:s?}", "allow", text, "kind",
		      !r->p.family ? "uid" : fc_prefix_is_exact(&r->p) ? "exact" : "prefix", "created", created, "expires",
		      r->expires ? expires : NULL, "ttl_remaining", r->expires ? json_integer(r->expires - now) : json_null(),
		      "note", r->note[0] ? r->note : NULL);
	if (o && r->p.family)
		json_object_set_new(o, "family", json_integer(r->p.family));
	return o;
}

json_t *fc_key_value_to_json(bool has, const char *text, bool cut)
{
	return has ? json_pack("{s:s, s:b}", "text", text, "cut", cut) : json_null();
}

json_t *fc_key_uses_to_json(const struct fc_key_use *k, size_t n)
{
	json_t *a = json_array();
	char tag[24];
	size_t i;

	for (i = 0; a && i < n; i++) {
		json_t *o;

		snprintf(tag, sizeof(tag), "%016llx", (unsigned long long)k[i].tag);
		o = json_pack("{s:s, s:I, s:f, s:I, s:I, s:o}", "key", tag, "policy", (json_int_t)k[i].policy, "used",
			      (double)(int64_t)(k[i].use * 1000 + 0.5) / 1000, "passed", (json_int_t)k[i].passed,
			      "denied", (json_int_t)k[i].denied, "value",
			      fc_key_value_to_json(k[i].has_value, k[i].value, k[i].value_cut));
		/* A fleet key: this node's credit in the current window, and whether it asks for more. */
		if (o && k[i].is_fleet)
			json_object_set_new(o, "fleet",
					    json_pack("{s:I, s:b, s:b}", "credit", fc_json_count(k[i].fleet.credit),
						      "current", k[i].fleet.current, "demand", k[i].fleet.demand));
		json_array_append_new(a, o);
	}
	return a;
}
