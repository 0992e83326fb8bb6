/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The L7 engine of the nginx module, in plain C so the unit tests drive the
 * very code nginx runs: reading a published shm block into a private index
 * (every byte untrusted), matching a request against it, and deciding.
 *
 * Matching is indexed: each policy is filed under one of its dimensions (the
 * first besides ip=, in canonical order); a request looks up each of its own
 * values, and only the policies filed there are checked in full. The cost
 * follows the policies a request could match, not how many exist.
 */
#ifndef FC_L7_H
#define FC_L7_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fc_shm.h"

#define FC_L7_MAX_NAMES   FC_SHM_MAX_NAMES /* distinct arg and header names policies may use */
#define FC_L7_MATCHES     64 /* matched policies decided without allocating; more are allocated */

struct fc_l7_str {
	const char *data;
	size_t len;
};

/* Memory for an index; the module gives a pool, the tests malloc. */
struct fc_l7_alloc {
	void *(*alloc)(void *ctx, size_t size); /* zeroed */
	void *ctx;
};

struct fc_l7_dim {
	uint8_t kind;     /* enum fc_dim_kind */
	uint8_t flags;    /* FC_SHM_DIM_ANY, FC_SHM_DIM_PREFIX */
	uint8_t name_idx; /* arg, header: into fc_l7_index.args / .headers */
	uint8_t family;   /* ip */
	uint8_t plen;
	uint8_t addr[16]; /* ip; else a value of up to 16 bytes is kept here, beside the rest */
	uint8_t unit4;    /* ip=*: its unit, a bucket per IPv4 /unit4 and IPv6 /unit6 */
	uint8_t unit6;
	struct fc_l7_str value;
};

/* The fields a request reads first come first: with 65,536 policies the
 * index is tens of MB, and each line touched can be a cache miss. */
struct fc_l7_policy {
	uint32_t id;
	uint32_t slot;
	uint32_t epoch;
	uint32_t delay_burst;
	uint32_t next; /* the next policy filed under the same key, or UINT32_MAX */
	uint8_t algo;
	uint8_t action; /* enum fc_action */
	uint8_t ntiers;
	uint8_t ndims;
	uint8_t anchor; /* the dimension it is filed under; UINT8_MAX: none (checked for every request) */
	uint8_t flags;  /* FC_POLICY_PRECISE */
	bool escalate;  /* report refused clients in the offender ring */
	bool keyed;     /* a bucket per key (a DIM=*): in the key table */
	uint32_t concurrency; /* places at most; 0: no cap */
	/* What the charge reads (fc_limit.h): the tiers, the warm-up, their
	 * generation and rescale, the first two by their own names too. */
	union {
		struct fc_limits lim;
		struct {
			struct fc_tier tier[FC_MAX_TIERS];
			uint32_t warmup_ms; /* GCRA --warmup; 0 = none */
		};
	};
	/* Per key: how long a key's state matters after a charge (see
	 * fc_key_lead), and whether an arg or header (key_vals) or the uid
	 * (key_uid) is a key part. */
	uint64_t key_lead_ns;
	/* A per-key policy's tag hash, its first word (slot, epoch) hashed
	 * with the index's key_secret: the same for each of its requests. */
	struct fc_sip key_sip;
	uint32_t max_keys, new_keys;
	bool key_vals, key_uid;
	bool show_keys; /* per key: its busiest keys' values in the value table */
	/* An override: the policies it switches off, ix->offs[off_at ..
	 * off_at + noff); FC_L7_OFF_LATE: too many to list, looked for among
	 * the request's matches instead. */
	uint32_t off_at, noff;
	/* --fleet (maps/fc_fleet.h): algo is FC_ALGO_FLEET_*, one tier (the
	 * fleet's N per unit), and a key's tag is its fleet tag (key_sip keyed
	 * by the fleet secret over id and epoch). This node's splits, a fixed
	 * key's point, the gcra lease window, and from the config file's
	 * header the clock offset and when the state was made. */
	bool fleet;
	uint32_t fixed_u;
	int64_t fleet_clock_ns;
	uint64_t fleet_fresh_ns;
	uint64_t lease_ns;
	struct fc_fleet_split split[2];
	struct fc_l7_dim dims[FC_SHM_MAX_DIMS];
};

