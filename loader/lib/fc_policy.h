/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Policies as users write them (freqctl policy add ID --match ... --rate ...)
 * and their canonical text (what the store keeps). What a node enforces of
 * one is fc_enforce.h's.
 */
#ifndef FC_POLICY_H
#define FC_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fc_error.h"
#include "fc_opt.h"
#include "fc_maps.h"
#include "fc_prefix.h"
#include "fc_shm.h"

#define FC_POLICY_ID_MAX 4294967295ULL
#define FC_TEXT_LEN      256

/* Where an ip=-only policy runs: XDP/TC unless told otherwise. A policy
 * with any other dimension runs in nginx. */
enum fc_layer {
	FC_LAYER_AUTO,
	FC_LAYER_XDP,
	FC_LAYER_HTTP,
};

enum fc_match_kind {
	FC_MATCH_NONE,   /* no --match given yet */
	FC_MATCH_PREFIX, /* ip=ADDR or ip=PREFIX: one bucket for all of it */
	FC_MATCH_STAR,   /* ip=*: a bucket per source unit (an IPv4 address, an IPv6 /64, or as chosen) */
	FC_MATCH_NO_IP,  /* no ip= dimension (an L7 policy) */
};

/* An L7 dimension: uid=V, arg:NAME=V, header:NAME=V (name lowercased), uri=V. */
struct fc_dim {
	enum fc_dim_kind kind;
	char name[FC_SHM_MAX_NAME + 1];
	char value[FC_SHM_MAX_VALUE + 1];
};

struct fc_rate {
	uint64_t n;         /* per unit */
	uint64_t unit_secs; /* 1, 60, 3600 or 86400 */
	uint64_t burst;     /* GCRA: N/UNIT:B; 0 = not given */
};

struct fc_policy_spec {
	uint32_t id;
	enum fc_match_kind kind;
	struct fc_prefix ip; /* FC_MATCH_PREFIX */
	/* FC_MATCH_STAR: the unit, a bucket per IPv4 /star_len4 and IPv6
	 * /star_len6; 0: the default (FC_STAR_LEN4, FC_STAR_LEN6), as the
	 * parser leaves a length equal to it (fc_star_len4/6 read them). */
	uint8_t star_len4, star_len6;
	struct fc_rate rate[FC_MAX_TIERS];
	int ntiers;
	uint64_t burst; /* --burst: the first rate's, as rate[0].burst; 0 = not given */
	enum fc_algo algo;
	enum fc_action action;
	enum fc_count count;
	uint64_t new_sources; /* ip=* only: new buckets per second; 0 = default */
	/* L7: any dimension besides ip= makes the policy one for nginx. */
	int ndims;
	struct fc_dim dims[FC_SHM_MAX_DIMS]; /* in canonical order */
	uint32_t delay_burst; /* action delay: requests that may wait */
	/* L7: a client address refused more than escalate.n times per unit is
	 * banned at XDP/TC for ban_ttl seconds (by the agent). */
	struct fc_rate escalate;
	int64_t ban_ttl;
	enum fc_layer layer;
	/* Per-key policies: keys at most (0: as the table holds), and new keys
	 * a second (0: FC_NEW_KEYS_DEFAULT). */
	uint32_t max_keys;
	uint32_t new_keys;
	/* L7: requests in flight at once, per key for a per-key policy (0: no
	 * cap). A policy may have it and no rate. */
	uint32_t concurrency;
	/* GCRA: after this many seconds idle the first rate starts at N/3 and
	 * rises to N over as long (0: no warm-up). */
	int64_t warmup;
	/* Where it matches, the matching policies of its layer more general
	 * than it do not apply (fc_policy_more_general). */
	bool override;
	/* Per-key policies: keep the values of the busiest keys beside their
	 * hashes: 1 --show-keys, -1 --no-show-keys, 0 not said (the default). */
	int show_keys;
	/* The rate is the whole fleet's, not this node's share (issue 29). */
	bool fleet;
};

static inline bool fc_policy_is_l7(const struct fc_policy_spec *p)
{
	return p->ndims > 0 || p->layer == FC_LAYER_HTTP;
}

/* Whether the match has ip= alone: then the layer is a choice (--layer). */
static inline bool fc_policy_ip_only(const struct fc_policy_spec *p)
{
	return (p->kind == FC_MATCH_PREFIX || p->kind == FC_MATCH_STAR) && !p->ndims;
}

/* The layer p runs at: FC_LAYER_XDP or FC_LAYER_HTTP, never auto. */
static inline enum fc_layer fc_policy_layer(const struct fc_policy_spec *p)
{
	return fc_policy_is_l7(p) ? FC_LAYER_HTTP : FC_LAYER_XDP;
}

/* Whether p is one bucket for every source of a family: ip=0.0.0.0/0 or
 * ip=::/0 alone. A new one needs --force (ban add refuses a /0 outright);
 * one stored is published, with a warning. */
static inline bool fc_policy_is_zero(const struct fc_policy_spec *p)
{
	return p->kind == FC_MATCH_PREFIX && !p->ndims && p->ip.len == 0;
}
/* What such a policy does, for a refusal or a warning: "ip=0.0.0.0/0 puts
 * every IPv4 source in one bucket: 20/s for all of them together, ...". */
void fc_policy_zero_what(const struct fc_policy_spec *p, char *buf, size_t len);

/* p's layer as it is written: auto when it is the one the match gives
 * anyway, so that two specs that run alike are alike (export, import's
 * diff, the store's rows read back). */
