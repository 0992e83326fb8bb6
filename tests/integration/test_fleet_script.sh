#!/usr/bin/env bash
# The fleet's script (loader/agent/fc_fleet_sync.lua) and the agent's calls
# of it, against a real standalone redis-server with a replica, and a
# Cluster of 3 primaries and 3 replicas, started here by redis.sh on this
# suite's ports and ended by their pids however the test ends; the cases
# are tests/integration/fc_fleet_script_it.c (the script and its calls)
# fc_fleet_engine_it.c (the lease engine's round over a state file the
# test writes as nginx's workers would) and fc_fleet_gcra_it.c (four
# engines lending a gcra key); then the agent with --redis.
. "$(dirname "$0")/lib.sh"

[ -x build/tests/fc_fleet_script_it ] && [ -x build/tests/fc_fleet_engine_it ] && [ -x build/tests/fc_fleet_gcra_it ] ||
	skip_all "build/tests/fc_fleet_script_it, fc_fleet_engine_it or fc_fleet_gcra_it not built (make all-dev)"
ldconfig -p | grep -q 'libhiredis\.so\.0\.14 ' || skip_all "libhiredis0.14 not installed"

. "$(dirname "$0")/redis.sh"
why=$(redis_missing)
[ -z "$why" ] || skip_all "$why"
rdir=$redis_dir
apid=
agent_stop() { [ -z "$apid" ] || { kill -TERM "$apid" 2>/dev/null && wait "$apid" 2>/dev/null; apid=; }; }
# A replica a test stopped (SIGSTOP) goes on first, to end as the others.
trap 'agent_stop; [ -z "${replica_pid:-}" ] || kill -CONT "$replica_pid" 2>/dev/null; redis_cleanup; fc_finish' EXIT

redis_standalone || skip_all "redis-server does not start"
port=$(redis_port 0)
replica=$(redis_port 7)
redis_start "$replica" --replicaof 127.0.0.1 "$port" || skip_all "its replica does not start"
replica_pid=$(redis_pid "$replica")
in_sync() { rcli -p "$port" info replication | grep -q '^slave0:.*state=online'; }
wait_until 10 in_sync
check "redis-server on 127.0.0.1:$port, its replica on $replica in sync" in_sync
redis_cluster || skip_all "the Cluster does not form"
check "a Cluster of 3 primaries and 3 replicas on $(redis_port 1)-$(redis_port 6)" redis_cluster_ok

for it in fc_fleet_script_it fc_fleet_engine_it fc_fleet_gcra_it; do
	FC_FLEET_IT_REDIS=127.0.0.1:$port FC_FLEET_IT_REPLICA_PID=$replica_pid FC_FLEET_IT_CLUSTER=$redis_cluster_url \
		CMOCKA_MESSAGE_OUTPUT=TAP \
		timeout 120 "build/tests/$it" >"$rdir/$it.log" 2>&1
	it_rc=$?
	tap_relay < <(sed -E 's/^(not )?ok [0-9]+ - /\1ok - /' "$rdir/$it.log")
	check "$it ended by itself, every case passed (exit $it_rc)" [ "$it_rc" = 0 ]
done

# ---- doc/fleet.md's ACL user: what the engine sends, and nothing more ----
# The line of the guide, its password and the prefix this run's: the engine's
# cases again, authenticated as that user.
acl=$(grep -m1 '^user freqctl on >PASSWORD ' doc/fleet.md | sed 's/ *#.*//')
acl_pw=acl$RANDOM$RANDOM acl_prefix=fq$tag:
read -ra acl_words <<<"${acl#user }"
acl_words=("${acl_words[@]//PASSWORD/$acl_pw}")
acl_words=("${acl_words[@]//freqctl:/$acl_prefix}")
check "doc/fleet.md's ACL user made on $port: ${acl_words[*]//$acl_pw/PASSWORD}" \
	eval '[ -n "$acl" ] && [ "$(rcli -p "$port" ACL SETUSER "${acl_words[@]}")" = OK ]'
