// SPDX-License-Identifier: BSD-2-Clause
/*
 * freqctl export | import: the store as one JSON document, and back.
 *
 *   {"freqctl": 2,
 *    "policies": [{"id", "match", "rates", "burst", "algo", "action", "count",
 *                  "delay_burst", "new_sources", ... "show_keys", "fleet"}, ...],
 *    "bans": [{"ban": "ADDR[/LEN]" | "uid=VALUE", "created", "expires"}, ...],
 *    "sets": [{"name", "expires", "bans": ["ADDR[/LEN]", ...]}, ...],
 *    "nodes": [{"name", "weight"}, ...],
 *    "allows": [{"allow": "ADDR[/LEN]" | "uid=VALUE", "created", "expires", "note"}, ...]}
 *
 * Times are unix seconds; a default is null. "bans" are those by hand (or
 * escalated); a ban set carries its own. Import validates the whole file
 * with the CLI's own parsers and applies all of it or nothing: the store's
 * policies, bans, sets, nodes and allow entries become the file's (a policy
 * whose id and match stay keeps its bucket state and counters; a set that
 * stays changes by the difference). A file of version 1 (no sets) is read
 * too. A file without "allows" (written before allow lists) leaves the
 * store's entries alone; a policy without a key added later (show_keys,
 * fleet) has it null or false, as it had in the store it came from.
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <jansson.h>

#include "fc_allow.h"
#include "fc_cli.h"
#include "fc_duration.h"
#include "fc_change.h"
#include "fc_feed.h"
#include "fc_publish.h"
#include "fc_rows_json.h"

#define FC_IO_VERSION    2
#define FC_IO_MAX_ERRORS 20

static json_t *fc_export_ban(const char *text, int64_t created, int64_t expires, uint32_t by_policy)
{
	return json_pack("{s:s, s:I, s:o, s:o}", "ban", text, "created", (json_int_t)created, "expires",
			 expires ? json_integer(expires) : json_null(), "escalated_by_policy",
			 by_policy ? json_integer(by_policy) : json_null());
}

/* A ban set and its bans, in address order. */
struct fc_io_set {
	char name[FC_SET_NAME_MAX + 1];
	int64_t expires;
	struct fc_prefix *keys;
	size_t n;
};

static void fc_io_sets_free(struct fc_io_set *sets, size_t n)
{
	size_t i;

	for (i = 0; sets && i < n; i++)
		free(sets[i].keys);
	free(sets);
}

/* Everything the store holds: what export writes and import --dry-run
 * compares with a file. */
struct fc_store_all {
	struct fc_policy_row *pols;
	size_t np;
	struct fc_ban_row *bans; /* by hand (escalated too) */
	size_t nb;
	struct fc_uid_ban *ub;
	size_t nu;
	struct fc_io_set *sets;
	size_t ns;
	struct fc_node *nodes;
	size_t nn;
	struct fc_allow_row *allows;
	size_t na;
};

static void fc_store_all_free(struct fc_store_all *a)
{
	free(a->pols);
	free(a->bans);
	free(a->ub);
	fc_io_sets_free(a->sets, a->ns);
	free(a->nodes);
	free(a->allows);
	memset(a, 0, sizeof(*a));
}

/* The store's ban sets, each with its bans. */
static int fc_store_sets_read(struct fc_store *st, int64_t now, struct fc_store_all *a, struct fc_err *err)
{
	struct fc_ban_set *sets = NULL;
	size_t n = 0;
	int rc = -1;

	if (fc_store_set_list(st, now, &sets, &n, err) < 0)
		return -1;
	a->sets = calloc(n + 1, sizeof(*a->sets));
	if (!a->sets) {
		fc_err_set(err, "out of memory");
		goto out;
	}
	for (a->ns = 0; a->ns < n; a->ns++) {
		struct fc_io_set *s = &a->sets[a->ns];

		snprintf(s->name, sizeof(s->name), "%s", sets[a->ns].name);
		s->expires = sets[a->ns].expires;
		if (fc_store_set_keys(st, sets[a->ns].id, &s->keys, &s->n, err) < 0)
			goto out;
	}
	rc = 0;
out:
	free(sets);
	return rc;
}

/* Reads it all at now; a missing store is empty, and not made. */
static int fc_store_all_read(const char *db, int64_t now, struct fc_store_all *a, struct fc_err *err)
{
	struct fc_store *st = NULL;
	size_t i, o;
	int rc;

	memset(a, 0, sizeof(*a));
	if ((rc = fc_store_open_read(db, &st, err)) != 0)
		return rc < 0 ? -1 : 0;
	if (fc_store_policy_list(st, &a->pols, &a->np, err) < 0 ||
	    fc_store_ban_list(st, now, &a->bans, &a->nb, err) < 0 || fc_store_uid_ban_list(st, now, &a->ub, &a->nu, err) < 0 ||
	    fc_store_sets_read(st, now, a, err) < 0 || fc_store_node_list(st, &a->nodes, &a->nn, err) < 0 ||
	    fc_store_allow_list(st, now, &a->allows, &a->na, err) < 0) {
		fc_store_all_free(a);
		rc = -1;
	}
	for (i = 0, o = 0; rc == 0 && i < a->nb; i++) /* a set's bans go with the set */
		if (!a->bans[i].set)
			a->bans[o++] = a->bans[i];
	a->nb = rc == 0 ? o : 0;
	fc_store_close(st);
	return rc;
}

