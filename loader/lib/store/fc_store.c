// SPDX-License-Identifier: BSD-2-Clause
/*
 * The store's logic, whichever database holds it (fc_db.h): slots and epochs
 * of policies, ban rows, nodes. Rows are read back through the CLI's own
 * parsers, so a row edited by hand into something invalid is reported, never
 * published.
 */
#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "fc_db.h"
#include "fc_store.h"

enum fc_stmt_id {
	FC_SQL_BAN_GET,
	FC_SQL_BAN_PUT,
	FC_SQL_BAN_EXTEND,
	FC_SQL_BANS_PUT,
	FC_SQL_BAN_DEL,
	FC_SQL_BAN_PURGE,
	FC_SQL_BAN_LIST,
	FC_SQL_BAN_COUNT,
	FC_SQL_POL_GET,
	FC_SQL_POL_SLOT,
	FC_SQL_POL_LIST,
	FC_SQL_POL_PUT,
	FC_SQL_POL_DEL,
	FC_SQL_POL_CONFLICT,
	FC_SQL_POL_STAR_CONFLICT,
	FC_SQL_POL_FREE_SLOT,
	FC_SQL_POL_NEXT_SLOT,
	FC_SQL_POL_FREE,
	FC_SQL_UBAN_PUT,
	FC_SQL_UBAN_GET,
	FC_SQL_UBAN_DEL,
	FC_SQL_UBAN_PURGE,
	FC_SQL_UBAN_LIST,
	FC_SQL_EPOCH_NEXT,
	FC_SQL_BANS_CLEAR,
	FC_SQL_NODE_GET,
	FC_SQL_NODE_PUT,
	FC_SQL_NODE_LIST,
	FC_SQL_NODES_CLEAR,
	FC_SQL_NODE_DEL,
	FC_SQL_UBANS_CLEAR,
	FC_SQL_LOG_HEAD,
	FC_SQL_LOG_PRUNE,
	FC_SQL_LOG_PRUNED,
	FC_SQL_DELTA_KEYS,
	FC_SQL_DELTA_UIDS,
	FC_SQL_DELTA_POLICIES,
	FC_SQL_DELTA_KINDS,
	FC_SQL_PFX4,
	FC_SQL_PFX6,
	FC_SQL_PFX_LEN_USED,
	FC_SQL_EXACT_IN,
	FC_SQL_EXACT_POL4,
	FC_SQL_POL_STAR,
	FC_SQL_POL_IP_TODO,
	FC_SQL_POL_IP_SET,
	FC_SQL_POL_IP_ALL,
	FC_SQL_META_GET,
	FC_SQL_META_SET,
	FC_SQL_SET_GET,
	FC_SQL_SET_LIST,
	FC_SQL_SET_PUT,
	FC_SQL_SET_DEL,
	FC_SQL_SET_EMPTY,
	FC_SQL_SET_PURGE_MEMBERS,
	FC_SQL_SET_PURGE,
	FC_SQL_SET_KEYS,
	FC_SQL_SET_BANS,
	FC_SQL_SET_MEMBERS_PUT,
	FC_SQL_SET_MEMBERS_DEL,
	FC_SQL_SET_HOLDERS,
	FC_SQL_SET_NEW_ID,
	FC_SQL_POL_LIST_AGENT,
	FC_SQL_POL_LIST_FLEET,
	FC_SQL_FIRST_EXPIRY,
	FC_SQL_ALLOW_GET,
	FC_SQL_ALLOW_PUT,
	FC_SQL_ALLOW_DEL,
	FC_SQL_ALLOW_PURGE,
	FC_SQL_ALLOW_LIST,
	FC_SQL_ALLOWS_CLEAR,
	FC_SQL_FLEET_KEY_PUT,
	FC_SQL_FLEET_DROP_LATER,
	FC_SQL_FLEET_CLOSE,
	FC_SQL_FLEET_NO,
	FC_SQL_FLEET_OPEN,
	FC_SQL_FLEET_AT,
	FC_SQL_FLEET_PURGE,
	FC_SQL_FLEET_WEIGHT,
	FC_SQL_FLEET_ALL,
	FC_SQL_FLEET_ANY,
	FC_SQL_MAX,
};

/* A match that is ip=* with or without a unit, and such a policy at XDP/TC
 * (its layer is stored, never auto): there is at most one, fc_config's. */
#define FC_SQL_STAR(m) "(" m " = 'ip=*' OR " m " LIKE 'ip=*/%')"
#define FC_SQL_STAR_XDP(m, layer) FC_SQL_STAR(m) " AND " layer " = 'xdp'"

/* A live set (its bans are live: a set lapses as a whole). */
#define FC_SET_LIVE(t, now) "(" t ".expires IS NULL OR " t ".expires > " now ")"

