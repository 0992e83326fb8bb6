// SPDX-License-Identifier: BSD-2-Clause
/* freqctl policy add | set | edit | del | list */
#include <stdlib.h>
#include <string.h>
#include <jansson.h>

#include "fc_cli.h"
#include "fc_duration.h"
#include "fc_change.h"

/* The semantics live in freqctl-policy(7) alone; --help says where. */
#define FC_POLICY_DETAILS                                                                             \
	"A policy whose match has only ip= runs at XDP/TC, on packets; any other dimension, or\n"    \
	"--layer http, makes it an nginx policy, on requests. What each option means, and exactly\n" \
	"what each algorithm admits, with examples: freqctl-policy(7) (from a build tree:\n"         \
	"man -l build/man/freqctl-policy.7)."
static const char fc_policy_details[] = FC_POLICY_DETAILS;

/* A bad policy, as users expect it: "freqctl: policy 7: rate ...", exit 2. */
static void __attribute__((noreturn)) fc_policy_usage_error(const struct fc_cmd *cmd, uint32_t id, const char *msg)
{
	fprintf(stderr, "freqctl: policy %u: %s\nTry 'freqctl %s --help'.\n", id, msg, cmd->name);
	exit(FC_EXIT_USAGE);
}

/* The index of option name in opts. */
static size_t fc_opt_index(const struct fc_opt *opts, const char *name)
{
	size_t i;

	for (i = 0; opts[i].name && strcmp(opts[i].name, name); i++)
		;
	return i;
}

/*
 * The options of policy add and set: fc_policy_opts (also the keys of a
 * policy in JSON), then --force; policy edit's: the same, then for each of
 * fc_policy_opts (but --match, and --show-keys, which has its twin) a --no-X
 * that puts it back to its default. Made from fc_policy_opts at first use:
 * one table still yields getopt's structures and --help.
 */
#define FC_POLICY_OPTS_MAX 48

struct fc_policy_cli {
	struct fc_policy_spec spec; /* the options given, over zeroes: first, where their offsets point */
	bool force;
	bool no[FC_POLICY_OPTS_MAX];           /* --no-X given, X being fc_policy_opts[fc_edit_of[i]] */
	bool seen[2 * FC_POLICY_OPTS_MAX + 2]; /* given, by index in the command's table */
};

static const struct fc_opt fc_force_opt =
	FC_OPTION("force", 0, FC_OPT_FLAG, struct fc_policy_cli, force,
		  .help = "take a match of ip=0.0.0.0/0 or ip=::/0: one bucket shared by every source of the family");
static struct fc_opt fc_put_opts[FC_POLICY_OPTS_MAX + 2], fc_edit_opts[2 * FC_POLICY_OPTS_MAX + 2];
static size_t fc_edit_of[FC_POLICY_OPTS_MAX], fc_nopts, fc_edit_nno;
static char fc_edit_names[FC_POLICY_OPTS_MAX][40], fc_edit_helps[FC_POLICY_OPTS_MAX][64];

/* --escalate and --ban-ttl go together: either's --no- clears both. */
static bool fc_edit_escalation(const struct fc_opt *o)
{
	return !strcmp(o->name, "escalate") || !strcmp(o->name, "ban-ttl");
}

