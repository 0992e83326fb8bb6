// SPDX-License-Identifier: BSD-2-Clause
/*
 * freqctl top: this node's busiest policies and sources, refreshed every
 * second, like top(1). Rates are the differences of the counters between two
 * reads over the time between them. Sources are the ip=* policy's buckets at
 * XDP/TC, one per unit (an address, or the prefix of the policy's length it
 * is in), ranked by how much of their fullest tier they use now,
 * the clients nginx refused for an escalating policy during the last
 * interval (read from the shm's offender ring, which top never writes), and
 * the keys of per-key nginx policies ranked as the sources are.
 */
#include <errno.h>
#include <jansson.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <bpf/bpf.h>
#include <sys/ioctl.h>

#include "fc_cli.h"
#include "fc_duration.h"
#include "fc_escape.h"
#include "fc_rows_json.h"
#include "fc_shm_state.h"
#include "fc_stats.h"
#include "fc_store_keep.h"

#define FC_TOP_BATCH 4096

static volatile sig_atomic_t fc_top_stop;

static void fc_top_signal(int sig)
{
	(void)sig;
	fc_top_stop = 1;
}

struct fc_top_opt {
	double delay;
	uint64_t iterations; /* 0: until interrupted */
	uint64_t rows;       /* 0: what the terminal fits */
	bool json;
};

static const struct fc_opt fc_top_opts[] = {
	FC_OPTION("delay", 'd', FC_OPT_REAL, struct fc_top_opt, delay, .fmin = 0.1, .fmax = 3600, .arg = "SECONDS",
		  .help = "refresh every SECONDS (default 1; 0.1 to 3600)"),
	FC_OPTION("iterations", 'n', FC_OPT_UINT, struct fc_top_opt, iterations, .min = 1, .max = 1000000, .arg = "N",
		  .help = "stop after N refreshes (default: until interrupted)"),
	FC_OPTION("rows", 'r', FC_OPT_UINT, struct fc_top_opt, rows, .min = 1, .max = 1000000, .arg = "N",
		  .help = "rows per table (default: what the terminal fits; 10 in a pipe)"),
	FC_OPTION("json", 0, FC_OPT_FLAG, struct fc_top_opt, json,
		  .help = "print one JSON object per refresh, one per line"),
	FC_OPT_END,
};

/* One read of everything top shows. */
struct fc_top_sample {
	struct fc_stats_all a;
	double t; /* CLOCK_MONOTONIC seconds */
	uint64_t ring_head;
};

struct fc_top_policy {
	const struct fc_policy_stats *ps;
	double passed, denied, delayed; /* per second */
};

struct fc_top_source {
	uint8_t family;
	uint8_t plen; /* an ip=* unit's prefix length; 0: the address alone */
	uint8_t addr[16];
	uint32_t policy;
	double value; /* a bucket's use (0..1), or refusals per second */
};

struct fc_top {
	const struct fc_ctx *ctx;
	bool json, tty;
	size_t rows;
	double delay;
	int state_fd; /* the workers' state file, for the offender ring; -1: none */
	struct fc_top_source *src; /* scratch, FC_MAX_SOURCES entries */
	struct fc_key_use *keys;   /* scratch, rows entries */
	size_t nkeys;
};

