// SPDX-License-Identifier: BSD-2-Clause
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fc_duration.h"
#include "fc_opt.h"
#include "fc_policy.h"

const char *const fc_algo_names[] = { [FC_ALGO_GCRA] = "gcra", [FC_ALGO_WINDOW] = "window",
				      [FC_ALGO_SLIDING] = "sliding", NULL };
const char *const fc_action_names[] = { [FC_ACTION_DROP] = "drop", [FC_ACTION_LOG] = "log",
					[FC_ACTION_DELAY] = "delay", NULL };
const char *const fc_count_names[] = { [FC_COUNT_PACKETS] = "packets", [FC_COUNT_BYTES] = "bytes",
				       [FC_COUNT_SYN] = "syn", NULL };
const char *const fc_layer_names[] = { [FC_LAYER_AUTO] = "auto", [FC_LAYER_XDP] = "xdp", [FC_LAYER_HTTP] = "http",
				       NULL };

static const struct {
	char unit;
	uint64_t secs;
} fc_rate_units[] = { { 's', 1 }, { 'm', 60 }, { 'h', 3600 }, { 'd', 86400 } };

const char *fc_algo_name(enum fc_algo a)
{
	return fc_algo_names[a];
}

const char *fc_action_name(enum fc_action a)
{
	return fc_action_names[a];
}

const char *fc_count_name(enum fc_count c)
{
	return fc_count_names[c];
}

int fc_algo_parse(const char *s, enum fc_algo *a, struct fc_err *err)
{
	return fc_enum_parse("algo", s, fc_algo_names, (int *)a, err);
}

int fc_action_parse(const char *s, enum fc_action *a, struct fc_err *err)
{
	return fc_enum_parse("action", s, fc_action_names, (int *)a, err);
}

int fc_count_parse(const char *s, enum fc_count *c, struct fc_err *err)
{
	return fc_enum_parse("count", s, fc_count_names, (int *)c, err);
}

static int fc_uint_parse(const char *what, const char *s, uint64_t max, uint64_t *v, struct fc_err *err)
{
	if (fc_decimal(s, max, v) < 0 || *v == 0)
		return fc_err_set(err, "%s \"%s\": expected a whole number from 1 to %llu", what, s,
				  (unsigned long long)max);
	return 0;
}

int fc_policy_id_parse(const char *s, uint32_t *id, struct fc_err *err)
{
	uint64_t v;

	if (fc_uint_parse("policy id", s, FC_POLICY_ID_MAX, &v, err) < 0)
		return -1;
	*id = (uint32_t)v;
	return 0;
}

int fc_rate_parse(const char *s, struct fc_rate *r, bool burst_ok, struct fc_err *err)
{
	const char *slash = strchr(s, '/'), *colon;
	char num[32];
	size_t i, len;
	int rc;

	if (!slash)
		return fc_err_set(err, "rate \"%s\": expected N/UNIT%s, e.g. 100/s or 5000/h", s, burst_ok ? "[:B]" : "");
	/* nginx's spelling, limit_req's rate=5r/m: N requests, the same N. */
	len = (size_t)(slash - s);
	if (len > 1 && s[len - 1] == 'r')
		len--;
	if (len >= sizeof(num))
		return fc_err_set(err, "rate \"%s\": N must be at most %llu", s, (unsigned long long)FC_RATE_MAX);
	memcpy(num, s, len);
	num[len] = '\0';
	rc = fc_decimal(num, FC_RATE_MAX, &r->n);
	if (rc == -2)
		return fc_err_set(err, "rate \"%s\": N must be at most %llu", s, (unsigned long long)FC_RATE_MAX);
	if (rc < 0)
		return fc_err_set(err, "rate \"%s\": N must be a whole number", s);
	if (r->n == 0)
		return fc_err_set(err, "rate \"%s\": N must be at least 1", s);
	r->burst = 0;
	colon = strchr(slash, ':');
	if (colon && !burst_ok)
		return fc_err_set(err, "rate \"%s\": expected N/UNIT (no :B burst here)", s);
	if (colon && (fc_decimal(colon + 1, FC_RATE_MAX, &r->burst) < 0 || r->burst == 0))
		return fc_err_set(err, "rate \"%s\": burst B must be a whole number from 1 to %llu", s,
				  (unsigned long long)FC_RATE_MAX);
	len = colon ? (size_t)(colon - slash) : strlen(slash);
	for (i = 0; i < sizeof(fc_rate_units) / sizeof(fc_rate_units[0]); i++) {
		if (len == 2 && slash[1] == fc_rate_units[i].unit) {
			r->unit_secs = fc_rate_units[i].secs;
			return 0;
		}
	}
	return fc_err_set(err, "rate \"%s\": unit must be one of s, m, h, d", s);
}

