/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A scratch directory for a C suite: made under /tmp, removed with all it
 * holds when the suite ends (symlinks removed, never followed).
 */
#ifndef FC_TEST_DIR_H
#define FC_TEST_DIR_H

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/* /tmp/fc-test-NAME.XXXXXX, made 0700: 0, or -1. */
static inline int fc_test_dir_make(char *dir, size_t len, const char *name)
{
	snprintf(dir, len, "/tmp/fc-test-%s.XXXXXX", name);
	return mkdtemp(dir) ? 0 : -1;
}

static inline int fc_test_dir_unlink(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	return type == FTW_DP ? rmdir(path) : unlink(path);
}

/* Removes dir and everything in it: 0, or -1. */
static inline int fc_test_dir_remove(const char *dir)
{
	return nftw(dir, fc_test_dir_unlink, 16, FTW_DEPTH | FTW_PHYS);
}

#endif /* FC_TEST_DIR_H */
