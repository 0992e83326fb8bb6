// SPDX-License-Identifier: BSD-2-Clause
/*
 * Publishing order (doc/architecture.md, Publishing order): a source that a
 * ban, a policy or an allow entry covers before and after a publish gets
 * the same verdict at every instant of it, at XDP, at TC and in nginx's
 * engine, whatever shape the rules change to.
 *
 * Cases, each a pair of store states published one into the other, both
 * ways, as a change (what changed) and whole: a ban set's /24 and /48 split
 * into /25s and /49s and merged back; an address ban and the ban of its
 * /24 (and /48); a ban moving to an allow entry that covers it, and back; a
 * policy moved between an address and its prefix; one ban set replaced by
 * another covering the same addresses; a prefix's policy changed and a ban
 * added under addresses whose entries carry the prefix's answer; each again
 * under an ip=* policy (its buckets' note of the rules); and random pairs of
 * rule sets.
 *
 * test_order_steps stops every publish after each write to a map or the
 * shm (fc_step_set) and there sends a frame from every source
 * through the real programs and a request through the engine: a source
 * whose verdict is the same before and after (drop or pass, the policies
 * charged, the engine's verdict) has it at every stop; one whose verdict
 * changes has the old one, then the new one, never the old one again, and
 * the new one once the publish is over.
 *
 * test_order_churn runs frames (XDP and TC) and requests (the engine, in a
 * thread of its own) from the covered sources without a pause while the
 * main thread republishes 120 times; none may get a wrong verdict.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>
#include <linux/bpf.h>
#include <linux/in.h>
#include <linux/pkt_cls.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include "fc_change.h"
#include "fc_feed.h"
#include "fc_l7.h"
#include "fc_publish.h"
#include "fc_step.h"
#include "fc_test.h"
#include "fc_test_bpf.h"

#define FC_LINES 16 /* lines of a state */
#define FC_SRCS 24  /* sources a case watches */
#define FC_POLS 4   /* policies a case names */

/* A case: two states of the store (lines "ban P", "allow P", "set NAME
 * P...", "policy ID MATCH"), published one into the other, and the sources
 * to watch. */
struct fc_case {
	const char *name;
	const char *st[2][FC_LINES];
	const char *src[FC_SRCS];
};

/* The issue's: a ban set of a /24 and a /48, and of their halves. */
static const struct fc_case fc_case_split = {
	"split",
	{ { "set s1 198.18.6.0/24 2001:db8:77::/48" },
	  { "set s1 198.18.6.0/25 198.18.6.128/25 2001:db8:77::/49 2001:db8:77:8000::/49" } },
	{ "198.18.6.1", "198.18.6.127", "198.18.6.128", "198.18.6.255", "198.18.7.1", "198.18.5.255", "2001:db8:77::1",
	  "2001:db8:77:7fff:ffff:ffff:ffff:ffff", "2001:db8:77:8000::1", "2001:db8:77:ffff:ffff:ffff:ffff:ffff",
	  "2001:db8:78::1", "2001:db8:76::1" },
};

/* An address ban and the ban of its /24 (its /48). */
static const struct fc_case fc_case_exact = {
	"exact<->prefix",
	{ { "ban 198.18.6.7", "ban 2001:db8:77::7" }, { "ban 198.18.6.0/24", "ban 2001:db8:77::/48" } },
	{ "198.18.6.7", "198.18.6.8", "198.18.7.7", "2001:db8:77::7", "2001:db8:77::8", "2001:db8:78::7" },
};

/* An address's ban, and an allow entry over its /24 (/48) instead: the
 * address is dropped before and passed after; its neighbours pass in both
 * (allowed after); inside a banned /16 (/32), the /24 (/48) goes from
 * dropped to allowed, and the rest of the /16 (/32) stays dropped; an
 * address's ban and an allow entry on the address itself, the same. */
static const struct fc_case fc_case_allow = {
	"ban<->allow",
	{ { "ban 198.18.6.7", "ban 2001:db8:77::7", "ban 198.19.0.0/16", "ban 198.19.6.7", "ban 2001:db9::/32",
	    "ban 2001:db8:78::9" },
	  { "allow 198.18.6.0/24", "allow 2001:db8:77::/48", "ban 198.19.0.0/16", "allow 198.19.6.0/24",
	    "ban 2001:db9::/32", "allow 2001:db9:0:1::/64", "allow 2001:db8:78::9" } },
	{ "198.18.6.7", "198.18.6.8", "198.18.7.7", "2001:db8:77::7", "2001:db8:77::8", "198.19.6.7", "198.19.6.8",
	  "198.19.7.7", "2001:db9:0:1::1", "2001:db9:0:2::1", "2001:db8:78::9" },
};

/* A policy moved between an address and its prefix (a new epoch, the same
 * policy): the address is charged to it once, before, after and between. */
static const struct fc_case fc_case_policy = {
	"policy exact<->prefix",
	{ { "policy 5 ip=198.18.6.7", "policy 6 ip=2001:db8:77::7" },
	  { "policy 5 ip=198.18.6.0/24", "policy 6 ip=2001:db8:77::/48" } },
	{ "198.18.6.7", "198.18.6.8", "198.18.7.7", "2001:db8:77::7", "2001:db8:77::8", "2001:db8:78::7" },
};

/* One ban set replaced by another covering the same addresses, in other
 * shapes, a policy on the /24 (/48) all along. */
static const struct fc_case fc_case_sets = {
	"set replaced",
	{ { "set s1 198.18.6.0/24 2001:db8:77::/48 198.18.9.9", "policy 5 ip=198.18.6.0/24",
	    "policy 6 ip=2001:db8:77::/48" },
	  { "set s2 198.18.6.0/26 198.18.6.64/26 198.18.6.128/25 2001:db8:77::/49 2001:db8:77:8000::/50 "
	    "2001:db8:77:c000::/50 198.18.9.0/24",
	    "policy 5 ip=198.18.6.0/24", "policy 6 ip=2001:db8:77::/48" } },
	{ "198.18.6.1", "198.18.6.64", "198.18.6.200", "198.18.9.9", "198.18.7.1", "2001:db8:77::1",
	  "2001:db8:77:8000::1", "2001:db8:77:c000::1", "2001:db8:77:ffff::1", "2001:db8:78::1" },
};

