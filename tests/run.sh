#!/usr/bin/env bash
# Runs the test suites and ends with one line "N passed, N failed, N skipped"
# counting test cases over all suites.
#
#   tests/run.sh [--check] [GLOB...]
#
# `make test` runs every suite; `make check` (--check) only what needs
# neither root nor the network: the unit tests, the fuzz corpora replayed,
# the docs' static part and what make builds (test_make.sh). GLOBs pick suites by name ('test_l7*',
# 'test_nginx_*.sh', fuzz); FC_TEST=GLOB, passed to every suite, picks the
# cases of the cmocka ones (tests/fc_test.h).
#
# Every suite speaks TAP: the cmocka binaries (CMOCKA_MESSAGE_OUTPUT=TAP) and
# the shell suites (tests/integration/lib.sh). A suite fails if any test is
# "not ok", if it exits non-zero, if it prints no plan, or if the tests it
# printed are not the plan's count (it died half-way).
#
# Suites run FC_JOBS at a time (2: most of a suite's time is waiting on
# nginx, pings and the agent); one whose source says "tests/run.sh: alone"
# (it measures time: clocks, rates over wall time) runs with nothing beside
# it, first. Each suite claims an address block of its own (lib.sh: a free
# one of 1-127, locked while it runs: addresses in 198.18.0.0/15 and
# 2001:2::/48, and ports), so several runners can share the machine too. A suite's output is printed whole when it ends,
# under "== NAME (S s)".
set -u
cd "$(dirname "$0")/.."
# The machine's /etc/default/freqctl is not the tests': no file unless a
# test names one.
export FREQCTL_CONFIG=

check=
if [ "${1:-}" = --check ]; then
	check=1
	shift
fi
globs=("$@")
jobs=${FC_JOBS:-2}
case $jobs in
'' | *[!0-9]* | 0)
	echo "run.sh: FC_JOBS \"$jobs\": expected a number of suites at once, 1 or more" >&2
	exit 2
	;;
esac

