// SPDX-License-Identifier: BSD-2-Clause
/*
 * The L7 engine's matching: query strings decoded as applications decode
 * them, the spellings of a dimension,
 * many policies on one request, and indexed matching against a naive
 * reference on random requests.
 */
#include <ctype.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "fc_test.h"
#include "fc_test_l7.h"

/* Decoding as applications decode query strings: %XX, '+' a space; what is
 * not a valid escape stays as written; a cap is never passed. */
static void test_decode(void **state)
{
	static const struct {
		const char *in, *out;
	} v[] = {
		{ "login", "login" }, { "%6Cogin", "login" }, { "%6cogin", "login" }, { "lo+gin", "lo gin" },
		{ "%2B", "+" },	      { "%zz", "%zz" },	      { "%4", "%4" },	    { "100%", "100%" },
		{ "%00x", "\0x" },   { "", "" },
	};
	char out[64];
	size_t i, n;

	(void)state;
	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		n = fc_l7_decode(v[i].in, strlen(v[i].in), out, sizeof(out));
		assert_int_equal(n, strlen(v[i].out) + (v[i].out[0] == 0 && v[i].in[0] ? 2 : 0));
		assert_memory_equal(out, v[i].out, n);
	}
	assert_int_equal(fc_l7_decode("%41%41%41", 9, out, 3), 3);
	assert_int_equal(fc_l7_decode("%41%41%41", 9, out, 2), SIZE_MAX);
	assert_int_equal(fc_l7_args_max("a=1&b=2&&c", 10), 4);
}

/*
 * arg:api=login is charged however it is spelled: percent-escaped, its name
 * escaped, given after another value of the same argument; a value given
 * twice is one match, not two charges; a header sent twice matches if
 * either line does.
 */
static void test_spelling(void **state)
{
	struct fc_t *t = *state;

	fc_policy(t, 1, "arg:api=login", "3/m", "drop", 3, 0);
	fc_policy(t, 2, "header:x-key=k", "1/m", "drop", 1, 0);
	fc_publish(t);
	assert_int_equal(fc_build(t, t->base, t->size), 0);
	assert_int_equal(fc_decide(t, "query=api=%6Cogin", T0, NULL), FC_L7_PASS);
	assert_int_equal(fc_decide(t, "query=x=1&api=x&api=login", T0, NULL), FC_L7_PASS);
	assert_int_equal(fc_decide(t, "query=%61pi=lo%67in&api=login", T0, NULL), FC_L7_PASS);
	assert_int_equal(fc_decide(t, "query=api=LOGIN&api=log+in&apix=login", T0, NULL), FC_L7_PASS);
	assert_int_equal(fc_decide(t, "query=api=login", T0, NULL), FC_L7_REJECTED);
	assert_int_equal(t->ix.slots[1].passed + t->ix.slots[1].denied, 4);
	assert_int_equal(fc_decide(t, "header:x-key=a header:x-key=k", T0, NULL), FC_L7_PASS);
	assert_int_equal(fc_decide(t, "header:x-key=k header:x-key=b", T0, NULL), FC_L7_REJECTED);
	assert_int_equal(fc_decide(t, "header:x-key=a header:x-key=b", T0, NULL), FC_L7_PASS);
}

/*
 * A uri as frameworks route it: without its segments' ';' parameters
 * (/login;jsessionid=1 is /login to a servlet container; the module drops
 * them, and a policy's own), and an exact uri= ignoring one trailing '/'
 * (/login/ is /login to Express, Spring, Rails), for its key too; the
 * prefix uri=/api/ * (so spelled here) still needs its '/', and uri=/a/
 * stays under uri=/a/ * for overrides.
 */
