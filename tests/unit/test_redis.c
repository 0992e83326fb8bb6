// SPDX-License-Identifier: BSD-2-Clause
/*
 * The Redis client's parts that need no server (loader/lib/redis): the
 * URLs, the password file and the prefix; hash slots (against values a
 * real server gave, CLUSTER KEYSLOT); replies read through libhiredis's
 * reader into bounded objects and checked against what a command expects;
 * CLUSTER SLOTS and MOVED/ASK. tests/integration/test_redis.sh runs the
 * client against real servers.
 */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <cmocka.h>

#include "fc_redis.h"
#include "fc_redis_slot.h"

/* ---- URLs ---- */

static void test_urls_accepted(void **state)
{
	struct fc_redis_conf c;
	struct fc_err err;

	(void)state;
	fc_redis_conf_init(&c);
	assert_string_equal(c.prefix, "freqctl:");
	assert_int_equal(c.timeout_ms, 200);
	assert_int_equal(fc_redis_conf_urls(&c, "redis://127.0.0.1:7000", &err), 0);
	assert_int_equal(c.nseeds, 1);
	assert_string_equal(c.seeds[0].host, "127.0.0.1");
	assert_int_equal(c.seeds[0].port, 7000);
	assert_string_equal(c.password, "");

	assert_int_equal(fc_redis_conf_urls(&c, "redis://redis.example", &err), 0);
	assert_string_equal(c.seeds[0].host, "redis.example");
	assert_int_equal(c.seeds[0].port, 6379);
	assert_int_equal(fc_redis_conf_urls(&c, "redis://h:1/", &err), 0);
	assert_int_equal(fc_redis_conf_urls(&c, "redis://h:1/0", &err), 0);

	/* An ACL user; a password with escapes; the last '@' ends it. */
	assert_int_equal(fc_redis_conf_urls(&c, "redis://fleet:pa%3As%25s@h:1", &err), 0);
	assert_string_equal(c.user, "fleet");
	assert_string_equal(c.password, "pa:s%s");
	assert_int_equal(fc_redis_conf_urls(&c, "redis://u:p@ss/x@h:2", &err), 0);
	assert_string_equal(c.password, "p@ss/x");
	assert_string_equal(c.seeds[0].host, "h");
	/* The password alone: the default user. */
	assert_int_equal(fc_redis_conf_urls(&c, "redis://:only@h", &err), 0);
	assert_string_equal(c.user, "");
	assert_string_equal(c.password, "only");
	/* Parsed again, the URLs' credentials are the new ones. */
	assert_int_equal(fc_redis_conf_urls(&c, "redis://h", &err), 0);
	assert_string_equal(c.password, "");

	assert_int_equal(fc_redis_conf_urls(&c, "redis://[::1]:7001", &err), 0);
	assert_string_equal(c.seeds[0].host, "::1");
	assert_int_equal(c.seeds[0].port, 7001);

	/* Seeds, the credentials once; a comma inside a password stays there. */
	assert_int_equal(fc_redis_conf_urls(&c, "redis://u:p@a:1,redis://b:2,redis://u:p@c:3", &err), 0);
	assert_int_equal(c.nseeds, 3);
	assert_string_equal(c.seeds[2].host, "c");
	assert_string_equal(c.user, "u");
	assert_int_equal(fc_redis_conf_urls(&c, "redis://u:pa,ss@h:1", &err), 0);
	assert_int_equal(c.nseeds, 1);
	assert_string_equal(c.password, "pa,ss");
}

