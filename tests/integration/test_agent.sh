#!/usr/bin/env bash
# The agent with a SQLite store: it publishes what others write to the store
# (another freqctl with its own pin dir and shm, a raw SQL insert) to its
# pin dir and shm within 100 ms; purges expired bans; answers SIGHUP; keeps
# enforcing while the store is gone; refuses a second agent; leaves the maps
# in place on SIGTERM. The agent started here is stopped by its pid on exit.
# tests/run.sh: alone: it steps the wall clock (adjtimex), which every agent running beside it would see.
. "$(dirname "$0")/lib.sh"
dir=/tmp/fc-it-$tag
other=/sys/fs/bpf/fc-it-other-$tag
apid=
trap '[ -n "$apid" ] && kill -TERM "$apid" 2>/dev/null && wait "$apid" 2>/dev/null; rm -rf "$other"; fc_finish' EXIT
[ "$(id -u)" -eq 0 ] || skip_all "needs root (pinned maps)"
command -v sqlite3 >/dev/null || skip_all "sqlite3 not installed"
mkdir -p "$dir"
elsewhere() { "$FC_BIN" --db "$dir/store.db" --pin-dir "$other" --shm "$dir/other.shm" "$@" >/dev/null; }

# The key of 198.18.X.Y in fc_exact4, as bpftool takes it.
in_map() { bpftool map lookup pinned "$pin/fc_exact4" key 198 18 "$1" "$2" >/dev/null 2>&1; }
# Polls for at most 100 ms.
within_100ms() {
	local i
	for i in $(seq 20); do "$@" && return 0; sleep 0.005; done
	return 1
}
logged() { grep -q "$1" "$dir/agent.log"; }
port=$(fc_port 0) # loopback only
# /metrics needs the bearer token, as the console does.
metric() { curl -s --max-time 2 -H "Authorization: Bearer $(cat "$dir/token")" "http://127.0.0.1:$port/metrics" |
	awk -v k="$1" '$1 == k { print $2 }'; }
scrape() { curl -s -o /dev/null -w '%{http_code}' --max-time 2 "$@" "http://127.0.0.1:$port/metrics"; }
metric_at_least() { local v; v=$(metric "$1"); [ -n "$v" ] && [ "$v" -ge "$2" ]; }

check "--metrics with no port is a usage error (exit 2)" sh -c "'$FC_BIN' --db '$dir/store.db' --pin-dir '$pin' --shm '$dir/shm' agent --metrics 127.0.0.1 2>/dev/null; [ \$? = 2 ]"
"$FC_BIN" --db "$dir/store.db" --pin-dir "$pin" --shm "$dir/shm" --node edge-a agent --weight 0.5 \
	--metrics "127.0.0.1:$port" --token-file "$dir/token" >"$dir/agent.log" 2>&1 &
apid=$!
for _ in $(seq 50); do logged "watching store" && break; sleep 0.1; done
check "agent started" logged "watching store"
check "a second agent is refused" sh -c "! '$FC_BIN' --db '$dir/store.db' --pin-dir '$pin' --shm '$dir/shm' agent 2>'$dir/err'"
check "... saying which" grep -q "another agent (pid $apid) already runs on store" "$dir/err"
check "a second agent on another store but the same pin dir is refused, saying which" \
	sh -c "! '$FC_BIN' --db '$dir/second.db' --pin-dir '$pin' --shm '$dir/shm2' agent 2>'$dir/err' &&
		grep -q 'another agent (pid $apid) already runs on pin dir $pin' '$dir/err'"