#define FC_L7_OFF_LATE UINT32_MAX
/* The most entries the override lists of an index take (16 MiB): past it,
 * an override's list is not kept (FC_L7_OFF_LATE). */
#define FC_L7_MAX_OFFS (1u << 22)

/* A policy filed under no value, and what a request must have for it when
 * that is all its match asks (ip=*, uid=*, uri=*: FC_L7_HAS_*), read before
 * the policy; FC_L7_NEED_DIMS: its dimensions are read. */
struct fc_l7_loose {
	uint32_t pol;
	uint32_t need;
};

#define FC_L7_HAS_IP    0x1
#define FC_L7_HAS_UID   0x2
#define FC_L7_HAS_URI   0x4
#define FC_L7_NEED_DIMS 0x80000000u

struct fc_l7_entry {
	uint64_t hash;
	uint32_t head; /* first policy, UINT32_MAX when empty */
};

struct fc_l7_index {
	uint64_t seq;
	size_t npolicies;
	struct fc_l7_policy *pol;
	size_t cap; /* power of two */
	struct fc_l7_entry *tab;
	size_t nargs, nheaders;
	struct fc_l7_str args[FC_L7_MAX_NAMES];
	struct fc_l7_str headers[FC_L7_MAX_NAMES]; /* lowercase */
	bool has_uid, has_uri;
	bool uses_uri; /* some policy has a uri= (the module then drops its ';' parameters) */
	bool has_keys; /* some policy keeps a bucket per key */
	/* Bans are read in place, in the shm's ban table: a change of bans
	 * needs no rebuild. */
	const struct fc_shm_header *hdr;
	const struct fc_shm_ban_slot *bans;
	struct fc_shm_ring *ring;
	/* Fleet keys refused for lack of credit, for the agent (maps/fc_shm.h). */
	struct fc_shm_fleet_ring *fleet_ring;
	/* The state file's header: its counts of allowed and banned requests. */
	struct fc_shm_state_header *state_hdr;
	/* What was refused, for the log. */
	size_t skipped;
	char why[128];
	/* The stat slots, in the shm. */
	struct fc_shm_slot *slots;
	uint32_t nslots;
	/* Policies with no fixed value to file them under (a wildcard, a uri prefix):
	 * every request is checked against each. */
	struct fc_l7_loose *loose;
	size_t nloose;
	/* The key table of per-key policies, in the state file, and the values
	 * of the busiest keys of those with --show-keys. */
	struct fc_shm_key *keys;
	struct fc_shm_val *vals;
	uint32_t nkeys; /* a power of two, from the state file's size */
	uint64_t key_secret[2];
	/* Per policy, the last match that collected it: a policy is matched
	 * once however often its anchor value occurs. The index's own memory. */
	uint32_t *mark;
	uint32_t *gen;
	/* Overrides: what each switches off (fc_l7_policy.off_at), and per
	 * policy the last match in which a matching override switched it off. */
	bool has_override;
	bool marks; /* a policy filed under a value, or an override: the marks are kept */
	uint32_t *offs;
	uint32_t *off_mark;
};

/*
 * A worker's record of the concurrency places it holds (maps/fc_shm.h),
 * and which of its holds are free: private memory, FC_SHM_HOLDS entries.
 * Without a record (rec NULL) places are taken and given back all the same,
 * but a kill leaks what the worker held.
 */
struct fc_l7_holder {
	struct fc_shm_worker *rec;
	struct fc_shm_hold *holds;
	uint32_t *free;
	uint32_t nfree, used;
	uint64_t unrecorded; /* places taken with every hold in use */
};

/* A place a request holds, to give back when it ends (with the hold that
 * records it, or UINT32_MAX). */
struct fc_l7_place {
	uint64_t who;
	uint32_t slot;
	uint32_t where;
	uint32_t hold;
};

/* Builds ix from the config file mapped at base (size bytes, read-only) and
 * the state file at state (state_size bytes, read-write). Returns 0, or -1
 * with ix->why when the shm as a whole is not usable (then nothing is
 * enforced). Bad items are skipped and counted in ix->skipped. seq is
 * re-read at the end: if a publish raced the copy, -2 asks the caller to try
 * again. */
