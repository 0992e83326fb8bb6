/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What the agent's two HTTP servers share (--metrics: fc_metrics.c; --http:
 * fc_console.c), both on libmicrohttpd: the ADDR:PORT syntax, one way to
 * start a daemon with the same limits, and one way to answer.
 */
#ifndef FC_HTTP_H
#define FC_HTTP_H

#include <sys/socket.h>
#include <microhttpd.h>

#include "fc_error.h"

/* [ADDR:]PORT: an IPv4 literal, or an IPv6 one in brackets ("127.0.0.1:9469",
 * "[::1]:9469"); a bare port is 127.0.0.1's. */
int fc_http_parse(const char *listen, struct sockaddr_storage *sa, struct fc_err *err);

/* Listens on sa, serving in one event-driven thread of its own; a client
 * that stalls is cut off after 10 s. done (may be NULL) is called when a
 * request ends. NULL with err when it can not listen. */
struct MHD_Daemon *fc_http_start(const struct sockaddr_storage *sa, MHD_AccessHandlerCallback handler, void *cls,
				 MHD_RequestCompletedCallback done, struct fc_err *err);

/* Queues body (malloc'd, released here in every case; NULL: out of memory,
 * the connection is dropped), never cached; a 401 says to use a bearer token. */
enum MHD_Result fc_http_reply(struct MHD_Connection *conn, unsigned int status, char *body, size_t len,
			      const char *type);

#endif /* FC_HTTP_H */
