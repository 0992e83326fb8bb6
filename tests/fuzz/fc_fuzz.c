// SPDX-License-Identifier: BSD-2-Clause
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fc_change.h"
#include "fc_fuzz.h"
#include "fc_opt.h"
#include "fc_policy.h"

const struct fc_ctx *fc_fuzz_ctx(void)
{
	static char db[512], shm[512];
	static struct fc_ctx ctx;
	const char *dir = getenv("FC_FUZZ_DIR"), *pin = getenv("FC_FUZZ_PIN");

	if (ctx.db_path)
		return &ctx;
	if (!dir || !pin) {
		fprintf(stderr, "fuzz: FC_FUZZ_DIR and FC_FUZZ_PIN name scratch paths; run me through tools/fuzz.sh\n");
		exit(2);
	}
	mkdir(dir, 0700);
	snprintf(db, sizeof(db), "%s/store.db", dir);
	snprintf(shm, sizeof(shm), "%s/shm", dir);
	ctx = (struct fc_ctx){ .db_path = db, .pin_dir = pin, .shm_path = shm, .node = "fuzz" };
	return &ctx;
}

static void fc_fuzz_setup_fail(const char *what, const char *msg)
{
	fprintf(stderr, "fuzz: setup: %s: %s\n", what, msg);
	exit(1);
}

void fc_fuzz_policy_spec(uint32_t id, const char *match, const char *rates, const char *opts,
			 struct fc_policy_spec *p)
{
	char buf[256], *tok, *save = NULL, *eq;
	const struct fc_opt *o;
	struct fc_err err;

	*p = (struct fc_policy_spec){ .id = id };
	if (fc_match_parse(match, p, &err) < 0 || fc_rates_parse(rates, p, &err) < 0)
		fc_fuzz_setup_fail(match, err.msg);
	snprintf(buf, sizeof(buf), "%s", opts);
	for (tok = strtok_r(buf, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
		eq = strchr(tok, '=');
		if (!eq)
			fc_fuzz_setup_fail(tok, "expected key=value");
		*eq++ = '\0';
		for (o = fc_policy_opts; o->name && (!o->json || strcmp(o->json, tok)); o++)
			;
		if (!o->name || fc_opt_set(o, p, eq, tok, &err) < 0)
			fc_fuzz_setup_fail(tok, o->name ? err.msg : "no such policy option");
	}
	if (fc_policy_validate(p, &err) < 0)
		fc_fuzz_setup_fail(match, err.msg);
}

void fc_fuzz_policy(uint32_t id, const char *match, const char *rates, const char *opts)
{
	struct fc_policy_spec p;
	struct fc_policy_row row;
	struct fc_err err;
	bool found;

	fc_fuzz_policy_spec(id, match, rates, opts, &p);
	if (fc_change_policy_put(fc_fuzz_ctx(), &p, FC_PUT_REPLACE | FC_PUT_LAYER_SAID, &found, &row, &err))
		fc_fuzz_setup_fail(match, err.msg);
}

void fc_fuzz_ban(const char *text)
{
	char canon[FC_BAN_TEXT_LEN];
	struct fc_err err;
	int64_t was;

	if (fc_change_ban_put(fc_fuzz_ctx(), text, 0, false, canon, &was, &err))
		fc_fuzz_setup_fail(text, err.msg);
}

void fc_fuzz_unban(const char *text)
{
	char canon[FC_BAN_TEXT_LEN], held[FC_SETS_TEXT_LEN];
	struct fc_err err;

	if (fc_change_ban_del(fc_fuzz_ctx(), text, canon, held, &err))
		fc_fuzz_setup_fail(text, err.msg);
}

void fc_fuzz_allow(const char *text)
{
	char canon[FC_BAN_TEXT_LEN];
	struct fc_err err;
	bool existed;

	if (fc_change_allow_put(fc_fuzz_ctx(), text, 0, "", canon, &existed, &err))
		fc_fuzz_setup_fail(text, err.msg);
}

void fc_fuzz_fail(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fputs("fuzz: property broken: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	abort();
}

uint8_t fc_fuzz_byte(struct fc_fuzz_in *in)
{
	if (!in->n)
		return 0;
	in->n--;
	return *in->p++;
}

bool fc_fuzz_next_chunk(struct fc_fuzz_in *in, struct fc_fuzz_chunk *c)
{
	if (in->n < 7)
		return false;
	c->what = fc_fuzz_byte(in);
	c->off = fc_fuzz_byte(in) | fc_fuzz_byte(in) << 8 | fc_fuzz_byte(in) << 16 | (uint32_t)fc_fuzz_byte(in) << 24;
	c->len = fc_fuzz_byte(in) | fc_fuzz_byte(in) << 8;
	if (c->len > in->n)
		c->len = in->n;
	c->p = in->p;
	in->p += c->len;
	in->n -= c->len;
	return true;
}

size_t fc_fuzz_str(struct fc_fuzz_in *in, char *out, size_t max)
{
	size_t n = in->n < max ? in->n : max;

	memcpy(out, in->p, n);
	out[n] = '\0';
	in->p += n;
	in->n -= n;
	return n;
}
