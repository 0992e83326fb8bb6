// SPDX-License-Identifier: BSD-2-Clause
/*
 * The client: the node table and the slot table, routing, rounds of
 * pipelines and the poll loop that drives every node's socket at once
 * against one deadline (fc_redis.h says what it promises).
 */
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include "fc_grow.h"
#include "fc_hiredis.h"
#include "fc_redis.h"
#include "fc_redis_node.h"
#include "fc_redis_slot.h"

#define FC_REDIS_NODES_MAX (FC_REDIS_SHARDS_MAX * (1 + FC_REDIS_REPLICAS_MAX) + FC_REDIS_SEEDS_MAX)
#define FC_REDIS_CMD_MAX   (1u << 20) /* a command's bytes */
#define FC_REDIS_DISABLED  "ERR This instance has cluster support disabled"

_Static_assert(FC_REDIS_NODES_MAX < FC_REDIS_NO_NODE, "a node's index fits a uint16_t");

struct fc_redis {
	struct fc_redis_conf conf;
	enum fc_redis_mode mode;
	/* The slot table may be wrong: load it at the next call (stale: after a
	 * MOVED or a CLUSTERDOWN), or before the next round of this one (now:
	 * a node lost, or a replica where a primary was). */
	bool stale, stale_now;
	struct fc_redis_node *node[FC_REDIS_NODES_MAX];
	unsigned nnodes;
	uint16_t slot_node[FC_REDIS_SLOTS];
	struct fc_redis_map *map;      /* scratch for a refresh */
	struct pollfd *pfd;            /* scratch for the poll loop */
	uint16_t *pfd_node;
	struct fc_redis_cmd *cmds;     /* the batch being run */
	struct fc_redis_stats stats;
};

static uint64_t fc_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

/* ---- commands' outcomes ---- */

/* `GET "freqctl:k"`: the command and its first key, printable. */
static void fc_cmd_label(const struct fc_redis_cmd *c, char *out, size_t outlen)
{
	char name[32], key[80];
	size_t nl = c->argvlen ? c->argvlen[0] : strlen(c->argv[0]);

	fc_redis_escape(c->argv[0], nl, name, sizeof(name));
	if (!c->key) {
		snprintf(out, outlen, "%s", name);
		return;
	}
	fc_redis_escape(c->argv[c->key], c->argvlen ? c->argvlen[c->key] : strlen(c->argv[c->key]), key, sizeof(key));
	snprintf(out, outlen, "%s \"%s\"", name, key);
}

/* Sets c's message: its label, then fmt. */
__attribute__((format(printf, 2, 3))) static void fc_cmd_msg(struct fc_redis_cmd *c, const char *fmt, ...)
{
	char label[128], why[FC_ERR_LEN], *m;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	fc_cmd_label(c, label, sizeof(label));
	if (c->st.msg_owned)
		free((char *)c->msg);
	c->st.msg_owned = asprintf(&m, "%s: %s", label, why) >= 0;
	c->msg = c->st.msg_owned ? m : "out of memory";
	c->st.why = c->st.msg_owned ? (uint16_t)(strlen(label) + 2) : 0;
}

/* A final outcome (a retry's reason is a message alone). */
static void fc_cmd_done(struct fc_redis_cmd *c, enum fc_redis_status status, struct fc_redis_reply *reply)
{
	c->status = status;
	c->st.retry = false;
	fc_redis_reply_free(c->st.reply);
	c->st.reply = reply;
	c->reply = reply;
}

void fc_redis_cmds_release(struct fc_redis_cmd *cmds, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		fc_redis_reply_free(cmds[i].st.reply);
		if (cmds[i].st.msg_owned)
			free((char *)cmds[i].msg);
		cmds[i].st.reply = NULL;
		cmds[i].st.msg_owned = false;
		cmds[i].reply = NULL;
		cmds[i].msg = NULL;
		cmds[i].status = 0;
	}
}

/* ---- nodes ---- */

/* The node at a, made when new (in a free place, or one no table lists);
 * its index, or FC_REDIS_NO_NODE when the table is full. */
static uint16_t fc_node_get(struct fc_redis *r, const struct fc_redis_addr *a)
{
	struct fc_redis_node *n;
	unsigned i, spare = FC_REDIS_NO_NODE;

	for (i = 0; i < r->nnodes; i++) {
		n = r->node[i];
		if (n->addr.port == a->port && !strcmp(n->addr.host, a->host))
			return (uint16_t)i;
		if (spare == FC_REDIS_NO_NODE && !n->listed && !n->seed && n->state == FC_NODE_IDLE && !n->todo_len)
			spare = i;
	}
	if (r->nnodes < FC_REDIS_NODES_MAX) {
		n = calloc(1, sizeof(*n));
		if (!n)
			return FC_REDIS_NO_NODE;
		n->fd = -1;
		r->node[r->nnodes] = n;
		i = r->nnodes++;
	} else if (spare != FC_REDIS_NO_NODE) {
		i = spare;
		n = r->node[i];
	} else {
		return FC_REDIS_NO_NODE;
	}
	n->addr = *a;
	fc_redis_addr_format(a, n->name);
	n->listed = n->primary = n->down = false;
	n->slots = 0;
	return (uint16_t)i;
}

