// SPDX-License-Identifier: BSD-2-Clause
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <jansson.h>

#include "fc_rows_json.h"
#include "fc_shm_state.h"
#include "fc_shm_write.h"
#include "fc_stats.h"
#include "fc_store_keep.h"
#include "fc_topn.h"
#include "fc_version.h"

/* The counters of struct fc_stats, in display order. */
const struct fc_stat_row fc_stat_rows[] = {
	{ "passed", "passed", offsetof(struct fc_stats, passed) },
	{ "dropped_exact", "dropped: exact ban", offsetof(struct fc_stats, drop_exact) },
	{ "dropped_prefix", "dropped: prefix ban", offsetof(struct fc_stats, drop_prefix) },
	{ "dropped_limit", "dropped: rate limit", offsetof(struct fc_stats, drop_limit) },
	{ "dropped_vlan", "dropped: VLAN tags", offsetof(struct fc_stats, drop_tagged) },
	{ "source_overflow", "ip=* overflow bucket", offsetof(struct fc_stats, src_overflow) },
	{ "passed_non_ip", "passed: not IP", offsetof(struct fc_stats, non_ip) },
	{ "passed_malformed", "passed: malformed", offsetof(struct fc_stats, malformed) },
	{ "passed_allowed", "passed: allowed", offsetof(struct fc_stats, allowed) },
};

const size_t fc_nstat_rows = sizeof(fc_stat_rows) / sizeof(fc_stat_rows[0]);

const struct fc_counter *fc_stat_at(const struct fc_stats *s, size_t row)
{
	return (const struct fc_counter *)((const char *)s + fc_stat_rows[row].off);
}

/* Label value escaping, for a policy's match. */
static void fc_label_escape(const char *in, char *out, size_t len)
{
	size_t j, k;

	for (j = 0, k = 0; in[j] && k + 2 < len; j++) {
		if (in[j] == '"' || in[j] == '\\')
			out[k++] = '\\';
		out[k++] = in[j];
	}
	out[k] = '\0';
}

/* The policies with a concurrency cap: places held now, the cap, refusals by it. */
static void fc_stats_prometheus_conc(FILE *f, const struct fc_policy_stats *ps, size_t n)
{
	static const struct {
		const char *name, *help;
	} fam[] = {
		{ "freqctl_policy_inflight gauge", "Requests in flight now under a policy's --concurrency cap (every key's)." },
		{ "freqctl_policy_concurrency_limit gauge", "A policy's --concurrency cap (per key for a per-key policy)." },
		{ "freqctl_policy_concurrency_denied_total counter",
		  "Requests refused by a policy's --concurrency cap (also in freqctl_policy_total's dropped)." },
	};
	char match[FC_MATCH_LEN], esc[2 * FC_MATCH_LEN];
	bool any = false;
	size_t i, k, len;
	uint64_t v;

	for (i = 0; i < n; i++)
		any = any || ps[i].enforced.concurrency;
	for (k = 0; any && k < sizeof(fam) / sizeof(fam[0]); k++) {
		len = strcspn(fam[k].name, " ");
		fprintf(f, "# HELP %.*s %s\n# TYPE %s\n", (int)len, fam[k].name, fam[k].help, fam[k].name);
		for (i = 0; i < n; i++) {
			const struct fc_policy_spec *p = &ps[i].row->spec;

			if (!p->concurrency)
				continue;
			v = k == 0 ? ps[i].inflight : k == 1 ? ps[i].enforced.concurrency : ps[i].conc_denied;
			fc_match_format(p, match);
			fc_label_escape(match, esc, sizeof(esc));
			fprintf(f, "%.*s{policy=\"%u\",match=\"%s\"} %llu\n", (int)len, fam[k].name, p->id, esc,
				(unsigned long long)v);
		}
	}
}