as_acl() { rcli -p "$port" --user freqctl --pass "$acl_pw" --no-auth-warning "$@" 2>&1; }
check "... refused FLUSHALL, CONFIG GET, KEYS and a key outside its prefix" \
	eval 'as_acl FLUSHALL | grep -q NOPERM && as_acl CONFIG GET maxmemory | grep -q NOPERM &&
		as_acl KEYS "*" | grep -q NOPERM && as_acl GET other | grep -q NOPERM'
FC_FLEET_IT_REDIS=127.0.0.1:$port FC_FLEET_IT_REPLICA_PID=$replica_pid FC_FLEET_IT_USER=freqctl \
	FC_FLEET_IT_PASSWORD=$acl_pw FC_FLEET_IT_PREFIX=$acl_prefix CMOCKA_MESSAGE_OUTPUT=TAP \
	timeout 120 build/tests/fc_fleet_engine_it >"$rdir/acl.log" 2>&1
it_rc=$?
check "fc_fleet_engine_it as that user: every case passed (exit $it_rc)" [ "$it_rc" = 0 ] ||
	grep -E '^not ok|NOPERM' "$rdir/acl.log" | head -5 | sed 's/^/# /'

# ---- the agent: --redis starts the lease engine; its options ----

if [ "$(id -u)" != 0 ]; then
	skip_one "the agent with --redis: needs root (bpffs)"
	exit 0
fi
agent_usage() { # agent_usage OPTION... : exit 2, its message in $err
	err=$("$FC_BIN" --db "$db" --pin-dir "$pin" --shm "$shm" agent "$@" 2>&1 >/dev/null)
	[ $? = 2 ]
}
check "--sync-interval 5: a usage error" agent_usage --sync-interval 5
check "... naming the option and its range" grep -q -- '--sync-interval.*10' <<<"$err"
check "--redis-wait 0: a usage error, naming what is expected" \
	eval 'agent_usage --redis-wait 0 && grep -q "1 to 16, or all" <<<"$err"'
check "--clock-offset 1e3: a usage error" eval 'agent_usage --clock-offset 1e3 && grep -q "expected milliseconds" <<<"$err"'

status=$shm.fleet.json
rounds() { jq -r '.rounds // 0' "$status" 2>/dev/null || echo 0; }
# Not through fc(): $! must be the agent's own pid.
"$FC_BIN" --db "$db" --pin-dir "$pin" --shm "$shm" --node n1 --redis "redis://127.0.0.1:$port" --redis-prefix "fa$tag:" \
	agent --sync-interval 50 >"$rdir/agent.log" 2>&1 &
apid=$!
for _ in $(seq 100); do [ "$(rounds)" -ge 5 ] && jq_true '.redis.mode != "unknown"' "$status" && break; sleep 0.05; done
check "the agent with --redis writes $status every round (5 within 5 s)" [ "$(rounds)" -ge 5 ]
check "... 0644, root's" eval '[ "$(stat -c %a:%u "$status")" = 644:0 ]'
check "... mode off (no fleet policy), Redis standalone, up, the clock within 500 ms" \
	jq_true '.mode == "off" and .redis.mode == "standalone" and .redis.primaries[0].state == "up" and
		.clock.offset_ms > -500 and .clock.offset_ms < 500 and .interval_ms == 50' "$status" ||
	jq -c 'del(.nodes, .policies)' "$status" | sed 's/^/# /'
fcq policy add 7 --match 'uid=*' --rate 10/m --fleet
for _ in $(seq 100); do jq_true '.mode == "fleet"' "$status" 2>/dev/null && break; sleep 0.05; done
check "a fleet policy added: the agent leases for it (mode fleet, policy 7, limit 10 per m)" \
	jq_true '.mode == "fleet" and .policies[0].id == 7 and .policies[0].limit == 10 and .policies[0].unit == "m"' \
	"$status"
check "... its heartbeat is in Redis (P{nodes} holds n1's, of this second)" \
	eval 'timeout 5 redis-cli -p "$port" hget "fa$tag:{nodes}" n1 | jq -e ".ts > $(date +%s)000 - 3000" >/dev/null'
