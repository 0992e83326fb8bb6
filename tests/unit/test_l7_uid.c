// SPDX-License-Identifier: BSD-2-Clause
/*
 * The user id the engine decides on is the one the application reads:
 * every copy of its name in a query, a Cookie line or a header (names in
 * any case, escaped, PHP's spellings), checked against byte-by-byte
 * references on random input; and a uid given more than once is refused if
 * any copy is banned, allowed only if every copy is, charged to a per-user
 * policy's overflow bucket, and matches a fixed uid if any copy does.
 * arg:NAME and header:NAME read names the same way.
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

#include "fc_allow.h"
#include "fc_test.h"
#include "fc_test_l7.h"

/* The copies a finder returned, as text: "v1|v2|..." ("-" for none). */
static const char *fc_copies(const struct fc_l7_str *v, size_t n)
{
	static char out[512];
	size_t i, off = 0;

	out[0] = '\0';
	if (!n)
		return "-";
	for (i = 0; i < n; i++)
		off += (size_t)snprintf(out + off, sizeof(out) - off, "%s%.*s", i ? "|" : "", (int)v[i].len, v[i].data);
	return out;
}

static const char *fc_query_copies(const char *q, const char *name, bool *enc)
{
	struct fc_l7_str v[16];
	bool exact = false;
	size_t n;

	*enc = false;
	n = fc_l7_query_find(q, strlen(q), name, name, strlen(name), v, 16, enc, &exact);
	assert_true(n <= 16);
	return fc_copies(v, n);
}

/* Every copy of a query argument: the name in any case, escaped ('+' a
 * space, leading spaces dropped), '.' and ' ' as '_', NAME[...] an array of
 * NAME and an unclosed '[' a '_' (PHP), pairs split at '&' and ';' (Rack);
 * a name that only starts or ends like NAME is another. */
static void test_query_find(void **state)
{
	static const struct {
		const char *q, *name, *copies; /* "-": none */
		bool enc;
	} c[] = {
		{ "uid=u1", "uid", "u1", false },
		{ "UID=u1", "uid", "u1", false },
		{ "xuid=1&uid=2&uidx=3&uid2=4", "uid", "2", false },
		{ "a=uid=3", "uid", "-", false },
		{ "uid", "uid", "", false },
		{ "uid&uid=4", "uid", "|4", false },
		{ "uid=", "uid", "", false },
		{ "uid=a%20b&x=1", "uid", "a%20b", true },
		{ "uid=a+b", "uid", "a+b", true },
		{ "uid=1&uid=2", "uid", "1|2", false },
		{ "UID=z&uid=bob", "uid", "z|bob", false },
		{ "Uid=n1&uid=alice&uId=n2", "uid", "n1|alice|n2", false },
		{ "", "uid", "-", false },
		{ "ui", "uid", "-", false },
		{ "&uid=5&", "uid", "5", false },
		{ "x=%&uid=7&y=+", "uid", "7", false },
		{ "uid==", "uid", "=", false },
		{ "x=1;uid=bob", "uid", "bob", false },
		{ "uid=a;b", "uid", "a", false },
		{ "%75id=bob", "uid", "bob", false },
		{ "%55%49%44=bob&u%69d=x", "uid", "bob|x", false },
		{ "+uid=bob&%20%20uid=x", "uid", "bob|x", false },
		{ "u+id=bob", "uid", "-", false },
		{ "uid%3D=bob", "uid", "-", false },
		{ "uid[]=bob&uid[x]=y&uid%5B0%5D=z", "uid", "bob|y|z", false },
		{ "uid[=bob&uid]=x&[uid]=y", "uid", "-", false },
		{ "user.id=a&user_id=b&user+id=c&USER%2EID=d&user[id=e", "user_id", "a|b|c|d|e", false },
		{ "user[id]=a&user-id=b&userid=c", "user_id", "-", false },
		{ "uid=%zz&", "uid", "%zz", true },
		{ "uid=\x80\xff", "uid", "\x80\xff", false },
	};
	struct fc_l7_str v[2];
	size_t i;
	bool enc, exact = false;

	(void)state;
	for (i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		const char *got = fc_query_copies(c[i].q, c[i].name, &enc);

		if (strcmp(got, c[i].copies) || enc != c[i].enc)
			fail_msg("query \"%s\", name %s: copies \"%s\" enc %d, expected \"%s\" enc %d", c[i].q,
				 c[i].name, got, enc, c[i].copies, c[i].enc);
	}
	/* The query's end is its length, not a NUL; no query at all. */
	enc = false;
	assert_int_equal(fc_l7_query_find("uid=9", 3, "uid", "uid", 3, v, 2, &enc, &exact), 1);
	assert_int_equal(v[0].len, 0);
	assert_int_equal(fc_l7_query_find(NULL, 0, "uid", "uid", 3, v, 2, &enc, &exact), 0);
	/* More copies than room: counted all the same. */
	assert_int_equal(fc_l7_query_find("uid=1&uid=2&UID=3", 17, "uid", "uid", 3, v, 2, &enc, &exact), 3);
	assert_int_equal(v[1].len, 1);
}

