// SPDX-License-Identifier: BSD-2-Clause
/*
 * The lease engine (see fc_fleet_engine.h): the round of design §8.1 for
 * window policies, nginx keys and fixed-value L7 slots. Everything read
 * from the state file is the workers' say-so: a ring entry is tracked only
 * when its entry, tag, slot, epoch and window agree with what the agent
 * knows, and credit words are changed only by the CAS operations of
 * maps/fc_fleet.h, which bound their tries and their arithmetic.
 */
#include <errno.h>
#include <fcntl.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <time.h>

#include "fc_fleet_beat.h"
#include "fc_fleet_engine.h"
#include "fc_fleet_map.h"
#include "fc_fleet_sub.h"
#include "fc_grow.h"
#include "fc_keytab.h"
#include "fc_shm.h"

#define FC_FLEET_FIXED UINT32_MAX /* a key's index: the policy's slot, not a key entry */
#define FC_FLEET_FAILS 3          /* failed rounds in a row before degraded */
#define FC_FLEET_LAT_N 100        /* rounds the latency figures are over */

enum {
	FC_KEY_ADOPT = 1 << 0,    /* the agent (re)started: learn its totals first */
	FC_KEY_DONE = 1 << 1,     /* nothing free and no holder: stop asking in this window */
	FC_KEY_FROZEN = 1 << 2,   /* the record froze: no more grants */
	FC_KEY_REASSERT = 1 << 3, /* a new connection: send the totals again */
	FC_KEY_RELEASE = 1 << 4,  /* another node asked: release what is unused once idle */
	FC_KEY_CORRUPT = 1 << 5,  /* its credit word held more than its allotment: counted */
};

/* A key the agent tracks, in agent memory. */
struct fc_fleet_key {
	uint64_t tag;       /* its fleet tag; a fixed key: id << 32 | epoch */
	uint32_t index;     /* its key entry, or FC_FLEET_FIXED */
	uint32_t id, epoch; /* its policy */
	uint64_t w;         /* the window it is tracked in */
	uint64_t g_app, r_lock, r_acked, u_sent;
	uint64_t asked;        /* the most one call wanted since the last grant applied */
	uint64_t granted;      /* grants applied (for the status) */
	uint64_t n_done;       /* the N it was DONE at: a change of N asks again */
	uint64_t quiet_until;  /* backing off: no asking before this round */
	uint16_t short_rounds; /* rounds asked in vain while others hold credit */
	uint32_t denied_seen, passed_seen;
	uint32_t denied_round; /* its refusals as the last round saw them */
	uint8_t flags, idle_rounds;
};

/* A policy's window whose N changed while it lasted: its split stays the
 * one in force at its start (freqctl-policy(7), "Bounds"), so its shares
 * and the record's n and digest stay; the call says the new N, and Redis's
 * pool becomes N' - allotted. The publish keeps the workers' the same way
 * (fc_enforce.c). */
struct fc_pol_keep {
	uint32_t id, epoch;
	uint64_t w;                     /* the window */
	uint64_t q;                     /* the quantity its split divides: N at its start */
	struct fc_fleet_split split[2]; /* this node's split of it; [1] unused */
	uint64_t nstar;                 /* the largest N while it lasted (replies are checked against it) */
};

struct fc_fleet {
	struct fc_fleet_opts o;
	struct fc_fleet_cfg cfg;
	struct fc_redis *redis;
	struct fc_fleet_batch batch;
	struct fc_fleet_map map;
	struct fc_fleet_map xdp; /* fc_buckets, mapped shared (BPF_F_MMAPABLE) */
	int pstats_fd;           /* fc_pstats: an XDP/TC policy's passes and drops */
	/* When this node's state was made anew (the fresh rule, maps/fc_fleet.h),
	 * read each round: a publish remakes the shm's state file, or the
	 * loader the pins, while the agent runs. */
	uint64_t fresh_shm; /* the config file header's fleet_fresh_ns */
	uint64_t fresh_xdp; /* the pins' fc_config.fleet_fresh_ns */
	uint32_t xdp_id;    /* the map id of the fc_buckets mapped */
	struct fc_fleet_sub sub;
	uint64_t release_at_ns; /* a demand heard: a round no later than this */
	struct fc_fleet_beat beat;
	uint64_t beat_at_ns; /* the next heartbeat */
	bool clock_bad;      /* the clock is too far from Redis's: degraded (clock) */
	char clock_why[96];
	struct fc_fleet_beat_pol *mine; /* per policy: its window and the slot's passes at its start */
	size_t nmine;
	uint32_t nkeys;     /* the mapped key table's entries */
	uint64_t ring_next; /* the next fleet ring entry to read */
	bool ring_known;    /* ring_next is set */

	struct fc_pol_keep *keep; /* windows whose split was kept when N changed in them */
	size_t nkeep;

	struct fc_fleet_key *keys;
	size_t nk, kcap;
	uint32_t *kidx; /* keys by (tag, index), open addressing: a position + 1, 0 empty */
	size_t kidx_cap; /* a power of two, at least twice nk */
	uint64_t full_round; /* the round after the last that met the cap of tracked keys */
	uint64_t lost_round; /* the round after the last whose ring had lost entries */
	size_t *call_key; /* the round's calls: their keys */
	struct fc_fleet_expect *expect;
	uint64_t *shares;    /* the round's s_j values, per call */
	uint32_t *share_nos; /* and their node numbers */
	size_t shares_cap, ncall_cap;

	enum fc_fleet_mode mode;
	char reason[160];
	uint64_t since_ms, last_sync_ms, degraded_at_ms, retry_at_ns, backoff_ms;
	unsigned fails;
	uint64_t rounds, connects_seen;
	uint64_t started_ns;    /* the first round's time */
	uint64_t reasserted_at; /* counters.reasserted when degraded began */
	size_t rr;              /* where the next round's calls start (past --fleet-max-keys) */
	size_t records_round;   /* release records made since the last round */
	double lat[FC_FLEET_LAT_N], lat_sum;
	struct fc_fleet_counters cnt;
	bool logged_other_set, logged_xdp;
	uint64_t corrupt_round; /* the round after the last that found a corrupt credit word */
	uint64_t refused_log_ns; /* the last refused call logged (once a minute) */
	bool status_failing; /* the status file could not be written: logged */

	struct fc_fleet_status status;
	struct fc_fleet_status_policy *vpol;
	struct fc_fleet_status_primary vprim[16];

	/* the thread */
	pthread_t thread;
	pthread_mutex_t lock;
	int stop_fd; /* an eventfd: fc_fleet_stop wakes the thread's poll */
	bool running, stop;
	struct fc_fleet_cfg *next; /* a snapshot waiting for the next round */
	struct fc_fleet_opts next_o;
	bool has_next_o;
};

/* ---- the configuration's copy ---- */

static void fc_cfg_free(struct fc_fleet_cfg *c)
{
	fc_fleet_cfg_free(c);
}

/* A deep copy: the sets' members point into the copy's own. */
static int fc_cfg_copy(struct fc_fleet_cfg *dst, const struct fc_fleet_cfg *src, struct fc_err *err)
{
	size_t i, nm = 0, off = 0;

	for (i = 0; i < src->nsets; i++)
		nm += src->sets[i].n;
	*dst = *src;
	dst->pols = calloc(src->npols + 1, sizeof(*dst->pols));
	dst->sets = calloc(src->nsets + 1, sizeof(*dst->sets));
	dst->members = calloc(nm + 1, sizeof(*dst->members));
	if (!dst->pols || !dst->sets || !dst->members) {
		fc_fleet_cfg_free(dst);
		return fc_err_set(err, "fleet: out of memory");
	}
	memcpy(dst->pols, src->pols, src->npols * sizeof(*dst->pols));
	for (i = 0; i < src->nsets; i++) {
		dst->sets[i] = src->sets[i];
		dst->sets[i].m = dst->members + off;
		memcpy(dst->members + off, src->sets[i].m, src->sets[i].n * sizeof(*dst->members));
		off += src->sets[i].n;
	}
	for (i = 0; i < src->npols; i++)
		if (src->pols[i].set[0] >= src->nsets || src->pols[i].set[1] >= src->nsets) {
			fc_fleet_cfg_free(dst);
			return fc_err_set(err, "fleet: policy %u: a node set the cfg does not have", src->pols[i].id);
		}
	return 0;
}

/* ---- time, shares ---- */

static uint64_t fc_utc_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* The split index window w uses: 1 once split[1] is in use and w has
 * reached it. */
static int fc_split_k(const struct fc_fleet_policy *p, uint64_t w)
{
	return p->split[1].from != FC_FLEET_NEVER && w >= p->split[1].from;
}

/* The node set window w of p is split over. */
static const struct fc_fleet_set *fc_set_of(const struct fc_fleet *f, const struct fc_fleet_policy *p, uint64_t w)
{
	return &f->cfg.sets[p->set[fc_split_k(p, w)]];
}

/* The split kept for p's window w (N changed in it), or NULL. */
static const struct fc_pol_keep *fc_keep_of(const struct fc_fleet *f, const struct fc_fleet_policy *p, uint64_t w)
{
	size_t i;

	for (i = 0; i < f->nkeep; i++)
		if (f->keep[i].id == p->id && f->keep[i].epoch == p->epoch && f->keep[i].w == w)
			return &f->keep[i];
	return NULL;
}

/* When the state p is enforced with was made anew: XDP/TC's the pins'
 * (or the shm's, if later: either remade loses what a window spent). */
static uint64_t fc_fresh_of(const struct fc_fleet *f, const struct fc_fleet_policy *p)
{
	return p->layer == FC_LAYER_XDP && f->fresh_xdp > f->fresh_shm ? f->fresh_xdp : f->fresh_shm;
}

/* This node's share of window w for a key of point u (the fresh rule
 * applied: a share the workers can not have is not released either). */
static uint64_t fc_my_share(const struct fc_fleet *f, const struct fc_fleet_policy *p, uint32_t u, uint64_t w)
{
	const struct fc_pol_keep *kp = fc_keep_of(f, p, w);

	return fc_fleet_share_in(kp ? kp->split : p->split, u, w, p->unit_ns, fc_fresh_of(f, p),
				 p->algo == FC_ALGO_FLEET_SLIDING ? p->unit_ns : 0);
}

/* The N a reply of p's window w is checked against: the largest while it
 * lasted (a cut leaves what was allotted under the old one). */
static uint64_t fc_nstar(const struct fc_fleet *f, const struct fc_fleet_policy *p, uint64_t w)
{
	const struct fc_pol_keep *kp = fc_keep_of(f, p, w);

	return kp && kp->nstar > p->n ? kp->nstar : p->n;
}

static const struct fc_fleet_policy *fc_pol_by_id(const struct fc_fleet *f, uint32_t id, uint32_t epoch)
{
	size_t i;

	for (i = 0; i < f->cfg.npols; i++)
		if (f->cfg.pols[i].id == id && f->cfg.pols[i].epoch == epoch)
			return &f->cfg.pols[i];
	return NULL;
}

/* Whether the engine leases for p: window and sliding policies (nginx's,
 * and XDP/TC's fixed values through fc_buckets), and gcra policies in
 * nginx, which borrow from their keys' lease pools. An XDP/TC gcra policy
 * is not leased yet: its nodes spend their own buckets. */
static bool fc_pol_leased(const struct fc_fleet_policy *p)
{
	if (p->algo == FC_ALGO_FLEET_GCRA)
		return p->layer != FC_LAYER_XDP && p->lease_ns >= 1000000;
	return (p->layer != FC_LAYER_XDP || !p->keyed) &&
	       (p->algo == FC_ALGO_FLEET_WINDOW || p->algo == FC_ALGO_FLEET_SLIDING);
}

static bool fc_pol_gcra(const struct fc_fleet_policy *p)
{
	return p->algo == FC_ALGO_FLEET_GCRA;
}