static void fc_policy_opts_build(void)
{
	size_t n = fc_opts_count(fc_policy_opts), i, k = 0;

	if (fc_nopts)
		return;
	if (n > FC_POLICY_OPTS_MAX)
		abort(); /* FC_POLICY_OPTS_MAX too small: any run of the tests says so */
	memcpy(fc_put_opts, fc_policy_opts, n * sizeof(*fc_put_opts));
	fc_put_opts[n] = fc_force_opt;
	memcpy(fc_edit_opts, fc_put_opts, (n + 1) * sizeof(*fc_edit_opts));
	for (i = 0; i < n; i++) {
		const struct fc_opt *o = &fc_policy_opts[i];

		if (!strcmp(o->name, "match") || o->type == FC_OPT_YES || o->type == FC_OPT_NO)
			continue;
		snprintf(fc_edit_names[k], sizeof(fc_edit_names[k]), "no-%s", o->name);
		if (fc_edit_escalation(o))
			snprintf(fc_edit_helps[k], sizeof(fc_edit_helps[k]), "no escalation: clear --escalate and --ban-ttl");
		else if (!strcmp(o->name, "rate"))
			snprintf(fc_edit_helps[k], sizeof(fc_edit_helps[k]), "clear every --rate (a --concurrency cap alone)");
		else
			snprintf(fc_edit_helps[k], sizeof(fc_edit_helps[k]), "clear --%s: back to its default", o->name);
		fc_edit_opts[n + 1 + k] = (struct fc_opt){ .name = fc_edit_names[k], .type = FC_OPT_FLAG,
							   .off = offsetof(struct fc_policy_cli, no[k]),
							   .size = sizeof(bool), .help = fc_edit_helps[k] };
		fc_edit_of[k++] = i;
	}
	fc_edit_nno = k;
	fc_nopts = n;
}

/* Parses the options and ID of policy add, set or edit into a; returns the
 * ID. Exits 2 on bad input, naming the policy by the ID given (which may
 * come after the options). */
static uint32_t fc_policy_args(const struct fc_cmd *cmd, int argc, char **argv, struct fc_policy_cli *a)
{
	struct fc_err err, first;
	uint32_t id;
	int at;

	fc_policy_opts_build();
	memset(a, 0, sizeof(*a));
	at = fc_cmd_parse_seen(cmd, argc, argv, a, &first, a->seen);
	if (fc_policy_id_parse(argv[at], &id, &err) < 0)
		fc_usage_error(cmd, "%s", err.msg);
	a->spec.id = id;
	if (first.msg[0])
		fc_policy_usage_error(cmd, id, first.msg);
	return id;
}

/* What of policy add's options the command said, as fc_change's flags. */
static unsigned fc_policy_said(const struct fc_policy_cli *a)
{
	size_t layer = fc_opt_index(fc_policy_opts, "layer"), i;
	unsigned how = a->force ? FC_PUT_FORCE : 0;

	if (a->seen[layer])
		how |= FC_PUT_LAYER_SAID;
	for (i = 0; i < fc_edit_nno; i++)
		if (a->no[i] && fc_edit_of[i] == layer)
			how |= FC_PUT_LAYER_SAID;
	return how;
}

/* A change refused: a bad policy exits 2 (usage), the rest 1. */
static int fc_policy_refused(const struct fc_cmd *cmd, uint32_t id, int rc, const struct fc_err *err)
{
	if (rc == FC_CHANGE_INVALID)
		fc_policy_usage_error(cmd, id, err->msg);
	fc_warn("policy %u: %s%s", id, rc == FC_CHANGE_RUNTIME ? fc_priv_hint() : "", err->msg);
	return FC_EXIT_FAILURE;
}

int fc_policy_note(const struct fc_policy_spec *p, char *buf, size_t len)
{
	char what[FC_ERR_LEN / 2];

	if (fc_policy_is_zero(p)) {
		fc_policy_zero_what(p, what, sizeof(what));
		snprintf(buf, len, "policy %u: %s (a bucket per %s is --match 'ip=*')", p->id, what,
			 fc_policy_is_l7(p) ? "client" : "source");
		return 1;
	}
	if (fc_policy_delay_never(p)) {
		snprintf(buf, len, "policy %u: --action delay with --algo %s never delays: what is over its window is "
				   "denied (--algo gcra delays)", p->id, fc_algo_name(p->algo));
		return 1;
	}
	return 0;
}