/* The same under an ip=* policy: its sources' buckets note what the
 * rules say of them, and a note made between two writes of a publish must
 * not outlive it. */
static const struct fc_case fc_case_split_star = {
	"split under ip=*",
	{ { "set s1 198.18.6.0/24 2001:db8:77::/48", "policy 9 ip=*", "policy 5 ip=198.18.6.0/24" },
	  { "set s1 198.18.6.0/25 198.18.6.128/25 2001:db8:77::/49 2001:db8:77:8000::/49", "policy 9 ip=*",
	    "policy 5 ip=198.18.6.0/24" } },
	{ "198.18.6.1", "198.18.6.128", "198.18.7.1", "2001:db8:77::1", "2001:db8:77:8000::1", "2001:db8:78::1" },
};

static const struct fc_case fc_case_policy_star = {
	"policy exact<->prefix under ip=*",
	{ { "policy 5 ip=198.18.6.7", "policy 6 ip=2001:db8:77::7", "policy 9 ip=*" },
	  { "policy 5 ip=198.18.6.0/24", "policy 6 ip=2001:db8:77::/48", "policy 9 ip=*" } },
	{ "198.18.6.7", "198.18.6.8", "2001:db8:77::7", "2001:db8:77::8" },
};

static const struct fc_case fc_case_allow_star = {
	"ban<->allow under ip=*",
	{ { "ban 198.18.6.7", "ban 198.19.0.0/16", "ban 198.19.6.7", "policy 9 ip=*" },
	  { "allow 198.18.6.0/24", "ban 198.19.0.0/16", "allow 198.19.6.0/24", "policy 9 ip=*" } },
	{ "198.18.6.7", "198.18.6.8", "198.19.6.7", "198.19.6.8", "198.19.7.7" },
};

/* Addresses with policies inside a limited /24 (their entries carry its
 * policy) when the /24's policy shrinks to a /25 and a /26 beside it is
 * banned: .7 stays charged to both, .200 goes from charged to dropped, .130
 * (no entry of its own) from the /24's policy to the /16's. */
static const struct fc_case fc_case_carry = {
	"prefix under carried answers",
	{ { "policy 5 ip=198.18.6.7", "policy 8 ip=198.18.6.200", "policy 6 ip=198.18.6.0/24",
	    "policy 7 ip=198.18.0.0/16" },
	  { "policy 5 ip=198.18.6.7", "policy 8 ip=198.18.6.200", "policy 6 ip=198.18.6.0/25",
	    "policy 7 ip=198.18.0.0/16", "ban 198.18.6.192/26" } },
	{ "198.18.6.7", "198.18.6.200", "198.18.6.130", "198.18.7.7" },
};

static const struct fc_case fc_case_carry_star = {
	"prefix under carried answers, under ip=*",
	{ { "policy 5 ip=198.18.6.7", "policy 8 ip=198.18.6.200", "policy 6 ip=198.18.6.0/24", "policy 9 ip=*" },
	  { "policy 5 ip=198.18.6.7", "policy 8 ip=198.18.6.200", "policy 6 ip=198.18.6.0/25",
	    "ban 198.18.6.192/26", "policy 9 ip=*" } },
	{ "198.18.6.7", "198.18.6.200", "198.18.6.130", "198.18.7.7" },
};

static const struct fc_case *const fc_cases[] = {
	&fc_case_split,       &fc_case_exact,       &fc_case_allow, &fc_case_policy,
	&fc_case_sets,        &fc_case_split_star,  &fc_case_policy_star, &fc_case_allow_star,
	&fc_case_carry,       &fc_case_carry_star,
};

/* ---- the store's states ---- */

/* Word i (0-based) of line, into out; false if it has none. */
static bool fc_word(const char *line, int i, char *out, size_t cap)
{
	const char *p = line, *e;

	for (;;) {
		while (*p == ' ')
			p++;
		if (!*p)
			return false;
		e = strchr(p, ' ');
		if (!e)
			e = p + strlen(p);
		if (!i--) {
			snprintf(out, cap, "%.*s", (int)(e - p), p);
			return true;
		}
		p = e;
	}
}

/* Whether s holds line itself. */
static bool fc_line_same(const char *const *s, const char *line)
{
	int i;

	for (i = 0; i < FC_LINES && s[i]; i++)
		if (!strcmp(s[i], line))
			return true;
	return false;
}

/* The line of state s of kind and first argument like line's, or NULL. */
static const char *fc_line_like(const char *const *s, const char *line)
{
	char k[32], a[64], k2[32], a2[64];
	int i;

	fc_word(line, 0, k, sizeof(k));
	fc_word(line, 1, a, sizeof(a));
	for (i = 0; i < FC_LINES && s[i]; i++)
		if (fc_word(s[i], 0, k2, sizeof(k2)) && fc_word(s[i], 1, a2, sizeof(a2)) && !strcmp(k, k2) &&
		    !strcmp(a, a2))
			return s[i];
	return NULL;
}

static void fc_prefix_of(const char *text, struct fc_prefix *p)
{
	struct fc_err err;

	if (fc_prefix_parse(text, p, &err) < 0)
		fail_msg("%s: %s", text, err.msg);
}

/* Takes out what line (of the state left) put in, unless the state coming
 * has the same kind of line on the same key. A publish is open: this never
 * fails the test itself, it returns -1 with err set. */
