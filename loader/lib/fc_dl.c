// SPDX-License-Identifier: BSD-2-Clause
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "fc_dl.h"

static void fc_dl_open(struct fc_dl *dl)
{
	void *h = dlopen(dl->lib, RTLD_NOW | RTLD_LOCAL), *fn;
	size_t i;

	if (!h) {
		snprintf(dl->why, sizeof(dl->why), "%s", dlerror());
		return;
	}
	for (i = 0; i < dl->n; i++) {
		fn = dlsym(h, dl->names[i]);
		if (!fn) {
			snprintf(dl->why, sizeof(dl->why), "%s: no function %s", dl->lib, dl->names[i]);
			return;
		}
		/* A function pointer's bytes from dlsym's object pointer, as POSIX allows. */
		memcpy((char *)dl->table + i * sizeof(fn), &fn, sizeof(fn));
	}
}

int fc_dl_load(struct fc_dl *dl, struct fc_err *err)
{
	pthread_mutex_lock(&dl->lock);
	if (!dl->tried)
		fc_dl_open(dl);
	dl->tried = true;
	pthread_mutex_unlock(&dl->lock);
	return dl->why[0] ? fc_err_set(err, "cannot load %s: %s", dl->lib, dl->why) : 0;
}
