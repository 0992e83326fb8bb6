// SPDX-License-Identifier: BSD-2-Clause
/* freqctl attach | detach | status */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>

#include "fc_attach.h"
#include "fc_cli.h"
#include "fc_pins.h"
#include "fc_publish.h"
#include "fc_settings.h"
#include "fc_shm_write.h"

struct fc_attach_opt {
	int mode; /* enum fc_mode */
	uint32_t priority;
};

/* Above the option's range: --priority was not given. */
#define FC_PRIO_UNSET UINT32_MAX
#define FC_STR_(x)    #x
#define FC_STR(x)     FC_STR_(x)

static const struct fc_opt fc_attach_opts[] = {
	FC_OPTION("mode", 'm', FC_OPT_ENUM, struct fc_attach_opt, mode, .names = fc_mode_names, .arg = "MODE",
		  .help = "xdp (native, the default), xdp-generic, or tc (TC ingress)"),
	FC_OPTION("priority", 'p', FC_OPT_U32, struct fc_attach_opt, priority, .max = FC_PRIO_UNSET - 1, .arg = "N",
		  .help = "run priority in libxdp's dispatcher, lower runs first (xdp modes; default "
			  FC_STR(FC_XDP_PRIO_DEFAULT) ", before xdp-filter's 10 and libxdp's default 50)"),
	FC_OPT_END,
};

/* The pins gone from under a program attached elsewhere: a full publish
 * pins its maps again (and says so) before this one loads on them, so that
 * every interface reads the same maps. Failing that, this one is attached
 * to the maps pinned now, as asked, and the next publish says the rest. */
static int fc_attach_repin(const struct fc_ctx *ctx, struct fc_maps *m, struct fc_err *err)
{
	struct fc_publish pub;
	struct fc_pin_ref r;
	struct fc_err why;

	fc_pin_ref_init(&r, ctx->pin_dir, m);
	if (!fc_pins_suspect(&r))
		return 0;
	fc_maps_close(m);
	if (fc_publish_begin(&pub, ctx, &why) < 0 || (pub.full = true, fc_publish_commit(&pub, &why) < 0))
		fc_warn("attach: %s", why.msg);
	return fc_maps_open(ctx->pin_dir, m, err);
}

/* Maps made by this attach (none was published here: a first attach, one
 * after a reboot or a detach --unpublish) hold nothing of the store yet: a
 * full publish fills them, so that an attached program enforces what the
 * store says from its first packet. */
static void fc_attach_publish(const struct fc_ctx *ctx)
{
	struct fc_publish pub;
	struct fc_err why;

	if (fc_publish_begin(&pub, ctx, &why) < 0 || (pub.full = true, fc_publish_commit(&pub, &why) < 0))
		fc_warn("attach: the store is not published yet ('freqctl sync' publishes it): %s", why.msg);
	else
		printf("published the store to the new maps in %s\n", ctx->pin_dir);
}

static int fc_cmd_attach_run(const struct fc_ctx *ctx, const struct fc_cmd *cmd, int argc, char **argv)
{
	struct fc_attach_opt opt = { .mode = FC_MODE_XDP, .priority = FC_PRIO_UNSET };
	struct fc_attachment a;
	struct fc_maps m;
	struct fc_err err;
	bool fresh;
	int rc;

	fc_cmd_parse(cmd, argc, argv, &opt, NULL);
	if (opt.mode == FC_MODE_TC && opt.priority != FC_PRIO_UNSET)
		fc_usage_error(cmd, "--priority orders programs in libxdp's XDP dispatcher; --mode tc has none");
	fc_need_privileges(cmd, "it loads BPF programs and attaches them to an interface");
	if (opt.priority == FC_PRIO_UNSET)
		opt.priority = FC_XDP_PRIO_DEFAULT;
	fresh = fc_maps_open_config(ctx->pin_dir, &m, &err) < 0;
	if (!fresh)
		fc_maps_close(&m);
	if (fc_maps_open(ctx->pin_dir, &m, &err) < 0 || fc_attach_repin(ctx, &m, &err) < 0) {
		fc_warn("attach %s: %s", argv[optind], err.msg);
		return FC_EXIT_FAILURE;
	}
	rc = fc_attach(ctx->pin_dir, &m, argv[optind], (enum fc_mode)opt.mode, opt.priority, &a, &err);
	fc_maps_close(&m);
	if (rc < 0) {
		fc_warn("attach: %s", err.msg);
		return FC_EXIT_FAILURE;
	}
	printf("attached %s to %s (%s mode, prog id %u", a.mode == FC_MODE_TC ? FC_PROG_TC : FC_PROG_XDP, a.ifname,
	       fc_mode_name(a.mode), a.prog_id);
	if (a.dispatched)
		printf(", priority %u in libxdp's dispatcher beside %zu other program%s", a.prio, a.n_peers,
		       a.n_peers == 1 ? "" : "s");
	printf(")\n");
	if (fresh)
		fc_attach_publish(ctx);
	return FC_EXIT_OK;
}

