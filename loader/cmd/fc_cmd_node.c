// SPDX-License-Identifier: BSD-2-Clause
/* freqctl node set | del | list: the nodes of a fleet and their share of the rates. */
#include <stdlib.h>
#include <string.h>
#include <jansson.h>

#include "fc_cli.h"
#include "fc_clock.h"
#include "fc_publish.h"

static int fc_node_set(const struct fc_ctx *ctx, const struct fc_cmd *cmd, int argc, char **argv)
{
	struct fc_node n = { .weight = 1 };
	struct fc_publish pub;
	struct fc_err err;
	const char *name;

	fc_cmd_parse(cmd, argc, argv, NULL, NULL);
	name = argv[optind];
	if (!*name || strlen(name) > FC_NODE_NAME_MAX)
		fc_usage_error(cmd, "node name \"%.64s\": expected 1 to %d characters", name, FC_NODE_NAME_MAX);
	if (fc_weight_parse(argv[optind + 1], &n.weight, &err) < 0)
		fc_usage_error(cmd, "%s", err.msg);
	snprintf(n.name, sizeof(n.name), "%s", name);
	if (fc_publish_begin(&pub, ctx, &err) < 0)
		goto fail;
	if (fc_store_node_weigh(pub.st, &n, fc_unix_ms(), &err) < 0) {
		fc_publish_abort(&pub);
		goto fail;
	}
	if (fc_publish_commit(&pub, &err) < 0)
		goto fail;
	printf("node %s: weight %g%s\n", n.name, n.weight,
	       strcmp(n.name, ctx->node) ? "" : " (this node: its limits are republished)");
	return FC_EXIT_OK;
fail:
	fc_warn("node %s: %s%s", name, fc_priv_hint(), err.msg);
	return FC_EXIT_FAILURE;
}

static int fc_node_del(const struct fc_ctx *ctx, const struct fc_cmd *cmd, int argc, char **argv)
{
	struct fc_publish pub;
	struct fc_err err;
	const char *name;
	bool found;

	fc_cmd_parse(cmd, argc, argv, NULL, NULL);
	name = argv[optind];
	if (fc_publish_begin(&pub, ctx, &err) < 0)
		goto fail;
	if (fc_store_node_del(pub.st, name, fc_unix_ms(), &found, &err) < 0) {
		fc_publish_abort(&pub);
		goto fail;
	}
	if (!found) {
		fc_publish_abort(&pub);
		fc_warn("node %s: no such node", name);
		return FC_EXIT_FAILURE;
	}
	if (fc_publish_commit(&pub, &err) < 0)
		goto fail;
	printf("node %s: deleted (its weight is 1 again; fleet policies are split without it from the first window "
	       "that starts %d ms from now)\n", name, FC_FLEET_NODE_DELAY_MS);
	return FC_EXIT_OK;
fail:
	fc_warn("node %s: %s%s", name, fc_priv_hint(), err.msg);
	return FC_EXIT_FAILURE;
}

/* The fleet's number of node name among the open rows (0: not in the set). */
static uint32_t fc_fleet_no(const struct fc_fleet_node *f, size_t nf, const char *name)
{
	size_t i;

	for (i = 0; i < nf; i++)
		if (!strcmp(f[i].name, name))
			return f[i].no;
	return 0;
}

static void fc_node_row(json_t *arr, const char *name, double weight, uint32_t no, const char *here)
{
	char num[16] = "-";

	if (arr) {
		json_array_append_new(arr, json_pack("{s:s, s:f, s:o}", "name", name, "weight", weight, "fleet_no",
						     no ? json_integer(no) : json_null()));
		return;
	}
	if (no)
		snprintf(num, sizeof(num), "%u", no);
	printf("%-32s %-8g %s%s\n", name, weight, num, strcmp(name, here) ? "" : "  (this node)");
}

static int fc_node_list(const struct fc_ctx *ctx, const struct fc_cmd *cmd, int argc, char **argv)
{
	struct fc_fleet_node *f = NULL;
	struct fc_store *st = NULL;
	struct fc_node *v = NULL;
	struct fc_json_opt opt = { 0 };
	struct fc_err err;
	json_t *arr = NULL;
	size_t n = 0, nf = 0, i;
	int rc;

	fc_cmd_parse(cmd, argc, argv, &opt, NULL);
	rc = fc_store_open_read(ctx->db_path, &st, &err);
	/* The fleet's node set from its last changes on: its open rows. */
	if (rc < 0 || (rc == 0 && (fc_store_node_list(st, &v, &n, &err) < 0 ||
				   fc_store_fleet_nodes_at(st, INT64_MAX, &f, &nf, &err) < 0))) {
		fc_warn("node list: %s", err.msg);
		fc_store_close(st);
		free(v);
		return FC_EXIT_FAILURE;
	}
	fc_store_close(st);
	if (opt.json)
		arr = json_array();
	else if (n || nf)
		printf("%-32s %-8s %s\n", "NODE", "WEIGHT", "FLEET-NO");
	for (i = 0; i < n; i++)
		fc_node_row(arr, v[i].name, v[i].weight, fc_fleet_no(f, nf, v[i].name), ctx->node);
	/* In the set without a row of its own: an agent that joined at weight 1. */
	for (i = 0; i < nf; i++) {
		size_t j;

		for (j = 0; j < n && strcmp(v[j].name, f[i].name); j++)
			;
		if (j == n)
			fc_node_row(arr, f[i].name, (double)f[i].weight / FC_FLEET_WEIGHT_ONE, f[i].no, ctx->node);
	}
	free(v);
	free(f);
	return opt.json ? fc_json_print(arr) : FC_EXIT_OK;
}

const struct fc_cmd fc_cmd_node_set = {
	.name = "node set",
	.args = "NAME WEIGHT",
	.min_args = 2,
	.max_args = 2,
	.summary = "Set a node's share of every policy's rate: R is enforced there as R * WEIGHT.",
	.details = "WEIGHT is in (0, 1]; a scaled rate is at least 1 per its period. A node without a row has\n"
		   "weight 1. This machine is --node (default: its host name); an agent on another node\n"
		   "republishes that node's limits when it sees the change. A fleet policy (--fleet) is split\n"
		   "by WEIGHT / the sum of the weights, from the first window that starts 2 s after this.",
	.opts = fc_opts_none,
	.store = FC_STORE_MAKES, /* a fleet's first step on a node (doc/fleet.md) */
	.run = fc_node_set,
};

const struct fc_cmd fc_cmd_node_del = {
	.name = "node del",
	.args = "NAME",
	.min_args = 1,
	.max_args = 1,
	.summary = "Delete a node: its weight is 1 again, and fleet policies are split without it.",
	.details = "For a node that is gone: a fleet policy's shares are split over the nodes in the store, and a\n"
		   "node that is down keeps its share unused until it is deleted. The split changes from the\n"
		   "first window that starts 2 s after this (so that every node sees the change first). An\n"
		   "agent that runs as NAME puts it back in the fleet's nodes when it starts.",
	.opts = fc_opts_none,
	.run = fc_node_del,
};

const struct fc_cmd fc_cmd_node_list = {
	.name = "node list",
	.min_args = 0,
	.max_args = 0,
	.summary = "List the nodes, their weights and their numbers in the fleet's node set.",
	.opts = fc_opts_json,
	.run = fc_node_list,
};