/* The same numbers for Prometheus: one family per counter kind, labelled. */
static void fc_stats_prometheus(FILE *f, const struct fc_stats_all *a)
{
	const struct fc_stats *s = &a->s;
	const struct fc_policy_stats *ps = a->ps;
	size_t n = a->n;
	char match[FC_MATCH_LEN], esc[2 * FC_MATCH_LEN];
	const struct fc_counter *cnt;
	size_t i;

	fputs("# HELP freqctl_packets_total Packets seen by freqctl's XDP/TC programs, by verdict.\n"
	      "# TYPE freqctl_packets_total counter\n",
	      f);
	for (i = 0; i < fc_nstat_rows; i++)
		if (fc_stat_rows[i].off != offsetof(struct fc_stats, src_overflow))
			fprintf(f, "freqctl_packets_total{verdict=\"%s\"} %llu\n", fc_stat_rows[i].key,
			       (unsigned long long)fc_stat_at(s, i)->packets);
	fputs("# HELP freqctl_bytes_total Bytes seen by freqctl's XDP/TC programs, by verdict.\n"
	      "# TYPE freqctl_bytes_total counter\n",
	      f);
	for (i = 0; i < fc_nstat_rows; i++)
		if (fc_stat_rows[i].off != offsetof(struct fc_stats, src_overflow))
			fprintf(f, "freqctl_bytes_total{verdict=\"%s\"} %llu\n", fc_stat_rows[i].key,
			       (unsigned long long)fc_stat_at(s, i)->bytes);
	/* Not a verdict: these packets also passed or were dropped. */
	fprintf(f, "# HELP freqctl_source_overflow_packets_total Packets of new ip=* sources past the cap, charged to "
	       "the shared overflow bucket.\n# TYPE freqctl_source_overflow_packets_total counter\n"
	       "freqctl_source_overflow_packets_total %llu\n",
	       (unsigned long long)s->src_overflow.packets);
	fprintf(f,
		"# HELP freqctl_nginx_allowed_total Requests nginx let through because an allow entry covers "
		"their address or uid.\n# TYPE freqctl_nginx_allowed_total counter\nfreqctl_nginx_allowed_total %llu\n",
		(unsigned long long)a->nginx_allowed);
	fprintf(f,
		"# HELP freqctl_nginx_banned_total Requests nginx refused because a ban covers their uid or address.\n"
		"# TYPE freqctl_nginx_banned_total counter\nfreqctl_nginx_banned_total{kind=\"uid\"} %llu\n"
		"freqctl_nginx_banned_total{kind=\"address\"} %llu\n",
		(unsigned long long)a->nginx_banned_uid, (unsigned long long)a->nginx_banned_addr);
	fprintf(f,
		"# HELP freqctl_offender_reports_lost_total Offender reports of nginx the agent could not read: "
		"overwritten before it read them, or never finished (a worker killed while writing one).\n"
		"# TYPE freqctl_offender_reports_lost_total counter\nfreqctl_offender_reports_lost_total %llu\n",
		(unsigned long long)a->ring_lost);
	fputs("# HELP freqctl_policy_total Packets (layer xdp) or requests (layer nginx) per policy and outcome.\n"
	      "# TYPE freqctl_policy_total counter\n",
	      f);
	for (i = 0; i < n; i++) {
		const struct fc_policy_spec *p = &ps[i].row->spec;
		const char *layer = fc_policy_is_l7(p) ? "nginx" : "xdp";

		fc_match_format(p, match);
		fc_label_escape(match, esc, sizeof(esc));
		cnt = &ps[i].ps.passed;
		fprintf(f, "freqctl_policy_total{policy=\"%u\",match=\"%s\",layer=\"%s\",outcome=\"passed\"} %llu\n", p->id,
		       esc, layer, (unsigned long long)cnt->packets);
		fprintf(f, "freqctl_policy_total{policy=\"%u\",match=\"%s\",layer=\"%s\",outcome=\"%s\"} %llu\n", p->id, esc,
		       layer, p->action == FC_ACTION_LOG ? "would_drop" : "dropped",
		       (unsigned long long)ps[i].ps.dropped.packets);
		if (p->action == FC_ACTION_DELAY)
			fprintf(f, "freqctl_policy_total{policy=\"%u\",match=\"%s\",layer=\"%s\",outcome=\"delayed\"} "
			       "%llu\n",
			       p->id, esc, layer, (unsigned long long)ps[i].delayed);
		if (fc_policy_is_keyed(p)) {
			fprintf(f, "freqctl_policy_keys{policy=\"%u\",match=\"%s\"} %llu\n", p->id, esc,
				(unsigned long long)ps[i].keys);
			fprintf(f, "freqctl_policy_overflow_total{policy=\"%u\",match=\"%s\"} %llu\n", p->id, esc,
				(unsigned long long)ps[i].overflowed);
		}
	}
	fc_stats_prometheus_conc(f, ps, n);
}

