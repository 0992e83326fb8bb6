// SPDX-License-Identifier: BSD-2-Clause
/* freqctl ban add | del | import | list */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <jansson.h>

#include "fc_allow.h"
#include "fc_cli.h"
#include "fc_duration.h"
#include "fc_change.h"
#include "fc_feed.h"
#include "fc_publish.h"
#include "fc_rows_json.h"
#include "fc_where.h"

#define FC_IMPORT_MAX_ERRORS 20

struct fc_ban_opt {
	int64_t ttl; /* seconds; 0 = none */
	bool force;
};

static const struct fc_opt fc_ban_add_opts[] = {
	FC_OPTION("ttl", 0, FC_OPT_DURATION, struct fc_ban_opt, ttl, .arg = "DURATION",
		  .help = "lift the ban after DURATION (90s, 10m, 1h, 7d, 1h30m)"),
	FC_OPTION("force", 0, FC_OPT_FLAG, struct fc_ban_opt, force,
		  .help = "replace a live ban that this one would lift sooner (no expiry, or a longer TTL)"),
	FC_OPT_END,
};

/* How long a ban holds, and what it replaced: "for 1h", "(no expiry)",
 * "for 1h (was: no expiry)", "(no expiry; was: 59m left)". */
static void fc_ban_term(int64_t ttl, int64_t was, char *buf, size_t len)
{
	char dur[FC_DURATION_STRLEN], left[FC_DURATION_STRLEN + 16] = "";

	fc_duration_format(ttl, dur);
	if (was > 0) /* counted from the whole second a TTL starts at */
		fc_duration_format(was - fc_expires_after(0), left);
	if (was >= 0)
		strcat(left, was ? " left" : "no expiry");
	if (ttl)
		snprintf(buf, len, "for %s%s%s%s", dur, was >= 0 ? " (was: " : "", left, was >= 0 ? ")" : "");
	else
		snprintf(buf, len, "(no expiry%s%s)", was >= 0 ? "; was: " : "", left);
}

static int fc_ban_add(const struct fc_ctx *ctx, const struct fc_cmd *cmd, int argc, char **argv)
{
	char text[FC_BAN_TEXT_LEN], term[2 * FC_DURATION_STRLEN + 32], where[768];
	struct fc_err err;
	struct fc_ban_opt opt = { 0 };
	struct fc_where w;
	int64_t was;
	int rc;

	fc_cmd_parse(cmd, argc, argv, &opt, NULL);
	rc = fc_change_ban_put(ctx, argv[optind], opt.ttl, opt.force, text, &was, &err);
	if ((rc = fc_cmd_changed(cmd, rc, text, &err)))
		return rc;
	fc_ban_term(opt.ttl, was, term, sizeof(term));
	/* "banned" only where something enforces it. */
	fc_where_read(ctx, &w);
	if (fc_where_ban(ctx, &w, strncmp(text, "uid=", 4) != 0, where, sizeof(where)))
		printf("%s %s %s: %s\n", was >= 0 ? "re-banned" : "banned", text, term, where);
	else
		printf("stored the ban of %s %s, enforced nowhere yet: %s\n", text, term, where);
	return FC_EXIT_OK;
}

struct fc_ban_del_opt {
	const char *set;
};

static const struct fc_opt fc_ban_del_opts[] = {
	FC_OPTION("set", 0, FC_OPT_STR, struct fc_ban_del_opt, set, .arg = "NAME",
		  .help = "delete ban set NAME: its bans are lifted (those no other source holds)"),
	FC_OPT_END,
};

