// SPDX-License-Identifier: BSD-2-Clause
/*
 * freqctl agent: keeps the pinned maps and the nginx shm equal to the store,
 * whoever changes it (another freqctl, a script writing SQL, a restore, an
 * operator on another machine of the fleet).
 *
 * It publishes once at start, then waits without polling. SQLite: inotify on
 * the store's directory wakes it when the database or its WAL is written,
 * and PRAGMA data_version tells whether another connection committed.
 * PostgreSQL: a connection of its own LISTENs, and each commit's NOTIFY
 * makes its socket readable. A timer wakes it at the next ban expiry (to drop
 * the ban from the store; the kernel and nginx already stopped enforcing it)
 * and every few seconds as a fallback. A step of the wall clock (NTP's, a
 * resume from suspend) wakes it too: the packet path's clock is the
 * monotonic clock plus an offset to UTC that only a publish sets. If the store can not be read or
 * reached, what was published stays enforced; the agent says so once and
 * retries with backoff. Each publish writes what changed since the last (the
 * store's change log), everything when that can not be known. SIGHUP
 * republishes everything (as freqctl sync); SIGTERM exits and
 * leaves the kernel and the shm as they are. One agent per store (SQLite) or
 * per shm (PostgreSQL, where the store is the fleet's).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/inotify.h>
#include <sys/timerfd.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "fc_agent.h"
#include "fc_allow.h"
#include "fc_clock.h"
#include "fc_console.h"
#include "fc_duration.h"
#include "fc_error.h"
#include "fc_escalate.h"
#include "fc_metrics.h"
#include "fc_publish.h"
#include "fc_shm_state.h"
#include "fc_store_keep.h"

#define FC_AGENT_RECOUNT_S 10 /* live keys counted again this often */
#define FC_AGENT_FALLBACK_MS 5000   /* data_version check without an event */
/* A writer's WAL frames raise inotify events before its commit shows in
 * data_version (the WAL index is updated through mmap, which raises none):
 * after an event that changed nothing yet, look again this often, this many
 * times. */
#define FC_AGENT_RECHECK_MS  3
#define FC_AGENT_RECHECKS    10
#define FC_AGENT_BACKOFF_MAX 30000  /* ms between retries of a failing store */

static volatile sig_atomic_t fc_agent_stop, fc_agent_hup;

static void fc_agent_signal(int sig)
{
	if (sig == SIGHUP)
		fc_agent_hup = 1;
	else
		fc_agent_stop = 1;
}

static void fc_agent_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* One line, stamped, written at once: the servers' threads and the fleet's
 * log too. The agent's log is its stderr (the journal). */
static void fc_agent_log(const char *fmt, ...)
{
	char stamp[FC_TIME_STRLEN], line[4200];
	va_list ap;
	int n;

	fc_time_format((int64_t)time(NULL), stamp);
	n = snprintf(line, sizeof(line), "%s freqctl agent: ", stamp);
	va_start(ap, fmt);
	vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
	va_end(ap);
	fprintf(stderr, "%s\n", line);
}

/* fc_warn's lines, from the library and the fleet's thread, as the agent's. */
static void fc_agent_warned(const char *msg)
{
	fc_agent_log("%s", msg);
}

/* systemd Type=notify, without libsystemd: one datagram to $NOTIFY_SOCKET. */
static void fc_agent_notify(const char *state)
{
	const char *path = getenv("NOTIFY_SOCKET");
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd;

	if (!path || (path[0] != '/' && path[0] != '@') || strlen(path) >= sizeof(sa.sun_path))
		return;
	memcpy(sa.sun_path, path, strlen(path));
	if (sa.sun_path[0] == '@')
		sa.sun_path[0] = '\0'; /* abstract namespace */
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return;
	sendto(fd, state, strlen(state), 0, (struct sockaddr *)&sa,
	       (socklen_t)(offsetof(struct sockaddr_un, sun_path) + strlen(path)));
	close(fd);
}

