#!/usr/bin/env bash
# A fleet on PostgreSQL: a cluster of the test's own, two nodes (each a
# network namespace behind a veth with freqctl attached, its own pin dir,
# shm and agent; weights 0.25 and 0.75) and an operator's freqctl elsewhere.
# Each node enforces its share of a policy, with real packets; a change
# reaches both within 100 ms; stopping PostgreSQL loses no enforcement and
# the agents recover when it returns. Also runs the store's unit tests
# against this cluster. Everything started here is stopped by its pid.
. "$(dirname "$0")/lib.sh"
# shellcheck source=tests/integration/pg.sh
. tests/integration/pg.sh
dir=/tmp/fc-it-$tag # fc_finish removes it
apid_a= apid_b=

finish() {
	local p n
	for p in $apid_a $apid_b; do kill -TERM "$p" 2>/dev/null && wait "$p" 2>/dev/null; done
	for n in a b; do
		ip netns del "fc-fleet-$n-$tag" 2>/dev/null
		ip link del "fcf$n$tag" 2>/dev/null
		rm -rf "/sys/fs/bpf/fc-fleet-$n-$tag"
	done
	rm -rf "/sys/fs/bpf/fc-fleet-op-$tag"
	pg_cleanup
	fc_finish
}
trap finish EXIT
why=$(pg_missing)
[ -z "$why" ] || skip_all "$why"
command -v ping >/dev/null || skip_all "ping not installed (Debian iputils-ping)"
mkdir -p "$dir"
check "a PostgreSQL cluster of the test's own starts" pg_start "$dir/pg" || { cat "$dir/pg/initdb.log" "$dir/pg/log" 2>/dev/null; exit 1; }

# The store's own tests, on a scratch database of this cluster.
pg_sql postgres "CREATE DATABASE fcunit"
CMOCKA_MESSAGE_OUTPUT=TAP FC_TEST= FC_TEST_PG_DSN="postgresql:///fcunit?host=$pg_dir/sock&port=$pg_port&user=postgres" \
	build/tests/test_store >"$dir/unit.log" 2>&1
check "store unit tests pass on PostgreSQL" sh -c "n=\$(sed -n 's/^1\.\.//p' '$dir/unit.log') && [ \"\$n\" -ge 20 ] && [ \"\$(grep -c '^ok ' '$dir/unit.log')\" = \"\$n\" ]" ||
	sed 's/^/# /' "$dir/unit.log"

