// SPDX-License-Identifier: BSD-2-Clause
/*
 * The fleet agent's status file (see fc_fleet_status.h), written after
 * each round.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>

#include "fc_fleet_status.h"
#include "fc_store.h"

const char *fc_fleet_mode_name(enum fc_fleet_mode mode)
{
	switch (mode) {
	case FC_FLEET_MODE_FLEET:
		return "fleet";
	case FC_FLEET_MODE_DEGRADED:
		return "degraded";
	default:
		return "off";
	}
}

/* The member numbered no of set (NULL: none). */
static const struct fc_fleet_member *fc_member(const struct fc_fleet_set *set, uint32_t no)
{
	size_t i;

	for (i = 0; i < set->n; i++)
		if (set->m[i].no == no)
			return &set->m[i];
	return NULL;
}

void fc_fleet_status_node_set(struct fc_fleet_status_node *n, const struct fc_fleet_cfg *cfg, uint64_t now)
{
	const struct fc_fleet_member *cur, *next, *in = NULL;
	uint64_t joins_ns = 0;
	bool never = false;
	size_t i;

	n->in_set = cfg->npols > 0;
	for (i = 0; i < cfg->npols; i++) {
		const struct fc_fleet_policy *p = &cfg->pols[i];
		uint64_t w = now / p->unit_ns, from = p->split[1].from;
		bool later = from != FC_FLEET_NEVER && w < from; /* split[1] is still to come */

		cur = fc_member(&cfg->sets[p->set[from != FC_FLEET_NEVER && w >= from]], n->no);
		next = later ? fc_member(&cfg->sets[p->set[1]], n->no) : NULL;
		in = in ? in : cur ? cur : next;
		if (cur)
			continue;
		n->in_set = false;
		if (next && from * p->unit_ns > joins_ns)
			joins_ns = from * p->unit_ns;
		never |= !next;
	}
	n->weight = in ? (double)in->weight / FC_FLEET_WEIGHT_ONE : 0;
	n->joins_ms = n->in_set || never ? 0 : (int64_t)(joins_ns / 1000000);
}

/* UTC ms as "2026-11-29T06:00:00.123Z"; null for 0 (never). */
static json_t *fc_utc(int64_t ms)
{
	time_t s = (time_t)(ms / 1000);
	struct tm tm;
	char buf[40];

	if (ms <= 0 || !gmtime_r(&s, &tm))
		return json_null();
	strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf + strlen(buf), sizeof(buf) - strlen(buf), ".%03dZ", (int)(ms % 1000));
	return json_string(buf);
}

static json_t *fc_int(uint64_t v)
{
	return json_integer(v > (uint64_t)INT64_MAX ? INT64_MAX : (json_int_t)v);
}

static json_t *fc_status_redis(const struct fc_fleet_status *v)
{
	json_t *prim = json_array();
	size_t i;

	for (i = 0; i < v->nprimaries; i++) {
		const struct fc_fleet_status_primary *p = &v->primaries[i];

		json_array_append_new(prim,
				      json_pack("{s:s, s:I, s:I, s:s}", "addr", p->addr, "slots", (json_int_t)p->slots,
						"replicas", (json_int_t)p->replicas, "state", p->up ? "up" : "down"));
	}
	return json_pack("{s:s, s:o, s:I}", "mode", fc_redis_mode_name(v->redis_mode), "primaries", prim, "wait",
			 (json_int_t)v->wait);
}

static json_t *fc_status_nodes(const struct fc_fleet_status *v)
{
	json_t *a = json_array();
	size_t i;

	for (i = 0; i < v->nnodes; i++) {
		const struct fc_fleet_status_node *n = &v->nodes[i];

		json_array_append_new(a, json_pack("{s:s, s:I, s:f, s:b, s:o, s:s, s:I}", "name", n->name, "no",
						   (json_int_t)n->no, "weight", n->weight, "in_set", n->in_set, "joins",
						   fc_utc(n->joins_ms), "mode", n->mode, "age_ms", (json_int_t)n->age_ms));
	}
	return a;
}

