// SPDX-License-Identifier: BSD-2-Clause
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>
#include <linux/bpf.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf.h>

#include "fc_change.h"
#include "fc_clock.h"
#include "fc_duration.h"
#include "fc_feed.h"
#include "fc_publish.h"
#include "fc_test_bpf.h"

const char *fc_bpf_unavailable(void)
{
	if (geteuid() != 0)
		return "needs root (BPF programs, bpffs)";
	if (access("/sys/kernel/btf/vmlinux", R_OK) != 0)
		return "kernel without BTF (/sys/kernel/btf/vmlinux)";
	return NULL;
}

static void fc_env_cleanup(struct fc_env *env);

static int fc_env_setup_lru(void **state, __u32 lru_entries)
{
	LIBBPF_OPTS(bpf_object_open_opts, opts);
	struct fc_env *env = calloc(1, sizeof(*env));
	const char *why = fc_bpf_unavailable();
	struct fc_err err;

	assert_non_null(env);
	*state = env;
	if (why)
		return 0; /* each test skips with the reason */
	snprintf(env->pin_dir, sizeof(env->pin_dir), "/sys/fs/bpf/fc-test-%d", (int)getpid());
	snprintf(env->db, sizeof(env->db), "/tmp/fc-test-%d/store.db", (int)getpid());
	snprintf(env->shm, sizeof(env->shm), "/tmp/fc-test-%d/shm", (int)getpid());
	if (fc_pin_dir_prepare(env->pin_dir, &err) < 0)
		fail_msg("%s", err.msg);
	opts.pin_root_path = env->pin_dir;
	env->maps.dirfd = -1;
	memset(env->maps.fd, -1, sizeof(env->maps.fd)); /* nothing to close yet */
	/* A failed setup runs no teardown: it cleans up what it made itself. */
	env->skel = freqctl__open_opts(&opts);
	if (!env->skel || (lru_entries && (bpf_map__set_max_entries(env->skel->maps.fc_src4, lru_entries) ||
					   bpf_map__set_max_entries(env->skel->maps.fc_src6, lru_entries)))) {
		fc_env_cleanup(env);
		fail_msg("opening the BPF object failed");
	}
	env->skel->rodata->fc_tick_ns = fc_clock_tick_ns();
	if (freqctl__load(env->skel)) {
		fc_env_cleanup(env);
		fail_msg("loading the BPF programs failed (see libbpf's log above)");
	}
	if (fc_maps_open(env->pin_dir, &env->maps, &err) < 0 || fc_store_open(env->db, &env->st, &err) < 0) {
		fc_env_cleanup(env);
		fail_msg("%s", err.msg);
	}
	return 0;
}

int fc_env_setup(void **state)
{
	return fc_env_setup_lru(state, 0);
}

int fc_env_setup_small_lru(void **state)
{
	return fc_env_setup_lru(state, 128);
}

static void fc_rm(const char *dir, const char *name)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	unlink(path);
}

/* Removes what fc_env_setup made: the pins, the pin dir, the store. */
static void fc_env_cleanup(struct fc_env *env)
{
	char dir[128];
	size_t i;

	if (env->pin_dir[0]) {
		freqctl__destroy(env->skel);
		fc_maps_close(&env->maps);
		fc_store_close(env->st);
		for (i = 0; i < FC_NMAPS; i++)
			fc_rm(env->pin_dir, fc_map_names[i]);
		rmdir(env->pin_dir);
		snprintf(dir, sizeof(dir), "/tmp/fc-test-%d", (int)getpid());
		fc_rm(dir, "store.db");
		fc_rm(dir, "store.db-wal");
		fc_rm(dir, "store.db-shm");
		fc_rm(dir, "shm");
		fc_rm(dir, "shm" FC_SHM_STATE_SUFFIX);
		rmdir(dir);
		env->pin_dir[0] = '\0';
	}
}

int fc_env_teardown(void **state)
{
	fc_env_cleanup(*state);
	free(*state);
	return 0;
}

struct fc_ctx fc_env_ctx(const struct fc_env *env)
{
	return (struct fc_ctx){ .db_path = env->db, .pin_dir = env->pin_dir, .shm_path = env->shm, .node = "test" };
}

/* Publishes the store as a command does (full: as freqctl sync does). */
static void fc_env_commit(struct fc_env *env, bool full, struct fc_publish *pub)
{
	const struct fc_ctx ctx = fc_env_ctx(env);
	struct fc_err err;

	if (fc_publish_begin_on(pub, &ctx, env->st, &err) < 0 || (pub->full = full, fc_publish_commit(pub, &err) < 0))
		fail_msg("publish: %s", err.msg);
}

