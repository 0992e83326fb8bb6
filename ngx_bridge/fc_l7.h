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

#define FC_L7_MAX_NAMES   32 /* distinct arg and header names policies may use */
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
	struct fc_tier tier[FC_MAX_TIERS];
	/* Per key: how long a key's state matters after a charge (see
	 * fc_key_lead), and whether an arg or header is a key part. */
	uint64_t key_lead_ns;
	/* A per-key policy's tag hash, its first word (slot, epoch) hashed
	 * with the index's key_secret: the same for each of its requests. */
	struct fc_sip key_sip;
	uint32_t max_keys, new_keys;
	uint32_t warmup_ms; /* GCRA --warmup; 0 = none */
	bool key_vals;
	bool show_keys; /* per key: its busiest keys' values in the value table */
	/* An override: the policies it switches off, ix->offs[off_at ..
	 * off_at + noff); FC_L7_OFF_LATE: too many to list, looked for among
	 * the request's matches instead. */
	uint32_t off_at, noff;
	struct fc_l7_dim dims[FC_SHM_MAX_DIMS];
};

#define FC_L7_OFF_LATE UINT32_MAX
/* The most entries the override lists of an index take (16 MiB): past it,
 * an override's list is not kept (FC_L7_OFF_LATE). */
#define FC_L7_MAX_OFFS (1u << 22)

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
	bool has_keys; /* some policy keeps a bucket per key */
	/* Bans are read in place, in the shm's ban table: a change of bans
	 * needs no rebuild. */
	const struct fc_shm_header *hdr;
	const struct fc_shm_ban_slot *bans;
	struct fc_shm_ring *ring;
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
	uint32_t *loose;
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
 * behind nginx reads them: arguments and the uid percent-decoded ('+' a
 * space), the uri as nginx normalised it; an argument or header given more
 * than once is every one of its values (deny-biased: the backend may read
 * any of them).
 */
struct fc_l7_req {
	struct fc_l7_str uid;
	struct fc_l7_str uri;
	const struct fc_l7_val *vals; /* fc_l7_args, then the module's headers */
	size_t nvals;
	uint8_t family; /* 0: no address */
	uint8_t addr[16];
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

/* Whether byte c of a query is n of a lowercase name, as ngx_strncasecmp
 * compares (ASCII letters without regard to case): most often the very
 * byte. */
static inline bool fc_l7_name_char(unsigned char c, unsigned char n)
{
	return c == n || ((c | 0x20) == n && n >= 'a' && n <= 'z');
}

#define FC_L7_ONES  0x0101010101010101ULL
#define FC_L7_HIGHS 0x8080808080808080ULL

/* The bytes of w equal to c, each as its top bit; exact up to the first of
 * them (a borrow from it may mark bytes above). */
static inline uint64_t fc_l7_bytes_eq(uint64_t w, unsigned char c)
{
	uint64_t x = w ^ (FC_L7_ONES * c);

	return (x - FC_L7_ONES) & ~x & FC_L7_HIGHS;
}

/* The first argument named name (nlen bytes, lowercase) in the raw query q
 * (len bytes), as nginx's $arg_name reads it: the name matched without
 * regard to case at the start of q or after a '&', and followed by '=';
 * its value, undecoded, up to the next '&' into *v. *enc says whether the
 * value holds a '%' or a '+' (fc_l7_decode would change it). Returns
 * whether there is one. Inline: the module reads the uid with it on every
 * request. */
static inline bool fc_l7_arg(const char *q, size_t len, const char *name, size_t nlen, struct fc_l7_str *v, bool *enc)
{
	const unsigned char *p = (const unsigned char *)q, *end, *s;
	uint64_t w, amp, seen = 0;
	size_t i, left;

	if (len == 0) /* no query: q may be NULL, which memchr must not get */
		return false;
	for (end = p + len;;) {
		if ((size_t)(end - p) > nlen && p[nlen] == '=') {
			for (i = 0; i < nlen && fc_l7_name_char(p[i], (unsigned char)name[i]); i++)
				;
			if (i == nlen)
				break;
		}
		p = memchr(p, '&', (size_t)(end - p));
		if (!p)
			return false;
		p++;
	}
	/* The value's end and whether it holds a '%' or a '+', a word at a
	 * time: a short tail is read in pieces (never past end), its missing
	 * bytes made '&'. */
	for (s = p + nlen + 1;; s += 8) {
		left = (size_t)(end - s);
		if (left >= 8) {
			memcpy(&w, s, 8);
			w = le64toh(w);
		} else {
			w = fc_sip_short(s, left) | (FC_L7_ONES * '&') << (8 * left);
		}
		amp = fc_l7_bytes_eq(w, '&');
		if (amp) {
			seen |= (fc_l7_bytes_eq(w, '%') | fc_l7_bytes_eq(w, '+')) & ((amp & -amp) - 1);
			s += __builtin_ctzll(amp) / 8;
			break;
		}
		seen |= fc_l7_bytes_eq(w, '%') | fc_l7_bytes_eq(w, '+');
	}
	v->data = (const char *)p + nlen + 1;
	v->len = (size_t)(s - (p + nlen + 1));
	*enc = seen != 0;
	return true;
}

/* The most values fc_l7_args can append for the query q: one per '&'-pair. */
size_t fc_l7_args_max(const char *q, size_t len);

/* Appends to vals every argument of the raw query q whose decoded name a
 * policy names, its value decoded into buf (room for len bytes); returns how
 * many. */
size_t fc_l7_args(const struct fc_l7_index *ix, const char *q, size_t len, char *buf, struct fc_l7_val *vals);

/* The index of a header name (lowercase) in ix->headers, or -1. */
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
