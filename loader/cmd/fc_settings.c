// SPDX-License-Identifier: BSD-2-Clause
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <jansson.h>

#include "fc_cli.h"
#include "fc_envfile.h"
#include "fc_kern.h"
#include "fc_owner.h"
#include "fc_redis_conf.h"
#include "fc_settings.h"
#include "fc_shm_write.h"
#include "fc_store.h"

enum fc_setting_kind { FC_SET_PATH, FC_SET_DSN, FC_SET_REDIS, FC_SET_U32 };

/* The settings: the global option, its variable (in the environment and
 * the file), where fc_ctx holds it and what the default is. */
static const struct fc_setting {
	const char *opt, *var;
	size_t off;
	enum fc_setting_kind kind;
	const char *dflt;
} fc_settings[] = {
	{ "db", "FREQCTL_DB", offsetof(struct fc_ctx, db_path), FC_SET_DSN, FC_STORE_DEFAULT },
	{ "pin-dir", "FREQCTL_PIN_DIR", offsetof(struct fc_ctx, pin_dir), FC_SET_PATH, FC_PIN_DIR_DEFAULT },
	{ "shm", "FREQCTL_SHM", offsetof(struct fc_ctx, shm_path), FC_SET_PATH, FC_SHM_DEFAULT },
	{ "shm-group", "FREQCTL_SHM_GROUP", offsetof(struct fc_ctx, shm_group), FC_SET_PATH,
	  FC_SHM_GROUP_DEFAULT ", where that group exists" },
	{ "shm-keys", "FREQCTL_SHM_KEYS", offsetof(struct fc_ctx, shm_keys), FC_SET_U32,
	  "the state file's, 1048576 for a new one" },
	{ "node", "FREQCTL_NODE", offsetof(struct fc_ctx, node), FC_SET_PATH, "the host name" },
	{ "redis", "FREQCTL_REDIS", offsetof(struct fc_ctx, redis), FC_SET_REDIS, "none (no fleet policies)" },
	{ "redis-password-file", "FREQCTL_REDIS_PASSWORD_FILE", offsetof(struct fc_ctx, redis_password_file),
	  FC_SET_PATH, "none" },
	{ "redis-prefix", "FREQCTL_REDIS_PREFIX", offsetof(struct fc_ctx, redis_prefix), FC_SET_PATH,
	  FC_REDIS_PREFIX_DEFAULT },
};

#define FC_NSETTINGS (sizeof(fc_settings) / sizeof(fc_settings[0]))

enum fc_from { FC_FROM_DEFAULT, FC_FROM_FILE, FC_FROM_ENV, FC_FROM_OPTION };

static const char *const fc_from_names[] = { "default", "file", "environment", "option" };

/* Where each setting came from; the file read, kept for the values that
 * point into it. */
static struct {
	enum fc_from from[FC_NSETTINGS];
	unsigned line[FC_NSETTINGS];
	const char *file;
	struct fc_envfile f;
} fc_cfg;

static int fc_setting_find(const char *var)
{
	size_t i;

	for (i = 0; i < FC_NSETTINGS; i++)
		if (!strcmp(fc_settings[i].var, var))
			return (int)i;
	return -1;
}

static const struct fc_opt *fc_setting_opt(const struct fc_opt *opts, size_t i)
{
	while (opts->name && strcmp(opts->name, fc_settings[i].opt))
		opts++;
	return opts->name ? opts : NULL;
}

/* libpq's own variables (PGPASSFILE, PGSSLMODE, ...): the unit passes them
 * to the agent; a command run by hand takes them from the file too, where
 * its environment does not set them. */
static bool fc_setting_libpq(const char *key)
{
	return !strncmp(key, "PG", 2) && key[2] && strspn(key, "ABCDEFGHIJKLMNOPQRSTUVWXYZ_") == strlen(key);
}

/* A Redis URL of the file with a password, in a file others may read
 * (/etc/default/freqctl is 0644): said at once, with the way out. */
static void fc_settings_secret(const struct fc_env_entry *e)
{
	struct fc_redis_conf c;
	struct fc_err why;
	struct stat sb;
	bool pw;

	fc_redis_conf_init(&c);
	pw = fc_redis_conf_urls(&c, e->value, &why) == 0 && c.password_from == FC_REDIS_PW_URL;
	fc_redis_conf_wipe(&c);
	if (pw && stat(fc_cfg.file, &sb) == 0 && (sb.st_mode & 044))
		fc_warn("%s:%u: %s holds a password and the file is readable by others (mode %04o): put it in a "
			"file of mode 0600 named by FREQCTL_REDIS_PASSWORD_FILE (--redis-password-file), or chmod "
			"go-r %s",
			fc_cfg.file, e->line, e->key, (unsigned)(sb.st_mode & 07777), fc_cfg.file);
}