uint64_t fc_tier_burst(const struct fc_policy_spec *p, int i)
{
	if (p->rate[i].burst)
		return p->rate[i].burst;
	return i == 0 && p->burst ? p->burst : p->rate[i].n;
}

/* The canonical order of dimensions; names sort within a kind. */
static int fc_dim_cmp(const void *a, const void *b)
{
	const struct fc_dim *x = a, *y = b;

	if (x->kind != y->kind)
		return (int)x->kind - (int)y->kind;
	return strcmp(x->name, y->name);
}

static bool fc_name_ok(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') || *s == '_' ||
		      *s == '-' || *s == '.'))
			return false;
	return true;
}

/* Values are printable ASCII without ',' (it separates dimensions). */
static bool fc_value_ok(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (*s < 0x21 || *s > 0x7e || *s == ',')
			return false;
	return true;
}

/* One length of an ip=* unit, of at most max bits, into *len (0 where it
 * is the default, dflt). */
static int fc_star_len_parse(const char *expr, const char *s, const char *fam, uint64_t max, uint8_t dflt, uint8_t *len,
			     struct fc_err *err)
{
	uint64_t v = UINT64_MAX; /* past 255: out of range */
	int rc = fc_decimal(s, 255, &v);

	if (rc == -1)
		return fc_err_set(err,
				  "match \"%s\": %s length \"%s\": expected a whole number of bits "
				  "(ip=*/V4LEN[/V6LEN], e.g. ip=*/24 or ip=*/32/56)",
				  expr, fam, s);
	if (v < 1 || v > max) {
		/* A single length of 33 to 128 meant for IPv6: the IPv4 one comes first. */
		if (max == 32 && v > 32 && v <= 128)
			return fc_err_set(err,
					  "match \"%s\": IPv4 length /%s: expected 1 to 32; the IPv6 length comes "
					  "second (ip=*/32/%s for a bucket per IPv6 /%s)",
					  expr, s, s, s);
		return fc_err_set(err, "match \"%s\": %s length /%s: expected 1 to %llu", expr, fam, s,
				  (unsigned long long)max);
	}
	*len = v == dflt ? 0 : (uint8_t)v;
	return 0;
}

/* ip=* and its unit (a slash and the IPv4 length after the star, then
 * maybe a slash and the IPv6 one): val is what follows "ip=", a star first. */
static int fc_star_parse(const char *expr, char *val, struct fc_policy_spec *p, struct fc_err *err)
{
	char *v6;

	p->kind = FC_MATCH_STAR;
	p->star_len4 = p->star_len6 = 0;
	if (!val[1])
		return 0;
	v6 = strchr(val + 2, '/');
	if (v6)
		*v6++ = '\0';
	if (val[1] != '/' || (v6 && strchr(v6, '/')))
		return fc_err_set(err,
				  "match \"%s\": expected ip=* or ip=*/V4LEN[/V6LEN], the prefix lengths of its "
				  "buckets (e.g. ip=*/24, ip=*/32/56)",
				  expr);
	if (fc_star_len_parse(expr, val + 2, "IPv4", 32, FC_STAR_LEN4, &p->star_len4, err) < 0)
		return -1;
	return v6 ? fc_star_len_parse(expr, v6, "IPv6", 128, FC_STAR_LEN6, &p->star_len6, err) : 0;
}

void fc_star_unit_format(const struct fc_policy_spec *p, char buf[FC_STAR_UNIT_STRLEN])
{
	char l4[8] = "address", l6[8] = "address";

	if (fc_star_len4(p) != 32)
		snprintf(l4, sizeof(l4), "/%u", fc_star_len4(p));
	if (fc_star_len6(p) != 128)
		snprintf(l6, sizeof(l6), "/%u", fc_star_len6(p));
	snprintf(buf, FC_STAR_UNIT_STRLEN, "IPv4 %s and IPv6 %s", l4, l6);
}

