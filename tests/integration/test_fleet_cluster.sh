#!/usr/bin/env bash
# Fleet policies on a Redis Cluster of 3 primaries + 3 replicas (design
# §12): four nginx nodes (tests/integration/fleet4.sh) find the Cluster
# from its node list; a hot key over its limit while the primary holding
# its record is killed (the agents follow the failover, by their
# heartbeat's PING of every primary even once no key needs that one: the
# total stays within N, WAIT kept every applied grant on the replica that
# took over),
# and while its slot moves to another primary (redis-cli --cluster reshard:
# the total within N; then N raised, MOVED and ASK followed).
# tests/run.sh: alone
. "$(dirname "$0")/lib.sh"
# shellcheck source=tests/integration/fleet4.sh
. tests/integration/fleet4.sh
fleet_suite

check "a Redis Cluster of 3 primaries + 3 replicas starts" redis_cluster || skip_all "the Cluster does not form"
check "four nodes syncing with the Cluster" fleet_up "$redis_cluster_url" || exit 1
fleet_fc n1 fleet status --json >"$dir/status.json"
check "fleet status: mode cluster, three primaries with a replica each" \
	jq_true '.redis.mode == "cluster" and (.redis.primaries | length) == 3 and all(.redis.primaries[]; .replicas == 1)' \
	"$dir/status.json"
op policy add 1 --match 'uid=*' --algo window --rate 100/m --fleet
op policy add 2 --match 'arg:h=*' --algo window --rate 100/m --fleet
fleet_next_window 60 1
check "all four in fleet mode, in each other's node set" wait_until 5 fleet_all_in_set

# A batch of 100 requests of one key over random nodes: fleet_send's output.
batch() { # batch NAME PATH
	local i
	for i in $(seq 100); do fleet_url "n$((RANDOM % 4 + 1))" "$2&i=$i&r=$RANDOM"; done >"$dir/$1.urls"
	fleet_send "$dir/$1.urls" >>"$dir/$1.out"
}
# The record of policy ID's key in Redis (one key per policy here).
record_of() { # record_of ID
	local p
	for p in "${redis_cluster_ports[@]}"; do
		redis_pid "$p" >/dev/null || continue
		rcli -p "$p" --scan --pattern "freqctl:{$1.*" 2>/dev/null
	done | head -1
}
counter_sum() { # counter_sum NAME: over the four nodes' status
	local n t=0
	for n in "${fleet_nodes[@]}"; do t=$((t + $(jq ".counters.$1 // 0" "$dir/$n.shm.fleet.json"))); done
	echo "$t"
}

# ---- failover ----
away_from_minute_edge 45
batch hot '/?uid=hot'
for n in "${fleet_nodes[@]}"; do fleet_wait_rounds "$n" 2; done
batch hot '/?uid=hot'
rec=$(record_of 1)
victim=$(redis_primary_of "$rec")
check "the hot key has a record in Redis ($rec), on primary $victim" [ -n "$rec" ] && [ -n "$victim" ]
redis_kill "$victim" KILL
for b in 1 2; do
	batch hot '/?uid=hot'
	for n in "${fleet_nodes[@]}"; do fleet_wait_rounds "$n" 2; done
done
passed=$(grep -c '^200 ' "$dir/hot.out")
check "its primary killed during traffic: the fleet passed at most 100 of 400 ($passed)" [ "$passed" -le 100 ]
# The hot key's credit is spent by now: no key needs the killed primary's
# slots, and each agent follows the failover by its heartbeat's PING of
# every primary. Followed: three primaries, all up, the killed one not among
# them, and a connection made after one was lost (reconnects).
followed() { # followed NODE
	jq -e --arg v "127.0.0.1:$victim" '(.redis.primaries | length) == 3 and all(.redis.primaries[]; .state == "up")
		and all(.redis.primaries[]; .addr != $v) and .counters.reconnects >= 1' "$dir/$1.shm.fleet.json" >/dev/null
}
wait_until 15 fleet_all followed
check "... every agent followed the failover: the promoted replica up, reconnected ($(counter_sum reconnects) in all)" \
	fleet_all followed || jq -c '{redis, reconnects: .counters.reconnects}' "$dir"/n*.shm.fleet.json | sed 's/^/# /'
check "... and waited for replicas before applying grants (waits $(counter_sum waits))" [ "$(counter_sum waits)" -ge 1 ]
check "... the record is served by the promoted replica" [ -n "$(record_of 1)" ]
# The killed primary back, as a replica: redis-cli --cluster refuses a
# Cluster whose node list holds a node without an address.
check "the killed primary rejoins as a replica" eval 'redis_restart "$victim" && wait_until 30 redis_cluster_ok'

# ---- a slot moved during traffic ----
away_from_minute_edge 45
batch moving '/?h=moving'
for n in "${fleet_nodes[@]}"; do fleet_wait_rounds "$n" 2; done
rec=$(record_of 2)
src=$(redis_primary_of "$rec")
dst=
for p in "${redis_cluster_ports[@]}"; do
	[ "$p" != "$src" ] && rcli -p "$p" role 2>/dev/null | head -1 | grep -qx master && { dst=$p; break; }
done
check "the moving key's record ($rec) is on $src; it moves to $dst" [ -n "$rec" ] && [ -n "$src" ] && [ -n "$dst" ]
timeout 120 redis-cli --cluster reshard "127.0.0.1:$src" --cluster-from "$(rcli -p "$src" cluster myid)" \
	--cluster-to "$(rcli -p "$dst" cluster myid)" --cluster-slots 16384 --cluster-yes >"$dir/reshard.log" 2>&1 &
reshard=$!
for b in 1 2 3; do
	batch moving '/?h=moving'
	for n in "${fleet_nodes[@]}"; do fleet_wait_rounds "$n" 1; done
done
wait "$reshard"
check "redis-cli --cluster reshard ran during the traffic" [ $? = 0 ] || tail -5 "$dir/reshard.log"
passed=$(grep -c '^200 ' "$dir/moving.out")
check "... the fleet passed at most 100 of 400 ($passed)" [ "$passed" -le 100 ]
# Its credit may have been spent before its slot moved: then no agent had
# to go there. N raised (the same record: a rate keeps the epoch), the
# nodes short of it ask again, by a slot table that still names $src.
op policy set 2 --match 'arg:h=*' --algo window --rate 200/m --fleet
limit_200() { jq -e '.policies[] | select(.id == 2) | .limit == 200' "$dir/$1.shm.fleet.json" >/dev/null; }
wait_until 10 fleet_all limit_200
batch moving '/?h=moving'
for n in "${fleet_nodes[@]}"; do fleet_wait_rounds "$n" 3; done
check "... the agents followed MOVED or ASK ($(counter_sum moved) moved, $(counter_sum ask) ask)" \
	[ $(($(counter_sum moved) + $(counter_sum ask))) -ge 1 ]
check "... the record is on $dst now" [ "$(redis_primary_of "$(record_of 2)")" = "$dst" ]
exit 0
