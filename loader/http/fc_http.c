// SPDX-License-Identifier: BSD-2-Clause
#include <arpa/inet.h>
#include <netdb.h>
#include <stdlib.h>
#include <string.h>

#include "fc_http.h"

int fc_http_parse(const char *listen, struct sockaddr_storage *sa, struct fc_err *err)
{
	struct addrinfo hints = { .ai_flags = AI_NUMERICHOST | AI_NUMERICSERV, .ai_socktype = SOCK_STREAM };
	const char *colon = strrchr(listen, ':'), *host = listen;
	size_t hl = colon ? (size_t)(colon - listen) : 0;
	char buf[INET6_ADDRSTRLEN];
	struct addrinfo *ai = NULL;
	unsigned long port;
	char *end;
	int rc;

	/* A bare port is on loopback: nothing is exposed unless asked for. */
	if (!colon && *listen && strlen(listen) <= 5 && strspn(listen, "0123456789") == strlen(listen)) {
		char full[24];

		snprintf(full, sizeof(full), "127.0.0.1:%s", listen);
		return fc_http_parse(full, sa, err);
	}
	if (hl >= 2 && listen[0] == '[' && listen[hl - 1] == ']') {
		host++;
		hl -= 2;
	} else if (colon && memchr(listen, ':', hl)) {
		return fc_err_set(err, "\"%s\": an IPv6 address goes in brackets, e.g. [::1]:9469", listen);
	}
	if (!colon || !hl || hl >= sizeof(buf) || !colon[1])
		return fc_err_set(err, "\"%s\": expected [ADDR:]PORT, e.g. 9469, 127.0.0.1:9469 or [::1]:9469", listen);
	port = strtoul(colon + 1, &end, 10);
	if (*end || !port || port > 65535 || colon[1] == '-' || colon[1] == '+')
		return fc_err_set(err, "\"%s\": port \"%s\" must be a number from 1 to 65535", listen, colon + 1);
	memcpy(buf, host, hl);
	buf[hl] = '\0';
	rc = getaddrinfo(buf, colon + 1, &hints, &ai);
	if (rc)
		return fc_err_set(err, "\"%s\": \"%s\" is not an IPv4 or [IPv6] address", listen, buf);
	memcpy(sa, ai->ai_addr, ai->ai_addrlen);
	freeaddrinfo(ai);
	return 0;
}

struct MHD_Daemon *fc_http_start(const struct sockaddr_storage *sa, MHD_AccessHandlerCallback handler, void *cls,
				 MHD_RequestCompletedCallback done, struct fc_err *err)
{
	uint16_t port = ntohs(sa->ss_family == AF_INET6 ? ((const struct sockaddr_in6 *)sa)->sin6_port :
							   ((const struct sockaddr_in *)sa)->sin_port);
	struct MHD_Daemon *d;

	d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL | (sa->ss_family == AF_INET6 ? MHD_USE_IPv6 : 0),
			     port, NULL, NULL, handler, cls, MHD_OPTION_SOCK_ADDR, sa, MHD_OPTION_NOTIFY_COMPLETED, done,
			     NULL, MHD_OPTION_CONNECTION_LIMIT, 32U, MHD_OPTION_PER_IP_CONNECTION_LIMIT, 16U,
			     MHD_OPTION_CONNECTION_TIMEOUT, 10U, MHD_OPTION_CONNECTION_MEMORY_LIMIT,
			     (size_t)(128 * 1024), MHD_OPTION_END);
	if (!d)
		fc_err_set(err, "cannot listen on port %u (in use, or not an address of this machine)", port);
	return d;
}

enum MHD_Result fc_http_reply(struct MHD_Connection *conn, unsigned int status, char *body, size_t len,
			      const char *type)
{
	struct MHD_Response *r;
	enum MHD_Result ret;

	if (!body)
		return MHD_NO; /* out of memory: drop the connection */
	r = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
	if (!r) {
		free(body);
		return MHD_NO;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
	MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
	if (status == MHD_HTTP_UNAUTHORIZED)
		MHD_add_response_header(r, MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer realm=\"freqctl\"");
	ret = MHD_queue_response(conn, status, r);
	MHD_destroy_response(r);
	return ret;
}

