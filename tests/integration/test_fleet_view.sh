#!/usr/bin/env bash
# What stats, stats --json and stats --prometheus show of fleet policies:
# the fleet's use of the limit and this node's credit, read from the status
# file the agent writes each sync round (<shm>.fleet.json); nothing from a
# file no agent writes any more, or one that is not root's. The file here is
# written by the test, as the agent would: what is tested is what the views
# make of it (test_fleet4.sh has the agents write it).
. "$(dirname "$0")/lib.sh"
[ "$(id -u)" -eq 0 ] || skip_all "needs root (bpffs)"
d=/tmp/fc-it-$tag
mkdir -p "$d"

fcq policy add 7 --match 'uid=*' --algo window --rate 100/m
fcq policy add 8 --match 'arg:k=*' --algo window --rate 5/m
status() { # status MODE [NODES]: a status file as the agent writes it, naming policy 7
	cat >"$shm.fleet.json.tmp" <<JSON
{"node": "n1", "node_no": 1, "mode": "$1", "reason": "", "since": "2026-11-29T06:00:00Z", "rounds": 42,
 "interval_ms": 100, "latency_ms": {"last": 0.4, "p50": 0.3, "p99": 1.5, "sum": 12.5},
 "clock": {"offset_ms": -2.5, "max_skew_ms": 500, "test_offset_ms": 0}, ${2:-}
 "policies": [{"id": 7, "algo": "window", "limit": 100, "unit": "m", "fleet_used": 61, "node_used": 20,
   "credit": 5, "tracked": 3, "demanding": 1, "done": 0, "grants": 9, "releases": 2, "donated": 0}],
 "counters": {"commands": 120, "scripts": 100, "waits": 3, "moved": 2, "reply_errors": 1, "degraded_ms": 1500}}
JSON
	mv "$shm.fleet.json.tmp" "$shm.fleet.json"
}

fc stats >"$d/out"
check "no status file: stats has no fleet columns" sh -c "! grep -q 'FLEET' '$d/out'"
check "... --json: fleet null, no policy's fleet" jq_true '.fleet == null and ([.policies[] | select(.fleet)] | length) == 0' \
	<<<"$(fc stats --json)"

status fleet
fc stats >"$d/out"
check "stats: policy 7 shows the fleet's use 61/100 and this node's credit 5" \
	grep -qE '^7 .* 61/100 +5$' "$d/out" || cat "$d/out"
check "... policy 8 (not in the agent's fleet policies): -" grep -qE '^8 .* - +-$' "$d/out"
check "stats --json: policy 7's fleet {used, limit, node_used, credit}, and the mode" \
	jq_true '(.policies[] | select(.id == 7) | .fleet) == {"used": 61, "limit": 100, "node_used": 20, "credit": 5}
		and .fleet.mode == "fleet" and .fleet.rounds == 42' <<<"$(fc stats --json)"
fc stats --prometheus >"$d/prom"
for line in 'freqctl_fleet_mode{mode="fleet"} 1' 'freqctl_fleet_mode{mode="degraded"} 0' \
	'freqctl_fleet_rounds_total 42' 'freqctl_fleet_round_seconds{quantile="0.99"} 0.001500' \
	'freqctl_fleet_degraded_seconds_total 1.500' 'freqctl_fleet_redis_commands_total{kind="script"} 100' \
	'freqctl_fleet_redis_commands_total{kind="other"} 17' 'freqctl_fleet_reply_errors_total 1' \
	'freqctl_fleet_clock_offset_seconds -0.002500' 'freqctl_fleet_events_total{event="moved"} 2' \
	'freqctl_fleet_policy_used{policy="7"} 61' 'freqctl_fleet_policy_limit{policy="7"} 100' \
	'freqctl_fleet_policy_credit{policy="7"} 5'; do
	check "stats --prometheus: $line" grep -qxF "$line" "$d/prom"
done

# fleet status: a node that IN SET says no of is explained, from the file's
# joins (a window's start, or none to come).
status fleet '"nodes": [
  {"name": "n1", "no": 1, "weight": 0.5, "in_set": true, "joins": null, "mode": "fleet", "age_ms": 100},
  {"name": "n5", "no": 5, "weight": 0.25, "in_set": false, "joins": "2026-11-30T00:00:00.000Z", "mode": "fleet", "age_ms": 300},
  {"name": "n9", "no": 9, "weight": 0, "in_set": false, "joins": null, "mode": "off", "age_ms": 500}],'