/* The file's entries: the last of each setting counts (as in systemd), an
 * empty one leaves the default, as an empty variable does. */
static int fc_settings_file(const struct fc_opt *opts, void *g, struct fc_err *err)
{
	const struct fc_env_entry *e, *last[FC_NSETTINGS] = { 0 };
	struct fc_err why;
	size_t i;
	int k;

	for (i = 0; i < fc_cfg.f.n; i++) {
		e = &fc_cfg.f.v[i];
		if ((k = fc_setting_find(e->key)) >= 0) {
			if (last[k])
				fc_warn("%s:%u: %s again (line %u before): the last one counts, as for systemd",
					fc_cfg.file, e->line, e->key, last[k]->line);
			last[k] = e;
		} else if (fc_setting_libpq(e->key)) {
			setenv(e->key, e->value, 0);
		} else {
			fc_warn("%s:%u: %s: not a setting of freqctl's, ignored (freqctl(8), ENVIRONMENT, lists them)",
				fc_cfg.file, e->line, e->key);
		}
	}
	for (i = 0; i < FC_NSETTINGS; i++) {
		if (!last[i] || !*last[i]->value)
			continue;
		if (fc_opt_set(fc_setting_opt(opts, i), g, last[i]->value, fc_settings[i].var, &why) < 0)
			return fc_err_set(err, "%s:%u: %s: %s", fc_cfg.file, last[i]->line, fc_settings[i].var,
					  why.msg),
			       FC_EXIT_FAILURE;
		if (fc_settings[i].kind == FC_SET_REDIS)
			fc_settings_secret(last[i]);
		fc_cfg.from[i] = FC_FROM_FILE;
		fc_cfg.line[i] = last[i]->line;
	}
	return 0;
}

int fc_settings_load(const struct fc_opt *opts, void *g, struct fc_err *err)
{
	const char *named = getenv("FREQCTL_CONFIG"), *path = named ? named : FC_CONFIG_DEFAULT, *v;
	struct fc_err why;
	size_t i;
	int r;

	/* Without root, a file kept from other users (a password in it) is
	 * not this user's to read: the commands that can run without it do. */
	if (*path && geteuid() != 0 && access(path, R_OK) < 0 && errno == EACCES) {
		fc_warn("%s: not readable without root: its settings are not read", path);
		path = "";
	}
	if (*path) {
		if (fc_owner_check(FC_OWNED_CONFIG, path, err) < 0)
			return FC_EXIT_FAILURE;
		/* A line of the file is not the command line: its error names
		 * the file and line, and is a runtime one (exit 1). */
		r = fc_envfile_read(path, &fc_cfg.f, err);
		if (r < 0)
			return FC_EXIT_FAILURE;
		/* Absent is no file, unless FREQCTL_CONFIG named it. */
		if (r && named)
			return fc_err_set(err, "FREQCTL_CONFIG: %s: no such file (an empty FREQCTL_CONFIG reads none)",
					  path),
			       FC_EXIT_FAILURE;
		fc_cfg.file = r ? NULL : path;
		if (fc_cfg.file && (r = fc_settings_file(opts, g, err)) != 0)
			return r;
	}
	for (i = 0; i < FC_NSETTINGS; i++) {
		if (!(v = getenv(fc_settings[i].var)) || !*v)
			continue;
		if (fc_opt_set(fc_setting_opt(opts, i), g, v, fc_settings[i].var, &why) < 0)
			return fc_err_set(err, "%s: %s", fc_settings[i].var, why.msg), FC_EXIT_USAGE;
		fc_cfg.from[i] = FC_FROM_ENV;
	}
	return 0;
}

void fc_settings_given(const struct fc_opt *o)
{
	size_t i;

	for (i = 0; i < FC_NSETTINGS; i++)
		if (!strcmp(o->name, fc_settings[i].opt))
			fc_cfg.from[i] = FC_FROM_OPTION;
}

void fc_settings_usage(FILE *f)
{
	size_t i;

	fputs("\nEnvironment and configuration file:", f);
	for (i = 0; i < FC_NSETTINGS; i++)
		fprintf(f, "%s%s", i ? ", " : " ", fc_settings[i].var);
	fputs(" set the global options of the same names, from the environment or from\n" FC_CONFIG_DEFAULT
	      " (as KEY=VALUE lines, which the agent's unit reads too; FREQCTL_CONFIG\n"
	      "names another file, empty for none). An option given wins over the environment, the\n"
	      "environment over the file. 'freqctl status' shows each setting and where it came from.\n",
	      f);
}