elsewhere ban add 198.18.0.7
check "a ban written elsewhere reaches the agent's maps within 100 ms" within_100ms in_map 0 7
check "GET /metrics counts the ban" [ "$(metric 'freqctl_bans{kind="address",reason="by_hand"}')" = 1 ]
check "GET /metrics names the build" [ "$(metric "freqctl_build_info{version=\"$(cat VERSION)\"}")" = 1 ]
check "/metrics without the token: 401" [ "$(scrape)" = 401 ]
check "/metrics with a Host naming another server: 403 (DNS rebinding)" \
	[ "$(scrape -H "Authorization: Bearer $(cat "$dir/token")" -H 'Host: evil.example:'"$port")" = 403 ]
check "... localhost is this server" [ "$(scrape -H "Authorization: Bearer $(cat "$dir/token")" -H "Host: localhost:$port")" = 200 ]
old=$(cat "$dir/token")
check "console-token --rotate prints a new token" sh -c "'$FC_BIN' console-token --token-file '$dir/token' --rotate | grep -qxE '[0-9a-f]{64}'"
check "... the old one is refused from the next request" [ "$(scrape -H "Authorization: Bearer $old")" = 401 ]
check "... the new one is taken, without a restart" [ "$(scrape -H "Authorization: Bearer $(cat "$dir/token")")" = 200 ]
check "... the file stays 0600" [ "$(stat -c %a "$dir/token")" = 600 ]
check "... and the agent's publishes (start + the ban)" within_100ms metric_at_least freqctl_agent_publishes_total 2
check "any other path is a 404" [ "$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $(cat "$dir/token")" "http://127.0.0.1:$port/")" = 404 ]
sqlite3 -cmd ".timeout 5000" "$dir/store.db" "INSERT INTO bans (family, addr, len, created) VALUES (4, x'c6120008', 32, 1)"
# Every publish asks whether any policy is the fleet's: an index answers,
# not a read of every policy (65,535 of them took a command 160 ms).
check "\"any fleet policy?\" reads an index, not every policy" sh -c "sqlite3 -cmd '.timeout 5000' '$dir/store.db' \
	'EXPLAIN QUERY PLAN SELECT count(*) FROM policies WHERE fleet = 1' | grep -q 'USING INDEX policies_fleet'"
check "a row written by SQL reaches the maps within 100 ms" within_100ms in_map 0 8
elsewhere policy add 5 --match uid=u5 --rate 1/m
check "a policy written elsewhere reaches the agent's shm" \
	within_100ms sh -c "'$FC_BIN' --db '$dir/store.db' --pin-dir '$pin' --shm '$dir/shm' stats --json | grep -q '\"layer\": \"nginx\"'"
# Node weights: this agent's node enforces half of every rate.
elsewhere policy add 6 --match ip=198.18.0.66 --rate 40/m
check "node weight 0.5: 40/m is published as 20/m" within_100ms sh -c "[ \"\$(bpftool -j map lookup pinned '$pin/fc_policies' key 2 0 0 0 | jq '.formatted.value[\"\"].lim.tier[0].limit')\" = 20 ]"
elsewhere node set edge-a 0.25
check "a weight change republishes: 10/m" within_100ms sh -c "[ \"\$(bpftool -j map lookup pinned '$pin/fc_policies' key 2 0 0 0 | jq '.formatted.value[\"\"].lim.tier[0].limit')\" = 10 ]"
elsewhere ban del 198.18.0.7
check "a lifted ban leaves the maps within 100 ms" within_100ms sh -c "! bpftool map lookup pinned '$pin/fc_exact4' key 198 18 0 7 >/dev/null 2>&1"
elsewhere ban add 198.18.0.9 --ttl 2s # expiry is on whole seconds: 1s could lapse at once
check "a ban with a TTL is published" within_100ms in_map 0 9
sleep 3.2
check "... and purged from the store when it expires" sh -c "! '$FC_BIN' --db '$dir/store.db' --pin-dir '$pin' --shm '$dir/shm' ban list | grep -q 198.18.0.9"
check "... and from the maps" sh -c "! bpftool map lookup pinned '$pin/fc_exact4' key 198 18 0 9 >/dev/null 2>&1"
kill -HUP "$apid"
check "SIGHUP republishes" within_100ms logged "published (SIGHUP)"

# A step of the wall clock: the packet path's offset to UTC is put right.
# The offset the maps hold is made an hour wrong first (as after a step the
# agent missed); the step is adjtimex's ADJ_SETOFFSET of +1 ns, then of -1 ns
# (a step of zero notifies no timer): the clock ends where it was.
# Read exactly: jq prints a u64 to 17 digits (jiffies_utc_ns is not whole ms).
cfg_field() {
	bpftool -j map lookup pinned "$pin/fc_config" key 0 0 0 0 |
		python3 -c 'import json, sys; print(json.load(sys.stdin)["formatted"]["value"][sys.argv[1]])' "$1"
}
utc_offset() { cfg_field utc_offset_ns; }
jiffies_utc() { cfg_field jiffies_utc_ns; }
clock_nudge() {
	python3 - <<'PY'
import ctypes, ctypes.util, sys
class timeval(ctypes.Structure):
    _fields_ = [("sec", ctypes.c_long), ("usec", ctypes.c_long)]
class timex(ctypes.Structure):
    _fields_ = [("modes", ctypes.c_uint), ("offset", ctypes.c_long), ("freq", ctypes.c_long),
                ("maxerror", ctypes.c_long), ("esterror", ctypes.c_long), ("status", ctypes.c_int),
                ("constant", ctypes.c_long), ("precision", ctypes.c_long), ("tolerance", ctypes.c_long),
                ("time", timeval), ("tick", ctypes.c_long), ("ppsfreq", ctypes.c_long),
                ("jitter", ctypes.c_long), ("shift", ctypes.c_int), ("stabil", ctypes.c_long),
                ("jitcnt", ctypes.c_long), ("calcnt", ctypes.c_long), ("errcnt", ctypes.c_long),
                ("stbcnt", ctypes.c_long), ("tai", ctypes.c_int), ("pad", ctypes.c_int * 11)]
libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
for sec, nsec in ((0, 1), (-1, 999999999)):  # ADJ_SETOFFSET | ADJ_NANO: +1 ns, -1 ns
    t = timex(modes=0x0100 | 0x2000, time=timeval(sec, nsec))
    if libc.adjtimex(ctypes.byref(t)) < 0:
        sys.exit(1)
PY
}
# The jiffies form's constant (what the packet path reads where it is set)
# is made as wrong: the step must measure it again, not keep it.
right=$(utc_offset)
jright=$(jiffies_utc)
python3 - "$pin/fc_config" "$right" "$jright" <<'PY'
import json, subprocess, sys
pin, right, jright = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
v = json.loads(subprocess.check_output(["bpftool", "-j", "map", "lookup", "pinned", pin, "key", "0", "0", "0", "0"]))
raw = bytes(int(b, 16) for b in v["value"])
for val in (right, jright) if jright else (right,):
    at = raw.index(val.to_bytes(8, "little"))
    raw = raw[:at] + (val - 3600 * 10**9).to_bytes(8, "little") + raw[at + 8:]
subprocess.check_call(["bpftool", "map", "update", "pinned", pin, "key", "0", "0", "0", "0", "value"] +
                      [str(b) for b in raw])
PY
check "fc_config's offset to UTC made an hour wrong" [ "$(utc_offset)" = $((right - 3600000000000)) ]
if clock_nudge; then
	check "a step of the wall clock republishes" within_100ms logged "published (clock stepped)"
	check "... and the offset to UTC is right again: $(utc_offset) (was $right)" \
		[ $(( $(utc_offset) - right )) -ge -2000000 -a $(( $(utc_offset) - right )) -le 2000000 ]
	if [ "$jright" != 0 ]; then
		# Measured again: within a few ticks of the constant before (HZ=100: 10 ms).
		check "... and so is the jiffies form's: $(jiffies_utc) (was $jright)" \
			[ $(( $(jiffies_utc) - jright )) -ge -40000000 -a $(( $(jiffies_utc) - jright )) -le 40000000 ]
	else
		skip_one "no jiffies constant published here (the clock probe could not run)"
	fi
else
	skip_one "adjtimex(ADJ_SETOFFSET) refused here (no CAP_SYS_TIME): no clock step to watch"
	skip_one "... nor the offset put right after one"
	skip_one "... nor the jiffies form's"
fi
mv "$dir/store.db" "$dir/store.away"
touch "$dir/poke" # a directory event, as a writer would make
sleep 0.3
kill -HUP "$apid"
sleep 0.3
check "store gone: the agent says so and keeps the bans enforced" sh -c "grep -q 'cannot publish, keeping' '$dir/agent.log' && bpftool map lookup pinned '$pin/fc_exact4' key 198 18 0 8 >/dev/null 2>&1"
check "store gone: no empty store was made" [ ! -e "$dir/store.db" ]
check "store gone: /metrics counts the failed publish" metric_at_least freqctl_agent_publish_errors_total 1
mv "$dir/store.away" "$dir/store.db"
for _ in $(seq 40); do logged "store readable again" && break; sleep 0.1; done
check "store back: the agent recovers" logged "store readable again"
kill -TERM "$apid"
wait "$apid"
rc=$?
apid=
check "SIGTERM: clean exit" [ "$rc" = 0 ]
check "SIGTERM: the pin dir's lock file is gone" [ ! -e "/run/freqctl/agent$(echo "$pin" | tr / _).lock" ]
check "SIGTERM: the maps stay" in_map 0 8
exit 0