fc fleet status >"$d/fleet.txt"
check "fleet status: a node joining the set says from which window, and what it does until then" grep -qxF \
	"n5 holds no share of the current windows: it joins the split from the window starting 2026-11-30T00:00:00.000Z; until then it takes only what others grant" \
	"$d/fleet.txt" || sed 's/^/# /' "$d/fleet.txt"
check "... one in no set says so" grep -qxF \
	"n9 is not in the node set: it holds no share, it takes only what others grant (freqctl node set, agent --weight)" \
	"$d/fleet.txt"
check "... one in the set, nothing" eval '! grep -q "^n1 \(holds\|is not\)" "$d/fleet.txt"'
status fleet

# The console's /api/stats: each policy's fleet, and the status whole for
# its fleet panel. An agent of this store serves it (no --redis: it writes
# no status file; the test's stands in).
port=$(fc_port 0)
"$FC_BIN" --db "$db" --pin-dir "$pin" --shm "$shm" agent --http "127.0.0.1:$port" --token-file "$d/token" \
	>"$d/agent.log" 2>&1 &
apid=$!
trap 'kill -TERM "$apid" 2>/dev/null && wait "$apid"; FC_NGX_DIR=$d/ngx fc_nginx_stop; fc_finish' EXIT
wait_until 5 grep -q "serving the console at" "$d/agent.log"
api_stats() { curl -s --max-time 5 -H "Authorization: Bearer $(fc console-token --token-file "$d/token")" \
	"http://127.0.0.1:$port/api/stats"; }
check "console /api/stats: policy 7's fleet, policy 8's null, and the agent's status for the panel" \
	jq_true '(.policies[] | select(.id == 7) | .fleet) == {"used": 61, "limit": 100, "node_used": 20, "credit": 5}
		and (.policies[] | select(.id == 8) | .fleet) == null and .fleet.mode == "fleet" and .fleet.rounds == 42' \
	<<<"$(api_stats)"

# keys and top: a fleet policy's keys show their credit and demand, read
# from the entries' words (tests/unit/test_fleet_file.c decodes each
# algorithm's); keys made by nginx for policy 7 here.
why=$(fc_nginx_missing)
if [ -z "$why" ] && getent group www-data >/dev/null; then
	FC_NGX_DIR=$d/ngx fc_nginx_start "127.0.0.1:$(fc_port 1)" &&
		codes 3 '/?uid=alice' >/dev/null && codes 2 '/?uid=bob' >/dev/null
	fc keys 7 >"$d/keys"
	check "keys 7: CREDIT and DEMAND columns for a fleet policy's keys" \
		grep -qE '^KEY .* IN-FLIGHT +CREDIT DEMAND VALUE$' "$d/keys" || cat "$d/keys"
	check "keys 7 --json: each key's fleet {credit, current, demand}" \
		jq_true 'length == 2 and all(.[]; .fleet | has("credit") and has("current") and has("demand"))' \
		<<<"$(fc keys 7 --json)"
	check "keys 8 (no fleet status of it): no such columns" sh -c "! '$FC_BIN' --db '$db' --pin-dir '$pin' --shm '$shm' keys 8 | grep -q CREDIT"
	check "top --json: policy 7's keys carry fleet" \
		jq_true '[.keys[] | select(.policy == 7) | .fleet | has("credit")] | length == 2' <<<"$(fc top --json -n 1 -d 0.1)"
	FC_NGX_DIR=$d/ngx fc_nginx_stop
else
	skip_one "keys and top with nginx's keys: ${why:-no www-data group}"
fi

# A file no agent has written for 10 rounds and 5 s: shown as none.
touch -d '-60 seconds' "$shm.fleet.json"
check "a status file 60 s old: no fleet columns" sh -c "! '$FC_BIN' --db '$db' --pin-dir '$pin' --shm '$shm' stats | grep -q FLEET"
check "... and no fleet families" sh -c "! '$FC_BIN' --db '$db' --pin-dir '$pin' --shm '$shm' stats --prometheus | grep -q '^freqctl_fleet_'"

# One that is not root's: refused, as any file root reads.
status degraded
chown nobody "$shm.fleet.json"
check "a status file owned by nobody: not shown" sh -c "! '$FC_BIN' --db '$db' --pin-dir '$pin' --shm '$shm' stats | grep -q FLEET"
check "... fleet status refuses it, naming it" sh -c "! '$FC_BIN' --db '$db' --pin-dir '$pin' --shm '$shm' fleet status 2>'$d/err' && grep -qF 'fleet status $shm.fleet.json: owned by nobody' '$d/err'"
