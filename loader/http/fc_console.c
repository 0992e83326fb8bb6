// SPDX-License-Identifier: BSD-2-Clause
/*
 * The console's HTTP server (libmicrohttpd, one event-driven thread, so a
 * slow client holds nothing but its own connection until it times out) and
 * a sampler thread that keeps the counters of the last minute for rates.
 *
 *   GET  /                        the page (also /console.js, /console.css)
 *   GET  /api/policies            POST /api/policies
 *   GET  /api/policies/ID         PUT, DELETE /api/policies/ID
 *   GET  /api/bans                POST /api/bans
 *   DELETE /api/bans/ADDR[/LEN]|uid=VALUE   (URL-encode the slash: %2F)
 *   GET  /api/allows              POST /api/allows ({"allow", "ttl", "note"})
 *   DELETE /api/allows/ADDR[/LEN]|uid=VALUE
 *   GET  /api/stats               GET /metrics
 *
 * Answers are JSON; an error is {"error": message, "field": key}, with the
 * message the CLI gives for the same input.
 */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/random.h>
#include <sys/stat.h>

#include "fc_allow.h"
#include "fc_change.h"
#include "fc_console.h"
#include "fc_duration.h"
#include "fc_escape.h"
#include "fc_http.h"
#include "fc_rows_json.h"
#include "fc_stats.h"
#include "fc_store_keep.h"
#include "fc_version.h"

#define FC_CONSOLE_BODY_MAX  (64 * 1024) /* a policy or a ban is well under 1 KiB */
#define FC_CONSOLE_SAMPLE_S  10          /* counters kept every 10 s ... */
#define FC_CONSOLE_SAMPLES   8           /* ... for 70 s: rates over the last minute */
#define FC_CONSOLE_KEYS      10          /* busiest keys of per-key policies shown */

/* A policy's counters at one time. */
struct fc_sample_row {
	uint32_t id, epoch;
	uint64_t passed, denied, delayed;
};

struct fc_sample {
	double t; /* CLOCK_MONOTONIC seconds; 0: empty */
	struct fc_sample_row *rows; /* in id order */
	size_t n;
};

struct fc_console {
	struct fc_http http;
	struct fc_ctx ctx;
	const struct fc_agent_counters *counters;
	pthread_t sampler;
	bool sampling;
	pthread_mutex_t lock; /* samples, stop */
	pthread_cond_t wake;
	bool stop;
	struct fc_sample samples[FC_CONSOLE_SAMPLES];
	size_t next;
	struct fc_store_keep keep; /* one store connection for every request (ctx.keep) */
	/* The busiest keys, from one scan of the key table a second however many
	 * pages poll (under lock). */
	struct fc_key_use keys[FC_CONSOLE_KEYS];
	size_t nkeys;
	double keys_t; /* fc_mono() of that scan; 0: none yet */
};

/* One request as it arrives: its body, and who sent it, for the log. */
struct fc_body {
	char *data;
	size_t len;
	bool too_big;
	bool admitted; /* its Host and token were taken */
	char who[96];  /* the peer, and a tag of its token */
};