static int fc_line_undo(struct fc_publish *pub, const char *line, const char *const *next, struct fc_err *err)
{
	struct fc_allow_row al = { 0 };
	struct fc_ban_set set;
	struct fc_prefix p;
	char k[32], a[64];
	bool found;
	int rc = 0;

	if (fc_line_like(next, line))
		return 0;
	fc_word(line, 0, k, sizeof(k));
	fc_word(line, 1, a, sizeof(a));
	if (!strcmp(k, "ban")) {
		rc = fc_prefix_parse(a, &p, err);
		if (!rc)
			rc = fc_store_ban_del(pub->st, &p, &found, err);
	} else if (!strcmp(k, "allow")) {
		rc = fc_prefix_parse(a, &al.p, err);
		if (!rc)
			rc = fc_store_allow_del(pub->st, &al, &found, err);
	} else if (!strcmp(k, "set")) {
		rc = fc_store_set_get(pub->st, a, pub->now, &set, &found, err);
		if (!rc && found)
			rc = fc_store_set_del(pub->st, set.id, err);
	} else if (!strcmp(k, "policy")) {
		rc = fc_store_policy_del(pub->st, (uint32_t)atoi(a), &found, err);
	}
	return rc < 0 ? -1 : 0;
}

/* Puts line's rule into the store. Policies admit a million a second: they
 * never drop here, only count. Returns -1 with err set, as fc_line_undo. */
static int fc_line_do(struct fc_publish *pub, const char *line, struct fc_err *err)
{
	struct fc_allow_row al = { .created = pub->now };
	struct fc_ban_row ban = { .created = pub->now };
	struct fc_policy_spec pol = { 0 };
	struct fc_feed feed = { 0 };
	struct fc_set_result res;
	struct fc_policy_row row;
	char k[32], a[64], w[96];
	bool existed;
	int i, rc = 0;

	fc_word(line, 0, k, sizeof(k));
	fc_word(line, 1, a, sizeof(a));
	if (!strcmp(k, "ban")) {
		rc = fc_prefix_parse(a, &ban.p, err);
		if (!rc)
			rc = fc_store_ban_put(pub->st, &ban, err);
	} else if (!strcmp(k, "allow")) {
		rc = fc_prefix_parse(a, &al.p, err);
		if (!rc)
			rc = fc_store_allow_put(pub->st, &al, pub->now, &existed, err);
	} else if (!strcmp(k, "set")) {
		for (i = 2; !rc && fc_word(line, i, w, sizeof(w)); i++)
			rc = fc_feed_line(w, &feed, err);
		fc_feed_sort(&feed);
		if (!rc)
			rc = fc_set_replace(pub, a, feed.v, feed.n, 0, NULL, NULL, &res, err);
		fc_feed_free(&feed);
	} else if (!strcmp(k, "policy")) {
		pol.id = (uint32_t)atoi(a);
		fc_word(line, 2, w, sizeof(w));
		rc = fc_match_parse(w, &pol, err);
		if (!rc)
			rc = fc_rates_parse("1000000/s", &pol, err);
		if (!rc)
			rc = fc_policy_validate(&pol, err);
		if (!rc)
			rc = fc_store_policy_put(pub->st, &pol, pub->now, &row, err);
	} else {
		rc = fc_err_set(err, "no such kind of line");
	}
	return rc < 0 ? -1 : 0;
}

/* Makes the store hold the lines next instead of was, which it held, in one
 * change, and publishes it: only what changed, or everything (full). Sets
 * *delta to whether only what changed was published (a change of an allow
 * entry is published whole). Never fails the test itself (it runs while a
 * stop is set, and while threads send): returns -1 with err set, the
 * change abandoned. */
static int fc_lines_go(struct fc_env *env, const char *const *was, const char *const *next, bool full, bool *delta,
		       struct fc_err *err)
{
	const struct fc_ctx ctx = fc_env_ctx(env);
	const char *line = NULL;
	struct fc_publish pub;
	struct fc_err why;
	int i, rc = 0;

	if (fc_publish_begin_on(&pub, &ctx, env->st, err) < 0)
		return -1;
	for (i = 0; !rc && i < FC_LINES && was[i]; i++)
		rc = fc_line_undo(&pub, line = was[i], next, &why);
	/* A line both states hold is left as it is, as a user's change leaves
	 * it: its key is no change's, and what a change elsewhere does to its
	 * entry (a prefix's answer it carries) is the publisher's to find. */
	for (i = 0; !rc && i < FC_LINES && next[i]; i++)
		if (!fc_line_same(was, next[i]))
			rc = fc_line_do(&pub, line = next[i], &why);
	if (rc < 0) {
		fc_publish_abort(&pub);
		return fc_err_set(err, "%s: %s", line, why.msg);
	}
	pub.full = full;
	if (fc_publish_commit(&pub, &why) < 0)
		return fc_err_set(err, "publishing %s: %s", next[0] ? next[0] : "nothing", why.msg);
	if (delta)
		*delta = pub.delta;
	return 0;
}

/* Makes the store hold state to of c (it held the other one). */
static int fc_case_try(struct fc_env *env, const struct fc_case *c, int to, bool full, bool *delta, struct fc_err *err)
{
	return fc_lines_go(env, c->st[!to], c->st[to], full, delta, err);
}

/* The same where the test may fail at once (no stop set, no thread). */
static void fc_case_go(struct fc_env *env, const struct fc_case *c, int to, bool full)
{
	static const char *const none[FC_LINES];
	struct fc_err err;

	/* Whole, the first publish of a case: every line made, from nothing. */
	if (fc_lines_go(env, full ? none : c->st[!to], c->st[to], full, NULL, &err) < 0)
		fail_msg("%s: %s", c->name, err.msg);
}

/* Takes every rule of state from of c out of the store, and publishes that. */
static void fc_case_clear(struct fc_env *env, const struct fc_case *c, int from)
{
	static const char *const none[FC_LINES];
	struct fc_err err;

	if (fc_lines_go(env, c->st[from], none, false, NULL, &err) < 0)
		fail_msg("%s: %s", c->name, err.msg);
}