/* Takes the lock file path, which names the pid holding it. */
static int fc_agent_lock_one(const char *path, const char *what, const char *name, struct fc_err *err)
{
	char pid[32] = "";
	int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);

	if (fd < 0)
		return fc_err_set(err, "lock %s: %s", path, strerror(errno));
	if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		ssize_t n = read(fd, pid, sizeof(pid) - 1);

		pid[n > 0 ? n : 0] = '\0';
		pid[strcspn(pid, "\n")] = '\0';
		close(fd);
		return fc_err_set(err, "another agent (pid %s) already runs on %s %s", *pid ? pid : "?", what, name);
	}
	snprintf(pid, sizeof(pid), "%d\n", (int)getpid());
	if (ftruncate(fd, 0) < 0 || write(fd, pid, strlen(pid)) < 0)
		fc_warn("writing %s: %s", path, strerror(errno));
	return fd; /* held until exit */
}

/* One agent per store file (or per shm for a fleet's PostgreSQL store: a
 * lock file beside it), and one per pin dir (bpffs holds no plain files: the
 * lock is under FC_AGENT_RUN_DIR, named after the pin dir). */
#define FC_AGENT_RUN_DIR "/run/freqctl"

struct fc_agent_locks {
	int fd[2];
	char run_path[PATH_MAX]; /* removed at exit: /run is no place for litter */
};

/* A running agent: what it opened (closed by fc_agent_teardown whatever
 * got opened) and where its loop stands. */
struct fc_agent {
	const struct fc_agent_config *cfg;
	struct fc_ctx ctx;           /* the caller's, with store_must_exist */
	bool pg;                     /* the store is a fleet's PostgreSQL */
	bool locked;
	struct fc_agent_locks lock;
	int ino;                     /* inotify on a SQLite store's directory, or -1 */
	int clk;                     /* a timerfd that a step of the wall clock cancels, or -1 */
	struct fc_store *watch;      /* the connection that only watches for changes */
	struct fc_store_keep store;  /* the connection publishes use, kept */
	struct fc_ctx pubctx;        /* ctx, publishing on store */
	bool prepared;               /* the store exists and holds this node's weight (and fleet row) */
	int64_t version;             /* the store's data_version last published */
	int64_t next_expiry;         /* unix time of the next ban expiry, 0: none */
	/* Fleet policies: unix ms from which the published splits may be stale
	 * (0: never), when everything is published again; and what the last
	 * publish says the fleet leases with (fc_fleet_split.h), for the lease
	 * engine. */
	int64_t fleet_refresh_ms;
	struct fc_fleet_cfg fleet_cfg;
	bool failing;                /* the last publish failed: retrying */
	int backoff;                 /* ms until the next retry */
	int rechecks;                /* quick looks left after an inotify event */
	struct fc_escalation esc;
	struct fc_agent_fleet fleet; /* with --redis: the lease engine */
	int state_fd;                /* the workers' state file esc reads the ring from, or -1 */
	bool keyed;                  /* some policy keeps a bucket per key */
	struct fc_store_log esc_log; /* the change log when esc's policies were listed */
	int64_t recounted;           /* when keys were last recounted (unix seconds) */
	struct fc_ring_src ring;
	size_t nbans;                /* rule map entries at the last publish */
	struct fc_agent_counters cnt;
	struct fc_http_conf serve;   /* the servers' config, with the agent's log */
	struct fc_metrics *metrics;
	struct fc_console *console;
};

static int fc_agent_lock(const struct fc_ctx *ctx, struct fc_agent_locks *l, struct fc_err *err)
{
	bool pg = fc_store_is_postgres(ctx->db_path);
	const char *db = pg ? ctx->shm_path : ctx->db_path;
	char *path = l->run_path, *p;
	int *fd = l->fd, n;

	snprintf(path, PATH_MAX, "%s.agent.lock", db);
	fd[0] = fc_agent_lock_one(path, pg ? "shm" : "store", db, err);
	if (fd[0] < 0)
		return -1;
	if (mkdir(FC_AGENT_RUN_DIR, 0755) < 0 && errno != EEXIST) {
		fc_err_set(err, "lock dir %s: %s", FC_AGENT_RUN_DIR, strerror(errno));
		goto fail;
	}
	n = snprintf(path, PATH_MAX, "%s/agent", FC_AGENT_RUN_DIR);
	snprintf(path + n, PATH_MAX - (size_t)n, "%s.lock", ctx->pin_dir);
	for (p = path + n; *p; p++)
		if (*p == '/')
			*p = '_';
	fd[1] = fc_agent_lock_one(path, "pin dir", ctx->pin_dir, err);
	if (fd[1] >= 0)
		return 0;
fail:
	close(fd[0]);
	return -1;
}

