#!/usr/bin/env bash
# make bench, publishing: how long one freqctl command takes, store to kernel
# and shm, with 1,000,000 exact bans, 110,000 prefixes (IPv4 /8 to /31, IPv6
# /64) and 65,535 policies stored (half at XDP, half in nginx), against the
# same command on an empty store and against the process itself (freqctl
# --version), measured in the same rounds, commands interleaved (the machine
# is shared: ratios, not absolutes). Then a ban set of 1,000,000 entries
# replaced by a feed with 1% churn: only that 1% is published (the time, and
# a full sync's for reference). Scratch stores, pin dirs and shms of its own
# (tools/bench/bench_store.sh fills the big one); ROUNDS (default 15) rounds.
# BASE=FREQCTL (another build's binary, e.g. main's) runs every command with
# it too, on copies of the two stores of its own, in the same rounds, and
# prints this build's times over its.
set -euo pipefail
cd "$(dirname "$0")/../.."
# This machine's /etc/default/freqctl is not this script's: its options only.
export FREQCTL_CONFIG=
tag=$$
dir=/tmp/fc-pbench-$tag
pin=/sys/fs/bpf/fc-pbench-$tag
shm=/dev/shm/fc-pbench-$tag
rounds=${ROUNDS:-15}
base=${BASE:-}
cleanup() {
	rm -rf "$dir" "$pin"-* "$shm"-*
}
trap cleanup EXIT
mkdir -p "$dir"

fc() { # fc STORE ARGS: STORE is big, empty or sets; bigb, emptyb: BASE's
	local s=$1 bin=build/freqctl
	shift
	[[ $s != *b ]] || bin=$base
	"$bin" --db "$dir/$s.db" --pin-dir "$pin-$s" --shm "$shm-$s" "$@"
}
us() { # us COMMAND...: its wall-clock time in microseconds, its output dropped
	local t0
	t0=$(date +%s%N)
	"$@" >/dev/null 2>&1
	echo $((($(date +%s%N) - t0) / 1000))
}
# both OUT COMMAND...: appends "wall-clock us, CPU us" of it to OUT: the CPU
# time (user + system) its process used, from the times builtin's totals of
# this shell's children just before and after it (nothing else runs between:
# the clock is $EPOCHREALTIME, no process).
both() {
	local out=$1 t0 t1
	shift
	times >"$dir/c0"
	t0=$EPOCHREALTIME
	"$@" >/dev/null 2>&1
	t1=$EPOCHREALTIME
	times >"$dir/c1"
	awk -v t0="$t0" -v t1="$t1" 'FNR == 2 { for (i = 1; i <= 2; i++) { split($i, t, /[ms]/); c[FILENAME] += t[1] * 60 + t[2] } }
		END { printf "%d %d\n", (t1 - t0) * 1e6, (c[ARGV[2]] - c[ARGV[1]]) * 1e6 }' "$dir/c0" "$dir/c1" >>"$out"
}
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

echo "publishing: a store of 1,000,000 exact bans, 110,000 prefixes and 65,535 policies..."
tools/bench/bench_store.sh "$dir/big.db" "$pin-big" "$shm-big"
fc empty sync >/dev/null
stores=(empty big)
if [[ $base ]]; then
	# The same store for BASE, published to pins and a shm of its own.
	cp "$dir/big.db" "$dir/bigb.db"
	fc bigb sync >/dev/null
	fc emptyb sync >/dev/null
	stores+=(emptyb bigb)
fi

# Each round runs every command once on each store, and the process alone.
cmds=("ban add 198.51.100.R" "ban del 198.51.100.R" "ban add 198.51.102.0/24" "ban del 198.51.102.0/24"
	"policy add 70000 --match ip=198.51.101.R --rate 10/s" "policy set 70000 --match ip=198.51.101.R --rate 20/s"
	"policy del 70000" "policy add 70001 --match uid=benchR --rate 10/s"
	"policy set 70001 --match uid=benchR --rate 20/s" "policy del 70001")