static void fc_case_print(const struct fc_case *c)
{
	int k, i;

	for (k = 0; k < 2; k++)
		for (i = 0; i < FC_LINES && c->st[k][i]; i++)
			print_message("%s state %d: %s\n", c->name, k, c->st[k][i]);
}

/* ---- verdicts ---- */

/* The nginx engine on the env's shm, as a worker reads it: the index
 * rebuilt when the config's seq moves, bans read in place. */
struct fc_engine {
	void *base, *state;
	size_t size, state_size;
	struct fc_l7_index ix;
	void *mem[64];
	size_t nmem;
	bool built;
};

/* NULL past its room: the build then fails, as out of memory. */
static void *fc_engine_alloc(void *ctx, size_t size)
{
	struct fc_engine *e = ctx;
	void *p;

	if (e->nmem == sizeof(e->mem) / sizeof(e->mem[0]) || !(p = calloc(1, size ? size : 1)))
		return NULL;
	e->mem[e->nmem++] = p;
	return p;
}

static void fc_engine_drop(struct fc_engine *e)
{
	while (e->nmem)
		free(e->mem[--e->nmem]);
	e->built = false;
}

/* Maps path read-write, as a worker does; NULL if it cannot. */
static void *fc_engine_map(const char *path, size_t *size)
{
	struct stat sb;
	void *p = MAP_FAILED;
	int fd = open(path, O_RDWR);

	if (fd >= 0 && fstat(fd, &sb) == 0) {
		*size = (size_t)sb.st_size;
		p = mmap(NULL, *size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	}
	if (fd >= 0)
		close(fd);
	return p == MAP_FAILED ? NULL : p;
}

/* The engine on env's shm and state file; false if either cannot be
 * mapped (it then holds nothing to close). Never fails the test itself:
 * the requests' thread opens one too. */
static bool fc_engine_open(struct fc_engine *e, const struct fc_env *env)
{
	char state[PATH_MAX];

	memset(e, 0, sizeof(*e));
	snprintf(state, sizeof(state), "%s%s", env->shm, FC_SHM_STATE_SUFFIX);
	e->base = fc_engine_map(env->shm, &e->size);
	e->state = fc_engine_map(state, &e->state_size);
	if (e->base && e->state)
		return true;
	if (e->base)
		munmap(e->base, e->size);
	if (e->state)
		munmap(e->state, e->state_size);
	e->base = e->state = NULL;
	return false;
}

static void fc_engine_close(struct fc_engine *e)
{
	fc_engine_drop(e);
	if (e->base)
		munmap(e->base, e->size);
	if (e->state)
		munmap(e->state, e->state_size);
	e->base = e->state = NULL;
}

/* The engine's verdict on a request from addr; FC_L7_ERROR if it could not
 * build its index. Never fails the test itself: it runs inside a publish's
 * stop and in a thread of its own. */
static enum fc_l7_verdict fc_engine_decide(struct fc_engine *e, const struct fc_prefix *addr)
{
	const struct fc_shm_header *h = e->base;
	struct fc_l7_alloc a = { fc_engine_alloc, e };
	struct fc_l7_result res;
	struct fc_l7_req rq = { .family = addr->family };
	struct timespec now;
	int rc, tries;

	for (tries = 0; !e->built || e->ix.seq != __atomic_load_n(&h->seq, __ATOMIC_ACQUIRE); tries++) {
		fc_engine_drop(e);
		rc = fc_l7_build(e->base, e->size, e->state, e->state_size, &e->ix, &a);
		if (rc == -1 || tries == 1000)
			return FC_L7_ERROR;
		e->built = rc == 0; /* -2: a publish raced the copy */
	}
	memcpy(rq.addr, addr->a, sizeof(rq.addr));
	clock_gettime(CLOCK_REALTIME, &now);
	fc_l7_decide(&e->ix, &rq, (uint64_t)now.tv_sec * 1000000000ULL + (uint64_t)now.tv_nsec, &res);
	return res.verdict;
}

/* A source's frame, built once. */
struct fc_src {
	const char *text;
	struct fc_prefix addr;
	uint8_t frame[FC_FRAME_MAX];
	size_t len;
};

static void fc_srcs_make(const struct fc_case *c, struct fc_src *s, size_t *n)
{
	size_t i;

	for (i = 0; i < FC_SRCS && c->src[i]; i++) {
		struct fc_frame_spec spec = { .src = c->src[i], .l4proto = IPPROTO_UDP };

		s[i].text = c->src[i];
		fc_prefix_of(c->src[i], &s[i].addr);
		s[i].len = fc_frame_build(&spec, s[i].frame);
		assert_true(s[i].len > 0);
	}
	*n = i;
}

/* ---- a verdict at every stop of a publish ---- */

/* What a source gets: its frame's fate at XDP and TC, what the two frames
 * charged each of the case's policies, the engine's verdict. */
struct fc_verdict {
	int rc[2];
	uint64_t charged[FC_POLS];
	enum fc_l7_verdict l7;
};

struct fc_steps {
	struct fc_env *env;
	const struct fc_case *c;
	struct fc_src src[FC_SRCS];
	size_t nsrc;
	uint32_t pol_id[FC_POLS], pol_slot[FC_POLS][2]; /* a policy's slot in each state */
	size_t npol;
	struct fc_engine eng;
	struct fc_verdict want[2][FC_SRCS]; /* in each state, settled */
	int from;                           /* the state a publish leaves */
	bool seen_new[FC_SRCS][3];          /* a source whose verdict changes: its new one seen (XDP, TC, engine) */
	bool end;                           /* the publish is over: every verdict is the new one */
	size_t stops, checks, deltas;
	char failure[1024]; /* the first wrong verdict: the test fails once the publish is over */
};

/* A policy slot's packets, passed and dropped (UINT64_MAX: unreadable). */
static uint64_t fc_charges(struct fc_steps *t, uint32_t slot)
{
	struct fc_pstats ps;
	struct fc_err err;

	if (!slot)
		return 0;
	if (fc_pstats_read(&t->env->maps, slot, &ps, &err) < 0)
		return UINT64_MAX;
	return ps.passed.packets + ps.dropped.packets;
}

static void fc_measure(struct fc_steps *t, size_t i, struct fc_verdict *v)
{
	uint64_t before[FC_POLS][2];
	size_t k;
	int tc, s;

	memset(v, 0, sizeof(*v));
	for (k = 0; k < t->npol; k++)
		for (s = 0; s < 2; s++)
			before[k][s] = fc_charges(t, t->pol_slot[k][s]);
	for (tc = 0; tc < 2; tc++)
		v->rc[tc] = fc_env_try_run(t->env, tc, t->src[i].frame, t->src[i].len);
	for (k = 0; k < t->npol; k++)
		for (s = 0; s < 2; s++)
			if (t->pol_slot[k][s] && (s == 0 || t->pol_slot[k][1] != t->pol_slot[k][0]))
				v->charged[k] += fc_charges(t, t->pol_slot[k][s]) - before[k][s];
	v->l7 = fc_engine_decide(&t->eng, &t->src[i].addr);
}

static void fc_verdict_text(const struct fc_steps *t, const struct fc_verdict *v, char *out, size_t cap)
{
	size_t k;
	int n = snprintf(out, cap, "xdp %d tc %d engine %d charged", v->rc[0], v->rc[1], (int)v->l7);

	for (k = 0; k < t->npol && n > 0 && (size_t)n < cap; k++)
		n += snprintf(out + n, cap - (size_t)n, " %u:%llu", t->pol_id[k], (unsigned long long)v->charged[k]);
}

/* One part of a changing verdict: the old one, or the new one, and once
 * the new one was seen never the old one again. */
static bool fc_moves(int v, int old, int new, bool *seen_new)
{
	if (old == new)
		return v == old;
	if (v == new)
		*seen_new = true;
	return v == new || (v == old && !*seen_new);
}

/* The stop: every source's verdict, against the settled ones; the first
 * wrong one noted (failing here would leave the publish half done).
 * FC_ORDER_TRACE=1 prints each write. */
static void fc_stop(const char *what, void *arg)
{
	struct fc_steps *t = arg;
	const struct fc_verdict *o, *n;
	struct fc_verdict v;
	char got[160], was[160], will[160];
	bool ok;
	size_t i;

	t->stops++;
	if (getenv("FC_ORDER_TRACE"))
		print_message("  stop %zu: %s\n", t->stops, what);
	for (i = 0; i < t->nsrc && !t->failure[0]; i++) {
		o = &t->want[t->from][i];
		n = &t->want[!t->from][i];
		fc_measure(t, i, &v);
		t->checks++;
		if (!memcmp(o, n, sizeof(*o)))
			ok = !memcmp(&v, o, sizeof(v));
		else if (t->end)
			ok = v.rc[0] == n->rc[0] && v.rc[1] == n->rc[1] && v.l7 == n->l7;
		else
			ok = fc_moves(v.rc[0], o->rc[0], n->rc[0], &t->seen_new[i][0]) &&
			     fc_moves(v.rc[1], o->rc[1], n->rc[1], &t->seen_new[i][1]) &&
			     fc_moves((int)v.l7, (int)o->l7, (int)n->l7, &t->seen_new[i][2]);
		if (ok)
			continue;
		fc_verdict_text(t, &v, got, sizeof(got));
		fc_verdict_text(t, o, was, sizeof(was));
		fc_verdict_text(t, n, will, sizeof(will));
		snprintf(t->failure, sizeof(t->failure),
			 "%s, state %d to %d, after write %zu (%s): %s got %s; before: %s; after: %s", t->c->name,
			 t->from, !t->from, t->stops, what, t->src[i].text, got, was, will);
	}
}

static void fc_steps_policies(struct fc_steps *t, int state)
{
	struct fc_policy_row row;
	struct fc_err err;
	char k[32], a[32];
	bool found;
	size_t i, j;

	for (i = 0; i < FC_LINES && t->c->st[state][i]; i++) {
		fc_word(t->c->st[state][i], 0, k, sizeof(k));
		if (strcmp(k, "policy"))
			continue;
		fc_word(t->c->st[state][i], 1, a, sizeof(a));
		for (j = 0; j < t->npol && t->pol_id[j] != (uint32_t)atoi(a); j++)
			;
		assert_true(j < FC_POLS);
		t->pol_id[j] = (uint32_t)atoi(a);
		t->npol += j == t->npol;
		if (fc_store_policy_get(t->env->st, t->pol_id[j], &row, &found, &err) < 0 || !found)
			fail_msg("policy %u: %s", t->pol_id[j], found ? err.msg : "not found");
		t->pol_slot[j][state] = row.slot;
	}
}

/*
 * Publishes c's states into each other, as a change and whole, both ways,
 * stopping after every write: at each stop, every source's verdict is
 * checked (fc_stop). Returns the stops.
 */
static size_t fc_steps_case(struct fc_env *env, const struct fc_case *c)
{
	struct fc_steps *t = calloc(1, sizeof(*t));
	struct fc_err err;
	size_t i, stops;
	bool delta;
	int r, rc;

	assert_non_null(t);
	t->env = env;
	t->c = c;
	fc_srcs_make(c, t->src, &t->nsrc);
	/* Settled verdicts, each state's measured once the other was published
	 * (its ip=* buckets' notes made). */
	for (r = 0; r < 4; r++) {
		fc_case_go(env, c, r % 2, r == 0);
		if (r < 2)
			fc_steps_policies(t, r);
		if (r == 0 && !fc_engine_open(&t->eng, env))
			fail_msg("%s: cannot map %s: %s", c->name, env->shm, strerror(errno));
		for (i = 0; r >= 2 && i < t->nsrc; i++)
			fc_measure(t, i, &t->want[r % 2][i]);
	}
	/* Now in state 1: to 0 and back, as a change, then whole. */
	for (r = 0; r < 4 && !t->failure[0]; r++) {
		t->from = r % 2 == 0;
		memset(t->seen_new, 0, sizeof(t->seen_new));
		fc_step_set(fc_stop, t);
		rc = fc_case_try(env, c, !t->from, r >= 2, &delta, &err);
		fc_step_set(NULL, NULL);
		if (rc < 0)
			fail_msg("%s: %s", c->name, err.msg);
		t->deltas += delta;
		t->end = true;
		fc_stop("the publish's end", t);
		t->end = false;
	}
	if (t->failure[0]) {
		fc_case_print(c);
		fail_msg("%s", t->failure);
	}
	fc_case_clear(env, c, 1);
	stops = t->stops;
	print_message("%s: %zu stops, %zu verdicts checked; 4 publishes, %zu of them of what changed\n", c->name, stops,
		      t->checks, t->deltas);
	fc_engine_close(&t->eng);
	free(t);
	return stops;
}

/* ---- random pairs of rule sets ---- */

/* A case of random rules, with the text it points at. */
struct fc_rcase {
	struct fc_case c;
	char line[2][FC_LINES][512];
	char src[FC_SRCS][FC_PREFIX_STRLEN];
	char name[32];
	struct fc_prefix rule[2][FC_LINES]; /* each line's prefix (a set's first) */
	size_t nrule[2];
	unsigned seed;
	bool allows; /* a change of one is published whole: half the cases have none */
	/* The policy on each prefix that has one, in either state: one per
	 * prefix, so that a change never meets two on one match. */
	struct fc_prefix pol_on[2 * FC_LINES];
	unsigned pol_id[2 * FC_LINES], npol;
};

static unsigned fc_rnd(struct fc_rcase *r, unsigned n)
{
	return (unsigned)(rand_r(&r->seed) % n);
}

/* A prefix around the anchors (198.18.6.0/24, 2001:db8:77::/48), of
 * lengths that nest and cross fc_top4's /16s and fc_pfx6's markers. */
static void fc_rnd_prefix(struct fc_rcase *r, struct fc_prefix *p)
{
	static const unsigned len4[] = { 8, 15, 16, 17, 20, 22, 23, 24, 24, 25, 25, 26, 28, 31, 32, 32 };
	static const unsigned len6[] = { 16, 31, 32, 33, 40, 47, 48, 48,  49,  49,
					 50, 56, 63, 64, 64, 72, 96, 127, 128, 128 };
	char text[64];
	struct fc_err err;

	if (fc_rnd(r, 2)) {
		snprintf(text, sizeof(text), "198.18.%u.%u", 4 + fc_rnd(r, 4), fc_rnd(r, 256));
		fc_prefix_of(text, p);
		p->len = (uint8_t)len4[fc_rnd(r, sizeof(len4) / sizeof(len4[0]))];
	} else {
		snprintf(text, sizeof(text), "2001:db8:77:%x:%x::%x", fc_rnd(r, 2) ? 0 : 0x8000 | fc_rnd(r, 4) << 8,
			 fc_rnd(r, 3), fc_rnd(r, 4));
		if (fc_prefix_parse_ex(text, p, false, &err) < 0)
			fail_msg("%s: %s", text, err.msg);
		p->len = (uint8_t)len6[fc_rnd(r, sizeof(len6) / sizeof(len6[0]))];
	}
	fc_prefix_mask(p->a, p->family == 4 ? 4 : 16, p->len);
}

/* A random address inside p. */
static void fc_rnd_inside(struct fc_rcase *r, const struct fc_prefix *p, char *out)
{
	struct fc_prefix a = *p;
	unsigned bits = p->family == 4 ? 32 : 128, i;

	for (i = p->len; i < bits; i++)
		if (fc_rnd(r, 2))
			a.a[i / 8] |= (uint8_t)(0x80 >> (i % 8));
	a.len = (uint8_t)bits;
	fc_prefix_format(&a, out);
}

/* The id of the policy on p (1 to 3) in a state whose ids in use are pol:
 * p's if it had one, else one the state does not use (which may have been
 * on another prefix in the other state: a policy moved); 0: none. */
static unsigned fc_rnd_policy_id(struct fc_rcase *r, const struct fc_prefix *p, const bool *pol)
{
	unsigned id, i;

	for (i = 0; i < r->npol; i++)
		if (!memcmp(&r->pol_on[i], p, sizeof(*p)))
			return pol[r->pol_id[i]] ? 0 : r->pol_id[i];
	for (id = 1 + fc_rnd(r, 3); id <= 3 && pol[id]; id++)
		;
	if (id > 3 || r->npol == 2 * FC_LINES)
		return 0;
	r->pol_on[r->npol] = *p;
	r->pol_id[r->npol++] = id;
	return id;
}

/* Line i of state k: a ban by hand, a member of ban set s1 or s2, an allow
 * entry or a policy (ids 1 to 3, one each at most), on a random prefix. */
static void fc_rnd_line(struct fc_rcase *r, int k, const struct fc_prefix *p, bool *pol)
{
	char text[FC_PREFIX_STRLEN], *l = r->line[k][r->nrule[k]];
	unsigned kind = fc_rnd(r, 10), id;

	fc_prefix_format(p, text);
	if (kind < 3) {
		snprintf(l, sizeof(r->line[0][0]), "ban %s", text);
	} else if (kind < 6) {
		snprintf(l, sizeof(r->line[0][0]), "set s%u %s", 1 + (kind == 5), text);
	} else if (kind < 8 && r->allows) {
		snprintf(l, sizeof(r->line[0][0]), "allow %s", text);
	} else if (kind < 8) {
		snprintf(l, sizeof(r->line[0][0]), "ban %s", text);
	} else {
		id = fc_rnd_policy_id(r, p, pol);
		if (!id) {
			snprintf(l, sizeof(r->line[0][0]), "ban %s", text);
		} else {
			pol[id] = true;
			snprintf(l, sizeof(r->line[0][0]), "policy %u ip=%s", id, text);
		}
	}
	r->rule[k][r->nrule[k]++] = *p;
}

/* A set's lines made one ("set s1 A", "set s1 B": "set s1 A B"). */
static void fc_rnd_sets(struct fc_rcase *r, int k)
{
	char name[16], other[16], w[FC_PREFIX_STRLEN];
	size_t i, j, o;

	for (i = 0; i < r->nrule[k]; i++) {
		if (!fc_word(r->line[k][i], 0, w, sizeof(w)) || strcmp(w, "set"))
			continue;
		fc_word(r->line[k][i], 1, name, sizeof(name));
		for (j = i + 1; j < r->nrule[k]; j++) {
			if (!fc_word(r->line[k][j], 0, w, sizeof(w)) || strcmp(w, "set") ||
			    !fc_word(r->line[k][j], 1, other, sizeof(other)) || strcmp(name, other))
				continue;
			fc_word(r->line[k][j], 2, w, sizeof(w));
			o = strlen(r->line[k][i]);
			snprintf(r->line[k][i] + o, sizeof(r->line[0][0]) - o, " %s", w);
			r->line[k][j][0] = '\0';
		}
	}
	for (i = j = 0; i < r->nrule[k]; i++)
		if (r->line[k][i][0]) {
			memmove(r->line[k][j], r->line[k][i], sizeof(r->line[0][0]));
			r->rule[k][j++] = r->rule[k][i];
		}
	r->nrule[k] = j;
}

/* The prefix q changed as republishing in another shape does: a half, the
 * prefix one shorter, the same, or a random one. */
static void fc_rnd_reshape(struct fc_rcase *r, const struct fc_prefix *p, struct fc_prefix *q)
{
	unsigned bits = p->family == 4 ? 32 : 128;

	*q = *p;
	switch (fc_rnd(r, 4)) {
	case 0:
		if (q->len < bits) {
			if (fc_rnd(r, 2))
				q->a[q->len / 8] |= (uint8_t)(0x80 >> (q->len % 8));
			q->len++;
		}
		break;
	case 1:
		if (q->len > 1)
			q->len--;
		fc_prefix_mask(q->a, bits / 8, q->len);
		break;
	case 2:
		break;
	default:
		fc_rnd_prefix(r, q);
	}
}

/* A random pair of states, the second often the first in other shapes,
 * and sources inside their rules and around them. */
static void fc_rnd_case(struct fc_rcase *r, unsigned seed, int n)
{
	struct fc_prefix p, q;
	bool pol[2][4] = { { false } };
	size_t i, k, ns = 0;
	bool star = !fc_rnd(r, 3);

	memset(r, 0, sizeof(*r));
	r->seed = seed;
	r->allows = fc_rnd(r, 2);
	snprintf(r->name, sizeof(r->name), "random %d", n);
	for (i = 0, k = 2 + fc_rnd(r, 5); i < k; i++) {
		fc_rnd_prefix(r, &p);
		fc_rnd_line(r, 0, &p, pol[0]);
		if (fc_rnd(r, 3)) {
			fc_rnd_reshape(r, &p, &q);
			fc_rnd_line(r, 1, &q, pol[1]);
		}
	}
	for (i = fc_rnd(r, 3); i > 0; i--) {
		fc_rnd_prefix(r, &p);
		fc_rnd_line(r, 1, &p, pol[1]);
	}
	for (k = 0; k < 2; k++) {
		fc_rnd_sets(r, (int)k);
		if (star)
			snprintf(r->line[k][r->nrule[k]++], sizeof(r->line[0][0]), "policy 9 ip=*");
		for (i = 0; i < r->nrule[k]; i++)
			r->c.st[k][i] = r->line[k][i];
	}
	for (k = 0; k < 2; k++)
		for (i = 0; i < r->nrule[k] && ns < FC_SRCS - 2; i++)
			if (r->rule[k][i].family)
				fc_rnd_inside(r, &r->rule[k][i], r->src[ns++]);
	for (i = 0; i < 2; i++) {
		fc_rnd_prefix(r, &p);
		fc_rnd_inside(r, &p, r->src[ns++]);
	}
	for (i = 0; i < ns; i++)
		r->c.src[i] = r->src[i];
	r->c.name = r->name;
}

/* ---- frames and requests through republishes ---- */

struct fc_churn {
	struct fc_env *env;
	struct fc_src *src;
	size_t nsrc;
	const bool *drop;  /* per source: dropped (banned) before and after */
	const bool *watch; /* per source: the same verdict before and after */
	atomic_bool stop;
	uint64_t frames, wrong_frames, requests, wrong_requests;
	char first_wrong[160], first_wrong_request[160];
};

static void *fc_churn_frames(void *arg)
{
	struct fc_churn *ch = arg;
	size_t i;
	int tc, rc;

	while (!atomic_load(&ch->stop)) {
		for (i = 0; i < ch->nsrc; i++) {
			if (!ch->watch[i])
				continue;
			for (tc = 0; tc < 2; tc++) {
				rc = fc_env_try_run(ch->env, tc, ch->src[i].frame, ch->src[i].len);
				ch->frames++;
				if (rc == (ch->drop[i] ? (tc ? TC_ACT_SHOT : XDP_DROP) : (tc ? TC_ACT_OK : XDP_PASS)))
					continue;
				if (!ch->wrong_frames++)
					snprintf(ch->first_wrong, sizeof(ch->first_wrong),
						 "%s at %s: verdict %d, expected %s", ch->src[i].text,
						 tc ? "TC" : "XDP", rc, ch->drop[i] ? "drop" : "pass");
			}
		}
	}
	return NULL;
}

static void *fc_churn_requests(void *arg)
{
	struct fc_churn *ch = arg;
	struct fc_engine e;
	enum fc_l7_verdict v;
	size_t i;

	if (!fc_engine_open(&e, ch->env)) {
		snprintf(ch->first_wrong_request, sizeof(ch->first_wrong_request), "cannot map %s: %s", ch->env->shm,
			 strerror(errno));
		ch->wrong_requests++;
		return NULL;
	}
	while (!atomic_load(&ch->stop)) {
		for (i = 0; i < ch->nsrc; i++) {
			if (!ch->watch[i])
				continue;
			v = fc_engine_decide(&e, &ch->src[i].addr);
			ch->requests++;
			if (v != FC_L7_ERROR && (v == FC_L7_BANNED) == ch->drop[i])
				continue;
			if (!ch->wrong_requests++)
				snprintf(ch->first_wrong_request, sizeof(ch->first_wrong_request),
					 "%s in the engine: verdict %d, expected %s", ch->src[i].text, (int)v,
					 ch->drop[i] ? "banned" : "not banned");
		}
	}
	fc_engine_close(&e);
	return NULL;
}

/* Whether frames from s are dropped at XDP. */
static bool fc_src_dropped(struct fc_env *env, const struct fc_src *s)
{
	return fc_env_run(env, false, s->frame, s->len) == XDP_DROP;
}

/*
 * Republishes c's two states into each other rounds times (a change, then
 * everything, by turns of two), frames from every source whose verdict is
 * the same in both running at XDP and TC all the while, and requests
 * through the engine: none may get another verdict.
 */
static void fc_churn_case(struct fc_env *env, const struct fc_case *c, int rounds)
{
	struct fc_churn ch = { .env = env };
	struct fc_src src[FC_SRCS];
	bool drop[2][FC_SRCS], watch[FC_SRCS];
	pthread_t frames, requests;
	struct fc_err err;
	size_t i, n;
	int r, rc = 0;
	bool sending;

	fc_srcs_make(c, src, &n);
	for (r = 0; r < 2; r++) {
		fc_case_go(env, c, r, r == 0);
		for (i = 0; i < n; i++)
			drop[r][i] = fc_src_dropped(env, &src[i]);
	}
	for (i = 0; i < n; i++)
		watch[i] = drop[0][i] == drop[1][i];
	ch.src = src;
	ch.nsrc = n;
	ch.drop = drop[0];
	ch.watch = watch;
	/* The test fails only once both threads are gone: they read ch. */
	if (pthread_create(&frames, NULL, fc_churn_frames, &ch))
		fail_msg("%s: no thread for the frames", c->name);
	sending = !pthread_create(&requests, NULL, fc_churn_requests, &ch);
	for (r = 0; sending && rc == 0 && r < rounds; r++)
		rc = fc_case_try(env, c, r % 2, r / 2 % 2, NULL, &err);
	atomic_store(&ch.stop, true);
	pthread_join(frames, NULL);
	if (!sending)
		fail_msg("%s: no thread for the requests", c->name);
	pthread_join(requests, NULL);
	if (rc < 0)
		fail_msg("%s: republish %d: %s", c->name, r, err.msg);
	print_message("%s: %d republishes; %llu frames, %llu wrong; %llu requests, %llu wrong\n", c->name, rounds,
		      (unsigned long long)ch.frames, (unsigned long long)ch.wrong_frames,
		      (unsigned long long)ch.requests, (unsigned long long)ch.wrong_requests);
	if (ch.wrong_frames || ch.wrong_requests)
		fail_msg("%s: %llu of %llu frames and %llu of %llu requests got another verdict (first: %s)", c->name,
			 (unsigned long long)ch.wrong_frames, (unsigned long long)ch.frames,
			 (unsigned long long)ch.wrong_requests, (unsigned long long)ch.requests,
			 ch.wrong_frames ? ch.first_wrong : ch.first_wrong_request);
	assert_true(ch.frames > 0 && ch.requests > 0);
	fc_case_clear(env, c, (rounds - 1) % 2);
}

static void test_order_steps(void **state)
{
	size_t i;

	FC_REQUIRE_BPF();
	for (i = 0; i < sizeof(fc_cases) / sizeof(fc_cases[0]); i++)
		assert_true(fc_steps_case(*state, fc_cases[i]) > 4);
}

/* Random pairs of rule sets, each published into the other, stopped after
 * every write. FC_ORDER_RANDOM (default 25) and FC_ORDER_SEED (default: the
 * time, printed) make a run again. */
static void test_order_steps_random(void **state)
{
	const char *nv = getenv("FC_ORDER_RANDOM"), *sv = getenv("FC_ORDER_SEED");
	unsigned seed = sv ? (unsigned)strtoul(sv, NULL, 10) : (unsigned)time(NULL);
	int n = nv ? atoi(nv) : 25, i;
	struct fc_rcase *r = calloc(1, sizeof(*r));

	FC_REQUIRE_BPF();
	assert_non_null(r);
	print_message("seed %u (FC_ORDER_SEED=%u runs this again)\n", seed, seed);
	for (i = 0; i < n; i++) {
		fc_rnd_case(r, seed + (unsigned)i, i);
		fc_steps_case(*state, &r->c);
	}
	free(r);
}

static void test_order_churn(void **state)
{
	size_t i;

	FC_REQUIRE_BPF();
	for (i = 0; i < sizeof(fc_cases) / sizeof(fc_cases[0]); i++)
		fc_churn_case(*state, fc_cases[i], 120);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_order_steps, fc_env_setup, fc_env_teardown),
		cmocka_unit_test_setup_teardown(test_order_steps_random, fc_env_setup, fc_env_teardown),
		cmocka_unit_test_setup_teardown(test_order_churn, fc_env_setup, fc_env_teardown),
	};

	return fc_run_group("order", tests, NULL, NULL);
}