struct fc_detach_opt {
	bool all, unpublish;
};

static const struct fc_opt fc_detach_opts[] = {
	FC_OPTION("all", 'a', FC_OPT_FLAG, struct fc_detach_opt, all,
		  .help = "from every interface of this network namespace that runs this pin dir's programs"),
	FC_OPTION("unpublish", 0, FC_OPT_FLAG, struct fc_detach_opt, unpublish,
		  .help = "then remove what is published here: the pinned maps and nginx's shm files"),
	FC_OPT_END,
};

static int fc_detach_one(const struct fc_ctx *ctx, const struct fc_maps *m, const char *ifname)
{
	struct fc_attachment a;
	struct fc_err err;

	if (fc_detach(ctx->pin_dir, m, ifname, &a, &err) < 0) {
		fc_warn("detach: %s", err.msg);
		return FC_EXIT_FAILURE;
	}
	printf("detached from %s (%s mode, prog id %u)\n", a.ifname, fc_mode_name(a.mode), a.prog_id);
	return FC_EXIT_OK;
}

/* --all: from each interface that runs the pin dir's programs. */
static int fc_detach_all(const struct fc_ctx *ctx, const struct fc_maps *m)
{
	struct fc_attachment *v = NULL;
	struct fc_pin_ref r;
	struct fc_err err;
	size_t n = 0, i;
	int rc = FC_EXIT_OK;

	fc_pin_ref_init(&r, ctx->pin_dir, m);
	if (fc_attachments(&r, &v, &n, &err) < 0) {
		fc_warn("detach: %s", err.msg);
		return FC_EXIT_FAILURE;
	}
	if (!n)
		printf("freqctl (pin dir %s) is attached to no interface in this network namespace\n", ctx->pin_dir);
	for (i = 0; i < n; i++)
		if (fc_detach_one(ctx, m, v[i].ifname) != FC_EXIT_OK)
			rc = FC_EXIT_FAILURE;
	free(v);
	return rc;
}

static int fc_cmd_detach_run(const struct fc_ctx *ctx, const struct fc_cmd *cmd, int argc, char **argv)
{
	struct fc_detach_opt opt = { 0 };
	struct fc_maps m;
	struct fc_err err;
	int first, rc;

	first = fc_cmd_parse(cmd, argc, argv, &opt, NULL);
	if (opt.all == (first < argc))
		fc_usage_error(cmd,
			       opt.all ? "--all or IFACE, not both" : "missing argument: expected IFACE, or --all");
	fc_need_privileges(cmd, "it detaches BPF programs from an interface");
	/* Not shape-checked: the way out of another version's pins. None
	 * pinned (the dir removed, bpffs mounted again): the program is found
	 * by the pin dir it was loaded for. */
	if (fc_maps_open_config(ctx->pin_dir, &m, &err) < 0 && errno != ENOENT) {
		fc_warn("detach: %s", err.msg);
		return FC_EXIT_FAILURE;
	}
	rc = opt.all ? fc_detach_all(ctx, &m) : fc_detach_one(ctx, &m, argv[first]);
	if (rc == FC_EXIT_OK && opt.unpublish) {
		if (fc_maps_unpin(ctx->pin_dir, &m, &err) < 0 || fc_shm_unpublish(ctx->shm_path, &err) < 0) {
			fc_warn("detach --unpublish: %s", err.msg);
			rc = FC_EXIT_FAILURE;
		} else {
			printf("unpublished: the maps of pin dir %s and the shm %s are gone (nginx passes every "
			       "request "
			       "within a second); the store keeps the bans and policies ('freqctl sync' publishes them "
			       "anew)\n",
			       ctx->pin_dir, ctx->shm_path);
		}
	}
	fc_maps_close(&m);
	return rc;
}

/* libxdp's dispatcher as freqctl shares it, or null when attached directly. */
static json_t *fc_dispatcher_json(const struct fc_attachment *a)
{
	json_t *others;
	size_t i;

	if (!a->dispatched)
		return json_null();
	others = json_array();
	for (i = 0; others && i < a->n_peers; i++)
		json_array_append_new(others, json_pack("{s:s, s:I, s:I}", "name", a->peers[i].name, "prog_id",
							(json_int_t)a->peers[i].id, "priority",
							(json_int_t)a->peers[i].prio));
	return json_pack("{s:I, s:o}", "priority", (json_int_t)a->prio, "others", others);
}

