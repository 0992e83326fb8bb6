#!/usr/bin/env bash
# A fixed-value fleet policy at XDP (design §12 "XDP x4"): four nodes
# (tests/integration/fleet4.sh), each attached to a veth of its own whose
# namespace sends from the same source address, under one
# `ip=ADDR --algo window --rate 60/m --fleet`: the fleet passes exactly 60
# packets, counted by each node's fc_pstats (stats --json).
. "$(dirname "$0")/lib.sh"
# shellcheck source=tests/integration/fleet4.sh
. tests/integration/fleet4.sh
fleet_suite
command -v ping >/dev/null || skip_all "ping not installed (Debian iputils-ping)"
net=$(fc_net4 1)
src=$net.2

xdp_down() {
	local i
	for i in 1 2 3 4; do
		ip netns del "fc-fx$i-$tag" 2>/dev/null
		ip link del "fcx$i$tag" 2>/dev/null
	done
	fleet_down
}
trap xdp_down EXIT

# Node I's veth: fcxI on the root side (NET.1I), the sender NET.2 in its
# namespace; static neighbours, so every packet is one the test sent.
veth_up() { # veth_up I
	local ns=fc-fx$1-$tag host=fcx$1$tag peer=fcy$1$tag
	ip netns add "$ns" &&
		ip link add "$host" type veth peer name "$peer" netns "$ns" &&
		ip addr add "$net.1$1/32" dev "$host" && ip link set "$host" up &&
		ip -n "$ns" addr add "$src/24" dev "$peer" && ip -n "$ns" link set "$peer" up &&
		ip -n "$ns" neigh replace "$net.1$1" lladdr "$(cat /sys/class/net/"$host"/address)" dev "$peer" nud permanent
}
for i in 1 2 3 4; do veth_up "$i" || skip_all "could not make the namespaces"; done
check "a standalone Redis of the test's own starts" redis_standalone || skip_all "redis-server does not start"
check "four nodes syncing with Redis" fleet_up "$redis_url" || exit 1
for i in 1 2 3 4; do check "n$i attaches to its veth" quiet fleet_fc "n$i" attach "fcx$i$tag"; done
op policy add 1 --match "ip=$src" --algo window --rate 60/m --fleet
fleet_next_window 60 1
check "all four in fleet mode, in each other's node set" wait_until 5 fleet_all_in_set

# 300 packets from each namespace over 3 s (30 rounds), the four at once:
# a node whose sender starts late has lent its share by then, and the
# others' demand is met within 2 rounds.
pids=()
for i in 1 2 3 4; do
	ip netns exec "fc-fx$i-$tag" ping -n -q -c 300 -i 0.01 -W 1 "$net.1$i" >/dev/null 2>&1 &
	pids+=($!)
done
# The pings alone: the agents are children of this shell too.
wait "${pids[@]}"
for i in 1 2 3 4; do fleet_wait_rounds "n$i" 2; done
total=0
for i in 1 2 3 4; do
	p=$(fleet_fc "n$i" stats --json | jq '.policies[] | select(.id == 1) | .passed.packets')
	echo "# n$i passed $p (its share: 15)"
	total=$((total + ${p:-0}))
done
check "the fleet passed exactly 60 packets of 1200 ($total)" [ "$total" = 60 ]
exit 0