int fc_l7_build(const void *base, size_t size, void *state, size_t state_size, struct fc_l7_index *ix,
		const struct fc_l7_alloc *a);

/* One occurrence of an argument or a header that some policy names. */
struct fc_l7_val {
	uint8_t kind; /* FC_DIM_ARG or FC_DIM_HEADER */
	uint8_t idx;  /* into ix->args or ix->headers */
	struct fc_l7_str v;
};

/*
 * A request as the engine sees it. Values are matched as the application
 * behind nginx reads them: arguments percent-decoded ('+' a space), the uri
 * as nginx normalised it without its ';' parameters (fc_l7_uri_params; an
 * exact uri= ignores one trailing '/'); an argument or header given more
 * than once is every one of its values (deny-biased: the backend may read
 * any of them).
 *
 * So is the uid: given more than once (or under its name in another case),
 * each copy is one the backend may read. A ban on any copy refuses the
 * request; an allow entry needs every copy, and one of them exact
 * (uid_exact); a per-key policy keyed on the uid charges its overflow
 * bucket; a fixed uid= matches if any copy does.
 */
struct fc_l7_req {
	/* The user id, 0 bytes: none. Given more than once, uids holds every
	 * copy (nuids of them, uid the first, others may be empty), else nuids
	 * is 0 and uids is not read. */
	struct fc_l7_str uid;
	const struct fc_l7_str *uids;
	size_t nuids;
	struct fc_l7_str uri;
	const struct fc_l7_val *vals; /* fc_l7_args, then the module's headers */
	size_t nvals;
	uint8_t family; /* 0: no address */
	uint8_t addr[16];
	/* Some copy of the uid is exact (see Names below; a header's or a
	 * variable's always is): without one, no allow entry covers the uid. */
	bool uid_exact;
	const struct fc_l7_alloc *alloc; /* for a request matching more than FC_L7_MATCHES */
	char *keybuf; /* where the deciding key is written, for $freqctl_key (may be NULL) */
	size_t keycap;
	/* Concurrency: the worker's record (may be NULL), and room for the
	 * places taken (more are allocated). */
	struct fc_l7_holder *holder;
	struct fc_l7_place *places;
	size_t places_cap;
};

enum fc_l7_verdict {
	FC_L7_PASS,
	FC_L7_DELAYED,
	FC_L7_REJECTED,
	FC_L7_BANNED,
	FC_L7_ERROR, /* out of memory for the matches: nothing decided, nothing charged */
	FC_L7_ALLOWED, /* an allow entry covers the address or the uid: no ban, policy or cap applies */
};

/* Zeroed on every decision: kept within 80 bytes, which gcc zeroes with five
 * vector stores (past that, a rep stos costing ~8 ns more a decision). */
struct fc_l7_result {
	enum fc_l7_verdict verdict;
	uint32_t policy;   /* the deciding policy (REJECTED, DELAYED), 0 otherwise */
	uint64_t delay_ns; /* DELAYED: the longest wait */
	uint64_t retry_ns; /* REJECTED: until a retry could pass */
	uint64_t limit;    /* the deciding policy's first tier: N per window_s (while it warms up, the ramped N) */
	uint64_t window_s;
	uint64_t remaining;
	unsigned matched;     /* policies the request matched */
	unsigned overridden;  /* of them, switched off by a matching override (not charged, not counted) */
	unsigned would_deny;  /* log policies that would have denied it */
	uint32_t key_len;     /* the deciding policy's key, in rq->keybuf; 0: none */
	/* PASS, DELAYED: the places taken, to give back with fc_l7_give_back
	 * when the request ends (rq->places, or allocated). */
	struct fc_l7_place *places;
	uint32_t nplaces;
	bool uid_ban;         /* BANNED, ALLOWED: on the uid, else on the address */
	bool overflow;        /* the deciding bucket was a per-key policy's overflow bucket */
	bool concurrency;     /* REJECTED by a --concurrency cap (limit: its N; window_s 0) */
};

