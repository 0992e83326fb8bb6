#!/usr/bin/env bash
# make bench, nginx side: req/s of Debian's nginx on loopback serving a small
# static file, plain, with freqctl's module (1,000 and 65,536 policies "uid=uK,
# ip=127.0.0.1", the request matching one), and with limit_req (two zones:
# address and uid) doing the equivalent; then per key: freqctl's "uid=*"
# against "limit_req_zone $arg_uid", both holding 100,000 uids that the
# requests cycle through. Rounds interleaved, medians, ratios from the same
# run. Then decisions/s of the L7 engine in a tight loop: per key with
# 1,000,000 live keys against 65,536 fixed-value policies, and against a
# GCRA Lua script in Redis via redis-benchmark (EVALSHA, a key per user;
# unpipelined, and pipelined, each said).
# Everything started here is stopped by its pid.
#
# req/s on a shared 2-core machine moves by several per cent between runs, so
# each wrk run is also measured as the nginx worker's own CPU time per
# request (utime + stime from /proc/PID/stat, over the run): what the worker
# spends, whatever else runs beside it; and where perf can read the CPU's
# counters, as its cycles and instructions per request (perf stat on its
# pid). With one worker saturated, plain's cost/req over a variant's is that
# variant's req/s ratio without the noise of the other core. The per-key
# variants have every one of their 100,000 keys made before the first round.
# Instructions per request without CPU counters: tools/bench/bench_nginx_cost.sh.
set -euo pipefail
cd "$(dirname "$0")/../.."
# This machine's /etc/default/freqctl is not this script's: its options only.
export FREQCTL_CONFIG=
. tools/bench/bench_nginx_conf.sh
ROUNDS=${ROUNDS:-5}
SECS=${SECS:-3}

tag=$$
# In tmpfs, where freqctl keeps its shm by default (/dev/shm/freqctl): a
# state file on a disk filesystem has its pages written back and faulted
# writable again while the workers write it, which measures the filesystem.
dir=/dev/shm/fc-nbench-$tag
port=$((30000 + tag % 20000))
rport=$((port + 1))
pids=()
cleanup() {
	local p
	for p in "${pids[@]}"; do kill -QUIT "$p" 2>/dev/null || true; done
	[ -f "$dir/redis.pid" ] && kill "$(cat "$dir/redis.pid")" 2>/dev/null || true
	sleep 0.3
	for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
	rm -rf "$dir" "/sys/fs/bpf/fc-nbench-$tag"
}
trap cleanup EXIT

tty=false; [ -t 2 ] && tty=true
progress() { $tty && printf '\r\033[K%s' "$*" >&2 || true; }

for bin in nginx wrk redis-server redis-benchmark redis-cli; do
	command -v "$bin" >/dev/null || { echo "bench_nginx: $bin missing (make bench installs it)" >&2; exit 1; }
done
mkdir -p "$dir/html"
echo ok >"$dir/html/index.html"
chmod -R a+rX "$dir"

# One nginx per variant, each on its own port, started once.
start() { # start NAME PORT EXTRA_MAIN EXTRA_HTTP EXTRA_SERVER
	local d=$dir/$1
	mkdir -p "$d/logs"
	bench_nginx_conf "$d/nginx.conf" "$d" "$2" "$dir/html" "$3
user www-data www-data;
worker_processes 1;
worker_cpu_affinity 10;
events { worker_connections 1024; }" "$4" "$5"
	nginx -p "$d" -c "$d/nginx.conf" -e "$d/logs/error.log"
	for _ in $(seq 50); do [ -f "$d/nginx.pid" ] && break; sleep 0.1; done
	pids+=("$(cat "$d/nginx.pid")")
	for _ in $(seq 50); do pgrep -P "$(cat "$d/nginx.pid")" >"$d/worker" && break; sleep 0.1; done
}
# The worker's cycles and instructions, where perf can read the CPU's
# counters: perf stat runs either way, but prints "<not supported>" where it
# can not (many VMs). FC_BENCH_NO_COUNTERS=1 takes the fallback regardless.
counters=false
if [ -z "${FC_BENCH_NO_COUNTERS:-}" ] && perf stat -e cycles,instructions -x, -o "$dir/perf-probe" true 2>/dev/null &&
	grep -q '^[0-9][0-9]*,[^,]*,cycles' "$dir/perf-probe" && grep -q '^[0-9][0-9]*,[^,]*,instructions' "$dir/perf-probe"; then
	counters=true