static void test_urls_refused(void **state)
{
	static const struct {
		const char *in, *msg;
	} cases[] = {
		{ "redis://h:99999", "\"redis://h:99999\": port must be 1-65535" },
		{ "redis://h:0", "\"redis://h:0\": port must be 1-65535" },
		{ "redis://h:", "\"redis://h:\": port must be 1-65535" },
		{ "redis://h:12a", "\"redis://h:12a\": port must be 1-65535" },
		{ "redis://h:-1", "\"redis://h:-1\": port must be 1-65535" },
		{ "http://h:1", "\"http://h:1\": expected redis://[user:password@]host[:port]" },
		{ "h:6379", "\"h:6379\": expected redis://[user:password@]host[:port]" },
		{ "", "\"\": expected redis://[user:password@]host[:port]" },
		{ "rediss://h:1", "\"rediss://h:1\": TLS is not supported (libhiredis 0.14 has none): use redis:// through a "
				  "TLS proxy such as stunnel, or a private network" },
		{ "redis://h:1/3", "\"redis://h:1/3\": a database number is not supported (a Redis Cluster has only database "
				   "0); expected redis://[user:password@]host[:port]" },
		{ "redis://h:1?timeout=1", "\"redis://h:1?timeout=1\": options in the URL are not supported; expected "
					   "redis://[user:password@]host[:port]" },
		{ "redis://", "\"redis://\": no host; expected redis://[user:password@]host[:port]" },
		{ "redis://u:secret@", "\"redis://u:***@\": no host; expected redis://[user:password@]host[:port]" },
		{ "redis://[::1:7000", "\"redis://[::1:7000\": an IPv6 address in [ ] has no ]" },
		{ "redis://[zz]:1", "\"redis://[zz]:1\": \"zz\" is not an IPv6 address" },
		{ "redis://::1:7000", "\"redis://::1:7000\": no host; expected redis://[user:password@]host[:port]" },
		{ "redis://h h:1", "\"redis://h h:1\": the host must be a name or an address (an IPv6 address in [ ])" },
		{ "redis://a:1,b:2", "\"redis://a:1,b:2\": a comma after the host: each URL of a list starts with redis://" },
		{ "redis://a:1,", "\"redis://a:1,\": a comma after the host: each URL of a list starts with redis://" },
		{ "redis://u:p%zz@h", "\"redis://u:***@h\": the password must be 1 to 512 bytes, a byte given as %XX a valid "
				      "one (%25 for %, %2C for a comma)" },
		{ "redis://u:p%00@h", "\"redis://u:***@h\": the password must be 1 to 512 bytes, a byte given as %XX a valid "
				      "one (%25 for %, %2C for a comma)" },
		{ "redis://u:@h", "\"redis://u:***@h\": an empty user or password; expected redis://[user:password@]host[:port]" },
		{ "redis://@h", "\"redis://***@h\": an empty user or password; expected redis://[user:password@]host[:port]" },
		{ "redis://u:p@a:1,redis://v:p@b:2", "\"redis://v:***@b:2\": another user or password than the URL before: "
						     "give the same credentials to every URL, or only to the first" },
		{ "redis://u:p@a:1,redis://u:q@b:2", "\"redis://u:***@b:2\": another user or password than the URL before: "
						     "give the same credentials to every URL, or only to the first" },
		{ "redis://h\x01:1", "\"redis://h\\x01:1\": the host must be a name or an address (an IPv6 address in [ ])" },
	};
	struct fc_redis_conf c, before;
	struct fc_err err;
	char many[512] = "";
	size_t i;

	(void)state;
	fc_redis_conf_init(&c);
	assert_int_equal(fc_redis_conf_urls(&c, "redis://keep:me@k:1", &err), 0);
	before = c;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		if (fc_redis_conf_urls(&c, cases[i].in, &err) == 0)
			fail_msg("\"%s\": accepted", cases[i].in);
		if (strcmp(err.msg, cases[i].msg))
			fail_msg("\"%s\":\n  got  %s\n  want %s", cases[i].in, err.msg, cases[i].msg);
		assert_memory_equal(&c, &before, sizeof(c)); /* refused: nothing changed */
	}
	for (i = 0; i < 17; i++)
		snprintf(many + strlen(many), sizeof(many) - strlen(many), "%sredis://n%zu", i ? "," : "", i);
	assert_int_equal(fc_redis_conf_urls(&c, many, &err), -1);
	assert_string_equal(err.msg, "more than 16 URLs: name a few nodes of the Cluster, not all");
}