int fc_policy_notes(const struct fc_ctx *ctx, char (**notes)[FC_ERR_LEN], size_t *n)
{
	struct fc_policy_row *rows = NULL;
	struct fc_store *st = NULL;
	struct fc_err err;
	size_t nrows = 0, i;
	int rc;

	*notes = NULL;
	*n = 0;
	rc = fc_store_open_read(ctx->db_path, &st, &err);
	if (rc < 0 || (rc == 0 && fc_store_policy_list(st, &rows, &nrows, &err) < 0)) {
		fc_store_close(st);
		return -1;
	}
	fc_store_close(st);
	*notes = calloc(nrows + 1, sizeof(**notes));
	for (i = 0; *notes && i < nrows; i++)
		*n += (size_t)fc_policy_note(&rows[i].spec, (*notes)[*n], sizeof((*notes)[*n]));
	free(rows);
	return *notes ? 0 : -1;
}

/* Every tier's GCRA burst, as it applies: "20,1000". */
static void fc_bursts_format(const struct fc_policy_spec *p, char *buf, size_t len)
{
	size_t off = 0;
	int i;

	buf[0] = '\0';
	for (i = 0; i < p->ntiers && off < len; i++)
		off += (size_t)snprintf(buf + off, len - off, "%s%llu", i ? "," : "",
					(unsigned long long)fc_tier_burst(p, i));
}

static void fc_policy_describe(const struct fc_policy_spec *p, char *buf, size_t len)
{
	char match[FC_MATCH_LEN], rates[FC_TEXT_LEN], bursts[FC_TEXT_LEN];

	fc_match_format(p, match);
	fc_rates_format(p, rates);
	fc_bursts_format(p, bursts, sizeof(bursts));
	/* A cap alone: no rate, no algorithm to speak of. */
	if (p->ntiers)
		snprintf(buf, len, "%s %s (%s", match, rates, fc_algo_name(p->algo));
	else
		snprintf(buf, len, "%s (no rate", match);
	if (p->algo == FC_ALGO_GCRA && p->ntiers)
		snprintf(buf + strlen(buf), len - strlen(buf), ", burst %s", bursts);
	if (p->concurrency)
		snprintf(buf + strlen(buf), len - strlen(buf), ", at most %u in flight", p->concurrency);
	if (p->action == FC_ACTION_DELAY)
		snprintf(buf + strlen(buf), len - strlen(buf), ", delay up to %u", p->delay_burst);
	else
		snprintf(buf + strlen(buf), len - strlen(buf), ", %s", fc_action_name(p->action));
	if (p->warmup) {
		char d[FC_DURATION_STRLEN];

		fc_duration_format(p->warmup, d);
		snprintf(buf + strlen(buf), len - strlen(buf), ", warm-up %s", d);
	}
	if (p->override)
		snprintf(buf + strlen(buf), len - strlen(buf), ", overrides what is more general");
	if (p->fleet)
		snprintf(buf + strlen(buf), len - strlen(buf), ", the whole fleet's");
	snprintf(buf + strlen(buf), len - strlen(buf), ", %s",
		 fc_policy_is_l7(p) ? "requests in nginx" : fc_count_name(p->count));
	if (p->kind == FC_MATCH_STAR) {
		char unit[FC_STAR_UNIT_STRLEN];

		fc_star_unit_format(p, unit);
		snprintf(buf + strlen(buf), len - strlen(buf), ", a bucket per %s", unit);
	}
	snprintf(buf + strlen(buf), len - strlen(buf), ")");
}

static int fc_policy_put(const struct fc_ctx *ctx, const struct fc_cmd *cmd, int argc, char **argv, unsigned how)
{
	char desc[FC_MATCH_LEN + 2 * FC_TEXT_LEN + FC_STAR_UNIT_STRLEN + 64];
	struct fc_policy_cli a;
	struct fc_policy_row row;
	struct fc_err err;
	bool found;
	int rc;

	fc_policy_args(cmd, argc, argv, &a);
	if (fc_policy_validate(&a.spec, &err) < 0)
		fc_policy_usage_error(cmd, a.spec.id, err.msg);
	rc = fc_change_policy_put(ctx, &a.spec, how | fc_policy_said(&a), &found, &row, &err);
	if (rc)
		return fc_policy_refused(cmd, a.spec.id, rc, &err);
	fc_policy_describe(&row.spec, desc, sizeof(desc));
	printf("policy %u %s: %s\n", a.spec.id, found ? "replaced" : "added", desc);
	return FC_EXIT_OK;
}