fi

module=$PWD/build/ngx_http_freqctl_module.so
for n in 1000 65536; do
	build/fc_l7_bench seed "$dir/store-$n.db" "$dir/shm-$n" "$n"
done
build/fc_l7_bench seed-keys "$dir/store-keys.db" "$dir/shm-keys"
# The per-key variants' requests: uids u0..u99999, cycling.
KEYS=100000
cat >"$dir/keys.lua" <<LUA
local i = 0
request = function()
  i = (i + 1) % $KEYS
  return wrk.format(nil, "/index.html?uid=u" .. i)
end
LUA
start plain "$port" "" "" ""
start fc1k $((port + 2)) "load_module $module;" "freqctl_shm $dir/shm-1000; freqctl on; freqctl_uid \$arg_uid;" ""
start fc64k $((port + 3)) "load_module $module;" "freqctl_shm $dir/shm-65536; freqctl on; freqctl_uid \$arg_uid;" ""
start limitreq $((port + 4)) "" \
	"limit_req_zone \$binary_remote_addr zone=addr:10m rate=10000000r/s; limit_req_zone \$arg_uid zone=uid:10m rate=10000000r/s;" \
	"limit_req zone=addr burst=10000000 nodelay; limit_req zone=uid burst=10000000 nodelay;"
start fckeys $((port + 5)) "load_module $module;" "freqctl_shm $dir/shm-keys; freqctl on; freqctl_uid \$arg_uid;" ""
# 64 MB: room for the 100,000 keys (limit_req's nodes are about 128 bytes).
start limitreqkeys $((port + 6)) "" "limit_req_zone \$arg_uid zone=uid:64m rate=10000000r/s;" \
	"limit_req zone=uid burst=10000000 nodelay;"

names=(plain fc1k fc64k limitreq fckeys limitreqkeys)
labels=("plain nginx" "freqctl, 1,000 policies" "freqctl, 65,536 policies" "limit_req, two zones"
	"freqctl, uid=*, 100k keys" "limit_req \$arg_uid, 100k keys")
nv=${#names[@]}
# Both per-key variants hold all their keys before the first round: the
# rounds compare lookups of keys made, not the making of them.
for i in 4 5; do
	progress "${labels[$i]}: making the keys"
	curl -sf -o /dev/null "http://127.0.0.1:$((port + i + 1))/index.html?uid=u[0-$((KEYS - 1))]" ||
		{ echo "bench_nginx: ${labels[$i]} refused a request while its keys were made" >&2; exit 1; }
done
hz=$(getconf CLK_TCK)
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; } # utime + stime
declare -A res cyc ins cpu
for r in $(seq "$ROUNDS"); do
	for k in $(seq 0 $((nv - 1))); do
		i=$(((k + r) % nv)) # each round starts with another variant: no place in the order is favoured
		progress "round $r/$ROUNDS: ${labels[$i]}"
		p=$((port + (i == 0 ? 0 : i + 1)))
		worker=$(cat "$dir/${names[$i]}/worker")
		wrkargs=(-t1 -c32 -d"${SECS}s")
		[ "$i" -ge 4 ] && wrkargs+=(-s "$dir/keys.lua")
		c0=$(cpu_ticks "$worker")
		if $counters; then
			out=$(perf stat -e cycles,instructions -x, -o "$dir/perf" -p "$worker" -- \
				taskset -c 0 wrk "${wrkargs[@]}" "http://127.0.0.1:$p/index.html?uid=u1")
		else
			out=$(taskset -c 0 wrk "${wrkargs[@]}" "http://127.0.0.1:$p/index.html?uid=u1")
		fi
		c1=$(cpu_ticks "$worker")
		if grep -q "Non-2xx" <<<"$out"; then
			echo "bench_nginx: ${labels[$i]} answered non-2xx: the comparison would be void" >&2
			exit 1
		fi
		rps=$(sed -n 's/^Requests\/sec: *\([0-9.]*\).*/\1/p' <<<"$out")
		res[$i]="${res[$i]:-} $rps"
		n=$(sed -n 's/^ *\([0-9]*\) requests in.*/\1/p' <<<"$out")
		cpu[$i]="${cpu[$i]:-} $(((c1 - c0) * 1000000000 / hz / n))" # ns per request
		if $counters; then
			cyc[$i]="${cyc[$i]:-} $(($(grep ',cycles' "$dir/perf" | cut -d, -f1) / n))"
			ins[$i]="${ins[$i]:-} $(($(grep ',instructions' "$dir/perf" | cut -d, -f1) / n))"
		fi
	done