static void test_redact(void **state)
{
	static const struct {
		const char *in, *out;
	} cases[] = {
		{ "redis://u:secret@h:1", "redis://u:***@h:1" },
		{ "redis://:secret@h", "redis://:***@h" },
		{ "redis://secret@h", "redis://***@h" },
		{ "redis://u:p@ss@h", "redis://u:***@h" },
		{ "redis://h:1", "redis://h:1" },
		{ "u:secret@h", "u:***@h" },
		{ "redis://h\"\\\n", "redis://h\\x22\\x5c\\x0a" },
	};
	char out[64], small[12];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		fc_redis_url_redact(cases[i].in, out, sizeof(out));
		assert_string_equal(out, cases[i].out);
	}
	/* Cut to fit, never past the end, never the password. */
	fc_redis_url_redact("redis://u:secret@a-long-host-name:6379", small, sizeof(small));
	assert_string_equal(small, "redis://...");
	fc_redis_url_redact("redis://u:secret@h", out, 14);
	assert_null(strstr(out, "sec"));
}

/* ---- the password file, the prefix ---- */

static char *pw_file(const char *text, mode_t mode)
{
	static char path[64];
	int fd;

	snprintf(path, sizeof(path), "/tmp/fc-test-redis-pw-XXXXXX");
	fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	assert_int_equal(chmod(path, mode), 0);
	return path;
}

static void test_password_file(void **state)
{
	struct fc_redis_conf c;
	struct fc_err err;
	char want[256], link[80];
	char *path;

	(void)state;
	fc_redis_conf_init(&c);
	path = pw_file("s3cret\n", 0600);
	assert_int_equal(fc_redis_conf_password_file(&c, path, &err), 0);
	assert_string_equal(c.password, "s3cret");
	unlink(path);
	path = pw_file("s3cret\r\n", 0400);
	assert_int_equal(fc_redis_conf_password_file(&c, path, &err), 0);
	assert_string_equal(c.password, "s3cret");
	/* Given in the file, a password in a URL too is refused. */
	assert_int_equal(fc_redis_conf_urls(&c, "redis://u:p@h", &err), -1);
	assert_string_equal(err.msg, "\"redis://u:***@h\": a password here and in --redis-password-file: give one");
	assert_int_equal(fc_redis_conf_urls(&c, "redis://u@h", &err), 0);
	assert_string_equal(c.password, "s3cret");
	unlink(path);

	path = pw_file("s3cret\n", 0640);
	fc_redis_conf_init(&c);
	assert_int_equal(fc_redis_conf_password_file(&c, path, &err), -1);
	snprintf(want, sizeof(want),
		 "--redis-password-file %s: must be a regular file of user %u, mode 0600 or 0400 (it is a file, user %u, "
		 "mode 640)", path, (unsigned)geteuid(), (unsigned)geteuid());
	assert_string_equal(err.msg, want);
	assert_string_equal(c.password, "");
	/* A link to it: not followed. */
	chmod(path, 0600);
	snprintf(link, sizeof(link), "%s.link", path);
	assert_int_equal(symlink(path, link), 0);
	assert_int_equal(fc_redis_conf_password_file(&c, link, &err), -1);
	assert_non_null(strstr(err.msg, "Too many levels of symbolic links"));
	unlink(link);
	unlink(path);

	path = pw_file("", 0600);
	assert_int_equal(fc_redis_conf_password_file(&c, path, &err), -1);
	assert_non_null(strstr(err.msg, ": expected the password on one line, 1 to 512 bytes"));
	unlink(path);
	path = pw_file("two\nlines\n", 0600);
	assert_int_equal(fc_redis_conf_password_file(&c, path, &err), -1);
	assert_non_null(strstr(err.msg, ": expected the password on one line, 1 to 512 bytes"));
	unlink(path);
	assert_int_equal(fc_redis_conf_password_file(&c, "/nonexistent/pw", &err), -1);
	assert_string_equal(err.msg, "--redis-password-file /nonexistent/pw: No such file or directory");
	assert_int_equal(fc_redis_conf_password_file(&c, "/tmp", &err), -1);
	assert_non_null(strstr(err.msg, "(it is not a file"));

	/* A password in the URL first: the file is refused. */
	fc_redis_conf_init(&c);
	assert_int_equal(fc_redis_conf_urls(&c, "redis://:p@h", &err), 0);
	assert_int_equal(fc_redis_conf_password_file(&c, "/nonexistent/pw", &err), -1);
	assert_string_equal(err.msg, "--redis-password-file /nonexistent/pw: the URL has a password already: give one");
}