/* How long the windows p's keys are tracked in last: gcra's lease window
 * (its pools' and its lease credit's), else the policy's window. */
static uint64_t fc_pol_span(const struct fc_fleet_policy *p)
{
	return fc_pol_gcra(p) && p->lease_ns ? p->lease_ns : p->unit_ns;
}

/* The window (gcra: the lease window) p's keys are tracked in at now. */
static uint64_t fc_pol_w(const struct fc_fleet_policy *p, uint64_t now)
{
	return now / fc_pol_span(p);
}

/* A gcra bucket's tau_i = B_i T_i for a key of point u under split sp, as
 * nginx bounds it (fc_l7.c's fc_fleet_tau): saturating at FC_ROOM_MAX. */
static uint64_t fc_gcra_tau(const struct fc_fleet_split *sp, uint32_t u)
{
	uint64_t tau;

	if (__builtin_mul_overflow(fc_fleet_share(sp, u), sp->interval_ns, &tau) || tau > FC_ROOM_MAX)
		return FC_ROOM_MAX;
	return tau;
}

/* A policy this engine did not have (it started since, with the workers'
 * state kept): the split they hold for window w where it is not c's, kept
 * by a rate edit before. Its q, which every node's share needs, is the one
 * that gives this node that split over w's set (none found: nothing kept,
 * and calls of the window are refused as of another split). */
static bool fc_keep_held(const struct fc_fleet_cfg *c, const struct fc_fleet_policy *np, uint64_t w,
			 struct fc_pol_keep *kp)
{
	const struct fc_fleet_split *held = fc_fleet_split_of(np->held, w), *sp = fc_fleet_split_of(np->split, w);
	const struct fc_fleet_set *set = &c->sets[np->set[fc_split_k(np, w)]];
	uint64_t q;
	size_t i;

	if (!np->has_held || held->from > w ||
	    (held->base == sp->base && held->seg_lo == sp->seg_lo && held->seg_hi == sp->seg_hi))
		return false;
	for (i = 0; i < set->n && set->m[i].no != c->node_no; i++)
		;
	q = fc_fleet_split_q(set->m, set->n, i, held);
	if (q == FC_FLEET_NEVER)
		return false;
	*kp = (struct fc_pol_keep){ .id = np->id,
				    .epoch = np->epoch,
				    .w = w,
				    .q = q,
				    .split = { *held, { .from = FC_FLEET_NEVER } },
				    .nstar = q };
	return true;
}

/* A new cfg c, at now, over the one in force: a window or sliding policy
 * whose N differs from what its current window's split divides keeps that
 * split (and the largest N) for the window; new shares from the next one,
 * which c's splits already hold. */
static void fc_keep_update(struct fc_fleet *f, const struct fc_fleet_cfg *c, uint64_t now)
{
	struct fc_pol_keep *kept = calloc(c->npols + 1, sizeof(*kept));
	size_t i, n = 0;

	if (!kept)
		return; /* the old ones stand: under-admission at worst (a node's share too small) */
	for (i = 0; i < c->npols; i++) {
		const struct fc_fleet_policy *np = &c->pols[i], *op = fc_pol_by_id(f, np->id, np->epoch);
		uint64_t w = now / np->unit_ns;
		const struct fc_pol_keep *ok;

		if (np->algo != FC_ALGO_FLEET_WINDOW && np->algo != FC_ALGO_FLEET_SLIDING)
			continue;
		if (!op && fc_keep_held(c, np, w, &kept[n])) {
			kept[n].nstar = kept[n].nstar > np->n ? kept[n].nstar : np->n;
			n++;
			continue;
		}
		if (!op || op->algo != np->algo || op->unit_ns != np->unit_ns)
			continue;
		ok = fc_keep_of(f, op, w);
		if (!ok && op->burst == np->burst)
			continue;
		kept[n] = ok ? *ok :
			       (struct fc_pol_keep){ .id = op->id,
						    .epoch = op->epoch,
						    .w = w,
						    .q = op->burst,
						    .split = { *fc_fleet_split_of(op->split, w), { .from = FC_FLEET_NEVER } },
						    .nstar = op->n };
		kept[n].nstar = kept[n].nstar > np->n ? kept[n].nstar : np->n;
		n++;
	}
	free(f->keep);
	f->keep = kept;
	f->nkeep = n;
}

static const struct fc_fleet_policy *fc_pol_by_slot(const struct fc_fleet *f, uint32_t slot, uint32_t epoch)
{
	size_t i;

	for (i = 0; i < f->cfg.npols; i++)
		if (f->cfg.pols[i].slot == slot && f->cfg.pols[i].epoch == epoch && f->cfg.pols[i].keyed &&
		    f->cfg.pols[i].layer != FC_LAYER_XDP && fc_pol_leased(&f->cfg.pols[i]))
			return &f->cfg.pols[i];
	return NULL;
}

/* ---- the state file ---- */

static struct fc_shm_key *fc_key_entry(const struct fc_fleet *f, uint32_t index)
{
	return (struct fc_shm_key *)((char *)f->map.base + FC_STATE_KEYS_OFF) + index;
}

static struct fc_shm_slot *fc_slot(const struct fc_fleet *f, uint32_t slot)
{
	return (struct fc_shm_slot *)((char *)f->map.base + FC_STATE_SLOTS_OFF) + slot;
}

/* Maps the state file when it is not, a SIGBUS voided the mapping, or a
 * publish made it anew (another file at its path: the workers' from their
 * next request on): 0, or -1 (no state file yet: nothing to do this round). */
static int fc_state_map(struct fc_fleet *f)
{
	struct fc_err err;
	struct stat st;
	int gone = stat(f->o.state_path, &st);

	if (f->map.base && !fc_fleet_map_lost(&f->map) &&
	    (gone || (st.st_dev == f->map.dev && st.st_ino == f->map.ino)))
		return 0;
	fc_fleet_map_close(&f->map);
	f->ring_known = false;
	if (gone || !(f->nkeys = fc_state_nkeys((uint64_t)st.st_size)))
		return -1;
	if (fc_fleet_map_file(&f->map, f->o.state_path, (size_t)st.st_size, &err) < 0) {
		fc_debug("%s", err.msg);
		return -1;
	}
	return 0;
}

/* ---- XDP/TC: fc_buckets, mapped; fc_pstats, read ---- */

