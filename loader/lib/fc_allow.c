// SPDX-License-Identifier: BSD-2-Clause
#include <stdio.h>
#include <string.h>

#include "fc_allow.h"

int fc_allow_text(const char *text, struct fc_allow_row *row, char canon[FC_BAN_TEXT_LEN], struct fc_err *err)
{
	const char *uid;

	memset(row, 0, sizeof(*row));
	if (fc_target_parse(text, &row->p, &uid, canon, err) < 0)
		return -1;
	if (uid)
		snprintf(row->uid, sizeof(row->uid), "%s", uid);
	return 0;
}

void fc_allow_format(const struct fc_allow_row *row, char canon[FC_BAN_TEXT_LEN])
{
	if (row->p.family)
		fc_prefix_format(&row->p, canon);
	else
		snprintf(canon, FC_BAN_TEXT_LEN, "uid=%s", row->uid);
}

int fc_allow_note_check(const char *note, struct fc_err *err)
{
	const char *c;

	if (strlen(note) > FC_ALLOW_NOTE_MAX)
		return fc_err_set(err, "note \"%.32s...\": expected at most %d characters", note, FC_ALLOW_NOTE_MAX);
	for (c = note; *c; c++)
		if ((unsigned char)*c < 0x20 || *c == 0x7f)
			return fc_err_set(err, "note \"%.64s\": expected no control characters", note);
	return 0;
}

const struct fc_allow_row *fc_allow_covering(const struct fc_allow_row *rows, size_t n, const struct fc_prefix *p,
					     int64_t now)
{
	const struct fc_allow_row *best = NULL;
	size_t i;

	for (i = 0; i < n; i++)
		if (rows[i].p.family && fc_prefix_covers(&rows[i].p, p) && (!now || !rows[i].expires || now < rows[i].expires) &&
		    (!best || rows[i].p.len > best->p.len))
			best = &rows[i];
	return best;
}

const struct fc_allow_row *fc_allow_uid(const struct fc_allow_row *rows, size_t n, const char *uid)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!rows[i].p.family && !strcmp(rows[i].uid, uid))
			return &rows[i];
	return NULL;
}

const struct fc_allow_row *fc_allow_over_ban(const struct fc_allow_row *rows, size_t n, const struct fc_ban_row *ip,
					     const struct fc_uid_ban *uid)
{
	return ip ? fc_allow_covering(rows, n, &ip->p, 0) : fc_allow_uid(rows, n, uid->uid);
}