static void test_prefix(void **state)
{
	struct fc_redis_conf c;
	struct fc_err err;

	(void)state;
	fc_redis_conf_init(&c);
	assert_int_equal(fc_redis_conf_prefix(&c, "fleet-a:", &err), 0);
	assert_string_equal(c.prefix, "fleet-a:");
	assert_int_equal(fc_redis_conf_prefix(&c, "", &err), -1);
	assert_string_equal(err.msg, "\"\": expected 1 to 64 printable characters, no space, { or }");
	assert_int_equal(fc_redis_conf_prefix(&c, "a{b}", &err), -1);
	assert_string_equal(err.msg, "\"a{b}\": expected 1 to 64 printable characters, no space, { or }");
	assert_int_equal(fc_redis_conf_prefix(&c, "a b", &err), -1);
	assert_int_equal(fc_redis_conf_prefix(&c, "0123456789012345678901234567890123456789012345678901234567890123x", &err),
			 -1);
	assert_string_equal(c.prefix, "fleet-a:");
}

/* ---- slots ---- */

static void test_slots(void **state)
{
	/* CLUSTER KEYSLOT of a Redis 7.0 server, and the spec's hash tags. */
	static const struct {
		const char *key;
		unsigned slot;
	} known[] = {
		{ "foo", 12182 },
		{ "bar", 5061 },
		{ "{user1000}.following", 3443 },
		{ "{user1000}.followers", 3443 },
		{ "foo{}{bar}", 8363 },    /* an empty tag: the whole key */
		{ "foo{{bar}}zap", 4015 }, /* the tag is "{bar" */
		{ "foo{bar}{zap}", 5061 }, /* the first tag: "bar" */
		{ "123456789", 12739 },
		{ "", 0 },
		{ "{", 4092 },
		{ "}{", 12793 },
		{ "{}", 15257 },
		{ "a{b}c", 3300 },
		{ "a{b", 13340 },
	};
	size_t i;

	(void)state;
	assert_int_equal(fc_redis_crc16("123456789", 9), 0x31c3); /* CRC16/XMODEM's check value */
	for (i = 0; i < sizeof(known) / sizeof(known[0]); i++)
		if (fc_redis_slot(known[i].key, strlen(known[i].key)) != known[i].slot)
			fail_msg("\"%s\": slot %u, the server says %u", known[i].key,
				 fc_redis_slot(known[i].key, strlen(known[i].key)), known[i].slot);
	/* Bytes, not strings: a NUL is part of the key. */
	assert_int_equal(fc_redis_slot("a\0b", 3), 8383);
}

/* ---- replies ---- */

/* The first reply of bytes, or NULL with err. */
static struct fc_redis_reply *parse(const char *bytes, size_t len, struct fc_err *err)
{
	struct fc_redis_reader rd;
	struct fc_redis_reply *r = NULL;

	if (fc_redis_reader_init(&rd, err) < 0)
		fail_msg("%s", err->msg);
	if (fc_redis_reader_feed(&rd, bytes, len, err) == 0)
		fc_redis_reader_next(&rd, &r, err);
	fc_redis_reader_free(&rd);
	return r;
}

#define PARSE(s, err) parse((s), sizeof(s) - 1, (err))

static void check_is(const char *bytes, struct fc_redis_want w, const char *msg)
{
	struct fc_err err;
	struct fc_redis_reply *r = parse(bytes, strlen(bytes), &err);

	if (!r)
		fail_msg("\"%s\" does not parse: %s", bytes, err.msg);
	if (!msg) {
		if (fc_redis_reply_check(r, &w, &err) < 0)
			fail_msg("\"%s\": refused: %s", bytes, err.msg);
	} else {
		assert_int_equal(fc_redis_reply_check(r, &w, &err), -1);
		if (strcmp(err.msg, msg))
			fail_msg("\"%s\":\n  got  %s\n  want %s", bytes, err.msg, msg);
	}
	fc_redis_reply_free(r);
}

