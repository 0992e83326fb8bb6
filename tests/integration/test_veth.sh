#!/usr/bin/env bash
# Real packets: a network namespace and a veth pair made here, freqctl
# attached on the root side (native XDP, then TC), pings sent from the
# namespace, bans observed in what arrives and in `freqctl stats`.
# Everything made here is removed on exit, also when a step fails.
set -u
cd "$(dirname "$0")/../.."
FC_BIN=${FC_BIN:-build/freqctl}

tag=$$
ns=fc-it-$tag
host=fcit$tag       # root side, where freqctl attaches
peer=fcip$tag       # namespace side, the sender
pin=/sys/fs/bpf/fc-it-$tag
db=/tmp/fc-it-$tag/store.db
passed=0 failed=0 skipped=0

finish() {
	ip netns del "$ns" 2>/dev/null
	ip link del "$host" 2>/dev/null
	rm -rf "$pin" "/tmp/fc-it-$tag"
	echo "$passed passed, $failed failed, $skipped skipped"
}
trap finish EXIT
trap 'exit 1' INT TERM

skip_all() {
	echo "SKIPPED: $1"
	skipped=1
	exit 0
}

check() { # check DESCRIPTION COMMAND...
	local what=$1
	shift
	if "$@"; then
		passed=$((passed + 1))
		echo "ok - $what"
	else
		failed=$((failed + 1))
		echo "not ok - $what"
	fi
}

fc() { "$FC_BIN" --db "$db" --pin-dir "$pin" "$@"; }

# Pings the root side from the namespace; prints how many replies came back.
pings() { # pings 4|6 COUNT
	local dst=198.18.0.1
	[ "$1" = 6 ] && dst=2001:2::1
	ip netns exec "$ns" ping -"$1" -n -q -c "$2" -i 0.05 -W 1 "$dst" 2>/dev/null |
		sed -n 's/.* \([0-9]*\) received.*/\1/p'
}

# The packet count of one counter of `freqctl stats --json`.
counter() {
	fc stats --json | grep -A1 "\"$1\"" | sed -n 's/.*"packets": \([0-9]*\).*/\1/p'
}

# Sends 5 pings; checks the replies and the growth of one counter: exact for
# drops (only the echo requests come from a banned source), at least 5 for
# passed (the namespace may also send neighbour discovery of its own).
expect() { # expect DESCRIPTION FAMILY REPLIES COUNTER GROWTH
	local before after got op=-eq
	[ "$4" = passed ] && op=-ge
	before=$(counter "$4")
	got=$(pings "$2" 5)
	after=$(counter "$4")
	check "$1: $3 of 5 replies (got $got)" [ "$got" = "$3" ]
	check "$1: $4 grew by $5 (by $((after - before)))" [ $((after - before)) "$op" "$5" ]
}

[ "$(id -u)" -eq 0 ] || skip_all "needs root (network namespaces, XDP)"
command -v ping >/dev/null || skip_all "ping not installed (Debian iputils-ping)"
[ -x "$FC_BIN" ] || skip_all "$FC_BIN not built"

set -e
ip netns add "$ns"
ip link add "$host" type veth peer name "$peer" netns "$ns"
ip addr add 198.18.0.1/24 dev "$host"
ip -6 addr add 2001:2::1/64 dev "$host" nodad
ip link set "$host" up
ip -n "$ns" addr add 198.18.0.2/24 dev "$peer"
ip -n "$ns" -6 addr add 2001:2::2/64 dev "$peer" nodad
ip -n "$ns" link set "$peer" up
ip -n "$ns" link set lo up
set +e

for mode in xdp tc; do
	check "attach $mode" fc attach "$host" --mode "$mode"
	check "status shows $host in $mode mode" sh -c "'$FC_BIN' --db '$db' --pin-dir '$pin' status | grep -q '$host .* $mode '"
	expect "$mode, no ban" 4 5 passed 5
	check "$mode: ban add 198.18.0.2" fc ban add 198.18.0.2
	expect "$mode, exact ban" 4 0 dropped_exact 5
	expect "$mode, exact v4 ban leaves v6 alone" 6 5 passed 5
	check "$mode: ban del 198.18.0.2" fc ban del 198.18.0.2
	expect "$mode, ban lifted" 4 5 dropped_exact 0
	check "$mode: ban add 198.18.0.0/24" fc ban add 198.18.0.0/24
	expect "$mode, prefix ban" 4 0 dropped_prefix 5
	check "$mode: ban add 2001:2::/64" fc ban add 2001:2::/64
	expect "$mode, v6 prefix ban" 6 0 dropped_prefix 5
	check "$mode: ban del both prefixes" sh -c "'$FC_BIN' --db '$db' --pin-dir '$pin' ban del 198.18.0.0/24 &&
		'$FC_BIN' --db '$db' --pin-dir '$pin' ban del 2001:2::/64"
	check "$mode: ban add 2001:2::2 --ttl 2s" fc ban add 2001:2::2 --ttl 2s
	expect "$mode, v6 ban with TTL" 6 0 dropped_exact 5
	sleep 2.5
	expect "$mode, TTL lapsed in the kernel" 6 5 dropped_exact 0
	# Bans outlast detach: the next attach enforces them without a sync.
	check "$mode: ban add 198.18.0.2 before detach" fc ban add 198.18.0.2
	check "detach $mode" fc detach "$host"
	expect "$mode, detached: nothing dropped" 4 5 dropped_exact 0
	check "$mode: ban del 198.18.0.2 while detached" fc ban del 198.18.0.2
done

check "re-attach: no stale program on $host" sh -c "! bpftool net show dev '$host' | grep -q freqctl"
check "status shows nothing attached" sh -c "'$FC_BIN' --db '$db' --pin-dir '$pin' status | grep -q 'attached: none'"
exit 0
