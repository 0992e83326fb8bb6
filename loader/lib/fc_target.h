/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What a ban or an allow entry is on, as users write it: an address or
 * prefix (ADDR[/LEN]) or a user id (uid=VALUE).
 */
#ifndef FC_TARGET_H
#define FC_TARGET_H

#include "fc_error.h"
#include "fc_prefix.h"
#include "fc_shm.h"

/* "ADDR[/LEN]" canonical, or "uid=VALUE". */
#define FC_BAN_TEXT_LEN (4 + FC_SHM_MAX_VALUE + 1)

/* Parses text: *uid points into it for uid=VALUE (NULL otherwise), else p
 * is the prefix. canon gets the canonical spelling (text as given if it
 * does not parse, for the message). */
int fc_target_parse(const char *text, struct fc_prefix *p, const char **uid, char canon[FC_BAN_TEXT_LEN],
		    struct fc_err *err);

/* A user id as bans and policies take it: 1 to FC_SHM_MAX_VALUE printable
 * characters, no spaces or commas. */
int fc_uid_check(const char *uid, struct fc_err *err);

#endif /* FC_TARGET_H */
