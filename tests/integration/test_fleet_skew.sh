#!/usr/bin/env bash
# Fleet policies with skewed clocks (design §6, §12): the four agents run
# with --clock-offset -300, 0, +300 and +200 ms and --fleet-max-skew 500;
# after traffic over many keys, every record in Redis keeps its invariant
# (the nodes' used counts add up to at most N, and n + G - R <= N). A node
# 2 s off reports "degraded (clock ...)" and spends no more than its shares.
# tests/run.sh: alone
. "$(dirname "$0")/lib.sh"
# shellcheck source=tests/integration/fleet4.sh
. tests/integration/fleet4.sh
fleet_suite

check "a standalone Redis of the test's own starts" redis_standalone || skip_all "redis-server does not start"
check "four nodes syncing with Redis" fleet_up "$redis_url" || exit 1
offsets=([1]=-300 [2]=0 [3]=300 [4]=200)
for i in 1 2 3 4; do
	fleet_agent_stop "n$i"
	fleet_agent_start "n$i" --clock-offset "${offsets[$i]}" --fleet-max-skew 500
done
check "restarted with clock offsets -300/0/+300/+200 ms, max skew 500: all syncing" wait_until 30 fleet_all_ready
check "... fleet status shows n3's test offset" \
	jq_true '.clock.test_offset_ms == 300 and .clock.max_skew_ms == 500' "$dir/n3.shm.fleet.json"
op policy add 1 --match 'uid=*' --algo window --rate 20/m --fleet
fleet_next_window 60 1
check "all four in fleet mode, in each other's node set" wait_until 5 fleet_all_in_set

# 100 keys x 20 requests over random nodes, sent across the skewed edges of
# the window too.
for k in $(seq 100); do for i in $(seq 20); do fleet_url "n$((RANDOM % 4 + 1))" "/?uid=s$k&i=$i"; done; done |
	shuf >"$dir/skew.urls"
fleet_send "$dir/skew.urls" >"$dir/skew.out"
for n in "${fleet_nodes[@]}"; do fleet_wait_rounds "$n" 3; done
echo "# $(grep -c '^200 ' "$dir/skew.out") of 2000 passed"

# Every record of policy 1: sum of u<i> <= n, and n + G - R <= N (= n: the
# limit did not change).
records_hold() {
	local rec fields bad=0 count=0
	while read -r rec; do
		[ -n "$rec" ] || continue
		count=$((count + 1))
		fields=$(rcli -p "$(redis_port 0)" --json hgetall "$rec")
		if ! jq -e '(.n | tonumber) as $n | ([to_entries[] | select(.key | test("^u[0-9]+$")) | .value | tonumber] | add // 0) <= $n
			and ($n + ((.G // "0") | tonumber) - ((.R // "0") | tonumber)) <= $n' <<<"$fields" >/dev/null; then
			echo "# $rec: $fields"
			bad=1
		fi
	done < <(rcli -p "$(redis_port 0)" --scan --pattern 'freqctl:{1.*')
	echo "# $count records checked"
	[ "$count" -ge 1 ] && [ "$bad" = 0 ]
}
check "every record: the nodes' used add up to at most N, and n + G - R <= N" records_hold

# ---- beyond the bound ----
fleet_agent_stop n4
fleet_agent_start n4 --clock-offset 2000 --fleet-max-skew 500
check "a node 2 s off (max 500 ms) reports degraded (clock ...)" \
	eval 'fleet_mode_within n4 degraded 60 && jq -e ".reason | startswith(\"clock\")" "$dir/n4.shm.fleet.json" >/dev/null'
check "... and logs it once" eval '[ "$(grep -c "fleet: degraded: clock" "$dir/n4.log")" = 1 ]'
away_from_minute_edge 20
for i in $(seq 100); do fleet_url n4 "/?uid=late&i=$i"; done >"$dir/late.urls"
fleet_send "$dir/late.urls" >"$dir/late.out"
check "... it spends no more than its own share of a key: 5 of 20 ($(grep -c '^200 ' "$dir/late.out"))" \
	[ "$(grep -c '^200 ' "$dir/late.out")" -le 5 ]
exit 0