static int fc_policy_add(const struct fc_ctx *ctx, const struct fc_cmd *cmd, int argc, char **argv)
{
	return fc_policy_put(ctx, cmd, argc, argv, 0);
}

static int fc_policy_set(const struct fc_ctx *ctx, const struct fc_cmd *cmd, int argc, char **argv)
{
	return fc_policy_put(ctx, cmd, argc, argv, FC_PUT_REPLACE);
}

/* Applies what policy edit gave (arg, a struct fc_policy_cli) to the stored policy p. */
static int fc_policy_edit_apply(struct fc_policy_spec *p, const void *arg, struct fc_err *err)
{
	const struct fc_policy_cli *e = arg;
	const struct fc_opt *o;
	size_t i;

	(void)err;
	for (i = 0; i < fc_nopts; i++) {
		o = &fc_policy_opts[i];
		if (!e->seen[i])
			continue;
		if (!strcmp(o->name, "match")) {
			p->kind = e->spec.kind;
			p->ip = e->spec.ip;
			p->ndims = e->spec.ndims;
			memcpy(p->dims, e->spec.dims, sizeof(p->dims));
		} else if (!strcmp(o->name, "rate")) { /* the rates given replace them all */
			memcpy(p->rate, e->spec.rate, sizeof(p->rate));
			p->ntiers = e->spec.ntiers;
		} else {
			memcpy((char *)p + o->off, (const char *)&e->spec + o->off, o->size);
		}
	}
	for (i = 0; i < fc_edit_nno; i++) {
		o = &fc_policy_opts[fc_edit_of[i]];
		if (!e->no[i])
			continue;
		if (!strcmp(o->name, "rate")) {
			memset(p->rate, 0, sizeof(p->rate));
			p->ntiers = 0;
		} else if (fc_edit_escalation(o)) {
			memset(&p->escalate, 0, sizeof(p->escalate));
			p->ban_ttl = 0;
		} else {
			memset((char *)p + o->off, 0, o->size);
		}
	}
	return 0;
}

static int fc_policy_edit(const struct fc_ctx *ctx, const struct fc_cmd *cmd, int argc, char **argv)
{
	char desc[FC_MATCH_LEN + 2 * FC_TEXT_LEN + FC_STAR_UNIT_STRLEN + 64];
	struct fc_policy_cli e;
	struct fc_policy_row row;
	struct fc_err err;
	bool any = false;
	uint32_t id;
	size_t i;
	int rc;

	id = fc_policy_args(cmd, argc, argv, &e);
	for (i = 0; i < fc_nopts + 1 + fc_edit_nno; i++)
		any |= e.seen[i] && i != fc_nopts; /* --force alone changes nothing */
	if (!any)
		fc_usage_error(cmd, "nothing to change: give the options to change (--X to set one, --no-X to clear it)");
	for (i = 0; i < fc_edit_nno; i++)
		if (e.no[i] && e.seen[fc_edit_of[i]])
			fc_usage_error(cmd, "--%s and --%s: give one", fc_policy_opts[fc_edit_of[i]].name, fc_edit_names[i]);
	rc = fc_change_policy_edit(ctx, id, fc_policy_edit_apply, &e, fc_policy_said(&e), &row, &err);
	if (rc)
		return fc_policy_refused(cmd, id, rc, &err);
	fc_policy_describe(&row.spec, desc, sizeof(desc));
	printf("policy %u changed: %s\n", id, desc);
	return FC_EXIT_OK;
}

static int fc_policy_del(const struct fc_ctx *ctx, const struct fc_cmd *cmd, int argc, char **argv)
{
	struct fc_err err;
	uint32_t id;
	int rc;

	fc_cmd_parse(cmd, argc, argv, NULL, NULL);
	if (fc_policy_id_parse(argv[optind], &id, &err) < 0)
		fc_usage_error(cmd, "%s", err.msg);
	if ((rc = fc_change_policy_del(ctx, id, &err)))
		return fc_policy_refused(cmd, id, rc, &err);
	printf("policy %u deleted\n", id);
	return FC_EXIT_OK;
}

