// SPDX-License-Identifier: BSD-2-Clause
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fc_duration.h"
#include "fc_opt.h"

int fc_decimal(const char *s, uint64_t max, uint64_t *v)
{
	uint64_t n = 0;

	if (!*s)
		return -1;
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return -1;
		if (n > (max - (uint64_t)(*s - '0')) / 10)
			return -2;
		n = n * 10 + (uint64_t)(*s - '0');
	}
	*v = n;
	return 0;
}

int fc_enum_parse(const char *label, const char *text, const char *const *names, int *out, struct fc_err *err)
{
	char list[160] = "";
	size_t i, off = 0;

	for (i = 0; names[i]; i++) {
		if (!strcmp(text, names[i])) {
			*out = (int)i;
			return 0;
		}
		off += (size_t)snprintf(list + off, off < sizeof(list) ? sizeof(list) - off : 0, "%s%s", i ? ", " : "",
					names[i]);
	}
	return fc_err_set(err, "%s \"%s\": expected one of %s", label, text, list);
}

int fc_opt_set(const struct fc_opt *o, void *opts, const char *text, const char *label, struct fc_err *err)
{
	void *dest = (char *)opts + o->off;
	uint64_t u = 0;
	int64_t secs;
	double d;
	char *end;
	int e;

	switch (o->type) {
	case FC_OPT_FLAG:
		*(bool *)dest = true;
		return 0;
	case FC_OPT_STR:
		*(const char **)dest = text;
		return 0;
	case FC_OPT_UINT:
	case FC_OPT_U32:
		if (fc_decimal(text, o->max, &u) < 0 || u < o->min)
			return fc_err_set(err, "%s \"%s\": expected a whole number from %llu to %llu", label, text,
					  (unsigned long long)o->min, (unsigned long long)o->max);
		if (o->type == FC_OPT_U32)
			*(uint32_t *)dest = (uint32_t)u;
		else
			*(uint64_t *)dest = u;
		return 0;
	case FC_OPT_REAL:
		errno = 0;
		d = strtod(text, &end);
		if (errno || end == text || *end || !isfinite(d) || d < o->fmin || d > o->fmax)
			return fc_err_set(err, "%s \"%s\": expected a number from %g to %g", label, text, o->fmin, o->fmax);
		*(double *)dest = d;
		return 0;
	case FC_OPT_DURATION:
		if (fc_duration_parse(text, &secs, err) < 0)
			return -1;
		*(int64_t *)dest = secs;
		return 0;
	case FC_OPT_ENUM:
		if (fc_enum_parse(label, text, o->names, &e, err) < 0)
			return -1;
		*(int *)dest = e;
		return 0;
	case FC_OPT_PARSE:
		return o->parse(text, dest, err);
	case FC_OPT_YES:
		*(int *)dest = 1;
		return 0;
	case FC_OPT_NO:
		*(int *)dest = -1;
		return 0;
	}
	return fc_err_set(err, "%s: unknown option type %d", label, (int)o->type);
}

bool fc_opt_sane(const struct fc_opt *o)
{
	switch (o->type) {
	case FC_OPT_FLAG:
		return o->size == sizeof(bool);
	case FC_OPT_STR:
		return o->size == sizeof(const char *);
	case FC_OPT_UINT:
		return o->size == sizeof(uint64_t) && o->min <= o->max;
	case FC_OPT_U32:
		return o->size == sizeof(uint32_t) && o->min <= o->max && o->max <= UINT32_MAX;
	case FC_OPT_REAL:
		return o->size == sizeof(double) && o->fmin <= o->fmax;
	case FC_OPT_DURATION:
		return o->size == sizeof(int64_t);
	case FC_OPT_ENUM:
		return o->size == sizeof(int) && o->names && o->names[0];
	case FC_OPT_PARSE:
		return o->parse != NULL;
	case FC_OPT_YES:
	case FC_OPT_NO:
		return o->size == sizeof(int);
	}
	return false;
}