static int fc_export(const struct fc_ctx *ctx, const struct fc_cmd *cmd, int argc, char **argv)
{
	char text[FC_PREFIX_STRLEN + FC_SHM_MAX_VALUE + 8];
	struct fc_store_all all;
	json_t *doc, *jp, *jb, *js, *jn, *ja, *o;
	struct fc_err err;
	size_t i, j;

	fc_cmd_parse(cmd, argc, argv, NULL, NULL);
	if (fc_store_all_read(ctx->db_path, (int64_t)time(NULL), &all, &err) < 0) {
		fc_warn("export: %s", err.msg);
		return FC_EXIT_FAILURE;
	}
	jp = json_array();
	jb = json_array();
	for (i = 0; jp && i < all.np; i++)
		json_array_append_new(jp, fc_policy_to_json(&all.pols[i].spec));
	for (i = 0; jb && i < all.nb; i++) {
		fc_prefix_format(&all.bans[i].p, text);
		json_array_append_new(jb, fc_export_ban(text, all.bans[i].created, all.bans[i].expires,
							 all.bans[i].by_policy));
	}
	for (i = 0; jb && i < all.nu; i++) {
		snprintf(text, sizeof(text), "uid=%s", all.ub[i].uid);
		json_array_append_new(jb, fc_export_ban(text, all.ub[i].created, all.ub[i].expires, 0));
	}
	js = json_array();
	for (i = 0; js && i < all.ns; i++) {
		json_t *keys = json_array();

		for (j = 0; keys && j < all.sets[i].n; j++) {
			fc_prefix_format(&all.sets[i].keys[j], text);
			json_array_append_new(keys, json_string(text));
		}
		json_array_append_new(js, json_pack("{s:s, s:o, s:o}", "name", all.sets[i].name, "expires",
						    all.sets[i].expires ? json_integer(all.sets[i].expires) : json_null(),
						    "bans", keys));
	}
	jn = json_array();
	for (i = 0; jn && i < all.nn; i++)
		json_array_append_new(jn, json_pack("{s:s, s:f}", "name", all.nodes[i].name, "weight", all.nodes[i].weight));
	ja = json_array();
	for (i = 0; ja && i < all.na; i++) {
		fc_allow_format(&all.allows[i], text);
		o = json_pack("{s:s, s:I, s:o, s:o}", "allow", text, "created", (json_int_t)all.allows[i].created,
			      "expires", all.allows[i].expires ? json_integer(all.allows[i].expires) : json_null(), "note",
			      all.allows[i].note[0] ? json_string(all.allows[i].note) : json_null());
		json_array_append_new(ja, o);
	}
	doc = json_pack("{s:i, s:o, s:o, s:o, s:o, s:o}", "freqctl", FC_IO_VERSION, "policies", jp, "bans", jb, "sets",
			js, "nodes", jn, "allows", ja);
	fc_store_all_free(&all);
	return fc_json_print(doc);
}

/* What a file holds, validated. */
struct fc_import_set {
	struct fc_policy_spec *pols;
	size_t *pidx; /* where each is in the file */
	size_t np;
	struct fc_ban_row *bans;
	size_t nb;
	struct fc_uid_ban *ubans;
	size_t nu;
	struct fc_io_set *sets;
	size_t ns;
	struct fc_node *nodes;
	size_t nn;
	struct fc_allow_row *allows;
	size_t na;
	bool has_allows; /* the file has "allows": they replace the store's */
	size_t errors;
	const char *path;
};

__attribute__((format(printf, 3, 4)))
static void fc_import_error(struct fc_import_set *s, const char *where, const char *fmt, ...)
{
	char msg[FC_ERR_LEN];
	va_list ap;

	if (++s->errors > FC_IO_MAX_ERRORS)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	fc_warn("%s: %s: %s", s->path, where, msg);
}

static void fc_import_policy(struct fc_import_set *s, size_t idx, json_t *o)
{
	struct fc_policy_spec *p = &s->pols[s->np];
	char where[64], field[32];
	struct fc_err err;

	snprintf(where, sizeof(where), "policies[%zu]", idx);
	if (fc_policy_from_json(o, p, field, &err) < 0) {
		if (p->id)
			snprintf(where, sizeof(where), "policies[%zu] (id %u)", idx, p->id);
		return fc_import_error(s, where, "%s", err.msg);
	}
	s->pidx[s->np++] = idx;
}

/* A policy's id, match, layer and place in the file, to find repeats by sorting. */
struct fc_pol_key {
	uint32_t id;
	size_t idx;
	enum fc_layer layer;
	bool ip_only;
	char match[FC_MATCH_LEN];
};

static int fc_pol_key_by_id(const void *a, const void *b)
{
	const struct fc_pol_key *x = a, *y = b;

	return x->id != y->id ? (x->id > y->id) - (x->id < y->id) : (x->idx > y->idx) - (x->idx < y->idx);
}

static int fc_pol_key_by_match(const void *a, const void *b)
{
	const struct fc_pol_key *x = a, *y = b;
	int c = strcmp(x->match, y->match);

	if (!c)
		c = (int)x->layer - (int)y->layer;
	return c ? c : (x->idx > y->idx) - (x->idx < y->idx);
}

/* Two policies with one id, or one match at one layer: the later is an error. */
/* The file's nginx policies use no more argument or header names than
 * nginx reads: past them, it would leave a policy out. */
