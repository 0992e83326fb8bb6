#!/usr/bin/env bash
# make bench, fleet policies (issue 29's targets): the Redis load and the
# agents' CPU of a --fleet policy on four nginx nodes sharing one Redis
# (tests/integration/fleet4.sh: PostgreSQL, Redis, four nginx and four
# agents of weight 0.25, every one started here and stopped by its pid).
#
#   hot key, N over the demand  one uid on all four nodes, none short: Redis hears only heartbeats
#   hot key, N under the demand every node short each window
#   100,000 keys a node, never short, and 100,000 keys a node, all short
#
# For each: requests/s (four wrk, one a node, for SECS s), Redis commands per
# 1,000 requests and per sync round (INFO commandstats: the commands clients
# send, not those scripts call; rounds: n1's status file), and each agent's CPU (utime + stime
# from /proc/PID/stat over the run, per second of it). The target: at most
# 10 commands per 1,000 requests for the hot key (Envoy's ratelimit: >= 1,000).
set -uo pipefail
# Not a test suite: lib.sh's TAP plan is not printed.
. "$(dirname "$0")/../../tests/integration/lib.sh"
tap_planned=1
# shellcheck source=tests/integration/fleet4.sh
. tests/integration/fleet4.sh
SECS=${SECS:-10}

tty=false; [ -t 2 ] && tty=true
progress() { $tty && printf '\r\033[K%s' "$*" >&2 || true; }
die() { echo "bench_fleet: $*" >&2; exit 1; }

[ "$(id -u)" -eq 0 ] || die "needs root (pin dirs in bpffs, nginx workers as www-data)"
for why in "$(fc_nginx_missing)" "$(pg_missing)" "$(redis_missing)"; do [ -z "$why" ] || die "$why"; done
command -v wrk >/dev/null || die "wrk missing (make bench installs it)"
trap fleet_down EXIT
mkdir -p "$dir"
progress "starting PostgreSQL, Redis, four nginx and four agents"
redis_standalone || die "redis-server does not start"
fleet_up "$redis_url" || die "the four nodes are not in fleet mode (their logs: $dir/n*.log)"
# A node takes no share of a window that began before it joined the node
# set (doc/fleet.md): in the minute the fleet was made every key is short
# on every node, and a row run then measures that, not its own case (55
# commands per 1,000 requests for keys "never short"). The rows start in
# the next minute, where each node holds its share.
progress "waiting for the next minute, the first window the four nodes hold shares of"
fleet_next_window 60 1

# Redis commands the agents sent so far: INFO commandstats also counts the
# commands a script calls (HGETALL, HSET, PUBLISH, ... inside EVALSHA), so
# only those a client sends are summed; this script's INFO is left out.
redis_commands() {
	rcli -p "$(redis_port 0)" info commandstats | awk -F'[:=,]' '
		$1 ~ /^cmdstat_(evalsha|eval|wait|script\|load|subscribe|ping|cluster\|slots|auth|hello|asking|readonly)$/ {
			n += $3 } END { print n + 0 }'
}
agent_cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; } # utime + stime
# A wrk script cycling over KEYS values of argument ARG (KEYS 1: one hot key).
wrk_script() { # wrk_script KEYS ARG
	cat >"$dir/keys.lua" <<LUA
local i = 0
request = function()
  i = i + 1
  if $1 == 1 then return wrk.format(nil, "/?$2=hot") end
  return wrk.format(nil, "/?$2=k" .. (i % $1))
end
LUA
}

# run ID RATE NAME KEYS: a policy ID of its own (arg:aID=*, RATE --fleet:
# shares of a window are fixed when it begins, so no row reuses another's),
# four wrk at once, one per node; prints the row, then drops the policy.
run() {
	local id=$1 rate=$2 name=$3 keys=$4 n c0 c1 r0 r1 req=0 t0 t1 cpu="" pids=()
	declare -A a0=()
	# --new-keys: 100,000 keys are new at up to 20,000 a second; past the
	# default cap (10,000) a fleet key is refused, not short, and costs
	# Redis nothing, but its row would not be what it says.
	op policy add "$id" --match "arg:a$id=*" --algo window --rate "$rate" --fleet --new-keys 1000000
	wrk_script "$keys" "a$id"
	progress "$name: $SECS s"
	for n in "${fleet_nodes[@]}"; do a0[$n]=$(agent_cpu_ticks "${fleet_apid[$n]}"); done
	c0=$(redis_commands) r0=$(fleet_rounds "$dir/n1.shm") t0=${EPOCHREALTIME/./}
	for n in "${fleet_nodes[@]}"; do
		wrk -t1 -c8 -d"${SECS}s" -s "$dir/keys.lua" "$(fleet_url "$n" /)" >"$dir/wrk.$n" 2>&1 &
		pids+=($!)
	done
	wait "${pids[@]}" # the wrk alone: the agents are children of this shell too
	t1=${EPOCHREALTIME/./}
	c1=$(redis_commands) r1=$(fleet_rounds "$dir/n1.shm")
	for n in "${fleet_nodes[@]}"; do
		req=$((req + $(awk '/requests in/ { print $1 }' "$dir/wrk.$n")))
		cpu="$cpu $(awk -v d="$(($(agent_cpu_ticks "${fleet_apid[$n]}") - a0[$n]))" -v hz="$(getconf CLK_TCK)" \
			-v s="$(((t1 - t0) / 1000))" 'BEGIN { printf "%.1f%%", d / hz * 100000 / s }')"
	done
	progress ""
	awk -v name="$name" -v req="$req" -v c=$((c1 - c0)) -v r=$((r1 - r0)) -v us=$((t1 - t0)) -v cpu="$cpu" 'BEGIN {
		printf "%-36s %10.0f %14.2f %12.1f  %s\n", name, req / (us / 1e6), req ? c * 1000 / req : 0, r ? c / r : 0, cpu }'
	op policy del "$id"
}

echo "fleet of 4 nodes (weight 0.25), one standalone Redis, --sync-interval ${fleet_sync_ms} ms, ${SECS} s a row"
printf '%-36s %10s %14s %12s  %s\n' "" "req/s" "cmds/1k req" "cmds/round" "agent CPU n1 n2 n3 n4"
run 1 1000000000/m "hot key, N over the demand" 1
run 2 1000/m "hot key, N under the demand" 1
run 3 1000000/m "100,000 keys a node, never short" 100000
run 4 4/m "100,000 keys a node, all short" 100000
