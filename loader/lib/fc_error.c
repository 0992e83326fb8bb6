// SPDX-License-Identifier: BSD-2-Clause
#include <stdio.h>
#include <bpf/libbpf.h>

#include "fc_error.h"

int fc_verbose;

int fc_err_set(struct fc_err *err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
	va_end(ap);
	return -1;
}

void fc_warn(const char *fmt, ...)
{
	va_list ap;

	fputs("freqctl: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

void fc_debug(const char *fmt, ...)
{
	va_list ap;

	if (!fc_verbose)
		return;
	fputs("freqctl: debug: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/* libbpf explains failures (verifier log, missing BTF) at warning level;
 * show those always and the chatter only with -v. */
int fc_libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	if (level != LIBBPF_WARN && !fc_verbose)
		return 0;
	return vfprintf(stderr, fmt, ap);
}
