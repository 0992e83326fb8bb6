// SPDX-License-Identifier: BSD-2-Clause
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fc_allow.h"
#include "fc_change.h"
#include "fc_duration.h"
#include "fc_feed.h"
#include "fc_publish.h"

/* Refuses to move old to another layer than p's when the layer was not
 * said: "policy set 2 --match ip=* --rate 20/s" on an ip=* in nginx would
 * otherwise make a request limit a packet limit at XDP/TC. A new match of
 * another dimension than ip= says the layer itself. */
static int fc_policy_layer_kept(const struct fc_policy_spec *old, const struct fc_policy_spec *p, unsigned how,
				struct fc_err *err)
{
	static const char *const where[] = { [FC_LAYER_XDP] = "at XDP/TC (packets)",
					     [FC_LAYER_HTTP] = "in nginx (requests)" };
	enum fc_layer was = fc_policy_layer(old), now = fc_policy_layer(p);

	if ((how & FC_PUT_LAYER_SAID) || !fc_policy_ip_only(p) || was == now)
		return 0;
	return fc_err_set(err, "runs %s, and without --layer this one would run %s: give --layer %s to keep it "
			       "there or --layer %s to move it, or change only what you give with 'freqctl policy "
			       "edit %u'",
			  where[was], where[now], fc_layer_names[was], fc_layer_names[now], p->id);
}

/* Refuses a /0 the policy did not have, unless forced: one bucket for
 * every source is rarely what was meant (a rate per source is ip=*). */
static int fc_policy_zero_forced(const struct fc_policy_spec *old, bool found, const struct fc_policy_spec *p,
				 unsigned how, struct fc_err *err)
{
	char what[FC_ERR_LEN / 2];

	if (!fc_policy_is_zero(p) || (how & FC_PUT_FORCE) ||
	    (found && fc_policy_is_zero(old) && old->ip.family == p->ip.family &&
	     fc_policy_layer(old) == fc_policy_layer(p)))
		return 0;
	fc_policy_zero_what(p, what, sizeof(what));
	return fc_err_set(err, "%s; a bucket per %s is --match 'ip=*'; give --force if one shared bucket is what you "
			       "want",
			  what, fc_policy_is_l7(p) ? "client" : "source");
}

/* Refuses an nginx policy whose argument or header name would be one more
 * than nginx reads: it would be stored, listed and left unenforced. */
static int fc_policy_names_fit(struct fc_publish *pub, const struct fc_policy_spec *p, struct fc_err *err)
{
	struct fc_policy_row *rows = NULL;
	struct fc_names *names;
	struct fc_err skip;
	size_t n = 0, i;
	int d, rc = 0;

	for (d = 0; d < p->ndims && p->dims[d].kind != FC_DIM_ARG && p->dims[d].kind != FC_DIM_HEADER; d++)
		;
	if (d == p->ndims || !fc_policy_is_l7(p))
		return 0;
	if (!(names = calloc(1, sizeof(*names))))
		return fc_err_set(err, "out of memory");
	if (fc_store_policy_list(pub->st, &rows, &n, err) < 0) {
		rc = FC_CHANGE_RUNTIME;
		goto out;
	}
	/* Those in use first: a store past the bound already (an older
	 * version's) refuses only what brings a new name. */
	for (i = 0; i < n; i++)
		if (rows[i].spec.id != p->id)
			fc_names_add(names, &rows[i].spec, &skip);
	if (fc_names_add(names, p, err) < 0)
		rc = FC_CHANGE_CONFLICT;
out:
	free(rows);
	free(names);
	return rc;
}

/* Puts p in pub's open transaction, over old if found. */
static int fc_policy_put_in(struct fc_publish *pub, const struct fc_policy_spec *p, const struct fc_policy_row *old,
			    bool found, unsigned how, struct fc_policy_row *row, struct fc_err *err)
{
	int rc;

	if (fc_policy_validate_new(p, err) < 0 || fc_policy_zero_forced(&old->spec, found, p, how, err) < 0) {
		fc_publish_abort(pub);
		return FC_CHANGE_INVALID;
	}
	if (found && fc_policy_layer_kept(&old->spec, p, how, err) < 0) {
		fc_publish_abort(pub);
		return FC_CHANGE_CONFLICT;
	}
	rc = fc_policy_names_fit(pub, p, err);
	if (rc) {
		fc_publish_abort(pub);
		return rc;
	}
	rc = fc_store_policy_put(pub->st, p, pub->now, row, err);
	if (rc < 0) {
		fc_publish_abort(pub);
		return rc == FC_STORE_REFUSED ? FC_CHANGE_CONFLICT : FC_CHANGE_RUNTIME;
	}
	return fc_publish_commit(pub, err) < 0 ? FC_CHANGE_RUNTIME : 0;
}

