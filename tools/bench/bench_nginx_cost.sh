#!/usr/bin/env bash
# make bench, nginx per key: what one request costs the nginx worker, counted
# rather than timed (perf can not read the CPU's counters on every machine,
# and req/s moves with the other tenants' load). Debian's nginx runs as one
# process (master_process off: it is the worker) under valgrind's callgrind,
# six ways over the same static file: plain, limit_req keyed on $arg_uid,
# and freqctl with the policy uid=*, without and with --show-keys (which
# keeps the values of busy keys: none here, where a key passes twice, so
# what it costs every request is its check), and with --algo window per
# minute, local and --fleet (this node alone in the fleet's node set: its
# share is the whole N; a shm made anew takes no share of the minute it was
# made in; each key's credit is rolled over when it is made, and again in
# a minute after, which costs some 100 instructions a request: both runs
# start as a minute starts, so that the passes fall in one minute, and a run
# that did not is marked). Each gets the same requests over one
# keep-alive connection: GET /index.html?uid=u0 .. u$((KEYS-1)), making every
# key (uninstrumented, so fast), then the same KEYS requests again, counted:
# every one a key made before, both tables holding all KEYS keys. Reported:
# instructions and simulated cache misses per request, and freqctl's over
# limit_req's. The worker's CPU time per request on a real run is in
# tools/bench/bench_nginx.sh. Everything started here is stopped by its pid.
#
# Both sides are checked to have done just that: limit_req expires a node
# idle for 60 s when it makes another, so a fill taking longer loses the
# first keys and makes them again in the counted pass (which then costs
# more); the run fails if limit_req allocated a node there, or if freqctl
# does not hold KEYS keys each passed twice.
#
#   KEYS    distinct uids (default 100000)
#   LL      simulated last-level cache, valgrind's --LL (default 8388608,16,64:
#           8 MiB, a worker's share of a server's L3)
#   CG_KEEP a directory to copy the callgrind outputs to (callgrind_annotate)
set -euo pipefail
cd "$(dirname "$0")/../.."
# This machine's /etc/default/freqctl is not this script's: its options only.
export FREQCTL_CONFIG=
. tools/bench/bench_nginx_conf.sh
KEYS=${KEYS:-100000}
LL=${LL:-8388608,16,64}

tag=$$
dir=/dev/shm/fc-ncost-$tag # tmpfs, as freqctl's default shm (see tools/bench/bench_nginx.sh)
port=$((30000 + (tag + 7) % 20000))
vg=
# nginx under valgrind, quit, then killed if it has not gone in 10 s (a
# QUIT can be lost on a loaded machine): never waited on without bound.
stop_vg() {
	[ -n "$vg" ] || return 0
	kill -QUIT "$vg" 2>/dev/null || true
	for _ in $(seq 50); do kill -0 "$vg" 2>/dev/null || break; sleep 0.2; done
	kill -KILL "$vg" 2>/dev/null || true
	wait "$vg" 2>/dev/null || true
	vg=
}
cleanup() {
	stop_vg
	rm -rf "$dir"
}
trap cleanup EXIT

tty=false; [ -t 2 ] && tty=true
progress() { $tty && printf '\r\033[K%s' "$*" >&2 || true; }

for bin in nginx valgrind callgrind_control callgrind_annotate curl bc jq; do
	command -v "$bin" >/dev/null || { echo "bench_nginx_cost: $bin missing (make bench installs it)" >&2; exit 1; }
done
[ "$KEYS" -gt 0 ] 2>/dev/null || { echo "bench_nginx_cost: KEYS \"$KEYS\": expected a count above 0" >&2; exit 2; }
mkdir -p "$dir/html"
echo ok >"$dir/html/index.html"
build/fc_l7_bench seed-keys "$dir/store.db" "$dir/shm"
build/fc_l7_bench seed-show-keys "$dir/store-sk.db" "$dir/shm-sk"
build/fc_l7_bench seed-keys-window "$dir/store-w.db" "$dir/shm-w"
build/fc_l7_bench seed-keys-fleet "$dir/store-fl.db" "$dir/shm-fl"
urls="http://127.0.0.1:$port/index.html?uid=u[0-$((KEYS - 1))]"

