// SPDX-License-Identifier: BSD-2-Clause
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include <sys/random.h>
#include <sys/stat.h>

#include "fc_http.h"

struct fc_mhd fc_mhd;
static const char *const fc_mhd_names[] = { FC_MHD_FUNCS(FC_DL_NAME) };
static struct fc_dl fc_mhd_dl = FC_DL_INIT("libmicrohttpd.so.12", fc_mhd_names, fc_mhd);

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

/* ---- the token ---- */

static int fc_token_new(char token[FC_HTTP_TOKEN_LEN + 1], const char *path, struct fc_err *err)
{
	unsigned char raw[FC_HTTP_TOKEN_LEN / 2];
	size_t i;

	if (getrandom(raw, sizeof(raw), 0) != (ssize_t)sizeof(raw))
		return fc_err_set(err, "token %s: no random bytes: %s", path, strerror(errno));
	for (i = 0; i < sizeof(raw); i++)
		snprintf(token + 2 * i, 3, "%02x", raw[i]);
	return 0;
}

/* Writes token to the open fd, whole, on disk. */
static int fc_token_write(int fd, const char *token, const char *path, struct fc_err *err)
{
	if (write(fd, token, FC_HTTP_TOKEN_LEN) != FC_HTTP_TOKEN_LEN || write(fd, "\n", 1) != 1 || fsync(fd) < 0)
		return fc_err_set(err, "token %s: cannot write: %s", path, strerror(errno));
	return 0;
}

int fc_http_token(const char *path, bool create, char token[FC_HTTP_TOKEN_LEN + 1], struct fc_err *err)
{
	struct stat sb;
	ssize_t n;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (fd < 0 && errno == ENOENT && create) {
		if (fc_token_new(token, path, err) < 0)
			return -1;
		fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
		if (fd < 0)
			return fc_err_set(err, "token %s: cannot create: %s", path, strerror(errno));
		if (fc_token_write(fd, token, path, err) < 0) {
			close(fd);
			unlink(path);
			return -1;
		}
		close(fd);
		return 0;
	}
	if (fd < 0)
		return fc_err_set(err, "token %s: %s%s", path, strerror(errno),
				  errno == ENOENT ? " (the agent makes it when started with --http or --metrics)" : "");
	/* Readable by others, or someone else's to change, it is no secret:
	 * refuse rather than serve with it. */
	if (fstat(fd, &sb) < 0 || !S_ISREG(sb.st_mode) || sb.st_uid != geteuid() || (sb.st_mode & 077)) {
		close(fd);
		return fc_err_set(err, "token %s: must be a regular file of user %u, mode 0600 (it is %s, user %u, "
				       "mode %03o)",
				  path, (unsigned)geteuid(), S_ISREG(sb.st_mode) ? "a file" : "not a file",
				  (unsigned)sb.st_uid, (unsigned)(sb.st_mode & 0777));
	}
	n = read(fd, token, FC_HTTP_TOKEN_LEN);
	close(fd);
	token[n > 0 ? n : 0] = '\0';
	if (n != FC_HTTP_TOKEN_LEN || strspn(token, "0123456789abcdef") != FC_HTTP_TOKEN_LEN)
		return fc_err_set(err, "token %s: expected %d hex digits", path, FC_HTTP_TOKEN_LEN);
	return 0;
}

int fc_http_token_rotate(const char *path, char token[FC_HTTP_TOKEN_LEN + 1], struct fc_err *err)
{
	char tmp[PATH_MAX];
	int fd;

	if (fc_http_token(path, false, token, err) < 0) /* the old one must be ours: never clobber another */
		return -1;
	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.XXXXXX", path) >= sizeof(tmp))
		return fc_err_set(err, "token %s: path too long", path);
	if (fc_token_new(token, path, err) < 0)
		return -1;
	fd = mkostemp(tmp, O_CLOEXEC); /* 0600 */
	if (fd < 0)
		return fc_err_set(err, "token %s: cannot create %s: %s", path, tmp, strerror(errno));
	if (fc_token_write(fd, token, tmp, err) < 0 || rename(tmp, path) < 0) {
		if (!err->msg[0] || errno)
			fc_err_set(err, "token %s: cannot replace it: %s", path, strerror(errno));
		close(fd);
		unlink(tmp);
		return -1;
	}
	close(fd);
	return 0;
}

/* The token as the file now says: re-read when the file changed. */
static void fc_http_token_fresh(struct fc_http *h)
{
	char token[FC_HTTP_TOKEN_LEN + 1];
	struct fc_err err;
	struct stat sb;

	if (stat(h->conf->token_file, &sb) < 0 ||
	    (sb.st_dev == h->token_dev && sb.st_ino == h->token_ino && sb.st_mtim.tv_sec == h->token_mtime.tv_sec &&
	     sb.st_mtim.tv_nsec == h->token_mtime.tv_nsec))
		return;
	if (fc_http_token(h->conf->token_file, false, token, &err) < 0) {
		if (h->conf->log)
			h->conf->log("http: keeping the token in use: %s", err.msg);
		return;
	}
	memcpy(h->token, token, sizeof(token));
	h->token_dev = sb.st_dev;
	h->token_ino = sb.st_ino;
	h->token_mtime = sb.st_mtim;
}