names=() cmds=() alone=() kinds=()
want() {
	local g
	[ ${#globs[@]} -eq 0 ] && return 0
	for g in "${globs[@]}"; do
		# shellcheck disable=SC2053 # a glob, on purpose
		[[ $1 == $g ]] && return 0
	done
	return 1
}
# add NAME SOURCE COMMAND: a suite, if chosen.
add() {
	want "$1" || return 0
	names+=("$1")
	cmds+=("$3")
	kinds+=("${2%/*}")
	if grep -q 'tests/run.sh: alone' "$2"; then alone+=(1); else alone+=(""); fi
}
for src in tests/unit/test_*.c tests/bpf/test_*.c; do
	[ -n "$check" ] && [ "${src#tests/unit/}" = "$src" ] && continue
	name=$(basename "$src" .c)
	add "$name" "$src" "build/tests/$name"
done
if [ -n "$check" ]; then
	add test_doc.sh tests/integration/test_doc.sh "tests/integration/test_doc.sh --static"
	add test_make.sh tests/integration/test_make.sh tests/integration/test_make.sh
else
	for src in tests/integration/test_*.sh; do
		add "$(basename "$src")" "$src" "$src"
	done
fi
# Every input the fuzzers kept, crashes found included, once more.
add fuzz tools/fuzz.sh "tools/fuzz.sh --replay"
if [ ${#names[@]} -eq 0 ]; then
	echo "run.sh: no suite is named ${globs[*]}" >&2
	exit 2
fi

passed=0 failed=0 skipped=0
failed_suites=()
tmp=$(mktemp -d /tmp/fc-run-XXXXXX)
declare -A running=() # pid -> suite
started=() pids=()
cleanup() {
	local pid
	for pid in "${!running[@]}"; do kill -TERM "$pid" 2>/dev/null; done
	wait
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# Reads a suite's TAP from stdin; prints "passed failed skipped problem".
tap_count() {
	awk '
	/^1\.\.[0-9]+/ { plan = $1; sub(/^1\.\./, "", plan); planned = 1; if ($0 ~ /# *[Ss][Kk][Ii][Pp]/) skipall = 1; next }
	/^(not )?ok [0-9]+( |$)/ {
		n++
		if ($0 ~ /# *[Ss][Kk][Ii][Pp]/) s++
		else if ($0 ~ /^ok/) p++
		else f++
	}
	END {
		why = "-"
		if (!planned) why = "no-plan"
		else if (plan + 0 != n) why = "plan-" plan "-ran-" n
		if (skipall && n == 0) s = 1
		printf "%d %d %d %s\n", p, f, s, why
	}'
}

start() { # start I: suite I in the background, in its own block
	local i=$1
	started[i]=$EPOCHREALTIME
	# shellcheck disable=SC2086 # the command and its arguments
	CMOCKA_MESSAGE_OUTPUT=TAP ${cmds[i]} >"$tmp/$i" 2>&1 </dev/null &
	running[$!]=$i
	pids+=("$!")
}

finish() { # finish I RC: prints suite I's output and counts it
	local i=$1 rc=$2 name=${names[$1]} p f s why secs
	secs=$(awk -v a="${started[i]}" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }')
	echo "== $name ($secs s)"
	cat "$tmp/$i"
	read -r p f s why < <(tap_count <"$tmp/$i")
	if [ "$why" != - ]; then
		echo "  $name: bad TAP ($why)"
		f=$((f + 1))
	elif [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
		echo "  $name: exit $rc"
		f=1
	fi
	passed=$((passed + p)) failed=$((failed + f)) skipped=$((skipped + s))
	[ "$f" -eq 0 ] || failed_suites+=("$name")
	took+=("$(printf '%7s s  %s' "$secs" "$name")")
}

reap() { # waits for one running suite to end
	local pid rc
	wait -n -p pid "${!running[@]}"
	rc=$?
	finish "${running[$pid]}" "$rc"
	unset "running[$pid]"
}

# Tests work on scratch pin dirs and shms only; the defaults belong to any
# freqctl this machine really runs. Checked by what they hold before and after.
defaults() { ls -ld --time-style=+%s.%N /sys/fs/bpf/freqctl /dev/shm/freqctl /dev/shm/freqctl.state 2>/dev/null; }
before=$(defaults)
t0=$EPOCHREALTIME
took=()

# The suites that run alone first, one by one; then the rest, FC_JOBS at a
# time: each BPF suite (busy on a CPU, loading programs) beside an
# integration suite (mostly waiting), then the short unit suites.
bpf=() integ=() rest=() order=()
for i in "${!names[@]}"; do
	if [ -n "${alone[i]}" ]; then
		start "$i"
		reap
		continue
	fi
	case ${kinds[i]} in
	tests/bpf) bpf+=("$i") ;;
	tests/integration) integ+=("$i") ;;
	*) rest+=("$i") ;;
	esac
done
while [ ${#bpf[@]} -gt 0 ] || [ ${#integ[@]} -gt 0 ]; do
	[ ${#bpf[@]} -eq 0 ] || { order+=("${bpf[0]}"); bpf=("${bpf[@]:1}"); }
	[ ${#integ[@]} -eq 0 ] || { order+=("${integ[0]}"); integ=("${integ[@]:1}"); }
done
for i in "${order[@]}" "${rest[@]}"; do
	[ ${#running[@]} -lt "$jobs" ] || reap
	start "$i"
done
while [ ${#running[@]} -gt 0 ]; do reap; done

echo "== default pin dir and shm untouched"
if [ "$(defaults)" = "$before" ]; then
	passed=$((passed + 1))
	echo "ok"
else
	failed=$((failed + 1))
	failed_suites+=("defaults")
	echo "not ok: a test created or changed /sys/fs/bpf/freqctl or /dev/shm/freqctl"
fi

# Every agent and nginx a test started must be gone (looked up, never killed,
# here). make check runs without the shared lock, maybe beside someone's
# make test: there only this run's suites' (scratch paths named by their pid).
echo "== no test process left behind"
left=$(pgrep -af '(freqctl|nginx).*/tmp/fc-(it|agent|fleet|ngx|abench)-' || true)
if [ -n "$check" ] && [ -n "$left" ]; then
	left=$(grep -E "/tmp/fc-[a-z]+-($(IFS='|'; echo "${pids[*]}"))/" <<<"$left" || true)
fi
if [ -z "$left" ]; then
	passed=$((passed + 1))
	echo "ok"
else
	failed=$((failed + 1))
	failed_suites+=("leftovers")
	echo "not ok: still running: $left"
fi

echo
echo "suite times (longest first; $(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.0f", b - a }') s in all, $jobs at a time):"
printf '%s\n' "${took[@]}" | sort -rn
[ ${#failed_suites[@]} -eq 0 ] || echo "failing suites: ${failed_suites[*]}"
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