static double fc_mono(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int fc_top_read(struct fc_top *top, struct fc_top_sample *s, struct fc_err *err)
{
	s->t = fc_mono();
	s->ring_head = top->state_fd >= 0 ? fc_state_ring_head(top->state_fd) : 0;
	return fc_stats_gather(top->ctx, &s->a, err);
}

static double fc_rate(uint64_t now, uint64_t before, double dt)
{
	return now >= before ? (double)(now - before) / dt : 0; /* a reset counter: no rate */
}

static int fc_top_policy_cmp(const void *a, const void *b)
{
	const struct fc_top_policy *x = a, *y = b;
	double vx = x->passed + x->denied + x->delayed, vy = y->passed + y->denied + y->delayed;

	if (vx != vy)
		return vx < vy ? 1 : -1;
	return x->ps->row->spec.id < y->ps->row->spec.id ? -1 : 1;
}

static int fc_top_source_cmp(const void *a, const void *b)
{
	const struct fc_top_source *x = a, *y = b;

	if (x->value != y->value)
		return x->value < y->value ? 1 : -1;
	if (x->family != y->family)
		return x->family < y->family ? -1 : 1;
	if (memcmp(x->addr, y->addr, 16))
		return memcmp(x->addr, y->addr, 16);
	return x->policy < y->policy ? -1 : x->policy > y->policy;
}

/* Each policy's rates between two samples, busiest first; *n how many. */
static struct fc_top_policy *fc_top_policies(const struct fc_top_sample *prev, const struct fc_top_sample *cur,
					     size_t *n)
{
	struct fc_top_policy *v = calloc(cur->a.n ? cur->a.n : 1, sizeof(*v));
	double dt = cur->t - prev->t;
	size_t i, j = 0;

	if (!v)
		return NULL;
	for (i = 0; i < cur->a.n; i++) {
		const struct fc_policy_stats *c = &cur->a.ps[i], *p = NULL;

		/* Both lists are in id order. */
		while (j < prev->a.n && prev->a.ps[j].row->spec.id < c->row->spec.id)
			j++;
		if (j < prev->a.n && prev->a.ps[j].row->spec.id == c->row->spec.id &&
		    prev->a.ps[j].row->epoch == c->row->epoch)
			p = &prev->a.ps[j];
		v[i].ps = c;
		if (p) { /* a policy new since the last read has no rate yet */
			v[i].passed = fc_rate(c->ps.passed.packets, p->ps.passed.packets, dt);
			v[i].denied = fc_rate(c->ps.dropped.packets, p->ps.dropped.packets, dt);
			v[i].delayed = fc_rate(c->delayed, p->delayed, dt);
		}
	}
	qsort(v, cur->a.n, sizeof(*v), fc_top_policy_cmp);
	*n = cur->a.n;
	return v;
}

/* The ip=* policy's live buckets of one family that use anything now,
 * each its unit (of host bits cleared). */
static size_t fc_top_scan(int fd, uint8_t family, uint8_t host, const struct fc_policy *pol, uint32_t gen, uint64_t now,
			  struct fc_top_source *out, size_t n, size_t max)
{
	static struct fc_addr6 keys[FC_TOP_BATCH];
	static struct fc_src_bucket vals[FC_TOP_BATCH];
	size_t klen = family == 4 ? sizeof(struct fc_addr4) : sizeof(struct fc_addr6);
	LIBBPF_OPTS(bpf_map_batch_opts, opts);
	struct fc_addr6 cursor;
	bool first = true, more = true;
	__u32 cnt, i;

	while (more && n < max) {
		cnt = FC_TOP_BATCH;
		if (bpf_map_lookup_batch(fd, first ? NULL : &cursor, &cursor, keys, vals, &cnt, &opts) < 0) {
			if (errno != ENOENT)
				break;
			more = false; /* the last batch */
		}
		first = false;
		for (i = 0; i < cnt && n < max; i++) {
			double use;

			if (vals[i].gen != gen || !(use = fc_bucket_use(pol, vals[i].state, now)))
				continue;
			memset(&out[n], 0, sizeof(out[n]));
			out[n].family = family;
			out[n].plen = host ? (uint8_t)((family == 4 ? 32 : 128) - host) : 0;
			memcpy(out[n].addr, (const uint8_t *)keys + i * klen, klen);
			out[n].policy = pol->id;
			out[n].value = use;
			n++;
		}
	}
	return n;
}

static size_t fc_top_sources(struct fc_top *top, struct fc_err *err)
{
	struct fc_config cfg;
	struct fc_policy pol;
	struct fc_maps m;
	uint64_t now;
	size_t n = 0;

	if (fc_maps_open_existing(top->ctx->pin_dir, &m, err) != 0)
		return 0; /* nothing published yet (top creates nothing), or unreadable */
	if (fc_config_read(&m, &cfg, err) == 0 && cfg.star_slot &&
	    !bpf_map_lookup_elem(m.policies, &cfg.star_slot, &pol)) {
		now = fc_utc_ns();
		n = fc_top_scan(m.src4, 4, cfg.star_host4, &pol, cfg.star_gen, now, top->src, 0, FC_MAX_SOURCES);
		n = fc_top_scan(m.src6, 6, cfg.star_host6, &pol, cfg.star_gen, now, top->src, n, FC_MAX_SOURCES);
	}
	fc_maps_close(&m);
	qsort(top->src, n, sizeof(*top->src), fc_top_source_cmp);
	return n;
}

/* Refusals per client in the ring since the last sample, most first. */
static struct fc_top_source *fc_top_refused(const struct fc_top *top, uint64_t from, uint64_t to, double dt,
					    size_t *n)
{
	struct fc_shm_ring_entry *ring;
	struct fc_top_source *v, *out;
	size_t cnt = 0, i, k = 0;
	uint64_t idx;

	*n = 0;
	/* The workers' head: taken with a grain of salt, bounded by the ring. */
	if (top->state_fd < 0 || to <= from)
		return NULL;
	if (to - from > FC_SHM_RING_SIZE)
		from = to - FC_SHM_RING_SIZE;
	v = calloc(to - from, sizeof(*v));
	ring = calloc(to - from, sizeof(*ring));
	if (!v || !ring) {
		free(v);
		free(ring);
		return NULL;
	}
	fc_state_ring_read(top->state_fd, from, (size_t)(to - from), ring);
	for (idx = from; idx < to; idx++) {
		const struct fc_shm_ring_entry c = ring[idx - from];

		if (c.seq != idx + 1 || (c.family != 4 && c.family != 6))
			continue; /* being written, or overwritten */
		v[cnt].family = c.family;
		memcpy(v[cnt].addr, c.addr, 16);
		v[cnt].policy = c.policy;
		cnt++;
	}
	free(ring);
	/* Group equal (client, policy): sort with value 0, then count runs. */
	qsort(v, cnt, sizeof(*v), fc_top_source_cmp);
	out = v;
	for (i = 0; i < cnt; i++) {
		if (k && out[k - 1].family == v[i].family && out[k - 1].policy == v[i].policy &&
		    !memcmp(out[k - 1].addr, v[i].addr, 16)) {
			out[k - 1].value += 1;
			continue;
		}
		out[k] = v[i];
		out[k++].value = 1;
	}
	for (i = 0; i < k; i++)
		out[i].value /= dt;
	qsort(out, k, sizeof(*out), fc_top_source_cmp);
	*n = k;
	return out;
}

/* A source as text: its address, or its ip=* unit ("2001:db8:1:2::/64"). */
#define FC_SOURCE_STRLEN (INET6_ADDRSTRLEN + 4)
static void fc_addr_format(const struct fc_top_source *s, char *buf, size_t len)
{
	if (!inet_ntop(s->family == 4 ? AF_INET : AF_INET6, s->addr, buf, (socklen_t)len))
		buf[0] = '\0';
	if (s->plen)
		snprintf(buf + strlen(buf), len - strlen(buf), "/%u", s->plen);
}

static json_t *fc_top_sources_json(const struct fc_top_source *v, size_t n, const char *key)
{
	json_t *a = json_array();
	char addr[FC_SOURCE_STRLEN];
	size_t i;

	for (i = 0; a && i < n; i++) {
		fc_addr_format(&v[i], addr, sizeof(addr));
		json_array_append_new(a, json_pack("{s:s, s:I, s:f}", "address", addr, "policy", (json_int_t)v[i].policy,
						   key, (double)(int64_t)(v[i].value * 1000 + 0.5) / 1000));
	}
	return a;
}

static void fc_top_print_json(const struct fc_top *top, const struct fc_top_sample *prev,
			      const struct fc_top_sample *cur, const struct fc_top_policy *pol, size_t np,
			      const struct fc_top_source *src, size_t ns, const struct fc_top_source *ref, size_t nr)
{
	double dt = cur->t - prev->t;
	char stamp[FC_TIME_STRLEN], match[FC_MATCH_LEN];
	json_t *doc, *pols = json_array();
	size_t i;

	fc_time_format((int64_t)time(NULL), stamp);
	for (i = 0; pols && i < np && i < top->rows; i++) {
		const struct fc_policy_spec *p = &pol[i].ps->row->spec;

		fc_match_format(p, match);
		json_array_append_new(pols, json_pack("{s:I, s:s, s:s, s:s, s:f, s:f, s:f}", "id", (json_int_t)p->id,
						      "match", match, "layer", fc_policy_is_l7(p) ? "nginx" : "xdp",
						      "action", fc_action_name(p->action), "passed_per_s", pol[i].passed,
						      "denied_per_s", pol[i].denied, "delayed_per_s", pol[i].delayed));
	}
	doc = json_pack("{s:s, s:f, s:{s:f, s:f, s:f}, s:{s:f, s:f, s:f, s:f}, s:{s:I, s:I, s:I}, s:o, s:o, s:o, s:o}",
			"time", stamp, "interval", dt, "nginx", "banned_uid_per_s",
			fc_rate(cur->a.nginx_banned_uid, prev->a.nginx_banned_uid, dt), "banned_address_per_s",
			fc_rate(cur->a.nginx_banned_addr, prev->a.nginx_banned_addr, dt), "allowed_per_s",
			fc_rate(cur->a.nginx_allowed, prev->a.nginx_allowed, dt), "xdp", "passed_per_s",
			fc_rate(cur->a.s.passed.packets, prev->a.s.passed.packets, dt), "dropped_exact_per_s",
			fc_rate(cur->a.s.drop_exact.packets, prev->a.s.drop_exact.packets, dt), "dropped_prefix_per_s",
			fc_rate(cur->a.s.drop_prefix.packets, prev->a.s.drop_prefix.packets, dt), "dropped_limit_per_s",
			fc_rate(cur->a.s.drop_limit.packets, prev->a.s.drop_limit.packets, dt), "bans", "addresses",
			(json_int_t)cur->a.bans.addresses, "escalated", (json_int_t)cur->a.bans.escalated, "uids",
			(json_int_t)cur->a.bans.uids, "policies", pols, "sources",
			fc_top_sources_json(src, ns < top->rows ? ns : top->rows, "used"), "refused",
			fc_top_sources_json(ref, nr < top->rows ? nr : top->rows, "per_s"), "keys",
			fc_key_uses_to_json(top->keys, top->nkeys));
	if (doc) {
		json_dumpf(doc, stdout, JSON_COMPACT);
		json_decref(doc);
	}
	putchar('\n');
}

/* The length of the longest prefix of escaped text (fc_escape's) of at
 * most max bytes that cuts no escape and no character. */
static size_t fc_top_value_cut(const char *text, size_t max)
{
	size_t n = 0, step;
	unsigned char c, lo, hi;

	for (; text[n]; n += step) {
		c = (unsigned char)text[n];
		step = c == '\\' ? (text[n + 1] == 'x' ? 4 : 2) : fc_utf8_lead(c, &lo, &hi);
		if (!step || n + step > max)
			break;
	}
	return n;
}

static void fc_top_print_text(const struct fc_top *top, const struct fc_top_sample *prev,
			      const struct fc_top_sample *cur, const struct fc_top_policy *pol, size_t np,
			      const struct fc_top_source *src, size_t ns, const struct fc_top_source *ref, size_t nr)
{
	const struct fc_stats *s = &cur->a.s, *o = &prev->a.s;
	double dt = cur->t - prev->t;
	char stamp[FC_TIME_STRLEN], match[FC_MATCH_LEN], addr[FC_SOURCE_STRLEN];
	size_t i;

	fc_time_format((int64_t)time(NULL), stamp);
	if (top->tty)
		fputs("\033[H\033[2J", stdout); /* home, clear */
	printf("freqctl top - node %s - %s - every %.1f s%s\n", top->ctx->node, stamp, top->delay,
	       top->tty ? " (Ctrl-C quits)" : "");
	printf("XDP/TC: %.0f passed/s; dropped/s: %.0f exact ban, %.0f prefix ban, %.0f rate limit\n",
	       fc_rate(s->passed.packets, o->passed.packets, dt), fc_rate(s->drop_exact.packets, o->drop_exact.packets, dt),
	       fc_rate(s->drop_prefix.packets, o->drop_prefix.packets, dt),
	       fc_rate(s->drop_limit.packets, o->drop_limit.packets, dt));
	printf("nginx: refused/s: %.0f by a uid ban, %.0f by an address ban; %.0f allowed/s\n",
	       fc_rate(cur->a.nginx_banned_uid, prev->a.nginx_banned_uid, dt),
	       fc_rate(cur->a.nginx_banned_addr, prev->a.nginx_banned_addr, dt),
	       fc_rate(cur->a.nginx_allowed, prev->a.nginx_allowed, dt));
	printf("bans: %zu addresses (%zu escalated), %zu user ids\n\n", cur->a.bans.addresses, cur->a.bans.escalated,
	       cur->a.bans.uids);
	printf("%-10s %-30s %-6s %-7s %10s %10s %10s\n", "POLICY", "MATCH", "LAYER", "ACTION", "PASSED/s", "DENIED/s",
	       "DELAYED/s");
	for (i = 0; i < np && i < top->rows; i++) {
		const struct fc_policy_spec *p = &pol[i].ps->row->spec;

		fc_match_format(p, match);
		printf("%-10u %-30.30s %-6s %-7s %10.1f %10.1f %10.1f\n", p->id, match,
		       fc_policy_is_l7(p) ? "nginx" : "xdp", fc_action_name(p->action), pol[i].passed, pol[i].denied,
		       pol[i].delayed);
	}
	printf("\n%-40s %-10s %10s\n", "SOURCE (ip=* bucket at XDP/TC, its unit)", "POLICY", "USED");
	for (i = 0; i < ns && i < top->rows; i++) {
		fc_addr_format(&src[i], addr, sizeof(addr));
		printf("%-40s %-10u %9.0f%%\n", addr, src[i].policy, src[i].value * 100);
	}
	printf("\n%-40s %-10s %10s\n", "REFUSED BY NGINX (escalating policies)", "POLICY", "PER s");
	for (i = 0; i < nr && i < top->rows; i++) {
		fc_addr_format(&ref[i], addr, sizeof(addr));
		printf("%-40s %-10u %10.1f\n", addr, ref[i].policy, ref[i].value);
	}
	printf("\n%-40s %-10s %10s %10s %10s %10s %s\n", "KEY (per-key nginx policies; \"value\" or hash)", "POLICY",
	       "USED", "PASSED", "DENIED", "CREDIT", "DEMAND");
	for (i = 0; i < top->nkeys; i++) {
		const struct fc_key_use *k = &top->keys[i];
		char key[48];

		if (k->has_value) { /* up to 36 bytes of it: a longer one ends in ... */
			size_t len = strlen(k->value), cut = fc_top_value_cut(k->value, 36);

			snprintf(key, sizeof(key), "\"%.*s%s", (int)cut, k->value,
				 cut < len || k->value_cut ? "\"..." : "\"");
		} else {
			snprintf(key, sizeof(key), "%016llx", (unsigned long long)k->tag);
		}
		/* A fleet key's credit now and its demand; - for a local policy's. */
		if (k->is_fleet)
			printf("%-40s %-10u %9.0f%% %10u %10u %10llu %s\n", key, k->policy, k->use * 100, k->passed,
			       k->denied, (unsigned long long)k->fleet.credit, k->fleet.demand ? "yes" : "no");
		else
			printf("%-40s %-10u %9.0f%% %10u %10u %10s %s\n", key, k->policy, k->use * 100, k->passed,
			       k->denied, "-", "-");
	}
	if (!top->tty)
		putchar('\n');
}

/* Sleeps delay seconds, or less if interrupted. */
static void fc_top_sleep(double delay)
{
	struct timespec ts = { (time_t)delay, (long)((delay - (double)(time_t)delay) * 1e9) };

	while (!fc_top_stop && nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

static int fc_top_run(const struct fc_ctx *ctx0, const struct fc_cmd *cmd, int argc, char **argv)
{
	struct fc_store_keep keep;
	struct fc_ctx kctx = *ctx0, *ctx = &kctx; /* one store connection for every refresh */
	struct fc_top top = { .ctx = ctx, .delay = 1.0, .tty = isatty(STDOUT_FILENO), .state_fd = -1 };
	struct sigaction sa = { .sa_handler = fc_top_signal };
	struct fc_top_sample prev, cur;
	struct fc_top_opt opt = { .delay = 1.0 };
	struct fc_err err;
	struct winsize ws;
	int rc = FC_EXIT_FAILURE;

	fc_cmd_parse(cmd, argc, argv, &opt, NULL);
	fc_need_privileges(cmd, "it reads the pinned BPF maps");
	fc_store_keep_init(&keep, ctx->db_path, !ctx->store_must_exist);
	kctx.keep = &keep;
	top.delay = opt.delay;
	top.json = opt.json;
	top.tty = top.tty && !top.json;
	if (opt.rows)
		top.rows = (size_t)opt.rows;
	else if (top.tty && !ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) && ws.ws_row >= 20)
		top.rows = (size_t)(ws.ws_row - 16) / 4; /* four tables and their headings */
	else
		top.rows = 10;
	top.src = calloc(FC_MAX_SOURCES, sizeof(*top.src));
	top.keys = calloc(top.rows, sizeof(*top.keys));
	if (!top.src || !top.keys) {
		fc_warn("top: out of memory");
		goto out;
	}
	/* No shm (no L7 policy yet): no refusals to show. */
	top.state_fd = fc_state_open(ctx->shm_path, &err);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	if (fc_top_read(&top, &prev, &err) < 0) {
		fc_warn("top: %s", err.msg);
		goto out;
	}
	/* opt.iterations: 0 runs until interrupted; n counts down to 1. */
	while (!fc_top_stop) {
		struct fc_top_policy *pol;
		struct fc_top_source *ref;
		size_t np = 0, ns, nr;

		fc_top_sleep(top.delay);
		if (fc_top_stop)
			break;
		if (fc_top_read(&top, &cur, &err) < 0) {
			fc_warn("top: %s", err.msg);
			fc_stats_free(&prev.a);
			goto out;
		}
		pol = fc_top_policies(&prev, &cur, &np);
		ns = fc_top_sources(&top, &err);
		ref = fc_top_refused(&top, prev.ring_head, cur.ring_head, cur.t - prev.t, &nr);
		if (fc_stats_busiest_keys(ctx, &cur.a, fc_utc_ns(), top.keys, top.rows, &top.nkeys, &err) < 0)
			fc_warn("top: %s", err.msg); /* the rest is still worth showing */
		if (top.json)
			fc_top_print_json(&top, &prev, &cur, pol, np, top.src, ns, ref, nr);
		else
			fc_top_print_text(&top, &prev, &cur, pol, np, top.src, ns, ref, nr);
		fflush(stdout);
		free(pol);
		free(ref);
		fc_stats_free(&prev.a);
		prev = cur;
		if (opt.iterations && !--opt.iterations)
			break;
	}
	fc_stats_free(&prev.a);
	rc = FC_EXIT_OK;
out:
	if (top.state_fd >= 0)
		close(top.state_fd);
	free(top.src);
	free(top.keys);
	fc_store_keep_fini(&keep);
	return rc;
}

const struct fc_cmd fc_cmd_top = {
	.name = "top",
	.min_args = 0,
	.max_args = 0,
	.summary = "Show the busiest policies and sources, refreshed every second.",
	.details = "Policies are ranked by what they passed, denied and delayed per second since the last\n"
		   "refresh (packets at XDP/TC, requests in nginx). Sources: the ip=* policy's buckets at\n"
		   "XDP/TC, one per unit (an IPv4 address and an IPv6 /64 by default, shown as 2001:db8::/64),\n"
		   "ranked by how much of their fullest tier they use now (100% = at the limit), and the\n"
		   "clients nginx refused for an escalating policy in the last interval.\n"
		   "Keys: those of per-key nginx policies (DIM=*; ip=*'s is the client's unit, one key\n"
		   "for the addresses of a /64), ranked the same way, each by its value (escaped, as\n"
		   "freqctl keys shows it) where its policy keeps values (--show-keys), else by its keyed\n"
		   "hash ('freqctl keys ID' lists one policy's). nginx: the requests refused per second\n"
		   "by a uid ban and by an address ban, and let through by an allow entry.\n"
		   "Keys and refusals are the nginx workers' account, read from a file they write.\n"
		   "On a terminal the screen is redrawn; in a pipe each refresh is printed after the last;\n"
		   "--json prints one object per refresh and line. Ctrl-C quits.",
	.opts = fc_top_opts,
	.run = fc_top_run,
};