static void test_uri_spelling(void **state)
{
	static const struct {
		const char *in, *out;
	} v[] = {
		{ "/login;jsessionid=1", "/login" }, { "/a;x=1/b;y/c", "/a/b/c" }, { "/a/;x", "/a/" },
		{ ";x", "" },			      { "/", "/" },		    { "/a;", "/a" },
	};
	const struct fc_l7_policy *exact = NULL, *prefix = NULL;
	struct fc_t *t = *state;
	struct fc_l7_result res;
	char out[64], key[64];
	size_t i, n;

	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		n = fc_l7_uri_params(v[i].in, strlen(v[i].in), out);
		assert_int_equal(n, strlen(v[i].out));
		assert_memory_equal(out, v[i].out, n);
	}
	fc_policy(t, 1, "uri=/login", "2/m", "drop", 2, 0);
	fc_policy(t, 2, "uri=/a/", "1/m", "drop", 1, 0);
	fc_policy(t, 3, "uri=/api/*", "1/m", "drop", 1, 0);
	fc_policy(t, 4, "uri=*,uid=k", "1/m", "drop", 1, 0);
	fc_policy(t, 5, "uri=/b;v=1", "1/m", "drop", 1, 0);
	fc_policy(t, 6, "uri=/a/*", "100/m", "drop", 0, 0);
	fc_publish(t);
	assert_int_equal(fc_build(t, t->base, t->size), 0);
	assert_true(t->ix.uses_uri);
	assert_int_equal(fc_passes(t, "uri=/login/", T0, 1), 1);
	assert_int_equal(fc_passes(t, "uri=/login", T0, 2), 1);
	assert_int_equal(fc_passes(t, "uri=/a", T0, 2), 1);
	assert_int_equal(fc_decide(t, "uri=/a/", T0, NULL), FC_L7_REJECTED);
	assert_int_equal(fc_decide(t, "uri=/api", T0, &res), FC_L7_PASS);
	assert_int_equal(res.matched, 0);
	assert_int_equal(fc_passes(t, "uri=/api/", T0, 2), 1);
	assert_int_equal(fc_decide_key(t, "uid=k uri=/k/", T0, &res, key, sizeof(key)), FC_L7_PASS);
	assert_memory_equal(key, "/k,k", res.key_len);
	assert_int_equal(fc_decide(t, "uid=k uri=/k", T0, NULL), FC_L7_REJECTED);
	assert_int_equal(fc_passes(t, "uri=/b", T0, 2), 1);
	for (i = 0; i < t->ix.npolicies; i++) {
		if (t->ix.pol[i].id == 2)
			exact = &t->ix.pol[i];
		if (t->ix.pol[i].id == 6)
			prefix = &t->ix.pol[i];
	}
	assert_true(exact && prefix && fc_l7_more_general(prefix, exact));
	assert_false(fc_l7_more_general(exact, prefix));
}

/*
 * More matching policies than the engine decides on its stack: every one is
 * charged (memory from the request), and without memory nothing is decided
 * or charged rather than some policies ignored.
 */
static void test_many_matches(void **state)
{
	struct fc_t *t = *state;
	struct fc_arena arena = { 0 };
	struct fc_l7_alloc a = { fc_arena_alloc, &arena };
	struct fc_l7_result res;
	struct fc_l7_req rq;
	char match[64], query[1024] = "query=";
	size_t off = strlen(query);
	uint32_t i;

	for (i = 1; i <= 100; i++) {
		snprintf(match, sizeof(match), "uid=u1,arg:p=%u", i);
		fc_policy(t, i, match, i == 100 ? "1/m" : "5/m", "drop", 0, 0);
		off += (size_t)snprintf(query + off, sizeof(query) - off, "%sp=%u", i > 1 ? "&" : "", i);
	}
	fc_publish(t);
	assert_int_equal(fc_build(t, t->base, t->size), 0);
	snprintf(query + off, sizeof(query) - off, " uid=u1");
	fc_req(&t->ix, &rq, query);
	fc_l7_decide(&t->ix, &rq, T0, &res);
	assert_int_equal(res.verdict, FC_L7_ERROR); /* no memory given: nothing decided */
	assert_int_equal(res.matched, 100);
	for (i = 1; i <= 100; i++)
		assert_int_equal(t->ix.slots[i].passed + t->ix.slots[i].denied, 0);
	rq.alloc = &a;
	fc_l7_decide(&t->ix, &rq, T0, &res);
	assert_int_equal(res.verdict, FC_L7_PASS);
	for (i = 1; i <= 100; i++)
		assert_int_equal(t->ix.slots[i].passed, 1);
	/* The 100th policy, beyond any stack, denies the next one: all or none. */
	fc_l7_decide(&t->ix, &rq, T0, &res);
	assert_int_equal(res.verdict, FC_L7_REJECTED);
	assert_int_equal(res.policy, 100);
	for (i = 1; i < 100; i++)
		assert_int_equal(t->ix.slots[i].passed, 1);
	fc_arena_free(&arena);
}

/* Random policies over small domains, random requests: the index finds
 * exactly what checking every policy finds. */