void fc_stats_free(struct fc_stats_all *a)
{
	free(a->rows);
	free(a->ps);
	free(a->sources);
	fc_fleet_file_free(&a->fleet);
}

/* The agent's fleet status, if one writes it: what fleet policies show
 * besides this node's counters. A file that can not be used is said with
 * -v and shown as no fleet status. */
static void fc_stats_fleet(const struct fc_ctx *ctx, struct fc_stats_all *a)
{
	struct fc_err err;

	if (fc_fleet_file_read(ctx->shm_path, &a->fleet, &err) < 0)
		fc_debug("fleet status: %s", err.msg);
	else if (a->fleet.stale)
		fc_fleet_file_free(&a->fleet);
}

/* The ban sources of the store and their drops (maps: whether any are pinned). */
static int fc_sources_gather(struct fc_store *st, const struct fc_maps *m, bool maps, struct fc_stats_all *a,
			     struct fc_err *err)
{
	struct fc_ban_set *sets = NULL;
	size_t nsets = 0, i;
	int rc = -1;

	if (fc_store_set_list(st, (int64_t)time(NULL), &sets, &nsets, err) < 0)
		return -1;
	a->sources = calloc(nsets + 1, sizeof(*a->sources));
	if (!a->sources) {
		fc_err_set(err, "out of memory");
		goto out;
	}
	a->nsources = nsets + 1;
	a->sources[0].bans = a->bans.addresses;
	for (i = 0; i < nsets; i++) {
		a->sources[i + 1].set = sets[i].id;
		snprintf(a->sources[i + 1].name, sizeof(a->sources[i + 1].name), "%s", sets[i].name);
		a->sources[i + 1].bans = sets[i].size;
	}
	for (i = 0; maps && i < a->nsources; i++)
		if (fc_setstats_read(m, a->sources[i].set, &a->sources[i].dropped, err) < 0)
			goto out;
	rc = 0;
out:
	free(sets);
	return rc;
}

json_t *fc_ban_sources_to_json(const struct fc_stats_all *a)
{
	json_t *arr = json_array();
	size_t i;

	for (i = 0; arr && i < a->nsources; i++) {
		const struct fc_ban_source *b = &a->sources[i];

		json_array_append_new(arr, json_pack("{s:o, s:I, s:{s:I, s:I}}", "set",
						     b->set ? json_string(b->name) : json_null(), "bans", fc_json_count(b->bans),
						     "dropped", "packets", fc_json_count(b->dropped.packets), "bytes",
						     fc_json_count(b->dropped.bytes)));
	}
	return arr;
}

/* Whether the maps (m, NULL: none pinned) and the shm hold this store's
 * publish. */
static int fc_stats_whose(const struct fc_ctx *ctx, struct fc_store *st, const struct fc_maps *m,
			  struct fc_stats_all *a, struct fc_err *err)
{
	struct fc_store_log log;
	struct fc_config cfg;
	uint64_t seq;

