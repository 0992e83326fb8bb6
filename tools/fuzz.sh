#!/usr/bin/env bash
# Runs the fuzz targets (build/fuzz/fuzz_*, sources in tests/fuzz/).
#
#   tools/fuzz.sh [TARGET...]           fuzz each for FUZZ_SECONDS (default 60)
#   tools/fuzz.sh --replay [TARGET...]  run each input of the corpora once, as TAP
#
# A target starts from tests/fuzz/corpus/TARGET/ and keeps what it finds in
# build/fuzz/corpus/TARGET/; a crash is written into tests/fuzz/corpus/TARGET/
# (crash-*), where it stays: the replay, which `make test` runs, keeps
# running it. Each target gets a scratch store, shm and pin dir, removed when
# it ends however it ended. Progress shows on a terminal; piped, one line per
# target.
set -u
cd "$(dirname "$0")/.."

replay=
if [ "${1:-}" = --replay ]; then
	replay=1
	shift
fi
case ${1:-} in
-h | --help)
	sed -n '2,/^set -u/p' "$0" | sed '$d; s/^# \{0,1\}//'
	exit 0
	;;
-*)
	echo "fuzz.sh: unknown option $1 (see --help)" >&2
	exit 2
	;;
esac
seconds=${FUZZ_SECONDS:-60}
case $seconds in
'' | *[!0-9]*)
	echo "fuzz.sh: FUZZ_SECONDS \"$seconds\": expected a whole number of seconds" >&2
	exit 2
	;;
esac
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=($(ls tests/fuzz/fuzz_*.c | sed 's|.*/||; s|\.c$||'))

scratch= pin= pid=
cleanup() {
	[ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
	[ -n "$pin" ] && [ -e "$pin" ] && rm -rf "$pin"
	[ -n "$scratch" ] && rm -rf "$scratch"
	pid= pin= scratch=
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# The targets that need root, and why; the others run as any user (make
# check replays their corpora unprivileged).
declare -A needs_root=(
	[fuzz_frames]="it loads the XDP and TC programs"
	[fuzz_api]="the console publishes to a pin dir in bpffs"
)

# Why a target can not run here, or nothing.
missing() {
	[ -x "build/fuzz/$1" ] || { echo "build/fuzz/$1 is not built (make)"; return; }
	[ -n "${needs_root[$1]:-}" ] || return 0
	[ "$(id -u)" = 0 ] || { echo "needs root: ${needs_root[$1]}"; return; }
	[ -d /sys/fs/bpf ] || echo "no bpffs at /sys/fs/bpf"
}

# Runs target $1 with libFuzzer arguments; its output goes to $log.
run_target() {
	local t=$1
	shift
	scratch=$(mktemp -d "/tmp/fc-fuzz-$t-XXXXXX")
	pin=/sys/fs/bpf/fc-fuzz-$$-$t
	log=$scratch/log
	FC_FUZZ_DIR=$scratch/run FC_FUZZ_PIN=$pin "build/fuzz/$t" "$@" >"$log" 2>&1 &
	pid=$!
	if [ -t 1 ] && [ -z "$replay" ]; then
		while kill -0 "$pid" 2>/dev/null; do
			printf '\r  %s: %s' "$t" "$(grep -E '^#[0-9]+' "$log" | tail -1 | cut -c1-100)"
			sleep 1
		done
		printf '\r\033[K'
	fi
	wait "$pid"
	rc=$?
	pid=
}

n=0 failed=0
for t in "${targets[@]}"; do
	corpus=tests/fuzz/corpus/$t
	why=$(missing "$t")
	n=$((n + 1))
	if [ -n "$why" ]; then
		[ -n "$replay" ] && echo "ok $n # SKIP $t: $why" || echo "$t: SKIPPED: $why"
		continue
	fi
	if [ -n "$replay" ]; then
		files=("$corpus"/*)
		run_target "$t" "${files[@]}"
		if [ "$rc" = 0 ]; then
			echo "ok $n - $t: ${#files[@]} inputs of $corpus, none crashes or breaks a property"
		else
			failed=$((failed + 1))
			echo "not ok $n - $t: exit $rc on $corpus"
			sed 's/^/# /' "$log" | grep -vE '^# (Running|Executed):' | tail -40
		fi
	else
		mkdir -p "build/fuzz/corpus/$t"
		run_target "$t" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=4096 \
			-artifact_prefix="$corpus/" "build/fuzz/corpus/$t" "$corpus"
		stats=$(grep -E '^#[0-9]+' "$log" | tail -1)
		if [ "$rc" = 0 ]; then
			echo "$t: ${seconds} s, no crash: ${stats:-no runs}"
		else
			failed=$((failed + 1))
			echo "$t: FAILED (exit $rc); the input is in $corpus/ (crash-*, timeout-*, oom-*):"
			tail -40 "$log"
		fi
	fi
	cleanup
done
[ -n "$replay" ] && echo "1..$n"
[ "$failed" = 0 ]