static int fc_ban_del(const struct fc_ctx *ctx, const struct fc_cmd *cmd, int argc, char **argv)
{
	char text[FC_BAN_TEXT_LEN], held[FC_SETS_TEXT_LEN];
	struct fc_ban_del_opt opt = { 0 };
	struct fc_err err;
	size_t members = 0;
	int rc;

	fc_cmd_parse(cmd, argc, argv, &opt, NULL);
	if (!opt.set == (optind == argc))
		fc_usage_error(cmd, "expected ADDR[/LEN] or uid=VALUE, or --set NAME (one of them)");
	rc = opt.set ? fc_change_set_del(ctx, opt.set, &members, &err) : fc_change_ban_del(ctx, argv[optind], text, held, &err);
	if (rc == FC_CHANGE_INVALID)
		fc_usage_error(cmd, "%s", err.msg);
	if (rc) {
		if (opt.set)
			fc_warn("ban del --set %s: %s%s", opt.set, rc == FC_CHANGE_RUNTIME ? fc_priv_hint() : "", err.msg);
		else
			fc_warn("ban del %s: %s%s", text, rc == FC_CHANGE_RUNTIME ? fc_priv_hint() : "", err.msg);
		return FC_EXIT_FAILURE;
	}
	if (opt.set)
		printf("deleted ban set %s (%zu bans)\n", opt.set, members);
	else if (*held)
		printf("unbanned %s by hand (ban set %s still bans it)\n", text, held);
	else
		printf("unbanned %s\n", text);
	return FC_EXIT_OK;
}

struct fc_import_opt {
	int64_t ttl;
	const char *set;
	bool json;
	bool force;
};

static const struct fc_opt fc_ban_import_opts[] = {
	FC_OPTION("set", 0, FC_OPT_STR, struct fc_import_opt, set, .arg = "NAME",
		  .help = "make ban set NAME exactly the file's bans (made if new)"),
	FC_OPTION("ttl", 0, FC_OPT_DURATION, struct fc_import_opt, ttl, .arg = "DURATION",
		  .help = "lift the bans after DURATION; with --set, the whole set lapses DURATION after this import"),
	FC_OPTION("force", 0, FC_OPT_FLAG, struct fc_import_opt, force,
		  .help = "without --set: replace bans that would last longer than --ttl says"),
	FC_OPTION("json", 0, FC_OPT_FLAG, struct fc_import_opt, json, .help = "print what was done as JSON"),
	FC_OPT_END,
};

/* Long runs say how far they are on a terminal, and nothing when piped. */
struct fc_progress {
	bool on;
	bool shown; /* a line of it is on the terminal, not ended */
	const char *what;
};

static void fc_progress(size_t done, size_t total, void *arg)
{
	struct fc_progress *p = arg;

	if (p->on) {
		fprintf(stderr, "\rfreqctl: %s %zu/%zu", p->what, done, total);
		p->shown = true;
	}
}

static void fc_progress_end(struct fc_progress *p, const char *then)
{
	if (p->shown)
		fprintf(stderr, "%s\n", then);
	p->shown = false;
}

/* Reads and validates the whole feed; nothing is applied unless all of it
 * is good. Every bad line is named (the first FC_IMPORT_MAX_ERRORS). */
static int fc_import_read(const char *path, struct fc_feed *feed, const struct fc_progress *prog)
{
	FILE *f = strcmp(path, "-") ? fopen(path, "r") : stdin;
	size_t lineno = 0, linecap = 0, bad = 0;
	char *line = NULL;
	struct fc_err err;

	if (!f) {
		fc_warn("ban import %s: %s", path, strerror(errno));
		return -1;
	}
	while (getline(&line, &linecap, f) != -1) {
		if (++lineno % 65536 == 0 && prog->on)
			fprintf(stderr, "\rfreqctl: reading %s: %zu lines", path, lineno);
		if (fc_feed_line(line, feed, &err) < 0 && ++bad <= FC_IMPORT_MAX_ERRORS)
			fc_warn("%s:%zu: %s", path, lineno, err.msg);
	}
	if (prog->on && lineno >= 65536)
		fprintf(stderr, "\rfreqctl: reading %s: %zu lines\n", path, lineno);
	if (ferror(f)) {
		fc_warn("ban import %s: read error: %s", path, strerror(errno));
		bad++;
	}
	free(line);
	if (f != stdin)
		fclose(f);
	if (bad > FC_IMPORT_MAX_ERRORS)
		fc_warn("%s: ... and %zu more invalid lines", path, bad - FC_IMPORT_MAX_ERRORS);
	if (bad)
		fc_warn("ban import %s: %zu invalid line%s; nothing imported", path, bad, bad == 1 ? "" : "s");
	return bad ? -1 : 0;
}

/* The file's bans, by hand: added to those there are; a ban there already
 * that would last longer is kept (*longer of them) unless opt->force, as
 * ban add keeps it. */
