// SPDX-License-Identifier: BSD-2-Clause
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "fc_redis_conf.h"
#include "fc_redis_reply.h"

#define FC_REDIS_URL_FORM "redis://[user:password@]host[:port]"
#define FC_REDIS_URL_MAX  1024
#define FC_REDIS_URL_SHOW 160 /* a URL as printed: room for a name and a port */

void fc_redis_conf_init(struct fc_redis_conf *c)
{
	*c = (struct fc_redis_conf){ .connect_timeout_ms = FC_REDIS_CONNECT_TIMEOUT_MS,
				     .timeout_ms = FC_REDIS_TIMEOUT_MS, .max_redirects = FC_REDIS_REDIRECTS_MAX };
	snprintf(c->prefix, sizeof(c->prefix), "%s", FC_REDIS_PREFIX_DEFAULT);
}

void fc_redis_conf_wipe(struct fc_redis_conf *c)
{
	explicit_bzero(c->password, sizeof(c->password));
}

/* Where a URL's userinfo is: [*start, *at), at NULL when it has none. The
 * host never holds an '@', a password may: the last '@' ends it. */
static void fc_url_userinfo(const char *url, size_t len, const char **start, const char **at)
{
	const char *s = memmem(url, len, "://", 3);

	*start = s ? s + 3 : url;
	*at = NULL;
	for (s = url + len; s > *start; s--)
		if (s[-1] == '@') {
			*at = s - 1;
			break;
		}
}

/* [url, url + len) as it may be printed. A userinfo without ':' may be a
 * password written where the user goes: all of it is hidden then. */
static void fc_url_show(const char *url, size_t len, char *out, size_t outlen)
{
	const char *start, *at, *colon, *hide;
	size_t o;

	fc_url_userinfo(url, len, &start, &at);
	if (!at) {
		fc_redis_escape(url, len, out, outlen);
		return;
	}
	colon = memchr(start, ':', (size_t)(at - start));
	hide = colon ? colon + 1 : start;
	o = fc_redis_escape(url, (size_t)(hide - url), out, outlen);
	if (o + 4 < outlen) {
		memcpy(out + o, "***", 4);
		fc_redis_escape(at, (size_t)(url + len - at), out + o + 3, outlen - o - 3);
	}
}

void fc_redis_url_redact(const char *url, char *out, size_t outlen)
{
	fc_url_show(url, strlen(url), out, outlen);
}

void fc_redis_addr_format(const struct fc_redis_addr *a, char out[FC_REDIS_ADDR_LEN])
{
	snprintf(out, FC_REDIS_ADDR_LEN, strchr(a->host, ':') ? "[%s]:%u" : "%s:%u", a->host, a->port);
}