static inline enum fc_layer fc_policy_layer_said(const struct fc_policy_spec *p)
{
	return p->layer == (fc_policy_ip_only(p) ? FC_LAYER_XDP : FC_LAYER_HTTP) ? FC_LAYER_AUTO : p->layer;
}

static inline void fc_policy_layer_canon(struct fc_policy_spec *p)
{
	p->layer = fc_policy_layer_said(p);
}

/* An ip=* policy's unit: the prefix length of its buckets, per family. */
static inline uint8_t fc_star_len4(const struct fc_policy_spec *p)
{
	return p->star_len4 ? p->star_len4 : FC_STAR_LEN4;
}

static inline uint8_t fc_star_len6(const struct fc_policy_spec *p)
{
	return p->star_len6 ? p->star_len6 : FC_STAR_LEN6;
}

/* The unit in words, "IPv4 address and IPv6 /64" (for ip=*). */
#define FC_STAR_UNIT_STRLEN 48
void fc_star_unit_format(const struct fc_policy_spec *p, char buf[FC_STAR_UNIT_STRLEN]);

#define FC_NEW_SOURCES_DEFAULT 20000
/* A per-key (DIM=*) policy's new keys a second, past which requests share
 * its overflow bucket. */
#define FC_NEW_KEYS_DEFAULT 10000
/* --fleet --algo gcra: the fleet's burst B at most (design: B <= 2^32). */
#define FC_FLEET_BURST_MAX (1ULL << 32)
/* --concurrency at most: far past any worker_connections. */
#define FC_CONCURRENCY_MAX 100000000

/* Whether p keeps a bucket per value of some dimension (DIM=*, or ip=*
 * beside other dimensions). */
bool fc_policy_is_keyed(const struct fc_policy_spec *p);

int fc_policy_id_parse(const char *s, uint32_t *id, struct fc_err *err);
int fc_match_parse(const char *s, struct fc_policy_spec *p, struct fc_err *err);
/* N/UNIT, or N/UNIT:B where bursts are allowed (a policy's --rate). */
int fc_rate_parse(const char *s, struct fc_rate *r, bool burst_ok, struct fc_err *err);
/* Tier i's GCRA burst: its :B, or --burst for the first, or its N. */
uint64_t fc_tier_burst(const struct fc_policy_spec *p, int i);
/* The options of policy add and set, and the keys of a policy in JSON
 * (export, import, the console): one table, one set of bounds. */
extern const struct fc_opt fc_policy_opts[];

/* The names of each enum, by value, NULL-terminated. */
extern const char *const fc_algo_names[], *const fc_action_names[], *const fc_count_names[],
	*const fc_layer_names[];

int fc_algo_parse(const char *s, enum fc_algo *a, struct fc_err *err);
int fc_action_parse(const char *s, enum fc_action *a, struct fc_err *err);
int fc_count_parse(const char *s, enum fc_count *c, struct fc_err *err);
/* The 64-bit words a bucket of p keeps: one per rate, one for --warmup's
 * ramp, and a key's count of requests in flight for a per-key policy with
 * --concurrency (a bucket has FC_MAX_TIERS). */
int fc_policy_words(const struct fc_policy_spec *p);

/* Checks what a single option can not: combinations and the bounds that
 * keep the kernel's arithmetic exact. */
int fc_policy_validate(const struct fc_policy_spec *p, struct fc_err *err);
/* What a policy given now (a command, the console) must hold besides: what
 * was taken before and is stored still loads and runs as it did, and
 * fc_policy_note says what it does. */
int fc_policy_validate_new(const struct fc_policy_spec *p, struct fc_err *err);

/* The argument names and the header names nginx's policies use, as nginx
 * tells them apart (ASCII case folded; '.' an argument's '_', '_' a
 * header's '-'): it reads at
 * most FC_SHM_MAX_NAMES of each, and would leave a policy past them out. */
struct fc_names {
	char name[2][FC_SHM_MAX_NAMES][FC_SHM_MAX_NAME + 1];
	size_t n[2];
};
/* Adds nginx policy p's names to s (a policy at XDP/TC has none); -1 if one
 * is past the bound (err says which), the others added. */
int fc_names_add(struct fc_names *s, const struct fc_policy_spec *p, struct fc_err *err);
/* --action delay with --algo window or sliding: taken before, never delays. */
static inline bool fc_policy_delay_never(const struct fc_policy_spec *p)
{
	return p->action == FC_ACTION_DELAY && p->algo != FC_ALGO_GCRA;
}

const char *fc_algo_name(enum fc_algo a);
const char *fc_action_name(enum fc_action a);
const char *fc_count_name(enum fc_count c);
/* Canonical texts: "ip=198.18.0.0/15" or "ip=*" (and a unit that is not
 * the default after its star: /24, /32/56); "10/s:20,1000/d". */
/* Room for ip= plus every dimension at its longest. */
#define FC_MATCH_LEN (64 + FC_SHM_MAX_DIMS * (FC_SHM_MAX_NAME + FC_SHM_MAX_VALUE + 10))
void fc_match_format(const struct fc_policy_spec *p, char buf[FC_MATCH_LEN]);
void fc_rates_format(const struct fc_policy_spec *p, char buf[FC_TEXT_LEN]);
#define FC_RATE_STRLEN 48
void fc_rate_format(const struct fc_rate *r, char buf[FC_RATE_STRLEN]);
/* Parses fc_rates_format's text back. */
int fc_rates_parse(const char *s, struct fc_policy_spec *p, struct fc_err *err);

/* A node's weight as users write it: a number in (0, 1]. */
int fc_weight_parse(const char *s, double *w, struct fc_err *err);

#endif /* FC_POLICY_H */