static json_t *fc_policy_json(const struct fc_policy_row *r)
{
	const struct fc_policy_spec *p = &r->spec;
	char match[FC_MATCH_LEN], created[FC_TIME_STRLEN], updated[FC_TIME_STRLEN];
	json_t *rates = json_array(), *bursts = p->algo == FC_ALGO_GCRA && p->ntiers ? json_array() : json_null();
	int i;

	fc_match_format(p, match);
	for (i = 0; rates && i < p->ntiers; i++) {
		char one[FC_RATE_STRLEN];

		fc_rate_format(&p->rate[i], one);
		json_array_append_new(rates, json_string(one));
		if (json_is_array(bursts))
			json_array_append_new(bursts, json_integer((json_int_t)fc_tier_burst(p, i)));
	}
	fc_time_format(r->created, created);
	fc_time_format(r->updated, updated);
	/* burst: the first tier's (as --burst); bursts: every tier's; unit:
	 * ip=*'s prefix lengths, the defaults too. */
	return json_pack("{s:I, s:s, s:s, s:o, s:o, s:o, s:s, s:s, s:s, s:o, s:o, s:o, s:o, s:b, s:o, s:b, s:s, s:s}",
			 "id", (json_int_t)p->id, "match", match, "layer", fc_policy_is_l7(p) ? "nginx" : "xdp",
			 "rates", rates, "burst",
			 p->algo == FC_ALGO_GCRA && p->ntiers ? json_integer((json_int_t)fc_tier_burst(p, 0)) : json_null(),
			 "bursts",
			 bursts,
			 "algo", fc_algo_name(p->algo), "action", fc_action_name(p->action), "count",
			 fc_policy_is_l7(p) ? "requests" : fc_count_name(p->count), "new_sources",
			 p->kind == FC_MATCH_STAR ?
				 json_integer((json_int_t)(p->new_sources ? p->new_sources : FC_NEW_SOURCES_DEFAULT)) :
				 json_null(),
			 "unit",
			 p->kind == FC_MATCH_STAR ?
				 json_pack("{s:i, s:i}", "ipv4", fc_star_len4(p), "ipv6", fc_star_len6(p)) :
				 json_null(),
			 "warmup", p->warmup ? json_integer(p->warmup) : json_null(), "concurrency",
			 p->concurrency ? json_integer(p->concurrency) : json_null(), "override", p->override,
			 "show_keys", p->show_keys ? json_boolean(p->show_keys > 0) : json_null(), "fleet", p->fleet,
			 "created", created, "updated", updated);
}

/* An ip=* policy's unit, the defaults spelled out too ("/32,/64", which
 * plain ip=* means), in a column of its own: the match reads as it does
 * everywhere else (stats, top, status, the console). */
static void fc_unit_shown(const struct fc_policy_spec *p, char buf[16])
{
	if (p->kind == FC_MATCH_STAR)
		snprintf(buf, 16, "/%u,/%u", fc_star_len4(p), fc_star_len6(p));
	else
		snprintf(buf, 16, "-");
}

