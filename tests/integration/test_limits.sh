#!/usr/bin/env bash
# Real packets above a policy's rate: pings from a namespace through a veth
# with freqctl attached on the root side (native XDP, then TC); what comes
# back must match the policy exactly, and so must `freqctl stats`.
#
# Why exact counts hold despite timing: the window test runs well inside one
# UTC minute (10/m, 30 pings in 0.6 s), and the GCRA test sends 20 pings in
# 0.4 s against 1/s burst 5, so no second token can be earned before the
# last ping (that would take 1 s; 3 s while a warm-up is cold).
# tests/run.sh: alone: 20 pings 0.02 s apart must all come within a second of a 1/s bucket.
. "$(dirname "$0")/lib.sh"
fc_setup

id=0
for mode in xdp tc; do
	check "attach $mode" fc attach "$host" --mode "$mode"

	id=$((id + 1))
	away_from_minute_edge 10
	check "$mode: policy $id window 10/m on $peer4" fc policy add $id --match ip=$peer4 --rate 10/m --algo window
	got=$(pings 4 30 0.02)
	check "$mode: window 10/m: 10 of 30 replies (got $got)" [ "$got" = 10 ]
	check "$mode: policy $id passed 10" [ "$(counter policy $id passed)" = 10 ]
	check "$mode: policy $id dropped 20" [ "$(counter policy $id dropped)" = 20 ]
	check "$mode: policy del $id" fc policy del $id
	got=$(pings 4 5)
	check "$mode: deleted: 5 of 5 replies (got $got)" [ "$got" = 5 ]

	# Warm-up from cold admits one at a time, at N/3: 20 pings in 0.4 s
	# against 1/s (3 s apart while cold) get one reply, not the burst of 5.
	id=$((id + 1))
	check "$mode: policy $id 1/s burst 5 --warmup 1h on $peer4" \
		fc policy add $id --match ip=$peer4 --rate 1/s --burst 5 --warmup 1h
	got=$(pings 4 20 0.02)
	check "$mode: warm-up from cold: 1 of 20 replies, no burst (got $got)" [ "$got" = 1 ]
	check "$mode: policy $id dropped 19" [ "$(counter policy $id dropped)" = 19 ]
	check "$mode: policy del $id" fc policy del $id

	id=$((id + 1))
	check "$mode: policy $id ip=* 1/s burst 5" fc policy add $id --match 'ip=*' --rate 1/s --burst 5
	got=$(pings 4 20 0.02)
	check "$mode: gcra 1/s burst 5: 5 of 20 replies (got $got)" [ "$got" = 5 ]
	check "$mode: policy $id dropped 15" [ "$(counter policy $id dropped)" = 15 ]
	check "$mode: stats --prometheus agrees" sh -c "'$FC_BIN' --db '$db' --pin-dir '$pin' --shm '$shm' stats --prometheus |
		grep -q '^freqctl_policy_total{policy=\"$id\",match=\"ip=\*\",layer=\"xdp\",outcome=\"dropped\"} 15\$'"
	got=$(pings 6 20 0.02)
	check "$mode: ip=* gives the IPv6 source its own bucket: 5 of 20 (got $got)" [ "$got" = 5 ]
	(sleep 0.2 && pings 4 20 0.02 >/dev/null) &
	top_json=$(fc top --json -n 1 -d 1)
	wait $!
	check "$mode: top ranks policy $id first, with its drops per second" \
		jq_true ".policies[0].id == $id and .policies[0].denied_per_s >= 10" <<<"$top_json"
	check "$mode: top shows both sources' ip=* buckets in use" \
		jq_true --arg a4 "$peer4" --arg a6 "$net6::/64" '[.sources[] | select(.used > 0.5) | .address] | index($a4) != null and index($a6) != null' <<<"$top_json"
	check "$mode: top in a pipe prints plain tables" sh -c "'$FC_BIN' --db '$db' --pin-dir '$pin' --shm '$shm' top -n 1 -d 0.1 |
		grep -q '^POLICY' && ! '$FC_BIN' --db '$db' --pin-dir '$pin' --shm '$shm' top -n 1 -d 0.1 | grep -q \$'\\033'"
	check "$mode: policy set $id --action log" fc policy set $id --match 'ip=*' --rate 1/s --burst 5 --action log
	got=$(pings 4 10 0.02)
	check "$mode: log drops nothing: 10 of 10 (got $got)" [ "$got" = 10 ]
	check "$mode: log counts would-drop" [ "$(counter policy $id would_drop)" -ge 9 ]
	check "$mode: policy del $id" fc policy del $id

	if [ "$mode" = tc ] && command -v nc >/dev/null; then
		# TCP from the namespace leaves as segmentation-offload super-packets
		# (tens of KB, the payload in page fragments beyond the skb's linear
		# part): a byte policy at TC must count all of it.
		id=$((id + 1))
		check "$mode: policy $id counts bytes, far above what is sent" \
			fc policy add $id --match ip=$peer4 --rate 1000000000000/s --count bytes
		port=$(fc_port)
		timeout 10 nc -l $host4 "$port" >/dev/null &
		listener=$!
		wait_until 5 listening "$port"
		head -c 2000000 /dev/zero | ip netns exec "$ns" timeout 10 nc -N $host4 "$port"
		wait "$listener"
		bytes=$(fc stats --json | jq ".policies[] | select(.id == $id) | .passed.bytes")
		pkts=$(counter policy $id passed)
		check "$mode: 2,000,000 bytes of TCP counted whole (got $bytes bytes in $pkts packets)" \
			[ "${bytes:-0}" -ge 2000000 ]
		avg=$(( ${bytes:-0} / (${pkts:-0} > 0 ? pkts : 1) ))
		check "$mode: ... in packets larger than the MTU, the case that needs it (average $avg)" [ "$avg" -gt 1500 ]
		check "$mode: policy del $id" fc policy del $id
	fi
	check "detach $mode" fc detach "$host"
done
exit 0