static void test_reply_check(void **state)
{
	struct fc_redis_want small = { .types = FC_REDIS_INT, .ranged = true, .imin = 0, .imax = 10 };
	struct fc_redis_want some = { .types = FC_REDIS_ARRAY, .elem_types = FC_REDIS_INT | FC_REDIS_STR,
				      .min_n = 1, .max_n = 3, .max_len = 4 };

	(void)state;
	check_is(":42\r\n", FC_REDIS_WANT_INT, NULL);
	check_is(":42\r\n", FC_REDIS_WANT_STR(8), "expected a bulk string or nil, got an integer (42)");
	check_is(":42\r\n", small, "expected an integer from 0 to 10, got 42");
	check_is(":-1\r\n", small, "expected an integer from 0 to 10, got -1");
	check_is(":10\r\n", small, NULL);
	check_is("+OK\r\n", FC_REDIS_WANT_OK, NULL);
	check_is("+QUEUED\r\n", FC_REDIS_WANT_OK, "expected the status \"OK\", got a status (\"QUEUED\")");
	check_is("$-1\r\n", FC_REDIS_WANT_STR(8), NULL);
	check_is("$-1\r\n", FC_REDIS_WANT_INT, "expected an integer, got nil");
	check_is("*-1\r\n", FC_REDIS_WANT_INTS(2), "expected an array, got nil");
	check_is("$9\r\n123456789\r\n", FC_REDIS_WANT_STR(8),
		 "expected a string of at most 8 bytes, got a bulk string of 9 bytes (\"123456789\")");
	check_is("$3\r\na\x01\"\r\n", FC_REDIS_WANT_INT, "expected an integer, got a bulk string of 3 bytes (\"a\\x01\\x22\")");
	check_is("*3\r\n:1\r\n:2\r\n:3\r\n", FC_REDIS_WANT_INTS(3), NULL);
	check_is("*3\r\n:1\r\n:2\r\n:3\r\n", FC_REDIS_WANT_INTS(2), "expected an array of 2 integers, got an array of 3");
	check_is("*0\r\n", FC_REDIS_WANT_INTS(2), "expected an array of 2 integers, got an array of 0");
	check_is("*2\r\n:1\r\n*0\r\n", FC_REDIS_WANT_INTS(2), "element 2: expected an integer, got an array of 0");
	check_is("*2\r\n:1\r\n-ERR no\r\n", FC_REDIS_WANT_INTS(2), "element 2: expected an integer, got an error (\"ERR no\")");
	check_is("*2\r\n:1\r\n$2\r\nab\r\n", some, NULL);
	check_is("*2\r\n:1\r\n$5\r\nabcde\r\n", some,
		 "element 2: expected a string of at most 4 bytes, got a bulk string of 5 bytes (\"abcde\")");
	check_is("*4\r\n:1\r\n:1\r\n:1\r\n:1\r\n", some, "expected an array of 1 to 3 integers or bulk strings, got an array of 4");
	check_is("-ERR x\r\n", FC_REDIS_WANT_INT, "expected an integer, got an error (\"ERR x\")");
}

/* The reader's bounds: the reply refused while it is read, the reader
 * unusable after, nothing crashes. */
