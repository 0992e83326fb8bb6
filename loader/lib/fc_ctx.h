/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Where one freqctl instance keeps its state: the store, the pin dir, the
 * shm, and this machine's name in a fleet. Every front end (the CLI, the
 * agent, the console) fills one from its options and hands it down.
 */
#ifndef FC_CTX_H
#define FC_CTX_H

#include <stdbool.h>
#include <stdint.h>

struct fc_store_keep;

struct fc_ctx {
	const char *db_path;
	const char *pin_dir;
	const char *shm_path;
	const char *shm_group; /* NULL: the default, if it exists */
	const char *node;      /* this machine's name in the nodes table */
	uint32_t shm_keys;     /* --shm-keys: the key table's entries; 0: keep what there is */
	/* Redis for fleet policies, as given (loader/lib/redis/fc_redis_conf.h
	 * parses them; the URLs and the prefix are checked already): NULL when
	 * not given. */
	const char *redis, *redis_password_file, *redis_prefix;
	/* Fleet policies (the agent's options): its sync interval, of which
	 * gcra's lease window is FC_FLEET_LEASE_ROUNDS (0: FC_FLEET_LEASE_NS_DEFAULT), and a test's
	 * offset of this node's clock for them (--clock-offset), given or not:
	 * a publisher not given one (the CLI) keeps the one the shm says. */
	uint64_t fleet_sync_ns;
	int64_t fleet_clock_ns;
	bool fleet_clock_given;
	bool store_must_exist; /* the agent: a vanished store is an outage, not an empty one */
	/* A store connection the caller keeps (the console, top), used by
	 * publishes and stats; NULL: each opens its own. */
	struct fc_store_keep *keep;
};

#endif /* FC_CTX_H */