static int fc_import_by_hand(const struct fc_ctx *ctx, const struct fc_import_opt *opt, const struct fc_feed *feed,
			     struct fc_progress *prog, size_t *added, size_t *longer, struct fc_err *err)
{
	struct fc_store_progress sp = { .fn = fc_progress, .arg = prog, .total = feed->n };
	struct fc_ban_counts before, after;
	struct fc_publish pub;
	size_t written;

	if (fc_publish_begin(&pub, ctx, err) < 0)
		return -1;
	if (fc_store_ban_count(pub.st, pub.now, &before, err) < 0 ||
	    fc_store_bans_put(pub.st, feed->v, feed->n, pub.now, opt->ttl ? fc_expires_after(opt->ttl) : 0,
			      opt->force, &sp, &written, err) < 0 ||
	    fc_store_ban_count(pub.st, pub.now, &after, err) < 0)
		goto abort;
	fc_progress_end(prog, ", publishing...");
	*added = after.addresses - before.addresses;
	*longer = feed->n - written;
	return fc_publish_commit(&pub, err);
abort:
	fc_publish_abort(&pub);
	return -1;
}

/* Ban set opt->set becomes the file's bans: only the difference is written
 * and published. */
static int fc_import_set(const struct fc_ctx *ctx, const struct fc_import_opt *opt, const struct fc_feed *feed,
			 struct fc_progress *prog, struct fc_set_result *res, struct fc_err *err)
{
	struct fc_publish pub;
	int rc;

	if (fc_publish_begin(&pub, ctx, err) < 0)
		return -1;
	prog->what = "storing the difference";
	rc = fc_set_replace(&pub, opt->set, feed->v, feed->n, opt->ttl ? fc_expires_after(opt->ttl) : 0, fc_progress,
			    prog, res, err);
	if (rc < 0) {
		fc_publish_abort(&pub);
		return rc;
	}
	fc_progress_end(prog, ", publishing...");
	return fc_publish_commit(&pub, err);
}

static int fc_ban_import(const struct fc_ctx *ctx, const struct fc_cmd *cmd, int argc, char **argv)
{
	struct fc_progress prog = { .on = isatty(STDERR_FILENO), .what = "storing" };
	char dur[FC_DURATION_STRLEN];
	struct fc_import_opt opt = { 0 };
	struct fc_set_result res = { 0 };
	struct fc_feed feed = { 0 };
	const char *path;
	struct fc_err err;
	size_t added = 0, longer = 0;
	int rc = FC_EXIT_FAILURE;

	fc_cmd_parse(cmd, argc, argv, &opt, NULL);
	path = argv[optind];
	if (opt.set && fc_set_name_check(opt.set, &err) < 0)
		fc_usage_error(cmd, "--set: %s", err.msg);
	if (opt.set && opt.force)
		fc_usage_error(cmd, "--force: only without --set (a set's bans lapse with the set)");
	if (fc_import_read(path, &feed, &prog) < 0)
		goto out;
	fc_feed_sort(&feed);
	if (opt.set ? fc_import_set(ctx, &opt, &feed, &prog, &res, &err) < 0 :
		      fc_import_by_hand(ctx, &opt, &feed, &prog, &added, &longer, &err) < 0) {
		fc_progress_end(&prog, ""); /* the error on a line of its own */
		fc_warn("ban import %s: %s%s", path, fc_priv_hint(), err.msg);
		goto out;
	}
	rc = FC_EXIT_OK;
	fc_duration_format(opt.ttl, dur);
	if (opt.json)
		rc = fc_json_print(json_pack("{s:s, s:s?, s:I, s:I, s:I, s:I, s:I, s:o}", "file", path, "set", opt.set,
					     "entries", (json_int_t)feed.n,
					     "added", (json_int_t)(opt.set ? res.added : added),
					     "removed", (json_int_t)res.removed,
					     "kept", (json_int_t)(opt.set ? res.kept : feed.n - added),
					     "longer", (json_int_t)longer,
					     "ttl", opt.ttl ? json_integer(opt.ttl) : json_null()));
	else if (opt.set)
		printf("ban set %s%s: %zu bans from %s (%zu added, %zu removed, %zu kept)%s%s\n", opt.set,
		       res.created ? " (new)" : "", feed.n, path, res.added, res.removed, res.kept,
		       opt.ttl ? "; lapses in " : "", opt.ttl ? dur : "");
	else if (longer)
		printf("imported %zu ban%s from %s (%zu new, %zu already banned; %zu of those kept as they were: they "
		       "last longer than %s; --force replaces them)\n",
		       feed.n, feed.n == 1 ? "" : "s", path, added, feed.n - added, longer, dur);
	else
		printf("imported %zu ban%s from %s (%zu new, %zu already banned)\n", feed.n, feed.n == 1 ? "" : "s", path,
		       added, feed.n - added);
out:
	fc_feed_free(&feed);
	return rc;
}