int fc_change_policy_put(const struct fc_ctx *ctx, const struct fc_policy_spec *p, unsigned how, bool *found,
			 struct fc_policy_row *row, struct fc_err *err)
{
	struct fc_policy_row old;
	struct fc_publish pub;

	if (fc_publish_begin(&pub, ctx, err) < 0)
		return FC_CHANGE_RUNTIME;
	if (fc_store_policy_get(pub.st, p->id, &old, found, err) < 0) {
		fc_publish_abort(&pub);
		return FC_CHANGE_RUNTIME;
	}
	if (*found && !(how & FC_PUT_REPLACE)) {
		fc_publish_abort(&pub);
		fc_err_set(err, "exists; use 'freqctl policy set' to replace it, or 'freqctl policy edit' to change "
				"what you give");
		return FC_CHANGE_CONFLICT;
	}
	return fc_policy_put_in(&pub, p, &old, *found, how, row, err);
}

int fc_change_policy_edit(const struct fc_ctx *ctx, uint32_t id, fc_policy_edit_fn edit, const void *arg,
			  unsigned how, struct fc_policy_row *row, struct fc_err *err)
{
	struct fc_policy_row old;
	struct fc_policy_spec p;
	struct fc_publish pub;
	bool found;

	if (fc_publish_begin(&pub, ctx, err) < 0)
		return FC_CHANGE_RUNTIME;
	if (fc_store_policy_get(pub.st, id, &old, &found, err) < 0) {
		fc_publish_abort(&pub);
		return FC_CHANGE_RUNTIME;
	}
	if (!found) {
		fc_publish_abort(&pub);
		fc_err_set(err, "no such policy (see 'freqctl policy list'; 'freqctl policy add' makes one)");
		return FC_CHANGE_CONFLICT;
	}
	p = old.spec;
	if (edit(&p, arg, err) < 0 || fc_policy_validate(&p, err) < 0) {
		fc_publish_abort(&pub);
		return FC_CHANGE_INVALID;
	}
	return fc_policy_put_in(&pub, &p, &old, true, how, row, err);
}

int fc_change_policy_del(const struct fc_ctx *ctx, uint32_t id, struct fc_err *err)
{
	struct fc_publish pub;
	bool found;

	if (fc_publish_begin(&pub, ctx, err) < 0)
		return FC_CHANGE_RUNTIME;
	if (fc_store_policy_del(pub.st, id, &found, err) < 0) {
		fc_publish_abort(&pub);
		return FC_CHANGE_RUNTIME;
	}
	if (!found) {
		fc_publish_abort(&pub);
		fc_err_set(err, "no such policy (see 'freqctl policy list')");
		return FC_CHANGE_CONFLICT;
	}
	return fc_publish_commit(&pub, err) < 0 ? FC_CHANGE_RUNTIME : 0;
}

/* Whether a ban until expires (0: none) lifts a live one, until was, sooner. */
static bool fc_ban_sooner(int64_t expires, int64_t was)
{
	return expires && (!was || expires < was);
}