/* Setting i as ctx holds it, as it may be shown: a password is never
 * shown (a DSN's, a Redis URL's), a password file is named, not read.
 * NULL: not set (its default applies). */
static const char *fc_setting_value(const struct fc_ctx *ctx, size_t i, char *buf, size_t len)
{
	const struct fc_setting *s = &fc_settings[i];
	const char *v = *(const char *const *)((const char *)ctx + s->off), *comma;
	size_t at = 0, n;
	char *dsn;

	if (s->kind == FC_SET_U32) {
		uint32_t u = *(const uint32_t *)((const char *)ctx + s->off);

		return u ? (snprintf(buf, len, "%u", u), buf) : NULL;
	}
	if (!v || s->kind == FC_SET_PATH)
		return v;
	if (s->kind == FC_SET_DSN) {
		dsn = fc_store_dsn_redact(v);
		snprintf(buf, len, "%s", dsn ? dsn : "(not shown: out of memory)");
		free(dsn);
		return buf;
	}
	/* Redis: each URL of the list, redacted. */
	buf[0] = '\0';
	for (; at + 1 < len; v = comma + 1) {
		char url[512];

		comma = strchr(v, ',');
		n = comma ? (size_t)(comma - v) : strlen(v);
		snprintf(url, sizeof(url), "%.*s", (int)n, v);
		fc_redis_url_redact(url, buf + at, len - at);
		at += strlen(buf + at);
		if (!comma || at + 2 >= len)
			break;
		buf[at++] = ',';
		buf[at] = '\0';
	}
	return buf;
}

/* Where setting i came from, in words: "option --db", "environment
 * FREQCTL_DB", "/etc/default/freqctl:3", "default". */
static void fc_setting_from(size_t i, char *buf, size_t len)
{
	switch (fc_cfg.from[i]) {
	case FC_FROM_OPTION:
		snprintf(buf, len, "option --%s", fc_settings[i].opt);
		break;
	case FC_FROM_ENV:
		snprintf(buf, len, "environment %s", fc_settings[i].var);
		break;
	case FC_FROM_FILE:
		snprintf(buf, len, "%s:%u", fc_cfg.file, fc_cfg.line[i]);
		break;
	default:
		snprintf(buf, len, "default");
	}
}

void fc_settings_origin(const char *opt, char *buf, size_t len)
{
	size_t i;

	for (i = 0; i < FC_NSETTINGS && strcmp(fc_settings[i].opt, opt); i++)
		;
	if (i < FC_NSETTINGS)
		fc_setting_from(i, buf, len);
	else
		snprintf(buf, len, "default");
}

void fc_settings_print(const struct fc_ctx *ctx)
{
	char buf[1024], from[600];
	const char *v;
	size_t i;

	printf("settings (configuration file: %s):\n", fc_cfg.file ? fc_cfg.file : "none read");
	for (i = 0; i < FC_NSETTINGS; i++) {
		v = fc_setting_value(ctx, i, buf, sizeof(buf));
		fc_setting_from(i, from, sizeof(from));
		if (v)
			printf("  %-20s %-40s %s\n", fc_settings[i].opt, v, from);
		else
			printf("  %-20s (%s)\n", fc_settings[i].opt, fc_settings[i].dflt);
	}
}

json_t *fc_settings_json(const struct fc_ctx *ctx)
{
	json_t *doc = json_object(), *o;
	char buf[1024];
	const char *v;
	size_t i;

	for (i = 0; doc && i < FC_NSETTINGS; i++) {
		v = fc_setting_value(ctx, i, buf, sizeof(buf));
		o = json_pack("{s:o, s:s, s:s}", "value", v ? json_string(v) : json_null(), "from",
			      fc_from_names[fc_cfg.from[i]], "variable", fc_settings[i].var);
		if (o && fc_cfg.from[i] == FC_FROM_FILE) {
			json_object_set_new(o, "file", json_string(fc_cfg.file));
			json_object_set_new(o, "line", json_integer(fc_cfg.line[i]));
		}
		if (o && !v)
			json_object_set_new(o, "default", json_string(fc_settings[i].dflt));
		json_object_set_new(doc, fc_settings[i].opt, o);
	}
	return json_pack("{s:o, s:o}", "file", fc_cfg.file ? json_string(fc_cfg.file) : json_null(), "settings", doc);
}