static void fc_node_wipe_out(struct fc_redis_node *n)
{
	if (n->out_secret)
		explicit_bzero(n->out, n->out_len);
	n->out_secret = false;
	n->out_len = n->out_off = 0;
}

/* Appends one command to n's pipeline, owing a reply of kind; -1 when it
 * can not (out of memory). */
static int fc_node_queue(struct fc_redis_node *n, enum fc_wait_kind kind, uint32_t cmd, int argc, const char *const *argv,
			 const size_t *argvlen)
{
	char *buf;
	int len = fc_hiredis.redisFormatCommandArgv(&buf, argc, (const char **)argv, argvlen);

	if (len < 0)
		return -1;
	if (fc_grow((void **)&n->out, &n->out_cap, n->out_len + (size_t)len, 1) < 0 ||
	    fc_grow((void **)&n->wait, &n->wait_cap, n->wait_len + 1, sizeof(n->wait[0])) < 0) {
		fc_hiredis.redisFreeCommand(buf);
		return -1;
	}
	memcpy(n->out + n->out_len, buf, (size_t)len);
	if (kind == FC_WAIT_AUTH) {
		explicit_bzero(buf, (size_t)len);
		n->out_secret = true;
	}
	fc_hiredis.redisFreeCommand(buf);
	n->wait[n->wait_len++] = (struct fc_redis_wait){ .kind = kind, .cmd = cmd, .start = n->queued };
	n->out_len += (size_t)len;
	n->queued += (uint64_t)len;
	return 0;
}

/* Closes n's connection. What it owed: a command whose bytes had begun to
 * go out is lost (it may have run); one that had not, and what waited for
 * the connection, is sent again if retry (elsewhere: n is down for the rest
 * of the call), else it did not run. */
