/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Errors that name the input: parsers fill an fc_err with a message such as
 * `"10.0.0.5/8": host bits set; did you mean 10.0.0.0/8?` and the caller
 * prefixes where the input came from (a command, a file and line).
 */
#ifndef FC_ERROR_H
#define FC_ERROR_H

#include <stdarg.h>
#include <bpf/libbpf.h>

/* Room for a message naming two paths and what to do (another version's pins). */
#define FC_ERR_LEN 512

struct fc_err {
	char msg[FC_ERR_LEN];
};

__attribute__((format(printf, 2, 3)))
int fc_err_set(struct fc_err *err, const char *fmt, ...);

/* Prints "freqctl: " and the message to stderr, in one write: the agent's
 * threads warn too. */
__attribute__((format(printf, 1, 2)))
void fc_warn(const char *fmt, ...);

/* Verbose diagnostics (-v), also the sink of libbpf's own messages. */
extern int fc_verbose;
__attribute__((format(printf, 1, 2)))
void fc_debug(const char *fmt, ...);

/* Sends fc_warn's and fc_debug's messages (without "freqctl: ") to sink
 * instead, from every thread: the agent stamps its log's lines. Set before
 * any thread that warns starts (NULL: stderr again, once they ended); sink
 * must be thread-safe. */
void fc_log_route(void (*sink)(const char *msg));
int fc_libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap);

#endif /* FC_ERROR_H */
