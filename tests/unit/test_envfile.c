// SPDX-License-Identifier: BSD-2-Clause
/* The configuration file's syntax (loader/lib/fc_envfile.h): every accepted
 * form, read as a POSIX shell that sources the file reads it too, and every
 * refused one with its message. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <unistd.h>
#include <cmocka.h>

#include "fc_envfile.h"
#include "fc_test.h"

static const struct {
	const char *line, *key, *value;
} fc_good[] = {
	{ "FREQCTL_DB=/var/lib/freqctl/freqctl.db", "FREQCTL_DB", "/var/lib/freqctl/freqctl.db" },
	{ "FREQCTL_DB=postgresql://freqctl@db.example:5432/freqctl?sslmode=require", "FREQCTL_DB",
	  "postgresql://freqctl@db.example:5432/freqctl?sslmode=require" },
	{ "  FREQCTL_NODE=web1  ", "FREQCTL_NODE", "web1" },
	{ "\tFREQCTL_NODE=web1\t", "FREQCTL_NODE", "web1" },
	{ "FREQCTL_SHM=", "FREQCTL_SHM", "" },
	{ "FREQCTL_SHM=''", "FREQCTL_SHM", "" },
	{ "FREQCTL_SHM=\"\"", "FREQCTL_SHM", "" },
	{ "FREQCTL_REDIS='redis://u:p$a\"ss w;rd@h:6379'", "FREQCTL_REDIS", "redis://u:p$a\"ss w;rd@h:6379" },
	{ "FREQCTL_REDIS=\"redis://u:it's a pass#@h\"", "FREQCTL_REDIS", "redis://u:it's a pass#@h" },
	{ "FREQCTL_NODE=a#b", "FREQCTL_NODE", "a#b" },
	{ "FREQCTL_NODE=#b", "FREQCTL_NODE", "#b" },
	{ "_X1=a=b,c:d@e+f%g!h*i?j[k]{l}^m", "_X1", "a=b,c:d@e+f%g!h*i?j[k]{l}^m" },
	{ "PGPASSFILE='/etc/freqctl/pgpass' ", "PGPASSFILE", "/etc/freqctl/pgpass" },
};

static const struct {
	const char *text, *msg;
} fc_bad[] = {
	{ "FREQCTL_DB = /x", "f:1: a space before '=': write KEY=VALUE" },
	{ "FREQCTL_DB= /x", "f:1: a space after '=': write KEY=VALUE, quoting a value that starts with a space" },
	{ "FREQCTL_DB=/x y",
	  "f:1: text after the value: a comment goes on a line of its own, a value with spaces in quotes" },
	{ "FREQCTL_DB=/x # the store",
	  "f:1: text after the value: a comment goes on a line of its own, a value with spaces in quotes" },
	{ "FREQCTL_DB='/x'y", "f:1: text after the closing quote" },
	{ "FREQCTL_DB=\"/x\" # c", "f:1: text after the closing quote" },
	{ "FREQCTL_DB='/x", "f:1: a quote that is not closed on its line" },
	{ "FREQCTL_DB=\"/x\ny\"", "f:1: a quote that is not closed on its line" },
	{ "FREQCTL_DB=/x\\\n/y",
	  "f:1: a backslash: systemd and a shell read it differently; write the value plain or in single quotes" },
	{ "FREQCTL_DB=\"/x\\\"y\"",
	  "f:1: a backslash: systemd and a shell read it differently; write the value plain or in single quotes" },
	{ "FREQCTL_DB=$HOME/x", "f:1: a character a shell reads as syntax in a value that is not quoted: quote it" },
	{ "FREQCTL_DB=\"$HOME/x\"", "f:1: a $ or ` in double quotes, which a shell expands: use single quotes" },
	{ "FREQCTL_DB=~/x", "f:1: a character a shell reads as syntax in a value that is not quoted: quote it" },
	{ "FREQCTL_DB=a;b", "f:1: a character a shell reads as syntax in a value that is not quoted: quote it" },
	{ "FREQCTL_DB=a\"b\"", "f:1: a character a shell reads as syntax in a value that is not quoted: quote it" },
	{ "export FREQCTL_DB=/x", "f:1: \"export\": systemd does not read it; write KEY=VALUE" },
	{ "FREQCTL_DB", "f:1: expected KEY=VALUE, KEY of letters, digits and _, not starting with a digit" },
	{ "1X=a", "f:1: expected KEY=VALUE, KEY of letters, digits and _, not starting with a digit" },
	{ "FREQ-CTL=a", "f:1: expected KEY=VALUE, KEY of letters, digits and _, not starting with a digit" },
	{ "=a", "f:1: expected KEY=VALUE, KEY of letters, digits and _, not starting with a digit" },
	{ "# ok\nFREQCTL_DB=/x\r\n", "f:2: a carriage return (a file with DOS line ends?)" },
	{ "# a comment\r with a carriage return\n", "f:1: a carriage return (a file with DOS line ends?)" },
	{ "# a comment \\\nFREQCTL_DB=/x\n", "f:1: a comment that ends with a backslash: systemd versions disagree on "
					     "whether the next line is part of it" },
	{ "FREQCTL_NODE=w\xc3\xa9"
	  "b",
	  "f:1: a byte that is not ASCII" },
	{ "FREQCTL_NODE='a\tb'", "f:1: a control character" },
	{ "\n\n; ok\n\tFREQCTL_NODE=a b",
	  "f:4: text after the value: a comment goes on a line of its own, a value with spaces in quotes" },
};

/* What sh makes of the line: the value it assigns to key. */
static char *fc_sh_value(const char *line, const char *key)
{
	char path[] = "/tmp/fc-test-envfile-XXXXXX", cmd[256];
	static char out[512];
	size_t n;
	FILE *p;
	int fd;

	fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, line, strlen(line)), (ssize_t)strlen(line));
	assert_int_equal(write(fd, "\n", 1), 1);
	close(fd);
	snprintf(cmd, sizeof(cmd), "env -i sh -c '. %s && printf %%s \"$%s\"'", path, key);
	p = popen(cmd, "r");
	assert_non_null(p);
	n = fread(out, 1, sizeof(out) - 1, p);
	out[n] = '\0';
	assert_int_equal(pclose(p), 0);
	unlink(path);
	return out;
}