/* Set by fc_sql_init: the prefix queries, whose lists of ancestors are long. */
static const char *fc_sql[FC_SQL_MAX] = {
	[FC_SQL_BAN_GET] = "SELECT family, addr, len, created, expires, by_policy, 0 FROM bans "
			   "WHERE family = ?1 AND addr = ?2 AND len = ?3 AND (expires IS NULL OR expires > ?4)",
	[FC_SQL_BAN_PUT] = "INSERT INTO bans (family, addr, len, created, expires, by_policy) "
			   "VALUES (?1, ?2, ?3, ?4, ?5, ?6) "
			   "ON CONFLICT (family, addr, len) DO UPDATE SET created = ?4, expires = ?5, by_policy = ?6",
	/* The same, but a ban there already that would last longer is kept. */
	[FC_SQL_BAN_EXTEND] = "INSERT INTO bans (family, addr, len, created, expires, by_policy) "
			      "VALUES (?1, ?2, ?3, ?4, ?5, ?6) "
			      "ON CONFLICT (family, addr, len) DO UPDATE SET created = ?4, expires = ?5, by_policy = ?6 "
			      "WHERE bans.expires IS NOT NULL AND (?5 IS NULL OR ?5 >= bans.expires)",
	/* Bulk writes take a batch of keys (fc_keys(?1), fc_db.h): one statement each. */
	[FC_SQL_BANS_PUT] = "INSERT INTO bans (family, addr, len, created, expires, by_policy) "
			    "SELECT family, addr, len, CAST(?2 AS bigint), CAST(?3 AS bigint), NULL FROM fc_keys(?1) "
			    "WHERE true ON CONFLICT (family, addr, len) DO UPDATE SET created = excluded.created, "
			    "expires = excluded.expires, by_policy = NULL "
			    /* A ban is not lifted sooner than it would be, unless forced. */
			    "WHERE ?4 <> 0 OR (bans.expires IS NOT NULL AND "
			    "(excluded.expires IS NULL OR excluded.expires >= bans.expires))",
	[FC_SQL_BAN_DEL] = "DELETE FROM bans WHERE family = ?1 AND addr = ?2 AND len = ?3",
	[FC_SQL_BAN_PURGE] = "DELETE FROM bans WHERE expires IS NOT NULL AND expires <= ?1",
	/* Every source of every live ban: by hand (set 0), and each set holding it. */
	[FC_SQL_BAN_LIST] = "SELECT family, addr, len, created, expires, by_policy, 0 FROM bans "
			    "WHERE expires IS NULL OR expires > ?1 "
			    "UNION ALL SELECT s.family, s.addr, s.len, s.created, t.expires, NULL, s.set_id "
			    "FROM set_bans s JOIN ban_sets t ON t.id = s.set_id WHERE " FC_SET_LIVE("t", "?1") " "
			    "ORDER BY 1, 2, 3, 7",
	[FC_SQL_BAN_COUNT] = "SELECT count(*), count(by_policy), "
			     "(SELECT count(*) FROM uid_bans WHERE expires IS NULL OR expires > ?1), "
			     "(SELECT coalesce(sum(size), 0) FROM ban_sets t WHERE " FC_SET_LIVE("t", "?1") ") "
			     "FROM bans WHERE expires IS NULL OR expires > ?1",
#define FC_POL_COLS                                                                                          \
	"id, match, rates, burst, algo, action, count, new_sources, slot, epoch, created, updated, delay_burst, " \
	"escalate, ban_ttl, layer, max_keys, new_keys, concurrency, warmup, override, show_keys, fleet"
#define FC_POL_NCOLS 23 /* columns of FC_POL_COLS: a statement's own come after */
	[FC_SQL_POL_GET] = "SELECT " FC_POL_COLS " FROM policies WHERE id = ?1",
	[FC_SQL_POL_SLOT] = "SELECT slot FROM policies WHERE id = ?1",
	[FC_SQL_POL_LIST] = "SELECT " FC_POL_COLS " FROM policies ORDER BY id",
	/* What the agent runs itself: escalations, keys to count (a superset). */
	[FC_SQL_POL_LIST_AGENT] = "SELECT " FC_POL_COLS " FROM policies WHERE escalate IS NOT NULL OR match LIKE '%=*%' "
				  "ORDER BY id",
	/* A publish's fleet part: the splits and the agent's cfg. */
	[FC_SQL_POL_LIST_FLEET] = "SELECT " FC_POL_COLS " FROM policies WHERE fleet = 1 ORDER BY id",
	[FC_SQL_POL_PUT] = "INSERT INTO policies (" FC_POL_COLS ", ip_family, ip_addr, ip_len) "
			   "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, "
			   "?19, ?20, ?21, ?22, ?23, ?24, ?25, ?26) "
			   "ON CONFLICT (id) DO UPDATE SET match = ?2, rates = ?3, burst = ?4, algo = ?5, "
			   "action = ?6, count = ?7, new_sources = ?8, slot = ?9, epoch = ?10, created = ?11, "
			   "updated = ?12, delay_burst = ?13, escalate = ?14, ban_ttl = ?15, layer = ?16, "
			   "max_keys = ?17, new_keys = ?18, concurrency = ?19, warmup = ?20, override = ?21, "
			   "show_keys = ?22, fleet = ?23, ip_family = ?24, ip_addr = ?25, ip_len = ?26",
	[FC_SQL_POL_DEL] = "DELETE FROM policies WHERE id = ?1",
	/* One policy per match and layer (the schema's key). */
	[FC_SQL_POL_CONFLICT] = "SELECT id FROM policies WHERE match = ?1 AND layer = ?3 AND id != ?2",
	[FC_SQL_POL_STAR_CONFLICT] = "SELECT id FROM policies WHERE " FC_SQL_STAR_XDP("match", "layer") " AND id != ?1",
	/* A freed slot if any (lowest first), else the next never used. */
	[FC_SQL_POL_FREE_SLOT] = "DELETE FROM free_slots WHERE slot = (SELECT min(slot) FROM free_slots) RETURNING slot",
	[FC_SQL_POL_NEXT_SLOT] = "SELECT coalesce(max(slot), 0) + 1 FROM policies",
	[FC_SQL_POL_FREE] = "INSERT INTO free_slots VALUES (?1) ON CONFLICT DO NOTHING",
	[FC_SQL_UBAN_PUT] = "INSERT INTO uid_bans (uid, created, expires) VALUES (?1, ?2, ?3) "
			    "ON CONFLICT (uid) DO UPDATE SET created = ?2, expires = ?3",
	[FC_SQL_UBAN_GET] = "SELECT COALESCE(expires, 0) FROM uid_bans "
			    "WHERE uid = ?1 AND (expires IS NULL OR expires > ?2)",
	[FC_SQL_UBAN_DEL] = "DELETE FROM uid_bans WHERE uid = ?1",
	[FC_SQL_UBAN_PURGE] = "DELETE FROM uid_bans WHERE expires IS NOT NULL AND expires <= ?1",
	[FC_SQL_UBAN_LIST] = "SELECT uid, created, expires FROM uid_bans WHERE expires IS NULL OR expires > ?1 ORDER BY uid",
	[FC_SQL_BANS_CLEAR] = "DELETE FROM bans",
	[FC_SQL_NODE_GET] = "SELECT weight FROM nodes WHERE name = ?1",
	[FC_SQL_NODE_PUT] = "INSERT INTO nodes (name, weight) VALUES (?1, ?2) "
			    "ON CONFLICT (name) DO UPDATE SET weight = ?2",
	[FC_SQL_NODE_LIST] = "SELECT name, weight FROM nodes ORDER BY name",
	[FC_SQL_NODES_CLEAR] = "DELETE FROM nodes",
	[FC_SQL_NODE_DEL] = "DELETE FROM nodes WHERE name = ?1",
	[FC_SQL_UBANS_CLEAR] = "DELETE FROM uid_bans",
	/* An address entry has an empty uid, a uid entry family 0, an empty
	 * address and length 0: one key for both. */
	[FC_SQL_ALLOW_GET] = "SELECT 1 FROM allows WHERE family = ?1 AND addr = ?2 AND len = ?3 AND uid = ?4 "
			     "AND (expires IS NULL OR expires > ?5)",
	[FC_SQL_ALLOW_PUT] = "INSERT INTO allows (family, addr, len, uid, created, expires, note) "
			     "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) "
			     "ON CONFLICT (family, addr, len, uid) DO UPDATE SET created = ?5, expires = ?6, note = ?7",
	[FC_SQL_ALLOW_DEL] = "DELETE FROM allows WHERE family = ?1 AND addr = ?2 AND len = ?3 AND uid = ?4",
	[FC_SQL_ALLOW_PURGE] = "DELETE FROM allows WHERE expires IS NOT NULL AND expires <= ?1",
	[FC_SQL_ALLOW_LIST] = "SELECT family, addr, len, uid, created, expires, note FROM allows "
			      "WHERE expires IS NULL OR expires > ?1 ORDER BY family = 0, family, addr, len, uid",
	[FC_SQL_ALLOWS_CLEAR] = "DELETE FROM allows",
	/* The fleet's key, made once: the first writer's words stay. */
	[FC_SQL_FLEET_KEY_PUT] = "INSERT INTO meta VALUES ('fleet_k0', ?1), ('fleet_k1', ?2) ON CONFLICT (key) DO NOTHING",
	/* A node's weight changes (or it leaves) from ?2 on: rows of it that
	 * would start then or later are superseded, its open one closes. */
	[FC_SQL_FLEET_DROP_LATER] = "DELETE FROM fleet_nodes WHERE name = ?1 AND since >= ?2",
	[FC_SQL_FLEET_CLOSE] = "UPDATE fleet_nodes SET until = ?2 WHERE name = ?1 AND until IS NULL",
	/* Its number: the one it had, else the next never used, else the lowest free. */
	[FC_SQL_FLEET_NO] = "SELECT coalesce((SELECT min(no) FROM fleet_nodes WHERE name = ?1), "
			    "CASE WHEN coalesce(max(no), 0) < " FC_SQL_STR(FC_FLEET_NODES_MAX) " THEN "
			    "coalesce(max(no), 0) + 1 WHEN NOT EXISTS (SELECT 1 FROM fleet_nodes WHERE no = 1) THEN 1 "
			    "ELSE (SELECT min(a.no) + 1 FROM fleet_nodes a WHERE a.no < " FC_SQL_STR(FC_FLEET_NODES_MAX) " "
			    "AND NOT EXISTS (SELECT 1 FROM fleet_nodes b WHERE b.no = a.no + 1)) END) FROM fleet_nodes",
	[FC_SQL_FLEET_OPEN] = "INSERT INTO fleet_nodes (name, no, weight, since) VALUES (?1, ?2, ?3, ?4)",
	[FC_SQL_FLEET_AT] = "SELECT name, no, weight, since, until FROM fleet_nodes "
			    "WHERE since <= ?1 AND (until IS NULL OR until > ?1) ORDER BY no",
	[FC_SQL_FLEET_PURGE] = "DELETE FROM fleet_nodes WHERE until IS NOT NULL AND until <= ?1",
	/* The weight a node has from its last change on (its open row). */
	[FC_SQL_FLEET_WEIGHT] = "SELECT weight FROM fleet_nodes WHERE name = ?1 AND until IS NULL",
	[FC_SQL_FLEET_ALL] = "SELECT name, no, weight, since, until FROM fleet_nodes ORDER BY no, since",
	[FC_SQL_FLEET_ANY] = "SELECT count(*) FROM policies WHERE fleet = 1",
	[FC_SQL_EPOCH_NEXT] = "UPDATE meta SET value = value % 4294967295 + 1 WHERE key = 'epoch' RETURNING value",
	/* The change log (see the schema): its store's id, how far it was
	 * pruned, its last change. */
	[FC_SQL_LOG_HEAD] = "SELECT (SELECT value FROM meta WHERE key = 'store_id'), "
			    "(SELECT value FROM meta WHERE key = 'log_pruned'), (SELECT max(seq) FROM changes)",
	[FC_SQL_LOG_PRUNE] = "DELETE FROM changes WHERE seq <= ?1",
	[FC_SQL_LOG_PRUNED] = "UPDATE meta SET value = ?1 WHERE key = 'log_pruned' AND value < ?1",
#define FC_CHANGED "FROM changes WHERE seq > ?1 AND seq <= ?2"
	/* Each address key changed in (?1, ?2] (a ban's, a set member's, an
	 * ip= policy's), with what holds it at ?3: its live bans (src 0 by hand,
	 * else the set), its policy (src -1), and the key alone (src -2). */
	[FC_SQL_DELTA_KEYS] =
		"WITH k AS (SELECT DISTINCT family, addr, len " FC_CHANGED " AND family IS NOT NULL AND kind <> 'allow') "
		"SELECT k.family, k.addr, k.len, 0, b.expires, 0, NULL FROM k CROSS JOIN bans b "
		"WHERE b.family = k.family AND b.addr = k.addr AND b.len = k.len AND (b.expires IS NULL OR b.expires > ?3) "
		"UNION ALL SELECT k.family, k.addr, k.len, s.set_id, NULL, 0, NULL FROM k CROSS JOIN set_bans s "
		"JOIN ban_sets t ON t.id = s.set_id "
		"WHERE s.family = k.family AND s.addr = k.addr AND s.len = k.len AND " FC_SET_LIVE("t", "?3") " "
		"UNION ALL SELECT k.family, k.addr, k.len, -1, NULL, p.slot, p.layer FROM k CROSS JOIN policies p "
		"WHERE p.ip_family = k.family AND p.ip_addr = k.addr AND p.ip_len = k.len "
		"UNION ALL SELECT family, addr, len, -2, NULL, 0, NULL FROM k ORDER BY 1, 2, 3, 4",
	[FC_SQL_DELTA_UIDS] = "WITH u AS (SELECT DISTINCT txt " FC_CHANGED " AND kind = 'uid') "
			      "SELECT u.txt, b.expires, CASE WHEN b.uid IS NULL THEN 0 ELSE 1 END FROM u LEFT JOIN uid_bans b "
			      "ON b.uid = u.txt AND (b.expires IS NULL OR b.expires > ?3)",
	/* Each (policy id, slot) changed, the row in that slot now, and
	 * whether the change was on the ip=* policy. */
	[FC_SQL_DELTA_POLICIES] = "SELECT " FC_POL_COLS ", c.cid, c.cslot, c.cstar, c.cl7, ip_family, ip_addr, ip_len "
				  "FROM (SELECT DISTINCT id AS cid, "
				  "slot AS cslot, CASE WHEN " FC_SQL_STAR("txt") " THEN 1 ELSE 0 END AS cstar, "
				  "CASE WHEN txt NOT LIKE 'ip=%' OR txt LIKE '%,%' OR layer = 'http' THEN 1 ELSE 0 END "
				  "AS cl7 " FC_CHANGED " AND kind = 'policy') c LEFT JOIN policies ON policies.slot = c.cslot",
	/* The kinds of change in (?1, ?2], each node's and set's apart: read
	 * first, so a publish reads only what changed (a round trip and a
	 * plan fewer for each kind that did not, on PostgreSQL). */
	[FC_SQL_DELTA_KINDS] = "SELECT DISTINCT kind, CASE WHEN kind IN ('node', 'set') THEN txt END, "
			       "CASE WHEN kind = 'set' THEN id END " FC_CHANGED,
#undef FC_CHANGED
	[FC_SQL_POL_STAR] = "SELECT " FC_POL_COLS " FROM policies WHERE " FC_SQL_STAR_XDP("match", "layer"),
	/* Whether a rule in the kernel's maps is on a prefix of ?1, length ?2
	 * (fc_config.lens6): a live ban, a live set's member, a policy not
	 * nginx's alone. */
	[FC_SQL_PFX_LEN_USED] = "SELECT 1 FROM bans WHERE family = ?1 AND len = ?2 AND (expires IS NULL OR expires > ?3) "
				"UNION ALL SELECT 1 FROM set_bans s JOIN ban_sets t ON t.id = s.set_id "
				"WHERE s.family = ?1 AND s.len = ?2 AND " FC_SET_LIVE("t", "?3") " "
				"UNION ALL SELECT 1 FROM policies WHERE ip_family = ?1 AND ip_len = ?2 AND "
				"(layer IS NULL OR layer <> 'http') LIMIT 1",
	/* Which of the IPv4 ranges in ?1 (each 8 bytes: first and last
	 * address) a rule in the kernel's exact maps is on an address of at
	 * ?2, by index: a live ban, a live set's member, a policy not nginx's
	 * alone, a live allow entry. Each read from its table's key (or
	 * policies_ip) per range: one query for every /24 a publish left. */
	[FC_SQL_EXACT_IN] = "WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 8 FROM r "
			    "WHERE i + 8 <= length(CAST(?1 AS BLOB))), "
			    "g(k, lo, hi) AS (SELECT (i - 1) / 8, substr(CAST(?1 AS BLOB), i, 4), "
			    "substr(CAST(?1 AS BLOB), i + 4, 4) FROM r) "
			    "SELECT k FROM g WHERE EXISTS (SELECT 1 FROM bans WHERE family = 4 AND addr BETWEEN g.lo "
			    "AND g.hi AND len = 32 AND (expires IS NULL OR expires > ?2)) "
			    "OR EXISTS (SELECT 1 FROM set_bans s JOIN ban_sets t ON t.id = s.set_id WHERE s.family = 4 "
			    "AND s.addr BETWEEN g.lo AND g.hi AND s.len = 32 AND " FC_SET_LIVE("t", "?2") ") "
			    "OR EXISTS (SELECT 1 FROM policies WHERE ip_family = 4 AND ip_addr BETWEEN g.lo AND g.hi "
			    "AND ip_len = 32 AND (layer IS NULL OR layer <> 'http')) "
			    "OR EXISTS (SELECT 1 FROM allows WHERE family = 4 AND addr BETWEEN g.lo AND g.hi "
			    "AND len = 32 AND (expires IS NULL OR expires > ?2)) ORDER BY k",
	/* The policies on the IPv4 addresses ?1 to ?2 that the kernel's maps
	 * hold, columns as FC_SQL_DELTA_KEYS. */
	[FC_SQL_EXACT_POL4] = "SELECT ip_family, ip_addr, ip_len, -1, NULL, slot, layer FROM policies "
			      "WHERE ip_family = 4 AND ip_addr BETWEEN ?1 AND ?2 AND ip_len = 32 "
			      "AND (layer IS NULL OR layer <> 'http')",
	/* The first time a ban or a set lapses, past or not. */
	[FC_SQL_FIRST_EXPIRY] = "SELECT min(e) FROM (SELECT min(expires) AS e FROM bans WHERE expires IS NOT NULL "
				"UNION ALL SELECT min(expires) FROM uid_bans WHERE expires IS NOT NULL "
				"UNION ALL SELECT min(expires) FROM allows WHERE expires IS NOT NULL "
				"UNION ALL SELECT min(expires) FROM ban_sets WHERE expires IS NOT NULL "
				/* a fleet node's closed row, kept a day past its end (in seconds, rounded up) */
				"UNION ALL SELECT (min(until) + " FC_SQL_STR(FC_FLEET_NODES_KEEP_MS) " + 999) / 1000 "
				"FROM fleet_nodes WHERE until IS NOT NULL) x",
	/* Rows written before policies had ip_* (or by a script): to fill. */
	[FC_SQL_POL_IP_TODO] = "SELECT id, match FROM policies WHERE ip_family IS NULL AND match LIKE 'ip=%' "
			       "AND match NOT LIKE '%,%' AND NOT " FC_SQL_STAR("match"),
	[FC_SQL_POL_IP_SET] = "UPDATE policies SET ip_family = ?2, ip_addr = ?3, ip_len = ?4 WHERE id = ?1",
	/* The rows whose ip_* columns matter: set, or an ip= policy's. */
	[FC_SQL_POL_IP_ALL] = "SELECT id, match, ip_family, ip_addr, ip_len FROM policies WHERE ip_family IS NOT NULL "
			      "OR (match LIKE 'ip=%' AND match NOT LIKE '%,%' AND NOT " FC_SQL_STAR("match") ")",
	[FC_SQL_META_GET] = "SELECT value FROM meta WHERE key = ?1",
	[FC_SQL_META_SET] = "UPDATE meta SET value = ?2 WHERE key = ?1",
#define FC_SET_COLS "id, name, created, updated, expires, size"
	[FC_SQL_SET_GET] = "SELECT " FC_SET_COLS " FROM ban_sets t WHERE name = ?1 AND " FC_SET_LIVE("t", "?2"),
	[FC_SQL_SET_LIST] = "SELECT " FC_SET_COLS " FROM ban_sets t WHERE " FC_SET_LIVE("t", "?1") " ORDER BY id",
	[FC_SQL_SET_PUT] = "INSERT INTO ban_sets (" FC_SET_COLS ") VALUES (?1, ?2, ?3, ?4, ?5, ?6) "
			   "ON CONFLICT (id) DO UPDATE SET name = ?2, updated = ?4, expires = ?5, size = ?6",
#undef FC_SET_COLS
	[FC_SQL_SET_DEL] = "DELETE FROM ban_sets WHERE id = ?1",
	[FC_SQL_SET_EMPTY] = "DELETE FROM set_bans WHERE set_id = ?1",
	[FC_SQL_SET_PURGE_MEMBERS] = "DELETE FROM set_bans WHERE set_id IN "
				     "(SELECT id FROM ban_sets WHERE expires IS NOT NULL AND expires <= ?1)",
	[FC_SQL_SET_PURGE] = "DELETE FROM ban_sets WHERE expires IS NOT NULL AND expires <= ?1",
	[FC_SQL_SET_KEYS] = "SELECT family, addr, len FROM set_bans WHERE set_id = ?1 ORDER BY family, addr, len",
	[FC_SQL_SET_BANS] = "SELECT s.family, s.addr, s.len, s.created, t.expires, NULL, s.set_id FROM set_bans s "
			    "JOIN ban_sets t ON t.id = s.set_id WHERE s.set_id = ?1 AND " FC_SET_LIVE("t", "?2") " "
			    "ORDER BY s.family, s.addr, s.len",
	[FC_SQL_SET_MEMBERS_PUT] = "INSERT INTO set_bans (family, addr, len, set_id, created) "
				   "SELECT family, addr, len, CAST(?2 AS bigint), CAST(?3 AS bigint) FROM fc_keys(?1) "
				   "WHERE true ON CONFLICT DO NOTHING",
	/* An address's length tells its family: spelled so, the key's every
	 * column is a step in the index (SQLite), so only the keys are read. */
	[FC_SQL_SET_MEMBERS_DEL] = "DELETE FROM set_bans WHERE set_id = ?2 AND family IN (4, 6) AND (addr, len) IN "
				   "(SELECT addr, len FROM fc_keys(?1))",
	/* The live sets holding exactly a key, by name. */
	[FC_SQL_SET_HOLDERS] = "SELECT t.name FROM set_bans s JOIN ban_sets t ON t.id = s.set_id "
			       "WHERE s.family = ?1 AND s.addr = ?2 AND s.len = ?3 AND " FC_SET_LIVE("t", "?4") " "
			       "ORDER BY t.id",
	/* A new set's id: the next never used, else the lowest free. */
	[FC_SQL_SET_NEW_ID] = "SELECT CASE WHEN coalesce(max(id), 0) < " FC_SQL_STR(FC_MAX_SETS) " THEN "
			      "coalesce(max(id), 0) + 1 WHEN NOT EXISTS (SELECT 1 FROM ban_sets WHERE id = 1) THEN 1 "
			      "ELSE (SELECT min(a.id) + 1 FROM ban_sets a WHERE NOT EXISTS "
			      "(SELECT 1 FROM ban_sets b WHERE b.id = a.id + 1)) END FROM ban_sets",
};