static json_t *fc_status_policies(const struct fc_fleet_status *v)
{
	json_t *a = json_array();
	size_t i;

	for (i = 0; i < v->npolicies; i++) {
		const struct fc_fleet_status_policy *p = &v->policies[i];

		json_array_append_new(
			a,
			json_pack("{s:I, s:s, s:o, s:s, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o}", "id",
				  (json_int_t)p->id, "algo", p->algo, "limit", fc_int(p->limit), "unit", p->unit,
				  "window", fc_int(p->window), "fleet_used", fc_int(p->fleet_used), "node_used",
				  fc_int(p->node_used), "credit", fc_int(p->credit), "tracked", fc_int(p->tracked),
				  "demanding", fc_int(p->demanding), "done", fc_int(p->done), "grants",
				  fc_int(p->grants), "releases", fc_int(p->releases), "donated", fc_int(p->donated)));
	}
	return a;
}

static json_t *fc_status_counters(const struct fc_fleet_counters *c)
{
	return json_pack("{s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o}", "commands",
			 fc_int(c->commands), "scripts", fc_int(c->scripts), "waits", fc_int(c->waits), "moved",
			 fc_int(c->moved), "ask", fc_int(c->ask), "reconnects", fc_int(c->reconnects), "reasserted",
			 fc_int(c->reasserted), "frozen", fc_int(c->frozen), "reply_errors", fc_int(c->reply_errors),
			 "deferred", fc_int(c->deferred), "degraded", fc_int(c->degraded), "degraded_ms",
			 fc_int(c->degraded_ms), "ring_errors", fc_int(c->ring_errors), "records", fc_int(c->records),
			 "corrupt", fc_int(c->corrupt), "untracked", fc_int(c->untracked));
}

json_t *fc_fleet_status_json(const struct fc_fleet_status *v)
{
	return json_pack("{s:s, s:I, s:s, s:s, s:o, s:o, s:o, s:I, s:{s:f, s:f, s:f, s:f}, s:o, "
			 "s:{s:f, s:I, s:I}, s:o, s:o, s:o, s:o}",
			 "node", v->node, "node_no", (json_int_t)v->node_no, "mode", fc_fleet_mode_name(v->mode),
			 "reason", v->reason, "since", fc_utc(v->since_ms), "rounds", fc_int(v->rounds), "last_sync",
			 fc_utc(v->last_sync_ms), "interval_ms", (json_int_t)v->interval_ms, "latency_ms", "last",
			 v->lat_last, "p50", v->lat_p50, "p99", v->lat_p99, "sum", v->lat_sum, "redis",
			 fc_status_redis(v), "clock", "offset_ms", v->offset_ms, "max_skew_ms",
			 (json_int_t)v->max_skew_ms, "test_offset_ms", (json_int_t)v->test_offset_ms, "nodes",
			 fc_status_nodes(v), "policies", fc_status_policies(v), "counters",
			 fc_status_counters(&v->counters), "keys", fc_int(v->keys));
}

int fc_fleet_status_write(const char *shm_path, const struct fc_fleet_status *v, struct fc_err *err)
{
	char path[PATH_MAX], tmp[PATH_MAX];
	json_t *doc = NULL;
	int fd = -1, rc = -1;

	if ((size_t)snprintf(path, sizeof(path), "%s.fleet.json", shm_path) >= sizeof(path) ||
	    (size_t)snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= sizeof(tmp))
		return fc_err_set(err, "fleet: status file of %s: path too long", shm_path);
	/* Whatever is there is not ours to write into: a stale one of ours,
	 * or a file or link someone else put there. */
	if (unlink(tmp) < 0 && errno != ENOENT) {
		fc_err_set(err, "fleet: status file %s: %s", tmp, strerror(errno));
		goto out;
	}
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0 || fchmod(fd, 0644) < 0) {
		fc_err_set(err, "fleet: status file %s: %s", tmp, strerror(errno));
		goto out;
	}
	doc = fc_fleet_status_json(v);
	if (!doc) {
		fc_err_set(err, "fleet: status file %s: out of memory", path);
		goto out;
	}
	if (json_dumpfd(doc, fd, JSON_COMPACT) < 0 || write(fd, "\n", 1) != 1) {
		fc_err_set(err, "fleet: status file %s: %s", tmp, strerror(errno));
		goto out;
	}
	if (close(fd) < 0) {
		fd = -1;
		fc_err_set(err, "fleet: status file %s: %s", tmp, strerror(errno));
		goto out;
	}
	fd = -1;
	if (rename(tmp, path) < 0) {
		fc_err_set(err, "fleet: status file %s: %s", path, strerror(errno));
		goto out;
	}
	rc = 0;
out:
	if (fd >= 0)
		close(fd);
	if (rc < 0)
		unlink(tmp);
	json_decref(doc);
	return rc;
}
