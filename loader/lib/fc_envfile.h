/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The configuration file, /etc/default/freqctl: KEY=VALUE lines that the
 * agent's systemd unit reads as its EnvironmentFile= and every freqctl
 * command reads too. Parsed strictly, as the subset of systemd's syntax
 * whose meaning systemd and a POSIX shell agree on, so that the unit, the
 * CLI and a script that sources the file never read it differently:
 *
 *   # a comment, and ; a comment (a line that starts with one)
 *   KEY=value            letters, digits and _ ; the value unquoted: no
 *                        space, quote, backslash or $ ` ; & | < > ( )
 *   KEY='value'          anything printable but '
 *   KEY="value"          anything printable but " \ $ `
 *   KEY=                 empty
 *
 * Blank lines and spaces around a line are allowed; spaces around '=',
 * text after a closing quote, a backslash (a continued line), a line
 * without '=', "export", control characters and bytes that are not ASCII
 * are refused, each with the file and line.
 */
#ifndef FC_ENVFILE_H
#define FC_ENVFILE_H

#include <stddef.h>

#include "fc_error.h"

/* The largest file read. */
#define FC_ENVFILE_MAX (64 * 1024)

struct fc_env_entry {
	const char *key, *value; /* in the file's own copy */
	unsigned line;
};

struct fc_envfile {
	char *text;             /* the file, keys and values cut out of it in place */
	struct fc_env_entry *v; /* in the file's order; a key may come again (the last wins, as in systemd) */
	size_t n;
};

/* Parses len bytes of text (copied) read from name; -1 with err
 * "NAME:LINE: why" on the first line that is not of the subset. */
int fc_envfile_parse(const char *name, const char *text, size_t len, struct fc_envfile *out, struct fc_err *err);

/* Reads and parses the file at path: 0, or 1 if there is none (out
 * empty); -1 with err if it can not be read, -2 if what it holds is
 * refused. */
int fc_envfile_read(const char *path, struct fc_envfile *out, struct fc_err *err);

void fc_envfile_free(struct fc_envfile *f);

#endif /* FC_ENVFILE_H */