static void test_reader_bounds(void **state)
{
	static const char nest[] = "*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n:1\r\n";
	struct fc_redis_reader rd;
	struct fc_redis_reply *r;
	struct fc_err err;
	char *big;
	size_t i;

	(void)state;
	assert_null(PARSE("*70000\r\n", &err));
	assert_string_equal(err.msg, "an array of 70000 elements (at most 65536)");
	assert_null(PARSE("*-2\r\n", &err));
	assert_null(PARSE(nest, &err));
	assert_non_null(strstr(err.msg, "nested multi bulk"));
	assert_null(PARSE("!x\r\n", &err));
	assert_string_equal(err.msg, "Protocol error, got \"!\" as reply type byte");
	assert_null(PARSE(":99999999999999999999\r\n", &err));
	assert_string_equal(err.msg, "Bad integer value");

	/* A string announced huge: refused once 8 MiB of it are buffered. */
	assert_int_equal(fc_redis_reader_init(&rd, &err), 0);
	assert_int_equal(fc_redis_reader_feed(&rd, "$100000000\r\n", 12, &err), 0);
	big = calloc(1, 1 << 20);
	assert_non_null(big);
	for (i = 0; i < 16; i++) {
		assert_int_equal(fc_redis_reader_feed(&rd, big, 1 << 20, &err), 0);
		if (fc_redis_reader_next(&rd, &r, &err) < 0)
			break;
		assert_null(r);
	}
	assert_int_equal(i, 7); /* the eighth MiB, with the header, is past the bound */
	assert_string_equal(err.msg, "a reply of more than 8388608 bytes");
	fc_redis_reader_free(&rd);

	/* Many small objects: refused by their cost, while being made. */
	assert_int_equal(fc_redis_reader_init(&rd, &err), 0);
	assert_int_equal(fc_redis_reader_feed(&rd, "*65536\r\n", 8, &err), 0);
	for (i = 0; i < 65536 && fc_redis_reader_next(&rd, &r, &err) == 0; i++) {
		char el[200];

		memset(el, 'z', sizeof(el));
		memcpy(el, "$190\r\n", 6);
		memcpy(el + 196, "\r\n", 2);
		if (fc_redis_reader_feed(&rd, el, 198, &err) < 0)
			break;
		assert_null(r);
	}
	assert_true(i < 65536);
	assert_string_equal(err.msg, "a reply of more than 8388608 bytes");
	fc_redis_reader_free(&rd);
	free(big);
}

/* A reply fed a byte at a time is the same reply. */
static void test_reader_bytewise(void **state)
{
	static const char bytes[] = "*3\r\n:7\r\n$5\r\nhello\r\n*2\r\n$-1\r\n+OK\r\n:8\r\n";
	struct fc_redis_reader rd;
	struct fc_redis_reply *r = NULL, *second = NULL;
	struct fc_err err;
	size_t i;

	(void)state;
	assert_int_equal(fc_redis_reader_init(&rd, &err), 0);
	for (i = 0; i < sizeof(bytes) - 1; i++) {
		assert_int_equal(fc_redis_reader_feed(&rd, bytes + i, 1, &err), 0);
		assert_int_equal(fc_redis_reader_next(&rd, r ? &second : &r, &err), 0);
	}
	assert_non_null(r);
	assert_int_equal(r->type, FC_REDIS_ARRAY);
	assert_int_equal(r->len, 3);
	assert_int_equal(r->elem[0]->integer, 7);
	assert_string_equal(r->elem[1]->str, "hello");
	assert_int_equal(r->elem[2]->elem[0]->type, FC_REDIS_NIL);
	assert_int_equal(r->elem[2]->elem[1]->type, FC_REDIS_STATUS);
	assert_non_null(second);
	assert_int_equal(second->integer, 8);
	fc_redis_reply_free(r);
	fc_redis_reply_free(second);
	fc_redis_reader_free(&rd);
}

static void test_escape(void **state)
{
	char out[16];

	(void)state;
	assert_int_equal(fc_redis_escape("abc", 3, out, sizeof(out)), 3);
	assert_string_equal(out, "abc");
	fc_redis_escape("a\"b\\c\x7f", 6, out, sizeof(out));
	assert_string_equal(out, "a\\x22b\\x5cc\\x7f");
	fc_redis_escape("0123456789abcdefghij", 20, out, sizeof(out));
	assert_string_equal(out, "0123456789ab...");
	fc_redis_escape("\x01\x02\x03\x04", 4, out, 12);
	assert_string_equal(out, "\\x01\\x02...");
}

/* ---- the Cluster's replies ---- */