static void fc_import_names(struct fc_import_set *s)
{
	struct fc_names *names = calloc(1, sizeof(*names));
	struct fc_err err;
	char where[64];
	size_t i;

	if (!names) {
		s->errors++;
		fc_warn("%s: out of memory", s->path);
		return;
	}
	for (i = 0; i < s->np; i++)
		if (fc_names_add(names, &s->pols[i], &err) < 0) {
			snprintf(where, sizeof(where), "policies[%zu] (id %u)", s->pidx[i], s->pols[i].id);
			fc_import_error(s, where, "%s", err.msg);
		}
	free(names);
}

static void fc_import_repeats(struct fc_import_set *s)
{
	struct fc_pol_key *k = calloc(s->np + 1, sizeof(*k));
	char where[64];
	size_t i;

	if (!k) {
		s->errors++;
		fc_warn("%s: out of memory", s->path);
		return;
	}
	for (i = 0; i < s->np; i++) {
		k[i].id = s->pols[i].id;
		k[i].idx = s->pidx[i];
		k[i].layer = fc_policy_layer(&s->pols[i]);
		k[i].ip_only = fc_policy_ip_only(&s->pols[i]);
		fc_match_format(&s->pols[i], k[i].match);
	}
	qsort(k, s->np, sizeof(*k), fc_pol_key_by_id);
	for (i = 1; i < s->np; i++) {
		snprintf(where, sizeof(where), "policies[%zu] (id %u)", k[i].idx, k[i].id);
		if (k[i].id == k[i - 1].id)
			fc_import_error(s, where, "id %u given twice", k[i].id);
	}
	qsort(k, s->np, sizeof(*k), fc_pol_key_by_match);
	for (i = 1; i < s->np; i++) {
		snprintf(where, sizeof(where), "policies[%zu] (id %u)", k[i].idx, k[i].id);
		if (!strcmp(k[i].match, k[i - 1].match) && k[i].layer == k[i - 1].layer && k[i].id != k[i - 1].id)
			fc_import_error(s, where, "%s is policy %u's match%s too", k[i].match, k[i - 1].id,
					!k[i].ip_only ? "" : k[i].layer == FC_LAYER_HTTP ? " in nginx" : " at XDP/TC");
	}
	free(k);
}

static void fc_import_ban(struct fc_import_set *s, size_t idx, json_t *o)
{
	const char *text = json_string_value(json_object_get(o, "ban")), *key;
	uint64_t created, expires, created_by;
	struct fc_err err;
	char where[48];
	json_t *val;

	snprintf(where, sizeof(where), "bans[%zu]", idx);
	if (!json_is_object(o) || !text)
		return fc_import_error(s, where, "expected an object with \"ban\": \"ADDR[/LEN]\" or \"uid=VALUE\"");
	json_object_foreach(o, key, val) {
		if (strcmp(key, "ban") && strcmp(key, "created") && strcmp(key, "expires") &&
		    strcmp(key, "escalated_by_policy"))
			return fc_import_error(s, where, "unknown key \"%s\"", key);
	}
	if (fc_json_uint(json_object_get(o, "created"), FC_TIME_MAX, &created) < 0 ||
	    fc_json_uint(json_object_get(o, "expires"), FC_TIME_MAX, &expires) < 0)
		return fc_import_error(s, where, "created, expires: expected unix seconds up to %lld (expires may be null)",
				       (long long)FC_TIME_MAX);
	if (!strncmp(text, "uid=", 4)) {
		struct fc_uid_ban *u = &s->ubans[s->nu];

		if (fc_uid_check(text + 4, &err) < 0)
			return fc_import_error(s, where, "%s", err.msg);
		snprintf(u->uid, sizeof(u->uid), "%s", text + 4);
		u->created = (int64_t)created;
		u->expires = (int64_t)expires;
		s->nu++;
		return;
	}
	if (fc_prefix_parse(text, &s->bans[s->nb].p, &err) < 0)
		return fc_import_error(s, where, "%s", err.msg);
	if (fc_json_uint(json_object_get(o, "escalated_by_policy"), FC_POLICY_ID_MAX, &created_by) < 0)
		return fc_import_error(s, where, "escalated_by_policy: expected null or a policy id");
	s->bans[s->nb].created = (int64_t)created;
	s->bans[s->nb].expires = (int64_t)expires;
	s->bans[s->nb].by_policy = (uint32_t)created_by;
	s->nb++;
}

