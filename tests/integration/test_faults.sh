#!/usr/bin/env bash
# Faults: publishers killed at random instants, nginx workers killed under
# load, the SQLite store's disk full. freqctl attached at XDP on a veth
# (lib.sh), Debian's nginx with the module, all on scratch paths.
#
# 1. The agent and the CLI, each a publisher, are SIGKILLed at random
#    instants while policies and bans churn, 200 times. After every kill:
#    XDP still drops a banned source (BPF_PROG_TEST_RUN on the attached
#    program) and nginx still refuses a banned uid and a spent limit; never
#    a decision on a half-written config. After it all, an agent restarted
#    publishes once and `sync` then has nothing to do.
# 2. nginx workers SIGKILLed while clients hammer one uid of a per-key policy: the
#    master restarts them, nothing wedges, and admissions stay within the
#    limit.
# 3. The store on a full filesystem: changes are refused with a message and
#    nothing that was there is lost, in the store or in the kernel.
. "$(dirname "$0")/lib.sh"
d=/tmp/fc-it-$tag
web=$(fc_port)
apid= cpid= mnt=
stop_ours() {
	[ -n "$apid" ] && kill -KILL "$apid" 2>/dev/null && wait "$apid" 2>/dev/null
	[ -n "$cpid" ] && kill -KILL "$cpid" 2>/dev/null && wait "$cpid" 2>/dev/null
	fc_nginx_stop
	[ -n "$mnt" ] && umount "$mnt" 2>/dev/null
}
trap 'stop_ours; fc_finish' EXIT
why=$(fc_nginx_missing)
[ -z "$why" ] || skip_all "$why"
command -v bpftool >/dev/null || skip_all "bpftool not installed"
fc_setup
check "attach xdp" fcq attach "$host" --mode xdp
prog=$(xdp_hook_prog)
mkdir -p "$d"

# The verdict of the attached program on one ICMP echo from 198.18.0.SRC:
# 1 XDP_DROP, 2 XDP_PASS.
xdp_verdict() {
	printf '\x02\x00\x00\x00\x00\x01\x02\x00\x00\x00\x00\x02\x08\x00\x45\x00\x00\x1c\x00\x00\x40\x00\x40\x01\x00\x00\xc6\x12\x00'"$(printf '\\x%02x' "$1")"'\xc6\x12\x00\x01\x08\x00\xf7\xff\x00\x00\x00\x00' >"$d/frame"
	bpftool prog run id "$prog" data_in "$d/frame" repeat 1 2>&1 | sed -n 's/^Return value: \([0-9]*\).*/\1/p'
}
get() { curl -s -o /dev/null -w '%{http_code}' --max-time 2 "$ngx_url/?uid=$1"; }

# ---- 1. publishers killed ----
fcq ban add 198.18.0.50
fcq ban add uid=bob
fcq policy add 1 --match uid=spent --rate 1/d
FC_NGX_WORKERS=2 fc_nginx_start "127.0.0.1:$web" || skip_all "nginx did not start"
before="$(xdp_verdict 50) $(get bob) $(get spent) $(get spent)"
check "the fixed state before: 198.18.0.50 dropped, bob refused, a uid's one request a day spent ($before)" \
	[ "$before" = "1 403 200 429" ]

kills=200 lost_ban=0 l7_wrong=0 started=0
# Load meanwhile: clients asking as bob and as the spent uid, until told to
# stop (or 20,000 requests); any other answer is counted.
(
	n=0
	while [ ! -e "$d/stop" ] && [ "$n" -lt 10000 ]; do
		[ "$(get bob)" = 403 ] || echo bob
		[ "$(get spent)" = 429 ] || echo spent
		n=$((n + 1))
	done >"$d/load-wrong"
	echo "$n" >"$d/load-n"
) &
lpid=$!
t0=$(date +%s)
for i in $(seq "$kills"); do
	[ $(($(date +%s) - t0)) -lt 240 ] || break # bounded in time as well as count
	"$FC_BIN" --db "$db" --pin-dir "$pin" --shm "$shm" agent -q >>"$d/agent.log" 2>&1 &
	apid=$!
	# A change from another writer while it runs: its own publish, and the agent's.
	if ((i % 2)); then
		fc policy set $((100 + RANDOM % 40)) --match "uid=c$RANDOM" --rate "$((RANDOM % 100 + 1))/s" >/dev/null 2>&1 &
	else
		fc ban add "198.19.$((RANDOM % 256)).$((RANDOM % 256))" --ttl 1h >/dev/null 2>&1 &
	fi
	cpid=$!
	sleep "0.0$((RANDOM % 10))"
	kill -KILL "$apid" 2>/dev/null
	((i % 3)) || kill -KILL "$cpid" 2>/dev/null
	wait "$apid" 2>/dev/null
	wait "$cpid" 2>/dev/null
	apid= cpid=
	started=$i
	[ "$(xdp_verdict 50)" = 1 ] || lost_ban=$((lost_ban + 1))
	[ "$(get bob)" = 403 ] && [ "$(get spent)" = 429 ] || l7_wrong=$((l7_wrong + 1))