/*
 * Whether a query holds an exact copy: one every application reads as NAME
 * as configured (raw), with freqctl's value. Decoding is universal; a name
 * in another case (ASP.NET's), PHP's renamings, an array, a ';' pair
 * (Rack's) or a value a ';' ends (PHP's runs on) are not.
 */
static void test_query_exact(void **state)
{
	static const struct {
		const char *q, *name, *raw;
		bool exact;
	} c[] = {
		{ "uid=partner", "uid", "uid", true },
		{ "a=1&uid=partner&b=2", "uid", "uid", true },
		{ "%75id=partner", "uid", "uid", true },
		{ "%75%69%64=partner&x=1", "uid", "uid", true },
		{ "UID=partner", "uid", "uid", false },
		{ "Uid=partner", "uid", "uid", false },
		{ "%55id=partner", "uid", "uid", false },
		{ "uid[x]=partner", "uid", "uid", false },
		{ "uid[]=partner", "uid", "uid", false },
		{ "uid%5Bx%5D=partner", "uid", "uid", false },
		{ "+uid=partner", "uid", "uid", false },
		{ "x=1;uid=partner", "uid", "uid", false },
		{ "uid=partner;x=1", "uid", "uid", false },
		{ "uid", "uid", "uid", false },
		{ "uid=", "uid", "uid", true }, /* exact, but empty: no uid, never allowed */
		{ "UID=partner&uid=partner", "uid", "uid", true },
		{ "u.id=partner", "u_id", "u_id", false },
		{ "u+id=partner", "u_id", "u_id", false },
		{ "u[id=partner", "u_id", "u_id", false },
		{ "u_id=partner", "u_id", "u_id", true },
		{ "u%5Fid=partner", "u_id", "u_id", true },
		{ "UID=partner", "uid", "UID", true },
		{ "uid=partner", "uid", "UID", false },
		{ "%55ID=partner", "uid", "UID", true },
	};
	struct fc_l7_str v[4];
	bool enc, exact;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		enc = exact = false;
		if (!fc_l7_query_find(c[i].q, strlen(c[i].q), c[i].name, c[i].raw, strlen(c[i].name), v, 4, &enc,
				      &exact))
			fail_msg("query \"%s\": no copy of %s", c[i].q, c[i].name);
		if (exact != c[i].exact)
			fail_msg("query \"%s\", name %s as %s: exact %d, expected %d", c[i].q, c[i].name, c[i].raw,
				 exact, c[i].exact);
	}
}

/* 0 to 39 random bytes of alphabet, in a buffer of exactly their length
 * (ASan sees a read past it); *len says how many. */
static char *fc_rand_text(unsigned *seed, const char *alphabet, size_t *len)
{
	size_t i, n = strlen(alphabet);
	char *t;

	*len = (size_t)rand_r(seed) % 40;
	t = malloc(*len ? *len : 1);
	assert_non_null(t);
	for (i = 0; i < *len; i++)
		t[i] = alphabet[(size_t)rand_r(seed) % n];
	return t;
}

/* s percent-decoded, '+' a space, byte by byte: a reference for
 * fc_l7_decode. */
static size_t fc_decode_ref(const char *s, size_t len, char *dec)
{
	size_t n = 0, i = 0;

	while (i < len) {
		if (s[i] == '%' && i + 2 < len && isxdigit((unsigned char)s[i + 1]) &&
		    isxdigit((unsigned char)s[i + 2])) {
			char hex[3] = { s[i + 1], s[i + 2], 0 };

			dec[n++] = (char)strtol(hex, NULL, 16);
			i += 3;
		} else {
			dec[n++] = s[i] == '+' ? ' ' : s[i];
			i++;
		}
	}
	return n;
}

/* A name as PHP, Rack and nginx read it, byte by byte: the reference for
 * fc_l7_name_read. */