	if (fc_store_log_head(st, &log, err) < 0 || (m && fc_config_read(m, &cfg, err) < 0))
		return -1;
	a->store_id = log.id;
	a->maps_there = m;
	a->maps_store_id = m ? cfg.store_id : 0;
	a->maps_other_store = a->maps_store_id && a->maps_store_id != log.id;
	a->shm_there = fc_shm_published(ctx->shm_path, &a->shm_store_id, &seq);
	a->shm_other_store = a->shm_store_id && a->shm_store_id != log.id;
	return 0;
}

int fc_stats_gather(const struct fc_ctx *ctx, struct fc_stats_all *a, struct fc_err *err)
{
	struct fc_shm_slot *slots = NULL;
	struct fc_store *st = NULL;
	struct fc_err shm_err;
	struct fc_maps m;
	bool l7 = false;
	int rc = -1, fd, maps;
	size_t i;

	memset(a, 0, sizeof(*a));
	/* From the agent's /metrics, a missing store is an outage: making an
	 * empty one would have the agent publish it. */
	/* A reader: it never creates a map (nothing published yet: zeros). */
	maps = fc_maps_open_existing(ctx->pin_dir, &m, err);
	if (maps < 0 || (maps == 0 && fc_stats_read(&m, &a->s, err) < 0))
		goto out;
	if (ctx->keep ? !(st = fc_store_keep_get(ctx->keep, err)) :
			fc_store_open_ex(ctx->db_path, !ctx->store_must_exist, &st, err) < 0)
		goto out;
	if (fc_stats_whose(ctx, st, maps == 0 ? &m : NULL, a, err) < 0)
		goto out;
	if (fc_node_read(st, ctx->node, &a->node, err) < 0 || fc_store_policy_list(st, &a->rows, &a->n, err) < 0 ||
	    fc_store_ban_count(st, (int64_t)time(NULL), &a->bans, err) < 0 ||
	    fc_sources_gather(st, &m, maps == 0, a, err) < 0)
		goto out;
	a->ps = calloc(a->n ? a->n : 1, sizeof(*a->ps));
	if (!a->ps) {
		fc_err_set(err, "out of memory");
		goto out;
	}
	for (i = 0; i < a->n; i++)
		l7 |= fc_policy_is_l7(&a->rows[i].spec);
	a->ring_lost = fc_shm_lost(ctx->shm_path);
	/* The workers' counters: their word, read as it is (no shm yet, or
	 * another store's: zeros). */
	if (!a->shm_other_store && (fd = fc_state_open(ctx->shm_path, &shm_err)) >= 0) {
		a->nginx_allowed = fc_state_allowed(fd);
		fc_state_banned(fd, &a->nginx_banned_uid, &a->nginx_banned_addr);
		slots = l7 ? malloc(FC_SHM_SLOTS * sizeof(*slots)) : NULL;
		if (slots)
			fc_state_slots(fd, slots, FC_SHM_SLOTS);
		close(fd);
	}
	for (i = 0; i < a->n; i++) {
		const struct fc_policy_row *r = &a->rows[i];

		a->ps[i].row = r;
		fc_policy_enforced(r, &a->node, NULL, &a->ps[i].enforced);
		if (!fc_policy_is_l7(&r->spec)) {
			if (maps == 0 && !a->maps_other_store && fc_pstats_read(&m, r->slot, &a->ps[i].ps, err) < 0)
				goto out;
		} else if (slots && r->slot < FC_SHM_SLOTS && slots[r->slot].owner == FC_SHM_OWNER(r->spec.id, r->epoch)) {
			a->ps[i].ps.passed.packets = slots[r->slot].passed;
			a->ps[i].ps.dropped.packets = slots[r->slot].denied;
			a->ps[i].delayed = slots[r->slot].delayed;
			/* The workers' counts: a forged one is bounded by the table. */
			a->ps[i].keys = slots[r->slot].keys < FC_SHM_KEYS_MAX ? slots[r->slot].keys : FC_SHM_KEYS_MAX;
			a->ps[i].overflowed = slots[r->slot].overflowed;
			a->ps[i].inflight = slots[r->slot].inflight;
			a->ps[i].conc_denied = slots[r->slot].conc_denied;
		}
	}
	fc_stats_fleet(ctx, a);
	rc = 0;
out:
	free(slots);
	fc_maps_close(&m);
	if (!ctx->keep)
		fc_store_close(st);
	else if (st)
		fc_store_keep_put(ctx->keep, rc != 0);
	if (rc)
		fc_stats_free(a);
	return rc;
}

