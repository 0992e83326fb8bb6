#!/usr/bin/env bash
# ip=*'s unit with real traffic. Clients in a namespace the test made send
# from several addresses of one IPv6 /64 (and of one IPv4 /24) through a
# veth: in a real nginx (--layer http, and ip=* beside a uri) they share the
# one bucket of their /64, $freqctl_key logs it, and freqctl top and keys
# count it as one key; ip=*/32/128 gives each address its own again,
# ip=*/24 one to an IPv4 /24. At XDP (native, on the veth) their pings share
# the /64's bucket too, and freqctl top shows that bucket as the /64.
# Everything made is removed on exit, nginx stopped by its pid.
. "$(dirname "$0")/lib.sh"
fc_nginx_suite
command -v jq >/dev/null || skip_all "jq not installed"
fc_setup
d=/tmp/fc-it-$tag
port=$(fc_port)
mac=$(ip netns exec "$ns" cat /sys/class/net/"$peer"/address)

# Five clients of each family: the namespace's $peer6 and $peer4 (.2), and
# .3 to .6 beside them, each a neighbour the root side knows (no discovery).
srcs6="$peer6" srcs4="$peer4"
for i in 3 4 5 6; do
	ip -n "$ns" -6 addr add "$net6::$i/64" dev "$peer" nodad
	ip -n "$ns" addr add "$net4.$i/24" dev "$peer"
	ip neigh replace "$net6::$i" lladdr "$mac" dev "$host" nud permanent
	ip neigh replace "$net4.$i" lladdr "$mac" dev "$host" nud permanent
	srcs6="$srcs6 $net6::$i" srcs4="$srcs4 $net4.$i"
done
unit6=$net6::/64 # as inet_ntop writes it: $net6 has no leading zeros

FC_NGX_ACCESS_LOG="log_format fc '\$remote_addr \$status \$freqctl_policy \$freqctl_key'; access_log $d/logs/access.log fc;" \
	FC_NGX_SERVER="listen [$host6]:$port;" fc_nginx_start "$host4:$port" || skip_all "nginx did not start"
echo ok >"$d/html/login"

# The statuses of N requests from each source in SRCS to PATH, one line.
from_each() { # from_each N "SRCS" PATH
	local n=$1 path=$3 s i dst out=""
	for s in $2; do
		dst=$host4
		[[ $s == *:* ]] && dst="[$host6]"
		for i in $(seq "$n"); do
			out="$out$(ip netns exec "$ns" curl -s -o /dev/null -w '%{http_code}' --max-time 2 --interface "$s" \
				"http://$dst:$port$path") "
		done
	done
	echo "${out% }"
}

fcq policy add 1 --match 'ip=*' --layer http --rate 3/m
got=$(from_each 2 "$srcs6" /)
check "nginx, ip=* 3/m: 5 addresses of one /64, 2 requests each: 3 pass, one bucket ($got)" [ "$(count "$got" 200)" = 3 ]
check "... the 429s name the /64 in \$freqctl_key ($unit6)" grep -q " 429 1 $unit6\$" "$d/logs/access.log"
check "... freqctl top counts one key for the /64: 3 passed, 7 denied" \
	jq_true '[.keys[] | select(.policy == 1)] | length == 1 and .[0].passed == 3 and .[0].denied == 7' \
	<<<"$(fc top --json -n 1 -d 0.1)"
check "... freqctl keys lists that one key" jq_true 'length == 1' <<<"$(fc keys 1 --json)"
got=$(from_each 2 "$srcs4" /)
check "... IPv4 keeps a bucket per address: 10 of 10 ($got)" [ "$(count "$got" 200)" = 10 ]
fcq policy set 1 --match 'ip=*/32/128' --layer http --rate 3/m
check "policy list: the match as stored, the unit spelled out in UNIT" grep -qE '^1 +ip=\*/32/128 +/32,/128 ' <<<"$(fc policy list)"
got=$(from_each 4 "$srcs6" /)
check "ip=*/32/128: a bucket per IPv6 address again: 3 of 4 each, 15 of 20 ($got)" [ "$(count "$got" 200)" = 15 ]
check "... freqctl top counts a key per address: 5, each 3 passed, 1 denied" \
	jq_true '[.keys[] | select(.policy == 1 and .passed == 3 and .denied == 1)] | length == 5' \
	<<<"$(fc top --json -n 1 -d 0.1)"
fcq policy set 1 --match 'ip=*/24' --layer http --rate 3/m
check "policy list --json: unit {ipv4: 24, ipv6: 64}" \
	jq_true '.[] | select(.id == 1) | .match == "ip=*/24" and .unit.ipv4 == 24 and .unit.ipv6 == 64' <<<"$(fc policy list --json)"
got=$(from_each 2 "$srcs4" /)
check "ip=*/24: 5 addresses of one IPv4 /24 share it: 3 of 10 ($got)" [ "$(count "$got" 200)" = 3 ]
check "... \$freqctl_key names the /24" grep -q " 429 1 $net4.0/24\$" "$d/logs/access.log"
fcq policy del 1

fcq policy add 2 --match 'ip=*,uri=/login' --rate 2/m
got=$(from_each 2 "$srcs6" /login)
check "ip=*,uri=/login 2/m: the /64's addresses on /login: 2 of 10 ($got)" [ "$(count "$got" 200)" = 2 ]
got=$(from_each 1 "$srcs6" /)
check "... other paths untouched: 5 of 5 ($got)" [ "$(count "$got" 200)" = 5 ]
fcq policy del 2

# At XDP: pings from the same addresses.
pings_from() { # pings_from "SRCS" COUNT: replies to COUNT pings from each source, summed
	local s dst n=0 got
	for s in $1; do
		dst=$host4
		[[ $s == *:* ]] && dst=$host6
		got=$(ip netns exec "$ns" ping -n -q -c "$2" -i 0.02 -W 1 -I "$s" "$dst" 2>/dev/null |
			sed -n 's/.* \([0-9]*\) received.*/\1/p')
		n=$((n + ${got:-0}))
	done
	echo "$n"
}
check "attach xdp" fc attach "$host" --mode xdp
fcq policy add 3 --match 'ip=*' --rate 5/m
got=$(pings_from "$srcs6" 4)
check "XDP, ip=* 5/m: 4 pings from each of 5 addresses of one /64: 5 replies (got $got)" [ "$got" = 5 ]
top_json=$(fc top --json -n 1 -d 0.1)
check "top shows the bucket as its /64, at its limit" \
	jq_true --arg u "$unit6" '[.sources[] | select(.address == $u and .used >= 0.9)] | length == 1' <<<"$top_json"
check "... and none for the addresses in it" \
	jq_true --arg a "$peer6" '[.sources[] | select(.address == $a)] | length == 0' <<<"$top_json"
got=$(pings_from "$srcs4" 4)
check "... IPv4: a bucket per address, 20 of 20 (got $got)" [ "$got" = 20 ]
fcq policy set 3 --match 'ip=*/32/128' --rate 5/m
got=$(pings_from "$srcs6" 4)
check "XDP, ip=*/32/128: a bucket per address, 20 of 20 (got $got)" [ "$got" = 20 ]
top_json=$(fc top --json -n 1 -d 0.1)
check "... top shows the addresses" jq_true --arg a "$peer6" '[.sources[] | select(.address == $a)] | length == 1' <<<"$top_json"
check "detach" fc detach "$host"