# run NAME EXTRA_MAIN EXTRA_HTTP EXTRA_SERVER: prints "Ir LLmisses D1misses"
# per counted request, and the fill's seconds.
run() {
	local d=$dir/$1 i t0 fill
	# Called in a command substitution: a shell of its own, whose exit (a
	# refused request) the script's trap does not see; nginx under valgrind
	# was left running.
	trap stop_vg EXIT
	mkdir -p "$d/logs"
	bench_nginx_conf "$d/nginx.conf" "$d" "$port" "$dir/html" "$2
master_process off;
daemon off;
worker_processes 1;
events { worker_connections 64; }" "keepalive_requests 100000000; keepalive_timeout 600s; $3" "$4"
	valgrind --tool=callgrind --instr-atstart=no --cache-sim=yes --I1=32768,8,64 --D1=49152,12,64 \
		--LL="$LL" --callgrind-out-file="$d/cg.out" nginx -p "$d" -c "$d/nginx.conf" -e "$d/logs/error.log" \
		>"$d/valgrind.log" 2>&1 &
	vg=$!
	for i in $(seq 300); do
		curl -s -o /dev/null "http://127.0.0.1:$port/index.html" && break
		kill -0 "$vg" 2>/dev/null || { cat "$d/valgrind.log" "$d/logs/error.log" >&2; exit 1; }
		sleep 0.2
	done
	progress "$1: making $KEYS keys"
	t0=$(date +%s)
	curl -sf -o /dev/null "$urls" || { echo "bench_nginx_cost: $1 refused a request" >&2; exit 1; }
	fill=$(($(date +%s) - t0))
	callgrind_control -i on "$vg" >/dev/null 2>&1
	callgrind_control -z "$vg" >/dev/null 2>&1
	progress "$1: $KEYS requests counted"
	curl -sf -o /dev/null "$urls" || { echo "bench_nginx_cost: $1 refused a request" >&2; exit 1; }
	callgrind_control -d "$vg" >/dev/null 2>&1
	for i in $(seq 100); do [ -s "$d/cg.out.1" ] && break; sleep 0.1; done
	stop_vg
	[ -z "${CG_KEEP:-}" ] || { mkdir -p "$CG_KEEP" && cp "$d/cg.out.1" "$CG_KEEP/$1.cg"; }
	# ngx_slab_alloc_locked: limit_req making a node (nothing else here
	# allocates in a zone).
	i=$(callgrind_annotate --inclusive=yes "$d/cg.out.1" 2>/dev/null | awk '/ngx_slab_alloc_locked/ { print $1; exit }')
	if [ -n "$i" ] && [ "${i//,/}" != 0 ]; then
		echo "bench_nginx_cost: $1 allocated in its zone in the counted pass ($i instructions in ngx_slab_alloc_locked):" \
			"nodes expired during the ${fill} s fill (limit_req expires nodes idle for 60 s); try fewer KEYS or a quieter machine" >&2
		exit 1
	fi
	# events: Ir Dr Dw I1mr D1mr D1mw ILmr DLmr DLmw
	awk -v n="$KEYS" -v fill="$fill" '/^summary:/ { printf "%.0f %.2f %.2f %d\n", $2 / n, ($8 + $9 + $10) / n, ($6 + $7) / n, fill }' \
		"$d/cg.out.1"
}

# freqctl's keys: KEYS of them, each passed twice (made in the fill, found
# in the counted pass); none in the overflow bucket.
check_keys() { # check_keys DB SHM
	local got
	got=$(build/freqctl --db "$1" --shm "$2" keys 1 --json --rows "$((KEYS + 1))" |
		jq -r '"\(length) \(map(.passed) | add)"')
	[ "$got" = "$KEYS $((2 * KEYS))" ] || {
		echo "bench_nginx_cost: freqctl holds keys/passed \"$got\", expected \"$KEYS $((2 * KEYS))\"" >&2
		exit 1
	}
}

