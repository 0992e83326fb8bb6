#!/usr/bin/env bash
# The shm's trust boundary, as the nginx workers' user (www-data) could test
# it: the config file root publishes is not theirs to write; the state file
# they write is read by root (sync, stats, top, the agent) as hostile bytes,
# so garbage, a forged ring head or a truncated file change nothing root
# does and crash nothing, a ring slot a killed worker never stamped stops
# no escalation, and a state file grown to the biggest key table is
# refused, not read; and a file or link planted where root will publish
# is refused, never followed.
. "$(dirname "$0")/lib.sh"
[ "$(id -u)" -eq 0 ] || skip_all "needs root (files owned by root, runuser)"
id www-data >/dev/null 2>&1 || skip_all "no www-data user (Debian's nginx makes it)"
command -v runuser >/dev/null || skip_all "runuser not installed (util-linux)"
d=/tmp/fc-it-$tag
mkdir -p "$d"
chmod 1777 "$d" # as /dev/shm: anyone may create, only the owner may remove
as_www() { runuser -u www-data -- sh -c "$1"; }
apid=
trap '[ -n "$apid" ] && kill -TERM "$apid" 2>/dev/null && wait "$apid" 2>/dev/null; fc_finish' EXIT

# A link planted where the shm will be: root neither writes through it nor
# takes it silently, but says whose it is and what to do.
echo "untouched" >"$d/victim"
chmod 0644 "$d/victim"
as_www "ln -s '$d/victim' '$shm'"
fc policy add 1 --match uid=u1 --rate 5/m --escalate 3/m --ban-ttl 1m >/dev/null 2>"$d/err"
check "a publish refuses the link www-data planted where the shm goes" [ $? = 1 ]
check "... naming it, its owner and the fix" grep -q "shm $shm: a symbolic link owned by www-data (uid [0-9]*), not root: remove it (rm $shm: the next publish makes it anew)" "$d/err"
check "... the link's target is untouched" [ "$(cat "$d/victim")" = untouched ]
check "... nothing stored" jq_true 'length == 0' <<<"$(fc policy list --json)"
rm "$shm"
check "once removed, the policy is added" fcq policy add 1 --match uid=u1 --rate 5/m --escalate 3/m --ban-ttl 1m
check "... the shm is a regular file now, not the link" [ -f "$shm" -a ! -L "$shm" ]
check "config file: root's, 0640, group www-data" [ "$(stat -c '%U %a %G' "$shm")" = "root 640 www-data" ]
check "state file: root's, 0660, group www-data" [ "$(stat -c '%U %a %G' "$shm.state")" = "root 660 www-data" ]
check "www-data can not write the config file" sh -c "! runuser -u www-data -- sh -c 'echo x >>\"$shm\"' 2>/dev/null"
check "... nor truncate it" sh -c "! runuser -u www-data -- truncate -s 0 '$shm' 2>/dev/null"
check "... but reads it" as_www "head -c 4 '$shm' >/dev/null"

# Counters past INT64_MAX, as www-data, in policy 1's slot and the header:
# JSON's integers are signed, so stats --json says INT64_MAX, never a
# negative number (the text output, unsigned, says what is there).
if ! command -v python3 >/dev/null; then
	skip_one "python3 not installed (writes the forged counters)"
	skip_one "python3 not installed"
else
	check "www-data writes counters past INT64_MAX into policy 1's slot" forge_counters 1
	big=9223372036854775807
	check "stats --json: each of them INT64_MAX, none negative" jq_true --argjson m "$big" \
		'.nginx_allowed == $m and (.policies[] | select(.id == 1) | .passed.packets == $m and
		 .dropped.packets == $m and .delayed == $m) and ([.. | numbers | select(. < 0)] | length == 0)' <<<"$(fc stats --json)"
	check "... the text output: the unsigned values" sh -c "'$FC_BIN' --db '$db' --pin-dir '$pin' --shm '$shm' stats |
		grep -q '^1 .* 9223372036854775808 *9223372036854775808 '"
fi