/*
 * The rules on the prefixes (not exact addresses) of one family that cover a
 * prefix or that it covers: ?1..?2 its address range, ?3 now, then its
 * address masked to each length from 0 (a policy's /0) to the family's last, which finds
 * the ones covering it by index (the caller keeps the rows that are either;
 * an address masked to a length of the prefix or longer is its own).
 * Columns as FC_SQL_DELTA_KEYS.
 */
static void fc_sql_pfx(char *buf, size_t size, int family)
{
	static const char *const tab[3] = { "bans", "set_bans", "policies" }, *const col[3] = { "addr", "s.addr",
												     "ip_addr" };
	const int full = family == 4 ? 32 : 128;
	char in[1024], cond[2][3][sizeof(in) + 16], from[2][3][64];
	size_t off = 0;
	int i, c;

	for (i = 0; i < full; i++)
		off += (size_t)snprintf(in + off, sizeof(in) - off, "%s?%d", i ? ", " : "", i + 4);
	for (c = 0; c < 3; c++) {
		snprintf(cond[0][c], sizeof(cond[0][c]), "%s BETWEEN ?1 AND ?2", col[c]);
		snprintf(cond[1][c], sizeof(cond[1][c]), "%s IN (%s)", col[c], in);
		/* A range is read from the prefixes' own index (SQLite would take
		 * the primary key, and walk every address banned in the range). */
		snprintf(from[0][c], sizeof(from[0][c]), "%s%s INDEXED BY %s_pfx%d", tab[c], c == 1 ? " s" : "", tab[c],
			 family);
		snprintf(from[1][c], sizeof(from[1][c]), "%s%s", tab[c], c == 1 ? " s" : "");
	}
	for (off = 0, i = 0; i < 2; i++)
		off += (size_t)snprintf(buf + off, size - off,
					"%sSELECT family, addr, len, 0, expires, 0, NULL FROM %s WHERE family = %d AND "
					"len < %d AND %s AND (expires IS NULL OR expires > ?3) "
					"UNION ALL SELECT s.family, s.addr, s.len, s.set_id, NULL, 0, NULL FROM %s "
					"JOIN ban_sets t ON t.id = s.set_id WHERE s.family = %d AND s.len < %d AND %s AND "
					FC_SET_LIVE("t", "?3") " "
					"UNION ALL SELECT ip_family, ip_addr, ip_len, -1, NULL, slot, layer FROM %s "
					"WHERE ip_family = %d AND ip_len < %d AND %s ",
					i ? "UNION ALL " : "", from[i][0], family, full, cond[i][0], from[i][1], family, full,
					cond[i][1], from[i][2], family, full, cond[i][2]);
}

/* Builds what fc_sql can not spell as literals, once. */
static void fc_sql_init(void)
{
	static char pfx4[8192], pfx6[24576];

	fc_sql_pfx(pfx4, sizeof(pfx4), 4);
	fc_sql_pfx(pfx6, sizeof(pfx6), 6);
	fc_sql[FC_SQL_PFX4] = pfx4;
	fc_sql[FC_SQL_PFX6] = pfx6;
}


int fc_db_schema_upto;

struct fc_store {
	struct fc_db *db;
	/* Policy rows the last listing skipped: not valid as written (by a
	 * script writing SQL, say), they are reported, never published. */
	size_t bad_policies;
	char bad_why[FC_ERR_LEN];
};

#define FC_ARGS(...) (const struct fc_val[]){ __VA_ARGS__ }, \
	(int)(sizeof((const struct fc_val[]){ __VA_ARGS__ }) / sizeof(struct fc_val))
#define FC_NO_ARGS NULL, 0

bool fc_store_is_postgres(const char *dsn)
{
	return !strncmp(dsn, "postgresql://", 13) || !strncmp(dsn, "postgres://", 11);
}

/* The DSN for messages, its password masked: postgresql://user:secret@host/db
 * and ...?password=secret become user:*** and password=***. */
static char *fc_store_name(const char *dsn)
{
	const char *scheme = strstr(dsn, "://"), *at, *colon, *pw;
	char *name, *masked;
	size_t end;

	if (!fc_store_is_postgres(dsn) || !scheme)
		return strdup(dsn);
	if ((at = strchr(scheme + 3, '@')) && (colon = memchr(scheme + 3, ':', (size_t)(at - scheme - 3)))) {
		if (asprintf(&name, "%.*s:***%s", (int)(colon - dsn), dsn, at) < 0)
			return NULL;
	} else if (!(name = strdup(dsn))) {
		return NULL;
	}
	pw = strstr(name, "password=");
	if (!pw || (pw != name && pw[-1] != '?' && pw[-1] != '&'))
		return name;
	end = strcspn(pw + 9, "&");
	if (asprintf(&masked, "%.*s***%s", (int)(pw + 9 - name), name, pw + 9 + end) < 0)
		masked = NULL;
	free(name);
	return masked;
}

char *fc_store_dsn_redact(const char *dsn)
{
	return fc_store_name(dsn);
}

int fc_store_open(const char *path, struct fc_store **out, struct fc_err *err)
{
	return fc_store_open_ex(path, true, out, err);
}

static int fc_policy_ip_fill(struct fc_store *st, struct fc_err *err);

/* Opens the store; read: for reading only (nothing filled in). */
static int fc_store_open_as(const char *dsn, bool create, bool read, struct fc_store **out, struct fc_err *err)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	const struct fc_db_ops *ops = fc_store_is_postgres(dsn) ? &fc_db_pg : &fc_db_sqlite;
	struct fc_store *st = calloc(1, sizeof(*st));
	char *name = fc_store_name(dsn);
	int rc = -1;

	pthread_once(&once, fc_sql_init);
	if (!st || !name)
		fc_err_set(err, "store %s: out of memory", dsn);
	else
		rc = ops->open(dsn, name, create, (const char *const *)fc_sql, FC_SQL_MAX, &st->db, err);
	free(name);
	if (rc == 0 && !read && fc_policy_ip_fill(st, err) < 0) {
		st->db->ops->close(st->db);
		rc = -1;
	}
	if (rc < 0) {
		free(st);
		return -1;
	}
	*out = st;
	return 0;
}

int fc_store_open_ex(const char *dsn, bool create, struct fc_store **out, struct fc_err *err)
{
	return fc_store_open_as(dsn, create, false, out, err);
}

int fc_store_open_read(const char *dsn, struct fc_store **out, struct fc_err *err)
{
	char shm[4096];
	int e;

	*out = NULL;
	if (fc_store_is_postgres(dsn))
		return fc_store_open_as(dsn, false, true, out, err);
	if (access(dsn, F_OK) < 0 && errno == ENOENT)
		return 1;
	if (fc_store_open_as(dsn, false, true, out, err) == 0)
		return 0;
	/* SQLite reads a store in WAL mode through its -shm file, made beside
	 * it if it is not there: a user who can not read the file, or make
	 * that one, can not read the store. (Root can: its refusal, a store
	 * another user owns, says why itself.) */
	snprintf(shm, sizeof(shm), "%s-shm", dsn);
	if (geteuid() != 0 && (e = access(dsn, R_OK) < 0 ? 1 : access(shm, R_OK) < 0 ? 2 : 0))
		fc_err_set(err, "store %s: %s%s: reading it needs root, or read access to it, its directory and its -wal "
				"and -shm files (a command that writes makes them)", dsn, e == 2 ? "its -shm file: " : "",
			   strerror(errno));
	return -1;
}

void fc_store_close(struct fc_store *st)
{
	if (!st)
		return;
	st->db->ops->close(st->db);
	free(st);
}

int fc_store_begin(struct fc_store *st, struct fc_err *err)
{
	return st->db->ops->begin(st->db, err);
}

int fc_store_commit(struct fc_store *st, struct fc_err *err)
{
	return st->db->ops->commit(st->db, err);
}

void fc_store_rollback(struct fc_store *st)
{
	st->db->ops->rollback(st->db);
}

/* Runs a statement for its effect; *changes (if asked) the rows it changed. */
static int fc_exec(struct fc_store *st, enum fc_stmt_id id, const struct fc_val *args, int n, int64_t *changes,
		   const char *what, struct fc_err *err)
{
	const struct fc_db_ops *o = st->db->ops;
	int rc = o->run(st->db, id, args, n, what, err);

	if (rc == 0)
		rc = o->next(st->db, id, what, err) < 0 ? -1 : 0;
	if (rc == 0 && changes)
		*changes = o->changes(st->db, id);
	o->done(st->db, id);
	return rc;
}

/* Runs a one-integer query; *found tells whether it returned a non-NULL value. */
static int fc_query_int(struct fc_store *st, enum fc_stmt_id id, const struct fc_val *args, int n, int64_t *v,
			bool *found, const char *what, struct fc_err *err)
{
	const struct fc_db_ops *o = st->db->ops;
	int rc = o->run(st->db, id, args, n, what, err);

	*found = false;
	if (rc == 0 && (rc = o->next(st->db, id, what, err)) == 1) {
		*found = !o->col_null(st->db, id, 0);
		*v = o->col_int(st->db, id, 0);
		rc = 0;
	}
	o->done(st->db, id);
	return rc;
}

/* Reads the current row of statement id into row (an element of the caller's type). */
typedef int (*fc_row_fn)(struct fc_store *st, int id, void *row, struct fc_err *err);

/* Runs statement id and reads every row with read into a growing array. */
/* A row read that found the row itself not valid: it is skipped and
 * counted, the listing goes on. */
#define FC_ROW_BAD 1
#define FC_ROW_SKIP 2 /* a row the caller does not want */

static int fc_collect(struct fc_store *st, enum fc_stmt_id id, const struct fc_val *args, int nargs, size_t elem,
		      fc_row_fn read, const char *what, void **rows, size_t *n, struct fc_err *err)
{
	const struct fc_db_ops *o = st->db->ops;
	size_t cnt = 0, cap = 0;
	char *v = NULL, *nv;
	int rc = o->run(st->db, id, args, nargs, what, err);

	while (rc == 0 && (rc = o->next(st->db, id, what, err)) == 1) {
		rc = 0;
		if (cnt == cap) {
			cap = cap ? cap * 2 : 64;
			nv = realloc(v, cap * elem);
			if (!nv) {
				rc = fc_err_set(err, "store %s: out of memory %s", st->db->name, what);
				break;
			}
			v = nv;
		}
		rc = read(st, id, v + cnt * elem, err);
		if (rc == FC_ROW_BAD) {
			if (!st->bad_policies++)
				snprintf(st->bad_why, sizeof(st->bad_why), "%s", err->msg);
			rc = 0;
			continue;
		}
		if (rc == FC_ROW_SKIP) {
			rc = 0;
			continue;
		}
		cnt++;
	}
	o->done(st->db, id);
	if (rc < 0) {
		free(v);
		return -1;
	}
	*rows = v;
	*n = cnt;
	return 0;
}

