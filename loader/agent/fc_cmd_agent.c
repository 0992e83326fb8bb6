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
 * and every few seconds as a fallback. If the store can not be read or
 * reached, what was published stays enforced; the agent says so once and
 * retries with backoff. SIGHUP republishes everything; SIGTERM exits and
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
#include <sys/socket.h>
#include <sys/mman.h>
#include <sys/un.h>

#include "fc_cli.h"
#include "fc_duration.h"
#include "fc_console.h"
#include "fc_http.h"
#include "fc_metrics.h"
#include "fc_publish.h"

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

static const struct fc_opt fc_agent_opts[] = {
	{ "quiet", 'q', no_argument, NULL, "log only problems, not every publish" },
	{ "weight", FC_OPT_WEIGHT, required_argument, "W",
	  "record this node's (--node) weight in the store first: its rates are R * W" },
	{ "metrics", FC_OPT_METRICS, required_argument, "[ADDR:]PORT",
	  "serve Prometheus metrics at http://ADDR:PORT/metrics (ADDR: 127.0.0.1 unless given)" },
	{ "http", FC_OPT_HTTP, required_argument, "[ADDR:]PORT",
	  "serve the operator console and its API (ADDR: 127.0.0.1 unless given; see console-token)" },
	{ "token-file", FC_OPT_TOKEN_FILE, required_argument, "PATH",
	  "the console's bearer token, made (0600) on first start (default " FC_CONSOLE_TOKEN_DEFAULT ")" },
	{ 0 },
};