/* ---- who is answered ---- */

/* Whether the Host header names this server (see fc_http.h). */
static bool fc_http_host_ok(const struct fc_http *h, const char *host)
{
	char name[256], *colon;
	const char *end;
	unsigned long port;
	unsigned char a[16];
	size_t len;

	if (!host)
		return false;
	if (host[0] == '[') { /* [v6]:port */
		end = strchr(host, ']');
		if (!end)
			return false;
		len = (size_t)(end - host + 1);
		colon = end[1] == ':' ? (char *)end + 1 : NULL;
		if (end[1] && !colon)
			return false;
	} else {
		colon = strchr(host, ':');
		len = colon ? (size_t)(colon - host) : strlen(host);
	}
	if (!len || len >= sizeof(name))
		return false;
	memcpy(name, host, len);
	name[len] = '\0';
	port = colon ? strtoul(colon + 1, &colon, 10) : h->conf->cert_file ? 443 : 80;
	if ((colon && *colon) || port != h->port)
		return false;
	if (!strcmp(name, h->self) || (h->conf->host && !strcasecmp(name, h->conf->host)) ||
	    (h->loopback && !strcasecmp(name, "localhost")))
		return true;
	/* A wildcard bind has no one name: an address literal can not be a
	 * rebound name, so any one is taken. */
	if (!h->wildcard)
		return false;
	if (name[0] == '[') {
		name[len - 1] = '\0';
		return inet_pton(AF_INET6, name + 1, a) == 1;
	}
	return inet_pton(AF_INET, name, a) == 1;
}

unsigned fc_http_admit(struct fc_http *h, struct MHD_Connection *conn, bool token, char *who, size_t wholen)
{
	const char *auth = fc_mhd.MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
	const char *host = fc_mhd.MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_HOST);
	const union MHD_ConnectionInfo *ci = fc_mhd.MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	char peer[INET6_ADDRSTRLEN] = "?";
	unsigned char diff = 0;
	uint32_t tag = 2166136261u;
	size_t i;

	if (ci && ci->client_addr) {
		const struct sockaddr *sa = ci->client_addr;

		inet_ntop(sa->sa_family, sa->sa_family == AF_INET6 ? (const void *)&((const struct sockaddr_in6 *)sa)->sin6_addr :
								       (const void *)&((const struct sockaddr_in *)sa)->sin_addr,
			  peer, sizeof(peer));
	}
	if (who)
		snprintf(who, wholen, "%s", peer);
	if (!fc_http_host_ok(h, host))
		return MHD_HTTP_FORBIDDEN;
	if (!token)
		return 0;
	pthread_mutex_lock(&h->lock);
	fc_http_token_fresh(h);
	/* Constant time: how long a wrong token takes says nothing of the right one. */
	if (!auth || strncmp(auth, "Bearer ", 7) || strlen(auth + 7) != FC_HTTP_TOKEN_LEN) {
		diff = 1;
	} else {
		for (i = 0; i < FC_HTTP_TOKEN_LEN; i++)
			diff |= (unsigned char)(auth[7 + i] ^ h->token[i]);
	}
	for (i = 0; i < FC_HTTP_TOKEN_LEN; i++)
		tag = (tag ^ (unsigned char)h->token[i]) * 16777619u;
	pthread_mutex_unlock(&h->lock);
	if (diff)
		return MHD_HTTP_UNAUTHORIZED;
	/* A tag of the token, never the token: which one a write came with. */
	if (who)
		snprintf(who, wholen, "%s, token #%08x", peer, tag);
	return 0;
}

/* ---- serving ---- */

/* Reads a PEM file whole into memory (NUL-terminated). */
static char *fc_http_pem(const char *path, struct fc_err *err)
{
	FILE *f = fopen(path, "re");
	char *buf = NULL;
	size_t len = 0;
	long n;

	if (!f || fseek(f, 0, SEEK_END) < 0 || (n = ftell(f)) < 0 || n > 1 << 20 || fseek(f, 0, SEEK_SET) < 0 ||
	    !(buf = calloc(1, (size_t)n + 1)) || (len = fread(buf, 1, (size_t)n, f)) != (size_t)n) {
		fc_err_set(err, "%s: %s", path, f ? (buf && len != (size_t)n ? "short read" : strerror(errno)) :
						  strerror(errno));
		free(buf);
		buf = NULL;
	}
	if (f)
		fclose(f);
	return buf;
}