static void fc_import_ban_set(struct fc_import_set *s, size_t idx, json_t *o)
{
	const char *name = json_string_value(json_object_get(o, "name")), *key;
	json_t *bans = json_object_get(o, "bans"), *val;
	struct fc_io_set *set = &s->sets[s->ns];
	struct fc_feed keys = { 0 };
	uint64_t expires;
	struct fc_err err;
	char where[96];
	size_t i;

	snprintf(where, sizeof(where), "sets[%zu]", idx);
	if (!json_is_object(o) || !name || !json_is_array(bans))
		return fc_import_error(s, where, "expected {\"name\", \"expires\", \"bans\": [\"ADDR[/LEN]\", ...]}");
	json_object_foreach(o, key, val) {
		if (strcmp(key, "name") && strcmp(key, "expires") && strcmp(key, "bans"))
			return fc_import_error(s, where, "unknown key \"%s\"", key);
	}
	if (fc_set_name_check(name, &err) < 0)
		return fc_import_error(s, where, "%s", err.msg);
	snprintf(where, sizeof(where), "sets[%zu] (%s)", idx, name);
	for (i = 0; i < s->ns; i++)
		if (!strcmp(s->sets[i].name, name))
			return fc_import_error(s, where, "set %s given twice", name);
	if (fc_json_uint(json_object_get(o, "expires"), FC_TIME_MAX, &expires) < 0)
		return fc_import_error(s, where, "expires: expected null or unix seconds up to %lld", (long long)FC_TIME_MAX);
	for (i = 0; i < json_array_size(bans); i++) {
		const char *text = json_string_value(json_array_get(bans, i));
		struct fc_prefix p;

		if (!text || fc_prefix_parse(text, &p, &err) < 0 || fc_feed_add(&keys, &p, &err) < 0) {
			fc_feed_free(&keys);
			return fc_import_error(s, where, "bans[%zu]: %s", i, text ? err.msg : "expected \"ADDR[/LEN]\"");
		}
	}
	fc_feed_sort(&keys);
	snprintf(set->name, sizeof(set->name), "%s", name);
	set->expires = (int64_t)expires;
	set->keys = keys.v;
	set->n = keys.n;
	s->ns++;
}

static void fc_import_node(struct fc_import_set *s, size_t idx, json_t *o)
{
	const char *name = json_string_value(json_object_get(o, "name"));
	json_t *w = json_object_get(o, "weight");
	struct fc_node *n = &s->nodes[s->nn];
	char where[48];
	size_t i;

	snprintf(where, sizeof(where), "nodes[%zu]", idx);
	if (!json_is_object(o) || json_object_size(o) != 2 || !name || !*name || strlen(name) > FC_NODE_NAME_MAX ||
	    !json_is_number(w) || !(json_number_value(w) > 0 && json_number_value(w) <= 1))
		return fc_import_error(s, where, "expected {\"name\": 1 to %d characters, \"weight\": (0, 1]}",
				       FC_NODE_NAME_MAX);
	for (i = 0; i < s->nn; i++)
		if (!strcmp(s->nodes[i].name, name))
			return fc_import_error(s, where, "node %s given twice", name);
	snprintf(n->name, sizeof(n->name), "%s", name);
	n->weight = json_number_value(w);
	s->nn++;
}

static void fc_import_allow(struct fc_import_set *s, size_t idx, json_t *o)
{
	const char *text = json_string_value(json_object_get(o, "allow")), *key;
	json_t *note = json_object_get(o, "note"), *val;
	struct fc_allow_row *a = &s->allows[s->na];
	char where[48], canon[FC_BAN_TEXT_LEN];
	uint64_t created, expires;
	struct fc_err err;

	snprintf(where, sizeof(where), "allows[%zu]", idx);
	if (!json_is_object(o) || !text)
		return fc_import_error(s, where, "expected an object with \"allow\": \"ADDR[/LEN]\" or \"uid=VALUE\"");
	json_object_foreach(o, key, val) {
		if (strcmp(key, "allow") && strcmp(key, "created") && strcmp(key, "expires") && strcmp(key, "note"))
			return fc_import_error(s, where, "unknown key \"%s\"", key);
	}
	if (fc_json_uint(json_object_get(o, "created"), FC_TIME_MAX, &created) < 0 ||
	    fc_json_uint(json_object_get(o, "expires"), FC_TIME_MAX, &expires) < 0)
		return fc_import_error(s, where, "created, expires: expected unix seconds up to %lld (expires may be null)",
				       (long long)FC_TIME_MAX);
	if (note && !json_is_null(note) && !json_is_string(note))
		return fc_import_error(s, where, "note: expected a string or null");
	if (fc_allow_text(text, a, canon, &err) < 0 ||
	    (json_is_string(note) && fc_allow_note_check(json_string_value(note), &err) < 0))
		return fc_import_error(s, where, "%s", err.msg);
	snprintf(a->note, sizeof(a->note), "%s", json_is_string(note) ? json_string_value(note) : "");
	a->created = (int64_t)created;
	a->expires = (int64_t)expires;
	s->na++;
}

/* Allow entries by key (address or uid), then by place in the file. */
static int fc_allow_at_cmp(const void *x, const void *y, void *rows)
{
	const struct fc_allow_row *r = rows, *a = &r[*(const size_t *)x], *b = &r[*(const size_t *)y];
	int c = memcmp(&a->p, &b->p, sizeof(a->p));

	if (!c)
		c = strcmp(a->uid, b->uid);
	return c ? c : (a > b) - (a < b);
}

/* An entry given twice is an error at its second place. Sorted, not
 * compared pair by pair: a file of a million entries is checked in a second,
 * not in hours. With no error before it, an entry's place in s->allows is its
 * place in the file. */
static void fc_import_allow_twice(struct fc_import_set *s)
{
	char where[48], canon[FC_BAN_TEXT_LEN];
	size_t *at, i;

	if (s->errors || s->na < 2)
		return;
	if (!(at = malloc(s->na * sizeof(*at)))) {
		fc_import_error(s, "allows", "out of memory");
		return;
	}
	for (i = 0; i < s->na; i++)
		at[i] = i;
	qsort_r(at, s->na, sizeof(*at), fc_allow_at_cmp, s->allows);
	for (i = 1; i < s->na; i++) {
		const struct fc_allow_row *a = &s->allows[at[i]], *b = &s->allows[at[i - 1]];

		if (memcmp(&a->p, &b->p, sizeof(a->p)) || strcmp(a->uid, b->uid))
			continue;
		snprintf(where, sizeof(where), "allows[%zu]", at[i]);
		fc_allow_format(a, canon);
		fc_import_error(s, where, "%s given twice", canon);
	}
	free(at);
}