static size_t fc_name_ref(const char *s, size_t len, char *out)
{
	char dec[256];
	size_t n = fc_decode_ref(s, len, dec), k, o = 0;
	char *open, *nul = memchr(dec, '\0', n);

	if (nul)
		n = (size_t)(nul - dec); /* PHP's names are C strings */
	for (k = 0; k < n && dec[k] == ' '; k++)
		;
	open = memchr(dec + k, '[', n - k);
	if (open && memchr(open, ']', (size_t)(dec + n - open)))
		n = (size_t)(open - dec); /* an array */
	for (; k < n; k++)
		out[o++] = dec[k] == '.' || dec[k] == ' ' || dec[k] == '[' ? '_' : (char)tolower((unsigned char)dec[k]);
	return o;
}

/* The query finder against the reference on random queries over the bytes
 * that matter, each in a buffer of exactly its length (ASan sees a read
 * past it): the same copies, in order, the same enc and exactness; and
 * the same copies and enc when not asked for exactness (exact NULL). */
static void test_query_random(void **state)
{
	static const char bytes[] = "uUiIdD_.=&;%+a[]5B20 \x80\xff";
	static const char *names[] = { "uid", "u_id", "d" }, *raws[] = { "uid", "u_id", "D" };
	struct fc_l7_str v[64], w[64];
	char canon[256], dec[256], *q;
	unsigned seed = 7;
	size_t len, i, round, n, k, e, eq, ref;
	bool enc, renc, nenc, exact, rexact;

	(void)state;
	for (round = 0; round < 200000; round++) {
		const char *name = names[round % 3], *raw = raws[round % 3];
		size_t nlen = strlen(name);

		q = fc_rand_text(&seed, bytes, &len);
		enc = exact = false;
		n = fc_l7_query_find(q, len, name, raw, nlen, v, 64, &enc, &exact);
		ref = 0;
		renc = rexact = false;
		for (i = 0; i < len; i = e + 1) {
			for (e = i; e < len && q[e] != '&' && q[e] != ';'; e++)
				;
			for (eq = i; eq < e && q[eq] != '='; eq++)
				;
			if (fc_name_ref(q + i, eq - i, canon) != nlen || memcmp(canon, name, nlen))
				continue;
			if (ref >= n)
				fail_msg("round %zu, name %s, query \"%.*s\": %zu copies, more in the reference", round,
					 name, (int)len, q, n);
			k = eq < e ? e - eq - 1 : 0;
			if (v[ref].len != k || (k && v[ref].data != q + eq + 1))
				fail_msg("round %zu copy %zu: length %zu, expected %zu", round, ref, v[ref].len, k);
			renc |= memchr(q + eq, '%', e - eq) || memchr(q + eq, '+', e - eq);
			rexact |= eq < e && (i == 0 || q[i - 1] == '&') && (e == len || q[e] == '&') &&
				  fc_decode_ref(q + i, eq - i, dec) == nlen && !memcmp(dec, raw, nlen);
			ref++;
		}
		assert_int_equal(n, ref);
		assert_int_equal(enc, renc && n);
		if (exact != rexact)
			fail_msg("round %zu, name %s as %s, query \"%.*s\": exact %d, expected %d", round, name, raw,
				 (int)len, q, exact, rexact);
		/* Not asked whether a copy is exact (the module, while no allow
		 * entry names a uid): the same copies. */
		nenc = false;
		assert_int_equal(fc_l7_query_find(q, len, name, raw, nlen, w, 64, &nenc, NULL), n);
		assert_int_equal(nenc, enc);
		if (n)
			assert_memory_equal(w, v, (n < 64 ? n : 64) * sizeof(*v));
		free(q);
	}
}

/* Every copy of a cookie in one Cookie line: pairs split at ';' and ',',
 * names and values trimmed, quotes taken off, names read as arguments'
 * are; enc when a copy holds a '%' ('+' is not decoded in a cookie). */