int fc_http_start(struct fc_http *h, const struct sockaddr_storage *sa, const struct fc_http_conf *conf,
		  MHD_AccessHandlerCallback handler, void *cls, MHD_RequestCompletedCallback done, struct fc_err *err)
{
	const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)sa;
	const struct sockaddr_in *s4 = (const struct sockaddr_in *)sa;
	char addr[INET6_ADDRSTRLEN];
	char *cert = NULL, *key = NULL;
	unsigned flags;

	memset(h, 0, sizeof(*h));
	if (fc_dl_load(&fc_mhd_dl, err) < 0)
		return -1;
	h->conf = conf;
	h->port = ntohs(sa->ss_family == AF_INET6 ? s6->sin6_port : s4->sin_port);
	if (sa->ss_family == AF_INET6) {
		inet_ntop(AF_INET6, &s6->sin6_addr, addr, sizeof(addr));
		snprintf(h->self, sizeof(h->self), "[%s]", addr);
		h->loopback = IN6_IS_ADDR_LOOPBACK(&s6->sin6_addr);
		h->wildcard = IN6_IS_ADDR_UNSPECIFIED(&s6->sin6_addr);
	} else {
		inet_ntop(AF_INET, &s4->sin_addr, addr, sizeof(addr));
		snprintf(h->self, sizeof(h->self), "%s", addr);
		h->loopback = (ntohl(s4->sin_addr.s_addr) >> 24) == 127;
		h->wildcard = s4->sin_addr.s_addr == htonl(INADDR_ANY);
	}
	if (!conf->cert_file != !conf->key_file)
		return fc_err_set(err, "--http-cert and --http-key go together");
	if (!conf->cert_file && !h->loopback && !conf->insecure)
		return fc_err_set(err, "%s is not loopback: serve TLS (--http-cert, --http-key), or say --http-insecure "
				       "to send the bearer token in the clear",
				  h->self);
	if (conf->cert_file && fc_mhd.MHD_is_feature_supported(MHD_FEATURE_TLS) != MHD_YES)
		return fc_err_set(err, "this libmicrohttpd has no TLS");
	if (conf->cert_file && (!(cert = fc_http_pem(conf->cert_file, err)) || !(key = fc_http_pem(conf->key_file, err))))
		goto out;
	if (fc_http_token(conf->token_file, true, h->token, err) < 0)
		goto out;
	fc_http_token_fresh(h); /* records the file as read */
	if (fc_http_guard_start(&h->guard, handler, cls, done) < 0) {
		fc_err_set(err, "cannot start a thread: %s", strerror(errno));
		goto out;
	}
	pthread_mutex_init(&h->lock, NULL);
	flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL | (sa->ss_family == AF_INET6 ? MHD_USE_IPv6 : 0) |
		(cert ? MHD_USE_TLS : 0);
	/* The limit per address is the guard's: it makes room for a new
	 * connection rather than refuse it. */
	h->d = fc_mhd.MHD_start_daemon(flags, (uint16_t)h->port, NULL, NULL, fc_http_guard_handle, &h->guard,
				MHD_OPTION_SOCK_ADDR, sa, MHD_OPTION_NOTIFY_CONNECTION, fc_http_guard_notify,
				&h->guard, MHD_OPTION_NOTIFY_COMPLETED, fc_http_guard_completed, &h->guard,
				MHD_OPTION_CONNECTION_LIMIT, (unsigned)FC_HTTP_CONNS, MHD_OPTION_CONNECTION_TIMEOUT,
				(unsigned)FC_HTTP_DEADLINE_S, MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)(128 * 1024),
				cert ? MHD_OPTION_HTTPS_MEM_CERT : MHD_OPTION_END, cert, MHD_OPTION_HTTPS_MEM_KEY, key,
				MHD_OPTION_END);
	if (!h->d) {
		fc_http_guard_stop(&h->guard);
		pthread_mutex_destroy(&h->lock);
		fc_err_set(err, "cannot listen on %s:%u (in use, not an address of this machine, or a bad certificate "
				"or key)",
			   h->self, h->port);
		goto out;
	}
	h->pem[0] = cert; /* kept while the daemon runs: it may refer to them */
	h->pem[1] = key;
	return 0;
out:
	free(cert);
	free(key);
	return -1;
}

void fc_http_stop(struct fc_http *h)
{
	if (!h->d)
		return;
	fc_mhd.MHD_stop_daemon(h->d);
	fc_http_guard_stop(&h->guard);
	h->d = NULL;
	free(h->pem[0]);
	free(h->pem[1]);
	pthread_mutex_destroy(&h->lock);
}

enum MHD_Result fc_http_reply(struct MHD_Connection *conn, unsigned int status, char *body, size_t len,
			      const char *type)
{
	struct MHD_Response *r;
	enum MHD_Result ret;

	if (!body)
		return MHD_NO; /* out of memory: drop the connection */
	r = fc_mhd.MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
	if (!r) {
		free(body);
		return MHD_NO;
	}
	fc_mhd.MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	fc_mhd.MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
	fc_mhd.MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
	if (status == MHD_HTTP_UNAUTHORIZED)
		fc_mhd.MHD_add_response_header(r, MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer realm=\"freqctl\"");
	ret = fc_mhd.MHD_queue_response(conn, status, r);
	fc_mhd.MHD_destroy_response(r);
	return ret;
}