/* What each map holds, as status prints it: map, entries, capacity, what. */
struct fc_status_map {
	const char *name;
	__u32 entries;
	long capacity;
	const char *what;
};

static size_t fc_status_maps(const struct fc_config *cfg, struct fc_status_map *v)
{
	size_t n = 0;

	v[n++] = (struct fc_status_map){ FC_MAP_NAME(exact4), cfg->n_exact4, FC_MAX_RULES, "IPv4 exact addresses" };
	v[n++] = (struct fc_status_map){ FC_MAP_NAME(exact6), cfg->n_exact6, FC_MAX_RULES, "IPv6 exact addresses" };
	v[n++] = (struct fc_status_map){ FC_MAP_NAME(top4), cfg->n_top4, FC_TOP4_SLOTS,
					 "IPv4 /16s under or holding prefixes or exact addresses" };
	v[n++] = (struct fc_status_map){ FC_MAP_NAME(pfx4), cfg->n_pfx4, FC_MAX_RULES, "IPv4 prefixes" };
	v[n++] = (struct fc_status_map){ FC_MAP_NAME(pfx6), cfg->n_pfx6, FC_MAX_RULES,
					 "IPv6 prefixes and their search markers" };
	v[n++] = (struct fc_status_map){ FC_MAP_NAME(policies), cfg->n_policies, FC_MAX_POLICIES, "XDP/TC policies" };
	return n;
}

/* The maps a program reads that are not the pinned ones, as JSON: [{"map",
 * "reads", "pinned": id or null}]. */
static json_t *fc_stale_json(const struct fc_attachment *a, const struct fc_pin_ref *r)
{
	json_t *arr = json_array();
	int k;

	for (k = 0; arr && k < FC_NMAPS; k++)
		if (a->map[k] && a->map[k] != r->pinned[k])
			json_array_append_new(arr, json_pack("{s:s, s:I, s:o}", "map", fc_map_names[k], "reads",
							     (json_int_t)a->map[k], "pinned",
							     r->pinned[k] ? json_integer(r->pinned[k]) : json_null()));
	return arr;
}

/* What status saw: the attachments, the pins, the shm's mark. */
struct fc_status {
	struct fc_attachment *v;
	size_t n;
	struct fc_pin_ref r;
	int missing; /* maps of FC_MAPS not pinned */
	struct fc_config cfg;
	uint64_t shm_store, shm_seq; /* the shm's mark: 0, 0 if none of ours is there */
	bool shm_there;
	/* What the store holds that is published but worth a word. */
	char (*notes)[FC_ERR_LEN];
	size_t nnotes;
};

static json_t *fc_status_json(const struct fc_ctx *ctx, const struct fc_status *st)
{
	struct fc_status_map maps[8];
	json_t *ifs = json_array(), *mj = json_object(), *missing = json_array(), *warn = json_array(), *o;
	size_t i, nm = fc_status_maps(&st->cfg, maps);
	int k;

	for (i = 0; warn && i < st->nnotes; i++)
		json_array_append_new(warn, json_string(st->notes[i]));

	for (i = 0; ifs && i < st->n; i++) {
		const struct fc_attachment *a = &st->v[i];

		o = json_pack("{s:s, s:i, s:s, s:I, s:o, s:b}", "interface", a->ifname, "ifindex", a->ifindex, "mode",
			      fc_mode_name(a->mode), "prog_id", (json_int_t)a->prog_id, "dispatcher",
			      fc_dispatcher_json(a), "maps_pinned", !a->stale);
		if (o && a->stale)
			json_object_set_new(o, "unpinned_maps", fc_stale_json(a, &st->r));
		json_array_append_new(ifs, o);
	}
	for (k = 0; missing && k < FC_NMAPS; k++)
		if (!st->r.pinned[k])
			json_array_append_new(missing, json_string(fc_map_names[k]));
	for (i = 0; mj && !st->missing && i < nm; i++)
		json_object_set_new(mj, maps[i].name,
				    json_pack("{s:I, s:I}", "entries", (json_int_t)maps[i].entries, "max_entries",
					      (json_int_t)maps[i].capacity));
	if (mj && json_object_get(mj, FC_MAP_NAME(pfx6)))
		json_object_set_new(json_object_get(mj, FC_MAP_NAME(pfx6)), "search_markers",
				    json_integer(st->cfg.n_marks6));
	return json_pack("{s:s, s:o, s:b, s:o, s:o, s:{s:s, s:b, s:I, s:I}, s:b, s:o, s:o}", "pin_dir", ctx->pin_dir,
			 "attached", ifs, "published", st->missing == 0, "missing_maps", missing, "maps", mj, "shm",
			 "path", ctx->shm_path, "published", st->shm_there, "store_id", (json_int_t)st->shm_store,
			 "seq", (json_int_t)st->shm_seq, "store_exists", !fc_store_missing(ctx), "warnings", warn,
			 "configuration", fc_settings_json(ctx));
}