#define FC_PREFIX_ADDR(p) FC_BLOB((p)->a, (p)->family == 4 ? 4 : 16)
#define FC_PREFIX_ARGS(p) FC_INT((p)->family), FC_PREFIX_ADDR(p), FC_INT((p)->len)

static int fc_ban_write(struct fc_store *st, enum fc_stmt_id id, const struct fc_ban_row *row, int64_t *written,
			struct fc_err *err)
{
	return fc_exec(st, id,
		       FC_ARGS(FC_PREFIX_ARGS(&row->p), FC_INT(row->created), FC_INT_OR_NULL(row->expires),
			       FC_INT_OR_NULL(row->by_policy)),
		       written, "writing ban", err);
}

int fc_store_ban_put(struct fc_store *st, const struct fc_ban_row *row, struct fc_err *err)
{
	return fc_ban_write(st, FC_SQL_BAN_PUT, row, NULL, err);
}

int fc_store_ban_extend(struct fc_store *st, const struct fc_ban_row *row, bool *written, struct fc_err *err)
{
	int64_t n = 0;
	int rc = fc_ban_write(st, FC_SQL_BAN_EXTEND, row, &n, err);

	*written = n > 0;
	return rc;
}

/* Runs statement id on keys (struct fc_prefix's layout is fc_keys' key),
 * a batch of FC_STORE_BATCH at a time as ?1, with the statement's other
 * nargs parameters args as ?2 on. */
_Static_assert(sizeof(struct fc_prefix) == FC_KEY_BYTES && offsetof(struct fc_prefix, len) == 1 &&
		       offsetof(struct fc_prefix, a) == 2,
	       "struct fc_prefix must be laid out as fc_keys' key");
static int fc_exec_keys(struct fc_store *st, enum fc_stmt_id id, const struct fc_prefix *keys, size_t n,
			const struct fc_val *args, int nargs, struct fc_store_progress *prog, size_t *written,
			const char *what, struct fc_err *err)
{
	struct fc_val a[4];
	int64_t rows = 0;
	size_t i, k;

	if ((size_t)nargs >= sizeof(a) / sizeof(a[0]))
		return fc_err_set(err, "store %s: %s: too many parameters", st->db->name, what);
	/* Checked here for both backends: the SQL writes what it is given. */
	for (i = 0; i < n; i++)
		if ((keys[i].family != 4 && keys[i].family != 6) || keys[i].len > (keys[i].family == 4 ? 32 : 128))
			return fc_err_set(err, "store %s: %s: key %zu is not an address prefix (family %u, length %u)",
					  st->db->name, what, i, keys[i].family, keys[i].len);
	memcpy(a + 1, args, (size_t)nargs * sizeof(*args));
	if (prog && prog->fn && !prog->done && n)
		prog->fn(0, prog->total, prog->arg);
	for (i = 0; i < n; i += k) {
		k = n - i < FC_STORE_BATCH ? n - i : FC_STORE_BATCH;
		a[0] = FC_BLOB(keys + i, k * sizeof(*keys));
		if (fc_exec(st, id, a, 1 + nargs, &rows, what, err) < 0)
			return -1;
		if (written)
			*written += (size_t)rows;
		if (prog && prog->fn) {
			prog->done += k;
			prog->fn(prog->done, prog->total, prog->arg);
		}
	}
	return 0;
}

int fc_store_bans_put(struct fc_store *st, const struct fc_prefix *keys, size_t n, int64_t created, int64_t expires,
		      bool force, struct fc_store_progress *prog, size_t *written, struct fc_err *err)
{
	*written = 0;
	return fc_exec_keys(st, FC_SQL_BANS_PUT, keys, n,
			    FC_ARGS(FC_INT(created), FC_INT_OR_NULL(expires), FC_INT(force)), prog, written,
			    "writing bans", err);
}

int fc_store_ban_del(struct fc_store *st, const struct fc_prefix *p, bool *found, struct fc_err *err)
{
	int64_t n = 0;
	int rc = fc_exec(st, FC_SQL_BAN_DEL, FC_ARGS(FC_PREFIX_ARGS(p)), &n, "deleting ban", err);

	*found = n > 0;
	return rc;
}

int fc_store_ban_purge(struct fc_store *st, int64_t now, size_t *n, struct fc_err *err)
{
	int64_t c = 0;
	int rc = fc_exec(st, FC_SQL_BAN_PURGE, FC_ARGS(FC_INT(now)), &c, "purging expired bans", err);

	*n = (size_t)c;
	return rc;
}

/* Reads one ban row; rejects what this version never writes. */
static int fc_ban_row_read(struct fc_store *st, int id, void *out, struct fc_err *err)
{
	const struct fc_db_ops *o = st->db->ops;
	struct fc_ban_row *row = out;
	int family = (int)o->col_int(st->db, id, 0);
	int len = (int)o->col_int(st->db, id, 2);
	int max = family == 4 ? 32 : 128;
	size_t bytes;
	const void *addr = o->col_blob(st->db, id, 1, &bytes);

	if ((family != 4 && family != 6) || !addr || bytes != (size_t)max / 8 || len < 0 || len > max)
		return fc_err_set(err, "store %s: corrupt ban row (family %d, %zu address bytes, length %d)",
				  st->db->name, family, bytes, len);
	memset(row, 0, sizeof(*row));
	row->p.family = (uint8_t)family;
	row->p.len = (uint8_t)len;
	memcpy(row->p.a, addr, bytes);
	row->created = o->col_int(st->db, id, 3);
	row->expires = o->col_int(st->db, id, 4);
	row->by_policy = (uint32_t)o->col_int(st->db, id, 5);
	row->set = (uint32_t)o->col_int(st->db, id, 6);
	return 0;
}

/* Reads at most one row of statement id; *found tells whether there was one. */
static int fc_get_one(struct fc_store *st, enum fc_stmt_id id, const struct fc_val *args, int n, fc_row_fn read,
		      void *row, bool *found, const char *what, struct fc_err *err)
{
	const struct fc_db_ops *o = st->db->ops;
	int rc = o->run(st->db, id, args, n, what, err);

	*found = false;
	if (rc == 0 && (rc = o->next(st->db, id, what, err)) == 1) {
		*found = true;
		rc = read(st, id, row, err);
	}
	o->done(st->db, id);
	return rc;
}

int fc_store_ban_get(struct fc_store *st, const struct fc_prefix *p, int64_t now, struct fc_ban_row *row,
		     bool *found, struct fc_err *err)
{
	return fc_get_one(st, FC_SQL_BAN_GET, FC_ARGS(FC_PREFIX_ARGS(p), FC_INT(now)), fc_ban_row_read, row, found,
			  "looking up ban", err);
}

static int fc_ban_counts_read(struct fc_store *st, int id, void *out, struct fc_err *err)
{
	struct fc_ban_counts *n = out;

	(void)err;
	n->addresses = (size_t)st->db->ops->col_int(st->db, id, 0);
	n->escalated = (size_t)st->db->ops->col_int(st->db, id, 1);
	n->uids = (size_t)st->db->ops->col_int(st->db, id, 2);
	n->in_sets = (size_t)st->db->ops->col_int(st->db, id, 3);
	return 0;
}

int fc_store_ban_count(struct fc_store *st, int64_t now, struct fc_ban_counts *n, struct fc_err *err)
{
	bool found;

	if (fc_get_one(st, FC_SQL_BAN_COUNT, FC_ARGS(FC_INT(now)), fc_ban_counts_read, n, &found, "counting bans",
		       err) < 0)
		return -1;
	return found ? 0 : fc_err_set(err, "store %s: counting bans: no result", st->db->name);
}

int fc_store_ban_list(struct fc_store *st, int64_t now, struct fc_ban_row **rows, size_t *n,
		      struct fc_err *err)
{
	return fc_collect(st, FC_SQL_BAN_LIST, FC_ARGS(FC_INT(now)), sizeof(**rows), fc_ban_row_read,
			  "listing bans", (void **)rows, n, err);
}

/* Reads one policy row; the texts go through the CLI's own parsers. */
static int fc_policy_row_read(struct fc_store *st, int id, void *out, struct fc_err *err)
{
	const struct fc_db_ops *o = st->db->ops;
	struct fc_policy_row *row = out;
	struct fc_policy_spec *p = &row->spec;
	static const int text_cols[5] = { 1, 2, 4, 5, 6 }; /* match, rates, algo, action, count */
	const char *txt[5], *esc, *layer;
	struct fc_err why;
	int i, rc = 0, lv = FC_LAYER_AUTO;

	memset(row, 0, sizeof(*row));
	for (i = 0; i < 5; i++)
		txt[i] = o->col_text(st->db, id, text_cols[i]);
	p->id = (uint32_t)o->col_int(st->db, id, 0);
	p->burst = (uint64_t)o->col_int(st->db, id, 3);
	p->new_sources = (uint64_t)o->col_int(st->db, id, 7);
	row->slot = (uint32_t)o->col_int(st->db, id, 8);
	row->epoch = (uint32_t)o->col_int(st->db, id, 9);
	row->created = o->col_int(st->db, id, 10);
	row->updated = o->col_int(st->db, id, 11);
	p->delay_burst = (uint32_t)o->col_int(st->db, id, 12);
	esc = o->col_text(st->db, id, 13);
	p->ban_ttl = o->col_int(st->db, id, 14);
	layer = o->col_text(st->db, id, 15);
	p->max_keys = (uint32_t)o->col_int(st->db, id, 16);
	p->new_keys = (uint32_t)o->col_int(st->db, id, 17);
	p->concurrency = (uint32_t)o->col_int(st->db, id, 18);
	p->warmup = o->col_int(st->db, id, 19);
	p->override = o->col_int(st->db, id, 20) != 0;
	p->show_keys = o->col_null(st->db, id, 21) ? 0 : o->col_int(st->db, id, 21) ? 1 : -1;
	p->fleet = o->col_int(st->db, id, 22) != 0;
	for (i = 0; i < 5; i++)
		if (!txt[i])
			return fc_err_set(err, "store %s: policy %u: a required column is NULL", st->db->name, p->id),
			       FC_ROW_BAD;
	if ((esc && fc_rate_parse(esc, &p->escalate, false, &why) < 0) ||
	    (layer && fc_enum_parse("layer", layer, fc_layer_names, &lv, &why) < 0) ||
	    (p->layer = (enum fc_layer)lv, fc_match_parse(txt[0], p, &why) < 0) ||
	    fc_rates_parse(txt[1], p, &why) < 0 || fc_algo_parse(txt[2], &p->algo, &why) < 0 ||
	    fc_action_parse(txt[3], &p->action, &why) < 0 || fc_count_parse(txt[4], &p->count, &why) < 0 ||
	    fc_policy_validate(p, &why) < 0)
		rc = -1;
	else if (row->slot < 1 || row->slot > FC_MAX_POLICIES)
		rc = fc_err_set(&why, "slot %u out of range", row->slot);
	if (rc < 0) {
		fc_err_set(err, "store %s: policy %u: %s", st->db->name, p->id, why.msg);
		return FC_ROW_BAD;
	}
	/* Written out (xdp, http) since the round's migration; read as a
	 * spec says it, auto where the match gives it anyway. */
	fc_policy_layer_canon(p);
	return 0;
}

int fc_store_policy_get(struct fc_store *st, uint32_t id, struct fc_policy_row *row, bool *found, struct fc_err *err)
{
	/* One row asked for by id: not valid, it is an error, not an absence. */
	return fc_get_one(st, FC_SQL_POL_GET, FC_ARGS(FC_INT(id)), fc_policy_row_read, row, found,
			  "looking up policy", err) ? -1 : 0;
}

int fc_store_policy_list(struct fc_store *st, struct fc_policy_row **rows, size_t *n, struct fc_err *err)
{
	st->bad_policies = 0;
	return fc_collect(st, FC_SQL_POL_LIST, FC_NO_ARGS, sizeof(**rows), fc_policy_row_read, "listing policies",
			  (void **)rows, n, err);
}

int fc_store_policy_list_agent(struct fc_store *st, struct fc_policy_row **rows, size_t *n, struct fc_err *err)
{
	st->bad_policies = 0;
	return fc_collect(st, FC_SQL_POL_LIST_AGENT, FC_NO_ARGS, sizeof(**rows), fc_policy_row_read,
			  "listing policies", (void **)rows, n, err);
}

int fc_store_policy_list_fleet(struct fc_store *st, struct fc_policy_row **rows, size_t *n, struct fc_err *err)
{
	st->bad_policies = 0;
	return fc_collect(st, FC_SQL_POL_LIST_FLEET, FC_NO_ARGS, sizeof(**rows), fc_policy_row_read,
			  "listing fleet policies", (void **)rows, n, err);
}

size_t fc_store_bad_policies(const struct fc_store *st, const char **why)
{
	*why = st->bad_why;
	return st->bad_policies;
}