int fc_change_ban_put(const struct fc_ctx *ctx, const char *text, int64_t ttl, bool force, char canon[FC_BAN_TEXT_LEN],
		      int64_t *was, struct fc_err *err)
{
	struct fc_ban_row row = { .expires = 0 }, old = { .expires = 0 };
	struct fc_uid_ban ub = { .expires = 0 };
	char left[FC_DURATION_STRLEN], want[FC_DURATION_STRLEN];
	struct fc_publish pub;
	const char *uid;
	bool existed;
	int rc;

	*was = -1;
	if (fc_target_parse(text, &row.p, &uid, canon, err) < 0)
		return FC_CHANGE_INVALID;
	if (fc_publish_begin(&pub, ctx, err) < 0)
		return FC_CHANGE_RUNTIME;
	row.created = ub.created = pub.now;
	row.expires = ub.expires = ttl ? fc_expires_after(ttl) : 0;
	rc = uid ? fc_store_uid_ban_get(pub.st, uid, pub.now, &old.expires, &existed, err) :
		   fc_store_ban_get(pub.st, &row.p, pub.now, &old, &existed, err);
	/* A ban is never cut short by one that did not mean to (ipset's add
	 * refuses an entry there without -exist; a permanent ban of fail2ban's
	 * stays so). */
	if (rc == 0 && existed && !force && fc_ban_sooner(row.expires, old.expires)) {
		fc_duration_format(old.expires - fc_expires_after(0), left); /* from the whole second, as its TTL */
		fc_duration_format(ttl, want);
		fc_err_set(err, "already banned %s%s%s: a ban for %s would lift it sooner; --force replaces it",
			   old.expires ? "for " : "with no expiry", old.expires ? left : "", old.expires ? " more" : "",
			   want);
		fc_publish_abort(&pub);
		return FC_CHANGE_CONFLICT;
	}
	if (rc == 0 && uid) {
		snprintf(ub.uid, sizeof(ub.uid), "%s", uid);
		rc = fc_store_uid_ban_put(pub.st, &ub, &existed, pub.now, err);
	} else if (rc == 0) {
		rc = fc_store_ban_put(pub.st, &row, err);
	}
	if (rc < 0) {
		fc_publish_abort(&pub);
		return FC_CHANGE_RUNTIME;
	}
	if (existed)
		*was = old.expires;
	return fc_publish_commit(&pub, err) < 0 ? FC_CHANGE_RUNTIME : 0;
}

int fc_change_ban_del(const struct fc_ctx *ctx, const char *text, char canon[FC_BAN_TEXT_LEN],
		      char held[FC_SETS_TEXT_LEN], struct fc_err *err)
{
	struct fc_publish pub;
	struct fc_prefix p;
	const char *uid;
	bool found;

	held[0] = '\0';
	if (fc_target_parse(text, &p, &uid, canon, err) < 0)
		return FC_CHANGE_INVALID;
	if (fc_publish_begin(&pub, ctx, err) < 0)
		return FC_CHANGE_RUNTIME;
	if ((uid ? fc_store_uid_ban_del(pub.st, uid, &found, err) : fc_store_ban_del(pub.st, &p, &found, err)) < 0 ||
	    (!uid && fc_store_set_holders(pub.st, &p, pub.now, held, FC_SETS_TEXT_LEN, err) < 0)) {
		fc_publish_abort(&pub);
		return FC_CHANGE_RUNTIME;
	}
	if (!found) {
		fc_publish_abort(&pub);
		if (*held)
			fc_err_set(err, "not banned by hand; ban set %s holds it (freqctl ban del --set NAME lifts a set)",
				   held);
		else
			fc_err_set(err, "not banned (see 'freqctl ban list')");
		return FC_CHANGE_CONFLICT;
	}
	return fc_publish_commit(&pub, err) < 0 ? FC_CHANGE_RUNTIME : 0;
}

int fc_set_replace(struct fc_publish *pub, const char *name, const struct fc_prefix *keys, size_t n, int64_t expires,
		   void (*progress)(size_t done, size_t total, void *arg), void *arg, struct fc_set_result *res,
		   struct fc_err *err)
{
	struct fc_store_progress prog = { .fn = progress, .arg = arg };
	struct fc_prefix *have = NULL, *add = NULL;
	struct fc_ban_set set = { 0 };
	size_t nhave = 0, i = 0, j = 0;
	bool found;
	int rc = -1, c;