static void test_redirect(void **state)
{
	struct fc_redis_redirect to;
	struct fc_err err;

	(void)state;
	assert_int_equal(fc_redis_redirect_parse("MOVED 3999 127.0.0.1:6381", 25, &to, &err), 1);
	assert_false(to.ask);
	assert_int_equal(to.slot, 3999);
	assert_string_equal(to.to.host, "127.0.0.1");
	assert_int_equal(to.to.port, 6381);
	assert_int_equal(fc_redis_redirect_parse("ASK 0 ::1:7000", 14, &to, &err), 1);
	assert_true(to.ask);
	assert_string_equal(to.to.host, "::1");
	assert_int_equal(fc_redis_redirect_parse("MOVED 16383 :6380", 17, &to, &err), 1);
	assert_string_equal(to.to.host, ""); /* the node that answered */
	assert_int_equal(to.slot, 16383);
	assert_int_equal(fc_redis_redirect_parse("MOVED 1 redis-3.example:6380", 28, &to, &err), 1);
	assert_int_equal(fc_redis_redirect_parse("ERR unknown", 11, &to, &err), 0);
	assert_int_equal(fc_redis_redirect_parse("MOVEDX 1 h:1", 12, &to, &err), 0);
	assert_int_equal(fc_redis_redirect_parse("MOVED 16384 h:1", 15, &to, &err), -1);
	assert_string_equal(err.msg, "\"MOVED 16384 h:1\": expected a slot from 0 to 16383");
	assert_int_equal(fc_redis_redirect_parse("MOVED -1 h:1", 12, &to, &err), -1);
	assert_int_equal(fc_redis_redirect_parse("MOVED 1", 7, &to, &err), -1);
	assert_int_equal(fc_redis_redirect_parse("MOVED 1 h", 9, &to, &err), -1);
	assert_string_equal(err.msg, "\"MOVED 1 h\": expected HOST:PORT after the slot");
	assert_int_equal(fc_redis_redirect_parse("ASK 1 h:0", 9, &to, &err), -1);
	assert_string_equal(err.msg, "\"ASK 1 h:0\": port must be 1-65535");
	assert_int_equal(fc_redis_redirect_parse("ASK 1 h:65536", 13, &to, &err), -1);
	assert_int_equal(fc_redis_redirect_parse("ASK 1 a b:1", 11, &to, &err), -1);
	assert_string_equal(err.msg, "\"ASK 1 a b:1\": the host is not a name or an address");
}

static void map_of(const char *bytes, struct fc_redis_map *m, int want_rc, const char *msg)
{
	struct fc_redis_addr asked = { .host = "10.0.0.9", .port = 7000 };
	struct fc_err err;
	struct fc_redis_reply *r = parse(bytes, strlen(bytes), &err);

	if (!r)
		fail_msg("does not parse: %s", err.msg);
	assert_int_equal(fc_redis_map_parse(r, &asked, m, &err), want_rc);
	if (msg && strcmp(err.msg, msg))
		fail_msg("got  %s\nwant %s", err.msg, msg);
	fc_redis_reply_free(r);
}