agent_stop
check "the agent stopped by SIGTERM, its fleet thread with it" [ -z "$apid" ]
check "... it said nothing of durability (AOF, a replica)" eval '! grep -q "no replica" "$rdir/agent.log"'

# agent_run LOG URL [ARG...]: the agent on Redis at URL, its log in LOG.
agent_run() {
	local log=$1 url=$2
	shift 2
	"$FC_BIN" --db "$db" --pin-dir "$pin" --shm "$shm" --node n1 --redis "$url" --redis-prefix "fa$tag:" \
		agent --sync-interval 50 "$@" >"$log" 2>&1 &
	apid=$!
}
# Lines of LOG matching RE: there are some, and each is stamped as the agent's.
stamped() { # stamped RE LOG
	grep -qE "$1" "$2" &&
		! grep -E "$1" "$2" | grep -qvE '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z freqctl agent: '
}

# Redis away: the fleet thread's "degraded" line is the agent's, stamped.
agent_run "$rdir/away.log" redis://127.0.0.1:1
wait_until 10 grep -q "fleet: degraded" "$rdir/away.log"
agent_stop
check "Redis away: the fleet thread's log line carries the agent's stamp" stamped 'fleet: degraded' "$rdir/away.log" ||
	sed 's/^/# /' "$rdir/away.log"

# A directory where the status file goes: said once, naming it.
rm -f "$status"
mkdir "$status"
agent_run "$rdir/dir.log" "redis://127.0.0.1:$port"
sleep 2 # 40 rounds
agent_stop
rmdir "$status"
check "a directory at $status: logged once, naming it, in 2 s of rounds" \
	eval '[ "$(grep -c "status file $status: Is a directory" "$rdir/dir.log")" = 1 ]' || sed 's/^/# /' "$rdir/dir.log"
check "... stamped as the agent's" stamped "status file $status" "$rdir/dir.log"

# A server without AOF and without a replica: said once. (The replica's
# port, now a server of its own.)
redis_kill "$replica"
replica_pid=
redis_start "$replica" --appendonly no || skip_all "a server without AOF does not start"
check "redis-server on $replica: appendonly no, no replica" \
	eval 'rcli -p "$replica" info persistence | grep -q "^aof_enabled:0" &&
		rcli -p "$replica" info replication | grep -q "^connected_slaves:0"'
agent_run "$rdir/noaof.log" "redis://127.0.0.1:$replica"
sleep 2
agent_stop
check "the agent on it warns once: no replica and no AOF, naming the server" \
	eval '[ "$(grep -c "Redis 127.0.0.1:$replica has no replica and no AOF (appendonly no)" "$rdir/noaof.log")" = 1 ]' ||
	sed 's/^/# /' "$rdir/noaof.log"
check "... stamped as the agent's" stamped "has no replica and no AOF" "$rdir/noaof.log"

# A Cluster: nothing while every primary has a replica; a replica killed,
# its primary named.
agent_run "$rdir/cluster.log" "$redis_cluster_url"
sleep 1
agent_stop
check "the agent on the Cluster (a replica each): no warning" eval '! grep -q "without a replica" "$rdir/cluster.log"' ||
	sed 's/^/# /' "$rdir/cluster.log"
cluster_replica=$(for p in "${redis_cluster_ports[@]}"; do rcli -p "$p" role | head -1 | grep -qx slave && echo "$p"; done | head -1)
cluster_primary=$(rcli -p "$cluster_replica" info replication | sed -n 's/^master_port:\([0-9]*\).*/\1/p')
redis_kill "$cluster_replica"
listed() { rcli -p "$cluster_primary" cluster slots | grep -qx "$cluster_replica"; }
wait_until 15 eval '! listed'
agent_run "$rdir/cluster2.log" "$redis_cluster_url"
wait_until 5 grep -q "without a replica" "$rdir/cluster2.log"
agent_stop
check "its replica $cluster_replica killed: the agent names its primary, once" \
	eval '[ "$(grep -c "Redis Cluster primary 127.0.0.1:$cluster_primary without a replica" "$rdir/cluster2.log")" = 1 ]' ||
	sed 's/^/# /' "$rdir/cluster2.log"