/* Reads and validates the whole file. */
static int fc_import_read(const char *path, struct fc_import_set *s)
{
	json_t *doc, *pols, *bans, *sets, *nodes, *allows;
	json_error_t jerr;
	json_int_t version;
	size_t i;

	memset(s, 0, sizeof(*s));
	s->path = path;
	doc = json_load_file(path, JSON_REJECT_DUPLICATES, &jerr);
	if (!doc) {
		fc_warn("%s:%d:%d: %s", path, jerr.line, jerr.column, jerr.text);
		return -1;
	}
	pols = json_object_get(doc, "policies");
	bans = json_object_get(doc, "bans");
	sets = json_object_get(doc, "sets");
	nodes = json_object_get(doc, "nodes");
	allows = json_object_get(doc, "allows");
	s->has_allows = allows != NULL;
	version = json_integer_value(json_object_get(doc, "freqctl"));
	/* Version 1 had no sets; "allows" may be missing (before allow lists). */
	if (!json_is_object(doc) || (version != FC_IO_VERSION && version != 1) || !json_is_array(pols) ||
	    !json_is_array(bans) || !json_is_array(nodes) || (version > 1 && !json_is_array(sets)) ||
	    (allows && !json_is_array(allows)) || json_object_size(doc) != (version > 1 ? 5u : 4u) + (allows != NULL)) {
		fc_warn("%s: expected {\"freqctl\": %d, \"policies\": [...], \"bans\": [...], \"sets\": [...], "
			"\"nodes\": [...], \"allows\": [...]} (see freqctl export)",
			path, FC_IO_VERSION);
		json_decref(doc);
		return -1;
	}
	s->pols = calloc(json_array_size(pols) + 1, sizeof(*s->pols));
	s->pidx = calloc(json_array_size(pols) + 1, sizeof(*s->pidx));
	s->bans = calloc(json_array_size(bans) + 1, sizeof(*s->bans));
	s->ubans = calloc(json_array_size(bans) + 1, sizeof(*s->ubans));
	s->sets = calloc(json_array_size(sets) + 1, sizeof(*s->sets));
	s->nodes = calloc(json_array_size(nodes) + 1, sizeof(*s->nodes));
	s->allows = calloc(json_array_size(allows) + 1, sizeof(*s->allows));
	if (!s->pols || !s->pidx || !s->bans || !s->ubans || !s->sets || !s->nodes || !s->allows) {
		fc_warn("%s: out of memory", path);
		json_decref(doc);
		return -1;
	}
	for (i = 0; i < json_array_size(pols); i++)
		fc_import_policy(s, i, json_array_get(pols, i));
	fc_import_repeats(s);
	fc_import_names(s);
	for (i = 0; i < json_array_size(bans); i++)
		fc_import_ban(s, i, json_array_get(bans, i));
	for (i = 0; i < json_array_size(sets); i++)
		fc_import_ban_set(s, i, json_array_get(sets, i));
	for (i = 0; i < json_array_size(nodes); i++)
		fc_import_node(s, i, json_array_get(nodes, i));
	for (i = 0; i < json_array_size(allows); i++)
		fc_import_allow(s, i, json_array_get(allows, i));
	fc_import_allow_twice(s);
	json_decref(doc);
	if (s->errors > FC_IO_MAX_ERRORS)
		fc_warn("%s: ... and %zu more errors", path, s->errors - FC_IO_MAX_ERRORS);
	if (s->errors)
		fc_warn("import %s: %zu error%s; nothing imported", path, s->errors, s->errors == 1 ? "" : "s");
	return s->errors ? -1 : 0;
}

static int fc_spec_id_cmp(const void *a, const void *b)
{
	uint32_t x = ((const struct fc_policy_spec *)a)->id, y = ((const struct fc_policy_spec *)b)->id;

	return (x > y) - (x < y);
}

/* Makes the store's ban sets the file's: each one's bans by the
 * difference, those not in the file deleted. */
static int fc_import_sets(struct fc_publish *pub, const struct fc_import_set *s, struct fc_err *err)
{
	struct fc_ban_set *have = NULL;
	struct fc_set_result res;
	size_t nhave = 0, i, j;
	int rc = -1;

	if (fc_store_set_list(pub->st, pub->now, &have, &nhave, err) < 0)
		return -1;
	for (i = 0; i < nhave; i++) {
		for (j = 0; j < s->ns && strcmp(s->sets[j].name, have[i].name); j++)
			;
		if (j == s->ns && fc_store_set_del(pub->st, have[i].id, err) < 0)
			goto out;
	}
	for (i = 0; i < s->ns; i++)
		if (fc_set_replace(pub, s->sets[i].name, s->sets[i].keys, s->sets[i].n, s->sets[i].expires, NULL, NULL,
				   &res, err) < 0)
			goto out;
	rc = 0;
out:
	free(have);
	return rc;
}

