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

/* "ADDR[/LEN]" canonical, or "uid=VALUE". */
#define FC_BAN_TEXT_LEN (4 + FC_SHM_MAX_VALUE + 1)

/* Why a change was refused: the input, or the store/kernel. */
enum fc_change_fail {
	FC_CHANGE_INVALID = 1, /* the input: a usage error */
	FC_CHANGE_CONFLICT,    /* exists (add), or does not (delete) */
	FC_CHANGE_RUNTIME,     /* the store, the maps or the shm */
};

/* Creates policy p (replace: or replaces it). *found: it existed. Returns 0
 * or an fc_change_fail with err set. */
int fc_change_policy_put(const struct fc_ctx *ctx, const struct fc_policy_spec *p, bool replace, bool *found,
			 struct fc_policy_row *row, struct fc_err *err);
int fc_change_policy_del(const struct fc_ctx *ctx, uint32_t id, struct fc_err *err);

/* Bans text (ADDR[/LEN] or uid=VALUE) for ttl seconds (0: no expiry);
 * canon gets its canonical spelling, *existed whether a live ban was there. */
int fc_change_ban_put(const struct fc_ctx *ctx, const char *text, int64_t ttl, char canon[FC_BAN_TEXT_LEN],
		      bool *existed, struct fc_err *err);
int fc_change_ban_del(const struct fc_ctx *ctx, const char *text, char canon[FC_BAN_TEXT_LEN], struct fc_err *err);

/* Allows text (ADDR[/LEN] or uid=VALUE) for ttl seconds (0: no expiry),
 * with a note (may be empty); canon and *existed as for a ban. */
int fc_change_allow_put(const struct fc_ctx *ctx, const char *text, int64_t ttl, const char *note,
			char canon[FC_BAN_TEXT_LEN], bool *existed, struct fc_err *err);
int fc_change_allow_del(const struct fc_ctx *ctx, const char *text, char canon[FC_BAN_TEXT_LEN], struct fc_err *err);

/* A user id as bans and policies take it: 1 to FC_SHM_MAX_VALUE printable
 * characters, no spaces or commas. */
int fc_uid_check(const char *uid, struct fc_err *err);

#endif /* FC_CHANGE_H */
