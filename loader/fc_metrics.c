// SPDX-License-Identifier: BSD-2-Clause
#include <microhttpd.h>

#include <arpa/inet.h>
#include <sys/socket.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fc_metrics.h"

struct fc_metrics {
	struct MHD_Daemon *d;
	const struct fc_ctx *ctx;
	const struct fc_agent_counters *c;
};

static void fc_metrics_agent(FILE *f, const struct fc_agent_counters *c)
{
	fprintf(f,
		"# HELP freqctl_agent_publishes_total Successful publishes of the store to XDP/TC and nginx.\n"
		"# TYPE freqctl_agent_publishes_total counter\nfreqctl_agent_publishes_total %llu\n"
		"# HELP freqctl_agent_publish_errors_total Publishes that failed; what was enforced stayed.\n"
		"# TYPE freqctl_agent_publish_errors_total counter\nfreqctl_agent_publish_errors_total %llu\n"
		"# HELP freqctl_agent_escalations_total Clients banned at XDP/TC because a policy refused them too "
		"often.\n# TYPE freqctl_agent_escalations_total counter\nfreqctl_agent_escalations_total %llu\n"
		"# HELP freqctl_agent_last_publish_timestamp_seconds When the last publish succeeded.\n"
		"# TYPE freqctl_agent_last_publish_timestamp_seconds gauge\n"
		"freqctl_agent_last_publish_timestamp_seconds %lld\n"
		"# HELP freqctl_agent_last_publish_duration_seconds How long the last publish took.\n"
		"# TYPE freqctl_agent_last_publish_duration_seconds gauge\n"
		"freqctl_agent_last_publish_duration_seconds %.6f\n",
		(unsigned long long)__atomic_load_n(&c->publishes, __ATOMIC_RELAXED),
		(unsigned long long)__atomic_load_n(&c->publish_errors, __ATOMIC_RELAXED),
		(unsigned long long)__atomic_load_n(&c->escalations, __ATOMIC_RELAXED),
		(long long)__atomic_load_n(&c->last_publish, __ATOMIC_RELAXED),
		(double)__atomic_load_n(&c->last_publish_us, __ATOMIC_RELAXED) / 1e6);
}

static enum MHD_Result fc_metrics_reply(struct MHD_Connection *conn, unsigned int status, char *body, size_t len,
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
	ret = MHD_queue_response(conn, status, r);
	MHD_destroy_response(r);
	return ret;
}

void fc_metrics_write(FILE *f, const struct fc_ctx *ctx, const struct fc_agent_counters *c)
{
	struct fc_err err;

	if (fc_stats_write_prometheus(ctx, f, &err) < 0) {
		/* The agent's own counters still say why nothing is published. */
		fprintf(f, "# freqctl: %s\n", err.msg);
	}
	fc_metrics_agent(f, c);
}

static enum MHD_Result fc_metrics_handle(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
					  const char *version, const char *upload, size_t *upload_size, void **req)
{
	const struct fc_metrics *m = cls;
	char *body = NULL;
	size_t len = 0;
	FILE *f;

	(void)version;
	(void)upload;
	(void)upload_size;
	(void)req;
	if (strcmp(method, "GET") && strcmp(method, "HEAD"))
		return fc_metrics_reply(conn, MHD_HTTP_METHOD_NOT_ALLOWED, strdup("only GET /metrics\n"), 18,
					"text/plain");
	if (strcmp(url, "/metrics"))
		return fc_metrics_reply(conn, MHD_HTTP_NOT_FOUND, strdup("see /metrics\n"), 13, "text/plain");
	f = open_memstream(&body, &len);
	if (!f)
		return MHD_NO;
	fc_metrics_write(f, m->ctx, m->c);
	if (fclose(f)) {
		free(body);
		return MHD_NO;
	}
	return fc_metrics_reply(conn, MHD_HTTP_OK, body, len, "text/plain; version=0.0.4");
}

int fc_metrics_parse(const char *listen, struct sockaddr_storage *sa, struct fc_err *err)
{
	struct addrinfo hints = { .ai_flags = AI_NUMERICHOST | AI_NUMERICSERV, .ai_socktype = SOCK_STREAM };
	const char *colon = strrchr(listen, ':'), *host = listen;
	size_t hl = colon ? (size_t)(colon - listen) : 0;
	char buf[INET6_ADDRSTRLEN];
	struct addrinfo *ai = NULL;
	unsigned long port;
	char *end;
	int rc;

	if (hl >= 2 && listen[0] == '[' && listen[hl - 1] == ']') {
		host++;
		hl -= 2;
	}
	if (!colon || !hl || hl >= sizeof(buf) || !colon[1])
		return fc_err_set(err, "\"%s\": expected ADDR:PORT, e.g. 127.0.0.1:9469 or [::1]:9469", listen);
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

struct fc_metrics *fc_metrics_start(const struct sockaddr_storage *sa, const struct fc_ctx *ctx,
				    const struct fc_agent_counters *counters, struct fc_err *err)
{
	struct fc_metrics *m = calloc(1, sizeof(*m));
	uint16_t port = ntohs(sa->ss_family == AF_INET6 ? ((const struct sockaddr_in6 *)sa)->sin6_port :
							   ((const struct sockaddr_in *)sa)->sin_port);

	if (!m) {
		fc_err_set(err, "out of memory");
		return NULL;
	}
	m->ctx = ctx;
	m->c = counters;
	m->d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD |
					(sa->ss_family == AF_INET6 ? MHD_USE_IPv6 : 0),
				port, NULL, NULL, fc_metrics_handle, m, MHD_OPTION_SOCK_ADDR, sa,
				MHD_OPTION_CONNECTION_LIMIT, 16U, MHD_OPTION_CONNECTION_TIMEOUT, 10U, MHD_OPTION_END);
	if (!m->d) {
		fc_err_set(err, "cannot listen on port %u (in use, or not an address of this machine)", port);
		free(m);
		return NULL;
	}
	return m;
}

void fc_metrics_stop(struct fc_metrics *m)
{
	if (!m)
		return;
	MHD_stop_daemon(m->d);
	free(m);
}