/* The slot of a new policy: a freed one if any (lowest first), else the next never used. */
static int fc_slot_alloc(struct fc_store *st, uint32_t *slot, struct fc_err *err)
{
	const char *what = "allocating a policy slot";
	int64_t v = 0;
	bool found;

	if (fc_query_int(st, FC_SQL_POL_FREE_SLOT, FC_NO_ARGS, &v, &found, what, err) < 0)
		return -1;
	if (!found && fc_query_int(st, FC_SQL_POL_NEXT_SLOT, FC_NO_ARGS, &v, &found, what, err) < 0)
		return -1;
	if (v > FC_MAX_POLICIES) {
		fc_err_set(err, "all %d policy slots are in use", FC_MAX_POLICIES);
		return FC_STORE_REFUSED;
	}
	*slot = (uint32_t)v;
	return 0;
}

/* Why p can not have match: policy id has it, at p's layer. An ip=-only
 * match may have a policy at each layer; any other is nginx's alone. */
static void fc_policy_conflict(const struct fc_policy_spec *p, const char *match, int64_t id, struct fc_err *err)
{
	if (!fc_policy_ip_only(p))
		fc_err_set(err, "%s is already limited by policy %lld (one policy per match: change that one with "
				"'freqctl policy edit %lld')", match, (long long)id, (long long)id);
	else if (fc_policy_is_l7(p))
		fc_err_set(err, "%s is already limited in nginx by policy %lld (one policy per match at each layer; "
				"without --layer http, an ip= policy runs at XDP/TC)", match, (long long)id);
	else
		fc_err_set(err, "%s is already limited at XDP/TC by policy %lld (one policy per match at each layer; "
				"--layer http puts one in nginx beside it)", match, (long long)id);
}

int fc_store_policy_put(struct fc_store *st, const struct fc_policy_spec *p, int64_t now,
			struct fc_policy_row *out, struct fc_err *err)
{
	char match[FC_MATCH_LEN], rates[FC_TEXT_LEN], esc[FC_RATE_STRLEN];
	struct fc_policy_row old;
	int64_t v;
	bool found, have, ip;

	fc_match_format(p, match);
	fc_rates_format(p, rates);
	if (fc_query_int(st, FC_SQL_POL_CONFLICT,
			 FC_ARGS(FC_TEXT(match), FC_INT(p->id), FC_TEXT(fc_layer_names[fc_policy_layer(p)])), &v, &found,
			 "checking policy matches", err) < 0)
		return -1;
	if (found) {
		fc_policy_conflict(p, match, v, err);
		return FC_STORE_REFUSED;
	}
	/* One ip=* at XDP/TC, whatever its unit: the packet path has one. */
	if (p->kind == FC_MATCH_STAR && !fc_policy_is_l7(p)) {
		if (fc_query_int(st, FC_SQL_POL_STAR_CONFLICT, FC_ARGS(FC_INT(p->id)), &v, &found,
				 "checking policy matches", err) < 0)
			return -1;
		if (found) {
			fc_err_set(err,
				   "%s: policy %lld is the ip=* policy at XDP/TC, and there is one, whatever its "
				   "unit (change its --match with policy set %lld, or put this one in nginx with "
				   "--layer http)",
				   match, (long long)v, (long long)v);
			return FC_STORE_REFUSED;
		}
	}
	if (fc_store_policy_get(st, p->id, &old, &have, err) < 0)
		return -1;

	memset(out, 0, sizeof(*out));
	out->spec = *p;
	fc_policy_layer_canon(&out->spec);
	out->created = have ? old.created : now;
	out->updated = now;
	if (have) {
		char old_match[FC_MATCH_LEN];

		out->slot = old.slot;
		out->epoch = old.epoch;
		fc_match_format(&old.spec, old_match);
		/* A new key, packets turned requests, another algorithm (whose
		 * word means something else), another warm-up, a cap added or
		 * removed, or, with either, another number of rates (the ramp's
		 * word sits after the rates', a key's count of places after
		 * both), or a fleet's rate turned a node's or back (the words
		 * hold credit, or a count), or a fleet rate's unit (a window's
		 * or sliding key's word and Redis record are labelled with a
		 * window of it, "ahead" of any window of a shorter unit, which
		 * refuses; gcra's too, one rule): its buckets start afresh. */
		if (strcmp(old_match, match) || fc_policy_is_l7(&old.spec) != fc_policy_is_l7(p) ||
		    old.spec.fleet != p->fleet || (p->fleet && old.spec.rate[0].unit_secs != p->rate[0].unit_secs) ||
		    old.spec.algo != p->algo || old.spec.warmup != p->warmup || !old.spec.concurrency != !p->concurrency ||
		    ((p->warmup || p->concurrency) && old.spec.ntiers != p->ntiers))
			out->epoch = 0;
	} else {
		int rc = fc_slot_alloc(st, &out->slot, err);

		if (rc < 0)
			return rc;
	}
	if (!out->epoch) {
		if (fc_query_int(st, FC_SQL_EPOCH_NEXT, FC_NO_ARGS, &v, &found, "allocating an epoch", err) < 0)
			return -1;
		out->epoch = (uint32_t)v;
	}
	if (p->escalate.n)
		fc_rate_format(&p->escalate, esc);
	ip = p->kind == FC_MATCH_PREFIX && !p->ndims;
	return fc_exec(st, FC_SQL_POL_PUT,
		       FC_ARGS(FC_INT(p->id), FC_TEXT(match), FC_TEXT(rates), FC_INT_OR_NULL(p->burst),
			       FC_TEXT(fc_algo_name(p->algo)), FC_TEXT(fc_action_name(p->action)),
			       FC_TEXT(fc_count_name(p->count)), FC_INT_OR_NULL(p->new_sources), FC_INT(out->slot),
			       FC_INT(out->epoch), FC_INT(out->created), FC_INT(out->updated),
			       FC_INT_OR_NULL(p->delay_burst),
			       p->escalate.n ? FC_TEXT(esc) : FC_NULL,
			       p->escalate.n ? FC_INT(p->ban_ttl) : FC_NULL,
			       FC_TEXT(fc_layer_names[fc_policy_layer(p)]),
			       FC_INT_OR_NULL(p->max_keys), FC_INT_OR_NULL(p->new_keys), FC_INT_OR_NULL(p->concurrency),
			       FC_INT_OR_NULL(p->warmup), FC_INT_OR_NULL(p->override),
			       p->show_keys ? FC_INT(p->show_keys > 0) : FC_NULL, FC_INT_OR_NULL(p->fleet),
			       ip ? FC_INT(p->ip.family) : FC_NULL,
			       ip ? FC_PREFIX_ADDR(&p->ip) : FC_NULL, ip ? FC_INT(p->ip.len) : FC_NULL),
		       NULL, "writing policy", err);
}

int fc_store_policy_del(struct fc_store *st, uint32_t id, bool *found, struct fc_err *err)
{
	int64_t slot;

	/* By its slot alone: a row that is not valid can still be deleted. A
	 * database error is not "no such policy". */
	if (fc_query_int(st, FC_SQL_POL_SLOT, FC_ARGS(FC_INT(id)), &slot, found, "looking up policy", err) < 0)
		return -1;
	if (!*found)
		return 0;
	if (fc_exec(st, FC_SQL_POL_DEL, FC_ARGS(FC_INT(id)), NULL, "deleting policy", err) < 0)
		return -1;
	if (slot < 1 || slot > FC_MAX_POLICIES)
		return 0; /* a slot out of range was never one to give out again */
	return fc_exec(st, FC_SQL_POL_FREE, FC_ARGS(FC_INT(slot)), NULL, "freeing policy slot", err);
}

int fc_store_uid_ban_get(struct fc_store *st, const char *uid, int64_t now, int64_t *expires, bool *found,
			 struct fc_err *err)
{
	return fc_query_int(st, FC_SQL_UBAN_GET, FC_ARGS(FC_TEXT(uid), FC_INT(now)), expires, found,
			    "looking up uid ban", err);
}

int fc_store_uid_ban_put(struct fc_store *st, const struct fc_uid_ban *b, bool *existed, int64_t now,
			 struct fc_err *err)
{
	int64_t v;

	if (fc_store_uid_ban_get(st, b->uid, now, &v, existed, err) < 0)
		return -1;
	return fc_exec(st, FC_SQL_UBAN_PUT, FC_ARGS(FC_TEXT(b->uid), FC_INT(b->created), FC_INT_OR_NULL(b->expires)),
		       NULL, "writing uid ban", err);
}

int fc_store_uid_ban_del(struct fc_store *st, const char *uid, bool *found, struct fc_err *err)
{
	int64_t n = 0;
	int rc = fc_exec(st, FC_SQL_UBAN_DEL, FC_ARGS(FC_TEXT(uid)), &n, "deleting uid ban", err);

	*found = n > 0;
	return rc;
}

int fc_store_uid_ban_purge(struct fc_store *st, int64_t now, size_t *n, struct fc_err *err)
{
	int64_t c = 0;
	int rc = fc_exec(st, FC_SQL_UBAN_PURGE, FC_ARGS(FC_INT(now)), &c, "purging expired uid bans", err);

	*n = (size_t)c;
	return rc;
}

static int fc_uid_ban_read(struct fc_store *st, int id, void *row, struct fc_err *err)
{
	const char *uid = st->db->ops->col_text(st->db, id, 0);
	struct fc_uid_ban *b = row;

	if (!uid || !*uid || strlen(uid) > FC_SHM_MAX_VALUE)
		return fc_err_set(err, "store %s: corrupt uid ban row", st->db->name);
	memset(b, 0, sizeof(*b));
	snprintf(b->uid, sizeof(b->uid), "%s", uid);
	b->created = st->db->ops->col_int(st->db, id, 1);
	b->expires = st->db->ops->col_int(st->db, id, 2);
	return 0;
}

int fc_store_uid_ban_list(struct fc_store *st, int64_t now, struct fc_uid_ban **rows, size_t *n,
			  struct fc_err *err)
{
	return fc_collect(st, FC_SQL_UBAN_LIST, FC_ARGS(FC_INT(now)), sizeof(**rows), fc_uid_ban_read,
			  "listing uid bans", (void **)rows, n, err);
}

int fc_store_bans_clear(struct fc_store *st, struct fc_err *err)
{
	if (fc_exec(st, FC_SQL_BANS_CLEAR, FC_NO_ARGS, NULL, "clearing bans", err) < 0)
		return -1;
	return fc_exec(st, FC_SQL_UBANS_CLEAR, FC_NO_ARGS, NULL, "clearing uid bans", err);
}

int fc_store_data_version(struct fc_store *st, int64_t *v, struct fc_err *err)
{
	return st->db->ops->version(st->db, v, err);
}

int fc_store_watch_fd(struct fc_store *st)
{
	return st->db->ops->watch_fd(st->db);
}

static int fc_weight_read(struct fc_store *st, int id, void *out, struct fc_err *err)
{
	(void)err;
	*(double *)out = st->db->ops->col_real(st->db, id, 0);
	return 0;
}

int fc_store_node_weight(struct fc_store *st, const char *name, double *weight, struct fc_err *err)
{
	bool found;

	*weight = 1.0;
	if (fc_get_one(st, FC_SQL_NODE_GET, FC_ARGS(FC_TEXT(name)), fc_weight_read, weight, &found,
		       "reading node weight", err) < 0)
		return -1;
	if (!(*weight > 0 && *weight <= 1))
		return fc_err_set(err, "store %s: node %s: weight %g outside (0, 1]", st->db->name, name, *weight);
	return 0;
}

int fc_store_node_put(struct fc_store *st, const struct fc_node *n, struct fc_err *err)
{
	return fc_exec(st, FC_SQL_NODE_PUT, FC_ARGS(FC_TEXT(n->name), FC_REAL(n->weight)), NULL, "writing node",
		       err);
}

static int fc_node_read(struct fc_store *st, int id, void *row, struct fc_err *err)
{
	const char *name = st->db->ops->col_text(st->db, id, 0);
	struct fc_node *n = row;

	if (!name || !*name || strlen(name) >= sizeof(n->name))
		return fc_err_set(err, "store %s: corrupt node row", st->db->name);
	snprintf(n->name, sizeof(n->name), "%s", name);
	n->weight = st->db->ops->col_real(st->db, id, 1);
	return 0;
}

int fc_store_node_list(struct fc_store *st, struct fc_node **rows, size_t *n, struct fc_err *err)
{
	return fc_collect(st, FC_SQL_NODE_LIST, FC_NO_ARGS, sizeof(**rows), fc_node_read, "listing nodes",
			  (void **)rows, n, err);
}

int fc_store_nodes_clear(struct fc_store *st, struct fc_err *err)
{
	return fc_exec(st, FC_SQL_NODES_CLEAR, FC_NO_ARGS, NULL, "clearing nodes", err);
}

