#!/usr/bin/env bash
# GCRA fleet policies lend (design §8.3): a uid sticky to one of four nginx
# nodes (and a fixed value's traffic on one), paced above the fleet's rate,
# gets well above that node's own bucket (R x W, B x W) by borrowing the
# other nodes' idle tokens through the key's lease pools, and never more
# than the bound freqctl-policy(7) states: R x (D + lease) + B over the D
# seconds it ran (the four clocks here agree; the lease window is 10 sync
# rounds, 1 s). Real PostgreSQL, Redis, nginx and agents
# (tests/integration/fleet4.sh); the requests from one curl at a set rate.
# tests/run.sh: alone
. "$(dirname "$0")/lib.sh"
# shellcheck source=tests/integration/fleet4.sh
. tests/integration/fleet4.sh
fleet_suite

check "a standalone Redis of the test's own starts (AOF, appendfsync always)" redis_standalone ||
	skip_all "redis-server does not start"
check "four nodes, each with nginx and an agent of weight 0.25, syncing with Redis" fleet_up "$redis_url" ||
	exit 1

# R 120/m (2 a second), B 8: each node's bucket is 0.5 a second, burst 2.
op policy add 1 --match 'uid=*' --algo gcra --rate 120/m --burst 8 --fleet
op policy add 2 --match 'arg:f=x' --algo gcra --rate 120/m --burst 8 --fleet
# The node set of a minute begun after the nodes joined (fleet4.sh).
fleet_next_window 60 1
check "all four in fleet mode, in each other's node set" wait_until 5 fleet_all_in_set ||
	jq -c '{mode, nodes}' "$dir/n1.shm.fleet.json"

# paced NAME NODE PATH N: N requests of PATH to NODE, 5 a second, from one
# curl; sets passed, d (seconds taken), own (what NODE's bucket alone
# allows: 0.5 d + 2) and bound (R (d + lease) + B, lease 1 s).
paced() {
	local i
	for i in $(seq "$4"); do fleet_url "$2" "$3&i=$i"; done >"$dir/$1.urls"
	sed 's/.*/url = "&"\noutput = "\/dev\/null"/' "$dir/$1.urls" >"$dir/$1.cfg"
	t0=$(date +%s%N)
	timeout 60 curl -s --rate 5/s -w '%{http_code} %{url_effective}\n' --config "$dir/$1.cfg" >"$dir/$1.out"
	t1=$(date +%s%N)
	passed=$(grep -c '^200 ' "$dir/$1.out")
	d=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", (b - a) / 1e9 }')
	own=$(awk -v d="$d" 'BEGIN { printf "%d", 0.5 * d + 2 }')
	bound=$(awk -v d="$d" 'BEGIN { printf "%d", 2 * (d + 1) + 8 }')
	echo "# $1 on $2: $passed of $4 passed in $d s; $2's own bucket (R x W, B x W) allows $own, the bound $bound"
}

# ---- one uid on n1, 5 requests a second for 20 s ----
paced carol n1 "/?uid=carol" 100
check "a uid sticky to one node under 120/m --burst 8 --algo gcra --fleet gets well above its node's own bucket ($passed > 1.5 x $own)" \
	[ $((2 * passed)) -gt $((3 * own)) ]
check "... and never above R x (D + lease) + B ($passed <= $bound)" [ "$passed" -le "$bound" ]
check "... lent to it: n1's agent reports grants for policy 1" \
	jq_true '[.policies[] | select(.id == 1)][0].grants > 0' "$dir/n1.shm.fleet.json" ||
	jq -c '.policies' "$dir/n1.shm.fleet.json" | sed 's/^/# /'

# ---- a fixed value (arg:f=x) on n2, 5 a second for 10 s ----
paced fixed n2 "/?f=x" 50
check "a fixed-value policy (arg:f=x) on one node, gcra --fleet: well above its node's own bucket ($passed > 1.5 x $own)" \
	[ $((2 * passed)) -gt $((3 * own)) ]
check "... and never above R x (D + lease) + B ($passed <= $bound)" [ "$passed" -le "$bound" ]
check "no node refused a reply of Redis's (reply_errors 0 on the four): every grant within the node's bounds" fleet_no_refusals

exit 0
