// SPDX-License-Identifier: BSD-2-Clause
/* The L7 suites' shared fixtures (fc_test_l7.h). */
#include <fcntl.h>
#include <grp.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "fc_enforce.h"
#include "fc_shm_write.h"
#include "fc_source.h"
#include "fc_test_l7.h"

void *fc_arena_alloc(void *ctx, size_t size)
{
	struct fc_arena *a = ctx;
	void *p = calloc(1, size ? size : 1);

	if (!p)
		return NULL;
	if (a->n == a->cap) {
		a->cap = a->cap ? a->cap * 2 : 64;
		a->v = realloc(a->v, a->cap * sizeof(*a->v));
	}
	a->v[a->n++] = p;
	return p;
}

void fc_arena_free(struct fc_arena *a)
{
	size_t i;

	for (i = 0; i < a->n; i++)
		free(a->v[i]);
	free(a->v);
	memset(a, 0, sizeof(*a));
}

int fc_setup(void **state)
{
	struct fc_t *t = calloc(1, sizeof(*t));
	struct group *gr;
	struct fc_err err;

	assert_non_null(t);
	snprintf(t->dir, sizeof(t->dir), "/tmp/fc-l7-XXXXXX");
	assert_non_null(mkdtemp(t->dir));
	snprintf(t->db, sizeof(t->db), "%s/store.db", t->dir);
	snprintf(t->shm, sizeof(t->shm), "%s/shm", t->dir);
	snprintf(t->state_path, sizeof(t->state_path), "%s%s", t->shm, FC_SHM_STATE_SUFFIX);
	gr = getgrgid(getegid());
	assert_non_null(gr);
	snprintf(t->group, sizeof(t->group), "%s", gr->gr_name);
	if (fc_store_open(t->db, &t->st, &err) < 0)
		fail_msg("%s", err.msg);
	*state = t;
	return 0;
}

void fc_unmap(struct fc_t *t)
{
	if (t->base)
		munmap(t->base, t->size);
	if (t->state)
		munmap(t->state, t->state_size);
	t->base = t->state = NULL;
	fc_arena_free(&t->arena);
}

/* Maps path read-write into *base, *size. */
void fc_map(const char *path, void **base, size_t *size)
{
	struct stat sb;
	int fd = open(path, O_RDWR);

	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &sb), 0);
	*size = (size_t)sb.st_size;
	*base = mmap(NULL, *size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	assert_true(*base != MAP_FAILED);
}

int fc_teardown(void **state)
{
	struct fc_t *t = *state;
	char cmd[128];

	fc_unmap(t);
	fc_store_close(t->st);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", t->dir);
	assert_int_equal(system(cmd), 0);
	free(t);
	return 0;
}

/* Stores p (its id and options set) with match and rates. */
void fc_policy_put(struct fc_t *t, struct fc_policy_spec *p, const char *match, const char *rates)
{
	struct fc_policy_row row;
	struct fc_err err;

	if (fc_match_parse(match, p, &err) < 0 || fc_rates_parse(rates, p, &err) < 0 ||
	    fc_policy_validate(p, &err) < 0 || fc_store_policy_put(t->st, p, 1, &row, &err) < 0)
		fail_msg("policy %u: %s", p->id, err.msg);
}

void fc_policy(struct fc_t *t, uint32_t id, const char *match, const char *rates, const char *action,
	       uint64_t burst, uint32_t delay_burst)
{
	struct fc_policy_spec p = { .id = id, .burst = burst, .delay_burst = delay_burst };
	struct fc_err err;

	if (fc_action_parse(action, &p.action, &err) < 0)
		fail_msg("policy %u: %s", id, err.msg);
	fc_policy_put(t, &p, match, rates);
}

/* Publishes t's store whole to its shm, as a node alone at time 1; keys:
 * the key table's size (0: keep it). No cmocka assertion: a forked writer
 * runs it. */
int fc_shm_full(struct fc_t *t, uint32_t keys, struct fc_shm_result *res, struct fc_err *err)
{
	struct fc_node_ctx node = fc_node_here(1);
	struct fc_source src;
	int rc;

	fc_source_init(&src, t->st, 1, &node);
	rc = fc_shm_publish(t->shm, t->group, keys, &src, res, err);
	fc_source_free(&src);
	return rc;
}

/* Publishes the store and maps both files (the config file read-write
 * here, so the tests can corrupt it). */
void fc_publish(struct fc_t *t)
{
	struct fc_shm_result res;
	struct fc_err err;

	fc_unmap(t);
	if (fc_shm_full(t, t->keys, &res, &err) < 0)
		fail_msg("%s", err.msg);
	fc_map(t->shm, &t->base, &t->size);
	fc_map(t->state_path, &t->state, &t->state_size);
}

