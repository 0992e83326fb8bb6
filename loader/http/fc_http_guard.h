/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What keeps a few slow clients from holding a server's connections (the
 * console's and /metrics'): libmicrohttpd's idle timeout restarts at every
 * byte, so a client sending one every few seconds would keep its connection
 * for ever, and a few dozen such fill every place. Here:
 *
 * - a deadline: a request must arrive whole (headers and body) within
 *   FC_HTTP_DEADLINE_S of the connection's start or of the previous
 *   response's end, or its connection is shut down;
 * - a limit per client address (an IPv6 client's /64): at most
 *   FC_HTTP_PER_ADDR connections, a quarter of FC_HTTP_CONNS. A new
 *   connection past it, or one that leaves no place free, takes the place of
 *   the oldest connection without a whole request of its address (of the
 *   address with the most, when all places are taken), so a client that
 *   sends its request at once is answered, whoever holds the others.
 *
 * A connection whose request is whole (being answered, or its response on
 * its way) is never cut. A connection is cut by shutting its socket down:
 * libmicrohttpd then closes it in its own thread, as if the client had.
 */
#ifndef FC_HTTP_GUARD_H
#define FC_HTTP_GUARD_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <microhttpd.h>

#define FC_HTTP_CONNS      32 /* connections at once, per server */
#define FC_HTTP_PER_ADDR   (FC_HTTP_CONNS / 4)
#define FC_HTTP_DEADLINE_S 10

struct fc_http_conn {
	struct MHD_Connection *conn; /* NULL: a free entry */
	int fd;
	uint8_t who[17];   /* the client: family, then its address (IPv6: the /64, zeros after) */
	uint64_t since_ms; /* CLOCK_MONOTONIC: since when its request may arrive */
	bool busy;         /* the handler runs for it */
	bool answered;     /* a response is queued: its request came whole */
	bool cut;          /* shut down here: libmicrohttpd is closing it */
};

struct fc_http_guard {
	pthread_mutex_t lock;
	pthread_cond_t wake; /* on CLOCK_MONOTONIC */
	pthread_t reaper;    /* cuts connections past the deadline */
	bool stopping;
	struct fc_http_conn conns[FC_HTTP_CONNS];
	/* The server's own handler, called through fc_http_guard_handle. */
	MHD_AccessHandlerCallback handler;
	void *cls;
	MHD_RequestCompletedCallback done;
};

/* Starts the reaper; -1 (errno) if it can not. */
int fc_http_guard_start(struct fc_http_guard *g, MHD_AccessHandlerCallback handler, void *cls,
			MHD_RequestCompletedCallback done);
/* Stops the reaper, once the daemon has stopped (its callbacks use g). */
void fc_http_guard_stop(struct fc_http_guard *g);

/* libmicrohttpd's callbacks, each with the guard as its cls:
 * MHD_OPTION_NOTIFY_CONNECTION, the access handler (calls the server's),
 * MHD_OPTION_NOTIFY_COMPLETED (calls the server's done). */
void fc_http_guard_notify(void *cls, struct MHD_Connection *conn, void **socket_context,
			  enum MHD_ConnectionNotificationCode what);
enum MHD_Result fc_http_guard_handle(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
				     const char *version, const char *upload, size_t *upload_size, void **req);
void fc_http_guard_completed(void *cls, struct MHD_Connection *conn, void **req, enum MHD_RequestTerminationCode why);

#endif /* FC_HTTP_GUARD_H */