/* A warming tier (lim's first, its word word): as plain GCRA's, from the
 * TAT as the ramp counts it (no more than one request of credit until the
 * ramp ends), of the ramped tolerance; an idle (cold) bucket uses nothing. */
static double fc_warm_use(const struct fc_limits *lim, uint64_t warmup_ns, uint64_t word, uint64_t ws, uint64_t now)
{
	struct fc_ramp r;
	uint64_t base;

	if (fc_warm_cold(word & FC_TAT_MASK, ws, warmup_ns, now))
		return 0;
	base = fc_warm_view(lim, warmup_ns, word, ws, now, 1, 0, &r);
	return (double)(base - now) / (double)r.tol;
}

double fc_bucket_use(const struct fc_policy *pol, const __u64 *state, uint64_t now)
{
	double use = 0, u;
	int i;

	for (i = 0; i < pol->ntiers && i < FC_MAX_TIERS; i++) {
		const struct fc_tier *t = &pol->tier[i];
		uint64_t st = state[i];

		if (pol->algo == FC_ALGO_SLIDING) /* the rule's left side, of N*U */
			u = t->limit ? 1 - (double)fc_tier_remaining(pol->algo, &pol->lim, i, st, now, 0) / (double)t->limit
				     : 0;
		else if (pol->algo == FC_ALGO_WINDOW)
			u = t->limit && (st >> FC_WIN_COUNT_BITS) == fc_window_index(t, now) ?
				    (double)(st & FC_WIN_COUNT_MASK) / (double)t->limit :
				    0;
		else if (!i && pol->warmup_ms && pol->ntiers < FC_MAX_TIERS)
			u = fc_warm_use(&pol->lim, pol->warmup_ms * FC_MS_NS, st, state[pol->ntiers], now);
		else if ((st = fc_gcra_tat(&pol->lim, i, st, now, 0)) > now && t->tolerance_ns)
			/* GCRA: the TAT's lead over now, of the most an admission may
			 * leave (a delay queue may lead further: counted as full) */
			u = (double)(st - now) / (double)t->tolerance_ns;
		else
			u = 0;
		if (u > use)
			use = u;
	}
	return use > 1 ? 1 : use;
}

void fc_key_view(const struct fc_policy_row *row, const struct fc_enforced *e, const struct fc_shm_key *k, uint64_t now,
		 struct fc_key_view *v)
{
	uint64_t queue = row->spec.action == FC_ACTION_DELAY ? row->spec.delay_burst : 0,
		 idle = k->idle_ns & ~FC_SHM_KEY_HELD;
	const struct fc_policy *pol = &e->k;
	uint8_t w = fc_shm_conc_word(pol->ntiers, pol->warmup_ms);
	struct fc_limit_view lv;

	memset(v, 0, sizeof(*v));
	if (pol->ntiers) {
		fc_limit_view(pol->algo, pol->ntiers, &pol->lim, k->state, now, queue, &lv);
		v->remaining = lv.remaining;
		v->retry_ns = lv.retry_ns;
	}
	/* While it holds places a key is never idle: its idle time waits under the held bit. */
	v->held = k->idle_ns & FC_SHM_KEY_HELD;
	v->idle_s = idle > now ? (idle - now) / FC_NS_PER_SEC : 0;
	/* Its count of places is the word past its tiers and its warm-up word. */
	v->capped = e->concurrency && w < FC_MAX_TIERS;
	v->inflight = v->capped ? k->state[w] : 0;
}