int fc_build(struct fc_t *t, const void *base, size_t size)
{
	struct fc_l7_alloc a = { fc_arena_alloc, &t->arena };

	fc_arena_free(&t->arena);
	return fc_l7_build(base, size, t->state, t->state_size, &t->ix, &a);
}

/* A request from text: "uid=u1 arg:api=login header:x-key=k uri=/a ip=198.18.0.1";
 * "query=RAW" gives the args as a raw query string (decoded by the engine),
 * and a dimension may repeat. */
void fc_req(const struct fc_l7_index *ix, struct fc_l7_req *rq, const char *text)
{
	static char buf[1024], qbuf[1024];
	static struct fc_l7_val vals[256];
	char *tok, *save = NULL, *eq, *colon;
	int k;

	memset(rq, 0, sizeof(*rq));
	rq->vals = vals;
	snprintf(buf, sizeof(buf), "%s", text);
	for (tok = strtok_r(buf, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
		eq = strchr(tok, '=');
		*eq++ = '\0';
		colon = strchr(tok, ':');
		if (!strcmp(tok, "uid")) {
			rq->uid = (struct fc_l7_str){ eq, strlen(eq) };
		} else if (!strcmp(tok, "uri")) {
			rq->uri = (struct fc_l7_str){ eq, strlen(eq) };
		} else if (!strcmp(tok, "query")) {
			assert_true(rq->nvals + fc_l7_args_max(eq, strlen(eq)) <= 256);
			rq->nvals += fc_l7_args(ix, eq, strlen(eq), qbuf, vals + rq->nvals);
		} else if (!strcmp(tok, "ip")) {
			struct fc_prefix p;
			struct fc_err err;

			assert_int_equal(fc_prefix_parse(eq, &p, &err), 0);
			rq->family = p.family;
			memcpy(rq->addr, p.a, 16);
		} else if (colon) {
			bool arg = !strncmp(tok, "arg", 3);

			k = arg ? -1 : fc_l7_header_idx(ix, colon + 1, strlen(colon + 1));
			if (arg) {
				size_t i;

				for (i = 0; i < ix->nargs; i++)
					if (ix->args[i].len == strlen(colon + 1) && !memcmp(ix->args[i].data, colon + 1, ix->args[i].len))
						k = (int)i;
			}
			if (k < 0)
				continue;
			assert_true(rq->nvals < 256);
			vals[rq->nvals++] = (struct fc_l7_val){ arg ? FC_DIM_ARG : FC_DIM_HEADER, (uint8_t)k, { eq, strlen(eq) } };
		}
	}
}

enum fc_l7_verdict fc_decide(struct fc_t *t, const char *req, uint64_t now, struct fc_l7_result *res)
{
	struct fc_l7_result r;
	struct fc_l7_req rq;

	fc_req(&t->ix, &rq, req);
	fc_l7_decide(&t->ix, &rq, now, res ? res : &r);
	return res ? res->verdict : r.verdict;
}

/* fc_decide, with the deciding key's text written into key (cap bytes). */
enum fc_l7_verdict fc_decide_key(struct fc_t *t, const char *req, uint64_t now, struct fc_l7_result *res,
				 char *key, size_t cap)
{
	struct fc_l7_req rq;

	fc_req(&t->ix, &rq, req);
	rq.keybuf = key;
	rq.keycap = cap;
	fc_l7_decide(&t->ix, &rq, now, res);
	return res->verdict;
}

int fc_passes(struct fc_t *t, const char *req, uint64_t now, int n)
{
	int i, ok = 0;

	for (i = 0; i < n; i++)
		ok += fc_decide(t, req, now, NULL) == FC_L7_PASS;
	return ok;
}

/* Runs work(t, i) in 8 forked processes at once; returns the sum of what
 * they return (requests passed). */
int fc_forked(struct fc_t *t, int (*work)(struct fc_t *t, int i))
{
	int i, status, total = 0, fds[8][2];
	pid_t pids[8];

	for (i = 0; i < 8; i++) {
		assert_int_equal(pipe(fds[i]), 0);
		pids[i] = fork();
		assert_true(pids[i] >= 0);
		if (pids[i] == 0) {
			int ok = work(t, i);

			(void)!write(fds[i][1], &ok, sizeof(ok));
			_exit(0);
		}
		close(fds[i][1]);
	}
	for (i = 0; i < 8; i++) {
		int ok = 0;

		assert_int_equal(read(fds[i][0], &ok, sizeof(ok)), sizeof(ok));
		close(fds[i][0]);
		assert_int_equal(waitpid(pids[i], &status, 0), pids[i]);
		total += ok;
	}
	return total;
}

/* The index's policy of id. */
const struct fc_l7_policy *fc_ix_policy(const struct fc_t *t, uint32_t id)
{
	size_t i;

	for (i = 0; i < t->ix.npolicies; i++)
		if (t->ix.pol[i].id == id)
			return &t->ix.pol[i];
	fail_msg("policy %u is not in the index", id);
	return NULL;
}

