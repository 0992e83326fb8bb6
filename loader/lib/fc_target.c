// SPDX-License-Identifier: BSD-2-Clause
#include <stdio.h>
#include <string.h>

#include "fc_target.h"

int fc_target_parse(const char *text, struct fc_prefix *p, const char **uid, char canon[FC_BAN_TEXT_LEN],
		    struct fc_err *err)
{
	snprintf(canon, FC_BAN_TEXT_LEN, "%.*s", FC_BAN_TEXT_LEN - 1, text);
	*uid = NULL;
	if (!strncmp(text, "uid=", 4)) {
		*uid = text + 4;
		return fc_uid_check(*uid, err);
	}
	if (fc_prefix_parse(text, p, err) < 0)
		return -1;
	fc_prefix_format(p, canon);
	return 0;
}

int fc_uid_check(const char *uid, struct fc_err *err)
{
	const char *c;

	if (!*uid || strlen(uid) > FC_SHM_MAX_VALUE)
		return fc_err_set(err, "\"uid=%.64s\": expected 1 to %d characters", uid, FC_SHM_MAX_VALUE);
	for (c = uid; *c; c++)
		if (*c < 0x21 || *c > 0x7e || *c == ',')
			return fc_err_set(err, "\"uid=%.64s\": printable characters only, no spaces or commas", uid);
	return 0;
}
