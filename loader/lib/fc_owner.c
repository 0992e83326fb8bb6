// SPDX-License-Identifier: BSD-2-Clause
#include <errno.h>
#include <pwd.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "fc_owner.h"

/* Each kind's name, and how to put it right (a format of the path, given
 * twice) when another user owns it and when others may write it. */
static const struct {
	const char *name, *fix_owner, *fix_mode;
} fc_owned[] = {
	[FC_OWNED_PIN_DIR] = { "pin dir", "remove it (rm -r %s: freqctl makes it anew) or chown root %s",
			       "chmod go-w %s" },
	[FC_OWNED_STORE] = { "store", "chown root %s if it is the store meant, or give --db another", "chmod go-w %s" },
	[FC_OWNED_SHM] = { "shm", "remove it (rm %s: the next publish makes it anew)",
			   "remove it (rm %s: the next publish makes it anew, as root's alone)" },
	[FC_OWNED_CONFIG] = { "config file", "chown root %s", "chmod go-w %s" },
	[FC_OWNED_FLEET_STATUS] = { "fleet status", "remove it (rm %s: the agent writes it anew each round)",
				    "remove it (rm %s: the agent writes it anew each round)" },
};

static int fc_owner_refuse(enum fc_owned kind, const char *path, const char *link, const struct stat *sb,
			   struct fc_err *err)
{
	const struct passwd *pw;
	char fix[FC_ERR_LEN / 2];
	const char *who;

	if (sb->st_uid != 0) {
		pw = getpwuid(sb->st_uid);
		who = pw ? pw->pw_name : "a user with no name";
		snprintf(fix, sizeof(fix), fc_owned[kind].fix_owner, path, path);
		return fc_err_set(err, "%s %s: %sowned by %s (uid %u), not root: %s", fc_owned[kind].name, path, link,
				  who, (unsigned)sb->st_uid, fix);
	}
	snprintf(fix, sizeof(fix), fc_owned[kind].fix_mode, path, path);
	return fc_err_set(err, "%s %s: %swritable by %s (mode %04o): %s", fc_owned[kind].name, path, link,
			  !(sb->st_mode & S_IWOTH) ? "its group" :
			  sb->st_mode & S_IWGRP    ? "its group and others" :
						     "others",
			  (unsigned)(sb->st_mode & 07777), fix);
}

/* Owned by root, writable by root alone (a link's own mode means nothing). */
static bool fc_owner_fit(const struct stat *sb)
{
	return sb->st_uid == 0 && (S_ISLNK(sb->st_mode) || !(sb->st_mode & (S_IWGRP | S_IWOTH)));
}

int fc_owner_check(enum fc_owned kind, const char *path, struct fc_err *err)
{
	struct stat sb;

	if (geteuid() != 0)
		return 0;
	if (lstat(path, &sb) < 0)
		return 0; /* not there: whoever makes it, makes it root's */
	if (!fc_owner_fit(&sb))
		return fc_owner_refuse(kind, path, S_ISLNK(sb.st_mode) ? "a symbolic link " : "", &sb, err);
	if (S_ISLNK(sb.st_mode) && stat(path, &sb) == 0 && !fc_owner_fit(&sb))
		return fc_owner_refuse(kind, path, "what the link leads to is ", &sb, err);
	return 0;
}

int fc_owner_check_fd(enum fc_owned kind, const char *path, int fd, struct fc_err *err)
{
	struct stat sb;

	if (geteuid() != 0)
		return 0;
	if (fstat(fd, &sb) < 0)
		return fc_err_set(err, "%s %s: %s", fc_owned[kind].name, path, strerror(errno));
	return fc_owner_fit(&sb) ? 0 : fc_owner_refuse(kind, path, "", &sb, err);
}