	memset(res, 0, sizeof(*res));
	if (fc_store_set_get(pub->st, name, pub->now, &set, &found, err) < 0)
		return -1;
	if (found && fc_store_set_keys(pub->st, set.id, &have, &nhave, err) < 0)
		return -1;
	if (!found) {
		snprintf(set.name, sizeof(set.name), "%s", name);
		set.created = pub->now;
		res->created = true;
	}
	set.updated = pub->now;
	set.expires = expires;
	set.size = n;
	rc = fc_store_set_put(pub->st, &set, err);
	if (rc < 0)
		goto out;
	rc = -1;
	res->id = set.id;
	res->entries = n;
	add = malloc((n ? n : 1) * sizeof(*add));
	if (!add) {
		fc_err_set(err, "out of memory");
		goto out;
	}
	/* Both in address order: one pass finds what comes and what goes,
	 * what goes gathered at the front of have (never past j). */
	while (i < n || j < nhave) {
		c = i == n ? 1 : j == nhave ? -1 : fc_prefix_cmp(&keys[i], &have[j]);
		if (c < 0)
			add[res->added++] = keys[i];
		if (c > 0)
			have[res->removed++] = have[j];
		res->kept += c == 0;
		i += c <= 0;
		j += c >= 0;
	}
	prog.total = res->added + res->removed;
	if (fc_store_set_members_put(pub->st, set.id, add, res->added, pub->now, &prog, err) < 0 ||
	    fc_store_set_members_del(pub->st, set.id, have, res->removed, &prog, err) < 0)
		goto out;
	rc = 0;
out:
	free(have);
	free(add);
	return rc;
}

int fc_change_set_del(const struct fc_ctx *ctx, const char *name, size_t *members, struct fc_err *err)
{
	struct fc_publish pub;
	struct fc_ban_set set;
	bool found;

	if (fc_set_name_check(name, err) < 0)
		return FC_CHANGE_INVALID;
	if (fc_publish_begin(&pub, ctx, err) < 0)
		return FC_CHANGE_RUNTIME;
	if (fc_store_set_get(pub.st, name, pub.now, &set, &found, err) < 0 ||
	    (found && fc_store_set_del(pub.st, set.id, err) < 0)) {
		fc_publish_abort(&pub);
		return FC_CHANGE_RUNTIME;
	}
	if (!found) {
		fc_publish_abort(&pub);
		fc_err_set(err, "no such ban set (see 'freqctl ban sets')");
		return FC_CHANGE_CONFLICT;
	}
	*members = set.size;
	return fc_publish_commit(&pub, err) < 0 ? FC_CHANGE_RUNTIME : 0;
}

int fc_change_allow_put(const struct fc_ctx *ctx, const char *text, int64_t ttl, const char *note,
			char canon[FC_BAN_TEXT_LEN], bool *existed, struct fc_err *err)
{
	struct fc_allow_row row;
	struct fc_publish pub;

	if (fc_allow_text(text, &row, canon, err) < 0 || fc_allow_note_check(note, err) < 0)
		return FC_CHANGE_INVALID;
	snprintf(row.note, sizeof(row.note), "%s", note);
	if (fc_publish_begin(&pub, ctx, err) < 0)
		return FC_CHANGE_RUNTIME;
	row.created = pub.now;
	row.expires = ttl ? fc_expires_after(ttl) : 0;
	if (fc_store_allow_put(pub.st, &row, pub.now, existed, err) < 0) {
		fc_publish_abort(&pub);
		return FC_CHANGE_RUNTIME;
	}
	return fc_publish_commit(&pub, err) < 0 ? FC_CHANGE_RUNTIME : 0;
}

int fc_change_allow_del(const struct fc_ctx *ctx, const char *text, char canon[FC_BAN_TEXT_LEN], struct fc_err *err)
{
	struct fc_allow_row key;
	struct fc_publish pub;
	bool found;

	if (fc_allow_text(text, &key, canon, err) < 0)
		return FC_CHANGE_INVALID;
	if (fc_publish_begin(&pub, ctx, err) < 0)
		return FC_CHANGE_RUNTIME;
	if (fc_store_allow_del(pub.st, &key, &found, err) < 0) {
		fc_publish_abort(&pub);
		return FC_CHANGE_RUNTIME;
	}
	if (!found) {
		fc_publish_abort(&pub);
		fc_err_set(err, "not allowed (see 'freqctl allow list')");
		return FC_CHANGE_CONFLICT;
	}
	return fc_publish_commit(&pub, err) < 0 ? FC_CHANGE_RUNTIME : 0;
}
