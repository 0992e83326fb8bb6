// SPDX-License-Identifier: BSD-2-Clause
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fc_http.h"
#include "fc_metrics.h"
#include "fc_stats.h"

struct fc_metrics {
	struct fc_http http;
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
	struct fc_metrics *m = cls;
	char *body = NULL;
	size_t len = 0;
	unsigned refused;
	FILE *f;

	(void)version;
	(void)upload;
	(void)upload_size;
	(void)req;
	/* A scrape needs the token too (Prometheus: authorization.credentials_file). */
	refused = fc_http_admit(&m->http, conn, true, NULL, 0);
	if (refused)
		return fc_http_reply(conn, refused,
				     strdup(refused == MHD_HTTP_FORBIDDEN ? "Host: not this server\n" :
									      "Authorization: Bearer TOKEN needed\n"),
				     refused == MHD_HTTP_FORBIDDEN ? 22 : 35, "text/plain");
	if (strcmp(method, "GET") && strcmp(method, "HEAD"))
		return fc_http_reply(conn, MHD_HTTP_METHOD_NOT_ALLOWED, strdup("only GET /metrics\n"), 18,
					"text/plain");
	if (strcmp(url, "/metrics"))
		return fc_http_reply(conn, MHD_HTTP_NOT_FOUND, strdup("see /metrics\n"), 13, "text/plain");
	f = open_memstream(&body, &len);
	if (!f)
		return MHD_NO;
	fc_metrics_write(f, m->ctx, m->c);
	if (fclose(f)) {
		free(body);
		return MHD_NO;
	}
	return fc_http_reply(conn, MHD_HTTP_OK, body, len, "text/plain; version=0.0.4");
}

struct fc_metrics *fc_metrics_start(const struct sockaddr_storage *sa, const struct fc_http_conf *conf,
				    const struct fc_ctx *ctx, const struct fc_agent_counters *counters, struct fc_err *err)
{
	struct fc_metrics *m = calloc(1, sizeof(*m));

	if (!m) {
		fc_err_set(err, "out of memory");
		return NULL;
	}
	m->ctx = ctx;
	m->c = counters;
	if (fc_http_start(&m->http, sa, conf, fc_metrics_handle, m, NULL, err) < 0) {
		free(m);
		return NULL;
	}
	return m;
}

void fc_metrics_stop(struct fc_metrics *m)
{
	if (!m)
		return;
	fc_http_stop(&m->http);
	free(m);
}