struct fc_ban_list_opt {
	const char *set;
	bool json;
};

static const struct fc_opt fc_ban_list_opts[] = {
	FC_OPTION("set", 0, FC_OPT_STR, struct fc_ban_list_opt, set, .arg = "NAME", .help = "only ban set NAME's bans"),
	FC_OPTION("json", 0, FC_OPT_FLAG, struct fc_ban_list_opt, json, .help = "print JSON instead of text"),
	FC_OPT_END,
};

/* The store's bans (or set's), with the names of the sets they come from. */
struct fc_ban_listing {
	struct fc_ban_row *rows;
	size_t n;
	struct fc_uid_ban *ub;
	size_t nu;
	struct fc_ban_set *sets;
	size_t nsets;
	struct fc_allow_row *allows; /* to name the one overriding each ban */
	size_t na;
};

static int fc_ban_listing_read(const struct fc_ctx *ctx, const char *set, int64_t now, struct fc_ban_listing *l,
			       struct fc_err *err)
{
	struct fc_store *st = NULL;
	struct fc_ban_set one;
	bool found = true;
	int rc = -1;

	memset(l, 0, sizeof(*l));
	rc = fc_store_open_read(ctx->db_path, &st, err);
	if (rc == 1 && set)
		fc_err_set(err, "--set %s: no such ban set (see 'freqctl ban sets')", set);
	if (rc)
		return rc > 0 && !set ? 0 : -1; /* no store: nothing banned */
	rc = -1;
	if (fc_store_set_list(st, now, &l->sets, &l->nsets, err) < 0 ||
	    fc_store_allow_list(st, now, &l->allows, &l->na, err) < 0)
		goto out;
	if (set) {
		if (fc_store_set_get(st, set, now, &one, &found, err) < 0 ||
		    (found && fc_store_set_bans(st, one.id, now, &l->rows, &l->n, err) < 0))
			goto out;
		if (!found) {
			fc_err_set(err, "--set %s: no such ban set (see 'freqctl ban sets')", set);
			goto out;
		}
	} else if (fc_store_ban_list(st, now, &l->rows, &l->n, err) < 0 ||
		   fc_store_uid_ban_list(st, now, &l->ub, &l->nu, err) < 0) {
		goto out;
	}
	rc = 0;
out:
	fc_store_close(st);
	return rc;
}

static void fc_ban_listing_free(struct fc_ban_listing *l)
{
	free(l->rows);
	free(l->ub);
	free(l->sets);
	free(l->allows);
}