module=$PWD/build/ngx_http_freqctl_module.so
plain=$(run plain "" "" "")
# 64 MB: room for the 100,000 keys (limit_req's nodes are about 128 bytes).
lr=$(run limitreq "" "limit_req_zone \$arg_uid zone=uid:64m rate=10000000r/s;" \
	"limit_req zone=uid burst=10000000 nodelay;")
fc=$(run freqctl "load_module $module;" "freqctl_shm $dir/shm; freqctl on; freqctl_uid \$arg_uid;" "")
check_keys "$dir/store.db" "$dir/shm"
sk=$(run showkeys "load_module $module;" "freqctl_shm $dir/shm-sk; freqctl on; freqctl_uid \$arg_uid;" "")
check_keys "$dir/store-sk.db" "$dir/shm-sk"
# run_minute NAME SHM: run, started as a minute starts (and never in the
# minute the shm was made: a --fleet node takes no share of it); its
# numbers get " (minute)" when a minute started during it.
run_minute() {
	local m out
	m=$(($(date +%s) / 60))
	while [ "$(($(date +%s) / 60))" = "$m" ]; do progress "$1: waiting for a minute to start"; sleep 0.5; done
	m=$(($(date +%s) / 60))
	out=$(run "$1" "load_module $module;" "freqctl_shm $2; freqctl on; freqctl_uid \$arg_uid;" "")
	[ "$(($(date +%s) / 60))" = "$m" ] || out="$out (minute)"
	echo "$out"
}
win=$(run_minute window "$dir/shm-w")
check_keys "$dir/store-w.db" "$dir/shm-w"
fl=$(run_minute fleet "$dir/shm-fl")
check_keys "$dir/store-fl.db" "$dir/shm-fl"
progress ""

echo "nginx per key, the worker's cost per request under callgrind (one process, the worker; $KEYS uids"
echo "u0..u$((KEYS - 1)) each made first, then the same $KEYS requests counted; GET /index.html?uid=...,"
echo "a 3-byte file, one keep-alive connection; simulated L1d 48 KiB, LL ${LL%%,*} bytes; checked: limit_req"
echo "made no node and freqctl no key in the counted pass):"
printf '%-34s %12s %14s %14s %8s\n' "variant" "instr/req" "LL misses/req" "D1 misses/req" "fill s"
line() { printf '%-34s %12s %14s %14s %8s %s\n' "$1" $2; }
line "plain nginx" "$plain"
line "limit_req \$arg_uid, $KEYS keys" "$lr"
line "freqctl uid=*, $KEYS keys" "$fc"
line "freqctl uid=* --show-keys" "$sk"
line "freqctl uid=* --algo window" "$win"
line "freqctl uid=* --algo window --fleet" "$fl"
read -r pi pm _ <<<"$plain"
read -r li lm _ <<<"$lr"
read -r fi fm _ <<<"$fc"
read -r si _ <<<"$sk"
read -r wi _ <<<"$win"
read -r xi _ <<<"$fl"
printf 'freqctl --fleet x the same without: instructions/req %.4f (target <= 1.005), x limit_req %.3f (target <= 1.0)\n' \
	"$(echo "$xi / $wi" | bc -l)" "$(echo "$xi / $li" | bc -l)"
printf 'freqctl --show-keys x limit_req: instructions/req %.3f (target <= 1.0)\n' "$(echo "$si / $li" | bc -l)"
printf 'freqctl x limit_req: instructions/req %.3f (target <= 1.0)' "$(echo "$fi / $li" | bc -l)"
if [ "$(echo "$lm > 0" | bc)" = 1 ]; then
	printf ', LL misses/req %.3f\n' "$(echo "$fm / $lm" | bc -l)"
else
	echo ", LL misses/req n/a (limit_req none)"
fi
printf 'over plain nginx: freqctl %+.0f instructions %+.2f LL misses, limit_req %+.0f instructions %+.2f LL misses\n' \
	"$(echo "$fi - $pi" | bc -l)" "$(echo "$fm - $pm" | bc -l)" "$(echo "$li - $pi" | bc -l)" "$(echo "$lm - $pm" | bc -l)"