for ((r = 0; r < rounds; r++)); do
	both "$dir/t.version" build/freqctl --version
	for i in "${!cmds[@]}"; do
		c=${cmds[$i]//R/$r}
		for s in "${stores[@]}"; do
			# shellcheck disable=SC2086 # the command's words
			both "$dir/t.$s.$i" fc "$s" $c
		done
	done
done
col() { cut -d' ' -f"$1" "$2" | median; } # col N FILE: the median of column N
floor=$(col 1 "$dir/t.version") floor_cpu=$(col 2 "$dir/t.version")
echo
echo "one command, store to kernel and shm: median of $rounds rounds, ms (load average: $(cut -d' ' -f1 /proc/loadavg))"
echo "the process alone (freqctl --version): $(awk -v v="$floor" -v c="$floor_cpu" 'BEGIN { printf "%.1f wall-clock, %.1f CPU", v / 1000, c / 1000 }')"
printf "%-52s %8s %8s %7s %8s %9s %9s\n" "" "empty" "1M" "ratio" "1M CPU" "1M-proc" "CPU-proc"
for i in "${!cmds[@]}"; do
	e=$(col 1 "$dir/t.empty.$i")
	b=$(col 1 "$dir/t.big.$i")
	bc=$(col 2 "$dir/t.big.$i")
	awk -v c="${cmds[$i]//R/N}" -v e="$e" -v b="$b" -v bc="$bc" -v f="$floor" -v fc="$floor_cpu" \
		'BEGIN { printf "%-52s %8.1f %8.1f %6.2fx %8.1f %9.1f %9.1f\n", c, e / 1000, b / 1000, b / e, bc / 1000,
			 (b - f) / 1000, (bc - fc) / 1000 }'
done
echo "(empty, 1M: wall-clock; 1M: 1,000,000 exact bans, 110,000 prefixes, 65,535 policies stored; CPU: user + system;"
echo " -proc: less the process alone (its loading and linking); target <= 20 wall-clock)"
if [[ $base ]]; then
	echo
	echo "against BASE ($base), same rounds: wall-clock ms, medians"
	printf "%-52s %8s %8s %7s %8s %8s %7s\n" "" "empty" "BASE" "ratio" "1M" "BASE" "ratio"
	for i in "${!cmds[@]}"; do
		awk -v c="${cmds[$i]//R/N}" -v e="$(col 1 "$dir/t.empty.$i")" -v eb="$(col 1 "$dir/t.emptyb.$i")" \
			-v b="$(col 1 "$dir/t.big.$i")" -v bb="$(col 1 "$dir/t.bigb.$i")" \
			'BEGIN { printf "%-52s %8.1f %8.1f %6.2fx %8.1f %8.1f %6.2fx\n", c, e / 1000, eb / 1000, e / eb,
				 b / 1000, bb / 1000, b / bb }'
	done
fi

echo
echo "a ban set of 1,000,000 entries, replaced by a feed with 1% churn:"
awk 'BEGIN { for (i = 0; i < 1000000; i++) printf "11.%d.%d.%d\n", int(i / 65536), int(i / 256) % 256, i % 256 }' \
	>"$dir/feed.txt"
# 1%: the first 10,000 gone, 10,000 new ones at the end.
{ tail -n +10001 "$dir/feed.txt"; awk 'BEGIN { for (i = 0; i < 10000; i++) printf "12.0.%d.%d\n", int(i / 256), i % 256 }'; } \
	>"$dir/feed2.txt"
t=$(us fc sets ban import --set feed "$dir/feed.txt")
echo "  first import (1,000,000 new: everything published):  $((t / 1000)) ms"
t0=$(date +%s%N)
out=$(fc sets ban import --set feed --json "$dir/feed2.txt")
t=$((($(date +%s%N) - t0) / 1000))
echo "  the 1% feed: $(jq -r '"\(.added) added, \(.removed) removed, \(.kept) kept"' <<<"$out") in $((t / 1000)) ms (reading the feed and the set, the diff, and publishing the difference)"
t=$(us fc sets sync)
echo "  for reference, publishing everything (freqctl sync):  $((t / 1000)) ms"
t=$(us fc sets ban import --set feed "$dir/feed2.txt")
echo "  the same feed again (nothing to publish):            $((t / 1000)) ms"