/* Parses one DIM=VALUE of a match. */
static int fc_dim_parse(const char *expr, char *tok, struct fc_policy_spec *p, bool *seen_ip, struct fc_err *err)
{
	char *eq = strchr(tok, '='), *colon, *val;
	struct fc_dim *d;
	char inner[FC_ERR_LEN];
	int i;

	if (!eq)
		return fc_err_set(err, "match \"%s\": \"%s\": expected DIM=VALUE (ip, uid, arg:NAME, header:NAME, uri)",
				  expr, tok);
	*eq = '\0';
	val = eq + 1;
	if (!strcmp(tok, "ip")) {
		if (*seen_ip)
			return fc_err_set(err, "match \"%s\": ip given twice", expr);
		*seen_ip = true;
		if (val[0] == '*' && (!val[1] || val[1] == '/'))
			return fc_star_parse(expr, val, p, err);
		p->kind = FC_MATCH_PREFIX;
		if (fc_prefix_parse_ex(val, &p->ip, true, err) < 0) {
			snprintf(inner, sizeof(inner), "%s", err->msg);
			return fc_err_set(err, "match \"%s\": %s", expr, inner);
		}
		return 0;
	}
	if (p->ndims == FC_SHM_MAX_DIMS)
		return fc_err_set(err, "match \"%s\": at most %d dimensions besides ip", expr, FC_SHM_MAX_DIMS);
	d = &p->dims[p->ndims];
	memset(d, 0, sizeof(*d));
	colon = strchr(tok, ':');
	if (colon)
		*colon = '\0';
	if (!strcmp(tok, "uid") && !colon)
		d->kind = FC_DIM_UID;
	else if (!strcmp(tok, "uri") && !colon)
		d->kind = FC_DIM_URI;
	else if (!strcmp(tok, "arg") && colon)
		d->kind = FC_DIM_ARG;
	else if (!strcmp(tok, "header") && colon)
		d->kind = FC_DIM_HEADER;
	else
		return fc_err_set(err, "match \"%s\": unknown dimension \"%s%s%s\" (expected ip, uid, arg:NAME, "
				       "header:NAME or uri)",
				  expr, tok, colon ? ":" : "", colon ? colon + 1 : "");
	if (colon) {
		if (strlen(colon + 1) > FC_SHM_MAX_NAME || !fc_name_ok(colon + 1))
			return fc_err_set(err, "match \"%s\": %s name \"%s\": expected 1 to %d of A-Z a-z 0-9 _ - .", expr,
					  tok, colon + 1, FC_SHM_MAX_NAME);
		snprintf(d->name, sizeof(d->name), "%s", colon + 1);
		if (d->kind == FC_DIM_HEADER)
			for (i = 0; d->name[i]; i++)
				d->name[i] = (char)(d->name[i] >= 'A' && d->name[i] <= 'Z' ? d->name[i] + 32 : d->name[i]);
	}
	if (strlen(val) > FC_SHM_MAX_VALUE || !fc_value_ok(val))
		return fc_err_set(err, "match \"%s\": value \"%.64s\": expected 1 to %d printable characters, no "
				       "spaces or commas",
				  expr, val, FC_SHM_MAX_VALUE);
	snprintf(d->value, sizeof(d->value), "%s", val);
	for (i = 0; i < p->ndims; i++)
		if (!fc_dim_cmp(&p->dims[i], d))
			return fc_err_set(err, "match \"%s\": %s%s%s given twice", expr, tok, colon ? ":" : "",
					  d->name);
	p->ndims++;
	return 0;
}

int fc_match_parse(const char *s, struct fc_policy_spec *p, struct fc_err *err)
{
	char buf[1024], *tok, *save = NULL;
	bool seen_ip = false;

	p->kind = FC_MATCH_NO_IP;
	p->ndims = 0;
	if (!*s)
		return fc_err_set(err, "match \"\": expected DIM=VALUE[,DIM=VALUE...], e.g. ip=198.18.0.0/15 or "
				       "uid=u1024,arg:api=login");
	if (strlen(s) >= sizeof(buf))
		return fc_err_set(err, "match \"%.32s...\": longer than %zu characters", s, sizeof(buf) - 1);
	snprintf(buf, sizeof(buf), "%s", s);
	if (buf[0] == ',' || buf[strlen(buf) - 1] == ',' || strstr(buf, ",,"))
		return fc_err_set(err, "match \"%s\": empty dimension", s);
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
		if (fc_dim_parse(s, tok, p, &seen_ip, err) < 0)
			return -1;
	qsort(p->dims, (size_t)p->ndims, sizeof(p->dims[0]), fc_dim_cmp);
	return 0;
}

bool fc_policy_is_keyed(const struct fc_policy_spec *p)
{
	int i;

	if (p->kind == FC_MATCH_STAR && fc_policy_is_l7(p))
		return true;
	for (i = 0; i < p->ndims; i++)
		if (!strcmp(p->dims[i].value, "*"))
			return true;
	return false;
}

