// SPDX-License-Identifier: BSD-2-Clause
/*
 * The fleet's look at Redis's durability (see fc_fleet_durable.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fc_fleet_durable.h"

#define FC_DURABLE_NAMED 4 /* primaries named in one line */

/* The number of INFO's "name:N" line; -1 when there is none. */
static long fc_info_num(const char *text, const char *name)
{
	size_t n = strlen(name);
	const char *p = text;

	for (; p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
		if (!strncmp(p, name, n) && p[n] == ':' && p[n + 1] >= '0' && p[n + 1] <= '9')
			return strtol(p + n + 1, NULL, 10);
	return -1;
}

/* A standalone server: INFO persistence and replication. why is empty
 * when it keeps what it acknowledged (or when INFO is refused: nothing
 * known); -1 when a reply lacks what every Redis says. */
static int fc_durable_standalone(struct fc_redis *r, const char *name, char *why, size_t len)
{
	static const char *const persistence[] = { "INFO", "persistence" }, *const replication[] = { "INFO",
												     "replication" };
	struct fc_redis_cmd cmd[2] = { { .argc = 2, .argv = persistence, .want = FC_REDIS_WANT_STR(FC_REDIS_STR_MAX) },
				       { .argc = 2, .argv = replication, .want = FC_REDIS_WANT_STR(FC_REDIS_STR_MAX) } };
	struct fc_err err;
	long aof = -1, replicas = -1;
	int rc = 0;

	why[0] = '\0';
	fc_redis_exec(r, cmd, 2, &err);
	if (cmd[0].status == FC_REDIS_OK && cmd[0].reply->type == FC_REDIS_STR)
		aof = fc_info_num(cmd[0].reply->str, "aof_enabled");
	if (cmd[1].status == FC_REDIS_OK && cmd[1].reply->type == FC_REDIS_STR)
		replicas = fc_info_num(cmd[1].reply->str, "connected_slaves");
	if ((cmd[0].status == FC_REDIS_OK && aof < 0) || (cmd[1].status == FC_REDIS_OK && replicas < 0))
		rc = -1;
	else if (!aof && !replicas)
		snprintf(why, len,
			 "fleet: Redis %s has no replica and no AOF (appendonly no): a restart loses what it "
			 "acknowledged since its last snapshot, and the nodes can over-grant what it lost; set "
			 "appendonly yes and appendfsync always, or give it a replica (doc/fleet.md)",
			 name);
	fc_redis_cmds_release(cmd, 2);
	return rc;
}

/* A Cluster: its primaries that the slot table gives no replica. */
static void fc_durable_cluster(const struct fc_redis_node_info *info, size_t n, char *why, size_t len)
{
	size_t i, alone = 0, named = 0;
	FILE *m;

	why[0] = '\0';
	for (i = 0; i < n; i++)
		alone += info[i].primary && info[i].slots && !info[i].replicas;
	if (!alone || !(m = fmemopen(why, len, "w")))
		return;
	fprintf(m, "fleet: Redis Cluster primar%s ", alone > 1 ? "ies" : "y");
	for (i = 0; i < n && named < FC_DURABLE_NAMED; i++)
		if (info[i].primary && info[i].slots && !info[i].replicas)
			fprintf(m, "%s%s", named++ ? ", " : "", info[i].name);
	fprintf(m, "%s without a replica: when one fails, its slots' records are lost and the nodes can "
		   "over-grant what it lost; give every primary a replica (doc/fleet.md)",
		alone > named ? " and more" : "");
	fclose(m);
	why[len - 1] = '\0'; /* a full buffer is not terminated */
}

unsigned fc_fleet_durable_check(struct fc_fleet_durable *d, struct fc_redis *r)
{
	struct fc_redis_node_info info[64];
	struct fc_redis_stats st;
	char why[sizeof(d->warned)];
	size_t n;
	unsigned bad = 0;

	fc_redis_stats(r, &st);
	if (d->checked && st.connects + st.refreshes == d->seen)
		return 0;
	n = fc_redis_nodes(r, info, 64);
	n = n < 64 ? n : 64;
	if (fc_redis_mode(r) == FC_REDIS_CLUSTER)
		fc_durable_cluster(info, n, why, sizeof(why));
	else if (fc_redis_mode(r) == FC_REDIS_STANDALONE && n)
		bad = fc_durable_standalone(r, info[0].name, why, sizeof(why)) < 0;
	else
		return 0; /* not reached yet */
	/* After INFO: a connection it made is not a new one to check. */
	fc_redis_stats(r, &st);
	d->seen = st.connects + st.refreshes;
	d->checked = true;
	if (why[0] && strcmp(why, d->warned))
		fc_warn("%s", why);
	snprintf(d->warned, sizeof(d->warned), "%s", why);
	return bad;
}
