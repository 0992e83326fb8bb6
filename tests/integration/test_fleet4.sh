#!/usr/bin/env bash
# Fleet policies (--fleet) across four nginx nodes on one Redis (design
# §12): one budget per key for the whole fleet, exact for --algo window,
# with a node that runs out reaching the fleet's rate within two sync
# rounds. Real PostgreSQL, Redis, nginx and agents (tests/integration/fleet4.sh);
# requests from one curl, 8 at a time. Rounds are counted from the agents'
# status files, never guessed from wall time.
#
# The design's tests say 100/d and 60/h: a fleet made by the test is new
# for the day's and the hour's windows (a node takes no share of a window
# that began before its state file or its joining, §5.5), so the same
# counts run on per-minute windows that begin after the fleet is up.
# tests/run.sh: alone
. "$(dirname "$0")/lib.sh"
# shellcheck source=tests/integration/fleet4.sh
. tests/integration/fleet4.sh
fleet_suite

check "a standalone Redis of the test's own starts (AOF, appendfsync always)" redis_standalone ||
	skip_all "redis-server does not start"
check "four nodes, each with nginx and an agent of weight 0.25, syncing with Redis" fleet_up "$redis_url" ||
	exit 1

op policy add 1 --match 'uid=*' --algo window --rate 100/m --fleet
op policy add 2 --match 'arg:f=x' --algo window --rate 60/m --fleet
op policy add 3 --match 'arg:s=*' --algo window --rate 3/m --fleet
op policy add 4 --match 'arg:t=*' --algo window --rate 3/m --fleet
check "policy list --json says fleet for the four" \
	eval '[ "$("$FC_BIN" --db "$pg_dsn" policy list --json | jq "[.[] | select(.fleet == true)] | length")" = 4 ]'
# The first minute every node holds its share of (design §5.5, §1).
fleet_next_window 60 1
check "all four in fleet mode, in each other's node set" wait_until 5 fleet_all_in_set ||
	jq -c '{mode, nodes}' "$dir/n1.shm.fleet.json"
fleet_fc n1 fleet status >"$dir/status.txt"
check "fleet status on n1: fleet mode, Redis standalone, four nodes" \
	eval 'grep -q "^fleet: fleet mode since" "$dir/status.txt" && grep -q "^redis: standalone" "$dir/status.txt" &&
		[ "$(grep -cE "^n[1-4] " "$dir/status.txt")" = 4 ]' || sed 's/^/# /' "$dir/status.txt"

# How many lines of OUT (fleet_send's) are STATUS.
passed() { grep -c "^200 " "$1"; }
random_node() { echo "n$((RANDOM % 4 + 1))"; }

# ---- 400 requests of one uid, 8 at a time, to random nodes: exactly 100 ----
away_from_minute_edge 40
for i in $(seq 400); do fleet_url "$(random_node)" "/?uid=alice&i=$i"; done >"$dir/alice.urls"
fleet_send "$dir/alice.urls" >"$dir/alice.out"
check "400 requests of one uid to random nodes under 100/m --fleet: exactly 100 pass ($(passed "$dir/alice.out"))" \
	[ "$(passed "$dir/alice.out")" = 100 ]
check "... every other one refused with 429" [ "$(grep -c "^429 " "$dir/alice.out")" = 300 ]
# The fleet's use, from the nodes' heartbeats (one a second), in this window.
fleet_used_is() { [ "$(fleet_fc "$1" stats --json | jq -c "[.policies[] | select(.id == $2) | .fleet.used, .fleet.limit]")" = "$3" ]; }
check "stats --json on n1: policy 1's fleet use 100 of 100, within 5 s" wait_until 5 fleet_used_is n1 1 '[100,100]'