bool fc_key_value(const struct fc_policy_row *row, const struct fc_enforced *e, const struct fc_shm_val *vals,
		  uint64_t tag, char *out, bool *cut)
{
	const struct fc_shm_val *v;

	*out = '\0';
	*cut = false;
	if (!e->show_keys || !vals || !(v = fc_state_val_of(vals, tag, row->slot, row->epoch)))
		return false;
	fc_escape(v->value, v->len, out, FC_KEY_VALUE_LEN);
	*cut = v->flags & FC_SHM_VAL_CUT;
	return true;
}

/* A per-key policy as its keys name it: its slot. */
struct fc_keyed {
	uint32_t slot;
	const struct fc_policy *pol; /* compiled, as this node enforces it */
	const json_t *fleet;         /* its object in the agent's fleet status, or NULL */
};

struct fc_busiest {
	const struct fc_keyed *keyed; /* by slot */
	size_t nkeyed;
	uint64_t now;
	struct fc_topn top;
};

static int fc_keyed_cmp(const void *a, const void *b)
{
	const struct fc_keyed *x = a, *y = b;

	return x->slot < y->slot ? -1 : x->slot > y->slot;
}

/* Using more of its fullest tier first. */
static int fc_key_use_more(const void *a, const void *b)
{
	const struct fc_key_use *x = a, *y = b;

	return x->use < y->use ? 1 : x->use > y->use ? -1 : 0;
}

/* Keeps the key if it is among the max busiest seen so far. */
static void fc_busiest_one(const struct fc_shm_key *e, void *arg)
{
	struct fc_busiest *b = arg;
	const struct fc_keyed *kp, want = { .slot = e->slot };
	const struct fc_policy *pol;
	struct fc_key_use k;

	/* Every field is the workers' say-so: only a slot and epoch of a
	 * per-key policy name one. */
	kp = bsearch(&want, b->keyed, b->nkeyed, sizeof(*b->keyed), fc_keyed_cmp);
	if (!kp || kp->pol->epoch != e->epoch)
		return;
	pol = kp->pol;
	k = (struct fc_key_use){ pol->id, e->tag, e->passed, e->denied, fc_bucket_use(pol, e->state, b->now) };
	if (kp->fleet) {
		k.is_fleet = true;
		fc_key_fleet_view(kp->fleet, e, &k.fleet);
	}
	if (k.use)
		fc_topn_push(&b->top, &k);
}

/* The values of keys k[0..n) whose policies keep them, from the value
 * table of the state file fd (out of memory: none). */
static void fc_busiest_values(int fd, const struct fc_stats_all *a, struct fc_key_use *k, size_t n)
{
	struct fc_shm_val *vals = NULL;
	size_t i, j;

	for (i = 0; i < n; i++) {
		for (j = 0; j < a->n && a->ps[j].row->spec.id != k[i].policy; j++)
			;
		if (j == a->n || !a->ps[j].enforced.show_keys)
			continue;
		if (!vals) { /* read once, when a key first needs it */
			if (!(vals = malloc(FC_SHM_VALS * sizeof(*vals))))
				return;
			fc_state_vals(fd, vals);
		}
		k[i].has_value =
			fc_key_value(a->ps[j].row, &a->ps[j].enforced, vals, k[i].tag, k[i].value, &k[i].value_cut);
	}
	free(vals);
}

int fc_stats_busiest_keys(const struct fc_ctx *ctx, const struct fc_stats_all *a, uint64_t now,
			  struct fc_key_use *out, size_t max, size_t *n, struct fc_err *err)
{
	struct fc_busiest b = { .now = now };
	struct fc_keyed *keyed;
	uint32_t nkeys;
	size_t i;
	int fd, rc = -1;

