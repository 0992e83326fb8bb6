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
#include "fc_publish.h"
#include "fc_rows_json.h"

#define FC_IMPORT_MAX_ERRORS 20

struct fc_ban_opt {
	int64_t ttl; /* seconds; 0 = none */
};

static const struct fc_opt fc_ban_add_opts[] = {
	FC_OPTION("ttl", 0, FC_OPT_DURATION, struct fc_ban_opt, ttl, .arg = "DURATION",
		  .help = "lift the ban after DURATION (90s, 10m, 1h, 7d, 1h30m)"),
	FC_OPT_END,
};

static int fc_ban_add(const struct fc_ctx *ctx, const struct fc_cmd *cmd, int argc, char **argv)
{
	char text[FC_BAN_TEXT_LEN], dur[FC_DURATION_STRLEN];
	struct fc_err err;
	struct fc_ban_opt opt = { 0 };
	bool existed;
	int rc;

	fc_cmd_parse(cmd, argc, argv, &opt, NULL);
	rc = fc_change_ban_put(ctx, argv[optind], opt.ttl, text, &existed, &err);
	if ((rc = fc_cmd_changed(cmd, rc, text, &err)))
		return rc;
	fc_duration_format(opt.ttl, dur);
	printf("%s %s%s%s\n", existed ? "re-banned" : "banned", text, opt.ttl ? " for " : " (no expiry)",
	       opt.ttl ? dur : "");
	return FC_EXIT_OK;
}

static int fc_ban_del(const struct fc_ctx *ctx, const struct fc_cmd *cmd, int argc, char **argv)
{
	char text[FC_BAN_TEXT_LEN];
	struct fc_err err;
	int rc;

	fc_cmd_parse(cmd, argc, argv, NULL, NULL);
	rc = fc_change_ban_del(ctx, argv[optind], text, &err);
	if ((rc = fc_cmd_changed(cmd, rc, text, &err)))
		return rc;
	printf("unbanned %s\n", text);
	return FC_EXIT_OK;
}

/* The parsed import file. */
struct fc_import {
	struct fc_prefix *v;
	size_t n, cap;
	size_t bad;
};

/* Strips a '#' comment and surrounding blanks; returns the token or NULL
 * for a blank line; *extra points at a second token if there is one. */
static char *fc_import_token(char *line, char **extra)
{
	char *hash = strchr(line, '#'), *end;

	if (hash)
		*hash = '\0';
	line += strspn(line, " \t\r\n");
	if (!*line)
		return NULL;
	end = line + strcspn(line, " \t\r\n");
	*extra = end + strspn(end, " \t\r\n");
	*end = '\0';
	if (**extra)
		(*extra)[strcspn(*extra, " \t\r\n")] = '\0';
	return line;
}

/* Reads and validates the whole file; nothing is applied unless all of it is good. */
static int fc_import_read(const char *path, struct fc_import *imp)
{
	FILE *f = strcmp(path, "-") ? fopen(path, "r") : stdin;
	char *line = NULL, *tok, *extra;
	size_t lineno = 0, linecap = 0;
	struct fc_prefix *nv;
	struct fc_err err;

	if (!f) {
		fc_warn("ban import %s: %s", path, strerror(errno));
		return -1;
	}
	while (getline(&line, &linecap, f) != -1) {
		lineno++;
		tok = fc_import_token(line, &extra);
		if (!tok)
			continue;
		if (imp->n == imp->cap) {
			imp->cap = imp->cap ? imp->cap * 2 : 4096;
			nv = realloc(imp->v, imp->cap * sizeof(*nv));
			if (!nv) {
				fc_warn("ban import %s: out of memory at line %zu", path, lineno);
				imp->bad++;
				break;
			}
			imp->v = nv;
		}
		if (*extra)
			fc_err_set(&err, "unexpected \"%s\" after the address (one address or prefix per line)", extra);
		if (*extra || fc_prefix_parse(tok, &imp->v[imp->n], &err) < 0) {
			if (++imp->bad <= FC_IMPORT_MAX_ERRORS)
				fc_warn("%s:%zu: %s", path, lineno, err.msg);
			continue;
		}
		imp->n++;
	}
	if (ferror(f)) {
		fc_warn("ban import %s: read error: %s", path, strerror(errno));
		imp->bad++;
	}
	free(line);
	if (f != stdin)
		fclose(f);
	if (imp->bad > FC_IMPORT_MAX_ERRORS)
		fc_warn("%s: ... and %zu more invalid lines", path, imp->bad - FC_IMPORT_MAX_ERRORS);
	if (imp->bad)
		fc_warn("ban import %s: %zu invalid line%s; nothing imported", path, imp->bad, imp->bad == 1 ? "" : "s");
	return imp->bad ? -1 : 0;
}

