// SPDX-License-Identifier: BSD-2-Clause
/*
 * The fleet's demand subscriber (see fc_fleet_sub.h).
 */
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include "fc_fleet_sub.h"
#include "fc_hiredis.h"

static uint64_t fc_mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

void fc_fleet_sub_init(struct fc_fleet_sub *s)
{
	memset(s, 0, sizeof(*s));
	s->fd = -1;
}

static void fc_sub_drop(struct fc_fleet_sub *s)
{
	if (s->fd >= 0) {
		close(s->fd);
		fc_redis_reader_free(&s->rd);
	}
	s->fd = -1;
	s->ready = false;
	s->backoff_ms = s->backoff_ms ? (s->backoff_ms * 2 > 1000 ? 1000 : s->backoff_ms * 2) : 100;
	s->retry_ms = fc_mono_ms() + s->backoff_ms;
}

void fc_fleet_sub_close(struct fc_fleet_sub *s)
{
	fc_sub_drop(s);
	fc_fleet_sub_init(s);
}

/* Writes a command whole (the socket is blocking with a timeout). */
static int fc_sub_send(int fd, int argc, const char **argv)
{
	char *buf;
	int len = fc_hiredis.redisFormatCommandArgv(&buf, argc, argv, NULL), rc = 0;
	ssize_t n, off = 0;

	if (len < 0)
		return -1;
	while (off < len && rc == 0) {
		n = send(fd, buf + off, (size_t)(len - off), MSG_NOSIGNAL);
		if (n <= 0)
			rc = -1;
		else
			off += n;
	}
	explicit_bzero(buf, (size_t)len); /* an AUTH */
	fc_hiredis.redisFreeCommand(buf);
	return rc;
}

/* A connection to a, AUTH and SUBSCRIBE sent: 0, or -1. */
static int fc_sub_connect(struct fc_fleet_sub *s, const struct fc_redis_conf *c, const struct fc_redis_addr *a)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV }, *ai = NULL;
	struct timeval tv = { .tv_sec = c->connect_timeout_ms / 1000,
			      .tv_usec = (long)(c->connect_timeout_ms % 1000) * 1000 };
	const char *argv[3];
	char port[8], chan[FC_REDIS_PREFIX_MAX + 8];
	struct fc_err err;
	int one = 1;

	snprintf(port, sizeof(port), "%u", a->port);
	if (getaddrinfo(a->host, port, &hints, &ai))
		return -1;
	s->fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s->fd >= 0) {
		setsockopt(s->fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
		setsockopt(s->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		setsockopt(s->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		setsockopt(s->fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
	}
	if (s->fd < 0 || connect(s->fd, ai->ai_addr, ai->ai_addrlen) < 0 || fc_redis_reader_init(&s->rd, &err) < 0) {
		freeaddrinfo(ai);
		if (s->fd >= 0)
			close(s->fd);
		s->fd = -1;
		return -1;
	}
	freeaddrinfo(ai);
	s->connects++;
	if (c->password[0]) {
		argv[0] = "AUTH";
		argv[1] = c->user[0] ? c->user : c->password;
		argv[2] = c->password;
		if (fc_sub_send(s->fd, c->user[0] ? 3 : 2, argv) < 0)
			return -1;
	}
	snprintf(chan, sizeof(chan), "%sdemand", c->prefix);
	argv[0] = "SUBSCRIBE";
	argv[1] = chan;
	return fc_sub_send(s->fd, 2, argv);
}

/* One reply: a message to the caller, SUBSCRIBE's answer, AUTH's +OK; -1
 * for anything else (an error: a wrong password). */
static int fc_sub_reply(struct fc_fleet_sub *s, const struct fc_redis_reply *r, fc_fleet_sub_cb *cb, void *arg)
{
	if (r->type == FC_REDIS_STATUS && !strcmp(r->str, "OK"))
		return 0;
	if (r->type != FC_REDIS_ARRAY || r->len != 3 || r->elem[0]->type != FC_REDIS_STR ||
	    r->elem[2]->type != (!strcmp(r->elem[0]->str, "message") ? FC_REDIS_STR : FC_REDIS_INT))
		return -1;
	if (!strcmp(r->elem[0]->str, "subscribe")) {
		s->ready = true;
		s->backoff_ms = 0;
		return 0;
	}
	if (strcmp(r->elem[0]->str, "message"))
		return -1;
	s->messages++;
	cb(arg, r->elem[2]->str, r->elem[2]->len);
	return 1;
}

int fc_fleet_sub_poll(struct fc_fleet_sub *s, const struct fc_redis *r, fc_fleet_sub_cb *cb, void *arg)
{
	const struct fc_redis_conf *c = fc_redis_get_conf(r);
	struct fc_redis_reply *rep;
	struct pollfd pfd;
	struct fc_err err;
	char buf[16384];
	ssize_t n;
	int got = 0, rc;

	if (s->fd < 0) {
		if (fc_mono_ms() < s->retry_ms || !c->nseeds)
			return 0;
		if (fc_sub_connect(s, c, &c->seeds[s->seed++ % c->nseeds]) < 0) {
			fc_sub_drop(s);
			return -1;
		}
	}
	for (;;) {
		pfd = (struct pollfd){ .fd = s->fd, .events = POLLIN };
		if (poll(&pfd, 1, 0) <= 0)
			return got;
		n = recv(s->fd, buf, sizeof(buf), MSG_DONTWAIT);
		if (n <= 0 || fc_redis_reader_feed(&s->rd, buf, (size_t)n, &err) < 0)
			break;
		while ((rc = fc_redis_reader_next(&s->rd, &rep, &err)) == 0 && rep) {
			rc = fc_sub_reply(s, rep, cb, arg);
			fc_redis_reply_free(rep);
			if (rc < 0)
				goto lost;
			got += rc;
		}
		if (rc < 0)
			break;
	}
lost:
	fc_sub_drop(s);
	return -1;
}