static void test_cookie_find(void **state)
{
	static const struct {
		const char *h, *copies;
		bool enc;
	} c[] = {
		{ "uid=bob", "bob", false },
		{ "UID=x; uid=bob", "x|bob", false },
		{ "a=1, uid=bob", "bob", false },
		{ "uid=x, uid=bob", "x|bob", false },
		{ " uid = bob ;a=1", "bob", false },
		{ "uid=\"bob\"", "bob", false },
		{ "uid=\"", "\"", false },
		{ "uid=\"bob", "\"bob", false },
		{ "%75id=b%6Fb", "b%6Fb", true },
		{ "uid=a+b", "a+b", false },
		{ "uid", "", false },
		{ "uid2=bob; xuid=bob; a=uid=bob; uid[]=y", "y", false },
		{ "\tuid\t=\tbob\t", "bob", false },
		{ ";;,,", "-", false },
		{ "", "-", false },
		{ "uid=a=b", "a=b", false },
	};
	struct fc_l7_str v[16];
	size_t i, n;
	bool enc, exact = false;

	(void)state;
	for (i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		enc = false;
		n = fc_l7_cookie_find(c[i].h, strlen(c[i].h), "uid", "uid", 3, v, NULL, 16, &enc, &exact);
		if (strcmp(fc_copies(v, n), c[i].copies) || enc != c[i].enc)
			fail_msg("Cookie \"%s\": copies \"%s\" enc %d, expected \"%s\" enc %d", c[i].h, fc_copies(v, n),
				 enc, c[i].copies, c[i].enc);
	}
	enc = false;
	assert_int_equal(fc_l7_cookie_find("uid=1; uid=2", 12, "uid", "uid", 3, v, NULL, 1, &enc, &exact), 2);
}

/*
 * Whether a Cookie line holds an exact copy: NAME as configured, as sent
 * (PHP 8.1.11 on, Django and Express decode no cookie name), '=' and a value
 * every one of them reads as freqctl does: no space around it (PHP keeps
 * them), no quotes (PHP keeps them), no '%' (Django decodes none), between
 * ';'s (only nginx and Rack split at ',').
 */
static void test_cookie_exact(void **state)
{
	static const struct {
		const char *h, *raw;
		bool exact;
	} c[] = {
		{ "uid=partner", "uid", true },
		{ "a=1; uid=partner; b=2", "uid", true },
		{ "a=1;\tuid=partner", "uid", true },
		{ "UID=partner", "uid", false },
		{ "%75id=partner", "uid", false },
		{ "u.id=partner", "u_id", false },
		{ "uid[x]=partner", "uid", false },
		{ "uid =partner", "uid", false },
		{ "uid= partner", "uid", false },
		{ "uid=partner ;a=1", "uid", false },
		{ "uid=\"partner\"", "uid", false },
		{ "uid=p%61rtner", "uid", false },
		{ "a=1, uid=partner", "uid", false },
		{ "uid=partner, a=1", "uid", false },
		{ "uid=partner; UID=partner", "uid", true },
		{ "UID=partner", "UID", true },
		{ "uid=partner", "UID", false },
	};
	struct fc_l7_str v[4];
	bool enc, exact;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		char name[8];

		fc_l7_name_canon(c[i].raw, strlen(c[i].raw), name);
		enc = exact = false;
		if (!fc_l7_cookie_find(c[i].h, strlen(c[i].h), name, c[i].raw, strlen(c[i].raw), v, NULL, 4, &enc, &exact))
			fail_msg("Cookie \"%s\": no copy of %s", c[i].h, c[i].raw);
		if (exact != c[i].exact)
			fail_msg("Cookie \"%s\", name %s: exact %d, expected %d", c[i].h, c[i].raw, exact, c[i].exact);
	}
}

/* The cookie finder against a byte-by-byte reference on random lines over
 * the bytes that matter: the same copies, in order, and the same enc. */
