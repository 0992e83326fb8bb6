// SPDX-License-Identifier: BSD-2-Clause
#include <stdio.h>
#include <string.h>
#include <bpf/libbpf.h>

#include "fc_error.h"

int fc_verbose;
static void (*fc_log_sink)(const char *msg);

void fc_log_route(void (*sink)(const char *msg))
{
	__atomic_store_n(&fc_log_sink, sink, __ATOMIC_RELEASE);
}

/* One line, formatted first and written whole. */
static void fc_log_line(const char *label, const char *fmt, va_list ap)
{
	void (*sink)(const char *msg) = __atomic_load_n(&fc_log_sink, __ATOMIC_ACQUIRE);
	char msg[4096];

	snprintf(msg, sizeof(msg), "%s", label);
	vsnprintf(msg + strlen(msg), sizeof(msg) - strlen(msg), fmt, ap);
	if (sink)
		sink(msg);
	else
		fprintf(stderr, "freqctl: %s\n", msg);
}

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

	va_start(ap, fmt);
	fc_log_line("", fmt, ap);
	va_end(ap);
}

void fc_debug(const char *fmt, ...)
{
	va_list ap;

	if (!fc_verbose)
		return;
	va_start(ap, fmt);
	fc_log_line("debug: ", fmt, ap);
	va_end(ap);
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