static int fc_hex(char c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* [s, s + len) percent-decoded into out (at most outmax bytes, and a NUL);
 * -1 on a bad escape, a NUL or too long. */
static int fc_url_decode(const char *s, size_t len, char *out, size_t outmax)
{
	size_t i, o = 0;

	for (i = 0; i < len; i++) {
		char ch = s[i];

		if (ch == '%') {
			if (i + 2 >= len || fc_hex(s[i + 1]) < 0 || fc_hex(s[i + 2]) < 0)
				return -1;
			ch = (char)(fc_hex(s[i + 1]) << 4 | fc_hex(s[i + 2]));
			i += 2;
		}
		if (!ch || o >= outmax)
			return -1;
		out[o++] = ch;
	}
	out[o] = '\0';
	return 0;
}

/* A host name: letters, digits, '-', '_' and '.'. */
static bool fc_host_name(const char *h, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (!isalnum((unsigned char)h[i]) && h[i] != '-' && h[i] != '.' && h[i] != '_')
			return false;
	return len > 0;
}

/* The credentials a URL names. */
struct fc_url_cred {
	char user[FC_REDIS_USER_MAX + 1];
	char password[FC_REDIS_PASSWORD_MAX + 1];
	bool named; /* a userinfo was there */
};

/* userinfo [start, at): "user:password", ":password" or "user". */
static int fc_url_cred(const char *start, const char *at, struct fc_url_cred *cr, const char *shown,
		       struct fc_err *err)
{
	const char *colon = memchr(start, ':', (size_t)(at - start));

	cr->named = true;
	if (fc_url_decode(start, (size_t)((colon ? colon : at) - start), cr->user, FC_REDIS_USER_MAX) < 0)
		return fc_err_set(err, "\"%s\": the user must be at most %d bytes, a byte given as %%XX a valid one",
				  shown, FC_REDIS_USER_MAX);
	if (colon && fc_url_decode(colon + 1, (size_t)(at - colon - 1), cr->password, FC_REDIS_PASSWORD_MAX) < 0)
		return fc_err_set(err, "\"%s\": the password must be 1 to %d bytes, a byte given as %%XX a valid one "
				       "(%%25 for %%, %%2C for a comma)", shown, FC_REDIS_PASSWORD_MAX);
	if ((colon && !cr->password[0]) || (!colon && !cr->user[0]))
		return fc_err_set(err, "\"%s\": an empty user or password; expected %s", shown, FC_REDIS_URL_FORM);
	return 0;
}

/* [host, end): "name", "1.2.3.4" or "[v6]", then ":port", then "", "/" or "/0". */
static int fc_url_host(const char *host, const char *end, struct fc_redis_addr *a, const char *shown,
		       struct fc_err *err)
{
	const char *rest;
	unsigned long port = FC_REDIS_PORT_DEFAULT;
	unsigned char v6[16];
	size_t hl;

	if (memchr(host, ',', (size_t)(end - host)))
		return fc_err_set(err, "\"%s\": a comma after the host: each URL of a list starts with redis://", shown);
	if (*host == '[') {
		const char *close = memchr(host, ']', (size_t)(end - host));

		if (!close)
			return fc_err_set(err, "\"%s\": an IPv6 address in [ ] has no ]", shown);
		hl = (size_t)(close - host - 1);
		if (hl > FC_REDIS_HOST_MAX)
			return fc_err_set(err, "\"%s\": the host is too long", shown);
		memcpy(a->host, host + 1, hl);
		a->host[hl] = '\0';
		if (inet_pton(AF_INET6, a->host, v6) != 1)
			return fc_err_set(err, "\"%s\": \"%s\" is not an IPv6 address", shown, a->host);
		rest = close + 1;
	} else {
		for (rest = host; rest < end && !strchr(":/?#", *rest); rest++)
			;
		hl = (size_t)(rest - host);
		if (!hl)
			return fc_err_set(err, "\"%s\": no host; expected %s", shown, FC_REDIS_URL_FORM);
		if (hl > FC_REDIS_HOST_MAX)
			return fc_err_set(err, "\"%s\": the host is too long", shown);
		if (!fc_host_name(host, hl))
			return fc_err_set(err, "\"%s\": the host must be a name or an address (an IPv6 address in [ ])",
					  shown);
		memcpy(a->host, host, hl);
		a->host[hl] = '\0';
	}
	if (rest < end && *rest == ':') {
		const char *p;

		port = 0;
		for (p = ++rest; p < end && *p >= '0' && *p <= '9' && port <= 65535; p++)
			port = port * 10 + (unsigned long)(*p - '0');
		if (p == rest || !port || port > 65535 || (p < end && !strchr("/?#", *p)))
			return fc_err_set(err, "\"%s\": port must be 1-65535", shown);
		rest = p;
	}
	if (rest < end && (*rest == '?' || *rest == '#'))
		return fc_err_set(err, "\"%s\": options in the URL are not supported; expected %s", shown,
				  FC_REDIS_URL_FORM);
	if (rest < end && !((end - rest == 1 && *rest == '/') || (end - rest == 2 && !memcmp(rest, "/0", 2))))
		return fc_err_set(err, "\"%s\": a database number is not supported (a Redis Cluster has only "
				       "database 0); expected %s", shown, FC_REDIS_URL_FORM);
	a->port = (uint16_t)port;
	return 0;
}

/* One URL, [url, url + len), into a seed and the credentials it names. */
static int fc_url_parse(const char *url, size_t len, struct fc_redis_addr *a, struct fc_url_cred *cr,
			struct fc_err *err)
{
	char shown[FC_REDIS_URL_SHOW];
	const char *start, *at;

	fc_url_show(url, len, shown, sizeof(shown));
	memset(cr, 0, sizeof(*cr));
	if (len > FC_REDIS_URL_MAX)
		return fc_err_set(err, "\"%s\": longer than %d bytes", shown, FC_REDIS_URL_MAX);
	if (len >= 9 && !memcmp(url, "rediss://", 9))
		return fc_err_set(err, "\"%s\": TLS is not supported (libhiredis 0.14 has none): use redis:// through a "
				       "TLS proxy such as stunnel, or a private network", shown);
	if (len < 8 || memcmp(url, "redis://", 8))
		return fc_err_set(err, "\"%s\": expected %s", shown, FC_REDIS_URL_FORM);
	fc_url_userinfo(url, len, &start, &at);
	if (at && fc_url_cred(start, at, cr, shown, err) < 0)
		return -1;
	return fc_url_host(at ? at + 1 : start, url + len, a, shown, err);
}

/* The end of the URL at s in a list: the next ",redis://" (or
 * ",rediss://"), so that a comma in a password does not split it. */
static const char *fc_url_end(const char *s)
{
	const char *c;

	for (c = strchr(s, ','); c; c = strchr(c + 1, ','))
		if (!strncmp(c + 1, "redis://", 8) || !strncmp(c + 1, "rediss://", 9))
			return c;
	return s + strlen(s);
}

int fc_redis_conf_urls(struct fc_redis_conf *c, const char *list, struct fc_err *err)
{
	struct fc_redis_conf *n = malloc(sizeof(*n));
	struct fc_url_cred cr;
	char shown[FC_REDIS_URL_SHOW];
	const char *p = list, *end;
	bool named = false;
	int rc = -1;

	if (!n)
		return fc_err_set(err, "out of memory");
	*n = *c;
	n->nseeds = 0;
	if (n->password_from == FC_REDIS_PW_URL) {
		explicit_bzero(n->password, sizeof(n->password));
		n->password_from = FC_REDIS_PW_NONE;
	}
	n->user[0] = '\0';
	for (;;) {
		end = fc_url_end(p);
		if (n->nseeds == FC_REDIS_SEEDS_MAX) {
			fc_err_set(err, "more than %d URLs: name a few nodes of the Cluster, not all", FC_REDIS_SEEDS_MAX);
			goto out;
		}
		if (fc_url_parse(p, (size_t)(end - p), &n->seeds[n->nseeds], &cr, err) < 0)
			goto out;
		fc_url_show(p, (size_t)(end - p), shown, sizeof(shown));
		if (cr.named) {
			/* One Redis (or one Cluster) has one user for us. */
			if (named && (strcmp(cr.user, n->user) || strcmp(cr.password, n->password))) {
				fc_err_set(err, "\"%s\": another user or password than the URL before: give the same "
						"credentials to every URL, or only to the first", shown);
				goto out;
			}
			if (cr.password[0] && c->password_from == FC_REDIS_PW_FILE) {
				fc_err_set(err, "\"%s\": a password here and in --redis-password-file: give one", shown);
				goto out;
			}
			named = true;
			memcpy(n->user, cr.user, sizeof(cr.user));
			if (cr.password[0]) {
				memcpy(n->password, cr.password, sizeof(cr.password));
				n->password_from = FC_REDIS_PW_URL;
			}
		}
		n->nseeds++;
		if (!*end)
			break;
		p = end + 1;
	}
	*c = *n;
	rc = 0;
out:
	explicit_bzero(&cr, sizeof(cr));
	explicit_bzero(n, sizeof(*n));
	free(n);
	return rc;
}

int fc_redis_conf_password_file(struct fc_redis_conf *c, const char *path, struct fc_err *err)
{
	char buf[FC_REDIS_PASSWORD_MAX + 3];
	struct stat sb;
	ssize_t n;
	size_t len;
	int fd;

	if (c->password_from == FC_REDIS_PW_URL)
		return fc_err_set(err, "--redis-password-file %s: the URL has a password already: give one", path);
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (fd < 0)
		return fc_err_set(err, "--redis-password-file %s: %s", path, strerror(errno));
	/* Readable by others, or someone else's to change, it is no secret:
	 * refused, as the console's token is. */
	if (fstat(fd, &sb) < 0 || !S_ISREG(sb.st_mode) || sb.st_uid != geteuid() || (sb.st_mode & 077)) {
		close(fd);
		return fc_err_set(err, "--redis-password-file %s: must be a regular file of user %u, mode 0600 or 0400 "
				       "(it is %s, user %u, mode %03o)",
				  path, (unsigned)geteuid(), S_ISREG(sb.st_mode) ? "a file" : "not a file",
				  (unsigned)sb.st_uid, (unsigned)(sb.st_mode & 0777));
	}
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n < 0)
		return fc_err_set(err, "--redis-password-file %s: %s", path, strerror(errno));
	len = (size_t)n;
	buf[len] = '\0';
	if (len && buf[len - 1] == '\n')
		buf[--len] = '\0';
	if (len && buf[len - 1] == '\r')
		buf[--len] = '\0';
	if (!len || len > FC_REDIS_PASSWORD_MAX || strlen(buf) != len || strpbrk(buf, "\r\n")) {
		explicit_bzero(buf, sizeof(buf));
		return fc_err_set(err, "--redis-password-file %s: expected the password on one line, 1 to %d bytes",
				  path, FC_REDIS_PASSWORD_MAX);
	}
	memcpy(c->password, buf, len + 1);
	c->password_from = FC_REDIS_PW_FILE;
	explicit_bzero(buf, sizeof(buf));
	return 0;
}

int fc_redis_conf_prefix(struct fc_redis_conf *c, const char *prefix, struct fc_err *err)
{
	size_t i, len = strlen(prefix);
	char shown[FC_REDIS_URL_SHOW];

	for (i = 0; i < len; i++)
		if (!isgraph((unsigned char)prefix[i]) || prefix[i] == '{' || prefix[i] == '}')
			break;
	if (!len || len > FC_REDIS_PREFIX_MAX || i < len) {
		fc_redis_escape(prefix, len, shown, sizeof(shown));
		return fc_err_set(err, "\"%s\": expected 1 to %d printable characters, no space, { or }", shown,
				  FC_REDIS_PREFIX_MAX);
	}
	memcpy(c->prefix, prefix, len + 1);
	return 0;
}
