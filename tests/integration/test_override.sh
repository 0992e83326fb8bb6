#!/usr/bin/env bash
# --override with real traffic: a partner at up to 10,000/s under an ip=*
# 5/m. At XDP and at TC, pings flooded from a namespace through a veth: the
# partner's address (then its prefix) as an override gets every reply, while
# without --override ip=* holds it to its 5, and the IPv6 source beside it
# stays under ip=*. In a real nginx serving a file: ip=* 5/m (--layer http)
# and the partner's address (127.0.0.2) --layer http --override 10000/s;
# then uid=* 5/m and uid=partner --override 10000/s. The general limits are
# per minute so that a burst slowed down by a loaded machine meets no refill
# (at 5/s, 20 pings over 200 ms got a 6th). Everything started here is
# stopped by its pid on exit.
. "$(dirname "$0")/lib.sh"
fc_setup

# Pings flooded from the namespace (the next one as soon as the reply is
# in, or 10 ms on): COUNT of them; prints how many replies came back.
flood() { # flood 4|6 COUNT
	local dst=$host4
	[ "$1" = 6 ] && dst=$host6
	timeout 60 ip netns exec "$ns" ping -"$1" -n -q -f -c "$2" -W 1 "$dst" 2>/dev/null |
		sed -n 's/.* \([0-9]*\) received.*/\1/p'
}

for mode in xdp tc; do
	check "attach $mode" fc attach "$host" --mode "$mode"
	fcq policy add 1 --match 'ip=*' --rate 5/m
	fcq policy add 2 --match ip=$peer4 --rate 10000/s
	got=$(flood 4 300)
	check "$mode: no --override: the partner is held to ip=*'s 5/m (got $got of 300)" [ "${got:-0}" -lt 60 ]
	check "$mode: policy set 2 --override" fcq policy set 2 --match ip=$peer4 --rate 10000/s --override
	check "$mode: policy list --json says it: override, not fleet" \
		jq_true '.[] | select(.id == 2) | .override == true and .fleet == false' <(fc policy list --json)
	check "$mode: ... and so do its OVERRIDE and FLEET columns" \
		[ "$(list_col 2 OVERRIDE) $(list_col 2 FLEET)" = "yes -" ]
	before=$(counter policy 1 passed)
	t0=$(date +%s%N)
	got=$(flood 4 2000)
	ms=$((($(date +%s%N) - t0) / 1000000))
	check "$mode: with --override: all 2000 replies in $ms ms (got $got)" [ "$got" = 2000 ]
	# The partner's ip=* bucket is empty: had ip=* applied, it would have
	# dropped them. Its passed count may grow by a neighbour-discovery packet
	# of the IPv6 source, never by the partner's 2000.
	n=$(counter policy 1 passed)
	check "$mode: ... and ip=* charged nothing for them (passed grew by $((n - before)))" [ "$n" -le $((before + 3)) ]
	got=$(pings 6 20 0.005)
	check "$mode: the IPv6 source is still under ip=*: 5 of 20 (got $got)" [ "$got" = 5 ]
	# Those 5, and at most a few neighbour-discovery packets of the IPv6 source
	# (ip=* meets them too, at TC most often); never the partner's 2000.
	n=$(counter policy 1 passed)
	check "$mode: ... ip=* passed those 5, not the partner's (got $((n - before)))" \
		[ "$n" -ge $((before + 5)) -a "$n" -le $((before + 10)) ]
	check "$mode: policy 2 passed all 2000 (and a few of the 300)" [ "$(counter policy 2 passed)" -ge 2000 ]
	fcq policy del 2
	fcq policy add 3 --match ip=$net4.0/24 --rate 10000/s --override
	got=$(flood 4 2000)
	check "$mode: a prefix override over ip=*: all 2000 (got $got)" [ "$got" = 2000 ]
	fcq policy del 3
	# ip=*'s bucket of the partner, drained by the first flood, has had
	# seconds to refill at most a token or two: ip=* drops the rest again.
	dropped=$(counter policy 1 dropped)
	got=$(pings 4 20 0.005)
	check "$mode: no override left: ip=* again, at most 2 of 20 (got $got)" [ "${got:-9}" -le 2 ]
	check "$mode: ... the others dropped by ip=* (by $(($(counter policy 1 dropped) - dropped)))" \
		[ "$(counter policy 1 dropped)" -ge $((dropped + 18)) ]
	fcq policy del 1
	check "detach $mode" fc detach "$host"
done

why=$(fc_nginx_missing)
if [ -n "$why" ] || ! getent group www-data >/dev/null; then
	skip_one "nginx: ${why:-no www-data group for the workers}"
	exit 0
fi
trap 'fc_nginx_stop; fc_finish' EXIT
fcq policy add 11 --match 'ip=*' --layer http --rate 5/m
fcq policy add 12 --match ip=127.0.0.2 --layer http --rate 10000/s --override
fc_nginx_start "127.0.0.1:$(fc_port)" || skip_all "nginx did not start"
d=/tmp/fc-it-$tag
# N requests for PATH on one connection (curl ARGS after), back to back:
# how many passed.
passes() { # passes N PATH [curl args]
	local n=$1 path=$2
	shift 2
	for _ in $(seq "$n"); do printf 'url = "%s"\noutput = "/dev/null"\n' "$ngx_url$path"; done >"$d/curl.cfg"
	curl -s -K "$d/curl.cfg" -w '%{http_code}\n' "$@" | grep -c '^200$'
}
star() { fc stats --json | jq '.policies[] | select(.id == 11) | .passed.packets'; }
before=$(star) # nginx's start asked once
t0=$(date +%s%N)
got=$(passes 2000 / --interface 127.0.0.2)
ms=$((($(date +%s%N) - t0) / 1000000))
check "nginx: the partner (127.0.0.2, --override 10000/s) under ip=* 5/m: 2000 of 2000 in $ms ms (got $got)" \
	[ "$got" = 2000 ]
check "nginx: ... and ip=* charged nothing for them" [ "$(star)" = "$before" ]
got=$(passes 20 / --interface 127.0.0.3) # not 127.0.0.1: nginx's start asked from there
check "nginx: another address (127.0.0.3): ip=*'s 5 of 20 (got $got)" [ "$got" = 5 ]
check "nginx: the partner's policy passed 2000" \
	jq_true '.policies[] | select(.id == 12) | .passed.packets == 2000' <<<"$(fc stats --json)"
fcq policy del 11
fcq policy del 12

fcq policy add 13 --match 'uid=*' --rate 5/m
fcq policy add 14 --match uid=partner --rate 10000/s --override
got=$(passes 2000 '/?uid=partner')
check "nginx: uid=partner --override 10000/s under uid=* 5/m: 2000 of 2000 (got $got)" [ "$got" = 2000 ]
got=$(passes 20 '/?uid=other')
check "nginx: uid=other: uid=*'s 5 of 20 (got $got)" [ "$got" = 5 ]
check "nginx logged no error (its refusals aside)" sh -c "! grep -E '\[(alert|crit|emerg|error)\]' $d/logs/error.log | grep -vE '\] [0-9]+#[0-9]+: \*[0-9]+ freqctl: policy [0-9]+ rejected request, '"
exit 0