void fc_env_set(struct fc_env *env, const char *name, const char *const *bans, size_t n, int64_t ttl)
{
	const struct fc_ctx ctx = fc_env_ctx(env);
	struct fc_set_result res;
	struct fc_feed feed = { 0 };
	struct fc_publish pub;
	struct fc_err err;
	size_t i;

	for (i = 0; i < n; i++)
		if (fc_feed_line(bans[i], &feed, &err) < 0)
			fail_msg("%s: %s", bans[i], err.msg);
	fc_feed_sort(&feed);
	if (fc_publish_begin_on(&pub, &ctx, env->st, &err) < 0 ||
	    fc_set_replace(&pub, name, feed.v, feed.n, ttl ? fc_expires_after(ttl) : 0, NULL, NULL, &res, &err) < 0 ||
	    fc_publish_commit(&pub, &err) < 0)
		fail_msg("set %s: %s", name, err.msg);
	fc_feed_free(&feed);
	fc_env_publish(env);
}

void fc_env_sync(struct fc_env *env)
{
	struct fc_publish pub;

	fc_env_commit(env, true, &pub);
}

bool fc_env_publish_changes(struct fc_env *env)
{
	struct fc_publish pub;

	fc_env_commit(env, false, &pub);
	return pub.delta;
}

void fc_env_publish(struct fc_env *env)
{
	struct fc_publish pub, full;

	fc_env_commit(env, false, &pub);
	fc_env_commit(env, true, &full);
	if (full.res.added || full.res.changed || full.res.removed || full.res.copied || full.res.policies_changed ||
	    full.shm.published || full.shm.bans_written)
		fail_msg("publishing everything after what changed (%s) wrote: maps %zu added, %zu changed, %zu removed, "
			 "%zu fc_top6 copies, %zu policy slots; shm block %s, bans %s",
			 pub.delta ? "only that" : "everything", full.res.added, full.res.changed, full.res.removed,
			 full.res.copied, full.res.policies_changed, full.shm.published ? "new" : "same",
			 full.shm.bans_written ? "rewritten" : "same");
}

static void fc_env_prefix(const char *text, struct fc_prefix *p)
{
	struct fc_err err;

	if (fc_prefix_parse(text, p, &err) < 0)
		fail_msg("%s", err.msg);
}

void fc_env_ban(struct fc_env *env, const char *text, int64_t ttl)
{
	struct fc_ban_row row = { .created = (int64_t)time(NULL) };
	struct fc_err err;

	fc_env_prefix(text, &row.p);
	row.expires = ttl ? fc_expires_after(ttl) : 0;
	if (fc_store_ban_put(env->st, &row, &err) < 0)
		fail_msg("%s", err.msg);
	fc_env_publish(env);
}

void fc_env_allow(struct fc_env *env, const char *text, int64_t ttl)
{
	struct fc_allow_row row = { .created = (int64_t)time(NULL) };
	struct fc_err err;
	bool existed;

	fc_env_prefix(text, &row.p);
	row.expires = ttl ? fc_expires_after(ttl) : 0;
	if (fc_store_allow_put(env->st, &row, row.created, &existed, &err) < 0)
		fail_msg("%s", err.msg);
	fc_env_publish(env);
}

void fc_env_unallow(struct fc_env *env, const char *text)
{
	struct fc_allow_row key = { 0 };
	struct fc_err err;
	bool found;

	fc_env_prefix(text, &key.p);
	if (fc_store_allow_del(env->st, &key, &found, &err) < 0 || !found)
		fail_msg("unallow %s: %s", text, found ? err.msg : "not found");
	fc_env_publish(env);
}

void fc_env_unban(struct fc_env *env, const char *text)
{
	struct fc_prefix p;
	struct fc_err err;
	bool found;

	fc_env_prefix(text, &p);
	if (fc_store_ban_del(env->st, &p, &found, &err) < 0 || !found)
		fail_msg("unban %s: %s", text, found ? err.msg : "not found");
	fc_env_publish(env);
}

int fc_env_try_run(struct fc_env *env, bool tc, const void *frame, size_t len)
{
	struct bpf_program *prog = tc ? env->skel->progs.freqctl_tc : env->skel->progs.freqctl_xdp;
	LIBBPF_OPTS(bpf_test_run_opts, opts, .data_in = frame, .data_size_in = (__u32)len, .repeat = 1);

	if (bpf_prog_test_run_opts(bpf_program__fd(prog), &opts))
		return -errno;
	return (int)opts.retval;
}

int fc_env_send(struct fc_env *env, bool tc, const struct fc_frame_spec *spec, int n)
{
	uint8_t frame[FC_FRAME_MAX];
	size_t len = fc_frame_build(spec, frame);
	int i, passed = 0, rc;

	assert_true(len > 0);
	for (i = 0; i < n; i++) {
		rc = fc_env_run(env, tc, frame, len);
		if (rc == (tc ? TC_ACT_OK : XDP_PASS))
			passed++;
		else if (rc != (tc ? TC_ACT_SHOT : XDP_DROP))
			fail_msg("verdict %d", rc);
	}
	return passed;
}

int fc_env_run(struct fc_env *env, bool tc, const void *frame, size_t len)
{
	int rc = fc_env_try_run(env, tc, frame, len);

	if (rc < 0)
		fail_msg("test run of %zu bytes: %s", len, strerror(-rc));
	return rc;
}