	*n = 0;
	keyed = calloc(a->n ? a->n : 1, sizeof(*keyed));
	if (!keyed)
		return fc_err_set(err, "out of memory");
	for (i = 0; i < a->n; i++) {
		const struct fc_policy_row *r = a->ps[i].row;

		if (fc_policy_is_keyed(&r->spec) && r->slot && r->slot < FC_SHM_SLOTS)
			keyed[b.nkeyed++] =
				(struct fc_keyed){ r->slot, &a->ps[i].enforced.k, fc_fleet_file_policy(&a->fleet, r->spec.id) };
	}
	if (!b.nkeyed || !max) {
		free(keyed);
		return 0;
	}
	qsort(keyed, b.nkeyed, sizeof(*keyed), fc_keyed_cmp);
	b.keyed = keyed;
	fc_topn_init(&b.top, out, sizeof(*out), max, fc_key_use_more);
	fd = fc_state_open_keys(ctx->shm_path, ctx->shm_keys, O_RDONLY, &nkeys, err);
	if (fd < 0) {
		rc = errno == ENOENT ? 0 : -1; /* nginx has no state yet: no keys */
		free(keyed);
		return rc;
	}
	if (fc_state_keys_each(fd, nkeys, FC_SHM_KEY_TAG_MIN, fc_busiest_one, &b, err) == 0) {
		fc_topn_sort(&b.top);
		*n = b.top.n;
		fc_busiest_values(fd, a, out, *n);
		rc = 0;
	}
	close(fd);
	free(keyed);
	return rc;
}

static void fc_source_prometheus(FILE *f, const char *what, const struct fc_ban_source *b, uint64_t v)
{
	if (b->set)
		fprintf(f, "freqctl_ban_dropped_%s_total{source=\"set\",set=\"%s\"} %llu\n", what, b->name,
			(unsigned long long)v);
	else
		fprintf(f, "freqctl_ban_dropped_%s_total{source=\"by_hand\"} %llu\n", what, (unsigned long long)v);
}

int fc_stats_write_prometheus(const struct fc_ctx *ctx, FILE *f, struct fc_err *err)
{
	struct fc_stats_all a;
	size_t i;

	/* First, so a scrape says which build answered even when the maps are missing. */
	fprintf(f, "# HELP freqctl_build_info The freqctl build that answered.\n# TYPE freqctl_build_info gauge\n"
		   "freqctl_build_info{version=\"%s\"} 1\n",
		FC_VERSION);
	if (fc_stats_gather(ctx, &a, err) < 0)
		return -1;
	fc_stats_prometheus(f, &a);
	fc_fleet_prometheus(f, a.fleet.doc);
	fprintf(f, "# HELP freqctl_bans Live bans in the store, by kind and reason.\n# TYPE freqctl_bans gauge\n"
		   "freqctl_bans{kind=\"address\",reason=\"by_hand\"} %zu\n"
		   "freqctl_bans{kind=\"address\",reason=\"escalated\"} %zu\n"
		   "freqctl_bans{kind=\"uid\",reason=\"by_hand\"} %zu\n",
		a.bans.addresses - a.bans.escalated, a.bans.escalated, a.bans.uids);
	for (i = 1; i < a.nsources; i++) /* set names are [A-Za-z0-9._-]: nothing to escape */
		fprintf(f, "freqctl_bans{kind=\"address\",reason=\"set\",set=\"%s\"} %llu\n", a.sources[i].name,
			(unsigned long long)a.sources[i].bans);
	fputs("# HELP freqctl_ban_dropped_packets_total Packets dropped at XDP/TC by bans, by source: by hand "
	      "(escalations too) or a ban set.\n# TYPE freqctl_ban_dropped_packets_total counter\n",
	      f);
	for (i = 0; i < a.nsources; i++)
		fc_source_prometheus(f, "packets", &a.sources[i], a.sources[i].dropped.packets);
	fputs("# HELP freqctl_ban_dropped_bytes_total Bytes dropped at XDP/TC by bans, by source.\n"
	      "# TYPE freqctl_ban_dropped_bytes_total counter\n",
	      f);
	for (i = 0; i < a.nsources; i++)
		fc_source_prometheus(f, "bytes", &a.sources[i], a.sources[i].dropped.bytes);
	fc_stats_free(&a);
	return 0;
}