/* Percent-decodes len bytes of s into out, '+' as a space, an invalid
 * escape as written; returns the decoded length, or SIZE_MAX if it would
 * pass cap (never when cap >= len). */
size_t fc_l7_decode(const char *s, size_t len, char *out, size_t cap);

/* fc_l7_decode for a cookie's value: '+' stays a '+' (base64 ids hold it;
 * only PHP makes it a space, a uid no policy can name). */
size_t fc_l7_decode_cookie(const char *s, size_t len, char *out, size_t cap);

/*
 * Names. A name freqctl reads (the uid's in $cookie_NAME and $arg_NAME, an
 * arg:NAME) is any name an application could read as it: every framework
 * percent-decodes names ('+' a space), ASP.NET compares them without regard
 * to case, and PHP drops leading spaces, ends a name at a NUL (uid%00x is
 * uid), reads '.' and ' ' as '_', a '[' without a ']' after it as '_', and
 * NAME[...] as an array named NAME. Each such name is a copy of NAME.
 *
 * A copy is exact when every application reads it as NAME, and its value
 * as freqctl does: in a query, a pair between '&'s (or the query's ends)
 * whose name, percent-decoded ('+' a space), is NAME as configured, byte for
 * byte; in a Cookie line, a pair between ';'s whose name as sent (PHP 8.1.11
 * on, Django and Express decode no cookie name) is NAME, followed by '=' and
 * a value with no space or tab around it, no quotes and no '%' (Django
 * decodes no cookie value). Only an exact copy can make a request allowed
 * by its uid (fc_l7_req.uid_exact): a case-sensitive application sees no
 * uid at all in ?UID=partner.
 */

/* Writes the canonical form of a configured name s (len bytes) into out
 * (len bytes): ASCII letters lowercase, '.' and ' ' as '_'. */
void fc_l7_name_canon(const char *s, size_t len, char *out);

/* The canonical name a request's name s (len bytes, as sent) reads as, as
 * above, into out (cap bytes); returns its length, or SIZE_MAX if it would
 * pass cap. */
size_t fc_l7_name_read(const char *s, size_t len, char *out, size_t cap);

/* Whether byte c of a name as sent is byte n of a canonical name, when
 * neither decoding nor PHP's brackets are involved: the very byte (most
 * often), a letter in another case, or for '_' a '.' or ' '. */
static inline bool fc_l7_name_char(unsigned char c, unsigned char n)
{
	return c == n || ((c | 0x20) == n && n >= 'a' && n <= 'z') || (n == '_' && (c == '.' || c == ' '));
}

/* What each byte is to a query (fc_l7_qbyte). SEP: it ends a pair ('&', or
 * ';' as Rack 2 and Python before 3.9.2 split queries too); ESC:
 * fc_l7_decode changes it ('%', '+'); ODD: fc_l7_name_char can not judge it
 * alone (it decodes, may open an array ('['), or is a leading space PHP
 * drops: nginx lets a space into a URI); EQ: '='. */
#define FC_L7_Q_SEP 1
#define FC_L7_Q_ESC 2
#define FC_L7_Q_ODD 4
#define FC_L7_Q_EQ 8
/* Each file its own copy (256 bytes): read without going through the GOT. */
static const uint8_t fc_l7_qbyte[256] = {
	['&'] = FC_L7_Q_SEP,
	[';'] = FC_L7_Q_SEP,
	['%'] = FC_L7_Q_ESC | FC_L7_Q_ODD,
	['+'] = FC_L7_Q_ESC | FC_L7_Q_ODD,
	['['] = FC_L7_Q_ODD,
	[' '] = FC_L7_Q_ODD,
	['='] = FC_L7_Q_EQ,
};

#define FC_L7_ONES  0x0101010101010101ULL
#define FC_L7_HIGHS 0x8080808080808080ULL

/* The bytes of w equal to c, each as its top bit; exact up to the first of
 * them (a borrow from it may mark bytes above). */
static inline uint64_t fc_l7_bytes_eq(uint64_t w, unsigned char c)
{
	uint64_t x = w ^ (FC_L7_ONES * c);

	return (x - FC_L7_ONES) & ~x & FC_L7_HIGHS;
}