# node N: namespace fc-fleet-N, root side fcfN (NET.1), sender NET.2, on a
# /24 of the suite's block each.
na=$(fc_net4 1) nb=$(fc_net4 2)
node_up() { # node_up N NET
	local ns=fc-fleet-$1-$tag host=fcf$1$tag peer=fcq$1$tag
	ip netns add "$ns" &&
		ip link add "$host" type veth peer name "$peer" netns "$ns" &&
		ip addr add "$2.1/24" dev "$host" && ip link set "$host" up &&
		ip -n "$ns" addr add "$2.2/24" dev "$peer" && ip -n "$ns" link set "$peer" up &&
		ip -n "$ns" neigh replace "$2.1" lladdr "$(cat /sys/class/net/"$host"/address)" dev "$peer" nud permanent &&
		ip neigh replace "$2.2" lladdr "$(ip netns exec "$ns" cat /sys/class/net/"$peer"/address)" dev "$host" nud permanent
}
fcn() { # fcn N ARGS...: freqctl as node N
	local n=$1
	shift
	"$FC_BIN" --db "$pg_dsn" --node "$n" --pin-dir "/sys/fs/bpf/fc-fleet-$n-$tag" --shm "$dir/$n.shm" "$@"
}
# The operator works from elsewhere: its own scratch pin dir and shm.
op() { "$FC_BIN" --db "$pg_dsn" --pin-dir "/sys/fs/bpf/fc-fleet-op-$tag" --shm "$dir/op.shm" "$@" >/dev/null; }
in_map() { bpftool map lookup pinned "/sys/fs/bpf/fc-fleet-$1-$tag/fc_exact4" key ${2//./ } >/dev/null 2>&1; } # in_map N ADDR
not_in_map() { ! in_map "$@"; }
# limit_is N SLOT L: node N's first tier of the policy in SLOT is L.
limit_is() { [ "$(bpftool -j map lookup pinned "/sys/fs/bpf/fc-fleet-$1-$tag/fc_policies" key "$2" 0 0 0 | jq '.formatted.value[""].lim.tier[0].limit')" = "$3" ]; }
within_100ms() {
	local i
	for i in $(seq 20); do "$@" && return 0; sleep 0.005; done
	return 1
}
both() { local f=$1; shift; "$f" a "$@" && "$f" b "$@"; } # both CHECK ARGS: true on both nodes
# The fleet's node set from its last changes on: "name:weight ...", by name.
fleet_open() { psql -tA -X "$pg_dsn" -c "SELECT string_agg(name || ':' || weight, ' ' ORDER BY name) FROM fleet_nodes WHERE until IS NULL"; }
logged() { grep -q "$2" "$dir/$1.log"; }
wait_logged() { # wait_logged N TEXT SECONDS
	local i
	for i in $(seq $(($3 * 10))); do logged "$1" "$2" && return 0; sleep 0.1; done
	return 1
}
# Sends COUNT pings from node N's namespace to NET.1; prints the replies.
pings() { # pings N COUNT NET
	ip netns exec "fc-fleet-$1-$tag" ping -n -q -c "$2" -i 0.002 -W 1 "$3.1" 2>/dev/null | sed -n 's/.* \([0-9]*\) received.*/\1/p'; }
passed_by() { fcn "$1" stats --json | jq ".policies[] | select(.id == $2) | .passed.packets"; }

node_up a "$na" && node_up b "$nb" || skip_all "could not make the namespaces"
check "node a attaches" quiet fcn a attach "fcfa$tag"
check "node b attaches" quiet fcn b attach "fcfb$tag"
# Not through fcn: $! must be the agent's own pid.
"$FC_BIN" --db "$pg_dsn" --node a --pin-dir "/sys/fs/bpf/fc-fleet-a-$tag" --shm "$dir/a.shm" agent --weight 0.25 \
	>"$dir/a.log" 2>&1 &
apid_a=$!
"$FC_BIN" --db "$pg_dsn" --node b --pin-dir "/sys/fs/bpf/fc-fleet-b-$tag" --shm "$dir/b.shm" agent --weight 0.75 \
	>"$dir/b.log" 2>&1 &
apid_b=$!
check "both agents start on the PostgreSQL store" both wait_logged 'watching store' 10 || cat "$dir/a.log" "$dir/b.log"
check "... each in the fleet's node set at its --weight, in micro-units" [ "$(fleet_open)" = "a:250000 b:750000" ]
check "a second agent for the same shm is refused, saying which" \
	sh -c "! '$FC_BIN' --db '$pg_dsn' --pin-dir /sys/fs/bpf/fc-fleet-a-$tag --shm '$dir/a.shm' agent 2>'$dir/err' && grep -q 'another agent (pid $apid_a) already runs on shm' '$dir/err'" || cat "$dir/err"

# Fixed windows are aligned to the minute: stay inside one.
while [ $((60 - $(date +%s) % 60)) -lt 15 ]; do sleep 0.2; done
op policy add 6 --match ip=198.18.0.0/15 --algo window --rate 400/m
check "a policy reaches both nodes within 100 ms, scaled: 400/m -> 100/m on a (0.25)" within_100ms limit_is a 1 100
check "... and 300/m on b (0.75)" within_100ms limit_is b 1 300
replies_a=$(pings a 200 "$na")
replies_b=$(pings b 400 "$nb")
check "node a enforces its share: 100 of 200 packets pass (replies $replies_a)" [ "$(passed_by a 6)" = 100 ]
check "node b enforces its share: 300 of 400 packets pass (replies $replies_b)" [ "$(passed_by b 6)" = 300 ]

op ban add "$na.2"
check "a ban reaches both nodes' XDP maps within 100 ms" within_100ms both in_map "$na.2"
check "... and a's sender is dropped at XDP" [ "$(pings a 5 "$na")" = 0 ]

pg_ctl_stop
check "PostgreSQL stopped: both agents say so and keep what is enforced" both wait_logged 'cannot publish, keeping' 5
check "... the ban still drops a's sender" [ "$(pings a 5 "$na")" = 0 ]
check "... the limits stay: b's sender is still over its 300/m" [ "$(pings b 5 "$nb")" = 0 ]
check "... the CLI reports the outage and exits 1" sh -c "'$FC_BIN' --db '$pg_dsn' --pin-dir /sys/fs/bpf/fc-fleet-op-$tag --shm '$dir/op.shm' ban add 198.18.2.9 2>'$dir/err'; [ \$? = 1 ] && grep -q 'cannot connect' '$dir/err'"

# A node that boots while the database is away: its agent starts anyway.
kill -TERM "$apid_b"
wait "$apid_b"
"$FC_BIN" --db "$pg_dsn" --node b --pin-dir "/sys/fs/bpf/fc-fleet-b-$tag" --shm "$dir/b.shm" agent --weight 0.75 \
	>>"$dir/b.log" 2>&1 &
apid_b=$!
check "an agent started while PostgreSQL is down runs, keeping what is enforced" \
	wait_logged b 'cannot reach the store, keeping what is enforced' 5
check "... and b's sender is still over its limit" [ "$(pings b 5 "$nb")" = 0 ]

pg_ctl_start
check "PostgreSQL back: both agents recover" both wait_logged 'store readable again' 40
op ban del "$na.2"
check "after recovery a change reaches both nodes within 100 ms" within_100ms both not_in_map "$na.2"
op node set b 0.5
check "a weight change republishes that node: 200/m on b" within_100ms limit_is b 1 200
check "... and leaves a at 100/m" limit_is a 1 100
check "... and b's row in the fleet's node set follows it" [ "$(fleet_open)" = "a:250000 b:500000" ]
op policy add 9 --match 'uid=*' --rate 10/s --algo window --fleet
op node set c 0.5
check "node set c: c joins the fleet's node set" [ "$(fleet_open)" = "a:250000 b:500000 c:500000" ]
# The splits published name the set of the window now and of the next that
# differs; when that one begins, the agents publish everything again.
check "... and the agents publish the fleet's splits again when c's first window begins" \
	both wait_logged 'published (fleet splits)' 5
check "node del c: exit 0" op node del c
check "... c leaves it" [ "$(fleet_open)" = "a:250000 b:500000" ]
check "... node list: a and b, each with its number in the fleet's node set" \
	jq_true '[.[] | select(.fleet_no != null) | .name] == ["a", "b"] and ([.[] | .name] | index("c") == null)' \
	<(fcn a node list --json)
check "... its row closed from 2 s on, kept for the windows that began before" \
	[ "$(psql -tA -X "$pg_dsn" -c "SELECT count(*) FROM fleet_nodes WHERE name = 'c' AND until IS NOT NULL")" = 1 ]
check "... and node del c again: no such node (exit 1)" sh -c "! '$FC_BIN' --db '$pg_dsn' --pin-dir /sys/fs/bpf/fc-fleet-op-$tag --shm '$dir/op.shm' node del c 2>'$dir/err' && grep -qx 'freqctl: node c: no such node' '$dir/err'"

kill -TERM "$apid_a" "$apid_b"
wait "$apid_a"
rc_a=$?
wait "$apid_b"
rc_b=$?
apid_a= apid_b=
check "SIGTERM: both agents exit cleanly" [ "$rc_a$rc_b" = 00 ] || echo "exit $rc_a $rc_b"
exit 0