static int fc_ban_list(const struct fc_ctx *ctx, const struct fc_cmd *cmd, int argc, char **argv)
{
	char text[FC_PREFIX_STRLEN], expires[FC_TIME_STRLEN], left[FC_DURATION_STRLEN], reason[96];
	char by[FC_BAN_TEXT_LEN];
	const struct fc_allow_row *al;
	int64_t now = (int64_t)time(NULL);
	struct fc_ban_list_opt opt = { 0 };
	struct fc_ban_listing l;
	struct fc_err err;
	size_t i;
	json_t *arr;

	fc_cmd_parse(cmd, argc, argv, &opt, NULL);
	if (fc_ban_listing_read(ctx, opt.set, now, &l, &err) < 0) {
		fc_warn("ban list: %s", err.msg);
		fc_ban_listing_free(&l);
		return FC_EXIT_FAILURE;
	}
	if (opt.json) {
		arr = fc_bans_to_json(l.rows, l.n, l.ub, l.nu, l.sets, l.nsets, l.allows, l.na, now);
		fc_ban_listing_free(&l);
		return fc_json_print(arr);
	}
	if (l.n + l.nu)
		printf("%-44s %-6s %-20s %-10s %s\n", "BAN", "KIND", "EXPIRES", "REMAINING", "SOURCE");
	for (i = 0; i < l.n + l.nu; i++) {
		const struct fc_ban_row *r = i < l.n ? &l.rows[i] : NULL;
		int64_t exp = r ? r->expires : l.ub[i - l.n].expires;

		if (r)
			fc_prefix_format(&r->p, text);
		else
			snprintf(text, sizeof(text), "uid=%.47s", l.ub[i - l.n].uid);
		fc_time_format(exp, expires);
		fc_duration_format(exp - fc_expires_after(0), left); /* from the whole second, as a TTL */
		if (r && r->set)
			snprintf(reason, sizeof(reason), "set %s", fc_set_name_of(l.sets, l.nsets, r->set));
		else if (r && r->by_policy)
			snprintf(reason, sizeof(reason), "escalated by policy %u", r->by_policy);
		else
			snprintf(reason, sizeof(reason), "by hand");
		al = fc_allow_over_ban(l.allows, l.na, r, r ? NULL : &l.ub[i - l.n]);
		if (al)
			fc_allow_format(al, by);
		printf("%-44s %-6s %-20s %-10s %s%s%s\n", text, !r ? "uid" : fc_prefix_is_exact(&r->p) ? "exact" : "prefix",
		       exp ? expires : "never", exp ? left : "-", reason, al ? "; overridden by allow " : "", al ? by : "");
	}
	fc_ban_listing_free(&l);
	return FC_EXIT_OK;
}

static int fc_ban_sets(const struct fc_ctx *ctx, const struct fc_cmd *cmd, int argc, char **argv)
{
	char updated[FC_TIME_STRLEN], expires[FC_TIME_STRLEN];
	int64_t now = (int64_t)time(NULL);
	struct fc_json_opt opt = { 0 };
	struct fc_ban_listing l = { 0 };
	struct fc_store *st = NULL;
	struct fc_err err;
	size_t i;
	json_t *arr;
	int rc;

	fc_cmd_parse(cmd, argc, argv, &opt, NULL);
	if ((rc = fc_store_open_read(ctx->db_path, &st, &err)) < 0 ||
	    (rc == 0 && fc_store_set_list(st, now, &l.sets, &l.nsets, &err) < 0)) {
		fc_warn("ban sets: %s", err.msg);
		fc_store_close(st);
		return FC_EXIT_FAILURE;
	}
	if (opt.json) {
		arr = json_array();
		for (i = 0; arr && i < l.nsets; i++)
			json_array_append_new(arr, fc_ban_set_to_json(&l.sets[i]));
		fc_ban_listing_free(&l);
		return fc_json_print(arr);
	}
	if (l.nsets)
		printf("%-24s %10s %-20s %s\n", "SET", "BANS", "UPDATED", "LAPSES");
	for (i = 0; i < l.nsets; i++) {
		fc_time_format(l.sets[i].updated, updated);
		fc_time_format(l.sets[i].expires, expires);
		printf("%-24s %10llu %-20s %s\n", l.sets[i].name, (unsigned long long)l.sets[i].size, updated,
		       l.sets[i].expires ? expires : "never");
	}
	fc_ban_listing_free(&l);
	return FC_EXIT_OK;
}

const struct fc_cmd fc_cmd_ban_add = {
	.name = "ban add",
	.args = "ADDR[/LEN]|uid=VALUE",
	.min_args = 1,
	.max_args = 1,
	.summary = "Ban an address or prefix (dropped at XDP/TC, refused in nginx) or a user id (nginx).",
	.details = "An exact address (no /LEN, or /32, /128) goes into a hash map; a prefix into the prefix\n"
		   "maps (IPv4: an entry per /16 and a hash of /17 to /31; IPv6: a hash searched by\n"
		   "length), where a packet costs an array access and at most a hash lookup or a few.\n"
		   "/0 is refused. Host bits must be zero (10.0.0.0/8, not 10.0.0.5/8). Banning again\n"
		   "replaces the ban's TTL when it holds as long or longer (no --ttl over a TTL, a longer\n"
		   "TTL) and says what it was; one that would lift it sooner (--ttl over a ban of no\n"
		   "expiry, or over a longer TTL) is refused (exit 1) unless --force. The store is changed\n"
		   "in one transaction and published at once to the pinned maps and the L7 shm; attached\n"
		   "programs enforce it from the next packet, nginx from the next request (behind a proxy,\n"
		   "on the client address realip gives it). uid=VALUE bans a user id in nginx (freqctl_uid\n"
		   "says where the id comes from). It says where the ban is enforced: the interfaces\n"
		   "attached with this pin dir, and the nginx processes that map the shm; or that nothing\n"
		   "enforces it yet (\"stored the ban of ..., enforced nowhere yet\") and what would.",
	.opts = fc_ban_add_opts,
	.store = FC_STORE_MAKES,
	.run = fc_ban_add,
};