void fc_env_policy(struct fc_env *env, uint32_t id, const char *match, const char *rates, const char *opts)
{
	struct fc_policy_spec p = { .id = id };
	struct fc_policy_row row;
	char buf[256], *tok, *save = NULL, *eq;
	struct fc_err err;
	int rc = 0;

	if (fc_match_parse(match, &p, &err) < 0 || fc_rates_parse(rates, &p, &err) < 0)
		fail_msg("policy %u: %s", id, err.msg);
	snprintf(buf, sizeof(buf), "%s", opts);
	/* Keys as in a policy's JSON, through the same option table. */
	for (tok = strtok_r(buf, " ", &save); tok && !rc; tok = strtok_r(NULL, " ", &save)) {
		const struct fc_opt *o;

		eq = strchr(tok, '=');
		assert_non_null(eq);
		*eq++ = '\0';
		for (o = fc_policy_opts; o->name && (!o->json || strcmp(o->json, tok)); o++)
			;
		if (!o->name)
			fail_msg("unknown test policy option %s", tok);
		rc = fc_opt_set(o, &p, eq, tok, &err);
	}
	if (rc < 0 || fc_policy_validate(&p, &err) < 0 ||
	    fc_store_policy_put(env->st, &p, (int64_t)time(NULL), &row, &err) < 0)
		fail_msg("policy %u: %s", id, err.msg);
	fc_env_publish(env);
}

void fc_env_policy_del(struct fc_env *env, uint32_t id)
{
	struct fc_err err;
	bool found;

	if (fc_store_policy_del(env->st, id, &found, &err) < 0 || !found)
		fail_msg("policy del %u: %s", id, found ? err.msg : "not found");
	fc_env_publish(env);
}

static uint64_t fc_clock_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

void fc_env_clock(struct fc_env *env, uint64_t utc_ns)
{
	struct fc_config cfg;
	struct fc_err err;

	if (fc_config_read(&env->maps, &cfg, &err) < 0)
		fail_msg("%s", err.msg);
	/* The packet path reads CLOCK_MONOTONIC_COARSE (bpf_ktime_get_coarse_ns)
	 * plus this offset, or jiffies in the same tick plus the other. */
	cfg.utc_offset_ns = utc_ns - fc_clock_ns(CLOCK_MONOTONIC_COARSE);
	cfg.jiffies_utc_ns = fc_jiffies_utc_ns_now(cfg.utc_offset_ns);
	if (fc_config_write(&env->maps, &cfg, &err) < 0)
		fail_msg("%s", err.msg);
}

uint64_t fc_env_clock_exact(struct fc_env *env, uint64_t utc_ns)
{
	/* The coarse clock's last value seen to change, and when. */
	static uint64_t seen, seen_at;
	uint64_t coarse, now, start = fc_clock_ns(CLOCK_MONOTONIC), half;
	struct fc_config cfg;
	struct timespec res;
	struct fc_err err;

	if (clock_getres(CLOCK_MONOTONIC_COARSE, &res) || res.tv_sec)
		fail_msg("the coarse clock's resolution is not known");
	half = (uint64_t)res.tv_nsec / 2;
	if (fc_config_read(&env->maps, &cfg, &err) < 0)
		fail_msg("%s", err.msg);
	/* Less than half a tick after the coarse clock moved, the frames have
	 * the other half before it moves again: otherwise wait for it to move.
	 * Not "within half a tick of the precise clock": the coarse clock lags
	 * by the timekeeper's last interval and more, and that lag drifts; it
	 * can stay over half a tick for hours. */
	coarse = fc_clock_ns(CLOCK_MONOTONIC_COARSE);
	if (coarse != seen || start - seen_at >= half) {
		seen = coarse;
		do {
			coarse = fc_clock_ns(CLOCK_MONOTONIC_COARSE);
			now = fc_clock_ns(CLOCK_MONOTONIC);
			if (now - start > 1000000000ULL)
				fail_msg("the coarse clock did not tick for a second");
		} while (coarse == seen);
		seen = coarse;
		seen_at = now;
	}
	cfg.utc_offset_ns = utc_ns - coarse;
	cfg.jiffies_utc_ns = fc_jiffies_utc_ns_now(cfg.utc_offset_ns);
	if (fc_config_write(&env->maps, &cfg, &err) < 0)
		fail_msg("%s", err.msg);
	return coarse;
}

bool fc_env_clock_held(uint64_t tick)
{
	return fc_clock_ns(CLOCK_MONOTONIC_COARSE) == tick;
}

struct fc_pstats fc_env_pstats(struct fc_env *env, uint32_t id)
{
	struct fc_policy_row row;
	struct fc_pstats ps;
	struct fc_err err;
	bool found;

	if (fc_store_policy_get(env->st, id, &row, &found, &err) < 0 || !found ||
	    fc_pstats_read(&env->maps, row.slot, &ps, &err) < 0)
		fail_msg("policy %u: %s", id, found ? err.msg : "not found");
	return ps;
}