static int fc_policy_list(const struct fc_ctx *ctx, const struct fc_cmd *cmd, int argc, char **argv)
{
	char match[FC_MATCH_LEN], rates[FC_TEXT_LEN], bursts[FC_TEXT_LEN], warmup[FC_DURATION_STRLEN], unit[16];
	struct fc_policy_row *rows = NULL;
	struct fc_store *st = NULL;
	struct fc_json_opt opt = { 0 };
	struct fc_err err;
	json_t *arr;
	size_t n = 0, i;
	int rc;

	fc_cmd_parse(cmd, argc, argv, &opt, NULL);
	rc = fc_store_open_read(ctx->db_path, &st, &err);
	if (rc < 0 || (rc == 0 && fc_store_policy_list(st, &rows, &n, &err) < 0)) {
		fc_warn("policy list: %s", err.msg);
		fc_store_close(st);
		return FC_EXIT_FAILURE;
	}
	fc_store_close(st);
	if (opt.json) {
		arr = json_array();
		for (i = 0; arr && i < n; i++)
			json_array_append_new(arr, fc_policy_json(&rows[i]));
		free(rows);
		return fc_json_print(arr);
	}
	if (n)
		printf("%-10s %-30s %-8s %-6s %-24s %-8s %-7s %-7s %-8s %-8s %-5s %-7s %s\n", "ID", "MATCH", "UNIT", "LAYER",
		       "RATES", "BURST", "ALGO", "ACTION", "COUNT", "OVERRIDE", "FLEET", "WARMUP", "CONCURRENCY");
	for (i = 0; i < n; i++) {
		const struct fc_policy_spec *p = &rows[i].spec;
		char conc[16] = "-";

		fc_match_format(p, match);
		fc_unit_shown(p, unit);
		fc_rates_format(p, rates);
		fc_bursts_format(p, bursts, sizeof(bursts));
		if (p->warmup)
			fc_duration_format(p->warmup, warmup);
		if (p->concurrency)
			snprintf(conc, sizeof(conc), "%u", p->concurrency);
		printf("%-10u %-30s %-8s %-6s %-24s %-8s %-7s %-7s %-8s %-8s %-5s %-7s %s\n", p->id, match, unit,
		       fc_policy_is_l7(p) ? "nginx" : "xdp", p->ntiers ? rates : "-",
		       p->algo == FC_ALGO_GCRA && p->ntiers ? bursts : "-", fc_algo_name(p->algo),
		       fc_action_name(p->action), fc_policy_is_l7(p) ? "requests" : fc_count_name(p->count),
		       p->override ? "yes" : "-", p->fleet ? "yes" : "-", p->warmup ? warmup : "-", conc);
	}
	free(rows);
	return FC_EXIT_OK;
}

const struct fc_cmd fc_cmd_policy_add = {
	.name = "policy add",
	.args = "ID",
	.min_args = 1,
	.max_args = 1,
	.summary = "Add a rate-limit policy (XDP/TC for ip= alone, nginx otherwise); refuses an existing ID.",
	.details = fc_policy_details,
	.opts = fc_put_opts,
	.store = FC_STORE_MAKES,
	.run = fc_policy_add,
};

const struct fc_cmd fc_cmd_policy_set = {
	.name = "policy set",
	.args = "ID",
	.min_args = 1,
	.max_args = 1,
	.summary = "Create or replace a policy (same options as 'policy add'); what is not given is the default.\n"
		   "An ip=-only policy keeps its layer unless --layer is given ('policy edit' changes only what is given).",
	.details = fc_policy_details,
	.opts = fc_put_opts,
	.store = FC_STORE_MAKES,
	.run = fc_policy_set,
};

const struct fc_cmd fc_cmd_policy_edit = {
	.name = "policy edit",
	.args = "ID",
	.min_args = 1,
	.max_args = 1,
	.summary = "Change only the options given of an existing policy; --no-X puts X back to its default.",
	.details = "Every other setting stays as it is, the layer too. Given, --rate replaces all the rates\n"
		   "and --match the whole match. The result is checked as 'policy add' checks a policy.\n\n"
		   FC_POLICY_DETAILS,
	.opts = fc_edit_opts,
	.store = FC_STORE_AT_OPEN,
	.run = fc_policy_edit,
};

const struct fc_cmd fc_cmd_policy_del = {
	.name = "policy del",
	.args = "ID",
	.min_args = 1,
	.max_args = 1,
	.summary = "Delete a policy; refuses an ID that does not exist. Holds from the next packet or request.",
	.opts = fc_opts_none,
	.store = FC_STORE_AT_OPEN,
	.run = fc_policy_del,
};

const struct fc_cmd fc_cmd_policy_list = {
	.name = "policy list",
	.min_args = 0,
	.max_args = 0,
	.summary = "List the policies in the store.",
	.opts = fc_opts_json,
	.run = fc_policy_list,
};
