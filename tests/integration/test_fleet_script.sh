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