# ---- one node, paced: 100 pass, short for at most 2 rounds ----
# Batches of 5 to n1, one batch a round. n1 holds 25; the others never saw
# the key and release theirs when n1 asks.
paced() { # paced NAME NODE PATH-PREFIX BATCHES: lines "round passed refused"
	local b i r
	for b in $(seq "$4"); do
		r=$(fleet_rounds "$dir/$2.shm")
		for i in $(seq 5); do fleet_url "$2" "$3&b=$b&i=$i"; done >"$dir/$1.urls"
		fleet_send "$dir/$1.urls" >"$dir/$1.out"
		echo "$r $(grep -c '^200 ' "$dir/$1.out") $(grep -c '^429 ' "$dir/$1.out")"
		fleet_wait_rounds "$2" 1 || return 1
	done
}
# short_rounds LOG LIMIT: that the node was short (a refusal while the fleet
# had not yet passed LIMIT) only within 2 rounds of its first refusal.
short_within_2_rounds() {
	awk -v lim="$2" '{ if ($3 > 0 && total < lim) { if (first == "") first = $1; if ($1 - first > 2) bad = 1 }
		total += $2 } END { exit bad || total != lim }' "$1"
}
away_from_minute_edge 40
paced bob n1 "/?uid=bob" 40 >"$dir/bob.log"
check "one node, paced, 200 requests of one uid: exactly 100 pass ($(awk '{ t += $2 } END { print t }' "$dir/bob.log"))" \
	[ "$(awk '{ t += $2 } END { print t }' "$dir/bob.log")" = 100 ]
check "... and n1 is short for at most 2 sync rounds after its first refusal" short_within_2_rounds "$dir/bob.log" 100 ||
	sed 's/^/# round passed refused: /' "$dir/bob.log"

# ---- a fixed-value policy, paced on one node: exactly 60 of 200 ----
away_from_minute_edge 40
paced fixed n2 "/?f=x" 40 >"$dir/fixed.log"
check "a fixed-value policy 60/m --fleet, 200 requests on one node: exactly 60 pass" \
	[ "$(awk '{ t += $2 } END { print t }' "$dir/fixed.log")" = 60 ]
check "... n2 short for at most 2 rounds after its first refusal" short_within_2_rounds "$dir/fixed.log" 60 ||
	sed 's/^/# round passed refused: /' "$dir/fixed.log"

# ---- 200 keys x 4 requests at 3/m, shuffled over random nodes ----
away_from_minute_edge 40
for k in $(seq 200); do for i in 1 2 3 4; do fleet_url "$(random_node)" "/?s=k$k&i=$i"; done; done |
	shuf >"$dir/shuffled.urls"
fleet_send "$dir/shuffled.urls" >"$dir/shuffled.out"
# The most any key passed.
max_per_key() { grep '^200 ' "$1" | sed -E "s/.*[?&]$2=([^&]*).*/\1/" | sort | uniq -c | sort -rn | awk 'NR == 1 { print $1 } END { if (NR == 0) print 0 }'; }
check "200 keys x 4 shuffled over random nodes at 3/m: no key passes more than 3 (the most: $(max_per_key "$dir/shuffled.out" s))" \
	[ "$(max_per_key "$dir/shuffled.out" s)" -le 3 ]
echo "# shuffled: $(passed "$dir/shuffled.out") of 800 passed (about 410 expected of a design that neither waits nor over-admits)"

# ---- 100 keys x 4, each key on its own node, 3 rounds apart ----
away_from_minute_edge 40
for i in 1 2 3 4; do
	for k in $(seq 100); do fleet_url "n$((k % 4 + 1))" "/?t=k$k&i=$i"; done >"$dir/sticky.urls"
	fleet_send "$dir/sticky.urls" >>"$dir/sticky.out"
	for n in "${fleet_nodes[@]}"; do fleet_wait_rounds "$n" 3; done
done
check "100 keys x 4, sticky, 3 rounds apart, at 3/m: at least 285 pass ($(passed "$dir/sticky.out"))" \
	[ "$(passed "$dir/sticky.out")" -ge 285 ]
check "... and no key more than 3 (the most: $(max_per_key "$dir/sticky.out" t))" [ "$(max_per_key "$dir/sticky.out" t)" -le 3 ]

check "no node refused a reply of Redis's (reply_errors 0 on the four): every grant within the node's bounds" fleet_no_refusals

exit 0