static void fc_agent_unlock(const struct fc_agent_locks *l)
{
	unlink(l->run_path);
	close(l->fd[0]);
	close(l->fd[1]);
}

/* Watches the store's directory: the database, its WAL and journal. */
static int fc_agent_watch(const char *db, struct fc_err *err)
{
	char dir[PATH_MAX], *slash;
	int fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);

	snprintf(dir, sizeof(dir), "%s", db);
	slash = strrchr(dir, '/');
	if (slash)
		*(slash == dir ? slash + 1 : slash) = '\0';
	else
		snprintf(dir, sizeof(dir), ".");
	if (fd < 0 || inotify_add_watch(fd, dir, IN_MODIFY | IN_CLOSE_WRITE | IN_MOVED_TO | IN_CREATE) < 0) {
		fc_err_set(err, "inotify on %s: %s (falling back to a check every %d ms)", dir, strerror(errno),
			   FC_AGENT_FALLBACK_MS);
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

/* Starts a change, on the store connection the agent keeps (fc_store_keep:
 * dropped on any failure, opened again next time; a SQLite file moved away
 * is seen as gone, as a fresh open would see it). */
static int fc_agent_begin(struct fc_publish *pub, struct fc_agent *a, struct fc_err *err)
{
	return fc_publish_begin(pub, &a->pubctx, err);
}

static uint64_t fc_agent_ring_head(void *ctx)
{
	return fc_state_ring_head(*(int *)ctx);
}

static void fc_agent_ring_read(void *ctx, uint64_t from, size_t n, struct fc_shm_ring_entry *out)
{
	fc_state_ring_read(*(int *)ctx, from, n, out);
}

/* The escalating policies, after every publish (on the kept connection):
 * the store's policies may have changed though the agent's publish wrote
 * none of them, as a freqctl command publishes its own change before the
 * agent sees the store change. The state file is opened afresh, as a
 * publish may have replaced it. */
static void fc_agent_esc_reload(struct fc_agent *a)
{
	struct fc_policy_row *rows = NULL;
	struct fc_allow_row *allows = NULL;
	struct fc_store_log log = { 0 };
	struct fc_err err;
	struct fc_store *st = fc_store_keep_get(&a->store, &err);
	size_t n = 0, na = 0;
	bool pols = true;
	int rc, fd;

	rc = st ? fc_store_log_head(st, &log, &err) : -1;
	/* Listing the policies reads the whole table (65,536 rows: tens of
	 * ms): only when the log since the last listing holds a policy's
	 * change, or cannot say (another store; pruned past it; a head behind
	 * it, a store restored from a backup, whose seqs will be used again). */
	if (rc == 0 && log.id == a->esc_log.id && log.pruned <= a->esc_log.head && log.head >= a->esc_log.head &&
	    (pols = log.head != a->esc_log.head))
		rc = fc_store_policies_changed(st, a->esc_log.head, log.head, &pols, &err);
	if (rc == 0 && pols)
		rc = fc_store_policy_list_agent(st, &rows, &n, &err);
	if (rc == 0 && (rc = fc_store_allow_list(st, (int64_t)time(NULL), &allows, &na, &err)) == 0)
		fc_esc_set_allows(&a->esc, allows, na);
	if (st)
		fc_store_keep_put(&a->store, rc < 0);
	if (rc == 0 && pols && fc_esc_set_policies(&a->esc, rows, n) < 0) {
		fc_agent_log("escalation: out of memory, keeping the last policies");
		rc = -1;
	}
	if (rc == 0 && pols) {
		size_t i;

		for (a->keyed = false, i = 0; i < n; i++)
			a->keyed |= fc_policy_is_keyed(&rows[i].spec);
	}
	/* Only what was applied whole counts as seen: a failure lists again. */
	if (rc == 0)
		a->esc_log = log;
	free(rows);
	if (!a->esc.npol)
		return;
	fd = fc_state_open(a->ctx.shm_path, &err);
	if (fd < 0) {
		fc_agent_log("escalation: %s", err.msg);
		return;
	}
	if (a->state_fd >= 0)
		close(a->state_fd);
	a->state_fd = fd;
	if (!a->esc.src) {
		a->ring = (struct fc_ring_src){ fc_agent_ring_head, fc_agent_ring_read, &a->state_fd };
		fc_esc_attach(&a->esc, &a->ring);
	}
}

/* Bans the clients the ring says crossed their policy's threshold, within
 * the bounds, and says what it did not ban. */
static void fc_agent_escalate(struct fc_agent *a)
{
	struct fc_ban_row bans[64];
	bool made[64];
	char text[FC_PREFIX_STRLEN];
	struct fc_esc_stats st;
	struct fc_publish pub;
	struct fc_err err;
	size_t nb, nmade = 0, i, room = a->nbans < FC_MAX_BANS ? FC_MAX_BANS - a->nbans : 0;

	nb = fc_esc_drain(&a->esc, (int64_t)time(NULL), room, bans, sizeof(bans) / sizeof(bans[0]), &st);
	if (st.lost) {
		fc_agent_log("escalation: %llu reports lost (overwritten before they were read, or a worker killed "
			     "while writing one)",
			     (unsigned long long)st.lost);
		if (fc_shm_add_lost(a->ctx.shm_path, st.lost, &err) < 0)
			fc_agent_log("escalation: counting them: %s", err.msg);
	}
	if (st.capped)
		fc_agent_log("escalation: %llu clients not banned: past --escalate-cap %u bans per minute",
			     (unsigned long long)st.capped, a->esc.cap);
	if (st.full)
		fc_agent_log("escalation: %llu clients not banned: the ban maps are full (%d)",
			     (unsigned long long)st.full, FC_MAX_BANS);
	if (st.aggregated && !a->cfg->quiet)
		fc_agent_log("escalation: %llu IPv6 clients banned by their /64", (unsigned long long)st.aggregated);
	for (i = 0; i < st.nskipped; i++) {
		char by[FC_BAN_TEXT_LEN];

		fc_prefix_format(&st.skipped[i].client, text);
		fc_allow_format(st.skipped[i].by, by);
		fc_agent_log("escalation: %s not banned (refused too often by policy %u): allowed by %s", text,
			     st.skipped[i].policy, by);
	}
	if (st.allowed > st.nskipped)
		fc_agent_log("escalation: ... and %llu more allowed clients not banned",
			     (unsigned long long)(st.allowed - st.nskipped));
	if (!nb)
		return;
	if (fc_agent_begin(&pub, a, &err) < 0)
		goto fail;
	/* A ban made meanwhile that lasts longer (by hand, of no expiry) is kept:
	 * an escalation never cuts one short. */
	for (i = 0; i < nb; i++) {
		if (fc_store_ban_extend(pub.st, &bans[i], &made[i], &err) < 0) {
			fc_publish_abort(&pub);
			goto fail;
		}
		nmade += made[i];
	}
	if (fc_publish_commit(&pub, &err) < 0)
		goto fail;
	a->nbans += nmade;
	__atomic_add_fetch(&a->cnt.escalations, nmade, __ATOMIC_RELAXED);
	for (i = 0; i < nb && !a->cfg->quiet; i++) {
		fc_prefix_format(&bans[i].p, text);
		if (made[i])
			fc_agent_log("escalated: %s banned at XDP/TC until %lld (refused too often by policy %u)", text,
				     (long long)bans[i].expires, bans[i].by_policy);
		else
			fc_agent_log("escalation: %s already banned for longer, kept (refused too often by policy %u)",
				     text, bans[i].by_policy);
	}
	return;
fail:
	fc_agent_log("escalation: cannot ban %zu clients: %s", nb, err.msg);
}

/* Makes the store if it is new and, with record (once the agent holds its
 * lock: an agent refused writes nothing), records this node's weight (0:
 * leave it), in nodes and in the fleet's node set, which a node running an
 * agent joins: a node outside it holds no share of a fleet policy, and
 * would wait on Redis for every key. */
static int fc_agent_prepare(const struct fc_ctx *ctx, double weight, bool record, struct fc_err *err)
{
	struct fc_node n = { .weight = weight };
	struct fc_store *st;
	int rc;

	if (fc_store_open(ctx->db_path, &st, err) < 0)
		return -1;
	if (!record) {
		fc_store_close(st);
		return 0;
	}
	snprintf(n.name, sizeof(n.name), "%s", ctx->node);
	rc = fc_store_begin(st, err);
	if (!rc && weight)
		rc = fc_store_node_weigh(st, &n, fc_unix_ms(), err);
	else if (!rc)
		rc = fc_store_node_join(st, n.name, fc_unix_ms(), err);
	if (!rc)
		rc = fc_store_commit(st, err);
	else
		fc_store_rollback(st);
	fc_store_close(st);
	return rc;
}

/* (Re)opens the agent's own connection that only watches for changes, and
 * reads where it starts from. */
static int fc_agent_rewatch(const struct fc_ctx *ctx, struct fc_store **watch, int64_t *version, struct fc_err *err)
{
	if (fc_store_open_ex(ctx->db_path, false, watch, err) < 0)
		return -1;
	if (fc_store_data_version(*watch, version, err) < 0) {
		fc_store_close(*watch);
		*watch = NULL;
		return -1;
	}
	return 0;
}

static void fc_agent_drain(int fd)
{
	char buf[4096];

	while (fd >= 0 && read(fd, buf, sizeof(buf)) > 0)
		;
}

/* A timer on the wall clock that never fires: a step of that clock (settime,
 * adjtimex's offset, a resume from suspend) cancels it, which makes the fd
 * readable. Returns it armed, or -1 with errno. */
static int fc_agent_clock_watch(int fd)
{
	/* Saturates to the kernel's farthest time: it never fires. */
	struct itimerspec never = { .it_value = { .tv_sec = (time_t)INT64_MAX } };

	if (fd < 0)
		fd = timerfd_create(CLOCK_REALTIME, TFD_NONBLOCK | TFD_CLOEXEC);
	if (fd >= 0 && timerfd_settime(fd, TFD_TIMER_ABSTIME | TFD_TIMER_CANCEL_ON_SET, &never, NULL) < 0) {
		close(fd);
		fd = -1;
	}
	return fd;
}

/* Whether the wall clock was stepped since the watch was armed; re-arms it. */
static bool fc_agent_clock_stepped(struct fc_agent *a)
{
	uint64_t n;

	if (a->clk < 0 || read(a->clk, &n, sizeof(n)) >= 0 || errno != ECANCELED)
		return false;
	a->clk = fc_agent_clock_watch(a->clk);
	if (a->clk < 0)
		fc_agent_log("clock: cannot watch for steps any more: %s", strerror(errno));
	return true;
}

/* Publishes the store; returns the unix time of the next ban expiry (0: none)
 * or -1 on failure. */
static int64_t fc_agent_publish(struct fc_agent *a, const char *why, struct fc_err *err)
{
	struct timespec t0, t1;
	struct fc_publish pub;
	uint64_t us;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (fc_agent_begin(&pub, a, err) < 0)
		goto fail;
	/* SIGHUP: everything, as freqctl sync; and the fleet's splits when a
	 * node set published as the next one has become the current one. */
	pub.full = !strcmp(why, "SIGHUP") || !strcmp(why, "fleet splits");
	pub.want_fleet_cfg = true;
	if (fc_publish_commit(&pub, err) < 0)
		goto fail;
	fc_fleet_cfg_free(&a->fleet_cfg);
	a->fleet_cfg = pub.fleet_cfg;
	a->fleet_refresh_ms = pub.fleet_refresh_ms;
	/* Room for escalations: the rule maps' entries (policy keys too). */
	a->nbans = (size_t)pub.res.cfg.n_exact4 + pub.res.cfg.n_exact6 + pub.res.cfg.n_pfx4 + pub.res.cfg.n_pfx6;
	clock_gettime(CLOCK_MONOTONIC, &t1);
	us = (uint64_t)((t1.tv_sec - t0.tv_sec) * 1000000 + (t1.tv_nsec - t0.tv_nsec) / 1000);
	__atomic_add_fetch(&a->cnt.publishes, 1, __ATOMIC_RELAXED);
	__atomic_store_n(&a->cnt.last_publish, (int64_t)time(NULL), __ATOMIC_RELAXED);
	__atomic_store_n(&a->cnt.last_publish_us, us, __ATOMIC_RELAXED);
	fc_agent_fleet_published(&a->fleet, &a->fleet_cfg);
	if (!a->cfg->quiet || pub.purged || pub.lapsed)
		fc_agent_log("published (%s) in %.1f ms, %s: XDP/TC %zu added, %zu changed, %zu removed; nginx seq %llu%s; "
			     "%zu expired bans purged, %zu lapsed sets",
			     why, (double)us / 1e3, pub.delta ? "what changed" : "everything", pub.res.added,
			     pub.res.changed, pub.res.removed, (unsigned long long)pub.shm.seq,
			     pub.shm.published ? " (new)" : "", pub.purged, pub.lapsed);
	return pub.next_expiry;
fail:
	__atomic_add_fetch(&a->cnt.publish_errors, 1, __ATOMIC_RELAXED);
	return -1;
}

/* Publishes for why, or notes the failure and schedules a retry. */
static void fc_agent_try_publish(struct fc_agent *a, const char *why)
{
	struct fc_err err;
	int64_t next;

	if ((!a->prepared && !(a->prepared = fc_agent_prepare(&a->ctx, a->cfg->weight, true, &err) == 0)) ||
	    (!a->watch && fc_agent_rewatch(&a->ctx, &a->watch, &a->version, &err) < 0) ||
	    (next = fc_agent_publish(a, why, &err)) < 0) {
		if (!a->failing)
			fc_agent_log("cannot publish, keeping what is enforced: %s (retrying)", err.msg);
		a->failing = true;
		a->backoff = !a->backoff ? 100 :
			     a->backoff * 2 > FC_AGENT_BACKOFF_MAX ? FC_AGENT_BACKOFF_MAX : a->backoff * 2;
		return;
	}
	if (a->failing)
		fc_agent_log("store readable again");
	a->failing = false;
	a->backoff = 0;
	a->next_expiry = next;
	/* data_version is not re-read here: a commit that raced this publish
	 * must still be seen. A publish that wrote (purged, escalated) costs
	 * one more, idempotent, publish. */
	fc_agent_esc_reload(a);
}

/* Per-key policies: every FC_AGENT_RECOUNT_S, each policy's live keys are
 * counted again, so --max-keys holds against keys still counting. */
static void fc_agent_recount(struct fc_agent *a)
{
	int64_t now = (int64_t)time(NULL);
	struct fc_err err;

	if (!a->keyed || now - a->recounted < FC_AGENT_RECOUNT_S)
		return;
	a->recounted = now;
	if (fc_state_keys_recount(a->ctx.shm_path, a->ctx.shm_keys, (uint64_t)now * FC_NS_PER_SEC, &err) < 0)
		fc_agent_log("keys: %s", err.msg);
}

/* How long to wait for the store before looking anyway. */
static int fc_agent_timeout(const struct fc_agent *a)
{
	int timeout = a->failing ? a->backoff : a->rechecks ? FC_AGENT_RECHECK_MS :
			  a->esc.npol && a->esc.src ? FC_ESC_TICK_MS : FC_AGENT_FALLBACK_MS;
	int64_t left, at = a->next_expiry * 1000; /* the first of a ban expiry and a fleet refresh */
	struct timespec ts;

	if (a->fleet_refresh_ms && (!at || a->fleet_refresh_ms < at))
		at = a->fleet_refresh_ms;
	if (a->failing || !at)
		return timeout;
	/* In ms from now, not from the whole second: that would wake up to a
	 * second after the expiry. */
	clock_gettime(CLOCK_REALTIME, &ts);
	left = at - ((int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000);
	return left < timeout ? left > 0 ? (int)left : 0 : timeout;
}

/* One turn of the loop: wait for a change, a ban expiry or a tick, read the
 * offender ring, publish if something calls for it. Returns -1 when the
 * wait itself fails. */
static int fc_agent_step(struct fc_agent *a)
{
	struct pollfd pfd[2] = {
		{ .fd = a->watch && a->pg ? fc_store_watch_fd(a->watch) : a->ino, .events = POLLIN },
		{ .fd = a->clk, .events = POLLIN },
	};
	const char *why = NULL;
	struct fc_err err;
	bool stepped;
	int ready;
	int64_t v;

	/* poll skips an fd of -1. */
	ready = poll(pfd, 2, fc_agent_timeout(a));
	if (ready < 0 && errno != EINTR)
		return -1;
	fc_agent_drain(a->ino);
	stepped = fc_agent_clock_stepped(a);
	if (ready > 0 && pfd[0].revents)
		a->rechecks = FC_AGENT_RECHECKS;
	else if (a->rechecks)
		a->rechecks--;
	if (fc_agent_stop)
		return 0;
	if (fc_agent_hup) {
		fc_agent_hup = 0;
		a->esc_log.id = 0; /* everything afresh */
		why = "SIGHUP";
	} else if (a->failing) {
		why = "retry";
	} else if (stepped) {
		why = "clock stepped";
	} else if (a->next_expiry && (int64_t)time(NULL) >= a->next_expiry) {
		why = "ban expiry";
	} else if (a->fleet_refresh_ms && fc_unix_ms() >= a->fleet_refresh_ms) {
		why = "fleet splits";
	} else if (fc_store_data_version(a->watch, &v, &err) < 0) {
		fc_store_close(a->watch); /* lost (PostgreSQL restarting): reconnect on publish */
		a->watch = NULL;
		why = "watch lost";
	} else if (v != a->version) {
		a->version = v;
		a->rechecks = 0;
		why = "store changed";
	}
	if (why)
		fc_agent_try_publish(a, why);
	/* After the publish and its reload of the escalating policies: reports
	 * of a policy that has just gained --escalate are counted, not skipped.
	 * What escalation bans is published on the next step (the commit wakes
	 * the watch). */
	fc_agent_escalate(a);
	fc_agent_recount(a);
	return 0;
}

/*
 * Takes the locks, starts the servers asked for, publishes once. The store
 * may be new on a new machine: it is made (with its directory, where a SQLite
 * store's lock goes) now; once watching, a vanished store is an outage to
 * ride out, never an empty store to publish. A fleet's PostgreSQL may be
 * unreachable when a node boots: what was published before stays enforced
 * and the agent keeps trying.
 */
static int fc_agent_setup(struct fc_agent *a, struct fc_err *err)
{
	const struct fc_agent_config *cfg = a->cfg;
	struct sigaction sa = { .sa_handler = fc_agent_signal };
	struct fc_err why;

	a->prepared = fc_agent_prepare(&a->ctx, cfg->weight, false, err) == 0;
	if (!a->prepared && !a->pg)
		return -1;
	if (fc_agent_lock(&a->ctx, &a->lock, err) < 0)
		return -1;
	a->locked = true;
	if (a->prepared)
		a->prepared = fc_agent_prepare(&a->ctx, cfg->weight, true, err) == 0;
	if (!a->prepared && !a->pg)
		return -1;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	if (!a->pg && (a->ino = fc_agent_watch(a->ctx.db_path, err)) < 0)
		fc_agent_log("%s", err->msg);
	/* Before the first publish: a step in between is caught. */
	if ((a->clk = fc_agent_clock_watch(-1)) < 0)
		fc_agent_log("clock: cannot watch for steps (%s): after one, the packet path's clock is off until "
			     "the next publish", strerror(errno));
	a->ctx.store_must_exist = true;
	/* The agent's own fleet options are what its publishes say: gcra's
	 * lease window from its sync interval, its clock offset (tests). */
	a->ctx.fleet_sync_ns = (uint64_t)cfg->fleet.sync_interval_ms * 1000000;
	a->ctx.fleet_clock_ns = cfg->fleet.clock_offset_ms * 1000000;
	a->ctx.fleet_clock_given = true;
	a->pubctx = a->ctx;
	a->pubctx.keep = &a->store;
	a->serve = cfg->serve;
	a->serve.log = fc_agent_log;
	if (cfg->metrics.at) {
		a->metrics = fc_metrics_start(&cfg->metrics.sa, &a->serve, &a->ctx, &a->cnt, &why);
		if (!a->metrics)
			return fc_err_set(err, "--metrics %s: %s", cfg->metrics.at, why.msg);
		fc_agent_log("serving Prometheus metrics at http%s://%s/metrics (bearer token: %s)",
			     cfg->serve.cert_file ? "s" : "", cfg->metrics.at, cfg->serve.token_file);
	}
	if (cfg->http.at) {
		a->console = fc_console_start(&cfg->http.sa, &a->serve, &a->ctx, &a->cnt, &why);
		if (!a->console)
			return fc_err_set(err, "--http %s: %s", cfg->http.at, why.msg);
		fc_agent_log("serving the console at http%s://%s/ (token: freqctl console-token --token-file %s)",
			     cfg->serve.cert_file ? "s" : "", cfg->http.at, cfg->serve.token_file);
	}
	if (fc_agent_fleet_start(&a->fleet, &a->ctx, &cfg->fleet, err) < 0)
		return -1;
	/* Watch first, publish second: a change committed in between is seen. */
	if (!a->prepared || fc_agent_rewatch(&a->ctx, &a->watch, &a->version, err) < 0 ||
	    (a->next_expiry = fc_agent_publish(a, "start", err)) < 0) {
		if (!a->pg)
			return -1;
		fc_agent_log("cannot reach the store, keeping what is enforced: %s (retrying)", err->msg);
		a->failing = true;
		a->backoff = 100;
		a->next_expiry = 0;
	}
	fc_agent_esc_reload(a);
	return 0;
}

/* Closes whatever fc_agent_setup and the loop opened. */
static void fc_agent_teardown(struct fc_agent *a)
{
	fc_agent_fleet_stop(&a->fleet);
	fc_console_stop(a->console);
	fc_metrics_stop(a->metrics);
	fc_store_close(a->watch);
	fc_store_keep_fini(&a->store);
	if (a->state_fd >= 0)
		close(a->state_fd);
	fc_esc_free(&a->esc);
	fc_fleet_cfg_free(&a->fleet_cfg);
	if (a->ino >= 0)
		close(a->ino);
	if (a->clk >= 0)
		close(a->clk);
	if (a->locked)
		fc_agent_unlock(&a->lock);
}

int fc_agent_run(const struct fc_ctx *ctx, const struct fc_agent_config *cfg)
{
	struct fc_agent a = { .cfg = cfg, .ctx = *ctx, .pg = fc_store_is_postgres(ctx->db_path), .ino = -1, .clk = -1,
			      .version = -1, .state_fd = -1,
			      .esc = { .cap = cfg->escalate_cap, .v6_aggregate = cfg->escalate_aggregate } };
	struct fc_err err;
	int rc = 1;

	fc_log_route(fc_agent_warned);
	fc_store_keep_init(&a.store, a.ctx.db_path, false);
	if (fc_agent_setup(&a, &err) < 0) {
		fc_warn("%s", err.msg);
		goto out;
	}
	fc_agent_notify("READY=1\nSTATUS=publishing the store");
	fc_agent_log("watching store %s as node %s (pin dir %s, shm %s)", a.ctx.db_path, a.ctx.node, a.ctx.pin_dir,
		     a.ctx.shm_path);
	while (!fc_agent_stop && fc_agent_step(&a) == 0)
		;
	fc_agent_notify("STOPPING=1");
	fc_agent_log("stopping; XDP/TC and nginx keep enforcing what was published");
	rc = 0;
out:
	fc_agent_teardown(&a);
	fc_log_route(NULL);
	return rc;
}
