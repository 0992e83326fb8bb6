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

/* libbpf's messages, its warnings too (a verifier log, a kernel's error
 * message, a probe that failed), with -v only: freqctl says what failed,
 * naming the object, and points to -v where the log tells more. */
int fc_libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	(void)level;
	if (!fc_verbose)
		return 0;
	return vfprintf(stderr, fmt, ap);
}
