/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The changes an operator makes, each one transaction on the store published
 * at once to XDP/TC and nginx: shared by the CLI and the console's API, so
 * both validate alike and answer with the same messages. A rejected change
 * leaves the store, the maps and the shm as they were.
 */
#ifndef FC_CHANGE_H
#define FC_CHANGE_H

#include <stdbool.h>

#include "fc_ctx.h"
#include "fc_store.h"
#include "fc_target.h"

struct fc_publish;

/* Why a change was refused: the input, or the store/kernel. */
enum fc_change_fail {
	FC_CHANGE_INVALID = 1, /* the input: a usage error */
	FC_CHANGE_CONFLICT,    /* exists (add), or does not (delete) */
	FC_CHANGE_RUNTIME,     /* the store, the maps or the shm */
};

/* How a policy is put (flags). */
#define FC_PUT_REPLACE    1u /* create or replace (policy set); else an existing id is refused */
#define FC_PUT_LAYER_SAID 2u /* the layer was given: the policy may move to another layer */
#define FC_PUT_FORCE      4u /* --force: a new ip=0.0.0.0/0 or ip=::/0 (fc_policy_is_zero) */

/* Creates policy p (FC_PUT_REPLACE: or replaces it). An existing ip=-only
 * policy is not moved to another layer unless FC_PUT_LAYER_SAID; a /0 that
 * the policy did not have is refused (FC_CHANGE_INVALID) unless
 * FC_PUT_FORCE. *found: it existed. Returns 0 or an fc_change_fail with err
 * set. */
int fc_change_policy_put(const struct fc_ctx *ctx, const struct fc_policy_spec *p, unsigned how, bool *found,
			 struct fc_policy_row *row, struct fc_err *err);
/* Changes policy id by edit, which is given the stored policy to change in
 * place (only what it was told), in the change's transaction; the result is
 * validated as policy add's. how: FC_PUT_LAYER_SAID, FC_PUT_FORCE as above. */
typedef int (*fc_policy_edit_fn)(struct fc_policy_spec *p, const void *arg, struct fc_err *err);
int fc_change_policy_edit(const struct fc_ctx *ctx, uint32_t id, fc_policy_edit_fn edit, const void *arg,
			  unsigned how, struct fc_policy_row *row, struct fc_err *err);
int fc_change_policy_del(const struct fc_ctx *ctx, uint32_t id, struct fc_err *err);

/* Bans text (ADDR[/LEN] or uid=VALUE) for ttl seconds (0: no expiry);
 * canon gets its canonical spelling, *was the expiry of the live ban it
 * replaced (0: none; -1: there was no live ban). A ban that would lift the
 * live one sooner (a ttl over no expiry, or over a longer one) is
 * FC_CHANGE_CONFLICT unless force, err saying what is there. */
int fc_change_ban_put(const struct fc_ctx *ctx, const char *text, int64_t ttl, bool force, char canon[FC_BAN_TEXT_LEN],
		      int64_t *was, struct fc_err *err);
/* Lifts the ban by hand on text; held: the sets still banning it, if any
 * ("" if none). A ban held only by sets is FC_CHANGE_CONFLICT, err naming them. */
#define FC_SETS_TEXT_LEN 256
int fc_change_ban_del(const struct fc_ctx *ctx, const char *text, char canon[FC_BAN_TEXT_LEN],
		      char held[FC_SETS_TEXT_LEN], struct fc_err *err);

/* What replacing a ban set did. */
struct fc_set_result {
	uint32_t id;
	bool created;
	size_t entries, added, removed, kept;
};

/* Makes ban set name exactly keys (sorted, no repeats, as fc_feed_sort
 * leaves them) in pub's transaction, lapsing at expires (unix seconds; 0:
 * never); what stays is not touched. progress(done, total, arg), if given,
 * is told how the writes go. FC_STORE_REFUSED: no set id left. */
int fc_set_replace(struct fc_publish *pub, const char *name, const struct fc_prefix *keys, size_t n, int64_t expires,
		   void (*progress)(size_t done, size_t total, void *arg), void *arg, struct fc_set_result *res,
		   struct fc_err *err);
/* Deletes ban set name and lifts its bans (those no other source holds). */
int fc_change_set_del(const struct fc_ctx *ctx, const char *name, size_t *members, struct fc_err *err);

/* Allows text (ADDR[/LEN] or uid=VALUE) for ttl seconds (0: no expiry),
 * with a note (may be empty); canon and *existed as for a ban. */
int fc_change_allow_put(const struct fc_ctx *ctx, const char *text, int64_t ttl, const char *note,
			char canon[FC_BAN_TEXT_LEN], bool *existed, struct fc_err *err);
int fc_change_allow_del(const struct fc_ctx *ctx, const char *text, char canon[FC_BAN_TEXT_LEN], struct fc_err *err);

#endif /* FC_CHANGE_H */