static void test_cookie_random(void **state)
{
	static const char bytes[] = "uUiIdD_.=;, \t\"%+[]5a";
	struct fc_l7_str v[64];
	char canon[256], *h;
	unsigned seed = 11;
	size_t len, i, round, n, e, eq, a, b, vs, ve, ref;
	bool enc, renc, exact, rexact;

	(void)state;
	for (round = 0; round < 200000; round++) {
		const char *raw = round % 2 ? "uid" : "uId";

		h = fc_rand_text(&seed, bytes, &len);
		enc = exact = false;
		n = fc_l7_cookie_find(h, len, "uid", raw, 3, v, NULL, 64, &enc, &exact);
		ref = 0;
		renc = rexact = false;
		for (i = 0; i < len; i = e + 1) {
			for (e = i; e < len && h[e] != ';' && h[e] != ','; e++)
				;
			for (eq = i; eq < e && h[eq] != '='; eq++)
				;
			for (a = i; a < eq && (h[a] == ' ' || h[a] == '\t'); a++)
				;
			for (b = eq; b > a && (h[b - 1] == ' ' || h[b - 1] == '\t'); b--)
				;
			if (fc_name_ref(h + a, b - a, canon) != 3 || memcmp(canon, "uid", 3))
				continue;
			vs = eq < e ? eq + 1 : e;
			for (ve = e; ve > vs && (h[ve - 1] == ' ' || h[ve - 1] == '\t'); ve--)
				;
			while (vs < ve && (h[vs] == ' ' || h[vs] == '\t'))
				vs++;
			if (ve - vs >= 2 && h[vs] == '"' && h[ve - 1] == '"')
				vs++, ve--;
			if (ref >= n || v[ref].len != ve - vs || (ve > vs && v[ref].data != h + vs))
				fail_msg("round %zu, Cookie \"%.*s\": copy %zu differs", round, (int)len, h, ref);
			renc |= memchr(h + vs, '%', ve - vs) != NULL;
			rexact |= eq < e && b == eq && b - a == 3 && !memcmp(h + a, raw, 3) && vs == eq + 1 &&
				  ve == e && !memchr(h + vs, '%', ve - vs) && (e == len || h[e] == ';') &&
				  (i == 0 || h[i - 1] == ';');
			ref++;
		}
		assert_int_equal(n, ref);
		assert_int_equal(enc, renc);
		if (exact != rexact)
			fail_msg("round %zu, name %s, Cookie \"%.*s\": exact %d, expected %d", round, raw, (int)len, h,
				 exact, rexact);
		free(h);
	}
}

/*
 * PHP reads a name as a C string (php_register_variable_ex): ?uid%00=bob and
 * ?uid%00x=bob are $_GET['uid']. Such a name is a copy of the part before
 * its NUL, never an exact one; a '[' is judged within that part only.
 */
static void test_query_nul_names(void **state)
{
	static const struct {
		const char *q, *name, *copies;
		bool exact;
	} c[] = {
		{ "uid=partner&uid%00=bob", "uid", "partner|bob", true },
		{ "uid%00=bob", "uid", "bob", false },
		{ "uid%00x=bob", "uid", "bob", false },
		{ "UID%00%00=bob", "uid", "bob", false },
		{ "uid%00[]=bob", "uid", "bob", false },
		{ "%00uid=bob", "uid", "-", false },
		{ "ui%00d=bob", "uid", "-", false },
		{ "uid[%00]=bob", "uid", "-", false },
		{ "uid[%00]=bob", "uid_", "bob", false },
		{ "+uid%00=bob", "uid", "bob", false },
	};
	struct fc_l7_str v[16];
	char out[16];
	bool enc, exact;
	size_t i, n;

	(void)state;
	for (i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		enc = exact = false;
		n = fc_l7_query_find(c[i].q, strlen(c[i].q), c[i].name, c[i].name, strlen(c[i].name), v, 16, &enc,
				     &exact);
		if (strcmp(fc_copies(v, n), c[i].copies) || exact != c[i].exact)
			fail_msg("query \"%s\", name %s: copies \"%s\" exact %d, expected \"%s\" exact %d", c[i].q,
				 c[i].name, fc_copies(v, n), exact, c[i].copies, c[i].exact);
	}
	assert_int_equal(fc_l7_name_read("uid%00x", 7, out, 3), 3);
	assert_int_equal(fc_l7_name_read("a[b%00]", 7, out, sizeof(out)), 3);
	assert_memory_equal(out, "a_b", 3);
}

/*
 * Python's http.cookies (Django's parse_cookie, Werkzeug) unquotes a
 * double-quoted value: "\142ob" and "b\ob" are bob. Such a value is two
 * copies, as the rest read it (quotes stripped) and as Python does; one
 * without a backslash is one copy, read alike by both.
 */