/* The 8 bytes of a query at s, or the 1 to 7 left before end followed by
 * ';': the query's last word shifted (q is the query's start), or, in a
 * query shorter than a word, read in pieces; never a byte past end. */
static inline __attribute__((always_inline)) uint64_t fc_l7_word(const unsigned char *q, const unsigned char *s,
								 const unsigned char *end)
{
	size_t left = (size_t)(end - s);
	uint64_t w;

	if (left >= 8) {
		memcpy(&w, s, 8);
		return le64toh(w);
	}
	if (end - q >= 8) {
		memcpy(&w, end - 8, 8);
		w = le64toh(w) >> (8 * (8 - left));
	} else {
		w = fc_sip_short(s, left);
	}
	return w | (FC_L7_ONES * ';') << (8 * left);
}

/* The end of a query's value at s: its first '&' or ';', or end; ORs into
 * *esc whether a '%' or a '+' comes before it. A word at a time (a uid is
 * often a 32-byte token), most often told by two tests: no byte below '-'
 * (so no '&', '%' or '+'), and where the first ';' is. */
static inline __attribute__((always_inline)) const unsigned char *
fc_l7_value_end(const unsigned char *q, const unsigned char *s, const unsigned char *end, uint64_t *esc)
{
	uint64_t w, semi, sep, e;

	for (; s < end; s += 8) {
		w = fc_l7_word(q, s, end);
		semi = fc_l7_bytes_eq(w, ';');
		if (!((w - FC_L7_ONES * '-') & ~w & FC_L7_HIGHS)) {
			if (semi)
				return s + __builtin_ctzll(semi) / 8;
			continue;
		}
		sep = semi | fc_l7_bytes_eq(w, '&');
		e = fc_l7_bytes_eq(w, '%') | fc_l7_bytes_eq(w, '+');
		if (sep) {
			*esc |= e & ((sep & -sep) - 1);
			return s + __builtin_ctzll(sep) / 8;
		}
		*esc |= e;
	}
	return end;
}

/* The end of a query's pair from s: its first '&' or ';', or end. Found
 * as nginx finds its '&' (memchr), with ';' looked for once (*semi, -1
 * until then): most queries hold none. */
const unsigned char *fc_l7_query_skip(const unsigned char *s, const unsigned char *end, int *semi);

/* fc_l7_query_find's look at the pair at p, in full, when it is not
 * NAME=VALUE as written: another name, or NAME alone, or NAME spelled with
 * escapes, brackets or spaces. Whether it is a copy (its value into *v, and
 * into *exact whether its decoded name is raw); *next is the pair's end. */
bool fc_l7_query_pair(const char *p, const char *end, const char *name, const char *raw, size_t nlen,
		      struct fc_l7_str *v, const char **next, bool *exact);

/*
 * Every copy of the argument name (canonical, nlen bytes, at least 1; raw:
 * as configured, nlen bytes) in the raw query q (len bytes; pairs split at
 * '&' and ';'), as above: the first cap values, as sent, into v (a pair
 * without '=' is an empty value). Returns how many copies there are, and
 * ORs into *enc whether one holds a '%' or a '+' (fc_l7_decode would change
 * it), into *exact whether one is exact (exact NULL: not looked at, as no
 * allow entry needs it; fc_l7_allows_uids). Inline, and NAME=VALUE as
 * written looked at first: the module reads the uid with it on every
 * request.
 */