done
touch "$d/stop"
wait "$lpid"
check "$started publishers killed at random instants (of $kills; at most 240 s)" [ "$started" -ge 100 ]
check "... under load: $(($(cat "$d/load-n") * 2)) requests meanwhile, $(wc -l <"$d/load-wrong") answered otherwise" \
	[ ! -s "$d/load-wrong" ]
check "... XDP dropped the banned source after every kill ($lost_ban lost)" [ "$lost_ban" = 0 ]
check "... nginx refused the banned uid and the spent limit after every kill ($l7_wrong wrong)" [ "$l7_wrong" = 0 ]
check "... nginx logged no shm it could not use" sh -c "! grep -E 'freqctl: shm .*(unusable|skipped|requests pass)' '$d/logs/error.log'"
"$FC_BIN" --db "$db" --pin-dir "$pin" --shm "$shm" agent >"$d/agent2.log" 2>&1 &
apid=$!
for _ in $(seq 50); do grep -q "watching store" "$d/agent2.log" && break; sleep 0.1; done
check "an agent restarted after it all publishes" grep -q "watching store" "$d/agent2.log"
kill -TERM "$apid" && wait "$apid"
apid=
nothing_to_do() {
	fc sync --json | jq -e '.added == 0 and .changed == 0 and .removed == 0 and .policies_changed == 0' >/dev/null
}
check "... and sync then has nothing to do" nothing_to_do

# ---- 2. nginx workers killed under load ----
fcq policy add 2 --match 'uid=*' --rate 20/h --burst 20 # per key: uid=load's own bucket
master=$(cat "$d/nginx.pid")
: >"$d/codes"
load() { # 4 clients, 150 requests each, bounded by curl's timeout
	local c
	for c in 1 2 3 4; do
		(for _ in $(seq 150); do get load; echo; done >>"$d/codes.$c") &
	done
	wait
}
load &
lpid=$!
for _ in $(seq 8); do
	sleep 0.2
	for w in $(pgrep -P "$master"); do kill -KILL "$w" 2>/dev/null; done
done
wait "$lpid"
cat "$d"/codes.* >"$d/codes"
passed=$(grep -c '^200$' "$d/codes")
check "workers killed 8 times under load: the limit held ($passed of $(wc -l <"$d/codes") admitted, at most 20)" \
	[ "$passed" -le 20 ]
cut=$(grep -vcE '^(200|429)$' "$d/codes")
check "... and every charge is accounted for: $passed admitted, $cut cut off by a kill" [ $((passed + cut)) -ge 20 ]
check "... nginx answers afterwards (no wedge)" sh -c "[ \"\$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 '$ngx_url/?uid=fresh')\" = 200 ]"
check "... with fresh workers" [ "$(pgrep -P "$master" | wc -l)" = 2 ]

# ---- 3. the store's disk full ----
mnt=$d/small
mkdir -p "$mnt"
# Room for the schema (its change log, indexes and triggers) and a few rows.
if ! command -v sqlite3 >/dev/null; then
	mnt=
	skip_one "disk full: sqlite3 (Debian sqlite3) not installed"
elif ! mount -t tmpfs -o size=1m tmpfs "$mnt" 2>/dev/null; then
	mnt=
	skip_one "disk full: can not mount a tmpfs here"
else
	fs() { "$FC_BIN" --db "$mnt/store.db" --pin-dir "$pin-full" --shm "$d/shm-full" "$@"; }
	fs policy add 1 --match uid=keep --rate 5/s >/dev/null
	fs ban add 198.18.0.77 >/dev/null
	# The WAL keeps its file's blocks from one commit to the next (a
	# change that fits in them is taken, durably), and the schema's
	# first commit left some hundred KiB: the file truncated (and kept).
	sqlite3 "$mnt/store.db" '.filectrl persist_wal 1' 'PRAGMA wal_checkpoint(TRUNCATE)' >/dev/null
	dd if=/dev/zero of="$mnt/fill" bs=4k 2>/dev/null # to the last block
	out=$(fs ban add 198.18.0.78 2>&1)
	rc=$?
	check "disk full: a ban is refused, exit 1" [ "$rc" = 1 ]
	# ENOSPC from a system call SQLite reports with it; a short write to
	# the WAL it reports as SQLITE_FULL, "database or disk is full".
	check "... saying why: $out" grep -qE 'No space left on device|disk is full' <<<"$out"
	out=$(fs policy add 2 --match uid=more --rate 1/s 2>&1)
	check "... and a policy" [ $? = 1 ]
	rm -f "$mnt/fill"
	check "space again: the store has what it had, and nothing else" \
		sh -c "[ \"\$('$FC_BIN' --db '$mnt/store.db' --pin-dir '$pin-full' --shm '$d/shm-full' ban list --json | jq -c '[.[].ban]')\" = '[\"198.18.0.77\"]' ] &&
			[ \"\$('$FC_BIN' --db '$mnt/store.db' --pin-dir '$pin-full' --shm '$d/shm-full' policy list --json | jq -c '[.[].id]')\" = '[1]' ]"
	check "... and the kernel what the store has: sync has nothing to do" \
		sh -c "'$FC_BIN' --db '$mnt/store.db' --pin-dir '$pin-full' --shm '$d/shm-full' sync --json | jq -e '.added == 0 and .removed == 0 and .changed == 0' >/dev/null"
	rm -rf "$pin-full"
fi
exit 0