static void test_map(void **state)
{
	struct fc_redis_map *m = malloc(sizeof(*m));

	(void)state;
	assert_non_null(m);
	/* Two ranges of one primary (with its replica and Redis 7's id and
	 * metadata), one of another whose endpoint is NULL (the one asked),
	 * slots 200-299 of a primary whose endpoint is unknown. */
	map_of("*4\r\n"
	       "*4\r\n:0\r\n:99\r\n*4\r\n$8\r\n10.0.0.1\r\n:7000\r\n$2\r\nid\r\n*0\r\n*3\r\n$8\r\n10.0.0.4\r\n:7000\r\n$2\r\nid\r\n"
	       "*3\r\n:100\r\n:199\r\n*2\r\n$-1\r\n:7001\r\n"
	       "*3\r\n:200\r\n:299\r\n*2\r\n$1\r\n?\r\n:7002\r\n"
	       "*3\r\n:300\r\n:16383\r\n*2\r\n$8\r\n10.0.0.1\r\n:7000\r\n",
	       m, 0, NULL);
	assert_int_equal(m->nshards, 2);
	assert_string_equal(m->shard[0].primary.host, "10.0.0.1");
	assert_int_equal(m->shard[0].nslots, 100 + 16084);
	assert_int_equal(m->shard[0].nreplicas, 1);
	assert_string_equal(m->shard[0].replicas[0].host, "10.0.0.4");
	assert_string_equal(m->shard[1].primary.host, "10.0.0.9");
	assert_int_equal(m->shard[1].primary.port, 7001);
	assert_int_equal(m->slot[0], 0);
	assert_int_equal(m->slot[150], 1);
	assert_int_equal(m->slot[250], FC_REDIS_NO_SHARD);
	assert_int_equal(m->slot[16383], 0);

	map_of("*0\r\n", m, 0, NULL); /* a Cluster with no slots yet */
	assert_int_equal(m->nshards, 0);
	assert_int_equal(m->slot[5], FC_REDIS_NO_SHARD);

	map_of("*2\r\n*3\r\n:0\r\n:10\r\n*2\r\n$1\r\na\r\n:1\r\n*3\r\n:10\r\n:20\r\n*2\r\n$1\r\nb\r\n:1\r\n", m, -1,
	       "CLUSTER SLOTS: range 2: slot 10 is in two ranges");
	map_of("*1\r\n*3\r\n:5\r\n:4\r\n*2\r\n$1\r\na\r\n:1\r\n", m, -1,
	       "CLUSTER SLOTS: range 1: the range 5-4 is not within 0-16383");
	map_of("*1\r\n*3\r\n:0\r\n:16384\r\n*2\r\n$1\r\na\r\n:1\r\n", m, -1,
	       "CLUSTER SLOTS: range 1: the range 0-16384 is not within 0-16383");
	map_of("*1\r\n*3\r\n:0\r\n:1\r\n*2\r\n$1\r\na\r\n:0\r\n", m, -1,
	       "CLUSTER SLOTS: range 1: a node's port is not a number from 1 to 65535");
	map_of("*1\r\n*3\r\n:0\r\n:1\r\n*2\r\n:1\r\n:1\r\n", m, -1,
	       "CLUSTER SLOTS: range 1: a node's endpoint is not a string");
	map_of("*1\r\n*3\r\n:0\r\n:1\r\n*2\r\n$3\r\na b\r\n:1\r\n", m, -1,
	       "CLUSTER SLOTS: range 1: a node's endpoint is not a name or an address");
	map_of("*1\r\n*2\r\n:0\r\n:1\r\n", m, -1,
	       "CLUSTER SLOTS: range 1: a range is not an array [start, end, primary, replica...]");
	map_of("*1\r\n*3\r\n$1\r\n0\r\n:1\r\n*2\r\n$1\r\na\r\n:1\r\n", m, -1,
	       "CLUSTER SLOTS: range 1: a range's start and end are not integers");
	map_of("*1\r\n*3\r\n:0\r\n:1\r\n*1\r\n$1\r\na\r\n", m, -1,
	       "CLUSTER SLOTS: range 1: a node is not an array [endpoint, port, ...]");
	map_of(":1\r\n", m, -1, "CLUSTER SLOTS: expected an array of ranges");
	free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_urls_accepted), cmocka_unit_test(test_urls_refused),
		cmocka_unit_test(test_redact),        cmocka_unit_test(test_password_file),
		cmocka_unit_test(test_prefix),        cmocka_unit_test(test_slots),
		cmocka_unit_test(test_reply_check),   cmocka_unit_test(test_reader_bounds),
		cmocka_unit_test(test_reader_bytewise), cmocka_unit_test(test_escape),
		cmocka_unit_test(test_redirect),      cmocka_unit_test(test_map),
	};

	if (getenv("FC_TEST"))
		cmocka_set_test_filter(getenv("FC_TEST"));
	return cmocka_run_group_tests_name("Redis client (URLs, slots, replies)", tests, NULL, NULL);
}