static int fc_ban_import(const struct fc_ctx *ctx, const struct fc_cmd *cmd, int argc, char **argv)
{
	struct fc_import imp = {};
	struct fc_ban_row row = {};
	struct fc_ban_counts before, after;
	size_t i;
	struct fc_publish pub;
	bool progress = isatty(STDERR_FILENO); /* quiet when piped */
	const char *path;
	struct fc_err err;
	struct fc_ban_opt opt = { 0 };

	fc_cmd_parse(cmd, argc, argv, &opt, NULL);
	path = argv[optind];
	if (fc_import_read(path, &imp) < 0) {
		free(imp.v);
		return FC_EXIT_FAILURE;
	}

	if (fc_publish_begin(&pub, ctx, &err) < 0)
		goto fail;
	row.created = pub.now;
	row.expires = opt.ttl ? fc_expires_after(opt.ttl) : 0;
	if (fc_store_ban_count(pub.st, pub.now, &before, &err) < 0)
		goto abort;
	for (i = 0; i < imp.n; i++) {
		row.p = imp.v[i];
		if (fc_store_ban_put(pub.st, &row, &err) < 0)
			goto abort;
		if (progress && (i % 65536 == 0 || i + 1 == imp.n))
			fprintf(stderr, "\rfreqctl: storing %zu/%zu", i + 1, imp.n);
	}
	if (fc_store_ban_count(pub.st, pub.now, &after, &err) < 0)
		goto abort;
	if (progress)
		fputs(imp.n ? ", publishing...\n" : "", stderr);
	if (fc_publish_commit(&pub, &err) < 0)
		goto fail;
	printf("imported %zu bans from %s (%zu new, %zu already banned)\n", imp.n, path, after.addresses - before.addresses,
	       imp.n - (after.addresses - before.addresses));
	free(imp.v);
	return FC_EXIT_OK;
abort:
	fc_publish_abort(&pub);
fail:
	fc_warn("ban import %s: %s", path, err.msg);
	free(imp.v);
	return FC_EXIT_FAILURE;
}