done
progress ""
median() { tr ' ' '\n' | grep . | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
base=$(echo "${res[0]}" | median)
echo "nginx req/s (wrk -t1 -c32, ${SECS}s x $ROUNDS interleaved rounds, median; one worker on CPU 1, wrk on CPU 0;"
echo "GET /index.html?uid=u1 (per key: u0..u99999 cycling, every key made before), a 3-byte file):"
printf '%-28s %12s %10s\n' "variant" "req/s" "x plain"
for i in $(seq 0 $((nv - 1))); do
	m=$(echo "${res[$i]}" | median)
	printf '%-28s %12.0f %10.3f\n' "${labels[$i]}" "$m" "$(echo "$m / $base" | bc -l)"
done
lr=$(echo "${res[3]}" | median)
for i in 1 2; do
	m=$(echo "${res[$i]}" | median)
	printf '%-28s x limit_req %.3f (target >= 1.0), x plain %.3f (target >= 0.97)\n' "${labels[$i]}" \
		"$(echo "$m / $lr" | bc -l)" "$(echo "$m / $base" | bc -l)"
done
m=$(echo "${res[4]}" | median)
printf '%-28s x limit_req $arg_uid %.3f (target >= 1.0)\n' "${labels[4]}" "$(echo "$m / $(echo "${res[5]}" | median)" | bc -l)"
# A ratio taken within each round, where the variants ran seconds apart:
# drift between rounds (another tenant starting) cancels out. paired NAME
# REF VARIANT DIR: median (quartiles) of REF/VARIANT (DIR=1) or VARIANT/REF.
paired() {
	local -n v=$1
	paste <(tr ' ' '\n' <<<"${v[$2]}" | grep .) <(tr ' ' '\n' <<<"${v[$3]}" | grep .) |
		awk -v dir="$4" '{ print dir == 1 ? $1 / $2 : $2 / $1 }' | sort -n |
		awk '{ a[NR] = $1 } END { printf "%.3f (%.3f-%.3f)", a[int((NR + 1) / 2)], a[int((NR + 3) / 4)], a[int((3 * NR + 3) / 4)] }'
}
echo
echo "the nginx worker's CPU time per request (utime + stime from /proc/PID/stat over each run, in"
echo "$(getconf CLK_TCK) Hz ticks; median over the rounds; x plain = plain's over the variant's, the req/s ratio of"
echo "a saturated worker):"
printf '%-28s %12s %10s %12s\n' "variant" "CPU ns/req" "x plain" "x limit_req"
cbase=$(echo "${cpu[0]}" | median)
clr=$(echo "${cpu[3]}" | median)
for i in $(seq 0 $((nv - 1))); do
	c=$(echo "${cpu[$i]}" | median)
	printf '%-28s %12.0f %10.3f %12.3f\n' "${labels[$i]}" "$c" "$(echo "$cbase / $c" | bc -l)" "$(echo "$clr / $c" | bc -l)"
done
echo "the same as the median (and quartiles) of the ratios within each round:"
for i in 1 2; do
	printf '%-28s x plain %s (target >= 0.97), x limit_req %s (target >= 1.0)\n' "${labels[$i]}" \
		"$(paired cpu 0 "$i" 1)" "$(paired cpu 3 "$i" 1)"
done
printf '%-28s CPU/req over limit_req $arg_uid'"'"'s %s (target <= 1.0)\n' "${labels[4]}" "$(paired cpu 5 4 0)"
if $counters; then
	echo
	echo "the nginx worker's own cost per request (perf stat on its pid, median over the rounds; x plain ="
	echo "plain's cycles/req over the variant's, the req/s ratio of a saturated worker):"
	printf '%-28s %12s %12s %10s %12s\n' "variant" "cycles/req" "instr/req" "x plain" "x limit_req"
	cbase=$(echo "${cyc[0]}" | median)
	clr=$(echo "${cyc[3]}" | median)
	for i in $(seq 0 $((nv - 1))); do
		c=$(echo "${cyc[$i]}" | median)
		printf '%-28s %12.0f %12.0f %10.3f %12.3f\n' "${labels[$i]}" "$c" "$(echo "${ins[$i]}" | median)" \
			"$(echo "$cbase / $c" | bc -l)" "$(echo "$clr / $c" | bc -l)"
	done
	echo
	echo "the same, as the median (and quartiles) of the ratios within each round:"
	for i in 1 2; do
		printf '%-28s x plain %s (target >= 0.97), x limit_req %s (target >= 1.0)\n' "${labels[$i]}" \
			"$(paired cyc 0 "$i" 1)" "$(paired cyc 3 "$i" 1)"
	done
	printf '%-28s x limit_req $arg_uid %s (target >= 1.0)\n' "${labels[4]}" "$(paired cyc 5 4 1)"
else
	echo
	echo "(perf can not read the CPU's counters here: no cycles per request. The ratios below are"
	echo "req/s taken within each round instead, the median and quartiles over the rounds; noisier,"
	echo "as the other core's load moves them.)"
	for i in 1 2; do
		printf '%-28s x plain %s (target >= 0.97), x limit_req %s (target >= 1.0)\n' "${labels[$i]}" \
			"$(paired res 0 "$i" 0)" "$(paired res 3 "$i" 0)"
	done
	printf '%-28s x limit_req $arg_uid %s (target >= 1.0)\n' "${labels[4]}" "$(paired res 5 4 0)"
fi

# Decisions per second: the engine against a GCRA Lua script in Redis.
redis-server --port "$rport" --bind 127.0.0.1 --daemonize yes --pidfile "$dir/redis.pid" --dir "$dir" \
	--save '' --appendonly no >/dev/null
for _ in $(seq 50); do redis-cli -p "$rport" ping >/dev/null 2>&1 && break; sleep 0.1; done
# GCRA, the future-TAT check, as the survey writes it for Redis: KEYS[1], ARGV: T ms, B.
sha=$(redis-cli -p "$rport" SCRIPT LOAD "
local now = redis.call('TIME')
local t = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)
local tat = tonumber(redis.call('GET', KEYS[1]) or t)
local T, B = tonumber(ARGV[1]), tonumber(ARGV[2])
local new = math.max(tat, t) + T
if new - t > B * T then return 0 end
redis.call('SET', KEYS[1], new, 'PX', B * T + 1000)
return 1")
# redis ARGS: EVALSHA/s on a million user keys picked at random.
redis() {
	redis-benchmark -p "$rport" "$@" -r 1000000 -q EVALSHA "$sha" 1 gcra:u__rand_int__ 1 1000000000 2>/dev/null |
		tr '\r' '\n' | sed -n 's/.*: \([0-9.]*\) requests per second.*/\1/p' | tail -1
}
progress "redis-benchmark EVALSHA, pipelined"
redis_best=$(redis -n 200000 -c 4 -P 32)
progress "freqctl L7 engine"
fc10=$(rm -rf "$dir/d10" && mkdir -p "$dir/d10" && build/fc_l7_bench seed "$dir/d10/db" "$dir/d10/shm" 10 &&
	build/fc_l7_bench decide "$dir/d10/shm" 2)
fc64=$(build/fc_l7_bench decide "$dir/shm-65536" 2)
# The same 10 policies with --concurrency: each decision takes a place, given back after.
fcc=$(rm -rf "$dir/dc" && mkdir -p "$dir/dc" && build/fc_l7_bench seed-conc "$dir/dc/db" "$dir/dc/shm" 10 &&
	build/fc_l7_bench decide "$dir/dc/shm" 2)
# Per key: 1,000,000 live keys of "uid=*" in the default table of 1,048,576
# entries, cycling in a shuffled order, against its fixed-value twin: 65,536
# policies "uid=uK" (the most a store holds) with their 65,536 uids cycling
# in a shuffled order. Like for like: the same request (a uid alone), one
# policy matched, one bucket charged, another bucket each time, none near
# the last in memory; what differs is how the bucket is found. Rounds
# interleaved with Redis unpipelined, the ratios taken within each round.
rm -rf "$dir/dk" "$dir/du" && mkdir -p "$dir/dk" "$dir/du"
build/fc_l7_bench seed-keys "$dir/dk/db" "$dir/dk/shm"
build/fc_l7_bench seed-uids "$dir/du/db" "$dir/du/shm" 65536
declare -A eng
for r in $(seq 3); do
	progress "freqctl L7 engine, per key against fixed values: round $r/3"
	eng[0]="${eng[0]:-} $(build/fc_l7_bench decide "$dir/du/shm" 2 65536)"
	eng[1]="${eng[1]:-} $(build/fc_l7_bench decide-keys "$dir/dk/shm" 2 1000000 2>"$dir/dk/log")"
	eng[2]="${eng[2]:-} $(redis -n 50000 -c 1)"
done
fcu=$(echo "${eng[0]}" | median)
fck=$(echo "${eng[1]}" | median)
redis_rps=$(echo "${eng[2]}" | median)
progress ""
echo
echo "L7 decisions/s, one core (the engine in a loop; Redis via redis-benchmark, 1,000,000 user keys at random):"
printf '%-46s %12.0f\n' "Redis GCRA Lua (EVALSHA, unpipelined, 1 client)" "$redis_rps"
echo "  (the median of 3 rounds, taken between the per-key rounds below)"
printf '%-46s %12.0f\n' "Redis GCRA Lua (EVALSHA, 4 clients x 32 pipelined)" "$redis_best"
printf '%-46s %12.0f  x Redis %.0f (target >= 100)\n' "freqctl engine, 10 policies, uid u1" "$fc10" \
	"$(echo "$fc10 / $redis_rps" | bc -l)"
printf '%-46s %12.0f  x Redis %.0f; x 10 policies %.2f (target: >= 0.5)\n' "freqctl engine, 65,536 policies, uid u1" \
	"$fc64" "$(echo "$fc64 / $redis_rps" | bc -l)" "$(echo "$fc64 / $fc10" | bc -l)"
printf '%-46s %12.0f  x 10 policies %.2f (a place taken and given back each)\n' \
	"freqctl engine, 10 with --concurrency" "$fcc" "$(echo "$fcc / $fc10" | bc -l)"
echo "per key (median of 3 rounds of 2 s, interleaved with Redis unpipelined; ratios within each round):"
printf '%-46s %12.0f\n' "freqctl, 65,536 x uid=uK, all cycling" "$fcu"
printf '%-46s %12.0f  x fixed values %s (target >= 0.7)\n' "freqctl, uid=*, 1,000,000 keys cycling" "$fck" \
	"$(paired eng 0 1 0)"
printf '%-46s %12s  x Redis unpipelined %s (target >= 100)\n' "" "" "$(paired eng 2 1 0)"
printf '%-46s %12s  x Redis pipelined %.0f; x uid u1 alone %.2f\n' "" "" \
	"$(echo "$fck / $redis_best" | bc -l)" "$(echo "$fck / $fc10" | bc -l)"
sed 's/^fc_l7_bench: /  (last round: /; s/$/)/' "$dir/dk/log"
