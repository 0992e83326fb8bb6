#!/usr/bin/env bash
# Fleet policies when Redis goes away or slows down (design §9, §12): four
# nginx nodes on one standalone Redis (tests/integration/fleet4.sh). Killed:
# every node goes degraded within 4 rounds, requests keep their latency,
# each node spends no more than its own share of a key it held nothing of;
# restarted: back to fleet mode by itself, re-asserting what it holds.
# Paused (CLIENT PAUSE 3000 ALL): the same, and back when it answers.
# tests/run.sh: alone
. "$(dirname "$0")/lib.sh"
# shellcheck source=tests/integration/fleet4.sh
. tests/integration/fleet4.sh
fleet_suite

check "a standalone Redis of the test's own starts" redis_standalone || skip_all "redis-server does not start"
check "four nodes syncing with Redis" fleet_up "$redis_url" || exit 1
op policy add 1 --match 'uid=*' --algo window --rate 100/m --fleet
fleet_next_window 60 1
check "all four in fleet mode, in each other's node set" wait_until 5 fleet_all_in_set
rport=$(redis_port 0)

# 200 requests over random nodes, each of its own uid (none is short: no
# Redis on the way, before or after), for the latency.
latency_run() { # latency_run NAME
	local i
	for i in $(seq 200); do fleet_url "n$((RANDOM % 4 + 1))" "/?uid=$1-$i"; done >"$dir/$1.urls"
	fleet_send "$dir/$1.urls" >"$dir/$1.out"
}
# p99 of RUN within 2x that of BEFORE + 5 ms.
latency_kept() { # latency_kept BEFORE RUN
	local b a
	b=$(fleet_p99_ms "$dir/$1.out") a=$(fleet_p99_ms "$dir/$2.out")
	echo "# p99: $b ms before, $a ms now"
	[ "$a" -le $((2 * b + 5)) ]
}
# 400 requests of one uid over random nodes; every node passes at most
# its share (25 of 100), the fleet at most 100.
shares_kept() { # shares_kept UID
	local i n ok=0
	for i in $(seq 400); do fleet_url "n$((RANDOM % 4 + 1))" "/?uid=$1&i=$i"; done >"$dir/$1.urls"
	fleet_send "$dir/$1.urls" >"$dir/$1.out"
	for n in "${fleet_nodes[@]}"; do
		echo "# $1: $n passed $(fleet_passed_on "$dir/$1.out" "$n")"
		[ "$(fleet_passed_on "$dir/$1.out" "$n")" -le 25 ] || ok=1
	done
	[ "$ok" = 0 ] && [ "$(grep -c '^200 ' "$dir/$1.out")" -le 100 ]
}

away_from_minute_edge 45
latency_run before
redis_kill "$rport" KILL
check "Redis killed: every node reports degraded within 4 rounds" fleet_all_mode_within degraded 4 ||
	for n in "${fleet_nodes[@]}"; do echo "# $n: $(fleet_mode "$n")"; done
check "... fleet status says why" eval 'fleet_fc n1 fleet status | grep -q "^fleet: degraded ("'
latency_run down
check "... requests keep their latency (p99 within 2x + 5 ms)" latency_kept before down
check "... a key no node held: each passes at most its share, the fleet at most 100" shares_kept down-key
check "... nginx keeps limiting: refusals are 429" [ "$(grep -c '^429 ' "$dir/down-key.out")" -ge 300 ]

redis_restart "$rport"
check "Redis back: every node returns to fleet mode by itself" fleet_all_mode_within fleet 30
check "... and logs that it re-asserted what it holds" grep -q 'fleet mode again after .* (re-asserted [0-9]* records)' "$dir/n1.log"
check "... the counters say it reconnected" \
	eval '[ "$(jq ".counters.reconnects" "$dir/n1.shm.fleet.json")" -ge 1 ]'

# A Redis that stops answering for 3 s.
away_from_minute_edge 30
rcli -p "$rport" CLIENT PAUSE 3000 ALL >/dev/null
# Each node logs an episode once (design §9): the second is this one.
episodes() { local n; for n in "${fleet_nodes[@]}"; do [ "$(grep -c 'fleet: degraded' "$dir/$n.log")" -ge 2 ] || return 1; done; }
check "Redis paused 3 s: every node logs a second degraded episode" wait_until 10 episodes
latency_run paused
check "... requests keep their latency" latency_kept before paused
check "... and back to fleet mode when it answers" fleet_all_mode_within fleet 40

# ---- bad input at start: refused before anything runs; nginx limits on ----
printf 'pw\n' >"$dir/pw"
chmod 644 "$dir/pw"
fleet_agent_stop n4
"$FC_BIN" --db "$pg_dsn" --node n4 --pin-dir "/sys/fs/bpf/fc-it-$tag-n4" --shm "$dir/n4.shm" \
	--redis "$redis_url" --redis-password-file "$dir/pw" agent >"$dir/bad.out" 2>&1
rc=$?
# Exit 1, as fc_redis_probe's (test_redis.sh): the file's mode is the
# machine's state, not the command line's (design §9 said 2).
check "an agent with a password file others can read: exit 1, naming it" \
	eval '[ "$rc" = 1 ] && grep -qF -- "--redis-password-file $dir/pw: must be a regular file" "$dir/bad.out"' ||
	sed 's/^/# /' "$dir/bad.out"
"$FC_BIN" --db "$pg_dsn" --node n4 --pin-dir "/sys/fs/bpf/fc-it-$tag-n4" --shm "$dir/n4.shm" \
	--redis 'redis://:x@' agent >"$dir/bad.out" 2>&1
check "an agent with a URL that does not parse: exit 2" [ $? = 2 ] || sed 's/^/# /' "$dir/bad.out"
away_from_minute_edge 20
for i in $(seq 100); do fleet_url n4 "/?uid=no-agent&i=$i"; done >"$dir/noagent.urls"
fleet_send "$dir/noagent.urls" >"$dir/noagent.out"
check "... with no agent, n4's nginx still limits a key to its share: 25 of 100 ($(grep -c '^200 ' "$dir/noagent.out"))" \
	[ "$(grep -c '^200 ' "$dir/noagent.out")" = 25 ]
exit 0
