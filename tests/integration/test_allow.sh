#!/usr/bin/env bash
# Allow entries with real packets: pings from a namespace through a veth to
# freqctl attached at XDP on the root side. An allowed address under a
# prefix ban and an ip=* limit passes every ping (counted as allowed), and
# is dropped again once its entry is deleted; ban list names the entry that
# overrides the ban. Then escalation: the agent reads offender reports (as
# nginx workers write them in the state file's ring) and bans a client past
# its policy's threshold, but not an allowed one, which it logs by name.
# The agent started here is stopped by its pid on exit.
. "$(dirname "$0")/lib.sh"
apid=
stop_ours() { [ -n "$apid" ] && kill -TERM "$apid" 2>/dev/null && wait "$apid" 2>/dev/null; }
trap 'stop_ours; fc_finish' EXIT
command -v python3 >/dev/null || skip_all "python3 not installed (writes the offender reports)"
fc_setup
d=/tmp/fc-it-$tag
mkdir -p "$d"

# Sends 5 pings; checks the replies and the growth of a counter.
expect() { # expect DESCRIPTION REPLIES COUNTER MIN_GROWTH
	local before after got
	before=$(counter "$3")
	got=$(pings 4 5)
	after=$(counter "$3")
	check "$1: $2 of 5 replies (got $got)" [ "$got" = "$2" ]
	check "$1: $3 grew by at least $4 (by $((after - before)))" [ $((after - before)) -ge "$4" ]
}

check "attach xdp" fc attach "$host" --mode xdp
check "ban add $net4.0/24" fcq ban add $net4.0/24
check "policy ip=* 1/m, burst 1" fcq policy add 1 --match 'ip=*' --rate 1/m --burst 1
expect "banned" 0 dropped_prefix 5
check "allow add $peer4 --note partner" fcq allow add $peer4 --note partner
check "allow list shows it with its note" sh -c "'$FC_BIN' --db '$db' --pin-dir '$pin' --shm '$shm' allow list | grep '^$peer4 ' | grep -q partner"
check "allow list --json" sh -c "'$FC_BIN' --db '$db' --pin-dir '$pin' --shm '$shm' allow list --json |
	jq -e '.[0] | .allow == \"$peer4\" and .kind == \"exact\" and .note == \"partner\" and .expires == null' >/dev/null"
# 5 of 5 under ip=* 1/m with a burst of 1: not limited either.
expect "allowed under the ban and ip=*" 5 passed_allowed 5
check "ban list: the /24 is not overridden as a whole" sh -c "'$FC_BIN' --db '$db' --pin-dir '$pin' --shm '$shm' ban list --json | jq -e '.[0].allowed_by == null' >/dev/null"
check "a ban on the allowed address itself is accepted" fcq ban add $peer4
check "ban list names the allow entry that overrides it" \
	sh -c "'$FC_BIN' --db '$db' --pin-dir '$pin' --shm '$shm' ban list | grep '^$peer4 ' | grep -q 'overridden by allow $peer4'"
check "... and --json" sh -c "'$FC_BIN' --db '$db' --pin-dir '$pin' --shm '$shm' ban list --json |
	jq -e '.[] | select(.ban == \"$peer4\") | .allowed_by == \"$peer4\"' >/dev/null"
expect "still allowed" 5 passed_allowed 5
check "allow del $peer4" fcq allow del $peer4
expect "entry deleted: banned again" 0 dropped_exact 5
check "allow del of an entry that is not there fails (exit 1)" sh -c "'$FC_BIN' --db '$db' --pin-dir '$pin' --shm '$shm' allow del $peer4 2>/dev/null; [ \$? = 1 ]"
check "allow add of a bad address is a usage error (exit 2)" sh -c "'$FC_BIN' --db '$db' --pin-dir '$pin' --shm '$shm' allow add $peer4/8 2>/dev/null; [ \$? = 2 ]"
check "ban del both" sh -c "'$FC_BIN' --db '$db' --pin-dir '$pin' --shm '$shm' ban del $peer4 >/dev/null &&
	'$FC_BIN' --db '$db' --pin-dir '$pin' --shm '$shm' ban del $net4.0/24 >/dev/null"

# Escalation: an L7 policy escalating past 3 refusals a minute; the agent
# reads the ring from its head at start.
check "allow add $net4.0/25" fcq allow add $net4.0/25
check "policy uid=u1 --escalate 3/m" fcq policy add 2 --match uid=u1 --rate 1/m --escalate 3/m --ban-ttl 60s
"$FC_BIN" --db "$db" --pin-dir "$pin" --shm "$shm" agent >"$d/agent.log" 2>&1 &
apid=$!
for _ in $(seq 50); do grep -q "watching store" "$d/agent.log" && break; sleep 0.1; done
# Four reports of policy 2 for each of two clients, written as a worker does
# (fc_shm_ring_entry at the ring's offset in the state file, stamp last).
report() { # report ADDR...
	python3 - "$shm.state" "$@" <<'PY'
import mmap, socket, struct, sys
RING = 4096 + 65537 * 128  # FC_STATE_RING_OFF: the stat slots, then the ring
with open(sys.argv[1], "r+b") as f:
    m = mmap.mmap(f.fileno(), 0)
    head = struct.unpack_from("<Q", m, RING)[0]
    for addr in sys.argv[2:]:
        for _ in range(4):
            e = RING + 64 + (head % 65536) * 32
            struct.pack_into("<IB3x16s", m, e + 8, 2, 4, socket.inet_aton(addr) + bytes(12))
            struct.pack_into("<Q", m, e, head + 1)
            head += 1
    struct.pack_into("<Q", m, RING, head)
PY
}
check "four refusals each for $net4.3 (allowed) and $net4.200" report $net4.3 $net4.200
for _ in $(seq 30); do grep -q "escalated: $net4.200" "$d/agent.log" && break; sleep 0.1; done
check "the agent banned the client that is not allowed" grep -q "escalated: $net4.200 banned" "$d/agent.log"
check "... not the allowed one, and said why" \
	grep -q "escalation: $net4.3 not banned (refused too often by policy 2): allowed by $net4.0/25" "$d/agent.log"
check "ban list has $net4.200 only" sh -c "'$FC_BIN' --db '$db' --pin-dir '$pin' --shm '$shm' ban list --json |
	jq -e 'map(.ban) == [\"$net4.200\"]' >/dev/null"
exit 0