static void fc_node_fail(struct fc_redis *r, struct fc_redis_node *n, bool retry, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static void fc_node_fail(struct fc_redis *r, struct fc_redis_node *n, bool retry, const char *fmt, ...)
{
	struct fc_redis_cmd *c;
	char why[160];
	va_list ap;
	size_t i;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	if (n->fd >= 0)
		close(n->fd);
	n->fd = -1;
	n->state = FC_NODE_IDLE;
	n->down = true;
	fc_redis_reader_free(&n->rd);
	fc_node_wipe_out(n);
	r->stats.failures++;
	if (r->mode == FC_REDIS_CLUSTER)
		r->stale = r->stale_now = true;
	for (i = n->wait_head; i < n->wait_len; i++) {
		if (n->wait[i].kind != FC_WAIT_CMD)
			continue;
		c = &r->cmds[n->wait[i].cmd];
		fc_cmd_msg(c, "%s: %s", n->name, why);
		if (n->sent > n->wait[i].start)
			fc_cmd_done(c, FC_REDIS_LOST, NULL);
		else if (retry)
			c->st.retry = true;
		else
			fc_cmd_done(c, FC_REDIS_NOT_RUN, NULL);
	}
	for (i = 0; i < n->todo_len; i++) {
		c = &r->cmds[n->todo[i]];
		fc_cmd_msg(c, "%s: %s", n->name, why);
		if (retry)
			c->st.retry = true;
		else
			fc_cmd_done(c, FC_REDIS_NOT_RUN, NULL);
	}
	n->wait_head = n->wait_len = n->todo_len = 0;
	n->queued = n->sent = 0;
	if (n->call) {
		snprintf(n->call_err, sizeof(n->call_err), "%s: %s", n->name, why);
		n->call = false;
	}
}

/* Puts what waited for n's connection into its pipeline. */
static void fc_node_flush(struct fc_redis *r, struct fc_redis_node *n)
{
	static const char *const slots[] = { "CLUSTER", "SLOTS" };
	static const char *const asking[] = { "ASKING" };
	struct fc_redis_cmd *c;
	size_t i;

	if (n->call && fc_node_queue(n, FC_WAIT_CALL, 0, 2, slots, NULL) < 0) {
		fc_node_fail(r, n, false, "out of memory");
		return;
	}
	for (i = 0; i < n->todo_len; i++) {
		c = &r->cmds[n->todo[i]];
		if ((c->st.asking && fc_node_queue(n, FC_WAIT_ASKING, n->todo[i], 1, asking, NULL) < 0) ||
		    fc_node_queue(n, FC_WAIT_CMD, n->todo[i], c->argc, c->argv, c->argvlen) < 0) {
			fc_node_fail(r, n, false, "out of memory");
			return;
		}
	}
	n->todo_len = 0;
}

/* The connection is up: AUTH first when there is a password. */
static void fc_node_connected(struct fc_redis *r, struct fc_redis_node *n)
{
	const char *argv[3] = { "AUTH" };
	struct fc_err err;
	int argc = 1;

	r->stats.connects++;
	n->connects++;
	n->down = false;
	if (fc_redis_reader_init(&n->rd, &err) < 0) {
		fc_node_fail(r, n, false, "%s", err.msg);
		return;
	}
	if (!r->conf.password[0]) {
		n->state = FC_NODE_READY;
		fc_node_flush(r, n);
		return;
	}
	if (r->conf.user[0])
		argv[argc++] = r->conf.user;
	argv[argc++] = r->conf.password;
	if (fc_node_queue(n, FC_WAIT_AUTH, 0, argc, argv, NULL) < 0) {
		fc_node_fail(r, n, false, "out of memory");
		return;
	}
	n->state = FC_NODE_AUTH;
}

/* Starts connecting to n, which has something to send. */
static void fc_node_connect(struct fc_redis *r, struct fc_redis_node *n, uint64_t deadline)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV }, *ai = NULL;
	uint64_t now = fc_now_us();
	char port[8];
	int one = 1, rc;

	snprintf(port, sizeof(port), "%u", n->addr.port);
	/* An address resolves at once; a name asks the resolver (fc_redis.h). */
	rc = getaddrinfo(n->addr.host, port, &hints, &ai);
	if (rc) {
		fc_node_fail(r, n, true, "cannot resolve %s: %s", n->addr.host, gai_strerror(rc));
		return;
	}
	n->fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (n->fd < 0) {
		freeaddrinfo(ai);
		fc_node_fail(r, n, true, "socket: %s", strerror(errno));
		return;
	}
	setsockopt(n->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	setsockopt(n->fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
	rc = connect(n->fd, ai->ai_addr, ai->ai_addrlen);
	freeaddrinfo(ai);
	n->queued = n->sent = 0;
	if (rc < 0 && errno != EINPROGRESS) {
		fc_node_fail(r, n, true, "connect: %s", strerror(errno));
		return;
	}
	n->state = FC_NODE_CONNECTING;
	n->connect_at = now;
	n->connect_by = now + (uint64_t)r->conf.connect_timeout_ms * 1000;
	if (n->connect_by > deadline)
		n->connect_by = deadline;
	if (rc == 0)
		fc_node_connected(r, n);
}

/* Closes n's connection, owing nothing, if the server closed it (a restart,
 * an idle timeout, a killed primary) or sent what nobody asked for: a
 * command written to it now would be lost without having been sent. */
static void fc_node_check_idle(struct fc_redis_node *n)
{
	char b;

	if (n->state != FC_NODE_READY || n->wait_head < n->wait_len || n->out_off < n->out_len)
		return;
	if (recv(n->fd, &b, 1, MSG_PEEK | MSG_DONTWAIT) < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	close(n->fd);
	n->fd = -1;
	n->state = FC_NODE_IDLE;
	fc_redis_reader_free(&n->rd);
}

/* Makes n send what waits for it: connects, or flushes when ready. */
static void fc_node_kick(struct fc_redis *r, struct fc_redis_node *n, uint64_t deadline)
{
	fc_node_check_idle(n);
	if (n->state == FC_NODE_IDLE)
		fc_node_connect(r, n, deadline);
	else if (n->state == FC_NODE_READY)
		fc_node_flush(r, n);
}

/* ---- replies ---- */

static bool fc_starts(const struct fc_redis_reply *e, const char *prefix)
{
	size_t len = strlen(prefix);

	return e->len >= len && !memcmp(e->str, prefix, len) && (e->len == len || e->str[len] == ' ');
}

/* An error reply to command c from n: a redirection, a refusal before
 * running, or Redis's answer. */
static void fc_cmd_error(struct fc_redis *r, struct fc_redis_node *n, struct fc_redis_cmd *c,
			 struct fc_redis_reply *e)
{
	char text[160];
	struct fc_redis_redirect to;
	struct fc_err err;
	uint16_t target;
	int rc;

	fc_redis_escape(e->str, e->len, text, sizeof(text));
	rc = fc_redis_redirect_parse(e->str, e->len, &to, &err);
	if (rc < 0 || (rc > 0 && r->mode != FC_REDIS_CLUSTER)) {
		fc_cmd_msg(c, "%s: %s", n->name, rc < 0 ? err.msg : text);
		fc_cmd_done(c, FC_REDIS_ERROR, e);
		return;
	}
	if (rc > 0 && c->key && to.slot != c->st.slot) {
		fc_cmd_msg(c, "%s: %s: not the slot of the key, %u", n->name, text, c->st.slot);
		r->stats.bad_replies++;
		fc_redis_reply_free(e);
		fc_cmd_done(c, FC_REDIS_BAD_REPLY, NULL);
		return;
	}
	if (rc > 0) {
		if (!to.to.host[0]) /* the endpoint it was sent to */
			memcpy(to.to.host, n->addr.host, sizeof(to.to.host));
		target = fc_node_get(r, &to.to);
		fc_redis_reply_free(e);
		if (target == FC_REDIS_NO_NODE) {
			fc_cmd_msg(c, "%s: %s: more nodes than %d", n->name, text, FC_REDIS_NODES_MAX);
			fc_cmd_done(c, FC_REDIS_NOT_RUN, NULL);
			return;
		}
		if (to.ask) {
			r->stats.ask++;
		} else {
			/* The slot is the node's now; the rest of the table may
			 * have moved with it: loaded again before the next call. */
			r->stats.moved++;
			r->slot_node[to.slot] = target;
			r->node[target]->primary = true;
			r->stale = true;
		}
		c->st.asking = to.ask;
		c->st.node = target;
		c->st.retry = true;
		fc_cmd_msg(c, "%s: %s", n->name, text);
		return;
	}
	if (fc_starts(e, "TRYAGAIN") || fc_starts(e, "READONLY")) {
		/* TRYAGAIN: a multi-key command during a migration; READONLY:
		 * n is a replica now. Both refuse before running. */
		if (fc_starts(e, "READONLY"))
			r->stale = r->stale_now = r->mode == FC_REDIS_CLUSTER;
		else
			r->stats.tryagain++;
		c->st.retry = true;
		fc_cmd_msg(c, "%s: %s", n->name, text);
		fc_redis_reply_free(e);
		return;
	}
	fc_cmd_msg(c, "%s: %s", n->name, text);
	if (fc_starts(e, "CLUSTERDOWN") || fc_starts(e, "LOADING") || fc_starts(e, "MASTERDOWN")) {
		r->stale = r->mode == FC_REDIS_CLUSTER;
		fc_redis_reply_free(e);
		fc_cmd_done(c, FC_REDIS_NOT_RUN, NULL);
		return;
	}
	fc_cmd_done(c, FC_REDIS_ERROR, e);
}

/* The reply n owed first. */
static void fc_node_reply(struct fc_redis *r, struct fc_redis_node *n, struct fc_redis_reply *reply)
{
	struct fc_redis_wait w;
	struct fc_redis_cmd *c;
	char text[160];
	struct fc_err err;

	if (n->wait_head == n->wait_len) {
		fc_redis_reply_free(reply);
		fc_node_fail(r, n, false, "a reply to nothing asked: the connection is out of step");
		return;
	}
	w = n->wait[n->wait_head++];
	if (n->wait_head == n->wait_len)
		n->wait_head = n->wait_len = 0;
	switch (w.kind) {
	case FC_WAIT_AUTH:
		if (reply->type == FC_REDIS_STATUS && !strcmp(reply->str, "OK")) {
			fc_redis_reply_free(reply);
			n->state = FC_NODE_READY;
			fc_node_flush(r, n);
			return;
		}
		fc_redis_reply_describe(reply, text, sizeof(text));
		fc_redis_reply_free(reply);
		fc_node_fail(r, n, false, "AUTH%s refused: %s", r->conf.user[0] ? " (user and password)" : "", text);
		return;
	case FC_WAIT_ASKING:
		fc_redis_reply_free(reply); /* a refusal shows in the command's own reply */
		return;
	case FC_WAIT_CALL:
		fc_redis_reply_free(n->call_reply);
		n->call_reply = reply;
		n->call = false;
		return;
	case FC_WAIT_CMD:
		break;
	}
	c = &r->cmds[w.cmd];
	if (reply->type == FC_REDIS_ERR) {
		fc_cmd_error(r, n, c, reply);
		return;
	}
	if (fc_redis_reply_check(reply, &c->want, &err) < 0) {
		fc_cmd_msg(c, "%s: %s", n->name, err.msg);
		r->stats.bad_replies++;
		fc_redis_reply_free(reply);
		fc_cmd_done(c, FC_REDIS_BAD_REPLY, NULL);
		return;
	}
	fc_cmd_done(c, FC_REDIS_OK, reply);
}

/* ---- the poll loop ---- */

static bool fc_node_busy(const struct fc_redis_node *n)
{
	return n->state == FC_NODE_CONNECTING || n->state == FC_NODE_AUTH ||
	       (n->state == FC_NODE_READY && (n->wait_head < n->wait_len || n->out_off < n->out_len));
}

static void fc_node_write(struct fc_redis *r, struct fc_redis_node *n)
{
	ssize_t w;

	while (n->out_off < n->out_len) {
		w = send(n->fd, n->out + n->out_off, n->out_len - n->out_off, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (w < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		if (w <= 0) {
			fc_node_fail(r, n, true, "send: %s", strerror(errno));
			return;
		}
		n->out_off += (size_t)w;
		n->sent += (uint64_t)w;
	}
	fc_node_wipe_out(n);
}

static void fc_node_read(struct fc_redis *r, struct fc_redis_node *n)
{
	char buf[16384];
	struct fc_redis_reply *reply;
	struct fc_err err;
	ssize_t got;
	int i;

	/* A few reads at a time, so that one busy node does not starve the rest. */
	for (i = 0; i < 16 && n->fd >= 0; i++) {
		got = recv(n->fd, buf, sizeof(buf), MSG_DONTWAIT);
		if (got < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		if (got < 0) {
			fc_node_fail(r, n, true, "recv: %s", strerror(errno));
			return;
		}
		if (!got) {
			fc_node_fail(r, n, true, "connection closed by the server");
			return;
		}
		if (fc_redis_reader_feed(&n->rd, buf, (size_t)got, &err) < 0) {
			r->stats.bad_replies++;
			fc_node_fail(r, n, false, "reply: %s", err.msg);
			return;
		}
		while (n->fd >= 0) {
			if (fc_redis_reader_next(&n->rd, &reply, &err) < 0) {
				r->stats.bad_replies++;
				fc_node_fail(r, n, false, "reply: %s", err.msg);
				return;
			}
			if (!reply)
				break;
			fc_node_reply(r, n, reply);
		}
	}
}

static void fc_node_io(struct fc_redis *r, struct fc_redis_node *n, short revents)
{
	int soerr = 0;
	socklen_t len = sizeof(soerr);

	if (n->state == FC_NODE_CONNECTING) {
		if (getsockopt(n->fd, SOL_SOCKET, SO_ERROR, &soerr, &len) < 0)
			soerr = errno;
		if (soerr) {
			fc_node_fail(r, n, true, "connect: %s", strerror(soerr));
			return;
		}
		fc_node_connected(r, n);
	}
	if (n->fd >= 0 && n->out_off < n->out_len)
		fc_node_write(r, n);
	if (n->fd >= 0 && (revents & (POLLIN | POLLHUP | POLLERR)))
		fc_node_read(r, n);
}

/* Drives every busy node until none is, or until deadline: then what is
 * still owed is lost. */
static void fc_redis_pump(struct fc_redis *r, uint64_t deadline)
{
	struct fc_redis_node *n;
	uint64_t now, next;
	unsigned i, npfd;
	int rc;

	for (;;) {
		now = fc_now_us();
		next = deadline;
		npfd = 0;
		for (i = 0; i < r->nnodes; i++) {
			n = r->node[i];
			if (!fc_node_busy(n))
				continue;
			if (now >= deadline || (n->state == FC_NODE_CONNECTING && now >= n->connect_by)) {
				if (n->state == FC_NODE_CONNECTING)
					fc_node_fail(r, n, true, "no connection within %u ms",
						     (unsigned)((now - n->connect_at) / 1000));
				else
					fc_node_fail(r, n, false, "no answer within %u ms", r->conf.timeout_ms);
				continue;
			}
			if (n->state == FC_NODE_CONNECTING && n->connect_by < next)
				next = n->connect_by;
			r->pfd[npfd] = (struct pollfd){
				.fd = n->fd,
				.events = (short)(n->state == FC_NODE_CONNECTING ? POLLOUT :
						  POLLIN | (n->out_off < n->out_len ? POLLOUT : 0)),
			};
			r->pfd_node[npfd++] = (uint16_t)i;
		}
		if (!npfd)
			return;
		rc = poll(r->pfd, npfd, (int)((next - now + 999) / 1000));
		if (rc < 0 && errno != EINTR)
			return; /* never seen; the deadline ends the call */
		for (i = 0; rc > 0 && i < npfd; i++)
			if (r->pfd[i].revents)
				fc_node_io(r, r->node[r->pfd_node[i]], r->pfd[i].revents);
	}
}

/* ---- the slot table ---- */

/* CLUSTER SLOTS of node i, by deadline: its reply (the caller's to free),
 * or NULL with err. */
static struct fc_redis_reply *fc_redis_call(struct fc_redis *r, unsigned i, uint64_t deadline, struct fc_err *err)
{
	struct fc_redis_node *n = r->node[i];
	struct fc_redis_reply *reply;

	n->call = true;
	n->call_err[0] = '\0';
	fc_node_kick(r, n, deadline);
	fc_redis_pump(r, deadline);
	reply = n->call_reply;
	n->call_reply = NULL;
	if (!reply) {
		n->call = false;
		fc_err_set(err, "%s", n->call_err[0] ? n->call_err : "no answer");
	}
	return reply;
}

/* The table of map: its nodes listed, the others closed. */
static int fc_redis_apply(struct fc_redis *r, const struct fc_redis_map *m, struct fc_err *err)
{
	uint16_t idx[FC_REDIS_SHARDS_MAX];
	struct fc_redis_node *n;
	unsigned i, j;
	uint16_t k;

	for (i = 0; i < r->nnodes; i++)
		r->node[i]->listed = r->node[i]->primary = false, r->node[i]->slots = r->node[i]->replicas = 0;
	for (i = 0; i < m->nshards; i++) {
		idx[i] = fc_node_get(r, &m->shard[i].primary);
		if (idx[i] == FC_REDIS_NO_NODE)
			return fc_err_set(err, "out of memory");
		n = r->node[idx[i]];
		n->listed = n->primary = true;
		n->slots = m->shard[i].nslots;
		n->replicas = m->shard[i].nreplicas;
		for (j = 0; j < m->shard[i].nreplicas; j++) {
			k = fc_node_get(r, &m->shard[i].replicas[j]);
			if (k != FC_REDIS_NO_NODE && !r->node[k]->primary)
				r->node[k]->listed = true;
		}
	}
	for (i = 0; i < FC_REDIS_SLOTS; i++)
		r->slot_node[i] = m->slot[i] == FC_REDIS_NO_SHARD ? FC_REDIS_NO_NODE : idx[m->slot[i]];
	for (i = 0; i < r->nnodes; i++) {
		n = r->node[i];
		if (!n->listed && n->state != FC_NODE_IDLE && !fc_node_busy(n)) {
			close(n->fd);
			n->fd = -1;
			n->state = FC_NODE_IDLE;
			fc_redis_reader_free(&n->rd);
		}
	}
	r->stats.refreshes++;
	r->stale = r->stale_now = false;
	return 0;
}

/* Node i's CLUSTER SLOTS, applied: 1 (it is a Cluster), 0 (a standalone
 * server), -1 with err. */
static int fc_redis_learn(struct fc_redis *r, unsigned i, uint64_t deadline, struct fc_err *err)
{
	struct fc_redis_reply *reply = fc_redis_call(r, i, deadline, err);
	char text[160];
	int rc = -1;

	if (!reply)
		return -1;
	if (reply->type == FC_REDIS_ERR && reply->len >= strlen(FC_REDIS_DISABLED) &&
	    !memcmp(reply->str, FC_REDIS_DISABLED, strlen(FC_REDIS_DISABLED))) {
		rc = 0;
	} else if (reply->type == FC_REDIS_ERR) {
		fc_redis_reply_describe(reply, text, sizeof(text));
		fc_err_set(err, "%s: CLUSTER SLOTS: %s", r->node[i]->name, text);
	} else if (fc_redis_map_parse(reply, &r->node[i]->addr, r->map, err) == 0) {
		rc = fc_redis_apply(r, r->map, err) < 0 ? -1 : 1;
	} else {
		char why[FC_ERR_LEN];

		snprintf(why, sizeof(why), "%s", err->msg);
		fc_err_set(err, "%s: %s", r->node[i]->name, why);
	}
	fc_redis_reply_free(reply);
	return rc;
}

/* Loads the slot table from the first node that answers: connected
 * primaries, then the others, replicas, the seeds. */
static int fc_redis_refresh(struct fc_redis *r, uint64_t deadline, struct fc_err *err)
{
	unsigned pass, i;
	int rc;

	fc_err_set(err, "no node to ask for the slot table");
	for (pass = 0; pass < 4; pass++)
		for (i = 0; i < r->nnodes && fc_now_us() < deadline; i++) {
			struct fc_redis_node *n = r->node[i];
			bool pick = pass == 0 ? n->primary && n->state == FC_NODE_READY :
				    pass == 1 ? n->primary && n->state != FC_NODE_READY :
				    pass == 2 ? n->listed && !n->primary :
						n->seed && !n->listed;

			if (!pick || n->down)
				continue;
			rc = fc_redis_learn(r, i, deadline, err);
			if (rc > 0)
				return 0;
			if (rc == 0) /* a standalone server among them: not ours to use */
				fc_err_set(err, "%s: a standalone server, not a node of the Cluster", n->name);
		}
	return -1;
}

int fc_redis_connect(struct fc_redis *r, struct fc_err *err)
{
	uint64_t deadline = fc_now_us() + (uint64_t)r->conf.timeout_ms * 1000;
	char all[FC_ERR_LEN] = "", shown[FC_REDIS_ADDR_LEN];
	struct fc_err why;
	unsigned s, i;
	size_t o = 0;
	uint16_t k;
	int rc;

	for (s = 0; s < r->conf.nseeds; s++) {
		k = fc_node_get(r, &r->conf.seeds[s]);
		if (k == FC_REDIS_NO_NODE)
			return fc_err_set(err, "out of memory");
		r->node[k]->seed = true;
		r->node[k]->down = false;
		rc = fc_redis_learn(r, k, deadline, &why);
		if (rc > 0) {
			r->mode = FC_REDIS_CLUSTER;
			return 0;
		}
		if (rc == 0 && r->conf.nseeds > 1) {
			fc_redis_addr_format(&r->conf.seeds[s], shown);
			return fc_err_set(err, "--redis: %s is a standalone Redis: give it alone (several URLs are the "
					       "seeds of one Cluster)", shown);
		}
		if (rc == 0) {
			r->mode = FC_REDIS_STANDALONE;
			r->node[k]->listed = r->node[k]->primary = true;
			r->node[k]->slots = FC_REDIS_SLOTS;
			for (i = 0; i < FC_REDIS_SLOTS; i++)
				r->slot_node[i] = k;
			return 0;
		}
		o += (size_t)snprintf(all + o, o < sizeof(all) ? sizeof(all) - o : 0, "%s%s", o ? "; " : "", why.msg);
	}
	return fc_err_set(err, "no Redis reached: %s", all);
}

/* ---- a batch ---- */

/* Checks c and finds its slot: 0, or -1 when it can not be sent. */
static int fc_cmd_prepare(struct fc_redis_cmd *c)
{
	unsigned nkeys = c->key ? (c->nkeys ? c->nkeys : 1) : 0, slot, j;
	size_t bytes = 0, len;
	int i;

	memset(&c->st, 0, sizeof(c->st));
	c->status = 0;
	c->reply = NULL;
	c->msg = NULL;
	if (c->argc < 1 || c->argc > 65536 || !c->argv || !c->argv[0] || c->key + nkeys > (unsigned)c->argc) {
		c->msg = "a command without a name, or keys beyond its arguments";
		c->status = FC_REDIS_NOT_RUN;
		return -1;
	}
	for (i = 0; i < c->argc; i++)
		bytes += c->argvlen ? c->argvlen[i] : strlen(c->argv[i]);
	if (bytes > FC_REDIS_CMD_MAX) {
		fc_cmd_msg(c, "more than %u bytes", FC_REDIS_CMD_MAX);
		fc_cmd_done(c, FC_REDIS_NOT_RUN, NULL);
		return -1;
	}
	if (!nkeys && c->route)
		c->st.slot = (uint16_t)fc_redis_slot(c->route, strlen(c->route));
	else if (!nkeys)
		c->st.slot = c->route_slot & (FC_REDIS_SLOTS - 1);
	for (j = 0; j < nkeys; j++) {
		len = c->argvlen ? c->argvlen[c->key + j] : strlen(c->argv[c->key + j]);
		slot = fc_redis_slot(c->argv[c->key + j], len);
		if (j && slot != c->st.slot) {
			fc_cmd_msg(c, "its keys are in different slots (a hash tag, {...}, puts them in one)");
			fc_cmd_done(c, FC_REDIS_NOT_RUN, NULL);
			return -1;
		}
		c->st.slot = (uint16_t)slot;
	}
	c->st.retry = true;
	c->st.node = FC_REDIS_NO_NODE;
	return 0;
}

/* Queues each command to be retried (or sent first) to its node; how many
 * pipelines that makes. */
static unsigned fc_redis_route(struct fc_redis *r, size_t n, uint64_t deadline)
{
	struct fc_redis_node *node;
	struct fc_redis_cmd *c;
	unsigned pipelines = 0, i;
	uint16_t k;
	size_t j;

	for (j = 0; j < n; j++) {
		c = &r->cmds[j];
		if (!c->st.retry)
			continue;
		c->st.retry = false;
		k = c->st.asking ? c->st.node : r->slot_node[c->st.slot];
		if (k == FC_REDIS_NO_NODE) {
			fc_cmd_msg(c, "slot %u has no node (the Cluster is down, or still being made)", c->st.slot);
			fc_cmd_done(c, FC_REDIS_NOT_RUN, NULL);
			continue;
		}
		node = r->node[k];
		if (node->down) { /* failed in this call: its message says how */
			if (!c->msg)
				fc_cmd_msg(c, "%s: down", node->name);
			fc_cmd_done(c, FC_REDIS_NOT_RUN, NULL);
			continue;
		}
		if (fc_grow((void **)&node->todo, &node->todo_cap, node->todo_len + 1, sizeof(node->todo[0])) < 0) {
			fc_cmd_msg(c, "out of memory");
			fc_cmd_done(c, FC_REDIS_NOT_RUN, NULL);
			continue;
		}
		c->st.node = k;
		c->st.tries++;
		node->todo[node->todo_len++] = (uint32_t)j;
	}
	for (i = 0; i < r->nnodes; i++)
		if (r->node[i]->todo_len) {
			pipelines++;
			fc_node_kick(r, r->node[i], deadline);
		}
	return pipelines;
}

/* Ends what is left of a call: a node still owing replies is closed (what
 * it owes is lost), a command still to be retried did not run. */
static void fc_redis_settle(struct fc_redis *r, size_t n, uint64_t deadline)
{
	struct fc_redis_cmd *c;
	char *old;
	unsigned i;
	size_t j;

	for (i = 0; i < r->nnodes; i++)
		if (fc_node_busy(r->node[i]) || r->node[i]->todo_len)
			fc_node_fail(r, r->node[i], false, "no answer within %u ms", r->conf.timeout_ms);
	for (j = 0; j < n; j++) {
		c = &r->cmds[j];
		if (!c->st.retry && c->status)
			continue;
		/* Its last message says why it was to be retried. */
		old = c->st.msg_owned ? (char *)c->msg : NULL;
		c->st.msg_owned = false;
		if (fc_now_us() >= deadline)
			fc_cmd_msg(c, "out of time (%u ms)%s%s", r->conf.timeout_ms, old ? "; before: " : "",
				   old ? old + c->st.why : "");
		else
			fc_cmd_msg(c, "sent %u times, the most allowed%s%s", c->st.tries, old ? "; the last: " : "",
				   old ? old + c->st.why : "");
		free(old);
		fc_cmd_done(c, FC_REDIS_NOT_RUN, NULL);
	}
}

size_t fc_redis_exec(struct fc_redis *r, struct fc_redis_cmd *cmds, size_t n, struct fc_err *err)
{
	uint64_t start = fc_now_us(), deadline = start + (uint64_t)r->conf.timeout_ms * 1000;
	size_t j, failed = 0, first = n;
	unsigned round, pipelines, i;
	struct fc_err why;

	r->cmds = cmds;
	r->stats.calls++;
	r->stats.commands += n;
	for (i = 0; i < r->nnodes; i++)
		r->node[i]->down = false;
	for (j = 0; j < n; j++)
		fc_cmd_prepare(&cmds[j]);
	if (r->mode == FC_REDIS_UNKNOWN && fc_redis_connect(r, &why) < 0) {
		for (j = 0; j < n; j++)
			if (cmds[j].st.retry) {
				fc_cmd_msg(&cmds[j], "%s", why.msg);
				fc_cmd_done(&cmds[j], FC_REDIS_NOT_RUN, NULL);
			}
	}
	for (round = 0; round <= r->conf.max_redirects && fc_now_us() < deadline; round++) {
		/* Failing, the table stays as it was. */
		if ((round ? r->stale_now : r->stale) && r->mode == FC_REDIS_CLUSTER)
			fc_redis_refresh(r, deadline, &why);
		pipelines = fc_redis_route(r, n, deadline);
		if (!pipelines)
			break;
		r->stats.rounds++;
		r->stats.pipelines += pipelines;
		fc_redis_pump(r, deadline);
	}
	if (fc_now_us() >= deadline)
		r->stats.timeouts++;
	fc_redis_settle(r, n, deadline);
	for (j = 0; j < n; j++)
		if (cmds[j].status != FC_REDIS_OK && failed++ == 0)
			first = j;
	r->cmds = NULL;
	r->stats.last_usec = fc_now_us() - start;
	if (failed)
		fc_err_set(err, "%zu of %zu Redis commands failed; the first: %s", failed, n, cmds[first].msg);
	return failed;
}

/* ---- the client ---- */

struct fc_redis *fc_redis_open(const struct fc_redis_conf *conf, struct fc_err *err)
{
	struct fc_redis *r;
	unsigned i;

	if (!conf->nseeds) {
		fc_err_set(err, "no Redis URL (--redis)");
		return NULL;
	}
	if (fc_hiredis_load(err) < 0)
		return NULL;
	r = calloc(1, sizeof(*r));
	if (!r || !(r->map = malloc(sizeof(*r->map))) || !(r->pfd = calloc(FC_REDIS_NODES_MAX, sizeof(*r->pfd))) ||
	    !(r->pfd_node = calloc(FC_REDIS_NODES_MAX, sizeof(*r->pfd_node)))) {
		fc_redis_close(r);
		fc_err_set(err, "out of memory");
		return NULL;
	}
	r->conf = *conf;
	for (i = 0; i < FC_REDIS_SLOTS; i++)
		r->slot_node[i] = FC_REDIS_NO_NODE;
	return r;
}

void fc_redis_close(struct fc_redis *r)
{
	struct fc_redis_node *n;
	unsigned i;

	if (!r)
		return;
	for (i = 0; i < r->nnodes; i++) {
		n = r->node[i];
		if (n->fd >= 0)
			close(n->fd);
		fc_redis_reader_free(&n->rd);
		fc_node_wipe_out(n);
		fc_redis_reply_free(n->call_reply);
		free(n->out);
		free(n->wait);
		free(n->todo);
		free(n);
	}
	fc_redis_conf_wipe(&r->conf);
	free(r->map);
	free(r->pfd);
	free(r->pfd_node);
	free(r);
}

enum fc_redis_mode fc_redis_mode(const struct fc_redis *r)
{
	return r->mode;
}

const char *fc_redis_mode_name(enum fc_redis_mode mode)
{
	return mode == FC_REDIS_STANDALONE ? "standalone" : mode == FC_REDIS_CLUSTER ? "cluster" : "unknown";
}

void fc_redis_stats(const struct fc_redis *r, struct fc_redis_stats *out)
{
	*out = r->stats;
}

size_t fc_redis_nodes(const struct fc_redis *r, struct fc_redis_node_info *out, size_t max)
{
	size_t k = 0;
	unsigned pass, i;

	for (pass = 0; pass < 2; pass++)
		for (i = 0; i < r->nnodes; i++) {
			const struct fc_redis_node *n = r->node[i];

			if (!n->listed || n->primary != (pass == 0))
				continue;
			if (k < max)
				out[k] = (struct fc_redis_node_info){ .primary = n->primary, .slots = n->slots,
								      .replicas = n->replicas, .connects = n->connects,
								      .index = (uint16_t)i,
								      .connected = n->state == FC_NODE_READY };
			if (k < max)
				memcpy(out[k].name, n->name, sizeof(out[k].name));
			k++;
		}
	return k;
}

size_t fc_redis_primary_slots(const struct fc_redis *r, uint16_t *out, size_t max)
{
	bool seen[FC_REDIS_NODES_MAX] = { false };
	size_t k = 0;
	unsigned s;

	for (s = 0; s < FC_REDIS_SLOTS; s++) {
		uint16_t i = r->slot_node[s];

		if (i == FC_REDIS_NO_NODE || seen[i])
			continue;
		seen[i] = true;
		if (k < max)
			out[k] = (uint16_t)s;
		k++;
	}
	return k;
}

unsigned fc_redis_node_of(const struct fc_redis *r, const char *key)
{
	return r->slot_node[fc_redis_slot(key, strlen(key))];
}

unsigned fc_redis_node_of_slot(const struct fc_redis *r, uint16_t slot)
{
	return r->slot_node[slot & (FC_REDIS_SLOTS - 1)];
}

bool fc_redis_ran_before(const struct fc_redis_cmd *a, const struct fc_redis_cmd *b)
{
	return a->status == FC_REDIS_OK && b->status == FC_REDIS_OK && a->st.node == b->st.node &&
	       a->st.tries == 1 && b->st.tries == 1 && !a->st.asking && !b->st.asking && a < b;
}

const struct fc_redis_conf *fc_redis_get_conf(const struct fc_redis *r)
{
	return &r->conf;
}

const char *fc_redis_prefix(const struct fc_redis *r)
{
	return r->conf.prefix;
}