int fc_store_purge(struct fc_store *st, int64_t now, size_t *bans, size_t *sets, int64_t *next, struct fc_err *err)
{
	const char *what = "finding expired bans";
	int64_t first = 0;
	size_t uids = 0, allows = 0, fleet = 0;
	bool found;

	*bans = *sets = 0;
	*next = 0;
	if (fc_query_int(st, FC_SQL_FIRST_EXPIRY, FC_NO_ARGS, &first, &found, what, err) < 0)
		return -1;
	if (found && first <= now &&
	    (fc_store_ban_purge(st, now, bans, err) < 0 || fc_store_uid_ban_purge(st, now, &uids, err) < 0 ||
	     fc_store_allow_purge(st, now, &allows, err) < 0 || fc_store_set_purge(st, now, sets, err) < 0 ||
	     fc_store_fleet_nodes_purge(st, now * 1000 - FC_FLEET_NODES_KEEP_MS, &fleet, err) < 0 ||
	     fc_query_int(st, FC_SQL_FIRST_EXPIRY, FC_NO_ARGS, &first, &found, what, err) < 0))
		return -1;
	/* Nothing at or before now is left: the first expiry is the next. */
	*next = found ? first : 0;
	*bans += uids + allows;
	return 0;
}

/* ---- ban sets ---- */

int fc_set_name_check(const char *name, struct fc_err *err)
{
	size_t len = strlen(name);

	if (!len || len > FC_SET_NAME_MAX || strspn(name, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
						       "0123456789._-") != len || *name == '.' || *name == '-')
		return fc_err_set(err, "set \"%.*s\": expected 1 to %d of A-Z a-z 0-9 . _ - (not starting with . or -)",
				  FC_SET_NAME_MAX, name, FC_SET_NAME_MAX);
	return 0;
}

static int fc_set_read(struct fc_store *st, int id, void *row, struct fc_err *err)
{
	const struct fc_db_ops *o = st->db->ops;
	const char *name = o->col_text(st->db, id, 1);
	struct fc_ban_set *set = row;

	memset(set, 0, sizeof(*set));
	set->id = (uint32_t)o->col_int(st->db, id, 0);
	if (!name || fc_set_name_check(name, err) < 0 || set->id < 1 || set->id > FC_MAX_SETS)
		return fc_err_set(err, "store %s: corrupt ban set row %u", st->db->name, set->id);
	snprintf(set->name, sizeof(set->name), "%s", name);
	set->created = o->col_int(st->db, id, 2);
	set->updated = o->col_int(st->db, id, 3);
	set->expires = o->col_int(st->db, id, 4);
	set->size = (uint64_t)o->col_int(st->db, id, 5);
	return 0;
}

int fc_store_set_get(struct fc_store *st, const char *name, int64_t now, struct fc_ban_set *set, bool *found,
		     struct fc_err *err)
{
	return fc_get_one(st, FC_SQL_SET_GET, FC_ARGS(FC_TEXT(name), FC_INT(now)), fc_set_read, set, found,
			  "looking up ban set", err);
}

int fc_store_set_list(struct fc_store *st, int64_t now, struct fc_ban_set **rows, size_t *n, struct fc_err *err)
{
	return fc_collect(st, FC_SQL_SET_LIST, FC_ARGS(FC_INT(now)), sizeof(**rows), fc_set_read, "listing ban sets",
			  (void **)rows, n, err);
}

int fc_store_set_put(struct fc_store *st, struct fc_ban_set *set, struct fc_err *err)
{
	int64_t v = 0;
	bool found;

	if (!set->id) {
		if (fc_query_int(st, FC_SQL_SET_NEW_ID, FC_NO_ARGS, &v, &found, "allocating a ban set", err) < 0)
			return -1;
		if (v < 1 || v > FC_MAX_SETS) {
			fc_err_set(err, "all %d ban sets are in use (freqctl ban del --set NAME frees one)", FC_MAX_SETS);
			return FC_STORE_REFUSED;
		}
		set->id = (uint32_t)v;
	}
	return fc_exec(st, FC_SQL_SET_PUT,
		       FC_ARGS(FC_INT(set->id), FC_TEXT(set->name), FC_INT(set->created), FC_INT(set->updated),
			       FC_INT_OR_NULL(set->expires), FC_INT(set->size)),
		       NULL, "writing ban set", err);
}

int fc_store_set_del(struct fc_store *st, uint32_t id, struct fc_err *err)
{
	if (fc_exec(st, FC_SQL_SET_EMPTY, FC_ARGS(FC_INT(id)), NULL, "deleting a ban set's members", err) < 0)
		return -1;
	return fc_exec(st, FC_SQL_SET_DEL, FC_ARGS(FC_INT(id)), NULL, "deleting ban set", err);
}

int fc_store_set_purge(struct fc_store *st, int64_t now, size_t *n, struct fc_err *err)
{
	int64_t c = 0;

	*n = 0;
	if (fc_exec(st, FC_SQL_SET_PURGE_MEMBERS, FC_ARGS(FC_INT(now)), NULL, "purging lapsed ban sets", err) < 0 ||
	    fc_exec(st, FC_SQL_SET_PURGE, FC_ARGS(FC_INT(now)), &c, "purging lapsed ban sets", err) < 0)
		return -1;
	*n = (size_t)c;
	return 0;
}

/* Reads an address key (columns family, addr, len from col). */
static int fc_key_read(struct fc_store *st, int id, int col, struct fc_prefix *p, struct fc_err *err)
{
	const struct fc_db_ops *o = st->db->ops;
	int family = (int)o->col_int(st->db, id, col), len = (int)o->col_int(st->db, id, col + 2);
	int max = family == 4 ? 32 : 128;
	size_t bytes;
	const void *addr = o->col_blob(st->db, id, col + 1, &bytes);

	if ((family != 4 && family != 6) || !addr || bytes != (size_t)max / 8 || len < 0 || len > max)
		return fc_err_set(err, "store %s: corrupt address key (family %d, %zu address bytes, length %d)",
				  st->db->name, family, bytes, len);
	memset(p, 0, sizeof(*p));
	p->family = (uint8_t)family;
	p->len = (uint8_t)len;
	memcpy(p->a, addr, bytes);
	return 0;
}

static int fc_set_key_read(struct fc_store *st, int id, void *row, struct fc_err *err)
{
	return fc_key_read(st, id, 0, row, err);
}

int fc_store_set_keys(struct fc_store *st, uint32_t id, struct fc_prefix **keys, size_t *n, struct fc_err *err)
{
	return fc_collect(st, FC_SQL_SET_KEYS, FC_ARGS(FC_INT(id)), sizeof(**keys), fc_set_key_read,
			  "reading a ban set", (void **)keys, n, err);
}

int fc_store_set_bans(struct fc_store *st, uint32_t id, int64_t now, struct fc_ban_row **rows, size_t *n,
		      struct fc_err *err)
{
	return fc_collect(st, FC_SQL_SET_BANS, FC_ARGS(FC_INT(id), FC_INT(now)), sizeof(**rows), fc_ban_row_read,
			  "listing a ban set", (void **)rows, n, err);
}

int fc_store_set_members_put(struct fc_store *st, uint32_t id, const struct fc_prefix *keys, size_t n,
			     int64_t created, struct fc_store_progress *prog, struct fc_err *err)
{
	return fc_exec_keys(st, FC_SQL_SET_MEMBERS_PUT, keys, n, FC_ARGS(FC_INT(id), FC_INT(created)), prog, NULL,
			    "writing a ban set's members", err);
}

int fc_store_set_members_del(struct fc_store *st, uint32_t id, const struct fc_prefix *keys, size_t n,
			     struct fc_store_progress *prog, struct fc_err *err)
{
	return fc_exec_keys(st, FC_SQL_SET_MEMBERS_DEL, keys, n, FC_ARGS(FC_INT(id)), prog, NULL,
			    "deleting a ban set's members", err);
}

int fc_store_set_holders(struct fc_store *st, const struct fc_prefix *p, int64_t now, char *names, size_t size,
			 struct fc_err *err)
{
	const struct fc_db_ops *o = st->db->ops;
	const char *what = "looking up ban sets";
	size_t off = 0;
	int rc = o->run(st->db, FC_SQL_SET_HOLDERS, FC_ARGS(FC_PREFIX_ARGS(p), FC_INT(now)), what, err);

	names[0] = '\0';
	while (rc == 0 && (rc = o->next(st->db, FC_SQL_SET_HOLDERS, what, err)) == 1) {
		const char *name = o->col_text(st->db, FC_SQL_SET_HOLDERS, 0);

		rc = 0;
		if (name && off < size)
			off += (size_t)snprintf(names + off, size - off, "%s%s", off ? ", " : "", name);
	}
	o->done(st->db, FC_SQL_SET_HOLDERS);
	return rc < 0 ? -1 : 0;
}

/* ---- the change log ---- */

static int fc_log_head_read(struct fc_store *st, int id, void *row, struct fc_err *err)
{
	const struct fc_db_ops *o = st->db->ops;
	struct fc_store_log *log = row;
	int64_t head = o->col_int(st->db, id, 2);

	log->id = (uint64_t)o->col_int(st->db, id, 0);
	log->pruned = (uint64_t)o->col_int(st->db, id, 1);
	log->head = head > 0 && (uint64_t)head > log->pruned ? (uint64_t)head : log->pruned;
	if (!log->id)
		return fc_err_set(err, "store %s: no store_id in meta (the change log needs one)", st->db->name);
	return 0;
}

int fc_store_log_head(struct fc_store *st, struct fc_store_log *log, struct fc_err *err)
{
	bool found;

	if (fc_get_one(st, FC_SQL_LOG_HEAD, FC_NO_ARGS, fc_log_head_read, log, &found, "reading the change log", err))
		return -1;
	return found ? 0 : fc_err_set(err, "store %s: reading the change log: no result", st->db->name);
}

int fc_store_log_prune(struct fc_store *st, const struct fc_store_log *log, struct fc_err *err)
{
	uint64_t upto;

	if (log->head - log->pruned <= 2ULL * FC_STORE_LOG_KEEP)
		return 0;
	upto = log->head - FC_STORE_LOG_KEEP;
	if (fc_exec(st, FC_SQL_LOG_PRUNE, FC_ARGS(FC_INT(upto)), NULL, "pruning the change log", err) < 0)
		return -1;
	return fc_exec(st, FC_SQL_LOG_PRUNED, FC_ARGS(FC_INT(upto)), NULL, "pruning the change log", err);
}

/* A row of FC_SQL_DELTA_KEYS or of the prefix queries. */
static int fc_key_rule_read(struct fc_store *st, int id, void *row, struct fc_err *err)
{
	const struct fc_db_ops *o = st->db->ops;
	struct fc_key_rule *r = row;
	const char *layer;

	memset(r, 0, sizeof(*r));
	if (fc_key_read(st, id, 0, &r->p, err) < 0)
		return -1;
	r->src = (int32_t)o->col_int(st->db, id, 3);
	r->expires = o->col_int(st->db, id, 4);
	r->slot = (uint32_t)o->col_int(st->db, id, 5);
	layer = o->col_text(st->db, id, 6);
	r->http = layer && !strcmp(layer, fc_layer_names[FC_LAYER_HTTP]);
	if (r->src < FC_SRC_KEY || r->src > FC_MAX_SETS || (r->src == FC_SRC_POLICY && (r->slot < 1 || r->slot > FC_MAX_POLICIES)))
		return fc_err_set(err, "store %s: corrupt rule (source %d, slot %u)", st->db->name, r->src, r->slot);
	return 0;
}

static int fc_uid_change_read(struct fc_store *st, int id, void *row, struct fc_err *err)
{
	const struct fc_db_ops *o = st->db->ops;
	const char *uid = o->col_text(st->db, id, 0);
	struct fc_uid_change *u = row;

	if (!uid || !*uid || strlen(uid) > FC_SHM_MAX_VALUE)
		return fc_err_set(err, "store %s: corrupt uid in the change log", st->db->name);
	memset(u, 0, sizeof(*u));
	snprintf(u->uid, sizeof(u->uid), "%s", uid);
	u->expires = o->col_int(st->db, id, 1);
	u->live = o->col_int(st->db, id, 2) != 0;
	return 0;
}

/* Whether the ip_* columns (from col) of policy p's row say what its match
 * does: written by freqctl they do, by a script maybe not. */
static bool fc_policy_ip_agrees(struct fc_store *st, int id, int col, const struct fc_policy_spec *p)
{
	const struct fc_db_ops *o = st->db->ops;
	bool ip = p->kind == FC_MATCH_PREFIX && !p->ndims;
	const void *addr;
	size_t len;

	if (!ip)
		return o->col_null(st->db, id, col);
	addr = o->col_blob(st->db, id, col + 1, &len);
	return o->col_int(st->db, id, col) == p->ip.family && o->col_int(st->db, id, col + 2) == p->ip.len && addr &&
	       len == (p->ip.family == 4 ? 4u : 16u) && !memcmp(addr, p->ip.a, len);
}

/* A changed (policy, slot) and the row in the slot (FC_POL_COLS first). A
 * row not valid as written holds nothing: it is reported, not published. */