static int fc_ban_list(const struct fc_ctx *ctx, const struct fc_cmd *cmd, int argc, char **argv)
{
	char text[FC_PREFIX_STRLEN], expires[FC_TIME_STRLEN], left[FC_DURATION_STRLEN], reason[48];
	char by[FC_BAN_TEXT_LEN];
	const struct fc_allow_row *a;
	struct fc_allow_row *allows = NULL;
	struct fc_ban_row *rows = NULL;
	struct fc_uid_ban *ub = NULL;
	struct fc_store *st = NULL;
	int64_t now = (int64_t)time(NULL);
	struct fc_json_opt opt = { 0 };
	struct fc_err err;
	size_t n = 0, nu = 0, na = 0, i;
	int rc = FC_EXIT_OK;

	fc_cmd_parse(cmd, argc, argv, &opt, NULL);
	if (fc_store_open(ctx->db_path, &st, &err) < 0 || fc_store_ban_list(st, now, &rows, &n, &err) < 0 ||
	    fc_store_uid_ban_list(st, now, &ub, &nu, &err) < 0 || fc_store_allow_list(st, now, &allows, &na, &err) < 0) {
		fc_warn("ban list: %s", err.msg);
		rc = FC_EXIT_FAILURE;
		goto out;
	}
	if (opt.json) {
		rc = fc_json_print(fc_bans_to_json(rows, n, ub, nu, allows, na, now));
		goto out;
	}
	if (n + nu)
		printf("%-44s %-6s %-20s %-10s %s\n", "BAN", "KIND", "EXPIRES", "REMAINING", "REASON");
	for (i = 0; i < n + nu; i++) {
		int64_t exp = i < n ? rows[i].expires : ub[i - n].expires;

		if (i < n)
			fc_prefix_format(&rows[i].p, text);
		else
			snprintf(text, sizeof(text), "uid=%.47s", ub[i - n].uid);
		fc_time_format(exp, expires);
		fc_duration_format(exp - now, left);
		snprintf(reason, sizeof(reason), "escalated by policy %u", i < n ? rows[i].by_policy : 0);
		a = fc_allow_over_ban(allows, na, i < n ? &rows[i] : NULL, i < n ? NULL : &ub[i - n]);
		if (a)
			fc_allow_format(a, by);
		printf("%-44s %-6s %-20s %-10s %s%s%s\n", text,
		       i >= n ? "uid" : fc_prefix_is_exact(&rows[i].p) ? "exact" : "prefix", exp ? expires : "never",
		       exp ? left : "-", i < n && rows[i].by_policy ? reason : "by hand",
		       a ? "; overridden by allow " : "", a ? by : "");
	}
out:
	fc_store_close(st);
	free(rows);
	free(ub);
	free(allows);
	return rc;
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
		   "/0 is refused. Host bits must be zero (10.0.0.0/8, not 10.0.0.5/8). Banning an\n"
		   "address again replaces its TTL. The store is changed in one transaction and published\n"
		   "at once to the pinned maps and the L7 shm; attached programs enforce it from the next\n"
		   "packet, nginx from the next request (behind a proxy, on the client address realip\n"
		   "gives it). uid=VALUE bans a user id in nginx (freqctl_uid says where the id comes from).",
	.opts = fc_ban_add_opts,
	.run = fc_ban_add,
};

const struct fc_cmd fc_cmd_ban_del = {
	.name = "ban del",
	.args = "ADDR[/LEN]|uid=VALUE",
	.min_args = 1,
	.max_args = 1,
	.summary = "Lift a ban.",
	.details = "The address or prefix must be written as it was banned (a prefix is not lifted by\n"
		   "naming an address inside it); lifting a ban that does not exist is an error (exit 1).",
	.opts = fc_opts_none,
	.run = fc_ban_del,
};

const struct fc_cmd fc_cmd_ban_import = {
	.name = "ban import",
	.args = "FILE",
	.min_args = 1,
	.max_args = 1,
	.summary = "Ban every address or prefix listed in FILE ('-' reads standard input).",
	.details = "One address or prefix per line; '#' starts a comment; blank lines are ignored.\n"
		   "The whole file is validated first: if any line is invalid, the bad lines are reported\n"
		   "with their numbers and nothing is imported. Then all bans are stored in one transaction\n"
		   "and published with batched map updates.",
	.opts = fc_ban_add_opts,
	.run = fc_ban_import,
};

const struct fc_cmd fc_cmd_ban_list = {
	.name = "ban list",
	.min_args = 0,
	.max_args = 0,
	.summary = "List the bans in the store that have not expired.",
	.details = "Columns: BAN, KIND (exact, prefix or uid), EXPIRES (UTC, or never), REMAINING, REASON.\n"
		   "REASON says who banned: by hand, or escalated by an L7 policy's --escalate, and\n"
		   "names the allow entry that overrides the ban, if one covers it (see allow add).\n"
		   "--json prints an array of {ban, family, kind, created, expires, ttl_remaining,\n"
		   "escalated_by_policy, allowed_by}.",
	.opts = fc_opts_json,
	.run = fc_ban_list,
};
