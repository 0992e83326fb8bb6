/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What the agent's two HTTP servers share (--metrics: fc_metrics.c; --http:
 * fc_console.c), both on libmicrohttpd: the ADDR:PORT syntax; who is
 * answered (a Host naming this server, so a page elsewhere can not reach it
 * through DNS rebinding; the bearer token, kept in a file and re-read when
 * the file changes, so `console-token --rotate` takes effect at once);
 * TLS; one way to start a daemon with the same limits, and one way to answer.
 */
#ifndef FC_HTTP_H
#define FC_HTTP_H

#include <pthread.h>
#include <stdbool.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <netinet/in.h>
#include <microhttpd.h>

#include "fc_dl.h"
#include "fc_error.h"
#include "fc_http_guard.h"

/* libmicrohttpd, loaded when a server starts (fc_http_start; fc_dl.h): a
 * command that serves nothing does not load it, nor what it pulls in.
 * Calls go through fc_mhd. */
#define FC_MHD_FUNCS(X)                                                                                      \
	X(MHD_add_response_header) X(MHD_create_response_from_buffer) X(MHD_destroy_response)                \
	X(MHD_get_connection_info) X(MHD_is_feature_supported) X(MHD_lookup_connection_value)               \
	X(MHD_queue_response) X(MHD_start_daemon) X(MHD_stop_daemon)
struct fc_mhd {
	FC_MHD_FUNCS(FC_DL_PTR)
};
extern struct fc_mhd fc_mhd;

#define FC_HTTP_TOKEN_LEN 64 /* hex digits: 256 random bits */
#define FC_HTTP_TOKEN_DEFAULT "/var/lib/freqctl/console.token"

/* How a server is run, from the agent's options. */
struct fc_http_conf {
	const char *token_file;            /* the bearer token */
	const char *host;                  /* a name clients use besides the address (--http-host), or NULL */
	const char *cert_file, *key_file;  /* PEM: serve TLS; NULL: plain HTTP */
	bool insecure;                     /* plain HTTP beyond loopback, knowingly */
	void (*log)(const char *fmt, ...) __attribute__((format(printf, 1, 2))); /* who wrote what; may be NULL */
};

/* [ADDR:]PORT: an IPv4 literal, or an IPv6 one in brackets ("127.0.0.1:9469",
 * "[::1]:9469"); a bare port is 127.0.0.1's. */
int fc_http_parse(const char *listen, struct sockaddr_storage *sa, struct fc_err *err);

/* Reads the token from path; create: makes the file (0600, random token)
 * when it does not exist. The file must be ours and readable by us alone. */
int fc_http_token(const char *path, bool create, char token[FC_HTTP_TOKEN_LEN + 1], struct fc_err *err);
/* Replaces the token with a new random one (the file renamed into place). */
int fc_http_token_rotate(const char *path, char token[FC_HTTP_TOKEN_LEN + 1], struct fc_err *err);

/* A running server. */
struct fc_http {
	struct MHD_Daemon *d;
	const struct fc_http_conf *conf;
	char self[INET6_ADDRSTRLEN + 8]; /* "127.0.0.1:9470", "[::1]:9470" */
	unsigned port;
	bool loopback, wildcard;
	pthread_mutex_t lock; /* the token below */
	char token[FC_HTTP_TOKEN_LEN + 1];
	dev_t token_dev;
	ino_t token_ino;
	struct timespec token_mtime;
	char *pem[2]; /* TLS certificate and key, while the daemon runs */
	struct fc_http_guard guard; /* against clients that hold connections */
};

/* Listens on sa, serving in one event-driven thread of its own; a client
 * that stalls is cut off after 10 s, one whose request is not whole 10 s
 * after it could start too, and one address holds a quarter of the
 * connections at most (fc_http_guard.h). done (may be NULL) is called when
 * a request ends. Refuses plain HTTP beyond loopback unless conf->insecure.
 * -1 with err when it can not serve. */
int fc_http_start(struct fc_http *h, const struct sockaddr_storage *sa, const struct fc_http_conf *conf,
		  MHD_AccessHandlerCallback handler, void *cls, MHD_RequestCompletedCallback done, struct fc_err *err);
void fc_http_stop(struct fc_http *h);

/* Whether conn may be answered: 0, or the status to refuse it with (403: a
 * Host that does not name this server; 401: no or a wrong bearer token, when
 * token is asked for). who (for logs) gets the peer and the token's tag. */
unsigned fc_http_admit(struct fc_http *h, struct MHD_Connection *conn, bool token, char *who, size_t wholen);

/* Queues body (malloc'd, released here in every case; NULL: out of memory,
 * the connection is dropped), never cached; a 401 says to use a bearer token. */
enum MHD_Result fc_http_reply(struct MHD_Connection *conn, unsigned int status, char *body, size_t len,
			      const char *type);

#endif /* FC_HTTP_H */