static int fc_policy_change_read(struct fc_store *st, int id, void *row, struct fc_err *err)
{
	const struct fc_db_ops *o = st->db->ops;
	struct fc_policy_change *c = row;
	struct fc_err why;

	(void)err;
	memset(c, 0, sizeof(*c));
	c->id = (uint32_t)o->col_int(st->db, id, FC_POL_NCOLS);
	c->slot = (uint32_t)o->col_int(st->db, id, FC_POL_NCOLS + 1);
	c->star = o->col_int(st->db, id, FC_POL_NCOLS + 2) != 0;
	c->l7 = o->col_int(st->db, id, FC_POL_NCOLS + 3) != 0;
	if (o->col_null(st->db, id, 0))
		return 0;
	if (fc_policy_row_read(st, id, &c->row, &why) == FC_ROW_BAD) {
		if (!st->bad_policies++)
			snprintf(st->bad_why, sizeof(st->bad_why), "%s", why.msg);
		return 0;
	}
	c->found = true;
	c->ip_stale = !fc_policy_ip_agrees(st, id, FC_POL_NCOLS + 4, &c->row.spec);
	return 0;
}

struct fc_other_change {
	char kind[8];
	char txt[FC_NODE_NAME_MAX + 1];
	uint32_t id;
};

static int fc_other_change_read(struct fc_store *st, int id, void *row, struct fc_err *err)
{
	const struct fc_db_ops *o = st->db->ops;
	const char *kind = o->col_text(st->db, id, 0), *txt = o->col_text(st->db, id, 1);
	struct fc_other_change *c = row;

	(void)err;
	memset(c, 0, sizeof(*c));
	snprintf(c->kind, sizeof(c->kind), "%s", kind ? kind : "");
	snprintf(c->txt, sizeof(c->txt), "%s", txt ? txt : "");
	c->id = (uint32_t)o->col_int(st->db, id, 2);
	return 0;
}

void fc_delta_free(struct fc_delta *d)
{
	free(d->keys);
	free(d->uids);
	free(d->pols);
	free(d->sets);
	memset(d, 0, sizeof(*d));
}

/* The kinds of change in (from, to], each node's and set's apart. */
static int fc_change_kinds(struct fc_store *st, uint64_t from, uint64_t to, struct fc_other_change **v, size_t *n,
			   struct fc_err *err)
{
	return fc_collect(st, FC_SQL_DELTA_KINDS, FC_ARGS(FC_INT(from), FC_INT(to)), sizeof(**v), fc_other_change_read,
			  "reading the change log", (void **)v, n, err);
}

int fc_store_policies_changed(struct fc_store *st, uint64_t from, uint64_t to, bool *changed, struct fc_err *err)
{
	struct fc_other_change *other = NULL;
	size_t n = 0, i;

	*changed = false;
	if (fc_change_kinds(st, from, to, &other, &n, err) < 0)
		return -1;
	for (i = 0; i < n; i++)
		*changed |= !strcmp(other[i].kind, "policy") || !strcmp(other[i].kind, "reset");
	free(other);
	return 0;
}

int fc_store_delta(struct fc_store *st, uint64_t from, uint64_t to, int64_t now, const char *node,
		   struct fc_delta *d, struct fc_err *err)
{
	struct fc_other_change *other = NULL;
	size_t nother = 0, i;
	bool keys = false, uids = false, pols = false;
	int rc = -1;

	memset(d, 0, sizeof(*d));
	st->bad_policies = 0;
	if (fc_change_kinds(st, from, to, &other, &nother, err) < 0)
		goto out;
	d->sets = calloc(nother ? nother : 1, sizeof(*d->sets));
	if (!d->sets) {
		fc_err_set(err, "store %s: out of memory reading the change log", st->db->name);
		goto out;
	}
	for (i = 0; i < nother; i++) {
		const char *kind = other[i].kind;

		d->reset |= !strcmp(kind, "reset");
		d->allows |= !strcmp(kind, "allow");
		d->weight |= !strcmp(kind, "node") && !strcmp(other[i].txt, node);
		d->fleet |= !strcmp(kind, "fleet");
		if (!strcmp(kind, "set") && strcmp(other[i].txt, "upd"))
			d->sets[d->nsets++] = other[i].id;
		uids |= !strcmp(kind, "uid");
		pols |= !strcmp(kind, "policy");
		/* A ban's, a set member's, a policy's (and a kind freqctl does
		 * not write, as the keys query reads any with an address). */
		keys |= strcmp(kind, "reset") && strcmp(kind, "allow") && strcmp(kind, "node") && strcmp(kind, "set") &&
			strcmp(kind, "uid") && strcmp(kind, "fleet");
	}
	if ((keys && fc_collect(st, FC_SQL_DELTA_KEYS, FC_ARGS(FC_INT(from), FC_INT(to), FC_INT(now)), sizeof(*d->keys),
				fc_key_rule_read, "reading changed bans", (void **)&d->keys, &d->nkeys, err) < 0) ||
	    (uids && fc_collect(st, FC_SQL_DELTA_UIDS, FC_ARGS(FC_INT(from), FC_INT(to), FC_INT(now)), sizeof(*d->uids),
				fc_uid_change_read, "reading changed uid bans", (void **)&d->uids, &d->nuids, err) < 0) ||
	    (pols && fc_collect(st, FC_SQL_DELTA_POLICIES, FC_ARGS(FC_INT(from), FC_INT(to)), sizeof(*d->pols),
				fc_policy_change_read, "reading changed policies", (void **)&d->pols, &d->npols,
				err) < 0))
		goto out;
	for (i = 0; i < d->npols; i++)
		d->ip_stale |= d->pols[i].ip_stale;
	rc = 0;
out:
	free(other);
	if (rc)
		fc_delta_free(d);
	return rc;
}

/* The last address of p, its host bits set. */
static void fc_prefix_last(const struct fc_prefix *p, uint8_t hi[16])
{
	int b;

	memcpy(hi, p->a, 16);
	for (b = p->len; b < (p->family == 4 ? 32 : 128); b++)
		hi[b / 8] |= (uint8_t)(0x80 >> (b % 8));
}

int fc_store_prefix_rules(struct fc_store *st, const struct fc_prefix *p, int64_t now, struct fc_key_rule **rows,
			  size_t *n, struct fc_err *err)
{
	const int full = p->family == 4 ? 32 : 128, bytes = full / 8;
	struct fc_val args[3 + 128];
	uint8_t lo[16], hi[16], masked[128][16];
	int i;

	memcpy(lo, p->a, 16);
	fc_prefix_last(p, hi);
	args[0] = FC_BLOB(lo, (size_t)bytes);
	args[1] = FC_BLOB(hi, (size_t)bytes);
	args[2] = FC_INT(now);
	for (i = 0; i < full; i++) {
		memset(masked[i], 0, 16);
		memcpy(masked[i], p->a, (size_t)(i / 8));
		if (i % 8)
			masked[i][i / 8] = p->a[i / 8] & (uint8_t)(0xff << (8 - i % 8));
		args[3 + i] = FC_BLOB(masked[i], (size_t)bytes);
	}
	return fc_collect(st, p->family == 4 ? FC_SQL_PFX4 : FC_SQL_PFX6, args, 3 + full, sizeof(**rows),
			  fc_key_rule_read, "reading prefix rules", (void **)rows, n, err);
}

int fc_store_exact_policies4(struct fc_store *st, const struct fc_prefix *p, struct fc_key_rule **rows, size_t *n,
			      struct fc_err *err)
{
	uint8_t hi[16];

	fc_prefix_last(p, hi);
	return fc_collect(st, FC_SQL_EXACT_POL4, FC_ARGS(FC_BLOB(p->a, 4), FC_BLOB(hi, 4)), sizeof(**rows),
			  fc_key_rule_read, "reading address policies", (void **)rows, n, err);
}

int fc_store_prefix_len_used(struct fc_store *st, const struct fc_prefix *p, int64_t now, bool *used,
			     struct fc_err *err)
{
	int64_t one;

	return fc_query_int(st, FC_SQL_PFX_LEN_USED, FC_ARGS(FC_INT(p->family), FC_INT(p->len), FC_INT(now)), &one, used,
			    "looking up a prefix length", err);
}

static int fc_index_read(struct fc_store *st, int id, void *row, struct fc_err *err)
{
	(void)err;
	*(size_t *)row = (size_t)st->db->ops->col_int(st->db, id, 0);
	return 0;
}

int fc_store_exact_in(struct fc_store *st, const uint32_t *p24, size_t n, int64_t now, size_t **held,
		      size_t *nheld, struct fc_err *err)
{
	uint8_t *ranges = NULL;
	size_t i;
	int rc;

	*held = NULL;
	*nheld = 0;
	if (!n)
		return 0;
	if (!(ranges = malloc(n * 8)))
		return fc_err_set(err, "store %s: out of memory looking up the exact addresses of %zu /24s",
				  st->db->name, n);
	for (i = 0; i < n; i++) {
		uint8_t *r = ranges + i * 8;

		r[0] = r[4] = (uint8_t)(p24[i] >> 16);
		r[1] = r[5] = (uint8_t)(p24[i] >> 8);
		r[2] = r[6] = (uint8_t)p24[i];
		r[3] = 0;
		r[7] = 0xff;
	}
	rc = fc_collect(st, FC_SQL_EXACT_IN, FC_ARGS(FC_BLOB(ranges, n * 8), FC_INT(now)), sizeof(**held),
			fc_index_read, "looking up the exact addresses of /24s", (void **)held, nheld, err);
	free(ranges);
	return rc;
}

int fc_store_policy_ip_fix(struct fc_store *st, const struct fc_policy_spec *p, struct fc_err *err)
{
	bool ip = p->kind == FC_MATCH_PREFIX && !p->ndims;

	return fc_exec(st, FC_SQL_POL_IP_SET,
		       FC_ARGS(FC_INT(p->id), ip ? FC_INT(p->ip.family) : FC_NULL, ip ? FC_PREFIX_ADDR(&p->ip) : FC_NULL,
			       ip ? FC_INT(p->ip.len) : FC_NULL),
		       NULL, "filling a policy's ip columns", err);
}

int fc_store_policy_star(struct fc_store *st, struct fc_policy_row *row, bool *found, struct fc_err *err)
{
	int rc = fc_get_one(st, FC_SQL_POL_STAR, FC_NO_ARGS, fc_policy_row_read, row, found, "looking up the ip=* policy",
			    err);

	if (rc == FC_ROW_BAD) /* not valid as written: not published */
		*found = false;
	return rc < 0 ? -1 : 0;
}

/* A policy row (id, match, ip_* columns) whose ip_* columns do not say what
 * its match does; FC_ROW_SKIP for the others and for a match not valid as
 * written (reported when the policy is read). */
static int fc_policy_ip_stale_read(struct fc_store *st, int id, void *row, struct fc_err *err)
{
	const char *match = st->db->ops->col_text(st->db, id, 1);
	struct fc_policy_spec *p = row;
	struct fc_err why;

	(void)err;
	memset(p, 0, sizeof(*p));
	if (!match || fc_match_parse(match, p, &why) < 0)
		return FC_ROW_SKIP;
	p->id = (uint32_t)st->db->ops->col_int(st->db, id, 0);
	return fc_policy_ip_agrees(st, id, 2, p) ? FC_ROW_SKIP : 0;
}

int fc_store_policy_ip_check(struct fc_store *st, struct fc_err *err)
{
	struct fc_policy_spec *rows = NULL;
	size_t n = 0, i;
	int rc = fc_collect(st, FC_SQL_POL_IP_ALL, FC_NO_ARGS, sizeof(*rows), fc_policy_ip_stale_read,
			    "checking policies' ip columns", (void **)&rows, &n, err);

	for (i = 0; rc == 0 && i < n; i++)
		rc = fc_store_policy_ip_fix(st, &rows[i], err);
	free(rows);
	return rc;
}

struct fc_policy_match {
	uint32_t id;
	char match[FC_MATCH_LEN];
};

static int fc_policy_match_read(struct fc_store *st, int id, void *row, struct fc_err *err)
{
	const char *match = st->db->ops->col_text(st->db, id, 1);
	struct fc_policy_match *m = row;

	(void)err;
	m->id = (uint32_t)st->db->ops->col_int(st->db, id, 0);
	snprintf(m->match, sizeof(m->match), "%s", match ? match : "");
	return 0;
}

/* Fills the ip_* columns of rows that lack them (written before they
 * existed), once: the prefix queries find policies by them. */
static int fc_policy_ip_fill(struct fc_store *st, struct fc_err *err)
{
	struct fc_policy_match *rows = NULL;
	const char *what = "filling policies' ip columns";
	size_t n = 0, i;
	int64_t v = 1;
	bool found;
	int rc = -1;

	if (fc_query_int(st, FC_SQL_META_GET, FC_ARGS(FC_TEXT("policy_ip")), &v, &found, what, err) < 0)
		return -1;
	if (!found || v)
		return 0;
	if (fc_store_begin(st, err) < 0)
		return -1;
	if (fc_query_int(st, FC_SQL_META_GET, FC_ARGS(FC_TEXT("policy_ip")), &v, &found, what, err) < 0 ||
	    fc_collect(st, FC_SQL_POL_IP_TODO, FC_NO_ARGS, sizeof(*rows), fc_policy_match_read, what, (void **)&rows,
		       &n, err) < 0)
		goto out;
	for (i = 0; i < n && !v; i++) {
		struct fc_policy_spec p = { .id = rows[i].id };
		struct fc_err why;

		if (fc_match_parse(rows[i].match, &p, &why) < 0 || p.kind != FC_MATCH_PREFIX || p.ndims)
			continue; /* reported as not valid when read */
		if (fc_store_policy_ip_fix(st, &p, err) < 0)
			goto out;
	}
	if (fc_exec(st, FC_SQL_META_SET, FC_ARGS(FC_TEXT("policy_ip"), FC_INT(1)), NULL, what, err) < 0)
		goto out;
	rc = fc_store_commit(st, err);
out:
	if (rc)
		fc_store_rollback(st);
	free(rows);
	return rc;
}

