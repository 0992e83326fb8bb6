/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Options declared once, as tables: each entry says how the option is
 * written, what type its value has, where it goes and what bounds it. The
 * command line builds getopt_long's structures and --help from a table
 * (cmd/fc_cli.c); the JSON readers (import, the console's API) take the
 * same keys through the same entries, so a bound or a message is written in
 * one place only. (As xdp-tools' DEFINE_OPTION and nginx's typed conf slots.)
 */
#ifndef FC_OPT_H
#define FC_OPT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fc_error.h"

enum fc_opt_type {
	FC_OPT_FLAG,     /* bool, set when given; takes no argument */
	FC_OPT_STR,      /* const char *: the text as given */
	FC_OPT_UINT,     /* uint64_t, from min to max */
	FC_OPT_U32,      /* uint32_t, from min to max */
	FC_OPT_REAL,     /* double, from fmin to fmax */
	FC_OPT_DURATION, /* int64_t seconds: "90s", "1h30m" (in JSON, a number of seconds) */
	FC_OPT_ENUM,     /* int: the index of the text in names (an enum's values) */
	FC_OPT_PARSE,    /* parse(text, dest): a value with a parser of its own */
	/* A yes or no that may be left unsaid: an int, 1 for --NAME (FC_OPT_YES),
	 * -1 for its twin --no-NAME (FC_OPT_NO), 0 when neither is given. In
	 * JSON the FC_OPT_YES entry's key takes true, false or null. */
	FC_OPT_YES,
	FC_OPT_NO,
};

struct fc_opt {
	const char *name;  /* --name */
	char short_name;   /* -c, or 0 */
	enum fc_opt_type type;
	size_t off;        /* where the value goes in the command's option struct */
	size_t size;       /* and its size, checked against the type (test_cli) */
	uint64_t min, max; /* FC_OPT_UINT, FC_OPT_U32, FC_OPT_DURATION */
	double fmin, fmax; /* FC_OPT_REAL */
	const char *const *names; /* FC_OPT_ENUM, NULL-terminated */
	int (*parse)(const char *text, void *dest, struct fc_err *err); /* FC_OPT_PARSE */
	bool repeat;       /* may be given more than once (a JSON array) */
	const char *json;  /* the same value's key in JSON objects, or NULL */
	const char *arg;   /* the argument's name in --help */
	const char *help;
};

/* An entry for field of struct type; the rest by designated initializers:
 * FC_OPTION("burst", 'b', FC_OPT_UINT, struct fc_policy_spec, burst, .min = 1, ...). */
#define FC_OPTION(name_, short_, type_, struct_, field_, ...)                                        \
	{ .name = (name_), .short_name = (short_), .type = (type_), .off = offsetof(struct_, field_), \
	  .size = sizeof(((struct_ *)0)->field_), __VA_ARGS__ }

/* Tables end with an entry whose name is NULL. */
#define FC_OPT_END { .name = NULL }

/* Sets o's value in opts from text; label names the value in the message
 * (the option, or the JSON key): `burst "0": expected a whole number from 1
 * to 1000000`. Returns 0, or -1 with err set and opts untouched. */
int fc_opt_set(const struct fc_opt *o, void *opts, const char *text, const char *label, struct fc_err *err);

/* Parses all of s as a decimal number up to max: 0, -1 if it is not a
 * number, -2 if it is above max. */
int fc_decimal(const char *s, uint64_t max, uint64_t *v);

/* Finds text in names (NULL-terminated) and stores its index; the message
 * names label and lists them all: `algo "x": expected one of gcra, window`. */
int fc_enum_parse(const char *label, const char *text, const char *const *names, int *out, struct fc_err *err);

/* Whether the entry's size fits its type (a table typo shows up in tests). */
bool fc_opt_sane(const struct fc_opt *o);

/* Whether the option takes an argument (those that do not: FC_OPT_FLAG,
 * FC_OPT_YES, FC_OPT_NO). */
static inline bool fc_opt_has_arg(const struct fc_opt *o)
{
	return o->type != FC_OPT_FLAG && o->type != FC_OPT_YES && o->type != FC_OPT_NO;
}

#endif /* FC_OPT_H */