static double fc_mono(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ---- replies ---- */

static int fc_reply_set(struct fc_reply *r, unsigned int status, char *body, size_t len, const char *type)
{
	r->status = status;
	r->body = body;
	r->len = len;
	r->type = type;
	return 0;
}

/* Answers doc (released here). */
static int fc_reply_json(struct fc_reply *r, unsigned int status, json_t *doc)
{
	char *text = doc ? json_dumps(doc, JSON_COMPACT) : NULL;

	json_decref(doc);
	return fc_reply_set(r, status, text, text ? strlen(text) : 0, "application/json");
}

/* Makes s valid UTF-8 in place, as JSON must be: a message echoes what the
 * client sent, and a cut can split a character. Invalid bytes become '?',
 * a character cut at the end goes. */
static void fc_utf8_fix(char *s)
{
	unsigned char *p = (unsigned char *)s, lo, hi;
	size_t n, i;

	while (*p) {
		n = fc_utf8_lead(*p, &lo, &hi);
		i = 1;
		if (n > 1 && p[1] >= lo && p[1] <= hi)
			for (i = 2; i < n && (p[i] & 0xc0) == 0x80; i++)
				;
		if (n && i == n) {
			p += n;
			continue;
		}
		if (n > 1 && !p[i]) { /* a character cut at the end */
			*p = '\0';
			break;
		}
		*p++ = '?';
	}
}

__attribute__((format(printf, 4, 5)))
static int fc_reply_error(struct fc_reply *r, unsigned int status, const char *field,
				      const char *fmt, ...)
{
	char msg[FC_ERR_LEN + 64], fld[FC_JSON_FIELD_LEN];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	fc_utf8_fix(msg);
	snprintf(fld, sizeof(fld), "%s", field ? field : "");
	fc_utf8_fix(fld);
	return fc_reply_json(r, status, json_pack("{s:s, s:s?}", "error", msg, "field", *fld ? fld : NULL));
}

/* ---- the API ---- */

/* The policy as the API shows it: the export object, plus what the store added. */
static json_t *fc_api_policy(const struct fc_policy_row *r)
{
	char created[FC_TIME_STRLEN], updated[FC_TIME_STRLEN];
	json_t *o = fc_policy_to_json(&r->spec);

	fc_time_format(r->created, created);
	fc_time_format(r->updated, updated);
	if (o) {
		json_object_set_new(o, "layer", json_string(fc_policy_is_l7(&r->spec) ? "nginx" : "xdp"));
		/* What it counts, as the CLI says it: nginx counts requests. */
		if (fc_policy_is_l7(&r->spec))
			json_object_set_new(o, "count", json_string("requests"));
		json_object_set_new(o, "created", json_string(created));
		json_object_set_new(o, "updated", json_string(updated));
	}
	return o;
}

static int fc_api_policy_list(struct fc_console *c, struct fc_reply *r)
{
	struct fc_policy_row *rows = NULL;
	struct fc_store *st;
	struct fc_err err;
	json_t *a;
	size_t n = 0, i;
	int rc;

	if (!(st = fc_store_keep_get(&c->keep, &err)))
		return fc_reply_error(r, MHD_HTTP_SERVICE_UNAVAILABLE, NULL, "%s", err.msg);
	rc = fc_store_policy_list(st, &rows, &n, &err);
	fc_store_keep_put(&c->keep, rc < 0);
	if (rc < 0)
		return fc_reply_error(r, MHD_HTTP_SERVICE_UNAVAILABLE, NULL, "%s", err.msg);
	a = json_array();
	for (i = 0; a && i < n; i++)
		json_array_append_new(a, fc_api_policy(&rows[i]));
	free(rows);
	return fc_reply_json(r, MHD_HTTP_OK, json_pack("{s:o}", "policies", a));
}

static int fc_api_policy_get(struct fc_console *c, struct fc_reply *r, uint32_t id)
{
	struct fc_policy_row row;
	struct fc_store *st;
	struct fc_err err;
	bool found = false;
	int rc;

	if (!(st = fc_store_keep_get(&c->keep, &err)))
		return fc_reply_error(r, MHD_HTTP_SERVICE_UNAVAILABLE, NULL, "%s", err.msg);
	rc = fc_store_policy_get(st, id, &row, &found, &err);
	fc_store_keep_put(&c->keep, rc < 0);
	if (rc < 0)
		return fc_reply_error(r, MHD_HTTP_SERVICE_UNAVAILABLE, NULL, "%s", err.msg);
	if (!found)
		return fc_reply_error(r, MHD_HTTP_NOT_FOUND, NULL, "policy %u: no such policy", id);
	return fc_reply_json(r, MHD_HTTP_OK, fc_api_policy(&row));
}

/* Parses a request body as one JSON object; NULL after replying 400. */
static json_t *fc_api_body(struct fc_reply *r, const struct fc_api_req *b, int *ret)
{
	json_error_t jerr;
	json_t *doc;

	doc = b->len ? json_loadb(b->body, b->len, JSON_REJECT_DUPLICATES, &jerr) : NULL;
	if (!doc)
		*ret = b->len ? fc_reply_error(r, MHD_HTTP_BAD_REQUEST, NULL, "body: line %d, column %d: %s",
					       jerr.line, jerr.column, jerr.text) :
				fc_reply_error(r, MHD_HTTP_BAD_REQUEST, NULL, "body: expected a JSON object");
	else if (!json_is_object(doc)) {
		json_decref(doc);
		doc = NULL;
		*ret = fc_reply_error(r, MHD_HTTP_BAD_REQUEST, NULL, "body: expected a JSON object");
	}
	return doc;
}

/* POST (id 0: from the body, must be new) or PUT (create or replace id). */
static int fc_api_policy_put(struct fc_console *c, struct fc_reply *r, struct fc_api_req *b,
					 uint32_t id)
{
	char field[FC_JSON_FIELD_LEN], where[32] = "";
	struct fc_policy_spec p;
	struct fc_policy_row row;
	int ret;
	struct fc_err err;
	json_t *doc = fc_api_body(r, b, &ret);
	bool found, said, force;
	int rc;

	if (!doc)
		return ret;
	if (id && !json_object_get(doc, "id"))
		json_object_set_new(doc, "id", json_integer(id));
	/* A PUT keeps an ip=-only policy's layer unless the body says one;
	 * "force": true is the CLI's --force (a /0), not a key of the policy. */
	said = json_is_string(json_object_get(doc, "layer"));
	force = json_is_true(json_object_get(doc, "force"));
	json_object_del(doc, "force");
	rc = fc_policy_from_json(doc, &p, field, &err);
	json_decref(doc);
	if (p.id) {
		snprintf(where, sizeof(where), "policy %u: ", p.id);
		snprintf(b->what, sizeof(b->what), "(policy %u)", p.id);
	}
	if (rc < 0)
		return fc_reply_error(r, MHD_HTTP_BAD_REQUEST, field, "%s%s", where, err.msg);
	if (id && p.id != id)
		return fc_reply_error(r, MHD_HTTP_BAD_REQUEST, "id", "policy %u: the body's id is %u", id, p.id);
	rc = fc_change_policy_put(&c->ctx, &p,
				  (id ? FC_PUT_REPLACE : 0) | (said ? FC_PUT_LAYER_SAID : 0) | (force ? FC_PUT_FORCE : 0),
				  &found, &row, &err);
	if (rc == FC_CHANGE_INVALID)
		return fc_reply_error(r, MHD_HTTP_BAD_REQUEST, "match", "%s%s", where, err.msg);
	if (rc == FC_CHANGE_CONFLICT && found && !id)
		return fc_reply_error(r, MHD_HTTP_CONFLICT, "id", "%sexists; PUT /api/policies/%u replaces it", where,
				      p.id);
	if (rc == FC_CHANGE_CONFLICT)
		return fc_reply_error(r, MHD_HTTP_CONFLICT, "match", "%s%s", where, err.msg);
	if (rc)
		return fc_reply_error(r, MHD_HTTP_SERVICE_UNAVAILABLE, NULL, "%s%s", where, err.msg);
	return fc_reply_json(r, found ? MHD_HTTP_OK : MHD_HTTP_CREATED, fc_api_policy(&row));
}

static int fc_api_policy_del(struct fc_console *c, struct fc_reply *r, uint32_t id)
{
	struct fc_err err;
	int rc = fc_change_policy_del(&c->ctx, id, &err);

	if (rc == FC_CHANGE_CONFLICT)
		return fc_reply_error(r, MHD_HTTP_NOT_FOUND, NULL, "policy %u: no such policy", id);
	if (rc)
		return fc_reply_error(r, MHD_HTTP_SERVICE_UNAVAILABLE, NULL, "policy %u: %s", id, err.msg);
	return fc_reply_set(r, MHD_HTTP_NO_CONTENT, strdup(""), 0, "text/plain");
}

static int fc_api_ban_list(struct fc_console *c, struct fc_reply *r)
{
	struct fc_allow_row *allows = NULL;
	struct fc_ban_row *rows = NULL;
	struct fc_uid_ban *ub = NULL;
	struct fc_ban_set *sets = NULL;
	int64_t now = (int64_t)time(NULL);
	size_t n = 0, nu = 0, nsets = 0, na = 0;
	struct fc_store *st;
	struct fc_err err;
	json_t *a = NULL;
	int rc;

	if (!(st = fc_store_keep_get(&c->keep, &err)))
		return fc_reply_error(r, MHD_HTTP_SERVICE_UNAVAILABLE, NULL, "%s", err.msg);
	rc = fc_store_set_list(st, now, &sets, &nsets, &err) < 0 || fc_store_ban_list(st, now, &rows, &n, &err) < 0 ||
			     fc_store_uid_ban_list(st, now, &ub, &nu, &err) < 0 ||
			     fc_store_allow_list(st, now, &allows, &na, &err) < 0 ?
		     -1 :
		     0;
	fc_store_keep_put(&c->keep, rc < 0);
	a = rc < 0 ? NULL : fc_bans_to_json(rows, n, ub, nu, sets, nsets, allows, na, now);
	free(rows);
	free(ub);
	free(sets);
	free(allows);
	if (rc < 0)
		return fc_reply_error(r, MHD_HTTP_SERVICE_UNAVAILABLE, NULL, "%s", err.msg);
	return fc_reply_json(r, MHD_HTTP_OK, json_pack("{s:o}", "bans", a));
}

/* Bans and allow entries, as the API takes them: POST {"KEY": "ADDR[/LEN]" |
 * "uid=VALUE", "ttl": "1h" | seconds | null[, "note": TEXT]}, DELETE by
 * text. */
struct fc_api_entry {
	const char *key;    /* "ban", "allow" */
	const char *verb;   /* for messages: "ban", "allow" */
	const char *absent; /* what a DELETE of a missing one says */
	bool allow;         /* an allow entry: takes a note */
};

static const struct fc_api_entry fc_api_ban = { "ban", "ban", "not banned", false },
				 fc_api_allow = { "allow", "allow", "not allowed", true };

static int fc_api_entry_add(struct fc_console *c, struct fc_reply *r, struct fc_api_req *b, const struct fc_api_entry *k)
{
	char canon[FC_BAN_TEXT_LEN];
	const char *text, *key, *note = "";
	int ret;
	json_t *doc = fc_api_body(r, b, &ret), *ttl, *v;
	struct fc_err err;
	int64_t secs = 0, was = -1;
	bool existed;
	int rc;

	if (!doc)
		return ret;
	json_object_foreach(doc, key, v) {
		if (strcmp(key, k->key) && strcmp(key, "ttl") && (!k->allow || strcmp(key, "note")) &&
		    (k->allow || strcmp(key, "force"))) {
			ret = fc_reply_error(r, MHD_HTTP_BAD_REQUEST, key, "unknown key \"%.64s\"", key);
			goto out;
		}
	}
	text = json_string_value(json_object_get(doc, k->key));
	ttl = json_object_get(doc, "ttl");
	v = json_object_get(doc, "force");
	if (v && !json_is_boolean(v)) {
		ret = fc_reply_error(r, MHD_HTTP_BAD_REQUEST, "force", "force: expected true or false");
		goto out;
	}
	v = json_object_get(doc, "note");
	if (!text) {
		ret = fc_reply_error(r, MHD_HTTP_BAD_REQUEST, k->key, "%s: expected \"ADDR[/LEN]\" or \"uid=VALUE\"",
				     k->key);
		goto out;
	}
	if (v && !json_is_null(v) && !json_is_string(v)) {
		ret = fc_reply_error(r, MHD_HTTP_BAD_REQUEST, "note", "note: expected a string or null");
		goto out;
	}
	if (json_is_string(v))
		note = json_string_value(v);
	if (k->allow && fc_allow_note_check(note, &err) < 0) {
		ret = fc_reply_error(r, MHD_HTTP_BAD_REQUEST, "note", "%s", err.msg);
		goto out;
	}
	if (json_is_string(ttl) && fc_duration_parse(json_string_value(ttl), &secs, &err) < 0) {
		ret = fc_reply_error(r, MHD_HTTP_BAD_REQUEST, "ttl", "ttl: %s", err.msg);
		goto out;
	}
	if (json_is_integer(ttl))
		secs = json_integer_value(ttl);
	if (ttl && !json_is_null(ttl) && !json_is_string(ttl) && !(json_is_integer(ttl) && secs > 0 &&
								    secs <= FC_DURATION_MAX)) {
		ret = fc_reply_error(r, MHD_HTTP_BAD_REQUEST, "ttl", "ttl: expected a duration (\"1h\"), seconds or null");
		goto out;
	}
	/* "force": true is the CLI's --force: a ban that cuts a live one short. */
	rc = k->allow ? fc_change_allow_put(&c->ctx, text, secs, note, canon, &existed, &err) :
			fc_change_ban_put(&c->ctx, text, secs, json_is_true(json_object_get(doc, "force")), canon, &was,
					  &err);
	if (!k->allow)
		existed = was >= 0;
	snprintf(b->what, sizeof(b->what), "(%s %.64s)", k->verb, rc == FC_CHANGE_INVALID ? "?" : canon);
	if (rc == FC_CHANGE_INVALID)
		ret = fc_reply_error(r, MHD_HTTP_BAD_REQUEST, k->key, "%s", err.msg);
	else if (rc == FC_CHANGE_CONFLICT)
		ret = fc_reply_error(r, MHD_HTTP_CONFLICT, "ttl", "%s add %s: %s", k->verb, canon, err.msg);
	else if (rc)
		ret = fc_reply_error(r, MHD_HTTP_SERVICE_UNAVAILABLE, NULL, "%s add %s: %s", k->verb, canon, err.msg);
	else
		ret = fc_reply_json(r, existed ? MHD_HTTP_OK : MHD_HTTP_CREATED,
				    json_pack("{s:s, s:o}", k->key, canon, "ttl", secs ? json_integer(secs) : json_null()));
out:
	json_decref(doc);
	return ret;
}

static int fc_api_entry_del(struct fc_console *c, struct fc_reply *r, const char *text, const struct fc_api_entry *k)
{
	char canon[FC_BAN_TEXT_LEN], held[FC_SETS_TEXT_LEN];
	struct fc_err err;
	int rc = k->allow ? fc_change_allow_del(&c->ctx, text, canon, &err) :
			    fc_change_ban_del(&c->ctx, text, canon, held, &err);

	if (rc == FC_CHANGE_INVALID)
		return fc_reply_error(r, MHD_HTTP_BAD_REQUEST, k->key, "%s", err.msg);
	if (rc == FC_CHANGE_CONFLICT)
		return fc_reply_error(r, MHD_HTTP_NOT_FOUND, NULL, "%s del %s: %s", k->verb, canon,
				      k->allow ? k->absent : err.msg);
	if (rc)
		return fc_reply_error(r, MHD_HTTP_SERVICE_UNAVAILABLE, NULL, "%s del %s: %s", k->verb, canon, err.msg);
	return fc_reply_set(r, MHD_HTTP_NO_CONTENT, strdup(""), 0, "text/plain");
}

static int fc_api_allow_list(struct fc_console *c, struct fc_reply *r)
{
	struct fc_allow_row *rows = NULL;
	int64_t now = (int64_t)time(NULL);
	size_t n = 0, i;
	struct fc_store *st;
	struct fc_err err;
	json_t *a;
	int rc;

	if (!(st = fc_store_keep_get(&c->keep, &err)))
		return fc_reply_error(r, MHD_HTTP_SERVICE_UNAVAILABLE, NULL, "%s", err.msg);
	rc = fc_store_allow_list(st, now, &rows, &n, &err);
	fc_store_keep_put(&c->keep, rc < 0);
	if (rc < 0)
		return fc_reply_error(r, MHD_HTTP_SERVICE_UNAVAILABLE, NULL, "%s", err.msg);
	a = json_array();
	for (i = 0; a && i < n; i++)
		json_array_append_new(a, fc_allow_to_json(&rows[i], now));
	free(rows);
	return fc_reply_json(r, MHD_HTTP_OK, json_pack("{s:o}", "allows", a));
}

/* ---- counters ---- */

static int fc_sample_take(const struct fc_ctx *ctx, struct fc_sample *s, struct fc_stats_all *a, struct fc_err *err)
{
	size_t i;

	if (fc_stats_gather(ctx, a, err) < 0)
		return -1;
	s->t = fc_mono();
	s->n = a->n;
	s->rows = calloc(a->n ? a->n : 1, sizeof(*s->rows));
	if (!s->rows) {
		fc_stats_free(a);
		return fc_err_set(err, "out of memory");
	}
	for (i = 0; i < a->n; i++)
		s->rows[i] = (struct fc_sample_row){ a->ps[i].row->spec.id, a->ps[i].row->epoch,
						     a->ps[i].ps.passed.packets, a->ps[i].ps.dropped.packets,
						     a->ps[i].delayed };
	return 0;
}

static void *fc_sampler(void *arg)
{
	struct fc_console *c = arg;
	struct fc_stats_all a;
	struct fc_sample s;
	struct timespec until;
	struct fc_err err;

	pthread_mutex_lock(&c->lock);
	while (!c->stop) {
		pthread_mutex_unlock(&c->lock);
		if (fc_sample_take(&c->ctx, &s, &a, &err) == 0) {
			fc_stats_free(&a);
			pthread_mutex_lock(&c->lock);
			free(c->samples[c->next].rows);
			c->samples[c->next] = s;
			c->next = (c->next + 1) % FC_CONSOLE_SAMPLES;
		} else {
			pthread_mutex_lock(&c->lock); /* the store is away: try again next time */
		}
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_sec += FC_CONSOLE_SAMPLE_S;
		while (!c->stop && pthread_cond_timedwait(&c->wake, &c->lock, &until) != ETIMEDOUT)
			;
	}
	pthread_mutex_unlock(&c->lock);
	return NULL;
}

/* The youngest sample at least a minute old; else the oldest there is. */
static const struct fc_sample *fc_sample_minute_ago(const struct fc_console *c, double now)
{
	const struct fc_sample *aged = NULL, *oldest = NULL;
	size_t i;

	for (i = 0; i < FC_CONSOLE_SAMPLES; i++) {
		const struct fc_sample *s = &c->samples[i];

		if (!s->t)
			continue;
		if (now - s->t >= 60 && (!aged || s->t > aged->t))
			aged = s;
		if (!oldest || s->t < oldest->t)
			oldest = s;
	}
	return aged ? aged : oldest;
}

static const struct fc_sample_row *fc_sample_find(const struct fc_sample *s, uint32_t id, uint32_t epoch)
{
	size_t lo = 0, hi = s ? s->n : 0;

	while (lo < hi) { /* rows are in id order */
		size_t mid = (lo + hi) / 2;

		if (s->rows[mid].id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return s && lo < s->n && s->rows[lo].id == id && s->rows[lo].epoch == epoch ? &s->rows[lo] : NULL;
}

static double fc_per_s(uint64_t now, uint64_t then, double dt)
{
	return now >= then && dt > 0 ? (double)(now - then) / dt : 0;
}

static int fc_api_stats(struct fc_console *c, struct fc_reply *r)
{
	char stamp[FC_TIME_STRLEN], match[FC_MATCH_LEN];
	const struct fc_sample *old;
	struct fc_key_use keys[FC_CONSOLE_KEYS];
	struct fc_stats_all a;
	struct fc_sample cur;
	struct fc_err err;
	json_t *pols, *doc;
	size_t i, nkeys;
	double dt;

	if (fc_sample_take(&c->ctx, &cur, &a, &err) < 0)
		return fc_reply_error(r, MHD_HTTP_SERVICE_UNAVAILABLE, NULL, "%s", err.msg);
	pthread_mutex_lock(&c->lock);
	if (!c->keys_t || cur.t - c->keys_t >= 1.0) {
		if (fc_stats_busiest_keys(&c->ctx, &a, fc_utc_ns(), c->keys, FC_CONSOLE_KEYS, &c->nkeys, &err) < 0)
			c->nkeys = 0; /* out of memory: the counters are still worth showing */
		c->keys_t = cur.t;
	}
	nkeys = c->nkeys;
	memcpy(keys, c->keys, nkeys * sizeof(*keys));
	pthread_mutex_unlock(&c->lock);
	pols = json_array();
	pthread_mutex_lock(&c->lock);
	old = fc_sample_minute_ago(c, cur.t);
	dt = old ? cur.t - old->t : 0;
	for (i = 0; pols && i < a.n; i++) {
		const struct fc_policy_spec *p = &a.ps[i].row->spec;
		const struct fc_sample_row *now = &cur.rows[i], *o = fc_sample_find(old, now->id, now->epoch);
		json_t *minute = json_null();

		if (o)
			minute = json_pack("{s:f, s:f, s:f, s:f}", "seconds", dt, "passed_per_s",
					   fc_per_s(now->passed, o->passed, dt), "denied_per_s",
					   fc_per_s(now->denied, o->denied, dt), "delayed_per_s",
					   fc_per_s(now->delayed, o->delayed, dt));
		fc_match_format(p, match);
		/* inflight: requests in flight now under its --concurrency cap (null: none);
		 * fleet: the fleet's use and this node's credit (null: not a fleet policy
		 * the agent reports). */
		json_array_append_new(pols, json_pack("{s:I, s:s, s:s, s:s, s:I, s:I, s:I, s:o, s:o, s:o}", "id",
						      (json_int_t)p->id, "match", match, "layer",
						      fc_policy_is_l7(p) ? "nginx" : "xdp", "action", fc_action_name(p->action),
						      "passed", fc_json_count(now->passed), "denied", fc_json_count(now->denied),
						      "delayed", fc_json_count(now->delayed), "inflight",
						      p->concurrency ? json_integer(fc_json_count(a.ps[i].inflight)) : json_null(),
						      "last_minute", minute, "fleet",
						      fc_fleet_policy_json(fc_fleet_file_policy(&a.fleet, p->id))));
	}
	pthread_mutex_unlock(&c->lock);
	fc_time_format((int64_t)time(NULL), stamp);
	doc = json_pack("{s:s, s:s, s:s, s:{s:I, s:I, s:I}, s:{s:I, s:I, s:I, s:I}, s:{s:I, s:I, s:I, s:I}, s:o, s:o, "
			"s:o}",
			"time", stamp, "version", FC_VERSION, "node", c->ctx.node, "nginx", "allowed",
			fc_json_count(a.nginx_allowed), "banned_uid", fc_json_count(a.nginx_banned_uid),
			"banned_address", fc_json_count(a.nginx_banned_addr), "xdp", "passed",
			fc_json_count(a.s.passed.packets), "dropped_exact", fc_json_count(a.s.drop_exact.packets),
			"dropped_prefix", fc_json_count(a.s.drop_prefix.packets), "dropped_limit",
			fc_json_count(a.s.drop_limit.packets), "bans", "addresses", (json_int_t)a.bans.addresses,
			"escalated", (json_int_t)a.bans.escalated, "uids", (json_int_t)a.bans.uids, "in_sets",
			(json_int_t)a.bans.in_sets, "policies", pols, "keys", fc_key_uses_to_json(keys, nkeys),
			"ban_sources", fc_ban_sources_to_json(&a));
	/* The fleet panel: the agent's status as it wrote it (null: none). */
	json_object_set(doc, "fleet", a.fleet.doc ? a.fleet.doc : json_null());
	free(cur.rows);
	fc_stats_free(&a);
	return fc_reply_json(r, MHD_HTTP_OK, doc);
}

static int fc_metrics_text(struct fc_console *c, struct fc_reply *r)
{
	char *body = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&body, &len);

	if (f) {
		fc_metrics_write(f, &c->ctx, c->counters);
		if (fclose(f)) {
			free(body);
			body = NULL; /* out of memory: the connection is dropped */
		}
	}
	return fc_reply_set(r, MHD_HTTP_OK, body, len, "text/plain; version=0.0.4");
}

/* ---- routing ---- */

static int fc_not_allowed(struct fc_reply *r, const char *allow)
{
	return fc_reply_error(r, MHD_HTTP_METHOD_NOT_ALLOWED, NULL, "method not allowed here; allowed: %s", allow);
}

int fc_console_api(struct fc_console *c, struct fc_api_req *b, struct fc_reply *r)
{
	const char *url = b->url, *m = b->method;
	bool get = !strcmp(m, "GET"), post = !strcmp(m, "POST"), put = !strcmp(m, "PUT"), del = !strcmp(m, "DELETE");
	struct fc_err err;
	uint32_t id;

	if (!strcmp(url, "/metrics"))
		return get ? fc_metrics_text(c, r) : fc_not_allowed(r, "GET");
	if (!strcmp(url, "/api/stats"))
		return get ? fc_api_stats(c, r) : fc_not_allowed(r, "GET");
	if (!strcmp(url, "/api/policies"))
		return get ? fc_api_policy_list(c, r) : post ? fc_api_policy_put(c, r, b, 0) :
		       fc_not_allowed(r, "GET, POST");
	if (!strncmp(url, "/api/policies/", 14)) {
		if (fc_policy_id_parse(url + 14, &id, &err) < 0)
			return fc_reply_error(r, MHD_HTTP_BAD_REQUEST, "id", "%s", err.msg);
		return get ? fc_api_policy_get(c, r, id) : put ? fc_api_policy_put(c, r, b, id) :
		       del ? fc_api_policy_del(c, r, id) : fc_not_allowed(r, "GET, PUT, DELETE");
	}
	if (!strcmp(url, "/api/bans"))
		return get ? fc_api_ban_list(c, r) : post ? fc_api_entry_add(c, r, b, &fc_api_ban) :
		       fc_not_allowed(r, "GET, POST");
	if (!strncmp(url, "/api/bans/", 10))
		return del ? fc_api_entry_del(c, r, url + 10, &fc_api_ban) : fc_not_allowed(r, "DELETE");
	if (!strcmp(url, "/api/allows"))
		return get ? fc_api_allow_list(c, r) : post ? fc_api_entry_add(c, r, b, &fc_api_allow) :
		       fc_not_allowed(r, "GET, POST");
	if (!strncmp(url, "/api/allows/", 12))
		return del ? fc_api_entry_del(c, r, url + 12, &fc_api_allow) : fc_not_allowed(r, "DELETE");
	return fc_reply_error(r, MHD_HTTP_NOT_FOUND, NULL, "%.200s: no such resource", url);
}

static enum MHD_Result fc_reply_page(struct MHD_Connection *conn, const struct fc_console_file *f)
{
	struct MHD_Response *r = fc_mhd.MHD_create_response_from_buffer(strlen(f->data), (void *)f->data,
								 MHD_RESPMEM_PERSISTENT);
	enum MHD_Result ret;

	if (!r)
		return MHD_NO;
	fc_mhd.MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, f->type);
	fc_mhd.MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
	fc_mhd.MHD_add_response_header(r, "X-Frame-Options", "DENY");
	fc_mhd.MHD_add_response_header(r, "Referrer-Policy", "no-referrer");
	/* No inline code, nothing from elsewhere. */
	fc_mhd.MHD_add_response_header(r, "Content-Security-Policy",
				"default-src 'self'; img-src 'self' data:; frame-ancestors 'none'; form-action 'none'");
	ret = fc_mhd.MHD_queue_response(conn, MHD_HTTP_OK, r);
	fc_mhd.MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result fc_send(struct MHD_Connection *conn, struct fc_reply *r)
{
	return fc_http_reply(conn, r->status, r->body, r->len, r->type);
}

static enum MHD_Result fc_console_handle(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
					 const char *version, const char *upload, size_t *upload_size, void **req)
{
	struct fc_console *c = cls;
	struct fc_body *b = *req;
	struct fc_api_req q;
	struct fc_reply r;
	unsigned refused;
	const char *cl;
	size_t i;

	(void)version;
	if (!b) { /* the headers are in: decide what can be decided before the body */
		bool api = !strncmp(url, "/api/", 5) || !strcmp(url, "/metrics");

		b = calloc(1, sizeof(*b));
		if (!b)
			return MHD_NO;
		*req = b;
		refused = fc_http_admit(&c->http, conn, api, b->who, sizeof(b->who));
		if (refused == MHD_HTTP_FORBIDDEN)
			fc_reply_error(&r, refused, NULL, "Host: not this server (see agent --http-host)");
		else if (refused)
			fc_reply_error(&r, refused, NULL,
				       "missing or wrong \"Authorization: Bearer TOKEN\" (freqctl console-token)");
		if (refused)
			return fc_send(conn, &r);
		if (!api) {
			for (i = 0; i < fc_console_nfiles; i++)
				if (!strcmp(url, fc_console_files[i].path)) {
					if (!strcmp(method, "GET") || !strcmp(method, "HEAD"))
						return fc_reply_page(conn, &fc_console_files[i]);
					fc_not_allowed(&r, "GET");
					return fc_send(conn, &r);
				}
			fc_reply_error(&r, MHD_HTTP_NOT_FOUND, NULL, "%.200s: no such page", url);
			return fc_send(conn, &r);
		}
		cl = fc_mhd.MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
		if (cl && strtoull(cl, NULL, 10) > FC_CONSOLE_BODY_MAX) {
			fc_reply_error(&r, MHD_HTTP_CONTENT_TOO_LARGE, NULL, "body: more than %d bytes",
				       FC_CONSOLE_BODY_MAX);
			return fc_send(conn, &r);
		}
		b->admitted = true;
		return MHD_YES;
	}
	if (!b->admitted)
		return MHD_NO; /* refused above: the client sends on regardless */
	if (*upload_size) { /* a piece of the body */
		if (!b->too_big && b->len + *upload_size <= FC_CONSOLE_BODY_MAX) {
			char *nd = realloc(b->data, b->len + *upload_size);

			if (!nd)
				return MHD_NO;
			memcpy(nd + b->len, upload, *upload_size);
			b->data = nd;
			b->len += *upload_size;
		} else {
			b->too_big = true; /* chunked, without a length: read it, then refuse */
		}
		*upload_size = 0;
		return MHD_YES;
	}
	if (b->too_big) {
		fc_reply_error(&r, MHD_HTTP_CONTENT_TOO_LARGE, NULL, "body: more than %d bytes", FC_CONSOLE_BODY_MAX);
		return fc_send(conn, &r);
	}
	q = (struct fc_api_req){ .method = method, .url = url, .body = b->data, .len = b->len };
	fc_console_api(c, &q, &r);
	/* Every write, who and what and how it ended. */
	if (strcmp(method, "GET") && strcmp(method, "HEAD") && c->http.conf->log)
		c->http.conf->log("console: %s: %s %.200s%s%s -> %u", b->who, method, url, q.what[0] ? " " : "",
				  q.what, r.status);
	return fc_send(conn, &r);
}

static void fc_console_done(void *cls, struct MHD_Connection *conn, void **req, enum MHD_RequestTerminationCode why)
{
	struct fc_body *b = *req;

	(void)cls;
	(void)conn;
	(void)why;
	if (b) {
		free(b->data);
		free(b);
		*req = NULL;
	}
}

struct fc_console *fc_console_new(const struct fc_ctx *ctx, const struct fc_agent_counters *counters,
				  struct fc_err *err)
{
	struct fc_console *c = calloc(1, sizeof(*c));

	if (!c) {
		fc_err_set(err, "out of memory");
		return NULL;
	}
	c->ctx = *ctx;
	c->ctx.store_must_exist = true; /* a console never makes a store */
	fc_store_keep_init(&c->keep, c->ctx.db_path, false);
	c->ctx.keep = &c->keep;
	c->counters = counters;
	pthread_mutex_init(&c->lock, NULL);
	pthread_cond_init(&c->wake, NULL);
	return c;
}

struct fc_console *fc_console_start(const struct sockaddr_storage *sa, const struct fc_http_conf *conf,
				    const struct fc_ctx *ctx, const struct fc_agent_counters *counters,
				    struct fc_err *err)
{
	struct fc_console *c = fc_console_new(ctx, counters, err);

	if (!c)
		return NULL;
	if (fc_http_start(&c->http, sa, conf, fc_console_handle, c, fc_console_done, err) < 0)
		goto fail;
	if (pthread_create(&c->sampler, NULL, fc_sampler, c)) {
		fc_err_set(err, "cannot start the sampler thread");
		goto fail;
	}
	c->sampling = true;
	return c;
fail:
	fc_console_stop(c);
	return NULL;
}

void fc_console_stop(struct fc_console *c)
{
	size_t i;

	if (!c)
		return;
	fc_http_stop(&c->http);
	if (c->sampling) {
		pthread_mutex_lock(&c->lock);
		c->stop = true;
		pthread_cond_signal(&c->wake);
		pthread_mutex_unlock(&c->lock);
		pthread_join(c->sampler, NULL);
	}
	for (i = 0; i < FC_CONSOLE_SAMPLES; i++)
		free(c->samples[i].rows);
	pthread_cond_destroy(&c->wake);
	pthread_mutex_destroy(&c->lock);
	fc_store_keep_fini(&c->keep);
	free(c);
}
