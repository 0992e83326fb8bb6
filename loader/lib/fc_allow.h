/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Allow entries as users write them (ADDR[/LEN] or uid=VALUE), and which
 * entry covers an address: for ban list, which shows the entry that
 * overrides a ban, and for escalation, which never bans an allowed address.
 */
#ifndef FC_ALLOW_H
#define FC_ALLOW_H

#include "fc_store.h"
#include "fc_target.h"

/* Parses text into the key of *row (p, or uid); canon gets its canonical
 * spelling. */
int fc_allow_text(const char *text, struct fc_allow_row *row, char canon[FC_BAN_TEXT_LEN], struct fc_err *err);
/* The canonical spelling of row's key. */
void fc_allow_format(const struct fc_allow_row *row, char canon[FC_BAN_TEXT_LEN]);
/* A note: up to FC_ALLOW_NOTE_MAX printable characters (spaces too). */
int fc_allow_note_check(const char *note, struct fc_err *err);

/* Of rows[0..n), the most specific address entry covering p (the prefix or
 * address itself, or a prefix around it) that is live at now (unix seconds;
 * 0: take every row as live), or NULL. */
const struct fc_allow_row *fc_allow_covering(const struct fc_allow_row *rows, size_t n, const struct fc_prefix *p,
					     int64_t now);
/* The same for a user id: its entry, or NULL. */
const struct fc_allow_row *fc_allow_uid(const struct fc_allow_row *rows, size_t n, const char *uid);
/* The entry of rows[0..n) that overrides a ban: an address ban's (ip), or a
 * uid ban's (uid); NULL when none does. */
const struct fc_allow_row *fc_allow_over_ban(const struct fc_allow_row *rows, size_t n, const struct fc_ban_row *ip,
					     const struct fc_uid_ban *uid);

#endif /* FC_ALLOW_H */