static void test_cookie_python(void **state)
{
	static const struct {
		const char *h, *readings; /* each copy as read, "|" between */
	} c[] = {
		{ "uid=\"\\142ob\"", "\\142ob|bob" },
		{ "uid=\"b\\ob\"", "b\\ob|bob" },
		{ "uid=\"\\b\\o\\b\"", "\\b\\o\\b|bob" },
		{ "uid=\"bob\"", "bob" },
		{ "uid=b\\ob", "b\\ob" },           /* not quoted: as sent */
		{ "uid=\"bob\\\"", "bob\\|bob\\" },   /* a last '\' is kept */
		{ "uid=\"\\400\"", "\\400|400" },     /* octal from \000 to \377 only */
		{ "uid=\"\\0a1\\12\"", "\\0a1\\12|0a112" },
		{ "uid=\"\\\\x\"", "\\\\x|\\x" },
		{ "uid=\"\\\"\"", "\\\"|\"" },
		{ "uid=\"\\142%6Fb\"", "\\142ob|b%6Fb" }, /* Python decodes no '%' */
		{ "a=1; uid=x, UID=\"\\141lice\"", "x|\\141lice|alice" },
	};
	struct fc_l7_str v[8];
	bool py[8], enc, exact;
	char buf[64], out[128], *p, *b;
	size_t i, k, n;

	(void)state;
	for (i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		enc = exact = false;
		memset(py, 1, sizeof(py));
		n = fc_l7_cookie_find(c[i].h, strlen(c[i].h), "uid", "uid", 3, v, py, 8, &enc, &exact);
		assert_true(n <= 8);
		for (k = 0, p = out, b = buf; k < n; k++) {
			struct fc_l7_str r = v[k];

			if (py[k] || memchr(r.data, '%', r.len)) {
				r.len = py[k] ? fc_l7_cookie_unquote(r.data, r.len, b) :
						fc_l7_decode_cookie(r.data, r.len, b, r.len);
				r.data = b;
				b += r.len;
			}
			p += sprintf(p, "%s%.*s", k ? "|" : "", (int)r.len, r.data);
		}
		*p = '\0';
		if (strcmp(out, c[i].readings))
			fail_msg("Cookie \"%s\": read as \"%s\", expected \"%s\"", c[i].h, out, c[i].readings);
		assert_false(exact && strchr(c[i].h, '"')); /* a quoted value never is */
		for (k = 0; k < n; k++)
			assert_true(enc || !py[k]); /* Python's reading is decoded */
	}
}

/* Names: the canonical form of a configured one, a header line's. */
static void test_names(void **state)
{
	char out[64];

	(void)state;
	fc_l7_name_canon("Api.Key", 7, out);
	assert_memory_equal(out, "api_key", 7);
	assert_int_equal(fc_l7_name_read("%41pi.KEY", 9, out, sizeof(out)), 7);
	assert_memory_equal(out, "api_key", 7);
	assert_int_equal(fc_l7_name_read("uid", 3, out, 2), SIZE_MAX);
	assert_int_equal(fc_l7_name_read("uid[a]", 6, out, 3), 3); /* the array's name fits */
	assert_int_equal(fc_l7_name_read("a[b[c", 5, out, sizeof(out)), 5);
	assert_memory_equal(out, "a_b_c", 5);
	assert_true(fc_l7_header_is("x-user", 6, "x-user", 6));
	assert_true(fc_l7_header_is("x_user", 6, "x-user", 6));
	assert_false(fc_l7_header_is("x-users", 7, "x-user", 6));
	assert_false(fc_l7_header_is("x-usex", 6, "x-user", 6));
}

/* ban uid=bob: any copy refuses; its spellings beside another uid too. */
static void test_uid_ban_copies(void **state)
{
	struct fc_t *t = *state;
	struct fc_uid_ban ub = { .uid = "bob", .created = 1 };
	struct fc_l7_result res;
	struct fc_err err;
	bool existed;

	assert_int_equal(fc_store_uid_ban_put(t->st, &ub, &existed, 1, &err), 0);
	fc_policy(t, 1, "uri=/x", "100/m", "drop", 0, 0); /* some policy, so the index is not empty */
	fc_publish(t);
	assert_int_equal(fc_build(t, t->base, t->size), 0);
	assert_int_equal(fc_decide(t, "uid=x uid=bob", T0, &res), FC_L7_BANNED);
	assert_true(res.uid_ban);
	assert_int_equal(fc_decide(t, "uid=bob uid=x", T0, NULL), FC_L7_BANNED);
	assert_int_equal(fc_decide(t, "uid= uid=bob", T0, NULL), FC_L7_BANNED);
	assert_int_equal(fc_decide(t, "uid=a uid=b uid=c uid=d uid=bob", T0, NULL), FC_L7_BANNED);
	assert_int_equal(fc_decide(t, "uid=x uid=y", T0, NULL), FC_L7_PASS);
	assert_int_equal(fc_decide(t, "uid=bobby", T0, NULL), FC_L7_PASS);
}