/* An allow entry's key: family, address, length, uid. */
#define FC_ALLOW_ARGS(r)                                                                                   \
	FC_INT((r)->p.family), FC_BLOB((r)->p.a, (r)->p.family == 4 ? 4 : (r)->p.family == 6 ? 16 : 0), \
		FC_INT((r)->p.len), FC_TEXT((r)->p.family ? "" : (r)->uid)

int fc_store_allow_put(struct fc_store *st, const struct fc_allow_row *row, int64_t now, bool *existed,
		       struct fc_err *err)
{
	int64_t v;

	if (fc_query_int(st, FC_SQL_ALLOW_GET, FC_ARGS(FC_ALLOW_ARGS(row), FC_INT(now)), &v, existed,
			 "looking up allow entry", err) < 0)
		return -1;
	return fc_exec(st, FC_SQL_ALLOW_PUT,
		       FC_ARGS(FC_ALLOW_ARGS(row), FC_INT(row->created), FC_INT_OR_NULL(row->expires),
			       row->note[0] ? FC_TEXT(row->note) : (struct fc_val){ .type = FC_VAL_NULL }),
		       NULL, "writing allow entry", err);
}

int fc_store_allow_del(struct fc_store *st, const struct fc_allow_row *key, bool *found, struct fc_err *err)
{
	int64_t n = 0;
	int rc = fc_exec(st, FC_SQL_ALLOW_DEL, FC_ARGS(FC_ALLOW_ARGS(key)), &n, "deleting allow entry", err);

	*found = n > 0;
	return rc;
}

int fc_store_allow_purge(struct fc_store *st, int64_t now, size_t *n, struct fc_err *err)
{
	int64_t c = 0;
	int rc = fc_exec(st, FC_SQL_ALLOW_PURGE, FC_ARGS(FC_INT(now)), &c, "purging expired allow entries", err);

	*n = (size_t)c;
	return rc;
}

/* Reads one allow row; rejects what this version never writes. */
static int fc_allow_row_read(struct fc_store *st, int id, void *out, struct fc_err *err)
{
	const struct fc_db_ops *o = st->db->ops;
	struct fc_allow_row *row = out;
	int family = (int)o->col_int(st->db, id, 0), len = (int)o->col_int(st->db, id, 2);
	const char *uid = o->col_text(st->db, id, 3), *note = o->col_text(st->db, id, 6);
	int max = family == 4 ? 32 : 128;
	size_t bytes = 0;
	const void *addr = o->col_blob(st->db, id, 1, &bytes);
	bool ok;

	if (family == 0)
		ok = uid && *uid && strlen(uid) <= FC_SHM_MAX_VALUE && !bytes && !len;
	else
		ok = (family == 4 || family == 6) && addr && bytes == (size_t)max / 8 && len >= 1 && len <= max &&
		     uid && !*uid;
	if (!ok || (note && strlen(note) > FC_ALLOW_NOTE_MAX))
		return fc_err_set(err, "store %s: corrupt allow row (family %d, %zu address bytes, length %d)",
				  st->db->name, family, bytes, len);
	memset(row, 0, sizeof(*row));
	row->p.family = (uint8_t)family;
	row->p.len = (uint8_t)len;
	if (family)
		memcpy(row->p.a, addr, bytes);
	else
		snprintf(row->uid, sizeof(row->uid), "%s", uid);
	row->created = o->col_int(st->db, id, 4);
	row->expires = o->col_int(st->db, id, 5);
	snprintf(row->note, sizeof(row->note), "%s", note ? note : "");
	return 0;
}

int fc_store_allow_list(struct fc_store *st, int64_t now, struct fc_allow_row **rows, size_t *n,
			struct fc_err *err)
{
	return fc_collect(st, FC_SQL_ALLOW_LIST, FC_ARGS(FC_INT(now)), sizeof(**rows), fc_allow_row_read,
			  "listing allow entries", (void **)rows, n, err);
}

int fc_store_allows_clear(struct fc_store *st, struct fc_err *err)
{
	return fc_exec(st, FC_SQL_ALLOWS_CLEAR, FC_NO_ARGS, NULL, "clearing allow entries", err);
}

int fc_store_fleet_secret(struct fc_store *st, uint64_t key[2], struct fc_err *err)
{
	static const char *const names[2] = { "fleet_k0", "fleet_k1" };
	const char *what = "reading the fleet's key";
	uint64_t made[2];
	bool found[2];
	int64_t v[2];
	int i, tries;

	for (tries = 0; tries < 2; tries++) {
		for (i = 0; i < 2; i++)
			if (fc_query_int(st, FC_SQL_META_GET, FC_ARGS(FC_TEXT(names[i])), &v[i], &found[i], what, err) < 0)
				return -1;
		if (found[0] && found[1]) {
			key[0] = (uint64_t)v[0];
			key[1] = (uint64_t)v[1];
			return 0;
		}
		if (tries)
			break;
		/* A secret: the kernel's random words, not the database's. */
		if (getrandom(made, sizeof(made), 0) != (ssize_t)sizeof(made))
			return fc_err_set(err, "store %s: making the fleet's key: %s", st->db->name, strerror(errno));
		if (fc_exec(st, FC_SQL_FLEET_KEY_PUT, FC_ARGS(FC_INT((int64_t)made[0]), FC_INT((int64_t)made[1])), NULL,
			    "making the fleet's key", err) < 0)
			return -1;
	}
	return fc_err_set(err, "store %s: the fleet's key is half there (meta fleet_k0, fleet_k1)", st->db->name);
}

int fc_store_fleet_node_set(struct fc_store *st, const char *name, uint32_t weight, int64_t now_ms,
			    struct fc_err *err)
{
	int64_t from = now_ms + FC_FLEET_NODE_DELAY_MS, no = 0;
	bool found;

	if (fc_exec(st, FC_SQL_FLEET_DROP_LATER, FC_ARGS(FC_TEXT(name), FC_INT(from)), NULL, "writing the fleet's nodes",
		    err) < 0 ||
	    fc_exec(st, FC_SQL_FLEET_CLOSE, FC_ARGS(FC_TEXT(name), FC_INT(from)), NULL, "writing the fleet's nodes",
		    err) < 0)
		return -1;
	if (!weight)
		return 0;
	if (fc_query_int(st, FC_SQL_FLEET_NO, FC_ARGS(FC_TEXT(name)), &no, &found, "numbering a fleet node", err) < 0)
		return -1;
	if (!found) {
		fc_err_set(err, "node %s: all %d fleet node numbers are in use", name, FC_FLEET_NODES_MAX);
		return FC_STORE_REFUSED;
	}
	return fc_exec(st, FC_SQL_FLEET_OPEN, FC_ARGS(FC_TEXT(name), FC_INT(no), FC_INT(weight), FC_INT(from)), NULL,
		       "writing the fleet's nodes", err);
}

/* Node n's weight as the fleet's node set counts it: micro-units, at least 1. */
static uint32_t fc_fleet_weight_of(double weight)
{
	double micro = weight * FC_FLEET_WEIGHT_ONE + 0.5;

	if (micro < 1)
		return 1;
	return micro > FC_FLEET_WEIGHT_ONE ? FC_FLEET_WEIGHT_ONE : (uint32_t)micro;
}

/* The fleet's node set follows a node's weight (0: it leaves): a row only
 * when the weight it has from its last change on is another. */
static int fc_fleet_node_follow(struct fc_store *st, const char *name, uint32_t micro, int64_t now_ms,
				struct fc_err *err)
{
	int64_t open = 0;
	bool found;

	if (fc_query_int(st, FC_SQL_FLEET_WEIGHT, FC_ARGS(FC_TEXT(name)), &open, &found, "reading the fleet's nodes",
			 err) < 0)
		return -1;
	if (found ? open == micro : !micro)
		return 0;
	return fc_store_fleet_node_set(st, name, micro, now_ms, err);
}

int fc_store_node_weigh(struct fc_store *st, const struct fc_node *n, int64_t now_ms, struct fc_err *err)
{
	if (fc_store_node_put(st, n, err) < 0)
		return -1;
	return fc_fleet_node_follow(st, n->name, fc_fleet_weight_of(n->weight), now_ms, err);
}

int fc_store_node_join(struct fc_store *st, const char *name, int64_t now_ms, struct fc_err *err)
{
	int64_t open = 0;
	double weight;
	bool found;

	if (fc_query_int(st, FC_SQL_FLEET_WEIGHT, FC_ARGS(FC_TEXT(name)), &open, &found, "reading the fleet's nodes",
			 err) < 0 ||
	    fc_store_node_weight(st, name, &weight, err) < 0)
		return -1;
	return found ? 0 : fc_store_fleet_node_set(st, name, fc_fleet_weight_of(weight), now_ms, err);
}

int fc_store_node_del(struct fc_store *st, const char *name, int64_t now_ms, bool *found, struct fc_err *err)
{
	int64_t changes = 0, open = 0;
	bool in_set;

	if (fc_exec(st, FC_SQL_NODE_DEL, FC_ARGS(FC_TEXT(name)), &changes, "deleting node", err) < 0 ||
	    fc_query_int(st, FC_SQL_FLEET_WEIGHT, FC_ARGS(FC_TEXT(name)), &open, &in_set, "reading the fleet's nodes",
			 err) < 0)
		return -1;
	*found = changes > 0 || in_set;
	return in_set ? fc_store_fleet_node_set(st, name, 0, now_ms, err) : 0;
}

int fc_store_nodes_follow(struct fc_store *st, int64_t now_ms, struct fc_err *err)
{
	struct fc_fleet_node *set = NULL;
	struct fc_node *nodes = NULL;
	size_t nset = 0, nn = 0, i;
	double weight;
	int rc = -1;

	/* INT64_MAX: the open rows, those in the set from its last change on. */
	if (fc_store_node_list(st, &nodes, &nn, err) < 0 ||
	    fc_store_fleet_nodes_at(st, INT64_MAX, &set, &nset, err) < 0)
		goto out;
	for (i = 0; i < nn; i++)
		if (fc_fleet_node_follow(st, nodes[i].name, fc_fleet_weight_of(nodes[i].weight), now_ms, err) < 0)
			goto out;
	for (i = 0; i < nset; i++)
		if (fc_store_node_weight(st, set[i].name, &weight, err) < 0 ||
		    fc_fleet_node_follow(st, set[i].name, fc_fleet_weight_of(weight), now_ms, err) < 0)
			goto out;
	rc = 0;
out:
	free(nodes);
	free(set);
	return rc;
}

static int fc_fleet_node_read(struct fc_store *st, int id, void *row, struct fc_err *err)
{
	const struct fc_db_ops *o = st->db->ops;
	const char *name = o->col_text(st->db, id, 0);
	struct fc_fleet_node *f = row;

	memset(f, 0, sizeof(*f));
	if (!name || strlen(name) > FC_NODE_NAME_MAX)
		return fc_err_set(err, "store %s: a fleet node's name is corrupt", st->db->name);
	snprintf(f->name, sizeof(f->name), "%s", name);
	f->no = (uint32_t)o->col_int(st->db, id, 1);
	f->weight = (uint32_t)o->col_int(st->db, id, 2);
	f->since = o->col_int(st->db, id, 3);
	f->until = o->col_int(st->db, id, 4);
	return 0;
}

int fc_store_fleet_nodes_at(struct fc_store *st, int64_t at_ms, struct fc_fleet_node **rows, size_t *n,
			    struct fc_err *err)
{
	return fc_collect(st, FC_SQL_FLEET_AT, FC_ARGS(FC_INT(at_ms)), sizeof(**rows), fc_fleet_node_read,
			  "reading the fleet's nodes", (void **)rows, n, err);
}

int fc_store_fleet_nodes_all(struct fc_store *st, struct fc_fleet_node **rows, size_t *n, struct fc_err *err)
{
	return fc_collect(st, FC_SQL_FLEET_ALL, FC_NO_ARGS, sizeof(**rows), fc_fleet_node_read,
			  "reading the fleet's nodes", (void **)rows, n, err);
}

int fc_store_fleet_policies(struct fc_store *st, size_t *n, struct fc_err *err)
{
	int64_t v = 0;
	bool found;

	if (fc_query_int(st, FC_SQL_FLEET_ANY, FC_NO_ARGS, &v, &found, "counting fleet policies", err) < 0)
		return -1;
	*n = (size_t)v;
	return 0;
}

int fc_store_fleet_nodes_purge(struct fc_store *st, int64_t before_ms, size_t *n, struct fc_err *err)
{
	int64_t changes = 0;
	int rc = fc_exec(st, FC_SQL_FLEET_PURGE, FC_ARGS(FC_INT(before_ms)), &changes, "purging the fleet's nodes",
			 err);

	*n = (size_t)changes;
	return rc;
}
