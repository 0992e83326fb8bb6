/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What the L7 engine's suites (tests/unit/test_l7*.c) share: a scratch store
 * and shm per test, published by freqctl's real publisher and mapped
 * read-write (so a test can corrupt it), the index built from it, and
 * requests written as text and decided. Built with AddressSanitizer and
 * UBSan, as the suites are.
 */
#ifndef FC_TEST_L7_H
#define FC_TEST_L7_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fc_l7.h"
#include "fc_shm_write.h"
#include "fc_store.h"

#define SEC FC_NS_PER_SEC
#define MS  (SEC / 1000)
#define T0 (1795316400ULL * SEC)

/* Allocations of one index build, freed together. */
struct fc_arena {
	void **v;
	size_t n, cap;
};

void *fc_arena_alloc(void *ctx, size_t size);
void fc_arena_free(struct fc_arena *a);

struct fc_t {
	char dir[64], db[96], shm[96], state_path[128];
	/* The shm's group: the test's own, which it may give its files
	 * unprivileged (the default, the nginx workers', needs root). */
	char group[64];
	struct fc_store *st;
	void *base;   /* the config file */
	size_t size;
	void *state;  /* the workers' state file */
	size_t state_size;
	uint32_t keys; /* the key table's size for a publish (0: keep the file's) */
	struct fc_arena arena;
	struct fc_l7_index ix;
};

/* cmocka's setup and teardown: a struct fc_t over a scratch directory. */
int fc_setup(void **state);
int fc_teardown(void **state);

void fc_unmap(struct fc_t *t);
/* Maps path read-write into *base, *size. */
void fc_map(const char *path, void **base, size_t *size);

/* Stores p (its id and options set) with match and rates. */
void fc_policy_put(struct fc_t *t, struct fc_policy_spec *p, const char *match, const char *rates);
void fc_policy(struct fc_t *t, uint32_t id, const char *match, const char *rates, const char *action,
	       uint64_t burst, uint32_t delay_burst);
/* Publishes the store and maps both files (the config file read-write
 * here, so the tests can corrupt it). */
int fc_shm_full(struct fc_t *t, uint32_t keys, struct fc_shm_result *res, struct fc_err *err);
void fc_publish(struct fc_t *t);
int fc_build(struct fc_t *t, const void *base, size_t size);
/* The index's policy of id (fails the test if it has none). */
const struct fc_l7_policy *fc_ix_policy(const struct fc_t *t, uint32_t id);

/* A request from text: "uid=u1 arg:api=login header:x-key=k uri=/a ip=198.18.0.1";
 * "query=RAW" gives the args as a raw query string (decoded by the engine),
 * and a dimension may repeat. */
void fc_req(const struct fc_l7_index *ix, struct fc_l7_req *rq, const char *text);
enum fc_l7_verdict fc_decide(struct fc_t *t, const char *req, uint64_t now, struct fc_l7_result *res);
/* fc_decide, with the deciding key's text written into key (cap bytes). */
enum fc_l7_verdict fc_decide_key(struct fc_t *t, const char *req, uint64_t now, struct fc_l7_result *res,
				 char *key, size_t cap);
/* How many of n requests req at now pass. */
int fc_passes(struct fc_t *t, const char *req, uint64_t now, int n);

/* Runs work(t, i) in 8 forked processes at once; returns the sum of what
 * they return (requests passed). */
int fc_forked(struct fc_t *t, int (*work)(struct fc_t *t, int i));

#endif /* FC_TEST_L7_H */