static char fc_unit_char(uint64_t secs)
{
	size_t i;

	for (i = 0; i < sizeof(fc_rate_units) / sizeof(fc_rate_units[0]); i++)
		if (fc_rate_units[i].secs == secs)
			return fc_rate_units[i].unit;
	return '?';
}

static bool fc_policy_has_tier_burst(const struct fc_policy_spec *p)
{
	int i;

	for (i = 0; i < p->ntiers; i++)
		if (p->rate[i].burst)
			return true;
	return false;
}

int fc_policy_words(const struct fc_policy_spec *p)
{
	return p->ntiers + (p->warmup ? 1 : 0) + (p->concurrency && fc_policy_is_keyed(p) ? 1 : 0);
}

/* A bucket's FC_MAX_TIERS words: the rates', then --warmup's ramp, then (a
 * key's) --concurrency's count. The message names what takes the words. */
static int fc_words_validate(const struct fc_policy_spec *p, struct fc_err *err)
{
	bool conc = p->concurrency && fc_policy_is_keyed(p);
	const char *opts = p->warmup && conc ? "--warmup and --concurrency" : p->warmup ? "--warmup" : "--concurrency";
	int words = fc_policy_words(p);

	if (words <= FC_MAX_TIERS)
		return 0;
	return fc_err_set(err, "%d rates%s%s need %d words in each %sbucket, which has %d (one per rate%s%s): at most %d "
			       "rates with %s%s",
			  p->ntiers, p->warmup && conc ? ", " : " and ", opts, words, conc ? "key's " : "", FC_MAX_TIERS,
			  p->warmup ? ", one for the ramp" : "", conc ? ", one for the count of requests in flight" : "",
			  FC_MAX_TIERS - (words - p->ntiers), opts, conc ? " in a per-key policy" : "");
}

/* --warmup: a GCRA ramp on the first rate, which is the fastest, in a word
 * of the bucket beside the rates'. */
static int fc_warmup_validate(const struct fc_policy_spec *p, struct fc_err *err)
{
	char d[FC_DURATION_STRLEN], one[FC_RATE_STRLEN], other[FC_RATE_STRLEN];
	int i;

	if (!p->warmup)
		return 0;
	fc_duration_format(p->warmup, d);
	if (p->algo != FC_ALGO_GCRA)
		return fc_err_set(err, "--warmup ramps a GCRA rate from N/3 to N; --algo %s admits N per window, with "
				       "no rate to ramp", fc_algo_name(p->algo));
	if ((uint64_t)p->warmup * FC_NS_PER_SEC > FC_WARMUP_MAX_NS)
		return fc_err_set(err, "--warmup %s: expected 1s to 1d", d);
	fc_rate_format(&p->rate[0], one);
	for (i = 1; i < p->ntiers; i++) {
		fc_rate_format(&p->rate[i], other);
		if (p->rate[i].unit_secs < p->rate[0].unit_secs)
			return fc_err_set(err, "--warmup ramps the first rate, %s: give the rate of the shortest unit first "
					       "(%s)", one, other);
	}
	if ((unsigned __int128)fc_tier_burst(p, 0) * p->rate[0].unit_secs * FC_NS_PER_SEC / p->rate[0].n >
	    FC_WARM_TOL_MAX)
		return fc_err_set(err, "rate \"%s\": burst %llu at that rate is more than 36 years of credit, the most "
				       "--warmup ramps", one, (unsigned long long)fc_tier_burst(p, 0));
	return 0;
}

static const char *const fc_dim_names[] = { [FC_DIM_UID] = "uid", [FC_DIM_ARG] = "arg:", [FC_DIM_HEADER] = "header:",
					    [FC_DIM_URI] = "uri" };

/* --fleet: a key's credit replaces its count in the bucket's words, so the
 * policy has one rate and nothing else that takes a word or spends credit
 * on its own (freqctl-policy(7), FLEET). */