/* Makes the store's policies and bans the set's, in the open transaction. */
static int fc_import_apply(struct fc_publish *pub, const struct fc_import_set *s, struct fc_err *err)
{
	struct fc_policy_row *old = NULL, row;
	struct fc_policy_spec *byid = NULL;
	size_t nold = 0, i;
	bool found, existed;
	int rc = -1;

	if (fc_store_policy_list(pub->st, &old, &nold, err) < 0)
		return -1;
	byid = malloc((s->np + 1) * sizeof(*byid));
	if (!byid) {
		fc_err_set(err, "out of memory");
		goto out;
	}
	memcpy(byid, s->pols, s->np * sizeof(*byid));
	qsort(byid, s->np, sizeof(*byid), fc_spec_id_cmp);
	/* Policies gone from the file, or whose match or layer changes
	 * (which resets their state anyway), are deleted first: a match may
	 * move to another id. The others are replaced in place and keep slot,
	 * state, counters. */
	for (i = 0; i < nold; i++) {
		char m1[FC_MATCH_LEN], m2[FC_MATCH_LEN];
		const struct fc_policy_spec *f = bsearch(&old[i].spec, byid, s->np, sizeof(*byid), fc_spec_id_cmp);

		if (f) {
			fc_match_format(&old[i].spec, m1);
			fc_match_format(f, m2);
			if (!strcmp(m1, m2) && fc_policy_layer(&old[i].spec) == fc_policy_layer(f))
				continue;
		}
		if (fc_store_policy_del(pub->st, old[i].spec.id, &found, err) < 0)
			goto out;
	}
	for (i = 0; i < s->np; i++)
		if (fc_store_policy_put(pub->st, &s->pols[i], pub->now, &row, err) < 0)
			goto out;
	if (fc_store_bans_clear(pub->st, err) < 0)
		goto out;
	for (i = 0; i < s->nb; i++)
		if (fc_store_ban_put(pub->st, &s->bans[i], err) < 0)
			goto out;
	for (i = 0; i < s->nu; i++)
		if (fc_store_uid_ban_put(pub->st, &s->ubans[i], &existed, pub->now, err) < 0)
			goto out;
	if (fc_import_sets(pub, s, err) < 0 || fc_store_nodes_clear(pub->st, err) < 0)
		goto out;
	for (i = 0; i < s->nn; i++)
		if (fc_store_node_put(pub->st, &s->nodes[i], err) < 0)
			goto out;
	if (fc_store_nodes_follow(pub->st, pub->now * 1000, err) < 0)
		goto out;
	if (s->has_allows && fc_store_allows_clear(pub->st, err) < 0)
		goto out;
	for (i = 0; i < s->na; i++)
		if (fc_store_allow_put(pub->st, &s->allows[i], pub->now, &existed, err) < 0)
			goto out;
	rc = 0;
out:
	free(byid);
	free(old);
	return rc;
}

struct fc_import_opt {
	bool dry_run;
	bool json;
};

static const struct fc_opt fc_import_opts[] = {
	FC_OPTION("dry-run", 'n', FC_OPT_FLAG, struct fc_import_opt, dry_run,
		  .help = "print what would change (added, changed, removed) and change nothing"),
	FC_OPTION("json", 0, FC_OPT_FLAG, struct fc_import_opt, json, .help = "with --dry-run: the changes as JSON"),
	FC_OPT_END,
};

/* One kind of thing's changes, for --dry-run: names added, changed, removed. */
struct fc_diff {
	const char *kind;
	json_t *added, *changed, *removed;
};

static void fc_diff_init(struct fc_diff *d, const char *kind)
{
	d->kind = kind;
	d->added = json_array();
	d->changed = json_array();
	d->removed = json_array();
}

static void fc_diff_print(const struct fc_diff *d)
{
	static const char *const sign[] = { "+", "~", "-" };
	const json_t *sets[] = { d->added, d->changed, d->removed };
	size_t i, j;

	for (i = 0; i < 3; i++)
		for (j = 0; j < json_array_size(sets[i]); j++)
			printf("%s %s %s\n", sign[i], d->kind, json_string_value(json_array_get(sets[i], j)));
}

/* How one kind of thing is compared: its key (key_len bytes at key_off, or
 * a string there when key_len is 0), whether it changed (val_len bytes at
 * val_off, unless a function says), and its name (the string key, unless
 * a function makes one). */
struct fc_diff_kind {
	size_t size, key_off, key_len, val_off, val_len;
	bool (*changed)(const void *a, const void *b);
	void (*name)(const void *a, char *buf, size_t len);
};

/* Key order: bytes, or a string. */
static int fc_diff_key_cmp(const struct fc_diff_kind *k, const char *a, const char *b)
{
	return k->key_len ? memcmp(a + k->key_off, b + k->key_off, k->key_len) : strcmp(a + k->key_off, b + k->key_off);
}

static bool fc_diff_changed(const struct fc_diff_kind *k, const char *a, const char *b)
{
	return k->changed ? k->changed(a, b) : memcmp(a + k->val_off, b + k->val_off, k->val_len) != 0;
}

static void fc_diff_name(const struct fc_diff_kind *k, const char *a, char *buf, size_t len)
{
	if (k->name)
		k->name(a, buf, len);
	else
		snprintf(buf, len, "%s", a + k->key_off);
}

static int fc_diff_ptr_cmp(const void *a, const void *b, void *k)
{
	return fc_diff_key_cmp(k, *(const char *const *)a, *(const char *const *)b);
}

/* Pointers to the n items at v, in key order. */
static const char **fc_diff_sorted(const struct fc_diff_kind *k, const void *v, size_t n)
{
	const char **p = malloc((n + 1) * sizeof(*p));
	size_t i;

	for (i = 0; p && i < n; i++)
		p[i] = (const char *)v + i * k->size;
	if (p && n)
		qsort_r(p, n, sizeof(*p), fc_diff_ptr_cmp, (void *)k);
	return p;
}

