// SPDX-License-Identifier: BSD-2-Clause
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "fc_envfile.h"

static bool fc_env_blank(char c)
{
	return c == ' ' || c == '\t';
}

static bool fc_env_key_char(char c, bool first)
{
	return c == '_' || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (!first && c >= '0' && c <= '9');
}

/* What a value may hold: unquoted, what neither systemd nor a shell reads
 * as anything but itself; in single quotes, anything printable but the
 * quote; in double quotes, not what a shell expands or systemd unescapes
 * there. */
static bool fc_env_value_char(char c, char quote)
{
	if (c < 0x20 || c > 0x7e)
		return false;
	if (quote == '\'')
		return c != '\'';
	if (quote == '"')
		return !strchr("\"\\$`", c);
	return c != ' ' && !strchr("\"'\\$`;&|<>()~", c);
}

/* A line's trouble, in words, for a character c of it (at its value, in
 * quote). */
static const char *fc_env_bad_char(char c, char quote)
{
	if (c == '\r')
		return "a carriage return (a file with DOS line ends?)";
	if ((unsigned char)c < 0x20 || c == 0x7f)
		return "a control character";
	if ((unsigned char)c > 0x7e)
		return "a byte that is not ASCII";
	if (c == '\\')
		return "a backslash: systemd and a shell read it differently; write the value plain or in single "
		       "quotes";
	if (quote == '"')
		return "a $ or ` in double quotes, which a shell expands: use single quotes";
	if (c == ' ')
		return "a space in a value that is not quoted: quote it (systemd keeps what follows, a shell runs it)";
	return "a character a shell reads as syntax in a value that is not quoted: quote it";
}

/* Parses one line (NUL-terminated, without its newline), cutting its key
 * and value out in place: 1 with e set, 0 for a blank or comment line, -1
 * with *why. */
static int fc_env_line(char *s, struct fc_env_entry *e, const char **why)
{
	char *key, *val, *end, quote = 0;

	while (fc_env_blank(*s))
		s++;
	if (!*s)
		return 0;
	if (*s == '#' || *s == ';') {
		/* Anything but what ends a line for systemd (a carriage return) or
		 * does not print. */
		for (end = s; *end; end++)
			if (((unsigned char)*end < 0x20 && *end != '\t') || *end == 0x7f)
				return *why = fc_env_bad_char(*end, 0), -1;
		if (end[-1] == '\\')
			return *why = "a comment that ends with a backslash: systemd versions disagree on whether the "
				      "next line is part of it",
			       -1;
		return 0;
	}
	if (!strncmp(s, "export", 6) && fc_env_blank(s[6]))
		return *why = "\"export\": systemd does not read it; write KEY=VALUE", -1;
	key = s;
	if (!fc_env_key_char(*s, true))
		return *why = "expected KEY=VALUE, KEY of letters, digits and _, not starting with a digit", -1;
	while (fc_env_key_char(*s, false))
		s++;
	if (fc_env_blank(*s))
		return *why = "a space before '=': write KEY=VALUE", -1;
	if (*s != '=')
		return *why = "expected KEY=VALUE, KEY of letters, digits and _, not starting with a digit", -1;
	*s++ = '\0';
	if (fc_env_blank(*s))
		return *why = "a space after '=': write KEY=VALUE, quoting a value that starts with a space", -1;
	if (*s == '\'' || *s == '"')
		quote = *s++;
	for (val = s; *s && (quote ? *s != quote : !fc_env_blank(*s)); s++)
		if (!fc_env_value_char(*s, quote))
			return *why = fc_env_bad_char(*s, quote), -1;
	if (quote && *s != quote)
		return *why = "a quote that is not closed on its line", -1;
	end = s;
	if (quote)
		s++;
	while (fc_env_blank(*s))
		s++;
	if (*s)
		return *why = quote ? "text after the closing quote" :
				      "text after the value: a comment goes on a line of its own, a value with "
				      "spaces in quotes",
		       -1;
	*end = '\0';
	*e = (struct fc_env_entry){ .key = key, .value = val };
	return 1;
}

int fc_envfile_parse(const char *name, const char *text, size_t len, struct fc_envfile *out, struct fc_err *err)
{
	struct fc_env_entry e, *v;
	const char *why;
	char *line, *nl;
	unsigned n = 0;
	int rc;

	memset(out, 0, sizeof(*out));
	if (memchr(text, '\0', len))
		return fc_err_set(err, "%s: a NUL byte: not a text file", name);
	if (!(out->text = malloc(len + 1)))
		return fc_err_set(err, "%s: out of memory", name);
	memcpy(out->text, text, len);
	out->text[len] = '\0';
	for (line = out->text; *line; line = nl ? nl + 1 : line + strlen(line)) {
		n++;
		if ((nl = strchr(line, '\n')))
			*nl = '\0';
		rc = fc_env_line(line, &e, &why);
		if (rc < 0) {
			fc_envfile_free(out);
			return fc_err_set(err, "%s:%u: %s", name, n, why);
		}
		if (!rc)
			continue;
		if (!(v = realloc(out->v, (out->n + 1) * sizeof(*v)))) {
			fc_envfile_free(out);
			return fc_err_set(err, "%s: out of memory", name);
		}
		e.line = n;
		out->v = v;
		out->v[out->n++] = e;
	}
	return 0;
}

int fc_envfile_read(const char *path, struct fc_envfile *out, struct fc_err *err)
{
	char buf[FC_ENVFILE_MAX + 1];
	size_t len = 0;
	ssize_t r;
	int fd, rc;

	memset(out, 0, sizeof(*out));
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return errno == ENOENT ? 1 : fc_err_set(err, "%s: %s", path, strerror(errno));
	while (len < sizeof(buf) && (r = read(fd, buf + len, sizeof(buf) - len)) != 0) {
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			rc = fc_err_set(err, "%s: %s", path, strerror(errno));
			close(fd);
			return rc;
		}
		len += (size_t)r;
	}
	close(fd);
	if (len > FC_ENVFILE_MAX)
		return fc_err_set(err, "%s: larger than %d KiB: not a configuration file", path, FC_ENVFILE_MAX / 1024),
		       -2;
	return fc_envfile_parse(path, buf, len, out, err) < 0 ? -2 : 0;
}

void fc_envfile_free(struct fc_envfile *f)
{
	free(f->text);
	free(f->v);
	memset(f, 0, sizeof(*f));
}