static void test_matching_vs_naive(void **state)
{
	static const char *const uids[] = { "u1", "u2", "u3", "u4", "u5", "u6", "u7", "u8" };
	static const char *const vals[] = { "a", "b", "c", "d" };
	struct fc_t *t = *state;
	struct fc_policy_spec *specs = calloc(3000, sizeof(*specs));
	uint32_t got[64];
	struct fc_policy_row row;
	struct fc_l7_req rq;
	struct fc_err err;
	char match[256], req[256];
	unsigned seed = 7, n, i, j, k, naive;
	int used[3000], nused = 0;

	assert_non_null(specs);
	assert_int_equal(fc_store_begin(t->st, &err), 0);
	for (i = 0; i < 3000; i++) {
		size_t off = 0;

		match[0] = '\0';
		if (rand_r(&seed) % 2)
			off += (size_t)snprintf(match + off, sizeof(match) - off, "uid=%s,", uids[rand_r(&seed) % 8]);
		if (rand_r(&seed) % 2)
			off += (size_t)snprintf(match + off, sizeof(match) - off, "arg:p=%s,", vals[rand_r(&seed) % 4]);
		if (rand_r(&seed) % 2)
			off += (size_t)snprintf(match + off, sizeof(match) - off, "header:h=%s,", vals[rand_r(&seed) % 4]);
		if (rand_r(&seed) % 3 == 0)
			off += (size_t)snprintf(match + off, sizeof(match) - off, "uri=/%s,", vals[rand_r(&seed) % 4]);
		if (!off)
			off += (size_t)snprintf(match, sizeof(match), "uid=%s,", uids[rand_r(&seed) % 8]);
		if (rand_r(&seed) % 4 == 0)
			snprintf(match + off, sizeof(match) - off, "ip=198.18.%u.0/24,", rand_r(&seed) % 2);
		match[strlen(match) - 1] = '\0';
		specs[i].id = i + 1;
		if (fc_match_parse(match, &specs[i], &err) < 0 || fc_rates_parse("1000/s", &specs[i], &err) < 0)
			fail_msg("%s: %s", match, err.msg);
		if (fc_store_policy_put(t->st, &specs[i], 1, &row, &err) == 0)
			used[nused++] = (int)i; /* duplicates of a match are refused: fine */
	}
	assert_int_equal(fc_store_commit(t->st, &err), 0);
	fc_publish(t);
	assert_int_equal(fc_build(t, t->base, t->size), 0);
	assert_int_equal(t->ix.npolicies, (size_t)nused);

	for (k = 0; k < 2000; k++) {
		snprintf(req, sizeof(req), "uid=%s arg:p=%s header:h=%s uri=/%s ip=198.18.%u.5", uids[rand_r(&seed) % 8],
			 vals[rand_r(&seed) % 4], vals[rand_r(&seed) % 4], vals[rand_r(&seed) % 4], rand_r(&seed) % 3);
		fc_req(&t->ix, &rq, req);
		n = (unsigned)fc_l7_match(&t->ix, &rq, got, 64);
		assert_true(n <= 64);
		/* The naive way: every policy, every dimension. */
		for (i = 0, naive = 0; i < (unsigned)nused; i++) {
			const struct fc_policy_spec *p = &specs[used[i]];
			bool all = true;

			for (j = 0; j < (unsigned)p->ndims && all; j++) {
				const struct fc_dim *d = &p->dims[j];
				char want[300];

				snprintf(want, sizeof(want), " %s%s%s=%s ",
					 d->kind == FC_DIM_UID ? "uid" : d->kind == FC_DIM_ARG ? "arg:" :
					 d->kind == FC_DIM_HEADER ? "header:" : "uri",
					 d->name, "", d->value);
				{
					char padded[300];

					snprintf(padded, sizeof(padded), " %s ", req);
					all = strstr(padded, want) != NULL;
				}
			}
			if (all && p->kind == FC_MATCH_PREFIX)
				all = rq.family == 4 && rq.addr[2] == p->ip.a[2];
			if (all) {
				for (j = 0; j < n && t->ix.pol[got[j]].id != p->id; j++)
					;
				if (j == n)
					fail_msg("request \"%s\": index missed policy %u", req, p->id);
				naive++;
			}
		}
		assert_int_equal(n, naive);
	}
	free(specs);
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, fc_setup, fc_teardown)
	const struct CMUnitTest tests[] = {
		T(test_matching_vs_naive),
		T(test_decode),
		T(test_spelling),
		T(test_uri_spelling),
		T(test_many_matches),
	};
#undef T

	return fc_run_group("L7 engine: matching (decoding, arguments, indexed against naive)", tests, NULL, NULL);
}