static void fc_status_attached(const struct fc_status *st)
{
	const struct fc_attachment *v = st->v;
	size_t i, j;
	int k;

	if (!st->n)
		printf("attached: none (in this network namespace)\n");
	for (i = 0; i < st->n; i++) {
		printf("attached: %-16s ifindex %-4d %-12s prog id %u", v[i].ifname, v[i].ifindex,
		       fc_mode_name(v[i].mode), v[i].prog_id);
		if (v[i].dispatched)
			printf(" priority %u (libxdp dispatcher)", v[i].prio);
		printf("\n");
		for (j = 0; j < v[i].n_peers; j++)
			printf("  beside: %-16s prog id %-6u priority %u\n", v[i].peers[j].name, v[i].peers[j].id,
			       v[i].peers[j].prio);
		if (!v[i].stale)
			continue;
		/* What is published does not reach it until the pins are its maps again. */
		printf("  NOT ON THE PINNED MAPS:");
		if (st->missing == FC_NMAPS)
			printf(" none of its maps is pinned");
		for (k = 0; st->missing < FC_NMAPS && k < FC_NMAPS; k++)
			if (v[i].map[k] && v[i].map[k] != st->r.pinned[k])
				printf(" it reads %s id %u, pinned is %s%.0u;", fc_map_names[k], v[i].map[k],
				       st->r.pinned[k] ? "id " : "none", st->r.pinned[k]);
		printf("\n  what freqctl publishes does not reach it until the next publish ('freqctl sync', any\n"
		       "  change) pins its maps again\n");
	}
}

static void fc_status_print(const struct fc_ctx *ctx, const struct fc_status *st)
{
	struct fc_status_map maps[8];
	size_t i, nm;
	int k;

	printf("pin dir: %s\n", ctx->pin_dir);
	fc_status_attached(st);
	if (st->missing == FC_NMAPS) {
		printf("published: nothing (no map is pinned in %s)\n", ctx->pin_dir);
	} else if (st->missing) {
		printf("published: maps missing from %s:", ctx->pin_dir);
		for (k = 0; k < FC_NMAPS; k++)
			if (!st->r.pinned[k])
				printf(" %s", fc_map_names[k]);
		printf(" (the next publish makes them, or pins those of the attached program)\n");
	} else {
		nm = fc_status_maps(&st->cfg, maps);
		printf("published:\n");
		for (i = 0; i < nm; i++)
			printf("  %-12s %8u of %-8ld %s\n", maps[i].name, maps[i].entries, maps[i].capacity,
			       maps[i].what);
		if (st->cfg.n_marks6)
			printf("  (%u of the entries of %s are search markers)\n", st->cfg.n_marks6, FC_MAP_NAME(pfx6));
	}
	if (st->shm_there)
		printf("nginx shm: %s (store %016llx, change %llu)\n", ctx->shm_path, (unsigned long long)st->shm_store,
		       (unsigned long long)st->shm_seq);
	else
		printf("nginx shm: %s: nothing published there\n", ctx->shm_path);
	/* Not a refusal: status shows what there is, a store too. */
	if (fc_store_missing(ctx))
		printf("store: %s: no store there yet (attach, ban add or import, allow add, policy add or set, "
		       "import or node set makes one)\n",
		       ctx->db_path);
	for (i = 0; i < st->nnotes; i++)
		printf("warning: %s\n", st->notes[i]);
	fc_settings_print(ctx);
}

