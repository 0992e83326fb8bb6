#!/usr/bin/env bash
# Escalation from L7 to L4, end to end: a client in a namespace makes HTTP
# requests through a veth to nginx (with the module) on the root side, where
# freqctl is attached at XDP and an agent runs. Past the policy's escalation
# threshold, the agent bans the client's address and its packets die at XDP
# (counted in freqctl stats); the ban lapses after its TTL. Then the same
# per key: a uid=* policy's refusals of one uid ban the client's address,
# while another uid of that client below its limit was not refused. The
# nginx and the agent started here are stopped by their pids on exit.
# tests/run.sh: alone: a ban's TTL watched with a 0.3 s margin, refusals per second.
. "$(dirname "$0")/lib.sh"
port=$(fc_port)
apid=
why=$(fc_nginx_missing)
[ -z "$why" ] || skip_all "$why"
stop_ours() {
	[ -n "$apid" ] && kill -TERM "$apid" 2>/dev/null && wait "$apid" 2>/dev/null
	fc_nginx_stop
}
trap 'stop_ours; fc_finish' EXIT
fc_setup
# One request from the namespace as UID (u1); prints the status, or 000 when
# nothing came back.
get() {
	ip netns exec "$ns" curl -s -o /dev/null -w '%{http_code}' --max-time 1 "http://$host4:$port/?uid=${1:-u1}" || true
}

d=/tmp/fc-it-$tag
ttl=6 # long enough for the checks below to run while the ban holds
fc policy add 1 --match uid=u1 --rate 1/m --escalate 3/m --ban-ttl ${ttl}s >/dev/null
fc_nginx_start "$host4:$port" || skip_all "nginx did not start"
"$FC_BIN" --db "$db" --pin-dir "$pin" --shm "$shm" agent >"$d/agent.log" 2>&1 &
apid=$!
for _ in $(seq 50); do grep -q "watching store" "$d/agent.log" && break; sleep 0.1; done
check "attach xdp" fc attach "$host" --mode xdp

fc top --json -n 1 -d 1.5 >"$d/top.json" &
tpid=$!
sleep 0.2 # top has read the counters and the ring's head
got="$(get) $(get) $(get) $(get)"
check "1/m: one 200, then 429s ($got)" [ "$got" = "200 429 429 429" ]
got=$(get)
check "the 4th refusal is past --escalate 3/m ($got)" [ "$got" = 429 ]
wait "$tpid"
check "top shows policy 1's refusals in nginx" jq_true '.policies[0] | .id == 1 and .layer == "nginx" and .denied_per_s > 0' "$d/top.json"
check "... and the refused client, from the offender ring" \
	jq_true --arg a "$peer4" '.refused[0] | .address == $a and .policy == 1 and .per_s > 2' "$d/top.json"
for _ in $(seq 20); do grep -q "escalated: $peer4" "$d/agent.log" && break; sleep 0.05; done
check "the agent banned the client" grep -q "escalated: $peer4 banned at XDP/TC" "$d/agent.log"
banned_at=$(date +%s.%N)
before=$(counter dropped_exact)
got=$(get)
check "its packets now die at XDP: no answer ($got)" [ "$got" = 000 ]
check "... counted as dropped by an exact ban" [ "$(counter dropped_exact)" -gt "$before" ]
check "ban list says why" sh -c "'$FC_BIN' --db '$db' --pin-dir '$pin' --shm '$shm' ban list | grep $peer4 | grep -q 'escalated by policy 1'"
check "stats --prometheus counts it as escalated" sh -c "'$FC_BIN' --db '$db' --pin-dir '$pin' --shm '$shm' stats --prometheus | grep -qx 'freqctl_bans{kind=\"address\",reason=\"escalated\"} 1'"
sleep "$(awk -v t="$banned_at" -v now="$(date +%s.%N)" -v ttl="$ttl" 'BEGIN { d = t + ttl + 0.3 - now; print (d > 0 ? d : 0) }')"
got=$(get)
check "after --ban-ttl ${ttl}s the ban lapsed: nginx answers again ($got)" [ "$got" = 429 ]

# Per key: the agent counts refusals in aligned minutes, so away from an edge.
fc policy del 1 >/dev/null
fc policy add 2 --match 'uid=*' --rate 1/m --escalate 3/m --ban-ttl ${ttl}s >/dev/null
added_at=$(date +%s.%N)
away_from_minute_edge 15
got="$(get k1) $(get k1) $(get k1) $(get k2) $(get k1) $(get k1)"
check "uid=* 1/m --escalate 3/m: k1 once, k2 once among k1's four refusals ($got)" [ "$got" = "200 429 429 200 429 429" ]
for _ in $(seq 20); do [ "$(grep -c "escalated: $peer4" "$d/agent.log")" = 2 ] && break; sleep 0.05; done
check "the agent banned the client for policy 2's refusals of k1" \
	grep -q "escalated: $peer4 banned at XDP/TC until .* (refused too often by policy 2)" "$d/agent.log"
before=$(counter dropped_exact)
got="$(get k3)"
check "... a fresh uid from that address gets no answer now: the ban is the address's ($got)" [ "$got" = 000 ]
check "... its packets dropped at XDP, not a slow answer timed out" [ "$(counter dropped_exact)" -gt "$before" ]
# The counts read go into the check's name: a failure says what they were.
got=$(fc stats --json | jq -c '.policies[] | select(.id == 2) | {passed: .passed.packets, dropped: .dropped.packets, keys}')
check "stats: policy 2 passed 2 (k1, k2), denied 4 (k1): $got" [ "$got" = '{"passed":2,"dropped":4,"keys":2}' ] || {
	# What pins a wrong count down: the keys the table holds (two live ones
	# with a count of 1: the count lost one; one: k2 overflowed or was never
	# made), the policy's whole stats, and when the agent's recounts could
	# have run (the first as it publishes policy 2, while k1 and k2 are
	# made, then every 10 s).
	echo "# read $(awk -v a="$added_at" -v now="$(date +%s.%N)" 'BEGIN { printf "%.2f", now - a }') s after policy 2 was added"
	fc stats --json | jq -c '.policies[] | select(.id == 2)' | sed 's/^/# stats: /'
	fc keys 2 --json | jq -c '.[]' | sed 's/^/# keys: /'
	sed 's/^/# agent: /' "$d/agent.log"
	exit 1
}
exit 0