static void test_envfile_good(void **state)
{
	struct fc_envfile f;
	struct fc_err err;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(fc_good) / sizeof(fc_good[0]); i++) {
		if (fc_envfile_parse("f", fc_good[i].line, strlen(fc_good[i].line), &f, &err) < 0)
			fail_msg("%s: %s", fc_good[i].line, err.msg);
		assert_int_equal(f.n, 1);
		assert_string_equal(f.v[0].key, fc_good[i].key);
		assert_string_equal(f.v[0].value, fc_good[i].value);
		assert_int_equal(f.v[0].line, 1);
		fc_envfile_free(&f);
		/* A shell that sources the file reads the same. */
		assert_string_equal(fc_sh_value(fc_good[i].line, fc_good[i].key), fc_good[i].value);
	}
}

static void test_envfile_bad(void **state)
{
	struct fc_envfile f;
	struct fc_err err;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(fc_bad) / sizeof(fc_bad[0]); i++) {
		if (fc_envfile_parse("f", fc_bad[i].text, strlen(fc_bad[i].text), &f, &err) == 0)
			fail_msg("accepted: %s", fc_bad[i].text);
		assert_string_equal(err.msg, fc_bad[i].msg);
		assert_null(f.v);
	}
	assert_int_equal(fc_envfile_parse("f", "A=1\0B=2", 7, &f, &err), -1);
	assert_string_equal(err.msg, "f: a NUL byte: not a text file");
}

/* Lines, comments, blank lines, a key given twice (both kept, in order:
 * the last wins, as in systemd), no newline at the end. */
static void test_envfile_lines(void **state)
{
	static const char text[] = "# /etc/default/freqctl\n"
				   "\n"
				   "; another comment, with anything: $`\\'\" \xc3\xa9"
				   "\n"
				   "FREQCTL_DB=/a\n"
				   "   \t\n"
				   "FREQCTL_SHM='/dev/shm/x'\n"
				   "FREQCTL_DB=\"/b\"";
	struct fc_envfile f;
	struct fc_err err;

	(void)state;
	assert_int_equal(fc_envfile_parse("f", text, sizeof(text) - 1, &f, &err), 0);
	assert_int_equal(f.n, 3);
	assert_string_equal(f.v[0].key, "FREQCTL_DB");
	assert_string_equal(f.v[0].value, "/a");
	assert_int_equal(f.v[0].line, 4);
	assert_string_equal(f.v[1].value, "/dev/shm/x");
	assert_int_equal(f.v[1].line, 6);
	assert_string_equal(f.v[2].value, "/b");
	assert_int_equal(f.v[2].line, 7);
	fc_envfile_free(&f);
	assert_int_equal(fc_envfile_parse("f", "", 0, &f, &err), 0);
	assert_int_equal(f.n, 0);
	fc_envfile_free(&f);
}

static void test_envfile_read(void **state)
{
	char path[] = "/tmp/fc-test-envfile-XXXXXX", big[FC_ENVFILE_MAX + 2];
	struct fc_envfile f;
	struct fc_err err;
	int fd;

	(void)state;
	assert_int_equal(fc_envfile_read("/nonexistent/freqctl", &f, &err), 1);
	assert_int_equal(f.n, 0);
	fd = mkstemp(path);
	assert_true(fd >= 0);
	memset(big, '#', sizeof(big));
	assert_int_equal(write(fd, big, sizeof(big)), (ssize_t)sizeof(big));
	close(fd);
	assert_int_equal(fc_envfile_read(path, &f, &err), -2);
	assert_non_null(strstr(err.msg, ": larger than 64 KiB: not a configuration file"));
	truncate(path, 0);
	fd = open(path, O_WRONLY);
	assert_int_equal(write(fd, "FREQCTL_NODE=n1\n", 16), 16);
	close(fd);
	assert_int_equal(fc_envfile_read(path, &f, &err), 0);
	assert_string_equal(f.v[0].value, "n1");
	fc_envfile_free(&f);
	unlink(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_envfile_good),
		cmocka_unit_test(test_envfile_bad),
		cmocka_unit_test(test_envfile_lines),
		cmocka_unit_test(test_envfile_read),
	};

	return fc_run_group("the configuration file's syntax", tests, NULL, NULL);
}
