/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The store's rows as JSON, one spelling for export/import, list --json and
 * the console's API. Parsing goes through the CLI's own parsers, so JSON is
 * refused with the messages the command line gives.
 */
#ifndef FC_ROWS_JSON_H
#define FC_ROWS_JSON_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "fc_store.h"

/* {"id", "match", "rates": ["N/UNIT", ...], "burst", "algo", "action",
 *  "count", "delay_burst", "new_sources", "escalate", "ban_ttl", "layer",
 *  "max_keys", "new_keys", "concurrency", "warmup"}; a default is null. */
json_t *fc_policy_to_json(const struct fc_policy_spec *p);
/* The same object back, validated as `policy add` validates; on failure
 * field names the offending key ("rates[1]") and err says what is wrong.
 * p->id is set as soon as it is known, for the caller's message. */
#define FC_JSON_FIELD_LEN 32
int fc_policy_from_json(json_t *o, struct fc_policy_spec *p, char field[FC_JSON_FIELD_LEN], struct fc_err *err);

/* As `ban list --json` prints them. */
json_t *fc_ban_to_json(const struct fc_ban_row *r, int64_t now);
json_t *fc_uid_ban_to_json(const struct fc_uid_ban *b, int64_t now);
/* The name of set id among sets ("?": not there, a set deleted meanwhile). */
const char *fc_set_name_of(const struct fc_ban_set *sets, size_t n, uint32_t id);
/* The address bans then the uid bans, as `ban list --json` prints them:
 * each ban's "set" named (null: by hand or escalated), and "allowed_by":
 * the allow entry (of allows[0..na)) that overrides it, or null. */
json_t *fc_bans_to_json(const struct fc_ban_row *rows, size_t n, const struct fc_uid_ban *ub, size_t nu,
			const struct fc_ban_set *sets, size_t nsets, const struct fc_allow_row *allows, size_t na,
			int64_t now);
/* {"set", "bans", "created", "updated", "expires"}, as `ban sets --json`. */
json_t *fc_ban_set_to_json(const struct fc_ban_set *set);
/* As `allow list --json` prints them: {"allow", "kind", "family" (an
 * address's), "created", "expires", "ttl_remaining", "note"}. */
json_t *fc_allow_to_json(const struct fc_allow_row *r, int64_t now);

/* [{"key": "HASH", "policy", "used", "passed", "denied", "value"}, ...], as
 * top --json and the console's /api/stats show the busiest keys. */
struct fc_key_use;
json_t *fc_key_uses_to_json(const struct fc_key_use *k, size_t n);
/* A key's value (--show-keys) as JSON: {"text": escaped (fc_escape), "cut":
 * whether the value was longer than what is kept}, or null (has false). */
json_t *fc_key_value_to_json(bool has, const char *text, bool cut);

/* A u64 counter as a JSON integer, which jansson keeps signed: clamped to
 * INT64_MAX. No counter reaches 2^63 (292 years at 10^9 a second), so one
 * past it was written by a hostile nginx worker into the shm's state file;
 * it stays the largest number JSON can say rather than turning negative,
 * and stays an integer for what reads it. */
static inline json_int_t fc_json_count(uint64_t v)
{
	return v > INT64_MAX ? INT64_MAX : (json_int_t)v;
}

/* An optional whole number: null or absent (0), or 1..max. */
int fc_json_uint(json_t *v, uint64_t max, uint64_t *out);

#endif /* FC_ROWS_JSON_H */
