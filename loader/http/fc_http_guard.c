// SPDX-License-Identifier: BSD-2-Clause
#include <errno.h>
#include <string.h>
#include <time.h>
#include <sys/socket.h>
#include <netinet/in.h>

#include "fc_http.h"
#include "fc_http_guard.h"

static uint64_t fc_mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* The entry of conn, as its socket context holds it (NULL: none). */
static struct fc_http_conn *fc_guard_conn(struct MHD_Connection *conn)
{
	const union MHD_ConnectionInfo *ci = fc_mhd.MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);

	return ci ? ci->socket_context : NULL;
}

/* Whether c may be cut: a live connection with no whole request. */
static bool fc_guard_pending(const struct fc_http_conn *c)
{
	return c->conn && !c->cut && !c->busy && !c->answered;
}

static void fc_guard_cut(struct fc_http_conn *c)
{
	shutdown(c->fd, SHUT_RDWR);
	c->cut = true;
}

/* The client of conn as a key: family and address, an IPv6 one's /64. */
static void fc_guard_who(struct MHD_Connection *conn, uint8_t who[17])
{
	const union MHD_ConnectionInfo *ci = fc_mhd.MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	const struct sockaddr *sa = ci ? ci->client_addr : NULL;

	memset(who, 0, 17);
	if (sa && sa->sa_family == AF_INET) {
		who[0] = 4;
		memcpy(who + 1, &((const struct sockaddr_in *)sa)->sin_addr, 4);
	} else if (sa && sa->sa_family == AF_INET6) {
		who[0] = 6;
		memcpy(who + 1, &((const struct sockaddr_in6 *)sa)->sin6_addr, 8);
	}
}

/* Live connections of who (all of them: who NULL). */
static size_t fc_guard_count(const struct fc_http_guard *g, const uint8_t *who)
{
	size_t i, n = 0;

	for (i = 0; i < FC_HTTP_CONNS; i++)
		n += g->conns[i].conn && !g->conns[i].cut && (!who || !memcmp(g->conns[i].who, who, 17));
	return n;
}

/* Cuts the oldest connection of who without a whole request but self;
 * false when there is none. */
static bool fc_guard_evict(struct fc_http_guard *g, const uint8_t *who, const struct fc_http_conn *self)
{
	struct fc_http_conn *old = NULL;
	size_t i;

	for (i = 0; i < FC_HTTP_CONNS; i++) {
		struct fc_http_conn *c = &g->conns[i];

		if (c != self && fc_guard_pending(c) && !memcmp(c->who, who, 17) &&
		    (!old || c->since_ms < old->since_ms))
			old = c;
	}
	if (old)
		fc_guard_cut(old);
	return old != NULL;
}

/* A new connection c: within its address's share, and leaving a place free
 * for the next one (see fc_http_guard.h). */
static void fc_guard_admit(struct fc_http_guard *g, struct fc_http_conn *c)
{
	const uint8_t *most = NULL;
	size_t i, n, max = 0;

	if (fc_guard_count(g, c->who) > FC_HTTP_PER_ADDR) {
		if (!fc_guard_evict(g, c->who, c))
			fc_guard_cut(c);
		return;
	}
	if (fc_guard_count(g, NULL) < FC_HTTP_CONNS)
		return;
	for (i = 0; i < FC_HTTP_CONNS; i++) {
		if (!fc_guard_pending(&g->conns[i]) || &g->conns[i] == c)
			continue;
		n = fc_guard_count(g, g->conns[i].who);
		if (n > max) {
			max = n;
			most = g->conns[i].who;
		}
	}
	if (most)
		fc_guard_evict(g, most, c);
}

void fc_http_guard_notify(void *cls, struct MHD_Connection *conn, void **socket_context,
			  enum MHD_ConnectionNotificationCode what)
{
	const union MHD_ConnectionInfo *ci;
	struct fc_http_guard *g = cls;
	struct fc_http_conn *c = *socket_context;
	size_t i;

