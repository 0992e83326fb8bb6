// SPDX-License-Identifier: BSD-2-Clause
#include "fc_hiredis.h"

struct fc_hiredis fc_hiredis;
static const char *const fc_hiredis_names[] = { FC_HIREDIS_FUNCS(FC_DL_NAME) };
static struct fc_dl fc_hiredis_dl = FC_DL_INIT("libhiredis.so.0.14", fc_hiredis_names, fc_hiredis);

int fc_hiredis_load(struct fc_err *err)
{
	struct fc_err why;

	if (fc_dl_load(&fc_hiredis_dl, &why) < 0)
		return fc_err_set(err, "Redis's client library: %s (Debian: apt-get install libhiredis0.14)", why.msg);
	return 0;
}