/* The map pinned at <pin dir>/name, its info in info: an fd, or -1. */
static int fc_pin_open(const struct fc_fleet *f, const char *name, struct bpf_map_info *info)
{
	uint32_t len = sizeof(*info);
	char path[4200];
	int fd;

	memset(info, 0, sizeof(*info));
	snprintf(path, sizeof(path), "%s/%s", f->o.pin_dir, name);
	fd = bpf_obj_get(path);
	if (fd >= 0 && bpf_obj_get_info_by_fd(fd, info, &len) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/* Maps the pins' fc_buckets and opens fc_pstats, once there are fixed-value
 * XDP/TC fleet policies: 0, or -1 (no pins yet, or of another version:
 * logged once, those policies' nodes spend their own shares). Kernel
 * memory, written only by the programs and root: no guard. */
static int fc_xdp_open(struct fc_fleet *f)
{
	struct bpf_map_info info;
	char path[4200];
	struct fc_err err;
	size_t len = ((size_t)FC_POLICY_SLOTS * sizeof(struct fc_bucket) + 4095) & ~(size_t)4095;
	int fd;

	if (f->xdp.base)
		return 0;
	snprintf(path, sizeof(path), "%s/fc_buckets", f->o.pin_dir);
	fd = fc_pin_open(f, "fc_buckets", &info);
	if (fd < 0 || fc_fleet_map_bpf(&f->xdp, fd, len, "fc_buckets", &err) < 0) {
		if (!f->logged_xdp)
			fc_warn("fleet: %s: %s", path, fd < 0 ? strerror(errno) : err.msg);
		f->logged_xdp = true;
		if (fd >= 0)
			close(fd);
		return -1;
	}
	close(fd);
	f->xdp_id = info.id;
	snprintf(path, sizeof(path), "%s/fc_pstats", f->o.pin_dir);
	f->pstats_fd = bpf_obj_get(path);
	return 0;
}

/* Each round, what may have been made anew while the agent runs: the
 * fresh times (fc_fresh_of), from the config file's header (root's, read
 * with pread as every value of it) and the pins' fc_config; and fc_buckets
 * (pins made anew: the old map is no one's, map the new one). What can not
 * be read keeps what was read last. */
static void fc_fresh_read(struct fc_fleet *f)
{
	struct bpf_map_info info;
	struct fc_shm_header h;
	struct fc_config cfg;
	uint32_t zero = 0;
	size_t i;
	int fd;

	if (f->o.status_shm[0] && (fd = open(f->o.status_shm, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)) >= 0) {
		if (pread(fd, &h, sizeof(h), 0) == (ssize_t)sizeof(h) && h.magic == FC_SHM_MAGIC)
			f->fresh_shm = h.fleet_fresh_ns;
		close(fd);
	}
	for (i = 0; i < f->cfg.npols && f->cfg.pols[i].layer != FC_LAYER_XDP; i++)
		;
	if (i == f->cfg.npols || !f->o.pin_dir[0])
		return;
	fd = fc_pin_open(f, "fc_config", &info);
	if (fd >= 0 && info.value_size == sizeof(cfg) && bpf_map_lookup_elem(fd, &zero, &cfg) == 0)
		f->fresh_xdp = cfg.fleet_fresh_ns;
	if (fd >= 0)
		close(fd);
	fd = f->xdp.base ? fc_pin_open(f, "fc_buckets", &info) : -1;
	if (f->xdp.base && (fd < 0 || info.id != f->xdp_id)) {
		fc_fleet_map_close(&f->xdp);
		if (f->pstats_fd >= 0)
			close(f->pstats_fd);
		f->pstats_fd = -1;
	}
	if (fd >= 0)
		close(fd);
}

/* An XDP/TC policy's passes and drops over the CPUs (0 without fc_pstats). */
static void fc_xdp_counts(const struct fc_fleet *f, uint32_t slot, uint32_t *passed, uint32_t *denied)
{
	int ncpu = libbpf_num_possible_cpus(), i;
	struct fc_pstats v[512];
	uint64_t p = 0, d = 0;

	*passed = *denied = 0;
	if (f->pstats_fd < 0 || ncpu <= 0 || ncpu > 512 || bpf_map_lookup_elem(f->pstats_fd, &slot, v) < 0)
		return;
	for (i = 0; i < ncpu; i++) {
		p += v[i].passed.packets;
		d += v[i].dropped.packets;
	}
	*passed = (uint32_t)p;
	*denied = (uint32_t)d;
}

/* ---- tracked keys: an array, and an index of it by (tag, entry) ---- */

static size_t fc_key_hash(uint64_t tag, uint32_t index)
{
	return (size_t)(((tag ^ index) * 0x9e3779b97f4a7c15ULL) >> 29);
}

static void fc_keys_index_put(struct fc_fleet *f, size_t i)
{
	size_t h = fc_key_hash(f->keys[i].tag, f->keys[i].index);

	while (f->kidx[h & (f->kidx_cap - 1)])
		h++;
	f->kidx[h & (f->kidx_cap - 1)] = (uint32_t)i + 1;
}

/* The index made anew over keys[0, nk), with room for want keys at half
 * load (linear probing stays short): 0, or -1 when it could not grow (out
 * of memory: the old one stands, as valid as before). */
static int fc_keys_index(struct fc_fleet *f, size_t want)
{
	size_t cap = 64, i;
	uint32_t *t;

	while (cap < 2 * want)
		cap *= 2;
	if (cap != f->kidx_cap && (t = calloc(cap, sizeof(*t)))) {
		free(f->kidx);
		f->kidx = t;
		f->kidx_cap = cap;
	} else if (f->kidx_cap < 2 * want) {
		return -1;
	} else {
		memset(f->kidx, 0, f->kidx_cap * sizeof(*f->kidx));
	}
	for (i = 0; i < f->nk; i++)
		fc_keys_index_put(f, i);
	return 0;
}

static struct fc_fleet_key *fc_key_find(struct fc_fleet *f, uint64_t tag, uint32_t index)
{
	size_t h = fc_key_hash(tag, index);
	uint32_t at;

	for (; f->kidx_cap; h++) {
		at = f->kidx[h & (f->kidx_cap - 1)];
		if (!at)
			break;
		if (f->keys[at - 1].tag == tag && f->keys[at - 1].index == index)
			return &f->keys[at - 1];
	}
	return NULL;
}

/* Whether a key more may be tracked: at most 2 x --fleet-max-keys, as a
 * writer of the state file can ring any number of them. Past that the key
 * is not asked for (counted; logged once per episode, a run of rounds that
 * meet the cap); fixed-value policies' keys always are. */
static bool fc_keys_room(struct fc_fleet *f)
{
	size_t most = 2 * (size_t)(f->o.max_keys ? f->o.max_keys : 20000);

	if (f->nk < most)
		return true;
	f->cnt.untracked++;
	if (f->rounds > f->full_round)
		fc_warn("fleet: %zu keys tracked, the most (2 x --fleet-max-keys): keys short of credit beyond them "
			"are not asked for until some are dropped",
			most);
	f->full_round = f->rounds + 1;
	return false;
}

/* Tracks a key from now on. One whose window began before this agent did
 * may have history in Redis (the agent restarted): it adopts Redis's
 * totals before it asks (design §5.6). */
static struct fc_fleet_key *fc_key_track(struct fc_fleet *f, uint64_t tag, uint32_t index,
					 const struct fc_fleet_policy *p, uint64_t w)
{
	struct fc_fleet_key *k = fc_key_find(f, tag, index), *more;

	if (k)
		return k;
	if (index != FC_FLEET_FIXED && !fc_keys_room(f))
		return NULL;
	if (2 * (f->nk + 1) > f->kidx_cap && fc_keys_index(f, 2 * (f->nk + 1)) < 0)
		return NULL;
	if (f->nk == f->kcap) {
		more = realloc(f->keys, (f->kcap ? f->kcap * 2 : 64) * sizeof(*f->keys));
		if (!more)
			return NULL;
		f->keys = more;
		f->kcap = f->kcap ? f->kcap * 2 : 64;
	}
	k = &f->keys[f->nk++];
	*k = (struct fc_fleet_key){
		.tag = tag,
		.index = index,
		.id = p->id,
		.epoch = p->epoch,
		.w = w,
		.flags = w * fc_pol_span(p) < f->started_ns ? FC_KEY_ADOPT : 0,
	};
	fc_keys_index_put(f, f->nk - 1);
	/* idle from here on if it admits nothing more */
	if (index != FC_FLEET_FIXED && index < f->nkeys) {
		k->passed_seen = __atomic_load_n(&fc_key_entry(f, index)->passed, __ATOMIC_RELAXED);
		k->denied_round = __atomic_load_n(&fc_key_entry(f, index)->denied, __ATOMIC_RELAXED);
	} else if (p->layer == FC_LAYER_XDP) {
		fc_xdp_counts(f, p->slot, &k->passed_seen, &k->denied_seen);
		k->denied_round = k->denied_seen;
	} else if (index == FC_FLEET_FIXED && p->slot < FC_SHM_SLOTS) {
		k->passed_seen = (uint32_t)__atomic_load_n(&fc_slot(f, p->slot)->passed, __ATOMIC_RELAXED);
		k->denied_round = (uint32_t)__atomic_load_n(&fc_slot(f, p->slot)->denied, __ATOMIC_RELAXED);
		/* gcra: tracked anew each lease window; refusals of earlier ones
		 * say nothing of this one (nor keep it from being idle) */
		if (fc_pol_gcra(p))
			k->denied_seen = k->denied_round;
	}
	return k;
}

/* A gcra key still active when its lease window ends goes on into the
 * next one: a new pool, nothing granted or donated in it yet, what it met
 * last round kept (what it asks for in the new one's first round). */
static void fc_key_renew(struct fc_fleet_key *k, uint64_t lw, uint8_t adopt)
{
	k->w = lw;
	k->g_app = k->r_lock = k->r_acked = k->u_sent = k->asked = 0;
	k->flags = adopt;
	k->short_rounds = 0;
	k->denied_seen = k->denied_round;
}

static bool fc_key_roll(struct fc_fleet_key *k, const struct fc_fleet_policy *p, uint64_t now)
{
	if (!fc_pol_gcra(p) || k->idle_rounds >= 2 || k->w >= fc_pol_w(p, now))
		return false;
	fc_key_renew(k, fc_pol_w(p, now), 0); /* a lease window begun after the agent: its own */
	return true;
}


/* Whether a tracked key goes: its window is over, or its policy gone; or
 * its entry is no longer it (re-tagged, taken back) and it holds nothing to
 * remember. One that was granted or released keeps its totals to the
 * window's end: tracked anew with none, it would apply its grants again.
 * (A gcra key still active goes on into the next lease window: fc_key_roll.) */
static bool fc_key_gone(const struct fc_fleet *f, struct fc_fleet_key *k, uint64_t now)
{
	const struct fc_fleet_policy *p = fc_pol_by_id(f, k->id, k->epoch);
	const struct fc_shm_key *e;

	if (!p || (k->w != fc_pol_w(p, now) && !fc_key_roll(k, p, now)))
		return true;
	if (k->index == FC_FLEET_FIXED || k->g_app || k->r_lock || !f->map.base || fc_fleet_map_lost(&f->map))
		return false;
	if (k->index >= f->nkeys)
		return true;
	e = fc_key_entry(f, k->index);
	return __atomic_load_n(&e->tag, __ATOMIC_ACQUIRE) != k->tag || e->slot != p->slot || e->epoch != p->epoch;
}

/* Drops the keys that go (fc_key_gone), and indexes the rest anew. */
static void fc_keys_expire(struct fc_fleet *f, uint64_t now)
{
	size_t i = 0, n = f->nk;

	while (i < f->nk) {
		if (!fc_key_gone(f, &f->keys[i], now)) {
			i++;
			continue;
		}
		f->keys[i] = f->keys[--f->nk];
	}
	if (f->nk != n)
		fc_keys_index(f, f->nk); /* never fails: it shrinks, or reuses its table */
}

/* A ring entry, as the workers wrote it: tracked if it is a key of a keyed
 * fleet policy, refused for lack of credit in the current window. */
static void fc_ring_take(struct fc_fleet *f, const struct fc_shm_fleet_entry *e, uint64_t now)
{
	const struct fc_fleet_policy *p = fc_pol_by_slot(f, e->slot, e->epoch);
	struct fc_shm_key *k;
	uint64_t w;

	if (!p || e->index >= f->nkeys || e->tag < FC_SHM_KEY_TAG_MIN)
		goto bad;
	w = fc_pol_w(p, now);
	k = fc_key_entry(f, e->index);
	if (e->window != FC_FLEET_LABEL(w)) /* a window already over: nothing to ask for */
		return;
	if (__atomic_load_n(&k->tag, __ATOMIC_ACQUIRE) != e->tag || k->slot != e->slot || k->epoch != e->epoch)
		goto bad;
	fc_key_track(f, e->tag, e->index, p, w);
	return;
bad:
	f->cnt.ring_errors++;
}

/* Every entry of the key table whose demand word says "short in this
 * window": after the ring lost entries (a lap). */
static void fc_ring_scan(struct fc_fleet *f, uint64_t now)
{
	const struct fc_fleet_policy *p;
	struct fc_shm_key *k;
	uint64_t tag;
	uint32_t i;

	for (i = 0; i < f->nkeys; i++) {
		k = fc_key_entry(f, i);
		tag = __atomic_load_n(&k->tag, __ATOMIC_ACQUIRE);
		if (tag < FC_SHM_KEY_TAG_MIN || !(p = fc_pol_by_slot(f, k->slot, k->epoch)))
			continue;
		if (fc_fleet_wanted(__atomic_load_n(&k->state[1], __ATOMIC_RELAXED), fc_pol_w(p, now)))
			fc_key_track(f, tag, i, p, fc_pol_w(p, now));
	}
}

/* Reads the fleet ring from where the last round stopped. */
static void fc_ring_drain(struct fc_fleet *f, uint64_t now)
{
	struct fc_shm_fleet_ring *ring = (struct fc_shm_fleet_ring *)((char *)f->map.base + FC_STATE_FLEET_OFF);
	uint64_t head = __atomic_load_n(&ring->head, __ATOMIC_ACQUIRE), i, seq;
	struct fc_shm_fleet_entry e;
	bool lost = false;

	if (!f->ring_known) { /* a new mapping: what is in the ring now, a scan finds */
		f->ring_next = head;
		f->ring_known = true;
		fc_ring_scan(f, now);
		return;
	}
	if (head < f->ring_next || head - f->ring_next > FC_SHM_FLEET_RING_SIZE) {
		lost = true;
		f->ring_next = head;
	}
	for (i = f->ring_next; i < head; i++) {
		const struct fc_shm_fleet_entry *src = &ring->e[i & (FC_SHM_FLEET_RING_SIZE - 1)];

		seq = __atomic_load_n(&src->seq, __ATOMIC_ACQUIRE);
		if (seq < i + 1)
			break; /* not written yet: the next round reads it */
		memcpy(&e, src, sizeof(e));
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (seq > i + 1 || __atomic_load_n(&src->seq, __ATOMIC_RELAXED) != seq) {
			lost = true; /* overwritten by a faster lap */
			continue;
		}
		fc_ring_take(f, &e, now);
	}
	f->ring_next = i;
	if (lost) {
		/* once per episode: a writer of the state file can make it every round */
		if (f->rounds > f->lost_round)
			fc_warn("fleet: the fleet ring lost entries: scanning the key table");
		f->lost_round = f->rounds + 1;
		fc_ring_scan(f, now);
	}
}

/* ---- a key's words ---- */

/* Where a tracked key's words are: NULL when its entry is no longer it
 * (the policy moved, the entry was taken back: nothing to do for it). */
struct fc_words {
	__u64 *credit, *demand, *net; /* state[0], [1], [2] (gcra: TAT, demand, lease credit) */
	uint32_t passed, denied;
	uint32_t u;   /* its point */
	uint64_t tau; /* gcra: the key's tau_i (state[3]), as its workers bound it */
};

static int fc_key_words(const struct fc_fleet *f, const struct fc_fleet_key *k, const struct fc_fleet_policy *p,
			struct fc_words *out)
{
	if (k->index == FC_FLEET_FIXED && p->layer == FC_LAYER_XDP) {
		struct fc_bucket *b = (struct fc_bucket *)f->xdp.base + p->slot;

		if (!f->xdp.base || p->slot >= FC_POLICY_SLOTS)
			return -1;
		*out = (struct fc_words){
			.credit = &b->state[0], .demand = &b->state[1], .net = &b->state[2], .u = p->fixed_u
		};
		fc_xdp_counts(f, p->slot, &out->passed, &out->denied);
		return 0;
	}
	if (k->index == FC_FLEET_FIXED) {
		struct fc_shm_slot *s = fc_slot(f, p->slot);

		if (p->slot >= FC_SHM_SLOTS ||
		    __atomic_load_n(&s->owner, __ATOMIC_ACQUIRE) != ((uint64_t)p->id << 32 | p->epoch))
			return -1;
		*out = (struct fc_words){ .credit = &s->state[0],
					  .demand = &s->state[1],
					  .net = &s->state[2],
					  .u = p->fixed_u,
					  .passed = (uint32_t)__atomic_load_n(&s->passed, __ATOMIC_RELAXED),
					  .denied = (uint32_t)__atomic_load_n(&s->denied, __ATOMIC_RELAXED) };
		/* gcra: the slot's bucket is bound per window, as nginx does */
		if (fc_pol_gcra(p))
			out->tau =
				fc_gcra_tau(fc_fleet_split_of(p->split, k->w * p->lease_ns / p->unit_ns), p->fixed_u);
		return 0;
	}
	struct fc_shm_key *e = fc_key_entry(f, k->index);

	if (k->index >= f->nkeys || __atomic_load_n(&e->tag, __ATOMIC_ACQUIRE) != k->tag || e->slot != p->slot ||
	    e->epoch != p->epoch)
		return -1;
	*out = (struct fc_words){ .credit = &e->state[0],
				  .demand = &e->state[1],
				  .net = &e->state[2],
				  .u = fc_fleet_point(k->tag),
				  .passed = __atomic_load_n(&e->passed, __ATOMIC_RELAXED),
				  .denied = __atomic_load_n(&e->denied, __ATOMIC_RELAXED),
				  .tau = __atomic_load_n(&e->state[3], __ATOMIC_RELAXED) };
	if (out->tau > FC_ROOM_MAX)
		out->tau = FC_ROOM_MAX;
	return 0;
}

/* Fixed-value L7 policies are polled every round: a key each. */
static void fc_fixed_track(struct fc_fleet *f, uint64_t now)
{
	size_t i;

	for (i = 0; i < f->cfg.npols; i++) {
		const struct fc_fleet_policy *p = &f->cfg.pols[i];

		if (!p->keyed && fc_pol_leased(p) && (p->layer != FC_LAYER_XDP || fc_xdp_open(f) == 0))
			fc_key_track(f, (uint64_t)p->id << 32 | p->epoch, FC_FLEET_FIXED, p, fc_pol_w(p, now));
	}
}

/* ---- the algorithms' words (maps/fc_fleet.h) ---- */

/* Whether the key's word is of window w yet (a word of an earlier window
 * rolls over at its next use, to this node's share). */
static bool fc_key_in_w(const struct fc_fleet_policy *p, uint64_t word, uint64_t w)
{
	return p->algo == FC_ALGO_FLEET_SLIDING ? FC_FLEET_SLIDE_W(word) == FC_FLEET_SLABEL(w) :
						  FC_FLEET_WORD_W(word) == FC_FLEET_LABEL(w);
}

/* What the key may still admit in window w and could give back: window,
 * its credit; sliding, its room less what the rule keeps for the last
 * window's count at now (prev (U - e) <= room' U). */
static uint64_t fc_key_left(const struct fc_fleet *f, const struct fc_fleet_policy *p, const struct fc_words *wd,
			    uint64_t w, uint64_t now)
{
	uint64_t word = __atomic_load_n(wd->credit, __ATOMIC_RELAXED), room, prev, u, e, keep;

	if (fc_pol_gcra(p)) /* its lease credit */
		return fc_fleet_credit(__atomic_load_n(wd->net, __ATOMIC_RELAXED), w);
	/* A window word of an earlier window: nothing of w spent yet, the
	 * whole share is left (fc_fleet_lock rolls it over). A fixed-value
	 * policy's slot that saw no request in w is one: without this a node
	 * never released it, and a node short of that policy got nothing. */
	if (p->algo == FC_ALGO_FLEET_WINDOW &&
	    fc_fleet_cmp(FC_FLEET_WORD_W(word), w, FC_FLEET_W_MASK) == FC_FLEET_BEHIND)
		return fc_my_share(f, p, wd->u, w);
	if (!fc_key_in_w(p, word, w))
		return 0;
	if (p->algo != FC_ALGO_FLEET_SLIDING)
		return FC_FLEET_WORD_CREDIT(word);
	room = FC_FLEET_SLIDE_ROOM(word);
	prev = FC_FLEET_SLIDE_PREV(word);
	u = p->unit_ns / FC_SLIDE_NS;
	e = now > w * p->unit_ns ? (now - w * p->unit_ns) / FC_SLIDE_NS : 0;
	keep = e >= u || !u ? 0 : (prev * (u - e) + u - 1) / u;
	return room > keep ? room - keep : 0;
}

/* Locks x of it (a release). */
static int fc_key_lock(const struct fc_fleet *f, const struct fc_fleet_key *k, const struct fc_fleet_policy *p,
		       const struct fc_words *wd, uint64_t now, uint64_t x)
{
	if (p->algo == FC_ALGO_FLEET_SLIDING)
		return fc_fleet_slide_release(wd->credit, wd->net, p->unit_ns, now, k->w, x,
					      fc_my_share(f, p, wd->u, k->w - 1), fc_my_share(f, p, wd->u, k->w));
	return fc_fleet_lock(wd->credit, k->w, x, fc_my_share(f, p, wd->u, k->w));
}

/* Adds a grant of d. */
static int fc_key_topup(const struct fc_fleet *f, const struct fc_fleet_key *k, const struct fc_fleet_policy *p,
			const struct fc_words *wd, uint64_t d)
{
	if (p->algo == FC_ALGO_FLEET_SLIDING)
		return fc_fleet_slide_topup(wd->credit, wd->net, k->w, d, fc_my_share(f, p, wd->u, k->w - 1),
					    fc_my_share(f, p, wd->u, k->w));
	if (fc_pol_gcra(p)) /* the lease credit, lapsing at the lease window's end */
		return fc_fleet_topup(wd->net, k->w, d, 0);
	return fc_fleet_topup(wd->credit, k->w, d, fc_my_share(f, p, wd->u, k->w));
}

/* What the key was allotted in its window, as this agent knows it: its
 * share, the grants applied, less what it released. No credit word can
 * hold more: a word that does was written by someone else (the state file
 * is the workers' group's). */
static uint64_t fc_key_allot(const struct fc_fleet *f, const struct fc_fleet_key *k, const struct fc_fleet_policy *p,
			     const struct fc_words *wd)
{
	uint64_t held = fc_my_share(f, p, wd->u, k->w) + k->g_app;

	return held > k->r_lock ? held - k->r_lock : 0;
}

/* A credit word above the key's allotment: released, it would hand the
 * fleet credit no node was allotted. Nothing is released for it; it is
 * counted once per key-window, and logged once per episode (a run of
 * rounds that find such words). */
static void fc_key_corrupt(struct fc_fleet *f, struct fc_fleet_key *k, uint64_t x, uint64_t allot)
{
	if (k->flags & FC_KEY_CORRUPT)
		return;
	k->flags |= FC_KEY_CORRUPT;
	f->cnt.corrupt++;
	if (f->rounds > f->corrupt_round)
		fc_warn("fleet: policy %u: a key's credit word holds %" PRIu64 ", more than this node was allotted "
			"(%" PRIu64 "): written outside freqctl? nothing released for it",
			k->id, x, allot);
	f->corrupt_round = f->rounds + 1;
}

/* Locks all of an idle key's credit in its window: the local record of a
 * release (design §5.1), told to Redis by the key's next call. */
static void fc_key_release(struct fc_fleet *f, struct fc_fleet_key *k, const struct fc_fleet_policy *p,
			   const struct fc_words *wd, uint64_t now)
{
	uint64_t x = fc_key_left(f, p, wd, k->w, now), allot = fc_key_allot(f, k, p, wd);

	if (x > allot) {
		fc_key_corrupt(f, k, x, allot);
		return;
	}
	if (x && fc_key_lock(f, k, p, wd, now, x) == FC_FLEET_DONE)
		k->r_lock += x;
}

/* The entry of a key by its tag, walking its two windows as workers do;
 * FC_FLEET_FIXED when it is in neither. */
static uint32_t fc_key_lookup(const struct fc_fleet *f, uint64_t tag, const struct fc_fleet_policy *p)
{
	const struct fc_shm_key *e;
	uint32_t i, j, start;
	uint64_t t;
	int c;

	for (c = 0; c < 2; c++) {
		start = fc_shm_key_place(tag, c, f->nkeys);
		for (j = 0; j < FC_SHM_KEY_PROBE; j++) {
			i = (start + j) & (f->nkeys - 1);
			e = fc_key_entry(f, i);
			t = __atomic_load_n(&e->tag, __ATOMIC_ACQUIRE);
			if (!t)
				break;
			if (t == tag && e->slot == p->slot && e->epoch == p->epoch)
				return i;
		}
	}
	return FC_FLEET_FIXED;
}

/* The entry nk of a key this node never saw, made by the workers' claim
 * protocol (maps/fc_keytab.h), and tracked in window w with `locked` of
 * it released. Ours only if it is as made here: a worker may have made the
 * key meanwhile (then it is a key like any other, released once idle).
 * NULL: no room in the key's windows or among the tracked keys, nothing
 * made. */
static struct fc_fleet_key *fc_record_make(struct fc_fleet *f, const struct fc_fleet_policy *p, uint64_t tag,
					   uint64_t w, const struct fc_keytab_new *nk, uint64_t locked, uint64_t now)
{
	struct fc_keytab kt = {
		.keys = fc_key_entry(f, 0), .slots = fc_slot(f, 0), .nkeys = f->nkeys, .nslots = FC_SHM_SLOTS
	};
	struct fc_shm_key *e;
	struct fc_fleet_key *k;

	/* A record it could not track would lock a share (gcra: donate tokens)
	 * never told: checked before the entry is made. */
	if (!fc_keys_room(f))
		return NULL;
	e = fc_keytab_claim(&kt, tag, now, nk);
	if (!e || e->state[0] != nk->state[0] || e->state[3] != nk->state[3] || e->idle_ns != nk->idle_ns || e->passed)
		return e ? fc_key_track(f, tag, (uint32_t)(e - kt.keys), p, w) : NULL;
	k = fc_key_track(f, tag, (uint32_t)(e - kt.keys), p, w);
	if (k && !k->r_lock) {
		/* Nothing to adopt: a key missing from the table was never this
		 * node's in this window (entries outlive their window). */
		k->flags &= (uint8_t)~FC_KEY_ADOPT;
		k->r_lock = locked;
		f->cnt.records++;
	}
	return k;
}

/* A key this node never saw, asked for by another node: its share of
 * window w is released with a release record (design §5.2), an entry made
 * by the workers' claim protocol (maps/fc_keytab.h) with nothing left in
 * w (sliding: room 0 and a net of -share), held to the window's end plus
 * the skew, so that no worker ever spends that share; then tracked with
 * the share locked, told by its next call. No room in the key's windows:
 * no record, and the node keeps its share. */
static struct fc_fleet_key *fc_release_record(struct fc_fleet *f, const struct fc_fleet_policy *p, uint64_t tag,
					      uint64_t w, uint64_t now)
{
	uint64_t share = fc_my_share(f, p, fc_fleet_point(tag), w), lead;
	struct fc_keytab_new nk = { .slot = p->slot, .epoch = p->epoch };

	lead = p->algo == FC_ALGO_FLEET_SLIDING ? p->unit_ns : 0; /* its count is the next window's prev */
	nk.idle_ns = (w + 1) * p->unit_ns + lead + (uint64_t)f->o.max_skew_ms * 1000000;
	if (p->algo == FC_ALGO_FLEET_SLIDING) {
		nk.state[0] = FC_FLEET_SLIDE(w, 0, 0);
		nk.state[2] = FC_FLEET_WORD(w, FC_FLEET_NET_BIAS - share);
	} else {
		nk.state[0] = FC_FLEET_WORD(w, 0);
	}
	return fc_record_make(f, p, tag, w, &nk, share, now);
}

/* ---- gcra: lease pools (design section 8.3) ---- */

/* The most a node borrows of a gcra key per lease window, and the most it
 * donates to one pool: lambda = max(ceil(B / nodes), ceil(R lease)). */
static uint64_t fc_gcra_lambda(const struct fc_fleet_policy *p, size_t nodes)
{
	uint64_t a = nodes ? (p->burst + nodes - 1) / nodes : p->burst, b;

	b = (uint64_t)(((unsigned __int128)p->n * p->lease_ns + p->unit_ns - 1) / p->unit_ns);
	return a > b ? a : b;
}

/* lambda for key k's lease window: of the node set of the policy window it
 * begins in. */
static uint64_t fc_key_lambda(const struct fc_fleet *f, const struct fc_fleet_key *k, const struct fc_fleet_policy *p)
{
	return fc_gcra_lambda(p, fc_set_of(f, p, k->w * p->lease_ns / p->unit_ns)->n);
}

/* The interval T_i of p's buckets in the policy window of lease window lw. */
static uint64_t fc_gcra_interval(const struct fc_fleet_policy *p, uint64_t lw)
{
	return fc_fleet_split_of(p->split, lw * p->lease_ns / p->unit_ns)->interval_ns;
}

/* A gcra key this node never saw, its pool asked for by another node: the
 * entry its workers would make (tau_i = B_i T_i, empty if the state is new:
 * fc_l7.c's fc_key_fresh_gcra), with the tokens it has (at most lambda)
 * donated at once: its TAT advanced by them, so no worker spends them. It
 * is held until that TAT has passed (the bucket refilled: a full bucket then
 * is not a second one), so the same tokens are never donated twice. No room
 * in the key's windows: no entry, nothing donated. */
static struct fc_fleet_key *fc_gcra_record(struct fc_fleet *f, const struct fc_fleet_policy *p, uint64_t tag,
					   uint64_t lw, uint64_t now)
{
	const struct fc_fleet_split *sp = fc_fleet_split_of(p->split, now / p->unit_ns);
	struct fc_keytab_new nk = { .slot = p->slot, .epoch = p->epoch };
	uint64_t tau, base, n, tat, lambda, end = (lw + 1) * p->lease_ns;

	tau = fc_gcra_tau(sp, fc_fleet_point(tag));
	base = now < fc_fresh_of(f, p) + tau ? fc_fresh_of(f, p) + tau : 0;
	n = fc_fleet_gcra_tokens(base, sp->interval_ns, tau, now);
	lambda = fc_gcra_lambda(p, fc_set_of(f, p, now / p->unit_ns)->n);
	n = n < lambda ? n : lambda;
	tat = n ? (base > now ? base : now) + n * sp->interval_ns : base;
	nk.state[0] = tat;
	nk.state[3] = tau;
	nk.idle_ns = (tat > end ? tat : end) + (uint64_t)f->o.max_skew_ms * 1000000;
	return fc_record_make(f, p, tag, lw, &nk, n, now);
}

/* A gcra key's pool asked for by another node: the key tracked (idle from
 * here on if nothing more happens to it: refusals of earlier lease windows
 * say nothing of this one), or a donation record made if this node never
 * saw it (at most --fleet-max-keys a round, as scripts). */
static struct fc_fleet_key *fc_gcra_asked(struct fc_fleet *f, const struct fc_fleet_policy *p, uint64_t tag,
					  uint64_t lw, uint64_t now)
{
	uint32_t index = tag >= FC_SHM_KEY_TAG_MIN ? fc_key_lookup(f, tag, p) : FC_FLEET_FIXED;
	size_t nk = f->nk;
	struct fc_fleet_key *k;

	if (!p->keyed) { /* its one key (kid 0), tracked every round */
		k = tag ? NULL : fc_key_find(f, (uint64_t)p->id << 32 | p->epoch, FC_FLEET_FIXED);
		if (k && k->w < lw)
			fc_key_renew(k, lw, 0);
		return k;
	}
	if (index == FC_FLEET_FIXED)
		return tag >= FC_SHM_KEY_TAG_MIN && f->records_round++ < (f->o.max_keys ? f->o.max_keys : 20000) ?
			       fc_gcra_record(f, p, tag, lw, now) :
			       NULL;
	k = fc_key_track(f, tag, index, p, lw);
	if (k && (f->nk > nk || k->w < lw)) /* new, or of a lease window the next round rolls */
		fc_key_renew(k, lw, lw * p->lease_ns < f->started_ns ? FC_KEY_ADOPT : 0);
	return k;
}

/* A demand message: another node is short of a key-window this node may
 * hold unused credit of. Marks the key to release once idle; a key this
 * node never saw gets a release record. */
static void fc_on_demand(void *arg, const char *msg, size_t len)
{
	struct fc_fleet *f = arg;
	const struct fc_fleet_policy *p;
	struct fc_fleet_demand d;
	struct fc_fleet_key *k;
	struct fc_err err;
	uint64_t now = fc_utc_ns() + (uint64_t)f->o.clock_ns;
	uint32_t index;

	if (fc_fleet_demand_parse(msg, len, fc_redis_prefix(f->redis), &d, &err) < 0) {
		f->cnt.reply_errors++;
		return;
	}
	p = fc_pol_by_id(f, d.rec.id, d.rec.epoch);
	if (d.no == f->cfg.node_no || !p || !fc_pol_leased(p) || d.rec.w != fc_pol_w(p, now) || !f->map.base ||
	    d.rec.kind != (fc_pol_gcra(p) ? FC_FLEET_REC_POOL : FC_FLEET_REC_WINDOW) ||
	    d.rec.unit * (fc_pol_gcra(p) ? 1000000ULL : 1000000000ULL) != fc_pol_span(p))
		return;
	if (fc_pol_gcra(p)) {
		k = fc_gcra_asked(f, p, d.rec.kid, d.rec.w, now);
	} else if (!d.rec.kid) {
		k = p->keyed ? NULL : fc_key_find(f, (uint64_t)p->id << 32 | p->epoch, FC_FLEET_FIXED);
	} else {
		index = p->keyed && d.rec.kid >= FC_SHM_KEY_TAG_MIN ? fc_key_lookup(f, d.rec.kid, p) : FC_FLEET_FIXED;
		/* Anyone who can PUBLISH can ask: records made are bounded per
		 * round as scripts are (--fleet-max-keys). */
		k = index != FC_FLEET_FIXED ? fc_key_track(f, d.rec.kid, index, p, d.rec.w) :
		    p->keyed && d.rec.kid >= FC_SHM_KEY_TAG_MIN &&
				    f->records_round++ < (f->o.max_keys ? f->o.max_keys : 20000) ?
					      fc_release_record(f, p, d.rec.kid, d.rec.w, now) :
					      NULL;
	}
	if (!k)
		return;
	k->flags |= FC_KEY_RELEASE;
	if (!f->release_at_ns)
		f->release_at_ns = now + (uint64_t)f->o.interval_ms * 250000ULL; /* within I/4 */
}

/* Every node's share of a key of point u in window w of p, as the record
 * is made with them (s<j>): each member's split of the set, made as the
 * loader makes it. Their sum (q, by construction). */
static uint64_t fc_call_shares(const struct fc_fleet *f, const struct fc_fleet_set *set, const struct fc_fleet_policy *p,
			       uint64_t w, uint32_t u, uint64_t *shares, uint32_t *nos)
{
	const struct fc_pol_keep *kp = fc_keep_of(f, p, w);
	struct fc_fleet_split sp;
	uint64_t n = 0;
	size_t j;

	for (j = 0; j < set->n; j++) {
		fc_fleet_split_make(set->m, set->n, j, kp ? kp->q : p->burst, w, p->unit_ns,
				    p->algo == FC_ALGO_FLEET_GCRA ? p->n : 0, &sp);
		nos[j] = set->m[j].no;
		shares[j] = fc_fleet_share(&sp, u);
		n += shares[j];
	}
	return n;
}

/* A record's TTL, set by whoever makes it, relative so that Redis's clock
 * does not matter: to the window's end on this clock, then 2 x the skew
 * bound (this node may be up to the bound ahead and another up to the bound
 * behind, still in the window and calling), one interval (that node's last
 * call) and a second's margin. Shorter, a lagging node could find the
 * record gone and make it anew with nothing granted nor released. */
static uint64_t fc_record_ttl_ms(const struct fc_fleet *f, uint64_t end, uint64_t now)
{
	return (end > now ? (end - now) / 1000000 : 0) + 2 * (uint64_t)f->o.max_skew_ms + f->o.interval_ms + 1000;
}

/* What every call of key k carries: this node, its record's name, the
 * split's node set and sum n (the shares themselves: the caller's), a TTL
 * to end (fc_record_ttl_ms) and its absolute totals. */
static void fc_call_base(const struct fc_fleet *f, const struct fc_fleet_key *k, const struct fc_fleet_set *set,
			 const char *name, uint64_t n, uint64_t end, uint64_t now, struct fc_fleet_call *c)
{
	*c = (struct fc_fleet_call){
		.no = f->cfg.node_no,
		.n = n,
		.set = set->digest,
		.ttl_ms = fc_record_ttl_ms(f, end, now),
		.adopt = k->flags & FC_KEY_ADOPT,
		.g_app = k->g_app,
		.r_lock = k->r_lock,
		.nshares = (uint32_t)set->n,
	};
	memcpy(c->record, name, sizeof(c->record));
}

/* What a gcra key sends its lease pool this round (design 8.3). Short
 * here, it asks for a lease: what it met last round, twice, less what its
 * bucket and lease credit hold, and at least what was refused; lambda at
 * most per lease window. Asked for by another node, it donates its bucket's
 * tokens while idle (fc_fleet_donate: only tokens it has), lambda at most
 * per pool. The pool's record is made with the split of B (s_j, n = N = B,
 * so free = R - G): the nodes with a share that neither ask nor said they
 * hold nothing are the holders a short pool publishes its demand to. */
static int fc_gcra_call(struct fc_fleet *f, struct fc_fleet_key *k, const struct fc_fleet_policy *p, uint64_t now,
			struct fc_fleet_call *c, uint64_t *shares, uint32_t *nos)
{
	uint64_t uw = k->w * p->lease_ns / p->unit_ns, iv = fc_gcra_interval(p, k->w), lambda, tokens, credit, lease,
		 want = 0, end, n;
	const struct fc_fleet_set *set = fc_set_of(f, p, uw);
	struct fc_fleet_rec rec = { .id = p->id,
				    .epoch = p->epoch,
				    .kid = k->index == FC_FLEET_FIXED ? 0 : k->tag,
				    .kind = FC_FLEET_REC_POOL,
				    .unit = p->lease_ns / 1000000,
				    .w = k->w };
	char name[FC_FLEET_NAME_MAX];
	struct fc_words wd;
	struct fc_err err;
	bool idle, releasing = k->flags & FC_KEY_RELEASE, reassert = k->flags & (FC_KEY_ADOPT | FC_KEY_REASSERT);

	if (fc_key_words(f, k, p, &wd) < 0)
		return 0;
	lambda = fc_key_lambda(f, k, p);
	idle = wd.passed == k->passed_seen && wd.denied == k->denied_seen;
	/* A fixed key's slot never charged on a node whose state is new is
	 * empty at its birth, as nginx makes it at its first charge. */
	if (k->index == FC_FLEET_FIXED && now < fc_fresh_of(f, p) + wd.tau)
		__sync_val_compare_and_swap(wd.credit, 0, fc_fresh_of(f, p) + wd.tau);
	if (releasing && idle && k->r_lock < lambda)
		k->r_lock += fc_fleet_donate(wd.credit, iv, wd.tau, now, lambda - k->r_lock);
	tokens = fc_fleet_gcra_tokens(__atomic_load_n(wd.credit, __ATOMIC_RELAXED), iv, wd.tau, now);
	credit = fc_fleet_credit(__atomic_load_n(wd.net, __ATOMIC_RELAXED), k->w);
	lease = 2 * ((uint64_t)(wd.passed > k->passed_seen ? wd.passed - k->passed_seen : 0) +
		     (wd.denied > k->denied_round ? wd.denied - k->denied_round : 0));
	k->denied_round = wd.denied;
	k->idle_rounds = idle ? (k->idle_rounds < 255 ? k->idle_rounds + 1 : 255) : 0;
	k->passed_seen = wd.passed;
	if (!(k->flags & (FC_KEY_DONE | FC_KEY_FROZEN)) && f->rounds >= k->quiet_until && k->g_app < lambda) {
		if (fc_fleet_wanted(__atomic_load_n(wd.demand, __ATOMIC_RELAXED), k->w))
			want = wd.denied > k->denied_seen ? wd.denied - k->denied_seen : 1;
		if (lease > tokens + credit && lease - tokens - credit > want)
			want = lease - tokens - credit;
		want = want < lambda - k->g_app ? want : lambda - k->g_app;
	}
	if (!want && !reassert && k->r_lock <= k->r_acked && !releasing)
		return 0;
	/* told once: a pool still short publishes again */
	k->flags &= (uint8_t)~FC_KEY_RELEASE;
	if (fc_fleet_rec_name(&rec, fc_redis_prefix(f->redis), name, sizeof(name), &err) < 0)
		return 0;
	end = (k->w + 1) * p->lease_ns;
	n = fc_call_shares(f, set, p, uw, wd.u, shares, nos);
	fc_call_base(f, k, set, name, n, end, now, c);
	c->share_no = nos;
	c->share = shares;
	c->limit = n;
	c->want = want;
	c->settled = !want && (!tokens || k->r_lock >= lambda); /* nothing (more) to give in this pool */
	return 1;
}

/* The most a reply's totals may differ by (fc_fleet_reply_parse's N*): a
 * pool's donations are at most lambda a node. */
static uint64_t fc_key_nstar(const struct fc_fleet *f, const struct fc_fleet_key *k, const struct fc_fleet_policy *p)
{
	size_t nodes;
	uint64_t most;

	if (!fc_pol_gcra(p))
		return fc_nstar(f, p, k->w);
	nodes = fc_set_of(f, p, k->w * p->lease_ns / p->unit_ns)->n;
	most = (nodes ? nodes : 1) * fc_gcra_lambda(p, nodes);
	return most > p->burst ? most : p->burst;
}

/* What a key is to send this round: its call filled, or 0 (nothing to say). */
static int fc_key_call(struct fc_fleet *f, struct fc_fleet_key *k, const struct fc_fleet_policy *p, uint64_t now,
		       struct fc_fleet_call *c, uint64_t *shares, uint32_t *nos)
{
	const struct fc_fleet_set *set = fc_set_of(f, p, k->w);
	struct fc_fleet_rec rec = { .id = p->id,
				    .epoch = p->epoch,
				    .kind = FC_FLEET_REC_WINDOW,
				    .unit = p->unit_ns / 1000000000ULL,
				    .w = k->w };
	uint64_t allot, credit, used, want = 0, n = 0, end, word, lease;
	char name[FC_FLEET_NAME_MAX];
	struct fc_words wd;
	struct fc_err err;
	bool idle, releasing, reassert = k->flags & (FC_KEY_ADOPT | FC_KEY_REASSERT);

	if (fc_pol_gcra(p))
		return fc_gcra_call(f, k, p, now, c, shares, nos);
	if (fc_key_words(f, k, p, &wd) < 0)
		return 0;
	idle = wd.passed == k->passed_seen && wd.denied == k->denied_seen;
	if (k->flags & FC_KEY_RELEASE && idle && k->idle_rounds >= 1)
		fc_key_release(f, k, p, &wd, now);
	allot = fc_key_allot(f, k, p, &wd); /* 0, not wrapped, where the share fell below what was released */
	word = __atomic_load_n(wd.credit, __ATOMIC_RELAXED);
	/* left: what it holds (window: credit; sliding: room) */
	credit = !fc_key_in_w(p, word, k->w)      ? 0 :
		 p->algo == FC_ALGO_FLEET_SLIDING ? FC_FLEET_SLIDE_ROOM(word) :
						    FC_FLEET_WORD_CREDIT(word);
	used = fc_key_in_w(p, word, k->w) && credit <= allot ? allot - credit : 0;
	/* A lease: what the key met in the last round (passed or refused),
	 * for the two rounds until the next grant lands. Asking for what was
	 * refused alone leaves a paced key short every other round. */
	lease = 2 * ((uint64_t)(wd.passed > k->passed_seen ? wd.passed - k->passed_seen : 0) +
		     (wd.denied > k->denied_round ? wd.denied - k->denied_round : 0));
	k->denied_round = wd.denied;
	k->idle_rounds = idle ? (k->idle_rounds < 255 ? k->idle_rounds + 1 : 255) : 0;
	k->passed_seen = wd.passed;
	if (k->flags & FC_KEY_DONE && p->n != k->n_done)
		k->flags &= (uint8_t)~FC_KEY_DONE; /* N changed: there may be more */
	if (!(k->flags & (FC_KEY_DONE | FC_KEY_FROZEN)) && f->rounds >= k->quiet_until) {
		/* Refused (the demand flag): what was refused, and the lease;
		 * active with less credit than the lease: the rest of it, asked
		 * before the key runs out. */
		if (fc_fleet_wanted(__atomic_load_n(wd.demand, __ATOMIC_RELAXED), k->w))
			want = wd.denied > k->denied_seen ? wd.denied - k->denied_seen : 1;
		if (fc_key_in_w(p, word, k->w) && lease > credit && lease - credit > want)
			want = lease - credit;
		want = want < p->n ? want : p->n;
	}
	if (!want && !reassert && k->r_lock <= k->r_acked && (k->index != FC_FLEET_FIXED || used == k->u_sent) &&
	    !(k->flags & FC_KEY_RELEASE && !credit))
		return 0;
	releasing = k->flags & FC_KEY_RELEASE;
	if (!credit)
		k->flags &= (uint8_t)~FC_KEY_RELEASE; /* told: settled, or released */
	rec.kid = k->index == FC_FLEET_FIXED ? 0 : k->tag;
	if (fc_fleet_rec_name(&rec, fc_redis_prefix(f->redis), name, sizeof(name), &err) < 0)
		return 0;
	end = (k->w + 1) * p->unit_ns;
	n = fc_call_shares(f, set, p, k->w, wd.u, shares, nos);
	fc_call_base(f, k, set, name, n, end, now, c);
	c->share_no = nos;
	c->share = shares;
	c->limit = p->n;
	c->used = used;
	c->want = want;
	c->settled = (k->idle_rounds >= 2 || releasing) && !credit && !want;
	k->u_sent = used;
	return 1;
}

/* Applies key k's answer. */
static void fc_key_apply(struct fc_fleet *f, struct fc_fleet_key *k, const struct fc_fleet_policy *p,
			 const struct fc_fleet_call *c, const struct fc_fleet_result *res, uint32_t denied)
{
	struct fc_words wd;
	uint64_t d;
	int rc;

	if (res->status == FC_FLEET_R_OTHER_SET) {
		if (!f->logged_other_set)
			fc_warn("fleet: policy %u: node set differs from the record's (n %" PRIu64 "); store behind?",
				p->id, res->n);
		f->logged_other_set = true;
		return;
	}
	if (c->adopt) { /* what Redis holds of ours: a grant never applied is lost, never doubled */
		k->g_app = res->g;
		k->asked = 0;
		k->r_lock = k->r_lock > res->r ? k->r_lock : res->r;
		k->r_acked = res->r;
		k->flags &= (uint8_t)~FC_KEY_ADOPT;
		return;
	}
	if (k->flags & FC_KEY_REASSERT)
		f->cnt.reasserted++;
	k->flags &= (uint8_t)~FC_KEY_REASSERT;
	k->r_acked = res->r;
	if (res->frozen && !(k->flags & FC_KEY_FROZEN)) {
		k->flags |= FC_KEY_FROZEN;
		f->cnt.frozen++;
	}
	if (res->free <= 0 && !res->holders) {
		k->flags |= FC_KEY_DONE;
		k->n_done = p->n;
	}
	/* Asked in vain three rounds while holders hold on (one may be down):
	 * back off 2, 4, ... rounds, up to 10 s (design §8.1). */
	if (c->want && res->g <= k->g_app && res->holders) {
		if (++k->short_rounds >= 3) {
			uint64_t most = f->o.interval_ms ? 10000 / f->o.interval_ms : 100;
			uint64_t rounds = 1ULL << (k->short_rounds - 2 < 16 ? k->short_rounds - 2 : 16);

			k->quiet_until = f->rounds + 1 + (rounds < most ? rounds : most);
		}
	} else if (res->g > k->g_app) {
		k->short_rounds = 0;
	}
	if (!res->confirmed || res->g <= k->g_app || fc_key_words(f, k, p, &wd) < 0)
		return;
	d = res->g - k->g_app;
	rc = fc_key_topup(f, k, p, &wd, d);
	if (rc == FC_FLEET_DONE || rc == FC_FLEET_LAPSED) {
		/* LAPSED: the key's window is over here: the grant lapses (it is
		 * counted in Redis as ours: under-admission only). */
		k->g_app = res->g;
		k->asked = 0;
		if (rc == FC_FLEET_DONE) {
			k->granted += d;
			k->denied_seen = denied;
			/* satisfied: the next refusal sets the flag and rings again */
			if (d >= c->want)
				__sync_bool_compare_and_swap(wd.demand, FC_FLEET_WORD(k->w, FC_FLEET_WANTED), 0);
		}
	}
}

/* ---- the round ---- */

/* Room for n calls and nshares shares of theirs. */
static int fc_round_room(struct fc_fleet *f, size_t n, size_t nshares)
{
	size_t c1 = f->ncall_cap, c2 = f->ncall_cap, c3 = f->shares_cap, c4 = f->shares_cap;

	if (fc_grow((void **)&f->call_key, &c1, n, sizeof(*f->call_key)) ||
	    fc_grow((void **)&f->expect, &c2, n, sizeof(*f->expect)) ||
	    fc_grow((void **)&f->shares, &c3, nshares, sizeof(*f->shares)) ||
	    fc_grow((void **)&f->share_nos, &c4, nshares, sizeof(*f->share_nos)))
		return -1;
	f->ncall_cap = c1;
	f->shares_cap = c3;
	return 0;
}

/* A new connection to a primary may have lost what the last one had
 * confirmed nothing of (a restart, a failover): every key with totals
 * sends them again. */
static void fc_reassert_check(struct fc_fleet *f)
{
	struct fc_redis_stats st;
	size_t i;

	fc_redis_stats(f->redis, &st);
	if (f->connects_seen && st.connects != f->connects_seen)
		for (i = 0; i < f->nk; i++)
			if (f->keys[i].g_app || f->keys[i].r_lock)
				f->keys[i].flags |= FC_KEY_REASSERT;
	/* Connections made once one was lost (a restart, a failover): the
	 * status's reconnects; the first ones to each node are not. */
	if (st.failures && f->connects_seen && st.connects > f->connects_seen)
		f->cnt.reconnects += st.connects - f->connects_seen;
	f->connects_seen = st.connects;
}

/* This node's passes per fleet policy in its current window, into out
 * (npolicies of them): the slot's passes since the window began, as this
 * agent saw it begin (f->mine keeps each one's window and base). */
static size_t fc_beat_mine(struct fc_fleet *f, uint64_t now, struct fc_fleet_beat_pol *out)
{
	size_t i;
	void *more;

	if (f->nmine != f->cfg.npols) {
		more = realloc(f->mine, (f->cfg.npols + 1) * sizeof(*f->mine));
		if (!more)
			return 0;
		f->mine = more;
		memset(f->mine, 0, (f->cfg.npols + 1) * sizeof(*f->mine));
		f->nmine = f->cfg.npols;
	}
	for (i = 0; i < f->nmine; i++) {
		const struct fc_fleet_policy *p = &f->cfg.pols[i];
		uint64_t w = now / p->unit_ns, passed;

		passed = f->map.base && p->layer != FC_LAYER_XDP && p->slot < FC_SHM_SLOTS ?
				 __atomic_load_n(&fc_slot(f, p->slot)->passed, __ATOMIC_RELAXED) :
				 0;
		if (f->mine[i].id != p->id || f->mine[i].window != w || passed < f->mine[i].passed)
			f->mine[i] = (struct fc_fleet_beat_pol){ .id = p->id, .window = w, .passed = passed };
		out[i] = (struct fc_fleet_beat_pol){ .id = p->id, .window = w, .passed = passed - f->mine[i].passed };
	}
	return f->nmine;
}

/* The heartbeat, once a second (or at each retry while degraded): the
 * clock's offset held against --fleet-max-skew. -1 when it failed (Redis
 * away), 0 otherwise. */
static int fc_round_beat(struct fc_fleet *f, uint64_t now, struct fc_err *err)
{
	struct fc_fleet_beat_pol *pols;
	int64_t off, max = (int64_t)f->o.max_skew_ms * 1000000;
	size_t n;
	int rc;

	/* Also each round while a failure is unconfirmed (fewer than
	 * FC_FLEET_FAILS in a row): a node with nothing to ask learns that
	 * Redis is gone within that many rounds, not seconds. */
	if (now < f->beat_at_ns && !(f->fails && f->fails < FC_FLEET_FAILS) &&
	    !(f->mode == FC_FLEET_MODE_DEGRADED && now >= f->retry_at_ns))
		return 1;
	f->beat_at_ns = now + 1000000000ULL;
	pols = calloc(f->cfg.npols + 1, sizeof(*pols));
	n = pols ? fc_beat_mine(f, now, pols) : 0;
	rc = fc_fleet_beat_run(&f->beat, f->redis, f->o.node, f->cfg.node_no, fc_fleet_mode_name(f->mode), f->rounds,
			       pols, n, f->o.clock_ns, err);
	free(pols);
	f->cnt.commands += 1 + f->beat.pings;
	if (rc < 0)
		return -1;
	off = fc_fleet_beat_offset(&f->beat);
	off = off < 0 ? -off : off;
	if (max && off > max && !f->clock_bad) {
		f->clock_bad = true;
		snprintf(f->clock_why, sizeof(f->clock_why), "clock %lld ms from Redis (max %u)",
			 (long long)(fc_fleet_beat_offset(&f->beat) / 1000000), f->o.max_skew_ms);
	} else if (f->clock_bad && off <= max / 10 * 8) {
		f->clock_bad = false;
	}
	return 0;
}

/* A call the record answered wrong (refused, failed, a reply that does not
 * check, a grant above what this node could be granted): that key gets nothing this round; the round goes on. Counted, and
 * logged once a minute. */
static void fc_key_refused(struct fc_fleet *f, const char *msg, uint64_t now)
{
	f->cnt.reply_errors++;
	if (f->refused_log_ns && now - f->refused_log_ns < 60000000000ULL)
		return;
	f->refused_log_ns = now;
	fc_warn("fleet: %s (that key only)", msg);
}

/* Whether a reply's g is no more than this node could rightly be granted:
 * every node writes Redis with the same credentials, so a record's g is
 * hostile, and applied whole it would be credit without limit. A window
 * or sliding key's allotment, share + g - r_lock, is never above N* (the
 * script keeps s_i + g - r within it, and r <= r_lock); a gcra key
 * borrows at most lambda per lease window (fc_gcra_call asks within it);
 * and the script grants only while g is what was applied, at most what
 * the call wanted: g - g_app above the most asked since is no grant of
 * its. 0, or -1 with why. */
static int fc_key_grant_check(const struct fc_fleet *f, const struct fc_fleet_key *k, const struct fc_fleet_policy *p,
			      const struct fc_fleet_call *c, const struct fc_fleet_result *res, char *why, size_t len)
{
	uint64_t most, held = res->g, rl = c->adopt && res->r > k->r_lock ? res->r : k->r_lock;
	struct fc_words wd;

	if (fc_pol_gcra(p)) {
		most = fc_key_lambda(f, k, p);
	} else {
		most = fc_nstar(f, p, k->w) + rl; /* adopting: r_lock becomes r */
		held += fc_key_words(f, k, p, &wd) < 0 ? 0 : fc_my_share(f, p, wd.u, k->w);
	}
	if (held > most) {
		if (fc_pol_gcra(p))
			snprintf(why, len,
				 "%s: this node's g %" PRIu64 " is above lambda %" PRIu64
				 " (written outside freqctl?): not applied",
				 c->record, res->g, most);
		else
			snprintf(why, len,
				 "%s: this node's g %" PRIu64 " makes its share + grants - releases %" PRIu64
				 ", above N* %" PRIu64 " (written outside freqctl?): not applied",
				 c->record, res->g, held - rl, most - rl);
		return -1;
	}
	if (!c->adopt && res->g > k->g_app && res->g - k->g_app > k->asked) {
		snprintf(why, len,
			 "%s: this node's g %" PRIu64 " is %" PRIu64 " above the %" PRIu64
			 " applied, more than the %" PRIu64 " asked since (written outside freqctl?): not applied",
			 c->record, res->g, res->g - k->g_app, k->g_app, k->asked);
		return -1;
	}
	return 0;
}

/* Sends the round's calls (at most max_keys) and applies the answers:
 * -1 when the round failed (Redis away, slow or wrong), with err. */
static int fc_round_calls(struct fc_fleet *f, uint64_t now, struct fc_err *err)
{
	size_t i, j, n = 0, off = 0, most = 1, max = f->o.max_keys ? f->o.max_keys : 20000;
	uint32_t *denied;
	long bad = 0;

	for (i = 0; i < f->cfg.nsets; i++)
		most = f->cfg.sets[i].n > most ? f->cfg.sets[i].n : most;
	if (fc_round_room(f, f->nk, f->nk * most) < 0)
		return fc_err_set(err, "fleet: out of memory");
	denied = calloc(f->nk + 1, sizeof(*denied));
	if (!denied)
		return fc_err_set(err, "fleet: out of memory");
	fc_fleet_batch_reset(&f->batch);
	/* Past --fleet-max-keys, the keys left wait: the next round starts
	 * with them. */
	for (j = 0; j < f->nk && n < max; j++) {
		struct fc_fleet_key *k = &f->keys[i = (f->rr + j) % f->nk];
		const struct fc_fleet_policy *p = fc_pol_by_id(f, k->id, k->epoch);
		struct fc_fleet_call *c;
		struct fc_words wd;

		if (!p || fc_key_words(f, k, p, &wd) < 0)
			continue;
		c = fc_fleet_batch_add(&f->batch);
		if (!c)
			break;
		if (!fc_key_call(f, k, p, now, c, f->shares + off, f->share_nos + off)) {
			f->batch.n--;
			continue;
		}
		off += c->nshares;
		k->asked = c->want > k->asked ? c->want : k->asked;
		denied[n] = wd.denied;
		f->call_key[n] = i;
		f->expect[n++] = (struct fc_fleet_expect){ .nstar = fc_key_nstar(f, k, p),
							   .g_app = k->g_app,
							   .adopt = c->adopt };
	}
	if (j < f->nk) {
		f->cnt.deferred += f->nk - j;
		f->rr = (f->rr + j) % f->nk;
	}
	if (!n) {
		free(denied);
		return 1; /* nothing sent: the heartbeat tells what Redis is */
	}
	f->batch.wait_ms = f->o.interval_ms / 2 ? f->o.interval_ms / 2 : 1;
	f->batch.wait_max = f->o.wait_replicas;
	bad = fc_fleet_batch_run(&f->batch, f->redis, f->expect, err);
	f->cnt.scripts += n;
	f->cnt.waits += f->batch.nwaits;
	f->cnt.commands += n + f->batch.nwaits;
	for (i = 0; bad >= 0 && i < n; i++) {
		const struct fc_fleet_result *res = &f->batch.res[i];
		struct fc_fleet_key *k = &f->keys[f->call_key[i]];
		const struct fc_fleet_policy *p = fc_pol_by_id(f, k->id, k->epoch);
		char why[FC_ERR_LEN];

		if (res->status == FC_FLEET_R_DONE &&
		    fc_key_grant_check(f, k, p, &f->batch.call[i], res, why, sizeof(why)) < 0)
			fc_key_refused(f, why, now);
		else if (res->status == FC_FLEET_R_DONE || res->status == FC_FLEET_R_OTHER_SET)
			fc_key_apply(f, k, p, &f->batch.call[i], res, denied[i]);
		else if (res->status == FC_FLEET_R_REFUSED)
			fc_key_refused(f, res->msg, now);
	}
	free(denied);
	return bad ? -1 : 0;
}

static void fc_mode_set(struct fc_fleet *f, enum fc_fleet_mode mode, const char *reason, uint64_t now_ms)
{
	if (mode == FC_FLEET_MODE_DEGRADED && f->mode != FC_FLEET_MODE_DEGRADED) {
		fc_warn("fleet: degraded: %s", reason);
		f->cnt.degraded++;
		f->reasserted_at = f->cnt.reasserted;
		f->degraded_at_ms = now_ms;
	} else if (mode == FC_FLEET_MODE_FLEET && f->mode == FC_FLEET_MODE_DEGRADED) {
		fc_warn("fleet: fleet mode again after %.1f s (re-asserted %" PRIu64 " records)",
			(double)(now_ms - f->degraded_at_ms) / 1000, f->cnt.reasserted - f->reasserted_at);
		f->cnt.degraded_ms += now_ms - f->degraded_at_ms;
	}
	if (mode != f->mode)
		f->since_ms = now_ms;
	f->mode = mode;
	snprintf(f->reason, sizeof(f->reason), "%s", mode == FC_FLEET_MODE_DEGRADED ? reason : "");
}

static int fc_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* This round's status, for the status file. */
static void fc_status_fill(struct fc_fleet *f, uint64_t now, double ms)
{
	struct fc_redis_node_info info[16];
	struct fc_fleet_status *v = &f->status;
	struct fc_redis_stats st;
	double sorted[FC_FLEET_LAT_N];
	size_t i, j, n, nl = f->rounds < FC_FLEET_LAT_N ? f->rounds : FC_FLEET_LAT_N;
	void *more;

	f->lat[f->rounds % FC_FLEET_LAT_N] = ms;
	f->lat_sum += ms;
	memcpy(sorted, f->lat, sizeof(sorted));
	qsort(sorted, nl ? nl : 1, sizeof(double), fc_cmp_double);
	more = realloc(f->vpol, (f->cfg.npols + 1) * sizeof(*f->vpol));
	if (more)
		f->vpol = more;
	n = fc_redis_nodes(f->redis, info, 16);
	for (i = 0, j = 0; i < n && i < 16; i++)
		if (info[i].primary)
			f->vprim[j++] = (struct fc_fleet_status_primary){ .slots = info[i].slots,
									  .replicas = info[i].replicas,
									  .up = info[i].connected },
			memcpy(f->vprim[j - 1].addr, info[i].name, sizeof(f->vprim[j - 1].addr));
	*v = (struct fc_fleet_status){
		.node_no = f->cfg.node_no,
		.mode = f->mode,
		.since_ms = (int64_t)f->since_ms,
		.last_sync_ms = (int64_t)f->last_sync_ms,
		.rounds = f->rounds,
		.interval_ms = f->o.interval_ms,
		.lat_last = ms,
		.lat_p50 = nl ? sorted[nl / 2] : 0,
		.lat_p99 = nl ? sorted[(nl * 99) / 100] : 0,
		.lat_sum = f->lat_sum,
		.redis_mode = fc_redis_mode(f->redis),
		.wait = f->batch.nwaits ? f->batch.wait_need[0] : 0,
		.nprimaries = j,
		.primaries = f->vprim,
		.max_skew_ms = f->o.max_skew_ms,
		.test_offset_ms = f->o.clock_ns / 1000000,
		.counters = f->cnt,
		.keys = f->nk,
	};
	/* The client's own counts of redirections followed. */
	fc_redis_stats(f->redis, &st);
	v->counters.moved = st.moved;
	v->counters.ask = st.ask;
	/* replies the client refused, and the heartbeat's that did not check */
	v->counters.reply_errors += st.bad_replies + f->beat.reply_errors;
	v->offset_ms = (double)fc_fleet_beat_offset(&f->beat) / 1e6;
	v->nnodes = f->beat.nnodes;
	v->nodes = f->beat.nodes;
	for (i = 0; i < f->beat.nnodes; i++)
		fc_fleet_status_node_set(&f->beat.nodes[i], &f->cfg, now);
	snprintf(v->node, sizeof(v->node), "%s", f->o.node);
	snprintf(v->reason, sizeof(v->reason), "%s", f->reason);
	if (!more)
		return;
	for (i = 0; i < f->cfg.npols; i++) {
		const struct fc_fleet_policy *p = &f->cfg.pols[i];
		struct fc_fleet_status_policy *vp = &f->vpol[i];
		static const char *const units[] = { "s", "m", "h", "d" };
		uint64_t u = p->unit_ns / 1000000000ULL;

		*vp = (struct fc_fleet_status_policy){ .id = p->id,
						       .algo = p->algo == FC_ALGO_FLEET_SLIDING ? "sliding" :
							       p->algo == FC_ALGO_FLEET_GCRA    ? "gcra" :
												  "window",
						       .limit = p->n,
						       .window = now / p->unit_ns,
						       .fleet_used =
							       fc_fleet_beat_used(&f->beat, p->id, now / p->unit_ns),
						       .unit = units[u >= 86400 ? 3 :
								     u >= 3600  ? 2 :
								     u >= 60    ? 1 :
										  0] };
		for (j = 0; j < f->nk; j++) {
			const struct fc_fleet_key *k = &f->keys[j];
			struct fc_words wd;

			if (k->id != p->id || k->epoch != p->epoch || fc_key_words(f, k, p, &wd) < 0)
				continue;
			vp->tracked++;
			vp->credit += fc_key_left(f, p, &wd, k->w, now);
			vp->node_used += k->u_sent;
			vp->demanding += fc_fleet_wanted(*wd.demand, k->w);
			vp->done += !!(k->flags & FC_KEY_DONE);
			vp->grants += k->granted;
			*(fc_pol_gcra(p) ? &vp->donated : &vp->releases) += k->r_lock; /* gcra: tokens */
		}
	}
	v->npolicies = f->cfg.npols;
	v->policies = f->vpol;
}

/* The mode after a round that failed (rc -1), reached Redis (0) or had
 * nothing to ask it (1). Degraded: three failed rounds in a row, or the
 * clock too far; back when neither holds. */
static void fc_round_mode(struct fc_fleet *f, int rc, const char *why, uint64_t now, uint64_t now_ms)
{
	if (rc < 0) {
		f->fails++;
		f->backoff_ms = f->backoff_ms ? (f->backoff_ms * 2 > 1000 ? 1000 : f->backoff_ms * 2) : 100;
		f->retry_at_ns = now + f->backoff_ms * 1000000ULL;
	} else if (rc == 0) {
		f->fails = 0;
		f->backoff_ms = 0;
		f->last_sync_ms = now_ms;
	}
	if (f->clock_bad)
		fc_mode_set(f, FC_FLEET_MODE_DEGRADED, f->clock_why, now_ms);
	else if (f->fails >= FC_FLEET_FAILS && rc < 0)
		fc_mode_set(f, FC_FLEET_MODE_DEGRADED, why, now_ms);
	else if (f->fails < FC_FLEET_FAILS && (rc == 0 || (f->mode == FC_FLEET_MODE_DEGRADED && !f->fails)))
		fc_mode_set(f, f->cfg.npols ? FC_FLEET_MODE_FLEET : FC_FLEET_MODE_OFF, "", now_ms);
}

void fc_fleet_round(struct fc_fleet *f, uint64_t now)
{
	uint64_t t0 = fc_utc_ns(), now_ms = now / 1000000;
	struct fc_err err = { .msg = "" }, berr;
	int rc, beat;

	pthread_mutex_lock(&f->lock);
	if (f->next) { /* the snapshot the main loop left: taken whole */
		fc_keep_update(f, f->next, now + (uint64_t)f->o.clock_ns);
		fc_cfg_free(&f->cfg);
		f->cfg = *f->next;
		free(f->next);
		f->next = NULL;
	}
	if (f->has_next_o) {
		f->o = f->next_o;
		f->has_next_o = false;
	}
	pthread_mutex_unlock(&f->lock);
	now += (uint64_t)f->o.clock_ns;
	fc_fresh_read(f);
	if (!f->rounds) {
		f->since_ms = now_ms;
		f->started_ns = now;
	}
	fc_keys_expire(f, now);
	/* No state file yet (nginx has not started, the first publish is on
	 * its way): nothing to lease, but the heartbeat still runs. */
	rc = 1;
	if (fc_state_map(f) == 0) {
		fc_ring_drain(f, now);
		fc_fixed_track(f, now);
		/* The subscriber's connection lost (Redis killed, a failover):
		 * the heartbeat checks this round whether Redis is away. */
		if (fc_fleet_sub_poll(&f->sub, f->redis, fc_on_demand, f) < 0)
			f->beat_at_ns = 0;
		f->release_at_ns = 0;
		f->records_round = 0;
		fc_reassert_check(f);
		/* degraded: try again no more often than the backoff; the clock
		 * too far: no grants, releases or reports (design §6) */
		if (!f->clock_bad && (f->mode != FC_FLEET_MODE_DEGRADED || now >= f->retry_at_ns))
			rc = fc_round_calls(f, now, &err);
	}
	beat = fc_round_beat(f, now, &berr);
	if (beat < 0 && rc >= 0)
		err = berr;
	rc = rc < 0 || beat < 0 ? -1 : rc && beat ? 1 : 0;
	if (f->map.base && fc_fleet_map_lost(&f->map))
		rc = rc ? rc : 1; /* void: the file changed under us; mapped again next round */
	fc_round_mode(f, rc, err.msg, now, now_ms);
	f->rounds++;
	fc_status_fill(f, now, (double)(fc_utc_ns() - t0) / 1e6);
	/* Once per episode: what fails here fails every round (a directory
	 * someone put at the file's path). */
	if (f->o.status_shm[0] && fc_fleet_status_write(f->o.status_shm, &f->status, &err) < 0) {
		if (!f->status_failing)
			fc_warn("%s: fleet status, stats and /metrics read it (not logged again until it is written)",
				err.msg);
		f->status_failing = true;
	} else {
		f->status_failing = false;
	}
}

const struct fc_fleet_status *fc_fleet_status_of(const struct fc_fleet *f)
{
	return &f->status;
}

struct fc_fleet *fc_fleet_new(const struct fc_fleet_opts *o, const struct fc_fleet_cfg *cfg, struct fc_redis *redis,
			      struct fc_err *err)
{
	struct fc_fleet *f = calloc(1, sizeof(*f));

	if (!f) {
		fc_err_set(err, "fleet: out of memory");
		return NULL;
	}
	f->o = *o;
	if (fc_cfg_copy(&f->cfg, cfg, err) < 0) {
		free(f);
		return NULL;
	}
	f->redis = redis;
	fc_fleet_batch_init(&f->batch);
	fc_fleet_sub_init(&f->sub);
	f->pstats_fd = -1;
	pthread_mutex_init(&f->lock, NULL);
	f->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	return f;
}

void fc_fleet_free(struct fc_fleet *f)
{
	if (!f)
		return;
	fc_fleet_map_close(&f->map);
	fc_fleet_map_close(&f->xdp);
	if (f->pstats_fd >= 0)
		close(f->pstats_fd);
	fc_fleet_sub_close(&f->sub);
	fc_fleet_batch_free(&f->batch);
	fc_cfg_free(&f->cfg);
	if (f->next) {
		fc_cfg_free(f->next);
		free(f->next);
	}
	free(f->keys);
	free(f->kidx);
	free(f->keep);
	free(f->call_key);
	free(f->expect);
	free(f->shares);
	free(f->share_nos);
	free(f->vpol);
	free(f->mine);
	pthread_mutex_destroy(&f->lock);
	if (f->stop_fd >= 0)
		close(f->stop_fd);
	free(f);
}

/* ---- the thread ---- */

static uint64_t fc_mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* The thread: a round every interval; between rounds, poll() on the demand
 * subscriber, and when a demand is heard an early round (releases go out
 * within I/4 of the first message, at most one early round an interval). */
static void *fc_fleet_main(void *arg)
{
	struct fc_fleet *f = arg;
	uint64_t now, next = 0, last = 0, early = 0;
	struct pollfd pfd[2];
	int n, timeout;

	while (!__atomic_load_n(&f->stop, __ATOMIC_ACQUIRE)) {
		now = fc_mono_ms();
		if (now >= next || (f->release_at_ns && fc_utc_ns() >= f->release_at_ns && early <= last)) {
			if (now < next)
				early = now;
			fc_fleet_round(f, fc_utc_ns());
			last = now;
			if (now >= next)
				next = now + f->o.interval_ms;
			continue;
		}
		timeout = (int)(next - now);
		if (f->release_at_ns && early <= last)
			timeout = timeout < (int)(f->o.interval_ms / 4) ? timeout : (int)(f->o.interval_ms / 4);
		pfd[0] = (struct pollfd){ .fd = f->stop_fd, .events = POLLIN };
		pfd[1] = (struct pollfd){ .fd = f->sub.fd, .events = POLLIN };
		n = f->sub.fd >= 0 ? 2 : 1;
		if (poll(pfd, (nfds_t)n, timeout > 0 ? timeout : 1) > 0 && n == 2 && pfd[1].revents &&
		    fc_fleet_sub_poll(&f->sub, f->redis, fc_on_demand, f) < 0)
			f->beat_at_ns = 0; /* lost: the next round's heartbeat checks Redis */
	}
	return NULL;
}

struct fc_fleet *fc_fleet_start(const struct fc_fleet_opts *o, const struct fc_fleet_cfg *cfg, struct fc_redis *redis,
				struct fc_err *err)
{
	struct fc_fleet *f = fc_fleet_new(o, cfg, redis, err);
	int rc;

	if (!f)
		return NULL;
	rc = pthread_create(&f->thread, NULL, fc_fleet_main, f);
	if (rc) {
		fc_err_set(err, "fleet: thread: %s", strerror(rc));
		fc_fleet_free(f);
		return NULL;
	}
	f->running = true;
	return f;
}

int fc_fleet_update(struct fc_fleet *f, const struct fc_fleet_opts *o, const struct fc_fleet_cfg *cfg,
		    struct fc_err *err)
{
	struct fc_fleet_cfg *c = cfg ? calloc(1, sizeof(*c)) : NULL;

	if (cfg && !c)
		return fc_err_set(err, "fleet: out of memory");
	if (c && fc_cfg_copy(c, cfg, err) < 0) {
		free(c);
		return -1;
	}
	pthread_mutex_lock(&f->lock);
	if (c && f->next) {
		fc_cfg_free(f->next);
		free(f->next);
	}
	if (c)
		f->next = c;
	if (o) {
		f->next_o = *o;
		f->has_next_o = true;
	}
	pthread_mutex_unlock(&f->lock);
	return 0;
}

void fc_fleet_stop(struct fc_fleet *f)
{
	if (!f)
		return;
	if (f->running) {
		__atomic_store_n(&f->stop, true, __ATOMIC_RELEASE);
		/* a failed write: the thread still sees stop within an interval */
		(void)!write(f->stop_fd, &(uint64_t){ 1 }, sizeof(uint64_t));
		pthread_join(f->thread, NULL);
	}
	fc_redis_close(f->redis);
	fc_fleet_free(f);
}