static int fc_fleet_validate(const struct fc_policy_spec *p, struct fc_err *err)
{
	char one[FC_RATE_STRLEN];

	if (!p->fleet)
		return 0;
	if (p->concurrency)
		return fc_err_set(err, "--concurrency is refused with --fleet: places in flight are not leasable "
				       "credit, and the key entry has no word left for them");
	if (p->ntiers > 1)
		return fc_err_set(err, "--fleet takes one --rate, and this policy has %d: the entry holds one tier's "
				       "credit, demand and lending words (give the others a policy of their own)",
				  p->ntiers);
	if (p->warmup)
		return fc_err_set(err, "--warmup is refused with --fleet: a ramp is per node, and its word is the "
				       "fleet's lending word");
	if (p->action == FC_ACTION_DELAY)
		return fc_err_set(err, "--action delay is refused with --fleet: shaping would spend credit that a "
				       "node had lent out (use drop or log)");
	if (p->kind == FC_MATCH_STAR && !fc_policy_is_l7(p))
		return fc_err_set(err, "ip=* --fleet is refused at XDP/TC (per-source buckets are evicted by the "
				       "kernel and sources can be spoofed; use --layer http to enforce it per address "
				       "in nginx)");
	fc_rate_format(&p->rate[0], one);
	if (p->algo == FC_ALGO_GCRA && fc_tier_burst(p, 0) > FC_FLEET_BURST_MAX)
		return fc_err_set(err, "rate \"%s\": --fleet --algo gcra takes a burst of at most %llu (the fleet's "
				       "bucket is split into 32-bit shares)", one, (unsigned long long)FC_FLEET_BURST_MAX);
	return 0;
}

int fc_policy_validate(const struct fc_policy_spec *p, struct fc_err *err)
{
	int i;

	if (p->kind == FC_MATCH_NONE)
		return fc_err_set(err, "missing --match (e.g. ip=198.18.0.0/15, ip=*, uid=u1024,arg:api=login)");
	if (!p->ntiers && !p->concurrency)
		return fc_err_set(err, "missing --rate N/UNIT (or --concurrency N in nginx)");
	if (p->concurrency && !fc_policy_is_l7(p))
		return fc_err_set(err, "--concurrency counts requests in flight in nginx; an ip=-only policy runs at "
				       "XDP/TC, on packets (add --layer http to put it in nginx)");
	if (!p->ntiers && p->burst)
		return fc_err_set(err, "--burst applies to a --rate, and the policy has none");
	if (!p->ntiers && p->warmup)
		return fc_err_set(err, "--warmup ramps a --rate from N/3 to N, and the policy has none");
	if (!p->ntiers && p->action == FC_ACTION_DELAY)
		return fc_err_set(err, "action \"delay\" waits a request to a --rate, and the policy has none");
	if (fc_fleet_validate(p, err) < 0 || fc_words_validate(p, err) < 0)
		return -1;
	if (fc_policy_is_l7(p) && p->count != FC_COUNT_PACKETS)
		return fc_err_set(err, "--count %s is for policies at XDP/TC; a policy in nginx counts requests",
				  fc_count_name(p->count));
	if (!fc_policy_is_l7(p) && p->action == FC_ACTION_DELAY)
		return fc_err_set(err, "action \"delay\" shapes HTTP requests in nginx (L7); an ip= policy runs at "
				       "XDP/TC, where the actions are drop and log");
	if (p->delay_burst && p->action != FC_ACTION_DELAY)
		return fc_err_set(err, "--delay-burst applies to --action delay");
	if (!p->escalate.n != !p->ban_ttl)
		return fc_err_set(err, "--escalate N/UNIT and --ban-ttl DURATION go together");
	if (p->escalate.n && !fc_policy_is_l7(p))
		return fc_err_set(err, "--escalate turns refusals in nginx into bans at XDP/TC; an ip= policy already "
				       "runs there");
	if (p->burst && p->rate[0].burst)
		return fc_err_set(err, "the first rate's burst given twice: --burst %llu and --rate %llu/%c:%llu (use "
				       "one)", (unsigned long long)p->burst, (unsigned long long)p->rate[0].n,
				  fc_unit_char(p->rate[0].unit_secs), (unsigned long long)p->rate[0].burst);
	if (p->algo != FC_ALGO_GCRA && (p->burst || fc_policy_has_tier_burst(p)))
		return fc_err_set(err, "a burst (--burst, N/UNIT:B) applies to --algo gcra; --algo %s admits N per "
				       "window", fc_algo_name(p->algo));
	if (p->new_sources && p->kind != FC_MATCH_STAR)
		return fc_err_set(err, "--new-sources applies to the ip=* policy only");
	if (p->layer == FC_LAYER_XDP && p->ndims)
		return fc_err_set(err, "--layer xdp: the match has %s%s, which only nginx sees; leave out --layer",
				  fc_dim_names[p->dims[0].kind], p->dims[0].kind == FC_DIM_ARG ||
				  p->dims[0].kind == FC_DIM_HEADER ? p->dims[0].name : "");
	if ((p->max_keys || p->new_keys) && !fc_policy_is_keyed(p))
		return fc_err_set(err, "--max-keys and --new-keys apply to per-key policies (a DIM=*, or ip=* "
				       "with --layer http)");
	if (p->override && p->action == FC_ACTION_LOG)
		return fc_err_set(err, "--override switches off the policies more general than this one; a dry run "
				       "(--action log) must not change what they enforce");
	if (p->new_sources && fc_policy_is_l7(p))
		return fc_err_set(err, "--new-sources applies to the ip=* policy at XDP/TC only; a per-key policy in "
				       "nginx caps its new keys itself");
	for (i = 0; i < p->ntiers; i++) {
		const struct fc_rate *r = &p->rate[i];
		char one[FC_RATE_STRLEN];

		fc_rate_format(r, one);
		/* A packet costs at least one nanosecond of emission interval. */
		if (p->count != FC_COUNT_BYTES && r->n > r->unit_secs * FC_NS_PER_SEC)
			return fc_err_set(err, "rate \"%s\": more than one %s per nanosecond", one,
					  p->count == FC_COUNT_SYN ? "SYN" : "packet");
		/* A sliding window's counts are 24 bits of its word. */
		if (p->algo == FC_ALGO_SLIDING && r->n > FC_SLIDE_COUNT_MAX)
			return fc_err_set(err, "rate \"%s\": --algo sliding counts at most %llu per window (24 bits "
					       "of a 64-bit word); use gcra or window for more", one,
					  (unsigned long long)FC_SLIDE_COUNT_MAX);
		/* B*T must stay below 2^62 ns (146 years). */
		if ((unsigned __int128)fc_tier_burst(p, i) * r->unit_secs * FC_NS_PER_SEC / r->n > (1ULL << 62))
			return fc_err_set(err, "rate \"%s\": burst %llu at that rate is more than a century of credit",
					  one, (unsigned long long)fc_tier_burst(p, i));
	}
	return fc_warmup_validate(p, err);
}