# Garbage over the whole state file, as www-data: slots, owners, ring head.
as_www "head -c $(stat -c %s "$shm.state") /dev/urandom >'$shm.state'"
check "sync after garbage in the state file" fcq sync
check "stats after garbage in the state file" fcq stats --json
check "top after garbage in the state file" fcq top --json -n 1 -d 0.1
"$FC_BIN" --db "$db" --pin-dir "$pin" --shm "$shm" agent >"$d/agent.log" 2>&1 &
apid=$!
for _ in $(seq 50); do grep -q "watching store" "$d/agent.log" && break; sleep 0.1; done
# A forged head far ahead, then far behind, while the agent reads the ring.
head_off=$(( 4096 + 65537 * 128 )) # FC_STATE_RING_OFF: the stat slots (128 bytes each), then the ring
as_www "printf '\377\377\377\377\377\377\377\177' | dd of='$shm.state' bs=1 seek=$head_off conv=notrunc 2>/dev/null"
sleep 0.5
as_www "printf '\0\0\0\0\0\0\0\0' | dd of='$shm.state' bs=1 seek=$head_off conv=notrunc 2>/dev/null"
sleep 0.5
check "the agent survives a forged ring head" kill -0 "$apid"
check "... and bans nobody for it" jq_true 'length == 0' <<<"$(fc ban list --json)"
# Truncated under root's feet.
as_www "truncate -s 100 '$shm.state'"
check "stats with the state file truncated by www-data" fcq stats --json
check "top with the state file truncated" fcq top --json -n 1 -d 0.1
sleep 0.3
check "the agent survives the truncation" kill -0 "$apid"
check "sync puts a whole state file back" fcq sync
check "... of the layout's size" [ "$(stat -c %s "$shm.state")" -gt 100 ]
# Grown by www-data to the biggest key table (16M entries, 1 GiB sparse):
# root reads no table bigger than the shm names.
size=$(stat -c %s "$shm.state")
grown=$((size + (16777216 - 1048576) * 64))
check "a per-key policy" fcq policy add 2 --match 'uid=*' --rate 5/s
as_www "truncate -s $grown '$shm.state'"
refused() { # refused COMMAND...: exits 1 naming the state file, its size and the size expected
	local out
	out=$(fc "$@" 2>&1)
	[ $? -eq 1 ] && grep -qF "shm state $shm.state: $grown bytes, expected $size (a key table of 1048576 entries, as the shm names)" <<<"$out"
}
check "keys refuses the state file www-data grew, naming it and both sizes" refused keys 2
check "top says so too, and shows the rest" sh -c "'$FC_BIN' --db '$db' --pin-dir '$pin' --shm '$shm' top --json -n 1 -d 0.1 2>&1 >/dev/null |
	grep -qF 'shm state $shm.state: $grown bytes'"
check "sync makes it anew, of the size the shm names" sh -c "'$FC_BIN' --db '$db' --pin-dir '$pin' --shm '$shm' sync >/dev/null &&
	[ \"\$(stat -c %s '$shm.state')\" = $size ]"
check "keys reads it then" fcq keys 2
kill -TERM "$apid" && wait "$apid"
apid=
check "the agent ran to its end" grep -q stopping "$d/agent.log"

# A worker killed between taking a ring index and stamping it leaves a slot
# that is never stamped: the agent skips it once later reports are stamped,
# counts it as lost, and escalates on the reports behind it (policy 1: past 3
# refusals a minute). The address is data only: nobody sends from it.
stalled_ring() { # as www-data: a slot claimed and left unstamped, then 4 reports of 198.18.0.77 by policy 1
	runuser -u www-data -- python3 - "$shm.state" <<'PY'
import struct, sys
RING = 4096 + 65537 * 128  # FC_STATE_RING_OFF; head, 56 bytes of padding, then 32-byte entries
with open(sys.argv[1], "r+b") as f:
    f.seek(RING)
    head = struct.unpack("<Q", f.read(8))[0]
    for i in range(5):  # seq (0: not stamped), policy, family, 3 pad bytes, address
        f.seek(RING + 64 + ((head + i) % 65536) * 32)
        f.write(struct.pack("<QIB3x16s", head + i + 1 if i else 0, 1, 4, bytes([198, 18, 0, 77])))
    f.seek(RING)
    f.write(struct.pack("<Q", head + 5))
PY
}
escalated() { fc ban list --json | jq_true 'any(.[]; .ban == "198.18.0.77" and .escalated_by_policy == 1)'; }
"$FC_BIN" --db "$db" --pin-dir "$pin" --shm "$shm" agent >"$d/agent2.log" 2>&1 &
apid=$!
wait_until 5 grep -q "watching store" "$d/agent2.log"
check "www-data leaves a ring slot unstamped before 4 reports" stalled_ring
check "the agent escalates behind the slot never stamped" wait_until 5 escalated
check "... and says it lost a report" grep -q "1 reports lost" "$d/agent2.log"
kill -TERM "$apid" && wait "$apid"
apid=
check "stats --json counts the report lost" jq_true '.offender_reports_lost >= 1' <<<"$(fc stats --json)"
check "... stats too" sh -c "'$FC_BIN' --db '$db' --pin-dir '$pin' --shm '$shm' stats | grep -q '^nginx: reports lost  *[1-9]'"
check "... and --prometheus" sh -c "'$FC_BIN' --db '$db' --pin-dir '$pin' --shm '$shm' stats --prometheus |
	grep -q '^freqctl_offender_reports_lost_total [1-9]'"

# A config file that others may write is refused, not trusted.
chmod 0666 "$shm"
fc sync >/dev/null 2>"$d/err"
check "sync refuses the config file once it is world-writable" [ $? = 1 ]
check "... saying so, and what to do" grep -q "shm $shm: writable by its group and others (mode 0666): remove it (rm $shm: the next publish makes it anew, as root's alone)" "$d/err"
rm "$shm"
check "sync after it was removed" fcq sync
check "... a new file, root's, 0640" [ "$(stat -c '%U %a' "$shm")" = "root 640" ]
exit 0