static int fc_cmd_status_run(const struct fc_ctx *ctx, const struct fc_cmd *cmd, int argc, char **argv)
{
	struct fc_status st = { 0 };
	struct fc_json_opt opt = { 0 };
	struct fc_maps m;
	struct fc_err err;
	int rc = FC_EXIT_FAILURE;
	size_t i;

	fc_cmd_parse(cmd, argc, argv, &opt, NULL);
	/* What the store holds that is published but worth a word (a store
	 * that can not be read has none to give). */
	fc_policy_notes(ctx, &st.notes, &st.nnotes);
	/* Without the privileges: what can be read, and what reading the rest needs. */
	if (!fc_privileged()) {
		if (!opt.json)
			printf("pin dir: %s\n", ctx->pin_dir);
		for (i = 0; !opt.json && i < st.nnotes; i++)
			printf("warning: %s\n", st.notes[i]);
		free(st.notes);
		fc_need_privileges(cmd, "reading what is attached and published");
	}
	/* A reader: it makes nothing. The pins there are, and the programs
	 * attached for this pin dir, whether they read those or not. */
	st.missing = fc_maps_open_pinned(ctx->pin_dir, &m, &err);
	if (st.missing >= 0)
		fc_pin_ref_init(&st.r, ctx->pin_dir, &m);
	if (st.missing < 0 || (!st.missing && fc_config_read(&m, &st.cfg, &err) < 0) ||
	    fc_attachments(&st.r, &st.v, &st.n, &err) < 0) {
		fc_warn("status: %s", err.msg);
		goto out;
	}
	st.shm_there = fc_shm_published(ctx->shm_path, &st.shm_store, &st.shm_seq);
	rc = opt.json ? fc_json_print(fc_status_json(ctx, &st)) : (fc_status_print(ctx, &st), FC_EXIT_OK);
out:
	fc_maps_close(&m);
	free(st.v);
	free(st.notes);
	return rc;
}

const struct fc_cmd fc_cmd_attach = {
	.name = "attach",
	.args = "IFACE",
	.min_args = 1,
	.max_args = 1,
	.summary = "Attach the packet path to IFACE: banned sources are dropped, the rest passes.",
	.details = "Modes: xdp runs in the driver, before the kernel allocates anything for the packet;\n"
		   "xdp-generic runs the same program later, on any interface; tc attaches to a clsact\n"
		   "ingress qdisc (filter handle 0xfc, priority 1). Attaching again in the same mode\n"
		   "atomically replaces freqctl's program; another program on the hook is never replaced.\n"
		   "In the xdp modes freqctl goes through libxdp's dispatcher (as xdp-loader and\n"
		   "xdp-filter do), so it shares the hook with other libxdp programs; it runs before\n"
		   "those with a higher --priority, and passes on what it lets through. Attaching again\n"
		   "adds the new program before removing the old, so nothing goes unfiltered. Where the\n"
		   "dispatcher cannot load (a driver, a kernel without program extensions; -v says why)\n"
		   "and the hook is free, freqctl takes the hook for itself, alone.\n"
		   "The bans and counters live in the pinned maps, so they outlast detach and attach.",
	.opts = fc_attach_opts,
	.store = FC_STORE_MAKES,
	.run = fc_cmd_attach_run,
};

const struct fc_cmd fc_cmd_detach = {
	.name = "detach",
	.args = "IFACE | --all",
	.min_args = 0,
	.max_args = 1,
	.summary = "Detach freqctl from IFACE (or every interface), in whichever mode it is attached.",
	.details = "The bans stay in the store and the pinned maps, the counters in theirs. In tc mode only\n"
		   "freqctl's filter is removed; the clsact qdisc stays, as other filters may use it. In\n"
		   "libxdp's dispatcher only freqctl's program leaves; the others keep running.\n"
		   "--unpublish then removes what freqctl published on this machine, as removing the\n"
		   "package does: the pinned maps (their counters with them) and nginx's shm files, which\n"
		   "nginx's workers find gone within a second, and then let every request pass. It refuses\n"
		   "while an interface of this network namespace still runs the pin dir's programs.",
	.opts = fc_detach_opts,
	.store = FC_STORE_UNUSED,
	.run = fc_cmd_detach_run,
};

const struct fc_cmd fc_cmd_status = {
	.name = "status",
	.min_args = 0,
	.max_args = 0,
	.summary = "Show where freqctl is attached and how full its maps are.",
	.details = "Lists the interfaces of this network namespace that run this pin dir's programs, with\n"
		   "mode and program id (and, in libxdp's dispatcher, freqctl's priority and the other\n"
		   "programs it runs there: name, id, priority) and whether each reads the maps pinned\n"
		   "in the pin dir, then the entries published per map (or which maps are not pinned),\n"
		   "whether a shm is published at --shm, warnings about what the store holds (a policy of\n"
		   "ip=0.0.0.0/0: one bucket for every source), and each setting with where it came from\n"
		   "(option, environment, the configuration file's line, or default).",
	.opts = fc_opts_json,
	.store = FC_STORE_UNUSED,
	.run = fc_cmd_status_run,
};