static inline __attribute__((always_inline)) size_t
fc_l7_query_find(const char *q, size_t len, const char *name, const char *raw, size_t nlen, struct fc_l7_str *v,
		 size_t cap, bool *enc, bool *exact)
{
	const unsigned char *p = (const unsigned char *)q, *end = p + len, *s;
	struct fc_l7_str one, other;
	uint64_t seen = 0;
	const char *next;
	int semi = -1;
	size_t n = 0, i;
	bool ex, exacts = false;

	for (; p < end; p = s + 1) {
		if (!(fc_l7_qbyte[*p] & FC_L7_Q_ODD)) {
			/* Most pairs are another name from their first byte. */
			if (!fc_l7_name_char(*p, (unsigned char)name[0])) {
				s = fc_l7_query_skip(p, end, &semi);
				continue;
			}
			if ((size_t)(end - p) > nlen && p[nlen] == '=') {
				/* NAME as configured (exact), else in another case
				 * or with '.' for '_'. */
				i = 1;
				if (exact) {
					for (i = 0; i < nlen && p[i] == (unsigned char)raw[i]; i++)
						;
					ex = i == nlen;
				}
				for (; i < nlen && fc_l7_name_char(p[i], (unsigned char)name[i]); i++)
					;
				if (i == nlen) {
					/* NAME=VALUE as written: most often. */
					one.data = (const char *)p + nlen + 1;
					s = fc_l7_value_end((const unsigned char *)q, p + nlen + 1, end, &seen);
					one.len = (size_t)((const char *)s - one.data);
					goto copy;
				}
			}
			for (i = 1; i < nlen && p + i < end && fc_l7_name_char(p[i], (unsigned char)name[i]); i++)
				;
			s = p + i;
			if (s == end || !(fc_l7_qbyte[*s] & FC_L7_Q_ODD)) {
				/* s is past NAME's first bytes as written: '=' (after
				 * a name that differs), a separator or a byte more. */
				if (i < nlen || (s < end && !(fc_l7_qbyte[*s] & FC_L7_Q_SEP))) {
					/* Another name: what is written up to s is all
					 * it decodes to, and differs. */
					s = fc_l7_query_skip(s, end, &semi);
					continue;
				}
				one.data = (const char *)s; /* NAME alone: an empty value */
				one.len = 0;
				ex = false; /* no uid: never allowed */
				goto copy;
			}
		}
		/* A name with an escape, a bracket or a space. */
		if (!fc_l7_query_pair((const char *)p, (const char *)end, name, raw, nlen, &other, &next, &ex)) {
			s = (const unsigned char *)next;
			continue;
		}
		s = (const unsigned char *)next;
		one = other;
		for (i = 0; i < one.len; i++)
			seen |= fc_l7_qbyte[(unsigned char)one.data[i]] & FC_L7_Q_ESC;
copy:
		/* Between '&'s: PHP and most others split a query at '&' only. */
		if (exact)
			exacts |= ex && (p == (const unsigned char *)q || p[-1] == '&') && (s == end || *s == '&');
		if (n < cap)
			v[n] = one;
		n++;
	}
	*enc |= seen != 0;
	if (exact)
		*exact |= exacts;
	return n;
}

/* Whether an allow entry names a uid: only then does a request's uid need
 * its exactness (fc_l7_req.uid_exact; false when not looked at, which
 * allows nothing). */
static inline bool fc_l7_allows_uids(const struct fc_l7_index *ix)
{
	return __atomic_load_n(&ix->hdr->allow_plens[3], __ATOMIC_ACQUIRE) & FC_SHM_BAN_UIDS;
}

/* Every copy of the cookie name (canonical, nlen bytes; raw: as
 * configured) in the value of one Cookie header line h (len bytes), as
 * above: pairs split at ';' and ',' (nginx and Rack split at both), names
 * and values trimmed of spaces and tabs, a value in double quotes unquoted.
 * A quoted value holding a '\' is two copies, the second read as Python
 * reads it (fc_l7_cookie_unquote). The first cap values, as sent, into v,
 * and into py (may be NULL) whether each is Python's reading; returns how
 * many copies there are, and ORs into *enc whether one holds a '%' or is
 * Python's reading, into *exact whether one is exact. */
size_t fc_l7_cookie_find(const char *h, size_t len, const char *name, const char *raw, size_t nlen,
			 struct fc_l7_str *v, bool *py, size_t cap, bool *enc, bool *exact);

/* A quoted cookie value s (len bytes, quotes stripped) as Python's
 * http.cookies reads it (Django's parse_cookie, Werkzeug): '\' and three
 * octal digits (the first 0-3) a byte, '\' and another byte that byte, a
 * last '\' kept; into out (room for len bytes). Returns its length. */
size_t fc_l7_cookie_unquote(const char *s, size_t len, char *out);

