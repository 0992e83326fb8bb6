/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * How to reach Redis, from the global options: --redis URL[,URL...]
 * (FREQCTL_REDIS), each URL redis://[user:password@]host[:port]; the
 * password from a file (--redis-password-file) instead of the URL; a key
 * prefix (--redis-prefix) so that several fleets share one Redis. Messages
 * name the URL with its password replaced by "***": a secret is never
 * printed.
 */
#ifndef FC_REDIS_CONF_H
#define FC_REDIS_CONF_H

#include <stdint.h>

#include "fc_error.h"

#define FC_REDIS_SEEDS_MAX       16
#define FC_REDIS_HOST_MAX        255  /* a DNS name's length */
#define FC_REDIS_ADDR_LEN        (FC_REDIS_HOST_MAX + 9) /* "[host]:65535" */
#define FC_REDIS_USER_MAX        128
#define FC_REDIS_PASSWORD_MAX    512
#define FC_REDIS_PREFIX_MAX      64
#define FC_REDIS_PREFIX_DEFAULT  "freqctl:"
#define FC_REDIS_PORT_DEFAULT    6379
#define FC_REDIS_CONNECT_TIMEOUT_MS 100
#define FC_REDIS_TIMEOUT_MS      200
#define FC_REDIS_REDIRECTS_MAX   5

struct fc_redis_addr {
	char host[FC_REDIS_HOST_MAX + 1]; /* a name, an IPv4 or an IPv6 address (no brackets) */
	uint16_t port;
};

struct fc_redis_conf {
	struct fc_redis_addr seeds[FC_REDIS_SEEDS_MAX];
	unsigned nseeds;
	char user[FC_REDIS_USER_MAX + 1];         /* "": AUTH with the password alone */
	char password[FC_REDIS_PASSWORD_MAX + 1]; /* "": no AUTH */
	char prefix[FC_REDIS_PREFIX_MAX + 1];
	unsigned connect_timeout_ms; /* one connection's */
	unsigned timeout_ms;         /* a whole fc_redis_exec or fc_redis_connect */
	unsigned max_redirects;      /* rounds of retries in one call */
	/* Where the password came from: a URL or a file, never both. */
	enum { FC_REDIS_PW_NONE, FC_REDIS_PW_URL, FC_REDIS_PW_FILE } password_from;
};

/* The defaults: no seeds, the default prefix and timeouts. */
void fc_redis_conf_init(struct fc_redis_conf *c);

/* URL[,URL...]: the seeds, and the user and password they name (all
 * URLs that name one name the same). Messages: `"redis://h:99999": port
 * must be 1-65535`. -1 with err, c unchanged. */
int fc_redis_conf_urls(struct fc_redis_conf *c, const char *list, struct fc_err *err);
/* The password from path's first line: the file must be a regular file of
 * this user, readable by no one else (as the console's token). */
int fc_redis_conf_password_file(struct fc_redis_conf *c, const char *path, struct fc_err *err);
/* 1 to 64 printable characters, no space, no { or } (keys' hash tags are
 * the caller's). */
int fc_redis_conf_prefix(struct fc_redis_conf *c, const char *prefix, struct fc_err *err);

/* Overwrites the secrets in c. */
void fc_redis_conf_wipe(struct fc_redis_conf *c);

/* url as it may be printed: its password replaced by "***", its length
 * bounded, bytes that are not printable as \xNN. */
void fc_redis_url_redact(const char *url, char *out, size_t outlen);

/* "host:port", or "[v6]:port". */
void fc_redis_addr_format(const struct fc_redis_addr *a, char out[FC_REDIS_ADDR_LEN]);

#endif /* FC_REDIS_CONF_H */