int fc_names_add(struct fc_names *s, const struct fc_policy_spec *p, struct fc_err *err)
{
	char key[FC_SHM_MAX_NAME + 1];
	size_t i, j, k;
	int rc = 0;
	int d;

	for (d = 0; d < p->ndims && fc_policy_is_l7(p); d++) {
		const struct fc_dim *dm = &p->dims[d];

		if (dm->kind != FC_DIM_ARG && dm->kind != FC_DIM_HEADER)
			continue;
		k = dm->kind == FC_DIM_HEADER;
		for (i = 0; dm->name[i]; i++)
			key[i] = !k && dm->name[i] == '.' ? '_' :
				 k && dm->name[i] == '_'  ? '-' :
							    (char)tolower((unsigned char)dm->name[i]);
		key[i] = '\0';
		for (j = 0; j < s->n[k] && strcmp(s->name[k][j], key); j++)
			;
		if (j < s->n[k])
			continue;
		if (s->n[k] == FC_SHM_MAX_NAMES) {
			rc = fc_err_set(err, "%s:%s: one %s name more than nginx reads (%d across its policies; it would "
					     "leave this one out): key on a name in use, or delete a policy that uses "
					     "another",
					k ? "header" : "arg", dm->name, k ? "header" : "argument", FC_SHM_MAX_NAMES);
			continue;
		}
		memcpy(s->name[k][s->n[k]++], key, i + 1);
	}
	return rc;
}

int fc_policy_validate_new(const struct fc_policy_spec *p, struct fc_err *err)
{
	if (fc_policy_delay_never(p))
		return fc_err_set(err, "--action delay waits requests to a GCRA rate (--algo gcra, the default); --algo %s "
				       "never delays, it denies what is over its window (that is --action drop)",
				  fc_algo_name(p->algo));
	return 0;
}

void fc_policy_zero_what(const struct fc_policy_spec *p, char *buf, size_t len)
{
	char match[FC_MATCH_LEN], rates[FC_TEXT_LEN];
	bool l7 = fc_policy_is_l7(p);

	fc_match_format(p, match);
	fc_rates_format(p, rates);
	snprintf(buf, len, "%s puts every IPv%d %s in one bucket: %s %sfor all of them together%s", match, p->ip.family,
		 l7 ? "client" : "source", p->ntiers ? rates : "its cap", l7 ? "of requests " : "",
		 l7 ? "" : ", SSH and every other service included");
}