/* Whether the lowercase name of a header line (len bytes) is the canonical
 * header name (lowercase, nlen bytes): '_' as '-', as nginx's $http_NAME
 * and CGI's HTTP_NAME read it. */
bool fc_l7_header_is(const char *low, size_t len, const char *name, size_t nlen);

/* Writes the path u (len bytes) into out (room for len; may be u) without
 * the ';' parameters of its segments (/login;jsessionid=1 is /login, as
 * servlet containers read it); returns its length. */
size_t fc_l7_uri_params(const char *u, size_t len, char *out);

/* The most values fc_l7_args can append for the query q: one per pair. */
size_t fc_l7_args_max(const char *q, size_t len);

/* Appends to vals every argument of the raw query q (pairs split at '&' and
 * ';') whose name reads as one a policy names (fc_l7_name_read), its value
 * decoded into buf (room for len bytes); returns how many. */
size_t fc_l7_args(const struct fc_l7_index *ix, const char *q, size_t len, char *buf, struct fc_l7_val *vals);

/* The index in ix->headers of the header line named lowname (lowercase), or
 * -1. */
int fc_l7_header_idx(const struct fc_l7_index *ix, const char *lowname, size_t len);

/* The policies rq matches in full (indexes into ix->pol), each once: the
 * first cap of them into out. Returns how many matched, which may be more
 * than cap. */
size_t fc_l7_match(const struct fc_l7_index *ix, const struct fc_l7_req *rq, uint32_t *out, size_t cap);

/* Whether policy q is more general than p: each dimension of q is *, or
 * covers p's value on it (the same value; an ip prefix holding p's address
 * or prefix; a uri prefix that p's path or uri prefix starts with). */
bool fc_l7_more_general(const struct fc_l7_policy *q, const struct fc_l7_policy *p);

/* Decides for rq at now (UTC ns, a clock that may lag by a few ms: the
 * module passes nginx's cached time; a policy marked FC_POLICY_PRECISE reads
 * CLOCK_REALTIME itself): allow entries (an allowed request is counted and
 * decided), bans (a banned one too), then every matching policy, all or
 * nothing; charges the stat slots, and notes the values of busy keys of
 * policies that keep them. */
void fc_l7_decide(const struct fc_l7_index *ix, const struct fc_l7_req *rq, uint64_t now, struct fc_l7_result *res);

/* Gives back the places pl[0..n) in the state file mapped at state
 * (state_size bytes; the one they were taken in), at now (UTC ns), and
 * frees their holds in h (may be NULL). A place whose bucket is not its
 * own any more (the policy changed its epoch, the key's entry was taken
 * back) is given back nowhere. */
void fc_l7_give_back(void *state, size_t state_size, struct fc_l7_holder *h, const struct fc_l7_place *pl, size_t n,
		     uint64_t now);

/* Claims a free worker record in the state file for the process id (see
 * fc_l7_worker_id), with free (FC_SHM_HOLDS entries) for its free holds.
 * -1: every record is in use (places go unrecorded). */
int fc_l7_holder_open(void *state, size_t state_size, uint64_t id, uint32_t *free, struct fc_l7_holder *h);

/* Gives back every place h still records and frees the record (a worker
 * leaving the file: exiting, or remapping a new one). */
void fc_l7_holder_close(void *state, size_t state_size, struct fc_l7_holder *h, uint64_t now);

/* Returns the places of every record whose owner is gone (alive says; NULL:
 * fc_l7_worker_alive), self's excepted. Returns how many places it gave back. */
size_t fc_l7_recover(void *state, size_t state_size, uint64_t self, uint64_t now, bool (*alive)(uint64_t id));

/* The record owner of process pid (FC_SHM_WORKER_ID), 0 if /proc does not say. */
uint64_t fc_l7_worker_id(int pid);

/* Whether the process of a record owner still runs: its pid with its start
 * time; a pid that can not be checked counts as running. */
bool fc_l7_worker_alive(uint64_t id);

/* Hashes a dimension value the way the index files it. */
uint64_t fc_l7_hash(uint8_t kind, uint8_t name_idx, const char *data, size_t len);

#endif /* FC_L7_H */
