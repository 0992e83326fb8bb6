/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What the BPF_PROG_TEST_RUN suites share: a private pin dir and store per
 * test, the real programs loaded from the skeleton, bans published through
 * the real store and sync, and one helper to run a frame.
 */
#ifndef FC_TEST_BPF_H
#define FC_TEST_BPF_H

#include <limits.h>
#include <stdbool.h>

#include "fc_ctx.h"
#include "fc_frames.h"
#include "fc_kern.h"
#include "fc_store.h"
#include "freqctl.skel.h"

struct fc_env {
	char pin_dir[128];
	char db[128];
	char shm[128];
	struct freqctl *skel;
	struct fc_maps maps;
	struct fc_store *st;
};

/* Why BPF tests cannot run here, or NULL when they can. */
const char *fc_bpf_unavailable(void);

/* Skips the calling test, saying why, where BPF tests can not run. */
#define FC_REQUIRE_BPF()                                                         \
	do {                                                                     \
		const char *why_ = fc_bpf_unavailable();                         \
		if (why_) {                                                      \
			print_message("SKIPPED: %s\n", why_);                   \
			skip();                                                  \
		}                                                                \
	} while (0)

/* cmocka setup/teardown: a fresh pin dir, store and program load per test;
 * skips the test (with the reason) where BPF is not available. */
int fc_env_setup(void **state);
int fc_env_teardown(void **state);

/* Publishes the store to the maps and the shm as a command does (what
 * changed since the last publish), then checks that publishing everything
 * (as freqctl sync does) finds nothing more to write. */
void fc_env_publish(struct fc_env *env);
/* Publishes everything, as freqctl sync does (what a test broke by hand is
 * healed). */
void fc_env_sync(struct fc_env *env);
/* Publishes as a command does, nothing checked; true if only what changed
 * was published. */
bool fc_env_publish_changes(struct fc_env *env);
/* Makes ban set name exactly bans (feed lines), lapsing in ttl seconds (0:
 * never), as ban import --set does; then as fc_env_publish. */
void fc_env_set(struct fc_env *env, const char *name, const char *const *bans, size_t n, int64_t ttl);
/* The env's store, pin dir and shm as a command's context (node "test"). */
struct fc_ctx fc_env_ctx(const struct fc_env *env);

/* Bans text (ADDR[/LEN]) for ttl seconds (0 = no expiry) through store + sync. */
void fc_env_ban(struct fc_env *env, const char *text, int64_t ttl);
void fc_env_unban(struct fc_env *env, const char *text);
/* Allows text (ADDR[/LEN]) for ttl seconds (0 = no expiry) through store + sync. */
void fc_env_allow(struct fc_env *env, const char *text, int64_t ttl);
void fc_env_unallow(struct fc_env *env, const char *text);

/* Creates or replaces a policy through store + sync. opts is what follows
 * --match/--rate on the command line, in this form: "burst=5 algo=window
 * action=log count=syn new_sources=10" (any subset, or ""). */
void fc_env_policy(struct fc_env *env, uint32_t id, const char *match, const char *rates, const char *opts);
void fc_env_policy_del(struct fc_env *env, uint32_t id);
/* Sets the packet path's clock (UTC ns) to utc_ns: it runs on from there, a
 * tick at a time (the coarse clock), until a publish sets it back to UTC. */
void fc_env_clock(struct fc_env *env, uint64_t utc_ns);
/* Sets the packet path's clock to exactly utc_ns: waits, if need be, for
 * the coarse clock to have just ticked, so that frames sent at once see it
 * standing still. Returns the coarse reading; fc_env_clock_held(that) after
 * the frames says whether they all saw utc_ns (the clock did not tick). */
uint64_t fc_env_clock_exact(struct fc_env *env, uint64_t utc_ns);
bool fc_env_clock_held(uint64_t tick);
/* A policy's counters. */
struct fc_pstats fc_env_pstats(struct fc_env *env, uint32_t id);
/* Like fc_env_setup, with the ip=* LRU made this small. */
int fc_env_setup_small_lru(void **state);

/* Sends n copies of the frame spec describes through XDP (tc=false) or TC;
 * returns how many passed (fails the test on a verdict other than pass or
 * drop). */
int fc_env_send(struct fc_env *env, bool tc, const struct fc_frame_spec *spec, int n);

/* Runs frame through the XDP (tc=false) or TC program once; returns its verdict. */
int fc_env_run(struct fc_env *env, bool tc, const void *frame, size_t len);
/* The same, but returns -errno when the kernel refuses the frame. */
int fc_env_try_run(struct fc_env *env, bool tc, const void *frame, size_t len);

#endif /* FC_TEST_BPF_H */
