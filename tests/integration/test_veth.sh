#!/usr/bin/env bash
# Real packets: a network namespace and a veth pair made here, freqctl
# attached on the root side (native XDP, then TC), pings sent from the
# namespace, bans observed in what arrives and in `freqctl stats`.
# Everything made here is removed on exit, also when a step fails.
. "$(dirname "$0")/lib.sh"

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

fc_setup

for mode in xdp tc; do
	check "attach $mode" fc attach "$host" --mode "$mode"
	check "status shows $host in $mode mode" sh -c "'$FC_BIN' --db '$db' --pin-dir '$pin' --shm '$shm' status | grep -q '$host .* $mode '"
	expect "$mode, no ban" 4 5 passed 5
	check "$mode: ban add $peer4" fc ban add $peer4
	expect "$mode, exact ban" 4 0 dropped_exact 5
	expect "$mode, exact v4 ban leaves v6 alone" 6 5 passed 5
	check "$mode: ban del $peer4" fc ban del $peer4
	expect "$mode, ban lifted" 4 5 dropped_exact 0
	check "$mode: ban add $net4.0/24" fc ban add $net4.0/24
	expect "$mode, prefix ban" 4 0 dropped_prefix 5
	check "$mode: ban add $net6::/64" fc ban add $net6::/64
	expect "$mode, v6 prefix ban" 6 0 dropped_prefix 5
	check "$mode: ban del both prefixes" sh -c "'$FC_BIN' --db '$db' --pin-dir '$pin' --shm '$shm' ban del $net4.0/24 &&
		'$FC_BIN' --db '$db' --pin-dir '$pin' --shm '$shm' ban del $net6::/64"
	check "$mode: ban add $peer6 --ttl 2s" fc ban add $peer6 --ttl 2s
	expect "$mode, v6 ban with TTL" 6 0 dropped_exact 5
	sleep 2.5
	expect "$mode, TTL lapsed in the kernel" 6 5 dropped_exact 0
	# Bans outlast detach: the next attach enforces them without a sync.
	check "$mode: ban add $peer4 before detach" fc ban add $peer4
	check "detach $mode" fc detach "$host"
	expect "$mode, detached: nothing dropped" 4 5 dropped_exact 0
	check "$mode: ban del $peer4 while detached" fc ban del $peer4
done

check "re-attach: no stale program on $host" sh -c "! bpftool net show dev '$host' | grep -q freqctl"
check "status shows nothing attached" sh -c "'$FC_BIN' --db '$db' --pin-dir '$pin' --shm '$shm' status | grep -q 'attached: none'"
exit 0