/* allow uid=partner, ban uid=bob and uid=* 1/h, published and read. */
static void fc_partner(struct fc_t *t)
{
	struct fc_uid_ban ub = { .uid = "bob", .created = 1 };
	struct fc_allow_row row;
	char canon[FC_BAN_TEXT_LEN];
	struct fc_err err;
	bool existed;

	assert_int_equal(fc_allow_text("uid=partner", &row, canon, &err), 0);
	row.created = 1;
	assert_int_equal(fc_store_allow_put(t->st, &row, 1, &existed, &err), 0);
	assert_int_equal(fc_store_uid_ban_put(t->st, &ub, &existed, 1, &err), 0);
	fc_policy(t, 1, "uid=*", "1/h", "drop", 1, 0);
	fc_publish(t);
	assert_int_equal(fc_build(t, t->base, t->size), 0);
}

/* allow uid=partner: every copy must be partner. */
static void test_uid_allow_copies(void **state)
{
	struct fc_t *t = *state;
	struct fc_l7_result res;

	fc_partner(t);
	assert_int_equal(fc_decide(t, "uid=partner", T0, &res), FC_L7_ALLOWED);
	assert_true(res.uid_ban);
	assert_int_equal(fc_decide(t, "uid=partner uid=partner", T0, NULL), FC_L7_ALLOWED);
	assert_int_equal(fc_decide(t, "uid~=partner uid=partner", T0, NULL), FC_L7_ALLOWED);
	/* Not allowed: limited, in the overflow bucket (1/h: one passes). */
	assert_int_equal(fc_decide(t, "uid=partner uid=attacker", T0, &res), FC_L7_PASS);
	assert_true(res.overflow);
	assert_int_equal(fc_decide(t, "uid=attacker uid=partner", T0, NULL), FC_L7_REJECTED);
	assert_int_equal(fc_decide(t, "uid=partner uid=", T0, NULL), FC_L7_REJECTED);
}

/*
 * allow uid=partner: a lone copy under a respelled name (?UID=partner,
 * ?uid[x]=partner) is no uid to a case-sensitive application, so it is not
 * allowed: it gets the policies, partner's own bucket of uid=* (limits and
 * bans take every reading); an exact copy beside it is allowed.
 */
static void test_uid_allow_exact(void **state)
{
	struct fc_t *t = *state;
	struct fc_l7_result res;

	fc_partner(t);
	assert_int_equal(fc_decide(t, "uid~=partner", T0, &res), FC_L7_PASS);
	assert_false(res.overflow);
	assert_int_equal(fc_decide(t, "uid~=partner", T0, NULL), FC_L7_REJECTED);
	assert_int_equal(fc_decide(t, "uid~=partner uid~=partner", T0, &res), FC_L7_PASS);
	assert_true(res.overflow);
	assert_int_equal(fc_decide(t, "uid=partner", T0, NULL), FC_L7_ALLOWED);
	assert_int_equal(fc_decide(t, "uid=partner uid~=partner", T0, NULL), FC_L7_ALLOWED);
	assert_int_equal(fc_decide(t, "uid~=bob", T0, &res), FC_L7_BANNED);
	assert_true(res.uid_ban);
}

/*
 * uid=* 2/h: a uid given more than once is charged to the policy's overflow
 * bucket, never to a key of its own (?Uid=nN&uid=alice would otherwise be a
 * new key each time), and $freqctl_key shows its copies; alice's own key is
 * untouched.
 */
static void test_uid_key_overflow(void **state)
{
	struct fc_t *t = *state;
	struct fc_l7_result res;
	char key[64], req[64];
	int i, passed = 0;

	fc_policy(t, 1, "uid=*", "2/h", "drop", 2, 0);
	fc_publish(t);
	assert_int_equal(fc_build(t, t->base, t->size), 0);
	for (i = 0; i < 5; i++) {
		snprintf(req, sizeof(req), "uid=n%d uid=alice", i);
		passed += fc_decide_key(t, req, T0, &res, key, sizeof(key)) == FC_L7_PASS;
		assert_true(res.overflow);
	}
	assert_int_equal(passed, 2);
	assert_int_equal(res.key_len, strlen("n4,alice"));
	assert_memory_equal(key, "n4,alice", res.key_len);
	assert_int_equal(t->ix.slots[1].overflowed, 5);
	assert_int_equal(fc_passes(t, "uid=alice", T0, 3), 2);
	assert_int_equal(fc_decide(t, "uid=alice", T0, &res), FC_L7_REJECTED);
	assert_false(res.overflow);
}