/* One pass over both, in key order. */
static void fc_diff_run(struct fc_diff *d, const struct fc_diff_kind *k, const void *old, size_t nold, const void *now,
			size_t nnow)
{
	const char **o = fc_diff_sorted(k, old, nold), **w = fc_diff_sorted(k, now, nnow);
	char name[FC_MATCH_LEN + 32];
	size_t i = 0, j = 0;
	int c;

	while (o && w && (i < nnow || j < nold)) {
		c = i == nnow ? 1 : j == nold ? -1 : fc_diff_key_cmp(k, w[i], o[j]);
		fc_diff_name(k, c <= 0 ? w[i] : o[j], name, sizeof(name));
		if (c < 0)
			json_array_append_new(d->added, json_string(name));
		else if (c > 0)
			json_array_append_new(d->removed, json_string(name));
		else if (fc_diff_changed(k, o[j], w[i]))
			json_array_append_new(d->changed, json_string(name));
		i += c <= 0;
		j += c >= 0;
	}
	free(o);
	free(w);
}

/* A policy changed when its export object differs. */
static bool fc_pol_changed(const void *a, const void *b)
{
	json_t *x = fc_policy_to_json(a), *y = fc_policy_to_json(b);
	bool diff = !json_equal(x, y);

	json_decref(x);
	json_decref(y);
	return diff;
}

static void fc_pol_name(const void *a, char *buf, size_t len)
{
	char match[FC_MATCH_LEN];

	fc_match_format(a, match);
	snprintf(buf, len, "%u %s", ((const struct fc_policy_spec *)a)->id, match);
}

/* A set changed when its lapse time or any of its bans did. */
static bool fc_set_changed(const void *a, const void *b)
{
	const struct fc_io_set *x = a, *y = b;

	return x->expires != y->expires || x->n != y->n || (x->n && memcmp(x->keys, y->keys, x->n * sizeof(*x->keys)));
}

static void fc_allow_name(const void *a, char *buf, size_t len)
{
	char text[FC_BAN_TEXT_LEN];

	fc_allow_format(a, text);
	snprintf(buf, len, "%s", text);
}

/* Allow entries: keyed by address and uid, changed by expiry or note. */
static bool fc_allow_changed(const void *a, const void *b)
{
	const struct fc_allow_row *x = a, *y = b;

	return x->expires != y->expires || strcmp(x->note, y->note);
}

static void fc_ban_name(const void *a, char *buf, size_t len)
{
	char text[FC_PREFIX_STRLEN];

	fc_prefix_format(&((const struct fc_ban_row *)a)->p, text);
	snprintf(buf, len, "%s", text);
}

/* What import would change, read from the store, which it leaves alone. */
static int fc_import_dry_run(const struct fc_ctx *ctx, const struct fc_import_set *s, bool json, struct fc_err *err)
{
#define FC_KEY(t, f) .size = sizeof(t), .key_off = offsetof(t, f)
#define FC_VAL(t, f) .val_off = offsetof(t, f), .val_len = sizeof(((t *)0)->f)
	static const struct fc_diff_kind fc_diff_policy = { FC_KEY(struct fc_policy_spec, id), .key_len = 4,
							     .changed = fc_pol_changed, .name = fc_pol_name },
					  fc_diff_ban = { FC_KEY(struct fc_ban_row, p), .key_len = sizeof(struct fc_prefix),
							  FC_VAL(struct fc_ban_row, expires), .name = fc_ban_name },
					  fc_diff_uban = { FC_KEY(struct fc_uid_ban, uid), FC_VAL(struct fc_uid_ban, expires) },
					  fc_diff_set = { FC_KEY(struct fc_io_set, name), .changed = fc_set_changed },
					  fc_diff_node = { FC_KEY(struct fc_node, name), FC_VAL(struct fc_node, weight) },
					  fc_diff_allow = { FC_KEY(struct fc_allow_row, p),
							    .key_len = offsetof(struct fc_allow_row, created),
							    .changed = fc_allow_changed, .name = fc_allow_name };
#undef FC_KEY
#undef FC_VAL
	struct fc_policy_spec *specs = NULL;
	struct fc_store_all all;
	struct fc_diff d[6];
	size_t i, nd = s->has_allows ? 6 : 5;
	json_t *doc;
	int rc = -1;

	if (fc_store_all_read(ctx->db_path, (int64_t)time(NULL), &all, err) < 0)
		return -1;
	fc_diff_init(&d[0], "policy");
	fc_diff_init(&d[1], "ban");
	fc_diff_init(&d[2], "uid-ban");
	fc_diff_init(&d[3], "set");
	fc_diff_init(&d[4], "node");
	fc_diff_init(&d[5], "allow");
	/* The store's policies as specs, to compare with the file's. */
	specs = calloc(all.np ? all.np : 1, sizeof(*specs));
	if (!specs) {
		fc_err_set(err, "out of memory");
		goto out;
	}
	for (i = 0; i < all.np; i++)
		specs[i] = all.pols[i].spec;
	fc_diff_run(&d[0], &fc_diff_policy, specs, all.np, s->pols, s->np);
	fc_diff_run(&d[1], &fc_diff_ban, all.bans, all.nb, s->bans, s->nb);
	fc_diff_run(&d[2], &fc_diff_uban, all.ub, all.nu, s->ubans, s->nu);
	fc_diff_run(&d[3], &fc_diff_set, all.sets, all.ns, s->sets, s->ns);
	fc_diff_run(&d[4], &fc_diff_node, all.nodes, all.nn, s->nodes, s->nn);
	fc_diff_run(&d[5], &fc_diff_allow, all.allows, all.na, s->allows, s->na);
	doc = json_object();
	for (i = 0; i < nd; i++) {
		if (!json)
			fc_diff_print(&d[i]);
		json_object_set_new(doc, d[i].kind, json_pack("{s:o, s:o, s:o}", "added", d[i].added, "changed",
							      d[i].changed, "removed", d[i].removed));
	}
	if (json) {
		fc_json_print(doc);
	} else {
		for (i = 0; i < nd; i++)
			printf("%s%s: %zu added, %zu changed, %zu removed", i ? "; " : "", d[i].kind,
			       json_array_size(d[i].added), json_array_size(d[i].changed), json_array_size(d[i].removed));
		printf(" (dry run: nothing changed)\n");
		json_decref(doc);
	}
	rc = 0;
out:
	free(specs);
	fc_store_all_free(&all);
	return rc;
}

