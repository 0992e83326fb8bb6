// SPDX-License-Identifier: BSD-2-Clause
/* freqctl attach | detach | status */
#include <stdlib.h>
#include <string.h>
#include <jansson.h>

#include "fc_attach.h"
#include "fc_cli.h"

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

static int fc_cmd_attach_run(const struct fc_ctx *ctx, const struct fc_cmd *cmd, int argc, char **argv)
{
	struct fc_attach_opt opt = { .mode = FC_MODE_XDP, .priority = FC_PRIO_UNSET };
	struct fc_attachment a;
	struct fc_maps m;
	struct fc_err err;
	int rc;

	fc_cmd_parse(cmd, argc, argv, &opt, NULL);
	if (opt.mode == FC_MODE_TC && opt.priority != FC_PRIO_UNSET)
		fc_usage_error(cmd, "--priority orders programs in libxdp's XDP dispatcher; --mode tc has none");
	fc_need_privileges(cmd, "it loads BPF programs and attaches them to an interface");
	if (opt.priority == FC_PRIO_UNSET)
		opt.priority = FC_XDP_PRIO_DEFAULT;
	if (fc_maps_open(ctx->pin_dir, &m, &err) < 0) {
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
	return FC_EXIT_OK;
}

static int fc_cmd_detach_run(const struct fc_ctx *ctx, const struct fc_cmd *cmd, int argc, char **argv)
{
	struct fc_attachment a;
	struct fc_maps m;
	struct fc_err err;
	int rc;

	fc_cmd_parse(cmd, argc, argv, NULL, NULL);
	fc_need_privileges(cmd, "it detaches BPF programs from an interface");
	/* Not shape-checked: the way out of another version's pins. */
	if (fc_maps_open_config(ctx->pin_dir, &m, &err) < 0) {
		fc_warn("detach %s: %s", argv[optind], err.msg);
		return FC_EXIT_FAILURE;
	}
	rc = fc_detach(&m, argv[optind], &a, &err);
	fc_maps_close(&m);
	if (rc < 0) {
		fc_warn("detach: %s", err.msg);
		return FC_EXIT_FAILURE;
	}
	printf("detached from %s (%s mode, prog id %u)\n", a.ifname, fc_mode_name(a.mode), a.prog_id);
	return FC_EXIT_OK;
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

static json_t *fc_status_json(const char *pin_dir, const struct fc_attachment *v, size_t n,
			      const struct fc_config *cfg, char (*notes)[FC_ERR_LEN], size_t nnotes)
{
	struct fc_status_map maps[8];
	json_t *ifs = json_array(), *mj = json_object(), *warn = json_array();
	size_t i, nm = fc_status_maps(cfg, maps);

	for (i = 0; warn && i < nnotes; i++)
		json_array_append_new(warn, json_string(notes[i]));
	for (i = 0; ifs && i < n; i++)
		json_array_append_new(ifs, json_pack("{s:s, s:i, s:s, s:I, s:o}", "interface", v[i].ifname, "ifindex",
						      v[i].ifindex, "mode", fc_mode_name(v[i].mode), "prog_id",
						      (json_int_t)v[i].prog_id, "dispatcher",
						      fc_dispatcher_json(&v[i])));
	for (i = 0; mj && i < nm; i++)
		json_object_set_new(mj, maps[i].name,
				    json_pack("{s:I, s:I}", "entries", (json_int_t)maps[i].entries, "max_entries",
					      (json_int_t)maps[i].capacity));
	if (mj && json_object_get(mj, FC_MAP_NAME(pfx6)))
		json_object_set_new(json_object_get(mj, FC_MAP_NAME(pfx6)), "search_markers",
				    json_integer(cfg->n_marks6));
	return json_pack("{s:s, s:o, s:o, s:o}", "pin_dir", pin_dir, "attached", ifs, "maps", mj, "warnings", warn);
}

static int fc_cmd_status_run(const struct fc_ctx *ctx, const struct fc_cmd *cmd, int argc, char **argv)
{
	struct fc_attachment *v = NULL;
	struct fc_status_map maps[8];
	struct fc_config cfg = { 0 };
	struct fc_maps m;
	struct fc_err err;
	struct fc_json_opt opt = { 0 };
	char (*notes)[FC_ERR_LEN] = NULL;
	size_t n = 0, nm, i, j, nnotes = 0;
	int c;

	fc_cmd_parse(cmd, argc, argv, &opt, NULL);
	/* What the store holds that is published but worth a word (a store
	 * that can not be read has none to give). */
	fc_policy_notes(ctx, &notes, &nnotes);
	/* Without the privileges: what can be read, and what reading the rest needs. */
	if (!fc_privileged()) {
		if (!opt.json)
			printf("pin dir: %s\n", ctx->pin_dir);
		for (i = 0; !opt.json && i < nnotes; i++)
			printf("warning: %s\n", notes[i]);
		free(notes);
		fc_need_privileges(cmd, "reading what is attached and published");
	}
	/* A reader: nothing published yet is none attached, nothing made. */
	c = fc_maps_open_existing(ctx->pin_dir, &m, &err);
	if (c < 0 || (c == 0 && (fc_config_read(&m, &cfg, &err) < 0 || fc_attachments(&m, &v, &n, &err) < 0))) {
		fc_warn("status: %s", err.msg);
		fc_maps_close(&m);
		free(notes);
		return FC_EXIT_FAILURE;
	}
	fc_maps_close(&m);
	if (opt.json) {
		c = fc_json_print(fc_status_json(ctx->pin_dir, v, n, &cfg, notes, nnotes));
		free(v);
		free(notes);
		return c;
	}
	printf("pin dir: %s\n", ctx->pin_dir);
	if (!n)
		printf("attached: none (in this network namespace)\n");
	for (i = 0; i < n; i++) {
		printf("attached: %-16s ifindex %-4d %-12s prog id %u", v[i].ifname, v[i].ifindex,
		       fc_mode_name(v[i].mode), v[i].prog_id);
		if (v[i].dispatched)
			printf(" priority %u (libxdp dispatcher)", v[i].prio);
		printf("\n");
		for (j = 0; j < v[i].n_peers; j++)
			printf("  beside: %-16s prog id %-6u priority %u\n", v[i].peers[j].name, v[i].peers[j].id,
			       v[i].peers[j].prio);
	}
	nm = fc_status_maps(&cfg, maps);
	printf("published:\n");
	for (i = 0; i < nm; i++)
		printf("  %-12s %8u of %-8ld %s\n", maps[i].name, maps[i].entries, maps[i].capacity, maps[i].what);
	if (cfg.n_marks6)
		printf("  (%u of the entries of %s are search markers)\n", cfg.n_marks6, FC_MAP_NAME(pfx6));
	for (i = 0; i < nnotes; i++)
		printf("warning: %s\n", notes[i]);
	free(v);
	free(notes);
	return FC_EXIT_OK;
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
	.run = fc_cmd_attach_run,
};

const struct fc_cmd fc_cmd_detach = {
	.name = "detach",
	.args = "IFACE",
	.min_args = 1,
	.max_args = 1,
	.summary = "Detach freqctl from IFACE, in whichever mode it is attached.",
	.details = "The bans stay in the store and the pinned maps, the counters in theirs. In tc mode only\n"
		   "freqctl's filter is removed; the clsact qdisc stays, as other filters may use it. In\n"
		   "libxdp's dispatcher only freqctl's program leaves; the others keep running.",
	.opts = fc_opts_none,
	.run = fc_cmd_detach_run,
};

const struct fc_cmd fc_cmd_status = {
	.name = "status",
	.min_args = 0,
	.max_args = 0,
	.summary = "Show where freqctl is attached and how full its maps are.",
	.details = "Lists the interfaces of this network namespace that run this pin dir's programs, with\n"
		   "mode and program id (and, in libxdp's dispatcher, freqctl's priority and the other\n"
		   "programs it runs there: name, id, priority), then the entries published per map, and\n"
		   "warnings about what the store holds (a policy of ip=0.0.0.0/0: one bucket for every source).",
	.opts = fc_opts_json,
	.run = fc_cmd_status_run,
};