/* uid=carol 1/m: any copy matches (and a copy matched twice is one
 * charge); uid=carol,uri=/a checks its other dimension as ever. */
static void test_uid_fixed_any_copy(void **state)
{
	struct fc_t *t = *state;
	struct fc_l7_result res;

	fc_policy(t, 1, "uid=carol", "1/m", "drop", 1, 0);
	fc_policy(t, 2, "uid=dan,uri=/a", "1/m", "drop", 1, 0);
	fc_publish(t);
	assert_int_equal(fc_build(t, t->base, t->size), 0);
	assert_int_equal(fc_decide(t, "uid=x uid=carol uid=carol", T0, &res), FC_L7_PASS);
	assert_int_equal(res.matched, 1);
	assert_int_equal(fc_decide(t, "uid=carol", T0, &res), FC_L7_REJECTED);
	assert_int_equal(fc_decide(t, "uid=dan uid=y uri=/b", T0, &res), FC_L7_PASS);
	assert_int_equal(res.matched, 0);
	assert_int_equal(fc_decide(t, "uid=y uid=dan uri=/a", T0, &res), FC_L7_PASS);
	assert_int_equal(res.matched, 1);
	assert_int_equal(fc_decide(t, "uid=dan uri=/a", T0, &res), FC_L7_REJECTED);
}

/* arg:NAME and header:NAME read names as the uid's are read: arg:Mode is
 * ?mode= and ?MODE=, arg:api.key is PHP's api_key, header:X_Tok is X-Tok;
 * a key argument given twice in two spellings is the overflow bucket. */
static void test_names_policies(void **state)
{
	struct fc_t *t = *state;
	struct fc_l7_result res;

	fc_policy(t, 1, "arg:Mode=m", "1/m", "drop", 1, 0);
	fc_policy(t, 2, "arg:api.key=k", "1/m", "drop", 1, 0);
	fc_policy(t, 3, "header:X_Tok=t", "1/m", "drop", 1, 0);
	fc_policy(t, 4, "arg:k=*", "1/m", "drop", 1, 0);
	fc_publish(t);
	assert_int_equal(fc_build(t, t->base, t->size), 0);
	assert_int_equal(t->ix.nargs, 3);
	assert_int_equal(fc_decide(t, "query=mode=m", T0, NULL), FC_L7_PASS);
	assert_int_equal(fc_decide(t, "query=x=1;MODE=m", T0, NULL), FC_L7_REJECTED);
	assert_int_equal(fc_decide(t, "query=api[key=k", T0, NULL), FC_L7_PASS);
	assert_int_equal(fc_decide(t, "query=api_key=k", T0, NULL), FC_L7_REJECTED);
	assert_int_equal(fc_decide(t, "query=API%2Ekey=k", T0, NULL), FC_L7_REJECTED);
	assert_int_equal(fc_decide(t, "query=api.key%00x=k", T0, NULL), FC_L7_REJECTED); /* PHP's api_key */
	assert_int_equal(fc_decide(t, "header:x-tok=t", T0, NULL), FC_L7_PASS);
	assert_int_equal(fc_l7_header_idx(&t->ix, "x_tok", 5), 0);
	assert_int_equal(fc_decide(t, "header:x-tok=t", T0, NULL), FC_L7_REJECTED);
	assert_int_equal(fc_decide(t, "query=k=a&K=b", T0, &res), FC_L7_PASS);
	assert_true(res.overflow);
	assert_int_equal(fc_decide(t, "query=k[]=c&k=d", T0, &res), FC_L7_REJECTED);
	assert_true(res.overflow);
	assert_int_equal(fc_decide(t, "query=K=a", T0, &res), FC_L7_PASS);
	assert_false(res.overflow);
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, fc_setup, fc_teardown)
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_query_find),
		cmocka_unit_test(test_query_exact),
		cmocka_unit_test(test_query_random),
		cmocka_unit_test(test_query_nul_names),
		cmocka_unit_test(test_cookie_find),
		cmocka_unit_test(test_cookie_exact),
		cmocka_unit_test(test_cookie_random),
		cmocka_unit_test(test_cookie_python),
		cmocka_unit_test(test_names),
		T(test_uid_ban_copies),
		T(test_uid_allow_copies),
		T(test_uid_allow_exact),
		T(test_uid_key_overflow),
		T(test_uid_fixed_any_copy),
		T(test_names_policies),
	};
#undef T

	return fc_run_group("L7 engine: the user id (every copy, as applications read it)", tests, NULL, NULL);
}