static int fc_import(const struct fc_ctx *ctx, const struct fc_cmd *cmd, int argc, char **argv)
{
	struct fc_import_opt opt = { 0 };
	struct fc_import_set set;
	struct fc_publish pub;
	char note[FC_ERR_LEN];
	struct fc_err err;
	int rc = FC_EXIT_FAILURE;
	size_t i;

	fc_cmd_parse(cmd, argc, argv, &opt, NULL);
	if (opt.json && !opt.dry_run)
		fc_usage_error(cmd, "--json goes with --dry-run");
	if (fc_import_read(argv[optind], &set) < 0)
		goto out;
	if (opt.dry_run) {
		if (fc_import_dry_run(ctx, &set, opt.json, &err) < 0)
			goto fail;
		rc = FC_EXIT_OK;
		goto out;
	}
	if (fc_publish_begin(&pub, ctx, &err) < 0)
		goto fail;
	if (fc_import_apply(&pub, &set, &err) < 0) {
		fc_publish_abort(&pub);
		goto fail;
	}
	if (fc_publish_commit(&pub, &err) < 0)
		goto fail;
	/* A file may hold what the commands take only with --force: said, not refused. */
	for (i = 0; i < set.np; i++)
		if (fc_policy_note(&set.pols[i], note, sizeof(note)))
			fc_warn("import: warning: %s", note);
	printf("imported %zu policies, %zu address bans, %zu uid bans, %zu ban sets, %zu nodes and %zu allow entries "
	       "from %s\n", set.np, set.nb, set.nu, set.ns, set.nn, set.na, argv[optind]);
	rc = FC_EXIT_OK;
	goto out;
fail:
	fc_warn("import %s: %s%s", argv[optind], opt.dry_run ? "" : fc_priv_hint(), err.msg);
out:
	free(set.pols);
	free(set.pidx);
	free(set.bans);
	free(set.ubans);
	fc_io_sets_free(set.sets, set.ns);
	free(set.nodes);
	free(set.allows);
	return rc;
}

const struct fc_cmd fc_cmd_export = {
	.name = "export",
	.min_args = 0,
	.max_args = 0,
	.summary = "Print the store's policies, live bans, ban sets, nodes and allow entries as JSON (what 'freqctl "
		   "import' reads).",
	.details = "{\"freqctl\": 2, \"policies\": [{\"id\", \"match\", \"rates\", \"burst\", \"algo\", \"action\",\n"
		   "\"count\", \"delay_burst\", \"new_sources\", \"escalate\", \"ban_ttl\", \"layer\", \"max_keys\",\n"
		   "\"new_keys\", \"concurrency\", \"warmup\", \"override\"}], \"bans\": [{\"ban\", \"created\",\n"
		   "\"expires\", \"escalated_by_policy\"}], \"sets\": [{\"name\", \"expires\", \"bans\":\n"
		   "[\"ADDR[/LEN]\"]}], \"nodes\": [{\"name\", \"weight\"}], \"allows\": [{\"allow\", \"created\",\n"
		   "\"expires\", \"note\"}]}; times in unix seconds, defaults as null (override: true or false).\n"
		   "\"bans\" are those by hand or escalated; a set carries its own.",
	.opts = fc_opts_none,
	.run = fc_export,
};

const struct fc_cmd fc_cmd_import = {
	.name = "import",
	.args = "FILE",
	.min_args = 1,
	.max_args = 1,
	.summary = "Make the store's policies, bans, ban sets, nodes and allow entries those of FILE (from 'freqctl "
		   "export'), all or nothing.",
	.details = "The whole file is validated first, with the same checks as the commands; any error is\n"
		   "reported with where it is and nothing changes. A policy whose id and match are unchanged\n"
		   "keeps its bucket state and counters. Published to XDP/TC and nginx like any change.\n"
		   "--dry-run prints each change (+ added, ~ changed, - removed) and a summary, and changes\n"
		   "nothing: a store kept in git can be reviewed before it is applied. A file without\n"
		   "\"allows\" (from before allow lists) leaves the store's allow entries as they are.",
	.opts = fc_import_opts,
	.store = FC_STORE_MAKES,
	.run = fc_import,
};