	pthread_mutex_lock(&g->lock);
	if (what == MHD_CONNECTION_NOTIFY_CLOSED) {
		/* Before libmicrohttpd closes the socket: the reaper, which
		 * shuts sockets down under the lock, never meets a reused one. */
		if (c)
			memset(c, 0, sizeof(*c));
		*socket_context = NULL;
		goto out;
	}
	ci = fc_mhd.MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
	for (i = 0; i < FC_HTTP_CONNS && g->conns[i].conn; i++)
		;
	if (!ci || i == FC_HTTP_CONNS) {
		if (ci) /* more than libmicrohttpd's own limit lets in: never */
			shutdown(ci->connect_fd, SHUT_RDWR);
		goto out;
	}
	c = &g->conns[i];
	*c = (struct fc_http_conn){ .conn = conn, .fd = ci->connect_fd, .since_ms = fc_mono_ms() };
	fc_guard_who(conn, c->who);
	*socket_context = c;
	fc_guard_admit(g, c);
	pthread_cond_signal(&g->wake);
out:
	pthread_mutex_unlock(&g->lock);
}

enum MHD_Result fc_http_guard_handle(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
				     const char *version, const char *upload, size_t *upload_size, void **req)
{
	struct fc_http_guard *g = cls;
	struct fc_http_conn *c = fc_guard_conn(conn);
	enum MHD_Result ret;

	pthread_mutex_lock(&g->lock);
	if (c)
		c->busy = true;
	pthread_mutex_unlock(&g->lock);
	ret = g->handler(g->cls, conn, url, method, version, upload, upload_size, req);
	pthread_mutex_lock(&g->lock);
	if (c) {
		c->busy = false;
		/* A response queued: the request came whole; the deadline waits
		 * for its end (fc_http_guard_completed). */
		c->answered = fc_mhd.MHD_get_connection_info(conn, MHD_CONNECTION_INFO_HTTP_STATUS) != NULL;
		pthread_cond_signal(&g->wake);
	}
	pthread_mutex_unlock(&g->lock);
	return ret;
}

void fc_http_guard_completed(void *cls, struct MHD_Connection *conn, void **req, enum MHD_RequestTerminationCode why)
{
	struct fc_http_guard *g = cls;
	struct fc_http_conn *c = fc_guard_conn(conn);

	pthread_mutex_lock(&g->lock);
	if (c) { /* the next request on it has its own deadline */
		c->since_ms = fc_mono_ms();
		c->answered = false;
		pthread_cond_signal(&g->wake);
	}
	pthread_mutex_unlock(&g->lock);
	if (g->done)
		g->done(g->cls, conn, req, why);
}

/* Cuts what is past the deadline; sleeps until the next one is due. */
static void *fc_guard_reaper(void *arg)
{
	const uint64_t deadline = FC_HTTP_DEADLINE_S * 1000;
	struct fc_http_guard *g = arg;
	struct timespec ts;
	uint64_t now, next;
	size_t i;

	pthread_mutex_lock(&g->lock);
	while (!g->stopping) {
		now = fc_mono_ms();
		next = 0;
		for (i = 0; i < FC_HTTP_CONNS; i++) {
			struct fc_http_conn *c = &g->conns[i];

			if (!fc_guard_pending(c))
				continue;
			if (now - c->since_ms >= deadline)
				fc_guard_cut(c);
			else if (!next || c->since_ms + deadline < next)
				next = c->since_ms + deadline;
		}
		if (!next) {
			pthread_cond_wait(&g->wake, &g->lock);
			continue;
		}
		ts.tv_sec = (time_t)(next / 1000);
		ts.tv_nsec = (long)(next % 1000) * 1000000;
		pthread_cond_timedwait(&g->wake, &g->lock, &ts);
	}
	pthread_mutex_unlock(&g->lock);
	return NULL;
}

int fc_http_guard_start(struct fc_http_guard *g, MHD_AccessHandlerCallback handler, void *cls,
			MHD_RequestCompletedCallback done)
{
	pthread_condattr_t ca;
	int rc;

	memset(g, 0, sizeof(*g));
	g->handler = handler;
	g->cls = cls;
	g->done = done;
	pthread_mutex_init(&g->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&g->wake, &ca);
	pthread_condattr_destroy(&ca);
	rc = pthread_create(&g->reaper, NULL, fc_guard_reaper, g);
	if (rc) {
		pthread_cond_destroy(&g->wake);
		pthread_mutex_destroy(&g->lock);
		errno = rc;
		return -1;
	}
	return 0;
}

void fc_http_guard_stop(struct fc_http_guard *g)
{
	pthread_mutex_lock(&g->lock);
	g->stopping = true;
	pthread_cond_signal(&g->wake);
	pthread_mutex_unlock(&g->lock);
	pthread_join(g->reaper, NULL);
	pthread_cond_destroy(&g->wake);
	pthread_mutex_destroy(&g->lock);
}