void fc_match_format(const struct fc_policy_spec *p, char buf[FC_MATCH_LEN])
{
	char pfx[FC_PREFIX_STRLEN];
	size_t off = 0;
	int i;

	buf[0] = '\0';
	if (p->kind == FC_MATCH_STAR) {
		off += (size_t)snprintf(buf, FC_MATCH_LEN, "ip=*");
		if (p->star_len4 || p->star_len6)
			off += (size_t)snprintf(buf + off, FC_MATCH_LEN - off, "/%u", fc_star_len4(p));
		if (p->star_len6)
			off += (size_t)snprintf(buf + off, FC_MATCH_LEN - off, "/%u", fc_star_len6(p));
	} else if (p->kind == FC_MATCH_PREFIX) {
		fc_prefix_format(&p->ip, pfx);
		off += (size_t)snprintf(buf, FC_MATCH_LEN, "ip=%s", pfx);
	}
	for (i = 0; i < p->ndims && off < FC_MATCH_LEN; i++)
		off += (size_t)snprintf(buf + off, FC_MATCH_LEN - off, "%s%s%s=%s", off ? "," : "",
					fc_dim_names[p->dims[i].kind], p->dims[i].name, p->dims[i].value);
}

void fc_rate_format(const struct fc_rate *r, char buf[FC_RATE_STRLEN])
{
	int n = snprintf(buf, FC_RATE_STRLEN, "%llu/%c", (unsigned long long)r->n, fc_unit_char(r->unit_secs));

	if (r->burst)
		snprintf(buf + n, FC_RATE_STRLEN - (size_t)n, ":%llu", (unsigned long long)r->burst);
}

void fc_rates_format(const struct fc_policy_spec *p, char buf[FC_TEXT_LEN])
{
	char one[FC_RATE_STRLEN];
	size_t off = 0;
	int i;

	buf[0] = '\0';
	for (i = 0; i < p->ntiers; i++) {
		fc_rate_format(&p->rate[i], one);
		off += (size_t)snprintf(buf + off, FC_TEXT_LEN - off, "%s%s", i ? "," : "", one);
	}
}

int fc_rates_parse(const char *s, struct fc_policy_spec *p, struct fc_err *err)
{
	char buf[FC_TEXT_LEN], *tok, *save = NULL;

	/* Cut short, a list could lose a tier and still parse. */
	if (strlen(s) >= sizeof(buf))
		return fc_err_set(err, "rates \"%.32s...\": longer than %zu characters", s, sizeof(buf) - 1);
	snprintf(buf, sizeof(buf), "%s", s);
	p->ntiers = 0;
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (p->ntiers == FC_MAX_TIERS)
			return fc_err_set(err, "rates \"%s\": at most %d", s, FC_MAX_TIERS);
		if (fc_rate_parse(tok, &p->rate[p->ntiers++], true, err) < 0)
			return -1;
	}
	return 0;
}

int fc_weight_parse(const char *s, double *w, struct fc_err *err)
{
	char *end;

	*w = strtod(s, &end);
	if (!*s || *end || !(*w > 0 && *w <= 1))
		return fc_err_set(err, "weight \"%s\": expected a number in (0, 1], e.g. 0.25", s);
	return 0;
}

/* The parsers of the table's match and rate entries: they fill the spec
 * itself (a match sets several fields; a rate appends a tier). */
static int fc_opt_match(const char *text, void *spec, struct fc_err *err)
{
	return fc_match_parse(text, spec, err);
}

static int fc_opt_rate(const char *text, void *spec, struct fc_err *err)
{
	struct fc_policy_spec *p = spec;

	if (p->ntiers == FC_MAX_TIERS)
		return fc_err_set(err, "at most %d rate tiers", FC_MAX_TIERS);
	if (fc_rate_parse(text, &p->rate[p->ntiers], true, err) < 0)
		return -1;
	p->ntiers++;
	return 0;
}

static int fc_opt_escalate(const char *text, void *rate, struct fc_err *err)
{
	return fc_rate_parse(text, rate, false, err);
}

#define FC_POLICY_OPT(name, short_, type, field, ...) \
	FC_OPTION(name, short_, type, struct fc_policy_spec, field, __VA_ARGS__)