const struct fc_cmd fc_cmd_ban_del = {
	.name = "ban del",
	.args = "[ADDR[/LEN]|uid=VALUE]",
	.min_args = 0,
	.max_args = 1,
	.summary = "Lift a ban by hand, or delete a ban set (--set NAME).",
	.details = "The address or prefix must be written as it was banned (a prefix is not lifted by\n"
		   "naming an address inside it); lifting a ban that does not exist is an error (exit 1).\n"
		   "An address stays banned while any source holds it: lifting the ban by hand leaves\n"
		   "those of ban sets (the output names them), and a ban only sets hold is lifted with\n"
		   "its set: --set NAME deletes the set and lifts its bans.",
	.opts = fc_ban_del_opts,
	.store = FC_STORE_AT_OPEN,
	.run = fc_ban_del,
};

const struct fc_cmd fc_cmd_ban_import = {
	.name = "ban import",
	.args = "FILE",
	.min_args = 1,
	.max_args = 1,
	.summary = "Ban every address, CIDR or range listed in FILE ('-' reads standard input).",
	.details = "One entry per line: an address, a CIDR, or a range a.b.c.d-e.f.g.h (IPv6 too), which\n"
		   "becomes the fewest CIDRs covering it. '#' and ';' start a comment, also after an\n"
		   "entry (Spamhaus DROP: 1.2.3.0/24 ; SBL123); blank lines are skipped. The whole file\n"
		   "is validated first: any bad line is reported as FILE:LINE: what was expected, and\n"
		   "nothing is imported. Without --set, the bans are added by hand; a ban there already\n"
		   "that would last longer than --ttl is kept as it was, as ban add keeps it, and counted\n"
		   "(--force replaces it). With --set NAME, the set becomes exactly the file's bans in\n"
		   "one transaction: what is new is added, what is gone is lifted, what stays is kept,\n"
		   "and only the difference is published. A set's --ttl applies to the whole set: it\n"
		   "lapses DURATION after the last import (an hourly feed with --ttl 3h stays while it\n"
		   "is refreshed). Progress is shown on a terminal.",
	.opts = fc_ban_import_opts,
	.store = FC_STORE_MAKES,
	.run = fc_ban_import,
};

const struct fc_cmd fc_cmd_ban_list = {
	.name = "ban list",
	.min_args = 0,
	.max_args = 0,
	.summary = "List the bans in the store that have not expired, each with its source.",
	.details = "Columns: BAN, KIND (exact, prefix or uid), EXPIRES (UTC, or never), REMAINING, SOURCE.\n"
		   "SOURCE is by hand, escalated by an L7 policy's --escalate, or set NAME; a ban held by\n"
		   "several sources is listed once for each (a set's bans show the set's lapse time). It\n"
		   "names the allow entry that overrides the ban, if one covers it (see allow add).\n"
		   "--json prints an array of {ban, family, kind, created, expires, ttl_remaining,\n"
		   "escalated_by_policy, set, allowed_by}.",
	.opts = fc_ban_list_opts,
	.run = fc_ban_list,
};

const struct fc_cmd fc_cmd_ban_sets = {
	.name = "ban sets",
	.min_args = 0,
	.max_args = 0,
	.summary = "List the ban sets: name, bans, last import, lapse time.",
	.details = "--json prints an array of {set, bans, created, updated, expires}.",
	.opts = fc_opts_json,
	.run = fc_ban_sets,
};