static void fc_agent_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void fc_agent_log(const char *fmt, ...)
{
	char stamp[FC_TIME_STRLEN];
	va_list ap;

	fc_time_format((int64_t)time(NULL), stamp);
	fprintf(stderr, "%s freqctl agent: ", stamp);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
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
		fc_warn("agent: writing %s: %s", path, strerror(errno));
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

/* Starts a change. A fleet's PostgreSQL is kept connected between changes
 * (*keep; dropped on any failure, to reconnect next time); a SQLite file is
 * opened afresh each time, so a store moved away is seen as gone. */
static int fc_agent_begin(struct fc_publish *pub, const struct fc_ctx *ctx, struct fc_store **keep, struct fc_err *err)
{
	if (!fc_store_is_postgres(ctx->db_path))
		return fc_publish_begin(pub, ctx, err);
	if (!*keep && fc_store_open_ex(ctx->db_path, false, keep, err) < 0)
		return -1;
	if (fc_publish_begin_on(pub, ctx, *keep, err) == 0)
		return 0;
	fc_store_close(*keep);
	*keep = NULL;
	return -1;
}

/* Ends it: on failure a kept connection is dropped as well. */
static int fc_agent_commit(struct fc_publish *pub, struct fc_store **keep, struct fc_err *err)
{
	if (fc_publish_commit(pub, err) == 0)
		return 0;
	fc_store_close(*keep);
	*keep = NULL;
	return -1;
}

/*
 * Escalation: the agent reads the offender ring that nginx workers write and
 * counts refusals per (policy, client) in fixed windows of the policy's
 * --escalate unit; past N, the client is banned at XDP/TC for --ban-ttl.
 */
#define FC_ESC_TICK_MS 100
#define FC_ESC_KEYS    65536 /* counters kept; a power of two */

struct fc_esc_policy {
	uint32_t id;
	struct fc_rate rate;
	int64_t ttl;
};

struct fc_esc_key {
	uint32_t policy; /* 0: free */
	uint8_t family;
	uint8_t addr[16];
	int64_t window;
	uint64_t count;
};

struct fc_escalation {
	void *base;
	size_t size;
	const struct fc_shm_ring *ring;
	uint64_t tail;
	struct fc_esc_policy *pol;
	size_t npol;
	struct fc_esc_key *keys;
};

/* The escalating policies, after each publish (on its connection, when kept). */
static void fc_esc_reload(struct fc_escalation *e, const struct fc_ctx *ctx, struct fc_store *keep)
{
	struct fc_policy_row *rows = NULL;
	struct fc_store *st = keep; /* the agent's kept connection, if it has one */
	struct fc_err err;
	size_t n = 0, i;
	int rc;

	rc = !st && fc_store_open_ex(ctx->db_path, false, &st, &err) < 0 ? -1 :
								   fc_store_policy_list(st, &rows, &n, &err);
	if (st != keep)
		fc_store_close(st);
	if (rc < 0)
		return; /* keep the last list */
	free(e->pol);
	e->pol = calloc(n + 1, sizeof(*e->pol));
	e->npol = 0;
	for (i = 0; e->pol && i < n; i++)
		if (rows[i].spec.escalate.n)
			e->pol[e->npol++] = (struct fc_esc_policy){ rows[i].spec.id, rows[i].spec.escalate, rows[i].spec.ban_ttl };
	free(rows);
	if (e->npol && !e->ring) {
		e->ring = fc_shm_ring_map(ctx->shm_path, &e->base, &e->size, &err);
		if (e->ring)
			e->tail = __atomic_load_n(&e->ring->head, __ATOMIC_ACQUIRE); /* from now on */
		else
			fc_agent_log("escalation: %s", err.msg);
	}
	if (!e->keys)
		e->keys = calloc(FC_ESC_KEYS, sizeof(*e->keys));
}

/* Counts one refusal; true when it is the one past the policy's N. */
static bool fc_esc_count(struct fc_escalation *e, const struct fc_esc_policy *p, uint8_t family, const uint8_t *addr,
			 int64_t now)
{
	uint64_t h = fc_shm_ban_hash(family, (uint8_t)p->id, addr, 16) ^ p->id;
	int64_t window = now / (int64_t)p->rate.unit_secs;
	struct fc_esc_key *k;
	size_t i, b;

	for (i = 0; i < 16; i++) {
		b = (h + i) & (FC_ESC_KEYS - 1);
		k = &e->keys[b];
		if (!k->policy || (k->policy == p->id && k->family == family && !memcmp(k->addr, addr, 16)) ||
		    k->window < window - 1)
			break; /* a free, matching or stale counter */
	}
	if (i == 16)
		k = &e->keys[h & (FC_ESC_KEYS - 1)]; /* crowded: the oldest guess wins */
	if (k->policy != p->id || k->family != family || memcmp(k->addr, addr, 16) || k->window != window) {
		*k = (struct fc_esc_key){ .policy = p->id, .family = family, .window = window };
		memcpy(k->addr, addr, 16);
	}
	return ++k->count == p->rate.n + 1;
}

/* Reads the ring up to its head; bans what crossed a threshold. */
static void fc_esc_drain(struct fc_escalation *e, const struct fc_ctx *ctx, bool quiet, struct fc_agent_counters *cnt,
			 struct fc_store **keep)
{
	struct fc_ban_row bans[64];
	uint64_t head, idx, seq;
	int64_t now = (int64_t)time(NULL);
	size_t nb = 0, i, j;

	if (!e->ring || !e->npol)
		return;
	head = __atomic_load_n(&e->ring->head, __ATOMIC_ACQUIRE);
	if (head - e->tail > FC_SHM_RING_SIZE) {
		fc_agent_log("escalation: %llu reports lost (ring overrun)",
			     (unsigned long long)(head - e->tail - FC_SHM_RING_SIZE));
		e->tail = head - FC_SHM_RING_SIZE;
	}
	for (idx = e->tail; idx < head && nb < 64; idx++) {
		const struct fc_shm_ring_entry *r = &e->ring->e[idx & (FC_SHM_RING_SIZE - 1)];
		struct fc_shm_ring_entry copy;

		seq = __atomic_load_n(&r->seq, __ATOMIC_ACQUIRE);
		if (seq < idx + 1)
			break; /* being written: next tick */
		copy = *r;
		if (seq != idx + 1 || __atomic_load_n(&r->seq, __ATOMIC_ACQUIRE) != seq ||
		    (copy.family != 4 && copy.family != 6))
			continue; /* overwritten by a faster lap */
		for (j = 0; j < e->npol && e->pol[j].id != copy.policy; j++)
			;
		if (j == e->npol || !fc_esc_count(e, &e->pol[j], copy.family, copy.addr, now))
			continue;
		memset(&bans[nb], 0, sizeof(bans[nb]));
		bans[nb].p.family = copy.family;
		bans[nb].p.len = copy.family == 4 ? 32 : 128;
		memcpy(bans[nb].p.a, copy.addr, copy.family == 4 ? 4 : 16);
		bans[nb].created = now;
		bans[nb].expires = now + e->pol[j].ttl;
		bans[nb].by_policy = copy.policy;
		nb++;
	}
	e->tail = idx;
	if (nb) {
		struct fc_publish pub;
		struct fc_err err;
		char text[FC_PREFIX_STRLEN];

		if (fc_agent_begin(&pub, ctx, keep, &err) < 0)
			goto fail;
		for (i = 0; i < nb; i++) {
			if (fc_store_ban_put(pub.st, &bans[i], &err) < 0) {
				fc_publish_abort(&pub);
				goto fail;
			}
		}
		if (fc_agent_commit(&pub, keep, &err) < 0)
			goto fail;
		__atomic_add_fetch(&cnt->escalations, nb, __ATOMIC_RELAXED);
		for (i = 0; i < nb && !quiet; i++) {
			fc_prefix_format(&bans[i].p, text);
			fc_agent_log("escalated: %s banned at XDP/TC until %lld (refused too often by policy %u)", text,
				     (long long)bans[i].expires, bans[i].by_policy);
		}
		return;
fail:
		fc_agent_log("escalation: cannot ban %zu clients: %s", nb, err.msg);
	}
}

/* Makes the store if it is new and records this node's weight (0: leave it). */
static int fc_agent_prepare(const struct fc_ctx *ctx, double weight, struct fc_err *err)
{
	struct fc_node n = { .weight = weight };
	struct fc_store *st;
	int rc = 0;

	if (fc_store_open(ctx->db_path, &st, err) < 0)
		return -1;
	snprintf(n.name, sizeof(n.name), "%s", ctx->node);
	if (weight)
		rc = fc_store_node_put(st, &n, err);
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

/* Publishes the store; returns the unix time of the next ban expiry (0: none)
 * or -1 on failure. */
static int64_t fc_agent_publish(const struct fc_ctx *ctx, bool quiet, const char *why, struct fc_agent_counters *cnt,
				struct fc_store **keep, struct fc_err *err)
{
	struct fc_ban_row *bans = NULL;
	struct fc_uid_ban *ub = NULL;
	struct timespec t0, t1;
	struct fc_publish pub;
	int64_t next = 0;
	uint64_t us;
	size_t nb = 0, nu = 0, i;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (fc_agent_begin(&pub, ctx, keep, err) < 0)
		goto fail;
	if (fc_store_ban_list(pub.st, pub.now, &bans, &nb, err) < 0 ||
	    fc_store_uid_ban_list(pub.st, pub.now, &ub, &nu, err) < 0) {
		fc_publish_abort(&pub);
		free(bans);
		goto fail;
	}
	for (i = 0; i < nb + nu; i++) {
		int64_t e = i < nb ? bans[i].expires : ub[i - nb].expires;

		if (e && (!next || e < next))
			next = e;
	}
	free(bans);
	free(ub);
	if (fc_agent_commit(&pub, keep, err) < 0)
		goto fail;
	clock_gettime(CLOCK_MONOTONIC, &t1);
	us = (uint64_t)((t1.tv_sec - t0.tv_sec) * 1000000 + (t1.tv_nsec - t0.tv_nsec) / 1000);
	__atomic_add_fetch(&cnt->publishes, 1, __ATOMIC_RELAXED);
	__atomic_store_n(&cnt->last_publish, (int64_t)time(NULL), __ATOMIC_RELAXED);
	__atomic_store_n(&cnt->last_publish_us, us, __ATOMIC_RELAXED);
	if (!quiet || pub.purged)
		fc_agent_log("published (%s) in %.1f ms: XDP/TC %zu added, %zu changed, %zu removed; nginx seq %llu%s; "
			     "%zu expired bans purged",
			     why, (double)us / 1e3, pub.res.added, pub.res.changed, pub.res.removed,
			     (unsigned long long)pub.shm.seq, pub.shm.published ? " (new)" : "", pub.purged);
	return next;
fail:
	__atomic_add_fetch(&cnt->publish_errors, 1, __ATOMIC_RELAXED);
	return -1;
}

static int fc_agent_run(const struct fc_ctx *global, const struct fc_cmd *cmd, int argc, char **argv)
{
	struct fc_ctx agent_ctx = *global, *ctx = &agent_ctx;
	struct sigaction sa = { .sa_handler = fc_agent_signal };
	struct fc_store *watch = NULL, *keep = NULL;
	int64_t next_expiry = 0, version = -1, v;
	struct fc_agent_locks lock;
	int ino, timeout, backoff = 0, rechecks = 0, c, ready;
	bool quiet = false, failing = false;
	struct fc_escalation esc = { 0 };
	struct fc_agent_counters cnt = { 0 };
	struct fc_metrics *metrics = NULL;
	struct fc_console *console = NULL;
	const char *metrics_at = NULL, *http_at = NULL, *token_file = FC_CONSOLE_TOKEN_DEFAULT;
	struct sockaddr_storage metrics_sa, http_sa;
	char token[FC_CONSOLE_TOKEN_LEN + 1];
	struct fc_err err;
	double weight = 0;
	bool pg = fc_store_is_postgres(ctx->db_path), prepared;

	while ((c = fc_cmd_getopt(cmd, argc, argv)) != -1) {
		if (c == 'q')
			quiet = true;
		else if (c == FC_OPT_METRICS && fc_http_parse(optarg, &metrics_sa, &err) < 0)
			fc_usage_error(cmd, "--metrics %s", err.msg);
		else if (c == FC_OPT_METRICS)
			metrics_at = optarg;
		else if (c == FC_OPT_HTTP && fc_http_parse(optarg, &http_sa, &err) < 0)
			fc_usage_error(cmd, "--http %s", err.msg);
		else if (c == FC_OPT_HTTP)
			http_at = optarg;
		else if (c == FC_OPT_TOKEN_FILE)
			token_file = optarg;
		else if (fc_weight_parse(optarg, &weight, &err) < 0)
			fc_usage_error(cmd, "--weight: %s", err.msg);
	}
	/* The store may be new on a new machine: make it (and its directory,
	 * where a SQLite store's lock goes) now; once watching, a vanished store
	 * is an outage to ride out, never an empty store to publish. A fleet's
	 * PostgreSQL may be unreachable when a node boots: what was published
	 * before stays enforced and the agent keeps trying. */
	prepared = fc_agent_prepare(ctx, weight, &err) == 0;
	if (!prepared && !pg) {
		fc_warn("agent: %s", err.msg);
		return FC_EXIT_FAILURE;
	}
	if (fc_agent_lock(ctx, &lock, &err) < 0) {
		fc_warn("agent: %s", err.msg);
		return FC_EXIT_FAILURE;
	}
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	ino = pg ? -1 : fc_agent_watch(ctx->db_path, &err);
	if (!pg && ino < 0)
		fc_agent_log("%s", err.msg);

	ctx->store_must_exist = true;
	if (metrics_at) {
		metrics = fc_metrics_start(&metrics_sa, ctx, &cnt, &err);
		if (!metrics) {
			fc_warn("agent: --metrics %s: %s", metrics_at, err.msg);
			fc_agent_unlock(&lock);
			return FC_EXIT_FAILURE;
		}
		fc_agent_log("serving Prometheus metrics at http://%s/metrics", metrics_at);
	}
	if (http_at) {
		if (fc_console_token(token_file, true, token, &err) == 0)
			console = fc_console_start(&http_sa, ctx, &cnt, token, &err);
		if (!console) {
			fc_warn("agent: --http %s: %s", http_at, err.msg);
			fc_metrics_stop(metrics);
			fc_agent_unlock(&lock);
			return FC_EXIT_FAILURE;
		}
		fc_agent_log("serving the console at http://%s/ (token: freqctl console-token --token-file %s)",
			     http_at, token_file);
	}
	/* Watch first, publish second: a change committed in between is seen. */
	if (!prepared || fc_agent_rewatch(ctx, &watch, &version, &err) < 0 ||
	    (next_expiry = fc_agent_publish(ctx, quiet, "start", &cnt, &keep, &err)) < 0) {
		if (!pg) {
			fc_warn("agent: %s", err.msg);
			fc_store_close(watch);
			fc_store_close(keep);
			fc_console_stop(console);
			fc_metrics_stop(metrics);
			fc_agent_unlock(&lock);
			return FC_EXIT_FAILURE;
		}
		fc_agent_log("cannot reach the store, keeping what is enforced: %s (retrying)", err.msg);
		failing = true;
		backoff = 100;
		next_expiry = 0;
	}
	fc_esc_reload(&esc, ctx, keep);
	fc_agent_notify("READY=1\nSTATUS=publishing the store");
	fc_agent_log("watching store %s as node %s (pin dir %s, shm %s)", ctx->db_path, ctx->node, ctx->pin_dir,
		     ctx->shm_path);

	while (!fc_agent_stop) {
		struct pollfd pfd = { .fd = watch && pg ? fc_store_watch_fd(watch) : ino, .events = POLLIN };
		int64_t now = (int64_t)time(NULL);
		const char *why = NULL;

		timeout = failing ? backoff : rechecks ? FC_AGENT_RECHECK_MS :
				   esc.npol && esc.ring ? FC_ESC_TICK_MS : FC_AGENT_FALLBACK_MS;
		if (!failing && next_expiry && (next_expiry - now) * 1000 < timeout)
			timeout = next_expiry > now ? (int)(next_expiry - now) * 1000 : 0;
		ready = poll(&pfd, pfd.fd >= 0 ? 1 : 0, timeout);
		if (ready < 0 && errno != EINTR)
			break;
		fc_agent_drain(ino);
		if (ready > 0)
			rechecks = FC_AGENT_RECHECKS;
		else if (rechecks)
			rechecks--;
		if (fc_agent_stop)
			break;
		fc_esc_drain(&esc, ctx, quiet, &cnt, &keep);
		if (fc_agent_hup) {
			fc_agent_hup = 0;
			why = "SIGHUP";
		} else if (failing) {
			why = "retry";
		} else if (next_expiry && (int64_t)time(NULL) >= next_expiry) {
			why = "ban expiry";
		} else if (fc_store_data_version(watch, &v, &err) < 0) {
			fc_store_close(watch); /* lost (PostgreSQL restarting): reconnect below */
			watch = NULL;
			why = "watch lost";
		} else if (v != version) {
			version = v;
			why = "store changed";
			rechecks = 0;
		}
		if (!why)
			continue;
		if ((!prepared && !(prepared = fc_agent_prepare(ctx, weight, &err) == 0)) ||
		    (!watch && fc_agent_rewatch(ctx, &watch, &version, &err) < 0) ||
		    (v = fc_agent_publish(ctx, quiet, why, &cnt, &keep, &err)) < 0) {
			if (!failing)
				fc_agent_log("cannot publish, keeping what is enforced: %s (retrying)", err.msg);
			failing = true;
			backoff = backoff ? (backoff * 2 > FC_AGENT_BACKOFF_MAX ? FC_AGENT_BACKOFF_MAX : backoff * 2) : 100;
			continue;
		}
		if (failing)
			fc_agent_log("store readable again");
		failing = false;
		backoff = 0;
		next_expiry = v;
		/* data_version is not re-read here: a commit that raced this publish
		 * must still be seen. A publish that wrote (purged, escalated) costs
		 * one more, idempotent, publish. */
		fc_esc_reload(&esc, ctx, keep);
	}
	fc_agent_notify("STOPPING=1");
	fc_agent_log("stopping; XDP/TC and nginx keep enforcing what was published");
	fc_console_stop(console);
	fc_metrics_stop(metrics);
	fc_store_close(watch);
	fc_store_close(keep);
	if (esc.base)
		munmap(esc.base, esc.size);
	free(esc.pol);
	free(esc.keys);
	if (ino >= 0)
		close(ino);
	fc_agent_unlock(&lock);
	return FC_EXIT_OK;
}

const struct fc_cmd fc_cmd_agent = {
	.name = "agent",
	.min_args = 0,
	.max_args = 0,
	.summary = "Keep XDP/TC and nginx equal to the store, whoever changes it (foreground).",
	.details = "Publishes at start, then whenever the store changes (SQLite: inotify, then\n"
		   "data_version; PostgreSQL: LISTEN/NOTIFY), when a ban expires (and drops it from the\n"
		   "store), and on SIGHUP. If the store can not be read or reached, what was published\n"
		   "stays enforced and the agent retries with backoff. SIGTERM stops it and leaves the\n"
		   "kernel and the shm as they are. One agent per store file, or per --shm with\n"
		   "PostgreSQL (a lock file beside it). A fleet: every node runs an agent with\n"
		   "--db postgresql://... --node NAME [--weight W]. For systemd: Type=notify, see\n"
		   "tools/freqctl-agent.service.",
	.opts = fc_agent_opts,
	.run = fc_agent_run,
};