const struct fc_opt fc_policy_opts[] = {
	{ .name = "match", .short_name = 'm', .type = FC_OPT_PARSE, .parse = fc_opt_match, .json = "match",
	  .arg = "EXPR", .help = "DIM=VALUE[,...]: ip=ADDR|PREFIX|*, uid=V, arg:NAME=V, header:NAME=V, uri=PATH; "
		  "V * is a bucket per value, uri=/P/* a prefix; ip=* a bucket per IPv4 address and IPv6 /64, "
		  "ip=*/V4LEN[/V6LEN] per other prefixes (ip=*/24, ip=*/32/56, ip=*/32/128)" },
	{ .name = "rate", .short_name = 'r', .type = FC_OPT_PARSE, .parse = fc_opt_rate, .repeat = true,
	  .json = "rates", .arg = "N/UNIT[:B]", .help = "N per UNIT (s, m, h, d; nginx's Nr/s, Nr/m too), GCRA burst B (default N); "
		  "repeat for tiers (at most 4)" },
	FC_POLICY_OPT("burst", 'b', FC_OPT_UINT, burst, .min = 1, .max = FC_RATE_MAX, .json = "burst", .arg = "B",
		      .help = "GCRA: B pass back to back from idle (the first rate's; same as --rate N/UNIT:B)"),
	FC_POLICY_OPT("algo", 'a', FC_OPT_ENUM, algo, .names = fc_algo_names, .json = "algo", .arg = "ALGO",
		      .help = "gcra (default), window (fixed, aligned to UTC) or sliding (window weighted with the last)"),
	FC_POLICY_OPT("action", 0, FC_OPT_ENUM, action, .names = fc_action_names, .json = "action",
		      .arg = "ACTION", .help = "drop (default), log (count, drop nothing), delay (L7, gcra: wait to the rate)"),
	FC_POLICY_OPT("delay-burst", 0, FC_OPT_U32, delay_burst, .min = 1, .max = 1000000, .json = "delay_burst",
		      .arg = "B", .help = "delay: requests that may wait (default 0)"),
	FC_POLICY_OPT("escalate", 0, FC_OPT_PARSE, escalate, .parse = fc_opt_escalate, .json = "escalate",
		      .arg = "N/UNIT", .help = "L7: a client refused more than N times per UNIT is banned at XDP/TC..."),
	FC_POLICY_OPT("ban-ttl", 0, FC_OPT_DURATION, ban_ttl, .json = "ban_ttl", .arg = "DURATION",
		      .help = "... for DURATION (with --escalate)"),
	FC_POLICY_OPT("count", 'c', FC_OPT_ENUM, count, .names = fc_count_names, .json = "count", .arg = "WHAT",
		      .help = "packets (default), bytes, or syn (TCP SYN without ACK)"),
	FC_POLICY_OPT("new-sources", 0, FC_OPT_UINT, new_sources, .min = 1, .max = 100000000, .json = "new_sources",
		      .arg = "N", .help = "ip=* only: new source buckets per second (default 20000)"),
	FC_POLICY_OPT("layer", 0, FC_OPT_ENUM, layer, .names = fc_layer_names, .json = "layer", .arg = "LAYER",
		      .help = "an ip=-only policy: xdp (default: packets, at XDP/TC) or http (requests, in nginx)"),
	FC_POLICY_OPT("max-keys", 0, FC_OPT_U32, max_keys, .min = 1, .max = FC_SHM_KEYS_MAX, .json = "max_keys",
		      .arg = "N", .help = "per-key policies: keys at most; past it, the overflow bucket (default: half the table)"),
	FC_POLICY_OPT("new-keys", 0, FC_OPT_U32, new_keys, .min = 1, .max = 1000000000, .json = "new_keys", .arg = "N",
		      .help = "per-key policies: new keys a second; past it, the overflow bucket (default 10000)"),
	FC_POLICY_OPT("concurrency", 0, FC_OPT_U32, concurrency, .min = 1, .max = FC_CONCURRENCY_MAX,
		      .json = "concurrency", .arg = "N",
		      .help = "L7: at most N requests in flight at once (per key for a DIM=* policy); --rate optional"),
	FC_POLICY_OPT("warmup", 0, FC_OPT_DURATION, warmup, .json = "warmup", .arg = "DURATION",
		      .help = "GCRA: after DURATION idle (1s to 1d), the first rate starts at N/3, without a burst, "
			      "and rises to N over DURATION"),
	FC_POLICY_OPT("override", 0, FC_OPT_FLAG, override, .json = "override",
		      .help = "where it matches, the matching policies more general than it (ip=*, a prefix covering "
			      "its address, uid=* over uid=V, ...) do not apply"),
	FC_POLICY_OPT("show-keys", 0, FC_OPT_YES, show_keys, .json = "show_keys",
		      .help = "per-key policies: keep the values of the busiest and most refused keys beside their "
			      "hashes, for keys, top and the console (see freqctl(8), keys)"),
	FC_POLICY_OPT("no-show-keys", 0, FC_OPT_NO, show_keys,
		      .help = "keep only the hashes of the keys, never their values"),
	FC_POLICY_OPT("fleet", 0, FC_OPT_FLAG, fleet, .json = "fleet",
		      .help = "the rate is the whole fleet's (per key for DIM=*), split over the nodes and leased "
			      "through Redis: one --rate, no --concurrency, --warmup or --action delay"),
	FC_OPT_END,
};
